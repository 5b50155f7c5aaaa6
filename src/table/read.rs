//! Reading one data file: fetch, decode Parquet, drop the rows its deletion vector deletes,
//! and align every batch to the physical schema of the files we write.
//!
//! Sources: PROTOCOL.md "Deletion Vectors" (row indexes are positions in the file, 0-based),
//! "Column Mapping" (match by physical name, or by Parquet field id in `id` mode), and
//! "Schema Evolution" (a column added after a file was written reads as null).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use delta_kernel::StorageHandler;
use deltalake::arrow::array::{
    Array, ArrayRef, BooleanArray, ListArray, MapArray, RecordBatch, RecordBatchOptions,
    StructArray, new_null_array,
};
use deltalake::arrow::compute::filter_record_batch;
use deltalake::arrow::datatypes::{DataType as ArrowType, Field, FieldRef, Fields, SchemaRef};
use deltalake::parquet::arrow::PARQUET_FIELD_ID_META_KEY;
use deltalake::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use deltalake::{ObjectStore, Path};
use object_store::ObjectStoreExt as _;
use rayon::prelude::*;
use url::Url;

use crate::error::{Error, Result};
use crate::table::schema::physical_arrow_schema;
use crate::table::{ColumnMappingMode, DataFile, TableView};

/// Rows per decoded batch.
pub const READ_BATCH_ROWS: usize = 8192;

/// Files whose bytes a compaction fetches at once by default (`--read-concurrency`).
pub const DEFAULT_READ_CONCURRENCY: usize = 8;

/// Bytes a prefetch holds at once: 256 MiB (or its first file alone, when larger).
pub const PREFETCH_BYTES: u64 = 256 << 20;
/// Fetched bytes of a compaction bin decoded at once, in parallel (16 MiB, or one larger
/// file): bounds the decoded rows held while they wait for their turn to be written.
pub const DECODE_BYTES: u64 = 16 << 20;

/// What reading needs from the table, shared by every worker thread.
#[derive(Clone)]
pub(crate) struct Reader {
    pub store: Arc<dyn ObjectStore>,
    pub runtime: tokio::runtime::Handle,
    pub storage: Arc<dyn StorageHandler>,
    pub table_url: Url,
    pub target_schema: SchemaRef,
    pub column_mapping: ColumnMappingMode,
    /// Row tracking with materialized columns: the last two columns of `target_schema` are
    /// the row ID and row commit version, filled for every row (PROTOCOL.md "Row Tracking").
    pub materialize_row_tracking: bool,
    /// Keep each live row with this probability, seeded (see `OptimizeOptions::with_sample`).
    pub sample: Option<(f64, u64)>,
    /// When set, a read stops between decoded batches with [`Error::Cancelled`].
    pub cancel: Option<Arc<AtomicBool>>,
    /// Another table whose files this table names by absolute URI (a sweep's scratch table).
    pub foreign: Option<Foreign>,
}

/// The object store of another table, for files named by absolute URIs inside its root.
#[derive(Clone)]
pub(crate) struct Foreign {
    /// The other table's root URL, with a trailing `/`.
    root: String,
    store: Arc<dyn ObjectStore>,
    storage: Arc<dyn StorageHandler>,
}

impl Foreign {
    /// The store of `table`'s files.
    pub(crate) fn of(table: &TableView) -> Self {
        Self {
            root: format!("{}/", table.location.as_str().trim_end_matches('/')),
            store: table.log_store.object_store(None),
            storage: table.log_store.engine(None).storage_handler(),
        }
    }

    /// The path of `path` (an absolute URI) inside this root, decoded, if it is inside.
    fn path_of(&self, path: &str) -> Option<Path> {
        let rest = path.strip_prefix(&self.root)?;
        let decoded = percent_encoding::percent_decode_str(rest).decode_utf8_lossy();
        Some(Path::parse(decoded.as_ref()).unwrap_or_else(|_| Path::from(decoded.as_ref())))
    }
}

