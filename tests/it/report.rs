//! The skipping estimate against brute force: every file the report says min/max pruning
//! skips is read, and no row in it may satisfy the predicate. Real tables from `testdata/`
//! and seeded random tables with nulls, NaN, -0.0, cut-off strings, millisecond-truncated
//! timestamps, null partition values and missing stats.

use std::collections::BTreeMap;
use std::path::Path;

use delta_layout::bound::ColumnRef;
use delta_layout::predicate::{CompareOp, Literal, Predicate};
use delta_layout::report::{Analysis, ReportOptions};
use delta_layout::table::TableView;
use delta_layout::table::read::FileReader;
use deltalake::arrow::array::{
    Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, StructArray,
    TimestampMicrosecondArray,
};
use deltalake::arrow::datatypes::{DataType as ArrowType, Field, Schema, TimeUnit};
use deltalake::arrow::util::display::{ArrayFormatter, FormatOptions};
use deltalake::kernel::DataType;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::fixture::{self, Fixture};

/// One file's rows as (column name -> value strings), read with the library's reader.
struct FileRows {
    columns: BTreeMap<String, Vec<Option<String>>>,
    len: usize,
}

fn read_rows(table: &TableView, columns: &[ColumnRef]) -> Vec<FileRows> {
    let rt = fixture::runtime();
    let reader = {
        let _guard = rt.enter();
        FileReader::new(table).unwrap()
    };
    let options = FormatOptions::default();
    table
        .files
        .iter()
        .map(|file| {
            let batches = reader.read(file).unwrap();
            let len: usize = batches.iter().map(RecordBatch::num_rows).sum();
            let mut out = BTreeMap::new();
            for column in columns {
                let values: Vec<Option<String>> = if let Some(i) = column.partition_index {
                    vec![file.partition_values[i].clone(); len]
                } else {
                    let mut values = Vec::with_capacity(len);
                    for batch in &batches {
                        let (array, valid) = leaf(batch, &column.physical);
                        let formatter = ArrayFormatter::try_new(array.as_ref(), &options).unwrap();
                        for (row, valid) in valid.into_iter().enumerate() {
                            values.push(valid.then(|| formatter.value(row).to_string()));
                        }
                    }
                    values
                };
                out.insert(column.name.clone(), values);
            }
            FileRows { columns: out, len }
        })
        .collect()
}

/// The leaf array at a physical path, and per row whether it is valid (a null parent
/// struct makes the leaf null).
fn leaf(batch: &RecordBatch, path: &[String]) -> (ArrayRef, Vec<bool>) {
    let mut array: ArrayRef = batch.column_by_name(&path[0]).unwrap().clone();
    let mut valid: Vec<bool> = (0..array.len()).map(|i| array.is_valid(i)).collect();
    for name in &path[1..] {
        let parent = array
            .as_any()
            .downcast_ref::<StructArray>()
            .unwrap()
            .clone();
        array = parent.column_by_name(name).unwrap().clone();
        for (i, v) in valid.iter_mut().enumerate() {
            *v = *v && array.is_valid(i);
        }
    }
    (array, valid)
}

/// Evaluates `predicate` on every row of every file the estimate skips; panics on a match.
/// Returns (files skipped, file checks) over all predicates.
fn check(table: &TableView, predicates: &[Predicate]) -> (usize, usize) {
    let analysis = Analysis::new(table, Some(&[])).unwrap();
    let mut columns: Vec<ColumnRef> = Vec::new();
    for p in predicates {
        for c in p.columns() {
            let column = ColumnRef::resolve(table, &c).unwrap();
            if !columns.iter().any(|k| k.logical == column.logical) {
                columns.push(column);
            }
        }
    }
    let rows = read_rows(table, &columns);
    let (mut skipped, mut checks) = (0, 0);
    for p in predicates {
        let keep = analysis.may_match(p).unwrap();
        for (f, file_rows) in rows.iter().enumerate() {
            checks += 1;
            if keep[f] {
                continue;
            }
            skipped += 1;
            for row in 0..file_rows.len {
                let value_of =
                    |path: &[String]| -> delta_layout::Result<(&DataType, Option<&str>)> {
                        let c = columns
                            .iter()
                            .find(|c| c.logical == path)
                            .expect("a column of the predicate");
                        Ok((&c.data_type, file_rows.columns[&c.name][row].as_deref()))
                    };
                let matched = p.evaluate(&value_of).unwrap();
                assert_ne!(
                    matched,
                    Some(true),
                    "{}: file {} was skipped for `{p}` but row {row} matches (stats {:?})",
                    table.display_location(),
                    table.files[f].path,
                    table.files[f].stats
                );
            }
        }
    }
    (skipped, checks)
}

/// Random predicates over `columns`, literals drawn from the rows so that matches exist.
fn random_predicates(
    table: &TableView,
    columns: &[ColumnRef],
    count: usize,
    seed: u64,
) -> Vec<Predicate> {
    let rows = read_rows(table, columns);
    let mut rng = StdRng::seed_from_u64(seed);
    let values: Vec<Vec<String>> = columns
        .iter()
        .map(|c| {
            let mut v: Vec<String> = rows
                .iter()
                .flat_map(|r| r.columns[&c.name].iter().flatten().cloned())
                .collect();
            v.sort();
            v.dedup();
            v
        })
        .collect();
    let literal = |c: &ColumnRef, text: &str| -> Literal {
        match &c.data_type {
            DataType::Primitive(
                deltalake::kernel::PrimitiveType::String
                | deltalake::kernel::PrimitiveType::Date
                | deltalake::kernel::PrimitiveType::Timestamp
                | deltalake::kernel::PrimitiveType::TimestampNtz,
            ) => Literal::String(text.to_string()),
            DataType::Primitive(deltalake::kernel::PrimitiveType::Boolean) => {
                Literal::Bool(text == "true")
            }
            _ => Literal::Number(text.to_string()),
        }
    };
    let atom = |rng: &mut StdRng| -> Predicate {
        let i = rng.random_range(0..columns.len());
        let c = &columns[i];
        let column = c.logical.clone();
        if values[i].is_empty() || rng.random_range(0..8) == 0 {
            return Predicate::IsNull {
                column,
                negated: rng.random(),
            };
        }
        let pick = |rng: &mut StdRng| literal(c, &values[i][rng.random_range(0..values[i].len())]);
        match rng.random_range(0..4) {
            0 => Predicate::Between {
                column,
                low: pick(rng),
                high: pick(rng),
                negated: rng.random_range(0..4) == 0,
            },
            1 => Predicate::In {
                column,
                values: (0..rng.random_range(1..4)).map(|_| pick(rng)).collect(),
                negated: rng.random_range(0..4) == 0,
            },
            _ => Predicate::Compare {
                column,
                op: [
                    CompareOp::Eq,
                    CompareOp::NotEq,
                    CompareOp::Lt,
                    CompareOp::LtEq,
                    CompareOp::Gt,
                    CompareOp::GtEq,
                ][rng.random_range(0..6)],
                value: pick(rng),
            },
        }
    };
    (0..count)
        .map(|_| {
            let a = atom(&mut rng);
            match rng.random_range(0..6) {
                0 => Predicate::And(Box::new(a), Box::new(atom(&mut rng))),
                1 => Predicate::Or(Box::new(a), Box::new(atom(&mut rng))),
                2 => Predicate::Not(Box::new(a)),
                _ => a,
            }
        })
        .collect()
}

