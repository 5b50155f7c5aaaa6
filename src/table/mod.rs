//! Edge 1: the read-only view of a Delta table at one version.
//!
//! This is the only module that reads the Delta log (through the `deltalake` crate). It loads a
//! snapshot once and turns it into plain owned values, [`TableView`] and [`DataFile`], that the
//! pure stages (`plan`, `inspect`) consume. Checkpoints of every kind (classic, multi-part, v2
//! with JSON or Parquet sidecars) and stats given only as `stats_parsed` are handled by
//! deltalake's log replay; this module normalizes what it returns.
//!
//! Sources: PROTOCOL.md sections "Add File and Remove File", "Per-file Statistics",
//! "Column Mapping", "Deletion Vectors", "Table Features".

mod convert;
pub mod escapes;
pub mod features;
pub mod iceberg;
pub mod location;
pub mod log;
pub mod log_check;
pub mod read;
pub mod row_tracking;
pub mod schema;
pub mod stats;

use std::collections::BTreeMap;
use std::sync::Arc;

use deltalake::arrow::array::AsArray as _;

use deltalake::kernel::{Add, DeletionVectorDescriptor, StructType};
use deltalake::logstore::LogStoreRef;
use deltalake::{DeltaTable, DeltaTableBuilder};
use serde::Serialize;
use url::Url;

use crate::error::{Error, Result};
pub use features::ProtocolInfo;
pub use location::{StorageOptions, StoreKind, TableLocation};
pub use schema::{ColumnMappingMode, LeafColumn};
pub use stats::FileStats;

/// Table property naming the target file size in bytes (Databricks, Delta Spark).
pub const PROP_TARGET_FILE_SIZE: &str = "delta.targetFileSize";
/// Table property: how many leaf columns get min/max/nullCount stats (default 32).
pub const PROP_NUM_INDEXED_COLS: &str = "delta.dataSkippingNumIndexedCols";
/// Table property: an explicit comma-separated list of columns that get stats.
pub const PROP_STATS_COLUMNS: &str = "delta.dataSkippingStatsColumns";
/// Table property of the older `liquid` feature listing the clustering columns.
pub const PROP_LIQUID_CLUSTERING_COLUMNS: &str = "delta.liquid.clusteringColumns";
/// Table property selecting the column mapping mode (`none`, `name`, `id`).
pub const PROP_COLUMN_MAPPING_MODE: &str = "delta.columnMapping.mode";

/// A Delta table at one version: what every later stage needs, loaded once.
#[derive(Debug, Clone)]
pub struct TableView {
    /// The table's root location (a `file://` URL for local paths).
    pub location: Url,
    /// The location and storage options the view was loaded from, to reach the same store
    /// again (another version, a scratch table beside it).
    pub source: TableLocation,
    /// The version this view was read at.
    pub version: u64,
    /// The logical schema (Delta types, logical names, column-mapping metadata kept).
    pub schema: StructType,
    /// The partition columns, logical names, in table order.
    pub partition_columns: Vec<String>,
    /// The physical names of the partition columns, parallel to `partition_columns` (equal
    /// to them without column mapping). `partitionValues` maps are keyed by these.
    pub partition_physical_names: Vec<String>,
    /// Table properties (`metaData.configuration`).
    pub properties: BTreeMap<String, String>,
    /// Protocol versions and table features.
    pub protocol: ProtocolInfo,
    /// The column mapping mode in force.
    pub column_mapping: ColumnMappingMode,
    /// Every active data file (live `add` actions after log replay), in log order.
    pub files: Vec<DataFile>,
    /// The clustering columns the table declares (logical names, dotted for nested fields):
    /// the `delta.clustering` domain of the `clustering` feature (PROTOCOL.md "Clustered
    /// Table", physical names mapped back), or the older `liquid` feature's
    /// `delta.liquid.clusteringColumns` property. `None` when the table declares none.
    pub clustering_columns: Option<Vec<String>>,
    /// Row tracking settings and high-water mark, when the table supports the
    /// `rowTracking` feature.
    pub row_tracking: Option<row_tracking::RowTracking>,
    /// The log store the view came from, for the edges that read data or commit.
    pub(crate) log_store: LogStoreRef,
    /// The stats of the log's files as delta-rs parsed them in its log replay (Arrow
    /// columns, one row per file, which each file's [`FileStats`] points at), so that bounds are
    /// read without parsing each file's stats JSON again ([`crate::pruning::column_bounds`]);
    /// `None` for a view not loaded from a log.
    pub(crate) parsed_stats: Option<Arc<ParsedStats>>,
}

