//! How many bytes a rewrite writes per byte it reads: the output ratio that bins and
//! clustering ranges are sized by ([`crate::plan::PlanOptions::with_output_ratio`]).
//!
//! Input files rarely compress like the files written: Spark writes snappy where the default
//! here is zstd, writers differ in encodings and row-group sizes, and many small files carry
//! many footers where one file carries one. Sizing bins by input bytes alone made a 128 MiB
//! target write files of about 53 MiB from Spark-written TPC-H files (issue 15).
//!
//! # Method
//! Up to [`SAMPLE_FILES`] of the plan's input files, spread evenly over them in log order
//! and together at most [`SAMPLE_BYTES`] (or the smallest one alone when every file is
//! larger, up to [`MAX_SAMPLE_FILE_BYTES`]), are read ([`SAMPLE_CONCURRENCY`] at a time) (live rows, in the table's physical
//! schema, as a rewrite reads them) and written into in-memory Parquet files with the
//! run's writer properties (`writer_properties`): first as they are, which
//! measures the columns to write without a dictionary ([`plain_columns`]), then without those
//! dictionaries and, for a clustering run, in the curve's order (sorted rows compress better
//! than the input order: about 5% on TPC-H lineitem). The ratio is that file's data bytes
//! (its footer left out: a written file has one footer however many inputs it replaces) over
//! the sample's live input bytes (file sizes less their deletion vectors' share, as the plan
//! counts them) (`measure_output`). The rolling writer corrects what is left from the
//! bytes per row it actually writes ([`super::write`]).

use std::sync::atomic::AtomicBool;

use deltalake::arrow::array::{Array, RecordBatch};
use deltalake::arrow::datatypes::SchemaRef;
use deltalake::parquet::arrow::ArrowWriter;

use super::write::{Codec, writer_properties};
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::table::TableView;
use crate::table::read::Reader;

/// Input files read for the estimate, at most (many, so that a table of small appends is
/// sampled by more than a few footers).
pub const SAMPLE_FILES: usize = 64;
/// Files of the sample fetched at once (object stores answer each GET after tens of
/// milliseconds).
pub const SAMPLE_CONCURRENCY: usize = 16;
/// Data bytes the sample must write for an estimate (256 KiB): below it footers and page
/// headers decide the ratio, and bins are sized by input bytes (a ratio of 1).
pub const MIN_SAMPLE_OUTPUT_BYTES: u64 = 256 << 10;
/// Live input bytes read for the estimate, at most (16 MiB), unless one file is larger.
pub const SAMPLE_BYTES: u64 = 16 << 20;
/// The largest single file read when every input file is larger than [`SAMPLE_BYTES`]
/// (64 MiB); above it there is no estimate and bins are sized by input bytes.
pub const MAX_SAMPLE_FILE_BYTES: u64 = 64 << 20;

/// The files of `plan` sampled for the estimate (indices into `table.files`): see the module
/// documentation. Empty when there is nothing to sample.
#[must_use]
pub fn sample_files(table: &TableView, plan: &Plan) -> Vec<usize> {
    let mut inputs: Vec<usize> = plan.bins().flat_map(|b| b.files.iter().copied()).collect();
    inputs.sort_unstable();
    inputs.dedup();
    if inputs.is_empty() {
        return Vec::new();
    }
    let live = |i: usize| live_bytes(&table.files[i]);
    let step = inputs.len().div_ceil(SAMPLE_FILES).max(1);
    let mut chosen = Vec::new();
    let mut bytes = 0u64;
    for &index in inputs.iter().step_by(step) {
        let size = live(index);
        if bytes.saturating_add(size) <= SAMPLE_BYTES {
            bytes += size;
            chosen.push(index);
        }
    }
    if chosen.is_empty()
        && let Some(&smallest) = inputs.iter().min_by_key(|&&i| live(i))
        && live(smallest) <= MAX_SAMPLE_FILE_BYTES
    {
        chosen.push(smallest);
    }
    chosen
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "an estimate, as the plan's"
)]
fn live_bytes(file: &crate::table::DataFile) -> u64 {
    (file.size_bytes as f64 * (1.0 - file.deleted_ratio())) as u64
}

/// What the output-ratio sample measures ([`measure_output`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct OutputMeasure {
    /// Bytes written per live input byte; `None` when there is nothing to measure.
    pub ratio: Option<f64>,
    /// Leaf columns to write without a dictionary ([`plain_columns`]).
    pub plain_columns: Vec<String>,
}