fn generated(table: &TableView) -> Vec<Predicate> {
    let analysis = Analysis::new(table, None).unwrap();
    let options = ReportOptions {
        queries: 40,
        ..ReportOptions::default()
    };
    analysis
        .workload(&options, false)
        .queries
        .into_iter()
        .map(|q| q.predicate)
        .collect()
}

#[test]
fn estimate_never_skips_a_matching_file_on_real_tables() {
    let mut total_skipped = 0;
    // Every accepted table (an empty one has no column with stats and is passed over).
    for name in crate::rewrite::ACCEPTED {
        let fixture = Fixture::copy(name);
        let table = fixture::load(&fixture.location());
        let analysis = Analysis::new(&table, None).unwrap();
        let columns = analysis.columns().to_vec();
        if columns.is_empty() {
            continue;
        }
        let mut predicates = generated(&table);
        predicates.extend(random_predicates(&table, &columns, 150, 7));
        let (skipped, checks) = check(&table, &predicates);
        assert!(checks > 0, "{name}");
        total_skipped += skipped;
    }
    assert!(
        total_skipped > 1000,
        "the check must see skipped files: {total_skipped}"
    );
}

/// How the writer of a random table records stats.
#[derive(Clone, Copy)]
enum Writer {
    /// Exact bounds; floats leave NaN out (as bounds taken from Parquet statistics do);
    /// strings cut to 32 characters with the max bumped (Delta Spark).
    Exact,
    /// Strings cut to 32 characters with no bump (the protocol's footnote allows it);
    /// timestamps cut down to milliseconds, NaN as the float max.
    Truncating,
}

/// A seeded table: 12 files in partitions p (some null), columns id, x (double with NaN,
/// -0.0, nulls), s (strings with long shared prefixes, empty, nulls), t (timestamps with
/// microseconds). Some files have no stats, some lack a column's stats.
fn random_table(dir: &Path, seed: u64, writer: Writer) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    let root = dir.join(format!("random-{seed}"));
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();
    let schema = std::sync::Arc::new(Schema::new(vec![
        Field::new("id", ArrowType::Int64, true),
        Field::new("x", ArrowType::Float64, true),
        Field::new("s", ArrowType::Utf8, true),
        Field::new(
            "t",
            ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
    ]));
    let schema_string = json!({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": true, "metadata": {}},
        {"name": "x", "type": "double", "nullable": true, "metadata": {}},
        {"name": "s", "type": "string", "nullable": true, "metadata": {}},
        {"name": "t", "type": "timestamp", "nullable": true, "metadata": {}},
        {"name": "p", "type": "string", "nullable": true, "metadata": {}},
    ]})
    .to_string();
    let mut lines = vec![
        json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}).to_string(),
        json!({"metaData": {
            "id": "00000000-0000-0000-0000-000000000002",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string,
            "partitionColumns": ["p"],
            "configuration": {},
            "createdTime": 0,
        }})
        .to_string(),
    ];
    let prefix = "https://example.com/a/very/long/shared/prefix/";
    for f in 0..12 {
        let n = rng.random_range(1..60);
        let base: i64 = rng.random_range(0..1000);
        let ids: Vec<Option<i64>> = (0..n)
            .map(|_| (rng.random_range(0..10) > 0).then(|| base + rng.random_range(0..50)))
            .collect();
        let xs: Vec<Option<f64>> = (0..n)
            .map(|_| match rng.random_range(0..12) {
                0 => None,
                1 => Some(f64::NAN),
                2 => Some(-0.0),
                _ => Some(f64::from(rng.random_range(-100..100)) / 4.0),
            })
            .collect();
        let ss: Vec<Option<String>> = (0..n)
            .map(|_| match rng.random_range(0..10) {
                0 => None,
                1 => Some(String::new()),
                2 => Some(format!(" k{}", rng.random_range(0..10))),
                3..=5 => Some(format!("{prefix}{}", rng.random_range(0..100))),
                _ => Some(format!("k{}", rng.random_range(0..100))),
            })
            .collect();
        let ts: Vec<Option<i64>> = (0..n)
            .map(|_| {
                (rng.random_range(0..10) > 0)
                    .then(|| 1_700_000_000_000_000 + rng.random_range(0..5_000_000))
            })
            .collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                std::sync::Arc::new(Int64Array::from(ids.clone())),
                std::sync::Arc::new(Float64Array::from(xs.clone())),
                std::sync::Arc::new(StringArray::from(ss.clone())),
                std::sync::Arc::new(
                    TimestampMicrosecondArray::from(ts.clone()).with_timezone("UTC"),
                ),
            ],
        )
        .unwrap();
        let mut buffer = Vec::new();
        let mut w =
            deltalake::parquet::arrow::ArrowWriter::try_new(&mut buffer, schema.clone(), None)
                .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let name = format!("part-{f:05}.parquet");
        std::fs::write(root.join(&name), &buffer).unwrap();

        let nulls = |v: usize| json!(v);
        let count_null = |it: &mut dyn Iterator<Item = bool>| it.filter(|b| *b).count();
        let mut min_values = serde_json::Map::new();
        let mut max_values = serde_json::Map::new();
        let mut null_count = serde_json::Map::new();
        let id_values: Vec<i64> = ids.iter().flatten().copied().collect();
        if let (Some(lo), Some(hi)) = (id_values.iter().min(), id_values.iter().max()) {
            min_values.insert("id".into(), json!(lo));
            max_values.insert("id".into(), json!(hi));
        }
        null_count.insert(
            "id".into(),
            nulls(count_null(&mut ids.iter().map(Option::is_none))),
        );
        let finite: Vec<f64> = xs
            .iter()
            .flatten()
            .copied()
            .filter(|x| !x.is_nan())
            .collect();
        if !finite.is_empty() {
            let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            min_values.insert("x".into(), json!(lo));
            let has_nan = xs.iter().flatten().any(|x| x.is_nan());
            max_values.insert(
                "x".into(),
                match writer {
                    Writer::Truncating if has_nan => json!("NaN"),
                    _ => json!(hi),
                },
            );
        }
        null_count.insert(
            "x".into(),
            nulls(count_null(&mut xs.iter().map(Option::is_none))),
        );
        let strings: Vec<&String> = ss.iter().flatten().collect();
        if let (Some(lo), Some(hi)) = (strings.iter().min(), strings.iter().max()) {
            let cut = |s: &str| s.chars().take(32).collect::<String>();
            min_values.insert("s".into(), json!(cut(lo)));
            let max = match writer {
                Writer::Exact if hi.chars().count() > 32 => format!("{}\u{10FFFF}", cut(hi)),
                _ => cut(hi),
            };
            max_values.insert("s".into(), json!(max));
        }
        null_count.insert(
            "s".into(),
            nulls(count_null(&mut ss.iter().map(Option::is_none))),
        );
        let times: Vec<i64> = ts.iter().flatten().copied().collect();
        if let (Some(lo), Some(hi)) = (times.iter().min(), times.iter().max()) {
            let fmt = |micros: i64| {
                let t = chrono::DateTime::from_timestamp_micros(micros).unwrap();
                t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
            };
            // Milliseconds, cut down, as Delta Spark writes them.
            let (lo, hi) = match writer {
                Writer::Exact => (*lo - lo.rem_euclid(1000), *hi - hi.rem_euclid(1000)),
                Writer::Truncating => (*lo - lo.rem_euclid(1000), *hi - hi.rem_euclid(1000)),
            };
            min_values.insert("t".into(), json!(fmt(lo)));
            max_values.insert("t".into(), json!(fmt(hi)));
        }
        null_count.insert(
            "t".into(),
            nulls(count_null(&mut ts.iter().map(Option::is_none))),
        );
        // Missing stats: none at all on some files, one column's missing on others.
        let stats = match rng.random_range(0..6) {
            0 => None,
            1 => {
                min_values.remove("id");
                max_values.remove("id");
                Some(json!({"numRecords": n, "minValues": min_values, "maxValues": max_values}))
            }
            _ => Some(json!({
                "numRecords": n,
                "minValues": min_values,
                "maxValues": max_values,
                "nullCount": null_count,
            })),
        };
        let partition: Value = match f % 4 {
            0 => Value::Null,
            k => json!(format!("p{k}")),
        };
        let mut add = json!({
            "path": name,
            "partitionValues": {"p": partition},
            "size": buffer.len(),
            "modificationTime": 0,
            "dataChange": true,
        });
        if let Some(stats) = stats {
            add["stats"] = json!(stats.to_string());
        }
        lines.push(json!({ "add": add }).to_string());
    }
    std::fs::write(
        root.join("_delta_log").join(format!("{:020}.json", 0)),
        lines.join("\n"),
    )
    .unwrap();
    root.display().to_string()
}

