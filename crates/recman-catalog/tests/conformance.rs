//! One conformance suite for both catalog engines: the embedded SQLite catalog and the shared
//! PostgreSQL catalog (a real PostgreSQL 15 server that the test starts and stops) must behave
//! the same through [`Catalog`]'s API. Every check runs on a fresh catalog of each engine.

use recman_catalog::{
    BackupRecord, BackupStatus, Catalog, CatalogError, CopyRecord, CorruptBlock, DeleteKind,
    IoStatRow, MediaStatus, PendingDelete, PieceRecord, SCHEMA_VERSION, WalRecord,
};

/// A check of the suite: it gets a fresh, empty catalog.
type Check = fn(&Catalog);

const CHECKS: &[(&str, Check)] = &[
    ("schema", schema),
    ("tables defined once", tables_defined_once),
    ("databases and clones", databases_and_clones),
    ("backups", backups),
    ("complete and fail", complete_and_fail),
    ("wal", wal),
    ("backup_wal", backup_wal),
    ("copies", copies),
    ("io stats", io_stats),
    ("config", config),
    ("deletions and crosscheck", deletions_and_crosscheck),
    ("block corruption and repairs", block_corruption),
    ("repository costs", repo_costs),
];

fn running(id: &str, db_id: i64, start_time: i64) -> BackupRecord {
    BackupRecord {
        id: id.to_string(),
        db_id,
        tag: "Tag20240501".to_string(),
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
        pid: u32::MAX,
        host: "db-host".to_string(),
        error: None,
    }
}

fn done(mut b: BackupRecord) -> BackupRecord {
    b.status = BackupStatus::Available;
    b.stop_lsn = Some(u64::try_from(i64::MAX).unwrap());
    b.stop_wal = Some("000000010000000100000002".to_string());
    b.stop_time = Some(b.start_time + 5_000_000);
    b.stop_next_xid = Some(742);
    b.written_bytes = 1 << 32;
    b.file_count = 1234;
    b
}

fn piece(backup: &str, set_no: u32, piece_no: u32) -> PieceRecord {
    PieceRecord {
        backup_id: backup.to_string(),
        set_no,
        piece_no,
        channel: set_no % 2,
        path: format!("main/backup/{backup}/set{set_no}-{piece_no}.rmp"),
        size: 1 << 40,
        crc32c: u32::MAX - set_no,
        file_count: 3,
        raw_bytes: 1 << 41,
    }
}

fn wal_rec(db_id: i64, name: &str, crc: u32) -> WalRecord {
    WalRecord {
        db_id,
        name: name.to_string(),
        timeline: name
            .get(..8)
            .and_then(|t| u32::from_str_radix(t, 16).ok())
            .unwrap_or(1),
        path: format!("main/wal/{name}.lz4"),
        size: 16 << 20,
        stored_size: 1 << 20,
        crc32c: crc,
        archived_at: 1_714_000_000_000_000,
    }
}

fn db(cat: &Catalog, name: &str) -> i64 {
    cat.register_database(name, 7_000_000_000_000_000_001, 150004, "/pg")
        .unwrap()
        .id
}

fn ids(v: &[BackupRecord]) -> Vec<&str> {
    v.iter().map(|b| b.id.as_str()).collect()
}

fn schema(cat: &Catalog) {
    assert_eq!(cat.schema_version().unwrap(), SCHEMA_VERSION);
    assert!(cat.databases().unwrap().is_empty());
}

/// Each table defined once for both engines (recman_catalog::tables) has, in either catalog,
/// the columns of its definition, in order, NOT NULL where it says so; later migrations may
/// only add columns after them.
fn tables_defined_once(cat: &Catalog) {
    assert!(!recman_catalog::tables::TABLES.is_empty());
    for (table, defined) in recman_catalog::tables::TABLES {
        let actual = cat.table_columns(table).unwrap();
        assert!(actual.len() >= defined.len(), "{table}: {actual:?}");
        let head: Vec<(&str, bool)> = actual[..defined.len()]
            .iter()
            .map(|(n, nn)| (n.as_str(), *nn))
            .collect();
        assert_eq!(head, *defined, "table {table}");
    }
}

