//! Preparing a run: its options, and the I/O that planning needs around the pure planner
//! ([`crate::plan::plan`]).
//!
//! ```text
//!  known cut trees      output ratio           plan::plan         cut trees
//!  (commitInfo of  ──>  (a sample of the  ──>  (pure)       ──>  (a row sample of
//!   earlier runs)        candidates)                              each partition)
//! ```
//! `plan_sized` is shared by `optimize` ([`crate::optimize`]), the work orders' `plan`
//! ([`crate::workorder::plan`]) and `sweep`'s estimates: every plan that is executed was
//! prepared here, so its bins and ranges are sized by the measured output ratio and its cut
//! trees are built or read back the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use deltalake::arrow::array::{RecordBatch, UInt32Array};
use futures::TryStreamExt as _;
use rand::SeedableRng as _;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::plan::cuts::{self, CutTree};
use crate::plan::{self, Plan, PlanOptions};
use crate::rewrite;
use crate::table::TableView;
use crate::table::log::CommitEntry;
use crate::table::read::Reader;

/// Options of the `optimize` job.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OptimizeOptions {
    pub(crate) cancel: Arc<AtomicBool>,
    pub(crate) dry_run: bool,
    pub(crate) single_round: bool,
    pub(crate) memory_limit_bytes: Option<u64>,
    pub(crate) plan: PlanOptions,
    pub(crate) spill_directory: Option<std::path::PathBuf>,
    pub(crate) verify: bool,
    pub(crate) threads: usize,
    pub(crate) read_concurrency: Option<usize>,
    pub(crate) sample: Option<(f64, u64)>,
    pub(crate) codec: rewrite::write::Codec,
    pub(crate) files_of: Option<TableView>,
    pub(crate) work_order: bool,
    pub(crate) budget: Budget,
    pub(crate) workload: Option<Arc<crate::workload::Workload>>,
    pub(crate) allow_regression: bool,
}

impl OptimizeOptions {
    /// The Parquet compression of written files (`--compression`). Defaults to zstd at
    /// [`rewrite::write::DEFAULT_ZSTD_LEVEL`].
    #[must_use]
    pub fn with_codec(mut self, codec: rewrite::write::Codec) -> Self {
        self.codec = codec;
        self
    }

    /// The planning options (target size, candidates, `--where`). Defaults to
    /// [`PlanOptions::default`].
    #[must_use]
    pub fn with_plan(mut self, plan: PlanOptions) -> Self {
        self.plan = plan;
        self
    }

    /// Worker threads of the rewrite pool; 0 (the default, [`rewrite::DEFAULT_THREADS`])
    /// means one per core. At most [`rewrite::MAX_THREADS`]; the pool never has more threads
    /// than the plan has bins.
    #[must_use]
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Files a compaction worker fetches at once (`--read-concurrency`): a bounded prefetch of
    /// at most this many files and [`crate::table::read::PREFETCH_BYTES`] at once (or one larger file).
    /// Defaults to [`crate::table::read::DEFAULT_READ_CONCURRENCY`]; 0 counts as 1.
    #[must_use]
    pub fn with_read_concurrency(mut self, files: usize) -> Self {
        self.read_concurrency = Some(files.max(1));
        self
    }

    /// A flag that cancels the run when set (the binary sets it on Ctrl-C and SIGTERM): the
    /// workers check it between decoded batches, key computations, routed batches and
    /// written chunks of rows, so a run stops within about a second; the written files are
    /// deleted and the run returns [`Error::Cancelled`] instead of committing. A commit
    /// already under way is not interrupted. Defaults to a flag nobody sets.
    #[must_use]
    pub fn with_cancel(mut self, cancel: Arc<AtomicBool>) -> Self {
        self.cancel = cancel;
        self
    }

