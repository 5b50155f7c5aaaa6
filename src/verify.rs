//! `verify`: proves two versions of a table hold the same rows, with an order-independent
//! fingerprint of the row multiset.
//!
//! **Fingerprint.** Each live row is encoded unambiguously and hashed with xxHash64 (seed 0,
//! the `xxhash-rust` crate); a version's fingerprint is the row count, the wrapping sum and
//! the xor of the row hashes. Order does not matter; a lost or duplicated row changes the
//! count and the sum (the xor alone would miss a row duplicated twice).
//!
//! **Row encoding.** Columns in the order of the logical schema (partition columns at their
//! place, read from the log's partition values; data columns by physical name under column
//! mapping). Each value is a type tag byte, a null flag byte, and then:
//! integers as 8 bytes (i64), floats as the bits of the `f64` with every NaN one NaN and
//! -0.0 as 0.0, decimals as the 16-byte unscaled value and the scale, strings and binary as
//! an 8-byte length and the bytes, booleans as one byte, dates as days, timestamps as
//! microseconds (any Parquet unit normalized), lists and maps as an 8-byte length and each
//! element (key, value) encoded the same way, structs as each field in order. So
//! `('ab', null)`, `(null, 'ab')`, `('ab', '')`, `('a', 'bc')` and `('ab', 'c')` all encode
//! differently. Partition values are encoded as the typed value they stand for (Delta
//! writers spell the same timestamp or number differently).
//!
//! Sources: PROTOCOL.md "Column Mapping", "Partition Value Serialization", "Deletion
//! Vectors" (deleted rows are not rows of the version).

use std::collections::{BTreeMap, HashMap, HashSet};

use deltalake::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, PrimitiveArray, RecordBatch, StringArray, StructArray,
};
use deltalake::arrow::datatypes::{
    DataType as ArrowType, Date32Type, Date64Type, Decimal128Type, Float16Type, Float32Type,
    Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use rayon::prelude::*;
use serde::Serialize;
use xxhash_rust::xxh64::xxh64;

use crate::error::{Error, Result};
use crate::progress::{NoProgress, Phase, Progress, Scope};
use crate::table::read::FileReader;
use crate::table::{DataFile, TableView};
use crate::value::{Typed, normalize_float, parse_typed};

/// The order-independent fingerprint of a multiset of rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Fingerprint {
    /// Rows.
    pub rows: u64,
    /// Wrapping sum of the row hashes.
    pub sum: u64,
    /// Xor of the row hashes.
    pub xor: u64,
}

impl Fingerprint {
    /// Adds one row's hash.
    pub fn add(&mut self, hash: u64) {
        self.rows += 1;
        self.sum = self.sum.wrapping_add(hash);
        self.xor ^= hash;
    }

    /// Adds every row of `other`.
    pub fn merge(&mut self, other: &Self) {
        self.rows += other.rows;
        self.sum = self.sum.wrapping_add(other.sum);
        self.xor ^= other.xor;
    }

    /// `rows:sum:xor` with the hashes in hex, for display and JSON.
    #[must_use]
    pub fn to_hex(&self) -> String {
        format!("{}:{:016x}:{:016x}", self.rows, self.sum, self.xor)
    }
}

/// One version's fingerprints: the whole version and per partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionFingerprint {
    /// The version read.
    pub version: u64,
    /// All rows.
    pub total: Fingerprint,
    /// Per partition, keyed `col=value/col=value` (`""` unpartitioned; `__NULL__` for null).
    pub partitions: BTreeMap<String, Fingerprint>,
}

/// Rows that share a combination of the `--unique` columns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Duplicates {
    /// The version checked.
    pub version: u64,
    /// The columns.
    pub columns: Vec<String>,
    /// Distinct combinations held by more than one row.
    pub duplicated_keys: u64,
    /// Rows beyond the first for those combinations.
    pub extra_rows: u64,
    /// Up to [`MAX_DUPLICATE_EXAMPLES`] examples, most repeated first.
    pub examples: Vec<DuplicateExample>,
}

/// One combination of the `--unique` columns held by several rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DuplicateExample {
    /// The values, as text: `('a', 1, NULL)`.
    pub key: String,
    /// Rows holding it.
    pub rows: u64,
}

/// The result of `verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Whether both versions hold the same rows.
    pub equal: bool,
    /// Version A.
    pub version_a: u64,
    /// Version B.
    pub version_b: u64,
    /// Rows of version A.
    pub rows_a: u64,
    /// Rows of version B.
    pub rows_b: u64,
    /// Fingerprint of A (`rows:sum:xor`, hashes in hex).
    pub fingerprint_a: String,
    /// Fingerprint of B.
    pub fingerprint_b: String,
    /// Partitions whose fingerprints differ (present on one side only included), as
    /// `col=value/...`; [`WHOLE_TABLE`] for an unpartitioned table.
    pub partitions_differing: Vec<String>,
    /// With `--unique`: duplicates in A and in B.
    pub duplicates: Vec<Duplicates>,
}

/// How `partitions_differing` names the rows of an unpartitioned table.
pub const WHOLE_TABLE: &str = "(table)";

/// Most examples of duplicated keys kept.
pub const MAX_DUPLICATE_EXAMPLES: usize = 10;

