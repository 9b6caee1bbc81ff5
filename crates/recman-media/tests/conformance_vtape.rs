//! The conformance suite against the virtual tape library, and the behaviour of its model.
//! Assertions are on the model's counters and clock, never on elapsed wall time.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use recman_media::conformance::{self, pattern};
use recman_media::vtape::{VtapeConfig, VtapeMedia};
use recman_media::{ErrorClass, Media};

/// Fast drives and small cartridges, so the suite's 9 MiB object spans three of them.
fn fast(drives: usize, capacity: u64) -> VtapeConfig {
    VtapeConfig {
        drives,
        block_size: 256 << 10,
        cartridge_capacity: capacity,
        cartridges: 16,
        native_rate: 2e9,
        hardware_compression: true,
        load_time: Duration::from_micros(10),
        position_time: Duration::from_micros(10),
        block_overhead: Duration::ZERO,
        drive_buffer: 64 << 20,
    }
}

fn library(config: &VtapeConfig) -> (tempfile::TempDir, VtapeMedia) {
    let dir = tempfile::tempdir().unwrap();
    let m = VtapeMedia::create_library(dir.path(), config).unwrap();
    (dir, m)
}

fn files(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            out.extend(files(&e.path()));
        } else {
            let name = e.path().display().to_string();
            out.push((name, e.metadata().unwrap().len()));
        }
    }
    out
}

#[test]
fn vtape_passes_the_conformance_suite() {
    let (dir, m) = library(&fast(2, 4 << 20));
    conformance::run(&m, "run1", 9 << 20);
    // Everything was removed, so every cartridge went back to scratch, aborted writes'
    // dead space included, and no temporary index file is left.
    for (name, len) in files(dir.path()) {
        assert!(!name.contains(".tmp-"), "temporary file left: {name}");
        if name.ends_with(".tape") {
            assert_eq!(len, 0, "{name} was not returned to scratch");
        }
    }
}

#[test]
fn a_big_object_spans_cartridges() {
    let (_dir, m) = library(&fast(1, 4 << 20));
    let data = pattern(9 << 20, 1);
    m.put("big", &data).unwrap();
    let extents = m.extents("big").unwrap().unwrap();
    let carts: Vec<u32> = extents.iter().map(|e| e.cartridge).collect();
    assert_eq!(carts, vec![1, 2, 3], "{extents:?}");
    for c in carts {
        let len = std::fs::metadata(m.cartridge_path(c)).unwrap().len();
        assert!(len > 0 && len <= 4 << 20, "cartridge {c} holds {len} bytes");
    }
    assert_eq!(extents.iter().map(|e| e.len).sum::<u64>(), 9 << 20);
    assert_eq!(m.drive_stats()[0].loads, 3, "one load per cartridge");
    assert!(
        m.get("big").unwrap() == data,
        "spanned object reads back differently"
    );
}

#[test]
fn a_third_writer_waits_for_one_of_two_drives() {
    let (_dir, m) = library(&fast(2, 64 << 20));
    let mut w1 = m.create("one").unwrap();
    let mut w2 = m.create("two").unwrap();
    w1.write_all(b"first").unwrap();
    w2.write_all(b"second").unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut w3 = m.create("three").unwrap();
            tx.send(()).unwrap();
            w3.write_all(b"third").unwrap();
            w3.commit().unwrap();
        });
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(300)),
            Err(mpsc::RecvTimeoutError::Timeout),
            "a third writer got a drive while both were busy"
        );
        w1.commit().unwrap();
        rx.recv().unwrap();
        w2.commit().unwrap();
    });
    assert_eq!(m.get("three").unwrap(), b"third");
    assert_eq!(m.list("").unwrap().len(), 3);
}

#[test]
fn the_library_reopens_from_disk() {
    let (dir, m) = library(&fast(2, 4 << 20));
    let big = pattern(5 << 20, 2);
    m.put("a/big", &big).unwrap();
    m.put("a/small", b"small").unwrap();
    m.put("b/empty", b"").unwrap();
    drop(m);
    let m = VtapeMedia::open(dir.path()).unwrap();
    assert_eq!(m.config(), &fast(2, 4 << 20));
    let names: Vec<String> = m.list("").unwrap().into_iter().map(|o| o.name).collect();
    assert_eq!(names, ["a/big", "a/small", "b/empty"]);
    assert!(m.get("a/big").unwrap() == big);
    assert_eq!(m.get("a/small").unwrap(), b"small");
    assert_eq!(m.get("b/empty").unwrap(), b"");
    // The reopened library appends after what is there.
    m.put("c", b"more").unwrap();
    assert!(m.get("a/big").unwrap() == big);
}

#[test]
fn two_handles_share_drives_and_objects_like_two_processes() {
    let (dir, m1) = library(&fast(1, 64 << 20));
    let m2 = VtapeMedia::open(dir.path()).unwrap();
    let mut w1 = m1.create("from1").unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut w2 = m2.create("from2").unwrap();
            tx.send(()).unwrap();
            w2.write_all(b"two").unwrap();
            w2.commit().unwrap();
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the drive was shared"
        );
        w1.write_all(b"one").unwrap();
        w1.commit().unwrap();
        rx.recv().unwrap();
    });
    assert_eq!(m2.get("from1").unwrap(), b"one");
    assert_eq!(m1.get("from2").unwrap(), b"two");
}

