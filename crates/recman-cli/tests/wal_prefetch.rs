//! WAL in and out of the repository in bulk: archive-push batches (the call for one segment
//! also pushes the next ready ones) and archive-get read-ahead (a background prefetcher fills
//! a spool that later calls serve from), against real PostgreSQL 15 clusters.

mod common;
mod flows;

use common::*;
use flows::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fs;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The kernel's record of renames out of a directory (inotify IN_MOVED_FROM): every segment
/// served from the spool is renamed out of it, and the kernel queues each such event until it
/// is read, so nothing is missed however late the test looks (unlike sampling the directory).
struct MovesOut(i32);

impl MovesOut {
    fn watch(dir: &Path) -> MovesOut {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: plain system calls on a descriptor this value owns.
        unsafe {
            let fd = libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC);
            assert!(
                fd >= 0,
                "inotify_init1: {}",
                std::io::Error::last_os_error()
            );
            let wd = libc::inotify_add_watch(fd, c.as_ptr(), libc::IN_MOVED_FROM);
            assert!(
                wd >= 0,
                "watch {}: {}",
                dir.display(),
                std::io::Error::last_os_error()
            );
            MovesOut(fd)
        }
    }

    /// Names moved out since the last call.
    fn names(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            // SAFETY: reads into a buffer of the length given.
            let n = unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return out;
            }
            let mut at = 0;
            while at < n as usize {
                // struct inotify_event: wd, mask, cookie, len (4 bytes each), then the name.
                let field = |i: usize| {
                    u32::from_ne_bytes(buf[at + 4 * i..at + 4 * i + 4].try_into().unwrap())
                };
                let (mask, len) = (field(1), field(3) as usize);
                assert_eq!(mask & libc::IN_Q_OVERFLOW, 0, "inotify queue overflowed");
                let name = &buf[at + 16..at + 16 + len];
                let end = name.iter().position(|&b| b == 0).unwrap_or(len);
                out.push(String::from_utf8_lossy(&name[..end]).into_owned());
                at += 16 + len;
            }
        }
    }
}

impl Drop for MovesOut {
    fn drop(&mut self) {
        // SAFETY: closes the descriptor this value owns.
        unsafe { libc::close(self.0) };
    }
}

fn wal(setup: &Setup) -> Vec<Value> {
    setup.archivelogs()
}

fn segment_names(setup: &Setup) -> BTreeSet<String> {
    wal(setup)
        .into_iter()
        .filter(|w| w["kind"] == "segment")
        .map(|w| w["name"].as_str().unwrap().to_string())
        .collect()
}

/// The segments of `names` whose change-tracking summary is not in the repository.
fn without_summary<'a>(setup: &Setup, names: impl Iterator<Item = &'a String>) -> Vec<&'a String> {
    names
        .filter(|seg| {
            let rel = format!("main/wal/{}/{seg}.rmb", &seg[..16]);
            !setup.repo.join(rel).exists()
        })
        .collect()
}

fn is_segment(name: &str) -> bool {
    name.len() == 24
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
}

/// Names in `dir` (empty when it does not exist).
fn names_in(dir: &Path) -> BTreeSet<String> {
    match fs::read_dir(dir) {
        Ok(rd) => rd
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => BTreeSet::new(),
    }
}

/// The spool's file of archived segment `segment`, named as the prefetcher names what it
/// verified: with the size and checksum the catalog recorded.
fn ready_name(setup: &Setup, segment: &str) -> String {
    let w = wal(setup)
        .into_iter()
        .find(|w| w["name"] == segment)
        .unwrap_or_else(|| panic!("{segment} is not archived"));
    format!(
        "{segment}.{}-{:08x}.wal",
        w["size"].as_u64().unwrap(),
        w["crc32c"].as_u64().unwrap()
    )
}

