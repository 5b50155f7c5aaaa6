//! Variant columns (PROTOCOL.md "Variant Data Type", "Variant Shredding"): carried byte for
//! byte through compaction and clustering, `nullCount`-only stats, refused as curve and
//! predicate columns, and shredded files read back to unshredded variants, every value kept.
//!
//! Tables: `variant-spark` and `variant-shredded-spark`, data files written by Spark 4.3
//! (`scripts/make-variant-tables.py`; see testdata/README.md).

use std::collections::BTreeMap;

use delta_layout::curve::Curve;
use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::PlanOptions;
use delta_layout::plan::cluster::ClusterRequest;
use deltalake::arrow::array::{Array, AsArray, ListArray, MapArray, StructArray};
use deltalake::arrow::datatypes::Int64Type;
use serde_json::Value;

use crate::cli::{expect_error, run, stderr};
use crate::fixture::{Fixture, load, optimize};

/// Rows of the table (600 in 8 files, 4 in each of two partitions).
const ROWS: usize = 600;

/// Every row of the table, read straight from its live data files by the `parquet` crate
/// (none of delta-layout's reading code), as sorted strings: `id`, the partition value, `s.k`,
/// and every variant's `metadata` and `value` bytes (hex) by where it sits (`v`, `s.w`,
/// `arr[i]`, `m[key]`), SQL NULLs as `∅`. Fields are found by name, so Spark's `value`,
/// `metadata` order and ours compare equal. (delta-kernel's scan cannot be the reference
/// here: it fails on Spark's own files, "Found unmasked nulls for non-nullable StructArray
/// field m", for a map whose variant values are null.)
/// With `with_w` false, `s.w` is left out (a shredded file keeps part of it in `typed_value`).
fn rows_raw(fixture: &Fixture, with_w: bool) -> Vec<String> {
    use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::fmt::Write as _;
    let table = load(&fixture.location());
    let root = &fixture.path;
    let hex = |b: &[u8]| {
        b.iter().fold(String::new(), |mut s, x| {
            let _ = write!(s, "{x:02x}");
            s
        })
    };
    let variant = |a: &StructArray, i: usize| -> String {
        if a.is_null(i) {
            return "∅".into();
        }
        let bytes = |name: &str| hex(a.column_by_name(name).unwrap().as_binary::<i32>().value(i));
        format!("(metadata {}, value {})", bytes("metadata"), bytes("value"))
    };
    let mut out = Vec::new();
    for file in &table.files {
        let reader = ParquetRecordBatchReaderBuilder::try_new(
            std::fs::File::open(root.join(&file.path)).unwrap(),
        )
        .unwrap()
        .build()
        .unwrap();
        for batch in reader {
            let batch = batch.unwrap();
            let ids = batch
                .column_by_name("id")
                .unwrap()
                .as_primitive::<Int64Type>();
            let v = batch.column_by_name("v").unwrap().as_struct();
            let s = batch.column_by_name("s").unwrap().as_struct();
            let k = s.column_by_name("k").unwrap().as_primitive::<Int64Type>();
            let w = s.column_by_name("w").unwrap().as_struct();
            let arr = batch
                .column_by_name("arr")
                .unwrap()
                .as_any()
                .downcast_ref::<ListArray>()
                .unwrap();
            let m = batch
                .column_by_name("m")
                .unwrap()
                .as_any()
                .downcast_ref::<MapArray>()
                .unwrap();
            for row in 0..batch.num_rows() {
                let mut line = format!(
                    "id={} p={:?} v={}",
                    ids.value(row),
                    file.partition_values[0],
                    variant(v, row)
                );
                if s.is_null(row) {
                    line.push_str(" s=∅");
                } else {
                    let k = if k.is_null(row) {
                        "∅".to_string()
                    } else {
                        k.value(row).to_string()
                    };
                    let _ = write!(line, " s.k={k}");
                    if with_w {
                        let _ = write!(line, " s.w={}", variant(w, row));
                    }
                }
                if arr.is_null(row) {
                    line.push_str(" arr=∅");
                } else {
                    let elements = arr.value(row);
                    for i in 0..elements.len() {
                        let _ = write!(line, " arr[{i}]={}", variant(elements.as_struct(), i));
                    }
                }
                if m.is_null(row) {
                    line.push_str(" m=∅");
                } else {
                    let entries = m.value(row);
                    let keys = entries.column(0).as_string::<i32>();
                    for i in 0..entries.len() {
                        let _ = write!(
                            line,
                            " m[{}]={}",
                            keys.value(i),
                            variant(entries.column(1).as_struct(), i)
                        );
                    }
                }
                out.push(line);
            }
        }
    }
    out.sort();
    out
}

