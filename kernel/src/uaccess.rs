//! Typed guest memory: the only way handlers name a guest address.
//!
//! A guest pointer is never a Rust reference: guest threads may write a page while the kernel
//! copies it, and the page may not exist at all. So a pointer argument becomes one of these
//! types at the top of a handler, and every access is a checked copy through the caller's
//! [`Mm`](um_mm::Mm) (`EFAULT` for an address the guest cannot access):
//!
//! - [`UserPtr<T>`]: one `T: Pod` (Linux `T __user *` with `get_user`/`put_user`,
//!   `copy_from_user`/`copy_to_user` of a struct).
//! - [`UserSlice<READ, WRITE>`]: `len` bytes at an address, readable and/or writable by the
//!   kernel as the const parameters say (Redox's `UserSlice`); [`UserSliceRo`] for a buffer the
//!   call reads (write(2)'s), [`UserSliceWo`] for one it fills (read(2)'s).
//! - [`UserCStr`]: a NUL-terminated string (`strncpy_from_user`), and paths (`getname`).
//! - [`import_iovec`]: an iovec array with Linux's rules (`lib/iov_iter.c`), the one reader
//!   every vectored call uses (readv/writev and their p*/p*2 forms, vmsplice, sendmsg/recvmsg).
//!
//! Neighbours: [`SyscallCtx`] (the caller's address space), `um-mm` (the copies themselves),
//! `um-uapi` (`Pod`, `Iovec`).

use crate::syscall::{SyscallCtx, lock_mm};
use core::marker::PhantomData;
use um_uapi::abi::uio::{Iovec, UIO_MAXIOV};
use um_uapi::{Errno, Pod, SysResult};

/// `MAX_RW_COUNT` (include/linux/fs.h: `INT_MAX & PAGE_MASK`): the most one read or write
/// transfers; longer requests are shortened, not refused. It follows the guest page size.
pub fn max_rw_count() -> u64 {
    i32::MAX as u64 & !(um_mm::page_size() - 1)
}

/// A guest address holding one `T`.
pub struct UserPtr<T> {
    addr: u64,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for UserPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for UserPtr<T> {}

impl<T> core::fmt::Debug for UserPtr<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "UserPtr({:#x})", self.addr)
    }
}

impl<T: Pod> UserPtr<T> {
    /// The pointer in an argument register.
    pub fn new(addr: u64) -> Self {
        UserPtr {
            addr,
            _t: PhantomData,
        }
    }

    /// The guest address.
    pub fn addr(self) -> u64 {
        self.addr
    }

    /// Whether the guest passed NULL (many calls give NULL a meaning of its own).
    pub fn is_null(self) -> bool {
        self.addr == 0
    }

    /// The `i`-th element of an array starting here (`EFAULT` if the address wraps).
    pub fn index(self, i: u64) -> SysResult<Self> {
        i.checked_mul(T::SIZE as u64)
            .and_then(|off| self.addr.checked_add(off))
            .map(Self::new)
            .ok_or(Errno::EFAULT)
    }

    /// copy_from_user of one `T`.
    pub fn read(self, c: &SyscallCtx<'_>) -> SysResult<T> {
        let mut b = vec![0u8; T::SIZE];
        lock_mm(&c.mm()).read_bytes(self.addr, &mut b)?;
        Ok(T::read_le(&b))
    }

    /// copy_to_user of one `T`.
    pub fn write(self, c: &SyscallCtx<'_>, v: &T) -> SysResult<()> {
        lock_mm(&c.mm()).write_bytes(self.addr, &v.as_bytes())
    }
}

/// `len` bytes of guest memory at `addr`; `READ`: the kernel may copy from it, `WRITE`: the
/// kernel may copy into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserSlice<const READ: bool, const WRITE: bool> {
    addr: u64,
    len: u64,
}

/// A buffer the call only reads (write(2)'s).
pub type UserSliceRo = UserSlice<true, false>;
/// A buffer the call only fills (read(2)'s).
pub type UserSliceWo = UserSlice<false, true>;
/// A buffer the call reads and writes back.
pub type UserSliceRw = UserSlice<true, true>;

impl<const R: bool, const W: bool> UserSlice<R, W> {
    /// The buffer in a pair of argument registers.
    pub fn new(addr: u64, len: u64) -> Self {
        UserSlice { addr, len }
    }

    /// The guest address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first `n` bytes (or all of it, if shorter).
    pub fn prefix(&self, n: u64) -> Self {
        Self::new(self.addr, self.len.min(n))
    }

    /// The bytes from `off` on (empty past the end).
    pub fn skip(&self, off: u64) -> Self {
        let off = off.min(self.len);
        Self::new(self.addr.wrapping_add(off), self.len - off)
    }

