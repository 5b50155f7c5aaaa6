//! Simulating a layout: the files and stats a rewrite would produce, from the table's rows
//! read once, without writing Parquet. The engine of `sweep --estimate` ([`crate::sweep`])
//! and of `recommend` ([`crate::recommend`]): each [`Layout`] at each target size is planned
//! as a build plans it ([`crate::prepare`]), and its rows are ordered and cut into files as
//! the rewrite would ([`estimate`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;

use crate::curve::Curve;
use crate::error::{Error, Result};
use crate::plan::PlanOptions;
use crate::plan::cluster::ClusterRequest;
use crate::table::TableView;

pub mod estimate;

/// Shares of rows whose update the write-amplification estimate simulates.
pub const UPDATE_FRACTIONS: [f64; 2] = [0.001, 0.01];

/// One layout to try.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Layout {
    /// Bin-packing only, every file rewritten at the target size.
    Compact,
    /// Clustered along a curve over these columns.
    Curve {
        /// The curve.
        #[serde(skip)]
        curve: Curve,
        /// The columns.
        columns: Vec<String>,
    },
    /// Laid out by a cut tree fitted to the sweep's workload ([`crate::plan::cuts`]).
    Cuts,
}

impl Layout {
    /// Parses `compact`, `zorder:a,b`, `hilbert:a,b,c` or `cuts`.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming `--layout`.
    pub fn parse(spec: &str) -> Result<Self> {
        let spec = spec.trim();
        if spec.eq_ignore_ascii_case("compact") {
            return Ok(Self::Compact);
        }
        if spec.eq_ignore_ascii_case(crate::plan::cuts::CUTS_NAME) {
            return Ok(Self::Cuts);
        }
        let bad = || {
            Error::invalid_option(
                crate::Setting::Layouts,
                format!("'{spec}' is not compact, zorder:COLS, hilbert:COLS or cuts"),
            )
        };
        let (kind, columns) = spec.split_once(':').ok_or_else(bad)?;
        let curve = Curve::parse(kind).ok_or_else(bad)?;
        let columns: Vec<String> = crate::column::split_list(columns)
            .map_err(|message| Error::invalid_option(crate::Setting::Layouts, message))?;
        if columns.is_empty() {
            return Err(bad());
        }
        Ok(Self::Curve { curve, columns })
    }

    /// The spec form: `compact`, `zorder:a,b`.
    #[must_use]
    pub fn name(&self) -> String {
        match self {
            Self::Compact => "compact".into(),
            Self::Curve { curve, columns } => format!("{}:{}", curve.name(), columns.join(",")),
            Self::Cuts => crate::plan::cuts::CUTS_NAME.into(),
        }
    }
}

/// Layouts to estimate from a table's rows, read once ([`estimate_layouts`]): shared by
/// `sweep --estimate` and `recommend`.
pub(crate) struct EstimateJob {
    /// The layouts, each at every target size.
    pub layouts: Vec<Layout>,
    /// Target file sizes, bytes.
    pub target_sizes: Vec<u64>,
    /// Share of the rows read (1.0: every row).
    pub fraction: f64,
    /// Seed of the row sample and the simulated updates.
    pub seed: u64,
    /// The workload a [`Layout::Cuts`] tree is fitted to.
    pub workload: Option<Arc<crate::workload::Workload>>,
    /// Columns to read besides those the layouts and their stats need.
    pub needed: Vec<crate::table::LeafColumn>,
    /// Compaction plans as sweep's builds do, rewriting every file at the target size
    /// (`true`), or as `optimize --target-size` does, packing only the small files and those
    /// with many deleted rows (`false`: what `recommend`'s command line runs).
    pub rewrite_all: bool,
    /// Curves and cut trees plan every file anew (`true`: sweep's builds, `--full`), or as a
    /// re-run of `optimize` does (`false`: files already laid out by the same curve over the
    /// same columns, or by a recorded tree of the same workload, are left alone unless new
    /// files join them; what `recommend`'s command line runs).
    pub full: bool,
    /// Stops the job.
    pub cancel: Arc<AtomicBool>,
}

/// One layout at one target size, estimated.
pub(crate) struct EstimatedLayout {
    /// The layout.
    pub layout: Layout,
    /// Its target size, bytes.
    pub target_file_bytes: u64,
    /// The table as the estimate lays it out.
    pub table: Arc<TableView>,
    /// Per update fraction, per file: whether the update touches it.
    pub touched: Vec<Vec<bool>>,
    /// Time to plan and estimate it, milliseconds.
    pub build_ms: u64,
    /// Input bytes its plan rewrites (the bytes a build would read).
    pub rewrite_bytes: u64,
}

