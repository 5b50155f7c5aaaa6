//! Rendering results for people (text) and programs (`--json`).

use std::io::{self, Write};

use delta_layout::inspect::InspectReport;
use delta_layout::optimize::OptimizeOutcome;
use delta_layout::size::format_size;
use serde_json::{Value, json};

/// Text form of `inspect`.
pub fn inspect(out: &mut impl Write, r: &InspectReport) -> io::Result<()> {
    writeln!(out, "table      {} (version {})", r.table, r.version)?;
    writeln!(
        out,
        "files      {} ({}), {} rows{}",
        r.files,
        format_size(r.bytes),
        r.rows,
        if r.files_without_row_count > 0 {
            format!(
                " (+ {} files without row counts)",
                r.files_without_row_count
            )
        } else {
            String::new()
        }
    )?;
    if r.files_with_deletion_vectors > 0 {
        writeln!(
            out,
            "deleted    {} rows in deletion vectors on {} files",
            r.deleted_rows, r.files_with_deletion_vectors
        )?;
    }
    let partitioning = if r.partition_columns.is_empty() {
        "unpartitioned".to_string()
    } else {
        format!("by {}", r.partition_columns.join(", "))
    };
    writeln!(out, "partitions {} ({partitioning})", r.partitions)?;
    writeln!(
        out,
        "target     {} ({}); {} files below it, {} below 3/4 of it (the default --min-file-size)",
        format_size(r.target_file_bytes),
        r.target_source.describe(),
        r.files_below_target,
        r.files_below_min_size
    )?;
    writeln!(
        out,
        "protocol   reader {} / writer {}; features: {}",
        r.protocol.min_reader_version,
        r.protocol.min_writer_version,
        if r.features.is_empty() {
            "none".to_string()
        } else {
            r.features.join(", ")
        }
    )?;
    if !r.unsupported_features.is_empty() {
        writeln!(
            out,
            "           optimize refuses this table: {}",
            r.unsupported_features.join(", ")
        )?;
    }
    writeln!(out, "\nfile sizes")?;
    let widest = r
        .size_histogram
        .iter()
        .map(|b| b.files)
        .max()
        .unwrap_or(1)
        .max(1);
    for bucket in &r.size_histogram {
        let bar_len = usize::try_from(bucket.files * 40 / widest)
            .unwrap_or(40)
            .max(1);
        writeln!(
            out,
            "  {:>10} .. {:<10} {:>7}  {}",
            format_size(bucket.lower_bytes),
            format_size(bucket.upper_bytes),
            bucket.files,
            "#".repeat(bar_len)
        )?;
    }
    writeln!(out, "\nstats coverage (share of files)")?;
    writeln!(
        out,
        "  {:<40} {:>8} {:>10}",
        "column", "min/max", "nullCount"
    )?;
    for c in &r.columns {
        writeln!(
            out,
            "  {:<40} {:>7.0}% {:>9.0}%",
            c.column,
            c.min_max_fraction * 100.0,
            c.null_count_fraction * 100.0
        )?;
    }
    Ok(())
}

/// Text form of `optimize`.
pub fn optimize(out: &mut impl Write, o: &OptimizeOutcome) -> io::Result<()> {
    if o.dry_run {
        write!(out, "{}", o.plan)?;
        return writeln!(out, "dry run: nothing was written");
    }
    match o.version {
        None => writeln!(
            out,
            "nothing to do at version {}: {}",
            o.read_version,
            o.plan.nothing_to_do()
        ),
        Some(version) => writeln!(
            out,
            "committed version {version}{}: {} files ({}) -> {} files ({}), {} rows, {} bins in {} partitions, {:.1}s",
            o.plan
                .clustering
                .as_ref()
                .map_or(String::new(), |c| format!(
                    " ({} on {})",
                    delta_layout::plan::cluster::curve_name(c.curve),
                    c.columns.join(", ")
                )),
            o.files_removed,
            format_size(o.bytes_removed),
            o.files_added,
            format_size(o.bytes_added),
            o.rows,
            o.bins,
            o.partitions,
            o.duration.as_secs_f64()
        ),
    }
}

/// JSON form of `optimize`: the documented fields first, then the plan.
pub fn optimize_json(o: &OptimizeOutcome) -> Value {
    json!({
        "version": o.version,
        "read_version": o.read_version,
        "dry_run": o.dry_run,
        "files_removed": o.files_removed,
        "files_added": o.files_added,
        "bytes_removed": o.bytes_removed,
        "bytes_added": o.bytes_added,
        "rows": o.rows,
        "partitions": o.partitions,
        "bins": o.bins,
        "bins_spilled": o.bins_spilled,
        "curve": o.plan.clustering.as_ref().map(|c| delta_layout::plan::cluster::curve_name(c.curve)),
        "columns": o.plan.clustering.as_ref().map(|c| c.columns.clone()),
        "duration_ms": u64::try_from(o.duration.as_millis()).unwrap_or(u64::MAX),
        "metrics": o.metrics,
        "plan": o.plan,
    })
}
