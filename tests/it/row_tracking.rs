//! Row tracking is preserved (PROTOCOL.md "Row Tracking"): every row keeps its stable row ID
//! and row commit version through compaction and clustering, as delta-kernel's own scan
//! reads them, and the commit assigns fresh `baseRowId`s above the high-water mark.

use std::path::Path;
use std::sync::Arc;

use delta_layout::optimize::OptimizeOptions;
use delta_layout::plan::PlanOptions;
use delta_layout::plan::cluster::ClusterRequest;
use deltalake::arrow::array::{Int64Array, RecordBatch, StringArray};
use deltalake::arrow::datatypes::{DataType, Field, Schema};
use serde_json::{Value, json};

use crate::fixture::{self, Fixture, load, rows, rows_with_row_ids};

const ROW_ID_COLUMN: &str = "_row-id-col-test";
const COMMIT_VERSION_COLUMN: &str = "_row-commit-version-col-test";

/// Checks a run on `fixture` kept every row's stable values and committed row tracking
/// metadata as the protocol asks.
fn check_preserved(fixture: &Fixture, options: &OptimizeOptions) {
    let location = fixture.location();
    let before_table = load(&location);
    let mark = before_table
        .row_tracking
        .as_ref()
        .and_then(|r| r.high_water_mark)
        .expect("a high-water mark");
    let before = rows_with_row_ids(&location);
    let plain = rows(&location);
    let outcome = fixture::optimize(&location, &options.clone().with_verify(true)).unwrap();
    let version = outcome.version.expect("a rewrite");
    assert_eq!(
        rows_with_row_ids(&location),
        before,
        "stable row IDs changed"
    );
    assert_eq!(rows(&location), plain);

    let actions = fixture.commit(version);
    let info = &actions[0]["commitInfo"];
    assert_eq!(info["tags"]["delta.rowTracking.preserved"], "true");
    let adds: Vec<&Value> = actions.iter().filter_map(|a| a.get("add")).collect();
    let mut next = mark + 1;
    for add in &adds {
        assert_eq!(
            add["baseRowId"],
            json!(next),
            "fresh, consecutive base row IDs"
        );
        assert_eq!(add["defaultRowCommitVersion"], json!(version));
        let stats: Value = serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
        next += stats["numRecords"].as_i64().unwrap();
    }
    let domain = actions
        .iter()
        .find_map(|a| a.get("domainMetadata"))
        .expect("the high-water mark");
    assert_eq!(domain["domain"], "delta.rowTracking");
    let config: Value = serde_json::from_str(domain["configuration"].as_str().unwrap()).unwrap();
    assert_eq!(config["rowIdHighWaterMark"], json!(next - 1));
    assert_eq!(
        load(&location).row_tracking.unwrap().high_water_mark,
        Some(next - 1)
    );
    for remove in actions.iter().filter_map(|a| a.get("remove")) {
        let path = remove["path"].as_str().unwrap();
        let original = before_table
            .files
            .iter()
            .find(|f| f.raw_path == path)
            .unwrap();
        assert_eq!(remove["baseRowId"], json!(original.base_row_id));
        assert_eq!(
            remove["defaultRowCommitVersion"],
            json!(original.default_row_commit_version)
        );
    }
}

#[test]
fn row_tracking_liquid_keeps_row_ids_through_two_clusterings() {
    let fixture = Fixture::copy("row-tracking-liquid");
    let before = rows_with_row_ids(&fixture.location());
    assert_eq!(before.len(), 10);
    check_preserved(&fixture, &OptimizeOptions::default());
    // A second, full reclustering moves rows whose values are now materialized.
    let mut request =
        ClusterRequest::new(delta_layout::curve::Curve::ZOrder, vec!["id".to_string()]);
    request.full = true;
    let plan = PlanOptions::default()
        .with_target_file_bytes(Some(1))
        .with_clustering(Some(request));
    check_preserved(&fixture, &OptimizeOptions::default().with_plan(plan));
}

