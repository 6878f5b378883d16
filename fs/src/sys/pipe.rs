//! pipe and pipe2 (Linux `fs/pipe.c`: `do_pipe2`). The pipe itself is [`crate::pipe`].

use crate::pipe::new_pipe;
use um_kernel::sysarg::args;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::OpenFile;
use um_uapi::{Errno, SysResult};

use um_uapi::abi::fcntl::O_CLOEXEC;
use um_uapi::abi::fcntl::O_NONBLOCK;

/// Makes a pipe and installs its ends; returns the two descriptors.
pub fn make_pipe(c: &SyscallCtx<'_>, flags: u32) -> SysResult<(u32, u32)> {
    let direct = um_kernel::arch::native::abi::O_DIRECT;
    if flags & !(O_CLOEXEC | O_NONBLOCK | direct) != 0 {
        return Err(Errno::EINVAL);
    }
    let (uid, gid) = {
        let cr = lock(&c.task.process.creds);
        (cr.fsuid, cr.fsgid)
    };
    let privileged = c.task.process.capable(crate::pipe::CAP_SYS_RESOURCE);
    let (r, w) = new_pipe(uid, gid, privileged);
    // O_DIRECT (packet mode, Linux 3.4) stays in both ends' flags: the write end's makes
    // packets (F_SETFL may change it later).
    let keep = flags & (O_NONBLOCK | direct);
    let rf = OpenFile::new(Box::new(r), keep, None);
    let wf = OpenFile::new(Box::new(w), 1 | keep, None);
    let cloexec = flags & O_CLOEXEC != 0;
    let table = c.task.process.files();
    let mut files = lock(&table);
    let rfd = files.install(rf, cloexec, 0)?;
    let wfd = match files.install(wf, cloexec, 0) {
        Ok(fd) => fd,
        Err(e) => {
            let _ = files.remove(rfd as u64);
            return Err(e);
        }
    };
    Ok((rfd, wfd))
}

fn pipe2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fds, flags): (u64, u32) = args(&a)?;
    let (r, w) = make_pipe(c, flags)?;
    let mut b = Vec::with_capacity(8);
    b.extend_from_slice(&(r as i32).to_le_bytes());
    b.extend_from_slice(&(w as i32).to_le_bytes());
    if let Err(e) = c.write_bytes(fds, &b) {
        let table = c.task.process.files();
        let mut files = lock(&table);
        let _ = files.remove(r as u64);
        let _ = files.remove(w as u64);
        return Err(e);
    }
    Ok(0)
}

fn pipe(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fds,): (u64,) = args(&a)?;
    pipe2(c, [fds, 0, 0, 0, 0, 0])
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("pipe", pipe);
    t.register("pipe2", pipe2);
}
