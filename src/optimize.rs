//! The `optimize` job: load -> gate -> plan -> rewrite -> commit, end to end.
//!
//! ```text
//!   TableView::load ──> TableView::check_writable ──> plan::plan ──> rewrite::execute ──> commit
//!     (async I/O)            (pure)                        (pure)        (rayon pool)       (async I/O)
//! ```
//! A failure anywhere before the commit deletes the files written so far; nothing is
//! committed unless every bin succeeded.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::commit::{self, FileSizeMetrics};
use crate::error::{Error, Result};
use crate::gain;
use crate::plan::{self, Plan};
pub use crate::prepare::OptimizeOptions;
use crate::prepare::plan_sized;
use crate::progress::{Phase, Progress, Scope};
use crate::rewrite::{self, BinOutcome, WrittenFile};
use crate::table::TableView;
use crate::table::read::Reader;
use crate::workorder::{OrderSettings, WorkOrder};

/// What a run did.
#[derive(Debug, Clone, Serialize)]
pub struct OptimizeOutcome {
    /// The table version the run read.
    pub read_version: u64,
    /// The version it committed; `None` for a dry run or when there was nothing to do.
    pub version: Option<u64>,
    /// True for `--dry-run`.
    pub dry_run: bool,
    /// Files removed (rewritten).
    pub files_removed: u64,
    /// Files added.
    pub files_added: u64,
    /// Bytes removed.
    pub bytes_removed: u64,
    /// Bytes added.
    pub bytes_added: u64,
    /// Rows rewritten (live rows of the removed files, equal to the rows of the added ones).
    pub rows: u64,
    /// Partitions with at least one bin.
    pub partitions: u64,
    /// Bins rewritten.
    pub bins: u64,
    /// Clustering bins that did not fit the memory budget and were clustered out of core.
    pub bins_spilled: u64,
    /// Compaction bins left alone after writing: they wrote no fewer files than they read
    /// ([`Plan::must_reduce_file_count`]), so their files were deleted and their inputs stay.
    /// Not counted in `bins`, `files_removed` or `bytes_removed`.
    pub bins_left_alone: u64,
    /// Input files of the bins left alone.
    pub files_left_alone: u64,
    /// Spark-named file-size metrics of the commit.
    pub metrics: FileSizeMetrics,
    /// The plan that was executed (its bins index the table's files).
    pub plan: Plan,
    /// The run as a work order ([`OptimizeOptions::with_work_order`]; its bins index its own
    /// files), `None` unless asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_order: Option<WorkOrder>,
    /// Wall time of the whole run.
    #[serde(serialize_with = "serialize_millis", rename = "duration_ms")]
    pub duration: Duration,
    /// What the budget took and left ([`OptimizeOptions::with_budget`]); `None` without a
    /// budget. With [`gain::Selection::nothing_worth_doing`] the run did nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection: Option<gain::Selection>,
    /// Bins whose files would have made a run of the workload dearer, not committed (their
    /// files deleted) while the others were ([`crate::Error::LayoutRegression`] when all
    /// would).
    pub bins_regressed: u64,
    /// Their input bytes.
    pub bytes_regressed: u64,
    /// Bins of the plan a `--max-duration` left: none started before the deadline.
    pub bins_past_deadline: u64,
    /// Their input bytes.
    pub bytes_past_deadline: u64,
    /// What the table scans per run of the run's measure before and after
    /// ([`gain::Figures`], recorded in the commit); `None` for a dry run or when nothing was
    /// written.
    pub figures: Option<gain::Figures>,
    /// The version a checkpoint was written at after the commit, when the commit landed on
    /// a checkpoint version ([`commit::write_checkpoint_if_due`]); `None` otherwise or when
    /// writing it failed (a warning, never a failed run).
    pub checkpoint: Option<u64>,
    /// Where the run's time went, stage by stage ([`rewrite::timings`]).
    pub timings: rewrite::timings::Timings,
    /// A UniForm table's Iceberg view after the commit ([`crate::table::iceberg::view`]):
    /// the Delta version Iceberg readers still read, which this run does not convert.
    /// `None` for other tables, a dry run, or a run that committed nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iceberg: Option<crate::table::iceberg::IcebergView>,
}

/// Output files per partition below which a clustering run cannot buy skipping: with
/// fewer than 4 files, a range predicate that covers a quarter of a column's values reads
/// at least one file in any order, and most predicates read all of them.
pub const MIN_FILES_FOR_SKIPPING: u64 = 4;

/// Files per partition a [`FewFiles`] suggestion aims at.
pub const SUGGESTED_FILES_PER_PARTITION: u64 = 8;

