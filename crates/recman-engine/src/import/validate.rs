//! VALIDATE BACKUP of an imported backup: every file is read through its origin and checked
//! against the origin's own checksums (pgBackRest's SHA-1 of the stored bytes and of the
//! file, pg_basebackup's manifest checksum), every page of a relation file against its page
//! checksum, and the WAL from the backup's start to its end must be readable. Blocks the
//! origin itself recorded as failing their checksum (pgBackRest's page-checksum results) are
//! reported with the rest. Nothing is written.

use crate::context::Context;
use crate::error::EngineError;
use crate::foreign::{ForeignEntry, file_failure, open_origin};
use crate::pagecheck::{PageRules, PageVerdicts, check_stored};
use crate::progress::Progress;
use crate::validate::ValidateBackupReport;
use recman_catalog::{BackupRecord, CorruptBlock};
use recman_format::manifest::BackupManifest;
use std::io::Read;
use std::sync::Mutex;

#[derive(Default)]
struct Tally {
    files: u64,
    pages: u64,
    bytes: u64,
    corrupt: Vec<CorruptBlock>,
    failed: Vec<String>,
}

pub(crate) fn validate_foreign(
    ctx: &Context,
    b: &BackupRecord,
    chain: &[BackupManifest],
    channels: u32,
    progress: &dyn Progress,
) -> Result<ValidateBackupReport, EngineError> {
    let m = chain.last().expect("a chain has at least one backup");
    let opened = open_origin(chain)?;
    let start: recman_pg::Lsn = m.start_lsn.parse()?;
    let files: Vec<&ForeignEntry> = opened
        .entries()
        .iter()
        .filter(|e| e.kind == crate::foreign::EntryKind::File)
        .collect();
    progress.start("validate", files.iter().map(|f| f.size).sum());
    let tally = Mutex::new(Tally::default());
    let o = opened.as_ref();
    let count = |f: &ForeignEntry, r: Result<(u64, Vec<(u32, String)>), String>| {
        let mut t = tally.lock().expect("tally lock");
        t.files += 1;
        match r {
            Ok((pages, corrupt)) => {
                t.pages += pages;
                t.bytes += f.size;
                for (block, detail) in corrupt {
                    t.corrupt.push(CorruptBlock {
                        backup_id: b.id.clone(),
                        path: f.path.clone(),
                        block,
                        kind: "checksum".into(),
                        relation: None,
                        detail,
                    });
                }
            }
            Err(why) => t.failed.push(file_failure(o, f, &why)),
        }
    };
    let check = |f: &ForeignEntry, r: &mut dyn Read| {
        check_reader(r, f, m.checksums_enabled, start.0, progress)
    };
    let n = channels.max(1) as usize;
    if o.streams() > 0 {
        let n = n.min(o.streams());
        let seen = Mutex::new(std::collections::HashSet::new());
        crate::pipeline::pool::each(n, "validate", |w| {
            for k in (w.no as usize - 1..o.streams()).step_by(n) {
                let visited = o.visit(k, &mut |f, r| {
                    w.check()?;
                    count(f, check(f, r));
                    seen.lock().expect("seen lock").insert(f.path.clone());
                    Ok(())
                });
                // A stream that cannot be read to its end: its files not reached are
                // reported below as missing, this failure with them.
                if let Err(e) = visited {
                    tally.lock().expect("tally lock").failed.push(e.to_string());
                }
            }
            Ok(())
        })?;
        let seen = seen.into_inner().expect("seen lock");
        for f in files.iter().filter(|f| !seen.contains(&f.path)) {
            count(f, Err("it is in none of the backup's tar files".into()));
        }
    } else {
        crate::pipeline::pool::each(n, "validate", |w| {
            for f in files.iter().skip(w.no as usize - 1).step_by(n) {
                w.check()?;
                let r = o.open(f).map_err(|e| e.to_string());
                count(f, r.and_then(|mut r| check(f, &mut r)));
            }
            Ok(())
        })?;
    }
    progress.finish();
    let t = tally.into_inner().expect("tally lock");
    if !t.failed.is_empty() {
        return Err(EngineError::Corrupt(format!(
            "imported backup {} is damaged: {} file(s) fail the origin's checks: {}; hint: restore from another backup (`recman restore database --from-tag TAG`); the origin's own tool may have another copy",
            b.id,
            t.failed.len(),
            crate::util::cut_list(&t.failed, "; ")
        )));
    }
    let mut report = ValidateBackupReport {
        backup_id: b.id.clone(),
        tag: b.tag.clone(),
        pieces: 0,
        files: t.files,
        pages: t.pages,
        bytes: t.bytes,
        ..Default::default()
    };
    report.corrupt.blocks = t.corrupt;
    if !opened.holds_its_wal() {
        let stop: recman_pg::Lsn = m.stop_lsn.parse()?;
        for w in recman_pg::wal_segments_between(m.timeline, start, stop, m.wal_segment_size) {
            let name = w.to_string();
            if crate::archive::read_wal(&ctx.repo, &ctx.db, &name)?.is_none() {
                return Err(EngineError::NotFound(format!(
                    "wal segment {name} needed to make imported backup {} consistent is in neither recman's archive nor the imported one; hint: import the old tool's wal archive (`recman catalog import`), or restore another backup",
                    b.id
                )));
            }
            report.wal_segments += 1;
        }
    }
    Ok(report)
}

/// Reads one file whole; returns its pages checked and the blocks that failed, or why the
/// file itself failed.
fn check_reader(
    r: &mut dyn Read,
    f: &ForeignEntry,
    checksums: bool,
    start_lsn: u64,
    progress: &dyn Progress,
) -> Result<(u64, Vec<(u32, String)>), String> {
    let relfile = recman_page::classify(&f.path);
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    let mut verdicts = PageVerdicts::default();
    let mut pages = 0;
    loop {
        let n = crate::foreign::read_full(r, &mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        if let Some(rf) = &relfile {
            let whole = n / recman_page::BLCKSZ * recman_page::BLCKSZ;
            let rules = PageRules {
                relfile: rf,
                checksums,
                start_lsn: Some(start_lsn),
                skip: &[],
                logical: false,
            };
            check_stored(&rules, at, &buf[..whole], &mut verdicts);
            pages += (whole / recman_page::BLCKSZ) as u64;
        }
        at += n as u64;
        progress.advance(n as u64);
    }
    let mut corrupt: Vec<(u32, String)> = verdicts
        .corrupt
        .into_iter()
        .map(|(b, fault)| (b, format!("{fault} (read through the origin)")))
        .collect();
    for b in &f.page_errors {
        if !corrupt.iter().any(|(c, _)| c == b) {
            corrupt.push((
                *b,
                "recorded by the origin as failing its page checksum when it took the backup"
                    .into(),
            ));
        }
    }
    Ok((pages, corrupt))
}
