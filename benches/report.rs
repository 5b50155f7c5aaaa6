//! `report` on a large log (criterion): `cargo bench --bench report`.
//!
//! Issue 28: "`report` on a log of 100,000 files under 1 s, and 1,000,000 files under 10 s".
//! Writes one commit of `DELTA_LAYOUT_BENCH_FILES` (default 1,000,000) `add` actions into a
//! temporary directory, no data files (both steps read the log alone), each with Spark-style
//! stats on 4 columns (long, double, string, date), the shape `scripts/bench-report-speed.py`
//! writes. Then measures, separately:
//! - `load`: [`TableView::load`], delta-rs' log replay (its stats parsed into Arrow columns)
//!   and the view of every file;
//! - `report`: [`delta_layout::report::report`] with its defaults (every column, 200
//!   generated predicates a column) on the loaded view.
//!
//! `scripts/bench-report-speed.py` times the whole command with its peak RSS. Not a timed
//! test: CI only compiles it.

#![expect(missing_docs, reason = "criterion's macros")]

use std::io::Write as _;

use criterion::{Criterion, criterion_group, criterion_main};
use delta_layout::report::{ReportOptions, report};
use delta_layout::table::TableView;

/// Files in the log unless `DELTA_LAYOUT_BENCH_FILES` says otherwise.
const FILES: usize = 1_000_000;

/// Writes the log of `files` add actions under `root`; seeded, so every run reads the same.
fn write_log(root: &std::path::Path, files: usize) {
    let log = root.join("_delta_log");
    std::fs::create_dir_all(&log).expect("a log directory");
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(log.join(format!("{:020}.json", 0))).expect("the first commit"),
    );
    let schema = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"x","type":"double","nullable":true,"metadata":{}},{"name":"s","type":"string","nullable":true,"metadata":{}},{"name":"d","type":"date","nullable":true,"metadata":{}}]}"#;
    writeln!(
        out,
        r#"{{"protocol":{{"minReaderVersion":1,"minWriterVersion":2}}}}"#
    )
    .expect("write");
    writeln!(
        out,
        "{}",
        serde_json::json!({"metaData": {
            "id": "6f0d7c2e-61a5-4a8e-9a39-2a1f0e5b7d11",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema, "partitionColumns": [],
            "configuration": {}, "createdTime": 0}})
    )
    .expect("write");
    let mut state: u64 = 15;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let date = |day: u64| {
        format!(
            "{:04}-{:02}-{:02}",
            2015 + day / 365,
            1 + day % 365 / 31,
            1 + day % 28
        )
    };
    for i in 0..files {
        let lo = next(10_000_000);
        let day = next(3000);
        // Exact: `lo + 9_999` is under 2^32.
        let x = |v: u64| f64::from(u32::try_from(v).expect("under 2^32")) * 0.5;
        let stats = serde_json::json!({
            "numRecords": 10_000,
            "minValues": {"id": lo, "x": x(lo), "s": format!("key-{lo:08}"), "d": date(day)},
            "maxValues": {"id": lo + 9_999, "x": x(lo + 9_999),
                          "s": format!("key-{:08}", lo + 9_999), "d": date(day + 30)},
            "nullCount": {"id": 0, "x": 0, "s": 0, "d": 0},
        });
        let add = serde_json::json!({"add": {
            "path": format!("part-{i:07}-{:016x}.c000.snappy.parquet", next(u64::MAX)),
            "partitionValues": {}, "size": (1 << 20) + next(63 << 20),
            "modificationTime": 1_700_000_000_000_u64, "dataChange": true,
            "stats": stats.to_string()}});
        writeln!(out, "{add}").expect("write");
    }
    out.flush().expect("flush");
}

fn report_speed(c: &mut Criterion) {
    let files = std::env::var("DELTA_LAYOUT_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(FILES);
    let dir = tempfile::tempdir().expect("a temporary directory");
    write_log(dir.path(), files);
    let root = dir.path().to_str().expect("a UTF-8 path").to_string();
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    let load = || {
        runtime
            .block_on(TableView::load(&root, None))
            .expect("the log loads")
    };
    let mut group = c.benchmark_group("report");
    group.sample_size(10);
    group.bench_function(format!("load {files} files"), |b| {
        b.iter(|| std::hint::black_box(load().files.len()));
    });
    let table = load();
    let options = ReportOptions::default();
    group.bench_function(format!("report on {files} files, defaults"), |b| {
        b.iter(|| {
            let report = report(&table, &options).expect("report");
            std::hint::black_box(report)
        });
    });
    group.finish();
}

criterion_group!(benches, report_speed);
criterion_main!(benches);
