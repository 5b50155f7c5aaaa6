//! `history`: the table's OPTIMIZE runs, newest first, from each commit's `commitInfo`, like
//! Databricks' `DESCRIBE HISTORY` limited to OPTIMIZE.
//!
//! Pure part: [`commit_info`] finds the `commitInfo` action of one commit file and
//! [`OptimizeRun::from_commit_info`] reads one out of it. I/O part: [`history`] loads the
//! table (so a path that is not a table fails as every other command does) and reads its
//! commit files, `_delta_log/<version>.json`, newest first ([`crate::table::log`]).
//!
//! Every writer's spelling is read:
//!
//! | field | Spark / Databricks, delta-layout | delta-rs |
//! |---|---|---|
//! | files removed / added | `operationMetrics.numRemovedFiles` / `numAddedFiles` | `numFilesRemoved` / `numFilesAdded` |
//! | bytes removed / added | `operationMetrics.numRemovedBytes` / `numAddedBytes` | `filesRemoved.totalSize` / `filesAdded.totalSize` (a JSON object, or a string holding one) |
//! | clustering columns | `operationParameters.zOrderBy` (a JSON list in a string), else `clusterBy` (liquid clustering) | not written |
//! | curve | `operationParameters.curve` (delta-layout: `zorder`, `hilbert`, `none`) | not written |
//! | read version | `readVersion` | `readVersion` |
//!
//! Metrics may be JSON strings (Spark) or numbers (delta-rs); a metric a writer did not
//! record is `None`, never 0. Source: PROTOCOL.md "Commit Provenance Information" (the
//! content of `commitInfo` is free-form), Delta's `DeltaOperations.Optimize` and
//! `DeltaOperationMetrics.OPTIMIZE` (Spark), deltalake's `optimize::Metrics` (delta-rs).

use chrono::{DateTime, SecondsFormat};
use futures::TryStreamExt as _;
use serde::Serialize;
use serde_json::Value;

use crate::error::Result;
use crate::table::TableView;
use crate::table::log::{self, CommitEntry};

/// The `operation` of a `commitInfo` that this module lists.
pub const OPTIMIZE_OPERATION: &str = "OPTIMIZE";

/// One OPTIMIZE commit, as its `commitInfo` describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OptimizeRun {
    /// The table version the commit created.
    pub version: u64,
    /// The version the run read and rewrote (`readVersion`, written by Spark, Databricks
    /// and delta-layout); `None` when the writer did not record it. Versions between it and
    /// `version` are other writers' commits the run went in beside.
    pub read_version: Option<u64>,
    /// When it was committed: `inCommitTimestamp` when present, else `timestamp`, as ISO 8601
    /// UTC with milliseconds (`2025-02-22T00:49:57.394Z`); `None` when the commit has
    /// neither or it is out of range.
    pub timestamp: Option<String>,
    /// The same instant, milliseconds since the Unix epoch.
    pub timestamp_ms: Option<i64>,
    /// `operation` (always [`OPTIMIZE_OPERATION`]).
    pub operation: String,
    /// Whether the run was an auto compaction (`operationParameters.auto`, Databricks).
    pub auto: bool,
    /// Clustering columns: `zOrderBy`, else `clusterBy`; empty for a compaction.
    pub clustering_columns: Vec<String>,
    /// The curve: the `curve` parameter (`none` is `None`), else `zorder` when `zOrderBy`
    /// is not empty, else `hilbert` when `clusterBy` is not empty (Delta's liquid clustering
    /// orders files along a Hilbert curve), else `None`.
    pub curve: Option<String>,
    /// Files the run removed; `None` when the writer recorded no such metric.
    pub files_removed: Option<u64>,
    /// Files the run added.
    pub files_added: Option<u64>,
    /// Bytes of the removed files.
    pub bytes_removed: Option<u64>,
    /// Bytes of the added files.
    pub bytes_added: Option<u64>,
    /// `engineInfo`: the writer, e.g. `Apache-Spark/3.5.3 Delta-Lake/3.4.0`.
    pub engine_info: Option<String>,
    /// What the run bought, as delta-layout records it ([`crate::gain::COMMIT_INFO_GAIN`]):
    /// files and bytes scanned per run of its measure before and after, and its budget;
    /// `None` for other writers and earlier versions.
    pub gain: Option<crate::gain::GainRecord>,
}

