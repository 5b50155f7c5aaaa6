//! Curve-key throughput (criterion): `cargo bench --bench keys`.
//!
//! For 1 to 6 clustering columns of mixed types (i64, f64, strings with a 30-character shared
//! prefix, dates), over 200,000 seeded rows: sampling and building rank buckets, then every
//! row's bucket numbers and Z-order or Hilbert key. Not a timed test: CI only compiles it.

#![expect(
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    missing_docs,
    reason = "synthetic data of small known ranges; criterion's macros"
)]

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use delta_layout::curve::keys::{ColumnBuckets, DEFAULT_SAMPLE_ROWS, Reservoir};
use delta_layout::curve::{Curve, bits_per_dimension};
use deltalake::arrow::array::{ArrayRef, Date32Array, Float64Array, Int64Array, StringArray};

const ROWS: usize = 200_000;

fn columns() -> Vec<ArrayRef> {
    let mut state: u64 = 0x5eed;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 11
    };
    let ints: Vec<i64> = (0..ROWS).map(|_| (next() % 10_000_000) as i64).collect();
    let floats: Vec<f64> = (0..ROWS)
        .map(|_| (next() % 1_000_000) as f64 / 7.0)
        .collect();
    let strings: Vec<String> = (0..ROWS)
        .map(|_| {
            format!(
                "https://example.com/shared/prefix/{:08}",
                next() % 100_000_000
            )
        })
        .collect();
    let dates: Vec<i32> = (0..ROWS).map(|_| (next() % 3_000) as i32 + 8_000).collect();
    let more_ints: Vec<i64> = (0..ROWS).map(|_| (next() % 200_000) as i64).collect();
    let more_floats: Vec<f64> = (0..ROWS).map(|_| (next() % 50) as f64).collect();
    vec![
        Arc::new(Int64Array::from(ints)),
        Arc::new(Float64Array::from(floats)),
        Arc::new(StringArray::from(strings)),
        Arc::new(Date32Array::from(dates)),
        Arc::new(Int64Array::from(more_ints)),
        Arc::new(Float64Array::from(more_floats)),
    ]
}

fn buckets(columns: &[ArrayRef], dims: usize) -> Vec<ColumnBuckets> {
    let bits = bits_per_dimension(dims);
    columns[..dims]
        .iter()
        .map(|c| {
            let mut r = Reservoir::new(c.data_type(), DEFAULT_SAMPLE_ROWS, 1).unwrap();
            r.add(c).unwrap();
            r.into_buckets(bits)
        })
        .collect()
}

fn keys(c: &mut Criterion) {
    let columns = columns();
    let mut group = c.benchmark_group("keys");
    group.sample_size(10);
    group.throughput(Throughput::Elements(ROWS as u64));
    for dims in 1..=6 {
        group.bench_with_input(BenchmarkId::new("buckets", dims), &dims, |b, &dims| {
            b.iter(|| buckets(&columns, dims));
        });
        let built = buckets(&columns, dims);
        for curve in [Curve::ZOrder, Curve::Hilbert] {
            let name = format!("{curve:?}").to_lowercase();
            group.bench_with_input(BenchmarkId::new(name, dims), &dims, |b, &dims| {
                b.iter(|| {
                    let per_column: Vec<Vec<u32>> = built
                        .iter()
                        .zip(&columns)
                        .map(|(b, c)| b.buckets(c).unwrap())
                        .collect();
                    let mut coords = vec![0u32; dims];
                    let mut checksum = 0u64;
                    for row in 0..ROWS {
                        for (c, column) in coords.iter_mut().zip(&per_column) {
                            *c = column[row];
                        }
                        checksum = checksum.wrapping_add(curve.key(&coords));
                    }
                    std::hint::black_box(checksum)
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, keys);
criterion_main!(benches);
