//! Edge 2: one commit per run, through the Delta log's atomic put-if-absent.
//!
//! The commit holds a `remove` for every input file (`dataChange=false`, with its partition
//! values, size, tags and deletion vector) and an `add` for every written file
//! (`dataChange=false`, with stats), preceded by a `commitInfo` naming the operation
//! `OPTIMIZE` with Spark's parameter and metric names (PROTOCOL.md "Commit Provenance
//! Information"; Delta Spark `OptimizeTableCommand`).
//!
//! # Why not deltalake's `CommitBuilder`
//! Its protocol check, compiled without the `datafusion` feature, refuses tables with
//! column mapping, invariants, CHECK constraints, change data feed or generated columns, and
//! every build refuses identity columns, although OPTIMIZE (which changes no data) is safe on
//! all of them. So this module serializes deltalake's own `Action` types and writes them with
//! deltalake's [`LogStore::write_commit_entry`] (the atomic put-if-absent of each store), and
//! checks conflicts itself.
//!
//! # Conflicts (Delta Spark's rules for a `dataChange=false` rewrite at snapshot isolation)
//! When version `v` already exists, every commit between the read version and the latest is
//! read and the run aborts if one of them:
//! 1. removes, or re-adds (a new deletion vector), a file this run rewrote;
//! 2. changes the table's `metaData` or `protocol`;
//! 3. on a table with row tracking, moves the row ID high-water mark (the `baseRowId`s this
//!    run chose may then be taken).
//!
//! Anything else (appends, transactions, domain metadata, removes of other files) does not
//! conflict. After a lost race every commit up to the latest is checked in one pass and the
//! commit is retried at the latest version plus one, up to [`MAX_COMMIT_ATTEMPTS`] lost races
//! (however many versions other writers add meanwhile).
//!
//! # Row tracking
//! On a table with the `rowTracking` feature (not suspended), each `add` gets a fresh
//! `baseRowId` above the high-water mark and `defaultRowCommitVersion` = the committed
//! version, the commit raises the mark in the `delta.rowTracking` domain, and `commitInfo`
//! carries the tag `delta.rowTracking.preserved` (true when the stable values went into the
//! materialized columns). Removes repeat the removed file's `baseRowId` and
//! `defaultRowCommitVersion`.

pub(crate) mod conflict;

use std::collections::{HashMap, HashSet};

use chrono::Utc;
use deltalake::kernel::transaction::TransactionError;
use deltalake::kernel::{Action, Add, CommitInfo, DomainMetadata, IsolationLevel, Remove};
use deltalake::logstore::{CommitOrBytes, LogStore};
use object_store::ObjectStoreExt as _;
use serde_json::Value;

use crate::error::{Error, Result, Setting};
use crate::plan::Plan;
use crate::rewrite::BinOutcome;
use crate::table::TableView;
use crate::table::log::CommitEntry;

/// How many lost races (another writer took the version this run tried) a run survives
/// before it gives up. Each lost race checks every newer commit in one pass and retries at
/// the latest version plus one, so the count does not grow with the number of commits:
/// a busy table that appends 20 times a second costs a race now and then, not a version each.
pub const MAX_COMMIT_ATTEMPTS: usize = 100;

/// Table property: write a checkpoint every this many versions (PROTOCOL.md "Checkpoints";
/// Delta Spark's `delta.checkpointInterval`).
pub const PROP_CHECKPOINT_INTERVAL: &str = "delta.checkpointInterval";

/// Checkpoint interval when the table sets none, versions (Delta Spark's default).
pub const DEFAULT_CHECKPOINT_INTERVAL: u64 = 10;

