//! The commit step of work orders: check results, read the log since the plan, commit in
//! batches (see the parent module).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use deltalake::kernel::{Action, Transaction};
use futures::StreamExt as _;
use object_store::ObjectStoreExt as _;
use serde::Serialize;
use serde_json::Value;

use super::{BinResult, WorkOrder, describe_ids};
use crate::commit::conflict::{self, Conflict};
use crate::commit::{self, COMMIT_INFO_RUN_ID};
use crate::error::{Error, Result};
use crate::rewrite::BinOutcome;
use crate::table::log::{CommitEntry, FileAction};
use crate::table::{StorageOptions, TableView};

/// Options of the commit step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommitOptions {
    /// Bins per commit; 0 ([`super::DEFAULT_BATCH_BINS`]) commits every bin in one commit.
    pub batch_bins: usize,
}

impl CommitOptions {
    /// Commit at most `bins` bins per commit (0: all in one).
    #[must_use]
    pub fn with_batch_bins(mut self, bins: usize) -> Self {
        self.batch_bins = bins;
        self
    }
}

/// A bin the commit step left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedBin {
    /// The bin's id.
    pub bin_id: usize,
    /// The version of the other writer that removed or re-added one of its input files.
    pub version: u64,
    /// Why, for people: the version of another writer that removed one of its input files.
    pub reason: String,
}

/// What the commit step did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CommitOutcome {
    /// The table, for display.
    pub table: String,
    /// The run id.
    pub run_id: String,
    /// The version the plan read.
    pub read_version: u64,
    /// The versions committed by this step, one per batch, in order.
    pub versions: Vec<u64>,
    /// Bins committed by this step.
    pub bins_committed: Vec<usize>,
    /// Bins an earlier commit step of the same run had committed (skipped).
    pub bins_already_committed: Vec<usize>,
    /// Bins dropped because another writer removed or re-added one of their input files.
    pub bins_dropped: Vec<DroppedBin>,
    /// Bins whose result says they were left alone: they wrote no fewer files than they read
    /// ([`crate::plan::Plan::must_reduce_file_count`]), so nothing of them is committed and
    /// their input files stay.
    pub bins_left_alone: Vec<usize>,
    /// Bins of the plan with no result given (left uncommitted; their files are kept).
    pub bins_without_result: Vec<usize>,
    /// Bins with a result whose split clustering scope has bins without one: left
    /// uncommitted until every bin of the scope has a result (their files are kept).
    pub bins_waiting: Vec<usize>,
    /// Files removed by this step's commits.
    pub files_removed: u64,
    /// Files added by this step's commits.
    pub files_added: u64,
    /// Bytes removed.
    pub bytes_removed: u64,
    /// Bytes added.
    pub bytes_added: u64,
    /// Rows rewritten by this step's commits.
    pub rows: u64,
    /// Data files of the run deleted because no commit refers to them (dropped bins, failed
    /// or superseded attempts).
    pub files_deleted: u64,
}

