//! The POSIX message queue syscalls (Linux ipc/mqueue.c; mq_open(2), mq_unlink(2),
//! mq_send(3), mq_receive(3), mq_notify(2), mq_getsetattr(2)); the queues are
//! [`crate::mqueue`].
//!
//! Descriptors are close-on-exec (`get_unused_fd_flags(O_CLOEXEC)` in `do_mq_open`) and keep
//! the open flags' access mode and `O_NONBLOCK`. Timeouts are absolute CLOCK_REALTIME times;
//! a signal is `ERESTARTSYS` (restarted under SA_RESTART, signal(7)). mq_notify takes
//! `SIGEV_NONE` and `SIGEV_SIGNAL`; `SIGEV_THREAD`, which glibc builds on a netlink socket
//! the kernel writes a cookie to, is `ENOSYS` (musl's mq_notify uses it too, so both fail
//! cleanly). A registration ends with its delivery, `mq_notify(fd, NULL)` or the owner's
//! exit; Linux also drops it when the owner closes any descriptor of the queue.

use crate::mqueue::{self, Creator, MqFile, Notify, check_attr, check_name, permitted};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use um_kernel::sysarg::args;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::OpenFile;
use um_kernel::wait::{WaitError, wait_event};
use um_uapi::abi::Timespec;
use um_uapi::abi::fcntl::{O_ACCMODE, O_CREAT, O_EXCL, O_NONBLOCK, O_RDONLY, O_WRONLY};
use um_uapi::abi::pod::Pod;
use um_uapi::abi::probe::{MQ_PRIO_MAX, MqAttr};
use um_uapi::abi::resource::RLIMIT_MSGQUEUE;
use um_uapi::abi::signal::{
    SI_MESGQ, SIGEV_NONE, SIGEV_SIGNAL, SIGEV_THREAD, SIGEVENT_SIZE, Siginfo,
};
use um_uapi::{Errno, SysResult};

/// `prepare_timeout`: the absolute deadline, `EFAULT` or `EINVAL` for a bad timespec.
fn deadline(c: &SyscallCtx<'_>, addr: u64) -> SysResult<Option<std::time::Instant>> {
    if addr == 0 {
        return Ok(None);
    }
    let ts = Timespec::from_bytes(&c.read_bytes(addr, Timespec::SIZE)?).ok_or(Errno::EFAULT)?;
    if !ts.is_valid() {
        return Err(Errno::EINVAL);
    }
    Ok(Some(um_kernel::sys::timer::abs_instant(
        0,
        ts,
        &c.task.process,
    )))
}

/// The queue behind `fd`: `EBADF` if it is not open or not a queue.
fn queue_file(c: &SyscallCtx<'_>, fd: u64) -> SysResult<(Arc<OpenFile>, Arc<mqueue::Queue>)> {
    let f = lock(&c.task.process.files()).get_nopath(fd)?;
    let q = MqFile::of(&f).ok_or(Errno::EBADF)?.clone();
    Ok((f, q))
}

/// mq_open(2) (`do_mq_open`, `prepare_open`).
fn mq_open(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (uname, oflag, perm, uattr): (u64, u32, u32, u64) = args(&a)?;
    let attr = if uattr != 0 {
        Some(MqAttr::from_bytes(&c.read_bytes(uattr, MqAttr::SIZE)?).ok_or(Errno::EFAULT)?)
    } else {
        None
    };
    let name = c.read_path(uname)?;
    check_name(&name)?;
    let ns = mqueue::ns();
    let p = c.task.process.clone();
    let existing = lock(&ns.names).get(&name).cloned();
    let q = match existing {
        None => {
            if oflag & O_CREAT == 0 {
                return Err(Errno::ENOENT);
            }
            let cap_res = p.capable(um_uapi::abi::capability::CAP_SYS_RESOURCE);
            let attr = check_attr(attr.as_ref(), cap_res)?;
            let cr = *lock(&p.creds);
            let umask = lock(&p.fs).umask;
            let who = Creator {
                uid: cr.uid,
                euid: cr.euid,
                egid: cr.egid,
                cap_sys_resource: cap_res,
                rlimit_msgqueue: lock(&p.rlimits)[RLIMIT_MSGQUEUE as usize].0,
            };
            ns.create(&name, perm & !umask, attr, &who)?
        }
        Some(q) => {
            if oflag & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL {
                return Err(Errno::EEXIST);
            }
            let acc = oflag & O_ACCMODE;
            if acc == O_ACCMODE {
                return Err(Errno::EINVAL);
            }
            let want = match acc {
                O_RDONLY => 4,
                O_WRONLY => 2,
                _ => 6,
            };
            if !permitted(&p, &lock(&q.st), want) {
                return Err(Errno::EACCES);
            }
            q
        }
    };
    let flags = oflag & (O_ACCMODE | O_NONBLOCK);
    let file = OpenFile::new(Box::new(MqFile { queue: q }), flags, None);
    Ok(lock(&p.files()).install(file, true, 0)? as u64)
}

