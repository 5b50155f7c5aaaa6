//! Rendering results for people (text) and programs (`--json`).

use std::io::{self, Write};

use crate::history::History;
use crate::inspect::InspectReport;
use crate::optimize::OptimizeOutcome;
use crate::report::{LayoutReport, ReportComparison};
use crate::size::{count, format_size};
use crate::sweep::SweepReport;
use crate::verify::VerifyReport;
use serde_json::{Value, json};

/// Text form of `inspect`.
pub fn inspect(out: &mut impl Write, r: &InspectReport) -> io::Result<()> {
    writeln!(out, "table      {} (version {})", r.table, r.version)?;
    writeln!(
        out,
        "files      {} ({}), {}{}",
        r.files,
        format_size(r.bytes),
        count(r.rows, "row"),
        if r.files_without_row_count > 0 {
            format!(
                " (+ {} without row counts)",
                count(r.files_without_row_count, "file")
            )
        } else {
            String::new()
        }
    )?;
    if r.files_with_deletion_vectors > 0 {
        writeln!(
            out,
            "deleted    {} in deletion vectors on {}",
            count(r.deleted_rows, "row"),
            count(r.files_with_deletion_vectors, "file")
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
        "target     {} ({}); {} within 20% of it (as optimize writes them), {} below 3/4 of it (the default --min-file-size: what compaction picks up)",
        format_size(r.target_file_bytes),
        target_source(r.target_source),
        count(r.files_near_target, "file"),
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
    for (feature, verdict) in &r.feature_support {
        writeln!(out, "           {feature:<24} {verdict}")?;
    }
    if !r.unsupported_features.is_empty() {
        // What is not a feature (listed above with its reason): a protocol version past
        // this tool's, a rule of the table's Iceberg compatibility the table breaks.
        for refused in r.unsupported_features.iter().filter(|u| {
            !r.feature_support
                .keys()
                .any(|f| u.starts_with(&format!("{f} (")))
        }) {
            writeln!(out, "           refused: {refused}")?;
        }
        writeln!(out, "           optimize and vacuum refuse this table")?;
    }
    if let Some(iceberg) = &r.iceberg {
        writeln!(out, "uniform    {}", iceberg.statement(r.version))?;
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
        // A plan the budget emptied is not "nothing to do".
        if o.selection
            .as_ref()
            .is_none_or(|s| s.bins_planned == 0 || !s.bins_taken.is_empty())
        {
            plan(out, &o.plan)?;
        }
        gain(out, o)?;
        return writeln!(out, "dry run: nothing was written");
    }
    if o.selection.as_ref().is_some_and(|s| s.nothing_worth_doing) {
        return gain(out, o);
    }
    let left_alone = if o.bins_left_alone > 0 {
        format!(
            "; {} left alone: {} wrote no fewer files than {} read, so nothing of them was committed",
            count(o.files_left_alone, "file"),
            count(o.bins_left_alone, "bin"),
            if o.bins_left_alone == 1 { "it" } else { "they" }
        )
    } else {
        String::new()
    };
    match o.version {
        None if o.bins_left_alone > 0 => writeln!(
            out,
            "nothing to do at version {}: every bin written would have left as many files as it read ({} left alone)",
            o.read_version,
            count(o.files_left_alone, "file")
        ),
        None if o.bins_past_deadline > 0 => writeln!(
            out,
            "nothing committed at version {}: no bin started before --max-duration",
            o.read_version
        ),
        None => writeln!(
            out,
            "nothing to do at version {}: {}",
            o.read_version,
            nothing_to_do(&o.plan)
        ),
        Some(version) => writeln!(
            out,
            "committed version {version}{}: {} ({}) -> {} ({}), {}, {} in {}, {:.1}s",
            o.plan
                .clustering
                .as_ref()
                .map_or(String::new(), |c| format!(
                    " ({} on {})",
                    c.layout_name(),
                    c.columns.join(", ")
                )),
            count(o.files_removed, "file"),
            format_size(o.bytes_removed),
            count(o.files_added, "file"),
            format_size(o.bytes_added),
            count(o.rows, "row"),
            count(o.bins, "bin"),
            count(o.partitions, "partition"),
            o.duration.as_secs_f64()
        )
        .and_then(|()| {
            if left_alone.is_empty() {
                Ok(())
            } else {
                writeln!(out, "{}", left_alone.trim_start_matches("; "))
            }
        })
        .and_then(|()| timings(out, &o.timings))
        .and_then(|()| match &o.iceberg {
            Some(iceberg) => writeln!(out, "uniform: {}", iceberg.statement(version)),
            None => Ok(()),
        }),
    }?;
    gain(out, o)
}

/// `1 test query`, `3 training queries`.
fn queries(n: usize, kind: &str) -> String {
    if n == 1 {
        format!("1 {kind} query")
    } else {
        format!("{n} {kind} queries")
    }
}

/// The `time:` line of `optimize`: CPU seconds of each stage that took any, summed over
/// threads, and the run's CPU and wall seconds ([`crate::rewrite::timings`]).
pub fn timings(out: &mut impl Write, t: &crate::rewrite::timings::Timings) -> io::Result<()> {
    let stages: Vec<String> = t
        .stages
        .iter()
        .filter(|s| s.cpu_s >= 0.005 || s.wall_s >= 0.005)
        .map(|s| format!("{} {:.2}", s.stage, s.cpu_s))
        .collect();
    if stages.is_empty() {
        // Nothing took 5 ms: no breakdown to give.
        return writeln!(out, "time: {:.2} s CPU in {:.2} s wall", t.cpu_s, t.wall_s);
    }
    writeln!(
        out,
        "time: {:.2} s CPU in {:.2} s wall; CPU seconds by stage: {}",
        t.cpu_s,
        t.wall_s,
        stages.join(", ")
    )
}

/// What a budget took and left, and what the run bought: the lines after the commit line
/// (or the plan of a dry run).
pub fn gain(out: &mut impl Write, o: &OptimizeOutcome) -> io::Result<()> {
    if let Some(s) = &o.selection {
        selection(out, s, o.read_version)?;
    }
    if o.bins_past_deadline > 0 {
        writeln!(
            out,
            "  left for a later run: {} ({}) not started before --max-duration",
            count(o.bins_past_deadline, "bin"),
            format_size(o.bytes_past_deadline)
        )?;
    }
    if o.bins_regressed > 0 {
        writeln!(
            out,
            "  not committed: {} ({}) whose files would make a run of the workload dearer (their files deleted; --allow-regression commits them)",
            count(o.bins_regressed, "bin"),
            format_size(o.bytes_regressed)
        )?;
    }
    if let Some(f) = &o.figures {
        // One verdict in words: bytes and files scanned, weighed as the budget weighs them.
        let (before, after) = (f.before.cost(), f.after.cost());
        let change = if before > 0.0 {
            (after - before) / before
        } else {
            0.0
        };
        let verdict = if change <= -0.005 {
            format!("{} cheaper", percent(-change))
        } else if change >= 0.005 {
            format!("{} dearer", percent(change))
        } else {
            "about the same cost".to_string()
        };
        writeln!(
            out,
            "per run of {} ({}): files scanned {:.1} -> {:.1}, bytes scanned {} -> {}: {verdict}, counting {} per file opened (recorded in the commit)",
            f.measure.words(),
            count(f.runs, "run"),
            f.before.files_scanned,
            f.after.files_scanned,
            format_size(crate::size::whole_bytes(f.before.bytes_scanned)),
            format_size(crate::size::whole_bytes(f.after.bytes_scanned)),
            format_size(crate::gain::DEFAULT_FILE_COST_BYTES),
        )?;
    }
    Ok(())
}

/// What a budget took and left, of a plan of version `version`.
pub fn selection(
    out: &mut (impl Write + ?Sized),
    s: &crate::gain::Selection,
    version: u64,
) -> io::Result<()> {
    {
        let measure = s.measure.map_or("the measure", |m| m.words());
        let share = |x: f64| {
            if s.cost_before > 0.0 {
                percent(x / s.cost_before)
            } else {
                "0.0%".to_string()
            }
        };
        if s.nothing_worth_doing && s.bins_planned == 0 {
            writeln!(
                out,
                "nothing worth doing at version {version}: the plan rewrites nothing (exit code 4 with --min-gain)"
            )?;
        } else if s.nothing_worth_doing {
            writeln!(
                out,
                "nothing worth doing at version {version}: the planned bins would save {} of the table's scan cost per run of {measure}, below --min-gain (exit code 4)",
                share(s.gain_available)
            )?;
        } else {
            writeln!(
                out,
                "budget: took {} of {} planned ({} of {}), expected to save {} of the table's scan cost per run of {measure} ({} of what the whole plan saves)",
                count(s.bins_taken.len() as u64, "bin"),
                s.bins_planned,
                format_size(s.bytes_taken),
                format_size(s.bytes_planned),
                share(s.expected_gain),
                if s.gain_available > 0.0 {
                    percent(s.expected_gain / s.gain_available)
                } else {
                    "the plan saves nothing".to_string()
                }
            )?;
        }
        if s.bins_over_budget > 0 {
            writeln!(
                out,
                "  left for a later run: {} ({}) over --max-rewrite-bytes",
                count(s.bins_over_budget, "bin"),
                format_size(s.bytes_over_budget)
            )?;
        }
        if s.bins_below_gain > 0 && !s.nothing_worth_doing {
            writeln!(
                out,
                "  not run: {} ({}) saving less than --min-gain",
                count(s.bins_below_gain, "bin"),
                format_size(s.bytes_below_gain)
            )?;
        }
    }
    Ok(())
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
        "bins_left_alone": o.bins_left_alone,
        "files_left_alone": o.files_left_alone,
        "curve": o.plan.clustering.as_ref().map(|c| c.layout_name()),
        "columns": o.plan.clustering.as_ref().map(|c| c.columns.clone()),
        "duration_ms": u64::try_from(o.duration.as_millis()).unwrap_or(u64::MAX),
        "metrics": o.metrics,
        "checkpoint": o.checkpoint,
        "nothing_worth_doing": o.selection.as_ref().is_some_and(|s| s.nothing_worth_doing),
        "bins_regressed": o.bins_regressed,
        "bytes_regressed": o.bytes_regressed,
        "selection": o.selection,
        "bins_past_deadline": o.bins_past_deadline,
        "bytes_past_deadline": o.bytes_past_deadline,
        "figures": o.figures,
        "timings": timings_json(&o.timings),
        "iceberg": o.iceberg,
        // The work order (`plan`'s document) when the run kept it, else the plan.
        "plan": o.work_order.as_ref().map_or_else(
            || serde_json::to_value(&o.plan).unwrap_or(Value::Null),
            |order| serde_json::to_value(order).unwrap_or(Value::Null),
        ),
    })
}

