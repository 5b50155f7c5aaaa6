//! Naming the damaged file when a table's log cannot be read.
//!
//! deltalake and delta-kernel report a broken log in their own terms (a gap between log
//! segments, a JSON or schema error with a column number but no file). When a load fails,
//! the local `_delta_log` directory is examined here, in version order, for the first file
//! that is damaged, so the error can name it: a commit that is a directory or holds a line
//! that is not JSON, a `metaData` whose `schemaString` does not parse, a checkpoint that is
//! not a readable Parquet file, a `_last_checkpoint` that is not JSON, an `add` whose
//! partition value is not a value of its column's type, a `protocol` listing features at
//! versions without feature lists. Errors the kernel reports without a file name the newest
//! commit or checkpoint file being loaded ([`newest_log_file`]).
//!
//! Source: PROTOCOL.md "Delta Log Entries", "Checkpoints", "Last Checkpoint File".

use std::path::Path;

use deltalake::kernel::StructType;
use deltalake::parquet::file::reader::SerializedFileReader;

/// The most log files examined; past that the load's own error is reported.
const MAX_FILES: usize = 100_000;

/// The first damaged file of the log at `root/_delta_log` as (path relative to the table
/// root, what is wrong), or `None` when no file looks damaged.
#[must_use]
pub fn first_damaged_file(root: &Path) -> Option<(String, String)> {
    let log = root.join("_delta_log");
    let mut names: Vec<String> = std::fs::read_dir(&log)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    if names.len() > MAX_FILES {
        return None;
    }
    names.sort();
    if let Some(gap) = first_gap(&names) {
        return Some(gap);
    }
    let mut partitions = Partitions::default();
    for name in names {
        let path = log.join(&name);
        let relative = format!("_delta_log/{name}");
        let Some(kind) = kind_of(&name) else {
            continue;
        };
        if path.is_dir() {
            return Some((relative, format!("is a directory, not a {kind}")));
        }
        let problem = match kind {
            Kind::Commit => check_commit(&path, &mut partitions),
            Kind::Checkpoint => check_checkpoint(&path),
            Kind::LastCheckpoint => check_json(&path),
        };
        if let Some(message) = problem {
            return Some((relative, message));
        }
    }
    None
}

/// The version of a log file name (`<20 digits>.json`, `.checkpoint...parquet`, `.crc`).
fn version_of(name: &str) -> Option<u64> {
    let (version, _) = name.split_once('.')?;
    (version.len() == 20)
        .then(|| version.parse::<u64>().ok())
        .flatten()
}

/// The newest commit or checkpoint file of the log at `root/_delta_log` at or below
/// `version` (the latest when `None`), relative to the table root: the file a load of that
/// version reads last, named when the Delta kernel reports an error without a file.
#[must_use]
pub fn newest_log_file(root: &Path, version: Option<u64>) -> Option<String> {
    let names = std::fs::read_dir(root.join("_delta_log")).ok()?;
    names
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| matches!(kind_of(n), Some(Kind::Commit | Kind::Checkpoint)))
        .filter_map(|n| Some((version_of(&n)?, n)))
        .filter(|(v, _)| version.is_none_or(|max| *v <= max))
        // At one version, the checkpoint sorts after the commit: it is what a load reads.
        .max()
        .map(|(_, n)| format!("_delta_log/{n}"))
}

/// The table's `protocol` action as the newest commit at or below `version` that holds one
/// writes it, with that commit's path relative to the table root; `None` when no commit
/// newer than the newest checkpoint holds one (the protocol is then in the checkpoint) or
/// the log cannot be listed. Read before the Delta kernel loads the table, which refuses
/// some tables (catalog-managed ones) in its own words.
#[must_use]
pub fn newest_protocol(
    root: &Path,
    version: Option<u64>,
) -> Option<(String, super::features::ProtocolInfo)> {
    let log = root.join("_delta_log");
    let mut names: Vec<(u64, String)> = std::fs::read_dir(&log)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| matches!(kind_of(n), Some(Kind::Commit | Kind::Checkpoint)))
        .filter_map(|n| Some((version_of(&n)?, n)))
        .filter(|(v, _)| version.is_none_or(|max| *v <= max))
        .collect();
    if names.len() > MAX_FILES {
        return None;
    }
    names.sort();
    for (_, name) in names.iter().rev() {
        if matches!(kind_of(name), Some(Kind::Checkpoint)) {
            return None;
        }
        let text = std::fs::read_to_string(log.join(name)).ok()?;
        for line in text.lines() {
            let Ok(action) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if let Some(protocol) = action.get("protocol") {
                let protocol = super::features::ProtocolInfo::from_protocol(protocol).ok()?;
                return Some((format!("_delta_log/{name}"), protocol));
            }
        }
    }
    None
}

