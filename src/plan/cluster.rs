//! Planning a clustering run (`--zorder` / `--hilbert`): which columns, and which partitions
//! are already clustered.
//!
//! # Cubes: keeping a layout up to date at the cost of what changed
//! Every file a clustering run writes carries three tags: `ZCUBE_ID`, one id per clustered
//! set of rows (a partition's run), `ZCUBE_ZORDER_BY`, the JSON list of the clustering
//! columns, and `ZCUBE_ZORDER_CURVE`, `zorder`, `hilbert` or `cuts`. In each partition:
//! 1. files of cubes with the same columns and layout (for a cut tree, also of the
//!    partition's tree), without a deletion vector or with one deleting at most
//!    `--max-deleted-ratio` of their rows, are *clustered*; every other file (new data,
//!    another curve or other columns, more deleted rows, a tag this policy does not know) is
//!    *new*;
//! 2. without new files the partition is left alone, so a second run is a no-op;
//! 3. otherwise the run's rows are the new files, then the cubes merged smallest first
//!    (size-tiered, as a log-structured merge tree's levels): a cube is merged when its live
//!    rows (its bytes when a file lacks `numRecords`) are at most 5/4 of those merged before
//!    it (the new files' and the smaller cubes'), and kept as it is when more; a cube of at
//!    least the cube size (default [`DEFAULT_CUBE_BYTES`], 100 GiB, as in Delta Spark) is
//!    *sealed* and never merged; a cube of at least half the target file size whose box (the min/max stats of its files
//!    on the clustering columns) lies apart from the box of the rows merged before it, on
//!    some column (new dates after old ones), is kept too: merging it would tighten no file;
//! 4. `--full` clusters every file of the partition.
//!
//! So after an append the run writes the new rows as a small cube (a few files, each over
//! the whole key range of the new rows), and cubes of about equal size merge unless they lie
//! apart (appends of new dates are written once): every byte is
//! rewritten about `log2(table / append)` times over a table's life, instead of the whole
//! table at every run, and a partition holds at most about `log2(table / append)` cubes, each
//! adding about one file to what a query opens (measured: BENCHMARKS.md, "Incremental
//! clustering"). Delta Spark merges every cube below the cube size with the new files
//! (`OPTIMIZE ZORDER BY`'s ZCubes), which rewrites the whole of any partition under 100 GiB
//! after every append (delta-io/delta#4304); the tiers follow Apache Paimon's and
//! RocksDB's universal compaction (merge runs of similar size).
//!
//! # Tables that declare clustering columns
//! On a table with the `clustering` feature (its `delta.clustering` domain) or the older
//! `liquid` feature (`delta.liquid.clusteringColumns`), a run without a curve option clusters
//! by the declared columns along a Hilbert curve, and a curve option naming other columns is
//! refused. With the `clustering` feature, written files carry `clusteringProvider:
//! delta-layout`, and files another implementation clustered (another provider) are never
//! reclustered, as PROTOCOL.md "Clustered Table" requires.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::cuts::CutTree;
use std::cmp::Ordering;

use crate::bound::ColumnRef;
use crate::curve::{Curve, MAX_DIMENSIONS};
use crate::error::{Error, Result};
use crate::pruning::{DEFAULT_STRING_PREFIX_LENGTH, FileBounds};
use crate::table::{DataFile, LeafColumn, TableView};
use crate::value::Typed;
use crate::workload::Workload;

use crate::curve::{TAG_CUBE_COLUMNS, TAG_CUBE_CURVE, TAG_CUBE_ID};

/// The `clusteringProvider` delta-layout writes on tables with the `clustering` feature.
pub const CLUSTERING_PROVIDER: &str = "delta-layout";

/// Default size at which a cube is sealed: 100 GiB.
pub const DEFAULT_CUBE_BYTES: u64 = 100 << 30;

/// What the user asked for: a curve over named columns (dotted paths for nested fields), or
/// a cut tree along a workload ([`ClusterRequest::cuts`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterRequest {
    /// The curve (inside each leaf, for a cut tree).
    pub curve: Curve,
    /// Column names as given (of the curve inside each leaf, for a cut tree).
    pub columns: Vec<String>,
    /// Lay the rows out by a cut tree fitted to this workload ([`super::cuts`]) instead of
    /// a curve alone; `None` for a curve.
    pub workload: Option<Arc<Workload>>,
    /// Cut trees of earlier runs by id ([`super::cuts::CutTree::id`]), read back from the
    /// log's `commitInfo`: a partition laid out by one built for the same workload routes
    /// its new rows through it. Empty: every partition gets a new tree.
    pub known_trees: BTreeMap<String, CutTree>,
    /// Cubes this large (bytes) are sealed and left alone; `None` for
    /// [`DEFAULT_CUBE_BYTES`].
    pub cube_bytes: Option<u64>,
    /// Recluster every file, sealed cubes included.
    pub full: bool,
}

