//! Compaction never commits a bin that does not reduce its file count (issue 31), as a
//! property over generated tables: equal and skewed file sizes, 1 to 50 files, partitioned and
//! not, targets from 1/20 of the table to twice its size. Every committed bin writes fewer
//! files than it removes, the rows stay the same multiset, and a second run commits nothing.

#![expect(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "generated sizes and row counts, far below 2^52"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::PlanOptions;
use deltalake::arrow::array::{Float64Array, Int64Array, RecordBatch, StringArray};
use deltalake::arrow::datatypes::{DataType, Field, Schema};
use deltalake::parquet::arrow::ArrowWriter;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use crate::fixture::{Fixture, load, optimize, rows};

/// One generated table: its files' row counts per partition value (`None`: unpartitioned).
pub(crate) struct Case {
    pub(crate) seed: u64,
    pub(crate) partitions: Vec<Option<String>>,
    /// Rows of each file, with the index of its partition.
    pub(crate) files: Vec<(usize, usize)>,
}

fn generate(seed: u64) -> Case {
    let mut rng = StdRng::seed_from_u64(seed);
    let partitioned = rng.random_bool(0.5);
    let partitions: Vec<Option<String>> = if partitioned {
        (0..rng.random_range(1..=3))
            .map(|p| Some(format!("p{p}")))
            .collect()
    } else {
        vec![None]
    };
    let skewed = rng.random_bool(0.5);
    let num_files = rng.random_range(1..=50);
    let base = rng.random_range(200..2_000);
    let files = (0..num_files)
        .map(|_| {
            let rows = if skewed {
                // Sizes spread over about 30x, most of them small.
                let factor = (rng.random_range(0.0f64..3.4)).exp();
                ((base as f64 * factor / 6.0) as usize).max(20)
            } else {
                base + rng.random_range(0..base / 20 + 1)
            };
            (rng.random_range(0..partitions.len()), rows)
        })
        .collect();
    Case {
        seed,
        partitions,
        files,
    }
}

/// Writes the case as a Delta table (protocol 1/2) at `dir/name`: a partition column `p` when
/// partitioned, data columns `id` (long), `x` (double) and `s` (string), each file with its
/// `numRecords`, in Hive-style partition directories.
fn write_case(dir: &Path, name: &str, case: &Case) -> PathBuf {
    write_case_with(dir, name, case, &|_| false)
}

/// As [`write_case`]; files for which `bounds(i)` holds also record `minValues`,
/// `maxValues` and `nullCount` of `id` and `x`.
pub(crate) fn write_case_with(
    dir: &Path,
    name: &str,
    case: &Case,
    bounds: &dyn Fn(usize) -> bool,
) -> PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();
    let partitioned = case.partitions[0].is_some();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("x", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let mut fields = vec![
        json!({"name": "id", "type": "long", "nullable": true, "metadata": {}}),
        json!({"name": "x", "type": "double", "nullable": true, "metadata": {}}),
        json!({"name": "s", "type": "string", "nullable": true, "metadata": {}}),
    ];
    if partitioned {
        fields.push(json!({"name": "p", "type": "string", "nullable": true, "metadata": {}}));
    }
    let schema_string = json!({"type": "struct", "fields": fields}).to_string();
    let mut lines = vec![
        json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}).to_string(),
        json!({"metaData": {
            "id": "00000000-0000-0000-0000-000000000031",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string,
            "partitionColumns": if partitioned { vec!["p"] } else { vec![] },
            "configuration": {},
            "createdTime": 0,
        }})
        .to_string(),
    ];
    let mut rng = StdRng::seed_from_u64(case.seed ^ 0x5eed);
    let mut next_id = 0i64;
    for (i, &(partition, num_rows)) in case.files.iter().enumerate() {
        let ids: Vec<i64> = (next_id..next_id + num_rows as i64).collect();
        next_id += num_rows as i64;
        let xs: Vec<f64> = (0..num_rows).map(|_| rng.random_range(0.0..1e6)).collect();
        let ss: Vec<String> = (0..num_rows)
            .map(|_| format!("v{:08}", rng.random_range(0..100_000_000u32)))
            .collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(Float64Array::from(xs)),
                Arc::new(StringArray::from(ss)),
            ],
        )
        .unwrap();
        let directory = match &case.partitions[partition] {
            Some(value) => format!("p={value}/"),
            None => String::new(),
        };
        std::fs::create_dir_all(root.join(&directory)).unwrap();
        let path = format!("{directory}part-{i:05}.snappy.parquet");
        let mut buffer = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut buffer, schema.clone(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        std::fs::write(root.join(&path), &buffer).unwrap();
        let mut stats = json!({"numRecords": num_rows});
        if bounds(i) {
            let xs = batch
                .column(1)
                .as_any()
                .downcast_ref::<Float64Array>()
                .unwrap();
            let (lo, hi) = xs
                .values()
                .iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
            stats["minValues"] = json!({"id": next_id - num_rows as i64, "x": lo});
            stats["maxValues"] = json!({"id": next_id - 1, "x": hi});
            stats["nullCount"] = json!({"id": 0, "x": 0});
        }
        let partition_values = match &case.partitions[partition] {
            Some(value) => json!({"p": value}),
            None => json!({}),
        };
        lines.push(
            json!({"add": {
                "path": path,
                "partitionValues": partition_values,
                "size": buffer.len(),
                "modificationTime": 0,
                "dataChange": true,
                "stats": stats.to_string(),
            }})
            .to_string(),
        );
    }
    std::fs::write(
        root.join("_delta_log").join(format!("{:020}.json", 0)),
        lines.join("\n"),
    )
    .unwrap();
    root
}

