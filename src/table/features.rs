//! Protocol versions and table features, and the gate that decides whether delta-layout may
//! rewrite a table.
//!
//! Source: PROTOCOL.md, "Protocol Evolution" and "Table Features". Legacy protocols (reader
//! version below 3, writer version below 7) imply their features:
//!
//! | writer version | implied features |
//! |---|---|
//! | 2 | appendOnly, invariants |
//! | 3 | + checkConstraints |
//! | 4 | + changeDataFeed, generatedColumns |
//! | 5 | + columnMapping |
//! | 6 | + identityColumns |
//!
//! and reader version 2 implies columnMapping.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// Table features delta-layout rewrites safely, with what it does about each:
///
/// * `appendOnly`: OPTIMIZE's removes carry `dataChange=false`, which append-only allows.
/// * `invariants`, `checkConstraints`, `generatedColumns`, `identityColumns`: rows are copied
///   unchanged, so every constraint that held still holds; metadata is untouched.
/// * `timestampNtz`: read and written as Parquet timestamps without time zone.
/// * `v2Checkpoint`: read through deltalake; this tool writes commits, never checkpoints.
/// * `deletionVectors`: deleted rows are dropped on rewrite; new files carry no vector.
/// * `columnMapping` (`name` and `id`): data files use physical names, and Parquet field ids
///   in `id` mode.
/// * `changeDataFeed`: OPTIMIZE changes no data, so it writes no change files.
/// * `clustering` (with `domainMetadata`, which it requires) and the older `liquid`: the
///   declared clustering columns are the default curve columns; clustered files carry
///   `clusteringProvider`, only files of no provider or of delta-layout are reclustered, and
///   the `delta.clustering` domain is left as it is (PROTOCOL.md "Clustered Table").
/// * `inCommitTimestamp`: when `delta.enableInCommitTimestamps` is on, the commit's
///   `commitInfo` (its first action) carries `inCommitTimestamp`, the later of now and the
///   previous commit's plus 1 ms, recomputed for each version tried (PROTOCOL.md "In-Commit
///   Timestamps"); the enablement properties are left as they are.
/// * `typeWidening` (and `typeWidening-preview`): files written before a column was widened
///   hold the narrower type; they are read into the current type by exact widenings only
///   (`table::convert`), written and given stats at the current type, and the schema's
///   `delta.typeChanges` metadata is left as it is (PROTOCOL.md "Type Widening").
/// * `vacuumProtocolCheck`: `vacuum` checks this same list before deleting anything.
/// * `checkpointProtection`: this tool never removes or rewrites log files or checkpoints.
/// * `allowColumnDefaults`: defaults apply to rows inserted without the column; a rewrite
///   copies every stored value.
/// * `variantType` (and `variantType-preview`): variant columns are read and written as the
///   unshredded struct of the `metadata` and `value` binaries, copied byte for byte; their
///   stats are `nullCount` only, and they cannot be curve or predicate columns (PROTOCOL.md
///   "Variant Data Type").
/// * `variantShredding` (and `variantShredding-preview`): files are written unshredded, which
///   the protocol allows whether or not shredding is enabled; a file that stores a variant
///   shredded (a `typed_value` field) is read back to unshredded variants, each value rebuilt
///   from its `value` and `typed_value` by arrow-rs' `unshred_variant` (PROTOCOL.md "Variant
///   Shredding"; the Parquet Variant Shredding spec); one that cannot be is refused naming
///   the file and column, before anything is committed.
/// * `materializePartitionColumns`: every new data file also holds the partition columns,
///   after the data columns, each the file's partition value on every row (parsed from the
///   `add` action's `partitionValues` as PROTOCOL.md "Partition Value Serialization" says,
///   through delta-kernel), so a Parquet or Iceberg reader that ignores the log reads them;
///   input files that hold them are read as others, partition values from the log (RFC
///   "Materialize Partition Columns", delta-io/delta `protocol_rfcs`).
/// * `collations`: a writer-only feature. New files get UTF-8 binary min/max stats for every
///   string column, collated or not, which the protocol allows ("it is allowed to provide
///   UTF-8 binary statistics for strings when the field has a different collation"); no
///   `statsWithCollation` is written, so an engine filtering by a collation skips none of the
///   new files on that column until its own writer adds them; the schema's `__COLLATIONS`
///   and the `collations` domain are left as they are. A collated column cannot be a curve
///   column (a curve orders UTF-8 bytes, not the collation), refused by name (PROTOCOL.md
///   "Collations Table Feature").
/// * `icebergCompatV1`, `icebergCompatV2` and `icebergWriterCompatV1` (UniForm): when one
///   is active, the table is checked against its writer rules before anything is written
///   (column mapping on, no deletion vectors, only the types it allows, every nested id;
///   for `icebergWriterCompatV1` also its RFC's: column mapping `id`, physical names
///   `col-<id>`, no byte or short, its feature allowlist), and
///   new files follow them: Parquet field ids from the column mapping ids (and the `element`,
///   `key` and `value` ids of `delta.columnMapping.nested.ids`), the partition columns
///   materialized, INT64 timestamps, `numRecords` in every `add`. The Iceberg metadata is
///   not regenerated: the next Delta writer with UniForm converts this tool's commits; until
///   then Iceberg readers read the removed files, which hold the same rows, and `vacuum`
///   keeps them and the `metadata` directory (see [`super::iceberg`]).
/// * `rowTracking`: stable row IDs and commit versions are written into the materialized
///   columns of the new files, which get fresh `baseRowId`s above the high-water mark
///   (PROTOCOL.md "Row Tracking"; see [`super::row_tracking`]).
pub const SUPPORTED_FEATURES: &[&str] = &[
    "rowTracking",
    "clustering",
    "domainMetadata",
    "liquid",
    "appendOnly",
    "invariants",
    "checkConstraints",
    "generatedColumns",
    "identityColumns",
    "timestampNtz",
    "v2Checkpoint",
    "deletionVectors",
    "columnMapping",
    "changeDataFeed",
    "inCommitTimestamp",
    "typeWidening",
    "typeWidening-preview",
    "vacuumProtocolCheck",
    "checkpointProtection",
    "allowColumnDefaults",
    "variantType",
    "variantType-preview",
    "variantShredding",
    "variantShredding-preview",
    "materializePartitionColumns",
    "collations",
    "icebergCompatV1",
    "icebergCompatV2",
    "icebergWriterCompatV1",
];

