//! Writing the rows of one bin into Parquet files of about the target size, with their stats.
//!
//! Rows are buffered as Arrow batches until they make a row group ([`row_group_bytes`] at
//! the bytes per row encoded so far, at most [`MAX_ROW_GROUP_ROWS`]; the first one
//! [`first_row_group_rows`], fewer of wide rows: at most [`row_group_bytes`] of Arrow memory),
//! which is then encoded with its columns in parallel (arrow-rs' `ArrowColumnWriter`, one
//! task per leaf column), so one writer keeps several cores busy: a partition that yields
//! only a few large files no longer encodes on one core. A file's size is its encoded row
//! groups plus the buffered rows at that bytes per row. Without a row count for the stream
//! a file closes once that reaches the target. With one
//! (a bin's live rows, a clustering range's rows), the bytes still to come are estimated
//! from the bytes per row written so far, and a file closes once it holds its share of what
//! is left by [`crate::plan::output_files`]: files land within
//! [`crate::plan::FILE_SIZE_TOLERANCE`] of the target, and the last one takes the rest
//! instead of leaving a sliver; never past 1.2x the target. File names follow Spark's shape:
//! `part-<bin>-<run id>-<writer>-<random>-c<seq>.<codec>.parquet`, inside the partition's directory
//! ([`crate::plan::PartitionPlan::directory`]). Each file is uploaded as it is written
//! ([`super::upload`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use deltalake::arrow::array::{ArrayRef, RecordBatch, UInt32Array};
use deltalake::arrow::compute::take;
use deltalake::arrow::datatypes::{FieldRef, Schema, SchemaRef};
use deltalake::parquet::arrow::ArrowWriter;
use deltalake::parquet::arrow::arrow_writer::{
    ArrowLeafColumn, ArrowRowGroupWriterFactory, compute_leaves,
};
use deltalake::parquet::basic::Compression;
use deltalake::parquet::errors::ParquetError;
use deltalake::parquet::file::properties::WriterProperties;
use deltalake::parquet::file::writer::SerializedFileWriter;
use deltalake::{ObjectStore, Path};
use rayon::prelude::*;

use super::stats::StatsCollector;
use super::timings::Stage;
use super::upload::{FailureSlot, FileUpload};
use crate::error::{Error, Result};
use crate::table::{DataFile, FileStats, LeafColumn};
use deltalake::kernel::Add;

/// The Parquet compression of written files (`--compression`).
///
/// The default is zstd at [`DEFAULT_ZSTD_LEVEL`], as delta-rs writes zstd: a quarter smaller
/// than snappy on the table of BENCHMARKS.md. Every codec here is read by Spark, delta-rs,
/// DuckDB and Trino (delta-rs and DuckDB are checked in CI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// Snappy (Spark's default).
    Snappy,
    /// Zstandard at a level from 1 to 22.
    Zstd(i32),
    /// LZ4 (the raw LZ4 of current Parquet writers).
    Lz4,
    /// Gzip at a level from 0 to 9.
    Gzip(u32),
    /// No compression.
    None,
}

/// Zstandard level of the default codec: on TPC-H lineitem (BENCHMARKS.md) level 3 writes
/// 2 to 3% fewer bytes than level 1 (which cannot match the zero high bytes of `PLAIN`
/// integers: its minimum match is 6 to 7 bytes) for 1 to 3% more wall time, and fewer bytes
/// than delta-rs' optimize, which writes zstd at level 4.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

impl Default for Codec {
    fn default() -> Self {
        Codec::Zstd(DEFAULT_ZSTD_LEVEL)
    }
}

impl Codec {
    /// Parses `snappy`, `zstd`, `zstd:LEVEL` (1 to 22), `lz4`, `gzip`, `gzip:LEVEL` (0 to 9)
    /// or `none`, case-insensitive.
    ///
    /// # Errors
    /// A message saying what is accepted.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let lower = text.trim().to_ascii_lowercase();
        let (name, level) = match lower.split_once(':') {
            Some((n, l)) => (n, Some(l)),
            None => (lower.as_str(), None),
        };
        let bad = || {
            format!(
                "'{text}' is not a codec (snappy, zstd, zstd:1 to zstd:22, lz4, gzip, gzip:0 to gzip:9, none)"
            )
        };
        Ok(match (name, level) {
            ("snappy", None) => Codec::Snappy,
            ("lz4", None) => Codec::Lz4,
            ("none" | "uncompressed", None) => Codec::None,
            ("zstd", None) => Codec::Zstd(DEFAULT_ZSTD_LEVEL),
            ("zstd", Some(l)) => match l.parse::<i32>() {
                Ok(l) if (1..=22).contains(&l) => Codec::Zstd(l),
                _ => return Err(bad()),
            },
            ("gzip", None) => Codec::Gzip(6),
            ("gzip", Some(l)) => match l.parse::<u32>() {
                Ok(l) if l <= 9 => Codec::Gzip(l),
                _ => return Err(bad()),
            },
            _ => return Err(bad()),
        })
    }

    /// The codec as [`Codec::parse`] reads it back: `snappy`, `zstd:LEVEL`, `lz4`,
    /// `gzip:LEVEL` or `none`.
    #[must_use]
    pub fn spec(self) -> String {
        match self {
            Codec::Snappy => "snappy".into(),
            Codec::Zstd(level) => format!("zstd:{level}"),
            Codec::Lz4 => "lz4".into(),
            Codec::Gzip(level) => format!("gzip:{level}"),
            Codec::None => "none".into(),
        }
    }

    /// The name in file names, as Spark spells it: `part-...c000.zstd.parquet`.
    #[must_use]
    pub fn file_suffix(self) -> &'static str {
        match self {
            Codec::Snappy => "snappy",
            Codec::Zstd(_) => "zstd",
            Codec::Lz4 => "lz4",
            Codec::Gzip(_) => "gz",
            Codec::None => "uncompressed",
        }
    }

    /// The codec as the `parquet` crate's writer setting.
    #[must_use]
    pub fn parquet(self) -> Compression {
        use deltalake::parquet::basic::{GzipLevel, ZstdLevel};
        match self {
            Codec::Snappy => Compression::SNAPPY,
            Codec::Zstd(l) => Compression::ZSTD(ZstdLevel::try_new(l).unwrap_or_default()),
            Codec::Lz4 => Compression::LZ4_RAW,
            Codec::Gzip(l) => Compression::GZIP(GzipLevel::try_new(l).unwrap_or_default()),
            Codec::None => Compression::UNCOMPRESSED,
        }
    }
}

