//! `recommend`: the layout a workload asks for, chosen with numbers.
//!
//! # Algorithm
//! 1. The workload ([`crate::workload`]) is split into training and test queries
//!    ([`Workload::split`], seeded by line text): the choice is made on the training queries
//!    and scored on the test queries, so the user sees whether it generalizes.
//! 2. **Candidate columns**: each data column the training queries filter, scored by the
//!    runs that filter it times the share of rows its conjuncts rule out, measured on a
//!    sample of the table's rows ([`crate::filter`]): `score = sum over queries of runs x (1 -
//!    selectivity)`. The best [`RecommendOptions::max_columns`] are kept, best first.
//! 3. **Candidate layouts**: compaction only; a linear sort on the best column (a Hilbert
//!    curve over one column is a plain sort); Z-order and Hilbert curves over the best 2 to
//!    `max_columns` columns; and a cut tree fitted to the training queries
//!    ([`crate::plan::cuts`]); each at every target size (default 64 MiB to 1 GiB).
//! 4. **Estimates**: every candidate's files and their min/max stats are computed from one
//!    read of a seeded sample of the rows, by the machinery of `sweep --estimate`
//!    ([`crate::sweep`]): the same plans, row orders and stats as a build, no Parquet
//!    written. Each is scored on both parts of the workload ([`crate::report::score`]),
//!    and so is the table as it is now.
//! 5. **Ranking** by the training queries' cost per run: the bytes scanned plus
//!    [`RecommendOptions::file_cost_bytes`] for every file opened (a query pays a request's
//!    latency per file, which small files multiply). Ties go to the smaller rewrite, then to
//!    the larger target. The top candidate is the pick, with the exact `optimize` command
//!    line that builds it, unless it rewrites nothing or saves less than
//!    [`RecommendOptions::min_gain`] of the table's cost as it is: the answer is then to
//!    keep the table as it is.
//!
//! Candidates are planned as their command lines run: compaction packs only the files
//! `optimize --target-size` picks; a curve or cut tree as a re-run of `optimize` plans it,
//! so a table already laid out by the same curve over the same columns (or by a recorded
//! tree of the same workload) is left alone unless new files join it; and the files a plan
//! leaves alone stay in the estimate as they are. A rewrite into the layout the table
//! already has is never the pick (it rewrites nothing), so `recommend`, its command, and
//! `recommend` again ends in "keep the table as it is". On a table that declares
//! clustering columns (liquid clustering), `optimize` builds one layout, a Hilbert curve
//! over them, so only that layout is tried, at each target size.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde::Serialize;

use crate::curve::Curve;
use crate::error::{Error, Result};
use crate::filter::RowFilter;
use crate::predicate::Predicate;
use crate::report::score::{WorkloadScore, score};
use crate::simulate::Layout;
use crate::table::TableView;
use crate::workload::Workload;

/// Default target sizes tried: 64 MiB, 128 MiB, 256 MiB, 512 MiB and 1 GiB.
pub const DEFAULT_TARGET_SIZES: [u64; 5] = [64 << 20, 128 << 20, 256 << 20, 512 << 20, 1 << 30];
/// Default number of candidate columns the curves combine: 4.
pub const DEFAULT_MAX_COLUMNS: usize = 4;
/// Default bytes a query pays to open one file: [`crate::gain::DEFAULT_FILE_COST_BYTES`]
/// (4 MiB), the cost a budgeted run ranks bins by.
pub const DEFAULT_FILE_COST_BYTES: u64 = crate::gain::DEFAULT_FILE_COST_BYTES;
/// Default least share of the cost per training run a pick must save: 5%. The estimates
/// are within a few points of builds (BENCHMARKS.md), so a smaller gain may be noise, and a
/// rewrite costs its input bytes.
pub const DEFAULT_MIN_GAIN: f64 = 0.05;
/// Default rows the estimates are made from: tables with more are sampled down to about
/// this many rows.
pub const DEFAULT_ESTIMATE_ROWS: u64 = 2_000_000;