/// The `stats` of every `add` of commit `version`, parsed.
fn added_stats(fixture: &Fixture, version: u64) -> Vec<Value> {
    fixture
        .commit(version)
        .iter()
        .filter_map(|a| a.get("add"))
        .map(|add| serde_json::from_str(add["stats"].as_str().unwrap()).unwrap())
        .collect()
}

/// The Parquet schema of a data file as text (`required binary metadata`, ...).
fn parquet_schema(fixture: &Fixture, path: &str) -> String {
    use deltalake::parquet::file::reader::{FileReader as _, SerializedFileReader};
    let file = std::fs::File::open(fixture.path.join(path)).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    let mut text = Vec::new();
    deltalake::parquet::schema::printer::print_schema(
        &mut text,
        reader.metadata().file_metadata().schema(),
    );
    String::from_utf8(text).unwrap()
}

/// Runs `options` on the table and checks rows, variant bytes, verify, stats, the Parquet
/// layout written, and that a second run does nothing. `files_after`: the files expected.
fn check_rewrite(fixture: &Fixture, options: &OptimizeOptions, files_after: Option<usize>) {
    let location = fixture.location();
    let rows_before = rows_raw(fixture, true);
    assert_eq!(rows_before.len(), ROWS);
    // Variants in every position made it into the comparison.
    for needle in [
        "v=(metadata",
        "s.w=(metadata",
        "arr[2]=(metadata",
        "m[x]=(metadata",
        "m[nil]=∅",
    ] {
        assert!(rows_before.iter().any(|r| r.contains(needle)), "{needle}");
    }
    let read_version = load(&location).version;
    let outcome = optimize(&location, options).unwrap();
    let version = outcome.version.expect("a commit");
    assert_eq!(outcome.files_removed, 8);
    let table = load(&location);
    if let Some(n) = files_after {
        assert_eq!(table.files.len(), n);
    }
    // The same rows, every variant byte for byte.
    assert_eq!(rows_raw(fixture, true), rows_before);
    let rt = crate::fixture::runtime();
    let _inside = rt.enter();
    let old = rt
        .block_on(delta_layout::table::TableView::load(
            &location,
            Some(read_version),
        ))
        .unwrap();
    let report = delta_layout::verify::verify(&old, &table, None).unwrap();
    assert!(report.equal, "{report:?}");
    // Stats: nullCount for every variant leaf, min/max for none of them.
    let stats = added_stats(fixture, version);
    assert_eq!(stats.len(), table.files.len());
    let mut nulls: BTreeMap<&str, u64> = BTreeMap::new();
    for s in &stats {
        for (key, pointer) in [
            ("v", "/nullCount/v"),
            ("s.w", "/nullCount/s/w"),
            ("arr", "/nullCount/arr"),
            ("m", "/nullCount/m"),
        ] {
            *nulls.entry(key).or_default() += s.pointer(pointer).unwrap().as_u64().unwrap();
        }
        assert!(s.pointer("/minValues/v").is_none(), "{s}");
        assert!(s.pointer("/maxValues/s/w").is_none(), "{s}");
        assert!(s.pointer("/minValues/id").is_some(), "{s}");
    }
    // The SQL NULLs the rows hold (a null `s` makes `s.w` null too).
    let count = |needles: &[&str]| {
        rows_before
            .iter()
            .filter(|r| needles.iter().any(|n| r.contains(n)))
            .count() as u64
    };
    assert_eq!(nulls["v"], count(&[" v=∅"]));
    assert_eq!(nulls["s.w"], count(&[" s=∅", " s.w=∅"]));
    assert_eq!(nulls["arr"], count(&[" arr=∅"]));
    assert_eq!(nulls["m"], count(&[" m=∅"]));
    assert!(nulls.values().all(|&n| n > 10), "{nulls:?}");
    // Written unshredded: a struct of two required binaries, nothing else.
    let schema = parquet_schema(fixture, &table.files[0].path);
    let v = schema.split("group v").nth(1).unwrap();
    let v = &v[..v.find('}').unwrap()];
    assert!(
        v.contains("REQUIRED BYTE_ARRAY metadata") && v.contains("REQUIRED BYTE_ARRAY value"),
        "{schema}"
    );
    assert!(!schema.contains("typed_value"), "{schema}");
    // A second run has nothing to do.
    let again = optimize(&location, options).unwrap();
    assert_eq!(again.version, None);
}

#[test]
fn variants_survive_compaction_byte_for_byte() {
    let fixture = Fixture::copy("variant-spark");
    check_rewrite(&fixture, &OptimizeOptions::default(), Some(2));
}