/// Per-file stats as Arrow columns (delta-rs' `add_actions_batches`: the checkpoint's
/// `stats_parsed`, or each commit's stats JSON parsed once by its log replay), typed by the
/// table's stats schema (the columns stats are collected for).
#[derive(Debug)]
pub(crate) struct ParsedStats {
    /// `minValues`, a struct of the columns (nested structs for struct columns).
    pub min: Option<deltalake::arrow::array::StructArray>,
    /// `maxValues`.
    pub max: Option<deltalake::arrow::array::StructArray>,
    /// `nullCount`.
    pub null_count: Option<deltalake::arrow::array::StructArray>,
}

/// A table at one version without its files: what a worker needs to read and write the
/// table's data files the way the table defines them, and a committer to commit to it.
/// Serialized into work orders ([`crate::workorder`]); it holds no secret (storage options
/// are never part of it).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct TableDescription {
    /// The table's root as an absolute URL (`file:///...` for a local table), without a
    /// password or query; storage options and credentials never go in a description.
    pub uri: String,
    /// The version the description was read at.
    pub version: u64,
    /// The logical schema (`metaData.schemaString`, column-mapping metadata kept).
    pub schema: StructType,
    /// The partition columns, logical names, in table order.
    pub partition_columns: Vec<String>,
    /// Table properties (`metaData.configuration`).
    pub properties: BTreeMap<String, String>,
    /// The `protocol` action.
    pub protocol: ProtocolInfo,
    /// The clustering columns the table declares, if any.
    pub clustering_columns: Option<Vec<String>>,
    /// Row tracking settings and high-water mark, on tables with the `rowTracking` feature.
    pub row_tracking: Option<row_tracking::RowTracking>,
}

/// One active data file of the table (a live `add` action).
#[derive(Debug, Clone)]
pub struct DataFile {
    /// The path from the `add` action, URI-decoded once: relative to the table root, or an
    /// absolute URI.
    pub path: String,
    /// The path exactly as the `add` action spells it in the log. A `remove` must repeat this
    /// string: readers match removes to adds by it, and writers differ in which characters
    /// they percent-encode (Spark leaves `😈` or a space raw, delta-rs encodes them).
    pub raw_path: String,
    /// `size`: the file's size in bytes.
    pub size_bytes: u64,
    /// `modificationTime`: milliseconds since the Unix epoch.
    pub modification_time_ms: i64,
    /// Partition values parallel to [`TableView::partition_columns`], as the log's strings
    /// (`None` is a null partition value, also written as an empty string).
    pub partition_values: Vec<Option<String>>,
    /// Partition values exactly as the log spells them: an empty string stays `Some("")`,
    /// apart from a null or missing value (`None`). Files are only ever rewritten together
    /// with files of the same spelling, so the value every reader sees is kept whether it
    /// reads `""` as null (PROTOCOL.md "Partition Value Serialization") or as a string.
    pub raw_partition_values: Vec<Option<String>>,
    /// The file's statistics, `None` when the writer recorded none (unknown, not zero).
    pub stats: Option<FileStats>,
    /// The deletion vector descriptor, when rows of the file are deleted.
    pub deletion_vector: Option<DeletionVectorDescriptor>,
    /// `tags` of the `add` action.
    pub tags: BTreeMap<String, Option<String>>,
    /// `clusteringProvider`: the clustering implementation that wrote the file, if any.
    pub clustering_provider: Option<String>,
    /// `baseRowId` (row tracking): the default row ID of the file's first row.
    pub base_row_id: Option<i64>,
    /// `defaultRowCommitVersion` (row tracking).
    pub default_row_commit_version: Option<i64>,
    /// The original `add` action, from which the `remove` action is made.
    pub(crate) add: Add,
}

impl DataFile {
    /// Rows the deletion vector marks deleted (its `cardinality`), 0 without one.
    #[must_use]
    pub fn num_deleted_rows(&self) -> u64 {
        self.deletion_vector
            .as_ref()
            .and_then(|dv| u64::try_from(dv.cardinality).ok())
            .unwrap_or(0)
    }

    /// Physical rows (`numRecords`), `None` when unknown.
    #[must_use]
    pub fn num_records(&self) -> Option<u64> {
        self.stats.as_ref().and_then(|s| s.num_records)
    }

    /// Live rows: `numRecords` minus the deletion vector's cardinality, `None` when unknown.
    #[must_use]
    pub fn num_live_rows(&self) -> Option<u64> {
        self.num_records()
            .map(|n| n.saturating_sub(self.num_deleted_rows()))
    }

    /// Share of the file's rows that its deletion vector deletes, in `[0, 1]`. A file with a
    /// deletion vector but unknown `numRecords` counts as fully deleted-heavy (1.0), so it is
    /// rewritten rather than ignored.
    #[must_use]
    pub fn deleted_ratio(&self) -> f64 {
        let deleted = self.num_deleted_rows();
        if deleted == 0 {
            return 0.0;
        }
        match self.num_records() {
            #[expect(clippy::cast_precision_loss, reason = "a ratio")]
            Some(total) if total > 0 => (deleted as f64 / total as f64).min(1.0),
            _ => 1.0,
        }
    }
}

