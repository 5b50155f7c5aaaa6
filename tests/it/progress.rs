//! Progress and cancellation: a clustering run reports its phases in order with totals equal
//! to the bytes and rows it processed; `verify` and `sweep` report theirs; a cancelled
//! clustering run stops promptly in every phase, leaving the table as it was.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use delta_layout::curve::Curve;
use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::PlanOptions;
use delta_layout::plan::cluster::ClusterRequest;
use delta_layout::progress::{Phase, Progress, Scope};
use deltalake::arrow::array::{Float64Array, Int64Array, RecordBatch, StringArray};
use deltalake::arrow::datatypes::{DataType, Field, Schema};
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

use crate::fixture::{Fixture, load, runtime, synthetic_table};

/// One progress event.
#[derive(Debug, Clone, PartialEq)]
enum Event {
    Start { bins: usize, input_bytes: u64 },
    FileDone(u64),
    Finish,
    Started(Scope, Phase, u64),
    Advanced(Scope, Phase, u64),
    Finished(Scope, Phase),
}

/// Records every event, in arrival order.
#[derive(Default)]
struct Recorder(Mutex<Vec<Event>>);

impl Recorder {
    fn push(&self, event: Event) {
        self.0.lock().unwrap().push(event);
    }
    fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }
}

impl Progress for Recorder {
    fn start(&self, bins: usize, input_bytes: u64) {
        self.push(Event::Start { bins, input_bytes });
    }
    fn file_done(&self, size_bytes: u64) {
        self.push(Event::FileDone(size_bytes));
    }
    fn finish(&self) {
        self.push(Event::Finish);
    }
    fn phase_started(&self, scope: Scope, phase: Phase, total: u64) {
        self.push(Event::Started(scope, phase, total));
    }
    fn phase_advanced(&self, scope: Scope, phase: Phase, amount: u64) {
        self.push(Event::Advanced(scope, phase, amount));
    }
    fn phase_finished(&self, scope: Scope, phase: Phase) {
        self.push(Event::Finished(scope, phase));
    }
}

/// A table `dir/name` of `files` files of `rows_per_file` rows (`a` long, `b` double, `c`
/// string), seeded: equal arguments make equal tables.
fn table(
    dir: &std::path::Path,
    name: &str,
    files: usize,
    rows_per_file: usize,
) -> std::path::PathBuf {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Float64, true),
        Field::new("c", DataType::Utf8, true),
    ]));
    let mut rng = StdRng::seed_from_u64(7);
    let files: Vec<Vec<RecordBatch>> = (0..files)
        .map(|_| {
            // Several batches per file, as a writer streaming rows would make.
            (0..4)
                .map(|_| {
                    let n = rows_per_file / 4;
                    let a: Vec<i64> = (0..n).map(|_| rng.random_range(0..1_000_000)).collect();
                    let b: Vec<f64> = (0..n).map(|_| rng.random_range(-1e6..1e6)).collect();
                    let c: Vec<String> = (0..n)
                        .map(|_| format!("value-{}", rng.random_range(0..100_000)))
                        .collect();
                    RecordBatch::try_new(
                        schema.clone(),
                        vec![
                            Arc::new(Int64Array::from(a)),
                            Arc::new(Float64Array::from(b)),
                            Arc::new(StringArray::from(c)),
                        ],
                    )
                    .unwrap()
                })
                .collect()
        })
        .collect();
    synthetic_table(dir, name, &files)
}

fn zorder(target_file_bytes: u64) -> OptimizeOptions {
    OptimizeOptions::default().with_plan(
        PlanOptions::default()
            .with_target_file_bytes(Some(target_file_bytes))
            .with_clustering(Some(ClusterRequest::new(
                Curve::ZOrder,
                vec!["a".into(), "b".into()],
            ))),
    )
}

/// Position of the first event `matches` accepts; panics naming `what` when there is none.
fn position(events: &[Event], what: &str, matches: impl Fn(&Event) -> bool) -> usize {
    events
        .iter()
        .position(matches)
        .unwrap_or_else(|| panic!("no {what} event in {events:?}"))
}

