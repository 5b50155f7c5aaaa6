//! The `delta-layout` binary: bounds glibc's malloc, then runs the command line
//! ([`delta_layout::cli::run_cli`]; its module docs list the exit codes).

use std::process::ExitCode;

fn main() -> ExitCode {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    bound_malloc_arenas();
    delta_layout::cli::run_cli(
        std::env::args_os(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr(),
        true,
    )
}

/// The environment variable that bounds glibc's malloc arenas (`mallopt(3)`, `M_ARENA_MAX`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MALLOC_ARENA_MAX: &str = "MALLOC_ARENA_MAX";

/// The environment variable that fixes glibc's mmap threshold (`mallopt(3)`,
/// `M_MMAP_THRESHOLD`), and the value set when the command line gives `--memory-limit`:
/// allocations of 128 KiB and more (Arrow buffers, decoded pages, encoder buffers) are mapped
/// on their own and returned to the system when freed. glibc's default threshold grows after
/// each large free up to 32 MiB, after which such buffers come from the heap and what they
/// free stays resident: on a 400-column table under `--memory-limit 256MiB`, Hilbert peaked at
/// 316-602 MiB with the default and at 290-375 MiB with this (BENCHMARKS.md, issue 43). The
/// mappings' page faults cost time: Z-order on TPC-H SF1 under `--memory-limit 512MiB` took
/// 1.11x as long (and peaked 54 MiB lower), the default in-memory Hilbert run 1.23x, so the
/// threshold is set only when a limit is asked for.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MALLOC_MMAP_THRESHOLD: (&str, &str) = ("MALLOC_MMAP_THRESHOLD_", "131072");

/// Runs this binary again in its own process (`execve`, same process id and arguments) with
/// `MALLOC_ARENA_MAX` set to the number of cores and, when the arguments give
/// `--memory-limit`, the mmap threshold fixed ([`MALLOC_MMAP_THRESHOLD`], unless the
/// environment sets it), unless the environment already sets `MALLOC_ARENA_MAX`.
///
/// glibc's malloc gives threads that contend arenas of their own, up to 8 per core, and keeps
/// what a thread freed in its arena for that arena's later use; memory freed by one stage's
/// threads (the output-size sample, the sort's runs) then stays resident while other threads
/// allocate in theirs, and peak RSS passes `--memory-limit` + 150 MiB, the bound the budget
/// keeps. Measured (BENCHMARKS.md): Hilbert on 4 columns of TPC-H SF5 at 256 MiB under
/// `--memory-limit 512MiB` peaks at 731-751 MiB with glibc's default and 530-545 MiB with one
/// arena per core (2 here), and is no slower. The variable is read when malloc starts, before `main`, so
/// it takes a new process; when `exec` fails (the binary was replaced, no `/proc`), the run
/// goes on in this one. The Python package runs in its host's process: set the variable
/// there.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn bound_malloc_arenas() {
    use std::os::unix::process::CommandExt as _;
    if std::env::var_os(MALLOC_ARENA_MAX).is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new(exe);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    let args: Vec<std::ffi::OsString> = args.collect();
    let memory_limit = args.iter().any(|a| {
        let a = a.to_string_lossy();
        a == "--memory-limit" || a.starts_with("--memory-limit=")
    });
    command.args(args).env(MALLOC_ARENA_MAX, cores.to_string());
    let (threshold, bytes) = MALLOC_MMAP_THRESHOLD;
    if memory_limit && std::env::var_os(threshold).is_none() {
        command.env(threshold, bytes);
    }
    // Returns only when the new program could not be started.
    let _ = command.exec();
}
