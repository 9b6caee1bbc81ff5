//! Catalog round trips: databases, backups, pieces, corrupt blocks, WAL.

use recman_catalog::{
    BackupRecord, BackupStatus, Catalog, CatalogError, CorruptBlock, PieceRecord, Repository,
    WalRecord,
};

fn repo() -> (tempfile::TempDir, Repository) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::create(&tmp.path().join("repo")).unwrap();
    (tmp, repo)
}

fn running(id: &str, db_id: i64, start_time: i64) -> BackupRecord {
    BackupRecord {
        id: id.to_string(),
        db_id,
        tag: "TAG20240501T100000".to_string(),
        backup_type: "FULL".to_string(),
        status: BackupStatus::Running,
        start_lsn: 0x1_0000_0028,
        stop_lsn: None,
        timeline: 1,
        start_wal: "000000010000000100000000".to_string(),
        stop_wal: None,
        start_time,
        stop_time: None,
        stop_next_xid: None,
        db_bytes: 1 << 33,
        written_bytes: 0,
        file_count: 0,
        channels: 4,
        compression: "lz4".to_string(),
        filesperset: 64,
        maxopenfiles: 8,
        pid: 4242,
        host: "db-host".to_string(),
        error: None,
    }
}

#[test]
fn register_and_look_up_databases() {
    let (_t, repo) = repo();
    let cat = repo.catalog();
    // A system identifier above i64::MAX must survive the round trip exactly.
    let big = u64::MAX - 5;
    let prod = cat
        .register_database("prod", big, 150004, "/var/lib/pg/15/main")
        .unwrap();
    assert!(prod.registered_at > 1_600_000_000_000_000);
    let prod2 = cat
        .register_database("prod_copy", big, 150004, "/srv/copy")
        .unwrap();
    let dev = cat.register_database("dev", 7, 160001, "/dev/pg").unwrap();

    assert_eq!(cat.database("prod").unwrap(), Some(prod.clone()));
    assert_eq!(cat.database("nope").unwrap(), None);
    assert_eq!(cat.database_by_id(dev.id).unwrap(), Some(dev.clone()));
    let names: Vec<_> = cat
        .databases()
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, ["dev", "prod", "prod_copy"]);
    assert_eq!(cat.databases_by_sysid(big).unwrap(), vec![prod, prod2]);
    assert!(cat.databases_by_sysid(8).unwrap().is_empty());
}

#[test]
fn register_refuses_taken_name_and_duplicate() {
    let (_t, repo) = repo();
    let cat = repo.catalog();
    cat.register_database("prod", 100, 150004, "/a").unwrap();

    let err = cat
        .register_database("prod", 200, 150004, "/b")
        .unwrap_err();
    assert!(matches!(
        err,
        CatalogError::NameTaken {
            registered_sysid: 100,
            sysid: 200,
            ..
        }
    ));
    let msg = err.to_string();
    assert!(
        msg.contains("\"prod\"") && msg.contains("100") && msg.contains("hint:"),
        "{msg}"
    );

    let err = cat
        .register_database("prod", 100, 150004, "/a")
        .unwrap_err();
    assert!(matches!(err, CatalogError::AlreadyRegistered { .. }));
    assert!(err.to_string().contains("already registered"), "{err}");
    assert_eq!(cat.databases().unwrap().len(), 1);
}

#[test]
fn backup_insert_update_and_lists() {
    let (_t, repo) = repo();
    let cat = repo.catalog();
    let db = cat.register_database("prod", 1, 150004, "/a").unwrap();
    let other = cat.register_database("other", 2, 150004, "/b").unwrap();

    let b2 = running("B2", db.id, 2_000);
    let mut b1 = running("B1", db.id, 1_000);
    b1.tag = "Weekly".to_string();
    cat.insert_backup(&b2).unwrap();
    cat.insert_backup(&b1).unwrap();
    cat.insert_backup(&running("X1", other.id, 500)).unwrap();

    let got = cat.backup("B1").unwrap().unwrap();
    assert_eq!(got.tag, "WEEKLY", "tags are stored uppercase");
    assert_eq!(
        BackupRecord {
            tag: "WEEKLY".into(),
            ..b1.clone()
        },
        got
    );
    assert_eq!(cat.backup("missing").unwrap(), None);

    let ids: Vec<_> = cat
        .backups(db.id)
        .unwrap()
        .into_iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(ids, ["B1", "B2"], "oldest first");
    let tagged = cat.backup_by_tag(db.id, "weekly").unwrap();
    assert_eq!(tagged.len(), 1);
    assert_eq!(tagged[0].id, "B1");
    assert!(cat.backup_by_tag(other.id, "WEEKLY").unwrap().is_empty());

    let mut done = b2.clone();
    done.status = BackupStatus::Available;
    done.stop_lsn = Some(0x2_0000_0100);
    done.stop_wal = Some("000000010000000200000000".into());
    done.stop_time = Some(3_000);
    done.stop_next_xid = Some(u32::MAX as u64 + 10);
    done.written_bytes = 12345;
    done.file_count = 900;
    done.tag = "TAG20240501T100000".into();
    cat.update_backup(&done).unwrap();
    assert_eq!(cat.backup("B2").unwrap().unwrap(), done);

    let err = cat.update_backup(&running("ghost", db.id, 1)).unwrap_err();
    assert!(matches!(err, CatalogError::BackupNotFound { .. }), "{err}");
    // A duplicate id is refused rather than overwriting the first backup.
    let err = cat.insert_backup(&b1).unwrap_err();
    assert!(matches!(err, CatalogError::Sqlite { .. }), "{err}");
    assert!(err.to_string().contains("recording backup B1"), "{err}");
    assert!(err.to_string().contains("conflicts"), "{err}");
}

