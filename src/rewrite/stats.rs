//! Statistics of the files we write, per PROTOCOL.md "Per-file Statistics".
//!
//! * `numRecords`: rows in the file.
//! * `nullCount` for every indexed leaf column (arrays and maps count as one leaf); a nested
//!   field is null where it or any enclosing struct is null.
//! * `minValues` / `maxValues` for indexed leaves of orderable types:
//!
//! | type | JSON form | note |
//! |---|---|---|
//! | byte, short, integer, long | number | |
//! | float, double | number | omitted when the file has a NaN in that column (NaN bounds are unusable) |
//! | decimal(p, s) | number, exact decimal text | |
//! | string | string | at most 32 characters; a cut max gets U+10FFFF appended, so it stays an upper bound |
//! | date | `"yyyy-mm-dd"` | |
//! | timestamp | `"yyyy-mm-ddThh:mm:ss.mmmZ"` | milliseconds; min rounded down, max rounded up |
//! | timestamp_ntz | `"yyyy-mm-ddThh:mm:ss.mmm"` | as timestamp, without zone |
//! | boolean, binary, array, map | none | Delta writers record only `nullCount` |
//! | variant | none | `nullCount` of the variant itself (PROTOCOL.md "Statistics for Variant Columns"; min/max need shredding) |
//!
//! Which leaves are indexed: the columns listed in `delta.dataSkippingStatsColumns`, else the
//! first `delta.dataSkippingNumIndexedCols` leaves (default 32, -1 for all) of the data
//! schema, partition columns excluded. Keys are physical names.

use std::fmt::Write as _;

use chrono::{DateTime, Datelike as _};
use deltalake::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use deltalake::arrow::buffer::NullBuffer;
use deltalake::arrow::compute::{filter, is_not_null};
use deltalake::arrow::datatypes::{
    DataType as ArrowType, Date32Type, Decimal128Type, DecimalType, Float32Type, Float64Type,
    Int8Type, Int16Type, Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType,
};

use crate::column::{leaf_array, with_nulls};
use crate::error::{Error, Result};
use crate::table::{LeafColumn, PROP_NUM_INDEXED_COLS, PROP_STATS_COLUMNS, TableView};

/// Default number of leaf columns with stats (`delta.dataSkippingNumIndexedCols`).
pub const DEFAULT_NUM_INDEXED_COLS: usize = 32;
/// Strings in min/max stats keep at most this many characters.
pub const STRING_PREFIX_CHARS: usize = 32;

/// The leaves that get stats, as physical paths.
///
/// # Errors
/// [`Error::InvalidOption`] naming the table property when it does not parse.
pub fn indexed_columns(table: &TableView) -> Result<Vec<LeafColumn>> {
    let leaves = table.data_leaf_columns();
    if let Some(list) = table.property(PROP_STATS_COLUMNS) {
        let wanted: Vec<Vec<String>> = crate::column::parse_list(list).map_err(|message| {
            Error::invalid_option(
                crate::Setting::TableProperty(PROP_STATS_COLUMNS.into()),
                message,
            )
        })?;
        return Ok(leaves
            .into_iter()
            .filter(|leaf| {
                wanted.iter().any(|w| {
                    leaf.logical.len() >= w.len()
                        && leaf.logical[..w.len()]
                            .iter()
                            .zip(w)
                            .all(|(a, b)| a.eq_ignore_ascii_case(b))
                })
            })
            .collect());
    }
    let n = match table.property(PROP_NUM_INDEXED_COLS) {
        None => DEFAULT_NUM_INDEXED_COLS,
        Some(text) => {
            let n: i64 = text.trim().parse().map_err(|_| {
                Error::invalid_option(
                    crate::Setting::TableProperty(PROP_NUM_INDEXED_COLS.into()),
                    format!("'{text}' is not an integer"),
                )
            })?;
            if n < 0 {
                usize::MAX
            } else {
                usize::try_from(n).unwrap_or(usize::MAX)
            }
        }
    };
    Ok(leaves.into_iter().take(n).collect())
}

