//! Sleeping and waking (Linux `include/linux/wait.h`, `fs/select.c` poll tables).
//!
//! Each task has one [`Waker`]. A blocking kernel path registers that waker on the
//! [`WaitQueue`]s of everything it waits for, checks its condition, and sleeps; whoever changes
//! the state wakes the queue. Registering *before* checking means no wakeup is lost. A signal
//! for the task also wakes its waker, so every sleep can be interrupted ([`wait_event`] returns
//! [`WaitError::Interrupted`], which syscalls turn into `ERESTARTSYS`/`EINTR`).
//!
//! A queue may also carry [`WakeHook`]s: persistent callbacks run after every wakeup, for as
//! long as their owner keeps them alive. Signal-driven I/O (`fs/src/fasync.rs`, Linux
//! `kill_fasync`) registers one through [`PollTable::for_hook`] on the queues a file's `poll`
//! names, so every place that wakes readers or writers also raises `SIGIO`, with no
//! per-file-type code. Hooks run with whatever locks the waker holds: they must only note the
//! event and defer real work.

use crate::task::{Task, lock};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Instant;
use um_uapi::{Errno, SysResult};

/// What a sleeping task is woken through.
#[derive(Default)]
pub struct Waker {
    woken: Mutex<bool>,
    cv: Condvar,
    /// Inside [`Waker::sleep`]: what `/proc/PID/stat` reports as `S`. A task that is serving a
    /// syscall but not blocked is running (`R`), as on Linux: LTP's `TST_PROCESS_STATE_WAIT`
    /// sends its signal once it sees `S`, and must not see it while the task is still on its
    /// way into the sleep it means.
    sleeping: AtomicBool,
}

impl Waker {
    /// Wakes the task if it sleeps, or makes its next sleep return at once.
    pub fn wake(&self) {
        *lock(&self.woken) = true;
        self.cv.notify_all();
    }

    /// Forgets earlier wakeups (done before registering and checking again).
    pub fn reset(&self) {
        *lock(&self.woken) = false;
    }

    /// Whether the task is blocked in [`Waker::sleep`] now.
    pub fn is_sleeping(&self) -> bool {
        self.sleeping.load(Ordering::Acquire)
    }

    /// Sleeps until woken or `deadline`; returns whether it was woken.
    pub fn sleep(&self, deadline: Option<Instant>) -> bool {
        let w = lock(&self.woken);
        if *w {
            return true;
        }
        self.sleeping.store(true, Ordering::Release);
        let woken = self.sleep_locked(w, deadline);
        self.sleeping.store(false, Ordering::Release);
        woken
    }

