//! epoll instances (Linux `fs/eventpoll.c`).
//!
//! An [`Epoll`] is the `FileOps` of an epoll descriptor: a set of watched (fd, open file)
//! items. Readiness is found by polling the watched files ([`FileOps::poll`]), never by
//! callbacks: `epoll_wait` polls every item with a [`PollTable`] around the caller's waker (so
//! any change on a watched file wakes it), reports what is ready, and otherwise sleeps.
//! Edge-triggered items also register their own [`Waker`]: "this item's queue was woken since
//! it was last reported" is the edge, together with readiness bits that were not there
//! before. `EPOLLONESHOT` disarms an item after one report until `EPOLL_CTL_MOD`. Items hold
//! their file weakly: once the last descriptor of a file is closed, its item disappears, as
//! `eventpoll_release` does. An epoll descriptor is itself pollable (readable when an item
//! is ready), so epoll sets nest; `epoll_ctl` refuses loops and nesting deeper than
//! `EP_MAX_NESTS` with `ELOOP`.
//!
//! The syscalls are in `sys/epoll.rs`.

use crate::pipe::{anon_kstat, next_ino};
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;
use um_kernel::task::{Task, lock};
use um_kernel::vfs::{FileOps, Kstat, OpenFile, mode};
use um_kernel::wait::{PollTable, WaitQueue, Waker};
use um_uapi::abi::poll::*;
use um_uapi::{Errno, SysResult};

/// Bits of an item's event mask that are options, not events (`EP_PRIVATE_BITS`).
const PRIVATE: u32 = EPOLLWAKEUP | EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE;
/// Bits allowed together with `EPOLLEXCLUSIVE` (`EPOLLEXCLUSIVE_OK_BITS`).
const EXCLUSIVE_OK: u32 = EPOLLIN
    | EPOLLOUT
    | EPOLLRDNORM
    | EPOLLRDBAND
    | EPOLLWRNORM
    | EPOLLWRBAND
    | EPOLLERR
    | EPOLLHUP
    | EPOLLWAKEUP
    | EPOLLET
    | EPOLLEXCLUSIVE;
/// Deepest nesting of epoll sets (`EP_MAX_NESTS`).
const EP_MAX_NESTS: usize = 4;

struct Item {
    file: Weak<OpenFile>,
    events: u32,
    data: u64,
    /// Registered on the file's queues (edge-triggered items).
    waker: Arc<Waker>,
    /// Readiness seen at the last look (edge-triggered items).
    last: u32,
    /// Added or modified and not reported since.
    fresh: bool,
    /// A one-shot item that fired.
    disabled: bool,
}

#[derive(Default)]
struct State {
    items: BTreeMap<(u32, usize), Item>,
    /// Where the next scan starts, so a full result does not starve later items.
    cursor: usize,
}

/// An epoll instance.
pub struct Epoll {
    st: Mutex<State>,
    /// Woken by `epoll_ctl`, so waiters look at new and changed items.
    ctl_wq: WaitQueue,
    ino: u64,
}

/// The `epoll_ctl` operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Add,
    Del,
    Mod,
}

impl Default for Epoll {
    fn default() -> Self {
        Self::new()
    }
}

impl Epoll {
    /// An empty instance.
    pub fn new() -> Epoll {
        Epoll {
            st: Mutex::new(State::default()),
            ctl_wq: WaitQueue::new(),
            ino: next_ino(),
        }
    }

    /// The epoll instance behind an open file, if it is one.
    pub fn of(f: &OpenFile) -> Option<&Epoll> {
        f.ops.as_any().and_then(|a| a.downcast_ref::<Epoll>())
    }

