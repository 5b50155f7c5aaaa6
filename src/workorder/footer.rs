//! What a result's data file says of itself, read from its Parquet footer, against what the
//! result document says of it: the row count, and the `minValues`, `maxValues` and
//! `nullCount` its stats give each column.
//!
//! A result document comes from another process (a worker, a Spark task, a person's edit);
//! the stats it carries become the `add` action's stats that every Delta reader prunes
//! with, so a min above a stored value, or a max below one, makes readers skip rows that
//! are there (PROTOCOL.md, "Per-file Statistics": the bounds must hold for every value of
//! the file). The footer's column-chunk statistics are written by the Parquet writer that
//! wrote the rows, so each claimed bound is checked against them:
//!
//! * a claimed min must not exceed any row group's min, a claimed max must not be below any
//!   row group's max (a string max of the table's prefix length or more may also be a prefix
//!   of it, as readers take it);
//! * where the footer's bound is not exact (a string cut to the writer's statistics length),
//!   only what the cut bound proves is checked: a claimed min above a cut min that it does
//!   not start with is above every value starting with the cut min;
//! * `nullCount` of a column that is not inside a list or map must equal the footer's null
//!   count, summed over the row groups (Parquet counts a leaf as null where it or an
//!   enclosing struct is null, as Delta does);
//! * a bound is refused when the footer records no value for the column (every row null, or
//!   no statistics written), since nothing then shows that it holds.
//!
//! Decimal bounds are compared exactly, digit by digit from the stats' own text (serde_json
//! keeps a double of a number). Columns whose Arrow type is not compared here (binary, nested
//! lists) carry no min/max in Delta stats; a claimed bound on them is refused as
//! unverifiable.
//!
//! Not checked (the footer cannot tell): the `nullCount` of an array or map column (the
//! footer counts its elements' nulls), and whether a float column holds NaN (Parquet
//! statistics leave NaN out, and this tool's writer then records no float bounds).

use std::cmp::Ordering;

use deltalake::arrow::array::{Array, ArrayRef};
use deltalake::arrow::datatypes::{DataType as ArrowType, Field, Fields};
use deltalake::kernel::{DataType, PrimitiveType};
use deltalake::parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use deltalake::parquet::file::metadata::ParquetMetaData;
use object_store::ObjectStoreExt as _;
use serde_json::Value;

use crate::pruning::{stats_value, typed_at};
use crate::table::LeafColumn;
use crate::value::Typed;

/// The footer of the Parquet object at `path` of `size` bytes: two ranged reads (the
/// footer's length, then the footer).
///
/// # Errors
/// A sentence that completes "file '…' …" when the object cannot be read or is not Parquet.
pub(super) async fn read_footer(
    store: &std::sync::Arc<dyn deltalake::ObjectStore>,
    path: &deltalake::Path,
    size: u64,
) -> Result<ParquetMetaData, String> {
    use deltalake::parquet::file::metadata::{FooterTail, ParquetMetaDataReader};
    if size < 12 {
        return Err("is too small to be a Parquet file".into());
    }
    let tail = store
        .get_range(path, size - 8..size)
        .await
        .map_err(|e| format!("cannot be read: {e}"))?;
    let footer =
        FooterTail::try_from(tail.as_ref()).map_err(|e| format!("is not a Parquet file: {e}"))?;
    let length = footer.metadata_length() as u64;
    if length + 8 > size {
        return Err("is not a Parquet file (its footer is longer than the file)".into());
    }
    let bytes = store
        .get_range(path, size - 8 - length..size - 8)
        .await
        .map_err(|e| format!("cannot be read: {e}"))?;
    ParquetMetaDataReader::decode_metadata(&bytes)
        .map_err(|e| format!("has an unreadable Parquet footer: {e}"))
}

/// The rows the footer counts.
///
/// # Errors
/// A sentence completing "file '…' …" for a negative count.
pub(super) fn footer_rows(metadata: &ParquetMetaData) -> Result<u64, String> {
    u64::try_from(metadata.file_metadata().num_rows())
        .map_err(|_| "has a negative row count in its footer".to_string())
}