/// The warning of a clustering run that writes too few files for min/max skipping
/// ([`crate::optimize::FewFiles`]), with the target that would write enough.
pub fn few_files(out: &mut impl Write, f: &crate::optimize::FewFiles) -> io::Result<()> {
    let per_partition = if f.partitions > 1 {
        format!(" in {}", count(f.partitions, "partition"))
    } else {
        String::new()
    };
    let advice = match f.suggested_target_file_bytes {
        Some(target) => format!(
            "--target-size {} would write about {}{}",
            crate::size::exact_size(target),
            count(
                (f.bytes / f.partitions.max(1)).div_ceil(target.max(1)),
                "file"
            ),
            if f.partitions > 1 {
                " per partition"
            } else {
                ""
            }
        ),
        None => "the table is too small for clustering to skip files: at the smallest target it would still write fewer than 4 files per partition".to_string(),
    };
    writeln!(
        out,
        "warning: {} ({}){per_partition} at a target of {}: with fewer than {} files per partition, min/max skipping has little to skip, so this layout buys little; {advice}",
        count(f.files, "file"),
        format_size(f.bytes),
        format_size(f.target_file_bytes),
        crate::optimize::MIN_FILES_FOR_SKIPPING,
    )
}

/// `optimize --json`'s `timings`: `{"wall_s", "cpu_s", "stages": {NAME: {"wall_s",
/// "cpu_s"}}}`, seconds rounded to milliseconds (a stage's wall seconds are summed over
/// threads: see [`crate::rewrite::timings`]).
pub fn timings_json(t: &crate::rewrite::timings::Timings) -> Value {
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    let mut stages = serde_json::Map::new();
    for s in &t.stages {
        stages.insert(
            s.stage.to_string(),
            json!({"wall_s": round(s.wall_s), "cpu_s": round(s.cpu_s)}),
        );
    }
    json!({"wall_s": round(t.wall_s), "cpu_s": round(t.cpu_s), "stages": stages})
}

