//! The physical limit of any rewrite, for `scripts/bench.sh`: reads every live row of a
//! table with the library's reader and writes them back unsorted into Parquet files of the
//! target size, with the same writer settings as `optimize` (its default codec, zstd:3; row groups of a quarter
//! of the target, at least 1 MiB), in parallel over groups of input files of about the
//! target size. No stats, no sort, no commit.
//! `plain-copy TABLE OUT_DIR TARGET_BYTES` (build with `--features tpch`).

use std::sync::Arc;
use std::time::Instant;

use delta_layout::rewrite::write::Codec;
use delta_layout::table::TableView;
use delta_layout::table::read::FileReader;
use deltalake::parquet::arrow::ArrowWriter;
use deltalake::parquet::file::properties::WriterProperties;
use rayon::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: plain-copy TABLE OUT_DIR TARGET_BYTES");
        std::process::exit(2);
    }
    let target: u64 = args[3].parse().expect("target bytes");
    let out = std::path::PathBuf::from(&args[2]);
    std::fs::create_dir_all(&out).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let started = Instant::now();
    let table = runtime.block_on(TableView::load(&args[1], None)).unwrap();
    let reader = {
        let _guard = runtime.enter();
        FileReader::new(&table).unwrap()
    };
    // Consecutive files up to the target size form a group, as bin-packing would.
    let mut groups: Vec<Vec<usize>> = vec![Vec::new()];
    let mut bytes = 0;
    for (i, file) in table.files.iter().enumerate() {
        if bytes + file.size_bytes > target && !groups.last().unwrap().is_empty() {
            groups.push(Vec::new());
            bytes = 0;
        }
        bytes += file.size_bytes;
        groups.last_mut().unwrap().push(i);
    }
    let row_group_bytes = (target / 4).clamp(1 << 20, 128 << 20);
    let properties = WriterProperties::builder()
        .set_compression(Codec::default().parquet())
        .set_max_row_group_row_count(Some(1 << 20))
        .set_max_row_group_bytes(Some(usize::try_from(row_group_bytes).unwrap()))
        .build();
    let schema = reader.schema();
    let written: Vec<(usize, u64)> = groups
        .par_iter()
        .enumerate()
        .map(|(g, files)| {
            let (mut count, mut rows, mut seq) = (0usize, 0u64, 0usize);
            let mut writer: Option<ArrowWriter<Vec<u8>>> = None;
            let flush = |w: ArrowWriter<Vec<u8>>, seq: &mut usize| {
                let bytes = w.into_inner().unwrap();
                std::fs::write(out.join(format!("part-{g:05}-{seq:03}.parquet")), bytes).unwrap();
                *seq += 1;
            };
            for &i in files {
                for batch in reader.read(&table.files[i]).unwrap() {
                    rows += batch.num_rows() as u64;
                    let w = writer.get_or_insert_with(|| {
                        ArrowWriter::try_new(
                            Vec::new(),
                            Arc::clone(&schema),
                            Some(properties.clone()),
                        )
                        .unwrap()
                    });
                    w.write(&batch).unwrap();
                    if w.bytes_written() as u64 + w.in_progress_size() as u64 / 2 >= target {
                        flush(writer.take().unwrap(), &mut seq);
                        count += 1;
                    }
                }
            }
            if let Some(w) = writer.take() {
                flush(w, &mut seq);
                count += 1;
            }
            (count, rows)
        })
        .collect();
    let files: usize = written.iter().map(|w| w.0).sum();
    let rows: u64 = written.iter().map(|w| w.1).sum();
    println!(
        "{{\"files\": {files}, \"rows\": {rows}, \"duration_ms\": {}}}",
        started.elapsed().as_millis()
    );
}