/// Reads every live row of `table` and fingerprints it. Must be called inside a tokio
/// runtime, from a thread that is not one of its workers (files are read on a rayon pool
/// that blocks on the runtime): memory is bounded by the files read at once.
///
/// # Errors
/// [`Error::DataFile`] for a missing or unreadable file; [`Error::Arrow`] for a type the
/// encoding does not know.
pub fn fingerprint(table: &TableView) -> Result<VersionFingerprint> {
    fingerprint_with(table, &FileReader::new(table)?, &|_| {})
}

/// `advance` receives each file's size once its rows are hashed.
fn fingerprint_with(
    table: &TableView,
    reader: &FileReader,
    advance: &(dyn Fn(u64) + Sync),
) -> Result<VersionFingerprint> {
    let encoder = RowEncoder::new(table);
    let per_file: Vec<Result<(String, Fingerprint)>> = table
        .files
        .par_iter()
        .map(|file| {
            let batches = reader.read(file)?;
            let mut fp = Fingerprint::default();
            encoder.hash_rows(file, &batches, &mut |h, _| fp.add(h))?;
            advance(file.size_bytes);
            Ok((partition_key(table, file), fp))
        })
        .collect();
    let mut total = Fingerprint::default();
    let mut partitions: BTreeMap<String, Fingerprint> = BTreeMap::new();
    for result in per_file {
        let (key, fp) = result?;
        total.merge(&fp);
        partitions.entry(key).or_default().merge(&fp);
    }
    Ok(VersionFingerprint {
        version: table.version,
        total,
        partitions,
    })
}

/// The hash of every live row of every file, in [`TableView::files`] order (the row
/// hashes the fingerprints are made of). Same calling rules as [`fingerprint`].
///
/// # Errors
/// As [`fingerprint`].
pub fn row_hashes(table: &TableView) -> Result<Vec<Vec<u64>>> {
    let reader = FileReader::new(table)?;
    let encoder = RowEncoder::new(table);
    table
        .files
        .par_iter()
        .map(|file| {
            let mut hashes = Vec::new();
            encoder.hash_rows(file, &reader.read(file)?, &mut |h, _| hashes.push(h))?;
            Ok(hashes)
        })
        .collect()
}

/// Compares two versions (see [`fingerprint`]), reading both at once; with `unique`, also
/// looks for rows sharing a non-null combination of those columns in each version. Must be
/// called inside a tokio runtime, from a thread that is not one of its workers.
///
/// # Errors
/// As [`fingerprint`]; [`Error::UnknownColumn`] for a `unique` column the table lacks.
pub fn verify(a: &TableView, b: &TableView, unique: Option<&[String]>) -> Result<VerifyReport> {
    verify_with_progress(a, b, unique, &NoProgress)
}

/// [`verify`], reporting [`Phase::Fingerprint`] (the bytes of both versions' files, read
/// once each) and, with `unique`, one [`Phase::Duplicates`] per pass over a version's files
/// (its bytes; a second pass only when key hashes repeat), all in [`Scope::Run`].
///
/// # Errors
/// As [`verify`].
pub fn verify_with_progress(
    a: &TableView,
    b: &TableView,
    unique: Option<&[String]>,
    progress: &dyn Progress,
) -> Result<VerifyReport> {
    // Readers are made here, in the caller's runtime context; rayon threads then use them.
    let (reader_a, reader_b) = (FileReader::new(a)?, FileReader::new(b)?);
    progress.phase_started(
        Scope::Run,
        Phase::Fingerprint,
        total_bytes(a) + total_bytes(b),
    );
    let advance = |bytes: u64| progress.phase_advanced(Scope::Run, Phase::Fingerprint, bytes);
    let (fa, fb) = rayon::join(
        || fingerprint_with(a, &reader_a, &advance),
        || fingerprint_with(b, &reader_b, &advance),
    );
    let (fa, fb) = (fa?, fb?);
    progress.phase_finished(Scope::Run, Phase::Fingerprint);
    let keys: std::collections::BTreeSet<&String> =
        fa.partitions.keys().chain(fb.partitions.keys()).collect();
    let partitions_differing = keys
        .into_iter()
        .filter(|k| fa.partitions.get(*k) != fb.partitions.get(*k))
        .map(|k| {
            if k.is_empty() {
                WHOLE_TABLE.to_string()
            } else {
                k.clone()
            }
        })
        .collect();
    let mut duplicates = Vec::new();
    if let Some(columns) = unique {
        duplicates.push(duplicates_with(a, columns, progress)?);
        if b.version != a.version {
            duplicates.push(duplicates_with(b, columns, progress)?);
        }
    }
    Ok(VerifyReport {
        equal: fa.total == fb.total,
        version_a: a.version,
        version_b: b.version,
        rows_a: fa.total.rows,
        rows_b: fb.total.rows,
        fingerprint_a: fa.total.to_hex(),
        fingerprint_b: fb.total.to_hex(),
        partitions_differing,
        duplicates,
    })
}

/// Rows of `table` sharing a combination of `columns` where none is null. Exact: key hashes
/// find candidates, then the encoded keys themselves are compared.
///
/// # Errors
/// As [`fingerprint`]; [`Error::UnknownColumn`] for a column the table lacks.
pub fn find_duplicates(table: &TableView, columns: &[String]) -> Result<Duplicates> {
    duplicates_with(table, columns, &NoProgress)
}

