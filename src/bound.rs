//! A predicate bound to a table: the one binder behind every evaluator. Its columns are
//! resolved against the table's schema (logical names, exact first, then a unique
//! case-insensitive match, as Delta column names are case-insensitive), each column is kept
//! once, and each literal is typed for its column or refused. Min/max pruning
//! ([`crate::pruning::Pruner`], on file bounds) and the row filter ([`crate::filter::RowFilter`],
//! on Arrow batches) evaluate the same bound form, so both read one column set, refuse the
//! same literals and agree on `IN` and `BETWEEN`.
//!
//! Rules: `x NOT IN (..)`, `x NOT BETWEEN ..` and `x IS NOT NULL` are `NOT` of the positive
//! form (three-valued logic keeps them exact: `IS NULL` is never unknown); an `IN` list needs
//! at least one value (the parser never produces an empty one); a `NULL` literal types as
//! `None` and compares as unknown. Reference: DataFusion binds a physical expression once and
//! evaluates it on rows and, through `PruningPredicate`, on statistics
//! (datafusion/pruning/src/pruning_predicate.rs).

use deltalake::kernel::{DataType, PrimitiveType};

use crate::error::{Error, Result};
use crate::predicate::{CompareOp, Literal, Predicate, typed_literal};
use crate::table::TableView;
use crate::value::Typed;

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
    /// The data column `leaf` (a leaf of [`TableView::data_leaf_columns`]), as a reference.
    #[must_use]
    pub fn of_leaf(leaf: &crate::table::LeafColumn) -> Self {
        Self {
            name: leaf.display_name(),
            logical: leaf.logical.clone(),
            physical: leaf.physical.clone(),
            data_type: leaf.data_type.clone(),
            partition_index: None,
        }
    }

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
        candidates.extend(table.data_leaf_columns().iter().map(Self::of_leaf));
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
            // A struct: its fields are the columns with stats.
            let fields: Vec<&str> = candidates
                .iter()
                .filter(|c| {
                    c.logical.len() > path.len()
                        && crate::column::eq_ignore_case(&c.logical[..path.len()], path)
                })
                .map(|c| c.name.as_str())
                .collect();
            if !fields.is_empty() {
                return Err(Error::UnknownColumn {
                    column: wanted,
                    setting: None,
                    message: format!(
                        "is a struct, which has no min/max stats to skip on; compare its fields ({})",
                        fields.join(", ")
                    ),
                });
            }
            if let Some(message) = crate::table::schema::void_column_message(&table.schema, path) {
                return Err(Error::UnknownColumn {
                    column: wanted,
                    setting: None,
                    message,
                });
            }
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
        if !has_min_max(&column.data_type) {
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

/// Whether min/max stats can describe a column of this type: every primitive type but
/// binary (PROTOCOL.md "Per-file Statistics" keeps no min/max for binary columns).
#[must_use]
pub fn has_min_max(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Primitive(p) if !matches!(p, PrimitiveType::Binary))
}

/// Columns read by one or several bound predicates, each once (by logical path): a
/// predicate's or a cut tree's slots index into it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnSet {
    columns: Vec<ColumnRef>,
}

impl ColumnSet {
    /// The slot of `column`, added when the set lacks it.
    pub fn slot(&mut self, column: &ColumnRef) -> usize {
        match self
            .columns
            .iter()
            .position(|c| c.logical == column.logical)
        {
            Some(i) => i,
            None => {
                self.columns.push(column.clone());
                self.columns.len() - 1
            }
        }
    }

    /// The columns, by slot.
    #[must_use]
    pub fn columns(&self) -> &[ColumnRef] {
        &self.columns
    }

    /// The columns, by slot, owned.
    #[must_use]
    pub fn into_columns(self) -> Vec<ColumnRef> {
        self.columns
    }
}

/// A literal as written and as typed for its column (`typed` is `None` for `NULL`).
#[derive(Debug, Clone, PartialEq)]
pub struct BoundLiteral {
    /// The literal as the predicate spells it (the row filter compares decimals and
    /// floats exactly from it).
    pub literal: Literal,
    /// Its value in the column's type.
    pub typed: Option<Typed>,
}