/// Waits until no prefetcher holds the spool's lock and the spool satisfies `done`.
fn wait_spool(spool: &Path, what: &str, done: impl Fn(&BTreeSet<String>) -> bool) {
    let deadline = Deadline::after(Duration::from_secs(90));
    loop {
        let free = match fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(spool.join(".lock"))
        {
            Ok(f) => f.try_lock().is_ok(),
            Err(_) => true,
        };
        let names = names_in(spool);
        if free && done(&names) {
            return;
        }
        deadline.check(format_args!(
            "spool {} never got to: {what}; it holds {names:?}; prefetch.log: {}",
            spool.display(),
            fs::read_to_string(spool.join("prefetch.log")).unwrap_or_default()
        ));
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes `n` WAL segments of timeline `tli` with ready files into a fake pg_wal under
/// `dir`, returning their names in order.
fn fake_pg_wal(dir: &Path, sysid: u64, tli: u32, n: u32) -> (PathBuf, Vec<String>) {
    let pg_wal = dir.join("pg_wal");
    fs::create_dir_all(pg_wal.join("archive_status")).unwrap();
    let mut names = Vec::new();
    for i in 0..n {
        let name = format!("{tli:08X}{:08X}{:08X}", 0, 0x10 + i);
        fs::write(pg_wal.join(&name), fake_segment(sysid, &name, i as u8)).unwrap();
        fs::write(pg_wal.join(format!("archive_status/{name}.ready")), "").unwrap();
        names.push(name);
    }
    chown_tree_to_cluster_user(dir);
    (pg_wal, names)
}

#[test]
fn batch_push_takes_ready_segments_along() {
    let setup = Setup::new();
    let (_t, scratch) = new_scratch_dir();
    let (pg_wal, names) = fake_pg_wal(&scratch, setup.cluster.system_identifier(), 0x30, 7);
    // A ready segment whose file is gone: its failure must not fail %p's call.
    let gone = format!("{:08X}{:08X}{:08X}", 0x30, 0, 0x0F);
    fs::write(pg_wal.join(format!("archive_status/{gone}.ready")), "").unwrap();
    chown_tree_to_cluster_user(&scratch);
    let seg = |n: &str| path_str(&pg_wal.join(n)).to_string();
    let ours = |setup: &Setup| -> BTreeSet<String> {
        segment_names(setup)
            .into_iter()
            .filter(|n| n.starts_with("00000030"))
            .collect()
    };

    // The call for names[0] with --batch 4 takes the oldest three other ready ones: the
    // missing one (which fails, with a warning) and names[1], names[2].
    let out = recman_cmd(setup.args(&[
        "-v",
        "archive-push",
        &seg(&names[0]),
        "--batch",
        "4",
        "--parallel",
        "3",
    ]))
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&gone) && stderr.contains("warning"),
        "{stderr}"
    );
    assert_eq!(
        ours(&setup),
        names[..3].iter().cloned().collect::<BTreeSet<_>>()
    );
    // PostgreSQL's status files are PostgreSQL's: every .ready is still there, no .done.
    let status = names_in(&pg_wal.join("archive_status"));
    assert_eq!(status.len(), names.len() + 1, "{status:?}");
    assert!(status.iter().all(|s| s.ends_with(".ready")), "{status:?}");

    // PostgreSQL's own call for a segment pushed along says it is archived, and pushes
    // nothing more (a batch starts only when %p itself needs pushing).
    let out = setup.ok(&["-v", "archive-push", &seg(&names[1]), "--batch", "4"]);
    assert!(
        out.contains(&format!("wal file {} is already archived", names[1])),
        "{out}"
    );
    assert_eq!(ours(&setup).len(), 3);

    // The next call that pushes takes the rest, in parallel by default.
    let out = setup.ok(&["-v", "archive-push", &seg(&names[3])]);
    assert_eq!(out.matches("archived wal file").count(), 4, "{out}");
    assert_eq!(ours(&setup), names.iter().cloned().collect::<BTreeSet<_>>());

    // What went along is stored intact: archive-get returns the same bytes.
    for n in [&names[2], &names[6]] {
        let dest = scratch.join(format!("{n}.back"));
        setup.ok(&["archive-get", n, path_str(&dest), "--prefetch", "0"]);
        assert_eq!(fs::read(&dest).unwrap(), fs::read(pg_wal.join(n)).unwrap());
    }

    // --batch 1 pushes %p alone; changed content under an archived name is refused.
    fs::write(pg_wal.join(&names[0]), b"other content").unwrap();
    let err = setup.err(&["archive-push", &seg(&names[0]), "--batch", "1"]);
    assert!(
        err.contains("different content") && err.contains("hint"),
        "{err}"
    );
}

