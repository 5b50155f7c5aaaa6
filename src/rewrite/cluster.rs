//! Clustering one partition along a curve.
//!
//! # Algorithm
//! 1. Read the partition's live rows, feeding one seeded reservoir per clustering column
//!    ([`crate::curve::keys::Reservoir`]); equal seeds make the reservoirs pick the same rows,
//!    so together they are a sample of whole rows.
//! 2. Turn each reservoir into rank buckets, and the sampled rows into curve keys.
//! 3. Cut the sorted sample keys into `n` ranges of equal row counts, `n` being the output
//!    files the target size asks for; the cut keys are the range boundaries.
//! 4. Route every row to its range by its key (binary search over the boundaries).
//! 5. For each range, in parallel: sort its rows by key (stable), write them in order to
//!    rolling files tagged with the cube, so rows inside a file follow the curve too.
//!
//! Rows are held in memory; the run refuses a partition whose input is larger than the
//! memory budget rather than running out of memory.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use deltalake::arrow::array::{ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use deltalake::arrow::compute::{concat_batches, sort_to_indices, take_record_batch};
use rayon::prelude::*;

use super::stats::leaf_values;
use super::write::{RollingWriter, WriterConfig, WrittenFile};
use super::{READ_ROWS_PER_WRITE, RewriteContext};
use crate::curve::keys::{ColumnBuckets, DEFAULT_SAMPLE_ROWS, Reservoir};
use crate::curve::{Curve, bits_per_dimension};
use crate::error::{Error, Result};
use crate::plan::Bin;
use crate::plan::cluster::{Clustering, TAG_CUBE_COLUMNS, TAG_CUBE_CURVE, TAG_CUBE_ID, curve_name};
use crate::progress::Progress;
use crate::table::TableView;

/// Seed of the reservoirs: the same input gives the same layout.
pub const SAMPLE_SEED: u64 = 0x00de_17a1_a70c;

/// Clusters one bin (a whole partition). Returns the rows read; `written` receives every
/// file uploaded, also on failure.
pub(crate) fn run(
    table: &TableView,
    clustering: &Clustering,
    context: &RewriteContext,
    bin: &Bin,
    config: &(dyn Fn(BTreeMap<String, String>) -> WriterConfig + Sync),
    progress: &dyn Progress,
    written: &mut Vec<WrittenFile>,
) -> Result<u64> {
    // 1. Read and sample.
    let bits = bits_per_dimension(clustering.leaves.len());
    let mut reservoirs: Vec<Reservoir> = Vec::new();
    let mut batches: Vec<RecordBatch> = Vec::new();
    let mut rows = 0u64;
    for &index in &bin.files {
        if context.cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        let file = &table.files[index];
        for batch in context.reader.read(file)? {
            let columns = clustering
                .leaves
                .iter()
                .map(|leaf| leaf_values(&batch, &leaf.physical))
                .collect::<Result<Vec<_>>>()?;
            if reservoirs.is_empty() {
                reservoirs = columns
                    .iter()
                    .map(|c| Reservoir::new(c.data_type(), DEFAULT_SAMPLE_ROWS, SAMPLE_SEED))
                    .collect::<Result<_>>()?;
            }
            for (reservoir, column) in reservoirs.iter_mut().zip(&columns) {
                reservoir.add(column)?;
            }
            rows += batch.num_rows() as u64;
            batches.push(batch);
        }
        progress.file_done(file.size_bytes);
    }
    if batches.is_empty() {
        return Ok(0);
    }

    // 2. Buckets, and the keys of the sampled rows.
    let (buckets, samples): (Vec<ColumnBuckets>, Vec<_>) =
        reservoirs.into_iter().map(|r| r.finish(bits)).unzip();
    let sample_rows = samples[0].len();
    let mut sample_keys: Vec<u64> = (0..sample_rows)
        .map(|i| {
            let coords: Vec<u32> = buckets
                .iter()
                .zip(&samples)
                .map(|(b, s)| b.bucket_of(s[i].as_ref()))
                .collect();
            clustering.curve.key(&coords)
        })
        .collect();
    sample_keys.sort_unstable();

    // 3. Range boundaries: equal shares of the sampled rows.
    let num_ranges = usize::try_from(bin.expected_output_files)
        .unwrap_or(usize::MAX)
        .clamp(1, sample_rows.max(1));
    let mut boundaries: Vec<u64> = (1..num_ranges)
        .map(|k| sample_keys[k * sample_rows / num_ranges])
        .collect();
    boundaries.dedup();

    // 4. Route rows to ranges.
    let mut ranges: Vec<Vec<(RecordBatch, Vec<u64>)>> = vec![Vec::new(); boundaries.len() + 1];
    for batch in batches {
        let keys = row_keys(&batch, clustering, &buckets)?;
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); ranges.len()];
        for (row, key) in keys.iter().enumerate() {
            let range = boundaries.partition_point(|b| b <= key);
            members[range].push(u32::try_from(row).unwrap_or(u32::MAX));
        }
        for (range, rows) in members.into_iter().enumerate() {
            if rows.is_empty() {
                continue;
            }
            let range_keys = rows.iter().map(|&r| keys[r as usize]).collect();
            let indices = UInt32Array::from(rows);
            let part = take_record_batch(&batch, &indices)
                .map_err(|e| Error::arrow("routing rows to ranges", e))?;
            ranges[range].push((part, range_keys));
        }
    }

    // 5. Sort and write each range.
    let cube = uuid::Uuid::new_v4().to_string();
    let tags = BTreeMap::from([
        (TAG_CUBE_ID.to_string(), cube),
        (TAG_CUBE_COLUMNS.to_string(), clustering.columns_json()),
        (
            TAG_CUBE_CURVE.to_string(),
            curve_name(clustering.curve).to_string(),
        ),
    ]);
    let results: Vec<(Result<()>, Vec<WrittenFile>)> = ranges
        .into_par_iter()
        .filter(|parts| !parts.is_empty())
        .map(|parts| {
            let mut writer = RollingWriter::new(config(tags.clone()));
            let result = write_range(&mut writer, parts, context);
            (result, writer.written().to_vec())
        })
        .collect();
    let mut first_error = None;
    for (result, files) in results {
        written.extend(files);
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(rows),
    }
}