/// The plan options of `layout` at `target`, as a build plans it: a curve or cut tree over
/// every file with `full`, else as a re-run plans it; compaction over every file with
/// `rewrite_all`, else over the files `optimize` picks.
pub(crate) fn layout_plan(
    layout: &Layout,
    target: u64,
    workload: Option<&Arc<crate::workload::Workload>>,
    rewrite_all: bool,
    full: bool,
) -> Result<PlanOptions> {
    let mut plan = PlanOptions::default()
        .with_target_file_bytes(Some(target))
        .with_rewrite_all(rewrite_all);
    let request = match layout {
        Layout::Compact => None,
        Layout::Curve { curve, columns } => Some(ClusterRequest::new(*curve, columns.clone())),
        Layout::Cuts => {
            let workload = workload.ok_or_else(|| {
                Error::invalid_option(
                    crate::Setting::Layouts,
                    "'cuts' needs a workload to fit its tree to (--workload)",
                )
            })?;
            Some(ClusterRequest::cuts(workload.as_ref().clone()))
        }
    };
    if let Some(mut request) = request {
        request.full = full;
        plan = plan.with_clustering(Some(request));
    }
    Ok(plan)
}

/// Layouts planned and estimated at once by `estimate_layouts`, at most: 4, and no more
/// than the cores. Each plan and estimate is mostly one thread's work (a sample's encoding,
/// a sort of the rows), so a few at once keep the cores busy; each holds its own sort of the
/// sample, so memory grows with them.
pub const MAX_CONCURRENT_ESTIMATES: usize = 4;

/// One layout at one target size, planned: its index in the order of the job (layouts, then
/// target sizes), the layout, the target (bytes), the plan, and the milliseconds it took.
type Planned = (usize, Layout, u64, crate::plan::Plan, u64);

/// Plans every layout of `job` at every target size as a build plans it (sized by the output
/// ratio measured on the files each plan samples, measures kept in `memo`), `concurrency` at
/// once, a target at a time.
///
/// # Errors
/// What planning returns for a layout (named as [`crate::Setting::Layouts`]);
/// [`Error::Cancelled`].
async fn plan_layouts(
    table: &TableView,
    job: &EstimateJob,
    concurrency: usize,
    memo: &crate::prepare::MeasureMemo,
) -> Result<Vec<Planned>> {
    use futures::{StreamExt as _, TryStreamExt as _};
    let pairs: Vec<(usize, &Layout, u64)> = job
        .target_sizes
        .iter()
        .enumerate()
        .flat_map(|(t, &target)| {
            job.layouts
                .iter()
                .enumerate()
                .map(move |(l, layout)| (l * job.target_sizes.len() + t, layout, target))
        })
        .collect();
    futures::stream::iter(pairs)
        .map(|(index, layout, target)| {
            async move {
                if job.cancel.load(Ordering::SeqCst) {
                    return Err(Error::Cancelled);
                }
                let planned = Instant::now();
                // Planned as a build plans: sized by the output ratio measured on the sample
                // of files this plan draws (and cut trees grown on a row sample).
                let build = crate::prepare::OptimizeOptions::default()
                    .with_plan(layout_plan(
                        layout,
                        target,
                        job.workload.as_ref(),
                        job.rewrite_all,
                        job.full,
                    )?)
                    .with_cancel(job.cancel.clone())
                    .with_sample((job.fraction < 1.0).then_some((job.fraction, job.seed)));
                let plan = crate::prepare::plan_sized_with(table, &build, Some(memo))
                    .await
                    .map_err(|e| as_layout_error(e, layout))?;
                let ms = u64::try_from(planned.elapsed().as_millis()).unwrap_or(u64::MAX);
                Ok((index, layout.clone(), target, plan, ms))
            }
        })
        .buffered(concurrency)
        .try_collect()
        .await
}

