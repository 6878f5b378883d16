//! timerfd (Linux `fs/timerfd.c`): a timer whose expirations are read as a count.
//!
//! A [`TimerFd`] keeps its next expiry as a host `Instant` (absolute `CLOCK_REALTIME`,
//! `CLOCK_MONOTONIC` and `CLOCK_BOOTTIME` times are converted once, at `timerfd_settime`, the
//! caller's time-namespace offset taken off first, `um_kernel::timens`) and
//! counts expirations lazily: every look ([`TState::advance`]) adds the intervals that have
//! passed. A blocking read sleeps until the next expiry; for pollers, one shared "timerfd"
//! host thread wakes each timer's wait queue when it expires. The syscalls are in
//! `sys/eventfd.rs`.

use crate::pipe::{anon_kstat, next_ino};
use std::any::Any;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};
use um_kernel::task::lock;
use um_kernel::vfs::{FileOps, Kstat};
use um_kernel::wait::{IoCtx, PollTable, WaitError, WaitQueue, wait_event};
use um_uapi::abi::poll::{POLLIN, POLLRDNORM};
use um_uapi::abi::time::{Itimerspec, Timespec};
use um_uapi::{Errno, SysResult};

/// `TFD_TIMER_ABSTIME`.
pub const TFD_TIMER_ABSTIME: u32 = 1;
/// `TFD_TIMER_CANCEL_ON_SET` (accepted; clock changes are not tracked).
pub const TFD_TIMER_CANCEL_ON_SET: u32 = 2;

/// The host clock behind a timerfd clock id, or `EINVAL`.
pub fn host_clock(id: u32) -> SysResult<libc::clockid_t> {
    match id {
        0 => Ok(libc::CLOCK_REALTIME),
        1 => Ok(libc::CLOCK_MONOTONIC),
        7 => Ok(libc::CLOCK_BOOTTIME),
        8 => Ok(libc::CLOCK_REALTIME),
        9 => Ok(libc::CLOCK_BOOTTIME),
        _ => Err(Errno::EINVAL),
    }
}

/// Timer state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TState {
    /// Next expiry; None when disarmed.
    pub next: Option<Instant>,
    /// Period (zero: one-shot).
    pub interval: Duration,
    /// Expirations not yet read.
    pub ticks: u64,
    /// Bumped by every settime, so stale wakeups are ignored.
    pub generation: u64,
}

impl TState {
    /// Counts the expirations up to `now` (`hrtimer_forward_now`).
    pub fn advance(&mut self, now: Instant) {
        let Some(n) = self.next else { return };
        if now < n {
            return;
        }
        if self.interval.is_zero() {
            self.ticks += 1;
            self.next = None;
            return;
        }
        let iv = self.interval.as_nanos();
        let k = 1 + (now - n).as_nanos() / iv;
        self.ticks = self.ticks.saturating_add(k.min(u64::MAX as u128) as u64);
        let step = (iv * k).min(u64::MAX as u128) as u64;
        self.next = n.checked_add(Duration::from_nanos(step));
    }

    /// `timerfd_gettime`: (time to the next expiry, interval); zero when disarmed.
    pub fn current(&self, now: Instant) -> (Duration, Duration) {
        let left = self.next.map_or(Duration::ZERO, |n| {
            // An armed timer never reports zero left (Linux rounds up to 1ns).
            n.saturating_duration_since(now)
                .max(Duration::from_nanos(1))
        });
        (left, self.interval)
    }
}

struct Shared {
    st: Mutex<TState>,
    wq: WaitQueue,
}

/// A timerfd.
pub struct TimerFd {
    sh: Arc<Shared>,
    clock: libc::clockid_t,
    ino: u64,
}

fn ts(d: Duration) -> Timespec {
    Timespec::from_nanos(d.as_nanos().min(u64::MAX as u128) as u64)
}

fn dur(t: &Timespec) -> SysResult<Duration> {
    t.to_nanos().map(Duration::from_nanos).ok_or(Errno::EINVAL)
}

