//! A RUN block's state: its channels and SET values. Top-level statements run in an empty
//! block that refuses what only RUN allows.

use anyhow::{Result, bail};
use recman_lang::*;

/// A channel allocated in the block.
#[derive(Debug, Clone)]
pub(crate) struct Channel {
    pub name: String,
    pub device: Device,
    pub ops: Vec<ChannelOp>,
}

pub(crate) struct Block {
    pub in_run: bool,
    pub channels: Vec<Channel>,
    pub until: Option<Until>,
    pub newname: Option<String>,
    pub maxcorrupt: Option<u64>,
    pub compression: Option<String>,
    /// Index of the RESTORE DATABASE that a later RECOVER DATABASE of the block joins, with
    /// that RECOVER's UNTIL.
    pub restore_joins: Option<(usize, Option<Until>)>,
    /// Index of a RECOVER DATABASE already done by an earlier RESTORE DATABASE.
    pub recover_done: Option<usize>,
}

impl Block {
    pub(crate) fn top_level() -> Block {
        Block {
            in_run: false,
            channels: Vec::new(),
            until: None,
            newname: None,
            maxcorrupt: None,
            compression: None,
            restore_joins: None,
            recover_done: None,
        }
    }

    /// A block for `body`. RESTORE DATABASE followed by RECOVER DATABASE becomes one restore:
    /// PostgreSQL recovers when it starts on the restored directory, so the recovery target
    /// must be written by the restore.
    pub(crate) fn new(body: &[Stmt]) -> Block {
        let mut b = Block::top_level();
        b.in_run = true;
        let restore = body.iter().position(|s| {
            matches!(&s.statement, Statement::Restore(r) if matches!(r.object, RestoreObject::Database { .. }))
        });
        if let Some(r) = restore {
            let recover =
                body.iter()
                    .enumerate()
                    .skip(r + 1)
                    .find_map(|(i, s)| match &s.statement {
                        Statement::Recover(rc) if rc.object == RecoverObject::Database => {
                            Some((i, rc))
                        }
                        _ => None,
                    });
            if let Some((i, rc)) = recover {
                let until = rc.options.iter().find_map(|o| match o {
                    RecoverOpt::Until(u) => Some(u.clone()),
                    _ => None,
                });
                b.restore_joins = Some((r, until));
                b.recover_done = Some(i);
            }
        }
        b
    }

    pub(crate) fn only_in_run(&self, what: &str) -> Result<()> {
        if !self.in_run {
            bail!(
                "{what} is only valid inside RUN {{ … }}, as in RMAN; hint: RUN {{ {what} …; BACKUP DATABASE; }}"
            );
        }
        Ok(())
    }
}