/// Options of [`recommend`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RecommendOptions {
    /// Target file sizes to try, bytes. Defaults to [`DEFAULT_TARGET_SIZES`].
    pub target_sizes: Vec<u64>,
    /// Share of the queries held out to score the pick, in `[0, 1)`. Defaults to
    /// [`crate::workload::DEFAULT_HOLDOUT`].
    pub holdout: f64,
    /// Seed of the split and the row sample. Defaults to
    /// [`crate::workload::DEFAULT_SPLIT_SEED`].
    pub seed: u64,
    /// Share of the rows the estimates read, in `(0, 1]`; `None`: every row up to
    /// [`DEFAULT_ESTIMATE_ROWS`], then a sample of about that many.
    pub sample: Option<f64>,
    /// Candidate columns the curves combine, 1 to [`crate::curve::MAX_DIMENSIONS`].
    /// Defaults to [`DEFAULT_MAX_COLUMNS`].
    pub max_columns: usize,
    /// Bytes a query pays to open one file. Defaults to [`DEFAULT_FILE_COST_BYTES`].
    pub file_cost_bytes: u64,
    /// Least share of the table's cost per training run the pick must save, in `[0, 1)`;
    /// below it [`Recommendation::pick`] is `None`. Defaults to [`DEFAULT_MIN_GAIN`].
    pub min_gain: f64,
    /// Set to stop.
    pub cancel: Arc<AtomicBool>,
}

impl Default for RecommendOptions {
    fn default() -> Self {
        Self {
            target_sizes: DEFAULT_TARGET_SIZES.to_vec(),
            holdout: crate::workload::DEFAULT_HOLDOUT,
            seed: crate::workload::DEFAULT_SPLIT_SEED,
            sample: None,
            max_columns: DEFAULT_MAX_COLUMNS,
            file_cost_bytes: DEFAULT_FILE_COST_BYTES,
            min_gain: DEFAULT_MIN_GAIN,
            cancel: Arc::default(),
        }
    }
}

impl RecommendOptions {
    /// Checks the options on their own.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the setting: no target size, or one below the floor
    /// ([`crate::plan::check_target_bytes`]), a holdout
    /// or least gain outside `[0, 1)`, a sample outside `(0, 1]`, a column count outside 1
    /// to 6.
    pub fn validate(&self) -> Result<()> {
        if self.target_sizes.is_empty() || self.target_sizes.contains(&0) {
            return Err(Error::invalid_option(
                crate::Setting::TargetSizes,
                "needs at least one size, each greater than 0",
            ));
        }
        let floor = crate::plan::target_floor_bytes()?;
        for &bytes in &self.target_sizes {
            crate::plan::check_target_bytes(crate::Setting::TargetSizes, bytes, floor)?;
        }
        if !(0.0..1.0).contains(&self.holdout) {
            return Err(Error::invalid_option(
                crate::Setting::Holdout,
                format!("must be in [0, 1), got {}", self.holdout),
            ));
        }
        if !(0.0..1.0).contains(&self.min_gain) {
            return Err(Error::invalid_option(
                crate::Setting::MinGain,
                format!("must be in [0, 1), got {}", self.min_gain),
            ));
        }
        if let Some(f) = self.sample
            && !(f > 0.0 && f <= 1.0)
        {
            return Err(Error::invalid_option(
                crate::Setting::Sample,
                format!("must be in (0, 1], got {f}"),
            ));
        }
        if !(1..=crate::curve::MAX_DIMENSIONS).contains(&self.max_columns) {
            return Err(Error::invalid_option(
                crate::Setting::CurveColumns(Curve::Hilbert.name()),
                format!(
                    "takes 1 to {} candidate columns, not {}",
                    crate::curve::MAX_DIMENSIONS,
                    self.max_columns
                ),
            ));
        }
        Ok(())
    }
}

/// A column the training queries filter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColumnCandidate {
    /// The column (dotted for nested fields).
    pub column: String,
    /// Runs of the queries that filter it.
    pub runs: u64,
    /// Share of the sampled rows its conjuncts keep, averaged over those runs.
    pub selectivity: f64,
    /// `sum of runs x (1 - selectivity)`: runs' worth of rows a sort on it alone could skip.
    pub score: f64,
}

