//! pg_basebackup's `backup_manifest`: the files with their sizes and checksums, the WAL
//! ranges the backup needs, and (from PostgreSQL 17 on) the system identifier. The manifest
//! is checked against its own SHA-256 before anything in it is believed.

use super::super::ImportError;
use super::super::decode::{Checksum, sha256_hex, unhex};
use recman_pg::Lsn;
use serde::Deserialize;
use std::path::Path;

/// One file the manifest lists.
#[derive(Clone, Debug)]
pub struct ManifestFile {
    pub path: String,
    pub size: u64,
    pub checksum: Option<Checksum>,
}

/// A range of WAL the backup needs to become consistent.
#[derive(Clone, Copy, Debug)]
pub struct WalRange {
    pub timeline: u32,
    pub start: Lsn,
    pub end: Lsn,
}

#[derive(Clone, Debug)]
pub struct Manifest {
    pub version: u32,
    pub system_identifier: Option<u64>,
    pub files: Vec<ManifestFile>,
    pub wal: Vec<WalRange>,
}

#[derive(Deserialize)]
struct Raw {
    #[serde(rename = "PostgreSQL-Backup-Manifest-Version")]
    version: u32,
    #[serde(rename = "System-Identifier")]
    system_identifier: Option<u64>,
    #[serde(rename = "Files", default)]
    files: Vec<RawFile>,
    #[serde(rename = "WAL-Ranges", default)]
    wal: Vec<RawRange>,
}

#[derive(Deserialize)]
struct RawFile {
    #[serde(rename = "Path")]
    path: Option<String>,
    /// Hex of a name that is not UTF-8.
    #[serde(rename = "Encoded-Path")]
    encoded_path: Option<String>,
    #[serde(rename = "Size")]
    size: u64,
    #[serde(rename = "Checksum-Algorithm")]
    algorithm: Option<String>,
    #[serde(rename = "Checksum")]
    checksum: Option<String>,
}

#[derive(Deserialize)]
struct RawRange {
    #[serde(rename = "Timeline")]
    timeline: u32,
    #[serde(rename = "Start-LSN")]
    start: String,
    #[serde(rename = "End-LSN")]
    end: String,
}

impl Manifest {
    /// Reads and checks `dir`'s backup_manifest.
    pub fn read(dir: &Path) -> Result<Manifest, ImportError> {
        let path = dir.join("backup_manifest");
        let text = std::fs::read(&path).map_err(|e| ImportError::io(&path, e))?;
        Manifest::parse(&text, &path)
    }

    pub fn parse(text: &[u8], path: &Path) -> Result<Manifest, ImportError> {
        let bad = |why: String| {
            ImportError::Corrupt(format!(
                "{} {why}; hint: check it with pg_verifybackup, or take the backup again",
                path.display()
            ))
        };
        check_own_checksum(text).map_err(bad)?;
        let raw: Raw =
            serde_json::from_slice(text).map_err(|e| bad(format!("is not valid json: {e}")))?;
        if !(1..=2).contains(&raw.version) {
            return Err(crate::refusal::Import::ManifestVersion {
                path: path.display().to_string(),
                version: raw.version.to_string(),
            }
            .into());
        }
        let files = raw
            .files
            .into_iter()
            .map(|f| file_of(f).map_err(&bad))
            .collect::<Result<Vec<_>, _>>()?;
        let wal = raw
            .wal
            .into_iter()
            .map(|r| {
                Ok(WalRange {
                    timeline: r.timeline,
                    start: r
                        .start
                        .parse()
                        .map_err(|_| bad(format!("has LSN {:?}", r.start)))?,
                    end: r
                        .end
                        .parse()
                        .map_err(|_| bad(format!("has LSN {:?}", r.end)))?,
                })
            })
            .collect::<Result<Vec<_>, ImportError>>()?;
        if wal.is_empty() {
            return Err(bad("lists no WAL range".into()));
        }
        Ok(Manifest {
            version: raw.version,
            system_identifier: raw.system_identifier,
            files,
            wal,
        })
    }

    /// Where the backup starts and ends, and the timeline it ends on.
    pub fn span(&self) -> (Lsn, Lsn, u32) {
        let first = self.wal.first().expect("checked when parsed");
        let last = self.wal.last().expect("checked when parsed");
        (first.start, last.end, last.timeline)
    }

    /// The files of an incremental backup (PostgreSQL 17's `--incremental`).
    pub fn incremental_files(&self) -> impl Iterator<Item = &ManifestFile> {
        self.files.iter().filter(|f| {
            f.path
                .rsplit('/')
                .next()
                .is_some_and(|n| n.starts_with("INCREMENTAL."))
        })
    }
}

fn file_of(f: RawFile) -> Result<ManifestFile, String> {
    let path = match (f.path, f.encoded_path) {
        (Some(p), _) => p,
        (None, Some(hex)) => unhex(&hex)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| format!("names a file recman cannot name ({hex})"))?,
        (None, None) => return Err("lists a file without a path".into()),
    };
    let checksum = match (f.algorithm.as_deref(), f.checksum.as_deref()) {
        (None | Some("NONE"), _) | (_, None) => None,
        (Some(alg), Some(hex)) => Some(Checksum::parse(alg, hex).ok_or_else(|| {
            format!("gives file {path} a {alg} checksum {hex:?} recman does not read")
        })?),
    };
    Ok(ManifestFile {
        path,
        size: f.size,
        checksum,
    })
}

/// The manifest's last line holds the SHA-256 of everything before it.
fn check_own_checksum(text: &[u8]) -> Result<(), String> {
    let newlines: Vec<usize> = text
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i)
        .collect();
    let [.., before, last] = newlines[..] else {
        return Err("is too short to be a backup manifest".into());
    };
    let line = String::from_utf8_lossy(&text[before + 1..last]);
    let want = line
        .trim()
        .strip_prefix("\"Manifest-Checksum\": \"")
        .and_then(|r| r.strip_suffix("\"}"))
        .ok_or("does not end with its Manifest-Checksum")?;
    let got = sha256_hex(&text[..=before]);
    if !got.eq_ignore_ascii_case(want) {
        return Err(format!(
            "fails its own checksum: SHA-256 {got}, it records {want}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_checksum(body: &str) -> String {
        format!(
            "{body}\n\"Manifest-Checksum\": \"{}\"}}\n",
            sha256_hex(format!("{body}\n").as_bytes())
        )
    }

    #[test]
    fn a_manifest_is_read_and_checked_against_its_own_sha256() {
        let body = "{ \"PostgreSQL-Backup-Manifest-Version\": 1,\n\"Files\": [\n{ \"Path\": \"base/1/1259\", \"Size\": 8192, \"Last-Modified\": \"2026-01-01 00:00:00 GMT\", \"Checksum-Algorithm\": \"CRC32C\", \"Checksum\": \"0a0b0c0d\" }\n],\n\"WAL-Ranges\": [\n{ \"Timeline\": 1, \"Start-LSN\": \"0/2000028\", \"End-LSN\": \"0/2000100\" }\n],";
        let good = with_checksum(body);
        let m = Manifest::parse(good.as_bytes(), Path::new("m")).unwrap();
        assert_eq!(m.files[0].path, "base/1/1259");
        assert_eq!(m.files[0].checksum, Some(Checksum::Crc32c(0x0d0c0b0a)));
        assert_eq!(m.span().1, Lsn(0x2000100));
        let bad = good.replace("8192", "8193");
        let e = Manifest::parse(bad.as_bytes(), Path::new("m")).unwrap_err();
        assert!(e.to_string().contains("fails its own checksum"), "{e}");
    }
}