/// A clustering run (or dry run) that writes fewer than [`MIN_FILES_FOR_SKIPPING`] files per
/// partition, so min/max pruning can skip little or nothing whatever the order of the rows
/// (typically a small table at the default 256 MiB target): what it writes and the target
/// that would write about [`SUGGESTED_FILES_PER_PARTITION`] files per partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FewFiles {
    /// Files written (planned, for a dry run).
    pub files: u64,
    /// Their bytes (expected, for a dry run).
    pub bytes: u64,
    /// Partitions they are in.
    pub partitions: u64,
    /// The run's target file size, bytes.
    pub target_file_bytes: u64,
    /// A target (a power of two bytes, at least `floor_bytes`) that writes about
    /// [`SUGGESTED_FILES_PER_PARTITION`] files per partition; `None` when even the floor
    /// writes fewer than [`MIN_FILES_FOR_SKIPPING`]: the table is too small for clustering to
    /// skip files.
    pub suggested_target_file_bytes: Option<u64>,
}

impl OptimizeOutcome {
    /// The [`FewFiles`] warning of a clustering run (committed or dry) that writes fewer
    /// than [`MIN_FILES_FOR_SKIPPING`] files per partition; `None` for compaction, a run that
    /// wrote nothing, or enough files. `floor_bytes`: the smallest target accepted
    /// ([`plan::target_floor_bytes`]).
    #[must_use]
    pub fn few_files(&self, floor_bytes: u64) -> Option<FewFiles> {
        self.plan.clustering.as_ref()?;
        let (files, bytes, partitions) = if self.dry_run {
            let bins = self.plan.partitions.iter().flat_map(|p| &p.bins);
            (
                bins.clone().map(|b| b.expected_output_files).sum::<u64>(),
                bins.map(|b| b.expected_output_bytes).sum::<u64>(),
                self.plan
                    .partitions
                    .iter()
                    .filter(|p| !p.bins.is_empty())
                    .count() as u64,
            )
        } else if self.version.is_some() {
            (self.files_added, self.bytes_added, self.partitions)
        } else {
            return None;
        };
        if partitions == 0 || files == 0 || files >= MIN_FILES_FOR_SKIPPING * partitions {
            return None;
        }
        let per_partition = bytes / partitions;
        let wanted = per_partition / SUGGESTED_FILES_PER_PARTITION;
        let floor = floor_bytes.max(1);
        let suggested = if wanted >= floor {
            // The largest power of two at most `wanted`.
            Some(1_u64 << (63 - wanted.leading_zeros()))
                .filter(|&p| p >= floor)
                .or(Some(floor))
        } else if per_partition / floor >= MIN_FILES_FOR_SKIPPING {
            Some(floor)
        } else {
            None
        };
        Some(FewFiles {
            files,
            bytes,
            partitions,
            target_file_bytes: self.plan.target_file_bytes,
            suggested_target_file_bytes: suggested,
        })
    }
}

fn serialize_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Compacts the table at `location` (latest version): [`TableView::load`], the protocol
/// gate, then [`rewrite()`] and [`Rewritten::commit`].
///
/// Must be called on a multi-threaded tokio runtime: the rewrite blocks rayon threads on it.
///
/// # Errors
/// Everything [`TableView::load`], [`TableView::check_writable`],
/// [`rewrite()`] and [`Rewritten::commit`] return. On any error nothing is committed and the
/// files written so far are deleted.
pub async fn optimize(
    location: impl Into<crate::table::TableLocation>,
    options: &OptimizeOptions,
    progress: Arc<dyn Progress>,
) -> Result<OptimizeOutcome> {
    let started = Instant::now();
    let table = TableView::load(location, None).await?;
    let rewritten = rewrite(table, options, progress).await?;
    if options.verify
        && let Err(e) = rewritten.verify().await
    {
        rewritten.abort().await?;
        return Err(e);
    }
    if options.cancel.load(Ordering::Relaxed) {
        rewritten.abort().await?;
        return Err(Error::Cancelled);
    }
    let mut outcome = rewritten.commit().await?;
    outcome.duration = started.elapsed();
    Ok(outcome)
}

/// The data files of a run are written, the commit is not yet made.
///
/// Dropping it without [`Rewritten::commit`] or [`Rewritten::abort`] leaves the written files
/// behind as orphans (invisible to readers, removable by VACUUM).
pub struct Rewritten {
    table: TableView,
    outcome: OptimizeOutcome,
    outcomes: Vec<BinOutcome>,
    reader: Reader,
    started: Instant,
    /// Receives the seconds of each stage.
    clock: Arc<rewrite::timings::Clock>,
    progress: Arc<dyn Progress>,
    /// The commit's record of what the run bought, and the workload text it records.
    record: Option<(gain::GainRecord, Option<String>)>,
}

