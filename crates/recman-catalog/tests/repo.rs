//! Creating and opening repositories, and atomic writes.

use std::fs;
use std::io::Write;

use recman_catalog::{CatalogError, Repository, SCHEMA_VERSION};

#[test]
fn create_makes_missing_dirs_and_open_finds_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("a/b/repo");
    let repo = Repository::create(&root).unwrap();
    assert!(root.join("recman.repo").is_file());
    assert!(root.join("catalog.db").is_file());
    assert!(root.join("lock").is_file());
    let marker: serde_json::Value =
        serde_json::from_slice(&fs::read(root.join("recman.repo")).unwrap()).unwrap();
    assert_eq!(marker["format"], "recman-repository");
    assert_eq!(marker["version"], 1);
    assert!(marker["created"].as_str().unwrap().contains('T'));
    assert_eq!(repo.catalog().schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(repo.disk_path("x/y").unwrap(), repo.root().join("x/y"));
    assert!(repo.catalog().databases().unwrap().is_empty());
    let prod = repo
        .catalog()
        .register_database("prod", 7_000_000_000_000_000_001, 150004, "/srv/pg")
        .unwrap();
    drop(repo);

    // Open finds the same catalog: the row registered through create's handle is there.
    let repo = Repository::open(&root).unwrap();
    assert!(repo.root().is_absolute());
    assert_eq!(repo.root(), fs::canonicalize(&root).unwrap());
    assert_eq!(repo.catalog().schema_version().unwrap(), SCHEMA_VERSION);
    let dbs = repo.catalog().databases().unwrap();
    assert_eq!(dbs.len(), 1, "{dbs:?}");
    assert_eq!(dbs[0].id, prod.id);
    assert_eq!(dbs[0].name, "prod");
    assert_eq!(dbs[0].system_identifier, 7_000_000_000_000_000_001);
    assert_eq!(dbs[0].pg_version, 150004);
    assert_eq!(dbs[0].pgdata, "/srv/pg");
    // And the row is in catalog.db itself, not in some other file.
    let conn = rusqlite::Connection::open(root.join("catalog.db")).unwrap();
    let row: (String, String) = conn
        .query_row("SELECT name, system_identifier FROM database", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(row, ("prod".into(), "7000000000000000001".into()));
    drop(conn);
    let mode: String = {
        let c = rusqlite_journal_mode(&root.join("catalog.db"));
        c.to_lowercase()
    };
    assert_eq!(mode, "wal");
}

fn rusqlite_journal_mode(db: &std::path::Path) -> String {
    // The journal mode is persistent in the file; a fresh connection reports it.
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn create_accepts_empty_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::create(tmp.path()).unwrap();
    let mut names: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("catalog.db-")) // SQLite's WAL and shared-memory files
        .collect();
    names.sort();
    assert_eq!(names, ["catalog.db", "lock", "recman.repo"]);
    repo.catalog()
        .register_database("main", 42, 150004, "/pg")
        .unwrap();
    drop(repo);
    let repo = Repository::open(tmp.path()).unwrap();
    let db = repo
        .catalog()
        .database("main")
        .unwrap()
        .expect("registered row");
    assert_eq!((db.system_identifier, db.pgdata.as_str()), (42, "/pg"));
}

