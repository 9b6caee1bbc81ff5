//! RECOVER DATAFILE 'FILE' BLOCK n [TO m], … lowered to `recover block FILE:n …`. recman names
//! relation files by their path in the data directory (as `validate database` prints them);
//! it has no datafile numbers.

use anyhow::{Result, bail};
use recman_command as m;
use recman_lang::FileRef;

/// Most blocks one statement may name through `n TO m` ranges.
const MAX_BLOCKS: u64 = 100_000;

pub(crate) fn recover_block(file: &FileRef, blocks: &[(u64, Option<u64>)]) -> Result<m::Command> {
    let path = match file {
        FileRef::Path(p) => p,
        FileRef::Number(n) => bail!(
            "RECOVER DATAFILE {n} BLOCK …: recman names relation files by their path in the data directory, not by number; hint: RECOVER DATAFILE 'base/5/16384' BLOCK 3; (`recman validate database` prints each corrupt block's file)"
        ),
    };
    let mut out = Vec::new();
    for &(a, b) in blocks {
        let b = b.unwrap_or(a);
        if b < a || b - a >= MAX_BLOCKS || out.len() as u64 + (b - a) >= MAX_BLOCKS {
            bail!(
                "RECOVER DATAFILE '{path}' BLOCK {a} TO {b}: a range runs from the lower block to the higher, at most {MAX_BLOCKS} blocks in all; hint: RECOVER DATAFILE '{path}' BLOCK 3 TO 7;"
            );
        }
        out.extend((a..=b).map(|n| format!("{path}:{n}")));
    }
    Ok(m::Command::RecoverBlock {
        blocks: out,
        corruption_list: false,
        auxiliary_dir: None,
    })
}