/// Largest row group, encoded bytes (16 MiB, about DuckDB's 122,880 rows of TPC-H
/// lineitem): its rows wait as Arrow batches, two to four times these bytes, until the row
/// group is encoded, so this bounds a writer's buffer.
pub const MAX_ROW_GROUP_BYTES: u64 = 16 << 20;

/// One file written by a bin.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WrittenFile {
    /// Path relative to the table root (not URI-encoded).
    pub path: String,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Rows in the file.
    pub num_records: u64,
    /// The stats JSON for its `add` action.
    pub stats_json: String,
    /// Tags for its `add` action (the cube tags of a clustering run; empty otherwise).
    pub tags: BTreeMap<String, String>,
}

impl WrittenFile {
    /// This file (written by this run, not in the log yet) as a data file of `partition_of`'s
    /// partition, so that a later compaction round can plan and read it like the log's
    /// files: its path, size and stats (`numRecords`), no deletion vector, no tags.
    ///
    /// # Errors
    /// [`Error::DataFile`] when its stats JSON does not parse.
    pub(crate) fn to_data_file(&self, partition_of: &DataFile) -> Result<DataFile> {
        let add = Add {
            path: self.path.clone(),
            partition_values: partition_of.add.partition_values.clone(),
            size: i64::try_from(self.size_bytes)
                .map_err(|_| Error::Internal("file size over i64".into()))?,
            modification_time: partition_of.modification_time_ms,
            data_change: false,
            stats: Some(self.stats_json.clone()),
            ..Add::default()
        };
        Ok(DataFile {
            path: self.path.clone(),
            raw_path: self.path.clone(),
            size_bytes: self.size_bytes,
            modification_time_ms: partition_of.modification_time_ms,
            partition_values: partition_of.partition_values.clone(),
            raw_partition_values: partition_of.raw_partition_values.clone(),
            stats: Some(FileStats::from_json(&self.path, &self.stats_json)?),
            deletion_vector: None,
            tags: BTreeMap::new(),
            clustering_provider: None,
            base_row_id: None,
            default_row_commit_version: None,
            add,
        })
    }
}

/// Streams batches into rolling Parquet files, each uploaded as it is written
/// ([`super::upload`]: one put when it closes, or in parts while it grows).
pub(crate) struct RollingWriter {
    // config
    schema: SchemaRef,
    directory: String,
    bin_id: usize,
    run_id: String,
    writer: usize,
    codec: Codec,
    target_file_bytes: u64,
    leaves: Vec<LeafColumn>,
    with_tight_bounds: bool,
    tags: BTreeMap<String, String>,
    // resources
    store: Arc<dyn ObjectStore>,
    runtime: tokio::runtime::Handle,
    expected_rows: Option<u64>,
    upload_part_bytes: usize,
    plain_columns: Vec<String>,
    clock: Arc<super::timings::Clock>,
    /// One-row arrays appended, repeated, to every batch (see [`WriterConfig::constants`]).
    constants: Vec<ArrayRef>,
    // state
    current: Option<OpenFile>,
    written: Vec<WrittenFile>,
    /// Rows handed to the writer so far, over every file.
    rows: u64,
    /// Rows and bytes of the row groups encoded so far, over every file: the bytes per row
    /// that size the rows not yet encoded.
    encoded_rows: u64,
    encoded_bytes: u64,
}

/// The file being written: its row groups encoded so far, and the rows of the next one.
struct OpenFile {
    writer: SerializedFileWriter<FileUpload>,
    factory: ArrowRowGroupWriterFactory,
    stats: StatsCollector,
    /// Its path, relative to the table root.
    path: String,
    /// The storage failure behind a failed write, if any.
    failure: FailureSlot,
    /// Rows of the next row group, not yet encoded.
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    /// Arrow bytes of `pending` (counted only before the writer's first row group).
    pending_arrow_bytes: u64,
    row_groups: usize,
}