/// What the table holds, in numbers: used by `inspect` and by size autotuning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TableTotals {
    /// Active files.
    pub files: u64,
    /// Sum of their sizes, bytes.
    pub bytes: u64,
    /// Sum of live rows (numRecords minus deleted rows) over files with stats.
    pub rows: u64,
    /// Files whose row count is unknown (no `numRecords`), so `rows` is a lower bound.
    pub files_without_row_count: u64,
}

impl TableView {
    /// Loads the table at `location` (a local path, or a URI of a supported scheme with its
    /// storage options: see [`location`]) at `version`, or the latest version when `None`.
    ///
    /// # Errors
    /// * [`Error::NoTable`] when the location has an unsupported scheme, does not exist,
    ///   holds no Delta log or its object store cannot be reached; [`Error::DamagedLog`]
    ///   naming a damaged log file; [`Error::NotADeltaTable`] for other failures to read the
    ///   log.
    /// * [`Error::InvalidOption`] (`--version`) when the version does not exist.
    /// * [`Error::Delta`] / [`Error::Json`] when the log cannot be replayed or its stats parsed.
    pub async fn load(location: impl Into<TableLocation>, version: Option<u64>) -> Result<Self> {
        let source: TableLocation = location.into();
        let shown = source.to_string();
        let location = shown.as_str();
        let not_a_table = |error| Error::NotADeltaTable {
            table: location.to_string(),
            source: Box::new(error),
        };
        let kind = source.store_kind()?;
        if kind == StoreKind::Local {
            check_location(&source.uri)?;
        } else {
            source.check_settings()?;
        }
        let url = deltalake::table::builder::parse_table_uri(&source.uri).map_err(not_a_table)?;
        let builder_for = || -> Result<DeltaTableBuilder> {
            let mut builder = DeltaTableBuilder::from_url(url.clone()).map_err(not_a_table)?;
            if !source.storage_options.is_empty() {
                builder = builder.with_storage_options(source.storage_options.to_map());
            }
            Ok(builder)
        };
        // A catalog-managed table is refused in this tool's words (why, and what to do)
        // before the kernel refuses to load it in its own ("Max catalog version is
        // required").
        if let Ok(root) = url.to_file_path()
            && let Some((_, protocol)) = log_check::newest_protocol(&root, version)
            && protocol.is_catalog_managed()
        {
            return Err(Error::UnsupportedFeatures {
                table: location.to_string(),
                features: protocol.unsupported(),
            });
        }
        let mut builder = builder_for()?;
        if let Some(v) = version {
            builder = builder.with_version(v);
        }
        let table = match builder.load().await {
            Ok(table) => table,
            Err(error) => {
                if let Some(v) = version {
                    // Tell a missing version apart from a missing table.
                    if let Ok(latest) = builder_for()?.load().await {
                        return Err(Error::invalid_option(
                            crate::Setting::Version,
                            format!(
                                "version {v} of '{location}' cannot be read (latest is {})",
                                latest.version().unwrap_or_default()
                            ),
                        ));
                    }
                }
                // Name the damaged log file, where one can be found.
                if let Ok(root) = url.to_file_path()
                    && let Some((file, message)) = log_check::first_damaged_file(&root)
                {
                    return Err(Error::DamagedLog {
                        table: location.to_string(),
                        file,
                        message,
                    });
                }
                if kind != StoreKind::Local {
                    return Err(remote_load_error(&source, &url, error).await);
                }
                // The kernel names no file ("Reader features must not be present when
                // minimum reader version != 3", "unmasked nulls ... schemaString"): the file
                // the load read last, and the version.
                if let deltalake::DeltaTableError::KernelError(kernel) = &error
                    && let Ok(root) = url.to_file_path()
                    && let Some(file) = log_check::newest_log_file(&root, version)
                {
                    return Err(Error::DamagedLog {
                        table: location.to_string(),
                        file,
                        message: format!(
                            "is the newest log file of {}, which the Delta kernel cannot load: {kernel}",
                            version.map_or_else(
                                || "the latest version".to_string(),
                                |v| format!("version {v}")
                            )
                        ),
                    });
                }
                return Err(not_a_table(error));
            }
        };
        let mut view = Self::from_table(location, &table, source.clone())?;
        view.read_misread_strings_exactly().await?;
        // The log readers skip a directory where the next commit file should be, so the
        // latest version would look older than it is: name it instead.
        if version.is_none()
            && let Ok(root) = view.location.to_file_path()
        {
            let next = format!("_delta_log/{:020}.json", view.version + 1);
            if root.join(&next).is_dir() {
                return Err(Error::DamagedLog {
                    table: location.to_string(),
                    file: next,
                    message: "is a directory, not a commit file".into(),
                });
            }
        }
        view.clustering_columns = view.declared_clustering_columns()?;
        if view
            .protocol
            .effective_features()
            .iter()
            .any(|f| f == "rowTracking")
        {
            let mut settings = row_tracking::RowTracking::from_properties(&view.properties);
            let store = view.log_store.object_store(None);
            settings.high_water_mark =
                row_tracking::high_water_mark(store.as_ref(), view.version).await?;
            view.row_tracking = Some(settings);
        }
        Ok(view)
    }