/// [`find_duplicates`], reporting each pass as a [`Phase::Duplicates`].
fn duplicates_with(
    table: &TableView,
    columns: &[String],
    progress: &dyn Progress,
) -> Result<Duplicates> {
    let reader = FileReader::new(table)?;
    let encoder = RowEncoder::new(table).project(table, columns)?;
    let phase = |pass: &mut dyn FnMut(&DataFile) -> Result<()>| {
        progress.phase_started(Scope::Run, Phase::Duplicates, total_bytes(table));
        for file in &table.files {
            pass(file)?;
            progress.phase_advanced(Scope::Run, Phase::Duplicates, file.size_bytes);
        }
        progress.phase_finished(Scope::Run, Phase::Duplicates);
        Ok::<_, Error>(())
    };
    // Pass 1: hashes seen, and hashes seen twice.
    let mut seen: HashSet<u64> = HashSet::new();
    let mut twice: HashSet<u64> = HashSet::new();
    phase(&mut |file| {
        let batches = reader.read(file)?;
        encoder.hash_rows(file, &batches, &mut |h, has_null| {
            if !has_null && !seen.insert(h) {
                twice.insert(h);
            }
        })
    })?;
    drop(seen);
    // Pass 2: the exact keys behind the repeated hashes.
    let mut counts: HashMap<Vec<u8>, u64> = HashMap::new();
    if !twice.is_empty() {
        phase(&mut |file| {
            let batches = reader.read(file)?;
            encoder.keys(file, &batches, &twice, &mut |key| {
                *counts.entry(key).or_default() += 1;
            })
        })?;
    }
    let mut repeated: Vec<(Vec<u8>, u64)> = counts.into_iter().filter(|(_, n)| *n > 1).collect();
    repeated.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    Ok(Duplicates {
        version: table.version,
        columns: columns.to_vec(),
        duplicated_keys: repeated.len() as u64,
        extra_rows: repeated.iter().map(|(_, n)| n - 1).sum(),
        examples: repeated
            .iter()
            .take(MAX_DUPLICATE_EXAMPLES)
            .map(|(k, n)| DuplicateExample {
                key: render_key(k),
                rows: *n,
            })
            .collect(),
    })
}

/// The bytes of a version's data files, as the log records them.
fn total_bytes(table: &TableView) -> u64 {
    table.files.iter().map(|f| f.size_bytes).sum()
}

/// The partition key of a file: `col=value/...`, `__NULL__` for null, `""` unpartitioned.
fn partition_key(table: &TableView, file: &DataFile) -> String {
    table
        .partition_columns
        .iter()
        .zip(&file.partition_values)
        .map(|(c, v)| format!("{c}={}", v.as_deref().unwrap_or("__NULL__")))
        .collect::<Vec<_>>()
        .join("/")
}

/// Where each logical top-level column comes from.
#[derive(Debug, Clone)]
enum Source {
    /// Index into the partition values, with the column's Delta type.
    Partition(usize, deltalake::kernel::DataType),
    /// Index into the read batch's columns.
    Data(usize),
}

#[derive(Debug, Clone)]
struct RowEncoder {
    columns: Vec<(String, Source)>,
}

impl RowEncoder {
    fn new(table: &TableView) -> Self {
        let mut data_index = 0;
        // Void columns are in no data file and null in every row of every version.
        let columns = table
            .schema
            .fields()
            .filter(|field| !crate::table::schema::is_void(field.data_type()))
            .map(|field| {
                let name = field.name().clone();
                if let Some(i) = table.partition_columns.iter().position(|p| *p == name) {
                    (name, Source::Partition(i, field.data_type().clone()))
                } else {
                    data_index += 1;
                    (name, Source::Data(data_index - 1))
                }
            })
            .collect();
        Self { columns }
    }

    /// Keeps only `names` (top-level columns), in that order.
    fn project(mut self, table: &TableView, names: &[String]) -> Result<Self> {
        let mut out = Vec::new();
        for name in names {
            // A top-level name: `a.b` back-quoted, or a plain identifier.
            let wanted = match crate::column::parse_path(name) {
                Ok(path) if path.len() == 1 => path.into_iter().next().unwrap_or_default(),
                Ok(_) => {
                    return Err(Error::UnknownColumn {
                        column: name.clone(),
                        setting: Some(crate::Setting::UniqueColumns),
                        message: "is a nested field; unique columns are top-level columns (back-quote a name that holds a dot: `a.b`)".into(),
                    });
                }
                Err(message) => {
                    return Err(Error::invalid_option(
                        crate::Setting::UniqueColumns,
                        message,
                    ));
                }
            };
            let found = self.columns.iter().find(|(c, _)| *c == wanted).or_else(|| {
                self.columns
                    .iter()
                    .find(|(c, _)| c.eq_ignore_ascii_case(&wanted))
            });
            let Some(column) = found else {
                if let Some(message) = crate::table::schema::void_column_message(
                    &table.schema,
                    std::slice::from_ref(&wanted),
                ) {
                    return Err(Error::UnknownColumn {
                        column: name.clone(),
                        setting: Some(crate::Setting::UniqueColumns),
                        message,
                    });
                }
                let known: Vec<String> = self
                    .columns
                    .iter()
                    .map(|(c, _)| crate::column::format_path(std::slice::from_ref(c)))
                    .collect();
                return Err(Error::UnknownColumn {
                    column: name.clone(),
                    setting: Some(crate::Setting::UniqueColumns),
                    message: format!(
                        "does not exist in table '{}' (columns: {})",
                        table.display_location(),
                        known.join(", ")
                    ),
                });
            };
            out.push(column.clone());
        }
        self.columns = out;
        Ok(self)
    }

