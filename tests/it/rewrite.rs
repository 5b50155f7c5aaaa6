//! Compaction on every real table the tool accepts: rows, files, stats, idempotence.

use std::collections::BTreeSet;

use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::PlanOptions;
use deltalake::arrow::array::{Array, AsArray};
use deltalake::arrow::datatypes::{
    DataType, Date32Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
};
use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Value, json};

use crate::fixture::{Fixture, load, optimize, rows};

/// Tables from `testdata/` that `optimize` accepts.
pub const ACCEPTED: &[&str] = &[
    "all-types-nested",
    "basic-with-checkpoint",
    "collations-spark",
    "columnmapping-id-all-types",
    "columnmapping-name-databricks",
    "databricks-auto-optimize-dv-cdf",
    "delta-rs-small-appends",
    "dv-columnmapping-partitioned",
    "dv-with-checkpoints",
    "empty-after-delete",
    "http-requests-delta-rs",
    "materialized-partitions-spark",
    "multipart-checkpoint",
    "partition-values-all-types",
    "partitioned-string-null",
    "removes-with-checkpoint",
    "schema-evolution-added-column",
    "special-char-partitions",
    "stats-columns-vary",
    "stats-missing-partial",
    "stats-parsed-only-checkpoint",
    "timestamp-ntz-partitioned",
    "uniform-spark",
    "v2-checkpoint-databricks",
    "v2-checkpoint-sidecars",
    "zorder-optimized",
];

fn decode(path: &str) -> String {
    percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .unwrap()
        .into_owned()
}

