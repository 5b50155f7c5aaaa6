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
    let sizes: Vec<u64> = table.files.iter().map(|f| f.size_bytes).collect();
    let rows: Vec<u64> = table
        .files
        .iter()
        .map(|f| f.num_live_rows().unwrap_or(0))
        .collect();
    let per_query = workload
        .queries
        .iter()
        .map(|q| {
            let keep = analysis
                .may_match(&q.predicate)
                .map_err(|e| Error::InvalidWorkload {
                    file: workload.source.clone(),
                    line: q.line,
                    message: e.to_string(),
                })?;
            let mut score = QueryScore {
                predicate: q.predicate.to_string(),
                weight: q.weight,
                files_scanned: 0,
                bytes_scanned: 0,
                rows_scanned: 0,
            };
            for ((k, size), r) in keep.iter().zip(&sizes).zip(&rows) {
                if *k {
                    score.files_scanned += 1;
                    score.bytes_scanned += size;
                    score.rows_scanned += r;
                }
            }
            Ok(score)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(summarize(table, per_query))
}

/// The weighted averages of per-query figures over `table`'s files.
#[expect(clippy::cast_precision_loss, reason = "averages")]
fn summarize(table: &TableView, per_query: Vec<QueryScore>) -> WorkloadScore {
    let files = table.files.len() as u64;
    let bytes: u64 = table.files.iter().map(|f| f.size_bytes).sum();
    let rows: u64 = table.files.iter().filter_map(|f| f.num_live_rows()).sum();
    let runs: u64 = per_query.iter().map(|q| q.weight).sum();
    let average = |value: &dyn Fn(&QueryScore) -> u64| -> f64 {
        if runs == 0 {
            return 0.0;
        }
        per_query
            .iter()
            .map(|q| q.weight as f64 * value(q) as f64)
            .sum::<f64>()
            / runs as f64
    };
    let files_scanned = average(&|q| q.files_scanned);
    let bytes_scanned = average(&|q| q.bytes_scanned);
    let rows_scanned = average(&|q| q.rows_scanned);
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