#[test]
fn estimate_never_skips_a_matching_file_on_random_tables() {
    let dir = tempfile::tempdir().unwrap();
    let mut total_skipped = 0;
    for seed in 0..6 {
        let writer = if seed % 2 == 0 {
            Writer::Exact
        } else {
            Writer::Truncating
        };
        let location = random_table(dir.path(), seed, writer);
        let table = fixture::load(&location);
        let analysis = Analysis::new(&table, None).unwrap();
        let columns = analysis.columns().to_vec();
        assert_eq!(
            columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["p", "id", "x", "s", "t"]
        );
        let mut predicates = generated(&table);
        predicates.extend(random_predicates(&table, &columns, 400, seed));
        let (skipped, _) = check(&table, &predicates);
        total_skipped += skipped;
    }
    assert!(
        total_skipped > 500,
        "the check must see skipped files: {total_skipped}"
    );
}

/// A hand-made log of files over column `id` with these [min, max] and equal rows (100
/// each) and sizes (1000 bytes); the data files are not needed by the report.
fn layout_table(dir: &Path, name: &str, ranges: &[(i64, i64)]) -> String {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();
    let schema_string = json!({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": true, "metadata": {}},
    ]})
    .to_string();
    let mut lines = vec![
        json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}).to_string(),
        json!({"metaData": {
            "id": "00000000-0000-0000-0000-000000000003",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string,
            "partitionColumns": [],
            "configuration": {},
            "createdTime": 0,
        }})
        .to_string(),
    ];
    for (i, (lo, hi)) in ranges.iter().enumerate() {
        let stats = json!({"numRecords": 100, "minValues": {"id": lo}, "maxValues": {"id": hi},
            "nullCount": {"id": 0}});
        lines.push(
            json!({"add": {"path": format!("f{i}.parquet"), "partitionValues": {}, "size": 1000,
                "modificationTime": 0, "dataChange": true, "stats": stats.to_string()}})
            .to_string(),
        );
    }
    std::fs::write(
        root.join("_delta_log").join(format!("{:020}.json", 0)),
        lines.join("\n"),
    )
    .unwrap();
    root.display().to_string()
}

