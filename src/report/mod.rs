//! `report`: how well each column's file ranges are separated and how much min/max data
//! skipping would save, from the Delta log alone (no data file is read).
//!
//! The stages, each pure over a loaded [`TableView`]:
//! 1. [`crate::pruning`]: every file's bounds per column (stats, partition values) and the pruning
//!    decision a Delta reader makes for a predicate (PROTOCOL.md "Per-file Statistics").
//! 2. `model`: the files' [min, max] on one axis per column, the overlap depth and spans,
//!    and the value distribution the stats imply.
//! 3. [`generated`]: seeded predicates drawn from that distribution (equality and ranges of
//!    a given selectivity, conjunctions of two columns), or the user's own predicates;
//!    [`score`] counts what each scans.
//! 4. This module: the figures per column and per predicate, beside the *ideal* (the same
//!    number of files holding equal rows, sorted on that column alone), and the comparison
//!    of two versions.
//!
//! Rendering (terminal, JSON, [`html`]) is kept apart from the figures.

pub mod generated;
pub mod html;
pub(crate) mod model;
pub mod score;

use rayon::prelude::*;
use serde::Serialize;
use serde::ser::SerializeMap;

use crate::bound::{ColumnRef, has_min_max};
use crate::error::{Error, Result};
use crate::inspect::{SizeBucket, size_histogram};
use crate::plan::TargetSource;
use crate::predicate::Predicate;
use crate::pruning::{ColumnFiles, FileBounds, Pruner, RankedBounds, string_prefix_length};
use crate::table::TableView;
use generated::{Query, QueryKind, Workload};
use model::ColumnModel;

/// Default number of generated predicates per column (half equality, half ranges).
pub const DEFAULT_QUERIES: usize = 200;
/// Most generated predicates per column.
pub const MAX_QUERIES: usize = 100_000;
/// Default share of rows a generated range predicate covers.
pub const DEFAULT_SELECTIVITY: f64 = 0.01;
/// Default seed of the generated predicates.
pub const DEFAULT_SEED: u64 = 42;
/// Most files per column drawn in the HTML page (evenly sampled beyond it).
pub const MAX_DRAWN_FILES: usize = 2000;

/// What to compute.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    /// Columns to report on (logical names, dotted for nested fields). `None`: every
    /// partition column and every data column with min/max stats in some file.
    pub columns: Option<Vec<String>>,
    /// Generated predicates per column (half equality, half ranges) and per column pair.
    pub queries: usize,
    /// Share of rows a generated range covers, in (0, 1].
    pub selectivity: f64,
    /// Seed of the generated predicates.
    pub seed: u64,
    /// The user's predicates (`--predicates FILE`), reported one by one.
    pub predicates: Vec<Predicate>,
    /// The target file size for "files below target", bytes; `None`: the table's own
    /// (`delta.targetFileSize`, else autotuned as `optimize` does).
    pub target_file_bytes: Option<u64>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        Self {
            columns: None,
            queries: DEFAULT_QUERIES,
            selectivity: DEFAULT_SELECTIVITY,
            seed: DEFAULT_SEED,
            predicates: Vec::new(),
            target_file_bytes: None,
        }
    }
}

impl ReportOptions {
    /// Checks the options.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming `--queries` or `--selectivity` when out of range.
    pub fn validate(&self) -> Result<()> {
        if self.queries == 0 || self.queries > MAX_QUERIES {
            return Err(Error::invalid_option(
                crate::Setting::Queries,
                format!("must be between 1 and {MAX_QUERIES}, got {}", self.queries),
            ));
        }
        if !(self.selectivity > 0.0 && self.selectivity <= 1.0) {
            return Err(Error::invalid_option(
                crate::Setting::Selectivity,
                format!("must be in (0, 1], got {}", self.selectivity),
            ));
        }
        Ok(())
    }
}

