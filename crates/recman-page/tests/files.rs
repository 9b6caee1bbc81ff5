use recman_page::*;

fn rf(ts: Option<u32>, db: Option<u32>, node: u32, fork: Fork, segno: u32) -> Option<RelFile> {
    Some(RelFile {
        tablespace_oid: ts,
        db_oid: db,
        relfilenode: node,
        fork,
        segno,
    })
}

#[test]
fn classify_relation_files() {
    let cases: &[(&str, Option<RelFile>)] = &[
        ("base/1/1259", rf(None, Some(1), 1259, Fork::Main, 0)),
        ("base/5/16384.1", rf(None, Some(5), 16384, Fork::Main, 1)),
        ("base/5/16384.12", rf(None, Some(5), 16384, Fork::Main, 12)),
        ("base/5/16384_fsm", rf(None, Some(5), 16384, Fork::Fsm, 0)),
        ("base/5/16384_vm", rf(None, Some(5), 16384, Fork::Vm, 0)),
        ("base/5/16384_init", rf(None, Some(5), 16384, Fork::Init, 0)),
        ("base/5/16384_fsm.3", rf(None, Some(5), 16384, Fork::Fsm, 3)),
        (
            "base/4294967295/4294967295",
            rf(None, Some(u32::MAX), u32::MAX, Fork::Main, 0),
        ),
        ("global/1262", rf(None, None, 1262, Fork::Main, 0)),
        ("global/1262_vm", rf(None, None, 1262, Fork::Vm, 0)),
        ("global/1213_fsm", rf(None, None, 1213, Fork::Fsm, 0)),
        (
            "pg_tblspc/16400/PG_15_202209061/16401/16402",
            rf(Some(16400), Some(16401), 16402, Fork::Main, 0),
        ),
        (
            "pg_tblspc/16400/PG_15_202209061/16401/16402_vm.2",
            rf(Some(16400), Some(16401), 16402, Fork::Vm, 2),
        ),
        ("./base/1/1259", rf(None, Some(1), 1259, Fork::Main, 0)),
        ("base//1/1259", rf(None, Some(1), 1259, Fork::Main, 0)),
        // Not relation files.
        ("base/1/PG_VERSION", None),
        ("base/1/pg_filenode.map", None),
        ("base/1/pg_internal.init", None),
        ("global/pg_filenode.map", None),
        ("global/pg_control", None),
        ("global/pg_internal.init", None),
        ("base/5/t3_16384", None),
        ("base/5/t3_16384_fsm.1", None),
        ("base/pgsql_tmp/pgsql_tmp1234.0", None),
        ("base/5/16384_xyz", None),
        ("base/5/16384.", None),
        ("base/5/16384.0", None),
        ("base/5/016384", None),
        ("base/5/0", None),
        ("base/5/4294967296", None),
        ("base/5/16384.x", None),
        ("base/5/+16384", None),
        ("base/5/16384_fsm_vm", None),
        ("base/5/16384.1.2", None),
        ("base/x/16384", None),
        ("base/5", None),
        ("base/5/6/7", None),
        ("base", None),
        ("", None),
        ("global/1262/1", None),
        (
            "pg_tblspc/16400/PG_15_202209061/16401/pg_filenode.map",
            None,
        ),
        ("pg_tblspc/16400/PG_15_202209061/16401", None),
        ("pg_tblspc/16400/XX_15/16401/16402", None),
        (
            "pg_tblspc/16400/PG_15_202209061/pgsql_tmp/pgsql_tmp1.1",
            None,
        ),
        ("pg_wal/000000010000000000000001", None),
        ("pg_xact/0000", None),
        ("pg_multixact/offsets/0000", None),
        ("postgresql.conf", None),
        ("PG_VERSION", None),
        ("16384", None),
    ];
    for (path, want) in cases {
        assert_eq!(&classify(path), want, "{path}");
    }
}

#[test]
fn relfile_helpers() {
    let r = classify("base/5/16384_vm.2").unwrap();
    assert_eq!(r.first_block(), 2 * RELSEG_SIZE);
    assert_eq!(r.rel_key(), (None, Some(5), 16384));
    assert_eq!(r.file_name(), "16384_vm.2");
    assert_eq!(classify("base/5/16384").unwrap().first_block(), 0);
    assert_eq!(classify("base/5/16384").unwrap().file_name(), "16384");
    let t = classify("pg_tblspc/7/PG_16_202307071/8/9.3").unwrap();
    assert_eq!(t.rel_key(), (Some(7), Some(8), 9));
    assert_eq!(t.first_block(), 3 * 131072);
    // Same relation, other fork: same key.
    assert_eq!(
        classify("base/5/16384_fsm").unwrap().rel_key(),
        classify("base/5/16384.4").unwrap().rel_key()
    );
}

#[test]
fn temp_rel_names() {
    assert!(is_temp_rel_name("t3_16384"));
    assert!(is_temp_rel_name("t12_16384_fsm"));
    assert!(is_temp_rel_name("t12_16384.2"));
    assert!(is_temp_rel_name("t12_16384_vm.2"));
    assert!(!is_temp_rel_name("t_16384"));
    assert!(!is_temp_rel_name("t3_"));
    assert!(!is_temp_rel_name("t3x_16384"));
    assert!(!is_temp_rel_name("tablespace_map"));
    assert!(!is_temp_rel_name("16384"));
    assert!(!is_temp_rel_name("t3_16384_foo"));
}