#[test]
fn overlap_and_skipping_match_direct_counts_on_hand_made_layouts() {
    let dir = tempfile::tempdir().unwrap();
    // Ten files tiling [0, 9999]: depth 1, span 999/9999 each, and a 1% range reads one
    // file, or two when it straddles a boundary.
    let sorted: Vec<(i64, i64)> = (0..10).map(|i| (i * 1000, i * 1000 + 999)).collect();
    let table = fixture::load(&layout_table(dir.path(), "sorted", &sorted));
    let options = ReportOptions {
        queries: 400,
        ..ReportOptions::default()
    };
    let report = delta_layout::report::report(&table, &options).unwrap();
    let id = &report.columns[0];
    assert_eq!(id.column, "id");
    assert!((id.overlap_depth_avg.unwrap() - 1.0).abs() < 1e-9, "{id:?}");
    assert_eq!(id.overlap_depth_max, Some(1));
    assert!((id.span_avg.unwrap() - 999.0 / 9999.0).abs() < 1e-9);
    assert_eq!(id.files_min_eq_max, 0);
    // Direct count: a range covering 1% (100 values) skips 9 of 10 files, or 8 of 10.
    let range = id.range;
    assert!(range.skipped_files_fraction_avg > 0.8 && range.skipped_files_fraction_avg <= 0.9);
    assert!(
        (range.skipped_files_fraction_avg - range.ideal_skipped_files_fraction_avg).abs() < 0.02
    );
    assert!((id.equality.skipped_files_fraction_avg - 0.9).abs() < 1e-9);
    assert!((range.skipped_bytes_fraction_avg - range.skipped_files_fraction_avg).abs() < 1e-9);

    // The same ten files each covering everything: depth 10, nothing skipped, while the
    // ideal (sorted on id) still skips about 90%.
    let shuffled = vec![(0, 9999); 10];
    let table = fixture::load(&layout_table(dir.path(), "shuffled", &shuffled));
    let report = delta_layout::report::report(&table, &options).unwrap();
    let id = &report.columns[0];
    assert!((id.overlap_depth_avg.unwrap() - 10.0).abs() < 1e-9);
    assert_eq!(id.overlap_depth_max, Some(10));
    assert!((id.span_avg.unwrap() - 1.0).abs() < 1e-9);
    assert_eq!(id.skipped_files_fraction_avg, 0.0);
    assert!(id.range.ideal_skipped_files_fraction_avg > 0.8);

    // Half overlapping: [0, 10] and [5, 15] with equal rows. A point of the first file
    // is in both files half the time (depth 1.5); likewise the second: average 1.5.
    let table = fixture::load(&layout_table(dir.path(), "half", &[(0, 10), (5, 15)]));
    let report = delta_layout::report::report(&table, &options).unwrap();
    let id = &report.columns[0];
    assert!((id.overlap_depth_avg.unwrap() - 1.5).abs() < 1e-9, "{id:?}");
    assert_eq!(id.overlap_depth_max, Some(2));
    assert!((id.span_avg.unwrap() - 10.0 / 15.0).abs() < 1e-9);
}