fn databases_and_clones(cat: &Catalog) {
    // A system identifier above i64::MAX must survive exactly; clones share it.
    let big = u64::MAX - 5;
    let prod = cat
        .register_database("prod", big, 150004, "/var/lib/pg")
        .unwrap();
    assert!(prod.registered_at > 1_600_000_000_000_000);
    let clone = cat
        .register_database("prod_clone", big, 150004, "/srv/clone")
        .unwrap();
    let dev = cat.register_database("dev", 7, 160001, "/dev/pg").unwrap();
    assert_ne!(prod.id, clone.id);
    assert_eq!(cat.database("prod").unwrap(), Some(prod.clone()));
    assert_eq!(cat.database("nope").unwrap(), None);
    assert_eq!(cat.database_by_id(dev.id).unwrap(), Some(dev.clone()));
    assert_eq!(cat.database_by_id(-1).unwrap(), None);
    let names: Vec<_> = cat
        .databases()
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, ["dev", "prod", "prod_clone"]);
    assert_eq!(
        cat.databases_by_sysid(big).unwrap(),
        vec![prod.clone(), clone]
    );
    assert!(cat.databases_by_sysid(8).unwrap().is_empty());

    let err = cat.register_database("prod", 99, 150004, "/x").unwrap_err();
    assert!(
        matches!(err, CatalogError::NameTaken { registered_sysid, sysid: 99, .. } if registered_sysid == big),
        "{err}"
    );
    let err = cat
        .register_database("prod", big, 150004, "/x")
        .unwrap_err();
    assert!(
        matches!(err, CatalogError::AlreadyRegistered { .. }),
        "{err}"
    );
    assert_eq!(cat.databases().unwrap().len(), 3);
}

fn backups(cat: &Catalog) {
    let a = db(cat, "a");
    let b = db(cat, "b");
    // Ordered by start time, then id; ids of equal start sort bytewise ("B" < "a").
    for (id, start) in [
        ("20240501T1", 300),
        ("20240501T0", 100),
        ("B", 300),
        ("a", 300),
    ] {
        cat.insert_backup(&running(id, a, start)).unwrap();
    }
    cat.insert_backup(&running("other", b, 1)).unwrap();
    assert_eq!(
        ids(&cat.backups(a).unwrap()),
        ["20240501T0", "20240501T1", "B", "a"]
    );
    assert_eq!(ids(&cat.backups(b).unwrap()), ["other"]);
    let got = cat.backup("B").unwrap().unwrap();
    assert_eq!(
        got,
        BackupRecord {
            tag: "TAG20240501".into(),
            ..running("B", a, 300)
        }
    );
    assert_eq!(cat.backup("missing").unwrap(), None);
    // Tags are case-insensitive.
    assert_eq!(cat.backup_by_tag(a, "tag20240501").unwrap().len(), 4);
    assert!(cat.backup_by_tag(b, "nope").unwrap().is_empty());

    let mut upd = done(running("B", a, 300));
    upd.error = Some("note".into());
    cat.update_backup(&upd).unwrap();
    let got = cat.backup("B").unwrap().unwrap();
    assert_eq!(got.stop_lsn, Some(i64::MAX as u64));
    assert_eq!(got.error.as_deref(), Some("note"));
    assert_eq!(got.pid, u32::MAX);

    // Errors: a missing id, a duplicate id, a value beyond the catalog's integers.
    let err = cat.update_backup(&running("missing", a, 1)).unwrap_err();
    assert!(matches!(err, CatalogError::BackupNotFound { .. }), "{err}");
    assert!(cat.insert_backup(&running("B", a, 1)).is_err());
    let mut huge = running("huge", a, 1);
    huge.start_lsn = u64::MAX;
    let err = cat.insert_backup(&huge).unwrap_err();
    assert!(matches!(err, CatalogError::OutOfRange { .. }), "{err}");
    assert_eq!(cat.backup("huge").unwrap(), None);
}

