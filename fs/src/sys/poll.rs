//! poll, ppoll, select, pselect6 (Linux `fs/select.c`).
//!
//! Every pass polls each file with a [`PollTable`] around the caller's waker, so each file
//! registers the task on the wait queues that change its readiness; with nothing ready the
//! task sleeps on its waker until one of them (or a signal, or the deadline) wakes it, then
//! polls again. A signal ends the wait with `ERESTARTNOHAND` (restarted if no handler runs,
//! `EINTR` after one). ppoll and pselect6 install their signal mask for the duration; when
//! interrupted, the old mask is kept in `saved_mask` so the handler runs with the temporary
//! one and sigreturn restores the original (`restore_saved_sigmask_unless`). Also here: the
//! sigmask helpers that `epoll_pwait` shares, and the `fd_set` codec.

use std::sync::Arc;
use std::time::{Duration, Instant};
use um_kernel::signal::UNBLOCKABLE;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::OpenFile;
use um_kernel::wait::PollTable;
use um_uapi::abi::pod::Pod;
use um_uapi::abi::poll::*;
use um_uapi::abi::time::{Timespec, Timeval};
use um_uapi::{Errno, SysResult};

/// Installs the temporary signal mask at guest `ptr` (`set_user_sigmask`): `sigsetsize`
/// must be 8. Returns the mask to restore, or None when `ptr` is NULL.
pub fn set_temp_sigmask(c: &SyscallCtx<'_>, ptr: u64, size: u64) -> SysResult<Option<u64>> {
    if ptr == 0 {
        return Ok(None);
    }
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    let m = c.read_u64(ptr)? & !UNBLOCKABLE;
    Ok(Some(std::mem::replace(&mut *lock(&c.task.sigmask), m)))
}

/// Undoes [`set_temp_sigmask`]: at once, or (`interrupted`) after the signal handler ran.
pub fn restore_sigmask(c: &SyscallCtx<'_>, old: Option<u64>, interrupted: bool) {
    if let Some(old) = old {
        if interrupted {
            *lock(&c.task.saved_mask) = Some(old);
        } else {
            *lock(&c.task.sigmask) = old;
        }
    }
}

/// Reads a `struct timespec` timeout (NULL: none); invalid values are `EINVAL`.
pub fn read_timespec(c: &SyscallCtx<'_>, ptr: u64) -> SysResult<Option<Duration>> {
    if ptr == 0 {
        return Ok(None);
    }
    let ts = Timespec::read_le(&c.read_bytes(ptr, Timespec::SIZE)?);
    let ns = ts.to_nanos().ok_or(Errno::EINVAL)?;
    Ok(Some(Duration::from_nanos(ns)))
}

fn deadline_of(t: Option<Duration>) -> Option<Instant> {
    t.map(|d| Instant::now().checked_add(d).unwrap_or_else(far_future))
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 86400)
}

fn remaining(deadline: Option<Instant>) -> Duration {
    deadline.map_or(Duration::ZERO, |d| {
        d.saturating_duration_since(Instant::now())
    })
}

/// One polled descriptor.
struct Entry {
    file: Option<Arc<OpenFile>>,
    events: u16,
}

/// Polls `entries` until one is ready, the deadline passes, or a signal comes. `f(i, revents)`
/// records each result and says whether it counts; returns the count.
fn poll_loop(
    c: &SyscallCtx<'_>,
    entries: &[Entry],
    deadline: Option<Instant>,
    mut record: impl FnMut(usize, u16) -> bool,
) -> SysResult<u64> {
    let task = c.task;
    loop {
        task.waker.reset();
        let pt = PollTable::new(task);
        let mut n = 0u64;
        for (i, e) in entries.iter().enumerate() {
            let rev = match &e.file {
                Some(f) => f.ops.poll(e.events, Some(&pt)) & e.events,
                None => POLLNVAL,
            };
            if record(i, rev) {
                n += 1;
            }
        }
        let expired = deadline.is_some_and(|d| Instant::now() >= d);
        if n > 0 || expired {
            return Ok(n);
        }
        if task.signal_pending() {
            return Err(Errno::ERESTARTNOHAND);
        }
        task.waker.sleep(deadline);
    }
}

