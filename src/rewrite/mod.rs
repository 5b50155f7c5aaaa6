//! The CPU stage: execute a [`Plan`] on an explicit rayon pool.
//!
//! Each bin streams its input files one at a time (read, drop deleted rows, align to the
//! physical schema) into a `write::RollingWriter` that uploads files of about the target
//! size, so a bin holds one input file and one output file in memory at a time. Bins run in
//! parallel, one per pool thread. The stage returns one [`BinOutcome`] per bin, ordered by
//! bin id; it never commits. If any bin fails, every file written by every bin is deleted
//! before the error is returned, so a failed run leaves no stray data files.
//!
//! Object-store I/O runs on the tokio runtime whose handle is passed in; rayon threads block
//! on it (they are never tokio workers).

pub mod cluster;
pub mod estimate;
pub mod leftovers;
pub mod stats;
pub mod timings;
pub mod upload;
pub mod write;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use deltalake::ObjectStore;
use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::plan::{Bin, PartitionPlan, Plan};
use crate::progress::Progress;
use crate::table::{TableView, read};
pub use write::WrittenFile;

/// Default worker threads: 0 means one per available core.
pub const DEFAULT_THREADS: usize = 0;
/// Rows handed to the writer at a time when writing sorted data.
pub const READ_ROWS_PER_WRITE: usize = 8192;
/// The most worker threads a run may ask for.
pub const MAX_THREADS: usize = 1024;

/// The result of rewriting one bin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BinOutcome {
    /// The bin's id in the plan.
    pub bin_id: usize,
    /// Indices of the input files in [`TableView::files`].
    pub input_files: Vec<usize>,
    /// Rows read (deleted rows excluded); equal to the rows written.
    pub rows: u64,
    /// True when a clustering bin did not fit the memory budget and went through spill files.
    pub spilled: bool,
    /// The files written; empty when the bin was [`BinOutcome::left_alone`].
    #[serde(skip)]
    pub written: Vec<WrittenFile>,
    /// The bin wrote no fewer files than it read although it had to write fewer
    /// ([`Plan::must_reduce_file_count`]): its files were deleted, its input files stay, and
    /// nothing of it is committed.
    pub left_alone: bool,
}

/// Everything the stage needs besides the plan.
pub(crate) struct RewriteContext {
    pub reader: read::Reader,
    pub leaves: Vec<crate::table::LeafColumn>,
    pub with_tight_bounds: bool,
    pub threads: usize,
    /// Files a compaction worker fetches at once.
    pub read_concurrency: usize,
    pub cancel: Arc<AtomicBool>,
    pub memory_limit_bytes: u64,
    pub spill_directory: Option<std::path::PathBuf>,
    pub codec: write::Codec,
    /// No bin starts after it ([`Settings::deadline`]).
    pub deadline: Option<std::time::Instant>,
    /// Bin ids in the order they start ([`Settings::order`]).
    pub order: Vec<usize>,
    /// Where the run's time goes ([`Settings::clock`]).
    pub clock: Arc<timings::Clock>,
}