#[test]
fn exclusions() {
    use Exclusion::*;
    let cases: &[(&str, bool, Option<Exclusion>)] = &[
        // Directories kept empty.
        ("pg_wal", true, Some(KeepDirEmpty)),
        ("pg_wal", false, Some(KeepDirEmpty)), // symlinked pg_wal
        ("pg_dynshmem", true, Some(KeepDirEmpty)),
        ("pg_notify", true, Some(KeepDirEmpty)),
        ("pg_serial", true, Some(KeepDirEmpty)),
        ("pg_snapshots", true, Some(KeepDirEmpty)),
        ("pg_stat_tmp", true, Some(KeepDirEmpty)),
        ("pg_subtrans", true, Some(KeepDirEmpty)),
        ("pg_replslot", true, Some(KeepDirEmpty)),
        ("pg_wal/archive_status", true, Some(KeepDirEmpty)),
        ("pg_wal/summaries", true, Some(KeepDirEmpty)),
        // Their contents.
        ("pg_wal/000000010000000000000001", false, Some(Skip)),
        ("pg_wal/00000002.history", false, Some(Skip)),
        (
            "pg_wal/archive_status/000000010000000000000001.done",
            false,
            Some(Skip),
        ),
        ("pg_wal/archive_status", false, Some(Skip)),
        ("pg_wal/some_dir", true, Some(Skip)),
        ("pg_wal/some_dir/archive_status", true, Some(Skip)),
        ("pg_dynshmem/mmap.12345", false, Some(Skip)),
        ("pg_notify/0000", false, Some(Skip)),
        ("pg_serial/0000", false, Some(Skip)),
        ("pg_snapshots/00000003-00000002-1", false, Some(Skip)),
        ("pg_stat_tmp/global.stat", false, Some(Skip)),
        ("pg_subtrans/0000", false, Some(Skip)),
        ("pg_replslot/myslot", true, Some(Skip)),
        ("pg_replslot/myslot/state", false, Some(Skip)),
        // Files skipped anywhere.
        ("postmaster.pid", false, Some(Skip)),
        ("postmaster.opts", false, Some(Skip)),
        ("backup_label", false, Some(Skip)),
        ("tablespace_map", false, Some(Skip)),
        ("backup_label.old", false, Some(Skip)),
        ("tablespace_map.old", false, Some(Skip)),
        ("backup_manifest", false, Some(Skip)),
        ("postgresql.auto.conf.tmp", false, Some(Skip)),
        ("current_logfiles.tmp", false, Some(Skip)),
        ("global/pg_internal.init", false, Some(Skip)),
        ("base/5/pg_internal.init", false, Some(Skip)),
        ("base/5/pg_internal.init.12345", false, Some(Skip)),
        (
            "pg_tblspc/16400/PG_15_202209061/16401/pg_internal.init",
            false,
            Some(Skip),
        ),
        // pgsql_tmp, files or dirs, any depth.
        ("base/pgsql_tmp", true, Some(Skip)),
        ("base/pgsql_tmp/pgsql_tmp1234.0", false, Some(Skip)),
        (
            "base/pgsql_tmp/pgsql_tmp1234.0.sharedfileset",
            true,
            Some(Skip),
        ),
        (
            "base/pgsql_tmp/pgsql_tmp1234.0.sharedfileset/0.0",
            false,
            Some(Skip),
        ),
        (
            "pg_tblspc/16400/PG_15_202209061/pgsql_tmp",
            true,
            Some(Skip),
        ),
        ("pgsql_tmp", true, Some(Skip)),
        ("pgsql_tmp12", false, Some(Skip)),
        // Temporary relations in database directories.
        ("base/5/t3_16384", false, Some(Skip)),
        ("base/5/t3_16384_fsm", false, Some(Skip)),
        ("base/5/t3_16384.1", false, Some(Skip)),
        (
            "pg_tblspc/16400/PG_15_202209061/16401/t7_16402",
            false,
            Some(Skip),
        ),
        ("t3_16384", false, None), // not in a database directory
        ("global/t3_16384", false, None),
        // Kept.
        ("base", true, None),
        ("base/5", true, None),
        ("base/5/16384", false, None),
        ("base/5/16384_init", false, None),
        ("base/5/PG_VERSION", false, None),
        ("base/5/pg_filenode.map", false, None),
        ("global", true, None),
        ("global/pg_control", false, None),
        ("global/1262", false, None),
        ("pg_xact", true, None),
        ("pg_xact/0000", false, None),
        ("pg_multixact/offsets/0000", false, None),
        ("pg_logical/replorigin_checkpoint", false, None),
        ("pg_stat", true, None),
        ("pg_stat/pgstat.stat", false, None),
        ("pg_tblspc", true, None),
        ("pg_tblspc/16400", true, None),
        ("PG_VERSION", false, None),
        ("postgresql.conf", false, None),
        ("postgresql.auto.conf", false, None),
        ("pg_hba.conf", false, None),
        ("current_logfiles", false, None),
        ("log/postgresql-2024-01-01.log", false, None),
        ("pg_walx", true, None),
        ("mydir/pg_wal", true, None), // only the top-level directory
        ("mydir/pg_wal/file", false, None),
        ("backup_label", true, None), // a directory named like the file
        ("", true, None),
    ];
    for &(path, is_dir, want) in cases {
        assert_eq!(exclusion(path, is_dir), want, "{path} (dir: {is_dir})");
    }
}
