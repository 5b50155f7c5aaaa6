//! Table features of current Delta writers, on tables made here by hand (protocol, schema
//! and files as PROTOCOL.md describes them): in-commit timestamps and type widening.

use std::sync::Arc;

use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::PlanOptions;
use delta_layout::plan::cluster::ClusterRequest;
use deltalake::arrow::array::{
    ArrayRef, AsArray, Date32Array, Decimal128Array, Float32Array, Int16Array, Int32Array,
    Int64Array, TimestampMicrosecondArray,
};
use deltalake::arrow::datatypes::{DataType, Float64Type, Int64Type};
use serde_json::{Value, json};

use crate::faults::{RawFile, column_of, parquet, raw_table};
use crate::fixture::{Fixture, load, optimize, rows};

#[test]
fn in_commit_timestamps_increase_and_come_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ict");
    // A previous commit stamped a day in the future (a clock ahead): ours must still be
    // later, by exactly one millisecond.
    let ahead = chrono::Utc::now().timestamp_millis() + 86_400_000;
    let files = (0..3)
        .map(|i| {
            RawFile::plain(
                &format!("part-{i}.parquet"),
                parquet(vec![(
                    "x",
                    Arc::new(Int64Array::from(vec![i, i + 3])) as ArrayRef,
                )]),
            )
        })
        .collect();
    raw_table(
        &root,
        json!({"minReaderVersion": 1, "minWriterVersion": 7,
            "writerFeatures": ["inCommitTimestamp", "appendOnly", "invariants"]}),
        json!([{"name": "x", "type": "long", "nullable": true, "metadata": {}}]),
        &[],
        json!({"delta.enableInCommitTimestamps": "true",
            "delta.inCommitTimestampEnablementVersion": "0",
            "delta.inCommitTimestampEnablementTimestamp": ahead.to_string()}),
        Vec::new(),
        files,
    );
    // raw_table's first action is a commitInfo without the timestamp: put it in.
    let fixture = Fixture::at(&root);
    let mut actions = fixture.commit(0);
    actions[0] = json!({"commitInfo": {"operation": "CREATE TABLE", "inCommitTimestamp": ahead}});
    fixture.write_commit(0, &actions);
    let location = fixture.location();
    let before = rows(&location);
    let outcome = optimize(&location, &OptimizeOptions::default()).unwrap();
    let version = outcome.version.unwrap();
    let commit = fixture.commit(version);
    let first = commit[0]
        .get("commitInfo")
        .expect("commitInfo is the first action");
    assert_eq!(first["inCommitTimestamp"], ahead + 1, "{first}");
    assert_eq!(rows(&location), before);
    // A second commit follows the first.
    fixture.double_files();
    let appended = fixture.log_versions().last().copied().unwrap();
    let mut actions = fixture.commit(appended);
    actions[0] = json!({"commitInfo": {"operation": "WRITE", "inCommitTimestamp": ahead + 10}});
    fixture.write_commit(appended, &actions);
    let outcome = optimize(&location, &OptimizeOptions::default()).unwrap();
    let commit = fixture.commit(outcome.version.unwrap());
    assert_eq!(commit[0]["commitInfo"]["inCommitTimestamp"], ahead + 11);
    // The enablement properties are untouched (no metaData written).
    assert!(commit.iter().all(|a| a.get("metaData").is_none()));
    // The feature with the property on is what asks for the timestamps.
    let table = load(&location);
    assert!(delta_layout::commit::in_commit_timestamps_enabled(&table));
    // A curve, verify against the first version, and a second run that does nothing.
    let options =
        OptimizeOptions::default().with_plan(PlanOptions::default().with_clustering(Some(
            ClusterRequest::new(delta_layout::curve::Curve::ZOrder, vec!["x".into()]),
        )));
    let outcome = optimize(&location, &options).unwrap();
    let commit = fixture.commit(outcome.version.unwrap());
    assert_eq!(commit[0]["commitInfo"]["inCommitTimestamp"], ahead + 12);
    assert_eq!(optimize(&location, &options).unwrap().version, None);
    let verify = {
        let rt = crate::fixture::runtime();
        let _guard = rt.enter();
        let v1 = rt
            .block_on(delta_layout::table::TableView::load(
                &location,
                Some(appended),
            ))
            .unwrap();
        delta_layout::verify::verify(&v1, &load(&location), None).unwrap()
    };
    assert!(verify.equal);
}