/// A JSON value of the stats tree; numbers keep their exact text.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Raw(String),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn insert(&mut self, path: &[String], value: Json) {
        let Json::Object(entries) = self else { return };
        let (first, rest) = path.split_first().expect("non-empty path");
        if rest.is_empty() {
            entries.push((first.clone(), value));
            return;
        }
        if let Some((_, child)) = entries.iter_mut().find(|(k, _)| k == first) {
            child.insert(rest, value);
        } else {
            let mut child = Json::Object(Vec::new());
            child.insert(rest, value);
            entries.push((first.clone(), child));
        }
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Raw(text) => out.push_str(text),
            Json::Object(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&json_string(key));
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// Accumulates the per-file stats of one output file over its batches (PROTOCOL.md
/// "Per-file Statistics"; see the module docs for the rules).
pub struct StatsCollector {
    leaves: Vec<LeafColumn>,
    with_tight_bounds: bool,
    num_records: u64,
    state: Vec<LeafState>,
}

#[derive(Default, Clone)]
struct LeafState {
    nulls: u64,
    min: Option<Bound>,
    max: Option<Bound>,
    has_nan: bool,
    supported: bool,
}

#[derive(Clone, PartialEq, PartialOrd)]
enum Bound {
    Int(i128),
    Float(f64),
    Text(String),
}

impl StatsCollector {
    /// Collects stats for `leaves`; `with_tight_bounds` adds `"tightBounds": true` (tables with
    /// deletion vectors).
    #[must_use]
    pub fn new(leaves: Vec<LeafColumn>, with_tight_bounds: bool) -> Self {
        let state = vec![LeafState::default(); leaves.len()];
        Self {
            leaves,
            with_tight_bounds,
            num_records: 0,
            state,
        }
    }

    /// Adds a batch (in the physical schema of written files).
    ///
    /// # Errors
    /// [`Error::Arrow`] when a leaf's values cannot be filtered.
    pub fn update(&mut self, batch: &RecordBatch) -> Result<()> {
        self.num_records += batch.num_rows() as u64;
        for (leaf, state) in self.leaves.iter().zip(self.state.iter_mut()) {
            let Some((array, nulls)) = leaf_array(batch, &leaf.physical) else {
                continue;
            };
            let null_count = nulls.as_ref().map_or(0, NullBuffer::null_count) as u64;
            state.nulls += null_count;
            if leaf_kind(&leaf.data_type) == Kind::None {
                // nullCount only (binary, arrays, maps, variants): no values to filter.
                continue;
            }
            let values: ArrayRef = if nulls.as_ref().map(NullBuffer::null_count)
                == array.nulls().map(NullBuffer::null_count)
            {
                array
            } else {
                let mask = is_not_null(&with_nulls(&array, nulls.clone())?)
                    .map_err(|e| Error::arrow("collecting stats", e))?;
                filter(&array, &mask).map_err(|e| Error::arrow("collecting stats", e))?
            };
            update_bounds(state, &values);
        }
        Ok(())
    }

    /// The stats JSON text for the file.
    #[must_use]
    pub fn finish(&self) -> String {
        let mut min = Json::Object(Vec::new());
        let mut max = Json::Object(Vec::new());
        let mut nulls = Json::Object(Vec::new());
        for (leaf, state) in self.leaves.iter().zip(&self.state) {
            nulls.insert(&leaf.physical, Json::Raw(state.nulls.to_string()));
            if !state.supported || state.has_nan {
                continue;
            }
            let kind = leaf_kind(&leaf.data_type);
            // Each bound on its own: one that cannot be written (a timestamp rounded up past
            // year 9999) leaves the other standing.
            if let Some(lo) = state.min.as_ref().and_then(|lo| render(lo, kind, false)) {
                min.insert(&leaf.physical, Json::Raw(lo));
            }
            if let Some(hi) = state.max.as_ref().and_then(|hi| render(hi, kind, true)) {
                max.insert(&leaf.physical, Json::Raw(hi));
            }
        }
        let mut out = String::new();
        let _ = write!(out, "{{\"numRecords\":{}", self.num_records);
        out.push_str(",\"minValues\":");
        min.write(&mut out);
        out.push_str(",\"maxValues\":");
        max.write(&mut out);
        out.push_str(",\"nullCount\":");
        nulls.write(&mut out);
        if self.with_tight_bounds {
            out.push_str(",\"tightBounds\":true");
        }
        out.push('}');
        out
    }