/// Measures how rewriting `plan`'s files with `codec` writes them, on [`sample_files`] read
/// through `reader` (its row sample, if any, left out: a `sweep` plans on full-size files):
/// 1. the sample is written in memory with the default writer properties, which gives the
///    encoded bytes per row;
/// 2. [`plain_columns`] picks the leaf columns whose dictionary would outgrow its page in a
///    row group of that many bytes (and at most as many rows as the plan's largest bin);
/// 3. for a clustering plan the sample's rows are put in their curve's order (the clustering
///    stage's own sample, buckets, sort and tie-break over the sample), since sorted rows
///    compress better than the input order;
/// 4. the ratio is the data bytes of the sample written as the run will write it (without
///    dictionaries for those columns, in that order) over its live input bytes.
///
/// The ratio is `None` when there is nothing to measure (no sampled file, or less than
/// [`MIN_SAMPLE_OUTPUT_BYTES`] written). Blocking: call it off the async runtime.
///
/// # Errors
/// The read errors of the sampled files ([`Error::DataFile`]), [`Error::Cancelled`], and
/// [`Error::Parquet`] when the sample cannot be encoded.
pub(crate) fn measure_output(
    table: &TableView,
    plan: &Plan,
    reader: &Reader,
    codec: Codec,
) -> Result<OutputMeasure> {
    let files = sample_files(table, plan);
    if files.is_empty() {
        return Ok(OutputMeasure::default());
    }
    let mut reader = reader.clone();
    reader.sample = None;
    let mut batches: Vec<RecordBatch> = Vec::new();
    let sampled: Vec<&crate::table::DataFile> = files.iter().map(|&i| &table.files[i]).collect();
    reader.read_each(&sampled, SAMPLE_CONCURRENCY, |_, read| {
        batches.extend(read.into_iter().filter(|b| b.num_rows() > 0));
        Ok(())
    })?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    if rows == 0 {
        return Ok(OutputMeasure::default());
    }
    let schema = reader.target_schema.clone();
    let target = plan.target_file_bytes;
    // 1. and 2.
    let plain_bytes = encoded_bytes(&schema, &batches, codec, target, &[])?;
    #[expect(clippy::cast_precision_loss, reason = "bytes per row, an estimate")]
    let row_bytes = plain_bytes as f64 / rows as f64;
    // A row group holds at most a bin's rows (the log's count, else by the sample's rows
    // per input byte).
    let input_bytes: u64 = files.iter().map(|&i| live_bytes(&table.files[i])).sum();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a row count, an estimate"
    )]
    let bin_rows = plan
        .bins()
        .map(|b| {
            b.input_rows.unwrap_or_else(|| {
                (b.input_bytes as f64 * rows as f64 / input_bytes.max(1) as f64) as u64
            })
        })
        .max()
        .unwrap_or(0);
    let group_rows = row_group_rows(target, row_bytes)
        .min(usize::try_from(bin_rows).unwrap_or(usize::MAX))
        .max(1);
    let plain = plain_columns(&batches, &schema, group_rows)?;
    // 3.
    let ordered = match &plan.clustering {
        Some(clustering) => {
            let layout = super::cluster::Layout {
                clustering,
                tree: None,
                partition_values: &[],
            };
            let sizes = super::cluster::RangeSizes {
                cuts: Vec::new(),
                expected_output_bytes: 0,
                target_file_bytes: target,
            };
            let order = super::cluster::ordered_ranges(
                &batches,
                &layout,
                &sizes,
                reader.cancel.as_deref().unwrap_or(&AtomicBool::new(false)),
            )?;
            let indices: Vec<(usize, usize)> = order
                .into_iter()
                .flatten()
                .map(|(b, r)| (b as usize, r as usize))
                .collect();
            let sources: Vec<&RecordBatch> = batches.iter().collect();
            Some(
                deltalake::arrow::compute::interleave_record_batch(&sources, &indices)
                    .map_err(|e| Error::arrow("ordering the output size sample", e))?,
            )
        }
        None => None,
    };
    // 4.
    let data_bytes = match (&ordered, plain.is_empty()) {
        (None, true) => plain_bytes,
        (None, false) => encoded_bytes(&schema, &batches, codec, target, &plain)?,
        (Some(sorted), _) => {
            encoded_bytes(&schema, std::slice::from_ref(sorted), codec, target, &plain)?
        }
    };
    let input = input_bytes;
    if data_bytes < MIN_SAMPLE_OUTPUT_BYTES || input == 0 {
        return Ok(OutputMeasure {
            ratio: None,
            plain_columns: plain,
        });
    }
    #[expect(clippy::cast_precision_loss, reason = "a ratio of byte counts")]
    let ratio = data_bytes as f64 / input as f64;
    Ok(OutputMeasure {
        ratio: Some(ratio.clamp(MIN_RATIO, MAX_RATIO)),
        plain_columns: plain,
    })
}

