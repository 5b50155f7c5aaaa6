//! Work orders: one `optimize` as three steps that separate processes, machines or the tasks
//! of an engine (Spark, Kubernetes jobs) can run, with the guarantees of one run.
//!
//! ```text
//!  plan (one process)             execute (any machine, per bin)          commit (one process)
//!  ┌──────────────────────┐      ┌──────────────────────────────┐      ┌─────────────────────────┐
//!  │ TableView::load,     │ ───> │ WorkOrder -> TableView       │ ───> │ check every BinResult,  │
//!  │ plan::plan, probe    │ JSON │ (no log read), write the     │ JSON │ scan newer commits, one │
//!  │ the store: WorkOrder │      │ bin's files: BinResult       │      │ commit per batch + txn  │
//!  └──────────────────────┘      └──────────────────────────────┘      └─────────────────────────┘
//! ```
//! `optimize` runs the same stages in one process: [`crate::plan::plan`], the shared execute
//! step (`optimize::write_bins`) and [`crate::commit::actions`] + [`crate::commit::commit`].
//!
//! # The work order
//! A [`WorkOrder`] is a JSON document ([`FORMAT_VERSION`], refused when unknown) that holds
//! everything a worker needs and nothing secret: the table's description at the read version
//! ([`TableDescription`]: root URL without password or query, schema, partition columns,
//! properties, protocol, row tracking), the execution settings (codec, memory limit, verify),
//! the [`Plan`] (run id, bins) and the `add` action of every input file, which the bins index.
//! Its `fingerprint` (xxHash64 of the rest, keys sorted) is checked when it is read, so an
//! altered order is refused, and every [`BinResult`] carries it, so a result is never committed
//! with another plan. Storage options and credentials reach workers through their own
//! environment or `--storage-option`.
//!
//! # Executing a bin
//! [`execute`] rebuilds the table from the order ([`TableView::from_description`]: no log is
//! read), reads the bin's input files and writes its output files, named
//! `part-<bin>-<run id>-<writer>-<random>-c<seq>` in the partition's directory, so a retried
//! attempt never overwrites another attempt's files. It returns a [`BinResult`] per bin: the
//! written files with their stats, and the rows. On failure it deletes what it wrote.
//!
//! # Committing
//! [`commit`] checks each result against the order (run id, fingerprint, bin, rows, file
//! names, and that each file exists with its size), then reads every commit after the order's
//! version:
//! * commits of this run (their `commitInfo` carries the run id) mark their bins as committed,
//!   so a commit step that died, or one run twice, never applies a bin twice;
//! * a commit of another writer that removes or re-adds an input file of a bin drops that bin
//!   (its outputs are deleted, the rest commit); one that changes the metadata or protocol
//!   stops the step (exit 3), as `optimize`'s conflict rules do.
//!
//! The remaining bins commit in batches of [`CommitOptions::batch_bins`] bins (all in one
//! commit by default), each one transaction of `remove` + `add` actions (`dataChange=false`)
//! with a `txn` action (PROTOCOL.md "Transaction Identifiers": `appId` = the run id,
//! `version` = the batch number), through [`crate::commit::commit`]'s conflict checks. Files
//! of the run that no commit refers to (failed or superseded attempts of settled bins) are
//! then deleted. Results that never arrived leave their bins uncommitted and their files
//! alone: a later `commit` with those results commits them.
//!
//! Source: `../shared/SCALEOUT.md` (the design brief), Delta Spark's `optimize.batchSize`,
//! delta-rs' `min_commit_interval`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use deltalake::kernel::{Action, Add, Transaction};
use futures::StreamExt as _;
use object_store::ObjectStoreExt as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::commit::{self, COMMIT_INFO_RUN_ID};
use crate::error::{Error, Result};
use crate::optimize::OptimizeOptions;
use crate::plan::cluster::{KeyRange, KeySpace};
use crate::plan::{self, Bin, PartitionPlan, Plan};
use crate::progress::Progress;
use crate::rewrite::{BinOutcome, WrittenFile, read::Reader};
use crate::table::{StorageOptions, TableDescription, TableLocation, TableView};

/// The format version of work orders and result documents this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;
/// The `kind` of a work order document.
pub const ORDER_KIND: &str = "delta-layout.plan";
/// The `kind` of a result document.
pub const RESULTS_KIND: &str = "delta-layout.results";
/// The release writing work orders: `delta-layout <version>`.
pub const PRODUCER: &str = concat!("delta-layout ", env!("CARGO_PKG_VERSION"));
/// How many files of a split clustering scope `plan` reads for its sample (evenly spaced
/// over the scope's files, in log order): the key space is computed once from them.
pub const SPLIT_SAMPLE_FILES: usize = 32;
/// Default bins per commit: 0, every bin in one commit (as `optimize`).
pub const DEFAULT_BATCH_BINS: usize = 0;

/// Execution settings chosen at plan time, the same for every worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderSettings {
    /// Parquet compression of the written files, as [`crate::rewrite::write::Codec::parse`]
    /// reads it (`zstd:1`).
    pub codec: String,
    /// Memory a clustering bin may buffer, bytes; `None`: a quarter of the worker's memory.
    pub memory_limit_bytes: Option<u64>,
    /// Workers read their written files back and compare fingerprints with the input
    /// before returning a result.
    pub verify: bool,
}

/// One input file of the plan: its `add` action (path URI-decoded once) and the path as the
/// log spells it, which the `remove` repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderFile {
    /// The `add` action.
    pub add: Add,
    /// The path exactly as the log spells it.
    pub raw_path: String,
}

/// A self-contained work order: see the module docs. Bins' `files` index [`WorkOrder::files`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkOrder {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// [`ORDER_KIND`].
    pub kind: String,
    /// The release that made the order ([`PRODUCER`]); only that release executes it and
    /// commits it (key spaces hold Arrow row-format bytes, which other releases may order
    /// differently).
    pub producer: String,
    /// xxHash64 (16 hex digits) of the producer, table, settings, plan and files, keys sorted.
    pub fingerprint: String,
    /// The table at the plan's read version.
    pub table: TableDescription,
    /// Execution settings.
    pub settings: OrderSettings,
    /// The plan: run id, target size, partitions and bins.
    pub plan: Plan,
    /// The input files, in bin order.
    pub files: Vec<OrderFile>,
}

impl WorkOrder {
    /// The order of `plan` (made from `table`): the bins' input files are copied out of the
    /// table and the bins re-indexed to them.
    ///
    /// # Errors
    /// [`Error::Json`] when the order cannot be serialized for its fingerprint.
    pub fn new(table: &TableView, mut plan: Plan, settings: OrderSettings) -> Result<Self> {
        let mut files = Vec::with_capacity(plan.num_input_files());
        // The bins of a split scope share their files: each is listed once.
        let mut position: HashMap<usize, usize> = HashMap::new();
        for partition in &mut plan.partitions {
            for bin in &mut partition.bins {
                for index in &mut bin.files {
                    *index = *position.entry(*index).or_insert_with(|| {
                        let file = &table.files[*index];
                        files.push(OrderFile {
                            add: TableView::add_action(file).clone(),
                            raw_path: file.raw_path.clone(),
                        });
                        files.len() - 1
                    });
                }
            }
        }
        let mut order = Self {
            format_version: FORMAT_VERSION,
            kind: ORDER_KIND.to_string(),
            producer: PRODUCER.to_string(),
            fingerprint: String::new(),
            table: table.description(),
            settings,
            plan,
            files,
        };
        order.fingerprint = order.compute_fingerprint()?;
        Ok(order)
    }

