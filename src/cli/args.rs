//! Command-line arguments (clap derive). Parsing only: no I/O here.

use clap::{Args, Parser, Subcommand};

/// Optimize the physical layout of Delta Lake tables: bin-packing compaction and Z-order or
/// Hilbert clustering.
#[derive(Debug, Parser)]
#[command(name = "delta-layout", version, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
    /// A setting of the table's object store, as delta-rs' `storage_options` takes it
    /// (repeatable): `AWS_ENDPOINT_URL=http://127.0.0.1:9000`, `AWS_REGION=eu-west-1`,
    /// `AZURE_STORAGE_ACCOUNT_NAME=...`, `GOOGLE_SERVICE_ACCOUNT=key.json`. Keys not given are
    /// read from the environment under the same names. Values are never printed.
    #[arg(long = "storage-option", value_name = "KEY=VALUE", global = true)]
    pub storage_options: Vec<String>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Report files, bytes, rows, file sizes, stats coverage and table features.
    Inspect(InspectArgs),
    /// Compact small files (and files with many deleted rows) into files of the target size.
    Optimize(OptimizeArgs),
    /// Plan an optimize as a work order (JSON) for `execute` and `commit`, writing nothing.
    ///
    /// The order holds the table's description at the read version, the settings, the bins
    /// and their input files' add actions, and no secret; its fingerprint is checked when read.
    Plan(PlanArgs),
    /// Execute bins of a work order: read their input files, write their output files, and
    /// print a result document. Reads no log and commits nothing.
    Execute(ExecuteArgs),
    /// Commit the results of a work order's bins, in batches, with optimize's conflict rules;
    /// a rerun commits only what is left.
    Commit(CommitArgs),
    /// Report min/max overlap and the estimated data skipping per column, from the log alone.
    Report(ReportArgs),
    /// Prove two versions hold the same rows (exit code 0), or show they differ (1).
    Verify(VerifyArgs),
    /// Try layouts and target file sizes on scratch copies and compare them, table untouched.
    Sweep(SweepArgs),
    /// Delete files that no version inside the retention needs (Delta's VACUUM).
    Vacuum(VacuumArgs),
    /// Recommend a layout (columns, curve or cut tree, file size) for a workload of queries,
    /// with the files and bytes each candidate would scan; the table is not written.
    ///
    /// The workload is split into training and test queries (--holdout); candidate columns
    /// are ranked by how often the training queries filter them and how many rows their
    /// filters rule out; compaction, a linear sort, Z-order and Hilbert curves on the best
    /// columns, and a cut tree fitted to the training queries are estimated at each target
    /// size from one read of a row sample (as sweep --estimate), ranked by bytes scanned
    /// plus --file-cost per file opened, and scored on the test queries too. Prints the
    /// ranking and the optimize command line of the pick.
    Recommend(RecommendArgs),
    /// Workload files: `workload extract` turns a SQL query history into one.
    #[command(subcommand)]
    Workload(WorkloadCommand),
    /// List the OPTIMIZE runs of a table, newest first, from its commits' commitInfo.
    ///
    /// Like DESCRIBE HISTORY, for OPTIMIZE only, from any writer (Spark, Databricks,
    /// delta-rs, delta-layout). Per run: version, timestamp (ISO 8601, UTC), operation
    /// ("(auto)" for an auto compaction), curve (the commit's curve parameter, else zorder
    /// when zOrderBy is set, else hilbert for liquid clustering's clusterBy), clustering
    /// columns, files and bytes removed and added (operationMetrics; "-" when the writer
    /// recorded none) and engineInfo. Only the commits still in the log are read.
    History(HistoryArgs),
}