/// Estimates every layout of `job` at every target size from `table`'s rows, read once
/// (see the [`estimate`] module), calling `advanced` after each; up to
/// [`MAX_CONCURRENT_ESTIMATES`] at once, the results in the order of `job` (layouts, then
/// target sizes). Planned and read as the scratch tables of a build are: without the
/// clustering columns or row tracking the table declares (a scratch log leaves them out).
///
/// # Errors
/// What planning returns for a layout (named as [`crate::Setting::Layouts`]); the read
/// errors of the files; [`Error::Cancelled`].
pub(crate) async fn estimate_layouts(
    table: TableView,
    job: &EstimateJob,
    advanced: &(dyn Fn() + Sync),
) -> Result<Vec<EstimatedLayout>> {
    use futures::{StreamExt as _, TryStreamExt as _};
    let mut table = table;
    table.clustering_columns = None;
    table.row_tracking = None;
    let concurrency = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .clamp(1, MAX_CONCURRENT_ESTIMATES);
    let indexed = crate::rewrite::stats::indexed_columns(&table)?;
    // Planned a target at a time (the layouts planned at once differ), so that the plans of
    // one layout at later targets reuse its output measure (`MeasureMemo`); results in the
    // order of `job`.
    let memo = crate::prepare::MeasureMemo::default();
    let mut plans = plan_layouts(&table, job, concurrency, &memo).await?;
    plans.sort_by_key(|(index, ..)| *index);
    let mut needed = job.needed.clone();
    for (_, _, _, plan, _) in &plans {
        for leaf in plan.layout_leaves(&table)? {
            if !needed.iter().any(|l| l.physical == leaf.physical) {
                needed.push(leaf);
            }
        }
    }
    let with_tight_bounds = table
        .protocol
        .effective_features()
        .iter()
        .any(|f| f == "deletionVectors");
    let mut reader = crate::table::read::Reader::for_table(&table)?;
    reader.sample = (job.fraction < 1.0).then_some((job.fraction, job.seed));
    reader.cancel = Some(job.cancel.clone());
    let table = Arc::new(table);
    let rows = {
        let table = table.clone();
        let needed = needed.clone();
        let seed = job.seed;
        tokio::task::spawn_blocking(move || {
            estimate::Rows::read(&table, &reader, &needed, &UPDATE_FRACTIONS, seed, None)
        })
        .await
        .map_err(|e| Error::TaskFailed {
            task: "reading",
            source: e,
        })??
    };
    let rows = Arc::new(rows);
    let totals = table.totals();
    futures::stream::iter(plans)
        .map(|(_, layout, target, plan, plan_ms)| {
            let (table, rows, needed, indexed) = (table.clone(), rows.clone(), &needed, &indexed);
            async move {
                if job.cancel.load(Ordering::SeqCst) {
                    return Err(Error::Cancelled);
                }
                let built = Instant::now();
                // Stats as a build collects them: the indexed columns, the clustering columns
                // and the columns of the cut trees, of those read.
                let mut stats_leaves: Vec<crate::table::LeafColumn> = indexed
                    .iter()
                    .filter(|l| needed.iter().any(|n| n.physical == l.physical))
                    .cloned()
                    .collect();
                for leaf in plan.layout_leaves(&table)? {
                    if !stats_leaves.iter().any(|l| l.physical == leaf.physical) {
                        stats_leaves.push(leaf);
                    }
                }
                let rewrite_bytes = plan.input_bytes();
                let fraction = job.fraction;
                let cancel = job.cancel.clone();
                let estimated = tokio::task::spawn_blocking(move || {
                    let settings = estimate::Settings {
                        stats_leaves,
                        with_tight_bounds,
                        fraction,
                        update_fractions: UPDATE_FRACTIONS.len(),
                    };
                    estimate::estimate(&table, &plan, &rows, &settings, &cancel)
                })
                .await
                .map_err(|e| Error::TaskFailed {
                    task: "estimating",
                    source: e,
                })??;
                if totals.rows > 0 && estimated.table.totals().rows == 0 {
                    return Err(Error::invalid_option(
                        crate::Setting::Sample,
                        format!(
                            "a sample of {fraction} keeps none of the table's {} rows",
                            totals.rows
                        ),
                    ));
                }
                let build_ms = plan_ms
                    .saturating_add(u64::try_from(built.elapsed().as_millis()).unwrap_or(u64::MAX));
                advanced();
                Ok(EstimatedLayout {
                    layout,
                    target_file_bytes: target,
                    table: Arc::new(estimated.table),
                    touched: estimated.touched,
                    build_ms,
                    rewrite_bytes,
                })
            }
        })
        .buffered(concurrency)
        .try_collect()
        .await
}

/// Whether a row with this hash is among the `fraction` of rows an update touches (seeded).
#[must_use]
pub fn updated(row_hash: u64, fraction: f64, seed: u64) -> bool {
    let h = xxhash_rust::xxh64::xxh64(&row_hash.to_le_bytes(), seed);
    #[expect(clippy::cast_precision_loss, reason = "a uniform draw")]
    let u = (h >> 11) as f64 / (1u64 << 53) as f64;
    u < fraction
}

/// A layout's curve errors name the layouts, the setting the user gave.
pub(crate) fn as_layout_error(error: Error, layout: &Layout) -> Error {
    match error {
        Error::InvalidOption {
            option: crate::Setting::CurveColumns(_),
            message,
        } => Error::invalid_option(
            crate::Setting::Layouts,
            format!("'{}': {message}", layout.name()),
        ),
        Error::UnknownColumn {
            column,
            setting: Some(crate::Setting::CurveColumns(_)),
            message,
        } => Error::UnknownColumn {
            column,
            setting: Some(crate::Setting::Layouts),
            message: format!("('{}') {message}", layout.name()),
        },
        other => other,
    }
}