fn do_poll(c: &SyscallCtx<'_>, fds: u64, nfds: u64, deadline: Option<Instant>) -> SysResult {
    if nfds > lock(&c.task.process.rlimits)[7].0.min(1 << 20) {
        return Err(Errno::EINVAL);
    }
    let buf = c.read_bytes(fds, nfds as usize * Pollfd::SIZE)?;
    let mut pfds: Vec<Pollfd> = buf
        .chunks_exact(Pollfd::SIZE)
        .map(Pollfd::read_le)
        .collect();
    let entries: Vec<Entry> = {
        let table = c.task.process.files();
        let files = lock(&table);
        pfds.iter()
            .map(|p| {
                if p.fd < 0 {
                    return Entry {
                        file: None,
                        events: 0,
                    };
                }
                Entry {
                    file: files.get(p.fd as u64).ok(),
                    // POLLERR and POLLHUP are always reported.
                    events: p.events as u16 | POLLERR | POLLHUP,
                }
            })
            .collect()
    };
    let n = poll_loop(c, &entries, deadline, |i, rev| {
        let rev = if pfds[i].fd < 0 { 0 } else { rev };
        pfds[i].revents = rev as i16;
        rev != 0
    })?;
    let mut out = Vec::with_capacity(buf.len());
    for p in &pfds {
        p.write_le(&mut out);
    }
    c.write_bytes(fds, &out)?;
    Ok(n)
}

fn poll(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let ms = a[2] as i32;
    let timeout = (ms >= 0).then(|| Duration::from_millis(ms as u64));
    do_poll(c, a[0], a[1], deadline_of(timeout))
}

/// Writes the time left back to a timespec (ppoll, pselect6: `poll_select_finish`).
fn write_back_timespec(c: &SyscallCtx<'_>, ptr: u64, deadline: Option<Instant>) -> SysResult<()> {
    if ptr == 0 {
        return Ok(());
    }
    let left = remaining(deadline);
    let ts = Timespec::from_nanos(left.as_nanos() as u64);
    c.write_bytes(ptr, &ts.as_bytes())
}

fn ppoll(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let deadline = deadline_of(read_timespec(c, a[2])?);
    let old = set_temp_sigmask(c, a[3], a[4])?;
    let r = do_poll(c, a[0], a[1], deadline);
    let interrupted = r == Err(Errno::ERESTARTNOHAND);
    restore_sigmask(c, old, interrupted);
    if a[2] != 0 && write_back_timespec(c, a[2], deadline).is_err() && interrupted {
        return Err(Errno::EINTR);
    }
    r
}

/// `POLLIN_SET`, `POLLOUT_SET`, `POLLEX_SET` (fs/select.c).
const POLLIN_SET: u16 = POLLRDNORM | POLLRDBAND | POLLIN | POLLHUP | POLLERR;
const POLLOUT_SET: u16 = POLLWRBAND | POLLWRNORM | POLLOUT | POLLERR;
const POLLEX_SET: u16 = POLLPRI;

/// An `fd_set` bitmap of `n` descriptors, as 64-bit little-endian words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FdSet {
    words: Vec<u64>,
}

impl FdSet {
    /// Bytes a set of `n` descriptors occupies in guest memory (whole `unsigned long`s).
    pub fn bytes_for(n: usize) -> usize {
        n.div_ceil(64) * 8
    }
    /// An empty set for `n` descriptors.
    pub fn empty(n: usize) -> FdSet {
        FdSet {
            words: vec![0; n.div_ceil(64)],
        }
    }
    /// Parses guest bytes.
    pub fn from_bytes(b: &[u8]) -> FdSet {
        FdSet {
            words: b
                .chunks(8)
                .map(|w| {
                    let mut a = [0u8; 8];
                    a[..w.len()].copy_from_slice(w);
                    u64::from_le_bytes(a)
                })
                .collect(),
        }
    }
    /// The guest bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
    /// Whether `fd` is in the set.
    pub fn contains(&self, fd: usize) -> bool {
        self.words
            .get(fd / 64)
            .is_some_and(|w| w & (1 << (fd % 64)) != 0)
    }
    /// Adds `fd`.
    pub fn insert(&mut self, fd: usize) {
        if let Some(w) = self.words.get_mut(fd / 64) {
            *w |= 1 << (fd % 64);
        }
    }
}

