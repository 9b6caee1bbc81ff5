use crate::error::EngineError;
use crate::read_mode::ReadMode;
use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoMode {
    /// io_uring when the kernel allows it, helper threads otherwise.
    Auto,
    Uring,
    Threads,
    Sync,
}

impl FromStr for IoMode {
    type Err = EngineError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(IoMode::Auto),
            "uring" | "io_uring" => Ok(IoMode::Uring),
            "threads" | "slaves" => Ok(IoMode::Threads),
            "sync" => Ok(IoMode::Sync),
            _ => Err(crate::refusal::Input::IoMode {
                text: s.to_string(),
            }
            .into()),
        }
    }
}

impl fmt::Display for IoMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoMode::Auto => "auto",
            IoMode::Uring => "uring",
            IoMode::Threads => "threads",
            IoMode::Sync => "sync",
        })
    }
}

/// How a command issues I/O and sizes its buffers; `None` means RMAN's default rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoSettings {
    pub mode: IoMode,
    /// Helper threads per channel in `threads` mode.
    pub slaves: usize,
    /// Input buffers per open file.
    pub input_buffers: Option<usize>,
    pub input_buffer_size: Option<usize>,
    pub output_buffers: usize,
    /// Output block size (RMAN's BLKSIZE): the size of each write to the media.
    pub blksize: usize,
    /// Bytes per second per channel.
    pub rate: Option<u64>,
    pub reads: ReadMode,
}

impl Default for IoSettings {
    fn default() -> Self {
        IoSettings {
            mode: IoMode::Auto,
            slaves: 4,
            input_buffers: None,
            input_buffer_size: None,
            output_buffers: 4,
            blksize: 1 << 20,
            rate: None,
            reads: ReadMode::Auto,
        }
    }
}

/// The input buffers one channel uses for one backup set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferPlan {
    pub per_file: usize,
    pub size: usize,
}

impl BufferPlan {
    /// RMAN's documented allocation by multiplexing level: up to 4 files share 16 buffers of
    /// 1 MiB; 5 to 8 files share 16 MiB in 512 KiB buffers; beyond 8, each file gets 4 of
    /// 128 KiB. Explicit settings replace either part.
    pub fn for_mux(mux: u32, s: &IoSettings) -> BufferPlan {
        let mux = mux.max(1) as usize;
        let (per_file, size) = match mux {
            1..=4 => ((16 / mux).max(2), 1 << 20),
            5..=8 => (((16 << 20) / (512 << 10) / mux).max(2), 512 << 10),
            _ => (4, 128 << 10),
        };
        BufferPlan {
            per_file: s.input_buffers.unwrap_or(per_file).max(1),
            size: s.input_buffer_size.unwrap_or(size),
        }
    }

    pub fn bytes(&self, mux: u32) -> u64 {
        (self.per_file * self.size) as u64 * mux.max(1) as u64
    }
}

impl IoSettings {
    pub fn validate(&self) -> Result<(), EngineError> {
        if let Some(s) = self.input_buffer_size
            && (s == 0 || s % recman_page::BLCKSZ != 0 || s > recman_format::MAX_CHUNK)
        {
            return Err(crate::refusal::Input::InputBufferSize {
                text: s.to_string(),
            }
            .into());
        }
        if self.blksize < 4096 || self.blksize > (64 << 20) {
            return Err(crate::refusal::Input::Blksize {
                value: self.blksize as u64,
            }
            .into());
        }
        if self.output_buffers == 0 || self.slaves == 0 || self.input_buffers == Some(0) {
            return Err(crate::refusal::Input::AtLeastOne {
                options: "--output-buffers, --input-buffers and --io-slaves",
            }
            .into());
        }
        Ok(())
    }

    /// The memory one channel may hold for a set of `mux` files: input buffers, output
    /// buffers, the compressor's scratch for one chunk and the piece file's write blocks
    /// (direct writes in flight on a disk repository).
    pub fn channel_budget(&self, mux: u32) -> u64 {
        let input = BufferPlan::for_mux(mux, self);
        input.bytes(mux)
            + (self.output_buffers * self.blksize) as u64
            + (input.size as u64 * 11 / 10 + 4096)
            + recman_media::DIRECT_WRITE_MEMORY
    }
}

/// Parses sizes such as 512K, 1M, 1.5G, 8192 (bytes); a trailing "/s" is allowed for rates.
pub fn parse_size(text: &str) -> Result<u64, EngineError> {
    let t = text.trim().trim_end_matches("/s").trim_end_matches("/S");
    let (num, mult) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let m: u64 = match t[i..]
                .to_ascii_uppercase()
                .trim_end_matches("IB")
                .trim_end_matches('B')
            {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                "T" => 1 << 40,
                _ => {
                    return Err(crate::refusal::Input::Size {
                        text: text.to_string(),
                    }
                    .into());
                }
            };
            (&t[..i], m)
        }
        None => (t, 1),
    };
    let n: f64 = num.trim().parse().map_err(|_| {
        EngineError::from(crate::refusal::Input::Size {
            text: text.to_string(),
        })
    })?;
    if n < 0.0 {
        return Err(crate::refusal::Input::NegativeSize {
            text: text.to_string(),
        }
        .into());
    }
    Ok((n * mult as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rman_buffer_rules() {
        let s = IoSettings::default();
        assert_eq!(
            BufferPlan::for_mux(1, &s),
            BufferPlan {
                per_file: 16,
                size: 1 << 20
            }
        );
        assert_eq!(
            BufferPlan::for_mux(4, &s),
            BufferPlan {
                per_file: 4,
                size: 1 << 20
            }
        );
        assert_eq!(
            BufferPlan::for_mux(8, &s),
            BufferPlan {
                per_file: 4,
                size: 512 << 10
            }
        );
        assert_eq!(BufferPlan::for_mux(8, &s).bytes(8), 16 << 20);
        assert_eq!(
            BufferPlan::for_mux(16, &s),
            BufferPlan {
                per_file: 4,
                size: 128 << 10
            }
        );
        let o = IoSettings {
            input_buffers: Some(2),
            input_buffer_size: Some(64 << 10),
            ..s
        };
        assert_eq!(
            BufferPlan::for_mux(16, &o),
            BufferPlan {
                per_file: 2,
                size: 64 << 10
            }
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512K").unwrap(), 512 << 10);
        assert_eq!(parse_size("1M/s").unwrap(), 1 << 20);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("8192").unwrap(), 8192);
        assert!(parse_size("lots").is_err());
    }
}