fn complete_and_fail(cat: &Catalog) {
    let a = db(cat, "a");
    let b = db(cat, "b");
    cat.insert_backup(&running("b1", a, 10)).unwrap();
    cat.insert_backup(&running("b2", a, 20)).unwrap();
    cat.insert_backup(&running("b3", a, 30)).unwrap();
    cat.insert_backup(&running("x1", b, 30)).unwrap();
    let pieces = [piece("b1", 2, 1), piece("b1", 1, 2), piece("b1", 1, 1)];
    let corrupt = [
        CorruptBlock {
            backup_id: "b1".into(),
            path: "base/5/16384".into(),
            block: 9,
            kind: "checksum".into(),
            relation: Some("public.t".into()),
            detail: "expected 1, found 2".into(),
        },
        CorruptBlock {
            backup_id: "b1".into(),
            path: "base/5/16384".into(),
            block: 3,
            kind: "zeroed".into(),
            relation: None,
            detail: "all zero".into(),
        },
    ];
    cat.complete_backup(&done(running("b1", a, 10)), &pieces, &corrupt)
        .unwrap();
    assert_eq!(
        cat.backup("b1").unwrap().unwrap().status,
        BackupStatus::Available
    );
    let got = cat.pieces("b1").unwrap();
    let order: Vec<_> = got.iter().map(|p| (p.set_no, p.piece_no)).collect();
    assert_eq!(order, [(1, 1), (1, 2), (2, 1)]);
    assert_eq!(got[0], piece("b1", 1, 1));
    let blocks: Vec<_> = cat
        .corrupt_blocks("b1")
        .unwrap()
        .iter()
        .map(|c| c.block)
        .collect();
    assert_eq!(blocks, [3, 9]);
    assert_eq!(cat.corrupt_blocks("b1").unwrap()[0].relation, None);

    // All or nothing: a missing backup records no piece; a failing piece leaves RUNNING.
    let err = cat.complete_backup(&done(running("nope", a, 1)), &[piece("nope", 1, 1)], &[]);
    assert!(matches!(err, Err(CatalogError::BackupNotFound { .. })));
    assert!(cat.pieces("nope").unwrap().is_empty());
    let dup = [piece("b2", 1, 1), piece("b2", 1, 1)];
    assert!(
        cat.complete_backup(&done(running("b2", a, 20)), &dup, &[])
            .is_err()
    );
    assert_eq!(
        cat.backup("b2").unwrap().unwrap().status,
        BackupStatus::Running
    );
    assert!(cat.pieces("b2").unwrap().is_empty());

    let failed = cat.fail_running_backups(a, "interrupted").unwrap();
    assert_eq!(failed, ["b2", "b3"]);
    let b3 = cat.backup("b3").unwrap().unwrap();
    assert_eq!(b3.status, BackupStatus::Failed);
    assert_eq!(b3.error.as_deref(), Some("interrupted"));
    assert_eq!(
        cat.backup("x1").unwrap().unwrap().status,
        BackupStatus::Running
    );
    assert!(cat.fail_running_backups(a, "again").unwrap().is_empty());

    // A rebuilt record refuses an id already present, and records its pieces.
    cat.record_backup(&done(running("r1", a, 40)), &[piece("r1", 1, 1)], &[])
        .unwrap();
    assert_eq!(cat.pieces("r1").unwrap().len(), 1);
    assert!(
        cat.record_backup(&done(running("r1", a, 40)), &[], &[])
            .is_err()
    );
}

