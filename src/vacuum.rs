//! `vacuum`: delete the data files no version inside the retention needs.
//!
//! The file set is Delta's `VACUUM`: every file in the table directory that the latest
//! version does not reference (data files and deletion-vector files alike) and that was
//! removed, or last modified, longer ago than the retention; never `_delta_log`, never a
//! file or directory whose name starts with `_` or `.` (other than partition directories),
//! never a file of the latest version. The retention defaults to the table's
//! `delta.deletedFileRetentionDuration` (7 days when unset); a shorter one is refused unless
//! the caller accepts the risk ([`VacuumOptions::with_short_retention`]): readers of older
//! versions, and writers still working from them, may find their files gone.
//!
//! The set is computed by the `deltalake` crate's vacuum planner (full mode, as a dry run, so
//! it commits nothing), and the files are deleted here through the table's object store: the
//! crate's own execution commits through a transaction builder that, built without its
//! `datafusion` feature, refuses tables this tool supports (column mapping, CHECK
//! constraints, ...). Before anything is planned the table's protocol is checked as for a
//! rewrite ([`crate::table::ProtocolInfo::check_writable`]), which is what the
//! `vacuumProtocolCheck` feature asks of a vacuum.
//!
//! On a local table, vacuum also deletes the staging files of killed runs (commit staging
//! `_delta_log/<version>.json#<n>`, upload staging `...parquet#<n>`; see
//! [`crate::rewrite::leftovers`]) once older than
//! [`crate::rewrite::leftovers::STAGING_MAX_AGE`], whatever the retention (they are no
//! version's files), and lists them on a dry run.
//!
//! Source: PROTOCOL.md "VACUUM Protocol Check", "Deletion Vectors"; Delta Spark
//! `VacuumCommand`; delta-rs `operations/vacuum.rs`.

use std::sync::Arc;

use deltalake::operations::vacuum::VacuumMode;
use deltalake::{DeltaTableBuilder, Path};
use futures::{StreamExt as _, TryStreamExt as _};
use object_store::ObjectStoreExt as _;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::table::TableView;

/// Table property holding the retention of removed files (Delta: an interval such as
/// `interval 7 days`).
pub const PROP_DELETED_FILE_RETENTION: &str = "delta.deletedFileRetentionDuration";

/// Retention when the table sets none: 7 days (168 hours), as Delta's.
pub const DEFAULT_RETENTION_HOURS: f64 = 168.0;

/// Objects deleted at a time.
pub const DELETE_CONCURRENCY: usize = 16;

/// Options of [`vacuum`].
#[derive(Debug, Clone, Default)]
pub struct VacuumOptions {
    retain_hours: Option<f64>,
    dry_run: bool,
    short_retention: bool,
}

impl VacuumOptions {
    /// Keep files removed within this many hours (`--retain`). Defaults to the table's
    /// `delta.deletedFileRetentionDuration`, else [`DEFAULT_RETENTION_HOURS`].
    #[must_use]
    pub fn with_retain_hours(mut self, hours: Option<f64>) -> Self {
        self.retain_hours = hours;
        self
    }

    /// List what would be deleted, delete nothing (`--dry-run`).
    #[must_use]
    pub fn with_dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Accept a retention shorter than the table's (`--risk-breaking-readers`).
    #[must_use]
    pub fn with_short_retention(mut self, allow: bool) -> Self {
        self.short_retention = allow;
        self
    }
}

/// One file vacuum deleted (or would delete).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VacuumedFile {
    /// Path relative to the table root.
    pub path: String,
    /// Size in bytes.
    pub size_bytes: u64,
}

/// What [`vacuum`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VacuumReport {
    /// The table location.
    pub table: String,
    /// The version whose files were kept.
    pub version: u64,
    /// The retention applied, hours.
    pub retention_hours: f64,
    /// The table's own retention, hours.
    pub table_retention_hours: f64,
    /// True when nothing was deleted on purpose.
    pub dry_run: bool,
    /// The files deleted (or, on a dry run, to delete), by path.
    pub files: Vec<VacuumedFile>,
    /// Their total size, bytes.
    pub bytes: u64,
    /// A UniForm table's Iceberg view ([`crate::table::iceberg::view`]): the files of its
    /// Delta version were kept, and the `metadata` directory was not touched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iceberg: Option<crate::table::iceberg::IcebergView>,
    /// The Delta versions older than `version` whose files were kept for Iceberg readers
    /// (those the current Iceberg metadata file and the one before it name), ascending.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub iceberg_versions_kept: Vec<u64>,
}

