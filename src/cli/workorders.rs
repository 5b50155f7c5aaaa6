//! The `plan`, `execute` and `commit` commands: work orders and results as local files or
//! objects in a store ([`workorder::read_document`], [`workorder::write_document`]).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::optimize::OptimizeOptions;
use crate::table::{StorageOptions, TableLocation};
use crate::workorder::{self, CommitOptions, ResultDocument};

use super::args::{CommitArgs, ExecuteArgs, PlanArgs};
use super::{config, progress, render};

/// `plan`: the work order to `--out` (with a summary on `stderr`, unless `--quiet`) or
/// `stdout`.
pub fn plan(
    runtime: &tokio::runtime::Runtime,
    stdout: &mut impl Write,
    stderr: &mut dyn Write,
    location: TableLocation,
    args: &PlanArgs,
) -> anyhow::Result<bool> {
    let options = config::planning_options(&args.planning)?;
    let storage = location.storage_options.clone();
    if let Some(out) = &args.out {
        check_out(out)?;
    }
    let split = workorder::SplitOptions::default().with_max_task_bytes(config::size(
        crate::Setting::TaskSize,
        args.task_size.as_deref(),
    )?);
    let (order, selection) =
        runtime.block_on(workorder::plan_within_budget(location, &options, &split))?;
    if let Some(selection) = &selection
        && !args.quiet
    {
        render::selection(stderr, selection, order.plan.table_version)?;
    }
    match &args.out {
        Some(out) => {
            let written = runtime.block_on(workorder::write_order(
                &order,
                out,
                &storage,
                args.shard_files,
            ))?;
            if !args.quiet {
                render::work_order(stderr, &written, order.files.len())?;
            }
        }
        // One document: shards need a place beside the head.
        None => writeln!(stdout, "{}", order.to_json()?)?,
    }
    Ok(selection.is_some_and(|s| s.nothing_worth_doing))
}

/// `execute`: the result document to `--out` or standard output.
pub fn execute(
    runtime: &tokio::runtime::Runtime,
    stdout: &mut impl Write,
    storage: StorageOptions,
    args: &ExecuteArgs,
    cancel: Arc<AtomicBool>,
) -> anyhow::Result<()> {
    let order = runtime.block_on(workorder::read_order(
        &args.plan,
        &storage,
        (!args.all_bins).then_some(args.bins.as_slice()),
    ))?;
    if let Some(out) = &args.out {
        check_out(out)?;
        let same = |a: &str, b: &str| {
            a == b
                || Path::new(a)
                    .canonicalize()
                    .is_ok_and(|a| Path::new(b).canonicalize().is_ok_and(|b| a == b))
        };
        if same(out, &args.plan) {
            anyhow::bail!(super::words::bad_flag(
                "--out",
                format!("'{out}' is the work order itself")
            ));
        }
    }
    let bins = if args.all_bins {
        order.bin_ids()
    } else {
        args.bins.clone()
    };
    let results = if bins.is_empty() && args.all_bins {
        Vec::new()
    } else {
        let options = config::execution_options(OptimizeOptions::default(), &args.execution)?
            .with_cancel(cancel);
        let progress: Arc<dyn crate::progress::Progress> = progress::BarProgress::new(args.quiet);
        runtime.block_on(workorder::execute(
            &order,
            &bins,
            storage.clone(),
            &options,
            progress,
        ))?
    };
    let json = serde_json::to_string_pretty(&ResultDocument::new(results))?;
    match &args.out {
        Some(out) => runtime.block_on(workorder::write_document(out, &storage, &json))?,
        None => writeln!(stdout, "{json}")?,
    }
    Ok(())
}

/// `commit`: commits the results, prints what it did.
pub fn commit(
    runtime: &tokio::runtime::Runtime,
    stdout: &mut impl Write,
    storage: StorageOptions,
    args: &CommitArgs,
) -> anyhow::Result<()> {
    let order = runtime.block_on(workorder::read_order(&args.plan, &storage, None))?;
    let mut results = Vec::new();
    for location in &args.results {
        let text = runtime.block_on(workorder::read_document(
            location,
            &storage,
            "result document",
        ))?;
        results.extend(ResultDocument::from_json(&text, location)?.results);
    }
    let options = CommitOptions::default().with_batch_bins(args.batch_size);
    let outcome = runtime.block_on(workorder::commit(&order, results, storage, &options))?;
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&outcome)?)?;
    } else if order.plan.is_empty() {
        writeln!(
            stdout,
            "run {} of {}: nothing to do: the plan has no bin ({})",
            outcome.run_id,
            outcome.table,
            render::nothing_to_do(&order.plan)
        )?;
    } else {
        render::work_commit(stdout, &outcome)?;
    }
    // Every bin given was dropped by another writer: nothing wanted was done, which a
    // scheduler must see as it sees `optimize`'s conflicts (exit code 3).
    if let Some(first) = outcome.bins_dropped.first()
        && outcome.bins_committed.is_empty()
        && outcome.bins_already_committed.is_empty()
        && outcome.bins_left_alone.is_empty()
        && outcome.bins_waiting.is_empty()
    {
        return Err(crate::Error::CommitStopped {
            table: outcome.table.clone(),
            version: first.version,
            reason: format!(
                "touched input files of this run: every bin given was dropped ({}; the first: {}), nothing committed; plan again",
                outcome.bins_dropped.len(),
                first.reason
            ),
        }
        .into());
    }
    Ok(())
}

/// Refuses a local output path that cannot be written, before any work is done.
fn check_out(out: &str) -> anyhow::Result<()> {
    if out.contains("://") {
        return Ok(());
    }
    workorder::check_document_path(Path::new(out)).map_err(|message| {
        super::words::bad_flag("--out", format!("'{out}' cannot be written: {message}"))
    })
}
