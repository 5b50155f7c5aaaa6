//! Exact conversion of a decoded column to the type the table declares.
//!
//! A data file may store a column in another physical type than the table's schema names:
//! an older writer's encoding (INT96 timestamps, milliseconds, unannotated byte arrays), a
//! narrower integer before a type widening, a decimal of smaller precision. Such a column is
//! converted only when every value survives unchanged; anything else is an error that names
//! the column and both types, so a value is never written changed or silently set to null
//! (Arrow's `cast` in its default "safe" mode turns values that do not convert into nulls,
//! which is why it is never used here without `safe: false` and a type check first).
//!
//! What is converted (source type in the file -> type of the table's column):
//!
//! | file | table | how |
//! |---|---|---|
//! | any integer | a wider integer (`Int32` -> `Int64`, `UInt16` -> `Int32`, ...) | exact |
//! | `Int32` | `Int8`, `Int16` (Parquet stores byte and short as INT32) | each value checked |
//! | integer of at most 32 bits | `Float64` | exact (PROTOCOL.md "Type Widening") |
//! | integer | `Decimal128(p, s)` with `p - s` >= the integer's digits | exact |
//! | `Float32` | `Float64` | exact |
//! | decimal `(p1, s1)` | `Decimal128(p2, s2)`, `s2 >= s1`, `p2 - s2 >= p1 - s1` | exact |
//! | `Date32` | `Timestamp(µs, none)` (date -> `timestamp_ntz`) | exact |
//! | timestamp in s, ms or µs, any zone | `Timestamp(µs, zone)` | exact, overflow checked |
//! | timestamp in ns | `Timestamp(µs, zone)` | only when no value has sub-µs digits |
//! | string, large string, string view | `Utf8` | exact |
//! | binary of any layout | `Binary` | exact |
//! | binary | `Utf8` (unannotated strings) | each value checked to be UTF-8 |
//! | `Null`, dictionary of `T` | `T`'s conversions | exact |
//!
//! A timestamp's zone annotation never changes its stored value: Delta `timestamp` values
//! are UTC instants whatever the file says (PROTOCOL.md "Primitive Types" requires
//! `isAdjustedToUTC`, and legacy INT96 has no zone), so the microseconds are kept as they are.
//!
//! INT96 timestamps are decoded straight to microseconds (see [`int96_as_micros`]), never
//! through 64-bit nanoseconds, which wrap outside the years 1677 to 2262.

use std::sync::Arc;

use deltalake::arrow::array::{
    Array, ArrayRef, AsArray, PrimitiveArray, TimestampMicrosecondArray, new_null_array,
};
use deltalake::arrow::compute::{CastOptions, cast_with_options};
use deltalake::arrow::datatypes::{
    DataType as ArrowType, Field, FieldRef, Schema, SchemaRef, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
};
use deltalake::parquet::basic::Type as PhysicalType;
use deltalake::parquet::schema::types::SchemaDescriptor;

/// Why a column could not be converted exactly; the caller adds the file and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inexact(pub String);

const EXACT: CastOptions<'static> = CastOptions {
    safe: false,
    format_options: deltalake::arrow::util::display::FormatOptions::new(),
};

