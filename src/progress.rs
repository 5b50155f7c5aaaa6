//! Progress hooks. The library never writes to a terminal: the binary implements
//! [`Progress`] with progress bars, tests and library users pass [`NoProgress`].
//!
//! Two kinds of events arrive, from worker threads:
//!
//! * the run's bins: [`Progress::start`], [`Progress::bin_started`], [`Progress::file_done`]
//!   (an input file's rows are written), [`Progress::bin_finished`], [`Progress::finish`];
//! * phases: stages whose total is known when they start, reported with
//!   [`Progress::phase_started`], [`Progress::phase_advanced`] and
//!   [`Progress::phase_finished`]. A clustering bin goes through [`Phase::Read`], then,
//!   out of core only, [`Phase::Route`], then [`Phase::Write`]; a run ends with
//!   [`Phase::Commit`]. `verify` reports [`Phase::Fingerprint`] (and
//!   [`Phase::Duplicates`]), `sweep` [`Phase::Sweep`].
//!
//! Within one [`Scope`], phases arrive in that order, each `phase_started` before its
//! advances and every advance before its `phase_finished`; the advances of a phase add up
//! to its total when it finishes. A run that fails or is cancelled may leave a phase
//! without `phase_finished`; [`Progress::bin_finished`] and [`Progress::finish`] still
//! arrive.

use crate::plan::Bin;

/// A stage of a run with a total known when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// Clustering: reading a bin's files, sampling the clustering columns (and keeping the
    /// rows while they fit the memory budget). Counts input bytes (the files' sizes).
    Read,
    /// Out-of-core clustering: reading the bin's files again and routing each row to its
    /// range's spill file. Counts input bytes.
    Route,
    /// Clustering: sorting each range by curve key and writing it. Counts rows written.
    Write,
    /// `optimize --verify`: reading the input and the written files back and
    /// fingerprinting their rows. Counts bytes read.
    Check,
    /// Committing the run (one commit; conflict checks and retries included). Counts
    /// commits: a total of 1.
    Commit,
    /// `verify`: reading both versions' files and fingerprinting their rows. Counts bytes
    /// read.
    Fingerprint,
    /// `verify --unique`: one pass over a version's files looking for repeated keys. Counts
    /// bytes read.
    Duplicates,
    /// `sweep`: building and measuring the combinations of layout and file size. Counts
    /// combinations.
    Sweep,
    /// `recommend`: reading a row sample and scoring the columns the workload filters.
    /// Counts steps: a total of 1.
    Columns,
    /// `recommend`: estimating each candidate layout at each target size. Counts
    /// candidates.
    Estimate,
}

/// What a [`Phase`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unit {
    /// Bytes (of data files, as the log records their sizes).
    Bytes,
    /// Rows.
    Rows,
    /// Whole items: commits, combinations.
    Items,
}

impl Phase {
    /// What the phase counts.
    #[must_use]
    pub fn unit(self) -> Unit {
        match self {
            Self::Read | Self::Route | Self::Check | Self::Fingerprint | Self::Duplicates => {
                Unit::Bytes
            }
            Self::Write => Unit::Rows,
            Self::Commit | Self::Sweep | Self::Columns | Self::Estimate => Unit::Items,
        }
    }

    /// A short lowercase label for a progress line: `reading+sampling`, `routing`, ...
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Read => "reading+sampling",
            Self::Route => "routing",
            Self::Write => "sorting+writing",
            Self::Check => "checking",
            Self::Commit => "committing",
            Self::Fingerprint => "fingerprinting",
            Self::Duplicates => "finding duplicates",
            Self::Sweep => "sweeping",
            Self::Columns => "scoring columns",
            Self::Estimate => "estimating candidates",
        }
    }
}

/// Whose phase an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The whole run (commit, `verify`, `sweep`).
    Run,
    /// One bin of the plan, by [`Bin::id`] (bins run in parallel).
    Bin(usize),
}

/// Called from worker threads as a run advances. Every method defaults to doing nothing.
pub trait Progress: Send + Sync {
    /// A run is about to rewrite `bins` bins holding `input_bytes` bytes.
    fn start(&self, bins: usize, input_bytes: u64) {
        let _ = (bins, input_bytes);
    }
    /// A worker started `bin`.
    fn bin_started(&self, bin: &Bin) {
        let _ = bin;
    }
    /// An input file of `size_bytes` bytes is done: its rows are written (a clustering bin
    /// reports its files when its last range is written).
    fn file_done(&self, size_bytes: u64) {
        let _ = size_bytes;
    }
    /// A worker finished `bin` (successfully or not).
    fn bin_finished(&self, bin: &Bin) {
        let _ = bin;
    }
    /// The rewrite is over; the commit follows.
    fn finish(&self) {}
    /// `phase` of `scope` starts; it will count up to `total` (in [`Phase::unit`]).
    fn phase_started(&self, scope: Scope, phase: Phase, total: u64) {
        let _ = (scope, phase, total);
    }
    /// `phase` of `scope` did `amount` more of its total.
    fn phase_advanced(&self, scope: Scope, phase: Phase, amount: u64) {
        let _ = (scope, phase, amount);
    }
    /// `phase` of `scope` is over.
    fn phase_finished(&self, scope: Scope, phase: Phase) {
        let _ = (scope, phase);
    }
}

/// A [`Progress`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}
