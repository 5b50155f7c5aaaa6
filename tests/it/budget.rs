//! Budgeted runs (issue 39): a byte budget and a time budget, the gain gate, the regression
//! guard, what each run bought in the log (`history`), and the decay since (`report --decay`).

use std::sync::Arc;

use delta_layout::gain::{GainRecord, MeasureSource};
use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::PlanOptions;
use delta_layout::plan::cluster::ClusterRequest;
use delta_layout::prepare::Budget;
use delta_layout::workload::Workload;
use serde_json::Value;

use crate::cli::{run as cli, stderr};
use crate::fixture::{Fixture, load, optimize, rows};

/// Deletion vectors, column mapping `name`, ten partitions of one or two small files.
const TABLE: &str = "dv-columnmapping-partitioned";
const WORKLOAD: &str = "3\tcol1 < 8\ncol1 BETWEEN 20 AND 25\n2\tcol2 = 4\n";

fn workload(fixture: &Fixture) -> String {
    let path = fixture.path.join("..").join("queries.workload");
    std::fs::write(&path, WORKLOAD).unwrap();
    path.display().to_string()
}

fn hilbert(target: u64) -> PlanOptions {
    PlanOptions::default()
        .with_target_file_bytes(Some(target))
        .with_clustering(Some(ClusterRequest::new(
            delta_layout::curve::Curve::Hilbert,
            vec!["col1".into(), "col2".into()],
        )))
}

/// The `commitInfo` of commit `version`.
fn commit_info(fixture: &Fixture, version: u64) -> Value {
    fixture
        .commit(version)
        .into_iter()
        .find_map(|a| a.get("commitInfo").cloned())
        .expect("a commitInfo")
}

#[test]
fn a_byte_budget_takes_the_best_bins_first_and_never_passes_by_more_than_one() {
    let fixture = Fixture::copy(TABLE);
    let location = fixture.location();
    let before = rows(&location);
    let measure = Arc::new(Workload::parse(WORKLOAD, "w").unwrap());
    let budget_bytes = 3000;
    let options = OptimizeOptions::default()
        .with_plan(hilbert(600))
        .with_workload(Some(measure.clone()))
        .with_budget(Budget::new(Some(budget_bytes), None, None))
        .unwrap();
    let outcome = optimize(&location, &options).unwrap();
    let selection = outcome.selection.clone().expect("a selection");
    assert_eq!(selection.measure, Some(MeasureSource::Workload));
    assert_eq!(rows(&location), before, "every row kept");
    // The units taken are the best by saving per byte, in that order.
    let mut ranked = selection.units.clone();
    ranked.sort_by(|a, b| b.gain_per_byte().total_cmp(&a.gain_per_byte()));
    let taken: Vec<usize> = ranked
        .iter()
        .flat_map(|u| u.bins.clone())
        .take(selection.bins_taken.len())
        .collect();
    assert_eq!(selection.bins_taken, taken);
    assert!(selection.bins_over_budget > 0, "{selection:?}");
    // Never more than one unit past the budget: without the last one taken it was under.
    let last = ranked
        .iter()
        .find(|u| u.bins.contains(selection.bins_taken.last().unwrap()))
        .unwrap();
    assert!(selection.bytes_taken - last.input_bytes < budget_bytes);
    assert_eq!(outcome.bytes_removed, selection.bytes_taken);
    assert_eq!(
        selection.bytes_taken + selection.bytes_over_budget,
        selection.bytes_planned
    );
    // The next runs take what was left, and then nothing is left.
    let second = optimize(&location, &options).unwrap();
    assert!(second.version.is_some());
    assert_eq!(rows(&location), before);
    let mut runs = 2;
    while optimize(&location, &options).unwrap().version.is_some() {
        runs += 1;
        assert!(runs < 10, "the budgeted runs never end");
    }
    assert_eq!(rows(&location), before);
    let full = optimize(
        &location,
        &OptimizeOptions::default().with_plan(hilbert(600)),
    )
    .unwrap();
    assert_eq!(full.version, None, "budgeted runs left nothing to do");
}

