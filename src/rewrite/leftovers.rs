//! What a run killed mid-way (`kill -9`, a lost machine) leaves behind, and how later runs
//! recognise and remove it.
//!
//! | leftover | named | removed by |
//! |---|---|---|
//! | spill directory | `delta-layout-spill-<pid>-<random>` in the spill directory | the next clustering run, once process `<pid>` no longer exists |
//! | commit staging file | `_delta_log/<version>.json#<n>` (the local store writes there, then links) | the next `optimize` of the table (one with nothing to do included) and `vacuum`, once it is older than [`STAGING_MAX_AGE`] |
//! | upload staging file (local tables) | `<partition>/part-<bin>-<run id>-<writer>-<random>-c<seq>.<codec>.parquet#<n>`: a file larger than an upload part, being written (the local store stages it, then renames it into place; see [`super::upload`]) | the next `optimize` of the table (one with nothing to do included) and `vacuum`, once it is older than [`STAGING_MAX_AGE`] (Delta's `VACUUM` never sees it: the local store's listing skips these names) |
//! | unfinished multipart upload (object stores) | an upload id for a data file's name, invisible to listings | the store's own rule: an S3 lifecycle rule with `AbortIncompleteMultipartUpload`; Azure drops uncommitted blocks after 7 days |
//! | data files | `part-<bin>-<run id>-<writer>-<random>-c<seq>.<codec>.parquet`, referenced by no commit | `VACUUM` (Delta's, delta-rs'), after the table's retention: a file of a run still going cannot be told from one of a dead run by its name alone |
//!
//! Everything here is best effort: a leftover that cannot be removed is logged, never an error.
//! Process liveness is read from `/proc`; where it does not exist, spill directories are left.

use std::path::Path;
use std::time::Duration;

/// Prefix of spill directories; the process id and a random part follow.
pub const SPILL_PREFIX: &str = "delta-layout-spill-";

/// Age after which a commit staging file is taken for a dead run's: no live commit takes an
/// hour between writing its staging file and linking it.
pub const STAGING_MAX_AGE: Duration = Duration::from_secs(3600);

/// The prefix of this process's spill directories: `delta-layout-spill-<pid>-`.
#[must_use]
pub fn spill_prefix() -> String {
    format!("{SPILL_PREFIX}{}-", std::process::id())
}

/// Removes the spill directories in `parent` whose process no longer exists. Returns how
/// many were removed.
pub fn remove_dead_spill_directories(parent: &Path) -> usize {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SPILL_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id()
            || proc.join(pid.to_string()).exists()
            || !entry.file_type().is_ok_and(|t| t.is_dir())
        {
            continue;
        }
        match std::fs::remove_dir_all(entry.path()) {
            Ok(()) => removed += 1,
            Err(e) => log::warn!(
                "could not remove the spill directory '{}' of a dead run: {e}",
                entry.path().display()
            ),
        }
    }
    removed
}

