//! Progress hooks. The library never writes to a terminal: the binary implements
//! [`Progress`] with a progress bar, tests and library users pass [`NoProgress`].

use crate::plan::Bin;

/// Called from worker threads as the rewrite advances.
pub trait Progress: Send + Sync {
    /// A run is about to rewrite `bins` bins holding `input_bytes` bytes.
    fn start(&self, bins: usize, input_bytes: u64) {
        let _ = (bins, input_bytes);
    }
    /// A worker started `bin`.
    fn bin_started(&self, bin: &Bin) {
        let _ = bin;
    }
    /// An input file of `size_bytes` bytes was fully read and written.
    fn file_done(&self, size_bytes: u64) {
        let _ = size_bytes;
    }
    /// A worker finished `bin` (successfully or not).
    fn bin_finished(&self, bin: &Bin) {
        let _ = bin;
    }
    /// The rewrite is over; the commit follows.
    fn finish(&self) {}
}

/// A [`Progress`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}
