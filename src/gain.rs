//! What a run buys: the files and bytes a query scans per run before and after a rewrite,
//! the expected saving of each bin, and the choice of bins under a budget (issue 39).
//!
//! ```text
//!  Measure::resolve          estimate (per unit)          select                 Figures
//!  (--workload, the one  ->  cost per run of its     ->   gate + order by   ->   before / after of
//!   an earlier run            input files, and of its     saving per byte,       the written files,
//!   recorded, defaults)       estimated output            budget                 in commitInfo
//! ```
//!
//! **The measure.** What a run is measured on, in this order: the `--workload` given; else
//! the workload the last layout run recorded in its commit ([`COMMIT_INFO_WORKLOAD`]); else
//! [`DEFAULT_QUERIES_PER_COLUMN`] generated predicates per clustering column, drawn from the
//! table's stats as `report` draws them ([`crate::report::generated`]); else, for a plain
//! compaction, a full scan. Figures are per run of the measure, scored by the one scorer
//! ([`crate::report::score`]): so a commit's recorded `after` equals what `report --workload`
//! computes on the committed version.
//!
//! **The cost** of a scan is its bytes plus [`DEFAULT_FILE_COST_BYTES`] per file opened, as
//! `recommend` ranks layouts: a query pays a request's latency per file, which small files
//! multiply, so compaction saves cost too.
//!
//! **Per-bin estimates.** Pruning decides file by file, so the saving of a set of bins is the
//! sum of their savings. A unit (bins that share input files: they commit together) saves
//! the cost per run of its input files less that of the files it would write. A compaction
//! bin's output is its input in file order: each output file holds consecutive input files,
//! and a query scans it when it scans one of them (a lower bound: the merged range may also
//! meet a value that falls between the inputs' ranges). A clustering bin's output files and
//! their stats are estimated from a seeded sample of its rows (about [`ESTIMATE_ROWS`]) by
//! the machinery of `recommend` and `sweep --estimate` ([`crate::simulate::estimate`]).
//!
//! **Selection** ([`select`]): with `--min-gain G`, a unit saving no cost, or less than `G`
//! of its input files' cost, is not run, and a run whose plan (the units left, whatever a
//! budget takes of them now) saves less than `G` of the table's cost per run does nothing
//! ([`Selection::nothing_worth_doing`]). The rest are
//! taken by saving per byte rewritten, best first, until `--max-rewrite-bytes` is spent: the
//! last unit taken may pass it, so a run never exceeds its budget by more than one unit.
//! Anchors: Iceberg `rewrite_data_files` (`max-file-group-size-bytes`, `rewrite-job-order`),
//! Hudi clustering plan limits, Oracle automatic clustering (a change is verified on the
//! workload before it is kept).

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::plan::{Bin, Plan};
use crate::prepare::Budget;
use crate::report::Analysis;
use crate::table::log::CommitEntry;
use crate::table::{DataFile, LeafColumn, TableView};
use crate::workload::{Query, Workload};

/// Bytes a query pays to open one file: 4 MiB, about what an object store serves in the
/// latency of one request (20 to 40 ms at 100 to 200 MB/s). `recommend` ranks by the same.
pub const DEFAULT_FILE_COST_BYTES: u64 = 4 << 20;
/// Generated predicates per clustering column when a run has no workload: 20 (10
/// equalities, 10 ranges of [`crate::report::DEFAULT_SELECTIVITY`] of the rows).
pub const DEFAULT_QUERIES_PER_COLUMN: usize = 20;
/// Rows the estimate of clustering bins reads, about: bins with more are sampled down.
pub const ESTIMATE_ROWS: u64 = 2_000_000;
/// Seed of the estimate's row sample.
pub const ESTIMATE_SEED: u64 = 0x9a17_b0d9_e7ed;
/// The `commitInfo` field holding a run's figures ([`GainRecord`], JSON).
pub const COMMIT_INFO_GAIN: &str = "delta-layout.gain";
/// The `commitInfo` field holding the workload a run was measured on (the workload file's
/// text: `WEIGHT<TAB>PREDICATE` per line), so later runs and `report --decay` measure on it.
pub const COMMIT_INFO_WORKLOAD: &str = "delta-layout.workload";
/// Largest workload recorded in a commit, bytes of text: a larger one is not recorded (the
/// figures are).
pub const MAX_RECORDED_WORKLOAD_BYTES: usize = 64 << 10;
/// Commits read back, newest first, looking for the last layout run's recorded workload.
pub const MAX_COMMITS_SEARCHED: u64 = 1000;

/// Where a run's measure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MeasureSource {
    /// The workload given (`--workload`).
    Workload,
    /// The workload an earlier run recorded in its commit ([`COMMIT_INFO_WORKLOAD`]).
    RecordedWorkload,
    /// Predicates generated on the clustering columns ([`DEFAULT_QUERIES_PER_COLUMN`]).
    DefaultPredicates,
    /// One query that reads every file (a plain compaction without a workload).
    FullScan,
}

