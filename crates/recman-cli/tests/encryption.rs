//! Issue 16: encryption at rest. An encrypted repository holds neither the data nor the
//! passphrase in any object; restore and recovery through archive-get work with the key in
//! the server's environment; wrong or missing keys and tampered objects are refused naming
//! what failed, with nothing restored; `key rotate` rewrites no data object, and a rotation
//! killed at any point leaves the old or the new key working.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const PASS: &str = "h16 passphrase: correct horse battery staple";
const NEW_PASS: &str = "h16 the second passphrase, after rotation";
const MARKER: &str = "MARKER-7f3a9c1e-secret-row";

/// Starts `c` (made with `start: false`) with `env` in the server's environment, as an
/// archive_command or restore_command sees it.
fn start_with_env(c: &Cluster, env: &[(&str, &str)]) {
    let opts = format!(
        "-p {} -c unix_socket_directories='{}' -c listen_addresses=''",
        c.port,
        c.sockdir.display()
    );
    let mut cmd = Command::new(pg_bin("pg_ctl"));
    cmd.arg("-D").arg(&c.pgdata);
    as_cluster_user(&mut cmd);
    cmd.envs(env.iter().copied());
    cmd.arg("-l")
        .arg(&c.log)
        .args(["-w", "-t", "120", "-o", &opts, "start"]);
    let out = cmd.output().expect("pg_ctl runs");
    assert!(
        out.status.success(),
        "pg_ctl start failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        c.log_tail()
    );
}

struct Enc {
    _t: tempfile::TempDir,
    repo: PathBuf,
    cluster: Cluster,
}