fn decode(path: &str) -> String {
    percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .unwrap()
        .into_owned()
}

/// Checks one committed compaction against its plan: in every partition it wrote fewer files
/// than it removed, it added nothing where it removed nothing, and each bin of the plan had
/// all of its input files removed or none (bins of later rounds merge with the bins whose
/// files they read, so a committed unit is one or more planned bins). Returns the planned
/// bins committed.
fn check_committed_bins(
    fixture: &Fixture,
    outcome: &delta_layout::optimize::OptimizeOutcome,
    what: &str,
) -> usize {
    let version = outcome.version.expect("a committed version");
    let actions = fixture.commit(version);
    let partition_of = |action: &Value| action["partitionValues"].to_string();
    let mut removed: BTreeSet<String> = BTreeSet::new();
    let mut per_partition: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for remove in actions.iter().filter_map(|a| a.get("remove")) {
        removed.insert(decode(remove["path"].as_str().unwrap()));
        per_partition.entry(partition_of(remove)).or_default().0 += 1;
    }
    for add in actions.iter().filter_map(|a| a.get("add")) {
        per_partition.entry(partition_of(add)).or_default().1 += 1;
    }
    for (partition, (removes, adds)) in &per_partition {
        assert!(
            adds < removes,
            "{what}: partition {partition} committed {adds} files for {removes}"
        );
    }
    let before = crate::fixture::runtime()
        .block_on(delta_layout::table::TableView::load(
            fixture.location(),
            Some(outcome.read_version),
        ))
        .unwrap();
    let mut committed = 0;
    let mut removed_by_bins = BTreeSet::new();
    for bin in outcome.plan.bins() {
        let inputs: BTreeSet<String> = bin
            .files
            .iter()
            .map(|&i| before.files[i].path.clone())
            .collect();
        if inputs.is_subset(&removed) {
            committed += 1;
            removed_by_bins.extend(inputs);
        } else {
            assert!(
                inputs.is_disjoint(&removed),
                "{what}: bin {} was committed in part",
                bin.id
            );
        }
    }
    // Files no planned bin held were picked up by a later round: still candidates.
    for path in removed.difference(&removed_by_bins) {
        let file = before.files.iter().find(|f| &f.path == path).unwrap();
        assert!(
            file.size_bytes < outcome.plan.min_file_bytes,
            "{what}: {path} of {} bytes is not a candidate",
            file.size_bytes
        );
    }
    assert_eq!(
        outcome.files_removed as usize,
        removed.len(),
        "{what}: files_removed"
    );
    committed
}

