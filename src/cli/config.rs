//! The one place flags meet the library: raw arguments to options.

use crate::curve::Curve;
use crate::optimize::OptimizeOptions;
use crate::plan::cluster::ClusterRequest;
use crate::plan::{DEFAULT_MAX_DELETED_RATIO, PlanOptions};

use crate::predicate::Predicate;
use crate::report::ReportOptions;

use super::args::{ExecutionArgs, OptimizeArgs, PlanningArgs, ReportArgs, SweepArgs};

/// Parses an optional size of `setting`.
pub fn size(setting: crate::Setting, text: Option<&str>) -> anyhow::Result<Option<u64>> {
    text.map(|t| crate::size::parse_size(setting.clone(), t))
        .transpose()
        .map_err(anyhow::Error::from)
}

/// Reads a workload file (`Workload::read`); `-` is standard input, read once and kept (a
/// run may read its workload twice: to plan and to score).
pub fn read_workload(path: &std::path::Path) -> crate::Result<crate::workload::Workload> {
    static STDIN: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    if path.as_os_str() != "-" {
        return crate::workload::Workload::read(path);
    }
    let text =
        STDIN.get_or_init(|| std::io::read_to_string(std::io::stdin()).map_err(|e| e.to_string()));
    match text {
        Ok(text) => crate::workload::Workload::parse(text, "standard input"),
        Err(e) => Err(crate::Error::invalid_option(
            crate::Setting::Workload,
            format!("cannot read standard input: {e}"),
        )),
    }
}

/// The workload file at `path`, if one is given, read ([`read_workload`]) and shared.
fn shared_workload(
    path: Option<&std::path::Path>,
) -> crate::Result<Option<std::sync::Arc<crate::workload::Workload>>> {
    path.map(read_workload)
        .transpose()
        .map(|w| w.map(std::sync::Arc::new))
}

/// The layout of `--zorder`, `--hilbert` or `--workload` (a cut tree, when no curve is
/// given).
fn clustering(args: &PlanningArgs) -> anyhow::Result<Option<ClusterRequest>> {
    if let Some(path) = &args.workload
        && args.zorder.is_none()
        && args.hilbert.is_none()
    {
        let mut request = ClusterRequest::cuts(read_workload(path)?);
        request.cube_bytes = size(crate::Setting::CubeSize, args.cube_size.as_deref())?;
        request.full = args.full;
        return Ok(Some(request));
    }
    let (curve, columns) = match (&args.zorder, &args.hilbert) {
        (Some(columns), _) => (Curve::ZOrder, columns.clone()),
        (None, Some(columns)) => (Curve::Hilbert, columns.clone()),
        // A table that declares clustering columns is clustered by them: the plan applies
        // --cube-size and --full to that clustering, and refuses --cube-size without one.
        (None, None) => return Ok(None),
    };
    let mut request = ClusterRequest::new(curve, columns);
    request.cube_bytes = size(crate::Setting::CubeSize, args.cube_size.as_deref())?;
    request.full = args.full;
    Ok(Some(request))
}

/// Builds the library options of `report`, reading the `--predicates` file.
///
/// Also returns the line number of each predicate in its file, for error messages.
pub fn report_options(args: &ReportArgs) -> anyhow::Result<(ReportOptions, Vec<usize>)> {
    let (predicates, lines) = match &args.predicates {
        None => (Vec::new(), Vec::new()),
        Some(path) => read_predicates(path)?.into_iter().unzip(),
    };
    let target_file_bytes = size(crate::Setting::TargetFileSize, args.target_size.as_deref())?;
    if target_file_bytes == Some(0) {
        anyhow::bail!(super::words::bad_flag(
            "--target-size",
            "must be greater than 0"
        ));
    }
    let options = ReportOptions {
        columns: args.columns.clone(),
        queries: args.queries,
        selectivity: args.selectivity,
        seed: args.seed,
        predicates,
        target_file_bytes,
    };
    options.validate()?;
    Ok((options, lines))
}

/// One predicate per line; blank lines and `#` comments skipped. Errors name the line.
fn read_predicates(path: &std::path::Path) -> anyhow::Result<Vec<(Predicate, usize)>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        super::words::bad_flag(
            "--predicates",
            format!("cannot read '{}': {e}", path.display()),
        )
    })?;
    // A byte order mark, as some editors write, is not part of the first line.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let predicate = Predicate::parse(line).map_err(|e| {
            super::words::bad_flag(
                "--predicates",
                format!("{} line {}: {e}", path.display(), n + 1),
            )
        })?;
        out.push((predicate, n + 1));
    }
    if out.is_empty() {
        anyhow::bail!(super::words::bad_flag(
            "--predicates",
            format!("'{}' holds no predicate", path.display()),
        ));
    }
    Ok(out)
}

/// Builds the library options of `optimize`.
pub fn optimize_options(args: OptimizeArgs) -> anyhow::Result<OptimizeOptions> {
    // `--json` prints the run as a work order.
    let mut options = planning_options(&args.planning)?
        .with_dry_run(args.dry_run)
        .with_single_round(args.single_round)
        .with_work_order(args.json)
        .with_allow_regression(args.allow_regression);
    if let Some(text) = &args.max_duration {
        let mut budget = options.budget();
        budget.max_duration = Some(crate::size::parse_duration(
            crate::Setting::MaxDuration,
            text,
        )?);
        options = options.with_budget(budget)?;
    }
    execution_options(options, &args.execution)
}