/// The writer feature that asks for partition columns in the data files.
pub const MATERIALIZE_PARTITION_COLUMNS: &str = "materializePartitionColumns";

const GEOSPATIAL: &str = "Delta's geospatial types (geometry, geography) cannot be read by the delta-kernel this delta-layout is built with";
const CATALOG: &str = "a catalog-managed table is committed to through its catalog, and PROTOCOL.md (Catalog-managed tables) lets no writer commit, OPTIMIZE included, without the catalog's permission; this tool does not talk to catalogs: run OPTIMIZE through the catalog's engine";

/// Features this tool refuses, each with the reason a user can act on. Any feature in
/// neither list is refused as unknown ([`support`]).
pub const REFUSED_FEATURES: &[(&str, &str)] = &[
    ("catalogManaged", CATALOG),
    ("catalogOwned-preview", CATALOG),
    ("geospatial", GEOSPATIAL),
];

/// Whether this tool supports `feature`: `Ok(())`, or the reason it is refused.
///
/// # Errors
/// The reason, for a refused or unknown feature.
pub fn support(feature: &str) -> std::result::Result<(), String> {
    if SUPPORTED_FEATURES.contains(&feature) {
        return Ok(());
    }
    Err(REFUSED_FEATURES
        .iter()
        .find(|(f, _)| *f == feature)
        .map_or_else(
            || {
                format!(
                    "unknown to delta-layout {}: what it asks of a writer cannot be checked; a newer delta-layout may support it",
                    env!("CARGO_PKG_VERSION")
                )
            },
            |(_, reason)| (*reason).to_string(),
        ))
}

/// The highest reader version this tool reads.
pub const MAX_READER_VERSION: i64 = 3;
/// The highest writer version this tool writes.
pub const MAX_WRITER_VERSION: i64 = 7;

/// The table's `protocol` action, with the features it implies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ProtocolInfo {
    /// `minReaderVersion`.
    pub min_reader_version: i64,
    /// `minWriterVersion`.
    pub min_writer_version: i64,
    /// `readerFeatures` as listed (reader version 3), empty otherwise.
    pub reader_features: Vec<String>,
    /// `writerFeatures` as listed (writer version 7), empty otherwise.
    pub writer_features: Vec<String>,
}

