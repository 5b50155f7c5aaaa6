//! The library's error type, grouped by who must act on it.
//!
//! * **Bad input** (the user fixes the command line): [`Error::InvalidOption`],
//!   [`Error::UnknownColumn`], [`Error::InvalidPredicate`], [`Error::InvalidWorkload`],
//!   [`Error::WorkOrder`].
//! * **Table state** (the user or another writer changed or owns the table):
//!   [`Error::NotWritable`] (the operator grants write access), [`Error::NoTable`], [`Error::NotADeltaTable`], [`Error::DamagedLog`], [`Error::UnsupportedFeatures`],
//!   [`Error::BrokenFeatureRule`], [`Error::IcebergMetadata`],
//!   [`Error::ConcurrentModification`], [`Error::CommitStopped`], [`Error::CommitOutcomeUnknown`],
//!   [`Error::LayoutRegression`],
//!   [`Error::DataFile`].
//! * **I/O and formats** (storage or a library below us failed): [`Error::Delta`],
//!   [`Error::ObjectStore`], [`Error::Parquet`], [`Error::Arrow`], [`Error::Json`],
//!   [`Error::Io`] (a local file: a spill file, a scratch table).
//! * **[`Error::Cancelled`]**: the user stopped the run.
//! * **[`Error::Internal`]**, [`Error::TaskFailed`]: a bug in delta-layout.
//!
//! Messages are lowercase, carry no trailing period, and never repeat the text of their
//! `#[source]`: print the chain (`{:#}` with anyhow) to see it.

use deltalake::arrow::error::ArrowError;
use deltalake::parquet::errors::ParquetError;
use deltalake::{DeltaTableError, ObjectStoreError};

