//! The sealed object format through a disk driver: round trips at every size class, seeks,
//! and the refusals.

use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::Arc;

use super::{EncryptedMedia, Keyring, SEGMENT, Secret};
use crate::disk::DiskMedia;
use crate::media::Media;

fn setup() -> (tempfile::TempDir, Arc<dyn Media>, EncryptedMedia) {
    let d = tempfile::tempdir().unwrap();
    let disk: Arc<dyn Media> = Arc::new(DiskMedia::new(d.path()).unwrap());
    let keys = Keyring::create(
        disk.as_ref(),
        &Secret::new(b"unit test passphrase".to_vec()),
    )
    .unwrap();
    let m = EncryptedMedia::new(Arc::clone(&disk), Arc::new(keys));
    (d, disk, m)
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

#[test]
fn round_trips_and_seeks_at_every_size() {
    let (_d, disk, m) = setup();
    for n in [
        0,
        1,
        SEGMENT - 1,
        SEGMENT,
        SEGMENT + 1,
        3 * SEGMENT,
        3 * SEGMENT + 77,
    ] {
        let name = format!("o/{n}");
        let want = data(n);
        let mut w = m.create(&name).unwrap();
        for c in want.chunks(10_000) {
            w.write_all(c).unwrap();
        }
        assert_eq!(w.commit().unwrap(), n as u64);
        assert_eq!(m.stat(&name).unwrap(), Some(n as u64));
        assert_eq!(m.get(&name).unwrap(), want, "size {n}");
        assert!(disk.get(&name).unwrap().starts_with(b"RMCRYPT1"));
        if n > 10 {
            let mut r = m.open(&name).unwrap();
            r.seek(SeekFrom::End(-10)).unwrap();
            let mut tail = Vec::new();
            r.read_to_end(&mut tail).unwrap();
            assert_eq!(tail, want[n - 10..]);
        }
    }
}

#[test]
fn another_key_or_a_moved_object_is_refused() {
    let (d, disk, m) = setup();
    m.put("a", &data(1000)).unwrap();
    // The same bytes under another name: bound to its name.
    disk.put("b", &disk.get("a").unwrap()).unwrap();
    let e = m.get("b").unwrap_err().to_string();
    assert!(e.contains("wrapped data key does not authenticate"), "{e}");
    // Another passphrase does not open the key record.
    let e = Keyring::load(disk.as_ref(), || Ok(Secret::new(b"wrong".to_vec()))).unwrap_err();
    assert!(
        e.to_string().contains("does not open the repository"),
        "{e}"
    );
    // Rotation: the old passphrase opens nothing, the new one opens the old objects.
    Keyring::rotate(
        disk.as_ref(),
        &Secret::new(b"unit test passphrase".to_vec()),
        &Secret::new(b"new".to_vec()),
    )
    .unwrap();
    assert!(
        Keyring::load(disk.as_ref(), || Ok(Secret::new(
            b"unit test passphrase".to_vec()
        )))
        .is_err()
    );
    let k = Keyring::load(disk.as_ref(), || Ok(Secret::new(b"new".to_vec())))
        .unwrap()
        .unwrap();
    let m2 = EncryptedMedia::new(Arc::clone(&disk), Arc::new(k));
    assert_eq!(m2.get("a").unwrap(), data(1000));
    drop(d);
}

#[test]
fn a_raw_key_file_skips_the_kdf() {
    let d = tempfile::tempdir().unwrap();
    let disk: Arc<dyn Media> = Arc::new(DiskMedia::new(d.path()).unwrap());
    let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
    let k = Keyring::create(disk.as_ref(), &Secret::new(hex.as_bytes().to_vec())).unwrap();
    assert_eq!(k.info().kdf, "raw");
    let e = Keyring::load(disk.as_ref(), || Ok(Secret::new(b"a passphrase".to_vec()))).unwrap_err();
    assert!(e.to_string().contains("64 hex digits"), "{e}");
}

/// Reads as large as the scanner's (1 MiB, many segments) mixed with small ones return the
/// plaintext; a flipped bit is refused by them, and an object cut at a segment boundary (its
/// empty final segment dropped) fails.
#[test]
fn large_reads_return_the_plaintext_and_authenticate_every_segment() {
    let (_d, disk, m) = setup();
    for n in [SEGMENT, 2 * SEGMENT, 3 * SEGMENT + 77] {
        let name = format!("big/{n}");
        let want = data(n);
        m.put(&name, &want).unwrap();
        // Whole segments straight into a large buffer, then a small read in between.
        let mut r = m.open(&name).unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut small = true;
        loop {
            let k = if small { 10 } else { buf.len() };
            small = !small;
            let n = r.read(&mut buf[..k]).unwrap();
            if n == 0 && k == buf.len() {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got.len(), want.len(), "size {n}");
        assert_eq!(got, want, "size {n}");
        // Objects are bound to their names: the damaged copies replace the original.
        let sealed = disk.get(&name).unwrap();
        let refused = |bytes: &[u8]| -> String {
            disk.put(&name, bytes).unwrap();
            let mut r = match m.open(&name) {
                Ok(r) => r,
                Err(e) => return e.to_string(),
            };
            let mut buf = vec![0u8; 1 << 20];
            loop {
                match r.read(&mut buf) {
                    Ok(0) => panic!("a damaged object of size {n} read to its end"),
                    Ok(_) => {}
                    Err(e) => return e.to_string(),
                }
            }
        };
        // A bit flipped in the second segment: refused by a large read.
        let mut bad = sealed.clone();
        bad[super::HEADER_LEN + SEGMENT + 16 + 5] ^= 1;
        let e = refused(&bad);
        assert!(e.contains("segment 1 "), "{e}");
        if n == 2 * SEGMENT {
            // Three segments, the last empty: without it the object must not read.
            let e = refused(&sealed[..sealed.len() - 16]);
            assert!(e.contains("truncated"), "{e}");
        }
    }
}
