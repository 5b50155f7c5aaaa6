//! Faults found by replaying public bug reports of Delta writers and optimizers: each test
//! builds the table of one report and asserts the right value (rows, stats, paths, errors).

use std::path::Path;
use std::sync::Arc;

use delta_layout::optimize::{OptimizeOptions, rewrite};
use delta_layout::plan::PlanOptions;
use delta_layout::plan::cluster::ClusterRequest;
use delta_layout::progress::NoProgress;
use deltalake::arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, Decimal128Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
};
use deltalake::arrow::datatypes::Int64Type;
use deltalake::parquet::arrow::ArrowWriter;
use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Value, json};

use crate::cli::{expect_error, run as cli, stderr};
use crate::fixture::{Fixture, load, optimize, rows, runtime};

/// One data file of a hand-made table.
pub(crate) struct RawFile {
    /// The path as the log spells it (URI-encoded).
    pub(crate) log_path: String,
    /// The path on disk, relative to the table root.
    pub(crate) disk_path: String,
    pub(crate) bytes: Vec<u8>,
    pub(crate) partition_values: Value,
}

impl RawFile {
    pub(crate) fn plain(name: &str, bytes: Vec<u8>) -> Self {
        Self {
            log_path: name.to_string(),
            disk_path: name.to_string(),
            bytes,
            partition_values: json!({}),
        }
    }
}

/// Writes version 0 of a table at `root`: `protocol`, a `metaData` with `fields` (Delta
/// schema fields) and `partition_columns`, `extra` actions, and an `add` per file (no stats).
pub(crate) fn raw_table(
    root: &Path,
    protocol: Value,
    fields: Value,
    partition_columns: &[&str],
    configuration: Value,
    extra: Vec<Value>,
    files: Vec<RawFile>,
) {
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();
    let schema = json!({"type": "struct", "fields": fields}).to_string();
    let mut lines = vec![
        json!({"commitInfo": {"operation": "CREATE TABLE"}}),
        json!({ "protocol": protocol }),
        json!({"metaData": {
            "id": "00000000-0000-0000-0000-00000000000f",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema,
            "partitionColumns": partition_columns,
            "configuration": configuration,
            "createdTime": 0,
        }}),
    ];
    lines.extend(extra);
    for file in files {
        let disk = root.join(&file.disk_path);
        std::fs::create_dir_all(disk.parent().unwrap()).unwrap();
        std::fs::write(&disk, &file.bytes).unwrap();
        lines.push(json!({"add": {
            "path": file.log_path,
            "partitionValues": file.partition_values,
            "size": file.bytes.len(),
            "modificationTime": 0,
            "dataChange": true,
        }}));
    }
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(
        root.join("_delta_log").join(format!("{:020}.json", 0)),
        text.join("\n"),
    )
    .unwrap();
}

fn protocol_1_2() -> Value {
    json!({"minReaderVersion": 1, "minWriterVersion": 2})
}

pub(crate) fn parquet(columns: Vec<(&str, ArrayRef)>) -> Vec<u8> {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    out
}

/// Reads one column of a data file of the table.
pub(crate) fn column_of(root: &Path, path: &str, column: &str) -> ArrayRef {
    let bytes = std::fs::read(root.join(path)).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    let parts: Vec<ArrayRef> = batches
        .iter()
        .map(|b| b.column_by_name(column).unwrap().clone())
        .collect();
    let refs: Vec<&dyn Array> = parts.iter().map(AsRef::as_ref).collect();
    deltalake::arrow::compute::concat(&refs).unwrap()
}

/// The stats JSON of the only file the latest commit adds.
fn only_stats(location: &str) -> Value {
    let fixture = Fixture::at(Path::new(location));
    let version = *fixture.log_versions().last().unwrap();
    let adds: Vec<Value> = fixture
        .commit(version)
        .into_iter()
        .filter_map(|a| a.get("add").cloned())
        .collect();
    assert_eq!(adds.len(), 1, "one file expected");
    serde_json::from_str(adds[0]["stats"].as_str().unwrap()).unwrap()
}

// ---- 1. values outside the nanosecond range ---------------------------------------------

const JULIAN_DAY_OF_EPOCH: i64 = 2_440_588;

fn days_from_epoch(y: i32, m: u32, d: u32) -> i64 {
    let date = chrono::NaiveDate::from_ymd_opt(y, m, d).unwrap();
    (date - chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()).num_days()
}

/// A Parquet file with one optional INT96 column `ts`, as older Spark and Hive write it:
/// each value is (days from the epoch, nanoseconds of the day).
fn int96_parquet(values: &[Option<(i64, i64)>]) -> Vec<u8> {
    use deltalake::parquet::data_type::{Int96, Int96Type};
    use deltalake::parquet::file::properties::WriterProperties;
    use deltalake::parquet::file::writer::SerializedFileWriter;
    use deltalake::parquet::schema::parser::parse_message_type;
    let schema =
        Arc::new(parse_message_type("message spark_schema { optional int96 ts; }").unwrap());
    let mut out = Vec::new();
    let mut writer =
        SerializedFileWriter::new(&mut out, schema, Arc::new(WriterProperties::new())).unwrap();
    let mut group = writer.next_row_group().unwrap();
    let mut column = group.next_column().unwrap().unwrap();
    let defined: Vec<Int96> = values
        .iter()
        .flatten()
        .map(|&(days, nanos)| {
            let mut v = Int96::new();
            let julian = u32::try_from(days + JULIAN_DAY_OF_EPOCH).unwrap();
            let nanos = u64::try_from(nanos).unwrap();
            v.set_data(
                u32::try_from(nanos & 0xffff_ffff).unwrap(),
                u32::try_from(nanos >> 32).unwrap(),
                julian,
            );
            v
        })
        .collect();
    let levels: Vec<i16> = values.iter().map(|v| i16::from(v.is_some())).collect();
    column
        .typed::<Int96Type>()
        .write_batch(&defined, Some(&levels), None)
        .unwrap();
    column.close().unwrap();
    group.close().unwrap();
    writer.close().unwrap();
    out
}

fn timestamp_table(root: &Path, files: Vec<Vec<u8>>) {
    raw_table(
        root,
        protocol_1_2(),
        json!([{"name": "ts", "type": "timestamp", "nullable": true, "metadata": {}}]),
        &[],
        json!({}),
        Vec::new(),
        files
            .into_iter()
            .enumerate()
            .map(|(i, bytes)| RawFile::plain(&format!("part-{i}.parquet"), bytes))
            .collect(),
    );
}