    /// The memory a clustering run may buffer, bytes (Arrow memory of the rows it holds). A
    /// partition that does not fit is clustered out of core: rows are routed to per-range
    /// spill files, then each range is sorted and written on its own. Defaults to
    /// [`rewrite::default_memory_limit_bytes`], a quarter of the memory available (the
    /// cgroup's limit where one is set, else physical memory).
    #[must_use]
    pub fn with_memory_limit(mut self, bytes: Option<u64>) -> Self {
        self.memory_limit_bytes = bytes;
        self
    }

    /// Where out-of-core clustering puts its spill files (in a fresh subdirectory, removed
    /// on success and on failure). Defaults to the system's temporary directory.
    #[must_use]
    pub fn with_spill_directory(mut self, directory: Option<std::path::PathBuf>) -> Self {
        self.spill_directory = directory;
        self
    }

    /// Compact in one round ([`crate::optimize::MAX_COMPACTION_ROUNDS`] later rounds otherwise,
    /// see [`crate::optimize::rewrite()`]): the run writes exactly what its plan says, as work orders do, and small
    /// files its bins left stay for the next run. Defaults to false.
    #[must_use]
    pub fn with_single_round(mut self, single_round: bool) -> Self {
        self.single_round = single_round;
        self
    }

    /// Plan only: write nothing. Defaults to false.
    #[must_use]
    pub fn with_dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Reads the files the table names by absolute URI inside `source`'s root (data files and
    /// `p` deletion vectors) from `source`'s object store: a `sweep` scratch table of a table
    /// in an object store refers to the source's files this way (PROTOCOL.md "Add File and
    /// Remove File": paths may be absolute URIs, as in shallow clones).
    #[must_use]
    pub fn with_files_of(mut self, source: Option<TableView>) -> Self {
        self.files_of = source;
        self
    }

    /// Keeps a seeded uniform sample of the rows: each live row independently with
    /// probability `fraction` (by a hash of the file path, the row's index and `seed`, so a
    /// rerun keeps the same rows). For `sweep` experiments on scratch copies only: the
    /// rows written are then not the rows read. `None` (the default) keeps every row.
    #[must_use]
    pub fn with_sample(mut self, sample: Option<(f64, u64)>) -> Self {
        self.sample = sample;
        self
    }

    /// Keeps the run as a work order in [`crate::optimize::OptimizeOutcome::work_order`]: the document `plan`
    /// writes (a [`crate::workorder::WorkOrder`] of the same plan, settings and input files), which `execute`
    /// and `commit` accept as it is (`optimize --json` prints it as `plan`). Off by default: it
    /// copies every input file's `add` action.
    #[must_use]
    pub fn with_work_order(mut self, keep: bool) -> Self {
        self.work_order = keep;
        self
    }

    /// Bounds the run ([`Budget`]): bins are taken by expected saving per byte, best first,
    /// until the bytes are spent, none starts after the duration, and bins (or the whole
    /// run) saving less than the least gain are not run ([`crate::gain`]). Defaults to no
    /// bound.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] as [`Budget::validate`] says.
    pub fn with_budget(mut self, budget: Budget) -> Result<Self> {
        budget.validate()?;
        self.budget = budget;
        Ok(self)
    }

    /// The run's bounds ([`OptimizeOptions::with_budget`]).
    #[must_use]
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The workload the run is measured on ([`OptimizeOptions::with_workload`]).
    #[must_use]
    pub fn workload(&self) -> Option<&Arc<crate::workload::Workload>> {
        self.workload.as_ref()
    }

    /// The workload the run is measured on ([`crate::gain::Measure::resolve`]): its figures
    /// before and after, recorded in the commit, the expected saving of each bin, and the
    /// regression guard. Defaults to the workload the last layout run recorded, else
    /// generated predicates on the clustering columns, else a full scan.
    #[must_use]
    pub fn with_workload(mut self, workload: Option<Arc<crate::workload::Workload>>) -> Self {
        self.workload = workload;
        self
    }