/// What the commits after the plan's version say about this run.
#[derive(Debug, Default)]
struct LogScan {
    /// The first version not read yet.
    next_version: u64,
    /// Input paths (decoded) removed by this run's commits.
    own_removed: HashSet<String>,
    /// File names (last path segment) added by this run's commits.
    own_added_names: HashSet<String>,
    /// The highest `txn.version` of this run's commits.
    last_batch: Option<i64>,
    /// Paths (decoded) another writer removed or re-added: the version and the verb.
    touched: HashMap<String, (u64, &'static str)>,
    /// The first metadata or protocol change by another writer.
    schema_change: Option<(u64, &'static str)>,
    /// The row ID high-water mark of the newest commit that set one.
    high_water_mark: Option<i64>,
}

impl LogScan {
    /// Reads every commit from `next_version` on, until the first that does not exist.
    async fn advance(&mut self, table: &TableView, run_id: &str) -> Result<()> {
        let log_store = table.log_store.as_ref();
        let mut rereads = 0;
        loop {
            loop {
                let version = self.next_version;
                let Some(bytes) = log_store
                    .read_commit_entry(version)
                    .await
                    .map_err(|e| Error::delta(format!("reading version {version}"), e))?
                else {
                    break;
                };
                self.read_commit(table, version, &bytes, run_id)?;
                self.next_version += 1;
            }
            // A log whose entries after the plan's version were cleaned up reads as if nothing
            // came after it: committing there would overwrite history. A listing that shows a
            // newer version may also mean another writer just committed: read on, then ask
            // again.
            let latest = log_store
                .get_latest_version(self.next_version.saturating_sub(1))
                .await
                .map_err(|e| Error::DamagedLog {
                    table: table.display_location(),
                    file: format!("_delta_log/{:020}.json", self.next_version - 1),
                    message: format!(
                        "cannot be found to read on from ({e}): log entries after the plan's version {} were probably cleaned up; plan again (files of this run that no commit names stay until vacuum removes them)",
                        table.version
                    ),
                })?;
            if latest < self.next_version {
                return Ok(());
            }
            let appeared = log_store
                .read_commit_entry(self.next_version)
                .await
                .map_err(|e| Error::delta(format!("reading version {}", self.next_version), e))?
                .is_some();
            rereads += 1;
            if !appeared || rereads > 100 {
                break;
            }
        }
        Err(Error::DamagedLog {
            table: table.display_location(),
            file: format!("_delta_log/{:020}.json", self.next_version),
            message: format!(
                "is missing although a later version exists (log entries after the plan's version {} were cleaned up): plan again",
                table.version
            ),
        })
    }

    /// Takes in commit `version` ([`CommitEntry`]): this run's own batches (by the run id in
    /// `commitInfo`) and the conflicts of another writer's ([`conflict::conflicts`]).
    fn read_commit(
        &mut self,
        table: &TableView,
        version: u64,
        bytes: &[u8],
        run_id: &str,
    ) -> Result<()> {
        let entry = CommitEntry::read(table, version, bytes)?;
        if let Some(mark) = entry.row_id_high_water_mark {
            self.high_water_mark = Some(mark);
        }
        let own = entry
            .commit_info_field(COMMIT_INFO_RUN_ID)
            .and_then(Value::as_str)
            == Some(run_id);
        if own {
            for (action, path) in &entry.files {
                match action {
                    FileAction::Remove => {
                        self.own_removed.insert(path.clone());
                    }
                    FileAction::Add => {
                        let name = path.rsplit('/').next().unwrap_or(path).to_string();
                        self.own_added_names.insert(name);
                    }
                }
            }
            for (app_id, batch) in &entry.txns {
                if app_id == run_id {
                    self.last_batch = Some(self.last_batch.map_or(*batch, |b| b.max(*batch)));
                }
            }
            return Ok(());
        }
        // Every file another writer removed or re-added is a conflict for the bins that
        // read it; row IDs are not (each batch assigns its own past the high-water mark).
        for found in conflict::conflicts(&entry, false, |_| true) {
            match found {
                Conflict::Metadata if self.schema_change.is_none() => {
                    self.schema_change = Some((version, "changed the table metadata"));
                }
                Conflict::Protocol if self.schema_change.is_none() => {
                    self.schema_change = Some((version, "changed the table protocol"));
                }
                Conflict::Metadata | Conflict::Protocol | Conflict::RowIds => {}
                Conflict::File { path, action } => {
                    self.touched
                        .entry(path.to_string())
                        .or_insert((version, conflict::verb(action)));
                }
            }
        }
        Ok(())
    }
}

/// The results given for one bin, checked against the order, in the order given.
struct Candidates {
    results: Vec<BinResult>,
    /// Indices into [`WorkOrder::files`].
    input_files: Vec<usize>,
}

/// Commits the results of `order`'s bins (see the module docs): checks them, skips bins this
/// run already committed, drops bins another writer touched, and commits the rest in batches
/// of `options.batch_bins`, each with a `txn` of the run. Must be called on a multi-threaded
/// tokio runtime.
///
/// A result is believed only as far as storage confirms it: each written file must exist with
/// its size and hold, by its Parquet footer, the rows the result says; a bin's rows must equal
/// its input's live rows, from the log's `numRecords` or, where the log has none, from the
/// input files' footers less their deleted rows. Of several results for one bin, the first
/// whose files pass is used; the others' files are deleted unless a commit refers to them.
///
/// # Errors
/// * [`Error::WorkOrder`] for the head of a sharded order or an order read for some bins
///   only (commit reads the whole order: [`super::read_order`] with no bin list), and for no
///   result at all given for a plan with bins;
/// * [`Error::WorkOrder`] naming the bin whose result does not belong to the order (another
///   run or plan, an unknown bin, rows that differ from its input's, a file outside the bin's
///   directory, not named after the run and bin, listed twice, missing, of another size or
///   row count, or not verified when the plan asks for it); nothing is committed then.
/// * [`Error::CommitStopped`] (exit code 3) when another writer changed the table's metadata
///   or protocol after the plan (the bins not committed yet are dropped and their files
///   deleted), or kept winning the race for the next version.
/// * [`Error::DamagedLog`] when log entries after the plan's version were cleaned up.
/// * [`Error::CommitOutcomeUnknown`], [`Error::Delta`], [`Error::ObjectStore`] from the
///   store; the files of bins not committed are kept, so the step can be run again.
pub async fn commit(
    order: &WorkOrder,
    results: Vec<BinResult>,
    storage_options: StorageOptions,
    options: &CommitOptions,
) -> Result<CommitOutcome> {
    super::check_whole(order)?;
    check_inputs(order, &storage_options).await?;
    // Nothing given for a plan with bins: nothing wanted can be done.
    if results.is_empty() && !order.plan.is_empty() {
        return Err(Error::WorkOrder {
            document: format!("the work order of run {}", order.plan.run_id),
            message: format!(
                "has {} bins, but no result was given: run execute and give commit its result documents",
                order.plan.bins().count()
            ),
        });
    }
    let table = order.table_view(storage_options)?;
    let run_id = order.plan.run_id.clone();
    let mut outcome = CommitOutcome {
        table: table.display_location(),
        run_id: run_id.clone(),
        read_version: table.version,
        ..CommitOutcome::default()
    };
    // 1. Check every result against the order.
    let mut candidates = check_results(order, results)?;
    let store = table.log_store.object_store(None);
    // 2. What happened after the plan.
    let mut scan = LogScan {
        next_version: table.version + 1,
        ..LogScan::default()
    };
    scan.advance(&table, &run_id).await?;
    let ready = ready_units(order, &mut candidates, &scan, &mut outcome);
    let batches = Batches {
        order,
        table: &table,
        store: &store,
        run_id: &run_id,
        candidates: &candidates,
    };
    batches
        .commit_all(&ready, options.batch_bins, &mut scan, &mut outcome)
        .await?;
    // 5. Files of the run no commit refers to: dropped bins, superseded results, and files of
    // failed attempts of settled bins found in their directories.
    outcome.files_deleted = clean_up(&store, order, &candidates, &outcome, &scan, &[]).await?;
    outcome.bins_committed.sort_unstable();
    outcome.bins_already_committed.sort_unstable();
    Ok(outcome)
}

/// Step 1 of [`commit`]: checks every result against the order ([`check_result`]) and
/// groups them by bin, in the order given. Returns the candidates of each bin with a result.
///
/// # Errors
/// [`Error::WorkOrder`] naming the first result that does not belong to the order.
fn check_results(
    order: &WorkOrder,
    results: Vec<BinResult>,
) -> Result<BTreeMap<usize, Candidates>> {
    let mut candidates: BTreeMap<usize, Candidates> = BTreeMap::new();
    for result in results {
        check_result(order, &result)?;
        let (_, bin) = order.bin(result.bin_id).expect("checked");
        candidates
            .entry(bin.id)
            .or_insert_with(|| Candidates {
                results: Vec::new(),
                input_files: bin.files.clone(),
            })
            .results
            .push(result);
    }
    Ok(candidates)
}

/// The commit units of `order` ready to commit: those whose every bin has a result in
/// `candidates`, and not settled as left alone. Records in `outcome` the bins without a
/// result, the bins waiting for the rest of their unit, and the bins left alone; drops the
/// left-alone results of ready bins that have others. `scan` is the log read since the plan.
fn ready_units(
    order: &WorkOrder,
    candidates: &mut BTreeMap<usize, Candidates>,
    scan: &LogScan,
    outcome: &mut CommitOutcome,
) -> Vec<Vec<usize>> {
    // Commit units: a bin, or every bin of a split clustering scope (they remove the same
    // files, so they commit together or not at all).
    let mut ready: Vec<Vec<usize>> = Vec::new();
    for unit in order.units() {
        let given = unit.iter().filter(|id| candidates.contains_key(id)).count();
        if given < unit.len() {
            outcome
                .bins_without_result
                .extend(unit.iter().filter(|id| !candidates.contains_key(id)));
            outcome
                .bins_waiting
                .extend(unit.iter().filter(|id| candidates.contains_key(id)));
            continue;
        }
        // A bin every result of which says it was left alone by execute (only compaction
        // bins, each a unit of its own) is settled: nothing of it is committed, unless a
        // commit of this run already did (then the next step says so). Where results
        // disagree, the ones with files are used.
        let committed_before = unit.iter().any(|id| {
            candidates[id]
                .input_files
                .iter()
                .any(|&i| scan.own_removed.contains(&order.files[i].add.path))
        });
        if !committed_before
            && unit
                .iter()
                .all(|id| candidates[id].results.iter().all(|r| r.left_alone))
        {
            outcome.bins_left_alone.extend(unit.iter().copied());
            continue;
        }
        for id in &unit {
            if let Some(c) = candidates.get_mut(id)
                && c.results.iter().any(|r| !r.left_alone)
            {
                c.results.retain(|r| !r.left_alone);
            }
        }
        ready.push(unit);
    }
    ready
}

/// What the batches of a commit step share: the order, the table at the plan's version, its
/// store, the run id and the checked results of each bin.
struct Batches<'a> {
    order: &'a WorkOrder,
    table: &'a TableView,
    store: &'a Arc<dyn deltalake::ObjectStore>,
    run_id: &'a str,
    candidates: &'a BTreeMap<usize, Candidates>,
}

impl Batches<'_> {
    /// Steps 3 and 4 of [`commit`]: commits the `ready` units in batches of `batch_bins` bins
    /// (0: all in one), each unit once settled (committed by this run before, touched by
    /// another writer, or committed now), reading the log on into `scan` after each commit
    /// and race, and recording what it did in `outcome`.
    ///
    /// # Errors
    /// [`Error::CommitStopped`] for a metadata or protocol change by another writer while
    /// units wait, or a batch that kept losing the race for the next version;
    /// [`Error::WorkOrder`] for results storage does not confirm; the errors of reading the
    /// log ([`LogScan::advance`]) and of committing ([`commit::commit`]).
    async fn commit_all(
        &self,
        ready: &[Vec<usize>],
        batch_bins: usize,
        scan: &mut LogScan,
        outcome: &mut CommitOutcome,
    ) -> Result<()> {
        // The result chosen for each bin about to be committed; files to delete at the end.
        let mut chosen: BTreeMap<usize, BinResult> = BTreeMap::new();
        let mut races = 0;
        let mut done: BTreeSet<usize> = BTreeSet::new(); // units (by first bin) settled
        loop {
            let pending = self.settle(ready, &mut done, scan, outcome);
            if let Some((version, reason)) = scan.schema_change
                && !pending.is_empty()
            {
                return Err(self.stopped(&pending, version, reason, scan, outcome).await);
            }
            let Some(batch) = next_batch(&pending, batch_bins) else {
                break;
            };
            // 3. The batch's results, confirmed by storage.
            for id in &batch {
                if !chosen.contains_key(id) {
                    let result =
                        choose_result(self.store, &self.candidates[id].results, self.table).await?;
                    chosen.insert(*id, result);
                }
            }
            check_unit_rows(self.table, self.order, &batch, &chosen, self.candidates).await?;
            // 4. One commit: a view at the last version read, with the row ID mark it left.
            let mut view = self.table.clone();
            view.version = scan.next_version - 1;
            if let (Some(tracking), Some(mark)) = (view.row_tracking.as_mut(), scan.high_water_mark)
            {
                tracking.high_water_mark = Some(mark);
            }
            let (outcomes, actions) = self.batch_actions(&view, &batch, &chosen, scan)?;
            match commit::commit(&view, &actions).await {
                Ok(version) => {
                    done.extend(batch.iter().copied());
                    self.record_commit(outcome, &batch, &outcomes, version);
                    if let Err(e) = commit::write_checkpoint_if_due(&view, version).await {
                        log::warn!(
                            "version {version} is committed, but its checkpoint failed: {e}"
                        );
                    }
                    races = 0;
                }
                // Another writer touched a file of the batch, or took the versions: read what
                // it did and try again (without the bins it touched). Only tries that drop no
                // bin count against the limit.
                Err(Error::ConcurrentModification {
                    winning_version,
                    reason,
                    ..
                }) => {
                    let dropped = outcome.bins_dropped.len();
                    scan.advance(self.table, self.run_id).await?;
                    // Another writer touched a file of the batch, or another commit step of
                    // this very run committed it: either way the next round settles those
                    // bins.
                    let touched = self.touched(&batch, scan);
                    if !touched
                        && scan.schema_change.is_none()
                        && dropped == outcome.bins_dropped.len()
                    {
                        races += 1;
                        if races >= MAX_BATCH_ATTEMPTS {
                            return Err(Error::CommitStopped {
                                table: self.table.display_location(),
                                version: winning_version,
                                reason: format!(
                                    "{reason}; {} bins of run {} were committed before (they stay), the others were not: their files are kept, run commit again",
                                    outcome.bins_committed.len()
                                        + outcome.bins_already_committed.len(),
                                    self.run_id
                                ),
                            });
                        }
                    }
                    continue;
                }
                Err(e) => return Err(e),
            }
            scan.advance(self.table, self.run_id).await?;
        }
        Ok(())
    }

