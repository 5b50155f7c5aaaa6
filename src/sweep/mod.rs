//! `sweep`: file-size and layout tuning experiments that never touch the table.
//!
//! For each layout (`compact`, `zorder:COLS`, `hilbert:COLS`) and each target file size, the
//! table's rows (or a seeded uniform sample of them) are laid out in a scratch table, and the
//! layout is measured: files and their sizes, the estimated skipping of one shared workload
//! (the report's generated predicates, drawn from the first combination built, or the user's
//! own), and the estimated write amplification of a MERGE or UPDATE: the bytes of the files
//! holding 0.1% and 1% of the rows chosen at random (by row hash and seed, so the same rows in
//! every layout).
//!
//! **Scratch tables.** A scratch table has a log of its own (the source's schema,
//! partitioning and properties in one commit whose `add` actions are the source's) and
//! symbolic links to the source's data and deletion vector files (for a table in an object
//! store: `add` paths and deletion vector paths that are absolute URIs of the source's
//! files, read from the source's store), so nothing is copied and nothing of the source is
//! ever written: new files go into the scratch directory's own
//! (real) partition directories. Each combination is built with `optimize` (every file
//! rewritten, at the target size; curves with `full`), measured, then removed. The scratch
//! root (a temporary directory unless `--scratch`) is removed at the end, on failure, and on
//! Ctrl-C. Scratch tables leave out row tracking and clustering metadata: they only serve to
//! measure layouts.
//!
//! **Estimates** (`--estimate`). Instead of building each combination, its files and their
//! stats are computed from the table's rows, read once (the [`crate::simulate::estimate`] module): the same
//! plans, orders and stats as a build, without writing Parquet. Sizes are estimated from the
//! plan's output ratio, so `bytes` and the rewrite estimates are approximate; skipping is
//! that of the estimated files' exact min/max.
//!
//! **Sampling.** With a sample of fraction f, each row is kept with probability f. Files are
//! planned (bin-packed, or cut into curve ranges) on the full table's sizes with the target
//! T, and each output file holds the sample of what a full-size file would: about T x f
//! bytes. So file counts match what the full table would get; sizes and bytes are the
//! sample's.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::optimize::{OptimizeOptions, optimize};
use crate::predicate::Predicate;
use crate::progress::{Phase, Progress, Scope};
use crate::report::score::{ScoredFiles, per_run, percentile, scan};
use crate::report::{Analysis, ReportOptions};
use crate::simulate::{
    EstimateJob, Layout, UPDATE_FRACTIONS, as_layout_error, estimate_layouts, layout_plan, updated,
};
use crate::table::TableView;

/// Without `--sample`, tables up to this many bytes are swept whole; larger ones are
/// sampled down to about this size.
pub const DEFAULT_FULL_SWEEP_BYTES: u64 = 1 << 30;

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Target file sizes to try, bytes.
    pub target_sizes: Vec<u64>,
    /// Layouts to try, in order.
    pub layouts: Vec<Layout>,
    /// Share of rows to sample, in (0, 1]; `None`: every row up to
    /// [`DEFAULT_FULL_SWEEP_BYTES`], then a sample of about that size.
    pub sample: Option<f64>,
    /// Where scratch tables go (a temporary directory when `None`). Must not be inside the
    /// table.
    pub scratch: Option<PathBuf>,
    /// The workload (`queries`, `selectivity`, `seed`, `predicates`, `columns`).
    pub report: ReportOptions,
    /// Memory a clustering build may buffer (`--memory-limit`).
    pub memory_limit_bytes: Option<u64>,
    /// Set to stop between and inside builds.
    pub cancel: Arc<AtomicBool>,
    /// Estimate each combination's files from the table's rows instead of building it
    /// (see the module docs).
    pub estimate: bool,
    /// Sweep only the files this predicate selects (`--where`), as `optimize --where`
    /// selects them ([`crate::plan::select_files`]); `None`: every file.
    pub predicate: Option<String>,
    /// With a predicate over data columns, also the files whose stats cannot tell
    /// (`--where-include-unknown`).
    pub include_unknown: bool,
    /// A workload (`--workload`): the queries [`Layout::Cuts`] fits its tree to, and, unless
    /// `report.predicates` are given, the queries measured, each weighted by its runs.
    pub workload: Option<Arc<crate::workload::Workload>>,
}

/// The figures of one layout at one target size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Combination {
    /// The layout, as its spec.
    pub layout: String,
    /// The target file size asked for, bytes.
    pub target_file_bytes: u64,
    /// The size a file of this layout has in the sample (target x sample fraction), bytes.
    pub simulated_target_bytes: u64,
    /// Files of the layout.
    pub files: u64,
    /// Their total size, bytes.
    pub bytes: u64,
    /// Mean file size, bytes.
    pub mean_file_bytes: u64,
    /// 10th percentile file size (nearest rank), bytes.
    pub p10_file_bytes: u64,
    /// 90th percentile file size, bytes.
    pub p90_file_bytes: u64,
    /// Predicates evaluated.
    pub queries: usize,
    /// Average files scanned per predicate.
    pub files_scanned_avg: f64,
    /// Average bytes scanned per predicate.
    pub bytes_scanned_avg: f64,
    /// Average rows in the scanned files per predicate.
    pub rows_scanned_avg: f64,
    /// Bytes of the files holding 0.1% of the rows, chosen at random.
    pub rewrite_bytes_0_1pct: u64,
    /// Bytes of the files holding 1% of the rows.
    pub rewrite_bytes_1pct: u64,
    /// Time to build the layout (or, estimated, to compute its files), milliseconds.
    pub build_ms: u64,
    /// No other combination has at most as many files, scans at most as many bytes and
    /// rewrites at most as many bytes for 1% of rows, and is better in one of them.
    pub pareto: bool,
}