/// Runs every bin of `plan`. Blocking: call it off the async runtime.
///
/// Bins start in `context.order` (bin ids; the bins it leaves out after, in plan order); a
/// bin that would start after `context.deadline` does not run and has no outcome.
///
/// # Errors
/// The first bin error (a [`Error::DataFile`] for a bad input, [`Error::ObjectStore`] or
/// [`Error::Parquet`] on write), after deleting every file written by the run. A mismatch
/// between rows read and rows written is an [`Error::Internal`].
pub(crate) fn execute(
    table: &TableView,
    plan: &Plan,
    context: &RewriteContext,
    progress: &dyn Progress,
) -> Result<Vec<BinOutcome>> {
    // Compaction runs one bin per thread, so more threads than bins idle; clustering splits
    // each bin over the whole pool.
    let num_bins = if plan.clustering.is_some() {
        usize::MAX
    } else {
        plan.bins().count().max(1)
    };
    let wanted = if context.threads == 0 {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    } else {
        context.threads
    };
    // Compaction bins in flight, each holding compaction_bin_bytes: as many as the memory
    // limit holds, at least one.
    let by_memory = if plan.clustering.is_some() {
        usize::MAX
    } else {
        usize::try_from(
            context.memory_limit_bytes / compaction_bin_bytes(table, plan, context).max(1),
        )
        .unwrap_or(usize::MAX)
        .max(1)
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(wanted.min(num_bins).min(by_memory).min(MAX_THREADS))
        .thread_name(|i| format!("delta-layout-{i}"))
        .build()
        .map_err(|e| Error::Internal(format!("cannot start the worker pool: {e}")))?;
    let mut work: Vec<(&Bin, &PartitionPlan)> = plan
        .partitions
        .iter()
        .flat_map(|p| p.bins.iter().map(move |b| (b, p)))
        .collect();
    if !context.order.is_empty() {
        let rank: std::collections::HashMap<usize, usize> = context
            .order
            .iter()
            .enumerate()
            .map(|(k, &id)| (id, k))
            .collect();
        work.sort_by_key(|(bin, _)| rank.get(&bin.id).copied().unwrap_or(usize::MAX));
    }
    // The first failed bin stops the run: bins not started yet are skipped (`None`), so a
    // store that went away costs one timeout, not one per bin. Each task takes the next bin
    // of `work`, so bins start in its order.
    let failed = std::sync::atomic::AtomicBool::new(false);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Option<(Result<BinOutcome>, Vec<WrittenFile>)>> = pool.install(|| {
        (0..work.len())
            .into_par_iter()
            .map(|_| {
                if failed.load(std::sync::atomic::Ordering::Relaxed) {
                    return None;
                }
                let (bin, partition) =
                    work[next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)];
                if context
                    .deadline
                    .is_some_and(|deadline| std::time::Instant::now() >= deadline)
                {
                    return None;
                }
                let result = run_bin(table, plan, context, bin, partition, progress);
                if result.0.is_err() {
                    failed.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                Some(result)
            })
            .collect()
    });
    let mut outcomes = Vec::with_capacity(results.len());
    let mut first_error = None;
    let mut all_written = Vec::new();
    for (result, written) in results.into_iter().flatten() {
        all_written.extend(written);
        match result {
            Ok(outcome) => outcomes.push(outcome),
            Err(e) => {
                if first_error.is_none() {
                    first_error = Some(e);
                }
            }
        }
    }
    if let Some(error) = first_error {
        delete_files(&context.reader.store, &context.reader.runtime, &all_written);
        return Err(error);
    }
    outcomes.sort_by_key(|o| o.bin_id);
    Ok(outcomes)
}

/// What one compaction bin holds at most while it runs, bytes: the part of the file it
/// writes that is not uploaded yet ([`upload::held_file_bytes`] of 1.25x the target), the row groups being encoded (counted as 8 x
/// [`write::row_group_bytes`]: the batches of one and its encoded columns), the files fetched
/// ahead ([`read::DEFAULT_READ_CONCURRENCY`] or `--read-concurrency` of the largest input,
/// at most [`read::PREFETCH_BYTES`]) and the batches decoded from them ([`read::DECODE_BYTES`]
/// of input at a time, counted 4 times over: Arrow arrays are larger than the compressed
/// Parquet they come from). [`execute`] runs as many compaction bins at once as
/// `--memory-limit` holds.
fn compaction_bin_bytes(table: &TableView, plan: &Plan, context: &RewriteContext) -> u64 {
    let target = plan.target_file_bytes;
    let largest = plan
        .bins()
        .flat_map(|b| b.files.iter())
        .map(|&i| table.files[i].size_bytes)
        .max()
        .unwrap_or(0);
    let prefetch = largest
        .saturating_mul(context.read_concurrency as u64)
        .min(read::PREFETCH_BYTES.max(largest));
    upload::held_file_bytes(target.saturating_add(target / 4), upload::UPLOAD_PART_BYTES)
        .saturating_add(8 * write::row_group_bytes(target))
        .saturating_add(prefetch)
        .saturating_add(4 * read::DECODE_BYTES)
}

/// Deletes written files, best effort (a file that cannot be deleted is logged).
pub(crate) fn delete_files(
    store: &Arc<dyn ObjectStore>,
    runtime: &tokio::runtime::Handle,
    files: &[WrittenFile],
) {
    use futures::StreamExt as _;
    if files.is_empty() {
        return;
    }
    let paths: Vec<deltalake::Path> = files
        .iter()
        .map(|file| {
            deltalake::Path::parse(&file.path)
                .unwrap_or_else(|_| deltalake::Path::from(file.path.as_str()))
        })
        .collect();
    // One stream of deletes: a bulk request on S3, concurrent requests elsewhere, so a
    // clean-up costs one round trip, not one per file (and one timeout when the store is
    // down).
    let failed: Vec<deltalake::ObjectStoreError> = runtime.block_on(async {
        store
            .delete_stream(futures::stream::iter(paths.into_iter().map(Ok)).boxed())
            .filter_map(|result| async move {
                match result {
                    Ok(_) | Err(deltalake::ObjectStoreError::NotFound { .. }) => None,
                    Err(e) => Some(e),
                }
            })
            .collect()
            .await
    });
    if let Some(first) = failed.first() {
        log::warn!(
            "{} of the {} files this run wrote could not be deleted (no commit refers to them; `vacuum` removes them once past its retention): {first}",
            failed.len(),
            files.len()
        );
    }
}

fn run_bin(
    table: &TableView,
    plan: &Plan,
    context: &RewriteContext,
    bin: &Bin,
    partition: &PartitionPlan,
    progress: &dyn Progress,
) -> (Result<BinOutcome>, Vec<WrittenFile>) {
    progress.bin_started(bin);
    let directory = partition.directory.clone();
    // `materializePartitionColumns`: the bin's partition values in every file it writes.
    let constants = if table.materializes_partition_columns() {
        let first = bin.files.first().map(|&i| &table.files[i]);
        let values = first
            .map(|f| f.partition_values.clone())
            .unwrap_or_default();
        match crate::table::schema::materialized_partition_columns(
            &table.schema,
            table.column_mapping,
            &table.partition_columns,
            &values,
        ) {
            Ok(constants) => constants,
            Err(message) => {
                let path = first.map(|f| f.path.clone()).unwrap_or_default();
                progress.bin_finished(bin);
                return (Err(Error::data_file(path, message)), Vec::new());
            }
        }
    } else {
        Vec::new()
    };
    let config = |tags: BTreeMap<String, String>, writer: usize| write::WriterConfig {
        schema: context.reader.target_schema.clone(),
        directory: directory.clone(),
        bin_id: bin.id,
        run_id: plan.run_id.clone(),
        writer,
        codec: context.codec,
        target_file_bytes: plan.target_file_bytes,
        leaves: context.leaves.clone(),
        with_tight_bounds: context.with_tight_bounds,
        tags,
        store: context.reader.store.clone(),
        runtime: context.reader.runtime.clone(),
        expected_rows: None,
        upload_part_bytes: upload::UPLOAD_PART_BYTES,
        plain_columns: plan.plain_columns.clone(),
        clock: context.clock.clone(),
        constants: constants.clone(),
    };
    let mut written = Vec::new();
    let rows = match &plan.clustering {
        Some(clustering) => partition
            .cut_tree
            .as_ref()
            .map(|tree| tree.bind(table))
            .transpose()
            .and_then(|tree| {
                if clustering.is_cuts() && tree.is_none() {
                    return Err(Error::Internal(format!(
                        "partition {} is laid out by a cut tree but the plan holds none",
                        partition.display
                    )));
                }
                let layout = cluster::Layout {
                    clustering,
                    tree: tree.as_ref(),
                    partition_values: &partition.raw_values,
                };
                cluster::run(
                    table,
                    &layout,
                    context,
                    bin,
                    bin.key_range.and_then(|range| {
                        plan.key_spaces.get(range.space).map(|space| (space, range))
                    }),
                    &config,
                    progress,
                    &mut written,
                )
            }),
        None => compact(
            table,
            context,
            bin,
            write::WriterConfig {
                expected_rows: expected_rows(bin, context),
                ..config(BTreeMap::new(), 0)
            },
            progress,
            &mut written,
        )
        .map(|rows| (rows, false)),
    };
    let result = rows.and_then(|(rows, spilled)| {
        let written_rows: u64 = written.iter().map(|f| f.num_records).sum();
        if written_rows != rows {
            return Err(Error::Internal(format!(
                "bin {} read {rows} rows but wrote {written_rows}",
                bin.id
            )));
        }
        // (A sampled read keeps only part of the rows: `sweep` scratch tables; a bin of a
        // split scope keeps its key ranges' rows, checked over the scope by the commit.)
        if let Some(expected) = bin.input_rows
            && expected != rows
            && context.reader.sample.is_none()
            && bin.key_range.is_none()
        {
            return Err(Error::Internal(format!(
                "bin {} read {rows} live rows but the log records {expected}",
                bin.id
            )));
        }
        Ok(BinOutcome {
            bin_id: bin.id,
            input_files: bin.files.clone(),
            rows,
            spilled,
            written: written.clone(),
            left_alone: false,
        })
    });
    // The plan's estimate said fewer files; what was written is what counts. A bin that did
    // not reduce the file count deletes its files now, so no commit can name them.
    let (result, written) = match result {
        Ok(mut outcome)
            if plan.must_reduce_file_count(bin) && outcome.written.len() >= bin.files.len() =>
        {
            log::info!(
                "bin {} left alone: it wrote {} files from {} input files",
                bin.id,
                outcome.written.len(),
                bin.files.len()
            );
            delete_files(&context.reader.store, &context.reader.runtime, &written);
            outcome.written.clear();
            outcome.left_alone = true;
            (Ok(outcome), Vec::new())
        }
        other => (other, written),
    };
    progress.bin_finished(bin);
    (result, written)
}

/// The rows a compaction bin writes, when the log knows them: its live rows, or their
/// expected sample ([`read::Reader::sample`]).
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "an estimate of a row count"
)]
fn expected_rows(bin: &Bin, context: &RewriteContext) -> Option<u64> {
    let rows = bin.input_rows?;
    Some(match context.reader.sample {
        Some((fraction, _)) => (rows as f64 * fraction).round() as u64,
        None => rows,
    })
}

