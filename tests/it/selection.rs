//! `--where` over data columns: a file is rewritten when its stats say it may hold a matching
//! row; files without stats only with `--where-include-unknown` (issue 29).

use std::collections::BTreeSet;

use delta_layout::curve::Curve;
use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::{PlanOptions, PredicateFiles, cluster::ClusterRequest};

use crate::cli::{run, stderr};
use crate::compaction::{Case, write_case_with};
use crate::fixture::{Fixture, load, optimize, rows};

/// 20 files of 100 rows each, unpartitioned: file `i` holds ids `100 i .. 100 i + 99`.
fn twenty_files() -> Case {
    Case {
        seed: 29,
        partitions: vec![None],
        files: (0..20).map(|_| (0, 100)).collect(),
    }
}

fn paths(location: &str) -> BTreeSet<String> {
    load(location)
        .files
        .iter()
        .map(|f| f.path.clone())
        .collect()
}

fn options(predicate: &str) -> PlanOptions {
    PlanOptions::default()
        .with_target_file_bytes(Some(64 << 20))
        .with_predicate(Some(predicate.into()))
}

#[test]
fn a_data_predicate_compacts_only_the_files_whose_stats_may_match() {
    let dir = tempfile::tempdir().unwrap();
    let root = write_case_with(dir.path(), "t", &twenty_files(), &|_| true);
    let fixture = Fixture::at(&root);
    let location = fixture.location();
    let before = rows(&location);
    let files_before = paths(&location);
    let original: Vec<String> = load(&location)
        .files
        .iter()
        .map(|f| f.path.clone())
        .collect();
    // ids below 750: files 0 to 7 (file 7 holds 700..799).
    let outcome = optimize(
        &location,
        &OptimizeOptions::default().with_plan(options("id < 750")),
    )
    .unwrap();
    assert!(outcome.version.is_some());
    assert_eq!(
        outcome.plan.predicate_files,
        Some(PredicateFiles {
            selected: 8,
            ruled_out: 12,
            without_stats: 0,
            without_stats_included: false,
        })
    );
    assert_eq!(outcome.plan.predicate.as_deref(), Some("id < 750"));
    assert_eq!(outcome.files_removed, 8);
    assert_eq!(rows(&location), before);
    let after = paths(&location);
    let kept: BTreeSet<String> = original[8..].iter().cloned().collect();
    assert!(kept.is_subset(&after), "files 8 to 19 stay as they are");
    assert_eq!(
        after.difference(&files_before).count() as u64,
        outcome.files_added
    );
    assert!(original[..8].iter().all(|p| !after.contains(p)));
    // The commit records the predicate, as Spark's OPTIMIZE ... WHERE does.
    let commit = fixture.commit(outcome.version.unwrap());
    let info = commit.iter().find_map(|a| a.get("commitInfo")).unwrap();
    assert_eq!(info["operationParameters"]["predicate"], "[\"id < 750\"]");

    // A predicate no file's stats can match selects nothing.
    let versions = fixture.log_versions();
    let none = optimize(
        &location,
        &OptimizeOptions::default().with_plan(options("id > 1000000")),
    )
    .unwrap();
    assert_eq!(none.version, None);
    assert_eq!(none.plan.predicate_files.unwrap().selected, 0);
    assert_eq!(fixture.log_versions(), versions);
}

#[test]
fn files_without_stats_are_selected_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    // Files 0 to 9 have min/max stats, files 10 to 19 only numRecords.
    let root = write_case_with(dir.path(), "t", &twenty_files(), &|i| i < 10);
    let fixture = Fixture::at(&root);
    let location = fixture.location();
    let before = rows(&location);
    let original: Vec<String> = load(&location)
        .files
        .iter()
        .map(|f| f.path.clone())
        .collect();
    // ids of 500 and more: files 5 to 9 by their stats; 10 to 19 may hold any id.
    let dry = optimize(
        &location,
        &OptimizeOptions::default()
            .with_plan(options("id >= 500"))
            .with_dry_run(true),
    )
    .unwrap();
    assert_eq!(
        dry.plan.predicate_files,
        Some(PredicateFiles {
            selected: 5,
            ruled_out: 5,
            without_stats: 10,
            without_stats_included: false,
        })
    );
    let planned: BTreeSet<usize> = dry.plan.bins().flat_map(|b| b.files.clone()).collect();
    assert_eq!(planned, (5..10).collect());
    let with_unknown = optimize(
        &location,
        &OptimizeOptions::default().with_plan(options("id >= 500").with_include_unknown(true)),
    )
    .unwrap();
    assert_eq!(
        with_unknown.plan.predicate_files,
        Some(PredicateFiles {
            selected: 15,
            ruled_out: 5,
            without_stats: 10,
            without_stats_included: true,
        })
    );
    assert_eq!(with_unknown.files_removed, 15);
    assert_eq!(rows(&location), before);
    let after = paths(&location);
    assert!(original[..5].iter().all(|p| after.contains(p)));
    assert!(original[5..].iter().all(|p| !after.contains(p)));
}