#[test]
fn int96_timestamps_outside_the_nanosecond_range_keep_their_value() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("int96");
    let y1600 = days_from_epoch(1600, 1, 1);
    let y2300 = days_from_epoch(2300, 1, 1);
    let ordinary = days_from_epoch(2024, 5, 17);
    timestamp_table(
        &root,
        vec![
            int96_parquet(&[Some((y1600, 0)), None, Some((ordinary, 3_723_000_000_000))]),
            int96_parquet(&[Some((y2300, 123_456_000)), Some((ordinary, 0))]),
        ],
    );
    let location = root.display().to_string();
    let expected = [
        "ts=\"1600-01-01T00:00:00Z\";",
        "ts=\"2024-05-17T00:00:00Z\";",
        "ts=\"2024-05-17T01:02:03Z\";",
        "ts=\"2300-01-01T00:00:00.123456Z\";",
        "ts=∅;",
    ];
    // delta-kernel itself decodes INT96 through 64-bit nanoseconds, so before the rewrite it
    // reads the wrapped values; ours reads them exactly.
    let table = load(&location);
    let rt = runtime();
    let reader = {
        let _enter = rt.enter();
        delta_layout::table::read::FileReader::new(&table).unwrap()
    };
    let mut read: Vec<Option<i64>> = Vec::new();
    for file in &table.files {
        let batches =
            std::thread::scope(|s| s.spawn(|| reader.read(file).unwrap()).join().unwrap());
        for batch in batches {
            let ts = batch
                .column(0)
                .as_primitive::<deltalake::arrow::datatypes::TimestampMicrosecondType>();
            read.extend(ts.iter());
        }
    }
    read.sort_unstable();
    assert_eq!(
        read,
        vec![
            None,
            Some(y1600 * 86_400_000_000),
            Some(ordinary * 86_400_000_000),
            Some(ordinary * 86_400_000_000 + 3_723_000_000),
            Some(y2300 * 86_400_000_000 + 123_456),
        ]
    );

    let outcome = optimize(&location, &OptimizeOptions::default()).unwrap();
    assert_eq!(outcome.version, Some(1));
    assert_eq!(rows(&location), expected, "rows after compaction");
    // The written file holds exact microseconds, and the stats bound them.
    let table = load(&location);
    let micros = column_of(&root, &table.files[0].path, "ts");
    let micros = micros.as_primitive::<deltalake::arrow::datatypes::TimestampMicrosecondType>();
    assert!(micros.values().contains(&(y1600 * 86_400_000_000)));
    assert!(
        micros
            .values()
            .contains(&(y2300 * 86_400_000_000 + 123_456))
    );
    let stats = only_stats(&location);
    assert_eq!(stats["minValues"]["ts"], "1600-01-01T00:00:00.000Z");
    assert_eq!(stats["maxValues"]["ts"], "2300-01-01T00:00:00.124Z");
    assert_eq!(stats["nullCount"]["ts"], 1);

    // verify: the correct rewrite holds the same rows ...
    let (v0, v1) = (
        runtime()
            .block_on(delta_layout::table::TableView::load(&location, Some(0)))
            .unwrap(),
        load(&location),
    );
    let verify = |a, b| {
        let rt = runtime();
        let _guard = rt.enter();
        delta_layout::verify::verify(a, b, None).unwrap()
    };
    assert!(verify(&v0, &v1).equal);
    // ... and a rewrite that wrapped the values around 64-bit nanoseconds (what the bug
    // wrote) is seen as different.
    let wrapped: Vec<Option<i64>> = [
        Some((y1600, 0)),
        None,
        Some((ordinary, 3_723_000_000_000)),
        Some((y2300, 123_456_000)),
        Some((ordinary, 0)),
    ]
    .iter()
    .map(|v| v.map(|(d, n)| d.wrapping_mul(86_400_000_000_000).wrapping_add(n) / 1000))
    .collect();
    let bad = parquet(vec![(
        "ts",
        Arc::new(TimestampMicrosecondArray::from(wrapped).with_timezone("UTC")) as ArrayRef,
    )]);
    std::fs::write(root.join("wrapped.parquet"), &bad).unwrap();
    let fixture = Fixture::at(&root);
    fixture.write_commit(
        2,
        &[
            json!({"commitInfo": {"operation": "OPTIMIZE"}}),
            json!({"remove": {"path": table.files[0].raw_path, "dataChange": false}}),
            json!({"add": {"path": "wrapped.parquet", "partitionValues": {}, "size": bad.len(),
                "modificationTime": 0, "dataChange": false}}),
        ],
    );
    let v2 = load(&location);
    let report = verify(&v0, &v2);
    assert!(!report.equal, "verify must see the changed timestamps");
    assert_eq!(report.rows_a, report.rows_b);
}