/// Waits until no pusher holds `push_dir`'s lock and `done` holds for the archived segments.
fn wait_pusher(setup: &Setup, push_dir: &Path, done: impl Fn(&BTreeSet<String>) -> bool) {
    let deadline = Deadline::after(Duration::from_secs(120));
    loop {
        let free = match fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(push_dir.join(".lock"))
        {
            Ok(f) => f.try_lock().is_ok(),
            Err(_) => false,
        };
        let archived = segment_names(setup);
        if free && done(&archived) {
            return;
        }
        deadline.check(format_args!(
            "the background pusher in {} never finished; archived: {archived:?}; push.log: {}",
            push_dir.display(),
            fs::read_to_string(push_dir.join("push.log")).unwrap_or_default()
        ));
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_backlog_is_pushed_by_one_background_pusher() {
    let setup = Setup::new();
    let (_t, scratch) = new_scratch_dir();
    let sysid = setup.cluster.system_identifier();
    let (pg_wal, names) = fake_pg_wal(&scratch, sysid, 0x40, 9);
    // One segment holds another's WAL: the pusher must skip it and go on with the rest.
    fs::write(pg_wal.join(&names[5]), fake_segment(sysid, &names[6], 9)).unwrap();
    chown_tree_to_cluster_user(&scratch);
    let seg = |n: &str| path_str(&pg_wal.join(n)).to_string();
    let push_dir = pg_wal.join("recman-push");

    // Two batches (8 and more) ready after %p: the call pushes %p alone and leaves the rest to
    // the pusher it starts.
    let out = setup.ok(&["-v", "archive-push", &seg(&names[0]), "--batch", "4"]);
    assert_eq!(out.matches("archived wal file").count(), 1, "{out}");
    assert!(
        out.contains(&format!("archived wal file {}", names[0])),
        "{out}"
    );
    // No other call is made: only the background pusher can archive the others.
    let wanted: BTreeSet<String> = names.iter().filter(|n| **n != names[5]).cloned().collect();
    wait_pusher(&setup, &push_dir, |got| {
        got.iter().filter(|n| n.starts_with("00000040")).count() >= wanted.len()
    });
    let ours: BTreeSet<String> = segment_names(&setup)
        .into_iter()
        .filter(|n| n.starts_with("00000040"))
        .collect();
    assert_eq!(ours, wanted);
    assert_eq!(
        fs::read_to_string(push_dir.join(".lock")).unwrap(),
        names[0],
        "the lock names the segment the pusher started after"
    );
    // The segment it could not push is marked, with the reason, and named in its log.
    let failed = fs::read_to_string(push_dir.join(format!("{}.failed", names[5]))).unwrap();
    assert!(failed.contains(&names[5]), "{failed}");
    let log = fs::read_to_string(push_dir.join("push.log")).unwrap();
    assert!(log.contains(&names[5]), "{log}");
    // PostgreSQL's status files are PostgreSQL's.
    let status = names_in(&pg_wal.join("archive_status"));
    assert!(status.iter().all(|s| s.ends_with(".ready")), "{status:?}");

    // PostgreSQL's calls for the pushed ones answer at once; the failed one's own call pushes
    // it, and fails with the reason.
    let out = setup.ok(&["-v", "archive-push", &seg(&names[4]), "--batch", "4"]);
    assert!(out.contains("is already archived"), "{out}");
    let err = setup.err(&["archive-push", &seg(&names[5]), "--batch", "4"]);
    assert!(err.contains(&names[5]) && err.contains("hint"), "{err}");
    // Pushed by the pusher, stored intact.
    let dest = scratch.join("back");
    setup.ok(&["archive-get", &names[8], path_str(&dest), "--prefetch", "0"]);
    assert_eq!(
        fs::read(&dest).unwrap(),
        fs::read(pg_wal.join(&names[8])).unwrap()
    );
}

/// The pusher leaves each segment's identity and checksum for the segment's own call, which
/// then answers without reading the segment; a segment changed since it was pushed is read
/// again and refused, and a mark is only ever a shortcut to the catalog's comparison.
#[test]
fn the_pushers_marks_spare_each_call_a_read_and_never_hide_a_change() {
    let setup = Setup::new();
    let (_t, scratch) = new_scratch_dir();
    let sysid = setup.cluster.system_identifier();
    let (pg_wal, names) = fake_pg_wal(&scratch, sysid, 0x50, 10);
    // Marks are left only for files whose times are a second or more before the read.
    std::thread::sleep(Duration::from_millis(2100));
    let seg = |n: &str| path_str(&pg_wal.join(n)).to_string();
    let push_dir = pg_wal.join("recman-push");
    setup.ok(&["archive-push", &seg(&names[0]), "--batch", "4"]);
    wait_pusher(&setup, &push_dir, |got| {
        got.iter().filter(|n| n.starts_with("00000050")).count() == names.len()
    });
    let mark = |n: &str| push_dir.join(format!("{n}.read"));
    for n in &names[1..] {
        assert!(
            mark(n).is_file(),
            "no mark for {n}: {:?}",
            names_in(&push_dir)
        );
    }
    // An honest mark answers, and is used up.
    let out = setup.ok(&["-v", "archive-push", &seg(&names[1]), "--batch", "4"]);
    assert!(out.contains("is already archived"), "{out}");
    assert!(!mark(&names[1]).exists());
    // A mark's checksum is what the call compares with the catalog's record: one that lies is
    // caught by the record (and shows that the call took the mark instead of reading).
    let text = fs::read_to_string(mark(&names[2])).unwrap();
    let (head, _) = text.trim_end().rsplit_once(' ').unwrap();
    fs::write(mark(&names[2]), format!("{head} 00000000\n")).unwrap();
    let err = setup.err(&["archive-push", &seg(&names[2]), "--batch", "4"]);
    assert!(err.contains("different content"), "{err}");
    // Used up: the retry reads the file, which matches.
    let out = setup.ok(&["-v", "archive-push", &seg(&names[2]), "--batch", "4"]);
    assert!(out.contains("is already archived"), "{out}");
    // A segment written after it was pushed (same size, other bytes) no longer matches its
    // mark: the call reads it and refuses it.
    fs::write(pg_wal.join(&names[3]), fake_segment(sysid, &names[3], 77)).unwrap();
    let err = setup.err(&["archive-push", &seg(&names[3]), "--batch", "4"]);
    assert!(err.contains("different content"), "{err}");
    // The marks of segments PostgreSQL removed go when the next pusher starts.
    fs::remove_file(pg_wal.join(&names[9])).unwrap();
    let (_, more) = fake_pg_wal(&scratch, sysid, 0x51, 10);
    std::thread::sleep(Duration::from_millis(2100));
    setup.ok(&["archive-push", &seg(&more[0]), "--batch", "4"]);
    wait_pusher(&setup, &push_dir, |got| {
        got.iter().filter(|n| n.starts_with("00000051")).count() == more.len()
    });
    assert!(!mark(&names[9]).exists());
    assert!(mark(&names[8]).exists() && mark(&more[9]).exists());
}

#[test]
fn batched_archive_command_drains_a_backlog() {
    // Archiving configured but without a command: WAL piles up as .ready files.
    let setup = Setup::with(ClusterOpts {
        extra_conf: vec!["archive_command = ''".into()],
        ..Default::default()
    });
    let c = &setup.cluster;
    c.psql("create table t(x int)");
    let mut last = String::new();
    for i in 0..12 {
        c.psql(&format!(
            "insert into t select generate_series(1, 20000) + {i}"
        ));
        last = c.switch_wal();
    }
    let status = c.pgdata.join("pg_wal/archive_status");
    let backlog: BTreeSet<String> = names_in(&status)
        .into_iter()
        .filter_map(|n| n.strip_suffix(".ready").map(str::to_string))
        .filter(|n| is_segment(n))
        .collect();
    assert!(backlog.len() >= 12, "{backlog:?}");
    assert!(backlog.contains(&last));
    assert!(segment_names(&setup).is_empty());

    c.set_archive_command(&format!(
        "{} --batch 4 --parallel 2",
        archive_command(&setup.repo)
    ));
    c.wait_archived(&last);
    assert_eq!(segment_names(&setup), backlog);
    // A backlog of two batches and more went to the background pusher, which says which
    // segment it started after.
    let lock = c.pgdata.join("pg_wal/recman-push/.lock");
    let after = fs::read_to_string(&lock).unwrap_or_default();
    assert!(backlog.contains(&after), "{}: {after:?}", lock.display());
    // Every archived segment is intact in the repository.
    for w in wal(&setup) {
        assert_eq!(w["status"], "AVAILABLE", "{w}");
    }
    let failed = c.psql("select failed_count from pg_stat_archiver");
    assert_eq!(failed, "0", "{}", c.log_tail());
    // The pusher stores the WAL first and the segments' change-tracking summaries once the
    // backlog is in, before it ends: every archived segment has its summary.
    wait_pusher(&setup, lock.parent().unwrap(), |_| true);
    let missing = without_summary(&setup, backlog.iter());
    assert!(missing.is_empty(), "no summary for {missing:?}");
}

/// A backlog's summaries when PostgreSQL changed the local segments before the pusher made
/// them (a checkpoint recycles a segment once it is archived): the test build's
/// RECMAN_FAULT_WAL_RECYCLED makes every local segment look changed then, so each summary comes
/// from the archived copies. A level 1 after the backlog reads only the blocks they name and
/// restores data equal to the source, which a wrong or missing summary would not.
#[test]
fn a_backlogs_summaries_come_from_the_archive_when_the_segments_changed() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(5);
    c.psql("checkpoint");
    setup.backup(&["--incremental-level", "0", "--tag", "L0"]);
    // The archiver stops; the updates leave a backlog of ready segments.
    c.set_archive_command("");
    let mut last = String::new();
    for i in 0..12 {
        let first = i * 10_000 + 1;
        c.psql(&format!(
            "update pgbench_accounts set abalance = abalance + 1 where aid between {first} and {}",
            first + 99
        ));
        last = c.switch_wal();
    }
    c.set_archive_command(&format!(
        "RECMAN_FAULT_WAL_RECYCLED=1 {} --batch 4 --parallel 2",
        archive_command(&setup.repo)
    ));
    c.wait_archived(&last);
    let push_dir = c.pgdata.join("pg_wal/recman-push");
    let after = fs::read_to_string(push_dir.join(".lock")).unwrap_or_default();
    assert!(is_segment(&after), "no background pusher ran: {after:?}");
    wait_pusher(&setup, &push_dir, |_| true);
    let pushed = segment_names(&setup);
    let pushed = pushed.range::<String, _>((Bound::Excluded(&after), Bound::Included(&last)));
    let missing = without_summary(&setup, pushed);
    assert!(missing.is_empty(), "no summary for {missing:?}");

    let level1 = [
        "-v",
        "backup",
        "database",
        "--incremental-level",
        "1",
        "--tag",
        "T1",
    ];
    let out = recman(setup.args(&level1));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "level 1 failed:\n{err}");
    let t1 = setup.backups().last().unwrap().clone();
    assert!(!err.contains("has no summary"), "{err}");
    let (read, db) = (
        t1["read_bytes"].as_u64().unwrap(),
        t1["database_bytes"].as_u64().unwrap(),
    );
    assert!(
        t1["tracked_bytes"].as_u64().unwrap_or(0) > 0 && read * 10 <= db,
        "a level 1 on the summaries reads the blocks they name: read {read} of {db}\n{t1}\n{err}"
    );
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_k, to) = setup.restore(&["--from-tag", "T1"]);
    drop(start_and_compare(&to, &expected));
}