    /// Rows seen so far.
    #[must_use]
    pub fn num_records(&self) -> u64 {
        self.num_records
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Float,
    Decimal(u8, i8),
    String,
    Date,
    Timestamp { utc: bool },
    None,
}

fn leaf_kind(data_type: &deltalake::kernel::DataType) -> Kind {
    use deltalake::kernel::{DataType, PrimitiveType as P};
    match data_type {
        DataType::Primitive(p) => match p {
            P::Byte | P::Short | P::Integer | P::Long => Kind::Int,
            P::Float | P::Double => Kind::Float,
            P::Decimal(d) => Kind::Decimal(d.precision(), i8::try_from(d.scale()).unwrap_or(0)),
            P::String => Kind::String,
            P::Date => Kind::Date,
            P::Timestamp => Kind::Timestamp { utc: true },
            P::TimestampNtz => Kind::Timestamp { utc: false },
            _ => Kind::None,
        },
        _ => Kind::None,
    }
}

fn merge(state: &mut LeafState, lo: Option<Bound>, hi: Option<Bound>) {
    state.supported = true;
    if let Some(lo) = lo
        && state.min.as_ref().is_none_or(|m| lo < *m)
    {
        state.min = Some(lo);
    }
    if let Some(hi) = hi
        && state.max.as_ref().is_none_or(|m| hi > *m)
    {
        state.max = Some(hi);
    }
}

fn update_bounds(state: &mut LeafState, values: &ArrayRef) {
    use deltalake::arrow::compute::{max, max_string, min, min_string};
    macro_rules! ints {
        ($t:ty) => {{
            let a = values.as_primitive::<$t>();
            merge(
                state,
                min(a).map(|v| Bound::Int(i128::from(v))),
                max(a).map(|v| Bound::Int(i128::from(v))),
            );
        }};
    }
    match values.data_type() {
        ArrowType::Int8 => ints!(Int8Type),
        ArrowType::Int16 => ints!(Int16Type),
        ArrowType::Int32 => ints!(Int32Type),
        ArrowType::Int64 => ints!(Int64Type),
        ArrowType::Date32 => ints!(Date32Type),
        ArrowType::Timestamp(TimeUnit::Microsecond, _) => ints!(TimestampMicrosecondType),
        ArrowType::Decimal128(_, _) => {
            let a = values.as_primitive::<Decimal128Type>();
            merge(state, min(a).map(Bound::Int), max(a).map(Bound::Int));
        }
        ArrowType::Float32 => {
            let a = values.as_primitive::<Float32Type>();
            state.has_nan |= a.iter().flatten().any(f32::is_nan);
            merge(
                state,
                min(a).map(|v| Bound::Float(f64::from(v))),
                max(a).map(|v| Bound::Float(f64::from(v))),
            );
        }
        ArrowType::Float64 => {
            let a = values.as_primitive::<Float64Type>();
            state.has_nan |= a.iter().flatten().any(f64::is_nan);
            merge(state, min(a).map(Bound::Float), max(a).map(Bound::Float));
        }
        ArrowType::Utf8 => {
            let a = values.as_string::<i32>();
            merge(
                state,
                min_string(a).map(|s| Bound::Text(s.to_string())),
                max_string(a).map(|s| Bound::Text(s.to_string())),
            );
        }
        _ => {}
    }
}

/// Renders a bound as JSON text; `upper` selects rounding up (timestamps) and the
/// upper-bound form of truncated strings.
fn render(bound: &Bound, kind: Kind, upper: bool) -> Option<String> {
    Some(match (bound, kind) {
        (Bound::Int(v), Kind::Int) => v.to_string(),
        (Bound::Int(v), Kind::Decimal(precision, scale)) => {
            Decimal128Type::format_decimal(*v, precision, scale)
        }
        (Bound::Int(v), Kind::Date) => {
            let days = i64::try_from(*v).ok()?;
            let date = DateTime::from_timestamp(days * 86_400, 0)?.date_naive();
            // Outside years 1 to 9999 the ISO form needs a sign that readers do not parse:
            // no bound is written (a missing bound skips nothing, a wrong one loses rows).
            if !(1..=9999).contains(&date.year()) {
                return None;
            }
            json_string(&date.format("%Y-%m-%d").to_string())
        }
        (Bound::Int(micros), Kind::Timestamp { utc }) => {
            let micros = i64::try_from(*micros).ok()?;
            let millis = if upper {
                micros.div_euclid(1000) + i64::from(micros.rem_euclid(1000) != 0)
            } else {
                micros.div_euclid(1000)
            };
            let ts = DateTime::from_timestamp_millis(millis)?.naive_utc();
            if !(1..=9999).contains(&ts.year()) {
                return None;
            }
            let text = ts.format("%Y-%m-%dT%H:%M:%S%.3f").to_string();
            json_string(&if utc { format!("{text}Z") } else { text })
        }
        (Bound::Float(v), Kind::Float) => {
            if !v.is_finite() {
                return None;
            }
            serde_json::to_string(v).ok()?
        }
        (Bound::Text(s), Kind::String) => json_string(&truncate(s, upper)),
        _ => return None,
    })
}

/// Truncates `s` to [`STRING_PREFIX_CHARS`] characters. For an upper bound the prefix is
/// extended over any run of U+10FFFF and then followed by U+10FFFF, which sorts (byte-wise
/// UTF-8) above every string that starts with the prefix.
fn truncate(s: &str, upper: bool) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= STRING_PREFIX_CHARS {
        return s.to_string();
    }
    if !upper {
        return chars[..STRING_PREFIX_CHARS].iter().collect();
    }
    let mut cut = STRING_PREFIX_CHARS;
    while cut < chars.len() && chars[cut] == char::MAX {
        cut += 1;
    }
    if cut == chars.len() {
        return s.to_string();
    }
    let mut out: String = chars[..cut].iter().collect();
    out.push(char::MAX);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_strings_stay_bounds() {
        let long = "a".repeat(40);
        assert_eq!(truncate(&long, false), "a".repeat(32));
        let upper = truncate(&long, true);
        assert!(upper.as_bytes() > long.as_bytes());
        assert!(upper.chars().count() == 33);
        let tricky = format!("{}{}x", "b".repeat(32), char::MAX);
        assert!(truncate(&tricky, true).as_bytes() >= tricky.as_bytes());
        assert_eq!(truncate("short", true), "short");
    }