/// `recommend` arguments.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct RecommendArgs {
    /// Table location: a local path or a URL.
    #[arg(value_name = "TABLE")]
    pub table: String,
    /// The workload file: one predicate per line in the language of --where, over any
    /// column, with `WEIGHT<TAB>` before it for a query that ran WEIGHT times; # comments.
    /// `-` reads standard input.
    #[arg(long, value_name = "FILE", required = true)]
    pub workload: std::path::PathBuf,
    /// Target file sizes to try (comma-separated; units: 64MiB, 1GB, or bytes).
    #[arg(
        long,
        value_name = "SIZES",
        value_delimiter = ',',
        default_value = "64MiB,128MiB,256MiB,512MiB,1GiB"
    )]
    pub target_sizes: Vec<String>,
    /// Share of the queries held out to score the pick, in [0, 1) (0: choose and score on
    /// every query).
    #[arg(long, value_name = "F", default_value_t = crate::workload::DEFAULT_HOLDOUT)]
    pub holdout: f64,
    /// Seed of the split into training and test queries and of the row sample.
    #[arg(long, value_name = "NUM", default_value_t = crate::workload::DEFAULT_SPLIT_SEED)]
    pub seed: u64,
    /// Estimate from a seeded sample of this share of the rows, in (0, 1] [default: every
    /// row up to 2,000,000, then a sample of about that many].
    #[arg(long, value_name = "F")]
    pub sample: Option<f64>,
    /// Candidate columns the curves combine, 1 to 6.
    #[arg(long, value_name = "NUM", default_value_t = crate::recommend::DEFAULT_MAX_COLUMNS)]
    pub max_columns: usize,
    /// What a query pays to open one file, in bytes read (units as sizes): the ranking's
    /// cost is bytes scanned plus this per file scanned.
    #[arg(long, value_name = "SIZE", default_value = "4MiB")]
    pub file_cost: String,
    /// Least share of the cost per training run the pick must save over the table as it
    /// is, in [0, 1); below it the answer is to keep the table as it is.
    #[arg(long, value_name = "F", default_value_t = crate::recommend::DEFAULT_MIN_GAIN)]
    pub min_gain: f64,
    /// List every candidate (the text lists the best few and the pick; --json has all).
    #[arg(long)]
    pub all: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `workload` subcommands.
#[derive(Debug, Subcommand)]
pub enum WorkloadCommand {
    /// Turn a file of SQL statements (a query history export: Spark SQL, Databricks SQL,
    /// Trino) into a workload file: the filters each statement applies to one table.
    ///
    /// For every scan of the table (FROM or JOIN, in subqueries, CTEs and set operations
    /// too), the conjuncts of its WHERE and ON clauses that refer to the table's columns
    /// only and can skip files (comparisons with literals, BETWEEN, IN, IS NULL, AND, OR,
    /// NOT; literal date arithmetic is folded) make one predicate; identical predicates are
    /// counted together. Statements that cannot be parsed, do not read the table, or
    /// filter nothing of it are listed on standard error with the reason.
    Extract(ExtractArgs),
}

/// `workload extract` arguments.
#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// The SQL file: statements separated by `;`.
    #[arg(value_name = "SQLFILE")]
    pub sql: std::path::PathBuf,
    /// The table's name as the queries write it (`lineitem`, or `db.schema.lineitem` to
    /// match only names qualified that way).
    #[arg(long, value_name = "NAME")]
    pub table: String,
    /// The Delta table (a path or URL) whose columns unqualified column names are matched
    /// against; without it only columns qualified with the table's name or alias count.
    #[arg(long, value_name = "TABLE")]
    pub schema: Option<String>,
    /// Write the workload file here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
}

/// `vacuum` arguments.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct VacuumArgs {
    /// Table location: a local path or a URL.
    #[arg(value_name = "TABLE")]
    pub table: String,
    /// Keep files removed within this time: hours as a plain number (168), or a duration
    /// with units (7d, 168h, 36h30m) [default: the table's delta.deletedFileRetentionDuration,
    /// else 7 days].
    #[arg(long, value_name = "DURATION")]
    pub retain: Option<String>,
    /// Accept a --retain below the table's retention: readers of older versions, and writers
    /// still working from them, may find their files gone.
    #[arg(long)]
    pub risk_breaking_readers: bool,
    /// List the files and bytes that would be deleted; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `history` arguments.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Table location: a local path or a URL.
    #[arg(value_name = "TABLE")]
    pub table: String,
    /// Show only the newest NUM runs (default: every run in the log).
    #[arg(long, value_name = "NUM", value_parser = positive_count)]
    pub limit: Option<std::num::NonZeroUsize>,
    /// Print one JSON object instead of text.
    ///
    /// `{table, runs: [...]}`; each run has version, timestamp (ISO 8601 UTC or null),
    /// timestamp_ms, operation, auto, clustering_columns, curve (or null), files_removed,
    /// files_added, bytes_removed, bytes_added (null when not recorded) and engine_info.
    #[arg(long)]
    pub json: bool,
}