/// A table's OPTIMIZE runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct History {
    /// The table location (a local path for `file://` tables).
    pub table: String,
    /// The runs, newest first.
    pub runs: Vec<OptimizeRun>,
}

impl OptimizeRun {
    /// Reads the run that `commit_info` (the value of a `commitInfo` action) describes, or
    /// `None` when its operation is not [`OPTIMIZE_OPERATION`].
    ///
    /// # Examples
    /// ```
    /// use delta_layout::history::OptimizeRun;
    /// let info = serde_json::json!({
    ///     "timestamp": 1740185397394_i64,
    ///     "operation": "OPTIMIZE",
    ///     "operationParameters": {"zOrderBy": "[\"id\"]"},
    ///     "operationMetrics": {"numRemovedFiles": "2", "numAddedFiles": "1"},
    /// });
    /// let run = OptimizeRun::from_commit_info(2, &info).unwrap();
    /// assert_eq!(run.timestamp.as_deref(), Some("2025-02-22T00:49:57.394Z"));
    /// assert_eq!(run.clustering_columns, ["id"]);
    /// assert_eq!(run.curve.as_deref(), Some("zorder"));
    /// assert_eq!((run.files_removed, run.files_added), (Some(2), Some(1)));
    /// assert_eq!(run.bytes_added, None);
    /// ```
    #[must_use]
    pub fn from_commit_info(version: u64, commit_info: &Value) -> Option<Self> {
        let operation = commit_info.get("operation")?.as_str()?;
        if operation != OPTIMIZE_OPERATION {
            return None;
        }
        let parameters = commit_info.get("operationParameters");
        let parameter = |name: &str| parameters.and_then(|p| p.get(name));
        let z_order_by = parameter("zOrderBy").map(column_list).unwrap_or_default();
        let cluster_by = parameter("clusterBy").map(column_list).unwrap_or_default();
        let curve = match parameter("curve").and_then(text) {
            Some(curve) => Some(curve).filter(|c| c != "none"),
            None if !z_order_by.is_empty() => Some("zorder".to_string()),
            None if !cluster_by.is_empty() => Some("hilbert".to_string()),
            None => None,
        };
        let metrics = commit_info.get("operationMetrics");
        let metric = |name: &str| metrics.and_then(|m| m.get(name)).and_then(number);
        // delta-rs: `filesRemoved` / `filesAdded` are MetricDetails, as an object or a
        // string holding one.
        let total_size = |name: &str| {
            let details = metrics.and_then(|m| m.get(name))?;
            let parsed;
            let details = match details {
                Value::String(s) => {
                    parsed = serde_json::from_str::<Value>(s).ok()?;
                    &parsed
                }
                other => other,
            };
            details.get("totalSize").and_then(number)
        };
        let timestamp_ms = commit_info
            .get("inCommitTimestamp")
            .or_else(|| commit_info.get("timestamp"))
            .and_then(Value::as_i64);
        Some(Self {
            version,
            read_version: commit_info.get("readVersion").and_then(number),
            timestamp: timestamp_ms.and_then(iso_8601),
            timestamp_ms,
            operation: operation.to_string(),
            auto: parameter("auto")
                .and_then(text)
                .is_some_and(|a| a == "true"),
            clustering_columns: if z_order_by.is_empty() {
                cluster_by
            } else {
                z_order_by
            },
            curve,
            files_removed: metric("numRemovedFiles").or_else(|| metric("numFilesRemoved")),
            files_added: metric("numAddedFiles").or_else(|| metric("numFilesAdded")),
            bytes_removed: metric("numRemovedBytes").or_else(|| total_size("filesRemoved")),
            bytes_added: metric("numAddedBytes").or_else(|| total_size("filesAdded")),
            engine_info: commit_info
                .get("engineInfo")
                .and_then(Value::as_str)
                .map(str::to_string),
            gain: crate::gain::GainRecord::of_commit_info(commit_info),
        })
    }
}