/// A path with every percent escape decoded, repeatedly: the planner, the log and the
/// object store spell special characters differently, and comparing in this loosest form
/// can only make two paths equal that are not (keeping a file), never tell one file apart
/// from itself (deleting a needed one).
fn loose(path: &str) -> String {
    let mut current = path.to_string();
    for _ in 0..4 {
        let decoded = percent_encoding::percent_decode_str(&current)
            .decode_utf8_lossy()
            .into_owned();
        if decoded == current {
            break;
        }
        current = decoded;
    }
    current
}

/// Every object the latest version references, as object-store paths: its data files and
/// the deletion-vector files inside the table. Checked again here, whatever the planner
/// decided, so that no file of the latest version is ever deleted.
///
/// # Errors
/// [`Error::DataFile`] for a deletion vector descriptor that does not parse.
fn live_paths(table: &TableView) -> Result<std::collections::HashSet<String>> {
    let root = table.location.as_str().trim_end_matches('/');
    let mut live = std::collections::HashSet::with_capacity(table.files.len());
    for file in &table.files {
        // A file outside the table root (a shallow clone's) is never listed for deletion.
        if let Ok(path) = crate::table::read::object_path(&table.location, &file.path) {
            live.insert(loose(path.as_ref()));
        }
        if let Some(descriptor) = &file.deletion_vector {
            let kernel: delta_kernel::actions::deletion_vector::DeletionVectorDescriptor =
                descriptor
                    .clone()
                    .try_into()
                    .map_err(|e: delta_kernel::Error| Error::DataFile {
                        path: file.path.clone(),
                        message: "has a deletion vector descriptor that does not parse".into(),
                        source: Some(Box::new(e)),
                    })?;
            if let Ok(Some(url)) = kernel.absolute_path(&table.location)
                && let Some(relative) = url.as_str().strip_prefix(root)
            {
                let relative = relative.trim_start_matches('/');
                live.insert(loose(relative));
            }
        }
    }
    Ok(live)
}

/// Whether a path component is hidden from vacuum, as Delta Spark's
/// `DeltaTableUtils.isHiddenDirectory` decides for directories and file names alike: a name
/// starting with `_` or `.`, unless it is a partition directory (`col=`), `_change_data` or
/// `_delta_index`; and, on a UniForm table ([`crate::table::iceberg::uniform_iceberg`]), a
/// name `metadata`, where the Iceberg metadata is. (The deltalake planner applies the rule
/// to a path's first character only, so `p=1/_SUCCESS` or `p=1/.part-0.crc` would go.)
fn is_hidden(name: &str, partition_columns: &[String], iceberg_metadata: bool) -> bool {
    (iceberg_metadata && name == crate::table::iceberg::METADATA_DIRECTORY)
        || (name.starts_with('.') || name.starts_with('_'))
            && !name.starts_with("_delta_index")
            && !name.starts_with("_change_data")
            && !partition_columns.iter().any(|c| {
                name.strip_prefix(c.as_str())
                    .is_some_and(|rest| rest.starts_with('='))
            })
}

/// The table's retention in hours, from `delta.deletedFileRetentionDuration` (`interval N
/// unit`, units from microseconds to weeks, as Spark's `CalendarInterval` strings).
///
/// # Errors
/// [`Error::InvalidOption`] naming the property when it does not parse.
pub fn table_retention_hours(table: &TableView) -> Result<f64> {
    let Some(text) = table.property(PROP_DELETED_FILE_RETENTION) else {
        return Ok(DEFAULT_RETENTION_HOURS);
    };
    parse_interval_hours(text).ok_or_else(|| {
        Error::invalid_option(
            crate::Setting::TableProperty(PROP_DELETED_FILE_RETENTION.into()),
            format!("'{text}' is not an interval such as 'interval 7 days'"),
        )
    })
}

fn parse_interval_hours(text: &str) -> Option<f64> {
    let lower = text.trim().to_ascii_lowercase();
    let rest = lower.strip_prefix("interval").unwrap_or(&lower).trim();
    let mut words = rest.split_whitespace();
    let mut hours = 0.0;
    let mut any = false;
    while let Some(number) = words.next() {
        let value: f64 = number.parse().ok()?;
        let unit = words.next()?;
        let per_hour = match unit.trim_end_matches('s') {
            "week" => 168.0,
            "day" => 24.0,
            "hour" => 1.0,
            "minute" => 1.0 / 60.0,
            "second" => 1.0 / 3600.0,
            "millisecond" => 1.0 / 3_600_000.0,
            "microsecond" => 1.0 / 3_600_000_000.0,
            _ => return None,
        };
        hours += value * per_hour;
        any = true;
    }
    (any && hours >= 0.0).then_some(hours)
}