/// `sweep` arguments.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct SweepArgs {
    /// Table location: a local path or a URL (the scratch copies are local: --scratch).
    #[arg(value_name = "TABLE")]
    pub table: String,
    /// Target file sizes to try (comma-separated; units: 4MiB, 1GB, or bytes).
    #[arg(long, value_name = "SIZES", value_delimiter = ',', required = true)]
    pub target_sizes: Vec<String>,
    /// A layout to try (repeatable): compact, zorder:COLS, hilbert:COLS or cuts (a cut tree
    /// fitted to --workload). Defaults to compact, plus zorder: and hilbert: on the table's
    /// clustering columns or --columns, plus cuts with --workload.
    #[arg(long = "layout", value_name = "SPEC")]
    pub layouts: Vec<String>,
    /// Columns the generated predicates filter (comma-separated); default: the curve
    /// columns of the layouts, else the table's clustering columns, else every column with stats.
    #[arg(long, value_name = "COLS")]
    pub columns: Option<Vec<String>>,
    /// Build from a seeded uniform sample of this share of the rows, in (0, 1]; target sizes
    /// are scaled by it. Default: every row up to 1 GiB of data, then a sample of about 1 GiB.
    #[arg(long, value_name = "F")]
    pub sample: Option<f64>,
    /// Directory for the scratch tables (default: the temporary directory); removed after.
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<std::path::PathBuf>,
    /// Estimate each combination's files and their stats from the table's rows (read once)
    /// instead of building it: the same plans, row orders and min/max stats, no Parquet
    /// written; sizes come from the measured output ratio.
    #[arg(long)]
    pub estimate: bool,
    /// Sweep only the files this predicate selects, as optimize --where selects them (by
    /// partition values, or by stats for other columns).
    #[arg(long = "where", value_name = "PREDICATE", help_heading = "Input")]
    pub predicate: Option<String>,
    /// With --where over data columns, also the files whose stats cannot tell.
    #[arg(long, requires = "predicate", help_heading = "Input")]
    pub where_include_unknown: bool,
    /// Predicates to measure instead of generated ones (one per line, as report --predicates).
    #[arg(long, value_name = "FILE")]
    pub predicates: Option<std::path::PathBuf>,
    /// A workload file (weighted predicates, as optimize --workload takes): the queries the
    /// `cuts` layout fits its tree to, and (without --predicates) the queries measured, each
    /// weighted by its runs. `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    pub workload: Option<std::path::PathBuf>,
    /// Generated predicates per column (as report).
    #[arg(long, value_name = "NUM", default_value_t = crate::report::DEFAULT_QUERIES)]
    pub queries: usize,
    /// Share of rows a generated range covers (as report).
    #[arg(long, value_name = "F", default_value_t = crate::report::DEFAULT_SELECTIVITY)]
    pub selectivity: f64,
    /// Seed of the predicates, the sample and the rows an update touches.
    #[arg(long, value_name = "NUM", default_value_t = crate::report::DEFAULT_SEED)]
    pub seed: u64,
    /// Memory a clustering build may buffer (as optimize) [default: a quarter of the memory
    /// available: the cgroup's limit where one is set, else physical memory].
    #[arg(long, value_name = "SIZE")]
    pub memory_limit: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML page with charts to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `verify` arguments.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct VerifyArgs {
    /// Table location: a local path or a URL.
    #[arg(value_name = "TABLE")]
    pub table: String,
    /// Version A (default: the latest).
    #[arg(long, value_name = "NUM")]
    pub version: Option<u64>,
    /// Version B, compared with A.
    #[arg(long, value_name = "NUM")]
    pub compare: u64,
    /// Also check that no two rows share a non-null combination of these top-level columns
    /// (comma-separated), in each version; duplicates make the exit code 1.
    #[arg(long, value_name = "COLS")]
    pub unique: Option<Vec<String>>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// No progress bar (it only shows when stderr is a terminal).
    #[arg(long, short)]
    pub quiet: bool,
}

