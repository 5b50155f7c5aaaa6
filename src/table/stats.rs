//! Per-file statistics from the `stats` field of an `add` action (or the checkpoint's
//! `stats_parsed`), parsed once.
//!
//! Source: PROTOCOL.md, "Per-file Statistics". `numRecords`, `minValues`, `maxValues`,
//! `nullCount` and `tightBounds` keep the shape they have in the log: nested structs stay
//! nested JSON objects, keyed by *physical* column names under column mapping.
//!
//! **Missing means unknown.** A file without stats, or a column absent from `minValues`, has
//! unknown bounds, never an empty range or zero nulls.

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The statistics of one data file, as recorded in the Delta log.
///
/// `numRecords` and `tightBounds` are read when the stats are; the per-column maps
/// (`minValues`, `maxValues`, `nullCount`) are parsed from the stats' JSON text on first use
/// and kept, so that loading a log of a million files does not build a million maps that
/// nothing reads ([`crate::pruning::column_bounds`] reads bounds from delta-rs' parsed stats
/// columns instead).
#[derive(Debug, Clone, Default)]
pub struct FileStats {
    /// `numRecords`: physical rows in the file (before any deletion vector), or `None` when
    /// the writer did not record it.
    pub num_records: Option<u64>,
    /// `tightBounds`: `Some(false)` when a deletion vector made the bounds wide (they still
    /// bound the remaining rows); `None` when not recorded.
    pub tight_bounds: Option<bool>,
    /// The per-column maps, parsed from `text` on first use (set at once by
    /// [`FileStats::with_values`]).
    values: OnceLock<StatsValues>,
    /// The stats' JSON text, for `values`.
    text: Option<Arc<str>>,
    /// Where delta-rs' log replay parsed these same stats: the table's parsed columns and
    /// this file's row in them. Set only for stats read from the log, so that replacing a
    /// file's stats (an estimated or rewritten file) drops the link with them.
    pub(crate) parsed: Option<(Arc<super::ParsedStats>, usize)>,
}

/// The per-column maps of a [`FileStats`].
#[derive(Debug, Clone, Default, PartialEq)]
struct StatsValues {
    min_values: Map<String, Value>,
    max_values: Map<String, Value>,
    null_count: Map<String, Value>,
}

impl PartialEq for FileStats {
    fn eq(&self, other: &Self) -> bool {
        self.num_records == other.num_records
            && self.tight_bounds == other.tight_bounds
            && self.values() == other.values()
    }
}

/// The fields of a stats object read at once: the maps are skipped (and validated as JSON).
#[derive(serde::Deserialize)]
struct Head {
    #[serde(rename = "numRecords", default)]
    num_records: Option<Value>,
    #[serde(rename = "tightBounds", default)]
    tight_bounds: Option<Value>,
}

impl FileStats {
    /// Parses the JSON text of an `add.stats` field: `numRecords` and `tightBounds` now, the
    /// per-column maps on first use.
    ///
    /// # Errors
    /// [`Error::Json`] when the text is not JSON; [`Error::DataFile`] when it is not a JSON
    /// object; `path` names the file in both.
    pub fn from_json(path: &str, text: &str) -> Result<Self> {
        // A struct also reads from a JSON array: only an object is stats.
        if !text.trim_start().starts_with('{') && serde_json::from_str::<Value>(text).is_ok() {
            return Err(Error::data_file(
                path,
                "has stats that are not a JSON object",
            ));
        }
        let head: Head = serde_json::from_str(text).map_err(|source| {
            if source.classify() == serde_json::error::Category::Data {
                Error::data_file(path, "has stats that are not a JSON object")
            } else {
                Error::Json {
                    context: format!("parsing the stats of data file '{path}'"),
                    source,
                }
            }
        })?;
        Ok(Self {
            num_records: head.num_records.as_ref().and_then(Value::as_u64),
            tight_bounds: head.tight_bounds.as_ref().and_then(Value::as_bool),
            values: OnceLock::new(),
            text: Some(Arc::from(text)),
            parsed: None,
        })
    }

    /// Stats of these values (a file written or estimated here).
    #[must_use]
    pub fn with_values(
        num_records: Option<u64>,
        min_values: Map<String, Value>,
        max_values: Map<String, Value>,
        null_count: Map<String, Value>,
        tight_bounds: Option<bool>,
    ) -> Self {
        let values = OnceLock::new();
        let _ = values.set(StatsValues {
            min_values,
            max_values,
            null_count,
        });
        Self {
            num_records,
            tight_bounds,
            values,
            text: None,
            parsed: None,
        }
    }

