//! UniForm: a Delta table that Iceberg readers also read, through Iceberg metadata that Delta
//! writers generate beside the log.
//!
//! Two things follow for a tool that rewrites files with `dataChange=false`:
//!
//! * **The writer rules of IcebergCompatV1 and V2** (PROTOCOL.md "Iceberg Compatibility V1",
//!   "Iceberg Compatibility V2"), checked by [`writer_rule_fault`] before anything is written
//!   and followed by the writer: column mapping `name` or `id` with Parquet field ids (also on
//!   the `element`, `key` and `value` of arrays and maps, from
//!   `delta.columnMapping.nested.ids`), the partition columns materialized in every data file,
//!   `numRecords` in every `add`'s stats, timestamps as INT64, no deletion vectors, and only
//!   the types Iceberg has.
//! * **The Iceberg metadata** (`metadata/*.metadata.json` under the table root, where Delta's
//!   converter writes it; each names the Delta version it describes in its property
//!   `delta-version`, delta-io/delta `IcebergConverter`). delta-layout does not regenerate it:
//!   the next Delta writer with UniForm on converts every commit since that version, ours
//!   included (a commit of removes and adds with `dataChange=false` becomes an Iceberg
//!   `replace` snapshot). Until then Iceberg readers read the snapshot of `delta-version`:
//!   its files are the ones a rewrite removed, which hold the same rows, so they see neither
//!   missing nor duplicated rows as long as those files exist. [`IcebergView`] states how
//!   stale the view is, and `vacuum` keeps every file of that version and the `metadata`
//!   directory itself (as Delta Spark's vacuum hides it).
//!
//! Why not regenerate: the Iceberg metadata of a UniForm table is written by Delta's
//! converter (Avro manifests, a manifest list, a `metadata.json`) and its pointer is kept in a
//! catalog (Hive Metastore, Unity Catalog) that this tool does not talk to; a `metadata.json`
//! written here would not be the one Iceberg readers are pointed at, and two writers of
//! Iceberg snapshots for one table would have to agree on its history.

use std::collections::BTreeMap;

use deltalake::kernel::{DataType, PrimitiveType, StructField, StructType};
use futures::TryStreamExt as _;
use object_store::ObjectStoreExt as _;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::table::TableView;
use crate::table::features::ProtocolInfo;
use crate::table::schema::{ColumnMappingMode, nested_ids_fault};

/// Table property that turns IcebergCompatV1 on.
pub const PROP_ICEBERG_COMPAT_V1: &str = "delta.enableIcebergCompatV1";
/// Table property that turns IcebergCompatV2 on.
pub const PROP_ICEBERG_COMPAT_V2: &str = "delta.enableIcebergCompatV2";
/// Table property listing the formats UniForm generates metadata for (`iceberg`, `hudi`).
pub const PROP_UNIVERSAL_FORMATS: &str = "delta.universalFormat.enabledFormats";
/// Table property that turns IcebergWriterCompatV1 on.
pub const PROP_ICEBERG_WRITER_COMPAT_V1: &str = "delta.enableIcebergWriterCompatV1";
/// Table property that turns deletion vectors on.
pub const PROP_DELETION_VECTORS: &str = "delta.enableDeletionVectors";
/// The directory, under the table root, where Delta's converter writes Iceberg metadata.
pub const METADATA_DIRECTORY: &str = "metadata";
/// The Iceberg table property naming the Delta version a `metadata.json` describes
/// (delta-io/delta `IcebergConverter.DELTA_VERSION_PROPERTY`).
pub const DELTA_VERSION_PROPERTY: &str = "delta-version";

/// Which Iceberg compatibility a table has active: the feature in the protocol and its
/// property `true` (PROTOCOL.md: "supported and active").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum IcebergCompat {
    /// `icebergCompatV1`, property [`PROP_ICEBERG_COMPAT_V1`].
    V1,
    /// `icebergCompatV2`, property [`PROP_ICEBERG_COMPAT_V2`].
    V2,
}