impl ClusterRequest {
    /// A request for `curve` over `columns`, with the default cube size, incremental.
    #[must_use]
    pub fn new(curve: Curve, columns: Vec<String>) -> Self {
        Self {
            curve,
            columns,
            workload: None,
            known_trees: BTreeMap::new(),
            cube_bytes: None,
            full: false,
        }
    }

    /// A request for a cut tree fitted to `workload`, rows ordered inside each leaf by a
    /// Hilbert curve over the workload's most used data columns
    /// ([`super::cuts::curve_columns`], chosen when the request is resolved against the
    /// table).
    #[must_use]
    pub fn cuts(workload: Workload) -> Self {
        Self {
            workload: Some(Arc::new(workload)),
            ..Self::new(Curve::Hilbert, Vec::new())
        }
    }
}

/// How the rows of one clustering scope (a partition's files to cluster together) are keyed
/// when the scope is split over several bins: computed once, at plan time, from a sample of
/// the scope's rows, so that every bin keys every row the same way and each row lands in
/// exactly one bin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeySpace {
    /// The id of the bin the scope was planned as (the first of its bins keeps it).
    pub scope: usize,
    /// The `ZCUBE_ID` every file of the scope is tagged with: the scope is one cube.
    pub cube_id: String,
    /// The rank buckets of each clustering column, parallel to [`Clustering::columns`].
    pub columns: Vec<crate::curve::keys::BucketCuts>,
    /// Curve-key cut points of the scope's output ranges: range `i` holds the keys at or above
    /// cut `i - 1` and below cut `i` (see `rewrite::cluster::range_boundaries`). Written as
    /// decimal strings in JSON: 64-bit keys lose digits in tools that read numbers as doubles.
    #[serde(with = "u64_strings")]
    pub boundaries: Vec<u64>,
    /// Live rows of the scope, when the log knows them: the rows of its bins must add up to it.
    pub input_rows: Option<u64>,
    /// Rows the buckets and cuts were sampled from.
    pub sampled_rows: u64,
    /// Files of the scope read for the sample.
    pub sampled_files: usize,
}

impl KeySpace {
    /// The number of output ranges (`boundaries.len() + 1`).
    #[must_use]
    pub fn num_ranges(&self) -> usize {
        self.boundaries.len() + 1
    }
}

/// The ranges of a [`KeySpace`] one bin writes: `first..end` (range indices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRange {
    /// Index into [`crate::plan::Plan::key_spaces`].
    pub space: usize,
    /// First range written.
    pub first: usize,
    /// One past the last range written.
    pub end: usize,
}

impl KeyRange {
    /// Whether range `range` is this bin's.
    #[must_use]
    pub fn contains(&self, range: usize) -> bool {
        (self.first..self.end).contains(&range)
    }
}

/// A resolved clustering: the curve and the leaf columns it orders by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Clustering {
    /// The curve, `zorder` or `hilbert`.
    pub curve: Curve,
    /// Logical column names, dotted for nested fields, in key order.
    pub columns: Vec<String>,
    /// The resolved leaves (physical paths, types), parallel to `columns`.
    #[serde(skip)]
    pub leaves: Vec<LeafColumn>,
    /// Cube size at which cubes are sealed, bytes.
    pub cube_bytes: u64,
    /// Every file is reclustered.
    pub full: bool,
    /// `Some(CLUSTERING_PROVIDER)` on tables with the `clustering` feature: written files carry
    /// it, and files of other providers are never reclustered.
    pub provider: Option<String>,
    /// For a cut tree: the [`Workload::digest`] of its workload (the curve then orders rows
    /// inside each leaf). `None` for a curve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_digest: Option<String>,
    /// For a cut tree: the workload new trees are built for (kept by the planning process
    /// only: work orders carry the trees themselves, in [`super::PartitionPlan::cut_tree`]).
    #[serde(skip)]
    pub workload: Option<Arc<Workload>>,
    /// For a cut tree: the trees of earlier runs, by id (see [`ClusterRequest::known_trees`]).
    #[serde(skip)]
    pub known_trees: BTreeMap<String, CutTree>,
}

/// Which files of one partition a clustering run rewrites, and for a cut tree, the tree an
/// earlier run laid them out by, when new rows are routed through it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selected {
    /// Indices into the table's files, ascending; empty when the partition is left alone.
    pub files: Vec<usize>,
    /// The cut tree to route the rows through (an earlier run's); `None`: a curve, or a new
    /// tree to build.
    pub tree: Option<CutTree>,
    /// Why these files: the new files and each cube's fate; `None` for `--full` or a
    /// partition laid out anew (no cube of this layout).
    pub upkeep: Option<Upkeep>,
}