/// The result of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepReport {
    /// The table.
    pub table: String,
    /// Its version.
    pub version: u64,
    /// Its live rows.
    pub rows: u64,
    /// Its bytes.
    pub bytes: u64,
    /// The sample fraction used (1.0: every row).
    pub sample_fraction: f64,
    /// The columns the generated workload filters.
    pub columns: Vec<String>,
    /// Whether the predicates were generated (false: `--predicates FILE`).
    pub generated_workload: bool,
    /// Whether the combinations were estimated (`--estimate`) rather than built.
    pub estimated: bool,
    /// Every combination, layout by layout, sizes in the order given.
    pub combinations: Vec<Combination>,
    /// Wall time of the whole sweep, milliseconds.
    pub duration_ms: u64,
    /// The `--where` predicate the sweep was restricted to and how it selected files;
    /// `None`: every file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selected_by: Option<crate::report::SelectedBy>,
}

/// Runs the sweep (see the module docs). Must be called on a multi-threaded tokio runtime.
/// Reports [`Phase::Sweep`] (combinations built and measured) in [`Scope::Run`], and each
/// build's own events (`progress` is passed to every `optimize`).
///
/// # Errors
/// [`Error::InvalidOption`] for bad options (`--target-sizes`, one below the floor of
/// [`crate::plan::check_target_bytes`] included, `--sample`, `--scratch`);
/// everything `optimize` and `report` return for a combination; [`Error::Cancelled`].
/// The table is never written to, whatever happens.
pub async fn sweep(
    location: impl Into<crate::table::TableLocation>,
    options: &SweepOptions,
    progress: Arc<dyn Progress>,
) -> Result<SweepReport> {
    let started = Instant::now();
    check_options(options)?;
    let table = TableView::load(location, None).await?;
    table.check_writable()?;
    check_against_table(&table, options)?;
    let mut table = table;
    let selected_by = select(&mut table, options)?;
    // A local table is mirrored by symbolic links; a table in an object store is referred to
    // by absolute URIs from a local scratch log (nothing is copied either way).
    let source_root = table.location.to_file_path().ok();
    let totals = table.totals();
    #[expect(clippy::cast_precision_loss, reason = "a fraction")]
    let fraction = options.sample.unwrap_or_else(|| {
        if totals.bytes > DEFAULT_FULL_SWEEP_BYTES {
            DEFAULT_FULL_SWEEP_BYTES as f64 / totals.bytes as f64
        } else {
            1.0
        }
    });
    if options.estimate {
        return sweep_estimated(table, options, fraction, progress, started)
            .await
            .map(|mut report| {
                report.selected_by = selected_by;
                report
            });
    }
    let scratch = Scratch::new(options.scratch.as_deref(), source_root.as_deref())?;
    let log = scratch_log(&table, source_root.is_none())?;

    let mut combinations: Vec<(Combination, u64)> = Vec::new();
    let mut workload: Option<Vec<(Predicate, u64)>> = weighted(options);
    let mut columns_used: Vec<String> = Vec::new();
    let report_columns = report_columns(&table, options);
    let total = options.layouts.len() * options.target_sizes.len();
    progress.phase_started(Scope::Run, Phase::Sweep, total as u64);
    for layout in &options.layouts {
        for &target in &options.target_sizes {
            if options.cancel.load(Ordering::SeqCst) {
                return Err(Error::Cancelled);
            }
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss,
                reason = "a size"
            )]
            let simulated = ((target as f64 * fraction).round() as u64).max(1);
            log::info!(
                "sweep {}/{total}: {} at {} ...",
                combinations.len() + 1,
                layout.name(),
                crate::size::format_size(target)
            );
            let dir = scratch
                .path
                .join(format!("combination-{}", combinations.len()));
            let job = Build {
                table: &table,
                log: &log,
                source_root: source_root.as_deref(),
                fraction,
                options,
                report_columns: report_columns.as_deref(),
                progress: &progress,
            };
            let (measured, build_ms, version) =
                build_and_measure(&job, layout, target, &dir, workload.clone()).await?;
            let (mut combination, predicates, names) = measured;
            if workload.is_none() {
                workload = Some(predicates);
                columns_used = names;
            }
            combination.layout = layout.name();
            combination.target_file_bytes = target;
            combination.simulated_target_bytes = simulated;
            combination.build_ms = build_ms;
            combinations.push((combination, version));
            std::fs::remove_dir_all(&dir).map_err(|e| scratch_error(&dir, &e))?;
            progress.phase_advanced(Scope::Run, Phase::Sweep, 1);
        }
    }
    progress.phase_finished(Scope::Run, Phase::Sweep);
    let mut combinations: Vec<Combination> = combinations.into_iter().map(|(c, _)| c).collect();
    mark_pareto(&mut combinations);
    Ok(SweepReport {
        table: table.display_location(),
        version: table.version,
        rows: totals.rows,
        bytes: totals.bytes,
        sample_fraction: fraction,
        columns: columns_used,
        generated_workload: options.report.predicates.is_empty(),
        estimated: false,
        combinations,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        selected_by,
    })
}

/// Checks the options that need no table: target sizes (each above the floor), layouts,
/// the sample share, the report's options.
///
/// # Errors
/// [`Error::InvalidOption`] naming the setting.
fn check_options(options: &SweepOptions) -> Result<()> {
    if options.target_sizes.is_empty() || options.target_sizes.contains(&0) {
        return Err(Error::invalid_option(
            crate::Setting::TargetSizes,
            "needs at least one size, each greater than 0",
        ));
    }
    let floor = crate::plan::target_floor_bytes()?;
    for &bytes in &options.target_sizes {
        crate::plan::check_target_bytes(crate::Setting::TargetSizes, bytes, floor)?;
    }
    if options.layouts.is_empty() {
        return Err(Error::invalid_option(
            crate::Setting::Layouts,
            "needs at least one layout",
        ));
    }
    if let Some(f) = options.sample
        && !(f > 0.0 && f <= 1.0)
    {
        return Err(Error::invalid_option(
            crate::Setting::Sample,
            format!("must be in (0, 1], got {f}"),
        ));
    }
    options.report.validate()?;
    Ok(())
}

