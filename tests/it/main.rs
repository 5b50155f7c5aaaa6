//! Integration tests on real Delta tables (copies of `testdata/`).

mod cli;
mod commit;
mod fixture;
mod rewrite;
