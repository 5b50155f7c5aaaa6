//! Clustering along Z-order and Hilbert curves: rows kept on every real table, layout
//! quality on synthetic data, errors naming the column.

#![expect(
    clippy::cast_precision_loss,
    reason = "row counts and spans as fractions"
)]

use std::sync::Arc;

use delta_layout::curve::Curve;
use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::PlanOptions;
use delta_layout::plan::cluster::ClusterRequest;
use deltalake::arrow::array::{Float64Array, Int64Array, RecordBatch, StringArray};
use deltalake::arrow::datatypes::{DataType, Field, Schema};
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::Value;

use crate::fixture::{Fixture, load, optimize, rows, synthetic_table};

/// The bytes a rewrite of the table at `location` is expected to write: its live bytes times
/// the output ratio a dry run measures (every file planned).
fn output_bytes(location: &str) -> u64 {
    let dry = OptimizeOptions::default().with_dry_run(true).with_plan(
        PlanOptions::default()
            .with_target_file_bytes(Some(1 << 20))
            .with_rewrite_all(true),
    );
    let outcome = optimize(location, &dry).unwrap();
    outcome.plan.bins().map(|b| b.expected_output_bytes).sum()
}

/// The bytes a clustering of the table at `location` along `curve` over `columns` is
/// expected to write: its live bytes times the output ratio its dry run measures on the
/// sample sorted along the curve.
fn clustered_output_bytes(location: &str, curve: Curve, columns: &[&str]) -> u64 {
    let dry = clustering(curve, columns, Some(1 << 20)).with_dry_run(true);
    let outcome = optimize(location, &dry).unwrap();
    outcome.plan.bins().map(|b| b.expected_output_bytes).sum()
}

fn clustering(curve: Curve, columns: &[&str], target: Option<u64>) -> OptimizeOptions {
    OptimizeOptions::default().with_plan(
        PlanOptions::default()
            .with_target_file_bytes(target)
            .with_clustering(Some(ClusterRequest::new(
                curve,
                columns.iter().map(ToString::to_string).collect(),
            ))),
    )
}

/// Every real table with an orderable data column keeps its rows when clustered on up to
/// two of them, with both curves, into several files; a second run is a no-op.
#[test]
fn clustering_keeps_rows_on_every_real_table() {
    use deltalake::kernel::{DataType as D, PrimitiveType as P};
    let mut clustered = 0;
    for (i, name) in crate::rewrite::ACCEPTED.iter().enumerate() {
        let fixture = Fixture::copy(name);
        let table = load(&fixture.location());
        let columns: Vec<String> = table
            .data_leaf_columns()
            .into_iter()
            .filter(|l| {
                // A collated string is no curve column (refused by name: features.rs).
                delta_layout::table::schema::collation_of(&table.schema, &l.logical).is_none()
                    && matches!(
                        l.data_type,
                        D::Primitive(
                            P::Integer
                                | P::Long
                                | P::String
                                | P::Double
                                | P::Date
                                | P::Timestamp
                                | P::TimestampNtz
                                | P::Decimal(_)
                                | P::Boolean
                                | P::Short
                                | P::Byte
                        )
                    )
            })
            .map(|l| l.display_name())
            .take(2)
            .collect();
        if columns.is_empty() {
            continue;
        }
        let curve = if i % 2 == 0 {
            Curve::Hilbert
        } else {
            Curve::ZOrder
        };
        let total = table.totals().bytes;
        let target = (total / 3).max(1);
        let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
        crate::rewrite::check_fixture(
            name,
            &fixture,
            &clustering(curve, &columns, Some(target)),
            true,
        );
        clustered += 1;
    }
    assert!(clustered >= 15, "only {clustered} tables clustered");
}

/// Average per-file span of `column` (max - min over the table's range), from the log.
pub(crate) fn average_span(location: &str, column: &str) -> f64 {
    let table = load(location);
    let path = vec![column.to_string()];
    let bounds: Vec<(f64, f64)> = table
        .files
        .iter()
        .map(|f| {
            let stats = f.stats.as_ref().expect("written files have stats");
            let as_f64 = |v: &Value| v.as_f64().unwrap();
            (
                as_f64(stats.min(&path).unwrap()),
                as_f64(stats.max(&path).unwrap()),
            )
        })
        .collect();
    let lo = bounds.iter().map(|b| b.0).fold(f64::INFINITY, f64::min);
    let hi = bounds.iter().map(|b| b.1).fold(f64::NEG_INFINITY, f64::max);
    let count = f64::from(u32::try_from(bounds.len()).unwrap());
    bounds.iter().map(|(a, b)| (b - a) / (hi - lo)).sum::<f64>() / count
}

