//! Per-range spill files: Arrow IPC streams in a temporary directory that is removed when
//! the last handle goes, on success and on failure alike.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;
use std::sync::{Arc, Mutex};

use deltalake::arrow::array::RecordBatch;
use deltalake::arrow::compute::concat_batches;
use deltalake::arrow::ipc::reader::StreamReader;
use deltalake::arrow::ipc::writer::StreamWriter;

use crate::error::{Error, Result};

/// Rows below which consecutive spilled parts are joined when a spill file is read.
const COALESCE_ROWS: usize = crate::rewrite::READ_ROWS_PER_WRITE;

/// Spill files a [`SpillFiles`] keeps open for writing at once, at most: 64. Pieces are many
/// when the memory limit is small against the partition (a piece is at most a quarter of the
/// budget of rows: thousands at `--memory-limit 1MiB` on 22 MB), and one open file per piece
/// ran into the process's limit on open files. More pieces than this are routed in passes
/// ([`SpillFiles::finish`]).
pub(super) const MAX_OPEN_SPILL_FILES: usize = 64;

/// Rows of a batch to the pieces they belong to, as `(piece, part)`.
pub(super) type Route<'a> = dyn Fn(&RecordBatch) -> Result<Vec<(usize, RecordBatch)>> + 'a;

/// Spill files being written for pieces `first..first + pieces` (created on first use): one
/// per piece when they are at most the fan-in, else one per group of `per_file` consecutive
/// pieces, each group routed again into its pieces when the files are finished.
pub(super) struct SpillFiles {
    directory: Arc<tempfile::TempDir>,
    /// Numbers the files of every pass in the directory.
    names: Arc<std::sync::atomic::AtomicUsize>,
    fan_in: usize,
    first: usize,
    pieces: usize,
    per_file: usize,
    paths: Vec<std::path::PathBuf>,
    writers: Vec<Mutex<Option<StreamWriter<BufWriter<File>>>>>,
    rows: Vec<std::sync::atomic::AtomicU64>,
}

/// One finished spill file; holds the directory alive.
pub(super) struct SpillFile {
    _directory: Arc<tempfile::TempDir>,
    path: std::path::PathBuf,
    /// Rows spilled into it.
    pub(super) rows: u64,
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        context: "spill file".into(),
        path: path.to_path_buf(),
        source,
    }
}

impl SpillFiles {
    /// Spill files for `pieces` pieces in a new temporary directory in `parent` (the system's
    /// by default), at most [`MAX_OPEN_SPILL_FILES`] open at once.
    pub(super) fn create(parent: Option<&Path>, pieces: usize) -> Result<Self> {
        Self::with_fan_in(parent, pieces, MAX_OPEN_SPILL_FILES)
    }

    /// As [`SpillFiles::create`], at most `fan_in` (at least 2) files open at once.
    pub(super) fn with_fan_in(parent: Option<&Path>, pieces: usize, fan_in: usize) -> Result<Self> {
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let directory = tempfile::Builder::new()
            .prefix(&super::super::leftovers::spill_prefix())
            .tempdir_in(&parent)
            .map_err(|e| io(&parent, e))?;
        Ok(Self::in_directory(
            Arc::new(directory),
            Arc::default(),
            fan_in.max(2),
            0,
            pieces,
        ))
    }

    fn in_directory(
        directory: Arc<tempfile::TempDir>,
        names: Arc<std::sync::atomic::AtomicUsize>,
        fan_in: usize,
        first: usize,
        pieces: usize,
    ) -> Self {
        let per_file = pieces.div_ceil(fan_in).max(1);
        let files = pieces.div_ceil(per_file);
        let paths = (0..files)
            .map(|_| {
                let n = names.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                directory.path().join(format!("spill-{n:06}.arrows"))
            })
            .collect();
        Self {
            directory,
            names,
            fan_in,
            first,
            pieces,
            per_file,
            paths,
            writers: (0..files).map(|_| Mutex::new(None)).collect(),
            rows: (0..files)
                .map(|_| std::sync::atomic::AtomicU64::new(0))
                .collect(),
        }
    }

