//! Options of the I/O engine, shared by every command that moves data.

use anyhow::{Result, anyhow};
use clap::Args;
use recman_engine::io::{IoMode, IoSettings, parse_size};

#[derive(Args, Debug, Clone)]
pub struct IoArgs {
    /// How reads are issued: auto (io_uring, else helper threads), uring, threads, sync.
    #[arg(long = "io", default_value = "auto")]
    pub io_mode: String,
    /// Helper i/o threads per channel in threads mode (RMAN's I/O slaves).
    #[arg(long, default_value_t = 4)]
    pub io_slaves: usize,
    /// Input buffers per open file (default: RMAN's rule by multiplexing level).
    #[arg(long)]
    pub input_buffers: Option<usize>,
    /// Size of each input buffer, e.g. 1M (a multiple of 8K, at most 4M).
    #[arg(long)]
    pub input_buffer_size: Option<String>,
    /// Output block size: the size of each write to the media (RMAN's BLKSIZE).
    /// Default: the device type's configured blksize, else 1M.
    #[arg(long)]
    pub blksize: Option<String>,
    /// Output buffers per channel.
    #[arg(long, default_value_t = 4)]
    pub output_buffers: usize,
    /// Most bytes per second each channel reads, e.g. 50M (RMAN's RATE).
    #[arg(long)]
    pub rate: Option<String>,
    /// Read data files through the page cache instead of with direct I/O (the default, where
    /// the file system allows it: no copy through the cache, no eviction of the database's
    /// cached pages). Faster only when the files are already in memory.
    #[arg(long)]
    pub buffered_reads: bool,
}

impl IoArgs {
    pub fn settings(&self) -> Result<IoSettings> {
        let size = |what: &str, v: &str| parse_size(v).map_err(|e| anyhow!("{what}: {e}"));
        let s = IoSettings {
            mode: self.io_mode.parse::<IoMode>()?,
            slaves: self.io_slaves,
            input_buffers: self.input_buffers,
            input_buffer_size: self
                .input_buffer_size
                .as_deref()
                .map(|v| size("--input-buffer-size", v).map(|n| n as usize))
                .transpose()?,
            output_buffers: self.output_buffers,
            blksize: size("--blksize", self.blksize.as_deref().unwrap_or("1M"))? as usize,
            rate: self
                .rate
                .as_deref()
                .map(|v| size("--rate", v))
                .transpose()?,
            direct_reads: !self.buffered_reads,
        };
        s.validate()?;
        Ok(s)
    }
}