/// The `commitInfo` action of one commit file (newline-delimited JSON actions), or `None`
/// when the commit has none (PROTOCOL.md makes it optional).
///
/// # Errors
/// A description of the first line that is not JSON (with its 1-based number), for the
/// caller to name the file.
pub fn commit_info(commit: &[u8]) -> std::result::Result<Option<Value>, String> {
    CommitEntry::parse(0, commit).map(|entry| entry.commit_info)
}

/// The OPTIMIZE runs of the table at `location`, newest first: the newest `limit` runs, or
/// every run when `None`. Commit files are read from the latest version down to version 0,
/// or to the oldest one still in the log (older ones are removed by log clean-up).
///
/// # Errors
/// * As [`TableView::load`]: [`crate::Error::NotADeltaTable`], [`crate::Error::DamagedLog`], ...
/// * [`crate::Error::Delta`] when a commit file cannot be read.
/// * [`crate::Error::DamagedLog`] when a commit file holds a line that is not JSON.
pub async fn history(
    location: impl Into<crate::table::TableLocation>,
    limit: Option<usize>,
) -> Result<History> {
    let table = TableView::load(location, None).await?;
    let mut commits = std::pin::pin!(log::newest_first(&table));
    let mut runs = Vec::new();
    while limit.is_none_or(|n| runs.len() < n) {
        let Some((version, bytes)) = commits.try_next().await? else {
            break;
        };
        // Log clean-up removes the oldest commits first: none below a missing one is left.
        let Some(bytes) = bytes else { break };
        let entry = CommitEntry::read(&table, version, &bytes)?;
        if let Some(run) = entry
            .commit_info
            .and_then(|i| OptimizeRun::from_commit_info(version, &i))
        {
            runs.push(run);
        }
    }
    Ok(History {
        table: table.display_location(),
        runs,
    })
}

/// How much a table's layout has degraded since the last layout run ([`decay`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decay {
    /// The table location.
    pub table: String,
    /// The version measured now (the latest).
    pub version: u64,
    /// The version the last layout run committed.
    pub run_version: u64,
    /// When it was committed (ISO 8601 UTC).
    pub run_timestamp: Option<String>,
    /// Its layout: the curve (`zorder`, `hilbert`, `cuts`) or `none` for a compaction.
    pub layout: String,
    /// What it is measured on: the run's recorded workload, else generated predicates on
    /// its clustering columns (drawn, as the run drew them, from the version it read, or
    /// from the version it committed when the log no longer holds that one), else a full scan (also when
    /// the measure no longer fits the table: a column dropped or renamed since).
    pub measure: crate::gain::MeasureSource,
    /// Distinct queries of the measure.
    pub queries: usize,
    /// Runs in all of the measure.
    pub runs: u64,
    /// What the run recorded as its `after`.
    pub recorded_after: crate::gain::Scan,
    /// Per run, the version the run committed.
    pub after_run: crate::gain::Scan,
    /// Per run, the table now.
    pub now: crate::gain::Scan,
    /// `now / after_run - 1` of files scanned: the share more files a query scans now.
    pub files_scanned_growth: f64,
    /// The same of bytes scanned.
    pub bytes_scanned_growth: f64,
    /// Files of the table now that the run's version did not have (written since).
    pub files_since: u64,
    /// Their bytes.
    pub bytes_since: u64,
    /// Input bytes the same run would rewrite now to restore the layout (its plan, made as
    /// `optimize` makes it: new files, cubes to merge, and bins an earlier budget left);
    /// `None` when it cannot be planned ([`Decay::restore_unknown`] says why).
    pub restore_bytes: Option<u64>,
    /// Bins of that plan.
    pub restore_bins: Option<u64>,
    /// Why the restore is unknown, when it is.
    pub restore_unknown: Option<String>,
}