/// Skipping figures over a set of predicates: fractions in [0, 1].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SkipSummary {
    /// Predicates evaluated.
    pub queries: usize,
    /// Average share of files min/max pruning skips.
    pub skipped_files_fraction_avg: f64,
    /// Median of that share.
    pub skipped_files_fraction_p50: f64,
    /// 90th percentile of that share.
    pub skipped_files_fraction_p90: f64,
    /// Average share of bytes skipped.
    pub skipped_bytes_fraction_avg: f64,
    /// Median share of bytes skipped.
    pub skipped_bytes_fraction_p50: f64,
    /// 90th percentile share of bytes skipped.
    pub skipped_bytes_fraction_p90: f64,
    /// Average share of files skipped by the ideal layout for the same predicates: the
    /// same number of files of equal rows, sorted on the column alone (for a conjunction,
    /// the better of its two columns). Equal rows make the byte share equal to it.
    pub ideal_skipped_files_fraction_avg: f64,
}

/// The figures of one column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColumnReport {
    /// Logical name, dotted for nested fields.
    pub column: String,
    /// Delta type.
    pub data_type: String,
    /// Whether it is a partition column (exact bounds from partition values).
    pub partition_column: bool,
    /// Share of files with a min and a max for the column (or an all-null count), [0, 1].
    pub stats_fraction: f64,
    /// Average number of files whose [min, max] holds a value drawn from the column's
    /// distribution (weighted by rows); files without stats count everywhere. 1 is perfect
    /// separation. `None` when no file has bounds.
    pub overlap_depth_avg: Option<f64>,
    /// Most files whose [min, max] share one value, files without stats included.
    pub overlap_depth_max: Option<u64>,
    /// Average (over files with bounds) of (max - min) / (the column's whole range): in
    /// value terms for numbers, dates and timestamps, in rank terms among all files' bounds
    /// for strings and booleans.
    pub span_avg: Option<f64>,
    /// Files whose min equals their max.
    pub files_min_eq_max: u64,
    /// Average share of files skipped, over the equality and range predicates together.
    pub skipped_files_fraction_avg: f64,
    /// Average share of bytes skipped, over both kinds.
    pub skipped_bytes_fraction_avg: f64,
    /// The ideal layout's average share of files skipped, over both kinds.
    pub ideal_skipped_files_fraction_avg: f64,
    /// The ideal layout's average share of bytes skipped (equal to the files' share).
    pub ideal_skipped_bytes_fraction_avg: f64,
    /// Equality on a value drawn from the column's distribution.
    pub equality: SkipSummary,
    /// Ranges covering the report's selectivity of the rows.
    pub range: SkipSummary,
}

/// The figures of one pair of columns: conjunctions of a range on each.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConjunctionReport {
    /// The two columns.
    pub columns: [String; 2],
    /// Skipping over the conjunctions.
    #[serde(flatten)]
    pub skipping: SkipSummary,
}

/// One user predicate's effect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PredicateReport {
    /// The predicate as written back.
    pub predicate: String,
    /// Files a reader opens.
    pub files_scanned: u64,
    /// Files pruning skips.
    pub files_skipped: u64,
    /// Bytes of the scanned files.
    pub bytes_scanned: u64,
    /// Bytes of the skipped files.
    pub bytes_skipped: u64,
}

/// Every file's [min, max] of one column, normalized to [0, 1] and ordered by min, for the
/// HTML picture. At most [`MAX_DRAWN_FILES`] files, evenly sampled.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ColumnLayout {
    /// The column.
    pub column: String,
    /// The drawn files, ordered by min (then max).
    pub ranges: Vec<DrawnRange>,
    /// Files with bounds in all (drawn or not).
    pub files_with_range: usize,
    /// Files without usable bounds.
    pub files_unknown: usize,
    /// Labels of the axis ends (the smallest min, the largest max).
    pub axis_labels: (String, String),
    /// Ticks of the value axis, in position order: (position in [0, 1], the value there
    /// as a literal): the ends, and the values of the column's type nearest to 1/4, 1/2
    /// and 3/4 of the axis (values, or ranks for strings) at their own positions, each
    /// value once; empty without bounds.
    pub axis_ticks: Vec<(f64, String)>,
}

