//! Cut trees (`optimize --workload`): rows kept, the tree recorded and reused, routing and
//! skipping checked against brute force on the rows themselves, and the layout against a
//! Hilbert curve on the same columns.

use std::sync::Arc;

use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::PlanOptions;
use delta_layout::plan::cluster::ClusterRequest;
use delta_layout::plan::cuts::{CutNode, TAG_CUT_LEAF, TAG_CUT_TREE};
use delta_layout::predicate::Predicate;
use delta_layout::workload::Workload;
use deltalake::arrow::array::{
    Array, ArrayRef, Date32Array, Decimal128Array, Int64Array, RecordBatch, StringArray,
};
use deltalake::arrow::datatypes::{DataType, Field, Schema};
use deltalake::arrow::util::display::{ArrayFormatter, FormatOptions};
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

use crate::fixture::{Fixture, load, optimize, rows, synthetic_table};

const MODES: [&str; 7] = ["AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"];
const FLAGS: [&str; 3] = ["A", "N", "R"];

/// A table shaped like TPC-H lineitem: `files` files of `rows` rows dealt at random (no
/// order left over), shipdates over 1992-1998, decimals, low-cardinality strings, a comment.
fn lineitem(dir: &std::path::Path, name: &str, files: usize, rows: usize, seed: u64) -> String {
    let schema = Arc::new(Schema::new(vec![
        Field::new("l_orderkey", DataType::Int64, false),
        Field::new("l_shipdate", DataType::Date32, true),
        Field::new("l_quantity", DataType::Decimal128(15, 2), true),
        Field::new("l_discount", DataType::Decimal128(15, 2), true),
        Field::new("l_shipmode", DataType::Utf8, true),
        Field::new("l_returnflag", DataType::Utf8, true),
        Field::new("l_comment", DataType::Utf8, true),
    ]));
    let mut rng = StdRng::seed_from_u64(seed);
    // 1992-01-02 is day 8036 since 1970; 2,500 days reach 1998-11.
    let mut out = Vec::new();
    for f in 0..files {
        let n = rows;
        let keys: Vec<i64> = (0..n).map(|i| i64::try_from(f * rows + i).unwrap()).collect();
        let dates: Vec<Option<i32>> = (0..n)
            .map(|_| (rng.random_range(0..100) != 0).then(|| 8036 + rng.random_range(0..2500)))
            .collect();
        let quantity: Vec<i128> = (0..n).map(|_| rng.random_range(1..=50) * 100).collect();
        let discount: Vec<i128> = (0..n).map(|_| rng.random_range(0..=10)).collect();
        let modes: Vec<&str> = (0..n).map(|_| MODES[rng.random_range(0..7)]).collect();
        let flags: Vec<&str> = (0..n).map(|_| FLAGS[rng.random_range(0..3)]).collect();
        let comments: Vec<String> = (0..n)
            .map(|_| format!("comment {:08x}", rng.random::<u32>()))
            .collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(keys)),
            Arc::new(Date32Array::from(dates)),
            Arc::new(
                Decimal128Array::from(quantity)
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            ),
            Arc::new(
                Decimal128Array::from(discount)
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            ),
            Arc::new(StringArray::from(modes)),
            Arc::new(StringArray::from(flags)),
            Arc::new(StringArray::from(comments)),
        ];
        out.push(vec![RecordBatch::try_new(schema.clone(), columns).unwrap()]);
    }
    synthetic_table(dir, name, &out).display().to_string()
}

/// A skewed workload in the shape of TPC-H's lineitem predicates.
const WORKLOAD: &str = "\
# yearly revenue (Q6-like), monthly promotions (Q14-like), ship modes (Q12-like), returns
120\tl_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24
80\tl_shipdate >= DATE '1995-01-01' AND l_shipdate < DATE '1996-01-01' AND l_discount BETWEEN 0.02 AND 0.04 AND l_quantity < 25
60\tl_shipdate >= DATE '1996-03-01' AND l_shipdate < DATE '1996-04-01'
40\tl_shipdate >= DATE '1993-09-01' AND l_shipdate < DATE '1993-10-01'
30\tl_shipmode IN ('MAIL', 'SHIP') AND l_shipdate >= DATE '1997-01-01' AND l_shipdate < DATE '1998-01-01'
20\tl_returnflag = 'R'
10\tl_shipdate <= DATE '1998-09-02'
5\tl_shipdate IS NULL
";

