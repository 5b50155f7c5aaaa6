//! The pure planning stage: which files to rewrite, grouped into bins. No I/O, no async.
//!
//! [`plan`] takes a [`TableView`] and [`PlanOptions`] and returns a [`Plan`]: for each
//! partition (the full tuple of partition values, nulls included) selected by `--where`, the
//! bins of candidate files to compact. Execution (`rewrite`) consumes the plan; `--dry-run`
//! prints it through its `Display` form.
//!
//! Candidates (Databricks OPTIMIZE semantics): files smaller than the minimum file size, and
//! files whose deletion vector deletes more than the maximum deleted ratio of their rows.

pub mod binpack;
pub mod cluster;
pub mod cuts;
pub mod directory;

use std::collections::BTreeMap;

use deltalake::kernel::DataType;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::predicate::Predicate;
use crate::table::{PROP_TARGET_FILE_SIZE, TableView};

/// Default share of the target size under which a file is a compaction candidate (3/4,
/// Databricks' `spark.databricks.delta.optimize.minFileSize` relative to the target).
pub const DEFAULT_MIN_FILE_SIZE_RATIO: f64 = 0.75;
/// Default maximum share of deleted rows a file may carry before it is rewritten (0.05,
/// Databricks' `spark.databricks.delta.optimize.maxDeletedRowsRatio`).
pub const DEFAULT_MAX_DELETED_RATIO: f64 = 0.05;
/// Autotuned target below [`AUTOTUNE_SMALL_TABLE_BYTES`] of data: 256 MiB.
pub const AUTOTUNE_MIN_TARGET_BYTES: u64 = 256 << 20;
/// Autotuned target at and above [`AUTOTUNE_LARGE_TABLE_BYTES`] of data: 1 GiB.
pub const AUTOTUNE_MAX_TARGET_BYTES: u64 = 1 << 30;
/// Table size (2.56 TB) up to which the autotuned target stays at its minimum.
pub const AUTOTUNE_SMALL_TABLE_BYTES: u64 = 2_560_000_000_000;
/// Table size (10 TB) from which the autotuned target is at its maximum.
pub const AUTOTUNE_LARGE_TABLE_BYTES: u64 = 10_000_000_000_000;
/// Share of the target size a written file may miss it by, either way, when that saves a
/// small remainder file: 0.2 (files land between 0.8x and 1.2x the target, apart from one
/// remainder per bin; see [`output_files`]).
pub const FILE_SIZE_TOLERANCE: f64 = 0.2;

/// Whether a file of `size_bytes` is within [`FILE_SIZE_TOLERANCE`] of `target_bytes`, either
/// way: a file as `optimize` writes it (between 0.8x and 1.2x the target).
#[must_use]
#[expect(
    clippy::cast_precision_loss,
    reason = "byte counts far below 2^52; a ratio"
)]
pub fn near_target(size_bytes: u64, target_bytes: u64) -> bool {
    let target = target_bytes.max(1) as f64;
    (size_bytes as f64 - target).abs() <= target * FILE_SIZE_TOLERANCE
}

/// The smallest target file size a rewrite accepts: 1 MiB. A smaller one is almost always a
/// typo (`--target-size 128` meant as 128 MiB), and a clustering run or cut tree writes files
/// of about the target whatever the input, so 36,147 rows at a target of 1 byte became 34,090
/// files. [`TARGET_FLOOR_ENV`] lowers it (the tests lay out tables of a few KiB).
pub const MIN_TARGET_FILE_BYTES: u64 = 1 << 20;
/// The environment variable that replaces [`MIN_TARGET_FILE_BYTES`] by a size of its own
/// (`DELTA_LAYOUT_MIN_TARGET_SIZE=1KiB`; `1` accepts every target): for tests and
/// demonstrations on tiny tables. `cargo test` sets it (`.cargo/config.toml`).
pub const TARGET_FLOOR_ENV: &str = "DELTA_LAYOUT_MIN_TARGET_SIZE";

/// The target floor in effect: [`TARGET_FLOOR_ENV`] when set, else [`MIN_TARGET_FILE_BYTES`].
///
/// # Errors
/// [`Error::InvalidOption`] naming the variable when it is set but not a size.
pub fn target_floor_bytes() -> Result<u64> {
    match std::env::var(TARGET_FLOOR_ENV) {
        Ok(text) => crate::size::parse_size(
            crate::Setting::StorageOption(TARGET_FLOOR_ENV.into()),
            &text,
        ),
        Err(std::env::VarError::NotPresent) => Ok(MIN_TARGET_FILE_BYTES),
        Err(std::env::VarError::NotUnicode(_)) => Err(Error::invalid_option(
            crate::Setting::StorageOption(TARGET_FLOOR_ENV.into()),
            "is not a size",
        )),
    }
}

/// Checks a target file size of `setting` against `floor` ([`target_floor_bytes`]).
///
/// # Errors
/// [`Error::InvalidOption`] naming `setting` when `bytes` is 0 or below `floor`.
pub fn check_target_bytes(setting: crate::Setting, bytes: u64, floor: u64) -> Result<()> {
    if bytes == 0 {
        return Err(Error::invalid_option(setting, "must be greater than 0"));
    }
    if bytes < floor {
        return Err(Error::invalid_option(
            setting,
            format!(
                "{} is below the smallest target file size, {} (sizes are bytes unless a \
                 unit follows: 128MiB, 1GiB; {TARGET_FLOOR_ENV} lowers the floor for tests)",
                crate::size::exact_size(bytes),
                crate::size::exact_size(floor),
            ),
        ));
    }
    Ok(())
}

/// How a stream of output bytes is cut into files: see [`output_files`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputFiles {
    /// Files written, at least 1.
    pub files: u64,
    /// Bytes of each file but the last; the last holds the rest (a remainder when it is
    /// smaller).
    pub file_bytes: u64,
}

/// How `total_bytes` of output are cut into files of about `target_bytes`, so that every file
/// lands within [`FILE_SIZE_TOLERANCE`] of the target where the total allows, and at most one
/// is a remainder:
/// * up to 1.2x the target: one file;
/// * else `n = ceil(total / target)` equal files when each is at least 0.8x the target (each
///   at most the target), or `floor(total / target)` equal files when each is at most 1.2x
///   the target;
/// * else (only between 1.2x and 1.6x the target) one file of the target and a remainder.
///
/// Pure; both the plan (bins and clustering ranges) and the rolling writer (when to start a
/// new file) follow it.
#[must_use]
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "byte counts far below 2^52, rounded"
)]
pub fn output_files(total_bytes: u64, target_bytes: u64) -> OutputFiles {
    let target = target_bytes.max(1) as f64;
    let total = total_bytes as f64;
    if total <= target * (1.0 + FILE_SIZE_TOLERANCE) {
        return OutputFiles {
            files: 1,
            file_bytes: total_bytes,
        };
    }
    // Files of at most the target first: an estimate that comes out a little low then still
    // fits the tolerance instead of cutting a sliver off every file.
    let high = (total / target).ceil();
    if total / high >= target * (1.0 - FILE_SIZE_TOLERANCE) {
        return OutputFiles {
            files: high as u64,
            file_bytes: (total / high).ceil() as u64,
        };
    }
    let low = (total / target).floor().max(1.0);
    if total / low <= target * (1.0 + FILE_SIZE_TOLERANCE) {
        return OutputFiles {
            files: low as u64,
            file_bytes: (total / low).ceil() as u64,
        };
    }
    OutputFiles {
        files: high as u64,
        file_bytes: target_bytes,
    }
}

