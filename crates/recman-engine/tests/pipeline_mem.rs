//! The piece pipeline on the test kit's in-memory driver, with no binary, disk or server: a
//! set written through the set writer reads back through the scanner byte for byte, and a
//! damaged chunk is named, as the same kind of error, whether restore or validate reads it.

use recman_engine::test_api::{ScanAs, scan_set, write_set};
use recman_engine::{Action, ErrorKind};
use recman_format::Compression;
use recman_testkit::MemMedia;
use recman_testkit::fixtures::{self, BLCKSZ};

const REL: &str = "main/backup/B1/set1-1.rmp";

fn written(media: &MemMedia) -> (Vec<Vec<u8>>, recman_engine::test_api::WrittenSet) {
    let files = vec![
        fixtures::relation_file(24, 0x1_0000_0028, 1),
        fixtures::relation_file(3, 0x1_0000_0028, 2),
        fixtures::pattern(5000, 3),
    ];
    let header = fixtures::piece_header(
        "B1",
        1,
        &["base/5/16384", "base/5/16390", "global/pg_control"],
        Compression::None,
    );
    let set = write_set(media, REL, &header, &files, 4 * BLCKSZ).expect("write the set");
    (files, set)
}

#[test]
fn a_set_written_through_the_set_writer_scans_back_whole() {
    let media = MemMedia::new("repo");
    let (files, set) = written(&media);
    assert_eq!(media.names(), [REL]);
    assert_eq!(set.size, media.bytes(REL).unwrap().len() as u64);
    // Every byte the writer handed over reached the device.
    assert_eq!(set.bytes_written, set.size);
    let got = scan_set(&media, &set, ScanAs::Restore).expect("scan");
    assert_eq!(got.files["base/5/16384"], files[0]);
    assert_eq!(got.files["base/5/16390"], files[1]);
    assert_eq!(got.files["global/pg_control"], files[2]);
    // The INPUT statistics count the whole piece.
    assert_eq!(got.bytes_read, set.size);
}

#[test]
fn a_damaged_chunk_is_named_and_is_corrupt_for_restore_and_validate_alike() {
    let media = MemMedia::new("repo");
    let (_, set) = written(&media);
    // A byte inside the second file's data: past the header and the first file's 24 blocks.
    let at = set.size as usize - 5000 - 3 * BLCKSZ / 2;
    media.corrupt(REL, at);
    let restore = scan_set(&media, &set, ScanAs::Restore).expect_err("damage must be found");
    let validate = scan_set(&media, &set, ScanAs::Validate).expect_err("damage must be found");
    for e in [&restore, &validate] {
        let text = e.to_string();
        assert!(text.contains(REL), "names the piece: {text}");
        assert!(
            text.contains("in file base/5/16390"),
            "names the file: {text}"
        );
        assert!(text.contains("; hint: "), "ends with a hint: {text}");
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{text}");
    }
    // Restore's advice is an action each front end names its own way.
    assert!(
        restore.actions().contains(&Action::RestoreFromTag),
        "{restore}"
    );
}

#[test]
fn a_device_that_does_not_answer_is_transient_not_damage() {
    let media = MemMedia::new("repo");
    let (_, set) = written(&media);
    media.fail_opens(Some(recman_media::ErrorClass::Transient));
    let e = scan_set(&media, &set, ScanAs::Validate).expect_err("no device");
    assert_eq!(e.kind(), ErrorKind::Transient, "{e}");
}

#[test]
fn a_file_unlike_its_record_is_corrupt_for_restore_and_validate_alike() {
    let media = MemMedia::new("repo");
    let (_, mut set) = written(&media);
    // The piece is intact, but the catalog recorded another checksum for the second file.
    set.files[1].2 ^= 1;
    for scan_as in [ScanAs::Restore, ScanAs::Validate] {
        let e = scan_set(&media, &set, scan_as).expect_err("mismatch must be found");
        let text = e.to_string();
        assert!(text.contains("file base/5/16390 in backup piece"), "{text}");
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{scan_as:?}: {text}");
    }
}
