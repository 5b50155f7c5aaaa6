//! Clustering one partition along a curve.
//!
//! # Algorithm
//! 1. Read the partition's live rows, feeding one seeded reservoir per clustering column
//!    ([`crate::curve::keys::Reservoir`]); equal seeds make the reservoirs pick the same rows,
//!    so together they are a sample of whole rows.
//! 2. Turn each reservoir into rank buckets, and the sampled rows into curve keys.
//! 3. Cut the sorted sample keys into `n` ranges, `n` being the output files the expected
//!    output bytes ask for ([`crate::plan::output_files`]): of equal row counts, or one of
//!    the target and a remainder ([`crate::plan::Bin::range_cuts`]), each cut moved to a
//!    curve-cell corner nearby ([`range_boundaries_at`]).
//! 4. Route every row to its range by its key (binary search over the boundaries): in memory
//!    as (key, batch, row) triples, out of core into spill files.
//! 5. For each range, in parallel: sort its rows by key and, among equal keys, by the
//!    clustering columns' values (in the order of [`crate::curve::keys`]; rows equal in both
//!    keep their routing order), gather and write them in order to rolling files tagged with
//!    the cube. Rows inside a file follow the curve, and with one column they are sorted by
//!    value, so Parquet row-group and page statistics are as tight as they can be.
//!
//! # Memory
//! Step 1 keeps the rows it reads while their Arrow memory stays within the budget
//! (`--memory-limit`). A partition that does not fit is clustered out of core: step 1 only
//! samples, step 4 reads the files again and appends each row to its range's spill file
//! (Arrow IPC, in a temporary directory removed on success and failure; more pieces than
//! 64 are routed in passes, at most 64 files open at once: `finish`),
//! and step 5 loads as
//! many ranges at a time as the budget holds (at least one), each range's rows held once,
//! each spilled piece cut again into pieces of about [`PIECE_BYTES`] sorted and gathered one
//! at a time, as in memory; there the budget also counts each
//! range writer's buffers (the part of its file not uploaded yet, at most 64 MiB: see
//! [`super::upload`], and a row group). In
//! memory, rows take at most half the budget (the other half is for the rows being gathered
//! and encoded). Ranges are about one output file each, so peak memory stays near the budget
//! whatever the partition's size, unless a single range (one output file of rows) is larger
//! than the budget. Both modes
//! route the same rows in the same order to the same ranges and sort them stably, so they
//! write the same files.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use deltalake::arrow::array::{ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use deltalake::arrow::compute::{
    LexicographicalComparator, SortColumn, SortOptions, concat, concat_batches,
    filter_record_batch, interleave_record_batch, take_record_batch,
};
use rayon::prelude::*;

use super::timings::{Clock, Stage};
use super::write::{RollingWriter, WriterConfig, WrittenFile};
use super::{READ_ROWS_PER_WRITE, RewriteContext};
use crate::column::leaf_values;
use crate::column::normalize;
use crate::curve::bits_per_dimension;
use crate::curve::keys::{ColumnBuckets, DEFAULT_SAMPLE_ROWS, Reservoir};
use crate::curve::{TAG_CUBE_COLUMNS, TAG_CUBE_CURVE, TAG_CUBE_ID};
use crate::error::{Error, Result};
use crate::plan::Bin;
use crate::plan::cluster::{Clustering, KeyRange, KeySpace};
use crate::plan::cuts::{BoundTree, TAG_CUT_LEAF, TAG_CUT_TREE};
use crate::progress::{Phase, Progress, Scope};
use crate::table::TableView;

mod spill;

/// Rows gathered from the in-memory batches per call: each call costs a fixed amount per
/// source batch (type and null checks), so it is amortized over more rows than a write takes.
const GATHER_ROWS: usize = 4 * READ_ROWS_PER_WRITE;

/// Seed of the reservoirs: the same input gives the same layout.
pub const SAMPLE_SEED: u64 = 0x00de_17a1_a70c;

/// Clusters one bin (a whole partition, or with `split` its share of a split scope's key
/// ranges: see [`KeySpace`]). Returns the rows written and whether the rows were spilled to
/// disk; `written` receives every file uploaded, also on failure.
#[expect(clippy::too_many_arguments, reason = "the stage's inputs, each used")]
pub(crate) fn run(
    table: &TableView,
    layout: &Layout<'_>,
    context: &RewriteContext,
    bin: &Bin,
    split: Option<(&KeySpace, KeyRange)>,
    config: &(dyn Fn(BTreeMap<String, String>, usize) -> WriterConfig + Sync),
    progress: &dyn Progress,
    written: &mut Vec<WrittenFile>,
) -> Result<(u64, bool)> {
    let run = RangeRun {
        table,
        layout,
        context,
        bin,
        split,
        config,
        progress,
    };
    let scope = Scope::Bin(bin.id);
    // 1. Read and sample (or, in a split scope, key and keep this bin's rows); keep the rows
    // while they fit the budget.
    let ReadRows {
        sampler,
        split_buckets,
        batches,
        batch_leaves,
        arrow_bytes,
        in_memory,
        rows,
    } = run.read()?;
    if rows == 0 {
        files_done(table, bin, progress);
        return Ok((0, false));
    }

    let (target, writer_bytes) = writer_budget(config);

    // 2. and 3. Buckets and range boundaries: from the plan's key space, or from the sample.
    let sizes = RangeSizes::of(bin, target);
    let (buckets, boundaries, sample_keys) = match split {
        Some((space, _)) => (split_buckets, space.boundaries.clone(), Vec::new()),
        None => sampler.finish(layout, &sizes)?,
    };
    if run.cancelled() {
        return Err(Error::Cancelled);
    }

    // 4. Route rows to ranges: in memory, or into per-range spill files.
    let router = Router {
        layout,
        buckets: &buckets,
        boundaries: &boundaries,
    };
    let totals = RowTotals {
        rows,
        arrow_bytes,
        writer_bytes,
    };
    let (ranges, pieces) = if in_memory {
        let ranges = run.route_in_memory(batches, &batch_leaves, &router, &sample_keys, totals)?;
        (ranges, boundaries.len() + 1)
    } else {
        run.route_to_spill(&router, &sample_keys, totals)?
    };

    // 5. Sort and write each range.
    let tags = run.cube_tags();
    let parallel = if in_memory {
        usize::MAX
    } else {
        ranges_at_once(totals, pieces, context.memory_limit_bytes)
    };
    let results = run.write_ranges(ranges, &tags, &router, parallel, rows);
    let mut first_error = None;
    for (result, files) in results {
        written.extend(files);
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => {
            progress.phase_finished(scope, Phase::Write);
            files_done(table, bin, progress);
            Ok((rows, !in_memory))
        }
    }
}

/// What a range's writer holds besides its rows, counted against the budget out of core:
/// the part of its file not uploaded yet (of a file up to 1.25x the target) and a row
/// group's rows and encoded columns. Returns the target file size of `config`'s writers and
/// those held bytes, both in bytes.
fn writer_budget(
    config: &(dyn Fn(BTreeMap<String, String>, usize) -> WriterConfig + Sync),
) -> (u64, u64) {
    let writer_config = config(BTreeMap::new(), 0);
    let target = writer_config.target_file_bytes;
    let writer_bytes = super::upload::held_file_bytes(
        target.saturating_add(target / 4),
        writer_config.upload_part_bytes,
    )
    .saturating_add(4 * super::write::row_group_bytes(target));
    (target, writer_bytes)
}

/// How many ranges an out-of-core run writes at once, its rows (`totals`) spilled in `pieces`
/// pieces under a budget of `memory_limit_bytes`.
fn ranges_at_once(totals: RowTotals, pieces: usize, memory_limit_bytes: u64) -> usize {
    // Out of core, as many ranges at once as the budget holds (each counted as twice its
    // spilled piece's memory, the rows once plus keys, its writer's buffers, and the
    // windows of the smaller pieces it is gathered in: per thread one joined, one gathered
    // and one gathered before, being written), at least one.
    let piece_bytes = (totals.arrow_bytes / pieces.max(1) as u64).max(1);
    let gathered = PIECE_BYTES
        .min(memory_limit_bytes / PIECES_PER_BUDGET)
        .min(piece_bytes)
        .saturating_mul(3 * rayon::current_num_threads().max(1) as u64);
    usize::try_from(
        memory_limit_bytes
            / piece_bytes
                .saturating_mul(2)
                .saturating_add(totals.writer_bytes)
                .saturating_add(gathered),
    )
    .unwrap_or(usize::MAX)
    .max(1)
}

/// The inputs a clustering run of one bin ([`run`]) shares between its steps.
struct RangeRun<'a> {
    table: &'a TableView,
    layout: &'a Layout<'a>,
    context: &'a RewriteContext,
    bin: &'a Bin,
    /// In a split scope, the plan's key space and this bin's ranges of it.
    split: Option<(&'a KeySpace, KeyRange)>,
    /// A writer's configuration from its file tags and its range index.
    config: &'a (dyn Fn(BTreeMap<String, String>, usize) -> WriterConfig + Sync),
    progress: &'a dyn Progress,
}

