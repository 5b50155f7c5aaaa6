//! UniForm (icebergCompatV2) on `testdata/uniform-spark` (Spark 4.3's files, column mapping
//! `name`, Parquet field ids, an array, a map and a struct, the partition column in every
//! file; `scripts/make-modern-tables.py`): what a rewrite writes follows the writer rules of
//! PROTOCOL.md "Iceberg Compatibility V2", the Iceberg view is stated and kept readable, and a
//! table that breaks a rule is refused by name. Iceberg readers themselves (pyiceberg) are
//! checked by `scripts/check-uniform.py`.

use std::collections::{BTreeMap, BTreeSet};

use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::PlanOptions;
use delta_layout::plan::cluster::ClusterRequest;
use delta_layout::vacuum::VacuumOptions;
use deltalake::arrow::array::Array as _;
use deltalake::parquet::file::reader::{FileReader, SerializedFileReader};
use deltalake::parquet::schema::types::Type;
use serde_json::{Value, json};

use crate::fixture::{Fixture, load, optimize, rows, runtime};

const TABLE: &str = "uniform-spark";

/// Writes an Iceberg table metadata file (format v2, as Delta's converter writes one, its
/// property `delta-version` naming the Delta version it describes) as
/// `metadata/<number>-<uuid>.metadata.json`; returns its path relative to the table root.
fn iceberg_metadata(fixture: &Fixture, number: u32, delta_version: u64) -> String {
    let relative =
        format!("metadata/{number:05}-00000000-0000-0000-0000-{number:012}.metadata.json");
    let document = json!({
        "format-version": 2,
        "table-uuid": "00000000-0000-0000-0000-000000000044",
        "location": format!("file://{}", fixture.location()),
        "last-sequence-number": number,
        "last-updated-ms": 1_764_900_000_000_u64 + u64::from(number),
        "last-column-id": 13,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {"delta-version": delta_version.to_string()},
        "snapshots": [],
        "snapshot-log": [],
        "metadata-log": [],
    });
    let path = fixture.path.join(&relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, document.to_string()).unwrap();
    relative
}

/// The Parquet field ids the schema asks for, by Parquet path of physical names: every
/// struct field's `delta.columnMapping.id`, and the `element`, `key` and `value` ids of
/// `delta.columnMapping.nested.ids` (PROTOCOL.md "Writer Requirements for IcebergCompatV2").
/// Read from the log's schema string, not through the crate.
fn expected_ids(schema: &Value) -> BTreeMap<String, i64> {
    fn nested(
        data_type: &Value,
        path: &str,
        key: &str,
        ids: &Value,
        out: &mut BTreeMap<String, i64>,
    ) {
        match data_type.get("type").and_then(Value::as_str) {
            Some("array") => {
                let k = format!("{key}.element");
                let p = format!("{path}.list.element");
                out.insert(p.clone(), ids[&k].as_i64().unwrap());
                nested(&data_type["elementType"], &p, &k, ids, out);
            }
            Some("map") => {
                for (side, ty) in [("key", "keyType"), ("value", "valueType")] {
                    let k = format!("{key}.{side}");
                    let p = format!("{path}.key_value.{side}");
                    out.insert(p.clone(), ids[&k].as_i64().unwrap());
                    nested(&data_type[ty], &p, &k, ids, out);
                }
            }
            Some("struct") => fields(data_type, path, out),
            _ => {}
        }
    }
    fn fields(schema: &Value, prefix: &str, out: &mut BTreeMap<String, i64>) {
        for field in schema["fields"].as_array().unwrap() {
            let metadata = &field["metadata"];
            let physical = metadata["delta.columnMapping.physicalName"]
                .as_str()
                .unwrap();
            let path = if prefix.is_empty() {
                physical.to_string()
            } else {
                format!("{prefix}.{physical}")
            };
            out.insert(
                path.clone(),
                metadata["delta.columnMapping.id"].as_i64().unwrap(),
            );
            let ids = &metadata["delta.columnMapping.nested.ids"];
            nested(&field["type"], &path, physical, ids, out);
        }
    }
    let mut out = BTreeMap::new();
    fields(schema, "", &mut out);
    out
}