impl IcebergCompat {
    /// The feature name, as the protocol spells it.
    #[must_use]
    pub fn feature(self) -> &'static str {
        match self {
            Self::V1 => "icebergCompatV1",
            Self::V2 => "icebergCompatV2",
        }
    }

    fn property(self) -> &'static str {
        match self {
            Self::V1 => PROP_ICEBERG_COMPAT_V1,
            Self::V2 => PROP_ICEBERG_COMPAT_V2,
        }
    }
}

fn is_true(properties: &BTreeMap<String, String>, key: &str) -> bool {
    properties
        .get(key)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The Iceberg compatibilities active on a table (both only in a table that breaks the rule
/// that V2 requires V1 inactive, which [`writer_rule_fault`] refuses).
#[must_use]
pub fn active_compat(
    protocol: &ProtocolInfo,
    properties: &BTreeMap<String, String>,
) -> Vec<IcebergCompat> {
    let features = protocol.effective_features();
    [IcebergCompat::V1, IcebergCompat::V2]
        .into_iter()
        .filter(|c| features.iter().any(|f| f == c.feature()) && is_true(properties, c.property()))
        .collect()
}

/// Whether UniForm generates Iceberg metadata for the table (`iceberg` among
/// [`PROP_UNIVERSAL_FORMATS`], as Delta Spark's `UniversalFormat.icebergEnabled` decides).
#[must_use]
pub fn uniform_iceberg(properties: &BTreeMap<String, String>) -> bool {
    properties.get(PROP_UNIVERSAL_FORMATS).is_some_and(|v| {
        v.split(',')
            .any(|f| f.trim().eq_ignore_ascii_case("iceberg"))
    })
}

/// The first writer rule of the table's active Iceberg compatibility that the table itself
/// breaks, so that no file this tool writes could follow it, as a message naming the rule and
/// the column or property; `None` when there is none (or no compatibility is active).
/// Source: PROTOCOL.md "Writer Requirements for IcebergCompatV1" and "... V2"; for
/// `icebergWriterCompatV1`, its RFC (delta-io/delta
/// `protocol_rfcs/iceberg-writer-compat-v1.md`).
#[must_use]
pub fn writer_rule_fault(table: &TableView) -> Option<String> {
    let active = active_compat(&table.protocol, &table.properties);
    if active.len() > 1 {
        return Some(format!(
            "icebergCompatV2 requires icebergCompatV1 inactive, and both are on ({PROP_ICEBERG_COMPAT_V1}, {PROP_ICEBERG_COMPAT_V2})"
        ));
    }
    let compat = *active.first()?;
    let name = compat.feature();
    if table.column_mapping == ColumnMappingMode::None {
        return Some(format!(
            "{name} requires column mapping (delta.columnMapping.mode 'name' or 'id'), which the table does not have"
        ));
    }
    let dv_feature = table
        .protocol
        .effective_features()
        .iter()
        .any(|f| f == "deletionVectors");
    match compat {
        IcebergCompat::V1 if dv_feature => {
            return Some(format!(
                "{name} requires the deletionVectors feature absent from the protocol, and the table has it"
            ));
        }
        IcebergCompat::V2 if dv_feature && is_true(&table.properties, PROP_DELETION_VECTORS) => {
            return Some(format!(
                "{name} requires deletion vectors inactive, and {PROP_DELETION_VECTORS} is true"
            ));
        }
        _ => {}
    }
    if let Some(column) = first_type_fault(&table.schema, compat) {
        return Some(column);
    }
    nested_ids_fault(&table.schema, compat == IcebergCompat::V2)
        .or_else(|| writer_compat_fault(table, compat))
}

/// Features a table with IcebergWriterCompatV1 active may have (RFC "IcebergWriterCompatV1",
/// delta-io/delta `protocol_rfcs/iceberg-writer-compat-v1.md`, "Allowed Supported list of
/// features").
const WRITER_COMPAT_ALLOWED: &[&str] = &[
    "appendOnly",
    "columnMapping",
    "icebergWriterCompatV1",
    "icebergCompatV2",
    "domainMetadata",
    "vacuumProtocolCheck",
    "v2Checkpoint",
    "inCommitTimestamp",
    "clustering",
    "timestampNtz",
    "typeWidening",
];

/// Features such a table may list but not have active, each with the property that would
/// make it active (the legacy ones with column metadata are checked by their keys).
const WRITER_COMPAT_INACTIVE: &[(&str, Option<&str>)] = &[
    ("invariants", None),
    ("changeDataFeed", Some("delta.enableChangeDataFeed")),
    ("checkConstraints", None),
    ("identityColumns", None),
    ("generatedColumns", None),
    ("rowTracking", Some("delta.enableRowTracking")),
];

/// The first rule of IcebergWriterCompatV1 (active: the feature listed and
/// [`PROP_ICEBERG_WRITER_COMPAT_V1`] true) the table breaks: IcebergCompatV2 active, column
/// mapping `id`, every physical name `col-<id>`, no byte or short column, and only the
/// features its RFC allows (the legacy ones inactive).
fn writer_compat_fault(table: &TableView, compat: IcebergCompat) -> Option<String> {
    let features = table.protocol.effective_features();
    if !features.iter().any(|f| f == "icebergWriterCompatV1")
        || !is_true(&table.properties, PROP_ICEBERG_WRITER_COMPAT_V1)
    {
        return None;
    }
    let name = "icebergWriterCompatV1";
    if compat != IcebergCompat::V2 {
        return Some(format!("{name} requires icebergCompatV2 active"));
    }
    if table.column_mapping != ColumnMappingMode::Id {
        return Some(format!(
            "{name} requires column mapping mode 'id' (delta.columnMapping.mode)"
        ));
    }
    for feature in &features {
        if WRITER_COMPAT_ALLOWED.contains(&feature.as_str()) {
            continue;
        }
        match WRITER_COMPAT_INACTIVE.iter().find(|(f, _)| f == feature) {
            None => return Some(format!("{name} does not allow the feature {feature}")),
            Some((_, Some(property))) if is_true(&table.properties, property) => {
                return Some(format!(
                    "{name} requires {feature} inactive, and {property} is true"
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(key) = table
        .properties
        .keys()
        .find(|k| k.starts_with("delta.constraints."))
    {
        return Some(format!(
            "{name} requires CHECK constraints inactive, and the table has {key}"
        ));
    }
    fn walk(fields: &mut dyn Iterator<Item = &StructField>, path: &[String]) -> Option<String> {
        for field in fields {
            let mut p = path.to_vec();
            p.push(field.name().clone());
            let column = crate::column::format_path(&p);
            let metadata = field.metadata();
            if let Some(key) = [
                "delta.invariants",
                "delta.generationExpression",
                "delta.identity.start",
                "delta.identity.step",
                "delta.identity.highWaterMark",
                "delta.identity.allowExplicitInsert",
            ]
            .into_iter()
            .find(|k| metadata.contains_key(*k))
            {
                return Some(format!(
                    "icebergWriterCompatV1 does not allow column '{column}' to have {key}"
                ));
            }
            let id = match metadata.get("delta.columnMapping.id") {
                Some(deltalake::kernel::MetadataValue::Number(n)) => Some(*n),
                _ => None,
            };
            let physical = crate::table::schema::physical_name(field, ColumnMappingMode::Id);
            if id.is_none_or(|id| physical != format!("col-{id}")) {
                return Some(format!(
                    "icebergWriterCompatV1 requires the physical name of column '{column}' to be col-<its column mapping id>, and it is '{physical}'"
                ));
            }
            if small_integers(field.data_type()) {
                return Some(format!(
                    "icebergWriterCompatV1 does not allow column '{column}' of type {}",
                    field.data_type()
                ));
            }
            if let Some(found) = walk_type(field.data_type(), &p) {
                return Some(found);
            }
        }
        None
    }
    fn walk_type(data_type: &DataType, path: &[String]) -> Option<String> {
        match data_type {
            DataType::Struct(inner) => walk(&mut inner.fields(), path),
            DataType::Array(a) => walk_type(&a.element_type, path),
            DataType::Map(m) => {
                walk_type(&m.key_type, path).or_else(|| walk_type(&m.value_type, path))
            }
            _ => None,
        }
    }
    walk(&mut table.schema.fields(), &[])
}

/// Whether `data_type` is byte or short, or holds them through arrays and maps (a struct's
/// fields are fields of their own).
fn small_integers(data_type: &DataType) -> bool {
    match data_type {
        DataType::Primitive(p) => matches!(p, PrimitiveType::Byte | PrimitiveType::Short),
        DataType::Array(a) => small_integers(&a.element_type),
        DataType::Map(m) => small_integers(&m.key_type) || small_integers(&m.value_type),
        DataType::Struct(_) | DataType::Variant(_) => false,
    }
}

/// The first column of `schema` of a type `compat` does not allow, as a message: V1 blocks
/// arrays, maps and void; V2 allows only byte, short, integer, long, float, double, decimal,
/// string, binary, boolean, timestamp, timestamp_ntz, date, array, map and struct.
fn first_type_fault(schema: &StructType, compat: IcebergCompat) -> Option<String> {
    fn allowed(data_type: &DataType, compat: IcebergCompat) -> bool {
        match data_type {
            DataType::Primitive(p) => !matches!(p, PrimitiveType::Void),
            DataType::Array(_) | DataType::Map(_) => compat == IcebergCompat::V2,
            DataType::Struct(_) => true,
            DataType::Variant(_) => false,
        }
    }
    fn walk(
        fields: &mut dyn Iterator<Item = &StructField>,
        path: &[String],
        compat: IcebergCompat,
    ) -> Option<String> {
        for field in fields {
            let mut p = path.to_vec();
            p.push(field.name().clone());
            if let Some(found) = check(field.data_type(), &p, compat) {
                return Some(found);
            }
        }
        None
    }
    fn check(data_type: &DataType, path: &[String], compat: IcebergCompat) -> Option<String> {
        if !allowed(data_type, compat) {
            return Some(format!(
                "{} does not allow column '{}' of type {data_type}",
                compat.feature(),
                crate::column::format_path(path)
            ));
        }
        match data_type {
            DataType::Struct(inner) => walk(&mut inner.fields(), path, compat),
            DataType::Array(a) => check(&a.element_type, path, compat),
            DataType::Map(m) => {
                check(&m.key_type, path, compat).or_else(|| check(&m.value_type, path, compat))
            }
            _ => None,
        }
    }
    walk(&mut schema.fields(), &[], compat)
}

/// What Iceberg readers of a UniForm table read: the newest Iceberg `metadata.json` under
/// [`METADATA_DIRECTORY`] and the Delta version it describes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IcebergView {
    /// The newest metadata file, relative to the table root
    /// (`metadata/00003-<uuid>.metadata.json` or `metadata/v3.metadata.json`); `None` when
    /// the directory holds none (UniForm on, nothing converted yet).
    pub metadata_file: Option<String>,
    /// Its [`DELTA_VERSION_PROPERTY`]: the Delta version whose files Iceberg readers read.
    /// `None` when there is no metadata file.
    pub delta_version: Option<u64>,
}

impl IcebergView {
    /// A sentence for the user on how the Iceberg view stands after Delta version
    /// `latest` (the version a run committed, or the table's).
    #[must_use]
    pub fn statement(&self, latest: u64) -> String {
        match (&self.metadata_file, self.delta_version) {
            (Some(file), Some(v)) if v >= latest => {
                format!("Iceberg metadata {file} describes the latest version ({v})")
            }
            (Some(file), Some(v)) => format!(
                "Iceberg metadata {file} describes version {v}, not {latest}: Iceberg readers read the same rows from version {v}'s files until a Delta writer with UniForm converts the later commits; vacuum keeps those files"
            ),
            _ => "no Iceberg metadata under metadata/ yet: the next Delta writer with UniForm generates it".to_string(),
        }
    }
}

/// Reads the Iceberg view of `table` when UniForm generates Iceberg metadata for it
/// ([`uniform_iceberg`]); `Ok(None)` when it does not.
///
/// The newest metadata file is the one of the highest version in its name (Iceberg's
/// `<version>-<uuid>.metadata.json`, or `v<version>.metadata.json` of file-system tables).
///
/// # Errors
/// * [`Error::ObjectStore`] when the directory cannot be listed or the file read.
/// * [`Error::DamagedLog`] naming the metadata file when it is not JSON or its
///   [`DELTA_VERSION_PROPERTY`] is missing or not a version: then nothing can tell which
///   files Iceberg readers read.
pub async fn view(table: &TableView) -> Result<Option<IcebergView>> {
    if !uniform_iceberg(&table.properties) {
        return Ok(None);
    }
    let store = table.log_store.object_store(None);
    let prefix = deltalake::Path::from(METADATA_DIRECTORY);
    let store_error = |path: String| {
        move |e: deltalake::ObjectStoreError| Error::ObjectStore {
            path,
            source: Box::new(e),
        }
    };
    let listed: Vec<deltalake::ObjectMeta> = store
        .list(Some(&prefix))
        .try_collect()
        .await
        .map_err(store_error(format!("{METADATA_DIRECTORY}/")))?;
    let newest = listed
        .iter()
        .filter_map(|meta| {
            let name = meta.location.filename()?;
            metadata_file_version(name).map(|v| (v, meta.location.clone()))
        })
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.as_ref().cmp(b.1.as_ref())));
    let Some((_, location)) = newest else {
        return Ok(Some(IcebergView {
            metadata_file: None,
            delta_version: None,
        }));
    };
    let bytes = match store.get(&location).await {
        Ok(got) => got.bytes().await,
        Err(e) => Err(e),
    }
    .map_err(store_error(location.to_string()))?;
    let file = location.to_string();
    let damaged = |message: String| Error::DamagedLog {
        table: table.display_location(),
        file: file.clone(),
        message,
    };
    let json: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| damaged(format!("is not an Iceberg metadata file: {e}")))?;
    let version = delta_version(&json).map_err(damaged)?;
    Ok(Some(IcebergView {
        metadata_file: Some(file),
        delta_version: Some(version),
    }))
}

/// The version in an Iceberg metadata file name, `None` for any other name.
fn metadata_file_version(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".metadata.json")?;
    let stem = stem.strip_suffix(".gz").unwrap_or(stem);
    let digits = stem
        .strip_prefix('v')
        .unwrap_or_else(|| stem.split('-').next().unwrap_or(""));
    digits.parse().ok()
}

/// The [`DELTA_VERSION_PROPERTY`] of a parsed metadata file.
fn delta_version(json: &serde_json::Value) -> std::result::Result<u64, String> {
    let value = json
        .get("properties")
        .and_then(|p| p.get(DELTA_VERSION_PROPERTY))
        .ok_or_else(|| {
            format!(
                "has no property '{DELTA_VERSION_PROPERTY}', so the Delta version Iceberg readers read is unknown (was it written by Delta's UniForm converter?)"
            )
        })?;
    value
        .as_str()
        .and_then(|s| s.trim().parse().ok())
        .or_else(|| value.as_u64())
        .ok_or_else(|| format!("has '{DELTA_VERSION_PROPERTY}' {value}, which is not a version"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_file_names_give_their_version() {
        assert_eq!(
            metadata_file_version("00012-6c1f3f6e-0a43-4d5e-9b9f-3e4d7a7c2b11.metadata.json"),
            Some(12)
        );
        assert_eq!(metadata_file_version("v7.metadata.json"), Some(7));
        assert_eq!(metadata_file_version("v7.gz.metadata.json"), Some(7));
        assert_eq!(metadata_file_version("snap-1-1-abc.avro"), None);
        assert_eq!(metadata_file_version("version-hint.text"), None);
    }

    #[test]
    fn the_delta_version_is_read_or_named_missing() {
        let json = serde_json::json!({"properties": {"delta-version": "41"}});
        assert_eq!(delta_version(&json), Ok(41));
        let none = serde_json::json!({"properties": {}});
        assert!(delta_version(&none).unwrap_err().contains("delta-version"));
        let bad = serde_json::json!({"properties": {"delta-version": "x"}});
        assert!(delta_version(&bad).unwrap_err().contains("not a version"));
    }

    #[test]
    fn uniform_is_on_when_iceberg_is_among_the_formats() {
        let props = |v: &str| BTreeMap::from([(PROP_UNIVERSAL_FORMATS.to_string(), v.to_string())]);
        assert!(uniform_iceberg(&props("iceberg")));
        assert!(uniform_iceberg(&props("hudi, iceberg")));
        assert!(!uniform_iceberg(&props("hudi")));
        assert!(!uniform_iceberg(&BTreeMap::new()));
    }
}
