//! Progress bars on stderr (indicatif), and a tiny logger that prints warnings above them.
//!
//! One line for the run, from the plan to the commit: input bytes done, with an ETA, where a
//! clustering bin's bytes advance through its phases (half while reading+sampling, the rest
//! while sorting+writing; out of core, routing takes half of what reading left). Under it one
//! line per phase in progress ([`Phase`]: reading+sampling, routing, sorting+writing,
//! committing, ...), each with its own done/total and ETA; and a spinner naming what runs
//! while no bar moves (reading the log and planning, the report after the commit). Everything
//! is hidden when stderr is not a terminal or with `--quiet`.

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
    /// The run's bar: input bytes done, shown from [`Progress::start`] to the end of the
    /// commit.
    run: ProgressBar,
    /// Bins of the current run (phase lines name their bin when there are several).
    bins: AtomicUsize,
    /// One bar per phase in progress.
    phases: Mutex<HashMap<(Scope, Phase), ProgressBar>>,
    /// How far each clustering bin has moved the run's bar.
    credits: Mutex<Credits>,
    /// The spinner of [`BarProgress::waiting`], while one is shown.
    waiting: Mutex<Option<ProgressBar>>,
}

/// The run bar's bookkeeping for clustering bins, whose files are reported done only once
/// their last range is written: their phases move the bar instead.
#[derive(Debug, Default)]
struct Credits {
    /// Per bin: its input bytes.
    bins: HashMap<usize, u64>,
    /// Per bin with a phase under way: what it has credited, and the phase's share of the
    /// bin's bytes (what it credits when done), its total and its advance (in its unit).
    phases: HashMap<usize, PhaseCredit>,
    /// Bytes a clustering bin credited through its phases whose files are still to be
    /// reported done ([`Progress::file_done`] carries no bin: the bytes of reports, in
    /// whatever order they arrive, are taken from here first, so the bar sums to the input).
    pending_files: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct PhaseCredit {
    /// Bytes of the bin credited so far (all phases).
    credited: u64,
    /// Credited when the current phase started.
    base: u64,
    /// The current phase's share of the bin's bytes.
    share: u64,
    /// The current phase's total and advance, in its own unit.
    total: u64,
    done: u64,
}

impl Credits {
    /// `phase` of `bin` starts counting to `total`: its share of what the bin has left.
    fn phase_started(&mut self, bin: usize, phase: Phase, total: u64) {
        let Some(&bytes) = self.bins.get(&bin) else {
            return;
        };
        let credit = self.phases.entry(bin).or_default();
        let left = bytes.saturating_sub(credit.credited);
        credit.base = credit.credited;
        credit.share = match phase {
            Phase::Read | Phase::Route => left / 2,
            Phase::Write => left,
            _ => 0,
        };
        credit.total = total;
        credit.done = 0;
    }

    /// `phase` of `bin` did `amount` more: the bytes the run's bar moves.
    fn phase_advanced(&mut self, bin: usize, amount: u64) -> u64 {
        let Some(credit) = self.phases.get_mut(&bin) else {
            return 0;
        };
        credit.done = credit.done.saturating_add(amount).min(credit.total);
        let reached = if credit.total == 0 {
            u128::from(credit.share)
        } else {
            u128::from(credit.share) * u128::from(credit.done) / u128::from(credit.total)
        };
        let target = credit.base + u64::try_from(reached).unwrap_or(credit.share);
        let moved = target.saturating_sub(credit.credited);
        credit.credited += moved;
        moved
    }

    /// `phase` of `bin` is over: the rest of its share; after writing, the bin's files
    /// are reported done next, and those bytes are already on the bar.
    fn phase_finished(&mut self, bin: usize, phase: Phase) -> u64 {
        let Some(credit) = self.phases.get_mut(&bin) else {
            return 0;
        };
        let target = credit.base + credit.share;
        let moved = target.saturating_sub(credit.credited);
        credit.credited += moved;
        if phase == Phase::Write {
            self.pending_files += credit.credited;
            self.phases.remove(&bin);
        }
        moved
    }