/// One file's bar in a [`ColumnLayout`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DrawnRange {
    /// (min, max) on the axis, in [0, 1].
    pub position: (f64, f64),
    /// The file's path as in the log (decoded).
    pub path: String,
    /// Its min as a literal of the predicate language (`42`, `'text'`).
    pub min: String,
    /// Its max as a literal (a string max may be a cut-off prefix).
    pub max: String,
    /// Live rows; `None` when the log has no row count.
    pub rows: Option<u64>,
    /// The file's size, bytes.
    pub size_bytes: u64,
}

/// A report restricted to the files a `--where` predicate selects.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelectedBy {
    /// The predicate as given.
    pub predicate: String,
    /// How it selected the version's files.
    pub files: crate::plan::PredicateFiles,
}

/// The report of one table version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayoutReport {
    /// Table location.
    pub table: String,
    /// Version reported.
    pub version: u64,
    /// Active files.
    pub files: u64,
    /// Their total size, bytes.
    pub bytes: u64,
    /// Live rows (numRecords minus deleted rows) of the files with a row count.
    pub rows: u64,
    /// Files without `numRecords`.
    pub files_without_row_count: u64,
    /// The target file size, bytes.
    pub target_file_bytes: u64,
    /// Where it comes from.
    pub target_source: TargetSource,
    /// Files below the target size.
    pub files_below_target: u64,
    /// Files within 20% of the target, either way, as `optimize` writes them
    /// ([`crate::plan::near_target`]).
    pub files_near_target: u64,
    /// File-size histogram, power-of-two buckets, empty ones left out.
    pub size_histogram: Vec<SizeBucket>,
    /// Generated predicates per column.
    pub queries: usize,
    /// Share of rows a generated range covers.
    pub selectivity: f64,
    /// Seed of the generated predicates.
    pub seed: u64,
    /// The version whose stats the predicates were drawn from.
    pub workload_version: u64,
    /// Per column, in the order asked (a JSON object keyed by column name).
    #[serde(serialize_with = "as_map")]
    pub columns: Vec<ColumnReport>,
    /// Per pair of `--columns`, conjunctions of ranges.
    pub conjunctions: Vec<ConjunctionReport>,
    /// Per user predicate, in file order.
    pub predicates: Vec<PredicateReport>,
    /// The `--where` predicate the report was restricted to and how it selected files
    /// ([`crate::plan::select_files`]); `None`: every file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selected_by: Option<SelectedBy>,
    /// Per column, the picture's data (not in JSON).
    #[serde(skip)]
    pub layouts: Vec<ColumnLayout>,
}

/// Something named by its column, serialized as an entry of a JSON object.
trait Named {
    fn name(&self) -> &str;
}

impl Named for ColumnReport {
    fn name(&self) -> &str {
        &self.column
    }
}

impl Named for ColumnChange {
    fn name(&self) -> &str {
        &self.column
    }
}

/// A list as a JSON object keyed by column name, in list order.
fn as_map<T: Named + Serialize, S: serde::Serializer>(
    items: &[T],
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(items.len()))?;
    for item in items {
        map.serialize_entry(item.name(), item)?;
    }
    map.end()
}

/// The change of one column's figures from `before` to `after` (after minus before).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColumnChange {
    /// The column.
    pub column: String,
    /// Change of the average overlap depth.
    pub overlap_depth_avg: Option<f64>,
    /// Change of the average span.
    pub span_avg: Option<f64>,
    /// Change of the average share of files skipped.
    pub skipped_files_fraction_avg: f64,
    /// Change of the average share of bytes skipped.
    pub skipped_bytes_fraction_avg: f64,
    /// Change of the range predicates' average share of files skipped.
    pub range_skipped_files_fraction_avg: f64,
}

/// Two versions side by side, measured on one workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportComparison {
    /// The older (`--compare`) version.
    pub before: LayoutReport,
    /// The newer (`--version`) version.
    pub after: LayoutReport,
    /// Change of the file count (after minus before).
    pub files_change: i64,
    /// Change of the total size, bytes.
    pub bytes_change: i64,
    /// Change of the live rows (0 when the layout changed and the data did not).
    pub rows_change: i64,
    /// Per column changes (a JSON object keyed by column name).
    #[serde(serialize_with = "as_map")]
    pub columns: Vec<ColumnChange>,
}

