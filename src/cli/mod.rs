//! The `delta-layout` command line as a library (feature `cli`): [`run_cli`] parses the
//! arguments with clap, runs the command on the library's jobs and prints its output. The
//! binary (`src/bin/delta-layout/main.rs`) and the Python package (`python/`) both call it,
//! so they take the same options and print the same documents and messages.
//!
//! Exit codes: 0 done (also when there was nothing to do), 1 `verify` found a difference or
//! duplicates, 2 error (bad input, a refused or damaged table), 3 a concurrent writer
//! conflicted and nothing was committed (safe to retry as is), 130 cancelled (Ctrl-C or
//! SIGTERM; nothing committed, written files deleted). Errors print once to stderr, on one
//! line, as `delta-layout: <error>: <cause>: ...`.

mod args;
mod config;
mod progress;
mod render;
pub use render::RECOMMEND_SHOWN_CANDIDATES;
mod words;
mod workorders;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser as _;

use args::{Cli, Command};

/// Runs the command line `args` (the program name first) in this process: output to
/// `stdout`, the one-line error (if any) to `stderr`; `signals`: Ctrl-C and SIGTERM cancel the
/// run (the binary), or are left to the host (the Python package). Returns the exit code.
pub fn run_cli(
    args: impl IntoIterator<Item = std::ffi::OsString>,
    stdout: &mut dyn std::io::Write,
    stderr: &mut dyn std::io::Write,
    signals: bool,
) -> ExitCode {
    log::set_logger(&progress::LOGGER).ok();
    log::set_max_level(log::LevelFilter::Warn);
    // The runtime, and with it the signal handlers, first of all: a SIGTERM that comes
    // while the arguments are parsed or the table loaded must end the run with 130 too.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = writeln!(stderr, "delta-layout: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let signals = signals.then(|| handle_signals(&runtime));
    run_with(runtime, args, stdout, stderr, signals)
}

/// Cancels a run of [`run_cli_cancellable`] from another thread: the Python package's Ctrl-C.
/// Clones share the run.
#[derive(Clone, Debug, Default)]
pub struct CancelHandle(SignalTarget);

impl CancelHandle {
    /// Asks the run to stop, as Ctrl-C asks the binary. Returns `true` when its command has
    /// started work that cancels (it stops, deletes the files it wrote, commits nothing, and
    /// the run returns exit code 130); `false` when it has not: a command that writes will
    /// cancel as soon as it hands over its flag, before writing anything, and one that only
    /// reads runs on (the caller may stop waiting for it: the table is not touched).
    pub fn cancel(&self) -> bool {
        let Ok(mut target) = self.0.lock() else {
            return false;
        };
        target.requested = true;
        target.flag.as_ref().is_some_and(|flag| {
            flag.store(true, Ordering::SeqCst);
            true
        })
    }
}

/// [`run_cli`] for a host process that owns the signals (the Python package): `handle`
/// cancels the run from another thread ([`CancelHandle::cancel`]). Returns the exit code.
pub fn run_cli_cancellable(
    args: impl IntoIterator<Item = std::ffi::OsString>,
    stdout: &mut dyn std::io::Write,
    stderr: &mut dyn std::io::Write,
    handle: &CancelHandle,
) -> ExitCode {
    log::set_logger(&progress::LOGGER).ok();
    log::set_max_level(log::LevelFilter::Warn);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = writeln!(stderr, "delta-layout: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    run_with(runtime, args, stdout, stderr, Some(handle.0.clone()))
}

/// Runs the parsed-and-run part of [`run_cli`], printing the error line of a failure.
fn run_with(
    runtime: tokio::runtime::Runtime,
    args: impl IntoIterator<Item = std::ffi::OsString>,
    stdout: &mut dyn std::io::Write,
    stderr: &mut dyn std::io::Write,
    signals: Option<SignalTarget>,
) -> ExitCode {
    match run(runtime, args, stdout, stderr, signals) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            // A closed stderr must not turn an error into a panic.
            let _ = writeln!(stderr, "delta-layout: {}", error_line(&err));
            ExitCode::from(exit_code(&err))
        }
    }
}

/// The error as the command prints it: one line, secrets redacted.
fn error_line(err: &anyhow::Error) -> String {
    progress::redact(&words::error(err).unwrap_or_else(|| one_line(err)))
}

/// Exit code for a failed run: 130 cancelled, 3 a concurrent writer conflicted (nothing was
/// committed; the run can be retried as is), 5 the layout would scan more than the table as
/// it is ([`EXIT_LAYOUT_REGRESSION`]), 2 anything else.
fn exit_code(err: &anyhow::Error) -> u8 {
    match err.downcast_ref::<crate::Error>() {
        Some(crate::Error::Cancelled) => 130,
        Some(crate::Error::ConcurrentModification { .. } | crate::Error::CommitStopped { .. }) => 3,
        Some(crate::Error::LayoutRegression { .. }) => EXIT_LAYOUT_REGRESSION,
        _ => 2,
    }
}

