//! Predicates of the `--where` language ([`crate::predicate`]) evaluated on the rows of
//! Arrow batches, as a query engine filters them: the cut tree routes rows by its cuts
//! ([`crate::plan::cuts`]) and measures how many rows each query reads on a sample, and the
//! tests check pruning against the rows themselves.
//!
//! # Semantics
//! SQL three-valued logic: a comparison with a null value or a `NULL` literal is unknown
//! (null), `AND`/`OR` are Kleene's, `NOT` of unknown is unknown, and a row matches only when
//! the predicate is true. Values compare in their type's SQL order, exactly:
//!
//! | column type | literal | comparison |
//! |---|---|---|
//! | integers | an integer | exact; a literal outside the type's range makes the comparison the same for every row |
//! | decimals | the literal's digits | exact: a literal with more fractional digits than the column's scale moves to the neighbouring representable value with the operator adjusted (`x < 0.055` is `x <= 0.05` at scale 2; `x = 0.055` is false) |
//! | float, double | a number | `-0.0` equals `0.0`, every NaN is one value above `+inf` (the order of [`crate::value::Typed`]); a float is the double its shortest decimal text reads as (`0.234`), as the log writes it |
//! | string | text | byte-wise (UTF-8 code points) |
//! | date, timestamp | `DATE` / `TIMESTAMP` text | by day / microsecond (UTC) |
//! | boolean | `TRUE` / `FALSE` | `false < true` |
//!
//! Partition columns are not in the data files' batches: their value, the same for every row
//! of a batch, comes from the caller and is compared as `--where` compares partition values.
//! The comparisons themselves are Arrow's kernels (`arrow::compute::kernels::cmp`,
//! `boolean::{and_kleene, or_kleene, not}`).

use std::sync::Arc;

use deltalake::arrow::array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Int64Array, RecordBatch, Scalar,
    StringArray, TimestampMicrosecondArray,
};
use deltalake::arrow::compute::kernels::boolean::{and_kleene, not, or_kleene};
use deltalake::arrow::compute::kernels::cmp;
use deltalake::arrow::compute::{CastOptions, cast_with_options, is_not_null, is_null};
use deltalake::arrow::datatypes::{DataType as ArrowType, TimeUnit};

use crate::bound::{BoundNode, BoundPredicate, ColumnRef};
use crate::error::{Error, Result};
use crate::predicate::{CompareOp, Literal, Predicate, typed_literal};
use crate::table::TableView;
use crate::value::Typed;

/// A predicate bound to a table's columns, ready to evaluate on batches of its data files
/// (columns by physical name, as the rewrite reads them).
#[derive(Debug, Clone, PartialEq)]
pub struct RowFilter {
    columns: Vec<ColumnRef>,
    root: Node,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
    IsNull(usize, bool),
    Compare(usize, CompareOp, Literal),
    In(usize, Vec<Literal>),
}

impl RowFilter {
    /// Binds `predicate` to `table`'s columns, checking each literal against its column's
    /// type.
    ///
    /// # Errors
    /// [`Error::UnknownColumn`] for a column the table lacks or that has no order;
    /// [`Error::InvalidPredicate`] for a literal that does not fit its column's type.
    pub fn new(table: &TableView, predicate: &Predicate) -> Result<Self> {
        let bound = BoundPredicate::new(table, predicate)?;
        Ok(Self {
            root: lower(&bound.root),
            columns: bound.columns,
        })
    }

    /// The columns the predicate reads.
    #[must_use]
    pub fn columns(&self) -> &[ColumnRef] {
        &self.columns
    }

    /// The predicate's value for every row of `batch` (true, false, or null for unknown).
    /// `partition_values` are the batch's partition values parallel to
    /// [`TableView::partition_columns`], as the log spells them (`None` for null).
    ///
    /// # Errors
    /// [`Error::Internal`] for a column missing from the batch; [`Error::Arrow`] when a
    /// kernel fails (a column of a type without a comparison).
    pub fn evaluate(
        &self,
        batch: &RecordBatch,
        partition_values: &[Option<String>],
    ) -> Result<BooleanArray> {
        let values = self
            .columns
            .iter()
            .map(|c| column_values(c, batch, partition_values))
            .collect::<Result<Vec<_>>>()?;
        eval(&self.root, &self.columns, &values, batch.num_rows())
    }

