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
        let keys: Vec<i64> = (0..n)
            .map(|i| i64::try_from(f * rows + i).unwrap())
            .collect();
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

/// One row as (column name, value as text, `None` for null) per column.
type Row = Vec<(String, Option<String>)>;

/// Every row of every data file of the table, as (file path, its rows), read with the
/// parquet crate.
fn file_rows(location: &str) -> Vec<(String, Vec<Row>)> {
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
    let on_tree = delta_layout::report::score::score(&tree, &workload()).unwrap();
    let on_curve = delta_layout::report::score::score(&curve, &workload()).unwrap();
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
/// tree: the tree's files stay (a larger cube than the new rows), the new rows of
/// neighbouring leaves share files, and the new files carry its id; another workload, or
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
    // Only the appended files are rewritten: the first layout is a larger cube, kept.
    assert_eq!(second.files_removed, 3);
    for file in &laid_out.files {
        assert!(
            after.files.iter().any(|f| f.path == file.path),
            "{} was rewritten",
            file.path
        );
    }
    // The new rows of neighbouring leaves share files of up to the target: fewer files than
    // the leaves they fell in (one per leaf before).
    let new_bytes: u64 = after
        .files
        .iter()
        .filter(|f| !laid_out.files.iter().any(|l| l.path == f.path))
        .map(|f| f.size_bytes)
        .sum();
    assert!(tree.leaves > 4, "{} leaves", tree.leaves);
    assert!(
        second.files_added <= new_bytes.div_ceil(64 << 10) + 1,
        "{} files for {new_bytes} bytes",
        second.files_added
    );
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
        (
            "dv-columnmapping-partitioned",
            "col1 >= 3\npart = 1 AND col1 < 8\n",
        ),
        (
            "timestamp-ntz-partitioned",
            "tsNtz > TIMESTAMP '2021-11-18 02:30:00'\nid IN (1, 5)\n",
        ),
        (
            "partitioned-string-null",
            "4\tnumber > 2\na_float IS NULL\n",
        ),
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
        // A struct has no min/max of its own: its fields are named.
        (
            "all-types-nested",
            "ByteType > 5\nnested_struct.ac > 1\n",
            "line 2: 'nested_struct.ac > 1': column 'nested_struct.ac' is a struct, which has no min/max stats to skip on; compare its fields (nested_struct.ac.aca)",
        ),
        (
            "partitioned-string-null",
            "letter = 'a'\n",
            "partition columns only",
        ),
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

/// Every data file of the latest snapshot as (stats, leaf tag): a multiset, to compare the
/// layouts of two runs.
fn layout(location: &str) -> std::collections::BTreeMap<String, usize> {
    let table = load(location);
    let mut out = std::collections::BTreeMap::new();
    for file in &table.files {
        let add = delta_layout::table::TableView::add_action(file);
        let mut stats: serde_json::Value =
            serde_json::from_str(add.stats.as_deref().unwrap()).unwrap();
        stats.as_object_mut().unwrap().remove("tightBounds");
        let key = format!(
            "{stats} leaf={:?}",
            file.tags.get(TAG_CUT_LEAF).cloned().flatten()
        );
        *out.entry(key).or_default() += 1;
    }
    out
}

/// The CLI's `optimize --workload` in one process, the same out of core (a memory limit far
/// below the table), and as work orders split over several bins executed by separate
/// processes: the same rows, the same tree, the same files.
#[test]
fn work_orders_and_out_of_core_runs_write_what_one_run_writes() {
    use crate::cli::{run, stderr};
    let ok = |args: &[&str]| {
        let output = run(args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let one = lineitem(dir.path(), "one", 16, 2_500, 6);
    let spilled = lineitem(dir.path(), "spilled", 16, 2_500, 6);
    let ordered = lineitem(dir.path(), "ordered", 16, 2_500, 6);
    let before = rows(&one);
    let workload_file = dir.path().join("lineitem.workload");
    std::fs::write(&workload_file, WORKLOAD).unwrap();
    let workload_file = workload_file.display().to_string();
    let target = "64KiB";
    ok(&[
        "optimize",
        &one,
        "--workload",
        &workload_file,
        "--target-size",
        target,
        "--no-report",
        "-q",
    ]);
    ok(&[
        "optimize",
        &spilled,
        "--workload",
        &workload_file,
        "--target-size",
        target,
        "--memory-limit",
        "256KiB",
        "--no-report",
        "-q",
    ]);
    // Work orders: the scope split over bins by key range.
    let total = load(&ordered).totals().bytes;
    let work = tempfile::tempdir().unwrap();
    let plan_path = work.path().join("plan.json").display().to_string();
    let task = (total / 3 + 1).to_string();
    ok(&[
        "plan",
        &ordered,
        "--workload",
        &workload_file,
        "--target-size",
        target,
        "--task-size",
        &task,
        "--out",
        &plan_path,
    ]);
    let order: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    let bins: Vec<u64> = order["plan"]["partitions"][0]["bins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_u64().unwrap())
        .collect();
    assert!(bins.len() >= 3, "{}", order["plan"]);
    assert!(order["plan"]["partitions"][0]["cut_tree"]["nodes"].is_array());
    let mut results = Vec::new();
    for bin in &bins {
        let out = work
            .path()
            .join(format!("r{bin}.json"))
            .display()
            .to_string();
        ok(&[
            "execute",
            &plan_path,
            "--bin",
            &bin.to_string(),
            "--out",
            &out,
            "-q",
        ]);
        results.push(out);
    }
    let mut args = vec!["commit", plan_path.as_str()];
    args.extend(results.iter().map(String::as_str));
    ok(&args);
    for location in [&one, &spilled, &ordered] {
        assert_eq!(rows(location), before, "{location}: rows changed");
    }
    assert_eq!(layout(&spilled), layout(&one), "out of core");
    assert_eq!(layout(&ordered), layout(&one), "work orders");
    // The order's commit records the tree, and a second plan has nothing to do.
    let fixture = Fixture::at(std::path::Path::new(&ordered));
    let version = *fixture.log_versions().last().unwrap();
    let info = fixture
        .commit(version)
        .into_iter()
        .find_map(|a| a.get("commitInfo").cloned())
        .unwrap();
    assert_eq!(
        info["delta-layout.cutTrees"][0]["id"],
        order["plan"]["partitions"][0]["cut_tree"]["id"]
    );
    let again = work.path().join("again.json").display().to_string();
    ok(&[
        "plan",
        &ordered,
        "--workload",
        &workload_file,
        "--target-size",
        target,
        "--out",
        &again,
    ]);
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).unwrap();
    assert!(
        again["plan"]["partitions"].as_array().unwrap().is_empty(),
        "{}",
        again["plan"]
    );
}

/// The row filter that routes rows (Arrow kernels, one batch at a time) agrees with the
/// predicate language's own evaluation (each value parsed as its Delta type) on every row of
/// a real table with every primitive type, for every operator and literals drawn from the
/// data, between its values and beyond them.
#[test]
fn row_filters_agree_with_the_predicate_language_on_every_type() {
    let fixture = Fixture::copy("all-types-nested");
    let table = load(&fixture.location());
    let files = file_rows(&fixture.location());
    let all_rows: Vec<&Vec<(String, Option<String>)>> =
        files.iter().flat_map(|(_, rows)| rows.iter()).collect();
    let path = std::path::Path::new(&fixture.location()).join(&table.files[0].path);
    let batches: Vec<RecordBatch> =
        deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            std::fs::File::open(&path).unwrap(),
        )
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let literal = |column: &str, value: &str| match column {
        "StringType" => format!("'{value}'"),
        "DateType" => format!("DATE '{value}'"),
        "TimestampType" | "TimestampNTZType" => {
            format!(
                "TIMESTAMP '{}'",
                value.replace('T', " ").trim_end_matches('Z')
            )
        }
        _ => value.to_string(),
    };
    let columns = [
        "ByteType",
        "ShortType",
        "IntegerType",
        "LongType",
        "FloatType",
        "DoubleType",
        "decimal",
        "BooleanType",
        "StringType",
        "DateType",
        "TimestampNTZType",
    ];
    let mut predicates = Vec::new();
    for column in columns {
        let mut values: Vec<String> = all_rows
            .iter()
            .filter_map(|row| row.iter().find(|(n, _)| n == column)?.1.clone())
            .collect();
        values.sort();
        values.dedup();
        let picks = [
            values.first().cloned(),
            values.get(values.len() / 3).cloned(),
            values.last().cloned(),
        ];
        for value in picks.into_iter().flatten() {
            let lit = literal(column, &value);
            for op in ["=", "!=", "<", "<=", ">", ">="] {
                predicates.push(format!("{column} {op} {lit}"));
            }
            predicates.push(format!("{column} IN ({lit}, NULL)"));
            predicates.push(format!("NOT ({column} IN ({lit}))"));
        }
        predicates.push(format!(
            "{column} IS NULL OR {column} IS NOT NULL AND {column} = {column}_x"
        ));
    }
    // Literals between and beyond the values.
    for extra in [
        "decimal < 123.525",
        "decimal = 123.525",
        "decimal >= 100000000.001",
        "decimal > -5.5",
        "decimal > 1.5e2",
        "decimal <= 12352.5E-2",
        "decimal < 1e30",
        "decimal != 1e-30",
        "ByteType > 300",
        "ByteType < -300",
        "ByteType != 300",
        "ByteType = -300",
        "ShortType <= 40000",
        "IntegerType >= -3000000000",
        "LongType BETWEEN 5 AND 10",
        "DoubleType NOT BETWEEN 1000 AND 1000000",
        "FloatType > 0.5",
        "FloatType = 0.234",
        "StringType > '2' AND StringType < '3'",
        "DateType BETWEEN DATE '1970-01-10' AND DATE '1970-02-01'",
        "TimestampType >= TIMESTAMP '1970-01-01 12:00:00'",
        "BooleanType = TRUE OR ShortType IS NULL",
        "ShortType = NULL",
    ] {
        predicates.push(extra.to_string());
    }
    let mut compared = 0;
    for text in &predicates {
        // Some generated forms (`x = x_x`) are not predicates: skip those.
        let Ok(predicate) = Predicate::parse(text) else {
            continue;
        };
        let Ok(filter) = delta_layout::filter::RowFilter::new(&table, &predicate) else {
            continue;
        };
        let mut row = 0;
        for batch in &batches {
            let got = filter.evaluate(batch, &[]).unwrap();
            for i in 0..batch.num_rows() {
                let expected = row_matches(&table, &predicate, files[0].1[row].as_slice());
                let actual = got.is_valid(i).then(|| got.value(i));
                assert_eq!(actual, expected, "{text} on row {:?}", files[0].1[row]);
                row += 1;
                compared += 1;
            }
        }
    }
    assert!(compared > 200 * 100, "{compared} comparisons");
}

/// `recommend` ranks compaction, a sort, curves and a cut tree on the training queries,
/// names the workload's best columns first, leaves the table untouched, and its estimate
/// of the pick's skipping is within a few points of what building the pick gets.
#[test]
fn recommend_estimates_what_the_built_pick_gets() {
    let dir = tempfile::tempdir().unwrap();
    let location = lineitem(dir.path(), "lineitem", 24, 2_500, 7);
    let fixture = Fixture::at(std::path::Path::new(&location));
    let listing = fixture.listing();
    let mut options = delta_layout::recommend::RecommendOptions::default();
    options.target_sizes = vec![48 << 10, 96 << 10];
    options.holdout = 0.25;
    let r = recommend(&location, &options);
    assert_eq!(fixture.listing(), listing, "recommend wrote to the table");
    assert_eq!(r.columns[0].column, "l_shipdate", "{:?}", r.columns);
    assert_eq!(r.train_queries + r.test_queries, workload().queries.len());
    assert!(r.test_queries >= 1);
    let layouts: std::collections::BTreeSet<&str> =
        r.candidates.iter().map(|c| c.layout.as_str()).collect();
    for expected in ["compact", "hilbert:l_shipdate", "cuts"] {
        assert!(layouts.contains(expected), "{layouts:?}");
    }
    assert!(layouts.iter().any(|l| l.starts_with("zorder:l_shipdate,")));
    assert_eq!(r.candidates.len(), layouts.len() * 2);
    assert!(
        r.candidates
            .windows(2)
            .all(|w| w[0].train.cost <= w[1].train.cost),
        "ranked by cost"
    );
    assert_eq!(
        r.pick,
        Some(0),
        "{:?} against {:?}",
        r.candidates[0],
        r.current
    );
    let pick = &r.candidates[0];
    assert!(
        pick.train.files_skipped > r.current.train.files_skipped,
        "{pick:?} against {:?}",
        r.current
    );
    let command = r.command.as_deref().unwrap();
    assert!(command.starts_with("delta-layout optimize "), "{command}");
    // Build the pick and score it on the training queries.
    let (train, _) = workload().split(options.holdout, options.seed);
    let mut plan = PlanOptions::default().with_target_file_bytes(Some(pick.target_file_bytes));
    let mut request = match pick.layout.split_once(':') {
        Some((curve, columns)) => Some(ClusterRequest::new(
            delta_layout::curve::Curve::parse(curve).unwrap(),
            columns.split(',').map(str::to_string).collect(),
        )),
        None if pick.layout == "cuts" => Some(ClusterRequest::cuts(train.clone())),
        None => None,
    };
    if let Some(request) = request.as_mut() {
        request.full = true;
    }
    plan = plan.with_clustering(request).with_rewrite_all(true);
    let before = rows(&location);
    optimize(&location, &OptimizeOptions::default().with_plan(plan)).unwrap();
    assert_eq!(rows(&location), before, "rows changed");
    let built = delta_layout::report::score::score(&load(&location), &train).unwrap();
    assert!(
        (built.files_skipped - pick.train.files_skipped).abs() <= 0.05,
        "{}: estimated {:.3} of files skipped, built {:.3}",
        pick.layout,
        pick.train.files_skipped,
        built.files_skipped
    );
    // Asked again, on the table laid out by the pick: keep it as it is.
    let again = recommend(&location, &options);
    assert_eq!(
        again.pick, None,
        "{:?} against {:?}",
        again.candidates[0], again.current
    );
    assert_eq!(again.command, None);
}

/// `recommend` with the test workload on `location`.
fn recommend(
    location: &str,
    options: &delta_layout::recommend::RecommendOptions,
) -> delta_layout::recommend::Recommendation {
    crate::fixture::runtime()
        .block_on(delta_layout::recommend::recommend(
            location,
            &workload(),
            &delta_layout::recommend::CommandNames {
                table: location.to_string(),
                workload: "lineitem.workload".into(),
            },
            options,
            std::sync::Arc::new(delta_layout::progress::NoProgress),
        ))
        .unwrap()
}

/// On a clustered table, the files a candidate's plan leaves alone stay in its estimate:
/// compaction of a laid-out table is the table as it is (it failed with "a sample keeps
/// none of the table's rows"), and after an append it packs the new files and keeps the
/// clustered ones (it was estimated as one file skipped by every query). Sampled estimates
/// keep them too, at the sample's scale.
#[test]
fn recommend_keeps_the_files_a_plan_leaves_alone() {
    let dir = tempfile::tempdir().unwrap();
    let location = lineitem(dir.path(), "lineitem", 24, 2_500, 11);
    let mut request = ClusterRequest::new(
        delta_layout::curve::Curve::Hilbert,
        vec!["l_shipdate".into(), "l_discount".into()],
    );
    request.full = true;
    let plan = PlanOptions::default()
        .with_target_file_bytes(Some(48 << 10))
        .with_clustering(Some(request));
    optimize(&location, &OptimizeOptions::default().with_plan(plan)).unwrap();
    let laid_out = load(&location).files.len() as u64;
    let mut options = delta_layout::recommend::RecommendOptions::default();
    options.target_sizes = vec![48 << 10, 96 << 10];
    options.holdout = 0.25;
    let r = recommend(&location, &options);
    let compact: Vec<_> = r
        .candidates
        .iter()
        .filter(|c| c.layout == "compact")
        .collect();
    assert_eq!(compact.len(), 2);
    for c in &compact {
        assert_eq!(c.rewrite_bytes, 0, "{c:?}");
        assert_eq!(c.files, laid_out, "{c:?}");
        assert!(
            (c.train.cost - r.current.train.cost).abs() <= 1e-9 * r.current.train.cost,
            "{c:?} against {:?}",
            r.current
        );
    }
    // The same curve, estimated anew, is about what was built.
    let same = r
        .candidates
        .iter()
        .find(|c| c.layout == "hilbert:l_shipdate,l_discount" && c.target_file_bytes == 48 << 10)
        .unwrap();
    assert!(
        (same.train.files_skipped - r.current.train.files_skipped).abs() <= 0.05,
        "{same:?} against {:?}",
        r.current
    );

    // Append three small files: compaction packs them and leaves the clustered files.
    let fixture = Fixture::at(std::path::Path::new(&location));
    let appended = lineitem(dir.path(), "more", 3, 300, 12);
    let mut actions = vec![serde_json::json!({"commitInfo": {"operation": "WRITE"}})];
    let mut appended_bytes = 0;
    // The other table's add actions, stats included, under new names.
    let log = std::fs::read_to_string(
        std::path::Path::new(&appended).join("_delta_log/00000000000000000000.json"),
    )
    .unwrap();
    for line in log.lines() {
        let action: serde_json::Value = serde_json::from_str(line).unwrap();
        let Some(add) = action.get("add") else {
            continue;
        };
        let mut add = add.clone();
        let path = add["path"].as_str().unwrap().to_string();
        let name = format!("appended-{path}");
        std::fs::copy(
            std::path::Path::new(&appended).join(&path),
            fixture.path.join(&name),
        )
        .unwrap();
        appended_bytes += add["size"].as_u64().unwrap();
        add["path"] = name.into();
        actions.push(serde_json::json!({ "add": add }));
    }
    assert_eq!(actions.len(), 4);
    fixture.write_commit(fixture.next_version(), &actions);
    let r = recommend(&location, &options);
    assert_eq!(r.current.files, laid_out + 3);
    for c in r.candidates.iter().filter(|c| c.layout == "compact") {
        assert_eq!(c.rewrite_bytes, appended_bytes, "{c:?}");
        assert_eq!(c.files, laid_out + 1, "{c:?}");
        assert!(c.train.files_scanned >= 1.0, "{c:?}");
    }
    // With a sample, the files left alone are kept at its scale: the estimate's files are
    // those of the table, its bytes about the table's.
    options.sample = Some(0.5);
    let sampled = recommend(&location, &options);
    for c in sampled.candidates.iter().filter(|c| c.layout == "compact") {
        assert_eq!(c.files, laid_out + 1, "{c:?}");
        #[expect(clippy::cast_precision_loss, reason = "a ratio")]
        let ratio = c.bytes as f64 / r.bytes as f64;
        assert!(
            (0.9..1.1).contains(&ratio),
            "{c:?}: {ratio} of the table's bytes"
        );
    }
}

/// On a table that declares clustering columns (liquid clustering), `recommend` tries the
/// one layout `optimize` builds there, a Hilbert curve over them, and its command runs.
#[test]
fn recommend_on_a_liquid_table_tries_its_clustering_columns() {
    use crate::cli::{run, stderr};
    let fixture = Fixture::copy("row-tracking-liquid");
    let location = fixture.location();
    let dir = tempfile::tempdir().unwrap();
    let workload_file = dir.path().join("ids.workload");
    std::fs::write(&workload_file, "5\tid < 3\n5\tid >= 7\n").unwrap();
    let workload_file = workload_file.to_str().unwrap();
    let recommend = || -> serde_json::Value {
        let output = run(&[
            "recommend",
            &location,
            "--workload",
            workload_file,
            "--target-sizes",
            "1MiB,4MiB",
            "--holdout",
            "0",
            "--json",
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let r = recommend();
    assert_eq!(r["declared_clustering_columns"], serde_json::json!(["id"]));
    let layouts: Vec<&str> = r["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["layout"].as_str().unwrap())
        .collect();
    assert_eq!(layouts, ["hilbert:id", "hilbert:id"], "{r}");
    let command = r["command"].as_str().unwrap();
    assert!(command.ends_with("--hilbert id"), "{command}");
    run_pick(command, &location);
    assert_eq!(load(&location).files.len(), 1);
    // Laid out: keep it.
    let r = recommend();
    assert!(r["command"].is_null(), "{r}");
    assert!(r["pick"].is_null(), "{r}");
}

/// The CLI: `workload extract` turns SQL into a workload file that `recommend`, `report
/// --workload` and `sweep --workload` take; sweep's estimate of the cut tree matches its
/// build.
#[test]
fn the_workload_commands_work_together() {
    use crate::cli::{run, stderr};
    let dir = tempfile::tempdir().unwrap();
    let location = lineitem(dir.path(), "lineitem", 12, 2_500, 8);
    let sql = dir.path().join("history.sql");
    std::fs::write(
        &sql,
        "-- two runs of Q6, a Q14, a join, and a statement that does not parse\n\
         select sum(l_extendedprice * l_discount) from lineitem\n\
         where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year\n\
           and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24;\n\
         SELECT sum(l_extendedprice * l_discount) FROM lineitem\n\
         WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'\n\
           AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24;\n\
         select count(*) from lineitem l join orders o on l.l_orderkey = o.o_orderkey\n\
         where l.l_shipdate >= date '1995-09-01' and l.l_shipdate < date '1995-10-01' and o.o_orderstatus = 'F';\n\
         select from where = = ;\n\
         select count(*) from orders where o_totalprice > 10;\n",
    )
    .unwrap();
    let workload_file = dir.path().join("extracted.workload");
    let output = run(&[
        "workload",
        "extract",
        sql.to_str().unwrap(),
        "--table",
        "lineitem",
        "--schema",
        &location,
        "--out",
        workload_file.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("statement 4"), "{err}");
    assert!(err.contains("does not read lineitem"), "{err}");
    let extracted = Workload::read(&workload_file).unwrap();
    assert_eq!(extracted.queries.len(), 2, "{}", extracted.to_text());
    assert_eq!(extracted.queries[0].weight, 2, "{}", extracted.to_text());
    assert_eq!(
        extracted.queries[1].predicate.to_string(),
        "(l_shipdate >= DATE '1995-09-01' AND l_shipdate < DATE '1995-10-01')"
            .replace("DATE '", "'"),
        "{}",
        extracted.to_text()
    );
    // No statement reads the table: exit code 2, the reason on stderr, and the `--out` file
    // (here the workload extracted above) left as it was.
    let before = std::fs::read(&workload_file).unwrap();
    let output = run(&[
        "workload",
        "extract",
        sql.to_str().unwrap(),
        "--table",
        "customer",
        "--out",
        workload_file.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("customer"), "{}", stderr(&output));
    assert_eq!(std::fs::read(&workload_file).unwrap(), before);

    let workload_file = workload_file.to_str().unwrap();
    let output = run(&[
        "recommend",
        &location,
        "--workload",
        workload_file,
        "--target-sizes",
        "64KiB",
        "--holdout",
        "0",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let r: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(r["candidates"].as_array().unwrap().len() >= 3, "{r}");
    assert!(
        r["command"].as_str().unwrap().starts_with(&format!(
            "delta-layout optimize {location} --target-size 64KiB"
        )),
        "{r}"
    );
    // The text lists the best few candidates and the pick, `--all` every one.
    let text = |all: bool| -> String {
        let mut args = vec![
            "recommend",
            location.as_str(),
            "--workload",
            workload_file,
            "--target-sizes",
            "32KiB,64KiB,128KiB",
            "--holdout",
            "0",
            "--quiet",
        ];
        if all {
            args.push("--all");
        }
        let output = run(&args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        String::from_utf8(output.stdout).unwrap()
    };
    // Candidate rows start with their rank.
    let ranked = |text: &str| -> usize {
        text.lines()
            .filter(|l| {
                l.starts_with("  ")
                    && l.split_whitespace()
                        .next()
                        .is_some_and(|w| w.parse::<usize>().is_ok())
            })
            .count()
    };
    let (short, long) = (text(false), text(true));
    let shown = delta_layout::cli::RECOMMEND_SHOWN_CANDIDATES;
    assert!(ranked(&long) > shown + 1, "{long}");
    assert!(!long.contains("--all lists"), "{long}");
    let listed = ranked(&short);
    assert!(listed == shown || listed == shown + 1, "{short}");
    assert!(
        short.contains(&format!("and {} more candidate", ranked(&long) - listed)),
        "{short}"
    );
    // Bad options name the flag.
    for (flag, value, needle) in [
        ("--holdout", "1.5", "--holdout"),
        ("--max-columns", "9", "--max-columns"),
        ("--target-sizes", "0", "--target-sizes"),
        ("--min-gain", "1", "--min-gain"),
    ] {
        let output = run(&[
            "recommend",
            &location,
            "--workload",
            workload_file,
            flag,
            value,
        ]);
        assert_eq!(output.status.code(), Some(2));
        assert!(stderr(&output).contains(needle), "{}", stderr(&output));
    }

    let output = run(&["report", &location, "--workload", workload_file, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["workload"]["queries"], 2);
    assert_eq!(report["workload"]["runs"], 3);
    assert_eq!(report["workload"]["files"], 12);

    // sweep: the estimate of the cut tree and its build scan the same files.
    let sweep = |estimate: bool| -> serde_json::Value {
        let mut args = vec![
            "sweep",
            location.as_str(),
            "--workload",
            workload_file,
            "--layout",
            "cuts",
            "--target-sizes",
            "64KiB",
            "--json",
            "-q",
        ];
        if estimate {
            args.push("--estimate");
        }
        let output = run(&args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let (estimated, built) = (sweep(true), sweep(false));
    let files = |v: &serde_json::Value| v["combinations"][0]["files_scanned_avg"].as_f64().unwrap();
    assert_eq!(estimated["combinations"][0]["layout"], "cuts");
    assert!(
        (files(&estimated) - files(&built)).abs() <= 1.0,
        "estimated {} files per query, built {}",
        files(&estimated),
        files(&built)
    );
}

/// A workload of more distinct atomic predicates than [`MAX_CANDIDATE_CUTS`] keeps the cuts
/// of the most runs (the builder's memory grew with every distinct predicate: 20,000 of
/// them took 3.4 GB on a 1 MiB table), and the tree built from them keeps the rows.
#[test]
fn many_distinct_predicates_keep_the_cuts_of_the_most_runs() {
    use delta_layout::plan::cuts::{MAX_CANDIDATE_CUTS, candidate_cuts, ranked_cuts};
    let mut text = String::new();
    for k in 0..MAX_CANDIDATE_CUTS + 500 {
        text.push_str(&format!("l_orderkey >= {}\n", k * 3));
    }
    text.push_str("1000\tl_shipdate >= DATE '1995-06-01'\n");
    text.push_str("400\tl_discount > 0.05 AND l_orderkey >= 30\n");
    let workload = Workload::parse(&text, "many.workload").unwrap();
    let all = candidate_cuts(&workload, &[]);
    assert_eq!(all.len(), MAX_CANDIDATE_CUTS + 502);
    let kept = ranked_cuts(&workload, &[], MAX_CANDIDATE_CUTS);
    assert_eq!(kept.len(), MAX_CANDIDATE_CUTS);
    let names: Vec<String> = kept.iter().map(ToString::to_string).collect();
    assert_eq!(names[0], "l_shipdate >= '1995-06-01'", "{:?}", &names[..3]);
    assert_eq!(names[1], "l_orderkey >= 30", "{:?}", &names[..3]);
    assert_eq!(names[2], "l_discount > 0.05", "{:?}", &names[..3]);
    // Then the rest in order of first appearance.
    assert_eq!(names[3], "l_orderkey >= 0");
    assert_eq!(names[4], "l_orderkey >= 3");
    // Under the cap, every cut in order of first appearance.
    assert_eq!(ranked_cuts(&workload, &[], all.len()), all);

    let dir = tempfile::tempdir().unwrap();
    let location = lineitem(dir.path(), "lineitem", 8, 2_000, 13);
    let before = rows(&location);
    let options = OptimizeOptions::default().with_plan(
        PlanOptions::default()
            .with_target_file_bytes(Some(48 << 10))
            .with_clustering(Some(ClusterRequest::cuts(workload))),
    );
    let outcome = optimize(&location, &options).unwrap();
    assert!(outcome.version.is_some());
    assert_eq!(rows(&location), before, "rows changed");
    let tree = outcome.plan.partitions[0].cut_tree.clone().unwrap();
    assert!(tree.leaves > 1, "{tree:?}");
    // Every cut of the tree is one of those kept.
    for node in &tree.nodes {
        if let CutNode::Cut { cut, .. } = node {
            assert!(names.contains(cut), "{cut} was not kept");
        }
    }
}

/// `--workload -` reads the workload from standard input (read once: `optimize` plans with
/// it and scores the result on it), comments after predicates included.
#[test]
fn a_workload_on_standard_input() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let location = lineitem(dir.path(), "lineitem", 6, 1_500, 21);
    let before = rows(&location);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_delta-layout"))
        .args([
            "optimize",
            &location,
            "--workload",
            "-",
            "--target-size",
            "48KiB",
            "--json",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"# from a pipe\n3\tl_shipdate >= DATE '1996-01-01' # recent\nl_discount > 0.05 -- a promotion\n",
        )
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["curve"], "cuts");
    assert!(result["version"].is_u64(), "{result}");
    assert_eq!(
        result["workload"]["after"]["per_query"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(rows(&location), before, "rows changed");
}

/// When the only queries that could help are held out, `recommend`'s error says so and
/// names `--holdout 0`; with every query it answers.
#[test]
fn a_workload_whose_useful_queries_are_held_out_names_the_holdout() {
    let dir = tempfile::tempdir().unwrap();
    let location = lineitem(dir.path(), "lineitem", 6, 1_000, 31);
    // One query that rules rows out; three that rule none out (every key is >= 0).
    let text =
        "l_shipdate >= DATE '1997-01-01'\nl_orderkey >= 0\nl_orderkey >= -1\nl_orderkey >= -2\n";
    let workload = Workload::parse(text, "held.workload").unwrap();
    let seed = (0..10_000u64)
        .find(|&seed| {
            let (train, _) = workload.split(0.5, seed);
            !train
                .queries
                .iter()
                .any(|q| q.predicate.to_string().contains("l_shipdate"))
        })
        .unwrap();
    let names = delta_layout::recommend::CommandNames {
        table: location.clone(),
        workload: "held.workload".into(),
    };
    let mut options = delta_layout::recommend::RecommendOptions::default();
    options.target_sizes = vec![48 << 10];
    options.holdout = 0.5;
    options.seed = seed;
    let err = crate::fixture::runtime()
        .block_on(delta_layout::recommend::recommend(
            location.as_str(),
            &workload,
            &names,
            &options,
            std::sync::Arc::new(delta_layout::progress::NoProgress),
        ))
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("--holdout 0"), "{message}");
    assert!(message.contains("held.workload"), "{message}");
    options.holdout = 0.0;
    let r = crate::fixture::runtime()
        .block_on(delta_layout::recommend::recommend(
            location.as_str(),
            &workload,
            &names,
            &options,
            std::sync::Arc::new(delta_layout::progress::NoProgress),
        ))
        .unwrap();
    assert_eq!(r.columns[0].column, "l_shipdate");
}

/// A recorded tree that cannot be used, edited in the log (its id no longer matches its
/// content) or naming a column the table no longer has, is reported with the commit that
/// recorded it and why, and the files it laid out are laid out anew (the run no longer
/// fails on it, nor calls it cleaned up); the rows are kept.
#[test]
fn an_unusable_recorded_tree_is_named_and_laid_out_anew() {
    use crate::cli::{run, stderr};
    for case in ["edited", "dropped column", "removed"] {
        let dir = tempfile::tempdir().unwrap();
        let location = lineitem(dir.path(), "lineitem", 8, 1_500, 41);
        let workload_file = dir.path().join("w.workload");
        std::fs::write(&workload_file, WORKLOAD).unwrap();
        let workload_file = workload_file.to_str().unwrap();
        let optimize_cli = || {
            run(&[
                "optimize",
                &location,
                "--workload",
                workload_file,
                "--target-size",
                "64KiB",
                "--json",
            ])
        };
        let first = optimize_cli();
        assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
        let fixture = Fixture::at(std::path::Path::new(&location));
        let version = fixture.next_version() - 1;
        let mut actions = fixture.commit(version);
        let recorded = actions.iter().find_map(|a| a.get("commitInfo")).unwrap()
            [delta_layout::plan::cuts::COMMIT_INFO_CUT_TREES][0]
            .clone();
        let old_id = recorded["id"].as_str().unwrap().to_string();
        let mut tree: delta_layout::plan::cuts::CutTree = serde_json::from_value(recorded).unwrap();
        let cut = tree
            .nodes
            .iter_mut()
            .find_map(|n| match n {
                CutNode::Cut { cut, .. } => Some(cut),
                CutNode::Leaf { .. } => None,
            })
            .unwrap();
        let new_id = if case != "dropped column" {
            // Another cut under the same id.
            *cut = "l_quantity >= 1".into();
            old_id.clone()
        } else {
            // A valid tree whose cut names a column the table does not have, its files
            // tagged with it.
            *cut = "l_gone >= 5".into();
            let rebuilt = delta_layout::plan::cuts::CutTree::new(
                tree.workload.clone(),
                tree.nodes.clone(),
                tree.curve_columns.clone(),
                tree.sampled_rows,
            );
            rebuilt.id.clone()
        };
        tree.id.clone_from(&new_id);
        let info = actions
            .iter_mut()
            .find_map(|a| a.get_mut("commitInfo"))
            .unwrap();
        info[delta_layout::plan::cuts::COMMIT_INFO_CUT_TREES] = if case == "removed" {
            // The commit is in the log, its record of the tree is not.
            serde_json::json!("garbage")
        } else {
            serde_json::json!([tree])
        };
        for action in &mut actions {
            if let Some(tags) = action.get_mut("add").and_then(|a| a.get_mut("tags")) {
                tags[TAG_CUT_TREE] = new_id.clone().into();
            }
        }
        let text: String = actions.iter().map(|a| format!("{a}\n")).collect();
        std::fs::write(
            fixture
                .path
                .join("_delta_log")
                .join(format!("{version:020}.json")),
            text,
        )
        .unwrap();
        let before = rows(&location);
        let files = load(&location).files.len() as u64;
        let second = optimize_cli();
        let err = stderr(&second);
        assert_eq!(second.status.code(), Some(0), "{case}: {err}");
        assert!(!err.contains("cleaned up"), "{case}: {err}");
        if case == "removed" {
            assert!(
                err.contains(
                    "1 of the 1 cut trees the table's files name are recorded in no commit"
                ),
                "{case}: {err}"
            );
        } else {
            assert!(
                err.contains(&format!(
                    "the cut tree {new_id} recorded in the commit of version {version} cannot be used"
                )),
                "{case}: {err}"
            );
        }
        if case == "dropped column" {
            assert!(err.contains("l_gone"), "{case}: {err}");
        } else if case == "edited" {
            assert!(err.contains("does not match its content"), "{case}: {err}");
        }
        let result: serde_json::Value = serde_json::from_slice(&second.stdout).unwrap();
        assert_eq!(result["files_removed"], files, "{case}: laid out anew");
        assert_eq!(rows(&location), before, "{case}: rows changed");
    }
}

/// `recommend`, its command, and `recommend` again: the second answer is to keep the table
/// as it is (it suggested the same rewrite again and again when the estimate of a rebuild
/// came out a few percent smaller than the files the build wrote).
#[test]
fn recommend_then_its_command_then_recommend_keeps_the_table() {
    use crate::cli::{run, stderr};
    let dir = tempfile::tempdir().unwrap();
    let location = lineitem(dir.path(), "lineitem", 16, 2_000, 51);
    let workload_file = dir.path().join("w.workload");
    std::fs::write(&workload_file, WORKLOAD).unwrap();
    let workload_file = workload_file.to_str().unwrap().to_string();
    let before = rows(&location);
    let recommend = || -> serde_json::Value {
        let output = run(&[
            "recommend",
            &location,
            "--workload",
            &workload_file,
            "--target-sizes",
            "32KiB,128KiB",
            "--holdout",
            "0",
            "--json",
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let mut picks = Vec::new();
    for round in 0..3 {
        let r = recommend();
        let Some(command) = r["command"].as_str() else {
            assert!(r["pick"].is_null(), "{r}");
            assert!(round >= 1, "the first answer keeps a shuffled table: {r}");
            assert_eq!(rows(&location), before, "rows changed");
            return;
        };
        picks.push(command.to_string());
        run_pick(command, &location);
    }
    panic!("still rewriting after three rounds: {picks:?}");
}

/// A table without rows: nothing to lay out, so nothing is tried and the answer is to keep
/// it (it was an error blaming the workload).
#[test]
fn recommend_on_a_table_without_rows_keeps_it() {
    let fixture = Fixture::copy("empty-after-delete");
    let location = fixture.location();
    let workload = Workload::parse("column > 5\n", "empty.workload").unwrap();
    let r = crate::fixture::runtime()
        .block_on(delta_layout::recommend::recommend(
            location.as_str(),
            &workload,
            &delta_layout::recommend::CommandNames {
                table: location.clone(),
                workload: "empty.workload".into(),
            },
            &delta_layout::recommend::RecommendOptions::default(),
            std::sync::Arc::new(delta_layout::progress::NoProgress),
        ))
        .unwrap();
    assert_eq!(r.rows, 0);
    assert!(r.candidates.is_empty(), "{:?}", r.candidates);
    assert!(r.columns.is_empty(), "{:?}", r.columns);
    assert_eq!((r.pick, r.command), (None, None));
}

/// Runs `recommend`'s command line (`delta-layout optimize ...`) and checks that it exits 0
/// and keeps the table's rows at `location`.
fn run_pick(command: &str, location: &str) {
    let before = rows(location);
    let args: Vec<&str> = command.split(' ').skip(1).chain(["-q"]).collect();
    let output = crate::cli::run(&args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{command}: {}",
        crate::cli::stderr(&output)
    );
    assert_eq!(rows(location), before, "{command}: rows changed");
}

#[test]
fn decimal_literals_of_39_digits_route_rows() {
    // 10^38 does not fit an i128 at any scale above 0: every decimal(10,2) value lies below
    // it. Was "internal error ... no row comparison" when the cut tree routed rows.
    let fixture = Fixture::copy("all-types-nested");
    let location = fixture.location();
    let before = crate::fixture::rows(&location);
    let big = format!("1{}", "0".repeat(38));
    let workload = fixture.path.join("../big.workload");
    std::fs::write(
        &workload,
        format!("3\tdecimal < {big}\n2\tdecimal > -{big}.5\n1\tdecimal = 0.{big}\n"),
    )
    .unwrap();
    let output = crate::cli::run(&[
        "optimize",
        &location,
        "--workload",
        workload.to_str().unwrap(),
        "--target-size",
        "4KiB",
        // Files of 4 KiB scan more than the one file the table has: allowed, rows are the
        // point here.
        "--allow-regression",
        "--json",
    ]);
    let stderr = crate::cli::stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(json["files_added"].as_u64().unwrap() > 1, "{json}");
    assert_eq!(json["rows"], 200);
    // The workload is scored on the result: the first two keep every file, the third none.
    let per_query = &json["workload"]["after"]["per_query"];
    assert_eq!(per_query[0]["rows_scanned"], 200, "{per_query}");
    assert_eq!(per_query[1]["rows_scanned"], 200, "{per_query}");
    assert_eq!(per_query[2]["files_scanned"], 0, "{per_query}");
    assert_eq!(crate::fixture::rows(&location), before);
}
