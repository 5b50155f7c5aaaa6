//! Writes TPC-H `lineitem` as a Delta table of many small files, for the benchmarks:
//! `tpch-table SCALE_FACTOR FILES OUT_DIR [PARTITION_COLUMN]` (build with `--features tpch`).
//!
//! Rows come from the `tpchgen` crates (no download) and are dealt to the files at random
//! with a fixed seed, so every file holds a uniform sample of the table (no clustering left
//! over from generation order). The log is one commit: protocol 1/2, the schema, and an `add`
//! per file with stats as a Delta writer records them: `numRecords`, `nullCount`, and
//! `minValues`/`maxValues` of every column but `l_comment` (longer than the 32-character
//! string prefix). Strings are written as Utf8, decimals as Decimal128(15, 2), dates as Date32.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use deltalake::arrow::array::{Array, ArrayRef, RecordBatch, UInt32Array};
use deltalake::arrow::compute::{cast, take_record_batch};
use deltalake::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use deltalake::parquet::arrow::ArrowWriter;
use deltalake::parquet::basic::Compression;
use deltalake::parquet::file::properties::WriterProperties;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

fn delta_type(t: &DataType) -> String {
    match t {
        DataType::Int64 => "long".into(),
        DataType::Int32 => "integer".into(),
        DataType::Date32 => "date".into(),
        DataType::Utf8 => "string".into(),
        DataType::Decimal128(p, s) => format!("decimal({p},{s})"),
        other => panic!("unexpected lineitem type {other}"),
    }
}

/// A column's bound in one file, compared within its column's type.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Bound {
    Int(i128),
    Text(String),
}

/// Min/max of each column in one file, `None` where not kept.
type Bounds = Vec<Option<(Bound, Bound)>>;

fn update_bounds(bounds: &mut Bounds, batch: &RecordBatch) {
    use deltalake::arrow::array::AsArray;
    use deltalake::arrow::datatypes::{Date32Type, Decimal128Type, Int32Type, Int64Type};
    if bounds.is_empty() {
        bounds.resize(batch.num_columns(), None);
    }
    for (i, column) in batch.columns().iter().enumerate() {
        if batch.schema().field(i).name() == "l_comment" {
            continue;
        }
        let pair = match column.data_type() {
            DataType::Int64 => {
                let a = column.as_primitive::<Int64Type>();
                min_max(a.iter().flatten().map(i128::from))
            }
            DataType::Int32 => {
                let a = column.as_primitive::<Int32Type>();
                min_max(a.iter().flatten().map(i128::from))
            }
            DataType::Date32 => {
                let a = column.as_primitive::<Date32Type>();
                min_max(a.iter().flatten().map(i128::from))
            }
            DataType::Decimal128(..) => {
                let a = column.as_primitive::<Decimal128Type>();
                min_max(a.iter().flatten())
            }
            DataType::Utf8 => {
                let a = column.as_string::<i32>();
                let lo = a.iter().flatten().min().map(|s| Bound::Text(s.to_string()));
                let hi = a.iter().flatten().max().map(|s| Bound::Text(s.to_string()));
                lo.zip(hi)
            }
            other => panic!("unexpected lineitem type {other}"),
        };
        if let Some((lo, hi)) = pair {
            bounds[i] = Some(match bounds[i].take() {
                None => (lo, hi),
                Some((a, b)) => (if lo < a { lo } else { a }, if hi > b { hi } else { b }),
            });
        }
    }
}

fn min_max(values: impl Iterator<Item = i128>) -> Option<(Bound, Bound)> {
    let (mut lo, mut hi) = (i128::MAX, i128::MIN);
    let mut any = false;
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
        any = true;
    }
    any.then_some((Bound::Int(lo), Bound::Int(hi)))
}