    /// [`RowFilter::evaluate`] over columns already taken from a batch: `values` parallel to
    /// [`RowFilter::columns`] (`None` for a partition column), each `rows` long.
    ///
    /// # Errors
    /// As [`RowFilter::evaluate`]; [`Error::Internal`] when a data column has no array.
    pub fn evaluate_columns(
        &self,
        values: &[Option<ArrayRef>],
        partition_values: &[Option<String>],
        rows: usize,
    ) -> Result<BooleanArray> {
        let values = self
            .columns
            .iter()
            .zip(values)
            .map(|(c, v)| match (c.partition_index, v) {
                (Some(index), _) => Ok(Values::Partition(
                    partition_values.get(index).cloned().flatten(),
                )),
                (None, Some(array)) => prepared(c, array).map(Values::Array),
                (None, None) => Err(Error::Internal(format!(
                    "no values of column '{}' to evaluate a predicate on",
                    c.name
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        eval(&self.root, &self.columns, &values, rows)
    }

    /// Whether each row matches, over columns already taken from a batch: `values`
    /// parallel to [`RowFilter::columns`] (`None` for a partition column), `rows` long.
    ///
    /// # Errors
    /// As [`RowFilter::evaluate_columns`].
    pub fn matches_columns(
        &self,
        values: &[Option<ArrayRef>],
        partition_values: &[Option<String>],
        rows: usize,
    ) -> Result<Vec<bool>> {
        let result = self.evaluate_columns(values, partition_values, rows)?;
        Ok((0..result.len())
            .map(|i| result.is_valid(i) && result.value(i))
            .collect())
    }

    /// Whether each row of `batch` matches (the predicate is true).
    ///
    /// # Errors
    /// As [`RowFilter::evaluate`].
    pub fn matches(
        &self,
        batch: &RecordBatch,
        partition_values: &[Option<String>],
    ) -> Result<Vec<bool>> {
        let result = self.evaluate(batch, partition_values)?;
        Ok((0..result.len())
            .map(|i| result.is_valid(i) && result.value(i))
            .collect())
    }
}

/// A column's values in a batch: its leaf array, or a partition value for every row.
enum Values {
    Array(ArrayRef),
    Partition(Option<String>),
}

fn column_values(
    column: &ColumnRef,
    batch: &RecordBatch,
    partition_values: &[Option<String>],
) -> Result<Values> {
    if let Some(index) = column.partition_index {
        return Ok(Values::Partition(
            partition_values.get(index).cloned().flatten(),
        ));
    }
    let array = crate::column::leaf_values(batch, &column.physical)?;
    prepared(column, &array).map(Values::Array)
}

/// A column's array as comparisons read it: `-0.0` and NaN normalized, and narrower floats
/// as the doubles their shortest decimal text reads as (the float `0.234` is the double
/// `0.234`, as the log's stats and partition values write it, not the double nearest the
/// float's binary value).
fn prepared(column: &ColumnRef, array: &ArrayRef) -> Result<ArrayRef> {
    let array = if matches!(array.data_type(), ArrowType::Float16 | ArrowType::Float32) {
        let text = cast_with_options(array, &ArrowType::Utf8, &CastOptions::default())
            .map_err(|e| Error::arrow(format!("reading column '{}'", column.name), e))?;
        cast_with_options(&text, &ArrowType::Float64, &CastOptions::default())
            .map_err(|e| Error::arrow(format!("reading column '{}'", column.name), e))?
    } else {
        array.clone()
    };
    Ok(crate::column::normalize(&array))
}

/// The bound predicate lowered to the row filter's nodes: `IS NULL` as a kernel of its own,
/// `BETWEEN` as its two comparisons (`x >= low AND x <= high`, exact under three-valued
/// logic), literals kept as written for exact comparisons.
fn lower(node: &BoundNode) -> Node {
    match node {
        BoundNode::And(a, b) => Node::And(Box::new(lower(a)), Box::new(lower(b))),
        BoundNode::Or(a, b) => Node::Or(Box::new(lower(a)), Box::new(lower(b))),
        BoundNode::Not(a) => match a.as_ref() {
            BoundNode::IsNull(c) => Node::IsNull(*c, true),
            other => Node::Not(Box::new(lower(other))),
        },
        BoundNode::IsNull(c) => Node::IsNull(*c, false),
        BoundNode::Compare(c, op, value) => Node::Compare(*c, *op, value.literal.clone()),
        BoundNode::Between(c, low, high) => Node::And(
            Box::new(Node::Compare(*c, CompareOp::GtEq, low.literal.clone())),
            Box::new(Node::Compare(*c, CompareOp::LtEq, high.literal.clone())),
        ),
        BoundNode::In(c, values) => {
            Node::In(*c, values.iter().map(|v| v.literal.clone()).collect())
        }
    }
}

fn kleene(
    context: &str,
    result: std::result::Result<BooleanArray, deltalake::arrow::error::ArrowError>,
) -> Result<BooleanArray> {
    result.map_err(|e| Error::arrow(context.to_string(), e))
}

fn eval(
    node: &Node,
    columns: &[ColumnRef],
    values: &[Values],
    rows: usize,
) -> Result<BooleanArray> {
    match node {
        Node::And(a, b) => {
            let a = eval(a, columns, values, rows)?;
            let b = eval(b, columns, values, rows)?;
            kleene("evaluating AND", and_kleene(&a, &b))
        }
        Node::Or(a, b) => {
            let a = eval(a, columns, values, rows)?;
            let b = eval(b, columns, values, rows)?;
            kleene("evaluating OR", or_kleene(&a, &b))
        }
        Node::Not(a) => {
            let a = eval(a, columns, values, rows)?;
            kleene("evaluating NOT", not(&a))
        }
        Node::IsNull(c, negated) => match &values[*c] {
            Values::Array(array) => {
                let result = if *negated {
                    is_not_null(array.as_ref())
                } else {
                    is_null(array.as_ref())
                };
                kleene("evaluating IS NULL", result)
            }
            Values::Partition(value) => Ok(constant(Some(value.is_none() != *negated), rows)),
        },
        Node::Compare(c, op, literal) => compare(&columns[*c], &values[*c], *op, literal, rows),
        Node::In(c, literals) => {
            let mut result = constant(Some(false), rows);
            for literal in literals {
                let eq = compare(&columns[*c], &values[*c], CompareOp::Eq, literal, rows)?;
                result = kleene("evaluating IN", or_kleene(&result, &eq))?;
            }
            Ok(result)
        }
    }
}

/// `rows` copies of one truth value (`None`: unknown).
fn constant(value: Option<bool>, rows: usize) -> BooleanArray {
    BooleanArray::from(vec![value; rows])
}

/// The same truth value for every non-null row, null where the column is null.
fn for_non_null(array: &ArrayRef, value: bool) -> BooleanArray {
    (0..array.len())
        .map(|i| array.is_valid(i).then_some(value))
        .collect()
}

fn compare(
    column: &ColumnRef,
    values: &Values,
    op: CompareOp,
    literal: &Literal,
    rows: usize,
) -> Result<BooleanArray> {
    let array = match values {
        Values::Partition(value) => {
            let atom = Predicate::Compare {
                column: column.logical.clone(),
                op,
                value: literal.clone(),
            };
            let data_type = column.data_type.clone();
            let value = value.clone();
            let result = atom.evaluate(&|_| Ok((&data_type, value.as_deref())))?;
            return Ok(constant(result, rows));
        }
        Values::Array(array) => array,
    };
    let Some(typed) = typed_literal(&column.logical, &column.data_type, literal)? else {
        // A comparison with NULL is unknown for every row.
        return Ok(constant(None, rows));
    };
    let (op, scalar) = match scalar_for(array.data_type(), &typed, literal, op)? {
        Operand::Value(op, scalar) => (op, scalar),
        Operand::Constant(value) => return Ok(for_non_null(array, value)),
    };
    let datum = Scalar::new(scalar);
    let result = match op {
        CompareOp::Eq => cmp::eq(array, &datum),
        CompareOp::NotEq => cmp::neq(array, &datum),
        CompareOp::Lt => cmp::lt(array, &datum),
        CompareOp::LtEq => cmp::lt_eq(array, &datum),
        CompareOp::Gt => cmp::gt(array, &datum),
        CompareOp::GtEq => cmp::gt_eq(array, &datum),
    };
    result.map_err(|e| Error::arrow(format!("comparing column '{}'", column.name), e))
}

/// A literal made comparable with an array: a one-value array of the array's type and the
/// operator to apply (adjusted when the literal falls between two representable values), or
/// the comparison's result for every non-null row.
enum Operand {
    Value(CompareOp, ArrayRef),
    Constant(bool),
}

/// The comparison `x op v` for a literal `v` that lies strictly between the representable
/// values `below` and `above` (`below < v < above`): the operator over `below` or `above`
/// with the same rows, or a constant for `=` and `!=`.
fn between_representable(op: CompareOp) -> (Option<CompareOp>, bool, Option<bool>) {
    // (operator, use `above` (else `below`), constant)
    match op {
        CompareOp::Lt => (Some(CompareOp::LtEq), false, None),
        CompareOp::LtEq => (Some(CompareOp::LtEq), false, None),
        CompareOp::Gt => (Some(CompareOp::GtEq), true, None),
        CompareOp::GtEq => (Some(CompareOp::GtEq), true, None),
        CompareOp::Eq => (None, false, Some(false)),
        CompareOp::NotEq => (None, false, Some(true)),
    }
}

/// The result of `x op v` for every value `x` of a type when `v` lies above (`above` true)
/// or below all of them.
fn beyond_range(op: CompareOp, above: bool) -> bool {
    match op {
        CompareOp::Lt | CompareOp::LtEq => above,
        CompareOp::Gt | CompareOp::GtEq => !above,
        CompareOp::Eq => false,
        CompareOp::NotEq => true,
    }
}

fn scalar_for(
    data_type: &ArrowType,
    typed: &Typed,
    literal: &Literal,
    op: CompareOp,
) -> Result<Operand> {
    Ok(match data_type {
        ArrowType::Int8
        | ArrowType::Int16
        | ArrowType::Int32
        | ArrowType::Int64
        | ArrowType::UInt8
        | ArrowType::UInt16
        | ArrowType::UInt32
        | ArrowType::UInt64 => return int_operand(data_type, typed, literal, op),
        ArrowType::Float64 => {
            let Typed::Float(v) = typed else {
                return Err(unsupported(data_type, literal));
            };
            let v = crate::value::normalize_float(*v);
            Operand::Value(
                op,
                Arc::new(deltalake::arrow::array::Float64Array::from(vec![v])),
            )
        }
        ArrowType::Decimal128(precision, scale) => {
            return decimal_operand(data_type, (*precision, *scale), literal, op);
        }
        ArrowType::Date32 | ArrowType::Date64 => {
            let Typed::Date(d) = typed else {
                return Err(unsupported(data_type, literal));
            };
            let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)
                .ok_or_else(|| unsupported(data_type, literal))?;
            let days = i32::try_from(d.signed_duration_since(epoch).num_days())
                .map_err(|_| unsupported(data_type, literal))?;
            Operand::Value(
                op,
                cast_literal(Arc::new(Date32Array::from(vec![days])), data_type, literal)?,
            )
        }
        ArrowType::Timestamp(unit, zone) => {
            return timestamp_operand(data_type, (*unit, zone), typed, literal, op);
        }
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => {
            let Typed::Text(text) = typed else {
                return Err(unsupported(data_type, literal));
            };
            Operand::Value(
                op,
                cast_literal(
                    Arc::new(StringArray::from(vec![text.as_str()])),
                    data_type,
                    literal,
                )?,
            )
        }
        ArrowType::Boolean => {
            let Typed::Bool(b) = typed else {
                return Err(unsupported(data_type, literal));
            };
            Operand::Value(op, Arc::new(BooleanArray::from(vec![*b])))
        }
        _ => return Err(unsupported(data_type, literal)),
    })
}

/// A literal with no comparison on arrays of `data_type`: a bug, as binding typed it.
fn unsupported(data_type: &ArrowType, literal: &Literal) -> Error {
    Error::Internal(format!(
        "no row comparison for Arrow type {data_type} with literal {literal}"
    ))
}

/// A one-value `array` cast to `data_type` (an error, never a null, when the value does not
/// fit).
fn cast_literal(array: ArrayRef, data_type: &ArrowType, literal: &Literal) -> Result<ArrayRef> {
    if array.data_type() == data_type {
        return Ok(array);
    }
    cast_with_options(
        &array,
        data_type,
        &CastOptions {
            safe: false,
            ..CastOptions::default()
        },
    )
    .map_err(|e| Error::arrow(format!("preparing literal {literal}"), e))
}

/// [`scalar_for`] on an integer column: a literal outside the type's range makes the
/// comparison a constant.
fn int_operand(
    data_type: &ArrowType,
    typed: &Typed,
    literal: &Literal,
    op: CompareOp,
) -> Result<Operand> {
    let Typed::Int(v) = typed else {
        return Err(unsupported(data_type, literal));
    };
    let (min, max): (i128, i128) = match data_type {
        ArrowType::Int8 => (i128::from(i8::MIN), i128::from(i8::MAX)),
        ArrowType::Int16 => (i128::from(i16::MIN), i128::from(i16::MAX)),
        ArrowType::Int32 => (i128::from(i32::MIN), i128::from(i32::MAX)),
        ArrowType::Int64 => (i128::from(i64::MIN), i128::from(i64::MAX)),
        ArrowType::UInt8 => (0, i128::from(u8::MAX)),
        ArrowType::UInt16 => (0, i128::from(u16::MAX)),
        ArrowType::UInt32 => (0, i128::from(u32::MAX)),
        _ => (0, i128::from(u64::MAX)),
    };
    if *v > max {
        return Ok(Operand::Constant(beyond_range(op, true)));
    }
    if *v < min {
        return Ok(Operand::Constant(beyond_range(op, false)));
    }
    let array: ArrayRef = match i64::try_from(*v) {
        Ok(v) => Arc::new(Int64Array::from(vec![v])),
        // Only u64 values above i64::MAX get here.
        Err(_) => Arc::new(deltalake::arrow::array::UInt64Array::from(vec![
            u64::try_from(*v).map_err(|_| unsupported(data_type, literal))?,
        ])),
    };
    Ok(Operand::Value(op, cast_literal(array, data_type, literal)?))
}

/// [`scalar_for`] on a decimal column of `(precision, scale)`: the literal's digits at the
/// column's scale, exactly, with the operator adjusted when it falls between two
/// representable values.
fn decimal_operand(
    data_type: &ArrowType,
    (precision, scale): (u8, i8),
    literal: &Literal,
    op: CompareOp,
) -> Result<Operand> {
    let text = match literal {
        Literal::Number(t) | Literal::String(t) => t.trim().to_string(),
        _ => return Err(unsupported(data_type, literal)),
    };
    let (value, exact_below) = match decimal_at_scale(&text, i32::from(scale))
        .ok_or_else(|| unsupported(data_type, literal))?
    {
        // Beyond every value an i128 holds at the column's scale.
        Err(positive) => return Ok(Operand::Constant(beyond_range(op, positive))),
        Ok((value, true)) => (value, None),
        // More fractional digits than the column keeps: floored to its scale.
        Ok((floor, false)) => (floor, Some(floor)),
    };
    let limit = 10i128
        .checked_pow(u32::from(precision))
        .unwrap_or(i128::MAX);
    let (op, value) = match exact_below {
        None => (op, value),
        Some(below) => match between_representable(op) {
            (_, _, Some(constant)) => return Ok(Operand::Constant(constant)),
            (Some(new_op), true, None) => (new_op, below.saturating_add(1)),
            (Some(new_op), false, None) => (new_op, below),
            (None, _, None) => return Err(unsupported(data_type, literal)),
        },
    };
    if value >= limit {
        return Ok(Operand::Constant(beyond_range(op, true)));
    }
    if value <= -limit {
        return Ok(Operand::Constant(beyond_range(op, false)));
    }
    let array = Decimal128Array::from(vec![value])
        .with_precision_and_scale(precision, scale)
        .map_err(|e| Error::arrow(format!("preparing literal {literal}"), e))?;
    Ok(Operand::Value(op, Arc::new(array)))
}

/// [`scalar_for`] on a timestamp column of `unit` and time zone `zone`: microseconds, at the
/// column's unit, with the operator adjusted when the literal falls between two of its values.
fn timestamp_operand(
    data_type: &ArrowType,
    (unit, zone): (TimeUnit, &Option<Arc<str>>),
    typed: &Typed,
    literal: &Literal,
    op: CompareOp,
) -> Result<Operand> {
    let Typed::Timestamp(t) = typed else {
        return Err(unsupported(data_type, literal));
    };
    let micros = t.and_utc().timestamp_micros();
    let array: ArrayRef = match unit {
        TimeUnit::Microsecond => {
            Arc::new(TimestampMicrosecondArray::from(vec![micros]).with_timezone_opt(zone.clone()))
        }
        TimeUnit::Nanosecond => {
            let Some(nanos) = micros.checked_mul(1000) else {
                return Ok(Operand::Constant(beyond_range(op, micros > 0)));
            };
            Arc::new(
                deltalake::arrow::array::TimestampNanosecondArray::from(vec![nanos])
                    .with_timezone_opt(zone.clone()),
            )
        }
        TimeUnit::Millisecond | TimeUnit::Second => {
            let per = if matches!(unit, TimeUnit::Millisecond) {
                1_000
            } else {
                1_000_000
            };
            let below = micros.div_euclid(per);
            let exact = micros.rem_euclid(per) == 0;
            let (op, value) = if exact {
                (op, below)
            } else {
                match between_representable(op) {
                    (_, _, Some(constant)) => return Ok(Operand::Constant(constant)),
                    (Some(new_op), true, None) => (new_op, below.saturating_add(1)),
                    (Some(new_op), false, None) => (new_op, below),
                    (None, _, None) => return Err(unsupported(data_type, literal)),
                }
            };
            let array: ArrayRef = if matches!(unit, TimeUnit::Millisecond) {
                Arc::new(
                    deltalake::arrow::array::TimestampMillisecondArray::from(vec![value])
                        .with_timezone_opt(zone.clone()),
                )
            } else {
                Arc::new(
                    deltalake::arrow::array::TimestampSecondArray::from(vec![value])
                        .with_timezone_opt(zone.clone()),
                )
            };
            return Ok(Operand::Value(op, array));
        }
    };
    Ok(Operand::Value(op, array))
}

/// A decimal literal (`-1.25`, `.5`, `3e2`) in units of `10^-scale`: `Ok((floor, exact))`,
/// the literal rounded down to the scale and whether that lost nothing; `Err(positive)` when
/// it lies beyond every value an `i128` holds at that scale (a literal of 39 or more
/// significant digits, say), above when `positive`; `None` when it is not a number. Works on
/// the digits as text, so no literal is too long.
fn decimal_at_scale(text: &str, scale: i32) -> Option<std::result::Result<(i128, bool), bool>> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i64>().ok()?),
        None => (body, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if (whole.is_empty() && fraction.is_empty())
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some(Ok((0, true)));
    }
    let too_large = Err(!negative);
    // Digits to add (positive) or drop (negative) to reach the scale.
    let Ok(fraction_len) = i64::try_from(fraction.len()) else {
        return Some(too_large);
    };
    let shift = i64::from(scale) - (fraction_len - exponent);
    let parse = |digits: &str| -> Option<i128> {
        digits.bytes().try_fold(0i128, |n, b| {
            n.checked_mul(10)?.checked_add(i128::from(b - b'0'))
        })
    };
    let (kept, exact) = if shift >= 0 {
        let factor = u32::try_from(shift)
            .ok()
            .and_then(|s| 10i128.checked_pow(s));
        match factor.and_then(|f| parse(digits)?.checked_mul(f)) {
            Some(v) => (v, true),
            None => return Some(too_large),
        }
    } else {
        let drop = usize::try_from(shift.unsigned_abs()).unwrap_or(usize::MAX);
        let keep = digits.len().saturating_sub(drop);
        let (kept, dropped) = digits.split_at(keep);
        match parse(kept) {
            Some(v) => (v, dropped.bytes().all(|b| b == b'0')),
            None => return Some(too_large),
        }
    };
    Some(Ok(match (negative, exact) {
        (false, _) => (kept, exact),
        (true, true) => (-kept, true),
        (true, false) => (-kept - 1, false),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_literals_parse_exactly() {
        assert_eq!(decimal_at_scale("-1.250", 3), Some(Ok((-1250, true))));
        assert_eq!(decimal_at_scale("-1.25", 1), Some(Ok((-13, false))));
        assert_eq!(decimal_at_scale("1.25", 1), Some(Ok((12, false))));
        assert_eq!(decimal_at_scale(".5", 2), Some(Ok((50, true))));
        assert_eq!(decimal_at_scale("7", 0), Some(Ok((7, true))));
        assert_eq!(decimal_at_scale("3e2", 0), Some(Ok((300, true))));
        assert_eq!(decimal_at_scale("1.5e2", 1), Some(Ok((1500, true))));
        assert_eq!(decimal_at_scale("-2E-3", 3), Some(Ok((-2, true))));
        assert_eq!(decimal_at_scale("-2E-3", 2), Some(Ok((-1, false))));
        assert_eq!(decimal_at_scale("0e400", 2), Some(Ok((0, true))));
        assert_eq!(decimal_at_scale("1e400", 2), Some(Err(true)));
        assert_eq!(decimal_at_scale("1e-400", 2), Some(Ok((0, false))));
        assert_eq!(decimal_at_scale("1e", 0), None);
        assert_eq!(decimal_at_scale("e5", 0), None);
        assert_eq!(decimal_at_scale(".", 0), None);
        // 39 and more digits: beyond i128 as a whole, or rounded down at a small scale.
        let nines = "9".repeat(39);
        assert_eq!(decimal_at_scale(&nines, 2), Some(Err(true)));
        assert_eq!(decimal_at_scale(&format!("-{nines}"), 0), Some(Err(false)));
        assert_eq!(
            decimal_at_scale(&format!("0.{nines}"), 2),
            Some(Ok((99, false)))
        );
        assert_eq!(
            decimal_at_scale(&format!("0000000001.{}", "0".repeat(45)), 2),
            Some(Ok((100, true)))
        );
    }

    #[test]
    fn ranges_of_out_of_range_literals() {
        assert!(beyond_range(CompareOp::Lt, true));
        assert!(!beyond_range(CompareOp::Gt, true));
        assert!(beyond_range(CompareOp::Gt, false));
        assert!(!beyond_range(CompareOp::Eq, false));
        assert!(beyond_range(CompareOp::NotEq, false));
        assert!(beyond_range(CompareOp::NotEq, true));
        assert!(beyond_range(CompareOp::LtEq, true));
        assert!(!beyond_range(CompareOp::GtEq, true));
    }
}
