//! Logical and physical schemas: column mapping and the Arrow schema of written data files.
//!
//! Source: PROTOCOL.md, "Column Mapping" (physical names in `delta.columnMapping.physicalName`,
//! field ids in `delta.columnMapping.id`, written as Parquet field ids in `id` mode) and
//! "Primitive Types" / "Parquet ... physical types" for the Arrow types:
//!
//! | Delta type | Arrow type in written files |
//! |---|---|
//! | byte, short, integer, long | Int8, Int16, Int32, Int64 |
//! | float, double | Float32, Float64 |
//! | decimal(p, s) | Decimal128(p, s) |
//! | boolean, string, binary | Boolean, Utf8, Binary |
//! | date | Date32 |
//! | timestamp | Timestamp(µs, "UTC") |
//! | timestamp_ntz | Timestamp(µs, none) |
//! | `array<T>` | List (item field `element`) |
//! | map<K, V> | Map (entries `key_value` with `key`, `value`) |
//! | struct | Struct of the physical fields |
//! | variant | Struct of `metadata` and `value`, both non-null Binary (unshredded) |
//! | void | not written (every row is null; readers fill it in), no stats |
//!
//! A variant is written unshredded, as PROTOCOL.md "Variant Data Type" ("Variant data in
//! Parquet") lays it out and delta-kernel reads it (`DataType::unshredded_variant`): the two
//! binaries of the Parquet Variant encoding, copied byte for byte. Files that shred a variant
//! (a `typed_value` field, PROTOCOL.md "Variant Shredding") are unshredded when read
//! (`table::read`), so every file written holds this one layout.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use deltalake::arrow::array::ArrayRef;
use deltalake::arrow::compute::{CastOptions, cast_with_options};
use deltalake::arrow::datatypes::{
    DataType as ArrowType, Field, FieldRef, Fields, Schema, TimeUnit,
};
use deltalake::kernel::{DataType, PrimitiveType, StructField, StructType};
use deltalake::parquet::arrow::PARQUET_FIELD_ID_META_KEY;
use serde::Serialize;

use crate::error::{Error, Result};

const PHYSICAL_NAME_KEY: &str = "delta.columnMapping.physicalName";
const FIELD_ID_KEY: &str = "delta.columnMapping.id";

/// The column mapping mode of a table (`delta.columnMapping.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnMappingMode {
    /// Physical names equal logical names.
    None,
    /// Data files use `delta.columnMapping.physicalName`.
    Name,
    /// As `Name`, and Parquet columns carry the field id `delta.columnMapping.id`.
    Id,
}

impl ColumnMappingMode {
    /// Reads the mode from table properties; absent means [`ColumnMappingMode::None`].
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming `delta.columnMapping.mode` for an unknown value.
    pub fn from_properties(properties: &BTreeMap<String, String>) -> Result<Self> {
        match properties
            .get(super::PROP_COLUMN_MAPPING_MODE)
            .map(|s| s.to_ascii_lowercase())
            .as_deref()
        {
            None | Some("none") => Ok(Self::None),
            Some("name") => Ok(Self::Name),
            Some("id") => Ok(Self::Id),
            Some(other) => Err(Error::invalid_option(
                crate::Setting::TableProperty(super::PROP_COLUMN_MAPPING_MODE.into()),
                format!("unknown column mapping mode '{other}'"),
            )),
        }
    }
}

/// One leaf column of a schema: structs expanded, arrays and maps kept whole.
#[derive(Debug, Clone, PartialEq)]
pub struct LeafColumn {
    /// Logical path, e.g. `["address", "city"]`.
    pub logical: Vec<String>,
    /// Physical path (equal to `logical` without column mapping); stats use it.
    pub physical: Vec<String>,
    /// The Delta type of the leaf.
    pub data_type: DataType,
}

impl LeafColumn {
    /// The logical path as a user writes it (dots between levels, back quotes around parts
    /// that need them, [`crate::column::format_path`]), for display and options.
    #[must_use]
    pub fn display_name(&self) -> String {
        crate::column::format_path(&self.logical)
    }
}