    /// Reads the clustering columns the table declares (see [`TableView::clustering_columns`]).
    fn declared_clustering_columns(&self) -> Result<Option<Vec<String>>> {
        let features = self.protocol.effective_features();
        let leaves = schema::leaf_columns(&self.schema, self.column_mapping);
        if features.iter().any(|f| f == "clustering") {
            let engine = self.log_store.engine(None);
            let root = format!("{}/", self.location.as_str().trim_end_matches('/'));
            // The domain comes from the version's checksum file when there is one, else
            // from the commits: name the one read.
            let file = self
                .location
                .to_file_path()
                .ok()
                .and_then(|root| {
                    let crc = format!("_delta_log/{:020}.crc", self.version);
                    if root.join(&crc).is_file() {
                        Some(crc)
                    } else {
                        log_check::newest_log_file(&root, Some(self.version))
                    }
                })
                .unwrap_or_else(|| format!("_delta_log (version {})", self.version));
            let kernel_error = |e: delta_kernel::Error| Error::DamagedLog {
                table: self.display_location(),
                file: file.clone(),
                message: format!(
                    "holds a delta.clustering domain (the clustering columns) that cannot be read: {e}"
                ),
            };
            let snapshot = delta_kernel::Snapshot::builder_for(root)
                .at_version(self.version)
                .build(engine.as_ref())
                .map_err(kernel_error)?;
            let Some(physical) = snapshot
                .get_physical_clustering_columns(engine.as_ref())
                .map_err(kernel_error)?
            else {
                return Ok(None);
            };
            let names = physical
                .iter()
                .map(|column| {
                    leaves
                        .iter()
                        .find(|leaf| leaf.physical.as_slice() == column.path())
                        .map(LeafColumn::display_name)
                        .ok_or_else(|| Error::DamagedLog {
                            table: self.display_location(),
                            file: "_delta_log".into(),
                            message: format!(
                                "holds a delta.clustering domain naming the clustering column {column} (by physical name), which is not in the table's schema"
                            ),
                        })
                })
                .collect::<Result<Vec<_>>>()?;
            // `CLUSTER BY NONE` leaves an empty list: the table is no longer clustered.
            return Ok(Some(names).filter(|names| !names.is_empty()));
        }
        let Some(list) = self.property(PROP_LIQUID_CLUSTERING_COLUMNS) else {
            return Ok(None);
        };
        let columns = crate::column::parse_list(list).map_err(|message| {
            Error::invalid_option(
                crate::Setting::TableProperty(PROP_LIQUID_CLUSTERING_COLUMNS.into()),
                message,
            )
        })?;
        Ok(Some(
            columns
                .iter()
                .map(|path| crate::column::format_path(path))
                .collect::<Vec<_>>(),
        )
        .filter(|columns| !columns.is_empty()))
    }

    /// Where a string delta-rs gave this view holds a character above U+FFFF (a schema name,
    /// property, path, partition value, stats text or tag), so the log may spell such
    /// characters as escaped surrogate pairs that delta-rs misreads ([`escapes`]): replays the
    /// JSON commits after the last checkpoint exactly when one of their lines does, and
    /// replaces the files delta-rs listed under a path they name by the files the exact replay
    /// leaves live. Nothing is read when no string holds such a character (almost every table).
    ///
    /// # Errors
    /// [`Error::DamagedLog`] for a `metaData` spelled with such an escape; storage errors.
    async fn read_misread_strings_exactly(&mut self) -> Result<()> {
        let wide = |s: &str| s.bytes().any(|b| b >= 0xF0);
        let schema_text = serde_json::to_string(&self.schema).unwrap_or_default();
        let suspect = wide(&schema_text)
            || self.properties.iter().any(|(k, v)| wide(k) || wide(v))
            || self.files.iter().any(|f| {
                wide(&f.raw_path)
                    || wide(&f.path)
                    || f.raw_partition_values.iter().flatten().any(|v| wide(v))
                    || f.stats
                        .as_ref()
                        .is_some_and(FileStats::text_has_wide_characters)
                    || f.tags.values().flatten().any(|v| wide(v))
            });
        if !suspect {
            return Ok(());
        }
        let store = self.log_store.object_store(None);
        let commits = escapes::json_commits_since_checkpoint(&store, self.version).await?;
        let Some(replay) = escapes::exact_replay(&commits, &self.display_location())? else {
            return Ok(());
        };
        self.files.retain(|f| !replay.touched.contains(&f.path));
        for (add, raw_path) in replay.live {
            self.files.push(DataFile::from_add(
                add,
                raw_path,
                &self.partition_physical_names,
            )?);
        }
        Ok(())
    }

