//! Strings of the log that delta-rs reads wrongly, and their exact values from the log's text.
//!
//! JSON may spell a character above U+FFFF as an escaped UTF-16 surrogate pair
//! (`"\uDBFF\uDFFF"` for U+10FFFF); Python's `json` module does so by default, so logs and
//! stats written from Python do. delta-kernel (under delta-rs) reads the log's JSON commits,
//! and the stats text of every `add`, with arrow-rs' JSON reader, whose surrogate-pair decoder
//! (arrow-json `char_from_surrogate_pair`, 59.3 to 60.1 at least) adds 0x10000 with a bitwise
//! or: a character whose code point minus 0x10000 has bit 16 set (planes 2, 4, …, 16: CJK
//! Extension B and later, tags, plane 16's private use, U+10FFFF) comes out 0x10000 lower.
//! serde_json, which reads the same text here, decodes it exactly (RFC 8259 section 7).
//!
//! What that would do here, and what is done instead:
//! * A string min/max in delta-rs' parsed stats columns could be lower than the value in the
//!   file, and pruning would skip a file holding a matching row: stats whose text has such an
//!   escape are read from the text ([`has_misread_escape`], in [`super::stats`]), never from
//!   the parsed columns.
//! * A partition value, path, stats text or tag of an `add` in a JSON commit that spelled it
//!   with such an escape would be rewritten with another value (rows changed for every reader
//!   that decodes JSON exactly: Spark, Trino): when anything the log gave holds a character
//!   above U+FFFF (the exact spelling of a file whose `remove` was misread, or a misread
//!   one, [`may_be_misread`]), the JSON commits after the last checkpoint are read here and,
//!   when a line spells a string with such an escape, replayed
//!   exactly ([`exact_replay`]): the files delta-rs listed under a path those commits name are
//!   replaced by the files the exact replay leaves live (an `add` and a `remove` of one file
//!   spelled differently are paired, as Spark pairs them). Checkpoints are Parquet and read
//!   exactly.
//! * A `remove` this tool writes spells its path as the file's latest `add` does
//!   ([`escaped_paths`]), so that every reader pairs them.
//! * A `metaData` action spelled with such an escape (a column name, a property) is refused:
//!   the schema delta-rs gives would name other columns than the data files hold.

use std::collections::HashMap;

use deltalake::kernel::Add;
use futures::StreamExt as _;
use object_store::ObjectStoreExt as _;
use serde_json::Value;

use crate::error::{Error, Result};

/// Whether `text` (JSON) holds an escaped surrogate pair that arrow-json decodes into another
/// character: a high surrogate `\uD840`–`\uDBFF` whose bit 6 is set (its third hex digit
/// 4–7 or C–F), followed by an escaped low surrogate.
#[must_use]
pub fn has_misread_escape(text: &str) -> bool {
    let bytes = text.as_bytes();
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut i = 0;
    while let Some(at) = memchr_backslash(&bytes[i..]) {
        let s = i + at;
        // `\uDxyz\uD…`: 12 bytes.
        if let Some(e) = bytes.get(s..s + 12)
            && e[1] == b'u'
            && matches!(e[2], b'd' | b'D')
            && matches!(hex(e[3]), Some(8..=11))
            && hex(e[4]).is_some_and(|d| d & 0b100 != 0)
            && hex(e[5]).is_some()
            && e[6] == b'\\'
            && e[7] == b'u'
            && matches!(e[8], b'd' | b'D')
            && matches!(hex(e[9]), Some(12..=15))
        {
            return true;
        }
        // An escaped backslash is not the start of an escape.
        i = s + if bytes.get(s + 1) == Some(&b'\\') {
            2
        } else {
            1
        };
    }
    false
}

fn memchr_backslash(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\\')
}

/// Whether `s` holds a character that arrow-json's misreading can produce: one of planes 1,
/// 3, …, 15 (code point minus 0x10000 with bit 16 clear). Strings without one were read
/// exactly whatever the JSON spelled.
#[must_use]
pub fn may_be_misread(s: &str) -> bool {
    s.chars()
        .any(|c| u32::from(c) >= 0x1_0000 && (u32::from(c) - 0x1_0000) & 0x1_0000 == 0)
}

