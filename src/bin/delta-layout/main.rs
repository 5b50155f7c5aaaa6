//! The `delta-layout` command: glue between the command line and the library.
//!
//! Exit codes: 0 done (also when there was nothing to do), 2 error. Errors print once to
//! stderr as `delta-layout: <error>: <cause>: ...`.

mod args;
mod config;
mod progress;
mod render;

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser as _;

use args::{Cli, Command};

fn main() -> ExitCode {
    log::set_logger(&progress::LOGGER).ok();
    log::set_max_level(log::LevelFilter::Warn);
    match run() {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("delta-layout: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut stdout = std::io::stdout().lock();
    match cli.command {
        Command::Inspect(args) => {
            let target = config::size("--target-size", args.target_size.as_deref())?;
            let table = runtime.block_on(delta_layout::table::TableView::load(
                &args.table,
                args.version,
            ))?;
            let report = delta_layout::inspect::inspect(&table, target)?;
            if args.json {
                serde_json::to_writer_pretty(&mut stdout, &report)?;
                writeln!(stdout)?;
            } else {
                render::inspect(&mut stdout, &report)?;
            }
        }
        Command::Optimize(args) => {
            let json = args.json;
            let quiet = args.quiet;
            let location = args.table.clone();
            let options = config::optimize_options(args)?;
            let progress: Arc<dyn delta_layout::progress::Progress> =
                progress::BarProgress::new(quiet);
            let outcome = runtime.block_on(delta_layout::optimize::optimize(
                &location, &options, progress,
            ))?;
            if json {
                serde_json::to_writer_pretty(&mut stdout, &render::optimize_json(&outcome))?;
                writeln!(stdout)?;
            } else {
                render::optimize(&mut stdout, &outcome)?;
            }
        }
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}