/// Checks the `minValues`, `maxValues` and `nullCount` of `stats_json` (a result file's
/// stats) for every column of `leaves` (the table's data leaves, physical paths) against
/// the file's footer, by the rules of the module documentation. `prefix_length` is the
/// table's string prefix length ([`crate::pruning::string_prefix_length`]).
///
/// # Errors
/// A sentence that completes "gives file '…' …", naming the column, the claimed value and
/// what the footer records.
pub(super) fn check_stats(
    stats_json: &str,
    metadata: &ParquetMetaData,
    leaves: &[LeafColumn],
    prefix_length: usize,
) -> Result<(), String> {
    let stats: Value =
        serde_json::from_str(stats_json).map_err(|e| format!("stats that do not parse: {e}"))?;
    let arrow_schema = deltalake::parquet::arrow::parquet_to_arrow_schema(
        metadata.file_metadata().schema_descr(),
        metadata.file_metadata().key_value_metadata(),
    )
    .map_err(|e| format!("a footer whose schema has no Arrow form: {e}"))?;
    for leaf in leaves {
        let at = |key: &str| {
            leaf.physical
                .iter()
                .try_fold(stats.get(key)?, |v, name| v.get(name))
                .filter(|v| !v.is_null())
        };
        let (min, max, nulls) = (at("minValues"), at("maxValues"), at("nullCount"));
        if min.is_none() && max.is_none() && nulls.is_none() {
            continue;
        }
        let column = crate::column::format_path(&leaf.physical);
        let footer = FooterColumn::new(metadata, &arrow_schema, leaf);
        if let Some(claimed) = nulls
            && let Some(counted) = footer.as_ref().and_then(|f| f.null_count(metadata))
            && claimed.as_u64() != Some(counted)
        {
            return Err(format!(
                "a nullCount of {claimed} for column '{column}', but its footer counts {counted} nulls"
            ));
        }
        if min.is_none() && max.is_none() {
            continue;
        }
        let Some(footer) = footer else {
            return Err(format!(
                "min/max stats for column '{column}', which its footer does not hold as a column whose statistics can be compared"
            ));
        };
        let bounds = footer.bounds(metadata)?;
        let as_typed = |v: &Value| -> Result<Typed, String> {
            stats_value(&leaf.data_type, v)
                .map(|t| round_float(&leaf.data_type, t))
                .ok_or_else(|| format!("a bound {v} for column '{column}' that does not parse"))
        };
        for (key, claimed) in [("minValues", min), ("maxValues", max)] {
            let Some(claimed) = claimed else { continue };
            let typed = as_typed(claimed)?;
            let upper = key == "maxValues";
            if bounds.is_empty() {
                return Err(format!(
                    "a {key} of {claimed} for column '{column}', but its footer records no value of it (every row null, or no statistics)"
                ));
            }
            for (value, exact) in &bounds {
                let value = if upper { &value.1 } else { &value.0 };
                let Some(value) = value else {
                    return Err(format!(
                        "a {key} of {claimed} for column '{column}', but its footer records no {} for a row group holding values",
                        if upper { "max" } else { "min" }
                    ));
                };
                let holds = if upper {
                    bound_holds_above(&typed, value, *exact, prefix_length)
                } else {
                    bound_holds_below(&typed, value, *exact)
                };
                if !holds {
                    return Err(format!(
                        "a {key} of {claimed} for column '{column}', but its footer records {} {} in a row group",
                        if upper {
                            "a larger value,"
                        } else {
                            "a smaller value,"
                        },
                        show(value)
                    ));
                }
            }
            // Decimals read as doubles above; exactly here, from the bound's own digits.
            if let Some((low, high)) = footer.decimal_extremes(metadata) {
                let text = number_text(stats_json, key, &leaf.physical).ok_or_else(|| {
                    format!("a {key} of {claimed} for column '{column}' that is not a JSON number")
                })?;
                let footer_value = if upper { high } else { low };
                let order = footer_value
                    .as_deref()
                    .and_then(|v| compare_decimal_text(text, v));
                let holds = match order {
                    Some(o) => {
                        o != if upper {
                            Ordering::Less
                        } else {
                            Ordering::Greater
                        }
                    }
                    None => false,
                };
                if !holds {
                    return Err(format!(
                        "a {key} of {text} for column '{column}', but its footer records {} {}",
                        if upper {
                            "a larger value,"
                        } else {
                            "a smaller value,"
                        },
                        footer_value.as_deref().unwrap_or("no value")
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The text of the JSON number at `key` then `path` in the JSON object `json`; `None` when
/// there is none there (or it is not a number). Reads the text itself: serde_json keeps no
/// more than a double of a number, and a decimal's bound needs every digit.
fn number_text<'a>(json: &'a str, key: &str, path: &[String]) -> Option<&'a str> {
    let mut scanner = Scanner { text: json, at: 0 };
    let mut keys: Vec<&str> = vec![key];
    keys.extend(path.iter().map(String::as_str));
    scanner.find(&keys)
}

/// A cursor over JSON text for [`number_text`].
struct Scanner<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.text.as_bytes().get(self.at) {
            if b.is_ascii_whitespace() {
                self.at += 1;
            } else {
                return Some(b);
            }
        }
        None
    }

    /// In the object at the cursor, the value at `keys`, as a number's text.
    fn find(&mut self, keys: &[&str]) -> Option<&'a str> {
        let (first, rest) = keys.split_first()?;
        if self.peek()? != b'{' {
            return None;
        }
        self.at += 1;
        loop {
            match self.peek()? {
                b'}' => return None,
                b',' => self.at += 1,
                b'"' => {
                    let name: String = serde_json::from_str(self.string()?).ok()?;
                    if self.peek()? != b':' {
                        return None;
                    }
                    self.at += 1;
                    if name == *first {
                        if rest.is_empty() {
                            self.peek()?;
                            let start = self.at;
                            self.scalar();
                            let text = &self.text[start..self.at];
                            return text.parse::<f64>().is_ok().then_some(text);
                        }
                        return self.find(rest);
                    }
                    self.skip()?;
                }
                _ => return None,
            }
        }
    }

    /// The string literal at the cursor, quotes included.
    fn string(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        let start = self.at;
        self.at += 1;
        while let Some(&b) = bytes.get(self.at) {
            self.at += 1;
            match b {
                b'\\' => self.at += 1,
                b'"' => return self.text.get(start..self.at),
                _ => {}
            }
        }
        None
    }

    /// A number or literal at the cursor.
    fn scalar(&mut self) {
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.at) {
            if matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace() {
                break;
            }
            self.at += 1;
        }
    }

    /// Skips the value at the cursor.
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth -= 1,
                        _ => {}
                    }
                    self.at += 1;
                    if depth == 0 {
                        break;
                    }
                }
            }
            _ => self.scalar(),
        }
        Some(())
    }
}