/// Converts `array` to `target` when every value survives unchanged.
///
/// # Errors
/// [`Inexact`] saying which conversion is refused, or which value does not fit.
pub(crate) fn convert_exact(array: &ArrayRef, target: &ArrowType) -> Result<ArrayRef, Inexact> {
    let source = array.data_type();
    if source == target {
        return Ok(array.clone());
    }
    let refused = || {
        Inexact(format!(
            "is stored as {source} but the table declares {target}, and that conversion could change values (only exact widenings are applied)"
        ))
    };
    if let ArrowType::Dictionary(_, values) = source {
        let plain = cast_with_options(array, values, &EXACT).map_err(|e| Inexact(e.to_string()))?;
        return convert_exact(&plain, target);
    }
    if *source == ArrowType::Null {
        return Ok(new_null_array(target, array.len()));
    }
    let checked = |array: &ArrayRef| {
        cast_with_options(array, target, &EXACT).map_err(|e| {
            Inexact(format!(
                "is stored as {source} and holds a value that does not fit the table's type {target}: {e}"
            ))
        })
    };
    match (source, target) {
        (s, t) if s.is_integer() && t.is_integer() => {
            let widening = integer_range(s)
                .zip(integer_range(t))
                .is_some_and(|((slo, shi), (tlo, thi))| tlo <= slo && shi <= thi);
            let parquet_int32 =
                *s == ArrowType::Int32 && matches!(t, ArrowType::Int8 | ArrowType::Int16);
            if widening || parquet_int32 {
                checked(array)
            } else {
                Err(refused())
            }
        }
        (s, ArrowType::Float64) if s.is_integer() => {
            if integer_digits(s).is_some_and(|d| d <= 10) {
                checked(array)
            } else {
                Err(refused())
            }
        }
        (ArrowType::Float32, ArrowType::Float64) => checked(array),
        (s, ArrowType::Decimal128(p, scale)) if s.is_integer() => {
            let whole = i16::from(*p) - i16::from(*scale);
            match integer_digits(s) {
                Some(d) if i16::from(d) <= whole => checked(array),
                _ => Err(refused()),
            }
        }
        (
            ArrowType::Decimal32(p1, s1)
            | ArrowType::Decimal64(p1, s1)
            | ArrowType::Decimal128(p1, s1)
            | ArrowType::Decimal256(p1, s1),
            ArrowType::Decimal128(p2, s2),
        ) => {
            if s2 >= s1 && i16::from(*p2) - i16::from(*s2) >= i16::from(*p1) - i16::from(*s1) {
                checked(array)
            } else {
                Err(refused())
            }
        }
        (ArrowType::Date32, ArrowType::Timestamp(TimeUnit::Microsecond, None)) => checked(array),
        (ArrowType::Timestamp(unit, _), ArrowType::Timestamp(TimeUnit::Microsecond, zone)) => {
            timestamp_to_micros(array, *unit, zone.clone())
        }
        (
            ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View,
            ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View,
        )
        | (
            ArrowType::Binary
            | ArrowType::LargeBinary
            | ArrowType::BinaryView
            | ArrowType::FixedSizeBinary(_),
            ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView,
        )
        | (
            ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView,
            ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View,
        )
        | (
            ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View,
            ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView,
        ) => checked(array),
        _ => Err(refused()),
    }
}

/// The closed range of an integer type, as i128.
fn integer_range(t: &ArrowType) -> Option<(i128, i128)> {
    Some(match t {
        ArrowType::Int8 => (i128::from(i8::MIN), i128::from(i8::MAX)),
        ArrowType::Int16 => (i128::from(i16::MIN), i128::from(i16::MAX)),
        ArrowType::Int32 => (i128::from(i32::MIN), i128::from(i32::MAX)),
        ArrowType::Int64 => (i128::from(i64::MIN), i128::from(i64::MAX)),
        ArrowType::UInt8 => (0, i128::from(u8::MAX)),
        ArrowType::UInt16 => (0, i128::from(u16::MAX)),
        ArrowType::UInt32 => (0, i128::from(u32::MAX)),
        ArrowType::UInt64 => (0, i128::from(u64::MAX)),
        _ => return None,
    })
}

/// The decimal digits an integer type needs for its whole range.
fn integer_digits(t: &ArrowType) -> Option<u8> {
    Some(match t {
        ArrowType::Int8 | ArrowType::UInt8 => 3,
        ArrowType::Int16 | ArrowType::UInt16 => 5,
        ArrowType::Int32 | ArrowType::UInt32 => 10,
        ArrowType::Int64 => 19,
        ArrowType::UInt64 => 20,
        _ => return None,
    })
}

/// Rescales a timestamp array to microseconds, keeping every value exactly or failing.
fn timestamp_to_micros(
    array: &ArrayRef,
    unit: TimeUnit,
    zone: Option<Arc<str>>,
) -> Result<ArrayRef, Inexact> {
    fn scale<T: deltalake::arrow::datatypes::ArrowPrimitiveType<Native = i64>>(
        array: &ArrayRef,
        f: impl Fn(i64) -> Result<i64, String>,
    ) -> Result<PrimitiveArray<TimestampMicrosecondType>, Inexact> {
        let typed = array.as_primitive::<T>();
        let values = typed
            .values()
            .iter()
            .enumerate()
            .map(|(i, &v)| if typed.is_null(i) { Ok(0) } else { f(v) })
            .collect::<Result<Vec<i64>, String>>()
            .map_err(Inexact)?;
        Ok(TimestampMicrosecondArray::new(
            values.into(),
            typed.nulls().cloned(),
        ))
    }
    let overflow = |v: i64, what: &str| {
        format!("holds the timestamp {v} {what}, which overflows 64-bit microseconds")
    };
    let micros = match unit {
        TimeUnit::Second => scale::<TimestampSecondType>(array, |v| {
            v.checked_mul(1_000_000)
                .ok_or_else(|| overflow(v, "seconds"))
        })?,
        TimeUnit::Millisecond => scale::<TimestampMillisecondType>(array, |v| {
            v.checked_mul(1_000)
                .ok_or_else(|| overflow(v, "milliseconds"))
        })?,
        TimeUnit::Microsecond => scale::<TimestampMicrosecondType>(array, Ok)?,
        TimeUnit::Nanosecond => scale::<TimestampNanosecondType>(array, |v| {
            if v % 1_000 == 0 {
                Ok(v / 1_000)
            } else {
                Err(format!(
                    "holds the timestamp {v} ns, whose sub-microsecond digits a Delta timestamp (microseconds) cannot hold"
                ))
            }
        })?,
    };
    Ok(Arc::new(micros.with_timezone_opt(zone)))
}