/// Arrow bytes of `batch`'s rows (of its slice only, where it is a slice of a larger batch).
fn arrow_bytes(batch: &RecordBatch) -> u64 {
    batch
        .columns()
        .iter()
        .map(|column| {
            column
                .to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| column.get_array_memory_size()) as u64
        })
        .sum()
}

/// The error of a failed Parquet write to the file at `path`: the storage failure behind it
/// when its upload failed (a part could not be sent), else the Parquet error.
fn file_error(path: &str, failure: &FailureSlot, source: ParquetError) -> Error {
    match failure.take() {
        Some(failure) => Error::ObjectStore {
            path: path.to_owned(),
            source: Box::new(failure),
        },
        None => Error::Parquet {
            path: path.to_owned(),
            source,
        },
    }
}

/// What a [`RollingWriter`] needs to know.
pub(crate) struct WriterConfig {
    pub schema: SchemaRef,
    pub directory: String,
    pub bin_id: usize,
    /// [`crate::plan::Plan::run_id`].
    pub run_id: String,
    /// The writer's number inside its bin (a clustering range; 0 for compaction), so that
    /// file names are unique without a random part.
    pub writer: usize,
    /// The compression of the files.
    pub codec: Codec,
    pub target_file_bytes: u64,
    pub leaves: Vec<LeafColumn>,
    pub with_tight_bounds: bool,
    pub tags: BTreeMap<String, String>,
    pub store: Arc<dyn ObjectStore>,
    pub runtime: tokio::runtime::Handle,
    /// Rows the stream will hold, when known (an estimate: it only moves where files are
    /// cut): files are then cut by [`crate::plan::output_files`] of the bytes still to come.
    pub expected_rows: Option<u64>,
    /// Bytes of an upload's parts ([`super::upload::UPLOAD_PART_BYTES`]; smaller in tests).
    pub upload_part_bytes: usize,
    /// Leaf columns written without a dictionary ([`crate::plan::Plan::plain_columns`]).
    pub plain_columns: Vec<String>,
    /// Receives the encode and upload seconds ([`super::timings`]).
    pub clock: Arc<super::timings::Clock>,
    /// Columns every written row holds the same value of, appended after `schema`'s: the
    /// partition columns of a `materializePartitionColumns` table, each with a one-row
    /// array of the bin's partition value ([`crate::table::schema::materialized_partition_columns`]).
    /// Empty otherwise. They get no stats (partition values are in the `add` action).
    pub constants: Vec<(FieldRef, ArrayRef)>,
}

/// Most rows of a row group: 2^20.
pub const MAX_ROW_GROUP_ROWS: usize = 1 << 20;
/// Most rows of a writer's first row group (65,536), which measures the bytes per row that
/// size the later ones.
pub const FIRST_ROW_GROUP_ROWS: usize = 1 << 16;

/// Fewest rows a writer takes at a time (64).
pub const MIN_ROWS_PER_WRITE: usize = 64;

/// Rows of a writer's first row group at `target_file_bytes`: one per KiB of the target,
/// between 256 and [`FIRST_ROW_GROUP_ROWS`] (so a small target is not passed before anything
/// is measured, unless rows are larger than 1 KiB encoded).
#[must_use]
pub fn first_row_group_rows(target_file_bytes: u64) -> usize {
    usize::try_from(target_file_bytes / 1024)
        .unwrap_or(usize::MAX)
        .clamp(1 << 8, FIRST_ROW_GROUP_ROWS)
}

/// The encoded bytes of a row group at `target_file_bytes`: a quarter of the target, between
/// 1 MiB and [`MAX_ROW_GROUP_BYTES`] (fewer when [`MAX_ROW_GROUP_ROWS`] comes first). The
/// rows of one row group are held as Arrow batches until it is encoded: about two to four
/// times these bytes.
#[must_use]
pub fn row_group_bytes(target_file_bytes: u64) -> u64 {
    (target_file_bytes / 4).clamp(1 << 20, MAX_ROW_GROUP_BYTES)
}

/// The writer properties of every file written: `codec`, row groups of at most
/// [`MAX_ROW_GROUP_ROWS`] rows and [`row_group_bytes`] (what `ArrowWriter` itself would cut
/// at; the rolling writer cuts its row groups itself, by the same limits), and no dictionary
/// for the leaf columns of `plain_columns` (dotted physical paths: columns whose dictionary
/// would outgrow its page in every row group, [`super::estimate::plain_columns`]; their values
/// are written `PLAIN`, an encoding every Parquet reader reads). Other columns keep arrow-rs'
/// defaults (dictionary encoding up to a 1 MiB dictionary page, then `PLAIN`).
pub(crate) fn writer_properties(
    codec: Codec,
    target_file_bytes: u64,
    plain_columns: &[String],
) -> WriterProperties {
    let mut builder = WriterProperties::builder()
        .set_compression(codec.parquet())
        .set_max_row_group_row_count(Some(MAX_ROW_GROUP_ROWS))
        .set_max_row_group_bytes(Some(
            usize::try_from(row_group_bytes(target_file_bytes)).unwrap_or(usize::MAX),
        ));
    for column in plain_columns {
        builder = builder.set_column_dictionary_enabled(
            deltalake::parquet::schema::types::ColumnPath::from(column.as_str()),
            false,
        );
    }
    builder.build()
}