/// Writes a checkpoint at `version` when it is a checkpoint version of the table
/// (`version % delta.checkpointInterval == 0`, default [`DEFAULT_CHECKPOINT_INTERVAL`]), as
/// Delta writers do after their commit, and updates `_last_checkpoint`. The checkpoint is of
/// the kind the table uses: classic (V1), or V2 in a classic-named file when the table has
/// the `v2Checkpoint` feature (delta-kernel's checkpoint writer, which picks the kind from the
/// table features). Returns whether one was written.
///
/// # Errors
/// [`Error::InvalidOption`] naming the property when it is not a positive integer;
/// [`Error::DamagedLog`] naming a JSON commit that spells characters with escapes delta-kernel
/// misreads (`table::escapes`: its checkpoint would store the misread strings);
/// [`Error::DataFile`] (`_delta_log`) when delta-kernel cannot write it. Callers treat a
/// failure as a warning: the commit stands and readers replay the JSON commits.
pub async fn write_checkpoint_if_due(table: &TableView, version: u64) -> Result<bool> {
    let interval = match table.property(PROP_CHECKPOINT_INTERVAL) {
        None => DEFAULT_CHECKPOINT_INTERVAL,
        Some(text) => text
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                Error::invalid_option(
                    Setting::TableProperty(PROP_CHECKPOINT_INTERVAL.into()),
                    format!("'{text}' is not a positive whole number of versions"),
                )
            })?,
    };
    if version == 0 || !version.is_multiple_of(interval) {
        return Ok(false);
    }
    // delta-kernel's checkpoint would store what its JSON reader misreads (`escapes`) as the
    // table's strings for every reader: leave the JSON commits as the state instead.
    let store = table.log_store.object_store(None);
    let commits = crate::table::escapes::json_commits_since_checkpoint(&store, version).await?;
    // Also an escape inside a stats text (`\\udbff` in the line), which delta-kernel's parsed
    // stats (`stats_parsed` in the checkpoint) misread.
    if let Some((name, _)) = commits.iter().find(|(_, bytes)| {
        let text = String::from_utf8_lossy(bytes);
        crate::table::escapes::has_misread_escape(&text)
            || crate::table::escapes::has_misread_escape(&text.replace("\\\\u", "\\u"))
    }) {
        return Err(Error::DamagedLog {
            table: table.display_location(),
            file: format!("_delta_log/{name}"),
            message: format!(
                "spells characters above U+FFFF as escaped UTF-16 surrogate pairs that delta-kernel's JSON reader decodes into other characters; no checkpoint of version {version} was written, so that none stores them (readers replay the JSON commits)"
            ),
        });
    }
    let engine = table.log_store.engine(None);
    let root = format!("{}/", table.location.as_str().trim_end_matches('/'));
    let task = tokio::task::spawn_blocking(move || {
        let snapshot = delta_kernel::Snapshot::builder_for(root)
            .at_version(version)
            .build(engine.as_ref())?;
        snapshot.checkpoint(engine.as_ref(), None).map(|_| ())
    });
    task.await
        .map_err(|e| Error::TaskFailed {
            task: "checkpoint",
            source: e,
        })?
        .map_err(|e| Error::DataFile {
            path: "_delta_log".into(),
            message: format!("could not take the checkpoint of version {version}"),
            source: Some(Box::new(e)),
        })?;
    Ok(true)
}

/// The `commitInfo` field holding the run id ([`Plan::run_id`]) that names the files the
/// commit adds.
pub const COMMIT_INFO_RUN_ID: &str = "delta-layout.runId";

/// The `engineInfo` written into each commit.
pub const ENGINE_INFO: &str = concat!("delta-layout/", env!("CARGO_PKG_VERSION"));

/// File-size metrics of a run, as Spark names them in `operationMetrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FileSizeMetrics {
    /// Files removed.
    pub num_removed_files: u64,
    /// Bytes removed.
    pub num_removed_bytes: u64,
    /// Files added.
    pub num_added_files: u64,
    /// Bytes added.
    pub num_added_bytes: u64,
    /// Deletion vectors removed with their files.
    pub num_deletion_vectors_removed: u64,
    /// Smallest added file, bytes (0 when none).
    pub min_file_size: u64,
    /// 25th percentile (nearest rank) of added file sizes, bytes.
    pub p25_file_size: u64,
    /// Median added file size, bytes.
    pub p50_file_size: u64,
    /// 75th percentile added file size, bytes.
    pub p75_file_size: u64,
    /// Largest added file, bytes.
    pub max_file_size: u64,
}