#[test]
fn every_committed_compaction_bin_reduces_the_file_count_and_a_second_run_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut committed_bins = 0;
    let mut runs_committed = 0;
    let mut cases = 0;
    for seed in 0..36u64 {
        let case = generate(seed);
        let root = write_case(dir.path(), &format!("case-{seed}"), &case);
        let fixture = Fixture::at(&root);
        let location = fixture.location();
        let table_bytes = load(&location).totals().bytes;
        let before = rows(&location);
        // Targets from 1/20 of the table to twice its size, log-uniform.
        let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(7919));
        let fraction = (rng.random_range((1.0f64 / 20.0).ln()..2.0f64.ln())).exp();
        let target = ((table_bytes as f64 * fraction) as u64).max(1024);
        let what = format!(
            "seed {seed} ({} files, {} partitions, target {target} of {table_bytes} bytes)",
            case.files.len(),
            case.partitions.len()
        );
        let options = OptimizeOptions::default()
            .with_plan(PlanOptions::default().with_target_file_bytes(Some(target)));
        let first = optimize(&location, &options).unwrap();
        if first.version.is_some() {
            runs_committed += 1;
            committed_bins += check_committed_bins(&fixture, &first, &what);
        } else {
            assert_eq!(fixture.log_versions(), vec![0], "{what}: nothing to commit");
        }
        assert_eq!(rows(&location), before, "{what}: rows");
        // Every bin the run wrote but left alone wrote no fewer files than it read: nothing
        // of it is left in the table directory beside the committed files.
        let listed: Vec<String> = fixture
            .listing()
            .into_keys()
            .filter(|p| p.ends_with(".parquet"))
            .collect();
        let live: BTreeSet<String> = load(&location)
            .files
            .iter()
            .map(|f| f.path.clone())
            .collect();
        let stray: Vec<&String> = listed
            .iter()
            .filter(|p| !live.contains(*p) && p.contains(&first.plan.run_id))
            .collect();
        assert!(
            stray.is_empty(),
            "{what}: files of bins left alone stayed: {stray:?}"
        );

        let versions = fixture.log_versions();
        let second = optimize(&location, &options).unwrap();
        assert_eq!(
            second.version,
            None,
            "{what}: the second run committed (ratio {}, bins of (files, input bytes): {:?})",
            second.plan.output_ratio,
            second
                .plan
                .bins()
                .map(|b| (b.files.len(), b.input_bytes))
                .collect::<Vec<_>>()
        );
        assert_eq!(fixture.log_versions(), versions, "{what}: second run");
        assert_eq!(rows(&location), before, "{what}: rows after the second run");
        cases += 1;
    }
    // The property holds over cases that commit, not only over ones that do nothing.
    assert_eq!(cases, 36);
    assert!(runs_committed >= 12, "only {runs_committed} runs committed");
    assert!(committed_bins >= 20, "only {committed_bins} bins committed");
}

/// Two files of random numbers (written uncompressed, as the writer writes them with
/// `--compression none`) of about 0.7 of `target` each: the plan's forced output ratio of 0.5
/// expects them to write one file, but they write about 1.4 targets, cut into two.
fn two_files_that_write_two(dir: &Path) -> (PathBuf, u64) {
    let mut rng = StdRng::seed_from_u64(31);
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Float64, true),
    ]));
    let files: Vec<Vec<RecordBatch>> = (0..2)
        .map(|_| {
            let a: Vec<i64> = (0..20_000).map(|_| rng.random()).collect();
            let b: Vec<f64> = (0..20_000).map(|_| rng.random()).collect();
            vec![
                RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(Int64Array::from(a)),
                        Arc::new(Float64Array::from(b)),
                    ],
                )
                .unwrap(),
            ]
        })
        .collect();
    let root = crate::fixture::synthetic_table(dir, "two", &files);
    let bytes: u64 = load(&root.display().to_string())
        .files
        .iter()
        .map(|f| f.size_bytes)
        .sum();
    (root, (bytes as f64 / 2.0 / 0.7) as u64)
}

