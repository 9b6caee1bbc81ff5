//! RESTORE … VALIDATE: reads everything a restore plan would read — every piece of the chain
//! (failing over to another copy as restore does) and every WAL segment of its range — and
//! checks every chunk, every file's CRC and every piece against the manifest, writing nothing.

use super::plan::{RestorePlan, plan_restore};
use super::plan_wal::{PlannedSegment, WalSource};
use super::{RestoreOptions, files::Layout};
use crate::context::Context;
use crate::error::EngineError;
use crate::pieces::Source;
use crate::pipeline::{NullSink, OpenPiece, Scan, Wording};
use crate::progress::Progress;
use crate::util::cut;
use recman_format::manifest::{BackupManifest, EntryKind, ManifestEntry, ManifestPiece};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Serialize)]
pub struct RestoreValidateReport {
    pub backup_id: String,
    pub tag: String,
    /// Each piece (or image copy file) read, and where it was read from.
    pub pieces: Vec<Verified>,
    pub segments: Vec<Verified>,
    pub bytes: u64,
    #[serde(serialize_with = "secs")]
    pub elapsed: Duration,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

#[derive(Clone, Debug, Serialize)]
pub struct Verified {
    pub name: String,
    pub from: String,
}

/// Validates what restoring with `opts` would read; the plan's WAL check applies first, as it
/// does to a restore.
pub fn validate_restore(
    ctx: &Context,
    opts: &RestoreOptions,
    progress: &dyn Progress,
) -> Result<(RestorePlan, RestoreValidateReport), EngineError> {
    let t0 = Instant::now();
    let plan = plan_restore(ctx, opts)?;
    plan.wal.check(&plan.backup_id, opts.allow_wal_gap)?;
    let mut failures = Vec::new();
    progress.start("validate", plan.restored_bytes + plan.wal.bytes);
    let pieces = match &plan.image_copy {
        Some(tag) => copy_files(ctx, tag, &plan.chain[0], progress, &mut failures)?,
        None => chain_pieces(&plan, opts.channels, progress, &mut failures),
    };
    let mut segments = Vec::new();
    let mut seen = HashMap::new();
    for s in &plan.wal.segments {
        if plan.wal.gaps.contains(&s.name) {
            // Allowed by the caller: recovery ends there, nothing after it is read.
            break;
        }
        match segment(ctx, s, &mut seen) {
            Ok(from) => segments.push(Verified {
                name: s.name.clone(),
                from,
            }),
            Err(e) => failures.push(format!("wal segment {}: {e}", s.name)),
        }
        progress.advance(s.record.as_ref().map(|r| r.size).unwrap_or(0));
    }
    progress.finish();
    if !failures.is_empty() {
        return Err(EngineError::remedy(
            crate::error::ErrorKind::Corrupt,
            format!(
                "restore of backup {} cannot read {} object(s): {}",
                plan.backup_id,
                failures.len(),
                cut(&failures)
            ),
            crate::action::Hint::new()
                .act(crate::action::Action::RestoreFromTag)
                .text(", or repair the named objects (`recman crosscheck` marks them)"),
        ));
    }
    let report = RestoreValidateReport {
        backup_id: plan.backup_id.clone(),
        tag: plan.tag.clone(),
        bytes: match plan.image_copy {
            Some(_) => plan.restored_bytes,
            None => plan.piece_bytes,
        } + plan.wal.bytes,
        pieces,
        segments,
        elapsed: t0.elapsed(),
    };
    Ok((plan, report))
}

/// Every piece of the chain on `channels` threads; a piece is read from its next copy when
/// one fails, as restore does.
fn chain_pieces(
    plan: &RestorePlan,
    channels: u32,
    progress: &dyn Progress,
    failures: &mut Vec<String>,
) -> Vec<Verified> {
    let mut work: Vec<(&BackupManifest, &ManifestPiece)> = Vec::new();
    for m in &plan.chain {
        for p in m.sets.iter().flat_map(|s| s.pieces.iter()) {
            work.push((m, p));
        }
    }
    let entries: HashMap<&str, HashMap<&str, &ManifestEntry>> = plan
        .chain
        .iter()
        .map(|m| {
            let files = m
                .entries
                .iter()
                .filter(|e| e.kind == EntryKind::File)
                .map(|e| (e.path.as_str(), e))
                .collect();
            (m.backup_id.as_str(), files)
        })
        .collect();
    let queue = Mutex::new(work.iter().enumerate());
    let done: Mutex<Vec<(usize, PieceOutcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..channels.max(1).min(work.len().max(1) as u32) {
            s.spawn(|| {
                loop {
                    let Some((i, (m, p))) = queue.lock().expect("queue lock").next() else {
                        break;
                    };
                    let own = &entries[m.backup_id.as_str()];
                    let from = plan.sources.get(&p.path).map(Vec::as_slice).unwrap_or(&[]);
                    let r = piece_any(from, p, own, progress);
                    done.lock().expect("done lock").push((i, r));
                }
            });
        }
    });
    let mut done = done.into_inner().expect("done lock");
    done.sort_by_key(|(i, _)| *i);
    let mut out = Vec::new();
    let mut parts: HashMap<&str, u64> = HashMap::new();
    for (i, r) in done {
        match r {
            Ok((from, n)) => {
                *parts.entry(work[i].0.backup_id.as_str()).or_default() += n;
                out.push(Verified {
                    name: work[i].1.path.clone(),
                    from,
                });
            }
            Err(e) => failures.push(e),
        }
    }
    if failures.is_empty() {
        // Every file part the manifest places in a set must have come out of some piece.
        for m in &plan.chain {
            let expected: u64 = entries[m.backup_id.as_str()]
                .values()
                .filter(|e| e.set_no.is_some())
                .map(|e| e.sections.len().max(1) as u64)
                .sum();
            let got = parts.get(m.backup_id.as_str()).copied().unwrap_or(0);
            if got != expected {
                failures.push(format!(
                    "backup {}: its pieces hold {got} of the {expected} file parts its manifest lists",
                    m.backup_id
                ));
            }
        }
    }
    out
}

