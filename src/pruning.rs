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

use deltalake::kernel::{DataType, PrimitiveType};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::predicate::{CompareOp, Literal, Predicate, typed_literal};
use crate::table::{DataFile, TableView};
use crate::value::{Typed, parse_typed};

/// Table property: how many characters of a string Delta writers keep in min/max stats.
pub const PROP_STRING_PREFIX_LENGTH: &str = "delta.dataSkippingStringPrefixLength";
/// Default of [`PROP_STRING_PREFIX_LENGTH`] (Delta Spark's).
pub const DEFAULT_STRING_PREFIX_LENGTH: usize = 32;

/// A column the report or a predicate refers to, resolved against the table schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnRef {
    /// Logical name, dotted for nested fields.
    pub name: String,
    /// Logical path, e.g. `["address", "city"]`.
    pub logical: Vec<String>,
    /// Physical path: the key path in `minValues`/`maxValues`/`nullCount`.
    pub physical: Vec<String>,
    /// The column's Delta type (a primitive type).
    pub data_type: DataType,
    /// Index into [`TableView::partition_columns`] for a partition column.
    pub partition_index: Option<usize>,
}

impl ColumnRef {
    /// Resolves a logical column path: an exact match first, then a unique case-insensitive
    /// one (Delta column names are case-insensitive).
    ///
    /// # Errors
    /// [`Error::UnknownColumn`] when the table has no such column (the message lists the
    /// columns it has), or when the column's type has no order (arrays, maps, structs,
    /// variants), so min/max stats cannot describe it.
    pub fn resolve(table: &TableView, path: &[String]) -> Result<Self> {
        let wanted = crate::column::format_path(path);
        let mut candidates: Vec<Self> = table
            .partition_columns
            .iter()
            .enumerate()
            .filter_map(|(i, name)| {
                let field = table.schema.fields().find(|f| f.name() == name)?;
                Some(Self {
                    name: crate::column::format_path(std::slice::from_ref(name)),
                    logical: vec![name.clone()],
                    physical: vec![table.partition_physical_names[i].clone()],
                    data_type: field.data_type().clone(),
                    partition_index: Some(i),
                })
            })
            .collect();
        candidates.extend(table.data_leaf_columns().into_iter().map(|leaf| Self {
            name: leaf.display_name(),
            logical: leaf.logical.clone(),
            physical: leaf.physical.clone(),
            data_type: leaf.data_type.clone(),
            partition_index: None,
        }));
        let found = candidates
            .iter()
            .find(|c| c.logical == path)
            .cloned()
            .or_else(|| {
                let folded: Vec<&Self> = candidates
                    .iter()
                    .filter(|c| crate::column::eq_ignore_case(&c.logical, path))
                    .collect();
                match folded.as_slice() {
                    [one] => Some((*one).clone()),
                    _ => None,
                }
            });
        let Some(column) = found else {
            let names: Vec<&str> = candidates.iter().map(|c| c.name.as_str()).collect();
            return Err(Error::UnknownColumn {
                column: wanted,
                setting: None,
                message: format!(
                    "does not exist in table '{}' (columns: {})",
                    table.display_location(),
                    names.join(", ")
                ),
            });
        };
        if !is_orderable(&column.data_type) {
            return Err(Error::UnknownColumn {
                column: wanted,
                setting: None,
                message: format!(
                    "has type {}, which has no min/max stats to skip on",
                    column.data_type
                ),
            });
        }
        Ok(column)
    }
}