/// Two independent uniform columns, 64 output files: each file covers at most a quarter of
/// each column's range on average (random order covers about all of it).
#[test]
fn clustered_files_cover_compact_boxes() {
    let mut rng = StdRng::seed_from_u64(9);
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("y", DataType::Int64, true),
        Field::new("skewed", DataType::Float64, true),
        Field::new("w", DataType::Int64, true),
    ]));
    let files: Vec<Vec<RecordBatch>> = (0..16)
        .map(|_| {
            let n = 8_000;
            let x: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1000.0)).collect();
            let y: Vec<i64> = (0..n).map(|_| rng.random_range(-50_000..50_000)).collect();
            // Log-normal: most values small, a long tail.
            let skewed: Vec<f64> = (0..n)
                .map(|_| (rng.random_range(-3.0f64..3.0) * 2.0).exp())
                .collect();
            let w: Vec<i64> = (0..n).map(|_| rng.random_range(0..1_000_000_000)).collect();
            vec![
                RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(Float64Array::from(x)),
                        Arc::new(Int64Array::from(y)),
                        Arc::new(Float64Array::from(skewed)),
                        Arc::new(Int64Array::from(w)),
                    ],
                )
                .unwrap(),
            ]
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let source = synthetic_table(dir.path(), "uniform", &files);
    // Output is smaller than the input (zstd against uncompressed files): targets are set
    // by the bytes the rows write.
    let total = output_bytes(&source.display().to_string());
    for curve in [Curve::ZOrder, Curve::Hilbert] {
        let copy = dir.path().join(format!("{curve:?}"));
        copy_table(&source, &copy);
        let location = copy.display().to_string();
        let before = rows(&location);
        // About 64 files.
        let target = total / 64;
        let outcome = optimize(&location, &clustering(curve, &["x", "y"], Some(target))).unwrap();
        assert!(
            outcome.files_added >= 48,
            "{curve:?}: {} files",
            outcome.files_added
        );
        assert_eq!(rows(&location), before);
        for column in ["x", "y"] {
            let span = average_span(&location, column);
            assert!(
                span <= 0.25,
                "{curve:?}: average span of {column} is {span:.3}"
            );
        }
        // About the target size: none over 1.5x, at most one remainder below half.
        let sizes: Vec<u64> = load(&location).files.iter().map(|f| f.size_bytes).collect();
        assert!(
            sizes.iter().all(|&s| s * 2 <= target * 3),
            "{curve:?}: {sizes:?} vs {target}"
        );
        assert!(
            sizes.iter().filter(|&&s| s * 2 < target).count() <= 1,
            "{curve:?}: {sizes:?} vs {target}"
        );

        // Four columns, 64 files: at most half of each column's range.
        let copy = dir.path().join(format!("{curve:?}-4"));
        copy_table(&source, &copy);
        let location = copy.display().to_string();
        // Sorted rows compress better than the input order the compaction estimate above
        // measured: sized by the clustering plan's own estimate (its sample sorted).
        let sorted = clustered_output_bytes(&location, curve, &["x", "y", "skewed", "w"]);
        let sixty_four = sorted.div_ceil(64);
        let outcome = optimize(
            &location,
            &clustering(curve, &["x", "y", "skewed", "w"], Some(sixty_four)),
        )
        .unwrap();
        assert_eq!(
            outcome.plan.bins().next().unwrap().expected_output_files,
            64
        );
        assert_eq!(rows(&location), before);
        for column in ["x", "y", "w"] {
            let span = average_span(&location, column);
            assert!(
                span <= 0.5,
                "{curve:?} on 4 columns: average span of {column} is {span:.3}"
            );
        }
    }
    // A log-normally skewed column with a uniform one: in rank terms both stay compact.
    let copy = dir.path().join("skewed");
    copy_table(&source, &copy);
    let location = copy.display().to_string();
    optimize(
        &location,
        &clustering(Curve::Hilbert, &["x", "skewed"], Some(total.div_ceil(64))),
    )
    .unwrap();
    for column in ["x", "skewed"] {
        let span = rank_span(&location, column);
        assert!(
            span <= 0.25,
            "x and skewed: average rank span of {column} is {span:.3}"
        );
    }
    // Clustered on another column, files cover nearly all of x's range: the spans above
    // come from the layout, not from the data.
    let copy = dir.path().join("other-column");
    copy_table(&source, &copy);
    let location = copy.display().to_string();
    optimize(
        &location,
        &clustering(Curve::Hilbert, &["skewed"], Some(total / 80)),
    )
    .unwrap();
    assert!(
        average_span(&location, "x") > 0.9,
        "{}",
        average_span(&location, "x")
    );
    // The skewed column itself splits by rows, not by value range: most files are narrow.
    let span = average_span(&location, "skewed");
    assert!(span < 0.1, "average span of the skewed column is {span:.3}");
}