/// What became of one cube of a partition in a run ([`Upkeep::cubes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CubeFate {
    /// Clustered again with the new files: its rows are at most 5/4 of those merged before
    /// it (bytes when a file lacks `numRecords`).
    Merged,
    /// Left as it is: more than 5/4 of the rows merged before it, so merging would rewrite
    /// more than the change.
    Kept,
    /// Left as it is: at least the cube size (`--cube-size`).
    Sealed,
    /// Left as it is: its rows lie apart from the rows merged (the ranges of a clustering
    /// column do not meet, as new dates after old ones) and it is at least half the target
    /// file size, so merging would rewrite it without tightening any file.
    Apart,
}

/// One cube of a partition in a run: its `ZCUBE_ID`, size and fate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CubeUpkeep {
    /// The cube's `ZCUBE_ID`.
    pub cube: String,
    /// Its files.
    pub files: usize,
    /// Its bytes (the files' `size` in the log).
    pub bytes: u64,
    /// Merged, kept, apart or sealed.
    pub fate: CubeFate,
}

/// How a run maintains the layout of one partition that already has one (module docs,
/// "Cubes"): the new files it clusters and what it does with each cube, smallest first.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Upkeep {
    /// Files not in a cube of this layout (appended, with a deletion vector past
    /// `--max-deleted-ratio`, of another layout or writer).
    pub new_files: usize,
    /// Their bytes.
    pub new_bytes: u64,
    /// The partition's cubes of this layout, smallest first.
    pub cubes: Vec<CubeUpkeep>,
}

impl Upkeep {
    /// Bytes of the cubes merged: what the run rewrites beyond the new files.
    #[must_use]
    pub fn merged_bytes(&self) -> u64 {
        self.cubes
            .iter()
            .filter(|c| c.fate == CubeFate::Merged)
            .map(|c| c.bytes)
            .sum()
    }

    /// The cubes with fate `fate`: how many, and their bytes.
    #[must_use]
    pub fn count(&self, fate: CubeFate) -> (usize, u64) {
        self.cubes
            .iter()
            .filter(|c| c.fate == fate)
            .fold((0, 0), |(n, b), c| (n + 1, b + c.bytes))
    }
}

/// A cube merges when it is at most this ratio (numerator, denominator) of what merges before
/// it: 5/4, so appends of about equal size (a few percent apart, as daily loads are) merge as
/// a binary counter's bits do rather than by the luck of which is a row larger. A merged
/// cube's rows still land in a cube at least 9/5 its size, so a row is rewritten at most
/// about `log(partition / append) / log(9/5)` times (1.2x a binary counter's `log2`).
const MERGE_SLACK: (u128, u128) = (5, 4);

/// Whether a file of a cube stays in it: without a deletion vector, or with one deleting at
/// most `max_deleted_ratio` of its rows (`--max-deleted-ratio`, as compaction), so a small
/// `DELETE` or `MERGE` does not pull whole cubes into the next run. A file past the ratio is
/// new: rewritten, its deleted rows dropped.
fn in_place(file: &DataFile, max_deleted_ratio: f64) -> bool {
    file.deletion_vector.is_none() || file.deleted_ratio() <= max_deleted_ratio
}

/// Files of one partition gathered for the tiered merge ([`tiered`]): their indices into the
/// table's files, bytes, live rows and box.
#[derive(Debug, Clone, Default)]
struct Group {
    files: Vec<usize>,
    bytes: u64,
    /// Live rows (`numRecords` less deleted rows); `None` when a file lacks `numRecords`.
    rows: Option<u64>,
    bounds: BoxBounds,
}

impl Group {
    fn add(&mut self, index: usize, file: &DataFile, bounds: &BoxBounds) {
        if self.files.is_empty() {
            self.bounds = bounds.clone();
            self.rows = Some(0);
        } else {
            self.bounds.extend(bounds);
        }
        self.rows = self.rows.zip(file.num_live_rows()).map(|(a, b)| a + b);
        self.files.push(index);
        self.bytes += file.size_bytes;
    }

    /// What the tiers compare: live rows when `rows` (known for every group), else bytes.
    /// Rows, as a rewrite may write more or fewer bytes than it reads (another codec,
    /// row-tracking columns materialized): a new file must weigh what its rows will weigh in a
    /// cube.
    fn size(&self, rows: bool) -> u64 {
        if rows {
            self.rows.unwrap_or(0)
        } else {
            self.bytes
        }
    }
}

/// The box of a set of files on the clustering columns, from their min/max stats: per column
/// the lowest min and highest max, `None` where a file lacks a bound (or its max is a cut-off
/// string prefix).
#[derive(Debug, Clone, Default, PartialEq)]
struct BoxBounds(Vec<Option<(Typed, Typed)>>);