fn write_range(
    writer: &mut RollingWriter,
    parts: Vec<(RecordBatch, Vec<u64>)>,
    context: &RewriteContext,
) -> Result<()> {
    if context.cancel.load(Ordering::Relaxed) {
        return Err(Error::Cancelled);
    }
    let schema = parts[0].0.schema();
    let keys: Vec<u64> = parts.iter().flat_map(|(_, k)| k.iter().copied()).collect();
    let batch = concat_batches(&schema, parts.iter().map(|(b, _)| b))
        .map_err(|e| Error::arrow("gathering a range", e))?;
    drop(parts);
    let keys: ArrayRef = std::sync::Arc::new(UInt64Array::from(keys));
    let order = sort_to_indices(&keys, None, None)
        .map_err(|e| Error::arrow("sorting a range by curve key", e))?;
    let sorted =
        take_record_batch(&batch, &order).map_err(|e| Error::arrow("sorting a range", e))?;
    drop(batch);
    let mut offset = 0;
    while offset < sorted.num_rows() {
        let length = READ_ROWS_PER_WRITE.min(sorted.num_rows() - offset);
        writer.write(&sorted.slice(offset, length))?;
        offset += length;
    }
    writer.finish()
}

/// The curve key of every row of `batch`.
pub(crate) fn row_keys(
    batch: &RecordBatch,
    clustering: &Clustering,
    buckets: &[ColumnBuckets],
) -> Result<Vec<u64>> {
    let per_column = clustering
        .leaves
        .iter()
        .zip(buckets)
        .map(|(leaf, b)| b.buckets(&leaf_values(batch, &leaf.physical)?))
        .collect::<Result<Vec<_>>>()?;
    let mut coords = vec![0u32; per_column.len()];
    Ok((0..batch.num_rows())
        .map(|row| {
            for (c, column) in coords.iter_mut().zip(&per_column) {
                *c = column[row];
            }
            key(clustering.curve, &coords)
        })
        .collect())
}

fn key(curve: Curve, coords: &[u32]) -> u64 {
    curve.key(coords)
}