#[test]
fn create_refuses_existing_repository() {
    let tmp = tempfile::tempdir().unwrap();
    Repository::create(tmp.path()).unwrap();
    let err = Repository::create(tmp.path()).unwrap_err();
    assert!(matches!(err, CatalogError::AlreadyExists { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("already exists") && msg.contains("hint:"),
        "{msg}"
    );
}

#[test]
fn create_refuses_non_empty_dir() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("precious.txt"), b"keep me").unwrap();
    let err = Repository::create(tmp.path()).unwrap_err();
    assert!(matches!(err, CatalogError::NotEmpty { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("not empty") && msg.contains("hint:"), "{msg}");
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn open_missing_dir_says_so_with_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("nope");
    let err = Repository::open(&root).unwrap_err();
    assert!(matches!(err, CatalogError::NotFound { .. }));
    let r = root.display();
    assert_eq!(
        err.to_string(),
        format!(
            "repository {r} does not exist; hint: create it with `recman create catalog --repo {r}`"
        )
    );
    assert!(!root.exists(), "open must not create anything");
}

#[test]
fn open_dir_without_marker_is_not_a_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let err = Repository::open(tmp.path()).unwrap_err();
    assert!(matches!(err, CatalogError::NotARepository { .. }));
    let r = tmp.path().display();
    assert_eq!(
        err.to_string(),
        format!(
            "{r} is not a recman repository; hint: create it with `recman create catalog --repo {r}`"
        )
    );
}

#[test]
fn open_refuses_unknown_marker_version_and_garbage() {
    let tmp = tempfile::tempdir().unwrap();
    Repository::create(tmp.path()).unwrap();
    let marker = tmp.path().join("recman.repo");

    fs::write(
        &marker,
        br#"{"format":"recman-repository","version":7,"created":"2030-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    let err = Repository::open(tmp.path()).unwrap_err();
    assert!(
        matches!(
            err,
            CatalogError::UnsupportedRepositoryVersion {
                found: 7,
                supported: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("format version 7"), "{err}");
    assert!(err.to_string().contains("hint: upgrade recman"), "{err}");

    fs::write(&marker, b"not json").unwrap();
    let err = Repository::open(tmp.path()).unwrap_err();
    assert!(matches!(err, CatalogError::BadMarker { .. }), "{err}");

    fs::write(&marker, br#"{"format":"other","version":1,"created":"x"}"#).unwrap();
    let err = Repository::open(tmp.path()).unwrap_err();
    assert!(err.to_string().contains("\"other\""), "{err}");
}

#[test]
fn open_refuses_newer_catalog_schema() {
    let tmp = tempfile::tempdir().unwrap();
    Repository::create(tmp.path()).unwrap();
    let newer = SCHEMA_VERSION + 1;
    {
        let conn = rusqlite::Connection::open(tmp.path().join("catalog.db")).unwrap();
        conn.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (?1, 0)",
            [newer],
        )
        .unwrap();
    }
    let err = Repository::open(tmp.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "catalog schema {newer} is newer than this recman supports ({SCHEMA_VERSION}); hint: upgrade recman"
        )
    );
}

#[test]
fn open_refuses_an_empty_or_foreign_catalog_and_start_with_sets_it_aside() {
    // A 0-byte catalog.db (a truncation, a full disk) or an SQLite file of another program
    // must not be turned silently into a new, empty catalog: the record of every backup would
    // be gone without a word. Opening refuses it and points at the rebuild.
    let tmp = tempfile::tempdir().unwrap();
    Repository::create(tmp.path()).unwrap();
    let db = tmp.path().join("catalog.db");
    for make in ["empty", "foreign"] {
        fs::remove_file(&db).unwrap();
        match make {
            "empty" => fs::write(&db, b"").unwrap(),
            _ => {
                let c = rusqlite::Connection::open(&db).unwrap();
                c.execute_batch("CREATE TABLE songs (title TEXT)").unwrap();
            }
        }
        let err = Repository::open(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("catalog start-with"), "{make}: {err}");
        let expected = if make == "empty" {
            "0 bytes"
        } else {
            "not a recman catalog"
        };
        assert!(err.contains(expected), "{make}: {err}");
        // The file is left as it was.
        let len = fs::metadata(&db).unwrap().len();
        assert_eq!(len == 0, make == "empty", "{make}");
        // The rebuild path moves it aside, never deletes it, and starts a new catalog.
        let (repo, created) = Repository::open_recreating_catalog(tmp.path()).unwrap();
        assert!(created, "{make}");
        assert_eq!(repo.catalog().schema_version().unwrap(), SCHEMA_VERSION);
        drop(repo);
        let aside = fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("catalog.db.damaged-")
            })
            .count();
        assert!(aside >= 1, "{make}: the damaged catalog was not kept");
        for e in fs::read_dir(tmp.path()).unwrap().flatten() {
            if e.file_name().to_string_lossy().contains(".damaged-") {
                fs::remove_file(e.path()).unwrap();
            }
        }
    }
}

#[test]
fn open_without_catalog_file_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    Repository::create(tmp.path()).unwrap();
    fs::remove_file(tmp.path().join("catalog.db")).unwrap();
    let err = Repository::open(tmp.path()).unwrap_err();
    assert!(matches!(err, CatalogError::CatalogMissing { .. }), "{err}");
}