impl FileSizeMetrics {
    /// Computes the metrics of a run from its outcomes.
    #[must_use]
    pub fn compute(table: &TableView, outcomes: &[BinOutcome]) -> Self {
        let mut sizes: Vec<u64> = outcomes
            .iter()
            .flat_map(|o| o.written.iter().map(|w| w.size_bytes))
            .collect();
        sizes.sort_unstable();
        let rank = |p: usize| -> u64 {
            if sizes.is_empty() {
                return 0;
            }
            let index = (p * sizes.len()).div_ceil(100).max(1) - 1;
            sizes[index.min(sizes.len() - 1)]
        };
        // Bins of a split clustering scope share their input files: each counts once.
        let mut seen = HashSet::new();
        let inputs = outcomes
            .iter()
            .flat_map(|o| o.input_files.iter())
            .filter(|&&i| seen.insert(i));
        let mut metrics = Self {
            num_added_files: sizes.len() as u64,
            num_added_bytes: sizes.iter().sum(),
            min_file_size: sizes.first().copied().unwrap_or(0),
            p25_file_size: rank(25),
            p50_file_size: rank(50),
            p75_file_size: rank(75),
            max_file_size: sizes.last().copied().unwrap_or(0),
            ..Self::default()
        };
        for &i in inputs {
            let file = &table.files[i];
            metrics.num_removed_files += 1;
            metrics.num_removed_bytes += file.size_bytes;
            metrics.num_deletion_vectors_removed += u64::from(file.deletion_vector.is_some());
        }
        metrics
    }

    fn to_operation_metrics(self) -> Value {
        let pairs = [
            ("numRemovedFiles", self.num_removed_files),
            ("numRemovedBytes", self.num_removed_bytes),
            ("numAddedFiles", self.num_added_files),
            ("numAddedBytes", self.num_added_bytes),
            (
                "numDeletionVectorsRemoved",
                self.num_deletion_vectors_removed,
            ),
            ("minFileSize", self.min_file_size),
            ("p25FileSize", self.p25_file_size),
            ("p50FileSize", self.p50_file_size),
            ("p75FileSize", self.p75_file_size),
            ("maxFileSize", self.max_file_size),
        ];
        Value::Object(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), Value::String(v.to_string())))
                .collect(),
        )
    }
}

