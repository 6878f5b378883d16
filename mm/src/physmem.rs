//! What the frames live in: [`PhysMemory`], the guest's "physical" memory as the frame
//! allocator sees it (bytes at offsets, copied in and out, never borrowed).
//!
//! The kernel's is the host memfd that every stub maps (`um_os_linux::physmem::PhysMem`,
//! adapted by `um-bin`), so `um-mm` does not depend on the host layer: the allocator, the page
//! tables and the fault logic are pure and their unit tests run on [`HeapMemory`], plain
//! process memory. Neighbours: [`crate::FrameAllocator`] (the one user).

use std::sync::Mutex;

/// Physical memory: `size()` bytes addressed by offset. Offsets and lengths come from kernel
/// code (frame numbers the allocator handed out), never from a guest; an access past the end
/// is a kernel bug and panics.
pub trait PhysMemory: Send + Sync {
    /// Size in bytes.
    fn size(&self) -> usize;
    /// Copies `buf.len()` bytes at `off` into `buf`.
    fn read(&self, off: usize, buf: &mut [u8]);
    /// Copies `data` to `off`.
    fn write(&self, off: usize, data: &[u8]);
    /// Zeroes `len` bytes at `off`.
    fn zero(&self, off: usize, len: usize);
    /// Copies `len` bytes from `src` to `dst` (the ranges do not overlap).
    fn copy(&self, src: usize, dst: usize, len: usize);
    /// Atomic compare-and-exchange of the aligned u32 at `off` (guest futex words shared with
    /// running guest threads); returns the value found.
    fn cmpxchg_u32(&self, off: usize, old: u32, new: u32) -> u32;
}

/// Physical memory in the kernel's own heap, for unit tests and tools: no host mapping, so
/// nothing but this process sees it, and the compare-and-exchange is atomic only against
/// other calls of this object (which is all such users need).
pub struct HeapMemory {
    bytes: Mutex<Vec<u8>>,
}

impl HeapMemory {
    /// `size` zero bytes.
    pub fn new(size: usize) -> HeapMemory {
        HeapMemory {
            bytes: Mutex::new(vec![0; size]),
        }
    }

    fn bytes(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        // Every critical section is one slice copy: a panic inside cannot leave it half-done
        // in a way a later reader could not cope with, so a poisoned lock is still usable.
        self.bytes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl PhysMemory for HeapMemory {
    fn size(&self) -> usize {
        self.bytes().len()
    }

    fn read(&self, off: usize, buf: &mut [u8]) {
        buf.copy_from_slice(&self.bytes()[off..off + buf.len()]);
    }

    fn write(&self, off: usize, data: &[u8]) {
        self.bytes()[off..off + data.len()].copy_from_slice(data);
    }

    fn zero(&self, off: usize, len: usize) {
        self.bytes()[off..off + len].fill(0);
    }

    fn copy(&self, src: usize, dst: usize, len: usize) {
        self.bytes().copy_within(src..src + len, dst);
    }

    fn cmpxchg_u32(&self, off: usize, old: u32, new: u32) -> u32 {
        let mut b = self.bytes();
        let w = &mut b[off..off + 4];
        let cur = u32::from_ne_bytes([w[0], w[1], w[2], w[3]]);
        if cur == old {
            w.copy_from_slice(&new.to_ne_bytes());
        }
        cur
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_memory_reads_what_was_written_and_exchanges() {
        let m = HeapMemory::new(64);
        assert_eq!(m.size(), 64);
        m.write(8, b"abcd");
        let mut b = [0u8; 4];
        m.read(8, &mut b);
        assert_eq!(&b, b"abcd");
        m.copy(8, 32, 4);
        m.zero(9, 2);
        m.read(8, &mut b);
        assert_eq!(&b, b"a\0\0d");
        m.write(8, b"abcd");
        m.read(32, &mut b);
        assert_eq!(&b, b"abcd");
        let w = u32::from_ne_bytes(*b"abcd");
        assert_eq!(
            m.cmpxchg_u32(8, 1, 2),
            w,
            "a failed exchange returns the value found"
        );
        assert_eq!(m.cmpxchg_u32(8, w, 7), w);
        m.read(8, &mut b);
        assert_eq!(u32::from_ne_bytes(b), 7);
    }

    #[test]
    #[should_panic]
    fn heap_memory_access_past_the_end_panics() {
        let m = HeapMemory::new(16);
        m.write(14, b"abcd");
    }
}