    /// Commit a layout that scans more files or bytes per run of a workload (given or
    /// recorded) than the table as it is; refused with [`Error::LayoutRegression`]
    /// otherwise. Defaults to false.
    #[must_use]
    pub fn with_allow_regression(mut self, allow: bool) -> Self {
        self.allow_regression = allow;
        self
    }

    /// Fingerprints the rows read and the rows written, per partition, before committing,
    /// and refuses to commit on any difference ([`crate::optimize::Rewritten::verify`]). Off by default:
    /// it reads every written file back.
    #[must_use]
    pub fn with_verify(mut self, verify: bool) -> Self {
        self.verify = verify;
        self
    }
}

impl OptimizeOptions {
    /// The execution settings of the rewrite.
    pub(crate) fn execution(&self) -> rewrite::Settings {
        rewrite::Settings {
            cancel: self.cancel.clone(),
            codec: self.codec,
            memory_limit_bytes: self.memory_limit_bytes,
            read_concurrency: self.read_concurrency,
            spill_directory: self.spill_directory.clone(),
            threads: self.threads,
            deadline: None,
            order: Vec::new(),
            clock: std::sync::Arc::default(),
        }
    }
}

/// What bounds a run ([`OptimizeOptions::with_budget`]). The default bounds
/// nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct Budget {
    /// Input bytes the run may rewrite (`--max-rewrite-bytes`); the last unit taken may pass
    /// it.
    pub max_rewrite_bytes: Option<u64>,
    /// Wall time after which no new bin starts (`--max-duration`); bins running then finish.
    pub max_duration: Option<Duration>,
    /// Least share of cost a unit, and the run, must save (`--min-gain`), in `[0, 1)`.
    pub min_gain: Option<f64>,
}

impl Budget {
    /// A budget of these bounds.
    #[must_use]
    pub fn new(
        max_rewrite_bytes: Option<u64>,
        max_duration: Option<Duration>,
        min_gain: Option<f64>,
    ) -> Self {
        Self {
            max_rewrite_bytes,
            max_duration,
            min_gain,
        }
    }

    /// Whether any bound is set (the run then estimates what each unit saves, [`crate::gain`]).
    #[must_use]
    pub fn is_set(&self) -> bool {
        self.max_rewrite_bytes.is_some() || self.max_duration.is_some() || self.min_gain.is_some()
    }

    /// Checks the bounds on their own.
    ///
    /// # Errors
    /// [`Error::InvalidOption`]: a byte budget or duration of 0, a least gain outside
    /// `[0, 1)`.
    pub fn validate(&self) -> Result<()> {
        if self.max_rewrite_bytes == Some(0) {
            return Err(Error::invalid_option(
                crate::Setting::MaxRewriteBytes,
                "must be greater than 0",
            ));
        }
        if self.max_duration.is_some_and(|d| d.is_zero()) {
            return Err(Error::invalid_option(
                crate::Setting::MaxDuration,
                "must be greater than 0",
            ));
        }
        if let Some(g) = self.min_gain
            && !(0.0..1.0).contains(&g)
        {
            return Err(Error::invalid_option(
                crate::Setting::MinGain,
                format!("must be in [0, 1), got {g}"),
            ));
        }
        Ok(())
    }
}

/// Plans `table` with `options`' plan options, bins and clustering ranges sized by the
/// output ratio ([`PlanOptions::with_output_ratio`]): the one given, else the one
/// [`rewrite::estimate`] measures on a sample of the candidate files (read with the run's
/// settings, written in memory with its codec; the sample also decides the plan's
/// [`Plan::plain_columns`]), then planned again with it. With a cut tree
/// ([`crate::plan::cluster::ClusterRequest::cuts`]), the trees of earlier runs that the
/// table's files name are read back from the log first ([`cut_trees`]), and
/// each partition the plan rewrites without one gets a new tree ([`build_trees`]).
///
/// # Errors
/// Everything [`plan::plan`] returns; the read errors of the sampled files; what
/// [`cuts::build`] returns.
pub(crate) async fn plan_sized(table: &TableView, options: &OptimizeOptions) -> Result<Plan> {
    plan_sized_with(table, options, None).await
}