/// Deletes (or lists, on a dry run) the files of `table` that no version inside the
/// retention needs. `table` must be the latest version.
///
/// # Errors
/// * [`Error::UnsupportedFeatures`] for a table with features this tool does not support
///   (nothing is deleted).
/// * [`Error::InvalidOption`] (`--retain`) for a negative retention, or one below the
///   table's without [`VacuumOptions::with_short_retention`].
/// * [`Error::IcebergMetadata`] on a UniForm table whose Iceberg metadata cannot tell which
///   Delta version Iceberg readers read ([`crate::table::iceberg::read_versions`]), or names
///   one whose files cannot be listed (nothing is deleted).
/// * [`Error::Delta`] / [`Error::ObjectStore`] when planning or deleting fails; files deleted
///   before the failure stay deleted (each was unreferenced).
pub async fn vacuum(table: &TableView, options: &VacuumOptions) -> Result<VacuumReport> {
    table.check_writable()?;
    let (hours, table_hours) = retention_hours(table, options)?;
    let delta_error = |context: &str, e| Error::delta(context.to_string(), e);
    let loaded = DeltaTableBuilder::from_url(table.location.clone())
        .map_err(|e| delta_error("opening the table for vacuum", e))?
        .with_storage_options(table.source.storage_options.to_map())
        .with_version(table.version)
        .load()
        .await
        .map_err(|e| delta_error("opening the table for vacuum", e))?;
    #[expect(
        clippy::cast_possible_truncation,
        reason = "hours to whole milliseconds; range checked above"
    )]
    let millis = (hours * 3_600_000.0).round() as i64;
    // A path removed several times (a file re-added with a new deletion vector, then
    // removed) has several tombstones: it is needed while any of them is inside the
    // retention, which the planner does not check (it deletes on the oldest), so such paths
    // are taken out of its plan here.
    let cutoff = chrono::Utc::now().timestamp_millis() - millis;
    let recent = recent_tombstones(&loaded, table, cutoff).await?;
    let (_, metrics) = loaded
        .clone()
        .vacuum()
        .with_mode(VacuumMode::Full)
        .with_retention_period(chrono::Duration::milliseconds(millis))
        .with_enforce_retention_duration(false)
        .with_dry_run(true)
        .await
        .map_err(|e| delta_error("planning the vacuum", e))?;
    let store = table.log_store.object_store(None);
    let mut live = live_paths(table)?;
    // UniForm: Iceberg readers read the files of the version the Iceberg metadata describes,
    // which may be older than the latest (a rewrite by this tool is converted by the next
    // Delta writer with UniForm on): those files are kept too, for the current metadata file
    // and the ones just before it (`KEPT_METADATA_FILES`).
    let iceberg = crate::table::iceberg::view(table).await?;
    let mut kept_versions: Vec<(String, u64)> = crate::table::iceberg::read_versions(table)
        .await?
        .into_iter()
        .filter(|(_, v)| *v < table.version)
        .collect();
    kept_versions.sort_by_key(|(_, v)| *v);
    kept_versions.dedup_by_key(|(_, v)| *v);
    let iceberg_versions_kept: Vec<u64> = kept_versions.iter().map(|(_, v)| *v).collect();
    for (file, v) in kept_versions {
        let read = TableView::load(table.source.clone(), Some(v))
            .await
            .map_err(|e| Error::IcebergMetadata {
                table: table.display_location(),
                file,
                message: format!(
                    "names Delta version {v}, whose files cannot be listed to keep them ({e})"
                ),
            })?;
        live.extend(live_paths(&read)?);
    }
    let paths = unneeded_paths(
        metrics.files_deleted,
        &recent,
        &live,
        &table.partition_physical_names,
        crate::table::iceberg::uniform_iceberg(&table.properties),
    );
    // Tombstones outlive their files (an earlier vacuum deleted them): only files that
    // exist are listed.
    let mut files = existing_files(&store, paths).await?;
    let staging = stale_staging(table);
    if !options.dry_run {
        remove_staging(&staging)?;
    }
    if !options.dry_run {
        delete_files(&store, &files).await?;
    }
    files.extend(staging.into_iter().map(|(_, file)| file));
    Ok(VacuumReport {
        table: table.display_location(),
        version: table.version,
        retention_hours: hours,
        table_retention_hours: table_hours,
        dry_run: options.dry_run,
        bytes: files.iter().map(|f| f.size_bytes).sum(),
        files,
        iceberg,
        iceberg_versions_kept,
    })
}