/// Checks that the layouts' curve columns, the report's columns, the workload and the
/// predicates fit `table`, before anything is built.
///
/// # Errors
/// [`Error::UnknownColumn`] for a curve column the table lacks or that has no order;
/// [`Error::InvalidOption`] for report columns or predicates that do not fit; the
/// workload's binding errors.
fn check_against_table(table: &TableView, options: &SweepOptions) -> Result<()> {
    let leaves = table.data_leaf_columns();
    let known: Vec<String> = table
        .partition_columns
        .iter()
        .cloned()
        .chain(leaves.iter().map(crate::table::LeafColumn::display_name))
        .collect();
    for layout in &options.layouts {
        if let Layout::Curve { columns, .. } = layout {
            for column in columns {
                let refused = |message: String| Error::UnknownColumn {
                    column: column.clone(),
                    setting: Some(crate::Setting::Layouts),
                    message: format!("('{}') {message}", layout.name()),
                };
                if !known.iter().any(|k| k.eq_ignore_ascii_case(column)) {
                    if let Some(message) = crate::column::parse_path(column)
                        .ok()
                        .and_then(|p| crate::table::schema::void_column_message(&table.schema, &p))
                    {
                        return Err(refused(message));
                    }
                    return Err(refused(format!(
                        "does not exist in table '{}' (columns: {})",
                        table.display_location(),
                        known.join(", ")
                    )));
                }
                // A curve needs an order: the rule `optimize` applies (`plan::cluster`).
                if let Some(leaf) = leaves
                    .iter()
                    .find(|l| l.display_name().eq_ignore_ascii_case(column))
                {
                    if matches!(leaf.data_type, deltalake::kernel::DataType::Variant(_)) {
                        return Err(refused(
                            "is a variant, which has no order (PROTOCOL.md \"Variant Data Type\": not a comparable type), so it cannot be a curve column".into(),
                        ));
                    }
                    if !crate::bound::has_min_max(&leaf.data_type) {
                        return Err(refused(format!(
                            "has type {}, which has no order, so it cannot be a curve column",
                            leaf.data_type
                        )));
                    }
                    if let Some(collation) =
                        crate::table::schema::collation_of(&table.schema, &leaf.logical)
                    {
                        return Err(refused(crate::plan::cluster::collated_message(&collation)));
                    }
                }
            }
        }
    }
    // The report's columns must exist (named in the table's terms, not a scratch's).
    Analysis::new(table, report_columns(table, options).as_deref())
        .map_err(|e| Error::invalid_option(crate::Setting::ReportColumns, e.to_string()))?;
    if let Some(workload) = &options.workload {
        workload.bind(table)?;
    }
    for predicate in &options.report.predicates {
        crate::pruning::Pruner::new(table, predicate).map_err(|e| {
            Error::invalid_option(crate::Setting::PredicateFile, format!("'{predicate}': {e}"))
        })?;
    }
    Ok(())
}

/// `--where`: keeps the files of `table` the predicate selects, as `optimize --where` would
/// rewrite them, and says what it selected (`None` without a predicate).
///
/// # Errors
/// What [`crate::plan::select_files`] returns; [`Error::InvalidOption`] when no file is
/// selected.
fn select(
    table: &mut TableView,
    options: &SweepOptions,
) -> Result<Option<crate::report::SelectedBy>> {
    Ok(match &options.predicate {
        None => None,
        Some(predicate) => {
            let (selected, files) =
                crate::plan::select_files(table, predicate, options.include_unknown)?;
            if files.selected == 0 {
                return Err(Error::invalid_option(
                    crate::Setting::PartitionPredicate,
                    format!(
                        "'{predicate}' selects no file of '{}' ({} ruled out by their stats or partition values, {} without stats for its columns): nothing to sweep",
                        table.display_location(),
                        files.ruled_out,
                        files.without_stats
                    ),
                ));
            }
            let mut keep = selected.into_iter();
            table.files.retain(|_| keep.next().unwrap_or(false));
            Some(crate::report::SelectedBy {
                predicate: predicate.clone(),
                files,
            })
        }
    })
}

/// What every build of a sweep shares.
struct Build<'a> {
    /// The table swept (its selected files).
    table: &'a TableView,
    /// The scratch log: one commit with the table's schema and files.
    log: &'a str,
    /// The table's local root, mirrored by symbolic links (`None`: an object store, read by
    /// absolute URIs).
    source_root: Option<&'a Path>,
    /// The share of rows sampled.
    fraction: f64,
    options: &'a SweepOptions,
    report_columns: Option<&'a [String]>,
    progress: &'a Arc<dyn Progress>,
}

/// Builds `layout` at `target` in the scratch table `dir` with `optimize`, and measures it
/// ([`measure`]) on `workload` (drawn from the build when `None`): the measure, the build's
/// wall time in milliseconds, and the scratch table's version.
///
/// # Errors
/// Writing the scratch table; what `optimize` returns (named as the layout); a sample that
/// keeps no row; [`Error::TaskFailed`].
async fn build_and_measure(
    job: &Build<'_>,
    layout: &Layout,
    target: u64,
    dir: &Path,
    workload: Option<Vec<(Predicate, u64)>>,
) -> Result<(Measured, u64, u64)> {
    match job.source_root {
        Some(root) => mirror(root, dir)?,
        None => {
            std::fs::create_dir_all(dir.join("_delta_log")).map_err(|e| scratch_error(dir, &e))?
        }
    }
    std::fs::write(
        dir.join("_delta_log").join(format!("{:020}.json", 0)),
        job.log,
    )
    .map_err(|e| scratch_error(dir, &e))?;
    let built = Instant::now();
    // Planned on full-size inputs with the full target: each output holds a sample.
    let plan = layout_plan(layout, target, job.options.workload.as_ref(), true, true)?;
    let (options, fraction) = (job.options, job.fraction);
    let build = OptimizeOptions::default()
        .with_plan(plan)
        .with_memory_limit(options.memory_limit_bytes)
        .with_cancel(options.cancel.clone())
        .with_sample((fraction < 1.0).then_some((fraction, options.report.seed)))
        .with_files_of(job.source_root.is_none().then(|| job.table.clone()));
    let location = dir.display().to_string();
    optimize(&location, &build, job.progress.clone())
        .await
        .map_err(|e| as_layout_error(e, layout))?;
    let build_ms = u64::try_from(built.elapsed().as_millis()).unwrap_or(u64::MAX);
    let laid_out = TableView::load(&location, None).await?;
    let totals = job.table.totals();
    if totals.rows > 0 && laid_out.totals().rows == 0 {
        return Err(Error::invalid_option(
            crate::Setting::Sample,
            format!(
                "a sample of {fraction} keeps none of the table's {} rows",
                totals.rows
            ),
        ));
    }
    let measured = {
        let laid_out = laid_out.clone();
        let workload_in = workload;
        let report_columns = job.report_columns.map(<[String]>::to_vec);
        let report = options.report.clone();
        tokio::task::spawn_blocking(move || {
            measure(
                &laid_out,
                workload_in,
                report_columns.as_deref(),
                &report,
                None,
            )
        })
        .await
        .map_err(|e| Error::TaskFailed {
            task: "measuring",
            source: e,
        })??
    };
    Ok((measured, build_ms, laid_out.version))
}

