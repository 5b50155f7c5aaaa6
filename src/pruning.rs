//! Per-file bounds of one column from the Delta log, and min/max pruning over them: the
//! data-skipping decision a Delta reader makes before opening a file.
//!
//! Source: PROTOCOL.md, "Per-file Statistics" and "Partition Value Serialization".
//! The semantics, chosen so that an estimate never skips a file holding a matching row:
//! * Missing stats (no `stats`, no `minValues`/`maxValues` entry, unparsable values) cannot
//!   skip: the file may hold anything.
//! * `nullCount` decides `IS NULL` / `IS NOT NULL`, and only its two values that keep their
//!   meaning under wide bounds (`tightBounds: false`) are used: 0 (no valid row is null) and
//!   `numRecords` (every valid row is null; then comparisons are never true).
//! * Partition values are exact bounds (min = max = the value), a null partition value makes
//!   every row null.
//! * A string max of `delta.dataSkippingStringPrefixLength` (default 32) characters or more
//!   may be a cut-off prefix (the footnote of the stats table), so every string that starts
//!   with it is treated as possible too.
//! * Timestamp bounds are cut down to milliseconds, so a max covers the 999 µs after it.
//! * Writers that take min/max from Parquet statistics leave NaN out of them, while SQL
//!   sorts NaN above every number: a float column is treated as possibly holding NaN in
//!   every file, so `x > 5` never skips on it, but `x = 5` and `x BETWEEN 1 AND 2` do.

use deltalake::arrow::array::{Array, ArrayRef, AsArray, StructArray};
use deltalake::arrow::datatypes::Int64Type;
use deltalake::kernel::{DataType, PrimitiveType};
use rayon::prelude::*;
use serde_json::Value;

use crate::bound::{BoundNode, BoundPredicate, ColumnRef};
use crate::error::Result;
use crate::predicate::{CompareOp, Predicate};
use crate::table::{DataFile, TableView};
use crate::value::{Typed, parse_typed};

/// Table property: how many characters of a string Delta writers keep in min/max stats.
pub const PROP_STRING_PREFIX_LENGTH: &str = "delta.dataSkippingStringPrefixLength";
/// Default of [`PROP_STRING_PREFIX_LENGTH`] (Delta Spark's).
pub const DEFAULT_STRING_PREFIX_LENGTH: usize = 32;

/// What the log says about one column in one file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FileBounds {
    /// Lower bound of the non-null values, `None` when unknown.
    pub min: Option<Typed>,
    /// Upper bound of the non-null values as recorded, `None` when unknown.
    pub max: Option<Typed>,
    /// The upper bound pruning uses: `max` with timestamps moved up 999 µs.
    pub upper: Option<Typed>,
    /// `max` may be a cut-off string prefix: strings starting with it are possible too.
    pub max_is_prefix: bool,
    /// No valid row is null (`nullCount` 0, or a non-null partition value).
    pub no_nulls: bool,
    /// Every valid row is null (`nullCount` = `numRecords`, or a null partition value).
    pub all_null: bool,
}

impl FileBounds {
    /// Reads `column`'s bounds in `file`. `prefix_length` is the table's string prefix
    /// length ([`PROP_STRING_PREFIX_LENGTH`]).
    #[must_use]
    pub fn of(column: &ColumnRef, file: &DataFile, prefix_length: usize) -> Self {
        if let Some(index) = column.partition_index {
            return match file.partition_values.get(index).cloned().flatten() {
                Some(text) => {
                    let value = parse_typed(&column.data_type, &text);
                    Self {
                        upper: value.clone(),
                        min: value.clone(),
                        max: value,
                        max_is_prefix: false,
                        no_nulls: true,
                        all_null: false,
                    }
                }
                None => Self {
                    all_null: true,
                    ..Self::default()
                },
            };
        }
        let Some(stats) = &file.stats else {
            return Self::default();
        };
        let nulls = stats.nulls(&column.physical);
        let typed = |v: Option<&Value>| v.and_then(|v| stats_value(&column.data_type, v));
        Self::from_stats(
            typed(stats.min(&column.physical)),
            typed(stats.max(&column.physical)),
            nulls,
            stats.num_records,
            prefix_length,
        )
    }

    /// The bounds of a file whose stats give `min`, `max` (typed; `None` when absent or
    /// unreadable) and `nulls` of its `num_records` rows: no range when the column is all null
    /// or either bound is missing; a timestamp's upper bound widened by 999 us (stats are
    /// truncated to milliseconds); a string max of `prefix_length` characters or more is a
    /// prefix.
    fn from_stats(
        min: Option<Typed>,
        max: Option<Typed>,
        nulls: Option<u64>,
        num_records: Option<u64>,
        prefix_length: usize,
    ) -> Self {
        let all_null = matches!((nulls, num_records), (Some(n), Some(r)) if n == r);
        let (min, max) = if all_null || min.is_none() || max.is_none() {
            (None, None)
        } else {
            (min, max)
        };
        let upper = match &max {
            Some(Typed::Timestamp(ts)) => {
                Some(Typed::Timestamp(*ts + chrono::Duration::microseconds(999)))
            }
            other => other.clone(),
        };
        let max_is_prefix =
            matches!(&max, Some(Typed::Text(s)) if s.chars().count() >= prefix_length);
        Self {
            min,
            max,
            upper,
            max_is_prefix,
            no_nulls: nulls == Some(0),
            all_null,
        }
    }

    /// Whether the file has usable bounds (a min and a max).
    #[must_use]
    pub fn has_range(&self) -> bool {
        self.min.is_some() && self.max.is_some()
    }
}

/// `column`'s bounds in every file of `table`, parallel to [`TableView::files`]: for files of
/// the log whose stats delta-rs parsed in its log replay, read from those Arrow columns (no
/// JSON parsed again); for the others, and for partition and float columns, from each
/// file's stats ([`FileBounds::of`]). Both give the same bounds (tested on every table of
/// `testdata/`); where delta-rs could not parse a value, the bound is unknown, which skips
/// nothing.
#[must_use]
pub fn column_bounds(
    table: &TableView,
    column: &ColumnRef,
    prefix_length: usize,
) -> Vec<FileBounds> {
    let parsed = table
        .parsed_stats
        .as_ref()
        .filter(|_| column.partition_index.is_none())
        .and_then(|stats| Some((stats, ParsedColumn::new(stats, column)?)));
    table
        .files
        .par_iter()
        .map(|file| {
            let row = parsed.as_ref().and_then(|(stats, column)| {
                Some((column, file.stats.as_ref()?.parsed_row(stats)?))
            });
            match row {
                Some((parsed, row)) => parsed.bounds(file, row, prefix_length),
                None => FileBounds::of(column, file, prefix_length),
            }
        })
        .collect()
}