    /// kcmp(2)'s `KCMP_EPOLL_TFD` (fs/eventpoll.c `get_epoll_tfile_raw_ptr`, `ep_find_tfd`):
    /// the file of the `toff`-th item watched under descriptor number `tfd`, in the order of
    /// the items; `EINVAL` if `f` is not an epoll instance, `ENOENT` if there is no such item.
    pub fn target_file(f: &OpenFile, tfd: u32, toff: u32) -> SysResult<Arc<OpenFile>> {
        let ep = Epoll::of(f).ok_or(Errno::EINVAL)?;
        let st = lock(&ep.st);
        st.items
            .iter()
            .filter(|((fd, _), _)| *fd == tfd)
            .filter_map(|(_, it)| it.file.upgrade())
            .nth(toff as usize)
            .ok_or(Errno::ENOENT)
    }

    /// Whether `target` is reachable from this instance through nested epoll items, or the
    /// nesting below this instance is deeper than `depth` allows.
    fn reaches(&self, target: *const Epoll, depth: usize) -> bool {
        if std::ptr::eq(self, target) || depth == 0 {
            return true;
        }
        let files: Vec<Arc<OpenFile>> = lock(&self.st)
            .items
            .values()
            .filter_map(|i| i.file.upgrade())
            .collect();
        files
            .iter()
            .filter_map(|f| Epoll::of(f))
            .any(|e| e.reaches(target, depth - 1))
    }

    /// `epoll_ctl` on an already-checked target (`ep_insert`, `ep_modify`, `ep_remove`).
    pub fn ctl(
        &self,
        op: Op,
        fd: u32,
        file: &Arc<OpenFile>,
        events: u32,
        data: u64,
    ) -> SysResult<()> {
        // Linux checks, in do_epoll_ctl order.
        let target_epoll = Epoll::of(file);
        if op != Op::Del && events & EPOLLEXCLUSIVE != 0 {
            if op == Op::Mod {
                return Err(Errno::EINVAL);
            }
            if target_epoll.is_some() || events & !EXCLUSIVE_OK != 0 {
                return Err(Errno::EINVAL);
            }
        }
        if op == Op::Add
            && let Some(t) = target_epoll
            && t.reaches(self, EP_MAX_NESTS)
        {
            return Err(Errno::ELOOP);
        }
        let key = (fd, Arc::as_ptr(file) as usize);
        let mut st = lock(&self.st);
        st.items.retain(|_, i| i.file.strong_count() > 0);
        // EPOLLERR and EPOLLHUP are always reported; EPOLLWAKEUP needs CAP_BLOCK_SUSPEND and
        // means nothing here.
        let events = (events | EPOLLERR | EPOLLHUP) & !EPOLLWAKEUP;
        match op {
            Op::Add => {
                if st.items.contains_key(&key) {
                    return Err(Errno::EEXIST);
                }
                st.items.insert(
                    key,
                    Item {
                        file: Arc::downgrade(file),
                        events,
                        data,
                        waker: Arc::new(Waker::default()),
                        last: 0,
                        fresh: true,
                        disabled: false,
                    },
                );
            }
            Op::Mod => {
                let it = st.items.get_mut(&key).ok_or(Errno::ENOENT)?;
                if it.events & EPOLLEXCLUSIVE != 0 {
                    return Err(Errno::EINVAL);
                }
                it.events = events;
                it.data = data;
                it.fresh = true;
                it.last = 0;
                it.disabled = false;
            }
            Op::Del => {
                st.items.remove(&key).ok_or(Errno::ENOENT)?;
            }
        }
        drop(st);
        self.ctl_wq.wake_all();
        Ok(())
    }

