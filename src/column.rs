//! Column names as users write them: Spark SQL's multipart identifiers.
//!
//! `a.b` is field `b` of struct `a`; a back-quoted part is one name whatever it holds, so
//! `` `a.b` `` is the top-level column named `a.b` and `` `a`.`b.c` `` is field `b.c` of `a`
//! (a back quote inside back quotes is doubled). Lists of columns are separated by commas
//! outside back quotes. Names are printed back in the same form ([`format_path`]), quoting
//! only the parts that need it, so what the output shows can be pasted into an option.
//!
//! Source: Spark SQL's identifier grammar (`multipartIdentifier`, `quoteIfNeeded`), which
//! Delta uses for `delta.dataSkippingStatsColumns` and clustering columns.

use std::sync::Arc;

use deltalake::arrow::array::{
    Array as _, ArrayRef, AsArray as _, Float32Array, Float64Array, RecordBatch, StructArray,
};
use deltalake::arrow::buffer::NullBuffer;
use deltalake::arrow::datatypes::{DataType, Float32Type, Float64Type};

use crate::error::{Error, Result};

/// Splits a column name into its path, one element per nesting level.
///
/// # Errors
/// A message saying what is wrong: an empty name or part, an unterminated back quote, or
/// text after a closing back quote that is not a dot.
pub fn parse_path(text: &str) -> Result<Vec<String>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("a column name is empty".into());
    }
    let chars: Vec<char> = text.chars().collect();
    let mut parts = Vec::new();
    let mut i = 0;
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        let mut part = String::new();
        if chars.get(i) == Some(&'`') {
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(format!("unterminated back quote in column name {text}")),
                    Some('`') if chars.get(i + 1) == Some(&'`') => {
                        part.push('`');
                        i += 2;
                    }
                    Some('`') => {
                        i += 1;
                        break;
                    }
                    Some(&c) => {
                        part.push(c);
                        i += 1;
                    }
                }
            }
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            if i < chars.len() && chars[i] != '.' {
                return Err(format!(
                    "unexpected '{}' after a back-quoted name in column name {text}",
                    chars[i]
                ));
            }
        } else {
            while i < chars.len() && chars[i] != '.' {
                if chars[i] == '`' {
                    return Err(format!(
                        "a back quote must open a whole name part in column name {text}"
                    ));
                }
                part.push(chars[i]);
                i += 1;
            }
            part = part.trim().to_string();
            if part.is_empty() {
                return Err(format!("column name {text} has an empty part"));
            }
        }
        parts.push(part);
        if i >= chars.len() {
            return Ok(parts);
        }
        // chars[i] == '.'
        i += 1;
        if i >= chars.len() {
            return Err(format!("column name {text} ends with a dot"));
        }
    }
}

/// Splits a comma-separated list of column names (commas inside back quotes belong to the
/// name); each name is trimmed, empty entries are dropped. Names are not parsed further.
///
/// # Errors
/// A message naming the list when a back quote is not closed.
pub fn split_list(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '`' => {
                quoted = !quoted;
                current.push(c);
            }
            ',' if !quoted => {
                out.push(std::mem::take(&mut current));
            }
            _ => current.push(c),
        }
    }
    if quoted {
        return Err(format!("unterminated back quote in column list {text}"));
    }
    out.push(current);
    Ok(out
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect())
}

/// Parses every name of a list ([`split_list`], then [`parse_path`]).
///
/// # Errors
/// As [`split_list`] and [`parse_path`].
pub fn parse_list(text: &str) -> Result<Vec<Vec<String>>, String> {
    split_list(text)?.iter().map(|n| parse_path(n)).collect()
}

/// Prints a column path so that [`parse_path`] reads it back: parts joined by dots, a part
/// back-quoted unless it is a plain identifier (ASCII letters, digits and `_`, not digits
/// alone), as Spark's `quoteIfNeeded` does.
#[must_use]
pub fn format_path(parts: &[String]) -> String {
    parts
        .iter()
        .map(|p| quote_if_needed(p))
        .collect::<Vec<_>>()
        .join(".")
}

fn quote_if_needed(part: &str) -> String {
    let plain = !part.is_empty()
        && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !part.chars().all(|c| c.is_ascii_digit());
    if plain {
        part.to_string()
    } else {
        format!("`{}`", part.replace('`', "``"))
    }
}