    fn from_table(location: &str, table: &DeltaTable, source: TableLocation) -> Result<Self> {
        let state = table
            .snapshot()
            .map_err(|e| Error::delta(format!("reading the snapshot of '{location}'"), e))?;
        let version = state.version();
        let protocol = ProtocolInfo::from_protocol(state.protocol())?;
        let metadata_json =
            serde_json::to_value(state.metadata()).map_err(|source| Error::Json {
                context: "reading table metadata".into(),
                source,
            })?;
        let properties: BTreeMap<String, String> = metadata_json
            .get("configuration")
            .and_then(|c| c.as_object())
            .map(|c| {
                c.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let partition_columns: Vec<String> = metadata_json
            .get("partitionColumns")
            .and_then(|c| c.as_array())
            .map(|c| {
                c.iter()
                    .filter_map(|v| v.as_str().map(ToString::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let column_mapping = ColumnMappingMode::from_properties(&properties)?;
        let schema: StructType = state.schema().as_ref().clone();
        let partition_physical_names = partition_columns
            .iter()
            .map(|name| {
                let field = schema.fields().find(|f| f.name() == name).ok_or_else(|| {
                    Error::Internal(format!("partition column '{name}' is not in the schema"))
                })?;
                Ok(schema::physical_name(field, column_mapping))
            })
            .collect::<Result<Vec<_>>>()?;

        // The add actions as columns, in the order of the log data: each file's path as the
        // log spells it, and its stats as delta-rs parsed them.
        let actions = {
            let batches = state
                .add_actions_batches(false)
                .map_err(|e| Error::delta("listing the active files", e))?;
            match batches.first() {
                Some(first) => Some(
                    deltalake::arrow::compute::concat_batches(&first.schema(), &batches)
                        .map_err(|e| Error::arrow("joining the active files", e))?,
                ),
                None => None,
            }
        };
        let views: Vec<_> = state.log_data().iter().collect();
        let raw_paths: Vec<String> = match &actions {
            Some(batch) => {
                let column = batch.column_by_name("path").ok_or_else(|| {
                    Error::Internal("the add-actions table has no path column".into())
                })?;
                let column = deltalake::arrow::compute::cast(
                    column,
                    &deltalake::arrow::datatypes::DataType::Utf8,
                )
                .map_err(|e| Error::arrow("reading raw paths", e))?;
                column
                    .as_string::<i32>()
                    .iter()
                    .map(|p| p.unwrap_or_default().to_string())
                    .collect()
            }
            None => Vec::new(),
        };
        if raw_paths.len() != views.len() {
            return Err(Error::Internal(format!(
                "{} add actions for {} files",
                raw_paths.len(),
                views.len()
            )));
        }
        let parsed_stats = actions.as_ref().map(|batch| {
            let field = |name: &str| {
                batch
                    .column_by_name(name)
                    .and_then(|c| c.as_struct_opt())
                    .cloned()
            };
            Arc::new(ParsedStats {
                min: field("min"),
                max: field("max"),
                null_count: field("null_count"),
            })
        });
        // Rebuilding each add action and reading its stats is most of the work: in parallel,
        // in log order; each file is checked to be the add-actions row it is given.
        let files = {
            use rayon::prelude::*;
            views
                .into_par_iter()
                .zip(raw_paths.into_par_iter())
                .enumerate()
                .map(|(row, (view, raw_path))| {
                    #[expect(
                        deprecated,
                        reason = "the only public way to get the complete add action"
                    )]
                    let add = view.add_action();
                    if percent_encoding::percent_decode_str(&raw_path).decode_utf8_lossy()
                        != add.path.as_str()
                    {
                        return Err(Error::Internal(format!(
                            "the add actions are not in the order of the log data at '{}'",
                            add.path
                        )));
                    }
                    let mut file = DataFile::from_add(add, raw_path, &partition_physical_names)?;
                    // Stats whose text escapes a character delta-rs misreads are read from
                    // the text alone (`escapes`).
                    if let (Some(stats), Some(parsed)) = (&mut file.stats, &parsed_stats)
                        && !stats.text_has_misread_escape()
                    {
                        stats.parsed = Some((Arc::clone(parsed), row));
                    }
                    Ok(file)
                })
                .collect::<Result<Vec<_>>>()?
        };
        Ok(Self {
            clustering_columns: None,
            row_tracking: None,
            location: table.table_url().clone(),
            source,
            version,
            schema,
            partition_columns,
            partition_physical_names,
            properties,
            protocol,
            column_mapping,
            files,
            log_store: table.log_store(),
            parsed_stats,
        })
    }

    /// The table's plain description: everything but the files and the live log store, for
    /// a work order ([`crate::workorder`]) that rebuilds the view elsewhere with
    /// [`TableView::from_description`].
    #[must_use]
    pub fn description(&self) -> TableDescription {
        // The root as an absolute URL (a relative local path means nothing on another
        // machine), less anything secret: a password or a query (a SAS token).
        let mut root = self.location.clone();
        let _ = root.set_password(None);
        root.set_query(None);
        root.set_fragment(None);
        TableDescription {
            uri: root.to_string(),
            version: self.version,
            schema: self.schema.clone(),
            partition_columns: self.partition_columns.clone(),
            properties: self.properties.clone(),
            protocol: self.protocol.clone(),
            clustering_columns: self.clustering_columns.clone(),
            row_tracking: self.row_tracking.clone(),
        }
    }

    /// Builds a view from a plain description and the `add` actions of the files it should
    /// hold (each with its path as the log spells it), without reading the log: the log
    /// store is made for `description.uri` with `storage_options` (which no description
    /// carries: secrets stay out of work orders), and nothing is fetched until a file is read
    /// or a commit is made. The files keep their order; the description's `version` is the
    /// read version of commits made from the view.
    ///
    /// # Errors
    /// [`Error::NoTable`] for an unsupported scheme or a bad storage setting;
    /// [`Error::NotADeltaTable`] when no store can be made for the URI;
    /// [`Error::InvalidOption`] for an unknown column mapping mode; [`Error::Internal`] when a
    /// partition column is not in the schema; [`Error::DataFile`] / [`Error::Json`] for a
    /// file with a negative size or unreadable stats.
    pub fn from_description(
        description: TableDescription,
        files: Vec<(Add, String)>,
        storage_options: StorageOptions,
    ) -> Result<Self> {
        let source = TableLocation {
            uri: description.uri.clone(),
            storage_options,
        };
        let shown = source.to_string();
        let not_a_table = |error| Error::NotADeltaTable {
            table: shown.clone(),
            source: Box::new(error),
        };
        if source.store_kind()? != StoreKind::Local {
            source.check_settings()?;
        }
        let url = deltalake::table::builder::parse_table_uri(&source.uri).map_err(not_a_table)?;
        let mut builder = DeltaTableBuilder::from_url(url).map_err(not_a_table)?;
        if !source.storage_options.is_empty() {
            builder = builder.with_storage_options(source.storage_options.to_map());
        }
        let table = builder.build().map_err(not_a_table)?;
        let column_mapping = ColumnMappingMode::from_properties(&description.properties)?;
        let partition_physical_names = description
            .partition_columns
            .iter()
            .map(|name| {
                let field = description
                    .schema
                    .fields()
                    .find(|f| f.name() == name)
                    .ok_or_else(|| {
                        Error::Internal(format!("partition column '{name}' is not in the schema"))
                    })?;
                Ok(schema::physical_name(field, column_mapping))
            })
            .collect::<Result<Vec<_>>>()?;
        let files = files
            .into_iter()
            .map(|(add, raw_path)| DataFile::from_add(add, raw_path, &partition_physical_names))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            location: table.table_url().clone(),
            source,
            version: description.version,
            schema: description.schema,
            partition_columns: description.partition_columns,
            partition_physical_names,
            properties: description.properties,
            protocol: description.protocol,
            column_mapping,
            files,
            clustering_columns: description.clustering_columns,
            row_tracking: description.row_tracking,
            log_store: table.log_store(),
            parsed_stats: None,
        })
    }

    /// The `add` action of `file`, as the log holds it (its path URI-decoded once; the
    /// spelling in the log is [`DataFile::raw_path`]).
    #[must_use]
    pub fn add_action(file: &DataFile) -> &Add {
        &file.add
    }

    /// Totals over the active files.
    #[must_use]
    pub fn totals(&self) -> TableTotals {
        let mut totals = TableTotals::default();
        for file in &self.files {
            totals.files += 1;
            totals.bytes = totals.bytes.saturating_add(file.size_bytes);
            match file.num_live_rows() {
                Some(rows) => totals.rows = totals.rows.saturating_add(rows),
                None => totals.files_without_row_count += 1,
            }
        }
        totals
    }

    /// The leaf columns of the data files (partition columns excluded), in schema order, with
    /// logical and physical paths. Struct fields are expanded; arrays and maps are leaves.
    #[must_use]
    pub fn data_leaf_columns(&self) -> Vec<LeafColumn> {
        schema::leaf_columns(&self.schema, self.column_mapping)
            .into_iter()
            .filter(|leaf| !self.partition_columns.contains(&leaf.logical[0]))
            .collect()
    }

    /// Checks that the table may be rewritten: its features
    /// ([`ProtocolInfo::check_writable`]) and, when IcebergCompatV1 or V2 is active, the
    /// writer rules the table itself must keep for a writer to follow them
    /// ([`iceberg::writer_rule_fault`]); under column mapping, field ids that a Parquet
    /// file can carry ([`schema::field_ids_fault`]).
    ///
    /// # Errors
    /// [`Error::UnsupportedFeatures`] naming every unsupported feature;
    /// [`Error::BrokenFeatureRule`] naming the rule the table breaks.
    pub fn check_writable(&self) -> Result<()> {
        self.protocol.check_writable(&self.display_location())?;
        match self.rule_fault() {
            None => Ok(()),
            Some(rule) => Err(Error::BrokenFeatureRule {
                table: self.display_location(),
                rule,
            }),
        }
    }

    /// The first rule of its table features the table breaks, so that no file written into
    /// it could keep the rule: under column mapping, field ids a Parquet file cannot carry
    /// ([`schema::field_ids_fault`]); with IcebergCompatV1 or V2 active, their writer rules
    /// ([`iceberg::writer_rule_fault`]). `None` when there is none. `inspect` lists it,
    /// [`TableView::check_writable`] refuses it.
    #[must_use]
    pub fn rule_fault(&self) -> Option<String> {
        (self.column_mapping != ColumnMappingMode::None)
            .then(|| schema::field_ids_fault(&self.schema, false))
            .flatten()
            .or_else(|| iceberg::writer_rule_fault(self))
    }

    /// Whether new data files must hold the partition columns: the
    /// `materializePartitionColumns` feature ([`ProtocolInfo::materializes_partition_columns`])
    /// or an active IcebergCompatV1 or V2, whose writers must materialize them (PROTOCOL.md
    /// "Writer Requirements for IcebergCompatV2").
    #[must_use]
    pub fn materializes_partition_columns(&self) -> bool {
        self.protocol.materializes_partition_columns()
            || !iceberg::active_compat(&self.protocol, &self.properties).is_empty()
    }

    /// A table property, if set.
    #[must_use]
    pub fn property(&self, key: &str) -> Option<&str> {
        self.properties.get(key).map(String::as_str)
    }

    /// A display form of the table location for messages: the local path for `file://`
    /// URLs, the URL otherwise.
    #[must_use]
    pub fn display_location(&self) -> String {
        if self.location.scheme() == "file"
            && let Ok(path) = self.location.to_file_path()
        {
            return path.display().to_string();
        }
        // A SAS token or a password in the URI never reaches output.
        location::redact_uri(self.location.as_str())
    }
}

impl DataFile {
    fn from_add(add: Add, raw_path: String, partition_physical_names: &[String]) -> Result<Self> {
        let size_bytes = u64::try_from(add.size).map_err(|_| {
            Error::data_file(&add.path, format!("has a negative size {}", add.size))
        })?;
        let raw_partition_values: Vec<Option<String>> = partition_physical_names
            .iter()
            .map(|name| add.partition_values.get(name).cloned().flatten())
            .collect();
        // Values that do not parse as their column's type stop delta-kernel's log replay
        // before this point; `log_check` then names the file (`partition_value_strict`).
        let partition_values = raw_partition_values
            .iter()
            // "An empty string for any type translates to a null partition value."
            .map(|value| value.clone().filter(|v| !v.is_empty()))
            .collect();
        let stats = match add.stats.as_deref() {
            Some(text) if !text.trim().is_empty() => Some(FileStats::from_json(&add.path, text)?),
            _ => None,
        };
        let tags = add
            .tags
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect::<BTreeMap<_, _>>();
        Ok(Self {
            path: add.path.clone(),
            raw_path,
            size_bytes,
            modification_time_ms: add.modification_time,
            partition_values,
            raw_partition_values,
            stats,
            deletion_vector: add.deletion_vector.clone(),
            tags,
            clustering_provider: add.clustering_provider.clone(),
            base_row_id: add.base_row_id,
            default_row_commit_version: add.default_row_commit_version,
            add,
        })
    }
}

pub use location::SUPPORTED_SCHEMES;

/// Says, in the user's words, why the local path `location` is not a table, before
/// deltalake is asked: a missing path, a directory without `_delta_log`, a log with no
/// commit or checkpoint.
///
/// # Errors
/// [`Error::NoTable`] with the reason.
fn check_location(location: &str) -> Result<()> {
    let no = |message: String| Error::NoTable {
        table: location.to_string(),
        message,
    };
    let path = match Url::parse(location) {
        Ok(url) if url.scheme() == "file" => match url.to_file_path() {
            Ok(path) => path,
            Err(()) => return Ok(()),
        },
        _ => std::path::PathBuf::from(location),
    };
    if !path.exists() {
        return Err(no("does not exist".into()));
    }
    if !path.is_dir() {
        return Err(no("is a file, not a Delta table directory".into()));
    }
    let log = path.join("_delta_log");
    if !log.is_dir() {
        return Err(no(
            "is not a Delta table: it has no _delta_log directory".into()
        ));
    }
    let has_entry = std::fs::read_dir(&log).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.len() > 20
                && name.as_bytes()[..20].iter().all(u8::is_ascii_digit)
                && (name.ends_with(".json") || name.ends_with(".parquet"))
        })
    });
    if !has_entry {
        return Err(no(
            "is not a Delta table: its _delta_log holds no commit or checkpoint".into(),
        ));
    }
    Ok(())
}