    /// The fingerprint of the order's content (everything but the fingerprint): xxHash64 of
    /// its JSON with every object's keys sorted, as 16 lowercase hex digits.
    ///
    /// # Errors
    /// [`Error::Json`] when the order cannot be serialized.
    pub fn compute_fingerprint(&self) -> Result<String> {
        let value = serde_json::to_value((
            &self.producer,
            &self.table,
            &self.settings,
            &self.plan,
            &self.files,
        ))
        .map_err(|source| Error::Json {
            context: "fingerprinting the work order".into(),
            source,
        })?;
        let mut text = String::new();
        canonical_json(&value, &mut text);
        Ok(format!(
            "{:016x}",
            xxhash_rust::xxh64::xxh64(text.as_bytes(), 0)
        ))
    }

    /// The order as pretty JSON.
    ///
    /// # Errors
    /// [`Error::Json`] when it cannot be serialized.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(|source| Error::Json {
            context: "writing the work order".into(),
            source,
        })
    }

    /// Reads an order from its JSON `text`; `name` (its path) names it in errors.
    ///
    /// # Errors
    /// [`Error::WorkOrder`] when the text is not a work order, has another format version
    /// or kind, or its fingerprint does not match its content (it was altered).
    pub fn from_json(text: &str, name: &str) -> Result<Self> {
        let document = &format!("work order '{name}'");
        let value: Value = serde_json::from_str(text).map_err(|e| Error::WorkOrder {
            document: document.to_string(),
            message: format!("is not JSON: {e}"),
        })?;
        check_header(&value, ORDER_KIND, document)?;
        let order: Self = serde_json::from_value(value).map_err(|e| Error::WorkOrder {
            document: document.to_string(),
            message: format!("is not a valid work order: {e}"),
        })?;
        if order.producer != PRODUCER {
            return Err(Error::WorkOrder {
                document: document.to_string(),
                message: format!(
                    "was made by {}; this is {PRODUCER}: plan, execute and commit with the same release",
                    order.producer
                ),
            });
        }
        let fingerprint = order.compute_fingerprint()?;
        if fingerprint != order.fingerprint {
            return Err(Error::WorkOrder {
                document: document.to_string(),
                message: format!(
                    "was altered after it was made (fingerprint {} recorded, {fingerprint} computed); make a new plan",
                    order.fingerprint
                ),
            });
        }
        Ok(order)
    }

    /// The bin with id `id` and its partition.
    #[must_use]
    pub fn bin(&self, id: usize) -> Option<(&PartitionPlan, &Bin)> {
        self.plan
            .partitions
            .iter()
            .find_map(|p| p.bins.iter().find(|b| b.id == id).map(|b| (p, b)))
    }

    /// The commit units of the plan, in plan order: each bin alone, except the bins of a
    /// split clustering scope ([`Bin::key_range`]), which share their input files and so
    /// commit together.
    #[must_use]
    pub fn units(&self) -> Vec<Vec<usize>> {
        let mut units: Vec<Vec<usize>> = Vec::new();
        let mut by_space: BTreeMap<usize, usize> = BTreeMap::new();
        for bin in self.plan.bins() {
            match bin.key_range {
                Some(range) => match by_space.get(&range.space) {
                    Some(&u) => units[u].push(bin.id),
                    None => {
                        by_space.insert(range.space, units.len());
                        units.push(vec![bin.id]);
                    }
                },
                None => units.push(vec![bin.id]),
            }
        }
        units
    }

    /// Every bin id of the plan, in plan order.
    #[must_use]
    pub fn bin_ids(&self) -> Vec<usize> {
        self.plan.bins().map(|b| b.id).collect()
    }

    /// The table the order describes, with its input files ([`TableView::from_description`]),
    /// reached with `storage_options`; no log is read.
    ///
    /// # Errors
    /// As [`TableView::from_description`].
    pub fn table_view(&self, storage_options: StorageOptions) -> Result<TableView> {
        TableView::from_description(
            self.table.clone(),
            self.files
                .iter()
                .map(|f| (f.add.clone(), f.raw_path.clone()))
                .collect(),
            storage_options,
        )
    }

    /// The plan restricted to `bin_ids`, with its clustering's columns resolved against
    /// `table` (the plan's JSON carries the columns' names only).
    fn plan_for(&self, table: &TableView, bin_ids: &BTreeSet<usize>) -> Result<Plan> {
        let mut plan = self.plan.clone();
        for partition in &mut plan.partitions {
            partition.bins.retain(|b| bin_ids.contains(&b.id));
        }
        plan.partitions.retain(|p| !p.bins.is_empty());
        if let Some(clustering) = &mut plan.clustering {
            let mut request =
                plan::cluster::ClusterRequest::new(clustering.curve, clustering.columns.clone());
            request.cube_bytes = Some(clustering.cube_bytes);
            request.full = clustering.full;
            clustering.leaves = plan::cluster::resolve(table, &request)?.leaves;
        }
        Ok(plan)
    }
}

/// Appends `value` as JSON with every object's keys sorted.
fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            out.push('{');
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical_json(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Checks `format_version` and `kind` before the rest is read, for a clear message.
fn check_header(value: &Value, kind: &str, document: &str) -> Result<()> {
    let bad = |message: String| Error::WorkOrder {
        document: document.to_string(),
        message,
    };
    let found_kind = value.get("kind").and_then(Value::as_str);
    if found_kind != Some(kind) {
        return Err(bad(format!(
            "is not a {kind} document (its kind is {})",
            found_kind.map_or_else(|| "missing".to_string(), |k| format!("'{k}'"))
        )));
    }
    match value.get("format_version").and_then(Value::as_u64) {
        Some(v) if v == u64::from(FORMAT_VERSION) => Ok(()),
        Some(v) => Err(bad(format!(
            "has format version {v}; this build reads version {FORMAT_VERSION} only"
        ))),
        None => Err(bad("has no format_version".into())),
    }
}

/// Plans the `optimize` of the table at `location` as a work order: loads the latest version,
/// checks the protocol, plans with `options`' plan options and draws the run id, and checks
/// that the store's commits are atomic (before any worker writes a file). Writes nothing to
/// the table (the S3 probe object is deleted again).
///
/// # Errors
/// Everything [`TableView::load`], [`crate::table::ProtocolInfo::check_writable`],
/// [`plan::plan`] and [`commit::check_atomic_commits`] return.
pub async fn plan(
    location: impl Into<TableLocation>,
    options: &OptimizeOptions,
    split: &SplitOptions,
) -> Result<WorkOrder> {
    let table = TableView::load(location, None).await?;
    table.protocol.check_writable(&table.display_location())?;
    let mut plan = plan::plan(&table, &options.plan)?;
    if plan.run_id.is_empty() {
        plan.run_id = plan::new_run_id();
    }
    if let Some(task_bytes) = split.max_task_bytes {
        if task_bytes == 0 {
            return Err(Error::invalid_option(
                crate::Setting::TaskSize,
                "must be greater than 0",
            ));
        }
        split_scopes(&table, &mut plan, task_bytes, split.sample_files.max(1)).await?;
        if options.verify && !plan.key_spaces.is_empty() {
            return Err(Error::invalid_option(
                crate::Setting::Verify,
                "cannot check a clustering scope split over several bins (each bin reads the scope's files but writes only its key ranges); plan without verification, or with a task size above the largest scope",
            ));
        }
    }
    if !plan.is_empty() {
        commit::check_atomic_commits(&table, &plan.run_id).await?;
    }
    WorkOrder::new(
        &table,
        plan,
        OrderSettings {
            codec: options.codec.spec(),
            memory_limit_bytes: options.memory_limit_bytes,
            verify: options.verify,
        },
    )
}

/// How `plan` splits clustering scopes too large for one task.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SplitOptions {
    /// Input bytes of a clustering scope above which it is split into key ranges over
    /// `ceil(bytes / max_task_bytes)` bins, each reading the whole scope and writing its
    /// ranges (read amplification: the number of bins). `None` (the default) never splits.
    pub max_task_bytes: Option<u64>,
    /// Files of a scope read for its sample; [`SPLIT_SAMPLE_FILES`] by default.
    pub sample_files: usize,
}

