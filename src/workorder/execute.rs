//! The execute step of work orders: a worker writes the files of some bins.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{BinResult, WorkOrder};
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::prepare::OptimizeOptions;
use crate::progress::Progress;
use crate::rewrite::{BinOutcome, WrittenFile};
use crate::table::StorageOptions;
use crate::table::read::Reader;

/// Executes the bins `bin_ids` of `order`: reads their input files from the table's store
/// (reached with `storage_options`), writes their output files, and returns one result per
/// bin, in plan order. Reads no log and commits nothing. Uses `options`' execution settings
/// (threads, read concurrency, spill directory, cancel flag); codec, memory limit (unless
/// `options` sets one) and verify come from the order. Must be called on a multi-threaded
/// tokio runtime.
///
/// # Errors
/// [`Error::WorkOrder`] for an unknown bin id or none at all, or the head of a sharded order
/// (read it with [`super::read_order`]); everything
/// [`crate::table::TableView::from_description`] returns; the first bin error ([`Error::DataFile`] for a
/// missing or changed input file); [`Error::VerifyFailed`] when verification finds a
/// difference; [`Error::Cancelled`]. On error every file written is deleted.
pub async fn execute(
    order: &WorkOrder,
    bin_ids: &[usize],
    storage_options: StorageOptions,
    options: &OptimizeOptions,
    progress: Arc<dyn Progress>,
) -> Result<Vec<BinResult>> {
    super::check_assembled(order)?;
    if bin_ids.is_empty() {
        return Err(Error::WorkOrder {
            document: format!("the work order of run {}", order.plan.run_id),
            message: "was given no bin to execute".into(),
        });
    }
    let wanted: BTreeSet<usize> = bin_ids.iter().copied().collect();
    order.check_bins(&wanted)?;
    let codec = crate::rewrite::write::Codec::parse(&order.settings.codec).map_err(|m| {
        Error::WorkOrder {
            document: format!("the work order of run {}", order.plan.run_id),
            message: format!("names an unknown codec: {m}"),
        }
    })?;
    let verify = order.settings.verify || options.verify;
    if verify && plan_has_split(&order.plan, &wanted) {
        return Err(Error::invalid_option(
            crate::Setting::Verify,
            "cannot check a bin of a clustering scope split over several bins (it reads the scope's files but writes only its key ranges)",
        ));
    }
    let table = order.table_view(storage_options)?;
    table.check_writable()?;
    let plan = order.plan_for(&table, &wanted)?;
    let mut options = options.clone().with_codec(codec);
    if options.memory_limit_bytes.is_none() {
        options.memory_limit_bytes = order.settings.memory_limit_bytes;
    }
    let mut reader = Reader::for_table(&table)?;
    reader.cancel = Some(options.cancel.clone());
    let bins = plan.bins().count();
    progress.start(bins, plan.input_bytes());
    let (table, reader, result, progress) =
        crate::rewrite::write_bins(table, plan, &options.execution(), reader, progress).await?;
    let outcomes = result?;
    let delete = async |reader: Reader, outcomes: &[BinOutcome]| {
        let written: Vec<WrittenFile> = outcomes.iter().flat_map(|o| o.written.clone()).collect();
        let _ = tokio::task::spawn_blocking(move || {
            crate::rewrite::delete_files(&reader.store, &reader.runtime, &written);
        })
        .await;
    };
    if verify {
        let checked = {
            let table = table.clone();
            // A bin left alone wrote nothing to check: its input files stay.
            let outcomes: Vec<BinOutcome> =
                outcomes.iter().filter(|o| !o.left_alone).cloned().collect();
            let cancel = options.cancel.clone();
            tokio::task::spawn_blocking(move || {
                crate::verify::check_rewrite(&table, &outcomes, progress.as_ref(), &cancel)
            })
            .await
            .map_err(|e| Error::TaskFailed {
                task: "verify",
                source: e,
            })?
        };
        if let Err(e) = checked {
            delete(reader, &outcomes).await;
            return Err(e);
        }
    }
    if options.cancel.load(std::sync::atomic::Ordering::Relaxed) {
        delete(reader, &outcomes).await;
        return Err(Error::Cancelled);
    }
    outcomes
        .into_iter()
        .map(|o| {
            BinResult {
                run_id: order.plan.run_id.clone(),
                fingerprint: order.fingerprint.clone(),
                bin_id: o.bin_id,
                rows: o.rows,
                spilled: o.spilled,
                verified: verify,
                files: o.written,
                left_alone: o.left_alone,
                checksum: String::new(),
            }
            .seal()
        })
        .collect()
}

fn plan_has_split(plan: &Plan, bins: &BTreeSet<usize>) -> bool {
    plan.bins()
        .any(|b| bins.contains(&b.id) && b.key_range.is_some())
}