/// The schema to decode a Parquet file with so that INT96 timestamps come out as
/// microseconds: `inferred` (the reader's default Arrow schema of the file) with every leaf
/// stored as INT96 turned from `Timestamp(ns)` into `Timestamp(µs)`. `Ok(None)` when the
/// file has no INT96 column (decode as inferred).
///
/// Leaves of the Arrow schema follow the Parquet columns one to one, in order (the reader
/// derives one from the other depth first), and the Parquet reader checks the result again.
///
/// # Errors
/// [`Inexact`] when the file has INT96 columns but the leaves do not line up: decoding it as
/// inferred would wrap values outside the years 1677 to 2262.
///
/// Source: the Parquet format's INT96 (Julian day + nanoseconds of the day); arrow-rs reads
/// it as 64-bit nanoseconds unless a schema asks for another unit.
pub(crate) fn int96_as_micros(
    parquet: &SchemaDescriptor,
    inferred: &SchemaRef,
) -> Result<Option<SchemaRef>, Inexact> {
    let int96: Vec<bool> = parquet
        .columns()
        .iter()
        .map(|c| c.physical_type() == PhysicalType::INT96)
        .collect();
    if !int96.contains(&true) {
        return Ok(None);
    }
    let mut next = 0;
    let fields: Vec<FieldRef> = inferred
        .fields()
        .iter()
        .map(|f| Arc::new(hint_field(f, &int96, &mut next)))
        .collect();
    if next != int96.len() {
        return Err(Inexact(format!(
            "has INT96 timestamps in a layout delta-layout cannot map to its Arrow schema ({next} leaves for {} Parquet columns), so they cannot be read without wrapping",
            int96.len()
        )));
    }
    Ok(Some(Arc::new(Schema::new_with_metadata(
        fields,
        inferred.metadata().clone(),
    ))))
}

fn hint_field(field: &Field, int96: &[bool], next: &mut usize) -> Field {
    let data_type = hint_type(field.data_type(), int96, next);
    field.clone().with_data_type(data_type)
}

