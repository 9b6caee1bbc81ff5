//! Recovery is never silently short (DESIGN.md, invariant 8): an archived WAL segment that is
//! damaged or gone stops recovery (or the restore, before it writes) instead of letting
//! PostgreSQL open without the transactions after it, and an intact copy elsewhere — an
//! ARCHIVELOG backup set — is used instead when there is one.

mod common;
mod flows;

use common::*;
use flows::*;
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

const MARKERS: usize = 6;
const ALL: &str = "1,2,3,4,5,6";

/// A cluster with a backup, then one marker row per archived segment; returns the setup and
/// the segment holding each marker, in order.
fn markers_across_segments() -> (Setup, Vec<String>) {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table markers(id int primary key)");
    setup.backup(&[]);
    let mut segs = Vec::new();
    for i in 1..=MARKERS {
        c.psql(&format!("insert into markers values ({i})"));
        segs.push(c.switch_wal_and_wait_archived());
    }
    assert_eq!(
        c.psql("select string_agg(id::text, ',' order by id) from markers"),
        ALL
    );
    (setup, segs)
}

fn object_of(setup: &Setup, seg: &str) -> PathBuf {
    setup
        .repo
        .join(format!("main/wal/{}/{seg}.rmw", &seg[..16]))
}

enum Outcome {
    /// `restore database` refused before writing; its error.
    Refused(String),
    /// PostgreSQL stopped recovery; its log.
    Stopped(String),
    /// PostgreSQL ended recovery and opened; the markers it holds.
    Opened(String),
}

/// Restores to the end of WAL and starts the copy; reports how it ended.
fn restore_and_start(setup: &Setup) -> Outcome {
    let (_t, dir) = new_scratch_dir();
    let to = dir.join("restored");
    let out = recman(setup.args(&["restore", "database", "--to", path_str(&to)]));
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let left = std::fs::read_dir(&to).map(|d| d.count()).unwrap_or(0);
        assert_eq!(
            left,
            0,
            "a refused restore wrote into {}: {err}",
            to.display()
        );
        return Outcome::Refused(err);
    }
    let c = Cluster::adopt(to.clone());
    if c.try_start().is_err() {
        return Outcome::Stopped(c.log_tail());
    }
    let deadline = Deadline::after(Duration::from_secs(300));
    loop {
        if !c.pgdata.join("postmaster.pid").exists() {
            return Outcome::Stopped(c.log_tail());
        }
        if let Ok(v) = c.try_psql("select pg_is_in_recovery()")
            && v == "f"
        {
            return Outcome::Opened(
                c.psql("select string_agg(id::text, ',' order by id) from markers"),
            );
        }
        deadline.check(format_args!(
            "recovery neither ended nor stopped: {}",
            c.log_tail()
        ));
        thread::sleep(Duration::from_millis(200));
    }
}

/// The copy must not open short: either the restore refused naming `seg`, or recovery
/// stopped with a FATAL whose restore_command output names it.
fn assert_stopped_at(outcome: Outcome, seg: &str, what: &str) {
    match outcome {
        Outcome::Refused(err) => {
            assert!(err.contains(seg) && err.contains("hint"), "{what}: {err}")
        }
        Outcome::Stopped(log) => assert!(
            log.contains("FATAL") && log.contains(seg),
            "{what}: recovery stopped without naming {seg}:\n{log}"
        ),
        Outcome::Opened(markers) => panic!(
            "{what}: the restored cluster opened with markers {markers}, expected it to stop at {seg}"
        ),
    }
}

fn flip_middle_byte(path: &PathBuf) {
    let mut b = std::fs::read(path).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0x5a;
    std::fs::write(path, b).unwrap();
}