/// What step 1 of a run read: the sample (or a split scope's buckets) and, while they fit the
/// budget, the rows themselves.
struct ReadRows {
    /// The sample of the rows read (empty in a split scope).
    sampler: Sampler,
    /// In a split scope, the key space's buckets for the columns as read; empty otherwise.
    split_buckets: Vec<ColumnBuckets>,
    /// The rows kept, in read order; empty once they passed half the budget.
    batches: Vec<RecordBatch>,
    /// With a cut tree, each kept batch's leaves (routed once, while sampling).
    batch_leaves: Vec<Option<Vec<u32>>>,
    /// Arrow memory of every row read, bytes.
    arrow_bytes: u64,
    /// Whether the rows are kept in memory (`false`: clustered out of core).
    in_memory: bool,
    /// Rows read (in a split scope, those of this bin's ranges).
    rows: u64,
}

/// The sizes an out-of-core run cuts its pieces and counts its memory by.
#[derive(Clone, Copy)]
struct RowTotals {
    /// Rows read.
    rows: u64,
    /// Arrow memory of the rows read, bytes.
    arrow_bytes: u64,
    /// What a range's writer holds besides its rows, bytes ([`writer_budget`]).
    writer_bytes: u64,
}

impl RangeRun<'_> {
    /// Whether the run was cancelled.
    fn cancelled(&self) -> bool {
        self.context.cancel.load(Ordering::Relaxed)
    }

    /// The progress scope of the run: its bin.
    fn scope(&self) -> Scope {
        Scope::Bin(self.bin.id)
    }

    /// Step 1: reads the bin's files in order and samples their rows (in a split scope, keys
    /// them and keeps the rows of this bin's ranges), keeping the rows while their Arrow
    /// memory stays within half the budget. Reports the read phase.
    ///
    /// # Errors
    /// Read errors of the files ([`Error::DataFile`]); [`Error::Arrow`] for a column whose
    /// values cannot be keyed; [`Error::Internal`] for a key space whose columns are not the
    /// clustering's; [`Error::Cancelled`].
    fn read(&self) -> Result<ReadRows> {
        let scope = self.scope();
        let (layout, split, context) = (self.layout, self.split, self.context);
        self.progress
            .phase_started(scope, Phase::Read, self.bin.input_bytes);
        let mut sampler = Sampler::default();
        let mut split_buckets: Vec<ColumnBuckets> = Vec::new();
        let mut batches: Vec<RecordBatch> = Vec::new();
        // With a cut tree, each kept batch's leaves (routed once, while sampling).
        let mut batch_leaves: Vec<Option<Vec<u32>>> = Vec::new();
        let mut arrow_bytes = 0u64;
        // A bin whose Parquet bytes alone pass half the budget decodes to more than that
        // (Arrow is nearly always the larger): it is clustered out of core from the start,
        // without buffering half the budget of rows first.
        let mut in_memory = self.bin.input_bytes.saturating_mul(2) <= context.memory_limit_bytes;
        let mut rows = 0u64;
        let advance_read = |bytes: u64| self.progress.phase_advanced(scope, Phase::Read, bytes);
        for_each_file_in_order(
            self.table,
            self.bin,
            context,
            &advance_read,
            &mut |file_batches| {
                for batch in file_batches {
                    if self.cancelled() {
                        return Err(Error::Cancelled);
                    }
                    let (batch, leaves) = match split {
                        None => {
                            let leaves = sampler.add(&batch, layout, Some(&context.clock))?;
                            (batch, leaves)
                        }
                        Some((space, range)) => {
                            if split_buckets.is_empty() {
                                split_buckets = buckets_of(space, &layout.curve_values(&batch)?)?;
                            }
                            (
                                keep_range(&batch, layout, &split_buckets, space, range)?,
                                None,
                            )
                        }
                    };
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    rows += batch.num_rows() as u64;
                    arrow_bytes += batch.get_array_memory_size() as u64;
                    if in_memory {
                        // Gathering and encoding the ranges need room too: keep half the
                        // budget.
                        if arrow_bytes.saturating_mul(2) > context.memory_limit_bytes {
                            in_memory = false;
                            batches = Vec::new();
                            batch_leaves = Vec::new();
                        } else {
                            batches.push(batch);
                            batch_leaves.push(leaves);
                        }
                    }
                }
                Ok(())
            },
        )?;
        self.progress.phase_finished(scope, Phase::Read);
        Ok(ReadRows {
            sampler,
            split_buckets,
            batches,
            batch_leaves,
            arrow_bytes,
            in_memory,
            rows,
        })
    }

    /// Step 4 in memory: keys the rows of `batches` (each batch's leaves in `batch_leaves`)
    /// and reorders each batch so that the rows of each piece are together, in row order:
    /// the ranges of `router` cut into pieces of about [`PIECE_BYTES`] of Arrow memory (at
    /// most 1/[`PIECES_PER_BUDGET`] of the budget, so the pieces gathered at once, one per
    /// thread, stay a small share of it; by
    /// `sample_keys`, the sorted sample; `totals` gives the rows read and their Arrow bytes).
    /// Sorting and gathering a piece then touch only its rows, in cache-sized pieces, instead
    /// of the whole bin's memory at random (the gather was a third of a clustering run's CPU,
    /// most of it waiting on memory). Returns one [`RangeRows::Pieces`] per range, in range
    /// order.
    ///
    /// # Errors
    /// [`Error::Arrow`] for a column whose values cannot be keyed or reordered;
    /// [`Error::Cancelled`].
    fn route_in_memory(
        &self,
        batches: Vec<RecordBatch>,
        batch_leaves: &[Option<Vec<u32>>],
        router: &Router<'_>,
        sample_keys: &[u64],
        totals: RowTotals,
    ) -> Result<Vec<RangeRows>> {
        let (buckets, boundaries) = (router.buckets, router.boundaries);
        let piece_rows = PIECE_BYTES
            .min(self.context.memory_limit_bytes / PIECES_PER_BUDGET)
            .saturating_mul(totals.rows)
            .checked_div(totals.arrow_bytes)
            .unwrap_or(u64::MAX)
            .max(GATHER_ROWS as u64);
        // In a split scope the rows read are those of this bin's ranges only.
        let all_rows = self.split.map_or(totals.rows, |(_, mine)| {
            totals.rows.saturating_mul(boundaries.len() as u64 + 1)
                / (mine.end - mine.first).max(1) as u64
        });
        let cuts = piece_boundaries(boundaries, sample_keys, all_rows, piece_rows);
        let num_pieces = cuts.len() + 1;
        // A piece is joined before it is gathered up to this many bytes: the Arrow bytes of
        // JOINED_PIECE_FACTOR pieces of average rows.
        let joined_bytes = u64::try_from(
            u128::from(piece_rows)
                * u128::from(JOINED_PIECE_FACTOR)
                * u128::from(totals.arrow_bytes)
                / u128::from(totals.rows.max(1)),
        )
        .unwrap_or(u64::MAX);
        // Each batch is keyed and reordered on its own (in parallel); a batch replaces the one
        // it was reordered from, so the rows are held once.
        let reordered = batches
            .into_par_iter()
            .zip(batch_leaves)
            .map(|(batch, leaves)| {
                if self.cancelled() {
                    return Err(Error::Cancelled);
                }
                self.context.clock.time(Stage::Keys, || {
                    let keys = self.layout.row_keys(&batch, buckets, leaves.as_deref())?;
                    PieceBatch::of(batch, keys, &cuts)
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if self.cancelled() {
            return Err(Error::Cancelled);
        }
        let shared = std::sync::Arc::new(reordered);
        // The pieces of each range: pieces are cut inside ranges, so a range's pieces are
        // consecutive.
        let mut first_piece = Vec::with_capacity(boundaries.len() + 2);
        first_piece.push(0);
        for &bound in boundaries {
            first_piece.push(cuts.partition_point(|c| *c < bound) + 1);
        }
        first_piece.push(num_pieces);
        Ok(first_piece
            .windows(2)
            .map(|w| RangeRows::Pieces(shared.clone(), w[0]..w[1], joined_bytes))
            .collect())
    }

    /// Step 4 out of core: reads the bin's files again and appends each row to the spill file
    /// of its piece, the ranges of `router` cut into pieces of at most a quarter of the
    /// budget of rows (by `sample_keys`, the sorted sample; `totals` gives the rows read and
    /// their Arrow bytes). Reports the route phase. Returns one [`RangeRows::Spilled`] per
    /// range, in range order, and the number of pieces.
    ///
    /// # Errors
    /// Read errors of the files ([`Error::DataFile`]); spill file errors; [`Error::Arrow`]
    /// for a column whose values cannot be keyed; [`Error::Cancelled`].
    fn route_to_spill(
        &self,
        router: &Router<'_>,
        sample_keys: &[u64],
        totals: RowTotals,
    ) -> Result<(Vec<RangeRows>, usize)> {
        let (context, split, scope) = (self.context, self.split, self.scope());
        let (buckets, boundaries) = (router.buckets, router.boundaries);
        let RowTotals {
            rows,
            arrow_bytes,
            writer_bytes,
        } = totals;
        // Each range is cut into pieces of at most a quarter of the budget of rows (by the
        // sample), spilled apart and sorted one at a time: a range larger than the budget
        // (one output file of rows, at large targets) is never held whole.
        let piece_rows = ((context.memory_limit_bytes.saturating_sub(writer_bytes))
            .max(context.memory_limit_bytes / 16)
            / 4)
        .saturating_mul(rows)
        .checked_div(arrow_bytes)
        .unwrap_or(u64::MAX)
        .max(1);
        // In a split scope the rows read are those of this bin's ranges only.
        let all_rows = split.map_or(rows, |(_, mine)| {
            rows.saturating_mul(boundaries.len() as u64 + 1) / (mine.end - mine.first).max(1) as u64
        });
        let cuts = piece_boundaries(boundaries, sample_keys, all_rows, piece_rows);
        let piece_range: Vec<usize> = std::iter::once(0)
            .chain(cuts.iter().copied())
            .map(|lower| boundaries.partition_point(|b| *b <= lower))
            .collect();
        let pieces = piece_range.len();
        let router = Router {
            layout: self.layout,
            buckets,
            boundaries: &cuts,
        };
        let spill = spill::SpillFiles::create(context.spill_directory.as_deref(), cuts.len() + 1)?;
        self.progress
            .phase_started(scope, Phase::Route, self.bin.input_bytes);
        let advance_route = |bytes: u64| self.progress.phase_advanced(scope, Phase::Route, bytes);
        for_each_file_in_order(
            self.table,
            self.bin,
            context,
            &advance_route,
            &mut |file_batches| {
                // Route in parallel, append in file order: the spill files get the rows in
                // the order an in-memory run routes them.
                let routed = file_batches
                    .par_iter()
                    .map(|batch| {
                        if self.cancelled() {
                            return Err(Error::Cancelled);
                        }
                        self.context.clock.time(Stage::Keys, || router.route(batch))
                    })
                    .collect::<Result<Vec<_>>>()?;
                for (piece, part) in routed.into_iter().flatten() {
                    // In a split scope, another bin writes the other ranges.
                    if split.is_none_or(|(_, mine)| mine.contains(piece_range[piece])) {
                        spill.append(piece, &part)?;
                    }
                }
                Ok(())
            },
        )?;
        let files = spill.finish(&|batch| router.route(batch))?;
        self.progress.phase_finished(scope, Phase::Route);
        let mut ranges: Vec<Vec<spill::SpillFile>> =
            (0..=boundaries.len()).map(|_| Vec::new()).collect();
        for (piece, file) in files.into_iter().enumerate() {
            if let Some(file) = file {
                ranges[piece_range[piece]].push(file);
            }
        }
        Ok((ranges.into_iter().map(RangeRows::Spilled).collect(), pieces))
    }

    /// The tags of every file the run writes: its cube (a new id, or in a split scope the
    /// plan's: a split scope is one cube), the clustering columns and curve, and the cut tree.
    fn cube_tags(&self) -> BTreeMap<String, String> {
        let clustering = self.layout.clustering;
        // A split scope is one cube: every bin tags its files with the plan's cube id.
        let cube = self.split.map_or_else(
            || uuid::Uuid::new_v4().to_string(),
            |(space, _)| space.cube_id.clone(),
        );
        let mut tags = BTreeMap::from([
            (TAG_CUBE_ID.to_string(), cube),
            (TAG_CUBE_COLUMNS.to_string(), clustering.columns_json()),
            (
                TAG_CUBE_CURVE.to_string(),
                clustering.layout_name().to_string(),
            ),
        ]);
        if let Some(tree) = self.layout.tree {
            tags.insert(TAG_CUT_TREE.to_string(), tree.tree().id.clone());
        }
        tags
    }

    /// Step 5: sorts and writes `ranges` (the ranges of `router`, in range order), in waves of
    /// `parallel` ranges written in parallel, each file tagged with `tags`; `rows` is the
    /// rows to write, for the write phase it reports. Returns per range its result and the
    /// files it uploaded, in range order; every range is written whatever the others' results.
    fn write_ranges(
        &self,
        ranges: Vec<RangeRows>,
        tags: &BTreeMap<String, String>,
        router: &Router<'_>,
        parallel: usize,
        rows: u64,
    ) -> Vec<(Result<()>, Vec<WrittenFile>)> {
        let scope = self.scope();
        self.progress.phase_started(scope, Phase::Write, rows);
        let advance_write = |rows: usize| {
            self.progress
                .phase_advanced(scope, Phase::Write, rows as u64)
        };
        let mut results: Vec<(Result<()>, Vec<WrittenFile>)> = Vec::new();
        let mut ranges = ranges.into_iter().enumerate().peekable();
        while ranges.peek().is_some() {
            let wave: Vec<(usize, RangeRows)> = ranges.by_ref().take(parallel).collect();
            results.extend(
                wave.into_par_iter()
                    .map(|(index, range)| {
                        self.write_range(index, range, tags, router, &advance_write)
                    })
                    .collect::<Vec<_>>(),
            );
        }
        results
    }

    /// Sorts and writes range `index` (its rows `range`) to a rolling writer of its own, its
    /// files tagged with `tags` and the range's leaf (the ranges' cuts are `router`'s
    /// boundaries); `advance` receives the rows written. Returns the result and the files
    /// uploaded, also on failure.
    fn write_range(
        &self,
        index: usize,
        range: RangeRows,
        tags: &BTreeMap<String, String>,
        router: &Router<'_>,
        advance: &(dyn Fn(usize) + Sync),
    ) -> (Result<()>, Vec<WrittenFile>) {
        let (layout, boundaries) = (self.layout, router.boundaries);
        let expected_rows = match &range {
            RangeRows::Pieces(batches, pieces, _) => batches
                .iter()
                .map(|b| u64::from(b.starts[pieces.end] - b.starts[pieces.start]))
                .sum(),
            RangeRows::Spilled(files) => files.iter().map(|f| f.rows).sum(),
        };
        let mut range_tags = tags.clone();
        // A range lies inside one leaf, or packs neighbouring small leaves: the leaf of its
        // lowest key.
        if let Some(leaf) = layout.leaf_of(if index == 0 { 0 } else { boundaries[index - 1] }) {
            range_tags.insert(TAG_CUT_LEAF.to_string(), leaf.to_string());
        }
        let mut range_config = (self.config)(range_tags, index);
        // A cut tree's range is one file ([`crate::plan::leaf_shares`]: up to about 1.5x the
        // target): its writer cuts only past twice the target.
        if layout.tree.is_some() {
            range_config.target_file_bytes =
                range_config.target_file_bytes.saturating_mul(5).div_ceil(3);
        }
        let mut writer = RollingWriter::new(WriterConfig {
            expected_rows: Some(expected_rows),
            ..range_config
        });
        let mut out = RangeOutput {
            writer: &mut writer,
            cancel: &self.context.cancel,
            clock: &self.context.clock,
            advance,
            pending: Vec::new(),
            pending_rows: 0,
        };
        let piece_bytes = PIECE_BYTES.min(self.context.memory_limit_bytes / PIECES_PER_BUDGET);
        let result = match range {
            RangeRows::Pieces(batches, pieces, joined_bytes) => {
                write_pieces(&mut out, &batches, pieces, layout.clustering, joined_bytes)
            }
            RangeRows::Spilled(files) => files.into_iter().try_for_each(|file| {
                file.read()
                    .and_then(|parts| write_piece(&mut out, parts, router, piece_bytes))
            }),
        }
        .and_then(|()| out.finish());
        (result, writer.written().to_vec())
    }
}

/// Steps 1 to 5 without writing, for `sweep --estimate`: the rows of `batches` (a bin's
/// files in order, as [`run`] reads them in memory) in the order a clustering run writes
/// them, cut into its ranges as `sizes` says. Returns per range its rows as (batch, row) in
/// write order. The same sample, buckets, leaves, boundaries, stable sort and tie-break as
/// [`run`], so each range holds the rows the real run's range holds.
///
/// # Errors
/// [`Error::Arrow`] for a column whose values cannot be keyed; [`Error::Cancelled`].
pub(crate) fn ordered_ranges(
    batches: &[RecordBatch],
    layout: &Layout<'_>,
    sizes: &RangeSizes,
    cancel: &AtomicBool,
) -> Result<Vec<Vec<(u32, u32)>>> {
    let mut sampler = Sampler::default();
    let mut leaves: Vec<Option<Vec<u32>>> = Vec::with_capacity(batches.len());
    for batch in batches {
        leaves.push(sampler.add(batch, layout, None)?);
    }
    if sampler.is_empty() {
        return Ok(Vec::new());
    }
    let (buckets, boundaries, _) = sampler.finish(layout, sizes)?;
    let keys = batches
        .par_iter()
        .zip(&leaves)
        .map(|(batch, leaves)| layout.row_keys(batch, &buckets, leaves.as_deref()))
        .collect::<Result<Vec<_>>>()?;
    let mut ranges: Vec<Vec<(u64, u32, u32)>> = vec![Vec::new(); boundaries.len() + 1];
    for (b, keys) in keys.iter().enumerate() {
        let b = u32::try_from(b).unwrap_or(u32::MAX);
        for (row, &key) in keys.iter().enumerate() {
            let range = boundaries.partition_point(|cut| *cut <= key);
            ranges[range].push((key, b, u32::try_from(row).unwrap_or(u32::MAX)));
        }
    }
    drop(keys);
    let ties = TieBreak::of_batches(batches, layout.clustering)?;
    ranges
        .into_iter()
        .map(|mut rows| {
            rows.par_sort_by_key(|r| r.0);
            ties.order_runs(
                &mut rows,
                |r| r.0,
                |r| ties.offsets[r.1 as usize] + r.2 as usize,
                cancel,
            )?;
            Ok(rows.into_iter().map(|(_, b, r)| (b, r)).collect())
        })
        .collect()
}

/// How a bin's output is cut into ranges: at the shares `cuts` of its rows (a curve, see
/// [`Bin::range_cuts`]), or, under a cut tree, each leaf's share of `expected_output_bytes`
/// cut into files of `target_file_bytes` ([`crate::plan::output_files`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RangeSizes {
    /// Positions in `(0, 1)` of the rows, ascending, where a curve's ranges are cut.
    pub cuts: Vec<f64>,
    /// Expected output bytes of the bin.
    pub expected_output_bytes: u64,
    /// The target file size, bytes.
    pub target_file_bytes: u64,
}

impl RangeSizes {
    /// The sizes of `bin`'s ranges at the target `target_file_bytes`.
    pub(crate) fn of(bin: &Bin, target_file_bytes: u64) -> Self {
        Self {
            cuts: bin.range_cuts(target_file_bytes),
            expected_output_bytes: bin.expected_output_bytes,
            target_file_bytes,
        }
    }

    /// `num_ranges` ranges of equal rows (a work order's split scope).
    pub(crate) fn equal(num_ranges: usize, expected_output_bytes: u64, target: u64) -> Self {
        Self {
            cuts: equal_cuts(num_ranges),
            expected_output_bytes,
            target_file_bytes: target,
        }
    }
}

/// The seeded sample a clustering run keys its rows by: one reservoir per clustering column
/// and, with a cut tree, one of the rows' leaves. Equal seeds make them pick the same rows,
/// so together they are a sample of whole rows.
#[derive(Default)]
struct Sampler {
    reservoirs: Vec<Reservoir>,
    leaves: Option<Reservoir>,
    rows: u64,
}

impl Sampler {
    /// Offers the rows of `batch`; returns their leaves when the layout has a cut tree.
    fn add(
        &mut self,
        batch: &RecordBatch,
        layout: &Layout<'_>,
        clock: Option<&Clock>,
    ) -> Result<Option<Vec<u32>>> {
        let time = |work: &mut dyn FnMut() -> Result<()>| match clock {
            Some(clock) => clock.time(Stage::Keys, work),
            None => work(),
        };
        let columns = layout.curve_values(batch)?;
        if self.reservoirs.is_empty() {
            self.reservoirs = columns
                .iter()
                .map(|c| Reservoir::new(c.data_type(), DEFAULT_SAMPLE_ROWS, SAMPLE_SEED))
                .collect::<Result<_>>()?;
            if layout.tree.is_some() {
                self.leaves = Some(Reservoir::new(
                    &deltalake::arrow::datatypes::DataType::UInt32,
                    DEFAULT_SAMPLE_ROWS,
                    SAMPLE_SEED,
                )?);
            }
        }
        let leaves = layout.leaves(batch)?;
        // One column per thread: the reservoirs are independent.
        let (curve, leaf) = rayon::join(
            || {
                self.reservoirs
                    .par_iter_mut()
                    .zip(columns.par_iter())
                    .try_for_each(|(reservoir, column)| time(&mut || reservoir.add(column)))
            },
            || match (&mut self.leaves, &leaves) {
                (Some(reservoir), Some(leaves)) => {
                    let array: ArrayRef = std::sync::Arc::new(UInt32Array::from(leaves.clone()));
                    time(&mut || reservoir.add(&array))
                }
                _ => Ok(()),
            },
        );
        curve?;
        leaf?;
        self.rows += batch.num_rows() as u64;
        Ok(leaves)
    }

    /// Whether no row was offered.
    fn is_empty(&self) -> bool {
        self.reservoirs.is_empty()
    }

    /// Steps 2 and 3: each column's rank buckets from its reservoir, the sample's keys
    /// (ascending), and the cut points of the ranges ([`Layout::boundaries`]).
    fn finish(
        self,
        layout: &Layout<'_>,
        sizes: &RangeSizes,
    ) -> Result<(Vec<ColumnBuckets>, Vec<u64>, Vec<u64>)> {
        let bits = layout.bits();
        // Columns, then sampled rows, in parallel: this step runs between reading and
        // routing, with nothing else to keep the cores busy.
        let (buckets, samples): (Vec<ColumnBuckets>, Vec<_>) = self
            .reservoirs
            .into_par_iter()
            .map(|r| r.finish(bits))
            .unzip();
        let leaves: Option<Vec<u32>> = self.leaves.map(Reservoir::into_u32).transpose()?;
        let sample_rows = samples.first().map_or(0, Vec::len);
        let mut sample_keys: Vec<u64> = (0..sample_rows)
            .into_par_iter()
            .map_init(
                || vec![0u32; buckets.len()],
                |coords, i| {
                    for ((c, b), s) in coords.iter_mut().zip(&buckets).zip(&samples) {
                        *c = b.bucket_of(s[i].as_ref());
                    }
                    let leaf = leaves.as_ref().and_then(|l| l.get(i)).copied().unwrap_or(0);
                    layout.key(coords, leaf)
                },
            )
            .collect();
        sample_keys.par_sort_unstable();
        let boundaries = layout.boundaries(&sample_keys, sizes);
        Ok((buckets, boundaries, sample_keys))
    }
}

/// The buckets of a key space, for columns of the types of `columns` (as read).
fn buckets_of(space: &KeySpace, columns: &[ArrayRef]) -> Result<Vec<ColumnBuckets>> {
    if space.columns.len() != columns.len() {
        return Err(Error::Internal(format!(
            "the key space of scope {} has {} columns, the clustering {}",
            space.scope,
            space.columns.len(),
            columns.len()
        )));
    }
    columns
        .iter()
        .zip(&space.columns)
        .map(|(column, cuts)| ColumnBuckets::from_cuts(column.data_type(), cuts))
        .collect()
}

/// The rows of `batch` whose key falls in `range` of `space`, in row order.
fn keep_range(
    batch: &RecordBatch,
    layout: &Layout<'_>,
    buckets: &[ColumnBuckets],
    space: &KeySpace,
    range: KeyRange,
) -> Result<RecordBatch> {
    let keys = layout.row_keys(batch, buckets, None)?;
    let keep: BooleanArray = keys
        .iter()
        .map(|key| Some(range.contains(space.boundaries.partition_point(|cut| cut <= key))))
        .collect();
    filter_record_batch(batch, &keep).map_err(|e| Error::arrow("keeping a bin's key ranges", e))
}

/// Samples a clustering scope for a work order that splits it over several bins: reads the
/// files `sample` (indices into `table.files`, a subset of the scope's) through `reader`,
/// draws the same seeded sample a one-bin run draws, and returns each column's bucket cuts,
/// the cut points of the ranges `sizes` asks for, and the rows sampled from.
///
/// # Errors
/// Read errors of the files ([`Error::DataFile`]); [`Error::Arrow`] for a column whose values
/// cannot be keyed.
pub(crate) fn sample_key_space(
    table: &TableView,
    layout: &Layout<'_>,
    reader: &crate::table::read::Reader,
    sample: &[usize],
    sizes: &RangeSizes,
) -> Result<(Vec<crate::curve::keys::BucketCuts>, Vec<u64>, u64)> {
    let mut sampler = Sampler::default();
    let chunk = rayon::current_num_threads().max(1);
    for indices in sample.chunks(chunk) {
        let read: Vec<Result<Vec<RecordBatch>>> = indices
            .par_iter()
            .map(|&i| reader.read(&table.files[i]))
            .collect();
        for batches in read {
            for batch in batches? {
                sampler.add(&batch, layout, None)?;
            }
        }
    }
    let rows = sampler.rows;
    if rows == 0 {
        return Ok((Vec::new(), Vec::new(), 0));
    }
    let (buckets, boundaries, _) = sampler.finish(layout, sizes)?;
    Ok((
        buckets.iter().map(ColumnBuckets::to_cuts).collect(),
        boundaries,
        rows,
    ))
}

/// Reports every input file of a finished bin as done.
fn files_done(table: &TableView, bin: &Bin, progress: &dyn Progress) {
    for &index in &bin.files {
        progress.file_done(table.files[index].size_bytes);
    }
}

/// Where a range's sorted rows go: its writer, the cancel flag checked between written
/// chunks, and the progress of the write phase (rows).
struct RangeOutput<'a> {
    writer: &'a mut RollingWriter,
    cancel: &'a AtomicBool,
    clock: &'a Clock,
    advance: &'a (dyn Fn(usize) + Sync),
    /// Sorted rows not yet written, fewer than a write's worth.
    pending: Vec<RecordBatch>,
    pending_rows: usize,
}

impl RangeOutput<'_> {
    fn check_cancel(&self) -> Result<()> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        Ok(())
    }

    /// Writes one chunk of sorted rows, after checking the cancel flag.
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.check_cancel()?;
        self.writer.write(batch)?;
        (self.advance)(batch.num_rows());
        Ok(())
    }

    /// Takes the range's next sorted rows; writes them in chunks of [`READ_ROWS_PER_WRITE`]
    /// rows counted from the range's first row, whatever the batches they come in (so a
    /// range written piece by piece gives the writer the same chunks as one written whole).
    fn push(&mut self, mut batch: RecordBatch) -> Result<()> {
        loop {
            let need = READ_ROWS_PER_WRITE - self.pending_rows;
            if batch.num_rows() < need {
                if batch.num_rows() > 0 {
                    self.pending_rows += batch.num_rows();
                    self.pending.push(batch);
                }
                return Ok(());
            }
            let head = batch.slice(0, need);
            let rest = batch.slice(need, batch.num_rows() - need);
            let chunk = self.take_pending(head)?;
            self.write(&chunk)?;
            batch = rest;
        }
    }

    /// The pending rows followed by `last`, as one batch; empties the pending rows.
    fn take_pending(&mut self, last: RecordBatch) -> Result<RecordBatch> {
        self.pending_rows = 0;
        if self.pending.is_empty() {
            return Ok(last);
        }
        self.pending.push(last);
        let schema = self.pending[0].schema();
        let joined = deltalake::arrow::compute::concat_batches(&schema, &self.pending)
            .map_err(|e| Error::arrow("gathering a range", e))?;
        self.pending.clear();
        Ok(joined)
    }

    /// Writes the pending rows and closes the range's last file.
    fn finish(&mut self) -> Result<()> {
        if let Some(last) = self.pending.pop() {
            let chunk = self.take_pending(last)?;
            self.write(&chunk)?;
        }
        self.writer.finish()
    }
}

