//! A layout's files computed from the table's rows, without writing Parquet (`sweep
//! --estimate`, `recommend`).
//!
//! The table's rows (the same seeded sample a build reads) are read once, projected onto the
//! columns the report and the layouts need. For each combination, the plan is made as a
//! build makes it (the same planner, the output ratio measured once), and each bin's rows
//! are put in the order its rewrite writes them: in file order for compaction, and for a
//! curve through the clustering stage's own reservoirs, buckets, range boundaries, sort and
//! tie-break (`ordered_ranges`). Each range (a compaction bin is
//! one range) is cut into files as the rolling writer cuts it ([`crate::plan::output_files`]
//! over the range's expected bytes), and each file's stats are collected by the writer's
//! [`StatsCollector`] over its rows. Those files, with their stats, and the files the plan
//! leaves alone (as a build leaves them), form a view of the table that the report measures
//! as it measures a build.
//!
//! What is estimated rather than built: file sizes (a file's rows times its bin's expected
//! bytes per row, from the plan's output ratio), where a file ends inside a range (by rows,
//! where the writer cuts by encoded bytes), and the rows an update touches (a seeded draw per
//! row position, where a build hashes row contents: the same share, other rows). Skipping
//! depends on the files' min/max stats alone, which are exact for the rows each estimated
//! file holds; BENCHMARKS.md compares estimates with builds.

use std::sync::atomic::{AtomicBool, Ordering};

use deltalake::arrow::array::RecordBatch;
use deltalake::arrow::compute::interleave_record_batch;
use deltalake::arrow::datatypes::Schema;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::plan::{Bin, PartitionPlan, Plan, output_files};
use crate::rewrite::stats::StatsCollector;
use crate::table::read::Reader;
use crate::table::stats::FileStats;
use crate::table::{DataFile, LeafColumn, TableView};

/// The table's rows as the estimates read them: per file of the table, its live (sampled)
/// rows projected onto the columns an estimate needs, and per row which simulated updates
/// touch it.
pub(crate) struct Rows {
    /// Per file of `table.files`: its batches, in file order.
    batches: Vec<Vec<RecordBatch>>,
    /// Per file: per row, bit `k` set when the update of `UPDATE_FRACTIONS[k]` touches it.
    touched: Vec<Vec<u8>>,
}

impl Rows {
    /// Reads every file of `table` through `reader` (its sample applied), keeping the
    /// top-level columns that hold one of `leaves`; with `only` (parallel to the files),
    /// just the files it marks, the others holding no rows. Runs on rayon's threads; call it
    /// off the async runtime.
    ///
    /// # Errors
    /// The read errors of the files ([`Error::DataFile`]); [`Error::Cancelled`].
    pub(crate) fn read(
        table: &TableView,
        reader: &Reader,
        leaves: &[LeafColumn],
        fractions: &[f64],
        seed: u64,
        only: Option<&[bool]>,
    ) -> Result<Self> {
        let keep: Vec<&str> = leaves.iter().map(|l| l.physical[0].as_str()).collect();
        let read = table
            .files
            .par_iter()
            .enumerate()
            .map(|(i, file)| {
                if only.is_some_and(|only| !only[i]) {
                    return Ok((Vec::new(), Vec::new()));
                }
                let batches = reader
                    .read(file)?
                    .into_iter()
                    .map(|batch| project(&batch, &keep))
                    .collect::<Result<Vec<_>>>()?;
                let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
                let file_key = xxhash_rust::xxh64::xxh64(file.path.as_bytes(), seed);
                let touched = (0..rows as u64)
                    .map(|row| {
                        let hash = file_key ^ row.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                        fractions.iter().enumerate().fold(0u8, |bits, (k, &f)| {
                            bits | (u8::from(super::updated(hash, f, seed)) << k)
                        })
                    })
                    .collect();
                Ok((batches, touched))
            })
            .collect::<Result<Vec<_>>>()?;
        let (batches, touched) = read.into_iter().unzip();
        Ok(Self { batches, touched })
    }
}

/// The columns of `batch` whose names are in `keep`.
fn project(batch: &RecordBatch, keep: &[&str]) -> Result<RecordBatch> {
    let schema = batch.schema();
    let indices: Vec<usize> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| keep.contains(&f.name().as_str()))
        .map(|(i, _)| i)
        .collect();
    if indices.is_empty() {
        // No column needed: keep the row count.
        return RecordBatch::try_new_with_options(
            std::sync::Arc::new(Schema::empty()),
            Vec::new(),
            &deltalake::arrow::array::RecordBatchOptions::new()
                .with_row_count(Some(batch.num_rows())),
        )
        .map_err(|e| Error::arrow("projecting rows for an estimate", e));
    }
    batch
        .project(&indices)
        .map_err(|e| Error::arrow("projecting rows for an estimate", e))
}

