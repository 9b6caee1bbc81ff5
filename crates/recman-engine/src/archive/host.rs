//! The repository host's side of archive-push and archive-get (`recman server --repo`): a
//! database host sends a WAL file's name and bytes, or asks for one by name; the server owns
//! the repository and its catalog, so the database host holds only its client certificate.
//!
//! Everything the local commands check is checked here too (the same code runs): a pushed
//! file is written to a private spool file and archived from there by
//! [`archive_push_batch`], which takes only WAL of the registered cluster. What the caller
//! names is checked first: a WAL file name is a plain name, never a path.

use super::{ArchivePushOutcome, PushOptions, archive_push_batch, read_wal};
use crate::error::EngineError;
use recman_catalog::{DbRecord, Repository};
use std::path::Path;

/// Refuses a name that is not a plain WAL, history or backup-history file name.
pub fn check_wal_name(name: &str) -> Result<(), EngineError> {
    let plain = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if !plain {
        return Err(crate::refusal::Wal::NotFileName {
            name: name.to_string(),
        }
        .into());
    }
    Ok(())
}

/// Whether the client certificate `cn` may archive for database `db`: `allow` holds `CN`
/// (any database) or `DB:CN` (that one).
pub fn allowed(allow: &[String], db: &str, cn: &str) -> bool {
    allow.iter().any(|a| match a.split_once(':') {
        Some((d, c)) => d == db && c == cn,
        None => a == cn,
    })
}

/// The database a request without one is for: of the databases registered (`names`), the
/// ones `cn` may archive for (all of them when `allow` is empty), when that is exactly one.
/// Only those are named in a refusal, so a client learns no database it may not use.
pub fn choose_database(
    names: &[String],
    allow: &[String],
    cn: &str,
) -> Result<String, EngineError> {
    let mine: Vec<&String> = names
        .iter()
        .filter(|n| allow.is_empty() || allowed(allow, n, cn))
        .collect();
    match mine.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(EngineError::NotFound(format!(
            "the repository host holds no database that client certificate {cn:?} may archive for; nothing was archived or read; hint: register the cluster on the repository host, and allow this certificate with the server's --allow DB:{cn}"
        ))),
        several => Err(crate::refusal::Fleet::SeveralDatabasesForCert {
            cn: cn.to_string(),
            names: several
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }
        .into()),
    }
}

/// The refusal a client whose certificate is not allowed for `db` gets.
pub fn not_allowed(db: &str, cn: &str) -> EngineError {
    crate::refusal::Fleet::CertNotAllowed {
        cn: cn.to_string(),
        db: db.to_string(),
    }
    .into()
}

/// Archives the WAL file `name` a database host sent (`data`), through a spool file in
/// `spool` (a private directory of the server's); returns what happened.
pub fn push_from_host(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
    data: &[u8],
    spool: &Path,
    opts: &PushOptions,
) -> Result<ArchivePushOutcome, EngineError> {
    check_wal_name(name)?;
    // One spool directory per call: two hosts (or a retry racing its first try) pushing the
    // same name never share a file.
    let dir = spool.join(format!(
        "{}-{}-{}",
        db.id,
        std::process::id(),
        crate::util::now_micros()
    ));
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| EngineError::io("create directory", &dir, e))?;
    }
    let path = dir.join(name);
    let r = crate::util::write_private(&path, data)
        .map_err(|e| EngineError::io("write", &path, e))
        .and_then(|()| {
            let one = PushOptions {
                batch: 1,
                ..opts.clone()
            };
            archive_push_batch(repo, db, &path, &one).map(|r| r.outcome)
        });
    let _ = std::fs::remove_dir_all(&dir);
    r
}

/// The WAL file `name` for a database host's archive-get; None when it is not archived.
pub fn get_for_host(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
) -> Result<Option<Vec<u8>>, EngineError> {
    check_wal_name(name)?;
    read_wal(repo, db, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_and_cns_are_per_database() {
        for good in [
            "000000010000000000000003",
            "00000002.history",
            "000000010000000000000003.00000028.backup",
            "000000010000000000000003.partial",
        ] {
            check_wal_name(good).unwrap();
        }
        for bad in ["", "../x", "a/b", "..", ".hidden", "x\0", "/etc/passwd"] {
            let e = check_wal_name(bad).unwrap_err().to_string();
            assert!(e.contains("nothing was archived"), "{bad:?}: {e}");
        }
        let allow = vec!["db1:host1".to_string(), "ops".to_string()];
        assert!(allowed(&allow, "db1", "host1"));
        assert!(!allowed(&allow, "db2", "host1"));
        assert!(allowed(&allow, "db2", "ops"));
        assert!(!allowed(&allow, "db1", "host2"));
    }

    #[test]
    fn a_request_without_a_database_gets_the_only_one_its_certificate_may_use() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let all = names(&["main", "other"]);
        assert_eq!(
            choose_database(&names(&["main"]), &[], "h").unwrap(),
            "main"
        );
        // Two registered, one allowed for this certificate: that one.
        let allow = names(&["main:host1", "other:host2"]);
        assert_eq!(choose_database(&all, &allow, "host1").unwrap(), "main");
        // Several allowed: refused, naming them and the option.
        let e = choose_database(&all, &[], "host1").unwrap_err().to_string();
        assert!(
            e.contains("(main, other)") && e.contains("--db NAME"),
            "{e}"
        );
        // None allowed: refused without naming the others.
        let e = choose_database(&all, &allow, "host3")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("main") && e.contains("--allow"), "{e}");
    }
}