/// Whether `name` is a commit staging file: `<20 digits>.json#<n>`.
fn is_commit_staging(name: &str) -> bool {
    name.split_once(".json#").is_some_and(|(version, n)| {
        version.len() == 20
            && version.bytes().all(|b| b.is_ascii_digit())
            && !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Removes commit staging files (`<20 digits>.json#<n>`) older than `max_age` from the
/// `_delta_log` directory of the local table at `root`. Returns how many were removed.
pub fn remove_stale_commit_staging(root: &Path, max_age: Duration) -> usize {
    stale_commit_staging(root, max_age)
        .iter()
        .filter(|file| remove(&file.path, "commit staging file"))
        .count()
}

/// A staging file a dead run left ([`stale_staging_files`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagingFile {
    /// Its path.
    pub path: std::path::PathBuf,
    /// Its size in bytes.
    pub size_bytes: u64,
}

/// The commit staging files of the local table at `root` older than `max_age`.
fn stale_commit_staging(root: &Path, max_age: Duration) -> Vec<StagingFile> {
    let Ok(entries) = std::fs::read_dir(root.join("_delta_log")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_str().is_some_and(is_commit_staging))
        .filter_map(|entry| older(&entry, max_age))
        .collect()
}

/// The commit and upload staging files of the local table at `root` (see the module docs)
/// older than `max_age`, sorted by path: what [`remove_stale_staging`] removes, and `vacuum`
/// lists and removes.
#[must_use]
pub fn stale_staging_files(root: &Path, max_age: Duration) -> Vec<StagingFile> {
    let mut files = stale_commit_staging(root, max_age);
    files.extend(stale_upload_staging(root, max_age));
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// Removes the commit and upload staging files of the local table at `root` older than
/// [`STAGING_MAX_AGE`]: what every `optimize` that writes or has nothing to write does first.
/// Returns how many were removed.
pub fn remove_stale_staging(root: &Path) -> usize {
    let commits = remove_stale_commit_staging(root, STAGING_MAX_AGE);
    let uploads = remove_stale_upload_staging(root, STAGING_MAX_AGE);
    if uploads > 0 {
        log::info!("removed {uploads} upload staging files of runs that died");
    }
    commits + uploads
}

/// `entry` as a staging file when it is a file last modified `max_age` ago or earlier.
fn older(entry: &std::fs::DirEntry, max_age: Duration) -> Option<StagingFile> {
    let metadata = entry.metadata().ok()?;
    let age = metadata.modified().ok()?.elapsed().ok()?;
    (metadata.is_file() && age >= max_age).then(|| StagingFile {
        path: entry.path(),
        size_bytes: metadata.len(),
    })
}

/// Removes the leftover `kind` at `path`; one that cannot be removed is logged. Whether it
/// was removed.
fn remove(path: &Path, kind: &str) -> bool {
    match std::fs::remove_file(path) {
        Ok(()) => true,
        Err(e) => {
            log::warn!(
                "could not remove the {kind} '{}' of a dead run: {e}",
                path.display()
            );
            false
        }
    }
}

/// Whether `name` is the staging file of a data file this tool writes, as the local store
/// names it during a multipart upload: `part-<bin>-<16 hex run id>-...parquet#<n>`.
fn is_upload_staging(name: &str) -> bool {
    let Some((file, n)) = name.rsplit_once('#') else {
        return false;
    };
    let run_id = file.split('-').nth(2).unwrap_or_default();
    file.starts_with("part-")
        && file.ends_with(".parquet")
        && run_id.len() == 16
        && run_id.bytes().all(|b| b.is_ascii_hexdigit())
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
}

/// Removes the upload staging files of data files (see `is_upload_staging`) older than
/// `max_age` from the local table at `root` and its partition directories (every directory
/// but `_delta_log` and names starting with `_` or `.`; links are not followed). A staging
/// file that old belongs to a dead run: a live upload writes to its file with every part.
/// Returns how many were removed.
pub fn remove_stale_upload_staging(root: &Path, max_age: Duration) -> usize {
    stale_upload_staging(root, max_age)
        .iter()
        .filter(|file| remove(&file.path, "upload staging file"))
        .count()
}

/// The upload staging files older than `max_age` ([`remove_stale_upload_staging`]).
fn stale_upload_staging(root: &Path, max_age: Duration) -> Vec<StagingFile> {
    let mut found = Vec::new();
    let mut directories = vec![root.to_path_buf()];
    while let Some(directory) = directories.pop() {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !name.starts_with(['_', '.']) {
                    directories.push(entry.path());
                }
                continue;
            }
            if kind.is_file()
                && is_upload_staging(name)
                && let Some(file) = older(&entry, max_age)
            {
                found.push(file);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dead_processes_lose_their_spill_directories() {
        let dir = tempfile::tempdir().unwrap();
        // pid 0 is never a user process; u32::MAX - 1 exceeds pid_max.
        let dead = dir
            .path()
            .join(format!("{SPILL_PREFIX}{}-abc", u32::MAX - 1));
        let mine = dir.path().join(format!("{}xyz", spill_prefix()));
        let other = dir.path().join("delta-layout-spill-notapid");
        for d in [&dead, &mine, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("0.arrow"), b"rows").unwrap();
        }
        assert_eq!(remove_dead_spill_directories(dir.path()), 1);
        assert!(!dead.exists());
        assert!(mine.exists() && other.exists());
    }

    #[test]
    fn stale_staging_files_go_commits_stay() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("_delta_log");
        std::fs::create_dir(&log).unwrap();
        let staging = log.join("00000000000000000003.json#1");
        let commit = log.join("00000000000000000003.json");
        let odd = log.join("notes.json#1");
        for f in [&staging, &commit, &odd] {
            std::fs::write(f, b"{}").unwrap();
        }
        // Fresh: a live run may be linking it right now.
        assert_eq!(remove_stale_commit_staging(dir.path(), STAGING_MAX_AGE), 0);
        assert_eq!(remove_stale_commit_staging(dir.path(), Duration::ZERO), 1);
        assert!(!staging.exists() && commit.exists() && odd.exists());
    }

    #[test]
    fn stale_upload_staging_files_go_data_files_stay() {
        let dir = tempfile::tempdir().unwrap();
        let partition = dir.path().join("p=1");
        let hidden = dir.path().join("_delta_log");
        std::fs::create_dir_all(&partition).unwrap();
        std::fs::create_dir_all(&hidden).unwrap();
        let name = "part-00003-0123456789abcdef-00000-1a2b3c4d-c000.zstd.parquet";
        let staging = partition.join(format!("{name}#1"));
        let top = dir.path().join(format!("{name}#12"));
        let data = partition.join(name);
        let foreign = partition.join("notes.parquet#1");
        let in_log = hidden.join(format!("{name}#1"));
        for f in [&staging, &top, &data, &foreign, &in_log] {
            std::fs::write(f, b"bytes").unwrap();
        }
        assert_eq!(remove_stale_upload_staging(dir.path(), STAGING_MAX_AGE), 0);
        assert_eq!(remove_stale_upload_staging(dir.path(), Duration::ZERO), 2);
        assert!(!staging.exists() && !top.exists());
        assert!(data.exists() && foreign.exists() && in_log.exists());
    }
}
