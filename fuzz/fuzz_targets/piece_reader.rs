//! The piece reader on arbitrary bytes: the streaming reader (what restore and validate use)
//! and the indexed reader (one file's chunks by seeking) must return errors, never panic or
//! allocate without bound. Inputs that start with `R` are a round trip instead: the rest is
//! written as a piece with two interleaved files in each compression, read back, and must come
//! back unchanged. Inputs that start with `M` reach past the header checks without a seed
//! corpus: a valid piece is written from the rest, two of its bytes are changed where the
//! input says, and the reader must refuse or read it without a panic.

#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use recman_format::{
    Compression, IndexedPiece, PieceHeader, PieceReader, PieceWriter, Record, SetFile, crc32c,
};

fn read_all(data: &[u8]) {
    if let Ok(mut r) = PieceReader::open(data) {
        while let Ok(Some(_)) = r.next() {}
        let _ = r.finish();
    }
    if let Ok(mut p) = IndexedPiece::open(Cursor::new(data)) {
        let locs: Vec<_> = p
            .index()
            .files
            .iter()
            .flat_map(|f| f.chunks.clone())
            .take(64)
            .collect();
        for loc in locs {
            let _ = p.read_chunk(&loc);
        }
    }
}

fn header(compression: Compression) -> PieceHeader {
    PieceHeader {
        backup_id: "B1".into(),
        db_name: "fuzz".into(),
        system_identifier: 7,
        set_no: 1,
        piece_no: 1,
        compression,
        created_unix: 0,
        mac: None,
        files: vec![
            SetFile {
                index: 0,
                path: "base/1/a".into(),
            },
            SetFile {
                index: 1,
                path: "base/1/b".into(),
            },
        ],
    }
}

/// A valid piece of two interleaved files holding `a` and `b`.
fn piece(header: &PieceHeader, a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut w = PieceWriter::new(Vec::new(), header).unwrap();
    // Interleaved, as a channel multiplexing two files writes them.
    w.write_chunk(0, 0, a).unwrap();
    w.write_chunk(1, 0, b).unwrap();
    w.end_file(1, b.len() as u64, crc32c(b)).unwrap();
    w.end_file(0, a.len() as u64, crc32c(a)).unwrap();
    w.finish().unwrap().0
}

fn mutated(data: &[u8]) {
    if data.len() < 7 {
        return;
    }
    let (edits, rest) = data.split_at(6);
    let compression = match rest[0] % 3 {
        0 => Compression::None,
        1 => Compression::Lz4,
        _ => Compression::Zstd { level: 1 },
    };
    let body = &rest[1..];
    let (a, b) = body.split_at(body.len() / 2);
    let mut bytes = piece(&header(compression), a, b);
    for e in edits.chunks(3) {
        let at = u16::from_le_bytes([e[0], e[1]]) as usize % bytes.len();
        bytes[at] ^= e[2].max(1);
    }
    read_all(&bytes);
}

fn round_trip(data: &[u8]) {
    let (a, b) = data.split_at(data.len() / 2);
    for compression in [
        Compression::None,
        Compression::Lz4,
        Compression::Zstd { level: 1 },
    ] {
        let header = header(compression);
        let bytes = piece(&header, a, b);
        let mut r = PieceReader::open(&bytes[..]).unwrap();
        assert_eq!(r.header(), &header);
        let mut got = [Vec::new(), Vec::new()];
        while let Some(rec) = r.next().unwrap() {
            if let Record::Chunk {
                file_index, data, ..
            } = rec
            {
                got[file_index as usize].extend_from_slice(&data);
            }
        }
        r.finish().unwrap();
        assert_eq!(got[0], a);
        assert_eq!(got[1], b);
    }
}

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((b'R', rest)) => round_trip(rest),
        Some((b'M', rest)) => mutated(rest),
        _ => read_all(data),
    }
});
