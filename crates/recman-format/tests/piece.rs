use std::collections::BTreeMap;
use std::io::{Cursor, Read};

use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use recman_format::*;

const ALL: [Compression; 4] = [
    Compression::None,
    Compression::Lz4,
    Compression::Zstd { level: 3 },
    Compression::Zstd { level: 19 },
];

fn header(compression: Compression, nfiles: u32) -> PieceHeader {
    PieceHeader {
        backup_id: "20240102T030405-abc".into(),
        db_name: "prod".into(),
        system_identifier: 7_301_234_567_890_123_456,
        set_no: 3,
        piece_no: 1,
        compression,
        created_unix: 1_704_164_645,
        mac: None,
        files: (0..nfiles)
            .map(|i| SetFile {
                index: 10 + i,
                path: format!("base/5/{}", 16384 + i),
            })
            .collect(),
    }
}

/// Compressible but not trivial content: text-like bytes with runs.
fn compressible(rng: &mut StdRng, len: usize) -> Vec<u8> {
    let words: [&[u8]; 6] = [
        b"relation ",
        b"tuple ",
        b"xmin ",
        b"\0\0\0\0\0\0\0\0",
        b"page ",
        b"lsn ",
    ];
    let mut v = Vec::with_capacity(len + 16);
    while v.len() < len {
        v.extend_from_slice(words[rng.gen_range(0..words.len())]);
        if rng.gen_bool(0.1) {
            v.push(rng.r#gen());
        }
    }
    v.truncate(len);
    v
}

fn random_bytes(rng: &mut StdRng, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rng.fill_bytes(&mut v);
    v
}

/// Files' contents and the chunk plan: (file index, offset, len) in write order.
struct Plan {
    files: BTreeMap<u32, Vec<u8>>,
    chunks: Vec<(u32, u64, usize)>,
}

/// Interleaves the files' chunks round-robin (multiplexing).
fn plan(files: BTreeMap<u32, Vec<u8>>, chunk: usize) -> Plan {
    let mut cursors: Vec<(u32, usize)> = files.keys().map(|&k| (k, 0)).collect();
    let mut chunks = Vec::new();
    loop {
        let mut progressed = false;
        for (idx, pos) in cursors.iter_mut() {
            let len = files[idx].len();
            if *pos < len {
                let n = chunk.min(len - *pos);
                chunks.push((*idx, *pos as u64, n));
                *pos += n;
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    Plan { files, chunks }
}

fn write_piece(h: &PieceHeader, p: &Plan) -> (Vec<u8>, PieceSummary) {
    let mut w = PieceWriter::new(Vec::new(), h).unwrap();
    let mut ended = std::collections::BTreeSet::new();
    for (i, &(idx, off, n)) in p.chunks.iter().enumerate() {
        let data = &p.files[&idx][off as usize..off as usize + n];
        w.write_chunk(idx, off, data).unwrap();
        // End each file right after its last chunk.
        let last = !p.chunks[i + 1..].iter().any(|c| c.0 == idx);
        if last {
            let f = &p.files[&idx];
            w.end_file(idx, f.len() as u64, crc32c(f)).unwrap();
            ended.insert(idx);
        }
    }
    for (&idx, f) in &p.files {
        if !ended.contains(&idx) {
            w.end_file(idx, f.len() as u64, crc32c(f)).unwrap();
        }
    }
    let before = w.bytes_written();
    let (buf, summary) = w.finish().unwrap();
    assert!(summary.size > before);
    assert_eq!(summary.size, buf.len() as u64);
    (buf, summary)
}

/// Streams the piece back and rebuilds every file.
fn read_back(buf: &[u8], use_ref: bool) -> (PieceHeader, BTreeMap<u32, Vec<u8>>, PieceSummary) {
    let mut r = PieceReader::open(Cursor::new(buf)).unwrap();
    let h = r.header().clone();
    let mut out: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    let mut ends: BTreeMap<u32, (u64, u32)> = BTreeMap::new();
    loop {
        let rec = if use_ref {
            r.next_ref().unwrap().map(|x| x.to_owned())
        } else {
            r.next().unwrap()
        };
        match rec {
            None => break,
            Some(Record::Chunk {
                file_index,
                file_offset,
                data,
            }) => {
                assert!(!ends.contains_key(&file_index), "chunk after file end");
                let f = out.entry(file_index).or_default();
                let end = file_offset as usize + data.len();
                if f.len() < end {
                    f.resize(end, 0);
                }
                f[file_offset as usize..end].copy_from_slice(&data);
            }
            Some(Record::FileEnd {
                file_index,
                size,
                crc32c: c,
            }) => {
                ends.insert(file_index, (size, c));
            }
        }
    }
    assert!(r.next().unwrap().is_none(), "None is sticky");
    assert!(r.index().is_some());
    let summary = r.finish().unwrap();
    for (idx, (size, c)) in &ends {
        let f = out.entry(*idx).or_default();
        assert_eq!(f.len() as u64, *size);
        assert_eq!(crc32c(f), *c);
    }
    (h, out, summary)
}

fn sample_files(rng: &mut StdRng) -> BTreeMap<u32, Vec<u8>> {
    let mut files = BTreeMap::new();
    files.insert(10, compressible(rng, 300_000));
    files.insert(11, random_bytes(rng, 123_457));
    files.insert(12, Vec::new()); // empty file
    files.insert(13, compressible(rng, 65_536));
    files.insert(14, vec![0u8; 200_000]); // zero pages
    files
}

#[test]
fn round_trip_every_compression() {
    let mut rng = StdRng::seed_from_u64(1);
    let files = sample_files(&mut rng);
    let p = plan(files, 32 * 1024);
    let mut sizes = Vec::new();
    for c in ALL {
        let h = header(c, 5);
        let (buf, ws) = write_piece(&h, &p);
        for use_ref in [false, true] {
            let (rh, out, rs) = read_back(&buf, use_ref);
            assert_eq!(rh, h);
            for (idx, f) in &p.files {
                assert_eq!(
                    out.get(idx).map(|v| v.as_slice()).unwrap_or(&[]),
                    f.as_slice(),
                    "{c} file {idx}"
                );
            }
            assert_eq!(rs, ws, "{c}");
        }
        assert_eq!(ws.chunks, p.chunks.len() as u64);
        assert_eq!(
            ws.raw_bytes,
            p.files.values().map(|f| f.len() as u64).sum::<u64>()
        );
        sizes.push((c, buf.len()));
    }
    // Compression actually compresses.
    let none = sizes[0].1;
    for &(c, s) in &sizes[1..] {
        assert!(s < none * 3 / 4, "{c}: {s} vs {none}");
    }
}

#[test]
fn chunks_interleave_in_write_order() {
    let mut rng = StdRng::seed_from_u64(2);
    let p = plan(sample_files(&mut rng), 50_000);
    let (buf, _) = write_piece(&header(Compression::Lz4, 5), &p);
    let mut r = PieceReader::open(Cursor::new(&buf)).unwrap();
    let mut seen = Vec::new();
    while let Some(rec) = r.next().unwrap() {
        if let Record::Chunk {
            file_index,
            file_offset,
            data,
        } = rec
        {
            seen.push((file_index, file_offset, data.len()));
        }
    }
    assert_eq!(seen, p.chunks);
}

#[test]
fn incompressible_chunks_are_stored_raw() {
    let mut rng = StdRng::seed_from_u64(3);
    let data = random_bytes(&mut rng, 1 << 20);
    for c in [
        Compression::Lz4,
        Compression::Zstd { level: 3 },
        Compression::Zstd { level: 19 },
    ] {
        let h = header(c, 1);
        let mut w = PieceWriter::new(Vec::new(), &h).unwrap();
        w.write_chunk(10, 0, &data).unwrap();
        let after_chunk = w.bytes_written();
        w.end_file(10, data.len() as u64, crc32c(&data)).unwrap();
        let (buf, _) = w.finish().unwrap();
        let (_, index) = read_index(&mut Cursor::new(&buf)).unwrap();
        let loc = index.files[0].chunks[0];
        assert_eq!(loc.stored_len, loc.raw_len, "{c}: stored raw");
        assert_eq!(after_chunk - loc.piece_offset, 32 + data.len() as u64);
        // The codec byte says "none".
        assert_eq!(buf[loc.piece_offset as usize + 4], 0);
        // Payload is the data verbatim.
        let p = loc.piece_offset as usize + 32;
        assert_eq!(&buf[p..p + data.len()], &data[..]);
        let (_, out, _) = read_back(&buf, false);
        assert_eq!(out[&10], data);
    }
    // Compressible data with a codec is not stored raw.
    let data = compressible(&mut rng, 100_000);
    let mut w = PieceWriter::new(Vec::new(), &header(Compression::Lz4, 1)).unwrap();
    w.write_chunk(10, 0, &data).unwrap();
    let (buf, _) = w.finish().unwrap();
    let (_, index) = read_index(&mut Cursor::new(&buf)).unwrap();
    let loc = index.files[0].chunks[0];
    assert!(loc.stored_len < loc.raw_len / 2);
    assert_eq!(buf[loc.piece_offset as usize + 4], 1);
}

#[test]
fn max_chunk_limit() {
    let h = header(Compression::Zstd { level: 1 }, 1);
    let mut w = PieceWriter::new(Vec::new(), &h).unwrap();
    let big = vec![7u8; MAX_CHUNK];
    w.write_chunk(10, 0, &big).unwrap();
    let mut rng = StdRng::seed_from_u64(4);
    let big_random = random_bytes(&mut rng, MAX_CHUNK);
    w.write_chunk(10, MAX_CHUNK as u64, &big_random).unwrap();
    let err = w.write_chunk(10, 0, &vec![0u8; MAX_CHUNK + 1]).unwrap_err();
    assert!(
        matches!(err, FormatError::ChunkTooLarge { len } if len == MAX_CHUNK + 1),
        "{err}"
    );
    let (buf, s) = w.finish().unwrap();
    assert_eq!(s.chunks, 2);
    let (_, out, _) = read_back(&buf, false);
    assert_eq!(&out[&10][..MAX_CHUNK], &big[..]);
    assert_eq!(&out[&10][MAX_CHUNK..], &big_random[..]);
}

#[test]
fn random_access_with_index() {
    let mut rng = StdRng::seed_from_u64(5);
    let p = plan(sample_files(&mut rng), 40_000);
    for c in ALL {
        let h = header(c, 5);
        let (buf, _) = write_piece(&h, &p);
        let mut cur = Cursor::new(&buf);
        let (rh, index) = read_index(&mut cur).unwrap();
        assert_eq!(rh, h);
        assert_eq!(index.files.len(), 5);
        let total: usize = index.files.iter().map(|f| f.chunks.len()).sum();
        assert_eq!(total, p.chunks.len());
        // chunk_no values are 0..n in piece order.
        let mut all: Vec<ChunkLoc> = index
            .files
            .iter()
            .flat_map(|f| f.chunks.iter().copied())
            .collect();
        all.sort_by_key(|c| c.piece_offset);
        for (i, c) in all.iter().enumerate() {
            assert_eq!(c.chunk_no, i as u64);
        }
        // Restore one file (in random chunk order) without reading the rest.
        for f in &index.files {
            let want = &p.files[&f.index];
            assert_eq!(f.path, format!("base/5/{}", 16384 + f.index - 10));
            assert_eq!(f.size, Some(want.len() as u64));
            assert_eq!(f.crc32c, Some(crc32c(want)));
            let mut order: Vec<usize> = (0..f.chunks.len()).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, rng.gen_range(0..=i));
            }
            let mut rebuilt = vec![0u8; want.len()];
            for i in order {
                let loc = &f.chunks[i];
                let data = read_chunk_at(&mut cur, loc).unwrap();
                assert_eq!(data.len(), loc.raw_len as usize);
                rebuilt[loc.file_offset as usize..loc.file_offset as usize + data.len()]
                    .copy_from_slice(&data);
            }
            assert_eq!(&rebuilt, want, "{c} file {}", f.index);
        }
        assert_eq!(index.file_by_path("base/5/16385").unwrap().index, 11);
        assert_eq!(index.file(12).unwrap().chunks.len(), 0);
        assert_eq!(index.file(12).unwrap().size, Some(0));

        // IndexedPiece gives the same.
        let mut ip = IndexedPiece::open(Cursor::new(&buf)).unwrap();
        let f = ip.index().file(10).unwrap().clone();
        let mut out = Vec::new();
        let mut rebuilt = Vec::new();
        for loc in &f.chunks {
            ip.read_chunk_into(loc, &mut out).unwrap();
            rebuilt.extend_from_slice(&out);
        }
        assert_eq!(rebuilt, p.files[&10]);
    }
}

#[test]
fn unfinished_file_has_no_size_in_index() {
    let h = header(Compression::None, 2);
    let mut w = PieceWriter::new(Vec::new(), &h).unwrap();
    w.write_chunk(10, 4096, b"continues in the next piece")
        .unwrap();
    w.end_file(11, 0, crc32c(b"")).unwrap();
    let (buf, _) = w.finish().unwrap();
    let (_, index) = read_index(&mut Cursor::new(&buf)).unwrap();
    assert_eq!(index.files[0].size, None);
    assert_eq!(index.files[0].crc32c, None);
    assert_eq!(index.files[0].chunks[0].file_offset, 4096);
    assert_eq!(index.files[1].size, Some(0));
    assert_eq!(index.files[1].crc32c, Some(0));
}

#[test]
fn writer_rejects_misuse() {
    let mut h = header(Compression::None, 2);
    let mut w = PieceWriter::new(Vec::new(), &h).unwrap();
    assert!(matches!(
        w.write_chunk(99, 0, b"x"),
        Err(FormatError::UnknownFile { file_index: 99 })
    ));
    assert!(matches!(
        w.end_file(99, 0, 0),
        Err(FormatError::UnknownFile { file_index: 99 })
    ));
    w.end_file(10, 0, 0).unwrap();
    assert!(matches!(
        w.end_file(10, 0, 0),
        Err(FormatError::FileAlreadyEnded { file_index: 10 })
    ));
    assert!(matches!(
        w.write_chunk(10, 0, b"late"),
        Err(FormatError::FileAlreadyEnded { .. })
    ));
    // Empty chunks are ignored.
    w.write_chunk(11, 0, b"").unwrap();
    let (_, s) = w.finish().unwrap();
    assert_eq!(s.chunks, 0);

    h.files.push(SetFile {
        index: 10,
        path: "dup".into(),
    });
    assert!(matches!(
        PieceWriter::new(Vec::new(), &h),
        Err(FormatError::DuplicateFile { file_index: 10 })
    ));
}

fn small_piece(c: Compression) -> (Vec<u8>, PieceIndex) {
    let mut rng = StdRng::seed_from_u64(6);
    let p = plan(sample_files(&mut rng), 64 * 1024);
    let (buf, _) = write_piece(&header(c, 5), &p);
    let (_, index) = read_index(&mut Cursor::new(&buf)).unwrap();
    (buf, index)
}

fn stream_all(buf: &[u8]) -> Result<PieceSummary, FormatError> {
    let mut r = PieceReader::open(Cursor::new(buf))?;
    while r.next()?.is_some() {}
    r.finish()
}

#[test]
fn flipped_byte_in_chunk_is_a_chunk_checksum_error() {
    for c in ALL {
        let (buf, index) = small_piece(c);
        // Third chunk in piece order.
        let loc = *index
            .files
            .iter()
            .flat_map(|f| f.chunks.iter())
            .find(|l| l.chunk_no == 2)
            .unwrap();
        for &delta in &[
            32u64 + 5,
            32 + loc.stored_len as u64 - 1,
            16, /* file_offset field */
        ] {
            let mut bad = buf.clone();
            bad[(loc.piece_offset + delta) as usize] ^= 0x40;
            let err = stream_all(&bad).unwrap_err();
            match err {
                FormatError::ChunkChecksum {
                    chunk_no,
                    piece_offset,
                } => {
                    assert_eq!(chunk_no, 2);
                    assert_eq!(piece_offset, loc.piece_offset);
                }
                other => panic!("{c} delta {delta}: {other}"),
            }
            let msg = err_text(&bad);
            assert!(
                msg.contains(&format!("offset {}", loc.piece_offset)),
                "{msg}"
            );
            // Random access reports it too.
            let err = read_chunk_at(&mut Cursor::new(&bad), &loc).unwrap_err();
            if delta == 16 {
                assert!(matches!(err, FormatError::BadRecord { .. }), "{err}");
            } else {
                assert!(
                    matches!(err, FormatError::ChunkChecksum { chunk_no: 2, piece_offset } if piece_offset == loc.piece_offset),
                    "{err}"
                );
            }
            // Other chunks still read fine by random access.
            let other = index
                .files
                .iter()
                .flat_map(|f| f.chunks.iter())
                .find(|l| l.chunk_no == 3)
                .unwrap();
            read_chunk_at(&mut Cursor::new(&bad), other).unwrap();
        }
    }
}

fn err_text(buf: &[u8]) -> String {
    stream_all(buf).unwrap_err().to_string()
}

#[test]
fn flipped_bytes_anywhere_are_detected() {
    let (buf, _) = small_piece(Compression::Zstd { level: 3 });
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..300 {
        let mut bad = buf.clone();
        let pos = rng.gen_range(0..bad.len());
        bad[pos] ^= 1 << rng.gen_range(0..8);
        assert!(stream_all(&bad).is_err(), "flip at {pos} not detected");
    }
    // Index and footer corruption are found by read_index as well.
    let len = buf.len();
    for pos in [len - 1, len - 12, len - 30, len - 40, len - 41, len - 100] {
        let mut bad = buf.clone();
        bad[pos] ^= 0x80;
        assert!(
            read_index(&mut Cursor::new(&bad)).is_err(),
            "flip at {pos} (len {len})"
        );
    }
}

#[test]
fn whole_piece_crc_catches_swapped_chunks() {
    // Two raw chunks of equal size swapped: each chunk's CRC is fine, the
    // piece CRC is not.
    let h = header(Compression::None, 1);
    let mut w = PieceWriter::new(Vec::new(), &h).unwrap();
    let a = vec![1u8; 1000];
    let b = vec![2u8; 1000];
    w.write_chunk(10, 0, &a).unwrap();
    w.write_chunk(10, 0, &b).unwrap();
    let (buf, _) = w.finish().unwrap();
    let (_, index) = read_index(&mut Cursor::new(&buf)).unwrap();
    let (l0, l1) = (index.files[0].chunks[0], index.files[0].chunks[1]);
    let rec = 32 + 1000;
    let mut bad = buf.clone();
    let (x, y) = (l0.piece_offset as usize, l1.piece_offset as usize);
    let r0 = buf[x..x + rec].to_vec();
    let r1 = buf[y..y + rec].to_vec();
    bad[x..x + rec].copy_from_slice(&r1);
    bad[y..y + rec].copy_from_slice(&r0);
    let err = stream_all(&bad).unwrap_err();
    assert!(matches!(err, FormatError::PieceChecksum { .. }), "{err}");
}

#[test]
fn truncation_is_reported() {
    let (buf, index) = small_piece(Compression::Lz4);
    let loc = index.files[1].chunks[0];
    let cuts = [
        10usize,                             // inside the fixed header
        30,                                  // inside the header JSON
        loc.piece_offset as usize,           // at a record boundary
        loc.piece_offset as usize + 20,      // inside a record header
        loc.piece_offset as usize + 32 + 10, // inside a payload
        buf.len() - 41,                      // inside the index
        buf.len() - 40,                      // before the footer
        buf.len() - 1,                       // inside the footer
    ];
    for cut in cuts {
        let t = &buf[..cut];
        match stream_all(t) {
            Err(FormatError::Truncated { piece_offset }) => {
                assert_eq!(piece_offset, cut as u64, "cut at {cut}")
            }
            other => panic!("cut at {cut}: {other:?}"),
        }
        if cut > 100 {
            match read_index(&mut Cursor::new(t)) {
                Err(FormatError::Truncated { .. }) => {}
                other => panic!("read_index, cut at {cut}: {:?}", other.map(|_| ())),
            }
        }
    }
    let msg = stream_all(&buf[..loc.piece_offset as usize + 50])
        .unwrap_err()
        .to_string();
    assert_eq!(
        msg,
        format!("piece truncated at offset {}", loc.piece_offset + 50)
    );
    // Random access to a chunk past the cut.
    let t = &buf[..loc.piece_offset as usize + 40];
    assert!(matches!(
        read_chunk_at(&mut Cursor::new(t), &loc),
        Err(FormatError::Truncated { .. })
    ));
}

#[test]
fn trailing_data_is_refused() {
    let (mut buf, _) = small_piece(Compression::None);
    buf.push(0);
    assert!(matches!(
        stream_all(&buf),
        Err(FormatError::TrailingData { .. })
    ));
}

#[test]
fn wrong_magic_and_version() {
    let (buf, _) = small_piece(Compression::None);
    let mut bad = buf.clone();
    bad[0] = b'X';
    let err = PieceReader::open(Cursor::new(&bad)).err().unwrap();
    assert!(matches!(err, FormatError::BadMagic { .. }));
    assert!(
        err.to_string().contains("not a recman backup piece"),
        "{err}"
    );
    assert!(read_index(&mut Cursor::new(&bad)).is_err());

    let err = PieceReader::open(Cursor::new(b"hello, world, this is a text file".as_slice()))
        .err()
        .unwrap();
    assert!(matches!(err, FormatError::BadMagic { .. }), "{err}");

    // Major version 2: refused with a clear message (header CRC not even
    // looked at).
    let mut v2 = buf.clone();
    v2[8..10].copy_from_slice(&2u16.to_le_bytes());
    let err = PieceReader::open(Cursor::new(&v2)).err().unwrap();
    assert!(
        matches!(
            err,
            FormatError::UnsupportedVersion {
                major: 2,
                minor: 0,
                ..
            }
        ),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("unsupported piece format version 2.0"),
        "{msg}"
    );
    assert!(msg.contains("version 1.x"), "{msg}");
    assert!(matches!(
        read_index(&mut Cursor::new(&v2)),
        Err(FormatError::UnsupportedVersion { major: 2, .. })
    ));

    // A newer minor version of the same major is read (header CRC fixed up).
    let mut minor = buf.clone();
    minor[10..12].copy_from_slice(&7u16.to_le_bytes());
    let json_len = u32::from_le_bytes(minor[12..16].try_into().unwrap()) as usize;
    let crc = crc32c_append(crc32c(&minor[..20]), &minor[24..24 + json_len]);
    minor[20..24].copy_from_slice(&crc.to_le_bytes());
    let mut r = PieceReader::open(Cursor::new(&minor)).unwrap();
    while r.next().unwrap().is_some() {}
    // ...but the whole-piece CRC covers the header bytes we changed.
    assert!(matches!(r.finish(), Err(FormatError::PieceChecksum { .. })));
}

#[test]
fn header_json_ignores_unknown_fields() {
    // Forward compatibility within a major version: extra JSON fields.
    let h = header(Compression::Zstd { level: 5 }, 1);
    let mut json = serde_json::to_value(&h).unwrap();
    json["future_field"] = serde_json::json!({"x": 1});
    let back: PieceHeader = serde_json::from_value(json).unwrap();
    assert_eq!(back, h);
    let s = serde_json::to_string(&Compression::Zstd { level: 5 }).unwrap();
    assert_eq!(s, r#"{"zstd":{"level":5}}"#);
    assert_eq!(
        serde_json::to_string(&Compression::Lz4).unwrap(),
        r#""lz4""#
    );
    assert_eq!(
        serde_json::to_string(&Compression::None).unwrap(),
        r#""none""#
    );
}

#[test]
fn compression_parse_and_display() {
    assert_eq!("none".parse::<Compression>().unwrap(), Compression::None);
    assert_eq!("lz4".parse::<Compression>().unwrap(), Compression::Lz4);
    assert_eq!(
        "zstd".parse::<Compression>().unwrap(),
        Compression::Zstd { level: 3 }
    );
    assert_eq!(
        "ZSTD:19".parse::<Compression>().unwrap(),
        Compression::Zstd { level: 19 }
    );
    assert_eq!(
        "zstd:1".parse::<Compression>().unwrap(),
        Compression::Zstd { level: 1 }
    );
    for bad in [
        "", "gzip", "zstd:", "zstd:0", "zstd:20", "zstd:-1", "zstd:+3", "zstd:3x", "lz4:1",
        "zstd 3",
    ] {
        let err = bad.parse::<Compression>().unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("none, lz4, zstd") && msg.contains("zstd:N"),
            "{bad}: {msg}"
        );
    }
    assert_eq!(Compression::None.to_string(), "none");
    assert_eq!(Compression::Lz4.to_string(), "lz4");
    assert_eq!(Compression::Zstd { level: 3 }.to_string(), "zstd:3");
    for c in ALL {
        assert_eq!(c.to_string().parse::<Compression>().unwrap(), c);
    }
}

/// A reader that hands out data in small, irregular pieces (like a pipe).
struct Trickle<'a> {
    data: &'a [u8],
    pos: usize,
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.step = self.step % 7 + 1;
        let n = buf
            .len()
            .min(self.step * 997)
            .min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[test]
fn reads_from_a_non_seekable_trickling_stream() {
    let (buf, _) = small_piece(Compression::Zstd { level: 3 });
    let mut r = PieceReader::open(Trickle {
        data: &buf,
        pos: 0,
        step: 0,
    })
    .unwrap();
    let mut n = 0;
    while let Some(rec) = r.next_ref().unwrap() {
        if let RecordRef::Chunk { .. } = rec {
            n += 1;
        }
    }
    let s = r.finish().unwrap();
    assert_eq!(s.chunks, n);
    assert_eq!(s.size, buf.len() as u64);
}

#[test]
fn finish_without_reading_records_still_verifies() {
    let (buf, _) = small_piece(Compression::Lz4);
    let r = PieceReader::open(Cursor::new(&buf)).unwrap();
    let s = r.finish().unwrap();
    assert_eq!(s.size, buf.len() as u64);
    let (_, index) = read_index(&mut Cursor::new(&buf)).unwrap();
    let loc = index.files[0].chunks[1];
    let mut bad = buf.clone();
    bad[loc.piece_offset as usize + 40] ^= 1;
    let r = PieceReader::open(Cursor::new(&bad)).unwrap();
    assert!(matches!(r.finish(), Err(FormatError::ChunkChecksum { .. })));
}

#[test]
fn randomized_round_trips() {
    let mut rng = StdRng::seed_from_u64(0xC0FFEE);
    for case in 0..50 {
        // Level 19 is slow; it is covered by the other tests.
        let c = ALL[rng.gen_range(0..ALL.len() - 1)];
        let nfiles = rng.gen_range(0..8u32);
        let mut files = BTreeMap::new();
        for i in 0..nfiles {
            let len = match rng.gen_range(0..4) {
                0 => 0,
                1 => rng.gen_range(1..100),
                2 => rng.gen_range(100..20_000),
                _ => rng.gen_range(20_000..200_000),
            };
            let data = match rng.gen_range(0..3) {
                0 => random_bytes(&mut rng, len),
                1 => compressible(&mut rng, len),
                _ => vec![rng.r#gen(); len],
            };
            files.insert(10 + i, data);
        }
        // Random chunking and random interleaving.
        let mut pending: Vec<(u32, usize)> = files.keys().map(|&k| (k, 0)).collect();
        let mut chunks = Vec::new();
        while !pending.is_empty() {
            let i = rng.gen_range(0..pending.len());
            let (idx, pos) = pending[i];
            let len = files[&idx].len();
            if pos >= len {
                pending.swap_remove(i);
                continue;
            }
            let n = rng.gen_range(1..=len - pos).min(rng.gen_range(1..200_000));
            chunks.push((idx, pos as u64, n));
            pending[i].1 += n;
        }
        let p = Plan { files, chunks };
        let h = header(c, nfiles);
        let (buf, ws) = write_piece(&h, &p);
        let (rh, out, rs) = read_back(&buf, rng.gen_bool(0.5));
        assert_eq!(rh, h, "case {case}");
        assert_eq!(rs, ws, "case {case}");
        for (idx, f) in &p.files {
            assert_eq!(
                out.get(idx).map(|v| v.as_slice()).unwrap_or(&[]),
                f.as_slice(),
                "case {case} file {idx}"
            );
        }
        // Random access of a random chunk.
        let (_, index) = read_index(&mut Cursor::new(&buf)).unwrap();
        let all: Vec<ChunkLoc> = index
            .files
            .iter()
            .flat_map(|f| f.chunks.iter().copied())
            .collect();
        if !all.is_empty() {
            let loc = all[rng.gen_range(0..all.len())];
            let fi = index
                .files
                .iter()
                .find(|f| f.chunks.contains(&loc))
                .unwrap()
                .index;
            let want = &p.files[&fi]
                [loc.file_offset as usize..loc.file_offset as usize + loc.raw_len as usize];
            assert_eq!(read_chunk_at(&mut Cursor::new(&buf), &loc).unwrap(), want);
        }
    }
}

#[test]
fn short_inputs() {
    let err = PieceReader::open(Cursor::new(b"abc".as_slice()))
        .err()
        .unwrap();
    assert!(matches!(err, FormatError::BadMagic { .. }), "{err}");
    let err = PieceReader::open(Cursor::new(b"".as_slice()))
        .err()
        .unwrap();
    assert!(
        matches!(err, FormatError::Truncated { piece_offset: 0 }),
        "{err}"
    );
    let err = PieceReader::open(Cursor::new(b"RECMAN".as_slice()))
        .err()
        .unwrap();
    assert!(
        matches!(err, FormatError::Truncated { piece_offset: 6 }),
        "{err}"
    );
    assert!(matches!(
        read_index(&mut Cursor::new(b"xy".as_slice())),
        Err(FormatError::BadMagic { .. })
    ));
    // A piece whose writer died before finish(): no index, no footer.
    let h = header(Compression::Lz4, 1);
    let mut w = PieceWriter::new(Vec::new(), &h).unwrap();
    w.write_chunk(10, 0, &[5u8; 5000]).unwrap();
    let n = w.bytes_written();
    let mut buf = Vec::new();
    {
        // Recreate the same bytes the writer had emitted so far.
        let mut w2 = PieceWriter::new(&mut buf, &h).unwrap();
        w2.write_chunk(10, 0, &[5u8; 5000]).unwrap();
    }
    assert_eq!(buf.len() as u64, n);
    assert!(
        matches!(stream_all(&buf), Err(FormatError::Truncated { piece_offset }) if piece_offset == n)
    );
    assert!(matches!(
        read_index(&mut Cursor::new(&buf)),
        Err(FormatError::Truncated { .. })
    ));
}

#[test]
fn reader_refuses_chunk_after_file_end_and_double_end() {
    // Records are position-independent, so they can be spliced between
    // pieces that share a header.
    let h = header(Compression::None, 1);
    let hdr_len = {
        let w = PieceWriter::new(Vec::new(), &h).unwrap();
        w.bytes_written() as usize
    };
    let mut a = PieceWriter::new(Vec::new(), &h).unwrap();
    a.write_chunk(10, 0, b"some file data").unwrap();
    a.end_file(10, 14, crc32c(b"some file data")).unwrap();
    let (a, _) = a.finish().unwrap();
    let chunk_rec = &a[hdr_len..hdr_len + 32 + 14];
    let end_rec = &a[hdr_len + 46..hdr_len + 46 + 32];

    let mut bad = a[..hdr_len].to_vec();
    bad.extend_from_slice(end_rec);
    bad.extend_from_slice(chunk_rec);
    let mut r = PieceReader::open(Cursor::new(&bad)).unwrap();
    assert!(matches!(
        r.next().unwrap(),
        Some(Record::FileEnd {
            file_index: 10,
            size: 14,
            ..
        })
    ));
    match r.next() {
        Err(FormatError::BadRecord {
            piece_offset,
            reason,
        }) => {
            assert_eq!(piece_offset, hdr_len as u64 + 32);
            assert!(reason.contains("after its file-end"), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    let mut bad = a[..hdr_len].to_vec();
    bad.extend_from_slice(end_rec);
    bad.extend_from_slice(end_rec);
    let mut r = PieceReader::open(Cursor::new(&bad)).unwrap();
    r.next().unwrap();
    assert!(matches!(r.next(), Err(FormatError::BadRecord { .. })));
}

#[test]
fn a_damaged_chunk_tells_which_file_it_claims() {
    for c in ALL {
        let (buf, index) = small_piece(c);
        // The last chunk in piece order, and the file whose chunk it is.
        let (file, loc) = index
            .files
            .iter()
            .flat_map(|f| f.chunks.iter().map(move |l| (f.index, *l)))
            .max_by_key(|(_, l)| l.chunk_no)
            .unwrap();
        let mut bad = buf.clone();
        bad[(loc.piece_offset + 32 + 1) as usize] ^= 0x40;
        let mut r = PieceReader::open(Cursor::new(&bad)).unwrap();
        let err = loop {
            match r.next() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("{c}: the damage went unnoticed"),
                Err(e) => break e,
            }
        };
        assert!(
            matches!(
                err,
                FormatError::ChunkChecksum { .. } | FormatError::Decompress { .. }
            ),
            "{c}: {err}"
        );
        assert_eq!(r.last_chunk_file(), Some(file), "{c}");
    }
}
