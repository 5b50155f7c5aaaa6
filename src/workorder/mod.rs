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
//! step (`rewrite::write_bins`) and [`crate::commit::actions`] + [`crate::commit::commit`].
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
//! environment or `--storage-option`. An order with many input files is stored sharded
//! ([`shard`]: a head and documents of at most [`shard::DEFAULT_FILES_PER_SHARD`] files each);
//! [`read_order`] reads the head and the shards a worker's bins need.
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

use std::collections::{BTreeMap, BTreeSet, HashMap};

use deltalake::kernel::Add;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::plan::cluster::{KeyRange, KeySpace};
use crate::plan::{self, Bin, PartitionPlan, Plan};
use crate::prepare::OptimizeOptions;
use crate::rewrite::WrittenFile;
use crate::table::read::Reader;
use crate::table::{StorageOptions, TableDescription, TableLocation, TableView};

mod commit;
mod document;
mod execute;
mod footer;
pub mod shard;

pub use commit::{CommitOptions, CommitOutcome, DroppedBin, commit, snapshot_loads};
pub use document::{check_document_path, read_document, write_document};
pub use execute::execute;
pub use shard::{FileShard, ShardDocument, read_order, write_order};

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
    /// reads it (`zstd:3`).
    pub codec: String,
    /// Memory a clustering bin may buffer, bytes; `None`: a quarter of the worker's memory
    /// (its cgroup's limit where one is set: [`crate::rewrite::default_memory_limit_bytes`]).
    pub memory_limit_bytes: Option<u64>,
    /// Workers read their written files back and compare fingerprints with the input
    /// before returning a result.
    pub verify: bool,
}

impl OrderSettings {
    /// The execution settings of `options` that every worker must share.
    #[must_use]
    pub fn of(options: &OptimizeOptions) -> Self {
        Self {
            codec: options.codec.spec(),
            memory_limit_bytes: options.memory_limit_bytes,
            verify: options.verify,
        }
    }
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
    /// xxHash64 (16 hex digits) of the producer, table, settings, plan, files and shards, keys
    /// sorted. An order read for some bins keeps the fingerprint of the document it was read
    /// from.
    pub fingerprint: String,
    /// The table at the plan's read version.
    pub table: TableDescription,
    /// Execution settings.
    pub settings: OrderSettings,
    /// The plan: run id, target size, partitions and bins.
    pub plan: Plan,
    /// The input files, in bin order: all of them, or none in the head of a sharded order
    /// (see [`shard`]), whose `shards` hold them; an order read for
    /// some bins ([`read_order`]) holds theirs only.
    pub files: Vec<OrderFile>,
    /// The shard documents holding the files of a sharded order, in file order; empty
    /// otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<FileShard>,
    /// Read for some bins only ([`read_order`]): it executes them but never commits.
    #[serde(skip)]
    partial: bool,
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
            shards: Vec::new(),
            partial: false,
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
            &self.shards,
        ))
        .map_err(|source| Error::Json {
            context: "fingerprinting the work order".into(),
            source,
        })?;
        Ok(digest(&value))
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
        let order: Self = parse_document(text, ORDER_KIND, document, "work order")?;
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

    /// Checks that every id of `wanted` is a bin of the plan.
    ///
    /// # Errors
    /// [`Error::WorkOrder`] naming the first unknown id and the plan's bins.
    pub fn check_bins(&self, wanted: &BTreeSet<usize>) -> Result<()> {
        let plan_ids: BTreeSet<usize> = self.plan.bins().map(|b| b.id).collect();
        match wanted.iter().find(|id| !plan_ids.contains(id)) {
            None => Ok(()),
            Some(unknown) => Err(Error::WorkOrder {
                document: format!("the work order of run {}", self.plan.run_id),
                message: format!(
                    "has no bin {unknown} (its bins: {})",
                    describe_ids(&plan_ids.iter().copied().collect::<Vec<_>>())
                ),
            }),
        }
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

/// Refuses the head of a sharded order: its files are in its shards ([`read_order`]).
fn check_assembled(order: &WorkOrder) -> Result<()> {
    if order.shards.is_empty() {
        return Ok(());
    }
    Err(Error::WorkOrder {
        document: format!("the work order of run {}", order.plan.run_id),
        message: "is the head of a sharded order, without its files: read it with read_order"
            .into(),
    })
}

/// Refuses an order read for some bins only: committing it would judge a split scope by the
/// bins it holds, and never see the others.
fn check_whole(order: &WorkOrder) -> Result<()> {
    check_assembled(order)?;
    if !order.partial {
        return Ok(());
    }
    Err(Error::WorkOrder {
        document: format!("the work order of run {}", order.plan.run_id),
        message: "was read for some bins only: commit needs the whole order (read_order with no bin list)"
            .into(),
    })
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

/// Parses a document of `kind` (`what`, for messages): JSON, then the header, then the rest.
fn parse_document<T: serde::de::DeserializeOwned>(
    text: &str,
    kind: &str,
    document: &str,
    what: &str,
) -> Result<T> {
    let value: Value = serde_json::from_str(text).map_err(|e| Error::WorkOrder {
        document: document.to_string(),
        message: format!("is not JSON: {e}"),
    })?;
    check_header(&value, kind, document)?;
    serde_json::from_value(value).map_err(|e| Error::WorkOrder {
        document: document.to_string(),
        message: format!("is not a valid {what}: {e}"),
    })
}

/// xxHash64 of `value`'s JSON with every object's keys sorted, as 16 lowercase hex digits.
fn digest(value: &Value) -> String {
    let mut text = String::new();
    canonical_json(value, &mut text);
    format!("{:016x}", xxhash_rust::xxh64::xxh64(text.as_bytes(), 0))
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
/// Everything [`TableView::load`], [`TableView::check_writable`],
/// [`plan::plan`] and [`crate::commit::check_atomic_commits`] return.
pub async fn plan(
    location: impl Into<TableLocation>,
    options: &OptimizeOptions,
    split: &SplitOptions,
) -> Result<WorkOrder> {
    Ok(plan_within_budget(location, options, split).await?.0)
}

/// [`plan()`], with the bins chosen under `options`' budget
/// ([`OptimizeOptions::with_budget`]: its bytes and least gain; a duration bounds
/// `optimize` only) before scopes are split, and what the budget took and left.
///
/// # Errors
/// As [`plan()`]; the read errors of the estimate's sample ([`crate::gain`]).
pub async fn plan_within_budget(
    location: impl Into<TableLocation>,
    options: &OptimizeOptions,
    split: &SplitOptions,
) -> Result<(WorkOrder, Option<crate::gain::Selection>)> {
    let table = TableView::load(location, None).await?;
    table.check_writable()?;
    let mut plan = crate::prepare::plan_sized(&table, options).await?;
    if plan.run_id.is_empty() {
        plan.run_id = plan::new_run_id();
    }
    let budget = options.budget();
    let selection = if budget.max_rewrite_bytes.is_some() || budget.min_gain.is_some() {
        let measure =
            crate::gain::Measure::resolve(&table, options.workload().cloned(), &plan).await?;
        let units = if plan.is_empty() {
            Vec::new()
        } else {
            crate::gain::estimate(&table, &plan, &measure, options).await?
        };
        let mut selection = crate::gain::select(units, measure.scan(&table)?.cost(), &budget);
        selection.measure = Some(measure.source);
        crate::gain::apply(&mut plan, &selection);
        Some(selection)
    } else {
        None
    };
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
        crate::commit::check_atomic_commits(&table, &plan.run_id).await?;
    }
    Ok((
        WorkOrder::new(&table, plan, OrderSettings::of(options))?,
        selection,
    ))
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
                let tree = plan.partitions[index].cut_tree.clone();
                let partition_values = plan.partitions[index].raw_values.clone();
                let sizes = crate::rewrite::cluster::RangeSizes::equal(
                    wanted_ranges,
                    bin.expected_output_bytes,
                    plan.target_file_bytes,
                );
                tokio::task::spawn_blocking(move || {
                    let tree = tree.map(|t| t.bind(&table)).transpose()?;
                    let layout = crate::rewrite::cluster::Layout {
                        clustering: &clustering,
                        tree: tree.as_ref(),
                        partition_values: &partition_values,
                    };
                    crate::rewrite::cluster::sample_key_space(
                        &table, &layout, &reader, &sample, &sizes,
                    )
                })
                .await
                .map_err(|e| Error::TaskFailed {
                    task: "sampling",
                    source: e,
                })??
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
                    expected_output_bytes: bin.expected_output_bytes * (end - first) as u64
                        / ranges.max(1) as u64,
                    key_range: Some(KeyRange { space, first, end }),
                });
            }
        }
        plan.partitions[index].bins = out;
    }
    Ok(())
}