impl MeasureSource {
    /// The words for it: `the workload`, `the recorded workload`, ...
    #[must_use]
    pub fn words(self) -> &'static str {
        match self {
            Self::Workload => "the workload",
            Self::RecordedWorkload => "the workload recorded by an earlier run",
            Self::DefaultPredicates => "generated predicates on the clustering columns",
            Self::FullScan => "a full scan",
        }
    }

    /// Whether it is a user's workload (given or recorded): the regression guard applies.
    #[must_use]
    pub fn is_workload(self) -> bool {
        matches!(self, Self::Workload | Self::RecordedWorkload)
    }
}

/// What a run is measured on.
#[derive(Debug, Clone)]
pub struct Measure {
    /// Where it comes from.
    pub source: MeasureSource,
    /// The queries; `None` for [`MeasureSource::FullScan`].
    pub workload: Option<Arc<Workload>>,
    /// For a recorded workload, the version of the commit that recorded it.
    pub recorded_at: Option<u64>,
}

/// What one run of the measure scans, on average (weighted by the queries' runs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scan {
    /// Files scanned per run.
    pub files_scanned: f64,
    /// Bytes scanned per run.
    pub bytes_scanned: f64,
}

impl Scan {
    /// `bytes_scanned + files_scanned x` [`DEFAULT_FILE_COST_BYTES`], bytes.
    #[must_use]
    pub fn cost(&self) -> f64 {
        #[expect(clippy::cast_precision_loss, reason = "a byte count")]
        let per_file = DEFAULT_FILE_COST_BYTES as f64;
        self.bytes_scanned + self.files_scanned * per_file
    }

    /// Whether `self` (after) makes a run dearer than `before` ([`Scan::cost`]): a
    /// regression. Files and bytes trade against each other (a compaction reads more bytes
    /// in fewer files, and a rewrite's encoding alone changes the bytes), so the guard
    /// weighs them as the budget does, not one by one.
    #[must_use]
    pub fn regresses(&self, before: &Scan) -> bool {
        self.cost() > before.cost() * (1.0 + 1e-9)
    }
}

impl Measure {
    /// A full scan: one query reading every file.
    #[must_use]
    pub fn full_scan() -> Self {
        Self {
            source: MeasureSource::FullScan,
            workload: None,
            recorded_at: None,
        }
    }

    /// The measure of a run of `plan` on `table`: `given` (`--workload`), else the workload
    /// the last layout run recorded (within [`MAX_COMMITS_SEARCHED`] commits; one that no
    /// longer fits the table is passed over with a warning), else generated predicates on
    /// the plan's clustering columns ([`Measure::default_predicates`]), else a full scan.
    ///
    /// # Errors
    /// [`Error::InvalidWorkload`] naming the line of a given query that does not fit the
    /// table; [`Error::Delta`] / [`Error::DamagedLog`] when a commit cannot be read.
    pub async fn resolve(
        table: &TableView,
        given: Option<Arc<Workload>>,
        plan: &Plan,
    ) -> Result<Self> {
        if let Some(workload) = given {
            // Every query must fit the table before anything is written (named by line).
            crate::report::score::score(table, &workload)?;
            return Ok(Self {
                source: MeasureSource::Workload,
                workload: Some(workload),
                recorded_at: None,
            });
        }
        if let Some(recorded) = recorded_workload(table).await? {
            return Ok(recorded);
        }
        let columns: Vec<String> = plan
            .clustering
            .as_ref()
            .map(|c| c.columns.clone())
            .unwrap_or_default();
        Self::default_predicates(table, &columns)
    }

    /// [`DEFAULT_QUERIES_PER_COLUMN`] predicates per column of `columns` (those with min/max
    /// stats in some file), drawn from `table`'s stats as `report` draws them; a full scan
    /// when no column has any.
    ///
    /// # Errors
    /// [`Error::UnknownColumn`] for a column `table` lacks.
    pub fn default_predicates(table: &TableView, columns: &[String]) -> Result<Self> {
        let usable: Vec<String> = columns
            .iter()
            .filter(|c| {
                crate::column::parse_path(c)
                    .ok()
                    .and_then(|path| crate::bound::ColumnRef::resolve(table, &path).ok())
                    .is_some_and(|c| crate::bound::has_min_max(&c.data_type))
            })
            .cloned()
            .collect();
        if usable.is_empty() {
            return Ok(Self::full_scan());
        }
        let analysis = Analysis::new(table, Some(&usable))?;
        let options = crate::report::ReportOptions {
            queries: DEFAULT_QUERIES_PER_COLUMN,
            ..Default::default()
        };
        let mut queries: Vec<Query> = Vec::new();
        for generated in analysis.workload(&options, false).queries {
            let text = generated.predicate.to_string();
            match queries.iter_mut().find(|q| q.predicate.to_string() == text) {
                Some(q) => q.weight += 1,
                None => queries.push(Query {
                    predicate: generated.predicate,
                    weight: 1,
                    line: 0,
                }),
            }
        }
        if queries.is_empty() {
            return Ok(Self::full_scan());
        }
        Ok(Self {
            source: MeasureSource::DefaultPredicates,
            workload: Some(Arc::new(Workload {
                queries,
                source: "the default predicates".into(),
            })),
            recorded_at: None,
        })
    }

