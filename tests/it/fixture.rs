//! Test fixtures: copies of the real tables in `testdata/`, an independent reader (the
//! delta-kernel scan, which applies deletion vectors, column mapping and partition values
//! itself), and listings of a table's files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use delta_kernel::engine::arrow_data::ArrowEngineData;
use deltalake::arrow::array::Array;
use deltalake::arrow::util::display::{ArrayFormatter, FormatOptions};
use serde_json::Value;

/// A table copied into a temporary directory (removed on drop).
pub struct Fixture {
    _dir: Option<tempfile::TempDir>,
    pub path: PathBuf,
}

impl Fixture {
    /// Copies `testdata/<name>` into a fresh temporary directory.
    pub fn copy(name: &str) -> Self {
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata")
            .join(name);
        assert!(source.is_dir(), "missing fixture {}", source.display());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        copy_dir(&source, &path);
        Self {
            _dir: Some(dir),
            path,
        }
    }

    /// A table at `path` that the caller made (and removes).
    pub fn at(path: &Path) -> Self {
        Self {
            _dir: None,
            path: path.to_path_buf(),
        }
    }

    pub fn location(&self) -> String {
        self.path.display().to_string()
    }

    /// Every file under the table root with its size and content hash, to prove a table was
    /// left untouched.
    pub fn listing(&self) -> BTreeMap<String, (u64, u64)> {
        let mut out = BTreeMap::new();
        walk(&self.path, &self.path, &mut out);
        out
    }

    /// Commit files in `_delta_log`.
    pub fn log_versions(&self) -> Vec<u64> {
        let mut versions: Vec<u64> = std::fs::read_dir(self.path.join("_delta_log"))
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().into_string().unwrap();
                name.strip_suffix(".json")?.parse().ok()
            })
            .collect();
        versions.sort_unstable();
        versions
    }

    /// Writes commit `version` by hand, as another writer would, holding `actions`.
    pub fn write_commit(&self, version: u64, actions: &[Value]) {
        let lines: Vec<String> = actions.iter().map(Value::to_string).collect();
        std::fs::write(
            self.path
                .join("_delta_log")
                .join(format!("{version:020}.json")),
            lines.join("\n"),
        )
        .unwrap();
    }

    /// The version after the last commit file.
    pub fn next_version(&self) -> u64 {
        self.log_versions().last().map_or(0, |v| v + 1)
    }

    /// The JSON actions of commit `version`.
    pub fn commit(&self, version: u64) -> Vec<Value> {
        let text = std::fs::read_to_string(
            self.path
                .join("_delta_log")
                .join(format!("{version:020}.json")),
        )
        .unwrap();
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Fixture {
    /// Appends one commit that adds a copy of every live file without a deletion vector
    /// (same partition, same stats, new name), as a second writer appending the same data
    /// would. Every partition then has files to compact, whatever the original layout.
    /// Returns the number of files added.
    pub fn double_files(&self) -> usize {
        self.copy_files(|_| true)
    }

    /// Appends, in one commit, a copy of each live file without a deletion vector that `pick`
    /// takes (by its position among them), with the same stats and no tags: an append of
    /// those rows again, as a writer adds new files. Returns the number of files added.
    pub fn copy_files(&self, pick: impl Fn(usize) -> bool) -> usize {
        let table = load(&self.location());
        let prefix = format!("copy{}-", table.version + 1);
        let mut lines = vec![serde_json::json!({"commitInfo": {"operation": "WRITE"}}).to_string()];
        for (_, file) in table
            .files
            .iter()
            .filter(|f| f.deletion_vector.is_none())
            .enumerate()
            .filter(|(i, _)| pick(*i))
        {
            let (raw_dir, raw_name) = match file.raw_path.rsplit_once('/') {
                Some((d, n)) => (format!("{d}/"), n.to_string()),
                None => (String::new(), file.raw_path.clone()),
            };
            let (dir, name) = match file.path.rsplit_once('/') {
                Some((d, n)) => (format!("{d}/"), n.to_string()),
                None => (String::new(), file.path.clone()),
            };
            std::fs::copy(
                self.path.join(&file.path),
                self.path.join(format!("{dir}{prefix}{name}")),
            )
            .unwrap();
            let partition_values: serde_json::Map<String, Value> = table
                .partition_physical_names
                .iter()
                .zip(&file.partition_values)
                .map(|(k, v)| (k.clone(), v.clone().map_or(Value::Null, Value::String)))
                .collect();
            let mut add = serde_json::json!({
                "path": format!("{raw_dir}{prefix}{raw_name}"),
                "partitionValues": partition_values,
                "size": file.size_bytes,
                "modificationTime": file.modification_time_ms,
                "dataChange": true,
            });
            if let Some(stats) = &file.stats {
                let mut object = serde_json::Map::new();
                if let Some(n) = stats.num_records {
                    object.insert("numRecords".into(), n.into());
                }
                object.insert(
                    "minValues".into(),
                    Value::Object(stats.min_values().clone()),
                );
                object.insert(
                    "maxValues".into(),
                    Value::Object(stats.max_values().clone()),
                );
                object.insert(
                    "nullCount".into(),
                    Value::Object(stats.null_count().clone()),
                );
                add["stats"] = Value::String(Value::Object(object).to_string());
            }
            lines.push(serde_json::json!({ "add": add }).to_string());
        }
        let added = lines.len() - 1;
        std::fs::write(
            self.path
                .join("_delta_log")
                .join(format!("{:020}.json", table.version + 1)),
            lines.join("\n"),
        )
        .unwrap();
        added
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (u64, u64)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            walk(root, &entry.path(), out);
        } else {
            let bytes = std::fs::read(entry.path()).unwrap();
            let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
            });
            let rel = entry
                .path()
                .strip_prefix(root)
                .unwrap()
                .display()
                .to_string();
            out.insert(rel, (bytes.len() as u64, hash));
        }
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Every live row of the table's latest version, read by delta-kernel's own scan, as sorted
/// canonical strings. A null, an empty string and the string "null" all render differently.
pub fn rows(location: &str) -> Vec<String> {
    scan_rows(location, false)
}