/// Shorthand for `std::result::Result<T, delta_layout::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in delta-layout.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- bad input -------------------------------------------------------------------
    /// A setting has a value that cannot be used (a size that does not parse, a ratio
    /// outside `[0, 1]`, ...). Front ends word `option` their way ([`Setting`]: the CLI as
    /// its flag).
    #[error("invalid value for {option}: {message}")]
    InvalidOption {
        /// The setting at fault.
        option: Setting,
        /// What is wrong with it.
        message: String,
    },
    /// A column named by the user does not exist where it was looked up, or is not allowed
    /// there (for example a data column in the partition predicate).
    #[error("column '{column}'{} {message}", setting.as_ref().map(|s| format!(" in {s}")).unwrap_or_default())]
    UnknownColumn {
        /// The column as the user wrote it.
        column: String,
        /// The setting that named it, when one did.
        setting: Option<Setting>,
        /// Why it was rejected, e.g. "is not a partition column of the table".
        message: String,
    },
    /// A vacuum retention below the table's, without the setting that accepts it.
    #[error(
        "invalid value for {}: {hours} hours is below the table's retention of {table_hours} hours ({property}); files that readers of older versions or running writers still need could be deleted; {override_with} allows it",
        Setting::Retain
    )]
    ShortRetention {
        /// The retention asked for, hours.
        hours: f64,
        /// The table's retention, hours.
        table_hours: f64,
        /// The table property that sets the table's retention.
        property: String,
        /// The setting that accepts a shorter retention.
        override_with: Setting,
    },
    /// A predicate (`--where`) does not parse or does not type-check.
    #[error("invalid predicate '{predicate}': {message}")]
    InvalidPredicate {
        /// The predicate text.
        predicate: String,
        /// What is wrong, with the position when known.
        message: String,
    },

    /// A workload file ([`crate::workload`]) has a line that cannot be used: a bad weight, a
    /// predicate that does not parse or does not fit the table. Names the file and the line
    /// (line 0: the file as a whole).
    #[error("workload '{file}'{} {message}", if *line > 0 { format!(" line {line}:") } else { String::new() })]
    InvalidWorkload {
        /// The workload's source, as a file name.
        file: String,
        /// The 1-based line at fault; 0 for the whole file.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A work order or a bin result ([`crate::workorder`]) that cannot be used: unreadable,
    /// of an unknown format version, altered since it was made, or not belonging to the plan
    /// it is given with. Names the document and what is wrong with it.
    #[error("{document} {message}")]
    WorkOrder {
        /// The document, as `work order 'plan.json'`, `result document 'r.json'` or `the result of bin 3`.
        document: String,
        /// What is wrong.
        message: String,
    },
    /// `optimize --verify`: the rows written differ from the rows read. Nothing was
    /// committed and the written files were deleted.
    #[error("verification failed, nothing was committed: {message}")]
    VerifyFailed {
        /// Which partition differs, with both fingerprints.
        message: String,
    },

    // ---- table state -----------------------------------------------------------------
    /// The location holds no readable Delta table (no `_delta_log`, or an unreadable log).
    #[error("'{table}' is not a readable Delta table")]
    NotADeltaTable {
        /// The table location as given.
        table: String,
        /// What deltalake reported.
        #[source]
        source: Box<DeltaTableError>,
    },
    /// The location names no Delta table: an unsupported URI scheme, a path that does not
    /// exist, a directory without a `_delta_log`, or a log without a commit or checkpoint.
    #[error("'{table}' {message}")]
    NoTable {
        /// The location as given.
        table: String,
        /// Why it is not a table, in the user's words.
        message: String,
    },
    /// A file of the Delta log is damaged: a commit that is a directory or not JSON, a
    /// `metaData` whose `schemaString` does not parse, a checkpoint that is not Parquet.
    /// Nothing was written.
    #[error("table '{table}': log file '{file}' {message}")]
    DamagedLog {
        /// The table location.
        table: String,
        /// The log file, relative to the table root (`_delta_log/...`).
        file: String,
        /// What is wrong with it.
        message: String,
    },
    /// The table uses protocol features this tool cannot rewrite safely. Nothing was written.
    #[error(
        "table '{table}' uses table features that delta-layout does not support: {}; \
         the table was not changed",
        features.join(", ")
    )]
    UnsupportedFeatures {
        /// The table location.
        table: String,
        /// Each unsupported feature (reader or writer), as named in the protocol.
        features: Vec<String>,
    },
    /// The table breaks a rule that its own table features ask every writer to keep (an
    /// active IcebergCompat feature without column mapping, a nested id missing, ...), so no
    /// file written into it could keep the rule. Nothing was written.
    #[error(
        "table '{table}' breaks a rule of its table features that every writer must keep: {rule}; \
         the table was not changed"
    )]
    BrokenFeatureRule {
        /// The table location.
        table: String,
        /// The rule and what breaks it, naming the feature, property or column.
        rule: String,
    },
    /// A UniForm table's Iceberg metadata (`metadata/*.metadata.json`) cannot tell which
    /// Delta version Iceberg readers read: not readable as JSON, no `delta-version`, a version
    /// the table does not have, or one whose log is gone. `vacuum` deletes nothing then.
    #[error(
        "table '{table}': Iceberg metadata file '{file}' {message}; vacuum deletes nothing \
         while it is so (the next Delta writer with UniForm on writes a newer one; a file that \
         is not Delta's converter's does not belong in metadata/)"
    )]
    IcebergMetadata {
        /// The table location.
        table: String,
        /// The metadata file, relative to the table root (`metadata/...`).
        file: String,
        /// What is wrong with it.
        message: String,
    },
    /// Another writer committed a change that conflicts with this run (for example it removed
    /// one of the files this run rewrote). The files this run wrote were deleted; the table is
    /// as that writer left it.
    #[error(
        "concurrent modification: version {winning_version} of '{table}' {reason}; \
         this run read version {read_version}, committed nothing and deleted the files it wrote"
    )]
    ConcurrentModification {
        /// The table location.
        table: String,
        /// The version this run read.
        read_version: u64,
        /// The version that conflicts.
        winning_version: u64,
        /// What the winning commit did, e.g. "removed file 'part-0001.parquet'".
        reason: String,
    },
    /// The run's layout makes a run of the workload dearer than the table as it is (bytes
    /// scanned plus 4 MiB per file, [`crate::gain::Scan::cost`]); nothing was committed and
    /// the files written were deleted.
    /// `--allow-regression` commits it anyway.
    #[error(
        "layout regression on '{table}': per run of {measure}, the rewritten layout would scan {after_files:.1} files and {after_bytes} bytes where the table as it is scans {before_files:.1} files and {before_bytes} bytes, a dearer scan at 4 MiB a file; nothing was committed and the files written were deleted ({allow_with} commits it anyway)"
    )]
    LayoutRegression {
        /// The table location.
        table: String,
        /// What it was measured on ([`crate::gain::MeasureSource::words`]).
        measure: String,
        /// Files scanned per run before.
        before_files: f64,
        /// Bytes scanned per run before (rounded).
        before_bytes: u64,
        /// Files scanned per run after.
        after_files: f64,
        /// Bytes scanned per run after (rounded).
        after_bytes: u64,
        /// The setting that accepts a regression ([`Setting::AllowRegression`]).
        allow_with: Setting,
    },
    /// A work order's commit step stopped on another writer's commit: a metadata or
    /// protocol change after the plan, or a table too busy to win a version. The reason says
    /// which bins were committed before (they stay) and what happened to the others.
    #[error("concurrent modification: version {version} of '{table}' {reason}")]
    CommitStopped {
        /// The table, for display.
        table: String,
        /// The other writer's version.
        version: u64,
        /// What it did, and what this step committed and deleted.
        reason: String,
    },
    /// The put of the commit failed without a clear answer (a lost response, a timeout) and
    /// the entry could not be read back: the commit may yet land. The files this run wrote are
    /// kept, so that a commit that landed stays readable; if `version` is not this run's
    /// commit (its `commitInfo` lacks this run's `delta-layout.runId`), `vacuum` removes them.
    #[error(
        "the commit of version {version} of '{table}' failed without a clear answer from the store, so it may or may not have landed; the files this run wrote were kept (if version {version} is not this run's commit, vacuum removes them)"
    )]
    CommitOutcomeUnknown {
        /// The table location.
        table: String,
        /// The version the commit was put at.
        version: u64,
        /// The store's error.
        #[source]
        source: Box<DeltaTableError>,
    },
    /// A data file of the table is missing, unreadable, or does not match its log entry.
    #[error("data file '{path}' {message}")]
    DataFile {
        /// The file's path relative to the table root (as in the `add` action, decoded).
        path: String,
        /// What is wrong with it.
        message: String,
        /// The underlying failure, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    // ---- I/O and formats ---------------------------------------------------------------
    /// The deltalake crate failed while `context` was being done.
    #[error("delta log operation failed while {context}")]
    Delta {
        /// What delta-layout was doing, e.g. "committing version 12".
        context: String,
        /// The deltalake error.
        #[source]
        source: Box<DeltaTableError>,
    },
    /// The table's location refused a small probe object put under its root before any
    /// work (permissions, a read-only mount, a bucket policy): nothing was written. The
    /// operator must grant write access (or run with `--dry-run`).
    #[error(
        "cannot write to table '{table}' (checked before any work: nothing was written); grant write access to its location, or use --dry-run"
    )]
    NotWritable {
        /// The table location.
        table: String,
        /// The object store's refusal.
        #[source]
        source: Box<ObjectStoreError>,
    },
    /// The object store failed on `path`.
    #[error("storage operation failed on '{path}'")]
    ObjectStore {
        /// The object path.
        path: String,
        /// The object store error.
        #[source]
        source: Box<ObjectStoreError>,
    },
    /// Writing or reading Parquet failed on `path`.
    #[error("parquet error on '{path}'")]
    Parquet {
        /// The data file.
        path: String,
        /// The parquet error.
        #[source]
        source: ParquetError,
    },
    /// An Arrow computation failed while `context` was being done.
    #[error("arrow error while {context}")]
    Arrow {
        /// What was being done.
        context: String,
        /// The arrow error.
        #[source]
        source: ArrowError,
    },
    /// A local file or directory could not be created, read or written: a spill file, a
    /// scratch table. Usually a full disk or missing permissions on `path`.
    #[error("{context} '{}'", path.display())]
    Io {
        /// What was being done: "writing the spill file".
        context: String,
        /// The file or directory.
        path: std::path::PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// JSON (stats, log entries) could not be read or written.
    #[error("json error while {context}")]
    Json {
        /// What was being done.
        context: String,
        /// The serde_json error.
        #[source]
        source: serde_json::Error,
    },

    /// The run was cancelled (Ctrl-C, SIGTERM, or the caller's cancel flag) before its commit.
    /// Nothing was committed and the files it wrote were deleted.
    #[error(
        "cancelled before the commit: nothing was committed and the files written were deleted"
    )]
    Cancelled,

    // ---- bugs ----------------------------------------------------------------------------
    /// An invariant of delta-layout itself was broken. This is likely caused by a bug:
    /// please report it with the command line that produced it.
    #[error("internal error (likely a bug in delta-layout): {0}")]
    Internal(String),
    /// A task of the run (on the tokio runtime's blocking pool) panicked or was cancelled:
    /// likely a bug, as for [`Error::Internal`].
    #[error("internal error (likely a bug in delta-layout): the {task} task failed")]
    TaskFailed {
        /// What the task did: "rewrite", "verify".
        task: &'static str,
        /// The runtime's error, with the panic message.
        #[source]
        source: tokio::task::JoinError,
    },
}

