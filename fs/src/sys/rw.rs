//! read, write and friends, lseek, getdents, getdents64, ioctl, sendfile (Linux fs/read_write.c,
//! fs/readdir.c, fs/ioctl.c).

use std::sync::Arc;
use um_kernel::syscall::{SyscallCtx, SyscallTable, lock_mm};
use um_kernel::task::lock;
use um_kernel::uaccess::{import_iovec, max_rw_count};
use um_kernel::vfs::{GuestMem, OpenFile, mode};
use um_kernel::wait::IoCtx;
use um_mm::Mm;
use um_uapi::abi::fcntl::{LinuxDirent, LinuxDirent64};
use um_uapi::abi::fs::{
    FS_APPEND_FL, FS_FL_USER_VISIBLE, FS_IMMUTABLE_FL, FS_IOC_FSGETXATTR, FS_IOC_GETFLAGS,
    FS_IOC_SETFLAGS, FS_IOC32_GETFLAGS, FS_IOC32_SETFLAGS, FsXattr, xflags_of,
};
use um_uapi::abi::pod::Pod;
use um_uapi::abi::uio::Iovec;
use um_uapi::{Errno, SysResult};

/// Bounce-buffer chunk for one transfer step.
const CHUNK: usize = 1 << 20;

fn file(c: &SyscallCtx<'_>, fd: u64) -> SysResult<Arc<OpenFile>> {
    lock(&c.task.process.files()).get(fd)
}

/// The I/O context of a call on `f` by the calling task.
pub fn io<'a>(c: &'a SyscallCtx<'_>, f: &OpenFile) -> IoCtx<'a> {
    IoCtx {
        task: c.task,
        nonblock: f.flags() & 0o4000 != 0,
        flags: f.flags(),
    }
}

fn readable(f: &OpenFile) -> SysResult<()> {
    if f.flags() & 3 == 1 {
        return Err(Errno::EBADF);
    }
    Ok(())
}

fn writable(f: &OpenFile) -> SysResult<()> {
    if f.flags() & 3 == 0 {
        Err(Errno::EBADF)
    } else {
        Ok(())
    }
}