    /// Looks at every item: returns up to `max` (events, data) pairs that are ready. With
    /// `consume`, edge-triggered and one-shot state advances (epoll_wait); without, this only
    /// tests (polling the epoll descriptor). `pt` is registered on every watched file.
    fn scan(&self, pt: Option<&PollTable<'_>>, max: usize, consume: bool) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        let mut st = lock(&self.st);
        st.items.retain(|_, i| i.file.strong_count() > 0);
        let keys: Vec<(u32, usize)> = st.items.keys().copied().collect();
        if keys.is_empty() {
            return out;
        }
        let start = st.cursor % keys.len();
        for k in 0..keys.len() {
            if out.len() >= max {
                break;
            }
            let key = keys[(start + k) % keys.len()];
            let Some(it) = st.items.get_mut(&key) else {
                continue;
            };
            if it.disabled {
                continue;
            }
            let Some(f) = it.file.upgrade() else {
                continue;
            };
            let mask = it.events & !PRIVATE;
            let poll_bits = (mask & 0xffff) as u16;
            let et = it.events & EPOLLET != 0;
            // EPOLLEXCLUSIVE: the task waits on the file as an exclusive waiter, so one event
            // wakes one of the epoll instances that wait for it (ep_ptable_queue_proc).
            let excl_pt = pt.map(PollTable::exclusive);
            let pt = if it.events & EPOLLEXCLUSIVE != 0 {
                excl_pt.as_ref()
            } else {
                pt
            };
            let ready = if et {
                let woken = it.waker.sleep(Some(Instant::now()));
                if consume {
                    it.waker.reset();
                }
                let r = u32::from(
                    f.ops
                        .poll(poll_bits, Some(&PollTable::with_waker(&it.waker))),
                ) & mask;
                if let Some(pt) = pt {
                    f.ops.poll(poll_bits, Some(pt));
                }
                let edge = it.fresh || woken || r & !it.last != 0;
                if consume {
                    it.last = r;
                }
                if edge { r } else { 0 }
            } else {
                u32::from(f.ops.poll(poll_bits, pt)) & mask
            };
            if ready != 0 {
                out.push((ready, it.data));
                if consume {
                    it.fresh = false;
                    if it.events & EPOLLONESHOT != 0 {
                        it.disabled = true;
                    }
                }
            }
        }
        if consume {
            st.cursor = start + out.len();
        }
        out
    }

    /// `ep_poll`: waits until events are ready (at most `max`), `deadline` passes (an empty
    /// result), or a signal is pending (`EINTR`: epoll_wait is never restarted).
    pub fn wait(
        &self,
        task: &Arc<Task>,
        max: usize,
        deadline: Option<Instant>,
    ) -> SysResult<Vec<(u32, u64)>> {
        loop {
            task.waker.reset();
            self.ctl_wq.add(&task.waker);
            let pt = PollTable::new(task);
            let ev = self.scan(Some(&pt), max, true);
            if !ev.is_empty() {
                return Ok(ev);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(ev);
            }
            if task.signal_pending() {
                return Err(Errno::EINTR);
            }
            task.waker.sleep(deadline);
        }
    }
}

