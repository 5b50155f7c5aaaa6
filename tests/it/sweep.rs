//! `sweep`: the table is byte-identical afterwards, one combination's figures equal those
//! of `report` on a table optimized the same way, a sample of 1 equals no sample, and the
//! write amplification equals a direct count.

use std::sync::Arc;

use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::PlanOptions;
use delta_layout::plan::cluster::ClusterRequest;
use delta_layout::progress::NoProgress;
use delta_layout::report::{Analysis, ReportOptions};
use delta_layout::simulate::Layout;
use delta_layout::sweep::{Combination, SweepOptions, SweepReport, sweep};

use crate::fixture::{self, Fixture, load};

fn options(layouts: Vec<Layout>, sizes: Vec<u64>, sample: Option<f64>) -> SweepOptions {
    SweepOptions {
        target_sizes: sizes,
        layouts,
        sample,
        scratch: None,
        report: ReportOptions {
            queries: 60,
            ..ReportOptions::default()
        },
        memory_limit_bytes: None,
        cancel: Arc::default(),
        estimate: false,
        predicate: None,
        include_unknown: false,
        workload: None,
    }
}

fn run(location: &str, options: &SweepOptions) -> SweepReport {
    fixture::runtime()
        .block_on(sweep(location, options, Arc::new(NoProgress)))
        .unwrap()
}

fn hilbert(columns: &[&str]) -> Layout {
    Layout::Curve {
        curve: delta_layout::curve::Curve::Hilbert,
        columns: columns.iter().map(|c| (*c).to_string()).collect(),
    }
}

