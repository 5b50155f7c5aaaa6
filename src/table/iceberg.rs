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
use crate::table::schema::{ColumnMappingMode, field_ids_fault};

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
    let writer_compat = table
        .protocol
        .effective_features()
        .iter()
        .any(|f| f == "icebergWriterCompatV1")
        && is_true(&table.properties, PROP_ICEBERG_WRITER_COMPAT_V1);
    if writer_compat && !active.contains(&IcebergCompat::V2) {
        return Some(format!(
            "icebergWriterCompatV1 requires icebergCompatV2 active (the feature in the protocol and {PROP_ICEBERG_COMPAT_V2} true)"
        ));
    }
    let Some(&compat) = active.first() else {
        return uniform_iceberg(&table.properties).then(|| {
            format!(
                "UniForm's Iceberg metadata ({PROP_UNIVERSAL_FORMATS} iceberg) requires icebergCompatV1 or icebergCompatV2 active (the feature in the protocol and {PROP_ICEBERG_COMPAT_V1} or {PROP_ICEBERG_COMPAT_V2} true), and neither is"
            )
        });
    };
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
    field_ids_fault(&table.schema, compat == IcebergCompat::V2)
        .or_else(|| type_change_fault(&table.schema, compat))
        .or_else(|| writer_compat_fault(table, compat))
}

