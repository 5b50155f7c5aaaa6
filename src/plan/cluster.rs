//! Planning a clustering run (`--zorder` / `--hilbert`): which columns, and which partitions
//! are already clustered.
//!
//! # Cubes
//! Every file a clustering run writes carries three tags (the names Delta Spark gives its
//! Z-cubes): `ZCUBE_ID`, one id per clustered set of rows (a partition's run),
//! `ZCUBE_ZORDER_BY`, the JSON list of the clustering columns, and `ZCUBE_ZORDER_CURVE`,
//! `zorder` or `hilbert`. A partition whose files all belong to one cube of the same columns
//! and curve is already clustered and is left alone, so a second run is a no-op; any other
//! partition (new files, other columns, other curve) is clustered again as a whole.

use serde::Serialize;

use crate::curve::{Curve, MAX_DIMENSIONS};
use crate::error::{Error, Result};
use crate::table::{DataFile, LeafColumn, TableView};

/// Tag naming the cube a file belongs to.
pub const TAG_CUBE_ID: &str = "ZCUBE_ID";
/// Tag with the JSON list of the clustering columns of the cube.
pub const TAG_CUBE_COLUMNS: &str = "ZCUBE_ZORDER_BY";
/// Tag with the curve of the cube (`zorder` or `hilbert`).
pub const TAG_CUBE_CURVE: &str = "ZCUBE_ZORDER_CURVE";

/// What the user asked for: a curve over named columns (dotted paths for nested fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRequest {
    /// The curve.
    pub curve: Curve,
    /// Column names as given.
    pub columns: Vec<String>,
}

/// A resolved clustering: the curve and the leaf columns it orders by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clustering {
    /// The curve, `zorder` or `hilbert`.
    #[serde(serialize_with = "serialize_curve")]
    pub curve: Curve,
    /// Logical column names, dotted for nested fields, in key order.
    pub columns: Vec<String>,
    /// The resolved leaves (physical paths, types), parallel to `columns`.
    #[serde(skip)]
    pub leaves: Vec<LeafColumn>,
}

fn serialize_curve<S: serde::Serializer>(curve: &Curve, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(curve_name(*curve))
}

/// The tag value and display name of a curve.
#[must_use]
pub fn curve_name(curve: Curve) -> &'static str {
    match curve {
        Curve::ZOrder => "zorder",
        Curve::Hilbert => "hilbert",
    }
}

impl Clustering {
    /// The `ZCUBE_ZORDER_BY` value: the JSON list of the columns.
    #[must_use]
    pub fn columns_json(&self) -> String {
        serde_json::to_string(&self.columns).unwrap_or_default()
    }

    /// True when `files` are all in one cube with these columns and this curve.
    #[must_use]
    pub fn is_clustered(&self, files: &[&DataFile]) -> bool {
        let columns = self.columns_json();
        let tag = |f: &DataFile, key: &str| f.tags.get(key).cloned().flatten();
        let Some(first) = files.first() else {
            return true;
        };
        let Some(cube) = tag(first, TAG_CUBE_ID) else {
            return false;
        };
        files.iter().all(|f| {
            f.deletion_vector.is_none()
                && tag(f, TAG_CUBE_ID).as_deref() == Some(cube.as_str())
                && tag(f, TAG_CUBE_COLUMNS).as_deref() == Some(columns.as_str())
                && tag(f, TAG_CUBE_CURVE).as_deref() == Some(curve_name(self.curve))
        })
    }
}

/// Resolves `request` against the table's data columns.
///
/// # Errors
/// [`Error::InvalidOption`] naming the flag for no columns or more than
/// [`MAX_DIMENSIONS`]; [`Error::UnknownColumn`] naming the column for a duplicate, a partition
/// column, an unknown column, or a column of a type without order (struct, map, array).
pub fn resolve(table: &TableView, request: &ClusterRequest) -> Result<Clustering> {
    let flag = format!("--{}", curve_name(request.curve));
    if request.columns.is_empty() {
        return Err(Error::invalid_option(flag, "needs at least one column"));
    }
    if request.columns.len() > MAX_DIMENSIONS {
        return Err(Error::invalid_option(
            flag,
            format!(
                "takes at most {MAX_DIMENSIONS} columns, {} were given",
                request.columns.len()
            ),
        ));
    }
    let leaves = table.data_leaf_columns();
    let mut resolved: Vec<LeafColumn> = Vec::new();
    for name in &request.columns {
        let name = name.trim();
        let unknown = |message: String| Error::UnknownColumn {
            column: name.to_string(),
            message,
        };
        if table
            .partition_columns
            .iter()
            .any(|p| p.eq_ignore_ascii_case(name))
        {
            return Err(unknown(format!(
                "in {flag} is a partition column: files never straddle partitions, so clustering on it does nothing"
            )));
        }
        let exact: Vec<&LeafColumn> = leaves.iter().filter(|l| l.display_name() == name).collect();
        let matches = if exact.is_empty() {
            leaves
                .iter()
                .filter(|l| l.display_name().eq_ignore_ascii_case(name))
                .collect()
        } else {
            exact
        };
        let leaf = match matches.as_slice() {
            [one] => (*one).clone(),
            [] => {
                let prefix = format!("{}.", name.to_ascii_lowercase());
                if leaves
                    .iter()
                    .any(|l| l.display_name().to_ascii_lowercase().starts_with(&prefix))
                {
                    return Err(unknown(format!(
                        "in {flag} is a struct, which has no order (name one of its fields as {name}.field)"
                    )));
                }
                let known: Vec<String> = leaves.iter().map(LeafColumn::display_name).collect();
                return Err(unknown(format!(
                    "in {flag} does not exist in the table (columns: {})",
                    known.join(", ")
                )));
            }
            _ => {
                return Err(unknown(format!(
                    "in {flag} matches several columns that differ only in case"
                )));
            }
        };
        if !is_orderable(&leaf.data_type) {
            return Err(unknown(format!(
                "in {flag} has type {}, which has no order",
                leaf.data_type
            )));
        }
        if resolved.iter().any(|r| r.logical == leaf.logical) {
            return Err(unknown(format!("is listed twice in {flag}")));
        }
        resolved.push(leaf);
    }
    Ok(Clustering {
        curve: request.curve,
        columns: resolved.iter().map(LeafColumn::display_name).collect(),
        leaves: resolved,
    })
}

fn is_orderable(data_type: &deltalake::kernel::DataType) -> bool {
    use deltalake::kernel::{DataType, PrimitiveType as P};
    matches!(
        data_type,
        DataType::Primitive(
            P::Byte
                | P::Short
                | P::Integer
                | P::Long
                | P::Float
                | P::Double
                | P::Decimal(_)
                | P::String
                | P::Binary
                | P::Boolean
                | P::Date
                | P::Timestamp
                | P::TimestampNtz
        )
    )
}
