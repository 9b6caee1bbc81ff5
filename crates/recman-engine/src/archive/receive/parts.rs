//! The open segment of a receiver whose repository is an object store: a bucket has no file
//! to append to, so what the stream has written of the open segment since the last flush is
//! stored as a part object `receive/<db>/<segment>/<start>-<end>` (byte offsets in hex), and
//! a restore on any host assembles the parts in order. Each upload starts again at the last
//! page of the one before, because the stream keeps appending to that page; so parts
//! overlap by at most a page and a later part's bytes win. Once the segment is stored whole,
//! its parts are removed.

use crate::error::EngineError;
use recman_catalog::{DbRecord, Repository};
use std::collections::HashMap;
use std::path::Path;

/// Where the part objects of a database's open segments live.
/// The objects' top directory: the spool's name, in the bucket.
const OBJECTS: &str = "receive";

fn prefix(db: &str) -> String {
    format!("{OBJECTS}/{db}/")
}

fn part_key(db: &str, segment: &str, start: u64, end: u64) -> String {
    format!("{}{segment}/{start:08X}-{end:08X}", prefix(db))
}

/// `<segment>/<start>-<end>` under the prefix, parsed.
fn parse_key<'a>(db: &str, key: &'a str) -> Option<(&'a str, u64, u64)> {
    let rest = key.strip_prefix(&prefix(db))?;
    let (segment, range) = rest.split_once('/')?;
    let (start, end) = range.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    (crate::archive::is_segment_name(segment) && start < end).then_some((segment, start, end))
}

/// What the bucket holds of one open segment.
#[derive(Debug, Default, Clone)]
struct Uploaded {
    /// The end of the furthest part.
    end: u64,
    /// A checksum of the last page up to `end` as uploaded: it may grow in place.
    last_page: Option<u32>,
    keys: Vec<String>,
}

/// The receiver's view of the part objects it has written, read from the bucket once at
/// start, so a restarted receiver goes on where the bucket is.
#[derive(Debug, Default)]
pub struct PartStore {
    segments: HashMap<String, Uploaded>,
}

impl PartStore {
    pub fn load(repo: &Repository, db: &DbRecord) -> Result<PartStore, EngineError> {
        let mut segments: HashMap<String, Uploaded> = HashMap::new();
        for o in repo.list_objects(&prefix(&db.name))? {
            if let Some((segment, _, end)) = parse_key(&db.name, &o.name) {
                let u = segments.entry(segment.to_string()).or_default();
                u.end = u.end.max(end);
                u.keys.push(o.name.clone());
            }
        }
        Ok(PartStore { segments })
    }

    /// Uploads what each open segment of the spool (its `X.partial` files, `open`) holds
    /// beyond what the bucket has. Returns how many bytes went up.
    pub fn upload(
        &mut self,
        repo: &Repository,
        db: &DbRecord,
        open: &[std::path::PathBuf],
    ) -> Result<u64, EngineError> {
        let mut sent = 0;
        for path in open {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let segment = name.strip_suffix(".partial").unwrap_or(&name).to_string();
            let u = self.segments.entry(segment.clone()).or_default();
            let Some((start, data, last_page)) = unsent(path, u)? else {
                continue;
            };
            let end = start + data.len() as u64;
            let key = part_key(&db.name, &segment, start, end);
            repo.write_atomic(&key, &data)?;
            sent += data.len() as u64;
            u.end = end;
            u.last_page = Some(last_page);
            u.keys.push(key);
        }
        Ok(sent)
    }

    /// Removes the parts of `segment`, which is now stored whole. A part that cannot be
    /// removed (a locked bucket) is left: a stored segment is read before any part.
    pub fn forget(&mut self, repo: &Repository, segment: &str) -> Vec<(String, EngineError)> {
        let Some(u) = self.segments.remove(segment) else {
            return Vec::new();
        };
        u.keys
            .into_iter()
            .filter_map(|k| repo.remove_object(&k).err().map(|e| (k, e.into())))
            .collect()
    }

    /// Removes the parts of every segment the catalog holds whole: those a receiver stopped
    /// before it could clean up after them.
    pub fn forget_stored(
        &mut self,
        repo: &Repository,
        db: &DbRecord,
    ) -> Result<Vec<(String, EngineError)>, EngineError> {
        let mut failed = Vec::new();
        let held: Vec<String> = self.segments.keys().cloned().collect();
        for segment in held {
            if repo.catalog().wal(db.id, &segment)?.is_some() {
                failed.extend(self.forget(repo, &segment));
            }
        }
        Ok(failed)
    }

    pub fn holds(&self, segment: &str) -> bool {
        self.segments.contains_key(segment)
    }
}

/// What of the spool file at `path` the bucket lacks, as `(offset, bytes, checksum of the
/// last page)`: from the start of
/// the last page the bucket holds to the end of the last page the stream wrote. The file is
/// preallocated with zeros and written from its start, and every written page starts with a
/// nonzero magic, so the written extent ends at the first page without one. None when there
/// is nothing new (or the file is gone: completed and renamed meanwhile).
fn unsent(path: &Path, u: &Uploaded) -> Result<Option<(u64, Vec<u8>, u32)>, EngineError> {
    use std::os::unix::fs::FileExt;
    let read_err = |e| EngineError::io("read receive spool", path, e);
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(read_err(e)),
    };
    let Some((page, written)) = written_extent(&file).map_err(read_err)? else {
        return Ok(None);
    };
    let start = u.end.saturating_sub(page);
    // Behind the bucket (a spool begun again after its host was lost): nothing new here.
    if written < u.end || written == start {
        return Ok(None);
    }
    let mut data = vec![0u8; (written - start) as usize];
    file.read_exact_at(&mut data, start).map_err(read_err)?;
    let last = crc32c::crc32c(&data[data.len() - page as usize..]);
    if written == u.end && u.last_page == Some(last) {
        return Ok(None);
    }
    Ok(Some((start, data, last)))
}