    /// Sorts the complete units of `ready` not `done` yet (by first bin): committed by this
    /// run before, touched by another writer (by `scan`), or still to commit. Records the
    /// first two in `outcome` and in `done`; returns the units still to commit, in order.
    fn settle<'r>(
        &self,
        ready: &'r [Vec<usize>],
        done: &mut BTreeSet<usize>,
        scan: &LogScan,
        outcome: &mut CommitOutcome,
    ) -> Vec<&'r Vec<usize>> {
        // Sort the complete units: committed by this run before, touched by another writer,
        // or still to commit.
        let mut pending: Vec<&Vec<usize>> = Vec::new();
        for unit in ready {
            if done.contains(&unit[0]) {
                continue;
            }
            let paths: Vec<&str> = self.candidates[&unit[0]]
                .input_files
                .iter()
                .map(|&i| self.order.files[i].add.path.as_str())
                .collect();
            if paths.iter().any(|p| scan.own_removed.contains(*p)) {
                outcome.bins_already_committed.extend(unit.iter().copied());
                done.insert(unit[0]);
            } else if let Some((path, (version, verb))) =
                paths.iter().find_map(|p| scan.touched.get_key_value(*p))
            {
                for id in unit {
                    outcome.bins_dropped.push(DroppedBin {
                        bin_id: *id,
                        version: *version,
                        reason: format!("version {version} {verb} its input file '{path}'"),
                    });
                }
                done.insert(unit[0]);
            } else {
                pending.push(unit);
            }
        }
        pending
    }

    /// The error that stops the step when another writer changed the table's metadata or
    /// protocol (`reason`, at `version`) while the units `pending` wait: deletes their files
    /// and those of settled bins not committed ([`clean_up`]), and returns
    /// [`Error::CommitStopped`], or the error of the clean-up if it fails.
    async fn stopped(
        &self,
        pending: &[&Vec<usize>],
        version: u64,
        reason: &str,
        scan: &LogScan,
        outcome: &CommitOutcome,
    ) -> Error {
        let waiting: Vec<usize> = pending.iter().flat_map(|u| u.iter().copied()).collect();
        let deleted = match clean_up(
            self.store,
            self.order,
            self.candidates,
            outcome,
            scan,
            &waiting,
        )
        .await
        {
            Ok(deleted) => deleted,
            Err(e) => return e,
        };
        Error::CommitStopped {
            table: self.table.display_location(),
            version,
            reason: format!(
                "{reason} after the plan's version {}: {} bins of run {} were committed before it (they stay), the other {} were not and never will be under this plan ({deleted} files deleted)",
                self.table.version,
                outcome.bins_committed.len() + outcome.bins_already_committed.len(),
                self.run_id,
                waiting.len()
            ),
        }
    }

    /// The bins of `batch` as committed with their `chosen` results, and the actions that
    /// commit them on `view`: the rewrite's ([`commit::actions`]) with the run's `txn`
    /// (numbered after the last batch `scan` found) second.
    ///
    /// # Errors
    /// The errors of [`commit::actions`].
    fn batch_actions(
        &self,
        view: &TableView,
        batch: &[usize],
        chosen: &BTreeMap<usize, BinResult>,
        scan: &LogScan,
    ) -> Result<(Vec<BinOutcome>, Vec<Action>)> {
        let outcomes: Vec<BinOutcome> = batch
            .iter()
            .map(|id| {
                let result = &chosen[id];
                BinOutcome {
                    bin_id: *id,
                    input_files: self.candidates[id].input_files.clone(),
                    rows: result.rows,
                    spilled: result.spilled,
                    written: result.files.clone(),
                    left_alone: false,
                }
            })
            .collect();
        let mut actions = commit::actions(view, &self.order.plan, &outcomes)?;
        let batch_number = scan.last_batch.map_or(0, |b| b + 1);
        actions.insert(
            1,
            Action::Txn(Transaction::new_with_last_update(
                self.run_id,
                batch_number,
                Some(chrono::Utc::now().timestamp_millis()),
            )),
        );
        Ok((outcomes, actions))
    }

    /// Records in `outcome` the commit of `batch` (its bins' `outcomes`) as `version`: the
    /// bins, and the files, bytes and rows removed and added (each input file once).
    fn record_commit(
        &self,
        outcome: &mut CommitOutcome,
        batch: &[usize],
        outcomes: &[BinOutcome],
        version: u64,
    ) {
        outcome.versions.push(version);
        outcome.bins_committed.extend(batch.iter().copied());
        let mut removed = HashSet::new();
        for o in outcomes {
            for &i in o.input_files.iter().filter(|&&i| removed.insert(i)) {
                outcome.files_removed += 1;
                outcome.bytes_removed += u64::try_from(self.order.files[i].add.size).unwrap_or(0);
            }
            outcome.files_added += o.written.len() as u64;
            outcome.bytes_added += o.written.iter().map(|w| w.size_bytes).sum::<u64>();
            outcome.rows += o.rows;
        }
    }

    /// Whether an input file of a bin of `batch` was removed or re-added by another writer,
    /// or removed by a commit of this run, by `scan`.
    fn touched(&self, batch: &[usize], scan: &LogScan) -> bool {
        batch.iter().any(|id| {
            self.candidates[id].input_files.iter().any(|&i| {
                let path = &self.order.files[i].add.path;
                scan.touched.contains_key(path) || scan.own_removed.contains(path)
            })
        })
    }
}