fn percent(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// A skipping share, or "-" when no predicate was evaluated.
fn share(x: f64, queries: usize) -> String {
    if queries == 0 {
        "-".to_string()
    } else {
        percent(x)
    }
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

fn workload_line(out: &mut impl Write, r: &LayoutReport) -> io::Result<()> {
    writeln!(
        out,
        "workload   {} predicates per column ({} equality, {} ranges over {} of rows), seed {}, drawn from version {}'s stats",
        r.queries,
        r.queries / 2,
        r.queries - r.queries / 2,
        percent(r.selectivity),
        r.seed,
        r.workload_version
    )
}

fn table_line(out: &mut impl Write, r: &LayoutReport) -> io::Result<()> {
    writeln!(
        out,
        "version {:<6} {} ({}), {}{}; {} within 20% of the target {}",
        r.version,
        count(r.files, "file"),
        format_size(r.bytes),
        count(r.rows, "row"),
        if r.files_without_row_count > 0 {
            format!(
                " (+ {} without row counts)",
                count(r.files_without_row_count, "file")
            )
        } else {
            String::new()
        },
        count(r.files_near_target, "file"),
        format_size(r.target_file_bytes)
    )
}

/// Text form of `report`.
pub fn report(out: &mut impl Write, r: &LayoutReport) -> io::Result<()> {
    writeln!(out, "table      {}", r.table)?;
    selected_line(out, r)?;
    table_line(out, r)?;
    workload_line(out, r)?;
    writeln!(
        out,
        "\n{:<28} {:>6} {:>9} {:>6} {:>6}   {:>15} {:>15}",
        "column", "stats", "depth avg", "max", "span", "range skip", "equality skip"
    )?;
    for c in &r.columns {
        writeln!(
            out,
            "{:<28} {:>6} {:>9} {:>6} {:>6}   {:>6} / {:<6} {:>6} / {:<6}",
            c.column,
            percent(c.stats_fraction),
            opt(c.overlap_depth_avg, 1),
            c.overlap_depth_max
                .map_or_else(|| "-".into(), |m| m.to_string()),
            opt(c.span_avg, 3),
            share(c.range.skipped_files_fraction_avg, c.range.queries),
            share(c.range.ideal_skipped_files_fraction_avg, c.range.queries),
            share(c.equality.skipped_files_fraction_avg, c.equality.queries),
            share(
                c.equality.ideal_skipped_files_fraction_avg,
                c.equality.queries
            ),
        )?;
    }
    writeln!(
        out,
        "(stats: share of files with min/max stats for the column
 depth: how many files' min/max ranges hold a value, on average (max: the most); 1 is no overlap, lower is better
 span: the share of the column's range one file covers, lower is better
 skip: average share of files min/max pruning skips, higher is better / the ideal: as many files sorted on that column alone)"
    )?;
    if !r.conjunctions.is_empty() {
        writeln!(out, "\nconjunctions of two ranges       skip / ideal")?;
        for c in &r.conjunctions {
            writeln!(
                out,
                "  {:<30} {:>6} / {:<6}",
                c.columns.join(" AND "),
                percent(c.skipping.skipped_files_fraction_avg),
                percent(c.skipping.ideal_skipped_files_fraction_avg)
            )?;
        }
    }
    predicates(out, r)
}

fn predicates(out: &mut impl Write, r: &LayoutReport) -> io::Result<()> {
    if r.predicates.is_empty() {
        return Ok(());
    }
    writeln!(out, "\npredicates (version {})", r.version)?;
    for p in &r.predicates {
        writeln!(
            out,
            "  scans {:>6} files ({:>10}), skips {:>6} ({:>10})  {}",
            p.files_scanned,
            format_size(p.bytes_scanned),
            p.files_skipped,
            format_size(p.bytes_skipped),
            p.predicate
        )?;
    }
    Ok(())
}

/// The `--where` line of a report restricted to the files a predicate selects.
fn selected_line(out: &mut impl Write, r: &LayoutReport) -> io::Result<()> {
    match &r.selected_by {
        Some(s) => writeln!(
            out,
            "where      {} (version {}): {}",
            s.predicate,
            r.version,
            predicate_files(&s.files)
        ),
        None => Ok(()),
    }
}

/// Text form of `report --compare` and of the end of `optimize`.
pub fn comparison(out: &mut impl Write, c: &ReportComparison) -> io::Result<()> {
    writeln!(out, "table      {}", c.after.table)?;
    selected_line(out, &c.before)?;
    selected_line(out, &c.after)?;
    table_line(out, &c.before)?;
    table_line(out, &c.after)?;
    if c.after.columns.is_empty() {
        predicates(out, &c.before)?;
        return predicates(out, &c.after);
    }
    workload_line(out, &c.after)?;
    writeln!(
        out,
        "\n{:<28} {:>17} {:>15} {:>23} {:>23}  skipping",
        "column", "depth avg", "span", "range skip (ideal)", "equality skip (ideal)"
    )?;
    for a in &c.after.columns {
        let Some(b) = c.before.columns.iter().find(|b| b.column == a.column) else {
            writeln!(
                out,
                "{:<28} (not in version {})",
                a.column, c.before.version
            )?;
            continue;
        };
        writeln!(
            out,
            "{:<28} {:>7} -> {:<7} {:>6} -> {:<6} {:>6} -> {:>6} ({:>6}) {:>6} -> {:>6} ({:>6})  {}",
            a.column,
            opt(b.overlap_depth_avg, 1),
            opt(a.overlap_depth_avg, 1),
            opt(b.span_avg, 3),
            opt(a.span_avg, 3),
            percent(b.range.skipped_files_fraction_avg),
            percent(a.range.skipped_files_fraction_avg),
            percent(a.range.ideal_skipped_files_fraction_avg),
            percent(b.equality.skipped_files_fraction_avg),
            percent(a.equality.skipped_files_fraction_avg),
            percent(a.equality.ideal_skipped_files_fraction_avg),
            verdict(
                b.range.skipped_files_fraction_avg + b.equality.skipped_files_fraction_avg,
                a.range.skipped_files_fraction_avg + a.equality.skipped_files_fraction_avg
            ),
        )?;
    }
    for (b, a) in c.before.conjunctions.iter().zip(&c.after.conjunctions) {
        writeln!(
            out,
            "{:<28} {:>49} {:>6} -> {:>6} ({:>6})",
            a.columns.join(" AND "),
            "",
            percent(b.skipping.skipped_files_fraction_avg),
            percent(a.skipping.skipped_files_fraction_avg),
            percent(a.skipping.ideal_skipped_files_fraction_avg),
        )?;
    }
    writeln!(out, "{COMPARISON_LEGEND}")?;
    predicates(out, &c.before)?;
    predicates(out, &c.after)
}

/// What the columns of a before/after report mean, printed under it.
const COMPARISON_LEGEND: &str = "\
(depth: how many files' min/max ranges hold a value of the column, on average; 1 is no overlap, lower is better
 span: the share of the column's range one file covers, lower is better
 skip: the share of files min/max pruning skips for generated range and equality predicates, higher is better;
       in parentheses the ideal: as many files sorted on that column alone
 skipping: better, worse or the same, by range and equality skip together)";

