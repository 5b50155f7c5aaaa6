//! Concurrent writers: an append lands beside a compaction, a remove of a rewritten file
//! aborts it cleanly.

use std::sync::Arc;

use delta_layout::optimize::{OptimizeOptions, rewrite};
use delta_layout::progress::NoProgress;
use serde_json::{Value, json};

use crate::fixture::{Fixture, load, rows, runtime};

fn first_add(fixture: &Fixture) -> Value {
    fixture
        .commit(0)
        .into_iter()
        .find_map(|a| a.get("add").cloned())
        .unwrap()
}

#[test]
fn concurrent_append_does_not_fail_the_run() {
    let fixture = Fixture::copy("basic-with-checkpoint");
    let location = fixture.location();
    let table = load(&location);
    let read_version = table.version;
    let rt = runtime();
    let rewritten = rt
        .block_on(rewrite(
            table,
            &OptimizeOptions::default(),
            Arc::new(NoProgress),
        ))
        .unwrap();

    // Another writer appends a copy of an existing file.
    let mut add = first_add(&fixture);
    let source = add["path"].as_str().unwrap().to_string();
    std::fs::copy(
        fixture.path.join(&source),
        fixture.path.join("appended.parquet"),
    )
    .unwrap();
    add["path"] = json!("appended.parquet");
    let appended_rows =
        serde_json::from_str::<Value>(add["stats"].as_str().unwrap()).unwrap()["numRecords"]
            .as_u64()
            .unwrap();
    let before_rows = rows(&location);
    fixture.write_commit(
        read_version + 1,
        &[
            json!({"commitInfo": {"operation": "WRITE"}}),
            json!({"add": add}),
        ],
    );
    let with_append = rows(&location);
    assert_eq!(
        with_append.len() as u64,
        before_rows.len() as u64 + appended_rows
    );

    let outcome = rt.block_on(rewritten.commit()).unwrap();
    assert_eq!(outcome.version, Some(read_version + 2));
    assert_eq!(rows(&location), with_append);
    let after = load(&location);
    assert_eq!(
        after.files.len(),
        2,
        "the compacted file and the appended one"
    );
}

#[test]
fn concurrent_remove_of_an_input_aborts_and_cleans_up() {
    let fixture = Fixture::copy("basic-with-checkpoint");
    let location = fixture.location();
    let table = load(&location);
    let read_version = table.version;
    let victim = table.files[0].path.clone();
    let rt = runtime();
    let rewritten = rt
        .block_on(rewrite(
            table,
            &OptimizeOptions::default(),
            Arc::new(NoProgress),
        ))
        .unwrap();
    let written = rewritten.written_paths();
    assert_eq!(written.len(), 1);
    assert!(fixture.path.join(&written[0]).exists());

    fixture.write_commit(
        read_version + 1,
        &[
            json!({"commitInfo": {"operation": "DELETE"}}),
            json!({"remove": {"path": victim, "dataChange": true, "deletionTimestamp": 1}}),
        ],
    );
    let listing = fixture.listing();
    let err = rt.block_on(rewritten.commit()).unwrap_err().to_string();
    assert!(err.contains("concurrent modification"), "{err}");
    assert!(err.contains(&victim), "{err}");
    assert!(
        !fixture.path.join(&written[0]).exists(),
        "written file left behind"
    );
    let mut expected = listing;
    expected.remove(&written[0]);
    assert_eq!(fixture.listing(), expected);
    assert_eq!(fixture.log_versions().last(), Some(&(read_version + 1)));
}

/// A winning commit that is JSON but no Delta reader could load (a remove without a path)
/// stops the commit: nothing is committed on top of it, and the error names its file.
#[test]
fn concurrent_commit_that_is_not_a_delta_action_stops_the_commit() {
    let fixture = Fixture::copy("basic-with-checkpoint");
    let location = fixture.location();
    let table = load(&location);
    let read_version = table.version;
    let rt = runtime();
    let rewritten = rt
        .block_on(rewrite(
            table,
            &OptimizeOptions::default(),
            Arc::new(NoProgress),
        ))
        .unwrap();
    fixture.write_commit(
        read_version + 1,
        &[
            json!({"commitInfo": {"operation": "DELETE"}}),
            json!({"remove": {"dataChange": true}}),
        ],
    );
    let err = rt.block_on(rewritten.commit()).unwrap_err().to_string();
    assert!(
        err.contains(&format!("{:020}.json", read_version + 1))
            && err.contains("not a Delta action (line 2"),
        "{err}"
    );
    assert_eq!(fixture.log_versions().last(), Some(&(read_version + 1)));
}

/// Sets the cancel flag once the first bin has written its files, as Ctrl-C would.
struct CancelAfterFirstBin(Arc<std::sync::atomic::AtomicBool>);

impl delta_layout::progress::Progress for CancelAfterFirstBin {
    fn bin_finished(&self, _bin: &delta_layout::plan::Bin) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn cancelling_mid_run_commits_nothing_and_deletes_written_files() {
    let fixture = Fixture::copy("v2-checkpoint-sidecars");
    let location = fixture.location();
    let listing = fixture.listing();
    let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let options = OptimizeOptions::default()
        .with_plan(
            delta_layout::plan::PlanOptions::default()
                .with_target_file_bytes(Some(3_000))
                .with_min_file_bytes(Some(1_000)),
        )
        .with_threads(1)
        .with_cancel(flag.clone());
    let err = runtime()
        .block_on(delta_layout::optimize::optimize(
            &location,
            &options,
            Arc::new(CancelAfterFirstBin(flag.clone())),
        ))
        .unwrap_err();
    assert!(matches!(err, delta_layout::Error::Cancelled), "{err}");
    assert!(flag.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(
        fixture.listing(),
        listing,
        "files left behind or log changed"
    );
}