    /// Appends rows of `piece` (one of this set's pieces).
    pub(super) fn append(&self, piece: usize, batch: &RecordBatch) -> Result<()> {
        let file = piece
            .checked_sub(self.first)
            .filter(|p| *p < self.pieces)
            .map(|p| p / self.per_file)
            .ok_or_else(|| {
                Error::Internal(format!(
                    "rows of piece {piece} routed to the spill files of pieces {} to {}",
                    self.first,
                    self.first + self.pieces
                ))
            })?;
        let mut slot = self.writers[file]
            .lock()
            .map_err(|_| Error::Internal("a spill writer was poisoned".into()))?;
        if slot.is_none() {
            let path = &self.paths[file];
            let handle = File::create(path).map_err(|e| io(path, e))?;
            let writer = StreamWriter::try_new(BufWriter::new(handle), &batch.schema())
                .map_err(|e| Error::arrow("spilling rows", e))?;
            *slot = Some(writer);
        }
        self.rows[file].fetch_add(
            batch.num_rows() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        slot.as_mut()
            .expect("created above")
            .write(batch)
            .map_err(|e| Error::arrow("spilling rows", e))
    }

    /// Closes every spill file and returns one per piece (`None` for a piece that got no
    /// rows). When pieces share files, each file is read back a batch at a time, its rows
    /// routed again by `route` (rows to `(piece, part)`, as they were routed the first time)
    /// into the files of its own pieces, and removed: a pass per factor of the fan-in, each
    /// keeping at most the fan-in files open for writing and one for reading. Rows of a
    /// piece keep the order they were appended in.
    pub(super) fn finish(self, route: &Route<'_>) -> Result<Vec<Option<SpillFile>>> {
        let mut out = Vec::with_capacity(self.pieces);
        for (file, ((slot, rows), path)) in self
            .writers
            .into_iter()
            .zip(self.rows)
            .zip(self.paths)
            .enumerate()
        {
            let writer = slot
                .into_inner()
                .map_err(|_| Error::Internal("a spill writer was poisoned".into()))?;
            let first = self.first + file * self.per_file;
            let pieces = self.per_file.min(self.first + self.pieces - first);
            let Some(mut writer) = writer else {
                out.extend((0..pieces).map(|_| None));
                continue;
            };
            writer
                .finish()
                .map_err(|e| Error::arrow("closing a spill file", e))?;
            drop(writer);
            let spilled = SpillFile {
                _directory: self.directory.clone(),
                path,
                rows: rows.into_inner(),
            };
            if self.per_file == 1 {
                out.push(Some(spilled));
                continue;
            }
            let next = Self::in_directory(
                self.directory.clone(),
                self.names.clone(),
                self.fan_in,
                first,
                pieces,
            );
            spilled.for_each_batch(&mut |batch| {
                for (piece, part) in route(&batch)? {
                    next.append(piece, &part)?;
                }
                Ok(())
            })?;
            out.extend(next.finish(route)?);
        }
        Ok(out)
    }
}

impl SpillFile {
    /// Calls `f` with each batch of the file, in the order they were written, then removes
    /// the file.
    fn for_each_batch(self, f: &mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<()> {
        let file = File::open(&self.path).map_err(|e| io(&self.path, e))?;
        let reader = StreamReader::try_new(BufReader::new(file), None)
            .map_err(|e| Error::arrow("reading a spill file", e))?;
        for batch in reader {
            f(batch.map_err(|e| Error::arrow("reading a spill file", e))?)?;
        }
        std::fs::remove_file(&self.path).map_err(|e| io(&self.path, e))
    }

    /// The file's rows, consecutive small parts joined; removes the file.
    pub(super) fn read(self) -> Result<Vec<RecordBatch>> {
        let file = File::open(&self.path).map_err(|e| io(&self.path, e))?;
        let reader = StreamReader::try_new(BufReader::new(file), None)
            .map_err(|e| Error::arrow("reading a spill file", e))?;
        // Parts are as small as a batch's share of one range: consecutive parts are joined
        // into batches of at least COALESCE_ROWS rows, as gathering pays per source batch.
        let mut batches = Vec::new();
        let mut group: Vec<RecordBatch> = Vec::new();
        let mut group_rows = 0;
        let flush = |group: &mut Vec<RecordBatch>, batches: &mut Vec<RecordBatch>| -> Result<()> {
            match group.len() {
                0 => {}
                1 => batches.append(group),
                _ => {
                    let joined = concat_batches(&group[0].schema(), group.iter())
                        .map_err(|e| Error::arrow("reading a spill file", e))?;
                    group.clear();
                    batches.push(joined);
                }
            }
            Ok(())
        };
        for batch in reader {
            let batch = batch.map_err(|e| Error::arrow("reading a spill file", e))?;
            group_rows += batch.num_rows();
            group.push(batch);
            if group_rows >= COALESCE_ROWS {
                flush(&mut group, &mut batches)?;
                group_rows = 0;
            }
        }
        flush(&mut group, &mut batches)?;
        std::fs::remove_file(&self.path).map_err(|e| io(&self.path, e))?;
        Ok(batches)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use deltalake::arrow::array::{Array, Int64Array, RecordBatch, UInt32Array};
    use deltalake::arrow::compute::take_record_batch;
    use deltalake::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    const PIECES: usize = 20;

    /// Rows to pieces by value modulo [`PIECES`], as the router does by key.
    fn route(batch: &RecordBatch) -> Result<Vec<(usize, RecordBatch)>> {
        let values = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); PIECES];
        for (row, v) in values.values().iter().enumerate() {
            members[usize::try_from(*v).unwrap() % PIECES].push(u32::try_from(row).unwrap());
        }
        Ok(members
            .into_iter()
            .enumerate()
            .filter(|(_, rows)| !rows.is_empty())
            .map(|(piece, rows)| {
                (
                    piece,
                    take_record_batch(batch, &UInt32Array::from(rows)).unwrap(),
                )
            })
            .collect())
    }