/// Whether two paths name the same column ignoring ASCII case (Delta column names are
/// case-insensitive).
#[must_use]
pub fn eq_ignore_case(a: &[String], b: &[String]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.eq_ignore_ascii_case(y))
}

/// The values of the leaf at `path`, null wherever the leaf or an enclosing struct is null.
pub(crate) fn leaf_values(batch: &RecordBatch, path: &[String]) -> Result<ArrayRef> {
    let (array, nulls) = leaf_array(batch, path).ok_or_else(|| {
        Error::Internal(format!("column {} missing from a batch", path.join(".")))
    })?;
    if nulls.as_ref().map(NullBuffer::null_count) == array.nulls().map(NullBuffer::null_count) {
        return Ok(array);
    }
    with_nulls(&array, nulls)
}

/// The leaf array at `path` and its effective nulls (its own and every enclosing struct's).
pub(crate) fn leaf_array(
    batch: &RecordBatch,
    path: &[String],
) -> Option<(ArrayRef, Option<NullBuffer>)> {
    let (first, rest) = path.split_first()?;
    let mut array = batch.column_by_name(first)?.clone();
    let mut nulls = array.logical_nulls();
    for name in rest {
        let parent: &StructArray = array.as_struct_opt()?;
        let child = parent.column_by_name(name)?.clone();
        nulls = NullBuffer::union(nulls.as_ref(), child.logical_nulls().as_ref());
        array = child;
    }
    Some((array, nulls))
}

/// `array` with `nulls` as its validity (the union [`leaf_array`] computed).
pub(crate) fn with_nulls(array: &ArrayRef, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    let data = array
        .to_data()
        .into_builder()
        .nulls(nulls)
        .build()
        .map_err(|e| Error::arrow("collecting stats", e))?;
    Ok(deltalake::arrow::array::make_array(data))
}

/// Replaces `-0.0` by `0.0` and every NaN by one canonical NaN, so that arrow's row format
/// (the curves' sort keys, [`crate::curve::keys`]) and value comparisons order floats by one
/// total order (IEEE 754 `totalOrder` with one NaN, greatest). Other arrays pass through.
pub(crate) fn normalize(array: &ArrayRef) -> ArrayRef {
    match array.data_type() {
        DataType::Float32 => {
            let a = array.as_primitive::<Float32Type>();
            let out: Float32Array = a.unary(|v| {
                if v.is_nan() {
                    f32::NAN
                } else if v == 0.0 {
                    0.0
                } else {
                    v
                }
            });
            Arc::new(out)
        }
        DataType::Float64 => {
            let a = array.as_primitive::<Float64Type>();
            let out: Float64Array = a.unary(|v| {
                if v.is_nan() {
                    f64::NAN
                } else if v == 0.0 {
                    0.0
                } else {
                    v
                }
            });
            Arc::new(out)
        }
        _ => array.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Vec<String> {
        parse_path(text).unwrap()
    }

    #[test]
    fn dots_nest_and_back_quotes_protect() {
        assert_eq!(p("a.b"), ["a", "b"]);
        assert_eq!(p("`a.b`"), ["a.b"]);
        assert_eq!(p("`a`.`b.c`"), ["a", "b.c"]);
        assert_eq!(p(" user . id "), ["user", "id"]);
        assert_eq!(p("`we``ird`"), ["we`ird"]);
        assert_eq!(p("`a,b`.c"), ["a,b", "c"]);
        assert!(parse_path("`a").is_err());
        assert!(parse_path("a.").is_err());
        assert!(parse_path("a..b").is_err());
        assert!(parse_path("`a`b").is_err());
        assert!(parse_path("").is_err());
    }

    #[test]
    fn lists_split_outside_back_quotes() {
        assert_eq!(
            split_list("a, `b,c`.d ,,`e`").unwrap(),
            ["a", "`b,c`.d", "`e`"]
        );
        assert!(split_list("`a,b").is_err());
    }

    #[test]
    fn formatting_round_trips() {
        for path in [
            vec!["plain_1".to_string()],
            vec!["user.info".to_string()],
            vec!["a".to_string(), "b.c".to_string()],
            vec!["with space".to_string(), "x`y".to_string()],
            vec!["a,b".to_string()],
        ] {
            assert_eq!(parse_path(&format_path(&path)).unwrap(), path);
        }
        assert_eq!(format_path(&["a".into(), "b".into()]), "a.b");
        assert_eq!(format_path(&["user.info".into()]), "`user.info`");
    }
}
