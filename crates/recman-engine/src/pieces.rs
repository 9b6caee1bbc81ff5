//! Where backup pieces and other repository objects can be read from: the repository itself,
//! and copies on other devices (second tier, or pieces written straight to a device). Restore
//! fails over from one to the next, saying so.

use std::sync::Arc;

use recman_catalog::Repository;
use recman_media::{Media, MediaReader};

use crate::devices;
use crate::error::EngineError;

/// One place an object can be read from.
#[derive(Clone, Debug)]
pub(crate) struct Source {
    /// The device type ("disk", "s3", "sbt") or "repository".
    pub device: String,
    pub media: Arc<dyn Media>,
    pub name: String,
}

impl Source {
    pub fn describe(&self) -> String {
        format!("{} ({})", self.device, self.media.describe())
    }
}

/// The places holding object `rel`, in the order to try them: a copy written there directly,
/// else the repository, then the other copies (COPIES n, second-tier copies). Copies on devices that cannot be opened now
/// are left out.
pub(crate) fn sources(repo: &Repository, rel: &str) -> Result<Vec<Source>, EngineError> {
    let copies = repo.catalog().copies_of(rel)?;
    let mut out = Vec::new();
    let own = Source {
        device: "repository".into(),
        media: Arc::clone(repo.media()),
        name: rel.to_string(),
    };
    // An object written to a device directly never was in the repository: not a place to try.
    let mut own_added = copies.iter().any(|c| c.primary);
    for c in copies {
        if !c.primary && !own_added {
            out.push(own.clone());
            own_added = true;
        }
        if let Ok(media) = devices::media_for(repo, &c.device) {
            out.push(Source {
                device: c.device,
                media,
                name: c.name,
            });
        }
    }
    if !own_added {
        out.push(own);
    }
    Ok(out)
}

/// Opens object `rel` from the first place that has it.
pub(crate) fn open(repo: &Repository, rel: &str) -> Result<Box<dyn MediaReader>, EngineError> {
    open_from(&sources(repo, rel)?, rel)
}

/// Opens object `rel` from the first of `sources` that has it (for callers that looked the
/// sources up already, on a thread without the catalog).
pub(crate) fn open_from(
    sources: &[Source],
    rel: &str,
) -> Result<Box<dyn MediaReader>, EngineError> {
    let mut first_err = None;
    for s in sources {
        match s.media.open(&s.name) {
            Ok(r) => return Ok(r),
            Err(e) if e.is_not_found() => {
                first_err.get_or_insert(e);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(first_err.map(EngineError::from).unwrap_or_else(|| {
        EngineError::NotFound(format!(
            "object {rel} has no source; hint: run `recman crosscheck`"
        ))
    }))
}

/// Removes the copies on other devices of every object under `dir` (a backup being deleted)
/// and forgets them.
pub(crate) fn remove_copies_of_backup(repo: &Repository, dir: &str) -> Result<(), EngineError> {
    for c in repo.catalog().copies_under(dir)? {
        let media = devices::media_for(repo, &c.device)?;
        media.remove(&c.name)?;
        repo.catalog().remove_copy(&c.object, &c.device)?;
    }
    Ok(())
}