/// How many files of `table` record min and max for the leaf column at `physical` (of
/// `data_type`), and how many its null count: from delta-rs' parsed stats where it has the
/// column (files of the log), else from each file's stats JSON.
#[must_use]
pub fn stats_coverage(
    table: &TableView,
    physical: &[String],
    data_type: &DataType,
) -> (usize, usize) {
    let column = ColumnRef {
        name: crate::column::format_path(physical),
        logical: physical.to_vec(),
        physical: physical.to_vec(),
        data_type: data_type.clone(),
        partition_index: None,
    };
    let parsed = table
        .parsed_stats
        .as_ref()
        .and_then(|stats| Some((stats, ParsedColumn::new(stats, &column)?)));
    table
        .files
        .par_iter()
        .map(|file| {
            let Some(stats) = &file.stats else {
                return (0, 0);
            };
            let row = parsed
                .as_ref()
                .and_then(|(all, p)| Some((p, stats.parsed_row(all)?)));
            match row {
                Some((p, row)) => (
                    usize::from(p.min.is_valid(row) && p.max.is_valid(row)),
                    usize::from(p.nulls.is_valid(row)),
                ),
                None => (
                    usize::from(stats.min(physical).is_some() && stats.max(physical).is_some()),
                    usize::from(stats.nulls(physical).is_some()),
                ),
            }
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// One column's arrays in a table's [`crate::table::ParsedStats`].
struct ParsedColumn<'a> {
    data_type: &'a DataType,
    min: &'a ArrayRef,
    max: &'a ArrayRef,
    nulls: &'a ArrayRef,
}

impl<'a> ParsedColumn<'a> {
    /// The arrays of `column`, when all three are there and of a type read exactly here.
    fn new(stats: &'a crate::table::ParsedStats, column: &'a ColumnRef) -> Option<Self> {
        fn leaf<'s>(root: Option<&'s StructArray>, path: &[String]) -> Option<&'s ArrayRef> {
            let (first, rest) = path.split_first()?;
            let array = root?.column_by_name(first)?;
            if rest.is_empty() {
                return Some(array);
            }
            leaf(array.as_struct_opt(), rest)
        }
        let exact = matches!(
            column.data_type,
            DataType::Primitive(
                PrimitiveType::Byte
                    | PrimitiveType::Short
                    | PrimitiveType::Integer
                    | PrimitiveType::Long
                    | PrimitiveType::Double
                    | PrimitiveType::Decimal(_)
                    | PrimitiveType::String
                    | PrimitiveType::Boolean
                    | PrimitiveType::Date
                    | PrimitiveType::Timestamp
                    | PrimitiveType::TimestampNtz
            )
        );
        exact.then_some(())?;
        Some(Self {
            data_type: &column.data_type,
            min: leaf(stats.min.as_ref(), &column.physical)?,
            max: leaf(stats.max.as_ref(), &column.physical)?,
            nulls: leaf(stats.null_count.as_ref(), &column.physical)?,
        })
    }

    /// The bounds of `file` (row `row` of the arrays), by the rules of [`FileBounds::of`].
    fn bounds(&self, file: &DataFile, row: usize, prefix_length: usize) -> FileBounds {
        let Some(stats) = &file.stats else {
            return FileBounds::default();
        };
        let nulls = (row < self.nulls.len() && self.nulls.is_valid(row))
            .then(|| {
                self.nulls
                    .as_primitive_opt::<Int64Type>()
                    .and_then(|a| u64::try_from(a.value(row)).ok())
            })
            .flatten();
        FileBounds::from_stats(
            typed_at(self.min, row, self.data_type),
            typed_at(self.max, row, self.data_type),
            nulls,
            stats.num_records,
            prefix_length,
        )
    }
}

/// Row `row` of a parsed stats array as the value [`parse_typed`] reads from the log's
/// JSON for a column of `data_type`; `None` for a null or a type read otherwise.
pub(crate) fn typed_at(array: &ArrayRef, row: usize, data_type: &DataType) -> Option<Typed> {
    use deltalake::arrow::datatypes::{
        DataType as ArrowType, Date32Type, Decimal128Type, DecimalType as _, Float32Type,
        Float64Type, Int8Type, Int16Type, Int32Type, TimeUnit, TimestampMicrosecondType,
    };
    if row >= array.len() || array.is_null(row) {
        return None;
    }
    Some(match array.data_type() {
        ArrowType::Int8 => Typed::Int(i128::from(array.as_primitive::<Int8Type>().value(row))),
        ArrowType::Int16 => Typed::Int(i128::from(array.as_primitive::<Int16Type>().value(row))),
        ArrowType::Int32 => Typed::Int(i128::from(array.as_primitive::<Int32Type>().value(row))),
        ArrowType::Int64 => Typed::Int(i128::from(array.as_primitive::<Int64Type>().value(row))),
        ArrowType::Float32 => {
            Typed::Float(f64::from(array.as_primitive::<Float32Type>().value(row)))
        }
        ArrowType::Float64 => Typed::Float(array.as_primitive::<Float64Type>().value(row)),
        ArrowType::Decimal128(precision, scale) => {
            // As the log's number text reads: the decimal's digits, parsed as a double.
            let text = Decimal128Type::format_decimal(
                array.as_primitive::<Decimal128Type>().value(row),
                *precision,
                *scale,
            );
            return parse_typed(data_type, &text);
        }
        ArrowType::Utf8 => Typed::Text(array.as_string::<i32>().value(row).to_string()),
        ArrowType::LargeUtf8 => Typed::Text(array.as_string::<i64>().value(row).to_string()),
        ArrowType::Utf8View => Typed::Text(array.as_string_view().value(row).to_string()),
        ArrowType::Boolean => Typed::Bool(array.as_boolean().value(row)),
        ArrowType::Date32 => {
            let days = array.as_primitive::<Date32Type>().value(row);
            Typed::Date(
                chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?
                    .checked_add_signed(chrono::Duration::days(i64::from(days)))?,
            )
        }
        ArrowType::Timestamp(TimeUnit::Microsecond, _) => {
            let micros = array.as_primitive::<TimestampMicrosecondType>().value(row);
            Typed::Timestamp(chrono::DateTime::from_timestamp_micros(micros)?.naive_utc())
        }
        _ => return None,
    })
}

