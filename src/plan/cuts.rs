//! Cut trees: a layout cut along a workload's own predicates.
//!
//! A space-filling curve splits every clustering column evenly, whatever the queries ask. A
//! cut tree splits the rows where the queries split them: each inner node holds one *cut*,
//! an atomic predicate of the workload (`l_shipdate >= DATE '1995-01-01'`,
//! `l_shipmode IN ('AIR', 'MAIL')`), and sends the rows for which it is true one way and the
//! others (false or unknown) the other way; each leaf is a set of rows written to files of
//! its own. A query whose predicate contradicts a leaf's bounds skips all of its files, so a
//! tree fitted to a workload reads several times fewer files than a curve over the same
//! columns (Qd-tree: Z. Yang et al., "Qd-tree: Learning Data Layouts for Big Data
//! Analytics", SIGMOD 2020).
//!
//! # Building ([`build`])
//! Greedy, top-down, on a sample of the rows, as Qd-tree's greedy construction:
//! 1. Candidate cuts are the workload's atomic predicates, in a canonical form: `c = v`
//!    (from `=` and `!=`), `c >= v` (from `>=` and `<`), `c > v` (from `>` and `<=`),
//!    `c IN (...)`, `c IS NULL`; a `BETWEEN` gives its two sides. Cuts on partition columns
//!    are left out (a partition is one scope). At most [`MAX_CANDIDATE_CUTS`], those of the
//!    most runs ([`ranked_cuts`]); of cuts that split the sample alike, the first.
//! 2. A node of sample rows takes the cut that lets the most weighted (query, row) pairs be
//!    skipped: for each side, each query is tested against the side's min/max bounds of
//!    every column, exactly as a reader prunes a file by its stats
//!    ([`crate::pruning::Pruner::prune`]), and the gain is the weighted rows of the sides that
//!    skip it, less those of the node. Only queries the node does not already skip can gain.
//! 3. A cut is allowed when both sides keep at least `min_leaf_rows` sample rows
//!    ([`MIN_LEAF_SHARE`] of an average leaf). The tree grows best first, the node whose best cut
//!    gains most next, until it has `max_leaves` leaves (the files the scope's output makes
//!    at the target, so the tree writes about as many files as a curve) or no cut gains.
//! 4. Leaves are numbered depth first, the matching side first, so a subtree's leaves are
//!    consecutive.
//!
//! # Routing and order ([`BoundTree::route`])
//! Every row is routed from the root by evaluating each cut on it ([`crate::filter`], SQL
//! semantics: unknown goes the way of false), in batches, a column of the cut at a time. The
//! rewrite orders rows by a key of `leaf bits | curve key`: leaf first, then a Hilbert curve
//! over the workload's most used columns inside the leaf ([`CutTree::curve_bits`]), so
//! queries not in the workload still prune inside a leaf, and each leaf of more than one
//! target of rows is cut into files along its curve.
//!
//! # Recording
//! A tree is data: its JSON (this module's types) is kept in the plan, in work orders, and in
//! the `commitInfo` of the commit that uses it (`delta-layout.cutTrees`); each file it lays
//! out carries [`TAG_CUT_TREE`] (the tree's id) and [`TAG_CUT_LEAF`]. A later run with the
//! same workload reads the tree back and routes new rows through it (see
//! [`super::cluster`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use deltalake::arrow::array::{Array, ArrayRef, RecordBatch, UInt32Array};
use deltalake::arrow::compute::take;
use deltalake::arrow::datatypes::DataType as ArrowType;
use deltalake::arrow::row::{RowConverter, SortField};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::bound::{ColumnRef, ColumnSet};
use crate::error::{Error, Result};
use crate::filter::RowFilter;
use crate::predicate::{CompareOp, Literal, Predicate};
use crate::pruning::{ColumnFiles, FileBounds, Pruner, RankedBounds};
use crate::table::TableView;
use crate::value::{Typed, parse_typed};
use crate::workload::Workload;

/// Tag with the id of the cut tree that laid a file out ([`CutTree::id`]).
pub const TAG_CUT_TREE: &str = "DELTA_LAYOUT_CUT_TREE";
/// Tag with the leaf of the cut tree whose rows a file holds: for a file that packs the new
/// rows of neighbouring small leaves (an incremental run), the first of them.
pub const TAG_CUT_LEAF: &str = "DELTA_LAYOUT_CUT_LEAF";
/// The `ZCUBE_ZORDER_CURVE` tag (and `commitInfo` curve) of files laid out by a cut tree.
pub const CUTS_NAME: &str = "cuts";
/// The `commitInfo` field holding the cut trees a commit's files were laid out by.
pub const COMMIT_INFO_CUT_TREES: &str = "delta-layout.cutTrees";
/// The most leaves a tree grows: 65,536 (16 bits of the sort key).
pub const MAX_LEAVES: usize = 1 << 16;
/// The most columns of the curve inside each leaf.
pub const MAX_CURVE_COLUMNS: usize = 4;
/// The most candidate cuts a tree is built from: 4,096. A workload with more distinct atomic
/// predicates keeps those of the most runs (see [`ranked_cuts`]), so the builder's memory
/// (a bit per cut and sample row, about 50 MiB at the default 100,000 sample rows) does not
/// grow with the workload.
pub const MAX_CANDIDATE_CUTS: usize = 4096;
/// Default sample rows a tree is built from.
pub const DEFAULT_TREE_SAMPLE_ROWS: usize = 100_000;
/// Share of an average leaf's rows (the scope's rows over the files it makes at the target)
/// each side of a cut keeps at least: 0.8, the file size tolerance below the target (on
/// TPC-H lineitem at 4 MiB, 0.5 to 1.6 were tried: 0.8 scans the fewest files, BENCHMARKS.md).
pub const MIN_LEAF_SHARE: f64 = 0.8;