impl Rewritten {
    /// The outcome so far (no version yet).
    #[must_use]
    pub fn outcome(&self) -> &OptimizeOutcome {
        &self.outcome
    }

    /// Paths (relative to the table root) of the files written.
    #[must_use]
    pub fn written_paths(&self) -> Vec<String> {
        self.outcomes
            .iter()
            .flat_map(|o| o.written.iter().map(|w| w.path.clone()))
            .collect()
    }

    /// Commits the rewrite (see [`commit::commit`] for the conflict rules), reported as
    /// [`Phase::Commit`]. With nothing written (dry run, nothing to do) it commits nothing.
    ///
    /// # Errors
    /// [`Error::ConcurrentModification`] or [`Error::Delta`] from [`commit::commit`]; the
    /// written files are deleted first. [`Error::CommitOutcomeUnknown`] when the commit may
    /// have landed: the written files are kept.
    pub async fn commit(self) -> Result<OptimizeOutcome> {
        let Self {
            table,
            mut outcome,
            outcomes,
            reader,
            started,
            clock,
            progress,
            record,
        } = self;
        if outcome.dry_run || outcomes.is_empty() {
            outcome.duration = started.elapsed();
            outcome.timings = clock.timings();
            return Ok(outcome);
        }
        // Nothing else runs while the commit is made: the process's CPU time is its.
        let committing = (Instant::now(), cpu_time::ProcessTime::try_now().ok());
        progress.phase_started(Scope::Run, Phase::Commit, 1);
        let mut actions = commit::actions(&table, &outcome.plan, &outcomes)?;
        if let (Some((record, workload)), Some(deltalake::kernel::Action::CommitInfo(info))) =
            (record, actions.first_mut())
        {
            info.info.insert(
                gain::COMMIT_INFO_GAIN.to_string(),
                serde_json::to_value(record).map_err(|e| Error::Json {
                    context: "writing the run's figures".into(),
                    source: e,
                })?,
            );
            if let Some(text) = workload {
                info.info.insert(
                    gain::COMMIT_INFO_WORKLOAD.to_string(),
                    serde_json::Value::String(text),
                );
            }
        }
        let version = match commit::commit(&table, &actions).await {
            Ok(version) => {
                progress.phase_advanced(Scope::Run, Phase::Commit, 1);
                progress.phase_finished(Scope::Run, Phase::Commit);
                version
            }
            // The commit may have landed: its files must stay.
            Err(e @ Error::CommitOutcomeUnknown { .. }) => return Err(e),
            Err(e) => {
                let written: Vec<WrittenFile> =
                    outcomes.iter().flat_map(|o| o.written.clone()).collect();
                delete_written(reader, written).await?;
                return Err(e);
            }
        };
        outcome.metrics = FileSizeMetrics::compute(&table, &outcomes);
        outcome.version = Some(version);
        outcome.files_added = outcome.metrics.num_added_files;
        outcome.bytes_added = outcome.metrics.num_added_bytes;
        outcome.rows = outcomes.iter().map(|o| o.rows).sum();
        outcome.bins_spilled = outcomes.iter().filter(|o| o.spilled).count() as u64;
        outcome.checkpoint = match commit::write_checkpoint_if_due(&table, version).await {
            Ok(written) => written.then_some(version),
            Err(e) => {
                log::warn!("version {version} is committed, but its checkpoint failed: {e}");
                None
            }
        };
        // UniForm: the Iceberg view is left to the next Delta writer with UniForm on, and
        // stated (`crate::table::iceberg`); reading it cannot fail a committed run.
        outcome.iceberg = match crate::table::iceberg::view(&table).await {
            Ok(view) => view,
            Err(e) => {
                log::warn!(
                    "version {version} is committed; the table's Iceberg metadata could not be read: {e}"
                );
                None
            }
        };
        clock.add(
            rewrite::timings::Stage::Commit,
            committing.0.elapsed(),
            committing.1.map_or(Duration::ZERO, |c| c.elapsed()),
        );
        outcome.duration = started.elapsed();
        outcome.timings = clock.timings();
        Ok(outcome)
    }

    /// Reads back every written file and checks, per partition, that it holds exactly the
    /// rows read from the input files (deleted rows excluded), by the fingerprints of
    /// [`crate::verify`]. Reported as [`Phase::Check`] (bytes of the input and written
    /// files).
    ///
    /// # Errors
    /// [`Error::VerifyFailed`] naming the partition that differs; read errors of the files;
    /// [`Error::Cancelled`] when the run's cancel flag is set.
    pub async fn verify(&self) -> Result<()> {
        if self.outcomes.is_empty() {
            return Ok(());
        }
        let table = self.table.clone();
        let outcomes = self.outcomes.clone();
        let progress = self.progress.clone();
        let cancel = self.reader.cancel.clone().unwrap_or_default();
        tokio::task::spawn_blocking(move || {
            crate::verify::check_rewrite(&table, &outcomes, progress.as_ref(), &cancel)
        })
        .await
        .map_err(|e| Error::TaskFailed {
            task: "verify",
            source: e,
        })?
    }