/// The table's string prefix length ([`PROP_STRING_PREFIX_LENGTH`], default 32).
#[must_use]
pub fn string_prefix_length(table: &TableView) -> usize {
    table
        .property(PROP_STRING_PREFIX_LENGTH)
        .and_then(|v| v.trim().parse().ok())
        .filter(|n: &usize| *n > 0)
        .unwrap_or(DEFAULT_STRING_PREFIX_LENGTH)
}

/// Parses one `minValues`/`maxValues` entry as `data_type`; `None` when it does not parse.
pub(crate) fn stats_value(data_type: &DataType, value: &Value) -> Option<Typed> {
    // JSON numbers of integer and float columns as the numbers they are (what parsing their
    // text gives, without printing it first).
    if let (Value::Number(n), DataType::Primitive(p)) = (value, data_type) {
        match p {
            PrimitiveType::Byte
            | PrimitiveType::Short
            | PrimitiveType::Integer
            | PrimitiveType::Long => {
                if let Some(v) = n.as_i64() {
                    return Some(Typed::Int(i128::from(v)));
                }
                if let Some(v) = n.as_u64() {
                    return Some(Typed::Int(i128::from(v)));
                }
            }
            PrimitiveType::Float | PrimitiveType::Double => {
                if let Some(v) = n.as_f64() {
                    return Some(Typed::Float(v));
                }
            }
            _ => {}
        }
    }
    match value {
        Value::String(s) => parse_typed(data_type, s),
        Value::Number(n) => parse_typed(data_type, &n.to_string()),
        Value::Bool(b) => parse_typed(data_type, if *b { "true" } else { "false" }),
        _ => None,
    }
}

/// A predicate bound to resolved columns and typed literals, ready to prune files.
/// `BETWEEN` and `IN` are rewritten into comparisons, which keeps three-valued logic.
#[derive(Debug, Clone, PartialEq)]
pub struct Pruner {
    columns: Vec<ColumnRef>,
    root: Node,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
    IsNull(usize),
    Compare(usize, CompareOp, Option<Typed>),
    /// `low <= column <= high` with both bounds non-null.
    Between(usize, Typed, Typed),
    /// `column IN (values)`; `None` is a NULL in the list. Evaluated in a loop, so lists
    /// of any length are safe.
    In(usize, Vec<Option<Typed>>),
}

impl Pruner {
    /// Binds `predicate` to `table`'s columns.
    ///
    /// # Errors
    /// [`crate::Error::UnknownColumn`] for a column the table lacks or that has no order;
    /// [`crate::Error::InvalidPredicate`] for a literal that does not fit its column's type.
    pub fn new(table: &TableView, predicate: &Predicate) -> Result<Self> {
        let bound = BoundPredicate::new(table, predicate)?;
        Ok(Self {
            root: lower(&bound.root),
            columns: bound.columns,
        })
    }

    /// The columns the predicate reads, in the order [`Pruner::may_match`] expects bounds.
    #[must_use]
    pub fn columns(&self) -> &[ColumnRef] {
        &self.columns
    }

    /// Whether a file with these bounds (parallel to [`Pruner::columns`]) may hold a row for
    /// which the predicate is true. `false` means min/max pruning skips the file.
    #[must_use]
    pub fn may_match(&self, bounds: &[&FileBounds]) -> bool {
        self.eval(&self.root, bounds).0
    }

    /// A float data column: its bounds may leave NaN out. (Partition values are exact.)
    fn is_float(&self, column: usize) -> bool {
        self.columns[column].partition_index.is_none()
            && matches!(
                self.columns[column].data_type,
                DataType::Primitive(PrimitiveType::Float | PrimitiveType::Double)
            )
    }

    /// (may be true for some row, may be false for some row).
    fn eval(&self, node: &Node, bounds: &[&FileBounds]) -> (bool, bool) {
        match node {
            Node::And(a, b) => {
                let (at, af) = self.eval(a, bounds);
                let (bt, bf) = self.eval(b, bounds);
                (at && bt, af || bf)
            }
            Node::Or(a, b) => {
                let (at, af) = self.eval(a, bounds);
                let (bt, bf) = self.eval(b, bounds);
                (at || bt, af && bf)
            }
            Node::Not(a) => {
                let (t, f) = self.eval(a, bounds);
                (f, t)
            }
            Node::IsNull(c) => (!bounds[*c].no_nulls, !bounds[*c].all_null),
            Node::Compare(c, op, literal) => {
                let Some(literal) = literal else {
                    return (false, false);
                };
                let file = bounds[*c];
                if file.all_null {
                    return (false, false);
                }
                let float = self.is_float(*c);
                (
                    possible(file, *op, literal, float),
                    possible(file, negate(*op), literal, float),
                )
            }
            Node::In(c, values) => {
                let file = bounds[*c];
                if file.all_null {
                    return (false, false);
                }
                let float = self.is_float(*c);
                let present: Vec<&Typed> = values.iter().flatten().collect();
                let may_true = present
                    .iter()
                    .any(|v| possible(file, CompareOp::Eq, v, float));
                // False needs a value equal to none of them, and no NULL in the list.
                let may_false = present.len() == values.len()
                    && present
                        .iter()
                        .all(|v| possible(file, CompareOp::NotEq, v, float));
                (may_true, may_false)
            }
            Node::Between(c, low, high) => {
                let file = bounds[*c];
                if file.all_null {
                    return (false, false);
                }
                let float = self.is_float(*c);
                (
                    between_possible(file, low, high, float),
                    possible(file, CompareOp::Lt, low, float)
                        || possible(file, CompareOp::Gt, high, float),
                )
            }
        }
    }
}