/// A decimal number's text as (negative, significant digits without leading zeros, power of
/// ten of the last digit); `None` for text that is not a plain JSON number.
fn decimal_parts(text: &str) -> Option<(bool, String, i64)> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    let trimmed = digits.trim_end_matches('0');
    let exponent = exponent - i64::try_from(fraction.len()).ok()?
        + i64::try_from(digits.len() - trimmed.len()).ok()?;
    Some((
        negative && !trimmed.is_empty(),
        trimmed.to_string(),
        exponent,
    ))
}

/// The exact order of two decimal number texts.
fn compare_decimal_text(a: &str, b: &str) -> Option<Ordering> {
    let (an, ad, ae) = decimal_parts(a)?;
    let (bn, bd, be) = decimal_parts(b)?;
    let magnitude = || -> Ordering {
        match (ad.is_empty(), bd.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        // The power of ten of the leading digit, then the digits aligned.
        let lead = |d: &str, e: i64| e + i64::try_from(d.len()).unwrap_or(i64::MAX);
        lead(&ad, ae).cmp(&lead(&bd, be)).then_with(|| {
            let width = ad.len().max(bd.len());
            format!("{ad:0<width$}").cmp(&format!("{bd:0<width$}"))
        })
    };
    Some(match (an, bn) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        (false, false) => magnitude(),
        (true, true) => magnitude().reverse(),
    })
}

/// A float column's values as the 32-bit floats they are, so a bound written as the
/// shortest text of an `f32` compares equal to the footer's `f32`.
fn round_float(data_type: &DataType, value: Typed) -> Typed {
    match (data_type, value) {
        (DataType::Primitive(PrimitiveType::Float), Typed::Float(x)) =>
        {
            #[expect(clippy::cast_possible_truncation, reason = "a float column's value")]
            Typed::Float(f64::from(x as f32))
        }
        (_, value) => value,
    }
}

/// Whether a claimed min `claimed` holds for a row group whose footer min is `footer`
/// (exact, or a cut string that the true min starts with).
fn bound_holds_below(claimed: &Typed, footer: &Typed, exact: bool) -> bool {
    if claimed.compare(footer) != Some(Ordering::Greater) {
        return true;
    }
    // Above a cut min: holds only if the true min (which starts with the cut) may be above.
    !exact
        && matches!((claimed, footer), (Typed::Text(c), Typed::Text(f)) if c.starts_with(f.as_str()))
}