/// One node of a [`CutTree`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CutNode {
    /// An inner node: rows for which `cut` is true go to node `matching`, the others (false
    /// or unknown) to node `other`.
    Cut {
        /// The cut, an atomic predicate in the `--where` language.
        cut: String,
        /// The node of the rows the cut holds for.
        matching: usize,
        /// The node of the other rows.
        other: usize,
    },
    /// A leaf: its number, depth first.
    Leaf {
        /// The leaf's number, `0..leaves`.
        leaf: usize,
    },
}

/// A cut tree: its nodes (node 0 is the root), the workload it was built for, and how rows
/// are ordered inside each leaf.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CutTree {
    /// The tree's id: 16 hex digits of xxHash64 over the rest of its JSON.
    pub id: String,
    /// [`Workload::digest`] of the workload it was built for.
    pub workload: String,
    /// The nodes; node 0 is the root.
    pub nodes: Vec<CutNode>,
    /// Number of leaves.
    pub leaves: usize,
    /// Logical names of the columns of the Hilbert curve inside each leaf, most used first.
    pub curve_columns: Vec<String>,
    /// Sample rows it was built from.
    pub sampled_rows: u64,
}

impl CutTree {
    /// A tree of these nodes, its id computed.
    #[must_use]
    pub fn new(
        workload: String,
        nodes: Vec<CutNode>,
        curve_columns: Vec<String>,
        sampled_rows: u64,
    ) -> Self {
        let leaves = nodes
            .iter()
            .filter(|n| matches!(n, CutNode::Leaf { .. }))
            .count();
        let mut tree = Self {
            id: String::new(),
            workload,
            nodes,
            leaves,
            curve_columns,
            sampled_rows,
        };
        tree.id = tree.digest();
        tree
    }

    /// A tree of one leaf: every row in one set, ordered by the curve.
    #[must_use]
    pub fn single_leaf(workload: String, curve_columns: Vec<String>, sampled_rows: u64) -> Self {
        Self::new(
            workload,
            vec![CutNode::Leaf { leaf: 0 }],
            curve_columns,
            sampled_rows,
        )
    }

    fn digest(&self) -> String {
        let body = serde_json::json!({
            "workload": self.workload,
            "nodes": self.nodes,
            "curve_columns": self.curve_columns,
        });
        format!(
            "{:016x}",
            xxhash_rust::xxh64::xxh64(body.to_string().as_bytes(), 0)
        )
    }