/// The rows of one range: in memory, or in spill files (one per piece, in key order).
enum RangeRows {
    /// Rows of in-memory batches, each reordered by piece ([`PieceBatch`]), the range's
    /// pieces (consecutive, in key order), and the Arrow bytes past which a piece is gathered
    /// from its slices instead of joined first ([`JOINED_PIECE_FACTOR`] pieces' bytes).
    Pieces(std::sync::Arc<Vec<PieceBatch>>, std::ops::Range<usize>, u64),
    /// Spill files of the range's pieces, in key order (keys are computed again when one is
    /// read).
    Spilled(Vec<spill::SpillFile>),
}

/// Routes rows to ranges by curve key.
struct Router<'a> {
    layout: &'a Layout<'a>,
    buckets: &'a [ColumnBuckets],
    boundaries: &'a [u64],
}

impl Router<'_> {
    /// The rows of `batch` grouped by range, in row order within each range.
    fn route(&self, batch: &RecordBatch) -> Result<Vec<(usize, RecordBatch)>> {
        let keys = self.layout.row_keys(batch, self.buckets, None)?;
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); self.boundaries.len() + 1];
        for (row, key) in keys.iter().enumerate() {
            let range = self.boundaries.partition_point(|b| b <= key);
            members[range].push(u32::try_from(row).unwrap_or(u32::MAX));
        }
        let mut out = Vec::new();
        for (range, rows) in members.into_iter().enumerate() {
            if rows.is_empty() {
                continue;
            }
            let part = take_record_batch(batch, &UInt32Array::from(rows))
                .map_err(|e| Error::arrow("routing rows to ranges", e))?;
            out.push((range, part));
        }
        Ok(out)
    }
}