impl BoxBounds {
    /// The box of one file on `columns`.
    fn of(file: &DataFile, columns: &[ColumnRef]) -> Self {
        Self(
            columns
                .iter()
                .map(|column| {
                    let b = FileBounds::of(column, file, DEFAULT_STRING_PREFIX_LENGTH);
                    Some((b.min?, b.max.filter(|_| !b.max_is_prefix)?))
                })
                .collect(),
        )
    }

    /// Grows this box to hold `other`.
    fn extend(&mut self, other: &Self) {
        for (mine, theirs) in self.0.iter_mut().zip(&other.0) {
            *mine = match (mine.take(), theirs) {
                (Some((lo, hi)), Some((olo, ohi))) => {
                    let lo = if olo.compare(&lo) == Some(Ordering::Less) {
                        olo.clone()
                    } else {
                        lo
                    };
                    let hi = if ohi.compare(&hi) == Some(Ordering::Greater) {
                        ohi.clone()
                    } else {
                        hi
                    };
                    Some((lo, hi))
                }
                _ => None,
            };
        }
    }

    /// Whether the boxes are apart: on some column both are known and do not meet.
    fn apart(&self, other: &Self) -> bool {
        self.0.iter().zip(&other.0).any(|(a, b)| match (a, b) {
            (Some((alo, ahi)), Some((blo, bhi))) => {
                ahi.compare(blo) == Some(Ordering::Less) || bhi.compare(alo) == Some(Ordering::Less)
            }
            _ => false,
        })
    }
}

/// The tiered merge of module docs step 3: of the `cubes` of a partition with new files
/// `new`, the files to cluster (ascending) and the upkeep that says why. Cubes of at least
/// `sealed_bytes` are sealed; a cube apart from the rows merged before it and of at least
/// `apart_bytes` is kept ([`CubeFate::Apart`]).
fn tiered(
    new: Group,
    cubes: BTreeMap<String, Group>,
    sealed_bytes: u64,
    apart_bytes: u64,
) -> (Vec<usize>, Upkeep) {
    let rows = new.rows.is_some() && cubes.values().all(|c| c.rows.is_some());
    let mut cubes: Vec<(String, Group)> = cubes.into_iter().collect();
    cubes.sort_by(|a, b| (a.1.size(rows), &a.0).cmp(&(b.1.size(rows), &b.0)));
    let mut upkeep = Upkeep {
        new_files: new.files.len(),
        new_bytes: new.bytes,
        cubes: Vec::new(),
    };
    let mut merged = new;
    for (cube, group) in cubes {
        let bytes = group.bytes;
        let fate = if bytes >= sealed_bytes {
            CubeFate::Sealed
        } else if u128::from(group.size(rows)) * MERGE_SLACK.1
            > u128::from(merged.size(rows)) * MERGE_SLACK.0
        {
            CubeFate::Kept
        } else if bytes >= apart_bytes && group.bounds.apart(&merged.bounds) {
            CubeFate::Apart
        } else {
            merged.bytes += bytes;
            merged.rows = merged.rows.zip(group.rows).map(|(a, b)| a + b);
            merged.bounds.extend(&group.bounds);
            merged.files.extend(&group.files);
            CubeFate::Merged
        };
        let files = group.files;
        upkeep.cubes.push(CubeUpkeep {
            cube,
            files: files.len(),
            bytes,
            fate,
        });
    }
    let mut selected = merged.files;
    selected.sort_unstable();
    (selected, upkeep)
}