/// The error chain on one line: the first line of each cause (some dependencies put a
/// backtrace or a debug dump after a newline), leaving out causes whose text the message
/// before already contains.
fn one_line(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = cause.to_string();
        let first = text.lines().next().unwrap_or("").trim().to_string();
        if first.is_empty() || parts.last().is_some_and(|last| last.contains(&first)) {
            continue;
        }
        parts.push(first);
    }
    parts.join(": ")
}

/// Where the first Ctrl-C or SIGTERM goes: nowhere until a command that can cancel its
/// work hands over its flag ([`cancel_on_signal`]), and the process then exits with 130 at
/// once (nothing was written yet, or the command only reads); after that, the flag.
type SignalTarget = Arc<std::sync::Mutex<Cancellation>>;

/// The state behind a [`SignalTarget`]: the running command's cancel flag once it handed it
/// over, and whether a cancel was asked before that ([`CancelHandle::cancel`]).
#[derive(Debug, Default)]
struct Cancellation {
    flag: Option<Arc<AtomicBool>>,
    requested: bool,
}

/// Installs the Ctrl-C and SIGTERM handlers now (registered on this thread before it
/// returns, so no signal after this call ends the process by its default action) and
/// spawns the task that acts on them: exit 130 at once before a command hands over its
/// cancel flag, else set the flag; a second signal ends the process at once (130).
fn handle_signals(runtime: &tokio::runtime::Runtime) -> SignalTarget {
    let target = SignalTarget::default();
    let _entered = runtime.enter();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut interrupt)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return target;
        };
        let target = target.clone();
        runtime.spawn(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = term.recv() => {}
            }
            let flag = target.lock().ok().and_then(|t| t.flag.clone());
            let Some(flag) = flag else {
                std::process::exit(130);
            };
            flag.store(true, Ordering::SeqCst);
            log::warn!("cancelling: deleting the files written so far (again to stop at once)");
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = term.recv() => {}
            }
            std::process::exit(130);
        });
    }
    #[cfg(not(unix))]
    {
        let target = target.clone();
        runtime.spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                let flag = target.lock().ok().and_then(|t| t.flag.clone());
                let Some(flag) = flag else {
                    std::process::exit(130);
                };
                flag.store(true, Ordering::SeqCst);
            }
        });
    }
    target
}

/// Hands `flag` to the signal handlers ([`handle_signals`]), when this process has them:
/// from now on Ctrl-C and SIGTERM cancel the run through it. Call before the work starts.
fn cancel_on_signal(context: &Context, flag: Arc<AtomicBool>) {
    if let Some(target) = &context.signals
        && let Ok(mut target) = target.lock()
    {
        if target.requested {
            flag.store(true, Ordering::SeqCst);
        }
        target.flag = Some(flag);
    }
}

/// A version error of a second table load names the flag that chose that version.
fn rename_version_option(error: crate::Error, flag: &str) -> anyhow::Error {
    match error {
        crate::Error::InvalidOption {
            option: crate::Setting::Version,
            message,
        } => words::bad_flag(flag, message),
        other => other.into(),
    }
}

/// Checks, before any work, that `--html` can be written and is not inside the table (a
/// page written into `_delta_log` would become a commit).
fn check_html_path(path: &std::path::Path, table: &crate::table::TableView) -> anyhow::Result<()> {
    let bad = |message: String| words::bad_flag("--html", message);
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let parent = parent
        .canonicalize()
        .map_err(|e| bad(format!("cannot write '{}': {e}", path.display())))?;
    if path.is_dir() {
        return Err(bad(format!("'{}' is a directory", path.display())));
    }
    if let Ok(root) = table.location.to_file_path()
        && let Ok(root) = root.canonicalize()
        && parent.starts_with(&root)
    {
        return Err(bad(format!(
            "'{}' is inside the table; write the page elsewhere",
            path.display()
        )));
    }
    Ok(())
}