fn copy_table(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in walk(from) {
        let rel = entry.strip_prefix(from).unwrap();
        let target = to.join(rel);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&entry, target).unwrap();
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
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

/// Strings sharing a 40-character prefix still cluster (ranks, not raw bytes).
#[test]
fn long_shared_string_prefixes_still_cluster() {
    let mut rng = StdRng::seed_from_u64(5);
    let schema = Arc::new(Schema::new(vec![
        Field::new("s", DataType::Utf8, true),
        Field::new("n", DataType::Int64, true),
    ]));
    let prefix = "https://example.com/a/very/long/common/pre";
    let files: Vec<Vec<RecordBatch>> = (0..8)
        .map(|_| {
            let n = 5_000;
            let s: Vec<String> = (0..n)
                .map(|_| format!("{prefix}{:08}", rng.random_range(0..100_000_000)))
                .collect();
            let v: Vec<i64> = (0..n).map(|_| rng.random_range(0..1_000_000)).collect();
            vec![
                RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(StringArray::from(s)),
                        Arc::new(Int64Array::from(v)),
                    ],
                )
                .unwrap(),
            ]
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let root = synthetic_table(dir.path(), "prefix", &files);
    let location = root.display().to_string();
    let total = output_bytes(&location);
    let before = rows(&location);
    let outcome = optimize(
        &location,
        &clustering(Curve::Hilbert, &["s", "n"], Some(total / 64)),
    )
    .unwrap();
    assert!(outcome.files_added >= 48, "{} files", outcome.files_added);
    assert_eq!(rows(&location), before);
    // The log's string bounds are cut to 32 characters (all equal here), so spans come from
    // the files themselves, in rank terms: s did not drown n, and s itself clusters.
    for column in ["s", "n"] {
        let span = rank_span(&location, column);
        assert!(span <= 0.25, "average rank span of {column} is {span:.3}");
    }
}

/// A value of a column, for rank spans.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Value64 {
    Number(f64),
    Text(String),
}

/// Average per-file span of `column` in rank terms: for each active file, the share of all
/// rows whose value lies between the file's min and max, read from the data files.
fn rank_span(location: &str, column: &str) -> f64 {
    use deltalake::arrow::array::AsArray;
    use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let table = load(location);
    let mut per_file: Vec<Vec<Value64>> = Vec::new();
    for file in &table.files {
        let bytes = std::fs::read(std::path::Path::new(location).join(&file.path)).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
            .unwrap()
            .build()
            .unwrap();
        let mut values = Vec::new();
        for batch in reader {
            let batch = batch.unwrap();
            let array = batch.column_by_name(column).unwrap();
            match array.data_type() {
                DataType::Utf8 => values.extend(
                    array
                        .as_string::<i32>()
                        .iter()
                        .flatten()
                        .map(|v| Value64::Text(v.to_string())),
                ),
                DataType::Float64 => values.extend(
                    array
                        .as_primitive::<deltalake::arrow::datatypes::Float64Type>()
                        .iter()
                        .flatten()
                        .map(Value64::Number),
                ),
                DataType::Int64 => values.extend(
                    array
                        .as_primitive::<deltalake::arrow::datatypes::Int64Type>()
                        .iter()
                        .flatten()
                        .map(|v| Value64::Number(v as f64)),
                ),
                other => panic!("rank_span: unsupported {other}"),
            }
        }
        per_file.push(values);
    }
    let mut all: Vec<Value64> = per_file.iter().flatten().cloned().collect();
    all.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = all.len() as f64;
    let spans: Vec<f64> = per_file
        .iter()
        .filter(|v| !v.is_empty())
        .map(|values| {
            let lo = values
                .iter()
                .min_by(|a, b| a.partial_cmp(b).unwrap())
                .unwrap();
            let hi = values
                .iter()
                .max_by(|a, b| a.partial_cmp(b).unwrap())
                .unwrap();
            let lo_rank = all.partition_point(|v| v < lo);
            let hi_rank = all.partition_point(|v| v <= hi);
            (hi_rank - lo_rank) as f64 / n
        })
        .collect();
    spans.iter().sum::<f64>() / spans.len() as f64
}