/// `better`, `worse` or `same`: skipping before and after (shares of files skipped,
/// higher is better), the same within half a percentage point.
fn verdict(before: f64, after: f64) -> &'static str {
    if after > before + 0.005 {
        "better"
    } else if after < before - 0.005 {
        "worse"
    } else {
        "same"
    }
}

/// Text form of `verify`.
pub fn verify(out: &mut impl Write, r: &VerifyReport) -> io::Result<()> {
    writeln!(
        out,
        "version {:<6} {}, fingerprint {}",
        r.version_a,
        count(r.rows_a, "row"),
        r.fingerprint_a
    )?;
    writeln!(
        out,
        "version {:<6} {}, fingerprint {}",
        r.version_b,
        count(r.rows_b, "row"),
        r.fingerprint_b
    )?;
    if r.equal {
        writeln!(out, "equal: both versions hold the same rows")?;
    } else {
        writeln!(
            out,
            "DIFFERENT: the versions do not hold the same rows; partitions that differ: {}",
            if r.partitions_differing.is_empty() {
                "(none alone; the difference spans partitions)".to_string()
            } else {
                r.partitions_differing.join(", ")
            }
        )?;
    }
    for d in &r.duplicates {
        if d.duplicated_keys == 0 {
            writeln!(
                out,
                "unique: version {} has no two rows with the same ({})",
                d.version,
                d.columns.join(", ")
            )?;
        } else {
            writeln!(
                out,
                "DUPLICATES in version {}: {} combinations of ({}) held by more than one row ({} extra rows), e.g.:",
                d.version,
                d.duplicated_keys,
                d.columns.join(", "),
                d.extra_rows
            )?;
            for example in &d.examples {
                writeln!(out, "  {} x {}", example.key, example.rows)?;
            }
        }
    }
    Ok(())
}

/// Text form of `sweep`: one row per combination, Pareto-best marked with `*`.
pub fn sweep(out: &mut impl Write, r: &SweepReport) -> io::Result<()> {
    writeln!(
        out,
        "table      {} (version {}), {} rows, {}",
        r.table,
        r.version,
        r.rows,
        format_size(r.bytes)
    )?;
    if let Some(s) = &r.selected_by {
        writeln!(
            out,
            "where      {}: {} (the rows and bytes above are theirs)",
            s.predicate,
            predicate_files(&s.files)
        )?;
    }
    if r.estimated {
        writeln!(
            out,
            "estimated  files and their stats computed from the rows, not built: sizes follow the measured output ratio"
        )?;
    }
    if r.sample_fraction < 1.0 {
        writeln!(
            out,
            "sample     {:.4} of the rows: files are planned on the full table, so file counts match it; sizes and bytes are the sample's (about target x {:.4} per file)",
            r.sample_fraction, r.sample_fraction
        )?;
    }
    writeln!(
        out,
        "workload   {} predicates per combination on {} ({})\n",
        r.combinations.first().map_or(0, |c| c.queries),
        if r.columns.is_empty() {
            "-".to_string()
        } else {
            r.columns.join(", ")
        },
        if r.generated_workload {
            "generated from the first layout"
        } else {
            "from --predicates"
        }
    )?;
    writeln!(
        out,
        "  {:<40} {:>10} {:>7} {:>10} {:>10} {:>10} {:>12} {:>12} {:>13} {:>13} {:>8}",
        "layout",
        "target",
        "files",
        "mean",
        "p10",
        "p90",
        "files/query",
        "bytes/query",
        "update 0.1%",
        "update 1%",
        "build s"
    )?;
    for c in &r.combinations {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "display"
        )]
        let scanned = c.bytes_scanned_avg as u64;
        let build_s = std::time::Duration::from_millis(c.build_ms).as_secs_f64();
        writeln!(
            out,
            "{} {:<40} {:>10} {:>7} {:>10} {:>10} {:>10} {:>12.1} {:>12} {:>13} {:>13} {:>8.1}",
            if c.pareto { "*" } else { " " },
            c.layout,
            format_size(c.target_file_bytes),
            c.files,
            format_size(c.mean_file_bytes),
            format_size(c.p10_file_bytes),
            format_size(c.p90_file_bytes),
            c.files_scanned_avg,
            format_size(scanned),
            format_size(c.rewrite_bytes_0_1pct),
            format_size(c.rewrite_bytes_1pct),
            build_s
        )?;
    }
    writeln!(
        out,
        "\n* Pareto-best: no other combination has as few files, scans as few bytes and rewrites as few bytes for 1% of rows, and fewer in one.\n  update: bytes of the files an UPDATE/MERGE of that share of rows (chosen at random) would rewrite.\n  swept in {:.1}s",
        std::time::Duration::from_millis(r.duration_ms).as_secs_f64()
    )
}

