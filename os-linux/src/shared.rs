//! Pages shared between the kernel and one stub process (the stub's data area).
//!
//! A small memfd mapped into the kernel here and, by the stub, at a fixed address in the stub.
//! The stub reads its batch of host calls from it and writes results and fault information to
//! it. Both sides run concurrently, so every access is an atomic load or store of one word.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// A shared area of `len` bytes.
pub struct SharedPages {
    fd: Option<OwnedFd>,
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
            fd: Some(fd),
            base: base.cast(),
            len,
        })
    }

    /// The memfd, to be passed to the stub. Panics after [`SharedPages::close_fd`].
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd
            .as_ref()
            .map(|f| f.as_fd())
            .expect("SharedPages::fd after close_fd")
    }

    /// Closes the memfd once the stub has mapped it (the mappings stay): a kernel with
    /// hundreds of stubs would otherwise hold hundreds of descriptors.
    pub fn close_fd(&mut self) {
        self.fd = None;
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

impl SharedPages {
    /// The 32-bit word at `off` (a futex word).
    pub fn atomic32(&self, off: usize) -> &AtomicU32 {
        assert!(
            off % 4 == 0 && off + 4 <= self.len,
            "shared word {off:#x} out of range"
        );
        // SAFETY: aligned, inside the live mapping (checked); AtomicU32 has u32's layout.
        unsafe { &*(self.base.add(off) as *const AtomicU32) }
    }

    /// Copies `buf.len()` bytes at `off` out of the area. For blocks the stub does not touch
    /// meanwhile (a handoff protocol gives the kernel exclusive use of them first).
    pub fn read(&self, off: usize, buf: &mut [u8]) {
        assert!(
            off + buf.len() <= self.len,
            "shared read {off:#x} out of range"
        );
        std::sync::atomic::fence(Ordering::Acquire);
        // SAFETY: the range is inside the live mapping (checked) and does not overlap `buf`,
        // which is our own memory. The stub process does not write it while the kernel owns
        // the block (the caller's protocol); if it did, we would read garbage bytes, never
        // touch memory outside the mapping.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(off), buf.as_mut_ptr(), buf.len()) };
    }

    /// Copies `buf` into the area at `off` (same conditions as [`SharedPages::read`]).
    pub fn write(&self, off: usize, buf: &[u8]) {
        assert!(
            off + buf.len() <= self.len,
            "shared write {off:#x} out of range"
        );
        // SAFETY: as in `read`: in range, no overlap with `buf`, and the stub keeps off the
        // block until the handoff that follows (whose release ordering publishes the bytes).
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), self.base.add(off), buf.len()) };
        std::sync::atomic::fence(Ordering::Release);
    }
}

/// `FUTEX_WAIT` on a word another process shares (so not `FUTEX_PRIVATE_FLAG`): sleeps while
/// `*w == val`, at most `timeout`. Ok(true) if woken or the value differed, Ok(false) on
/// timeout; EINTR counts as a wakeup (the caller re-checks the word anyway).
pub fn futex_wait(w: &AtomicU32, val: u32, timeout: Duration) -> io::Result<bool> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as _,
        tv_nsec: timeout.subsec_nanos() as _,
    };
    // SAFETY: FUTEX_WAIT reads the aligned word `w` (alive for the call) and the timespec.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            w.as_ptr(),
            libc::FUTEX_WAIT,
            val,
            &ts as *const libc::timespec,
        )
    };
    if r == 0 {
        return Ok(true);
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN | libc::EINTR) => Ok(true),
        Some(libc::ETIMEDOUT) => Ok(false),
        _ => Err(io::Error::last_os_error()),
    }
}

/// `FUTEX_WAKE` of up to `n` waiters of a shared word.
pub fn futex_wake(w: &AtomicU32, n: i32) {
    // SAFETY: FUTEX_WAKE only uses the word's address as a key.
    unsafe { libc::syscall(libc::SYS_futex, w.as_ptr(), libc::FUTEX_WAKE, n) };
}

impl Drop for SharedPages {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly our mapping; references handed out borrow `self`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}