#[test]
fn the_commit_records_what_report_computes_on_the_committed_version() {
    let fixture = Fixture::copy(TABLE);
    let location = fixture.location();
    let path = workload(&fixture);
    let output = cli(&[
        "optimize",
        &location,
        "--hilbert",
        "col1,col2",
        "--target-size",
        "600",
        "--workload",
        &path,
        "--max-rewrite-bytes",
        "4KiB",
        "--json",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let version = json["version"].as_u64().unwrap();
    let info = commit_info(&fixture, version);
    let record = GainRecord::of_commit_info(&info).expect("a gain record");
    assert_eq!(record.measure, MeasureSource::Workload);
    assert_eq!((record.queries, record.runs), (3, 6));
    assert_eq!(record.max_rewrite_bytes, Some(4096));
    assert_eq!(
        record.bytes_rewritten,
        json["bytes_removed"].as_u64().unwrap()
    );
    assert!(record.bins_left > 0);
    assert_eq!(
        info["delta-layout.workload"].as_str(),
        Some("3\tcol1 < 8\ncol1 BETWEEN 20 AND 25\n2\tcol2 = 4\n")
    );
    // The recorded figures are the scorer's on the version read and the one committed.
    let measure = Workload::parse(WORKLOAD, "w").unwrap();
    let score = |v: u64| {
        let table = crate::fixture::runtime()
            .block_on(delta_layout::table::TableView::load(
                location.as_str(),
                Some(v),
            ))
            .unwrap();
        delta_layout::report::score::score(&table, &measure).unwrap()
    };
    let (before, after) = (score(version - 1), score(version));
    assert_eq!(record.before.files_scanned, before.files_scanned);
    assert_eq!(record.before.bytes_scanned, before.bytes_scanned);
    assert_eq!(record.after.files_scanned, after.files_scanned);
    assert_eq!(record.after.bytes_scanned, after.bytes_scanned);
    // `report --workload` says the same of the committed version.
    let output = cli(&["report", &location, "--workload", &path, "--json"]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        report["workload"]["files_scanned"].as_f64(),
        Some(record.after.files_scanned)
    );
    assert_eq!(
        report["workload"]["bytes_scanned"].as_f64(),
        Some(record.after.bytes_scanned)
    );
    // `history` shows them, in text and JSON.
    let output = cli(&["history", &location, "--json"]);
    let history: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        history["runs"][0]["gain"]["after"]["filesScanned"].as_f64(),
        Some(record.after.files_scanned)
    );
    let output = cli(&["history", &location]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains(&format!(
            "{:.1} -> {:.1}",
            record.before.files_scanned, record.after.files_scanned
        )),
        "{text}"
    );
    assert!(text.contains("files scanned/run"), "{text}");

    // A later run without --workload is measured on the recorded one.
    let output = cli(&[
        "optimize",
        &location,
        "--hilbert",
        "col1,col2",
        "--target-size",
        "600",
        "--json",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let version = json["version"].as_u64().unwrap();
    let record = GainRecord::of_commit_info(&commit_info(&fixture, version)).unwrap();
    assert_eq!(record.measure, MeasureSource::RecordedWorkload);
    assert_eq!(record.runs, 6);
    assert_eq!(record.after.files_scanned, score(version).files_scanned);
}

#[test]
fn a_run_with_nothing_worth_doing_exits_4_and_leaves_the_table() {
    let fixture = Fixture::copy(TABLE);
    let location = fixture.location();
    let path = workload(&fixture);
    let args = |extra: &[&str]| {
        let mut args = vec![
            "optimize",
            location.as_str(),
            "--hilbert",
            "col1,col2",
            "--target-size",
            "600",
            "--workload",
            path.as_str(),
            "-q",
        ];
        args.extend_from_slice(extra);
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |extra: &[&str]| {
        let args = args(extra);
        cli(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // Clustering files of a few rows saves little: a gate of 0.01% lets it run.
    let output = run(&["--min-gain", "0.0001", "--no-report"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let before = rows(&location);
    let listing = fixture.listing();
    // Laid out: nothing is worth doing.
    let output = run(&["--min-gain", "0.05", "--json"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["nothing_worth_doing"], true);
    assert_eq!(json["version"], Value::Null);
    assert_eq!(fixture.listing(), listing, "the table is untouched");
    assert_eq!(rows(&location), before);
    let output = run(&["--min-gain", "0.05"]);
    assert_eq!(output.status.code(), Some(4));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("nothing worth doing at version"), "{text}");
    // Without --min-gain a run with nothing to do is a success, as before.
    assert_eq!(run(&[]).status.code(), Some(0));
    // `plan` says the same.
    let output = cli(&[
        "plan",
        &location,
        "--hilbert",
        "col1,col2",
        "--target-size",
        "600",
        "--min-gain",
        "0.05",
    ]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(stderr(&output).contains("nothing worth doing"));
    // A gate no bin passes: a new table, laid out on a column no query reads.
    let fixture = Fixture::copy(TABLE);
    let location = fixture.location();
    let path = workload(&fixture);
    let output = cli(&[
        "optimize",
        &location,
        "--zorder",
        "col2",
        "--target-size",
        "600",
        "--workload",
        &path,
        "--min-gain",
        "0.99",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert_eq!(fixture.log_versions().last(), Some(&15));
}

#[test]
fn a_layout_that_scans_more_is_refused_with_exit_code_5() {
    let fixture = Fixture::copy(TABLE);
    let location = fixture.location();
    let path = fixture.path.join("..").join("col1.workload");
    std::fs::write(&path, "col1 = 3\ncol1 = 17\ncol1 BETWEEN 10 AND 12\n").unwrap();
    let path = path.display().to_string();
    let laid_out = cli(&[
        "optimize",
        &location,
        "--hilbert",
        "col1",
        "--target-size",
        "600",
        "--workload",
        &path,
        "-q",
        "--no-report",
    ]);
    assert_eq!(laid_out.status.code(), Some(0), "{}", stderr(&laid_out));
    let before = rows(&location);
    let listing = fixture.listing();
    let versions = fixture.log_versions();
    // One partition reclustered on another column, measured on the recorded col1 workload:
    // its one bin makes the workload dearer, so the run is refused (with several bins, those
    // that do are dropped and the others committed: the next test).
    let args = [
        "optimize",
        location.as_str(),
        "--zorder",
        "col2",
        "--full",
        "--where",
        "part = 5",
        "--target-size",
        "600",
        "-q",
    ];
    let output = cli(&args);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(5), "{message}");
    assert!(message.contains("layout regression on"), "{message}");
    assert!(
        message.contains("the workload recorded at version 16"),
        "{message}"
    );
    assert!(message.contains("--allow-regression"), "{message}");
    assert_eq!(fixture.listing(), listing, "written files deleted");
    assert_eq!(fixture.log_versions(), versions, "nothing committed");
    // Allowed, it commits, and the record says it scans more.
    let mut allowed = args.to_vec();
    allowed.extend(["--allow-regression", "--json"]);
    let output = cli(&allowed);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(rows(&location), before);
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let version = json["version"].as_u64().unwrap();
    let record = GainRecord::of_commit_info(&commit_info(&fixture, version)).unwrap();
    assert!(record.after.regresses(&record.before), "{record:?}");
}

#[test]
fn a_time_budget_starts_no_bin_after_its_deadline() {
    let fixture = Fixture::copy(TABLE);
    let location = fixture.location();
    let before = rows(&location);
    let past = OptimizeOptions::default()
        .with_plan(hilbert(600))
        .with_budget(Budget::new(
            None,
            Some(std::time::Duration::from_nanos(1)),
            None,
        ))
        .unwrap();
    let outcome = optimize(&location, &past).unwrap();
    assert_eq!(outcome.version, None);
    assert_eq!(
        outcome.bins_past_deadline,
        outcome.plan.bins().count() as u64
    );
    assert_eq!(
        outcome.bytes_past_deadline,
        outcome.plan.bins().map(|b| b.input_bytes).sum::<u64>()
    );
    assert_eq!(fixture.log_versions().last(), Some(&15));
    let hour = OptimizeOptions::default()
        .with_plan(hilbert(600))
        .with_budget(Budget::new(
            None,
            Some(std::time::Duration::from_secs(3600)),
            None,
        ))
        .unwrap();
    let outcome = optimize(&location, &hour).unwrap();
    assert_eq!(outcome.bins_past_deadline, 0);
    assert_eq!(outcome.bins, outcome.plan.bins().count() as u64);
    assert_eq!(rows(&location), before);
    let output = cli(&["optimize", &location, "--max-duration", "3 weeks"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("invalid value for --max-duration"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn report_decay_measures_the_layout_since_the_last_run() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    let location = fixture.location();
    let table = load(&location);
    let column = table.data_leaf_columns()[0].display_name();
    let output = cli(&[
        "optimize",
        &location,
        "--hilbert",
        &column,
        "--target-size",
        "600",
        "-q",
        "--no-report",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let run_version = fixture.log_versions().last().copied().unwrap();
    let decay = |fixture: &Fixture| -> Value {
        let output = cli(&["report", &fixture.location(), "--decay", "--json"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let json: Value = serde_json::from_slice(&output.stdout).unwrap();
        json["decay"].clone()
    };
    let fresh = decay(&fixture);
    assert_eq!(fresh["run_version"], run_version);
    assert_eq!(fresh["measure"], "default-predicates");
    assert_eq!(fresh["files_since"], 0);
    assert_eq!(fresh["after_run"], fresh["now"]);
    // Measured on the predicates the run drew: what it recorded, to the byte.
    assert_eq!(fresh["after_run"], fresh["recorded_after"], "{fresh}");
    assert_eq!(fresh["restore_bytes"], 0);
    // Another writer appends a copy of every file: scans grow, and restoring costs about
    // the appended bytes (new files join the cubes).
    let appended = fixture.double_files();
    let later = decay(&fixture);
    assert_eq!(later["files_since"], appended);
    assert!(
        later["now"]["filesScanned"].as_f64() > later["after_run"]["filesScanned"].as_f64(),
        "{later}"
    );
    assert!(later["files_scanned_growth"].as_f64().unwrap() > 0.0);
    let output = cli(&[
        "optimize",
        &location,
        "--hilbert",
        &column,
        "--target-size",
        "600",
        "--dry-run",
        "--json",
    ]);
    let plan: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(later["restore_bytes"], plan["bytes_removed"], "{later}");
    // In words too; a table no run laid out has nothing to say.
    let text = String::from_utf8_lossy(&cli(&["report", &location, "--decay"]).stdout).into_owned();
    assert!(
        text.contains("decay since the layout run of version"),
        "{text}"
    );
    let other = Fixture::copy(TABLE);
    let text = String::from_utf8_lossy(&cli(&["report", &other.location(), "--decay"]).stdout)
        .into_owned();
    assert!(text.contains("decay: no layout run"), "{text}");
}

#[test]
fn the_guard_drops_the_bins_that_make_the_workload_dearer_and_commits_the_others() {
    let fixture = Fixture::copy(TABLE);
    let location = fixture.location();
    // Partition 1 holds col1 in [1, 21] and [31, 41]: compacted into one file, the frequent
    // query for 28 (in the gap) would scan a file where it scans none.
    let path = fixture.path.join("..").join("gap.workload");
    std::fs::write(&path, "10\tcol1 = 28 AND part = 1\ncol1 >= 0\n").unwrap();
    let path = path.display().to_string();
    // Recorded by a first run (clustering partition 0 only).
    let first = cli(&[
        "optimize",
        &location,
        "--zorder",
        "col1",
        "--workload",
        &path,
        "--where",
        "part = 0",
        "-q",
        "--no-report",
    ]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let before = rows(&location);
    let part_one: std::collections::BTreeSet<String> = load(&location)
        .files
        .iter()
        .filter(|f| f.raw_partition_values == [Some("1".to_string())])
        .map(|f| f.path.clone())
        .collect();
    assert_eq!(part_one.len(), 2);
    let output = cli(&[
        "optimize",
        &location,
        "--target-size",
        "1MiB",
        "--json",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["bins_regressed"], 1, "{json}");
    assert!(json["bins"].as_u64().unwrap() >= 4, "{json}");
    assert_eq!(rows(&location), before);
    let after = load(&location);
    let still: std::collections::BTreeSet<String> = after
        .files
        .iter()
        .filter(|f| f.raw_partition_values == [Some("1".to_string())])
        .map(|f| f.path.clone())
        .collect();
    assert_eq!(still, part_one, "partition 1 is left as it was");
    let record =
        GainRecord::of_commit_info(&commit_info(&fixture, json["version"].as_u64().unwrap()))
            .unwrap();
    assert_eq!(record.measure, MeasureSource::RecordedWorkload);
    assert!(!record.after.regresses(&record.before), "{record:?}");
    assert!(record.bins_left >= 1);
    // Every file the dropped bin wrote is gone: the table's directory holds only live files
    // and the ones earlier versions name.
    let live: std::collections::BTreeSet<String> =
        after.files.iter().map(|f| f.path.clone()).collect();
    let dir = fixture
        .path
        .join(part_one.iter().next().unwrap())
        .parent()
        .unwrap()
        .to_path_buf();
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            live.iter().any(|p| p.ends_with(&name))
                || !name.contains(json["plan"]["plan"]["run_id"].as_str().unwrap()),
            "{name} was written by the dropped bin and kept"
        );
    }
}

#[test]
fn bad_options_and_workloads_are_refused_before_anything_is_written() {
    let fixture = Fixture::copy(TABLE);
    let location = fixture.location();
    let listing = fixture.listing();
    let bad = fixture.path.join("..").join("bad.workload");
    std::fs::write(&bad, "col1 < 8\nnosuch > 5\n").unwrap();
    let bad = bad.display().to_string();
    for dry_run in [true, false] {
        let mut args = vec![
            "optimize",
            &location,
            "--zorder",
            "col1,col2",
            "--target-size",
            "600",
            "--workload",
            &bad,
        ];
        if dry_run {
            args.push("--dry-run");
        }
        let output = cli(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{message}");
        assert!(
            message.contains("line 2") && message.contains("nosuch"),
            "{message}"
        );
        assert_eq!(fixture.listing(), listing);
    }
    // A duration past what the clock can add is no deadline, not a crash.
    let output = cli(&[
        "optimize",
        &location,
        "--target-size",
        "600",
        "--max-duration",
        "200000000000000d",
        "-q",
        "--no-report",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_small_budget_under_a_gate_still_takes_the_best_bin() {
    let fixture = Fixture::copy(TABLE);
    let location = fixture.location();
    let path = workload(&fixture);
    let before = rows(&location);
    let output = cli(&[
        "optimize",
        &location,
        "--hilbert",
        "col1,col2",
        "--target-size",
        "600",
        "--workload",
        &path,
        "--max-rewrite-bytes",
        "1",
        "--min-gain",
        "0.0001",
        "--json",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        json["selection"]["bins_taken"].as_array().unwrap().len(),
        1,
        "{json}"
    );
    assert!(json["version"].is_u64(), "{json}");
    assert_eq!(rows(&location), before);
}

#[test]
fn report_decay_falls_back_when_the_recorded_workload_no_longer_reads() {
    let fixture = Fixture::copy(TABLE);
    let location = fixture.location();
    let path = workload(&fixture);
    let output = cli(&[
        "optimize",
        &location,
        "--hilbert",
        "col1,col2",
        "--target-size",
        "600",
        "--workload",
        &path,
        "-q",
        "--no-report",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let version = *fixture.log_versions().last().unwrap();
    // Another tool edits the recorded workload into something that is not one.
    let file = fixture
        .path
        .join("_delta_log")
        .join(format!("{version:020}.json"));
    let text = std::fs::read_to_string(&file).unwrap();
    let edited: Vec<String> = text
        .lines()
        .map(|line| {
            let mut action: Value = serde_json::from_str(line).unwrap();
            if let Some(info) = action.get_mut("commitInfo") {
                info["delta-layout.workload"] = Value::String("nosuch >>> 5\n".into());
            }
            action.to_string()
        })
        .collect();
    std::fs::write(&file, edited.join("\n") + "\n").unwrap();
    let output = cli(&["report", &location, "--decay", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("cannot be read"),
        "{}",
        stderr(&output)
    );
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["decay"]["run_version"], version);
    assert_eq!(json["decay"]["measure"], "default-predicates");
}
