//! The library's model settings, as `DIR/library.json` stores them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How the modelled library behaves. Stored as `DIR/library.json`; durations are in seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VtapeConfig {
    /// Tape drives: at most this many objects are written at once, one stream per drive.
    pub drives: usize,
    /// BLKSIZE: data reaches the tape in blocks of this many bytes.
    pub block_size: usize,
    /// Native (uncompressed) bytes a cartridge holds.
    pub cartridge_capacity: u64,
    pub cartridges: usize,
    /// Bytes per second one drive writes to tape, before hardware compression.
    pub native_rate: f64,
    /// The drive compresses each block; its rate grows with the data's compressibility.
    pub hardware_compression: bool,
    /// Time to mount a cartridge into a drive.
    #[serde(with = "secs")]
    pub load_time: Duration,
    /// Time to locate a position on tape, or to reposition after the drive ran empty.
    #[serde(with = "secs")]
    pub position_time: Duration,
    /// Fixed cost of each block (command, inter-record gap): what makes a small BLKSIZE slow.
    #[serde(with = "secs")]
    pub block_overhead: Duration,
    /// Bytes the drive buffers: how far a writer may run ahead of the tape.
    pub drive_buffer: usize,
}

impl Default for VtapeConfig {
    /// An LTO-like library scaled down to test sizes: LTO-6 native rate, cartridges of 1 GiB,
    /// mount and reposition times cut from tens of seconds to fractions, and a block overhead
    /// fitted to the seed's 64 KiB vs 256 KiB measurement (docs/vtape.md).
    fn default() -> Self {
        VtapeConfig {
            drives: 2,
            block_size: 256 << 10,
            cartridge_capacity: 1 << 30,
            cartridges: 16,
            native_rate: 160e6,
            hardware_compression: true,
            load_time: Duration::from_secs(1),
            position_time: Duration::from_millis(200),
            block_overhead: Duration::from_micros(150),
            drive_buffer: 64 << 20,
        }
    }
}

impl VtapeConfig {
    /// Why this configuration cannot work, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.drives == 0 || self.drives > 99 {
            return Err(format!("drives is {}; it must be 1 to 99", self.drives));
        }
        if self.cartridges == 0 || self.cartridges > 9999 {
            return Err(format!(
                "cartridges is {}; it must be 1 to 9999",
                self.cartridges
            ));
        }
        if self.block_size == 0 {
            return Err("block_size is 0".to_string());
        }
        if self.cartridge_capacity < self.block_size as u64 {
            return Err(format!(
                "cartridge_capacity {} is below block_size {}: no block would fit",
                self.cartridge_capacity, self.block_size
            ));
        }
        if !(self.native_rate.is_finite() && self.native_rate > 0.0) {
            return Err(format!(
                "native_rate is {}; it must be positive",
                self.native_rate
            ));
        }
        Ok(())
    }
}

/// Durations as seconds in JSON, which people edit by hand.
mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Duration::try_from_secs_f64(f64::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}