    #[test]
    fn timestamps_round_outward_to_milliseconds() {
        let micros = Bound::Int(1_500_999); // 1.500999 s
        assert_eq!(
            render(&micros, Kind::Timestamp { utc: true }, false).unwrap(),
            "\"1970-01-01T00:00:01.500Z\""
        );
        assert_eq!(
            render(&micros, Kind::Timestamp { utc: true }, true).unwrap(),
            "\"1970-01-01T00:00:01.501Z\""
        );
        let negative = Bound::Int(-1); // 1 µs before the epoch
        assert_eq!(
            render(&negative, Kind::Timestamp { utc: false }, false).unwrap(),
            "\"1969-12-31T23:59:59.999\""
        );
        assert_eq!(
            render(&Bound::Int(1_000), Kind::Timestamp { utc: false }, true).unwrap(),
            "\"1970-01-01T00:00:00.001\""
        );
    }

    #[test]
    fn decimals_and_dates_render_exactly() {
        assert_eq!(
            render(&Bound::Int(-12_345), Kind::Decimal(10, 2), false).unwrap(),
            "-123.45"
        );
        assert_eq!(
            render(&Bound::Int(19_000), Kind::Date, false).unwrap(),
            "\"2022-01-08\""
        );
        assert_eq!(
            render(&Bound::Float(0.5), Kind::Float, false).unwrap(),
            "0.5"
        );
        assert_eq!(
            render(&Bound::Float(f64::INFINITY), Kind::Float, true),
            None
        );
    }
}
