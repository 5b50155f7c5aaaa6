//! The one place flags meet the library: raw arguments to options.

use delta_layout::curve::Curve;
use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::cluster::ClusterRequest;
use delta_layout::plan::{DEFAULT_MAX_DELETED_RATIO, PlanOptions};

use crate::args::OptimizeArgs;

/// Parses an optional size flag.
pub fn size(flag: &str, text: Option<&str>) -> anyhow::Result<Option<u64>> {
    text.map(|t| delta_layout::size::parse_size(flag, t))
        .transpose()
        .map_err(anyhow::Error::from)
}

fn clustering(args: &OptimizeArgs) -> anyhow::Result<Option<ClusterRequest>> {
    let (curve, columns) = match (&args.zorder, &args.hilbert) {
        (Some(columns), _) => (Curve::ZOrder, columns.clone()),
        (None, Some(columns)) => (Curve::Hilbert, columns.clone()),
        (None, None) => {
            if args.full || args.cube_size.is_some() {
                anyhow::bail!(delta_layout::Error::invalid_option(
                    if args.full { "--full" } else { "--cube-size" },
                    "only applies with --zorder or --hilbert"
                ));
            }
            return Ok(None);
        }
    };
    let mut request = ClusterRequest::new(curve, columns);
    request.cube_bytes = size("--cube-size", args.cube_size.as_deref())?;
    request.full = args.full;
    Ok(Some(request))
}

/// Builds the library options of `optimize`.
pub fn optimize_options(args: OptimizeArgs) -> anyhow::Result<OptimizeOptions> {
    let plan = PlanOptions::default()
        .with_target_file_bytes(size("--target-size", args.target_size.as_deref())?)
        .with_min_file_bytes(size("--min-file-size", args.min_file_size.as_deref())?)
        .with_max_deleted_ratio(args.max_deleted_ratio.unwrap_or(DEFAULT_MAX_DELETED_RATIO))
        .with_predicate(args.predicate.clone())
        .with_clustering(clustering(&args)?);
    plan.validate()?;
    let memory_limit = size("--memory-limit", args.memory_limit.as_deref())?;
    if memory_limit == Some(0) {
        anyhow::bail!(delta_layout::Error::invalid_option(
            "--memory-limit",
            "must be greater than 0"
        ));
    }
    Ok(OptimizeOptions::default()
        .with_plan(plan)
        .with_memory_limit(memory_limit)
        .with_threads(args.threads)
        .with_dry_run(args.dry_run))
}
