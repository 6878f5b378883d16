//! splice, tee, vmsplice and copy_file_range (Linux fs/splice.c, fs/read_write.c).
//!
//! Data moves through a kernel buffer, never by sharing pages: `splice` between a pipe and
//! anything else reads on one side and writes on the other (the pipe side through the
//! helpers in [`crate::pipe`], which keep the pipe's bytes until the other side took them),
//! pipe to pipe moves bytes under both pipes' locks, `tee` copies them without consuming,
//! `vmsplice` is a gather write into a pipe (or a scatter read out of one), and
//! `copy_file_range` reads and writes at the two offsets (`do_splice_direct`).
//!
//! The checks and their order are Linux 6.1's (`SYSCALL_DEFINE6(splice)`, `__do_splice`,
//! `do_splice`, `do_tee`, `vmsplice_type`, `vfs_copy_file_range`,
//! `generic_copy_file_checks`, `generic_file_rw_checks`, `rw_verify_area`), so bad input
//! gives the same errno.

use crate::pipe::{PipeEnd, pipe_of};
use std::sync::Arc;
use um_kernel::sysarg::args;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::uaccess::{IoVecs, import_iovec, max_rw_count};
use um_kernel::vfs::{OpenFile, mode};
use um_kernel::wait::IoCtx;
use um_uapi::abi::uio::Iovec;
use um_uapi::{Errno, SysResult};

/// `SPLICE_F_MOVE`, `SPLICE_F_NONBLOCK`, `SPLICE_F_MORE`, `SPLICE_F_GIFT`.
const SPLICE_F_ALL: u64 = 0xf;
/// `SPLICE_F_NONBLOCK`.
const SPLICE_F_NONBLOCK: u64 = 2;
/// One bounce-buffer step.
const CHUNK: usize = 1 << 20;
use um_uapi::abi::fcntl::O_APPEND;
use um_uapi::abi::fcntl::O_NONBLOCK;
use um_uapi::abi::fcntl::O_PATH;

/// `fdget`: `EBADF` for a closed or `O_PATH` descriptor.
fn fdget(c: &SyscallCtx<'_>, fd: u64) -> SysResult<Arc<OpenFile>> {
    let f = lock(&c.task.process.files()).get(fd)?;
    if f.flags() & O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    Ok(f)
}

/// `FMODE_READ`.
fn can_read(f: &OpenFile) -> bool {
    matches!(f.flags() & 3, 0 | 2)
}

/// `FMODE_WRITE`.
fn can_write(f: &OpenFile) -> bool {
    matches!(f.flags() & 3, 1 | 2)
}

/// Whether the file has `f_op->splice_write` and `splice_read`: Linux's anonymous-inode files
/// (epoll, eventfd, timerfd, signalfd, inotify, pidfd, userfaultfd, fscontext, bpf) have neither, so splicing
/// into or out of one is `EINVAL` at once, before anything waits (`do_splice_from`,
/// `do_splice_read`).
fn can_splice(f: &OpenFile) -> bool {
    // Every anonymous-inode file (also fscontext, bpf-prog ...) lacks both.
    if f.ops.anon_name().is_some() {
        return false;
    }
    let Some(a) = f.ops.as_any() else {
        return true;
    };
    !(a.is::<crate::epoll::Epoll>()
        || a.is::<crate::eventfd::EventFd>()
        || a.is::<crate::timerfd::TimerFd>()
        || a.is::<crate::signalfd::SignalFd>()
        || a.is::<crate::inotify::InotifyFile>()
        || a.is::<crate::userfaultfd::UserfaultFile>()
        || a.is::<um_kernel::pidfd::PidFd>())
}

fn nonblock(f: &OpenFile) -> bool {
    f.flags() & O_NONBLOCK != 0
}

fn io<'a>(c: &'a SyscallCtx<'_>, nonblock: bool) -> IoCtx<'a> {
    // Splicing moves bytes, not packets: the files' own flags play no part.
    IoCtx {
        task: c.task,
        nonblock,
        flags: 0,
    }
}