/// Bin-packing: streams the bin's files, in order, into rolling files. Returns the rows read;
/// `written` receives every file uploaded, also on failure.
fn compact(
    table: &TableView,
    context: &RewriteContext,
    bin: &Bin,
    config: write::WriterConfig,
    progress: &dyn Progress,
    written: &mut Vec<WrittenFile>,
) -> Result<u64> {
    let mut writer = write::RollingWriter::new(config);
    let result = (|| {
        let mut rows = 0u64;
        let files: Vec<&crate::table::DataFile> =
            bin.files.iter().map(|&index| &table.files[index]).collect();
        // Reading is what the read loop takes besides writing (timed by the writer).
        let reading = timings::Clock::stopwatch();
        let mut writing = (std::time::Duration::ZERO, std::time::Duration::ZERO);
        let read = context
            .reader
            .read_each(&files, context.read_concurrency, |file, batches| {
                let watch = timings::Clock::stopwatch();
                for batch in batches {
                    if context.cancel.load(Ordering::Relaxed) {
                        return Err(Error::Cancelled);
                    }
                    rows += batch.num_rows() as u64;
                    writer.write(&batch)?;
                }
                progress.file_done(file.size_bytes);
                let (wall, cpu) = watch.elapsed();
                writing.0 += wall;
                writing.1 += cpu;
                Ok(())
            });
        let (wall, cpu) = reading.elapsed();
        context.clock.add(
            timings::Stage::Read,
            wall.saturating_sub(writing.0),
            cpu.saturating_sub(writing.1),
        );
        read?;
        writer.finish()?;
        Ok(rows)
    })();
    written.extend(writer.written().iter().cloned());
    result
}