/// Builds the actions of the commit: `commitInfo` (with `zOrderBy` and `curve` from the
/// plan's clustering), then a `remove` per input file and an `add` per written file, in bin
/// order.
///
/// # Errors
/// [`Error::Internal`] when a size does not fit the log's signed 64-bit integers.
pub fn actions(table: &TableView, plan: &Plan, outcomes: &[BinOutcome]) -> Result<Vec<Action>> {
    let z_order_by: &[String] = plan
        .clustering
        .as_ref()
        .map_or(&[], |c| c.columns.as_slice());
    let now = Utc::now().timestamp_millis();
    let metrics = FileSizeMetrics::compute(table, outcomes);
    let predicate = match &plan.predicate {
        Some(p) => serde_json::to_string(&[p]).unwrap_or_default(),
        None => "[]".to_string(),
    };
    let mut info = HashMap::new();
    info.insert(
        "operationMetrics".to_string(),
        metrics.to_operation_metrics(),
    );
    // The cut trees the written files were laid out by, so a later run routes new rows
    // through them (crate::plan::cuts, "Recording").
    // Partitions of alike rows may grow the same tree: recorded once.
    let mut ids = HashSet::new();
    let trees: Vec<Value> = plan
        .partitions
        .iter()
        .filter_map(|p| p.cut_tree.as_ref())
        .filter(|t| ids.insert(t.id.clone()))
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect();
    if !trees.is_empty() {
        info.insert(
            crate::plan::cuts::COMMIT_INFO_CUT_TREES.to_string(),
            Value::Array(trees),
        );
    }
    info.insert(
        COMMIT_INFO_RUN_ID.to_string(),
        Value::String(plan.run_id.clone()),
    );
    // Row tracking (PROTOCOL.md "Row Tracking"): fresh baseRowIds above the high-water mark,
    // and the preserved tag when the stable values went into the materialized columns.
    let row_tracking = table.row_tracking.as_ref().filter(|r| r.assigns_row_ids());
    if let Some(settings) = row_tracking {
        info.insert(
            "tags".to_string(),
            serde_json::json!({
                crate::table::row_tracking::TAG_ROW_TRACKING_PRESERVED:
                    settings.materialized_columns().is_some().to_string()
            }),
        );
    }
    let mut next_row_id = row_tracking
        .and_then(|r| r.high_water_mark)
        .map_or(0, |mark| mark.saturating_add(1));
    let commit_info = CommitInfo {
        timestamp: Some(now),
        operation: Some("OPTIMIZE".to_string()),
        operation_parameters: Some(HashMap::from([
            ("predicate".to_string(), Value::String(predicate)),
            (
                "zOrderBy".to_string(),
                Value::String(serde_json::to_string(z_order_by).unwrap_or_default()),
            ),
            ("auto".to_string(), Value::String("false".to_string())),
            (
                "curve".to_string(),
                Value::String(
                    plan.clustering
                        .as_ref()
                        .map_or("none", |c| c.layout_name())
                        .to_string(),
                ),
            ),
            (
                "targetSize".to_string(),
                Value::String(plan.target_file_bytes.to_string()),
            ),
        ])),
        read_version: Some(table.version),
        isolation_level: Some(IsolationLevel::SnapshotIsolation),
        is_blind_append: Some(false),
        engine_info: Some(ENGINE_INFO.to_string()),
        info,
        ..CommitInfo::default()
    };
    let mut out = vec![Action::CommitInfo(commit_info)];
    // Bins of a split clustering scope share their input files: one remove each.
    let mut removed = HashSet::new();
    for outcome in outcomes {
        let Some(&first) = outcome.input_files.first() else {
            continue;
        };
        let partition_values = table.files[first].add.partition_values.clone();
        for &i in outcome.input_files.iter().filter(|&&i| removed.insert(i)) {
            let add = &table.files[i].add;
            out.push(Action::Remove(Remove {
                path: add.path.clone(),
                data_change: false,
                deletion_timestamp: Some(now),
                extended_file_metadata: Some(true),
                partition_values: Some(add.partition_values.clone()),
                size: Some(add.size),
                tags: add.tags.clone(),
                deletion_vector: add.deletion_vector.clone(),
                base_row_id: add.base_row_id,
                default_row_commit_version: add.default_row_commit_version,
            }));
        }
        for written in &outcome.written {
            out.push(Action::Add(Add {
                path: written.path.clone(),
                partition_values: partition_values.clone(),
                size: i64::try_from(written.size_bytes)
                    .map_err(|_| Error::Internal("file size over i64".into()))?,
                modification_time: now,
                data_change: false,
                stats: Some(written.stats_json.clone()),
                tags: (!written.tags.is_empty()).then(|| {
                    written
                        .tags
                        .iter()
                        .map(|(k, v)| (k.clone(), Some(v.clone())))
                        .collect()
                }),
                deletion_vector: None,
                base_row_id: row_tracking.map(|_| next_row_id),
                // Set to the committed version by `commit`.
                default_row_commit_version: row_tracking
                    .map(|_| i64::try_from(table.version + 1).unwrap_or(i64::MAX)),
                clustering_provider: plan.clustering.as_ref().and_then(|c| c.provider.clone()),
            }));
            if row_tracking.is_some() {
                let rows = i64::try_from(written.num_records)
                    .map_err(|_| Error::Internal("row count over i64".into()))?;
                next_row_id = next_row_id
                    .checked_add(rows)
                    .ok_or_else(|| Error::Internal("row IDs over i64".into()))?;
            }
        }
    }
    if row_tracking.is_some() {
        out.push(Action::DomainMetadata(DomainMetadata {
            domain: crate::table::row_tracking::ROW_TRACKING_DOMAIN.to_string(),
            configuration: serde_json::json!({ "rowIdHighWaterMark": next_row_id - 1 }).to_string(),
            removed: false,
        }));
    }
    Ok(out)
}