/// The output measures ([`rewrite::estimate::measure_output`]) of the draft plans of one
/// job's plans (`sweep --estimate`, `recommend`), by everything that decides a measure: the
/// sampled files, the draft's bins, the clustering, the codec and the row-group size. A
/// measure depends on the target only through the row-group size
/// ([`rewrite::write::row_group_bytes`]), so plans of one layout at targets with equal row
/// groups (every target of 64 MiB and up) measure once, and get exactly what each would
/// measure.
#[derive(Default)]
pub(crate) struct MeasureMemo(
    std::sync::Mutex<std::collections::HashMap<String, rewrite::estimate::OutputMeasure>>,
);

/// [`plan_sized`], with the output measures of `memo` reused and kept.
///
/// # Errors
/// As [`plan_sized`].
pub(crate) async fn plan_sized_with(
    table: &TableView,
    options: &OptimizeOptions,
    memo: Option<&MeasureMemo>,
) -> Result<Plan> {
    let mut plan_options = options.plan.clone();
    if let Some(request) = plan_options.clustering_mut()
        && request.workload.is_some()
        && !request.full
    {
        let ids: BTreeSet<String> = table
            .files
            .iter()
            .filter_map(|f| f.tags.get(cuts::TAG_CUT_TREE).cloned().flatten())
            .filter(|id| !request.known_trees.contains_key(id))
            .collect();
        if !ids.is_empty() {
            let recorded = cut_trees(table, &ids).await?;
            let whole_log_read = recorded.whole_log_read;
            let mut unusable = recorded.unusable;
            for (id, (version, tree)) in recorded.found {
                // A tree that no longer fits the table (a cut on a column since dropped or
                // retyped) cannot route rows: laid out anew, as one that cannot be read.
                match tree.bind(table) {
                    Ok(_) => {
                        request.known_trees.insert(id, tree);
                    }
                    Err(e) => unusable.push((id, version, e.to_string())),
                }
            }
            for (id, version, why) in &unusable {
                log::warn!(
                    "the cut tree {id} recorded in the commit of version {version} cannot be used ({why}): the files it laid out are laid out anew"
                );
            }
            let missing = ids.len() - request.known_trees.len() - unusable.len();
            if missing > 0 {
                let why = if whole_log_read {
                    "recorded in no commit (every commit is in the log, so the commitInfo that recorded them was edited)"
                } else {
                    "no longer in the log (its commits were cleaned up)"
                };
                log::warn!(
                    "{missing} of the {} cut trees the table's files name are {why}: their partitions are laid out anew",
                    ids.len()
                );
            }
        }
    }
    let mut plan = ratio_sized(table, options, &plan_options, memo).await?;
    build_trees(table, &mut plan, options).await?;
    Ok(plan)
}

