//! `delta_layout._native`: the command line of `delta-layout`, run inside the Python process,
//! and the work-order document store. The Python package (`python/delta_layout/`) builds its
//! functions on these; every call releases the GIL while Rust works.
//!
//! The command line is the crate's own (`delta_layout::cli`, feature `cli`), the code the
//! binary runs, so the package and the CLI take the same options and print the same documents
//! and messages.

use delta_layout::cli;

use pyo3::prelude::*;

/// Runs the command line `argv` (without the program name) in this process, with its output
/// captured: returns `(exit_code, stdout, stderr)`. The run works on a thread of its own
/// while this one waits without the GIL, checking Python's signals every 50 ms: a Ctrl-C
/// (`KeyboardInterrupt`, or whatever a signal handler raises) cancels the run as the binary's
/// Ctrl-C does (files written deleted, nothing committed) and is raised once the run has
/// stopped; a run of a command that only reads is left to finish on its thread, its output
/// discarded, and the exception raised at once.
#[pyfunction]
fn run(py: Python<'_>, argv: Vec<String>) -> PyResult<(u8, String, String)> {
    let handle = cli::CancelHandle::default();
    let (done, finished) = std::sync::mpsc::channel();
    let runner = handle.clone();
    std::thread::Builder::new()
        .name("delta-layout".into())
        .spawn(move || {
            let mut stdout: Vec<u8> = Vec::new();
            let mut stderr: Vec<u8> = Vec::new();
            let args = std::iter::once("delta-layout".to_string())
                .chain(argv)
                .map(std::ffi::OsString::from);
            let code = cli::run_cli_cancellable(args, &mut stdout, &mut stderr, &runner);
            let _ = done.send((
                exit_code(code),
                String::from_utf8_lossy(&stdout).into_owned(),
                String::from_utf8_lossy(&stderr).into_owned(),
            ));
        })
        .map_err(|e| {
            pyo3::exceptions::PyRuntimeError::new_err(format!("cannot start a thread: {e}"))
        })?;
    let mut finished = finished;
    loop {
        let wait = std::time::Duration::from_millis(50);
        // (The receiver moves in and out: a closure run without the GIL must be `Send`.)
        let (received, back) = py.detach(move || (finished.recv_timeout(wait), finished));
        finished = back;
        match received {
            Ok(result) => return Ok(result),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "the delta-layout run ended without a result",
                ));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Err(signal) = py.check_signals() {
            if handle.cancel() {
                // The run stops and cleans up; its result is dropped for the exception.
                let _ = py.detach(move || finished.recv());
            }
            return Err(signal);
        }
    }
}

/// Runs the command line `argv` (without the program name) as the `delta-layout` binary
/// would: output to the process's standard output and error, Ctrl-C and SIGTERM cancel the
/// run. Returns the exit code (`python -m delta_layout`).
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| {
        let args = std::iter::once("delta-layout".to_string())
            .chain(argv)
            .map(std::ffi::OsString::from);
        exit_code(cli::run_cli(
            args,
            &mut std::io::stdout().lock(),
            &mut std::io::stderr(),
            true,
        ))
    })
}

/// Reads the document (a work order, its shard, or results) at `location`, a local path or an
/// object URI reached with `storage_options`. Raises `OSError` with the CLI's message.
#[pyfunction]
#[pyo3(signature = (location, storage_options=None))]
fn read_document(
    py: Python<'_>,
    location: String,
    storage_options: Option<std::collections::HashMap<String, String>>,
) -> PyResult<String> {
    let storage = storage(storage_options)?;
    py.detach(|| {
        runtime()?
            .block_on(delta_layout::workorder::read_document(
                &location, &storage, "document",
            ))
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(redact(&e, &storage)))
    })
}

/// Writes `text` as the document at `location` (a local path or an object URI reached with
/// `storage_options`), under the rules of the CLI's `--out` (a `.json` name, never in a
/// `_delta_log`). Raises `ValueError` with the CLI's message.
#[pyfunction]
#[pyo3(signature = (location, text, storage_options=None))]
fn write_document(
    py: Python<'_>,
    location: String,
    text: String,
    storage_options: Option<std::collections::HashMap<String, String>>,
) -> PyResult<()> {
    let storage = storage(storage_options)?;
    py.detach(|| {
        runtime()?
            .block_on(delta_layout::workorder::write_document(
                &location, &storage, &text,
            ))
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(redact(&e, &storage)))
    })
}

fn storage(
    options: Option<std::collections::HashMap<String, String>>,
) -> PyResult<delta_layout::table::StorageOptions> {
    let mut storage = delta_layout::table::StorageOptions::new();
    for (key, value) in options.unwrap_or_default() {
        storage = storage.with(key, value);
    }
    Ok(storage)
}

/// The error's message without the secrets of `storage` (nor URL signatures).
fn redact(error: &delta_layout::Error, storage: &delta_layout::table::StorageOptions) -> String {
    delta_layout::table::location::redact_secrets(&error.to_string(), storage)
}

fn runtime() -> PyResult<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
}

/// `ExitCode` has no accessor: the codes the command returns, read back through its `Debug`
/// form is fragile, so the command line's codes are mapped here.
fn exit_code(code: std::process::ExitCode) -> u8 {
    // `ExitCode` implements `PartialEq` but has no getter: every code the CLI may return
    // (0 to 5, 130) is one of the 256.
    (0..=u8::MAX)
        .find(|&c| std::process::ExitCode::from(c) == code)
        .unwrap_or(2)
}

/// The long options each command takes, without dashes (`{"optimize": ["zorder", ...],
/// "workload extract": [...]}`), from the command line's definitions
/// ([`cli::command_options`]): the package refuses other keyword arguments.
#[pyfunction]
fn command_options() -> std::collections::HashMap<String, Vec<String>> {
    cli::command_options().into_iter().collect()
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(read_document, m)?)?;
    m.add_function(wrap_pyfunction!(write_document, m)?)?;
    m.add_function(wrap_pyfunction!(command_options, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