impl Clustering {
    /// The layout's name in tags (`ZCUBE_ZORDER_CURVE`), commits and reports: the curve's
    /// ([`Curve::name`]), or [`super::cuts::CUTS_NAME`] for a cut tree.
    #[must_use]
    pub fn layout_name(&self) -> &'static str {
        if self.workload_digest.is_some() {
            super::cuts::CUTS_NAME
        } else {
            self.curve.name()
        }
    }

    /// Whether rows are laid out by a cut tree.
    #[must_use]
    pub fn is_cuts(&self) -> bool {
        self.workload_digest.is_some()
    }

    /// The files of one partition (`(index, file)`) a cut-tree run rewrites:
    /// 1. files of other clustering providers are left out (as for curves);
    /// 2. the partition's tree is the known tree ([`Clustering::known_trees`]) of the same
    ///    workload that laid out the most bytes of it (files tagged [`super::cuts::TAG_CUT_TREE`],
    ///    without a deletion vector that deletes more than `max_deleted_ratio` of their rows);
    /// 3. without such a tree, or with `full`, every file is rewritten along a new tree;
    /// 4. with one, the tree's files are its cubes (by `ZCUBE_ID`) and every other file is
    ///    new: the cubes are merged with the new files as a curve's are (module docs, step 3;
    ///    no new file: the partition is left alone), and the rows are routed through the same
    ///    tree, so each leaf's new rows stay within its bounds.
    #[must_use]
    pub fn select_cuts(
        &self,
        files: &[(usize, &DataFile)],
        target_file_bytes: u64,
        max_deleted_ratio: f64,
    ) -> Selected {
        let files = self.own_files(files);
        let all = || files.iter().map(|(i, _)| *i).collect::<Vec<_>>();
        if self.full {
            return Selected {
                files: all(),
                ..Selected::default()
            };
        }
        let tree_of = |f: &DataFile| -> Option<&CutTree> {
            let id = f.tags.get(super::cuts::TAG_CUT_TREE).cloned().flatten()?;
            if !in_place(f, max_deleted_ratio) {
                return None;
            }
            self.known_trees
                .get(&id)
                .filter(|t| Some(&t.workload) == self.workload_digest.as_ref())
        };
        let mut bytes: BTreeMap<&str, u64> = BTreeMap::new();
        for (_, f) in &files {
            if let Some(tree) = tree_of(f) {
                *bytes.entry(tree.id.as_str()).or_default() += f.size_bytes;
            }
        }
        let Some((&id, _)) = bytes
            .iter()
            .max_by_key(|(id, b)| (**b, std::cmp::Reverse(**id)))
        else {
            return Selected {
                files: all(),
                ..Selected::default()
            };
        };
        let cube_of = |f: &DataFile| {
            tree_of(f)
                .filter(|t| t.id == id)
                .and_then(|_| f.tags.get(TAG_CUBE_ID).cloned().flatten())
        };
        let (files, upkeep) = self.merge(&files, target_file_bytes, cube_of);
        Selected {
            tree: (!files.is_empty())
                .then(|| self.known_trees.get(id).cloned())
                .flatten(),
            files,
            upkeep,
        }
    }

    /// `files` less those of other clustering providers (PROTOCOL.md "Clustered Table").
    fn own_files<'a>(&self, files: &[(usize, &'a DataFile)]) -> Vec<(usize, &'a DataFile)> {
        files
            .iter()
            .copied()
            .filter(|(_, f)| {
                self.provider.is_none()
                    || f.clustering_provider.is_none()
                    || f.clustering_provider == self.provider
            })
            .collect()
    }

    /// The files of a partition to cluster and why, `cube_of` naming the cube a file belongs
    /// to (`None`: a new file): nothing without new files, else [`tiered`]'s merge. The
    /// upkeep is `None` when there is no cube (the partition is laid out anew).
    fn merge(
        &self,
        files: &[(usize, &DataFile)],
        target_file_bytes: u64,
        cube_of: impl Fn(&DataFile) -> Option<String>,
    ) -> (Vec<usize>, Option<Upkeep>) {
        let columns: Vec<ColumnRef> = self.leaves.iter().map(ColumnRef::of_leaf).collect();
        let mut cubes: BTreeMap<String, Group> = BTreeMap::new();
        let mut new = Group::default();
        for &(index, file) in files {
            let bounds = BoxBounds::of(file, &columns);
            match cube_of(file) {
                Some(id) => cubes.entry(id).or_default().add(index, file, &bounds),
                None => new.add(index, file, &bounds),
            }
        }
        if new.files.is_empty() {
            return (Vec::new(), None);
        }
        let has_cubes = !cubes.is_empty();
        let (selected, upkeep) = tiered(new, cubes, self.cube_bytes, target_file_bytes / 2);
        (selected, has_cubes.then_some(upkeep))
    }

    /// The `ZCUBE_ZORDER_BY` value: the JSON list of the columns.
    #[must_use]
    pub fn columns_json(&self) -> String {
        serde_json::to_string(&self.columns).unwrap_or_default()
    }

    /// The files of one partition (`(index, file)`) to cluster together and why, following
    /// the cube rules in the module docs (`target_file_bytes` sizes *apart* cubes; a file
    /// whose deletion vector deletes more than `max_deleted_ratio` of its rows is new); no
    /// files when the partition is left alone.
    #[must_use]
    pub fn select(
        &self,
        files: &[(usize, &DataFile)],
        target_file_bytes: u64,
        max_deleted_ratio: f64,
    ) -> Selected {
        let files = self.own_files(files);
        if self.full {
            return Selected {
                files: files.iter().map(|(i, _)| *i).collect(),
                ..Selected::default()
            };
        }
        let columns = self.columns_json();
        let tag = |f: &DataFile, key: &str| f.tags.get(key).cloned().flatten();
        let (files, upkeep) = self.merge(&files, target_file_bytes, |file| {
            tag(file, TAG_CUBE_ID).filter(|_| {
                in_place(file, max_deleted_ratio)
                    && tag(file, TAG_CUBE_COLUMNS).as_deref() == Some(columns.as_str())
                    && tag(file, TAG_CUBE_CURVE).as_deref() == Some(self.layout_name())
            })
        });
        Selected {
            files,
            tree: None,
            upkeep,
        }
    }
}