/// Options of the planning stage. Build with [`PlanOptions::default`] and the `with_*`
/// setters; [`PlanOptions::validate`] checks them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PlanOptions {
    clustering: Option<cluster::ClusterRequest>,
    max_deleted_ratio: f64,
    min_file_bytes: Option<u64>,
    predicate: Option<String>,
    include_unknown: bool,
    rewrite_all: bool,
    include_clustered: bool,
    target_file_bytes: Option<u64>,
    run_id: Option<String>,
    output_ratio: Option<f64>,
    cube_bytes: Option<u64>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        Self {
            clustering: None,
            max_deleted_ratio: DEFAULT_MAX_DELETED_RATIO,
            min_file_bytes: None,
            predicate: None,
            include_unknown: false,
            rewrite_all: false,
            include_clustered: false,
            target_file_bytes: None,
            run_id: None,
            output_ratio: None,
            cube_bytes: None,
        }
    }
}

/// A fresh run id: the first 16 lowercase hex digits of a random UUID (60 random bits).
#[must_use]
pub fn new_run_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..16].to_string()
}

impl PlanOptions {
    /// The run's id, which names every file it writes ([`Plan::run_id`]). Without one,
    /// [`plan`] leaves it empty and `optimize` draws a fresh one ([`new_run_id`]) per run.
    #[must_use]
    pub fn with_run_id(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// The target output file size in bytes. Defaults to the table property
    /// `delta.targetFileSize`, else [`autotuned_target_bytes`] of the table size.
    #[must_use]
    pub fn with_target_file_bytes(mut self, bytes: Option<u64>) -> Self {
        self.target_file_bytes = bytes;
        self
    }

    /// Bytes a rewrite writes per byte of input (live bytes: deleted rows left out), the
    /// estimate bins and clustering ranges are sized by, so that files come out near the
    /// target: output files are written with another codec and encodings than the input
    /// (Spark's snappy against our zstd), and one footer replaces many. Defaults to 1.0;
    /// `optimize` and `plan` measure it first on a sample of the candidates
    /// (`rewrite::estimate`). [`Plan::output_ratio`] records it.
    #[must_use]
    pub fn with_output_ratio(mut self, ratio: Option<f64>) -> Self {
        self.output_ratio = ratio;
        self
    }

    /// The output ratio given ([`PlanOptions::with_output_ratio`]), if any.
    #[must_use]
    pub fn output_ratio(&self) -> Option<f64> {
        self.output_ratio
    }

    /// Files smaller than this many bytes are candidates. Defaults to
    /// [`DEFAULT_MIN_FILE_SIZE_RATIO`] (3/4) of the target size.
    #[must_use]
    pub fn with_min_file_bytes(mut self, bytes: Option<u64>) -> Self {
        self.min_file_bytes = bytes;
        self
    }

    /// Files whose deletion vector deletes more than this share of their rows are
    /// candidates whatever their size. Defaults to [`DEFAULT_MAX_DELETED_RATIO`] (0.05).
    #[must_use]
    pub fn with_max_deleted_ratio(mut self, ratio: f64) -> Self {
        self.max_deleted_ratio = ratio;
        self
    }

    /// A predicate (see [`crate::predicate`], the language of `--where`) selecting what to
    /// rewrite. Over partition columns only, it selects partitions by their values. Over any
    /// other column, it selects the files whose stats say they may hold a matching row
    /// (min/max pruning as a reader does it, [`crate::pruning::Pruner`]), and a partition is
    /// planned over its selected files only; files without stats for one of its columns are
    /// left out unless [`PlanOptions::with_include_unknown`]. Defaults to everything.
    #[must_use]
    pub fn with_predicate(mut self, predicate: Option<String>) -> Self {
        self.predicate = predicate;
        self
    }

    /// With a predicate over data columns ([`PlanOptions::with_predicate`]), also select the
    /// files whose stats cannot tell (no `stats`, or no min/max for a column of the
    /// predicate): they may hold a matching row (`--where-include-unknown`). Off by default.
    #[must_use]
    pub fn with_include_unknown(mut self, include: bool) -> Self {
        self.include_unknown = include;
        self
    }

    /// Rewrites every file of the selected partitions, whatever its size, into files of the
    /// target size (files larger than the target are split). Off by default; `sweep` uses it
    /// to build a layout from scratch.
    #[must_use]
    pub fn with_rewrite_all(mut self, rewrite_all: bool) -> Self {
        self.rewrite_all = rewrite_all;
        self
    }

    /// Lets a plain compaction pack files of a clustered run (tagged `ZCUBE_ID`) together with
    /// other files (`--full` without a curve option). Off by default: compaction then never
    /// undoes a clustering; such a file is rewritten only alone, to drop the rows its deletion
    /// vector deletes ([`Plan::clustered_files_left`] counts the small ones left).
    #[must_use]
    pub fn with_include_clustered(mut self, include: bool) -> Self {
        self.include_clustered = include;
        self
    }

    /// Cluster along a curve over 1 to 6 columns (`--zorder` / `--hilbert`) instead of only
    /// compacting: every selected partition that is not already clustered that way is
    /// rewritten whole (see [`cluster`]). Defaults to no clustering.
    #[must_use]
    pub fn with_clustering(mut self, request: Option<cluster::ClusterRequest>) -> Self {
        self.clustering = request;
        self
    }

    /// The cube size (`--cube-size`, bytes) of the clustering a table declares, which a run
    /// without a request ([`PlanOptions::with_clustering`]) applies; that clustering also
    /// reclusters every file with [`PlanOptions::with_include_clustered`] (`--full`). `None`:
    /// [`cluster::DEFAULT_CUBE_BYTES`]. A request carries its own
    /// ([`cluster::ClusterRequest::cube_bytes`]).
    #[must_use]
    pub fn with_cube_bytes(mut self, bytes: Option<u64>) -> Self {
        self.cube_bytes = bytes;
        self
    }

    /// The clustering request, to complete it (the trees of earlier runs).
    pub(crate) fn clustering_mut(&mut self) -> Option<&mut cluster::ClusterRequest> {
        self.clustering.as_mut()
    }

    /// Checks the options on their own.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the flag: a target size below the floor
    /// ([`check_target_bytes`]), a ratio outside
    /// `[0, 1]`; [`Error::Internal`] for an output ratio that is not a positive number.
    pub fn validate(&self) -> Result<()> {
        if let Some(ratio) = self.output_ratio
            && !(ratio.is_finite() && ratio > 0.0)
        {
            return Err(Error::Internal(format!(
                "the output ratio {ratio} is not a positive number"
            )));
        }
        if let Some(bytes) = self.target_file_bytes {
            check_target_bytes(crate::Setting::TargetFileSize, bytes, target_floor_bytes()?)?;
        }
        if !(0.0..=1.0).contains(&self.max_deleted_ratio) {
            return Err(Error::invalid_option(
                crate::Setting::MaxDeletedRatio,
                format!("{} is not between 0 and 1", self.max_deleted_ratio),
            ));
        }
        Ok(())
    }
}

/// Where the target file size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetSource {
    /// `--target-size`.
    Option,
    /// The table property `delta.targetFileSize`.
    TableProperty,
    /// Autotuned from the table size.
    Autotuned,
}

/// The Databricks autotuned target file size for a table of `table_bytes` bytes: 256 MiB up
/// to 2.56 TB, rising linearly to 1 GiB at 10 TB, 1 GiB above.
///
/// Source: Databricks documentation, "Configure Delta Lake to control data file size"
/// (autotune file size based on table size).
#[must_use]
pub fn autotuned_target_bytes(table_bytes: u64) -> u64 {
    if table_bytes <= AUTOTUNE_SMALL_TABLE_BYTES {
        return AUTOTUNE_MIN_TARGET_BYTES;
    }
    if table_bytes >= AUTOTUNE_LARGE_TABLE_BYTES {
        return AUTOTUNE_MAX_TARGET_BYTES;
    }
    let span = u128::from(AUTOTUNE_LARGE_TABLE_BYTES - AUTOTUNE_SMALL_TABLE_BYTES);
    let step = u128::from(AUTOTUNE_MAX_TARGET_BYTES - AUTOTUNE_MIN_TARGET_BYTES);
    let above = u128::from(table_bytes - AUTOTUNE_SMALL_TABLE_BYTES);
    let extra = u64::try_from(step * above / span).unwrap_or(0);
    AUTOTUNE_MIN_TARGET_BYTES + extra
}

