//! Planning throughput (criterion): `cargo bench --bench binpack`.
//!
//! Packs one million synthetic file sizes (seeded, log-uniform between 1 KiB and 256 MiB)
//! into 256 MiB bins with the planner's best-fit decreasing. Not a timed test: CI only
//! compiles it.

#![expect(missing_docs, reason = "criterion's macros")]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use delta_layout::plan::binpack::pack;

fn items() -> Vec<(usize, u64)> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..1_000_000)
        .map(|i| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let exponent = 10 + (state >> 59) % 18; // 2^10 .. 2^27
            let size = (1u64 << exponent) + (state >> 40) % (1u64 << exponent);
            (i, size)
        })
        .collect()
}

fn binpack(c: &mut Criterion) {
    let items = items();
    let mut group = c.benchmark_group("binpack");
    group.sample_size(10);
    group.throughput(Throughput::Elements(items.len() as u64));
    group.bench_function("1M files into 256 MiB bins", |b| {
        b.iter(|| std::hint::black_box(pack(&items, 256 << 20)).len());
    });
    group.finish();
}

criterion_group!(benches, binpack);
criterion_main!(benches);