/// Resolves `request` against the table's data columns.
///
/// # Errors
/// [`Error::InvalidOption`] naming the flag for no columns or more than
/// [`MAX_DIMENSIONS`]; [`Error::UnknownColumn`] naming the column for a duplicate, a partition
/// column, an unknown column, or a column of a type without order (struct, map, array).
pub fn resolve(table: &TableView, request: &ClusterRequest) -> Result<Clustering> {
    let setting = if request.workload.is_some() {
        crate::Setting::Workload
    } else {
        crate::Setting::CurveColumns(request.curve.name())
    };
    let names = column_names(table, request, &setting)?;
    let requested = parse_columns(table, &names, &setting)?;
    let leaves = table.data_leaf_columns();
    let mut resolved: Vec<LeafColumn> = Vec::new();
    for (name, path) in names.iter().zip(&requested) {
        let name = name.trim();
        let leaf = resolve_column(table, &leaves, name, path, &setting)?;
        if resolved.iter().any(|r| r.logical == leaf.logical) {
            return Err(unknown_column(
                name,
                &setting,
                "is listed twice".to_string(),
            ));
        }
        resolved.push(leaf);
    }
    let cube_bytes = request.cube_bytes.unwrap_or(DEFAULT_CUBE_BYTES);
    if cube_bytes == 0 {
        return Err(Error::invalid_option(
            crate::Setting::CubeSize,
            "must be greater than 0",
        ));
    }
    Ok(Clustering {
        curve: request.curve,
        columns: resolved.iter().map(LeafColumn::display_name).collect(),
        leaves: resolved,
        cube_bytes,
        full: request.full,
        provider: table
            .protocol
            .effective_features()
            .iter()
            .any(|f| f == "clustering")
            .then(|| CLUSTERING_PROVIDER.to_string()),
        workload_digest: request.workload.as_ref().map(|w| w.digest()),
        workload: request.workload.clone(),
        known_trees: request.known_trees.clone(),
    })
}

/// The clustering columns `request` names, as given: its columns, or for a cut tree named
/// without columns the workload's most used data columns.
///
/// # Errors
/// [`Error::InvalidOption`] naming `setting` for a cut tree on a table that declares
/// clustering columns, or a workload that filters partition columns only; what
/// [`super::cuts::curve_columns`] returns.
fn column_names(
    table: &TableView,
    request: &ClusterRequest,
    setting: &crate::Setting,
) -> Result<Vec<String>> {
    if request.workload.is_some()
        && let Some(declared) = &table.clustering_columns
    {
        return Err(Error::invalid_option(
            setting.clone(),
            format!(
                "the table declares clustering columns {} (liquid clustering), so its layout is that clustering; a cut tree would replace it",
                declared.join(", ")
            ),
        ));
    }
    // A cut tree orders rows inside its leaves by the workload's most used columns.
    Ok(match &request.workload {
        Some(workload) if request.columns.is_empty() => {
            let names = super::cuts::curve_columns(table, workload)?;
            if names.is_empty() {
                return Err(Error::invalid_option(
                    setting.clone(),
                    "filters partition columns only: files never straddle partitions, so there is nothing to cut; name data columns in its predicates",
                ));
            }
            names
        }
        _ => request.columns.clone(),
    })
}

