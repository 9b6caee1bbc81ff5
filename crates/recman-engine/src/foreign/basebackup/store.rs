//! Where a pg_basebackup backup keeps its files: as a data directory (plain format) or in
//! tar files (`base.tar`, `<oid>.tar` per tablespace, `pg_wal.tar`), each possibly compressed
//! by the client or the server (gzip, lz4, zstd). Nothing here writes.

use super::super::ImportError;
use super::super::decode::Codec;
use super::tar::{Header, Kind, TarStream};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// One tar file of a backup in tar format.
#[derive(Clone, Debug)]
pub struct TarFile {
    pub path: PathBuf,
    pub codec: Codec,
    /// What its members' names are relative to in the data directory ("" for base.tar).
    pub prefix: String,
}

#[derive(Clone, Debug)]
pub enum Store {
    Plain(PathBuf),
    Tar(Vec<TarFile>),
}

/// A path found in the backup, as the data directory will hold it.
#[derive(Clone, Debug)]
pub struct Found {
    pub kind: Kind,
    pub mode: u32,
    pub mtime: i64,
    pub size: u64,
    pub link: String,
}

/// Small files kept whole while listing, so that a compressed tar is not read twice.
pub const KEEP: &[&str] = &[
    "backup_label",
    "tablespace_map",
    "global/pg_control",
    "PG_VERSION",
];

pub struct Listing {
    pub found: BTreeMap<String, Found>,
    pub kept: BTreeMap<String, Vec<u8>>,
}

/// `base.tar.gz` and the like: (stem, codec), or None when `name` is no tar.
fn tar_name(name: &str) -> Option<(&str, Codec)> {
    if let Some(stem) = name.strip_suffix(".tar") {
        return Some((stem, Codec::None));
    }
    let (rest, ext) = name.rsplit_once('.')?;
    let codec = Codec::of_extension(ext).filter(|c| *c != Codec::Bz2)?;
    Some((rest.strip_suffix(".tar")?, codec))
}

impl Store {
    /// The store of backup directory `dir`: tar format when it holds `base.tar[.ext]`.
    pub fn of(dir: &Path) -> Result<Store, ImportError> {
        let mut tars = Vec::new();
        for d in std::fs::read_dir(dir).map_err(|e| ImportError::io(dir, e))? {
            let d = d.map_err(|e| ImportError::io(dir, e))?;
            let name = d.file_name().to_string_lossy().into_owned();
            let Some((stem, codec)) = tar_name(&name) else {
                continue;
            };
            let prefix = match stem {
                "base" => String::new(),
                "pg_wal" => "pg_wal/".into(),
                oid if oid.parse::<u32>().is_ok() => format!("pg_tblspc/{oid}/"),
                _ => continue,
            };
            tars.push(TarFile {
                path: d.path(),
                codec,
                prefix,
            });
        }
        if tars.is_empty() {
            return Ok(Store::Plain(dir.to_path_buf()));
        }
        if !tars.iter().any(|t| t.prefix.is_empty()) {
            return Err(ImportError::NotFound(format!(
                "pg_basebackup backup {} holds tar files but no base.tar; hint: give the directory holding all the tar files pg_basebackup wrote",
                dir.display()
            )));
        }
        // base.tar first: the others' members go below directories it makes.
        tars.sort_by_key(|t| (!t.prefix.is_empty(), t.prefix.clone()));
        Ok(Store::Tar(tars))
    }

    pub fn format(&self) -> &'static str {
        match self {
            Store::Plain(_) => "plain",
            Store::Tar(_) => "tar",
        }
    }

    /// The compression of the tar files ("none" for plain format).
    pub fn compression(&self) -> String {
        match self {
            Store::Tar(t) => t
                .iter()
                .find(|t| t.prefix.is_empty())
                .map(|t| format!("{:?}", t.codec).to_lowercase())
                .unwrap_or_default(),
            Store::Plain(_) => "none".into(),
        }
    }

    /// Every path of the backup, read once.
    pub fn list(&self) -> Result<Listing, ImportError> {
        let mut l = Listing {
            found: BTreeMap::new(),
            kept: BTreeMap::new(),
        };
        match self {
            Store::Plain(dir) => walk(dir, "", &mut l)?,
            Store::Tar(tars) => {
                for t in tars {
                    list_tar(t, &mut l)?;
                }
            }
        }
        Ok(l)
    }

    /// Opens file `path` (relative to the data directory). A member of a tar is reached by
    /// reading the tar from its start: correct for any compression, and cheap for the few
    /// small files read this way; restore and validate read each tar once instead
    /// ([`Store::visit`]).
    pub fn open(&self, path: &str) -> Result<Box<dyn Read + Send>, ImportError> {
        match self {
            Store::Plain(dir) => {
                let p = dir.join(path);
                let f = File::open(&p).map_err(|e| ImportError::io(&p, e))?;
                Ok(Box::new(BufReader::with_capacity(1 << 20, f)))
            }
            Store::Tar(tars) => {
                let t = holder(tars, path);
                let mut s = open_tar(t)?;
                let name = &path[t.prefix.len()..];
                while let Some(h) = s.next_header().map_err(|e| ImportError::io(&t.path, e))? {
                    if h.kind == Kind::File && h.path == name {
                        return Ok(Box::new(s.into_member()));
                    }
                }
                Err(ImportError::NotFound(format!(
                    "{} holds no {name}; hint: the backup is incomplete: validate it (`recman validate backup`)",
                    t.path.display()
                )))
            }
        }
    }

    /// The tar files, for reading each once in order.
    pub fn tars(&self) -> &[TarFile] {
        match self {
            Store::Tar(t) => t,
            Store::Plain(_) => &[],
        }
    }
}