    fn sleep_locked(
        &self,
        mut w: std::sync::MutexGuard<'_, bool>,
        deadline: Option<Instant>,
    ) -> bool {
        while !*w {
            match deadline {
                None => w = self.cv.wait(w).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    w = self
                        .cv
                        .wait_timeout(w, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
        true
    }
}

/// A persistent callback on a [`WaitQueue`] (the part of Linux's `wait_queue_entry.func`
/// that fasync needs). Runs inside [`WaitQueue::wake_all`], possibly under the waker's locks:
/// it must not take locks of the object being woken.
pub trait WakeHook: Send + Sync {
    /// The queue was woken.
    fn woken(&self);
}

/// A list of wakers to wake when something changes.
#[derive(Default)]
pub struct WaitQueue {
    /// The registered wakers, and whether each waits exclusively.
    waiters: Mutex<Vec<(Weak<Waker>, bool)>>,
    /// Hooks run on every wakeup while they live (see [`WakeHook`]).
    hooks: Mutex<Vec<Weak<dyn WakeHook>>>,
    /// Whether `hooks` may be non-empty: `wake_all` skips the lock while it is not.
    has_hooks: AtomicBool,
}

impl WaitQueue {
    /// An empty queue.
    pub const fn new() -> WaitQueue {
        WaitQueue {
            waiters: Mutex::new(Vec::new()),
            hooks: Mutex::new(Vec::new()),
            has_hooks: AtomicBool::new(false),
        }
    }

    /// Registers `h` to run on every wakeup until it is dropped (once per hook).
    pub fn add_hook(&self, h: &Arc<dyn WakeHook>) {
        let mut v = lock(&self.hooks);
        v.retain(|x| x.strong_count() > 0);
        let w = Arc::downgrade(h);
        if !v.iter().any(|x| Weak::ptr_eq(x, &w)) {
            v.push(w);
        }
        self.has_hooks.store(true, Ordering::Release);
    }

    /// Runs the live hooks (outside the hook list's lock) and forgets dead ones.
    fn run_hooks(&self) {
        if !self.has_hooks.load(Ordering::Acquire) {
            return;
        }
        let live: Vec<Arc<dyn WakeHook>> = {
            let mut v = lock(&self.hooks);
            v.retain(|x| x.strong_count() > 0);
            if v.is_empty() {
                self.has_hooks.store(false, Ordering::Release);
            }
            v.iter().filter_map(Weak::upgrade).collect()
        };
        for h in live {
            h.woken();
        }
    }

    /// Registers a waker until the next [`WaitQueue::wake_all`].
    pub fn add(&self, w: &Arc<Waker>) {
        self.register(w, false);
    }

    /// Registers a waker as an exclusive waiter (Linux `add_wait_queue_exclusive`, what
    /// `EPOLLEXCLUSIVE` asks for): of the exclusive waiters asleep, a wakeup wakes only the
    /// first; the others stay registered for the next one.
    pub fn add_exclusive(&self, w: &Arc<Waker>) {
        self.register(w, true);
    }

    fn register(&self, w: &Arc<Waker>, exclusive: bool) {
        let mut v = lock(&self.waiters);
        v.retain(|(x, _)| x.strong_count() > 0 && !std::ptr::eq(x.as_ptr(), Arc::as_ptr(w)));
        v.push((Arc::downgrade(w), exclusive));
    }

    /// Wakes the registered wakers and forgets them (`__wake_up` with one exclusive waiter):
    /// every non-exclusive one, and of the exclusive ones the first that is asleep, plus any
    /// that is not asleep (on its way to sleep, or gone back to its work: a spurious wakeup is
    /// harmless, a lost one is not). The exclusive sleepers not woken stay registered.
    pub fn wake_all(&self) {
        let v = std::mem::take(&mut *lock(&self.waiters));
        let mut keep = Vec::new();
        let mut woke_exclusive = false;
        for (w, exclusive) in v {
            let Some(w) = w.upgrade() else { continue };
            if exclusive && w.is_sleeping() {
                if woke_exclusive {
                    keep.push((Arc::downgrade(&w), true));
                    continue;
                }
                woke_exclusive = true;
            }
            w.wake();
        }
        if !keep.is_empty() {
            let mut cur = lock(&self.waiters);
            // Ahead of what registered meanwhile, in their order (FIFO among exclusives).
            keep.append(&mut cur);
            *cur = keep;
        }
        self.run_hooks();
    }
}

/// Why a wait ended without its condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitError {
    /// A signal is pending for the task.
    Interrupted,
    /// The deadline passed.
    TimedOut,
}

/// Sleeps until `cond` gives a value, a signal is pending, or `deadline` passes.
pub fn wait_event<T>(
    task: &Task,
    queues: &[&WaitQueue],
    deadline: Option<Instant>,
    mut cond: impl FnMut() -> Option<T>,
) -> Result<T, WaitError> {
    loop {
        task.waker.reset();
        for q in queues {
            q.add(&task.waker);
        }
        if let Some(v) = cond() {
            return Ok(v);
        }
        if task.signal_pending() {
            return Err(WaitError::Interrupted);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(WaitError::TimedOut);
        }
        task.waker.sleep(deadline);
    }
}

/// Handed to `FileOps::poll`: the file registers the polling task on its queues.
pub struct PollTable<'a> {
    waker: &'a Arc<Waker>,
    exclusive: bool,
    /// Registers this persistent hook instead of the waker (fasync).
    hook: Option<&'a Arc<dyn WakeHook>>,
}

impl<'a> PollTable<'a> {
    /// A poll table for `task`.
    pub fn new(task: &'a Task) -> PollTable<'a> {
        PollTable {
            waker: &task.waker,
            exclusive: false,
            hook: None,
        }
    }

    /// A poll table around an arbitrary waker (epoll's own).
    pub fn with_waker(waker: &'a Arc<Waker>) -> PollTable<'a> {
        PollTable {
            waker,
            exclusive: false,
            hook: None,
        }
    }

    /// A poll table that registers `hook` persistently on every queue the file names
    /// (`waker` is not registered; it only fills the slot).
    pub fn for_hook(waker: &'a Arc<Waker>, hook: &'a Arc<dyn WakeHook>) -> PollTable<'a> {
        PollTable {
            waker,
            exclusive: false,
            hook: Some(hook),
        }
    }

    /// The same waker, registering as an exclusive waiter (`EPOLLEXCLUSIVE`).
    pub fn exclusive(&self) -> PollTable<'a> {
        PollTable {
            waker: self.waker,
            exclusive: true,
            hook: self.hook,
        }
    }