/// The data bytes (footer left out) of `batches` written as one in-memory file.
fn encoded_bytes(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    codec: Codec,
    target_file_bytes: u64,
    plain_columns: &[String],
) -> Result<u64> {
    let encode = |source| Error::Parquet {
        path: "(the output size estimate)".into(),
        source,
    };
    let mut writer = ArrowWriter::try_new(
        Vec::new(),
        schema.clone(),
        Some(writer_properties(codec, target_file_bytes, plain_columns)),
    )
    .map_err(encode)?;
    for batch in batches {
        writer.write(batch).map_err(encode)?;
    }
    writer.flush().map_err(encode)?;
    Ok(writer.bytes_written() as u64)
}

/// Rows of a row group at `target_file_bytes` for rows of `row_bytes` encoded bytes
/// ([`super::write::row_group_bytes`], at most [`super::write::MAX_ROW_GROUP_ROWS`]).
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "a row count, rounded"
)]
fn row_group_rows(target_file_bytes: u64, row_bytes: f64) -> usize {
    let rows = super::write::row_group_bytes(target_file_bytes) as f64 / row_bytes.max(1e-9);
    (rows as usize).clamp(1, super::write::MAX_ROW_GROUP_ROWS)
}

/// The size of a dictionary page at which arrow-rs' writer falls back to `PLAIN` for the
/// rest of a column chunk (its default `dictionary_page_size_limit`, 1 MiB).
pub const DICTIONARY_PAGE_LIMIT_BYTES: f64 = 1_048_576.0;

/// The leaf columns (dotted physical paths) of `batches` whose dictionary would outgrow its
/// page ([`DICTIONARY_PAGE_LIMIT_BYTES`]) in a row group of `row_group_rows` rows: there
/// arrow-rs' writer pays for a full dictionary page and the dictionary-coded rows before
/// falling back to `PLAIN` for the rest, in every row group, where `PLAIN` from the start
/// writes fewer bytes (TPC-H lineitem's keys and prices: BENCHMARKS.md). Parquet-java decides
/// the same from its first page (`FallbackValuesWriter`).
///
/// Per column, the distinct values `d` among the sample's `n` non-null values estimate the
/// column's cardinality `C` (solving `d = C (1 - e^(-n/C))`, values drawn uniformly), and a
/// row group's dictionary holds `C (1 - e^(-R/C))` values of the column's Parquet width.
/// Fixed-width columns only (integers, floats, decimals, dates, timestamps; also struct
/// fields): strings and binary keep their dictionary, which compressed better than `PLAIN`
/// even where it fell back (TPC-H comments: 8% fewer bytes), and so do lists, maps and
/// booleans.
///
/// # Errors
/// [`Error::Arrow`] when a column cannot be put in the row format.
pub fn plain_columns(
    batches: &[RecordBatch],
    schema: &SchemaRef,
    row_group_rows: usize,
) -> Result<Vec<String>> {
    use deltalake::arrow::datatypes::DataType as ArrowType;
    let mut leaves: Vec<(Vec<String>, ArrowType)> = Vec::new();
    fn walk(
        field: &deltalake::arrow::datatypes::Field,
        path: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, deltalake::arrow::datatypes::DataType)>,
    ) {
        path.push(field.name().clone());
        match field.data_type() {
            deltalake::arrow::datatypes::DataType::Struct(children) => {
                for child in children {
                    walk(child, path, out);
                }
            }
            other => out.push((path.clone(), other.clone())),
        }
        path.pop();
    }
    for field in schema.fields() {
        walk(field, &mut Vec::new(), &mut leaves);
    }
    let mut out = Vec::new();
    for (path, data_type) in leaves {
        let width: Option<f64> = match &data_type {
            ArrowType::Boolean
            | ArrowType::List(_)
            | ArrowType::LargeList(_)
            | ArrowType::FixedSizeList(_, _)
            | ArrowType::Map(_, _)
            | ArrowType::Null => None,
            // Strings and binary keep their dictionary: on TPC-H's comments, `PLAIN` wrote 8%
            // more than a dictionary that falls back (BENCHMARKS.md).
            ArrowType::Utf8
            | ArrowType::LargeUtf8
            | ArrowType::Utf8View
            | ArrowType::Binary
            | ArrowType::LargeBinary
            | ArrowType::BinaryView => None,
            other => other.primitive_width().map(|w| {
                // Parquet stores narrow integers as INT32, decimals up to 18 digits as INT64.
                #[expect(clippy::cast_precision_loss, reason = "a width in bytes")]
                let w = w as f64;
                w.max(4.0).min(
                    if matches!(other, ArrowType::Decimal128(p, _) if *p <= 18) {
                        8.0
                    } else {
                        16.0
                    },
                )
            }),
        };
        let Some(fixed) = width else {
            continue;
        };
        let arrays = batches
            .iter()
            .map(|b| crate::column::leaf_values(b, &path))
            .collect::<Result<Vec<_>>>()?;
        let converter =
            deltalake::arrow::row::RowConverter::new(vec![deltalake::arrow::row::SortField::new(
                data_type.clone(),
            )])
            .map_err(|e| Error::arrow("measuring a column's distinct values", e))?;
        let mut distinct: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
        let mut values = 0usize;
        for array in &arrays {
            let rows = converter
                .convert_columns(std::slice::from_ref(array))
                .map_err(|e| Error::arrow("measuring a column's distinct values", e))?;
            for i in 0..array.len() {
                if array.is_valid(i) {
                    values += 1;
                    distinct.insert(rows.row(i).as_ref().to_vec());
                }
            }
        }
        if values == 0 {
            continue;
        }
        #[expect(clippy::cast_precision_loss, reason = "an estimate")]
        let (n, d) = (values as f64, distinct.len() as f64);
        let width = fixed;
        #[expect(clippy::cast_precision_loss, reason = "an estimate")]
        let r = row_group_rows as f64;
        let in_row_group = match cardinality(n, d) {
            Some(c) => c * (1.0 - (-r / c).exp()),
            // Every sampled value distinct: as many as the row group has values.
            None => r,
        };
        if in_row_group * width > DICTIONARY_PAGE_LIMIT_BYTES {
            out.push(path.join("."));
        }
    }
    Ok(out)
}