impl FileOps for Epoll {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(anon_kstat(0o600, self.ino, 0x0d, 0, 0))
    }

    fn is_stream(&self) -> bool {
        true
    }

    /// `ep_eventpoll_poll`: readable when an item is ready.
    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        if let Some(pt) = pt {
            pt.wait_on(&self.ctl_wq);
        }
        if self.scan(pt, 1, false).is_empty() {
            0
        } else {
            (POLLIN | POLLRDNORM) & events
        }
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// Whether `f` can be watched: regular files and directories cannot (`file_can_poll` is
/// false for them), so `epoll_ctl` says `EPERM`.
pub fn pollable(f: &OpenFile) -> bool {
    if !f.ops.can_poll() {
        return false;
    }
    // Regular files of the disk-like file systems have no poll method (their FileOps say
    // so); a directory never has one.
    match f.ops.stat() {
        Ok(st) => st.mode & mode::S_IFMT != mode::S_IFDIR,
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipe::new_pipe;
    use um_kernel::arch::native::abi::EpollEvent;
    use um_uapi::abi::pod::Pod;

    #[test]
    fn epoll_event_layout() {
        let e = um_kernel::arch::epoll_event(EPOLLIN | EPOLLET, 0x1122_3344_5566_7788);
        let b = e.as_bytes();
        assert_eq!(b.len(), EpollEvent::SIZE);
        assert_eq!(&b[..4], &(EPOLLIN | EPOLLET).to_le_bytes());
        let off = EpollEvent::SIZE - 8;
        assert_eq!(&b[off..], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(EpollEvent::from_bytes(&b), Some(e));
    }

    #[test]
    fn level_edge_and_oneshot() {
        let (r, w) = new_pipe(0, 0, true);
        let rf = OpenFile::new(Box::new(r), 0, None);
        let wf = OpenFile::new(Box::new(w), 1, None);
        let ep = Epoll::new();
        ep.ctl(Op::Add, 3, &rf, EPOLLIN, 7).unwrap();
        assert_eq!(ep.ctl(Op::Add, 3, &rf, EPOLLIN, 7), Err(Errno::EEXIST));
        ep.ctl(Op::Add, 4, &wf, EPOLLOUT | EPOLLET, 8).unwrap();
        // Writable edge once, then quiet; the reader has nothing.
        assert_eq!(ep.scan(None, 10, true), vec![(EPOLLOUT, 8)]);
        assert_eq!(ep.scan(None, 10, true), vec![]);
        assert_eq!(ep.poll(POLLIN, None), 0);
        // Level-triggered: reported while data is there.
        let pipe_w = wf
            .ops
            .as_any()
            .unwrap()
            .downcast_ref::<crate::pipe::PipeEnd>()
            .unwrap();
        pipe_w.test_push(b"x");
        assert_eq!(ep.scan(None, 10, true), vec![(EPOLLIN, 7)]);
        assert_eq!(ep.scan(None, 10, true), vec![(EPOLLIN, 7)]);
        assert_eq!(ep.poll(POLLIN, None), POLLIN);
        // One-shot: once, until modified again.
        ep.ctl(Op::Mod, 3, &rf, EPOLLIN | EPOLLONESHOT, 9).unwrap();
        assert_eq!(ep.scan(None, 10, true), vec![(EPOLLIN, 9)]);
        assert_eq!(ep.scan(None, 10, true), vec![]);
        // Edge-triggered reader: once, then again only when more data arrives.
        ep.ctl(Op::Add, 6, &rf, EPOLLIN | EPOLLET, 10).unwrap();
        assert_eq!(ep.scan(None, 10, true), vec![(EPOLLIN, 10)]);
        assert_eq!(ep.scan(None, 10, true), vec![]);
        pipe_w.test_push(b"y");
        assert_eq!(ep.scan(None, 10, true), vec![(EPOLLIN, 10)]);
        assert_eq!(ep.scan(None, 10, true), vec![]);
        assert_eq!(ep.ctl(Op::Mod, 5, &rf, EPOLLIN, 9), Err(Errno::ENOENT));
        ep.ctl(Op::Del, 4, &wf, 0, 0).unwrap();
        assert_eq!(ep.ctl(Op::Del, 4, &wf, 0, 0), Err(Errno::ENOENT));
        // Closing the last reference drops the item.
        drop(rf);
        assert_eq!(ep.scan(None, 10, true), vec![]);
        assert!(lock(&ep.st).items.is_empty());
    }

    #[test]
    fn loops_are_refused() {
        let a = OpenFile::new(Box::new(Epoll::new()), 2, None);
        let b = OpenFile::new(Box::new(Epoll::new()), 2, None);
        let ea = Epoll::of(&a).unwrap();
        let eb = Epoll::of(&b).unwrap();
        ea.ctl(Op::Add, 1, &b, EPOLLIN, 0).unwrap();
        assert_eq!(eb.ctl(Op::Add, 2, &a, EPOLLIN, 0), Err(Errno::ELOOP));
        assert_eq!(
            ea.ctl(Op::Add, 3, &b, EPOLLIN | EPOLLEXCLUSIVE, 0),
            Err(Errno::EINVAL)
        );
    }
}