/// How much the layout of the table at `location` has degraded since the last layout run
/// (the newest OPTIMIZE commit of delta-layout that recorded what it bought,
/// [`crate::gain::last_layout_run`]): files and bytes scanned per run of the run's measure
/// on the version it committed and now, the files written since, and the bytes the same run
/// would rewrite now to restore it (planned as `optimize` plans it: a curve's incremental
/// upkeep, [`crate::plan::cluster`]). `None` when no such run is in reach.
///
/// # Errors
/// As [`TableView::load`] (also of the run's version, when the log no longer holds it);
/// what planning returns; [`crate::Error::InvalidWorkload`] when the measure no longer fits
/// the table.
pub async fn decay(location: impl Into<crate::table::TableLocation>) -> Result<Option<Decay>> {
    use crate::gain::{GainRecord, Measure};
    let location = location.into();
    let now = TableView::load(location.clone(), None).await?;
    let Some((run_version, info)) = crate::gain::last_layout_run(&now).await? else {
        return Ok(None);
    };
    let Some(run) = OptimizeRun::from_commit_info(run_version, &info) else {
        return Ok(None);
    };
    let Some(record) = GainRecord::of_commit_info(&info) else {
        return Ok(None);
    };
    let then = TableView::load(location.clone(), Some(run_version)).await?;
    // Generated predicates are drawn as the run drew them, from the version it read, so
    // `after_run` is what it recorded (less other writers' commits in between); from the
    // version it committed when the log no longer holds the one it read.
    let read = match run.read_version {
        Some(read) if read < run_version => TableView::load(location, Some(read)).await.ok(),
        _ => None,
    };
    let source = format!("the workload recorded at version {run_version}");
    let recorded = info
        .get(crate::gain::COMMIT_INFO_WORKLOAD)
        .and_then(Value::as_str)
        .and_then(
            |text| match crate::workload::Workload::parse(text, &source) {
                Ok(workload) => Some(std::sync::Arc::new(workload)),
                Err(e) => {
                    ::log::warn!("{source} cannot be read ({e}): not used");
                    None
                }
            },
        );
    let measure = match (&recorded, record.measure) {
        (Some(workload), _) => Ok(Measure {
            source: crate::gain::MeasureSource::RecordedWorkload,
            workload: Some(workload.clone()),
            recorded_at: Some(run_version),
        }),
        (None, crate::gain::MeasureSource::FullScan) => Ok(Measure::full_scan()),
        (None, _) => {
            Measure::default_predicates(read.as_ref().unwrap_or(&then), &run.clustering_columns)
        }
    };
    // A measure that no longer fits the table (a column dropped or renamed since) falls
    // back to a full scan, as `optimize` passes over such a recorded workload.
    let scans = |m: &Measure| Ok::<_, crate::Error>((m.scan(&then)?, m.scan(&now)?));
    let (measure, (after_run, current)) = match measure.and_then(|m| scans(&m).map(|s| (m, s))) {
        Ok(found) => found,
        Err(e) => {
            ::log::warn!(
                "the run's measure no longer fits the table ({e}): measured on a full scan"
            );
            let full = Measure::full_scan();
            let found = scans(&full)?;
            (full, found)
        }
    };
    let growth = |now: f64, then: f64| if then > 0.0 { now / then - 1.0 } else { 0.0 };
    let before: std::collections::HashSet<&str> =
        then.files.iter().map(|f| f.path.as_str()).collect();
    let since: Vec<&crate::table::DataFile> = now
        .files
        .iter()
        .filter(|f| !before.contains(f.path.as_str()))
        .collect();
    let layout = run.curve.clone().unwrap_or_else(|| "none".into());
    let request = match layout.as_str() {
        "none" => Some(None),
        crate::plan::cuts::CUTS_NAME => recorded.as_ref().map(|w| {
            Some(crate::plan::cluster::ClusterRequest::cuts(
                w.as_ref().clone(),
            ))
        }),
        curve => crate::curve::Curve::parse(curve).map(|curve| {
            Some(crate::plan::cluster::ClusterRequest::new(
                curve,
                run.clustering_columns.clone(),
            ))
        }),
    };
    let target = info
        .get("operationParameters")
        .and_then(|p| p.get("targetSize"))
        .and_then(number);
    let (restore_bytes, restore_bins, restore_unknown) = match request {
        Some(request) => {
            let plan = crate::plan::PlanOptions::default()
                .with_target_file_bytes(target)
                .with_clustering(request);
            let options = crate::prepare::OptimizeOptions::default().with_plan(plan);
            match crate::prepare::plan_sized(&now, &options).await {
                Ok(plan) => (
                    Some(plan.input_bytes()),
                    Some(plan.bins().count() as u64),
                    None,
                ),
                Err(e) => (
                    None,
                    None,
                    Some(format!("the run cannot be planned now: {e}")),
                ),
            }
        }
        None => (
            None,
            None,
            Some("the run's cut tree workload was not recorded".to_string()),
        ),
    };
    Ok(Some(Decay {
        table: now.display_location(),
        version: now.version,
        run_version,
        run_timestamp: run.timestamp,
        layout,
        measure: measure.source,
        queries: measure.queries(),
        runs: measure.runs(),
        recorded_after: record.after,
        after_run,
        now: current,
        files_scanned_growth: growth(current.files_scanned, after_run.files_scanned),
        bytes_scanned_growth: growth(current.bytes_scanned, after_run.bytes_scanned),
        files_since: since.len() as u64,
        bytes_since: since.iter().map(|f| f.size_bytes).sum(),
        restore_bytes,
        restore_bins,
        restore_unknown,
    }))
}

