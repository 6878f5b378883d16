//! Linux native AIO syscalls (fs/aio.c; io_setup(2), io_submit(2), io_getevents(2),
//! io_pgetevents, io_cancel(2), io_destroy(2)); the contexts are [`crate::aio`].
//!
//! Each iocb is checked as Linux checks it at submit (reserved field, sizes, the descriptor,
//! its access mode, `IOCB_FLAG_RESFD`'s eventfd, the opcode, `RWF_*` flags, fsync's zero
//! fields, an iovec array that cannot be read): a failure there is the call's answer if it is
//! the first iocb, else the count submitted before it. The I/O itself is done at submit, by
//! the same code as pread64/pwrite64/preadv/pwritev/fsync/fdatasync, and its result (a
//! count or `-errno`) is the event's `res`, as on Linux once the request completes. A poll
//! request completes at once if the file is ready, else when io_getevents finds it ready;
//! io_cancel cancels only those (`EINPROGRESS`, the event follows with `res` 0), and answers
//! `EINVAL` for any other iocb (it already completed). glibc has no wrappers: libaio and
//! programs use the raw calls.

use super::poll::{restore_sigmask, set_temp_sigmask};
use crate::aio::{self, Kioctx, PendingPoll};
use std::sync::Arc;
use std::time::{Duration, Instant};
use um_kernel::sysarg::args;
use um_kernel::syscall::{SyscallCtx, SyscallTable, lock_mm};
use um_kernel::task::lock;
use um_kernel::wait::PollTable;
use um_mm::{Backing, MapFlags, Prot};
use um_uapi::abi::Timespec;
use um_uapi::abi::fcntl::O_ACCMODE;
use um_uapi::abi::pod::Pod;
use um_uapi::abi::probe::{
    IOCB_CMD_FDSYNC, IOCB_CMD_FSYNC, IOCB_CMD_POLL, IOCB_CMD_PREAD, IOCB_CMD_PREADV,
    IOCB_CMD_PWRITE, IOCB_CMD_PWRITEV, IOCB_FLAG_RESFD, IoEvent, Iocb,
};
use um_uapi::{Errno, SysResult};

/// `sizeof(struct aio_ring)`: the ring header before the events.
const RING_HEADER: u64 = 32;
/// `sizeof(struct io_event)`.
const EVENT_SIZE: u64 = 32;
/// `EPOLLERR | EPOLLHUP`, always reported by a poll request.
const POLLERR_HUP: u16 = 0x8 | 0x10;
/// The `RWF_*` flags a read or write takes (`RWF_SUPPORTED` of the hints this kernel
/// accepts; the same set as preadv2).
const RWF_OK: u32 = 0x1f;

/// io_setup(2) (`ioctx_alloc`, `aio_setup_ring`): `EFAULT` for an unreadable `ctxp`, `EINVAL`
/// if `*ctxp` is not 0, `nr_events` is 0 or the ring would be too large, `EAGAIN` past
/// `aio-max-nr`; stores the new context's id.
fn io_setup(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (nr, ctxp): (u32, u64) = args(&a)?;
    let cur = c.read_u64(ctxp)?;
    if cur != 0 || nr == 0 {
        return Err(Errno::EINVAL);
    }
    // `nr_events = max(nr_events, num_possible_cpus() * 4) * 2`, then rounded up to whole
    // pages of the ring.
    let ncpu = um_kernel::cpus::online().max(1) as u64;
    let doubled = u64::from(nr).max(ncpu * 4) * 2;
    if doubled > 0x1000_0000 / EVENT_SIZE {
        return Err(Errno::EINVAL);
    }
    if u64::from(nr) > aio::max_nr() {
        return Err(Errno::EAGAIN);
    }
    let page = um_mm::page_size();
    let ring_len = (RING_HEADER + doubled * EVENT_SIZE).div_ceil(page) * page;
    let nr_events = (ring_len - RING_HEADER) / EVENT_SIZE;
    if !aio::charge(u64::from(nr)) {
        return Err(Errno::EAGAIN);
    }
    let mm = c.mm();
    let id = match lock_mm(&mm).mmap(
        0,
        ring_len,
        Prot::READ | Prot::WRITE,
        MapFlags::PRIVATE | MapFlags::ANONYMOUS,
        Backing::Anon,
    ) {
        Ok(id) => id,
        Err(e) => {
            aio::remove_charge(u64::from(nr));
            return Err(e);
        }
    };
    let k = Arc::new(Kioctx {
        id,
        mm: Arc::downgrade(&mm),
        max_reqs: u64::from(nr),
        nr_events,
        ring_len,
        st: Default::default(),
        wq: Default::default(),
    });
    aio::insert(k);
    if let Err(e) = c.write_u64(ctxp, id) {
        // `put_user` failed: the context goes again (io_setup's `kill_ioctx`).
        if let Some(k) = aio::remove(id) {
            let _ = lock_mm(&mm).munmap(id, k.ring_len);
        }
        return Err(e);
    }
    Ok(0)
}