/// A `loff_t __user *` argument.
fn read_off(c: &SyscallCtx<'_>, addr: u64) -> SysResult<Option<i64>> {
    if addr == 0 {
        return Ok(None);
    }
    Ok(Some(c.read_u64(addr)? as i64))
}

/// `rw_verify_area` for a transfer of `len` bytes at `pos` (files without
/// `FMODE_UNSIGNED_OFFSET`): `EINVAL` for a negative count, a negative position, or an end
/// past `LLONG_MAX`.
fn verify_area(pos: i64, len: u64) -> SysResult<()> {
    // Both below 2^63 once the first two checks pass, so the sum cannot wrap.
    if (len as i64) < 0 || pos < 0 || pos as u64 + len > i64::MAX as u64 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Where a non-pipe side of `splice` reads or writes: the given offset (only for files that
/// have positions: `FMODE_PREAD`/`FMODE_PWRITE`, else `EINVAL`), or the file position.
fn start_pos(f: &OpenFile, off: Option<i64>) -> SysResult<i64> {
    match off {
        Some(_) if f.ops.is_stream() => Err(Errno::EINVAL),
        Some(o) => Ok(o),
        None if f.ops.is_stream() => Ok(0),
        None => Ok(*lock(&f.pos) as i64),
    }
}

/// Stores the new position: through the user's pointer, or in the file.
fn end_pos(c: &SyscallCtx<'_>, f: &OpenFile, addr: u64, pos: i64) -> SysResult<()> {
    if addr != 0 {
        c.write_u64(addr, pos as u64)
    } else {
        if !f.ops.is_stream() {
            *lock(&f.pos) = pos as u64;
        }
        Ok(())
    }
}

fn splice(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd_in, off_in, fd_out, off_out, len, flags): (u64, u64, u64, u64, u64, u64) = args(&a)?;
    if len == 0 {
        return Ok(0);
    }
    if flags & !SPLICE_F_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    let fin = fdget(c, fd_in)?;
    let fout = fdget(c, fd_out)?;
    // __do_splice.
    let (ip, op) = (pipe_of(&fin), pipe_of(&fout));
    if ip.is_some() && off_in != 0 || op.is_some() && off_out != 0 {
        return Err(Errno::ESPIPE);
    }
    let o_out = read_off(c, off_out)?;
    let o_in = read_off(c, off_in)?;
    // do_splice.
    if !can_read(&fin) || !can_write(&fout) {
        return Err(Errno::EBADF);
    }
    let len = len.min(max_rw_count());
    let nb_flag = flags & SPLICE_F_NONBLOCK != 0;
    match (ip, op) {
        (Some(i), Some(o)) => {
            if i.same_pipe(o) {
                return Err(Errno::EINVAL);
            }
            let nb = nb_flag || nonblock(&fin) || nonblock(&fout);
            Ok(i.transfer(&io(c, nb), o, len as usize, true)? as u64)
        }
        (Some(i), None) => {
            let pos = start_pos(&fout, o_out)?;
            if fout.flags() & O_APPEND != 0 {
                return Err(Errno::EINVAL);
            }
            verify_area(pos, len)?;
            if !can_splice(&fout) {
                return Err(Errno::EINVAL);
            }
            let nb = nb_flag || nonblock(&fin);
            let out_io = io(c, nonblock(&fout));
            let stream = fout.ops.is_stream();
            let n = i.splice_out(&io(c, nb), len as usize, !stream, |data| {
                fout.ops.write(&out_io, data, pos as u64)
            })?;
            if n > 0 {
                crate::inotify::modified(&fout);
            }
            end_pos(c, &fout, off_out, pos + n as i64)?;
            Ok(n as u64)
        }
        (None, Some(o)) => {
            let pos = start_pos(&fin, o_in)?;
            verify_area(pos, len)?;
            if !can_splice(&fin) {
                return Err(Errno::EINVAL);
            }
            let nb = nb_flag || nonblock(&fout);
            let n = file_to_pipe(c, &fin, pos, o, &fout, len as usize, nb)?;
            end_pos(c, &fin, off_in, pos + n as i64)?;
            Ok(n as u64)
        }
        (None, None) => Err(Errno::EINVAL),
    }
}

/// `splice_file_to_pipe`: waits for room in the pipe, reads at most that much from `fin` at
/// `pos`, and queues it (the pipe write cannot come up short unless another writer raced in,
/// and then it waits, so nothing read is dropped).
fn file_to_pipe(
    c: &SyscallCtx<'_>,
    fin: &OpenFile,
    pos: i64,
    pipe: &PipeEnd,
    pipe_file: &OpenFile,
    len: usize,
    nb: bool,
) -> SysResult<usize> {
    let room = pipe.wait_room(&io(c, nb))?;
    let mut buf = vec![0u8; len.min(room).min(CHUNK)];
    let r = fin.ops.read(&io(c, nonblock(fin)), &mut buf, pos as u64)?;
    if r == 0 {
        return Ok(0);
    }
    pipe_file.ops.write(&io(c, false), &buf[..r], 0)
}

fn tee(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd_in, fd_out, len, flags): (u64, u64, u64, u64) = args(&a)?;
    if flags & !SPLICE_F_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    let fin = fdget(c, fd_in)?;
    let fout = fdget(c, fd_out)?;
    // do_tee.
    if !can_read(&fin) || !can_write(&fout) {
        return Err(Errno::EBADF);
    }
    match (pipe_of(&fin), pipe_of(&fout)) {
        (Some(i), Some(o)) if !i.same_pipe(o) => {
            let nb = flags & SPLICE_F_NONBLOCK != 0 || nonblock(&fin) || nonblock(&fout);
            let len = len.min(max_rw_count()) as usize;
            Ok(i.transfer(&io(c, nb), o, len, false)? as u64)
        }
        _ => Err(Errno::EINVAL),
    }
}