#[test]
fn timestamp_units_convert_exactly_or_stop_the_run() {
    let dir = tempfile::tempdir().unwrap();
    // Milliseconds in year 1600 and 9999: exact in microseconds.
    let root = dir.path().join("millis");
    let ms = vec![-11_676_096_000_000i64, 253_402_300_799_999];
    timestamp_table(
        &root,
        vec![
            parquet(vec![(
                "ts",
                Arc::new(TimestampMillisecondArray::from(ms.clone()).with_timezone("UTC"))
                    as ArrayRef,
            )]),
            parquet(vec![(
                "ts",
                Arc::new(TimestampMicrosecondArray::from(vec![0i64]).with_timezone("UTC"))
                    as ArrayRef,
            )]),
        ],
    );
    let location = root.display().to_string();
    let before = rows(&location);
    optimize(&location, &OptimizeOptions::default()).unwrap();
    assert_eq!(rows(&location), before);
    let table = load(&location);
    let micros = column_of(&root, &table.files[0].path, "ts");
    let mut values = micros
        .as_primitive::<deltalake::arrow::datatypes::TimestampMicrosecondType>()
        .values()
        .to_vec();
    values.sort_unstable();
    assert_eq!(values, vec![ms[0] * 1000, 0, ms[1] * 1000]);
    // 9999-12-31T23:59:59.999 rounds up past year 9999: no max bound rather than a wrong one.
    let stats = only_stats(&location);
    assert_eq!(stats["minValues"]["ts"], "1600-01-01T00:00:00.000Z");
    assert_eq!(stats["maxValues"]["ts"], "9999-12-31T23:59:59.999Z");

    // Nanoseconds with sub-microsecond digits: a Delta timestamp cannot hold them.
    let root = dir.path().join("nanos");
    timestamp_table(
        &root,
        vec![
            parquet(vec![(
                "ts",
                Arc::new(
                    TimestampNanosecondArray::from(vec![1_000i64, 1_000_001]).with_timezone("UTC"),
                ) as ArrayRef,
            )]),
            parquet(vec![(
                "ts",
                Arc::new(TimestampNanosecondArray::from(vec![2_000i64]).with_timezone("UTC"))
                    as ArrayRef,
            )]),
        ],
    );
    let fixture = Fixture::at(&root);
    let listing = fixture.listing();
    let output = cli(&["optimize", &fixture.location()]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    for needle in ["part-0.parquet", "'ts'", "sub-microsecond"] {
        assert!(message.contains(needle), "{needle} not in {message}");
    }
    assert_eq!(fixture.listing(), listing, "the table is untouched");
}

#[test]
fn far_dates_decimals_and_timestamps_survive_compaction_and_clustering() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("far");
    let ntz = json!({"minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["timestampNtz"], "writerFeatures": ["timestampNtz"]});
    let fields = json!([
        {"name": "d", "type": "date", "nullable": true, "metadata": {}},
        {"name": "t", "type": "timestamp_ntz", "nullable": true, "metadata": {}},
        {"name": "small", "type": "decimal(5,2)", "nullable": true, "metadata": {}},
        {"name": "mid", "type": "decimal(18,6)", "nullable": true, "metadata": {}},
        {"name": "wide", "type": "decimal(38,0)", "nullable": true, "metadata": {}},
        {"name": "id", "type": "long", "nullable": true, "metadata": {}},
    ]);
    let year1 = i32::try_from(days_from_epoch(1, 1, 1)).unwrap();
    let year9999 = i32::try_from(days_from_epoch(9999, 12, 31)).unwrap();
    let max38 = 10i128.pow(38) - 1;
    let file = |i: i64| {
        let n = 50i32;
        let d: Vec<i32> = (0..n)
            .map(|r| {
                if r % 2 == 0 {
                    year1 + r
                } else {
                    year9999 + 1 - r
                }
            })
            .collect();
        // The last microsecond of each day.
        let t: Vec<i64> = d
            .iter()
            .map(|&days| i64::from(days) * 86_400_000_000 + 86_399_999_999)
            .collect();
        let small: Vec<i128> = (0..n)
            .map(|r| {
                if r % 2 == 0 {
                    -99_999
                } else {
                    99_999 - i128::from(r)
                }
            })
            .collect();
        let mid: Vec<i128> = (0..n)
            .map(|r| (i128::from(r) - 25) * 999_999_999_999_999_999 / 25)
            .collect();
        let wide: Vec<i128> = (0..n)
            .map(|r| {
                if r % 3 == 0 {
                    -max38
                } else {
                    max38 - i128::from(r)
                }
            })
            .collect();
        let ids: Vec<i64> = (0..i64::from(n)).map(|r| i * 1000 + r).collect();
        parquet(vec![
            ("d", Arc::new(Date32Array::from(d)) as ArrayRef),
            (
                "t",
                Arc::new(TimestampMicrosecondArray::from(t)) as ArrayRef,
            ),
            (
                "small",
                Arc::new(
                    Decimal128Array::from(small)
                        .with_precision_and_scale(5, 2)
                        .unwrap(),
                ) as ArrayRef,
            ),
            (
                "mid",
                Arc::new(
                    Decimal128Array::from(mid)
                        .with_precision_and_scale(18, 6)
                        .unwrap(),
                ) as ArrayRef,
            ),
            (
                "wide",
                Arc::new(
                    Decimal128Array::from(wide)
                        .with_precision_and_scale(38, 0)
                        .unwrap(),
                ) as ArrayRef,
            ),
            ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
        ])
    };
    raw_table(
        &root,
        ntz,
        fields,
        &[],
        json!({}),
        Vec::new(),
        (0..3)
            .map(|i| RawFile::plain(&format!("part-{i}.parquet"), file(i)))
            .collect(),
    );
    let location = root.display().to_string();
    let before = rows(&location);
    assert!(
        before.iter().any(|r| r.contains("d=\"0001-01-01\"")),
        "{}",
        before[0]
    );
    optimize(&location, &OptimizeOptions::default()).unwrap();
    assert_eq!(rows(&location), before, "compaction");
    let stats = only_stats(&location);
    assert_eq!(stats["minValues"]["d"], "0001-01-01");
    assert_eq!(stats["maxValues"]["d"], "9999-12-31");
    assert_eq!(stats["minValues"]["small"], -999.99);
    // The 38-digit bound is written exactly (JSON numbers have no precision limit).
    let fixture = Fixture::at(&root);
    let text = fixture
        .commit(1)
        .iter()
        .find_map(|a| a.get("add").cloned())
        .unwrap()["stats"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains(&format!("\"wide\":-{max38}")), "{text}");
    assert_eq!(stats["minValues"]["t"], "0001-01-01T23:59:59.999");
    assert!(
        stats["maxValues"].get("t").is_none(),
        "a max past year 9999 after rounding up is left out: {stats}"
    );
    for curve in ["hilbert", "zorder"] {
        let options = OptimizeOptions::default().with_plan(
            PlanOptions::default()
                .with_target_file_bytes(Some(4_000))
                .with_clustering(Some(ClusterRequest::new(
                    if curve == "hilbert" {
                        delta_layout::curve::Curve::Hilbert
                    } else {
                        delta_layout::curve::Curve::ZOrder
                    },
                    vec!["d".into(), "t".into(), "wide".into(), "small".into()],
                ))),
        );
        optimize(&location, &options).unwrap();
        assert_eq!(rows(&location), before, "{curve} clustering");
    }
    // Clustering on the date alone sorts the rows by it, year 1 first.
    let options =
        OptimizeOptions::default().with_plan(PlanOptions::default().with_clustering(Some(
            ClusterRequest::new(delta_layout::curve::Curve::ZOrder, vec!["d".into()]),
        )));
    optimize(&location, &options).unwrap();
    let table = load(&location);
    let d = column_of(&root, &table.files[0].path, "d");
    let d = d.as_primitive::<deltalake::arrow::datatypes::Date32Type>();
    assert!(d.values().windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(d.value(0), year1);
}

// ---- 2. one clustering column is a sort ----------------------------------------------

#[test]
fn one_clustering_column_sorts_every_file() {
    let dir = tempfile::tempdir().unwrap();
    for curve in [
        delta_layout::curve::Curve::ZOrder,
        delta_layout::curve::Curve::Hilbert,
    ] {
        let root = dir.path().join(format!("{curve:?}"));
        // 100,000 distinct values, descending, in 4 files.
        let files = (0..4)
            .map(|f| {
                let ys: Vec<i64> = (0..25_000)
                    .map(|r| 1_000_000_007 - (f * 25_000 + r) * 7919)
                    .collect();
                RawFile::plain(
                    &format!("part-{f}.parquet"),
                    parquet(vec![("y", Arc::new(Int64Array::from(ys)) as ArrayRef)]),
                )
            })
            .collect();
        raw_table(
            &root,
            protocol_1_2(),
            json!([{"name": "y", "type": "long", "nullable": true, "metadata": {}}]),
            &[],
            json!({}),
            Vec::new(),
            files,
        );
        let location = root.display().to_string();
        let before = rows(&location);
        let options = OptimizeOptions::default().with_plan(
            PlanOptions::default()
                .with_target_file_bytes(Some(100_000))
                .with_clustering(Some(ClusterRequest::new(curve, vec!["y".into()]))),
        );
        optimize(&location, &options).unwrap();
        assert_eq!(rows(&location), before);
        let table = load(&location);
        assert!(table.files.len() >= 3, "{} files", table.files.len());
        let mut ranges = Vec::new();
        for file in &table.files {
            let y = column_of(&root, &file.path, "y");
            let y = y.as_primitive::<Int64Type>().values().to_vec();
            let unsorted = y.windows(2).filter(|w| w[0] > w[1]).count();
            assert_eq!(
                unsorted, 0,
                "{curve:?}: {} has rows out of order",
                file.path
            );
            ranges.push((y[0], y[y.len() - 1]));
        }
        ranges.sort_unstable();
        assert!(ranges.windows(2).all(|w| w[0].1 < w[1].0), "{ranges:?}");
    }
}

// ---- 3. column names with dots -----------------------------------------------------

#[test]
fn back_quoted_names_with_dots_are_one_column() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("dotted");
    let files = (0..3)
        .map(|f| {
            RawFile::plain(
                &format!("part-{f}.parquet"),
                parquet(vec![
                    (
                        "user.info",
                        Arc::new(Int64Array::from(vec![f, 10 - f, 20 + f])) as ArrayRef,
                    ),
                    (
                        "id",
                        Arc::new(Int64Array::from(vec![f * 3, f * 3 + 1, f * 3 + 2])) as ArrayRef,
                    ),
                ]),
            )
        })
        .collect();
    raw_table(
        &root,
        protocol_1_2(),
        json!([
            {"name": "user.info", "type": "long", "nullable": true, "metadata": {}},
            {"name": "id", "type": "long", "nullable": true, "metadata": {}},
        ]),
        &[],
        json!({}),
        Vec::new(),
        files,
    );
    let location = root.display().to_string();
    let before = rows(&location);
    // `user.info` unquoted is field `info` of a struct `user`, which does not exist.
    let output = cli(&["optimize", &location, "--zorder", "user.info,id"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("does not exist"),
        "{}",
        stderr(&output)
    );

    let output = cli(&[
        "optimize",
        &location,
        "--zorder",
        "`user.info`,id",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["columns"], json!(["`user.info`", "id"]));
    assert!(
        json["report"]["columns"].get("`user.info`").is_some(),
        "{}",
        json["report"]
    );
    assert_eq!(rows(&location), before);

    let output = cli(&["report", &location, "--columns", "`user.info`", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let name = json["columns"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    assert_eq!(name, "`user.info`");
    // The printed name pastes back.
    let output = cli(&["report", &location, "--columns", &name, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = cli(&[
        "verify",
        &location,
        "--compare",
        "0",
        "--unique",
        "`user.info`",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let predicates = dir.path().join("predicates.txt");
    std::fs::write(&predicates, "`user.info` > 5\n").unwrap();
    let output = cli(&[
        "report",
        &location,
        "--predicates",
        predicates.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

// ---- 4. the partition directory keeps its spelling -----------------------------------

#[test]
fn new_files_go_to_the_directory_the_partition_uses() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("dirs");
    let value = "2024-10-09 19:00:00";
    // delta-rs escapes the space as %20 in the directory name; the log URI-encodes the %.
    let on_disk = "dayhour=2024-10-09%2019%3A00%3A00";
    let in_log = "dayhour=2024-10-09%252019%253A00%253A00";
    let mut files: Vec<RawFile> = (0..2)
        .map(|i| RawFile {
            log_path: format!("{in_log}/part-{i}.parquet"),
            disk_path: format!("{on_disk}/part-{i}.parquet"),
            bytes: parquet(vec![(
                "x",
                Arc::new(Int64Array::from(vec![i, i + 10])) as ArrayRef,
            )]),
            partition_values: json!({"dayhour": value}),
        })
        .collect();
    // A second partition whose files disagree on a directory: the Hive-style name.
    for (i, d) in ["a", "b"].iter().enumerate() {
        files.push(RawFile {
            log_path: format!("{d}/part-{i}.parquet"),
            disk_path: format!("{d}/part-{i}.parquet"),
            bytes: parquet(vec![(
                "x",
                Arc::new(Int64Array::from(vec![100])) as ArrayRef,
            )]),
            partition_values: json!({"dayhour": "other"}),
        });
    }
    raw_table(
        &root,
        protocol_1_2(),
        json!([
            {"name": "x", "type": "long", "nullable": true, "metadata": {}},
            {"name": "dayhour", "type": "string", "nullable": true, "metadata": {}},
        ]),
        &["dayhour"],
        json!({}),
        Vec::new(),
        files,
    );
    let location = root.display().to_string();
    let before = rows(&location);
    optimize(&location, &OptimizeOptions::default()).unwrap();
    assert_eq!(rows(&location), before);
    let table = load(&location);
    assert_eq!(table.files.len(), 2);
    for file in &table.files {
        let expected_dir = if file.partition_values[0].as_deref() == Some(value) {
            on_disk
        } else {
            "dayhour=other"
        };
        assert!(
            file.path.starts_with(&format!("{expected_dir}/part-")),
            "{} not in {expected_dir}",
            file.path
        );
        assert!(root.join(&file.path).is_file(), "{} is on disk", file.path);
    }
}

// ---- 5. clustering that was removed ---------------------------------------------------

fn clustered_table(root: &Path, protocol: Value, configuration: Value, domain: Option<Value>) {
    let files = (0..4)
        .map(|i| {
            RawFile::plain(
                &format!("part-{i}.parquet"),
                parquet(vec![(
                    "id",
                    Arc::new(Int64Array::from(vec![i, i + 4])) as ArrayRef,
                )]),
            )
        })
        .collect();
    raw_table(
        root,
        protocol,
        json!([{"name": "id", "type": "long", "nullable": true, "metadata": {}}]),
        &[],
        configuration,
        domain.into_iter().collect(),
        files,
    );
}

#[test]
fn clustering_removed_or_empty_means_not_clustered() {
    let dir = tempfile::tempdir().unwrap();
    let clustering_protocol = json!({"minReaderVersion": 1, "minWriterVersion": 7,
        "writerFeatures": ["domainMetadata", "clustering"]});
    let domain = |configuration: &str, removed: bool| {
        json!({"domainMetadata": {"domain": "delta.clustering",
            "configuration": configuration, "removed": removed}})
    };
    let cases = [
        (
            "cluster-by-none",
            Some(r#"{"clusteringColumns":[]}"#),
            false,
        ),
        (
            "domain-removed",
            Some(r#"{"clusteringColumns":[["id"]]}"#),
            true,
        ),
    ];
    for (name, last, removed) in cases {
        let root = dir.path().join(name);
        clustered_table(
            &root,
            clustering_protocol.clone(),
            json!({}),
            Some(domain(r#"{"clusteringColumns":[["id"]]}"#, false)),
        );
        let fixture = Fixture::at(&root);
        fixture.write_commit(
            1,
            &[
                json!({"commitInfo": {"operation": "CLUSTER BY"}}),
                domain(last.unwrap(), removed),
            ],
        );
        check_compacts_once(&fixture, name);
    }
    let root = dir.path().join("liquid-empty");
    clustered_table(
        &root,
        json!({"minReaderVersion": 1, "minWriterVersion": 7,
            "writerFeatures": ["domainMetadata", "liquid"]}),
        json!({"delta.liquid.clusteringColumns": ""}),
        None,
    );
    check_compacts_once(&Fixture::at(&root), "liquid-empty");
}

fn check_compacts_once(fixture: &Fixture, name: &str) {
    let location = fixture.location();
    let before = rows(&location);
    let output = cli(&["optimize", &location, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["files_removed"], 4, "{name}");
    assert_eq!(json["files_added"], 1, "{name}");
    assert_eq!(json["curve"], Value::Null, "{name}");
    assert_eq!(rows(&location), before, "{name}");
    let output = cli(&["report", &location]);
    assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
    let versions = fixture.log_versions();
    let output = cli(&["optimize", &location, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
    assert_eq!(
        fixture.log_versions(),
        versions,
        "{name}: a second run commits nothing"
    );
}

// ---- 6. values that do not fit the table's type --------------------------------------

#[test]
fn values_that_do_not_fit_the_column_type_stop_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let fields = json!([{"name": "k", "type": "integer", "nullable": true, "metadata": {}}]);
    let good = parquet(vec![(
        "k",
        Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef,
    )]);
    let stored: [(&str, ArrayRef, &str); 2] = [
        (
            "wide",
            Arc::new(Int64Array::from(vec![(1i64 << 40) + 426, 7])),
            "Int64",
        ),
        (
            "text",
            Arc::new(StringArray::from(vec!["str426", "7"])),
            "Utf8",
        ),
    ];
    for (name, array, type_name) in stored {
        let root = dir.path().join(name);
        raw_table(
            &root,
            protocol_1_2(),
            fields.clone(),
            &[],
            json!({}),
            Vec::new(),
            vec![
                RawFile::plain("good.parquet", good.clone()),
                RawFile::plain("bad.parquet", parquet(vec![("k", array)])),
            ],
        );
        let fixture = Fixture::at(&root);
        let listing = fixture.listing();
        let output = cli(&["optimize", &fixture.location()]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{name}: {message}");
        for needle in ["bad.parquet", "'k'", type_name, "Int32"] {
            assert!(
                message.contains(needle),
                "{name}: {needle} not in {message}"
            );
        }
        assert_eq!(fixture.listing(), listing, "{name}: the table is untouched");
    }
    // A widening the protocol allows is exact: int stored where the table says long.
    let root = dir.path().join("widening");
    raw_table(
        &root,
        protocol_1_2(),
        json!([{"name": "k", "type": "long", "nullable": true, "metadata": {}}]),
        &[],
        json!({}),
        Vec::new(),
        vec![
            RawFile::plain("a.parquet", good.clone()),
            RawFile::plain(
                "b.parquet",
                parquet(vec![(
                    "k",
                    Arc::new(Int64Array::from(vec![1i64 << 40])) as ArrayRef,
                )]),
            ),
        ],
    );
    let location = root.display().to_string();
    let before = rows(&location);
    optimize(&location, &OptimizeOptions::default()).unwrap();
    assert_eq!(rows(&location), before);

    // A partition value that is not a value of its column's type names its file and column:
    // not a long; and two that only delta-kernel's parser refuses (a decimal with fewer
    // digits than its scale, a timestamp without seconds), which stopped the load with a
    // message naming only the log file.
    for (case, (data_type, good, bad)) in [
        ("long", "1", "abc"),
        ("decimal(5,2)", "1.25", "1.5"),
        ("timestamp", "2021-09-08 11:11:00", "2021-09-08 11:11"),
    ]
    .into_iter()
    .enumerate()
    {
        let root = dir.path().join(format!("partition-{case}"));
        raw_table(
            &root,
            protocol_1_2(),
            json!([
                {"name": "x", "type": "long", "nullable": true, "metadata": {}},
                {"name": "p", "type": data_type, "nullable": true, "metadata": {}},
            ]),
            &["p"],
            json!({}),
            Vec::new(),
            [good, bad]
                .iter()
                .zip(["good", "bad"])
                .map(|(v, dir)| RawFile {
                    log_path: format!("{dir}/f.parquet"),
                    disk_path: format!("{dir}/f.parquet"),
                    bytes: parquet(vec![("x", Arc::new(Int64Array::from(vec![1])) as ArrayRef)]),
                    partition_values: json!({ "p": v }),
                })
                .collect(),
        );
        let fixture = Fixture::at(&root);
        let listing = fixture.listing();
        let output = cli(&["optimize", &fixture.location()]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{data_type}: {message}");
        for needle in ["bad/f.parquet", &format!("'{bad}'"), "'p'", data_type] {
            assert!(
                message.contains(needle),
                "{data_type}: {needle} not in {message}"
            );
        }
        assert_eq!(fixture.listing(), listing, "{data_type}");
    }
}

// ---- 7. empty-string and null partition values ---------------------------------------

#[test]
fn empty_string_and_null_partitions_are_never_merged() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("empty-null");
    let mut files = Vec::new();
    for (i, value) in (0i64..).zip([json!(""), json!(null), json!(""), json!(null), json!("x")]) {
        files.push(RawFile {
            log_path: format!("p=__HIVE_DEFAULT_PARTITION__/part-{i}.parquet"),
            disk_path: format!("p=__HIVE_DEFAULT_PARTITION__/part-{i}.parquet"),
            bytes: parquet(vec![(
                "x",
                Arc::new(Int64Array::from(vec![i, i + 10])) as ArrayRef,
            )]),
            partition_values: json!({ "p": value }),
        });
    }
    raw_table(
        &root,
        protocol_1_2(),
        json!([
            {"name": "x", "type": "long", "nullable": true, "metadata": {}},
            {"name": "p", "type": "string", "nullable": true, "metadata": {}},
        ]),
        &["p"],
        json!({}),
        Vec::new(),
        files,
    );
    let fixture = Fixture::at(&root);
    let location = fixture.location();
    let before = rows(&location);
    let outcome = optimize(&location, &OptimizeOptions::default()).unwrap();
    assert_eq!(outcome.files_removed, 4, "the single 'x' file stays");
    assert_eq!(outcome.files_added, 2);
    assert_eq!(rows(&location), before);
    // Each new add repeats the spelling of its inputs, and holds only their rows.
    let adds: Vec<Value> = fixture
        .commit(1)
        .into_iter()
        .filter_map(|a| a.get("add").cloned())
        .collect();
    let mut spellings: Vec<String> = adds
        .iter()
        .map(|a| a["partitionValues"]["p"].to_string())
        .collect();
    spellings.sort();
    assert_eq!(spellings, ["\"\"", "null"]);
    for add in &adds {
        let x = column_of(&root, &percent_decode(add["path"].as_str().unwrap()), "x");
        let mut x = x.as_primitive::<Int64Type>().values().to_vec();
        x.sort_unstable();
        let expected = if add["partitionValues"]["p"] == json!("") {
            vec![0, 2, 10, 12]
        } else {
            vec![1, 3, 11, 13]
        };
        assert_eq!(x, expected, "{add}");
    }
}

fn percent_decode(path: &str) -> String {
    percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .unwrap()
        .into_owned()
}

// ---- 8. a busy table ------------------------------------------------------------------

#[test]
fn a_run_commits_after_hundreds_of_concurrent_appends() {
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
    let before = rows(&location);
    // 250 appends landed while the run rewrote (more than the old cap of 100 versions).
    for v in 1..=250 {
        fixture.write_commit(
            read_version + v,
            &[
                json!({"commitInfo": {"operation": "WRITE"}}),
                json!({"txn": {"appId": "app", "version": v}}),
            ],
        );
    }
    // And more keep landing while it commits: 20 a second, the busy tables of the report
    // (15 to 20 a second from 4 to 6 writers).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let log = fixture.path.join("_delta_log");
        std::thread::spawn(move || {
            let mut next = read_version + 251;
            let mut landed = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && landed < 2_000 {
                let path = log.join(format!("{next:020}.json"));
                if let Ok(mut f) = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
                {
                    use std::io::Write as _;
                    f.write_all(b"{\"commitInfo\":{\"operation\":\"WRITE\"}}")
                        .unwrap();
                    landed += 1;
                }
                next += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            landed
        })
    };
    let first = fixture
        .path
        .join(format!("_delta_log/{:020}.json", read_version + 251));
    while !first.exists() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let outcome = rt.block_on(rewritten.commit());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let landed = writer.join().unwrap();
    let outcome = outcome.unwrap();
    let version = outcome.version.unwrap();
    assert!(version > read_version + 250, "committed at {version}");
    assert!(landed > 0);
    assert_eq!(rows(&location), before, "no row lost or duplicated");
    let commit = fixture.commit(version);
    assert!(
        commit
            .iter()
            .any(|a| a["commitInfo"]["operation"] == "OPTIMIZE")
    );
    // The run id names the files it wrote and is recorded in commitInfo.
    let info = commit.iter().find_map(|a| a.get("commitInfo")).unwrap();
    let run_id = info["delta-layout.runId"].as_str().unwrap();
    assert_eq!(run_id.len(), 16);
    for add in commit.iter().filter_map(|a| a.get("add")) {
        assert!(add["path"].as_str().unwrap().contains(run_id), "{add}");
    }
}

// ---- 10. unclear messages --------------------------------------------------------------

#[test]
fn negative_numbers_get_a_range_not_a_parse_error() {
    let fixture = Fixture::copy("partitioned-string-null");
    expect_error(
        &fixture,
        &["optimize", "{}", "--target-size", "-1"],
        &["--target-size", "'-1'"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--threads", "-1"],
        &["--threads", "from 0"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--max-deleted-ratio", "-0.5"],
        &["--max-deleted-ratio", "between 0 and 1"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--memory-limit", "-5"],
        &["--memory-limit"],
    );
    expect_error(
        &fixture,
        &["report", "{}", "--selectivity", "-0.1"],
        &["--selectivity"],
    );
}

#[test]
fn damaged_log_files_are_named() {
    // A commit that is a directory: inside the log, and as the next version.
    let fixture = Fixture::copy("stats-columns-vary");
    let commit = fixture.path.join("_delta_log/00000000000000000002.json");
    std::fs::remove_file(&commit).unwrap();
    std::fs::create_dir(&commit).unwrap();
    expect_error(
        &fixture,
        &["inspect", "{}"],
        &["_delta_log/00000000000000000002.json", "is a directory"],
    );
    let fixture = Fixture::copy("stats-columns-vary");
    let next = fixture.next_version();
    std::fs::create_dir(fixture.path.join(format!("_delta_log/{next:020}.json"))).unwrap();
    expect_error(
        &fixture,
        &["optimize", "{}"],
        &[&format!("_delta_log/{next:020}.json"), "is a directory"],
    );
    // An invalid schemaString.
    let fixture = Fixture::copy("partitioned-string-null");
    let mut actions = fixture.commit(0);
    for action in &mut actions {
        if let Some(meta) = action.get_mut("metaData") {
            meta["schemaString"] =
                json!("{\"type\":\"struct\",\"fields\":[{\"name\":\"x\",\"type\":\"nope\"");
        }
    }
    fixture.write_commit(0, &actions);
    expect_error(
        &fixture,
        &["optimize", "{}"],
        &["_delta_log/00000000000000000000.json", "schemaString"],
    );
    // A geospatial column (Delta 4's geometry and geography types, nested here), which the
    // kernel cannot parse: named, with its type, by `inspect` and `optimize` alike.
    for command in ["inspect", "optimize"] {
        let fixture = Fixture::copy("partitioned-string-null");
        let mut actions = fixture.commit(0);
        for action in &mut actions {
            if let Some(meta) = action.get_mut("metaData") {
                let mut schema: Value =
                    serde_json::from_str(meta["schemaString"].as_str().unwrap()).unwrap();
                schema["fields"].as_array_mut().unwrap().push(json!({
                    "name": "place", "nullable": true, "metadata": {},
                    "type": {"type": "struct", "fields": [{"name": "area", "nullable": true,
                        "metadata": {}, "type": "geography(OGC:CRS84, spherical)"}]}
                }));
                meta["schemaString"] = json!(schema.to_string());
            }
        }
        fixture.write_commit(0, &actions);
        expect_error(
            &fixture,
            &[command, "{}"],
            &[
                "_delta_log/00000000000000000000.json",
                "column 'place.area' of type 'geography(OGC:CRS84, spherical)'",
                "geospatial types",
                "cannot be rewritten",
            ],
        );
    }
    // A corrupt checkpoint.
    let fixture = Fixture::copy("basic-with-checkpoint");
    let checkpoint = std::fs::read_dir(fixture.path.join("_delta_log"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.contains(".checkpoint.") && !n.starts_with('.'))
        .unwrap();
    std::fs::write(
        fixture.path.join("_delta_log").join(&checkpoint),
        b"garbage",
    )
    .unwrap();
    expect_error(
        &fixture,
        &["inspect", "{}"],
        &[checkpoint.as_str(), "Parquet"],
    );
}

#[test]
fn leftover_spill_directories_of_dead_runs_are_removed() {
    let fixture = Fixture::copy("zorder-optimized");
    let spill = tempfile::tempdir().unwrap();
    let dead = spill.path().join(format!(
        "{}{}-abcdef",
        delta_layout::rewrite::leftovers::SPILL_PREFIX,
        u32::MAX - 7
    ));
    std::fs::create_dir(&dead).unwrap();
    std::fs::write(dead.join("0.arrow"), vec![0u8; 1024]).unwrap();
    let staging = fixture.path.join("_delta_log/00000000000000000099.json#1");
    std::fs::write(&staging, b"{}").unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    std::fs::File::options()
        .write(true)
        .open(&staging)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let table = load(&fixture.location());
    let column = table.data_leaf_columns()[0].display_name();
    let options = OptimizeOptions::default()
        .with_spill_directory(Some(spill.path().to_path_buf()))
        .with_memory_limit(Some(1))
        .with_plan(
            PlanOptions::default().with_clustering(Some(ClusterRequest::new(
                delta_layout::curve::Curve::Hilbert,
                vec![column],
            ))),
        );
    let before = rows(&fixture.location());
    optimize(&fixture.location(), &options).unwrap();
    assert_eq!(rows(&fixture.location()), before);
    assert!(!dead.exists(), "the dead run's spill directory is gone");
    assert!(!staging.exists(), "the stale commit staging file is gone");
    assert_eq!(
        std::fs::read_dir(spill.path()).unwrap().count(),
        0,
        "this run's own spill directory was removed too"
    );
}

/// Writes `path` with `bytes`, last modified `age_secs` ago.
fn aged_file(path: &Path, bytes: &[u8], age_secs: u64) {
    std::fs::write(path, bytes).unwrap();
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age_secs);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

/// Stale (two hours old) and fresh commit and upload staging files in `root`, as a kill -9
/// leaves them: (stale paths relative to the root, fresh paths).
fn staging_files(root: &Path) -> (Vec<String>, Vec<std::path::PathBuf>) {
    let upload = |n: u32| format!("part-00000-0123456789abcdef-0-{n:04}-c000.zstd.parquet#1");
    let stale = vec![
        "_delta_log/00000000000000000099.json#1".to_string(),
        upload(1),
    ];
    for path in &stale {
        aged_file(&root.join(path), b"{}", 7200);
    }
    let fresh = vec![
        root.join("_delta_log/00000000000000000099.json#2"),
        root.join(upload(2)),
    ];
    for path in &fresh {
        aged_file(path, b"{}", 0);
    }
    (stale, fresh)
}

#[test]
fn vacuum_lists_and_removes_stale_staging_files() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    let location = fixture.location();
    let (stale, fresh) = staging_files(&fixture.path);
    let versions = fixture.log_versions();
    // A dry run lists the stale ones (the table's retention keeps every data file) and
    // deletes nothing.
    let output = cli(&["vacuum", &location, "--dry-run", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let listed: Vec<&str> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    let mut expected: Vec<&str> = stale.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(listed, expected);
    assert_eq!(report["bytes"], 4);
    assert!(stale.iter().all(|p| fixture.path.join(p).exists()));
    let output = cli(&["vacuum", &location]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).starts_with("deleted 2 files (4 B)"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(stale.iter().all(|p| !fixture.path.join(p).exists()));
    // A staging file younger than an hour may be a live run's: kept.
    assert!(fresh.iter().all(|p| p.exists()));
    assert_eq!(fixture.log_versions(), versions);
}

#[test]
fn a_run_with_nothing_to_do_removes_stale_staging_files() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    let location = fixture.location();
    let first = cli(&[
        "optimize",
        &location,
        "--target-size",
        "1MiB",
        "--no-report",
    ]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let versions = fixture.log_versions();
    let before = rows(&location);
    let (stale, fresh) = staging_files(&fixture.path);
    // A dry run leaves them.
    let dry = cli(&["optimize", &location, "--target-size", "1MiB", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    assert!(stale.iter().all(|p| fixture.path.join(p).exists()));
    let output = cli(&["optimize", &location, "--target-size", "1MiB", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["files_added"], 0, "{json}");
    assert_eq!(fixture.log_versions(), versions, "nothing committed");
    assert!(stale.iter().all(|p| !fixture.path.join(p).exists()));
    assert!(fresh.iter().all(|p| p.exists()));
    assert_eq!(rows(&location), before);
}

/// A table whose log is `commits` (each a list of actions, version 0 first), written by hand
/// in `dir/name`; its location.
fn hand_written_log(dir: &Path, name: &str, commits: &[Vec<Value>]) -> String {
    let log = dir.join(name).join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    for (version, actions) in commits.iter().enumerate() {
        let lines: Vec<String> = actions.iter().map(Value::to_string).collect();
        std::fs::write(log.join(format!("{version:020}.json")), lines.join("\n")).unwrap();
    }
    dir.join(name).display().to_string()
}

fn long_column_metadata() -> Value {
    json!({"metaData": {
        "id": "7", "format": {"provider": "parquet", "options": {}},
        "schemaString": json!({"type": "struct", "fields": [
            {"name": "x", "type": "long", "nullable": true, "metadata": {}}
        ]}).to_string(),
        "partitionColumns": [], "configuration": {}, "createdTime": 1
    }})
}

/// Runs `command` on `location` for every command given and expects exit code 2, one line
/// holding every needle, and the table's files unchanged.
fn expect_refused(location: &str, commands: &[&str], needles: &[&str]) {
    let listing = |root: &str| {
        let mut names: Vec<String> = std::fs::read_dir(Path::new(root).join("_delta_log"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    let before = listing(location);
    for command in commands {
        let output = cli(&[command, location]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{command}: {message}");
        assert_eq!(message.trim().lines().count(), 1, "{message}");
        for needle in needles {
            assert!(
                message.contains(needle),
                "{command}: '{needle}' not in {message}"
            );
        }
        assert!(!message.contains("internal error"), "{message}");
        assert_eq!(listing(location), before);
    }
}

/// Delta 4's geospatial types on a table Spark 4.3 wrote (`testdata/geospatial-spark`, Parquet
/// GEOMETRY and GEOGRAPHY columns, feature `geospatial`): `inspect`, `optimize` and `vacuum`
/// refuse it alike, exit 2, naming the log file, the column and its type as Spark spells it,
/// and leave every file as it was.
#[test]
fn a_spark_written_geospatial_table_is_refused_naming_its_column() {
    let fixture = Fixture::copy("geospatial-spark");
    let location = fixture.location();
    let files = fixture.listing();
    expect_refused(
        &location,
        &["inspect", "optimize", "vacuum"],
        &[
            "_delta_log/00000000000000000000.json",
            "column 'shape' of type 'geometry(SRID:0)'",
            "geospatial types",
            "cannot be rewritten",
        ],
    );
    assert_eq!(fixture.listing(), files);
}

#[test]
fn kernel_errors_name_the_table_and_the_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let meta = long_column_metadata();
    // Reader features at reader version 2: the kernel's "Reader features must not be
    // present when minimum reader version != 3", with neither table nor file.
    let features_at_2 = hand_written_log(
        dir.path(),
        "features-at-2",
        &[vec![
            json!({"protocol": {"minReaderVersion": 2, "minWriterVersion": 5,
                "readerFeatures": ["columnMapping"], "writerFeatures": ["columnMapping"]}}),
            meta.clone(),
        ]],
    );
    expect_refused(
        &features_at_2,
        &["inspect", "optimize", "report"],
        &[
            &format!("table '{features_at_2}'"),
            "log file '_delta_log/00000000000000000000.json' line 1 holds a protocol that lists readerFeatures at minReaderVersion 2, where they need version 3",
        ],
    );
    // A metaData without its schemaString: the kernel's "unmasked nulls ... schemaString".
    let mut no_schema = meta.clone();
    no_schema["metaData"]
        .as_object_mut()
        .unwrap()
        .remove("schemaString");
    let protocol = json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}});
    let without_schema = hand_written_log(
        dir.path(),
        "no-schema",
        &[vec![protocol.clone(), meta.clone()], vec![no_schema]],
    );
    expect_refused(
        &without_schema,
        &["inspect", "optimize"],
        &[
            &format!("table '{without_schema}'"),
            "log file '_delta_log/00000000000000000001.json' line 1 holds a metaData without a schemaString",
        ],
    );
    // What only the kernel finds wrong (reader version 3 without its feature list) names the
    // newest log file of the version loaded, and the kernel's words.
    let kernel_only = hand_written_log(
        dir.path(),
        "kernel-only",
        &[
            vec![protocol, meta.clone()],
            vec![json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7}})],
        ],
    );
    expect_refused(
        &kernel_only,
        &["inspect", "optimize"],
        &[
            &format!("table '{kernel_only}'"),
            "log file '_delta_log/00000000000000000001.json' is the newest log file of the latest version",
            "Reader features must be present when minimum reader version = 3",
        ],
    );
}

#[test]
fn catalog_managed_tables_are_refused_before_the_kernel_loads_them() {
    let dir = tempfile::tempdir().unwrap();
    for feature in ["catalogManaged", "catalogOwned-preview"] {
        let location = hand_written_log(
            dir.path(),
            feature,
            &[
                vec![
                    json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
                    long_column_metadata(),
                ],
                vec![
                    json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                    "readerFeatures": [feature],
                    "writerFeatures": [feature, "inCommitTimestamp"]}}),
                ],
            ],
        );
        // The tool's refusal, citing the protocol's rule, and never the kernel's "Max
        // catalog version is required".
        expect_refused(
            &location,
            &["optimize", "inspect", "vacuum"],
            &[
                &format!(
                    "table '{location}' uses table features that delta-layout does not support: {feature} ("
                ),
                "PROTOCOL.md (Catalog-managed tables) lets no writer commit, OPTIMIZE included, without the catalog's permission",
                "the table was not changed",
            ],
        );
        let output = cli(&["optimize", &location]);
        assert!(!stderr(&output).contains("Max catalog version"));
    }
}

// ---- found by a hostile review ------------------------------------------------------------

#[test]
fn a_column_stored_in_another_case_keeps_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("case");
    raw_table(
        &root,
        protocol_1_2(),
        json!([{"name": "x", "type": "long", "nullable": true, "metadata": {}}]),
        &[],
        json!({}),
        Vec::new(),
        vec![
            RawFile::plain(
                "good.parquet",
                parquet(vec![("x", Arc::new(Int64Array::from(vec![1])) as ArrayRef)]),
            ),
            RawFile::plain(
                "upper.parquet",
                parquet(vec![("X", Arc::new(Int64Array::from(vec![7])) as ArrayRef)]),
            ),
        ],
    );
    let location = root.display().to_string();
    optimize(&location, &OptimizeOptions::default()).unwrap();
    let table = load(&location);
    let x = column_of(&root, &table.files[0].path, "x");
    let mut x: Vec<Option<i64>> = x.as_primitive::<Int64Type>().iter().collect();
    x.sort_unstable();
    assert_eq!(
        x,
        vec![Some(1), Some(7)],
        "the value stored under 'X' is kept"
    );

    // Two columns that differ from `ab` only in case: which one holds it cannot be told.
    let root = dir.path().join("ambiguous");
    raw_table(
        &root,
        protocol_1_2(),
        json!([{"name": "ab", "type": "long", "nullable": true, "metadata": {}}]),
        &[],
        json!({}),
        Vec::new(),
        vec![
            RawFile::plain(
                "a.parquet",
                parquet(vec![(
                    "ab",
                    Arc::new(Int64Array::from(vec![1])) as ArrayRef,
                )]),
            ),
            RawFile::plain(
                "b.parquet",
                parquet(vec![
                    ("AB", Arc::new(Int64Array::from(vec![7])) as ArrayRef),
                    ("Ab", Arc::new(Int64Array::from(vec![8])) as ArrayRef),
                ]),
            ),
        ],
    );
    let fixture = Fixture::at(&root);
    let listing = fixture.listing();
    let output = cli(&["optimize", &fixture.location()]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(
        message.contains("b.parquet") && message.contains("ignoring case"),
        "{message}"
    );
    assert_eq!(fixture.listing(), listing);
}

#[test]
fn nested_conversion_errors_name_the_nested_column() {
    use deltalake::arrow::array::StructArray;
    use deltalake::arrow::datatypes::{DataType, Field};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("nested");
    let good = StructArray::from(vec![(
        Arc::new(Field::new("a", DataType::Int32, true)),
        Arc::new(Int32Array::from(vec![1])) as ArrayRef,
    )]);
    let bad = StructArray::from(vec![(
        Arc::new(Field::new("a", DataType::Int64, true)),
        Arc::new(Int64Array::from(vec![1i64 << 40])) as ArrayRef,
    )]);
    raw_table(
        &root,
        protocol_1_2(),
        json!([{"name": "s", "type": {"type": "struct", "fields": [
            {"name": "a", "type": "integer", "nullable": true, "metadata": {}}]},
            "nullable": true, "metadata": {}}]),
        &[],
        json!({}),
        Vec::new(),
        vec![
            RawFile::plain(
                "good.parquet",
                parquet(vec![("s", Arc::new(good) as ArrayRef)]),
            ),
            RawFile::plain(
                "bad.parquet",
                parquet(vec![("s", Arc::new(bad) as ArrayRef)]),
            ),
        ],
    );
    let fixture = Fixture::at(&root);
    let listing = fixture.listing();
    let output = cli(&["optimize", &fixture.location()]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("column 's.a'"), "{message}");
    assert!(message.contains("bad.parquet"), "{message}");
    assert_eq!(fixture.listing(), listing);
}

#[test]
fn clustering_metadata_that_names_no_column_is_a_damaged_log() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("nope");
    clustered_table(
        &root,
        json!({"minReaderVersion": 1, "minWriterVersion": 7,
            "writerFeatures": ["domainMetadata", "clustering"]}),
        json!({}),
        Some(json!({"domainMetadata": {"domain": "delta.clustering",
            "configuration": r#"{"clusteringColumns":[["nope"]]}"#, "removed": false}})),
    );
    let output = cli(&["optimize", &root.display().to_string()]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(!message.contains("internal error"), "{message}");
    assert!(
        message.contains("delta.clustering") && message.contains("nope"),
        "{message}"
    );
}

#[test]
fn bad_decimal_partition_values_and_log_gaps_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("decimal");
    raw_table(
        &root,
        protocol_1_2(),
        json!([
            {"name": "x", "type": "long", "nullable": true, "metadata": {}},
            {"name": "p", "type": "decimal(3,1)", "nullable": true, "metadata": {}},
        ]),
        &["p"],
        json!({}),
        Vec::new(),
        ["1.5", "12345.67"]
            .iter()
            .enumerate()
            .map(|(i, v)| RawFile {
                log_path: format!("p={v}/f{i}.parquet"),
                disk_path: format!("p={v}/f{i}.parquet"),
                bytes: parquet(vec![("x", Arc::new(Int64Array::from(vec![1])) as ArrayRef)]),
                partition_values: json!({ "p": v }),
            })
            .collect(),
    );
    let output = cli(&["inspect", &root.display().to_string()]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("p=12345.67/f1.parquet"), "{message}");

    let fixture = Fixture::copy("stats-columns-vary");
    std::fs::remove_file(fixture.path.join("_delta_log/00000000000000000002.json")).unwrap();
    let output = cli(&["inspect", &fixture.location()]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(
        message.contains("_delta_log/00000000000000000002.json' is missing"),
        "{message}"
    );
    assert!(message.len() < 300, "one short line: {message}");
}
