//! The plain-read baseline of `verify`: reads every live row of the given versions of a
//! table with the library's reader (deleted rows dropped, columns aligned) and counts them,
//! without hashing. `read-table TABLE VERSION...` (build with `--features tpch`).

use std::time::Instant;

use delta_layout::table::TableView;
use delta_layout::table::read::FileReader;
use rayon::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: read-table TABLE VERSION...");
        std::process::exit(2);
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let started = Instant::now();
    let mut rows = 0usize;
    for version in &args[2..] {
        let table = runtime
            .block_on(TableView::load(&args[1], Some(version.parse().unwrap())))
            .unwrap();
        let reader = {
            let _guard = runtime.enter();
            FileReader::new(&table).unwrap()
        };
        rows += table
            .files
            .par_iter()
            .map(|f| {
                reader
                    .read(f)
                    .unwrap()
                    .iter()
                    .map(|b| b.num_rows())
                    .sum::<usize>()
            })
            .sum::<usize>();
    }
    println!(
        "read {rows} rows in {:.2} s",
        started.elapsed().as_secs_f64()
    );
}