#[test]
fn user_predicates_count_files_and_bytes_in_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let ranges: Vec<(i64, i64)> = (0..4).map(|i| (i * 10, i * 10 + 9)).collect();
    let table = fixture::load(&layout_table(dir.path(), "four", &ranges));
    let options = ReportOptions {
        predicates: vec![
            Predicate::parse("id < 10").unwrap(),
            Predicate::parse("id BETWEEN 15 AND 25 OR id = 39").unwrap(),
            Predicate::parse("NOT (id >= 0)").unwrap(),
            Predicate::parse("id IS NULL").unwrap(),
            // A long IN list is one test per file, not a deep OR chain.
            Predicate::parse(&format!(
                "id IN ({})",
                (100..50_100)
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .unwrap(),
            Predicate::parse("id IN (5, 35) AND id NOT IN (NULL, 1)").unwrap(),
        ],
        ..ReportOptions::default()
    };
    let report = delta_layout::report::report(&table, &options).unwrap();
    let scanned: Vec<(u64, u64, u64, u64)> = report
        .predicates
        .iter()
        .map(|p| {
            (
                p.files_scanned,
                p.files_skipped,
                p.bytes_scanned,
                p.bytes_skipped,
            )
        })
        .collect();
    assert_eq!(
        scanned,
        [
            (1, 3, 1000, 3000),
            (3, 1, 3000, 1000),
            (0, 4, 0, 4000),
            (0, 4, 0, 4000),
            (0, 4, 0, 4000),
            (0, 4, 0, 4000)
        ]
    );
    assert_eq!(
        report.predicates[1].predicate,
        "(id BETWEEN 15 AND 25 OR id = 39)"
    );
    let bad = ReportOptions {
        predicates: vec![Predicate::parse("nope = 1").unwrap()],
        ..ReportOptions::default()
    };
    let err = delta_layout::report::report(&table, &bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("nope"), "{err}");
}

#[test]
fn compare_leaves_out_columns_an_older_version_lacks() {
    let fixture = Fixture::copy("schema-evolution-added-column");
    let location = fixture.location();
    let after = fixture::load(&location);
    let before = fixture::runtime()
        .block_on(TableView::load(&location, Some(0)))
        .unwrap();
    let comparison =
        delta_layout::report::compare(&before, &after, &ReportOptions::default()).unwrap();
    let after_columns: Vec<&str> = comparison
        .after
        .columns
        .iter()
        .map(|c| c.column.as_str())
        .collect();
    let before_columns: Vec<&str> = comparison
        .before
        .columns
        .iter()
        .map(|c| c.column.as_str())
        .collect();
    assert!(
        after_columns.len() > before_columns.len(),
        "{after_columns:?} {before_columns:?}"
    );
    assert!(before_columns.iter().all(|c| after_columns.contains(c)));
    assert_eq!(comparison.columns.len(), before_columns.len());
}

/// The text of every `<title>` inside the first element of `html` that starts with `open`.
fn titles_in(html: &str, open: &str, close: &str) -> Vec<String> {
    let start = html
        .find(open)
        .unwrap_or_else(|| panic!("no {open} in {html}"));
    let end = start + html[start..].find(close).unwrap();
    html[start..end]
        .split("<title>")
        .skip(1)
        .map(|t| t[..t.find("</title>").unwrap()].to_string())
        .collect()
}

#[test]
fn html_page_has_ticks_axis_labels_legend_counts_and_a_tooltip_per_file() {
    let dir = tempfile::tempdir().unwrap();
    let ranges: Vec<(i64, i64)> = vec![(0, 9), (10, 19), (20, 29), (30, 39), (5, 400)];
    let table = fixture::load(&layout_table(dir.path(), "five", &ranges));
    let options = ReportOptions {
        columns: Some(vec!["id".into()]),
        ..Default::default()
    };
    let report = delta_layout::report::report(&table, &options).unwrap();
    let html = delta_layout::report::html::render(None, &report);
    assert!(
        !html.contains("src=") && !html.contains("href="),
        "external asset"
    );

    // A tooltip per file bar: its path, min, max, rows and size, files ordered by min.
    let tips = titles_in(&html, "<figure><svg", "</svg>");
    assert_eq!(tips.len(), 1, "the histogram has one bucket: {tips:?}");
    assert_eq!(tips[0], "5 files of 512 B to 1.0 KiB");
    let tips = titles_in(&html, "aria-label=\"file ranges of id", "</svg>");
    assert_eq!(tips.len(), ranges.len(), "{tips:?}");
    assert_eq!(html.matches("<rect class=\"file\"").count(), ranges.len());
    assert_eq!(
        tips[0],
        "f0.parquet\nmin: 0\nmax: 9\nrows: 100, size: 1000 B"
    );
    assert_eq!(
        tips[1],
        "f4.parquet\nmin: 5\nmax: 400\nrows: 100, size: 1000 B"
    );
    assert_eq!(
        tips[4],
        "f3.parquet\nmin: 30\nmax: 39\nrows: 100, size: 1000 B"
    );

    // Value ticks at 0, 1/4, ..., 1 of [0, 400]; file ticks 1, 3, 5.
    let ticks: Vec<&str> = html
        .split("class=\"tick\"")
        .skip(1)
        .map(|t| &t[t.find('>').unwrap() + 1..t.find('<').unwrap()])
        .collect();
    for tick in [
        "0", "100", "200", "300", "400", "1", "3", "5", "0%", "50%", "100%",
    ] {
        assert!(ticks.contains(&tick), "no tick {tick} in {ticks:?}");
    }
    // The histogram: a count axis (0, 1, ..., 5), the bucket's size, the count on its bar.
    assert!(ticks.contains(&"512 B"), "{ticks:?}");
    assert_eq!(html.matches("class=\"count\"").count(), 1);
    assert!(html.contains("text-anchor=\"middle\">5</text>"));

    for label in [
        "file size (power-of-two buckets, from their lower bound)",
        ">files<",
        "id (min to max of each file)",
        "files, ordered by min",
        "share of files skipped (%)",
    ] {
        assert!(html.contains(label), "no axis label {label}");
    }
    // The legend sits above the skipping bars (y 4 to 16; the bars start at 30).
    let legend = &html[html.find("<g class=\"legend\">").unwrap()..];
    assert!(legend.starts_with("<g class=\"legend\"><rect x=\"70\" y=\"4\""));
    assert!(legend.contains(">skipped (estimate)<") && legend.contains(">ideal (sorted"));
    assert!(
        legend.contains("<rect x=\"70\" y=\"30.0\""),
        "first bar below the legend"
    );
}

/// A value tick names the value drawn where it stands: on a `decimal(4,2)` axis from 0.00
/// to 0.10 the quarters are 0.03 at 30% and 0.08 at 80% of the axis (the values a
/// `decimal(4,2)` holds nearest to 0.025 and 0.075), never 0.02 at 25%; and the two-column
/// skipping of the text report is in the page, per version.
#[test]
fn html_ticks_stand_at_their_values_and_the_page_has_the_two_column_figures() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("decimals");
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();
    let schema_string = json!({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": true, "metadata": {}},
        {"name": "price", "type": "decimal(4,2)", "nullable": true, "metadata": {}},
    ]})
    .to_string();
    let mut lines = vec![
        json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}).to_string(),
        json!({"metaData": {
            "id": "00000000-0000-0000-0000-000000000004",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string,
            "partitionColumns": [],
            "configuration": {},
            "createdTime": 0,
        }})
        .to_string(),
    ];
    for i in 0..5 {
        let stats = json!({"numRecords": 100,
            "minValues": {"id": i * 10, "price": f64::from(2 * i) / 100.0},
            "maxValues": {"id": i * 10 + 9, "price": f64::from(2 * i + 2) / 100.0},
            "nullCount": {"id": 0, "price": 0}});
        lines.push(
            json!({"add": {"path": format!("f{i}.parquet"), "partitionValues": {}, "size": 1000,
                "modificationTime": 0, "dataChange": true, "stats": stats.to_string()}})
            .to_string(),
        );
    }
    std::fs::write(
        root.join("_delta_log").join(format!("{:020}.json", 0)),
        lines.join("\n"),
    )
    .unwrap();
    let table = fixture::load(&root.display().to_string());
    let options = ReportOptions {
        columns: Some(vec!["id".into(), "price".into()]),
        ..Default::default()
    };
    let report = delta_layout::report::report(&table, &options).unwrap();
    let price = report.layouts.iter().find(|l| l.column == "price").unwrap();
    let ticks: Vec<(f64, &str)> = price
        .axis_ticks
        .iter()
        .map(|(t, label)| (*t, label.as_str()))
        .collect();
    let expected = [
        (0.0, "0.00"),
        (0.3, "0.03"),
        (0.5, "0.05"),
        (0.8, "0.08"),
        (1.0, "0.10"),
    ];
    assert_eq!(ticks.len(), expected.len(), "{ticks:?}");
    for ((position, label), (want_position, want_label)) in ticks.iter().zip(expected) {
        assert_eq!(*label, want_label, "{ticks:?}");
        assert!((position - want_position).abs() < 1e-9, "{ticks:?}");
    }
    let html = delta_layout::report::html::render(Some(&report), &report);
    let figure = &html[html.find("aria-label=\"file ranges of price").unwrap()..];
    let figure = &figure[..figure.find("</svg>").unwrap()];
    // 48 px of margin, then 30% of the 420 px plot.
    assert!(
        figure.contains("x=\"174.0\" y=\"292\" font-size=\"10\" text-anchor=\"middle\">0.03<"),
        "{figure}"
    );
    assert!(!figure.contains(">0.02<"), "{figure}");

    assert_eq!(report.conjunctions.len(), 1);
    let pair = &report.conjunctions[0].skipping;
    let section = &html[html.find("<h2>Two columns together</h2>").unwrap()..];
    let cells = format!(
        "<tr><td>id AND price</td><td>{:.1}%</td><td>{:.1}%</td><td>{:.1}%</td><td>{:.1}%</td></tr>",
        pair.skipped_files_fraction_avg * 100.0,
        pair.ideal_skipped_files_fraction_avg * 100.0,
        pair.skipped_files_fraction_avg * 100.0,
        pair.ideal_skipped_files_fraction_avg * 100.0,
    );
    assert!(section.contains(&cells), "{section}");
    // Files tiling both columns in step: a range on each skips most files.
    assert!(pair.skipped_files_fraction_avg > 0.5, "{pair:?}");
}