/// Checks one added file's `numRecords`, `nullCount` and min/max against its own rows,
/// computed here independently of the writer. `strict` requires min/max for every orderable
/// top-level column (tables with default stats settings).
fn check_added_file(fixture: &Fixture, add: &Value, strict: bool) {
    let path = decode(add["path"].as_str().unwrap());
    let bytes = std::fs::read(fixture.path.join(&path)).unwrap();
    assert_eq!(
        add["size"].as_u64().unwrap(),
        bytes.len() as u64,
        "{path}: size"
    );
    assert_eq!(add["dataChange"], json!(false));
    let stats: Value = serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    let num_rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(
        stats["numRecords"].as_u64().unwrap(),
        num_rows as u64,
        "{path}"
    );
    let Some(first) = batches.first() else { return };
    let schema = first.schema();
    for (i, field) in schema.fields().iter().enumerate() {
        let name = field.name();
        if add["partitionValues"].get(name).is_some() {
            // A materialized partition column: its values are the partition value
            // (checked in features.rs), and it has no stats.
            continue;
        }
        let columns: Vec<_> = batches.iter().map(|b| b.column(i).clone()).collect();
        let nulls: usize = columns.iter().map(|c| c.null_count()).sum();
        if let Some(n) = stats["nullCount"].get(name) {
            if let Some(n) = n.as_u64() {
                assert_eq!(n, nulls as u64, "{path}: nullCount of {name}");
            }
        } else {
            assert!(!strict, "{path}: no nullCount for {name}");
        }
        let values: Vec<Value> = columns
            .iter()
            .flat_map(|c| -> Vec<Value> {
                match c.data_type() {
                    DataType::Int8 => c
                        .as_primitive::<Int8Type>()
                        .iter()
                        .flatten()
                        .map(|v| json!(v))
                        .collect(),
                    DataType::Int16 => c
                        .as_primitive::<Int16Type>()
                        .iter()
                        .flatten()
                        .map(|v| json!(v))
                        .collect(),
                    DataType::Int32 => c
                        .as_primitive::<Int32Type>()
                        .iter()
                        .flatten()
                        .map(|v| json!(v))
                        .collect(),
                    DataType::Int64 => c
                        .as_primitive::<Int64Type>()
                        .iter()
                        .flatten()
                        .map(|v| json!(v))
                        .collect(),
                    DataType::Float32 => c
                        .as_primitive::<Float32Type>()
                        .iter()
                        .flatten()
                        .map(|v| json!(f64::from(v)))
                        .collect(),
                    DataType::Float64 => c
                        .as_primitive::<Float64Type>()
                        .iter()
                        .flatten()
                        .map(|v| json!(v))
                        .collect(),
                    DataType::Date32 => c
                        .as_primitive::<Date32Type>()
                        .iter()
                        .flatten()
                        .map(|d| {
                            json!(
                                chrono::DateTime::from_timestamp(i64::from(d) * 86_400, 0)
                                    .unwrap()
                                    .format("%Y-%m-%d")
                                    .to_string()
                            )
                        })
                        .collect(),
                    DataType::Utf8 => c
                        .as_string::<i32>()
                        .iter()
                        .flatten()
                        .map(|s| json!(s))
                        .collect(),
                    _ => Vec::new(),
                }
            })
            .collect();
        if values.is_empty() {
            continue;
        }
        let cmp = |a: &Value, b: &Value| match (a, b) {
            (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
            (Value::Number(x), Value::Number(y)) => {
                x.as_f64().unwrap().total_cmp(&y.as_f64().unwrap())
            }
            _ => unreachable!(),
        };
        let min = values.iter().min_by(|a, b| cmp(a, b)).unwrap();
        let max = values.iter().max_by(|a, b| cmp(a, b)).unwrap();
        let long_string = values
            .iter()
            .any(|v| v.as_str().is_some_and(|s| s.chars().count() > 32));
        match (stats["minValues"].get(name), stats["maxValues"].get(name)) {
            (Some(lo), Some(hi)) if !long_string => {
                assert_eq!(
                    cmp(lo, min),
                    std::cmp::Ordering::Equal,
                    "{path}: min of {name}"
                );
                assert_eq!(
                    cmp(hi, max),
                    std::cmp::Ordering::Equal,
                    "{path}: max of {name}"
                );
            }
            (Some(lo), Some(hi)) => {
                assert_ne!(
                    cmp(lo, min),
                    std::cmp::Ordering::Greater,
                    "{path}: min of {name}"
                );
                assert_ne!(
                    cmp(hi, max),
                    std::cmp::Ordering::Less,
                    "{path}: max of {name}"
                );
            }
            _ => {
                let has_nan = values.iter().any(|v| v.as_f64().is_some_and(f64::is_nan));
                assert!(!strict || has_nan, "{path}: no min/max for {name}");
            }
        }
    }
}

/// Optimizes a copy of `name` and checks everything the foundation issue asks for.
fn check_table(name: &str, options: &OptimizeOptions, idempotent: bool) {
    check_fixture(name, &Fixture::copy(name), options, idempotent);
}

pub fn check_fixture(name: &str, fixture: &Fixture, options: &OptimizeOptions, idempotent: bool) {
    let location = fixture.location();
    let before_rows = rows(&location);
    let before = load(&location);
    let before_paths: BTreeSet<String> = before.files.iter().map(|f| f.path.clone()).collect();
    let strict = !before
        .properties
        .keys()
        .any(|k| k.starts_with("delta.dataSkipping"));

    let outcome = optimize(&location, options).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let after = load(&location);
    let after_paths: BTreeSet<String> = after.files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(
        rows(&location),
        before_rows,
        "{name}: the row multiset changed"
    );

    match outcome.version {
        None => {
            assert_eq!(
                after.version, before.version,
                "{name}: nothing to do must not commit"
            );
            assert_eq!(after_paths, before_paths);
        }
        Some(version) => {
            assert_eq!(version, before.version + 1);
            let actions = fixture.commit(version);
            let info = &actions[0]["commitInfo"];
            assert_eq!(info["operation"], json!("OPTIMIZE"));
            let z_order_by = outcome
                .plan
                .clustering
                .as_ref()
                .map_or_else(|| "[]".to_string(), |c| c.columns_json());
            assert_eq!(info["operationParameters"]["zOrderBy"], json!(z_order_by));
            let removed: BTreeSet<String> = actions
                .iter()
                .filter_map(|a| a.get("remove"))
                .map(|r| {
                    assert_eq!(r["dataChange"], json!(false));
                    assert_eq!(r["extendedFileMetadata"], json!(true));
                    decode(r["path"].as_str().unwrap())
                })
                .collect();
            let added: Vec<&Value> = actions.iter().filter_map(|a| a.get("add")).collect();
            let added_paths: BTreeSet<String> = added
                .iter()
                .map(|a| decode(a["path"].as_str().unwrap()))
                .collect();
            assert_eq!(removed.len() as u64, outcome.files_removed);
            assert_eq!(added.len() as u64, outcome.files_added);
            assert_eq!(
                info["operationMetrics"]["numRemovedFiles"],
                json!(removed.len().to_string())
            );
            let expected: BTreeSet<String> = before_paths
                .difference(&removed)
                .cloned()
                .chain(added_paths.iter().cloned())
                .collect();
            assert_eq!(after_paths, expected, "{name}: active files");
            assert!(removed.is_subset(&before_paths));
            for add in &added {
                check_added_file(fixture, add, strict);
            }
            // The rows counted by the outcome are the rows in the new files.
            let added_rows: u64 = added
                .iter()
                .map(|a| {
                    serde_json::from_str::<Value>(a["stats"].as_str().unwrap()).unwrap()
                        ["numRecords"]
                        .as_u64()
                        .unwrap()
                })
                .sum();
            assert_eq!(added_rows, outcome.rows, "{name}");
        }
    }
    // A second run on the unchanged table is a no-op, or, when the compacted files came out
    // smaller than the minimum size (a tiny target), rewrites only files the first run wrote.
    let first_run_files: BTreeSet<String> =
        after_paths.difference(&before_paths).cloned().collect();
    let again = optimize(&location, options).unwrap();
    if idempotent {
        assert_eq!(again.version, None, "{name}: second run rewrote files");
        assert_eq!(load(&location).version, after.version);
    } else {
        let again_after: BTreeSet<String> = load(&location)
            .files
            .iter()
            .map(|f| f.path.clone())
            .collect();
        let removed_again: BTreeSet<String> =
            after_paths.difference(&again_after).cloned().collect();
        assert!(
            removed_again.is_subset(&first_run_files),
            "{name}: second run rewrote original files"
        );
        assert_eq!(
            rows(&location),
            before_rows,
            "{name}: second run changed rows"
        );
    }
}

#[test]
fn compaction_keeps_rows_files_and_stats_on_every_accepted_table() {
    for name in ACCEPTED {
        check_table(name, &OptimizeOptions::default(), true);
    }
}

/// Tables with one file per partition are a no-op as they are; doubling their files (a
/// second writer appending the same files again) makes every table, every partition type,
/// null partition and nested type go through a real rewrite.
#[test]
fn compaction_of_doubled_tables_keeps_every_row_twice() {
    for name in ACCEPTED {
        let fixture = Fixture::copy(name);
        let before = rows(&fixture.location());
        let original_files = load(&fixture.location()).files.len();
        let added = fixture.double_files();
        let doubled = rows(&fixture.location());
        // Files with deletion vectors are not copied; elsewhere every row is there twice.
        if added == original_files {
            let mut expected: Vec<String> = before.iter().chain(before.iter()).cloned().collect();
            expected.sort();
            assert_eq!(doubled, expected, "{name}: doubling");
        }
        check_fixture(name, &fixture, &OptimizeOptions::default(), true);
    }
}

#[test]
fn small_target_packs_several_bins_and_rolls_files() {
    let options = OptimizeOptions::default().with_plan(
        PlanOptions::default()
            .with_target_file_bytes(Some(3_000))
            .with_min_file_bytes(Some(1_000)),
    );
    // 101 files of about 540 bytes: bins of 5 files each.
    let fixture = Fixture::copy("v2-checkpoint-sidecars");
    let location = fixture.location();
    let before_rows = rows(&location);
    let outcome = optimize(&location, &options).unwrap();
    assert!(
        outcome.plan.bins().count() > 10,
        "{} bins",
        outcome.plan.bins().count()
    );
    for bin in outcome.plan.bins() {
        assert!(bin.input_bytes <= 3_000);
    }
    assert_eq!(rows(&location), before_rows);
    check_table("v2-checkpoint-sidecars", &options, false);
    check_table(
        "multipart-checkpoint",
        &options.clone().with_threads(1),
        false,
    );
}

/// A memory limit smaller than one compaction bin's buffers runs one bin at a time: the same
/// files and rows as with the default limit.
#[test]
fn a_tight_memory_limit_compacts_one_bin_at_a_time_with_the_same_result() {
    let plan = PlanOptions::default()
        .with_target_file_bytes(Some(3_000))
        .with_min_file_bytes(Some(1_000));
    let mut results = Vec::new();
    for limit in [None, Some(1)] {
        let fixture = Fixture::copy("v2-checkpoint-sidecars");
        let location = fixture.location();
        let before = rows(&location);
        let outcome = optimize(
            &location,
            &OptimizeOptions::default()
                .with_plan(plan.clone())
                .with_memory_limit(limit),
        )
        .unwrap();
        assert!(
            outcome.plan.bins().count() > 10,
            "{} bins",
            outcome.plan.bins().count()
        );
        assert_eq!(rows(&location), before);
        let mut sizes: Vec<u64> = load(&location).files.iter().map(|f| f.size_bytes).collect();
        sizes.sort_unstable();
        results.push((outcome.files_added, sizes));
    }
    assert_eq!(results[0], results[1]);
}

#[test]
fn where_selects_partitions() {
    let fixture = Fixture::copy("partitioned-string-null");
    let location = fixture.location();
    let before = load(&location);
    let before_rows = rows(&location);
    let options = OptimizeOptions::default()
        .with_plan(PlanOptions::default().with_predicate(Some("letter = 'b'".into())));
    let outcome = optimize(&location, &options).unwrap();
    assert_eq!(
        outcome.version, None,
        "partition b has one file: nothing to do"
    );
    let options = OptimizeOptions::default()
        .with_plan(PlanOptions::default().with_predicate(Some("letter IN ('a', 'b')".into())));
    let outcome = optimize(&location, &options).unwrap();
    assert_eq!(outcome.files_removed, 2);
    assert_eq!(outcome.plan.partitions.len(), 1);
    assert_eq!(
        outcome.plan.partitions[0].values,
        vec![Some("a".to_string())]
    );
    let after = load(&location);
    assert_eq!(after.files.len(), before.files.len() - 1);
    assert_eq!(rows(&location), before_rows);
}

#[test]
fn deletion_vectors_over_the_ratio_are_rewritten_alone() {
    // Two files of 250 rows with 46 deleted rows between them: with a large minimum size
    // disabled (min 0), only the deleted-row ratio makes them candidates.
    let fixture = Fixture::copy("dv-with-checkpoints");
    let location = fixture.location();
    let before_rows = rows(&location);
    assert_eq!(before_rows.len(), 454);
    let options = OptimizeOptions::default().with_plan(
        PlanOptions::default()
            .with_min_file_bytes(Some(0))
            .with_max_deleted_ratio(0.01),
    );
    let outcome = optimize(&location, &options).unwrap();
    assert_eq!(outcome.files_removed, 2);
    assert_eq!(outcome.rows, 454);
    let after = load(&location);
    assert!(after.files.iter().all(|f| f.deletion_vector.is_none()));
    assert_eq!(rows(&location), before_rows);
    // With a ratio above every file's, nothing is a candidate.
    let fixture = Fixture::copy("dv-with-checkpoints");
    let options = OptimizeOptions::default().with_plan(
        PlanOptions::default()
            .with_min_file_bytes(Some(0))
            .with_max_deleted_ratio(0.9),
    );
    assert_eq!(
        optimize(&fixture.location(), &options).unwrap().version,
        None
    );
}

#[test]
fn refused_features_are_named_and_nothing_is_written() {
    let fixture = Fixture::copy("basic-with-checkpoint");
    fixture.write_commit(
        fixture.next_version(),
        &[json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
            "readerFeatures": [], "writerFeatures": ["appendOnly", "invariants", "icebergCompatV3"]}})],
    );
    let listing = fixture.listing();
    let err = optimize(&fixture.location(), &OptimizeOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("icebergCompatV3"), "{err}");
    assert_eq!(fixture.listing(), listing);
}

