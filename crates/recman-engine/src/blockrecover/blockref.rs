//! A block named on the command line or in the catalog: a relation segment file inside PGDATA
//! and a block of it.

use crate::error::EngineError;
use recman_page::{BLCKSZ, RELSEG_SIZE};

/// One block of a relation file: `path` relative to PGDATA (a segment file such as
/// `base/5/16384.1`), `block` the relation's block number, as `validate database` reports it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct BlockRef {
    pub path: String,
    pub block: u32,
}

impl std::fmt::Display for BlockRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.path, self.block)
    }
}

impl BlockRef {
    /// Reads `FILE:BLOCK`. BLOCK is the relation's block number as `validate database` prints
    /// it; for a later segment (`16384.1`) a number below the segment's first block is taken
    /// as counted from the start of that segment file.
    pub fn parse(text: &str) -> Result<BlockRef, EngineError> {
        let bad = |why: &str| {
            EngineError::from(crate::refusal::Input::Block {
                text: text.to_string(),
                why: why.to_string(),
            })
        };
        let (path, block) = text.rsplit_once(':').ok_or_else(|| bad("no ':'"))?;
        let block: u32 = block
            .trim()
            .parse()
            .map_err(|_| bad("the block is not a number"))?;
        BlockRef::new(path.trim(), block).map_err(|e| match e {
            // The path's refusal becomes the reason the whole FILE:BLOCK is refused.
            e @ EngineError::Refused(_) => bad(&e.to_string()),
            e => e,
        })
    }

    /// A block of `path` (checked to be a relation file path inside PGDATA).
    pub fn new(path: &str, block: u32) -> Result<BlockRef, EngineError> {
        let Some(rf) = recman_page::classify(path).filter(|_| !path.contains("..")) else {
            return Err(crate::refusal::Input::NotRelationFile {
                path: path.to_string(),
            }
            .into());
        };
        let first = rf.first_block();
        let block = if block < first { first + block } else { block };
        if block - first >= RELSEG_SIZE {
            return Err(crate::refusal::Input::BlockNotInSegment {
                block,
                path: path.to_string(),
                first,
                last: first + RELSEG_SIZE - 1,
            }
            .into());
        }
        Ok(BlockRef {
            path: path.to_string(),
            block,
        })
    }

    /// Byte offset of the block in its segment file.
    pub(super) fn offset(&self) -> u64 {
        let first = recman_page::classify(&self.path)
            .map(|r| r.first_block())
            .unwrap_or(0);
        u64::from(self.block - first) * BLCKSZ as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_read_as_validate_prints_them() {
        let b = BlockRef::parse("base/5/16384:3").unwrap();
        assert_eq!(
            (b.path.as_str(), b.block, b.offset()),
            ("base/5/16384", 3, 3 * 8192)
        );
        // A later segment: relation block numbers, or counted from the segment's start.
        let b = BlockRef::parse("base/5/16384.1:131074").unwrap();
        assert_eq!((b.block, b.offset()), (131074, 2 * 8192));
        assert_eq!(BlockRef::parse("base/5/16384.1:2").unwrap(), b);
        let e = BlockRef::parse("base/5/16384:131072")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not in segment file"), "{e}");
        for bad in [
            "base/5/16384",
            "pg_wal/x:1",
            "base/5/../16384:1",
            "base/5/16384:x",
        ] {
            let e = BlockRef::parse(bad).unwrap_err().to_string();
            assert!(e.contains("hint:"), "{bad}: {e}");
        }
    }
}