fn ctx(c: &SyscallCtx<'_>, id: u64) -> SysResult<Arc<Kioctx>> {
    aio::lookup(id, &c.mm()).ok_or(Errno::EINVAL)
}

/// io_destroy(2): `EINVAL` for no such context; the pending polls are dropped, the ring
/// unmapped.
fn io_destroy(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let k = ctx(c, a[0])?;
    aio::remove(k.id);
    let _ = lock_mm(&c.mm()).munmap(k.id, k.ring_len);
    Ok(0)
}

/// A result as an event's `res`: a count, or `-errno` (a restart is `-EINTR`, `aio_rw_done`).
fn res_of(r: SysResult) -> i64 {
    match r {
        Ok(n) => n as i64,
        Err(e)
            if [
                Errno::ERESTARTSYS,
                Errno::ERESTARTNOINTR,
                Errno::ERESTARTNOHAND,
                Errno::ERESTART_RESTARTBLOCK,
            ]
            .contains(&e) =>
        {
            -i64::from(Errno::EINTR.get())
        }
        Err(e) => -i64::from(e.get()),
    }
}

/// `io_submit_one`: checks one iocb and does it; `Err` is the submit-time error.
fn submit_one(c: &mut SyscallCtx<'_>, k: &Kioctx, uiocb: u64) -> SysResult<()> {
    let cb = Iocb::from_bytes(&c.read_bytes(uiocb, Iocb::SIZE)?).ok_or(Errno::EFAULT)?;
    if cb.aio_reserved2 != 0 || (cb.aio_nbytes as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    {
        let st = lock(&k.st);
        if (st.done.len() + st.polls.len()) as u64 >= k.nr_events - 1 {
            return Err(Errno::EAGAIN);
        }
    }
    let fd = u64::from(cb.aio_fildes);
    let f = lock(&c.task.process.files()).get_nopath(fd)?;
    let resfd = if cb.aio_flags & IOCB_FLAG_RESFD != 0 {
        let e = lock(&c.task.process.files()).get(u64::from(cb.aio_resfd))?;
        crate::eventfd::EventFd::of(&e).ok_or(Errno::EINVAL)?;
        Some(e)
    } else {
        None
    };
    // `put_user(KIOCB_KEY, &user_iocb->aio_key)`.
    c.write_u32(uiocb + 8, 0)?;
    let acc = f.flags() & O_ACCMODE;
    let op = cb.aio_lio_opcode;
    let r = match op {
        IOCB_CMD_PREAD | IOCB_CMD_PREADV | IOCB_CMD_PWRITE | IOCB_CMD_PWRITEV => {
            let write = op == IOCB_CMD_PWRITE || op == IOCB_CMD_PWRITEV;
            if cb.aio_rw_flags & !RWF_OK != 0 {
                return Err(Errno::EOPNOTSUPP);
            }
            if (write && acc == 0) || (!write && acc == 1) {
                return Err(Errno::EBADF);
            }
            let vectored = op == IOCB_CMD_PREADV || op == IOCB_CMD_PWRITEV;
            if vectored {
                // `aio_setup_rw` imports the vector at submit.
                um_kernel::uaccess::import_iovec(c, cb.aio_buf, cb.aio_nbytes)?;
            }
            let stream = f.ops.is_stream();
            let args = [fd, cb.aio_buf, cb.aio_nbytes, cb.aio_offset as u64, 0, 0];
            use super::rw;
            match (write, vectored, stream) {
                (false, false, false) => rw::pread64(c, args),
                (true, false, false) => rw::pwrite64(c, args),
                (false, true, false) => rw::preadv(c, args),
                (true, true, false) => rw::pwritev(c, args),
                // A stream has no offset (`ki_pos` is ignored by its read_iter).
                (false, false, true) => rw::read(c, args),
                (true, false, true) => rw::write(c, args),
                (false, true, true) => rw::readv(c, args),
                (true, true, true) => rw::writev(c, args),
            }
        }
        IOCB_CMD_FSYNC | IOCB_CMD_FDSYNC => {
            if cb.aio_buf != 0 || cb.aio_offset != 0 || cb.aio_nbytes != 0 || cb.aio_rw_flags != 0 {
                return Err(Errno::EINVAL);
            }
            match super::namespace::do_fsync(c, fd, op == IOCB_CMD_FDSYNC) {
                // No fsync for this kind of file: refused at submit (`aio_fsync`).
                Err(e) if e == Errno::EINVAL => return Err(e),
                r => r,
            }
        }
        IOCB_CMD_POLL => {
            if cb.aio_buf as u16 as u64 != cb.aio_buf
                || cb.aio_offset != 0
                || cb.aio_nbytes != 0
                || cb.aio_rw_flags != 0
            {
                return Err(Errno::EINVAL);
            }
            let events = cb.aio_buf as u16 | POLLERR_HUP;
            let ready = f.ops.poll(events, None) & events;
            if ready == 0 {
                lock(&k.st).polls.push(PendingPoll {
                    file: f,
                    events,
                    data: cb.aio_data,
                    obj: uiocb,
                    resfd,
                });
                return Ok(());
            }
            Ok(u64::from(ready))
        }
        _ => return Err(Errno::EINVAL),
    };
    let ev = IoEvent {
        data: cb.aio_data,
        obj: uiocb,
        res: res_of(r),
        res2: 0,
    };
    aio::complete(k, ev, resfd.as_ref());
    Ok(())
}

/// io_submit(2): `EINVAL` for a negative count or no such context; at most the ring's size
/// of iocbs; the number submitted, or the first one's error.
fn io_submit(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (id, nr, list) = (a[0], a[1] as i64, a[2]);
    if nr < 0 {
        return Err(Errno::EINVAL);
    }
    let k = ctx(c, id)?;
    let nr = (nr as u64).min(k.nr_events);
    let mut i = 0;
    while i < nr {
        let r = c.read_u64(list + i * 8).and_then(|p| submit_one(c, &k, p));
        if let Err(e) = r {
            if i == 0 {
                return Err(e);
            }
            break;
        }
        i += 1;
    }
    Ok(i)
}

/// Completes the pending polls whose files are ready (`aio_poll_wake`), registering the
/// caller on the others' queues through `pt`.
fn check_polls(k: &Kioctx, pt: Option<&PollTable<'_>>) {
    let ready: Vec<(PendingPoll, u16)> = {
        let mut st = lock(&k.st);
        let mut out = Vec::new();
        let mut i = 0;
        while i < st.polls.len() {
            let p = &st.polls[i];
            // A completion after submit reports the file's whole readiness (the wakeup's
            // key in `aio_poll_wake`), once any of the asked-for events is in it.
            let m = p.file.ops.poll(u16::MAX, pt);
            if m & p.events != 0 {
                out.push((st.polls.remove(i), m));
            } else {
                i += 1;
            }
        }
        out
    };
    for (p, m) in ready {
        let ev = IoEvent {
            data: p.data,
            obj: p.obj,
            res: i64::from(m),
            res2: 0,
        };
        aio::complete(k, ev, p.resfd.as_ref());
    }
}

/// `read_events`: waits until `min_nr` events are there (or the deadline, a signal, the
/// context's end), then copies out up to `nr`.
fn read_events(
    c: &SyscallCtx<'_>,
    k: &Kioctx,
    min_nr: u64,
    nr: u64,
    events: u64,
    deadline: Option<Instant>,
) -> SysResult {
    loop {
        c.task.waker.reset();
        k.wq.add(&c.task.waker);
        check_polls(k, Some(&PollTable::new(c.task)));
        let (n, dead) = {
            let st = lock(&k.st);
            (st.done.len() as u64, st.dead)
        };
        let timed_out = deadline.is_some_and(|d| Instant::now() >= d);
        if n >= min_nr || dead || timed_out || c.task.signal_pending() {
            let take = n.min(nr) as usize;
            let evs: Vec<IoEvent> = lock(&k.st).done.iter().take(take).copied().collect();
            let bytes: Vec<u8> = evs.iter().flat_map(|e| e.as_bytes()).collect();
            if !bytes.is_empty() {
                c.write_bytes(events, &bytes)?;
                lock(&k.st).done.drain(..evs.len());
            }
            return Ok(evs.len() as u64);
        }
        c.task.waker.sleep(deadline);
    }
}

/// The relative timeout of io_getevents (`get_timespec64`, not range-checked: a negative
/// one does not wait).
fn timeout(c: &SyscallCtx<'_>, addr: u64) -> SysResult<Option<Instant>> {
    if addr == 0 {
        return Ok(None);
    }
    let ts = Timespec::from_bytes(&c.read_bytes(addr, Timespec::SIZE)?).ok_or(Errno::EFAULT)?;
    let ns = (ts.tv_sec as i128) * 1_000_000_000 + ts.tv_nsec as i128;
    let d = Duration::from_nanos(ns.clamp(0, u64::MAX as i128) as u64);
    Ok(Some(Instant::now().checked_add(d).unwrap_or_else(|| {
        Instant::now() + Duration::from_secs(1 << 32)
    })))
}

/// `do_io_getevents`: `EINVAL` for no such context or `min_nr` outside `0..=nr`.
fn getevents(c: &SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let dl = timeout(c, a[4])?;
    let k = ctx(c, a[0])?;
    let (min_nr, nr) = (a[1] as i64, a[2] as i64);
    if min_nr < 0 || min_nr > nr {
        return Err(Errno::EINVAL);
    }
    read_events(c, &k, min_nr as u64, nr as u64, a[3], dl)
}

/// io_getevents(2): the events, or `EINTR` if a signal came before any.
fn io_getevents(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let r = getevents(c, a)?;
    if r == 0 && c.task.signal_pending() {
        return Err(Errno::EINTR);
    }
    Ok(r)
}

/// io_pgetevents: io_getevents with a signal mask for the wait (`struct __aio_sigset`:
/// the mask's address and size); `ERESTARTNOHAND` if a signal came before any event.
fn io_pgetevents(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let old = if a[5] != 0 {
        let b = c.read_bytes(a[5], 16)?;
        let w = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
        set_temp_sigmask(c, w(0), w(8))?
    } else {
        None
    };
    let r = getevents(c, a);
    let interrupted = c.task.signal_pending();
    restore_sigmask(c, old, interrupted);
    match r {
        Ok(0) if interrupted => Err(Errno::ERESTARTNOHAND),
        r => r,
    }
}

/// io_cancel(2): `EFAULT`/`EINVAL` for an unreadable iocb or one whose key is not
/// `KIOCB_KEY`, `EINVAL` for no such context or no such pending request; a pending poll is
/// cancelled (`EINPROGRESS`; its event follows with `res` 0).
fn io_cancel(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (id, uiocb): (u64, u64) = args(&a)?;
    let key = u32::from_le_bytes(
        c.read_bytes(uiocb + 8, 4)?
            .try_into()
            .map_err(|_| Errno::EFAULT)?,
    );
    if key != 0 {
        return Err(Errno::EINVAL);
    }
    let k = ctx(c, id)?;
    let p = {
        let mut st = lock(&k.st);
        let i = st
            .polls
            .iter()
            .position(|p| p.obj == uiocb)
            .ok_or(Errno::EINVAL)?;
        st.polls.remove(i)
    };
    let ev = IoEvent {
        data: p.data,
        obj: p.obj,
        res: 0,
        res2: 0,
    };
    aio::complete(&k, ev, p.resfd.as_ref());
    Err(Errno::EINPROGRESS)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("io_setup", io_setup);
    t.register("io_destroy", io_destroy);
    t.register("io_submit", io_submit)
        .partial("I/O is done synchronously at submit (a read from an empty pipe blocks io_submit); only IOCB_CMD_POLL completes later");
    t.register("io_getevents", io_getevents);
    t.register("io_pgetevents", io_pgetevents);
    t.register("io_cancel", io_cancel);
}
