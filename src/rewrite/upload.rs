//! Uploading a data file while it is written, so that a writer holds a few parts of its file,
//! not the whole file.
//!
//! `FileUpload` is the [`std::io::Write`] the Parquet writer writes a file into. A file of
//! at most one part ([`UPLOAD_PART_BYTES`]) is stored when it closes, with one `put` that never
//! replaces an existing object (`PutMode::Create`). A larger file becomes a multipart upload
//! as soon as its first part is full (`ObjectStore::put_multipart`: S3's multipart upload,
//! Azure's block list, on local disk a staged file renamed into place), its parts sent in the
//! background, at most [`UPLOAD_PARTS_IN_FLIGHT`] at a time, while the next row groups are
//! encoded. The upload is completed when the file closes and aborted when a part fails or the
//! file is dropped unfinished (an error, a cancelled run), so no reader ever sees a partly
//! written file under its name: the object appears whole, or not at all. This is what
//! delta-rs' writer does through `object_store`'s `BufWriter`; it is done here by hand because
//! a small file keeps its put-if-absent, and a failed part surfaces as a storage error naming
//! the file (not a Parquet error).

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use deltalake::{ObjectStore, Path};
use object_store::{ObjectStoreExt as _, PutMode, PutOptions, WriteMultipart};

/// Bytes of one part of a multipart upload (16 MiB: S3 takes parts of 5 MiB to 5 GiB and at
/// most 10,000 of them, so files up to 156 GiB; every part but the last has this size). A
/// file of at most this size is stored with one `put`.
pub const UPLOAD_PART_BYTES: usize = 16 << 20;

/// Parts of one file uploading at once (2): the writer waits for one to finish before it
/// sends a third.
pub const UPLOAD_PARTS_IN_FLIGHT: usize = 2;

/// Bytes of its file a writer holds at most, for a file of `file_bytes`: the whole file when
/// it fits in one part, otherwise the part being filled, the bytes of a write that overran
/// it (a column chunk, up to a part) and the parts in flight: `(2 + UPLOAD_PARTS_IN_FLIGHT) x
/// part_bytes` (64 MiB at the default part size). `--memory-limit` counts this for every
/// writer.
#[must_use]
pub fn held_file_bytes(file_bytes: u64, part_bytes: usize) -> u64 {
    let parts = (part_bytes as u64).saturating_mul(2 + UPLOAD_PARTS_IN_FLIGHT as u64);
    file_bytes.min(parts)
}

/// One data file being written to the object store (see the module documentation).
pub(crate) struct FileUpload {
    store: Arc<dyn ObjectStore>,
    location: Path,
    runtime: tokio::runtime::Handle,
    part_bytes: usize,
    /// Bytes written and not yet handed to the upload.
    buffer: Vec<u8>,
    /// The multipart upload, once the file outgrew one part.
    upload: Option<WriteMultipart>,
    /// Bytes written so far.
    bytes: u64,
    /// The storage failure behind the last failed write, for the caller's error.
    failure: FailureSlot,
}

/// Where a [`FileUpload`] leaves the storage failure behind a failed write (the Parquet
/// writer sees only an `io::Error`), shared with the caller, which may no longer hold the
/// upload when it reports the error.
#[derive(Clone, Default)]
pub(crate) struct FailureSlot(Arc<Mutex<Option<object_store::Error>>>);

impl FailureSlot {
    /// The failure, if a write failed on one (taken: asked once).
    pub(crate) fn take(&self) -> Option<object_store::Error> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    fn set(&self, error: object_store::Error) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
    }
}

impl FileUpload {
    /// A file to be stored at `location`; its first `reserve` bytes are allocated up front
    /// (the file's expected size, capped at a part: growing the buffer by doubling copies it
    /// again and again, and pages never written are never resident).
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        location: Path,
        runtime: tokio::runtime::Handle,
        part_bytes: usize,
        reserve: usize,
    ) -> Self {
        Self {
            store,
            location,
            runtime,
            part_bytes: part_bytes.max(1),
            buffer: Vec::with_capacity(reserve.min(part_bytes.saturating_add(part_bytes / 4))),
            upload: None,
            bytes: 0,
            failure: FailureSlot::default(),
        }
    }

    /// Whether the file is uploading in parts (it outgrew one part).
    pub(crate) fn is_multipart(&self) -> bool {
        self.upload.is_some()
    }

    /// Where the storage failure behind a failed write is left.
    pub(crate) fn failure(&self) -> FailureSlot {
        self.failure.clone()
    }

    /// Hands the buffered bytes to the multipart upload, started here the first time, after
    /// waiting until fewer than [`UPLOAD_PARTS_IN_FLIGHT`] parts are uploading. Full parts are
    /// sent at once; the rest stays with the upload until the next part fills.
    fn send_parts(&mut self) -> object_store::Result<()> {
        if self.upload.is_none() {
            let upload = self
                .runtime
                .block_on(self.store.put_multipart(&self.location))?;
            self.upload = Some(WriteMultipart::new_with_chunk_size(upload, self.part_bytes));
        }
        let upload = self.upload.as_mut().expect("started above");
        self.runtime
            .block_on(upload.wait_for_capacity(UPLOAD_PARTS_IN_FLIGHT))?;
        let bytes = Bytes::from(std::mem::replace(
            &mut self.buffer,
            Vec::with_capacity(self.part_bytes),
        ));
        // The parts are spawned on the runtime (a `JoinSet`).
        let _runtime = self.runtime.enter();
        upload.put(bytes);
        Ok(())
    }

    /// Stores the file (see the module documentation) and returns its size in bytes.
    ///
    /// # Errors
    /// The storage failure; a multipart upload is aborted then. A single `put` that finds an
    /// object of another size at the name is refused as existing; one of the same size is
    /// taken as this put's own earlier attempt, whose answer was lost (names are this run's
    /// and random).
    pub(crate) fn finish(mut self) -> object_store::Result<u64> {
        let size = self.bytes;
        let buffer = std::mem::take(&mut self.buffer);
        let store = self.store.clone();
        let location = self.location.clone();
        let Some(mut upload) = self.upload.take() else {
            return self.runtime.block_on(async move {
                match store
                    .put_opts(
                        &location,
                        Bytes::from(buffer).into(),
                        PutOptions::from(PutMode::Create),
                    )
                    .await
                {
                    Ok(_) => Ok(size),
                    Err(object_store::Error::AlreadyExists { .. }) => {
                        match store.head(&location).await {
                            Ok(meta) if meta.size == size => Ok(size),
                            Ok(_) => Err(object_store::Error::AlreadyExists {
                                path: location.to_string(),
                                source: "an object of another size has this run's file name".into(),
                            }),
                            Err(e) => Err(e),
                        }
                    }
                    Err(e) => Err(e),
                }
            });
        };
        if !buffer.is_empty() {
            let _runtime = self.runtime.enter();
            upload.put(Bytes::from(buffer));
        }
        self.runtime.block_on(async move {
            if let Err(e) = upload.wait_for_capacity(0).await {
                // Best effort: the error that matters is the part's.
                let _ = upload.abort().await;
                return Err(e);
            }
            // Aborts the upload itself when completing fails.
            upload.finish().await.map(|_| size)
        })
    }
}

