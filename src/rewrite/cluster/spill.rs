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

/// Spill files being written, one per range (created on first use).
pub(super) struct SpillFiles {
    directory: Arc<tempfile::TempDir>,
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
    Error::Internal(format!("spill file '{}': {source}", path.display()))
}

impl SpillFiles {
    pub(super) fn create(parent: Option<&Path>, ranges: usize) -> Result<Self> {
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let directory = tempfile::Builder::new()
            .prefix(&super::super::leftovers::spill_prefix())
            .tempdir_in(&parent)
            .map_err(|e| io(&parent, e))?;
        Ok(Self {
            directory: Arc::new(directory),
            writers: (0..ranges).map(|_| Mutex::new(None)).collect(),
            rows: (0..ranges)
                .map(|_| std::sync::atomic::AtomicU64::new(0))
                .collect(),
        })
    }

    fn path(&self, range: usize) -> std::path::PathBuf {
        self.directory
            .path()
            .join(format!("range-{range:06}.arrows"))
    }

    pub(super) fn append(&self, range: usize, batch: &RecordBatch) -> Result<()> {
        let mut slot = self.writers[range]
            .lock()
            .map_err(|_| Error::Internal("a spill writer was poisoned".into()))?;
        if slot.is_none() {
            let path = self.path(range);
            let file = File::create(&path).map_err(|e| io(&path, e))?;
            let writer = StreamWriter::try_new(BufWriter::new(file), &batch.schema())
                .map_err(|e| Error::arrow("spilling rows", e))?;
            *slot = Some(writer);
        }
        self.rows[range].fetch_add(
            batch.num_rows() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        slot.as_mut()
            .expect("created above")
            .write(batch)
            .map_err(|e| Error::arrow("spilling rows", e))
    }

    /// Closes every spill file; `None` for a piece that got no rows.
    pub(super) fn finish(self) -> Result<Vec<Option<SpillFile>>> {
        let mut out = Vec::with_capacity(self.writers.len());
        for ((piece, slot), rows) in self.writers.into_iter().enumerate().zip(self.rows) {
            let writer = slot
                .into_inner()
                .map_err(|_| Error::Internal("a spill writer was poisoned".into()))?;
            match writer {
                None => out.push(None),
                Some(mut writer) => {
                    writer
                        .finish()
                        .map_err(|e| Error::arrow("closing a spill file", e))?;
                    out.push(Some(SpillFile {
                        _directory: self.directory.clone(),
                        path: self
                            .directory
                            .path()
                            .join(format!("range-{piece:06}.arrows")),
                        rows: rows.into_inner(),
                    }));
                }
            }
        }
        Ok(out)
    }
}

impl SpillFile {
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