    /// Calls `f(encoded row, any column null)` for every row of the file, with one buffer.
    fn for_each_row(
        &self,
        file: &DataFile,
        batches: &[RecordBatch],
        f: &mut dyn FnMut(&[u8], bool),
    ) -> Result<()> {
        let partition = self.partition_bytes(file);
        let mut buffer = Vec::with_capacity(256);
        for batch in batches {
            let columns = self.resolve(batch, &partition);
            for row in 0..batch.num_rows() {
                buffer.clear();
                let has_null = Self::encode_row(&columns, row, &mut buffer)?;
                f(&buffer, has_null);
            }
        }
        Ok(())
    }

    /// Calls `f(hash, any column null)` for every row of the file.
    fn hash_rows(
        &self,
        file: &DataFile,
        batches: &[RecordBatch],
        f: &mut dyn FnMut(u64, bool),
    ) -> Result<()> {
        self.for_each_row(file, batches, &mut |row, has_null| {
            f(xxh64(row, 0), has_null)
        })
    }

    /// Calls `f(encoded key)` for the rows without nulls whose hash is in `wanted`.
    fn keys(
        &self,
        file: &DataFile,
        batches: &[RecordBatch],
        wanted: &HashSet<u64>,
        f: &mut dyn FnMut(Vec<u8>),
    ) -> Result<()> {
        self.for_each_row(file, batches, &mut |row, has_null| {
            if !has_null && wanted.contains(&xxh64(row, 0)) {
                f(row.to_vec());
            }
        })
    }

    /// The encodings of the file's partition values, per column (empty for data columns).
    fn partition_bytes(&self, file: &DataFile) -> Vec<(Vec<u8>, bool)> {
        self.columns
            .iter()
            .map(|(_, source)| match source {
                Source::Partition(i, data_type) => {
                    let mut out = Vec::new();
                    let value = file.partition_values.get(*i).cloned().flatten();
                    let typed = value.as_deref().map(|v| {
                        parse_typed(data_type, v).unwrap_or_else(|| Typed::Text(v.to_string()))
                    });
                    encode_typed(typed.as_ref(), &mut out);
                    (out, typed.is_none())
                }
                Source::Data(_) => (Vec::new(), false),
            })
            .collect()
    }

    /// The batch's columns, resolved once per batch (typed fast paths for common types).
    fn resolve<'a>(
        &self,
        batch: &'a RecordBatch,
        partition: &'a [(Vec<u8>, bool)],
    ) -> Vec<Col<'a>> {
        self.columns
            .iter()
            .enumerate()
            .map(|(k, (_, source))| match source {
                Source::Partition(..) => Col::Partition(&partition[k].0, partition[k].1),
                Source::Data(i) => Col::new(batch.column(*i)),
            })
            .collect()
    }

    fn encode_row(columns: &[Col<'_>], row: usize, out: &mut Vec<u8>) -> Result<bool> {
        let mut has_null = false;
        for column in columns {
            has_null |= column.encode(row, out)?;
        }
        Ok(has_null)
    }
}