/// [`sweep`] with `--estimate`: the table's rows read once, each combination's files
/// estimated from them (see the [`crate::simulate::estimate`] module) and measured as a build is.
async fn sweep_estimated(
    table: TableView,
    options: &SweepOptions,
    fraction: f64,
    progress: Arc<dyn Progress>,
    started: Instant,
) -> Result<SweepReport> {
    let totals = table.totals();
    let (version, location) = (table.version, table.display_location());
    let report_columns = report_columns(&table, options);
    // The columns read: those the measures look at (the report's columns, or without them
    // every column a written file has stats on, as the workload is drawn from the first
    // combination's stats), and those the predicates filter.
    let mut needed: Vec<crate::table::LeafColumn> = match &report_columns {
        Some(names) => Analysis::new(&table, Some(names))?
            .columns()
            .iter()
            .filter(|c| c.partition_index.is_none())
            .map(as_leaf)
            .collect(),
        None => crate::rewrite::stats::indexed_columns(&table)?,
    };
    for predicate in &options.report.predicates {
        add_columns(&table, predicate, &mut needed)?;
    }
    for query in options.workload.iter().flat_map(|w| w.queries.iter()) {
        add_columns(&table, &query.predicate, &mut needed)?;
    }
    let job = EstimateJob {
        layouts: options.layouts.clone(),
        target_sizes: options.target_sizes.clone(),
        fraction,
        seed: options.report.seed,
        workload: options.workload.clone(),
        needed,
        rewrite_all: true,
        full: true,
        cancel: options.cancel.clone(),
    };
    let total = options.layouts.len() * options.target_sizes.len();
    progress.phase_started(Scope::Run, Phase::Sweep, total as u64);
    let estimates = estimate_layouts(table, &job, &|| {
        progress.phase_advanced(Scope::Run, Phase::Sweep, 1);
    })
    .await?;
    let mut combinations: Vec<Combination> = Vec::new();
    let mut workload: Option<Vec<(Predicate, u64)>> = weighted(options);
    let mut columns_used: Vec<String> = Vec::new();
    for estimated in estimates {
        if options.cancel.load(Ordering::SeqCst) {
            return Err(Error::Cancelled);
        }
        let measured_at = Instant::now();
        let measured = {
            let workload_in = workload.clone();
            let report_columns = report_columns.clone();
            let report = options.report.clone();
            let table = estimated.table.clone();
            let touched = estimated.touched.clone();
            tokio::task::spawn_blocking(move || {
                measure(
                    &table,
                    workload_in,
                    report_columns.as_deref(),
                    &report,
                    Some(touched),
                )
            })
            .await
            .map_err(|e| Error::TaskFailed {
                task: "measuring",
                source: e,
            })??
        };
        let (mut combination, predicates, names) = measured;
        if workload.is_none() {
            workload = Some(predicates);
            columns_used = names;
        }
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "a size"
        )]
        let simulated = ((estimated.target_file_bytes as f64 * fraction).round() as u64).max(1);
        combination.layout = estimated.layout.name();
        combination.target_file_bytes = estimated.target_file_bytes;
        combination.simulated_target_bytes = simulated;
        combination.build_ms = estimated
            .build_ms
            .saturating_add(u64::try_from(measured_at.elapsed().as_millis()).unwrap_or(u64::MAX));
        combinations.push(combination);
    }
    progress.phase_finished(Scope::Run, Phase::Sweep);
    mark_pareto(&mut combinations);
    Ok(SweepReport {
        table: location,
        version,
        rows: totals.rows,
        bytes: totals.bytes,
        sample_fraction: fraction,
        columns: columns_used,
        generated_workload: options.report.predicates.is_empty(),
        estimated: true,
        combinations,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        selected_by: None,
    })
}

/// The measured queries when a workload replaces the generated ones (`--workload` without
/// `--predicates`), each with its runs; `None` otherwise.
fn weighted(options: &SweepOptions) -> Option<Vec<(Predicate, u64)>> {
    if !options.report.predicates.is_empty() {
        return None;
    }
    options.workload.as_ref().map(|w| {
        w.queries
            .iter()
            .map(|q| (q.predicate.clone(), q.weight))
            .collect()
    })
}

/// A resolved column as a leaf to read.
fn as_leaf(c: &crate::bound::ColumnRef) -> crate::table::LeafColumn {
    crate::table::LeafColumn {
        logical: c.logical.clone(),
        physical: c.physical.clone(),
        data_type: c.data_type.clone(),
    }
}

/// Adds the data columns `predicate` reads to `needed`.
fn add_columns(
    table: &TableView,
    predicate: &Predicate,
    needed: &mut Vec<crate::table::LeafColumn>,
) -> Result<()> {
    let pruner = crate::pruning::Pruner::new(table, predicate)?;
    for column in pruner.columns() {
        if column.partition_index.is_none() && !needed.iter().any(|l| l.physical == column.physical)
        {
            needed.push(as_leaf(column));
        }
    }
    Ok(())
}

/// The report's columns: `--columns`, else every curve column of the layouts, else the
/// table's clustering columns, else `None` (every column with stats).
fn report_columns(table: &TableView, options: &SweepOptions) -> Option<Vec<String>> {
    if let Some(columns) = &options.report.columns {
        return Some(columns.clone());
    }
    let mut out: Vec<String> = Vec::new();
    for layout in &options.layouts {
        if let Layout::Curve { columns, .. } = layout {
            for c in columns {
                if !out.contains(c) {
                    out.push(c.clone());
                }
            }
        }
    }
    if out.is_empty() {
        return table.clustering_columns.clone();
    }
    Some(out)
}

