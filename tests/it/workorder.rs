//! Work orders: `plan`, `execute` in parallel processes, `commit` in batches, on real tables.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::cli::{run, stderr};
use crate::fixture::{Fixture, load, rows, rows_with_row_ids, runtime};

const BIN: &str = env!("CARGO_BIN_EXE_delta-layout");

/// Recomputes the checksums of a result document's results, as a worker that computed
/// wrong values would have written them.
fn reseal(doc: &mut Value) {
    for result in doc["results"].as_array_mut().unwrap() {
        let parsed: delta_layout::workorder::BinResult =
            serde_json::from_value(result.clone()).unwrap();
        *result = serde_json::to_value(parsed.seal().unwrap()).unwrap();
    }
}

/// Runs the binary, expects exit code 0, returns standard output.
fn ok(args: &[&str]) -> String {
    let output = run(args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{args:?}: {}",
        stderr(&output)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Plans `table` into `dir/plan.json` with `options`; returns the order as JSON.
fn plan(table: &str, dir: &Path, options: &[&str]) -> Value {
    let out = dir.join("plan.json");
    let mut args = vec!["plan", table, "--out", out.to_str().unwrap()];
    args.extend_from_slice(options);
    ok(&args);
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

fn bin_ids(order: &Value) -> Vec<u64> {
    order["plan"]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["bins"].as_array().unwrap().iter())
        .map(|b| b["id"].as_u64().unwrap())
        .collect()
}

/// Executes `bins` in parallel processes (`xargs -P 3`), one result file per bin:
/// `dir/r<bin>.json`.
fn execute_in_processes(dir: &Path, bins: &[u64]) {
    let ids: Vec<String> = bins.iter().map(ToString::to_string).collect();
    let plan = dir.join("plan.json");
    let script = format!(
        "printf '%s\\n' {} | xargs -P 3 -I{{}} '{BIN}' execute '{}' --bin {{}} --out '{}/r{{}}.json' --quiet",
        ids.join(" "),
        plan.display(),
        dir.display()
    );
    let status = Command::new("sh").arg("-c").arg(&script).status().unwrap();
    assert!(status.success(), "{script}");
}

fn result_files(dir: &Path, bins: &[u64]) -> Vec<String> {
    bins.iter()
        .map(|b| dir.join(format!("r{b}.json")).display().to_string())
        .collect()
}

/// Every data file of the latest snapshot: (partition values, stats), a multiset.
fn layout(location: &str) -> BTreeMap<String, usize> {
    let table = load(location);
    let mut out = BTreeMap::new();
    for file in &table.files {
        let add = delta_layout::table::TableView::add_action(file);
        let mut stats: Value = serde_json::from_str(add.stats.as_deref().unwrap()).unwrap();
        // Bounds and counts, not how tight the writer says they are.
        stats.as_object_mut().unwrap().remove("tightBounds");
        let key = format!("{:?} {}", file.partition_values, stats);
        *out.entry(key).or_default() += 1;
    }
    out
}

/// Files under the table root whose name holds `run_id`.
fn files_of_run(root: &Path, run_id: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in walk(root) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains(run_id) && !entry.to_string_lossy().contains("_delta_log") {
            out.push(
                entry
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Copies the table at `from` to a fresh directory (for the one-process comparison).
fn copy_table(from: &Fixture) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("copy");
    let status = Command::new("cp")
        .arg("-r")
        .arg(&from.path)
        .arg(&to)
        .status()
        .unwrap();
    assert!(status.success());
    (dir, to.display().to_string())
}

#[test]
fn bins_in_parallel_processes_commit_in_batches_like_one_optimize() {
    // Deletion vectors, column mapping and ten partitions; every file doubled, so every
    // partition has files to compact, in several bins at a 1 KiB target.
    let table = Fixture::copy("dv-columnmapping-partitioned");
    table.double_files();
    let location = table.location();
    let (_copy_dir, copy) = copy_table(&table);
    let before = rows(&location);
    let work = tempfile::tempdir().unwrap();
    let order = plan(&location, work.path(), &["--target-size", "4KiB"]);
    let run_id = order["plan"]["run_id"].as_str().unwrap().to_string();
    let bins = bin_ids(&order);
    assert!(bins.len() >= 6, "{bins:?}");
    let read_version = order["table"]["version"].as_u64().unwrap();
    assert_eq!(
        table.next_version(),
        read_version + 1,
        "plan writes nothing"
    );
    assert!(files_of_run(&table.path, &run_id).is_empty());
    // No secret and no relative path: the table is named by its absolute URL.
    assert!(
        order["table"]["uri"]
            .as_str()
            .unwrap()
            .starts_with("file:///"),
        "{}",
        order["table"]["uri"]
    );

    // Bin `lost` runs once to the end but its result never arrives (a worker lost after
    // writing), then runs again; bin `killed` is killed while it runs, then runs again.
    let lost = bins[1];
    let killed = bins[2];
    ok(&[
        "execute",
        work.path().join("plan.json").to_str().unwrap(),
        "--bin",
        &lost.to_string(),
        "--quiet",
    ]);
    let stray = files_of_run(&table.path, &run_id);
    assert!(!stray.is_empty());
    let mut child = Command::new(BIN)
        .args([
            "execute",
            work.path().join("plan.json").to_str().unwrap(),
            "--bin",
            &killed.to_string(),
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(40));
    let _ = child.kill();
    let _ = child.wait();
    execute_in_processes(work.path(), &bins);
    assert_eq!(
        table.next_version(),
        read_version + 1,
        "execute commits nothing"
    );
    assert_eq!(rows(&location), before, "execute changes no row");

    // Commit, two bins per commit.
    let plan_path = work.path().join("plan.json").display().to_string();
    let results = result_files(work.path(), &bins);
    let mut args = vec!["commit", plan_path.as_str(), "--batch-size", "2", "--json"];
    args.extend(results.iter().map(String::as_str));
    let outcome: Value = serde_json::from_str(&ok(&args)).unwrap();
    let versions: Vec<u64> = outcome["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(versions.len(), bins.len().div_ceil(2), "{outcome}");
    assert_eq!(
        versions,
        (read_version + 1..=read_version + versions.len() as u64).collect::<Vec<_>>()
    );
    assert_eq!(
        outcome["bins_committed"].as_array().unwrap().len(),
        bins.len()
    );
    assert!(outcome["bins_dropped"].as_array().unwrap().is_empty());
    // Each batch is one transaction of the run: txn appId = run id, version = batch number.
    for (batch, version) in versions.iter().enumerate() {
        let actions = table.commit(*version);
        let txn: Vec<&Value> = actions.iter().filter_map(|a| a.get("txn")).collect();
        assert_eq!(txn.len(), 1, "{actions:?}");
        assert_eq!(txn[0]["appId"], run_id.as_str());
        assert_eq!(txn[0]["version"], batch as u64);
        assert!(
            actions
                .iter()
                .all(|a| a.get("add").is_none_or(|add| add["dataChange"] == false))
        );
    }
    assert_eq!(rows(&location), before, "the same rows after the commits");

    // No file of the run is left that the log does not name: the lost attempt's and the
    // killed attempt's files were deleted.
    let live: Vec<String> = load(&location)
        .files
        .iter()
        .filter(|f| f.path.contains(&run_id))
        .map(|f| f.path.clone())
        .collect();
    let mut live_sorted = live.clone();
    live_sorted.sort();
    assert_eq!(files_of_run(&table.path, &run_id), live_sorted);
    for file in &stray {
        assert!(!table.path.join(file).exists(), "{file} left behind");
    }
    assert!(outcome["files_deleted"].as_u64().unwrap() >= stray.len() as u64);

    // A second commit adds nothing.
    let log_before = table.log_versions();
    let again: Value = serde_json::from_str(&ok(&args)).unwrap();
    assert_eq!(table.log_versions(), log_before);
    assert!(again["versions"].as_array().unwrap().is_empty());
    assert_eq!(
        again["bins_already_committed"].as_array().unwrap().len(),
        bins.len()
    );

    // The same layout as one `optimize` process on a copy of the table.
    ok(&[
        "optimize",
        &copy,
        "--target-size",
        "4KiB",
        "--single-round",
        "--no-report",
        "--quiet",
    ]);
    assert_eq!(rows(&copy), before);
    assert_eq!(layout(&location), layout(&copy));
}

#[test]
fn an_append_between_plan_and_commit_lands_and_a_touched_bin_is_dropped() {
    // Two bins: the files of partitions 6 and 8 whose deletion vectors delete many rows.
    let table = Fixture::copy("dv-columnmapping-partitioned");
    let location = table.location();
    let work = tempfile::tempdir().unwrap();
    let order = plan(&location, work.path(), &["--target-size", "2KiB"]);
    let bins = bin_ids(&order);
    assert_eq!(bins.len(), 2, "{order}");
    execute_in_processes(work.path(), &bins);
    // Another writer appends (a copy of every file without a deletion vector) ...
    table.double_files();
    let with_append = rows(&location);
    // ... and another deletes an input file of the first bin (as a compaction of the same
    // files would remove it).
    let first_bin = &order["plan"]["partitions"][0]["bins"][0];
    let victim = &order["files"][usize::try_from(first_bin["files"][0].as_u64().unwrap()).unwrap()];
    let raw_path = victim["raw_path"].as_str().unwrap();
    let mut remove = victim["add"].clone();
    let remove = remove.as_object_mut().unwrap();
    remove.insert("path".into(), Value::String(raw_path.to_string()));
    remove.insert("dataChange".into(), Value::Bool(true));
    remove.insert("deletionTimestamp".into(), Value::from(1));
    for key in ["stats", "modificationTime", "tags"] {
        remove.remove(key);
    }
    table.write_commit(
        table.next_version(),
        &[
            serde_json::json!({"commitInfo": {"operation": "DELETE"}}),
            serde_json::json!({"remove": remove}),
        ],
    );
    let expected = rows(&location);
    assert!(expected.len() < with_append.len());
    let plan_path = work.path().join("plan.json").display().to_string();
    // Given only the touched bin's result, commit drops it, commits nothing, says so and
    // exits 3 (as `optimize` does on a conflict), its JSON still on standard output.
    let touched_result = work
        .path()
        .join(format!("r{}.json", first_bin["id"].as_u64().unwrap()))
        .display()
        .to_string();
    let log_before = table.log_versions();
    let output = run(&[
        "commit",
        plan_path.as_str(),
        touched_result.as_str(),
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("every bin given was dropped"),
        "{}",
        stderr(&output)
    );
    let only: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(only["bins_dropped"].as_array().unwrap().len(), 1, "{only}");
    assert!(only["versions"].as_array().unwrap().is_empty());
    assert_eq!(table.log_versions(), log_before);
    assert_eq!(rows(&location), expected);
    let results = result_files(work.path(), &bins);
    let mut args = vec!["commit", plan_path.as_str(), "--json"];
    args.extend(results.iter().map(String::as_str));
    let outcome: Value = serde_json::from_str(&ok(&args)).unwrap();
    let dropped = outcome["bins_dropped"].as_array().unwrap();
    assert_eq!(dropped.len(), 1, "{outcome}");
    assert_eq!(dropped[0]["bin_id"], first_bin["id"]);
    assert!(
        dropped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("removed its input file"),
        "{outcome}"
    );
    assert_eq!(
        outcome["bins_committed"].as_array().unwrap().len(),
        bins.len() - 1
    );
    assert_eq!(outcome["versions"].as_array().unwrap().len(), 1);
    // The appended rows are there, the deleted file's rows are not back, nothing doubled.
    assert_eq!(rows(&location), expected);
    // The dropped bin's files are gone.
    let dropped_prefix = format!(
        "part-{:05}-{}-",
        first_bin["id"].as_u64().unwrap(),
        order["plan"]["run_id"].as_str().unwrap()
    );
    assert!(
        walk(&table.path)
            .iter()
            .all(|p| !p.to_string_lossy().contains(&dropped_prefix)),
        "files of the dropped bin left behind"
    );
}

#[test]
fn row_ids_another_writer_assigns_after_the_plan_are_not_given_twice() {
    // A liquid-clustered table with row tracking: the plan clusters its files in one bin.
    let table = Fixture::copy("row-tracking-liquid");
    let location = table.location();
    let work = tempfile::tempdir().unwrap();
    let order = plan(&location, work.path(), &[]);
    let bins = bin_ids(&order);
    assert_eq!(bins.len(), 1, "{order}");
    execute_in_processes(work.path(), &bins);
    // Another writer appends a file with fresh row IDs and raises the high-water mark.
    let view = load(&location);
    let mark = view.row_tracking.as_ref().unwrap().high_water_mark.unwrap();
    let file = &view.files[0];
    let appended_rows = i64::try_from(file.num_records().unwrap()).unwrap();
    let name = format!("appended-{}", file.path.rsplit('/').next().unwrap());
    std::fs::copy(table.path.join(&file.path), table.path.join(&name)).unwrap();
    let version = table.next_version();
    let mut add = serde_json::to_value(delta_layout::table::TableView::add_action(file)).unwrap();
    let fields = add.as_object_mut().unwrap();
    fields.retain(|_, v| !v.is_null());
    fields.insert("path".into(), Value::String(name));
    fields.insert("dataChange".into(), Value::Bool(true));
    fields.insert("baseRowId".into(), Value::from(mark + 1));
    fields.insert("defaultRowCommitVersion".into(), Value::from(version));
    table.write_commit(
        version,
        &[
            serde_json::json!({"commitInfo": {"operation": "WRITE"}}),
            serde_json::json!({"add": add}),
            serde_json::json!({"domainMetadata": {
                "domain": "delta.rowTracking",
                "configuration": serde_json::json!({"rowIdHighWaterMark": mark + appended_rows}).to_string(),
                "removed": false,
            }}),
        ],
    );
    let before = rows_with_row_ids(&location);
    let plan_path = work.path().join("plan.json").display().to_string();
    let results = result_files(work.path(), &bins);
    let mut args = vec!["commit", plan_path.as_str(), "--json"];
    args.extend(results.iter().map(String::as_str));
    let outcome: Value = serde_json::from_str(&ok(&args)).unwrap();
    let versions = outcome["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "{outcome}");
    assert_eq!(
        rows_with_row_ids(&location),
        before,
        "stable row IDs changed"
    );
    let actions = table.commit(versions[0].as_u64().unwrap());
    let first_base = actions
        .iter()
        .filter_map(|a| a.get("add"))
        .map(|a| a["baseRowId"].as_i64().unwrap())
        .min()
        .unwrap();
    assert_eq!(
        first_base,
        mark + appended_rows + 1,
        "row IDs above the new mark"
    );
}

#[test]
fn bad_orders_and_results_are_refused_and_change_nothing() {
    let table = Fixture::copy("dv-columnmapping-partitioned");
    table.double_files();
    let location = table.location();
    let work = tempfile::tempdir().unwrap();
    let order = plan(&location, work.path(), &["--target-size", "2KiB"]);
    let bins = bin_ids(&order);
    let plan_path = work.path().join("plan.json");
    let plan_str = plan_path.to_str().unwrap();
    let listing = table.listing();
    let expect = |args: &[&str], needle: &str| {
        let output = run(args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(needle), "'{needle}' not in: {message}");
        assert_eq!(message.trim().lines().count(), 1, "{message}");
        assert_eq!(table.listing(), listing, "{args:?} changed the table");
    };
    // An altered order (a bin's expected rows edited).
    let mut altered = order.clone();
    altered["plan"]["partitions"][0]["bins"][0]["input_rows"] = Value::from(1);
    let altered_path = work.path().join("altered.json");
    std::fs::write(&altered_path, altered.to_string()).unwrap();
    expect(
        &["execute", altered_path.to_str().unwrap(), "--bin", "0"],
        "was altered after it was made",
    );
    // Another format version.
    let mut future = order.clone();
    future["format_version"] = Value::from(2);
    let future_path = work.path().join("future.json");
    std::fs::write(&future_path, future.to_string()).unwrap();
    expect(
        &["execute", future_path.to_str().unwrap(), "--all-bins"],
        "has format version 2",
    );
    // Not a work order at all, and a missing file.
    expect(
        &[
            "commit",
            table
                .path
                .join("_delta_log/00000000000000000000.json")
                .to_str()
                .unwrap(),
        ],
        "is not JSON",
    );
    expect(
        &["execute", "/nonexistent/plan.json", "--bin", "0"],
        "cannot be read",
    );
    // A bin the plan does not have.
    expect(&["execute", plan_str, "--bin", "999"], "has no bin 999");

    // A result of another plan of the same table.
    let other_dir = tempfile::tempdir().unwrap();
    plan(&location, other_dir.path(), &["--target-size", "2KiB"]);
    let other_result = other_dir.path().join("r.json");
    ok(&[
        "execute",
        other_dir.path().join("plan.json").to_str().unwrap(),
        "--bin",
        &bins[0].to_string(),
        "--out",
        other_result.to_str().unwrap(),
        "--quiet",
    ]);
    let listing_with_other = table.listing();
    let output = run(&["commit", plan_str, other_result.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("belongs to run"),
        "{}",
        stderr(&output)
    );
    assert_eq!(table.listing(), listing_with_other);

    // A result whose rows were edited, and one whose file is gone.
    let good = work.path().join("good.json");
    ok(&[
        "execute",
        plan_str,
        "--bin",
        &bins[0].to_string(),
        "--out",
        good.to_str().unwrap(),
        "-q",
    ]);
    let listing_with_good = table.listing();
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&good).unwrap()).unwrap();
    let mut edited = result.clone();
    edited["results"][0]["rows"] = Value::from(result["results"][0]["rows"].as_u64().unwrap() + 1);
    let edited_path = work.path().join("edited.json");
    std::fs::write(&edited_path, edited.to_string()).unwrap();
    let output = run(&["commit", plan_str, edited_path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("was altered after execute wrote it"),
        "{}",
        stderr(&output)
    );
    // The same edit by a worker that computed it (the checksum matches): the rows do not.
    reseal(&mut edited);
    std::fs::write(&edited_path, edited.to_string()).unwrap();
    let output = run(&["commit", plan_str, edited_path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("the result of bin"),
        "{}",
        stderr(&output)
    );
    // Stats that count other rows than the file holds.
    let mut stats_edit = result.clone();
    let stats = stats_edit["results"][0]["files"][0]["stats_json"]
        .as_str()
        .unwrap();
    let mut stats: Value = serde_json::from_str(stats).unwrap();
    stats["numRecords"] = Value::from(stats["numRecords"].as_u64().unwrap() + 1000);
    stats_edit["results"][0]["files"][0]["stats_json"] = Value::String(stats.to_string());
    reseal(&mut stats_edit);
    std::fs::write(&edited_path, stats_edit.to_string()).unwrap();
    let output = run(&["commit", plan_str, edited_path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("stats whose numRecords"),
        "{}",
        stderr(&output)
    );
    assert_eq!(table.listing(), listing_with_good);
    let written = result["results"][0]["files"][0]["path"].as_str().unwrap();
    std::fs::remove_file(table.path.join(written)).unwrap();
    let output = run(&["commit", plan_str, good.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("does not exist"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        table.next_version(),
        order["table"]["version"].as_u64().unwrap() + 1
    );
}

#[test]
fn an_order_rebuilds_the_table_without_reading_the_log() {
    // The description in an order, and the input files, give the same view as the log.
    let table = Fixture::copy("dv-columnmapping-partitioned");
    table.double_files();
    let view = load(&table.location());
    let options = delta_layout::plan::PlanOptions::default().with_target_file_bytes(Some(2048));
    let plan = delta_layout::plan::plan(&view, &options).unwrap();
    let order = delta_layout::workorder::WorkOrder::new(
        &view,
        plan.clone(),
        delta_layout::workorder::OrderSettings {
            codec: "zstd:1".into(),
            memory_limit_bytes: None,
            verify: false,
        },
    )
    .unwrap();
    let json = order.to_json().unwrap();
    let read = delta_layout::workorder::WorkOrder::from_json(&json, "order").unwrap();
    assert_eq!(read, order);
    let _rt = runtime();
    let rebuilt = read.table_view(Default::default()).unwrap();
    assert_eq!(rebuilt.version, view.version);
    assert_eq!(rebuilt.schema, view.schema);
    assert_eq!(rebuilt.column_mapping, view.column_mapping);
    assert_eq!(
        rebuilt.partition_physical_names,
        view.partition_physical_names
    );
    assert_eq!(rebuilt.protocol, view.protocol);
    assert_eq!(rebuilt.files.len(), plan.num_input_files());
    for (bin, rebuilt_bin) in plan.bins().zip(read.plan.bins()) {
        for (&i, &j) in bin.files.iter().zip(&rebuilt_bin.files) {
            let (a, b) = (&view.files[i], &rebuilt.files[j]);
            assert_eq!(a.path, b.path);
            assert_eq!(a.raw_path, b.raw_path);
            assert_eq!(a.partition_values, b.partition_values);
            assert_eq!(a.stats, b.stats);
            assert_eq!(a.deletion_vector, b.deletion_vector);
        }
    }
    // Planning is pure: the rebuilt view (its files only) plans the same bins.
    let replanned = delta_layout::plan::plan(&rebuilt, &options).unwrap();
    assert_eq!(replanned.bins().count(), plan.bins().count());
    for (a, b) in replanned.bins().zip(plan.bins()) {
        let paths = |view: &delta_layout::table::TableView, files: &[usize]| -> Vec<String> {
            files.iter().map(|&i| view.files[i].path.clone()).collect()
        };
        assert_eq!(paths(&rebuilt, &a.files), paths(&view, &b.files));
    }
}

/// 16 files of 8,000 rows of two uniform columns, no stats in the log.
fn uniform_table(dir: &Path) -> String {
    use deltalake::arrow::array::{Float64Array, Int64Array, RecordBatch};
    use deltalake::arrow::datatypes::{DataType, Field, Schema};
    use rand::{Rng as _, SeedableRng as _};
    use std::sync::Arc;
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("y", DataType::Int64, true),
    ]));
    let files: Vec<Vec<RecordBatch>> = (0..16)
        .map(|_| {
            let n = 8_000;
            let x: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1000.0)).collect();
            let y: Vec<i64> = (0..n).map(|_| rng.random_range(-50_000..50_000)).collect();
            vec![
                RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(Float64Array::from(x)),
                        Arc::new(Int64Array::from(y)),
                    ],
                )
                .unwrap(),
            ]
        })
        .collect();
    crate::fixture::synthetic_table(dir, "uniform", &files)
        .display()
        .to_string()
}

#[test]
fn a_clustering_scope_split_over_bins_writes_what_one_bin_writes() {
    let dir = tempfile::tempdir().unwrap();
    let location = uniform_table(dir.path());
    let fixture = Fixture::at(Path::new(&location));
    let (_copy_dir, copy) = copy_table(&fixture);
    let before = rows(&location);
    let total = load(&location).totals().bytes;
    let target = (total / 48).to_string();
    let task = (total / 4 + 1).to_string();
    let work = tempfile::tempdir().unwrap();
    let order = plan(
        &location,
        work.path(),
        &[
            "--hilbert",
            "x,y",
            "--target-size",
            &target,
            "--task-size",
            &task,
        ],
    );
    // One scope in four bins over one key space, all reading the 16 files.
    let bins = bin_ids(&order);
    assert_eq!(bins.len(), 4, "{}", order["plan"]);
    let spaces = order["plan"]["key_spaces"].as_array().unwrap();
    assert_eq!(spaces.len(), 1);
    assert_eq!(spaces[0]["sampled_files"], 16);
    assert_eq!(
        order["files"].as_array().unwrap().len(),
        16,
        "each file once"
    );
    let mut covered = 0;
    for bin in order["plan"]["partitions"][0]["bins"].as_array().unwrap() {
        assert_eq!(bin["files"].as_array().unwrap().len(), 16);
        assert_eq!(bin["key_range"]["first"], covered);
        covered = bin["key_range"]["end"].as_u64().unwrap();
    }
    assert_eq!(
        usize::try_from(covered).unwrap(),
        spaces[0]["boundaries"].as_array().unwrap().len() + 1,
        "the bins cover every range"
    );

    execute_in_processes(work.path(), &bins);
    let plan_path = work.path().join("plan.json").display().to_string();
    let results = result_files(work.path(), &bins);
    // Three of the four results: the scope waits, nothing is committed.
    let mut args = vec!["commit", plan_path.as_str(), "--json"];
    args.extend(results[..3].iter().map(String::as_str));
    let outcome: Value = serde_json::from_str(&ok(&args)).unwrap();
    assert!(
        outcome["versions"].as_array().unwrap().is_empty(),
        "{outcome}"
    );
    assert_eq!(outcome["bins_waiting"].as_array().unwrap().len(), 3);
    assert_eq!(rows(&location), before);
    // All four, one bin per batch: the scope still commits as one, its files removed once.
    let mut args = vec!["commit", plan_path.as_str(), "--batch-size", "1", "--json"];
    args.extend(results.iter().map(String::as_str));
    let outcome: Value = serde_json::from_str(&ok(&args)).unwrap();
    let versions = outcome["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "{outcome}");
    assert_eq!(outcome["files_removed"], 16);
    let actions = fixture.commit(versions[0].as_u64().unwrap());
    assert_eq!(
        actions.iter().filter(|a| a.get("remove").is_some()).count(),
        16
    );
    assert_eq!(rows(&location), before, "every row exactly once");
    // One cube: every file of the scope carries the same ZCUBE_ID.
    let cubes: std::collections::BTreeSet<String> = load(&location)
        .files
        .iter()
        .map(|f| f.tags["ZCUBE_ID"].clone().unwrap())
        .collect();
    assert_eq!(cubes.len(), 1, "{cubes:?}");

    // The plan sampled every file, as one bin does: the same files as one optimize process.
    ok(&[
        "optimize",
        &copy,
        "--hilbert",
        "x,y",
        "--target-size",
        &target,
        "--no-report",
        "-q",
    ]);
    assert_eq!(layout(&location), layout(&copy));
    for column in ["x", "y"] {
        let span = crate::cluster::average_span(&location, column);
        assert!(span <= 0.25, "average span of {column} is {span:.3}");
    }

    // Out of core (a memory limit far below the scope): the same files again.
    let spilled = tempfile::tempdir().unwrap();
    let location = uniform_table(spilled.path());
    let work = tempfile::tempdir().unwrap();
    let order = plan(
        &location,
        work.path(),
        &[
            "--hilbert",
            "x,y",
            "--target-size",
            &target,
            "--task-size",
            &task,
            "--memory-limit",
            "64KiB",
        ],
    );
    let bins = bin_ids(&order);
    execute_in_processes(work.path(), &bins);
    let plan_path = work.path().join("plan.json").display().to_string();
    let results = result_files(work.path(), &bins);
    for result in &results {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(result).unwrap()).unwrap();
        assert_eq!(doc["results"][0]["spilled"], true, "{result}");
    }
    let mut args = vec!["commit", plan_path.as_str()];
    args.extend(results.iter().map(String::as_str));
    ok(&args);
    assert_eq!(rows(&location), before);
    assert_eq!(layout(&location), layout(&copy));
}

#[test]
fn the_rows_of_a_split_scope_must_add_up() {
    // A table with row counts in its log: the commit checks the scope's rows.
    let table = Fixture::copy("row-tracking-liquid");
    let location = table.location();
    let work = tempfile::tempdir().unwrap();
    let order = plan(
        &location,
        work.path(),
        &["--target-size", "1KiB", "--task-size", "1KiB"],
    );
    let bins = bin_ids(&order);
    assert!(bins.len() >= 2, "{bins:?}");
    execute_in_processes(work.path(), &bins);
    // A worker that claims one row fewer than its file holds: the footer says otherwise.
    let path = work.path().join(format!("r{}.json", bins[0]));
    let original = std::fs::read_to_string(&path).unwrap();
    let mut doc: Value = serde_json::from_str(&original).unwrap();
    let rows_before = doc["results"][0]["rows"].as_u64().unwrap();
    assert!(rows_before > 0);
    doc["results"][0]["rows"] = Value::from(rows_before - 1);
    let n = doc["results"][0]["files"][0]["num_records"]
        .as_u64()
        .unwrap();
    doc["results"][0]["files"][0]["num_records"] = Value::from(n - 1);
    let stats = doc["results"][0]["files"][0]["stats_json"]
        .as_str()
        .unwrap();
    let mut stats: Value = serde_json::from_str(stats).unwrap();
    stats["numRecords"] = Value::from(n - 1);
    doc["results"][0]["files"][0]["stats_json"] = Value::String(stats.to_string());
    reseal(&mut doc);
    std::fs::write(&path, doc.to_string()).unwrap();
    let listing = table.listing();
    let plan_path = work.path().join("plan.json").display().to_string();
    let results = result_files(work.path(), &bins);
    let mut args = vec!["commit", plan_path.as_str()];
    args.extend(results.iter().map(String::as_str));
    let output = run(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let footer = format!("holds {} rows, but its footer says {n}", n - 1);
    assert!(stderr(&output).contains(&footer), "{}", stderr(&output));
    assert_eq!(table.listing(), listing);
    // A worker that says it read and wrote nothing: the scope's rows do not add up.
    let mut doc: Value = serde_json::from_str(&original).unwrap();
    doc["results"][0]["rows"] = Value::from(0);
    doc["results"][0]["files"] = Value::Array(Vec::new());
    reseal(&mut doc);
    std::fs::write(&path, doc.to_string()).unwrap();
    let output = run(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let expected = format!(
        "one clustering scope) hold {} rows, but their input files hold 10 live rows",
        10 - rows_before
    );
    assert!(stderr(&output).contains(&expected), "{}", stderr(&output));
    assert_eq!(table.listing(), listing);
}

#[test]
fn results_are_checked_against_storage_and_committed_files_are_never_deleted() {
    // No row counts in this table's log: the input files' footers give them.
    let table = Fixture::copy("stats-missing-partial");
    let location = table.location();
    let before = rows(&location);
    let work = tempfile::tempdir().unwrap();
    let order = plan(&location, work.path(), &[]);
    let bins = bin_ids(&order);
    assert!(!bins.is_empty(), "{order}");
    assert!(order["plan"]["partitions"][0]["bins"][0]["input_rows"].is_null());
    execute_in_processes(work.path(), &bins);
    let plan_path = work.path().join("plan.json").display().to_string();
    let path = work.path().join(format!("r{}.json", bins[0]));
    let original = std::fs::read_to_string(&path).unwrap();
    let listing = table.listing();
    let commit_with = |doc: &Value| {
        let mut doc = doc.clone();
        reseal(&mut doc);
        let tampered = work.path().join("tampered.json");
        std::fs::write(&tampered, doc.to_string()).unwrap();
        run(&["commit", &plan_path, tampered.to_str().unwrap()])
    };
    // Nothing read, nothing written: the footers of the inputs say otherwise.
    let mut doc: Value = serde_json::from_str(&original).unwrap();
    doc["results"][0]["rows"] = Value::from(0);
    doc["results"][0]["files"] = Value::Array(Vec::new());
    let output = commit_with(&doc);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("hold 0 rows, but their input files hold"),
        "{}",
        stderr(&output)
    );
    // One file listed twice.
    let mut doc: Value = serde_json::from_str(&original).unwrap();
    let first = doc["results"][0]["files"][0].clone();
    doc["results"][0]["files"]
        .as_array_mut()
        .unwrap()
        .push(first.clone());
    let rows_claimed =
        doc["results"][0]["rows"].as_u64().unwrap() + first["num_records"].as_u64().unwrap();
    doc["results"][0]["rows"] = Value::from(rows_claimed);
    let output = commit_with(&doc);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("twice"), "{}", stderr(&output));
    assert_eq!(table.listing(), listing);

    // The same results given twice commit once, and a rerun with them deletes no file a
    // commit refers to.
    let results = result_files(work.path(), &bins);
    let mut args = vec!["commit", plan_path.as_str()];
    args.extend(results.iter().map(String::as_str));
    args.extend(results.iter().map(String::as_str));
    ok(&args);
    assert_eq!(rows(&location), before);
    let versions = table.log_versions();
    ok(&args);
    assert_eq!(table.log_versions(), versions);
    assert_eq!(
        rows(&location),
        before,
        "every committed file is still there"
    );
}

#[test]
fn a_metadata_change_stops_the_rest_and_keeps_what_was_committed() {
    let table = Fixture::copy("dv-columnmapping-partitioned");
    table.double_files();
    let location = table.location();
    let before = rows(&location);
    let work = tempfile::tempdir().unwrap();
    let order = plan(&location, work.path(), &["--target-size", "4KiB"]);
    let bins = bin_ids(&order);
    assert!(bins.len() >= 3, "{bins:?}");
    execute_in_processes(work.path(), &bins);
    let plan_path = work.path().join("plan.json").display().to_string();
    let results = result_files(work.path(), &bins);
    // The first bin commits; then a retried attempt of it arrives too.
    ok(&["commit", &plan_path, &results[0]]);
    let retry = work.path().join("retry.json");
    ok(&[
        "execute",
        &plan_path,
        "--bin",
        &bins[0].to_string(),
        "--out",
        retry.to_str().unwrap(),
        "-q",
    ]);
    let mut metadata = table
        .commit(0)
        .into_iter()
        .find_map(|a| a.get("metaData").cloned())
        .unwrap();
    metadata["configuration"]["delta.logRetentionDuration"] =
        Value::String("interval 30 days".into());
    table.write_commit(
        table.next_version(),
        &[
            serde_json::json!({"commitInfo": {"operation": "SET TBLPROPERTIES"}}),
            serde_json::json!({"metaData": metadata}),
        ],
    );
    let versions = table.log_versions();
    let mut args = vec!["commit", plan_path.as_str(), retry.to_str().unwrap()];
    args.extend(results.iter().map(String::as_str));
    let output = run(&args);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{message}");
    assert!(message.contains("changed the table metadata"), "{message}");
    assert!(message.contains("1 bins of run"), "{message}");
    assert_eq!(table.log_versions(), versions, "nothing more committed");
    // Every file the log names is there: the same rows.
    assert_eq!(rows(&location), before);
    // The bins that will never commit left no file behind, nor did the retried attempt.
    let run_id = order["plan"]["run_id"].as_str().unwrap();
    let mut live: Vec<String> = load(&location)
        .files
        .iter()
        .filter(|f| f.path.contains(run_id))
        .map(|f| f.path.clone())
        .collect();
    live.sort();
    assert_eq!(files_of_run(&table.path, run_id), live);
}

#[test]
fn documents_go_only_where_they_cannot_damage_a_table() {
    let table = Fixture::copy("delta-rs-small-appends");
    let location = table.location();
    let work = tempfile::tempdir().unwrap();
    let listing = table.listing();
    let refused = |out: &str, needle: &str| {
        let output = run(&["plan", &location, "--out", out]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{out}: {message}");
        assert!(
            message.contains("--out") && message.contains(needle),
            "{out}: {message}"
        );
    };
    // Not a .json name: never a data file, a deletion vector or a checkpoint.
    let data_file = table
        .path
        .join(&load(&location).files[0].path)
        .display()
        .to_string();
    refused(&data_file, "must end in .json");
    refused(
        &work.path().join("plan").display().to_string(),
        "must end in .json",
    );
    // Inside the log.
    let log = table.path.join("_delta_log/00000000000000000099.json");
    refused(&log.display().to_string(), "_delta_log");
    // A FIFO (or a device) is not replaced by a file.
    let fifo = work.path().join("fifo.json");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    refused(&fifo.display().to_string(), "not a regular file");
    // A link named like a document whose target is a commit, or a data file.
    let to_commit = work.path().join("to-commit.json");
    std::os::unix::fs::symlink(
        table.path.join("_delta_log/00000000000000000000.json"),
        &to_commit,
    )
    .unwrap();
    refused(&to_commit.display().to_string(), "_delta_log");
    let to_data = work.path().join("to-data.json");
    std::os::unix::fs::symlink(&data_file, &to_data).unwrap();
    refused(&to_data.display().to_string(), "must end in .json");
    // A shard name taken by such a link: nothing of the order is written.
    std::fs::remove_file(&to_commit).unwrap();
    let shard = work.path().join("sharded.files-00001.json");
    std::os::unix::fs::symlink(
        table.path.join("_delta_log/00000000000000000001.json"),
        &shard,
    )
    .unwrap();
    let output = run(&[
        "plan",
        &location,
        "--target-size",
        "1MiB",
        "--shard-files",
        "2",
        "--out",
        work.path().join("sharded.json").to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("_delta_log"),
        "{}",
        stderr(&output)
    );
    assert!(!work.path().join("sharded.json").exists());
    assert!(!work.path().join("sharded.files-00000.json").exists());
    assert_eq!(table.listing(), listing);
    // Through a link, to its target; a file:// URI reads as the path it names.
    let target = work.path().join("target.json");
    std::fs::write(&target, "old").unwrap();
    let link = work.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    ok(&["plan", &location, "--out", link.to_str().unwrap()]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let order: Value = serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(order["kind"], "delta-layout.plan");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&target).unwrap().permissions().mode() & 0o777,
        0o644,
        "readable by workers running as other users"
    );
    let uri = format!("file://{}", target.display());
    let out = ok(&["execute", &uri, "--all-bins", "--quiet"]);
    let results: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(results["kind"], "delta-layout.results");
}

/// The shards (by file name) a bin of a sharded order reads: those holding its files.
fn shards_of_bin(order: &Value, bin: u64) -> Vec<String> {
    let files: Vec<u64> = order["plan"]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["bins"].as_array().unwrap().iter())
        .find(|b| b["id"] == bin)
        .unwrap()["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_u64().unwrap())
        .collect();
    order["shards"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            let first = s["first_file"].as_u64().unwrap();
            let end = first + s["files"].as_u64().unwrap();
            files.iter().any(|f| (first..end).contains(f))
        })
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_sharded_order_gives_each_worker_only_its_bins_files() {
    let table = Fixture::copy("dv-columnmapping-partitioned");
    table.double_files();
    let location = table.location();
    let (_copy_dir, copy) = copy_table(&table);
    let before = rows(&location);
    let work = tempfile::tempdir().unwrap();
    let order = plan(
        &location,
        work.path(),
        &["--target-size", "4KiB", "--shard-files", "3"],
    );
    let bins = bin_ids(&order);
    assert!(bins.len() >= 6, "{bins:?}");
    // The head holds no file; its shards hold them all, three at most each, in order, cut
    // between bins: a bin of at most three files reads one shard.
    assert!(
        order
            .get("files")
            .is_none_or(|f| f.as_array().unwrap().is_empty())
    );
    let shards = order["shards"].as_array().unwrap();
    let mut next = 0;
    for (number, shard) in shards.iter().enumerate() {
        assert_eq!(shard["first_file"].as_u64().unwrap(), next);
        let files = shard["files"].as_u64().unwrap();
        assert!((1..=3).contains(&files), "{shard}");
        next += files;
        let name = shard["name"].as_str().unwrap();
        assert_eq!(name, format!("plan.files-{number:05}.json"));
        let document: Value =
            serde_json::from_str(&std::fs::read_to_string(work.path().join(name)).unwrap())
                .unwrap();
        assert_eq!(document["kind"], "delta-layout.plan-files");
        assert_eq!(
            document["files"].as_array().unwrap().len() as u64,
            shard["files"].as_u64().unwrap()
        );
    }

    for &bin in &bins {
        let files = order["plan"]["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["bins"].as_array().unwrap().iter())
            .find(|b| b["id"] == bin)
            .unwrap()["files"]
            .as_array()
            .unwrap()
            .len();
        if files <= 3 {
            assert_eq!(shards_of_bin(&order, bin).len(), 1, "bin {bin}");
        }
    }

    // A worker that has the head and its bin's shards only executes its bin.
    let bin = bins[bins.len() / 2];
    let needed = shards_of_bin(&order, bin);
    assert!(needed.len() < shards.len(), "{needed:?}");
    let alone = tempfile::tempdir().unwrap();
    std::fs::copy(
        work.path().join("plan.json"),
        alone.path().join("plan.json"),
    )
    .unwrap();
    for name in &needed {
        std::fs::copy(work.path().join(name), alone.path().join(name)).unwrap();
    }
    let alone_plan = alone.path().join("plan.json").display().to_string();
    ok(&["execute", &alone_plan, "--bin", &bin.to_string(), "--quiet"]);
    // A bin whose shard is missing names it.
    let other = bins
        .iter()
        .copied()
        .find(|&b| shards_of_bin(&order, b).iter().any(|s| !needed.contains(s)))
        .unwrap();
    let output = run(&[
        "execute",
        &alone_plan,
        "--bin",
        &other.to_string(),
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("work order shard"),
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains(".files-0"), "{}", stderr(&output));
    // Commit needs the whole order: without all shards, nothing is committed.
    let log_before = table.log_versions();
    let output = run(&["commit", &alone_plan]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert_eq!(table.log_versions(), log_before);

    // A shard altered (one file's size), or another shard under its name, is refused.
    let first = shards[0]["name"].as_str().unwrap();
    let second = shards[1]["name"].as_str().unwrap();
    let first_path = work.path().join(first);
    let original = std::fs::read_to_string(&first_path).unwrap();
    let mut altered: Value = serde_json::from_str(&original).unwrap();
    let size = altered["files"][0]["add"]["size"].as_u64().unwrap();
    altered["files"][0]["add"]["size"] = (size + 1).into();
    std::fs::write(&first_path, altered.to_string()).unwrap();
    let bin_of_first = bins
        .iter()
        .copied()
        .find(|&b| shards_of_bin(&order, b).iter().any(|s| s == first))
        .unwrap();
    let plan_path = work.path().join("plan.json").display().to_string();
    for attempt in [
        vec!["execute", plan_path.as_str(), "--all-bins", "--quiet"],
        vec!["commit", plan_path.as_str()],
    ] {
        let output = run(&attempt);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{attempt:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("is not the shard the work order lists"),
            "{attempt:?}: {}",
            stderr(&output)
        );
    }
    std::fs::copy(work.path().join(second), &first_path).unwrap();
    let output = run(&[
        "execute",
        &plan_path,
        "--bin",
        &bin_of_first.to_string(),
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("is not the shard"),
        "{}",
        stderr(&output)
    );
    std::fs::write(&first_path, &original).unwrap();
    assert_eq!(table.log_versions(), log_before);
    assert_eq!(rows(&location), before);

    // An order read for some bins executes them and is never committed.
    {
        let bin = usize::try_from(bin).unwrap();
        let rt = runtime();
        let partial = rt
            .block_on(delta_layout::workorder::read_order(
                &plan_path,
                &Default::default(),
                Some(&[bin]),
            ))
            .unwrap();
        assert_eq!(partial.bin_ids(), vec![bin]);
        let refused = rt.block_on(delta_layout::workorder::commit(
            &partial,
            Vec::new(),
            Default::default(),
            &delta_layout::workorder::CommitOptions::default(),
        ));
        let message = refused.unwrap_err().to_string();
        assert!(message.contains("some bins only"), "{message}");
    }

    // Every bin in its own process, then one commit: one `optimize`'s layout, the same rows.
    execute_in_processes(work.path(), &bins);
    let results = result_files(work.path(), &bins);
    let mut args = vec!["commit", plan_path.as_str(), "--json"];
    args.extend(results.iter().map(String::as_str));
    let outcome: Value = serde_json::from_str(&ok(&args)).unwrap();
    assert_eq!(
        outcome["bins_committed"].as_array().unwrap().len(),
        bins.len()
    );
    assert_eq!(rows(&location), before);
    ok(&[
        "optimize",
        &copy,
        "--target-size",
        "4KiB",
        "--single-round",
        "--no-report",
        "--quiet",
    ]);
    assert_eq!(layout(&location), layout(&copy));
}

#[test]
fn the_plan_optimize_json_prints_is_a_work_order_that_executes_and_commits() {
    // `optimize --dry-run --json`'s `plan` is `plan`'s document: executed and committed as
    // it is, it gives one `optimize`'s layout and the same rows.
    let table = Fixture::copy("dv-columnmapping-partitioned");
    table.double_files();
    let location = table.location();
    let (_copy_dir, copy) = copy_table(&table);
    let before = rows(&location);
    let printed: Value = serde_json::from_str(&ok(&[
        "optimize",
        &location,
        "--target-size",
        "4KiB",
        "--dry-run",
        "--json",
    ]))
    .unwrap();
    let order = &printed["plan"];
    assert_eq!(order["kind"], "delta-layout.plan");
    assert_eq!(order["table"]["version"], printed["read_version"]);
    assert_eq!(
        bin_ids(order).len() as u64,
        printed["bins"].as_u64().unwrap()
    );
    let work = tempfile::tempdir().unwrap();
    let plan_path = work.path().join("plan.json");
    std::fs::write(&plan_path, serde_json::to_string_pretty(order).unwrap()).unwrap();
    let plan_path = plan_path.display().to_string();
    let result = work.path().join("r.json").display().to_string();
    ok(&[
        "execute",
        &plan_path,
        "--all-bins",
        "--out",
        &result,
        "--quiet",
    ]);
    let outcome: Value =
        serde_json::from_str(&ok(&["commit", &plan_path, &result, "--json"])).unwrap();
    assert_eq!(
        outcome["bins_committed"].as_array().unwrap().len() as u64,
        printed["bins"].as_u64().unwrap()
    );
    assert_eq!(rows(&location), before);
    let optimized: Value = serde_json::from_str(&ok(&[
        "optimize",
        &copy,
        "--target-size",
        "4KiB",
        "--single-round",
        "--no-report",
        "--json",
    ]))
    .unwrap();
    assert_eq!(optimized["plan"]["kind"], "delta-layout.plan");
    assert_eq!(layout(&location), layout(&copy));
}

/// The order at `path`, changed by `edit` and fingerprinted again, as someone who forged it
/// (or a tool that damaged it and recomputed the fingerprint) would leave it.
fn forge(path: &Path, edit: impl FnOnce(&mut delta_layout::workorder::WorkOrder)) {
    let mut order: delta_layout::workorder::WorkOrder =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut order);
    order.fingerprint = order.compute_fingerprint().unwrap();
    std::fs::write(path, order.to_json().unwrap()).unwrap();
}

#[test]
fn commit_checks_the_orders_inputs_against_the_table_at_the_plans_version() {
    // Orders whose fingerprint was recomputed after a change: a file in two bins would be
    // removed twice and its rows written twice; a file the table did not hold at the plan's
    // version would bring rows back.
    let table = Fixture::copy("dv-columnmapping-partitioned");
    table.double_files();
    let location = table.location();
    let before = rows(&location);
    let log_before = table.log_versions();
    let work = tempfile::tempdir().unwrap();
    plan(&location, work.path(), &["--target-size", "4KiB"]);
    let plan_path = work.path().join("plan.json");
    let original = std::fs::read_to_string(&plan_path).unwrap();
    let plan_arg = plan_path.display().to_string();
    type Edit = Box<dyn FnOnce(&mut delta_layout::workorder::WorkOrder)>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "in two bins",
            Box::new(|order| {
                // The first bin's first file, also in the last bin.
                let file = order.plan.partitions[0].bins[0].files[0];
                let last = order.plan.partitions.last_mut().unwrap();
                last.bins.last_mut().unwrap().files.push(file);
            }),
        ),
        (
            "did not hold at version",
            Box::new(|order| order.files[0].add.size += 1),
        ),
        (
            "did not hold at version",
            Box::new(|order| {
                order.files[0].add.path = "part-00000-gone.parquet".into();
            }),
        ),
    ];
    for (needle, edit) in cases {
        std::fs::write(&plan_path, &original).unwrap();
        forge(&plan_path, edit);
        let output = run(&[
            "execute",
            &plan_arg,
            "--all-bins",
            "--quiet",
            "--out",
            work.path().join("r.json").to_str().unwrap(),
        ]);
        let mut commit = vec!["commit", plan_arg.as_str()];
        let result = work.path().join("r.json").display().to_string();
        if output.status.success() {
            commit.push(&result);
        }
        let output = run(&commit);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{needle}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(needle),
            "{needle}: {}",
            stderr(&output)
        );
        assert_eq!(table.log_versions(), log_before, "{needle}");
        assert_eq!(rows(&location), before, "{needle}");
        let _ = std::fs::remove_file(work.path().join("r.json"));
    }
}

#[test]
fn orders_of_tables_with_escaped_paths_and_partition_values_commit_their_rows() {
    // The commit's check of the order's inputs against the table matches paths as the log
    // spells them (percent-encoded) and as the order holds them (decoded).
    for name in ["special-char-partitions", "partition-values-all-types"] {
        let table = Fixture::copy(name);
        table.double_files();
        let location = table.location();
        let before = rows(&location);
        let work = tempfile::tempdir().unwrap();
        let order = plan(&location, work.path(), &["--target-size", "1MiB"]);
        let bins = bin_ids(&order);
        assert!(!bins.is_empty(), "{name}");
        let plan_path = work.path().join("plan.json").display().to_string();
        let result = work.path().join("r.json").display().to_string();
        ok(&[
            "execute",
            &plan_path,
            "--all-bins",
            "--out",
            &result,
            "--quiet",
        ]);
        let outcome: Value =
            serde_json::from_str(&ok(&["commit", &plan_path, &result, "--json"])).unwrap();
        assert_eq!(
            outcome["bins_committed"].as_array().unwrap().len(),
            bins.len(),
            "{name}: {outcome}"
        );
        assert_eq!(rows(&location), before, "{name}");
    }
}

/// The "nothing happened" paths of the work orders: no result given for a plan with bins is
/// an error (exit 2, nothing committed); an empty plan executes and commits to "nothing to do"
/// (exit 0).
#[test]
fn commit_without_results_is_an_error_and_an_empty_plan_is_nothing_to_do() {
    let table = Fixture::copy("basic-with-checkpoint");
    let location = table.location();
    let work = tempfile::tempdir().unwrap();
    let order = plan(&location, work.path(), &[]);
    assert!(!bin_ids(&order).is_empty());
    let plan_path = work.path().join("plan.json").display().to_string();
    let log_before = table.log_versions();
    let output = run(&["commit", &plan_path]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no result was given"),
        "{}",
        stderr(&output)
    );
    assert_eq!(table.log_versions(), log_before);

    ok(&["optimize", &location, "--no-report", "--quiet"]);
    let empty = plan(&location, work.path(), &[]);
    assert!(bin_ids(&empty).is_empty());
    let result = work.path().join("r.json").display().to_string();
    ok(&[
        "execute",
        &plan_path,
        "--all-bins",
        "--out",
        &result,
        "--quiet",
    ]);
    let text = ok(&["commit", &plan_path, &result]);
    assert!(
        text.contains("nothing to do: the plan has no bin"),
        "{text}"
    );
}

/// A Spark driver commits a run batch by batch, one commit step each, in one process: the
/// snapshot at the plan's version that checks the order's input files is loaded once.
#[test]
fn twenty_commit_steps_of_one_order_load_the_plans_snapshot_once() {
    let table = Fixture::copy("v2-checkpoint-sidecars");
    let location = table.location();
    let before = rows(&location);
    let options = delta_layout::optimize::OptimizeOptions::default().with_plan(
        delta_layout::plan::PlanOptions::default()
            .with_target_file_bytes(Some(3_000))
            .with_min_file_bytes(Some(1_000))
            .with_output_ratio(Some(1.0)),
    );
    let rt = runtime();
    let order = rt
        .block_on(delta_layout::workorder::plan(
            location.as_str(),
            &options,
            &Default::default(),
        ))
        .unwrap();
    let bins = order.bin_ids();
    assert!(bins.len() >= 20, "{} bins", bins.len());
    let results = rt
        .block_on(delta_layout::workorder::execute(
            &order,
            &bins,
            Default::default(),
            &options,
            std::sync::Arc::new(delta_layout::progress::NoProgress),
        ))
        .unwrap();
    assert_eq!(delta_layout::workorder::snapshot_loads(&order), 0);
    let mut committed = 0;
    for result in results.into_iter().take(20) {
        let outcome = rt
            .block_on(delta_layout::workorder::commit(
                &order,
                vec![result],
                Default::default(),
                &delta_layout::workorder::CommitOptions::default(),
            ))
            .unwrap();
        committed += outcome.bins_committed.len() + outcome.bins_left_alone.len();
    }
    assert_eq!(committed, 20);
    assert_eq!(delta_layout::workorder::snapshot_loads(&order), 1);
    assert_eq!(rows(&location), before);
}

/// A result whose stats were edited, and its checksum recomputed (as a worker with a stats
/// bug would write it), is refused when a bound or null count contradicts the file's footer,
/// naming the file and column; the table is untouched. The same result unedited commits
/// (issue 43: min = max = 10^12 committed, and readers then missed rows).
#[test]
fn forged_result_stats_are_refused_by_the_footers_statistics() {
    let table = Fixture::copy("dv-columnmapping-partitioned");
    table.double_files();
    let location = table.location();
    let before = rows(&location);
    let work = tempfile::tempdir().unwrap();
    let order = plan(&location, work.path(), &["--target-size", "2KiB"]);
    let bins = bin_ids(&order);
    let plan_str = work.path().join("plan.json");
    let plan_str = plan_str.to_str().unwrap();
    let good = work.path().join("good.json");
    ok(&[
        "execute",
        plan_str,
        "--all-bins",
        "--out",
        good.to_str().unwrap(),
        "-q",
    ]);
    assert!(!bins.is_empty());
    let listing = table.listing();
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&good).unwrap()).unwrap();
    let file = &result["results"][0]["files"][0];
    let stats: Value = serde_json::from_str(file["stats_json"].as_str().unwrap()).unwrap();
    // An integer column and a string column of the file's stats.
    let key_of = |pred: &dyn Fn(&Value) -> bool| -> String {
        stats["minValues"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(_, v)| pred(v))
            .map(|(k, _)| k.clone())
            .expect("a column of that kind in the stats")
    };
    let int_column = key_of(&|v| v.is_i64());
    let text_column = key_of(&|v| v.is_string() && v.as_str().unwrap().len() > 1);
    let edited_path = work.path().join("edited.json");
    let forged = |edit: &dyn Fn(&mut Value), needle: &[&str]| {
        let mut doc = result.clone();
        let mut s = stats.clone();
        edit(&mut s);
        doc["results"][0]["files"][0]["stats_json"] = Value::String(s.to_string());
        reseal(&mut doc);
        std::fs::write(&edited_path, doc.to_string()).unwrap();
        let output = run(&["commit", plan_str, edited_path.to_str().unwrap()]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{message}");
        for n in needle {
            assert!(message.contains(n), "'{n}' not in: {message}");
        }
        assert_eq!(
            table.listing(),
            listing,
            "a refused commit changed the table"
        );
    };
    let path = file["path"].as_str().unwrap();
    // min = max = 10^12: above every value the file holds.
    forged(
        &|s| {
            s["minValues"][&int_column] = Value::from(1_000_000_000_000_i64);
            s["maxValues"][&int_column] = Value::from(1_000_000_000_000_i64);
        },
        &[
            path,
            &int_column,
            "minValues of 1000000000000",
            "smaller value",
        ],
    );
    // A max below the largest value.
    let max = stats["maxValues"][&int_column].as_i64().unwrap();
    forged(
        &|s| s["maxValues"][&int_column] = Value::from(max - 1),
        &[path, &int_column, "maxValues", "larger value"],
    );
    // A string min above the smallest string.
    forged(
        &|s| s["minValues"][&text_column] = Value::from("\u{10FFFF}"),
        &[path, &text_column, "minValues"],
    );
    // Every row counted null.
    let n = stats["numRecords"].as_u64().unwrap();
    forged(
        &|s| s["nullCount"][&int_column] = Value::from(n),
        &[path, &int_column, &format!("nullCount of {n}")],
    );
    // Unedited, the result commits and keeps the rows.
    ok(&["commit", plan_str, good.to_str().unwrap()]);
    assert_eq!(rows(&location), before);
}

#[test]
fn every_command_that_reports_on_stderr_takes_quiet() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    let location = fixture.location();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan.json");
    let out = out.to_str().unwrap();
    // `plan --out` writes a summary on stderr, unless -q or --quiet; the order is the same.
    let loud = Command::new(BIN)
        .args(["plan", &location, "--target-size", "4KiB", "--out", out])
        .output()
        .unwrap();
    assert_eq!(loud.status.code(), Some(0));
    assert!(!loud.stderr.is_empty());
    let first: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    for flag in ["-q", "--quiet"] {
        let quiet = Command::new(BIN)
            .args([
                "plan",
                &location,
                "--target-size",
                "4KiB",
                "--out",
                out,
                flag,
            ])
            .output()
            .unwrap();
        assert_eq!(quiet.status.code(), Some(0), "{flag}");
        assert_eq!(String::from_utf8_lossy(&quiet.stderr), "", "{flag}");
        let again: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
        assert_eq!(again["plan"]["partitions"], first["plan"]["partitions"]);
    }
    // The commands with a progress bar or a summary all take -q (a parse error is exit 2).
    let result = dir.path().join("result.json");
    let result = result.to_str().unwrap();
    let scratch = dir.path().join("scratch");
    for args in [
        vec!["execute", out, "--all-bins", "--out", result, "-q"],
        vec!["optimize", &location, "--dry-run", "-q"],
        vec![
            "verify",
            &location,
            "--version",
            "0",
            "--compare",
            "0",
            "-q",
        ],
        vec![
            "sweep",
            &location,
            "--target-sizes",
            "4KiB",
            "--scratch",
            scratch.to_str().unwrap(),
            "-q",
        ],
    ] {
        let output = Command::new(BIN).args(&args).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