/// Text form of `vacuum`: one line per file on a dry run, then the total.
pub fn vacuum(out: &mut impl Write, r: &crate::vacuum::VacuumReport) -> io::Result<()> {
    if r.dry_run {
        for file in &r.files {
            writeln!(out, "{}  {}", format_size(file.size_bytes), file.path)?;
        }
    }
    writeln!(
        out,
        "{} {} ({}) of {} at version {}, retention {} hours (the table's: {})",
        if r.dry_run { "would delete" } else { "deleted" },
        count(r.files.len() as u64, "file"),
        format_size(r.bytes),
        r.table,
        r.version,
        r.retention_hours,
        r.table_retention_hours
    )?;
    match &r.iceberg {
        Some(iceberg) => writeln!(
            out,
            "uniform: {}; {}metadata/ is Iceberg's and was left alone",
            iceberg.statement(r.version),
            if r.iceberg_versions_kept.is_empty() {
                String::new()
            } else {
                format!(
                    "the files of version {} were kept for Iceberg readers (the current Iceberg metadata file and the one before it name them); ",
                    r.iceberg_versions_kept
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(" and ")
                )
            }
        ),
        None => Ok(()),
    }
}

/// Text form of `history`: one aligned row per OPTIMIZE run, newest first; `-` where the
/// commit does not say.
pub fn history(out: &mut impl Write, h: &History) -> io::Result<()> {
    writeln!(out, "table      {}", h.table)?;
    if h.runs.is_empty() {
        return writeln!(out, "no OPTIMIZE run in the log");
    }
    let count = |n: Option<u64>| n.map_or_else(|| "-".to_string(), |n| n.to_string());
    let size = |n: Option<u64>| n.map_or_else(|| "-".to_string(), format_size);
    let header = [
        "version",
        "read version",
        "timestamp (UTC)",
        "operation",
        "curve",
        "columns",
        "files removed",
        "files added",
        "bytes removed",
        "bytes added",
        "files scanned/run",
        "bytes scanned/run",
        "engine",
    ];
    let rows: Vec<[String; 13]> = h
        .runs
        .iter()
        .map(|r| {
            [
                r.version.to_string(),
                count(r.read_version),
                r.timestamp.clone().unwrap_or_else(|| "-".into()),
                if r.auto {
                    format!("{} (auto)", r.operation)
                } else {
                    r.operation.clone()
                },
                r.curve.clone().unwrap_or_else(|| "-".into()),
                if r.clustering_columns.is_empty() {
                    "-".into()
                } else {
                    r.clustering_columns.join(",")
                },
                count(r.files_removed),
                count(r.files_added),
                size(r.bytes_removed),
                size(r.bytes_added),
                r.gain.as_ref().map_or_else(
                    || "-".into(),
                    |g| {
                        format!(
                            "{:.1} -> {:.1}",
                            g.before.files_scanned, g.after.files_scanned
                        )
                    },
                ),
                r.gain.as_ref().map_or_else(
                    || "-".into(),
                    |g| {
                        format!(
                            "{} -> {}",
                            format_size(crate::size::whole_bytes(g.before.bytes_scanned)),
                            format_size(crate::size::whole_bytes(g.after.bytes_scanned))
                        )
                    },
                ),
                r.engine_info.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // Numbers right-aligned, text left-aligned; the last column unpadded.
    let right = [
        true, true, false, false, false, false, true, true, true, true, true, true, false,
    ];
    let line = |out: &mut dyn Write, cells: &[&str]| -> io::Result<()> {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            let pad = widths[i].saturating_sub(cell.chars().count());
            if right[i] {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            }
        }
        writeln!(out, "{text}")
    };
    line(out, &header)?;
    for row in &rows {
        line(out, &row.each_ref().map(String::as_str))?;
    }
    if let Some(measures) = measures_legend(h) {
        writeln!(out, "{measures}")?;
    }
    Ok(())
}

/// The legend of `history`'s scanned columns: what each run was measured on; `None` when no
/// run recorded figures.
fn measures_legend(h: &History) -> Option<String> {
    let mut seen: Vec<&'static str> = Vec::new();
    for run in &h.runs {
        if let Some(g) = &run.gain
            && !seen.contains(&g.measure.words())
        {
            seen.push(g.measure.words());
        }
    }
    (!seen.is_empty()).then(|| {
        format!(
            "scanned/run: before -> after the run, per run of what it was measured on ({})",
            seen.join("; ")
        )
    })
}

/// The decay of the layout since the last layout run (`report --decay`).
pub fn decay(out: &mut impl Write, d: Option<&crate::history::Decay>) -> io::Result<()> {
    let Some(d) = d else {
        return writeln!(
            out,
            "decay: no layout run of delta-layout recorded what it bought in the log (optimize records it)"
        );
    };
    writeln!(
        out,
        "decay since the layout run of version {} ({}, {}), per run of {} ({}):",
        d.run_version,
        d.run_timestamp.as_deref().unwrap_or("-"),
        d.layout,
        d.measure.words(),
        count(d.runs, "run"),
    )?;
    writeln!(
        out,
        "  files scanned  {:.1} after the run -> {:.1} now ({:+.1}%)",
        d.after_run.files_scanned,
        d.now.files_scanned,
        d.files_scanned_growth * 100.0
    )?;
    writeln!(
        out,
        "  bytes scanned  {} after the run -> {} now ({:+.1}%)",
        format_size(crate::size::whole_bytes(d.after_run.bytes_scanned)),
        format_size(crate::size::whole_bytes(d.now.bytes_scanned)),
        d.bytes_scanned_growth * 100.0
    )?;
    writeln!(
        out,
        "  written since  {} ({}) in {} since the run",
        count(d.files_since, "file"),
        format_size(d.bytes_since),
        count(d.version - d.run_version, "version"),
    )?;
    match (d.restore_bytes, d.restore_bins) {
        (Some(bytes), Some(bins)) => writeln!(
            out,
            "  to restore     the same run would rewrite {} in {} now (bins an earlier budget left included)",
            format_size(bytes),
            count(bins, "bin")
        ),
        _ => writeln!(
            out,
            "  to restore     unknown: {}",
            d.restore_unknown.as_deref().unwrap_or("-")
        ),
    }
}

/// Text summary of a work order (`plan`), for standard error.
pub fn work_order(
    out: &mut dyn Write,
    o: &crate::workorder::WorkOrder,
    files: usize,
) -> io::Result<()> {
    let bins = o.plan.bins().count() as u64;
    if o.plan.is_empty() {
        return writeln!(
            out,
            "run {} of {} (version {}): nothing to do: {}",
            o.plan.run_id,
            o.table.uri,
            o.table.version,
            nothing_to_do(&o.plan)
        );
    }
    writeln!(
        out,
        "run {} of {} (version {}): {} in {}, {} ({}) to rewrite; bins {}",
        o.plan.run_id,
        o.table.uri,
        o.table.version,
        count(bins, "bin"),
        count(o.plan.partitions.len() as u64, "partition"),
        count(o.plan.num_input_files() as u64, "file"),
        format_size(o.plan.input_bytes()),
        id_ranges(&o.bin_ids()),
    )?;
    if !o.shards.is_empty() {
        writeln!(
            out,
            "{} input files in {} beside the work order ({} to {})",
            files,
            count(o.shards.len() as u64, "shard"),
            o.shards[0].name,
            o.shards[o.shards.len() - 1].name
        )?;
    }
    Ok(())
}

/// `1-4,7,9-10`: ids as ranges.
fn id_ranges(ids: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            ids[i].to_string()
        } else {
            format!("{}-{}", ids[i], ids[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Text form of `commit`.
pub fn work_commit(out: &mut impl Write, c: &crate::workorder::CommitOutcome) -> io::Result<()> {
    if c.versions.is_empty() {
        writeln!(
            out,
            "run {} of {}: nothing committed by this step",
            c.run_id, c.table
        )?;
    } else {
        writeln!(
            out,
            "run {} of {}: committed {} in {} (versions {}): {} ({}) -> {} ({}), {}",
            c.run_id,
            c.table,
            count(c.bins_committed.len() as u64, "bin"),
            count(c.versions.len() as u64, "commit"),
            c.versions
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            count(c.files_removed, "file"),
            format_size(c.bytes_removed),
            count(c.files_added, "file"),
            format_size(c.bytes_added),
            count(c.rows, "row"),
        )?;
    }
    if !c.bins_already_committed.is_empty() {
        writeln!(
            out,
            "already committed by an earlier commit of this run: bins {}",
            id_ranges(&c.bins_already_committed)
        )?;
    }
    for dropped in &c.bins_dropped {
        writeln!(
            out,
            "bin {} dropped: {}; its files were deleted",
            dropped.bin_id, dropped.reason
        )?;
    }
    if !c.bins_left_alone.is_empty() {
        writeln!(
            out,
            "left alone: bins {} wrote no fewer files than they read; nothing of them was committed and their input files stay",
            id_ranges(&c.bins_left_alone)
        )?;
    }
    if !c.bins_without_result.is_empty() {
        writeln!(
            out,
            "no result given for bins {}: not committed (their files, if any, are kept)",
            id_ranges(&c.bins_without_result)
        )?;
    }
    if !c.bins_waiting.is_empty() {
        writeln!(
            out,
            "results given for bins {}, but other bins of their clustering scope have none: not committed yet (their files are kept)",
            id_ranges(&c.bins_waiting)
        )?;
    }
    if c.files_deleted > 0 {
        writeln!(
            out,
            "deleted {} of this run that no commit refers to",
            count(c.files_deleted, "file")
        )?;
    }
    Ok(())
}

/// How the target size was chosen: `--target-size`, `delta.targetFileSize` or `autotuned`.
pub fn target_source(source: crate::plan::TargetSource) -> &'static str {
    use crate::plan::TargetSource;
    match source {
        TargetSource::Option => "--target-size",
        TargetSource::TableProperty => crate::table::PROP_TARGET_FILE_SIZE,
        TargetSource::Autotuned => "autotuned",
    }
}

/// How a run keeps a partition's layout up to date, in words (`optimize --dry-run`).
pub fn upkeep(u: &crate::plan::cluster::Upkeep) -> String {
    use crate::plan::cluster::CubeFate;
    let fate = |f: CubeFate, word: &str| {
        let (n, bytes) = u.count(f);
        format!("{n} {word} ({})", format_size(bytes))
    };
    format!(
        "incremental: {} new ({}); cubes {}, {} (larger than what merges before them), {} (apart from the rows merged), {} (--cube-size); rewrites {} for {} new",
        count(u.new_files as u64, "file"),
        format_size(u.new_bytes),
        fate(CubeFate::Merged, "merged"),
        fate(CubeFate::Kept, "kept"),
        fate(CubeFate::Apart, "apart"),
        fate(CubeFate::Sealed, "sealed"),
        format_size(u.new_bytes + u.merged_bytes()),
        format_size(u.new_bytes)
    )
}

/// Why a plan is empty.
pub fn nothing_to_do(plan: &crate::plan::Plan) -> String {
    if let Some(files) = &plan.predicate_files
        && files.selected == 0
    {
        format!(
            "the --where predicate selected no file ({})",
            predicate_files(files)
        )
    } else if plan.num_partitions_selected == 0 && plan.predicate.is_some() {
        "the --where predicate matched no partition".to_string()
    } else if plan.clustering.is_some() {
        format!(
            "every selected partition ({}) is already clustered this way",
            plan.num_partitions_selected
        )
    } else {
        let left = if plan.clustered_files_left > 0 {
            format!(
                " ({} of clustering runs left alone; --full includes them)",
                count(plan.clustered_files_left as u64, "small file")
            )
        } else {
            String::new()
        };
        format!(
            "no selected partition ({}) has two or more small files that would write fewer files together, or a file with many deleted rows{left}",
            plan.num_partitions_selected
        )
    }
}

/// How a predicate over data columns selected files, in words.
fn predicate_files(files: &crate::plan::PredicateFiles) -> String {
    let mut text = format!(
        "{} selected by their stats, {} ruled out",
        count(files.selected as u64, "file"),
        files.ruled_out
    );
    if files.without_stats > 0 {
        text.push_str(&format!(
            ", {} without stats for its columns {}",
            files.without_stats,
            if files.without_stats_included {
                "included (--where-include-unknown)"
            } else {
                "left out (--where-include-unknown includes them)"
            }
        ));
    }
    text
}

/// Text form of a plan (`optimize --dry-run`).
pub fn plan(out: &mut impl Write, plan: &crate::plan::Plan) -> io::Result<()> {
    writeln!(
        out,
        "plan for version {}: target file size {} ({}), candidates below {} or over {:.0}% deleted rows",
        plan.table_version,
        format_size(plan.target_file_bytes),
        target_source(plan.target_source),
        format_size(plan.min_file_bytes),
        plan.max_deleted_ratio * 100.0
    )?;
    if let Some(p) = &plan.predicate {
        match &plan.predicate_files {
            Some(files) => writeln!(out, "where {p}: {}", predicate_files(files))?,
            None => writeln!(out, "where {p}")?,
        }
    }
    if let Some(c) = &plan.clustering {
        writeln!(
            out,
            "cluster along a {} curve on {}",
            c.layout_name(),
            c.columns.join(", ")
        )?;
    }
    if plan.clustered_files_left > 0 {
        writeln!(
            out,
            "left alone: {} written by a clustering run (ZCUBE_ID tags); compacting them with other files would undo it (--full includes them)",
            count(plan.clustered_files_left as u64, "small file")
        )?;
    }
    if plan.is_empty() {
        return writeln!(out, "nothing to do: {}", nothing_to_do(plan));
    }
    for partition in &plan.partitions {
        let files: usize = partition.bins.iter().map(|b| b.files.len()).sum();
        let bytes: u64 = partition.bins.iter().map(|b| b.input_bytes).sum();
        let outputs: u64 = partition.bins.iter().map(|b| b.expected_output_files).sum();
        let output_bytes: u64 = partition.bins.iter().map(|b| b.expected_output_bytes).sum();
        writeln!(
            out,
            "  {}: {}, {}, {}, about {} of {}{}",
            partition.display,
            count(partition.bins.len() as u64, "bin"),
            count(files as u64, "input file"),
            format_size(bytes),
            count(outputs, "output file"),
            format_size(output_bytes / outputs.max(1)),
            if outputs > 1 {
                format!(" each ({} in all)", format_size(output_bytes))
            } else {
                String::new()
            }
        )?;
        if let Some(u) = &partition.upkeep {
            writeln!(out, "    {}", upkeep(u))?;
        }
    }
    writeln!(
        out,
        "total: {}, {}, {}; written at about {:.0}% of the live input bytes",
        count(plan.bins().count() as u64, "bin"),
        count(plan.num_input_files() as u64, "input file"),
        format_size(plan.input_bytes()),
        plan.output_ratio * 100.0
    )
}

/// An average byte count (a float) as a size.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "an average of byte counts, rounded, never negative"
)]
fn approx_size(bytes: f64) -> String {
    format_size(bytes.round().max(0.0) as u64)
}

/// A workload score: per run, files, bytes and rows scanned, and the heaviest queries.
pub fn workload_score(
    out: &mut impl Write,
    title: &str,
    w: &crate::report::score::WorkloadScore,
) -> io::Result<()> {
    writeln!(
        out,
        "{title}: {} queries, {} runs; per run {:.1} of {} files scanned ({} skipped), {} of {} ({} skipped), {:.0} rows",
        w.queries,
        w.runs,
        w.files_scanned,
        w.files,
        percent(w.files_skipped),
        approx_size(w.bytes_scanned),
        format_size(w.bytes),
        percent(w.bytes_skipped),
        w.rows_scanned
    )?;
    for tree in &w.cut_trees {
        writeln!(
            out,
            "  cut tree {}: {} files over {} leaves",
            tree.tree, tree.files, tree.leaves
        )?;
    }
    let mut heaviest: Vec<&crate::report::score::QueryScore> = w.per_query.iter().collect();
    heaviest.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.predicate.cmp(&b.predicate)));
    for q in heaviest.iter().take(10) {
        writeln!(
            out,
            "  {:>7} runs  {:>6} files  {:>10}  {}",
            q.weight,
            q.files_scanned,
            format_size(q.bytes_scanned),
            q.predicate
        )?;
    }
    if heaviest.len() > 10 {
        writeln!(
            out,
            "  ... {} more queries (--json lists them all)",
            heaviest.len() - 10
        )?;
    }
    Ok(())
}