#[test]
fn dry_run_writes_nothing() {
    let fixture = Fixture::copy("basic-with-checkpoint");
    let listing = fixture.listing();
    let outcome = optimize(
        &fixture.location(),
        &OptimizeOptions::default().with_dry_run(true),
    )
    .unwrap();
    assert_eq!(outcome.version, None);
    assert_eq!(outcome.files_removed, 30);
    assert_eq!(outcome.plan.bins().count(), 1);
    assert_eq!(fixture.listing(), listing);
}

/// Regression (breaker report, bug 1): Spark writes paths with raw non-ASCII characters and
/// spaces (`data=😈/...`); a `remove` must repeat the log's spelling exactly, or readers keep
/// the old file live and rows are duplicated.
#[test]
fn removes_repeat_the_raw_log_path() {
    let fixture = Fixture::copy("special-char-partitions");
    let location = fixture.location();
    let table = load(&location);
    let mut adds: Vec<Value> = Vec::new();
    for version in fixture.log_versions() {
        for action in fixture.commit(version) {
            if let Some(add) = action.get("add") {
                adds.push(add.clone());
            }
        }
    }
    let mut new_adds = Vec::new();
    for file in &table.files {
        let original = adds
            .iter()
            .rev()
            .find(|a| a["path"] == json!(file.raw_path))
            .unwrap()
            .clone();
        let (raw_dir, raw_name) = file.raw_path.rsplit_once('/').unwrap();
        let (dir, name) = file.path.rsplit_once('/').unwrap();
        std::fs::copy(
            fixture.path.join(&file.path),
            fixture.path.join(format!("{dir}/dup ü-{name}")),
        )
        .unwrap();
        let mut add = original;
        add["path"] = json!(format!("{raw_dir}/dup ü-{raw_name}"));
        add["dataChange"] = json!(true);
        new_adds.push(json!({ "add": add }));
    }
    let next = table.version + 1;
    let mut actions = vec![json!({"commitInfo": {"operation": "WRITE"}})];
    actions.extend(new_adds);
    fixture.write_commit(next, &actions);
    let before_rows = rows(&location);
    assert_eq!(before_rows.len(), 2 * table.files.len());

    let outcome = optimize(&location, &OptimizeOptions::default()).unwrap();
    assert_eq!(outcome.files_removed, 2 * table.files.len() as u64);
    assert_eq!(rows(&location), before_rows, "rows duplicated or lost");
    let after = load(&location);
    assert_eq!(after.files.len(), table.files.len());
    assert!(after.files.iter().all(|f| !f.path.contains("dup ü")));
    // The removes spell the paths as the adds did.
    let removes: BTreeSet<String> = fixture
        .commit(next + 1)
        .iter()
        .filter_map(|a| a.get("remove"))
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    assert!(removes.iter().any(|p| p.contains("dup ü-")), "{removes:?}");
}

