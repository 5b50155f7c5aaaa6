//! `verify`: fingerprints equal across OPTIMIZE on every accepted table, different when rows
//! are added or lost, `optimize --verify` refusing a tampered rewrite, and `--unique`.

use std::process::Command;
use std::sync::Arc;

use delta_layout::optimize::{OptimizeOptions, rewrite};
use delta_layout::plan::PlanOptions;
use delta_layout::progress::NoProgress;
use delta_layout::table::TableView;
use serde_json::Value;

use crate::fixture::{self, Fixture, load, rows};
use crate::rewrite::ACCEPTED;

fn verify(
    a: &TableView,
    b: &TableView,
    unique: Option<&[String]>,
) -> delta_layout::verify::VerifyReport {
    let rt = fixture::runtime();
    let _guard = rt.enter();
    delta_layout::verify::verify(a, b, unique).unwrap()
}

fn at(location: &str, version: u64) -> TableView {
    fixture::runtime()
        .block_on(TableView::load(location, Some(version)))
        .unwrap()
}

/// Every accepted table, files doubled (so that every table is really rewritten), then
/// optimized with `--verify`: the fingerprints before and after are equal, and the row count
/// is the one delta-kernel's own scan gives. Prints the fingerprints.
#[test]
fn fingerprints_are_equal_across_optimize_on_every_table() {
    for name in ACCEPTED {
        let fixture = Fixture::copy(name);
        let location = fixture.location();
        fixture.double_files();
        let before = load(&location);
        let outcome = fixture::optimize(&location, &OptimizeOptions::default().with_verify(true))
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        let after = load(&location);
        let report = verify(&before, &after, None);
        assert!(report.equal, "{name}: {report:?}");
        assert!(report.partitions_differing.is_empty(), "{name}");
        assert_eq!(report.rows_a, rows(&location).len() as u64, "{name}");
        println!(
            "{name}: version {} -> {:?}: {}",
            before.version, outcome.version, report.fingerprint_a
        );
    }
}