/// A node of a bound predicate; `usize` is a slot of [`BoundPredicate::columns`].
#[derive(Debug, Clone, PartialEq)]
pub enum BoundNode {
    /// Both sides true.
    And(Box<BoundNode>, Box<BoundNode>),
    /// Either side true.
    Or(Box<BoundNode>, Box<BoundNode>),
    /// Negation (unknown stays unknown).
    Not(Box<BoundNode>),
    /// The column is null.
    IsNull(usize),
    /// `column op literal`.
    Compare(usize, CompareOp, BoundLiteral),
    /// `low <= column <= high`.
    Between(usize, BoundLiteral, BoundLiteral),
    /// `column IN (values)`, at least one value.
    In(usize, Vec<BoundLiteral>),
}

/// A predicate bound to a table's columns.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundPredicate {
    /// The columns it reads, each once, in the order of first use.
    pub columns: Vec<ColumnRef>,
    /// The predicate over them.
    pub root: BoundNode,
}

impl BoundPredicate {
    /// Binds `predicate` to `table`'s columns.
    ///
    /// # Errors
    /// [`Error::UnknownColumn`] for a column the table lacks or that has no min/max stats
    /// ([`ColumnRef::resolve`]); [`Error::InvalidPredicate`] for a literal that does not fit
    /// its column's type, or an empty `IN` list.
    pub fn new(table: &TableView, predicate: &Predicate) -> Result<Self> {
        let mut columns = ColumnSet::default();
        let root = bind(table, predicate, &mut columns)?;
        Ok(Self {
            columns: columns.into_columns(),
            root,
        })
    }
}

fn bind(table: &TableView, predicate: &Predicate, columns: &mut ColumnSet) -> Result<BoundNode> {
    let mut slot =
        |path: &[String]| -> Result<usize> { Ok(columns.slot(&ColumnRef::resolve(table, path)?)) };
    let not_if = |negated: bool, node: BoundNode| {
        if negated {
            BoundNode::Not(Box::new(node))
        } else {
            node
        }
    };
    Ok(match predicate {
        Predicate::And(a, b) => BoundNode::And(
            Box::new(bind(table, a, columns)?),
            Box::new(bind(table, b, columns)?),
        ),
        Predicate::Or(a, b) => BoundNode::Or(
            Box::new(bind(table, a, columns)?),
            Box::new(bind(table, b, columns)?),
        ),
        Predicate::Not(a) => BoundNode::Not(Box::new(bind(table, a, columns)?)),
        Predicate::IsNull { column, negated } => not_if(*negated, BoundNode::IsNull(slot(column)?)),
        Predicate::Compare { column, op, value } => {
            let c = slot(column)?;
            BoundNode::Compare(c, *op, literal(column, columns, c, value)?)
        }
        Predicate::Between {
            column,
            low,
            high,
            negated,
        } => {
            let c = slot(column)?;
            let low = literal(column, columns, c, low)?;
            let high = literal(column, columns, c, high)?;
            not_if(*negated, BoundNode::Between(c, low, high))
        }
        Predicate::In {
            column,
            values,
            negated,
        } => {
            let c = slot(column)?;
            if values.is_empty() {
                return Err(Error::InvalidPredicate {
                    predicate: predicate.to_string(),
                    message: "IN needs at least one value".into(),
                });
            }
            let values = values
                .iter()
                .map(|v| literal(column, columns, c, v))
                .collect::<Result<_>>()?;
            not_if(*negated, BoundNode::In(c, values))
        }
    })
}

/// `value` typed for the column in `slot` of `columns` (named `path` in errors).
fn literal(
    path: &[String],
    columns: &ColumnSet,
    slot: usize,
    value: &Literal,
) -> Result<BoundLiteral> {
    Ok(BoundLiteral {
        literal: value.clone(),
        typed: typed_literal(path, &columns.columns()[slot].data_type, value)?,
    })
}