/// A setting the caller gave, as errors name it: in the library's own words, never those of
/// one front end. The CLI words each as its flag (`TargetFileSize` is `--target-size`);
/// another front end (Python keyword arguments) words them its way.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Setting {
    /// The target file size ([`crate::plan::PlanOptions::with_target_file_bytes`]).
    TargetFileSize,
    /// The size under which files are candidates.
    MinFileSize,
    /// The deleted-rows ratio above which a file is rewritten.
    MaxDeletedRatio,
    /// The predicate selecting what to rewrite (`--where`): partitions, or files by their
    /// stats.
    PartitionPredicate,
    /// The clustering columns of a curve, by the curve's name (`zorder`, `hilbert`:
    /// [`crate::curve::Curve::name`]).
    CurveColumns(&'static str),
    /// The cube size of clustering.
    CubeSize,
    /// Reclustering every file (with a curve), or packing files of clustering runs (without).
    Full,
    /// The memory a clustering run may buffer.
    MemoryLimit,
    /// The local directory of spill files.
    SpillDirectory,
    /// The rewrite's worker threads.
    Threads,
    /// Files a compaction worker fetches at once.
    ReadConcurrency,
    /// The Parquet compression of written files.
    Compression,
    /// Reading written files back to compare their rows.
    Verify,
    /// The input bytes above which a clustering scope is split over several bins.
    TaskSize,
    /// Where a work-order document is written.
    Output,
    /// The table version to read.
    Version,
    /// The columns a report covers.
    ReportColumns,
    /// The columns whose combinations must be unique (`verify`).
    UniqueColumns,
    /// The directory of `sweep`'s scratch tables.
    Scratch,
    /// The file of predicates to measure.
    PredicateFile,
    /// The workload file: weighted predicates a layout is chosen, built or scored for.
    Workload,
    /// The share of a workload's queries held out to score a recommendation.
    Holdout,
    /// What a query pays to open one file, in bytes read (`recommend`'s cost model).
    FileCost,
    /// The share of the cost per run a recommended rewrite, or a bin of a run, must save
    /// (`recommend`, [`crate::prepare::Budget::min_gain`]).
    MinGain,
    /// The input bytes a run may rewrite ([`crate::prepare::Budget::max_rewrite_bytes`]).
    MaxRewriteBytes,
    /// The wall time after which a run starts no new bin
    /// ([`crate::prepare::Budget::max_duration`]).
    MaxDuration,
    /// Committing a layout that scans more than the table as it is.
    AllowRegression,
    /// The layouts `sweep` tries.
    Layouts,
    /// The share of rows `sweep` builds from.
    Sample,
    /// The target sizes `sweep` tries.
    TargetSizes,
    /// The share of rows a generated range covers.
    Selectivity,
    /// Generated predicates per column.
    Queries,
    /// The retention of `vacuum`, hours.
    Retain,
    /// Accepting a retention below the table's.
    RiskBreakingReaders,
    /// A table property, by its key (`delta.targetFileSize`).
    TableProperty(String),
    /// A storage option or environment variable, by its key (`AWS_S3_LOCKING_PROVIDER`).
    StorageOption(String),
    /// The storage options as a whole.
    StorageOptions,
}

