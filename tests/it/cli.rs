//! The command line: exit codes, messages that name the culprit, untouched tables.

use std::process::{Command, Output};

use serde_json::Value;

use crate::fixture::{Fixture, rows};

pub(crate) fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_delta-layout"))
        .args(args)
        .output()
        .unwrap()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs `args` on a copy of `table` (the location replaces `{}`), expects exit code 2, a
/// message containing every `needle`, and an untouched table apart from `allowed_change`.
pub(crate) fn expect_error(fixture: &Fixture, args: &[&str], needles: &[&str]) {
    let listing = fixture.listing();
    let location = fixture.location();
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "{}" { location.as_str() } else { a })
        .collect();
    let output = run(&args);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
    assert!(message.starts_with("delta-layout: "), "{message}");
    assert_eq!(message.trim().lines().count(), 1, "one line: {message}");
    for needle in needles {
        assert!(
            message.contains(needle),
            "{args:?}: '{needle}' not in: {message}"
        );
    }
    assert!(!message.contains("internal error"), "{message}");
    assert_eq!(fixture.listing(), listing, "{args:?} changed the table");
}

#[test]
fn bad_options_name_the_option() {
    let fixture = Fixture::copy("partitioned-string-null");
    expect_error(
        &fixture,
        &["optimize", "{}", "--target-size", "12 parsecs"],
        &["--target-size", "parsecs"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--target-size", "0"],
        &["--target-size"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--min-file-size", "x"],
        &["--min-file-size"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--max-deleted-ratio", "2"],
        &["--max-deleted-ratio"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--where", "nope = 1"],
        &["'nope'", "--where", "columns: letter, number"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--where", "number = 'abc'"],
        &["'abc'", "does not fit column 'number'"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--where-include-unknown"],
        &["--where"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--where", "letter = "],
        &["invalid predicate"],
    );
    expect_error(
        &fixture,
        &["inspect", "{}", "--version", "99"],
        &["--version", "99"],
    );
    expect_error(&fixture, &["optimize", "{}", "--bogus"], &["--bogus"]);
    expect_error(
        &fixture,
        &["optimize", "{}", "--threads", "abc"],
        &["--threads", "abc"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--target-size", "1.5"],
        &["--target-size", "whole number"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--temp-dir", "/nonexistent/spill"],
        &[
            "--temp-dir",
            "/nonexistent/spill",
            "not an existing local directory",
        ],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--read-concurrency", "0"],
        &["--read-concurrency", "1 to 256"],
    );
    expect_error(
        &fixture,
        &["inspect", "{}", "--storage-option", "AWS_SECRET_ACCESS_KEY"],
        &["--storage-option", "KEY=VALUE"],
    );
    let longs = Fixture::copy("delta-rs-small-appends");
    expect_error(
        &longs,
        &["optimize", "{}", "--where", "part = 'x' OR part IS NULL"],
        &["part = 'x' OR part IS NULL", "does not fit column 'part'"],
    );
}

#[test]
fn not_a_delta_table_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().display().to_string();
    let output = run(&["optimize", &empty]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains(&empty), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "must not create anything"
    );
    let missing = format!("{empty}/does-not-exist");
    let output = run(&["inspect", &missing]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("does-not-exist"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn missing_and_corrupt_data_files_are_named_and_nothing_is_left_behind() {
    // Several bins on one thread: bins before the bad file write files, which must go.
    let fixture = Fixture::copy("basic-with-checkpoint");
    let victim = "part-00001-2b1b4d5e-2b2e-4a6a-a3c0-96f2ab0ad5c6-c000.snappy.parquet";
    let mut names: Vec<String> = std::fs::read_dir(&fixture.path)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".parquet"))
        .collect();
    names.sort();
    let victim = if names.iter().any(|n| n == victim) {
        victim.to_string()
    } else {
        names[names.len() - 1].clone()
    };
    std::fs::remove_file(fixture.path.join(&victim)).unwrap();
    expect_error(
        &fixture,
        &[
            "optimize",
            "{}",
            "--target-size",
            "4000",
            "--min-file-size",
            "3900",
            "--threads",
            "1",
        ],
        &[&victim, "missing"],
    );

    let fixture = Fixture::copy("basic-with-checkpoint");
    std::fs::write(fixture.path.join(&names[3]), b"this is not parquet").unwrap();
    expect_error(
        &fixture,
        &[
            "optimize",
            "{}",
            "--target-size",
            "4000",
            "--min-file-size",
            "3900",
            "--threads",
            "1",
        ],
        &[&names[3], "not a readable Parquet file"],
    );
}

#[test]
fn refused_feature_exits_2_naming_it() {
    let fixture = Fixture::copy("basic-with-checkpoint");
    fixture.write_commit(
        fixture.next_version(),
        &[
            serde_json::json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
            "readerFeatures": [],
            "writerFeatures": ["appendOnly", "invariants", "icebergCompatV3"]}}),
        ],
    );
    expect_error(
        &fixture,
        &["optimize", "{}"],
        &["icebergCompatV3", "the table was not changed"],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--dry-run"],
        &["icebergCompatV3"],
    );
}

#[test]
fn inspect_and_optimize_json() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    let location = fixture.location();
    let output = run(&["inspect", &location, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["files"], 12);
    assert_eq!(report["rows"], 16);
    assert_eq!(report["partitions"], 1);
    assert_eq!(report["files_below_min_size"], 12);
    let histogram_files: u64 = report["size_histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["files"].as_u64().unwrap())
        .sum();
    assert_eq!(histogram_files, 12);

    let before = rows(&location);
    let output = run(&["optimize", &location, "--json", "--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let outcome: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outcome["version"], 12);
    assert_eq!(outcome["files_removed"], 12);
    assert_eq!(outcome["files_added"], 1);
    assert_eq!(outcome["rows"], 16);
    assert_eq!(outcome["partitions"], 1);
    assert_eq!(outcome["bins"], 1);
    assert!(outcome["bytes_removed"].as_u64().unwrap() > 0);
    assert!(outcome["bytes_added"].as_u64().unwrap() > 0);
    assert!(outcome["duration_ms"].is_u64());
    assert_eq!(rows(&location), before);

    let output = run(&["inspect", &location]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("files      1 "), "{text}");

    // Time travel: version 0 held the first append only.
    let output = run(&["inspect", &location, "--version", "0", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["version"], 0);
    assert_eq!(report["files"], 1);
}

/// Each table feature outside the supported list is refused by name and reason, before
/// anything is written; each feature in it is accepted, and `inspect` says which is which.
/// The table is `basic-with-checkpoint` upgraded to protocol 3/7 with the feature.
#[test]
fn every_feature_is_supported_or_refused_with_a_reason() {
    let supported = [
        ("inCommitTimestamp", false),
        ("checkpointProtection", false),
        ("allowColumnDefaults", false),
        ("typeWidening", true),
        ("vacuumProtocolCheck", true),
        ("variantType", true),
        ("variantType-preview", true),
        ("variantShredding", true),
        ("variantShredding-preview", true),
        ("materializePartitionColumns", false),
        ("collations", false),
        // Supported, not active (no `delta.enableIcebergCompatV2`): no rule applies.
        ("icebergCompatV2", false),
    ];
    for (feature, in_reader) in supported {
        let fixture = Fixture::copy("basic-with-checkpoint");
        let reader: Vec<&str> = if in_reader { vec![feature] } else { vec![] };
        fixture.write_commit(
            fixture.next_version(),
            &[
                serde_json::json!({"commitInfo": {"operation": "SET TBLPROPERTIES"}}),
                serde_json::json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                    "readerFeatures": reader,
                    "writerFeatures": ["appendOnly", "invariants", feature]}}),
            ],
        );
        let location = fixture.location();
        let output = run(&["inspect", &location, "--json"]);
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["feature_support"][feature], "supported", "{feature}");
        let before = rows(&location);
        let output = run(&["optimize", &location, "--quiet"]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{feature}: {}",
            stderr(&output)
        );
        assert_eq!(rows(&location), before, "{feature}");
    }
    let writer_only = ["icebergCompatV3", "someFeatureFromTheFuture"];
    for feature in writer_only {
        let fixture = Fixture::copy("basic-with-checkpoint");
        let reader: Vec<&str> = vec![];
        let protocol = serde_json::json!({"protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": reader,
            "writerFeatures": ["appendOnly", "invariants", feature],
        }});
        fixture.write_commit(
            fixture.next_version(),
            &[
                serde_json::json!({"commitInfo": {"operation": "SET TBLPROPERTIES"}}),
                protocol,
            ],
        );
        expect_error(&fixture, &["optimize", "{}"], &[feature]);
        let output = run(&["inspect", &fixture.location(), "--json"]);
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        let verdict = report["feature_support"][feature].as_str().unwrap();
        assert_ne!(verdict, "supported", "{feature}");
        assert!(verdict.len() > 20, "{feature}: a reason, got {verdict}");
    }
}

#[test]
fn report_json_predicates_compare_and_html() {
    let fixture = Fixture::copy("http-requests-delta-rs");
    let location = fixture.location();
    let dir = tempfile::tempdir().unwrap();
    let predicates = dir.path().join("predicates.sql");
    std::fs::write(
        &predicates,
        "# one per line\nEdgeResponseBytes > 305\n\ndate = DATE '2023-04-14' AND ClientIP IS NOT NULL\n",
    )
    .unwrap();
    let listing = fixture.listing();
    let output = run(&[
        "report",
        &location,
        "--json",
        "--predicates",
        predicates.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(fixture.listing(), listing, "report must not write");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["files"], 2);
    assert_eq!(report["rows"], 1581);
    let column = &report["columns"]["EdgeResponseBytes"];
    for field in [
        "overlap_depth_avg",
        "overlap_depth_max",
        "span_avg",
        "skipped_files_fraction_avg",
        "skipped_bytes_fraction_avg",
        "ideal_skipped_files_fraction_avg",
    ] {
        assert!(column[field].is_number(), "{field}: {column}");
    }
    // Both files hold 303..307: depth 2 everywhere.
    assert_eq!(column["overlap_depth_avg"], 2.0);
    let listed: Vec<(String, u64)> = report["predicates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["predicate"].as_str().unwrap().to_string(),
                p["files_scanned"].as_u64().unwrap(),
            )
        })
        .collect();
    // The date partition keeps one of the two files.
    assert_eq!(
        listed,
        [
            ("EdgeResponseBytes > 305".to_string(), 2),
            (
                "(date = '2023-04-14' AND ClientIP IS NOT NULL)".to_string(),
                1
            )
        ]
    );

    // Cluster, then compare the two versions and draw them.
    let output = run(&[
        "optimize",
        &location,
        "--hilbert",
        "EdgeStartTimestamp,EdgeResponseBytes",
        "--target-size",
        "16KiB",
        "--json",
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let outcome: Value = serde_json::from_slice(&output.stdout).unwrap();
    let comparison = &outcome["report"];
    assert_eq!(comparison["rows_change"], 0, "{comparison}");
    assert_eq!(comparison["before"]["version"], 1);
    assert_eq!(comparison["after"]["version"], 2);
    let after_columns: Vec<&String> = comparison["after"]["columns"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    // (serde_json's map sorts keys on parsing; the output keeps the clustering order)
    assert_eq!(after_columns, ["EdgeResponseBytes", "EdgeStartTimestamp"]);
    assert_eq!(
        comparison["files_change"].as_i64().unwrap(),
        outcome["files_added"].as_i64().unwrap() - outcome["files_removed"].as_i64().unwrap()
    );

    // --compare naming the newer version: the older is still "before".
    let output = run(&[
        "report",
        &location,
        "--version",
        "1",
        "--compare",
        "2",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let swapped: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(swapped["before"]["version"], 1);
    assert_eq!(swapped["after"]["version"], 2);

    let page = dir.path().join("report.html");
    let output = run(&[
        "report",
        &location,
        "--compare",
        "1",
        "--columns",
        "EdgeStartTimestamp,date",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("EdgeStartTimestamp"), "{text}");
    assert!(
        text.contains("date AND EdgeStartTimestamp")
            || text.contains("EdgeStartTimestamp AND date"),
        "{text}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Self-contained: no external asset (the SVG namespace is only a name).
    assert!(
        !html.contains("src=") && !html.contains("href="),
        "external asset"
    );
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    // Histograms for both versions, and per column ranges and skipping for both.
    assert_eq!(html.matches("<svg").count(), 2 + 2 * 2 * 2);
}

#[test]
fn report_errors_name_the_option_column_or_line() {
    let fixture = Fixture::copy("http-requests-delta-rs");
    let dir = tempfile::tempdir().unwrap();
    let predicates = dir.path().join("bad.sql");
    std::fs::write(&predicates, "EdgeResponseBytes > 1\nEdgeResponseBytes >\n").unwrap();
    let predicates = predicates.to_str().unwrap();
    expect_error(
        &fixture,
        &["report", "{}", "--predicates", predicates],
        &["--predicates", "line 2"],
    );
    expect_error(
        &fixture,
        &["report", "{}", "--predicates", "/nonexistent/p.sql"],
        &["--predicates", "/nonexistent/p.sql"],
    );
    expect_error(
        &fixture,
        &["report", "{}", "--columns", "nope"],
        &["nope", "does not exist"],
    );
    expect_error(
        &fixture,
        &["report", "{}", "--columns", "date,date"],
        &["date", "twice"],
    );
    expect_error(
        &fixture,
        &["report", "{}", "--selectivity", "0"],
        &["--selectivity"],
    );
    expect_error(
        &fixture,
        &["report", "{}", "--selectivity", "1.5"],
        &["--selectivity"],
    );
    expect_error(
        &fixture,
        &["report", "{}", "--queries", "0"],
        &["--queries"],
    );
    expect_error(
        &fixture,
        &["report", "{}", "--compare", "99"],
        &["--compare", "99"],
    );
    expect_error(
        &fixture,
        &["report", "{}", "--target-size", "0"],
        &["--target-size"],
    );
    // A page written into the log would become a commit: refused before anything is done.
    let inside = format!(
        "{}/_delta_log/00000000000000000002.json",
        fixture.location()
    );
    expect_error(
        &fixture,
        &["report", "{}", "--html", &inside],
        &["--html", "inside the table"],
    );
    // Predicates that parse but do not fit the table name their line.
    let unknown = dir.path().join("unknown.sql");
    std::fs::write(&unknown, "\u{feff}date = '2023-04-14'\n\nnope = 1\n").unwrap();
    expect_error(
        &fixture,
        &["report", "{}", "--predicates", unknown.to_str().unwrap()],
        &["--predicates", "line 3", "nope"],
    );
    let quoted = dir.path().join("type.sql");
    std::fs::write(&quoted, "EdgeResponseBytes = 'abc'\n").unwrap();
    expect_error(
        &fixture,
        &["report", "{}", "--predicates", quoted.to_str().unwrap()],
        &["EdgeResponseBytes", "'abc'"],
    );
}

/// Report columns are checked before anything is written: a typo is an error, never a
/// warning after a committed rewrite.
#[test]
fn optimize_checks_report_columns_before_writing() {
    let fixture = Fixture::copy("delta-rs-small-appends");
    expect_error(
        &fixture,
        &["optimize", "{}", "--quiet", "--columns", "nope"],
        &["--columns", "'nope'", "does not exist"],
    );
    let output = run(&["optimize", &fixture.location(), "--quiet", "--columns", "i"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(text.starts_with("committed version 12"), "{text}");
}

#[test]
fn every_codec_writes_the_same_rows() {
    use deltalake::parquet::basic::Compression;
    use deltalake::parquet::file::reader::{FileReader as _, SerializedFileReader};
    for (codec, suffix, expect) in [
        ("snappy", "snappy", "SNAPPY"),
        ("zstd:19", "zstd", "ZSTD"),
        ("lz4", "lz4", "LZ4_RAW"),
        ("gzip:9", "gz", "GZIP"),
        ("none", "uncompressed", "UNCOMPRESSED"),
    ] {
        let fixture = Fixture::copy("delta-rs-small-appends");
        let location = fixture.location();
        let before = rows(&location);
        let output = run(&["optimize", &location, "--quiet", "--compression", codec]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{codec}: {}",
            stderr(&output)
        );
        assert_eq!(rows(&location), before, "{codec}");
        let table = crate::fixture::load(&location);
        let path = &table.files[0].path;
        assert!(path.ends_with(&format!(".{suffix}.parquet")), "{path}");
        let reader =
            SerializedFileReader::new(std::fs::File::open(fixture.path.join(path)).unwrap())
                .unwrap();
        let compression: Compression = reader.metadata().row_group(0).column(0).compression();
        assert!(
            format!("{compression:?}").starts_with(expect),
            "{codec}: {compression:?}"
        );
    }
    let fixture = Fixture::copy("delta-rs-small-appends");
    expect_error(
        &fixture,
        &["optimize", "{}", "--compression", "zstd:99"],
        &["--compression", "zstd:1 to zstd:22"],
    );
}

/// Runs `args` with the target floor as an installed binary has it (`None`: the variable
/// unset, 1 MiB) or lowered to `floor`.
fn run_with_floor(args: &[&str], floor: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_delta-layout"));
    command.args(args);
    match floor {
        Some(floor) => command.env(delta_layout::plan::TARGET_FLOOR_ENV, floor),
        None => command.env_remove(delta_layout::plan::TARGET_FLOOR_ENV),
    };
    command.output().unwrap()
}

/// Expects `args` (the table's location replaces `{}`) refused under the 1 MiB floor: exit
/// code 2, one line naming `flag`, the size given and the floor, the table untouched.
fn expect_below_floor(fixture: &Fixture, args: &[&str], flag: &str, given: &str) {
    let listing = fixture.listing();
    let location = fixture.location();
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "{}" { location.as_str() } else { a })
        .collect();
    let output = run_with_floor(&args, None);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
    assert_eq!(message.trim().lines().count(), 1, "one line: {message}");
    for needle in [
        flag,
        &format!("{given} is below the smallest target file size, 1MiB"),
        "DELTA_LAYOUT_MIN_TARGET_SIZE",
    ] {
        assert!(message.contains(needle), "'{needle}' not in: {message}");
    }
    assert_eq!(fixture.listing(), listing, "{args:?} changed the table");
}

#[test]
fn targets_below_one_mib_are_refused() {
    let fixture = Fixture::copy("http-requests-delta-rs");
    let curve = ["--zorder", "ClientIP"];
    // A curve, a cut tree and plain compaction: each writes files of about the target.
    expect_below_floor(
        &fixture,
        &["optimize", "{}", curve[0], curve[1], "--target-size", "1"],
        "invalid value for --target-size",
        "1",
    );
    let workload = fixture.path.join("../w.workload");
    std::fs::write(&workload, "ClientIP = 'x'\n").unwrap();
    let workload = workload.to_str().unwrap();
    expect_below_floor(
        &fixture,
        &[
            "optimize",
            "{}",
            "--workload",
            workload,
            "--target-size",
            "128",
        ],
        "invalid value for --target-size",
        "128",
    );
    expect_below_floor(
        &fixture,
        &["optimize", "{}", "--target-size", "1023KiB"],
        "invalid value for --target-size",
        "1023KiB",
    );
    expect_below_floor(
        &fixture,
        &["plan", "{}", curve[0], curve[1], "--target-size", "64KiB"],
        "invalid value for --target-size",
        "64KiB",
    );
    expect_below_floor(
        &fixture,
        &[
            "recommend",
            "{}",
            "--workload",
            workload,
            "--target-sizes",
            "64MiB,4KiB",
        ],
        "invalid value for --target-sizes",
        "4KiB",
    );
    let scratch = fixture.path.join("../scratch");
    expect_below_floor(
        &fixture,
        &[
            "sweep",
            "{}",
            "--target-sizes",
            "2KiB",
            "--scratch",
            scratch.to_str().unwrap(),
        ],
        "invalid value for --target-sizes",
        "2KiB",
    );
    assert!(!scratch.exists());
    // The floor itself is accepted: plain compaction plans at 1 MiB.
    let output = run_with_floor(
        &[
            "optimize",
            &fixture.location(),
            "--target-size",
            "1MiB",
            "--dry-run",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_table_property_below_the_floor_is_refused_by_its_key() {
    let fixture = Fixture::copy("http-requests-delta-rs");
    let mut meta = fixture
        .commit(0)
        .into_iter()
        .find_map(|a| a.get("metaData").cloned())
        .unwrap();
    meta["configuration"]["delta.targetFileSize"] = serde_json::json!("1024");
    fixture.write_commit(
        fixture.next_version(),
        &[
            serde_json::json!({"commitInfo": {"operation": "SET TBLPROPERTIES"}}),
            serde_json::json!({"metaData": meta}),
        ],
    );
    expect_below_floor(
        &fixture,
        &["optimize", "{}", "--zorder", "ClientIP"],
        "delta.targetFileSize",
        "1KiB",
    );
    // `--target-size` overrides the property; the report only reads it.
    let location = fixture.location();
    let output = run_with_floor(&["report", &location], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = run_with_floor(
        &["optimize", &location, "--target-size", "1MiB", "--dry-run"],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn the_floor_variable_lowers_the_floor() {
    let fixture = Fixture::copy("http-requests-delta-rs");
    let location = fixture.location();
    let before = rows(&location);
    let files_before = fixture.listing().len();
    // Under a floor of 1 KiB, 512 bytes is still refused, naming the lowered floor.
    let output = run_with_floor(
        &[
            "optimize",
            &location,
            "--zorder",
            "ClientIP",
            "--target-size",
            "512",
        ],
        Some("1KiB"),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("512 is below the smallest target file size, 1KiB"),
        "{}",
        stderr(&output)
    );
    // A bad value names the variable.
    let output = run_with_floor(
        &["optimize", &location, "--target-size", "4KiB"],
        Some("tiny"),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("DELTA_LAYOUT_MIN_TARGET_SIZE"),
        "{}",
        stderr(&output)
    );
    assert_eq!(fixture.listing().len(), files_before);
    // 4 KiB targets pass it and cluster the table into more, smaller files, same rows.
    let output = run_with_floor(
        &[
            "optimize",
            &location,
            "--zorder",
            "ClientIP",
            "--target-size",
            "4KiB",
            "--json",
        ],
        Some("1KiB"),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        json["plan"]["plan"]["target_file_bytes"], 4096,
        "{}",
        json["plan"]
    );
    assert!(json["files_added"].as_u64().unwrap() > 1, "{json}");
    assert_eq!(rows(&location), before);
}

/// Whether process `pid` catches SIGTERM (`SigCgt` of `/proc/<pid>/status`, bit 15 - 1).
fn catches_sigterm(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            let mask = status.lines().find_map(|l| l.strip_prefix("SigCgt:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .is_some_and(|mask| mask & (1 << 14) != 0)
}

/// Spawns the binary with `args`, waits until it catches SIGTERM, sends one after
/// `delay_ms` (through `kill`), and returns its output.
fn sigterm_after_start(args: &[&str], delay_ms: u64) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_delta-layout"))
        .args(args)
        .env_remove("MALLOC_ARENA_MAX")
        // Held open and never written: `--workload -` waits on it.
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Closed only once the process has ended.
    let stdin = child.stdin.take();
    let started = std::time::Instant::now();
    while !catches_sigterm(pid) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "no SIGTERM handler"
        );
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    std::thread::sleep(std::time::Duration::from_millis(delay_ms));
    let kill = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    // A process that took the signal for a cancel flag nobody reads would wait forever.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{args:?} still runs a minute after SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let output = child.wait_with_output().unwrap();
    drop(stdin);
    output
}

#[test]
fn a_sigterm_before_the_work_starts_exits_130() {
    if !std::path::Path::new("/proc/self/status").exists() {
        return;
    }
    // Waiting for its workload on standard input, before any table is read: the signal
    // ended the process by its default action (no handler was installed yet).
    let fixture = Fixture::copy("basic-with-checkpoint");
    let listing = fixture.listing();
    let output = sigterm_after_start(&["optimize", &fixture.location(), "--workload", "-"], 2);
    assert_eq!(output.status.code(), Some(130), "{:?}", output.status);
    assert_eq!(stderr(&output), "");
    assert_eq!(fixture.listing(), listing);
}

#[test]
fn a_sigterm_right_after_the_start_exits_130_and_changes_nothing() {
    if !std::path::Path::new("/proc/self/status").exists() {
        return;
    }
    // The handlers are installed first thing in `main` (after the MALLOC_ARENA_MAX re-exec,
    // which resets them), before the arguments are parsed or the table is read: a SIGTERM
    // from then on ends the run with 130, also before `optimize` hands over its cancel flag.
    for delay_ms in [0, 0, 1, 2, 5] {
        let fixture = Fixture::copy("basic-with-checkpoint");
        let listing = fixture.listing();
        let location = fixture.location();
        let output = sigterm_after_start(
            &[
                "optimize",
                &location,
                "--hilbert",
                "id",
                "--target-size",
                "1MiB",
                "--verify",
                "--no-report",
            ],
            delay_ms,
        );
        assert_eq!(
            output.status.code(),
            Some(130),
            "after {delay_ms} ms: {:?} {}",
            output.status,
            stderr(&output)
        );
        assert_eq!(fixture.listing(), listing, "after {delay_ms} ms");
    }
}

/// `--verify` says what it proved: the files written hold the rows of the files they
/// replace (a line of text, `verified` in `--json`), and the rows are the same.
#[test]
fn verify_says_what_it_checked() {
    for json in [false, true] {
        let fixture = Fixture::copy("multipart-checkpoint");
        let location = fixture.location();
        let before = rows(&location);
        let mut args = vec![
            "optimize",
            &location,
            "--hilbert",
            "id",
            "--target-size",
            "8KiB",
            "--verify",
            "--no-report",
        ];
        if json {
            args.push("--json");
        }
        let output = run(&args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        // Both sorted, as the reader returns them.
        assert_eq!(rows(&location), before);
        if json {
            let value: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(value["verified"], Value::Bool(true), "{text}");
            assert_eq!(value["rows"].as_u64(), Some(before.len() as u64));
        } else {
            let line = text
                .lines()
                .find(|l| l.starts_with("verified: "))
                .unwrap_or_else(|| panic!("no verified line: {text}"));
            assert!(
                line.contains("hold exactly the rows of the")
                    && line.ends_with(&format!("({} rows)", before.len())),
                "{line}"
            );
        }
    }
}

/// After a small append, `optimize --dry-run` says per partition what is new and what each
/// cube becomes, in words and in the JSON plan; the run then rewrites only the new file.
#[test]
fn a_rerun_after_an_append_says_what_it_merges() {
    let fixture = Fixture::copy("multipart-checkpoint");
    let location = fixture.location();
    let args = [
        "optimize",
        &location,
        "--hilbert",
        "id",
        "--target-size",
        "8KiB",
    ];
    let output = run(&[&args[..], &["--quiet", "--no-report"]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(fixture.copy_files(|i| i == 0), 1);
    let before = rows(&location);

    let output = run(&[&args[..], &["--dry-run"]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("incremental: 1 file new (")
            && text.contains("cubes 0 merged (0 B), 1 kept (")
            && text.contains("0 sealed (0 B)"),
        "{text}"
    );
    let output = run(&[&args[..], &["--dry-run", "--json"]].concat());
    let plan: Value = serde_json::from_slice(&output.stdout).unwrap();
    let upkeep = &plan["plan"]["plan"]["partitions"][0]["upkeep"];
    assert_eq!(upkeep["new_files"], 1, "{upkeep}");
    assert_eq!(upkeep["cubes"][0]["fate"], "kept", "{upkeep}");
    assert!(upkeep["cubes"][0]["bytes"].as_u64().unwrap() > upkeep["new_bytes"].as_u64().unwrap());

    let output = run(&[&args[..], &["--json", "--quiet", "--no-report"]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let outcome: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outcome["files_removed"], 1);
    assert_eq!(rows(&location), before);
}

/// On a table that declares clustering columns (liquid), a run without a curve clusters by
/// them, and `--full` and `--cube-size` apply to that clustering; on a table without, a
/// `--cube-size` without a curve is refused naming it, the table untouched.
#[test]
fn full_and_cube_size_apply_to_declared_clustering() {
    let fixture = Fixture::copy("row-tracking-liquid");
    let location = fixture.location();
    let args = ["optimize", &location, "--target-size", "8KiB"];
    let output = run(&[&args[..], &["--quiet", "--no-report"]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(fixture.copy_files(|i| i == 0), 1);
    let before = rows(&location);
    let files = crate::fixture::load(&location).files.len();
    // Sealed at one byte: only the new file.
    let output = run(&[&args[..], &["--cube-size", "1", "--dry-run", "--json"]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let plan: Value = serde_json::from_slice(&output.stdout).unwrap();
    let upkeep = &plan["plan"]["plan"]["partitions"][0]["upkeep"];
    assert_eq!(upkeep["cubes"][0]["fate"], "sealed", "{upkeep}");
    // --full: every file.
    let output = run(&[&args[..], &["--full", "--json", "--quiet", "--no-report"]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let outcome: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outcome["files_removed"], files);
    assert_eq!(rows(&location), before);

    let plain = Fixture::copy("delta-rs-small-appends");
    expect_error(
        &plain,
        &["optimize", "{}", "--cube-size", "1GiB"],
        &["--cube-size", "declares clustering columns"],
    );
}

#[test]
fn usage_errors_keep_clap_suggestions() {
    let fixture = Fixture::copy("partitioned-string-null");
    // A misspelt option, flag or command: exit code 2, one line, the table untouched, and
    // the suggestion clap makes.
    expect_error(
        &fixture,
        &["optimize", "{}", "--z-order", "number"],
        &[
            "'--z-order'",
            "a similar argument exists: '--zorder'",
            "(see --help)",
        ],
    );
    expect_error(
        &fixture,
        &["optimize", "{}", "--dryrun"],
        &["'--dryrun'", "'--dry-run'"],
    );
    expect_error(
        &fixture,
        &["optimise", "{}"],
        &["'optimise'", "a similar subcommand exists: 'optimize'"],
    );
    // A count of zero says what is asked, not how Rust parses it.
    expect_error(
        &fixture,
        &["history", "{}", "--limit", "0"],
        &["--limit", "must be a whole number of at least 1"],
    );
}

#[test]
fn vacuum_retention_takes_units() {
    let fixture = Fixture::copy("partitioned-string-null");
    let location = fixture.location();
    for (text, hours) in [("7d", 168.0), ("168h", 168.0), ("168", 168.0), ("1w", -1.0)] {
        let output = run(&["vacuum", &location, "--retain", text, "--dry-run", "--json"]);
        if hours < 0.0 {
            // Weeks are not a unit: refused naming the option and the text.
            let message = stderr(&output);
            assert_eq!(output.status.code(), Some(2), "{message}");
            assert!(
                message.contains("--retain") && message.contains("'1w'"),
                "{message}"
            );
            continue;
        }
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let json: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(json["retention_hours"], hours, "{text}: {json}");
        assert_eq!(json["dry_run"], true);
    }
    expect_error(
        &fixture,
        &["vacuum", "{}", "--retain", "7 fortnights"],
        &["--retain", "'7 fortnights'", "e.g. 90s, 45m, 1h30m, 2d"],
    );
    // Shorter than the table's retention (7 days): refused as before, with units too.
    expect_error(
        &fixture,
        &["vacuum", "{}", "--retain", "36h"],
        &["--retain", "--risk-breaking-readers"],
    );
}

/// docs/reference.md is the reference the command line generates from its definitions
/// (`UPDATE_REFERENCE=1 cargo test --test it reference` rewrites it).
#[test]
fn the_command_reference_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reference.md");
    let generated = delta_layout::cli::reference_markdown();
    if std::env::var_os("UPDATE_REFERENCE").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "docs/reference.md is stale: regenerate it with \
         `UPDATE_REFERENCE=1 cargo test --test it reference`"
    );
    assert!(generated.contains("## `delta-layout optimize`") && generated.contains("--zorder"));
}

/// Every `delta-layout COMMAND ... --option` written in README.md and docs/, and every option
/// row (`| `--option ...` | ...`) of a table under a heading naming `delta-layout COMMAND`,
/// names an option that command takes: no documented option is invented or gone.
#[test]
fn documented_command_lines_use_real_options() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let options = delta_layout::cli::command_options();
    let mut pages = vec![root.join("README.md")];
    if let Ok(dir) = std::fs::read_dir(root.join("docs")) {
        pages.extend(
            dir.map(|e| e.unwrap().path()).filter(|p| {
                p.extension().is_some_and(|e| e == "md") && !p.ends_with("reference.md")
            }),
        );
    }
    let mut wrong = Vec::new();
    let mut checked = 0;
    let command_at = |rest: &str| {
        options
            .iter()
            .filter(|(name, _)| {
                rest.starts_with(name.as_str())
                    && !rest[name.len()..].starts_with(|c: char| c.is_alphanumeric())
            })
            .max_by_key(|(name, _)| name.len())
            .cloned()
    };
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        // The command of the section: a heading naming `delta-layout COMMAND`.
        let mut section: Option<(String, Vec<String>)> = None;
        for (number, line) in text.lines().enumerate() {
            if line.starts_with('#') {
                section = line
                    .find("delta-layout ")
                    .and_then(|at| command_at(&line[at + "delta-layout ".len()..]));
            }
            if let (Some((command, taken)), Some(row)) = (&section, line.strip_prefix("| `--")) {
                let option: String = row
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                checked += 1;
                if !taken.contains(&option) {
                    wrong.push(format!(
                        "{}:{}: `{command}` takes no --{option} (option table)",
                        page.display(),
                        number + 1
                    ));
                }
            }
            for (at, _) in line.match_indices("delta-layout ") {
                let rest = &line[at + "delta-layout ".len()..];
                // The longest command name the rest starts with (`workload extract`).
                let Some((command, taken)) = command_at(rest) else {
                    continue;
                };
                // Up to the end of the command: a backtick, a pipe, or `;`/`&&`.
                let end = rest[command.len()..]
                    .find(['`', '|', ';', '&', '#'])
                    .map_or(rest.len(), |e| e + command.len());
                for word in rest[command.len()..end].split(|c: char| {
                    c.is_whitespace() || matches!(c, '[' | ']' | '(' | ')' | ',' | '=')
                }) {
                    let Some(option) = word.strip_prefix("--") else {
                        continue;
                    };
                    let option = option.trim_end_matches(['.', ':']);
                    if option.is_empty() || option == "help" || option == "version" {
                        continue;
                    }
                    checked += 1;
                    if !taken.iter().any(|o| o == option) {
                        wrong.push(format!(
                            "{}:{}: `{command}` takes no --{option}",
                            page.display(),
                            number + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(checked > 50, "only {checked} options found in the docs");
}

/// Sets the mode of `path` and of everything under it: `dirs` for directories, `files` for
/// the rest.
fn chmod_tree(path: &std::path::Path, dirs: u32, files: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = if path.is_dir() { dirs } else { files };
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            chmod_tree(&entry.unwrap().path(), dirs, files);
        }
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_read_only_table_is_refused_before_any_work() {
    use std::os::unix::fs::PermissionsExt as _;
    let fixture = Fixture::copy("partitioned-string-null");
    let location = fixture.location();
    let table = std::path::Path::new(&location);
    let listing = fixture.listing();
    // Readable, not writable, by the user the command runs as. Root writes anywhere, so as
    // root the command runs as `nobody` (setpriv, util-linux).
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    std::fs::set_permissions(
        table.parent().unwrap(),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    chmod_tree(table, 0o555, 0o444);
    let run_as = |args: &[&str]| {
        let binary = env!("CARGO_BIN_EXE_delta-layout");
        let mut command = if root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", binary]);
            c
        } else {
            Command::new(binary)
        };
        command.args(args).output().unwrap()
    };
    let output = run_as(&["optimize", &location, "--zorder", "number"]);
    let message = stderr(&output);
    // A dry run only reads: it works.
    let dry = run_as(&["optimize", &location, "--zorder", "number", "--dry-run"]);
    chmod_tree(table, 0o755, 0o644);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(
        message.starts_with("delta-layout: cannot write to table")
            && message.contains("nothing was written")
            && message.contains("--dry-run")
            && message.trim().lines().count() == 1,
        "{message}"
    );
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    assert_eq!(fixture.listing(), listing);
}

/// A clustering run that writes too few files for min/max skipping says so, in text and in
/// `--json`, with a target that writes enough: a run at that target does.
#[test]
fn too_few_files_for_skipping_are_warned_with_a_target_that_works() {
    let floor = Some("1");
    let fixture = Fixture::copy("basic-with-checkpoint");
    let location = fixture.location();
    let before = rows(&location);
    let output = run_with_floor(
        &[
            "optimize",
            &location,
            "--zorder",
            "id",
            "--target-size",
            "1MiB",
            "--json",
            "--quiet",
        ],
        floor,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let outcome: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outcome["files_added"], 1, "{outcome}");
    let few = &outcome["few_files"];
    assert_eq!(few["files"], 1, "{few}");
    assert_eq!(few["partitions"], 1);
    assert_eq!(few["target_file_bytes"], 1 << 20);
    assert_eq!(few["bytes"], outcome["bytes_added"]);
    let suggested = few["suggested_target_file_bytes"].as_u64().unwrap();
    let bytes = few["bytes"].as_u64().unwrap();
    // A power of two giving about 8 files: between 8 and 16 of them.
    assert!(suggested.is_power_of_two(), "{suggested}");
    assert!(
        (8..16).contains(&(bytes / suggested)),
        "{bytes} / {suggested}"
    );
    assert_eq!(rows(&location), before);

    // The suggested target, on a fresh copy: enough files, no warning; the text form of a
    // dry run at 1 MiB has the warning line (with a target from the plan's estimate).
    let again = Fixture::copy("basic-with-checkpoint");
    let text = run_with_floor(
        &[
            "optimize",
            &again.location(),
            "--zorder",
            "id",
            "--target-size",
            "1MiB",
            "--dry-run",
        ],
        floor,
    );
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.contains("warning: 1 file (")
            && text.contains("files per partition, min/max skipping has little to skip")
            && text.contains("would write about"),
        "{text}"
    );
    let target = suggested.to_string();
    let output = run_with_floor(
        &[
            "optimize",
            &again.location(),
            "--zorder",
            "id",
            "--target-size",
            &target,
            "--json",
            "--quiet",
        ],
        floor,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let outcome: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        outcome["files_added"].as_u64().unwrap() >= delta_layout::optimize::MIN_FILES_FOR_SKIPPING,
        "{outcome}"
    );
    assert!(outcome["few_files"].is_null(), "{outcome}");
    assert_eq!(rows(&again.location()), before);
}