/// Writes one spilled piece of a range: its rows sorted by key (stable: equal keys keep
/// their spill order, which is routing order), as the in-memory path writes a range: the
/// piece cut into pieces of about `piece_bytes` of Arrow memory at quantiles of its own keys,
/// each part regrouped by them ([`PieceBatch`]), then each sorted and gathered on its own
/// ([`write_pieces`]), so the rows are held once and each gather reads within a few MiB.
/// Pieces are key intervals, so a range's pieces written in order are its rows in sorted
/// order.
fn write_piece(
    out: &mut RangeOutput<'_>,
    parts: Vec<RecordBatch>,
    router: &Router<'_>,
    piece_bytes: u64,
) -> Result<()> {
    out.check_cancel()?;
    if parts.is_empty() {
        return Ok(());
    }
    let keys = parts
        .par_iter()
        .map(|part| {
            out.clock.time(Stage::Keys, || {
                router.layout.row_keys(part, router.buckets, None)
            })
        })
        .collect::<Result<Vec<Vec<u64>>>>()?;
    out.check_cancel()?;
    // The piece cut again into pieces of about `piece_bytes`, at quantiles of its own keys,
    // each part regrouped by them (as in memory, `PieceBatch`): each is then sorted and
    // gathered within its own few MiB, where gathering the whole spilled piece at once read
    // at random over all of it (most of an out-of-core run's gather time).
    let rows: usize = parts.iter().map(RecordBatch::num_rows).sum();
    let bytes: u64 = parts.iter().map(slice_bytes).sum();
    let piece_rows = piece_bytes
        .saturating_mul(rows as u64)
        .checked_div(bytes)
        .unwrap_or(u64::MAX)
        .max(GATHER_ROWS as u64);
    let num_pieces = usize::try_from((rows as u64).div_ceil(piece_rows))
        .unwrap_or(usize::MAX)
        .max(1);
    let cuts = out.clock.time(Stage::Sort, || {
        let mut sorted: Vec<u64> = keys.iter().flatten().copied().collect();
        sorted.par_sort_unstable();
        range_boundaries(&sorted, num_pieces)
    });
    let joined_bytes = u64::try_from(
        u128::from(piece_rows) * u128::from(JOINED_PIECE_FACTOR) * u128::from(bytes)
            / (rows.max(1) as u128),
    )
    .unwrap_or(u64::MAX);
    let batches = parts
        .into_par_iter()
        .zip(keys)
        .map(|(part, keys)| {
            out.clock
                .time(Stage::Keys, || PieceBatch::of(part, keys, &cuts))
        })
        .collect::<Result<Vec<_>>>()?;
    write_pieces(
        out,
        &batches,
        0..cuts.len() + 1,
        router.layout.clustering,
        joined_bytes,
    )
}