impl TimerFd {
    /// A disarmed timer on clock `id` (checked by [`host_clock`]).
    pub fn new(id: u32) -> SysResult<TimerFd> {
        Ok(TimerFd {
            sh: Arc::new(Shared {
                st: Mutex::new(TState::default()),
                wq: WaitQueue::new(),
            }),
            clock: host_clock(id)?,
            ino: next_ino(),
        })
    }

    /// `timerfd_settime`: arms (or with a zero value, disarms); returns the old setting.
    pub fn settime(&self, flags: u32, new: &Itimerspec) -> SysResult<Itimerspec> {
        if flags & !(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
            return Err(Errno::EINVAL);
        }
        let value = dur(&new.it_value)?;
        let interval = dur(&new.it_interval)?;
        let now = Instant::now();
        let next = if value.is_zero() {
            None
        } else if flags & TFD_TIMER_ABSTIME != 0 {
            let (s, ns) =
                um_os_linux::host::clock_gettime(self.clock).map_err(|_| Errno::EINVAL)?;
            let clock_now = Duration::new(s.max(0) as u64, ns.clamp(0, 999_999_999) as u32);
            // In the caller's time namespace the time is shifted back to the host clock
            // (fs/timerfd.c do_timerfd_settime: timens_ktime_to_host).
            let id = match self.clock {
                libc::CLOCK_MONOTONIC => um_kernel::timens::CLOCK_MONOTONIC,
                libc::CLOCK_BOOTTIME => um_kernel::timens::CLOCK_BOOTTIME,
                _ => 0,
            };
            let host = um_kernel::timens::current_offsets().to_host(id, value.as_nanos());
            let value = Duration::new(
                (host / 1_000_000_000).min(u128::from(u64::MAX)) as u64,
                (host % 1_000_000_000) as u32,
            );
            Some(now + value.saturating_sub(clock_now))
        } else {
            Some(now.checked_add(value).ok_or(Errno::EINVAL)?)
        };
        let (old, generation) = {
            let mut st = lock(&self.sh.st);
            st.advance(now);
            let (left, iv) = st.current(now);
            st.next = next;
            st.interval = interval;
            st.ticks = 0;
            st.generation += 1;
            (
                Itimerspec {
                    it_interval: ts(iv),
                    it_value: ts(left),
                },
                st.generation,
            )
        };
        if let Some(when) = next {
            schedule(when, Arc::downgrade(&self.sh), generation);
        }
        self.sh.wq.wake_all();
        Ok(old)
    }

    /// `timerfd_gettime`.
    pub fn gettime(&self) -> Itimerspec {
        let now = Instant::now();
        let mut st = lock(&self.sh.st);
        st.advance(now);
        let (left, iv) = st.current(now);
        Itimerspec {
            it_interval: ts(iv),
            it_value: ts(left),
        }
    }

    fn take_ticks(&self) -> Option<u64> {
        let mut st = lock(&self.sh.st);
        st.advance(Instant::now());
        (st.ticks > 0).then(|| std::mem::take(&mut st.ticks))
    }
}

impl FileOps for TimerFd {
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let n = loop {
            if io.nonblock {
                break self.take_ticks().ok_or(Errno::EAGAIN)?;
            }
            let deadline = lock(&self.sh.st).next;
            match wait_event(io.task, &[&self.sh.wq], deadline, || self.take_ticks()) {
                Ok(n) => break n,
                Err(WaitError::TimedOut) => continue,
                Err(WaitError::Interrupted) => return Err(Errno::ERESTARTSYS),
            }
        };
        buf[..8].copy_from_slice(&n.to_le_bytes());
        Ok(8)
    }

    fn is_stream(&self) -> bool {
        true
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(anon_kstat(0o600, self.ino, 0x0d, 0, 0))
    }

    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        if let Some(pt) = pt {
            pt.wait_on(&self.sh.wq);
        }
        let mut st = lock(&self.sh.st);
        st.advance(Instant::now());
        if st.ticks > 0 {
            (POLLIN | POLLRDNORM) & events
        } else {
            0
        }
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// A pending wakeup of the timer thread.
struct Entry {
    when: Instant,
    seq: u64,
    target: Weak<Shared>,
    generation: u64,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.when, self.seq) == (o.when, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.when, self.seq).cmp(&(o.when, o.seq))
    }
}