    /// Distinct queries (1 for a full scan).
    #[must_use]
    pub fn queries(&self) -> usize {
        self.workload.as_ref().map_or(1, |w| w.queries.len())
    }

    /// Runs in all (the sum of the weights; 1 for a full scan).
    #[must_use]
    pub fn runs(&self) -> u64 {
        self.workload.as_ref().map_or(1, |w| w.total_weight())
    }

    /// What one run scans of `table`, by [`crate::report::score::score`] (a full scan: every
    /// file and byte).
    ///
    /// # Errors
    /// [`Error::InvalidWorkload`] for a query that does not fit `table`.
    pub fn scan(&self, table: &TableView) -> Result<Scan> {
        match &self.workload {
            Some(workload) => {
                let score = crate::report::score::score(table, workload)?;
                Ok(Scan {
                    files_scanned: score.files_scanned,
                    bytes_scanned: score.bytes_scanned,
                })
            }
            #[expect(clippy::cast_precision_loss, reason = "counts")]
            None => Ok(Scan {
                files_scanned: table.files.len() as f64,
                bytes_scanned: table.files.iter().map(|f| f.size_bytes).sum::<u64>() as f64,
            }),
        }
    }

    /// Per query, whether min/max pruning keeps each file of `table`, and the query's runs.
    pub(crate) fn kept(&self, table: &TableView) -> Result<Vec<(Vec<bool>, u64)>> {
        let Some(workload) = &self.workload else {
            return Ok(vec![(vec![true; table.files.len()], 1)]);
        };
        let mut names: Vec<String> = Vec::new();
        for column in workload.bind(table)?.into_iter().flatten() {
            if !names.contains(&column.name) {
                names.push(column.name);
            }
        }
        let analysis = Analysis::new(table, Some(&names))?;
        workload
            .queries
            .iter()
            .map(|q| Ok((analysis.may_match(&q.predicate)?, q.weight)))
            .collect()
    }

    /// The workload as a workload file's text, for the commit to record: a user's workload
    /// (given or recorded) of at most [`MAX_RECORDED_WORKLOAD_BYTES`]; `None` otherwise.
    #[must_use]
    pub fn recorded_text(&self) -> Option<String> {
        if !self.source.is_workload() {
            return None;
        }
        let text = workload_text(self.workload.as_ref()?);
        (text.len() <= MAX_RECORDED_WORKLOAD_BYTES).then_some(text)
    }

    /// The data columns the queries read on `table`, each once (the columns an estimate
    /// keeps stats of).
    ///
    /// # Errors
    /// What [`crate::pruning::Pruner::new`] returns for a predicate that does not fit.
    pub fn needed_columns(&self, table: &TableView) -> Result<Vec<LeafColumn>> {
        match &self.workload {
            Some(workload) => needed_columns(table, workload),
            None => Ok(Vec::new()),
        }
    }
}

/// A workload as a workload file's text: `WEIGHT<TAB>PREDICATE` per line (the weight left
/// out when 1). [`Workload::parse`] reads it back to the same queries.
#[must_use]
pub fn workload_text(workload: &Workload) -> String {
    let mut text = String::new();
    for q in &workload.queries {
        if q.weight != 1 {
            text.push_str(&q.weight.to_string());
            text.push('\t');
        }
        text.push_str(&q.predicate.to_string());
        text.push('\n');
    }
    text
}

/// The data columns (not partition columns) the queries of `workload` filter on `table`,
/// each once, in the order the queries name them first.
///
/// # Errors
/// What [`crate::pruning::Pruner::new`] returns for a predicate that does not fit the table.
pub fn needed_columns(table: &TableView, workload: &Workload) -> Result<Vec<LeafColumn>> {
    let mut needed: Vec<LeafColumn> = Vec::new();
    for query in &workload.queries {
        for column in crate::pruning::Pruner::new(table, &query.predicate)?.columns() {
            if column.partition_index.is_none()
                && !needed.iter().any(|l| l.physical == column.physical)
            {
                needed.push(LeafColumn {
                    logical: column.logical.clone(),
                    physical: column.physical.clone(),
                    data_type: column.data_type.clone(),
                });
            }
        }
    }
    Ok(needed)
}