/// A measured combination, the weighted predicates it was measured on, and their columns.
type Measured = (Combination, Vec<(Predicate, u64)>, Vec<String>);

/// Measures one built layout: sizes, the workload (drawn here when `workload` is `None`),
/// write amplification.
/// `touched`: per update fraction, per file, whether the update touches the file; `None`
/// reads the files and hashes their rows ([`files_touched`]).
fn measure(
    table: &TableView,
    workload: Option<Vec<(Predicate, u64)>>,
    columns: Option<&[String]>,
    options: &ReportOptions,
    touched: Option<Vec<Vec<bool>>>,
) -> Result<Measured> {
    let analysis = Analysis::new(table, columns)?;
    let names: Vec<String> = analysis.columns().iter().map(|c| c.name.clone()).collect();
    let predicates: Vec<(Predicate, u64)> = match workload {
        Some(w) => w,
        None if !options.predicates.is_empty() => {
            options.predicates.iter().map(|p| (p.clone(), 1)).collect()
        }
        None => analysis
            .workload(options, names.len() > 1 && columns.is_some())
            .queries
            .into_iter()
            .map(|q| (q.predicate, 1))
            .collect(),
    };
    let files = ScoredFiles::of(table);
    let averages = per_run(
        predicates
            .iter()
            .map(|(predicate, weight)| Ok((scan(&analysis, &files, predicate)?, *weight)))
            .collect::<Result<Vec<_>>>()?,
    );
    let sizes: Vec<u64> = table.files.iter().map(|f| f.size_bytes).collect();
    let touched = match touched {
        Some(touched) => touched,
        None => files_touched(table, &UPDATE_FRACTIONS, options.seed)?,
    };
    let rewrite = |k: usize| -> u64 {
        touched[k]
            .iter()
            .zip(&sizes)
            .filter(|(t, _)| **t)
            .map(|(_, s)| *s)
            .sum()
    };
    let mut sorted = sizes.clone();
    sorted.sort_unstable();
    let bytes: u64 = sizes.iter().sum();
    let combination = Combination {
        layout: String::new(),
        target_file_bytes: 0,
        simulated_target_bytes: 0,
        files: sizes.len() as u64,
        bytes,
        mean_file_bytes: bytes / (sizes.len().max(1) as u64),
        p10_file_bytes: percentile(&sorted, 10),
        p90_file_bytes: percentile(&sorted, 90),
        queries: predicates.len(),
        files_scanned_avg: averages.files,
        bytes_scanned_avg: averages.bytes,
        rows_scanned_avg: averages.rows,
        rewrite_bytes_0_1pct: rewrite(0),
        rewrite_bytes_1pct: rewrite(1),
        build_ms: 0,
        pareto: false,
    };
    Ok((combination, predicates, names))
}

/// Per fraction, per file: whether the file holds a row an update of that fraction of rows
/// touches ([`updated`] on the row hashes of [`crate::verify::row_hashes`]).
///
/// # Errors
/// As [`crate::verify::row_hashes`].
pub fn files_touched(table: &TableView, fractions: &[f64], seed: u64) -> Result<Vec<Vec<bool>>> {
    let hashes = crate::verify::row_hashes(table)?;
    Ok(fractions
        .iter()
        .map(|&f| {
            hashes
                .iter()
                .map(|file| file.iter().any(|&h| updated(h, f, seed)))
                .collect()
        })
        .collect())
}

fn mark_pareto(combinations: &mut [Combination]) {
    let keys: Vec<(u64, f64, u64)> = combinations
        .iter()
        .map(|c| (c.files, c.bytes_scanned_avg, c.rewrite_bytes_1pct))
        .collect();
    for (i, c) in combinations.iter_mut().enumerate() {
        let (f, s, r) = keys[i];
        c.pareto = !keys.iter().enumerate().any(|(j, &(f2, s2, r2))| {
            j != i && f2 <= f && s2 <= s && r2 <= r && (f2 < f || s2 < s || r2 < r)
        });
    }
}

/// The scratch root: a temporary directory, or a fresh one inside `--scratch`; removed on
/// drop (success, error, cancellation).
struct Scratch {
    path: PathBuf,
    _temp: tempfile::TempDir,
}

impl Scratch {
    fn new(parent: Option<&Path>, source: Option<&Path>) -> Result<Self> {
        let temp = match parent {
            Some(dir) if dir.to_string_lossy().contains("://") => {
                return Err(Error::invalid_option(
                    crate::Setting::Scratch,
                    format!(
                        "'{}' is a URI: scratch tables are built in a local directory (a table in an object store is read from there by absolute URIs)",
                        dir.display()
                    ),
                ));
            }
            Some(dir) => {
                let canonical_source = source.map(|source| {
                    source
                        .canonicalize()
                        .unwrap_or_else(|_| source.to_path_buf())
                });
                // Resolve the nearest existing ancestor first: nothing is created inside the
                // table, not even the directory that would be refused.
                let mut existing = dir.to_path_buf();
                let mut rest = Vec::new();
                while !existing.exists() {
                    let Some(name) = existing.file_name() else {
                        break;
                    };
                    rest.push(name.to_os_string());
                    if !existing.pop() {
                        break;
                    }
                }
                let base = if existing.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    existing
                };
                let mut canonical = base.canonicalize().map_err(|e| scratch_error(dir, &e))?;
                for name in rest.iter().rev() {
                    canonical.push(name);
                }
                if canonical_source
                    .as_ref()
                    .is_some_and(|source| canonical.starts_with(source))
                {
                    return Err(Error::invalid_option(
                        crate::Setting::Scratch,
                        format!("'{}' is inside the table", dir.display()),
                    ));
                }
                std::fs::create_dir_all(dir).map_err(|e| scratch_error(dir, &e))?;
                tempfile::Builder::new()
                    .prefix("delta-layout-sweep-")
                    .tempdir_in(dir)
            }
            None => tempfile::Builder::new()
                .prefix("delta-layout-sweep-")
                .tempdir(),
        }
        .map_err(|e| scratch_error(parent.unwrap_or(Path::new("the temporary directory")), &e))?;
        Ok(Self {
            path: temp.path().to_path_buf(),
            _temp: temp,
        })
    }
}