/// mq_unlink(2): `ENOENT` for no such queue; the sticky root lets only the queue's owner
/// (or CAP_FOWNER) remove it (`may_delete`), `EPERM` otherwise.
fn mq_unlink(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let name = c.read_path(a[0])?;
    check_name(&name)?;
    let ns = mqueue::ns();
    let mut names = lock(&ns.names);
    let q = names.get(&name).ok_or(Errno::ENOENT)?;
    let p = &c.task.process;
    let euid = lock(&p.creds).euid;
    if euid != 0 && euid != lock(&q.st).uid && !p.capable(um_uapi::abi::capability::CAP_FOWNER) {
        return Err(Errno::EPERM);
    }
    names.remove(&name);
    Ok(0)
}

/// mq_timedsend(2) (`do_mq_timedsend`): `EINVAL` for a priority of `MQ_PRIO_MAX` or more or a
/// bad timeout, `EBADF` unless open for writing, `EMSGSIZE` past `mq_msgsize`; a full queue
/// is `EAGAIN` when non-blocking, else waits (`ETIMEDOUT` at the deadline).
fn mq_timedsend(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd, ptr, len, prio): (u64, u64, u64, u32) = args(&a)?;
    if prio >= MQ_PRIO_MAX {
        return Err(Errno::EINVAL);
    }
    let dl = deadline(c, a[4])?;
    let (f, q) = queue_file(c, fd)?;
    if f.flags() & O_ACCMODE == O_RDONLY {
        return Err(Errno::EBADF);
    }
    if len > lock(&q.st).attr.mq_msgsize as u64 {
        return Err(Errno::EMSGSIZE);
    }
    let msg = c.read_bytes(ptr, len as usize)?;
    let mut msg = Some(msg);
    let mut first = true;
    let r = wait_event(c.task, &[&q.wq], dl, || {
        let mut st = lock(&q.st);
        if st.attr.mq_curmsgs < st.attr.mq_maxmsg {
            st.insert(prio, msg.take().unwrap_or_default());
            let t = um_os_linux::host::clock_gettime(libc::CLOCK_REALTIME).unwrap_or((0, 0));
            (st.atime, st.mtime, st.ctime) = (t, t, t);
            return Some(Ok(st.take_notify()));
        }
        // O_NONBLOCK is looked at before the first sleep only, as Linux does.
        if first && f.flags() & O_NONBLOCK != 0 {
            return Some(Err(Errno::EAGAIN));
        }
        first = false;
        None
    });
    let notify = match r {
        Ok(r) => r?,
        Err(WaitError::Interrupted) => return Err(Errno::ERESTARTSYS),
        Err(WaitError::TimedOut) => return Err(Errno::ETIMEDOUT),
    };
    q.wq.wake_all();
    if let Some(n) = notify {
        deliver(c, n);
    }
    Ok(0)
}

/// `__do_notify` for `SIGEV_SIGNAL`: `SI_MESGQ` with the sender's pid (as the owner sees
/// it) and real uid and the registered value.
fn deliver(c: &SyscallCtx<'_>, n: Notify) {
    if n.kind != SIGEV_SIGNAL || n.signo == 0 {
        return;
    }
    let Some(owner) = n.owner.upgrade() else {
        return;
    };
    let me = &c.task.process;
    let pid = um_kernel::pidns::tgid_seen_by(me, &owner) as i32;
    let uid = lock(&me.creds).uid;
    let info = Siginfo::rt(n.signo as u32, SI_MESGQ, pid, uid, n.value);
    um_kernel::signal::send_to_process(c.kernel, &owner, info);
}

