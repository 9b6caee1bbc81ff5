//! Crosscheck statuses, the two-phase deletion journal and records rebuilt from manifests.

use recman_catalog::{
    BackupRecord, BackupStatus, DeleteKind, MediaStatus, PendingDelete, PieceRecord, Repository,
    WalRecord,
};

fn backup(id: &str, db_id: i64) -> BackupRecord {
    BackupRecord {
        id: id.into(),
        db_id,
        tag: "T".into(),
        backup_type: "FULL".into(),
        status: BackupStatus::Available,
        start_lsn: 40,
        stop_lsn: Some(80),
        timeline: 1,
        start_wal: "000000010000000000000001".into(),
        stop_wal: Some("000000010000000000000001".into()),
        start_time: 1,
        stop_time: Some(2),
        stop_next_xid: Some(700),
        db_bytes: 10,
        written_bytes: 10,
        file_count: 1,
        channels: 1,
        compression: "none".into(),
        filesperset: 64,
        maxopenfiles: 8,
        pid: 0,
        host: String::new(),
        error: None,
    }
}

fn piece(id: &str, set_no: u32) -> PieceRecord {
    PieceRecord {
        backup_id: id.into(),
        set_no,
        piece_no: 1,
        channel: 1,
        path: format!("main/backup/{id}/{set_no}.rmp"),
        size: 5,
        crc32c: 9,
        file_count: 1,
        raw_bytes: 5,
    }
}

#[test]
fn statuses_journal_and_rebuilt_records() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::create(&tmp.path().join("r")).unwrap();
    let cat = repo.catalog();
    let db = cat.register_database("main", 1, 150000, "/pg").unwrap();
    cat.record_backup(&backup("B1", db.id), &[piece("B1", 1), piece("B1", 2)], &[])
        .unwrap();
    assert!(cat.record_backup(&backup("B1", db.id), &[], &[]).is_err());

    let st = cat
        .set_piece_statuses("B1", &[(2, 1, MediaStatus::Expired)])
        .unwrap();
    assert_eq!(st, BackupStatus::Expired);
    let st = cat
        .set_piece_statuses("B1", &[(2, 1, MediaStatus::Available)])
        .unwrap();
    assert_eq!(st, BackupStatus::Available);

    let w = WalRecord {
        db_id: db.id,
        name: "000000010000000000000001".into(),
        timeline: 1,
        path: "main/wal/x.rmw".into(),
        size: 16,
        stored_size: 8,
        crc32c: 1,
        archived_at: 1,
    };
    cat.add_wal(&w).unwrap();
    let items = [
        PendingDelete {
            kind: DeleteKind::Backup,
            db_id: db.id,
            key: "B1".into(),
            path: "main/backup/B1".into(),
        },
        PendingDelete {
            kind: DeleteKind::Wal,
            db_id: db.id,
            key: w.name.clone(),
            path: w.path.clone(),
        },
    ];
    cat.begin_delete(&items).unwrap();
    // Mid-deletion nothing is claimed AVAILABLE, and crosscheck cannot revive it.
    assert_eq!(
        cat.backup("B1").unwrap().unwrap().status,
        BackupStatus::Expired
    );
    let st = cat
        .set_piece_statuses("B1", &[(1, 1, MediaStatus::Available)])
        .unwrap();
    assert_eq!(st, BackupStatus::Expired);
    assert_eq!(cat.wal_states(db.id).unwrap()[0].1, MediaStatus::Expired);
    assert_eq!(cat.pending_deletes(None).unwrap().len(), 2);

    cat.finish_delete(&items[0]).unwrap();
    assert!(cat.backup("B1").unwrap().is_none());
    assert!(cat.pieces("B1").unwrap().is_empty());
    // Archived again while its deletion was pending: the new copy stays, the journal row goes.
    cat.add_wal(&w).unwrap();
    assert_eq!(cat.wal_states(db.id).unwrap()[0].1, MediaStatus::Available);
    assert!(cat.pending_deletes(Some(db.id)).unwrap().is_empty());

    // delete expired touches only EXPIRED records.
    cat.set_wal_statuses(db.id, &[(w.name.clone(), MediaStatus::Expired)])
        .unwrap();
    cat.record_backup(&backup("B2", db.id), &[piece("B2", 1)], &[])
        .unwrap();
    let n = cat
        .delete_expired_records(db.id, &["B2".into()], std::slice::from_ref(&w.name))
        .unwrap();
    assert_eq!(n, (0, 1));
    assert!(cat.backup("B2").unwrap().is_some());
}

#[test]
fn missing_catalog_is_recreated_only_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("r");
    drop(Repository::create(&root).unwrap());
    std::fs::remove_file(root.join("catalog.db")).unwrap();
    assert!(Repository::open(&root).is_err());
    let (_, created) = Repository::open_recreating_catalog(&root).unwrap();
    assert!(created);
    std::fs::write(root.join("catalog.db"), vec![7u8; 4096]).unwrap();
    for f in ["catalog.db-wal", "catalog.db-shm"] {
        let _ = std::fs::remove_file(root.join(f));
    }
    let (_, created) = Repository::open_recreating_catalog(&root).unwrap();
    assert!(created);
    assert!(std::fs::read_dir(&root).unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("catalog.db.damaged-")
    }));
}