/// The last layout run's commit, newest first within [`MAX_COMMITS_SEARCHED`] commits: the
/// newest OPTIMIZE commit written by delta-layout with a [`COMMIT_INFO_GAIN`] record, as
/// (version, its `commitInfo`). `None` when there is none in reach.
///
/// # Errors
/// [`Error::Delta`] / [`Error::DamagedLog`] when a commit cannot be read.
pub async fn last_layout_run(table: &TableView) -> Result<Option<(u64, serde_json::Value)>> {
    use futures::TryStreamExt as _;
    let mut commits = std::pin::pin!(crate::table::log::newest_first(table));
    let mut read = 0;
    while read < MAX_COMMITS_SEARCHED {
        let Some((version, bytes)) = commits.try_next().await? else {
            break;
        };
        let Some(bytes) = bytes else { break };
        read += 1;
        let Some(info) = CommitEntry::read(table, version, &bytes)?.commit_info else {
            continue;
        };
        if info.get("operation").and_then(serde_json::Value::as_str) == Some("OPTIMIZE")
            && info.get(COMMIT_INFO_GAIN).is_some()
        {
            return Ok(Some((version, info)));
        }
    }
    Ok(None)
}

/// The workload the last layout run recorded, as a measure, when it still fits `table`.
async fn recorded_workload(table: &TableView) -> Result<Option<Measure>> {
    let Some((version, info)) = last_layout_run(table).await? else {
        return Ok(None);
    };
    let Some(text) = info
        .get(COMMIT_INFO_WORKLOAD)
        .and_then(serde_json::Value::as_str)
    else {
        return Ok(None);
    };
    let source = format!("the workload recorded at version {version}");
    let workload = match Workload::parse(text, &source) {
        Ok(workload) => workload,
        Err(e) => {
            log::warn!("{source} cannot be read ({e}): not used");
            return Ok(None);
        }
    };
    if let Err(e) = workload.bind(table) {
        log::warn!("{source} no longer fits the table ({e}): not used");
        return Ok(None);
    }
    Ok(Some(Measure {
        source: MeasureSource::RecordedWorkload,
        workload: Some(Arc::new(workload)),
        recorded_at: Some(version),
    }))
}

/// Bins that commit together (they share input files), and what rewriting them saves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnitGain {
    /// The bins' ids.
    pub bins: Vec<usize>,
    /// Input bytes (each file once).
    pub input_bytes: u64,
    /// Cost per run of the measure of its input files, bytes ([`Scan::cost`]).
    pub before: f64,
    /// Cost per run of the files it is estimated to write, bytes.
    pub after: f64,
}

impl UnitGain {
    /// The saving per run, bytes (negative: the unit makes scans dearer).
    #[must_use]
    pub fn gain(&self) -> f64 {
        self.before - self.after
    }

    /// The saving per run per byte rewritten.
    #[must_use]
    pub fn gain_per_byte(&self) -> f64 {
        #[expect(clippy::cast_precision_loss, reason = "a ratio")]
        let bytes = self.input_bytes.max(1) as f64;
        self.gain() / bytes
    }
}

/// Per unit of a run, whether the files it wrote make a run of `measure` dearer than the
/// files it read ([`Scan::cost`]): `inputs[k]` index `table.files`, `outputs[k]` index
/// `view.files` (the table with the run's files swapped in). Pruning decides file by file,
/// so the run is dearer only if some unit is, and dropping those units leaves a run that is
/// not.
///
/// # Errors
/// [`Error::InvalidWorkload`] for a query that does not fit either table.
pub(crate) fn dearer_units(
    measure: &Measure,
    table: &TableView,
    view: &TableView,
    inputs: &[&[usize]],
    outputs: &[Vec<usize>],
) -> Result<Vec<bool>> {
    let (before, after) = (measure.kept(table)?, measure.kept(view)?);
    Ok(inputs
        .iter()
        .zip(outputs)
        .map(|(inputs, outputs)| {
            cost_per_run(&after, view, outputs.iter().copied())
                > cost_per_run(&before, table, inputs.iter().copied()) * (1.0 + 1e-9)
        })
        .collect())
}

/// Cost per run ([`Scan::cost`]) of the files `files` of `of`: per query (`kept`: whether
/// pruning keeps each file of `of`, and the query's runs), the bytes of the files it scans
/// plus [`DEFAULT_FILE_COST_BYTES`] each, averaged over the runs. The one sum behind every
/// unit's estimate and the guard.
fn cost_per_run(
    kept: &[(Vec<bool>, u64)],
    of: &TableView,
    files: impl Iterator<Item = usize> + Clone,
) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "byte counts and weights")]
    {
        let runs = kept.iter().map(|(_, w)| *w).sum::<u64>().max(1) as f64;
        kept.iter()
            .map(|(kept, weight)| {
                let bytes: f64 = files
                    .clone()
                    .filter(|&i| kept[i])
                    .map(|i| of.files[i].size_bytes as f64 + DEFAULT_FILE_COST_BYTES as f64)
                    .sum();
                *weight as f64 * bytes
            })
            .sum::<f64>()
            / runs
    }
}

