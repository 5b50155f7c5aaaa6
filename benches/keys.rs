//! Curve-key throughput: `cargo bench --bench keys`.
//!
//! For 1 to 6 clustering columns of mixed types (i64, f64, strings with a 30-character shared
//! prefix, dates), over one million seeded rows: the time to sample and build rank buckets,
//! then to compute every row's bucket numbers and Z-order and Hilbert keys. Prints rows per
//! second (median of 3). No extra dependency; not a timed test.

#![expect(
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    reason = "synthetic data of small known ranges"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use delta_layout::curve::keys::{ColumnBuckets, DEFAULT_SAMPLE_ROWS, Reservoir};
use delta_layout::curve::{Curve, bits_per_dimension};
use deltalake::arrow::array::{ArrayRef, Date32Array, Float64Array, Int64Array, StringArray};

const ROWS: usize = 1_000_000;

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

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let columns = columns();
    for dims in 1..=6 {
        let bits = bits_per_dimension(dims);
        let mut build = Vec::new();
        let mut key_times = [Vec::new(), Vec::new()];
        for _ in 0..3 {
            let start = Instant::now();
            let buckets: Vec<ColumnBuckets> = columns[..dims]
                .iter()
                .map(|c| {
                    let mut r = Reservoir::new(c.data_type(), DEFAULT_SAMPLE_ROWS, 1).unwrap();
                    r.add(c).unwrap();
                    r.into_buckets(bits)
                })
                .collect();
            build.push(start.elapsed());
            for (t, curve) in [Curve::ZOrder, Curve::Hilbert].into_iter().enumerate() {
                let start = Instant::now();
                let per_column: Vec<Vec<u32>> = buckets
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
                std::hint::black_box(checksum);
                key_times[t].push(start.elapsed());
            }
        }
        let rate = |d: Duration| ROWS as f64 / d.as_secs_f64() / 1e6;
        println!(
            "keys: {dims} columns: sample + buckets {:?}; z-order {:.1} M rows/s; hilbert {:.1} M rows/s",
            median(build),
            rate(median(key_times[0].clone())),
            rate(median(key_times[1].clone())),
        );
    }
}