#[test]
fn lsn_beyond_i64_is_refused_with_a_clear_error() {
    let (_t, repo) = repo();
    let cat = repo.catalog();
    let db = cat.register_database("prod", 1, 150004, "/a").unwrap();
    let mut b = running("B1", db.id, 1);
    b.start_lsn = u64::MAX;
    let err = cat.insert_backup(&b).unwrap_err();
    assert!(
        matches!(
            err,
            CatalogError::OutOfRange {
                what: "start lsn",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(cat.backup("B1").unwrap(), None);
}

#[test]
fn fail_running_backups_marks_only_running_of_that_database() {
    let (_t, repo) = repo();
    let cat = repo.catalog();
    let db = cat.register_database("prod", 1, 150004, "/a").unwrap();
    let other = cat.register_database("other", 2, 150004, "/b").unwrap();
    cat.insert_backup(&running("R1", db.id, 1)).unwrap();
    cat.insert_backup(&running("R2", db.id, 2)).unwrap();
    let mut ok = running("OK", db.id, 3);
    ok.status = BackupStatus::Available;
    cat.insert_backup(&ok).unwrap();
    cat.insert_backup(&running("O1", other.id, 4)).unwrap();

    let failed = cat
        .fail_running_backups(db.id, "interrupted: process gone")
        .unwrap();
    assert_eq!(failed, ["R1", "R2"]);
    for id in ["R1", "R2"] {
        let b = cat.backup(id).unwrap().unwrap();
        assert_eq!(b.status, BackupStatus::Failed);
        assert_eq!(b.error.as_deref(), Some("interrupted: process gone"));
    }
    assert_eq!(cat.backup("OK").unwrap().unwrap(), ok);
    assert_eq!(
        cat.backup("O1").unwrap().unwrap().status,
        BackupStatus::Running
    );
    assert!(cat.fail_running_backups(db.id, "again").unwrap().is_empty());
}

fn piece(backup: &str, set_no: u32, piece_no: u32) -> PieceRecord {
    PieceRecord {
        backup_id: backup.into(),
        set_no,
        piece_no,
        channel: set_no % 2,
        path: format!("prod/backup/{backup}/s{set_no}p{piece_no}"),
        size: 5 << 30,
        crc32c: 0xdead_beef,
        file_count: 12,
        raw_bytes: 6 << 30,
    }
}

#[test]
fn complete_backup_records_everything_at_once() {
    let (_t, repo) = repo();
    let cat = repo.catalog();
    let db = cat.register_database("prod", 1, 150004, "/a").unwrap();
    let b = running("B1", db.id, 1);
    cat.insert_backup(&b).unwrap();

    let pieces = vec![piece("B1", 2, 1), piece("B1", 1, 2), piece("B1", 1, 1)];
    let corrupt = vec![CorruptBlock {
        backup_id: "B1".into(),
        path: "base/5/16384".into(),
        block: 7,
        kind: "checksum".into(),
        relation: Some("public.t".into()),
        detail: "expected 0x1234, found 0x4321".into(),
    }];
    let mut done = b.clone();
    done.status = BackupStatus::Available;
    done.stop_lsn = Some(99);
    cat.complete_backup(&done, &pieces, &corrupt).unwrap();

    assert_eq!(cat.backup("B1").unwrap().unwrap(), done);
    let got = cat.pieces("B1").unwrap();
    assert_eq!(
        got,
        vec![piece("B1", 1, 1), piece("B1", 1, 2), piece("B1", 2, 1)]
    );
    assert_eq!(cat.corrupt_blocks("B1").unwrap(), corrupt);
    assert!(cat.pieces("other").unwrap().is_empty());
}

#[test]
fn complete_backup_is_all_or_nothing() {
    let (_t, repo) = repo();
    let cat = repo.catalog();
    let db = cat.register_database("prod", 1, 150004, "/a").unwrap();
    let b = running("B1", db.id, 1);
    cat.insert_backup(&b).unwrap();
    let mut done = b.clone();
    done.status = BackupStatus::Available;
    // The same piece twice violates the key: nothing of the completion may stick.
    let pieces = vec![piece("B1", 1, 1), piece("B1", 1, 1)];
    assert!(cat.complete_backup(&done, &pieces, &[]).is_err());
    assert_eq!(
        cat.backup("B1").unwrap().unwrap().status,
        BackupStatus::Running
    );
    assert!(cat.pieces("B1").unwrap().is_empty());

    let err = cat
        .complete_backup(&running("ghost", db.id, 1), &[piece("ghost", 1, 1)], &[])
        .unwrap_err();
    assert!(matches!(err, CatalogError::BackupNotFound { .. }), "{err}");
    assert!(cat.pieces("ghost").unwrap().is_empty());
}

fn wal(db_id: i64, name: &str, crc: u32) -> WalRecord {
    WalRecord {
        db_id,
        name: name.into(),
        timeline: u32::from_str_radix(&name[..8], 16).unwrap(),
        path: format!("prod/wal/{}/{name}", &name[..name.len().min(16)]),
        size: 16 << 20,
        stored_size: 3 << 20,
        crc32c: crc,
        archived_at: 1_700_000_000_000_000,
    }
}

#[test]
fn wal_upsert_and_ordered_list() {
    let (_t, repo) = repo();
    let cat = repo.catalog();
    let db = cat.register_database("prod", 1, 150004, "/a").unwrap();
    let other = cat.register_database("other", 2, 150004, "/b").unwrap();
    let names = [
        "000000020000000000000004",
        "000000010000000000000003",
        "00000002.history",
        "000000010000000000000004",
    ];
    for n in names {
        cat.add_wal(&wal(db.id, n, 1)).unwrap();
    }
    cat.add_wal(&wal(other.id, "000000010000000000000001", 1))
        .unwrap();

    let listed: Vec<_> = cat
        .wal_list(db.id)
        .unwrap()
        .into_iter()
        .map(|w| w.name)
        .collect();
    assert_eq!(
        listed,
        [
            "000000010000000000000003",
            "000000010000000000000004",
            "00000002.history",
            "000000020000000000000004",
        ]
    );

    let mut again = wal(db.id, "000000010000000000000003", 2);
    again.stored_size = 1;
    cat.add_wal(&again).unwrap();
    assert_eq!(
        cat.wal(db.id, "000000010000000000000003").unwrap(),
        Some(again)
    );
    assert_eq!(cat.wal_list(db.id).unwrap().len(), 4);
    assert_eq!(cat.wal(other.id, "000000010000000000000003").unwrap(), None);
}

#[test]
fn config_round_trip() {
    let (_t, repo) = repo();
    let cat = repo.catalog();
    assert_eq!(cat.config("retention").unwrap(), None);
    cat.set_config("retention", "redundancy 1").unwrap();
    cat.set_config("retention", "recovery window of 7 days")
        .unwrap();
    assert_eq!(
        cat.config("retention").unwrap().as_deref(),
        Some("recovery window of 7 days")
    );
    assert!(cat.clear_config("retention").unwrap());
    assert!(!cat.clear_config("retention").unwrap());
}

#[test]
fn reader_sees_committed_writes_of_another_connection() {
    let (_t, repo) = repo();
    let reader = Catalog::open(repo.catalog().path()).unwrap();
    let db = repo
        .catalog()
        .register_database("prod", 1, 150004, "/a")
        .unwrap();
    assert_eq!(reader.database("prod").unwrap(), Some(db));
}

#[test]
fn reader_is_not_blocked_by_an_open_write_transaction() {
    let (_t, repo) = repo();
    let db = repo
        .catalog()
        .register_database("prod", 1, 150004, "/a")
        .unwrap();
    let writer = rusqlite::Connection::open(repo.catalog().path()).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    writer
        .execute(
            "UPDATE database SET pgdata = 'uncommitted' WHERE id = ?1",
            [db.id],
        )
        .unwrap();
    // WAL mode: the reader sees the last committed state without waiting for the writer,
    // which commits only after this read (in this same thread): a reader that waited would
    // fail with "database is locked" at its busy timeout instead of returning.
    assert_eq!(repo.catalog().database("prod").unwrap(), Some(db.clone()));
    writer.execute_batch("COMMIT").unwrap();
    assert_eq!(
        repo.catalog().database("prod").unwrap().unwrap().pgdata,
        "uncommitted"
    );
}

#[test]
fn status_strings() {
    for s in BackupStatus::ALL {
        assert_eq!(s.as_str().parse::<BackupStatus>().unwrap(), s);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            format!("\"{}\"", s.as_str())
        );
    }
    assert_eq!(
        "available".parse::<BackupStatus>().unwrap(),
        BackupStatus::Available
    );
    assert!("DONE".parse::<BackupStatus>().is_err());
}