/// `report` arguments.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct ReportArgs {
    /// Table location: a local path or a URL.
    #[arg(value_name = "TABLE")]
    pub table: String,
    /// Columns to report on (comma-separated, `a.b` for nested). Defaults to every partition
    /// column and every column with min/max stats; naming several also measures conjunctions
    /// of ranges on each pair.
    #[arg(long, value_name = "COLS", help_heading = "Input")]
    pub columns: Option<Vec<String>>,
    /// Report this table version instead of the latest.
    #[arg(long, value_name = "NUM", help_heading = "Input")]
    pub version: Option<u64>,
    /// Also report version NUM (usually an older one) beside it, on the same predicates,
    /// with the change.
    #[arg(long, value_name = "NUM", help_heading = "Input")]
    pub compare: Option<u64>,
    /// Generated predicates per column: half equality on a value drawn from the data, half
    /// ranges covering --selectivity of the rows.
    #[arg(long, value_name = "NUM", default_value_t = crate::report::DEFAULT_QUERIES, help_heading = "Workload")]
    pub queries: usize,
    /// Share of rows a generated range predicate covers, in (0, 1].
    #[arg(long, value_name = "F", default_value_t = crate::report::DEFAULT_SELECTIVITY, help_heading = "Workload")]
    pub selectivity: f64,
    /// A file of predicates, one per line (blank lines and lines starting with # are
    /// skipped), in the language of optimize --where over any column; each is reported.
    #[arg(long, value_name = "FILE", help_heading = "Workload")]
    pub predicates: Option<std::path::PathBuf>,
    /// Seed of the generated predicates.
    #[arg(long, value_name = "NUM", default_value_t = crate::report::DEFAULT_SEED, help_heading = "Workload")]
    pub seed: u64,
    /// Also score the layout on this workload file (weighted predicates, as optimize
    /// --workload takes): files, bytes and rows scanned per run, and per query; and the
    /// files laid out by cut trees. `-` reads standard input.
    #[arg(long, value_name = "FILE", help_heading = "Workload")]
    pub workload: Option<std::path::PathBuf>,
    /// Target file size to count files against (units: 64MiB, 1GB, or bytes) [default: the
    /// table property delta.targetFileSize, else autotuned from the table size].
    #[arg(long, value_name = "SIZE", help_heading = "Input")]
    pub target_size: Option<String>,
    /// Report on the files this predicate selects, as optimize --where selects them (by
    /// partition values, or by stats for other columns), in each version reported.
    #[arg(long = "where", value_name = "PREDICATE", help_heading = "Input")]
    pub predicate: Option<String>,
    /// With --where over data columns, also report the files whose stats cannot tell.
    #[arg(long, requires = "predicate", help_heading = "Input")]
    pub where_include_unknown: bool,
    /// Print one JSON object instead of text.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Also write a self-contained HTML page (inline SVG) to FILE.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<std::path::PathBuf>,
    /// Also say how much the layout has degraded since the last layout run of delta-layout:
    /// files and bytes scanned per run of the workload it recorded (else generated
    /// predicates on its clustering columns, else a full scan) on the version it committed
    /// and now, the files written since, and the bytes the same run would rewrite now to
    /// restore the layout.
    #[arg(long, conflicts_with_all = ["compare", "version", "predicate"], help_heading = "Output")]
    pub decay: bool,
}

/// `inspect` arguments.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct InspectArgs {
    /// Table location: a local path or a URL.
    #[arg(value_name = "TABLE")]
    pub table: String,
    /// Read this table version instead of the latest.
    #[arg(long, value_name = "NUM", help_heading = "Input")]
    pub version: Option<u64>,
    /// Target file size to count files against (units: 64MiB, 1GB, or bytes).
    ///
    /// Defaults to the table property delta.targetFileSize, else the size autotuned from the
    /// table size (256 MiB below 2.56 TB).
    #[arg(long, value_name = "SIZE", help_heading = "Planning")]
    pub target_size: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