#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's signature")]
fn is_false(value: &bool) -> bool {
    !*value
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
    /// The files written, with their stats, in write order; empty when the bin was
    /// [`BinResult::left_alone`].
    pub files: Vec<WrittenFile>,
    /// The bin wrote no fewer files than it read although it had to write fewer
    /// ([`crate::plan::Plan::must_reduce_file_count`]): execute deleted its files, and commit
    /// leaves its input files as they are. Left out of the JSON when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub left_alone: bool,
    /// xxHash64 (16 hex digits) of the rest of the result, keys sorted ([`BinResult::seal`]):
    /// a result altered after `execute` wrote it is refused. A checksum, not a signature.
    pub checksum: String,
}

impl BinResult {
    /// The checksum of the result's content (everything but the checksum).
    ///
    /// # Errors
    /// [`Error::Json`] when the result cannot be serialized.
    pub fn compute_checksum(&self) -> Result<String> {
        let mut value = serde_json::to_value(self).map_err(|source| Error::Json {
            context: "checksumming a bin result".into(),
            source,
        })?;
        if let Some(fields) = value.as_object_mut() {
            fields.remove("checksum");
        }
        Ok(digest(&value))
    }

    /// Sets the checksum.
    ///
    /// # Errors
    /// As [`BinResult::compute_checksum`].
    pub fn seal(mut self) -> Result<Self> {
        self.checksum = self.compute_checksum()?;
        Ok(self)
    }
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
        let parsed: Self = parse_document(text, RESULTS_KIND, document, "result document")?;
        for result in &parsed.results {
            if result.compute_checksum()? != result.checksum {
                return Err(Error::WorkOrder {
                    document: document.to_string(),
                    message: format!(
                        "holds a result of bin {} that was altered after execute wrote it (its checksum does not match); execute the bin again",
                        result.bin_id
                    ),
                });
            }
        }
        Ok(parsed)
    }
}

/// `1 to 4` or `1, 3, 7`: bin ids for messages.
pub(super) fn describe_ids(ids: &[usize]) -> String {
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
