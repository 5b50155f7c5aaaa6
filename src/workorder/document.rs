//! Work orders and results as documents: local files or objects in a store.
//!
//! A document is written only where it cannot damage a table: its name must end in `.json`
//! (so it never replaces a data file, a deletion vector or a checkpoint), it may not lie in a
//! `_delta_log` directory (so it never replaces a commit), an object URI may carry no `.` or
//! `..` segment, query or fragment (the store would ignore them and the name would not be the
//! one given), and a local path must be a regular file, or a link to one, when it exists (so a
//! device or a FIFO is never replaced).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use object_store::ObjectStoreExt as _;

use crate::error::{Error, Result};
use crate::table::{StorageOptions, TableLocation};

/// Where a document lives.
enum Place {
    Local(PathBuf),
    Object(Arc<dyn deltalake::ObjectStore>, deltalake::Path),
}

/// Reads the document (a work order or results) at `location`: a local path, a `file://`
/// URI, or a URI of a supported object store (the table's schemes, reached with
/// `storage_options`), so that workers on other machines can fetch it. `what` names it in
/// errors (`work order`).
///
/// # Errors
/// [`Error::WorkOrder`] naming the document when it cannot be read, is not a regular file
/// (a local device or FIFO) or its URI is not usable;
/// [`Error::NoTable`] for an unsupported scheme or a bad storage setting.
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
    match place(location, storage_options, false).map_err(&unreadable)? {
        Place::Local(path) => {
            // Never a device or a FIFO: /dev/zero would fill memory, a FIFO block forever.
            match std::fs::metadata(&path) {
                Ok(meta) if !meta.is_file() => {
                    return Err(unreadable("it is not a regular file".into()));
                }
                _ => {}
            }
            std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))
        }
        Place::Object(store, path) => {
            let bytes = async { store.get(&path).await?.bytes().await }
                .await
                .map_err(|e| unreadable(e.to_string()))?;
            String::from_utf8(bytes.to_vec()).map_err(|_| unreadable("it is not UTF-8".into()))
        }
    }
}

/// Writes `text` as the document at `location` (see [`read_document`] and the module docs):
/// a local file is written beside its target (through a link) and renamed over it, readable by
/// all (0644), an object is put whole, so a reader never sees half a document.
///
/// # Errors
/// [`Error::InvalidOption`] naming [`crate::Setting::Output`] when the document may not or
/// cannot be written there (see the module docs; a missing directory; a refused put).
pub async fn write_document(
    location: &str,
    storage_options: &StorageOptions,
    text: &str,
) -> Result<()> {
    let refused = refusal(location);
    match place(location, storage_options, true).map_err(&refused)? {
        Place::Local(path) => {
            check_document_path(&path).map_err(&refused)?;
            // Through a link, to its target: the link stays.
            let target = if path.exists() {
                path.canonicalize().map_err(|e| refused(e.to_string()))?
            } else {
                path
            };
            let parent = match target.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            let write = || -> std::io::Result<()> {
                use std::io::Write as _;
                let mut file = tempfile::NamedTempFile::new_in(&parent)?;
                file.write_all(text.as_bytes())?;
                file.write_all(b"\n")?;
                file.as_file().sync_all()?;
                // Readable by the workers, which may run as other users (0644).
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt as _;
                    file.as_file()
                        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
                }
                file.persist(&target).map_err(|e| e.error)?;
                Ok(())
            };
            write().map_err(|e| refused(e.to_string()))
        }
        Place::Object(store, path) => store
            .put(&path, bytes::Bytes::from(format!("{text}\n")).into())
            .await
            .map(|_| ())
            .map_err(|e| refused(e.to_string())),
    }
}

/// Checks, before anything is written, that a document may be written at `location` (see
/// [`write_document`]), so that a set of documents is written whole or not at all.
///
/// # Errors
/// As [`write_document`].
pub fn check_writable(location: &str, storage_options: &StorageOptions) -> Result<()> {
    let refused = refusal(location);
    match place(location, storage_options, true).map_err(&refused)? {
        Place::Local(path) => check_document_path(&path).map_err(&refused),
        Place::Object(..) => Ok(()),
    }
}