/// One estimated layout: `table` with its files replaced by the estimated ones, and per
/// update fraction, per file, whether the update touches the file.
pub(crate) struct Estimated {
    /// The table with the estimated files.
    pub table: TableView,
    /// Per fraction of `UPDATE_FRACTIONS`, per file of `table`.
    pub touched: Vec<Vec<bool>>,
}

/// How an estimate writes its files' stats and sizes.
pub(crate) struct Settings {
    /// The columns whose stats written files carry (the indexed columns and the clustering
    /// columns, as a build collects them), of those read.
    pub stats_leaves: Vec<LeafColumn>,
    /// Stats say `"tightBounds": true` (tables with deletion vectors).
    pub with_tight_bounds: bool,
    /// The sample's share of rows: sizes are the sample's, as a build of the sample writes
    /// them.
    pub fraction: f64,
    /// How many simulated updates [`Rows`] marks.
    pub update_fractions: usize,
}

/// The table as a build of `plan` (of `table`, its bins indexing `table.files`) would leave
/// it, from `rows`: the files the plan leaves alone ([`kept_file`]), then the files its bins
/// would write.
///
/// # Errors
/// [`Error::Arrow`] for rows that cannot be keyed or gathered; [`Error::Cancelled`].
pub(crate) fn estimate(
    table: &TableView,
    plan: &Plan,
    rows: &Rows,
    settings: &Settings,
    cancel: &AtomicBool,
) -> Result<Estimated> {
    let bins: Vec<(&Bin, &PartitionPlan)> = plan
        .partitions
        .iter()
        .flat_map(|p| p.bins.iter().map(move |b| (b, p)))
        .collect();
    let per_bin = estimate_bins(table, plan, rows, settings, cancel)?;
    // The files the plan leaves alone stay in the table, as a build leaves them (already
    // clustered files, files compaction does not pick).
    let mut in_plan = vec![false; table.files.len()];
    for (bin, _) in &bins {
        for &i in &bin.files {
            in_plan[i] = true;
        }
    }
    let kept = table
        .files
        .iter()
        .enumerate()
        .filter(|(i, _)| !in_plan[*i])
        .filter_map(|(i, file)| {
            let bits = rows.touched[i].iter().fold(0u8, |acc, b| acc | b);
            kept_file(file, &rows.batches[i], settings)
                .transpose()
                .map(|kept| kept.map(|kept| (kept, bits)))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut files = Vec::new();
    let mut touched: Vec<Vec<bool>> = vec![Vec::new(); settings.update_fractions];
    let estimated = per_bin
        .into_iter()
        .flat_map(|(bin_files, bin_touched)| bin_files.into_iter().zip(bin_touched));
    for (file, bits) in kept.into_iter().chain(estimated) {
        files.push(file);
        for (k, t) in touched.iter_mut().enumerate() {
            t.push(bits & (1 << k) != 0);
        }
    }
    let mut table = table.clone();
    table.files = files;
    Ok(Estimated { table, touched })
}

/// Per bin of `plan` (in partition, then bin order), the files a build of it would write,
/// estimated from `rows` as [`estimate`] does, and per file the updates that touch it (bits).
/// Only the rows of the bins' files are used: [`Rows::read`] may leave the others out.
///
/// # Errors
/// As [`estimate`].
pub(crate) fn estimate_bins(
    table: &TableView,
    plan: &Plan,
    rows: &Rows,
    settings: &Settings,
    cancel: &AtomicBool,
) -> Result<Vec<(Vec<DataFile>, Vec<u8>)>> {
    let bins: Vec<(&Bin, &PartitionPlan)> = plan
        .partitions
        .iter()
        .flat_map(|p| p.bins.iter().map(move |b| (b, p)))
        .collect();
    bins.par_iter()
        .map(|(bin, partition)| {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            estimate_bin(table, plan, partition, bin, rows, settings, cancel)
        })
        .collect()
}

/// A file the plan leaves alone, as the estimate's table holds it: the file itself when
/// every row is read; with a sample, the sample's share of it (as the scratch copy of a
/// sampled build holds it): stats collected over its sampled `batches` (live rows), its
/// size times the sample's fraction, no deletion vector; `None` when the sample keeps none of
/// its rows.
///
/// # Errors
/// [`Error::Arrow`] for rows whose stats cannot be collected.
fn kept_file(
    file: &DataFile,
    batches: &[RecordBatch],
    settings: &Settings,
) -> Result<Option<DataFile>> {
    if settings.fraction >= 1.0 {
        return Ok(Some(file.clone()));
    }
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    if rows == 0 {
        return Ok(None);
    }
    let mut collector =
        StatsCollector::new(settings.stats_leaves.clone(), settings.with_tight_bounds);
    for batch in batches.iter().filter(|b| b.num_columns() > 0) {
        collector.update(batch)?;
    }
    let mut stats = FileStats::from_json("an estimated file", &collector.finish())?;
    stats.num_records = Some(rows as u64);
    let mut kept = file.clone();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "an estimated size, rounded"
    )]
    {
        kept.size_bytes = ((file.size_bytes as f64 * settings.fraction).round() as u64).max(1);
    }
    kept.stats = Some(stats);
    kept.deletion_vector = None;
    Ok(Some(kept))
}