    fn values(batches: &[RecordBatch]) -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                let column = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                assert_eq!(column.null_count(), 0);
                column.values().to_vec()
            })
            .collect()
    }

    #[test]
    fn pieces_beyond_the_fan_in_are_routed_in_passes() {
        let parent = tempfile::tempdir().unwrap();
        // 20 pieces through at most 3 open files: groups of 7, then of 3, then one each.
        let spill = SpillFiles::with_fan_in(Some(parent.path()), PIECES, 3).unwrap();
        assert_eq!(spill.writers.len(), 3);
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        // Pieces 17 to 19 get no rows.
        let all: Vec<i64> = (0..1000).filter(|v| v % 20 < 17).collect();
        for chunk in all.chunks(37) {
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(Int64Array::from(chunk.to_vec()))],
            )
            .unwrap();
            for (piece, part) in route(&batch).unwrap() {
                spill.append(piece, &part).unwrap();
            }
        }
        let directory = spill.directory.path().to_path_buf();
        let files = spill.finish(&route).unwrap();
        assert_eq!(files.len(), PIECES);
        // Only the pieces' own files are left: the group files of the passes are removed.
        assert_eq!(std::fs::read_dir(&directory).unwrap().count(), 17);
        let mut seen = Vec::new();
        for (piece, file) in files.into_iter().enumerate() {
            let expected: Vec<i64> = all
                .iter()
                .copied()
                .filter(|v| usize::try_from(*v).unwrap() % PIECES == piece)
                .collect();
            let Some(file) = file else {
                assert!(expected.is_empty(), "piece {piece} lost its rows");
                continue;
            };
            assert_eq!(file.rows, expected.len() as u64);
            // Each piece's rows, in the order they were appended.
            let got = values(&file.read().unwrap());
            assert_eq!(got, expected, "piece {piece}");
            seen.extend(got);
        }
        seen.sort_unstable();
        assert_eq!(seen, all);
        // The last file read let the directory go.
        assert!(!directory.exists());
    }

    #[test]
    fn pieces_within_the_fan_in_get_a_file_each() {
        let spill = SpillFiles::with_fan_in(None, 5, 64).unwrap();
        assert_eq!((spill.writers.len(), spill.per_file), (5, 1));
        let err = spill
            .append(
                5,
                &RecordBatch::try_new(
                    Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)])),
                    vec![Arc::new(Int64Array::from(vec![1]))],
                )
                .unwrap(),
            )
            .unwrap_err();
        assert!(err.to_string().contains("piece 5"), "{err}");
    }
}