fn vmsplice(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd, iov, nr, flags): (u64, u64, u64, u64) = args(&a)?;
    if flags & !SPLICE_F_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    let f = lock(&c.task.process.files()).get(fd)?;
    // vmsplice_type: the write side if the file is writable, else the read side.
    let to_pipe = if can_write(&f) && f.flags() & O_PATH == 0 {
        true
    } else if can_read(&f) && f.flags() & O_PATH == 0 {
        false
    } else {
        return Err(Errno::EBADF);
    };
    let IoVecs { segs: vecs, total } = import_iovec(c, iov, nr)?;
    if total == 0 {
        return Ok(0);
    }
    let pipe = pipe_of(&f).ok_or(Errno::EBADF)?;
    let nb = flags & SPLICE_F_NONBLOCK != 0;
    if to_pipe {
        // vmsplice_to_pipe: wait for room once, then queue what fits.
        let room = pipe.wait_room(&io(c, nb))?;
        let mut data = Vec::new();
        for &Iovec { base, len } in &vecs {
            let want = (len as usize).min(room - data.len());
            if want == 0 {
                break;
            }
            match c.read_bytes(base, want) {
                Ok(d) => data.extend_from_slice(&d),
                Err(e) if data.is_empty() => return Err(e),
                Err(_) => break,
            }
        }
        Ok(f.ops.write(&io(c, false), &data, 0)? as u64)
    } else {
        // vmsplice_to_user: like readv, from what the pipe holds.
        let n = pipe.splice_out(&io(c, nb), total as usize, true, |data| {
            let mut done = 0usize;
            for &Iovec { base, len } in &vecs {
                if done == data.len() {
                    break;
                }
                let k = (len as usize).min(data.len() - done);
                match c.write_bytes(base, &data[done..done + k]) {
                    Ok(()) => done += k,
                    Err(e) if done == 0 => return Err(e),
                    Err(_) => break,
                }
            }
            Ok(done)
        })?;
        Ok(n as u64)
    }
}

/// The inode identity behind an open file: (file system, inode), for the same-file and
/// same-file-system checks of copy_file_range.
fn identity(f: &OpenFile) -> Option<(u64, u64)> {
    f.dentry.as_ref().map(|d| (d.inode.fs_id(), d.inode.id()))
}