/// Checks the order's input files against the table at the plan's version: no file is the
/// input of two commit units, and each is a file the table held then, with the same size and
/// deletion vector. An order damaged or forged after its fingerprint was recomputed would
/// otherwise remove a file twice (its rows written twice) or bring back the rows of a file
/// removed before the plan.
///
/// # Errors
/// [`Error::WorkOrder`] naming the file; everything [`TableView::load`] returns.
async fn check_inputs(order: &WorkOrder, storage_options: &StorageOptions) -> Result<()> {
    let bad = |message: String| Error::WorkOrder {
        document: format!("the work order of run {}", order.plan.run_id),
        message,
    };
    let mut owner: HashMap<usize, usize> = HashMap::new();
    for (number, unit) in order.units().iter().enumerate() {
        for &id in unit {
            let (_, bin) = order.bin(id).expect("a bin of the plan");
            for &file in &bin.files {
                if *owner.entry(file).or_insert(number) != number {
                    return Err(bad(format!(
                        "lists input file '{}' in two bins that commit apart; plan again",
                        order.files[file].add.path
                    )));
                }
            }
        }
    }
    // A version of a table never changes: once this process found the order's files live in
    // it, later commit steps of the same order (the batches of a Spark driver) need not load
    // the snapshot again.
    let key = checked_key(order);
    if checked_orders().lock().is_ok_and(|c| c.contains_key(&key)) {
        return Ok(());
    }
    let location = crate::table::TableLocation::new(order.table.uri.clone())
        .with_storage_options(storage_options.clone());
    let snapshot = TableView::load(location, Some(order.table.version)).await?;
    let live: HashMap<&str, &crate::table::DataFile> = snapshot
        .files
        .iter()
        .map(|f| (f.path.as_str(), f))
        .collect();
    for file in &order.files {
        let add = &file.add;
        let same = live.get(add.path.as_str()).is_some_and(|f| {
            i64::try_from(f.size_bytes).is_ok_and(|size| size == add.size)
                && f.deletion_vector == add.deletion_vector
        });
        if !same {
            return Err(bad(format!(
                "lists input file '{}', which the table did not hold at version {} with that size and deletion vector; plan again",
                add.path, order.table.version
            )));
        }
    }
    if let Ok(mut checked) = checked_orders().lock() {
        *checked.entry(key).or_default() += 1;
    }
    Ok(())
}