#[test]
fn atomic_file_appears_only_on_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::create(tmp.path()).unwrap();
    let rel = "db1/backup/B1/manifest.json";
    let mut f = repo.create_atomic(rel).unwrap();
    f.write_all(b"hello ").unwrap();
    f.write_all(&vec![b'x'; 1 << 20]).unwrap();
    assert!(
        !repo.root().join(rel).exists(),
        "no final file before commit"
    );
    let pending: Vec<_> = fs::read_dir(repo.root().join("db1/backup/B1"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        pending.len() == 1 && pending[0].starts_with("manifest.json.tmp-"),
        "{pending:?}"
    );
    f.commit().unwrap();
    let data = fs::read(repo.root().join(rel)).unwrap();
    assert_eq!(data.len(), 6 + (1 << 20));
    assert!(data.starts_with(b"hello x"));
    let names: Vec<_> = fs::read_dir(repo.root().join("db1/backup/B1"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec!["manifest.json"]);
}

#[test]
fn atomic_file_dropped_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::create(tmp.path()).unwrap();
    let mut f = repo.create_atomic("db1/wal/x").unwrap();
    f.write_all(b"partial").unwrap();
    drop(f);
    assert_eq!(
        fs::read_dir(repo.root().join("db1/wal")).unwrap().count(),
        0
    );
}

#[test]
fn write_atomic_replaces_whole_file() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::create(tmp.path()).unwrap();
    repo.write_atomic("f", b"first version, long").unwrap();
    repo.write_atomic("f", b"second").unwrap();
    assert_eq!(fs::read(repo.root().join("f")).unwrap(), b"second");
}

#[test]
fn atomic_paths_must_stay_inside() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::create(tmp.path()).unwrap();
    for rel in ["../escape", "/abs/path", "", "a/../../b", "./x"] {
        let Err(err) = repo.create_atomic(rel) else {
            panic!("{rel}: accepted");
        };
        assert!(
            matches!(&err, CatalogError::Media(m) if m.class == recman_media::ErrorClass::Permanent),
            "{rel}: {err}"
        );
    }
}

#[test]
fn layout_helpers() {
    assert_eq!(Repository::backup_dir("prod", "B1"), "prod/backup/B1");
    assert_eq!(
        Repository::wal_dir("prod", "000000010000000A00000003"),
        "prod/wal/000000010000000A"
    );
}

#[test]
fn an_unusable_cached_catalog_of_a_remote_repository_is_refilled() {
    // The catalog of a remote repository is a cache of its manifests: an empty or foreign file
    // there is set aside and the cache counts as new (refilled by the caller), not an error.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("remote");
    drop(Repository::create(&root).unwrap());
    let cache = tmp.path().join("cache");
    let media = || -> std::sync::Arc<dyn recman_media::Media> {
        std::sync::Arc::new(recman_media::disk::DiskMedia::new(&root).unwrap())
    };
    let (repo, fresh) =
        Repository::open_remote_with_catalog(media(), "remote", &cache, None).unwrap();
    assert!(fresh);
    drop(repo);
    let (repo, fresh) =
        Repository::open_remote_with_catalog(media(), "remote", &cache, None).unwrap();
    assert!(!fresh);
    drop(repo);
    for f in ["catalog.db-wal", "catalog.db-shm"] {
        let _ = fs::remove_file(cache.join(f));
    }
    fs::write(cache.join("catalog.db"), b"").unwrap();
    let (repo, fresh) =
        Repository::open_remote_with_catalog(media(), "remote", &cache, None).unwrap();
    assert!(fresh, "an empty cached catalog must be refilled");
    assert_eq!(repo.catalog().schema_version().unwrap(), SCHEMA_VERSION);
    assert!(
        fs::read_dir(&cache).unwrap().flatten().any(|e| e
            .file_name()
            .to_string_lossy()
            .starts_with("catalog.db.damaged-")),
        "the unusable cache file was not kept aside"
    );
}