#[test]
fn bad_clustering_columns_are_named() {
    let fixture = Fixture::copy("partitioned-string-null");
    let location = fixture.location();
    let listing = fixture.listing();
    let case = |columns: &[&str], needles: &[&str]| {
        let err = optimize(&location, &clustering(Curve::ZOrder, columns, None))
            .unwrap_err()
            .to_string();
        for needle in needles {
            assert!(
                err.contains(needle),
                "{columns:?}: '{needle}' not in: {err}"
            );
        }
    };
    case(&["letter"], &["'letter'", "partition column"]);
    case(&["nope"], &["'nope'", "does not exist", "number"]);
    case(&["number", "number"], &["'number'", "twice"]);
    // The library names the setting in its own words; the CLI words it as `--zorder`.
    case(&[], &["the zorder columns", "at least one"]);
    case(&["number"; 7], &["the zorder columns", "at most 6"]);
    assert_eq!(fixture.listing(), listing);

    let nested = Fixture::copy("all-types-nested");
    let err = optimize(
        &nested.location(),
        &clustering(Curve::Hilbert, &["nested_struct"], None),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("'nested_struct'") && err.contains("struct"),
        "{err}"
    );
    let err = optimize(
        &nested.location(),
        &clustering(Curve::Hilbert, &["array_of_prims"], None),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("'array_of_prims'") && err.contains("no order"),
        "{err}"
    );
}

/// Per-file (rows, min and max of each column) of the active files, sorted: the layout,
/// independent of file names.
fn layout(location: &str, columns: &[&str]) -> Vec<String> {
    let table = load(location);
    let mut out: Vec<String> = table
        .files
        .iter()
        .map(|f| {
            let stats = f.stats.as_ref().unwrap();
            let mut line = format!("{}", stats.num_records.unwrap());
            for c in columns {
                let path = vec![(*c).to_string()];
                line.push_str(&format!(
                    " {c}:{}..{}",
                    stats.min(&path).unwrap(),
                    stats.max(&path).unwrap()
                ));
            }
            line
        })
        .collect();
    out.sort();
    out
}

/// Each data file's rows in file order (each row its values as text, joined by `|`), the
/// files sorted: what two runs that write the same files have in common.
fn ordered_files(location: &str) -> Vec<Vec<String>> {
    use deltalake::arrow::util::display::{ArrayFormatter, FormatOptions};
    let options = FormatOptions::default();
    let mut files: Vec<Vec<String>> = load(location)
        .files
        .iter()
        .map(|file| {
            let bytes = std::fs::read(std::path::Path::new(location).join(&file.path)).unwrap();
            let reader =
                deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                    bytes::Bytes::from(bytes),
                )
                .unwrap()
                .build()
                .unwrap();
            let mut rows = Vec::new();
            for batch in reader {
                let batch = batch.unwrap();
                let formatters: Vec<_> = batch
                    .columns()
                    .iter()
                    .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
                    .collect();
                rows.extend((0..batch.num_rows()).map(|row| {
                    formatters
                        .iter()
                        .map(|f| f.value(row).to_string())
                        .collect::<Vec<_>>()
                        .join("|")
                }));
            }
            rows
        })
        .collect();
    files.sort();
    files
}

/// `(files, batches, rows)`: that many files of that many batches of that many rows, with
/// columns `a` (long, each value from `a`), `b` (double, uniform in [-1, 1)) and `c`
/// (string, from `c` and the row's number in its batch), drawn from `rng` column by column;
/// and their Arrow memory, bytes.
fn abc_files(
    rng: &mut StdRng,
    (files, batches, rows): (usize, usize, usize),
    mut a: impl FnMut(&mut StdRng) -> Option<i64>,
    mut c: impl FnMut(&mut StdRng, usize) -> Option<String>,
) -> (Vec<Vec<RecordBatch>>, u64) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Float64, true),
        Field::new("c", DataType::Utf8, true),
    ]));
    let files: Vec<Vec<RecordBatch>> = (0..files)
        .map(|_| {
            (0..batches)
                .map(|_| {
                    let a: Vec<Option<i64>> = (0..rows).map(|_| a(rng)).collect();
                    let b: Vec<f64> = (0..rows).map(|_| rng.random_range(-1.0..1.0)).collect();
                    let c: Vec<Option<String>> = (0..rows).map(|i| c(rng, i)).collect();
                    RecordBatch::try_new(
                        schema.clone(),
                        vec![
                            Arc::new(Int64Array::from(a)),
                            Arc::new(Float64Array::from(b)),
                            Arc::new(StringArray::from(c)),
                        ],
                    )
                    .unwrap()
                })
                .collect()
        })
        .collect();
    let bytes = files
        .iter()
        .flatten()
        .map(|b| b.get_array_memory_size() as u64)
        .sum();
    (files, bytes)
}