/// A cluster with a backup and a dozen archived segments after it.
fn setup_with_wal() -> (Setup, Vec<String>) {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int)");
    setup.backup(&[]);
    for i in 0..10 {
        c.psql(&format!(
            "insert into t select generate_series(1, 5000) + {i}"
        ));
        c.switch_wal_and_wait_archived();
    }
    let segs: Vec<String> = segment_names(&setup).into_iter().collect();
    (setup, segs)
}

#[test]
fn damaged_spool_files_are_not_served() {
    let (setup, segs) = setup_with_wal();
    let (_t, scratch) = new_scratch_dir();
    let spool = scratch.join("spool");
    fs::create_dir(&spool).unwrap();
    chown_to_cluster_user(&spool);
    let seg = &segs[segs.len() - 2];
    let good = scratch.join("good");
    setup.ok(&["archive-get", seg, path_str(&good), "--prefetch", "0"]);
    let data = fs::read(&good).unwrap();
    let ready = ready_name(&setup, seg);
    assert!(
        ready.starts_with(&format!("{seg}.{}-", data.len())),
        "{ready}"
    );
    let get = |dest: &Path| {
        let out = recman_cmd(setup.args(&[
            "archive-get",
            seg,
            path_str(dest),
            "--spool",
            path_str(&spool),
            "--prefetch",
            "2",
        ]))
        .output()
        .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let put = |file: &str, bytes: &[u8]| {
        let p = spool.join(file);
        fs::write(&p, bytes).unwrap();
        chown_to_cluster_user(&p);
    };

    // Truncated, then damaged, under the name the prefetcher gives verified files: neither is
    // served; each is removed and the segment comes from the repository.
    let mut bad = data.clone();
    bad[12345] ^= 0x40;
    for (i, content) in [&data[..data.len() / 2], &bad[..]].into_iter().enumerate() {
        put(&ready, content);
        let dest = scratch.join(format!("out{i}"));
        let stderr = get(&dest);
        assert!(
            stderr.contains("spool file") && stderr.contains("removed it"),
            "{stderr}"
        );
        assert_eq!(fs::read(&dest).unwrap(), data, "case {i}");
        assert!(!spool.join(&ready).exists());
        wait_spool(&spool, "prefetcher done", |_| true);
    }
    // A file under the bare segment name is not the prefetcher's: never served, left alone.
    put(seg, b"not wal");
    let dest = scratch.join("out-bare");
    get(&dest);
    assert_eq!(fs::read(&dest).unwrap(), data);
    assert_eq!(fs::read(spool.join(seg)).unwrap(), b"not wal");
    // An intact file is served by a rename: it leaves the spool.
    put(&ready, &data);
    let dest = scratch.join("out-good");
    get(&dest);
    assert_eq!(fs::read(&dest).unwrap(), data);
    assert!(!spool.join(&ready).exists());
    wait_spool(&spool, "no temporary files", |n| {
        n.iter().all(|f| !f.ends_with(".tmp"))
    });
}

#[test]
fn prefetch_fills_the_spool_and_keeps_timelines_apart() {
    let (setup, segs) = setup_with_wal();
    let (_t, scratch) = new_scratch_dir();
    let spool = scratch.join("pg_wal/recman-prefetch");
    fs::create_dir_all(scratch.join("pg_wal")).unwrap();
    chown_tree_to_cluster_user(&scratch);
    let dest = |n: &str| scratch.join(format!("pg_wal/{n}"));
    let get = |name: &str, to: &Path| {
        recman_cmd(setup.args(&["archive-get", name, path_str(to), "--prefetch", "4"]))
            .output()
            .unwrap()
    };
    // The default spool is recman-prefetch next to %p. The first call fetches directly and
    // starts the prefetcher on the next four archived segments of timeline 1.
    let first = &segs[2];
    let out = get(first, &dest("RECOVERYXLOG"));
    assert!(out.status.success(), "{out:?}");
    let want: Vec<String> = segs[3..7].to_vec();
    wait_spool(&spool, "the next four segments", |n| {
        want.iter().all(|w| {
            n.iter()
                .any(|f| f.starts_with(&format!("{w}.")) && f.ends_with(".wal"))
        })
    });
    let ready: Vec<String> = names_in(&spool)
        .into_iter()
        .filter(|f| f.ends_with(".wal"))
        .collect();
    assert_eq!(ready.len(), 4, "{ready:?}");

    // PostgreSQL asking for the timeline 2 segment at a prefetched position gets no
    // timeline 1 data: the repository has none, so "not found".
    let tl2 = format!("00000002{}", &segs[3][8..]);
    let out = get(&tl2, &dest("RECOVERYXLOG2"));
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not in repository"),
        "{out:?}"
    );
    assert!(!dest("RECOVERYXLOG2").exists());
    assert!(names_in(&spool).iter().any(|f| f.starts_with(&segs[3])));

    // The timeline 1 name is served from the spool, byte for byte what the archive holds.
    let out = get(&segs[3], &dest("RECOVERYXLOG"));
    assert!(out.status.success(), "{out:?}");
    assert!(!names_in(&spool).iter().any(|f| f.starts_with(&segs[3])));
    let direct = scratch.join("direct");
    setup.ok(&[
        "archive-get",
        &segs[3],
        path_str(&direct),
        "--prefetch",
        "0",
    ]);
    assert_eq!(
        fs::read(dest("RECOVERYXLOG")).unwrap(),
        fs::read(&direct).unwrap()
    );
    // Skipping ahead removes what PostgreSQL moved past, and starts the prefetcher again.
    let out = get(&segs[6], &dest("RECOVERYXLOG"));
    assert!(out.status.success(), "{out:?}");
    let want: Vec<String> = segs[7..].iter().take(4).cloned().collect();
    assert!(!want.is_empty());
    wait_spool(&spool, "the segments after the skip", |n| {
        want.iter().all(|w| {
            n.iter()
                .any(|f| f.starts_with(&format!("{w}.")) && f.ends_with(".wal"))
        })
    });
    assert!(
        names_in(&spool)
            .iter()
            .filter(|f| f.ends_with(".wal"))
            .all(|f| f[..24] > *segs[6]),
        "{:?}",
        names_in(&spool)
    );
    // A history-file request (the end of recovery) empties the spool.
    let out = get("00000002.history", &dest("RECOVERYHISTORY"));
    assert!(!out.status.success());
    wait_spool(&spool, "empty of segments", |n| {
        n.iter()
            .all(|f| !f.ends_with(".wal") && !f.ends_with(".tmp"))
    });
    assert_eq!(
        fs::read_to_string(spool.join("prefetch.log")).unwrap_or_default(),
        ""
    );
}