/// `s` as arrow-json reads it when the JSON escapes every character above U+FFFF.
#[must_use]
pub fn misread(s: &str) -> String {
    s.chars()
        .map(|c| {
            let n = u32::from(c);
            if n >= 0x1_0000 && (n - 0x1_0000) & 0x1_0000 != 0 {
                char::from_u32(n - 0x1_0000).unwrap_or(c)
            } else {
                c
            }
        })
        .collect()
}

/// The JSON commits after the table's last checkpoint up to `version` (the files delta-kernel
/// replays with arrow-json), in version order, as (file name, bytes).
///
/// # Errors
/// [`Error::ObjectStore`] when the log cannot be listed or read.
pub async fn json_commits_since_checkpoint(
    store: &std::sync::Arc<dyn deltalake::ObjectStore>,
    version: u64,
) -> Result<Vec<(String, bytes::Bytes)>> {
    let log = deltalake::Path::from("_delta_log");
    let mut names: Vec<String> = Vec::new();
    let mut listing = store.list(Some(&log));
    while let Some(meta) = listing.next().await {
        let meta = meta.map_err(|e| Error::ObjectStore {
            path: "_delta_log".into(),
            source: Box::new(e),
        })?;
        if let Some(name) = meta.location.filename() {
            names.push(name.to_string());
        }
    }
    let version_of = |name: &str| name.get(..20).and_then(|v| v.parse::<u64>().ok());
    let checkpoint = names
        .iter()
        .filter(|n| n.contains(".checkpoint"))
        .filter_map(|n| version_of(n))
        .filter(|v| *v <= version)
        .max();
    let mut commits: Vec<(u64, String)> = names
        .into_iter()
        .filter(|n| n.len() == 25 && n.ends_with(".json"))
        .filter_map(|n| Some((version_of(&n)?, n)))
        .filter(|(v, _)| checkpoint.is_none_or(|c| *v > c) && *v <= version)
        .collect();
    commits.sort();
    futures::stream::iter(commits)
        .map(|(_, name)| {
            let store = store.clone();
            async move {
                let path = deltalake::Path::from(format!("_delta_log/{name}"));
                let bytes = match store.get(&path).await {
                    Ok(got) => got.bytes().await,
                    Err(e) => Err(e),
                };
                let bytes = bytes.map_err(|e| Error::ObjectStore {
                    path: format!("_delta_log/{name}"),
                    source: Box::new(e),
                })?;
                Ok((name, bytes))
            }
        })
        .buffered(16)
        .collect::<Vec<Result<_>>>()
        .await
        .into_iter()
        .collect()
}

/// The log's JSON commits after its last checkpoint replayed exactly (serde_json), for a log
/// some of whose lines spell strings with escapes arrow-json misreads: what delta-rs' replay
/// of the same lines gets wrong is an `add` spelled with them (its path, partition values,
/// stats or tags misread) and an `add` and `remove` of one file spelled differently (delta-rs
/// does not pair them, so a removed file stays, or a file appears twice).
#[derive(Debug, Default)]
pub struct ExactReplay {
    /// Every path an `add` or `remove` of the replay names, decoded, exactly and as delta-rs
    /// reads it: a file delta-rs lists under one of them is decided by the replay.
    pub touched: std::collections::HashSet<String>,
    /// The files the replay leaves live, in log order: each `add` as serde_json reads it
    /// (deltalake's `Add` decodes the path) with its path as the log spells it.
    pub live: Vec<(Add, String)>,
}