fn scratch_error(path: &Path, e: &std::io::Error) -> Error {
    Error::invalid_option(
        crate::Setting::Scratch,
        format!("cannot use '{}': {e}", path.display()),
    )
}

/// Recreates `source`'s directory tree under `target` (real directories) with a symbolic
/// link per file, leaving out `_delta_log`; creates an empty `_delta_log`.
fn mirror(source: &Path, target: &Path) -> Result<()> {
    std::fs::create_dir_all(target.join("_delta_log")).map_err(|e| scratch_error(target, &e))?;
    let mut stack = vec![PathBuf::new()];
    while let Some(relative) = stack.pop() {
        let dir = source.join(&relative);
        let entries = std::fs::read_dir(&dir).map_err(|e| scratch_error(&dir, &e))?;
        for entry in entries {
            let entry = entry.map_err(|e| scratch_error(&dir, &e))?;
            let name = entry.file_name();
            if relative.as_os_str().is_empty() && name == "_delta_log" {
                continue;
            }
            let child = relative.join(&name);
            let kind = entry.file_type().map_err(|e| scratch_error(&dir, &e))?;
            if kind.is_dir() {
                std::fs::create_dir_all(target.join(&child))
                    .map_err(|e| scratch_error(target, &e))?;
                stack.push(child);
            } else {
                link(&source.join(&child), &target.join(&child))?;
            }
        }
    }
    Ok(())
}

#[cfg(unix)]
fn link(original: &Path, link: &Path) -> Result<()> {
    std::os::unix::fs::symlink(original, link).map_err(|e| scratch_error(link, &e))
}

#[cfg(not(unix))]
fn link(original: &Path, link: &Path) -> Result<()> {
    std::fs::copy(original, link)
        .map(|_| ())
        .map_err(|e| scratch_error(link, &e))
}

/// Rewrites an `add` of `table`'s `file` to name its data file and deletion vector by
/// absolute URI.
fn absolute_paths(
    table: &TableView,
    file: &crate::table::DataFile,
    add: &mut serde_json::Map<String, Value>,
) -> Result<()> {
    let root = table.location.as_str().trim_end_matches('/');
    if !file.raw_path.contains("://") {
        add.insert("path".into(), json!(format!("{root}/{}", file.raw_path)));
    }
    if let Some(descriptor) = &file.deletion_vector {
        let kernel: delta_kernel::actions::deletion_vector::DeletionVectorDescriptor = descriptor
            .clone()
            .try_into()
            .map_err(|e: delta_kernel::Error| {
                Error::data_file(
                    &file.path,
                    format!("has a deletion vector descriptor that does not parse: {e}"),
                )
            })?;
        let base = format!("{root}/");
        let base = url::Url::parse(&base).map_err(|e| Error::Internal(e.to_string()))?;
        if let Some(url) = kernel.absolute_path(&base).map_err(|e| {
            Error::data_file(
                &file.path,
                format!("has a deletion vector whose path cannot be resolved: {e}"),
            )
        })? && let Some(Value::Object(dv)) = add.get_mut("deletionVector")
        {
            dv.insert("storageType".into(), json!("p"));
            dv.insert("pathOrInlineDv".into(), json!(url.to_string()));
        }
    }
    Ok(())
}

/// The scratch table's first commit: the source's protocol (less row tracking and
/// clustering), schema, partitioning and properties, and its `add` actions. With `absolute`
/// (a source in an object store), every `add` names the source's file by its absolute URI,
/// and a deletion vector stored beside the table (`u`) by its absolute path (`p`), as
/// PROTOCOL.md "Deletion Vector Descriptor Schema" defines them.
fn scratch_log(table: &TableView, absolute: bool) -> Result<String> {
    const LEFT_OUT: [&str; 4] = ["rowTracking", "clustering", "liquid", "domainMetadata"];
    let keep = |features: &[String]| -> Vec<String> {
        features
            .iter()
            .filter(|f| !LEFT_OUT.contains(&f.as_str()))
            .cloned()
            .collect()
    };
    let mut protocol = json!({
        "minReaderVersion": table.protocol.min_reader_version,
        "minWriterVersion": table.protocol.min_writer_version,
    });
    if table.protocol.min_reader_version >= 3 {
        protocol["readerFeatures"] = json!(keep(&table.protocol.reader_features));
    }
    if table.protocol.min_writer_version >= 7 {
        protocol["writerFeatures"] = json!(keep(&table.protocol.writer_features));
    }
    let configuration: serde_json::Map<String, Value> = table
        .properties
        .iter()
        .filter(|(k, _)| !k.starts_with("delta.rowTracking") && !k.starts_with("delta.liquid"))
        .filter(|(k, _)| k.as_str() != "delta.enableRowTracking")
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let schema = serde_json::to_string(&table.schema).map_err(|source| Error::Json {
        context: "writing a scratch schema".into(),
        source,
    })?;
    let mut lines = vec![
        json!({"protocol": protocol}).to_string(),
        json!({"metaData": {
            "id": uuid::Uuid::new_v4().to_string(),
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema,
            "partitionColumns": table.partition_columns,
            "configuration": configuration,
            "createdTime": chrono::Utc::now().timestamp_millis(),
        }})
        .to_string(),
    ];
    for file in &table.files {
        let mut add = serde_json::to_value(&file.add).map_err(|source| Error::Json {
            context: "writing a scratch log".into(),
            source,
        })?;
        if let Value::Object(fields) = &mut add {
            fields.retain(|k, v| {
                !v.is_null()
                    && !matches!(
                        k.as_str(),
                        "baseRowId" | "defaultRowCommitVersion" | "clusteringProvider"
                    )
            });
            fields.insert("path".into(), json!(file.raw_path));
            fields.remove("tags");
            if absolute {
                absolute_paths(table, file, fields)?;
            }
        }
        lines.push(json!({ "add": add }).to_string());
    }
    Ok(lines.join("\n"))
}