/// The physical name of `field`: its `delta.columnMapping.physicalName` under column mapping,
/// its name otherwise.
#[must_use]
pub fn physical_name(field: &StructField, mode: ColumnMappingMode) -> String {
    if mode == ColumnMappingMode::None {
        return field.name().clone();
    }
    match field.metadata().get(PHYSICAL_NAME_KEY) {
        Some(deltalake::kernel::MetadataValue::String(s)) => s.clone(),
        _ => field.name().clone(),
    }
}

fn field_id(field: &StructField) -> Option<i64> {
    match field.metadata().get(FIELD_ID_KEY) {
        Some(deltalake::kernel::MetadataValue::Number(n)) => Some(*n),
        _ => None,
    }
}

/// Whether `data_type` is `void` (Spark's `NullType`, `NULL AS x`): PROTOCOL.md allows it in
/// a schema; writers never store it in data files, and readers give every row null.
#[must_use]
pub fn is_void(data_type: &DataType) -> bool {
    *data_type == DataType::Primitive(PrimitiveType::Void)
}

/// The message for a column path that names a `void` column of `schema` (matched as Delta
/// matches names, case-insensitively), to say instead of "does not exist": the column is in
/// the schema but holds no value. `None` when `path` names no void column.
#[must_use]
pub fn void_column_message(schema: &StructType, path: &[String]) -> Option<String> {
    let (first, rest) = path.split_first()?;
    let field = schema
        .fields()
        .find(|f| f.name().eq_ignore_ascii_case(first))?;
    match field.data_type() {
        DataType::Struct(inner) if !rest.is_empty() => void_column_message(inner, rest),
        data_type if rest.is_empty() && is_void(data_type) => Some(
            "is of type void (every row is null, and no data file holds it), so it has no values to order, skip or select on"
                .to_string(),
        ),
        _ => None,
    }
}

/// The schema metadata key under which a struct field records the collations of the strings
/// it holds (PROTOCOL.md "Collations Table Feature", "Specifying collations in the table
/// schema").
pub const COLLATIONS_KEY: &str = "__COLLATIONS";

/// The collation of the string column at the logical `path` (struct fields, matched
/// case-insensitively), as its identifier without version (`ICU.en_US`,
/// `spark.UTF8_LCASE`); `None` for binary UTF-8 order, the default, also when the metadata
/// names `UTF8_BINARY` (PROTOCOL.md "Collations Table Feature": the collation sits in the
/// `__COLLATIONS` metadata of the nearest enclosing struct field, keyed by the field's name).
#[must_use]
pub fn collation_of(schema: &StructType, path: &[String]) -> Option<String> {
    let (first, rest) = path.split_first()?;
    let field = schema
        .fields()
        .find(|f| f.name().eq_ignore_ascii_case(first))?;
    match field.data_type() {
        DataType::Struct(inner) if !rest.is_empty() => collation_of(inner, rest),
        DataType::Primitive(PrimitiveType::String) if rest.is_empty() => {
            let value = match field.metadata().get(COLLATIONS_KEY)? {
                deltalake::kernel::MetadataValue::Other(serde_json::Value::Object(map)) => {
                    map.get(field.name())?.as_str()?.to_string()
                }
                _ => return None,
            };
            (!value.ends_with("UTF8_BINARY")).then_some(value)
        }
        _ => None,
    }
}