    /// An input file of `size_bytes` is done: the bytes the run's bar moves.
    fn file_done(&mut self, size_bytes: u64) -> u64 {
        let counted = size_bytes.min(self.pending_files);
        self.pending_files -= counted;
        size_bytes - counted
    }
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
            credits: Mutex::new(Credits::default()),
            waiting: Mutex::new(None),
        })
    }

    /// Shows a spinner with `message` (what runs while no bar moves: "reading the log and
    /// planning") until the run starts, a run-wide phase starts, another message replaces
    /// it, or [`BarProgress::done_waiting`].
    pub fn waiting(&self, message: &str) {
        let spinner = self.bars.add(
            ProgressBar::new_spinner()
                .with_style(style("{spinner} {msg} ({elapsed})"))
                .with_message(message.to_string()),
        );
        spinner.enable_steady_tick(TICK);
        let old = self.waiting_line().replace(spinner);
        if let Some(old) = old {
            self.remove(&old);
        }
    }

    /// Removes the spinner of [`BarProgress::waiting`].
    pub fn done_waiting(&self) {
        let old = self.waiting_line().take();
        if let Some(old) = old {
            self.remove(&old);
        }
    }

    /// Removes every line: the spinner, the run's line and the phases'.
    pub fn clear(&self) {
        self.done_waiting();
        self.remove(&self.run);
        self.remove_phases(|_| true);
    }

    /// The run bar's position, bytes (for tests).
    #[cfg(test)]
    fn run_position(&self) -> u64 {
        self.run.position()
    }

    fn waiting_line(&self) -> std::sync::MutexGuard<'_, Option<ProgressBar>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn credits(&self) -> std::sync::MutexGuard<'_, Credits> {
        self.credits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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
        self.done_waiting();
        self.bins.store(bins, Ordering::Relaxed);
        *self.credits() = Credits::default();
        self.run.reset();
        self.run.set_length(input_bytes);
        self.run.set_message(format!(
            "rewriting {bins} bin{}",
            if bins == 1 { "" } else { "s" }
        ));
        self.bars.add(self.run.clone());
        self.run.enable_steady_tick(TICK);
    }
    fn bin_started(&self, bin: &Bin) {
        self.credits().bins.insert(bin.id, bin.input_bytes);
    }
    fn file_done(&self, size_bytes: u64) {
        let moved = self.credits().file_done(size_bytes);
        self.run.inc(moved);
    }
    fn bin_finished(&self, bin: &Bin) {
        // Phases a failed bin left open.
        self.remove_phases(|scope| *scope == Scope::Bin(bin.id));
        let mut credits = self.credits();
        credits.bins.remove(&bin.id);
        credits.phases.remove(&bin.id);
    }
    fn finish(&self) {
        // The run's line stays, full, until the commit is over (or the command ends).
        self.run.set_position(self.run.length().unwrap_or(0));
        self.run.set_message("rewritten; finishing");
        self.remove_phases(|scope| matches!(scope, Scope::Bin(_)));
    }
    fn phase_started(&self, scope: Scope, phase: Phase, total: u64) {
        let prefix = match scope {
            Scope::Bin(id) if self.bins.load(Ordering::Relaxed) > 1 => format!("bin {id}: "),
            Scope::Bin(_) => String::new(),
            Scope::Run => {
                self.done_waiting();
                String::new()
            }
        };
        if let Scope::Bin(id) = scope {
            self.credits().phase_started(id, phase, total);
        }
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
        if let Scope::Bin(id) = scope {
            let moved = self.credits().phase_advanced(id, amount);
            self.run.inc(moved);
        }
        if let Some(bar) = self.phases().get(&(scope, phase)) {
            bar.inc(amount);
        }
    }
    fn phase_finished(&self, scope: Scope, phase: Phase) {
        if let Scope::Bin(id) = scope {
            let moved = self.credits().phase_finished(id, phase);
            self.run.inc(moved);
        }
        let bar = self.phases().remove(&(scope, phase));
        if let Some(bar) = bar {
            self.remove(&bar);
        }
        if (scope, phase) == (Scope::Run, Phase::Commit) {
            self.remove(&self.run);
        }
    }
}

impl Drop for BarProgress {
    fn drop(&mut self) {
        self.clear();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(id: usize, files: Vec<usize>, input_bytes: u64) -> Bin {
        Bin {
            id,
            files,
            input_bytes,
            input_rows: None,
            num_deletion_vectors: 0,
            expected_output_files: 1,
            expected_output_bytes: input_bytes,
            key_range: None,
        }
    }

    /// A clustering bin moves the run's bar through its phases (half reading, the rest
    /// writing) and its files, reported after the write, add nothing; a compaction bin
    /// beside it moves the bar by its files, whatever the order: the bar ends at the input.
    #[test]
    fn the_run_bar_moves_through_clustering_phases_and_sums_to_the_input() {
        let progress = BarProgress::new(true);
        let clustering = bin(0, vec![0, 1], 1000);
        let compaction = bin(1, vec![2], 300);
        progress.start(2, 1300);
        progress.bin_started(&clustering);
        progress.bin_started(&compaction);
        let scope = Scope::Bin(0);
        progress.phase_started(scope, Phase::Read, 1000);
        progress.phase_advanced(scope, Phase::Read, 400);
        assert_eq!(
            progress.run_position(),
            200,
            "40% of the read: 20% of the bin"
        );
        progress.phase_advanced(scope, Phase::Read, 600);
        progress.phase_finished(scope, Phase::Read);
        assert_eq!(progress.run_position(), 500);
        // Between phases (keys, sort) the bar holds; writing counts rows.
        progress.phase_started(scope, Phase::Write, 10);
        progress.phase_advanced(scope, Phase::Write, 5);
        assert_eq!(progress.run_position(), 750);
        progress.phase_advanced(scope, Phase::Write, 5);
        progress.phase_finished(scope, Phase::Write);
        assert_eq!(progress.run_position(), 1000);
        // The compaction bin's file arrives before the clustering bin's files.
        progress.file_done(300);
        progress.file_done(600);
        progress.file_done(400);
        assert_eq!(progress.run_position(), 1300);
        progress.bin_finished(&clustering);
        progress.bin_finished(&compaction);
        assert_eq!(progress.run_position(), 1300);
    }

    /// Out of core, routing takes half of what reading left, writing the rest.
    #[test]
    fn routing_takes_a_share_of_the_run_bar() {
        let progress = BarProgress::new(true);
        let b = bin(3, vec![0], 800);
        progress.start(1, 800);
        progress.bin_started(&b);
        let scope = Scope::Bin(3);
        for (phase, total, after) in [
            (Phase::Read, 800, 400),
            (Phase::Route, 800, 600),
            (Phase::Write, 7, 800),
        ] {
            progress.phase_started(scope, phase, total);
            progress.phase_advanced(scope, phase, total);
            progress.phase_finished(scope, phase);
            assert_eq!(progress.run_position(), after, "{phase:?}");
        }
        progress.file_done(800);
        assert_eq!(progress.run_position(), 800);
    }
}
