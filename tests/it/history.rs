//! `history`: the OPTIMIZE runs of a table, from delta-layout's own commits and Spark's.

use serde_json::{Value, json};

use crate::cli::{run, stderr};
use crate::fixture::{Fixture, runtime};

fn optimize_json(args: &[&str]) -> Value {
    let output = run(args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The run `history --json` should report for an `optimize --json` outcome.
fn expected_run(outcome: &Value, curve: Value, columns: Value) -> Value {
    json!({
        "operation": "OPTIMIZE",
        "auto": false,
        "version": outcome["version"],
        "read_version": outcome["read_version"],
        "clustering_columns": columns,
        "curve": curve,
        "files_removed": outcome["files_removed"],
        "files_added": outcome["files_added"],
        "bytes_removed": outcome["bytes_removed"],
        "bytes_added": outcome["bytes_added"],
        "engine_info": delta_layout::commit::ENGINE_INFO,
    })
}

/// Leaves out the timestamps and the figures (checked apart) of a run.
fn without_timestamps(run: &Value) -> Value {
    let mut run = run.clone();
    let fields = run.as_object_mut().unwrap();
    fields.remove("timestamp");
    fields.remove("timestamp_ms");
    fields.remove("gain");
    run
}

#[test]
fn lists_a_compaction_and_a_zorder_run_newest_first() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    let location = fixture.location();
    // Before any OPTIMIZE: twelve appends, no run.
    let output = run(&["history", &location, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let history: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(history["runs"], json!([]));

    let compaction = optimize_json(&["optimize", &location, "--json", "--quiet"]);
    assert_eq!(compaction["version"], 12);
    assert_eq!(compaction["files_removed"], 12);
    assert_eq!(compaction["files_added"], 1);
    let zorder = optimize_json(&[
        "optimize",
        &location,
        "--zorder",
        "i",
        "--json",
        "--quiet",
        "--no-report",
    ]);
    assert_eq!(zorder["version"], 13);
    assert_eq!(zorder["files_removed"], 1);
    assert_eq!(zorder["files_added"], 1);

    let output = run(&["history", &location, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let history: Value = serde_json::from_slice(&output.stdout).unwrap();
    // The location as other commands print it (a directory, with its slash).
    assert_eq!(history["table"], format!("{location}/"));
    let runs = history["runs"].as_array().unwrap();
    assert_eq!(
        runs.iter().map(without_timestamps).collect::<Vec<_>>(),
        [
            expected_run(&zorder, json!("zorder"), json!(["i"])),
            expected_run(&compaction, Value::Null, json!([])),
        ]
    );
    // What each run bought: the compaction per full scan (12 files read as 1), the
    // Z-order per run of generated predicates on its column.
    assert_eq!(runs[1]["gain"]["measure"], "full-scan");
    assert_eq!(runs[1]["gain"]["before"]["filesScanned"], 12.0);
    assert_eq!(runs[1]["gain"]["after"]["filesScanned"], 1.0);
    assert_eq!(
        runs[1]["gain"]["bytesRewritten"],
        compaction["bytes_removed"]
    );
    assert_eq!(runs[0]["gain"]["measure"], "default-predicates");
    assert_eq!(runs[0]["gain"]["bytesRewritten"], zorder["bytes_removed"]);
    // Timestamps: ISO 8601 UTC of the commit's own `timestamp`, newest first.
    for run in runs {
        let version = run["version"].as_u64().unwrap();
        let info = fixture
            .commit(version)
            .into_iter()
            .find_map(|a| a.get("commitInfo").cloned())
            .unwrap();
        assert_eq!(run["timestamp_ms"], info["timestamp"]);
        let text = run["timestamp"].as_str().unwrap();
        let parsed = chrono::DateTime::parse_from_rfc3339(text).unwrap();
        assert!(text.ends_with('Z'), "{text}");
        assert_eq!(
            Some(parsed.timestamp_millis()),
            info["timestamp"].as_i64(),
            "{text}"
        );
    }
    assert!(runs[0]["timestamp_ms"].as_i64() >= runs[1]["timestamp_ms"].as_i64());

    // --limit keeps the newest runs.
    let output = run(&["history", &location, "--json", "--limit", "1"]);
    let limited: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(limited["runs"].as_array().unwrap().len(), 1);
    assert_eq!(limited["runs"][0]["version"], 13);

    // The text form: a header and one aligned row per run.
    let output = run(&["history", &location]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("table      {location}/"), "{text}");
    assert!(
        lines[1].starts_with("version  read version  timestamp (UTC)"),
        "{text}"
    );
    // The newest run read the version the compaction committed.
    assert!(lines[2].starts_with("     13            12  "), "{text}");
    assert_eq!(lines.len(), 5, "{text}");
    assert!(
        lines[4].starts_with("scanned/run: before -> after")
            && lines[4].contains("a full scan")
            && lines[4].contains("generated predicates on the clustering columns"),
        "{text}"
    );
    assert!(lines[2].trim_start().starts_with("13  "), "{text}");
    assert!(lines[2].contains(" zorder "), "{text}");
    assert!(lines[3].trim_start().starts_with("12  "), "{text}");
    // Aligned: the engine column starts at the same place in every line.
    let engine = lines[1].find("engine").unwrap();
    for line in &lines[2..4] {
        assert_eq!(
            line.find(delta_layout::commit::ENGINE_INFO),
            Some(engine),
            "{text}"
        );
    }
}

#[test]
fn shows_sparks_zorder_run() {
    let fixture = Fixture::copy("zorder-optimized");
    let history = runtime()
        .block_on(delta_layout::history::history(&fixture.location(), None))
        .unwrap();
    assert_eq!(history.runs.len(), 1, "{history:?}");
    let run = &history.runs[0];
    assert_eq!(run.version, 2);
    assert_eq!(run.read_version, Some(1));
    assert_eq!(run.timestamp.as_deref(), Some("2025-02-22T00:49:57.394Z"));
    assert_eq!(run.timestamp_ms, Some(1_740_185_397_394));
    assert_eq!(run.operation, "OPTIMIZE");
    assert!(!run.auto);
    assert_eq!(run.clustering_columns, ["id"]);
    assert_eq!(run.curve.as_deref(), Some("zorder"));
    assert_eq!(
        (
            run.files_removed,
            run.files_added,
            run.bytes_removed,
            run.bytes_added
        ),
        (Some(2), Some(2), Some(904), Some(904))
    );
    assert_eq!(
        run.engine_info.as_deref(),
        Some("Apache-Spark/3.5.3 Delta-Lake/3.4.0-SNAPSHOT")
    );
}

#[test]
fn shows_databricks_auto_compactions() {
    let fixture = Fixture::copy("databricks-auto-optimize-dv-cdf");
    let history = runtime()
        .block_on(delta_layout::history::history(&fixture.location(), None))
        .unwrap();
    let versions: Vec<u64> = history.runs.iter().map(|r| r.version).collect();
    assert_eq!(versions, [23, 21, 19, 17, 13, 11, 6, 3]);
    assert!(history.runs.iter().all(|r| r.auto && r.curve.is_none()));
    let oldest = &history.runs[7];
    assert_eq!(
        (
            oldest.files_removed,
            oldest.files_added,
            oldest.bytes_removed,
            oldest.bytes_added
        ),
        (Some(2), Some(1), Some(1694), Some(908))
    );
}

#[test]
fn a_path_that_is_not_a_table_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().display().to_string();
    for args in [vec!["history", &empty], vec!["history", &empty, "--json"]] {
        let output = run(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{message}");
        assert!(message.starts_with("delta-layout: "), "{message}");
        assert_eq!(message.trim().lines().count(), 1, "{message}");
        assert!(
            message.contains(&format!(
                "'{empty}' is not a Delta table: it has no _delta_log"
            )),
            "{message}"
        );
        assert!(output.stdout.is_empty());
    }
    let output = run(&["history", &empty, "--limit", "0"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--limit"), "{}", stderr(&output));
}