/// [`plan::plan`] with the output ratio measured (see [`plan_sized`]).
async fn ratio_sized(
    table: &TableView,
    options: &OptimizeOptions,
    plan_options: &PlanOptions,
    memo: Option<&MeasureMemo>,
) -> Result<Plan> {
    if plan_options.output_ratio().is_some() {
        return plan::plan(table, plan_options);
    }
    // The sample is drawn from a plan at the smallest ratio: every candidate of a partition in
    // one bin, so that candidates a plan by input bytes would leave alone (each alone in its
    // bin) are measured too.
    let first = plan::plan(
        table,
        &plan_options
            .clone()
            .with_output_ratio(Some(rewrite::estimate::MIN_RATIO)),
    )?;
    if first.is_empty() {
        return plan::plan(table, plan_options);
    }
    let mut reader = Reader::for_table(table)?;
    reader.foreign = options
        .files_of
        .as_ref()
        .map(crate::table::read::Foreign::of);
    reader.cancel = Some(options.cancel.clone());
    let codec = options.codec;
    let key = memo.map(|_| {
        let bins: Vec<(&[usize], Option<u64>, u64)> = first
            .bins()
            .map(|b| (b.files.as_slice(), b.input_rows, b.input_bytes))
            .collect();
        format!(
            "{:?}|{:?}|{}|{codec:?}|{}",
            rewrite::estimate::sample_files(table, &first),
            bins,
            serde_json::to_string(&first.clustering).unwrap_or_default(),
            rewrite::write::row_group_bytes(first.target_file_bytes)
        )
    });
    let known = memo
        .zip(key.as_ref())
        .and_then(|(memo, key)| memo.0.lock().ok()?.get(key).cloned());
    let measured = match known {
        Some(measured) => measured,
        None => {
            let table = table.clone();
            let measured = tokio::task::spawn_blocking(move || {
                rewrite::estimate::measure_output(&table, &first, &reader, codec)
            })
            .await
            .map_err(|e| Error::Internal(format!("the output size estimate failed: {e}")))??;
            if let (Some(memo), Some(key)) = (memo, key)
                && let Ok(mut known) = memo.0.lock()
            {
                known.insert(key, measured.clone());
            }
            measured
        }
    };
    let mut plan = plan::plan(
        table,
        &plan_options
            .clone()
            .with_output_ratio(Some(measured.ratio.unwrap_or(1.0))),
    )?;
    plan.plain_columns = measured.plain_columns;
    Ok(plan)
}

/// Files of a partition read for its cut tree's sample, at most: spread evenly over the
/// partition's files in log order.
pub const TREE_SAMPLE_FILES: usize = 64;
/// Seed of the row sample a cut tree is built from.
pub const TREE_SAMPLE_SEED: u64 = 0x00c0_7a11_7ee5;

/// Builds the cut tree of every partition of `plan` that is laid out by one and has none
/// yet: reads up to [`TREE_SAMPLE_FILES`] of the partition's files (the sample options of
/// `options` apply), keeps a seeded uniform sample of [`cuts::DEFAULT_TREE_SAMPLE_ROWS`] of
/// their rows, and grows the tree to as many leaves as the partition's output makes files at
/// the target, each side of a cut keeping at least [`cuts::MIN_LEAF_SHARE`] of an average
/// leaf ([`cuts::build`]).
///
/// # Errors
/// Read errors of the sampled files; what [`cuts::build`] returns.
async fn build_trees(table: &TableView, plan: &mut Plan, options: &OptimizeOptions) -> Result<()> {
    let Some(clustering) = plan.clustering.clone() else {
        return Ok(());
    };
    let Some(workload) = clustering.workload.clone() else {
        return Ok(());
    };
    let curve_columns = clustering.columns.clone();
    let target = plan.target_file_bytes;
    for index in 0..plan.partitions.len() {
        if plan.partitions[index].cut_tree.is_some() {
            continue;
        }
        let Some(bin) = plan.partitions[index].bins.first().cloned() else {
            continue;
        };
        let mut reader = Reader::for_table(table)?;
        reader.sample = options.sample;
        reader.foreign = options
            .files_of
            .as_ref()
            .map(crate::table::read::Foreign::of);
        reader.cancel = Some(options.cancel.clone());
        let input = TreeJob {
            table: table.clone(),
            workload: workload.clone(),
            partition_values: plan.partitions[index].raw_values.clone(),
            files: bin.files.clone(),
            expected_output_bytes: bin.expected_output_bytes,
            target_file_bytes: target,
            curve_columns: curve_columns.clone(),
            cancel: options.cancel.clone(),
        };
        let tree = tokio::task::spawn_blocking(move || input.run(&reader))
            .await
            .map_err(|e| Error::TaskFailed {
                task: "cut tree",
                source: e,
            })??;
        log::info!(
            "partition {}: cut tree {} with {} leaves from {} sampled rows",
            plan.partitions[index].display,
            tree.id,
            tree.leaves,
            tree.sampled_rows
        );
        plan.partitions[index].cut_tree = Some(tree);
    }
    Ok(())
}