/// Orders whose input files this process checked against the table at the plan's version,
/// with how often it loaded that snapshot to do so.
fn checked_orders() -> &'static std::sync::Mutex<HashMap<String, u64>> {
    static CHECKED: std::sync::OnceLock<std::sync::Mutex<HashMap<String, u64>>> =
        std::sync::OnceLock::new();
    CHECKED.get_or_init(Default::default)
}

fn checked_key(order: &WorkOrder) -> String {
    format!(
        "{}@{}#{}",
        order.table.uri, order.table.version, order.fingerprint
    )
}

/// How many times this process loaded the table's snapshot at `order`'s version to check its
/// input files ([`fn@commit`]): 1 after any number of commit steps of one order (the batches of
/// a Spark driver), 0 before the first.
#[must_use]
pub fn snapshot_loads(order: &WorkOrder) -> u64 {
    checked_orders()
        .lock()
        .ok()
        .and_then(|c| c.get(&checked_key(order)).copied())
        .unwrap_or(0)
}

/// How often a batch is retried after losing the race for the next version without any of
/// its bins being touched (a busy table); each such loss already retried
/// [`commit::MAX_COMMIT_ATTEMPTS`] times.
const MAX_BATCH_ATTEMPTS: usize = 3;

fn next_batch(pending: &[&Vec<usize>], batch_bins: usize) -> Option<Vec<usize>> {
    if pending.is_empty() {
        return None;
    }
    // Whole units, at least one, until the batch holds `batch_bins` bins (0: all).
    let mut batch: Vec<usize> = Vec::new();
    for unit in pending {
        if batch_bins > 0 && !batch.is_empty() && batch.len() + unit.len() > batch_bins {
            break;
        }
        batch.extend(unit.iter().copied());
    }
    Some(batch)
}