/// One column's [`FileBounds`] over many files with every bound replaced by its rank among
/// the column's distinct bounds, so [`Pruner::prune`] decides each file with integer
/// comparisons: a literal is placed among the distinct bounds once per predicate (binary
/// search), not compared with two bounds of every file.
///
/// Ranks keep the exact order of [`Typed::compare`] (a total order within one type), so the
/// decisions are those of [`Pruner::may_match`]. Files whose decision needs more than the
/// order (a cut-off string max, bounds of another type than the column's first) are marked
/// and decided by [`Pruner::may_match`]'s rules on their [`FileBounds`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankedBounds {
    /// The distinct min and upper bounds, ascending.
    values: Vec<Typed>,
    /// Per file: `2 * rank + 2` of its min, 0 when the file has no range.
    low: Vec<u32>,
    /// Per file: `2 * rank + 2` of its upper bound, `u32::MAX` when the file has no range.
    high: Vec<u32>,
    /// Per file: decided on its [`FileBounds`] (a cut-off string max, or bounds of another
    /// type than the column's first), not by rank.
    slow: Vec<bool>,
    /// Per file: [`FileBounds::no_nulls`].
    no_nulls: Vec<bool>,
    /// Per file: [`FileBounds::all_null`].
    all_null: Vec<bool>,
}

impl RankedBounds {
    /// Ranks `bounds` (one column, one entry per file): one parallel sort of the bounds,
    /// O(n log n) in the files.
    #[must_use]
    pub fn new(bounds: &[FileBounds]) -> Self {
        use std::cmp::Ordering::Equal;
        let n = bounds.len();
        let first = bounds
            .iter()
            .find_map(|b| b.min.as_ref().filter(|_| b.has_range()));
        let no_nulls = bounds.iter().map(|b| b.no_nulls).collect();
        let all_null = bounds.iter().map(|b| b.all_null).collect();
        let mut low = vec![0u32; n];
        let mut high = vec![u32::MAX; n];
        let mut slow: Vec<bool> = bounds.iter().map(FileBounds::has_range).collect();
        // Every ranked bound as (value, file, is the upper bound), sorted by value.
        let mut sorted: Vec<(&Typed, u32, bool)> = Vec::with_capacity(2 * n);
        for (f, b) in bounds.iter().enumerate() {
            if let (Some((min, upper)), Ok(f)) = (ranked_range(b, first), u32::try_from(f)) {
                sorted.push((min, f, false));
                sorted.push((upper, f, true));
            }
        }
        let order = |a: &Typed, b: &Typed| a.compare(b).unwrap_or(Equal);
        // By integer key where every value has one (every type but text), else by comparison.
        let keys: Option<Vec<i128>> = sorted.iter().map(|v| v.0.order_key()).collect();
        match keys {
            Some(keys) => {
                let mut keyed: Vec<(i128, usize)> = keys.into_iter().zip(0..).collect();
                keyed.par_sort_unstable();
                // Equal keys must be equal values (a leap second shares its key with the
                // next second's): else the comparison decides.
                let exact = keyed.windows(2).all(|w| {
                    w[0].0 != w[1].0 || order(sorted[w[0].1].0, sorted[w[1].1].0) == Equal
                });
                if exact {
                    sorted = keyed.into_iter().map(|(_, i)| sorted[i]).collect();
                } else {
                    sorted.par_sort_unstable_by(|a, b| order(a.0, b.0));
                }
            }
            None => sorted.par_sort_unstable_by(|a, b| order(a.0, b.0)),
        }
        // Keys up to 2 * distinct + 2 must stay below u32::MAX (the "no range" high).
        if u32::try_from(sorted.len())
            .ok()
            .and_then(|len| len.checked_mul(2)?.checked_add(3))
            .is_none()
        {
            return Self {
                values: Vec::new(),
                low,
                high,
                slow,
                no_nulls,
                all_null,
            };
        }
        let mut values: Vec<Typed> = Vec::new();
        for &(value, f, is_upper) in &sorted {
            if values.last().is_none_or(|last| order(last, value) != Equal) {
                values.push(value.clone());
            }
            #[expect(clippy::cast_possible_truncation, reason = "checked above")]
            let key = 2 * (values.len() as u32 - 1) + 2;
            let f = f as usize;
            if is_upper {
                high[f] = key;
            } else {
                low[f] = key;
            }
            slow[f] = false;
        }
        Self {
            values,
            low,
            high,
            slow,
            no_nulls,
            all_null,
        }
    }

    /// The literal's key against the files' `low`/`high`: `2p + 2` when it equals the
    /// `p`-th distinct bound, `2p + 1` when it falls just below it. `None` when the literal
    /// is of another type than the bounds (every file is then decided on its bounds).
    fn key(&self, literal: &Typed) -> Option<u32> {
        use std::cmp::Ordering::{Equal, Less};
        self.values.first()?.compare(literal)?;
        let p = self
            .values
            .partition_point(|v| v.compare(literal) == Some(Less));
        let exact = self
            .values
            .get(p)
            .is_some_and(|v| v.compare(literal) == Some(Equal));
        let p = u32::try_from(p).ok()?;
        Some(2 * p + if exact { 2 } else { 1 })
    }
}

/// A file's (min, upper) when ranks decide it: both known, of the kind of `first`, and the
/// max not a cut-off prefix.
fn ranked_range<'a>(b: &'a FileBounds, first: Option<&Typed>) -> Option<(&'a Typed, &'a Typed)> {
    let same_kind = |v: &Typed| first.is_some_and(|f| f.compare(v).is_some());
    match (&b.min, &b.upper) {
        (Some(min), Some(upper)) if !b.max_is_prefix && same_kind(min) && same_kind(upper) => {
            Some((min, upper))
        }
        _ => None,
    }
}

/// The bounds [`Pruner::prune`] reads for one of [`Pruner::columns`]: every file's
/// [`FileBounds`] and their [`RankedBounds`].
#[derive(Debug, Clone, Copy)]
pub struct ColumnFiles<'a> {
    /// One entry per file.
    pub bounds: &'a [FileBounds],
    /// `RankedBounds::new(bounds)`.
    pub ranked: &'a RankedBounds,
}