/// Why a table in an object store could not be loaded, in the user's words: the store
/// cannot be reached (or refuses the credentials), or it holds nothing under `_delta_log/`.
async fn remote_load_error(
    source: &TableLocation,
    url: &Url,
    error: deltalake::DeltaTableError,
) -> Error {
    use futures::StreamExt as _;
    let table = source.to_string();
    let root = match deltalake::logstore::store_for(url, source.storage_options.to_map()) {
        Ok(store) => store,
        Err(e) => {
            return Error::NoTable {
                table,
                message: format!("cannot be opened with the storage options given: {e}"),
            };
        }
    };
    // The store is rooted at the table.
    let prefix = deltalake::Path::from("_delta_log");
    let mut listing = root.list(Some(&prefix));
    match listing.next().await {
        None => Error::NoTable {
            table,
            message: "is not a Delta table: nothing is stored under its _delta_log/".into(),
        },
        Some(Err(e)) => Error::NoTable {
            table,
            message: format!("cannot be read from its object store: {e}"),
        },
        Some(Ok(_)) => Error::NotADeltaTable {
            table,
            source: Box::new(error),
        },
    }
}

/// Whether a partition value's text is a value of the column's type (PROTOCOL.md
/// "Partition Value Serialization"): integers within their width, numbers, booleans, dates
/// and timestamps as the predicate language reads them.
pub(crate) fn partition_value_fits(data_type: &deltalake::kernel::DataType, text: &str) -> bool {
    use crate::value::{Typed, parse_typed};
    use deltalake::kernel::{DataType, PrimitiveType as P};
    let DataType::Primitive(p) = data_type else {
        return true;
    };
    let range = match p {
        P::Byte => Some((i128::from(i8::MIN), i128::from(i8::MAX))),
        P::Short => Some((i128::from(i16::MIN), i128::from(i16::MAX))),
        P::Integer => Some((i128::from(i32::MIN), i128::from(i32::MAX))),
        P::Long => Some((i128::from(i64::MIN), i128::from(i64::MAX))),
        _ => None,
    };
    match (parse_typed(data_type, text), range) {
        (Some(Typed::Int(v)), Some((lo, hi))) => (lo..=hi).contains(&v),
        (Some(_), Some(_)) | (None, _) => false,
        (Some(Typed::Float(v)), None) if matches!(p, P::Decimal(_)) => v.is_finite(),
        (Some(_), None) => true,
    }
}

/// As [`partition_value_fits`], and as strict as delta-kernel's parsing, to name the file
/// when a load fails: no spaces around numbers, a decimal's digits within its precision and
/// scale, and whatever else the kernel's own parser (`PrimitiveType::parse_scalar`, which
/// its log replay uses) refuses, such as a decimal written with fewer digits than its scale
/// or a timestamp without seconds.
pub(crate) fn partition_value_strict(data_type: &deltalake::kernel::DataType, text: &str) -> bool {
    use deltalake::kernel::{DataType, PrimitiveType as P};
    if !partition_value_fits(data_type, text) {
        return false;
    }
    let DataType::Primitive(p) = data_type else {
        return true;
    };
    if p.parse_scalar(text).is_err() {
        return false;
    }
    if matches!(p, P::String | P::Binary) {
        return true;
    }
    if text.trim() != text {
        return false;
    }
    if let P::Decimal(d) = p {
        let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        if !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
        {
            return false;
        }
        let whole = whole.trim_start_matches('0');
        let scale = usize::from(d.scale());
        let precision = usize::from(d.precision());
        return fraction.len() <= scale && whole.len() <= precision.saturating_sub(scale);
    }
    true
}