/// The cardinality `C` with `C (1 - e^(-n / C)) = d` (`d` distinct values among `n` drawn
/// uniformly from `C`), by bisection; `None` when every value was distinct (`C` unbounded).
fn cardinality(n: f64, d: f64) -> Option<f64> {
    if d >= n {
        return None;
    }
    let expected = |c: f64| c * (1.0 - (-n / c).exp());
    let (mut low, mut high) = (d, d * 2.0);
    while expected(high) < d && high < 1e15 {
        high *= 2.0;
    }
    for _ in 0..100 {
        let mid = f64::midpoint(low, high);
        if expected(mid) < d {
            low = mid;
        } else {
            high = mid;
        }
    }
    Some(high)
}

/// Smallest output ratio used (1/100): a sample of nearly empty files measures little more
/// than their footers.
pub const MIN_RATIO: f64 = 0.01;
/// Largest output ratio used (100).
pub const MAX_RATIO: f64 = 100.0;

#[cfg(test)]
mod tests {
    use super::*;
    use deltalake::arrow::array::{Int32Array, Int64Array, StringArray};
    use deltalake::arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    #[test]
    fn cardinality_inverts_the_expected_distinct_count() {
        for c in [10.0_f64, 1_000.0, 50_000.0, 1e7] {
            let n = 60_000.0_f64;
            let d = c * (1.0 - (-n / c).exp());
            let estimate = cardinality(n, d.round().min(n - 1.0)).unwrap();
            assert!((estimate - c).abs() / c < 0.05, "{c}: {estimate}");
        }
        assert_eq!(cardinality(100.0, 100.0), None);
    }

    /// Unique keys go `PLAIN` when a row group holds enough of them to outgrow a dictionary
    /// page, and keep their dictionary in a small one; low-cardinality integers and strings
    /// always keep theirs.
    #[test]
    fn plain_columns_are_the_ones_whose_dictionary_falls_back() {
        let rows = 50_000_i64;
        let schema = Arc::new(Schema::new(vec![
            Field::new("key", DataType::Int64, false),
            Field::new("day", DataType::Int32, false),
            Field::new("name", DataType::Utf8, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(
                    (0..rows).map(|v| v * 2_654_435_761),
                )),
                Arc::new(Int32Array::from_iter_values(
                    (0..rows).map(|v| i32::try_from(v % 365).unwrap()),
                )),
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|v| format!("unique name {v}")),
                )),
            ],
        )
        .unwrap();
        let batches = [batch];
        assert_eq!(plain_columns(&batches, &schema, 1 << 20).unwrap(), ["key"]);
        // 100,000 keys of 8 bytes: 800 KB, under a 1 MiB page.
        assert!(
            plain_columns(&batches, &schema, 100_000)
                .unwrap()
                .is_empty()
        );
        assert_eq!(plain_columns(&batches, &schema, 200_000).unwrap(), ["key"]);
    }
}
