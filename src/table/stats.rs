//! Per-file statistics from the `stats` field of an `add` action (or the checkpoint's
//! `stats_parsed`), parsed once.
//!
//! Source: PROTOCOL.md, "Per-file Statistics". `numRecords`, `minValues`, `maxValues`,
//! `nullCount` and `tightBounds` keep the shape they have in the log: nested structs stay
//! nested JSON objects, keyed by *physical* column names under column mapping.
//!
//! **Missing means unknown.** A file without stats, or a column absent from `minValues`, has
//! unknown bounds, never an empty range or zero nulls.

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The statistics of one data file, as recorded in the Delta log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileStats {
    /// `numRecords`: physical rows in the file (before any deletion vector), or `None` when
    /// the writer did not record it.
    pub num_records: Option<u64>,
    /// `minValues`: per column (nested objects for structs), a lower bound of the non-null
    /// values. Empty when absent.
    pub min_values: Map<String, Value>,
    /// `maxValues`: per column, an upper bound of the non-null values (a truncated string is
    /// still an upper bound). Empty when absent.
    pub max_values: Map<String, Value>,
    /// `nullCount`: per column, the number of null values. Empty when absent.
    pub null_count: Map<String, Value>,
    /// `tightBounds`: `Some(false)` when a deletion vector made the bounds wide (they still
    /// bound the remaining rows); `None` when not recorded.
    pub tight_bounds: Option<bool>,
}

impl FileStats {
    /// Parses the JSON text of an `add.stats` field.
    ///
    /// # Errors
    /// [`Error::Json`] when the text is not a JSON object; `path` names the file in the
    /// message context.
    pub fn from_json(path: &str, text: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(text).map_err(|source| Error::Json {
            context: format!("parsing the stats of data file '{path}'"),
            source,
        })?;
        let Value::Object(mut object) = value else {
            return Err(Error::data_file(
                path,
                "has stats that are not a JSON object",
            ));
        };
        let mut take_map = |key: &str| match object.remove(key) {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        };
        let min_values = take_map("minValues");
        let max_values = take_map("maxValues");
        let null_count = take_map("nullCount");
        Ok(Self {
            num_records: object.get("numRecords").and_then(Value::as_u64),
            min_values,
            max_values,
            null_count,
            tight_bounds: object.get("tightBounds").and_then(Value::as_bool),
        })
    }

    /// The `minValues` entry at a (physical) column path such as `["a", "b"]`, if recorded.
    #[must_use]
    pub fn min(&self, path: &[String]) -> Option<&Value> {
        lookup(&self.min_values, path)
    }

    /// The `maxValues` entry at a (physical) column path, if recorded.
    #[must_use]
    pub fn max(&self, path: &[String]) -> Option<&Value> {
        lookup(&self.max_values, path)
    }

    /// The `nullCount` entry at a (physical) column path, if recorded.
    #[must_use]
    pub fn nulls(&self, path: &[String]) -> Option<u64> {
        lookup(&self.null_count, path).and_then(Value::as_u64)
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
        assert!(bare.min_values.is_empty());
        assert!(FileStats::from_json("f", "[1]").is_err());
        assert!(FileStats::from_json("f", "{").is_err());
    }
}