fn forced(target: u64) -> OptimizeOptions {
    OptimizeOptions::default()
        .with_codec(delta_layout::rewrite::write::Codec::parse("none").unwrap())
        .with_plan(
            PlanOptions::default()
                .with_target_file_bytes(Some(target))
                .with_output_ratio(Some(0.5)),
        )
}

#[test]
fn a_bin_that_writes_as_many_files_as_it_reads_is_not_committed() {
    let dir = tempfile::tempdir().unwrap();
    let (root, target) = two_files_that_write_two(dir.path());
    let fixture = Fixture::at(&root);
    let location = fixture.location();
    let listing = fixture.listing();
    let options = forced(target);

    let outcome = optimize(&location, &options).unwrap();
    let bin = outcome.plan.bins().next().unwrap();
    assert_eq!((bin.files.len(), bin.expected_output_files), (2, 1));
    assert_eq!(outcome.version, None);
    assert_eq!((outcome.bins_left_alone, outcome.files_left_alone), (1, 2));
    assert_eq!(
        (outcome.bins, outcome.files_removed, outcome.files_added),
        (0, 0, 0)
    );
    // Nothing committed, every written file deleted: the table is as it was, byte for byte.
    assert_eq!(fixture.listing(), listing);

    // The same through the work orders: execute says the bin was left alone and deletes its
    // files; commit commits nothing and says so.
    let rt = crate::fixture::runtime();
    let order = rt
        .block_on(delta_layout::workorder::plan(
            location.as_str(),
            &options,
            &Default::default(),
        ))
        .unwrap();
    assert_eq!(order.bin_ids(), vec![0]);
    let results = rt
        .block_on(delta_layout::workorder::execute(
            &order,
            &[0],
            Default::default(),
            &options,
            Arc::new(delta_layout::progress::NoProgress),
        ))
        .unwrap();
    assert_eq!(results.len(), 1);
    assert!(results[0].left_alone);
    assert!(results[0].files.is_empty());
    assert_eq!(fixture.listing(), listing);
    // With verification too: a bin left alone wrote nothing to check.
    let verified = rt
        .block_on(delta_layout::workorder::execute(
            &order,
            &[0],
            Default::default(),
            &options.clone().with_verify(true),
            Arc::new(delta_layout::progress::NoProgress),
        ))
        .unwrap();
    assert!(verified[0].left_alone && verified[0].verified);
    assert_eq!(fixture.listing(), listing);
    let committed = rt
        .block_on(delta_layout::workorder::commit(
            &order,
            results.clone(),
            Default::default(),
            &delta_layout::workorder::CommitOptions::default(),
        ))
        .unwrap();
    assert!(committed.versions.is_empty());
    assert_eq!(committed.bins_left_alone, vec![0]);
    assert!(committed.bins_committed.is_empty());
    assert_eq!(fixture.listing(), listing);

    // And through the command line: `commit` exits 0 and names the bin left alone.
    let plan_path = dir.path().join("plan.json");
    std::fs::write(&plan_path, order.to_json().unwrap()).unwrap();
    let result_path = dir.path().join("r0.json");
    let output = crate::cli::run(&[
        "execute",
        plan_path.to_str().unwrap(),
        "--bin",
        "0",
        "--out",
        result_path.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        crate::cli::stderr(&output)
    );
    let document: Value =
        serde_json::from_str(&std::fs::read_to_string(&result_path).unwrap()).unwrap();
    assert_eq!(document["results"][0]["left_alone"], json!(true));
    let output = crate::cli::run(&[
        "commit",
        plan_path.to_str().unwrap(),
        result_path.to_str().unwrap(),
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        crate::cli::stderr(&output)
    );
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &crate::cli::stderr(&output);
    assert!(text.contains("left alone: bins 0"), "{text}");
    assert_eq!(fixture.log_versions(), vec![0]);
    assert_eq!(rows(&location).len(), 40_000);
}