impl std::fmt::Display for Setting {
    /// The library's words: `the target file size`, `table property delta.targetFileSize`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            Setting::TargetFileSize => "the target file size",
            Setting::MinFileSize => "the minimum file size",
            Setting::MaxDeletedRatio => "the maximum deleted ratio",
            Setting::PartitionPredicate => "the predicate selecting what to rewrite",
            Setting::CurveColumns(curve) => return write!(f, "the {curve} columns"),
            Setting::CubeSize => "the cube size",
            Setting::Full => "the full rewrite",
            Setting::MemoryLimit => "the memory limit",
            Setting::SpillDirectory => "the spill directory",
            Setting::Threads => "the thread count",
            Setting::ReadConcurrency => "the read concurrency",
            Setting::Compression => "the compression",
            Setting::Verify => "verification",
            Setting::TaskSize => "the task size",
            Setting::Output => "the output",
            Setting::Version => "the version",
            Setting::ReportColumns => "the report columns",
            Setting::UniqueColumns => "the unique columns",
            Setting::Scratch => "the scratch directory",
            Setting::PredicateFile => "the predicate file",
            Setting::Workload => "the workload",
            Setting::Holdout => "the holdout share",
            Setting::FileCost => "the cost of opening a file",
            Setting::MinGain => "the least gain worth a rewrite",
            Setting::MaxRewriteBytes => "the rewrite budget",
            Setting::MaxDuration => "the time budget",
            Setting::AllowRegression => "the regression allowance",
            Setting::Layouts => "the layouts",
            Setting::Sample => "the sample",
            Setting::TargetSizes => "the target sizes",
            Setting::Selectivity => "the selectivity",
            Setting::Queries => "the query count",
            Setting::Retain => "the retention",
            Setting::RiskBreakingReaders => "accepting a short retention",
            Setting::TableProperty(key) => return write!(f, "table property {key}"),
            Setting::StorageOption(key) => return f.write_str(key),
            Setting::StorageOptions => "the storage options",
        };
        f.write_str(text)
    }
}

impl Error {
    /// Builds an [`Error::InvalidOption`] for `option`.
    pub fn invalid_option(option: Setting, message: impl Into<String>) -> Self {
        Error::InvalidOption {
            option,
            message: message.into(),
        }
    }

    /// Builds an [`Error::DataFile`] without a source.
    pub fn data_file(path: impl Into<String>, message: impl Into<String>) -> Self {
        Error::DataFile {
            path: path.into(),
            message: message.into(),
            source: None,
        }
    }

    /// Builds an [`Error::Delta`] for `context`.
    pub fn delta(context: impl Into<String>, source: DeltaTableError) -> Self {
        Error::Delta {
            context: context.into(),
            source: Box::new(source),
        }
    }

    /// Builds an [`Error::Arrow`] for `context`.
    pub fn arrow(context: impl Into<String>, source: ArrowError) -> Self {
        Error::Arrow {
            context: context.into(),
            source,
        }
    }
}