#[test]
fn widened_columns_are_read_exactly_and_written_at_the_current_type() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("widened");
    let type_changes =
        |from: &str, to: &str| json!({"delta.typeChanges": [{"fromType": from, "toType": to}]});
    let fields = json!([
        {"name": "i", "type": "long", "nullable": true, "metadata": type_changes("integer", "long")},
        {"name": "s", "type": "integer", "nullable": true, "metadata": type_changes("short", "integer")},
        {"name": "f", "type": "double", "nullable": true, "metadata": type_changes("float", "double")},
        {"name": "d", "type": "decimal(12,4)", "nullable": true, "metadata": type_changes("decimal(5,2)", "decimal(12,4)")},
        {"name": "t", "type": "timestamp_ntz", "nullable": true, "metadata": type_changes("date", "timestamp_ntz")},
    ]);
    // Written before the widenings: the narrow types.
    let old = parquet(vec![
        (
            "i",
            Arc::new(Int32Array::from(vec![i32::MIN, 7])) as ArrayRef,
        ),
        (
            "s",
            Arc::new(Int16Array::from(vec![i16::MAX, -1])) as ArrayRef,
        ),
        (
            "f",
            Arc::new(Float32Array::from(vec![0.1f32, -2.5])) as ArrayRef,
        ),
        (
            "d",
            Arc::new(
                Decimal128Array::from(vec![-99_999i128, 12_345])
                    .with_precision_and_scale(5, 2)
                    .unwrap(),
            ) as ArrayRef,
        ),
        (
            "t",
            Arc::new(Date32Array::from(vec![-719_162, 19_000])) as ArrayRef,
        ),
    ]);
    // Written after: the current types.
    let new = parquet(vec![
        (
            "i",
            Arc::new(Int64Array::from(vec![1i64 << 40])) as ArrayRef,
        ),
        ("s", Arc::new(Int32Array::from(vec![1 << 20])) as ArrayRef),
        (
            "f",
            Arc::new(deltalake::arrow::array::Float64Array::from(vec![1e300])) as ArrayRef,
        ),
        (
            "d",
            Arc::new(
                Decimal128Array::from(vec![999_999_999_999_i128])
                    .with_precision_and_scale(12, 4)
                    .unwrap(),
            ) as ArrayRef,
        ),
        (
            "t",
            Arc::new(TimestampMicrosecondArray::from(vec![1_000_000i64])) as ArrayRef,
        ),
    ]);
    raw_table(
        &root,
        json!({"minReaderVersion": 3, "minWriterVersion": 7,
            "readerFeatures": ["typeWidening", "timestampNtz"],
            "writerFeatures": ["typeWidening", "timestampNtz"]}),
        fields,
        &[],
        json!({"delta.enableTypeWidening": "true"}),
        Vec::new(),
        vec![
            RawFile::plain("old.parquet", old),
            RawFile::plain("new.parquet", new),
        ],
    );
    let fixture = Fixture::at(&root);
    let location = fixture.location();
    let before = rows(&location);
    assert!(
        before.iter().any(|r| r.contains("i=\"-2147483648\"")),
        "{before:?}"
    );
    optimize(&location, &OptimizeOptions::default()).unwrap();
    assert_eq!(rows(&location), before, "compaction");
    let table = load(&location);
    let path = &table.files[0].path;
    assert_eq!(column_of(&root, path, "i").data_type(), &DataType::Int64);
    assert_eq!(column_of(&root, path, "f").data_type(), &DataType::Float64);
    assert_eq!(
        column_of(&root, path, "d").data_type(),
        &DataType::Decimal128(12, 4)
    );
    let f = column_of(&root, path, "f");
    let mut f: Vec<f64> = f.as_primitive::<Float64Type>().values().to_vec();
    f.sort_by(f64::total_cmp);
    assert_eq!(
        f,
        vec![-2.5, f64::from(0.1f32), 1e300],
        "float widened exactly"
    );
    let i = column_of(&root, path, "i");
    let mut i = i.as_primitive::<Int64Type>().values().to_vec();
    i.sort_unstable();
    assert_eq!(i, vec![i64::from(i32::MIN), 7, 1 << 40]);
    // Stats at the current type.
    let stats: Value = serde_json::from_str(
        fixture.commit(1).iter().find_map(|a| a.get("add")).unwrap()["stats"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(stats["minValues"]["i"], i64::from(i32::MIN));
    assert_eq!(stats["maxValues"]["i"], 1i64 << 40);
    assert_eq!(stats["minValues"]["t"], "0001-01-01T00:00:00.000");
    assert_eq!(stats["minValues"]["d"], -999.99);
    // The schema keeps its type-change history.
    let schema = load(&location).schema;
    let field = schema.fields().find(|f| f.name() == "i").unwrap();
    assert!(
        field.metadata().contains_key("delta.typeChanges"),
        "{field:?}"
    );
    // Clustering on widened columns, and a second run that does nothing.
    let options = OptimizeOptions::default().with_plan(PlanOptions::default().with_clustering(
        Some(ClusterRequest::new(
            delta_layout::curve::Curve::Hilbert,
            vec!["i".into(), "d".into()],
        )),
    ));
    optimize(&location, &options).unwrap();
    assert_eq!(rows(&location), before, "clustering");
    assert_eq!(optimize(&location, &options).unwrap().version, None);
    let verify = {
        let rt = crate::fixture::runtime();
        let _guard = rt.enter();
        let v0 = rt
            .block_on(delta_layout::table::TableView::load(&location, Some(0)))
            .unwrap();
        delta_layout::verify::verify(&v0, &load(&location), None).unwrap()
    };
    assert!(verify.equal);
}

/// Void columns (Spark 4's `NULL AS x`): in the schema, never in data files. Compaction and
/// clustering carry them as Delta writers do (left out of the files, no stats), every reader
/// sees the same rows with the column null, and `verify` and `inspect` agree. A void inside an
/// array, which no Delta writer can store, is refused naming the column (issue 43: both
/// failed with "internal error … delta type Void cannot be rewritten").
#[test]
fn void_columns_are_carried_as_delta_writers_carry_them() {
    use crate::cli::{expect_error, run, stderr};
    for args in [
        &["--target-size", "1GiB"][..],
        &["--hilbert", "id,name", "--target-size", "1GiB"][..],
    ] {
        let fixture = Fixture::copy("void-spark");
        let location = fixture.location();
        let before = rows(&location);
        assert_eq!(before.len(), 240);
        assert!(
            before
                .iter()
                .all(|r| r.contains("x=\"<NULL>\"") && r.contains("n: <NULL>")),
            "kernel's rows show the void column null: {}",
            before[0]
        );
        let version = fixture.next_version();
        let mut full = vec!["optimize", location.as_str()];
        full.extend_from_slice(args);
        let output = run(&full);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(fixture.next_version(), version + 1, "{args:?}: one commit");
        assert_eq!(rows(&location), before, "{args:?}");
        let table = load(&location);
        assert_eq!(table.files.len(), 2, "{args:?}: one file per partition");
        for add in fixture.commit(version).iter().filter_map(|a| a.get("add")) {
            let stats: Value = serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
            assert_eq!(stats["numRecords"], json!(120));
            assert!(stats["nullCount"].get("x").is_none(), "{stats}");
            assert!(stats["nullCount"]["s"].get("n").is_none(), "{stats}");
            assert_eq!(stats["nullCount"]["s"]["k"], json!(0));
            let path = add["path"].as_str().unwrap();
            let bytes = std::fs::read(fixture.path.join(path)).unwrap();
            let reader = deltalake::parquet::file::reader::SerializedFileReader::new(
                bytes::Bytes::from(bytes),
            )
            .unwrap();
            use deltalake::parquet::file::reader::FileReader as _;
            let columns: Vec<String> = reader
                .metadata()
                .file_metadata()
                .schema_descr()
                .columns()
                .iter()
                .map(|c| c.path().string())
                .collect();
            assert_eq!(columns, ["id", "name", "s.k"], "{args:?}");
        }
        let output = run(&[
            "verify",
            &location,
            "--version",
            &version.to_string(),
            "--compare",
            &(version - 1).to_string(),
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let output = run(&["inspect", &location, "--json"]);
        let inspect: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(inspect["unsupported_features"], json!([]));
    }
    // A void column cannot order, skip or select: said as such, the table untouched.
    let fixture = Fixture::copy("void-spark");
    let predicates = fixture.path.join("void-predicates.txt");
    std::fs::write(&predicates, "x = 1\n").unwrap();
    for args in [
        &[
            "optimize",
            "{}",
            "--zorder",
            "id,x",
            "--target-size",
            "1GiB",
        ][..],
        &[
            "optimize",
            "{}",
            "--hilbert",
            "s.n,id",
            "--target-size",
            "1GiB",
        ][..],
        &["report", "{}", "--columns", "x"][..],
        &["report", "{}", "--predicates", predicates.to_str().unwrap()][..],
        &["verify", "{}", "--compare", "0", "--unique", "x"][..],
    ] {
        expect_error(&fixture, args, &["void", "no values"]);
    }
    // A void inside an array: refused by name, the table untouched.
    let commit = fixture.commit(0);
    let mut meta = commit
        .iter()
        .find(|a| a.get("metaData").is_some())
        .unwrap()
        .clone();
    let mut schema: Value =
        serde_json::from_str(meta["metaData"]["schemaString"].as_str().unwrap()).unwrap();
    schema["fields"].as_array_mut().unwrap().push(json!({
        "name": "arr",
        "type": {"type": "array", "elementType": "void", "containsNull": true},
        "nullable": true,
        "metadata": {},
    }));
    meta["metaData"]["schemaString"] = Value::String(schema.to_string());
    fixture.write_commit(fixture.next_version(), &[meta]);
    expect_error(
        &fixture,
        &["optimize", "{}", "--target-size", "1GiB"],
        &["'arr'", "void", "array or map"],
    );
}

/// `materializePartitionColumns` (RFC "Materialize Partition Columns"): every file a run
/// writes holds the partition columns after the data columns, under their physical names,
/// each row the file's partition value: the `add` action's string read by arrow-cast (a
/// parser other than the kernel's the writer uses), null for a null value. Every type a
/// partition column can have, a null partition, column mapping with deletion vectors, and a
/// table whose Spark-written files already hold the columns (`materialized-partitions-spark`,
/// `scripts/make-modern-tables.py`); a second run reads files that hold the columns; the rows
/// stay the same.
#[test]
fn materialized_partition_columns_are_written_into_every_new_file() {
    use deltalake::arrow::array::{Array, StringArray, UInt32Array};
    use deltalake::arrow::compute::{CastOptions, cast_with_options, take};
    for name in [
        "partition-values-all-types",
        "dv-columnmapping-partitioned",
        "materialized-partitions-spark",
    ] {
        let fixture = Fixture::copy(name);
        let location = fixture.location();
        let table = load(&location);
        // The feature enabled: writer version 7 with every feature in effect listed.
        let mut writer_features: Vec<String> = if table.protocol.min_writer_version >= 7 {
            table.protocol.writer_features.clone()
        } else {
            table
                .protocol
                .effective_features()
                .into_iter()
                .filter(|f| f != "columnMapping" || table.protocol.min_writer_version >= 5)
                .collect()
        };
        writer_features.push("materializePartitionColumns".into());
        let mut protocol = json!({
            "minReaderVersion": table.protocol.min_reader_version,
            "minWriterVersion": 7,
            "writerFeatures": writer_features,
        });
        if table.protocol.min_reader_version >= 3 {
            protocol["readerFeatures"] = json!(table.protocol.reader_features);
        }
        fixture.write_commit(fixture.next_version(), &[json!({"protocol": protocol})]);
        assert!(load(&location).protocol.materializes_partition_columns());
        fixture.double_files();
        let before = rows(&location);

        // Physical names and Delta types of the partition columns, from the schema.
        let metadata = fixture
            .commit(0)
            .into_iter()
            .find_map(|a| a.get("metaData").cloned())
            .unwrap();
        let schema: Value =
            serde_json::from_str(metadata["schemaString"].as_str().unwrap()).unwrap();
        let partition_columns: Vec<String> =
            serde_json::from_value(metadata["partitionColumns"].clone()).unwrap();
        let physical: Vec<String> = partition_columns
            .iter()
            .map(|c| {
                let field = schema["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|f| f["name"] == c.as_str())
                    .unwrap();
                field["metadata"]["delta.columnMapping.physicalName"]
                    .as_str()
                    .unwrap_or(c)
                    .to_string()
            })
            .collect();

        let mut checked_files = 0;
        for round in 0..2 {
            let options = if round == 0 {
                OptimizeOptions::default()
            } else {
                // A curve over a data column rewrites the files the first run wrote.
                let data_column = match name {
                    "partition-values-all-types" => "value",
                    "materialized-partitions-spark" => "id",
                    _ => "col1",
                }
                .to_string();
                OptimizeOptions::default().with_plan(
                    PlanOptions::default()
                        .with_rewrite_all(true)
                        .with_clustering(Some(ClusterRequest::new(
                            delta_layout::curve::Curve::ZOrder,
                            vec![data_column],
                        ))),
                )
            };
            let outcome = optimize(&location, &options).unwrap();
            let version = outcome.version.expect("a rewrite");
            assert_eq!(rows(&location), before, "{name}, run {round}");
            for action in fixture.commit(version) {
                let Some(add) = action.get("add") else {
                    continue;
                };
                let path = add["path"].as_str().unwrap();
                let decoded = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
                let bytes = std::fs::read(fixture.path.join(decoded.as_ref())).unwrap();
                let batches: Vec<_> =
                    deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                        bytes::Bytes::from(bytes),
                    )
                    .unwrap()
                    .build()
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                let file_schema = batches[0].schema();
                let names: Vec<&str> = file_schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect();
                // After the data columns, in the table's order.
                assert_eq!(
                    names[names.len() - physical.len()..],
                    physical.iter().map(String::as_str).collect::<Vec<_>>()[..],
                    "{name}: {path}"
                );
                for (column, physical_name) in partition_columns.iter().zip(&physical) {
                    // Keyed by the physical name under column mapping.
                    let values = &add["partitionValues"];
                    let raw = values
                        .get(physical_name.as_str())
                        .or_else(|| values.get(column.as_str()))
                        .and_then(Value::as_str)
                        .filter(|v| !v.is_empty());
                    for batch in &batches {
                        let written = batch.column_by_name(physical_name).unwrap();
                        let text: Arc<dyn Array> = Arc::new(StringArray::from(vec![raw]));
                        let options = CastOptions {
                            safe: false,
                            ..CastOptions::default()
                        };
                        let value =
                            cast_with_options(&text, written.data_type(), &options).unwrap();
                        let repeated = take(
                            value.as_ref(),
                            &UInt32Array::from_value(0, batch.num_rows()),
                            None,
                        )
                        .unwrap();
                        assert_eq!(
                            written.as_ref(),
                            repeated.as_ref(),
                            "{name}: {path}, column {column} = {raw:?}"
                        );
                    }
                }
                checked_files += 1;
            }
        }
        assert!(checked_files >= 2, "{name}: {checked_files} files");
    }
}

/// `collations` (a writer-only feature): a rewrite keeps the rows and the schema, writes UTF-8
/// binary min/max for the collated column (which PROTOCOL.md allows) and no
/// `statsWithCollation`, reads input stats that hold them, and refuses to cluster on the
/// collated column, naming it and its collation, with the table untouched.
#[test]
fn collated_tables_are_rewritten_with_binary_stats_and_not_clustered_on_the_collation() {
    use deltalake::arrow::array::StringArray;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("collated");
    let names = [
        ["apple", "Banana"],
        ["Apple", "cherry"],
        ["banana", "Cherry"],
    ];
    let files = names
        .iter()
        .zip(0i64..)
        .map(|(pair, i)| {
            RawFile::plain(
                &format!("part-{i}.parquet"),
                parquet(vec![
                    (
                        "name",
                        Arc::new(StringArray::from(pair.to_vec())) as ArrayRef,
                    ),
                    ("x", Arc::new(Int64Array::from(vec![i, 10 + i])) as ArrayRef),
                ]),
            )
        })
        .collect();
    raw_table(
        &root,
        json!({"minReaderVersion": 1, "minWriterVersion": 7,
            "writerFeatures": ["collations", "domainMetadata", "appendOnly", "invariants"]}),
        json!([
            {"name": "name", "type": "string", "nullable": true,
             "metadata": {"__COLLATIONS": {"name": "spark.UTF8_LCASE"}}},
            {"name": "x", "type": "long", "nullable": true, "metadata": {}},
        ]),
        &[],
        json!({}),
        vec![json!({"domainMetadata": {"domain": "delta.collations",
            "configuration": "{\"writeVersions\":{\"spark.UTF8_LCASE\":[\"75.1\"]}}",
            "removed": false}})],
        files,
    );
    // Input stats as Spark writes them: binary min/max and the collation's.
    let fixture = Fixture::at(&root);
    let mut actions = fixture.commit(0);
    let mut i = 0;
    for action in &mut actions {
        if let Some(add) = action.get_mut("add") {
            let pair = names[i];
            let (lo, hi) = if pair[0] < pair[1] {
                (pair[0], pair[1])
            } else {
                (pair[1], pair[0])
            };
            add["stats"] = json!(
                json!({"numRecords": 2,
                "minValues": {"name": lo, "x": i}, "maxValues": {"name": hi, "x": 10 + i},
                "nullCount": {"name": 0, "x": 0},
                "statsWithCollation": {"spark.UTF8_LCASE.75.1": {
                    "minValues": {"name": lo.to_lowercase()},
                    "maxValues": {"name": hi.to_lowercase()}}}})
                .to_string()
            );
            i += 1;
        }
    }
    fixture.write_commit(0, &actions);
    let location = fixture.location();
    let before = rows(&location);

    // inspect calls it supported; a curve on the collated column is refused by name.
    let output = crate::cli::run(&["inspect", &location, "--json"]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["feature_support"]["collations"], "supported");
    crate::cli::expect_error(
        &fixture,
        &["optimize", "{}", "--zorder", "name,x"],
        &[
            "--zorder",
            "'name'",
            "is a string collated spark.UTF8_LCASE",
            "cluster on another column",
        ],
    );

    // A curve on the other column: rows, schema and domain kept; binary stats.
    let options =
        OptimizeOptions::default().with_plan(PlanOptions::default().with_clustering(Some(
            ClusterRequest::new(delta_layout::curve::Curve::ZOrder, vec!["x".into()]),
        )));
    let outcome = optimize(&location, &options).unwrap();
    let commit = fixture.commit(outcome.version.unwrap());
    assert_eq!(rows(&location), before);
    assert!(
        commit
            .iter()
            .all(|a| a.get("metaData").is_none() && a.get("domainMetadata").is_none())
    );
    let adds: Vec<Value> = commit
        .iter()
        .filter_map(|a| a.get("add"))
        .map(|a| serde_json::from_str(a["stats"].as_str().unwrap()).unwrap())
        .collect();
    assert!(!adds.is_empty());
    let mut lows = Vec::new();
    for stats in &adds {
        assert!(stats.get("statsWithCollation").is_none(), "{stats}");
        lows.push(stats["minValues"]["name"].as_str().unwrap().to_string());
    }
    // UTF-8 binary order: upper case before lower case.
    lows.sort();
    assert_eq!(lows[0], "Apple", "{adds:?}");
}