/// Checks one phase of `scope`: started once with `total`, advanced by amounts adding up to
/// `total`, all between its start and its finish. Returns (start, finish) positions.
fn check_phase(events: &[Event], scope: Scope, phase: Phase, total: u64) -> (usize, usize) {
    let started: Vec<(usize, u64)> = events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::Started(s, p, t) if *s == scope && *p == phase => Some((i, *t)),
            _ => None,
        })
        .collect();
    assert_eq!(
        started.len(),
        1,
        "{phase:?} started {} times",
        started.len()
    );
    let (start, started_total) = started[0];
    assert_eq!(started_total, total, "{phase:?} total");
    let finish = position(events, "finished", |e| *e == Event::Finished(scope, phase));
    let mut done = 0;
    for (i, e) in events.iter().enumerate() {
        if let Event::Advanced(s, p, amount) = e
            && *s == scope
            && *p == phase
        {
            assert!(
                start < i && i < finish,
                "{phase:?} advanced outside its span"
            );
            done += amount;
        }
    }
    assert_eq!(done, total, "{phase:?} advances");
    (start, finish)
}

/// In memory and out of core, a clustering run reports reading+sampling (input bytes),
/// routing only out of core (input bytes), sorting+writing (rows), in that order, then the
/// commit; the run bar's files are done only once they are written.
#[test]
fn clustering_phases_arrive_in_order_with_true_totals() {
    let dir = tempfile::tempdir().unwrap();
    for out_of_core in [false, true] {
        let copy = table(dir.path(), &format!("table-{out_of_core}"), 6, 4_000);
        let location = copy.display().to_string();
        let total = load(&location).totals();
        let recorder = Arc::new(Recorder::default());
        let options = zorder(total.bytes / 4)
            .with_memory_limit(out_of_core.then_some(100_000))
            .with_threads(2);
        let outcome = runtime()
            .block_on(delta_layout::optimize::optimize(
                &location,
                &options,
                recorder.clone(),
            ))
            .unwrap();
        assert_eq!(outcome.rows, 24_000);
        assert_eq!(outcome.bins_spilled, u64::from(out_of_core));
        assert!(outcome.files_added > 1, "{} files", outcome.files_added);
        let events = recorder.events();
        assert_eq!(
            events[0],
            Event::Start {
                bins: 1,
                input_bytes: total.bytes
            }
        );
        let bin = Scope::Bin(0);
        let (_, read_end) = check_phase(&events, bin, Phase::Read, total.bytes);
        let write_start = if out_of_core {
            let (route_start, route_end) = check_phase(&events, bin, Phase::Route, total.bytes);
            assert!(read_end < route_start);
            route_end
        } else {
            assert!(
                !events
                    .iter()
                    .any(|e| matches!(e, Event::Started(_, Phase::Route, _))),
                "routing in memory"
            );
            read_end
        };
        let (write_start_at, write_end) = check_phase(&events, bin, Phase::Write, outcome.rows);
        assert!(write_start < write_start_at);
        // Files are done once written: after the write phase, adding up to the input.
        let files_done: Vec<(usize, u64)> = events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match e {
                Event::FileDone(b) => Some((i, *b)),
                _ => None,
            })
            .collect();
        assert_eq!(files_done.len(), 6);
        assert!(files_done.iter().all(|(i, _)| *i > write_end));
        assert_eq!(files_done.iter().map(|(_, b)| b).sum::<u64>(), total.bytes);
        let finish = position(&events, "finish", |e| *e == Event::Finish);
        let (commit_start, _) = check_phase(&events, Scope::Run, Phase::Commit, 1);
        assert!(files_done.iter().all(|(i, _)| *i < finish));
        assert!(finish < commit_start);
        assert_eq!(
            events.last(),
            Some(&Event::Finished(Scope::Run, Phase::Commit))
        );
    }
}