/// One partition's tree to build (owned, for a blocking task).
struct TreeJob {
    table: TableView,
    workload: Arc<crate::workload::Workload>,
    partition_values: Vec<Option<String>>,
    files: Vec<usize>,
    expected_output_bytes: u64,
    target_file_bytes: u64,
    curve_columns: Vec<String>,
    cancel: Arc<AtomicBool>,
}

impl TreeJob {
    fn run(self, reader: &Reader) -> Result<CutTree> {
        let sample = tree_sample(&self.table, &self.workload, &self.files, reader)?;
        let rows = sample.num_rows();
        // As many leaves as the scope's output makes files at the target; each side of a
        // cut keeps at least MIN_LEAF_SHARE of an average leaf of the sample (it stands for
        // the scope).
        let max_leaves = usize::try_from(
            plan::output_files(self.expected_output_bytes, self.target_file_bytes).files,
        )
        .unwrap_or(usize::MAX);
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "a row count, rounded up"
        )]
        let min_leaf_rows =
            (rows as f64 * cuts::MIN_LEAF_SHARE / max_leaves.max(1) as f64).ceil() as usize;
        cuts::build(&cuts::BuildInput {
            table: &self.table,
            workload: &self.workload,
            partition_values: &self.partition_values,
            sample: &sample,
            min_leaf_rows: min_leaf_rows.max(1),
            max_leaves,
            curve_columns: self.curve_columns.clone(),
            cancel: &self.cancel,
        })
    }
}