/// `optimize` arguments.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct OptimizeArgs {
    /// Table location: a local path or a URL.
    #[arg(value_name = "TABLE")]
    pub table: String,
    /// What to rewrite and how (shared with `plan`).
    #[command(flatten)]
    pub planning: PlanningArgs,
    /// How this process runs the bins (shared with `execute`).
    #[command(flatten)]
    pub execution: ExecutionArgs,
    /// Print the plan and write nothing.
    #[arg(long, help_heading = "Planning")]
    pub dry_run: bool,
    /// Start no bin after this much wall time (90s, 45m, 1h30m, 2d): bins running then
    /// finish, and the run commits the bins done; the rest wait for the next run. Bins start
    /// by expected saving per byte, best first (see --max-rewrite-bytes).
    #[arg(long, value_name = "DURATION", help_heading = "Budget")]
    pub max_duration: Option<String>,
    /// Commit bins that make a run of the workload (--workload, or the one the last layout
    /// run recorded) dearer than the table as it is: bytes scanned plus 4 MiB per file
    /// opened, measured on the files written. Without it those bins are not committed (their
    /// files deleted) and the others are; when every bin would, the run commits nothing and
    /// exits with code 5 (--min-gain skips bins estimated to save nothing before writing).
    #[arg(long, help_heading = "Budget")]
    pub allow_regression: bool,
    /// Compact in one round, as work orders do: small files that bins left because their
    /// output came out smaller than estimated stay for the next run, and the run writes
    /// exactly what `--dry-run` shows.
    #[arg(long, help_heading = "Planning")]
    pub single_round: bool,
    /// Columns of the before/after skipping report printed at the end (comma-separated).
    /// Defaults to the clustering columns; without either, the report covers files and
    /// sizes only.
    #[arg(long, value_name = "COLS", help_heading = "Output")]
    pub columns: Option<Vec<String>>,
    /// Skip the before/after report at the end.
    #[arg(long, help_heading = "Output")]
    pub no_report: bool,
    /// Print one JSON object instead of text; its `plan` is the run's work order, the
    /// document `plan` writes (with a dry run, `execute` and `commit` take it as it is).
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// No progress bar.
    #[arg(long, short, help_heading = "Output")]
    pub quiet: bool,
}