/// A partitioned table with row tracking enabled: file A has no materialized values, file B
/// materializes some, file C has a deletion vector; the mark is far above the base IDs.
fn tracked_table(root: &Path) {
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
        Field::new(ROW_ID_COLUMN, DataType::Int64, true),
        Field::new(COMMIT_VERSION_COLUMN, DataType::Int64, true),
    ]));
    let write =
        |name: &str, ids: Vec<i64>, row_ids: Vec<Option<i64>>, versions: Vec<Option<i64>>| {
            let names: Vec<String> = ids.iter().map(|i| format!("n{i}")).collect();
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(ids)),
                    Arc::new(StringArray::from(names)),
                    Arc::new(Int64Array::from(row_ids)),
                    Arc::new(Int64Array::from(versions)),
                ],
            )
            .unwrap();
            let mut buffer = Vec::new();
            let mut writer =
                deltalake::parquet::arrow::ArrowWriter::try_new(&mut buffer, schema.clone(), None)
                    .unwrap();
            writer.write(&batch).unwrap();
            writer.close().unwrap();
            std::fs::write(root.join(name), &buffer).unwrap();
            buffer.len()
        };
    let a = write(
        "a.parquet",
        vec![1, 2, 3, 4, 5],
        vec![None; 5],
        vec![None; 5],
    );
    let b = write(
        "b.parquet",
        vec![6, 7, 8, 9],
        vec![Some(70), None, Some(90), None],
        vec![Some(1), None, None, Some(2)],
    );
    let c = write("c.parquet", vec![10, 11, 12], vec![None; 3], vec![None; 3]);
    // Delete row 1 of c.parquet inline: the serialized roaring treemap of {1}.
    let mut dv = 1_681_511_377u32.to_le_bytes().to_vec();
    let treemap: roaring::RoaringTreemap = [1u64].into_iter().collect();
    treemap.serialize_into(&mut dv).unwrap();
    let schema_string = json!({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": true, "metadata": {}},
        {"name": "name", "type": "string", "nullable": true, "metadata": {}},
    ]})
    .to_string();
    let add = |path: &str, size: usize, rows: u64, base: i64, version: i64| {
        json!({"add": {"path": path, "partitionValues": {}, "size": size,
            "modificationTime": 0, "dataChange": true,
            "stats": json!({"numRecords": rows}).to_string(),
            "baseRowId": base, "defaultRowCommitVersion": version}})
    };
    let mut c_add = add("c.parquet", c, 3, 300, 3);
    c_add["add"]["deletionVector"] = json!({"storageType": "i",
        "pathOrInlineDv": fixture::z85(&dv), "sizeInBytes": dv.len(), "cardinality": 1});
    let lines = [
        json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors", "rowTracking", "domainMetadata"]}}),
        json!({"metaData": {"id": "00000000-0000-0000-0000-0000000000rt",
            "format": {"provider": "parquet", "options": {}}, "schemaString": schema_string,
            "partitionColumns": [], "createdTime": 0,
            "configuration": {"delta.enableRowTracking": "true",
                "delta.enableDeletionVectors": "true",
                "delta.rowTracking.materializedRowIdColumnName": ROW_ID_COLUMN,
                "delta.rowTracking.materializedRowCommitVersionColumnName": COMMIT_VERSION_COLUMN}}}),
        add("a.parquet", a, 5, 0, 1),
        add("b.parquet", b, 4, 100, 2),
        c_add,
        json!({"domainMetadata": {"domain": "delta.rowTracking",
            "configuration": "{\"rowIdHighWaterMark\":999}", "removed": false}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(
        root.join("_delta_log/00000000000000000000.json"),
        text.join("\n"),
    )
    .unwrap();
}

#[test]
fn created_tables_keep_row_ids_through_compaction_and_clustering() {
    for cluster in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tracked");
        tracked_table(&root);
        let fixture = Fixture::at(&root);
        let before = rows_with_row_ids(&fixture.location());
        // 11 live rows; the stable IDs as the protocol defines them.
        assert_eq!(before.len(), 11, "{before:?}");
        let expect = [
            ("1", 0, 1),
            ("2", 1, 1),
            ("3", 2, 1),
            ("4", 3, 1),
            ("5", 4, 1),
            ("6", 70, 1),
            ("7", 101, 2),
            ("8", 90, 2),
            ("9", 103, 2),
            ("10", 300, 3),
            ("12", 302, 3),
        ];
        for (id, row_id, version) in expect {
            let row = before
                .iter()
                .find(|r| r.contains(&format!(";id=\"{id}\";")))
                .unwrap_or_else(|| panic!("row {id} in {before:?}"));
            assert!(
                row.contains(&format!("row_id=\"{row_id}\";"))
                    && row.starts_with(&format!("row_commit_version={version};")),
                "{row}"
            );
        }
        let mut plan = PlanOptions::default().with_max_deleted_ratio(0.0);
        if cluster {
            plan = plan.with_clustering(Some(ClusterRequest::new(
                delta_layout::curve::Curve::Hilbert,
                vec!["name".to_string(), "id".to_string()],
            )));
        }
        check_preserved(&fixture, &OptimizeOptions::default().with_plan(plan));
    }
}

/// Another writer that assigns row IDs meanwhile moves the high-water mark: the base row IDs
/// this run chose may be taken, so it aborts and deletes its files.
#[test]
fn a_concurrent_row_id_assignment_aborts_the_commit() {
    let fixture = Fixture::copy("row-tracking-liquid");
    let location = fixture.location();
    let rt = fixture::runtime();
    let rewritten = rt
        .block_on(delta_layout::optimize::rewrite(
            load(&location),
            &OptimizeOptions::default(),
            Arc::new(delta_layout::progress::NoProgress),
        ))
        .unwrap();
    let written = rewritten.written_paths();
    fixture.write_commit(
        fixture.next_version(),
        &[
            json!({"commitInfo": {"operation": "WRITE"}}),
            json!({"domainMetadata": {"domain": "delta.rowTracking",
                "configuration": "{\"rowIdHighWaterMark\":50}", "removed": false}}),
        ],
    );
    let err = rt.block_on(rewritten.commit()).unwrap_err().to_string();
    assert!(err.contains("row IDs"), "{err}");
    for path in written {
        assert!(
            !fixture.path.join(path).exists(),
            "written files are deleted"
        );
    }
}