/// The column paths of `names`, parsed, checked against the clustering columns `table`
/// declares (the same, in order, if any) and in number (1 to [`MAX_DIMENSIONS`]).
///
/// # Errors
/// [`Error::InvalidOption`] naming `setting` for a name that does not parse, columns other
/// than the declared ones, no column, or too many.
fn parse_columns(
    table: &TableView,
    names: &[String],
    setting: &crate::Setting,
) -> Result<Vec<Vec<String>>> {
    let requested = names
        .iter()
        .map(|name| {
            crate::column::parse_path(name)
                .map_err(|message| Error::invalid_option(setting.clone(), message))
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some(declared) = &table.clustering_columns {
        let same = declared.len() == requested.len()
            && declared.iter().zip(&requested).all(|(a, b)| {
                crate::column::parse_path(a).is_ok_and(|a| crate::column::eq_ignore_case(&a, b))
            });
        if !same {
            return Err(Error::invalid_option(
                setting.clone(),
                format!(
                    "the table declares clustering columns {}; cluster by those (or without a curve, which clusters by them)",
                    declared.join(", ")
                ),
            ));
        }
    }
    if names.is_empty() {
        return Err(Error::invalid_option(
            setting.clone(),
            "needs at least one column",
        ));
    }
    if names.len() > MAX_DIMENSIONS {
        return Err(Error::invalid_option(
            setting.clone(),
            format!(
                "takes at most {MAX_DIMENSIONS} columns, {} were given",
                names.len()
            ),
        ));
    }
    Ok(requested)
}

/// [`Error::UnknownColumn`] for the clustering column `name` of `setting`, saying `message`.
fn unknown_column(name: &str, setting: &crate::Setting, message: String) -> Error {
    Error::UnknownColumn {
        column: name.to_string(),
        setting: Some(setting.clone()),
        message,
    }
}

/// The data column (one of `leaves`, the table's) that the clustering column `name`, parsed
/// as `path`, names: matched exactly, else ignoring case.
///
/// # Errors
/// [`Error::UnknownColumn`] naming `name` and `setting` for a partition column, a struct, a
/// column the table lacks, several columns that differ only in case, or a column of a type
/// without order (variant included).
fn resolve_column(
    table: &TableView,
    leaves: &[LeafColumn],
    name: &str,
    path: &[String],
    setting: &crate::Setting,
) -> Result<LeafColumn> {
    let unknown = |message: String| unknown_column(name, setting, message);
    if path.len() == 1
        && table
            .partition_columns
            .iter()
            .any(|p| p.eq_ignore_ascii_case(&path[0]))
    {
        return Err(unknown(
            "is a partition column: files never straddle partitions, so clustering on it does nothing"
                .to_string(),
        ));
    }
    let exact: Vec<&LeafColumn> = leaves.iter().filter(|l| l.logical == path).collect();
    let matches = if exact.is_empty() {
        leaves
            .iter()
            .filter(|l| crate::column::eq_ignore_case(&l.logical, path))
            .collect()
    } else {
        exact
    };
    let leaf = match matches.as_slice() {
        [one] => (*one).clone(),
        [] => {
            if leaves.iter().any(|l| {
                l.logical.len() > path.len()
                    && crate::column::eq_ignore_case(&l.logical[..path.len()], path)
            }) {
                return Err(unknown(format!(
                    "is a struct, which has no order (name one of its fields as {name}.field)"
                )));
            }
            if let Some(message) = crate::table::schema::void_column_message(&table.schema, path) {
                return Err(unknown(message));
            }
            let known: Vec<String> = leaves.iter().map(LeafColumn::display_name).collect();
            return Err(unknown(format!(
                "does not exist in the table (columns: {})",
                known.join(", ")
            )));
        }
        _ => {
            return Err(unknown(
                "matches several columns that differ only in case".to_string(),
            ));
        }
    };
    if matches!(leaf.data_type, deltalake::kernel::DataType::Variant(_)) {
        return Err(unknown(
            "is a variant, which has no order (PROTOCOL.md \"Variant Data Type\": not a comparable type), so it cannot be a clustering column; cluster on a column the queries filter on beside it"
                .to_string(),
        ));
    }
    if !is_clusterable(&leaf.data_type) {
        return Err(unknown(format!(
            "has type {}, which has no order",
            leaf.data_type
        )));
    }
    if let Some(collation) = crate::table::schema::collation_of(&table.schema, &leaf.logical) {
        return Err(unknown(collated_message(&collation)));
    }
    Ok(leaf)
}

/// Why a string column of `collation` cannot be a curve column.
pub(crate) fn collated_message(collation: &str) -> String {
    format!(
        "is a string collated {collation}: a curve orders strings by their UTF-8 bytes, which is not that collation's order, so queries comparing by the collation would gain nothing (PROTOCOL.md \"Collations Table Feature\"); cluster on another column"
    )
}

/// Whether a curve can order a column of this type: every primitive type, binary included
/// (ordered by its bytes), unlike [`crate::bound::has_min_max`], which leaves binary out because
/// its files keep no min/max stats.
fn is_clusterable(data_type: &deltalake::kernel::DataType) -> bool {
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

/// Serde of `Vec<u64>` as decimal strings (exact in every JSON reader).
mod u64_strings {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(values: &[u64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(values.iter().map(ToString::to_string))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|text| text.parse::<u64>().map_err(serde::de::Error::custom))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(files: Vec<usize>, bytes: u64) -> Group {
        Group {
            files,
            bytes,
            rows: None,
            bounds: BoxBounds::default(),
        }
    }

    /// Ten appends of 1% onto a cube of 100%: the cubes merge as a binary counter, so the
    /// runs rewrite 23% of the table in all (2.3x what was appended) and a partition never
    /// holds more than four cubes; the large cube is never merged.
    #[test]
    fn small_appends_merge_as_a_binary_counter() {
        let mut cubes = BTreeMap::from([("base".to_string(), group(vec![0], 100))]);
        let mut rewritten = Vec::new();
        for round in 1..=10usize {
            let (files, upkeep) = tiered(group(vec![round * 100], 1), cubes.clone(), u64::MAX, 0);
            let merged: u64 = 1 + upkeep.merged_bytes();
            rewritten.push(merged);
            assert_eq!(upkeep.count(CubeFate::Kept).1 + merged, 100 + round as u64);
            for c in upkeep.cubes.iter().filter(|c| c.fate == CubeFate::Merged) {
                cubes.remove(&c.cube);
            }
            assert!(
                !files.contains(&0),
                "round {round}: the base cube was merged"
            );
            cubes.insert(format!("r{round}"), group(files, merged));
            assert!(cubes.len() <= 4, "round {round}: {} cubes", cubes.len());
        }
        assert_eq!(rewritten, [1, 2, 1, 4, 1, 2, 1, 8, 1, 2]);
    }

    /// Sealed cubes are never merged, whatever the new bytes; cubes of equal size merge.
    #[test]
    fn sealed_cubes_stay_and_equal_cubes_merge() {
        let cubes = BTreeMap::from([
            ("a".to_string(), group(vec![1, 2], 10)),
            ("b".to_string(), group(vec![3], 10)),
            ("c".to_string(), group(vec![4], 50)),
        ]);
        let (files, upkeep) = tiered(group(vec![0], 10), cubes.clone(), 40, 0);
        assert_eq!(files, [0, 1, 2, 3]);
        let fates: Vec<CubeFate> = upkeep.cubes.iter().map(|c| c.fate).collect();
        assert_eq!(
            fates,
            [CubeFate::Merged, CubeFate::Merged, CubeFate::Sealed]
        );
        let (files, _) = tiered(group(vec![0], 8), cubes.clone(), u64::MAX, 0);
        assert_eq!(files, [0, 1, 2, 3], "within 5/4 of the new bytes merges");
        let (files, _) = tiered(group(vec![0], 7), cubes, u64::MAX, 0);
        assert_eq!(files, [0], "a cube over 5/4 of the new bytes stays");
    }

    /// A cube whose dates lie before the new rows' is kept when it is at least the apart
    /// size, merged when smaller (a sliver) or when the boxes meet; unknown bounds meet.
    #[test]
    fn cubes_apart_from_the_new_rows_stay_unless_small() {
        let day = |d: u32| Typed::Date(chrono::NaiveDate::from_ymd_opt(1999, 1, d).unwrap());
        let boxed = |files: Vec<usize>, bytes: u64, lo: u32, hi: u32| Group {
            bounds: BoxBounds(vec![Some((day(lo), day(hi)))]),
            ..group(files, bytes)
        };
        let new = boxed(vec![0], 10, 20, 25);
        let old = BTreeMap::from([("old".to_string(), boxed(vec![1], 10, 1, 19))]);
        let (files, upkeep) = tiered(new.clone(), old.clone(), u64::MAX, 5);
        assert_eq!(
            (files.as_slice(), upkeep.cubes[0].fate),
            ([0].as_slice(), CubeFate::Apart)
        );
        let (files, _) = tiered(new.clone(), old, u64::MAX, 11);
        assert_eq!(files, [0, 1], "a cube below the apart size merges");
        let meets = BTreeMap::from([("old".to_string(), boxed(vec![1], 10, 1, 20))]);
        assert_eq!(tiered(new.clone(), meets, u64::MAX, 5).0, [0, 1]);
        let unknown = BTreeMap::from([(
            "old".to_string(),
            Group {
                bounds: BoxBounds(vec![None]),
                ..group(vec![1], 10)
            },
        )]);
        assert_eq!(tiered(new, unknown, u64::MAX, 5).0, [0, 1]);
    }

    /// With live rows known everywhere, the tiers compare rows, not bytes: a cube whose
    /// rewrite made its files larger than the new files of as many rows still merges.
    #[test]
    fn tiers_compare_rows_when_every_file_has_them() {
        let rows = |files: Vec<usize>, bytes: u64, rows: u64| Group {
            rows: Some(rows),
            ..group(files, bytes)
        };
        let cubes = BTreeMap::from([("c".to_string(), rows(vec![1], 16, 100))]);
        assert_eq!(
            tiered(rows(vec![0], 10, 80), cubes.clone(), u64::MAX, 0).0,
            [0, 1]
        );
        assert_eq!(
            tiered(rows(vec![0], 10, 79), cubes.clone(), u64::MAX, 0).0,
            [0]
        );
        // A file without `numRecords`: bytes, so 16 > 10 * 5/4 keeps the cube.
        assert_eq!(tiered(group(vec![0], 10), cubes, u64::MAX, 0).0, [0]);
    }
}