/// The first `void` column of `schema` that no data file can carry, as its dotted logical path
/// with the reason: one inside an array or map (Delta writers drop void fields only through
/// structs, as delta-kernel's `void_utils` does), or a struct with no field that is not void (it
/// would be an empty Parquet group). `None` when every void column is one a rewrite can leave
/// out of its files.
#[must_use]
pub fn unwritable_void(schema: &StructType) -> Option<String> {
    fn contains_void(data_type: &DataType) -> bool {
        match data_type {
            DataType::Array(a) => contains_void(&a.element_type),
            DataType::Map(m) => contains_void(&m.key_type) || contains_void(&m.value_type),
            DataType::Struct(s) => s.fields().any(|f| contains_void(f.data_type())),
            other => is_void(other),
        }
    }
    fn walk(fields: &mut dyn Iterator<Item = &StructField>, path: &[String]) -> Option<String> {
        for field in fields {
            let mut p = path.to_vec();
            p.push(field.name().clone());
            let name = crate::column::format_path(&p);
            match field.data_type() {
                DataType::Struct(inner) => {
                    if inner.fields().all(|f| is_void(f.data_type())) {
                        return Some(format!(
                            "void columns (struct '{name}' has no field that is not void, so no data file can hold it)"
                        ));
                    }
                    if let Some(found) = walk(&mut inner.fields(), &p) {
                        return Some(found);
                    }
                }
                DataType::Array(_) | DataType::Map(_) if contains_void(field.data_type()) => {
                    return Some(format!(
                        "void columns (column '{name}' holds void inside an array or map, which Delta writers cannot store)"
                    ));
                }
                _ => {}
            }
        }
        None
    }
    walk(&mut schema.fields(), &[])
}

/// The leaf columns of `schema` in schema order (depth first); `void` columns, which data files
/// never hold, are left out.
#[must_use]
pub fn leaf_columns(schema: &StructType, mode: ColumnMappingMode) -> Vec<LeafColumn> {
    fn walk(
        fields: &mut dyn Iterator<Item = &StructField>,
        mode: ColumnMappingMode,
        logical: &[String],
        physical: &[String],
        out: &mut Vec<LeafColumn>,
    ) {
        for field in fields.filter(|f| !is_void(f.data_type())) {
            let mut l = logical.to_vec();
            l.push(field.name().clone());
            let mut p = physical.to_vec();
            p.push(physical_name(field, mode));
            match field.data_type() {
                DataType::Struct(inner) => walk(&mut inner.fields(), mode, &l, &p, out),
                other => out.push(LeafColumn {
                    logical: l,
                    physical: p,
                    data_type: other.clone(),
                }),
            }
        }
    }
    let mut out = Vec::new();
    walk(&mut schema.fields(), mode, &[], &[], &mut out);
    out
}

/// The Arrow schema of the data files delta-layout writes: the table's columns minus the
/// partition columns and minus `void` columns (at any depth of structs: PROTOCOL.md lets a
/// schema hold them, and Delta writers never store them, so readers give every row null),
/// with physical names, and Parquet field ids (`PARQUET:field_id`) in `id` mode.
///
/// # Errors
/// An unsupported Delta type (intervals, void inside an array or map) is [`Error::Internal`],
/// since the reader refuses such tables first ([`unwritable_void`]).
pub fn physical_arrow_schema(
    schema: &StructType,
    mode: ColumnMappingMode,
    partition_columns: &[String],
) -> Result<Schema> {
    let fields = schema
        .fields()
        .filter(|f| !partition_columns.contains(f.name()) && !is_void(f.data_type()))
        .map(|f| physical_field(f, mode))
        .collect::<Result<Vec<_>>>()?;
    Ok(Schema::new(fields))
}

/// The partition columns as a new data file of a `materializePartitionColumns` table holds
/// them (RFC "Materialize Partition Columns", delta-io/delta `protocol_rfcs`: after the data
/// columns): per column of `partition_columns`, in that order, its physical field (physical
/// name, Parquet field id under column mapping `id`, nullable) and a one-row array of its
/// value. `values` are the `add` action's strings parallel to `partition_columns` (`None`
/// and `""` are null), parsed by delta-kernel as PROTOCOL.md "Partition Value
/// Serialization" says.
///
/// # Errors
/// A message naming the column and the value that is not of the column's type (or a
/// partition column missing from the schema or not of a primitive type), for the caller to
/// name the file it came from.
pub(crate) fn materialized_partition_columns(
    schema: &StructType,
    mode: ColumnMappingMode,
    partition_columns: &[String],
    values: &[Option<String>],
) -> std::result::Result<Vec<(FieldRef, ArrayRef)>, String> {
    partition_columns
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let field = schema
                .field(name)
                .ok_or_else(|| format!("partition column '{name}' is not in the table's schema"))?;
            let DataType::Primitive(primitive) = field.data_type() else {
                return Err(format!(
                    "partition column '{name}' is of a type partition values cannot hold"
                ));
            };
            let physical = physical_field(field, mode)
                .map_err(|e| e.to_string())?
                .with_nullable(true);
            let raw = values.get(i).cloned().flatten().unwrap_or_default();
            let not_valid = |e: &dyn std::fmt::Display| {
                format!(
                    "has partition value '{raw}' for column '{name}', which is not a valid {}: {e}",
                    field.data_type()
                )
            };
            let value = primitive
                .parse_scalar(&raw)
                .and_then(|scalar| scalar.to_array(1))
                .map_err(|e| not_valid(&e))?;
            let value = if value.data_type() == physical.data_type() {
                value
            } else {
                let options = CastOptions {
                    safe: false,
                    ..CastOptions::default()
                };
                cast_with_options(&value, physical.data_type(), &options)
                    .map_err(|e| not_valid(&e))?
            };
            Ok((Arc::new(physical), value))
        })
        .collect()
}

