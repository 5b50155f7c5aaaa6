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
//! Columns whose Arrow type is not compared here (binary, nested lists) carry no min/max in
//! Delta stats; a claimed bound on them is refused as unverifiable.

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
        }
    }
    Ok(())
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