/// The options that decide what a run rewrites and how its files are written: `optimize`
/// and `plan` take the same ones.
#[derive(Debug, Args)]
pub struct PlanningArgs {
    /// Target output file size (units: 64MiB, 1GB, or bytes).
    ///
    /// Defaults to the table property delta.targetFileSize, else the size autotuned from the
    /// table size as Databricks does: 256 MiB below 2.56 TB of data, rising linearly to
    /// 1 GiB at 10 TB.
    #[arg(long, value_name = "SIZE", help_heading = "Planning")]
    pub target_size: Option<String>,
    /// Files smaller than this are compacted (default: 3/4 of the target size).
    #[arg(long, value_name = "SIZE", help_heading = "Planning")]
    pub min_file_size: Option<String>,
    /// Files whose deletion vector deletes more than this share of rows are rewritten.
    ///
    /// A number between 0 and 1. Defaults to 0.05.
    #[arg(long, value_name = "RATIO", help_heading = "Planning")]
    pub max_deleted_ratio: Option<f64>,
    /// Only rewrite what matches this predicate: over partition columns only, the matching
    /// partitions; over any column, the files whose stats say they may hold a matching row
    /// (files without stats for its columns are left out unless --where-include-unknown).
    ///
    /// Supports =, !=, <, <=, >, >=, IN (..), BETWEEN, IS [NOT] NULL, AND, OR, NOT and
    /// parentheses, e.g. "date >= '2024-01-01' AND region IN ('eu', 'us')".
    #[arg(long = "where", value_name = "PREDICATE", help_heading = "Planning")]
    pub predicate: Option<String>,
    /// With a --where predicate over data columns, also rewrite the files whose stats cannot
    /// tell (no stats, or no min/max for one of its columns).
    #[arg(long, requires = "predicate", help_heading = "Planning")]
    pub where_include_unknown: bool,
    /// Cluster along a Z-order curve over 1 to 6 columns (comma-separated, `a.b` for nested).
    ///
    /// Each selected partition not already clustered this way is rewritten whole: rows are
    /// sorted along the curve over rank buckets of the columns and cut into files of the
    /// target size, so each file covers a compact box of the columns. Output files are tagged
    /// ZCUBE_ID, ZCUBE_ZORDER_BY, ZCUBE_ZORDER_CURVE; a re-run on an unchanged table does
    /// nothing. A partition larger than --memory-limit is clustered through spill files.
    #[arg(
        long,
        value_name = "COLS",
        conflicts_with = "hilbert",
        help_heading = "Curve"
    )]
    pub zorder: Option<Vec<String>>,
    /// Cluster along a Hilbert curve over 1 to 6 columns (as --zorder; better locality).
    #[arg(long, value_name = "COLS", help_heading = "Curve")]
    pub hilbert: Option<Vec<String>>,
    /// Lay rows out by a cut tree fitted to the queries of this workload file (one
    /// predicate per line, `WEIGHT<TAB>` before it for queries that ran more than once; `-`
    /// reads standard input).
    ///
    /// The tree is grown on a sample of each partition: each node cuts its rows by the
    /// workload predicate that lets the most weighted query rows be skipped, down to leaves
    /// of about one target file; inside a leaf rows follow a Hilbert curve over the most
    /// used columns. The tree is recorded in the commit and the files' tags: a re-run on an
    /// unchanged table does nothing, and new rows are routed through the same tree; another
    /// workload or --full builds a new one.
    ///
    /// With --zorder or --hilbert the rows follow the curve, and the workload measures the
    /// run instead: its bins' expected savings, the figures recorded in the commit, and the
    /// regression guard (see --allow-regression). An optimize commit records the workload,
    /// and later runs without --workload are measured on it (work orders record nothing).
    #[arg(long, value_name = "FILE", help_heading = "Curve")]
    pub workload: Option<std::path::PathBuf>,
    /// Rewrite about this many input bytes at most (units as sizes): bins are taken by their
    /// expected saving per byte rewritten, best first, until the budget is spent (the last
    /// bin taken may pass it); the others wait for the next run.
    ///
    /// Savings are per run of the workload (--workload, else the one the last layout run
    /// recorded), else of generated predicates on the clustering columns, else of a full
    /// scan; a query pays its bytes plus 4 MiB per file it opens.
    #[arg(long, value_name = "SIZE", help_heading = "Budget")]
    pub max_rewrite_bytes: Option<String>,
    /// Run no bin that saves less than this share of its input files' scan cost, and nothing
    /// when the bins together save less than this share of the table's (a number between 0
    /// and 1, e.g. 0.05). A run with nothing worth doing commits nothing and exits with code
    /// 4.
    #[arg(long, value_name = "RATIO", help_heading = "Budget")]
    pub min_gain: Option<f64>,
    /// Cubes of clustered files this large are sealed: re-runs never merge them (units as
    /// sizes).
    ///
    /// A re-run clusters the new files (appended, or past --max-deleted-ratio) into a new
    /// cube and merges the existing cubes size-tiered, smallest first: a cube of at most 5/4
    /// the rows merging before it is merged, a larger one kept, so a small append costs about
    /// its own size. Also applies to the clustering a table declares. Defaults to 100GiB, as
    /// Delta does.
    #[arg(long, value_name = "SIZE", help_heading = "Curve")]
    pub cube_size: Option<String>,
    /// With a curve (or on a table that declares clustering columns): recluster every file of
    /// the selected partitions, sealed cubes included.
    /// Without one: let compaction pack small files of clustering runs (ZCUBE_ID tags)
    /// together with other files, which undoes their clustering (left alone by default).
    #[arg(long, help_heading = "Curve")]
    pub full: bool,
    /// Memory a clustering run may buffer (units: 512MiB, 4GB, or bytes).
    ///
    /// A partition whose rows do not fit is clustered out of core through spill files in
    /// --temp-dir; they are removed on success and on failure. Defaults to a quarter of the
    /// memory available: the cgroup's limit (v1 or v2) where one is set, else physical memory.
    #[arg(long, value_name = "SIZE", help_heading = "Curve")]
    pub memory_limit: Option<String>,
    /// Parquet codec of the written files: snappy, zstd, zstd:LEVEL (1 to 22), lz4, gzip,
    /// gzip:LEVEL (0 to 9) or none.
    #[arg(
        long,
        value_name = "CODEC",
        default_value = "zstd:3",
        help_heading = "Execution"
    )]
    pub compression: String,
    /// Before committing, read every written file back and check it holds exactly the rows
    /// read (fingerprints per partition); on any difference commit nothing, delete the
    /// written files and exit with code 2.
    #[arg(long, help_heading = "Execution")]
    pub verify: bool,
}