/// Serializes `actions` as a commit file (one JSON object per line).
///
/// Two corrections to deltalake's serialization: a `remove` carries the path exactly as the
/// log spells the `add` it removes (`raw_paths`, keyed by decoded path), because deltalake
/// re-encodes paths its own way and readers match removes to adds by the string; and
/// optional fields that are null (`tags`, `baseRowId`, ...) are left out, as Spark does.
fn commit_bytes(
    actions: &[Action],
    raw_paths: &HashMap<&str, &str>,
    escaped: &HashSet<&str>,
) -> Result<bytes::Bytes> {
    let mut lines = Vec::with_capacity(actions.len());
    for action in actions {
        let mut value = serde_json::to_value(action).map_err(|source| Error::Json {
            context: "serializing the commit".into(),
            source,
        })?;
        for kind in ["add", "remove"] {
            if let Some(Value::Object(fields)) = value.get_mut(kind) {
                fields.retain(|_, v| !v.is_null());
            }
        }
        if let Action::Remove(remove) = action {
            let raw = raw_paths.get(remove.path.as_str()).ok_or_else(|| {
                Error::Internal(format!("no raw path for removed file '{}'", remove.path))
            })?;
            value["remove"]["path"] = Value::String((*raw).to_string());
            if escaped.contains(raw) {
                // Spelled as its `add` spells it (`crate::table::escapes`).
                let line = value.to_string();
                let plain = format!("\"path\":{}", Value::String((*raw).to_string()));
                let spelled = format!("\"path\":{}", crate::table::escapes::escaped_literal(raw));
                lines.push(line.replacen(&plain, &spelled, 1));
                continue;
            }
        }
        lines.push(value.to_string());
    }
    Ok(bytes::Bytes::from(lines.join("\n")))
}