/// Arrow memory of the rows of one piece of an in-memory range, bytes: a piece's rows are
/// sorted and gathered apart from the others', so the gather's random reads stay within
/// about this much memory (a column of it within a core's cache) instead of the whole bin's.
/// Measured on TPC-H lineitem (BENCHMARKS.md, "Clustering: the gather in pieces, and where
/// the time goes").
pub const PIECE_BYTES: u64 = 16 << 20;

/// A piece is at most this share of the memory budget (`--memory-limit`). A thread gathering
/// a piece holds its rows a second time (joined, then gathered in sorted order: up to
/// [`JOINED_PIECE_FACTOR`] pieces' bytes, past which a piece is gathered from its slices in
/// chunks), and the window gathered before is held while it is written: a few pieces a
/// thread, a small share of the budget on common machines.
pub const PIECES_PER_BUDGET: u64 = 256;

/// A piece of more Arrow bytes than this many pieces' (rows of one key, which no cut can
/// split, or rows much wider than the average) is gathered from its source slices in chunks
/// instead of joined into one batch first, so that it is not held twice whole (nor its
/// strings concatenated past the 2 GiB of 32-bit offsets).
pub const JOINED_PIECE_FACTOR: u64 = 4;

/// One in-memory batch with its rows grouped by piece: the rows of piece `p` are rows
/// `starts[p]..starts[p + 1]`, in the order they had in the batch read, with their curve
/// keys in `keys`.
pub(crate) struct PieceBatch {
    batch: RecordBatch,
    keys: Vec<u64>,
    /// Row offsets of the pieces, one more than there are pieces.
    starts: Vec<u32>,
}

impl PieceBatch {
    /// Groups the rows of `batch` (their curve keys `keys`) by piece, the pieces being cut at
    /// `cuts` (a row goes to piece `cuts.partition_point(|c| c <= key)`), stably: a counting
    /// sort of the row numbers and one `take` of the batch, whose rows are in a core's cache.
    fn of(batch: RecordBatch, keys: Vec<u64>, cuts: &[u64]) -> Result<Self> {
        let num_pieces = cuts.len() + 1;
        let piece_of: Vec<u32> = keys
            .iter()
            .map(|key| u32::try_from(cuts.partition_point(|c| c <= key)).unwrap_or(u32::MAX))
            .collect();
        let mut starts = vec![0u32; num_pieces + 1];
        for &p in &piece_of {
            starts[p as usize + 1] += 1;
        }
        for p in 0..num_pieces {
            starts[p + 1] += starts[p];
        }
        if piece_of.windows(2).all(|w| w[0] <= w[1]) {
            // Already grouped (one piece, or rows in key order): nothing to move.
            return Ok(Self {
                batch,
                keys,
                starts,
            });
        }
        let mut next = starts.clone();
        let mut order = vec![0u32; piece_of.len()];
        for (row, &p) in piece_of.iter().enumerate() {
            let at = &mut next[p as usize];
            order[*at as usize] = u32::try_from(row).unwrap_or(u32::MAX);
            *at += 1;
        }
        let keys = order.iter().map(|&r| keys[r as usize]).collect();
        let batch = take_record_batch(&batch, &UInt32Array::from(order))
            .map_err(|e| Error::arrow("grouping rows by piece", e))?;
        Ok(Self {
            batch,
            keys,
            starts,
        })
    }
}

/// Arrow bytes of the rows of `batch` (a slice of a larger batch): fixed-width columns by
/// their width, strings and binaries by their offsets and values, other columns by arrow's
/// count of the slice (`get_slice_memory_size`, which clones the column's data: too costly
/// for every column of every slice of every piece).
fn slice_bytes(batch: &RecordBatch) -> u64 {
    use deltalake::arrow::array::{Array, AsArray};
    use deltalake::arrow::datatypes::DataType;
    fn span<O: Copy + Into<i64>>(offsets: &[O]) -> u64 {
        match (offsets.first(), offsets.last()) {
            (Some(&first), Some(&last)) => u64::try_from(last.into() - first.into()).unwrap_or(0),
            _ => 0,
        }
    }
    batch
        .columns()
        .iter()
        .map(|column| {
            let rows = column.len() as u64;
            let nulls = column.nulls().map_or(0, |_| rows.div_ceil(8));
            let body = match column.data_type() {
                DataType::Utf8 => 4 * (rows + 1) + span(column.as_string::<i32>().value_offsets()),
                DataType::Binary => {
                    4 * (rows + 1) + span(column.as_binary::<i32>().value_offsets())
                }
                DataType::LargeUtf8 => {
                    8 * (rows + 1) + span(column.as_string::<i64>().value_offsets())
                }
                DataType::LargeBinary => {
                    8 * (rows + 1) + span(column.as_binary::<i64>().value_offsets())
                }
                other => match other.primitive_width() {
                    Some(width) => width as u64 * rows,
                    None => column
                        .to_data()
                        .get_slice_memory_size()
                        .unwrap_or_else(|_| column.get_array_memory_size())
                        as u64,
                },
            };
            body + nulls
        })
        .sum()
}