/// The units of `plan`: bins grouped by shared input files, in plan order, each a list of
/// positions in [`Plan::bins`].
fn units(plan: &Plan) -> Vec<Vec<usize>> {
    let bins: Vec<&Bin> = plan.bins().collect();
    let mut holder: Vec<usize> = (0..bins.len()).collect();
    fn find(holder: &mut [usize], mut k: usize) -> usize {
        while holder[k] != k {
            holder[k] = holder[holder[k]];
            k = holder[k];
        }
        k
    }
    let mut owner: HashMap<usize, usize> = HashMap::new();
    for (k, bin) in bins.iter().enumerate() {
        for &file in &bin.files {
            if let Some(&other) = owner.get(&file) {
                let (a, b) = (find(&mut holder, k), find(&mut holder, other));
                holder[a.max(b)] = a.min(b);
            } else {
                owner.insert(file, k);
            }
        }
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut slot: HashMap<usize, usize> = HashMap::new();
    for k in 0..bins.len() {
        let root = find(&mut holder, k);
        let at = *slot.entry(root).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[at].push(k);
    }
    groups
}

/// The files a compaction bin writes, as groups of consecutive input files (indices into
/// `table.files`) with each group's expected bytes: [`crate::plan::output_files`] of the
/// bin's expected output, each input dealt to the output that holds its middle byte.
fn compaction_outputs(table: &TableView, bin: &Bin, target: u64) -> Vec<(Vec<usize>, u64)> {
    let cut = crate::plan::output_files(bin.expected_output_bytes.max(1), target);
    let files = usize::try_from(cut.files.max(1)).unwrap_or(usize::MAX);
    let mut groups: Vec<(Vec<usize>, u64)> = vec![(Vec::new(), 0); files];
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "byte shares and a group index"
    )]
    {
        let total = bin.input_bytes.max(1) as f64;
        let mut seen = 0.0;
        for &i in &bin.files {
            let size = table.files[i].size_bytes as f64;
            let group = (((seen + size / 2.0) / total * files as f64) as usize).min(files - 1);
            groups[group].0.push(i);
            seen += size;
        }
        for group in &mut groups {
            let input: u64 = group.0.iter().map(|&i| table.files[i].size_bytes).sum();
            group.1 = (bin.expected_output_bytes as f64 * input as f64 / total).round() as u64;
        }
    }
    groups.retain(|g| !g.0.is_empty());
    groups
}

/// Estimates what each unit of `plan` (of `table`) saves per run of `measure` (see the
/// module docs): compaction bins from the log's stats alone, clustering bins from a seeded
/// sample of their rows, read through `options`' reader settings. Units in plan order.
///
/// # Errors
/// Read errors of the sampled files; [`Error::InvalidWorkload`] for a query that does not
/// fit the table; [`Error::Cancelled`].
pub(crate) async fn estimate(
    table: &TableView,
    plan: &Plan,
    measure: &Measure,
    options: &crate::prepare::OptimizeOptions,
) -> Result<Vec<UnitGain>> {
    let bins: Vec<&Bin> = plan.bins().collect();
    // Per query, whether pruning keeps each file of the table, and the query's runs.
    let kept_in = measure.kept(table)?;
    #[expect(clippy::cast_precision_loss, reason = "byte counts")]
    let per_file = DEFAULT_FILE_COST_BYTES as f64;
    #[expect(clippy::cast_precision_loss, reason = "weights")]
    let runs = measure.runs().max(1) as f64;
    let after: Vec<f64> = match &plan.clustering {
        None => bins
            .iter()
            .map(|bin| {
                compaction_outputs(table, bin, plan.target_file_bytes)
                    .iter()
                    .map(|(inputs, bytes)| {
                        kept_in
                            .iter()
                            .filter(|(kept, _)| inputs.iter().any(|&i| kept[i]))
                            .map(|(_, weight)| {
                                #[expect(clippy::cast_precision_loss, reason = "counts")]
                                let cost = (*weight as f64) * (*bytes as f64 + per_file);
                                cost
                            })
                            .sum::<f64>()
                            / runs
                    })
                    .sum()
            })
            .collect(),
        Some(_) => {
            let outputs = clustered_outputs(table, plan, measure, options).await?;
            // The estimated files beside the table's, so that one analysis prunes them all.
            let mut view = table.clone();
            let mut ranges = Vec::with_capacity(outputs.len());
            for files in outputs {
                let start = view.files.len();
                view.files.extend(files);
                ranges.push(start..view.files.len());
            }
            let kept = measure.kept(&view)?;
            ranges
                .into_iter()
                .map(|range| cost_per_run(&kept, &view, range))
                .collect()
        }
    };
    Ok(units(plan)
        .into_iter()
        .map(|members| {
            let mut files: Vec<usize> = members
                .iter()
                .flat_map(|&k| bins[k].files.iter().copied())
                .collect();
            files.sort_unstable();
            files.dedup();
            // (+ 0.0: a sum of no terms is -0.0.)
            UnitGain {
                bins: members.iter().map(|&k| bins[k].id).collect(),
                input_bytes: files.iter().map(|&i| table.files[i].size_bytes).sum(),
                before: cost_per_run(&kept_in, table, files.iter().copied()) + 0.0,
                after: members.iter().map(|&k| after[k]).sum::<f64>() + 0.0,
            }
        })
        .collect())
}