fn wal(cat: &Catalog) {
    let a = db(cat, "a");
    let b = db(cat, "b");
    for n in [
        "000000020000000000000001",
        "00000002.history",
        "000000010000000000000003",
    ] {
        cat.add_wal(&wal_rec(a, n, 1)).unwrap();
    }
    cat.add_wal(&wal_rec(b, "000000010000000000000003", 5))
        .unwrap();
    let names: Vec<_> = cat
        .wal_list(a)
        .unwrap()
        .into_iter()
        .map(|w| w.name)
        .collect();
    assert_eq!(
        names,
        [
            "000000010000000000000003",
            "00000002.history",
            "000000020000000000000001"
        ]
    );
    // Archived again: the record is replaced.
    let mut again = wal_rec(a, "000000010000000000000003", u32::MAX);
    again.stored_size = 77;
    cat.add_wal(&again).unwrap();
    assert_eq!(cat.wal(a, "000000010000000000000003").unwrap(), Some(again));
    assert_eq!(
        cat.wal(b, "000000010000000000000003")
            .unwrap()
            .unwrap()
            .crc32c,
        5
    );
    assert_eq!(cat.wal(a, "nope").unwrap(), None);
    let states = cat.wal_states(a).unwrap();
    assert!(states.iter().all(|(_, s)| *s == MediaStatus::Available));
    assert_eq!(states.len(), 3);
}

fn backup_wal(cat: &Catalog) {
    let a = db(cat, "a");
    let seg = |i: u32| format!("0000000100000000000000{i:02X}");
    cat.insert_backup(&running("w1", a, 10)).unwrap();
    cat.insert_backup(&running("w2", a, 20)).unwrap();
    let held1 = [(seg(2), 1), (seg(1), 1)];
    cat.complete_wal_backup(&done(running("w1", a, 10)), &[piece("w1", 1, 1)], &held1)
        .unwrap();
    cat.complete_wal_backup(&done(running("w2", a, 20)), &[], &[(seg(2), 3)])
        .unwrap();
    assert_eq!(cat.backup_wal("w1").unwrap(), [(seg(1), 1), (seg(2), 1)]);
    assert_eq!(
        cat.wal_backup_sources(a, &seg(2)).unwrap(),
        [("w2".to_string(), 3), ("w1".to_string(), 1)]
    );
    let counts = cat.wal_backup_counts(a).unwrap();
    assert_eq!((counts[&seg(1)], counts[&seg(2)]), (1, 2));
    // Recording the same pair again keeps one.
    cat.add_backup_wal("w1", a, &[(seg(1), 1), (seg(3), 2)])
        .unwrap();
    assert_eq!(cat.backup_wal("w1").unwrap().len(), 3);
    let err = cat.complete_wal_backup(&done(running("nope", a, 1)), &[], &[(seg(1), 1)]);
    assert!(matches!(err, Err(CatalogError::BackupNotFound { .. })));
    cat.record_wal_backup(&done(running("w3", a, 30)), &[], &[(seg(4), 1)])
        .unwrap();
    assert_eq!(
        cat.wal_backup_sources(a, &seg(4)).unwrap(),
        [("w3".to_string(), 1)]
    );
    assert!(
        cat.record_wal_backup(&done(running("w3", a, 30)), &[], &[])
            .is_err()
    );
}

fn copy(object: &str, device: &str, primary: bool) -> CopyRecord {
    CopyRecord {
        object: object.into(),
        device: device.into(),
        name: format!("{device}:{object}"),
        size: 1 << 35,
        crc32c: u32::MAX,
        primary,
        created: 42,
    }
}