impl Pruner {
    /// [`Pruner::may_match`] for every file at once: `columns` (parallel to
    /// [`Pruner::columns`]) hold the bounds of the same files, and the result has one entry
    /// per file, `false` where min/max pruning skips it. Evaluated a column at a time, with
    /// ranked bounds: the report's thousands of generated predicates over a log of 100,000
    /// files take milliseconds each.
    ///
    /// Every predicate reads at least one column, so `columns` is never empty.
    ///
    /// # Panics
    /// When `columns` is not parallel to [`Pruner::columns`] or its entries differ in length.
    #[must_use]
    pub fn prune(&self, columns: &[ColumnFiles<'_>]) -> Vec<bool> {
        assert_eq!(columns.len(), self.columns.len(), "one entry per column");
        let n = columns.first().map_or(0, |c| c.bounds.len());
        assert!(
            columns
                .iter()
                .all(|c| c.bounds.len() == n && c.ranked.low.len() == n),
            "bounds of the same files"
        );
        self.eval_all(&self.root, columns, n).0
    }

    /// Column-at-a-time [`Pruner::eval`]: (may be true, may be false) per file.
    fn eval_all(
        &self,
        node: &Node,
        columns: &[ColumnFiles<'_>],
        n: usize,
    ) -> (Vec<bool>, Vec<bool>) {
        match node {
            Node::And(a, b) => {
                let (mut at, mut af) = self.eval_all(a, columns, n);
                let (bt, bf) = self.eval_all(b, columns, n);
                at.iter_mut().zip(&bt).for_each(|(x, y)| *x &= *y);
                af.iter_mut().zip(&bf).for_each(|(x, y)| *x |= *y);
                (at, af)
            }
            Node::Or(a, b) => {
                let (mut at, mut af) = self.eval_all(a, columns, n);
                let (bt, bf) = self.eval_all(b, columns, n);
                at.iter_mut().zip(&bt).for_each(|(x, y)| *x |= *y);
                af.iter_mut().zip(&bf).for_each(|(x, y)| *x &= *y);
                (at, af)
            }
            Node::Not(a) => {
                let (t, f) = self.eval_all(a, columns, n);
                (f, t)
            }
            Node::IsNull(c) => {
                let ranked = columns[*c].ranked;
                (
                    ranked.no_nulls.iter().map(|x| !x).collect(),
                    ranked.all_null.iter().map(|x| !x).collect(),
                )
            }
            Node::Compare(c, op, literal) => {
                let Some(literal) = literal else {
                    return (vec![false; n], vec![false; n]);
                };
                let float = self.is_float(*c);
                let file = columns[*c];
                let t = possible_all(file, *op, literal, float);
                let f = possible_all(file, negate(*op), literal, float);
                mask_all_null(file, t, f)
            }
            Node::In(c, values) => {
                let file = columns[*c];
                let float = self.is_float(*c);
                let present: Vec<&Typed> = values.iter().flatten().collect();
                let mut t = vec![false; n];
                for v in &present {
                    let p = possible_all(file, CompareOp::Eq, v, float);
                    t.iter_mut().zip(&p).for_each(|(x, y)| *x |= *y);
                }
                let mut f = vec![present.len() == values.len(); n];
                if present.len() == values.len() {
                    for v in &present {
                        let p = possible_all(file, CompareOp::NotEq, v, float);
                        f.iter_mut().zip(&p).for_each(|(x, y)| *x &= *y);
                    }
                }
                mask_all_null(file, t, f)
            }
            Node::Between(c, low, high) => {
                let file = columns[*c];
                let float = self.is_float(*c);
                let ordered = low.compare(high) != Some(std::cmp::Ordering::Greater);
                let nan_high = float && matches!(high, Typed::Float(x) if x.is_nan());
                let t = if nan_high {
                    vec![true; n]
                } else if ordered {
                    let mut t = in_range_all(file, CompareOp::GtEq, low);
                    let h = in_range_all(file, CompareOp::LtEq, high);
                    t.iter_mut().zip(&h).for_each(|(x, y)| *x &= *y);
                    t
                } else {
                    vec![false; n]
                };
                let mut f = possible_all(file, CompareOp::Lt, low, float);
                let g = possible_all(file, CompareOp::Gt, high, float);
                f.iter_mut().zip(&g).for_each(|(x, y)| *x |= *y);
                mask_all_null(file, t, f)
            }
        }
    }
}

/// Files whose rows are all null make every comparison unknown: neither true nor false.
fn mask_all_null(
    file: ColumnFiles<'_>,
    mut t: Vec<bool>,
    mut f: Vec<bool>,
) -> (Vec<bool>, Vec<bool>) {
    for ((&all_null, t), f) in file.ranked.all_null.iter().zip(&mut t).zip(&mut f) {
        *t &= !all_null;
        *f &= !all_null;
    }
    (t, f)
}

/// [`possible`] for every file.
fn possible_all(file: ColumnFiles<'_>, op: CompareOp, literal: &Typed, float: bool) -> Vec<bool> {
    if float && nan_satisfies(op, literal) {
        return vec![true; file.bounds.len()];
    }
    in_range_all(file, op, literal)
}

/// [`in_range`] for every file, by ranks where the file allows it.
fn in_range_all(file: ColumnFiles<'_>, op: CompareOp, literal: &Typed) -> Vec<bool> {
    let ranked = file.ranked;
    let Some(key) = ranked.key(literal) else {
        return file
            .bounds
            .iter()
            .map(|b| in_range(b, op, literal))
            .collect();
    };
    // [`range_test`] on ranks (no cut-off prefix: those files are slow), one loop per
    // operator so each is a tight loop over two integer arrays.
    let by_rank = |test: fn(u32, u32, u32) -> bool| -> Vec<bool> {
        ranked
            .low
            .iter()
            .zip(&ranked.high)
            .map(|(&low, &high)| test(key, low, high))
            .collect()
    };
    let mut out = match op {
        CompareOp::Eq => by_rank(|k, low, high| k >= low && k <= high),
        CompareOp::NotEq => by_rank(|k, low, high| !(k == low && k == high)),
        CompareOp::Lt => by_rank(|k, low, _| k > low),
        CompareOp::LtEq => by_rank(|k, low, _| k >= low),
        CompareOp::Gt => by_rank(|k, _, high| k < high),
        CompareOp::GtEq => by_rank(|k, _, high| k <= high),
    };
    for ((o, &slow), b) in out.iter_mut().zip(&ranked.slow).zip(file.bounds) {
        if slow {
            *o = in_range(b, op, literal);
        }
    }
    out
}

fn negate(op: CompareOp) -> CompareOp {
    match op {
        CompareOp::Eq => CompareOp::NotEq,
        CompareOp::NotEq => CompareOp::Eq,
        CompareOp::Lt => CompareOp::GtEq,
        CompareOp::GtEq => CompareOp::Lt,
        CompareOp::LtEq => CompareOp::Gt,
        CompareOp::Gt => CompareOp::LtEq,
    }
}

/// Whether some non-null value `v` the file may hold has `v op literal`.
fn possible(file: &FileBounds, op: CompareOp, literal: &Typed, float: bool) -> bool {
    in_range(file, op, literal) || (float && nan_satisfies(op, literal))
}

/// Whether NaN (above every number in SQL order) satisfies `NaN op literal`: float bounds
/// taken from Parquet statistics leave NaN out, so every float file may hold it.
fn nan_satisfies(op: CompareOp, literal: &Typed) -> bool {
    let literal_is_nan = matches!(literal, Typed::Float(x) if x.is_nan());
    match op {
        CompareOp::Eq | CompareOp::LtEq => literal_is_nan,
        CompareOp::NotEq | CompareOp::Gt => !literal_is_nan,
        CompareOp::Lt => false,
        CompareOp::GtEq => true,
    }
}

/// Whether some value of the file's [min, max] (with a cut-off string max, also every
/// string starting with it) has `v op literal`. Unknown bounds: possible.
fn in_range(file: &FileBounds, op: CompareOp, literal: &Typed) -> bool {
    let (Some(min), Some(upper)) = (&file.min, &file.upper) else {
        return true;
    };
    let (Some(vs_min), Some(vs_max)) = (literal.compare(min), literal.compare(upper)) else {
        return true;
    };
    range_test(
        op,
        vs_min,
        vs_max,
        extends(file, literal),
        file.max_is_prefix,
    )
}

/// Whether `literal` extends the file's cut-off string max (it starts with the prefix).
fn extends(file: &FileBounds, literal: &Typed) -> bool {
    file.max_is_prefix
        && matches!((literal, &file.upper), (Typed::Text(l), Some(Typed::Text(m))) if l.starts_with(m.as_str()))
}

/// [`in_range`]'s decision from the literal's order against the file's min and upper bound.
fn range_test(
    op: CompareOp,
    vs_min: std::cmp::Ordering,
    vs_max: std::cmp::Ordering,
    extends: bool,
    max_is_prefix: bool,
) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    match op {
        CompareOp::Eq => vs_min != Less && (vs_max != Greater || extends),
        CompareOp::NotEq => !(vs_min == Equal && vs_max == Equal && !max_is_prefix),
        CompareOp::Lt => vs_min == Greater,
        CompareOp::LtEq => vs_min != Less,
        CompareOp::Gt => vs_max == Less || extends,
        CompareOp::GtEq => vs_max != Greater || extends,
    }
}

/// Whether some value `v` of the file has `low <= v <= high`: one value must satisfy both
/// bounds (testing them apart would let NaN pass `>= low` and a small value `<= high`).
fn between_possible(file: &FileBounds, low: &Typed, high: &Typed, float: bool) -> bool {
    let ordered = low.compare(high) != Some(std::cmp::Ordering::Greater);
    (ordered && in_range(file, CompareOp::GtEq, low) && in_range(file, CompareOp::LtEq, high))
        || (float && matches!(high, Typed::Float(x) if x.is_nan()))
}

/// The bound predicate lowered to the pruner's nodes: literals typed, `BETWEEN` with two
/// non-null bounds kept whole (a file may match when its range meets `[low, high]`), with a
/// NULL bound split into its two comparisons (never true).
fn lower(node: &BoundNode) -> Node {
    match node {
        BoundNode::And(a, b) => Node::And(Box::new(lower(a)), Box::new(lower(b))),
        BoundNode::Or(a, b) => Node::Or(Box::new(lower(a)), Box::new(lower(b))),
        BoundNode::Not(a) => Node::Not(Box::new(lower(a))),
        BoundNode::IsNull(c) => Node::IsNull(*c),
        BoundNode::Compare(c, op, value) => Node::Compare(*c, *op, value.typed.clone()),
        BoundNode::Between(c, low, high) => match (&low.typed, &high.typed) {
            (Some(l), Some(h)) => Node::Between(*c, l.clone(), h.clone()),
            (l, h) => Node::And(
                Box::new(Node::Compare(*c, CompareOp::GtEq, l.clone())),
                Box::new(Node::Compare(*c, CompareOp::LtEq, h.clone())),
            ),
        },
        BoundNode::In(c, values) => Node::In(*c, values.iter().map(|v| v.typed.clone()).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(min: i128, max: i128) -> FileBounds {
        FileBounds {
            min: Some(Typed::Int(min)),
            max: Some(Typed::Int(max)),
            upper: Some(Typed::Int(max)),
            ..FileBounds::default()
        }
    }

    #[test]
    fn comparisons_on_an_integer_range() {
        let file = bounds(10, 20);
        let at = |op, v| possible(&file, op, &Typed::Int(v), false);
        assert!(at(CompareOp::Eq, 10) && at(CompareOp::Eq, 20) && at(CompareOp::Eq, 15));
        assert!(!at(CompareOp::Eq, 9) && !at(CompareOp::Eq, 21));
        assert!(!at(CompareOp::Lt, 10) && at(CompareOp::Lt, 11));
        assert!(!at(CompareOp::LtEq, 9) && at(CompareOp::LtEq, 10));
        assert!(!at(CompareOp::Gt, 20) && at(CompareOp::Gt, 19));
        assert!(!at(CompareOp::GtEq, 21) && at(CompareOp::GtEq, 20));
        assert!(at(CompareOp::NotEq, 10));
        let single = bounds(7, 7);
        assert!(!possible(&single, CompareOp::NotEq, &Typed::Int(7), false));
        assert!(possible(&single, CompareOp::NotEq, &Typed::Int(8), false));
    }

    #[test]
    fn cut_off_string_max_and_float_nan_stay_possible() {
        let prefix = "a".repeat(32);
        let file = FileBounds {
            min: Some(Typed::Text("a".into())),
            max: Some(Typed::Text(prefix.clone())),
            upper: Some(Typed::Text(prefix.clone())),
            max_is_prefix: true,
            ..FileBounds::default()
        };
        let longer = Typed::Text(format!("{prefix}zzz"));
        assert!(possible(&file, CompareOp::Eq, &longer, false));
        assert!(!possible(
            &file,
            CompareOp::Eq,
            &Typed::Text("b".into()),
            false
        ));

        let floats = FileBounds {
            min: Some(Typed::Float(1.0)),
            max: Some(Typed::Float(2.0)),
            upper: Some(Typed::Float(2.0)),
            ..FileBounds::default()
        };
        assert!(possible(&floats, CompareOp::Gt, &Typed::Float(5.0), true));
        assert!(!possible(&floats, CompareOp::Eq, &Typed::Float(5.0), true));
        assert!(possible(
            &floats,
            CompareOp::Eq,
            &Typed::Float(f64::NAN),
            true
        ));
        assert!(!possible(&floats, CompareOp::Lt, &Typed::Float(1.0), true));
        // NaN passes `>= 5` but not `<= 6`: one value must pass both.
        assert!(!between_possible(
            &floats,
            &Typed::Float(5.0),
            &Typed::Float(6.0),
            true
        ));
        assert!(between_possible(
            &floats,
            &Typed::Float(1.5),
            &Typed::Float(6.0),
            true
        ));
        assert!(between_possible(
            &floats,
            &Typed::Float(5.0),
            &Typed::Float(f64::NAN),
            true
        ));
    }

    /// A column of `data_type` (a data column unless `partition`).
    fn column(name: &str, data_type: DataType, partition: bool) -> ColumnRef {
        ColumnRef {
            name: name.into(),
            logical: vec![name.into()],
            physical: vec![name.into()],
            data_type,
            partition_index: partition.then_some(0),
        }
    }

    /// Random bounds of one kind of value: some files without stats, all null, with a
    /// single value, cut-off string maxima, NaN and -0.0 bounds, a stray value of another
    /// type; values drawn from a small domain so literals often meet bounds exactly.
    fn random_bounds(rng: &mut rand::rngs::StdRng, kind: u8, files: usize) -> Vec<FileBounds> {
        use rand::Rng;
        let value = |rng: &mut rand::rngs::StdRng| -> Typed {
            let x: i32 = rng.random_range(-20..20);
            match kind {
                0 => Typed::Int(i128::from(x)),
                1 => match rng.random_range(0..12) {
                    0 => Typed::Float(f64::NAN),
                    1 => Typed::Float(-0.0),
                    _ => Typed::Float(f64::from(x) / 2.0),
                },
                2 => {
                    let len = rng.random_range(0..5);
                    Typed::Text(
                        (0..len)
                            .map(|_| ['a', 'b', 'c'][rng.random_range(0..3)])
                            .collect(),
                    )
                }
                _ => Typed::Timestamp(
                    chrono::DateTime::from_timestamp(i64::from(x) * 1_000, 0)
                        .unwrap_or_default()
                        .naive_utc(),
                ),
            }
        };
        (0..files)
            .map(|_| {
                let no_nulls = rng.random_bool(0.5);
                match rng.random_range(0..10) {
                    0 => FileBounds::default(),
                    1 => FileBounds {
                        all_null: true,
                        ..FileBounds::default()
                    },
                    2 => {
                        // A stray bound of another type (a mis-typed stats value).
                        let v = Typed::Bool(rng.random_bool(0.5));
                        FileBounds {
                            min: Some(v.clone()),
                            max: Some(v.clone()),
                            upper: Some(v),
                            no_nulls,
                            ..FileBounds::default()
                        }
                    }
                    _ => {
                        let (a, b) = (value(rng), value(rng));
                        let (min, max) = if a.compare(&b) == Some(std::cmp::Ordering::Greater) {
                            (b, a)
                        } else {
                            (a, b)
                        };
                        let upper = match &max {
                            Typed::Timestamp(t) => {
                                Typed::Timestamp(*t + chrono::Duration::microseconds(999))
                            }
                            other => other.clone(),
                        };
                        let max_is_prefix =
                            matches!(&max, Typed::Text(t) if !t.is_empty()) && rng.random_bool(0.3);
                        FileBounds {
                            min: Some(min),
                            max: Some(max),
                            upper: Some(upper),
                            max_is_prefix,
                            no_nulls,
                            all_null: false,
                        }
                    }
                }
            })
            .collect()
    }

    fn random_node(rng: &mut rand::rngs::StdRng, columns: &[Vec<FileBounds>], depth: u32) -> Node {
        use rand::Rng;
        let c = rng.random_range(0..columns.len());
        let literal = |rng: &mut rand::rngs::StdRng| -> Option<Typed> {
            // A bound of some file, or one just beside it, or NULL.
            let files = &columns[c];
            let b = &files[rng.random_range(0..files.len())];
            match (rng.random_range(0..8), &b.min, &b.max) {
                (0, _, _) => None,
                (1..=3, Some(v), _) | (4..=6, _, Some(v)) => Some(v.clone()),
                (_, Some(Typed::Int(x)), _) => Some(Typed::Int(x + 1)),
                (_, Some(Typed::Float(x)), _) => Some(Typed::Float(x + 0.25)),
                (_, Some(Typed::Text(t)), _) => Some(Typed::Text(format!("{t}a"))),
                (_, Some(Typed::Timestamp(t)), _) => {
                    Some(Typed::Timestamp(*t + chrono::Duration::microseconds(500)))
                }
                _ => Some(Typed::Int(3)),
            }
        };
        let ops = [
            CompareOp::Eq,
            CompareOp::NotEq,
            CompareOp::Lt,
            CompareOp::LtEq,
            CompareOp::Gt,
            CompareOp::GtEq,
        ];
        match (depth, rng.random_range(0..9)) {
            (1.., 0) => Node::And(
                Box::new(random_node(rng, columns, depth - 1)),
                Box::new(random_node(rng, columns, depth - 1)),
            ),
            (1.., 1) => Node::Or(
                Box::new(random_node(rng, columns, depth - 1)),
                Box::new(random_node(rng, columns, depth - 1)),
            ),
            (1.., 2) => Node::Not(Box::new(random_node(rng, columns, depth - 1))),
            (_, 3) => Node::IsNull(c),
            (_, 4) => {
                let values = (0..rng.random_range(1..4)).map(|_| literal(rng)).collect();
                Node::In(c, values)
            }
            (_, 5 | 6) => match (literal(rng), literal(rng)) {
                (Some(low), Some(high)) => Node::Between(c, low, high),
                (low, _) => Node::Compare(c, CompareOp::GtEq, low),
            },
            _ => Node::Compare(c, ops[rng.random_range(0..ops.len())], literal(rng)),
        }
    }

    /// The column-at-a-time, ranked [`Pruner::prune`] decides every file as the per-file
    /// [`Pruner::may_match`] does, on random bounds of every kind and random predicates.
    #[test]
    fn ranked_pruning_matches_per_file_pruning() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(15);
        let types = [
            DataType::Primitive(PrimitiveType::Long),
            DataType::Primitive(PrimitiveType::Double),
            DataType::Primitive(PrimitiveType::String),
            DataType::Primitive(PrimitiveType::Timestamp),
        ];
        let mut checked = 0;
        for round in 0..60u8 {
            let files = 1 + usize::from(round) * 7;
            let kinds: Vec<u8> = (0..2u8).map(|k| (round % 4 + k * 3) % 4).collect();
            let columns: Vec<ColumnRef> = kinds
                .iter()
                .enumerate()
                .map(|(i, &k)| column(&format!("c{i}"), types[usize::from(k)].clone(), false))
                .collect();
            let bounds: Vec<Vec<FileBounds>> = kinds
                .iter()
                .map(|&k| random_bounds(&mut rng, k, files))
                .collect();
            let ranked: Vec<RankedBounds> = bounds.iter().map(|b| RankedBounds::new(b)).collect();
            let view: Vec<ColumnFiles<'_>> = bounds
                .iter()
                .zip(&ranked)
                .map(|(bounds, ranked)| ColumnFiles { bounds, ranked })
                .collect();
            for _ in 0..40 {
                let pruner = Pruner {
                    columns: columns.clone(),
                    root: random_node(&mut rng, &bounds, 3),
                };
                let fast = pruner.prune(&view);
                let slow: Vec<bool> = (0..files)
                    .map(|f| {
                        let row: Vec<&FileBounds> = bounds.iter().map(|b| &b[f]).collect();
                        pruner.may_match(&row)
                    })
                    .collect();
                assert_eq!(fast, slow, "{:?}", pruner.root);
                checked += files;
            }
        }
        assert!(checked > 100_000, "{checked} decisions compared");
    }

    /// Stats numbers read directly equal their text parsed, as every stats value was read
    /// before; dates in the canonical form equal chrono's parse.
    #[test]
    fn stats_numbers_and_dates_read_as_their_text_parses() {
        let types = [
            PrimitiveType::Byte,
            PrimitiveType::Integer,
            PrimitiveType::Long,
            PrimitiveType::Float,
            PrimitiveType::Double,
            PrimitiveType::Decimal(deltalake::kernel::DecimalType::try_new(10, 2).unwrap()),
        ];
        let numbers = [
            "0",
            "-0.0",
            "1",
            "-17",
            "9223372036854775807",
            "18446744073709551615",
            "1.5",
            "0.1",
            "1e300",
            "-2.5e-7",
            "123456789.123456789",
        ];
        for p in types {
            let data_type = DataType::Primitive(p);
            for text in numbers {
                let value: Value = serde_json::from_str(text).unwrap();
                let direct = stats_value(&data_type, &value);
                let parsed = parse_typed(&data_type, &value.to_string());
                assert_eq!(
                    format!("{direct:?}"),
                    format!("{parsed:?}"),
                    "{text} as {data_type}"
                );
            }
        }
        let date = DataType::Primitive(PrimitiveType::Date);
        for text in [
            "2024-02-29",
            "2023-02-29",
            "0001-01-01",
            "9999-12-31",
            "2024-1-05",
            " 2024-01-05",
        ] {
            let expected = chrono::NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").ok();
            assert_eq!(
                parse_typed(&date, text),
                expected.map(Typed::Date),
                "{text}"
            );
        }
    }

    /// A leap second and the half second after it share an integer key; ranks still follow
    /// the comparison, so no file is skipped that the per-file rules keep.
    #[test]
    fn a_leap_second_is_ranked_by_comparison() {
        let ts = |text: &str| parse_typed(&DataType::Primitive(PrimitiveType::Timestamp), text);
        let leap = ts("2016-12-31 23:59:60.5").expect("chrono reads a leap second");
        let after = ts("2017-01-01 00:00:00.5").unwrap();
        assert_eq!(leap.order_key(), after.order_key());
        assert_ne!(leap.compare(&after), Some(std::cmp::Ordering::Equal));
        let file = |v: &Typed| FileBounds {
            min: Some(v.clone()),
            max: Some(v.clone()),
            upper: Some(v.clone()),
            ..FileBounds::default()
        };
        let timestamp = DataType::Primitive(PrimitiveType::Timestamp);
        // In both file orders: equal keys must not be ordered by position.
        for bounds in [
            vec![file(&leap), file(&after)],
            vec![file(&after), file(&leap)],
        ] {
            let ranked = RankedBounds::new(&bounds);
            let view = [ColumnFiles {
                bounds: &bounds,
                ranked: &ranked,
            }];
            for op in [
                CompareOp::Eq,
                CompareOp::Lt,
                CompareOp::Gt,
                CompareOp::NotEq,
            ] {
                for literal in [&leap, &after] {
                    let pruner = Pruner {
                        columns: vec![column("t", timestamp.clone(), false)],
                        root: Node::Compare(0, op, Some(literal.clone())),
                    };
                    let per_file: Vec<bool> =
                        bounds.iter().map(|b| pruner.may_match(&[b])).collect();
                    assert_eq!(pruner.prune(&view), per_file, "{op:?} {literal:?}");
                }
            }
        }
    }
}