#[test]
fn a_data_predicate_reclusters_the_selected_files_of_an_unpartitioned_table() {
    let dir = tempfile::tempdir().unwrap();
    let root = write_case_with(dir.path(), "t", &twenty_files(), &|_| true);
    let fixture = Fixture::at(&root);
    let location = fixture.location();
    let before = rows(&location);
    let original: Vec<String> = load(&location)
        .files
        .iter()
        .map(|f| f.path.clone())
        .collect();
    // "The last month": ids from 1500 on, files 15 to 19.
    let outcome = optimize(
        &location,
        &OptimizeOptions::default().with_plan(
            options("id BETWEEN 1500 AND 99999")
                .with_clustering(Some(ClusterRequest::new(Curve::Hilbert, vec!["x".into()]))),
        ),
    )
    .unwrap();
    assert!(outcome.version.is_some());
    assert_eq!(outcome.files_removed, 5);
    assert_eq!(rows(&location), before);
    let after = load(&location);
    let paths: BTreeSet<String> = after.files.iter().map(|f| f.path.clone()).collect();
    assert!(original[..15].iter().all(|p| paths.contains(p)));
    // The new files hold ids 1500 to 1999 only.
    for file in after.files.iter().filter(|f| !original.contains(&f.path)) {
        let stats = file.stats.as_ref().unwrap();
        let min = stats.min(&["id".to_string()]).unwrap().as_i64().unwrap();
        let max = stats.max(&["id".to_string()]).unwrap().as_i64().unwrap();
        assert!(min >= 1500 && max <= 1999, "{}: {min}..{max}", file.path);
    }
}

#[test]
fn the_command_line_says_what_the_predicate_selected_and_names_bad_columns() {
    let dir = tempfile::tempdir().unwrap();
    let root = write_case_with(dir.path(), "t", &twenty_files(), &|i| i < 10);
    let location = root.display().to_string();
    let output = run(&[
        "optimize",
        &location,
        "--where",
        "id >= 500",
        "--target-size",
        "64MiB",
        "--dry-run",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains(
            "where id >= 500: 5 files selected by their stats, 5 ruled out, 10 without stats for its columns left out (--where-include-unknown includes them)"
        ),
        "{text}"
    );
    let fixture = Fixture::at(&root);
    crate::cli::expect_error(
        &fixture,
        &["optimize", "{}", "--where", "idd < 3"],
        &["'idd'", "--where", "columns: id, x, s"],
    );
    crate::cli::expect_error(
        &fixture,
        &["optimize", "{}", "--where", "id < 'three'"],
        &["'three'", "column 'id'"],
    );
}

#[test]
fn report_where_reports_on_the_files_optimize_where_would_select() {
    let dir = tempfile::tempdir().unwrap();
    let root = write_case_with(dir.path(), "t", &twenty_files(), &|i| i < 10);
    let location = root.display().to_string();
    let output = run(&["report", &location, "--where", "id >= 500", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    // Files 5 to 9 by their stats; the 10 without stats are left out, as optimize leaves them.
    assert_eq!(report["files"], 5);
    assert_eq!(report["rows"], 500);
    assert_eq!(report["selected_by"]["predicate"], "id >= 500");
    assert_eq!(report["selected_by"]["files"]["ruled_out"], 5);
    assert_eq!(report["selected_by"]["files"]["without_stats"], 10);
    let output = run(&[
        "report",
        &location,
        "--where",
        "id >= 500",
        "--where-include-unknown",
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["files"], 15);
    // The same files `optimize --where` plans.
    let dry = optimize(
        &location,
        &OptimizeOptions::default()
            .with_plan(options("id >= 500").with_include_unknown(true))
            .with_dry_run(true),
    )
    .unwrap();
    assert_eq!(dry.plan.num_input_files(), 15);
    // Without --where, every file.
    let output = run(&["report", &location, "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["files"], 20);
    assert!(report.get("selected_by").is_none());
}

#[test]
fn sweep_where_sweeps_the_selected_files_and_refuses_a_predicate_selecting_none() {
    let dir = tempfile::tempdir().unwrap();
    let root = write_case_with(dir.path(), "t", &twenty_files(), &|_| true);
    let location = root.display().to_string();
    let output = run(&[
        "sweep",
        &location,
        "--where",
        "id >= 1000",
        "--target-sizes",
        "64KiB",
        "--estimate",
        "--json",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["rows"], 1000);
    assert_eq!(report["selected_by"]["files"]["selected"], 10);
    let fixture = Fixture::at(&root);
    crate::cli::expect_error(
        &fixture,
        &[
            "sweep",
            "{}",
            "--where",
            "id > 99999",
            "--target-sizes",
            "64KiB",
            "--estimate",
        ],
        &["--where", "selects no file"],
    );
}

#[test]
fn a_file_the_known_columns_let_match_is_selected_whatever_the_other_branch() {
    let dir = tempfile::tempdir().unwrap();
    // `s` never has min/max here: `id < 250 OR s = 'x'` selects files 0 to 2 by `id`, and
    // the others may match by `s` only: without stats for it, they are left out.
    let root = write_case_with(dir.path(), "t", &twenty_files(), &|_| true);
    let location = root.display().to_string();
    let dry = optimize(
        &location,
        &OptimizeOptions::default()
            .with_plan(options("id < 250 OR s = 'x'"))
            .with_dry_run(true),
    )
    .unwrap();
    assert_eq!(
        dry.plan.predicate_files,
        Some(PredicateFiles {
            selected: 3,
            ruled_out: 0,
            without_stats: 17,
            without_stats_included: false,
        })
    );
}