fn stats_json(schema: &Schema, bounds: &Bounds, rows: u64) -> String {
    let (mut min, mut max, mut nulls) = (
        serde_json::Map::new(),
        serde_json::Map::new(),
        serde_json::Map::new(),
    );
    for (i, field) in schema.fields().iter().enumerate() {
        nulls.insert(field.name().clone(), serde_json::json!(0));
        let Some(Some((lo, hi))) = bounds.get(i) else {
            continue;
        };
        let value = |b: &Bound| match (b, field.data_type()) {
            (Bound::Int(days), DataType::Date32) => {
                let date = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()
                    + chrono::Duration::days(i64::try_from(*days).unwrap());
                serde_json::json!(date.format("%Y-%m-%d").to_string())
            }
            (Bound::Int(v), DataType::Decimal128(_, scale)) => {
                let text = format!("{}.{:02}", v / 100, (v % 100).abs());
                assert_eq!(*scale, 2);
                serde_json::from_str(&text).unwrap()
            }
            (Bound::Int(v), _) => serde_json::json!(i64::try_from(*v).unwrap()),
            (Bound::Text(s), _) => serde_json::json!(s),
        };
        min.insert(field.name().clone(), value(lo));
        max.insert(field.name().clone(), value(hi));
    }
    serde_json::json!({"numRecords": rows, "minValues": min, "maxValues": max, "nullCount": nulls})
        .to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: tpch-table SCALE_FACTOR FILES OUT_DIR [PARTITION_COLUMN]");
        std::process::exit(2);
    }
    let scale: f64 = args[1].parse().expect("scale factor");
    let num_files: usize = args[2].parse().expect("file count");
    let root = Path::new(&args[3]);
    let partition = args.get(4).cloned();
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();

    let generator = tpchgen::generators::LineItemGenerator::new(scale, 1, 1);
    let batches = tpchgen_arrow::LineItemArrow::new(generator).with_batch_size(65_536);
    let mut rng = StdRng::seed_from_u64(20_261_129);
    let mut schema: Option<SchemaRef> = None;
    // (partition value, file number) -> writer
    let mut writers: BTreeMap<(String, usize), (ArrowWriter<std::fs::File>, u64, String, Bounds)> =
        BTreeMap::new();
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    for batch in batches {
        let batch = batch.expect("tpchgen batch");
        // Utf8View -> Utf8, everything else as generated.
        let columns: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .map(|c| match c.data_type() {
                DataType::Utf8View => cast(c, &DataType::Utf8).unwrap(),
                _ => c.clone(),
            })
            .collect();
        let out_schema = schema.get_or_insert_with(|| {
            Arc::new(Schema::new(
                batch
                    .schema()
                    .fields()
                    .iter()
                    .zip(&columns)
                    .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), true))
                    .collect::<Vec<_>>(),
            ))
        });
        let batch = RecordBatch::try_new(out_schema.clone(), columns).unwrap();
        let part_values: Vec<String> = match &partition {
            Some(p) => {
                let col = batch.column_by_name(p).expect("partition column");
                let col = cast(col, &DataType::Utf8).unwrap();
                let col = col
                    .as_any()
                    .downcast_ref::<deltalake::arrow::array::StringArray>()
                    .unwrap();
                (0..col.len()).map(|i| col.value(i).to_string()).collect()
            }
            None => vec![String::new(); batch.num_rows()],
        };
        let mut groups: BTreeMap<(String, usize), Vec<u32>> = BTreeMap::new();
        for row in 0..batch.num_rows() {
            let file = rng.random_range(0..num_files);
            groups
                .entry((part_values[row].clone(), file))
                .or_default()
                .push(u32::try_from(row).unwrap());
        }
        let data_schema: SchemaRef = match &partition {
            Some(p) => Arc::new(Schema::new(
                out_schema
                    .fields()
                    .iter()
                    .filter(|f| f.name() != p)
                    .cloned()
                    .collect::<Vec<_>>(),
            )),
            None => out_schema.clone(),
        };
        for (key, rows) in groups {
            let part = take_record_batch(&batch, &UInt32Array::from(rows)).unwrap();
            let part = RecordBatch::try_new(
                data_schema.clone(),
                data_schema
                    .fields()
                    .iter()
                    .map(|f| part.column_by_name(f.name()).unwrap().clone())
                    .collect(),
            )
            .unwrap();
            let entry = writers.entry(key.clone()).or_insert_with(|| {
                let dir = match &partition {
                    Some(p) => format!("{p}={}/", key.0),
                    None => String::new(),
                };
                std::fs::create_dir_all(root.join(&dir)).unwrap();
                let path = format!("{dir}part-{:05}.snappy.parquet", key.1);
                let file = std::fs::File::create(root.join(&path)).unwrap();
                let writer =
                    ArrowWriter::try_new(file, data_schema.clone(), Some(properties.clone()))
                        .unwrap();
                (writer, 0, path, Vec::new())
            });
            entry.1 += part.num_rows() as u64;
            update_bounds(&mut entry.3, &part);
            entry.0.write(&part).unwrap();
        }
    }
    let schema = schema.expect("lineitem has rows");
    let fields: Vec<serde_json::Value> = schema
        .fields()
        .iter()
        .map(|f| serde_json::json!({"name": f.name(), "type": delta_type(f.data_type()), "nullable": true, "metadata": {}}))
        .collect();
    let mut lines = vec![
        serde_json::json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}).to_string(),
        serde_json::json!({"metaData": {
            "id": "00000000-0000-0000-0000-00000000tpch",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": serde_json::json!({"type": "struct", "fields": fields}).to_string(),
            "partitionColumns": partition.iter().collect::<Vec<_>>(),
            "configuration": {},
            "createdTime": 0,
        }})
        .to_string(),
    ];
    let mut total_rows = 0;
    let data_schema: Schema = Schema::new(
        schema
            .fields()
            .iter()
            .filter(|f| Some(f.name()) != partition.as_ref())
            .cloned()
            .collect::<Vec<_>>(),
    );
    for ((value, _), (writer, rows, path, bounds)) in writers {
        writer.close().unwrap();
        let size = std::fs::metadata(root.join(&path)).unwrap().len();
        let partition_values = match &partition {
            Some(p) => serde_json::json!({ p: value }),
            None => serde_json::json!({}),
        };
        lines.push(
            serde_json::json!({"add": {
                "path": path, "partitionValues": partition_values, "size": size,
                "modificationTime": 0, "dataChange": true,
                "stats": stats_json(&data_schema, &bounds, rows),
            }})
            .to_string(),
        );
        total_rows += rows;
    }
    std::fs::write(
        root.join("_delta_log/00000000000000000000.json"),
        lines.join("\n"),
    )
    .unwrap();
    println!(
        "{} files, {total_rows} rows in {}",
        lines.len() - 2,
        root.display()
    );
}