/// How a predicate over data columns selected the table's files, by their stats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PredicateFiles {
    /// Files selected: their stats say they may hold a matching row (and, with
    /// `include_unknown`, the files without stats for a column of the predicate).
    pub selected: usize,
    /// Files whose stats rule out a matching row.
    pub ruled_out: usize,
    /// Files without stats (no `stats`, or no min/max and not all null) for a column of the
    /// predicate: they may hold anything.
    pub without_stats: usize,
    /// Whether the files without stats were selected (`--where-include-unknown`).
    pub without_stats_included: bool,
}

/// One group of input files rewritten together into files of about the target size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// The bin's number, unique in the plan; output files are named after it.
    pub id: usize,
    /// Indices into [`TableView::files`], in log order.
    pub files: Vec<usize>,
    /// Sum of the input files' sizes, bytes.
    pub input_bytes: u64,
    /// Live rows of the input (numRecords minus deleted rows), when every file has stats.
    pub input_rows: Option<u64>,
    /// How many input files carry a deletion vector.
    pub num_deletion_vectors: usize,
    /// Expected output files: [`output_files`] of [`Bin::expected_output_bytes`], at least 1.
    pub expected_output_files: u64,
    /// Expected output bytes: the live share of the input bytes times
    /// [`Plan::output_ratio`]. 0 in orders of earlier versions, which cut clustering ranges
    /// into `expected_output_files` equal shares. Left out of the JSON when 0, so an order of
    /// an earlier version keeps its fingerprint when read back.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub expected_output_bytes: u64,
    /// For a clustering scope split over several bins (work orders, `plan --task-size`): the
    /// share of the scope's curve-key ranges this bin writes. Every bin of the scope reads all
    /// of its files and keeps the rows whose key falls in its ranges. `None`: the bin writes
    /// all of its files' rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_range: Option<cluster::KeyRange>,
}

/// The bins of one partition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionPlan {
    /// Partition values parallel to [`TableView::partition_columns`]; empty when unpartitioned.
    pub values: Vec<Option<String>>,
    /// The values as the log spells them (see [`crate::table::DataFile::raw_partition_values`]);
    /// every input file of the partition has exactly these, and so do the files written.
    pub raw_values: Vec<Option<String>>,
    /// Display form, e.g. `date=2024-01-01/region=null` (an empty string as `''`), or
    /// `(table)` when unpartitioned.
    pub display: String,
    /// The directory new files go to, relative to the table root (not URI-encoded): the one
    /// every existing file of the partition lives in when they agree on one (whatever
    /// escaping their writer used), else the Hive-style name
    /// ([`directory::partition_directory`]); empty when unpartitioned.
    pub directory: String,
    /// The bins, in order of their first file.
    pub bins: Vec<Bin>,
    /// With a cut tree ([`cluster::Clustering::is_cuts`]): the tree the partition's rows are
    /// routed through, an earlier run's or one built for this run
    /// (`plan_sized` builds the missing ones from a sample of the rows).
    /// Left out of the JSON when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_tree: Option<cuts::CutTree>,
    /// With a clustering, when the partition already carries its layout: the new files and
    /// what the run does with each cube ([`cluster::Upkeep`]); `None` for a compaction,
    /// `--full`, or a partition laid out anew. Left out of the JSON when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upkeep: Option<cluster::Upkeep>,
}

/// One partition's files packed into bins ([`Packer::pack`]).
struct Packed {
    /// The files of each bin (indices into [`TableView::files`]).
    bins: Vec<Vec<usize>>,
    /// With a cut tree: the tree of an earlier run the rows are routed through.
    cut_tree: Option<cuts::CutTree>,
    /// With a clustering: why these files ([`cluster::Upkeep`]).
    upkeep: Option<cluster::Upkeep>,
}

/// What a run will rewrite. Produced by [`plan`], consumed by the rewrite stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The table version the plan was made from.
    pub table_version: u64,
    /// Target output file size, bytes.
    pub target_file_bytes: u64,
    /// Where the target came from.
    pub target_source: TargetSource,
    /// Files below this many bytes were candidates.
    pub min_file_bytes: u64,
    /// Files deleting more than this share of their rows were candidates.
    pub max_deleted_ratio: f64,
    /// The `--where` predicate, normalized, if any.
    pub predicate: Option<String>,
    /// Partitions selected by the predicate (all when none): with a predicate over data
    /// columns, the partitions holding a selected file.
    pub num_partitions_selected: usize,
    /// How a predicate over data columns selected files ([`PlanOptions::with_predicate`]);
    /// `None` without one, or for a predicate over partition columns only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate_files: Option<PredicateFiles>,
    /// Partitions with at least one bin.
    pub partitions: Vec<PartitionPlan>,
    /// Files below the minimum size that a plain compaction left alone because a clustered
    /// run wrote them (tagged `ZCUBE_ID`): packing them with other files would undo their
    /// clustering. `--full` (or a curve option) rewrites them.
    pub clustered_files_left: usize,
    /// The clustering, when the run clusters (one bin per partition, all its files).
    pub clustering: Option<cluster::Clustering>,
    /// Bytes written per live input byte that bins and ranges were sized by
    /// ([`PlanOptions::with_output_ratio`]; 1.0 in orders of earlier versions). Left out of
    /// the JSON when 1.0, so an order of an earlier version keeps its fingerprint when read
    /// back.
    #[serde(default = "unit_ratio", skip_serializing_if = "is_unit_ratio")]
    pub output_ratio: f64,
    /// The run's id: every data file it writes is named `part-<bin>-<run id>-...`, and its
    /// commit records it in `commitInfo` (`delta-layout.runId`), so files of a run that
    /// died before committing can be told apart from those of live runs.
    pub run_id: String,
    /// The key spaces of clustering scopes split over several bins ([`Bin::key_range`]
    /// indexes them); empty unless a work order split a scope.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_spaces: Vec<cluster::KeySpace>,
    /// Leaf columns (dotted physical paths) the files are written without a dictionary:
    /// measured on the output-ratio sample ([`crate::rewrite::estimate::plain_columns`]), the
    /// columns whose dictionary would outgrow its page in every row group anyway. Left out of
    /// the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plain_columns: Vec<String>,
    /// Every file of the selected partitions is rewritten whatever its size
    /// ([`PlanOptions::with_rewrite_all`], `sweep`'s builds): bins then lay data out anew and
    /// need not reduce the file count ([`Plan::must_reduce_file_count`]). Left out of the
    /// JSON when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub rewrite_all: bool,
}

#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's signature")]
fn is_false(value: &bool) -> bool {
    !*value
}

fn unit_ratio() -> f64 {
    1.0
}

#[expect(clippy::float_cmp, reason = "the exact default, as written")]
fn is_unit_ratio(ratio: &f64) -> bool {
    *ratio == 1.0
}

#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's signature")]
fn is_zero(bytes: &u64) -> bool {
    *bytes == 0
}

impl Bin {
    /// Where a clustering bin's output ranges are cut: positions in `(0, 1)` of its rows
    /// (by curve key), ascending, `expected_output_files - 1` of them: equal shares, or one
    /// range of the target and a remainder ([`output_files`]).
    #[must_use]
    #[expect(
        clippy::cast_precision_loss,
        reason = "byte counts far below 2^52, a position"
    )]
    pub fn range_cuts(&self, target_file_bytes: u64) -> Vec<f64> {
        let files = self.expected_output_files.max(1);
        let share = if self.expected_output_bytes == 0 {
            1.0 / files as f64
        } else {
            let cut = output_files(self.expected_output_bytes, target_file_bytes);
            if cut.files == files {
                cut.file_bytes as f64 / self.expected_output_bytes as f64
            } else {
                1.0 / files as f64
            }
        };
        shares(files, share)
    }
}