#[test]
fn every_read_concurrency_keeps_the_rows_in_order() {
    // 101 small files, one bin: fetched one at a time, in chunks of 3, and all at once (the
    // prefetch holds at most PREFETCH_BYTES beyond its first file, far above these).
    let mut written = Vec::new();
    for concurrency in [1, 3, 256] {
        let fixture = Fixture::copy("v2-checkpoint-sidecars");
        let location = fixture.location();
        let before_rows = rows(&location);
        let options = OptimizeOptions::default()
            .with_read_concurrency(concurrency)
            .with_threads(1);
        let outcome = optimize(&location, &options).unwrap();
        assert_eq!(outcome.files_removed, 101, "concurrency {concurrency}");
        assert_eq!(rows(&location), before_rows, "concurrency {concurrency}");
        let after = load(&location);
        // Files are written in input order whatever the prefetch: the same bytes each time.
        let mut sizes: Vec<u64> = after.files.iter().map(|f| f.size_bytes).collect();
        sizes.sort_unstable();
        written.push(sizes);
    }
    assert_eq!(written[0], written[1]);
    assert_eq!(written[0], written[2]);
}

/// Keys unique in a row group are written `PLAIN`: the plan measures it on its output
/// sample (`plain_columns`), the written files have no dictionary page for them and keep one
/// for low-cardinality columns, and every row is kept.
#[test]
fn columns_whose_dictionary_falls_back_are_written_plain() {
    use deltalake::arrow::array::{Int64Array, RecordBatch, StringArray};
    use deltalake::arrow::datatypes::{DataType, Field, Schema};
    let schema = std::sync::Arc::new(Schema::new(vec![
        Field::new("key", DataType::Int64, false),
        Field::new("flag", DataType::Utf8, false),
        Field::new("day", DataType::Int64, false),
    ]));
    let files: Vec<Vec<RecordBatch>> = (0..10_i64)
        .map(|f| {
            let ids = (f * 20_000)..((f + 1) * 20_000);
            vec![
                RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        std::sync::Arc::new(Int64Array::from_iter_values(
                            ids.clone().map(|v| v * 2_654_435_761 % 4_294_967_311),
                        )),
                        std::sync::Arc::new(StringArray::from_iter_values(
                            ids.clone()
                                .map(|v| ["A", "N", "R"][usize::try_from(v % 3).unwrap()]),
                        )),
                        std::sync::Arc::new(Int64Array::from_iter_values(ids.map(|v| v % 365))),
                    ],
                )
                .unwrap(),
            ]
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let location = crate::fixture::synthetic_table(dir.path(), "keys", &files)
        .display()
        .to_string();
    let before = crate::fixture::rows(&location);
    let outcome = crate::fixture::optimize(
        &location,
        &delta_layout::optimize::OptimizeOptions::default(),
    )
    .unwrap();
    assert_eq!(outcome.plan.plain_columns, ["key"]);
    assert_eq!(crate::fixture::rows(&location), before);
    let table = crate::fixture::load(&location);
    assert_eq!(table.files.len(), 1);
    let file =
        std::fs::File::open(std::path::Path::new(&location).join(&table.files[0].path)).unwrap();
    let reader = deltalake::parquet::file::reader::SerializedFileReader::new(file).unwrap();
    use deltalake::parquet::file::reader::FileReader as _;
    let meta = reader.metadata();
    for g in 0..meta.num_row_groups() {
        for c in meta.row_group(g).columns() {
            let plain = c.dictionary_page_offset().is_none();
            assert_eq!(
                plain,
                c.column_path().string() == "key",
                "row group {g}, column {}",
                c.column_path().string()
            );
        }
    }
}