/// The first type change recorded in the schema (`delta.typeChanges`, PROTOCOL.md "Type
/// Change Metadata") that Iceberg V2's schema evolution does not allow, as a message: Iceberg
/// allows int to long, float to double and a decimal's precision raised at the same scale
/// (byte and short are Iceberg ints, so widening among byte, short and integer changes
/// nothing there). PROTOCOL.md: "When the Type Widening table feature is supported, require
/// that all type changes applied on the table are supported by Iceberg V2".
fn type_change_fault(schema: &StructType, compat: IcebergCompat) -> Option<String> {
    fn allowed(from: &str, to: &str) -> bool {
        let int_family = |t: &str| matches!(t, "byte" | "short" | "integer");
        if (int_family(from) && (int_family(to) || to == "long"))
            || (from == "float" && to == "double")
        {
            return true;
        }
        let decimal = |t: &str| -> Option<(u32, u32)> {
            let inner = t.strip_prefix("decimal(")?.strip_suffix(')')?;
            let (p, s) = inner.split_once(',')?;
            Some((p.trim().parse().ok()?, s.trim().parse().ok()?))
        };
        matches!((decimal(from), decimal(to)), (Some((p1, s1)), Some((p2, s2))) if s1 == s2 && p2 >= p1)
    }
    fn walk(
        fields: &mut dyn Iterator<Item = &StructField>,
        path: &[String],
        compat: IcebergCompat,
    ) -> Option<String> {
        for field in fields {
            let mut p = path.to_vec();
            p.push(field.name().clone());
            if let Some(deltalake::kernel::MetadataValue::Other(serde_json::Value::Array(
                changes,
            ))) = field.metadata().get("delta.typeChanges")
            {
                for change in changes {
                    let text = |k: &str| {
                        change
                            .get(k)
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or("?")
                    };
                    let (from, to) = (text("fromType"), text("toType"));
                    if !allowed(from, to) {
                        return Some(format!(
                            "{} allows only the type changes Iceberg V2 allows, and column '{}' was changed from {from} to {to} (delta.typeChanges)",
                            compat.feature(),
                            crate::column::format_path(&p)
                        ));
                    }
                }
            }
            let found = match field.data_type() {
                DataType::Struct(inner) => walk(&mut inner.fields(), &p, compat),
                other => nested(other, &p, compat),
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }
    fn nested(data_type: &DataType, path: &[String], compat: IcebergCompat) -> Option<String> {
        match data_type {
            DataType::Struct(inner) => walk(&mut inner.fields(), path, compat),
            DataType::Array(a) => nested(&a.element_type, path, compat),
            DataType::Map(m) => {
                nested(&m.key_type, path, compat).or_else(|| nested(&m.value_type, path, compat))
            }
            _ => None,
        }
    }
    walk(&mut schema.fields(), &[], compat)
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
/// arrays, maps and void (and variant, which no Iceberg version before V3 has); V2 allows
/// only byte, short, integer, long, float, double, decimal,
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

/// What Iceberg readers of a UniForm table read: the current Iceberg `metadata.json` under
/// [`METADATA_DIRECTORY`] and the Delta version it describes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IcebergView {
    /// The current metadata file, relative to the table root
    /// (`metadata/00003-<uuid>.metadata.json` or `metadata/v3.metadata.json`); `None` when
    /// the directory holds none (UniForm on, nothing converted yet).
    pub metadata_file: Option<String>,
    /// Its [`DELTA_VERSION_PROPERTY`]: the Delta version whose files Iceberg readers read.
    /// `None` when there is no metadata file.
    pub delta_version: Option<u64>,
}

impl IcebergView {
    /// A sentence for the user on how the Iceberg view stands against Delta version
    /// `version` (the version a run committed, or the one inspected).
    #[must_use]
    pub fn statement(&self, version: u64) -> String {
        match (&self.metadata_file, self.delta_version) {
            (Some(file), Some(v)) if v == version => format!(
                "Iceberg metadata {file} describes version {v}, this one: Iceberg readers read what Delta readers read"
            ),
            (Some(file), Some(v)) if v < version => format!(
                "Iceberg metadata {file} describes version {v}, not {version}: Iceberg readers read the same rows from version {v}'s files until a Delta writer with UniForm converts the later commits; vacuum keeps those files"
            ),
            (Some(file), Some(v)) => {
                format!("Iceberg metadata {file} describes version {v}, later than {version}")
            }
            _ => "no Iceberg metadata under metadata/ yet: the next Delta writer with UniForm generates it".to_string(),
        }
    }
}

/// Metadata files whose Delta versions `vacuum` keeps the files of: the current one and the
/// one before it, since the current one of a catalog (which holds the pointer) may be older
/// than the newest file (a conversion whose catalog commit failed leaves its file behind,
/// until the next conversion writes a newer one).
pub const KEPT_METADATA_FILES: usize = 2;

/// The Iceberg metadata files of `table` (`metadata/<name>` directly under the table root,
/// nothing deeper), newest first: the one `metadata/version-hint.text` names first when it
/// names one that exists (Iceberg's file-system tables), then by the version in the name.
/// Only Iceberg's names count: `<version>-<uuid>.metadata.json` and
/// `v<version>.metadata.json` (`.gz` ones included, to be refused by name when read).
///
/// # Errors
/// [`Error::ObjectStore`] when the directory cannot be listed or the hint read.
async fn metadata_files(table: &TableView) -> Result<Vec<deltalake::Path>> {
    let store = table.log_store.object_store(None);
    let prefix = deltalake::Path::from(METADATA_DIRECTORY);
    let listed: Vec<deltalake::ObjectMeta> = store
        .list(Some(&prefix))
        .try_collect()
        .await
        .map_err(|e| Error::ObjectStore {
            path: format!("{METADATA_DIRECTORY}/"),
            source: Box::new(e),
        })?;
    let direct = |meta: &deltalake::ObjectMeta| {
        let parts: Vec<_> = meta.location.parts().collect();
        (parts.len() == 2 && parts[0].as_ref() == METADATA_DIRECTORY).then(|| meta.location.clone())
    };
    let mut files: Vec<(u64, deltalake::Path)> = listed
        .iter()
        .filter_map(direct)
        .filter_map(|path| Some((metadata_file_version(path.filename()?)?, path)))
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.as_ref().cmp(a.1.as_ref())));
    let hint = deltalake::Path::from(format!("{METADATA_DIRECTORY}/version-hint.text"));
    if listed.iter().any(|m| m.location == hint) {
        let text = read(table, &hint).await?;
        let hinted = std::str::from_utf8(&text)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok());
        if let Some(position) = hinted.and_then(|v| {
            files
                .iter()
                .position(|(_, p)| p.filename() == Some(&format!("v{v}.metadata.json")))
        }) {
            let current = files.remove(position);
            files.insert(0, current);
        }
    }
    Ok(files.into_iter().map(|(_, p)| p).collect())
}

async fn read(table: &TableView, path: &deltalake::Path) -> Result<bytes::Bytes> {
    let store = table.log_store.object_store(None);
    match store.get(path).await {
        Ok(got) => got.bytes().await,
        Err(e) => Err(e),
    }
    .map_err(|e| Error::ObjectStore {
        path: path.to_string(),
        source: Box::new(e),
    })
}

/// The Delta version `file` (a metadata file of `table`) describes.
///
/// # Errors
/// [`Error::IcebergMetadata`] naming the file when it is gzip-compressed, not JSON, or has
/// no [`DELTA_VERSION_PROPERTY`] that is a version; [`Error::ObjectStore`] when it cannot be
/// read.
async fn described_version(table: &TableView, file: &deltalake::Path) -> Result<u64> {
    let fault = |message: String| Error::IcebergMetadata {
        table: table.display_location(),
        file: file.to_string(),
        message,
    };
    if file.as_ref().ends_with(".gz") || file.as_ref().ends_with(".gz.metadata.json") {
        return Err(fault(
            "is gzip-compressed (Iceberg's write.metadata.compression-codec), which delta-layout does not read, so it cannot tell which files Iceberg readers read".into(),
        ));
    }
    let bytes = read(table, file).await?;
    let json: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| fault(format!("is not JSON: {e}")))?;
    delta_version(&json).map_err(fault)
}