/// A memory budget of 1/8 or 1/64 of the data clusters out of core, each range in pieces,
/// and so does a budget that keeps the rows in memory but cuts their ranges in small pieces
/// (1/256 of it): each writes exactly the files an unbounded run writes, row for row,
/// leaving no spill file behind.
#[test]
fn out_of_core_clustering_writes_the_same_files() {
    let mut rng = StdRng::seed_from_u64(21);
    let (files, in_memory_bytes) = abc_files(
        &mut rng,
        (12, 3, 4_000),
        |rng| rng.random_bool(0.95).then(|| rng.random_range(0..1_000)),
        |rng, i| Some(format!("row-{i}-{}", rng.random_range(0..50))),
    );
    let dir = tempfile::tempdir().unwrap();
    let source = synthetic_table(dir.path(), "source", &files);
    let total = load(&source.display().to_string()).totals().bytes;
    let mut layouts = Vec::new();
    // A budget of 1/8 cuts each range (about 1/10 of the rows) into about 4 pieces sorted
    // one at a time, 1/64 into about 26. In memory, a budget of 4 times the rows cuts each
    // range into about 6 pieces (of 1/256 of the budget) sorted and gathered apart.
    for (name, limit, spilled) in [
        ("unbounded", None, false),
        ("in memory, small pieces", Some(in_memory_bytes * 4), false),
        ("bounded", Some(in_memory_bytes / 8), true),
        ("tiny", Some(in_memory_bytes / 64), true),
    ] {
        let copy = dir.path().join(name);
        copy_table(&source, &copy);
        let location = copy.display().to_string();
        let spill = dir.path().join(format!("spill-{name}"));
        std::fs::create_dir_all(&spill).unwrap();
        let before = rows(&location);
        let options = clustering(Curve::ZOrder, &["a", "b"], Some(total / 10))
            .with_memory_limit(limit)
            .with_spill_directory(Some(spill.clone()));
        let outcome = optimize(&location, &options).unwrap();
        assert!(
            outcome.files_added >= 5,
            "{name}: {} files",
            outcome.files_added
        );
        assert_eq!(outcome.bins_spilled, u64::from(spilled), "{name}");
        assert_eq!(rows(&location), before, "{name}");
        assert_eq!(
            std::fs::read_dir(&spill).unwrap().count(),
            0,
            "{name}: spill files left"
        );
        layouts.push((layout(&location, &["a", "b"]), ordered_files(&location)));
    }
    assert_eq!(
        layouts[0], layouts[1],
        "in-memory run in small pieces wrote other files"
    );
    assert_eq!(layouts[0], layouts[2], "out-of-core run wrote other files");
    assert_eq!(
        layouts[0], layouts[3],
        "out-of-core run in small pieces wrote other files"
    );
}