/// `verify` reads both versions once: its fingerprint phase counts their bytes; `--unique`
/// adds a pass per version.
#[test]
fn verify_reports_the_bytes_it_reads() {
    let fixture = Fixture::copy("multipart-checkpoint");
    let table = load(&fixture.location());
    let bytes = table.totals().bytes;
    let recorder = Recorder::default();
    let report = {
        let rt = runtime();
        let _guard = rt.enter();
        delta_layout::verify::verify_with_progress(
            &table,
            &table,
            Some(&["id".to_string()]),
            &recorder,
        )
        .unwrap()
    };
    assert!(report.equal);
    let events = recorder.events();
    let (_, end) = check_phase(&events, Scope::Run, Phase::Fingerprint, 2 * bytes);
    // Same version twice: one duplicate search of one pass, and a second pass over the
    // files when key hashes repeat; each pass counts the version's bytes.
    let passes = 1 + u64::from(report.duplicates[0].duplicated_keys > 0);
    let duplicates: Vec<&Event> = events[end..]
        .iter()
        .filter(|e| match e {
            Event::Started(_, p, _) | Event::Advanced(_, p, _) | Event::Finished(_, p) => {
                *p == Phase::Duplicates
            }
            _ => false,
        })
        .collect();
    let starts: Vec<u64> = duplicates
        .iter()
        .filter_map(|e| match e {
            Event::Started(Scope::Run, _, total) => Some(*total),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![bytes; usize::try_from(passes).unwrap()]);
    let read: u64 = duplicates
        .iter()
        .filter_map(|e| match e {
            Event::Advanced(Scope::Run, _, amount) => Some(*amount),
            _ => None,
        })
        .sum();
    assert_eq!(read, passes * bytes);
}

/// `sweep` counts the combinations it builds.
#[test]
fn sweep_counts_combinations() {
    let fixture = Fixture::copy("multipart-checkpoint");
    let recorder = Arc::new(Recorder::default());
    let options = delta_layout::sweep::SweepOptions {
        target_sizes: vec![2048, 65536],
        layouts: vec![delta_layout::simulate::Layout::Compact],
        sample: None,
        scratch: None,
        report: delta_layout::report::ReportOptions {
            queries: 20,
            ..Default::default()
        },
        memory_limit_bytes: None,
        cancel: Arc::default(),
        estimate: false,
        predicate: None,
        include_unknown: false,
        workload: None,
    };
    let report = runtime()
        .block_on(delta_layout::sweep::sweep(
            &fixture.location(),
            &options,
            recorder.clone(),
        ))
        .unwrap();
    assert_eq!(report.combinations.len(), 2);
    let events = recorder.events();
    let (start, end) = check_phase(&events, Scope::Run, Phase::Sweep, 2);
    // Each build's own events come in between.
    let builds = events[start..end]
        .iter()
        .filter(|e| matches!(e, Event::Start { .. }))
        .count();
    assert_eq!(builds, 2);
}

/// Sends one message the first time `phase` advances.
struct Trigger {
    phase: Phase,
    fired: AtomicBool,
    signal: Mutex<mpsc::Sender<()>>,
}

impl Progress for Trigger {
    fn phase_advanced(&self, _scope: Scope, phase: Phase, _amount: u64) {
        if phase == self.phase && !self.fired.swap(true, Ordering::SeqCst) {
            let _ = self.signal.lock().unwrap().send(());
        }
    }
}

/// A clustering run of 320,000 rows, cancelled from another thread while it reads, routes
/// (out of core) or sorts and writes: it returns `Cancelled` within seconds, with no data
/// file, spill file or commit left behind.
#[test]
fn cancelling_a_clustering_run_stops_promptly_in_every_phase() {
    let dir = tempfile::tempdir().unwrap();
    for (phase, memory_limit) in [
        (Phase::Read, None),
        (Phase::Write, None),
        (Phase::Route, Some(1 << 20)),
        (Phase::Write, Some(1 << 20)),
    ] {
        let name = format!("{phase:?}-{}", memory_limit.is_some());
        let copy = table(dir.path(), &name, 8, 40_000);
        let fixture = Fixture::at(&copy);
        let total = load(&fixture.location()).totals();
        let listing = fixture.listing();
        let spill = dir.path().join(format!("spill-{name}"));
        std::fs::create_dir_all(&spill).unwrap();
        let cancel = Arc::new(AtomicBool::new(false));
        // One range: without checks inside the range, the whole table is written first.
        let options = zorder(total.bytes * 2)
            .with_memory_limit(memory_limit)
            .with_spill_directory(Some(spill.clone()))
            .with_threads(2)
            .with_cancel(cancel.clone());
        let (sender, receiver) = mpsc::channel();
        let trigger = Arc::new(Trigger {
            phase,
            fired: AtomicBool::new(false),
            signal: Mutex::new(sender),
        });
        let canceller = {
            let cancel = cancel.clone();
            std::thread::spawn(move || {
                receiver.recv().ok()?;
                cancel.store(true, Ordering::SeqCst);
                Some(Instant::now())
            })
        };
        let location = fixture.location();
        let result = runtime().block_on(delta_layout::optimize::optimize(
            &location, &options, trigger,
        ));
        let returned = Instant::now();
        let cancelled_at = canceller
            .join()
            .unwrap()
            .unwrap_or_else(|| panic!("{name}: the run never reached {phase:?}"));
        let err = result.unwrap_err();
        assert!(
            matches!(err, delta_layout::Error::Cancelled),
            "{name}: {err}"
        );
        let latency = returned.duration_since(cancelled_at);
        eprintln!("{name}: returned {latency:?} after the cancel flag was set");
        assert!(
            latency < Duration::from_secs(5),
            "{name}: took {latency:?} to stop"
        );
        assert_eq!(fixture.listing(), listing, "{name}: table changed");
        assert_eq!(
            std::fs::read_dir(&spill).unwrap().count(),
            0,
            "{name}: spill files left"
        );
    }
}
