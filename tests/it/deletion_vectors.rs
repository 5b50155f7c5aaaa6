//! Deletion vectors of every storage kind (PROTOCOL.md "Deletion Vectors"): inline (`i`),
//! relative path from a UUID (`u`) and absolute path (`p`), on tables these tests build:
//! the deleted rows are dropped on rewrite, the `remove` action repeats the descriptor
//! exactly, and a deletion vector that cannot be read stops the run by name.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use deltalake::arrow::array::{Int64Array, RecordBatch, StringArray};
use deltalake::arrow::datatypes::{DataType, Field, Schema};
use serde_json::{Value, json};

use crate::fixture::{Fixture, load, rows, z85};

/// CRC-32 (IEEE), the checksum after each deletion vector in a file.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// The serialized deletion vector: magic number, then the portable 64-bit roaring format.
fn bitmap_bytes(deleted: &[u64]) -> Vec<u8> {
    let treemap: roaring::RoaringTreemap = deleted.iter().copied().collect();
    let mut out = 1_681_511_377u32.to_le_bytes().to_vec();
    treemap.serialize_into(&mut out).unwrap();
    out
}

/// A table of one 10-row file (ids 0..9, partition `p=a`) whose rows 1, 4 and 7 are deleted
/// through a deletion vector stored as `kind`. Returns the descriptor written.
fn table_with_dv(root: &Path, kind: &str) -> Value {
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();
    std::fs::create_dir_all(root.join("p=a")).unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
    ]));
    let ids: Vec<i64> = (0..10).collect();
    let names: Vec<String> = ids.iter().map(|i| format!("row-{i}")).collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(names)),
        ],
    )
    .unwrap();
    let mut buffer = Vec::new();
    let mut writer =
        deltalake::parquet::arrow::ArrowWriter::try_new(&mut buffer, schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let data_path = "p=a/part-00000.snappy.parquet";
    std::fs::write(root.join(data_path), &buffer).unwrap();

    let data = bitmap_bytes(&[1, 4, 7]);
    let size = data.len();
    let dv_file = |name: &str| {
        let mut file = vec![1u8];
        file.extend_from_slice(&u32::try_from(size).unwrap().to_be_bytes());
        file.extend_from_slice(&data);
        file.extend_from_slice(&crc32(&data).to_be_bytes());
        std::fs::write(root.join(name), file).unwrap();
    };
    let descriptor = match kind {
        "i" => {
            json!({"storageType": "i", "pathOrInlineDv": z85(&data), "sizeInBytes": size, "cardinality": 3})
        }
        "u" => {
            let uuid = uuid::Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
            dv_file(&format!("deletion_vector_{uuid}.bin"));
            json!({"storageType": "u", "pathOrInlineDv": z85(uuid.as_bytes()), "offset": 1,
                   "sizeInBytes": size, "cardinality": 3})
        }
        "p" => {
            dv_file("elsewhere.bin");
            let url = url::Url::from_file_path(root.join("elsewhere.bin")).unwrap();
            json!({"storageType": "p", "pathOrInlineDv": url.as_str(), "offset": 1,
                   "sizeInBytes": size, "cardinality": 3})
        }
        other => panic!("unknown kind {other}"),
    };
    let schema_string = json!({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": true, "metadata": {}},
        {"name": "name", "type": "string", "nullable": true, "metadata": {}},
        {"name": "p", "type": "string", "nullable": true, "metadata": {}},
    ]})
    .to_string();
    let stats = json!({"numRecords": 10, "minValues": {"id": 0, "name": "row-0"},
        "maxValues": {"id": 9, "name": "row-9"}, "nullCount": {"id": 0, "name": 0},
        "tightBounds": false});
    let lines = [
        json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}}),
        json!({"metaData": {"id": "00000000-0000-0000-0000-0000000000dv",
            "format": {"provider": "parquet", "options": {}}, "schemaString": schema_string,
            "partitionColumns": ["p"],
            "configuration": {"delta.enableDeletionVectors": "true"}, "createdTime": 0}}),
        json!({"add": {"path": data_path, "partitionValues": {"p": "a"}, "size": buffer.len(),
            "modificationTime": 0, "dataChange": true, "stats": stats.to_string(),
            "deletionVector": descriptor}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(
        root.join("_delta_log/00000000000000000000.json"),
        text.join("\n"),
    )
    .unwrap();
    descriptor
}

fn ids(location: &str) -> Vec<String> {
    rows(location)
}

#[test]
fn every_storage_kind_is_applied_and_repeated_in_the_remove() {
    for kind in ["i", "u", "p"] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(format!("dv-{kind}"));
        let descriptor = table_with_dv(&root, kind);
        let location = root.display().to_string();
        // delta-kernel's own scan reads the deletion vector we wrote: 7 rows.
        let before = ids(&location);
        assert_eq!(before.len(), 7, "{kind}: {before:?}");
        assert!(!before.iter().any(|r| r.contains("\"row-4\"")), "{kind}");

        let outcome = crate::fixture::optimize(
            &location,
            &delta_layout::optimize::OptimizeOptions::default().with_verify(true),
        )
        .unwrap_or_else(|e| panic!("{kind}: {e:#}"));
        assert_eq!(outcome.version, Some(1), "{kind}: the file is 30% deleted");
        assert_eq!(outcome.rows, 7, "{kind}");
        assert_eq!(ids(&location), before, "{kind}: rows changed");
        let after = load(&location);
        assert!(after.files.iter().all(|f| f.deletion_vector.is_none()));

        let fixture = Fixture::at(&root);
        let actions = fixture.commit(1);
        let removes: Vec<&Value> = actions.iter().filter_map(|a| a.get("remove")).collect();
        assert_eq!(removes.len(), 1, "{kind}");
        assert_eq!(
            removes[0]["deletionVector"], descriptor,
            "{kind}: descriptor not repeated"
        );
    }
}