/// The error refusing a document at `location` (redacted), for `message`.
fn refusal(location: &str) -> impl Fn(String) -> Error {
    let shown = crate::table::location::redact_uri(location);
    move |message| {
        Error::invalid_option(
            crate::Setting::Output,
            format!("'{shown}' cannot be written: {message}"),
        )
    }
}

/// Checks that a local document path can be written: its name ends in `.json`, its directory
/// exists and is not inside a table's `_delta_log`, and it is a regular file when it exists,
/// or a link whose target passes the same checks.
///
/// # Errors
/// What is wrong, for people.
pub fn check_document_path(path: &Path) -> std::result::Result<(), String> {
    check_path(path, 0)
}

fn check_path(path: &Path, links: usize) -> std::result::Result<(), String> {
    if links > 8 {
        return Err("it is a chain of more than 8 links".into());
    }
    if !has_json_name(&path.to_string_lossy()) {
        return Err("a document's name must end in .json".into());
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
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
    if let Ok(meta) = std::fs::metadata(path)
        && !meta.is_file()
    {
        return Err("it exists and is not a regular file".into());
    }
    // A link is written through: its target must pass the same rules (a link named
    // `plan.json` must not lead into a `_delta_log` or onto a data file).
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        let target = match path.canonicalize() {
            Ok(target) => target,
            Err(_) => {
                let link = std::fs::read_link(path).map_err(|e| e.to_string())?;
                parent.join(link)
            }
        };
        if target != path {
            return check_path(&target, links + 1).map_err(|message| {
                if links == 0 {
                    format!("it is a link to '{}', where {message}", target.display())
                } else {
                    message
                }
            });
        }
    }
    Ok(())
}

fn has_json_name(name: &str) -> bool {
    name.rsplit('/')
        .next()
        .is_some_and(|n| n.len() > ".json".len() && n.to_ascii_lowercase().ends_with(".json"))
}

/// Where the document at `location` lives; `writing` applies the rules of the module docs.
fn place(
    location: &str,
    storage_options: &StorageOptions,
    writing: bool,
) -> std::result::Result<Place, String> {
    if let Some(rest) = location.strip_prefix("file://") {
        let url = url::Url::parse(location).map_err(|e| format!("is not a URI: {e}"))?;
        let path = url
            .to_file_path()
            .map_err(|()| format!("'{rest}' is not a local path"))?;
        return Ok(Place::Local(path));
    }
    let source = TableLocation::new(location).with_storage_options(storage_options.clone());
    let kind = source.store_kind().map_err(|e| e.to_string())?;
    if kind == crate::table::StoreKind::Local {
        return Ok(Place::Local(PathBuf::from(location)));
    }
    source.check_settings().map_err(|e| e.to_string())?;
    let url = url::Url::parse(location).map_err(|e| format!("is not a URI: {e}"))?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err("an object URI may not carry a query or a fragment".into());
    }
    let segments: Vec<String> = url
        .path_segments()
        .map(|s| {
            s.map(|part| {
                percent_encoding::percent_decode_str(part)
                    .decode_utf8_lossy()
                    .into_owned()
            })
            .collect()
        })
        .unwrap_or_default();
    if segments
        .iter()
        .any(|s| s == "." || s == ".." || s.contains('/'))
    {
        return Err("an object URI may not hold '.' or '..' segments".into());
    }
    let Some(name) = segments.last().filter(|n| !n.is_empty()).cloned() else {
        return Err("it names no file (it ends with '/')".into());
    };
    if writing {
        if segments.iter().any(|s| s == "_delta_log") {
            return Err("it is inside a table's _delta_log".into());
        }
        if !has_json_name(&name) {
            return Err("a document's name must end in .json".into());
        }
    }
    let mut parent = url.clone();
    parent
        .path_segments_mut()
        .map_err(|()| "it has no path".to_string())?
        .pop();
    let mut builder = deltalake::DeltaTableBuilder::from_url(parent)
        .map_err(|e| format!("cannot be reached: {e}"))?;
    if !storage_options.is_empty() {
        builder = builder.with_storage_options(storage_options.to_map());
    }
    let table = builder
        .build()
        .map_err(|e| format!("cannot be reached: {e}"))?;
    Ok(Place::Object(
        table.log_store().object_store(None),
        deltalake::Path::from(name.as_str()),
    ))
}