/// Whether min/max stats can describe a column of this type.
#[must_use]
pub fn is_orderable(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Primitive(p) if !matches!(p, PrimitiveType::Binary))
}

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
        let all_null = matches!((nulls, stats.num_records), (Some(n), Some(r)) if n == r);
        let typed = |v: Option<&Value>| v.and_then(|v| stats_value(&column.data_type, v));
        let min = typed(stats.min(&column.physical));
        let max = typed(stats.max(&column.physical));
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
fn stats_value(data_type: &DataType, value: &Value) -> Option<Typed> {
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
    /// [`Error::UnknownColumn`] for a column the table lacks or that has no order;
    /// [`Error::InvalidPredicate`] for a literal that does not fit its column's type.
    pub fn new(table: &TableView, predicate: &Predicate) -> Result<Self> {
        let mut columns: Vec<ColumnRef> = Vec::new();
        let root = bind(table, predicate, &mut columns)?;
        Ok(Self { columns, root })
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
    use std::cmp::Ordering::{Equal, Greater, Less};
    let (Some(min), Some(upper)) = (&file.min, &file.upper) else {
        return true;
    };
    let (Some(vs_min), Some(vs_max)) = (literal.compare(min), literal.compare(upper)) else {
        return true;
    };
    let extends = file.max_is_prefix
        && matches!((literal, upper), (Typed::Text(l), Typed::Text(m)) if l.starts_with(m.as_str()));
    match op {
        CompareOp::Eq => vs_min != Less && (vs_max != Greater || extends),
        CompareOp::NotEq => !(vs_min == Equal && vs_max == Equal && !file.max_is_prefix),
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

fn bind(table: &TableView, predicate: &Predicate, columns: &mut Vec<ColumnRef>) -> Result<Node> {
    let mut column_index = |path: &[String]| -> Result<usize> {
        let column = ColumnRef::resolve(table, path)?;
        if let Some(i) = columns.iter().position(|c| c.logical == column.logical) {
            return Ok(i);
        }
        columns.push(column);
        Ok(columns.len() - 1)
    };
    Ok(match predicate {
        Predicate::And(a, b) => Node::And(
            Box::new(bind(table, a, columns)?),
            Box::new(bind(table, b, columns)?),
        ),
        Predicate::Or(a, b) => Node::Or(
            Box::new(bind(table, a, columns)?),
            Box::new(bind(table, b, columns)?),
        ),
        Predicate::Not(a) => Node::Not(Box::new(bind(table, a, columns)?)),
        Predicate::IsNull { column, negated } => {
            let node = Node::IsNull(column_index(column)?);
            if *negated {
                Node::Not(Box::new(node))
            } else {
                node
            }
        }
        Predicate::Compare { column, op, value } => {
            let c = column_index(column)?;
            Node::Compare(c, *op, literal(column, &columns[c].data_type, value)?)
        }
        Predicate::Between {
            column,
            low,
            high,
            negated,
        } => {
            let c = column_index(column)?;
            let data_type = columns[c].data_type.clone();
            let node = match (
                literal(column, &data_type, low)?,
                literal(column, &data_type, high)?,
            ) {
                (Some(low), Some(high)) => Node::Between(c, low, high),
                // With a NULL bound it is (x >= low) AND (x <= high): never true.
                (low, high) => Node::And(
                    Box::new(Node::Compare(c, CompareOp::GtEq, low)),
                    Box::new(Node::Compare(c, CompareOp::LtEq, high)),
                ),
            };
            if *negated {
                Node::Not(Box::new(node))
            } else {
                node
            }
        }
        Predicate::In {
            column,
            values,
            negated,
        } => {
            let c = column_index(column)?;
            let data_type = columns[c].data_type.clone();
            if values.is_empty() {
                return Err(Error::InvalidPredicate {
                    predicate: predicate.to_string(),
                    message: "IN needs at least one value".into(),
                });
            }
            let node = Node::In(
                c,
                values
                    .iter()
                    .map(|v| literal(column, &data_type, v))
                    .collect::<Result<_>>()?,
            );
            if *negated {
                Node::Not(Box::new(node))
            } else {
                node
            }
        }
    })
}

fn literal(column: &[String], data_type: &DataType, value: &Literal) -> Result<Option<Typed>> {
    typed_literal(column, data_type, value)
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
}
