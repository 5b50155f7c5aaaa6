//! Row tracking: the table's settings and the row ID high-water mark.
//!
//! Source: PROTOCOL.md "Row Tracking". A row's stable ID is its materialized row ID (the
//! hidden column named by `delta.rowTracking.materializedRowIdColumnName`) when not null,
//! else the file's `baseRowId` plus the row's index in the file; its stable commit version
//! is the materialized one, else the file's `defaultRowCommitVersion`. A rewrite that moves
//! rows writes both values into the materialized columns of the new files, gives each new
//! `add` a fresh `baseRowId` above the high-water mark (the `rowIdHighWaterMark` of the
//! `delta.rowTracking` domain), commits the new mark, and sets `defaultRowCommitVersion` to
//! its own version.
//!
//! delta-kernel reads that domain only internally and deltalake not at all, so the mark is
//! read here: the `domainMetadata` actions of the newest checkpoint at or below the version
//! (classic, multi-part, or the top-level file of a v2 checkpoint) and of every commit after
//! it; the last one wins.

use std::collections::BTreeMap;

use deltalake::arrow::array::{Array, AsArray, RecordBatch};
use deltalake::parquet::arrow::ProjectionMask;
use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use deltalake::{ObjectStore, Path};
use futures::TryStreamExt as _;
use object_store::ObjectStoreExt as _;
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// The domain holding the row ID high-water mark.
pub const ROW_TRACKING_DOMAIN: &str = "delta.rowTracking";
/// Table property that enables row tracking (stable row IDs for readers).
pub const PROP_ENABLE_ROW_TRACKING: &str = "delta.enableRowTracking";
/// Table property that suspends row ID assignment.
pub const PROP_ROW_TRACKING_SUSPENDED: &str = "delta.rowTrackingSuspended";
/// Table property naming the materialized row ID column.
pub const PROP_MATERIALIZED_ROW_ID: &str = "delta.rowTracking.materializedRowIdColumnName";
/// Table property naming the materialized row commit version column.
pub const PROP_MATERIALIZED_ROW_COMMIT_VERSION: &str =
    "delta.rowTracking.materializedRowCommitVersionColumnName";
/// The `commitInfo` tag saying the commit preserved stable row IDs and commit versions.
pub const TAG_ROW_TRACKING_PRESERVED: &str = "delta.rowTracking.preserved";

/// Row tracking settings of a table that supports the `rowTracking` feature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RowTracking {
    /// `delta.enableRowTracking` is `true`: stable row IDs are defined and must be kept.
    pub enabled: bool,
    /// `delta.rowTrackingSuspended` is `true`: no row IDs are assigned.
    pub suspended: bool,
    /// The physical name of the materialized row ID column.
    pub row_id_column: Option<String>,
    /// The physical name of the materialized row commit version column.
    pub row_commit_version_column: Option<String>,
    /// The highest fresh row ID assigned so far (`None`: none yet).
    pub high_water_mark: Option<i64>,
}

impl RowTracking {
    /// Reads the settings from table properties; `high_water_mark` is filled by the caller.
    #[must_use]
    pub fn from_properties(properties: &BTreeMap<String, String>) -> Self {
        let flag = |key: &str| {
            properties
                .get(key)
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        };
        Self {
            enabled: flag(PROP_ENABLE_ROW_TRACKING),
            suspended: flag(PROP_ROW_TRACKING_SUSPENDED),
            row_id_column: properties.get(PROP_MATERIALIZED_ROW_ID).cloned(),
            row_commit_version_column: properties
                .get(PROP_MATERIALIZED_ROW_COMMIT_VERSION)
                .cloned(),
            high_water_mark: None,
        }
    }

    /// Whether rewritten rows keep their stable IDs through the materialized columns:
    /// row tracking enabled and not suspended. Returns both column names.
    #[must_use]
    pub fn materialized_columns(&self) -> Option<(&str, &str)> {
        if !self.enabled || self.suspended {
            return None;
        }
        Some((
            self.row_id_column.as_deref()?,
            self.row_commit_version_column.as_deref()?,
        ))
    }

    /// Whether new `add` actions get `baseRowId` and `defaultRowCommitVersion`.
    #[must_use]
    pub fn assigns_row_ids(&self) -> bool {
        !self.suspended
    }
}

