//! Unattended runs: what a scheduler and the people who read its logs need.

use std::collections::BTreeSet;
use std::sync::Arc;

use delta_layout::optimize::{OptimizeOptions, rewrite};
use delta_layout::plan::PlanOptions;
use delta_layout::plan::cluster::ClusterRequest;
use delta_layout::progress::NoProgress;
use serde_json::{Value, json};

use crate::cli::{run as cli, stderr};
use crate::fixture::{Fixture, load, optimize, rows, runtime};

fn paths(location: &str) -> BTreeSet<String> {
    load(location)
        .files
        .iter()
        .map(|f| f.path.clone())
        .collect()
}

#[test]
fn two_runs_over_the_same_files_never_both_commit() {
    let fixture = Fixture::copy("basic-with-checkpoint");
    let location = fixture.location();
    let before = rows(&location);
    let rt = runtime();
    let first = rt
        .block_on(rewrite(
            load(&location),
            &OptimizeOptions::default(),
            Arc::new(NoProgress),
        ))
        .unwrap();
    let second = rt
        .block_on(rewrite(
            load(&location),
            &OptimizeOptions::default(),
            Arc::new(NoProgress),
        ))
        .unwrap();
    let second_files = second.written_paths();
    let committed = rt.block_on(first.commit()).unwrap();
    assert!(committed.version.is_some());
    let err = rt.block_on(second.commit()).unwrap_err();
    assert!(
        matches!(err, delta_layout::Error::ConcurrentModification { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("which this run rewrote"), "{err}");
    for file in second_files {
        assert!(!fixture.path.join(&file).exists(), "{file} was not deleted");
    }
    assert_eq!(rows(&location), before, "the rows are the first run's");
    assert_eq!(
        fixture.log_versions().last(),
        committed.version.as_ref(),
        "the second run committed nothing"
    );
}

#[test]
fn compaction_never_undoes_a_clustering() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    let location = fixture.location();
    let table = load(&location);
    let column = table.data_leaf_columns()[0].display_name();
    // Cluster into several small files (tagged ZCUBE_ID) ...
    let cluster = OptimizeOptions::default().with_plan(
        PlanOptions::default()
            .with_target_file_bytes(Some(600))
            .with_clustering(Some(ClusterRequest::new(
                delta_layout::curve::Curve::ZOrder,
                vec![column],
            ))),
    );
    optimize(&location, &cluster).unwrap();
    let clustered = paths(&location);
    assert!(clustered.len() >= 2, "{clustered:?}");
    // ... then another writer appends small unclustered files.
    let appended = fixture.double_files();
    assert_eq!(appended, clustered.len());
    let before = rows(&location);

    let output = cli(&["optimize", &location, "--dry-run"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains(&format!(
            "left alone: {} small files written by a clustering run",
            clustered.len()
        )),
        "{text}"
    );
    let outcome = optimize(&location, &OptimizeOptions::default()).unwrap();
    assert_eq!(
        outcome.files_removed, appended as u64,
        "only the appended files"
    );
    assert_eq!(outcome.plan.clustered_files_left, clustered.len());
    let after = paths(&location);
    assert!(
        clustered.is_subset(&after),
        "clustered files stay: {after:?}"
    );
    assert_eq!(rows(&location), before);

    // --full without a curve packs them too.
    let output = cli(&["optimize", &location, "--full", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["files_added"], 1, "{json}");
    assert_eq!(rows(&location), before);
}

#[test]
fn table_property_sizes_are_read_as_spark_reads_them() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    let location = fixture.location();
    let table = load(&location);
    // A metaData change setting delta.targetFileSize = '100mb', as Spark SQL users write it.
    let mut meta = fixture
        .commit(0)
        .into_iter()
        .find_map(|a| a.get("metaData").cloned())
        .unwrap();
    meta["configuration"]["delta.targetFileSize"] = json!("100mb");
    fixture.write_commit(
        table.version + 1,
        &[
            json!({"commitInfo": {"operation": "SET TBLPROPERTIES"}}),
            json!({"metaData": meta}),
        ],
    );
    let output = cli(&["optimize", &location, "--dry-run", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    // `plan` is the run's work order; its own `plan` the plan.
    assert_eq!(json["plan"]["kind"], "delta-layout.plan");
    assert_eq!(json["plan"]["plan"]["target_file_bytes"], 104_857_600);
    assert_eq!(
        json["plan"]["plan"]["target_source"], "table_property",
        "{}",
        json["plan"]
    );
}

#[test]
fn locations_that_are_not_tables_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let no_commit = dir.path().join("no-commit");
    std::fs::create_dir_all(no_commit.join("_delta_log")).unwrap();
    let file = dir.path().join("file.parquet");
    std::fs::write(&file, b"PAR1").unwrap();
    let missing = dir.path().join("missing");
    let cases = [
        (empty.display().to_string(), "has no _delta_log directory"),
        (
            no_commit.display().to_string(),
            "holds no commit or checkpoint",
        ),
        (file.display().to_string(), "is a file"),
        (missing.display().to_string(), "does not exist"),
        ("hdfs://namenode/table".to_string(), "URI scheme 'hdfs'"),
        (
            "foo://x/y".to_string(),
            "supported: file, s3, s3a, az, azure, adl, abfs, abfss, gs",
        ),
    ];
    for (location, needle) in cases {
        for command in ["inspect", "optimize", "report"] {
            let output = cli(&[command, &location]);
            let message = stderr(&output);
            assert_eq!(
                output.status.code(),
                Some(2),
                "{command} {location}: {message}"
            );
            assert!(message.contains(needle), "{command} {location}: {message}");
            assert_eq!(message.trim().lines().count(), 1, "{message}");
        }
    }
}

#[test]
fn one_file_is_singular() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    let output = cli(&["optimize", &fixture.location()]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(text.contains("-> 1 file ("), "{text}");
    assert!(text.contains("1 bin in 1 partition"), "{text}");
}

/// Appends commits holding only `commitInfo` until the next commit lands on `version`.
fn fill_to(fixture: &Fixture, version: u64) {
    let mut next = fixture.next_version();
    while next < version {
        fixture.write_commit(next, &[json!({"commitInfo": {"operation": "WRITE"}})]);
        next += 1;
    }
}

#[test]
fn a_commit_on_a_checkpoint_version_writes_the_checkpoint() {
    for (name, v2) in [
        ("stats-columns-vary", false),
        ("v2-checkpoint-databricks", true),
    ] {
        let fixture = Fixture::copy(name);
        let location = fixture.location();
        let version = fixture.next_version().div_ceil(10).max(1) * 10;
        fill_to(&fixture, version);
        let before = rows(&location);
        let outcome = optimize(&location, &OptimizeOptions::default()).unwrap();
        assert_eq!(outcome.version, Some(version), "{name}");
        assert_eq!(outcome.checkpoint, Some(version), "{name}");
        let log = fixture.path.join("_delta_log");
        let last: Value =
            serde_json::from_str(&std::fs::read_to_string(log.join("_last_checkpoint")).unwrap())
                .unwrap();
        assert_eq!(last["version"], version, "{name}: {last}");
        let checkpoint = std::fs::read_dir(&log)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .find(|n| {
                n.starts_with(&format!("{version:020}.checkpoint")) && n.ends_with(".parquet")
            })
            .unwrap_or_else(|| panic!("{name}: no checkpoint file"));
        // A V2 checkpoint (v2Checkpoint feature) holds a checkpointMetadata action; a classic
        // one does not.
        let bytes = bytes::Bytes::from(std::fs::read(log.join(&checkpoint)).unwrap());
        let reader =
            deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                bytes,
            )
            .unwrap();
        let has_metadata_action = reader
            .schema()
            .fields()
            .iter()
            .any(|f| f.name() == "checkpointMetadata");
        assert_eq!(has_metadata_action, v2, "{name}: {checkpoint}");
        // Readers load the table from the checkpoint alone: remove every commit up to it.
        for v in 0..=version {
            let _ = std::fs::remove_file(log.join(format!("{v:020}.json")));
        }
        assert_eq!(
            rows(&location),
            before,
            "{name}: rows read from the checkpoint"
        );
        assert_eq!(load(&location).version, version);
    }
}

#[test]
fn the_checkpoint_interval_is_the_tables() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    let location = fixture.location();
    let table = load(&location);
    let mut meta = fixture
        .commit(0)
        .into_iter()
        .find_map(|a| a.get("metaData").cloned())
        .unwrap();
    meta["configuration"]["delta.checkpointInterval"] = json!("3");
    let set = table.version + 1;
    fixture.write_commit(
        set,
        &[
            json!({"commitInfo": {"operation": "SET TBLPROPERTIES"}}),
            json!({"metaData": meta}),
        ],
    );
    fill_to(&fixture, (set + 1).div_ceil(3) * 3);
    let outcome = optimize(&location, &OptimizeOptions::default()).unwrap();
    let version = outcome.version.unwrap();
    assert_eq!(version % 3, 0);
    assert_eq!(outcome.checkpoint, Some(version));
    // Not on a multiple: no checkpoint.
    fixture.double_files();
    let outcome = optimize(&location, &OptimizeOptions::default()).unwrap();
    assert_ne!(outcome.version.unwrap() % 3, 0);
    assert_eq!(outcome.checkpoint, None);
}

/// Every file under the table root outside `_delta_log`, relative, with `/` separators.
fn files_on_disk(root: &std::path::Path) -> BTreeSet<String> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if path.is_dir() {
                if entry.file_name() != "_delta_log" {
                    walk(root, &path, out);
                }
            } else {
                let relative = path.strip_prefix(root).unwrap();
                out.insert(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, root, &mut out);
    out
}

#[test]
fn vacuum_deletes_exactly_the_files_no_version_needs() {
    for name in [
        "delta-rs-small-appends",
        "dv-columnmapping-partitioned",
        "special-char-partitions",
    ] {
        let fixture = Fixture::copy(name);
        let location = fixture.location();
        let ours = optimize(&location, &OptimizeOptions::default())
            .unwrap()
            .version;
        let before = rows(&location);
        // An orphan a writer left 30 days ago, and one left just now.
        let old_orphan = fixture.path.join("orphan-old.parquet");
        std::fs::write(&old_orphan, b"PAR1").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&old_orphan)
            .unwrap()
            .set_modified(
                std::time::SystemTime::now() - std::time::Duration::from_secs(30 * 86_400),
            )
            .unwrap();
        std::fs::write(fixture.path.join("orphan-new.parquet"), b"PAR1").unwrap();
        let log_before: BTreeSet<String> = std::fs::read_dir(fixture.path.join("_delta_log"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();

        // The table's retention (7 days): only the old orphan goes.
        let output = cli(&["vacuum", &location, "--json"]);
        assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
        let json: Value = serde_json::from_slice(&output.stdout).unwrap();
        let deleted: BTreeSet<String> = json["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                percent_encoding::percent_decode_str(f["path"].as_str().unwrap())
                    .decode_utf8()
                    .unwrap()
                    .into_owned()
            })
            .collect();
        assert!(
            deleted.contains("orphan-old.parquet"),
            "{name}: {deleted:?}"
        );
        assert!(
            !deleted.contains("orphan-new.parquet"),
            "{name}: {deleted:?}"
        );
        assert!(!old_orphan.exists());
        // The files the run just removed are needed by the versions before it.
        let ours = ours.map(|v| fixture.commit(v)).unwrap_or_default();
        for remove in ours.iter().filter_map(|a| a.get("remove")) {
            let path = percent_encoding::percent_decode_str(remove["path"].as_str().unwrap())
                .decode_utf8()
                .unwrap()
                .into_owned();
            assert!(
                !deleted.contains(&path),
                "{name}: {path} was removed just now"
            );
            assert!(fixture.path.join(&path).exists(), "{name}: {path}");
        }
        if name == "delta-rs-small-appends" {
            // Nothing else was ever removed from this table.
            assert_eq!(deleted.len(), 1, "{deleted:?}");
            assert_eq!(json["bytes"], 4);
        }

        // A shorter retention is refused unless its risk is accepted.
        let listing = fixture.listing();
        let output = cli(&["vacuum", &location, "--retain", "0"]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{message}");
        assert!(
            message.contains("--retain") && message.contains("--risk-breaking-readers"),
            "{message}"
        );
        assert_eq!(fixture.listing(), listing);

        // Retention 0: every file the latest version does not reference, data and deletion
        // vectors alike; a dry run lists them and deletes nothing.
        let referenced: BTreeSet<String> = {
            let table = load(&location);
            let mut set: BTreeSet<String> = table.files.iter().map(|f| f.path.clone()).collect();
            for file in &table.files {
                if let Some(dv) = &file.deletion_vector {
                    let kernel: delta_kernel::actions::deletion_vector::DeletionVectorDescriptor =
                        dv.clone().try_into().unwrap();
                    if let Some(url) = kernel.absolute_path(&table.location).unwrap() {
                        let root = table.location.as_str().trim_end_matches('/');
                        let relative = url
                            .as_str()
                            .strip_prefix(root)
                            .unwrap()
                            .trim_start_matches('/');
                        set.insert(
                            percent_encoding::percent_decode_str(relative)
                                .decode_utf8()
                                .unwrap()
                                .into_owned(),
                        );
                    }
                }
            }
            set
        };
        let expected: BTreeSet<String> = files_on_disk(&fixture.path)
            .into_iter()
            .filter(|p| !referenced.contains(p))
            .filter(|p| {
                !p.split('/').any(|part| {
                    part.starts_with('.') || (part.starts_with('_') && !part.contains('='))
                })
            })
            .collect();
        assert!(
            !expected.is_empty(),
            "{name}: the compacted inputs are unreferenced"
        );
        let output = cli(&[
            "vacuum",
            &location,
            "--retain",
            "0",
            "--risk-breaking-readers",
            "--dry-run",
            "--json",
        ]);
        assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
        let json: Value = serde_json::from_slice(&output.stdout).unwrap();
        let listed: BTreeSet<String> = json["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                percent_encoding::percent_decode_str(f["path"].as_str().unwrap())
                    .decode_utf8()
                    .unwrap()
                    .into_owned()
            })
            .collect();
        assert_eq!(
            listed, expected,
            "{name}: the dry run lists exactly the unreferenced files"
        );
        assert_eq!(
            fixture.listing(),
            listing,
            "{name}: a dry run deletes nothing"
        );

        let output = cli(&[
            "vacuum",
            &location,
            "--retain",
            "0",
            "--risk-breaking-readers",
        ]);
        assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
        let left = files_on_disk(&fixture.path);
        assert!(left.is_disjoint(&expected), "{name}: {left:?}");
        assert!(
            referenced.iter().all(|p| left.contains(p)),
            "{name}: a live file was deleted"
        );
        assert_eq!(
            rows(&location),
            before,
            "{name}: the latest version reads the same rows"
        );
        // Hidden names (Spark's checksums, `_SUCCESS`) stay at every level.
        assert!(
            left.iter()
                .filter(|p| p.split('/').any(|part| part.starts_with('.')))
                .count()
                >= usize::from(name == "special-char-partitions"),
            "{name}: {left:?}"
        );
        let log_after: BTreeSet<String> = std::fs::read_dir(fixture.path.join("_delta_log"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(log_after, log_before, "{name}: _delta_log untouched");
    }
}

#[test]
fn vacuum_keeps_working_beside_files_outside_the_table() {
    // A shallow clone's files live outside its root, at absolute URIs (PROTOCOL.md "Add
    // File and Remove File"); vacuum neither touches them nor fails on them.
    let fixture = Fixture::copy("delta-rs-small-appends");
    let outside = tempfile::tempdir().unwrap();
    let mut add = fixture
        .commit(0)
        .into_iter()
        .find_map(|a| a.get("add").cloned())
        .unwrap();
    let source = fixture.path.join(add["path"].as_str().unwrap());
    let elsewhere = outside.path().join("elsewhere.parquet");
    std::fs::copy(&source, &elsewhere).unwrap();
    add["path"] = json!(url::Url::from_file_path(&elsewhere).unwrap().to_string());
    fixture.write_commit(
        fixture.next_version(),
        &[
            json!({"commitInfo": {"operation": "SHALLOW CLONE"}}),
            json!({"add": add}),
        ],
    );
    let output = cli(&[
        "vacuum",
        &fixture.location(),
        "--retain",
        "0",
        "--risk-breaking-readers",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(elsewhere.exists());
}
