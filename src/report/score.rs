//! Scoring a table's layout on a workload: per run of a query, how many files, bytes and rows
//! a Delta reader scans after min/max pruning of its files ([`crate::pruning`]), weighted by
//! how often each query ran. `report --workload` prints it, `optimize --workload` prints it
//! before and after, and `recommend` ranks layouts by it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Analysis;
use crate::error::{Error, Result};
use crate::plan::cuts::TAG_CUT_TREE;
use crate::table::TableView;
use crate::workload::Workload;

/// What one query scans.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryScore {
    /// The predicate, normalized.
    pub predicate: String,
    /// Runs of the query.
    pub weight: u64,
    /// Files min/max pruning keeps.
    pub files_scanned: u64,
    /// Their bytes.
    pub bytes_scanned: u64,
    /// Their live rows (`numRecords` less deleted rows; files without a row count count 0).
    pub rows_scanned: u64,
}

/// The files of one cut tree in the table (by [`TAG_CUT_TREE`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeFiles {
    /// The tree's id.
    pub tree: String,
    /// Files laid out by it.
    pub files: u64,
    /// Distinct leaves those files hold.
    pub leaves: u64,
}

/// A layout's figures on a workload: averages per run (weighted by the queries' runs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadScore {
    /// Distinct queries.
    pub queries: usize,
    /// Runs in all (the sum of the weights).
    pub runs: u64,
    /// Files of the table.
    pub files: u64,
    /// Bytes of the table.
    pub bytes: u64,
    /// Live rows of the table.
    pub rows: u64,
    /// Files scanned per run.
    pub files_scanned: f64,
    /// Bytes scanned per run.
    pub bytes_scanned: f64,
    /// Rows in the scanned files per run.
    pub rows_scanned: f64,
    /// Share of the files a run skips, averaged over runs: `1 - files_scanned / files`.
    pub files_skipped: f64,
    /// Share of the bytes a run skips.
    pub bytes_skipped: f64,
    /// Each query's figures.
    pub per_query: Vec<QueryScore>,
    /// Files laid out by cut trees, per tree.
    pub cut_trees: Vec<TreeFiles>,
}

/// A table's files as the scorer counts them: per file (in the order of `table.files`) its
/// bytes and live rows (`numRecords` less deleted rows; a file without a row count counts 0).
pub(crate) struct ScoredFiles {
    sizes: Vec<u64>,
    rows: Vec<u64>,
}

impl ScoredFiles {
    /// The files of `table`.
    pub(crate) fn of(table: &TableView) -> Self {
        ScoredFiles {
            sizes: table.files.iter().map(|f| f.size_bytes).collect(),
            rows: table
                .files
                .iter()
                .map(|f| f.num_live_rows().unwrap_or(0))
                .collect(),
        }
    }
}

/// What one predicate scans: the files min/max pruning keeps, their bytes and live rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    /// Files kept.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Their live rows.
    pub rows: u64,
}

/// The one scorer: what `predicate` scans of `files` after min/max pruning with `analysis`'s
/// bounds ([`Analysis::may_match`]). `report`, `report --workload`, `sweep` and `recommend`
/// all count through it.
///
/// # Errors
/// What [`Analysis::may_match`] returns for a predicate that does not fit the table.
pub(crate) fn scan(
    analysis: &Analysis<'_>,
    files: &ScoredFiles,
    predicate: &crate::predicate::Predicate,
) -> Result<Scan> {
    let keep = analysis.may_match(predicate)?;
    let mut scan = Scan::default();
    for ((k, size), rows) in keep.iter().zip(&files.sizes).zip(&files.rows) {
        if *k {
            scan.files += 1;
            scan.bytes += size;
            scan.rows += rows;
        }
    }
    Ok(scan)
}

/// Weighted averages per run of a workload's scans.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct PerRun {
    /// Runs in all (the sum of the weights).
    pub runs: u64,
    /// Files scanned per run.
    pub files: f64,
    /// Bytes scanned per run.
    pub bytes: f64,
    /// Rows in the scanned files per run.
    pub rows: f64,
}