/// A seeded uniform sample of up to [`cuts::DEFAULT_TREE_SAMPLE_ROWS`] rows of `files`
/// (indices into `table.files`; up to [`TREE_SAMPLE_FILES`] of them, evenly spaced, are
/// read), projected onto the top-level columns that hold the workload's columns.
///
/// # Errors
/// Read errors of the files; [`Error::InvalidWorkload`] for a query that does not fit.
pub(crate) fn tree_sample(
    table: &TableView,
    workload: &crate::workload::Workload,
    files: &[usize],
    reader: &Reader,
) -> Result<RecordBatch> {
    use rayon::prelude::*;
    let keep: BTreeSet<String> = workload
        .bind(table)?
        .into_iter()
        .flatten()
        .filter(|c| c.partition_index.is_none())
        .map(|c| c.physical[0].clone())
        .collect();
    let step = files.len().div_ceil(TREE_SAMPLE_FILES).max(1);
    let chosen: Vec<usize> = files.iter().copied().step_by(step).collect();
    let read = chosen
        .par_iter()
        .map(|&i| {
            reader
                .read(&table.files[i])?
                .into_iter()
                .map(|batch| project(&batch, &keep))
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    let batches: Vec<RecordBatch> = read.into_iter().flatten().collect();
    let schema = match batches.first() {
        Some(b) => b.schema(),
        None => {
            return project(
                &RecordBatch::new_empty(Arc::new(reader.target_schema.as_ref().clone())),
                &keep,
            );
        }
    };
    let all = deltalake::arrow::compute::concat_batches(&schema, &batches)
        .map_err(|e| Error::arrow("joining a cut tree's sample", e))?;
    if all.num_rows() <= cuts::DEFAULT_TREE_SAMPLE_ROWS {
        return Ok(all);
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(TREE_SAMPLE_SEED);
    let mut picked =
        rand::seq::index::sample(&mut rng, all.num_rows(), cuts::DEFAULT_TREE_SAMPLE_ROWS)
            .into_vec();
    picked.sort_unstable();
    let indices = UInt32Array::from(
        picked
            .into_iter()
            .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
            .collect::<Vec<_>>(),
    );
    deltalake::arrow::compute::take_record_batch(&all, &indices)
        .map_err(|e| Error::arrow("sampling a cut tree's rows", e))
}

/// The columns of `batch` whose names are in `keep`.
fn project(batch: &RecordBatch, keep: &BTreeSet<String>) -> Result<RecordBatch> {
    let indices: Vec<usize> = batch
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| keep.contains(f.name()))
        .map(|(i, _)| i)
        .collect();
    batch
        .project(&indices)
        .map_err(|e| Error::arrow("projecting a cut tree's sample", e))
}

/// The cut trees of a table's files as [`cut_trees`] reads them back from the log.
#[derive(Debug, Default)]
pub struct RecordedTrees {
    /// Each usable tree by id, with the version of the commit that recorded it.
    pub found: std::collections::BTreeMap<String, (u64, cuts::CutTree)>,
    /// Trees recorded under a wanted id that cannot be used: (id, version, why), the JSON
    /// not a tree or the tree not valid ([`cuts::CutTree::validate`]: edited).
    pub unusable: Vec<(String, u64, String)>,
    /// Whether every commit down to version 0 was read (none was cleaned up), so that a
    /// tree in neither part was removed from the `commitInfo` that recorded it, not cleaned
    /// up with its commit.
    pub whole_log_read: bool,
}

/// The cut trees named `ids` ([`cuts::CutTree::id`]), read from the
/// `commitInfo` of the commits that laid files out by them
/// ([`cuts::COMMIT_INFO_CUT_TREES`]), newest commit first; the reading stops
/// once every tree is found. A tree whose commits were cleaned up from the log is in
/// neither part of the result; one recorded under a wanted id whose JSON does not read back
/// as a valid tree is in [`RecordedTrees::unusable`] with the reason (unless a usable
/// record of it is found).
///
/// # Errors
/// [`Error::Delta`] when a commit file cannot be read; [`Error::DamagedLog`] when one holds
/// a line that is not JSON.
pub async fn cut_trees(
    table: &TableView,
    ids: &std::collections::BTreeSet<String>,
) -> Result<RecordedTrees> {
    let mut out = RecordedTrees::default();
    if ids.is_empty() {
        return Ok(out);
    }
    let mut commits = std::pin::pin!(crate::table::log::newest_first(table));
    while out.found.len() < ids.len() {
        let Some((version, bytes)) = commits.try_next().await? else {
            out.whole_log_read = true;
            break;
        };
        let Some(bytes) = bytes else { break };
        let info = CommitEntry::read(table, version, &bytes)?.commit_info;
        let Some(trees) = info
            .as_ref()
            .and_then(|i| i.get(cuts::COMMIT_INFO_CUT_TREES))
            .and_then(Value::as_array)
        else {
            continue;
        };
        for value in trees {
            let Some(id) = value.get("id").and_then(Value::as_str) else {
                continue;
            };
            if !ids.contains(id) || out.found.contains_key(id) {
                continue;
            }
            let tree = serde_json::from_value::<cuts::CutTree>(value.clone())
                .map_err(|e| format!("not a cut tree: {e}"))
                .and_then(|tree| {
                    tree.validate().map(|()| tree).map_err(|e| match e {
                        Error::Internal(message) => message,
                        other => other.to_string(),
                    })
                });
            match tree {
                Ok(tree) => {
                    out.found.insert(id.to_string(), (version, tree));
                }
                Err(why) => out.unusable.push((id.to_string(), version, why)),
            }
        }
    }
    out.unusable
        .retain(|(id, _, _)| !out.found.contains_key(id));
    Ok(out)
}

/// Trees by id, as [`cut_trees`] reads them.
pub type KnownTrees = BTreeMap<String, CutTree>;