impl RollingWriter {
    pub(crate) fn new(config: WriterConfig) -> Self {
        let schema = if config.constants.is_empty() {
            config.schema
        } else {
            let fields: Vec<FieldRef> = config
                .schema
                .fields()
                .iter()
                .cloned()
                .chain(config.constants.iter().map(|(field, _)| field.clone()))
                .collect();
            Arc::new(Schema::new_with_metadata(
                fields,
                config.schema.metadata().clone(),
            ))
        };
        Self {
            schema,
            directory: config.directory,
            bin_id: config.bin_id,
            run_id: config.run_id,
            writer: config.writer,
            codec: config.codec,
            target_file_bytes: config.target_file_bytes,
            leaves: config.leaves,
            with_tight_bounds: config.with_tight_bounds,
            tags: config.tags,
            store: config.store,
            runtime: config.runtime,
            expected_rows: config.expected_rows,
            upload_part_bytes: config.upload_part_bytes,
            plain_columns: config.plain_columns,
            clock: config.clock,
            constants: config
                .constants
                .into_iter()
                .map(|(_, value)| value)
                .collect(),
            current: None,
            written: Vec::new(),
            rows: 0,
            encoded_rows: 0,
            encoded_bytes: 0,
        }
    }

    /// Files written (and uploaded) so far, also when a later step failed: the caller deletes
    /// them on failure.
    pub(crate) fn written(&self) -> &[WrittenFile] {
        &self.written
    }

    fn properties(&self) -> WriterProperties {
        writer_properties(self.codec, self.target_file_bytes, &self.plain_columns)
    }