impl Write for FileUpload {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(buf);
        self.bytes += buf.len() as u64;
        if self.buffer.len() >= self.part_bytes
            && let Err(e) = self.send_parts()
        {
            let message = e.to_string();
            self.failure.set(e);
            return Err(std::io::Error::other(message));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for FileUpload {
    /// An upload never finished (an error, a cancelled run) is aborted: its parts are
    /// deleted and no object appears.
    fn drop(&mut self) {
        let Some(upload) = self.upload.take() else {
            return;
        };
        let abort = async move {
            if let Err(e) = upload.abort().await {
                log::warn!("could not abort an unfinished upload: {e}");
            }
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            // Inside the runtime (never the writer's case): abort in the background.
            self.runtime.spawn(abort);
        } else {
            self.runtime.block_on(abort);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::local::LocalFileSystem;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| u8::try_from(i * 31 % 251).unwrap())
            .collect()
    }

    #[test]
    fn a_file_larger_than_a_part_is_uploaded_in_parts_and_reads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> =
            Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let rt = runtime();
        let data = pattern(10_000);
        let mut file = FileUpload::new(
            store.clone(),
            Path::from("a/part.parquet"),
            rt.handle().clone(),
            1024,
            0,
        );
        // Writes of uneven sizes, some larger than a part.
        for chunk in data.chunks(700).chain(std::iter::once(&[][..])) {
            file.write_all(chunk).unwrap();
        }
        assert!(file.is_multipart());
        // Nothing is visible under the name before the file closes.
        assert!(!dir.path().join("a/part.parquet").exists());
        assert_eq!(file.finish().unwrap(), 10_000);
        assert_eq!(
            std::fs::read(dir.path().join("a/part.parquet")).unwrap(),
            data
        );
        // No staged part is left beside it.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("a"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["part.parquet"]);
    }

    #[test]
    fn a_small_file_is_one_put_that_never_replaces_another_object() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> =
            Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let rt = runtime();
        let mut file = FileUpload::new(
            store.clone(),
            Path::from("f.parquet"),
            rt.handle().clone(),
            1 << 20,
            0,
        );
        file.write_all(&pattern(5000)).unwrap();
        assert!(!file.is_multipart());
        assert_eq!(file.finish().unwrap(), 5000);
        // Another file of another size at the same name is refused, and the first kept.
        let mut other = FileUpload::new(
            store,
            Path::from("f.parquet"),
            rt.handle().clone(),
            1 << 20,
            0,
        );
        other.write_all(&pattern(10)).unwrap();
        assert!(matches!(
            other.finish(),
            Err(object_store::Error::AlreadyExists { .. })
        ));
        assert_eq!(
            std::fs::read(dir.path().join("f.parquet")).unwrap(),
            pattern(5000)
        );
    }

    #[test]
    fn an_unfinished_upload_is_aborted_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> =
            Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let rt = runtime();
        let mut file = FileUpload::new(
            store,
            Path::from("d/part.parquet"),
            rt.handle().clone(),
            1024,
            0,
        );
        file.write_all(&pattern(5000)).unwrap();
        assert!(file.is_multipart());
        drop(file);
        let left: Vec<_> = std::fs::read_dir(dir.path().join("d"))
            .map(|entries| entries.map(|e| e.unwrap().file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "left behind: {left:?}");
    }

    #[test]
    fn a_writer_holds_a_few_parts_of_a_large_file() {
        assert_eq!(held_file_bytes(1000, UPLOAD_PART_BYTES), 1000);
        assert_eq!(held_file_bytes(1 << 30, UPLOAD_PART_BYTES), 64 << 20);
    }
}