impl Default for SplitOptions {
    fn default() -> Self {
        Self {
            max_task_bytes: None,
            sample_files: SPLIT_SAMPLE_FILES,
        }
    }
}

impl SplitOptions {
    /// Split clustering scopes above `bytes` of input (`None`: never).
    #[must_use]
    pub fn with_max_task_bytes(mut self, bytes: Option<u64>) -> Self {
        self.max_task_bytes = bytes;
        self
    }
}

/// Splits every clustering bin of `plan` above `task_bytes` of input into
/// `ceil(input / task_bytes)` bins over one key space (see [`KeySpace`]), sampled from up to
/// `sample_files` of its files; other bins are left as they are. New bins take ids after the
/// plan's largest; a scope's first bin keeps its id.
async fn split_scopes(
    table: &TableView,
    plan: &mut Plan,
    task_bytes: u64,
    sample_files: usize,
) -> Result<()> {
    let Some(request) = plan.clustering.clone() else {
        return Ok(());
    };
    let mut next_id = plan.bins().map(|b| b.id + 1).max().unwrap_or(0);
    let reader = Reader::for_table(table)?;
    for index in 0..plan.partitions.len() {
        let bins = std::mem::take(&mut plan.partitions[index].bins);
        let mut out = Vec::with_capacity(bins.len());
        for bin in bins {
            let tasks = usize::try_from(bin.input_bytes.div_ceil(task_bytes)).unwrap_or(usize::MAX);
            if tasks < 2 {
                out.push(bin);
                continue;
            }
            let wanted_ranges = usize::try_from(bin.expected_output_files)
                .unwrap_or(usize::MAX)
                .max(tasks);
            // Evenly spaced files, in log order.
            let step = bin.files.len().div_ceil(sample_files).max(1);
            let sample: Vec<usize> = bin.files.iter().copied().step_by(step).collect();
            let (columns, boundaries, sampled_rows) = {
                let (table, clustering, reader, sample) = (
                    table.clone(),
                    request.clone(),
                    reader.clone(),
                    sample.clone(),
                );
                tokio::task::spawn_blocking(move || {
                    crate::rewrite::cluster::sample_key_space(
                        &table,
                        &clustering,
                        &reader,
                        &sample,
                        wanted_ranges,
                    )
                })
                .await
                .map_err(|e| Error::Internal(format!("the sampling task failed: {e}")))??
            };
            if sampled_rows == 0 {
                out.push(bin);
                continue;
            }
            let space = plan.key_spaces.len();
            let ranges = boundaries.len() + 1;
            plan.key_spaces.push(KeySpace {
                scope: bin.id,
                cube_id: uuid::Uuid::new_v4().to_string(),
                columns,
                boundaries,
                input_rows: bin.input_rows,
                sampled_rows,
                sampled_files: sample.len(),
            });
            let tasks = tasks.min(ranges);
            for task in 0..tasks {
                let (first, end) = (task * ranges / tasks, (task + 1) * ranges / tasks);
                let id = if task == 0 {
                    bin.id
                } else {
                    next_id += 1;
                    next_id - 1
                };
                out.push(Bin {
                    id,
                    files: bin.files.clone(),
                    input_bytes: bin.input_bytes,
                    input_rows: None,
                    num_deletion_vectors: bin.num_deletion_vectors,
                    expected_output_files: (end - first) as u64,
                    key_range: Some(KeyRange { space, first, end }),
                });
            }
        }
        plan.partitions[index].bins = out;
    }
    Ok(())
}

/// What a worker returns for one bin: the files it wrote and the rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinResult {
    /// The plan's run id.
    pub run_id: String,
    /// The order's fingerprint.
    pub fingerprint: String,
    /// The bin's id.
    pub bin_id: usize,
    /// Live rows read from the input files, equal to the rows written.
    pub rows: u64,
    /// The bin was clustered out of core (through spill files).
    pub spilled: bool,
    /// The written files were read back and hold exactly the rows read.
    pub verified: bool,
    /// The files written, with their stats, in write order.
    pub files: Vec<WrittenFile>,
}

/// A document of bin results, as `execute` writes it and `commit` reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultDocument {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// [`RESULTS_KIND`].
    pub kind: String,
    /// The results, one per bin executed.
    pub results: Vec<BinResult>,
}

impl ResultDocument {
    /// A document holding `results`.
    #[must_use]
    pub fn new(results: Vec<BinResult>) -> Self {
        Self {
            format_version: FORMAT_VERSION,
            kind: RESULTS_KIND.to_string(),
            results,
        }
    }

    /// Reads a result document from its JSON `text`; `name` (its path) names it in errors.
    ///
    /// # Errors
    /// [`Error::WorkOrder`] when the text is not a result document of this format version.
    pub fn from_json(text: &str, name: &str) -> Result<Self> {
        let document = &format!("result document '{name}'");
        let value: Value = serde_json::from_str(text).map_err(|e| Error::WorkOrder {
            document: document.to_string(),
            message: format!("is not JSON: {e}"),
        })?;
        check_header(&value, RESULTS_KIND, document)?;
        serde_json::from_value(value).map_err(|e| Error::WorkOrder {
            document: document.to_string(),
            message: format!("is not a valid result document: {e}"),
        })
    }
}

