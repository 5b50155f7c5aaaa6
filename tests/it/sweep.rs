//! `sweep`: the table is byte-identical afterwards, one combination's figures equal those
//! of `report` on a table optimized the same way, a sample of 1 equals no sample, and the
//! write amplification equals a direct count.

use std::sync::Arc;

use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::PlanOptions;
use delta_layout::plan::cluster::ClusterRequest;
use delta_layout::progress::NoProgress;
use delta_layout::report::{Analysis, ReportOptions};
use delta_layout::sweep::{Combination, Layout, SweepOptions, SweepReport, sweep};

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
                .any(|h| delta_layout::sweep::updated(*h, fraction, report_options.seed))
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