    /// Checks the tree's shape: node 0 is the root, every node but the root has one parent,
    /// children come after their parent, and the leaves are numbered `0..leaves` depth first;
    /// and that its id is the digest of its content.
    ///
    /// # Errors
    /// [`Error::Internal`] naming what is wrong (a tree read from a log someone edited).
    pub fn validate(&self) -> Result<()> {
        let bad = |message: String| Error::Internal(format!("cut tree {}: {message}", self.id));
        if self.nodes.is_empty() {
            return Err(bad("has no node".into()));
        }
        let mut parents = vec![0usize; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            if let CutNode::Cut {
                matching, other, ..
            } = node
            {
                for &child in [matching, other] {
                    if child <= i || child >= self.nodes.len() {
                        return Err(bad(format!("node {i} has child {child}")));
                    }
                    parents[child] += 1;
                }
            }
        }
        if parents[0] != 0 || parents[1..].iter().any(|&p| p != 1) {
            return Err(bad("is not a tree".into()));
        }
        let mut next = 0;
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            match &self.nodes[i] {
                CutNode::Leaf { leaf } => {
                    if *leaf != next {
                        return Err(bad(format!("leaf {leaf} is out of order")));
                    }
                    next += 1;
                }
                CutNode::Cut {
                    matching, other, ..
                } => {
                    stack.push(*other);
                    stack.push(*matching);
                }
            }
        }
        if next != self.leaves || self.leaves > MAX_LEAVES {
            return Err(bad(format!("has {next} leaves, says {}", self.leaves)));
        }
        if self.curve_columns.len() > MAX_CURVE_COLUMNS {
            return Err(bad("has too many curve columns".into()));
        }
        if self.id != self.digest() {
            return Err(bad(
                "its id does not match its content (it was edited after it was written)".into(),
            ));
        }
        Ok(())
    }

    /// Bits of the sort key that number the leaves: enough for [`CutTree::leaves`], at
    /// least 1.
    #[must_use]
    pub fn leaf_bits(&self) -> u32 {
        let leaves = u64::try_from(self.leaves.max(2)).unwrap_or(u64::MAX);
        64 - (leaves - 1).leading_zeros()
    }

    /// Bits per column of the curve inside each leaf: what is left of 64 bits after the
    /// leaf bits, shared by the curve's columns, at most 16 each.
    #[must_use]
    pub fn curve_bits(&self, dimensions: usize) -> u32 {
        let dimensions = u32::try_from(dimensions.max(1)).unwrap_or(u32::MAX);
        ((64 - self.leaf_bits()) / dimensions).min(crate::curve::MAX_BITS_PER_DIMENSION)
    }

    /// The cuts on the way to each leaf, as one predicate per leaf (`NOT (cut)` on the
    /// other side), for display; the root leaf of a one-leaf tree is `TRUE`.
    #[must_use]
    pub fn leaf_paths(&self) -> Vec<String> {
        let mut out = vec![String::new(); self.leaves];
        let mut stack: Vec<(usize, Vec<String>)> = vec![(0, Vec::new())];
        while let Some((i, path)) = stack.pop() {
            match &self.nodes[i] {
                CutNode::Leaf { leaf } => {
                    if let Some(slot) = out.get_mut(*leaf) {
                        *slot = if path.is_empty() {
                            "TRUE".to_string()
                        } else {
                            path.join(" AND ")
                        };
                    }
                }
                CutNode::Cut {
                    cut,
                    matching,
                    other,
                } => {
                    let mut yes = path.clone();
                    yes.push(cut.clone());
                    let mut no = path;
                    no.push(format!("NOT ({cut})"));
                    stack.push((*other, no));
                    stack.push((*matching, yes));
                }
            }
        }
        out
    }

    /// The data columns the tree's cuts read, resolved against `table` (for the stats the
    /// written files must carry).
    ///
    /// # Errors
    /// As [`CutTree::bind`].
    pub fn cut_leaves(&self, table: &TableView) -> Result<Vec<crate::table::LeafColumn>> {
        let leaves = table.data_leaf_columns();
        let mut out: Vec<crate::table::LeafColumn> = Vec::new();
        for node in &self.nodes {
            if let CutNode::Cut { cut, .. } = node {
                let predicate = Predicate::parse(cut)?;
                for path in predicate.columns() {
                    let column = ColumnRef::resolve(table, &path)?;
                    if column.partition_index.is_some() {
                        continue;
                    }
                    if let Some(leaf) = leaves.iter().find(|l| l.physical == column.physical)
                        && !out.iter().any(|o| o.physical == leaf.physical)
                    {
                        out.push(leaf.clone());
                    }
                }
            }
        }
        Ok(out)
    }

    /// Binds the tree's cuts to `table`'s columns, for routing.
    ///
    /// # Errors
    /// [`Error::Internal`] for a tree that is not one ([`CutTree::validate`]);
    /// [`Error::InvalidPredicate`] or [`Error::UnknownColumn`] for a cut that no longer fits
    /// the table (a column renamed or dropped since the tree was built).
    pub fn bind(&self, table: &TableView) -> Result<BoundTree> {
        self.validate()?;
        let mut columns = ColumnSet::default();
        let mut cuts: Vec<Option<BoundCut>> = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            cuts.push(match node {
                CutNode::Leaf { .. } => None,
                CutNode::Cut { cut, .. } => {
                    let predicate = Predicate::parse(cut)?;
                    let filter = RowFilter::new(table, &predicate)?;
                    let slots = filter.columns().iter().map(|c| columns.slot(c)).collect();
                    Some(BoundCut { filter, slots })
                }
            });
        }
        Ok(BoundTree {
            tree: self.clone(),
            columns: columns.into_columns(),
            cuts,
        })
    }
}

/// A cut bound to a table: its filter and, per column of the filter, the slot of the tree's
/// columns that holds it.
#[derive(Debug, Clone)]
struct BoundCut {
    filter: RowFilter,
    slots: Vec<usize>,
}

/// A [`CutTree`] bound to a table's columns: routes rows to leaves.
#[derive(Debug, Clone)]
pub struct BoundTree {
    tree: CutTree,
    columns: Vec<ColumnRef>,
    cuts: Vec<Option<BoundCut>>,
}

impl BoundTree {
    /// The tree.
    #[must_use]
    pub fn tree(&self) -> &CutTree {
        &self.tree
    }

