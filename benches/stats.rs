//! Stats collection throughput (criterion): `cargo bench --bench stats`.
//!
//! Collects `numRecords`, `minValues`, `maxValues` and `nullCount` (PROTOCOL.md "Per-file
//! Statistics") over one batch of one million seeded rows: i64, f64 with nulls, strings of
//! 40 characters (cut to 32 in the stats) and dates. Not a timed test: CI only compiles it.

#![expect(
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    missing_docs,
    reason = "synthetic data of small known ranges; criterion's macros"
)]

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use delta_layout::rewrite::stats::StatsCollector;
use delta_layout::table::LeafColumn;
use deltalake::arrow::array::{Date32Array, Float64Array, Int64Array, RecordBatch, StringArray};
use deltalake::arrow::datatypes::{DataType, Field, Schema};
use deltalake::kernel::DataType as DeltaType;

const ROWS: usize = 1_000_000;

fn batch() -> RecordBatch {
    let mut state: u64 = 0xfeed;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 11
    };
    let ints: Vec<i64> = (0..ROWS).map(|_| (next() % 10_000_000) as i64).collect();
    let floats: Vec<Option<f64>> = (0..ROWS)
        .map(|_| (next() % 10 != 0).then(|| (next() % 1_000_000) as f64 / 3.0))
        .collect();
    let strings: Vec<String> = (0..ROWS)
        .map(|_| format!("customer-with-a-long-name-{:014}", next() % 100_000_000))
        .collect();
    let dates: Vec<i32> = (0..ROWS).map(|_| (next() % 3_000) as i32 + 8_000).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("amount", DataType::Float64, true),
        Field::new("customer", DataType::Utf8, true),
        Field::new("day", DataType::Date32, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ints)),
            Arc::new(Float64Array::from(floats)),
            Arc::new(StringArray::from(strings)),
            Arc::new(Date32Array::from(dates)),
        ],
    )
    .unwrap()
}

fn leaves() -> Vec<LeafColumn> {
    [
        ("id", DeltaType::LONG),
        ("amount", DeltaType::DOUBLE),
        ("customer", DeltaType::STRING),
        ("day", DeltaType::DATE),
    ]
    .into_iter()
    .map(|(name, data_type)| LeafColumn {
        logical: vec![name.to_string()],
        physical: vec![name.to_string()],
        data_type,
    })
    .collect()
}

fn stats(c: &mut Criterion) {
    let batch = batch();
    let mut group = c.benchmark_group("stats");
    group.sample_size(10);
    group.throughput(Throughput::Elements(ROWS as u64));
    group.bench_function("1M rows, 4 columns", |b| {
        b.iter(|| {
            let mut collector = StatsCollector::new(leaves(), false);
            collector.update(&batch).unwrap();
            std::hint::black_box(collector.finish())
        });
    });
    group.finish();
}

criterion_group!(benches, stats);
criterion_main!(benches);