/// A piece that no cut can split (nine rows in ten share one value of the clustering
/// column) and that passes the size a piece is joined at is gathered from its slices; the
/// same rows in pieces small enough to join are gathered from one joined batch. Both write
/// exactly the files of each other, row for row, in order, with every row kept.
#[test]
fn a_piece_of_one_heavy_key_is_gathered_from_its_slices_to_the_same_files() {
    let mut rng = StdRng::seed_from_u64(40);
    let (files, in_memory_bytes) = abc_files(
        &mut rng,
        (8, 4, 10_000),
        |rng| {
            if rng.random_bool(0.9) {
                Some(7)
            } else {
                rng.random_bool(0.95).then(|| rng.random_range(0..1_000))
            }
        },
        |rng, i| {
            rng.random_bool(0.9)
                .then(|| format!("value-{i}-{}", rng.random_range(0..500)))
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let source = synthetic_table(dir.path(), "source", &files);
    let total = load(&source.display().to_string()).totals().bytes;
    let mut written = Vec::new();
    // Unbounded, a piece is up to 16 MiB of rows and joined up to four times that: the
    // whole table (320,000 rows, a few MiB) is less. At 4 times the rows' memory a piece is
    // 1/64 of the rows, raised to the 32,768 rows of a gather call, and one is joined up to
    // the bytes of 131,072 average rows: the heavy value's piece (nine tenths of the rows,
    // about 288,000) is gathered from its slices.
    for (name, limit) in [("joined", None), ("from slices", Some(in_memory_bytes * 4))] {
        let copy = dir.path().join(name);
        copy_table(&source, &copy);
        let location = copy.display().to_string();
        let before = rows(&location);
        let options = clustering(Curve::ZOrder, &["a"], Some(total / 4)).with_memory_limit(limit);
        let outcome = optimize(&location, &options).unwrap();
        assert_eq!(outcome.bins_spilled, 0, "{name}");
        assert!(
            outcome.files_added >= 2,
            "{name}: {} files",
            outcome.files_added
        );
        assert_eq!(rows(&location), before, "{name}");
        written.push(ordered_files(&location));
    }
    assert_eq!(
        written[0], written[1],
        "a piece gathered from its slices wrote other files"
    );
}

/// Cubes, size-tiered: after a small append a re-run clusters only the new files (a new
/// cube) and keeps the larger cube; the next append merges the small cube (no larger than the
/// new files) but still keeps the large one; an append as large as the table merges
/// everything; a sealed cube is never merged; `--full` rewrites everything. Every run keeps
/// the rows, and `--dry-run`'s upkeep says what each cube became.
#[test]
fn incremental_clustering_merges_cubes_by_size() {
    use delta_layout::plan::cluster::CubeFate;
    let fixture = Fixture::copy("multipart-checkpoint");
    let location = fixture.location();
    let table = load(&location);
    let target = table.totals().bytes / 3;
    let request = |cube_bytes: Option<u64>, full: bool| {
        let mut r = ClusterRequest::new(Curve::Hilbert, vec!["id".into()]);
        r.cube_bytes = cube_bytes;
        r.full = full;
        PlanOptions::default()
            .with_target_file_bytes(Some(target))
            .with_clustering(Some(r))
    };
    let run = |cube_bytes: Option<u64>, full: bool| {
        optimize(
            &location,
            &OptimizeOptions::default().with_plan(request(cube_bytes, full)),
        )
        .unwrap()
    };
    let upkeep = |cube_bytes: Option<u64>| {
        let plan = delta_layout::plan::plan(&load(&location), &request(cube_bytes, false)).unwrap();
        assert_eq!(plan.partitions.len(), 1);
        plan.partitions[0].upkeep.clone().unwrap()
    };
    let paths = || -> std::collections::BTreeSet<String> {
        load(&location)
            .files
            .iter()
            .map(|f| f.path.clone())
            .collect()
    };
    // The rows after each append (as its writer left them): every run must keep them.
    let mut expected;
    let append = |pick: &dyn Fn(usize) -> bool| fixture.copy_files(pick);

    assert_eq!(run(None, false).files_removed, 20);
    let big = paths();
    assert_eq!(run(None, false).version, None, "a second run is a no-op");

    // A small append: only the new file is clustered; the large cube is kept.
    assert_eq!(append(&|i| i == 0), 1);
    expected = sorted(rows(&location));
    let u = upkeep(None);
    assert_eq!((u.new_files, u.cubes.len()), (1, 1));
    assert_eq!(u.cubes[0].fate, CubeFate::Kept);
    assert_eq!(u.cubes[0].files, big.len());
    assert_eq!(run(None, false).files_removed, 1);
    assert_eq!(sorted(rows(&location)), expected);
    assert!(big.is_subset(&paths()), "the large cube was rewritten");
    let small: Vec<String> = paths().difference(&big).cloned().collect();

    // As much again: the small cube (one file's rows) merges, the large one stays.
    assert_eq!(append(&|i| i == 1), 1);
    expected = sorted(rows(&location));
    let u = upkeep(None);
    let fates: Vec<CubeFate> = u.cubes.iter().map(|c| c.fate).collect();
    assert_eq!(fates, [CubeFate::Merged, CubeFate::Kept], "{u:?}");
    assert!(u.cubes[0].bytes <= u.new_bytes && u.cubes[1].bytes > u.new_bytes + u.cubes[0].bytes);
    assert_eq!(
        usize::try_from(run(None, false).files_removed).unwrap(),
        1 + small.len()
    );
    assert_eq!(sorted(rows(&location)), expected);
    assert!(big.is_subset(&paths()), "the large cube was rewritten");

    // Sealed at one byte: only new files move, whatever their size.
    let before = paths();
    let added = append(&|_| true);
    expected = sorted(rows(&location));
    let u = upkeep(Some(1));
    assert!(u.cubes.iter().all(|c| c.fate == CubeFate::Sealed), "{u:?}");
    assert_eq!(
        usize::try_from(run(Some(1), false).files_removed).unwrap(),
        added
    );
    assert!(before.is_subset(&paths()), "a sealed cube was rewritten");
    assert_eq!(sorted(rows(&location)), expected);

    // An append as large as the table merges every cube.
    let files = load(&location).files.len();
    let added = append(&|_| true);
    expected = sorted(rows(&location));
    let u = upkeep(None);
    assert!(u.cubes.iter().all(|c| c.fate == CubeFate::Merged), "{u:?}");
    assert_eq!(
        usize::try_from(run(None, false).files_removed).unwrap(),
        files + added
    );
    assert_eq!(sorted(rows(&location)), expected);
    assert_eq!(run(None, false).version, None);

    // --full rewrites everything.
    let all = load(&location).files.len() as u64;
    assert_eq!(run(Some(1), true).files_removed, all);
    assert_eq!(sorted(rows(&location)), expected);
}

fn sorted(mut rows: Vec<String>) -> Vec<String> {
    rows.sort();
    rows
}

/// Appends a commit upgrading `fixture` to protocol 3/7 with `writer_features` and the given
/// extra actions (domain metadata, metadata).
fn upgrade(fixture: &Fixture, writer_features: &[&str], extra: &[Value]) {
    let mut actions = vec![
        serde_json::json!({"commitInfo": {"operation": "CLUSTER BY"}}),
        serde_json::json!({"protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": [],
            "writerFeatures": writer_features,
        }}),
    ];
    actions.extend(extra.iter().cloned());
    fixture.write_commit(fixture.next_version(), &actions);
}

/// A `clustering` table (PROTOCOL.md "Clustered Table") is clustered by its declared columns
/// without a curve option; files get `clusteringProvider`; files of another provider stay.
#[test]
fn declared_clustering_columns_are_the_default() {
    let fixture = Fixture::copy("multipart-checkpoint");
    let location = fixture.location();
    upgrade(
        &fixture,
        &["appendOnly", "invariants", "domainMetadata", "clustering"],
        &[serde_json::json!({"domainMetadata": {
            "domain": "delta.clustering",
            "configuration": "{\"clusteringColumns\":[[\"id\"]]}",
            "removed": false,
        }})],
    );
    let table = load(&location);
    assert_eq!(table.clustering_columns, Some(vec!["id".to_string()]));
    let before = rows(&location);
    let total = table.totals().bytes;

    let err = optimize(&location, &clustering(Curve::ZOrder, &["value"], None))
        .unwrap_err()
        .to_string();
    assert!(err.contains("declares clustering columns id"), "{err}");

    let options = OptimizeOptions::default()
        .with_plan(PlanOptions::default().with_target_file_bytes(Some(total / 3)));
    let outcome = optimize(&location, &options).unwrap();
    let c = outcome
        .plan
        .clustering
        .as_ref()
        .expect("clustered by the declared columns");
    assert_eq!(
        (c.curve, c.columns.clone()),
        (Curve::Hilbert, vec!["id".to_string()])
    );
    assert_eq!(rows(&location), before);
    let version = outcome.version.unwrap();
    let adds: Vec<Value> = fixture
        .commit(version)
        .into_iter()
        .filter_map(|a| a.get("add").cloned())
        .collect();
    assert!(adds.len() >= 2);
    for add in &adds {
        assert_eq!(add["clusteringProvider"], "delta-layout");
    }
    // Sorted by id along the curve: the files' id ranges do not overlap.
    let mut ranges: Vec<(i64, i64)> = load(&location)
        .files
        .iter()
        .map(|f| {
            let s = f.stats.as_ref().unwrap();
            let id = vec!["id".to_string()];
            (
                s.min(&id).unwrap().as_i64().unwrap(),
                s.max(&id).unwrap().as_i64().unwrap(),
            )
        })
        .collect();
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        assert!(pair[0].1 < pair[1].0, "{ranges:?}");
    }
    assert_eq!(optimize(&location, &options).unwrap().version, None);
}