/// Executes the bins `bin_ids` of `order`: reads their input files from the table's store
/// (reached with `storage_options`), writes their output files, and returns one result per
/// bin, in plan order. Reads no log and commits nothing. Uses `options`' execution settings
/// (threads, read concurrency, spill directory, cancel flag); codec, memory limit (unless
/// `options` sets one) and verify come from the order. Must be called on a multi-threaded
/// tokio runtime.
///
/// # Errors
/// [`Error::WorkOrder`] for an unknown bin id or none at all; everything
/// [`TableView::from_description`] returns; the first bin error ([`Error::DataFile`] for a
/// missing or changed input file); [`Error::VerifyFailed`] when verification finds a
/// difference; [`Error::Cancelled`]. On error every file written is deleted.
pub async fn execute(
    order: &WorkOrder,
    bin_ids: &[usize],
    storage_options: StorageOptions,
    options: &OptimizeOptions,
    progress: Arc<dyn Progress>,
) -> Result<Vec<BinResult>> {
    let plan_ids: BTreeSet<usize> = order.bin_ids().into_iter().collect();
    if bin_ids.is_empty() {
        return Err(Error::WorkOrder {
            document: format!("the work order of run {}", order.plan.run_id),
            message: "was given no bin to execute".into(),
        });
    }
    let wanted: BTreeSet<usize> = bin_ids.iter().copied().collect();
    if let Some(unknown) = wanted.iter().find(|id| !plan_ids.contains(id)) {
        return Err(Error::WorkOrder {
            document: format!("the work order of run {}", order.plan.run_id),
            message: format!(
                "has no bin {unknown} (its bins: {})",
                describe_ids(&plan_ids.iter().copied().collect::<Vec<_>>())
            ),
        });
    }
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
    table.protocol.check_writable(&table.display_location())?;
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
        crate::optimize::write_bins(table, plan, &options, reader, progress).await?;
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
            let outcomes = outcomes.clone();
            let cancel = options.cancel.clone();
            tokio::task::spawn_blocking(move || {
                crate::verify::check_rewrite(&table, &outcomes, progress.as_ref(), &cancel)
            })
            .await
            .map_err(|e| Error::Internal(format!("the verify task failed: {e}")))?
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
    Ok(outcomes
        .into_iter()
        .map(|o| BinResult {
            run_id: order.plan.run_id.clone(),
            fingerprint: order.fingerprint.clone(),
            bin_id: o.bin_id,
            rows: o.rows,
            spilled: o.spilled,
            verified: verify,
            files: o.written,
        })
        .collect())
}

fn plan_has_split(plan: &Plan, bins: &BTreeSet<usize>) -> bool {
    plan.bins()
        .any(|b| bins.contains(&b.id) && b.key_range.is_some())
}

fn describe_ids(ids: &[usize]) -> String {
    match ids {
        [] => "none".into(),
        [one] => one.to_string(),
        [first, .., last] if last - first + 1 == ids.len() => format!("{first} to {last}"),
        _ => ids
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Options of the commit step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommitOptions {
    /// Bins per commit; 0 ([`DEFAULT_BATCH_BINS`]) commits every bin in one commit.
    pub batch_bins: usize,
}

impl CommitOptions {
    /// Commit at most `bins` bins per commit (0: all in one).
    #[must_use]
    pub fn with_batch_bins(mut self, bins: usize) -> Self {
        self.batch_bins = bins;
        self
    }
}

/// A bin the commit step left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedBin {
    /// The bin's id.
    pub bin_id: usize,
    /// Why, for people: the version of another writer that removed one of its input files.
    pub reason: String,
}

/// What the commit step did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CommitOutcome {
    /// The table, for display.
    pub table: String,
    /// The run id.
    pub run_id: String,
    /// The version the plan read.
    pub read_version: u64,
    /// The versions committed by this step, one per batch, in order.
    pub versions: Vec<u64>,
    /// Bins committed by this step.
    pub bins_committed: Vec<usize>,
    /// Bins an earlier commit step of the same run had committed (skipped).
    pub bins_already_committed: Vec<usize>,
    /// Bins dropped because another writer removed or re-added one of their input files.
    pub bins_dropped: Vec<DroppedBin>,
    /// Bins of the plan with no result given (left uncommitted; their files are kept).
    pub bins_without_result: Vec<usize>,
    /// Bins with a result whose split clustering scope has bins without one: left
    /// uncommitted until every bin of the scope has a result (their files are kept).
    pub bins_waiting: Vec<usize>,
    /// Files removed by this step's commits.
    pub files_removed: u64,
    /// Files added by this step's commits.
    pub files_added: u64,
    /// Bytes removed.
    pub bytes_removed: u64,
    /// Bytes added.
    pub bytes_added: u64,
    /// Rows rewritten by this step's commits.
    pub rows: u64,
    /// Data files of the run deleted because no commit refers to them (dropped bins, failed
    /// or superseded attempts).
    pub files_deleted: u64,
}

