//! eventfd, eventfd2, timerfd_create, timerfd_settime, timerfd_gettime, signalfd, signalfd4
//! (Linux `fs/eventfd.c`, `fs/timerfd.c`, `fs/signalfd.c`). The files are
//! [`crate::eventfd`], [`crate::timerfd`] and [`crate::signalfd`].

use crate::eventfd::{EFD_SEMAPHORE, EventFd};
use crate::signalfd::SignalFd;
use crate::timerfd::TimerFd;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::{FileOps, OpenFile};
use um_uapi::abi::pod::Pod;
use um_uapi::abi::time::Itimerspec;
use um_uapi::{Errno, SysResult};

use um_uapi::abi::fcntl::O_CLOEXEC;
use um_uapi::abi::fcntl::O_NONBLOCK;

fn install(c: &SyscallCtx<'_>, ops: Box<dyn FileOps>, flags: u32) -> SysResult {
    let f = OpenFile::new(ops, 2 | (flags & O_NONBLOCK), None);
    Ok(lock(&c.task.process.files()).install(f, flags & O_CLOEXEC != 0, 0)? as u64)
}

fn eventfd2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let flags = a[1] as u32;
    if flags & !(O_CLOEXEC | O_NONBLOCK | EFD_SEMAPHORE) != 0 {
        return Err(Errno::EINVAL);
    }
    let e = EventFd::new(u64::from(a[0] as u32), flags & EFD_SEMAPHORE != 0);
    install(c, Box::new(e), flags)
}

fn eventfd(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    eventfd2(c, [a[0], 0, 0, 0, 0, 0])
}

fn timerfd_create(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let flags = a[1] as u32;
    if flags & !(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let t = TimerFd::new(a[0] as u32)?;
    install(c, Box::new(t), flags)
}

fn with_timer<T>(
    c: &SyscallCtx<'_>,
    fd: u64,
    f: impl FnOnce(&TimerFd) -> SysResult<T>,
) -> SysResult<T> {
    let file = lock(&c.task.process.files()).get(fd)?;
    let t = file
        .ops
        .as_any()
        .and_then(|a| a.downcast_ref::<TimerFd>())
        .ok_or(Errno::EINVAL)?;
    f(t)
}

fn timerfd_settime(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let new = Itimerspec::read_le(&c.read_bytes(a[2], Itimerspec::SIZE)?);
    let old = with_timer(c, a[0], |t| t.settime(a[1] as u32, &new))?;
    if a[3] != 0 {
        c.write_bytes(a[3], &old.as_bytes())?;
    }
    Ok(0)
}

fn timerfd_gettime(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let cur = with_timer(c, a[0], |t| Ok(t.gettime()))?;
    c.write_bytes(a[1], &cur.as_bytes())?;
    Ok(0)
}

fn signalfd4(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let flags = a[3] as u32;
    if flags & !(O_CLOEXEC | O_NONBLOCK) != 0 || a[2] != 8 {
        return Err(Errno::EINVAL);
    }
    let mask = c.read_u64(a[1])?;
    if a[0] as i32 == -1 {
        return install(c, Box::new(SignalFd::new(mask, c.task)), flags);
    }
    let file = lock(&c.task.process.files()).get(a[0])?;
    let s = file
        .ops
        .as_any()
        .and_then(|x| x.downcast_ref::<SignalFd>())
        .ok_or(Errno::EINVAL)?;
    s.set_mask(mask);
    Ok(a[0] & 0xffff_ffff)
}

fn signalfd(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    signalfd4(c, [a[0], a[1], a[2], 0, 0, 0])
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("eventfd", eventfd);
    t.register("eventfd2", eventfd2);
    t.register("timerfd_create", timerfd_create);
    t.register("timerfd_settime", timerfd_settime);
    t.register("timerfd_gettime", timerfd_gettime);
    t.register("signalfd", signalfd);
    t.register("signalfd4", signalfd4);
}