/// Whether a claimed max `claimed` holds for a row group whose footer max is `footer`: at or
/// above it; or, for strings, a prefix of it of `prefix_length` characters or more (readers
/// take such a max as a cut-off prefix); or below a footer max that is itself not exact (cut
/// and raised by its writer: nothing shows the claim wrong).
fn bound_holds_above(claimed: &Typed, footer: &Typed, exact: bool, prefix_length: usize) -> bool {
    if claimed.compare(footer) != Some(Ordering::Less) || !exact {
        return true;
    }
    matches!((claimed, footer), (Typed::Text(c), Typed::Text(f))
        if c.chars().count() >= prefix_length && f.starts_with(c.as_str()))
}

/// A footer value for a message.
fn show(value: &Typed) -> String {
    match value {
        Typed::Int(v) => v.to_string(),
        Typed::Float(v) => v.to_string(),
        Typed::Text(s) => format!("'{s}'"),
        Typed::Bool(b) => b.to_string(),
        Typed::Date(d) => d.to_string(),
        Typed::Timestamp(t) => t.to_string(),
    }
}

/// One leaf column of a footer, with its Arrow field.
struct FooterColumn {
    index: usize,
    field: Field,
    /// Not inside a list or map: the footer's null count is Delta's `nullCount`.
    flat: bool,
}

impl FooterColumn {
    /// The footer's leaf at `leaf.physical`, if it has one.
    fn new(
        metadata: &ParquetMetaData,
        arrow_schema: &deltalake::arrow::datatypes::Schema,
        leaf: &LeafColumn,
    ) -> Option<Self> {
        let descr = metadata.file_metadata().schema_descr();
        let index = descr
            .columns()
            .iter()
            .position(|c| c.path().parts() == leaf.physical.as_slice())?;
        let field = field_at(arrow_schema.fields(), &leaf.physical)?;
        Some(Self {
            index,
            field,
            flat: descr.column(index).max_rep_level() == 0,
        })
    }

    /// The null count summed over the row groups; `None` where a row group lacks one or
    /// the column is inside a list or map.
    fn null_count(&self, metadata: &ParquetMetaData) -> Option<u64> {
        if !self.flat {
            return None;
        }
        let converter = StatisticsConverter::from_column_index(
            self.index,
            &self.field,
            metadata.file_metadata().schema_descr(),
        )
        .ok()?
        .with_missing_null_counts_as_zero(false);
        let counts = converter
            .row_group_null_counts(metadata.row_groups())
            .ok()?;
        (counts.null_count() == 0).then(|| counts.values().iter().sum())
    }

    /// For a decimal column, the smallest row-group min and the largest row-group max, as
    /// exact decimal texts (`None` for a bound no row group records); `None` for other types.
    fn decimal_extremes(
        &self,
        metadata: &ParquetMetaData,
    ) -> Option<(Option<String>, Option<String>)> {
        use deltalake::arrow::datatypes::{Decimal128Type, DecimalType as _};
        let ArrowType::Decimal128(precision, scale) = self.field.data_type() else {
            return None;
        };
        let descr = metadata.file_metadata().schema_descr();
        let converter =
            StatisticsConverter::from_column_index(self.index, &self.field, descr).ok()?;
        let groups = metadata.row_groups();
        let read = |a: deltalake::parquet::errors::Result<ArrayRef>| -> Option<Vec<i128>> {
            let a = a.ok()?;
            let a = a
                .as_any()
                .downcast_ref::<deltalake::arrow::array::Decimal128Array>()?;
            Some(a.iter().flatten().collect())
        };
        let text = |v: i128| Decimal128Type::format_decimal(v, *precision, *scale);
        let mins = read(converter.row_group_mins(groups))?;
        let maxes = read(converter.row_group_maxes(groups))?;
        Some((
            mins.into_iter().min().map(text),
            maxes.into_iter().max().map(text),
        ))
    }