fn write_html(path: &std::path::Path, page: &str) -> anyhow::Result<()> {
    std::fs::write(path, page)
        .map_err(|e| words::bad_flag("--html", format!("cannot write '{}': {e}", path.display())))
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Splits every column-list option (`--zorder a,b`, repeatable) into names, by the
/// column-name rules: commas inside back quotes belong to the name (`` `a,b` ``).
fn split_column_lists(command: &mut Command) -> anyhow::Result<()> {
    fn split(flag: &str, values: &mut Option<Vec<String>>) -> anyhow::Result<()> {
        if let Some(list) = values.take() {
            let mut names = Vec::new();
            for value in &list {
                names.extend(
                    crate::column::split_list(value).map_err(|m| words::bad_flag(flag, m))?,
                );
            }
            *values = Some(names);
        }
        Ok(())
    }
    match command {
        Command::Inspect(_) | Command::History(_) => Ok(()),
        Command::Optimize(args) => {
            split("--zorder", &mut args.planning.zorder)?;
            split("--hilbert", &mut args.planning.hilbert)?;
            split("--columns", &mut args.columns)
        }
        Command::Report(args) => split("--columns", &mut args.columns),
        Command::Verify(args) => split("--unique", &mut args.unique),
        Command::Sweep(args) => split("--columns", &mut args.columns),
        Command::Plan(args) => {
            split("--zorder", &mut args.planning.zorder)?;
            split("--hilbert", &mut args.planning.hilbert)
        }
        Command::Vacuum(_)
        | Command::Execute(_)
        | Command::Commit(_)
        | Command::Recommend(_)
        | Command::Workload(_) => Ok(()),
    }
}

/// The long options each command takes, as the command line defines them (clap), without
/// their dashes (`zorder`, `target-size`): `(command, options)` per command in definition
/// order, a nested command named with its parent (`workload extract`); the global
/// `storage-option` is under every command. The Python package refuses keyword arguments that
/// are not among them (`TypeError`) before anything runs.
#[must_use]
pub fn command_options() -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut cli = <Cli as clap::CommandFactory>::command();
    cli.build();
    collect_options(&cli, "", &mut out);
    out
}

fn collect_options(command: &clap::Command, prefix: &str, out: &mut Vec<(String, Vec<String>)>) {
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("{prefix}{}", sub.get_name());
        if sub.has_subcommands() {
            collect_options(sub, &format!("{name} "), out);
            continue;
        }
        let options = sub
            .get_arguments()
            .filter(|a| {
                !a.is_hide_set()
                    && !matches!(
                        a.get_action(),
                        clap::ArgAction::Help
                            | clap::ArgAction::HelpShort
                            | clap::ArgAction::HelpLong
                            | clap::ArgAction::Version
                    )
            })
            .filter_map(|a| a.get_long().map(str::to_string))
            .collect();
        out.push((name, options));
    }
}

/// The command reference in Markdown, generated from the command line's own definitions:
/// the top-level help, then each command's usage and long help (`delta-layout CMD --help`),
/// in definition order. `docs/reference.md` is this text; a test fails when it is stale, so
/// no documented option can be missing or invented.
#[must_use]
pub fn reference_markdown() -> String {
    let mut cli = <Cli as clap::CommandFactory>::command().term_width(100);
    cli.build();
    let mut out = String::from(
        "# Command reference\n\n<!-- Generated from the command line's definitions \
         (src/cli/args.rs) by `delta_layout::cli::reference_markdown`; do not edit. \
         Regenerate with `UPDATE_REFERENCE=1 cargo test --test it reference`. -->\n\n\
         Every command and option, as `delta-layout --help` and `delta-layout COMMAND --help` \
         print them. The guide to the commands, with examples, is [commands.md](commands.md).\n",
    );
    let mut sections = Vec::new();
    reference_sections(&mut cli, "delta-layout", &mut sections);
    for (name, help) in sections {
        out.push_str(&format!(
            "\n## `{name}`\n\n```text\n{}\n```\n",
            help.trim_end()
        ));
    }
    out
}

fn reference_sections(command: &mut clap::Command, name: &str, out: &mut Vec<(String, String)>) {
    let help = command.render_long_help().to_string();
    out.push((name.to_string(), help));
    for sub in command
        .get_subcommands_mut()
        .filter(|s| s.get_name() != "help")
    {
        let sub_name = format!("{name} {}", sub.get_name());
        reference_sections(sub, &sub_name, out);
    }
}

/// One line for a clap usage error (its text as `clap::Error`'s `Display` writes it): the
/// error, then each of clap's tips ("a similar argument exists: '--zorder'"), then
/// "(see --help)". The usage and "For more information" lines are left out.
fn usage_error_line(text: &str) -> String {
    let mut error: Vec<&str> = Vec::new();
    let mut tips: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with("Usage:") || line.starts_with("For more") {
            break;
        }
        if let Some(tip) = line.strip_prefix("tip: ") {
            tips.push(tip);
        } else if !line.is_empty() {
            error.push(line.strip_prefix("error: ").unwrap_or(line));
        }
    }
    let mut out = error.join(" ");
    for tip in tips {
        out.push_str("; ");
        out.push_str(tip);
    }
    out.push_str(" (see --help)");
    out
}

