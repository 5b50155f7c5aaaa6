//! Where a partition's files live: Hive-style directory names, and the directory new files
//! of a partition go to.
//!
//! Source: Hive's `escapePathName` (as Spark and Delta writers use it) for the names; the
//! paths of the log's `add` actions for the directories existing files already use
//! (PROTOCOL.md "Add File and Remove File": paths are relative to the table root).

use crate::table::TableView;

/// Characters escaped in partition directory names (Hive's `escapePathName`, as Spark and
/// Delta writers use it), besides control characters.
const ESCAPED: &[char] = &[
    '"', '#', '%', '\'', '*', '/', ':', '=', '?', '\\', '\u{7f}', '{', '[', ']', '^',
];

/// The value Hive and Delta writers use for a null partition value in a directory name.
pub const NULL_PARTITION_DIR_VALUE: &str = "__HIVE_DEFAULT_PARTITION__";

/// Escapes one path element the way Hive/Spark do (`%XX`, upper case hex).
#[must_use]
pub fn escape_path_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_control() || ESCAPED.contains(&c) {
            out.push_str(&format!("%{:02X}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// The Hive-style directory of a partition: `col=value/col2=value2` with escaping, null (and
/// empty) values as [`NULL_PARTITION_DIR_VALUE`]; empty for an unpartitioned table.
#[must_use]
pub fn partition_directory(physical_names: &[String], values: &[Option<String>]) -> String {
    physical_names
        .iter()
        .zip(values)
        .map(|(name, value)| {
            let value = match value.as_deref() {
                None | Some("") => NULL_PARTITION_DIR_VALUE.to_string(),
                Some(v) => escape_path_name(v),
            };
            format!("{}={value}", escape_path_name(name))
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The directory new files of a partition go to: the parent directory of every file in
/// `indices` when they all share one, else the Hive-style [`partition_directory`] of
/// `raw_values`; empty for an unpartitioned table. A file at the table root, at an absolute
/// URI, or in a directory with a `.`/`..` segment or inside `_delta_log` never names the
/// directory.
#[must_use]
pub fn output_directory(
    table: &TableView,
    indices: &[usize],
    raw_values: &[Option<String>],
) -> String {
    if table.partition_columns.is_empty() {
        return String::new();
    }
    let parent = |i: &usize| -> Option<&str> {
        let path = table.files.get(*i)?.path.as_str();
        let (dir, _) = path.rsplit_once('/')?;
        let sound = !dir.is_empty()
            && !path.contains("://")
            && !dir.starts_with("_delta_log")
            && dir
                .split('/')
                .all(|s| !s.is_empty() && s != "." && s != "..");
        sound.then_some(dir)
    };
    let mut dirs = indices.iter().map(parent);
    if let Some(Some(first)) = dirs.next()
        && dirs.all(|d| d == Some(first))
    {
        return first.to_string();
    }
    partition_directory(&table.partition_physical_names, raw_values)
}
