//! The Delta log's commit files read as typed entries: the one place that parses a commit's
//! JSON actions, for the conflict checks of a commit ([`crate::commit`]), the batched commits
//! of work orders ([`crate::workorder`]), `history` and the recorded cut trees.
//!
//! A commit file `_delta_log/<version>.json` holds one JSON action per line (PROTOCOL.md
//! "Delta Log Entries", "Actions"). [`CommitEntry::parse`] reads the actions the tool acts on:
//! `commitInfo` (kept whole: its content is free-form, "Commit Provenance Information"),
//! `metaData` and `protocol` (their presence), the row-tracking `domainMetadata`
//! ("Row Tracking": its `rowIdHighWaterMark`), the paths of `add` and `remove` (percent-decoded
//! once, as "Add File and Remove File" stores them URI-encoded) and `txn` ("Transaction
//! Identifiers"). [`newest_first`] streams a table's commit files from its version down.
//!
//! Reference: delta-rs' `WinningCommitSummary` (crates/core/src/kernel/transaction/
//! conflict_checker.rs) parses a winning commit once into typed actions in the same way.

use deltalake::logstore::LogStoreRef;
use futures::{Stream, StreamExt as _};
use serde_json::Value;

use super::TableView;
use super::row_tracking::ROW_TRACKING_DOMAIN;
use crate::error::{Error, Result};

/// Commit files read concurrently by [`newest_first`].
pub const READS_IN_FLIGHT: usize = 16;

/// Whether a file action adds or removes its file (PROTOCOL.md "Add File and Remove File").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileAction {
    /// An `add` action.
    Add,
    /// A `remove` action.
    Remove,
}

/// One commit file's actions, as far as this tool acts on them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommitEntry {
    /// The commit's version.
    pub version: u64,
    /// Its `commitInfo` action, whole (`None`: the commit has none; PROTOCOL.md makes it
    /// optional).
    pub commit_info: Option<Value>,
    /// Whether it has a `metaData` action (it changed the table's metadata).
    pub changes_metadata: bool,
    /// Whether it has a `protocol` action (it changed the table's protocol).
    pub changes_protocol: bool,
    /// Whether it has a `domainMetadata` action of the row-tracking domain
    /// (`delta.rowTracking`): it assigned row IDs.
    pub assigns_row_ids: bool,
    /// The `rowIdHighWaterMark` of its last row-tracking `domainMetadata` action that has one.
    pub row_id_high_water_mark: Option<i64>,
    /// The paths of its `add` and `remove` actions in the order of the file, percent-decoded
    /// (relative to the table root, or absolute URIs).
    pub files: Vec<(FileAction, String)>,
    /// Its `txn` actions: `(appId, version)`.
    pub txns: Vec<(String, i64)>,
}

impl CommitEntry {
    /// Parses the commit file of `version` (newline-delimited JSON actions; blank lines are
    /// skipped).
    ///
    /// # Errors
    /// A description of the first line that is not JSON (with its 1-based number), for the
    /// caller to name the file ([`CommitEntry::read`] does).
    pub fn parse(version: u64, bytes: &[u8]) -> std::result::Result<Self, String> {
        let mut entry = CommitEntry {
            version,
            ..CommitEntry::default()
        };
        for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let mut action: Value = serde_json::from_slice(line)
                .map_err(|e| format!("has a line that is not JSON (line {}: {e})", i + 1))?;
            check_action(&action).map_err(|why| {
                format!(
                    "has a line that is not a Delta action (line {}: {why})",
                    i + 1
                )
            })?;
            entry.take(&mut action);
        }
        Ok(entry)
    }

    /// [`CommitEntry::parse`] of a commit file of `table`.
    ///
    /// # Errors
    /// [`Error::DamagedLog`] naming the file when a line of it is not JSON.
    pub fn read(table: &TableView, version: u64, bytes: &[u8]) -> Result<Self> {
        Self::parse(version, bytes).map_err(|message| Error::DamagedLog {
            table: table.display_location(),
            file: commit_file(version),
            message,
        })
    }

    fn take(&mut self, action: &mut Value) {
        if let Some(info) = action.get_mut("commitInfo") {
            // The first one counts, as for every reader that stops at it.
            if self.commit_info.is_none() {
                self.commit_info = Some(info.take());
            }
            return;
        }
        self.changes_metadata |= action.get("metaData").is_some();
        self.changes_protocol |= action.get("protocol").is_some();
        if let Some(domain) = action.get("domainMetadata")
            && domain.get("domain").and_then(Value::as_str) == Some(ROW_TRACKING_DOMAIN)
        {
            self.assigns_row_ids = true;
            if let Some(mark) = domain
                .get("configuration")
                .and_then(Value::as_str)
                .and_then(|c| serde_json::from_str::<Value>(c).ok())
                .and_then(|c| c.get("rowIdHighWaterMark").and_then(Value::as_i64))
            {
                self.row_id_high_water_mark = Some(mark);
            }
        }
        for (key, kind) in [("add", FileAction::Add), ("remove", FileAction::Remove)] {
            if let Some(path) = action
                .get(key)
                .and_then(|a| a.get("path"))
                .and_then(Value::as_str)
            {
                let decoded = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
                self.files.push((kind, decoded.into_owned()));
            }
        }
        if let Some(txn) = action.get("txn")
            && let Some(app_id) = txn.get("appId").and_then(Value::as_str)
            && let Some(version) = txn.get("version").and_then(Value::as_i64)
        {
            self.txns.push((app_id.to_string(), version));
        }
    }

    /// A field of its `commitInfo`, if it has both.
    #[must_use]
    pub fn commit_info_field(&self, key: &str) -> Option<&Value> {
        self.commit_info.as_ref().and_then(|info| info.get(key))
    }
}

