//! Buffers aligned for direct I/O: a leaf below the I/O engine, the page checks and the
//! restore's writers, which all fill or drain them.

/// Alignment of every pool buffer: the strictest a block device asks for direct I/O.
pub const ALIGN: usize = 4096;

/// A buffer whose usable region starts on an [`ALIGN`] boundary. The region lives in a heap
/// allocation that never moves while the buffer exists, which is what lets an asynchronous
/// read target it while the value itself is moved around.
pub struct AlignedBuf {
    raw: Vec<u8>,
    off: usize,
    len: usize,
}

impl AlignedBuf {
    pub fn new(len: usize) -> AlignedBuf {
        let raw = vec![0u8; len + ALIGN];
        let off = raw.as_ptr().align_offset(ALIGN);
        AlignedBuf { raw, off, len }
    }

    pub fn capacity(&self) -> usize {
        self.len
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.raw[self.off..self.off + self.len]
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.raw[self.off..self.off + self.len]
    }

    /// Start of the usable region, for the kernel to write into.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_slice().as_mut_ptr()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn aligned_and_sized() {
        for len in [8192, 1 << 20, 3 * 8192] {
            let mut b = super::AlignedBuf::new(len);
            assert_eq!(b.as_mut_ptr() as usize % super::ALIGN, 0);
            assert_eq!(b.as_slice().len(), len);
        }
    }
}
