//! Where a run's time went: seconds of wall and of CPU per stage of a rewrite, for
//! `optimize --json`'s `timings` and the text output's `time:` line.
//!
//! Each stage's work is timed where it runs, on the thread that runs it: the wall time of
//! the work (including waits on storage, which take no CPU) and the thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID` on Linux, through the `cpu-time` crate). Both are summed over
//! threads, so with several threads a stage's seconds can pass the run's wall time, and a
//! stage's wall seconds above its CPU seconds are time spent waiting (on storage, or on a
//! lock). Work timed is leaf work (no rayon task inside it), so no second is counted twice.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cpu_time::{ProcessTime, ThreadTime};
use serde::Serialize;

/// A stage of a rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Fetching and decoding the input files (deleted rows dropped, aligned to the schema).
    Read,
    /// Sampling the clustering columns and computing each row's curve key and piece.
    Keys,
    /// Sorting a clustering range's rows by key (and equal keys by value).
    Sort,
    /// Gathering the sorted rows into output batches.
    Gather,
    /// Encoding row groups and collecting file stats.
    Encode,
    /// Waiting for uploads to finish (the bytes sent while encoding are in `Encode`).
    Upload,
    /// Checking for conflicts and writing the commit, after every file was written.
    Commit,
}

/// The stages, in pipeline order.
const STAGES: [Stage; 7] = [
    Stage::Read,
    Stage::Keys,
    Stage::Sort,
    Stage::Gather,
    Stage::Encode,
    Stage::Upload,
    Stage::Commit,
];

impl Stage {
    /// The stage's name in `--json` and the text output.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Stage::Read => "read",
            Stage::Keys => "keys",
            Stage::Sort => "sort",
            Stage::Gather => "gather",
            Stage::Encode => "encode",
            Stage::Upload => "upload",
            Stage::Commit => "commit",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Running totals of a run's stages, shared by its threads.
#[derive(Debug)]
pub struct Clock {
    started: Instant,
    process_cpu: Option<ProcessTime>,
    wall_nanos: [AtomicU64; STAGES.len()],
    cpu_nanos: [AtomicU64; STAGES.len()],
}

impl Default for Clock {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            process_cpu: ProcessTime::try_now().ok(),
            wall_nanos: Default::default(),
            cpu_nanos: Default::default(),
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Clock {
    /// Runs `work` (leaf work: no rayon task inside) and adds its wall and thread CPU time to
    /// `stage`.
    pub fn time<R>(&self, stage: Stage, work: impl FnOnce() -> R) -> R {
        let watch = Self::stopwatch();
        let out = work();
        let (wall, cpu) = watch.elapsed();
        self.add(stage, wall, cpu);
        out
    }

    /// Starts timing work on this thread that [`Clock::time`] cannot wrap (a stage's work
    /// interleaved with another's: add the difference).
    #[must_use]
    pub fn stopwatch() -> Stopwatch {
        Stopwatch {
            wall: Instant::now(),
            cpu: ThreadTime::try_now().ok(),
        }
    }

    /// Adds `wall` and `cpu` to `stage`.
    pub fn add(&self, stage: Stage, wall: Duration, cpu: Duration) {
        self.wall_nanos[stage.index()].fetch_add(nanos(wall), Ordering::Relaxed);
        self.cpu_nanos[stage.index()].fetch_add(nanos(cpu), Ordering::Relaxed);
    }

    /// The totals so far, with the run's wall time since the clock was made and the
    /// process's CPU time since then.
    #[must_use]
    #[expect(clippy::cast_precision_loss, reason = "seconds, shown to 0.01")]
    pub fn timings(&self) -> Timings {
        let seconds = |n: &AtomicU64| n.load(Ordering::Relaxed) as f64 / 1e9;
        Timings {
            stages: STAGES
                .iter()
                .map(|&stage| StageTime {
                    stage: stage.name(),
                    wall_s: seconds(&self.wall_nanos[stage.index()]),
                    cpu_s: seconds(&self.cpu_nanos[stage.index()]),
                })
                .collect(),
            wall_s: self.started.elapsed().as_secs_f64(),
            cpu_s: self.process_cpu.map_or(0.0, |c| c.elapsed().as_secs_f64()),
        }
    }
}

/// Wall and CPU time of this thread since [`Clock::stopwatch`].
#[derive(Debug)]
pub struct Stopwatch {
    wall: Instant,
    cpu: Option<ThreadTime>,
}

impl Stopwatch {
    /// Wall and thread CPU time since the stopwatch started.
    #[must_use]
    pub fn elapsed(&self) -> (Duration, Duration) {
        (
            self.wall.elapsed(),
            self.cpu
                .as_ref()
                .map_or(Duration::ZERO, ThreadTime::elapsed),
        )
    }
}

/// One stage's seconds, summed over threads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageTime {
    /// [`Stage::name`].
    pub stage: &'static str,
    /// Seconds the stage's work ran, summed over threads.
    pub wall_s: f64,
    /// CPU seconds of the stage's work, summed over threads.
    pub cpu_s: f64,
}

/// Where a run's time went ([`Clock::timings`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Timings {
    /// Each stage, in pipeline order.
    pub stages: Vec<StageTime>,
    /// Wall seconds of the whole run.
    pub wall_s: f64,
    /// CPU seconds of the whole process during the run (every stage, and the planning,
    /// stats and bookkeeping no stage counts).
    pub cpu_s: f64,
}

impl Timings {
    /// The share of the run's cores that were busy: CPU seconds over wall seconds times
    /// `threads`; 0 for an instant run.
    #[must_use]
    #[expect(clippy::cast_precision_loss, reason = "thread counts")]
    pub fn cores_busy(&self, threads: usize) -> f64 {
        if self.wall_s <= 0.0 || threads == 0 {
            return 0.0;
        }
        self.cpu_s / (self.wall_s * threads as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_work_adds_its_wall_and_cpu_to_its_stage_only() {
        let clock = Clock::default();
        // Busy work: CPU time close to its wall time.
        let sum = clock.time(Stage::Sort, || {
            let mut v: Vec<u64> = (0..2_000_000u64)
                .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .collect();
            v.sort_unstable();
            v[0]
        });
        assert!(sum < u64::MAX);
        // Waiting: wall time without CPU time.
        clock.time(Stage::Upload, || {
            std::thread::sleep(Duration::from_millis(50));
        });
        let t = clock.timings();
        let of = |name: &str| t.stages.iter().find(|s| s.stage == name).unwrap().clone();
        let (sort, upload, read) = (of("sort"), of("upload"), of("read"));
        assert!(sort.cpu_s > 0.0 && sort.wall_s > 0.0, "{sort:?}");
        assert!(sort.cpu_s <= sort.wall_s * 1.05 + 0.01, "{sort:?}");
        assert!(upload.wall_s >= 0.05, "{upload:?}");
        assert!(upload.cpu_s < 0.02, "{upload:?}");
        assert_eq!((read.wall_s, read.cpu_s), (0.0, 0.0));
        assert_eq!(
            t.stages.iter().map(|s| s.stage).collect::<Vec<_>>(),
            [
                "read", "keys", "sort", "gather", "encode", "upload", "commit"
            ]
        );
        assert!(t.wall_s >= sort.wall_s + upload.wall_s);
        assert!(t.cpu_s >= sort.cpu_s * 0.95);
    }
}