/// A column list: a JSON list in a string (`"[\"a\",\"b\"]"`, as Spark writes
/// `zOrderBy`) or a JSON list.
fn column_list(value: &Value) -> Vec<String> {
    let parsed;
    let list = match value {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v) => {
                parsed = v;
                &parsed
            }
            Err(_) => return Vec::new(),
        },
        other => other,
    };
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A parameter as text: a string as is, a boolean or number written out.
fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(_) | Value::Number(_) => Some(value.to_string()),
        _ => None,
    }
}

/// A non-negative count: a JSON number or a string holding one.
fn number(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Milliseconds since the Unix epoch as ISO 8601 UTC with milliseconds.
fn iso_8601(ms: i64) -> Option<String> {
    DateTime::from_timestamp_millis(ms).map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_every_writers_spelling() {
        struct Case {
            name: &'static str,
            info: Value,
            expected: Option<OptimizeRun>,
        }
        impl Case {
            fn run(self) {
                let Self {
                    name,
                    info,
                    expected,
                } = self;
                assert_eq!(
                    OptimizeRun::from_commit_info(7, &info),
                    expected,
                    "case {name}"
                );
            }
        }
        let run = |curve: Option<&str>, columns: &[&str]| OptimizeRun {
            version: 7,
            read_version: None,
            timestamp: Some("2025-02-22T00:49:57.394Z".into()),
            timestamp_ms: Some(1_740_185_397_394),
            operation: "OPTIMIZE".into(),
            auto: false,
            clustering_columns: columns.iter().map(|c| (*c).to_string()).collect(),
            curve: curve.map(str::to_string),
            files_removed: Some(2),
            files_added: Some(1),
            bytes_removed: Some(904),
            bytes_added: Some(452),
            engine_info: Some("Apache-Spark/3.5.3 Delta-Lake/3.4.0-SNAPSHOT".into()),
            gain: None,
        };
        let spark_metrics = json!({
            "numRemovedFiles": "2", "numAddedFiles": "1",
            "numRemovedBytes": "904", "numAddedBytes": "452", "p50FileSize": "452"
        });
        let engine = "Apache-Spark/3.5.3 Delta-Lake/3.4.0-SNAPSHOT";
        for case in [
            Case {
                name: "spark zorder",
                info: json!({
                    "timestamp": 1_740_185_397_394_i64, "operation": "OPTIMIZE",
                    "operationParameters": {"predicate": "[]", "zOrderBy": "[\"id\"]",
                                            "clusterBy": "[]", "auto": false},
                    "operationMetrics": spark_metrics, "engineInfo": engine,
                    "readVersion": 6
                }),
                expected: Some(OptimizeRun {
                    read_version: Some(6),
                    ..run(Some("zorder"), &["id"])
                }),
            },
            Case {
                name: "delta-layout hilbert, numbers as JSON numbers",
                info: json!({
                    "timestamp": 1_740_185_397_394_i64, "operation": "OPTIMIZE",
                    "operationParameters": {"zOrderBy": "[\"a\",\"b\"]", "curve": "hilbert"},
                    "operationMetrics": {"numRemovedFiles": 2, "numAddedFiles": 1,
                                         "numRemovedBytes": 904, "numAddedBytes": 452},
                    "engineInfo": engine
                }),
                expected: Some(run(Some("hilbert"), &["a", "b"])),
            },
            Case {
                name: "delta-layout compaction: curve none",
                info: json!({
                    "timestamp": 1_740_185_397_394_i64, "operation": "OPTIMIZE",
                    "operationParameters": {"zOrderBy": "[]", "curve": "none"},
                    "operationMetrics": spark_metrics, "engineInfo": engine
                }),
                expected: Some(run(None, &[])),
            },
            Case {
                name: "liquid clustering: clusterBy",
                info: json!({
                    "timestamp": 1_740_185_397_394_i64, "operation": "OPTIMIZE",
                    "operationParameters": {"zOrderBy": "[]", "clusterBy": "[\"id\"]"},
                    "operationMetrics": spark_metrics, "engineInfo": engine
                }),
                expected: Some(run(Some("hilbert"), &["id"])),
            },
            Case {
                name: "delta-rs: numFiles* and MetricDetails strings; inCommitTimestamp first",
                info: json!({
                    "timestamp": 1, "inCommitTimestamp": 1_740_185_397_394_i64,
                    "operation": "OPTIMIZE",
                    "operationParameters": {"predicate": "[]", "targetSize": "104857600"},
                    "operationMetrics": {
                        "numFilesAdded": 1, "numFilesRemoved": 2,
                        "filesAdded": "{\"avg\":452.0,\"max\":452,\"min\":452,\"totalFiles\":1,\"totalSize\":452}",
                        "filesRemoved": {"avg": 452.0, "max": 452, "min": 452, "totalFiles": 2, "totalSize": 904}
                    },
                    "engineInfo": engine
                }),
                expected: Some(run(None, &[])),
            },
            Case {
                name: "not an optimize",
                info: json!({"timestamp": 1, "operation": "WRITE"}),
                expected: None,
            },
            Case {
                name: "no operation",
                info: json!({"timestamp": 1}),
                expected: None,
            },
        ] {
            case.run();
        }
    }

    #[test]
    fn missing_metrics_are_none_and_auto_is_read() {
        let info = json!({
            "operation": "OPTIMIZE",
            "operationParameters": {"auto": true, "zOrderBy": "not json"},
        });
        let run = OptimizeRun::from_commit_info(3, &info).unwrap();
        assert!(run.auto);
        assert_eq!(run.timestamp, None);
        assert!(run.clustering_columns.is_empty());
        assert_eq!(run.curve, None);
        assert_eq!(
            (
                run.files_removed,
                run.files_added,
                run.bytes_removed,
                run.bytes_added
            ),
            (None, None, None, None)
        );
        assert_eq!(run.engine_info, None);
    }

    #[test]
    fn commit_info_is_found_on_any_line_and_bad_lines_are_named() {
        let commit =
            b"{\"add\":{\"path\":\"a\"}}\n\n{\"commitInfo\":{\"operation\":\"OPTIMIZE\"}}\n";
        assert_eq!(
            commit_info(commit).unwrap(),
            Some(json!({"operation": "OPTIMIZE"}))
        );
        assert_eq!(commit_info(b"{\"add\":{\"path\":\"a\"}}\n").unwrap(), None);
        let error = commit_info(b"{\"add\":{\"path\":\"a\"}}\nnot json\n").unwrap_err();
        assert!(
            error.starts_with("has a line that is not JSON (line 2"),
            "{error}"
        );
    }
}
