//! The rows of the backup tunables that are flags only.

use super::def::{Kind, OptionDef, row};

const MIB: u64 = 1 << 20;

/// RMAN's MAXSETSIZE.
pub const MAXSETSIZE: OptionDef = OptionDef {
    unit: Some("bytes"),
    rman: Some("MAXSETSIZE"),
    ..row(
        "maxsetsize",
        Kind::Size((MIB, 1 << 40)),
        "The most bytes in one backup set (RMAN's MAXSETSIZE), e.g. 1G: larger sets are split; a file larger than this is refused unless --section-size cuts it. Range: 1M to 1T",
    )
};
pub const MAXCORRUPT: OptionDef = OptionDef {
    default: Some("0"),
    unit: Some("blocks"),
    rman: Some("MAXCORRUPT"),
    ..row(
        "maxcorrupt",
        Kind::Count((0, u32::MAX as u64)),
        "Corrupt blocks tolerated per file. Range: 0 to 4294967295",
    )
};
pub const ARCHIVE_TIMEOUT: OptionDef = OptionDef {
    default: Some("120"),
    unit: Some("seconds"),
    ..row(
        "archive-timeout",
        Kind::Count((1, 86_400)),
        "Seconds to wait for the backup's WAL to be archived. Range: 1 to 86400",
    )
};
pub const INCREMENTAL_LEVEL: OptionDef = OptionDef {
    rman: Some("INCREMENTAL LEVEL"),
    ..row(
        "incremental-level",
        Kind::Count((0, 1)),
        "RMAN's INCREMENTAL LEVEL: 0 (a base for level 1s) or 1 (blocks changed since the last level 0 or 1). Without it the backup is a plain full backup. Range: 0 to 1",
    )
};
pub const IO_SLAVES: OptionDef = OptionDef {
    default: Some("4"),
    unit: Some("threads"),
    ..row(
        "io-slaves",
        Kind::Count((1, 64)),
        "Helper i/o threads per channel in threads mode (RMAN's I/O slaves). Range: 1 to 64",
    )
};
pub const INPUT_BUFFERS: OptionDef = OptionDef {
    unit: Some("buffers"),
    ..row(
        "input-buffers",
        Kind::Count((1, 256)),
        "Input buffers per open file (default: RMAN's rule by multiplexing level). Range: 1 to 256",
    )
};
pub const INPUT_BUFFER_SIZE: OptionDef = OptionDef {
    unit: Some("bytes"),
    ..row(
        "input-buffer-size",
        Kind::Size((8 << 10, 4 << 20)),
        "Size of each input buffer, e.g. 1M (a multiple of 8K). Range: 8K to 4M",
    )
};
pub const OUTPUT_BUFFERS: OptionDef = OptionDef {
    default: Some("4"),
    unit: Some("buffers"),
    ..row(
        "output-buffers",
        Kind::Count((1, 256)),
        "Output buffers per channel. Range: 1 to 256",
    )
};
pub const BLKSIZE: OptionDef = OptionDef {
    unit: Some("bytes"),
    rman: Some("BLKSIZE"),
    ..row(
        "blksize",
        Kind::Size((4 << 10, 64 << 20)),
        "Output block size: the size of each write to the media (RMAN's BLKSIZE). Default: the device type's configured blksize, else 1M. Range: 4K to 64M",
    )
};
pub const RATE: OptionDef = OptionDef {
    unit: Some("bytes per second"),
    rman: Some("RATE"),
    ..row(
        "rate",
        Kind::Size((1 << 10, 1 << 40)),
        "Most bytes per second each channel reads, e.g. 50M (RMAN's RATE). Range: 1K to 1T",
    )
};