/// Writes the pieces `pieces` of an in-memory range (its rows in `batches`), in key order:
/// a window of pieces (one per thread) is sorted and gathered in parallel, each on its own
/// ([`sorted_piece`]; a piece of more than `joined_bytes` Arrow bytes from its slices),
/// then written in order while the next window is gathered. The rows handed to `out` are those
/// sorting the whole range would hand it (by key, then the clustering columns' values, then
/// routing order): pieces are key intervals, and a
/// piece's rows keep their routing order among equal keys.
fn write_pieces(
    out: &mut RangeOutput<'_>,
    batches: &[PieceBatch],
    pieces: std::ops::Range<usize>,
    clustering: &Clustering,
    joined_bytes: u64,
) -> Result<()> {
    let pieces: Vec<usize> = pieces.collect();
    let (cancel, clock) = (out.cancel, out.clock);
    let gather = |window: &[usize]| {
        window
            .par_iter()
            .map(|&piece| sorted_piece(batches, piece, clustering, joined_bytes, cancel, clock))
            .collect::<Result<Vec<_>>>()
    };
    // The next window is sorted and gathered while the last one is encoded and written, so
    // the cores a writer leaves idle (a row group's widest column encodes last) gather.
    let mut ready: Vec<Vec<RecordBatch>> = Vec::new();
    for window in pieces.chunks(rayon::current_num_threads().max(1)) {
        out.check_cancel()?;
        let written = std::mem::take(&mut ready);
        let (gathered, pushed) = rayon::join(
            || gather(window),
            || {
                written
                    .into_iter()
                    .flatten()
                    .try_for_each(|batch| out.push(batch))
            },
        );
        pushed?;
        ready = gathered?;
    }
    ready
        .into_iter()
        .flatten()
        .try_for_each(|batch| out.push(batch))
}

/// The rows of piece `piece` of `batches`, sorted by key, stably, runs of equal keys ordered
/// by the clustering columns' values ([`TieBreak`]), gathered in chunks of [`GATHER_ROWS`]:
/// from the piece joined into one batch, or, past `joined_bytes` Arrow bytes, from its
/// slices.
fn sorted_piece(
    batches: &[PieceBatch],
    piece: usize,
    clustering: &Clustering,
    joined_bytes: u64,
    cancel: &AtomicBool,
    clock: &Clock,
) -> Result<Vec<RecordBatch>> {
    let watch = Clock::stopwatch();
    let mut sources: Vec<RecordBatch> = Vec::new();
    let mut rows: Vec<(u64, u32, u32)> = Vec::new();
    for b in batches {
        let (start, end) = (b.starts[piece] as usize, b.starts[piece + 1] as usize);
        if start == end {
            continue;
        }
        let source = u32::try_from(sources.len()).unwrap_or(u32::MAX);
        sources.push(b.batch.slice(start, end - start));
        rows.extend(
            b.keys[start..end]
                .iter()
                .enumerate()
                .map(|(r, &key)| (key, source, u32::try_from(r).unwrap_or(u32::MAX))),
        );
    }
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Cancelled);
    }
    rows.sort_by_key(|r| r.0);
    let ties = TieBreak::of_batches(&sources, clustering)?;
    ties.order_runs(
        &mut rows,
        |r| r.0,
        |r| ties.offsets[r.1 as usize] + r.2 as usize,
        cancel,
    )?;
    let (wall, cpu) = watch.elapsed();
    clock.add(Stage::Sort, wall, cpu);
    clock.time(Stage::Gather, || {
        if sources.iter().map(slice_bytes).sum::<u64>() > joined_bytes {
            // A piece far past its size (rows of one heavy key cannot be cut): gathered
            // from its slices, so it is never held twice.
            let sources: Vec<&RecordBatch> = sources.iter().collect();
            return rows
                .chunks(GATHER_ROWS)
                .map(|chunk| interleave_chunk(&sources, chunk, cancel))
                .collect();
        }
        // The piece's rows in one batch (a sequential copy of the piece's bytes), then
        // gathered by position: `take` over one batch reads each value through one offset,
        // where `interleave` over the piece's hundreds of source slices pays per slice and
        // per value (half the gather's CPU on TPC-H lineitem, BENCHMARKS.md).
        let schema = sources[0].schema();
        let joined =
            concat_batches(&schema, &sources).map_err(|e| Error::arrow("gathering a range", e))?;
        drop(sources);
        rows.chunks(GATHER_ROWS)
            .map(|chunk| {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::Cancelled);
                }
                let indices = chunk
                    .iter()
                    .map(|&(_, b, r)| {
                        u32::try_from(ties.offsets[b as usize] + r as usize).map_err(|_| {
                            Error::Internal(format!(
                                "a joined piece of {} rows, past 32-bit row numbers",
                                joined.num_rows()
                            ))
                        })
                    })
                    .collect::<Result<UInt32Array>>()?;
                take_record_batch(&joined, &indices)
                    .map_err(|e| Error::arrow("gathering a range", e))
            })
            .collect()
    })
}

/// The rows `chunk` names (key, batch, row) of `sources`, in that order, in one batch
/// (`interleave` over the sources); [`Error::Cancelled`] once `cancel` is set.
fn interleave_chunk(
    sources: &[&RecordBatch],
    chunk: &[(u64, u32, u32)],
    cancel: &AtomicBool,
) -> Result<RecordBatch> {
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Cancelled);
    }
    let indices: Vec<(usize, usize)> = chunk
        .iter()
        .map(|&(_, b, r)| (b as usize, r as usize))
        .collect();
    interleave_record_batch(sources, &indices).map_err(|e| Error::arrow("gathering a range", e))
}

/// Cuts that split each range of `boundaries` into pieces expected to hold at most
/// `piece_rows` rows each: the range boundaries themselves plus cuts inside the ranges,
/// ascending and distinct. A range's expected rows are its share of `sample_keys` (the
/// sorted sample) times `total_rows`, and its inner cuts are the sample's
/// ([`range_boundaries`] over its keys); without a sample (a split scope's plan keeps none)
/// rows are taken as spread evenly over the ranges and the key interval is cut evenly.
#[must_use]
pub fn piece_boundaries(
    boundaries: &[u64],
    sample_keys: &[u64],
    total_rows: u64,
    piece_rows: u64,
) -> Vec<u64> {
    let ranges = boundaries.len() + 1;
    let mut cuts: Vec<u64> = Vec::with_capacity(ranges);
    for range in 0..ranges {
        let lower = if range == 0 { 0 } else { boundaries[range - 1] };
        let upper = boundaries.get(range).copied();
        let inner: Vec<u64> = if sample_keys.is_empty() {
            let rows = total_rows.div_ceil(ranges as u64);
            let pieces = rows.div_ceil(piece_rows.max(1)).max(1);
            let width = u128::from(upper.unwrap_or(u64::MAX)) - u128::from(lower);
            (1..pieces)
                .filter_map(|k| {
                    u64::try_from(u128::from(lower) + width * u128::from(k) / u128::from(pieces))
                        .ok()
                })
                .collect()
        } else {
            let first = sample_keys.partition_point(|k| *k < lower);
            let end = upper.map_or(sample_keys.len(), |u| {
                sample_keys.partition_point(|k| *k < u)
            });
            let keys = &sample_keys[first..end];
            let rows = u128::from(total_rows) * keys.len() as u128 / sample_keys.len() as u128;
            let pieces = rows.div_ceil(u128::from(piece_rows.max(1))).max(1);
            let pieces = usize::try_from(pieces)
                .unwrap_or(usize::MAX)
                .min(keys.len().max(1));
            range_boundaries(keys, pieces)
        };
        cuts.extend(
            inner
                .into_iter()
                .filter(|&cut| cut > lower && upper.is_none_or(|u| cut < u)),
        );
        if let Some(upper) = upper {
            cuts.push(upper);
        }
    }
    cuts.dedup();
    cuts
}

/// The clustering columns' values of a set of batches, concatenated (row `r` of batch `b` is
/// row `offsets[b] + r`), to order rows whose curve keys are equal.
pub(crate) struct TieBreak {
    columns: Vec<ArrayRef>,
    offsets: Vec<usize>,
}

