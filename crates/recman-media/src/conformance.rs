//! The one conformance suite every driver passes (DESIGN.md, seams). Each check panics with
//! the driver's description and what it broke, so a test calling [`run`] reads as one line.

use std::io::{Read, Seek, SeekFrom, Write};

use crate::error::ErrorClass;
use crate::media::Media;

/// Every file below `dir`, for tests that check a driver left no debris.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(files_under(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

/// Deterministic, poorly compressible bytes, so drivers that compress cannot hide bugs.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Runs every check under `prefix` (which the caller keeps unique per run). `big` is the size
/// of the large object: above a multipart part size for S3, several blocks for tape.
pub fn run(m: &dyn Media, prefix: &str, big: usize) {
    let d = m.describe();
    let name = |n: &str| format!("{prefix}/{n}");
    missing_objects(m, &d, &name);
    invalid_names(m, &d);
    small_objects(m, &d, &name);
    let data = pattern(big, 7);
    big_object(m, &d, &name, &data);
    abort_and_drop(m, &d, &name, &data);
    list_and_remove(m, &d, prefix, &name);
}

fn missing_objects(m: &dyn Media, d: &str, name: &dyn Fn(&str) -> String) {
    // Missing objects.
    let missing = name("missing.obj");
    match m.open(&missing) {
        Err(e) => assert_eq!(e.class, ErrorClass::NotFound, "{d}: open missing: {e}"),
        Ok(_) => panic!("{d}: open of a missing object succeeded"),
    }
    assert_eq!(m.stat(&missing).unwrap(), None, "{d}: stat missing");
    assert!(
        !m.remove(&missing).unwrap(),
        "{d}: remove missing reports a removal"
    );
}

fn invalid_names(m: &dyn Media, d: &str) {
    // Invalid names are refused, permanently.
    for bad in ["", "/abs", "a/../b", "a//b", "./a"] {
        let e = m
            .create(bad)
            .err()
            .unwrap_or_else(|| panic!("{d}: accepted name {bad:?}"));
        assert_eq!(e.class, ErrorClass::Permanent, "{d}: name {bad:?}: {e}");
    }
}

fn small_objects(m: &dyn Media, d: &str, name: &dyn Fn(&str) -> String) {
    // Small put/get, empty object.
    m.put(&name("small/a"), b"hello").unwrap();
    assert_eq!(m.get(&name("small/a")).unwrap(), b"hello", "{d}: get small");
    m.put(&name("small/empty"), b"").unwrap();
    assert_eq!(m.get(&name("small/empty")).unwrap(), b"", "{d}: get empty");
    assert_eq!(
        m.stat(&name("small/a")).unwrap(),
        Some(5),
        "{d}: stat small"
    );

    // Overwrite replaces.
    m.put(&name("small/a"), b"replaced").unwrap();
    assert_eq!(
        m.get(&name("small/a")).unwrap(),
        b"replaced",
        "{d}: overwrite"
    );
}

/// `data` written in odd-sized pieces, then read back whole and at seeks.
fn big_object(m: &dyn Media, d: &str, name: &dyn Fn(&str) -> String, data: &[u8]) {
    let big = data.len();
    // Streaming write of a large object in odd-sized writes, invisible until commit.
    let mut w = m.create(&name("big/obj")).unwrap();
    for part in data.chunks(100_003) {
        w.write_all(part).unwrap();
    }
    assert_eq!(
        m.stat(&name("big/obj")).unwrap(),
        None,
        "{d}: visible before commit"
    );
    let listed: Vec<String> = m
        .list(&name("big/"))
        .unwrap()
        .into_iter()
        .map(|o| o.name)
        .collect();
    assert!(
        listed.is_empty(),
        "{d}: list shows an uncommitted object: {listed:?}"
    );
    assert_eq!(w.commit().unwrap(), big as u64, "{d}: commit size");
    assert_eq!(
        m.stat(&name("big/obj")).unwrap(),
        Some(big as u64),
        "{d}: stat big"
    );

    // Sequential read returns exactly the bytes.
    let mut r = m.open(&name("big/obj")).unwrap();
    assert_eq!(r.len(), big as u64, "{d}: reader len");
    let mut back = Vec::new();
    r.read_to_end(&mut back).unwrap();
    assert!(back == data, "{d}: big object read back differs");

    // Seeks: forward, backward, from the end, past a block boundary.
    let mut r = m.open(&name("big/obj")).unwrap();
    for &(at, len) in &[
        (big / 2, 4096),
        (10, 100),
        (big - 33, 33),
        (big / 3 + 1, 70_000),
    ] {
        let len = len.min(big - at);
        r.seek(SeekFrom::Start(at as u64)).unwrap();
        let mut buf = vec![0; len];
        r.read_exact(&mut buf).unwrap();
        assert!(
            buf == data[at..at + len],
            "{d}: read at {at} len {len} differs"
        );
    }
    let end = r.seek(SeekFrom::End(-5)).unwrap();
    assert_eq!(end, big as u64 - 5, "{d}: seek from end");
    let mut tail = Vec::new();
    r.read_to_end(&mut tail).unwrap();
    assert_eq!(tail, data[big - 5..], "{d}: tail");
}