    /// Whether the stats' JSON text spells a character with an escape that delta-rs' parsed
    /// stats columns misread ([`super::escapes::has_misread_escape`]): such stats are read from
    /// the text.
    pub(crate) fn text_has_misread_escape(&self) -> bool {
        self.text
            .as_deref()
            .is_some_and(super::escapes::has_misread_escape)
    }

    /// Whether the stats' JSON text holds a character above U+FFFF (a 4-byte UTF-8 sequence),
    /// which the log may have spelled as an escape delta-rs misreads ([`super::escapes`]).
    pub(crate) fn text_has_wide_characters(&self) -> bool {
        self.text
            .as_deref()
            .is_some_and(|t| t.bytes().any(|b| b >= 0xF0))
    }

    /// This file's row in `parsed`, when these stats are that row (read from the same log).
    pub(crate) fn parsed_row(&self, parsed: &Arc<super::ParsedStats>) -> Option<usize> {
        match &self.parsed {
            Some((stats, row)) if Arc::ptr_eq(stats, parsed) => Some(*row),
            _ => None,
        }
    }

    fn values(&self) -> &StatsValues {
        self.values.get_or_init(|| {
            let Some(text) = &self.text else {
                return StatsValues::default();
            };
            // The text was read as a JSON object when these stats were made.
            let Ok(Value::Object(mut object)) = serde_json::from_str::<Value>(text) else {
                return StatsValues::default();
            };
            let mut take_map = |key: &str| match object.remove(key) {
                Some(Value::Object(map)) => map,
                _ => Map::new(),
            };
            StatsValues {
                min_values: take_map("minValues"),
                max_values: take_map("maxValues"),
                null_count: take_map("nullCount"),
            }
        })
    }

    /// `minValues`: per column (nested objects for structs), a lower bound of the non-null
    /// values. Empty when absent.
    #[must_use]
    pub fn min_values(&self) -> &Map<String, Value> {
        &self.values().min_values
    }

    /// `maxValues`: per column, an upper bound of the non-null values (a truncated string is
    /// still an upper bound). Empty when absent.
    #[must_use]
    pub fn max_values(&self) -> &Map<String, Value> {
        &self.values().max_values
    }

    /// `nullCount`: per column, the number of null values. Empty when absent.
    #[must_use]
    pub fn null_count(&self) -> &Map<String, Value> {
        &self.values().null_count
    }

    /// The `minValues` entry at a (physical) column path such as `["a", "b"]`, if recorded.
    #[must_use]
    pub fn min(&self, path: &[String]) -> Option<&Value> {
        lookup(self.min_values(), path)
    }

    /// The `maxValues` entry at a (physical) column path, if recorded.
    #[must_use]
    pub fn max(&self, path: &[String]) -> Option<&Value> {
        lookup(self.max_values(), path)
    }

    /// The `nullCount` entry at a (physical) column path, if recorded.
    #[must_use]
    pub fn nulls(&self, path: &[String]) -> Option<u64> {
        lookup(self.null_count(), path).and_then(Value::as_u64)
    }
}

/// Walks nested JSON objects along `path`; `None` when any step is missing or JSON null.
fn lookup<'a>(map: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let value = map.get(first)?;
    if rest.is_empty() {
        return (!value.is_null()).then_some(value);
    }
    match value {
        Value::Object(inner) => lookup(inner, rest),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_stats_and_keeps_missing_unknown() {
        let stats = FileStats::from_json(
            "f.parquet",
            r#"{"numRecords":3,"minValues":{"a":1,"s":{"x":"p"}},"maxValues":{"a":9},
                "nullCount":{"a":0,"s":{"x":2}},"tightBounds":false}"#,
        )
        .unwrap();
        let path = |p: &[&str]| p.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(stats.num_records, Some(3));
        assert_eq!(stats.min(&path(&["a"])), Some(&Value::from(1)));
        assert_eq!(stats.min(&path(&["s", "x"])), Some(&Value::from("p")));
        assert_eq!(stats.max(&path(&["s", "x"])), None);
        assert_eq!(stats.nulls(&path(&["s", "x"])), Some(2));
        assert_eq!(stats.nulls(&path(&["b"])), None);
        assert_eq!(stats.tight_bounds, Some(false));

        let bare = FileStats::from_json("f", r#"{"numRecords":5}"#).unwrap();
        assert_eq!(bare.num_records, Some(5));
        assert!(bare.min_values().is_empty());
        assert!(FileStats::from_json("f", "5").is_err());
        assert!(FileStats::from_json("f", "[1]").is_err());
        assert!(FileStats::from_json("f", "{").is_err());
    }
}