/// The retention a vacuum of `table` keeps, in hours: `options`' (`--retain`), else the
/// table's ([`table_retention_hours`]). Returns it and the table's.
///
/// # Errors
/// [`Error::InvalidOption`] for a table retention that does not parse, or (`--retain`) a
/// retention that is not a number of hours of 0 or more; [`Error::ShortRetention`] for one
/// below the table's without [`VacuumOptions::with_short_retention`].
fn retention_hours(table: &TableView, options: &VacuumOptions) -> Result<(f64, f64)> {
    let table_hours = table_retention_hours(table)?;
    // (`-0` is 0.)
    let hours = options.retain_hours.unwrap_or(table_hours) + 0.0;
    if !hours.is_finite() || hours < 0.0 {
        return Err(Error::invalid_option(
            crate::Setting::Retain,
            format!("{hours} is not a number of hours of 0 or more"),
        ));
    }
    if hours < table_hours && !options.short_retention {
        return Err(Error::ShortRetention {
            hours,
            table_hours,
            property: PROP_DELETED_FILE_RETENTION.to_string(),
            override_with: crate::Setting::RiskBreakingReaders,
        });
    }
    Ok((hours, table_hours))
}

/// The paths (as [`loose`] spells them) of the tombstones of `loaded` (the table `table` at
/// its version) removed at or after `cutoff` (milliseconds since the epoch): inside the
/// retention.
///
/// # Errors
/// [`Error::Delta`] when the removed files cannot be read.
async fn recent_tombstones(
    loaded: &deltalake::DeltaTable,
    table: &TableView,
    cutoff: i64,
) -> Result<std::collections::HashSet<String>> {
    let delta_error = |context: &str, e| Error::delta(context.to_string(), e);
    let state = loaded
        .snapshot()
        .map_err(|e| delta_error("reading the removed files", e))?;
    state
        .all_tombstones(table.log_store.as_ref())
        .try_filter_map(|t| {
            let keep = t.deletion_timestamp().unwrap_or(0) >= cutoff;
            let path = t.path();
            futures::future::ready(Ok(keep.then(|| loose(path.as_ref()))))
        })
        .try_collect()
        .await
        .map_err(|e| delta_error("reading the removed files", e))
}

/// The paths of the planner's `planned` that vacuum may delete, sorted and distinct: not
/// removed inside the retention (`recent`), not `live`, not hidden (by the table's
/// `partition_columns`), and not the local store's staging names.
fn unneeded_paths(
    planned: Vec<String>,
    recent: &std::collections::HashSet<String>,
    live: &std::collections::HashSet<String>,
    partition_columns: &[String],
    iceberg_metadata: bool,
) -> Vec<String> {
    let mut paths: Vec<String> = planned
        .into_iter()
        .filter(|p| !recent.contains(&loose(p)))
        .filter(|p| !live.contains(&loose(p)))
        .filter(|p| {
            !p.split('/')
                .any(|part| is_hidden(part, partition_columns, iceberg_metadata))
        })
        // The local store's staging names (`...#<n>`): it cannot even stat them; those of
        // killed runs are taken below, by their age.
        .filter(|p| !is_local_staging(p))
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The files of `paths` that exist in `store`, with their sizes, in the order of `paths`
/// (at most [`DELETE_CONCURRENCY`] asked at a time).
///
/// # Errors
/// [`Error::ObjectStore`] when a file cannot be asked for, but for one not found.
async fn existing_files(
    store: &Arc<dyn deltalake::ObjectStore>,
    paths: Vec<String>,
) -> Result<Vec<VacuumedFile>> {
    let files: Vec<Option<VacuumedFile>> = futures::stream::iter(paths)
        .map(|path| {
            let store = store.clone();
            async move {
                let location = Path::parse(&path).unwrap_or_else(|_| Path::from(path.as_str()));
                let size = match store.head(&location).await {
                    Ok(meta) => meta.size,
                    Err(deltalake::ObjectStoreError::NotFound { .. }) => return Ok(None),
                    Err(source) => {
                        return Err(Error::ObjectStore {
                            path,
                            source: Box::new(source),
                        });
                    }
                };
                Ok(Some(VacuumedFile {
                    path,
                    size_bytes: size,
                }))
            }
        })
        .buffered(DELETE_CONCURRENCY)
        .try_collect()
        .await?;
    Ok(files.into_iter().flatten().collect())
}

/// The stale staging files of a local `table` (none for a table in an object store): each
/// as its local path and as the vacuumed file it is reported as (its path relative to the
/// table root, with `/`).
fn stale_staging(table: &TableView) -> Vec<(std::path::PathBuf, VacuumedFile)> {
    // Staging files of killed runs on a local table (commit `_delta_log/<v>.json#<n>`, upload
    // `...parquet#<n>`): not the table's files, so not under its retention; stale after
    // STAGING_MAX_AGE, as `optimize` takes them.
    match table.location.to_file_path() {
        Ok(root) => crate::rewrite::leftovers::stale_staging_files(
            &root,
            crate::rewrite::leftovers::STAGING_MAX_AGE,
        )
        .into_iter()
        .filter_map(|file| {
            let path = file
                .path
                .strip_prefix(&root)
                .ok()?
                .to_str()?
                .replace('\\', "/");
            Some((
                file.path,
                VacuumedFile {
                    path,
                    size_bytes: file.size_bytes,
                },
            ))
        })
        .collect(),
        Err(()) => Vec::new(),
    }
}

/// Removes the local `staging` files ([`stale_staging`]), in order; one already gone is
/// fine.
///
/// # Errors
/// [`Error::ObjectStore`] naming the first file that cannot be removed.
fn remove_staging(staging: &[(std::path::PathBuf, VacuumedFile)]) -> Result<()> {
    for (path, file) in staging {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(Error::ObjectStore {
                    path: file.path.clone(),
                    source: Box::new(deltalake::ObjectStoreError::Generic {
                        store: "local",
                        source: Box::new(source),
                    }),
                });
            }
        }
    }
    Ok(())
}

