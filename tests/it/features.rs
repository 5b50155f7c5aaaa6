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