fn run(
    runtime: tokio::runtime::Runtime,
    args: impl IntoIterator<Item = std::ffi::OsString>,
    stdout: &mut dyn std::io::Write,
    stderr: &mut dyn std::io::Write,
    signals: Option<SignalTarget>,
) -> anyhow::Result<ExitCode> {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // No subcommand: the help, on stderr, as an error.
            let _ = write!(stderr, "{}", e.render());
            return Ok(ExitCode::from(2));
        }
        Err(e) if e.use_stderr() => {
            // Usage errors: one line naming the argument, with clap's tips ("a similar
            // argument exists: '--zorder'"), exit code 2.
            let _ = writeln!(stderr, "delta-layout: {}", usage_error_line(&e.to_string()));
            return Ok(ExitCode::from(2));
        }
        Err(e) => {
            // --help and --version.
            write!(stdout, "{}", e.render())?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    let mut cli = cli;
    split_column_lists(&mut cli.command)?;
    let storage =
        crate::table::StorageOptions::parse(cli.storage_options.iter().map(String::as_str))?;
    // Messages of dependencies may quote a signed URL or a credential: printed redacted.
    progress::set_storage_options(storage.clone());
    let context = Context {
        runtime,
        storage,
        stdout: std::cell::RefCell::new(stdout),
        stderr: std::cell::RefCell::new(stderr),
        signals,
    };
    match cli.command {
        Command::Plan(args) => run_plan(&context, args),
        Command::Execute(args) => run_execute(&context, args),
        Command::Commit(args) => run_commit(&context, args),
        Command::Inspect(args) => run_inspect(&context, args),
        Command::Report(args) => run_report(&context, args),
        Command::Vacuum(args) => run_vacuum(&context, args),
        Command::Sweep(args) => run_sweep(&context, args),
        Command::History(args) => run_history(&context, args),
        Command::Verify(args) => run_verify(&context, args),
        Command::Optimize(args) => run_optimize(&context, args),
        Command::Recommend(args) => run_recommend(&context, args),
        Command::Workload(args::WorkloadCommand::Extract(args)) => run_extract(&context, args),
    }
}