#[test]
fn recovery_with_prefetch_reaches_the_same_data() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table markers(id int primary key)");
    setup.backup(&[]);
    c.pgbench_init(6);
    c.psql("insert into markers values (1)");
    let at_target = c.all_table_checksums();
    std::thread::sleep(Duration::from_millis(1200));
    let target = c.psql("select clock_timestamp()::text");
    std::thread::sleep(Duration::from_millis(1200));
    // Plenty of WAL after the target, so the prefetcher runs ahead of it.
    c.psql("create table later as select generate_series(1, 1500000) as x");
    c.psql("insert into markers values (2)");
    c.switch_wal_and_wait_archived();
    let at_end = c.all_table_checksums();
    assert!(segment_names(&setup).len() > 12);

    for (extra, expected) in [
        (vec!["--until-time", target.as_str()], &at_target),
        (vec![], &at_end),
    ] {
        let (_keep, to) = setup.restore(&extra);
        let conf = fs::read_to_string(to.join("postgresql.auto.conf")).unwrap();
        assert!(conf.contains("archive-get"), "{conf}");
        // Recovery runs through the spool: the segments served from it are renamed out of it,
        // each rename an event the kernel keeps for us. The spool is made (as the prefetcher
        // would) before the cluster starts, so that the watch sees every one.
        let spool = to.join("pg_wal/recman-prefetch");
        fs::create_dir_all(&spool).unwrap();
        chown_to_cluster_user(&spool);
        let moves = MovesOut::watch(&spool);
        let restored = Cluster::from_restored(to.clone());
        let deadline = Deadline::after(Duration::from_secs(300));
        while restored.try_psql("select pg_is_in_recovery()").as_deref() != Ok("f") {
            deadline.check(format_args!("recovery not done: {}", restored.log_tail()));
            std::thread::sleep(Duration::from_millis(200));
        }
        let served: BTreeSet<String> = moves
            .names()
            .into_iter()
            .filter(|f| f.ends_with(".wal") && f.get(..24).is_some_and(is_segment))
            .map(|f| f[..24].to_string())
            .collect();
        assert!(!served.is_empty(), "no segment was served from the spool");
        restored.amcheck_all();
        assert_eq!(&restored.all_table_checksums(), expected);
        // The spool ends up with no segment and no temporary file in it.
        wait_spool(&spool, "clean", |n| {
            n.iter()
                .all(|f| !f.ends_with(".tmp") && !f.ends_with(".wal"))
        });
        assert_eq!(
            fs::read_to_string(spool.join("prefetch.log")).unwrap_or_default(),
            "",
            "prefetch failures"
        );
        drop(restored);
    }
}