/// Positions `k * share` in `(0, 1)` for `k` in `1..files`.
#[expect(clippy::cast_precision_loss, reason = "file counts far below 2^52")]
fn shares(files: u64, share: f64) -> Vec<f64> {
    (1..files)
        .map(|k| k as f64 * share)
        .filter(|&at| at > 0.0 && at < 1.0)
        .collect()
}

/// Where `total_bytes` of sorted output are cut into files of about `target_bytes`: the
/// positions in `(0, 1)` of the rows between the files [`output_files`] makes (equal files,
/// or one of the target and a remainder). Empty for one file.
#[must_use]
#[expect(
    clippy::cast_precision_loss,
    reason = "byte counts far below 2^52, a position"
)]
pub fn range_shares(total_bytes: u64, target_bytes: u64) -> Vec<f64> {
    if total_bytes == 0 {
        return Vec::new();
    }
    let cut = output_files(total_bytes, target_bytes);
    shares(cut.files, cut.file_bytes as f64 / total_bytes as f64)
}

/// Where a cut tree's leaf of `total_bytes` of sorted output is cut into files: `round(total
/// / target)` equal files (at least one), so a leaf a little over the target stays one file
/// and none is a sliver (a leaf is the unit a query skips; a remainder file of it would only
/// add a file). Positions in `(0, 1)` of the leaf's rows; empty for one file.
#[must_use]
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "byte counts far below 2^52, a rounded count"
)]
pub fn leaf_shares(total_bytes: u64, target_bytes: u64) -> Vec<f64> {
    let files = (total_bytes as f64 / target_bytes.max(1) as f64)
        .round()
        .max(1.0) as u64;
    shares(files, 1.0 / files as f64)
}

impl Plan {
    /// The leaf columns this plan's layout orders or cuts rows by: the clustering's leaves,
    /// then the columns of each partition's cut tree, each once. Files it writes carry stats
    /// on them whatever `delta.dataSkippingNumIndexedCols` says (PROTOCOL.md "Clustered
    /// Table" requires them for clustering columns, and skipping needs them).
    ///
    /// # Errors
    /// What [`cuts::CutTree::cut_leaves`] returns for a tree that does not fit `table`.
    pub fn layout_leaves(&self, table: &TableView) -> Result<Vec<crate::table::LeafColumn>> {
        let mut out: Vec<crate::table::LeafColumn> = self
            .clustering
            .as_ref()
            .map(|c| c.leaves.clone())
            .unwrap_or_default();
        for tree in self.partitions.iter().filter_map(|p| p.cut_tree.as_ref()) {
            for leaf in tree.cut_leaves(table)? {
                if !out.iter().any(|l| l.physical == leaf.physical) {
                    out.push(leaf);
                }
            }
        }
        Ok(out)
    }

    /// Whether `bin` is worth committing only when it writes fewer files than it reads.
    ///
    /// A compaction bin exists to reduce the file count: one that writes as many files as it
    /// removes rewrites rows and invalidates readers' caches for nothing (and a second run
    /// would rewrite them again: non-idempotent compaction, delta-io/delta-rs#2576). Other
    /// purposes the plan names are exempt: a clustering (rows reordered along a curve), a
    /// bin with a deletion vector to purge (deleted rows dropped), and `rewrite_all`
    /// (`sweep` lays a table out anew). The plan leaves out bins whose expected output files
    /// are not fewer than their inputs; the rewrite checks the files actually written and
    /// deletes a bin's files instead of committing them ([`crate::rewrite::BinOutcome::left_alone`]).
    #[must_use]
    pub fn must_reduce_file_count(&self, bin: &Bin) -> bool {
        self.clustering.is_none() && !self.rewrite_all && bin.num_deletion_vectors == 0
    }

    /// Every bin of the plan, in partition then bin order.
    pub fn bins(&self) -> impl Iterator<Item = &Bin> {
        self.partitions.iter().flat_map(|p| p.bins.iter())
    }

    /// Number of input files to rewrite (the files of a split clustering scope, which all
    /// of its bins read, count once).
    #[must_use]
    pub fn num_input_files(&self) -> usize {
        self.scope_bins().map(|b| b.files.len()).sum()
    }

    /// Total input bytes to rewrite (a split scope's count once).
    #[must_use]
    pub fn input_bytes(&self) -> u64 {
        self.scope_bins().map(|b| b.input_bytes).sum()
    }

    /// One bin per scope: every bin but the second and later bins of split scopes.
    fn scope_bins(&self) -> impl Iterator<Item = &Bin> {
        self.bins()
            .filter(|b| b.key_range.is_none_or(|range| range.first == 0))
    }

    /// True when there is nothing to do.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }
}

/// Formats partition values as `col=value/col2=null`, `(table)` when unpartitioned.
#[must_use]
pub fn display_partition(columns: &[String], values: &[Option<String>]) -> String {
    if columns.is_empty() {
        return "(table)".to_string();
    }
    columns
        .iter()
        .zip(values)
        .map(|(c, v)| match v.as_deref() {
            None => format!("{c}=null"),
            Some("") => format!("{c}=''"),
            Some(v) => format!("{c}={v}"),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The target file size in bytes and where it comes from: `requested` (`--target-size`),
/// else the `delta.targetFileSize` property, else [`autotuned_target_bytes`] of the table
/// size. One rule for `optimize`, `inspect` and `report`.
///
/// # Errors
/// [`Error::InvalidOption`] naming `delta.targetFileSize` when it does not parse or is 0.
pub fn target_file_bytes(table: &TableView, requested: Option<u64>) -> Result<(u64, TargetSource)> {
    Ok(match requested {
        Some(bytes) => (bytes, TargetSource::Option),
        None => match table.property(PROP_TARGET_FILE_SIZE) {
            Some(text) => {
                let bytes = crate::size::parse_size(
                    crate::Setting::TableProperty(PROP_TARGET_FILE_SIZE.into()),
                    text,
                )?;
                if bytes == 0 {
                    return Err(Error::invalid_option(
                        crate::Setting::TableProperty(PROP_TARGET_FILE_SIZE.into()),
                        "must be greater than 0",
                    ));
                }
                (bytes, TargetSource::TableProperty)
            }
            None => (
                autotuned_target_bytes(table.totals().bytes),
                TargetSource::Autotuned,
            ),
        },
    })
}

/// Plans a compaction of `table`.
///
/// # Errors
/// * [`Error::InvalidOption`] from [`PlanOptions::validate`], for an unusable
///   `delta.targetFileSize` property (one below [`target_floor_bytes`] included), or for a
///   cube size ([`PlanOptions::with_cube_bytes`]) without any clustering.
/// * [`Error::InvalidPredicate`] when `--where` does not parse or a literal does not fit its
///   column; [`Error::UnknownColumn`] when it names a column the table lacks, or a data
///   column of a type without min/max stats.
pub fn plan(table: &TableView, options: &PlanOptions) -> Result<Plan> {
    options.validate()?;
    let (target_file_bytes, target_source) = target_file_bytes(table, options.target_file_bytes)?;
    if target_source == TargetSource::TableProperty {
        check_target_bytes(
            crate::Setting::TableProperty(PROP_TARGET_FILE_SIZE.into()),
            target_file_bytes,
            target_floor_bytes()?,
        )?;
    }
    let min_file_bytes = min_file_bytes(options, target_file_bytes);

    let output_ratio = options.output_ratio.unwrap_or(1.0);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a byte count, rounded down; the ratio is positive (validated)"
    )]
    let input_capacity = ((target_file_bytes as f64 / output_ratio) as u64).max(1);
    let (predicate, file_selection) = selection_of(table, options)?;
    let clustering = clustering_of(table, options)?;

    let packer = Packer {
        table,
        options,
        clustering: clustering.as_ref(),
        target_file_bytes,
        min_file_bytes,
        output_ratio,
        input_capacity,
    };
    let mut num_partitions_selected = 0;
    let mut clustered_files_left = 0;
    let mut partitions = Vec::new();
    let mut next_bin_id = 0;
    for (raw_values, indices) in partition_groups(table) {
        let values = table.files[indices[0]].partition_values.as_slice();
        if let Some(predicate) = &predicate
            && !partition_matches(
                table,
                predicate,
                values,
                options.predicate.as_deref().unwrap_or_default(),
            )?
        {
            continue;
        }
        // A predicate over data columns: the partition's selected files only.
        let all_indices = indices;
        let indices = selected_files(&all_indices, file_selection.as_ref());
        if indices.is_empty() {
            continue;
        }
        num_partitions_selected += 1;
        let Packed {
            bins: packed,
            cut_tree,
            upkeep,
        } = packer.pack(&indices, &mut clustered_files_left);
        let mut bins = Vec::new();
        for files in packed {
            if let Some(bin) = packer.bin(next_bin_id, files) {
                bins.push(bin);
                next_bin_id += 1;
            }
        }
        if !bins.is_empty() {
            partitions.push(PartitionPlan {
                values: values.to_vec(),
                raw_values: raw_values.to_vec(),
                display: display_partition(&table.partition_columns, raw_values),
                directory: directory::output_directory(table, &all_indices, raw_values),
                bins,
                cut_tree,
                upkeep,
            });
        }
    }
    Ok(Plan {
        table_version: table.version,
        target_file_bytes,
        target_source,
        min_file_bytes,
        max_deleted_ratio: options.max_deleted_ratio,
        predicate: predicate
            .map(|p| p.to_string())
            .or_else(|| file_selection.as_ref().map(|s| s.normalized.clone())),
        predicate_files: file_selection.as_ref().map(|s| s.counts),
        num_partitions_selected,
        partitions,
        clustering,
        clustered_files_left,
        output_ratio,
        run_id: options.run_id.clone().unwrap_or_default(),
        key_spaces: Vec::new(),
        plain_columns: Vec::new(),
        rewrite_all: options.rewrite_all,
    })
}

/// The minimum file size of `options`, else [`DEFAULT_MIN_FILE_SIZE_RATIO`] of the target
/// `target_file_bytes`, rounded down; bytes.
fn min_file_bytes(options: &PlanOptions, target_file_bytes: u64) -> u64 {
    options.min_file_bytes.unwrap_or_else(|| {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "3/4 of a u64 size, rounded down"
        )]
        let min = (target_file_bytes as f64 * DEFAULT_MIN_FILE_SIZE_RATIO) as u64;
        min
    })
}