/// The `recommend` command: parses nothing more, runs it, prints its output; the exit code.
fn run_recommend(context: &Context, args: args::RecommendArgs) -> anyhow::Result<ExitCode> {
    let (runtime, _, at) = context.parts();
    let mut out = context.stdout.borrow_mut();
    let mut stdout: &mut dyn std::io::Write = &mut **out;
    let mut options = config::recommend_options(&args)?;
    let workload = config::read_workload(&args.workload)?;
    let cancel = Arc::new(AtomicBool::new(false));
    cancel_on_signal(context, cancel.clone());
    options.cancel = cancel;
    let progress: Arc<dyn crate::progress::Progress> = progress::BarProgress::new(args.quiet);
    let recommendation = runtime.block_on(crate::recommend::recommend(
        at(&args.table),
        &workload,
        &crate::recommend::CommandNames {
            table: args.table.clone(),
            workload: args.workload.display().to_string(),
        },
        &options,
        progress,
    ))?;
    if args.json {
        // A string first: a closed pipe then surfaces as an io::Error (exit 0).
        writeln!(stdout, "{}", serde_json::to_string_pretty(&recommendation)?)?;
    } else {
        let shown = if args.all {
            usize::MAX
        } else {
            render::RECOMMEND_SHOWN_CANDIDATES
        };
        render::recommend(&mut stdout, &recommendation, shown)?;
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The `workload extract` command: reads the SQL file, writes the workload file, lists what
/// was skipped on standard error; the exit code (2 when no predicate was found).
fn run_extract(context: &Context, args: args::ExtractArgs) -> anyhow::Result<ExitCode> {
    let (runtime, _, at) = context.parts();
    let sql = std::fs::read_to_string(&args.sql)
        .map_err(|e| anyhow::anyhow!("cannot read SQL file '{}': {e}", args.sql.display()))?;
    let columns: Vec<String> = match &args.schema {
        Some(location) => {
            let table = runtime.block_on(crate::table::TableView::load(at(location), None))?;
            table.schema.fields().map(|f| f.name().clone()).collect()
        }
        None => Vec::new(),
    };
    let extraction = crate::workload::extract::extract(&sql, &args.table, &columns);
    let mut text = format!(
        "# workload of table {} from {} ({} statements, {} scans of the table)\n",
        args.table,
        args.sql.display(),
        extraction.statements,
        extraction.scans
    );
    for predicate in &extraction.predicates {
        text.push_str(&format!("{}\t{}\n", predicate.count, predicate.text));
    }
    {
        let mut err = context.stderr.borrow_mut();
        for skipped in &extraction.skipped {
            writeln!(
                err,
                "delta-layout: statement {} (line {}) skipped: {}",
                skipped.statement, skipped.line, skipped.reason
            )?;
        }
        writeln!(
            err,
            "delta-layout: {} ({}) from {} of {} statements",
            crate::size::count(extraction.predicates.len() as u64, "predicate"),
            crate::size::count(
                extraction.predicates.iter().map(|p| p.count).sum::<u64>(),
                "run"
            ),
            extraction.statements
                - extraction
                    .skipped
                    .iter()
                    .map(|s| s.statement)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len(),
            extraction.statements
        )?;
    }
    // Nothing is written when nothing was extracted: an existing `--out` file stays as it is.
    if extraction.predicates.is_empty() {
        anyhow::bail!(
            "no statement of '{}' filters table {} by a predicate that can skip files",
            args.sql.display(),
            args.table
        );
    }
    // What is written must read back as a workload.
    crate::workload::Workload::parse(&text, "the extracted workload")?;
    match &args.out {
        Some(path) => std::fs::write(path, &text).map_err(|e| {
            words::bad_flag("--out", format!("cannot write '{}': {e}", path.display()))
        })?,
        None => {
            let mut out = context.stdout.borrow_mut();
            write!(out, "{text}")?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What every command needs: the async runtime, the storage options of `--storage-option`,
/// where its output goes, and where Ctrl-C and SIGTERM go (`None` inside a host process
/// such as Python's, whose signals are its own).
struct Context<'a> {
    runtime: tokio::runtime::Runtime,
    storage: crate::table::StorageOptions,
    stdout: std::cell::RefCell<&'a mut dyn std::io::Write>,
    stderr: std::cell::RefCell<&'a mut dyn std::io::Write>,
    signals: Option<SignalTarget>,
}

impl Context<'_> {
    /// The runtime, the storage options, and a function giving a location with them.
    fn parts(
        &self,
    ) -> (
        &tokio::runtime::Runtime,
        &crate::table::StorageOptions,
        impl Fn(&str) -> crate::table::TableLocation + '_,
    ) {
        let at = |uri: &str| {
            crate::table::TableLocation::new(uri).with_storage_options(self.storage.clone())
        };
        (&self.runtime, &self.storage, at)
    }
}

/// The `plan` command: parses nothing more, runs it, prints its output; the exit code.
fn run_plan(context: &Context, args: args::PlanArgs) -> anyhow::Result<ExitCode> {
    let (runtime, _, at) = context.parts();
    let mut out = context.stdout.borrow_mut();
    let mut stdout: &mut dyn std::io::Write = &mut **out;
    let mut err = context.stderr.borrow_mut();
    let nothing_worth_doing =
        workorders::plan(runtime, &mut stdout, &mut **err, at(&args.table), &args)?;
    stdout.flush()?;
    if nothing_worth_doing {
        return Ok(ExitCode::from(EXIT_NOTHING_WORTH_DOING));
    }
    Ok(ExitCode::SUCCESS)
}

/// The `execute` command: parses nothing more, runs it, prints its output; the exit code.
fn run_execute(context: &Context, args: args::ExecuteArgs) -> anyhow::Result<ExitCode> {
    let (runtime, storage, _) = context.parts();
    let mut out = context.stdout.borrow_mut();
    let mut stdout: &mut dyn std::io::Write = &mut **out;
    let cancel = Arc::new(AtomicBool::new(false));
    cancel_on_signal(context, cancel.clone());
    workorders::execute(runtime, &mut stdout, storage.clone(), &args, cancel)?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The `commit` command: parses nothing more, runs it, prints its output; the exit code.
fn run_commit(context: &Context, args: args::CommitArgs) -> anyhow::Result<ExitCode> {
    let (runtime, storage, _) = context.parts();
    let mut out = context.stdout.borrow_mut();
    let mut stdout: &mut dyn std::io::Write = &mut **out;
    workorders::commit(runtime, &mut stdout, storage.clone(), &args)?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The `inspect` command: parses nothing more, runs it, prints its output; the exit code.
fn run_inspect(context: &Context, args: args::InspectArgs) -> anyhow::Result<ExitCode> {
    let (runtime, _, at) = context.parts();
    let mut out = context.stdout.borrow_mut();
    let mut stdout: &mut dyn std::io::Write = &mut **out;
    let target = config::size(crate::Setting::TargetFileSize, args.target_size.as_deref())?;
    let table = runtime.block_on(crate::table::TableView::load(at(&args.table), args.version))?;
    let mut report = crate::inspect::inspect(&table, target)?;
    // A UniForm table's Iceberg view: one that cannot be read is a warning here (the report
    // is the log's), and `vacuum`'s refusal.
    report.iceberg = match runtime.block_on(crate::table::iceberg::view(&table)) {
        Ok(view) => view,
        Err(e) => {
            log::warn!("{e}");
            None
        }
    };
    if args.json {
        // A string first: a closed pipe then surfaces as an io::Error (exit 0).
        writeln!(stdout, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        render::inspect(&mut stdout, &report)?;
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The `report` command: parses nothing more, runs it, prints its output; the exit code.
fn run_report(context: &Context, args: args::ReportArgs) -> anyhow::Result<ExitCode> {
    let (runtime, _, at) = context.parts();
    let mut out = context.stdout.borrow_mut();
    let mut stdout: &mut dyn std::io::Write = &mut **out;
    let (options, lines) = config::report_options(&args)?;
    let workload = args
        .workload
        .as_deref()
        .map(config::read_workload)
        .transpose()?;
    let table = runtime.block_on(crate::table::TableView::load(at(&args.table), args.version))?;
    if let Some(path) = &args.html {
        check_html_path(path, &table)?;
    }
    // `--where`: each version reported over the files the predicate selects in it.
    let select = |mut table: crate::table::TableView| -> anyhow::Result<_> {
        let Some(predicate) = &args.predicate else {
            return Ok((table, None));
        };
        let (selected, files) =
            crate::plan::select_files(&table, predicate, args.where_include_unknown)?;
        let mut keep = selected.into_iter();
        table.files.retain(|_| keep.next().unwrap_or(false));
        Ok((
            table,
            Some(crate::report::SelectedBy {
                predicate: predicate.clone(),
                files,
            }),
        ))
    };
    let (table, selected_by) = select(table)?;
    // Each predicate must fit the table: name its line when it does not.
    for (predicate, line) in options.predicates.iter().zip(&lines) {
        crate::pruning::Pruner::new(&table, predicate).map_err(|e| {
            words::bad_flag(
                "--predicates",
                format!(
                    "{} line {line}: {e}",
                    args.predicates
                        .as_deref()
                        .unwrap_or(std::path::Path::new(""))
                        .display()
                ),
            )
        })?;
    }
    if let Some(other) = args.compare {
        let other = runtime
            .block_on(crate::table::TableView::load(at(&args.table), Some(other)))
            .map_err(|e| rename_version_option(e, "--compare"))?;
        // The older version is "before", whichever option named it.
        let (other, other_selected_by) = select(other)?;
        let ((before, before_selected), (table, after_selected)) = if other.version <= table.version
        {
            ((other, other_selected_by), (table, selected_by))
        } else {
            ((table, selected_by), (other, other_selected_by))
        };
        let mut comparison = crate::report::compare(&before, &table, &options)?;
        comparison.before.selected_by = before_selected;
        comparison.after.selected_by = after_selected;
        let scores = workload
            .as_ref()
            .map(|w| {
                Ok::<_, crate::Error>((
                    crate::report::score::score(&before, w)?,
                    crate::report::score::score(&table, w)?,
                ))
            })
            .transpose()?;
        if let Some(path) = &args.html {
            write_html(
                path,
                &crate::report::html::render(Some(&comparison.before), &comparison.after),
            )?;
        }
        if args.json {
            let mut value = serde_json::to_value(&comparison)?;
            if let Some((before, after)) = &scores {
                value["workload"] = serde_json::json!({"before": before, "after": after});
            }
            // A string first: a closed pipe then surfaces as an io::Error (exit 0).
            writeln!(stdout, "{}", serde_json::to_string_pretty(&value)?)?;
        } else {
            render::comparison(&mut stdout, &comparison)?;
            if let Some((before, after)) = &scores {
                writeln!(stdout)?;
                render::workload_change(&mut stdout, before, after)?;
                render::workload_score(&mut stdout, "after", after)?;
            }
        }
    } else {
        let mut report = crate::report::report(&table, &options)?;
        report.selected_by = selected_by;
        let score = workload
            .as_ref()
            .map(|w| crate::report::score::score(&table, w))
            .transpose()?;
        let decay = if args.decay {
            Some(runtime.block_on(crate::history::decay(at(&args.table)))?)
        } else {
            None
        };
        if let Some(path) = &args.html {
            write_html(path, &crate::report::html::render(None, &report))?;
        }
        if args.json {
            let mut value = serde_json::to_value(&report)?;
            if let Some(score) = &score {
                value["workload"] = serde_json::to_value(score)?;
            }
            if let Some(decay) = &decay {
                value["decay"] = serde_json::to_value(decay)?;
            }
            // A string first: a closed pipe then surfaces as an io::Error (exit 0).
            writeln!(stdout, "{}", serde_json::to_string_pretty(&value)?)?;
        } else {
            render::report(&mut stdout, &report)?;
            if let Some(score) = &score {
                writeln!(stdout)?;
                render::workload_score(&mut stdout, "workload", score)?;
            }
            if let Some(decay) = &decay {
                writeln!(stdout)?;
                render::decay(&mut stdout, decay.as_ref())?;
            }
        }
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The `vacuum` command: parses nothing more, runs it, prints its output; the exit code.
fn run_vacuum(context: &Context, args: args::VacuumArgs) -> anyhow::Result<ExitCode> {
    let (runtime, _, at) = context.parts();
    let mut out = context.stdout.borrow_mut();
    let mut stdout: &mut dyn std::io::Write = &mut **out;
    let retain = args
        .retain
        .as_deref()
        .map(|text| crate::size::parse_retention_hours(crate::Setting::Retain, text))
        .transpose()?;
    let table = runtime.block_on(crate::table::TableView::load(at(&args.table), None))?;
    let options = crate::vacuum::VacuumOptions::default()
        .with_retain_hours(retain)
        .with_dry_run(args.dry_run)
        .with_short_retention(args.risk_breaking_readers);
    let report = runtime.block_on(crate::vacuum::vacuum(&table, &options))?;
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        render::vacuum(&mut stdout, &report)?;
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The `sweep` command: parses nothing more, runs it, prints its output; the exit code.
fn run_sweep(context: &Context, args: args::SweepArgs) -> anyhow::Result<ExitCode> {
    let (runtime, _, at) = context.parts();
    let mut out = context.stdout.borrow_mut();
    let mut stdout: &mut dyn std::io::Write = &mut **out;
    let table = runtime.block_on(crate::table::TableView::load(at(&args.table), None))?;
    let mut options = config::sweep_options(&args, table.clustering_columns.as_deref())?;
    if let Some(path) = &args.html {
        check_html_path(path, &table)?;
    }
    drop(table);
    let cancel = Arc::new(AtomicBool::new(false));
    cancel_on_signal(context, cancel.clone());
    options.cancel = cancel;
    if !args.quiet && !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        log::set_max_level(log::LevelFilter::Info);
    }
    let progress: Arc<dyn crate::progress::Progress> = progress::BarProgress::new(args.quiet);
    let report = runtime.block_on(crate::sweep::sweep(at(&args.table), &options, progress))?;
    if let Some(path) = &args.html {
        write_html(path, &crate::sweep::html(&report))?;
    }
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        render::sweep(&mut stdout, &report)?;
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The `history` command: parses nothing more, runs it, prints its output; the exit code.
fn run_history(context: &Context, args: args::HistoryArgs) -> anyhow::Result<ExitCode> {
    let (runtime, _, at) = context.parts();
    let mut out = context.stdout.borrow_mut();
    let mut stdout: &mut dyn std::io::Write = &mut **out;
    let history = runtime.block_on(crate::history::history(
        at(&args.table),
        args.limit.map(std::num::NonZeroUsize::get),
    ))?;
    if args.json {
        // A string first: a closed pipe then surfaces as an io::Error (exit 0).
        writeln!(stdout, "{}", serde_json::to_string_pretty(&history)?)?;
    } else {
        render::history(&mut stdout, &history)?;
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The `verify` command: parses nothing more, runs it, prints its output; the exit code.
fn run_verify(context: &Context, args: args::VerifyArgs) -> anyhow::Result<ExitCode> {
    let (runtime, _, at) = context.parts();
    let mut out = context.stdout.borrow_mut();
    let mut stdout: &mut dyn std::io::Write = &mut **out;
    let (a, b) = runtime.block_on(async {
        let a = crate::table::TableView::load(at(&args.table), args.version).await?;
        let b = crate::table::TableView::load(at(&args.table), Some(args.compare))
            .await
            .map_err(|e| rename_version_option(e, "--compare"))?;
        Ok::<_, anyhow::Error>((a, b))
    })?;
    let report = {
        let _guard = runtime.enter();
        let progress = progress::BarProgress::new(args.quiet);
        crate::verify::verify_with_progress(&a, &b, args.unique.as_deref(), progress.as_ref())?
    };
    if args.json {
        // A string first: a closed pipe then surfaces as an io::Error (exit 0).
        writeln!(stdout, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        render::verify(&mut stdout, &report)?;
    }
    stdout.flush()?;
    let clean = report.equal && report.duplicates.iter().all(|d| d.duplicated_keys == 0);
    Ok(ExitCode::from(if clean { 0 } else { 1 }))
}

/// The `optimize` command: parses nothing more, runs it, prints its output; the exit code.
fn run_optimize(context: &Context, args: args::OptimizeArgs) -> anyhow::Result<ExitCode> {
    let (runtime, _, at) = context.parts();
    let mut out = context.stdout.borrow_mut();
    let mut stdout: &mut dyn std::io::Write = &mut **out;
    let json = args.json;
    let quiet = args.quiet;
    let report_columns = args.columns.clone();
    let with_report = !args.no_report && !args.dry_run;
    let location = args.table.clone();
    let workload_path = args.planning.workload.clone();
    let cancel = Arc::new(AtomicBool::new(false));
    // Until here (the workload may be read from standard input), a signal exits at once.
    let options = config::optimize_options(args)?.with_cancel(cancel.clone());
    cancel_on_signal(context, cancel.clone());
    // Columns of the report are checked before anything is written: a typo must not
    // follow a committed rewrite with only a warning.
    if let Some(columns) = &report_columns {
        let table = runtime.block_on(crate::table::TableView::load(at(&location), None))?;
        for column in columns {
            let path =
                crate::column::parse_path(column).map_err(|m| words::bad_flag("--columns", m))?;
            crate::bound::ColumnRef::resolve(&table, &path)
                .map_err(|e| words::bad_flag("--columns", e.to_string()))?;
        }
    }
    let bars = progress::BarProgress::new(quiet);
    bars.waiting("reading the table's log and planning");
    let progress: Arc<dyn crate::progress::Progress> = bars.clone();
    let outcome = runtime.block_on(crate::optimize::optimize(at(&location), &options, progress));
    bars.clear();
    let outcome = outcome?;
    let few_files = outcome
        .few_files(crate::plan::target_floor_bytes().unwrap_or(crate::plan::MIN_TARGET_FILE_BYTES));
    // `--verify` read back what it committed (a difference is an error before the commit).
    let verified = options.verify && outcome.version.is_some() && outcome.files_added > 0;
    if !json {
        // The commit line first: the report below may take a while.
        render::optimize(&mut stdout, &outcome)?;
        if verified {
            writeln!(
                stdout,
                "verified: the {} written hold exactly the rows of the {} they replace, partition by partition ({})",
                crate::size::count(outcome.files_added, "file"),
                crate::size::count(outcome.files_removed, "file"),
                crate::size::count(outcome.rows, "row"),
            )?;
        }
        if let Some(few) = &few_files {
            render::few_files(&mut stdout, few)?;
        }
        stdout.flush()?;
    }
    // The layout before and after, on the clustered (or named) columns. The commit
    // is made: a failing or cancelled report is a warning, never a failed run.
    let comparison = match outcome.version {
        Some(version) if with_report && !cancel.load(Ordering::SeqCst) => {
            bars.waiting("measuring the layout before and after for the report");
            let columns = report_columns
                .clone()
                .or_else(|| outcome.plan.clustering.as_ref().map(|c| c.columns.clone()))
                .unwrap_or_default();
            let result = runtime.block_on(async {
                let before =
                    crate::table::TableView::load(at(&location), Some(outcome.read_version))
                        .await?;
                let after = crate::table::TableView::load(at(&location), Some(version)).await?;
                Ok::<_, crate::Error>((before, after))
            });
            let result = result.and_then(|(before, after)| {
                // A cut tree's run is scored on its workload.
                let scores = match &workload_path {
                    Some(path) => {
                        let workload = config::read_workload(path)?;
                        Some((
                            crate::report::score::score(&before, &workload)?,
                            crate::report::score::score(&after, &workload)?,
                        ))
                    }
                    None => None,
                };
                // Clustering columns without min/max stats (binary) have nothing to
                // report; columns named by --columns must all exist.
                let columns: Vec<String> = columns
                    .into_iter()
                    .filter(|c| {
                        report_columns.is_some()
                            || crate::bound::ColumnRef::resolve(
                                &after,
                                &crate::column::parse_path(c).unwrap_or_default(),
                            )
                            .is_ok()
                    })
                    .collect();
                let options = crate::report::ReportOptions {
                    columns: Some(columns),
                    target_file_bytes: Some(outcome.plan.target_file_bytes),
                    ..Default::default()
                };
                Ok((crate::report::compare(&before, &after, &options)?, scores))
            });
            bars.clear();
            match result {
                Ok(comparison) => Some(comparison),
                Err(e) => {
                    log::warn!(
                        "version {version} is committed, but the before/after report failed: {e}"
                    );
                    None
                }
            }
        }
        _ => None,
    };
    if json {
        let mut value = render::optimize_json(&outcome);
        value["few_files"] = serde_json::to_value(&few_files)?;
        value["verified"] = serde_json::Value::Bool(verified);
        value["report"] = serde_json::to_value(comparison.as_ref().map(|c| &c.0))?;
        if let Some((_, Some((before, after)))) = &comparison {
            value["workload"] = serde_json::json!({"before": before, "after": after});
        }
        // A string first: a closed pipe then surfaces as an io::Error (exit 0).
        writeln!(stdout, "{}", serde_json::to_string_pretty(&value)?)?;
    } else if let Some((comparison, scores)) = &comparison {
        writeln!(stdout)?;
        render::comparison(&mut stdout, comparison)?;
        if let Some((before, after)) = scores {
            render::workload_change(&mut stdout, before, after)?;
        }
    }
    stdout.flush()?;
    if outcome
        .selection
        .as_ref()
        .is_some_and(|s| s.nothing_worth_doing)
    {
        return Ok(ExitCode::from(EXIT_NOTHING_WORTH_DOING));
    }
    Ok(ExitCode::SUCCESS)
}

/// Exit code of an `optimize` or `plan` whose `--min-gain` found nothing worth doing: it
/// committed (or planned) nothing, and the table is as it was.
pub const EXIT_NOTHING_WORTH_DOING: u8 = 4;
/// Exit code of an `optimize` refused by the regression guard ([`crate::Error::LayoutRegression`]).
pub const EXIT_LAYOUT_REGRESSION: u8 = 5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_tell_a_scheduler_what_to_do() {
        let conflict = anyhow::Error::from(crate::Error::ConcurrentModification {
            table: "t".into(),
            read_version: 1,
            winning_version: 2,
            reason: "removed data file 'a.parquet', which this run rewrote".into(),
        });
        assert_eq!(exit_code(&conflict), 3);
        assert_eq!(
            exit_code(&anyhow::Error::from(crate::Error::Cancelled)),
            130
        );
        let bad = anyhow::Error::from(crate::Error::invalid_option(crate::Setting::Threads, "bad"));
        assert_eq!(exit_code(&bad), 2);
    }
}