    /// Registers on `q` (Linux `poll_wait`).
    pub fn wait_on(&self, q: &WaitQueue) {
        if let Some(h) = self.hook {
            q.add_hook(h);
        } else if self.exclusive {
            q.add_exclusive(self.waker);
        } else {
            q.add(self.waker);
        }
    }
}

/// The context of a read, write or ioctl: who asks, and whether they may block.
pub struct IoCtx<'a> {
    pub task: &'a Arc<Task>,
    /// Whether this call must not block: `O_NONBLOCK` on the open file, or the call's own
    /// flag (`MSG_DONTWAIT`, `SPLICE_F_NONBLOCK`).
    pub nonblock: bool,
    /// The open file's status flags (`f_flags`) when the call is on a file (0 for the kernel's
    /// own I/O): what a file's operations consult at I/O time, as Linux's do (`O_DIRECT` makes
    /// a pipe write packets, `is_packetized`).
    pub flags: u32,
}

impl IoCtx<'_> {
    /// Blocks until `cond` gives a value: `EAGAIN` at once for non-blocking files,
    /// `ERESTARTSYS` when a signal arrives.
    pub fn wait<T>(
        &self,
        queues: &[&WaitQueue],
        mut cond: impl FnMut() -> Option<T>,
    ) -> SysResult<T> {
        if self.nonblock {
            return cond().ok_or(Errno::EAGAIN);
        }
        wait_event(self.task, queues, None, cond).map_err(|_| Errno::ERESTARTSYS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A hook runs on every wakeup while its owner keeps it, and is forgotten once dropped.
    #[test]
    fn hooks_run_while_alive() {
        use std::sync::atomic::AtomicUsize;
        struct Count(AtomicUsize);
        impl WakeHook for Count {
            fn woken(&self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let q = WaitQueue::new();
        let c = Arc::new(Count(AtomicUsize::new(0)));
        let h: Arc<dyn WakeHook> = c.clone();
        // Registered through a poll table, twice: still one hook.
        let w = Arc::new(Waker::default());
        PollTable::for_hook(&w, &h).wait_on(&q);
        PollTable::for_hook(&w, &h).wait_on(&q);
        q.wake_all();
        q.wake_all();
        assert_eq!(c.0.load(Ordering::Relaxed), 2);
        // The waker itself was not registered.
        assert!(lock(&q.waiters).is_empty());
        drop(h);
        drop(c);
        q.wake_all();
        assert!(!q.has_hooks.load(Ordering::Relaxed));
    }

    /// Two exclusive sleepers: each wakeup wakes one of them, first come first served; a
    /// waiter that is not asleep is always woken (no wakeup is lost to it).
    #[test]
    fn exclusive_waiters_are_woken_one_at_a_time() {
        let q = Arc::new(WaitQueue::new());
        let wakers: Vec<Arc<Waker>> = (0..2).map(|_| Arc::new(Waker::default())).collect();
        let mut threads = Vec::new();
        for w in &wakers {
            q.add_exclusive(w);
            let w = w.clone();
            threads.push(std::thread::spawn(move || {
                w.sleep(Some(Instant::now() + Duration::from_secs(10)))
            }));
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while !wakers.iter().all(|w| w.is_sleeping()) {
            assert!(Instant::now() < deadline, "the sleepers never slept");
            std::thread::sleep(Duration::from_millis(1));
        }
        q.wake_all();
        let first = threads.remove(0).join().expect("first sleeper");
        assert!(first, "the first exclusive waiter is woken");
        std::thread::sleep(Duration::from_millis(50));
        assert!(wakers[1].is_sleeping(), "the second stays asleep");
        q.wake_all();
        assert!(threads.remove(0).join().expect("second sleeper"));
        // A registered waker that is not asleep is woken too.
        let idle = Arc::new(Waker::default());
        q.add_exclusive(&idle);
        q.add(&wakers[0]);
        wakers[0].reset();
        q.wake_all();
        assert!(idle.sleep(Some(Instant::now())));
        assert!(wakers[0].sleep(Some(Instant::now())));
    }
}