/// Replays `commits` ([`json_commits_since_checkpoint`]) exactly, keying files by path and
/// deletion vector (PROTOCOL.md "Add File and Remove File": the primary key is the path and
/// the deletion vector's unique id); `None` when no line of them spells a string with an
/// escape arrow-json misreads ([`has_misread_escape`]), so delta-rs read them exactly.
///
/// # Errors
/// [`Error::DamagedLog`] (naming `table` and the commit) for a `metaData` action spelled
/// with such an escape (the schema delta-rs reads is not the table's), and for a line that is
/// not JSON or an `add` that cannot be read.
pub fn exact_replay(
    commits: &[(String, bytes::Bytes)],
    table: &str,
) -> Result<Option<ExactReplay>> {
    if !commits
        .iter()
        .any(|(_, bytes)| has_misread_escape(&String::from_utf8_lossy(bytes)))
    {
        return Ok(None);
    }
    let decode = |raw: &str| {
        percent_encoding::percent_decode_str(raw)
            .decode_utf8_lossy()
            .into_owned()
    };
    let mut replay = ExactReplay::default();
    // Key -> (order, add, raw path).
    let mut live: HashMap<(String, String), (usize, Add, String)> = HashMap::new();
    let mut order = 0usize;
    for (name, bytes) in commits {
        let file = format!("_delta_log/{name}");
        let damaged = |message: String| Error::DamagedLog {
            table: table.to_string(),
            file: file.clone(),
            message,
        };
        for line in String::from_utf8_lossy(bytes).lines() {
            if line.trim().is_empty() {
                continue;
            }
            let action: Value = serde_json::from_str(line)
                .map_err(|e| damaged(format!("holds a line that is not JSON: {e}")))?;
            if action.get("metaData").is_some() && has_misread_escape(line) {
                return Err(damaged(
                    "spells its metaData (column names or properties) with escaped UTF-16 surrogate pairs that the JSON reader under delta-rs decodes into other characters (arrow-json char_from_surrogate_pair), so the schema it reads is not the table's; a metadata change written without such escapes (any Spark or delta-rs ALTER TABLE) makes the table readable".into(),
                ));
            }
            let (kind, fields) = match (action.get("add"), action.get("remove")) {
                (Some(add), _) => ("add", add),
                (None, Some(remove)) => ("remove", remove),
                _ => continue,
            };
            let raw_path = fields
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let path = decode(&raw_path);
            replay.touched.insert(decode(&misread(&raw_path)));
            replay.touched.insert(path.clone());
            let key = (path, deletion_vector_id(fields.get("deletionVector")));
            if kind == "add" {
                let add: Add = serde_json::from_value(fields.clone()).map_err(|e| {
                    damaged(format!("holds an add action that cannot be read: {e}"))
                })?;
                live.insert(key, (order, add, raw_path));
                order += 1;
            } else {
                live.remove(&key);
            }
        }
    }
    let mut files: Vec<(usize, Add, String)> = live.into_values().collect();
    files.sort_by_key(|(order, _, _)| *order);
    replay.live = files.into_iter().map(|(_, add, raw)| (add, raw)).collect();
    Ok(Some(replay))
}

/// A deletion vector's unique id (PROTOCOL.md "Deletion Vector Descriptor": `storageType`
/// and `pathOrInlineDv`, then `@offset` when there is one); empty without one.
fn deletion_vector_id(descriptor: Option<&Value>) -> String {
    let Some(dv) = descriptor.filter(|d| !d.is_null()) else {
        return String::new();
    };
    let text = |key: &str| dv.get(key).and_then(Value::as_str).unwrap_or_default();
    let mut id = format!("{}{}", text("storageType"), text("pathOrInlineDv"));
    if let Some(offset) = dv.get("offset").and_then(Value::as_i64) {
        id.push_str(&format!("@{offset}"));
    }
    id
}

