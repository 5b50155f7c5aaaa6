//! The conflict rules of a rewrite (`dataChange=false`) against another writer's commit: one
//! checker, used by the single commit of [`super::commit`] and by the batched commits of
//! [`crate::workorder::commit`].
//!
//! A commit made after the version a run read conflicts with its rewrite when it:
//! * changed the table's metadata or protocol (the files were written for the schema and
//!   features the run read);
//! * assigned row IDs while the run also assigns them (row tracking: the IDs chosen may be
//!   taken; PROTOCOL.md "Row Tracking");
//! * removed or re-added a file the run rewrote (the run would resurrect deleted rows, or
//!   remove a file twice).
//!
//! Sources: the checks Delta's `ConflictChecker` (Spark, `ConflictChecker.scala`) and
//! delta-rs' `ConflictChecker` (crates/core/src/kernel/transaction/conflict_checker.rs) make
//! for a compaction; PROTOCOL.md "Row Tracking" for row IDs.

use crate::table::log::{CommitEntry, FileAction};

/// One way a winning commit conflicts with a rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Conflict<'a> {
    /// It has a `metaData` action.
    Metadata,
    /// It has a `protocol` action.
    Protocol,
    /// It has a row-tracking `domainMetadata` action.
    RowIds,
    /// It removed or re-added the file at `path` (percent-decoded).
    File {
        /// The file's path.
        path: &'a str,
        /// Whether it was removed or added.
        action: FileAction,
    },
}

impl Conflict<'_> {
    /// The reason as messages give it: "changed the table metadata", "removed data file 'x',
    /// which this run rewrote".
    pub(crate) fn reason(&self) -> String {
        match self {
            Conflict::Metadata => "changed the table metadata".into(),
            Conflict::Protocol => "changed the table protocol".into(),
            Conflict::RowIds => "assigned row IDs, so the ones this run chose may be taken".into(),
            Conflict::File { path, action } => {
                format!(
                    "{} data file '{path}', which this run rewrote",
                    verb(*action)
                )
            }
        }
    }
}

/// The past-tense verb of a file action, as conflict reasons use it.
pub(crate) fn verb(action: FileAction) -> &'static str {
    match action {
        FileAction::Remove => "removed",
        FileAction::Add => "re-added",
    }
}

/// The conflicts of `entry` with a rewrite of the files `rewritten` says it rewrote: a
/// metadata change, a protocol change, row IDs assigned (only when `tracks_rows`), then each
/// file action on a rewritten file, in the order of the commit file.
pub(crate) fn conflicts<'e>(
    entry: &'e CommitEntry,
    tracks_rows: bool,
    rewritten: impl Fn(&str) -> bool + 'e,
) -> impl Iterator<Item = Conflict<'e>> + 'e {
    let table = [
        entry.changes_metadata.then_some(Conflict::Metadata),
        entry.changes_protocol.then_some(Conflict::Protocol),
        (tracks_rows && entry.assigns_row_ids).then_some(Conflict::RowIds),
    ];
    table.into_iter().flatten().chain(
        entry
            .files
            .iter()
            .filter(move |(_, path)| rewritten(path))
            .map(|(action, path)| Conflict::File {
                path,
                action: *action,
            }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_first_then_files_in_log_order() {
        let entry = CommitEntry::parse(
            3,
            br#"{"add":{"path":"x.parquet"}}
{"remove":{"path":"a%20b.parquet"}}
{"protocol":{"minReaderVersion":1}}
{"domainMetadata":{"domain":"delta.rowTracking","configuration":"{}"}}
"#,
        )
        .unwrap();
        let found: Vec<String> = conflicts(&entry, true, |p| p == "a b.parquet")
            .map(|c| c.reason())
            .collect();
        assert_eq!(
            found,
            vec![
                "changed the table protocol".to_string(),
                "assigned row IDs, so the ones this run chose may be taken".to_string(),
                "removed data file 'a b.parquet', which this run rewrote".to_string(),
            ]
        );
        assert_eq!(
            conflicts(&entry, false, |_| false).collect::<Vec<_>>(),
            vec![Conflict::Protocol]
        );
    }
}