/// Checks what a result says against the order alone (no storage).
fn check_result(order: &WorkOrder, result: &BinResult) -> Result<()> {
    let run_id = &order.plan.run_id;
    let bad = |message: String| Error::WorkOrder {
        document: format!("the result of bin {}", result.bin_id),
        message,
    };
    if &result.run_id != run_id {
        return Err(bad(format!(
            "belongs to run {}, not to this plan's run {run_id}",
            result.run_id
        )));
    }
    if result.fingerprint != order.fingerprint {
        return Err(bad(format!(
            "was made from another plan (fingerprint {}, this plan's is {})",
            result.fingerprint, order.fingerprint
        )));
    }
    if result.compute_checksum()? != result.checksum {
        return Err(bad(
            "was altered after execute wrote it (its checksum does not match); execute the bin again"
                .into(),
        ));
    }
    let Some((partition, bin)) = order.bin(result.bin_id) else {
        return Err(bad("names a bin this plan does not have".into()));
    };
    if order.settings.verify && !result.verified {
        return Err(bad(
            "was not verified, but the plan asks every bin to be".into()
        ));
    }
    if let Some(expected) = bin.input_rows
        && expected != result.rows
    {
        return Err(bad(format!(
            "read {} rows, but its input files hold {expected} live rows",
            result.rows
        )));
    }
    if result.left_alone {
        if !order.plan.must_reduce_file_count(bin) {
            return Err(bad(format!(
                "says the bin was left alone, but its plan rewrites it for more than its file count ({})",
                if order.plan.clustering.is_some() {
                    "a clustering"
                } else if bin.num_deletion_vectors > 0 {
                    "deletion vectors to purge"
                } else {
                    "a rewrite of every file"
                }
            )));
        }
        if !result.files.is_empty() {
            return Err(bad(format!(
                "says the bin was left alone, but lists {} written files",
                result.files.len()
            )));
        }
        return Ok(());
    }
    let written: u64 = result.files.iter().map(|f| f.num_records).sum();
    if written != result.rows {
        return Err(bad(format!(
            "wrote {written} rows in its files but read {}",
            result.rows
        )));
    }
    let prefix = if partition.directory.is_empty() {
        String::new()
    } else {
        format!("{}/", partition.directory)
    };
    let name_start = format!("part-{:05}-{run_id}-", bin.id);
    let mut seen = HashSet::new();
    for file in &result.files {
        let name = file.path.strip_prefix(&prefix).unwrap_or("");
        if name.contains('/') || !name.starts_with(&name_start) {
            return Err(bad(format!(
                "names file '{}', which is not a file of this bin ('{prefix}{name_start}...')",
                file.path
            )));
        }
        if !seen.insert(file.path.as_str()) {
            return Err(bad(format!("names file '{}' twice", file.path)));
        }
        // The stats the log will carry count the rows the footer is checked against.
        let stats_rows = serde_json::from_str::<Value>(&file.stats_json)
            .ok()
            .and_then(|stats| stats.get("numRecords").and_then(Value::as_u64));
        if stats_rows != Some(file.num_records) {
            return Err(bad(format!(
                "gives file '{}' stats whose numRecords ({}) is not its {} rows",
                file.path,
                stats_rows.map_or_else(|| "missing".to_string(), |n| n.to_string()),
                file.num_records
            )));
        }
    }
    Ok(())
}