/// What is wrong with a `protocol` action, by PROTOCOL.md "Protocol Evolution": feature
/// lists belong to reader version 3 and writer version 7 only.
fn check_protocol(protocol: &serde_json::Value) -> Option<String> {
    let version = |key: &str| protocol.get(key).and_then(serde_json::Value::as_i64);
    let listed = |key: &str| protocol.get(key).is_some_and(|v| !v.is_null());
    let reader = version("minReaderVersion");
    if listed("readerFeatures") && reader != Some(3) {
        return Some(format!(
            "lists readerFeatures at minReaderVersion {}, where they need version 3",
            reader.map_or_else(|| "(none)".to_string(), |v| v.to_string())
        ));
    }
    let writer = version("minWriterVersion");
    if listed("writerFeatures") && writer != Some(7) {
        return Some(format!(
            "lists writerFeatures at minWriterVersion {}, where they need version 7",
            writer.map_or_else(|| "(none)".to_string(), |v| v.to_string())
        ));
    }
    None
}

/// A commit missing after the newest checkpoint (older commits may be cleaned up): the
/// first version the log jumps over, named as its commit file.
fn first_gap(names: &[String]) -> Option<(String, String)> {
    let version = |name: &str| name.get(..20).and_then(|v| v.parse::<u64>().ok());
    let checkpoint = names
        .iter()
        .filter(|n| matches!(kind_of(n), Some(Kind::Checkpoint)))
        .filter_map(|n| version(n))
        .max();
    let mut commits: Vec<u64> = names
        .iter()
        .filter(|n| matches!(kind_of(n), Some(Kind::Commit)))
        .filter_map(|n| version(n))
        .filter(|v| checkpoint.is_none_or(|c| *v > c))
        .collect();
    commits.sort_unstable();
    let mut expected = checkpoint.map_or_else(|| commits.first().copied(), |c| Some(c + 1))?;
    for v in commits {
        if v != expected {
            return Some((
                format!("_delta_log/{expected:020}.json"),
                format!(
                    "is missing: the log jumps from version {} to {v}",
                    expected.saturating_sub(1)
                ),
            ));
        }
        expected = v + 1;
    }
    None
}

#[derive(Clone, Copy)]
enum Kind {
    Commit,
    Checkpoint,
    LastCheckpoint,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Commit => "commit file",
            Kind::Checkpoint => "checkpoint file",
            Kind::LastCheckpoint => "_last_checkpoint file",
        })
    }
}

fn kind_of(name: &str) -> Option<Kind> {
    if name == "_last_checkpoint" {
        return Some(Kind::LastCheckpoint);
    }
    let (version, rest) = name.split_once('.')?;
    if version.len() != 20 || !version.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if rest == "json" {
        Some(Kind::Commit)
    } else if rest.starts_with("checkpoint") && rest.ends_with(".parquet") {
        Some(Kind::Checkpoint)
    } else {
        None
    }
}

fn check_json(path: &Path) -> Option<String> {
    let text = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => return Some(format!("cannot be read: {e}")),
    };
    serde_json::from_slice::<serde_json::Value>(&text)
        .err()
        .map(|e| format!("is not valid JSON: {e}"))
}