impl ProtocolInfo {
    /// Reads the protocol action through its JSON form (PROTOCOL.md, "Protocol Evolution"),
    /// so feature names are exactly as the log spells them.
    ///
    /// # Errors
    /// [`Error::Json`] if the action cannot be serialized (a bug in a dependency).
    pub fn from_protocol(protocol: &impl Serialize) -> Result<Self> {
        let json = serde_json::to_value(protocol).map_err(|source| Error::Json {
            context: "reading the protocol action".into(),
            source,
        })?;
        let version = |key: &str| json.get(key).and_then(Value::as_i64).unwrap_or(1);
        let features = |key: &str| -> Vec<String> {
            json.get(key)
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(|v| v.as_str().map(ToString::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok(Self {
            min_reader_version: version("minReaderVersion"),
            min_writer_version: version("minWriterVersion"),
            reader_features: features("readerFeatures"),
            writer_features: features("writerFeatures"),
        })
    }

    /// Every feature the table requires, explicit or implied by a legacy version, sorted and
    /// without duplicates.
    #[must_use]
    pub fn effective_features(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if self.min_writer_version >= 7 {
            out.extend(self.writer_features.iter().cloned());
        } else {
            let implied: &[(i64, &str)] = &[
                (2, "appendOnly"),
                (2, "invariants"),
                (3, "checkConstraints"),
                (4, "changeDataFeed"),
                (4, "generatedColumns"),
                (5, "columnMapping"),
                (6, "identityColumns"),
            ];
            out.extend(
                implied
                    .iter()
                    .filter(|(v, _)| self.min_writer_version >= *v)
                    .map(|(_, f)| (*f).to_string()),
            );
        }
        if self.min_reader_version >= 3 {
            out.extend(self.reader_features.iter().cloned());
        } else if self.min_reader_version == 2 {
            out.push("columnMapping".into());
        }
        out.sort();
        out.dedup();
        out
    }

    /// Every feature in effect with [`support`]'s verdict: `None` when supported, else the
    /// reason it is refused.
    #[must_use]
    pub fn feature_support(&self) -> Vec<(String, Option<String>)> {
        self.effective_features()
            .into_iter()
            .map(|f| {
                let reason = support(&f).err();
                (f, reason)
            })
            .collect()
    }

    /// The features (and protocol versions) this tool does not support, sorted, each with
    /// its reason (`feature (reason)`); empty when the table may be rewritten.
    #[must_use]
    pub fn unsupported(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .feature_support()
            .into_iter()
            .filter_map(|(f, reason)| reason.map(|r| format!("{f} ({r})")))
            .collect();
        if self.min_reader_version > MAX_READER_VERSION {
            out.push(format!("minReaderVersion {}", self.min_reader_version));
        }
        if self.min_writer_version > MAX_WRITER_VERSION {
            out.push(format!("minWriterVersion {}", self.min_writer_version));
        }
        out
    }

    /// Whether new data files must hold the partition columns
    /// ([`MATERIALIZE_PARTITION_COLUMNS`] among the writer features).
    #[must_use]
    pub fn materializes_partition_columns(&self) -> bool {
        self.min_writer_version >= 7
            && self
                .writer_features
                .iter()
                .any(|f| f == MATERIALIZE_PARTITION_COLUMNS)
    }

    /// Whether the table is catalog-managed (`catalogManaged` or `catalogOwned-preview`
    /// among its features): commits go through its catalog.
    #[must_use]
    pub fn is_catalog_managed(&self) -> bool {
        self.reader_features
            .iter()
            .chain(&self.writer_features)
            .any(|f| f == "catalogManaged" || f == "catalogOwned-preview")
    }

    /// Checks that the table may be rewritten.
    ///
    /// # Errors
    /// [`Error::UnsupportedFeatures`] naming every unsupported feature of table `table`.
    pub fn check_writable(&self, table: &str) -> Result<()> {
        let features = self.unsupported();
        if features.is_empty() {
            Ok(())
        } else {
            Err(Error::UnsupportedFeatures {
                table: table.to_string(),
                features,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protocol(reader: i64, writer: i64, rf: &[&str], wf: &[&str]) -> ProtocolInfo {
        ProtocolInfo {
            min_reader_version: reader,
            min_writer_version: writer,
            reader_features: rf.iter().map(ToString::to_string).collect(),
            writer_features: wf.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn legacy_versions_imply_features() {
        assert!(protocol(1, 1, &[], &[]).effective_features().is_empty());
        assert_eq!(
            protocol(1, 2, &[], &[]).effective_features(),
            ["appendOnly", "invariants"]
        );
        assert!(
            protocol(2, 5, &[], &[])
                .effective_features()
                .contains(&"columnMapping".to_string())
        );
        assert!(protocol(2, 6, &[], &[]).unsupported().is_empty());
    }

    #[test]
    fn unsupported_features_are_each_named() {
        let p = protocol(
            3,
            7,
            &["deletionVectors"],
            &[
                "deletionVectors",
                "rowTracking",
                "domainMetadata",
                "clustering",
                "typeWidening",
            ],
        );
        assert!(p.unsupported().is_empty());
        let p = protocol(
            3,
            7,
            &["variantType", "collations"],
            &[
                "variantType",
                "icebergCompatV2",
                "fancyNew",
                "catalogManaged",
            ],
        );
        let unsupported = p.unsupported();
        assert_eq!(unsupported.len(), 2, "{unsupported:?}");
        assert!(unsupported[0].starts_with("catalogManaged (a catalog-managed table"));
        assert!(unsupported[1].starts_with("fancyNew (unknown to delta-layout"));
        let err = p.check_writable("t").unwrap_err().to_string();
        assert!(
            err.contains("fancyNew")
                && err.contains("catalog")
                && !err.contains("variantType")
                && !err.contains("icebergCompatV2"),
            "{err}"
        );
        assert_eq!(
            protocol(4, 8, &[], &[]).unsupported(),
            ["minReaderVersion 4", "minWriterVersion 8"]
        );
    }
}