/// The `--where` predicate of `options`, parsed against `table`: over partition columns
/// only, or else the files it selects; neither without a predicate.
///
/// # Errors
/// What [`Selection::new`] returns: [`Error::InvalidPredicate`], [`Error::UnknownColumn`].
fn selection_of(
    table: &TableView,
    options: &PlanOptions,
) -> Result<(Option<Predicate>, Option<FileSelection>)> {
    Ok(match options.predicate.as_deref() {
        None => (None, None),
        Some(text) => match Selection::new(table, text, options.include_unknown)? {
            Selection::Partitions(predicate) => (Some(predicate), None),
            Selection::Files(selection) => (None, Some(selection)),
        },
    })
}

/// The clustering `plan` lays the table out by: the one `options` asks for, else a Hilbert
/// curve over the clustering columns `table` declares, else none.
///
/// # Errors
/// What [`cluster::resolve`] returns for the request; [`Error::InvalidOption`] naming
/// `--cube-size` when it is given without any clustering.
fn clustering_of(table: &TableView, options: &PlanOptions) -> Result<Option<cluster::Clustering>> {
    let declared = table.clustering_columns.as_ref().map(|columns| {
        let mut request =
            cluster::ClusterRequest::new(crate::curve::Curve::Hilbert, columns.clone());
        request.cube_bytes = options.cube_bytes;
        request.full = options.include_clustered;
        request
    });
    if options.clustering.is_none() && declared.is_none() && options.cube_bytes.is_some() {
        return Err(Error::invalid_option(
            crate::Setting::CubeSize,
            "only applies to a clustering: --zorder, --hilbert, --workload, or a table that declares clustering columns",
        ));
    }
    options
        .clustering
        .as_ref()
        .or(declared.as_ref())
        .map(|request| cluster::resolve(table, request))
        .transpose()
}

/// The files of a partition, `indices` (into [`TableView::files`]), that `selection` (a
/// predicate over data columns) selects, in order; all of them without one.
fn selected_files(indices: &[usize], selection: Option<&FileSelection>) -> Vec<usize> {
    match selection {
        Some(selection) => indices
            .iter()
            .copied()
            .filter(|&i| selection.selected[i])
            .collect(),
        None => indices.to_vec(),
    }
}

/// The files of `table` grouped by partition: indices into [`TableView::files`] in table
/// order, keyed by the partition values as the log spells them, in key order.
fn partition_groups(table: &TableView) -> BTreeMap<&[Option<String>], Vec<usize>> {
    // Grouped by the values as the log spells them: an empty string and a null are both
    // null to the protocol, but not to every reader, so they are never mixed in one file.
    let mut groups: BTreeMap<&[Option<String>], Vec<usize>> = BTreeMap::new();
    for (index, file) in table.files.iter().enumerate() {
        groups
            .entry(file.raw_partition_values.as_slice())
            .or_default()
            .push(index);
    }
    groups
}

/// What [`plan`] packs every partition's files into bins by: the table, the options, the
/// clustering, and the sizes (bytes) the options and table settle on.
struct Packer<'a> {
    table: &'a TableView,
    options: &'a PlanOptions,
    clustering: Option<&'a cluster::Clustering>,
    /// The target file size, bytes.
    target_file_bytes: u64,
    /// Files below this size are compaction candidates, bytes.
    min_file_bytes: u64,
    /// Expected output bytes per input byte.
    output_ratio: f64,
    /// The input bytes of a compaction bin: those that write about one target's worth of
    /// output.
    input_capacity: u64,
}