/// Refuses a line that no Delta reader could load, where a rewrite would otherwise commit on
/// top of it: an action that is not a JSON object, and an `add` or `remove` that is not an
/// object with a string `path` (PROTOCOL.md "Add File and Remove File": `path` is required).
fn check_action(action: &Value) -> std::result::Result<(), &'static str> {
    let Some(object) = action.as_object() else {
        return Err("not a JSON object");
    };
    for key in ["add", "remove"] {
        if let Some(file) = object.get(key)
            && !file.get("path").is_some_and(Value::is_string)
        {
            return Err("an add or remove without a string path");
        }
    }
    Ok(())
}

/// The log file of commit `version`, relative to the table root.
#[must_use]
pub fn commit_file(version: u64) -> String {
    format!("_delta_log/{version:020}.json")
}

/// The commit files of `table` from its version down to version 0, newest first, each with
/// its version; `None` for a commit file that does not exist (log clean-up removes the oldest
/// first, so none below a missing one is left: callers stop there). [`READS_IN_FLIGHT`] are
/// read at once.
///
/// # Errors
/// Each item: [`Error::Delta`] when the commit file cannot be read.
pub fn newest_first(
    table: &TableView,
) -> impl Stream<Item = Result<(u64, Option<bytes::Bytes>)>> + use<> {
    let store: LogStoreRef = table.log_store.clone();
    futures::stream::iter((0..=table.version).rev())
        .map(move |version| {
            let store = store.clone();
            async move {
                let bytes = store.read_commit_entry(version).await.map_err(|e| {
                    Error::delta(format!("reading the commit of version {version}"), e)
                })?;
                Ok::<_, Error>((version, bytes))
            }
        })
        .buffered(READS_IN_FLIGHT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_actions_acted_on() {
        let commit = br#"{"commitInfo":{"operation":"OPTIMIZE","runId":"r1"}}
{"metaData":{"id":"x"}}

{"domainMetadata":{"domain":"delta.rowTracking","configuration":"{\"rowIdHighWaterMark\":41}","removed":false}}
{"remove":{"path":"a%20b.parquet","dataChange":false}}
{"add":{"path":"c%3Ad.parquet","dataChange":false}}
{"txn":{"appId":"r1","version":3}}
"#;
        let entry = CommitEntry::parse(7, commit).unwrap();
        assert_eq!(entry.version, 7);
        assert_eq!(
            entry.commit_info_field("runId").and_then(Value::as_str),
            Some("r1")
        );
        assert!(entry.changes_metadata);
        assert!(!entry.changes_protocol);
        assert!(entry.assigns_row_ids);
        assert_eq!(entry.row_id_high_water_mark, Some(41));
        assert_eq!(
            entry.files,
            vec![
                (FileAction::Remove, "a b.parquet".to_string()),
                (FileAction::Add, "c:d.parquet".to_string()),
            ]
        );
        assert_eq!(entry.txns, vec![("r1".to_string(), 3)]);
    }

    #[test]
    fn names_the_line_that_is_not_json() {
        assert_eq!(
            CommitEntry::parse(0, b"{\"add\":{\"path\":\"a\"}}\n")
                .unwrap()
                .commit_info,
            None
        );
        let error = CommitEntry::parse(0, b"{\"add\":{\"path\":\"a\"}}\nnot json\n").unwrap_err();
        assert!(
            error.starts_with("has a line that is not JSON (line 2"),
            "{error}"
        );
        // JSON that no Delta reader could load is refused too, never committed on top of.
        let bad: [&[u8]; 4] = [
            b"[1]",
            b"{\"remove\":5}",
            b"{\"add\":{\"path\":5}}",
            b"{\"remove\":{\"dataChange\":true}}",
        ];
        for line in bad {
            let error = CommitEntry::parse(0, line).unwrap_err();
            assert!(
                error.starts_with("has a line that is not a Delta action (line 1"),
                "{error}"
            );
        }
    }
}