/// Writes `actions` as the next version after `table.version`, checking each newer version
/// for conflicts. Returns the committed version.
///
/// # Errors
/// * [`Error::ConcurrentModification`] when a newer commit conflicts (see the module docs),
///   or after [`MAX_COMMIT_ATTEMPTS`] lost races.
/// * [`Error::Delta`] when the log cannot be written or read.
pub async fn commit(table: &TableView, actions: &[Action]) -> Result<u64> {
    let raw_paths: HashMap<&str, &str> = table
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.raw_path.as_str()))
        .collect();
    // Removed files whose `add` the log spells with escapes delta-rs misreads: their removes
    // are spelled the same way (read only for paths holding such characters).
    let removed_raw: Vec<&str> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Remove(r) => raw_paths.get(r.path.as_str()).copied(),
            _ => None,
        })
        .filter(|raw| crate::table::escapes::misread(raw) != **raw)
        .collect();
    let escaped: HashSet<&str> = if removed_raw.is_empty() {
        HashSet::new()
    } else {
        let store = table.log_store.object_store(None);
        let commits =
            crate::table::escapes::json_commits_since_checkpoint(&store, table.version).await?;
        crate::table::escapes::escaped_paths(&commits, removed_raw)
    };
    // Row tracking: `defaultRowCommitVersion` is the version the commit lands at.
    let tracks_rows = actions
        .iter()
        .any(|a| matches!(a, Action::Add(add) if add.default_row_commit_version.is_some()));
    let log_store = table.log_store.as_ref();
    let in_commit_timestamps = in_commit_timestamps_enabled(table);
    // The commit as written at `version`: row tracking's `defaultRowCommitVersion` is that
    // version, and with in-commit timestamps `commitInfo.inCommitTimestamp` must exceed the
    // previous commit's.
    let at_version = async |version: u64| -> Result<bytes::Bytes> {
        let v = i64::try_from(version).map_err(|_| Error::Internal("version over i64".into()))?;
        let ict = if in_commit_timestamps {
            let previous = previous_in_commit_timestamp(table, log_store, version - 1).await?;
            Some(
                Utc::now()
                    .timestamp_millis()
                    .max(previous.saturating_add(1)),
            )
        } else {
            None
        };
        let patched: Vec<Action> = actions
            .iter()
            .map(|a| match a {
                Action::Add(add) if tracks_rows => Action::Add(Add {
                    default_row_commit_version: Some(v),
                    ..add.clone()
                }),
                Action::CommitInfo(info) if ict.is_some() => Action::CommitInfo(CommitInfo {
                    in_commit_timestamp: ict,
                    timestamp: ict,
                    ..info.clone()
                }),
                other => other.clone(),
            })
            .collect();
        commit_bytes(&patched, &raw_paths, &escaped)
    };
    let mut bytes = at_version(table.version + 1).await?;
    let rewritten: HashSet<&str> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Remove(r) => Some(r.path.as_str()),
            _ => None,
        })
        .collect();
    let operation_id = uuid::Uuid::new_v4();
    let mut version = table.version + 1;
    for _ in 0..MAX_COMMIT_ATTEMPTS {
        match log_store
            .write_commit_entry(
                version,
                CommitOrBytes::LogBytes(bytes.clone()),
                operation_id,
            )
            .await
        {
            Ok(()) => return Ok(version),
            Err(TransactionError::VersionAlreadyExists(_)) => {
                // Every commit since the last check, in one pass: read one version after the
                // other until the first that does not exist yet (no listing of the log, so
                // a lost race costs the new commits, not the log's length).
                let mut next = version;
                loop {
                    match log_store.read_commit_entry(next).await {
                        // Our own commit: a put that landed but whose answer was lost, and
                        // whose retry was refused as existing (the bytes hold this run's id).
                        Ok(Some(winner)) if next == version && winner == bytes => {
                            return Ok(version);
                        }
                        Ok(Some(winner)) => {
                            check_winning_commit(table, next, &winner, &rewritten, tracks_rows)?;
                            next += 1;
                        }
                        Ok(None) => break,
                        Err(_) => return Err(damaged_entry(table, next)),
                    }
                }
                if next == version {
                    // The entry that refused our commit cannot be read (a directory?).
                    return Err(damaged_entry(table, version));
                }
                version = next;
                bytes = at_version(version).await?;
            }
            Err(e) => {
                // The put failed without a clear answer: it may still have landed (a lost
                // response, a timeout). Read the entry back: ours means committed.
                match log_store.read_commit_entry(version).await {
                    Ok(Some(entry)) if entry == bytes => return Ok(version),
                    Ok(Some(_)) => continue, // another writer's: checked as a lost race
                    _ => {}
                }
                return Err(Error::CommitOutcomeUnknown {
                    table: table.display_location(),
                    version,
                    source: Box::new(e.into()),
                });
            }
        }
    }
    Err(Error::ConcurrentModification {
        table: table.display_location(),
        read_version: table.version,
        winning_version: version - 1,
        reason: format!(
            "was taken by another writer in each of {MAX_COMMIT_ATTEMPTS} tries (no commit conflicted, but the table is too busy to win a race)"
        ),
    })
}

/// Storage option (and environment variable) by which a user accepts commits on an S3 store
/// that does not honour conditional writes, as delta-rs names it.
pub const AWS_S3_ALLOW_UNSAFE_RENAME: &str = "AWS_S3_ALLOW_UNSAFE_RENAME";
/// Storage option (and environment variable) naming an S3 locking provider (delta-rs).
pub const AWS_S3_LOCKING_PROVIDER: &str = "AWS_S3_LOCKING_PROVIDER";

