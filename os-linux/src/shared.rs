//! Pages shared between the kernel and one stub process (the stub's data area).
//!
//! A small memfd mapped into the kernel here and, by the stub, at a fixed address in the stub.
//! The stub reads its batch of host calls from it and writes results and fault information to
//! it. Both sides run concurrently, so every access is an atomic load or store of one word.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// A shared area of `len` bytes.
pub struct SharedPages {
    fd: OwnedFd,
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping lives as long as the struct and is only accessed through atomics.
unsafe impl Send for SharedPages {}
// SAFETY: as above.
unsafe impl Sync for SharedPages {}

impl SharedPages {
    /// Creates a shared area of `len` bytes (a multiple of the host page size).
    pub fn new(len: usize) -> io::Result<SharedPages> {
        // SAFETY: memfd_create with a static name.
        let raw = unsafe { libc::memfd_create(c"um-stub-data".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: ftruncate on our fd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new shared mapping at a host-chosen address, kept until drop.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedPages {
            fd,
            base: base.cast(),
            len,
        })
    }

    /// The memfd, to be passed to the stub.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: an area has at least one page.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn word(&self, off: usize) -> &AtomicU64 {
        assert!(
            off % 8 == 0 && off + 8 <= self.len,
            "shared word {off:#x} out of range"
        );
        // SAFETY: the offset is aligned and inside the live mapping (checked above); an
        // AtomicU64 has the layout of a u64, and all accesses to the area are atomic.
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }

    /// Loads the word at byte offset `off` (acquire: what the stub wrote before it is visible).
    pub fn load(&self, off: usize) -> u64 {
        self.word(off).load(Ordering::Acquire)
    }

    /// Stores the word at byte offset `off` (release).
    pub fn store(&self, off: usize, v: u64) {
        self.word(off).store(v, Ordering::Release)
    }

    /// The word at `off` as an atomic, for handoff protocols.
    pub fn atomic(&self, off: usize) -> &AtomicU64 {
        self.word(off)
    }
}

impl Drop for SharedPages {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly our mapping; references handed out borrow `self`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}