    /// Deletes the written files without committing.
    ///
    /// # Errors
    /// [`Error::Internal`] if the cleanup task cannot run.
    pub async fn abort(self) -> Result<()> {
        let written: Vec<WrittenFile> = self
            .outcomes
            .iter()
            .flat_map(|o| o.written.clone())
            .collect();
        delete_written(self.reader, written).await
    }
}

async fn delete_written(reader: Reader, written: Vec<WrittenFile>) -> Result<()> {
    tokio::task::spawn_blocking(move || {
        rewrite::delete_files(&reader.store, &reader.runtime, &written);
    })
    .await
    .map_err(|e| Error::TaskFailed {
        task: "cleanup",
        source: e,
    })
}

/// Checks the protocol, plans, and writes the new files of a compaction of `table`, without
/// committing. Must be called on a multi-threaded tokio runtime.
///
/// Compaction bins that wrote no fewer files than they read are left alone (their files
/// deleted; [`OptimizeOutcome::bins_left_alone`]). A plain compaction (no clustering, no
/// `rewrite_all`, no row tracking, not [`OptimizeOptions::with_single_round`]) then runs
/// later rounds over the small files left ([`MAX_COMPACTION_ROUNDS`] at most), so that the
/// table it commits is one a new run plans nothing for.
///
/// # Errors
/// [`Error::UnsupportedFeatures`], everything [`plan::plan`] returns, and the first bin error
/// of the rewrite ([`Error::DataFile`] for a missing or corrupt input), after deleting every
/// file the run wrote.
pub async fn rewrite(
    table: TableView,
    options: &OptimizeOptions,
    progress: Arc<dyn Progress>,
) -> Result<Rewritten> {
    let started = Instant::now();
    let clock = Arc::new(rewrite::timings::Clock::default());
    if options.threads > rewrite::MAX_THREADS {
        return Err(Error::invalid_option(
            crate::Setting::Threads,
            format!(
                "{} is more than the maximum of {}",
                options.threads,
                rewrite::MAX_THREADS
            ),
        ));
    }
    table.check_writable()?;
    // The location must take writes, and a commit must be an atomic put-if-absent: checked
    // before any work, so a read-only table fails at once with nothing written.
    if !options.dry_run {
        crate::commit::check_atomic_commits(&table, &plan::new_run_id()).await?;
    }
    let mut plan = plan_sized(&table, options).await?;
    if plan.run_id.is_empty() {
        plan.run_id = plan::new_run_id();
    }
    let measure = gain::Measure::resolve(&table, options.workload.clone(), &plan).await?;
    let selection = if options.budget.is_set() {
        let units = if plan.is_empty() {
            Vec::new()
        } else {
            gain::estimate(&table, &plan, &measure, options).await?
        };
        let mut selection = gain::select(units, measure.scan(&table)?.cost(), &options.budget);
        selection.measure = Some(measure.source);
        gain::apply(&mut plan, &selection);
        Some(selection)
    } else {
        None
    };
    let outcome = OptimizeOutcome {
        read_version: table.version,
        version: None,
        dry_run: options.dry_run,
        files_removed: plan.num_input_files() as u64,
        files_added: 0,
        bytes_removed: plan.input_bytes(),
        bytes_added: 0,
        rows: plan.bins().filter_map(|b| b.input_rows).sum(),
        partitions: plan.partitions.len() as u64,
        bins: plan.bins().count() as u64,
        bins_spilled: 0,
        bins_left_alone: 0,
        files_left_alone: 0,
        metrics: FileSizeMetrics::default(),
        work_order: options
            .work_order
            .then(|| WorkOrder::new(&table, plan.clone(), OrderSettings::of(options)))
            .transpose()?,
        plan,
        duration: Duration::ZERO,
        selection,
        bins_regressed: 0,
        bytes_regressed: 0,
        bins_past_deadline: 0,
        bytes_past_deadline: 0,
        figures: None,
        checkpoint: None,
        timings: rewrite::timings::Timings::default(),
        iceberg: None,
    };
    let mut reader = Reader::for_table(&table)?;
    reader.sample = options.sample;
    reader.foreign = options
        .files_of
        .as_ref()
        .map(crate::table::read::Foreign::of);
    reader.cancel = Some(options.cancel.clone());
    if options.dry_run || outcome.plan.is_empty() {
        // A run with nothing to write cleans up after killed runs as one that writes does.
        if !options.dry_run
            && let Ok(root) = table.location.to_file_path()
        {
            rewrite::leftovers::remove_stale_staging(&root);
        }
        return Ok(Rewritten {
            table,
            outcome,
            outcomes: Vec::new(),
            reader,
            started,
            clock,
            progress,
            record: None,
        });
    }
    progress.start(
        usize::try_from(outcome.bins).unwrap_or(usize::MAX),
        outcome.bytes_removed,
    );
    let plan = outcome.plan.clone();
    let mut execution = options.execution();
    execution.clock = clock.clone();
    // (A duration past what the clock can add is no deadline.)
    execution.deadline = options
        .budget
        .max_duration
        .and_then(|d| started.checked_add(d));
    if let Some(selection) = &outcome.selection {
        execution.order.clone_from(&selection.bins_taken);
    }
    let (table, reader, result, progress) =
        rewrite::write_bins(table, plan, &execution, reader, progress).await?;
    let (left_alone, outcomes): (Vec<BinOutcome>, Vec<BinOutcome>) =
        result?.into_iter().partition(|o| o.left_alone);
    let mut outcome = outcome;
    // Bins no worker started before the deadline.
    let ran: std::collections::HashSet<usize> = outcomes
        .iter()
        .chain(&left_alone)
        .map(|o| o.bin_id)
        .collect();
    for bin in outcome.plan.bins().filter(|b| !ran.contains(&b.id)) {
        outcome.bins_past_deadline += 1;
        outcome.bytes_past_deadline += bin.input_bytes;
    }
    // A budgeted run that left bins writes what it took, no more: later rounds would plan
    // the bins it left.
    let deferred = outcome.bins_past_deadline > 0
        || outcome.selection.as_ref().is_some_and(|s| {
            s.bins_over_budget > 0 || s.bins_below_gain > 0 || s.nothing_worth_doing
        });
    let rounds = !options.single_round
        && !deferred
        && outcome.plan.clustering.is_none()
        && !outcome.plan.rewrite_all
        && table.row_tracking.is_none()
        && reader.sample.is_none()
        && reader.foreign.is_none();
    // Input files (of `table`) of every bin left alone, this round and later ones.
    let mut left_alone: Vec<Vec<usize>> = left_alone.into_iter().map(|o| o.input_files).collect();
    let (outcomes, reader, progress) = if rounds && !outcomes.is_empty() {
        compact_again(
            &table,
            &outcome.plan,
            options,
            reader,
            progress,
            outcomes,
            &mut left_alone,
            &clock,
        )
        .await?
    } else {
        (outcomes, reader, progress)
    };
    // The regression guard, unit by unit: the bins whose files would make the workload
    // dearer are not committed, the others are (all of them dearer: the run is refused
    // below, with its figures).
    let mut outcomes = outcomes;
    if measure.source.is_workload() && !options.allow_regression && outcomes.len() > 1 {
        let dearer = committed_view(&table, &outcomes).and_then(|(view, origins)| {
            let inputs: Vec<&[usize]> = outcomes.iter().map(|o| o.input_files.as_slice()).collect();
            let mut outputs: Vec<Vec<usize>> = vec![Vec::new(); outcomes.len()];
            for (j, origin) in origins.iter().enumerate() {
                if let Origin::Written { outcome } = origin {
                    outputs[*outcome].push(j);
                }
            }
            gain::dearer_units(&measure, &table, &view, &inputs, &outputs)
        });
        let dearer = match dearer {
            Ok(dearer) => dearer,
            Err(e) => {
                delete_outcomes(&reader, &outcomes).await;
                return Err(e);
            }
        };
        if dearer.iter().any(|&d| d) && !dearer.iter().all(|&d| d) {
            let mut kept = Vec::new();
            let mut dropped = Vec::new();
            for (o, d) in outcomes.into_iter().zip(dearer) {
                if d {
                    outcome.bins_regressed += 1;
                    outcome.bytes_regressed += o
                        .input_files
                        .iter()
                        .map(|&i| table.files[i].size_bytes)
                        .sum::<u64>();
                    dropped.push(o);
                } else {
                    kept.push(o);
                }
            }
            if let Err(e) = delete_written(
                reader.clone(),
                dropped.into_iter().flat_map(|o| o.written).collect(),
            )
            .await
            {
                delete_outcomes(&reader, &kept).await;
                return Err(e);
            }
            outcomes = kept;
        }
    }
    // (Only compaction bins are left alone or merged: no two outcomes share an input file.)
    if rounds
        || !left_alone.is_empty()
        || outcome.bins_past_deadline > 0
        || outcome.bins_regressed > 0
    {
        // What is left to commit: the bins that reduced the file count, merged by later
        // rounds.
        outcome.files_removed = outcomes.iter().map(|o| o.input_files.len() as u64).sum();
        outcome.bytes_removed = outcomes
            .iter()
            .flat_map(|o| o.input_files.iter())
            .map(|&i| table.files[i].size_bytes)
            .sum();
        outcome.partitions = outcomes
            .iter()
            .filter_map(|o| o.input_files.first())
            .map(|&i| table.files[i].raw_partition_values.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .len() as u64;
        outcome.bins = outcomes.len() as u64;
        outcome.rows = outcomes.iter().map(|o| o.rows).sum();
        // A later round may have compacted files of a bin left alone: they are not left.
        let consumed: std::collections::HashSet<usize> = outcomes
            .iter()
            .flat_map(|o| o.input_files.iter().copied())
            .collect();
        let left: std::collections::BTreeSet<usize> = left_alone
            .iter()
            .flatten()
            .copied()
            .filter(|i| !consumed.contains(i))
            .collect();
        outcome.bins_left_alone = left_alone
            .iter()
            .filter(|files| files.iter().any(|i| !consumed.contains(i)))
            .count() as u64;
        outcome.files_left_alone = left.len() as u64;
    }
    // What the run buys, on the files it wrote: recorded in the commit, and the guard.
    let figures = if outcomes.is_empty() {
        Ok(None)
    } else {
        committed_view(&table, &outcomes)
            .and_then(|(view, _)| gain::Figures::of(&measure, &table, &view))
            .map(Some)
    };
    let mut rewritten = Rewritten {
        table,
        outcome,
        outcomes,
        reader,
        started,
        clock,
        progress,
        record: None,
    };
    if options.cancel.load(Ordering::Relaxed) {
        rewritten.abort().await?;
        return Err(Error::Cancelled);
    }
    let figures = match figures {
        Ok(figures) => figures,
        Err(e) => {
            rewritten.abort().await?;
            return Err(e);
        }
    };
    if let Some(figures) = &figures {
        if figures.measure.is_workload()
            && !options.allow_regression
            && figures.after.regresses(&figures.before)
        {
            let table = rewritten.table.display_location();
            rewritten.abort().await?;
            return Err(Error::LayoutRegression {
                table,
                measure: measure.recorded_at.map_or_else(
                    || figures.measure.words().to_string(),
                    |v| format!("the workload recorded at version {v}"),
                ),
                before_files: figures.before.files_scanned,
                before_bytes: crate::size::whole_bytes(figures.before.bytes_scanned),
                after_files: figures.after.files_scanned,
                after_bytes: crate::size::whole_bytes(figures.after.bytes_scanned),
                allow_with: crate::Setting::AllowRegression,
            });
        }
        let outcome = &rewritten.outcome;
        let (bins_left, bytes_left) = outcome.selection.as_ref().map_or((0, 0), |s| {
            (
                s.bins_over_budget + s.bins_below_gain,
                s.bytes_over_budget + s.bytes_below_gain,
            )
        });
        let record = gain::GainRecord::new(
            figures,
            outcome.bytes_removed,
            &options.budget,
            bins_left + outcome.bins_past_deadline + outcome.bins_regressed,
            bytes_left + outcome.bytes_past_deadline + outcome.bytes_regressed,
        );
        rewritten.record = Some((record, measure.recorded_text()));
    }
    rewritten.outcome.figures = figures;
    Ok(rewritten)
}

/// The most compaction rounds after the first (`compact_again`).
pub const MAX_COMPACTION_ROUNDS: usize = 4;

/// Where a file of a later round's view comes from.
#[derive(Clone, Copy)]
enum Origin {
    /// `table.files[i]`, untouched so far.
    Table(usize),
    /// A file written by the composed outcome `outcome` (an index into the round's
    /// outcomes).
    Written { outcome: usize },
}

/// Compaction rounds until the table this run would commit plans nothing, so that a second
/// run commits nothing (issue 31).
///
/// The first round's bins are sized by an estimate of the output ratio; where the files came
/// out smaller than it said (a sample too small to measure, rows that compress better than
/// the sample's), the last, partly filled bins of a partition leave small files that a new
/// run would pack together. So before committing, the table as it would be after the commit
/// (the files not rewritten, and the ones written) is planned exactly as a new run plans it
/// ([`plan_sized`]); each bin of that plan is written, and a bin that reads files of earlier
/// bins merges with them: one outcome removes the input files of all of them and adds their
/// files but the ones read again, which are deleted. This stops when the plan is empty, when
/// every bin of a round is left alone, or after [`MAX_COMPACTION_ROUNDS`]; each round writes
/// fewer files than the one before, and only small files.
///
/// A bin left alone (its inputs, of `table`, in `left_alone`) is not written again in a
/// later round: a plan bin of untouched files that reads exactly the files of one is dropped
/// from the round's plan. Bins left alone in later rounds are added to `left_alone`.
///
/// # Errors
/// Everything [`plan_sized`] and [`write_bins`] return; the files of every outcome are
/// deleted first.
#[expect(
    clippy::too_many_arguments,
    reason = "the round's inputs and the run's clock, each used"
)]
async fn compact_again(
    table: &TableView,
    first_plan: &Plan,
    options: &OptimizeOptions,
    mut reader: Reader,
    mut progress: Arc<dyn Progress>,
    first: Vec<BinOutcome>,
    left_alone: &mut Vec<Vec<usize>>,
    clock: &Arc<rewrite::timings::Clock>,
) -> Result<(Vec<BinOutcome>, Reader, Arc<dyn Progress>)> {
    let mut outcomes = first;
    let mut next_bin_id = first_plan.bins().map(|b| b.id + 1).max().unwrap_or(0);
    for _ in 0..MAX_COMPACTION_ROUNDS {
        if options.cancel.load(Ordering::Relaxed) {
            break;
        }
        // The table as this run would commit it.
        let (view, origins) = match committed_view(table, &outcomes) {
            Ok(view) => view,
            Err(e) => {
                delete_outcomes(&reader, &outcomes).await;
                return Err(e);
            }
        };
        let mut plan = match plan_sized(&view, options).await {
            Ok(plan) => plan,
            Err(e) => {
                delete_outcomes(&reader, &outcomes).await;
                return Err(e);
            }
        };
        drop_known_bins(&mut plan, left_alone, &origins);
        if plan.is_empty() {
            break;
        }
        plan.run_id.clone_from(&first_plan.run_id);
        for partition in &mut plan.partitions {
            for bin in &mut partition.bins {
                bin.id = next_bin_id;
                next_bin_id += 1;
            }
        }
        log::info!(
            "compaction round: {} bins of {} files left small files a new run would pack",
            plan.bins().count(),
            plan.num_input_files()
        );
        progress.start(plan.bins().count(), plan.input_bytes());
        let written = rewrite::write_bins(
            view.clone(),
            plan,
            &rewrite::Settings {
                clock: clock.clone(),
                ..options.execution()
            },
            reader.clone(),
            progress.clone(),
        )
        .await;
        let round = match written {
            Ok((_, round_reader, Ok(round), round_progress)) => {
                reader = round_reader;
                progress = round_progress;
                round
            }
            Ok((_, _, Err(e), _)) | Err(e) => {
                delete_outcomes(&reader, &outcomes).await;
                return Err(e);
            }
        };
        let (alone, merged): (Vec<BinOutcome>, Vec<BinOutcome>) =
            round.into_iter().partition(|o| o.left_alone);
        for bin in &alone {
            let files = table_inputs(&origins, &bin.input_files);
            if !files.is_empty() {
                left_alone.push(files);
            }
        }
        if merged.is_empty() {
            break;
        }
        let stale;
        (outcomes, stale) = merge_round(outcomes, merged, &view, &origins);
        if let Err(e) = delete_written(reader.clone(), stale).await {
            delete_outcomes(&reader, &outcomes).await;
            return Err(e);
        }
        outcomes.sort_by_key(|o| o.bin_id);
    }
    Ok((outcomes, reader, progress))
}

