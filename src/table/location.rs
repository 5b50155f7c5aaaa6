//! Where a table lives: its URI and the storage options that reach its object store.
//!
//! The URI schemes are the `deltalake` crate's own store integrations (its `s3`, `azure` and
//! `gcs` features register them at start-up): `s3://` and `s3a://` (Amazon S3 and S3-compatible
//! stores), `az://`, `azure://`, `adl://`, `abfs://` and `abfss://` (Azure Blob Storage and
//! ADLS Gen2, also `abfss://container@account.dfs.core.windows.net/path`), `gs://` (Google
//! Cloud Storage), `file://` and plain local paths.
//!
//! Storage options are the keys of delta-rs' `storage_options` (the `object_store` crate's
//! configuration keys, for example `AWS_ENDPOINT_URL`, `AZURE_STORAGE_ACCOUNT_NAME`,
//! `GOOGLE_SERVICE_ACCOUNT`), so a user copies them from a Python job. Keys that are not given
//! are read from the environment by the store integrations, under the same names. Values
//! never appear in `Debug` output, messages or reports: they may be secrets.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use url::Url;

use crate::error::{Error, Result};

/// URI schemes this build reads and writes, in the order messages list them. Plain paths
/// are local files.
pub const SUPPORTED_SCHEMES: &[&str] = &[
    "file", "s3", "s3a", "az", "azure", "adl", "abfs", "abfss", "gs",
];

/// Settings (upper case) that hold a store's endpoint URL: `object_store`'s keys and the
/// environment variables delta-rs reads. Flags such as `AWS_USE_FIPS_ENDPOINT=true` are not
/// among them.
pub const ENDPOINT_KEYS: &[&str] = &[
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT",
    "ENDPOINT",
    "ENDPOINT_URL",
    "AZURE_STORAGE_ENDPOINT",
    "AZURE_ENDPOINT",
];

/// The object store family behind a scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// The local file system (`file://` or a plain path).
    Local,
    /// Amazon S3 or an S3-compatible store (`s3://`, `s3a://`).
    S3,
    /// Azure Blob Storage / ADLS Gen2 (`az://`, `azure://`, `adl://`, `abfs[s]://`).
    Azure,
    /// Google Cloud Storage (`gs://`).
    Gcs,
}

impl StoreKind {
    /// The store family of a URI scheme (lower case), `None` when unsupported.
    #[must_use]
    pub fn of_scheme(scheme: &str) -> Option<Self> {
        match scheme {
            "file" => Some(Self::Local),
            "s3" | "s3a" => Some(Self::S3),
            "az" | "azure" | "adl" | "abfs" | "abfss" => Some(Self::Azure),
            "gs" => Some(Self::Gcs),
            _ => None,
        }
    }
}

/// Storage options (`KEY=VALUE`, delta-rs' `storage_options`), in key order. `Debug` shows
/// the keys only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StorageOptions(BTreeMap<String, String>);

impl StorageOptions {
    /// No options: every setting comes from the environment.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value` (a later value for the same key replaces the earlier).
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.0.insert(key.into(), value.into());
        self
    }

    /// Parses `KEY=VALUE` options as the CLI's `--storage-option` takes them.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming `--storage-option` when an item has no `=` or an
    /// empty key (the message shows the key only, never a value).
    pub fn parse<'a>(items: impl IntoIterator<Item = &'a str>) -> Result<Self> {
        let mut options = Self::new();
        for item in items {
            let Some((key, value)) = item.split_once('=') else {
                return Err(Error::invalid_option(
                    crate::Setting::StorageOptions,
                    "expects KEY=VALUE (for example AWS_REGION=us-east-1), got an item without '='",
                ));
            };
            let key = key.trim();
            if key.is_empty() {
                return Err(Error::invalid_option(
                    crate::Setting::StorageOptions,
                    "expects KEY=VALUE, got an empty KEY",
                ));
            }
            options.0.insert(key.to_string(), value.to_string());
        }
        Ok(options)
    }

    /// The value of `key`, matched without regard to case (delta-rs accepts `aws_region` and
    /// `AWS_REGION` alike).
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    /// Whether no option is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The keys, in order (safe to show).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The options as deltalake's builders take them.
    #[must_use]
    pub fn to_map(&self) -> HashMap<String, String> {
        self.0.clone().into_iter().collect()
    }

    /// The value of `key` from the options, else from the environment.
    #[must_use]
    pub fn get_or_env(&self, key: &str) -> Option<String> {
        self.get(key)
            .map(ToString::to_string)
            .or_else(|| std::env::var(key.to_ascii_uppercase()).ok())
    }
}