impl Packer<'_> {
    /// The selected files `indices` (into [`TableView::files`]) of one partition, packed: the
    /// files of each bin, and with a cut tree layout the partition's tree. Counts in
    /// `clustered_files_left` the clustered files compaction leaves as they are.
    fn pack(&self, indices: &[usize], clustered_files_left: &mut usize) -> Packed {
        let table = self.table;
        let (mut cut_tree, mut upkeep) = (None, None);
        let packed = if let Some(clustering) = self.clustering {
            let files: Vec<(usize, &crate::table::DataFile)> =
                indices.iter().map(|&i| (i, &table.files[i])).collect();
            let selected = if clustering.is_cuts() {
                clustering.select_cuts(
                    &files,
                    self.target_file_bytes,
                    self.options.max_deleted_ratio,
                )
            } else {
                clustering.select(
                    &files,
                    self.target_file_bytes,
                    self.options.max_deleted_ratio,
                )
            };
            cut_tree = selected.tree;
            upkeep = selected.upkeep;
            if selected.files.is_empty() {
                Vec::new()
            } else {
                vec![selected.files]
            }
        } else {
            self.pack_compaction(indices, clustered_files_left)
        };
        Packed {
            bins: packed,
            cut_tree,
            upkeep,
        }
    }

    /// The compaction bins of one partition's selected files `indices`: the candidates
    /// (small, with many deleted rows, or all with `rewrite_all`) packed by input bytes, and
    /// each clustered candidate alone when its deleted rows call for a rewrite. Counts in
    /// `clustered_files_left` the other clustered candidates, left as they are.
    fn pack_compaction(
        &self,
        indices: &[usize],
        clustered_files_left: &mut usize,
    ) -> Vec<Vec<usize>> {
        let (table, options, min_file_bytes) = (self.table, self.options, self.min_file_bytes);
        let is_candidate = |f: &crate::table::DataFile| {
            options.rewrite_all
                || f.size_bytes < min_file_bytes
                || f.deleted_ratio() > options.max_deleted_ratio
        };
        let clustered = |f: &crate::table::DataFile| {
            !options.include_clustered && f.tags.contains_key(crate::curve::TAG_CUBE_ID)
        };
        let candidates: Vec<(usize, u64)> = indices
            .iter()
            .map(|&i| (i, &table.files[i]))
            .filter(|(_, f)| is_candidate(f) && !clustered(f))
            .map(|(i, f)| (i, f.size_bytes))
            .collect();
        // Bins hold the input that writes about one target's worth of output.
        let mut packed = binpack::pack(&candidates, self.input_capacity);
        // A clustered file is rewritten only alone (its deletion vector purged), which
        // keeps its rows together; small ones are left as they are.
        for &i in indices {
            let f = &table.files[i];
            if is_candidate(f) && clustered(f) {
                if f.deleted_ratio() > options.max_deleted_ratio {
                    packed.push(vec![i]);
                } else {
                    *clustered_files_left += 1;
                }
            }
        }
        packed
    }

    /// Bin `id` of the packed `files` (indices into [`TableView::files`]), with its input and
    /// expected output; `None` for a compaction bin that would not write fewer files than it
    /// reads.
    fn bin(&self, id: usize, files: Vec<usize>) -> Option<Bin> {
        let table = self.table;
        let num_deletion_vectors = files
            .iter()
            .filter(|&&i| table.files[i].deletion_vector.is_some())
            .count();
        let input_bytes: u64 = files.iter().map(|&i| table.files[i].size_bytes).sum();
        let input_rows = files
            .iter()
            .map(|&i| table.files[i].num_live_rows())
            .sum::<Option<u64>>();
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "an estimate"
        )]
        let live_bytes = files
            .iter()
            .map(|&i| {
                let f = &table.files[i];
                (f.size_bytes as f64 * (1.0 - f.deleted_ratio())) as u64
            })
            .sum::<u64>();
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "an estimate"
        )]
        let expected_output_bytes = ((live_bytes as f64 * self.output_ratio) as u64).max(1);
        let expected_output_files =
            output_files(expected_output_bytes, self.target_file_bytes).files;
        // A compaction bin that would not write fewer files than it reads is left out: a
        // single file without a deletion vector, or a bin whose expected output is cut
        // into as many files as it reads (see `Plan::must_reduce_file_count`).
        let must_reduce =
            self.clustering.is_none() && !self.options.rewrite_all && num_deletion_vectors == 0;
        if must_reduce && expected_output_files >= files.len() as u64 {
            return None;
        }
        Some(Bin {
            id,
            files,
            input_bytes,
            input_rows,
            num_deletion_vectors,
            expected_output_files,
            expected_output_bytes,
            key_range: None,
        })
    }
}

/// The files of `table` a `--where` predicate selects, as [`plan`] selects them (see
/// [`PlanOptions::with_predicate`]): a vector parallel to [`TableView::files`], and the
/// counts (for a predicate over partition columns only: the files of the matching partitions
/// selected, the others ruled out). `report --where` reports on these files only.
///
/// # Errors
/// As [`plan`] for its predicate: [`Error::InvalidPredicate`], [`Error::UnknownColumn`].
pub fn select_files(
    table: &TableView,
    predicate: &str,
    include_unknown: bool,
) -> Result<(Vec<bool>, PredicateFiles)> {
    match Selection::new(table, predicate, include_unknown)? {
        Selection::Files(selection) => Ok((selection.selected, selection.counts)),
        Selection::Partitions(parsed) => {
            let mut counts = PredicateFiles {
                without_stats_included: include_unknown,
                ..PredicateFiles::default()
            };
            let mut selected = Vec::with_capacity(table.files.len());
            for file in &table.files {
                let matches = partition_matches(table, &parsed, &file.partition_values, predicate)?;
                if matches {
                    counts.selected += 1;
                } else {
                    counts.ruled_out += 1;
                }
                selected.push(matches);
            }
            Ok((selected, counts))
        }
    }
}

/// Whether partition values `values` (parallel to [`TableView::partition_columns`]) satisfy
/// `predicate` (resolved to partition columns); `text` names it in errors.
fn partition_matches(
    table: &TableView,
    predicate: &Predicate,
    values: &[Option<String>],
    text: &str,
) -> Result<bool> {
    let selected = predicate
        .evaluate(&|column: &[String]| {
            let position = table
                .partition_columns
                .iter()
                .position(|c| c == &column[0])
                .ok_or_else(|| Error::Internal(format!("column {column:?} not resolved")))?;
            Ok((
                partition_type(table, position)?,
                values[position].as_deref(),
            ))
        })
        .map_err(|e| match e {
            Error::InvalidPredicate { message, .. } => Error::InvalidPredicate {
                predicate: text.to_string(),
                message,
            },
            other => other,
        })?;
    Ok(selected == Some(true))
}

/// What a `--where` predicate selects: partitions (every column a partition column) or
/// files (by their stats).
enum Selection {
    Partitions(Predicate),
    Files(FileSelection),
}

/// The files a predicate over data columns selects.
struct FileSelection {
    /// Parallel to [`TableView::files`].
    selected: Vec<bool>,
    counts: PredicateFiles,
    /// The predicate as parsed, for the plan and the commit.
    normalized: String,
}

impl Selection {
    fn new(table: &TableView, text: &str, include_unknown: bool) -> Result<Self> {
        let parsed = Predicate::parse(text)?;
        let is_partition_column = |column: &Vec<String>| {
            column.len() == 1
                && (table.partition_columns.iter().any(|c| *c == column[0])
                    || table
                        .partition_columns
                        .iter()
                        .filter(|c| c.eq_ignore_ascii_case(&column[0]))
                        .count()
                        == 1)
        };
        if parsed.columns().iter().all(is_partition_column) {
            return Ok(Self::Partitions(partition_predicate(table, text)?));
        }
        let with_setting = |e: Error| match e {
            Error::UnknownColumn {
                column, message, ..
            } => Error::UnknownColumn {
                column,
                setting: Some(crate::Setting::PartitionPredicate),
                message,
            },
            Error::InvalidPredicate { message, .. } => Error::InvalidPredicate {
                predicate: text.to_string(),
                message,
            },
            other => other,
        };
        let pruner = crate::pruning::Pruner::new(table, &parsed).map_err(with_setting)?;
        let prefix = crate::pruning::string_prefix_length(table);
        // Each column's bounds in every file, then each file decided on its row of them.
        let columns: Vec<Vec<crate::pruning::FileBounds>> = pruner
            .columns()
            .iter()
            .map(|c| crate::pruning::column_bounds(table, c, prefix))
            .collect();
        let decided: Vec<(bool, bool)> = {
            use rayon::prelude::*;
            (0..table.files.len())
                .into_par_iter()
                .map(|f| {
                    let bounds: Vec<crate::pruning::FileBounds> =
                        columns.iter().map(|c| c[f].clone()).collect();
                    let is_unknown =
                        |c: &crate::bound::ColumnRef, b: &crate::pruning::FileBounds| {
                            c.partition_index.is_none() && !b.has_range() && !b.all_null
                        };
                    let refs: Vec<&crate::pruning::FileBounds> = bounds.iter().collect();
                    let may_match = pruner.may_match(&refs);
                    let unknown = pruner
                        .columns()
                        .iter()
                        .zip(&bounds)
                        .any(|(c, b)| is_unknown(c, b));
                    // A file the known columns alone let match (`a > 5 OR flag` where `flag`
                    // has no stats) is selected by its stats: the unknown columns taken as
                    // matching nothing (all null).
                    let known_match = unknown && {
                        let nothing = crate::pruning::FileBounds {
                            all_null: true,
                            ..crate::pruning::FileBounds::default()
                        };
                        let refs: Vec<&crate::pruning::FileBounds> = pruner
                            .columns()
                            .iter()
                            .zip(&bounds)
                            .map(|(c, b)| if is_unknown(c, b) { &nothing } else { b })
                            .collect();
                        pruner.may_match(&refs)
                    };
                    (may_match, unknown && !known_match)
                })
                .collect()
        };
        let mut counts = PredicateFiles {
            without_stats_included: include_unknown,
            ..PredicateFiles::default()
        };
        let selected = decided
            .iter()
            .map(|&(may_match, unknown)| {
                if !may_match {
                    counts.ruled_out += 1;
                    false
                } else if unknown {
                    counts.without_stats += 1;
                    if include_unknown {
                        counts.selected += 1;
                    }
                    include_unknown
                } else {
                    counts.selected += 1;
                    true
                }
            })
            .collect();
        Ok(Self::Files(FileSelection {
            selected,
            counts,
            normalized: parsed.to_string(),
        }))
    }
}