/// `generic_copy_file_checks` (with `generic_file_rw_checks`) and the two `rw_verify_area`
/// calls of `vfs_copy_file_range`: returns the count, shortened to the end of the input.
fn copy_checks(
    fin: &OpenFile,
    pos_in: i64,
    fout: &OpenFile,
    pos_out: i64,
    len: u64,
) -> SysResult<u64> {
    let (sin, sout) = (fin.ops.stat()?, fout.ops.stat()?);
    let (tin, tout) = (sin.mode & mode::S_IFMT, sout.mode & mode::S_IFMT);
    if tin == mode::S_IFDIR || tout == mode::S_IFDIR {
        return Err(Errno::EISDIR);
    }
    if tin != mode::S_IFREG || tout != mode::S_IFREG {
        return Err(Errno::EINVAL);
    }
    if !can_read(fin) || !can_write(fout) || fout.flags() & O_APPEND != 0 {
        return Err(Errno::EBADF);
    }
    let (iin, iout) = (identity(fin), identity(fout));
    // Without a copy_file_range method, only within one file system (Linux 5.19+).
    if iin.map(|i| i.0) != iout.map(|i| i.0) {
        return Err(Errno::EXDEV);
    }
    // Offsets must not wrap (the sums are unsigned in Linux too).
    let (pin, pout) = (pos_in as u64, pos_out as u64);
    if pin.wrapping_add(len) < pin || pout.wrapping_add(len) < pout {
        return Err(Errno::EOVERFLOW);
    }
    let size_in = sin.size.max(0);
    let count = if pos_in >= size_in {
        0
    } else {
        len.min((size_in - pos_in) as u64)
    };
    if iin.is_some()
        && iin == iout
        && pout.wrapping_add(count) > pin
        && pout < pin.wrapping_add(count)
    {
        return Err(Errno::EINVAL);
    }
    verify_area(pos_in, count)?;
    verify_area(pos_out, count)?;
    Ok(count)
}

fn copy_file_range(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd_in, off_in, fd_out, off_out, len, flags): (u64, u64, u64, u64, u64, u64) = args(&a)?;
    let fin = fdget(c, fd_in)?;
    let fout = fdget(c, fd_out)?;
    let pos_in = match read_off(c, off_in)? {
        Some(p) => p,
        None => *lock(&fin.pos) as i64,
    };
    let pos_out = match read_off(c, off_out)? {
        Some(p) => p,
        None => *lock(&fout.pos) as i64,
    };
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let count = copy_checks(&fin, pos_in, &fout, pos_out, len)?.min(max_rw_count());
    let (in_io, out_io) = (io(c, nonblock(&fin)), io(c, nonblock(&fout)));
    let mut done = 0u64;
    let mut buf = vec![0u8; (count as usize).min(CHUNK)];
    while done < count {
        let want = ((count - done) as usize).min(CHUNK);
        let r = match fin.ops.read(&in_io, &mut buf[..want], pos_in as u64 + done) {
            Ok(r) => r,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        if r == 0 {
            break;
        }
        let w = match fout.ops.write(&out_io, &buf[..r], pos_out as u64 + done) {
            Ok(w) => w,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        done += w as u64;
        if w < r {
            break;
        }
    }
    if done > 0 {
        crate::inotify::accessed(&fin);
        crate::inotify::modified(&fout);
        end_pos(c, &fin, off_in, pos_in + done as i64)?;
        end_pos(c, &fout, off_out, pos_out + done as i64)?;
    }
    Ok(done)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("splice", splice);
    t.register("tee", tee);
    t.register("vmsplice", vmsplice);
    t.register("copy_file_range", copy_file_range);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_area_bounds() {
        assert_eq!(verify_area(0, 10), Ok(()));
        assert_eq!(verify_area(-1, 0), Err(Errno::EINVAL));
        assert_eq!(verify_area(i64::MAX, 0), Ok(()));
        assert_eq!(verify_area(i64::MAX, 1), Err(Errno::EINVAL));
        assert_eq!(verify_area(i64::MAX - 10, 10), Ok(()));
        assert_eq!(verify_area(i64::MAX - 10, 11), Err(Errno::EINVAL));
        assert_eq!(verify_area(0, u64::MAX), Err(Errno::EINVAL));
    }
}
