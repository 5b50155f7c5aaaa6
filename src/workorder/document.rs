//! Work orders and results as documents: local files or objects in a store.

use std::sync::Arc;

use object_store::ObjectStoreExt as _;

use crate::error::{Error, Result};
use crate::table::{StorageOptions, TableLocation};

/// Reads the document (a work order or results) at `location`: a local path, or a URI of a
/// supported object store (the table's schemes, reached with `storage_options`), so that
/// workers on other machines can fetch it. `what` names it in errors (`work order`).
///
/// # Errors
/// [`Error::WorkOrder`] naming the document when it cannot be read; [`Error::NoTable`] for an
/// unsupported scheme or a bad storage setting.
pub async fn read_document(
    location: &str,
    storage_options: &StorageOptions,
    what: &str,
) -> Result<String> {
    let shown = crate::table::location::redact_uri(location);
    let unreadable = |message: String| Error::WorkOrder {
        document: format!("{what} '{shown}'"),
        message: format!("cannot be read: {message}"),
    };
    match document_store(location, storage_options)? {
        None => std::fs::read_to_string(location).map_err(|e| unreadable(e.to_string())),
        Some((store, path)) => {
            let bytes = async { store.get(&path).await?.bytes().await }
                .await
                .map_err(|e| unreadable(e.to_string()))?;
            String::from_utf8(bytes.to_vec()).map_err(|_| unreadable("it is not UTF-8".into()))
        }
    }
}

/// Writes `text` as the document at `location` (see [`read_document`]): a local file is
/// written beside and renamed over, an object is put whole, so a reader never sees half a
/// document.
///
/// # Errors
/// [`Error::InvalidOption`] naming `--out` when the document cannot be written (a missing
/// directory, inside a table's `_delta_log`, a refused put).
pub async fn write_document(
    location: &str,
    storage_options: &StorageOptions,
    text: &str,
) -> Result<()> {
    let shown = crate::table::location::redact_uri(location);
    let refused = |message: String| {
        Error::invalid_option(
            crate::Setting::Output,
            format!("'{shown}' cannot be written: {message}"),
        )
    };
    match document_store(location, storage_options)? {
        None => {
            let path = std::path::Path::new(location);
            check_document_path(path).map_err(&refused)?;
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => std::path::Path::new("."),
            };
            let write = || -> std::io::Result<()> {
                use std::io::Write as _;
                let mut file = tempfile::NamedTempFile::new_in(parent)?;
                file.write_all(text.as_bytes())?;
                file.write_all(b"\n")?;
                file.as_file().sync_all()?;
                file.persist(path).map_err(|e| e.error)?;
                Ok(())
            };
            write().map_err(|e| refused(e.to_string()))
        }
        Some((store, path)) => {
            if path.as_ref().split('/').any(|part| part == "_delta_log") {
                return Err(refused("it is inside a table's _delta_log".into()));
            }
            store
                .put(&path, bytes::Bytes::from(format!("{text}\n")).into())
                .await
                .map(|_| ())
                .map_err(|e| refused(e.to_string()))
        }
    }
}

/// Checks that a local document path can be written: its directory exists, it is not a
/// directory, and it is not inside a table's `_delta_log`.
///
/// # Errors
/// What is wrong, for people.
pub fn check_document_path(path: &std::path::Path) -> std::result::Result<(), String> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if parent
        .canonicalize()
        .is_ok_and(|p| p.components().any(|c| c.as_os_str() == "_delta_log"))
    {
        return Err("it is inside a table's _delta_log".into());
    }
    if !parent.is_dir() {
        return Err("its directory does not exist".into());
    }
    if path.is_dir() {
        return Err("it is a directory".into());
    }
    Ok(())
}

/// The object store and path of a document URI; `None` for a local path.
fn document_store(
    location: &str,
    storage_options: &StorageOptions,
) -> Result<Option<(Arc<dyn deltalake::ObjectStore>, deltalake::Path)>> {
    let source = TableLocation::new(location).with_storage_options(storage_options.clone());
    if source.store_kind()? == crate::table::StoreKind::Local {
        let local = location.strip_prefix("file://").unwrap_or(location);
        if local != location {
            // A file:// URI: read it as the local path it names.
            return Err(Error::invalid_option(
                crate::Setting::Output,
                format!("give the local path '{local}' instead of a file:// URI"),
            ));
        }
        return Ok(None);
    }
    source.check_settings()?;
    let shown = crate::table::location::redact_uri(location);
    let url = url::Url::parse(location).map_err(|e| Error::NoTable {
        table: shown.clone(),
        message: format!("is not a URI: {e}"),
    })?;
    let name = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::NoTable {
            table: shown.clone(),
            message: "names no file (it ends with '/')".into(),
        })?
        .to_string();
    let mut parent = url.clone();
    parent
        .path_segments_mut()
        .map_err(|()| Error::NoTable {
            table: shown.clone(),
            message: "has no path".into(),
        })?
        .pop();
    let mut builder =
        deltalake::DeltaTableBuilder::from_url(parent).map_err(|e| Error::NoTable {
            table: shown.clone(),
            message: format!("cannot be reached: {e}"),
        })?;
    if !storage_options.is_empty() {
        builder = builder.with_storage_options(storage_options.to_map());
    }
    let table = builder.build().map_err(|e| Error::NoTable {
        table: shown.clone(),
        message: format!("cannot be reached: {e}"),
    })?;
    let name = percent_encoding::percent_decode_str(&name)
        .decode_utf8_lossy()
        .into_owned();
    Ok(Some((
        table.log_store().object_store(None),
        deltalake::Path::from(name.as_str()),
    )))
}
