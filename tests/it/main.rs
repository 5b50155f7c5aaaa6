//! Integration tests on real Delta tables (copies of `testdata/`).

mod budget;
mod cli;
mod cluster;
mod commit;
mod compaction;
mod cuts;
mod deletion_vectors;
mod faults;
mod features;
mod fixture;
mod history;
mod layers;
mod progress;
mod report;
mod rewrite;
mod row_tracking;
mod scheduled;
mod selection;
mod sweep;
mod uniform;
mod variant;
mod verify;
mod workorder;