/// The page size of the spool file `file` and the end of the last page the stream wrote
/// into it, or None before it wrote the first. The file is preallocated with zeros and written
/// from its start, and every written page starts with a nonzero magic, so the written pages
/// are a prefix: a binary search finds its end in a dozen reads.
pub(super) fn written_extent(file: &std::fs::File) -> std::io::Result<Option<(u64, u64)>> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    let mut head = [0u8; 40];
    if len < 40 || file.read_exact_at(&mut head, 0).is_err() {
        return Ok(None);
    }
    let Some(page) = long_header_page_size(&head).map(u64::from) else {
        return Ok(None);
    };
    let written = |i: u64| -> std::io::Result<bool> {
        let mut magic = [0u8; 2];
        file.read_exact_at(&mut magic, i * page)?;
        Ok(magic != [0, 0])
    };
    // Page 0 is written (its header was read); find the first page that is not.
    let (mut lo, mut hi) = (1, len / page);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if written(mid)? {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(Some((page, lo * page)))
}

/// The WAL page size a segment's long page header states, when it is one.
fn long_header_page_size(head: &[u8]) -> Option<u32> {
    if head.get(..2).is_none_or(|m| m == [0, 0]) {
        return None;
    }
    head.get(36..40)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
        .filter(|p| p.is_power_of_two() && (1024..=1 << 16).contains(p))
}

/// The open segment `name` as its parts in the bucket hold it, or None when there are none.
/// A hole between parts is an error naming it: what follows the hole cannot be replayed.
pub fn assemble(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
) -> Result<Option<Vec<u8>>, EngineError> {
    let mut parts: Vec<(u64, u64, String)> = repo
        .list_objects(&format!("{}{name}/", prefix(&db.name)))?
        .into_iter()
        .filter_map(|o| parse_key(&db.name, &o.name).map(|(_, s, e)| (s, e, o.name.clone())))
        .collect();
    if parts.is_empty() {
        return Ok(None);
    }
    parts.sort();
    let mut data: Vec<u8> = Vec::new();
    for (start, end, key) in parts {
        if start > data.len() as u64 {
            return Err(EngineError::Corrupt(format!(
                "the received parts of wal segment {name} in repository {} have a hole before {key} (bytes {:#x}..{start:#x} are missing); hint: recovery can only reach the end of the bytes before it: restore with --until-lsn before that point",
                repo.location(),
                data.len()
            )));
        }
        let bytes = repo.read_object(&key)?.unwrap_or_default();
        if bytes.len() as u64 != end - start {
            return Err(EngineError::Corrupt(format!(
                "received part {key} in repository {} holds {} bytes, its name says {}; hint: the part was damaged after it was written: restore with --until-lsn before its start",
                repo.location(),
                bytes.len(),
                end - start
            )));
        }
        let end = end as usize;
        if data.len() < end {
            data.resize(end, 0);
        }
        data[start as usize..end].copy_from_slice(&bytes);
    }
    Ok(Some(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment_with_pages(written: usize, page: usize) -> Vec<u8> {
        let mut d = vec![0u8; 8 * page];
        for i in 0..written {
            d[i * page] = 0x10;
            d[i * page + 1] = 0xD1;
        }
        d[36..40].copy_from_slice(&(page as u32).to_le_bytes());
        d
    }

    #[test]
    fn only_what_the_bucket_lacks_is_sent_from_its_last_page_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000000010000000000000003.partial");
        let page = 8192;
        std::fs::write(&path, vec![0u8; 8 * page]).unwrap();
        let mut u = Uploaded::default();
        assert!(unsent(&path, &u).unwrap().is_none(), "nothing written yet");

        std::fs::write(&path, segment_with_pages(3, page)).unwrap();
        let (start, data, crc) = unsent(&path, &u).unwrap().unwrap();
        assert_eq!((start, data.len()), (0, 3 * page));
        u.end = 3 * page as u64;
        u.last_page = Some(crc);
        assert!(unsent(&path, &u).unwrap().is_none(), "sent already");

        // The last page grows in place: it alone goes again.
        let mut d = segment_with_pages(3, page);
        d[2 * page + 100] = 7;
        std::fs::write(&path, &d).unwrap();
        let (start, data, _) = unsent(&path, &u).unwrap().unwrap();
        assert_eq!((start, data.len()), (2 * page as u64, page));

        // More pages: from the last page held on.
        std::fs::write(&path, segment_with_pages(5, page)).unwrap();
        let (start, data, _) = unsent(&path, &u).unwrap().unwrap();
        assert_eq!((start, data.len()), (2 * page as u64, 3 * page));

        // A spool behind the bucket sends nothing.
        std::fs::write(&path, segment_with_pages(1, page)).unwrap();
        assert!(unsent(&path, &u).unwrap().is_none());
    }

    #[test]
    fn keys_round_trip_and_foreign_names_are_ignored() {
        let db = "main";
        let k = part_key(db, "000000010000000000000003", 0x2000, 0x6000);
        assert_eq!(
            parse_key(db, &k),
            Some(("000000010000000000000003", 0x2000, 0x6000))
        );
        assert_eq!(
            parse_key(db, "receive/main/000000010000000000000003/x-y"),
            None
        );
        assert_eq!(parse_key(db, "receive/main/00000001.history/0-10"), None);
    }
}