/// The execution settings of a rewrite ([`write_bins`]): how, not what.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    /// Set to cancel the run.
    pub cancel: Arc<AtomicBool>,
    /// Parquet codec of the written files.
    pub codec: write::Codec,
    /// Memory a run may buffer, bytes; `None`: [`default_memory_limit_bytes`].
    pub memory_limit_bytes: Option<u64>,
    /// Files a compaction worker fetches at once; `None`: [`read::DEFAULT_READ_CONCURRENCY`].
    pub read_concurrency: Option<usize>,
    /// Where spill files go; `None`: the system's temporary directory.
    pub spill_directory: Option<std::path::PathBuf>,
    /// Worker threads, 0 for one per core.
    pub threads: usize,
    /// No bin starts after this instant (`--max-duration`); `None`: no limit.
    pub deadline: Option<std::time::Instant>,
    /// Bin ids in the order they start (best expected saving first); empty: plan order.
    pub order: Vec<usize>,
    /// Receives the seconds of each stage ([`timings`]).
    pub clock: Arc<timings::Clock>,
}

/// The execute step shared by `optimize` and the work orders' `execute`: writes the new files
/// of every bin of `plan` (bins index `table.files`) with `settings` (threads, read
/// concurrency, memory limit, spill directory, codec, cancel flag).
/// Runs the CPU work on a blocking thread. Returns the table, reader and progress back with
/// the bins' outcomes; on a bin error every file written has been deleted.
///
/// # Errors
/// [`Error::InvalidOption`] for an unusable stats-columns table property, and
/// [`Error::Internal`] when the blocking task cannot run; bin errors are in the returned
/// result.
pub(crate) async fn write_bins(
    table: TableView,
    plan: Plan,
    options: &Settings,
    reader: read::Reader,
    progress: Arc<dyn Progress>,
) -> Result<(
    TableView,
    read::Reader,
    Result<Vec<BinOutcome>>,
    Arc<dyn Progress>,
)> {
    // Clustering columns always get stats (PROTOCOL.md "Clustered Table" requires them, and
    // skipping needs them), even past delta.dataSkippingNumIndexedCols.
    // And so do the columns a cut tree cuts on: a leaf's files are skipped by their stats.
    let mut leaves = stats::indexed_columns(&table)?;
    for leaf in plan.layout_leaves(&table)? {
        if !leaves.iter().any(|l| l.physical == leaf.physical) {
            leaves.push(leaf);
        }
    }
    // Leftovers of runs that were killed: spill directories of dead processes, and (on a
    // local table) commit and upload staging files older than an hour.
    if plan.clustering.is_some() {
        let parent = options
            .spill_directory
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        let removed = leftovers::remove_dead_spill_directories(&parent);
        if removed > 0 {
            log::info!("removed {removed} spill directories of runs that died");
        }
    }
    if let Ok(root) = table.location.to_file_path() {
        leftovers::remove_stale_staging(&root);
    }
    let context = RewriteContext {
        read_concurrency: options
            .read_concurrency
            .unwrap_or(read::DEFAULT_READ_CONCURRENCY),
        leaves,
        with_tight_bounds: table
            .protocol
            .effective_features()
            .iter()
            .any(|f| f == "deletionVectors"),
        threads: options.threads,
        cancel: options.cancel.clone(),
        memory_limit_bytes: options
            .memory_limit_bytes
            .unwrap_or_else(default_memory_limit_bytes),
        spill_directory: options.spill_directory.clone(),
        codec: options.codec,
        reader,
        deadline: options.deadline,
        order: options.order.clone(),
        clock: options.clock.clone(),
    };
    let task = tokio::task::spawn_blocking(move || {
        let result = execute(&table, &plan, &context, progress.as_ref());
        progress.finish();
        (table, context, result, progress)
    });
    let (table, context, result, progress) = task.await.map_err(|e| Error::TaskFailed {
        task: "rewrite",
        source: e,
    })?;
    Ok((table, context.reader, result, progress))
}