fn copies(cat: &Catalog) {
    cat.add_copy(&copy("main/backup/B1/p1", "sbt", false))
        .unwrap();
    cat.add_copy(&copy("main/backup/B1/p1", "disk", false))
        .unwrap();
    cat.add_copy(&copy("main/backup/B1/p1", "s3", true))
        .unwrap();
    cat.add_copy(&copy("main/backup/B1x/p1", "sbt", false))
        .unwrap();
    cat.add_copy(&copy("main/backup/b1/p2", "sbt", false))
        .unwrap();
    let devices: Vec<_> = cat
        .copies_of("main/backup/B1/p1")
        .unwrap()
        .into_iter()
        .map(|c| c.device)
        .collect();
    assert_eq!(devices, ["s3", "disk", "sbt"]);
    // Replaced, not doubled.
    let mut newer = copy("main/backup/B1/p1", "sbt", false);
    newer.name = "renamed".into();
    cat.add_copy(&newer).unwrap();
    assert_eq!(cat.copies_of("main/backup/B1/p1").unwrap().len(), 3);
    assert_eq!(cat.copies_of("main/backup/B1/p1").unwrap()[2], newer);
    // Under a directory: neither its longer sibling nor another case.
    let under = cat.copies_under("main/backup/B1/").unwrap();
    assert_eq!(under.len(), 3);
    assert!(under.iter().all(|c| c.object == "main/backup/B1/p1"));
    assert!(cat.copies_under("main/backup/b1_").unwrap().is_empty());
    assert!(cat.remove_copy("main/backup/B1/p1", "disk").unwrap());
    assert!(!cat.remove_copy("main/backup/B1/p1", "disk").unwrap());
    assert!(cat.copies_of("nothing").unwrap().is_empty());
}

fn io_row(job: &str, kind: &str, bytes: u64) -> IoStatRow {
    IoStatRow {
        job_id: job.into(),
        job_type: "BACKUP".into(),
        backup_id: Some("B1".into()),
        kind: kind.into(),
        io_mode: "uring".into(),
        channel: 1,
        set_no: Some(2),
        piece_no: None,
        filename: Some("base/1/2".into()),
        open_time: 1_000_000,
        close_time: 3_000_000,
        io_count: 10,
        ready: 1,
        short_waits: 2,
        short_wait_time: 3,
        long_waits: 4,
        long_wait_time: 5,
        bytes,
        buffer_size: 1 << 20,
        buffer_count: 4,
        io_time: 6,
        ring_submissions: 7,
        throttle_time: 8,
        cpu_time: 9,
        cpu_wait_time: 10,
        device: Some("s3".into()),
        read_mode: Some("direct".into()),
    }
}

fn io_stats(cat: &Catalog) {
    cat.add_calibration(5, "/pg", "{\"a\":1}").unwrap();
    let cal = cat.calibrations().unwrap();
    assert_eq!(cal.len(), 1);
    assert_eq!(
        (
            cal[0].taken_at,
            cal[0].pgdata.as_str(),
            cal[0].body.as_str()
        ),
        (5, "/pg", "{\"a\":1}")
    );
    let rows = [io_row("B1", "INPUT", 1 << 40), io_row("B1", "OUTPUT", 5)];
    cat.add_io_stats(&rows).unwrap();
    let mut v = io_row("V1", "AGGREGATE", 9);
    v.job_type = "VALIDATE".into();
    v.set_no = None;
    cat.add_io_stats(&[v.clone()]).unwrap();
    assert_eq!(cat.io_stats("B1").unwrap(), rows);
    assert_eq!(cat.io_stats("V1").unwrap(), [v]);
    assert!(cat.io_stats("none").unwrap().is_empty());
    assert_eq!(
        cat.io_jobs_of_backup("B1").unwrap(),
        [
            ("B1".to_string(), "BACKUP".to_string()),
            ("V1".to_string(), "VALIDATE".to_string())
        ]
    );
    let mut bad = io_row("X", "INPUT", u64::MAX);
    bad.bytes = u64::MAX;
    assert!(matches!(
        cat.add_io_stats(&[io_row("X", "INPUT", 1), bad]),
        Err(CatalogError::OutOfRange { .. })
    ));
    assert!(
        cat.io_stats("X").unwrap().is_empty(),
        "a failed job records nothing"
    );
}

