//! Options of the I/O engine, shared by every command that moves data: their clap form;
//! `recman_command::IoOptions::settings` turns them into the engine's.

use clap::Args;

#[derive(Args, Debug, Clone)]
pub struct IoArgs {
    /// How reads are issued: auto (io_uring, else helper threads), uring, threads, sync.
    #[arg(long = "io", default_value = "auto")]
    pub io_mode: String,
    /// Helper i/o threads per channel in threads mode (RMAN's I/O slaves). Range: 1 to 64.
    #[arg(long, default_value_t = 4, value_parser = crate::input::count::<usize>(recman_command::ranges::IO_SLAVES))]
    pub io_slaves: usize,
    /// Input buffers per open file (default: RMAN's rule by multiplexing level).
    /// Range: 1 to 256.
    #[arg(long, value_parser = crate::input::count::<usize>(recman_command::ranges::BUFFERS))]
    pub input_buffers: Option<usize>,
    /// Size of each input buffer, e.g. 1M (a multiple of 8K). Range: 8K to 4M.
    #[arg(long, value_name = "SIZE", value_parser = crate::input::size(recman_command::ranges::INPUT_BUFFER_SIZE.0, recman_command::ranges::INPUT_BUFFER_SIZE.1))]
    pub input_buffer_size: Option<String>,
    /// Output block size: the size of each write to the media (RMAN's BLKSIZE).
    /// Default: the device type's configured blksize, else 1M. Range: 4K to 64M.
    #[arg(long, value_name = "SIZE", value_parser = crate::input::size(recman_command::ranges::BLKSIZE.0, recman_command::ranges::BLKSIZE.1))]
    pub blksize: Option<String>,
    /// Output buffers per channel. Range: 1 to 256.
    #[arg(long, default_value_t = 4, value_parser = crate::input::count::<usize>(recman_command::ranges::BUFFERS))]
    pub output_buffers: usize,
    /// Most bytes per second each channel reads, e.g. 50M (RMAN's RATE). Range: 1K to 1T.
    #[arg(long, value_name = "SIZE", value_parser = crate::input::size(recman_command::ranges::RATE.0, recman_command::ranges::RATE.1))]
    pub rate: Option<String>,
    /// Read every data file through the page cache. By default each file is read the cheaper
    /// way: through the cache when at least half of it is cached, with direct I/O otherwise
    /// (no copy through the cache, no eviction of the database's cached pages).
    #[arg(long, conflicts_with = "direct_reads")]
    pub buffered_reads: bool,
    /// Read every data file with direct I/O where the file system allows it, cached or not.
    #[arg(long)]
    pub direct_reads: bool,
}