/// Reads into guest memory at `buf`, at `pos` (or the file position when None).
fn read_into(
    c: &SyscallCtx<'_>,
    f: &OpenFile,
    buf: u64,
    len: u64,
    pos: Option<u64>,
) -> SysResult<u64> {
    readable(f)?;
    let len = len.min(max_rw_count()) as usize;
    let mut done = 0usize;
    let stream = f.ops.is_stream();
    let mut guard = if pos.is_none() && !stream {
        Some(lock(&f.pos))
    } else {
        None
    };
    let mut off = match (&guard, pos) {
        (Some(g), _) => **g,
        (None, Some(p)) => p,
        (None, None) => 0,
    };
    while done < len {
        let n = (len - done).min(CHUNK);
        let mut kbuf = vec![0u8; n];
        let r = match f.ops.read(&io(c, f), &mut kbuf, off) {
            Ok(r) => r,
            // read(2) on a directory is EISDIR (a directory's file has no read method).
            Err(Errno::EINVAL)
                if done == 0 && f.ops.stat().is_ok_and(|st| st.mode & 0o170000 == 0o040000) =>
            {
                return Err(Errno::EISDIR);
            }
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        if r == 0 {
            break;
        }
        c.write_bytes(buf + done as u64, &kbuf[..r])?;
        done += r;
        off += r as u64;
        // A stream returns what it has; one read is one transfer.
        if stream || r < n {
            break;
        }
    }
    if let Some(g) = guard.as_mut() {
        **g = off;
    }
    if done > 0 {
        crate::inotify::accessed(f);
    }
    Ok(done as u64)
}

/// `generic_write_check_limits` (mm/filemap.c): a write to a regular file stops at the soft
/// `RLIMIT_FSIZE`: at or past it the writer gets SIGXFSZ and `EFBIG`, before it the write is
/// cut short. Returns how many of `len` bytes at `off` may be written.
fn fsize_limit(c: &SyscallCtx<'_>, f: &OpenFile, off: u64, len: usize) -> SysResult<usize> {
    const RLIMIT_FSIZE: usize = 1;
    use um_uapi::abi::signal::SIGXFSZ;
    let limit = lock(&c.task.process.rlimits)[RLIMIT_FSIZE].0;
    if limit == u64::MAX || len == 0 || f.ops.stat()?.mode & mode::S_IFMT != mode::S_IFREG {
        return Ok(len);
    }
    if off >= limit {
        um_kernel::signal::send_to_task(
            c.task,
            um_uapi::abi::signal::Siginfo::kill(SIGXFSZ, 0x80 /* SI_KERNEL */, 0, 0),
        );
        return Err(Errno::EFBIG);
    }
    Ok(len.min((limit - off).min(usize::MAX as u64) as usize))
}

fn write_from(
    c: &SyscallCtx<'_>,
    f: &OpenFile,
    buf: u64,
    len: u64,
    pos: Option<u64>,
) -> SysResult<u64> {
    writable(f)?;
    let len = len.min(max_rw_count()) as usize;
    let stream = f.ops.is_stream();
    let append = f.flags() & 0o2000 != 0;
    let mut guard = if pos.is_none() && !stream {
        Some(lock(&f.pos))
    } else {
        None
    };
    let mut off = match (&guard, pos) {
        (Some(_), _) if append => f.ops.size()?,
        (Some(g), _) => **g,
        // pwrite(2) BUGS: with O_APPEND, pwrite appends whatever the offset says.
        (None, Some(_)) if append => f.ops.size()?,
        (None, Some(p)) => p,
        (None, None) => 0,
    };
    let len = if stream {
        len
    } else {
        fsize_limit(c, f, off, len)?
    };
    let mut done = 0usize;
    while done < len {
        let n = (len - done).min(CHUNK);
        let data = match c.read_bytes(buf + done as u64, n) {
            Ok(d) => d,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        let w = match f.ops.write(&io(c, f), &data, off) {
            Ok(w) => w,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        done += w;
        off += w as u64;
        if w < n {
            break;
        }
    }
    if let Some(g) = guard.as_mut() {
        **g = off;
    }
    if done > 0 {
        crate::inotify::modified(f);
    }
    Ok(done as u64)
}

pub(crate) fn read(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = file(c, a[0])?;
    read_into(c, &f, a[1], a[2], None)
}

pub(crate) fn write(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = file(c, a[0])?;
    write_from(c, &f, a[1], a[2], None)
}

pub(crate) fn pread64(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = file(c, a[0])?;
    if (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    if f.ops.is_stream() {
        return Err(Errno::ESPIPE);
    }
    read_into(c, &f, a[1], a[2], Some(a[3]))
}

pub(crate) fn pwrite64(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = file(c, a[0])?;
    if (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    if f.ops.is_stream() {
        return Err(Errno::ESPIPE);
    }
    write_from(c, &f, a[1], a[2], Some(a[3]))
}

pub(crate) fn readv(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = file(c, a[0])?;
    let mut total = 0;
    for Iovec { base, len } in import_iovec(c, a[1], a[2])?.segs {
        if len == 0 {
            continue;
        }
        let n = match read_into(c, &f, base, len, None) {
            Ok(n) => n,
            Err(e) if total == 0 => return Err(e),
            Err(_) => break,
        };
        total += n;
        if n < len {
            break;
        }
    }
    Ok(total)
}

pub(crate) fn writev(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = file(c, a[0])?;
    // Gather first so a stream sees one write (a terminal line stays whole).
    let mut data = Vec::new();
    for Iovec { base, len } in import_iovec(c, a[1], a[2])?.segs {
        if len == 0 {
            continue;
        }
        match c.read_bytes(base, len as usize) {
            Ok(d) => data.extend_from_slice(&d),
            Err(e) if data.is_empty() => return Err(e),
            Err(_) => break,
        }
    }
    writable(&f)?;
    if data.is_empty() {
        return Ok(0);
    }
    let stream = f.ops.is_stream();
    if stream {
        let n = f.ops.write(&io(c, &f), &data, 0)?;
        crate::inotify::modified(&f);
        return Ok(n as u64);
    }
    let mut pos = lock(&f.pos);
    let off = if f.flags() & 0o2000 != 0 {
        f.ops.size()?
    } else {
        *pos
    };
    let allowed = fsize_limit(c, &f, off, data.len())?;
    let n = f.ops.write(&io(c, &f), &data[..allowed], off)?;
    *pos = off + n as u64;
    drop(pos);
    crate::inotify::modified(&f);
    Ok(n as u64)
}

/// preadv/pwritev and the v2 variants (fs/read_write.c): vectored I/O at an offset; offset -1
/// in the v2 calls means the file position. RWF_* flags other than the hints are EOPNOTSUPP.
fn do_preadv(
    c: &mut SyscallCtx<'_>,
    fd: u64,
    iov: u64,
    n: u64,
    off: i64,
    flags: u64,
    write: bool,
) -> SysResult {
    // RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND: accepted as hints except
    // RWF_NOWAIT/APPEND, which change semantics.
    if flags & !0x1f != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let f = file(c, fd)?;
    // A positioned call on a stream is ESPIPE before anything else (fs/read_write.c
    // do_preadv: FMODE_PREAD is checked first).
    if off != -1 && f.ops.is_stream() {
        return Err(if off < 0 {
            Errno::EINVAL
        } else {
            Errno::ESPIPE
        });
    }
    if write {
        writable(&f)?
    } else {
        readable(&f)?
    }
    let vecs = import_iovec(c, iov, n)?.segs;
    if off == -1 {
        let mut total = 0;
        for &Iovec { base, len } in &vecs {
            if len == 0 {
                continue;
            }
            let r = if write {
                write_from(c, &f, base, len, None)
            } else {
                read_into(c, &f, base, len, None)
            };
            let got = match r {
                Ok(v) => v,
                Err(e) if total == 0 => return Err(e),
                Err(_) => break,
            };
            total += got;
            if got < len {
                break;
            }
        }
        return Ok(total);
    }
    if off < 0 {
        return Err(Errno::EINVAL);
    }
    if f.ops.is_stream() {
        return Err(Errno::ESPIPE);
    }
    let mut pos = off as u64;
    let mut total = 0;
    for Iovec { base, len } in vecs {
        if len == 0 {
            continue;
        }
        let r = if write {
            write_from(c, &f, base, len, Some(pos))
        } else {
            read_into(c, &f, base, len, Some(pos))
        };
        let got = match r {
            Ok(v) => v,
            Err(e) if total == 0 => return Err(e),
            Err(_) => break,
        };
        total += got;
        pos += got;
        if got < len {
            break;
        }
    }
    Ok(total)
}

pub(crate) fn preadv(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    // pos_l is the whole offset on 64-bit ABIs (pos_from_hilo shifts pos_h out entirely).
    let off = a[3] as i64;
    if off < 0 {
        return Err(Errno::EINVAL);
    }
    do_preadv(c, a[0], a[1], a[2], off, 0, false)
}

pub(crate) fn pwritev(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    // pos_l is the whole offset on 64-bit ABIs (pos_from_hilo shifts pos_h out entirely).
    let off = a[3] as i64;
    if off < 0 {
        return Err(Errno::EINVAL);
    }
    do_preadv(c, a[0], a[1], a[2], off, 0, true)
}

fn preadv2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_preadv(c, a[0], a[1], a[2], a[3] as i64, a[5], false)
}

fn pwritev2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_preadv(c, a[0], a[1], a[2], a[3] as i64, a[5], true)
}

fn lseek(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = file(c, a[0])?;
    if f.ops.is_stream() {
        return Err(Errno::ESPIPE);
    }
    let off = a[1] as i64;
    let mut pos = lock(&f.pos);
    let base: i64 = match a[2] {
        0 => 0,
        1 => *pos as i64,
        2 => f.ops.size()? as i64,
        // SEEK_DATA / SEEK_HOLE: the file's own answer (tmpfs knows its holes; others call
        // the whole file data).
        3 | 4 => {
            if off < 0 {
                return Err(Errno::ENXIO);
            }
            let r = f.ops.seek_data_hole(off as u64, a[2] == 3)?;
            *pos = r;
            return Ok(r);
        }
        _ => return Err(Errno::EINVAL),
    };
    let new = base.checked_add(off).ok_or(Errno::EOVERFLOW)?;
    if new < 0 {
        return Err(Errno::EINVAL);
    }
    *pos = new as u64;
    Ok(new as u64)
}

fn getdents64(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    getdents_with(c, a, LinuxDirent64::reclen, LinuxDirent64::encode)
}

/// getdents (fs/readdir.c, x86_64 only): the old `struct linux_dirent` records.
fn getdents(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    getdents_with(c, a, LinuxDirent::reclen, LinuxDirent::encode)
}

/// The directory listing of getdents and getdents64, with the record format's length and
/// encoder.
fn getdents_with(
    c: &mut SyscallCtx<'_>,
    a: [u64; 6],
    reclen: fn(usize) -> usize,
    encode: fn(&mut Vec<u8>, u64, i64, u8, &[u8]) -> usize,
) -> SysResult {
    let f = file(c, a[0])?;
    let count = a[2] as usize;
    let entries = f.ops.readdir()?;
    // fs/readdir.c iterate_dir: a directory that has been removed lists nothing (ENOENT).
    if let Some(d) = &f.dentry
        && d.inode.stat()?.nlink == 0
    {
        return Err(Errno::ENOENT);
    }
    let mut pos = lock(&f.pos);
    let mut out = Vec::new();
    let mut i = *pos as usize;
    while i < entries.len() {
        let e = &entries[i];
        let len = reclen(e.name.len());
        if out.len() + len > count {
            if out.is_empty() {
                return Err(Errno::EINVAL);
            }
            break;
        }
        encode(&mut out, e.ino, (i + 1) as i64, e.kind, &e.name);
        i += 1;
    }
    c.write_bytes(a[1], &out)?;
    *pos = i as u64;
    drop(pos);
    // iterate_dir: fsnotify_access.
    crate::inotify::accessed(&f);
    Ok(out.len() as u64)
}

/// Guest memory for a driver's ioctl: the address space is locked for each copy only, as
/// Linux's copy_from_user/copy_to_user take the mmap lock only to fault a page in. An ioctl
/// may sleep (seccomp's NOTIF_RECV until a notification comes, a tty drain): holding the mm
/// lock across that would stop every other thread of the address space at its next
/// `lock_mm` (the run loop takes it on each return to the guest), including the thread the
/// sleeper waits for. That is what hung guest/seccompn: RECV slept under the lock while the
/// worker thread it waited for could not get back to the guest to make its notified call.
struct MmAccess(Arc<std::sync::Mutex<Mm>>);

impl GuestMem for MmAccess {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> SysResult<()> {
        lock_mm(&self.0).read_bytes(addr, buf)
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> SysResult<()> {
        lock_mm(&self.0).write_bytes(addr, data)
    }
}

use um_uapi::abi::tty::FIOASYNC;
use um_uapi::abi::tty::FIOCLEX;
use um_uapi::abi::tty::FIONBIO;
use um_uapi::abi::tty::FIONCLEX;

fn ioctl(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let cmd = a[1] as u32;
    match cmd {
        FIOCLEX | FIONCLEX => {
            lock(&c.task.process.files()).entry_mut(a[0])?.cloexec = cmd == FIOCLEX;
            return Ok(0);
        }
        // Generic: set or clear O_NONBLOCK / O_ASYNC (fs/ioctl.c do_vfs_ioctl).
        FIONBIO | FIOASYNC => {
            let on = c.read_bytes(a[2], 4)?.iter().any(|&b| b != 0);
            let f = file(c, a[0])?;
            let bit = if cmd == FIONBIO { 0o4000 } else { 0o20000 };
            let old = f.flags();
            f.flags.store(
                if on { old | bit } else { old & !bit },
                std::sync::atomic::Ordering::Relaxed,
            );
            // ioctl_fioasync: arm or disarm signal-driven I/O (fasync.rs).
            if cmd == FIOASYNC && (old & bit != 0) != on {
                crate::fasync::init(c.kernel);
                crate::fasync::set_async(&f, a[0] as i32, on);
            }
            return Ok(0);
        }
        FS_IOC_GETFLAGS | FS_IOC32_GETFLAGS | FS_IOC_SETFLAGS | FS_IOC32_SETFLAGS
        | FS_IOC_FSGETXATTR => return fileattr_ioctl(c, a[0], cmd, a[2]),
        _ => {}
    }
    let f = file(c, a[0])?;
    // userfaultfd's ioctls act on the address space it serves, which may be the caller's own:
    // they lock it themselves (crate::userfaultfd).
    if let Some(u) = f
        .ops
        .as_any()
        .and_then(|x| x.downcast_ref::<crate::userfaultfd::UserfaultFile>())
    {
        return u.ioctl(c, cmd, a[2]);
    }
    let mut mem = MmAccess(c.mm());
    f.ops.ioctl(&io(c, &f), cmd, a[2], &mut mem)
}

/// The inode-flag ioctls (fs/ioctl.c `ioctl_getflags`, `ioctl_setflags`,
/// `ioctl_fsgetxattr`), answered for every file from its inode's flags; `ENOTTY` where the
/// file system keeps none. Setting them (`vfs_fileattr_set`) needs ownership or
/// CAP_FOWNER, a writable mount, and CAP_LINUX_IMMUTABLE to change append-only or
/// immutable; the kernel reads and writes an `int` whatever the number's size says.
fn fileattr_ioctl(c: &SyscallCtx<'_>, fd: u64, cmd: u32, arg: u64) -> SysResult {
    use um_uapi::abi::capability::CAP_LINUX_IMMUTABLE;
    let f = file(c, fd)?;
    let d = f.dentry.clone().ok_or(Errno::ENOTTY)?;
    let flags = d.inode.fsflags().ok_or(Errno::ENOTTY)?;
    match cmd {
        FS_IOC_GETFLAGS | FS_IOC32_GETFLAGS => {
            c.write_bytes(arg, &(flags & FS_FL_USER_VISIBLE).to_le_bytes())?;
        }
        FS_IOC_FSGETXATTR => {
            let x = FsXattr {
                fsx_xflags: xflags_of(flags),
                ..Default::default()
            };
            c.write_bytes(arg, &x.as_bytes())?;
        }
        _ => {
            let b = c.read_bytes(arg, 4)?;
            let new = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            if !super::open::owner_or_capable(c, &d.inode.stat()?) {
                return Err(Errno::EPERM);
            }
            crate::mount::check_writable(&d)?;
            if (new ^ flags) & (FS_APPEND_FL | FS_IMMUTABLE_FL) != 0
                && !c.task.process.capable(CAP_LINUX_IMMUTABLE)
            {
                return Err(Errno::EPERM);
            }
            d.inode.set_fsflags(new)?;
        }
    }
    Ok(0)
}

fn sendfile(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (out_fd, in_fd, off_ptr, count) = (a[0], a[1], a[2], a[3].min(max_rw_count()));
    let fin = file(c, in_fd)?;
    let fout = file(c, out_fd)?;
    readable(&fin)?;
    writable(&fout)?;
    if fin.ops.is_stream() && off_ptr != 0 {
        return Err(Errno::ESPIPE);
    }
    let mut off = if off_ptr != 0 {
        let o = c.read_u64(off_ptr)?;
        // fs/read_write.c do_sendfile -> rw_verify_area: a negative position is EINVAL.
        if (o as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        o
    } else {
        *lock(&fin.pos)
    };
    let mut done = 0u64;
    while done < count {
        let mut kbuf = vec![0u8; (count - done).min(CHUNK as u64) as usize];
        let r = fin.ops.read(&io(c, &fin), &mut kbuf, off)?;
        if r == 0 {
            break;
        }
        let w = if fout.ops.is_stream() {
            fout.ops.write(&io(c, &fout), &kbuf[..r], 0)?
        } else {
            let mut p = lock(&fout.pos);
            let w = fout.ops.write(&io(c, &fout), &kbuf[..r], *p)?;
            *p += w as u64;
            w
        };
        off += w as u64;
        done += w as u64;
        // A stream (tty, pipe) gives what it has: one read is one transfer, as in Linux's
        // splice path; looping on would wait for more input the caller never asked to wait for.
        if w < r || fin.ops.is_stream() {
            break;
        }
    }
    if off_ptr != 0 {
        c.write_u64(off_ptr, off)?;
    } else if !fin.ops.is_stream() {
        *lock(&fin.pos) = off;
    }
    if done > 0 {
        crate::inotify::accessed(&fin);
        crate::inotify::modified(&fout);
    }
    Ok(done)
}

/// fadvise64 (mm/fadvise.c): advice is accepted (there is no readahead to tune), after
/// Linux's checks.
fn fadvise64(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = file(c, a[0])?;
    if f.ops.is_stream() {
        return Err(Errno::ESPIPE);
    }
    // POSIX_FADV_NORMAL .. POSIX_FADV_NOREUSE (0..=5); len < 0 is EINVAL.
    if a[3] > 5 || (a[2] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

/// readahead(2) (mm/readahead.c `ksys_readahead`): `EBADF` for a descriptor that is not open,
/// is `O_PATH` or not open for reading; `EINVAL` for anything but a regular file or a block
/// device (nothing else has a page cache to fill), or a count that is negative as a
/// `loff_t` (`generic_fadvise`). There is no page cache to fill ahead (the host's caches the
/// file), so a valid call does nothing and returns 0, as Linux does once it queued the reads.
fn readahead(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    use um_kernel::vfs::mode::{S_IFBLK, S_IFMT, S_IFREG};
    let f = lock(&c.task.process.files()).get_nopath(a[0])?;
    readable(&f)?;
    let fmt = f.ops.stat()?.mode & S_IFMT;
    if (fmt != S_IFREG && fmt != S_IFBLK) || (a[2] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("read", read);
    t.register("write", write);
    t.register("pread64", pread64);
    t.register("pwrite64", pwrite64);
    t.register("readv", readv);
    t.register("writev", writev);
    t.register("lseek", lseek);
    t.register("preadv", preadv);
    t.register("pwritev", pwritev);
    t.register("preadv2", preadv2);
    t.register("pwritev2", pwritev2);
    t.register("getdents64", getdents64);
    // x86_64 only: arm64 has no getdents (the name is not in its table).
    t.register("getdents", getdents);
    t.register("ioctl", ioctl);
    t.register("sendfile", sendfile);
    t.register("fadvise64", fadvise64);
    t.register("readahead", readahead);
}