/// Before and after of a run on its workload.
pub fn workload_change(
    out: &mut impl Write,
    before: &crate::report::score::WorkloadScore,
    after: &crate::report::score::WorkloadScore,
) -> io::Result<()> {
    writeln!(
        out,
        "workload   {} queries, {} runs: files scanned per run {:.1} of {} -> {:.1} of {} ({} -> {} skipped); bytes {} -> {} ({} -> {} skipped)",
        after.queries,
        after.runs,
        before.files_scanned,
        before.files,
        after.files_scanned,
        after.files,
        percent(before.files_skipped),
        percent(after.files_skipped),
        approx_size(before.bytes_scanned),
        approx_size(after.bytes_scanned),
        percent(before.bytes_skipped),
        percent(after.bytes_skipped),
    )
}

/// Candidates the `recommend` text lists without `--all` (the pick too, wherever it ranks).
pub const RECOMMEND_SHOWN_CANDIDATES: usize = 5;

/// Text form of `recommend`: the table, the workload split, the columns, the best `shown`
/// candidates (and the pick, wherever it ranks), then the pick.
pub fn recommend(
    out: &mut impl Write,
    r: &crate::recommend::Recommendation,
    shown: usize,
) -> io::Result<()> {
    writeln!(
        out,
        "table      {} (version {}), {} files, {}, {} rows",
        r.table,
        r.version,
        r.files,
        format_size(r.bytes),
        r.rows
    )?;
    writeln!(
        out,
        "workload   {} ({}), {} ({}) held out (holdout {}, seed {})",
        queries(r.train_queries, "training"),
        count(r.train_runs, "run"),
        queries(r.test_queries, "test"),
        count(r.test_runs, "run"),
        r.holdout,
        r.seed
    )?;
    if r.sample_fraction < 1.0 {
        writeln!(
            out,
            "estimated  from a sample of {:.4} of the rows (files planned on the full table; bytes scaled to it)",
            r.sample_fraction
        )?;
    }
    if let Some(declared) = &r.declared_clustering_columns {
        writeln!(
            out,
            "clustering the table declares clustering columns {} (liquid clustering): optimize lays it out by a Hilbert curve over them, so that is the layout tried; other columns need ALTER TABLE ... CLUSTER BY",
            declared.join(", ")
        )?;
    }
    writeln!(out, "\ncolumns (training queries)")?;
    // Columns as wide as the longest name, so long (nested) names keep the columns aligned.
    let name_width = r
        .columns
        .iter()
        .map(|c| c.column.chars().count())
        .max()
        .unwrap_or(0)
        .max(32);
    writeln!(
        out,
        "  {:<name_width$} {:>8} {:>12} {:>10}",
        "column", "runs", "selectivity", "score"
    )?;
    for c in &r.columns {
        writeln!(
            out,
            "  {:<name_width$} {:>8} {:>12} {:>10.1}",
            c.column,
            c.runs,
            format!("{:.4}", c.selectivity),
            c.score
        )?;
    }
    writeln!(
        out,
        "\ncandidates, best first (cost per run = bytes scanned + {} per file scanned)",
        format_size(r.file_cost_bytes)
    )?;
    let layout_name = |c: &crate::recommend::Candidate| {
        if c.layout.starts_with("hilbert:") && !c.layout.contains(',') {
            format!("{} (sort)", c.layout)
        } else {
            c.layout.clone()
        }
    };
    // The layout column as wide as the longest layout shown.
    let width = r
        .candidates
        .iter()
        .enumerate()
        .filter(|(i, _)| *i < shown || r.pick == Some(*i))
        .map(|(_, c)| layout_name(c).chars().count())
        .max()
        .unwrap_or(0)
        .max(40);
    writeln!(
        out,
        "  {:<4} {:<width$} {:>9} {:>7} {:>12} {:>12} {:>10} {:>12} {:>10} {:>10}",
        "rank",
        "layout",
        "target",
        "files",
        "files/run",
        "bytes/run",
        "skipped",
        "test files",
        "test skip",
        "rewrite"
    )?;
    let row = |out: &mut dyn Write,
               rank: &str,
               layout: &str,
               target: &str,
               files: u64,
               train: &crate::recommend::Figures,
               test: Option<&crate::recommend::Figures>,
               rewrite: &str|
     -> io::Result<()> {
        writeln!(
            out,
            "  {:<4} {:<width$} {:>9} {:>7} {:>12.1} {:>12} {:>10} {:>12} {:>10} {:>10}",
            rank,
            layout,
            target,
            files,
            train.files_scanned,
            approx_size(train.bytes_scanned),
            percent(train.files_skipped),
            test.map_or("-".to_string(), |t| format!("{:.1}", t.files_scanned)),
            test.map_or("-".to_string(), |t| percent(t.files_skipped)),
            rewrite
        )
    };
    row(
        out,
        "now",
        "(the table as it is)",
        "-",
        r.current.files,
        &r.current.train,
        r.current.test.as_ref(),
        "-",
    )?;
    let mut hidden = 0;
    for (i, c) in r.candidates.iter().enumerate() {
        if i >= shown && r.pick != Some(i) {
            hidden += 1;
            continue;
        }
        row(
            out,
            &(i + 1).to_string(),
            &layout_name(c),
            &format_size(c.target_file_bytes),
            c.files,
            &c.train,
            c.test.as_ref(),
            &format_size(c.rewrite_bytes),
        )?;
    }
    if hidden > 0 {
        writeln!(
            out,
            "  ... and {hidden} more candidate{} (--all lists every one; --json has them all)",
            if hidden == 1 { "" } else { "s" }
        )?;
    }
    recommend_pick(out, r)
}