impl fmt::Debug for StorageOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, "<redacted>")))
            .finish()
    }
}

/// A table's URI (as the user wrote it) with the storage options to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableLocation {
    /// The URI or local path, as given.
    pub uri: String,
    /// Options for the table's object store.
    pub storage_options: StorageOptions,
}

impl TableLocation {
    /// A location with no storage options (settings from the environment).
    #[must_use]
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            storage_options: StorageOptions::new(),
        }
    }

    /// The same location with these storage options.
    #[must_use]
    pub fn with_storage_options(mut self, options: StorageOptions) -> Self {
        self.storage_options = options;
        self
    }

    /// Another table (a scratch table, another version's reload) reached with the same
    /// storage options.
    #[must_use]
    pub fn sibling(&self, uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            storage_options: self.storage_options.clone(),
        }
    }

    /// Checks the settings the store clients would choke on (they panic on some): a value
    /// with a control character (a newline in a region or key id), or an endpoint
    /// ([`ENDPOINT_KEYS`]) that is not an `http://` or `https://` URL with a host. Options
    /// given and the environment variables of the table's store (`AWS_*` for S3, `AZURE_*`
    /// for Azure) are checked; Google settings are not, since a service account key is
    /// multi-line JSON. Values are never shown.
    ///
    /// # Errors
    /// [`Error::NoTable`] for an unsupported scheme; [`Error::InvalidOption`] naming the key.
    pub fn check_settings(&self) -> Result<()> {
        let prefix = match self.store_kind()? {
            StoreKind::S3 => "AWS_",
            StoreKind::Azure => "AZURE_",
            StoreKind::Gcs | StoreKind::Local => return Ok(()),
        };
        let given = self
            .storage_options
            .0
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()));
        let environment = std::env::vars().filter(|(k, _)| k.starts_with(prefix));
        for (key, value) in given.chain(environment) {
            let upper = key.to_ascii_uppercase();
            if upper.starts_with("GOOGLE_") {
                continue;
            }
            if value.chars().any(char::is_control) {
                return Err(Error::invalid_option(
                    crate::Setting::StorageOption(key.to_string()),
                    "holds a control character (a newline?); storage settings are one line",
                ));
            }
            if ENDPOINT_KEYS.contains(&upper.as_str()) {
                let fine = Url::parse(value.trim()).is_ok_and(|url| {
                    matches!(url.scheme(), "http" | "https")
                        && url.host_str().is_some_and(|h| !h.is_empty())
                });
                if !fine {
                    return Err(Error::invalid_option(
                        crate::Setting::StorageOption(key.to_string()),
                        "is not an http:// or https:// URL with a host (for example http://127.0.0.1:9000)",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The lower-case URI scheme, `None` for a plain local path.
    #[must_use]
    pub fn scheme(&self) -> Option<String> {
        scheme_of(&self.uri)
    }

    /// The store family, when the scheme is supported.
    ///
    /// # Errors
    /// [`Error::NoTable`] naming the scheme and the supported ones.
    pub fn store_kind(&self) -> Result<StoreKind> {
        match self.scheme() {
            None => Ok(StoreKind::Local),
            Some(scheme) => StoreKind::of_scheme(&scheme).ok_or_else(|| Error::NoTable {
                table: redact_uri(&self.uri),
                message: format!(
                    "has the URI scheme '{scheme}', which this build does not support (supported: {}, or a plain local path)",
                    SUPPORTED_SCHEMES.join(", ")
                ),
            }),
        }
    }
}

impl From<&str> for TableLocation {
    fn from(uri: &str) -> Self {
        Self::new(uri)
    }
}

impl From<&String> for TableLocation {
    fn from(uri: &String) -> Self {
        Self::new(uri.as_str())
    }
}

impl From<String> for TableLocation {
    fn from(uri: String) -> Self {
        Self::new(uri)
    }
}

impl From<&TableLocation> for TableLocation {
    fn from(location: &TableLocation) -> Self {
        location.clone()
    }
}

impl fmt::Display for TableLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_uri(&self.uri))
    }
}

/// The lower-case scheme of `uri`, `None` for a plain path (no `://`, or a `/` or `\` before
/// it).
fn scheme_of(uri: &str) -> Option<String> {
    match uri.split_once("://") {
        Some((scheme, _)) if !scheme.is_empty() && !scheme.contains(['/', '\\']) => {
            Some(scheme.to_ascii_lowercase())
        }
        _ => None,
    }
}

/// `uri` fit for messages: a password in the authority and the query string (an Azure SAS
/// token, for example) replaced by `redacted`.
#[must_use]
pub fn redact_uri(uri: &str) -> String {
    let Ok(mut url) = Url::parse(uri) else {
        return uri.to_string();
    };
    if url.scheme() == "file" || (url.password().is_none() && url.query().is_none()) {
        return uri.to_string();
    }
    if url.password().is_some() {
        let _ = url.set_password(Some("redacted"));
    }
    if url.query().is_some() {
        url.set_query(Some("redacted"));
    }
    url.to_string()
}

/// Whether the storage option or environment variable `key` holds a secret (a key, token,
/// password, SAS or client secret) by its name.
#[must_use]
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_uppercase();
    [
        "SECRET",
        "TOKEN",
        "PASSWORD",
        "SAS",
        "ACCOUNT_KEY",
        "ACCESS_KEY",
        "PRIVATE_KEY",
    ]
    .iter()
    .any(|word| key.contains(word))
        && !key.ends_with("_ID")
}