fn config(cat: &Catalog) {
    assert_eq!(cat.config("retention").unwrap(), None);
    cat.set_config("retention", "redundancy 2").unwrap();
    cat.set_config("retention", "window 7").unwrap();
    cat.set_config("device.sbt.parms", "vtape:/srv/vtape")
        .unwrap();
    assert_eq!(
        cat.config("retention").unwrap().as_deref(),
        Some("window 7")
    );
    assert_eq!(
        cat.config_all().unwrap(),
        [
            (
                "device.sbt.parms".to_string(),
                "vtape:/srv/vtape".to_string()
            ),
            ("retention".to_string(), "window 7".to_string())
        ]
    );
    assert!(cat.clear_config("retention").unwrap());
    assert!(!cat.clear_config("retention").unwrap());
    assert_eq!(cat.config("retention").unwrap(), None);
}

fn deletions_and_crosscheck(cat: &Catalog) {
    let a = db(cat, "a");
    let b = db(cat, "b");
    cat.insert_backup(&running("d1", a, 10)).unwrap();
    cat.complete_backup(
        &done(running("d1", a, 10)),
        &[piece("d1", 1, 1), piece("d1", 1, 2)],
        &[],
    )
    .unwrap();
    // Crosscheck: one piece missing expires the backup; found again, it is AVAILABLE.
    let st = cat
        .set_piece_statuses("d1", &[(1, 2, MediaStatus::Expired)])
        .unwrap();
    assert_eq!(st, BackupStatus::Expired);
    let states: Vec<_> = cat
        .piece_states("d1")
        .unwrap()
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert_eq!(states, [MediaStatus::Available, MediaStatus::Expired]);
    let st = cat
        .set_piece_statuses("d1", &[(1, 2, MediaStatus::Available)])
        .unwrap();
    assert_eq!(st, BackupStatus::Available);
    let err = cat.set_piece_statuses("nope", &[]).unwrap_err();
    assert!(matches!(err, CatalogError::BackupNotFound { .. }), "{err}");

    cat.add_wal(&wal_rec(a, "000000010000000000000001", 1))
        .unwrap();
    cat.add_wal(&wal_rec(a, "000000010000000000000002", 1))
        .unwrap();
    let del = |kind, db_id, key: &str| PendingDelete {
        kind,
        db_id,
        key: key.into(),
        path: format!("main/{key}"),
    };
    let items = [
        del(DeleteKind::Backup, a, "d1"),
        del(DeleteKind::Wal, a, "000000010000000000000001"),
    ];
    cat.begin_delete(&items).unwrap();
    cat.begin_delete(&[del(DeleteKind::Wal, b, "000000010000000000000009")])
        .unwrap();
    assert_eq!(
        cat.backup("d1").unwrap().unwrap().status,
        BackupStatus::Expired
    );
    let pending = cat.pending_deletes(Some(a)).unwrap();
    assert_eq!(pending, items);
    assert_eq!(cat.pending_deletes(None).unwrap().len(), 3);
    // Found on the media meanwhile: a deletion in progress keeps it EXPIRED.
    cat.set_wal_statuses(
        a,
        &[
            ("000000010000000000000001".into(), MediaStatus::Available),
            ("000000010000000000000002".into(), MediaStatus::Expired),
        ],
    )
    .unwrap();
    let st: Vec<_> = cat
        .wal_states(a)
        .unwrap()
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert_eq!(st, [MediaStatus::Expired, MediaStatus::Expired]);
    assert_eq!(
        cat.set_piece_statuses("d1", &[]).unwrap(),
        BackupStatus::Expired
    );

    for it in &items {
        cat.finish_delete(it).unwrap();
    }
    assert_eq!(cat.backup("d1").unwrap(), None);
    assert!(
        cat.pieces("d1").unwrap().is_empty(),
        "pieces go with their backup"
    );
    assert!(cat.pending_deletes(Some(a)).unwrap().is_empty());
    assert_eq!(cat.pending_deletes(None).unwrap().len(), 1);

    // DELETE EXPIRED removes EXPIRED records only.
    cat.insert_backup(&done(running("e1", a, 50))).unwrap();
    cat.insert_backup(&BackupRecord {
        status: BackupStatus::Expired,
        ..done(running("e2", a, 60))
    })
    .unwrap();
    let n = cat
        .delete_expired_records(
            a,
            &["e1".into(), "e2".into()],
            &["000000010000000000000002".into()],
        )
        .unwrap();
    assert_eq!(n, (1, 1));
    assert_eq!(ids(&cat.backups(a).unwrap()), ["e1"]);
    // Archived again after the deletion began: the new copy stays.
    cat.begin_delete(&[del(DeleteKind::Wal, a, "000000010000000000000007")])
        .unwrap();
    cat.add_wal(&wal_rec(a, "000000010000000000000007", 1))
        .unwrap();
    assert!(cat.pending_deletes(Some(a)).unwrap().is_empty());
}