/// A layout's figures on one part of the workload, per run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figures {
    /// Files scanned.
    pub files_scanned: f64,
    /// Bytes scanned (at the table's full size, not the sample's).
    pub bytes_scanned: f64,
    /// Rows in the scanned files (at full size).
    pub rows_scanned: f64,
    /// Share of the files skipped.
    pub files_skipped: f64,
    /// Share of the bytes skipped.
    pub bytes_skipped: f64,
    /// `bytes_scanned + files_scanned x file_cost_bytes`.
    pub cost: f64,
}

/// One candidate layout at one target size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// The layout: `compact`, `zorder:a,b`, `hilbert:a` (a linear sort), `cuts`.
    pub layout: String,
    /// The target file size, bytes.
    pub target_file_bytes: u64,
    /// Files the layout makes.
    pub files: u64,
    /// Their bytes (estimated, at full size).
    pub bytes: u64,
    /// Input bytes the rewrite reads to reach it.
    pub rewrite_bytes: u64,
    /// Figures on the training queries.
    pub train: Figures,
    /// Figures on the test queries; `None` without test queries.
    pub test: Option<Figures>,
    /// Time to plan and estimate it, milliseconds.
    pub estimate_ms: u64,
}

/// The table as it is, scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Current {
    /// Files.
    pub files: u64,
    /// Figures on the training queries.
    pub train: Figures,
    /// Figures on the test queries.
    pub test: Option<Figures>,
}

/// What [`recommend`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// The table.
    pub table: String,
    /// Its version.
    pub version: u64,
    /// Its files, bytes and live rows.
    pub files: u64,
    /// Bytes.
    pub bytes: u64,
    /// Live rows.
    pub rows: u64,
    /// Share of the rows the estimates read.
    pub sample_fraction: f64,
    /// Training queries and their runs.
    pub train_queries: usize,
    /// Runs of the training queries.
    pub train_runs: u64,
    /// Test queries (held out).
    pub test_queries: usize,
    /// Runs of the test queries.
    pub test_runs: u64,
    /// The holdout share and seed of the split.
    pub holdout: f64,
    /// The seed.
    pub seed: u64,
    /// The least share of the cost per training run the pick had to save.
    pub min_gain: f64,
    /// Bytes a file open costs in [`Figures::cost`].
    pub file_cost_bytes: u64,
    /// The candidate columns, best first.
    pub columns: Vec<ColumnCandidate>,
    /// The table as it is.
    pub current: Current,
    /// The clustering columns the table declares (liquid clustering): the candidates are
    /// then a Hilbert curve over them at each target size, the one layout `optimize` builds
    /// on such a table. `None` for other tables.
    pub declared_clustering_columns: Option<Vec<String>>,
    /// Every candidate, best first (by training cost); none for a table without rows.
    pub candidates: Vec<Candidate>,
    /// The pick, an index into `candidates`: the best candidate, when it rewrites something
    /// and saves at least [`RecommendOptions::min_gain`] of the table's cost per training
    /// run. `None`: keep the table as it is (no candidate gains enough, or doing nothing
    /// ranks first).
    pub pick: Option<usize>,
    /// The `optimize` command that builds the pick; `None` with no pick.
    pub command: Option<String>,
    /// Wall time, milliseconds.
    pub duration_ms: u64,
}

