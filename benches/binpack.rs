//! Bin-packing throughput: `cargo bench --bench binpack`.
//!
//! Packs one million synthetic file sizes (seeded, log-uniform between 1 KiB and 256 MiB)
//! into 256 MiB bins, five times, and prints the median time and the bins found against the
//! lower bound (total size over capacity). Criterion benches arrive with the benchmark issue;
//! this one needs no extra dependency.

use std::time::Instant;

use delta_layout::plan::binpack::pack;

fn main() {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let items: Vec<(usize, u64)> = (0..1_000_000)
        .map(|i| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let exponent = 10 + (state >> 59) % 18; // 2^10 .. 2^27
            let size = (1u64 << exponent) + (state >> 40) % (1u64 << exponent);
            (i, size)
        })
        .collect();
    let capacity = 256 << 20;
    let mut times = Vec::new();
    let mut bins = 0;
    for _ in 0..5 {
        let start = Instant::now();
        bins = std::hint::black_box(pack(&items, capacity)).len();
        times.push(start.elapsed());
    }
    times.sort();
    let total: u64 = items.iter().map(|i| i.1).sum();
    println!(
        "binpack: {} items into {bins} bins (lower bound {}), median {:?}",
        items.len(),
        total.div_ceil(capacity),
        times[2]
    );
}