/// Files another clustering implementation wrote are never reclustered.
#[test]
fn files_of_another_clustering_provider_are_left_alone() {
    let fixture = Fixture::copy("basic-with-checkpoint");
    let location = fixture.location();
    let table = load(&location);
    // Re-add 20 of the 30 files as clustered by "liquid" (what Databricks writes).
    let mut extra = vec![serde_json::json!({"domainMetadata": {
        "domain": "delta.clustering",
        "configuration": "{\"clusteringColumns\":[[\"id\"]]}",
        "removed": false,
    }})];
    for file in table.files.iter().take(20) {
        extra.push(serde_json::json!({"add": {
            "path": file.raw_path, "partitionValues": {}, "size": file.size_bytes,
            "modificationTime": 0, "dataChange": false, "clusteringProvider": "liquid",
            "stats": format!("{{\"numRecords\":{}}}", file.num_records().unwrap()),
        }}));
    }
    upgrade(
        &fixture,
        &["appendOnly", "invariants", "domainMetadata", "clustering"],
        &extra,
    );
    let before = rows(&location);
    let outcome = optimize(&location, &OptimizeOptions::default()).unwrap();
    assert_eq!(
        outcome.files_removed, 10,
        "only the 10 files without a provider"
    );
    assert_eq!(rows(&location), before);
    let after = load(&location);
    let liquid = after
        .files
        .iter()
        .filter(|f| f.clustering_provider.as_deref() == Some("liquid"))
        .count();
    assert_eq!(liquid, 20);
}

/// The older `liquid` feature declares its columns in a table property.
#[test]
fn liquid_property_declares_columns() {
    let fixture = Fixture::copy("multipart-checkpoint");
    let location = fixture.location();
    let table = load(&location);
    let metadata = serde_json::json!({"metaData": {
        "id": "liquid-test",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": serde_json::to_string(&table.schema).unwrap(),
        "partitionColumns": [],
        "configuration": {"delta.liquid.clusteringColumns": "id"},
        "createdTime": 0,
    }});
    upgrade(
        &fixture,
        &["appendOnly", "invariants", "liquid"],
        &[metadata],
    );
    let table = load(&location);
    assert_eq!(table.clustering_columns, Some(vec!["id".to_string()]));
    let before = rows(&location);
    let outcome = optimize(&location, &OptimizeOptions::default()).unwrap();
    assert_eq!(
        outcome.plan.clustering.unwrap().columns,
        vec!["id".to_string()]
    );
    assert_eq!(rows(&location), before);
}