fn physical_field(field: &StructField, mode: ColumnMappingMode) -> Result<Field> {
    let name = physical_name(field, mode);
    let nested = if mode == ColumnMappingMode::None {
        NestedIds::default()
    } else {
        NestedIds::of(field)
    };
    let data_type = arrow_type(field.data_type(), mode, &nested, &name)?;
    let mut out = Field::new(name, data_type, field.is_nullable());
    if mode != ColumnMappingMode::None
        && let Some(id) = field_id(field)
    {
        out = out.with_metadata(field_id_metadata(id));
    }
    Ok(out)
}

fn field_id_metadata(id: i64) -> HashMap<String, String> {
    HashMap::from([(PARQUET_FIELD_ID_META_KEY.to_string(), id.to_string())])
}

/// The identifiers of the `element`, `key` and `value` fields of the arrays and maps under
/// one [`StructField`], from its metadata `delta.columnMapping.nested.ids` (or the older
/// `parquet.field.nested.ids`): keys are paths from the field's physical name, such as
/// `col-a.element` or `col-b.value.element` (PROTOCOL.md "Writer Requirements for
/// IcebergCompatV2").
#[derive(Debug, Default)]
struct NestedIds(BTreeMap<String, i64>);

impl NestedIds {
    /// The nested ids `field` declares; none when it declares none or they do not parse
    /// (read-only commands read such a table as before; every rewrite refuses it first:
    /// [`field_ids_fault`] in [`crate::table::TableView::check_writable`]).
    fn of(field: &StructField) -> Self {
        field
            .metadata()
            .get(NESTED_IDS_KEY)
            .or_else(|| field.metadata().get(LEGACY_NESTED_IDS_KEY))
            .and_then(|value| parse_nested_ids(value).ok())
            .map_or_else(Self::default, Self)
    }

    fn field(&self, name: &str, data_type: ArrowType, nullable: bool, path: &str) -> Field {
        let field = Field::new(name, data_type, nullable);
        match self.0.get(path) {
            Some(&id) => field.with_metadata(field_id_metadata(id)),
            None => field,
        }
    }
}

/// Field metadata key of the nested ids (PROTOCOL.md "Writer Requirements for
/// IcebergCompatV2").
pub const NESTED_IDS_KEY: &str = "delta.columnMapping.nested.ids";
/// The key Delta Spark used for nested ids before [`NESTED_IDS_KEY`], still read.
const LEGACY_NESTED_IDS_KEY: &str = "parquet.field.nested.ids";

fn parse_nested_ids(
    value: &deltalake::kernel::MetadataValue,
) -> std::result::Result<BTreeMap<String, i64>, String> {
    let deltalake::kernel::MetadataValue::Other(serde_json::Value::Object(map)) = value else {
        return Err(format!("{NESTED_IDS_KEY} is not a JSON object"));
    };
    map.iter()
        .map(|(k, v)| {
            v.as_i64()
                .filter(|id| i32::try_from(*id).is_ok())
                .map(|id| (k.clone(), id))
                .ok_or_else(|| format!("{NESTED_IDS_KEY} '{k}' is {v}, not a 32-bit integer"))
        })
        .collect()
}