    /// Per row group holding a non-null value: ((min, max), both exact), typed as
    /// [`typed_at`] reads Arrow values (`None` for a bound the footer lacks). Row groups
    /// whose rows are all null are left out.
    #[expect(clippy::type_complexity, reason = "a private helper's pairs")]
    fn bounds(
        &self,
        metadata: &ParquetMetaData,
    ) -> Result<Vec<((Option<Typed>, Option<Typed>), bool)>, String> {
        let descr = metadata.file_metadata().schema_descr();
        let converter = StatisticsConverter::from_column_index(self.index, &self.field, descr)
            .map_err(|e| format!("a footer whose statistics cannot be read: {e}"))?
            .with_missing_null_counts_as_zero(false);
        let groups = metadata.row_groups();
        let read = |r: deltalake::parquet::errors::Result<ArrayRef>| {
            r.map_err(|e| format!("a footer whose statistics cannot be read: {e}"))
        };
        let mins = read(converter.row_group_mins(groups))?;
        let maxes = read(converter.row_group_maxes(groups))?;
        let exact_min = converter
            .row_group_is_min_value_exact(groups)
            .map_err(|e| format!("a footer whose statistics cannot be read: {e}"))?;
        let exact_max = converter
            .row_group_is_max_value_exact(groups)
            .map_err(|e| format!("a footer whose statistics cannot be read: {e}"))?;
        let nulls = converter.row_group_null_counts(groups).ok();
        let data_type = delta_type(self.field.data_type());
        let mut out = Vec::new();
        for (g, group) in groups.iter().enumerate() {
            let all_null = nulls.as_ref().is_some_and(|n| {
                n.is_valid(g) && i64::try_from(n.value(g)).ok() == Some(group.num_rows())
            });
            if all_null || group.num_rows() == 0 {
                continue;
            }
            let typed = |a: &ArrayRef| data_type.as_ref().and_then(|t| typed_at(a, g, t));
            let exact = exact_min.is_valid(g)
                && exact_min.value(g)
                && exact_max.is_valid(g)
                && exact_max.value(g);
            out.push(((typed(&mins), typed(&maxes)), exact));
        }
        Ok(out)
    }
}

/// The Delta type [`typed_at`] is told a footer array holds (it reads the Arrow type
/// itself; the Delta type picks how decimals read).
fn delta_type(arrow: &ArrowType) -> Option<DataType> {
    Some(DataType::Primitive(match arrow {
        ArrowType::Decimal128(p, s) => PrimitiveType::decimal(*p, u8::try_from(*s).ok()?).ok()?,
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => PrimitiveType::String,
        ArrowType::Float32 => PrimitiveType::Float,
        _ => PrimitiveType::Long,
    }))
}

/// The field at `path` in `fields`, through structs.
fn field_at(fields: &Fields, path: &[String]) -> Option<Field> {
    let (first, rest) = path.split_first()?;
    let field = fields.iter().find(|f| f.name() == first)?;
    if rest.is_empty() {
        return Some(field.as_ref().clone());
    }
    match field.data_type() {
        ArrowType::Struct(children) => field_at(children, rest),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_texts_compare_exactly() {
        use Ordering::{Equal, Greater, Less};
        let cases = [
            (
                "37037036703703700000",
                "37037036703703703670.123456789012345678",
                Less,
            ),
            (
                "37037036703703703670.123456789012345679",
                "37037036703703703670.123456789012345678",
                Greater,
            ),
            ("1.50", "1.5", Equal),
            ("150e-2", "1.5", Equal),
            ("1.5E2", "150", Equal),
            ("-0.0", "0", Equal),
            ("-1", "0.000000000000000001", Less),
            ("-2.5", "-2.4999999999999999999", Less),
            ("0.001", "0.0001", Greater),
            ("99999999999999999999999999999999999999", "1e38", Less),
        ];
        for (a, b, expected) in cases {
            assert_eq!(compare_decimal_text(a, b), Some(expected), "{a} vs {b}");
            assert_eq!(
                compare_decimal_text(b, a),
                Some(expected.reverse()),
                "{b} vs {a}"
            );
        }
        assert_eq!(compare_decimal_text("1.2.3", "1"), None);
        assert_eq!(compare_decimal_text("abc", "1"), None);
    }

    #[test]
    fn number_texts_are_read_at_their_path_with_every_digit() {
        let json = r#"{"numRecords": 3, "minValues": {"s": "a\"}{,", "d": 37037036703703703670.123456789012345678,
            "n": {"x": [1, {"y": 2}], "dec": -1.5e-3}}, "maxValues": {"d": 1}}"#;
        let path = |p: &[&str]| p.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(
            number_text(json, "minValues", &path(&["d"])),
            Some("37037036703703703670.123456789012345678")
        );
        assert_eq!(
            number_text(json, "minValues", &path(&["n", "dec"])),
            Some("-1.5e-3")
        );
        assert_eq!(number_text(json, "maxValues", &path(&["d"])), Some("1"));
        assert_eq!(number_text(json, "minValues", &path(&["s"])), None);
        assert_eq!(number_text(json, "minValues", &path(&["missing"])), None);
    }
}