/// Bounds read from delta-rs' parsed stats columns equal the bounds read from each file's
/// stats JSON, for every column of every real table, and so do the stats coverage counts.
#[test]
fn parsed_stats_give_the_bounds_the_json_gives() {
    let mut compared = 0;
    for name in crate::rewrite::ACCEPTED
        .iter()
        .chain(["stats-parsed-only-checkpoint"].iter())
    {
        let fixture = crate::fixture::Fixture::copy(name);
        let table = crate::fixture::load(&fixture.location());
        let prefix = delta_layout::pruning::string_prefix_length(&table);
        for leaf in table.data_leaf_columns() {
            if let Ok(column) = delta_layout::bound::ColumnRef::resolve(&table, &leaf.logical) {
                let columnar = delta_layout::pruning::column_bounds(&table, &column, prefix);
                for (file, bounds) in table.files.iter().zip(&columnar) {
                    let json = delta_layout::pruning::FileBounds::of(&column, file, prefix);
                    assert_eq!(bounds, &json, "{name}: {} in {}", column.name, file.path);
                    compared += 1;
                }
            }
            let (min_max, nulls) =
                delta_layout::pruning::stats_coverage(&table, &leaf.physical, &leaf.data_type);
            let json = |f: &dyn Fn(&delta_layout::table::FileStats) -> bool| {
                table
                    .files
                    .iter()
                    .filter_map(|file| file.stats.as_ref())
                    .filter(|s| f(s))
                    .count()
            };
            assert_eq!(
                min_max,
                json(&|s| s.min(&leaf.physical).is_some() && s.max(&leaf.physical).is_some()),
                "{name}: {}",
                leaf.display_name()
            );
            assert_eq!(
                nulls,
                json(&|s| s.nulls(&leaf.physical).is_some()),
                "{name}: {}",
                leaf.display_name()
            );
        }
    }
    assert!(compared > 500, "{compared} bounds compared");
}

/// How [`edge_string_table`] writes a string column's min/max: as they are (delta-rs), or
/// cut to 32 characters with U+10FFFF appended to a cut max (Delta Spark, and this tool).
#[derive(Clone, Copy, Debug)]
enum StringStats {
    Exact,
    Cut,
}

/// Strings whose characters at and after the 32nd are the edge cases of string bounds: runs
/// of U+10FFFF (the character a cut max is extended with), U+FFFF, U+D7FF (the last before
/// the surrogates), emoji (4 bytes in UTF-8, 2 code units in UTF-16), of 31 to 40 characters.
fn edge_strings(kind: usize) -> Vec<String> {
    let run = |c: char, n: usize| std::iter::repeat_n(c, n).collect::<String>();
    match kind {
        0 => (33..=40).map(|n| run('\u{10FFFF}', n)).collect(),
        1 => (31..=36)
            .map(|n| format!("{}{}", run('a', n), run('\u{10FFFF}', 40 - n)))
            .collect(),
        2 => (31..=34)
            .flat_map(|n| {
                ['\u{FFFF}', '\u{D7FF}', '\u{1F600}', '\u{E000}']
                    .map(|c| format!("{}{}", run('b', n), run(c, 40 - n)))
            })
            .collect(),
        _ => (31..=34)
            .map(|n| format!("{}\u{1F600}{}", run('\u{1F600}', n), run('z', 3)))
            .collect(),
    }
}

/// How [`edge_string_table`] spells characters above U+FFFF in the log: as UTF-8 (Spark,
/// delta-rs), as escaped surrogate pairs in the commit's lines (Python's `json.dumps`), or
/// escaped inside the stats text (stats made by `json.dumps` and embedded as a string).
#[derive(Clone, Copy, Debug)]
enum Spelling {
    Utf8,
    EscapedLine,
    EscapedStats,
}

/// `json` with every character above U+FFFF written as an escaped UTF-16 surrogate pair, as
/// Python's `json.dumps` writes it (valid inside JSON strings, where those characters are).
pub(crate) fn escape_supplementary(json: &str) -> String {
    let mut out = String::new();
    for c in json.chars() {
        if u32::from(c) > 0xFFFF {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A table partitioned by `p` of 4 files of `s` strings: per partition, one file of ASCII
/// strings and one of [`edge_strings`], with `s`'s stats written as `style` says and the
/// log spelled as `spelling` says.
fn edge_string_table(dir: &Path, name: &str, style: StringStats, spelling: Spelling) -> String {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();
    let schema = std::sync::Arc::new(Schema::new(vec![
        Field::new("id", ArrowType::Int64, false),
        Field::new("s", ArrowType::Utf8, true),
    ]));
    let schema_string = json!({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": false, "metadata": {}},
        {"name": "s", "type": "string", "nullable": true, "metadata": {}},
        {"name": "p", "type": "string", "nullable": true, "metadata": {}},
    ]})
    .to_string();
    let mut lines = vec![
        json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}).to_string(),
        json!({"metaData": {
            "id": "00000000-0000-0000-0000-000000000043",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string,
            "partitionColumns": ["p"],
            "configuration": {},
            "createdTime": 0,
        }})
        .to_string(),
    ];
    let cut = |s: &str, upper: bool| -> String {
        let chars: Vec<char> = s.chars().collect();
        match style {
            StringStats::Exact => s.to_string(),
            StringStats::Cut if chars.len() <= 32 => s.to_string(),
            StringStats::Cut => {
                let mut out: String = chars[..32].iter().collect();
                if upper {
                    out.push('\u{10FFFF}');
                }
                out
            }
        }
    };
    let mut id = 0i64;
    for f in 0..8usize {
        let strings: Vec<String> = if f % 2 == 0 {
            (0..5).map(|i| format!("k{f}{i}")).collect()
        } else {
            edge_strings(f / 2)
        };
        let n = strings.len();
        let ids: Vec<i64> = (id..id + i64::try_from(n).unwrap()).collect();
        id += i64::try_from(n).unwrap();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                std::sync::Arc::new(Int64Array::from(ids.clone())),
                std::sync::Arc::new(StringArray::from(strings.clone())),
            ],
        )
        .unwrap();
        let mut buffer = Vec::new();
        let mut w =
            deltalake::parquet::arrow::ArrowWriter::try_new(&mut buffer, schema.clone(), None)
                .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let partition = format!("p{}", f / 4);
        std::fs::create_dir_all(root.join(format!("p={partition}"))).unwrap();
        let path = format!("p={partition}/part-{f:05}.parquet");
        std::fs::write(root.join(&path), &buffer).unwrap();
        let lo = strings.iter().min().unwrap();
        let hi = strings.iter().max().unwrap();
        let stats = json!({
            "numRecords": n,
            "minValues": {"id": ids[0], "s": cut(lo, false)},
            "maxValues": {"id": ids[n - 1], "s": cut(hi, true)},
            "nullCount": {"id": 0, "s": 0},
        })
        .to_string();
        let stats = match spelling {
            Spelling::EscapedStats => escape_supplementary(&stats),
            _ => stats,
        };
        let line = json!({"add": {
            "path": path,
            "partitionValues": {"p": partition},
            "size": buffer.len(),
            "modificationTime": 0,
            "dataChange": true,
            "stats": stats,
        }})
        .to_string();
        lines.push(match spelling {
            Spelling::EscapedLine => escape_supplementary(&line),
            _ => line,
        });
    }
    std::fs::write(
        root.join("_delta_log").join(format!("{:020}.json", 0)),
        lines.join("\n"),
    )
    .unwrap();
    root.display().to_string()
}

