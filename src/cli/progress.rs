//! Progress bars on stderr (indicatif), and a tiny logger that prints warnings above them.
//!
//! One line for the run (input bytes whose rows are written), and one line per phase in
//! progress ([`Phase`]: reading+sampling, routing, sorting+writing, committing, ...), each
//! with its own done/total and ETA. Everything is hidden when stderr is not a terminal or
//! with `--quiet`.

use std::collections::HashMap;
use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::plan::Bin;
use crate::progress::{Phase, Progress, Scope, Unit};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

static BARS: OnceLock<MultiProgress> = OnceLock::new();

/// How often a phase's spinner and ETA are redrawn when no progress arrives.
const TICK: Duration = Duration::from_millis(200);

/// Prints `warn!`/`error!` records to stderr, suspending the bars so they do not tear.
pub struct Logger;

/// The logger instance.
pub static LOGGER: Logger = Logger;

impl log::Log for Logger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }
    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        // Warnings say so; info lines (sweep progress, shown unless --quiet) do not.
        let kind = if record.level() <= log::Level::Warn {
            "warning: "
        } else {
            ""
        };
        let print = || eprintln!("delta-layout: {kind}{}", redact(&record.args().to_string()));
        match BARS.get() {
            Some(bars) => bars.suspend(print),
            None => print(),
        }
    }
    fn flush(&self) {}
}

/// Progress bars, hidden when stderr is not a terminal or with `--quiet`.
pub struct BarProgress {
    bars: MultiProgress,
    /// The run's bar: input bytes whose rows are written.
    run: ProgressBar,
    /// Bins of the current run (phase lines name their bin when there are several).
    bins: AtomicUsize,
    /// One bar per phase in progress.
    phases: Mutex<HashMap<(Scope, Phase), ProgressBar>>,
}

impl BarProgress {
    /// Creates the (still empty) set of bars.
    pub fn new(quiet: bool) -> Arc<Self> {
        let bars = MultiProgress::with_draw_target(ProgressDrawTarget::hidden());
        if !quiet && std::io::stderr().is_terminal() {
            bars.set_draw_target(ProgressDrawTarget::stderr());
        }
        let _ = BARS.set(bars.clone());
        let run = ProgressBar::hidden();
        run.set_style(style(
            "{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} ({eta})",
        ));
        Arc::new(Self {
            bars,
            run,
            bins: AtomicUsize::new(0),
            phases: Mutex::new(HashMap::new()),
        })
    }

    fn phases(&self) -> std::sync::MutexGuard<'_, HashMap<(Scope, Phase), ProgressBar>> {
        self.phases
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn remove(&self, bar: &ProgressBar) {
        bar.finish_and_clear();
        self.bars.remove(bar);
    }

    /// Removes the phase bars `which` selects.
    fn remove_phases(&self, which: impl Fn(&Scope) -> bool) {
        let mut phases = self.phases();
        let keys: Vec<(Scope, Phase)> = phases.keys().filter(|k| which(&k.0)).copied().collect();
        for key in keys {
            if let Some(bar) = phases.remove(&key) {
                self.remove(&bar);
            }
        }
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// The line of a phase: what it counts, done/total and its own ETA.
fn phase_style(phase: Phase, total: u64) -> ProgressStyle {
    style(match phase.unit() {
        Unit::Bytes => "{spinner} {prefix}{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})",
        Unit::Rows => "{spinner} {prefix}{msg} [{bar:30}] {human_pos}/{human_len} rows ({eta})",
        _ if total <= 1 => "{spinner} {prefix}{msg} ({elapsed})",
        _ => "{spinner} {prefix}{msg} [{bar:30}] {pos}/{len} ({eta})",
    })
}

impl Progress for BarProgress {
    fn start(&self, bins: usize, input_bytes: u64) {
        self.bins.store(bins, Ordering::Relaxed);
        self.run.reset();
        self.run.set_length(input_bytes);
        self.run.set_message(format!(
            "rewriting {bins} bin{}",
            if bins == 1 { "" } else { "s" }
        ));
        self.bars.add(self.run.clone());
    }
    fn bin_started(&self, _bin: &Bin) {}
    fn file_done(&self, size_bytes: u64) {
        self.run.inc(size_bytes);
    }
    fn bin_finished(&self, bin: &Bin) {
        // Phases a failed bin left open.
        self.remove_phases(|scope| *scope == Scope::Bin(bin.id));
    }
    fn finish(&self) {
        self.remove(&self.run);
        self.remove_phases(|scope| matches!(scope, Scope::Bin(_)));
    }
    fn phase_started(&self, scope: Scope, phase: Phase, total: u64) {
        let prefix = match scope {
            Scope::Bin(id) if self.bins.load(Ordering::Relaxed) > 1 => format!("bin {id}: "),
            _ => String::new(),
        };
        let bar = ProgressBar::new(total)
            .with_style(phase_style(phase, total))
            .with_prefix(prefix)
            .with_message(phase.label());
        let bar = self.bars.add(bar);
        bar.enable_steady_tick(TICK);
        if let Some(old) = self.phases().insert((scope, phase), bar) {
            self.remove(&old);
        }
    }
    fn phase_advanced(&self, scope: Scope, phase: Phase, amount: u64) {
        if let Some(bar) = self.phases().get(&(scope, phase)) {
            bar.inc(amount);
        }
    }
    fn phase_finished(&self, scope: Scope, phase: Phase) {
        let bar = self.phases().remove(&(scope, phase));
        if let Some(bar) = bar {
            self.remove(&bar);
        }
    }
}

impl Drop for BarProgress {
    fn drop(&mut self) {
        self.remove(&self.run);
        self.remove_phases(|_| true);
    }
}

/// The storage options of every run of this process, whose secret values [`redact`] removes
/// (a host process, such as Python's, runs many commands with different credentials).
static STORAGE_OPTIONS: std::sync::Mutex<Vec<crate::table::StorageOptions>> =
    std::sync::Mutex::new(Vec::new());

/// Records a run's storage options for [`redact`]; every set recorded stays redacted.
pub fn set_storage_options(options: crate::table::StorageOptions) {
    let mut all = STORAGE_OPTIONS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !all.contains(&options) {
        all.push(options);
    }
}

/// `text` without secrets (see `crate::table::location::redact_secrets`), of every
/// run's storage options.
pub fn redact(text: &str) -> String {
    let all = STORAGE_OPTIONS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut text =
        crate::table::location::redact_secrets(text, &crate::table::StorageOptions::new());
    for options in all.iter() {
        text = crate::table::location::redact_secrets(&text, options);
    }
    text
}