impl Reader {
    /// The reader of `table`'s files, aligned to the physical schema of written files.
    /// Must be called inside a tokio runtime (it keeps its handle).
    ///
    /// # Errors
    /// [`Error::UnsupportedFeatures`] for a `void` column no data file can hold
    /// ([`crate::table::schema::unwritable_void`]).
    pub(crate) fn for_table(table: &TableView) -> Result<Self> {
        if let Some(reason) = crate::table::schema::unwritable_void(&table.schema) {
            return Err(Error::UnsupportedFeatures {
                table: table.display_location(),
                features: vec![reason],
            });
        }
        let mut target_schema = physical_arrow_schema(
            &table.schema,
            table.column_mapping,
            &table.partition_columns,
        )?;
        let materialized = table
            .row_tracking
            .as_ref()
            .and_then(crate::table::row_tracking::RowTracking::materialized_columns);
        if let Some((row_id, commit_version)) = materialized {
            let mut fields: Vec<FieldRef> = target_schema.fields().iter().cloned().collect();
            fields.push(Arc::new(Field::new(row_id, ArrowType::Int64, true)));
            fields.push(Arc::new(Field::new(commit_version, ArrowType::Int64, true)));
            target_schema = deltalake::arrow::datatypes::Schema::new(fields);
        }
        let engine = table.log_store.engine(None);
        Ok(Self {
            store: table.log_store.object_store(None),
            runtime: tokio::runtime::Handle::current(),
            storage: engine.storage_handler(),
            table_url: table.location.clone(),
            target_schema: Arc::new(target_schema),
            column_mapping: table.column_mapping,
            materialize_row_tracking: materialized.is_some(),
            sample: None,
            cancel: None,
            foreign: None,
        })
    }
}

/// Reads the live rows of a table's data files: Parquet decoded, rows deleted by the
/// deletion vector dropped, columns aligned to the table's physical schema (physical names,
/// partition columns left out, columns added by schema evolution as nulls).
///
/// The public edge for checks that need the data itself (brute-force skipping checks,
/// fingerprints). Sources as the module's.
#[derive(Clone)]
pub struct FileReader {
    inner: Reader,
}

impl FileReader {
    /// Creates the reader. Must be called inside a tokio runtime; [`FileReader::read`] then
    /// blocks on that runtime, so call it from a thread that is not one of its workers.
    ///
    /// # Errors
    /// [`Error::Internal`] / [`Error::Delta`] when the schema has a type Parquet files cannot
    /// hold.
    pub fn new(table: &TableView) -> Result<Self> {
        Ok(Self {
            inner: Reader::for_table(table)?,
        })
    }

    /// The Arrow schema of the batches [`FileReader::read`] returns.
    #[must_use]
    pub fn schema(&self) -> SchemaRef {
        self.inner.target_schema.clone()
    }

    /// Reads `file`'s live rows, in file order, in batches of up to [`READ_BATCH_ROWS`].
    ///
    /// # Errors
    /// [`Error::DataFile`] when the file is missing, is not Parquet, lacks a required column,
    /// or its row count disagrees with its `add` action or deletion vector.
    pub fn read(&self, file: &DataFile) -> Result<Vec<RecordBatch>> {
        self.inner.read(file)
    }
}

/// The object path of a data file: `path` relative to the table root, or an absolute URI
/// inside it.
pub(crate) fn object_path(table_url: &Url, path: &str) -> Result<Path> {
    if path.contains("://") {
        let root = table_url.as_str().trim_end_matches('/');
        let rest = path
            .strip_prefix(root)
            .and_then(|r| r.strip_prefix('/'))
            .ok_or_else(|| {
                Error::data_file(path, "has an absolute path outside the table root, which delta-layout does not rewrite")
            })?;
        let decoded = percent_encoding::percent_decode_str(rest).decode_utf8_lossy();
        return Ok(Path::parse(decoded.as_ref()).unwrap_or_else(|_| Path::from(decoded.as_ref())));
    }
    Ok(Path::parse(path).unwrap_or_else(|_| Path::from(path)))
}