/// The first fault of `schema`'s field ids, as a message naming the column (its dotted
/// logical path): a `delta.columnMapping.id` or an id of `delta.columnMapping.nested.ids` that
/// a Parquet field id (a 32-bit integer) cannot hold, or a nested-id map that is not a map of
/// integers. With `iceberg` (IcebergCompatV2 active), also: a field without an id, an array
/// or map whose `element`, `key` or `value` has no id in its nearest struct field's map, and
/// an id used twice ("These identifiers must be unique and different from those used in
/// Column Mapping", PROTOCOL.md "Writer Requirements for IcebergCompatV2"). `None` when there
/// is none.
#[must_use]
pub fn field_ids_fault(schema: &StructType, iceberg: bool) -> Option<String> {
    struct Walk {
        iceberg: bool,
        seen: BTreeMap<i64, String>,
    }
    impl Walk {
        fn id(&mut self, id: i64, what: String) -> Option<String> {
            if i32::try_from(id).is_err() {
                return Some(format!(
                    "{what} has id {id}, which a Parquet field id (a 32-bit integer) cannot hold"
                ));
            }
            if self.iceberg
                && let Some(other) = self.seen.insert(id, what.clone())
            {
                return Some(format!(
                    "{what} and {other} have the same id {id}, which icebergCompatV2 forbids"
                ));
            }
            None
        }
        fn nested(
            &mut self,
            data_type: &DataType,
            ids: &BTreeMap<String, i64>,
            key: &str,
            path: &[String],
        ) -> Option<String> {
            let column = crate::column::format_path(path);
            let need = |walk: &mut Self, key: String| match ids.get(&key) {
                Some(&id) => walk.id(id, format!("'{key}' of column '{column}'")),
                None if walk.iceberg => Some(format!(
                    "column '{column}' has no identifier for '{key}' in {NESTED_IDS_KEY}, which icebergCompatV2 requires"
                )),
                None => None,
            };
            match data_type {
                DataType::Array(a) => {
                    let k = format!("{key}.element");
                    need(self, k.clone()).or_else(|| self.nested(&a.element_type, ids, &k, path))
                }
                DataType::Map(m) => {
                    let (k, v) = (format!("{key}.key"), format!("{key}.value"));
                    need(self, k.clone())
                        .or_else(|| need(self, v.clone()))
                        .or_else(|| self.nested(&m.key_type, ids, &k, path))
                        .or_else(|| self.nested(&m.value_type, ids, &v, path))
                }
                DataType::Struct(s) => s.fields().find_map(|f| self.field(f, path)),
                _ => None,
            }
        }
        fn field(&mut self, field: &StructField, parent: &[String]) -> Option<String> {
            let mut path = parent.to_vec();
            path.push(field.name().clone());
            let column = crate::column::format_path(&path);
            match field.metadata().get(FIELD_ID_KEY) {
                Some(deltalake::kernel::MetadataValue::Number(n)) => {
                    if let Some(fault) = self.id(*n, format!("column '{column}'")) {
                        return Some(fault);
                    }
                }
                None if !self.iceberg => {}
                None => {
                    return Some(format!(
                        "column '{column}' has no {FIELD_ID_KEY}, which icebergCompatV2 requires"
                    ));
                }
                Some(other) => {
                    return Some(format!(
                        "column '{column}' has {FIELD_ID_KEY} {other}, which is not an integer"
                    ));
                }
            }
            let ids = match field
                .metadata()
                .get(NESTED_IDS_KEY)
                .or_else(|| field.metadata().get(LEGACY_NESTED_IDS_KEY))
            {
                None => BTreeMap::new(),
                Some(value) => match parse_nested_ids(value) {
                    Ok(ids) => ids,
                    Err(reason) => return Some(format!("column '{column}': {reason}")),
                },
            };
            let physical = physical_name(field, ColumnMappingMode::Name);
            self.nested(field.data_type(), &ids, &physical, &path)
        }
    }
    let mut walk = Walk {
        iceberg,
        seen: BTreeMap::new(),
    };
    schema.fields().find_map(|f| walk.field(f, &[]))
}

