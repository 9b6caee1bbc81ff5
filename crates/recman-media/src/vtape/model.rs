//! The timing model of one drive (docs/vtape.md has the formulas). Every method takes `now`
//! on the model clock and moves the drive clock `free_at`, the time at which the drive will
//! have finished everything it has accepted so far.

use std::collections::VecDeque;
use std::time::Duration;

use super::config::VtapeConfig;

/// Hardware compression never gains more than this, as real drives' dictionaries and
/// buffers cap what even all-zero data gives.
pub const MAX_COMPRESSION_RATIO: f64 = 4.0;

/// A block arriving this long after the drive ran empty finds it stopped. The slack absorbs
/// thread wake-up jitter, which a real drive's motion thresholds would absorb too.
pub const STREAM_SLACK: Duration = Duration::from_millis(5);

/// The compression ratio a drive gets on `block`: lz4 stands in for the drive's LZ-family
/// algorithm, so the rate follows the data's real compressibility.
pub fn lz4_ratio(block: &[u8]) -> f64 {
    if block.is_empty() {
        return 1.0;
    }
    let packed = lz4_flex::block::compress(block).len().max(1);
    (block.len() as f64 / packed as f64).clamp(1.0, MAX_COMPRESSION_RATIO)
}

/// Bytes a block occupies on tape.
pub(super) fn tape_bytes(config: &VtapeConfig, block: &[u8]) -> u64 {
    if config.hardware_compression {
        (block.len() as f64 / lz4_ratio(block)).ceil() as u64
    } else {
        block.len() as u64
    }
}

/// Time the tape moves for one block.
pub(super) fn block_time(config: &VtapeConfig, tape_bytes: u64) -> Duration {
    config.block_overhead + Duration::from_secs_f64(tape_bytes as f64 / config.native_rate)
}

/// What one drive did, as counted by the model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DriveStats {
    /// 1-based drive number.
    pub drive: usize,
    /// Object bytes written (exact, without padding).
    pub bytes_in: u64,
    /// Bytes written onto tape: padded blocks after hardware compression.
    pub tape_bytes: u64,
    /// Object bytes read back.
    pub bytes_out: u64,
    /// Blocks written or read.
    pub blocks: u64,
    /// Model time spent loading, positioning and moving blocks.
    pub busy: Duration,
    /// Repositions because a block arrived after the streaming drive had run empty.
    pub shoe_shines: u64,
    /// Locates: seeks on read, end of data before appending, rewinds before an unload.
    pub positions: u64,
    /// Cartridges mounted.
    pub loads: u64,
    /// The drive clock: when it finishes what it has accepted, since the library was opened.
    pub free_at: Duration,
}

#[derive(Debug, Default)]
pub(super) struct DriveState {
    pub stats: DriveStats,
    pub mounted: Option<u32>,
    /// Cartridge file offset under the head.
    pub head: u64,
    /// The tape is moving: a gap in the data stream now means a stop and a reposition.
    moving: bool,
    /// Blocks accepted but not yet on tape: (time written, bytes).
    queue: VecDeque<(Duration, u64)>,
}

impl DriveState {
    fn occupy(&mut self, now: Duration, t: Duration) {
        let from = now.max(self.stats.free_at);
        self.stats.free_at = from + t;
        self.stats.busy += t;
    }

    /// Puts `cartridge` in the drive, rewinding and unloading the one there first.
    pub fn mount(&mut self, config: &VtapeConfig, now: Duration, cartridge: u32) {
        if self.mounted == Some(cartridge) {
            return;
        }
        let mut t = config.load_time;
        if self.mounted.is_some() {
            t += config.position_time;
            self.stats.positions += 1;
        }
        self.occupy(now, t);
        self.stats.loads += 1;
        self.mounted = Some(cartridge);
        self.head = 0;
        self.moving = false;
    }

    /// Moves the head to `offset`; free when it is there already (sequential access).
    pub fn locate(&mut self, config: &VtapeConfig, now: Duration, offset: u64) {
        if self.head == offset {
            return;
        }
        self.occupy(now, config.position_time);
        self.stats.positions += 1;
        self.head = offset;
        self.moving = false;
    }

    /// Moves one block of `file_bytes` (`tape` bytes on tape) past the head; returns when
    /// it is done. A block that finds a streaming drive run dry pays a reposition first.
    pub fn transfer(
        &mut self,
        config: &VtapeConfig,
        now: Duration,
        file_bytes: u64,
        tape: u64,
    ) -> Duration {
        if self.moving && now > self.stats.free_at + STREAM_SLACK {
            self.occupy(now, config.position_time);
            self.stats.shoe_shines += 1;
        }
        self.occupy(now, block_time(config, tape));
        self.stats.blocks += 1;
        self.head += file_bytes;
        self.moving = true;
        self.stats.free_at
    }

    /// Records a written block in the drive buffer; returns when the writer may go on, if it
    /// must wait: when the blocks still waiting for the tape exceed `limit` bytes.
    pub fn buffer(
        &mut self,
        done: Duration,
        bytes: u64,
        now: Duration,
        limit: u64,
    ) -> Option<Duration> {
        self.queue.push_back((done, bytes));
        while self.queue.front().is_some_and(|&(end, _)| end <= now) {
            self.queue.pop_front();
        }
        let mut held: u64 = self.queue.iter().map(|&(_, b)| b).sum();
        let mut wait = None;
        for &(end, b) in &self.queue {
            if held <= limit {
                break;
            }
            held -= b;
            wait = Some(end);
        }
        wait
    }

    /// The stream ends (commit, abort, end of a read): the drive stops without penalty.
    pub fn idle(&mut self) {
        self.moving = false;
        self.queue.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> VtapeConfig {
        VtapeConfig {
            native_rate: 1e6,
            block_overhead: Duration::ZERO,
            position_time: Duration::from_millis(100),
            ..VtapeConfig::default()
        }
    }

    #[test]
    fn compression_ratio_follows_the_data() {
        assert_eq!(lz4_ratio(&[0u8; 65536]), MAX_COMPRESSION_RATIO);
        let noise = crate::conformance::pattern(65536, 3);
        assert_eq!(lz4_ratio(&noise), 1.0);
    }

    #[test]
    fn a_gap_in_a_stream_costs_a_reposition_and_a_fed_drive_none() {
        let c = config();
        let mut d = DriveState::default();
        let ms = Duration::from_millis;
        assert_eq!(d.transfer(&c, ms(0), 1000, 1000), ms(1));
        assert_eq!(d.transfer(&c, ms(1), 1000, 1000), ms(2));
        assert_eq!(d.stats.shoe_shines, 0);
        // Arrives 48 ms after the drive ran dry.
        assert_eq!(d.transfer(&c, ms(50), 1000, 1000), ms(151));
        assert_eq!(d.stats.shoe_shines, 1);
        d.idle();
        d.transfer(&c, ms(500), 1000, 1000);
        assert_eq!(d.stats.shoe_shines, 1, "a new stream starts from rest");
    }

    #[test]
    fn the_buffer_holds_the_writer_back() {
        let mut d = DriveState::default();
        let ms = Duration::from_millis;
        assert_eq!(d.buffer(ms(10), 100, ms(0), 250), None);
        assert_eq!(d.buffer(ms(20), 100, ms(0), 250), None);
        assert_eq!(d.buffer(ms(30), 100, ms(0), 250), Some(ms(10)));
        assert_eq!(d.buffer(ms(40), 100, ms(15), 250), Some(ms(20)));
    }
}