fn workload() -> Workload {
    Workload::parse(WORKLOAD, "test workload").unwrap()
}

fn cuts(target: u64) -> OptimizeOptions {
    OptimizeOptions::default().with_plan(
        PlanOptions::default()
            .with_target_file_bytes(Some(target))
            .with_clustering(Some(ClusterRequest::cuts(workload()))),
    )
}

/// Every row of every data file of the table, as (file path, per column: the column's
/// name and the row's value as text, `None` for null), read with the parquet crate.
fn file_rows(location: &str) -> Vec<(String, Vec<Vec<(String, Option<String>)>>)> {
    let table = load(location);
    let options = FormatOptions::default();
    table
        .files
        .iter()
        .map(|file| {
            let path = std::path::Path::new(location).join(&file.path);
            let reader =
                deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                    std::fs::File::open(&path).unwrap(),
                )
                .unwrap()
                .build()
                .unwrap();
            let mut out = Vec::new();
            for batch in reader {
                let batch = batch.unwrap();
                let schema = batch.schema();
                let formatters: Vec<_> = batch
                    .columns()
                    .iter()
                    .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
                    .collect();
                for row in 0..batch.num_rows() {
                    out.push(
                        (0..batch.num_columns())
                            .map(|c| {
                                let value = batch
                                    .column(c)
                                    .is_valid(row)
                                    .then(|| formatters[c].value(row).to_string());
                                (schema.field(c).name().clone(), value)
                            })
                            .collect(),
                    );
                }
            }
            (file.path.clone(), out)
        })
        .collect()
}

/// The predicate's value on one row, by the predicate language's own evaluation (the
/// partition-pruning code path: each value parsed as its column's Delta type), independent
/// of the Arrow kernels the rewrite routes with.
fn row_matches(
    table: &delta_layout::table::TableView,
    predicate: &Predicate,
    row: &[(String, Option<String>)],
) -> Option<bool> {
    let value_of = |path: &[String]| -> delta_layout::Result<_> {
        let field = table
            .schema
            .fields()
            .find(|f| f.name() == &path[0])
            .unwrap();
        let value = row
            .iter()
            .find(|(name, _)| name == &path[0])
            .and_then(|(_, v)| v.as_deref());
        Ok((field.data_type(), value))
    };
    predicate.evaluate(&value_of).unwrap()
}

/// `optimize --workload` keeps every row, records its tree in the commit and its files'
/// tags (one leaf per file), and a second run does nothing.
#[test]
fn a_cut_tree_keeps_rows_and_records_itself() {
    let dir = tempfile::tempdir().unwrap();
    let location = lineitem(dir.path(), "lineitem", 24, 2_500, 1);
    let before = rows(&location);
    let outcome = optimize(&location, &cuts(96 << 10)).unwrap();
    let version = outcome.version.expect("committed");
    assert_eq!(rows(&location), before, "rows changed");
    let tree = outcome.plan.partitions[0]
        .cut_tree
        .clone()
        .expect("the plan holds the tree");
    tree.validate().unwrap();
    assert!(tree.leaves >= 4, "{} leaves", tree.leaves);
    assert_eq!(tree.workload, workload().digest());
    // The commit records the tree; every file carries its id and a leaf.
    let fixture = Fixture::at(std::path::Path::new(&location));
    let commit = fixture.commit(version);
    let info = commit
        .iter()
        .find_map(|a| a.get("commitInfo"))
        .expect("a commitInfo");
    let recorded: Vec<delta_layout::plan::cuts::CutTree> =
        serde_json::from_value(info["delta-layout.cutTrees"].clone()).unwrap();
    assert_eq!(recorded, vec![tree.clone()]);
    assert_eq!(info["operationParameters"]["curve"], "cuts");
    let table = load(&location);
    let mut leaves = std::collections::BTreeSet::new();
    for file in &table.files {
        assert_eq!(
            file.tags.get(TAG_CUT_TREE).cloned().flatten().as_deref(),
            Some(tree.id.as_str()),
            "{}",
            file.path
        );
        let leaf: usize = file
            .tags
            .get(TAG_CUT_LEAF)
            .cloned()
            .flatten()
            .unwrap()
            .parse()
            .unwrap();
        assert!(leaf < tree.leaves);
        leaves.insert(leaf);
    }
    assert_eq!(leaves.len(), tree.leaves, "every leaf has files");
    // A second run on the unchanged table does nothing.
    let again = optimize(&location, &cuts(96 << 10)).unwrap();
    assert_eq!(again.version, None, "{:?}", again.plan);
    assert_eq!(load(&location).version, version);
}