/// A table's files seen through the report's columns: bounds and models, computed once.
pub struct Analysis<'t> {
    table: &'t TableView,
    columns: Vec<ColumnRef>,
    /// Column-major: `bounds[c][f]`.
    bounds: Vec<Vec<FileBounds>>,
    /// `RankedBounds::new(&bounds[c])`, for [`Pruner::prune`].
    ranked: Vec<RankedBounds>,
    models: Vec<ColumnModel>,
    prefix_length: usize,
}

impl<'t> Analysis<'t> {
    /// Resolves the report's columns on `table` and reads every file's bounds.
    ///
    /// # Errors
    /// [`Error::UnknownColumn`] for a column the table lacks, has twice, or cannot order.
    pub fn new(table: &'t TableView, columns: Option<&[String]>) -> Result<Self> {
        let prefix_length = string_prefix_length(table);
        let columns: Vec<ColumnRef> = match columns {
            Some(names) => {
                let mut out: Vec<ColumnRef> = Vec::new();
                for name in names {
                    let path = crate::column::parse_path(name).map_err(|message| {
                        Error::invalid_option(crate::Setting::ReportColumns, message)
                    })?;
                    let column = ColumnRef::resolve(table, &path).map_err(|e| match e {
                        Error::UnknownColumn {
                            column, message, ..
                        } => Error::UnknownColumn {
                            column,
                            setting: Some(crate::Setting::ReportColumns),
                            message,
                        },
                        other => other,
                    })?;
                    if out.iter().any(|c| c.logical == column.logical) {
                        return Err(Error::UnknownColumn {
                            column: name.clone(),
                            setting: Some(crate::Setting::ReportColumns),
                            message: "is named twice".into(),
                        });
                    }
                    out.push(column);
                }
                out
            }
            None => {
                // The columns with bounds in some file, and those bounds.
                let (columns, bounds) = default_columns(table, prefix_length).into_iter().unzip();
                return Ok(Self::of_bounds(table, columns, bounds, prefix_length));
            }
        };
        Ok(Self::of_columns(table, columns, prefix_length))
    }

    /// The analysis of `table` on these resolved columns.
    fn of_columns(table: &'t TableView, columns: Vec<ColumnRef>, prefix_length: usize) -> Self {
        let bounds: Vec<Vec<FileBounds>> = columns
            .par_iter()
            .map(|c| crate::pruning::column_bounds(table, c, prefix_length))
            .collect();
        Self::of_bounds(table, columns, bounds, prefix_length)
    }

    /// The analysis of `table` on these resolved columns, with their bounds in every file.
    fn of_bounds(
        table: &'t TableView,
        columns: Vec<ColumnRef>,
        bounds: Vec<Vec<FileBounds>>,
        prefix_length: usize,
    ) -> Self {
        let ranked = bounds.par_iter().map(|b| RankedBounds::new(b)).collect();
        let rows = file_rows(table);
        let models = columns
            .par_iter()
            .zip(&bounds)
            .map(|(c, b)| ColumnModel::new(&c.data_type, b, &rows))
            .collect();
        Self {
            table,
            columns,
            bounds,
            ranked,
            models,
            prefix_length,
        }
    }

    /// The resolved columns.
    #[must_use]
    pub fn columns(&self) -> &[ColumnRef] {
        &self.columns
    }

    /// Whether min/max pruning keeps each file (parallel to the table's files) for
    /// `predicate`: `false` marks a file a Delta reader skips.
    ///
    /// # Errors
    /// As [`Pruner::new`].
    pub fn may_match(&self, predicate: &Predicate) -> Result<Vec<bool>> {
        let pruner = Pruner::new(self.table, predicate)?;
        Ok(self.prune(&pruner))
    }