/// Reads the row ID high-water mark at `version` (see the module docs).
///
/// # Errors
/// [`Error::DataFile`] naming the log file whose domain metadata cannot be read.
pub(crate) async fn high_water_mark(store: &dyn ObjectStore, version: u64) -> Result<Option<i64>> {
    let log = Path::from("_delta_log");
    let store_error = |path: &Path, e: deltalake::ObjectStoreError| Error::ObjectStore {
        path: path.to_string(),
        source: Box::new(e),
    };
    let entries: Vec<_> = store
        .list(Some(&log))
        .try_collect()
        .await
        .map_err(|e| store_error(&log, e))?;
    // The newest checkpoint at or below `version`: all its files.
    let mut checkpoints: BTreeMap<u64, Vec<Path>> = BTreeMap::new();
    for entry in &entries {
        let Some(name) = entry.location.filename() else {
            continue;
        };
        let Some((number, rest)) = name.split_once('.') else {
            continue;
        };
        let Ok(v) = number.parse::<u64>() else {
            continue;
        };
        if v <= version && rest.starts_with("checkpoint.") {
            checkpoints
                .entry(v)
                .or_default()
                .push(entry.location.clone());
        }
    }
    let mut mark: Option<Option<i64>> = None;
    let start = match checkpoints.into_iter().next_back() {
        Some((v, files)) => {
            for file in files {
                if let Some(found) = checkpoint_domain(store, &file).await? {
                    mark = Some(found);
                }
            }
            v + 1
        }
        None => 0,
    };
    for v in start..=version {
        let path = Path::from(format!("_delta_log/{v:020}.json"));
        let bytes = match store.get(&path).await {
            Ok(got) => got.bytes().await.map_err(|e| store_error(&path, e))?,
            Err(deltalake::ObjectStoreError::NotFound { .. }) => continue,
            Err(e) => return Err(store_error(&path, e)),
        };
        for line in String::from_utf8_lossy(&bytes).lines() {
            if let Some(found) = json_domain(&path, line)? {
                mark = Some(found);
            }
        }
    }
    Ok(mark.flatten())
}

/// The mark a `domainMetadata` line sets: `Some(None)` for a removed domain.
fn json_domain(path: &Path, line: &str) -> Result<Option<Option<i64>>> {
    if !line.contains("domainMetadata") {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(line).map_err(|source| Error::Json {
        context: format!("reading '{path}'"),
        source,
    })?;
    let Some(domain) = value.get("domainMetadata") else {
        return Ok(None);
    };
    if domain.get("domain").and_then(Value::as_str) != Some(ROW_TRACKING_DOMAIN) {
        return Ok(None);
    }
    let removed = domain
        .get("removed")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let configuration = domain
        .get("configuration")
        .and_then(Value::as_str)
        .unwrap_or("");
    parse_mark(path, removed, configuration).map(Some)
}

fn parse_mark(path: &Path, removed: bool, configuration: &str) -> Result<Option<i64>> {
    if removed {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(configuration).map_err(|source| Error::Json {
        context: format!("reading the row ID high-water mark in '{path}'"),
        source,
    })?;
    value
        .get("rowIdHighWaterMark")
        .and_then(Value::as_i64)
        .map(Some)
        .ok_or_else(|| {
            Error::data_file(
                path.as_ref(),
                format!("holds a {ROW_TRACKING_DOMAIN} domain without rowIdHighWaterMark"),
            )
        })
}

/// The row tracking domain in one checkpoint file (Parquet or, for v2, JSON).
async fn checkpoint_domain(store: &dyn ObjectStore, path: &Path) -> Result<Option<Option<i64>>> {
    let store_error = |e: deltalake::ObjectStoreError| Error::ObjectStore {
        path: path.to_string(),
        source: Box::new(e),
    };
    let bytes = store
        .get(path)
        .await
        .map_err(store_error)?
        .bytes()
        .await
        .map_err(store_error)?;
    if path.as_ref().ends_with(".json") {
        let mut found = None;
        for line in String::from_utf8_lossy(&bytes).lines() {
            if let Some(mark) = json_domain(path, line)? {
                found = Some(mark);
            }
        }
        return Ok(found);
    }
    let corrupt = |source: deltalake::parquet::errors::ParquetError| Error::DataFile {
        path: path.to_string(),
        message: "is a checkpoint that cannot be read".into(),
        source: Some(Box::new(source)),
    };
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(corrupt)?;
    let Some(index) = builder
        .schema()
        .fields()
        .iter()
        .position(|f| f.name() == "domainMetadata")
    else {
        return Ok(None);
    };
    let mask = ProjectionMask::roots(builder.parquet_schema(), [index]);
    let reader = builder.with_projection(mask).build().map_err(corrupt)?;
    let mut found = None;
    for batch in reader {
        let batch: RecordBatch = batch.map_err(|e| Error::arrow("reading a checkpoint", e))?;
        let domains = batch.column(0).as_struct();
        let (Some(domain), Some(configuration)) = (
            domains.column_by_name("domain"),
            domains.column_by_name("configuration"),
        ) else {
            continue;
        };
        let removed = domains.column_by_name("removed");
        for row in 0..batch.num_rows() {
            if domains.is_null(row) || domain.is_null(row) {
                continue;
            }
            let name = domain.as_string::<i32>().value(row);
            if name != ROW_TRACKING_DOMAIN {
                continue;
            }
            let is_removed = removed.is_some_and(|r| r.is_valid(row) && r.as_boolean().value(row));
            let text = if configuration.is_null(row) {
                ""
            } else {
                configuration.as_string::<i32>().value(row)
            };
            found = Some(parse_mark(path, is_removed, text)?);
        }
    }
    Ok(found)
}