    /// Whether the open file, of `current` bytes, is to be closed now (see the module
    /// documentation).
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "byte estimates, rounded"
    )]
    fn is_full(&self, current: u64) -> bool {
        let target = self.target_file_bytes;
        let most = (target as f64 * (1.0 + crate::plan::FILE_SIZE_TOLERANCE)) as u64;
        let least = (target as f64 * (1.0 - crate::plan::FILE_SIZE_TOLERANCE)) as u64;
        if current >= most {
            return true;
        }
        if current < least {
            return false;
        }
        let Some(expected) = self.expected_rows else {
            return current >= target;
        };
        let closed: u64 = self.written.iter().map(|f| f.size_bytes).sum();
        let per_row = (closed + current) as f64 / self.rows.max(1) as f64;
        let left = (expected.saturating_sub(self.rows) as f64 * per_row) as u64;
        current >= crate::plan::output_files(current + left, target).file_bytes
    }

    /// Encoded bytes expected of `rows` rows not yet encoded, at the bytes per row encoded
    /// so far; `None` before the first row group. (By row counts and encoded bytes alone, so
    /// the same rows in other batches give the same files: out-of-core clustering writes the
    /// files an in-memory run writes.)
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "byte estimates, rounded"
    )]
    fn expected_bytes(&self, rows: usize) -> Option<u64> {
        (self.encoded_rows > 0)
            .then(|| (rows as f64 * self.encoded_bytes as f64 / self.encoded_rows as f64) as u64)
    }

    /// Writes `batch`, in slices of [`RollingWriter::rows_per_write`] rows.
    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let extended;
        let batch = if self.constants.is_empty() {
            batch
        } else {
            extended = self.with_constants(batch)?;
            &extended
        };
        // Before anything is encoded, the Arrow bytes per row of this batch bound the slices.
        let arrow_row_bytes = if self.encoded_rows == 0 {
            arrow_bytes(batch) / batch.num_rows() as u64
        } else {
            0
        };
        let mut offset = 0;
        while offset < batch.num_rows() {
            let rows = self
                .rows_per_write(arrow_row_bytes)
                .min(batch.num_rows() - offset);
            self.write_rows(&batch.slice(offset, rows))?;
            offset += rows;
        }
        Ok(())
    }

    /// `batch` with the constant columns appended, each its value repeated on every row.
    fn with_constants(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let rows = u32::try_from(batch.num_rows()).map_err(|_| {
            Error::Internal(format!("a batch of {} rows to write", batch.num_rows()))
        })?;
        let first = UInt32Array::from_value(0, usize::try_from(rows).unwrap_or(0));
        let mut columns = batch.columns().to_vec();
        for value in &self.constants {
            columns.push(
                take(value.as_ref(), &first, None)
                    .map_err(|e| Error::arrow("materializing the partition columns", e))?,
            );
        }
        RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| Error::arrow("materializing the partition columns", e))
    }

    /// Rows taken at a time, so that the open file is checked against the target about every
    /// 1/16 of it (at the bytes per row encoded so far; before anything is encoded, the first
    /// row group's rows, fewer when their Arrow bytes, at `arrow_row_bytes` a row, pass
    /// [`row_group_bytes`]): a batch larger than the target (a small target, a read batch of
    /// many rows) no longer passes it whole.
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a row count, rounded"
    )]
    fn rows_per_write(&self, arrow_row_bytes: u64) -> usize {
        if self.encoded_rows == 0 || self.encoded_bytes == 0 {
            let by_bytes = row_group_bytes(self.target_file_bytes)
                .checked_div(arrow_row_bytes)
                .map_or(usize::MAX, |rows| {
                    usize::try_from(rows).unwrap_or(usize::MAX)
                });
            return first_row_group_rows(self.target_file_bytes)
                .min(by_bytes)
                .max(MIN_ROWS_PER_WRITE);
        }
        let per_row = self.encoded_bytes as f64 / self.encoded_rows as f64;
        ((self.target_file_bytes as f64 / 16.0 / per_row) as usize).max(MIN_ROWS_PER_WRITE)
    }

    fn write_rows(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if self.current.is_none() {
            self.open_file()?;
        }
        let measured = self.encoded_rows > 0;
        let file = self.current.as_mut().expect("opened above");
        self.clock
            .time(Stage::Encode, || file.stats.update(batch))?;
        file.pending.push(batch.clone());
        file.pending_rows += batch.num_rows();
        if !measured {
            file.pending_arrow_bytes += arrow_bytes(batch);
        }
        self.rows += batch.num_rows() as u64;
        let pending_rows = file.pending_rows;
        let pending_arrow_bytes = file.pending_arrow_bytes;
        // The first row group is cut by rows, or by its Arrow bytes when rows are wide (a
        // large binary column), so that a file of few wide rows is not one row group, held
        // whole until it is encoded; later ones by the bytes per row encoded so far.
        let full = match self.expected_bytes(pending_rows) {
            Some(bytes) => bytes >= row_group_bytes(self.target_file_bytes),
            None => {
                pending_rows >= first_row_group_rows(self.target_file_bytes)
                    || pending_arrow_bytes >= row_group_bytes(self.target_file_bytes)
            }
        };
        if full || pending_rows >= MAX_ROW_GROUP_ROWS {
            self.encode_row_group()?;
        }
        let file = self.current.as_ref().expect("opened above");
        let current = file.writer.bytes_written() as u64
            + self.expected_bytes(file.pending_rows).unwrap_or(0);
        if self.is_full(current) {
            self.close_current()?;
        }
        Ok(())
    }

    /// Opens the next file: its name, its upload and its Parquet writer.
    fn open_file(&mut self) -> Result<()> {
        let seq = self.written.len();
        // The run id tells which run wrote a file; the writer number and a random part keep
        // names unique, and a file's single put never replaces an existing object.
        let name = format!(
            "part-{:05}-{}-{:05}-{}-c{seq:03}.{}.parquet",
            self.bin_id,
            self.run_id,
            self.writer,
            &uuid::Uuid::new_v4().simple().to_string()[..8],
            self.codec.file_suffix()
        );
        let path = if self.directory.is_empty() {
            name
        } else {
            format!("{}/{name}", self.directory)
        };
        let location = Path::parse(&path).unwrap_or_else(|_| Path::from(path.as_str()));
        let reserve = usize::try_from(
            self.target_file_bytes
                .saturating_add(self.target_file_bytes / 4),
        )
        .unwrap_or(usize::MAX);
        let upload = FileUpload::new(
            self.store.clone(),
            location,
            self.runtime.clone(),
            self.upload_part_bytes,
            reserve,
        );
        let failure = upload.failure();
        let (writer, factory) =
            ArrowWriter::try_new(upload, self.schema.clone(), Some(self.properties()))
                .and_then(ArrowWriter::into_serialized_writer)
                .map_err(|source| Error::Parquet {
                    path: path.clone(),
                    source,
                })?;
        self.current = Some(OpenFile {
            writer,
            factory,
            stats: StatsCollector::new(self.leaves.clone(), self.with_tight_bounds),
            path,
            failure,
            pending: Vec::new(),
            pending_rows: 0,
            pending_arrow_bytes: 0,
            row_groups: 0,
        });
        Ok(())
    }

    /// The error of a failed Parquet write to the open file ([`file_error`]).
    fn write_error(&self, source: ParquetError) -> Error {
        match self.current.as_ref() {
            Some(file) => file_error(&file.path, &file.failure, source),
            None => Error::Parquet {
                path: self.directory.clone(),
                source,
            },
        }
    }

    /// Encodes the pending rows of the open file as one row group, its columns in parallel
    /// (arrow-rs' `ArrowColumnWriter`: one writer per leaf column, each on its own task),
    /// and appends it to the file.
    fn encode_row_group(&mut self) -> Result<()> {
        self.try_encode_row_group()
            .map_err(|source| self.write_error(source))
    }

    fn try_encode_row_group(&mut self) -> std::result::Result<(), ParquetError> {
        let Some(file) = self.current.as_mut() else {
            return Ok(());
        };
        if file.pending.is_empty() {
            return Ok(());
        }
        let batches = std::mem::take(&mut file.pending);
        let rows = std::mem::take(&mut file.pending_rows);
        file.pending_arrow_bytes = 0;
        let writers = file.factory.create_column_writers(file.row_groups)?;
        // Each batch's leaf columns, in the writers' order.
        let fields = self.schema.fields();
        let num_leaves = writers.len();
        let clock = &self.clock;
        let leaves = batches
            .par_iter()
            .map(|batch| {
                clock.time(Stage::Encode, || {
                    let mut out = Vec::with_capacity(num_leaves);
                    for (field, column) in fields.iter().zip(batch.columns()) {
                        out.extend(compute_leaves(field, column)?);
                    }
                    Ok(out)
                })
            })
            .collect::<std::result::Result<Vec<Vec<ArrowLeafColumn>>, ParquetError>>()?;
        drop(batches);
        let chunks = writers
            .into_par_iter()
            .enumerate()
            .map(|(i, mut writer)| {
                clock.time(Stage::Encode, || {
                    for batch in &leaves {
                        writer.write(&batch[i])?;
                    }
                    writer.close()
                })
            })
            .collect::<std::result::Result<Vec<_>, ParquetError>>()?;
        drop(leaves);
        let before = file.writer.bytes_written();
        // Appending hands the encoded bytes to the upload, which may wait for parts in
        // flight.
        clock.time(Stage::Upload, || {
            let mut row_group = file.writer.next_row_group()?;
            for chunk in chunks {
                chunk.append_to_row_group(&mut row_group)?;
            }
            row_group.close()
        })?;
        file.row_groups += 1;
        self.encoded_rows += rows as u64;
        self.encoded_bytes += (file.writer.bytes_written() - before) as u64;
        Ok(())
    }

    fn close_current(&mut self) -> Result<()> {
        self.encode_row_group()?;
        let Some(OpenFile {
            writer,
            stats,
            path,
            failure,
            ..
        }) = self.current.take()
        else {
            return Ok(());
        };
        // The footer is written here, and with it the last bytes reach the upload.
        let upload = self
            .clock
            .time(Stage::Upload, || writer.into_inner())
            .map_err(|source| file_error(&path, &failure, source))?;
        let multipart = upload.is_multipart();
        match self.clock.time(Stage::Upload, || upload.finish()) {
            Ok(size_bytes) => {
                self.written.push(WrittenFile {
                    path,
                    size_bytes,
                    num_records: stats.num_records(),
                    stats_json: stats.finish(),
                    tags: self.tags.clone(),
                });
                Ok(())
            }
            Err(source) => {
                // A single put may have stored the object before failing: listed for the
                // clean-up (a failed multipart upload was aborted: nothing to delete).
                if !multipart {
                    self.written.push(WrittenFile {
                        path: path.clone(),
                        size_bytes: 0,
                        num_records: 0,
                        stats_json: String::new(),
                        tags: BTreeMap::new(),
                    });
                }
                Err(Error::ObjectStore {
                    path,
                    source: Box::new(source),
                })
            }
        }
    }

    /// Closes the last file.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.close_current()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::directory::partition_directory;
    use deltalake::arrow::array::{Int64Array, StringArray};
    use deltalake::arrow::datatypes::{DataType, Field, Schema};
    use deltalake::kernel::{DataType as DeltaType, PrimitiveType};
    use object_store::ObjectStoreExt as _;

    #[test]
    fn rolls_files_at_the_target_and_keeps_every_row() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let leaf = |name: &str, t: PrimitiveType| LeafColumn {
            logical: vec![name.into()],
            physical: vec![name.into()],
            data_type: DeltaType::Primitive(t),
        };
        let mut writer = RollingWriter::new(WriterConfig {
            schema: schema.clone(),
            directory: "p=1".into(),
            bin_id: 7,
            run_id: "0123456789abcdef".into(),
            writer: 3,
            codec: Codec::default(),
            target_file_bytes: 20_000,
            leaves: vec![
                leaf("id", PrimitiveType::Long),
                leaf("s", PrimitiveType::String),
            ],
            with_tight_bounds: false,
            tags: BTreeMap::new(),
            store: store.clone(),
            runtime: runtime.handle().clone(),
            expected_rows: None,
            // Parts far smaller than a file: every file is a multipart upload.
            upload_part_bytes: 4096,
            plain_columns: Vec::new(),
            clock: Arc::default(),
            constants: Vec::new(),
        });
        for chunk in 0..40i64 {
            let ids: Vec<i64> = (chunk * 1000..(chunk + 1) * 1000).collect();
            let strings: Vec<Option<String>> = ids
                .iter()
                .map(|i| (i % 7 != 0).then(|| format!("value-{}", i * 7919 % 100_003)))
                .collect();
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(ids)),
                    Arc::new(StringArray::from(strings)),
                ],
            )
            .unwrap();
            writer.write(&batch).unwrap();
        }
        writer.finish().unwrap();
        let files = writer.written().to_vec();
        assert!(files.len() > 2, "{} files", files.len());
        assert_eq!(files.iter().map(|f| f.num_records).sum::<u64>(), 40_000);
        let mut next_id = 0;
        for file in &files {
            assert!(
                file.path
                    .starts_with("p=1/part-00007-0123456789abcdef-00003-"),
                "{}",
                file.path
            );
            let location = Path::parse(&file.path).unwrap();
            let bytes = runtime
                .block_on(async { store.get(&location).await.unwrap().bytes().await })
                .unwrap();
            assert_eq!(bytes.len() as u64, file.size_bytes);
            // Rolled files overshoot the target by at most one row group.
            assert!(
                file.size_bytes < 20_000 * 3 / 2,
                "{} bytes",
                file.size_bytes
            );
            let stats: serde_json::Value = serde_json::from_str(&file.stats_json).unwrap();
            assert_eq!(stats["numRecords"], file.num_records);
            // Rows arrive in order, so each file holds the next contiguous id range.
            assert_eq!(stats["minValues"]["id"], next_id);
            next_id += file.num_records;
            assert_eq!(stats["maxValues"]["id"], next_id - 1);
        }
    }

    /// Writes `batches` batches of 8,192 rows (a sequential id, a random double, a string of
    /// 1,000 values) at a 2 MiB target; returns the file sizes and rows.
    fn roll(batches: i64, expected_rows: Option<u64>) -> (Vec<u64>, u64) {
        roll_at(2 << 20, batches, 8192, expected_rows)
    }

    /// As [`roll`], at `target` bytes, in batches of `batch_rows` rows.
    fn roll_at(
        target: u64,
        batches: i64,
        batch_rows: i64,
        expected_rows: Option<u64>,
    ) -> (Vec<u64>, u64) {
        use deltalake::arrow::array::Float64Array;
        use rand::{Rng as _, SeedableRng as _};
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("x", DataType::Float64, false),
            Field::new("s", DataType::Utf8, false),
        ]));
        let leaf = |name: &str, t: PrimitiveType| LeafColumn {
            logical: vec![name.into()],
            physical: vec![name.into()],
            data_type: DeltaType::Primitive(t),
        };
        let mut writer = RollingWriter::new(WriterConfig {
            schema: schema.clone(),
            directory: String::new(),
            bin_id: 0,
            run_id: "0123456789abcdef".into(),
            writer: 0,
            codec: Codec::default(),
            target_file_bytes: target,
            leaves: vec![
                leaf("id", PrimitiveType::Long),
                leaf("x", PrimitiveType::Double),
                leaf("s", PrimitiveType::String),
            ],
            with_tight_bounds: false,
            tags: BTreeMap::new(),
            store,
            runtime: runtime.handle().clone(),
            expected_rows,
            upload_part_bytes: crate::rewrite::upload::UPLOAD_PART_BYTES,
            plain_columns: Vec::new(),
            clock: Arc::default(),
            constants: Vec::new(),
        });
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for chunk in 0..batches {
            let ids: Vec<i64> = (chunk * batch_rows..(chunk + 1) * batch_rows).collect();
            let x: Vec<f64> = ids.iter().map(|_| rng.random::<f64>()).collect();
            let s: Vec<String> = ids
                .iter()
                .map(|_| format!("word-{}", rng.random_range(0..1000)))
                .collect();
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(ids)),
                    Arc::new(Float64Array::from(x)),
                    Arc::new(StringArray::from(s)),
                ],
            )
            .unwrap();
            writer.write(&batch).unwrap();
        }
        writer.finish().unwrap();
        let files = writer.written();
        (
            files.iter().map(|f| f.size_bytes).collect(),
            files.iter().map(|f| f.num_records).sum(),
        )
    }

    #[test]
    fn files_with_a_known_row_count_land_near_the_target_without_a_sliver() {
        let target = 2u64 << 20;
        // Without a row count: files of the target and whatever is left.
        let (plain, rows) = roll(120, None);
        assert_eq!(rows, 120 * 8192);
        let total: u64 = plain.iter().sum();
        // With one: the files output_files asks for, each within 20% of the target.
        let (sized, rows) = roll(120, Some(120 * 8192));
        assert_eq!(rows, 120 * 8192);
        let wanted = crate::plan::output_files(total, target);
        assert!(
            sized.len() as u64 == wanted.files,
            "{sized:?} against {wanted:?} ({plain:?})"
        );
        let within = |size: u64| size * 5 >= target * 4 && size * 5 <= target * 6;
        let remainders = sized.iter().filter(|&&s| !within(s)).count();
        assert!(
            remainders == usize::from(wanted.file_bytes == target),
            "{sized:?} against {wanted:?}"
        );
        // A row count far too low never lets a file grow past 1.2x the target.
        let (capped, rows) = roll(120, Some(8192));
        assert_eq!(rows, 120 * 8192);
        assert!(
            capped.iter().all(|&s| s * 5 <= target * 6 + target / 2),
            "{capped:?}"
        );
    }

    #[test]
    fn a_batch_larger_than_the_target_is_cut() {
        // One batch of 200,000 rows (about 2 MiB written) at a 128 KiB target.
        let target = 128u64 << 10;
        let (sizes, rows) = roll_at(target, 1, 200_000, Some(200_000));
        assert_eq!(rows, 200_000);
        assert!(sizes.len() >= 10, "{sizes:?}");
        assert!(
            sizes.iter().all(|&s| s * 5 <= target * 6),
            "{sizes:?} against {target}"
        );
        let small = sizes.iter().filter(|&&s| s * 5 < target * 4).count();
        assert!(small <= 1, "{sizes:?} against {target}");
    }

    #[test]
    fn wide_rows_are_cut_into_row_groups_and_files_by_their_bytes() {
        use deltalake::arrow::array::BinaryArray;
        use deltalake::parquet::file::reader::{FileReader as _, SerializedFileReader};
        use deltalake::parquet::record::RowAccessor as _;
        use rand::{RngCore as _, SeedableRng as _};
        // 6,000 rows of 4 KiB of random bytes (24 MiB, incompressible) in batches of 3,000
        // rows, at an 8 MiB target: fewer rows than the first row group's 8,192, so before
        // the first row group was also cut by its bytes, they made one 24 MiB row group and
        // one file, held whole in memory until it was uploaded.
        let target = 8u64 << 20;
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("b", DataType::Binary, false),
        ]));
        let leaf = |name: &str, t: PrimitiveType| LeafColumn {
            logical: vec![name.into()],
            physical: vec![name.into()],
            data_type: DeltaType::Primitive(t),
        };
        let mut writer = RollingWriter::new(WriterConfig {
            schema: schema.clone(),
            directory: String::new(),
            bin_id: 0,
            run_id: "0123456789abcdef".into(),
            writer: 0,
            codec: Codec::default(),
            target_file_bytes: target,
            leaves: vec![
                leaf("id", PrimitiveType::Long),
                leaf("b", PrimitiveType::Binary),
            ],
            with_tight_bounds: false,
            tags: BTreeMap::new(),
            store: store.clone(),
            runtime: runtime.handle().clone(),
            expected_rows: Some(6000),
            upload_part_bytes: crate::rewrite::upload::UPLOAD_PART_BYTES,
            plain_columns: Vec::new(),
            clock: Arc::default(),
            constants: Vec::new(),
        });
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let mut blobs = Vec::new();
        for chunk in 0..2i64 {
            let ids: Vec<i64> = (chunk * 3000..(chunk + 1) * 3000).collect();
            let values: Vec<Vec<u8>> = ids
                .iter()
                .map(|_| {
                    let mut blob = vec![0u8; 4096];
                    rng.fill_bytes(&mut blob);
                    blob
                })
                .collect();
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(ids)),
                    Arc::new(BinaryArray::from_iter_values(values.iter())),
                ],
            )
            .unwrap();
            blobs.extend(values);
            writer.write(&batch).unwrap();
        }
        writer.finish().unwrap();
        let files = writer.written().to_vec();
        assert_eq!(files.iter().map(|f| f.num_records).sum::<u64>(), 6000);
        assert!(files.len() >= 3, "{} files", files.len());
        let mut read = Vec::new();
        for file in &files {
            assert!(
                file.size_bytes * 5 <= target * 6,
                "{} bytes",
                file.size_bytes
            );
            let bytes = runtime
                .block_on(async {
                    store
                        .get(&Path::parse(&file.path).unwrap())
                        .await
                        .unwrap()
                        .bytes()
                        .await
                })
                .unwrap();
            let reader = SerializedFileReader::new(bytes).unwrap();
            let metadata = reader.metadata();
            assert!(
                metadata.num_row_groups() >= 2,
                "{}",
                metadata.num_row_groups()
            );
            for group in metadata.row_groups() {
                // A row group: about row_group_bytes (2 MiB here), plus a slice of rows.
                assert!(
                    u64::try_from(group.compressed_size()).unwrap() <= 2 * row_group_bytes(target),
                    "a row group of {} bytes",
                    group.compressed_size()
                );
            }
            // Every row is there, byte for byte, in order.
            for row in reader.get_row_iter(None).unwrap() {
                let row = row.unwrap();
                read.push(row.get_bytes(1).unwrap().data().to_vec());
            }
        }
        assert_eq!(read, blobs);
    }

    #[test]
    fn partition_directories_escape_like_hive() {
        assert_eq!(
            partition_directory(
                &["letter".into(), "date".into()],
                &[Some("/%20%f".into()), None]
            ),
            "letter=%2F%2520%25f/date=__HIVE_DEFAULT_PARTITION__"
        );
        assert_eq!(
            partition_directory(&["ts".into()], &[Some("2021-09-08 11:11:11".into())]),
            "ts=2021-09-08 11%3A11%3A11"
        );
        assert_eq!(
            partition_directory(&["d".into()], &[Some("😈".into())]),
            "d=😈"
        );
        assert_eq!(
            partition_directory(&["e".into()], &[Some(String::new())]),
            "e=__HIVE_DEFAULT_PARTITION__"
        );
        assert_eq!(partition_directory(&[], &[]), "");
    }
}