/// The table as a run would commit it after `outcomes` (of `table`): the files of `table`
/// no outcome read, in order, then the files each outcome wrote. Returns the view and,
/// parallel to its files, where each comes from.
///
/// # Errors
/// What [`WrittenFile::to_data_file`] returns for a written file.
fn committed_view(table: &TableView, outcomes: &[BinOutcome]) -> Result<(TableView, Vec<Origin>)> {
    let consumed: std::collections::HashSet<usize> = outcomes
        .iter()
        .flat_map(|o| o.input_files.iter().copied())
        .collect();
    let mut view = table.clone();
    let mut origins = Vec::new();
    view.files = Vec::new();
    for (i, file) in table.files.iter().enumerate() {
        if !consumed.contains(&i) {
            view.files.push(file.clone());
            origins.push(Origin::Table(i));
        }
    }
    for (k, o) in outcomes.iter().enumerate() {
        let partition_of = &table.files[o.input_files[0]];
        for written in &o.written {
            view.files.push(written.to_data_file(partition_of)?);
            origins.push(Origin::Written { outcome: k });
        }
    }
    Ok((view, origins))
}

/// The files of `table` among `files` (indices into a round's view, whose files come from
/// `origins`), in the order given: the files no earlier round wrote.
fn table_inputs(origins: &[Origin], files: &[usize]) -> Vec<usize> {
    files
        .iter()
        .filter_map(|&j| match origins[j] {
            Origin::Table(i) => Some(i),
            Origin::Written { .. } => None,
        })
        .collect()
}