    /// The leaf of every row of `batch` (its columns by physical name, as the rewrite reads
    /// them). `partition_values`: the batch's, parallel to the table's partition columns.
    ///
    /// # Errors
    /// As [`RowFilter::evaluate`].
    pub fn route(
        &self,
        batch: &RecordBatch,
        partition_values: &[Option<String>],
    ) -> Result<Vec<u32>> {
        let rows = batch.num_rows();
        let mut leaves = vec![0u32; rows];
        if rows == 0 {
            return Ok(leaves);
        }
        // Each column the cuts read, once, for the whole batch (partition columns: none).
        let arrays: Vec<Option<ArrayRef>> = self
            .columns
            .iter()
            .map(|c| {
                if c.partition_index.is_some() {
                    Ok(None)
                } else {
                    crate::column::leaf_values(batch, &c.physical).map(Some)
                }
            })
            .collect::<Result<_>>()?;
        let all: Vec<u32> = (0..u32::try_from(rows).unwrap_or(u32::MAX)).collect();
        let mut stack: Vec<(usize, Vec<u32>)> = vec![(0, all)];
        while let Some((node, members)) = stack.pop() {
            if members.is_empty() {
                continue;
            }
            match (&self.tree.nodes[node], &self.cuts[node]) {
                (CutNode::Leaf { leaf }, _) => {
                    let leaf = u32::try_from(*leaf).unwrap_or(u32::MAX);
                    for &r in &members {
                        leaves[r as usize] = leaf;
                    }
                }
                (
                    CutNode::Cut {
                        matching, other, ..
                    },
                    Some(cut),
                ) => {
                    let whole = members.len() == rows;
                    let indices = UInt32Array::from(members.clone());
                    let values = cut
                        .slots
                        .iter()
                        .map(|&slot| match &arrays[slot] {
                            None => Ok(None),
                            Some(array) if whole => Ok(Some(array.clone())),
                            Some(array) => take(array.as_ref(), &indices, None)
                                .map(Some)
                                .map_err(|e| Error::arrow("routing rows through a cut tree", e)),
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let matches =
                        cut.filter
                            .matches_columns(&values, partition_values, members.len())?;
                    let mut yes = Vec::with_capacity(members.len());
                    let mut no = Vec::with_capacity(members.len());
                    for (r, m) in members.into_iter().zip(matches) {
                        if m {
                            yes.push(r);
                        } else {
                            no.push(r);
                        }
                    }
                    stack.push((*other, no));
                    stack.push((*matching, yes));
                }
                (CutNode::Cut { .. }, None) => {
                    return Err(Error::Internal("an unbound cut".into()));
                }
            }
        }
        Ok(leaves)
    }
}

// ---- building ----------------------------------------------------------------------------

/// What [`build`] needs besides the sample.
pub struct BuildInput<'a> {
    /// The table (columns and types).
    pub table: &'a TableView,
    /// The workload the tree serves (its training queries).
    pub workload: &'a Workload,
    /// The scope's partition values, parallel to the table's partition columns.
    pub partition_values: &'a [Option<String>],
    /// A uniform sample of the scope's rows: at least every column the workload names (by
    /// physical name, as the rewrite reads them).
    pub sample: &'a RecordBatch,
    /// Sample rows each side of a cut keeps at least.
    pub min_leaf_rows: usize,
    /// The most leaves to grow: about the files the scope's output makes at the target.
    pub max_leaves: usize,
    /// The columns of the curve inside each leaf ([`curve_columns`]).
    pub curve_columns: Vec<String>,
    /// Stops the build when set.
    pub cancel: &'a AtomicBool,
}

/// The atomic predicates of a workload as canonical cuts (see the module docs), each once,
/// in order of first appearance; cuts on partition columns left out.
#[must_use]
pub fn candidate_cuts(workload: &Workload, partition_columns: &[String]) -> Vec<Predicate> {
    let mut out: Vec<Predicate> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let is_partition = |column: &[String]| {
        column.len() == 1
            && partition_columns
                .iter()
                .any(|p| p.eq_ignore_ascii_case(&column[0]))
    };
    let mut push = |p: Predicate| {
        if seen.insert(p.to_string()) {
            out.push(p);
        }
    };
    for query in &workload.queries {
        let mut atoms = Vec::new();
        atoms_of(&query.predicate, &mut atoms);
        for atom in atoms {
            let column = match &atom {
                Predicate::Compare { column, .. }
                | Predicate::In { column, .. }
                | Predicate::IsNull { column, .. } => column.clone(),
                _ => continue,
            };
            if !is_partition(&column) {
                push(atom);
            }
        }
    }
    out
}

/// At most `max` of the workload's candidate cuts ([`candidate_cuts`]): all of them, in
/// order of first appearance, when there are no more than `max`; else the `max` whose
/// queries ran most often (the sum of the weights of the queries that hold the atom; ties
/// in order of first appearance), in that order.
#[must_use]
pub fn ranked_cuts(
    workload: &Workload,
    partition_columns: &[String],
    max: usize,
) -> Vec<Predicate> {
    let cuts = candidate_cuts(workload, partition_columns);
    if cuts.len() <= max {
        return cuts;
    }
    let index: BTreeMap<String, usize> = cuts
        .iter()
        .enumerate()
        .map(|(i, c)| (c.to_string(), i))
        .collect();
    let mut runs = vec![0u64; cuts.len()];
    for query in &workload.queries {
        let mut atoms = Vec::new();
        atoms_of(&query.predicate, &mut atoms);
        let mut seen = std::collections::BTreeSet::new();
        for atom in atoms {
            if let Some(&i) = index.get(&atom.to_string())
                && seen.insert(i)
            {
                runs[i] = runs[i].saturating_add(query.weight);
            }
        }
    }
    let mut order: Vec<usize> = (0..cuts.len()).collect();
    order.sort_by(|&a, &b| runs[b].cmp(&runs[a]).then(a.cmp(&b)));
    order.truncate(max);
    let mut cuts: Vec<Option<Predicate>> = cuts.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| cuts[i].take()).collect()
}