/// As [`rows`], each row with its stable row ID and row commit version as delta-kernel
/// computes them (PROTOCOL.md "Row Tracking": materialized values, else `baseRowId` + row
/// index and `defaultRowCommitVersion`), in the columns `row_id` and `row_commit_version`.
pub fn rows_with_row_ids(location: &str) -> Vec<String> {
    scan_rows(location, true)
}

fn scan_rows(location: &str, row_ids: bool) -> Vec<String> {
    let rt = runtime();
    let url = deltalake::table::builder::parse_table_uri(location).unwrap();
    let engine = rt.block_on(async {
        let table = deltalake::open_table(url.clone()).await.unwrap();
        table.log_store().engine(None)
    });
    let root = format!("{}/", url.as_str().trim_end_matches('/'));
    let snapshot = delta_kernel::Snapshot::builder_for(root)
        .build(engine.as_ref())
        .unwrap();
    let mut builder = snapshot.clone().scan_builder();
    if row_ids {
        use delta_kernel::schema::MetadataColumnSpec;
        // delta-kernel computes stable row IDs; it has no row commit versions yet, so those
        // are computed below from the file and row index it reports.
        let schema = snapshot
            .schema()
            .add_metadata_column("row_id", MetadataColumnSpec::RowId)
            .unwrap()
            .add_metadata_column("row_index", MetadataColumnSpec::RowIndex)
            .unwrap()
            .add_metadata_column("file_path", MetadataColumnSpec::FilePath)
            .unwrap();
        builder = builder.with_schema(Arc::new(schema));
    }
    let scan = builder.build().unwrap();
    let options = FormatOptions::default().with_null("<NULL>");
    let table = row_ids.then(|| load(location));
    let mut out = Vec::new();
    for data in scan.execute(engine.clone()).unwrap() {
        let batch = ArrowEngineData::try_from_engine_data(data.unwrap())
            .unwrap()
            .record_batch()
            .clone();
        let schema = batch.schema();
        let formatters: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
            .collect();
        for row in 0..batch.num_rows() {
            let mut line = String::new();
            if let Some(table) = &table {
                line.push_str(&format!(
                    "row_commit_version={};",
                    row_commit_version(table, &batch, row)
                ));
            }
            for (i, column) in batch.columns().iter().enumerate() {
                let name = schema.field(i).name();
                if name == "row_index" || name == "file_path" {
                    continue;
                }
                if column.is_null(row) {
                    line.push_str(&format!("{name}=∅;"));
                } else {
                    line.push_str(&format!(
                        "{name}={:?};",
                        formatters[i].value(row).to_string()
                    ));
                }
            }
            out.push(line);
        }
    }
    out.sort();
    out
}