    /// Linux `access_ok(addr, len)`: the range lies below the end of the guest address space
    /// and does not wrap (`arch/x86/include/asm/uaccess.h` `__range_not_ok` with
    /// `TASK_SIZE_MAX`, arm64 `__access_ok`). A zero length still needs a valid start.
    pub fn access_ok(&self, c: &SyscallCtx<'_>) -> bool {
        self.addr
            .checked_add(self.len)
            .is_some_and(|end| end <= c.kernel.layout.task_size)
    }
}

impl<const W: bool> UserSlice<true, W> {
    /// copy_from_user of the whole buffer.
    pub fn read_to_vec(&self, c: &SyscallCtx<'_>) -> SysResult<Vec<u8>> {
        let len = usize::try_from(self.len).map_err(|_| Errno::EFAULT)?;
        c.read_bytes(self.addr, len)
    }
}

impl<const R: bool> UserSlice<R, true> {
    /// copy_to_user of `data` at the start of the buffer; `EFAULT` if it does not fit (a
    /// handler's bug, never the guest's, but an errno all the same).
    pub fn write(&self, c: &SyscallCtx<'_>, data: &[u8]) -> SysResult<()> {
        if data.len() as u64 > self.len {
            return Err(Errno::EFAULT);
        }
        c.write_bytes(self.addr, data)
    }
}

/// A NUL-terminated guest string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserCStr {
    addr: u64,
}

impl UserCStr {
    /// The string in an argument register.
    pub fn new(addr: u64) -> Self {
        UserCStr { addr }
    }

    /// The guest address.
    pub fn addr(self) -> u64 {
        self.addr
    }

    /// Whether the guest passed NULL.
    pub fn is_null(self) -> bool {
        self.addr == 0
    }

    /// The bytes before the NUL, at most `max` of them including the NUL
    /// (`strncpy_from_user`; `ENAMETOOLONG` past `max`, `EFAULT` for a bad address).
    pub fn read(self, c: &SyscallCtx<'_>, max: usize) -> SysResult<Vec<u8>> {
        c.read_cstr(self.addr, max)
    }

    /// A path (`getname`: `PATH_MAX` = 4096 with the NUL, and the empty string is `ENOENT`).
    pub fn read_path(self, c: &SyscallCtx<'_>) -> SysResult<Vec<u8>> {
        c.read_path(self.addr)
    }
}

/// The segments of an imported iovec array and their total length.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoVecs {
    /// The segments, each length already shortened so that the total fits `MAX_RW_COUNT`.
    pub segs: Vec<Iovec>,
    /// The sum of the (shortened) lengths: at most [`max_rw_count`].
    pub total: u64,
}

impl IoVecs {
    /// The segments as slices the call reads (a write-side vector: writev, sendmsg).
    pub fn sources(&self) -> impl Iterator<Item = UserSliceRo> + '_ {
        self.segs.iter().map(|s| UserSlice::new(s.base, s.len))
    }

    /// The segments as slices the call fills (a read-side vector: readv, recvmsg).
    pub fn dests(&self) -> impl Iterator<Item = UserSliceWo> + '_ {
        self.segs.iter().map(|s| UserSlice::new(s.base, s.len))
    }
}

/// Copies an iovec array from the guest and checks it as Linux's `import_iovec` does
/// (`lib/iov_iter.c` `__import_iovec`, `iovec_from_user`, `copy_iovec_from_user`,
/// `import_ubuf`):
///
/// - `nr_segs` is an `unsigned int` there: callers' `unsigned long` counts are truncated to 32
///   bits on the way in (`fs/read_write.c` `vfs_readv` passes its `vlen` straight through);
/// - 0 segments: nothing is read, the total is 0;
/// - more than `UIO_MAXIOV` (1024): `EINVAL`;
/// - the array unreadable: `EFAULT`; a length negative as `ssize_t`: `EINVAL` (checked while
///   copying, in order, so whichever comes first wins);
/// - each segment must pass `access_ok` (`EFAULT`), and lengths are shortened so that the
///   total stays within `MAX_RW_COUNT`; with one segment the length is shortened first and
///   `access_ok` checks the shortened range (`import_ubuf`).
///
/// Callers with other limits check them first (sendmsg's `msg_iovlen > UIO_MAXIOV` is
/// `EMSGSIZE`, `net/socket.c` `__copy_msghdr`).
pub fn import_iovec(c: &SyscallCtx<'_>, uvec: u64, nr_segs: u64) -> SysResult<IoVecs> {
    let n = u64::from(nr_segs as u32);
    if n == 0 {
        return Ok(IoVecs::default());
    }
    if n > UIO_MAXIOV as u64 {
        return Err(Errno::EINVAL);
    }
    let b = c.read_bytes(uvec, n as usize * Iovec::SIZE)?;
    check_iovecs(&b, c.kernel.layout.task_size, max_rw_count())
}