/// One bin's estimated files and, per file, the updates that touch it (bits).
fn estimate_bin(
    table: &TableView,
    plan: &Plan,
    partition: &PartitionPlan,
    bin: &Bin,
    rows: &Rows,
    settings: &Settings,
    cancel: &AtomicBool,
) -> Result<(Vec<DataFile>, Vec<u8>)> {
    // The bin's rows in read order, and each batch's update bits.
    let mut batches: Vec<&RecordBatch> = Vec::new();
    let mut bits: Vec<&[u8]> = Vec::new();
    for &i in &bin.files {
        let mut offset = 0;
        for batch in &rows.batches[i] {
            batches.push(batch);
            bits.push(&rows.touched[i][offset..offset + batch.num_rows()]);
            offset += batch.num_rows();
        }
    }
    let total_rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if total_rows == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let target = plan.target_file_bytes;
    let ranges: Vec<Vec<(u32, u32)>> = match &plan.clustering {
        Some(clustering) => {
            let owned: Vec<RecordBatch> = batches.iter().map(|b| (*b).clone()).collect();
            let tree = partition
                .cut_tree
                .as_ref()
                .map(|t| t.bind(table))
                .transpose()?;
            let layout = crate::rewrite::cluster::Layout {
                clustering,
                tree: tree.as_ref(),
                partition_values: &partition.raw_values,
            };
            crate::rewrite::cluster::ordered_ranges(
                &owned,
                &layout,
                &crate::rewrite::cluster::RangeSizes::of(bin, target),
                cancel,
            )?
        }
        None => vec![
            batches
                .iter()
                .enumerate()
                .flat_map(|(b, batch)| {
                    let b = u32::try_from(b).unwrap_or(u32::MAX);
                    (0..batch.num_rows()).map(move |r| (b, u32::try_from(r).unwrap_or(u32::MAX)))
                })
                .collect(),
        ],
    };
    // Full-scale output bytes per row read (with a sample, each row read stands for
    // 1 / fraction rows).
    #[expect(clippy::cast_precision_loss, reason = "byte counts, an estimate")]
    let bytes_per_row = {
        let expected = if bin.expected_output_bytes > 0 {
            bin.expected_output_bytes as f64
        } else {
            bin.input_bytes as f64 * plan.output_ratio
        };
        expected / total_rows as f64
    };
    let template = &table.files[bin.files[0]];
    let mut files = Vec::new();
    let mut touched = Vec::new();
    for range in ranges {
        if range.is_empty() {
            continue;
        }
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "byte and row counts, rounded"
        )]
        let cuts: Vec<usize> = if partition.cut_tree.is_some() {
            // A cut tree's range is one file (`rewrite::cluster::run`).
            Vec::new()
        } else {
            let range_bytes = (range.len() as f64 * bytes_per_row) as u64;
            let cut = output_files(range_bytes, target);
            let file_rows = ((cut.file_bytes as f64 / bytes_per_row).round() as usize).max(1);
            (1..cut.files)
                .map(|k| (k as usize).saturating_mul(file_rows))
                .filter(|&at| at < range.len())
                .collect()
        };
        let mut start = 0;
        for end in cuts.into_iter().chain(std::iter::once(range.len())) {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let slice = &range[start..end];
            start = end;
            let indices: Vec<(usize, usize)> = slice
                .iter()
                .map(|&(b, r)| (b as usize, r as usize))
                .collect();
            let mut collector =
                StatsCollector::new(settings.stats_leaves.clone(), settings.with_tight_bounds);
            if batches[0].num_columns() > 0 {
                let gathered = interleave_record_batch(&batches, &indices)
                    .map_err(|e| Error::arrow("gathering an estimated file's rows", e))?;
                collector.update(&gathered)?;
            }
            let stats = collector.finish();
            let mut stats = FileStats::from_json("an estimated file", &stats)?;
            stats.num_records = Some(slice.len() as u64);
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss,
                reason = "an estimated size, rounded"
            )]
            let size =
                ((slice.len() as f64 * bytes_per_row * settings.fraction).round() as u64).max(1);
            let mut file = template.clone();
            file.path = format!("estimate/part-{:05}-{:05}.parquet", bin.id, files.len());
            file.raw_path.clone_from(&file.path);
            file.size_bytes = size;
            file.stats = Some(stats);
            file.deletion_vector = None;
            file.tags.clear();
            file.clustering_provider = None;
            file.base_row_id = None;
            file.default_row_commit_version = None;
            files.push(file);
            touched.push(
                slice
                    .iter()
                    .fold(0u8, |acc, &(b, r)| acc | bits[b as usize][r as usize]),
            );
        }
    }
    Ok((files, touched))
}