/// Equality, range and `IN` predicates on every edge string and on its neighbours (a
/// character more or less, the next code point at the end).
fn edge_string_predicates() -> Vec<Predicate> {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let mut out = Vec::new();
    for kind in 0..4 {
        for s in edge_strings(kind) {
            let shorter: String = {
                let mut c: Vec<char> = s.chars().collect();
                c.pop();
                c.into_iter().collect()
            };
            let longer = format!("{s}\u{10FFFF}");
            for v in [&s, &shorter, &longer] {
                for op in ["=", ">=", "<=", ">", "<", "!="] {
                    out.push(Predicate::parse(&format!("s {op} {}", quote(v))).unwrap());
                }
            }
            out.push(Predicate::parse(&format!("s IN ({}, 'k00')", quote(&s))).unwrap());
            out.push(
                Predicate::parse(&format!("s BETWEEN {} AND {}", quote(&shorter), quote(&s)))
                    .unwrap(),
            );
        }
    }
    out
}

/// Pruning never skips a file holding a string whose characters from the 32nd on are U+10FFFF,
/// U+FFFF, U+D7FF or emoji (the stats' cut-off point), with the bounds read from the log's
/// JSON, from delta-rs' parsed stats, from a checkpoint, and from the stats this tool writes,
/// with the log spelling those characters as UTF-8 or as escaped surrogate pairs (issue 43:
/// a 40-character max of U+10FFFF, escaped as Python writes it, skipped the file holding it:
/// delta-rs' JSON reader decodes `\udbff\udfff` as U+FFFFF).
#[test]
fn truncated_and_near_maximal_string_bounds_never_skip_a_matching_file() {
    let dir = tempfile::tempdir().unwrap();
    let predicates = edge_string_predicates();
    let mut skipped = 0;
    let cases = [StringStats::Exact, StringStats::Cut]
        .into_iter()
        .flat_map(|style| {
            [
                Spelling::Utf8,
                Spelling::EscapedLine,
                Spelling::EscapedStats,
            ]
            .map(|s| (style, s))
        });
    for (style, spelling) in cases {
        let location = edge_string_table(
            dir.path(),
            &format!("{style:?}-{spelling:?}"),
            style,
            spelling,
        );
        let table = fixture::load(&location);
        // Log JSON and delta-rs' parsed columns give the same bounds.
        let column = ColumnRef::resolve(&table, &["s".to_string()]).unwrap();
        let prefix = delta_layout::pruning::string_prefix_length(&table);
        let parsed = delta_layout::pruning::column_bounds(&table, &column, prefix);
        for (file, bounds) in table.files.iter().zip(&parsed) {
            let json = delta_layout::pruning::FileBounds::of(&column, file, prefix);
            assert_eq!(bounds, &json, "{style:?}: {}", file.path);
        }
        skipped += check(&table, &predicates).0;
        // The same table read from a checkpoint. (Not of a log spelling the characters in its
        // lines as escapes: delta-rs' checkpoint stores what its JSON reader misreads there,
        // for every reader, which is why this tool writes none of such a log.)
        if !matches!(spelling, Spelling::EscapedLine) {
            fixture::runtime().block_on(async {
                let t = deltalake::open_table(table.location.clone()).await.unwrap();
                deltalake::checkpoints::create_checkpoint(&t, None)
                    .await
                    .unwrap();
            });
            let table = fixture::load(&location);
            skipped += check(&table, &predicates).0;
        }
        // Rewritten by this tool, bounds from the stats it writes.
        let options = delta_layout::optimize::OptimizeOptions::default().with_plan(
            delta_layout::plan::PlanOptions::default().with_target_file_bytes(Some(1 << 30)),
        );
        fixture::optimize(&location, &options).unwrap();
        let table = fixture::load(&location);
        assert_eq!(table.files.len(), 2, "{style:?}: one file per partition");
        skipped += check(&table, &predicates).0;
    }
    assert!(skipped > 100, "the check must see skipped files: {skipped}");
}