/// Per bin of a clustering `plan` (in [`Plan::bins`] order), the files it is estimated to
/// write, at full size, with their stats: a seeded sample of about [`ESTIMATE_ROWS`] of the
/// bins' rows, ordered and cut as the rewrite does ([`crate::simulate::estimate`]).
async fn clustered_outputs(
    table: &TableView,
    plan: &Plan,
    measure: &Measure,
    options: &crate::prepare::OptimizeOptions,
) -> Result<Vec<Vec<DataFile>>> {
    use crate::simulate::estimate;
    let mut only = vec![false; table.files.len()];
    for bin in plan.bins() {
        for &i in &bin.files {
            only[i] = true;
        }
    }
    let rows: u64 = plan.bins().filter_map(|b| b.input_rows).sum();
    #[expect(clippy::cast_precision_loss, reason = "a share")]
    let fraction = if rows > ESTIMATE_ROWS {
        ESTIMATE_ROWS as f64 / rows as f64
    } else {
        1.0
    };
    let mut needed = measure.needed_columns(table)?;
    for leaf in plan.layout_leaves(table)? {
        if !needed.iter().any(|l| l.physical == leaf.physical) {
            needed.push(leaf);
        }
    }
    let mut stats_leaves: Vec<LeafColumn> = crate::rewrite::stats::indexed_columns(table)?
        .into_iter()
        .filter(|l| needed.iter().any(|n| n.physical == l.physical))
        .collect();
    for leaf in plan.layout_leaves(table)? {
        if !stats_leaves.iter().any(|l| l.physical == leaf.physical) {
            stats_leaves.push(leaf);
        }
    }
    let mut reader = crate::table::read::Reader::for_table(table)?;
    reader.sample = (fraction < 1.0)
        .then_some((fraction, ESTIMATE_SEED))
        .or(options.sample);
    reader.foreign = options
        .files_of
        .as_ref()
        .map(crate::table::read::Foreign::of);
    reader.cancel = Some(options.cancel.clone());
    let settings = estimate::Settings {
        stats_leaves,
        with_tight_bounds: table
            .protocol
            .effective_features()
            .iter()
            .any(|f| f == "deletionVectors"),
        // Sizes at full scale: each sampled row stands for 1 / fraction rows.
        fraction: 1.0,
        update_fractions: 0,
    };
    let (table, plan, cancel) = (table.clone(), plan.clone(), options.cancel.clone());
    tokio::task::spawn_blocking(move || {
        let rows = estimate::Rows::read(&table, &reader, &needed, &[], ESTIMATE_SEED, Some(&only))?;
        let per_bin = estimate::estimate_bins(&table, &plan, &rows, &settings, &cancel)?;
        Ok(per_bin.into_iter().map(|(files, _)| files).collect())
    })
    .await
    .map_err(|e| Error::TaskFailed {
        task: "estimating",
        source: e,
    })?
}

/// Which units a budgeted run takes ([`select`]), and what it leaves.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Selection {
    /// The measure the savings are per run of.
    pub measure: Option<MeasureSource>,
    /// Cost per run of the table as it is, bytes ([`Scan::cost`]).
    pub cost_before: f64,
    /// Expected saving per run of the units taken, bytes.
    pub expected_gain: f64,
    /// Expected saving per run of every unit that saves anything and passes the least
    /// gain, bytes: what the plan would buy without a byte or time budget. The run's gate
    /// compares it with the table's cost, so a small budget still takes the best bins of a
    /// plan worth running.
    pub gain_available: f64,
    /// Bins and input bytes of the plan before the selection.
    pub bins_planned: u64,
    /// Input bytes of the plan.
    pub bytes_planned: u64,
    /// Bins taken (in the order they run: saving per byte, best first).
    pub bins_taken: Vec<usize>,
    /// Their input bytes.
    pub bytes_taken: u64,
    /// Bins left for a later run by `--max-rewrite-bytes`.
    pub bins_over_budget: u64,
    /// Their input bytes.
    pub bytes_over_budget: u64,
    /// Bins not run because they save less than `--min-gain`.
    pub bins_below_gain: u64,
    /// Their input bytes.
    pub bytes_below_gain: u64,
    /// True when `--min-gain` found nothing worth doing: the run does nothing.
    pub nothing_worth_doing: bool,
    /// Every unit's estimate, in plan order.
    pub units: Vec<UnitGain>,
}

