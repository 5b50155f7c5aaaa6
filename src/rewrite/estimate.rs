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
//! schema, as a rewrite reads them) and written into one in-memory Parquet file with the
//! run's writer properties ([`super::write::writer_properties`]). The ratio is that file's
//! data bytes (its footer left out: a written file has one footer however many inputs it
//! replaces) over the sample's live input bytes (file sizes less their deletion vectors'
//! share, as the plan counts them). Sorting by a curve usually compresses a little better
//! than the input order measured here; the rolling writer corrects what is left from the
//! bytes per row it actually writes ([`super::write`]).

use deltalake::parquet::arrow::ArrowWriter;

use super::read::Reader;
use super::write::{Codec, writer_properties};
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::table::TableView;

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

/// The output ratio of rewriting `plan`'s files with `codec`: bytes written per live input
/// byte, measured on [`sample_files`] read through `reader` (its row sample, if any, left
/// out: a `sweep` plans on full-size files). `None` when there is nothing to measure (no
/// sampled file, or less than [`MIN_SAMPLE_OUTPUT_BYTES`] written). Blocking: call it off the async runtime.
///
/// # Errors
/// The read errors of the sampled files ([`Error::DataFile`]), [`Error::Cancelled`], and
/// [`Error::Parquet`] when the sample cannot be encoded.
pub(crate) fn output_ratio(
    table: &TableView,
    plan: &Plan,
    reader: &Reader,
    codec: Codec,
) -> Result<Option<f64>> {
    let files = sample_files(table, plan);
    if files.is_empty() {
        return Ok(None);
    }
    let mut reader = reader.clone();
    reader.sample = None;
    let encode = |source| Error::Parquet {
        path: "(the output size estimate)".into(),
        source,
    };
    let mut writer = ArrowWriter::try_new(
        Vec::new(),
        reader.target_schema.clone(),
        Some(writer_properties(codec, plan.target_file_bytes)),
    )
    .map_err(encode)?;
    let mut rows = 0usize;
    let sampled: Vec<&crate::table::DataFile> = files.iter().map(|&i| &table.files[i]).collect();
    reader.read_each(&sampled, SAMPLE_CONCURRENCY, |_, batches| {
        for batch in batches {
            rows += batch.num_rows();
            writer.write(&batch).map_err(encode)?;
        }
        Ok(())
    })?;
    if rows == 0 {
        return Ok(None);
    }
    writer.flush().map_err(encode)?;
    let data_bytes = writer.bytes_written() as u64;
    if data_bytes < MIN_SAMPLE_OUTPUT_BYTES {
        return Ok(None);
    }
    let input: u64 = files.iter().map(|&i| live_bytes(&table.files[i])).sum();
    if input == 0 {
        return Ok(None);
    }
    #[expect(clippy::cast_precision_loss, reason = "a ratio of byte counts")]
    let ratio = data_bytes as f64 / input as f64;
    Ok(Some(ratio.clamp(MIN_RATIO, MAX_RATIO)))
}

/// Smallest output ratio used (1/100): a sample of nearly empty files measures little more
/// than their footers.
pub const MIN_RATIO: f64 = 0.01;
/// Largest output ratio used (100).
pub const MAX_RATIO: f64 = 100.0;
