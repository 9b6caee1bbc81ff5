//! pg_control as each supported major really writes it: the fixtures are global/pg_control of
//! a fresh `initdb --data-checksums` (and one 18 with `--no-data-checksums`) by that major's
//! server, so the version table's offsets are checked against PostgreSQL, not against
//! themselves.

use recman_pg::{Lsn, read_data_dir_facts};
use std::path::Path;

fn data_dir(major: u32, fixture: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("PG_VERSION"), format!("{major}\n")).unwrap();
    std::fs::create_dir(d.path().join("global")).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    std::fs::copy(src, d.path().join("global/pg_control")).unwrap();
    d
}

#[test]
fn reads_real_pg_control_of_every_supported_major() {
    // (major, fixture, system identifier, redo of the shutdown checkpoint, checksums)
    let cases = [
        (13, "pg_control-13", 7712161167395553881, 0x1813e28, true),
        (14, "pg_control-14", 7712161184394781861, 0x1943170, true),
        (15, "pg_control-15", 7712161193133970964, 0x17414f8, true),
        (16, "pg_control-16", 7712161199553013391, 0x1720fc8, true),
        (17, "pg_control-17", 7712161206662133428, 0x17218d8, true),
        (18, "pg_control-18", 7712161213601650397, 0x174b290, true),
        (
            18,
            "pg_control-18-nochecksums",
            7712161266515544531,
            0x1505e40,
            false,
        ),
    ];
    for (major, fixture, sysid, redo, checksums) in cases {
        let d = data_dir(major, fixture);
        let f = read_data_dir_facts(d.path()).unwrap();
        assert_eq!(f.major, major);
        assert_eq!(f.system_identifier, sysid, "{fixture}");
        assert_eq!(f.checksums_enabled, Some(checksums), "{fixture}");
        assert_eq!(f.wal_segment_size, Some(16 << 20), "{fixture}");
        assert_eq!(f.state.as_deref(), Some("shut down"), "{fixture}");
        assert_eq!(f.checkpoint_redo, Some(Lsn(redo)), "{fixture}");
    }
}

#[test]
fn a_pg_control_of_another_major_is_refused() {
    // PostgreSQL 17's pg_control under a PG_VERSION saying 16: the layouts must not be mixed.
    let d = data_dir(16, "pg_control-17");
    let e = read_data_dir_facts(d.path()).unwrap_err().to_string();
    assert!(
        e.contains("version 1700") && e.contains("PostgreSQL 16"),
        "{e}"
    );
}