/// The sweep as one self-contained HTML page: two charts (bytes scanned per query, and
/// bytes an update of 1% of the rows rewrites, against the file count), one line per layout,
/// and the table of every combination. The y axes have byte ticks in binary units (KiB,
/// MiB, GiB), the x axes file-count ticks on a log scale (1, 2, 5 times powers of ten);
/// the legend sits right of the plot area, and each point has a tooltip (layout, target
/// size, files, value).
#[must_use]
pub fn html(report: &SweepReport) -> String {
    use crate::report::html::escape;
    use std::fmt::Write as _;
    let mut page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>delta-layout sweep: {t}</title>\
         <style>body{{font-family:system-ui,sans-serif;margin:24px}}table{{border-collapse:collapse}}\
         td,th{{padding:2px 8px;text-align:right;border-bottom:1px solid #ddd;white-space:nowrap}}</style></head><body>\
         <h1>delta-layout sweep: {t}</h1><p>version {v}, {rows} rows{estimated}{sample}</p>\n",
        t = escape(&report.table),
        v = report.version,
        rows = report.rows,
        estimated = if report.estimated {
            "; estimated (files and stats computed from the rows, not built; sizes from the measured output ratio)"
        } else {
            ""
        },
        sample = if report.sample_fraction < 1.0 {
            format!(
                "; built from a {:.4} sample with target sizes scaled by it",
                report.sample_fraction
            )
        } else {
            String::new()
        }
    );
    let mut layouts: Vec<&str> = Vec::new();
    for c in &report.combinations {
        if !layouts.contains(&c.layout.as_str()) {
            layouts.push(&c.layout);
        }
    }
    // Legend to the right of the plot area, wide enough for the longest layout name.
    let legend_width = layouts.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    #[expect(clippy::cast_precision_loss, reason = "pixels")]
    let legend_width = legend_width as f64 * 6.5 + 40.0;
    chart(
        &mut page,
        report,
        &layouts,
        legend_width,
        ("bytes scanned per query", "bytes scanned per query"),
        &|c| c.bytes_scanned_avg,
    );
    #[expect(clippy::cast_precision_loss, reason = "chart coordinates")]
    chart(
        &mut page,
        report,
        &layouts,
        legend_width,
        (
            "bytes rewritten when 1% of rows are updated",
            "bytes rewritten",
        ),
        &|c| c.rewrite_bytes_1pct as f64,
    );
    page.push_str(
        "<table><tr><th>layout</th><th>target</th><th>files</th><th>mean size</th>\
         <th>files/query</th><th>bytes/query</th><th>update 0.1%</th><th>update 1%</th>\
         <th>Pareto</th></tr>\n",
    );
    for c in &report.combinations {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "display"
        )]
        let scanned = c.bytes_scanned_avg as u64;
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.layout),
            crate::size::format_size(c.target_file_bytes),
            c.files,
            crate::size::format_size(c.mean_file_bytes),
            c.files_scanned_avg,
            crate::size::format_size(scanned),
            crate::size::format_size(c.rewrite_bytes_0_1pct),
            crate::size::format_size(c.rewrite_bytes_1pct),
            if c.pareto { "yes" } else { "" }
        );
    }
    page.push_str("</table></body></html>\n");
    page
}

/// The colors of the layouts' lines, in order.
const COLORS: [&str; 6] = [
    "#4a7fb5", "#d9534f", "#5cb85c", "#f0ad4e", "#8e44ad", "#555",
];

/// One chart of a sweep page: the combinations' `value` (bytes) against their file counts
/// (log scale), a line per layout, the legend right of the plot area (`legend_width` pixels).
#[expect(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "chart coordinates"
)]
fn chart(
    page: &mut String,
    report: &SweepReport,
    layouts: &[&str],
    legend_width: f64,
    (title, y_label): (&str, &str),
    value: &dyn Fn(&Combination) -> f64,
) {
    use std::fmt::Write as _;
    // Plot area at (left, top), size (pw, ph); the legend right of it.
    let (left, top, pw, ph, bottom_margin) = (78.0, 34.0, 420.0, 230.0, 46.0);
    let (w, h) = (left + pw + 24.0 + legend_width, top + ph + bottom_margin);
    let files: Vec<f64> = report
        .combinations
        .iter()
        .map(|c| c.files.max(1) as f64)
        .collect();
    let xs: Vec<f64> = files.iter().map(|f| f.ln()).collect();
    let ys: Vec<f64> = report.combinations.iter().map(value).collect();
    let (x0, x1) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let y_ticks = crate::report::html::byte_ticks(ys.iter().copied().fold(0.0, f64::max));
    let y1 = y_ticks.last().map_or(1.0, |t| t.0).max(1.0);
    let px = |x: f64| {
        left + if x1 > x0 {
            (x - x0) / (x1 - x0) * 0.9 + 0.05
        } else {
            0.5
        } * pw
    };
    let py = |y: f64| top + ph - y / y1 * ph;
    let _ = write!(
        page,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h}\" role=\"img\" \
         aria-label=\"{title}\"><rect width=\"{w:.0}\" height=\"{h}\" fill=\"#fafafa\"/>\
         <text x=\"{left}\" y=\"20\" font-size=\"13\" font-weight=\"bold\">{title}</text>"
    );
    for (bytes, label) in &y_ticks {
        let y = py(*bytes);
        let _ = write!(
            page,
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/>\
             <text class=\"tick\" x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{label}</text>",
            left + pw,
            left - 4.0,
            y + 3.5
        );
    }
    // File-count ticks on the log axis: 1, 2 and 5 times powers of ten in range, else
    // the smallest and largest counts.
    let (f0, f1) = (x0.exp().round(), x1.exp().round());
    let mut x_ticks: Vec<f64> = (0..19)
        .flat_map(|p| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(p)))
        .filter(|t| *t >= f0 && *t <= f1)
        .collect();
    if x_ticks.len() < 2 {
        x_ticks = vec![f0, f1];
        x_ticks.dedup();
    }
    for t in x_ticks.iter().filter(|t| t.is_finite()) {
        let x = px(t.ln());
        let _ = write!(
            page,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#333\"/>\
             <text class=\"tick\" x=\"{x:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            top + ph,
            top + ph + 4.0,
            top + ph + 15.0,
            *t as u64
        );
    }
    let frame = Frame {
        left,
        pw,
        legend_top: top + 8.0,
    };
    for (k, layout) in layouts.iter().enumerate() {
        let points: Vec<(f64, f64, &Combination)> = report
            .combinations
            .iter()
            .zip(xs.iter().zip(&ys))
            .filter(|(c, _)| c.layout == *layout)
            .map(|(c, (x, y))| (px(*x), py(*y), c))
            .collect();
        series(page, &frame, k, layout, &points, value);
    }
    let _ = write!(
        page,
        "<line x1=\"{left}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#333\"/>\
         <line x1=\"{left}\" x2=\"{left}\" y1=\"{top}\" y2=\"{}\" stroke=\"#333\"/>\
         <text class=\"axis-label\" x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">files (log scale)</text>\
         <text class=\"axis-label\" transform=\"translate(14 {}) rotate(-90)\" font-size=\"11\" text-anchor=\"middle\">{y_label}</text>\
         </svg></figure>",
        left + pw,
        top + ph,
        top + ph,
        top + ph,
        left + pw / 2.0,
        top + ph + 36.0,
        top + ph / 2.0,
    );
}