fn abort_and_drop(m: &dyn Media, d: &str, name: &dyn Fn(&str) -> String, data: &[u8]) {
    // Abort and drop leave nothing.
    let mut w = m.create(&name("gone/aborted")).unwrap();
    w.write_all(&data[..1000]).unwrap();
    w.abort();
    let mut w = m.create(&name("gone/dropped")).unwrap();
    w.write_all(&data[..1000]).unwrap();
    drop(w);
    assert_eq!(
        m.stat(&name("gone/aborted")).unwrap(),
        None,
        "{d}: aborted object exists"
    );
    assert_eq!(
        m.stat(&name("gone/dropped")).unwrap(),
        None,
        "{d}: dropped object exists"
    );
    assert!(
        m.list(&name("gone/")).unwrap().is_empty(),
        "{d}: list shows aborted writes"
    );
}

/// Lists what the checks before left, then removes it all.
fn list_and_remove(m: &dyn Media, d: &str, prefix: &str, name: &dyn Fn(&str) -> String) {
    // List: sorted, by plain prefix, with sizes.
    let all = m.list(&format!("{prefix}/")).unwrap();
    let names: Vec<&str> = all.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            name("big/obj").as_str(),
            name("small/a").as_str(),
            name("small/empty").as_str()
        ],
        "{d}: list"
    );
    assert_eq!(all[1].size, 8, "{d}: listed size");
    let partial = m.list(&name("sm")).unwrap();
    assert_eq!(
        partial.len(),
        2,
        "{d}: list by a partial prefix: {partial:?}"
    );

    // Remove.
    assert!(m.remove(&name("small/a")).unwrap(), "{d}: remove existing");
    assert_eq!(
        m.stat(&name("small/a")).unwrap(),
        None,
        "{d}: removed object exists"
    );
    match m.open(&name("small/a")) {
        Err(e) => assert_eq!(e.class, ErrorClass::NotFound, "{d}: open removed: {e}"),
        Ok(_) => panic!("{d}: removed object opens"),
    }
    for o in m.list(&format!("{prefix}/")).unwrap() {
        m.remove(&o.name).unwrap();
    }
    assert!(
        m.list(&format!("{prefix}/")).unwrap().is_empty(),
        "{d}: cleanup"
    );
}

/// An object-store driver's requests reach the request meter ([`crate::meter`]) by kind, with
/// their payload bytes. The counters are the process's, and tests of one binary run at once,
/// so this asserts at least the requests it makes itself.
pub fn metered(m: &dyn Media, prefix: &str) {
    use crate::meter::{self, Kind};
    let d = m.describe();
    let data = pattern(3000, 9);
    let name = format!("{prefix}/metered");
    let before = meter::snapshot();
    m.put(&name, &data).unwrap();
    assert_eq!(m.get(&name).unwrap(), data, "{d}: read back");
    m.list(&format!("{prefix}/")).unwrap();
    assert!(m.remove(&name).unwrap(), "{d}: remove");
    let used = meter::snapshot().since(&before);
    let at_least = |k: Kind, requests: u64| {
        let u = used.of(k);
        assert!(
            u.requests >= requests,
            "{d}: {} requests of kind {} counted, {requests} made: {used:?}",
            u.requests,
            k.as_str()
        );
        u
    };
    assert!(
        at_least(Kind::Put, 1).bytes_sent >= data.len() as u64,
        "{d}: {used:?}"
    );
    assert!(
        at_least(Kind::Get, 1).bytes_received >= data.len() as u64,
        "{d}: {used:?}"
    );
    at_least(Kind::List, 1);
    at_least(Kind::Delete, 1);
}