/// The tar that holds `path`: a tablespace's or pg_wal's own tar when there is one.
fn holder<'a>(tars: &'a [TarFile], path: &str) -> &'a TarFile {
    tars.iter()
        .filter(|t| path.starts_with(&t.prefix))
        .max_by_key(|t| t.prefix.len())
        .expect("base.tar holds the rest")
}

pub fn open_tar(t: &TarFile) -> Result<TarStream<Box<dyn Read + Send>>, ImportError> {
    let f = BufReader::with_capacity(
        1 << 20,
        File::open(&t.path).map_err(|e| ImportError::io(&t.path, e))?,
    );
    // pg_basebackup compresses pg_wal.tar as one gzip member per file it adds: all are read.
    let r: Box<dyn Read + Send> = match t.codec {
        Codec::Gz => Box::new(flate2::read::MultiGzDecoder::new(f)),
        c => c.reader(f).map_err(|e| ImportError::io(&t.path, e))?,
    };
    Ok(TarStream::new(r))
}

fn found_of(h: &Header) -> Found {
    Found {
        kind: h.kind.clone(),
        mode: h.mode,
        mtime: h.mtime,
        size: if h.kind == Kind::File { h.size } else { 0 },
        link: h.link.clone(),
    }
}

fn list_tar(t: &TarFile, l: &mut Listing) -> Result<(), ImportError> {
    let mut s = open_tar(t)?;
    let bad = |e| ImportError::io(&t.path, e);
    if !t.prefix.is_empty() {
        // The tar's root: the tablespace's directory, or pg_wal.
        let root = t.prefix.trim_end_matches('/').to_string();
        l.found.entry(root).or_insert(Found {
            kind: Kind::Dir,
            mode: 0o700,
            mtime: 0,
            size: 0,
            link: String::new(),
        });
    }
    while let Some(h) = s.next_header().map_err(bad)? {
        if h.kind == Kind::Other || h.path.is_empty() {
            continue;
        }
        let path = format!("{}{}", t.prefix, h.path);
        if h.kind == Kind::File && KEEP.contains(&path.as_str()) {
            let mut data = Vec::new();
            s.member().read_to_end(&mut data).map_err(bad)?;
            l.kept.insert(path.clone(), data);
        }
        l.found.insert(path, found_of(&h));
    }
    Ok(())
}

/// Lists `dir` (the data directory, or a tablespace a pg_tblspc link points to) under `rel`.
fn walk(dir: &Path, rel: &str, l: &mut Listing) -> Result<(), ImportError> {
    use std::os::unix::fs::MetadataExt;
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| ImportError::io(dir, e))?
        .filter_map(|d| d.ok())
        .collect();
    names.sort_by_key(|d| d.file_name());
    for d in names {
        let name = d.file_name().to_string_lossy().into_owned();
        let path = format!("{rel}{name}");
        let md = std::fs::symlink_metadata(d.path()).map_err(|e| ImportError::io(d.path(), e))?;
        let mut f = Found {
            kind: Kind::File,
            mode: md.mode() & 0o7777,
            mtime: md.mtime(),
            size: md.len(),
            link: String::new(),
        };
        if md.is_symlink() {
            let target = std::fs::read_link(d.path()).map_err(|e| ImportError::io(d.path(), e))?;
            f.kind = Kind::Symlink;
            f.size = 0;
            f.link = target.to_string_lossy().into_owned();
            // Plain format writes a tablespace where its link points: list its files there.
            if rel == "pg_tblspc/" && d.path().is_dir() {
                walk(&d.path(), &format!("{path}/"), l)?;
            }
        } else if md.is_dir() {
            f.kind = Kind::Dir;
            f.size = 0;
            walk(&d.path(), &format!("{path}/"), l)?;
        } else if KEEP.contains(&path.as_str()) {
            let data = std::fs::read(d.path()).map_err(|e| ImportError::io(d.path(), e))?;
            l.kept.insert(path.clone(), data);
        }
        l.found.insert(path, f);
    }
    Ok(())
}