/// Recommends a layout of the table at `location` for `workload` (see the module docs).
/// `names` are the table and the workload file as the user named them, for the command line
/// of the pick. `progress` hears the column scoring ([`crate::progress::Phase::Columns`])
/// and each candidate estimated ([`crate::progress::Phase::Estimate`]). Must be called on a
/// multi-threaded tokio runtime. Writes nothing.
///
/// # Errors
/// [`Error::InvalidOption`] from [`RecommendOptions::validate`];
/// [`Error::InvalidWorkload`] for a query that does not fit the table, or a workload whose
/// training part filters no data column; read errors of the table's files;
/// [`Error::Cancelled`].
pub async fn recommend(
    location: impl Into<crate::table::TableLocation>,
    workload: &Workload,
    names: &CommandNames,
    options: &RecommendOptions,
    progress: Arc<dyn crate::progress::Progress>,
) -> Result<Recommendation> {
    use crate::progress::{Phase, Scope};
    let started = Instant::now();
    options.validate()?;
    let table = TableView::load(location, None).await?;
    workload.bind(&table)?;
    let (train, test) = workload.split(options.holdout, options.seed);
    let totals = table.totals();
    let fraction = sample_fraction(options.sample, totals.rows);

    // 2. Candidate columns, on a row sample of the whole table (none for a table without
    // rows: there is nothing to lay out, so nothing is tried and the answer is to keep it).
    // Rows the log counts as none (every file's `numRecords` less its deleted rows, 0).
    let empty = table.files.iter().all(|f| f.num_live_rows() == Some(0));
    let columns = if empty {
        Vec::new()
    } else {
        let table = table.clone();
        let train = train.clone();
        progress.phase_started(Scope::Run, Phase::Columns, 1);
        let columns = tokio::task::spawn_blocking(move || candidate_columns(&table, &train))
            .await
            .map_err(|e| Error::TaskFailed {
                task: "column",
                source: e,
            })??;
        progress.phase_advanced(Scope::Run, Phase::Columns, 1);
        progress.phase_finished(Scope::Run, Phase::Columns);
        columns
    };
    let best = best_columns(&columns, options.max_columns);
    if best.is_empty() && !empty {
        return Err(no_helpful_column(workload, &test));
    }

    // 3. Candidate layouts: on a table that declares clustering columns, the one layout
    // `optimize` builds there.
    let layouts = candidate_layouts(&table, &best, empty);

    // 4. Estimates, scored.
    let needed = crate::gain::needed_columns(&table, workload)?;
    let cuts_workload = cuts_workload(&table, workload, &train).await?;
    let job = crate::simulate::EstimateJob {
        layouts,
        target_sizes: options.target_sizes.clone(),
        fraction,
        seed: options.seed,
        workload: Some(Arc::new(cuts_workload)),
        needed,
        rewrite_all: false,
        full: false,
        cancel: options.cancel.clone(),
    };
    let current = current(&table, totals.files, &train, &test, options.file_cost_bytes)?;
    let total = job.layouts.len() * job.target_sizes.len();
    progress.phase_started(Scope::Run, Phase::Estimate, total as u64);
    let estimates = crate::simulate::estimate_layouts(table.clone(), &job, &|| {
        progress.phase_advanced(Scope::Run, Phase::Estimate, 1);
    })
    .await?;
    progress.phase_finished(Scope::Run, Phase::Estimate);
    let mut candidates =
        score_estimates(estimates, &train, &test, fraction, options.file_cost_bytes).await?;

    // 5. Ranking.
    candidates.sort_by(|a, b| {
        a.train
            .cost
            .total_cmp(&b.train.cost)
            .then(a.rewrite_bytes.cmp(&b.rewrite_bytes))
            .then(b.target_file_bytes.cmp(&a.target_file_bytes))
            .then(a.layout.cmp(&b.layout))
    });
    let pick = pick(&candidates, &current, options.min_gain);
    let command = pick.map(|i| command_line(names, &candidates[i]));
    Ok(Recommendation {
        table: table.display_location(),
        version: table.version,
        files: totals.files,
        bytes: totals.bytes,
        rows: totals.rows,
        sample_fraction: fraction,
        train_queries: train.queries.len(),
        train_runs: train.total_weight(),
        test_queries: test.queries.len(),
        test_runs: test.total_weight(),
        holdout: options.holdout,
        seed: options.seed,
        min_gain: options.min_gain,
        file_cost_bytes: options.file_cost_bytes,
        columns,
        declared_clustering_columns: table.clustering_columns.clone(),
        current,
        candidates,
        pick,
        command,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

/// The share of the rows the estimates read: `sample` when given, else enough for about
/// [`DEFAULT_ESTIMATE_ROWS`] of the table's `rows` (1 for a table with no more).
#[expect(clippy::cast_precision_loss, reason = "a fraction")]
fn sample_fraction(sample: Option<f64>, rows: u64) -> f64 {
    sample.unwrap_or_else(|| {
        if rows > DEFAULT_ESTIMATE_ROWS {
            DEFAULT_ESTIMATE_ROWS as f64 / rows as f64
        } else {
            1.0
        }
    })
}

/// The names of the best `max_columns` of `columns` (ranked, best first) that score above
/// zero, best first.
fn best_columns(columns: &[ColumnCandidate], max_columns: usize) -> Vec<String> {
    let mut best: Vec<String> = columns
        .iter()
        .filter(|c| c.score > 0.0)
        .map(|c| c.column.clone())
        .collect();
    best.truncate(max_columns);
    best
}

/// The error for a `workload` whose training queries rule out no rows by a data column
/// (naming the `test` queries held out, if any).
fn no_helpful_column(workload: &Workload, test: &Workload) -> Error {
    let held_out = if test.queries.is_empty() {
        String::new()
    } else {
        format!(
            " ({} of its {} queries were held out to test the pick: --holdout 0 chooses on every query)",
            test.queries.len(),
            workload.queries.len()
        )
    };
    Error::InvalidWorkload {
        file: workload.source.clone(),
        line: 0,
        message: format!(
            "has no training query that filters a data column and rules out rows of the table's sample: no layout can help it{held_out}"
        ),
    }
}

/// Step 3: the layouts to try on `table`, `best` being its candidate columns (best first,
/// at least one unless the table is `empty`): none for an empty table; the declared
/// clustering columns' Hilbert curve on a table that declares some; else compaction, a
/// sort on the best column, Z-order and Hilbert curves over the best 2 and more columns,
/// and a cut tree.
fn candidate_layouts(table: &TableView, best: &[String], empty: bool) -> Vec<Layout> {
    match &table.clustering_columns {
        _ if empty => Vec::new(),
        Some(declared) => vec![Layout::Curve {
            curve: Curve::Hilbert,
            columns: declared.clone(),
        }],
        None => {
            let mut layouts = vec![
                Layout::Compact,
                Layout::Curve {
                    curve: Curve::Hilbert,
                    columns: vec![best[0].clone()],
                },
            ];
            for n in 2..=best.len() {
                for curve in Curve::ALL {
                    layouts.push(Layout::Curve {
                        curve,
                        columns: best[..n].to_vec(),
                    });
                }
            }
            layouts.push(Layout::Cuts);
            layouts
        }
    }
}

/// The workload the cut tree candidate is fitted to: the training queries `train`, or the
/// whole `workload` when `table` is laid out by a recorded tree of it.
///
/// # Errors
/// What [`crate::prepare::cut_trees`] returns for the recorded trees.
async fn cuts_workload(
    table: &TableView,
    workload: &Workload,
    train: &Workload,
) -> Result<Workload> {
    // The cut tree is fitted to the training queries, unless the table is laid out by a
    // recorded tree of the whole workload (the one the command line names): then its re-run,
    // which leaves that tree's files alone, is what the command would do.
    let tree_ids: std::collections::BTreeSet<String> = table
        .files
        .iter()
        .filter_map(|f| {
            f.tags
                .get(crate::plan::cuts::TAG_CUT_TREE)
                .cloned()
                .flatten()
        })
        .collect();
    let whole = workload.digest();
    let recorded = crate::prepare::cut_trees(table, &tree_ids).await?;
    Ok(
        if recorded
            .found
            .values()
            .any(|(_, tree)| tree.workload == whole)
        {
            workload.clone()
        } else {
            train.clone()
        },
    )
}

/// The table as it is (`files` files), scored on `train` and, when it has queries, `test`, a
/// file open costing `file_cost_bytes`.
///
/// # Errors
/// What [`score`] returns.
fn current(
    table: &TableView,
    files: u64,
    train: &Workload,
    test: &Workload,
    file_cost_bytes: u64,
) -> Result<Current> {
    let figures =
        |w: &Workload| -> Result<Figures> { Ok(figures(&score(table, w)?, 1.0, file_cost_bytes)) };
    Ok(Current {
        files,
        train: figures(train)?,
        test: (!test.queries.is_empty())
            .then(|| figures(test))
            .transpose()?,
    })
}

/// Each of `estimates` (made from `fraction` of the rows) scored on `train` and, when it has
/// queries, `test`, its sizes scaled to the whole table and a file open costing
/// `file_cost_bytes`: the candidates, in the order of `estimates`.
///
/// # Errors
/// What [`score`] returns; [`Error::Internal`] when a scoring task fails.
async fn score_estimates(
    estimates: Vec<crate::simulate::EstimatedLayout>,
    train: &Workload,
    test: &Workload,
    fraction: f64,
    file_cost_bytes: u64,
) -> Result<Vec<Candidate>> {
    let mut candidates = Vec::with_capacity(estimates.len());
    for estimated in estimates {
        let (train, test) = (train.clone(), test.clone());
        let laid_out = estimated.table.clone();
        let scored = tokio::task::spawn_blocking(move || -> Result<_> {
            let on_train = score(&laid_out, &train)?;
            let on_test = if test.queries.is_empty() {
                None
            } else {
                Some(score(&laid_out, &test)?)
            };
            Ok((on_train, on_test))
        })
        .await
        .map_err(|e| Error::TaskFailed {
            task: "scoring",
            source: e,
        })??;
        // Sizes in the estimate are the sample's: scale to the table.
        let scale = if fraction > 0.0 { 1.0 / fraction } else { 1.0 };
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "a byte count, scaled"
        )]
        let bytes = (scored.0.bytes as f64 * scale).round() as u64;
        candidates.push(Candidate {
            layout: estimated.layout.name(),
            target_file_bytes: estimated.target_file_bytes,
            files: scored.0.files,
            bytes,
            rewrite_bytes: estimated.rewrite_bytes,
            train: figures(&scored.0, scale, file_cost_bytes),
            test: scored
                .1
                .as_ref()
                .map(|s| figures(s, scale, file_cost_bytes)),
            estimate_ms: estimated.build_ms,
        });
    }
    Ok(candidates)
}

/// Step 5's pick among `candidates` (ranked, best first): the first, unless it rewrites
/// nothing (the table as it is, e.g. compaction of a compacted table, ranks first) or saves
/// less than `min_gain` of `current`'s cost per training run; `None` then.
fn pick(candidates: &[Candidate], current: &Current, min_gain: f64) -> Option<usize> {
    let first = candidates.first()?;
    (first.rewrite_bytes > 0 && first.train.cost < current.train.cost * (1.0 - min_gain))
        .then_some(0)
}

/// A score's figures with bytes and rows scaled by `scale` (a sample's up to the table's).
fn figures(score: &WorkloadScore, scale: f64, file_cost_bytes: u64) -> Figures {
    let bytes_scanned = score.bytes_scanned * scale;
    #[expect(clippy::cast_precision_loss, reason = "a cost")]
    let cost = bytes_scanned + score.files_scanned * file_cost_bytes as f64;
    Figures {
        files_scanned: score.files_scanned,
        bytes_scanned,
        rows_scanned: score.rows_scanned * scale,
        files_skipped: score.files_skipped,
        bytes_skipped: score.bytes_skipped,
        cost,
    }
}

/// How the user named the table and the workload file, for the command line of the pick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandNames {
    /// The table, as given (a path or URL).
    pub table: String,
    /// The workload file, as given.
    pub workload: String,
}