    fn prune(&self, pruner: &Pruner) -> Vec<bool> {
        // Bounds of the predicate's columns: the report's own, or read now.
        let owned: Vec<Option<(Vec<FileBounds>, RankedBounds)>> = pruner
            .columns()
            .iter()
            .map(|c| {
                if self.columns.iter().any(|r| r.logical == c.logical) {
                    None
                } else {
                    let bounds: Vec<FileBounds> =
                        crate::pruning::column_bounds(self.table, c, self.prefix_length);
                    let ranked = RankedBounds::new(&bounds);
                    Some((bounds, ranked))
                }
            })
            .collect();
        let columns: Vec<ColumnFiles<'_>> = pruner
            .columns()
            .iter()
            .zip(&owned)
            .map(|(c, own)| match own {
                Some((bounds, ranked)) => ColumnFiles { bounds, ranked },
                None => {
                    let i = self
                        .columns
                        .iter()
                        .position(|r| r.logical == c.logical)
                        .unwrap_or_default();
                    ColumnFiles {
                        bounds: &self.bounds[i],
                        ranked: &self.ranked[i],
                    }
                }
            })
            .collect();
        if columns.is_empty() {
            return vec![pruner.may_match(&[]); self.table.files.len()];
        }
        pruner.prune(&columns)
    }

    /// The generated workload, drawn from this version's stats.
    #[must_use]
    pub fn workload(&self, options: &ReportOptions, pairs: bool) -> Workload {
        Workload::generate(&self.models, &self.columns, options, pairs)
    }
}

/// Builds the report of one version, with predicates drawn from its own stats.
///
/// # Errors
/// [`Error::InvalidOption`] for options out of range; [`Error::UnknownColumn`] /
/// [`Error::InvalidPredicate`] for columns or predicates that do not fit the table.
pub fn report(table: &TableView, options: &ReportOptions) -> Result<LayoutReport> {
    options.validate()?;
    let analysis = Analysis::new(table, options.columns.as_deref())?;
    let workload = analysis.workload(options, options.columns.is_some());
    build(&analysis, &workload, options, table.version)
}

/// Builds the reports of `before` and `after` on one workload, drawn from `after`'s stats,
/// with the changes.
///
/// # Errors
/// As [`report`], for either version.
pub fn compare(
    before: &TableView,
    after: &TableView,
    options: &ReportOptions,
) -> Result<ReportComparison> {
    options.validate()?;
    let after_analysis = Analysis::new(after, options.columns.as_deref())?;
    // The same columns in the older version; a column it does not have yet (schema
    // evolution) is left out of its side.
    let before_columns: Vec<ColumnRef> = after_analysis
        .columns
        .iter()
        .filter_map(|c| ColumnRef::resolve(before, &c.logical).ok())
        .collect();
    let before_analysis =
        Analysis::of_columns(before, before_columns, string_prefix_length(before));
    let workload = after_analysis.workload(options, options.columns.is_some());
    let after_report = build(&after_analysis, &workload, options, after.version)?;
    let before_report = build(&before_analysis, &workload, options, after.version)?;
    let diff = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a - b);
    let columns = after_report
        .columns
        .iter()
        .filter_map(|a| {
            let b = before_report
                .columns
                .iter()
                .find(|b| b.column == a.column)?;
            Some((a, b))
        })
        .map(|(a, b)| ColumnChange {
            column: a.column.clone(),
            overlap_depth_avg: diff(a.overlap_depth_avg, b.overlap_depth_avg),
            span_avg: diff(a.span_avg, b.span_avg),
            skipped_files_fraction_avg: a.skipped_files_fraction_avg - b.skipped_files_fraction_avg,
            skipped_bytes_fraction_avg: a.skipped_bytes_fraction_avg - b.skipped_bytes_fraction_avg,
            range_skipped_files_fraction_avg: a.range.skipped_files_fraction_avg
                - b.range.skipped_files_fraction_avg,
        })
        .collect();
    let signed = |a: u64, b: u64| i64::try_from(i128::from(a) - i128::from(b)).unwrap_or(i64::MAX);
    Ok(ReportComparison {
        files_change: signed(after_report.files, before_report.files),
        bytes_change: signed(after_report.bytes, before_report.bytes),
        rows_change: signed(after_report.rows, before_report.rows),
        before: before_report,
        after: after_report,
        columns,
    })
}