/// The Arrow type of `data_type`; `path` is the nested-id path of this position (the nearest
/// struct field's physical name, then `.element`, `.key`, `.value`).
fn arrow_type(
    data_type: &DataType,
    mode: ColumnMappingMode,
    nested: &NestedIds,
    path: &str,
) -> Result<ArrowType> {
    Ok(match data_type {
        DataType::Primitive(p) => match p {
            PrimitiveType::Byte => ArrowType::Int8,
            PrimitiveType::Short => ArrowType::Int16,
            PrimitiveType::Integer => ArrowType::Int32,
            PrimitiveType::Long => ArrowType::Int64,
            PrimitiveType::Float => ArrowType::Float32,
            PrimitiveType::Double => ArrowType::Float64,
            PrimitiveType::Boolean => ArrowType::Boolean,
            PrimitiveType::String => ArrowType::Utf8,
            PrimitiveType::Binary => ArrowType::Binary,
            PrimitiveType::Date => ArrowType::Date32,
            PrimitiveType::Timestamp => {
                ArrowType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC")))
            }
            PrimitiveType::TimestampNtz => ArrowType::Timestamp(TimeUnit::Microsecond, None),
            PrimitiveType::Decimal(d) => {
                ArrowType::Decimal128(d.precision(), i8::try_from(d.scale()).unwrap_or(i8::MAX))
            }
            other => {
                return Err(Error::Internal(format!(
                    "delta type {other:?} cannot be rewritten"
                )));
            }
        },
        DataType::Array(array) => {
            let element = format!("{path}.element");
            ArrowType::List(Arc::new(nested.field(
                "element",
                arrow_type(&array.element_type, mode, nested, &element)?,
                array.contains_null,
                &element,
            )))
        }
        DataType::Map(map) => {
            let key = format!("{path}.key");
            let value = format!("{path}.value");
            ArrowType::Map(
                Arc::new(Field::new(
                    "key_value",
                    ArrowType::Struct(Fields::from(vec![
                        nested.field(
                            "key",
                            arrow_type(&map.key_type, mode, nested, &key)?,
                            false,
                            &key,
                        ),
                        nested.field(
                            "value",
                            arrow_type(&map.value_type, mode, nested, &value)?,
                            map.value_contains_null,
                            &value,
                        ),
                    ])),
                    false,
                )),
                false,
            )
        }
        DataType::Struct(inner) => ArrowType::Struct(Fields::from(
            inner
                .fields()
                .filter(|f| !is_void(f.data_type()))
                .map(|f| physical_field(f, mode))
                .collect::<Result<Vec<_>>>()?,
        )),
        DataType::Variant(_) => unshredded_variant(),
    })
}

/// Name of the Variant metadata binary inside a variant's Parquet struct.
pub const VARIANT_METADATA: &str = "metadata";
/// Name of the Variant value binary inside a variant's Parquet struct.
pub const VARIANT_VALUE: &str = "value";
/// Name of the shredded part of a variant's Parquet struct (PROTOCOL.md "Shredded Variant data
/// in Parquet"), which delta-layout does not carry.
pub const VARIANT_TYPED_VALUE: &str = "typed_value";

/// The Arrow type of an unshredded variant: a struct of the non-null binaries `metadata` and
/// `value` (PROTOCOL.md "Variant data in Parquet"; delta-kernel's `unshredded_variant`).
#[must_use]
pub fn unshredded_variant() -> ArrowType {
    ArrowType::Struct(Fields::from(vec![
        Field::new(VARIANT_METADATA, ArrowType::Binary, false),
        Field::new(VARIANT_VALUE, ArrowType::Binary, false),
    ]))
}

/// Whether `data_type` is the Arrow type of an unshredded variant ([`unshredded_variant`]).
#[must_use]
pub fn is_unshredded_variant(data_type: &ArrowType) -> bool {
    *data_type == unshredded_variant()
}