/// Reads the Iceberg view of `table` when UniForm generates Iceberg metadata for it
/// ([`uniform_iceberg`]); `Ok(None)` when it does not. The current metadata file is the one
/// `metadata/version-hint.text` names when it names one that exists (Iceberg's file-system
/// tables), else the one of the highest version among the files directly in `metadata/`
/// named as Iceberg names them (`<version>-<uuid>.metadata.json`, `v<version>.metadata.json`).
///
/// # Errors
/// * [`Error::ObjectStore`] when the directory cannot be listed or the file read.
/// * [`Error::IcebergMetadata`] naming the metadata file when it is gzip-compressed, not JSON,
///   or its [`DELTA_VERSION_PROPERTY`] is missing or not a version: then nothing can tell
///   which files Iceberg readers read.
pub async fn view(table: &TableView) -> Result<Option<IcebergView>> {
    if !uniform_iceberg(&table.properties) {
        return Ok(None);
    }
    let Some(current) = metadata_files(table).await?.into_iter().next() else {
        return Ok(Some(IcebergView {
            metadata_file: None,
            delta_version: None,
        }));
    };
    let version = described_version(table, &current).await?;
    Ok(Some(IcebergView {
        metadata_file: Some(current.to_string()),
        delta_version: Some(version),
    }))
}

/// The Delta versions Iceberg readers of `table` may read (the table at its latest version):
/// those the first [`KEPT_METADATA_FILES`] metadata files describe, each with its file, for
/// `vacuum` to keep their files. Empty when UniForm is off or nothing was converted yet.
///
/// # Errors
/// As [`view`], for any of those files; [`Error::IcebergMetadata`] for a version the table
/// does not have yet (later than `table.version`).
pub async fn read_versions(table: &TableView) -> Result<Vec<(String, u64)>> {
    if !uniform_iceberg(&table.properties) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for file in metadata_files(table)
        .await?
        .into_iter()
        .take(KEPT_METADATA_FILES)
    {
        let version = described_version(table, &file).await?;
        if version > table.version {
            return Err(Error::IcebergMetadata {
                table: table.display_location(),
                file: file.to_string(),
                message: format!(
                    "names Delta version {version}, which the table (at version {}) does not have, so which files Iceberg readers read cannot be told",
                    table.version
                ),
            });
        }
        out.push((file.to_string(), version));
    }
    Ok(out)
}

/// The version in an Iceberg metadata file name: `<version>-<uuid>.metadata.json` (the
/// version of at least one digit, the rest a UUID) or `v<version>.metadata.json`, either
/// with `.gz` before `.metadata.json` or after it; `None` for any other name (a bare UUID, as
/// file-system tables' temporary files are named, or a backup).
fn metadata_file_version(name: &str) -> Option<u64> {
    let stem = name
        .strip_suffix(".metadata.json.gz")
        .or_else(|| name.strip_suffix(".metadata.json"))?;
    let stem = stem.strip_suffix(".gz").unwrap_or(stem);
    if let Some(digits) = stem.strip_prefix('v') {
        return digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())
            .flatten();
    }
    let (digits, uuid) = stem.split_once('-')?;
    let is_uuid = uuid.len() == 36
        && uuid.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        });
    (is_uuid && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The [`DELTA_VERSION_PROPERTY`] of a parsed metadata file.
fn delta_version(json: &serde_json::Value) -> std::result::Result<u64, String> {
    let value = json
        .get("properties")
        .and_then(|p| p.get(DELTA_VERSION_PROPERTY))
        .ok_or_else(|| {
            format!(
                "has no property '{DELTA_VERSION_PROPERTY}' (Delta's UniForm converter writes it into every metadata file), so the Delta version Iceberg readers read is unknown"
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
        assert_eq!(metadata_file_version("v7.metadata.json.gz"), Some(7));
        assert_eq!(metadata_file_version("snap-1-1-abc.avro"), None);
        assert_eq!(metadata_file_version("version-hint.text"), None);
        // A bare UUID (a file-system table's temporary file) and a backup's name.
        assert_eq!(
            metadata_file_version("12345678-0a43-4d5e-9b9f-3e4d7a7c2b11.metadata.json"),
            None
        );
        assert_eq!(metadata_file_version("00099-old.metadata.json"), None);
        assert_eq!(metadata_file_version("v7-copy.metadata.json"), None);
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