/// Every field id a Parquet file's schema holds, by path.
fn file_ids(path: &std::path::Path) -> BTreeMap<String, i64> {
    fn walk(node: &Type, prefix: &str, out: &mut BTreeMap<String, i64>) {
        let info = node.get_basic_info();
        let path = if prefix.is_empty() {
            info.name().to_string()
        } else {
            format!("{prefix}.{}", info.name())
        };
        if info.has_id() {
            out.insert(path.clone(), i64::from(info.id()));
        }
        if node.is_group() {
            for child in node.get_fields() {
                walk(child, &path, out);
            }
        }
    }
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let root = reader.metadata().file_metadata().schema();
    let mut out = BTreeMap::new();
    for child in root.get_fields() {
        walk(child, "", &mut out);
    }
    out
}

fn schema_of(fixture: &Fixture) -> Value {
    let metadata = fixture
        .commit(0)
        .into_iter()
        .find_map(|a| a.get("metaData").cloned())
        .unwrap();
    serde_json::from_str(metadata["schemaString"].as_str().unwrap()).unwrap()
}

fn live_paths(location: &str) -> BTreeSet<String> {
    load(location)
        .files
        .iter()
        .map(|f| f.path.clone())
        .collect()
}

/// A compaction and a Hilbert run on the UniForm table: the rows stay, every new file carries
/// the field ids of the schema (nested ones included) and the partition column with its
/// value, every `add` has `numRecords`; the outcome states the Iceberg view (the newest
/// metadata file and its Delta version); `vacuum` keeps the files of that version and the
/// `metadata` directory, and lets them go once the Iceberg metadata describes a later version.
#[test]
fn a_uniform_table_is_rewritten_by_the_iceberg_rules_and_its_iceberg_files_are_kept() {
    let fixture = Fixture::copy(TABLE);
    let location = fixture.location();
    let spark_files = live_paths(&location);
    let latest = load(&location).version;
    let _older = iceberg_metadata(&fixture, 1, latest - 1);
    let newest = iceberg_metadata(&fixture, 2, latest);
    let before = rows(&location);
    let schema = schema_of(&fixture);
    let expected = expected_ids(&schema);
    assert_eq!(expected.len(), 13, "{expected:?}");
    let region = schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "region")
        .unwrap()["metadata"]["delta.columnMapping.physicalName"]
        .as_str()
        .unwrap()
        .to_string();

    let compaction = optimize(&location, &OptimizeOptions::default()).unwrap();
    let hilbert = optimize(
        &location,
        &OptimizeOptions::default().with_plan(
            PlanOptions::default()
                .with_rewrite_all(true)
                .with_target_file_bytes(Some(8 * 1024))
                .with_clustering(Some(ClusterRequest::new(
                    delta_layout::curve::Curve::Hilbert,
                    vec!["id".into(), "amount".into()],
                ))),
        ),
    )
    .unwrap();
    assert_eq!(rows(&location), before);
    for outcome in [&compaction, &hilbert] {
        let iceberg = outcome
            .iceberg
            .as_ref()
            .expect("the Iceberg view is stated");
        assert_eq!(iceberg.metadata_file.as_deref(), Some(newest.as_str()));
        assert_eq!(iceberg.delta_version, Some(latest));
        let version = outcome.version.unwrap();
        let mut checked = 0;
        for action in fixture.commit(version) {
            let Some(add) = action.get("add") else {
                continue;
            };
            let stats: Value = serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
            let records = stats["numRecords"].as_u64().expect("numRecords");
            let file = fixture.path.join(
                percent_encoding::percent_decode_str(add["path"].as_str().unwrap())
                    .decode_utf8()
                    .unwrap()
                    .as_ref(),
            );
            assert_eq!(file_ids(&file), expected, "{}", file.display());
            // The partition column, materialized: every row its partition value.
            let value = add["partitionValues"][&region].as_str();
            let reader =
                deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                    std::fs::File::open(&file).unwrap(),
                )
                .unwrap()
                .build()
                .unwrap();
            let mut seen = 0;
            for batch in reader {
                let batch = batch.unwrap();
                let column = batch.column_by_name(&region).expect("the partition column");
                let column = column
                    .as_any()
                    .downcast_ref::<deltalake::arrow::array::StringArray>()
                    .unwrap();
                for i in 0..column.len() {
                    let got = (!column.is_null(i)).then(|| column.value(i));
                    assert_eq!(got, value);
                }
                seen += batch.num_rows() as u64;
            }
            assert_eq!(seen, records);
            checked += 1;
        }
        assert!(checked > 0);
    }
    let compacted: BTreeSet<String> = fixture
        .commit(compaction.version.unwrap())
        .iter()
        .filter_map(|a| a.get("add")?.get("path")?.as_str().map(String::from))
        .collect();

    // Vacuum: the files of the version Iceberg readers read (Spark's) stay, as does
    // `metadata/`; the compaction's files, in no version Iceberg or the latest reads, go.
    let vacuum = |fixture: &Fixture| {
        let table = load(&fixture.location());
        runtime()
            .block_on(delta_layout::vacuum::vacuum(
                &table,
                &VacuumOptions::default()
                    .with_retain_hours(Some(0.0))
                    .with_short_retention(true),
            ))
            .unwrap()
    };
    let report = vacuum(&fixture);
    let deleted: BTreeSet<String> = report.files.iter().map(|f| f.path.clone()).collect();
    let decoded: BTreeSet<String> = compacted
        .iter()
        .map(|p| {
            percent_encoding::percent_decode_str(p)
                .decode_utf8()
                .unwrap()
                .into_owned()
        })
        .collect();
    assert_eq!(deleted, decoded, "only the compaction's files go");
    assert_eq!(report.iceberg.as_ref().unwrap().delta_version, Some(latest));
    assert_eq!(report.iceberg_versions_kept, [latest - 1, latest]);
    for path in &spark_files {
        assert!(fixture.path.join(path).exists(), "{path} is Iceberg's");
    }
    assert!(fixture.path.join(&newest).exists());
    assert!(fixture.path.join(&_older).exists());
    assert_eq!(rows(&location), before);

    // The next Delta writer with UniForm converted the Hilbert run: while the metadata file
    // before it still names Spark's version (the catalog may still point at it), its files
    // stay; once a later file names the Hilbert run too, they go.
    iceberg_metadata(&fixture, 3, hilbert.version.unwrap());
    assert!(vacuum(&fixture).files.is_empty());
    // Neither a backup below metadata/ nor a file named as no Iceberg writer names its
    // metadata counts, whatever version it names.
    let stray = fixture
        .path
        .join("metadata/backup/00099-00000000-0000-0000-0000-000000000099.metadata.json");
    std::fs::create_dir_all(stray.parent().unwrap()).unwrap();
    std::fs::copy(fixture.path.join(&newest), &stray).unwrap();
    std::fs::copy(
        fixture.path.join(&newest),
        fixture
            .path
            .join("metadata/12345678-0a43-4d5e-9b9f-3e4d7a7c2b11.metadata.json"),
    )
    .unwrap();
    let fourth = iceberg_metadata(&fixture, 4, hilbert.version.unwrap());
    let report = vacuum(&fixture);
    assert_eq!(
        report.iceberg.as_ref().unwrap().metadata_file.as_deref(),
        Some(fourth.as_str())
    );
    let deleted: BTreeSet<String> = report.files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(deleted, spark_files);
    assert!(
        fixture.path.join(&newest).exists(),
        "metadata/ is never vacuumed"
    );
    assert_eq!(rows(&location), before);
}