impl TieBreak {
    fn of_batches(batches: &[RecordBatch], clustering: &Clustering) -> Result<Self> {
        let mut offsets = Vec::with_capacity(batches.len());
        if batches.is_empty() {
            return Ok(Self {
                columns: Vec::new(),
                offsets,
            });
        }
        let mut total = 0;
        for batch in batches {
            offsets.push(total);
            total += batch.num_rows();
        }
        let columns = clustering
            .leaves
            .par_iter()
            .map(|leaf| {
                let parts = batches
                    .iter()
                    .map(|b| leaf_values(b, &leaf.physical).map(|a| normalize(&a)))
                    .collect::<Result<Vec<_>>>()?;
                let refs: Vec<&dyn deltalake::arrow::array::Array> =
                    parts.iter().map(AsRef::as_ref).collect();
                concat(&refs).map_err(|e| Error::arrow("gathering clustering values", e))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { columns, offsets })
    }

    /// Sorts each run of equal keys in `items` (already sorted by `key`) by the clustering
    /// columns' values of the rows `index` names: nulls first, the order of
    /// [`crate::curve::keys`] (floats by total order after `-0.0` and NaN are normalized).
    /// Stable, so rows equal in every column keep their order. Stops with
    /// [`Error::Cancelled`] between runs once `cancel` is set.
    fn order_runs<T>(
        &self,
        items: &mut [T],
        key: impl Fn(&T) -> u64,
        index: impl Fn(&T) -> usize,
        cancel: &AtomicBool,
    ) -> Result<()> {
        if self.columns.is_empty() {
            return Ok(());
        }
        let sort_columns: Vec<SortColumn> = self
            .columns
            .iter()
            .map(|c| SortColumn {
                values: c.clone(),
                options: Some(SortOptions {
                    descending: false,
                    nulls_first: true,
                }),
            })
            .collect();
        let comparator = LexicographicalComparator::try_new(&sort_columns)
            .map_err(|e| Error::arrow("ordering rows of equal keys", e))?;
        let mut start = 0;
        while start < items.len() {
            let k = key(&items[start]);
            let mut end = start + 1;
            while end < items.len() && key(&items[end]) == k {
                end += 1;
            }
            if end - start > 1 {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::Cancelled);
                }
                items[start..end].sort_by(|a, b| comparator.compare(index(a), index(b)));
            }
            start = end;
        }
        Ok(())
    }
}

/// Share of a range's rows a boundary may move to land on a rounder key: 1/8 each way.
pub const BOUNDARY_SLACK_DIVISOR: usize = 8;

/// Cuts sorted sample keys into `num_ranges` ranges of about equal row counts.
///
/// Each cut starts at its quantile and moves, within [`BOUNDARY_SLACK_DIVISOR`] of a range's
/// rows either way, to the key with the most trailing zero bits. Such keys are corners of the
/// curve's cells, so the ranges between them are unions of whole cells, compact boxes, rather
/// than cells cut at arbitrary points (which straddle and double a file's span). Returns the
/// distinct cut keys, ascending; a row goes to range `boundaries.partition_point(|b| b <= key)`.
#[must_use]
pub fn range_boundaries(sorted_keys: &[u64], num_ranges: usize) -> Vec<u64> {
    let len = sorted_keys.len();
    if len == 0 || num_ranges <= 1 {
        return Vec::new();
    }
    let positions: Vec<usize> = (1..num_ranges).map(|k| k * len / num_ranges).collect();
    boundaries_at(
        sorted_keys,
        &positions,
        len / (num_ranges * BOUNDARY_SLACK_DIVISOR),
    )
}

/// The positions `k / num_ranges` for `k` in `1..num_ranges`: equal shares.
#[expect(clippy::cast_precision_loss, reason = "range counts far below 2^52")]
fn equal_cuts(num_ranges: usize) -> Vec<f64> {
    (1..num_ranges)
        .map(|k| k as f64 / num_ranges as f64)
        .collect()
}

/// Cuts sorted sample keys at the positions `cuts` (shares of the keys in `(0, 1)`,
/// ascending), each cut moved as in [`range_boundaries`] within [`BOUNDARY_SLACK_DIVISOR`] of
/// the smallest range's rows. At most one range per key; distinct cut keys, ascending.
#[must_use]
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "positions inside the sample, rounded"
)]
pub fn range_boundaries_at(sorted_keys: &[u64], cuts: &[f64]) -> Vec<u64> {
    let len = sorted_keys.len();
    let mut positions: Vec<usize> = cuts
        .iter()
        .filter(|at| at.is_finite() && **at > 0.0 && **at < 1.0)
        .map(|at| (at * len as f64).round() as usize)
        .filter(|&at| at > 0 && at < len)
        .collect();
    positions.dedup();
    if positions.is_empty() {
        return Vec::new();
    }
    let smallest = std::iter::once(0)
        .chain(positions.iter().copied())
        .chain(std::iter::once(len))
        .collect::<Vec<_>>()
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .min()
        .unwrap_or(len);
    boundaries_at(sorted_keys, &positions, smallest / BOUNDARY_SLACK_DIVISOR)
}

/// The cut keys at `positions` of `sorted_keys` (each in `1..len`), each moved within `slack`
/// keys either way to the roundest key ([`roundest`]); distinct, ascending.
fn boundaries_at(sorted_keys: &[u64], positions: &[usize], slack: usize) -> Vec<u64> {
    let len = sorted_keys.len();
    let mut boundaries: Vec<u64> = positions
        .iter()
        .map(|&at| {
            let lo = sorted_keys[at.saturating_sub(slack)];
            let hi = sorted_keys[(at + slack).min(len - 1)];
            roundest(lo, hi)
        })
        .collect();
    boundaries.dedup();
    boundaries
}

/// The key in `[lo, hi]` with the most trailing zero bits: `lo` when its bits up to the highest
/// bit where `lo` and `hi` differ are all zero, else `hi` with every bit below that one
/// cleared.
fn roundest(lo: u64, hi: u64) -> u64 {
    if lo >= hi {
        return hi;
    }
    let p = 63 - (lo ^ hi).leading_zeros();
    // `lo` itself may already be that round (its bits up to p all zero).
    if lo & (u64::MAX >> (63 - p)) == 0 {
        return lo;
    }
    (hi >> p) << p
}

/// Share of the memory budget that the files read at once may take, in their Parquet bytes:
/// a chunk of files is at most `memory_limit / READ_SHARE` of them (or one larger file), and
/// two chunks are held at once (the one being taken and the next, being read), each as its
/// fetched bytes and its decoded rows.
const READ_SHARE: u64 = 8;

/// The bin's files in the chunks [`for_each_file_in_order`] reads at once: at most `threads`
/// files and `chunk_bytes` of them (one file at least).
fn read_chunks<'a>(
    table: &TableView,
    files: &'a [usize],
    threads: usize,
    chunk_bytes: u64,
) -> Vec<&'a [usize]> {
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < files.len() {
        let mut end = start + 1;
        let mut bytes = table.files[files[start]].size_bytes;
        while end < files.len()
            && end - start < threads.max(1)
            && bytes.saturating_add(table.files[files[end]].size_bytes) <= chunk_bytes
        {
            bytes += table.files[files[end]].size_bytes;
            end += 1;
        }
        chunks.push(&files[start..end]);
        start = end;
    }
    chunks
}

/// Reads the bin's files in parallel, a chunk at a time (a pool's worth of files, fewer when
/// their bytes would take more than `memory_limit / READ_SHARE`: wide or large files under a
/// small `--memory-limit`), and hands each file's live rows to `each` in file order (so
/// sampling and routing see the same order as a sequential read, whatever the thread count).
/// `advance` receives each file's size once `each` has taken its rows.
fn for_each_file_in_order(
    table: &TableView,
    bin: &Bin,
    context: &RewriteContext,
    advance: &(dyn Fn(u64) + Sync),
    each: &mut (dyn FnMut(Vec<RecordBatch>) -> Result<()> + Send),
) -> Result<()> {
    let read = |indices: &[usize]| -> Vec<Result<Vec<RecordBatch>>> {
        indices
            .par_iter()
            .map(|&i| {
                context
                    .clock
                    .time(Stage::Read, || context.reader.read(&table.files[i]))
            })
            .collect()
    };
    let chunks = read_chunks(
        table,
        &bin.files,
        rayon::current_num_threads(),
        context.memory_limit_bytes / READ_SHARE,
    );
    let Some(first) = chunks.first() else {
        return Ok(());
    };
    // The next chunk is read while `each` takes the current one, unless either is a file
    // larger than the chunk budget alone (then one is held at a time).
    let chunk_bytes = context.memory_limit_bytes / READ_SHARE;
    let fits = |indices: &[usize]| {
        indices
            .iter()
            .map(|&i| table.files[i].size_bytes)
            .sum::<u64>()
            <= chunk_bytes
    };
    let mut current = read(first);
    for (n, indices) in chunks.iter().enumerate() {
        if context.cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        let taken = std::mem::take(&mut current);
        let take = |taken: Vec<Result<Vec<RecordBatch>>>,
                    each: &mut (dyn FnMut(Vec<RecordBatch>) -> Result<()> + Send)|
         -> Result<()> {
            for (&index, batches) in indices.iter().zip(taken) {
                each(batches?)?;
                advance(table.files[index].size_bytes);
            }
            Ok(())
        };
        let next_chunk = chunks.get(n + 1);
        if next_chunk.is_some_and(|next| fits(next) && fits(indices)) {
            let (next, handled) = rayon::join(
                || next_chunk.map(|next| read(next)),
                || take(taken, &mut *each),
            );
            handled?;
            current = next.unwrap_or_default();
        } else {
            take(taken, &mut *each)?;
            current = next_chunk.map(|next| read(next)).unwrap_or_default();
        }
    }
    Ok(())
}