impl Reader {
    /// Reads `file` and returns its live rows in the target schema.
    ///
    /// # Errors
    /// [`Error::DataFile`] when the file is missing, is not Parquet, lacks a required column,
    /// or its row count disagrees with its `add` action or deletion vector;
    /// [`Error::Cancelled`] when the cancel flag is set.
    pub(crate) fn read(&self, file: &DataFile) -> Result<Vec<RecordBatch>> {
        if self.is_cancelled() {
            return Err(Error::Cancelled);
        }
        let bytes = self.runtime.block_on(self.fetch(file))?;
        self.decode(file, bytes)
    }

    /// Reads `files` in order, fetching up to `concurrency` of them at once (a bounded
    /// prefetch: object stores answer each GET after tens of milliseconds, so a run of small
    /// files is read at the latency of one). Each file is decoded as [`Reader::read`] does,
    /// up to [`DECODE_BYTES`] of them in parallel; `each` gets the file and its batches, in
    /// order. At most `concurrency` files' bytes, and at most
    /// [`PREFETCH_BYTES`] (or one file when it alone is larger), are held at once.
    ///
    /// # Errors
    /// The first error of a fetch, a decode or `each`.
    pub(crate) fn read_each<'a>(
        &self,
        files: &[&'a DataFile],
        concurrency: usize,
        mut each: impl FnMut(&'a DataFile, Vec<RecordBatch>) -> Result<()>,
    ) -> Result<()> {
        use futures::StreamExt as _;
        let mut start = 0;
        while start < files.len() {
            if self.is_cancelled() {
                return Err(Error::Cancelled);
            }
            // The next chunk: up to `concurrency` files and PREFETCH_BYTES (at least one).
            let mut end = start + 1;
            let mut bytes = files[start].size_bytes;
            while end < files.len()
                && end - start < concurrency.max(1)
                && bytes.saturating_add(files[end].size_bytes) <= PREFETCH_BYTES
            {
                bytes += files[end].size_bytes;
                end += 1;
            }
            let chunk = &files[start..end];
            let fetched: Vec<Result<bytes::Bytes>> = self.runtime.block_on(
                futures::stream::iter(chunk.iter().map(|file| self.fetch(file)))
                    .buffered(concurrency.max(1))
                    .collect(),
            );
            // Decoded in parallel, in groups of at most DECODE_BYTES (or one file), and handed
            // to `each` in order: a bin of many files keeps several cores busy.
            let mut fetched = fetched.into_iter();
            let mut first = 0;
            while first < chunk.len() {
                let mut last = first + 1;
                let mut bytes = chunk[first].size_bytes;
                while last < chunk.len()
                    && bytes.saturating_add(chunk[last].size_bytes) <= DECODE_BYTES
                {
                    bytes += chunk[last].size_bytes;
                    last += 1;
                }
                let group: Vec<(&'a DataFile, Result<bytes::Bytes>)> = chunk[first..last]
                    .iter()
                    .copied()
                    .zip(fetched.by_ref())
                    .collect();
                let decoded: Vec<Result<Vec<RecordBatch>>> = group
                    .into_par_iter()
                    .map(|(file, bytes)| self.decode(file, bytes?))
                    .collect();
                for (file, batches) in chunk[first..last].iter().zip(decoded) {
                    each(file, batches?)?;
                }
                first = last;
            }
            start = end;
        }
        Ok(())
    }

    /// The bytes of `file`, from the table's store (or the other table's, see [`Foreign`]).
    async fn fetch(&self, file: &DataFile) -> Result<bytes::Bytes> {
        let foreign = self.foreign_path(&file.path);
        let (store, location) = match foreign {
            Some((foreign, path)) => (&foreign.store, path),
            None => (&self.store, object_path(&self.table_url, &file.path)?),
        };
        async {
            let got = store.get(&location).await?;
            got.bytes().await
        }
        .await
        .map_err(|source| {
            let message = if matches!(source, deltalake::ObjectStoreError::NotFound { .. }) {
                "is missing: the log lists it but storage does not have it"
            } else {
                "cannot be read from storage"
            };
            Error::DataFile {
                path: file.path.clone(),
                message: message.into(),
                source: Some(Box::new(source)),
            }
        })
    }

    /// Decodes the bytes of `file` (see [`Reader::read`]).
    fn decode(&self, file: &DataFile, bytes: bytes::Bytes) -> Result<Vec<RecordBatch>> {
        let corrupt = |source: deltalake::parquet::errors::ParquetError| Error::DataFile {
            path: file.path.clone(),
            message: "is not a readable Parquet file".into(),
            source: Some(Box::new(source)),
        };
        let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
        let metadata = ArrowReaderMetadata::load(&bytes, options.clone()).map_err(corrupt)?;
        // INT96 timestamps straight to microseconds: through 64-bit nanoseconds they wrap
        // outside the years 1677 to 2262.
        let hinted = super::convert::int96_as_micros(
            metadata.metadata().file_metadata().schema_descr(),
            metadata.schema(),
        )
        .map_err(|e| Error::data_file(&file.path, e.0))?;
        let metadata = match hinted {
            Some(hinted) => ArrowReaderMetadata::try_new(
                metadata.metadata().clone(),
                options.with_schema(hinted),
            )
            .map_err(corrupt)?,
            None => metadata,
        };
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(bytes, metadata);
        let physical_rows = u64::try_from(builder.metadata().file_metadata().num_rows())
            .map_err(|_| Error::data_file(&file.path, "has a negative row count"))?;
        if let Some(recorded) = file.num_records()
            && recorded != physical_rows
        {
            return Err(Error::data_file(
                &file.path,
                format!(
                    "has {physical_rows} rows but its add action records numRecords {recorded}"
                ),
            ));
        }
        let deleted = self.deleted_rows(file)?;
        let reader = builder
            .with_batch_size(READ_BATCH_ROWS)
            .build()
            .map_err(corrupt)?;
        let mut out = Vec::new();
        let mut offset: u64 = 0;
        for batch in reader {
            if self.is_cancelled() {
                return Err(Error::Cancelled);
            }
            let batch = batch.map_err(|source| Error::DataFile {
                path: file.path.clone(),
                message: "has a corrupt row group".into(),
                source: Some(Box::new(source)),
            })?;
            let rows = batch.num_rows() as u64;
            let aligned = align_batch(&batch, &self.target_schema, self.column_mapping).map_err(
                |e| match e {
                    Error::DataFile {
                        message, source, ..
                    } => Error::DataFile {
                        path: file.path.clone(),
                        message,
                        source,
                    },
                    other => other,
                },
            )?;
            let aligned = if self.materialize_row_tracking {
                fill_row_tracking(aligned, file, offset)?
            } else {
                aligned
            };
            let kept = if deleted.is_some() || self.sample.is_some() {
                let path_hash = xxhash_rust::xxh64::xxh64(file.path.as_bytes(), 0);
                let mask: BooleanArray = (offset..offset + rows)
                    .map(|r| {
                        let live = deleted.as_ref().is_none_or(|dv| !dv.contains(r));
                        let sampled = self
                            .sample
                            .is_none_or(|(fraction, seed)| sampled(path_hash ^ seed, r, fraction));
                        Some(live && sampled)
                    })
                    .collect();
                filter_record_batch(&aligned, &mask)
                    .map_err(|e| Error::arrow("applying a deletion vector", e))?
            } else {
                aligned
            };
            offset += rows;
            if kept.num_rows() > 0 {
                out.push(kept);
            }
        }
        if offset != physical_rows {
            return Err(Error::data_file(
                &file.path,
                format!("decoded {offset} rows but its footer says {physical_rows}"),
            ));
        }
        if let Some(dv) = &deleted {
            let in_range = dv.iter().filter(|&r| r < physical_rows).count() as u64;
            if in_range != dv.len() || dv.len() != file.num_deleted_rows() {
                return Err(Error::data_file(
                    &file.path,
                    format!(
                        "has a deletion vector of {} rows ({in_range} inside the file) but its descriptor says cardinality {}",
                        dv.len(),
                        file.num_deleted_rows()
                    ),
                ));
            }
        }
        Ok(out)
    }

    /// Whether the run's cancel flag is set.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// The other table and the object path of `path`, when it is an absolute URI inside the
    /// other table's root.
    fn foreign_path(&self, path: &str) -> Option<(&Foreign, Path)> {
        let foreign = self.foreign.as_ref()?;
        if !path.contains("://") {
            return None;
        }
        foreign.path_of(path).map(|p| (foreign, p))
    }

    fn deleted_rows(&self, file: &DataFile) -> Result<Option<roaring::RoaringTreemap>> {
        let Some(descriptor) = &file.deletion_vector else {
            return Ok(None);
        };
        let bad = |message: String, source: delta_kernel::Error| Error::DataFile {
            path: file.path.clone(),
            message,
            source: Some(Box::new(source)),
        };
        let kernel: delta_kernel::actions::deletion_vector::DeletionVectorDescriptor =
            descriptor.clone().try_into().map_err(|e| {
                bad(
                    "has a deletion vector descriptor that does not parse".into(),
                    e,
                )
            })?;
        // A file of another table: its `p` deletion vector is read from that table's store.
        let storage = match self.foreign_path(&file.path) {
            Some((foreign, _)) => foreign.storage.clone(),
            None => self.storage.clone(),
        };
        let treemap = kernel
            .read(storage, &self.table_url)
            .map_err(|e| bad("has a deletion vector that cannot be read".into(), e))?;
        Ok(Some(treemap))
    }
}

/// Whether row `row` of a file is in a sample of `fraction`: a uniform draw from the hash of
/// the row index and `key` (file and seed).
fn sampled(key: u64, row: u64, fraction: f64) -> bool {
    let h = xxhash_rust::xxh64::xxh64(&row.to_le_bytes(), key);
    #[expect(clippy::cast_precision_loss, reason = "a uniform draw")]
    let u = (h >> 11) as f64 / (1u64 << 53) as f64;
    u < fraction
}

/// Replaces the last two columns (materialized row ID and row commit version) by every row's
/// stable values: the materialized value where not null, else `baseRowId` + the row's index
/// in the file (`first_row` is the batch's first index) and `defaultRowCommitVersion`.
fn fill_row_tracking(batch: RecordBatch, file: &DataFile, first_row: u64) -> Result<RecordBatch> {
    use deltalake::arrow::array::{AsArray, Int64Array};
    use deltalake::arrow::datatypes::Int64Type;
    let n = batch.num_columns();
    let (ids, versions) = (
        batch.column(n - 2).as_primitive::<Int64Type>(),
        batch.column(n - 1).as_primitive::<Int64Type>(),
    );
    let missing = |what: &str| {
        Error::data_file(
            &file.path,
            format!(
                "has rows without a materialized {what} and its add action has none either, so row tracking cannot be preserved"
            ),
        )
    };
    let mut row_ids = Vec::with_capacity(batch.num_rows());
    let mut commit_versions = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        row_ids.push(if ids.is_valid(row) {
            ids.value(row)
        } else {
            let base = file.base_row_id.ok_or_else(|| missing("row ID"))?;
            let index = i64::try_from(first_row + row as u64)
                .map_err(|_| Error::data_file(&file.path, "has too many rows"))?;
            base.checked_add(index)
                .ok_or_else(|| Error::data_file(&file.path, "has a baseRowId that overflows"))?
        });
        commit_versions.push(if versions.is_valid(row) {
            versions.value(row)
        } else {
            file.default_row_commit_version
                .ok_or_else(|| missing("row commit version"))?
        });
    }
    let mut columns = batch.columns().to_vec();
    columns[n - 2] = Arc::new(Int64Array::from(row_ids));
    columns[n - 1] = Arc::new(Int64Array::from(commit_versions));
    RecordBatch::try_new(batch.schema(), columns)
        .map_err(|e| Error::arrow("filling row tracking columns", e))
}

fn field_id(field: &Field) -> Option<&str> {
    field
        .metadata()
        .get(PARQUET_FIELD_ID_META_KEY)
        .map(String::as_str)
}

/// The file's field for `target`: by field id in `id` mode, else by name, exactly or, when
/// no name matches exactly, ignoring case (Delta column names are case-insensitive, and Spark
/// reads such files by the name in any case).
///
/// # Errors
/// [`Error::DataFile`] (path filled in by the caller) when several fields match `path` in
/// case only: which one holds the column cannot be told.
fn find_field<'a>(
    fields: &'a Fields,
    target: &Field,
    mode: ColumnMappingMode,
    path: &str,
) -> Result<Option<(usize, &'a FieldRef)>> {
    if mode == ColumnMappingMode::Id
        && let Some(id) = field_id(target)
        && let Some(found) = fields
            .iter()
            .enumerate()
            .find(|(_, f)| field_id(f) == Some(id))
    {
        return Ok(Some(found));
    }
    if let Some(found) = fields
        .iter()
        .enumerate()
        .find(|(_, f)| f.name() == target.name())
    {
        return Ok(Some(found));
    }
    let folded: Vec<(usize, &FieldRef)> = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name().eq_ignore_ascii_case(target.name()))
        .collect();
    match folded.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        several => Err(Error::data_file(
            "",
            format!(
                "has {} columns that match '{path}' ignoring case ({}), so which one holds it cannot be told",
                several.len(),
                several
                    .iter()
                    .map(|(_, f)| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// Refuses a variant column whose struct holds anything besides `metadata` and `value`
/// (shredded columns are unshredded before, by [`unshred`]; a `typed_value` left here would
/// hold part of each value, PROTOCOL.md "Variant Shredding", and dropping it would change
/// the values). The check goes
/// by the target's Arrow type, so a plain struct of exactly the two non-null binaries
/// `metadata` and `value` is held to it too: a field its file has beyond them is an error,
/// never silently dropped.
///
/// # Errors
/// [`Error::DataFile`] (path filled in by the caller) naming the column.
fn check_unshredded(source: &Fields, path: &str) -> Result<()> {
    use crate::table::schema::{VARIANT_METADATA, VARIANT_TYPED_VALUE, VARIANT_VALUE};
    if let Some(extra) = source.iter().find(|f| {
        !f.name().eq_ignore_ascii_case(VARIANT_METADATA)
            && !f.name().eq_ignore_ascii_case(VARIANT_VALUE)
    }) {
        let what = if extra.name().eq_ignore_ascii_case(VARIANT_TYPED_VALUE) {
            "shredded (a typed_value field), and delta-layout rewrites only unshredded variants (metadata and value); rewrite this file with an engine that unshreds, such as Delta Spark's OPTIMIZE".to_string()
        } else {
            format!(
                "with a field '{}' besides metadata and value, which is not a variant's Parquet layout",
                extra.name()
            )
        };
        return Err(Error::data_file(
            "",
            format!("stores variant column '{path}' {what}"),
        ));
    }
    for required in [VARIANT_METADATA, VARIANT_VALUE] {
        if !source
            .iter()
            .any(|f| f.name().eq_ignore_ascii_case(required))
        {
            return Err(Error::data_file(
                "",
                format!(
                    "stores variant column '{path}' without its '{required}' binary, which every variant has (PROTOCOL.md \"Variant data in Parquet\")"
                ),
            ));
        }
    }
    Ok(())
}

/// A shredded variant column (`metadata`, `value` and `typed_value`: PROTOCOL.md "Variant
/// Shredding") as the unshredded variants it holds (`metadata` and `value` binaries): each
/// value rebuilt from its `value` and `typed_value` as the Parquet Variant Shredding spec
/// says, by arrow-rs' `unshred_variant`, nested `typed_value`s included; the metadata
/// dictionaries are kept as they are (a shredded field's name is in them, as the spec
/// requires). Null rows stay null. `path` names the column in errors.
///
/// # Errors
/// [`Error::DataFile`] (path filled in by the caller) naming the column when the struct is no
/// shredded variant (a field other than `metadata`, `value` and `typed_value`, exactly so
/// spelt; binaries of other types; a `typed_value` of a type the spec has not) or a value
/// cannot be rebuilt (a field both in `value` and `typed_value`).
fn unshred(source: &StructArray, path: &str) -> Result<StructArray> {
    use crate::table::schema::{VARIANT_METADATA, VARIANT_TYPED_VALUE, VARIANT_VALUE};
    use deltalake::arrow::compute::cast;
    use deltalake::arrow::datatypes::DataType;
    use parquet_variant_compute::{VariantArray, unshred_variant};
    let invalid = |e: &dyn std::fmt::Display| {
        Error::data_file(
            "",
            format!(
                "stores variant column '{path}' shredded in a way that cannot be read back to its values ({e})"
            ),
        )
    };
    // The library finds the three fields by their exact names: any other field, or one of
    // these spelt otherwise, would be dropped or read as missing. Refused instead.
    let names = [VARIANT_METADATA, VARIANT_VALUE, VARIANT_TYPED_VALUE];
    if let Some(other) = source
        .fields()
        .iter()
        .find(|f| !names.contains(&f.name().as_str()))
    {
        return Err(Error::data_file(
            "",
            format!(
                "stores variant column '{path}' shredded with a field '{}' besides metadata, value and typed_value, which is not a shredded variant's Parquet layout",
                other.name()
            ),
        ));
    }
    let shredded = VariantArray::try_new(source).map_err(|e| invalid(&e))?;
    let plain = unshred_variant(&shredded)
        .map_err(|e| invalid(&e))?
        .into_inner();
    // The rebuilt binaries as plain `Binary`, the type every unshredded variant is read as.
    let columns = [VARIANT_METADATA, VARIANT_VALUE]
        .iter()
        .map(|name| {
            let column = plain
                .column_by_name(name)
                .ok_or_else(|| Error::Internal(format!("unshredded variant without {name}")))?;
            cast(column, &DataType::Binary).map_err(|e| invalid(&e))
        })
        .collect::<Result<Vec<_>>>()?;
    let fields = [VARIANT_METADATA, VARIANT_VALUE]
        .iter()
        .zip(&columns)
        .map(|(name, column)| {
            deltalake::arrow::datatypes::Field::new(
                *name,
                DataType::Binary,
                column.null_count() > 0,
            )
        })
        .collect::<Vec<_>>();
    StructArray::try_new(fields.into(), columns, plain.nulls().cloned()).map_err(|e| invalid(&e))
}

/// `parent.child` for error messages, the child back-quoted when it needs it.
fn child_path(parent: &str, child: &str) -> String {
    format!(
        "{parent}.{}",
        crate::column::format_path(std::slice::from_ref(&child.to_string()))
    )
}

/// Aligns a decoded batch to `target`: columns matched by physical name (or field id),
/// missing nullable columns filled with nulls, types cast, nested fields renamed.
pub(crate) fn align_batch(
    batch: &RecordBatch,
    target: &SchemaRef,
    mode: ColumnMappingMode,
) -> Result<RecordBatch> {
    let source = batch.schema();
    let columns = target
        .fields()
        .iter()
        .map(|t| {
            let path = crate::column::format_path(std::slice::from_ref(t.name()));
            match find_field(source.fields(), t, mode, &path)? {
                Some((i, _)) => align_array(batch.column(i), t, mode, &path),
                None if t.is_nullable() => Ok(new_null_array(t.data_type(), batch.num_rows())),
                None => Err(Error::data_file(
                    "",
                    format!("lacks the required (non-nullable) column '{}'", t.name()),
                )),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new_with_options(
        target.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )
    .map_err(|e| Error::arrow("aligning a batch to the table schema", e))
}

/// Aligns one column to `target`; `path` is the column's path in the table's physical
/// schema, as errors name it (`s.a` for a struct field, `l (its elements)` inside a list).
fn align_array(
    array: &ArrayRef,
    target: &Field,
    mode: ColumnMappingMode,
    path: &str,
) -> Result<ArrayRef> {
    if array.data_type() == target.data_type() {
        return Ok(array.clone());
    }
    let context = || format!("converting column '{path}' to {}", target.data_type());
    match (target.data_type(), array.data_type()) {
        (ArrowType::Struct(target_fields), ArrowType::Struct(_)) => {
            let source = array
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(|| Error::Internal("struct array expected".into()))?;
            let variant = crate::table::schema::is_unshredded_variant(target.data_type());
            let unshredded;
            let source = if variant
                && source.fields().iter().any(|f| {
                    f.name()
                        .eq_ignore_ascii_case(crate::table::schema::VARIANT_TYPED_VALUE)
                }) {
                unshredded = unshred(source, path)?;
                &unshredded
            } else {
                source
            };
            let source_fields = source.fields().clone();
            if variant {
                check_unshredded(&source_fields, path)?;
            }
            let children = target_fields
                .iter()
                .map(|t| {
                    let child = child_path(path, t.name());
                    match find_field(&source_fields, t, mode, &child)? {
                        Some((i, _)) => align_array(source.column(i), t, mode, &child),
                        None => Ok(new_null_array(t.data_type(), source.len())),
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            let array =
                StructArray::try_new(target_fields.clone(), children, source.nulls().cloned());
            Ok(Arc::new(array.map_err(|e| {
                if variant {
                    // A null binary in a variant that is not null: no valid Variant encoding.
                    Error::data_file(
                        "",
                        format!(
                            "stores variant column '{path}' with a null metadata or value binary in a variant that is not null, which is no valid variant ({e})"
                        ),
                    )
                } else {
                    Error::arrow(context(), e)
                }
            })?))
        }
        (ArrowType::List(target_item), ArrowType::List(_)) => {
            let source = array
                .as_any()
                .downcast_ref::<ListArray>()
                .ok_or_else(|| Error::Internal("list array expected".into()))?;
            let values = align_array(
                source.values(),
                target_item,
                mode,
                &format!("{path} (its elements)"),
            )?;
            Ok(Arc::new(
                ListArray::try_new(
                    target_item.clone(),
                    source.offsets().clone(),
                    values,
                    source.nulls().cloned(),
                )
                .map_err(|e| Error::arrow(context(), e))?,
            ))
        }
        (ArrowType::Map(target_entries, sorted), ArrowType::Map(_, _)) => {
            let source = array
                .as_any()
                .downcast_ref::<MapArray>()
                .ok_or_else(|| Error::Internal("map array expected".into()))?;
            let ArrowType::Struct(entry_fields) = target_entries.data_type() else {
                return Err(Error::Internal("map entries must be a struct".into()));
            };
            let entries = source.entries();
            // Map entries are (key, value) by position; writers name them differently.
            let children = entry_fields
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let part = if i == 0 { "keys" } else { "values" };
                    align_array(entries.column(i), t, mode, &format!("{path} (its {part})"))
                })
                .collect::<Result<Vec<_>>>()?;
            let entries = StructArray::try_new(entry_fields.clone(), children, None)
                .map_err(|e| Error::arrow(context(), e))?;
            Ok(Arc::new(
                MapArray::try_new(
                    target_entries.clone(),
                    source.offsets().clone(),
                    entries,
                    source.nulls().cloned(),
                    *sorted,
                )
                .map_err(|e| Error::arrow(context(), e))?,
            ))
        }
        (target_type, _) => super::convert::convert_exact(array, target_type)
            .map_err(|e| Error::data_file("", format!("column '{path}' {}", e.0))),
    }
}
