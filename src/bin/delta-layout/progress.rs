//! Progress bar on stderr (indicatif), and a tiny logger that prints warnings above it.

use std::io::IsTerminal as _;
use std::sync::{Arc, OnceLock};

use delta_layout::plan::Bin;
use delta_layout::progress::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

static BAR: OnceLock<ProgressBar> = OnceLock::new();

/// Prints `warn!`/`error!` records to stderr, suspending the bar so it does not tear.
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
        let print = || eprintln!("delta-layout: {kind}{}", record.args());
        match BAR.get() {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }
    fn flush(&self) {}
}

/// A byte-based progress bar, hidden when stderr is not a terminal or with `--quiet`.
pub struct BarProgress {
    bar: ProgressBar,
}

impl BarProgress {
    /// Creates the bar.
    pub fn new(quiet: bool) -> Arc<Self> {
        let bar = ProgressBar::hidden();
        if !quiet && std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} ({eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        let _ = BAR.set(bar.clone());
        Arc::new(Self { bar })
    }
}

impl Progress for BarProgress {
    fn start(&self, bins: usize, input_bytes: u64) {
        self.bar.set_length(input_bytes);
        self.bar.set_message(format!("rewriting {bins} bins"));
    }
    fn bin_started(&self, _bin: &Bin) {}
    fn file_done(&self, size_bytes: u64) {
        self.bar.inc(size_bytes);
    }
    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