#[test]
fn damaged_or_missing_wal_stops_recovery_unless_a_backup_set_has_it() {
    let (setup, segs) = markers_across_segments();
    let seg = &segs[2];
    let obj = object_of(&setup, seg);
    let good = std::fs::read(&obj).unwrap_or_else(|e| panic!("{}: {e}", obj.display()));
    let (_t, scratch) = new_scratch_dir();
    chown_to_cluster_user(&scratch);
    let dest = scratch.join("seg");

    // archive-get: "not archived" is exit 1, the normal end of the archive...
    let never = format!("{}{:016X}", &seg[..8], 0xFFFF_u64);
    let out = recman(setup.args(&["archive-get", &never, path_str(&dest), "--prefetch", "0"]));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // ... a damaged object is above 125, which makes PostgreSQL stop recovery.
    flip_middle_byte(&obj);
    let out = recman(setup.args(&["archive-get", seg, path_str(&dest), "--prefetch", "0"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{err}");
    assert!(err.contains(seg) && err.contains("hint"), "{err}");
    assert!(!dest.exists(), "a damaged segment was delivered");
    // So are a command line that does not parse and a repository that is not there.
    let out = recman(setup.args(&["archive-get", seg]));
    assert_eq!(out.status.code(), Some(255), "{out:?}");
    let out = recman([
        "--repo",
        path_str(&scratch.join("no-such-repo")),
        "archive-get",
        seg,
        path_str(&dest),
    ]);
    assert_eq!(out.status.code(), Some(255), "{out:?}");

    assert_stopped_at(restore_and_start(&setup), seg, "damaged segment");
    std::fs::remove_file(&obj).unwrap();
    assert_stopped_at(restore_and_start(&setup), seg, "deleted segment");
    std::fs::write(&obj, &good).unwrap();
    chown_to_cluster_user(&obj);

    // An intact copy in an ARCHIVELOG backup set is used when the archived object is
    // damaged, and when it is gone.
    setup.ok(&["backup", "archivelog", "all"]);
    flip_middle_byte(&obj);
    let out = recman(setup.args(&["archive-get", seg, path_str(&dest), "--prefetch", "0"]));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read(&dest).unwrap().len(),
        16 << 20,
        "the backup set's copy of {seg} was not delivered whole"
    );
    match restore_and_start(&setup) {
        Outcome::Opened(m) => assert_eq!(m, ALL, "damaged segment, copy in a backup set"),
        _ => panic!("recovery did not use the backup set's copy of damaged {seg}"),
    }
    std::fs::remove_file(&obj).unwrap();
    match restore_and_start(&setup) {
        Outcome::Opened(m) => assert_eq!(m, ALL, "deleted segment, copy in a backup set"),
        _ => panic!("recovery did not use the backup set's copy of deleted {seg}"),
    }
}

/// archive-push takes only WAL of the registered cluster under its own name; a refused file
/// leaves nothing behind and blocks nothing: the real file of that name archives next.
#[test]
fn archive_push_refuses_what_is_not_wal_of_the_cluster() {
    let setup = Setup::new();
    let c = &setup.cluster;
    let sysid = c.system_identifier();
    let real_seg = c.switch_wal_and_wait_archived();
    let (_t, scratch) = new_scratch_dir();
    chown_to_cluster_user(&scratch);
    let real = scratch.join("real");
    setup.ok(&["archive-get", &real_seg, path_str(&real), "--prefetch", "0"]);
    let real = std::fs::read(&real).unwrap();

    // A segment name the server will not reach during the test.
    let name = format!("{:08X}{:08X}{:08X}", 1, 0x7F, 0x10);
    let noise: Vec<u8> = (0..16u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
        .collect();
    let cases: [(&str, Vec<u8>, &str); 5] = [
        ("an empty file", Vec::new(), "less than one WAL page header"),
        ("a text file", b"not wal\n".repeat(100), "magic"),
        ("16 MiB of noise", noise, "magic"),
        (
            "another cluster's segment",
            fake_segment(sysid ^ 0x55, &name, 1),
            "system identifier",
        ),
        (
            "a real segment under another name",
            real,
            "another segment under this name",
        ),
    ];
    let file = scratch.join(&name);
    for (what, data, why) in cases {
        std::fs::write(&file, &data).unwrap();
        chown_to_cluster_user(&file);
        let err = setup.err(&["archive-push", path_str(&file)]);
        assert!(
            err.contains(&name) && err.contains(why) && err.contains("hint"),
            "{what}: {err}"
        );
        assert!(
            !setup
                .archivelogs()
                .iter()
                .any(|w| w["name"] == name.as_str()),
            "{what} was recorded as archived"
        );
        assert!(!object_of(&setup, &name).exists(), "{what} was stored");
    }
    let good = fake_segment(sysid, &name, 1);
    std::fs::write(&file, &good).unwrap();
    setup.ok(&["archive-push", path_str(&file)]);
    // PostgreSQL's retry of the same file stays a success.
    setup.ok(&["archive-push", path_str(&file)]);
    let back = scratch.join("back");
    setup.ok(&["archive-get", &name, path_str(&back), "--prefetch", "0"]);
    assert!(std::fs::read(&back).unwrap() == good);
}