/// The options of the process that runs bins: `optimize` and `execute` take the same ones.
#[derive(Debug, Args)]
pub struct ExecutionArgs {
    /// Local directory for the spill files of out-of-core clustering (default: the system
    /// temporary directory, TMPDIR). Spill files stay on local disk also for tables in
    /// object stores.
    #[arg(long, value_name = "DIR", help_heading = "Curve")]
    pub temp_dir: Option<std::path::PathBuf>,
    /// Worker threads for the rewrite (0 = one per core).
    #[arg(
        long,
        value_name = "NUM",
        default_value_t = 0,
        value_parser = threads,
        help_heading = "Execution"
    )]
    pub threads: usize,
    /// Files a compaction worker fetches at once (a bounded prefetch: at most 256 MiB at once, or
    /// one larger file): object stores answer each GET after tens of milliseconds.
    #[arg(
        long,
        value_name = "NUM",
        default_value_t = crate::table::read::DEFAULT_READ_CONCURRENCY,
        value_parser = read_concurrency,
        help_heading = "Execution"
    )]
    pub read_concurrency: usize,
}

/// `plan` arguments.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct PlanArgs {
    /// Table location: a local path or a URL.
    #[arg(value_name = "TABLE")]
    pub table: String,
    /// What to rewrite and how, as `optimize` takes it.
    #[command(flatten)]
    pub planning: PlanningArgs,
    /// Split a clustering scope (a partition's files clustered together) whose input is
    /// larger than this into key ranges over several bins, about this much input each
    /// (units as sizes). Each bin of the scope reads all of its files and writes only its
    /// ranges, so reads grow with the number of bins; the key ranges come from a sample of
    /// the scope's files taken now. Default: never split.
    #[arg(long, value_name = "SIZE", help_heading = "Curve")]
    pub task_size: Option<String>,
    /// Write the work order (JSON) to this local file, or object URI (s3://, az://, gs://,
    /// ... with the table's storage options), instead of standard output; a summary goes to
    /// standard error.
    #[arg(long, value_name = "FILE|URI", help_heading = "Output")]
    pub out: Option<String>,
    /// Input files per document of the work order: an order with more input files is written
    /// as a head at `--out` and shard documents beside it (`PLAN.files-00000.json`, ...), so
    /// that a worker reads only its bins' files. 0: always one document, as on standard
    /// output (without `--out`).
    #[arg(long, value_name = "FILES", help_heading = "Output", default_value_t = crate::workorder::shard::DEFAULT_FILES_PER_SHARD)]
    pub shard_files: usize,
    /// No summary on standard error (with `--out`); as `optimize` and `execute` take it.
    #[arg(long, short, help_heading = "Output")]
    pub quiet: bool,
}