/// validate database's list replaces the last one; a repair takes its block off the list.
fn block_corruption(cat: &Catalog) {
    let a = db(cat, "a");
    let bad = |path: &str, block: u32| CorruptBlock {
        backup_id: String::new(),
        path: path.into(),
        block,
        kind: "checksum".into(),
        relation: Some("public.t".into()),
        detail: "checksum mismatch".into(),
    };
    cat.set_block_corruption(a, &[bad("base/5/1", 9), bad("base/5/1", 2)])
        .unwrap();
    let found: Vec<(String, u32)> = cat
        .block_corruption(a)
        .unwrap()
        .into_iter()
        .map(|c| (c.path, c.block))
        .collect();
    assert_eq!(found, [("base/5/1".into(), 2), ("base/5/1".into(), 9)]);
    let repair = recman_catalog::BlockRepair {
        path: "base/5/1".into(),
        block: 9,
        backup_id: "B1".into(),
        page_lsn: 0x40A_8E70,
        recovered_to_lsn: 0x500_0028,
        repaired_at: 1_700_000_000_000_000,
    };
    cat.record_block_repair(a, &repair).unwrap();
    assert_eq!(cat.block_repairs(a).unwrap(), [repair]);
    assert_eq!(cat.block_corruption(a).unwrap(), [bad("base/5/1", 2)]);
    cat.set_block_corruption(a, &[]).unwrap();
    assert!(cat.block_corruption(a).unwrap().is_empty());
}

fn repo_costs(cat: &Catalog) {
    use recman_catalog::CostScope;
    use recman_media::meter::{Kind, KindUsage, Usage};
    let a = db(cat, "a");
    let usage = |kind: Kind, requests: u64, sent: u64, received: u64| {
        let mut u = Usage::default();
        let ku = KindUsage {
            requests,
            bytes_sent: sent,
            bytes_received: received,
        };
        u.set(kind, ku);
        u
    };
    cat.add_costs(a, CostScope::Backup, "B1", &usage(Kind::Put, 4, 9000, 0), 1)
        .unwrap();
    // A day of archiving is summed over its commands, kind by kind.
    let day = "2026-11-29";
    cat.add_costs(a, CostScope::Archive, day, &usage(Kind::Put, 1, 100, 0), 2)
        .unwrap();
    cat.add_costs(a, CostScope::Archive, day, &usage(Kind::Put, 2, 50, 0), 3)
        .unwrap();
    cat.add_costs(a, CostScope::Archive, day, &usage(Kind::Head, 3, 0, 0), 4)
        .unwrap();
    let rows = cat.costs(a).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].scope, rows[0].key.as_str()),
        (CostScope::Backup, "B1")
    );
    assert_eq!(rows[0].usage, usage(Kind::Put, 4, 9000, 0));
    assert_eq!(
        (rows[1].scope, rows[1].key.as_str()),
        (CostScope::Archive, day)
    );
    let mut both = usage(Kind::Put, 3, 150, 0);
    both.set(Kind::Head, usage(Kind::Head, 3, 0, 0).of(Kind::Head));
    assert_eq!(rows[1].usage, both);
    assert_eq!(rows[1].updated_at, 4);
    assert!(cat.costs(db(cat, "b")).unwrap().is_empty());
}