/// Partition values and paths with characters above U+FFFF, the log spelling them as
/// escaped surrogate pairs (as Python writes JSON): a compaction writes the partition values
/// the log holds, as Spark reads them, not the ones delta-rs' JSON reader decodes (it reads
/// `x\\ud840\\udc00` as U+10000 where the log says U+20000), and pruning on them keeps the files
/// (issue 43: found while fixing the U+10FFFF bounds).
#[test]
fn partition_values_spelled_as_escaped_surrogates_are_kept_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("escaped-partitions");
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();
    let schema = std::sync::Arc::new(Schema::new(vec![Field::new("s", ArrowType::Utf8, true)]));
    let schema_string = json!({"type": "struct", "fields": [
        {"name": "s", "type": "string", "nullable": true, "metadata": {}},
        {"name": "p", "type": "string", "nullable": true, "metadata": {}},
    ]})
    .to_string();
    let mut lines = vec![
        json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}).to_string(),
        json!({"metaData": {
            "id": "00000000-0000-0000-0000-000000000044",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string,
            "partitionColumns": ["p"],
            "configuration": {"delta.checkpointInterval": "1"},
            "createdTime": 0,
        }})
        .to_string(),
    ];
    let values = ["x\u{20000}", "\u{10FFFF}", "\u{1F600}\u{E0001}"];
    for (k, value) in values.iter().enumerate() {
        // The directory as Spark names it, and its path in the log percent-encoded, two files
        // each.
        let encoded: String = format!(
            "p={}",
            percent_encoding::utf8_percent_encode(value, percent_encoding::NON_ALPHANUMERIC)
        );
        std::fs::create_dir_all(root.join(format!("p={value}"))).unwrap();
        for f in 0..2 {
            let strings = vec![format!("{value}-{f}"), format!("v{k}{f}")];
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![std::sync::Arc::new(StringArray::from(strings.clone()))],
            )
            .unwrap();
            let mut buffer = Vec::new();
            let mut w =
                deltalake::parquet::arrow::ArrowWriter::try_new(&mut buffer, schema.clone(), None)
                    .unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
            let name = format!("{encoded}/part-{f}-\u{20001}.parquet");
            std::fs::write(
                root.join(format!("p={value}/part-{f}-\u{20001}.parquet")),
                &buffer,
            )
            .unwrap();
            let stats = json!({
                "numRecords": 2,
                "minValues": {"s": strings.iter().min().unwrap()},
                "maxValues": {"s": strings.iter().max().unwrap()},
                "nullCount": {"s": 0},
            });
            let line = json!({"add": {
                "path": name,
                "partitionValues": {"p": value},
                "size": buffer.len(),
                "modificationTime": 0,
                "dataChange": true,
                "stats": stats.to_string(),
            }})
            .to_string();
            lines.push(escape_supplementary(&line));
        }
    }
    std::fs::write(
        root.join("_delta_log").join(format!("{:020}.json", 0)),
        lines.join("\n"),
    )
    .unwrap();
    let location = root.display().to_string();
    let table = fixture::load(&location);
    let mut seen: Vec<String> = table
        .files
        .iter()
        .map(|f| f.partition_values[0].clone().unwrap())
        .collect();
    seen.sort();
    seen.dedup();
    let mut expected: Vec<String> = values.iter().map(ToString::to_string).collect();
    expected.sort();
    assert_eq!(seen, expected, "the partition values the log holds");
    // Pruning on the partition values and the strings keeps the files holding them.
    let predicates: Vec<Predicate> = values
        .iter()
        .flat_map(|v| {
            [
                format!("p = '{v}'"),
                format!("s = '{v}-1'"),
                format!("s >= '{v}-1'"),
            ]
        })
        .map(|p| Predicate::parse(&p).unwrap())
        .collect();
    let (skipped, _) = check(&table, &predicates);
    assert!(skipped > 0);
    // A compaction commits the exact partition values, and the rows it read.
    let options = delta_layout::optimize::OptimizeOptions::default().with_plan(
        delta_layout::plan::PlanOptions::default().with_target_file_bytes(Some(1 << 30)),
    );
    fixture::optimize(&location, &options).unwrap();
    let commit =
        std::fs::read_to_string(root.join("_delta_log").join(format!("{:020}.json", 1))).unwrap();
    let mut added: Vec<String> = Vec::new();
    let mut removed = 0;
    for line in commit.lines() {
        let action: Value = serde_json::from_str(line).unwrap();
        if let Some(add) = action.get("add") {
            added.push(add["partitionValues"]["p"].as_str().unwrap().to_string());
        }
        if let Some(remove) = action.get("remove") {
            let path = remove["path"].as_str().unwrap();
            assert!(path.ends_with("-\u{20001}.parquet"), "{path}");
            removed += 1;
        }
    }
    added.sort();
    assert_eq!(added, expected);
    assert_eq!(removed, 6);
    // Each remove spells its path as its add does, so readers that misread the add misread
    // the remove alike and pair them.
    assert_eq!(
        commit.matches("\\ud840\\udc01.parquet").count(),
        6,
        "{commit}"
    );
    // Version 1 is a checkpoint version (interval 1), but a checkpoint written from this log
    // would store misread strings: none is written.
    let checkpoints = std::fs::read_dir(root.join("_delta_log"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("checkpoint")
        })
        .count();
    assert_eq!(checkpoints, 0);
    let table = fixture::load(&location);
    let (_, checks) = check(&table, &predicates);
    assert_eq!(checks, 9 * 3);
    let rows = read_rows(
        &table,
        &[ColumnRef::resolve(&table, &["s".to_string()]).unwrap()],
    );
    let mut strings: Vec<String> = rows
        .iter()
        .flat_map(|r| r.columns["s"].iter().map(|v| v.clone().unwrap()))
        .collect();
    strings.sort();
    let mut expected_rows: Vec<String> = values
        .iter()
        .enumerate()
        .flat_map(|(k, v)| (0..2).flat_map(move |f| [format!("{v}-{f}"), format!("v{k}{f}")]))
        .collect();
    expected_rows.sort();
    assert_eq!(strings, expected_rows);
}

/// The row filter and min/max pruning bind through one binder: the same columns in the same
/// slots (names matched case-insensitively, each column once), the same refusals (an empty
/// `IN`, a literal of the wrong type, a column without min/max stats), and the same rows
/// kept: on a real table, a file pruning skips holds no row the filter keeps.
#[test]
fn row_filter_and_pruning_bind_alike() {
    use delta_layout::filter::RowFilter;
    use delta_layout::pruning::Pruner;
    let fixture = Fixture::copy("http-requests-delta-rs");
    let table = fixture::load(&fixture.location());
    let path = |name: &str| vec![name.to_string()];
    let predicate = Predicate::parse(
        "edgeresponsestatus >= 400 AND ClientRequestMethod NOT IN ('GET') \
         OR EdgeResponseStatus BETWEEN 200 AND 299 AND ClientIP IS NOT NULL",
    )
    .unwrap();
    let pruner = Pruner::new(&table, &predicate).unwrap();
    let filter = RowFilter::new(&table, &predicate).unwrap();
    let names =
        |columns: &[ColumnRef]| -> Vec<String> { columns.iter().map(|c| c.name.clone()).collect() };
    assert_eq!(
        names(pruner.columns()),
        vec!["EdgeResponseStatus", "ClientRequestMethod", "ClientIP"]
    );
    assert_eq!(names(filter.columns()), names(pruner.columns()));

    let empty_in = Predicate::In {
        column: path("ClientIP"),
        values: Vec::new(),
        negated: false,
    };
    let wrong_type = Predicate::Compare {
        column: path("EdgeResponseStatus"),
        op: CompareOp::Eq,
        value: Literal::String("four hundred".into()),
    };
    let missing = Predicate::IsNull {
        column: path("no_such_column"),
        negated: false,
    };
    for bad in [&empty_in, &wrong_type, &missing] {
        let from_pruner = Pruner::new(&table, bad).unwrap_err().to_string();
        let from_filter = RowFilter::new(&table, bad).unwrap_err().to_string();
        assert_eq!(from_pruner, from_filter, "{bad}");
    }
    assert!(
        Pruner::new(&table, &empty_in)
            .unwrap_err()
            .to_string()
            .contains("IN needs at least one value")
    );

    // What the filter keeps lies only in files pruning keeps.
    let analysis = Analysis::new(&table, None).unwrap();
    let keep = analysis.may_match(&predicate).unwrap();
    let rt = fixture::runtime();
    let reader = {
        let _guard = rt.enter();
        FileReader::new(&table).unwrap()
    };
    let mut matched = 0usize;
    for (file, kept) in table.files.iter().zip(&keep) {
        let mut rows = 0;
        for batch in reader.read(file).unwrap() {
            let values = filter.evaluate(&batch, &file.partition_values).unwrap();
            rows += values.iter().filter(|v| *v == Some(true)).count();
        }
        assert!(*kept || rows == 0, "{} skipped with {rows} rows", file.path);
        matched += rows;
    }
    assert!(matched > 0, "the predicate must match rows");
}