#[test]
fn added_and_lost_rows_are_found_and_named_by_partition() {
    let fixture = Fixture::copy("partitioned-string-null");
    let location = fixture.location();
    let original = load(&location);
    fixture.double_files();
    let doubled = load(&location);
    let report = verify(&original, &doubled, None);
    assert!(!report.equal);
    assert_eq!(report.rows_b, 2 * report.rows_a);
    let partitions: Vec<String> = original
        .files
        .iter()
        .map(|f| {
            format!(
                "{}={}",
                original.partition_columns[0],
                f.partition_values[0].as_deref().unwrap_or("__NULL__")
            )
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(report.partitions_differing, partitions);

    // The CLI: exit code 1, and 0 for equal versions.
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_delta-layout"))
            .args(args)
            .output()
            .unwrap()
    };
    let v0 = original.version.to_string();
    let output = run(&["verify", &location, "--compare", &v0, "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["equal"], false);
    assert_eq!(json["rows_a"], 2 * json["rows_b"].as_u64().unwrap());
    let output = run(&["verify", &location, "--version", &v0, "--compare", &v0]);
    assert_eq!(output.status.code(), Some(0));
    let output = run(&["verify", &location, "--compare", "999"]);
    assert_eq!(output.status.code(), Some(2));

    // An unpartitioned table names the whole table.
    let plain = Fixture::copy("basic-with-checkpoint");
    let before = load(&plain.location());
    plain.double_files();
    let report = verify(&before, &load(&plain.location()), None);
    assert_eq!(
        report.partitions_differing,
        [delta_layout::verify::WHOLE_TABLE]
    );
}

/// A written file replaced (same row count, one value changed) before the commit: the
/// check refuses, the files are deleted, the table is untouched.
#[test]
fn optimize_verify_refuses_a_rewrite_that_changed_a_row() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    let location = fixture.location();
    let listing = fixture.listing();
    let rt = fixture::runtime();
    let table = load(&location);
    let options = OptimizeOptions::default().with_plan(PlanOptions::default());
    let rewritten = rt
        .block_on(rewrite(table, &options, Arc::new(NoProgress)))
        .unwrap();
    let written = rewritten.written_paths();
    assert_eq!(written.len(), 1);
    let path = fixture.path.join(&written[0]);

    // Read the written file, change one value, write it back with the same row count.
    let file = std::fs::File::open(&path).unwrap();
    let reader =
        deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    let schema = batches[0].schema();
    let mut changed = Vec::new();
    for (i, batch) in batches.iter().enumerate() {
        let mut columns = batch.columns().to_vec();
        if i == 0 {
            let c = columns
                .iter()
                .position(|c| c.data_type() == &deltalake::arrow::datatypes::DataType::Int64)
                .expect("an integer column");
            let ints = columns[c]
                .as_any()
                .downcast_ref::<deltalake::arrow::array::Int64Array>()
                .unwrap();
            let mut values: Vec<Option<i64>> = ints.iter().collect();
            values[0] = Some(values[0].unwrap_or(0) + 1);
            columns[c] = Arc::new(deltalake::arrow::array::Int64Array::from(values));
        }
        changed
            .push(deltalake::arrow::array::RecordBatch::try_new(schema.clone(), columns).unwrap());
    }
    let mut buffer = Vec::new();
    let mut writer =
        deltalake::parquet::arrow::ArrowWriter::try_new(&mut buffer, schema, None).unwrap();
    for batch in &changed {
        writer.write(batch).unwrap();
    }
    writer.close().unwrap();
    std::fs::write(&path, buffer).unwrap();

    let err = rt.block_on(rewritten.verify()).unwrap_err();
    assert!(
        matches!(err, delta_layout::Error::VerifyFailed { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("nothing was committed"), "{err}");
    rt.block_on(rewritten.abort()).unwrap();
    assert_eq!(fixture.listing(), listing, "the table must be as before");
}

#[test]
fn unique_reports_exact_duplicates_and_ignores_nulls() {
    let fixture = Fixture::copy("http-requests-delta-rs");
    let location = fixture.location();
    let table = load(&location);
    let columns = vec!["ClientIP".to_string(), "date".to_string()];
    let report = verify(&table, &table, Some(&columns));
    assert!(report.equal);
    // Every request comes from 127.0.0.1: one combination per date.
    let d = &report.duplicates[0];
    assert_eq!(d.duplicated_keys, 2);
    assert_eq!(d.extra_rows, 1581 - 2);
    assert_eq!(d.examples[0].rows, 1437);
    assert_eq!(d.examples[0].key, "('127.0.0.1', '2023-04-14')");

    // Nulls never count: a table whose duplicates are all null in one column.
    let fixture = Fixture::copy("partitioned-string-null");
    let table = load(&fixture.location());
    let partition = table.partition_columns.clone();
    let doubled_location = fixture.location();
    fixture.double_files();
    let doubled = at(&doubled_location, table.version + 1);
    let report = verify(&doubled, &doubled, Some(&partition));
    let null_rows = doubled
        .files
        .iter()
        .filter(|f| f.partition_values[0].is_none())
        .filter_map(|f| f.num_live_rows())
        .sum::<u64>();
    assert!(null_rows > 0, "the table has a null partition");
    let non_null_rows = doubled.totals().rows - null_rows;
    let distinct = table
        .files
        .iter()
        .filter_map(|f| f.partition_values[0].clone())
        .collect::<std::collections::BTreeSet<_>>()
        .len() as u64;
    assert_eq!(report.duplicates[0].duplicated_keys, distinct);
    assert_eq!(report.duplicates[0].extra_rows, non_null_rows - distinct);

    let err = {
        let rt = fixture::runtime();
        let _guard = rt.enter();
        delta_layout::verify::verify(&table, &table, Some(&["nope".to_string()])).unwrap_err()
    };
    assert!(err.to_string().contains("nope"), "{err}");
}

/// PROTOCOL.md "Partition Value Serialization": an empty string is a null partition value,
/// so a file re-added with `""` holds the same rows as with `null`.
#[test]
fn an_empty_partition_value_is_null() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    let location = fixture.location();
    let table = load(&location);
    let file = &table.files[0];
    let copy = |name: &str, value: Value| {
        let source = fixture.path.join(&file.path);
        let target = fixture.path.join(name);
        std::fs::copy(source, &target).unwrap();
        let mut add = serde_json::to_value(serde_json::json!({
            "path": name, "size": file.size_bytes, "modificationTime": 0, "dataChange": true,
            "stats": file.stats.as_ref().map(|s| serde_json::json!({"numRecords": s.num_records}).to_string()),
        }))
        .unwrap();
        add["partitionValues"] =
            serde_json::json!({ table.partition_physical_names[0].clone(): value });
        serde_json::json!({ "add": add })
    };
    let remove = |path: &str| serde_json::json!({"remove": {"path": path, "dataChange": true, "deletionTimestamp": 0}});
    let v1 = fixture.next_version();
    fixture.write_commit(
        v1,
        &[
            remove(&file.raw_path),
            copy("empty.parquet", Value::String(String::new())),
        ],
    );
    let v2 = v1 + 1;
    fixture.write_commit(
        v2,
        &[remove("empty.parquet"), copy("null.parquet", Value::Null)],
    );
    let report = verify(&at(&location, v1), &at(&location, v2), None);
    assert!(report.equal, "{report:?}");
    assert!(
        at(&location, v1)
            .files
            .iter()
            .any(|f| f.path == "empty.parquet" && f.partition_values[0].is_none())
    );
}