/// The `optimize` command that builds `pick`: each argument quoted for a POSIX shell where
/// it needs it.
fn command_line(names: &CommandNames, pick: &Candidate) -> String {
    let quote = |text: &str| {
        if !text.is_empty()
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-:=,@%+".contains(c))
        {
            text.to_string()
        } else {
            format!("'{}'", text.replace('\'', r"'\''"))
        }
    };
    let mut out = format!(
        "delta-layout optimize {} --target-size {}",
        quote(&names.table),
        crate::size::exact_size(pick.target_file_bytes)
    );
    match pick.layout.split_once(':') {
        Some((curve, columns)) => {
            out.push_str(&format!(" --{curve} {}", quote(columns)));
        }
        None if pick.layout == crate::plan::cuts::CUTS_NAME => {
            out.push_str(&format!(" --workload {}", quote(&names.workload)));
        }
        None => {}
    }
    out
}

/// Step 2: the data columns the queries filter, scored (see the module docs), best first.
///
/// # Errors
/// Read errors of the sampled files; [`Error::InvalidWorkload`] for a query that does not
/// fit the table.
fn candidate_columns(table: &TableView, workload: &Workload) -> Result<Vec<ColumnCandidate>> {
    let reader = crate::table::read::Reader::for_table(table)?;
    let files: Vec<usize> = (0..table.files.len()).collect();
    let sample = crate::prepare::tree_sample(table, workload, &files, &reader)?;
    let rows = sample.num_rows();
    // Per column: (runs, runs x selectivity).
    let mut by_column: Vec<(String, u64, f64)> = Vec::new();
    for query in &workload.queries {
        let mut conjuncts = Vec::new();
        split_and(&query.predicate, &mut conjuncts);
        // Each column's conjuncts together (those naming one column only).
        let mut per_column: Vec<(crate::bound::ColumnRef, Vec<Predicate>)> = Vec::new();
        for conjunct in conjuncts {
            let columns = conjunct.columns();
            let [column] = columns.as_slice() else {
                continue;
            };
            let column = crate::bound::ColumnRef::resolve(table, column)?;
            if column.partition_index.is_some() {
                continue;
            }
            match per_column
                .iter_mut()
                .find(|(c, _)| c.physical == column.physical)
            {
                Some((_, list)) => list.push(conjunct.clone()),
                None => per_column.push((column, vec![conjunct.clone()])),
            }
        }
        for (column, list) in per_column {
            let predicate = list
                .into_iter()
                .reduce(|a, b| Predicate::And(Box::new(a), Box::new(b)))
                .ok_or_else(|| Error::Internal("an empty conjunction".into()))?;
            #[expect(clippy::cast_precision_loss, reason = "a share of rows")]
            let selectivity = if rows == 0 {
                1.0
            } else {
                let filter = RowFilter::new(table, &predicate)?;
                let kept = filter.matches(&sample, &[])?.iter().filter(|m| **m).count();
                kept as f64 / rows as f64
            };
            #[expect(clippy::cast_precision_loss, reason = "weights")]
            let weighted = query.weight as f64 * selectivity;
            match by_column
                .iter_mut()
                .find(|(name, _, _)| *name == column.name)
            {
                Some(entry) => {
                    entry.1 += query.weight;
                    entry.2 += weighted;
                }
                None => by_column.push((column.name.clone(), query.weight, weighted)),
            }
        }
    }
    let mut out: Vec<ColumnCandidate> = by_column
        .into_iter()
        .map(|(column, runs, kept)| {
            #[expect(clippy::cast_precision_loss, reason = "weights")]
            let runs_f = runs as f64;
            ColumnCandidate {
                column,
                runs,
                selectivity: if runs == 0 { 1.0 } else { kept / runs_f },
                score: runs_f - kept,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.runs.cmp(&a.runs))
            .then(a.column.cmp(&b.column))
    });
    Ok(out)
}

/// The conjuncts of `predicate` (split on top-level `AND`).
fn split_and<'a>(predicate: &'a Predicate, out: &mut Vec<&'a Predicate>) {
    match predicate {
        Predicate::And(a, b) => {
            split_and(a, out);
            split_and(b, out);
        }
        other => out.push(other),
    }
}