/// The options `plan` and `optimize` share: what to rewrite, codec, memory limit, verify.
pub fn planning_options(args: &PlanningArgs) -> anyhow::Result<OptimizeOptions> {
    let plan = PlanOptions::default()
        .with_target_file_bytes(size(
            crate::Setting::TargetFileSize,
            args.target_size.as_deref(),
        )?)
        .with_min_file_bytes(size(
            crate::Setting::MinFileSize,
            args.min_file_size.as_deref(),
        )?)
        .with_max_deleted_ratio(args.max_deleted_ratio.unwrap_or(DEFAULT_MAX_DELETED_RATIO))
        .with_predicate(args.predicate.clone())
        .with_include_unknown(args.where_include_unknown)
        .with_include_clustered(
            args.full && args.zorder.is_none() && args.hilbert.is_none() && args.workload.is_none(),
        )
        .with_clustering(clustering(args)?)
        .with_cube_bytes(size(crate::Setting::CubeSize, args.cube_size.as_deref())?);
    plan.validate()?;
    let memory_limit = size(crate::Setting::MemoryLimit, args.memory_limit.as_deref())?;
    if memory_limit == Some(0) {
        anyhow::bail!(super::words::bad_flag(
            "--memory-limit",
            "must be greater than 0"
        ));
    }
    let codec = crate::rewrite::write::Codec::parse(&args.compression)
        .map_err(|m| super::words::bad_flag("--compression", m))?;
    let budget = crate::prepare::Budget::new(
        size(
            crate::Setting::MaxRewriteBytes,
            args.max_rewrite_bytes.as_deref(),
        )?,
        None,
        args.min_gain,
    );
    let workload = shared_workload(args.workload.as_deref())?;
    Ok(OptimizeOptions::default()
        .with_codec(codec)
        .with_plan(plan)
        .with_memory_limit(memory_limit)
        .with_verify(args.verify)
        .with_budget(budget)?
        .with_workload(workload))
}

/// Adds the options of the process that runs bins (`optimize`, `execute`).
pub fn execution_options(
    options: OptimizeOptions,
    args: &ExecutionArgs,
) -> anyhow::Result<OptimizeOptions> {
    if let Some(dir) = &args.temp_dir
        && !dir.is_dir()
    {
        return Err(super::words::bad_flag(
            "--temp-dir",
            format!("'{}' is not an existing local directory", dir.display()),
        ));
    }
    Ok(options
        .with_spill_directory(args.temp_dir.clone())
        .with_threads(args.threads)
        .with_read_concurrency(args.read_concurrency))
}

/// Builds the library options of `sweep` (the cancel flag is set by the caller).
pub fn sweep_options(
    args: &SweepArgs,
    clustering_columns: Option<&[String]>,
) -> anyhow::Result<crate::sweep::SweepOptions> {
    use crate::simulate::Layout;
    let mut target_sizes = Vec::new();
    for text in &args.target_sizes {
        let bytes = crate::size::parse_size(crate::Setting::TargetSizes, text.trim())?;
        if bytes == 0 {
            anyhow::bail!(super::words::bad_flag(
                "--target-sizes",
                "every size must be greater than 0"
            ));
        }
        target_sizes.push(bytes);
    }
    let mut layouts = args
        .layouts
        .iter()
        .map(|spec| Layout::parse(spec))
        .collect::<Result<Vec<_>, _>>()?;
    if layouts.is_empty() {
        layouts.push(Layout::Compact);
        if let Some(columns) = args.columns.as_deref().or(clustering_columns) {
            for curve in [crate::curve::Curve::ZOrder, crate::curve::Curve::Hilbert] {
                layouts.push(Layout::Curve {
                    curve,
                    columns: columns.to_vec(),
                });
            }
        }
    }
    let workload = shared_workload(args.workload.as_deref())?;
    if workload.is_some() && args.layouts.is_empty() {
        layouts.push(Layout::Cuts);
    }
    let predicates = match &args.predicates {
        None => Vec::new(),
        Some(path) => read_predicates(path)?.into_iter().map(|(p, _)| p).collect(),
    };
    let report = ReportOptions {
        columns: args.columns.clone(),
        queries: args.queries,
        selectivity: args.selectivity,
        seed: args.seed,
        predicates,
        target_file_bytes: None,
    };
    report.validate()?;
    Ok(crate::sweep::SweepOptions {
        target_sizes,
        layouts,
        sample: args.sample,
        scratch: args.scratch.clone(),
        report,
        memory_limit_bytes: match size(crate::Setting::MemoryLimit, args.memory_limit.as_deref())? {
            Some(0) => anyhow::bail!(super::words::bad_flag(
                "--memory-limit",
                "must be greater than 0"
            )),
            other => other,
        },
        cancel: std::sync::Arc::default(),
        estimate: args.estimate,
        predicate: args.predicate.clone(),
        include_unknown: args.where_include_unknown,
        workload,
    })
}

/// Builds the library options of `recommend`.
pub fn recommend_options(
    args: &super::args::RecommendArgs,
) -> anyhow::Result<crate::recommend::RecommendOptions> {
    let mut target_sizes = Vec::new();
    for text in &args.target_sizes {
        target_sizes.push(crate::size::parse_size(
            crate::Setting::TargetSizes,
            text.trim(),
        )?);
    }
    let file_cost_bytes = crate::size::parse_size(crate::Setting::FileCost, args.file_cost.trim())?;
    let options = crate::recommend::RecommendOptions {
        target_sizes,
        holdout: args.holdout,
        seed: args.seed,
        sample: args.sample,
        max_columns: args.max_columns,
        file_cost_bytes,
        min_gain: args.min_gain,
        ..Default::default()
    };
    options.validate().map_err(|e| match e {
        crate::Error::InvalidOption {
            option: crate::Setting::CurveColumns(_),
            message,
        } => super::words::bad_flag("--max-columns", message),
        other => other.into(),
    })?;
    Ok(options)
}