/// The seam of the two layouts: how a bin's rows are keyed and its ranges cut. A curve keys
/// a row by its clustering columns' buckets; a cut tree ([`crate::plan::cuts`]) puts the
/// row's leaf in the key's top bits, above the curve key of the columns inside the leaf, so
/// that ranges never straddle two leaves and rows inside a leaf follow the curve. Sampling,
/// spilling, sorting, writing and tagging are the same for both.
pub(crate) struct Layout<'a> {
    /// The clustering: the curve and its columns.
    pub clustering: &'a Clustering,
    /// The partition's cut tree, bound to the table; `None` for a curve alone.
    pub tree: Option<&'a BoundTree>,
    /// The partition's values, parallel to the table's partition columns (the tree's cuts
    /// on partition columns read them).
    pub partition_values: &'a [Option<String>],
}

impl Layout<'_> {
    /// Bits per clustering column in the key.
    pub(crate) fn bits(&self) -> u32 {
        let dimensions = self.clustering.leaves.len();
        self.tree.map_or_else(
            || bits_per_dimension(dimensions),
            |t| t.tree().curve_bits(dimensions),
        )
    }

    /// Where the leaf starts in the key, with a cut tree: above the curve's bits.
    fn leaf_shift(&self) -> Option<u32> {
        let width = self.bits() * u32::try_from(self.clustering.leaves.len()).unwrap_or(0);
        self.tree.map(|_| width)
    }

    /// The key of a row from its buckets (one per clustering column) and its leaf (0
    /// without a tree).
    pub(crate) fn key(&self, coords: &[u32], leaf: u32) -> u64 {
        let curve = self.clustering.curve.key_with_bits(coords, self.bits());
        match self.leaf_shift() {
            Some(shift) => (u64::from(leaf) << shift) | curve,
            None => curve,
        }
    }

    /// The leaf whose keys `key` is among, with a cut tree.
    pub(crate) fn leaf_of(&self, key: u64) -> Option<u32> {
        let shift = self.leaf_shift()?;
        u32::try_from(key.checked_shr(shift).unwrap_or(0)).ok()
    }

    /// The clustering columns' values in `batch`.
    fn curve_values(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        self.clustering
            .leaves
            .iter()
            .map(|leaf| leaf_values(batch, &leaf.physical))
            .collect()
    }

    /// The leaf of every row of `batch`, with a cut tree.
    fn leaves(&self, batch: &RecordBatch) -> Result<Option<Vec<u32>>> {
        self.tree
            .map(|tree| tree.route(batch, self.partition_values))
            .transpose()
    }

    /// The key of every row of `batch`; `leaves`: the rows' leaves when already routed.
    pub(crate) fn row_keys(
        &self,
        batch: &RecordBatch,
        buckets: &[ColumnBuckets],
        leaves: Option<&[u32]>,
    ) -> Result<Vec<u64>> {
        let per_column = self
            .clustering
            .leaves
            .iter()
            .zip(buckets)
            .map(|(leaf, b)| b.buckets(&leaf_values(batch, &leaf.physical)?))
            .collect::<Result<Vec<_>>>()?;
        let routed;
        let leaves = match (leaves, self.tree) {
            (Some(leaves), _) => Some(leaves),
            (None, Some(_)) => {
                routed = self.leaves(batch)?;
                routed.as_deref()
            }
            (None, None) => None,
        };
        let mut coords = vec![0u32; per_column.len()];
        Ok((0..batch.num_rows())
            .map(|row| {
                for (c, column) in coords.iter_mut().zip(&per_column) {
                    *c = column[row];
                }
                self.key(&coords, leaves.map_or(0, |l| l[row]))
            })
            .collect())
    }

    /// The cut points of a bin's ranges from its sorted sample keys: for a curve, at the
    /// shares `sizes.cuts` ([`range_boundaries_at`]); under a cut tree, at every leaf's first
    /// key, and inside each leaf into [`crate::plan::leaf_shares`] of its part of the expected
    /// output bytes (each leaf's part by its share of the sample). Consecutive leaves whose
    /// parts are under half the target (the new rows an incremental run routes through an
    /// earlier tree: a sliver of each leaf) are packed into ranges of up to the target, each
    /// over a run of neighbouring leaves, instead of a small file per leaf.
    pub(crate) fn boundaries(&self, sample_keys: &[u64], sizes: &RangeSizes) -> Vec<u64> {
        let (Some(tree), Some(shift)) = (self.tree, self.leaf_shift()) else {
            return range_boundaries_at(sample_keys, &sizes.cuts);
        };
        let n = sample_keys.len();
        let target = sizes.target_file_bytes.max(1);
        let bytes_of = |rows: usize| {
            u64::try_from(u128::from(sizes.expected_output_bytes) * rows as u128 / n as u128)
                .unwrap_or(u64::MAX)
        };
        let mut out = Vec::new();
        // Bytes of the open pack of small leaves (0: none open).
        let mut packed = 0u64;
        let mut start = 0;
        while start < n {
            let leaf = sample_keys[start] >> shift;
            let end = start + sample_keys[start..].partition_point(|k| k >> shift == leaf);
            let bytes = bytes_of(end - start);
            let first_key = leaf << shift;
            if bytes < target / 2 {
                if packed == 0 || packed.saturating_add(bytes) > target {
                    out.push(first_key);
                    packed = 0;
                }
                packed = packed.saturating_add(bytes.max(1));
            } else {
                out.push(first_key);
                packed = 0;
                let shares = crate::plan::leaf_shares(bytes, sizes.target_file_bytes);
                out.extend(range_boundaries_at(&sample_keys[start..end], &shares));
                // Rows of the next leaves the sample missed never join this leaf's files.
                if leaf + 1 < tree.tree().leaves as u64 {
                    out.push((leaf + 1) << shift);
                }
            }
            start = end;
        }
        // The first range starts at key 0: no cut there.
        out.retain(|&k| k > 0);
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cut_ranges_by_sample_rows_and_keep_the_range_boundaries() {
        // 1,000 sampled keys 0, 10, 20, ...; two ranges split at key 5,000.
        let sample: Vec<u64> = (0..1_000u64).map(|k| k * 10).collect();
        let boundaries = vec![5_000u64];
        // 100,000 rows: 50,000 per range, pieces of at most 10,000 rows: 5 per range.
        let cuts = piece_boundaries(&boundaries, &sample, 100_000, 10_000);
        assert!(cuts.contains(&5_000), "{cuts:?}");
        assert!(cuts.windows(2).all(|w| w[0] < w[1]), "{cuts:?}");
        assert_eq!(cuts.len(), 9, "{cuts:?}");
        // Each piece holds about a fifth of its range's sample (the cuts move to round keys
        // nearby).
        let mut lower = 0;
        for &cut in cuts.iter().chain([&u64::MAX]) {
            let count = sample.iter().filter(|&&k| k >= lower && k < cut).count();
            assert!(
                (50..=150).contains(&count),
                "{lower}..{cut}: {count} {cuts:?}"
            );
            lower = cut;
        }
        // Pieces larger than the ranges: only the range boundaries.
        assert_eq!(
            piece_boundaries(&boundaries, &sample, 100_000, 1 << 40),
            boundaries
        );
        // No sample (a split scope): the key interval of each range cut evenly.
        let even = piece_boundaries(&[1 << 63], &[], 40, 10);
        assert_eq!(
            even,
            vec![1 << 62, 1 << 63, (1 << 63) + (u64::MAX - (1 << 63)) / 2]
        );
    }

    #[test]
    fn roundest_key_in_an_interval() {
        assert_eq!(roundest(5, 5), 5);
        assert_eq!(roundest(5, 9), 8);
        assert_eq!(roundest(0b1011_0000, 0b1100_0001), 0b1100_0000);
        assert_eq!(roundest(0, u64::MAX), 0);
        assert_eq!(roundest(1, u64::MAX), 1 << 63);
        for (lo, hi) in [(3u64, 1000u64), (1 << 40, (1 << 40) + 7), (17, 18)] {
            let r = roundest(lo, hi);
            assert!(lo <= r && r <= hi);
            assert!((lo..=hi).all(|k| k.trailing_zeros() <= r.trailing_zeros() || k == 0));
        }
    }

    #[test]
    fn boundaries_split_rows_evenly_within_the_slack() {
        let keys: Vec<u64> = (0..10_000u64)
            .map(|i| i * 7919 % 1_000_003)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let boundaries = range_boundaries(&keys, 10);
        assert_eq!(boundaries.len(), 9);
        let mut counts = vec![0usize; 10];
        for k in &keys {
            counts[boundaries.partition_point(|b| b <= k)] += 1;
        }
        let share = keys.len() / 10;
        for c in counts {
            assert!(
                c * 4 >= share * 3 && c * 4 <= share * 5,
                "{c} rows vs {share}"
            );
        }
        assert!(range_boundaries(&keys, 1).is_empty());
        assert!(range_boundaries(&[], 5).is_empty());
        // Cut at shares of the keys: one range of 70% and a remainder.
        let keys: Vec<u64> = (0..1000u64).map(|k| k * 7).collect();
        let cut = range_boundaries_at(&keys, &[0.7]);
        assert_eq!(cut.len(), 1);
        let below = keys.partition_point(|k| *k < cut[0]);
        assert!(
            (650..=750).contains(&below),
            "{below} keys below {}",
            cut[0]
        );
        // Equal shares match range_boundaries within the slack.
        let equal = range_boundaries_at(&keys, &[0.25, 0.5, 0.75]);
        assert_eq!(equal.len(), 3);
        assert!(range_boundaries_at(&keys, &[]).is_empty());
        assert!(range_boundaries_at(&[], &[0.5]).is_empty());
        assert!(range_boundaries_at(&keys, &[0.0, 1.0, f64::NAN]).is_empty());
    }
}