fn partition_type(table: &TableView, position: usize) -> Result<&DataType> {
    let name = &table.partition_columns[position];
    table
        .schema
        .fields()
        .find(|f| f.name() == name)
        .map(|f| f.data_type())
        .ok_or_else(|| Error::Internal(format!("partition column '{name}' is not in the schema")))
}

/// Parses `text` and resolves its columns to partition columns (exact name first, then a
/// unique case-insensitive match, as Spark resolves names).
fn partition_predicate(table: &TableView, text: &str) -> Result<Predicate> {
    let mut predicate = Predicate::parse(text)?;
    let resolve = |column: &[String]| -> Result<String> {
        let name = match column {
            [one] => one.clone(),
            nested => crate::column::format_path(nested),
        };
        if let Some(exact) = table.partition_columns.iter().find(|c| **c == name) {
            return Ok(exact.clone());
        }
        let folded: Vec<&String> = table
            .partition_columns
            .iter()
            .filter(|c| c.eq_ignore_ascii_case(&name))
            .collect();
        if let [one] = folded.as_slice() {
            return Ok((*one).clone());
        }
        let known = if table.partition_columns.is_empty() {
            "the table is not partitioned".to_string()
        } else {
            format!("partition columns: {}", table.partition_columns.join(", "))
        };
        let is_data_column = table
            .data_leaf_columns()
            .iter()
            .any(|leaf| leaf.display_name().eq_ignore_ascii_case(&name));
        Err(Error::UnknownColumn {
            column: name,
            setting: Some(crate::Setting::PartitionPredicate),
            message: if is_data_column
                || crate::table::schema::void_column_message(&table.schema, column).is_some()
            {
                format!(
                    "is not a partition column ({known}); the partition predicate selects partitions, not rows"
                )
            } else {
                format!("does not exist in the table ({known})")
            },
        })
    };
    rewrite_columns(&mut predicate, &resolve)?;
    Ok(predicate)
}