/// What the commits after the plan's version say about this run.
#[derive(Debug, Default)]
struct LogScan {
    /// The first version not read yet.
    next_version: u64,
    /// Input paths (decoded) removed by this run's commits.
    own_removed: HashSet<String>,
    /// File names (last path segment) added by this run's commits.
    own_added_names: HashSet<String>,
    /// The highest `txn.version` of this run's commits.
    last_batch: Option<i64>,
    /// Paths (decoded) another writer removed or re-added: the version and the verb.
    touched: HashMap<String, (u64, &'static str)>,
    /// The first metadata or protocol change by another writer.
    schema_change: Option<(u64, &'static str)>,
    /// The row ID high-water mark of the newest commit that set one.
    high_water_mark: Option<i64>,
}

impl LogScan {
    /// Reads every commit from `next_version` on, until the first that does not exist.
    async fn advance(&mut self, table: &TableView, run_id: &str) -> Result<()> {
        let log_store = table.log_store.as_ref();
        let mut rereads = 0;
        loop {
            loop {
                let version = self.next_version;
                let Some(bytes) = log_store
                    .read_commit_entry(version)
                    .await
                    .map_err(|e| Error::delta(format!("reading version {version}"), e))?
                else {
                    break;
                };
                self.read_commit(version, &bytes, run_id)?;
                self.next_version += 1;
            }
            // A log whose entries after the plan's version were cleaned up reads as if nothing
            // came after it: committing there would overwrite history. A listing that shows a
            // newer version may also mean another writer just committed: read on, then ask
            // again.
            let latest = log_store
                .get_latest_version(self.next_version.saturating_sub(1))
                .await
                .map_err(|e| Error::delta("finding the latest version".to_string(), e))?;
            if latest < self.next_version {
                return Ok(());
            }
            let appeared = log_store
                .read_commit_entry(self.next_version)
                .await
                .map_err(|e| Error::delta(format!("reading version {}", self.next_version), e))?
                .is_some();
            rereads += 1;
            if !appeared || rereads > 100 {
                break;
            }
        }
        Err(Error::DamagedLog {
            table: table.display_location(),
            file: format!("_delta_log/{:020}.json", self.next_version),
            message: format!(
                "is missing although a later version exists (log entries after the plan's version {} were cleaned up): plan again",
                table.version
            ),
        })
    }

    fn read_commit(&mut self, version: u64, bytes: &[u8], run_id: &str) -> Result<()> {
        let text = String::from_utf8_lossy(bytes);
        let mut actions = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let action: Value = serde_json::from_str(line).map_err(|source| Error::Json {
                context: format!("reading commit {version}"),
                source,
            })?;
            actions.push(action);
        }
        let own = actions.iter().any(|a| {
            a.get("commitInfo")
                .and_then(|c| c.get(COMMIT_INFO_RUN_ID))
                .and_then(Value::as_str)
                == Some(run_id)
        });
        let decoded = |path: &str| {
            percent_encoding::percent_decode_str(path)
                .decode_utf8_lossy()
                .into_owned()
        };
        for action in &actions {
            if let Some(domain) = action.get("domainMetadata")
                && domain.get("domain").and_then(Value::as_str)
                    == Some(crate::table::row_tracking::ROW_TRACKING_DOMAIN)
                && let Some(mark) = domain
                    .get("configuration")
                    .and_then(Value::as_str)
                    .and_then(|c| serde_json::from_str::<Value>(c).ok())
                    .and_then(|c| c.get("rowIdHighWaterMark").and_then(Value::as_i64))
            {
                self.high_water_mark = Some(mark);
            }
            if own {
                if let Some(path) = action
                    .get("remove")
                    .and_then(|r| r.get("path"))
                    .and_then(Value::as_str)
                {
                    self.own_removed.insert(decoded(path));
                }
                if let Some(path) = action
                    .get("add")
                    .and_then(|r| r.get("path"))
                    .and_then(Value::as_str)
                {
                    let path = decoded(path);
                    let name = path.rsplit('/').next().unwrap_or(&path).to_string();
                    self.own_added_names.insert(name);
                }
                if let Some(txn) = action.get("txn")
                    && txn.get("appId").and_then(Value::as_str) == Some(run_id)
                    && let Some(batch) = txn.get("version").and_then(Value::as_i64)
                {
                    self.last_batch = Some(self.last_batch.map_or(batch, |b| b.max(batch)));
                }
                continue;
            }
            if self.schema_change.is_none() {
                if action.get("metaData").is_some() {
                    self.schema_change = Some((version, "changed the table metadata"));
                } else if action.get("protocol").is_some() {
                    self.schema_change = Some((version, "changed the table protocol"));
                }
            }
            for (kind, verb) in [("remove", "removed"), ("add", "re-added")] {
                if let Some(path) = action
                    .get(kind)
                    .and_then(|a| a.get("path"))
                    .and_then(Value::as_str)
                {
                    self.touched.entry(decoded(path)).or_insert((version, verb));
                }
            }
        }
        Ok(())
    }
}

/// The results given for one bin, checked against the order, in the order given.
struct Candidates {
    results: Vec<BinResult>,
    /// Indices into [`WorkOrder::files`].
    input_files: Vec<usize>,
}

/// Commits the results of `order`'s bins (see the module docs): checks them, skips bins this
/// run already committed, drops bins another writer touched, and commits the rest in batches
/// of `options.batch_bins`, each with a `txn` of the run. Must be called on a multi-threaded
/// tokio runtime.
///
/// A result is believed only as far as storage confirms it: each written file must exist with
/// its size and hold, by its Parquet footer, the rows the result says; a bin's rows must equal
/// its input's live rows, from the log's `numRecords` or, where the log has none, from the
/// input files' footers less their deleted rows. Of several results for one bin, the first
/// whose files pass is used; the others' files are deleted unless a commit refers to them.
///
/// # Errors
/// * [`Error::WorkOrder`] naming the bin whose result does not belong to the order (another
///   run or plan, an unknown bin, rows that differ from its input's, a file outside the bin's
///   directory, not named after the run and bin, listed twice, missing, of another size or
///   row count, or not verified when the plan asks for it); nothing is committed then.
/// * [`Error::CommitStopped`] (exit code 3) when another writer changed the table's metadata
///   or protocol after the plan (the bins not committed yet are dropped and their files
///   deleted), or kept winning the race for the next version.
/// * [`Error::DamagedLog`] when log entries after the plan's version were cleaned up.
/// * [`Error::CommitOutcomeUnknown`], [`Error::Delta`], [`Error::ObjectStore`] from the
///   store; the files of bins not committed are kept, so the step can be run again.
pub async fn commit(
    order: &WorkOrder,
    results: Vec<BinResult>,
    storage_options: StorageOptions,
    options: &CommitOptions,
) -> Result<CommitOutcome> {
    let table = order.table_view(storage_options)?;
    let run_id = order.plan.run_id.clone();
    let mut outcome = CommitOutcome {
        table: table.display_location(),
        run_id: run_id.clone(),
        read_version: table.version,
        ..CommitOutcome::default()
    };
    // 1. Check every result against the order.
    let mut candidates: BTreeMap<usize, Candidates> = BTreeMap::new();
    for result in results {
        check_result(order, &result)?;
        let (_, bin) = order.bin(result.bin_id).expect("checked");
        candidates
            .entry(bin.id)
            .or_insert_with(|| Candidates {
                results: Vec::new(),
                input_files: bin.files.clone(),
            })
            .results
            .push(result);
    }
    let store = table.log_store.object_store(None);
    // 2. What happened after the plan.
    let mut scan = LogScan {
        next_version: table.version + 1,
        ..LogScan::default()
    };
    scan.advance(&table, &run_id).await?;
    // Commit units: a bin, or every bin of a split clustering scope (they remove the same
    // files, so they commit together or not at all).
    let mut ready: Vec<Vec<usize>> = Vec::new();
    for unit in order.units() {
        let given = unit.iter().filter(|id| candidates.contains_key(id)).count();
        if given < unit.len() {
            outcome
                .bins_without_result
                .extend(unit.iter().filter(|id| !candidates.contains_key(id)));
            outcome
                .bins_waiting
                .extend(unit.iter().filter(|id| candidates.contains_key(id)));
            continue;
        }
        ready.push(unit);
    }
    // The result chosen for each bin about to be committed; files to delete at the end.
    let mut chosen: BTreeMap<usize, BinResult> = BTreeMap::new();
    let mut races = 0;
    let mut done: BTreeSet<usize> = BTreeSet::new(); // units (by first bin) settled
    loop {
        // Sort the complete units: committed by this run before, touched by another writer,
        // or still to commit.
        let mut pending: Vec<&Vec<usize>> = Vec::new();
        for unit in &ready {
            if done.contains(&unit[0]) {
                continue;
            }
            let paths: Vec<&str> = candidates[&unit[0]]
                .input_files
                .iter()
                .map(|&i| order.files[i].add.path.as_str())
                .collect();
            if paths.iter().any(|p| scan.own_removed.contains(*p)) {
                outcome.bins_already_committed.extend(unit.iter().copied());
                done.insert(unit[0]);
            } else if let Some((path, (version, verb))) =
                paths.iter().find_map(|p| scan.touched.get_key_value(*p))
            {
                for id in unit {
                    outcome.bins_dropped.push(DroppedBin {
                        bin_id: *id,
                        reason: format!("version {version} {verb} its input file '{path}'"),
                    });
                }
                done.insert(unit[0]);
            } else {
                pending.push(unit);
            }
        }
        if let Some((version, reason)) = scan.schema_change
            && !pending.is_empty()
        {
            let waiting: Vec<usize> = pending.iter().flat_map(|u| u.iter().copied()).collect();
            let deleted = clean_up(&store, order, &candidates, &outcome, &scan, &waiting).await?;
            return Err(Error::CommitStopped {
                table: table.display_location(),
                version,
                reason: format!(
                    "{reason} after the plan's version {}: {} bins of run {run_id} were committed before it (they stay), the other {} were not and never will be under this plan ({deleted} files deleted)",
                    table.version,
                    outcome.bins_committed.len() + outcome.bins_already_committed.len(),
                    waiting.len()
                ),
            });
        }
        let Some(batch) = next_batch(&pending, options.batch_bins) else {
            break;
        };
        // 3. The batch's results, confirmed by storage.
        for id in &batch {
            if !chosen.contains_key(id) {
                let result = choose_result(&store, &candidates[id].results).await?;
                chosen.insert(*id, result);
            }
        }
        check_unit_rows(&table, order, &batch, &chosen, &candidates).await?;
        // 4. One commit: a view at the last version read, with the row ID mark it left.
        let mut view = table.clone();
        view.version = scan.next_version - 1;
        if let (Some(tracking), Some(mark)) = (view.row_tracking.as_mut(), scan.high_water_mark) {
            tracking.high_water_mark = Some(mark);
        }
        let outcomes: Vec<BinOutcome> = batch
            .iter()
            .map(|id| {
                let result = &chosen[id];
                BinOutcome {
                    bin_id: *id,
                    input_files: candidates[id].input_files.clone(),
                    rows: result.rows,
                    spilled: result.spilled,
                    written: result.files.clone(),
                }
            })
            .collect();
        let mut actions = commit::actions(&view, &order.plan, &outcomes)?;
        let batch_number = scan.last_batch.map_or(0, |b| b + 1);
        actions.insert(
            1,
            Action::Txn(Transaction::new_with_last_update(
                &run_id,
                batch_number,
                Some(chrono::Utc::now().timestamp_millis()),
            )),
        );
        match commit::commit(&view, &actions).await {
            Ok(version) => {
                done.extend(batch.iter().copied());
                outcome.versions.push(version);
                outcome.bins_committed.extend(batch.iter().copied());
                let mut removed = HashSet::new();
                for o in &outcomes {
                    for &i in o.input_files.iter().filter(|&&i| removed.insert(i)) {
                        outcome.files_removed += 1;
                        outcome.bytes_removed +=
                            u64::try_from(order.files[i].add.size).unwrap_or(0);
                    }
                    outcome.files_added += o.written.len() as u64;
                    outcome.bytes_added += o.written.iter().map(|w| w.size_bytes).sum::<u64>();
                    outcome.rows += o.rows;
                }
                if let Err(e) = commit::write_checkpoint_if_due(&view, version).await {
                    log::warn!("version {version} is committed, but its checkpoint failed: {e}");
                }
                races = 0;
            }
            // Another writer touched a file of the batch, or took the versions: read what it
            // did and try again (without the bins it touched). Only tries that drop no bin
            // count against the limit.
            Err(Error::ConcurrentModification {
                winning_version,
                reason,
                ..
            }) => {
                let dropped = outcome.bins_dropped.len();
                scan.advance(&table, &run_id).await?;
                let touched = batch.iter().any(|id| {
                    candidates[id]
                        .input_files
                        .iter()
                        .any(|&i| scan.touched.contains_key(&order.files[i].add.path))
                });
                if !touched && scan.schema_change.is_none() && dropped == outcome.bins_dropped.len()
                {
                    races += 1;
                    if races >= MAX_BATCH_ATTEMPTS {
                        return Err(Error::CommitStopped {
                            table: table.display_location(),
                            version: winning_version,
                            reason: format!(
                                "{reason}; {} bins of run {run_id} were committed before (they stay), the others were not: their files are kept, run commit again",
                                outcome.bins_committed.len() + outcome.bins_already_committed.len()
                            ),
                        });
                    }
                }
                continue;
            }
            Err(e) => return Err(e),
        }
        scan.advance(&table, &run_id).await?;
    }
    // 5. Files of the run no commit refers to: dropped bins, superseded results, and files of
    // failed attempts of settled bins found in their directories.
    outcome.files_deleted = clean_up(&store, order, &candidates, &outcome, &scan, &[]).await?;
    outcome.bins_committed.sort_unstable();
    outcome.bins_already_committed.sort_unstable();
    Ok(outcome)
}

/// How often a batch is retried after losing the race for the next version without any of
/// its bins being touched (a busy table); each such loss already retried
/// [`commit::MAX_COMMIT_ATTEMPTS`] times.
const MAX_BATCH_ATTEMPTS: usize = 3;

fn next_batch(pending: &[&Vec<usize>], batch_bins: usize) -> Option<Vec<usize>> {
    if pending.is_empty() {
        return None;
    }
    // Whole units, at least one, until the batch holds `batch_bins` bins (0: all).
    let mut batch: Vec<usize> = Vec::new();
    for unit in pending {
        if batch_bins > 0 && !batch.is_empty() && batch.len() + unit.len() > batch_bins {
            break;
        }
        batch.extend(unit.iter().copied());
    }
    Some(batch)
}

/// Checks what a result says against the order alone (no storage).
fn check_result(order: &WorkOrder, result: &BinResult) -> Result<()> {
    let run_id = &order.plan.run_id;
    let bad = |message: String| Error::WorkOrder {
        document: format!("the result of bin {}", result.bin_id),
        message,
    };
    if &result.run_id != run_id {
        return Err(bad(format!(
            "belongs to run {}, not to this plan's run {run_id}",
            result.run_id
        )));
    }
    if result.fingerprint != order.fingerprint {
        return Err(bad(format!(
            "was made from another plan (fingerprint {}, this plan's is {})",
            result.fingerprint, order.fingerprint
        )));
    }
    let Some((partition, bin)) = order.bin(result.bin_id) else {
        return Err(bad("names a bin this plan does not have".into()));
    };
    if order.settings.verify && !result.verified {
        return Err(bad(
            "was not verified, but the plan asks every bin to be".into()
        ));
    }
    if let Some(expected) = bin.input_rows
        && expected != result.rows
    {
        return Err(bad(format!(
            "read {} rows, but its input files hold {expected} live rows",
            result.rows
        )));
    }
    let written: u64 = result.files.iter().map(|f| f.num_records).sum();
    if written != result.rows {
        return Err(bad(format!(
            "wrote {written} rows in its files but read {}",
            result.rows
        )));
    }
    let prefix = if partition.directory.is_empty() {
        String::new()
    } else {
        format!("{}/", partition.directory)
    };
    let name_start = format!("part-{:05}-{run_id}-", bin.id);
    let mut seen = HashSet::new();
    for file in &result.files {
        let name = file.path.strip_prefix(&prefix).unwrap_or("");
        if name.contains('/') || !name.starts_with(&name_start) {
            return Err(bad(format!(
                "names file '{}', which is not a file of this bin ('{prefix}{name_start}...')",
                file.path
            )));
        }
        if !seen.insert(file.path.as_str()) {
            return Err(bad(format!("names file '{}' twice", file.path)));
        }
    }
    Ok(())
}

/// The first of `results` (of one bin) whose every file exists with its size and row count.
async fn choose_result(
    store: &Arc<dyn deltalake::ObjectStore>,
    results: &[BinResult],
) -> Result<BinResult> {
    let mut first_error = None;
    for result in results {
        match check_files(store, result).await {
            Ok(()) => return Ok(result.clone()),
            Err(e @ Error::WorkOrder { .. }) => {
                first_error.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(first_error.unwrap_or_else(|| Error::Internal("a bin without results".into())))
}

/// Checks that every file of `result` exists with its size and, by its Parquet footer, holds
/// the rows the result gives it.
async fn check_files(store: &Arc<dyn deltalake::ObjectStore>, result: &BinResult) -> Result<()> {
    let id = result.bin_id;
    let checks = futures::stream::iter(result.files.iter().map(|file| {
        let store = store.clone();
        async move {
            let bad = |message: String| Error::WorkOrder {
                document: format!("the result of bin {id}"),
                message,
            };
            let path = deltalake::Path::parse(&file.path)
                .unwrap_or_else(|_| deltalake::Path::from(file.path.as_str()));
            match store.head(&path).await {
                Ok(meta) if meta.size == file.size_bytes => {}
                Ok(meta) => {
                    return Err(bad(format!(
                        "names file '{}' of {} bytes, but the file has {} bytes",
                        file.path, file.size_bytes, meta.size
                    )));
                }
                Err(deltalake::ObjectStoreError::NotFound { .. }) => {
                    return Err(bad(format!(
                        "names file '{}', which does not exist (deleted by a clean-up, or written to another table); execute the bin again",
                        file.path
                    )));
                }
                Err(e) => {
                    return Err(Error::ObjectStore {
                        path: file.path.clone(),
                        source: Box::new(e),
                    });
                }
            }
            let rows = parquet_rows(&store, &path, file.size_bytes)
                .await
                .map_err(|message| bad(format!("names file '{}', which {message}", file.path)))?;
            if rows != file.num_records {
                return Err(bad(format!(
                    "says file '{}' holds {} rows, but its footer says {rows}",
                    file.path, file.num_records
                )));
            }
            Ok(())
        }
    }))
    .buffer_unordered(32)
    .collect::<Vec<_>>()
    .await;
    checks.into_iter().collect()
}

/// The row count in the Parquet footer of the object at `path` of `size` bytes: two ranged
/// reads (the footer's length, then the footer).
async fn parquet_rows(
    store: &Arc<dyn deltalake::ObjectStore>,
    path: &deltalake::Path,
    size: u64,
) -> std::result::Result<u64, String> {
    use deltalake::parquet::file::metadata::{FooterTail, ParquetMetaDataReader};
    if size < 12 {
        return Err("is too small to be a Parquet file".into());
    }
    let tail = store
        .get_range(path, size - 8..size)
        .await
        .map_err(|e| format!("cannot be read: {e}"))?;
    let footer =
        FooterTail::try_from(tail.as_ref()).map_err(|e| format!("is not a Parquet file: {e}"))?;
    let length = footer.metadata_length() as u64;
    if length + 8 > size {
        return Err("is not a Parquet file (its footer is longer than the file)".into());
    }
    let bytes = store
        .get_range(path, size - 8 - length..size - 8)
        .await
        .map_err(|e| format!("cannot be read: {e}"))?;
    let metadata = ParquetMetaDataReader::decode_metadata(&bytes)
        .map_err(|e| format!("has an unreadable Parquet footer: {e}"))?;
    u64::try_from(metadata.file_metadata().num_rows())
        .map_err(|_| "has a negative row count in its footer".to_string())
}

/// Checks, for every unit of `batch`, that the rows of its bins equal its input's live rows:
/// the log's counts where it has them (the plan's, or the key space's for a split scope),
/// else the input files' footers less the rows their deletion vectors delete.
async fn check_unit_rows(
    table: &TableView,
    order: &WorkOrder,
    batch: &[usize],
    chosen: &BTreeMap<usize, BinResult>,
    candidates: &BTreeMap<usize, Candidates>,
) -> Result<()> {
    let store = table.log_store.object_store(None);
    let mut seen = HashSet::new();
    for unit in order.units() {
        if !batch.contains(&unit[0]) || !seen.insert(unit[0]) {
            continue;
        }
        let (_, first) = order.bin(unit[0]).expect("a bin of the plan");
        let known = match first.key_range {
            Some(range) => {
                order
                    .plan
                    .key_spaces
                    .get(range.space)
                    .ok_or_else(|| Error::WorkOrder {
                        document: format!("the work order of run {}", order.plan.run_id),
                        message: format!(
                            "names key space {} for bin {}, which it does not have",
                            range.space, unit[0]
                        ),
                    })?
                    .input_rows
            }
            None => first.input_rows,
        };
        let expected = match known {
            Some(rows) => rows,
            None => {
                let mut rows = 0u64;
                for &i in &candidates[&unit[0]].input_files {
                    let file = &table.files[i];
                    let path = crate::rewrite::read::object_path(&table.location, &file.path)?;
                    let physical = parquet_rows(&store, &path, file.size_bytes)
                        .await
                        .map_err(|message| Error::data_file(&file.path, message))?;
                    rows += physical.saturating_sub(file.num_deleted_rows());
                }
                rows
            }
        };
        let got: u64 = unit.iter().map(|id| chosen[id].rows).sum();
        if got != expected {
            let document = if unit.len() == 1 {
                format!("the result of bin {}", unit[0])
            } else {
                format!(
                    "the results of bins {} (one clustering scope)",
                    describe_ids(&unit)
                )
            };
            return Err(Error::WorkOrder {
                document,
                message: format!(
                    "hold {got} rows, but their input files hold {expected} live rows"
                ),
            });
        }
    }
    Ok(())
}

/// Deletes the files of this run that no commit refers to and no later commit step can use:
/// every result of a dropped bin, of a bin in `abandoned` (never to be committed), the
/// results of settled bins that were not committed, and files of failed attempts of settled
/// bins found in their directories. A file a commit of this run added is never deleted.
/// Returns how many files were deleted.
async fn clean_up(
    store: &Arc<dyn deltalake::ObjectStore>,
    order: &WorkOrder,
    candidates: &BTreeMap<usize, Candidates>,
    outcome: &CommitOutcome,
    scan: &LogScan,
    abandoned: &[usize],
) -> Result<u64> {
    let settled: BTreeSet<usize> = outcome
        .bins_committed
        .iter()
        .chain(&outcome.bins_already_committed)
        .chain(outcome.bins_dropped.iter().map(|d| &d.bin_id))
        .chain(abandoned)
        .copied()
        .collect();
    let mut doomed: BTreeSet<String> = settled
        .iter()
        .filter_map(|id| candidates.get(id))
        .flat_map(|c| c.results.iter().flat_map(|r| r.files.iter()))
        .map(|f| f.path.clone())
        .collect();
    doomed.extend(stray_files(store, order, &settled, &scan.own_added_names).await?);
    // Never a file a commit of this run added.
    doomed.retain(|p| {
        !scan
            .own_added_names
            .contains(p.rsplit('/').next().unwrap_or(p))
    });
    Ok(delete_paths(store, doomed.into_iter()).await)
}

/// Files in the directories of `settled` bins named after the run and one of those bins
/// that no commit of the run added: failed or superseded attempts.
async fn stray_files(
    store: &Arc<dyn deltalake::ObjectStore>,
    order: &WorkOrder,
    settled: &BTreeSet<usize>,
    committed_names: &HashSet<String>,
) -> Result<Vec<String>> {
    let mut by_directory: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for partition in &order.plan.partitions {
        for bin in partition.bins.iter().filter(|b| settled.contains(&b.id)) {
            by_directory
                .entry(partition.directory.as_str())
                .or_default()
                .push(format!("part-{:05}-{}-", bin.id, order.plan.run_id));
        }
    }
    let mut out = Vec::new();
    for (directory, prefixes) in by_directory {
        let prefix = (!directory.is_empty()).then(|| {
            deltalake::Path::parse(directory).unwrap_or_else(|_| deltalake::Path::from(directory))
        });
        let listing = store
            .list_with_delimiter(prefix.as_ref())
            .await
            .map_err(|e| Error::ObjectStore {
                path: directory.to_string(),
                source: Box::new(e),
            })?;
        for object in listing.objects {
            let Some(name) = object.location.filename() else {
                continue;
            };
            if prefixes.iter().any(|p| name.starts_with(p.as_str()))
                && !committed_names.contains(name)
            {
                out.push(if directory.is_empty() {
                    name.to_string()
                } else {
                    format!("{directory}/{name}")
                });
            }
        }
    }
    Ok(out)
}

/// Deletes `paths` (relative to the table root), best effort: a failure is a warning.
/// Returns how many existed and were deleted.
async fn delete_paths(
    store: &Arc<dyn deltalake::ObjectStore>,
    paths: impl Iterator<Item = String>,
) -> u64 {
    let paths: Vec<deltalake::Path> = paths
        .map(|p| deltalake::Path::parse(&p).unwrap_or_else(|_| deltalake::Path::from(p.as_str())))
        .collect();
    if paths.is_empty() {
        return 0;
    }
    let total = paths.len();
    let mut deleted = 0u64;
    let mut failed: Vec<deltalake::ObjectStoreError> = Vec::new();
    let mut results = store.delete_stream(futures::stream::iter(paths.into_iter().map(Ok)).boxed());
    while let Some(result) = results.next().await {
        match result {
            Ok(_) => deleted += 1,
            Err(deltalake::ObjectStoreError::NotFound { .. }) => {}
            Err(e) => failed.push(e),
        }
    }
    if let Some(first) = failed.first() {
        log::warn!(
            "{} of the {total} files of this run that no commit refers to could not be deleted (`vacuum` removes them once past its retention): {first}",
            failed.len()
        );
    }
    deleted
}

/// Reads the document (a work order or results) at `location`: a local path, or a URI of a
/// supported object store (the table's schemes, reached with `storage_options`), so that
/// workers on other machines can fetch it. `what` names it in errors (`work order`).
///
/// # Errors
/// [`Error::WorkOrder`] naming the document when it cannot be read; [`Error::NoTable`] for an
/// unsupported scheme or a bad storage setting.
pub async fn read_document(
    location: &str,
    storage_options: &StorageOptions,
    what: &str,
) -> Result<String> {
    let shown = crate::table::location::redact_uri(location);
    let unreadable = |message: String| Error::WorkOrder {
        document: format!("{what} '{shown}'"),
        message: format!("cannot be read: {message}"),
    };
    match document_store(location, storage_options)? {
        None => std::fs::read_to_string(location).map_err(|e| unreadable(e.to_string())),
        Some((store, path)) => {
            let bytes = async { store.get(&path).await?.bytes().await }
                .await
                .map_err(|e| unreadable(e.to_string()))?;
            String::from_utf8(bytes.to_vec()).map_err(|_| unreadable("it is not UTF-8".into()))
        }
    }
}

/// Writes `text` as the document at `location` (see [`read_document`]): a local file is
/// written beside and renamed over, an object is put whole, so a reader never sees half a
/// document.
///
/// # Errors
/// [`Error::InvalidOption`] naming `--out` when the document cannot be written (a missing
/// directory, inside a table's `_delta_log`, a refused put).
pub async fn write_document(
    location: &str,
    storage_options: &StorageOptions,
    text: &str,
) -> Result<()> {
    let shown = crate::table::location::redact_uri(location);
    let refused = |message: String| {
        Error::invalid_option(
            crate::Setting::Output,
            format!("'{shown}' cannot be written: {message}"),
        )
    };
    match document_store(location, storage_options)? {
        None => {
            let path = std::path::Path::new(location);
            check_document_path(path).map_err(&refused)?;
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => std::path::Path::new("."),
            };
            let write = || -> std::io::Result<()> {
                use std::io::Write as _;
                let mut file = tempfile::NamedTempFile::new_in(parent)?;
                file.write_all(text.as_bytes())?;
                file.write_all(b"\n")?;
                file.as_file().sync_all()?;
                file.persist(path).map_err(|e| e.error)?;
                Ok(())
            };
            write().map_err(|e| refused(e.to_string()))
        }
        Some((store, path)) => {
            if path.as_ref().split('/').any(|part| part == "_delta_log") {
                return Err(refused("it is inside a table's _delta_log".into()));
            }
            store
                .put(&path, bytes::Bytes::from(format!("{text}\n")).into())
                .await
                .map(|_| ())
                .map_err(|e| refused(e.to_string()))
        }
    }
}

/// Checks that a local document path can be written: its directory exists, it is not a
/// directory, and it is not inside a table's `_delta_log`.
///
/// # Errors
/// What is wrong, for people.
pub fn check_document_path(path: &std::path::Path) -> std::result::Result<(), String> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if parent
        .canonicalize()
        .is_ok_and(|p| p.components().any(|c| c.as_os_str() == "_delta_log"))
    {
        return Err("it is inside a table's _delta_log".into());
    }
    if !parent.is_dir() {
        return Err("its directory does not exist".into());
    }
    if path.is_dir() {
        return Err("it is a directory".into());
    }
    Ok(())
}

/// The object store and path of a document URI; `None` for a local path.
fn document_store(
    location: &str,
    storage_options: &StorageOptions,
) -> Result<Option<(Arc<dyn deltalake::ObjectStore>, deltalake::Path)>> {
    let source = TableLocation::new(location).with_storage_options(storage_options.clone());
    if source.store_kind()? == crate::table::StoreKind::Local {
        let local = location.strip_prefix("file://").unwrap_or(location);
        if local != location {
            // A file:// URI: read it as the local path it names.
            return Err(Error::invalid_option(
                crate::Setting::Output,
                format!("give the local path '{local}' instead of a file:// URI"),
            ));
        }
        return Ok(None);
    }
    source.check_settings()?;
    let shown = crate::table::location::redact_uri(location);
    let url = url::Url::parse(location).map_err(|e| Error::NoTable {
        table: shown.clone(),
        message: format!("is not a URI: {e}"),
    })?;
    let name = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::NoTable {
            table: shown.clone(),
            message: "names no file (it ends with '/')".into(),
        })?
        .to_string();
    let mut parent = url.clone();
    parent
        .path_segments_mut()
        .map_err(|()| Error::NoTable {
            table: shown.clone(),
            message: "has no path".into(),
        })?
        .pop();
    let mut builder =
        deltalake::DeltaTableBuilder::from_url(parent).map_err(|e| Error::NoTable {
            table: shown.clone(),
            message: format!("cannot be reached: {e}"),
        })?;
    if !storage_options.is_empty() {
        builder = builder.with_storage_options(storage_options.to_map());
    }
    let table = builder.build().map_err(|e| Error::NoTable {
        table: shown.clone(),
        message: format!("cannot be reached: {e}"),
    })?;
    let name = percent_encoding::percent_decode_str(&name)
        .decode_utf8_lossy()
        .into_owned();
    Ok(Some((
        table.log_store().object_store(None),
        deltalake::Path::from(name.as_str()),
    )))
}