/// Applies `edit` to the field `name` of the schema of the `metaData` action `metadata`.
fn edit_field(metadata: &mut Value, name: &str, edit: impl Fn(&mut Value)) {
    let mut schema: Value =
        serde_json::from_str(metadata["schemaString"].as_str().unwrap()).unwrap();
    let field = schema["fields"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|f| f["name"] == name)
        .unwrap();
    edit(field);
    metadata["schemaString"] = json!(schema.to_string());
}

/// A change to the first commit's `protocol` and `metaData` actions.
type Edit = dyn Fn(&mut Value, &mut Value);

/// A UniForm table that breaks a writer rule of icebergCompatV2 is refused, naming the rule,
/// by `optimize` (nothing written) and by `inspect`: deletion vectors enabled, an array
/// without the id of its element, IcebergCompatV1 on beside V2, IcebergWriterCompatV1
/// (its RFC) without column mapping `id`, a field id past 32 bits, a nested id equal to a
/// column's, a recorded type change Iceberg V2 does not allow, UniForm on with no
/// compatibility active.
#[test]
fn a_uniform_table_that_breaks_an_iceberg_rule_is_refused_by_name() {
    let cases: [(&str, &Edit, &[&str]); 9] = [
        (
            "deletion vectors on",
            &|protocol, metadata| {
                protocol["minReaderVersion"] = json!(3);
                protocol["readerFeatures"] = json!(["columnMapping", "deletionVectors"]);
                protocol["writerFeatures"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!("deletionVectors"));
                metadata["configuration"]["delta.enableDeletionVectors"] = json!("true");
            },
            &["icebergCompatV2", "delta.enableDeletionVectors"],
        ),
        (
            "an element without its id",
            &|_, metadata| {
                let mut schema: Value =
                    serde_json::from_str(metadata["schemaString"].as_str().unwrap()).unwrap();
                let tags = schema["fields"]
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|f| f["name"] == "tags")
                    .unwrap();
                tags["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .remove("delta.columnMapping.nested.ids");
                metadata["schemaString"] = json!(schema.to_string());
            },
            &["'tags'", ".element", "icebergCompatV2"],
        ),
        (
            "V1 and V2 both on",
            &|protocol, metadata| {
                protocol["writerFeatures"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!("icebergCompatV1"));
                metadata["configuration"]["delta.enableIcebergCompatV1"] = json!("true");
            },
            &["icebergCompatV1", "icebergCompatV2"],
        ),
        (
            "icebergWriterCompatV1 on a table in column mapping mode name",
            &|protocol, metadata| {
                protocol["writerFeatures"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!("icebergWriterCompatV1"));
                metadata["configuration"]["delta.enableIcebergWriterCompatV1"] = json!("true");
            },
            &["icebergWriterCompatV1", "'id'", "delta.columnMapping.mode"],
        ),
        (
            "icebergWriterCompatV1 on without icebergCompatV2",
            &|protocol, metadata| {
                protocol["writerFeatures"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!("icebergWriterCompatV1"));
                metadata["configuration"]["delta.enableIcebergWriterCompatV1"] = json!("true");
                metadata["configuration"]
                    .as_object_mut()
                    .unwrap()
                    .remove("delta.enableIcebergCompatV2");
            },
            &["icebergWriterCompatV1 requires icebergCompatV2 active"],
        ),
        (
            "a column mapping id past 32 bits",
            &|_, metadata| {
                edit_field(metadata, "name", |f| {
                    f["metadata"]["delta.columnMapping.id"] = json!(2_147_483_653_i64);
                })
            },
            &["column 'name'", "2147483653", "Parquet field id"],
        ),
        (
            "a nested id equal to a column mapping id",
            &|_, metadata| {
                edit_field(metadata, "tags", |f| {
                    let ids = f["metadata"]["delta.columnMapping.nested.ids"]
                        .as_object_mut()
                        .unwrap();
                    let key = ids.keys().next().unwrap().clone();
                    ids.insert(key, json!(1));
                })
            },
            &["of column 'tags'", "column 'id'", "same id 1"],
        ),
        (
            "a type change Iceberg does not allow",
            &|_, metadata| {
                edit_field(metadata, "amount", |f| {
                    f["metadata"]["delta.typeChanges"] =
                        json!([{"fromType": "decimal(8,1)", "toType": "decimal(10,2)"}]);
                })
            },
            &["'amount'", "decimal(8,1)", "Iceberg V2"],
        ),
        (
            "UniForm on without an active compatibility",
            &|_, metadata| {
                metadata["configuration"]
                    .as_object_mut()
                    .unwrap()
                    .remove("delta.enableIcebergCompatV2");
            },
            &["delta.universalFormat.enabledFormats", "neither is"],
        ),
    ];
    for (case, edit, words) in cases {
        let fixture = Fixture::copy(TABLE);
        let location = fixture.location();
        let first = fixture.commit(0);
        let mut protocol = first
            .iter()
            .find_map(|a| a.get("protocol").cloned())
            .unwrap();
        let mut metadata = first
            .iter()
            .find_map(|a| a.get("metaData").cloned())
            .unwrap();
        edit(&mut protocol, &mut metadata);
        fixture.write_commit(
            fixture.next_version(),
            &[json!({"protocol": protocol}), json!({"metaData": metadata})],
        );
        let listing = fixture.listing();
        let err = optimize(&location, &OptimizeOptions::default())
            .unwrap_err()
            .to_string();
        for word in words {
            assert!(err.contains(word), "{case}: {err}");
        }
        assert_eq!(fixture.listing(), listing, "{case}: the table is untouched");
        let report = delta_layout::inspect::inspect(&load(&location), None).unwrap();
        assert!(
            report
                .unsupported_features
                .iter()
                .any(|r| words.iter().all(|w| r.contains(w))),
            "{case}: inspect agrees: {:?}",
            report.unsupported_features
        );
    }
}