/// Drops from a round's `plan` (of a view whose files come from `origins`) every bin that
/// reads exactly the files of `table` of a bin in `left_alone`, and the partitions left
/// without bins.
fn drop_known_bins(plan: &mut Plan, left_alone: &[Vec<usize>], origins: &[Origin]) {
    // Bins known to write as many files as they read: not again.
    let known: std::collections::HashSet<Vec<usize>> = left_alone
        .iter()
        .map(|files| {
            let mut files = files.clone();
            files.sort_unstable();
            files
        })
        .collect();
    let table_inputs = |bin: &plan::Bin| -> Option<Vec<usize>> {
        let mut files = bin
            .files
            .iter()
            .map(|&j| match origins[j] {
                Origin::Table(i) => Some(i),
                Origin::Written { .. } => None,
            })
            .collect::<Option<Vec<usize>>>()?;
        files.sort_unstable();
        Some(files)
    };
    for partition in &mut plan.partitions {
        partition
            .bins
            .retain(|bin| table_inputs(bin).is_none_or(|files| !known.contains(&files)));
    }
    plan.partitions.retain(|p| !p.bins.is_empty());
}

/// Merges a round's written bins `merged` (of `view`, whose files come from `origins`) into
/// the earlier `outcomes`: each new bin with the outcomes whose files it read. Returns the
/// composed outcomes (in slot order, not sorted) and the written files read again, which no
/// outcome holds any more.
fn merge_round(
    outcomes: Vec<BinOutcome>,
    merged: Vec<BinOutcome>,
    view: &TableView,
    origins: &[Origin],
) -> (Vec<BinOutcome>, Vec<WrittenFile>) {
    // Merge: each new bin with the outcomes whose files it read (union-find over
    // outcome indices), its table inputs added, the files it read dropped.
    let read_again: std::collections::HashSet<&str> = merged
        .iter()
        .flat_map(|o| o.input_files.iter())
        .filter_map(|&j| match origins[j] {
            Origin::Written { .. } => Some(view.files[j].path.as_str()),
            Origin::Table(_) => None,
        })
        .collect();
    let mut holder: Vec<usize> = (0..outcomes.len()).collect();
    fn find(holder: &mut [usize], mut k: usize) -> usize {
        while holder[k] != k {
            holder[k] = holder[holder[k]];
            k = holder[k];
        }
        k
    }
    let mut slots: Vec<Option<BinOutcome>> = outcomes.into_iter().map(Some).collect();
    let mut stale: Vec<WrittenFile> = Vec::new();
    for new in merged {
        let mut parts: Vec<usize> = new
            .input_files
            .iter()
            .filter_map(|&j| match origins[j] {
                Origin::Written { outcome } => Some(outcome),
                Origin::Table(_) => None,
            })
            .map(|k| find(&mut holder, k))
            .collect();
        parts.sort_unstable();
        parts.dedup();
        let mut input_files = table_inputs(origins, &new.input_files);
        let mut written = Vec::new();
        let mut bin_id = new.bin_id;
        for &k in &parts {
            let part = slots[k].take().expect("a live outcome");
            bin_id = bin_id.min(part.bin_id);
            input_files.extend(part.input_files);
            for file in part.written {
                if read_again.contains(file.path.as_str()) {
                    stale.push(file);
                } else {
                    written.push(file);
                }
            }
        }
        written.extend(new.written);
        input_files.sort_unstable();
        let composed = BinOutcome {
            bin_id,
            input_files,
            rows: written.iter().map(|w| w.num_records).sum(),
            spilled: false,
            written,
            left_alone: false,
        };
        // The composed outcome lives in the first part's slot (or a new one).
        let at = if let Some(&first) = parts.first() {
            for &k in &parts[1..] {
                holder[k] = first;
            }
            first
        } else {
            slots.push(None);
            holder.push(holder.len());
            slots.len() - 1
        };
        slots[at] = Some(composed);
    }
    (slots.into_iter().flatten().collect(), stale)
}

/// Deletes the files of `outcomes` (a failed round), best effort: the round's error is the
/// one reported, and a file that stays is an orphan no commit names (`vacuum` removes it).
async fn delete_outcomes(reader: &Reader, outcomes: &[BinOutcome]) {
    let written: Vec<WrittenFile> = outcomes.iter().flat_map(|o| o.written.clone()).collect();
    if let Err(e) = delete_written(reader.clone(), written).await {
        log::warn!("the files of this run could not be deleted: {e}");
    }
}