/// The common part of select and pselect6 (`core_sys_select`).
fn do_select(
    c: &SyscallCtx<'_>,
    n: u64,
    ptrs: [u64; 3],
    deadline: Option<Instant>,
) -> SysResult<u64> {
    let n = n as i32;
    if n < 0 {
        return Err(Errno::EINVAL);
    }
    let max = lock(&c.task.process.rlimits)[7].0.min(1 << 20) as usize;
    let n = (n as usize).min(max);
    let len = FdSet::bytes_for(n);
    let mut ins = [FdSet::empty(n), FdSet::empty(n), FdSet::empty(n)];
    for k in 0..3 {
        if ptrs[k] != 0 {
            ins[k] = FdSet::from_bytes(&c.read_bytes(ptrs[k], len)?);
        }
    }
    let mut fds = Vec::new();
    let mut entries = Vec::new();
    {
        let table = c.task.process.files();
        let files = lock(&table);
        for fd in 0..n {
            let (r, w, x) = (
                ins[0].contains(fd),
                ins[1].contains(fd),
                ins[2].contains(fd),
            );
            if !(r || w || x) {
                continue;
            }
            let f = files.get(fd as u64)?;
            let mut ev = 0;
            if r {
                ev |= POLLIN_SET;
            }
            if w {
                ev |= POLLOUT_SET;
            }
            if x {
                ev |= POLLEX_SET;
            }
            fds.push(fd);
            entries.push(Entry {
                file: Some(f),
                events: ev | POLLERR | POLLHUP,
            });
        }
    }
    let mut outs = [FdSet::empty(n), FdSet::empty(n), FdSet::empty(n)];
    let mut count = 0u64;
    poll_loop(c, &entries, deadline, |i, rev| {
        let fd = fds[i];
        let mut hit = false;
        for (k, set) in [POLLIN_SET, POLLOUT_SET, POLLEX_SET].iter().enumerate() {
            if ins[k].contains(fd) && rev & set != 0 {
                outs[k].insert(fd);
                count += 1;
                hit = true;
            }
        }
        hit
    })?;
    for k in 0..3 {
        if ptrs[k] != 0 {
            c.write_bytes(ptrs[k], &outs[k].to_bytes())?;
        }
    }
    Ok(count)
}

fn select(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let timeout = if a[4] == 0 {
        None
    } else {
        let tv = Timeval::read_le(&c.read_bytes(a[4], Timeval::SIZE)?);
        if tv.tv_sec < 0 || tv.tv_usec < 0 {
            return Err(Errno::EINVAL);
        }
        // poll_select_set_timeout: microseconds may exceed a second here.
        let ns = (tv.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add((tv.tv_usec as u64).saturating_mul(1000));
        Some(Duration::from_nanos(ns))
    };
    let deadline = deadline_of(timeout);
    let r = do_select(c, a[0], [a[1], a[2], a[3]], deadline);
    if a[4] != 0 {
        let left = remaining(deadline);
        let tv = Timeval::from_nanos(left.as_nanos() as u64);
        if c.write_bytes(a[4], &tv.as_bytes()).is_err() && r == Err(Errno::ERESTARTNOHAND) {
            return Err(Errno::EINTR);
        }
    }
    r
}

fn pselect6(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let deadline = deadline_of(read_timespec(c, a[4])?);
    // The sixth argument points at { const sigset_t *ss; size_t ss_len; }.
    let (mask_ptr, mask_len) = if a[5] != 0 {
        let b = c.read_bytes(a[5], 16)?;
        (u64::read_le(&b), u64::read_le(&b[8..]))
    } else {
        (0, 0)
    };
    let old = set_temp_sigmask(c, mask_ptr, mask_len)?;
    let r = do_select(c, a[0], [a[1], a[2], a[3]], deadline);
    let interrupted = r == Err(Errno::ERESTARTNOHAND);
    restore_sigmask(c, old, interrupted);
    if a[4] != 0 && write_back_timespec(c, a[4], deadline).is_err() && interrupted {
        return Err(Errno::EINTR);
    }
    r
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("poll", poll);
    t.register("ppoll", ppoll);
    t.register("select", select);
    t.register("pselect6", pselect6);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fd_set_codec() {
        assert_eq!(FdSet::bytes_for(0), 0);
        assert_eq!(FdSet::bytes_for(1), 8);
        assert_eq!(FdSet::bytes_for(65), 16);
        let mut s = FdSet::empty(70);
        s.insert(0);
        s.insert(3);
        s.insert(64);
        s.insert(200); // out of range: ignored
        let b = s.to_bytes();
        assert_eq!(b.len(), 16);
        assert_eq!(b[0], 0b1001);
        assert_eq!(b[8], 1);
        let t = FdSet::from_bytes(&b);
        assert_eq!(t, s);
        assert!(t.contains(3) && t.contains(64) && !t.contains(1) && !t.contains(200));
        // A short tail (not whole words) still parses.
        assert!(FdSet::from_bytes(&[0x04]).contains(2));
    }

    #[test]
    fn event_sets() {
        assert_ne!(POLLIN_SET & POLLHUP, 0);
        assert_eq!(POLLOUT_SET & POLLHUP, 0);
        assert_eq!(POLLEX_SET, POLLPRI);
    }
}
