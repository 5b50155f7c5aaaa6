//! The `plan`, `execute` and `commit` commands: work orders in local files.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use delta_layout::optimize::OptimizeOptions;
use delta_layout::table::{StorageOptions, TableLocation};
use delta_layout::workorder::{self, CommitOptions, ResultDocument, WorkOrder};

use crate::args::{CommitArgs, ExecuteArgs, PlanArgs};
use crate::{config, progress, render};

/// `plan`: the work order to `--out` (with a summary on standard error) or standard output.
pub fn plan(
    runtime: &tokio::runtime::Runtime,
    stdout: &mut impl Write,
    location: TableLocation,
    args: &PlanArgs,
) -> anyhow::Result<()> {
    let options = config::planning_options(&args.planning)?;
    if let Some(out) = &args.out {
        check_writable(out)?;
    }
    let split = workorder::SplitOptions::default()
        .with_max_task_bytes(config::size("--task-size", args.task_size.as_deref())?);
    let order = runtime.block_on(workorder::plan(location, &options, &split))?;
    let json = order.to_json()?;
    match &args.out {
        Some(out) => {
            write_atomically(out, &json)?;
            render::work_order(&mut std::io::stderr(), &order)?;
        }
        None => writeln!(stdout, "{json}")?,
    }
    Ok(())
}

/// `execute`: the result document to `--out` or standard output.
pub fn execute(
    runtime: &tokio::runtime::Runtime,
    stdout: &mut impl Write,
    storage: StorageOptions,
    args: &ExecuteArgs,
    cancel: Arc<AtomicBool>,
) -> anyhow::Result<()> {
    let order = read_order(&args.plan)?;
    if let Some(out) = &args.out {
        check_writable(out)?;
        let same = |a: &Path, b: &Path| {
            a.canonicalize()
                .is_ok_and(|a| b.canonicalize().is_ok_and(|b| a == b))
        };
        if same(out, &args.plan) {
            anyhow::bail!(delta_layout::Error::invalid_option(
                "--out",
                format!("'{}' is the work order itself", out.display())
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
        let progress: Arc<dyn delta_layout::progress::Progress> =
            progress::BarProgress::new(args.quiet);
        runtime.block_on(workorder::execute(
            &order, &bins, storage, &options, progress,
        ))?
    };
    let json = serde_json::to_string_pretty(&ResultDocument::new(results))?;
    match &args.out {
        Some(out) => write_atomically(out, &json)?,
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
    let order = read_order(&args.plan)?;
    let mut results = Vec::new();
    for path in &args.results {
        let text = read(path, "result document")?;
        results.extend(ResultDocument::from_json(&text, &path.display().to_string())?.results);
    }
    let options = CommitOptions::default().with_batch_bins(args.batch_size);
    let outcome = runtime.block_on(workorder::commit(&order, results, storage, &options))?;
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&outcome)?)?;
    } else {
        render::work_commit(stdout, &outcome)?;
    }
    Ok(())
}

fn read(path: &Path, what: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        delta_layout::Error::WorkOrder {
            document: format!("{what} '{}'", path.display()),
            message: format!("cannot be read: {e}"),
        }
        .into()
    })
}

fn read_order(path: &Path) -> anyhow::Result<WorkOrder> {
    let text = read(path, "work order")?;
    Ok(WorkOrder::from_json(&text, &path.display().to_string())?)
}

/// Refuses an output path whose directory does not exist, or that lies in a Delta log,
/// before any work is done.
fn check_writable(path: &Path) -> anyhow::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let in_log = parent
        .canonicalize()
        .is_ok_and(|p| p.components().any(|c| c.as_os_str() == "_delta_log"));
    if in_log {
        anyhow::bail!(delta_layout::Error::invalid_option(
            "--out",
            format!("'{}' is inside a table's _delta_log", path.display())
        ));
    }
    if !parent.is_dir() || path.is_dir() {
        anyhow::bail!(delta_layout::Error::invalid_option(
            "--out",
            format!(
                "'{}' is not a file in an existing directory",
                path.display()
            )
        ));
    }
    Ok(())
}

/// Writes `text` to a temporary file beside `path` and renames it over `path`, so a reader
/// never sees half a document.
fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(parent)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}