/// `text` with every secret replaced by `redacted`: the values of secret storage options
/// ([`is_secret_key`]) given here or in the environment, and the signature of a SAS or
/// presigned URL (`sig=...`, `X-Amz-Signature=...`). For messages built by dependencies,
/// which may quote a request URL.
#[must_use]
pub fn redact_secrets(text: &str, options: &StorageOptions) -> String {
    let mut secrets: Vec<String> = options
        .0
        .iter()
        .filter(|(k, _)| is_secret_key(k))
        .map(|(_, v)| v.clone())
        .chain(
            std::env::vars()
                .filter(|(k, _)| {
                    (k.starts_with("AWS_") || k.starts_with("AZURE_") || k.starts_with("GOOGLE_"))
                        && is_secret_key(k)
                })
                .map(|(_, v)| v),
        )
        .filter(|v| v.len() >= 4)
        .collect();
    // Longer first, so a secret that holds another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = text.to_string();
    for secret in &secrets {
        out = out.replace(secret.as_str(), "redacted");
    }
    for marker in ["sig=", "X-Amz-Signature=", "x-amz-signature="] {
        let mut from = 0;
        while let Some(at) = out[from..].find(marker) {
            let start = from + at + marker.len();
            let end = out[start..]
                .find(|c: char| c == '&' || c.is_whitespace() || c == '"' || c == '\'')
                .map_or(out.len(), |e| start + e);
            out.replace_range(start..end, "redacted");
            from = start + "redacted".len();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_map_to_their_store() {
        let kind = |uri: &str| TableLocation::new(uri).store_kind().ok();
        assert_eq!(kind("/tmp/t"), Some(StoreKind::Local));
        assert_eq!(kind("relative/t"), Some(StoreKind::Local));
        assert_eq!(kind("file:///tmp/t"), Some(StoreKind::Local));
        assert_eq!(kind("S3://bucket/t"), Some(StoreKind::S3));
        assert_eq!(kind("s3a://bucket/t"), Some(StoreKind::S3));
        assert_eq!(
            kind("abfss://c@acct.dfs.core.windows.net/t"),
            Some(StoreKind::Azure)
        );
        assert_eq!(kind("az://c/t"), Some(StoreKind::Azure));
        assert_eq!(kind("gs://bucket/t"), Some(StoreKind::Gcs));
        let err = TableLocation::new("hdfs://nn/t").store_kind().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("'hdfs'"), "{text}");
        assert!(text.contains("s3, s3a, az"), "{text}");
    }

    #[test]
    fn option_values_never_show() {
        let options =
            StorageOptions::parse(["AWS_SECRET_ACCESS_KEY=hunter2", "AWS_REGION=eu-west-1"])
                .unwrap();
        assert_eq!(options.get("aws_region"), Some("eu-west-1"));
        let shown = format!("{options:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("AWS_SECRET_ACCESS_KEY"), "{shown}");
        let err = StorageOptions::parse(["AWS_SECRET_ACCESS_KEY"]).unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidOption {
                option: crate::Setting::StorageOptions,
                ..
            }
        ));
        assert!(StorageOptions::parse(["=x"]).is_err());
        // A value may itself hold '=' (base64 keys, SAS tokens).
        let options = StorageOptions::parse(["AZURE_STORAGE_SAS_KEY=a=b&c=d"]).unwrap();
        assert_eq!(options.get("AZURE_STORAGE_SAS_KEY"), Some("a=b&c=d"));
    }

    #[test]
    fn settings_the_clients_choke_on_are_refused() {
        let at = |key: &str, value: &str| {
            TableLocation::new("s3://b/t")
                .with_storage_options(StorageOptions::new().with(key, value))
                .check_settings()
        };
        assert!(at("AWS_ENDPOINT_URL", "http://127.0.0.1:9000").is_ok());
        for bad in ["127.0.0.1:9000", "http://", "http://[::1", "ftp://host"] {
            let err = at("AWS_ENDPOINT_URL", bad).unwrap_err().to_string();
            // The message names the key and never shows the value.
            assert_eq!(
                err,
                "invalid value for AWS_ENDPOINT_URL: is not an http:// or https:// URL with a host (for example http://127.0.0.1:9000)",
                "{bad}"
            );
        }
        let err = at("AWS_REGION", "us-east-1\nx").unwrap_err().to_string();
        assert!(
            err.contains("AWS_REGION") && err.contains("control"),
            "{err}"
        );
    }

    #[test]
    fn messages_lose_their_secrets() {
        let options = StorageOptions::new()
            .with("AWS_SECRET_ACCESS_KEY", "hunter2-secret")
            .with("AWS_ACCESS_KEY_ID", "AKIDVISIBLE")
            .with("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
        let text = "GET http://127.0.0.1:9000/b?sv=2020&sig=abc%2Fdef&se=1 failed with key hunter2-secret (AKIDVISIBLE)";
        assert_eq!(
            redact_secrets(text, &options),
            "GET http://127.0.0.1:9000/b?sv=2020&sig=redacted&se=1 failed with key redacted (AKIDVISIBLE)"
        );
        assert!(is_secret_key("azure_storage_sas_key"));
        assert!(is_secret_key("AZURE_CLIENT_SECRET"));
        assert!(!is_secret_key("AWS_ACCESS_KEY_ID"));
        assert!(!is_secret_key("AWS_REGION"));
    }

    #[test]
    fn uris_in_messages_hide_secrets() {
        assert_eq!(
            redact_uri("az://c/t?sv=2020&sig=SECRET"),
            "az://c/t?redacted"
        );
        assert_eq!(
            redact_uri("s3://user:SECRET@bucket/t"),
            "s3://user:redacted@bucket/t"
        );
        assert_eq!(redact_uri("s3://bucket/t"), "s3://bucket/t");
        assert_eq!(redact_uri("/tmp/a b"), "/tmp/a b");
    }
}