impl Enc {
    fn args(&self, args: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "--repo".into(),
            path_str(&self.repo).into(),
            "--pgdata".into(),
            path_str(&self.cluster.pgdata).into(),
            "--target".into(),
            self.cluster.conninfo(),
        ];
        v.extend(args.iter().map(|s| s.to_string()));
        v
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        recman_env(self.args(args), env)
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args, &[("RECMAN_PASSPHRASE", PASS)]);
        assert!(
            out.status.success(),
            "recman {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn err(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let out = self.run(args, env);
        assert!(
            !out.status.success(),
            "recman {args:?} unexpectedly succeeded"
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

/// An encrypted repository and a cluster archiving into it (the key in the server's
/// environment), with a table holding the marker, backed up uncompressed, and more marker
/// rows in WAL after the backup.
fn setup() -> Enc {
    let (t, repo) = new_repo();
    let out = recman_env(
        ["--repo", path_str(&repo), "create", "catalog", "--encrypt"],
        &[("RECMAN_PASSPHRASE", PASS)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cluster = Cluster::init_with(ClusterOpts {
        extra_conf: vec![
            "archive_mode = on".into(),
            format!(
                "archive_command = '{}'",
                archive_command(&repo).replace('\'', "''")
            ),
        ],
        start: false,
        ..Default::default()
    });
    start_with_env(&cluster, &[("RECMAN_PASSPHRASE", PASS)]);
    let e = Enc {
        _t: t,
        repo,
        cluster,
    };
    e.ok(&["register", "database", "--name", "main"]);
    e.cluster.psql(&format!(
        "create table secret(id int, v text); insert into secret select g, '{MARKER}' from generate_series(1, 200) g"
    ));
    e.ok(&["backup", "database", "--compress", "none"]);
    e.cluster.psql(&format!(
        "insert into secret select g, '{MARKER}-after' from generate_series(1, 50) g"
    ));
    e.cluster.switch_wal_and_wait_archived();
    e
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Data objects (pieces, manifests, archived WAL): everything but the catalog, lock, marker
/// and key record.
fn data_objects(repo: &Path) -> Vec<PathBuf> {
    files_under(repo)
        .into_iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            !(n.starts_with("catalog.db") || n == "lock" || n == "recman.repo" || n == "recman.key")
        })
        .collect()
}

fn restored_rows(pgdata: &Path) -> String {
    let c = Cluster::adopt(pgdata.to_path_buf());
    start_with_env(&c, &[("RECMAN_PASSPHRASE", PASS)]);
    c.wait_recovery_done(Duration::from_secs(180));
    let rows = c.psql(&format!(
        "select count(*) filter (where v = '{MARKER}') || '/' || count(*) filter (where v = '{MARKER}-after') from secret"
    ));
    c.stop();
    rows
}

fn assert_nothing_restored(to: &Path) {
    let left: Vec<_> = std::fs::read_dir(to)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "restore left files behind: {left:?}");
}

#[test]
fn encrypted_repository_hides_data_and_key_and_restores_with_it() {
    let e = setup();
    let objects = data_objects(&e.repo);
    assert!(
        objects
            .iter()
            .any(|p| p.extension().is_some_and(|x| x == "rmp")),
        "{objects:?}"
    );
    assert!(
        objects
            .iter()
            .any(|p| p.extension().is_some_and(|x| x == "rmw")),
        "{objects:?}"
    );
    // No file of the repository, catalog included, holds the marker or the passphrase.
    for p in files_under(&e.repo) {
        let b = std::fs::read(&p).unwrap();
        assert!(
            !contains(&b, MARKER.as_bytes()),
            "{} holds the marker",
            p.display()
        );
        assert!(
            !contains(&b, PASS.as_bytes()),
            "{} holds the passphrase",
            p.display()
        );
    }
    for p in &objects {
        let b = std::fs::read(p).unwrap();
        assert!(b.starts_with(b"RMCRYPT1"), "{} is not sealed", p.display());
    }

    // The key is needed, and only the right one opens the repository.
    let err = e.err(&["list", "backup"], &[]);
    assert!(
        err.contains("no key was given") && err.contains("RECMAN_PASSPHRASE"),
        "{err}"
    );
    let err = e.err(&["list", "backup"], &[("RECMAN_PASSPHRASE", "wrong")]);
    assert!(err.contains("does not open the repository"), "{err}");
    assert!(!err.contains(PASS));

    let (_s, scratch) = new_scratch_dir();
    let to = scratch.join("wrongkey");
    let err = e.err(
        &["restore", "database", "--to", path_str(&to)],
        &[("RECMAN_PASSPHRASE", "wrong")],
    );
    assert!(err.contains("does not open the repository"), "{err}");
    assert_nothing_restored(&to);

    e.ok(&["validate", "backup"]);
    let to = scratch.join("r");
    e.ok(&["restore", "database", "--to", path_str(&to)]);
    let conf = std::fs::read_to_string(to.join("postgresql.auto.conf")).unwrap();
    assert!(
        conf.contains("archive-get") && !conf.contains(PASS),
        "{conf}"
    );
    assert_eq!(
        restored_rows(&to),
        "200/50",
        "recovery did not reach the end of WAL"
    );
}

/// Overwrites `len` bytes of `p` at `at` with `with`, returning the original file.
fn patch(p: &Path, f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let orig = std::fs::read(p).unwrap();
    let mut b = orig.clone();
    f(&mut b);
    std::fs::write(p, &b).unwrap();
    orig
}

const SEG: usize = 64 * 1024 + 16;
const HDR: usize = 92;

#[test]
fn tampered_encrypted_objects_are_refused_and_nothing_is_restored() {
    let e = setup();
    let objects = data_objects(&e.repo);
    let piece = objects
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "rmp"))
        .max_by_key(|p| p.metadata().unwrap().len())
        .unwrap()
        .clone();
    let other = objects
        .iter()
        .find(|p| p.extension().is_some_and(|x| x == "rmw"))
        .unwrap()
        .clone();
    assert!(
        piece.metadata().unwrap().len() as usize > HDR + 3 * SEG,
        "piece too small"
    );
    let name = piece.file_name().unwrap().to_string_lossy().to_string();
    let (_s, scratch) = new_scratch_dir();
    type Edit = Box<dyn Fn(&mut Vec<u8>)>;
    let moved = std::fs::read(&other).unwrap();
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "truncated at a segment boundary",
            Box::new(|b: &mut Vec<u8>| {
                let n = (b.len() - HDR) / SEG * SEG + HDR;
                b.truncate(n);
            }),
            "truncated",
        ),
        (
            "a segment dropped",
            Box::new(|b: &mut Vec<u8>| {
                b.drain(HDR + SEG..HDR + 2 * SEG);
            }),
            "segment 1",
        ),
        (
            "truncated in a segment",
            Box::new(|b: &mut Vec<u8>| b.truncate(b.len() - 100)),
            "does not authenticate",
        ),
        (
            "segments reordered",
            Box::new(|b: &mut Vec<u8>| {
                let (s0, s1) = (HDR, HDR + SEG);
                let first = b[s0..s1].to_vec();
                let second = b[s1..s1 + SEG].to_vec();
                b[s0..s1].copy_from_slice(&second);
                b[s1..s1 + SEG].copy_from_slice(&first);
            }),
            "segment 0",
        ),
        (
            "a segment moved from another piece",
            Box::new(move |b: &mut Vec<u8>| {
                let n = SEG.min(moved.len() - HDR);
                b[HDR..HDR + n].copy_from_slice(&moved[HDR..HDR + n]);
            }),
            "segment 0",
        ),
        (
            "a bit flipped in the wrapped data key",
            Box::new(|b: &mut Vec<u8>| b[60] ^= 0x10),
            "wrapped data key does not authenticate",
        ),
    ];
    for (i, (what, edit, expect)) in cases.into_iter().enumerate() {
        let orig = patch(&piece, edit);
        let to = scratch.join(format!("r{i}"));
        let err = e.err(
            &["restore", "database", "--to", path_str(&to)],
            &[("RECMAN_PASSPHRASE", PASS)],
        );
        assert!(err.contains(&name) && err.contains(expect), "{what}: {err}");
        assert_nothing_restored(&to);
        let err = e.err(&["validate", "backup"], &[("RECMAN_PASSPHRASE", PASS)]);
        assert!(err.contains(&name), "{what}: validate: {err}");
        std::fs::write(&piece, orig).unwrap();
    }

    // A manifest changed by a hand without the key: validate reports tampering, naming it.
    let manifest = piece.parent().unwrap().join("manifest.json");
    let orig = patch(&manifest, |b| b[HDR + 10] ^= 1);
    let err = e.err(&["validate", "backup"], &[("RECMAN_PASSPHRASE", PASS)]);
    assert!(
        err.contains("manifest.json") && err.contains("tampered"),
        "manifest: {err}"
    );
    std::fs::write(&manifest, orig).unwrap();

    // A bit flipped in a wrapped key of the key record.
    let record = e.repo.join("recman.key");
    let orig = patch(&record, |b| {
        let text = String::from_utf8(b.clone()).unwrap();
        let at = text.find("\"wrapped\": \"").unwrap() + 12 + 40;
        b[at] = if b[at] == b'0' { b'1' } else { b'0' };
    });
    let to = scratch.join("rk");
    let err = e.err(
        &["restore", "database", "--to", path_str(&to)],
        &[("RECMAN_PASSPHRASE", PASS)],
    );
    assert!(
        err.contains("recman.key") && err.contains("does not authenticate"),
        "{err}"
    );
    assert_nothing_restored(&to);
    std::fs::write(&record, orig).unwrap();
    e.ok(&["validate", "backup"]);
}