/// The first of `results` (of one bin) whose every file exists with its size and row count,
/// with stats that hold for what its footer records ([`check_files`]).
async fn choose_result(
    store: &Arc<dyn deltalake::ObjectStore>,
    results: &[BinResult],
    table: &TableView,
) -> Result<BinResult> {
    let leaves = table.data_leaf_columns();
    let prefix_length = crate::pruning::string_prefix_length(table);
    let mut first_error = None;
    for result in results {
        match check_files(store, result, &leaves, prefix_length).await {
            Ok(()) => return Ok(result.clone()),
            Err(e @ Error::WorkOrder { .. }) => {
                first_error.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(first_error.unwrap_or_else(|| Error::Internal("a bin without results".into())))
}

/// Checks that every file of `result` exists with its size and, by its Parquet footer, holds
/// the rows the result gives it, and that the min/max and null counts of its stats hold
/// for the values the footer records (of the table's data `leaves`; see
/// [`super::footer::check_stats`]).
async fn check_files(
    store: &Arc<dyn deltalake::ObjectStore>,
    result: &BinResult,
    leaves: &[crate::table::LeafColumn],
    prefix_length: usize,
) -> Result<()> {
    let id = result.bin_id;
    let checks = futures::stream::iter(result.files.iter().map(|file| {
        let store = store.clone();
        async move {
            let bad = |message: String| Error::WorkOrder {
                document: format!("the result of bin {id}"),
                message,
            };
            let path = deltalake::Path::parse(&file.path)
                .unwrap_or_else(|_| deltalake::Path::from(file.path.as_str()));
            match store.head(&path).await {
                Ok(meta) if meta.size == file.size_bytes => {}
                Ok(meta) => {
                    return Err(bad(format!(
                        "names file '{}' of {} bytes, but the file has {} bytes",
                        file.path, file.size_bytes, meta.size
                    )));
                }
                Err(deltalake::ObjectStoreError::NotFound { .. }) => {
                    return Err(bad(format!(
                        "names file '{}', which does not exist (deleted by a clean-up, or written to another table); execute the bin again",
                        file.path
                    )));
                }
                Err(e) => {
                    return Err(Error::ObjectStore {
                        path: file.path.clone(),
                        source: Box::new(e),
                    });
                }
            }
            let footer = super::footer::read_footer(&store, &path, file.size_bytes)
                .await
                .and_then(|metadata| Ok((super::footer::footer_rows(&metadata)?, metadata)))
                .map_err(|message| bad(format!("names file '{}', which {message}", file.path)));
            let (rows, metadata) = footer?;
            if rows != file.num_records {
                return Err(bad(format!(
                    "says file '{}' holds {} rows, but its footer says {rows}",
                    file.path, file.num_records
                )));
            }
            super::footer::check_stats(&file.stats_json, &metadata, leaves, prefix_length)
                .map_err(|message| bad(format!("gives file '{}' {message}", file.path)))
        }
    }))
    .buffer_unordered(32)
    .collect::<Vec<_>>()
    .await;
    checks.into_iter().collect()
}

/// Checks, for every unit of `batch`, that the rows of its bins equal its input's live rows:
/// the log's counts where it has them (the plan's, or the key space's for a split scope),
/// else the input files' footers less the rows their deletion vectors delete.
async fn check_unit_rows(
    table: &TableView,
    order: &WorkOrder,
    batch: &[usize],
    chosen: &BTreeMap<usize, BinResult>,
    candidates: &BTreeMap<usize, Candidates>,
) -> Result<()> {
    let store = table.log_store.object_store(None);
    let mut seen = HashSet::new();
    for unit in order.units() {
        if !batch.contains(&unit[0]) || !seen.insert(unit[0]) {
            continue;
        }
        let (_, first) = order.bin(unit[0]).expect("a bin of the plan");
        let known = match first.key_range {
            Some(range) => {
                order
                    .plan
                    .key_spaces
                    .get(range.space)
                    .ok_or_else(|| Error::WorkOrder {
                        document: format!("the work order of run {}", order.plan.run_id),
                        message: format!(
                            "names key space {} for bin {}, which it does not have",
                            range.space, unit[0]
                        ),
                    })?
                    .input_rows
            }
            None => first.input_rows,
        };
        let expected = match known {
            Some(rows) => rows,
            None => {
                let mut rows = 0u64;
                for &i in &candidates[&unit[0]].input_files {
                    let file = &table.files[i];
                    let path = crate::table::read::object_path(&table.location, &file.path)?;
                    let physical = super::footer::read_footer(&store, &path, file.size_bytes)
                        .await
                        .and_then(|metadata| super::footer::footer_rows(&metadata))
                        .map_err(|message| Error::data_file(&file.path, message))?;
                    rows += physical.saturating_sub(file.num_deleted_rows());
                }
                rows
            }
        };
        let got: u64 = unit.iter().map(|id| chosen[id].rows).sum();
        if got != expected {
            let document = if unit.len() == 1 {
                format!("the result of bin {}", unit[0])
            } else {
                format!(
                    "the results of bins {} (one clustering scope)",
                    describe_ids(&unit)
                )
            };
            return Err(Error::WorkOrder {
                document,
                message: format!(
                    "hold {got} rows, but their input files hold {expected} live rows"
                ),
            });
        }
    }
    Ok(())
}

/// Deletes the files of this run that no commit refers to and no later commit step can use:
/// every result of a dropped bin, of a bin in `abandoned` (never to be committed), the
/// results of settled bins that were not committed, and files of failed attempts of settled
/// bins found in their directories. A file a commit of this run added is never deleted.
/// Returns how many files were deleted.
async fn clean_up(
    store: &Arc<dyn deltalake::ObjectStore>,
    order: &WorkOrder,
    candidates: &BTreeMap<usize, Candidates>,
    outcome: &CommitOutcome,
    scan: &LogScan,
    abandoned: &[usize],
) -> Result<u64> {
    let settled: BTreeSet<usize> = outcome
        .bins_committed
        .iter()
        .chain(&outcome.bins_already_committed)
        .chain(outcome.bins_dropped.iter().map(|d| &d.bin_id))
        .chain(&outcome.bins_left_alone)
        .chain(abandoned)
        .copied()
        .collect();
    let mut doomed: BTreeSet<String> = settled
        .iter()
        .filter_map(|id| candidates.get(id))
        .flat_map(|c| c.results.iter().flat_map(|r| r.files.iter()))
        .map(|f| f.path.clone())
        .collect();
    doomed.extend(stray_files(store, order, &settled, &scan.own_added_names).await?);
    // Never a file a commit of this run added.
    doomed.retain(|p| {
        !scan
            .own_added_names
            .contains(p.rsplit('/').next().unwrap_or(p))
    });
    Ok(delete_paths(store, doomed.into_iter()).await)
}

/// Files in the directories of `settled` bins named after the run and one of those bins
/// that no commit of the run added: failed or superseded attempts.
async fn stray_files(
    store: &Arc<dyn deltalake::ObjectStore>,
    order: &WorkOrder,
    settled: &BTreeSet<usize>,
    committed_names: &HashSet<String>,
) -> Result<Vec<String>> {
    let mut by_directory: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for partition in &order.plan.partitions {
        for bin in partition.bins.iter().filter(|b| settled.contains(&b.id)) {
            by_directory
                .entry(partition.directory.as_str())
                .or_default()
                .push(format!("part-{:05}-{}-", bin.id, order.plan.run_id));
        }
    }
    let mut out = Vec::new();
    for (directory, prefixes) in by_directory {
        let prefix = (!directory.is_empty()).then(|| {
            deltalake::Path::parse(directory).unwrap_or_else(|_| deltalake::Path::from(directory))
        });
        let listing = store
            .list_with_delimiter(prefix.as_ref())
            .await
            .map_err(|e| Error::ObjectStore {
                path: directory.to_string(),
                source: Box::new(e),
            })?;
        for object in listing.objects {
            let Some(name) = object.location.filename() else {
                continue;
            };
            if prefixes.iter().any(|p| name.starts_with(p.as_str()))
                && !committed_names.contains(name)
            {
                out.push(if directory.is_empty() {
                    name.to_string()
                } else {
                    format!("{directory}/{name}")
                });
            }
        }
    }
    Ok(out)
}

/// Deletes `paths` (relative to the table root), best effort: a failure is a warning.
/// Returns how many existed and were deleted.
async fn delete_paths(
    store: &Arc<dyn deltalake::ObjectStore>,
    paths: impl Iterator<Item = String>,
) -> u64 {
    let paths: Vec<deltalake::Path> = paths
        .map(|p| deltalake::Path::parse(&p).unwrap_or_else(|_| deltalake::Path::from(p.as_str())))
        .collect();
    if paths.is_empty() {
        return 0;
    }
    let total = paths.len();
    let mut deleted = 0u64;
    let mut failed: Vec<deltalake::ObjectStoreError> = Vec::new();
    let mut results = store.delete_stream(futures::stream::iter(paths.into_iter().map(Ok)).boxed());
    while let Some(result) = results.next().await {
        match result {
            Ok(_) => deleted += 1,
            Err(deltalake::ObjectStoreError::NotFound { .. }) => {}
            Err(e) => failed.push(e),
        }
    }
    if let Some(first) = failed.first() {
        log::warn!(
            "{} of the {total} files of this run that no commit refers to could not be deleted (`vacuum` removes them once past its retention): {first}",
            failed.len()
        );
    }
    deleted
}