fn build(
    analysis: &Analysis<'_>,
    workload: &Workload,
    options: &ReportOptions,
    workload_version: u64,
) -> Result<LayoutReport> {
    let table = analysis.table;
    let totals = table.totals();
    let (target, target_source) = crate::plan::target_file_bytes(table, options.target_file_bytes)?;
    let sizes: Vec<u64> = table.files.iter().map(|f| f.size_bytes).collect();
    let total_bytes: u64 = sizes.iter().sum();
    let file_count = table.files.len();
    let files = score::ScoredFiles::of(table);

    // Evaluate every generated query on this version.
    // (A query on a column this version lacks is left out: its outcome is never looked up.)
    let outcomes: Vec<Result<QueryOutcome>> = workload
        .queries
        .par_iter()
        .map(|q| {
            if q.columns
                .iter()
                .all(|p| analysis.columns.iter().any(|c| &c.logical == p))
            {
                evaluate(analysis, &files, q, total_bytes)
            } else {
                Ok(QueryOutcome::default())
            }
        })
        .collect();
    let outcomes: Vec<QueryOutcome> = outcomes.into_iter().collect::<Result<_>>()?;

    let columns = analysis
        .columns
        .iter()
        .enumerate()
        .map(|(c, column)| {
            let model = &analysis.models[c];
            let overlap = model.has_data().then(|| model.overlap());
            let of_kind = |kind: QueryKind| -> Vec<&QueryOutcome> {
                workload
                    .queries
                    .iter()
                    .zip(&outcomes)
                    .filter(|(q, _)| q.kind == kind && q.columns == [column.logical.clone()])
                    .map(|(_, o)| o)
                    .collect()
            };
            let equality = summarize(&of_kind(QueryKind::Equality));
            let range = summarize(&of_kind(QueryKind::Range));
            let both: Vec<&QueryOutcome> = of_kind(QueryKind::Equality)
                .into_iter()
                .chain(of_kind(QueryKind::Range))
                .collect();
            let all = summarize(&both);
            let with_stats = analysis.bounds[c]
                .iter()
                .filter(|b| b.has_range() || b.all_null)
                .count();
            ColumnReport {
                column: column.name.clone(),
                data_type: column.data_type.to_string(),
                partition_column: column.partition_index.is_some(),
                stats_fraction: fraction(with_stats, file_count),
                overlap_depth_avg: overlap.map(|o| o.depth_avg),
                overlap_depth_max: overlap.map(|o| o.depth_max),
                span_avg: overlap.map(|o| o.span_avg),
                files_min_eq_max: overlap.map_or(0, |o| o.min_eq_max),
                skipped_files_fraction_avg: all.skipped_files_fraction_avg,
                skipped_bytes_fraction_avg: all.skipped_bytes_fraction_avg,
                ideal_skipped_files_fraction_avg: all.ideal_skipped_files_fraction_avg,
                ideal_skipped_bytes_fraction_avg: all.ideal_skipped_files_fraction_avg,
                equality,
                range,
            }
        })
        .collect();

    let mut conjunctions = Vec::new();
    for pair in workload.pairs() {
        let name = |path: &Vec<String>| {
            analysis
                .columns
                .iter()
                .find(|c| &c.logical == path)
                .map(|c| c.name.clone())
        };
        let (Some(a), Some(b)) = (name(&pair[0]), name(&pair[1])) else {
            continue;
        };
        let of_pair: Vec<&QueryOutcome> = workload
            .queries
            .iter()
            .zip(&outcomes)
            .filter(|(q, _)| q.kind == QueryKind::Conjunction && q.columns == pair.as_slice())
            .map(|(_, o)| o)
            .collect();
        conjunctions.push(ConjunctionReport {
            columns: [a, b],
            skipping: summarize(&of_pair),
        });
    }

    let predicates = predicate_reports(analysis, &files, &options.predicates, total_bytes)?;

    let layouts = analysis
        .columns
        .iter()
        .zip(&analysis.models)
        .zip(&analysis.bounds)
        .map(|((c, m), b)| layout(&c.name, m, b, &table.files))
        .collect();

    Ok(LayoutReport {
        table: table.display_location(),
        version: table.version,
        files: totals.files,
        bytes: totals.bytes,
        rows: totals.rows,
        files_without_row_count: totals.files_without_row_count,
        target_file_bytes: target,
        target_source,
        files_below_target: sizes.iter().filter(|s| **s < target).count() as u64,
        files_near_target: sizes
            .iter()
            .filter(|s| crate::plan::near_target(**s, target))
            .count() as u64,
        size_histogram: size_histogram(&sizes),
        queries: options.queries,
        selectivity: options.selectivity,
        seed: options.seed,
        workload_version,
        columns,
        conjunctions,
        predicates,
        layouts,
        selected_by: None,
    })
}

