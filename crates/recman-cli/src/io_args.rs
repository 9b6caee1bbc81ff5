//! Options of the I/O engine, shared by every command that moves data: their clap form;
//! `recman_command::IoOptions::settings` turns them into the engine's. Their help and ranges
//! are their rows in `recman_command::option_table`.

use clap::Args;
use recman_command::option_table as T;

#[derive(Args, Debug, Clone)]
pub struct IoArgs {
    /// How reads are issued: auto (io_uring, else helper threads), uring, threads, sync.
    #[arg(long = "io", default_value = "auto")]
    pub io_mode: String,
    #[arg(long, help = T::IO_SLAVES.help, default_value_t = 4, value_parser = crate::input::count_of::<usize>(&T::IO_SLAVES))]
    pub io_slaves: usize,
    #[arg(long, help = T::INPUT_BUFFERS.help, value_parser = crate::input::count_of::<usize>(&T::INPUT_BUFFERS))]
    pub input_buffers: Option<usize>,
    #[arg(long, help = T::INPUT_BUFFER_SIZE.help, value_name = "SIZE", value_parser = crate::input::size_of(&T::INPUT_BUFFER_SIZE))]
    pub input_buffer_size: Option<String>,
    #[arg(long, help = T::BLKSIZE.help, value_name = "SIZE", value_parser = crate::input::size_of(&T::BLKSIZE))]
    pub blksize: Option<String>,
    #[arg(long, help = T::OUTPUT_BUFFERS.help, default_value_t = 4, value_parser = crate::input::count_of::<usize>(&T::OUTPUT_BUFFERS))]
    pub output_buffers: usize,
    #[arg(long, help = T::RATE.help, value_name = "SIZE", value_parser = crate::input::size_of(&T::RATE))]
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