/// One column of a batch, ready to encode values: the layout of [`encode_value`], with
/// typed fast paths for the common types.
enum Col<'a> {
    Partition(&'a [u8], bool),
    Int64(&'a PrimitiveArray<Int64Type>),
    Int32(&'a PrimitiveArray<Int32Type>),
    Float64(&'a PrimitiveArray<Float64Type>),
    Decimal(&'a PrimitiveArray<Decimal128Type>, i8),
    Utf8(&'a StringArray),
    Date32(&'a PrimitiveArray<Date32Type>),
    Micros(&'a PrimitiveArray<TimestampMicrosecondType>, u8),
    Boolean(&'a BooleanArray),
    Other(&'a ArrayRef),
}

impl<'a> Col<'a> {
    fn new(array: &'a ArrayRef) -> Self {
        match array.data_type() {
            ArrowType::Int64 => Self::Int64(array.as_primitive()),
            ArrowType::Int32 => Self::Int32(array.as_primitive()),
            ArrowType::Float64 => Self::Float64(array.as_primitive()),
            ArrowType::Decimal128(_, scale) => Self::Decimal(array.as_primitive(), *scale),
            ArrowType::Utf8 => Self::Utf8(array.as_string()),
            ArrowType::Date32 => Self::Date32(array.as_primitive()),
            ArrowType::Timestamp(TimeUnit::Microsecond, tz) => Self::Micros(
                array.as_primitive(),
                if tz.is_some() {
                    TAG_TIMESTAMP
                } else {
                    TAG_TIMESTAMP_NTZ
                },
            ),
            ArrowType::Boolean => Self::Boolean(array.as_boolean()),
            _ => Self::Other(array),
        }
    }

    /// Appends the value at `row`; returns whether it is null.
    fn encode(&self, row: usize, out: &mut Vec<u8>) -> Result<bool> {
        let head = |out: &mut Vec<u8>, tag: u8, null: bool| {
            out.push(tag);
            out.push(u8::from(null));
            null
        };
        Ok(match self {
            Self::Partition(bytes, null) => {
                out.extend_from_slice(bytes);
                *null
            }
            Self::Other(array) => {
                encode_value(array, row, out)?;
                array.is_null(row)
            }
            Self::Int64(a) => {
                let null = head(out, TAG_INT, a.is_null(row));
                if !null {
                    out.extend_from_slice(&i128::from(a.value(row)).to_le_bytes());
                }
                null
            }
            Self::Int32(a) => {
                let null = head(out, TAG_INT, a.is_null(row));
                if !null {
                    out.extend_from_slice(&i128::from(a.value(row)).to_le_bytes());
                }
                null
            }
            Self::Float64(a) => {
                let null = head(out, TAG_FLOAT, a.is_null(row));
                if !null {
                    out.extend_from_slice(&normalize_float(a.value(row)).to_bits().to_le_bytes());
                }
                null
            }
            Self::Decimal(a, scale) => {
                let null = head(out, TAG_DECIMAL, a.is_null(row));
                if !null {
                    out.extend_from_slice(&a.value(row).to_le_bytes());
                    out.extend_from_slice(&scale.to_le_bytes());
                }
                null
            }
            Self::Utf8(a) => {
                let null = head(out, TAG_STRING, a.is_null(row));
                if !null {
                    bytes(a.value(row).as_bytes(), out);
                }
                null
            }
            Self::Date32(a) => {
                let null = head(out, TAG_DATE, a.is_null(row));
                if !null {
                    out.extend_from_slice(&i64::from(a.value(row)).to_le_bytes());
                }
                null
            }
            Self::Micros(a, tag) => {
                let null = head(out, *tag, a.is_null(row));
                if !null {
                    out.extend_from_slice(&a.value(row).to_le_bytes());
                }
                null
            }
            Self::Boolean(a) => {
                let null = head(out, TAG_BOOL, a.is_null(row));
                if !null {
                    out.push(u8::from(a.value(row)));
                }
                null
            }
        })
    }
}

// Type tags of the encoding.
const TAG_PARTITION: u8 = 0x50;
const TAG_BOOL: u8 = 1;
const TAG_INT: u8 = 2;
const TAG_FLOAT: u8 = 3;
const TAG_DECIMAL: u8 = 4;
const TAG_STRING: u8 = 5;
const TAG_BINARY: u8 = 6;
const TAG_DATE: u8 = 7;
const TAG_TIMESTAMP: u8 = 8;
const TAG_TIMESTAMP_NTZ: u8 = 9;
const TAG_LIST: u8 = 10;
const TAG_MAP: u8 = 11;
const TAG_STRUCT: u8 = 12;
const TAG_NULL_TYPE: u8 = 13;

/// Encodes a partition value as the typed value it stands for, in the data values' layout.
fn encode_typed(value: Option<&Typed>, out: &mut Vec<u8>) {
    let Some(value) = value else {
        out.extend_from_slice(&[TAG_PARTITION, 1]);
        return;
    };
    match value {
        Typed::Int(i) => {
            out.extend_from_slice(&[TAG_INT, 0]);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Typed::Float(f) => {
            out.extend_from_slice(&[TAG_FLOAT, 0]);
            out.extend_from_slice(&normalize_float(*f).to_bits().to_le_bytes());
        }
        Typed::Text(s) => {
            out.extend_from_slice(&[TAG_STRING, 0]);
            bytes(s.as_bytes(), out);
        }
        Typed::Bool(b) => out.extend_from_slice(&[TAG_BOOL, 0, u8::from(*b)]),
        Typed::Date(d) => {
            out.extend_from_slice(&[TAG_DATE, 0]);
            let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
            out.extend_from_slice(&(*d - epoch).num_days().to_le_bytes());
        }
        Typed::Timestamp(t) => {
            out.extend_from_slice(&[TAG_TIMESTAMP, 0]);
            out.extend_from_slice(&t.and_utc().timestamp_micros().to_le_bytes());
        }
    }
}

fn len_bytes(len: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(&(len as u64).to_le_bytes());
}

/// Encodes one value: tag, null flag, value.
fn encode_value(array: &ArrayRef, row: usize, out: &mut Vec<u8>) -> Result<()> {
    let data_type = array.data_type();
    let tag = match data_type {
        ArrowType::Null => TAG_NULL_TYPE,
        ArrowType::Boolean => TAG_BOOL,
        ArrowType::Int8
        | ArrowType::Int16
        | ArrowType::Int32
        | ArrowType::Int64
        | ArrowType::UInt8
        | ArrowType::UInt16
        | ArrowType::UInt32
        | ArrowType::UInt64 => TAG_INT,
        ArrowType::Float16 | ArrowType::Float32 | ArrowType::Float64 => TAG_FLOAT,
        ArrowType::Decimal128(..) => TAG_DECIMAL,
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => TAG_STRING,
        ArrowType::Binary
        | ArrowType::LargeBinary
        | ArrowType::BinaryView
        | ArrowType::FixedSizeBinary(_) => TAG_BINARY,
        ArrowType::Date32 | ArrowType::Date64 => TAG_DATE,
        ArrowType::Timestamp(_, Some(_)) => TAG_TIMESTAMP,
        ArrowType::Timestamp(_, None) => TAG_TIMESTAMP_NTZ,
        ArrowType::List(_) | ArrowType::LargeList(_) => TAG_LIST,
        ArrowType::Map(..) => TAG_MAP,
        ArrowType::Struct(_) => TAG_STRUCT,
        other => {
            return Err(Error::Internal(format!(
                "verify cannot encode values of Arrow type {other}"
            )));
        }
    };
    out.push(tag);
    if array.is_null(row) {
        out.push(1);
        return Ok(());
    }
    out.push(0);
    macro_rules! int {
        ($t:ty) => {{
            let v = i128::from(array.as_primitive::<$t>().value(row));
            out.extend_from_slice(&v.to_le_bytes());
        }};
    }
    match data_type {
        ArrowType::Null => {}
        ArrowType::Boolean => out.push(u8::from(array.as_boolean().value(row))),
        ArrowType::Int8 => int!(Int8Type),
        ArrowType::Int16 => int!(Int16Type),
        ArrowType::Int32 => int!(Int32Type),
        ArrowType::Int64 => int!(Int64Type),
        ArrowType::UInt8 => int!(UInt8Type),
        ArrowType::UInt16 => int!(UInt16Type),
        ArrowType::UInt32 => int!(UInt32Type),
        ArrowType::UInt64 => int!(UInt64Type),
        ArrowType::Float16 => {
            let v = f64::from(array.as_primitive::<Float16Type>().value(row).to_f32());
            out.extend_from_slice(&normalize_float(v).to_bits().to_le_bytes());
        }
        ArrowType::Float32 => {
            let v = f64::from(array.as_primitive::<Float32Type>().value(row));
            out.extend_from_slice(&normalize_float(v).to_bits().to_le_bytes());
        }
        ArrowType::Float64 => {
            let v = array.as_primitive::<Float64Type>().value(row);
            out.extend_from_slice(&normalize_float(v).to_bits().to_le_bytes());
        }
        ArrowType::Decimal128(_, scale) => {
            out.extend_from_slice(
                &array
                    .as_primitive::<Decimal128Type>()
                    .value(row)
                    .to_le_bytes(),
            );
            out.extend_from_slice(&scale.to_le_bytes());
        }
        ArrowType::Utf8 => bytes(array.as_string::<i32>().value(row).as_bytes(), out),
        ArrowType::LargeUtf8 => bytes(array.as_string::<i64>().value(row).as_bytes(), out),
        ArrowType::Utf8View => bytes(array.as_string_view().value(row).as_bytes(), out),
        ArrowType::Binary => bytes(array.as_binary::<i32>().value(row), out),
        ArrowType::LargeBinary => bytes(array.as_binary::<i64>().value(row), out),
        ArrowType::BinaryView => bytes(array.as_binary_view().value(row), out),
        ArrowType::FixedSizeBinary(_) => bytes(array.as_fixed_size_binary().value(row), out),
        ArrowType::Date32 => {
            let days = i64::from(array.as_primitive::<Date32Type>().value(row));
            out.extend_from_slice(&days.to_le_bytes());
        }
        ArrowType::Date64 => {
            let days = array
                .as_primitive::<Date64Type>()
                .value(row)
                .div_euclid(86_400_000);
            out.extend_from_slice(&days.to_le_bytes());
        }
        ArrowType::Timestamp(unit, _) => {
            let micros = match unit {
                TimeUnit::Second => array
                    .as_primitive::<TimestampSecondType>()
                    .value(row)
                    .saturating_mul(1_000_000),
                TimeUnit::Millisecond => array
                    .as_primitive::<TimestampMillisecondType>()
                    .value(row)
                    .saturating_mul(1_000),
                TimeUnit::Microsecond => {
                    array.as_primitive::<TimestampMicrosecondType>().value(row)
                }
                TimeUnit::Nanosecond => array
                    .as_primitive::<TimestampNanosecondType>()
                    .value(row)
                    .div_euclid(1_000),
            };
            out.extend_from_slice(&micros.to_le_bytes());
        }
        ArrowType::List(_) => {
            let list = array.as_list::<i32>().value(row);
            len_bytes(list.len(), out);
            for i in 0..list.len() {
                encode_value(&list, i, out)?;
            }
        }
        ArrowType::LargeList(_) => {
            let list = array.as_list::<i64>().value(row);
            len_bytes(list.len(), out);
            for i in 0..list.len() {
                encode_value(&list, i, out)?;
            }
        }
        ArrowType::Map(..) => {
            let entries: StructArray = array.as_map().value(row);
            len_bytes(entries.len(), out);
            for i in 0..entries.len() {
                for column in entries.columns() {
                    encode_value(column, i, out)?;
                }
            }
        }
        ArrowType::Struct(_) => {
            let fields = array.as_struct();
            len_bytes(fields.num_columns(), out);
            for column in fields.columns() {
                encode_value(column, row, out)?;
            }
        }
        _ => unreachable!("tagged above"),
    }
    Ok(())
}

fn bytes(value: &[u8], out: &mut Vec<u8>) {
    len_bytes(value.len(), out);
    out.extend_from_slice(value);
}

/// A readable form of an encoded key, for duplicate examples: the hex of the encoding
/// would be useless, so strings and integers are decoded where the layout is simple.
fn render_key(key: &[u8]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i + 2 <= key.len() {
        let (tag, null) = (key[i], key[i + 1]);
        i += 2;
        if null == 1 {
            parts.push("NULL".to_string());
            continue;
        }
        let take = |n: usize| key.get(i..i + n);
        match tag {
            TAG_BOOL if i < key.len() => {
                parts.push((key[i] == 1).to_string());
                i += 1;
            }
            TAG_FLOAT | TAG_DATE | TAG_TIMESTAMP | TAG_TIMESTAMP_NTZ if take(8).is_some() => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&key[i..i + 8]);
                parts.push(match tag {
                    TAG_FLOAT => f64::from_bits(u64::from_le_bytes(b)).to_string(),
                    TAG_DATE => (chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default()
                        + chrono::Duration::days(i64::from_le_bytes(b)))
                    .to_string(),
                    _ => chrono::DateTime::from_timestamp_micros(i64::from_le_bytes(b))
                        .map_or_else(|| "?".into(), |t| t.naive_utc().to_string()),
                });
                i += 8;
            }
            TAG_DECIMAL if take(17).is_some() => {
                let mut b = [0u8; 16];
                b.copy_from_slice(&key[i..i + 16]);
                let unscaled = i128::from_le_bytes(b);
                let scale = key[i + 16].cast_signed();
                parts.push(format!("{unscaled}e-{scale}"));
                i += 17;
            }
            TAG_INT if i + 16 <= key.len() => {
                let mut b = [0u8; 16];
                b.copy_from_slice(&key[i..i + 16]);
                parts.push(i128::from_le_bytes(b).to_string());
                i += 16;
            }
            TAG_STRING | TAG_BINARY if i + 8 <= key.len() => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&key[i..i + 8]);
                let n = usize::try_from(u64::from_le_bytes(b)).unwrap_or(0);
                i += 8;
                let end = (i + n).min(key.len());
                parts.push(format!("'{}'", String::from_utf8_lossy(&key[i..end])));
                i = end;
            }
            _ => {
                parts.push(format!("<{} bytes>", key.len() - i));
                break;
            }
        }
    }
    format!("({})", parts.join(", "))
}

/// A file this run wrote, not in the log yet, as a [`DataFile`] so that it can be read back.
fn written_file(
    file: &crate::rewrite::WrittenFile,
    partition_values: Vec<Option<String>>,
) -> DataFile {
    DataFile {
        path: file.path.clone(),
        raw_path: file.path.clone(),
        size_bytes: file.size_bytes,
        modification_time_ms: 0,
        raw_partition_values: partition_values.clone(),
        partition_values,
        stats: Some({
            let mut stats = crate::table::FileStats::default();
            stats.num_records = Some(file.num_records);
            stats
        }),
        deletion_vector: None,
        tags: std::collections::BTreeMap::new(),
        clustering_provider: None,
        base_row_id: None,
        default_row_commit_version: None,
        add: deltalake::kernel::Add::default(),
    }
}

/// Checks a rewrite before it is committed (`optimize --verify`): per partition, the rows
/// read from the input files (deleted rows excluded) and the rows in the written files
/// must have equal fingerprints. Blocks on the tokio runtime: call it off its workers.
/// Reported as [`Phase::Check`]: the bytes of the input files and of the written files.
///
/// # Errors
/// [`Error::VerifyFailed`] naming the first partition that differs; read errors as
/// [`fingerprint`]; [`Error::Cancelled`] once `cancel` is set (checked between files).
pub(crate) fn check_rewrite(
    table: &TableView,
    outcomes: &[crate::rewrite::BinOutcome],
    progress: &dyn Progress,
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<()> {
    let reader = FileReader::new(table)?;
    let encoder = RowEncoder::new(table);
    let total: u64 = outcomes
        .iter()
        .map(|o| {
            o.input_files
                .iter()
                .map(|&i| table.files[i].size_bytes)
                .chain(o.written.iter().map(|w| w.size_bytes))
                .sum::<u64>()
        })
        .sum();
    progress.phase_started(Scope::Run, Phase::Check, total);
    let check = |size_bytes: u64| {
        if cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        progress.phase_advanced(Scope::Run, Phase::Check, size_bytes);
        Ok(())
    };
    let per_bin: Vec<Result<(String, Fingerprint, Fingerprint)>> = outcomes
        .par_iter()
        .map(|bin| {
            let Some(&first) = bin.input_files.first() else {
                return Ok((
                    String::new(),
                    Fingerprint::default(),
                    Fingerprint::default(),
                ));
            };
            let template = &table.files[first];
            let mut read = Fingerprint::default();
            for &i in &bin.input_files {
                let file = &table.files[i];
                encoder.hash_rows(file, &reader.read(file)?, &mut |h, _| read.add(h))?;
                check(file.size_bytes)?;
            }
            let mut written = Fingerprint::default();
            for w in &bin.written {
                let file = written_file(w, template.partition_values.clone());
                encoder.hash_rows(&file, &reader.read(&file)?, &mut |h, _| written.add(h))?;
                check(w.size_bytes)?;
            }
            Ok((partition_key(table, template), read, written))
        })
        .collect();
    let mut read: BTreeMap<String, Fingerprint> = BTreeMap::new();
    let mut written: BTreeMap<String, Fingerprint> = BTreeMap::new();
    for result in per_bin {
        let (key, r, w) = result?;
        read.entry(key.clone()).or_default().merge(&r);
        written.entry(key).or_default().merge(&w);
    }
    progress.phase_finished(Scope::Run, Phase::Check);
    for (key, r) in &read {
        let w = written.get(key).copied().unwrap_or_default();
        if *r != w {
            return Err(Error::VerifyFailed {
                message: format!(
                    "partition '{key}': read {} rows (fingerprint {}), wrote {} rows (fingerprint {})",
                    r.rows,
                    r.to_hex(),
                    w.rows,
                    w.to_hex()
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use deltalake::arrow::array::{Float64Array, Int64Array, ListArray, StringArray};
    use deltalake::arrow::datatypes::{Field, Schema};

    use super::*;

    fn row_hashes(batch: &RecordBatch) -> Vec<u64> {
        (0..batch.num_rows())
            .map(|row| {
                let mut out = Vec::new();
                for column in batch.columns() {
                    encode_value(column, row, &mut out).unwrap();
                }
                xxh64(&out, 0)
            })
            .collect()
    }

    #[test]
    fn typed_fast_paths_encode_as_the_generic_path() {
        use deltalake::arrow::array::{
            BooleanArray, Date32Array, Decimal128Array, Int32Array, TimestampMicrosecondArray,
        };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(-5), None])),
            Arc::new(Int32Array::from(vec![Some(7), None])),
            Arc::new(Float64Array::from(vec![Some(-0.0), None])),
            Arc::new(
                Decimal128Array::from(vec![Some(12345), None])
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
            Arc::new(StringArray::from(vec![Some("x"), None])),
            Arc::new(Date32Array::from(vec![Some(19000), None])),
            Arc::new(TimestampMicrosecondArray::from(vec![Some(1), None]).with_timezone("UTC")),
            Arc::new(TimestampMicrosecondArray::from(vec![Some(1), None])),
            Arc::new(BooleanArray::from(vec![Some(true), None])),
        ];
        for array in &columns {
            for row in 0..2 {
                let (mut fast, mut generic) = (Vec::new(), Vec::new());
                let null = Col::new(array).encode(row, &mut fast).unwrap();
                encode_value(array, row, &mut generic).unwrap();
                assert_eq!(fast, generic, "{}", array.data_type());
                assert_eq!(null, row == 1);
                assert!(!matches!(Col::new(array), Col::Other(_)));
            }
        }
    }

    #[test]
    fn tricky_rows_all_differ() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", ArrowType::Utf8, true),
            Field::new("b", ArrowType::Utf8, true),
        ]));
        let a = StringArray::from(vec![
            Some("ab"),
            None,
            Some("ab"),
            Some("a"),
            Some("ab"),
            None,
            Some(""),
            Some(""),
            Some("ab,"),
            Some("ab"),
        ]);
        let b = StringArray::from(vec![
            None,
            Some("ab"),
            Some(""),
            Some("bc"),
            Some("c"),
            None,
            None,
            Some(""),
            Some(""),
            Some(",c"),
        ]);
        let batch = RecordBatch::try_new(schema, vec![Arc::new(a), Arc::new(b)]).unwrap();
        let hashes = row_hashes(&batch);
        let distinct: HashSet<u64> = hashes.iter().copied().collect();
        assert_eq!(distinct.len(), hashes.len(), "{hashes:?}");
    }

    #[test]
    fn types_and_nesting_are_part_of_the_encoding() {
        // 1 as an integer and as a float, and an empty list against a null list.
        let ints = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("x", ArrowType::Int64, true)])),
            vec![Arc::new(Int64Array::from(vec![1]))],
        )
        .unwrap();
        let floats = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("x", ArrowType::Float64, true)])),
            vec![Arc::new(Float64Array::from(vec![1.0]))],
        )
        .unwrap();
        assert_ne!(row_hashes(&ints), row_hashes(&floats));
        let lists = ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some(vec![]),
            None,
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(12)]),
        ]);
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                "l",
                lists.data_type().clone(),
                true,
            )])),
            vec![Arc::new(lists)],
        )
        .unwrap();
        let hashes = row_hashes(&batch);
        let distinct: HashSet<u64> = hashes.iter().copied().collect();
        assert_eq!(distinct.len(), 4);
    }

    #[test]
    fn nan_and_negative_zero_are_normalized() {
        let other_nan = f64::from_bits(f64::NAN.to_bits() | 1);
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("x", ArrowType::Float64, true)])),
            vec![Arc::new(Float64Array::from(vec![
                0.0,
                -0.0,
                f64::NAN,
                other_nan,
                -f64::NAN,
            ]))],
        )
        .unwrap();
        let h = row_hashes(&batch);
        assert_eq!(h[0], h[1]);
        assert_eq!(h[2], h[3]);
        assert_eq!(h[2], h[4]);
        assert_ne!(h[0], h[2]);
    }

    #[test]
    fn fingerprints_ignore_order_but_not_duplicates() {
        let mut a = Fingerprint::default();
        let mut b = Fingerprint::default();
        for h in [1u64, 2, 3] {
            a.add(h);
        }
        for h in [3u64, 1, 2] {
            b.add(h);
        }
        assert_eq!(a, b);
        // {1, 2, 2, 2} against {1, 2}: the xor agrees, the count and the sum do not.
        let mut c = Fingerprint::default();
        for h in [1u64, 2, 2, 2] {
            c.add(h);
        }
        let mut d = Fingerprint::default();
        for h in [1u64, 2] {
            d.add(h);
        }
        assert_eq!(c.xor, d.xor);
        assert_ne!(c, d);
    }
}