#[test]
fn the_table_is_byte_identical_and_the_scratch_is_removed() {
    let fixture = Fixture::copy("http-requests-delta-rs");
    let listing = fixture.listing();
    let scratch = tempfile::tempdir().unwrap();
    let mut options = options(
        vec![
            Layout::Compact,
            hilbert(&["EdgeStartTimestamp", "EdgeResponseBytes"]),
        ],
        vec![2048, 65536],
        None,
    );
    options.scratch = Some(scratch.path().to_path_buf());
    let report = run(&fixture.location(), &options);
    assert_eq!(report.combinations.len(), 4);
    assert_eq!(fixture.listing(), listing, "sweep wrote to the table");
    assert_eq!(
        std::fs::read_dir(scratch.path()).unwrap().count(),
        0,
        "scratch left behind"
    );
    assert!(report.combinations.iter().any(|c| c.pareto));
    for c in &report.combinations {
        assert_eq!(
            c.queries, report.combinations[0].queries,
            "one workload for all"
        );
    }

    // A scratch directory inside the table is refused before anything is built.
    let mut inside = options.clone();
    inside.scratch = Some(fixture.path.join("scratch"));
    let err = fixture::runtime()
        .block_on(sweep(&fixture.location(), &inside, Arc::new(NoProgress)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("the scratch directory"), "{err}");
}

/// The figures of `hilbert:id` at one size against the same layout built by `optimize` on a
/// copy and measured with the report's own workload.
#[test]
fn a_combination_equals_report_on_a_table_optimized_the_same_way() {
    let fixture = Fixture::copy("basic-with-checkpoint");
    let target = 1024;
    let report = run(
        &fixture.location(),
        &options(vec![hilbert(&["id"])], vec![target], None),
    );
    let swept = &report.combinations[0];

    let copy = Fixture::copy("basic-with-checkpoint");
    let mut request = ClusterRequest::new(delta_layout::curve::Curve::Hilbert, vec!["id".into()]);
    request.full = true;
    let plan = PlanOptions::default()
        .with_target_file_bytes(Some(target))
        .with_rewrite_all(true)
        .with_clustering(Some(request));
    fixture::optimize(
        &copy.location(),
        &OptimizeOptions::default().with_plan(plan),
    )
    .unwrap();
    let table = load(&copy.location());
    assert_eq!(swept.files, table.files.len() as u64);
    assert!(swept.files > 1, "the layout has several files");
    let report_options = ReportOptions {
        queries: 60,
        columns: Some(vec!["id".into()]),
        ..ReportOptions::default()
    };
    let layout_report = delta_layout::report::report(&table, &report_options).unwrap();
    let id = &layout_report.columns[0];
    #[expect(clippy::cast_precision_loss, reason = "test")]
    let expected_files_scanned = table.files.len() as f64 * (1.0 - id.skipped_files_fraction_avg);
    assert!(
        (swept.files_scanned_avg - expected_files_scanned).abs() < 1e-9,
        "{} vs {expected_files_scanned}",
        swept.files_scanned_avg
    );
    let total: u64 = table.files.iter().map(|f| f.size_bytes).sum();
    #[expect(clippy::cast_precision_loss, reason = "test")]
    let expected_bytes = total as f64 * (1.0 - id.skipped_bytes_fraction_avg);
    assert!((swept.bytes_scanned_avg - expected_bytes).abs() < 1e-6);

    // Write amplification, counted directly: per file, does it hold a row that the update
    // touches? (The rows are the same in every layout: they are chosen by row hash.)
    let rt = fixture::runtime();
    let hashes = {
        let _guard = rt.enter();
        delta_layout::verify::row_hashes(&table).unwrap()
    };
    for (fraction, figure) in [
        (0.001, swept.rewrite_bytes_0_1pct),
        (0.01, swept.rewrite_bytes_1pct),
    ] {
        let mut bytes = 0;
        for (file, rows) in table.files.iter().zip(&hashes) {
            if rows
                .iter()
                .any(|h| delta_layout::simulate::updated(*h, fraction, report_options.seed))
            {
                bytes += file.size_bytes;
            }
        }
        assert_eq!(figure, bytes, "update of {fraction}");
    }
    // And the limits: every row updated rewrites every file, none rewrites nothing.
    let all = {
        let _guard = rt.enter();
        delta_layout::sweep::files_touched(&table, &[1.0, 0.0], 1).unwrap()
    };
    assert!(all[0].iter().all(|t| *t));
    assert!(all[1].iter().all(|t| !*t));
    let _ = Analysis::new(&table, None).unwrap();
}

#[test]
fn a_sample_of_one_equals_no_sample() {
    let fixture = Fixture::copy("http-requests-delta-rs");
    let layouts = vec![hilbert(&["EdgeStartTimestamp", "EdgeResponseBytes"])];
    let strip = |r: SweepReport| -> Vec<Combination> {
        r.combinations
            .into_iter()
            .map(|c| Combination { build_ms: 0, ..c })
            .collect()
    };
    let whole = run(
        &fixture.location(),
        &options(layouts.clone(), vec![4096], None),
    );
    let sampled = run(
        &fixture.location(),
        &options(layouts.clone(), vec![4096], Some(1.0)),
    );
    assert_eq!(whole.sample_fraction, 1.0);
    assert_eq!(strip(whole), strip(sampled));

    let half = run(
        &fixture.location(),
        &options(layouts, vec![4096], Some(0.5)),
    );
    let c = &half.combinations[0];
    assert_eq!(c.simulated_target_bytes, 2048);
    assert_eq!(half.sample_fraction, 0.5);

    // Compaction of 30 small files: a sample of half the rows gives the full table's file
    // count (files are planned on full-size inputs), with about half the bytes.
    let small = Fixture::copy("basic-with-checkpoint");
    let compact = vec![Layout::Compact];
    let whole = run(
        &small.location(),
        &options(compact.clone(), vec![2048], None),
    );
    let half = run(&small.location(), &options(compact, vec![2048], Some(0.5)));
    let (w, h) = (&whole.combinations[0], &half.combinations[0]);
    assert!(w.files > 1 && w.files < 30, "{w:?}");
    assert_eq!(h.files, w.files);
    assert!(h.bytes < w.bytes);
    // A sample that keeps nothing is an error, not a result.
    let err = fixture::runtime()
        .block_on(sweep(
            &small.location(),
            &options(vec![Layout::Compact], vec![2048], Some(1e-12)),
            Arc::new(NoProgress),
        ))
        .unwrap_err()
        .to_string();
    assert!(err.contains("the sample"), "{err}");
}

#[test]
fn bad_options_are_named() {
    let fixture = Fixture::copy("http-requests-delta-rs");
    let rt = fixture::runtime();
    let err = |o: SweepOptions| {
        rt.block_on(sweep(&fixture.location(), &o, Arc::new(NoProgress)))
            .unwrap_err()
            .to_string()
    };
    // The library names settings in its own words (the CLI words them as flags).
    assert!(err(options(vec![Layout::Compact], vec![], None)).contains("the target sizes"));
    assert!(err(options(vec![Layout::Compact], vec![0], None)).contains("the target sizes"));
    assert!(err(options(vec![], vec![1024], None)).contains("the layouts"));
    assert!(err(options(vec![Layout::Compact], vec![1024], Some(0.0))).contains("the sample"));
    let unknown = err(options(vec![hilbert(&["nope"])], vec![1024], None));
    assert!(
        unknown.contains("nope") && unknown.contains("the layouts"),
        "{unknown}"
    );
    let mut bad_predicate = options(vec![Layout::Compact], vec![1024], None);
    bad_predicate.report.predicates =
        vec![delta_layout::predicate::Predicate::parse("nope = 1").unwrap()];
    let message = err(bad_predicate);
    assert!(
        message.contains("the predicate file") && message.contains("nope"),
        "{message}"
    );
    assert!(
        !message.contains("delta-layout-sweep"),
        "names the table, not a scratch: {message}"
    );
    assert!(
        Layout::parse("spiral:a")
            .unwrap_err()
            .to_string()
            .contains("the layouts")
    );
    assert_eq!(
        Layout::parse(" zorder: a , b ").unwrap().name(),
        "zorder:a,b"
    );
}

/// `--estimate` against the builds, on the same combinations of a table of 196,608 rows in 24
/// files: the same file counts, skipping within 2 points (the bar), bytes within 25%,
/// the same rows, and the table untouched.
#[test]
fn estimates_match_builds() {
    use deltalake::arrow::array::{Float64Array, Int64Array, RecordBatch, StringArray};
    use deltalake::arrow::datatypes::{DataType, Field, Schema};
    use rand::rngs::StdRng;
    use rand::{Rng as _, SeedableRng as _};

    let mut rng = StdRng::seed_from_u64(15);
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("y", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let files: Vec<Vec<RecordBatch>> = (0..24)
        .map(|_| {
            let n = 8192;
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
    let fixture = Fixture::at(&fixture::synthetic_table(dir.path(), "t", &files));
    let listing = fixture.listing();
    let layouts = vec![
        Layout::Compact,
        hilbert(&["x", "y"]),
        Layout::Curve {
            curve: delta_layout::curve::Curve::ZOrder,
            columns: vec!["x".into(), "y".into()],
        },
    ];
    let sizes = vec![256 << 10, 1 << 20];
    let built = run(
        &fixture.location(),
        &options(layouts.clone(), sizes.clone(), None),
    );
    let mut estimate = options(layouts, sizes, None);
    estimate.estimate = true;
    let estimated = run(&fixture.location(), &estimate);
    assert!(estimated.estimated && !built.estimated);
    assert_eq!(fixture.listing(), listing, "sweep wrote to the table");
    assert_eq!(estimated.rows, built.rows);
    assert_eq!(estimated.combinations.len(), built.combinations.len());
    for (e, b) in estimated.combinations.iter().zip(&built.combinations) {
        assert_eq!(
            (&e.layout, e.target_file_bytes),
            (&b.layout, b.target_file_bytes)
        );
        assert_eq!(e.queries, b.queries, "one workload");
        assert_eq!(e.files, b.files, "{e:?}\n{b:?}");
        #[expect(clippy::cast_precision_loss, reason = "test")]
        let skipped = |c: &Combination| 1.0 - c.files_scanned_avg / c.files as f64;
        assert!(
            (skipped(e) - skipped(b)).abs() <= 0.02,
            "skipping {} estimated, {} built: {e:?}\n{b:?}",
            skipped(e),
            skipped(b)
        );
        #[expect(clippy::cast_precision_loss, reason = "test")]
        let bytes_ratio = e.bytes as f64 / b.bytes as f64;
        assert!((0.75..=1.25).contains(&bytes_ratio), "{e:?}\n{b:?}");
        assert!(e.rewrite_bytes_0_1pct <= e.rewrite_bytes_1pct && e.rewrite_bytes_1pct <= e.bytes);
        assert!(
            e.rewrite_bytes_0_1pct > 0,
            "0.1% of 196,608 rows touches a file"
        );
    }
    // The curves skip files, or the comparison says little.
    #[expect(clippy::cast_precision_loss, reason = "test")]
    let skips = built
        .combinations
        .iter()
        .filter(|c| c.layout != "compact")
        .all(|c| c.files > 2 && c.files_scanned_avg < c.files as f64 * 0.8);
    assert!(skips, "{:?}", built.combinations);
}

/// Estimates measure what a build measures on the tables a hostile test found them to differ
/// on: predicates on a column the layout does not cluster (its stats must be estimated too),
/// and a liquid-clustered table, whose scratch tables a build plans without the declared
/// clustering (so `compact` is no clustering there either).
#[test]
fn estimates_follow_builds_on_predicate_columns_and_declared_clustering() {
    let same = |location: &str, mut options: SweepOptions| {
        let built = run(location, &options);
        options.estimate = true;
        let estimated = run(location, &options);
        for (e, b) in estimated.combinations.iter().zip(&built.combinations) {
            assert_eq!(e.files, b.files, "{e:?}\n{b:?}");
            assert!(
                (e.files_scanned_avg - b.files_scanned_avg).abs() < 1e-9,
                "{e:?}\n{b:?}"
            );
        }
        built
    };
    let requests = Fixture::copy("http-requests-delta-rs");
    let mut options = options(
        vec![Layout::Curve {
            curve: delta_layout::curve::Curve::ZOrder,
            columns: vec!["EdgeStartTimestamp".into()],
        }],
        vec![4096],
        None,
    );
    options.report.predicates = ["EdgeResponseBytes > 100000000", "EdgeResponseStatus = 404"]
        .iter()
        .map(|p| delta_layout::predicate::Predicate::parse(p).unwrap())
        .collect();
    let built = same(&requests.location(), options);
    #[expect(clippy::cast_precision_loss, reason = "test")]
    let skips = built.combinations[0].files_scanned_avg < built.combinations[0].files as f64;
    assert!(skips, "the predicates skip files: {:?}", built.combinations);

    let liquid = Fixture::copy("row-tracking-liquid");
    same(
        &liquid.location(),
        self::options(vec![Layout::Compact], vec![1024, 4096], None),
    );
}