#[test]
fn a_remote_cache_filled_from_another_repository_at_the_same_url_is_discarded() {
    // A bucket emptied and made a repository again keeps its URL, not its id: a cache filled
    // from the old repository must not describe the new one.
    let tmp = tempfile::tempdir().unwrap();
    let bucket = tmp.path().join("bucket");
    fs::create_dir(&bucket).unwrap();
    let media = || -> std::sync::Arc<dyn recman_media::Media> {
        std::sync::Arc::new(recman_media::disk::DiskMedia::new(&bucket).unwrap())
    };
    let empty_bucket = || {
        for e in fs::read_dir(&bucket).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                fs::remove_dir_all(p).unwrap();
            } else {
                fs::remove_file(p).unwrap();
            }
        }
    };
    let url = "s3://b/p";
    let here = tmp.path().join("here");
    let repo = Repository::create_remote(media(), url, &here).unwrap();
    let first = repo.id().unwrap().to_string();
    assert!(repo.cache_note().is_none());
    repo.catalog()
        .register_database("main", 1, 150000, "")
        .unwrap();
    drop(repo);
    let owner = fs::read_to_string(here.join("recman.cache")).unwrap();
    assert_eq!(owner, format!("{url}\nid {first}\n"));

    // Made again from another host, with its own cache: this host's is discarded at open.
    empty_bucket();
    let elsewhere = tmp.path().join("elsewhere");
    let second = Repository::create_remote(media(), url, &elsewhere).unwrap();
    let second_id = second.id().unwrap().to_string();
    assert_ne!(first, second_id);
    drop(second);
    let (repo, fresh) = Repository::open_remote(media(), url, &here).unwrap();
    assert!(fresh, "the discarded cache must be refilled by the caller");
    let note = repo.cache_note().unwrap();
    assert!(
        note.contains(&first) && note.contains(&second_id) && note.contains("discarded"),
        "{note}"
    );
    assert!(repo.catalog().databases().unwrap().is_empty());
    repo.catalog()
        .register_database("main", 2, 150000, "")
        .unwrap();
    drop(repo);
    // Opened again, the cache is the new repository's and is kept.
    let (repo, fresh) = Repository::open_remote(media(), url, &here).unwrap();
    assert!(!fresh && repo.cache_note().is_none());
    assert_eq!(repo.catalog().databases().unwrap()[0].system_identifier, 2);
    drop(repo);

    // Made again here: create catalog discards the cache as well.
    empty_bucket();
    let repo = Repository::create_remote(media(), url, &here).unwrap();
    assert!(repo.cache_note().is_some());
    assert!(repo.catalog().databases().unwrap().is_empty());
    drop(repo);

    // A repository and a cache of before ids: nothing to compare, the cache is used.
    empty_bucket();
    fs::write(
        bucket.join("recman.repo"),
        br#"{"format":"recman-repository","version":1,"created":"2026-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    let old = tmp.path().join("old");
    drop(Repository::open_remote(media(), url, &old).unwrap());
    assert_eq!(
        fs::read_to_string(old.join("recman.cache")).unwrap(),
        format!("{url}\n")
    );
    let (repo, fresh) = Repository::open_remote(media(), url, &old).unwrap();
    assert!(!fresh && repo.cache_note().is_none());
}