/// Copies an iovec array that names another address space (process_vm_readv/writev's remote
/// vector), as Linux's `iovec_from_user` (`lib/iov_iter.c`) does for
/// `mm/process_vm_access.c` `process_vm_rw`: more than `UIO_MAXIOV` is `EINVAL` (the count is
/// an `unsigned long` there, not truncated), the array unreadable `EFAULT`, a length negative
/// as `ssize_t` `EINVAL`; no `access_ok` and no `MAX_RW_COUNT` shortening, which are the
/// caller's own address space's checks.
pub fn iovec_from_user(c: &SyscallCtx<'_>, uvec: u64, nr_segs: u64) -> SysResult<Vec<Iovec>> {
    if nr_segs > UIO_MAXIOV as u64 {
        return Err(Errno::EINVAL);
    }
    let b = c.read_bytes(uvec, nr_segs as usize * Iovec::SIZE)?;
    let segs: Vec<Iovec> = b.chunks_exact(Iovec::SIZE).map(Iovec::read_le).collect();
    if segs.iter().any(|s| (s.len as i64) < 0) {
        return Err(Errno::EINVAL);
    }
    Ok(segs)
}

/// The checks of [`import_iovec`] on the copied array `b`: `task_size` bounds `access_ok`,
/// `max` is `MAX_RW_COUNT`.
fn check_iovecs(b: &[u8], task_size: u64, max: u64) -> SysResult<IoVecs> {
    let access_ok = |s: &Iovec| s.base.checked_add(s.len).is_some_and(|e| e <= task_size);
    let mut segs = Vec::with_capacity(b.len() / Iovec::SIZE);
    for e in b.chunks_exact(Iovec::SIZE) {
        let io = Iovec::read_le(e);
        if (io.len as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        segs.push(io);
    }
    if let [one] = segs.as_mut_slice() {
        one.len = one.len.min(max);
        if !access_ok(one) {
            return Err(Errno::EFAULT);
        }
        let total = one.len;
        return Ok(IoVecs { segs, total });
    }
    let mut total = 0u64;
    for s in &mut segs {
        if !access_ok(s) {
            return Err(Errno::EFAULT);
        }
        s.len = s.len.min(max - total);
        total += s.len;
    }
    Ok(IoVecs { segs, total })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASK: u64 = 1 << 47;
    const MAX: u64 = 0x7fff_f000;

    fn arr(v: &[(u64, u64)]) -> Vec<u8> {
        let mut b = Vec::new();
        for &(base, len) in v {
            Iovec { base, len }.write_le(&mut b);
        }
        b
    }

    #[test]
    fn lengths_are_shortened_to_max_rw_count_not_refused() {
        let v = check_iovecs(
            &arr(&[(0x1000, MAX - 10), (0x2000, 100), (0x3000, 5)]),
            TASK,
            MAX,
        )
        .unwrap();
        assert_eq!(v.total, MAX);
        assert_eq!(
            v.segs.iter().map(|s| s.len).collect::<Vec<_>>(),
            [MAX - 10, 10, 0]
        );
        // One segment: shortened first, then access_ok on the shortened range.
        let v = check_iovecs(&arr(&[(TASK - MAX, u64::MAX >> 1)]), TASK, MAX).unwrap();
        assert_eq!(v.total, MAX);
    }

    #[test]
    fn negative_lengths_are_einval_bad_ranges_efault() {
        let neg = 1u64 << 63;
        assert_eq!(
            check_iovecs(&arr(&[(0x1000, neg)]), TASK, MAX),
            Err(Errno::EINVAL)
        );
        // EINVAL is found while copying, before any access_ok: a later negative length wins
        // over an earlier bad address.
        assert_eq!(
            check_iovecs(&arr(&[(TASK, 1), (0x1000, neg)]), TASK, MAX),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check_iovecs(&arr(&[(TASK, 1), (0x1000, 1)]), TASK, MAX),
            Err(Errno::EFAULT)
        );
        // Wrapping, and a zero length at a kernel address.
        assert_eq!(
            check_iovecs(&arr(&[(u64::MAX - 1, 4), (0, 0)]), TASK, MAX),
            Err(Errno::EFAULT)
        );
        assert_eq!(
            check_iovecs(&arr(&[(0, 0), (TASK + 0x1000, 0)]), TASK, MAX),
            Err(Errno::EFAULT)
        );
        // Before shortening, the whole requested range must be valid (several segments).
        assert_eq!(
            check_iovecs(&arr(&[(0x1000, 1), (TASK - 0x1000, MAX)]), TASK, MAX),
            Err(Errno::EFAULT)
        );
        assert_eq!(
            check_iovecs(&arr(&[(0, 0), (TASK - 8, 8)]), TASK, MAX).map(|v| v.total),
            Ok(8)
        );
    }

    #[test]
    fn max_rw_count_follows_the_page_size() {
        assert_eq!(max_rw_count() % um_mm::page_size(), 0);
        assert!(max_rw_count() <= i32::MAX as u64);
        assert!(max_rw_count() > i32::MAX as u64 - um_mm::page_size());
    }
}
