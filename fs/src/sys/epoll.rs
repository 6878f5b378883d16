//! epoll_create, epoll_create1, epoll_ctl, epoll_wait, epoll_pwait, epoll_pwait2 (Linux
//! `fs/eventpoll.c`). `struct epoll_event` is the native arch's
//! (`um_kernel::arch::native::abi::EpollEvent`: packed, 12 bytes, on x86_64). The instance is
//! [`crate::epoll::Epoll`].

use super::poll::{read_timespec, restore_sigmask, set_temp_sigmask};
use crate::epoll::{Epoll, Op, pollable};
use std::time::{Duration, Instant};
use um_kernel::arch::native::abi::EpollEvent;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::OpenFile;
use um_uapi::abi::pod::Pod;
use um_uapi::abi::poll::{EPOLL_CLOEXEC, EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD};
use um_uapi::{Errno, SysResult};

fn create(c: &SyscallCtx<'_>, flags: u32) -> SysResult {
    if flags & !EPOLL_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    let f = OpenFile::new(Box::new(Epoll::new()), 2, None);
    Ok(lock(&c.task.process.files()).install(f, flags & EPOLL_CLOEXEC != 0, 0)? as u64)
}

fn epoll_create(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[0] as i32 <= 0 {
        return Err(Errno::EINVAL);
    }
    create(c, 0)
}

fn epoll_create1(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    create(c, a[0] as u32)
}

fn epoll_ctl(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let op = match a[1] as u32 {
        EPOLL_CTL_ADD => Op::Add,
        EPOLL_CTL_DEL => Op::Del,
        EPOLL_CTL_MOD => Op::Mod,
        _ => return Err(Errno::EINVAL),
    };
    let ev = if op == Op::Del {
        EpollEvent::default()
    } else {
        EpollEvent::read_le(&c.read_bytes(a[3], EpollEvent::SIZE)?)
    };
    let (epf, tf) = {
        let table = c.task.process.files();
        let t = lock(&table);
        // fs/eventpoll.c do_epoll_ctl: fdget of both (an O_PATH descriptor is EBADF).
        (t.get_nopath(a[0])?, t.get_nopath(a[2])?)
    };
    if !pollable(&tf) {
        return Err(Errno::EPERM);
    }
    let ep = Epoll::of(&epf).ok_or(Errno::EINVAL)?;
    if std::ptr::eq(&*epf, &*tf) {
        return Err(Errno::EINVAL);
    }
    let (events, data) = (ev.events, ev.data);
    ep.ctl(op, a[2] as u32, &tf, events, data)?;
    Ok(0)
}

/// `EP_MAX_EVENTS`: `INT_MAX / sizeof(struct epoll_event)`.
const EP_MAX_EVENTS: u64 = i32::MAX as u64 / EpollEvent::SIZE as u64;

fn do_wait(c: &SyscallCtx<'_>, a: [u64; 6], timeout: Option<Duration>) -> SysResult {
    let max = a[2] as i32;
    if max <= 0 || max as u64 > EP_MAX_EVENTS {
        return Err(Errno::EINVAL);
    }
    let f = lock(&c.task.process.files()).get(a[0])?;
    let ep = Epoll::of(&f).ok_or(Errno::EINVAL)?;
    let deadline = timeout.map(|d| {
        Instant::now()
            .checked_add(d)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 32))
    });
    let evs = ep.wait(c.task, max as usize, deadline)?;
    let mut out = Vec::with_capacity(evs.len() * EpollEvent::SIZE);
    for (events, data) in &evs {
        um_kernel::arch::epoll_event(*events, *data).write_le(&mut out);
    }
    c.write_bytes(a[1], &out)?;
    Ok(evs.len() as u64)
}

fn ms_timeout(ms: u64) -> Option<Duration> {
    let ms = ms as i32;
    (ms >= 0).then(|| Duration::from_millis(ms as u64))
}

fn epoll_wait(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_wait(c, a, ms_timeout(a[3]))
}

fn pwait(c: &SyscallCtx<'_>, a: [u64; 6], timeout: Option<Duration>) -> SysResult {
    let old = set_temp_sigmask(c, a[4], a[5])?;
    let r = do_wait(c, a, timeout);
    restore_sigmask(c, old, r == Err(Errno::EINTR));
    r
}

fn epoll_pwait(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    pwait(c, a, ms_timeout(a[3]))
}

fn epoll_pwait2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let timeout = read_timespec(c, a[3])?;
    pwait(c, a, timeout)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    um_kernel::sys::kcmp::set_epoll_target_hook(Epoll::target_file);
    t.register("epoll_create", epoll_create);
    t.register("epoll_create1", epoll_create1);
    t.register("epoll_ctl", epoll_ctl);
    t.register("epoll_wait", epoll_wait);
    t.register("epoll_pwait", epoll_pwait);
    t.register("epoll_pwait2", epoll_pwait2);
}