/// A nested struct field (`a.b`) clusters like a top-level column.
#[test]
fn nested_fields_cluster() {
    let fixture = Fixture::copy("all-types-nested");
    let location = fixture.location();
    fixture.double_files();
    let before = rows(&location);
    let outcome = optimize(
        &location,
        &clustering(
            Curve::ZOrder,
            &["nested_struct.ac.aca", "IntegerType"],
            None,
        ),
    )
    .unwrap();
    assert_eq!(
        outcome.plan.clustering.unwrap().columns,
        vec![
            "nested_struct.ac.aca".to_string(),
            "IntegerType".to_string()
        ]
    );
    assert_eq!(outcome.files_removed, 2);
    assert_eq!(rows(&location), before);
}

/// Files come out near the target size (issue 15): input files written uncompressed by
/// another writer are rewritten as zstd, so bins and ranges sized by input bytes wrote files
/// of a fraction of the target. The plan measures the output ratio on a sample and sizes by
/// it: compaction and both curves write files within 20% of the target, apart from one
/// remainder, and keep every row.
#[test]
fn files_land_near_the_target_size() {
    let mut rng = StdRng::seed_from_u64(15);
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("y", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let files: Vec<Vec<RecordBatch>> = (0..48)
        .map(|_| {
            let n = 16_384;
            let x: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1000.0)).collect();
            let y: Vec<i64> = (0..n).map(|_| rng.random_range(0..1_000_000)).collect();
            let s: Vec<String> = (0..n)
                .map(|_| format!("category-{}", rng.random_range(0..40)))
                .collect();
            vec![
                RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(Float64Array::from(x)),
                        Arc::new(Int64Array::from(y)),
                        Arc::new(StringArray::from(s)),
                    ],
                )
                .unwrap(),
            ]
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let source = synthetic_table(dir.path(), "uncompressed", &files);
    let target: u64 = 2 << 20;
    for (name, curve) in [
        ("compact", None),
        ("zorder", Some(Curve::ZOrder)),
        ("hilbert", Some(Curve::Hilbert)),
    ] {
        let copy = dir.path().join(name);
        copy_table(&source, &copy);
        let location = copy.display().to_string();
        let before = rows(&location);
        let options = match curve {
            Some(curve) => clustering(curve, &["x", "y"], Some(target)),
            None => OptimizeOptions::default().with_plan(
                PlanOptions::default()
                    .with_target_file_bytes(Some(target))
                    .with_rewrite_all(true),
            ),
        };
        let outcome = optimize(&location, &options).unwrap();
        let ratio = outcome.plan.output_ratio;
        assert!(ratio > 0.1 && ratio < 0.9, "{name}: output ratio {ratio}");
        assert_eq!(rows(&location), before, "{name}");
        let sizes: Vec<u64> = load(&location).files.iter().map(|f| f.size_bytes).collect();
        let written: u64 = sizes.iter().sum();
        assert!(sizes.len() >= 3, "{name}: {sizes:?}");
        let off = sizes
            .iter()
            .filter(|&&s| s * 5 < target * 4 || s * 5 > target * 6)
            .count();
        assert!(off <= 1, "{name}: {sizes:?} against a target of {target}");
        // The plan expected about what was written.
        let expected: u64 = outcome.plan.bins().map(|b| b.expected_output_bytes).sum();
        assert!(
            expected * 4 >= written * 3 && expected * 4 <= written * 5,
            "{name}: expected {expected} bytes, wrote {written}"
        );
    }
}

#[test]
fn a_tiny_memory_limit_spills_through_few_open_files() {
    // 150 rows at --memory-limit 1KiB: a piece of a few rows each, more pieces than files the
    // process may open (64), which failed with "Too many open files" while every piece had
    // its own open file; pieces are now routed in passes of at most 64 files.
    let fixture = Fixture::copy("basic-with-checkpoint");
    let location = fixture.location();
    let before = crate::fixture::rows(&location);
    let spill = tempfile::tempdir().unwrap();
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_delta-layout"))
        .args([
            "optimize",
            &location,
            "--hilbert",
            "id",
            "--memory-limit",
            "1KiB",
        ])
        .args(["--target-size", "1MiB", "--json", "--temp-dir"])
        .arg(spill.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["files_removed"], 30, "{json}");
    assert_eq!(json["files_added"], 1, "{json}");
    assert_eq!(crate::fixture::rows(&location), before);
    assert_eq!(std::fs::read_dir(spill.path()).unwrap().count(), 0);
}