/// Where a chart's plot area lies, in pixels: its left edge and width, and the top of the
/// legend right of it.
struct Frame {
    left: f64,
    pw: f64,
    legend_top: f64,
}

/// One layout's line of a chart: its `points` (pixels, and the combination for the
/// tooltip), in the `k`th color, and its legend entry.
#[expect(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "chart coordinates"
)]
fn series(
    page: &mut String,
    frame: &Frame,
    k: usize,
    layout: &str,
    points: &[(f64, f64, &Combination)],
    value: &dyn Fn(&Combination) -> f64,
) {
    use crate::report::html::escape;
    use std::fmt::Write as _;
    let color = COLORS[k % COLORS.len()];
    let line: Vec<String> = points
        .iter()
        .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
        .collect();
    let _ = write!(
        page,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"/>",
        line.join(" ")
    );
    for (x, y, c) in points {
        let _ = write!(
            page,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{color}\"><title>{}, target {}: {} files, {}</title></circle>",
            escape(&c.layout),
            crate::size::format_size(c.target_file_bytes),
            c.files,
            crate::size::format_size(value(c).max(0.0) as u64)
        );
    }
    // Legend entry, right of the plot area.
    let (lx, ly) = (
        frame.left + frame.pw + 24.0,
        frame.legend_top + 18.0 * k as f64,
    );
    let _ = write!(
        page,
        "<g class=\"legend\"><line x1=\"{lx}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"/>\
         <circle cx=\"{}\" cy=\"{ly}\" r=\"3.5\" fill=\"{color}\"/>\
         <text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text></g>",
        lx + 22.0,
        lx + 11.0,
        lx + 28.0,
        ly + 4.0,
        escape(layout)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn combination(layout: &str, files: u64, scanned: f64, rewritten: u64) -> Combination {
        Combination {
            layout: layout.into(),
            target_file_bytes: 1 << 20,
            simulated_target_bytes: 1 << 20,
            files,
            bytes: files << 20,
            mean_file_bytes: 1 << 20,
            p10_file_bytes: 1 << 20,
            p90_file_bytes: 1 << 20,
            queries: 10,
            files_scanned_avg: 1.0,
            bytes_scanned_avg: scanned,
            rows_scanned_avg: 1.0,
            rewrite_bytes_0_1pct: rewritten,
            rewrite_bytes_1pct: rewritten,
            build_ms: 1,
            pareto: false,
        }
    }

    #[test]
    fn html_has_ticks_axis_labels_a_legend_beside_the_plot_and_point_tooltips() {
        let report = SweepReport {
            table: "/t".into(),
            version: 3,
            rows: 1000,
            bytes: 3 << 20,
            sample_fraction: 1.0,
            columns: vec!["a".into()],
            generated_workload: true,
            estimated: false,
            combinations: vec![
                combination("compact", 3, 3.0 * 1_048_576.0, 3 << 20),
                combination("compact", 30, 2.0 * 1_048_576.0, 1 << 20),
                combination("zorder:a,b", 3, 1_048_576.0, 3 << 20),
                combination("zorder:a,b", 30, 524_288.0, 1 << 20),
            ],
            duration_ms: 5,
            selected_by: None,
        };
        let html = html(&report);
        assert!(
            !html.contains("src=") && !html.contains("href="),
            "external asset"
        );
        assert_eq!(html.matches("<svg").count(), 2);
        // A tooltip per point.
        assert_eq!(html.matches("<circle cx").count(), 2 * 4 + 2 * 2);
        assert!(html.contains("<title>zorder:a,b, target 1.0 MiB: 30 files, 512.0 KiB</title>"));
        let ticks: Vec<&str> = html
            .split("class=\"tick\"")
            .skip(1)
            .map(|t| &t[t.find('>').unwrap() + 1..t.find('<').unwrap()])
            .collect();
        // Bytes on the y axis (0 to 3 MiB), file counts on the log x axis (5, 10, 20).
        for tick in ["0 MiB", "1 MiB", "3 MiB", "5", "10", "20"] {
            assert!(ticks.contains(&tick), "no tick {tick} in {ticks:?}");
        }
        for label in [
            ">files (log scale)<",
            ">bytes scanned per query<",
            ">bytes rewritten<",
        ] {
            assert!(html.contains(label), "no axis label {label}");
        }
        // The legend: one entry per layout, right of the plot area (which ends at x = 498).
        assert_eq!(html.matches("<g class=\"legend\">").count(), 2 * 2);
        for entry in html.split("<g class=\"legend\"><line x1=\"").skip(1) {
            let x: f64 = entry[..entry.find('"').unwrap()].parse().unwrap();
            assert!(x > 498.0, "legend at x = {x} covers the plot");
        }
    }
}
