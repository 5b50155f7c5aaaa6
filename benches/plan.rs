//! Planning throughput (criterion): `cargo bench --bench plan`.
//!
//! Plans a table of one million files (issue 15: "planning a 1,000,000-file table in under
//! 5 s"): the snapshot's file list as `optimize` and `plan` get it after log replay, with
//! every step of [`delta_layout::plan::plan`] (grouping by partition, candidates, bin
//! packing by best-fit decreasing, clustering's cube selection and range cuts). The files are
//! copies of one real `add` action of `testdata/partitioned-string-null` (a Spark table
//! partitioned by a string), spread over 1,000 partitions, with seeded log-uniform sizes
//! between 1 KiB and 256 MiB. Log replay itself is deltalake's and is not measured here
//! (`scripts/bench-report-speed.py` times `inspect` on a large log). Not a timed test: CI
//! only compiles it.

#![expect(missing_docs, reason = "criterion's macros")]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use delta_layout::curve::Curve;
use delta_layout::plan::cluster::ClusterRequest;
use delta_layout::plan::{PlanOptions, plan};
use delta_layout::table::TableView;

const FILES: usize = 1_000_000;
const PARTITIONS: usize = 1_000;

fn table() -> TableView {
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/partitioned-string-null"
    );
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    let mut table = runtime
        .block_on(TableView::load(root, None))
        .expect("testdata/partitioned-string-null loads");
    let template = table.files[0].clone();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    table.files = (0..FILES)
        .map(|i| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let exponent = 10 + (state >> 59) % 18; // 2^10 .. 2^27
            let mut file = template.clone();
            file.size_bytes = (1u64 << exponent) + (state >> 40) % (1u64 << exponent);
            let partition = format!("p{:04}", i % PARTITIONS);
            file.path = format!("letter={partition}/part-{i:07}.c000.snappy.parquet");
            file.raw_path.clone_from(&file.path);
            file.partition_values = vec![Some(partition.clone())];
            file.raw_partition_values = vec![Some(partition)];
            file
        })
        .collect();
    table
}

fn planning(c: &mut Criterion) {
    let table = table();
    let mut group = c.benchmark_group("plan");
    group.sample_size(10);
    group.throughput(Throughput::Elements(FILES as u64));
    let compaction = PlanOptions::default().with_target_file_bytes(Some(256 << 20));
    group.bench_function("1M files in 1,000 partitions, compaction at 256 MiB", |b| {
        b.iter(|| {
            let plan = plan(&table, &compaction).expect("plan");
            std::hint::black_box(plan.num_input_files())
        });
    });
    let clustering = PlanOptions::default()
        .with_target_file_bytes(Some(256 << 20))
        .with_clustering(Some(ClusterRequest::new(
            Curve::Hilbert,
            vec!["number".into(), "a_float".into()],
        )));
    group.bench_function("1M files in 1,000 partitions, hilbert at 256 MiB", |b| {
        b.iter(|| {
            let plan = plan(&table, &clustering).expect("plan");
            std::hint::black_box(plan.num_input_files())
        });
    });
    group.finish();
}

criterion_group!(benches, planning);
criterion_main!(benches);