/// The stable row commit version of `row` (PROTOCOL.md "Row Tracking"): the materialized
/// value in its data file at its row index when not null, else the file's
/// `defaultRowCommitVersion`.
fn row_commit_version(
    table: &delta_layout::table::TableView,
    batch: &deltalake::arrow::array::RecordBatch,
    row: usize,
) -> i64 {
    use deltalake::arrow::array::AsArray;
    use deltalake::arrow::datatypes::Int64Type;
    let path = batch.column_by_name("file_path").unwrap();
    let path = deltalake::arrow::compute::cast(path, &deltalake::arrow::datatypes::DataType::Utf8)
        .unwrap();
    let path = path.as_string::<i32>().value(row).to_string();
    let index = batch
        .column_by_name("row_index")
        .unwrap()
        .as_primitive::<Int64Type>()
        .value(row);
    let file = table
        .files
        .iter()
        .find(|f| path.ends_with(&f.path))
        .unwrap_or_else(|| panic!("no file for {path}"));
    let column = table
        .property("delta.rowTracking.materializedRowCommitVersionColumnName")
        .unwrap();
    let local = url::Url::parse(&path)
        .ok()
        .and_then(|u| u.to_file_path().ok())
        .unwrap_or_else(|| std::path::PathBuf::from(&path));
    let reader = deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&local).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    let mut offset = 0i64;
    for data in reader {
        let data = data.unwrap();
        let n = i64::try_from(data.num_rows()).unwrap();
        if index < offset + n {
            if let Some(values) = data.column_by_name(column) {
                let values = values.as_primitive::<Int64Type>();
                let i = usize::try_from(index - offset).unwrap();
                if values.is_valid(i) {
                    return values.value(i);
                }
            }
            break;
        }
        offset += n;
    }
    file.default_row_commit_version
        .expect("a defaultRowCommitVersion")
}

pub fn load(location: &str) -> delta_layout::table::TableView {
    runtime()
        .block_on(delta_layout::table::TableView::load(location, None))
        .unwrap()
}

pub fn optimize(
    location: &str,
    options: &delta_layout::optimize::OptimizeOptions,
) -> delta_layout::Result<delta_layout::optimize::OptimizeOutcome> {
    runtime().block_on(delta_layout::optimize::optimize(
        location,
        options,
        Arc::new(delta_layout::progress::NoProgress),
    ))
}

/// Writes a new Delta table (protocol 1/2, unpartitioned) at `dir/name` holding `files`, each
/// a list of batches written as one Parquet file, with no stats in the log.
pub fn synthetic_table(
    dir: &Path,
    name: &str,
    files: &[Vec<deltalake::arrow::array::RecordBatch>],
) -> PathBuf {
    use deltalake::parquet::arrow::ArrowWriter;
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();
    let schema = files[0][0].schema();
    let fields: Vec<Value> = schema
        .fields()
        .iter()
        .map(|f| {
            let t = match f.data_type() {
                deltalake::arrow::datatypes::DataType::Int64 => "long".to_string(),
                deltalake::arrow::datatypes::DataType::Float64 => "double".to_string(),
                deltalake::arrow::datatypes::DataType::Utf8 => "string".to_string(),
                deltalake::arrow::datatypes::DataType::Date32 => "date".to_string(),
                deltalake::arrow::datatypes::DataType::Decimal128(p, s) => {
                    format!("decimal({p},{s})")
                }
                other => panic!("unsupported synthetic type {other}"),
            };
            serde_json::json!({"name": f.name(), "type": t, "nullable": true, "metadata": {}})
        })
        .collect();
    let schema_string = serde_json::json!({"type": "struct", "fields": fields}).to_string();
    let mut lines = vec![
        serde_json::json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}).to_string(),
        serde_json::json!({"metaData": {
            "id": "00000000-0000-0000-0000-000000000001",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string,
            "partitionColumns": [],
            "configuration": {},
            "createdTime": 0,
        }})
        .to_string(),
    ];
    for (i, batches) in files.iter().enumerate() {
        let file_name = format!("part-{i:05}.parquet");
        let mut buffer = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut buffer, schema.clone(), None).unwrap();
        for batch in batches {
            writer.write(batch).unwrap();
        }
        writer.close().unwrap();
        std::fs::write(root.join(&file_name), &buffer).unwrap();
        lines.push(
            serde_json::json!({"add": {
                "path": file_name,
                "partitionValues": {},
                "size": buffer.len(),
                "modificationTime": 0,
                "dataChange": true,
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

const Z85: &[u8; 85] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

/// Z85 (ZeroMQ RFC 32), as Delta encodes inline deletion vectors and UUIDs; input padded
/// with zeros to a multiple of 4 bytes.
pub fn z85(bytes: &[u8]) -> String {
    let mut padded = bytes.to_vec();
    while !padded.len().is_multiple_of(4) {
        padded.push(0);
    }
    let mut out = String::new();
    for chunk in padded.chunks(4) {
        let mut value = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        let mut digits = [0u8; 5];
        for d in digits.iter_mut().rev() {
            *d = Z85[(value % 85) as usize];
            value /= 85;
        }
        out.push_str(std::str::from_utf8(&digits).unwrap());
    }
    out
}
