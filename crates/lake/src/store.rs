//! Object stores for the lake's URLs: `file://` (Delta's own) and `s3://` (any
//! S3-compatible store), registered with Delta's factories once per process.
//!
//! `s3://` stores are `object_store`'s S3 client; commits go through Delta's default log
//! store, which writes each log entry with a conditional put (`If-None-Match: *`), so two
//! writers can never both take a version. The options are `object_store`'s `aws_*` keys,
//! filled from `--lake-endpoint`, `--lake-region` and the credentials (see `docs/lake.md`).

use std::collections::HashMap;
use std::sync::{Arc, Once};

use deltalake_core::logstore::{
    LogStore, LogStoreFactory, ObjectStoreFactory, ObjectStoreRef, StorageConfig, default_logstore,
    logstore_factories, object_store_factories,
};
use deltalake_core::{DeltaResult, DeltaTableError, Path};
use url::Url;

/// The URL schemes of S3-compatible stores.
pub const S3_SCHEMES: [&str; 2] = ["s3", "s3a"];

/// Where an S3 lake is and how to sign in (all optional: `object_store` falls back to
/// its defaults, and the server to the `AWS_*` environment variables).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct S3Options {
    /// The endpoint URL (`http://127.0.0.1:8333` for a local SeaweedFS or MinIO); AWS
    /// when `None`.
    pub endpoint: Option<String>,
    /// The region (`us-east-1` when `None`).
    pub region: Option<String>,
    /// The access key id.
    pub access_key_id: Option<String>,
    /// The secret access key.
    pub secret_access_key: Option<String>,
}

impl S3Options {
    /// The `object_store` options these give: path-style requests (what S3-compatible
    /// servers answer), plain HTTP allowed when the endpoint is `http://`.
    pub fn storage_options(&self) -> HashMap<String, String> {
        let mut out = HashMap::new();
        let mut set = |key: &str, value: &Option<String>| {
            if let Some(value) = value.as_ref().filter(|v| !v.is_empty()) {
                out.insert(key.to_string(), value.clone());
            }
        };
        set("aws_endpoint", &self.endpoint);
        set("aws_region", &self.region);
        set("aws_access_key_id", &self.access_key_id);
        set("aws_secret_access_key", &self.secret_access_key);
        if self.endpoint.is_some() {
            out.insert("aws_virtual_hosted_style_request".into(), "false".into());
        }
        if self
            .endpoint
            .as_deref()
            .is_some_and(|e| e.starts_with("http://"))
        {
            out.insert("aws_allow_http".into(), "true".into());
        }
        out.entry("aws_region".into())
            .or_insert_with(|| "us-east-1".into());
        out
    }
}

struct S3StoreFactory;

impl ObjectStoreFactory for S3StoreFactory {
    fn parse_url_opts(
        &self,
        url: &Url,
        config: &StorageConfig,
    ) -> DeltaResult<(ObjectStoreRef, Path)> {
        let (store, path) = object_store::parse_url_opts(url, &config.raw)
            .map_err(|e| DeltaTableError::Generic(format!("{url}: {e}")))?;
        Ok((Arc::from(store), path))
    }
}

struct DefaultLogStores;

impl LogStoreFactory for DefaultLogStores {
    fn with_options(
        &self,
        prefixed_store: ObjectStoreRef,
        root_store: ObjectStoreRef,
        location: &Url,
        options: &StorageConfig,
    ) -> DeltaResult<Arc<dyn LogStore>> {
        Ok(default_logstore(
            prefixed_store,
            root_store,
            location,
            options,
        ))
    }
}

/// Whether `url` is a local directory that does not exist (nothing to list or load there;
/// object stores have no directories to be missing).
pub fn missing_local_dir(url: &Url) -> bool {
    url.to_file_path().is_ok_and(|path| !path.exists())
}

/// Registers the `s3://` stores with Delta (once; later calls do nothing).
pub fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for scheme in S3_SCHEMES {
            let Ok(url) = Url::parse(&format!("{scheme}://")) else {
                continue;
            };
            object_store_factories().insert(url.clone(), Arc::new(S3StoreFactory));
            logstore_factories().insert(url, Arc::new(DefaultLogStores));
        }
    });
}