/// Routing through the tree equals walking it row by row with the predicate language's own
/// evaluation; and min/max pruning of the layout never skips a file holding a row a query
/// matches (the brute-force check), for the workload's queries and for queries not in it.
#[test]
fn routing_and_skipping_match_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let location = lineitem(dir.path(), "lineitem", 16, 2_500, 2);
    let source = load(&location);
    let outcome = optimize(&location, &cuts(64 << 10)).unwrap();
    let tree = outcome.plan.partitions[0].cut_tree.clone().unwrap();
    // Routing: the rows of the original files, routed by the tree's kernels, and walked.
    let bound = tree.bind(&source).unwrap();
    let cuts: Vec<Option<Predicate>> = tree
        .nodes
        .iter()
        .map(|n| match n {
            CutNode::Cut { cut, .. } => Some(Predicate::parse(cut).unwrap()),
            CutNode::Leaf { .. } => None,
        })
        .collect();
    let options = FormatOptions::default();
    let mut checked = 0;
    for file in source.files.iter().take(4) {
        let path = std::path::Path::new(&location).join(&file.path);
        let reader =
            deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                std::fs::File::open(&path).unwrap(),
            )
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            let batch = batch.unwrap();
            let routed = bound.route(&batch, &[]).unwrap();
            let schema = batch.schema();
            let formatters: Vec<_> = batch
                .columns()
                .iter()
                .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
                .collect();
            for (r, &leaf) in routed.iter().enumerate() {
                let row: Vec<(String, Option<String>)> = (0..batch.num_columns())
                    .map(|c| {
                        (
                            schema.field(c).name().clone(),
                            batch
                                .column(c)
                                .is_valid(r)
                                .then(|| formatters[c].value(r).to_string()),
                        )
                    })
                    .collect();
                let mut node = 0;
                let walked = loop {
                    match &tree.nodes[node] {
                        CutNode::Leaf { leaf } => break *leaf,
                        CutNode::Cut {
                            matching, other, ..
                        } => {
                            let cut = cuts[node].as_ref().unwrap();
                            node = if row_matches(&source, cut, &row) == Some(true) {
                                *matching
                            } else {
                                *other
                            };
                        }
                    }
                };
                assert_eq!(usize::try_from(leaf).unwrap(), walked, "row {row:?}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 4 * 2_500);

    // Skipping: no skipped file holds a matching row.
    let table = load(&location);
    let analysis = delta_layout::report::Analysis::new(&table, None).unwrap();
    let files = file_rows(&location);
    let mut queries: Vec<Predicate> = workload()
        .queries
        .iter()
        .map(|q| q.predicate.clone())
        .collect();
    for extra in [
        "l_shipdate BETWEEN DATE '1992-05-01' AND DATE '1992-05-09'",
        "l_discount = 0.1 OR l_shipmode = 'FOB'",
        "NOT (l_shipdate >= DATE '1993-01-01') AND l_returnflag IN ('A', 'N')",
        "l_quantity > 49.5",
        "l_shipdate IS NOT NULL AND l_shipdate < DATE '1992-01-03'",
    ] {
        queries.push(Predicate::parse(extra).unwrap());
    }
    let mut skipped_total = 0;
    for predicate in &queries {
        let keep = analysis.may_match(predicate).unwrap();
        for ((path, file_rows), kept) in files.iter().zip(&keep) {
            if *kept {
                continue;
            }
            skipped_total += 1;
            for row in file_rows {
                assert_ne!(
                    row_matches(&table, predicate, row),
                    Some(true),
                    "{path} skipped for {predicate} holds {row:?}"
                );
            }
        }
    }
    assert!(skipped_total > queries.len() * 2, "{skipped_total} skips");
}

/// On the workload it was fitted to, the cut tree reads fewer files than a Hilbert curve
/// over the workload's columns with as many files or more.
#[test]
fn a_cut_tree_reads_fewer_files_than_hilbert_on_its_workload() {
    let dir = tempfile::tempdir().unwrap();
    let tree_table = lineitem(dir.path(), "tree", 24, 2_500, 3);
    let curve_table = lineitem(dir.path(), "curve", 24, 2_500, 3);
    let target = 64 << 10;
    optimize(&tree_table, &cuts(target)).unwrap();
    let curve = OptimizeOptions::default().with_plan(
        PlanOptions::default()
            .with_target_file_bytes(Some(target))
            .with_clustering(Some(ClusterRequest::new(
                delta_layout::curve::Curve::Hilbert,
                vec![
                    "l_shipdate".into(),
                    "l_discount".into(),
                    "l_quantity".into(),
                    "l_shipmode".into(),
                ],
            ))),
    );
    optimize(&curve_table, &curve).unwrap();
    let (tree, curve) = (load(&tree_table), load(&curve_table));
    let on_tree = delta_layout::workload::score::score(&tree, &workload()).unwrap();
    let on_curve = delta_layout::workload::score::score(&curve, &workload()).unwrap();
    assert!(
        tree.files.len() + 2 >= curve.files.len(),
        "{} files against {}",
        tree.files.len(),
        curve.files.len()
    );
    assert!(
        on_tree.files_scanned < 0.8 * on_curve.files_scanned,
        "cut tree scans {:.2} files per run, Hilbert {:.2}",
        on_tree.files_scanned,
        on_curve.files_scanned
    );
    assert_eq!(on_tree.cut_trees.len(), 1);
    assert_eq!(on_tree.cut_trees[0].files, tree.files.len() as u64);
}

/// After an append, a run with the same workload routes the new rows through the same
/// tree: the tree's large files stay, the new files carry its id; another workload, or
/// `--full`, builds a new tree over every file.
#[test]
fn new_rows_are_routed_through_the_recorded_tree() {
    let dir = tempfile::tempdir().unwrap();
    let location = lineitem(dir.path(), "lineitem", 16, 2_500, 4);
    let first = optimize(&location, &cuts(64 << 10)).unwrap();
    let tree = first.plan.partitions[0].cut_tree.clone().unwrap();
    let laid_out = load(&location);
    // Append: another writer adds a copy of three of the original files.
    let fixture = Fixture::at(std::path::Path::new(&location));
    let appended = lineitem(dir.path(), "more", 3, 1_000, 5);
    let mut actions = vec![serde_json::json!({"commitInfo": {"operation": "WRITE"}})];
    for file in &load(&appended).files {
        let name = format!("appended-{}", file.path);
        std::fs::copy(
            std::path::Path::new(&appended).join(&file.path),
            fixture.path.join(&name),
        )
        .unwrap();
        actions.push(serde_json::json!({"add": {
            "path": name,
            "partitionValues": {},
            "size": file.size_bytes,
            "modificationTime": 0,
            "dataChange": true,
        }}));
    }
    fixture.write_commit(fixture.next_version(), &actions);
    let before = rows(&location);
    let second = optimize(&location, &cuts(64 << 10)).unwrap();
    assert!(second.version.is_some());
    assert_eq!(rows(&location), before, "rows changed");
    assert_eq!(
        second.plan.partitions[0].cut_tree.as_ref().map(|t| &t.id),
        Some(&tree.id),
        "the recorded tree is reused"
    );
    let after = load(&location);
    // The tree's files that were not small are untouched.
    let min = second.plan.min_file_bytes;
    for file in laid_out.files.iter().filter(|f| f.size_bytes >= min) {
        assert!(
            after.files.iter().any(|f| f.path == file.path),
            "{} was rewritten",
            file.path
        );
    }
    assert!(
        after
            .files
            .iter()
            .all(|f| f.tags.get(TAG_CUT_TREE).cloned().flatten().as_deref()
                == Some(tree.id.as_str())),
        "every file is laid out by the tree"
    );
    // Unchanged again: nothing to do.
    assert_eq!(optimize(&location, &cuts(64 << 10)).unwrap().version, None);

    // Another workload builds a new tree over every file.
    let other = Workload::parse("l_returnflag = 'A'\n3\tl_discount >= 0.08\n", "other").unwrap();
    let options = OptimizeOptions::default().with_plan(
        PlanOptions::default()
            .with_target_file_bytes(Some(64 << 10))
            .with_clustering(Some(ClusterRequest::cuts(other))),
    );
    let third = optimize(&location, &options).unwrap();
    assert_eq!(third.files_removed, after.files.len() as u64);
    assert_ne!(
        third.plan.partitions[0].cut_tree.as_ref().map(|t| &t.id),
        Some(&tree.id)
    );
    assert_eq!(rows(&location), before, "rows changed");
    // --full: every file again, with the first workload.
    let mut request = ClusterRequest::cuts(workload());
    request.full = true;
    let full = OptimizeOptions::default().with_plan(
        PlanOptions::default()
            .with_target_file_bytes(Some(64 << 10))
            .with_clustering(Some(request)),
    );
    let files = load(&location).files.len() as u64;
    let fourth = optimize(&location, &full).unwrap();
    assert_eq!(fourth.files_removed, files);
    assert_eq!(rows(&location), before, "rows changed");
}

/// A cut tree on every real table whose columns it can cut keeps its rows, and a workload
/// naming a column the table lacks, or only partition columns, is refused naming it, the
/// table untouched.
#[test]
fn cut_trees_on_real_tables_and_bad_workloads() {
    let cases = [
        ("basic-with-checkpoint", "3\tid > 50\nid <= 12\n"),
        (
            "http-requests-delta-rs",
            "5\tEdgeResponseStatus >= 400\nClientRequestMethod = 'POST' AND date = '2023-04-14'\n",
        ),
        (
            "all-types-nested",
            "2\tByteType > 5 AND DoubleType < 100\nStringType IN ('10', '20')\nDateType >= DATE '2020-01-05'\nnested_struct.aa = 'x'\n",
        ),
        ("dv-columnmapping-partitioned", "col1 >= 3\npart = 1 AND col1 < 8\n"),
        (
            "timestamp-ntz-partitioned",
            "tsNtz > TIMESTAMP '2021-11-18 02:30:00'\nid IN (1, 5)\n",
        ),
        ("partitioned-string-null", "4\tnumber > 2\na_float IS NULL\n"),
    ];
    for (name, text) in cases {
        let fixture = Fixture::copy(name);
        let location = fixture.location();
        let before = rows(&location);
        let workload = Workload::parse(text, name).unwrap();
        if let Err(e) = workload.bind(&load(&location)) {
            panic!("{name}: {e}");
        }
        let options = OptimizeOptions::default().with_plan(
            PlanOptions::default()
                .with_target_file_bytes(Some(1 << 10))
                .with_clustering(Some(ClusterRequest::cuts(workload))),
        );
        optimize(&location, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(rows(&location), before, "{name}: rows changed");
    }
    // A column the table lacks: the line is named; partition columns only: refused; the
    // table untouched.
    for (name, text, needle) in [
        ("basic-with-checkpoint", "id > 5\nmissing = 3\n", "line 2"),
        ("partitioned-string-null", "letter = 'a'\n", "partition columns only"),
    ] {
        let fixture = Fixture::copy(name);
        let listing = fixture.listing();
        let workload = Workload::parse(text, "w").unwrap();
        let options = OptimizeOptions::default().with_plan(
            PlanOptions::default().with_clustering(Some(ClusterRequest::cuts(workload))),
        );
        let err = optimize(&fixture.location(), &options)
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{name}: {err}");
        assert_eq!(fixture.listing(), listing, "{name}: table changed");
    }
}