/// Deletes `files` from `store`, [`DELETE_CONCURRENCY`] at a time; one already gone is fine.
///
/// # Errors
/// [`Error::ObjectStore`] for a file that cannot be deleted; files deleted before stay
/// deleted.
async fn delete_files(
    store: &Arc<dyn deltalake::ObjectStore>,
    files: &[VacuumedFile],
) -> Result<()> {
    futures::stream::iter(files.iter())
        .map(|file| {
            let store = store.clone();
            async move {
                let location =
                    Path::parse(&file.path).unwrap_or_else(|_| Path::from(file.path.as_str()));
                match store.delete(&location).await {
                    Ok(()) | Err(deltalake::ObjectStoreError::NotFound { .. }) => Ok(()),
                    Err(source) => Err(Error::ObjectStore {
                        path: file.path.clone(),
                        source: Box::new(source),
                    }),
                }
            }
        })
        .buffer_unordered(DELETE_CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// Whether `path` ends as the local object store names the files it stages (`#<digits>`).
fn is_local_staging(path: &str) -> bool {
    path.rsplit_once('#')
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_staging_names_are_told_apart() {
        assert!(is_local_staging("p=1/part-0.parquet#12"));
        assert!(is_local_staging("_delta_log/00000000000000000001.json#1"));
        assert!(!is_local_staging("part-#a.parquet"));
        assert!(!is_local_staging("part-0.parquet#"));
        assert!(!is_local_staging("part-0.parquet"));
    }

    #[test]
    fn hidden_names_are_skipped_at_every_level() {
        let partitions = vec!["_p".to_string()];
        assert!(is_hidden("_SUCCESS", &partitions, false));
        assert!(is_hidden(".part-0.parquet.crc", &partitions, false));
        assert!(!is_hidden("_p=1", &partitions, false));
        assert!(!is_hidden("_change_data", &partitions, false));
        assert!(!is_hidden("part-0.parquet", &partitions, false));
        // UniForm's Iceberg metadata, as Delta Spark's `isHiddenDirectory` hides it.
        assert!(is_hidden("metadata", &partitions, true));
        assert!(!is_hidden("metadata", &partitions, false));
        assert!(!is_hidden("metadata.parquet", &partitions, true));
    }

    #[test]
    fn intervals_parse_to_hours() {
        assert_eq!(parse_interval_hours("interval 7 days"), Some(168.0));
        assert_eq!(parse_interval_hours("INTERVAL 1 WEEK"), Some(168.0));
        assert_eq!(
            parse_interval_hours("interval 2 hours 30 minutes"),
            Some(2.5)
        );
        assert_eq!(parse_interval_hours("interval 0 seconds"), Some(0.0));
        assert_eq!(parse_interval_hours("7 days"), Some(168.0));
        assert_eq!(parse_interval_hours("interval seven days"), None);
        assert_eq!(parse_interval_hours("interval 7 fortnights"), None);
        assert_eq!(parse_interval_hours(""), None);
    }
}