/// The last lines of the `recommend` text: the pick with its figures and command, or why
/// there is none.
fn recommend_pick(out: &mut impl Write, r: &crate::recommend::Recommendation) -> io::Result<()> {
    let Some((pick, command)) = r
        .pick
        .and_then(|i| r.candidates.get(i))
        .zip(r.command.as_ref())
    else {
        if r.candidates.is_empty() {
            writeln!(
                out,
                "\npick       none: the table has no rows, so there is nothing to lay out"
            )?;
        } else {
            writeln!(
                out,
                "\npick       none: keep the table as it is (no candidate that rewrites files saves {} of its cost per run now; --min-gain)",
                percent(r.min_gain)
            )?;
        }
        return Ok(());
    };
    let now = r.current.test.unwrap_or(r.current.train);
    let then = pick.test.unwrap_or(pick.train);
    writeln!(
        out,
        "\npick       {} at {}: {:.1} files and {} per run on the {} queries, against {:.1} files and {} now",
        pick.layout,
        format_size(pick.target_file_bytes),
        then.files_scanned,
        approx_size(then.bytes_scanned),
        if pick.test.is_some() {
            "test"
        } else {
            "training"
        },
        now.files_scanned,
        approx_size(now.bytes_scanned),
    )?;
    writeln!(out, "command    {command}")?;
    Ok(())
}