fn rewrite_columns(
    predicate: &mut Predicate,
    resolve: &dyn Fn(&[String]) -> Result<String>,
) -> Result<()> {
    match predicate {
        Predicate::And(a, b) | Predicate::Or(a, b) => {
            rewrite_columns(a, resolve)?;
            rewrite_columns(b, resolve)
        }
        Predicate::Not(a) => rewrite_columns(a, resolve),
        Predicate::Compare { column, .. }
        | Predicate::In { column, .. }
        | Predicate::IsNull { column, .. }
        | Predicate::Between { column, .. } => {
            *column = vec![resolve(column)?];
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn autotune_follows_databricks_curve() {
        assert_eq!(autotuned_target_bytes(0), 256 << 20);
        assert_eq!(
            autotuned_target_bytes(AUTOTUNE_SMALL_TABLE_BYTES),
            256 << 20
        );
        assert_eq!(autotuned_target_bytes(AUTOTUNE_LARGE_TABLE_BYTES), 1 << 30);
        assert_eq!(autotuned_target_bytes(u64::MAX), 1 << 30);
        // Half way between 2.56 TB and 10 TB: half way between 256 MiB and 1 GiB.
        let mid = (AUTOTUNE_SMALL_TABLE_BYTES + AUTOTUNE_LARGE_TABLE_BYTES) / 2;
        assert_eq!(autotuned_target_bytes(mid), (256 << 20) + ((768 << 20) / 2));
    }

    #[test]
    fn output_is_cut_into_files_near_the_target() {
        let cut = |total| {
            let c = output_files(total, 100);
            (c.files, c.file_bytes)
        };
        // Up to 1.2x the target: one file, whatever its size.
        assert_eq!(cut(1), (1, 1));
        assert_eq!(cut(120), (1, 120));
        // 1.2x to 1.6x: one file of the target and a remainder.
        assert_eq!(cut(121), (2, 100));
        assert_eq!(cut(159), (2, 100));
        // From 1.6x on: equal files within 20% of the target.
        assert_eq!(cut(160), (2, 80));
        // At most the target where the tolerance allows, else at most 1.2x.
        assert_eq!(cut(240), (3, 80));
        assert_eq!(cut(250), (3, 84));
        assert_eq!(cut(230), (2, 115));
        assert_eq!(cut(1_000), (10, 100));
        assert_eq!(cut(1_049), (11, 96));
        for total in 161..5_000u64 {
            let c = output_files(total, 100);
            assert!(
                (80..=120).contains(&c.file_bytes),
                "{total}: {c:?} is not within 20% of the target"
            );
            assert!(c.file_bytes * (c.files - 1) < total, "{total}: {c:?}");
            assert!(c.file_bytes * c.files >= total, "{total}: {c:?}");
        }
    }

    #[test]
    fn clustering_ranges_are_cut_by_expected_bytes() {
        let bin = |files, bytes| Bin {
            id: 0,
            files: Vec::new(),
            input_bytes: 0,
            input_rows: None,
            num_deletion_vectors: 0,
            expected_output_files: files,
            expected_output_bytes: bytes,
            key_range: None,
        };
        assert!(bin(1, 110).range_cuts(100).is_empty());
        // One range of the target, a remainder of 40%.
        let cuts = bin(2, 140).range_cuts(100);
        assert_eq!(cuts.len(), 1);
        assert!((cuts[0] - 100.0 / 140.0).abs() < 0.01, "{cuts:?}");
        // Four equal ranges.
        let cuts = bin(4, 400).range_cuts(100);
        assert_eq!(cuts.len(), 3);
        for (at, want) in cuts.iter().zip([0.25, 0.5, 0.75]) {
            assert!((at - want).abs() < 0.01, "{cuts:?}");
        }
        // An order of an earlier version (no expected bytes): equal shares of the count.
        assert_eq!(bin(2, 0).range_cuts(100), vec![0.5]);
    }

    #[test]
    fn a_plan_of_an_earlier_version_reads_back_as_written() {
        // A plan without the output ratio and expected output bytes (as earlier versions
        // wrote them): read and written again, it is the same JSON, so a work order's
        // fingerprint, computed over its plan, still matches.
        let table = described(&[("a", 30, 3), ("a", 30, 4)]);
        let options = PlanOptions::default()
            .with_target_file_bytes(Some(100))
            .with_output_ratio(Some(0.5));
        let mut value = serde_json::to_value(plan(&table, &options).unwrap()).unwrap();
        assert!(value.get("output_ratio").is_some());
        value.as_object_mut().unwrap().remove("output_ratio");
        for partition in value["partitions"].as_array_mut().unwrap() {
            for bin in partition["bins"].as_array_mut().unwrap() {
                assert!(bin.get("expected_output_bytes").is_some());
                bin.as_object_mut().unwrap().remove("expected_output_bytes");
            }
        }
        let read: Plan = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(read.output_ratio, 1.0);
        assert!(read.bins().all(|b| b.expected_output_bytes == 0));
        assert_eq!(serde_json::to_value(&read).unwrap(), value);
    }

    #[test]
    fn bins_are_sized_by_the_output_ratio() {
        // Ten files of 30 bytes: at a ratio of 1, three fit a 100-byte bin (the tenth file,
        // alone in its bin, is left as it is); at 0.25, all ten (75 bytes of expected
        // output) go into one.
        let table = described(&[("a", 30, 1); 10]);
        let at = |ratio| {
            let options = PlanOptions::default()
                .with_target_file_bytes(Some(100))
                .with_min_file_bytes(Some(50))
                .with_output_ratio(Some(ratio));
            plan(&table, &options).unwrap()
        };
        let plain = at(1.0);
        assert_eq!(plain.bins().count(), 3);
        assert!(plain.bins().all(|b| b.input_bytes <= 100));
        let sized = at(0.25);
        assert_eq!(sized.output_ratio, 0.25);
        let bins: Vec<&Bin> = sized.bins().collect();
        assert_eq!(bins.len(), 1);
        assert_eq!(bins[0].files.len(), 10);
        assert_eq!(bins[0].expected_output_bytes, 75);
        assert_eq!(bins[0].expected_output_files, 1);
        assert!(
            PlanOptions::default()
                .with_output_ratio(Some(0.0))
                .validate()
                .is_err()
        );
    }

    #[test]
    fn only_plain_compaction_bins_must_reduce_the_file_count() {
        // Two 70-byte files below the 75-byte minimum: packed into one bin of a 140-byte
        // target, one expected output file.
        let table = described(&[("a", 70, 1), ("a", 70, 1)]);
        let compaction = plan(
            &table,
            &PlanOptions::default()
                .with_target_file_bytes(Some(140))
                .with_min_file_bytes(Some(75))
                .with_output_ratio(Some(1.0)),
        )
        .unwrap();
        let bin = compaction.bins().next().unwrap();
        assert_eq!((bin.files.len(), bin.expected_output_files), (2, 1));
        assert!(!compaction.rewrite_all);
        assert!(compaction.must_reduce_file_count(bin));
        // At a 60-byte target neither fits a bin with the other: each would be rewritten
        // alone into one file, as many as it reads, so nothing is planned.
        let alone = plan(
            &table,
            &PlanOptions::default()
                .with_target_file_bytes(Some(60))
                .with_min_file_bytes(Some(75))
                .with_output_ratio(Some(1.0)),
        )
        .unwrap();
        assert!(alone.is_empty());
        // `rewrite_all` (sweep's builds) rewrites them anyway, and its bins need not reduce
        // the file count; the flag is written into the plan's JSON only when set.
        let rewritten = plan(
            &table,
            &PlanOptions::default()
                .with_target_file_bytes(Some(60))
                .with_rewrite_all(true)
                .with_output_ratio(Some(1.0)),
        )
        .unwrap();
        assert!(rewritten.rewrite_all);
        assert_eq!(rewritten.bins().count(), 2);
        assert!(
            rewritten
                .bins()
                .all(|b| !rewritten.must_reduce_file_count(b))
        );
        assert_eq!(
            serde_json::to_value(&rewritten).unwrap()["rewrite_all"],
            true
        );
        assert!(
            serde_json::to_value(&compaction)
                .unwrap()
                .get("rewrite_all")
                .is_none()
        );
        // A bin with a deletion vector to purge is exempt too.
        let mut purge = bin.clone();
        purge.num_deletion_vectors = 1;
        assert!(!compaction.must_reduce_file_count(&purge));
    }

    #[test]
    fn targets_are_checked_against_the_floor() {
        let floor = MIN_TARGET_FILE_BYTES;
        assert_eq!(floor, 1_048_576);
        assert!(check_target_bytes(crate::Setting::TargetFileSize, floor, floor).is_ok());
        let err = check_target_bytes(crate::Setting::TargetSizes, floor - 1, floor).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value for the target sizes: 1048575 is below the smallest target file \
             size, 1MiB (sizes are bytes unless a unit follows: 128MiB, 1GiB; \
             DELTA_LAYOUT_MIN_TARGET_SIZE lowers the floor for tests)"
        );
        let err = check_target_bytes(crate::Setting::TargetFileSize, 0, 1).unwrap_err();
        assert!(err.to_string().ends_with("must be greater than 0"), "{err}");
        assert!(check_target_bytes(crate::Setting::TargetFileSize, 1, 1).is_ok());
    }

    #[test]
    fn options_are_validated() {
        assert!(matches!(
            PlanOptions::default()
                .with_target_file_bytes(Some(0))
                .validate()
                .unwrap_err(),
            Error::InvalidOption {
                option: crate::Setting::TargetFileSize,
                ..
            }
        ));
        assert!(matches!(
            PlanOptions::default()
                .with_max_deleted_ratio(1.5)
                .validate()
                .unwrap_err(),
            Error::InvalidOption {
                option: crate::Setting::MaxDeletedRatio,
                ..
            }
        ));
        assert!(PlanOptions::default().validate().is_ok());
    }

    /// A table built from a plain description (no log is read): partition column `p`,
    /// one file per `(partition, size bytes, numRecords)`.
    fn described(files: &[(&str, i64, u64)]) -> TableView {
        use deltalake::kernel::{Add, DataType as D, StructField, StructType};
        let schema = StructType::try_new(vec![
            StructField::new("id", D::LONG, true),
            StructField::new("p", D::STRING, true),
        ])
        .unwrap();
        let description = crate::table::TableDescription {
            // An existing directory with no table: nothing is read from it.
            uri: url::Url::from_directory_path(std::env::temp_dir())
                .unwrap()
                .to_string(),
            version: 7,
            schema,
            partition_columns: vec!["p".into()],
            properties: BTreeMap::new(),
            protocol: crate::table::ProtocolInfo {
                min_reader_version: 1,
                min_writer_version: 2,
                reader_features: Vec::new(),
                writer_features: Vec::new(),
            },
            clustering_columns: None,
            row_tracking: None,
        };
        let adds = files
            .iter()
            .enumerate()
            .map(|(i, (p, size, rows))| {
                let path = format!("p={p}/part-{i}.parquet");
                let add = Add {
                    path: path.clone(),
                    partition_values: std::collections::HashMap::from([(
                        "p".to_string(),
                        Some((*p).to_string()),
                    )]),
                    size: *size,
                    data_change: true,
                    stats: Some(format!("{{\"numRecords\":{rows}}}")),
                    ..Add::default()
                };
                (add, path)
            })
            .collect();
        TableView::from_description(description, adds, crate::table::StorageOptions::default())
            .unwrap()
    }

    #[test]
    fn small_files_of_a_partition_are_binned_from_a_plain_description() {
        let table = described(&[
            ("a", 30, 3),
            ("a", 30, 4),
            ("a", 200, 20),
            ("a", 30, 5),
            ("b", 30, 1),
        ]);
        let options = PlanOptions::default().with_target_file_bytes(Some(100));
        let plan = plan(&table, &options).unwrap();
        assert_eq!(plan.table_version, 7);
        assert_eq!(plan.min_file_bytes, 75);
        // Partition b has one small file: nothing to pack it with.
        assert_eq!(plan.partitions.len(), 1);
        let partition = &plan.partitions[0];
        assert_eq!(partition.display, "p=a");
        assert_eq!(partition.directory, "p=a");
        let bins: Vec<&Bin> = partition.bins.iter().collect();
        assert_eq!(bins.len(), 1);
        assert_eq!(
            bins[0].files,
            vec![0, 1, 3],
            "the 200-byte file is left alone"
        );
        assert_eq!(bins[0].input_bytes, 90);
        assert_eq!(bins[0].input_rows, Some(12));
        assert_eq!(plan.num_input_files(), 3);
    }

    #[test]
    fn where_selects_partitions_of_a_plain_description() {
        let table = described(&[("a", 30, 3), ("a", 30, 4), ("b", 30, 1), ("b", 30, 2)]);
        let options = PlanOptions::default()
            .with_target_file_bytes(Some(100))
            .with_predicate(Some("p = 'b'".into()));
        let plan = plan(&table, &options).unwrap();
        assert_eq!(plan.num_partitions_selected, 1);
        assert_eq!(plan.partitions.len(), 1);
        assert_eq!(plan.partitions[0].values, vec![Some("b".to_string())]);
        assert_eq!(plan.partitions[0].bins[0].files, vec![2, 3]);
        let none = PlanOptions::default().with_predicate(Some("p = 'c'".into()));
        let empty = super::plan(&table, &none).unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.num_partitions_selected, 0);
    }
}