/// A set of sample rows, a bit per row.
#[derive(PartialEq, Eq, Hash)]
struct RowSet {
    words: Vec<u64>,
}

impl RowSet {
    fn from_bools(bools: &[bool]) -> Self {
        let mut words = vec![0u64; bools.len().div_ceil(64)];
        for (i, _) in bools.iter().enumerate().filter(|(_, b)| **b) {
            words[i / 64] |= 1 << (i % 64);
        }
        Self { words }
    }

    fn contains(&self, row: u32) -> bool {
        let row = row as usize;
        self.words[row / 64] & (1 << (row % 64)) != 0
    }

    fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// The canonical cuts of `predicate`'s atoms, appended to `out`.
fn atoms_of(predicate: &Predicate, out: &mut Vec<Predicate>) {
    let compare = |column: &Vec<String>, op: CompareOp, value: &Literal| Predicate::Compare {
        column: column.clone(),
        op,
        value: value.clone(),
    };
    match predicate {
        Predicate::And(a, b) | Predicate::Or(a, b) => {
            atoms_of(a, out);
            atoms_of(b, out);
        }
        Predicate::Not(a) => atoms_of(a, out),
        Predicate::Compare {
            value: Literal::Null,
            ..
        } => {}
        Predicate::Compare { column, op, value } => out.push(match op {
            CompareOp::Eq | CompareOp::NotEq => compare(column, CompareOp::Eq, value),
            CompareOp::GtEq | CompareOp::Lt => compare(column, CompareOp::GtEq, value),
            CompareOp::Gt | CompareOp::LtEq => compare(column, CompareOp::Gt, value),
        }),
        Predicate::In { column, values, .. } => {
            let values: Vec<Literal> = values
                .iter()
                .filter(|v| !matches!(v, Literal::Null))
                .cloned()
                .collect();
            match values.as_slice() {
                [] => {}
                [one] => out.push(compare(column, CompareOp::Eq, one)),
                _ => out.push(Predicate::In {
                    column: column.clone(),
                    values,
                    negated: false,
                }),
            }
        }
        Predicate::IsNull { column, .. } => out.push(Predicate::IsNull {
            column: column.clone(),
            negated: false,
        }),
        Predicate::Between {
            column, low, high, ..
        } => {
            if !matches!(low, Literal::Null) {
                out.push(compare(column, CompareOp::GtEq, low));
            }
            if !matches!(high, Literal::Null) {
                out.push(compare(column, CompareOp::Gt, high));
            }
        }
    }
}

/// The columns of the curve inside the leaves: the workload's most used data columns that
/// have an order, at most [`MAX_CURVE_COLUMNS`], most used first.
///
/// # Errors
/// [`Error::InvalidWorkload`] when the workload names a column the table lacks.
pub fn curve_columns(table: &TableView, workload: &Workload) -> Result<Vec<String>> {
    workload.bind(table)?;
    let mut out = Vec::new();
    for (path, _) in workload.column_use() {
        let column = ColumnRef::resolve(table, &path)?;
        if column.partition_index.is_some() || out.contains(&column.name) {
            continue;
        }
        out.push(column.name);
        if out.len() == MAX_CURVE_COLUMNS {
            break;
        }
    }
    Ok(out)
}

/// One column of the sample as the builder reads it: each row's rank among the column's
/// distinct values (`u32::MAX` for null) and those values, ascending.
struct RankedColumn {
    ranks: Vec<u32>,
    values: Vec<Typed>,
    /// A partition column: its bounds for every side.
    constant: Option<FileBounds>,
}

const NULL_RANK: u32 = u32::MAX;

/// Ranks one column of the sample (see [`RankedColumn`]).
fn rank_column(column: &ColumnRef, input: &BuildInput<'_>) -> Result<RankedColumn> {
    if let Some(index) = column.partition_index {
        let value = input.partition_values.get(index).cloned().flatten();
        let bounds = match value.and_then(|v| parse_typed(&column.data_type, &v)) {
            Some(v) => FileBounds {
                min: Some(v.clone()),
                max: Some(v.clone()),
                upper: Some(v),
                max_is_prefix: false,
                no_nulls: true,
                all_null: false,
            },
            None => FileBounds {
                all_null: true,
                ..FileBounds::default()
            },
        };
        return Ok(RankedColumn {
            ranks: Vec::new(),
            values: Vec::new(),
            constant: Some(bounds),
        });
    }
    let raw = crate::column::leaf_values(input.sample, &column.physical)?;
    let array = crate::column::normalize(&raw);
    let converter = RowConverter::new(vec![SortField::new(array.data_type().clone())])
        .map_err(|e| Error::arrow("ranking sample values", e))?;
    let rows = converter
        .convert_columns(std::slice::from_ref(&array))
        .map_err(|e| Error::arrow("ranking sample values", e))?;
    let mut order: Vec<usize> = (0..array.len()).filter(|&i| array.is_valid(i)).collect();
    order.par_sort_unstable_by(|&a, &b| rows.row(a).cmp(&rows.row(b)));
    let mut ranks = vec![NULL_RANK; array.len()];
    let mut firsts: Vec<usize> = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        if k == 0 || rows.row(order[k - 1]) != rows.row(i) {
            firsts.push(i);
        }
        ranks[i] = u32::try_from(firsts.len() - 1).unwrap_or(NULL_RANK - 1);
    }
    // The distinct values as the log's text would read them.
    let distinct = take(
        array.as_ref(),
        &UInt32Array::from(
            firsts
                .iter()
                .map(|&i| u32::try_from(i).unwrap_or(u32::MAX))
                .collect::<Vec<_>>(),
        ),
        None,
    )
    .map_err(|e| Error::arrow("ranking sample values", e))?;
    let text = deltalake::arrow::compute::cast(&distinct, &ArrowType::Utf8)
        .map_err(|e| Error::arrow("ranking sample values", e))?;
    let text = text
        .as_any()
        .downcast_ref::<deltalake::arrow::array::StringArray>()
        .ok_or_else(|| Error::Internal("a cast to Utf8 gave another type".into()))?;
    let values = (0..text.len())
        .map(|i| {
            parse_typed(&column.data_type, text.value(i)).ok_or_else(|| {
                Error::Internal(format!(
                    "sample value '{}' of column '{}' does not read back as {}",
                    text.value(i),
                    column.name,
                    column.data_type
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RankedColumn {
        ranks,
        values,
        constant: None,
    })
}

/// Per column, the bounds of a set of rows: min and max rank, and null and row counts.
#[derive(Clone, Copy)]
struct RankRange {
    min: u32,
    max: u32,
    nulls: u32,
    rows: u32,
}

impl RankRange {
    const EMPTY: Self = Self {
        min: u32::MAX,
        max: 0,
        nulls: 0,
        rows: 0,
    };

    fn add(&mut self, rank: u32) {
        self.rows += 1;
        if rank == NULL_RANK {
            self.nulls += 1;
        } else {
            self.min = self.min.min(rank);
            self.max = self.max.max(rank);
        }
    }

    fn bounds(&self, column: &RankedColumn) -> FileBounds {
        if let Some(constant) = &column.constant {
            return constant.clone();
        }
        if self.nulls == self.rows {
            return FileBounds {
                all_null: true,
                no_nulls: self.rows == 0,
                ..FileBounds::default()
            };
        }
        let min = column.values[self.min as usize].clone();
        let max = column.values[self.max as usize].clone();
        FileBounds {
            min: Some(min),
            upper: Some(max.clone()),
            max: Some(max),
            max_is_prefix: false,
            no_nulls: self.nulls == 0,
            all_null: false,
        }
    }
}

/// The workload's queries bound for the builder: each pruner, its weight, and the builder's
/// column index of each of the pruner's columns.
struct BoundQuery {
    pruner: Pruner,
    weight: f64,
    columns: Vec<usize>,
}

/// Builds the cut tree of one scope from a sample of its rows (see the module docs).
///
/// # Errors
/// [`Error::InvalidWorkload`] for a query that does not fit the table; [`Error::Arrow`] when
/// a cut cannot be evaluated on the sample; [`Error::Cancelled`].
#[expect(
    clippy::cast_precision_loss,
    reason = "weights and row counts as gains, far below 2^52"
)]
pub fn build(input: &BuildInput<'_>) -> Result<CutTree> {
    let table = input.table;
    let n = input.sample.num_rows();
    let digest = input.workload.digest();
    let sampled = n as u64;
    if n < 2 * input.min_leaf_rows.max(1) {
        return Ok(CutTree::single_leaf(
            digest,
            input.curve_columns.clone(),
            sampled,
        ));
    }
    // The queries and their columns.
    input.workload.bind(table)?;
    let mut columns = ColumnSet::default();
    let mut queries: Vec<BoundQuery> = Vec::new();
    for query in &input.workload.queries {
        let pruner = Pruner::new(table, &query.predicate)?;
        let slots = pruner.columns().iter().map(|c| columns.slot(c)).collect();
        queries.push(BoundQuery {
            pruner,
            weight: query.weight as f64,
            columns: slots,
        });
    }
    let columns = columns.into_columns();
    let ranked = columns
        .par_iter()
        .map(|c| rank_column(c, input))
        .collect::<Result<Vec<_>>>()?;
    // Rows' ranks, row-major, for the data columns.
    let data: Vec<usize> = (0..ranked.len())
        .filter(|&c| ranked[c].constant.is_none())
        .collect();
    let width = data.len();
    let mut ranks = vec![NULL_RANK; n * width];
    for (k, &c) in data.iter().enumerate() {
        for (r, &rank) in ranked[c].ranks.iter().enumerate() {
            ranks[r * width + k] = rank;
        }
    }
    // The candidate cuts and the sample rows each holds for; of cuts that split the sample
    // alike, the first.
    let evaluated: Vec<(String, RowSet)> =
        ranked_cuts(input.workload, &table.partition_columns, MAX_CANDIDATE_CUTS)
            .into_par_iter()
            .map(|cut| {
                let filter = RowFilter::new(table, &cut)?;
                let matches = filter.matches(input.sample, input.partition_values)?;
                Ok((cut.to_string(), RowSet::from_bools(&matches)))
            })
            .collect::<Result<Vec<_>>>()?;
    let keep: Vec<bool> = {
        let mut splits: std::collections::HashSet<&RowSet> = std::collections::HashSet::new();
        evaluated
            .iter()
            .map(|(_, m)| {
                let yes = m.len();
                yes > 0 && yes < n && splits.insert(m)
            })
            .collect()
    };
    let cuts: Vec<(String, RowSet)> = evaluated
        .into_iter()
        .zip(keep)
        .filter_map(|(cut, keep)| keep.then_some(cut))
        .collect();

    let builder = Builder {
        ranked: &ranked,
        data: &data,
        ranks: &ranks,
        width,
        queries: &queries,
        cuts: &cuts,
        min_leaf_rows: input.min_leaf_rows.max(1),
        cancel: input.cancel,
    };
    // Grow the tree best first: the node whose best cut gains most is cut next, until the
    // leaves reach the budget or no cut gains.
    let max_leaves = input.max_leaves.clamp(1, MAX_LEAVES);
    let all: Vec<u32> = (0..u32::try_from(n).unwrap_or(u32::MAX)).collect();
    let root_live: Vec<usize> = (0..queries.len()).collect();
    let mut grown: Vec<Grown> = vec![Grown::Leaf];
    let mut open: std::collections::BinaryHeap<Open> = std::collections::BinaryHeap::new();
    let offer = |slot: usize,
                 rows: Vec<u32>,
                 live: Vec<usize>,
                 open: &mut std::collections::BinaryHeap<Open>| {
        if let Some(choice) = builder.best_cut(&rows, &live) {
            open.push(Open {
                gain: choice.gain,
                slot,
                rows,
                choice,
            });
        }
    };
    if max_leaves > 1 {
        offer(0, all, root_live, &mut open);
    }
    let mut leaves = 1usize;
    while leaves < max_leaves {
        let Some(Open {
            slot, rows, choice, ..
        }) = open.pop()
        else {
            break;
        };
        if input.cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        let (yes, no): (Vec<u32>, Vec<u32>) =
            rows.iter().partition(|&&r| cuts[choice.cut].1.contains(r));
        let left = grown.len();
        grown.push(Grown::Leaf);
        grown.push(Grown::Leaf);
        grown[slot] = Grown::Cut(choice.cut, left, left + 1);
        leaves += 1;
        if leaves < max_leaves {
            offer(left, yes, choice.live_matching, &mut open);
            offer(left + 1, no, choice.live_other, &mut open);
        }
    }
    // Renumber: nodes depth first (children after parents), leaves in that order.
    let mut nodes: Vec<CutNode> = Vec::with_capacity(grown.len());
    let mut next_leaf = 0;
    number(&grown, 0, &cuts, &mut nodes, &mut next_leaf);
    Ok(CutTree::new(
        digest,
        nodes,
        input.curve_columns.clone(),
        sampled,
    ))
}

enum Grown {
    Leaf,
    Cut(usize, usize, usize),
}

/// A node that can be cut, ordered by the gain of its best cut (ties: the older node).
struct Open {
    gain: f64,
    slot: usize,
    rows: Vec<u32>,
    choice: Choice,
}

impl PartialEq for Open {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Open {}

impl PartialOrd for Open {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Open {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.gain
            .total_cmp(&other.gain)
            .then_with(|| other.slot.cmp(&self.slot))
    }
}

/// Appends the subtree of `grown[at]` to `nodes` depth first; returns its index.
fn number(
    grown: &[Grown],
    at: usize,
    cuts: &[(String, RowSet)],
    nodes: &mut Vec<CutNode>,
    next_leaf: &mut usize,
) -> usize {
    let index = nodes.len();
    match grown[at] {
        Grown::Cut(cut, yes, no) => {
            nodes.push(CutNode::Leaf { leaf: 0 });
            let matching = number(grown, yes, cuts, nodes, next_leaf);
            let other = number(grown, no, cuts, nodes, next_leaf);
            nodes[index] = CutNode::Cut {
                cut: cuts[cut].0.clone(),
                matching,
                other,
            };
        }
        Grown::Leaf => {
            nodes.push(CutNode::Leaf { leaf: *next_leaf });
            *next_leaf += 1;
        }
    }
    index
}

struct Builder<'a> {
    ranked: &'a [RankedColumn],
    /// Builder columns with ranks, in the order of `ranks`' row-major slots.
    data: &'a [usize],
    ranks: &'a [u32],
    width: usize,
    queries: &'a [BoundQuery],
    cuts: &'a [(String, RowSet)],
    min_leaf_rows: usize,
    cancel: &'a AtomicBool,
}

/// The cut a node takes, and the queries each side may still match (the only ones a
/// deeper cut can gain on).
struct Choice {
    cut: usize,
    gain: f64,
    live_matching: Vec<usize>,
    live_other: Vec<usize>,
}

impl Builder<'_> {
    /// The bounds of every builder column over `rows`, split by `side` (`None`: one set).
    fn ranges(&self, rows: &[u32], side: Option<&RowSet>) -> [Vec<RankRange>; 2] {
        let mut out = [
            vec![RankRange::EMPTY; self.width],
            vec![RankRange::EMPTY; self.width],
        ];
        for &r in rows {
            let s = usize::from(side.is_some_and(|m| !m.contains(r)));
            let r = r as usize;
            let row = &self.ranks[r * self.width..(r + 1) * self.width];
            for (range, &rank) in out[s].iter_mut().zip(row) {
                range.add(rank);
            }
        }
        out
    }

    /// Per builder column, the bounds of a set of rows from its data-column ranges.
    fn bounds(&self, ranges: &[RankRange]) -> Vec<FileBounds> {
        let mut out: Vec<FileBounds> = Vec::with_capacity(self.ranked.len());
        let mut k = 0;
        for (c, column) in self.ranked.iter().enumerate() {
            if column.constant.is_some() {
                out.push(RankRange::EMPTY.bounds(column));
            } else {
                debug_assert_eq!(self.data[k], c);
                out.push(ranges[k].bounds(column));
                k += 1;
            }
        }
        out
    }

    /// The allowed cut of greatest gain at a node of `rows`, with the queries each side does
    /// not skip; `None` when none has a positive gain.
    #[expect(clippy::cast_precision_loss, reason = "row counts as gains")]
    fn best_cut(&self, rows: &[u32], live: &[usize]) -> Option<Choice> {
        if rows.len() < 2 * self.min_leaf_rows || live.is_empty() {
            return None;
        }
        // The allowed cuts and each side's bounds (a "file" per side: 2 per cut).
        let sides: Vec<(usize, usize, usize, [Vec<RankRange>; 2])> = self
            .cuts
            .par_iter()
            .enumerate()
            .filter_map(|(k, (_, matches))| {
                if self.cancel.load(Ordering::Relaxed) {
                    return None;
                }
                let yes = rows.iter().filter(|&&r| matches.contains(r)).count();
                let no = rows.len() - yes;
                if yes < self.min_leaf_rows || no < self.min_leaf_rows {
                    return None;
                }
                Some((k, yes, no, self.ranges(rows, Some(matches))))
            })
            .collect();
        if sides.is_empty() {
            return None;
        }
        // Bounds per builder column, per side ("file" 2k and 2k + 1), and their ranks.
        let columns = self.ranked.len();
        let mut bounds: Vec<Vec<FileBounds>> = vec![Vec::with_capacity(2 * sides.len()); columns];
        for (_, _, _, ranges) in &sides {
            for range in ranges {
                for (c, b) in self.bounds(range).into_iter().enumerate() {
                    bounds[c].push(b);
                }
            }
        }
        let ranked: Vec<RankedBounds> = bounds.par_iter().map(|b| RankedBounds::new(b)).collect();
        // Per cut, the weighted rows of the live queries its sides skip, summed over the
        // queries on each thread (no query x side matrix is kept: a workload of many
        // queries and cuts would make it large).
        let files_of = |q: usize| -> Vec<ColumnFiles<'_>> {
            self.queries[q]
                .columns
                .iter()
                .map(|&c| ColumnFiles {
                    bounds: &bounds[c],
                    ranked: &ranked[c],
                })
                .collect()
        };
        let gains: Vec<f64> = live
            .par_iter()
            .fold(
                || vec![0.0; sides.len()],
                |mut gains, &q| {
                    let verdict = self.queries[q].pruner.prune(&files_of(q));
                    let w = self.queries[q].weight;
                    for (s, (_, yes, no, _)) in sides.iter().enumerate() {
                        if !verdict[2 * s] {
                            gains[s] += w * *yes as f64;
                        }
                        if !verdict[2 * s + 1] {
                            gains[s] += w * *no as f64;
                        }
                    }
                    gains
                },
            )
            .reduce(
                || vec![0.0; sides.len()],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            );
        let mut best: Option<(f64, usize)> = None;
        for (s, &gain) in gains.iter().enumerate() {
            if gain > 0.0 && best.is_none_or(|(g, _)| gain > g) {
                best = Some((gain, s));
            }
        }
        let (gain, s) = best?;
        // The chosen cut's two sides, tested again: the queries each side may match.
        let chosen: Vec<&[FileBounds]> = bounds.iter().map(|b| &b[2 * s..2 * s + 2]).collect();
        let chosen_ranked: Vec<RankedBounds> =
            chosen.iter().map(|b| RankedBounds::new(b)).collect();
        let verdicts: Vec<[bool; 2]> = live
            .par_iter()
            .map(|&q| {
                let files: Vec<ColumnFiles<'_>> = self.queries[q]
                    .columns
                    .iter()
                    .map(|&c| ColumnFiles {
                        bounds: chosen[c],
                        ranked: &chosen_ranked[c],
                    })
                    .collect();
                let verdict = self.queries[q].pruner.prune(&files);
                [verdict[0], verdict[1]]
            })
            .collect();
        let live_on = |side: usize| -> Vec<usize> {
            verdicts
                .iter()
                .zip(live)
                .filter(|(v, _)| v[side])
                .map(|(_, &q)| q)
                .collect()
        };
        Some(Choice {
            cut: sides[s].0,
            gain,
            live_matching: live_on(0),
            live_other: live_on(1),
        })
    }
}

/// The shared, bound form of the trees of a plan's partitions, by tree id.
pub type BoundTrees = BTreeMap<String, Arc<BoundTree>>;
