//! `inspect`: what a table holds, from its log alone (no data file is read).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::error::Result;
use crate::plan::{DEFAULT_MIN_FILE_SIZE_RATIO, PlanOptions, TargetSource};
use crate::table::{ProtocolInfo, TableView};

/// One bucket of the file-size histogram: files with `lower_bytes <= size < upper_bytes`,
/// where the bounds are consecutive powers of two (the first bucket starts at 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SizeBucket {
    /// Inclusive lower bound, bytes.
    pub lower_bytes: u64,
    /// Exclusive upper bound, bytes.
    pub upper_bytes: u64,
    /// Files in the bucket.
    pub files: u64,
    /// Their total size, bytes.
    pub bytes: u64,
}

/// Stats coverage of one leaf column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColumnCoverage {
    /// Logical name, dotted for nested fields.
    pub column: String,
    /// Share of files with both a min and a max for the column, in `[0, 1]`.
    pub min_max_fraction: f64,
    /// Share of files with a null count for the column, in `[0, 1]`.
    pub null_count_fraction: f64,
}

/// The `inspect` report.
#[derive(Debug, Clone, Serialize)]
pub struct InspectReport {
    /// Table location.
    pub table: String,
    /// Version inspected.
    pub version: u64,
    /// Active files.
    pub files: u64,
    /// Their total size, bytes.
    pub bytes: u64,
    /// Live rows (numRecords minus deleted rows) of the files with stats.
    pub rows: u64,
    /// Files without `numRecords` (then `rows` is a lower bound).
    pub files_without_row_count: u64,
    /// Files with a deletion vector.
    pub files_with_deletion_vectors: u64,
    /// Rows their deletion vectors delete.
    pub deleted_rows: u64,
    /// Distinct partitions (1 for an unpartitioned table with files).
    pub partitions: u64,
    /// Partition columns.
    pub partition_columns: Vec<String>,
    /// The target file size `optimize` would use, bytes.
    pub target_file_bytes: u64,
    /// Where it comes from.
    pub target_source: TargetSource,
    /// Files below the target size.
    pub files_below_target: u64,
    /// Files within 20% of the target, either way, as `optimize` writes them
    /// ([`crate::plan::near_target`]).
    pub files_near_target: u64,
    /// Files below `optimize`'s default minimum (3/4 of the target): compaction candidates.
    pub files_below_min_size: u64,
    /// The size histogram, power-of-two buckets, empty buckets left out.
    pub size_histogram: Vec<SizeBucket>,
    /// Stats coverage per data column, in schema order.
    pub columns: Vec<ColumnCoverage>,
    /// Protocol versions and listed features.
    pub protocol: ProtocolInfo,
    /// Every feature in force (listed or implied by a legacy version).
    pub features: Vec<String>,
    /// Features that stop `optimize` from rewriting the table, each `feature (reason)`.
    pub unsupported_features: Vec<String>,
    /// Every feature in effect with `supported` or the reason it is refused.
    pub feature_support: BTreeMap<String, String>,
    /// Table properties.
    pub properties: BTreeMap<String, String>,
    /// What Iceberg readers read, when UniForm generates Iceberg metadata for the table
    /// ([`crate::table::iceberg::view`], which the caller reads: this report is built from
    /// the log alone); `None` otherwise.
    pub iceberg: Option<crate::table::iceberg::IcebergView>,
}

/// Builds the report; `target_file_bytes` overrides the table's own target.
///
/// # Errors
/// [`crate::Error::InvalidOption`] when `delta.targetFileSize` does not parse.
pub fn inspect(table: &TableView, target_file_bytes: Option<u64>) -> Result<InspectReport> {
    PlanOptions::default()
        .with_target_file_bytes(target_file_bytes)
        .validate()?;
    let totals = table.totals();
    let (target, source) = crate::plan::target_file_bytes(table, target_file_bytes)?;
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "3/4 of a size"
    )]
    let min_size = (target as f64 * DEFAULT_MIN_FILE_SIZE_RATIO) as u64;

    let num_files = table.files.len().max(1);
    #[expect(clippy::cast_precision_loss, reason = "a fraction")]
    let fraction = |n: usize| n as f64 / num_files as f64;
    let columns = table
        .data_leaf_columns()
        .into_iter()
        .map(|leaf| {
            let (with_min_max, with_nulls) =
                crate::pruning::stats_coverage(table, &leaf.physical, &leaf.data_type);
            ColumnCoverage {
                column: leaf.display_name(),
                min_max_fraction: fraction(with_min_max),
                null_count_fraction: fraction(with_nulls),
            }
        })
        .collect();
    let partitions: BTreeSet<&[Option<String>]> = table
        .files
        .iter()
        .map(|f| f.partition_values.as_slice())
        .collect();
    Ok(InspectReport {
        table: table.display_location(),
        version: table.version,
        files: totals.files,
        bytes: totals.bytes,
        rows: totals.rows,
        files_without_row_count: totals.files_without_row_count,
        files_with_deletion_vectors: table
            .files
            .iter()
            .filter(|f| f.deletion_vector.is_some())
            .count() as u64,
        deleted_rows: table
            .files
            .iter()
            .map(crate::table::DataFile::num_deleted_rows)
            .sum(),
        partitions: partitions.len() as u64,
        partition_columns: table.partition_columns.clone(),
        target_file_bytes: target,
        target_source: source,
        files_below_target: table.files.iter().filter(|f| f.size_bytes < target).count() as u64,
        files_near_target: table
            .files
            .iter()
            .filter(|f| crate::plan::near_target(f.size_bytes, target))
            .count() as u64,
        files_below_min_size: table
            .files
            .iter()
            .filter(|f| f.size_bytes < min_size)
            .count() as u64,
        size_histogram: size_histogram(
            &table.files.iter().map(|f| f.size_bytes).collect::<Vec<_>>(),
        ),
        columns,
        protocol: table.protocol.clone(),
        features: table.protocol.effective_features(),
        unsupported_features: {
            let mut refused = table.protocol.unsupported();
            refused.extend(table.rule_fault());
            refused
        },
        feature_support: table
            .protocol
            .feature_support()
            .into_iter()
            .map(|(f, reason)| (f, reason.unwrap_or_else(|| "supported".into())))
            .collect(),
        properties: table.properties.clone(),
        iceberg: None,
    })
}

/// The file-size histogram of `sizes` (bytes): power-of-two buckets, empty ones left out,
/// smallest first.
#[must_use]
pub fn size_histogram(sizes: &[u64]) -> Vec<SizeBucket> {
    let mut buckets: BTreeMap<u32, SizeBucket> = BTreeMap::new();
    for &size in sizes {
        let exponent = if size == 0 {
            0
        } else {
            64 - size.leading_zeros()
        };
        let lower = if exponent == 0 {
            0
        } else {
            1u64 << (exponent - 1)
        };
        let upper = 1u64.checked_shl(exponent).unwrap_or(u64::MAX);
        let bucket = buckets.entry(exponent).or_insert(SizeBucket {
            lower_bytes: lower,
            upper_bytes: upper,
            files: 0,
            bytes: 0,
        });
        bucket.files += 1;
        bucket.bytes += size;
    }
    buckets.into_values().collect()
}