fn snapshot(repo: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    data_objects(repo)
        .into_iter()
        .map(|p| {
            let m = p.metadata().unwrap().modified().unwrap();
            let b = std::fs::read(&p).unwrap();
            (p, b, m)
        })
        .collect()
}

fn opens(e: &Enc, pass: &str) -> bool {
    e.run(&["key", "show"], &[("RECMAN_PASSPHRASE", pass)])
        .status
        .success()
}

#[test]
fn key_rotation_rewrites_no_data_object_and_survives_sigkill() {
    let e = setup();
    let before = snapshot(&e.repo);
    let shown = e.ok(&["key", "show"]);
    assert!(shown.contains("generation 1"), "{shown}");
    let out = e.run(
        &["key", "rotate"],
        &[
            ("RECMAN_PASSPHRASE", PASS),
            ("RECMAN_NEW_PASSPHRASE", NEW_PASS),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(snapshot(&e.repo), before, "rotation changed a data object");
    assert!(!opens(&e, PASS), "the old key still opens the repository");
    let new = [("RECMAN_PASSPHRASE", NEW_PASS)];
    let out = e.run(&["validate", "backup"], &new);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_s, scratch) = new_scratch_dir();
    let to = scratch.join("r");
    let out = e.run(&["restore", "database", "--to", path_str(&to)], &new);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(to.join("PG_VERSION").exists());

    // Rotations killed at 20 points from start to end: one of the two keys always works.
    let (mut cur, mut next) = (NEW_PASS, PASS);
    for i in 0..20u64 {
        let mut cmd = recman_cmd(e.args(&["key", "rotate"]));
        cmd.envs([("RECMAN_PASSPHRASE", cur), ("RECMAN_NEW_PASSPHRASE", next)]);
        cmd.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(i * 15));
        let _ = child.kill();
        let _ = child.wait();
        let (a, b) = (opens(&e, cur), opens(&e, next));
        assert!(
            a || b,
            "after a kill at {} ms neither key opens the repository",
            i * 15
        );
        assert!(!(a && b), "both keys open the repository");
        if b {
            std::mem::swap(&mut cur, &mut next);
        }
    }
    // A killed rotation may leave its temporary key record behind (debris, not an object);
    // every data object is as it was.
    let after = snapshot(&e.repo);
    for (p, b, m) in &before {
        let now = after.iter().find(|(q, _, _)| q == p);
        assert!(
            now.is_some_and(|(_, nb, nm)| nb == b && nm == m),
            "a rotation changed data object {}",
            p.display()
        );
    }
    for (p, _, _) in &after {
        let n = p.file_name().unwrap().to_string_lossy();
        assert!(
            before.iter().any(|(q, _, _)| q == p) || n.contains("recman.key"),
            "a rotation wrote {}",
            p.display()
        );
    }
    let out = e.run(&["validate", "backup"], &[("RECMAN_PASSPHRASE", cur)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
