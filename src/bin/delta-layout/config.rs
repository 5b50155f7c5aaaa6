//! The one place flags meet the library: raw arguments to options.

use anyhow::Context as _;
use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::{DEFAULT_MAX_DELETED_RATIO, PlanOptions};

use crate::args::OptimizeArgs;

/// Parses an optional size flag.
pub fn size(flag: &str, text: Option<&str>) -> anyhow::Result<Option<u64>> {
    text.map(|t| delta_layout::size::parse_size(flag, t))
        .transpose()
        .map_err(anyhow::Error::from)
}

fn clustering(
    zorder: Option<Vec<String>>,
    hilbert: Option<Vec<String>>,
) -> Option<delta_layout::plan::cluster::ClusterRequest> {
    use delta_layout::curve::Curve;
    use delta_layout::plan::cluster::ClusterRequest;
    match (zorder, hilbert) {
        (Some(columns), _) => Some(ClusterRequest {
            curve: Curve::ZOrder,
            columns,
        }),
        (None, Some(columns)) => Some(ClusterRequest {
            curve: Curve::Hilbert,
            columns,
        }),
        (None, None) => None,
    }
}

/// Builds the library options of `optimize`.
pub fn optimize_options(args: OptimizeArgs) -> anyhow::Result<OptimizeOptions> {
    let plan = PlanOptions::default()
        .with_target_file_bytes(size("--target-size", args.target_size.as_deref())?)
        .with_min_file_bytes(size("--min-file-size", args.min_file_size.as_deref())?)
        .with_max_deleted_ratio(args.max_deleted_ratio.unwrap_or(DEFAULT_MAX_DELETED_RATIO))
        .with_predicate(args.predicate)
        .with_clustering(clustering(args.zorder, args.hilbert));
    plan.validate().context("checking the options")?;
    Ok(OptimizeOptions::default()
        .with_plan(plan)
        .with_threads(args.threads)
        .with_dry_run(args.dry_run))
}