/// Where a piece was read from and the file parts it holds, or why no copy read intact.
type PieceOutcome = Result<(String, u64), String>;

/// Verifies piece `p` from the first of its copies that reads intact; returns where it was
/// read and the file parts it holds, or the reason no copy did.
fn piece_any(
    sources: &[Source],
    p: &ManifestPiece,
    own: &HashMap<&str, &ManifestEntry>,
    progress: &dyn Progress,
) -> PieceOutcome {
    let mut errs = Vec::new();
    for s in sources {
        let r = s
            .media
            .open(&s.name)
            .map_err(EngineError::from)
            .and_then(|f| {
                let scan = Scan {
                    rel: &p.path,
                    piece: Some((p.size, p.crc32c)),
                    files: &Own(own),
                    wording: Wording::VALIDATE,
                    channel: 1,
                    set_no: None,
                };
                let mut sink = NullSink {
                    progress: Some(progress),
                    ..Default::default()
                };
                let done = OpenPiece::open(&p.path, f)?.scan(&scan, &mut [], &mut sink)?;
                Ok(done.files)
            });
        match r {
            Ok(parts) => return Ok((s.describe(), parts)),
            Err(e) => {
                if sources.len() > 1 {
                    progress.notice(&format!(
                        "backup piece {} on {} cannot be used: {e}",
                        p.path,
                        s.describe()
                    ));
                }
                errs.push(format!("on {}: {e}", s.describe()));
            }
        }
    }
    if errs.is_empty() {
        errs.push("no copy is known".into());
    }
    Err(format!("backup piece {}: {}", p.path, errs.join("; ")))
}