/// Slow enough that a block takes 6.5 ms and the buffer hides 400 ms of writer stalls.
fn streaming() -> VtapeConfig {
    VtapeConfig {
        drives: 1,
        block_size: 64 << 10,
        native_rate: 10e6,
        hardware_compression: false,
        load_time: Duration::ZERO,
        position_time: Duration::from_millis(10),
        block_overhead: Duration::ZERO,
        drive_buffer: 4 << 20,
        ..VtapeConfig::default()
    }
}

/// Neither half depends on how promptly this machine runs the writer. The fed writer hands over
/// all its blocks while the cartridge loads (1 s of model time), into a buffer that holds them
/// all, so the drive has them before it starts: only a stall of a whole second could starve it.
/// The starved writer waits at least 30 ms between blocks (a sleep never ends early), longer
/// than a block, a reposition and the slack together (21.5 ms), so each of its 7 gaps finds
/// the drive stopped; a loaded machine only makes the gaps longer.
#[test]
fn a_starved_writer_shoe_shines_and_a_fed_one_does_not() {
    let config = VtapeConfig {
        load_time: Duration::from_secs(1),
        ..streaming()
    };
    let (_dir, m) = library(&config);
    let data = pattern(2 << 20, 3);
    m.put("fed", &data).unwrap();
    let fed = m.drive_stats()[0].clone();
    assert_eq!(fed.blocks, 32);
    assert_eq!(fed.loads, 1, "{fed:?}");
    assert_eq!(fed.shoe_shines, 0, "a fed drive streams: {fed:?}");

    let mut w = m.create("starved").unwrap();
    for block in data[..8 << 16].chunks(64 << 10) {
        w.write_all(block).unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }
    w.commit().unwrap();
    let starved = m.drive_stats()[0].clone();
    assert_eq!(starved.blocks - fed.blocks, 8);
    assert_eq!(
        starved.shoe_shines, 7,
        "every block after the first found the drive stopped"
    );
    let block_time = Duration::from_secs_f64((64 << 10) as f64 / 10e6);
    assert!(
        starved.busy - fed.busy >= 7 * config.position_time + 8 * block_time,
        "repositions cost model time: {starved:?}"
    );
}

#[test]
fn reads_stream_and_seeks_cost_a_locate() {
    let (_dir, m) = library(&streaming());
    let data = pattern(1 << 20, 4);
    m.put("obj", &data).unwrap();
    let before = m.drive_stats()[0].clone();
    let mut r = m.open("obj").unwrap();
    let mut back = Vec::new();
    r.read_to_end(&mut back).unwrap();
    assert!(back == data);
    let read = m.drive_stats()[0].clone();
    assert_eq!(read.bytes_out - before.bytes_out, 1 << 20);
    assert_eq!(read.blocks - before.blocks, 16);
    assert_eq!(
        read.positions - before.positions,
        1,
        "one locate back to the object's start"
    );
    r.seek(SeekFrom::Start(300_000)).unwrap();
    let mut buf = [0u8; 10];
    r.read_exact(&mut buf).unwrap();
    assert_eq!(buf, data[300_000..300_010]);
    assert_eq!(
        m.drive_stats()[0].positions - read.positions,
        1,
        "a seek is a locate"
    );
}

#[test]
fn hardware_compression_follows_the_data() {
    let text: Vec<u8> = b"pg_class relname relkind 0000000000 "
        .iter()
        .copied()
        .cycle()
        .take(4 << 20)
        .collect();
    let (_dir, m) = library(&fast(1, 64 << 20));
    m.put("text", &text).unwrap();
    let s = m.drive_stats()[0].clone();
    assert_eq!(s.bytes_in, 4 << 20);
    assert!(
        s.tape_bytes * 3 < s.bytes_in,
        "compressible data took {} tape bytes",
        s.tape_bytes
    );
    let tape: u64 = m
        .extents("text")
        .unwrap()
        .unwrap()
        .iter()
        .map(|e| e.tape_len)
        .sum();
    assert_eq!(tape, s.tape_bytes);

    let mut off = fast(1, 64 << 20);
    off.hardware_compression = false;
    let (_dir2, m2) = library(&off);
    m2.put("text", &text[..(1 << 20) + 1]).unwrap();
    let s = m2.drive_stats()[0].clone();
    assert_eq!(
        s.tape_bytes,
        5 * (256 << 10),
        "without compression, padded blocks"
    );
}

#[test]
fn a_full_library_refuses_and_removal_returns_cartridges_to_scratch() {
    let mut config = fast(1, 1 << 20);
    config.cartridges = 2;
    config.hardware_compression = false;
    let (_dir, m) = library(&config);
    m.put("a", &pattern(2 << 20, 5)).unwrap();
    let e = m.put("b", b"x").unwrap_err();
    assert_eq!(e.class, ErrorClass::Permanent);
    let text = e.to_string();
    assert!(
        text.contains("no scratch cartridge left") && text.contains("hint:"),
        "{text}"
    );
    assert!(m.remove("a").unwrap());
    assert_eq!(std::fs::metadata(m.cartridge_path(1)).unwrap().len(), 0);
    m.put("b", &pattern(2 << 20, 6)).unwrap();
    assert_eq!(
        m.extents("b").unwrap().unwrap()[0].offset,
        0,
        "rewritten from the start"
    );

    let mut bad = config.clone();
    bad.cartridge_capacity = 1000;
    let dir = tempfile::tempdir().unwrap();
    let e = VtapeMedia::create_library(dir.path(), &bad).unwrap_err();
    assert_eq!(e.class, ErrorClass::Permanent);
    assert!(e.to_string().contains("cartridge_capacity"), "{e}");
}
