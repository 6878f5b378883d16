//! Sleeping and waking (Linux `include/linux/wait.h`, `fs/select.c` poll tables).
//!
//! Each task has one [`Waker`]. A blocking kernel path registers that waker on the
//! [`WaitQueue`]s of everything it waits for, checks its condition, and sleeps; whoever changes
//! the state wakes the queue. Registering *before* checking means no wakeup is lost. A signal
//! for the task also wakes its waker, so every sleep can be interrupted ([`wait_event`] returns
//! [`WaitError::Interrupted`], which syscalls turn into `ERESTARTSYS`/`EINTR`).

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

/// A list of wakers to wake when something changes.
#[derive(Default)]
pub struct WaitQueue {
    waiters: Mutex<Vec<Weak<Waker>>>,
}

impl WaitQueue {
    /// An empty queue.
    pub const fn new() -> WaitQueue {
        WaitQueue {
            waiters: Mutex::new(Vec::new()),
        }
    }

    /// Registers a waker until the next [`WaitQueue::wake_all`].
    pub fn add(&self, w: &Arc<Waker>) {
        let mut v = lock(&self.waiters);
        v.retain(|x| x.strong_count() > 0 && !std::ptr::eq(x.as_ptr(), Arc::as_ptr(w)));
        v.push(Arc::downgrade(w));
    }

    /// Wakes every registered waker and empties the queue.
    pub fn wake_all(&self) {
        let v = std::mem::take(&mut *lock(&self.waiters));
        for w in v {
            if let Some(w) = w.upgrade() {
                w.wake();
            }
        }
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
}

impl<'a> PollTable<'a> {
    /// A poll table for `task`.
    pub fn new(task: &'a Task) -> PollTable<'a> {
        PollTable { waker: &task.waker }
    }

    /// A poll table around an arbitrary waker (epoll's own).
    pub fn with_waker(waker: &'a Arc<Waker>) -> PollTable<'a> {
        PollTable { waker }
    }

    /// Registers on `q` (Linux `poll_wait`).
    pub fn wait_on(&self, q: &WaitQueue) {
        q.add(self.waker);
    }
}

/// The context of a read, write or ioctl: who asks, and whether they may block.
pub struct IoCtx<'a> {
    pub task: &'a Arc<Task>,
    /// `O_NONBLOCK` on the open file.
    pub nonblock: bool,
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