/// The files of one backup as its manifest recorded them; a file in sections is checked
/// section by section.
struct Own<'a, 'b>(&'b HashMap<&'a str, &'a ManifestEntry>);

impl crate::pipeline::scanner::Expect for Own<'_, '_> {
    fn file_matches(&self, name: &str, piece_no: u32, size: u64, crc: u32) -> bool {
        self.0.get(name).is_none_or(
            |e| match e.sections.iter().find(|s| s.piece_no == piece_no) {
                Some(sec) => sec.crc32c == crc && sec.offset + sec.len == size,
                None => e.crc32c == Some(crc) && e.size == Some(size),
            },
        )
    }
}

/// Verifies one WAL segment from the first of its sources that reads intact. `seen` keeps the
/// files of ARCHIVELOG pieces already read, which hold many segments each.
fn segment(
    ctx: &Context,
    s: &PlannedSegment,
    seen: &mut HashMap<String, HashMap<String, (u64, u32)>>,
) -> Result<String, String> {
    let want = s.record.as_ref().map(|r| (r.size, r.crc32c));
    let matches = |got: Option<&(u64, u32)>| -> Result<(), EngineError> {
        match (got, want) {
            (None, _) => Err(EngineError::Corrupt("the segment is not in it".into())),
            (Some(g), Some(w)) if *g != w => Err(EngineError::Corrupt(format!(
                "size {} crc {:08x} differ from the archived size {} crc {:08x}",
                g.0, g.1, w.0, w.1
            ))),
            _ => Ok(()),
        }
    };
    let mut errs = Vec::new();
    for src in &s.sources {
        let r = match src {
            WalSource::Archive { object, .. } => {
                one_file(ctx.repo.media().as_ref(), object, &s.name).and_then(|g| matches(Some(&g)))
            }
            WalSource::Copy { device, name, .. } => crate::devices::media_for(&ctx.repo, device)
                .and_then(|m| one_file(m.as_ref(), name, &s.name))
                .and_then(|g| matches(Some(&g))),
            // Read and checked with the backup's files.
            WalSource::InBackup { .. } => Ok(()),
            WalSource::Imported { .. } => {
                let mut failures = Vec::new();
                match crate::foreign::read_foreign_wal(&ctx.repo, &ctx.db, &s.name, &mut failures) {
                    Ok(Some(_)) => Ok(()),
                    Ok(None) if failures.is_empty() => {
                        Err(EngineError::Corrupt("the segment is not in it".into()))
                    }
                    Ok(None) => Err(EngineError::Corrupt(failures.join("; "))),
                    Err(e) => Err(e),
                }
            }
            WalSource::BackupSet { pieces, .. } => (|| {
                let mut last = None;
                for p in pieces {
                    if !seen.contains_key(p) {
                        let mut files = HashMap::new();
                        let read = ctx
                            .repo
                            .media()
                            .open(p)
                            .map_err(EngineError::from)
                            .and_then(|f| file_ends(p, f))
                            .map(|ends| {
                                for (n, size, crc) in ends {
                                    files.insert(n, (size, crc));
                                }
                            });
                        match read {
                            Ok(_) => {
                                seen.insert(p.clone(), files);
                            }
                            Err(e) => {
                                last = Some(e);
                                continue;
                            }
                        }
                    }
                    if let Some(g) = seen[p].get(&s.name) {
                        return matches(Some(g));
                    }
                }
                Err(last.unwrap_or_else(|| EngineError::Corrupt("the segment is not in it".into())))
            })(),
        };
        match r {
            Ok(()) => return Ok(src.kind().to_string()),
            Err(e) => errs.push(format!("{}: {e}", src.kind())),
        }
    }
    if errs.is_empty() {
        errs.push("no copy is known".into());
    }
    Err(errs.join("; "))
}

/// Reads an archived WAL object (a one-file piece) and returns its file's size and CRC.
fn one_file(
    media: &dyn recman_media::Media,
    object: &str,
    name: &str,
) -> Result<(u64, u32), EngineError> {
    let f = media.open(object)?;
    let got = file_ends(object, f)?
        .into_iter()
        .find(|(n, _, _)| n == name)
        .map(|(_, size, crc)| (size, crc));
    got.ok_or_else(|| EngineError::Corrupt(format!("object {object} does not hold {name}")))
}

/// Reads piece `rel` whole through the scanner (every chunk, every file against its end
/// record, the piece against its footer) and returns each file's (name, size, CRC-32C).
fn file_ends(
    rel: &str,
    f: Box<dyn recman_media::MediaReader>,
) -> Result<Vec<(String, u64, u32)>, EngineError> {
    let scan = Scan {
        rel,
        piece: None,
        files: &crate::pipeline::AnyFile,
        wording: Wording::VALIDATE,
        channel: 1,
        set_no: None,
    };
    let mut sink = NullSink::default();
    OpenPiece::open(rel, f)?.scan(&scan, &mut [], &mut sink)?;
    Ok(sink.ends)
}

/// An image copy's files, read whole and checked against the CRCs its state recorded.
fn copy_files(
    ctx: &Context,
    tag: &str,
    state: &BackupManifest,
    progress: &dyn Progress,
    failures: &mut Vec<String>,
) -> Result<Vec<Verified>, EngineError> {
    let layout: Layout = super::copy_state::copy_layout(ctx, tag, state)?;
    let mut out = Vec::new();
    for e in state.entries.iter().filter(|e| e.kind == EntryKind::File) {
        let p = layout.real(&e.path);
        match super::copy_state::file_crc(&p) {
            Ok(crc) if e.crc32c.is_none_or(|c| c == crc) => out.push(Verified {
                name: e.path.clone(),
                from: format!("image copy {}", tag.to_uppercase()),
            }),
            Ok(_) => failures.push(format!(
                "image copy file {} does not match its recorded checksum",
                p.display()
            )),
            Err(er) => failures.push(format!("image copy file {}: {er}", p.display())),
        }
        progress.advance(e.size.unwrap_or(0));
    }
    Ok(out)
}
