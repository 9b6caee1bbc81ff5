//! Durable directory operations for the repository's local files (the catalog and its cache
//! directory); object writes go through the repository's media driver.

use std::path::Path;

use crate::error::CatalogError;

pub(crate) fn sync_dir(dir: &Path) -> Result<(), CatalogError> {
    recman_media::disk::sync_dir(dir).map_err(|e| CatalogError::io("fsync directory", dir, e))
}

pub(crate) fn create_dir_all_durable(dir: &Path) -> Result<(), CatalogError> {
    recman_media::disk::create_dir_all_durable(dir)
        .map_err(|e| CatalogError::io("create directory", dir, e))
}