/// The averages of `scans` weighted by their runs (0 when there are no runs).
#[expect(clippy::cast_precision_loss, reason = "averages")]
pub(crate) fn per_run(scans: impl IntoIterator<Item = (Scan, u64)>) -> PerRun {
    let mut sum = PerRun::default();
    for (scan, weight) in scans {
        let w = weight as f64;
        sum.runs += weight;
        sum.files += w * scan.files as f64;
        sum.bytes += w * scan.bytes as f64;
        sum.rows += w * scan.rows as f64;
    }
    if sum.runs == 0 {
        return PerRun::default();
    }
    let runs = sum.runs as f64;
    PerRun {
        runs: sum.runs,
        files: sum.files / runs,
        bytes: sum.bytes / runs,
        rows: sum.rows / runs,
    }
}

/// The nearest-rank `percent`th percentile of `sorted` (ascending): the value at rank
/// `ceil(percent / 100 x n)`, at least the first; the default (0) when empty. Source: the
/// nearest-rank method (NIST/SEMATECH e-Handbook, "Percentiles").
pub(crate) fn percentile<T: Copy + Default>(sorted: &[T], percent: usize) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = (percent * sorted.len())
        .div_ceil(100)
        .clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Scores `table`'s files on `workload`.
///
/// # Errors
/// [`Error::InvalidWorkload`] naming the line of a query that does not fit the table.
pub fn score(table: &TableView, workload: &Workload) -> Result<WorkloadScore> {
    // The bounds of every column the queries read, computed once.
    let mut names: Vec<String> = Vec::new();
    for column in workload.bind(table)?.into_iter().flatten() {
        if !names.contains(&column.name) {
            names.push(column.name);
        }
    }
    let analysis = Analysis::new(table, Some(&names))?;
    let files = ScoredFiles::of(table);
    let per_query = workload
        .queries
        .iter()
        .map(|q| {
            let found =
                scan(&analysis, &files, &q.predicate).map_err(|e| Error::InvalidWorkload {
                    file: workload.source.clone(),
                    line: q.line,
                    message: e.to_string(),
                })?;
            Ok(QueryScore {
                predicate: q.predicate.to_string(),
                weight: q.weight,
                files_scanned: found.files,
                bytes_scanned: found.bytes,
                rows_scanned: found.rows,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(summarize(table, per_query))
}

/// The weighted averages of per-query figures over `table`'s files.
#[expect(clippy::cast_precision_loss, reason = "shares")]
fn summarize(table: &TableView, per_query: Vec<QueryScore>) -> WorkloadScore {
    let files = table.files.len() as u64;
    let bytes: u64 = table.files.iter().map(|f| f.size_bytes).sum();
    let rows: u64 = table.files.iter().filter_map(|f| f.num_live_rows()).sum();
    let averages = per_run(per_query.iter().map(|q| {
        let scan = Scan {
            files: q.files_scanned,
            bytes: q.bytes_scanned,
            rows: q.rows_scanned,
        };
        (scan, q.weight)
    }));
    let (runs, files_scanned, bytes_scanned, rows_scanned) =
        (averages.runs, averages.files, averages.bytes, averages.rows);
    let skipped = |scanned: f64, total: u64| {
        if total == 0 {
            0.0
        } else {
            1.0 - scanned / total as f64
        }
    };
    let mut trees: BTreeMap<String, (u64, std::collections::BTreeSet<String>)> = BTreeMap::new();
    for file in &table.files {
        if let Some(id) = file.tags.get(TAG_CUT_TREE).cloned().flatten() {
            let entry = trees.entry(id).or_default();
            entry.0 += 1;
            if let Some(leaf) = file
                .tags
                .get(crate::plan::cuts::TAG_CUT_LEAF)
                .cloned()
                .flatten()
            {
                entry.1.insert(leaf);
            }
        }
    }
    WorkloadScore {
        queries: per_query.len(),
        runs,
        files,
        bytes,
        rows,
        files_scanned,
        bytes_scanned,
        rows_scanned,
        files_skipped: skipped(files_scanned, files),
        bytes_skipped: skipped(bytes_scanned, bytes),
        per_query,
        cut_trees: trees
            .into_iter()
            .map(|(tree, (files, leaves))| TreeFiles {
                tree,
                files,
                leaves: leaves.len() as u64,
            })
            .collect(),
    }
}