/// Chooses the units a run takes under `budget` (see the module docs); `cost_before` is the
/// table's cost per run ([`Scan::cost`]).
#[must_use]
pub fn select(units: Vec<UnitGain>, cost_before: f64, budget: &Budget) -> Selection {
    let mut selection = Selection {
        cost_before,
        bins_planned: units.iter().map(|u| u.bins.len() as u64).sum(),
        bytes_planned: units.iter().map(|u| u.input_bytes).sum(),
        ..Selection::default()
    };
    let mut order: Vec<&UnitGain> = Vec::new();
    for unit in &units {
        let below = budget
            .min_gain
            .is_some_and(|g| unit.gain() <= 0.0 || unit.gain() < g * unit.before);
        if below {
            selection.bins_below_gain += unit.bins.len() as u64;
            selection.bytes_below_gain += unit.input_bytes;
        } else {
            selection.gain_available += unit.gain().max(0.0);
            order.push(unit);
        }
    }
    // The run's gate: what the plan would buy, whatever slice of it a budget takes now.
    if let Some(g) = budget.min_gain
        && (order.is_empty()
            || selection.gain_available <= 0.0
            || selection.gain_available < g * cost_before)
    {
        selection.nothing_worth_doing = true;
        for unit in order {
            selection.bins_below_gain += unit.bins.len() as u64;
            selection.bytes_below_gain += unit.input_bytes;
        }
        selection.units = units;
        return selection;
    }
    // Best saving per byte first; ties in plan order (a stable sort).
    order.sort_by(|a, b| b.gain_per_byte().total_cmp(&a.gain_per_byte()));
    for unit in order {
        let spent = budget
            .max_rewrite_bytes
            .is_some_and(|max| selection.bytes_taken >= max);
        if spent {
            selection.bins_over_budget += unit.bins.len() as u64;
            selection.bytes_over_budget += unit.input_bytes;
        } else {
            selection.bins_taken.extend(&unit.bins);
            selection.bytes_taken += unit.input_bytes;
            selection.expected_gain += unit.gain();
        }
    }
    selection.units = units;
    selection
}

/// Keeps in `plan` the bins `selection` takes, and drops the partitions left without one.
pub fn apply(plan: &mut Plan, selection: &Selection) {
    let taken: std::collections::HashSet<usize> = selection.bins_taken.iter().copied().collect();
    for partition in &mut plan.partitions {
        partition.bins.retain(|b| taken.contains(&b.id));
    }
    plan.partitions.retain(|p| !p.bins.is_empty());
}

/// What a run's layout scans per run of its measure, before and after.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    /// What it was measured on.
    pub measure: MeasureSource,
    /// Distinct queries of the measure.
    pub queries: usize,
    /// Runs in all of the measure.
    pub runs: u64,
    /// The table as the run read it.
    pub before: Scan,
    /// The table with the run's files swapped in.
    pub after: Scan,
}

impl Figures {
    /// The figures of `measure` on `before` and `after`.
    ///
    /// # Errors
    /// [`Error::InvalidWorkload`] for a query that does not fit either table.
    pub fn of(measure: &Measure, before: &TableView, after: &TableView) -> Result<Self> {
        Ok(Self {
            measure: measure.source,
            queries: measure.queries(),
            runs: measure.runs(),
            before: measure.scan(before)?,
            after: measure.scan(after)?,
        })
    }
}

/// What a run bought, recorded in its commit ([`COMMIT_INFO_GAIN`]) and read back by
/// `history`: per run of its measure, what the table scanned before and after the commit
/// (the files this run saw: the version it read, and that version with the run's files
/// swapped in), and the budget it ran under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GainRecord {
    /// What it was measured on.
    pub measure: MeasureSource,
    /// Distinct queries of the measure.
    pub queries: usize,
    /// Runs in all of the measure.
    pub runs: u64,
    /// Bytes a file opened costs in [`Scan::cost`].
    pub file_cost_bytes: u64,
    /// Per run, before the run.
    pub before: Scan,
    /// Per run, after it.
    pub after: Scan,
    /// Input bytes the run rewrote.
    pub bytes_rewritten: u64,
    /// `--max-rewrite-bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rewrite_bytes: Option<u64>,
    /// `--max-duration`, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_ms: Option<u64>,
    /// `--min-gain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_gain: Option<f64>,
    /// Bins the budget left for a later run (bytes, duration, least gain).
    #[serde(default)]
    pub bins_left: u64,
    /// Their input bytes.
    #[serde(default)]
    pub bytes_left: u64,
}

impl GainRecord {
    /// The record of a run with `figures` that rewrote `bytes_rewritten` input bytes under
    /// `budget`, leaving `bins_left` bins of `bytes_left` bytes.
    #[must_use]
    pub fn new(
        figures: &Figures,
        bytes_rewritten: u64,
        budget: &Budget,
        bins_left: u64,
        bytes_left: u64,
    ) -> Self {
        Self {
            measure: figures.measure,
            queries: figures.queries,
            runs: figures.runs,
            file_cost_bytes: DEFAULT_FILE_COST_BYTES,
            before: figures.before,
            after: figures.after,
            bytes_rewritten,
            max_rewrite_bytes: budget.max_rewrite_bytes,
            max_duration_ms: budget
                .max_duration
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            min_gain: budget.min_gain,
            bins_left,
            bytes_left,
        }
    }