fn hint_type(data_type: &ArrowType, int96: &[bool], next: &mut usize) -> ArrowType {
    match data_type {
        ArrowType::Struct(fields) => ArrowType::Struct(
            fields
                .iter()
                .map(|f| Arc::new(hint_field(f, int96, next)))
                .collect(),
        ),
        ArrowType::List(item) => ArrowType::List(Arc::new(hint_field(item, int96, next))),
        ArrowType::LargeList(item) => ArrowType::LargeList(Arc::new(hint_field(item, int96, next))),
        ArrowType::FixedSizeList(item, n) => {
            ArrowType::FixedSizeList(Arc::new(hint_field(item, int96, next)), *n)
        }
        ArrowType::Map(entries, sorted) => {
            ArrowType::Map(Arc::new(hint_field(entries, int96, next)), *sorted)
        }
        leaf => {
            let is_int96 = int96.get(*next).copied().unwrap_or(false);
            *next += 1;
            match leaf {
                ArrowType::Timestamp(TimeUnit::Nanosecond, zone) if is_int96 => {
                    ArrowType::Timestamp(TimeUnit::Microsecond, zone.clone())
                }
                other => other.clone(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deltalake::arrow::array::{
        BinaryArray, Date32Array, Decimal128Array, Float32Array, Int32Array, Int64Array,
        StringArray, TimestampMillisecondArray, TimestampNanosecondArray,
    };

    fn arc(a: impl Array + 'static) -> ArrayRef {
        Arc::new(a)
    }

    #[test]
    fn narrowing_an_integer_is_refused_not_nulled() {
        let wide = arc(Int64Array::from(vec![
            Some((1i64 << 40) + 7),
            None,
            Some(3),
        ]));
        let err = convert_exact(&wide, &ArrowType::Int32).unwrap_err();
        assert!(
            err.0.contains("Int64") && err.0.contains("Int32"),
            "{}",
            err.0
        );
        let text = arc(StringArray::from(vec!["str426"]));
        assert!(convert_exact(&text, &ArrowType::Int32).is_err());
        let float = arc(deltalake::arrow::array::Float64Array::from(vec![1.5]));
        assert!(convert_exact(&float, &ArrowType::Int64).is_err());
        assert!(convert_exact(&float, &ArrowType::Float32).is_err());
        let long = arc(Int64Array::from(vec![1i64 << 60]));
        assert!(convert_exact(&long, &ArrowType::Float64).is_err());
    }

    #[test]
    fn widenings_keep_every_value() {
        let narrow = arc(Int32Array::from(vec![Some(i32::MIN), None, Some(i32::MAX)]));
        let wide = convert_exact(&narrow, &ArrowType::Int64).unwrap();
        assert_eq!(
            wide.as_primitive::<deltalake::arrow::datatypes::Int64Type>()
                .iter()
                .collect::<Vec<_>>(),
            vec![Some(i64::from(i32::MIN)), None, Some(i64::from(i32::MAX))]
        );
        // Parquet INT32 read for a byte column: values checked one by one.
        let small = arc(Int32Array::from(vec![-128, 127]));
        assert!(convert_exact(&small, &ArrowType::Int8).is_ok());
        let big = arc(Int32Array::from(vec![128]));
        assert!(convert_exact(&big, &ArrowType::Int8).is_err());
        let float = arc(Float32Array::from(vec![0.1f32]));
        let double = convert_exact(&float, &ArrowType::Float64).unwrap();
        assert_eq!(
            double
                .as_primitive::<deltalake::arrow::datatypes::Float64Type>()
                .value(0),
            f64::from(0.1f32)
        );
        let dec = arc(Decimal128Array::from(vec![12_345i128, -99_999])
            .with_precision_and_scale(5, 2)
            .unwrap());
        let wider = convert_exact(&dec, &ArrowType::Decimal128(10, 4)).unwrap();
        assert_eq!(
            wider
                .as_primitive::<deltalake::arrow::datatypes::Decimal128Type>()
                .values()
                .to_vec(),
            vec![1_234_500, -9_999_900]
        );
        assert!(convert_exact(&dec, &ArrowType::Decimal128(5, 1)).is_err());
        assert!(convert_exact(&dec, &ArrowType::Decimal128(5, 3)).is_err());
        let ints = arc(Int32Array::from(vec![i32::MAX]));
        assert!(convert_exact(&ints, &ArrowType::Decimal128(10, 0)).is_ok());
        assert!(convert_exact(&ints, &ArrowType::Decimal128(10, 1)).is_err());
        let days = arc(Date32Array::from(vec![-700_000, 2_900_000]));
        let ts = convert_exact(&days, &ArrowType::Timestamp(TimeUnit::Microsecond, None)).unwrap();
        // A date past year 294,247 does not fit 64-bit microseconds: an error, not a wrap.
        let far = arc(Date32Array::from(vec![i32::MAX]));
        assert!(convert_exact(&far, &ArrowType::Timestamp(TimeUnit::Microsecond, None)).is_err());
        assert_eq!(
            ts.as_primitive::<TimestampMicrosecondType>().value(0),
            -700_000 * 86_400_000_000
        );
    }

    #[test]
    fn timestamps_rescale_exactly_or_fail() {
        let utc = ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        // Year 1600 and 2300 in milliseconds: outside the nanosecond range, inside µs.
        let millis = arc(TimestampMillisecondArray::from(vec![
            -11_676_096_000_000,
            10_413_792_000_123,
        ]));
        let micros = convert_exact(&millis, &utc).unwrap();
        assert_eq!(
            micros
                .as_primitive::<TimestampMicrosecondType>()
                .values()
                .to_vec(),
            vec![-11_676_096_000_000_000, 10_413_792_000_123_000]
        );
        assert_eq!(micros.data_type(), &utc);
        let overflow = arc(TimestampMillisecondArray::from(vec![i64::MAX / 10]));
        assert!(convert_exact(&overflow, &utc).is_err());
        let nanos = arc(TimestampNanosecondArray::from(vec![1_000, 2_000]));
        assert!(convert_exact(&nanos, &utc).is_ok());
        let sub = arc(TimestampNanosecondArray::from(vec![1_001]));
        assert!(
            convert_exact(&sub, &utc)
                .unwrap_err()
                .0
                .contains("sub-microsecond")
        );
    }

    #[test]
    fn strings_and_binary() {
        let bytes = arc(BinaryArray::from(vec![&b"ok"[..]]));
        assert!(convert_exact(&bytes, &ArrowType::Utf8).is_ok());
        let bad = arc(BinaryArray::from(vec![&[0xffu8, 0xfe][..]]));
        assert!(convert_exact(&bad, &ArrowType::Utf8).is_err());
        let text = arc(StringArray::from(vec!["x"]));
        assert!(convert_exact(&text, &ArrowType::Boolean).is_err());
    }
}
