//! Typed values of a column: partition values, literals and stats bounds parsed as the
//! column's Delta type, compared in the type's SQL order. Shared by the predicate language
//! (`--where`), pruning (`report`) and `verify`.
//!
//! Source: PROTOCOL.md "Partition Value Serialization" and "Per-file Statistics" (how values
//! are written as strings); Spark's ordering of each type.

use std::cmp::Ordering;

use chrono::{Datelike, NaiveDate, NaiveDateTime};
use deltalake::kernel::{DataType, PrimitiveType};

/// A value of a column's type, for comparisons. Order within each variant is the SQL order of
/// the Delta type (Spark's): integers and dates numerically, floats by `f64::total_cmp` once
/// normalized (every NaN equals NaN and sorts above +inf, -0.0 equals 0.0), decimals as the
/// nearest `f64` (rounding is monotonic, so data skipping on it stays sound), strings and
/// binary byte-wise (UTF-8), booleans false < true, timestamps by their microseconds.
#[derive(Debug, Clone, PartialEq)]
pub enum Typed {
    /// byte, short, integer, long.
    Int(i128),
    /// float, double, decimal.
    Float(f64),
    /// string, binary.
    Text(String),
    /// boolean.
    Bool(bool),
    /// date.
    Date(NaiveDate),
    /// timestamp (UTC) and timestamp_ntz, microsecond precision.
    Timestamp(NaiveDateTime),
}

impl Typed {
    /// Compares two values of the same variant; `None` across variants.
    #[must_use]
    pub fn compare(&self, other: &Self) -> Option<Ordering> {
        Some(match (self, other) {
            (Self::Int(a), Self::Int(b)) => a.cmp(b),
            (Self::Float(a), Self::Float(b)) => normalize_float(*a).total_cmp(&normalize_float(*b)),
            (Self::Text(a), Self::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Self::Bool(a), Self::Bool(b)) => a.cmp(b),
            (Self::Date(a), Self::Date(b)) => a.cmp(b),
            (Self::Timestamp(a), Self::Timestamp(b)) => a.cmp(b),
            _ => return None,
        })
    }
}

impl Typed {
    /// An integer whose order is [`Typed::compare`]'s among values of the same variant
    /// (equal keys exactly when `compare` says equal), for sorting many values by key instead
    /// of by comparison; `None` for text, whose order is by bytes, and for timestamps out of
    /// the nanosecond range.
    #[must_use]
    pub fn order_key(&self) -> Option<i128> {
        Some(match self {
            Self::Int(v) => *v,
            Self::Float(x) => {
                // f64::total_cmp's key: the bits, with all but the sign flipped below zero.
                let bits = normalize_float(*x).to_bits().cast_signed();
                i128::from(bits ^ (((bits >> 63).cast_unsigned()) >> 1).cast_signed())
            }
            Self::Bool(b) => i128::from(*b),
            Self::Date(d) => i128::from(d.num_days_from_ce()),
            Self::Timestamp(t) => i128::from(t.and_utc().timestamp_nanos_opt()?),
            Self::Text(_) => return None,
        })
    }
}

/// Maps -0.0 to 0.0 and every NaN to the one positive NaN, so `total_cmp` gives SQL order.
#[must_use]
pub fn normalize_float(x: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else if x.is_nan() {
        f64::NAN
    } else {
        x
    }
}

/// Parses `text` (a partition value string, a literal's text or a stats value) as
/// `data_type`; `None` when it does not parse or the type is not comparable (arrays, maps,
/// structs, variants).
#[must_use]
pub fn parse_typed(data_type: &DataType, text: &str) -> Option<Typed> {
    let DataType::Primitive(p) = data_type else {
        return None;
    };
    // Strings keep their spaces: ' z' < 'a'. Other types forgive surrounding spaces.
    if matches!(p, PrimitiveType::String | PrimitiveType::Binary) {
        return Some(Typed::Text(text.to_string()));
    }
    let text = text.trim();
    match p {
        PrimitiveType::Byte
        | PrimitiveType::Short
        | PrimitiveType::Integer
        | PrimitiveType::Long => text.parse::<i128>().ok().map(Typed::Int),
        PrimitiveType::Float | PrimitiveType::Double | PrimitiveType::Decimal(_) => {
            text.parse::<f64>().ok().map(Typed::Float)
        }
        PrimitiveType::String | PrimitiveType::Binary => unreachable!("handled above"),
        PrimitiveType::Boolean => match text.to_ascii_lowercase().as_str() {
            "true" => Some(Typed::Bool(true)),
            "false" => Some(Typed::Bool(false)),
            _ => None,
        },
        PrimitiveType::Date => iso_date(text)
            .or_else(|| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok())
            .map(Typed::Date),
        PrimitiveType::Timestamp | PrimitiveType::TimestampNtz => parse_timestamp(text),
        _ => None,
    }
}

/// `YYYY-MM-DD` exactly (the form writers put in stats), read without a format parser;
/// `None` for any other text, which the caller then parses in full.
fn iso_date(text: &str) -> Option<NaiveDate> {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        b[range].iter().try_fold(0u32, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    let year = i32::try_from(digits(0..4)?).ok()?;
    NaiveDate::from_ymd_opt(year, digits(5..7)?, digits(8..10)?)
}

fn parse_timestamp(text: &str) -> Option<Typed> {
    // An ISO 8601 time with an offset (stats, UTC-adjusted partition values) is moved to UTC.
    if let Ok(ts) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(Typed::Timestamp(ts.naive_utc()));
    }
    let text = text.trim_end_matches('Z');
    let text = text.strip_suffix("+00:00").unwrap_or(text);
    for format in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(ts) = NaiveDateTime::parse_from_str(text, format) {
            return Some(Typed::Timestamp(ts));
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(Typed::Timestamp)
}