#[test]
fn an_unreadable_deletion_vector_stops_the_run_by_name() {
    for (kind, break_it) in [("u", "missing"), ("p", "corrupt"), ("i", "garbled")] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("dv");
        let mut descriptor = table_with_dv(&root, kind);
        match break_it {
            "missing" => {
                for entry in std::fs::read_dir(&root).unwrap() {
                    let path = entry.unwrap().path();
                    if path.extension().is_some_and(|e| e == "bin") {
                        std::fs::remove_file(path).unwrap();
                    }
                }
            }
            "corrupt" => {
                let path = root.join("elsewhere.bin");
                let mut bytes = std::fs::read(&path).unwrap();
                let n = bytes.len();
                bytes[n - 6] ^= 0xff;
                std::fs::write(&path, bytes).unwrap();
            }
            _ => {
                descriptor["pathOrInlineDv"] = json!("not z85 at all ~~~~~~~~~~");
                let log = root.join("_delta_log/00000000000000000000.json");
                let text = std::fs::read_to_string(&log).unwrap();
                let mut lines: Vec<Value> = text
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect();
                lines[2]["add"]["deletionVector"] = descriptor.clone();
                let text: Vec<String> = lines.iter().map(Value::to_string).collect();
                std::fs::write(&log, text.join("\n")).unwrap();
            }
        }
        let fixture = Fixture::at(&root);
        let listing = fixture.listing();
        let output = Command::new(env!("CARGO_BIN_EXE_delta-layout"))
            .args(["optimize", &root.display().to_string(), "--quiet"])
            .output()
            .unwrap();
        let message = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{kind} {break_it}: {message}"
        );
        assert!(
            message.contains("part-00000.snappy.parquet") && message.contains("deletion vector"),
            "{kind} {break_it}: {message}"
        );
        assert_eq!(
            fixture.listing(),
            listing,
            "{kind} {break_it}: the table changed"
        );
    }
}

/// A clustered file whose deletion vector deletes a small share of its rows stays in its
/// cube (`--max-deleted-ratio`, as compaction): a re-run has nothing to do; past the ratio the
/// file is new, rewritten without its deleted rows.
#[test]
fn a_small_deletion_keeps_a_clustered_file_in_its_cube() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    table_with_dv(&root, "i");
    let location = root.display().to_string();
    let delta_layout = env!("CARGO_BIN_EXE_delta-layout");
    let optimize = |ratio: &str| {
        let output = Command::new(delta_layout)
            .args([
                "optimize",
                &location,
                "--hilbert",
                "id",
                "--max-deleted-ratio",
                ratio,
                "--json",
                "--quiet",
                "--no-report",
            ])
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    assert_eq!(optimize("0.05")["files_removed"], 1);
    assert_eq!(ids(&location).len(), 7);

    // Another writer deletes one of the clustered file's 7 rows (its first, id 0).
    let table = load(&location);
    let file = &table.files[0];
    let data = bitmap_bytes(&[0]);
    let descriptor = json!({"storageType": "i", "pathOrInlineDv": z85(&data),
        "sizeInBytes": data.len(), "cardinality": 1});
    let mut add = json!({"path": file.raw_path, "partitionValues": {"p": "a"},
        "size": file.size_bytes, "modificationTime": 1, "dataChange": true,
        "deletionVector": descriptor});
    let stats = file.stats.as_ref().unwrap();
    add["stats"] = Value::String(
        json!({"numRecords": stats.num_records, "minValues": stats.min_values(),
            "maxValues": stats.max_values(), "nullCount": stats.null_count()})
        .to_string(),
    );
    add["tags"] = serde_json::to_value(&file.tags).unwrap();
    let fixture = Fixture::at(&root);
    fixture.write_commit(
        fixture.next_version(),
        &[
            json!({"commitInfo": {"operation": "DELETE"}}),
            json!({"remove": {"path": file.raw_path, "deletionTimestamp": 1, "dataChange": true,
                "partitionValues": {"p": "a"}, "size": file.size_bytes}}),
            json!({"add": add}),
        ],
    );
    let expected: Vec<String> = ids(&location);
    assert_eq!(expected.len(), 6);

    // 1 of 7 rows (14%): within a ratio of 0.5 the file stays in its cube.
    assert_eq!(optimize("0.5")["version"], Value::Null);
    // Past the default 5%: rewritten, its deleted row dropped.
    assert_eq!(optimize("0.05")["files_removed"], 1);
    assert_eq!(ids(&location), expected);
    assert!(
        load(&location)
            .files
            .iter()
            .all(|f| f.deletion_vector.is_none())
    );
}