fn run_checks(mut fresh: impl FnMut(&str) -> Catalog) {
    for (name, check) in CHECKS {
        eprintln!("conformance: {name}");
        check(&fresh(name));
    }
}

#[test]
fn sqlite_catalog_conforms() {
    let tmp = tempfile::tempdir().unwrap();
    run_checks(|name| Catalog::create(&tmp.path().join(format!("{name}.db"))).unwrap());
}

#[test]
fn postgres_catalog_conforms_and_keeps_repositories_apart() {
    let server = recman_testkit::PgServer::start();
    let url = server.url();
    run_checks(|name| Catalog::open_postgres(&url, &format!("/srv/conformance/{name}")).unwrap());

    // Several processes opening a new repository at once: one migrates, all succeed.
    let opens: Vec<_> = (0..6)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                Catalog::open_postgres(&url, "s3://bucket/new").map(|c| c.schema_version().unwrap())
            })
        })
        .collect();
    for t in opens {
        assert_eq!(t.join().unwrap().unwrap(), SCHEMA_VERSION);
    }

    // Two repositories share the catalog and never see each other's rows; the same cluster
    // may be registered in both under the same name.
    let one = Catalog::open_postgres(&url, "/srv/backup/one").unwrap();
    let two = Catalog::open_postgres(&url, "s3://bucket/two").unwrap();
    let d1 = one.register_database("main", 42, 150004, "/pg").unwrap();
    let d2 = two.register_database("main", 42, 150004, "/pg").unwrap();
    one.insert_backup(&done(running("ONE", d1.id, 1))).unwrap();
    two.insert_backup(&done(running("TWO", d2.id, 1))).unwrap();
    one.set_config("retention", "one").unwrap();
    one.add_copy(&copy("main/backup/ONE/p1", "sbt", false))
        .unwrap();
    assert_eq!(ids(&one.backups(d1.id).unwrap()), ["ONE"]);
    assert_eq!(ids(&two.backups(d2.id).unwrap()), ["TWO"]);
    assert_eq!(two.backup("ONE").unwrap(), None);
    assert_eq!(two.config("retention").unwrap(), None);
    assert!(two.copies_of("main/backup/ONE/p1").unwrap().is_empty());
    assert_eq!(two.databases().unwrap(), vec![d2.clone()]);
    // Reopened, a repository finds its rows again; concurrent writers of one repository
    // queue on its writer lock and lose nothing.
    let again = Catalog::open_postgres(&url, "/srv/backup/one").unwrap();
    assert_eq!(again.backup("ONE").unwrap().unwrap().id, "ONE");
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let url = url.clone();
            std::thread::spawn(move || {
                let c = Catalog::open_postgres(&url, "/srv/backup/one").unwrap();
                for i in 0..10 {
                    let name = format!("0000000100000000000000{:02X}", t * 10 + i);
                    c.add_wal(&wal_rec(1_000_000, &name, 1)).unwrap_err();
                    c.add_wal(&wal_rec(d1.id, &name, 1)).unwrap();
                    c.register_database(&format!("w{t}"), 9, 150004, "/pg").ok();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(again.wal_list(d1.id).unwrap().len(), 40);
    assert_eq!(again.databases().unwrap().len(), 5);
    assert!(two.wal_list(d2.id).unwrap().is_empty());
    drop(server);
}
