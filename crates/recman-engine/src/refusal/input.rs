//! Refusals of the request's own values and options: text that does not read as what it
//! should be, numbers out of their range, FORMAT templates, device types, media to probe.

/// A value or option of the request the engine turns down.
#[derive(Debug, thiserror::Error)]
pub enum Input {
    /// A size that does not read as one (`512K`, `1M`, `2G`).
    #[error("invalid size {text:?}; hint: write e.g. 512K, 1M, 2G")]
    Size { text: String },
    #[error("invalid size {text:?}: negative")]
    NegativeSize { text: String },
    #[error("unknown i/o mode {text:?}; hint: use auto, uring, threads or sync")]
    IoMode { text: String },
    /// A DURATION window that is not H:MM or H:MM:SS.
    #[error(
        "duration {text:?} is not H:MM or H:MM:SS; hint: e.g. --duration 1:30 or DURATION 0:00:20"
    )]
    Duration { text: String },
    #[error("duration {text:?} is empty; hint: give a window of at least one second")]
    EmptyDuration { text: String },
    #[error(
        "cannot read target time {text:?}; hint: write it as 2026-11-21 14:30:00 (local time) or 2026-11-21T14:30:00+00:00"
    )]
    TargetTime { text: String },
    #[error("invalid target xid {text:?}; hint: give a transaction id number such as 1234")]
    TargetXid { text: String },
    #[error(
        "retention policy {text:?} is not valid; hint: use `redundancy N`, `recovery-window DAYS` or `none`"
    )]
    RetentionPolicy { text: String },
    /// A block to recover that does not read as FILE:BLOCK.
    #[error(
        "cannot read block {text:?}: {why}; hint: write FILE:BLOCK with FILE relative to the data directory, e.g. base/5/16384:12 (validate database lists them)"
    )]
    Block { text: String, why: String },
    #[error("{path} is not a relation file of a data directory")]
    NotRelationFile { path: String },
    #[error("block {block} is not in segment file {path} (blocks {first} to {last})")]
    BlockNotInSegment {
        block: u32,
        path: String,
        first: u32,
        last: u32,
    },
    /// Counts that must be at least 1 (`options` names them, as the command line spells them).
    #[error("{options} must be at least 1")]
    AtLeastOne { options: &'static str },
    #[error(
        "--input-buffer-size {text} must be a multiple of 8 KiB and at most 4 MiB; hint: e.g. 1M or 256K"
    )]
    InputBufferSize { text: String },
    #[error("--blksize {value} must be between 4 KiB and 64 MiB")]
    Blksize { value: u64 },
    #[error(
        "restore point name {name:?} must have 1 to 63 characters; hint: choose a shorter name"
    )]
    RestorePointName { name: String },
    /// A FORMAT template whose name cannot be expanded (`why` says what is wrong with it).
    #[error("FORMAT '{name}' {why}")]
    FormatName { name: String, why: String },
    /// A FORMAT template that is not an absolute directory and a name.
    #[error(
        "FORMAT '{template}' {why}; hint: an absolute directory and a name with %U, e.g. '/srv/backup/ora_%U.rbf'"
    )]
    FormatTemplate { template: String, why: String },
    #[error("cannot create FORMAT directory {dir}: {why}; hint: create it, writable by recman")]
    FormatDir { dir: String, why: String },
    #[error(
        "FORMAT with a directory writes to that directory, not to device type {device}; hint: drop DEVICE TYPE, or drop the directory from FORMAT"
    )]
    FormatWithDevice { device: String },
    #[error("unknown device type {device:?}; hint: use one of {known}")]
    UnknownDevice { device: String, known: String },
    #[error(
        "device type {device} is not configured for repository {repo}; hint: recman configure device-type {device} parms '{example}'"
    )]
    DeviceNotConfigured {
        device: String,
        repo: String,
        example: String,
    },
    #[error(
        "device type {device} is the repository itself; hint: copy to another device type (sbt, s3 or disk)"
    )]
    DeviceIsRepository { device: String },
    /// No --db given, and the repository holds more than one database.
    #[error("repository {repo} holds several databases ({names}); hint: name one with --db NAME")]
    SeveralDatabases { repo: String, names: String },
    #[error(
        "port {port} is taken on 127.0.0.1 ({why}); hint: choose another port with --port, or leave it out to use a free one"
    )]
    PortTaken { port: u16, why: String },
    /// An i/o mode that cannot start here (no io_uring, say).
    #[error("cannot start i/o mode {mode}: {why}; hint: choose another with --io")]
    IoModeUnavailable { mode: String, why: String },
    #[error(
        "calibrate: cannot start the i/o engine: {why}; hint: try again with io_uring or helper threads available"
    )]
    CalibrateIoEngine { why: String },
    /// Probe objects calibrate could not remove.
    #[error(
        "calibrate: probe objects left on {medium}: {left}; hint: remove them with the medium's own tools"
    )]
    ProbesLeft { medium: String, left: String },
    #[error(
        "calibrate: probe object {name} left on {medium}: {why}; hint: remove it with the medium's own tools"
    )]
    ProbeLeft {
        name: String,
        medium: String,
        why: String,
    },
    #[error(
        "calibrate: probe object {name} on {medium} read back {got} bytes of {size}; hint: check the medium"
    )]
    ProbeShort {
        name: String,
        medium: String,
        got: u64,
        size: u64,
    },
}