/// Checks, before a run writes any data file, that a commit to `table` will be an atomic
/// put-if-absent of the next log entry (PROTOCOL.md "Delta Log Entries": "the writer must
/// ensure that no other writer has created the same version"). Local disks, Azure and GCS
/// create objects atomically; on S3 the commit is a PUT with `If-None-Match: *`, which some
/// S3-compatible stores ignore (they overwrite), so it is probed: a small object under the
/// table root is put twice with create-if-absent and the second put must be refused; the
/// object is then deleted.
///
/// # Errors
/// [`Error::InvalidOption`] naming `AWS_S3_LOCKING_PROVIDER` when it asks for DynamoDB
/// locking (the deltalake crate no longer has it, so writers that lock through DynamoDB would
/// not see this run's commits); naming `--storage-option` when the client has conditional
/// puts switched off, or when the store ignores them and the user has not opted in to unsafe
/// commits with `AWS_S3_ALLOW_UNSAFE_RENAME`; [`Error::NotWritable`] when the probe cannot
/// be written. On other stores, that the table's location takes writes at all (a probe
/// object put and deleted): [`Error::NotWritable`] when it does not.
pub async fn check_atomic_commits(table: &TableView, run_id: &str) -> Result<()> {
    if table.source.store_kind()? != crate::table::StoreKind::S3 {
        return check_write_access(table, run_id).await;
    }
    let options = &table.source.storage_options;
    if options
        .get_or_env(AWS_S3_LOCKING_PROVIDER)
        .is_some_and(|v| v.eq_ignore_ascii_case("dynamodb"))
    {
        return Err(Error::invalid_option(
            Setting::StorageOption(AWS_S3_LOCKING_PROVIDER.into()),
            format!(
                "is 'dynamodb', but the deltalake crate this build commits through no longer supports DynamoDB locking, so writers that lock through DynamoDB would not see this run's commit to '{}'; unset it to commit with S3 conditional writes (If-None-Match), which AWS S3 supports; nothing was written",
                table.display_location()
            ),
        ));
    }
    let store = table.log_store.object_store(None);
    let probe = deltalake::Path::from(format!("_delta-layout-commit-probe-{run_id}"));
    let honoured = put_if_absent_is_honoured(store.as_ref(), &probe).await;
    if let Err(e) = store.delete(&probe).await {
        log::warn!(
            "could not delete the commit probe '{probe}' under '{}': {e}",
            table.display_location()
        );
    }
    match honoured.map_err(|source| Error::NotWritable {
        table: table.display_location(),
        source: Box::new(source),
    })? {
        Probe::Honoured => Ok(()),
        Probe::Unsupported => Err(Error::invalid_option(
            Setting::StorageOptions,
            format!(
                "the S3 client of '{}' has conditional puts switched off (conditional_put=disabled?), and every commit of the deltalake crate is a conditional put: remove that option; nothing was written",
                table.display_location()
            ),
        )),
        Probe::Ignored
            if options
                .get_or_env(AWS_S3_ALLOW_UNSAFE_RENAME)
                .is_some_and(|v| is_truthy(&v)) =>
        {
            log::warn!(
                "the S3 store of '{}' ignores conditional writes: committing anyway because {AWS_S3_ALLOW_UNSAFE_RENAME} is set; a writer committing at the same time can overwrite this commit",
                table.display_location()
            );
            Ok(())
        }
        Probe::Ignored => Err(Error::invalid_option(
            Setting::StorageOptions,
            format!(
                "the S3 store of '{}' ignores conditional writes (PUT with If-None-Match: *), so two writers could both commit the same version and one commit would be lost; use a store that supports them (AWS S3 does), or set {AWS_S3_ALLOW_UNSAFE_RENAME}=true (storage option or environment) when no other writer can commit meanwhile; nothing was written",
                table.display_location()
            ),
        )),
    }
}

/// Checks that the table's location takes writes: a small object
/// (`_delta-layout-write-probe-RUN`) is put under the table root and deleted again. Readers
/// never list it (PROTOCOL.md: only files the log references are part of the table).
///
/// # Errors
/// [`Error::NotWritable`] when the put is refused.
async fn check_write_access(table: &TableView, run_id: &str) -> Result<()> {
    let store = table.log_store.object_store(None);
    let probe = deltalake::Path::from(format!("_delta-layout-write-probe-{run_id}"));
    store
        .put(&probe, bytes::Bytes::from_static(b"1").into())
        .await
        .map_err(|source| Error::NotWritable {
            table: table.display_location(),
            source: Box::new(source),
        })?;
    if let Err(e) = store.delete(&probe).await {
        log::warn!(
            "could not delete the write probe '{probe}' under '{}': {e}",
            table.display_location()
        );
    }
    Ok(())
}

/// Whether a storage option's value means yes, as delta-rs reads them.
fn is_truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "on" | "yes" | "y"
    )
}