#[test]
fn variants_survive_clustering_on_other_columns() {
    let fixture = Fixture::copy("variant-spark");
    let options = OptimizeOptions::default().with_plan(
        PlanOptions::default()
            .with_target_file_bytes(Some(8 << 10))
            .with_clustering(Some(ClusterRequest::new(
                Curve::Hilbert,
                vec!["id".into(), "s.k".into()],
            ))),
    );
    check_rewrite(&fixture, &options, None);
}

#[test]
fn variants_are_neither_curve_nor_predicate_columns() {
    let fixture = Fixture::copy("variant-spark");
    for curve in ["--zorder", "--hilbert"] {
        expect_error(
            &fixture,
            &["optimize", "{}", curve, "id,v"],
            &["'v'", "is a variant, which has no order"],
        );
    }
    expect_error(
        &fixture,
        &["optimize", "{}", "--hilbert", "s.w"],
        &["s.w", "is a variant"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--where", "v > 3"],
        &["v", "variant"],
    );
    // The table itself is fine to inspect and report on: the variant has nullCount only.
    let location = fixture.location();
    let output = run(&["inspect", &location, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let inspect: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(inspect["feature_support"]["variantType"], "supported");
    let output = run(&["report", &location, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["rows"], ROWS);
    assert!(
        report["columns"].get("v").is_none(),
        "{}",
        report["columns"]
    );
    assert!(
        report["columns"].get("id").is_some(),
        "{}",
        report["columns"]
    );
}

/// `s.w` of every row of the table's live files, by `id`: the variant decoded from its
/// `metadata` and `value` binaries by the `parquet-variant` crate (the spec's base encoding,
/// apart from the unshredding under test): `Some(n)` for the object `{"w": n}`, `None` for a
/// SQL NULL (of `s.w` or of `s`). Panics on anything else, or a `typed_value` left.
fn w_values(fixture: &Fixture) -> BTreeMap<i64, Option<i64>> {
    use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let table = load(&fixture.location());
    let mut out = BTreeMap::new();
    for file in &table.files {
        let reader = ParquetRecordBatchReaderBuilder::try_new(
            std::fs::File::open(fixture.path.join(&file.path)).unwrap(),
        )
        .unwrap()
        .build()
        .unwrap();
        for batch in reader {
            let batch = batch.unwrap();
            let ids = batch
                .column_by_name("id")
                .unwrap()
                .as_primitive::<Int64Type>();
            let s = batch.column_by_name("s").unwrap().as_struct();
            let w = s.column_by_name("w").unwrap().as_struct();
            assert!(w.column_by_name("typed_value").is_none(), "{}", file.path);
            for row in 0..batch.num_rows() {
                let value = (s.is_valid(row) && w.is_valid(row)).then(|| {
                    let binary = |name: &str| w.column_by_name(name).unwrap().as_binary::<i32>();
                    let (metadata, value) = (binary("metadata"), binary("value"));
                    let variant =
                        parquet_variant::Variant::try_new(metadata.value(row), value.value(row))
                            .unwrap();
                    let object = variant.as_object().expect("an object");
                    assert_eq!(object.len(), 1, "{}: {variant:?}", file.path);
                    object.get("w").unwrap().as_int64().unwrap()
                });
                assert!(out.insert(ids.value(row), value).is_none());
            }
        }
    }
    out
}

/// `variantShredding`: Spark 4.3 shreds `s.w` (the object `{"w": n}` in every row) into a
/// `typed_value` group. A compaction, then a Hilbert run, read each shredded value back to
/// its unshredded binary (arrow-rs' `unshred_variant`) and write unshredded files (which
/// PROTOCOL.md allows in a table with the feature): every `s.w` decodes to the object Spark
/// wrote (`{"w": id}`, SQL NULL where `id` is a multiple of 5 or `s` is null), every other
/// value keeps its bytes, and the feature stays. Spark's own reader reads the rewritten
/// files to the same JSON (scripts/check-spark.py).
#[test]
fn shredded_variants_are_unshredded_with_every_value_kept() {
    let fixture = Fixture::copy("variant-shredded-spark");
    let location = fixture.location();
    let table = load(&location);
    let shredded: Vec<String> = table.files.iter().map(|f| f.path.clone()).collect();
    assert!(parquet_schema(&fixture, &shredded[0]).contains("typed_value"));
    let before = rows_raw(&fixture, false);
    assert_eq!(before.len(), 150);
    // The table holds the even ids below 300 (scripts/make-variant-tables.py).
    let expected: BTreeMap<i64, Option<i64>> = (0..300)
        .filter(|id| id % 2 == 0)
        .map(|id: i64| (id, (id % 5 != 0 && id % 13 != 0).then_some(id)))
        .collect();
    assert_eq!(expected.len(), 150);
    for (round, options) in [
        OptimizeOptions::default(),
        OptimizeOptions::default().with_plan(
            PlanOptions::default()
                .with_rewrite_all(true)
                .with_clustering(Some(ClusterRequest::new(
                    Curve::Hilbert,
                    vec!["id".into(), "s.k".into()],
                ))),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let outcome = optimize(&location, &options).unwrap();
        assert!(outcome.version.is_some(), "run {round}");
        let after = load(&location);
        assert!(
            after.files.iter().all(|f| !shredded.contains(&f.path)),
            "run {round}"
        );
        assert_eq!(rows_raw(&fixture, false), before, "run {round}");
        assert_eq!(w_values(&fixture), expected, "run {round}");
        assert!(
            after
                .protocol
                .writer_features
                .iter()
                .any(|f| f == "variantShredding"),
            "run {round}"
        );
    }
}

/// A table of `id` and a variant `v` in two files: a good one, and `bad` as its second
/// file's `v` (a struct array that is not a valid unshredded variant).
fn table_with_bad_variant(root: &std::path::Path, bad: deltalake::arrow::array::ArrayRef) {
    use crate::faults::{RawFile, parquet, raw_table};
    use deltalake::arrow::array::{ArrayRef, BinaryArray, Int64Array};
    use deltalake::arrow::datatypes::{DataType, Field, Fields};
    use std::sync::Arc;
    let binary = |v: Vec<&[u8]>| Arc::new(BinaryArray::from(v)) as ArrayRef;
    // The variant integer 1 (primitive header 0x0c, int8) with an empty metadata dictionary.
    let good = Arc::new(StructArray::new(
        Fields::from(vec![
            Field::new("metadata", DataType::Binary, false),
            Field::new("value", DataType::Binary, false),
        ]),
        vec![
            binary(vec![&[1, 0, 0], &[1, 0, 0]]),
            binary(vec![&[12, 1], &[12, 1]]),
        ],
        None,
    )) as ArrayRef;
    let ids = |a: i64| Arc::new(Int64Array::from(vec![a, a + 1])) as ArrayRef;
    raw_table(
        root,
        serde_json::json!({"minReaderVersion": 3, "minWriterVersion": 7,
            "readerFeatures": ["variantType"], "writerFeatures": ["variantType"]}),
        serde_json::json!([
            {"name": "id", "type": "long", "nullable": false, "metadata": {}},
            {"name": "v", "type": "variant", "nullable": true, "metadata": {}},
        ]),
        &[],
        serde_json::json!({}),
        Vec::new(),
        vec![
            RawFile::plain("good.parquet", parquet(vec![("id", ids(0)), ("v", good)])),
            RawFile::plain("bad.parquet", parquet(vec![("id", ids(2)), ("v", bad)])),
        ],
    );
}

#[test]
fn malformed_variant_structs_are_refused_naming_the_file() {
    use deltalake::arrow::array::{ArrayRef, BinaryArray};
    use deltalake::arrow::datatypes::{DataType, Field, Fields};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    // `value` null in a variant that is not null; a variant without `value`.
    let null_value = Arc::new(StructArray::new(
        Fields::from(vec![
            Field::new("metadata", DataType::Binary, false),
            Field::new("value", DataType::Binary, true),
        ]),
        vec![
            Arc::new(BinaryArray::from(vec![&[1u8, 0, 0][..], &[1, 0, 0]])) as ArrayRef,
            Arc::new(BinaryArray::from(vec![Some(&[12u8, 1][..]), None])) as ArrayRef,
        ],
        None,
    )) as ArrayRef;
    let no_value = Arc::new(StructArray::new(
        Fields::from(vec![Field::new("metadata", DataType::Binary, false)]),
        vec![Arc::new(BinaryArray::from(vec![&[1u8, 0, 0][..], &[1, 0, 0]])) as ArrayRef],
        None,
    )) as ArrayRef;
    for (name, bad, needle) in [
        (
            "null-value",
            null_value,
            "with a null metadata or value binary",
        ),
        ("no-value", no_value, "without its 'value' binary"),
    ] {
        let root = dir.path().join(name);
        table_with_bad_variant(&root, bad);
        let fixture = Fixture::at(&root);
        expect_error(
            &fixture,
            &["optimize", "{}"],
            &["bad.parquet", "variant column 'v'", needle],
        );
    }
}

#[test]
fn sweep_refuses_a_variant_layout_column_naming_the_layout() {
    let fixture = Fixture::copy("variant-spark");
    for layout in ["zorder:v", "hilbert:id,s.w"] {
        expect_error(
            &fixture,
            &[
                "sweep",
                "{}",
                "--target-sizes",
                "16KiB",
                "--layout",
                layout,
                "-q",
            ],
            &["--layout", layout, "is a variant, which has no order"],
        );
    }
}