/// `s` as a JSON string literal (quotes included) with every character above U+FFFF spelled
/// as an escaped UTF-16 surrogate pair, as Python's `json.dumps` spells it.
#[must_use]
pub fn escaped_literal(s: &str) -> String {
    let plain = serde_json::to_string(s).unwrap_or_default();
    let mut out = String::with_capacity(plain.len());
    for c in plain.chars() {
        if u32::from(c) > 0xFFFF {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Of `raw_paths` (paths of `add` actions as the log spells them), those whose latest `add`
/// in `commits` spells the path with escapes arrow-json misreads ([`escaped_literal`]): a
/// `remove` of such a file must spell its path the same way, so that every reader, the
/// misreading ones too, pairs the two. A path whose `add` is in a checkpoint is read exactly
/// by every reader.
#[must_use]
pub fn escaped_paths<'a>(
    commits: &[(String, bytes::Bytes)],
    raw_paths: impl IntoIterator<Item = &'a str>,
) -> std::collections::HashSet<&'a str> {
    let wanted: Vec<(&str, String, String)> = raw_paths
        .into_iter()
        .filter(|p| misread(p) != **p)
        .map(|p| {
            let plain = serde_json::to_string(p).unwrap_or_default();
            (p, plain, escaped_literal(p))
        })
        .collect();
    let mut spelled: HashMap<&str, bool> = HashMap::new();
    if wanted.is_empty() {
        return std::collections::HashSet::new();
    }
    for (_, bytes) in commits {
        for line in String::from_utf8_lossy(bytes).lines() {
            for (path, plain, escaped) in &wanted {
                let is_escaped = line.contains(escaped.as_str());
                if !is_escaped && !line.contains(plain.as_str()) {
                    continue;
                }
                let action: Option<Value> = serde_json::from_str(line).ok();
                let names_it = action
                    .as_ref()
                    .and_then(|a| a.get("add"))
                    .and_then(|a| a.get("path"))
                    .and_then(Value::as_str)
                    == Some(*path);
                if names_it {
                    spelled.insert(path, is_escaped);
                }
            }
        }
    }
    spelled
        .into_iter()
        .filter(|(_, escaped)| *escaped)
        .map(|(p, _)| p)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What arrow-json makes of a JSON string, by its own reader: the characters this module
    /// says it misreads, and only those, come out as [`misread`] says.
    #[test]
    fn the_misreading_is_arrow_jsons() {
        use deltalake::arrow::array::AsArray;
        use deltalake::arrow::datatypes::{DataType, Field, Schema};
        let samples: Vec<String> = [
            0x1_0000u32,
            0x1_F600,
            0x1_FFFF,
            0x2_0000,
            0x2_A6DF,
            0x3_0000,
            0xE_0001,
            0xF_FFFF,
            0x10_0000,
            0x10_FFFF,
        ]
        .iter()
        .map(|&n| format!("a{}b", char::from_u32(n).unwrap()))
        .collect();
        let schema = std::sync::Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)]));
        for s in &samples {
            let line = format!("{{\"s\": {}}}", escaped_literal(s));
            assert_eq!(has_misread_escape(&line), misread(s) != *s, "{line}");
            let mut reader = deltalake::arrow::json::ReaderBuilder::new(schema.clone())
                .build(std::io::Cursor::new(line.clone()))
                .unwrap();
            let batch = reader.next().unwrap().unwrap();
            let read = batch.column(0).as_string::<i32>().value(0).to_string();
            assert_eq!(read, misread(s), "{line}");
            if read != *s {
                assert!(may_be_misread(&read), "{read:?}");
            }
            // Spelled as UTF-8, the same string reads exactly.
            let raw = serde_json::to_string(&serde_json::json!({ "s": s })).unwrap();
            assert!(!has_misread_escape(&raw));
        }
    }

    #[test]
    fn escapes_are_found_only_where_they_are_escapes() {
        assert!(has_misread_escape(r#"{"s":"\udbff\udfff"}"#));
        assert!(has_misread_escape(r#"{"s":"x\uD840\uDC00"}"#));
        // Planes 1 and 3: read exactly.
        assert!(!has_misread_escape(r#"{"s":"\ud83d\ude00"}"#));
        assert!(!has_misread_escape(r#"{"s":"\ud880\udc00"}"#));
        // An escaped backslash followed by the letters.
        assert!(!has_misread_escape(r#"{"s":"\\udbff\\udfff"}"#));
        assert!(!has_misread_escape(r#"{"s":"\udbff"}"#));
        assert!(may_be_misread("\u{10000}") && !may_be_misread("\u{20000}"));
        assert!(!may_be_misread("abc\u{FFFF}"));
    }
}
