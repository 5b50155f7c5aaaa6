//! delta-layout optimizes the physical layout of Delta Lake tables.
//!
//! # Pipeline
//! ```text
//!  table::TableView::load      plan::plan            rewrite::execute         commit::commit
//!  ┌──────────────────┐   ┌───────────────────┐   ┌────────────────────┐   ┌─────────────────┐
//!  │ snapshot + stats │──>│ bins per partition│──>│ read, drop deleted │──>│ remove + add,   │
//!  │ (deltalake, I/O) │   │ (pure)            │   │ rows, write, stats │   │ dataChange=false│
//!  └──────────────────┘   └───────────────────┘   │ (rayon pool)       │   │ (log store, I/O)│
//!                                                 └────────────────────┘   └─────────────────┘
//! ```
//! The same three steps run across processes or machines as work orders ([`workorder`]):
//! ```text
//!  workorder::plan (one process)   workorder::execute (any machine)   workorder::commit (one process)
//!  load + plan + probe the store   rebuild the table from the order,  check results, skip bins of
//!  -> WorkOrder (JSON, no secret)  write a bin's files -> BinResult   this run, drop touched bins,
//!                                  (no log read, no commit)           commit batches with a txn
//! ```
//! [`workorder::write_order`] stores an order with many input files as a head and shards, and
//! [`workorder::read_order`] gives a worker its bins' files only.
//! `optimize::optimize` runs them in one process: `plan::plan`, the shared execute step, and
//! [`commit::actions`] + [`commit::commit`].
//!
//! With `--zorder`/`--hilbert` (or a table that declares clustering columns), the plan makes
//! one bin per partition and the rewrite clusters it along a space-filling curve
//! ([`curve`]: rank buckets from seeded quantile samples, Z-order and Hilbert keys;
//! `rewrite::cluster`: ranges of the curve, in memory or through spill files).
//!
//! # Layers
//! Each module names only modules of the layers below it, or those before it in its own layer
//! (`tests/it/layers.rs` checks the source), so the crate has no import circle:
//! ```text
//!  front end (feature cli)  cli: clap arguments, rendering, exit codes; the binary and Python call it
//!  ───────────────────────────────────────────────────────────────────────────────────────────
//!  jobs                     history, vacuum, workorder, optimize, sweep, recommend
//!  run preparation,         prepare (the run's options, output ratio, recorded and new cut trees),
//!  commits, simulation      commit (put-if-absent, retries; commit/conflict.rs: the one conflict
//!                           checker), simulate (a layout's files and stats without Parquet),
//!                           gain (what a run buys: its measure, per-bin savings, the budget),
//!                           verify (row fingerprints)
//!  measurement, CPU stage   inspect, report (report::score: the one scorer), progress, rewrite
//!  planning (pure)          plan: bins per partition, clustering requests, cut trees
//!  layout (pure)            curve: rank buckets, Z-order and Hilbert keys
//!  language                 predicate (AST, parser), bound (the one binder), pruning (on file
//!                           bounds), filter (on Arrow rows), workload (weighted queries)
//!  table                    table: the snapshot, and the only reader of the log (table::log) and
//!                           of data files (table::read)
//!  vocabulary (pure)        error, value, column, size
//! ```
//! The jobs compose the layers: [`optimize::optimize`] runs the whole job;
//! [`inspect::inspect`] reports on a table from its log; [`report::report`] and
//! [`report::compare`] estimate min/max data skipping from the log's stats;
//! [`verify::verify`] proves two versions hold the same rows; [`sweep::sweep`] measures
//! layouts and file sizes on scratch tables, and [`recommend::recommend`] ranks layouts for a
//! workload with [`simulate`]; [`vacuum::vacuum`] deletes files no version inside the
//! retention needs; [`history::history`] lists a table's OPTIMIZE runs from its commits'
//! `commitInfo`. The log is read and written through the `deltalake` crate; data through
//! `arrow` and `parquet` (the versions deltalake uses, re-exported by it). Without the default
//! feature `cli`, the library builds without clap, anyhow and indicatif.
//!
//! # Example
//! ```no_run
//! # async fn run() -> Result<(), delta_layout::Error> {
//! use std::sync::Arc;
//! use delta_layout::optimize::{optimize, OptimizeOptions};
//! use delta_layout::plan::PlanOptions;
//! use delta_layout::progress::NoProgress;
//!
//! let options = OptimizeOptions::default()
//!     .with_plan(PlanOptions::default().with_target_file_bytes(Some(128 << 20)));
//! let outcome = optimize("/data/events", &options, Arc::new(NoProgress)).await?;
//! println!("{} files -> {} files", outcome.files_removed, outcome.files_added);
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

pub mod bound;
#[cfg(feature = "cli")]
pub mod cli;
pub mod column;
pub mod commit;
pub mod curve;
pub mod error;
pub mod filter;
pub mod gain;
pub mod history;
pub mod inspect;
pub mod optimize;
pub mod plan;
pub mod predicate;
pub mod prepare;
pub mod progress;
pub mod pruning;
pub mod recommend;
pub mod report;
pub mod rewrite;
pub mod simulate;
pub mod size;
pub mod sweep;
pub mod table;
pub mod vacuum;
pub mod value;
pub mod verify;
pub mod workload;
pub mod workorder;

pub use error::{Error, Result, Setting};