/// What each of the user's `predicates` scans and skips of the table's files (`--predicates`),
/// in their order.
///
/// # Errors
/// What [`score::scan`] returns for a predicate that does not fit the table.
fn predicate_reports(
    analysis: &Analysis<'_>,
    files: &score::ScoredFiles,
    predicates: &[Predicate],
    total_bytes: u64,
) -> Result<Vec<PredicateReport>> {
    predicates
        .iter()
        .map(|p| {
            let score::Scan {
                files: files_scanned,
                bytes: bytes_scanned,
                ..
            } = score::scan(analysis, files, p)?;
            Ok(PredicateReport {
                predicate: p.to_string(),
                files_scanned,
                files_skipped: analysis.table.files.len() as u64 - files_scanned,
                bytes_scanned,
                bytes_skipped: total_bytes - bytes_scanned,
            })
        })
        .collect()
}

/// One query's result on one version.
#[derive(Debug, Clone, Copy, Default)]
struct QueryOutcome {
    files_fraction: f64,
    bytes_fraction: f64,
    ideal_fraction: f64,
}

/// One generated query on one version, counted by the one scorer ([`score::scan`]).
fn evaluate(
    analysis: &Analysis<'_>,
    files: &score::ScoredFiles,
    query: &Query,
    total_bytes: u64,
) -> Result<QueryOutcome> {
    let scanned = score::scan(analysis, files, &query.predicate)?;
    let n = analysis.table.files.len();
    let skipped = n - usize::try_from(scanned.files).unwrap_or(n);
    let skipped_bytes = total_bytes - scanned.bytes;
    #[expect(clippy::cast_precision_loss, reason = "fractions")]
    Ok(QueryOutcome {
        files_fraction: fraction(skipped, n),
        bytes_fraction: if total_bytes == 0 {
            0.0
        } else {
            skipped_bytes as f64 / total_bytes as f64
        },
        ideal_fraction: query.ideal_skipped_fraction(n),
    })
}

fn summarize(outcomes: &[&QueryOutcome]) -> SkipSummary {
    if outcomes.is_empty() {
        return SkipSummary::default();
    }
    let stats = |f: &dyn Fn(&QueryOutcome) -> f64| {
        let mut v: Vec<f64> = outcomes.iter().map(|o| f(o)).collect();
        v.sort_by(f64::total_cmp);
        #[expect(clippy::cast_precision_loss, reason = "an average")]
        let avg = v.iter().sum::<f64>() / v.len() as f64;
        (avg, score::percentile(&v, 50), score::percentile(&v, 90))
    };
    let (fa, f50, f90) = stats(&|o| o.files_fraction);
    let (ba, b50, b90) = stats(&|o| o.bytes_fraction);
    let (ia, _, _) = stats(&|o| o.ideal_fraction);
    SkipSummary {
        queries: outcomes.len(),
        skipped_files_fraction_avg: fa,
        skipped_files_fraction_p50: f50,
        skipped_files_fraction_p90: f90,
        skipped_bytes_fraction_avg: ba,
        skipped_bytes_fraction_p50: b50,
        skipped_bytes_fraction_p90: b90,
        ideal_skipped_files_fraction_avg: ia,
    }
}