/// What the store did with a second create-if-absent put of the same object.
#[derive(Debug, PartialEq, Eq)]
enum Probe {
    /// Refused it: commits are atomic.
    Honoured,
    /// Overwrote the object: commits can overwrite each other.
    Ignored,
    /// The client or store has no conditional puts at all: no commit can be made.
    Unsupported,
}

/// Puts `probe` twice with create-if-absent and says what the store did with the second.
async fn put_if_absent_is_honoured(
    store: &dyn deltalake::ObjectStore,
    probe: &deltalake::Path,
) -> std::result::Result<Probe, deltalake::ObjectStoreError> {
    use deltalake::ObjectStoreError as E;
    let create = || object_store::PutOptions::from(object_store::PutMode::Create);
    match store
        .put_opts(probe, bytes::Bytes::from_static(b"1").into(), create())
        .await
    {
        Ok(_) | Err(E::AlreadyExists { .. }) => {}
        Err(E::NotImplemented { .. } | E::NotSupported { .. }) => return Ok(Probe::Unsupported),
        Err(e) => return Err(e),
    }
    match store
        .put_opts(probe, bytes::Bytes::from_static(b"2").into(), create())
        .await
    {
        Err(E::AlreadyExists { .. } | E::Precondition { .. }) => Ok(Probe::Honoured),
        Ok(_) => Ok(Probe::Ignored),
        Err(E::NotImplemented { .. } | E::NotSupported { .. }) => Ok(Probe::Unsupported),
        Err(e) => Err(e),
    }
}

/// Whether commits must carry `commitInfo.inCommitTimestamp` (PROTOCOL.md "In-Commit
/// Timestamps"): the `inCommitTimestamp` writer feature is present and the table property
/// `delta.enableInCommitTimestamps` is `true`.
#[must_use]
pub fn in_commit_timestamps_enabled(table: &TableView) -> bool {
    table
        .protocol
        .effective_features()
        .iter()
        .any(|f| f == "inCommitTimestamp")
        && table
            .property(PROP_ENABLE_IN_COMMIT_TIMESTAMPS)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Table property enabling in-commit timestamps.
pub const PROP_ENABLE_IN_COMMIT_TIMESTAMPS: &str = "delta.enableInCommitTimestamps";

/// The in-commit timestamp of commit `version` (its `commitInfo.inCommitTimestamp`), or
/// `i64::MIN` when it has none.
///
/// # Errors
/// [`Error::DamagedLog`] when the commit cannot be read; or when a line of it
/// is not JSON.
async fn previous_in_commit_timestamp(
    table: &TableView,
    log_store: &dyn LogStore,
    version: u64,
) -> Result<i64> {
    let bytes = match log_store.read_commit_entry(version).await {
        Ok(Some(bytes)) => bytes,
        Ok(None) | Err(_) => return Err(damaged_entry(table, version)),
    };
    Ok(CommitEntry::read(table, version, &bytes)?
        .commit_info_field("inCommitTimestamp")
        .and_then(Value::as_i64)
        .unwrap_or(i64::MIN))
}

/// The log entry at `version` exists (the atomic create refused it) but cannot be read.
fn damaged_entry(table: &TableView, version: u64) -> Error {
    Error::DamagedLog {
        table: table.display_location(),
        file: format!("_delta_log/{version:020}.json"),
        message: "exists but is not a readable commit file (a directory, or unreadable); \
                  nothing was committed"
            .into(),
    }
}

/// Checks commit `version` (its `bytes`) of another writer against this run's rewrite
/// ([`conflict::conflicts`]).
fn check_winning_commit(
    table: &TableView,
    version: u64,
    bytes: &[u8],
    rewritten: &HashSet<&str>,
    tracks_rows: bool,
) -> Result<()> {
    let entry = CommitEntry::read(table, version, bytes)?;
    match conflict::conflicts(&entry, tracks_rows, |path| rewritten.contains(path)).next() {
        Some(found) => Err(Error::ConcurrentModification {
            table: table.display_location(),
            read_version: table.version,
            winning_version: version,
            reason: found.reason(),
        }),
        None => Ok(()),
    }
}
