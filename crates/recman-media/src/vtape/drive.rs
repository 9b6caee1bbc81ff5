//! The drive pool. A stream (a writer for its whole life, a reader for one block) leases a
//! drive; when all are busy it waits, as an SBT session waits for a drive. A drive is held
//! by the process-local `busy` flag and by an flock on `drives/Dnn.lock`, so other processes
//! sharing the library wait for it too.

use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::Inner;
use super::model::{DriveState, DriveStats};

/// How often a waiter looks again when another process holds the free drives; its releases
/// cannot signal our condition variable.
const FOREIGN_POLL: Duration = Duration::from_millis(20);

#[derive(Debug)]
pub(super) struct Drives {
    states: Vec<Mutex<DriveState>>,
    locks: Vec<File>,
    busy: Mutex<Vec<bool>>,
    freed: Condvar,
}

/// A poisoned lock only means another stream panicked; the model state stays usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn drive_lock_path(dir: &Path, drive: usize) -> PathBuf {
    dir.join("drives").join(format!("D{:02}.lock", drive + 1))
}

impl Drives {
    pub fn open(dir: &Path, n: usize) -> io::Result<Drives> {
        let mut locks = Vec::with_capacity(n);
        let mut states = Vec::with_capacity(n);
        for d in 0..n {
            locks.push(crate::modes::open_private(
                &drive_lock_path(dir, d),
                crate::modes::PRIVATE_MODE,
                false,
            )?);
            let mut state = DriveState::default();
            state.stats.drive = d + 1;
            states.push(Mutex::new(state));
        }
        Ok(Drives {
            states,
            locks,
            busy: Mutex::new(vec![false; n]),
            freed: Condvar::new(),
        })
    }

    /// Takes a free drive, waiting while there is none. With `want`, a drive holding that
    /// cartridge is taken first, then an empty one, to save loads.
    fn acquire(&self, want: Option<u32>) -> io::Result<usize> {
        let mut busy = lock(&self.busy);
        loop {
            let mut free: Vec<usize> = (0..busy.len()).filter(|&d| !busy[d]).collect();
            if let Some(c) = want {
                free.sort_by_key(|&d| match lock(&self.states[d]).mounted {
                    Some(m) if m == c => 0,
                    None => 1,
                    Some(_) => 2,
                });
            }
            let mut foreign = false;
            for d in free {
                match self.locks[d].try_lock() {
                    Ok(()) => {
                        busy[d] = true;
                        return Ok(d);
                    }
                    Err(TryLockError::WouldBlock) => foreign = true,
                    Err(TryLockError::Error(e)) => return Err(e),
                }
            }
            busy = if foreign {
                self.freed
                    .wait_timeout(busy, FOREIGN_POLL)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            } else {
                self.freed.wait(busy).unwrap_or_else(|e| e.into_inner())
            };
        }
    }

    fn release(&self, d: usize, stop: bool) {
        if stop {
            lock(&self.states[d]).idle();
        }
        let mut busy = lock(&self.busy);
        // Closing the library releases the flock anyway; an unlock failure changes nothing.
        let _ = self.locks[d].unlock();
        busy[d] = false;
        self.freed.notify_all();
    }

    pub fn state(&self, d: usize) -> MutexGuard<'_, DriveState> {
        lock(&self.states[d])
    }

    /// The robot takes `cartridge` out of whichever other drive holds it.
    pub fn unmount_elsewhere(&self, d: usize, cartridge: u32) {
        for (i, s) in self.states.iter().enumerate() {
            if i != d {
                let mut s = lock(s);
                if s.mounted == Some(cartridge) {
                    s.mounted = None;
                }
            }
        }
    }

    pub fn stats(&self) -> Vec<DriveStats> {
        self.states.iter().map(|s| lock(s).stats.clone()).collect()
    }
}

/// A drive held by one stream; dropping it hands the drive back.
pub(super) struct DriveLease {
    inner: Arc<Inner>,
    pub drive: usize,
    /// The stream ends with the lease, so the drive stops without a shoe-shine. A reader
    /// leases per block and keeps its stream going between leases.
    ends_stream: bool,
}

impl DriveLease {
    pub fn acquire(
        inner: &Arc<Inner>,
        want: Option<u32>,
        ends_stream: bool,
    ) -> io::Result<DriveLease> {
        let drive = inner.drives.acquire(want)?;
        Ok(DriveLease {
            inner: inner.clone(),
            drive,
            ends_stream,
        })
    }

    pub fn state(&self) -> MutexGuard<'_, DriveState> {
        self.inner.drives.state(self.drive)
    }

    /// Mounts `cartridge` and locates `offset` on it, charging the model what that costs.
    pub fn position(&self, cartridge: u32, offset: u64) {
        let config = &self.inner.config;
        if self.state().mounted != Some(cartridge) {
            self.inner.drives.unmount_elsewhere(self.drive, cartridge);
        }
        let mut st = self.state();
        let now = self.inner.now();
        st.mount(config, now, cartridge);
        st.locate(config, now, offset);
    }
}

impl Drop for DriveLease {
    fn drop(&mut self) {
        self.inner.drives.release(self.drive, self.ends_stream);
    }
}