    /// Reads the record of a `commitInfo`, `None` when it has none or it does not parse.
    #[must_use]
    pub fn of_commit_info(commit_info: &serde_json::Value) -> Option<Self> {
        serde_json::from_value(commit_info.get(COMMIT_INFO_GAIN)?.clone()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(id: usize, input_bytes: u64, before: f64, after: f64) -> UnitGain {
        UnitGain {
            bins: vec![id],
            input_bytes,
            before,
            after,
        }
    }

    #[test]
    fn the_budget_takes_the_best_saving_per_byte_and_passes_by_one_unit_at_most() {
        // Savings per byte: 0 -> 1.0, 1 -> 3.0, 2 -> 0.5, 3 -> 2.0, 4 -> -1.0.
        let units = vec![
            unit(0, 100, 300.0, 200.0),
            unit(1, 100, 400.0, 100.0),
            unit(2, 400, 300.0, 100.0),
            unit(3, 50, 150.0, 50.0),
            unit(4, 10, 0.0, 10.0),
        ];
        let budget = Budget::new(Some(120), None, None);
        let s = select(units.clone(), 2000.0, &budget);
        // 1 (100 bytes), then 3 (50: 150 > 120, the one unit past), then nothing.
        assert_eq!(s.bins_taken, [1, 3]);
        assert_eq!(s.bytes_taken, 150);
        assert_eq!((s.bins_over_budget, s.bytes_over_budget), (3, 510));
        assert!((s.expected_gain - 400.0).abs() < 1e-9);
        assert!((s.gain_available - 700.0).abs() < 1e-9);
        assert!(!s.nothing_worth_doing);
        // No budget: everything, best first, the unit that costs more last.
        let s = select(units.clone(), 2000.0, &Budget::default());
        assert_eq!(s.bins_taken, [1, 3, 0, 2, 4]);
        // A gate of 40%: units saving less than 40% of their own cost, or nothing, stay
        // (the three taken save 600 of the table's 1000).
        let s = select(units.clone(), 1000.0, &Budget::new(None, None, Some(0.4)));
        assert_eq!(s.bins_taken, [1, 3, 2]);
        assert_eq!((s.bins_below_gain, s.bytes_below_gain), (2, 110));
        // A small budget under a gate still takes the best unit of a plan worth running:
        // the gate weighs what the plan buys, not the budget's slice of it.
        let s = select(
            units.clone(),
            1000.0,
            &Budget::new(Some(10), None, Some(0.4)),
        );
        assert_eq!(s.bins_taken, [1]);
        assert!(!s.nothing_worth_doing);
        // A run saving less than the gate's share of the table does nothing.
        let s = select(units, 1e9, &Budget::new(None, None, Some(0.05)));
        assert!(s.nothing_worth_doing);
        assert!(s.bins_taken.is_empty());
        assert_eq!(s.bytes_taken, 0);
        assert_eq!(s.bins_below_gain, 5);
        let s = select(Vec::new(), 10.0, &Budget::new(None, None, Some(0.0)));
        assert!(
            s.nothing_worth_doing,
            "an empty plan is nothing worth doing"
        );
    }

    #[test]
    fn a_regression_is_a_dearer_scan() {
        let before = Scan {
            files_scanned: 10.0,
            bytes_scanned: 1000.0,
        };
        let more_files = Scan {
            files_scanned: 10.5,
            bytes_scanned: 500.0,
        };
        let more_bytes = Scan {
            files_scanned: 10.0,
            bytes_scanned: 1001.0,
        };
        // Fewer files for more bytes: cheaper at 4 MiB a file.
        let fewer_files = Scan {
            files_scanned: 9.0,
            bytes_scanned: 1_000_000.0,
        };
        assert!(more_files.regresses(&before));
        assert!(more_bytes.regresses(&before));
        assert!(!fewer_files.regresses(&before));
        assert!(!before.regresses(&before));
        #[expect(clippy::cast_precision_loss, reason = "a test value")]
        let cost = 1000.0 + 10.0 * DEFAULT_FILE_COST_BYTES as f64;
        assert!((before.cost() - cost).abs() < 1e-6);
    }

    #[test]
    fn a_workload_reads_back_from_its_recorded_text() {
        let workload = Workload::parse("3\tx > 5\ny = 'a b'\n2\tz BETWEEN 1 AND 2\n", "w").unwrap();
        let text = workload_text(&workload);
        let again = Workload::parse(&text, "recorded").unwrap();
        assert_eq!(again.queries.len(), 3);
        for (a, b) in workload.queries.iter().zip(&again.queries) {
            assert_eq!(a.predicate, b.predicate);
            assert_eq!(a.weight, b.weight);
        }
    }
}