/// The columns of a schema (`schemaString` as JSON) whose type is a geospatial one,
/// `geometry(...)` or `geography(...)` (the geospatial RFC of delta-io/delta), at any depth
/// (struct fields, array elements, map keys and values), as (dotted path, type).
fn geospatial_columns(data_type: &serde_json::Value, path: &str) -> Vec<(String, String)> {
    let child = |name: &str| {
        if path.is_empty() {
            name.to_string()
        } else {
            format!("{path}.{name}")
        }
    };
    match data_type {
        serde_json::Value::String(t) => {
            let lower = t.to_ascii_lowercase();
            if lower.starts_with("geometry") || lower.starts_with("geography") {
                vec![(path.to_string(), t.clone())]
            } else {
                Vec::new()
            }
        }
        serde_json::Value::Object(o) => {
            let mut out = Vec::new();
            if let Some(fields) = o.get("fields").and_then(serde_json::Value::as_array) {
                for f in fields {
                    let name = f
                        .get("name")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("?");
                    if let Some(t) = f.get("type") {
                        out.extend(geospatial_columns(t, &child(name)));
                    }
                }
            }
            for (key, part) in [
                ("elementType", "element"),
                ("keyType", "key"),
                ("valueType", "value"),
            ] {
                if let Some(t) = o.get(key) {
                    out.extend(geospatial_columns(t, &child(part)));
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

/// The partition columns of the latest `metaData` seen, with their types.
#[derive(Default)]
struct Partitions(Vec<(String, deltalake::kernel::DataType)>);

fn check_commit(path: &Path, partitions: &mut Partitions) -> Option<String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => return Some(format!("cannot be read as UTF-8 text: {e}")),
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let action: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => return Some(format!("line {} is not valid JSON: {e}", i + 1)),
        };
        if let Some(problem) = action.get("protocol").and_then(check_protocol) {
            return Some(format!("line {} holds a protocol that {problem}", i + 1));
        }
        if let Some(meta) = action.get("metaData")
            && !meta
                .get("schemaString")
                .is_some_and(serde_json::Value::is_string)
        {
            return Some(format!(
                "line {} holds a metaData without a schemaString (the table's schema)",
                i + 1
            ));
        }
        if let Some(schema) = action
            .get("metaData")
            .and_then(|m| m.get("schemaString"))
            .and_then(serde_json::Value::as_str)
        {
            let schema = match serde_json::from_str::<StructType>(schema) {
                Ok(schema) => schema,
                Err(e) => {
                    let raw = serde_json::from_str::<serde_json::Value>(schema).ok();
                    if let Some((column, data_type)) = raw
                        .as_ref()
                        .and_then(|raw| geospatial_columns(raw, "").into_iter().next())
                    {
                        return Some(format!(
                            "line {} declares column '{column}' of type '{data_type}': Delta's geospatial types (geometry, geography) cannot be read by the delta-kernel this delta-layout is built with, so the table cannot be rewritten",
                            i + 1
                        ));
                    }
                    return Some(format!(
                        "line {} holds a metaData whose schemaString is not a valid Delta schema: {e}",
                        i + 1
                    ));
                }
            };
            let columns = action["metaData"]
                .get("partitionColumns")
                .and_then(serde_json::Value::as_array)
                .cloned()
                .unwrap_or_default();
            partitions.0 = columns
                .iter()
                .filter_map(serde_json::Value::as_str)
                .filter_map(|c| {
                    let field = schema.fields().find(|f| f.name() == c)?;
                    Some((c.to_string(), field.data_type().clone()))
                })
                .collect();
        }
        if let Some(values) = action
            .get("add")
            .and_then(|a| a.get("partitionValues"))
            .and_then(serde_json::Value::as_object)
        {
            for (column, data_type) in &partitions.0 {
                let Some(text) = values.get(column).and_then(serde_json::Value::as_str) else {
                    continue;
                };
                if !text.is_empty() && !super::partition_value_strict(data_type, text) {
                    let file = action["add"]["path"].as_str().unwrap_or("?");
                    return Some(format!(
                        "line {}: data file '{file}' has partition value '{text}' for column '{column}', which is not a valid {data_type}",
                        i + 1
                    ));
                }
            }
        }
    }
    None
}

fn check_checkpoint(path: &Path) -> Option<String> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return Some(format!("cannot be opened: {e}")),
    };
    // A footer that reads is enough here: row-level damage is named by the load's own error.
    SerializedFileReader::new(file)
        .err()
        .map(|e| format!("is not a readable Parquet checkpoint: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_first_damaged_file() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("_delta_log");
        std::fs::create_dir(&log).unwrap();
        std::fs::write(
            log.join("00000000000000000000.json"),
            "{\"commitInfo\":{}}\n",
        )
        .unwrap();
        assert_eq!(first_damaged_file(dir.path()), None);
        std::fs::create_dir(log.join("00000000000000000001.json")).unwrap();
        let (file, message) = first_damaged_file(dir.path()).unwrap();
        assert_eq!(file, "_delta_log/00000000000000000001.json");
        assert!(message.contains("directory"), "{message}");
        std::fs::remove_dir(log.join("00000000000000000001.json")).unwrap();
        std::fs::write(
            log.join("00000000000000000001.json"),
            "{\"metaData\":{\"schemaString\":\"{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[{\\\"name\\\":\\\"x\\\",\\\"type\\\":\\\"nope\\\"}]}\"}}",
        )
        .unwrap();
        let (file, message) = first_damaged_file(dir.path()).unwrap();
        assert_eq!(file, "_delta_log/00000000000000000001.json");
        assert!(message.contains("schemaString"), "{message}");
        std::fs::write(log.join("00000000000000000001.json"), "{\"add\": garbage").unwrap();
        let (_, message) = first_damaged_file(dir.path()).unwrap();
        assert!(message.contains("line 1 is not valid JSON"), "{message}");
        std::fs::write(log.join("00000000000000000001.json"), "{}").unwrap();
        std::fs::write(
            log.join("00000000000000000001.checkpoint.parquet"),
            "garbage",
        )
        .unwrap();
        let (file, message) = first_damaged_file(dir.path()).unwrap();
        assert_eq!(file, "_delta_log/00000000000000000001.checkpoint.parquet");
        assert!(message.contains("Parquet"), "{message}");
    }
}
