//! The repository lock against a second opener in this process and in another process.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use recman_catalog::{CatalogError, Repository};

const CHILD_ENV: &str = "RECMAN_CATALOG_TEST_LOCK_CHILD";
const LOCKED_MARKER: &str = "<<child-holds-the-lock>>";

#[test]
fn second_open_in_same_process_is_refused_until_drop() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::create(tmp.path()).unwrap();
    let other = Repository::open(tmp.path()).unwrap();

    let guard = repo.lock("backup database").unwrap();
    let err = other.lock("delete obsolete").unwrap_err();
    let CatalogError::Busy { holder, .. } = &err else {
        panic!("expected busy, got {err}");
    };
    assert_eq!(holder.pid, Some(std::process::id()));
    assert_eq!(holder.command.as_deref(), Some("backup database"));
    assert!(holder.since.is_some());
    let msg = err.to_string();
    let prefix = format!(
        "repository {} is busy: backup database (pid {}) since ",
        repo.root().display(),
        std::process::id()
    );
    assert!(msg.starts_with(&prefix), "{msg}");
    assert!(
        msg.ends_with("; hint: wait for it to finish, or check that process"),
        "{msg}"
    );
    // Even the same Repository cannot take it twice: the lock guards commands, not handles.
    assert!(matches!(repo.lock("again"), Err(CatalogError::Busy { .. })));

    drop(guard);
    let g2 = other.lock("delete obsolete").unwrap();
    let content = std::fs::read_to_string(repo.root().join("lock")).unwrap();
    assert!(content.contains("command=delete obsolete"), "{content}");
    drop(g2);
    assert_eq!(
        std::fs::read_to_string(repo.root().join("lock")).unwrap(),
        ""
    );
}

#[test]
fn lock_survives_a_deleted_lock_file() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::create(tmp.path()).unwrap();
    std::fs::remove_file(repo.root().join("lock")).unwrap();
    let g = repo.lock("x").unwrap();
    assert!(repo.root().join("lock").exists());
    drop(g);
}

/// Not a test of its own (so ignored, and it fails when run by hand): run by
/// `lock_held_by_another_process_and_freed_by_its_death` in a child process. Takes the lock,
/// says so, and waits until killed, its stdin closes, or a time limit passes, so a failing
/// parent can never leave it behind for long.
#[test]
#[ignore = "a child process of lock_held_by_another_process_and_freed_by_its_death"]
fn lock_child_helper() {
    let root = std::env::var_os(CHILD_ENV).unwrap_or_else(|| {
        panic!("{CHILD_ENV} is unset; hint: this helper runs only as another test's child")
    });
    let repo = Repository::open(Path::new(&root)).unwrap();
    let _guard = repo.lock("backup database").unwrap();
    // libtest prints "test lock_child_helper ... " on the same line, so the marker may not
    // start the line; the parent looks for it anywhere.
    println!("{LOCKED_MARKER}");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        let _ = tx.send(());
    });
    let _ = rx.recv_timeout(Duration::from_secs(60));
}

#[test]
fn lock_held_by_another_process_and_freed_by_its_death() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::create(tmp.path()).unwrap();

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "lock_child_helper",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let found = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.contains(LOCKED_MARKER));
        let _ = tx.send(found);
    });
    let locked = rx.recv_timeout(Duration::from_secs(30)).unwrap_or(false);
    if !locked {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the child never took the lock");
    }

    let err = repo.lock("backup database").unwrap_err();
    let CatalogError::Busy { holder, .. } = &err else {
        panic!("expected busy, got {err}");
    };
    assert_eq!(holder.pid, Some(child.id()));
    assert!(
        err.to_string().contains(&format!("(pid {})", child.id())),
        "{err}"
    );

    // SIGKILL: no destructor runs, the kernel alone must release the lock.
    child.kill().unwrap();
    child.wait().unwrap();
    let g = repo.lock("backup database").unwrap();
    drop(g);
}