/// `vacuum` deletes nothing when the Iceberg metadata cannot tell which files Iceberg readers
/// read: a `delta-version` later than the table's, none at all, or a gzip-compressed file;
/// `metadata/version-hint.text` picks the current file of a file-system table.
#[test]
fn vacuum_deletes_nothing_when_the_iceberg_metadata_cannot_say_what_iceberg_reads() {
    let options = VacuumOptions::default()
        .with_retain_hours(Some(0.0))
        .with_short_retention(true);
    let vacuum = |fixture: &Fixture| {
        runtime().block_on(delta_layout::vacuum::vacuum(
            &load(&fixture.location()),
            &options,
        ))
    };
    for (case, words) in [
        ("later", &["names Delta version 99", "does not have"][..]),
        ("none", &["has no property 'delta-version'"][..]),
        ("gzip", &["gzip-compressed"][..]),
    ] {
        let fixture = Fixture::copy(TABLE);
        let location = fixture.location();
        let latest = load(&location).version;
        iceberg_metadata(&fixture, 1, latest);
        optimize(&location, &OptimizeOptions::default()).unwrap();
        let bad = iceberg_metadata(&fixture, 2, 99);
        match case {
            "none" => std::fs::write(
                fixture.path.join(&bad),
                r#"{"format-version": 2, "properties": {}}"#,
            )
            .unwrap(),
            "gzip" => std::fs::rename(
                fixture.path.join(&bad),
                fixture.path.join(format!("{bad}.gz")),
            )
            .unwrap(),
            _ => {}
        }
        let listing = fixture.listing();
        let err = vacuum(&fixture).unwrap_err().to_string();
        for word in words {
            assert!(err.contains(word), "{case}: {err}");
        }
        assert!(
            err.contains("Iceberg metadata file 'metadata/00002-"),
            "{case}: {err}"
        );
        assert_eq!(fixture.listing(), listing, "{case}: nothing deleted");
    }

    // A file-system table: the hint names v1, which describes Spark's version; a newer-named
    // file beside it is not the current one.
    let fixture = Fixture::copy(TABLE);
    let location = fixture.location();
    let spark_files = live_paths(&location);
    let latest = load(&location).version;
    let numbered = iceberg_metadata(&fixture, 1, latest);
    std::fs::rename(
        fixture.path.join(&numbered),
        fixture.path.join("metadata/v1.metadata.json"),
    )
    .unwrap();
    std::fs::write(fixture.path.join("metadata/version-hint.text"), "1\n").unwrap();
    let compaction = optimize(&location, &OptimizeOptions::default()).unwrap();
    iceberg_metadata(&fixture, 5, compaction.version.unwrap());
    let report = vacuum(&fixture).unwrap();
    assert_eq!(
        report.iceberg.as_ref().unwrap().metadata_file.as_deref(),
        Some("metadata/v1.metadata.json")
    );
    assert!(report.files.is_empty(), "{:?}", report.files);
    for path in &spark_files {
        assert!(fixture.path.join(path).exists());
    }
}