#[derive(Default)]
struct Sched {
    heap: Mutex<(BinaryHeap<Reverse<Entry>>, u64)>,
    cv: Condvar,
}

fn sched() -> &'static Arc<Sched> {
    static S: OnceLock<Arc<Sched>> = OnceLock::new();
    S.get_or_init(|| {
        let s = Arc::new(Sched::default());
        let t = s.clone();
        if let Err(e) = std::thread::Builder::new()
            .name("timerfd".into())
            .spawn(move || timer_thread(&t))
        {
            log::warn!("timerfd: cannot start the timer thread: {e}");
        }
        s
    })
}

fn schedule(when: Instant, target: Weak<Shared>, generation: u64) {
    let s = sched();
    let mut h = lock(&s.heap);
    h.1 += 1;
    let seq = h.1;
    h.0.push(Reverse(Entry {
        when,
        seq,
        target,
        generation,
    }));
    drop(h);
    s.cv.notify_all();
}

fn timer_thread(s: &Sched) {
    let mut h = lock(&s.heap);
    loop {
        let now = Instant::now();
        let due = match h.0.peek() {
            None => {
                h = s.cv.wait(h).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            Some(Reverse(e)) if e.when <= now => true,
            Some(Reverse(e)) => {
                let d = e.when - now;
                h = s.cv.wait_timeout(h, d).unwrap_or_else(|e| e.into_inner()).0;
                false
            }
        };
        if !due {
            continue;
        }
        let Some(Reverse(e)) = h.0.pop() else {
            continue;
        };
        drop(h);
        fire(e);
        h = lock(&s.heap);
    }
}

/// Wakes the timer's pollers; a periodic timer is scheduled again (at most every 1 ms: the
/// count is exact either way, only wakeups are coalesced).
fn fire(e: Entry) {
    let Some(sh) = e.target.upgrade() else { return };
    let again = {
        let mut st = lock(&sh.st);
        if st.generation != e.generation {
            return;
        }
        let now = Instant::now();
        st.advance(now);
        st.next.map(|n| n.max(now + Duration::from_millis(1)))
    };
    sh.wq.wake_all();
    if let Some(when) = again {
        schedule(when, e.target, e.generation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shot_and_periodic_counts() {
        let t0 = Instant::now();
        let mut s = TState {
            next: Some(t0 + Duration::from_millis(10)),
            ..Default::default()
        };
        s.advance(t0);
        assert_eq!(s.ticks, 0);
        assert_eq!(s.current(t0).0, Duration::from_millis(10));
        s.advance(t0 + Duration::from_millis(50));
        assert_eq!((s.ticks, s.next), (1, None));
        assert_eq!(s.current(t0).0, Duration::ZERO);

        let mut p = TState {
            next: Some(t0 + Duration::from_millis(10)),
            interval: Duration::from_millis(10),
            ..Default::default()
        };
        p.advance(t0 + Duration::from_millis(35));
        assert_eq!(p.ticks, 3);
        assert_eq!(p.next, Some(t0 + Duration::from_millis(40)));
        assert_eq!(
            p.current(t0 + Duration::from_millis(35)),
            (Duration::from_millis(5), Duration::from_millis(10))
        );
    }

    #[test]
    fn clocks() {
        assert!(host_clock(0).is_ok() && host_clock(1).is_ok() && host_clock(7).is_ok());
        assert_eq!(host_clock(2), Err(Errno::EINVAL));
        assert_eq!(host_clock(99), Err(Errno::EINVAL));
    }
}