#[expect(clippy::cast_precision_loss, reason = "a fraction")]
fn fraction(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Rows per file for the model's weights: live rows, else the average of the known ones
/// (1 when none is known).
fn file_rows(table: &TableView) -> Vec<f64> {
    let known: Vec<u64> = table
        .files
        .iter()
        .filter_map(|f| f.num_live_rows())
        .collect();
    #[expect(clippy::cast_precision_loss, reason = "weights")]
    let fallback = if known.is_empty() {
        1.0
    } else {
        known.iter().sum::<u64>() as f64 / known.len() as f64
    };
    #[expect(clippy::cast_precision_loss, reason = "weights")]
    table
        .files
        .iter()
        .map(|f| f.num_live_rows().map_or(fallback, |r| r as f64))
        .collect()
}

/// Partition columns, then data columns with an order and min/max stats in some file; with
/// each one's bounds in every file.
fn default_columns(table: &TableView, prefix_length: usize) -> Vec<(ColumnRef, Vec<FileBounds>)> {
    let mut candidates = Vec::new();
    for name in &table.partition_columns {
        if let Ok(c) = ColumnRef::resolve(table, std::slice::from_ref(name)) {
            candidates.push((c, true));
        }
    }
    for leaf in table.data_leaf_columns() {
        if !has_min_max(&leaf.data_type) {
            continue;
        }
        if let Ok(c) = ColumnRef::resolve(table, &leaf.logical) {
            candidates.push((c, false));
        }
    }
    candidates
        .into_par_iter()
        .filter_map(|(c, partition)| {
            let bounds = crate::pruning::column_bounds(table, &c, prefix_length);
            (partition || bounds.iter().any(FileBounds::has_range)).then_some((c, bounds))
        })
        .collect()
}

fn layout(
    name: &str,
    model: &ColumnModel,
    bounds: &[FileBounds],
    files: &[crate::table::DataFile],
) -> ColumnLayout {
    // (file index, min, max) of the files with bounds.
    let mut ranges: Vec<(usize, f64, f64)> = model
        .ranges
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.map(|(a, b)| (i, a, b)))
        .collect();
    let files_with_range = ranges.len();
    let files_unknown = model.unknown.iter().filter(|u| **u).count();
    ranges.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.2.total_cmp(&b.2)));
    let lo = ranges.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    let hi = ranges.iter().map(|r| r.2).fold(f64::NEG_INFINITY, f64::max);
    let width = if hi > lo { hi - lo } else { 1.0 };
    let (labels, ticks) = if ranges.is_empty() {
        ((String::new(), String::new()), Vec::new())
    } else {
        let ends = (
            model.literal(lo, true).to_string(),
            model.literal(hi, false).to_string(),
        );
        // The ends, and between them the values of the column's type nearest to 1/4, 1/2
        // and 3/4 of the axis, each at its own position; a value already ticked once
        // (a narrow axis of whole values) is not ticked again.
        let mut ticks: Vec<(f64, String)> = vec![(0.0, ends.0.clone())];
        for t in [0.25, 0.5, 0.75] {
            let (v, label) = model.tick(lo + t * (hi - lo), hi - lo);
            let position = ((v - lo) / width).clamp(0.0, 1.0);
            let label = label.to_string();
            if position > 0.0 && position < 1.0 && ticks.iter().all(|k| k.1 != label) {
                ticks.push((position, label));
            }
        }
        if ticks.iter().all(|k| k.1 != ends.1) {
            ticks.push((1.0, ends.1.clone()));
        }
        (ends, ticks)
    };
    if ranges.len() > MAX_DRAWN_FILES {
        let step = ranges.len() / MAX_DRAWN_FILES
            + usize::from(!ranges.len().is_multiple_of(MAX_DRAWN_FILES));
        ranges = ranges.into_iter().step_by(step).collect();
    }
    let literal = |v: Option<&crate::value::Typed>| {
        v.map_or_else(
            || "NULL".to_string(),
            |v| model::typed_literal(v).to_string(),
        )
    };
    let ranges = ranges
        .into_iter()
        .map(|(i, a, b)| DrawnRange {
            position: ((a - lo) / width, (b - lo) / width),
            path: files[i].path.clone(),
            min: literal(bounds[i].min.as_ref()),
            max: literal(bounds[i].max.as_ref()),
            rows: files[i].num_live_rows(),
            size_bytes: files[i].size_bytes,
        })
        .collect();
    ColumnLayout {
        column: name.to_string(),
        ranges,
        files_with_range,
        files_unknown,
        axis_labels: labels,
        axis_ticks: ticks,
    }
}