/// mq_timedreceive(2) (`do_mq_timedreceive`): `EBADF` unless open for reading, `EMSGSIZE`
/// for a buffer smaller than `mq_msgsize`; the oldest message of the highest priority, its
/// length returned and its priority stored; an empty queue is `EAGAIN` when non-blocking,
/// else waits (`ETIMEDOUT`).
fn mq_timedreceive(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd, ptr, len, uprio): (u64, u64, u64, u64) = args(&a)?;
    let dl = deadline(c, a[4])?;
    let (f, q) = queue_file(c, fd)?;
    if f.flags() & O_ACCMODE == O_WRONLY {
        return Err(Errno::EBADF);
    }
    if len < lock(&q.st).attr.mq_msgsize as u64 {
        return Err(Errno::EMSGSIZE);
    }
    // Whether this receiver is counted in `receivers` (from its first sleep to its end).
    let mut waiting = false;
    let r = wait_event(c.task, &[&q.wq], dl, || {
        let mut st = lock(&q.st);
        if let Some(m) = st.take() {
            let t = um_os_linux::host::clock_gettime(libc::CLOCK_REALTIME).unwrap_or((0, 0));
            (st.atime, st.mtime, st.ctime) = (t, t, t);
            return Some(Ok(m));
        }
        // O_NONBLOCK is looked at before the first sleep only, as Linux does.
        if !waiting {
            if f.flags() & O_NONBLOCK != 0 {
                return Some(Err(Errno::EAGAIN));
            }
            waiting = true;
            st.receivers += 1;
        }
        None
    });
    if waiting {
        let mut st = lock(&q.st);
        st.receivers = st.receivers.saturating_sub(1);
    }
    let (prio, m) = match r {
        Ok(r) => r?,
        Err(WaitError::Interrupted) => return Err(Errno::ERESTARTSYS),
        Err(WaitError::TimedOut) => return Err(Errno::ETIMEDOUT),
    };
    // There is room now (`pipelined_receive` wakes a sender and pollers).
    q.wq.wake_all();
    if uprio != 0 {
        c.write_u32(uprio, prio)?;
    }
    c.write_bytes(ptr, &m)?;
    Ok(m.len() as u64)
}

/// mq_notify(2) (`do_mq_notify`): `EINVAL` for another notify kind or an invalid signal,
/// `EBADF` for a descriptor that is no queue, `EBUSY` if another process is registered; a
/// NULL `sevp` unregisters the caller's registration (and is ignored for anyone else's).
fn mq_notify(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let ev = if a[1] != 0 {
        let b = c.read_bytes(a[1], SIGEVENT_SIZE)?;
        let w32 = |o: usize| i32::from_le_bytes(b[o..o + 4].try_into().unwrap_or([0; 4]));
        let value = u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]));
        let (signo, kind) = (w32(8), w32(12));
        if kind != SIGEV_NONE && kind != SIGEV_SIGNAL && kind != SIGEV_THREAD {
            return Err(Errno::EINVAL);
        }
        if kind == SIGEV_SIGNAL && !(0..=64).contains(&signo) {
            return Err(Errno::EINVAL);
        }
        if kind == SIGEV_THREAD {
            return Err(Errno::ENOSYS);
        }
        Some((kind, signo, value))
    } else {
        None
    };
    let (_, q) = queue_file(c, a[0])?;
    let me = &c.task.process;
    let mut st = lock(&q.st);
    match ev {
        None => {
            let mine = st
                .notify
                .as_ref()
                .is_some_and(|n| std::ptr::eq(n.owner.as_ptr(), Arc::as_ptr(me)));
            if mine {
                st.notify = None;
            }
        }
        Some(_) if st.live_notify().is_some() => return Err(Errno::EBUSY),
        Some((kind, signo, value)) => {
            st.notify = Some(Notify {
                owner: Arc::downgrade(me),
                kind,
                signo,
                value,
            });
        }
    }
    Ok(0)
}

/// mq_getsetattr(2) (`do_mq_getsetattr`): `EINVAL` for flags other than `O_NONBLOCK`,
/// `EBADF` for no queue; the old attributes with the descriptor's `O_NONBLOCK`, then the new
/// flag on the descriptor.
fn mq_getsetattr(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let new = if a[1] != 0 {
        Some(MqAttr::from_bytes(&c.read_bytes(a[1], MqAttr::SIZE)?).ok_or(Errno::EFAULT)?)
    } else {
        None
    };
    if new.is_some_and(|n| n.mq_flags & !i64::from(O_NONBLOCK) != 0) {
        return Err(Errno::EINVAL);
    }
    let (f, q) = queue_file(c, a[0])?;
    let mut old = lock(&q.st).attr;
    old.mq_flags = i64::from(f.flags() & O_NONBLOCK);
    old.reserved = [0; 4];
    if let Some(n) = new {
        if n.mq_flags & i64::from(O_NONBLOCK) != 0 {
            f.flags.fetch_or(O_NONBLOCK, Ordering::Relaxed);
        } else {
            f.flags.fetch_and(!O_NONBLOCK, Ordering::Relaxed);
        }
    }
    if a[2] != 0 {
        c.write_bytes(a[2], &old.as_bytes())?;
    }
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("mq_open", mq_open);
    t.register("mq_unlink", mq_unlink);
    t.register("mq_timedsend", mq_timedsend);
    t.register("mq_timedreceive", mq_timedreceive);
    t.register("mq_notify", mq_notify).partial(
        "SIGEV_THREAD (glibc's netlink cookie) is ENOSYS; closing a descriptor does not drop the owner's registration, only its exit does",
    );
    t.register("mq_getsetattr", mq_getsetattr);
}
