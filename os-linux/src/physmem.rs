//! Physical memory: one memfd of `mem=` bytes, mapped once, shared, into the kernel.
//!
//! Guest pages are frames of this file mapped `MAP_SHARED|MAP_FIXED` into stub processes, so the
//! kernel and every guest see the same bytes. Guest threads may write a frame while the kernel
//! copies it; the kernel therefore never hands out references into this memory, only copies.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// The guest's physical memory.
pub struct PhysMem {
    fd: OwnedFd,
    base: *mut u8,
    size: usize,
}

// SAFETY: the mapping is owned by this struct for its whole life and every access goes through
// bounds-checked copies; concurrent access from several kernel threads is the normal case for
// physical memory and the copies tolerate it (see `read`).
unsafe impl Send for PhysMem {}
// SAFETY: as above; no method hands out a reference into the mapping.
unsafe impl Sync for PhysMem {}

impl PhysMem {
    /// Creates `size` bytes of physical memory. Fails if the memfd cannot be created, sized or
    /// mapped (for example a `mem=` larger than the host's address space).
    pub fn new(size: usize) -> io::Result<PhysMem> {
        if size == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: memfd_create takes a NUL-terminated name and flags; it returns a new fd or -1.
        let raw = unsafe { libc::memfd_create(c"um-physmem".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh fd that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: ftruncate on an fd we own.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), size as libc::off_t) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new shared mapping of the whole file at an address the host chooses; we keep
        // it until drop.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_NORESERVE,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(PhysMem {
            fd,
            base: base.cast(),
            size,
        })
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The memfd, for mapping frames into stub processes.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn check(&self, off: usize, len: usize) {
        assert!(
            off.checked_add(len).is_some_and(|end| end <= self.size),
            "physmem access {off:#x}+{len:#x} beyond {:#x}",
            self.size
        );
    }

    /// Copies `buf.len()` bytes at physical offset `off` into `buf`.
    ///
    /// Panics if the range is outside physical memory: callers compute offsets from frames they
    /// own, so that is a kernel bug, never a guest error.
    pub fn read(&self, off: usize, buf: &mut [u8]) {
        self.check(off, buf.len());
        // SAFETY: the range is inside our live mapping (checked above) and `buf` is a distinct
        // Rust allocation. A guest thread may write these bytes concurrently; we copy whatever
        // is there, exactly as a real kernel's copy_from_user would.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(off), buf.as_mut_ptr(), buf.len()) }
    }

    /// Copies `data` to physical offset `off`. Panics outside physical memory (kernel bug).
    pub fn write(&self, off: usize, data: &[u8]) {
        self.check(off, data.len());
        // SAFETY: the range is inside our live mapping and does not overlap `data`, which is
        // kernel memory.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.base.add(off), data.len()) }
    }

    /// Fills `len` bytes at `off` with zeroes.
    pub fn zero(&self, off: usize, len: usize) {
        self.check(off, len);
        // SAFETY: the range is inside our live mapping.
        unsafe { std::ptr::write_bytes(self.base.add(off), 0, len) }
    }

    /// Copies `len` bytes from physical offset `src` to `dst` (frames never overlap).
    pub fn copy(&self, src: usize, dst: usize, len: usize) {
        self.check(src, len);
        self.check(dst, len);
        assert!(
            src + len <= dst || dst + len <= src,
            "overlapping physmem copy"
        );
        // SAFETY: both ranges are inside the mapping and do not overlap (checked above).
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(src), self.base.add(dst), len) }
    }

    /// Atomically replaces the aligned 32-bit word at `off` with `new` if it equals `old`;
    /// returns the value found (== `old` on success). Guest threads may use the same word with
    /// their own atomic instructions at the same time (futexes), so this is a real `lock
    /// cmpxchg` on the shared mapping. Panics if `off` is unaligned or outside physical memory
    /// (kernel bug).
    pub fn cmpxchg_u32(&self, off: usize, old: u32, new: u32) -> u32 {
        self.check(off, 4);
        assert!(off % 4 == 0, "unaligned physmem cmpxchg at {off:#x}");
        // SAFETY: the 4 bytes are inside our live mapping (checked above) and 4-byte aligned
        // (the mapping is page aligned); every access to guest memory from the kernel is either
        // a byte copy or this atomic, and the guest's own accesses are machine instructions, so
        // treating the word as an `AtomicU32` for the duration of this call is sound.
        let a = unsafe { AtomicU32::from_ptr(self.base.add(off).cast()) };
        match a.compare_exchange(old, new, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(v) | Err(v) => v,
        }
    }
}

impl Drop for PhysMem {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping created in `new`; no references into it exist.
        unsafe { libc::munmap(self.base.cast(), self.size) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_back_what_was_written() {
        let m = PhysMem::new(1 << 20).unwrap();
        m.write(4096, b"hello");
        let mut b = [0u8; 5];
        m.read(4096, &mut b);
        assert_eq!(&b, b"hello");
        m.copy(4096, 8192, 5);
        m.read(8192, &mut b);
        assert_eq!(&b, b"hello");
        m.zero(8192, 5);
        m.read(8192, &mut b);
        assert_eq!(b, [0; 5]);
    }

    #[test]
    #[should_panic]
    fn out_of_range_is_a_bug() {
        let m = PhysMem::new(4096).unwrap();
        m.write(4095, b"xy");
    }
}