/// Fallback physical memory when `/proc/meminfo` cannot be read: 8 GiB.
pub const FALLBACK_PHYSICAL_MEMORY_BYTES: u64 = 8 << 30;

/// The default memory budget of a run: a quarter of the memory this process may use
/// ([`available_memory_bytes`] under `/`: the cgroup's limit where one is set, else physical
/// memory).
#[must_use]
pub fn default_memory_limit_bytes() -> u64 {
    available_memory_bytes(std::path::Path::new("/")) / 4
}

/// The memory this process may use, bytes, read from the files under `root` (`/` on a
/// running system; a test passes a fake tree): the smallest of physical memory (`MemTotal`
/// of `proc/meminfo`, [`FALLBACK_PHYSICAL_MEMORY_BYTES`] where that cannot be read) and the
/// memory limits of the process's cgroup and its ancestors, as `proc/self/cgroup` names it:
/// cgroup v2's `memory.max` under `sys/fs/cgroup` (`max` is no limit), cgroup v1's
/// `memory.limit_in_bytes` under `sys/fs/cgroup/memory` (a value above physical memory is no
/// limit). The hierarchy's root is read too, since a container sees its own cgroup mounted
/// there under a path that names the host's. A pod capped at 8 GiB on a 64 GiB node gets
/// 8 GiB. Source: the kernel's cgroup v2 and v1 memory controller documentation
/// (`Documentation/admin-guide/cgroup-v2.rst`, `cgroup-v1/memory.rst`).
#[must_use]
pub fn available_memory_bytes(root: &std::path::Path) -> u64 {
    let physical = std::fs::read_to_string(root.join("proc/meminfo"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(FALLBACK_PHYSICAL_MEMORY_BYTES, |kib| {
            kib.saturating_mul(1024)
        });
    let cgroups = std::fs::read_to_string(root.join("proc/self/cgroup")).unwrap_or_default();
    let mut limit = physical;
    for line in cgroups.lines() {
        // `hierarchy-ID:controller-list:cgroup-path`; v2 is `0::path`.
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (mount, file) = if controllers.is_empty() {
            ("sys/fs/cgroup", "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            ("sys/fs/cgroup/memory", "memory.limit_in_bytes")
        } else {
            continue;
        };
        let mount = root.join(mount);
        let mut dirs = vec![mount.clone()];
        let mut dir = mount.clone();
        for part in path.split('/').filter(|p| !p.is_empty() && *p != "..") {
            dir.push(part);
            dirs.push(dir.clone());
        }
        for dir in dirs {
            let Ok(text) = std::fs::read_to_string(dir.join(file)) else {
                continue;
            };
            if let Ok(bytes @ 1..) = text.trim().parse::<u64>() {
                limit = limit.min(bytes);
            }
        }
    }
    limit
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `files` (path under the root, contents) into a fresh directory.
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = root.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        root
    }

    const MEMINFO_64_GIB: &str = "MemTotal:       67108864 kB\nMemFree:        1024 kB\n";

    #[test]
    fn the_memory_default_follows_the_cgroup_limit() {
        let gib = 1_u64 << 30;
        // No meminfo, no cgroup: the fallback.
        let empty = tree(&[]);
        assert_eq!(
            available_memory_bytes(empty.path()),
            FALLBACK_PHYSICAL_MEMORY_BYTES
        );
        // Physical memory alone.
        let bare = tree(&[("proc/meminfo", MEMINFO_64_GIB)]);
        assert_eq!(available_memory_bytes(bare.path()), 64 * gib);
        // cgroup v2, a pod capped at 8 GiB on a 64 GiB node, its limit on a parent cgroup.
        let pod = tree(&[
            ("proc/meminfo", MEMINFO_64_GIB),
            ("proc/self/cgroup", "0::/kubepods/pod1/ctr\n"),
            ("sys/fs/cgroup/memory.max", "max\n"),
            ("sys/fs/cgroup/kubepods/pod1/memory.max", "8589934592\n"),
            ("sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "max\n"),
        ]);
        assert_eq!(available_memory_bytes(pod.path()), 8 * gib);
        // cgroup v2 in its own namespace (`0::/`): the limit at the mount's root.
        let namespaced = tree(&[
            ("proc/meminfo", MEMINFO_64_GIB),
            ("proc/self/cgroup", "0::/\n"),
            ("sys/fs/cgroup/memory.max", "4294967296\n"),
        ]);
        assert_eq!(available_memory_bytes(namespaced.path()), 4 * gib);
        // cgroup v2 without a limit anywhere.
        let unlimited = tree(&[
            ("proc/meminfo", MEMINFO_64_GIB),
            ("proc/self/cgroup", "0::/user.slice\n"),
            ("sys/fs/cgroup/user.slice/memory.max", "max\n"),
        ]);
        assert_eq!(available_memory_bytes(unlimited.path()), 64 * gib);
        // cgroup v1 in a container: the host's path is not mounted, the container's cgroup
        // is the mount's root; other controllers' lines are skipped.
        let docker = tree(&[
            ("proc/meminfo", MEMINFO_64_GIB),
            (
                "proc/self/cgroup",
                "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n",
            ),
            ("sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648\n"),
            ("sys/fs/cgroup/cpu,cpuacct/cpu.shares", "1024\n"),
        ]);
        assert_eq!(available_memory_bytes(docker.path()), 2 * gib);
        // cgroup v1 without a limit: the page-rounded maximum, above physical memory.
        let v1_unlimited = tree(&[
            ("proc/meminfo", MEMINFO_64_GIB),
            ("proc/self/cgroup", "4:memory:/\n"),
            (
                "sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ]);
        assert_eq!(available_memory_bytes(v1_unlimited.path()), 64 * gib);
        // This machine: some memory.
        assert!(available_memory_bytes(std::path::Path::new("/")) > 0);
    }
}