/// `execute` arguments.
#[derive(Debug, Args)]
pub struct ExecuteArgs {
    /// The work order written by `plan` (a local file or an object URI).
    #[arg(value_name = "PLAN")]
    pub plan: String,
    /// A bin to execute (repeatable, or comma-separated ids).
    #[arg(
        long = "bin",
        value_name = "ID",
        value_delimiter = ',',
        required_unless_present = "all_bins"
    )]
    pub bins: Vec<usize>,
    /// Execute every bin of the plan in this process.
    #[arg(long, conflicts_with = "bins")]
    pub all_bins: bool,
    /// How this process runs the bins, as `optimize` takes it.
    #[command(flatten)]
    pub execution: ExecutionArgs,
    /// Write the result document (JSON) to this local file or object URI instead of
    /// standard output.
    #[arg(long, value_name = "FILE|URI", help_heading = "Output")]
    pub out: Option<String>,
    /// No progress bar.
    #[arg(long, short, help_heading = "Output")]
    pub quiet: bool,
}

/// `commit` arguments.
#[derive(Debug, Args)]
pub struct CommitArgs {
    /// The work order written by `plan` (a local file or an object URI).
    #[arg(value_name = "PLAN")]
    pub plan: String,
    /// Result documents written by `execute` (local files or object URIs); bins without a
    /// result are left uncommitted.
    #[arg(value_name = "RESULT")]
    pub results: Vec<String>,
    /// Bins per commit (0: every bin in one commit). Each commit carries a txn action
    /// (appId = the run id, version = the batch number); a rerun skips bins already
    /// committed.
    #[arg(long, value_name = "BINS", default_value_t = crate::workorder::DEFAULT_BATCH_BINS)]
    pub batch_size: usize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--threads`: a whole number from 0 (one per core) to the library's maximum.
fn threads(text: &str) -> Result<usize, String> {
    let max = crate::rewrite::MAX_THREADS;
    text.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| *n <= max)
        .ok_or_else(|| format!("must be a whole number from 0 (one thread per core) to {max}"))
}

/// A count of at least 1 (`history --limit`).
fn positive_count(text: &str) -> Result<std::num::NonZeroUsize, String> {
    text.trim()
        .parse::<std::num::NonZeroUsize>()
        .map_err(|_| "must be a whole number of at least 1".to_string())
}

/// `--read-concurrency`: a whole number from 1 to 256.
fn read_concurrency(text: &str) -> Result<usize, String> {
    text.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=256).contains(n))
        .ok_or_else(|| "must be a whole number from 1 to 256".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_optimize_flags() {
        let cli = Cli::try_parse_from([
            "delta-layout",
            "optimize",
            "t",
            "--target-size",
            "64MiB",
            "--where",
            "p = 1",
            "--threads",
            "2",
            "--dry-run",
        ])
        .unwrap();
        let Command::Optimize(args) = cli.command else {
            panic!("optimize expected")
        };
        assert_eq!(args.planning.target_size.as_deref(), Some("64MiB"));
        assert_eq!(args.planning.predicate.as_deref(), Some("p = 1"));
        assert_eq!(args.execution.threads, 2);
        assert!(args.dry_run);
        assert!(Cli::try_parse_from(["delta-layout", "optimize", "t", "--bogus"]).is_err());
        assert!(Cli::try_parse_from(["delta-layout", "optimize", "t", "--threads", "x"]).is_err());
        // Negative numbers reach the validators, which say what range is allowed.
        let err = Cli::try_parse_from(["delta-layout", "optimize", "t", "--threads", "-1"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("from 0 (one thread per core) to 1024"),
            "{err}"
        );
        let cli =
            Cli::try_parse_from(["delta-layout", "optimize", "t", "--target-size", "-1"]).unwrap();
        let Command::Optimize(args) = cli.command else {
            panic!("optimize expected")
        };
        assert_eq!(args.planning.target_size.as_deref(), Some("-1"));
        // Column lists are split later, by the column-name rules (commas in back quotes).
        let cli =
            Cli::try_parse_from(["delta-layout", "optimize", "t", "--zorder", "`a,b`,c"]).unwrap();
        let Command::Optimize(args) = cli.command else {
            panic!("optimize expected")
        };
        assert_eq!(args.planning.zorder, Some(vec!["`a,b`,c".to_string()]));
    }
}
