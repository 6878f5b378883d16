//! Interval and POSIX timers (Linux `kernel/time/itimer.c`, `kernel/time/posix-timers.c`):
//! `alarm`, `setitimer`/`getitimer`, `timer_create`/`timer_settime`/`timer_gettime`/
//! `timer_getoverrun`/`timer_delete`.
//!
//! All timers live here, not in `Process`: a global [`State`] maps each pid to its
//! [`ProcTimers`] (the three itimers and the POSIX timers by id). One kernel thread, `timers`,
//! sleeps on a [`BinaryHeap`] of deadlines with a [`Condvar`] and sends the signals through
//! [`crate::signal::send_to_process`] / [`crate::signal::send_to_task`]. Heap entries carry the
//! timer's generation; re-arming or deleting a timer bumps it, so stale entries are skipped.
//!
//! Time is the host's monotonic clock ([`Instant`]); absolute `CLOCK_REALTIME` times are
//! converted when the timer is set (later steps of the host clock are not followed).
//! POSIX timers on the CPU-time clocks (`CLOCK_PROCESS_CPUTIME_ID`, `CLOCK_THREAD_CPUTIME_ID`)
//! follow the guest's CPU time ([`crate::cputime`]) by sampling: the heap entry is when the
//! clock could first be due, and at that time the clock is read and the entry pushed back by
//! what is still missing. Approximations: `ITIMER_VIRTUAL` and `ITIMER_PROF` count wall time;
//! a periodic timer whose previous signal is still pending
//! counts an overrun instead of queueing another signal, judged by the signal's pending bit
//! (Linux tracks its own preallocated sigqueue entry) and keeps running (Linux re-arms it when
//! the signal is dequeued).
//!
//! Hooks for the process and signal code: [`exit_process`] at process exit (all timers),
//! [`exec_process`] at exec (POSIX timers only: itimers and `alarm` survive exec), and
//! [`signal_dequeued`] when an `SI_TIMER` signal is dequeued (fills in `si_overrun`). A timer
//! of a process that is gone is also dropped when it fires.

use crate::kernel::Kernel;
use crate::signal::{send_to_process, send_to_task};
use crate::sysarg::args;
use crate::syscall::{SyscallCtx, SyscallTable};
use crate::task::{Process, Task, lock};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::{Arc, Condvar, LazyLock, Mutex, Once, OnceLock, Weak};
use std::time::{Duration, Instant};
use um_uapi::abi::Pod;
use um_uapi::abi::signal::{
    SI_KERNEL, SI_TIMER, SIGALRM, SIGEV_NONE, SIGEV_SIGNAL, SIGEV_THREAD, SIGEV_THREAD_ID,
    SIGEVENT_SIZE, SIGPROF, SIGRTMAX, SIGVTALRM, Siginfo, sigmask,
};
use um_uapi::abi::time::{Itimerspec, Itimerval, TIMER_ABSTIME, Timespec, Timeval};
use um_uapi::{Errno, SysResult};

use super::time::instant_at;

/// Which timer of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Slot {
    /// `ITIMER_REAL` (0, also `alarm`), `ITIMER_VIRTUAL` (1), `ITIMER_PROF` (2).
    Itimer(u32),
    /// A POSIX timer by id.
    Posix(i32),
}

/// Where an expiry goes (the kernel's view of `sigev_notify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Notify {
    /// `SIGEV_NONE`: nothing; the timer can only be read.
    None,
    /// `SIGEV_SIGNAL` (and `SIGEV_THREAD`, which libcs implement on top): the process.
    Process,
    /// `SIGEV_THREAD_ID`: one thread of the process.
    Thread(u32),
}

/// A decoded `struct sigevent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SigEvent {
    notify: Notify,
    signo: u32,
    /// `sigev_value`, delivered as `si_value`.
    value: u64,
}

/// Decodes a `struct sigevent` (`sigev_value` at 0, `sigev_signo` at 8, `sigev_notify` at 12,
/// `sigev_notify_thread_id` at 16) and checks it as Linux `good_sigevent` does, except that
/// the thread id's membership of the caller's thread group is for the caller to check.
fn decode_sigevent(b: &[u8]) -> SysResult<SigEvent> {
    if b.len() < 20 {
        return Err(Errno::EFAULT);
    }
    let word = |o: usize| i32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let value = u64::from_le_bytes(b[0..8].try_into().map_err(|_| Errno::EFAULT)?);
    let (signo, notify) = (word(8), word(12));
    let n = match notify {
        SIGEV_NONE => Notify::None,
        SIGEV_SIGNAL | SIGEV_THREAD => Notify::Process,
        SIGEV_THREAD_ID => Notify::Thread(word(16) as u32),
        _ => return Err(Errno::EINVAL),
    };
    if n != Notify::None && (signo <= 0 || signo as u32 > SIGRTMAX) {
        return Err(Errno::EINVAL);
    }
    Ok(SigEvent {
        notify: n,
        signo: signo.max(0) as u32,
        value,
    })
}

/// One timer.
struct Timer {
    event: SigEvent,
    /// The next expiry on the timer's period grid; `None` while disarmed.
    expires: Option<Instant>,
    /// Zero for a one-shot timer.
    interval: Duration,
    /// Bumped on every (re)arm and delete; heap entries of older generations are stale.
    generation: u64,
    /// Expiries not signalled since the last signal (its signal was still pending).
    overrun: u64,
    /// The overrun count of the last signal (`timer_getoverrun`).
    overrun_last: i32,
    /// Clock id (POSIX timers), for absolute times.
    clock: i32,
    /// A timer on a CPU-time clock (2, 3): the clock reading it expires at (ns). The wall-clock
    /// deadline is then only when to look again: CPU time grows no faster than wall time on
    /// one thread, so it never fires early ([`cpu_clock_now`]).
    cpu_at: Option<u64>,
    /// The thread whose CPU clock a `CLOCK_THREAD_CPUTIME_ID` timer follows (its creator).
    owner: Weak<Task>,
}

impl Timer {
    fn new(event: SigEvent, clock: i32) -> Timer {
        Timer {
            event,
            expires: None,
            interval: Duration::ZERO,
            generation: 0,
            overrun: 0,
            overrun_last: 0,
            clock,
            cpu_at: None,
            owner: Weak::new(),
        }
    }

    /// The current setting as `timer_gettime` reports it (Linux `common_timer_get`): a periodic
    /// timer is moved past `now` on its grid; an expired timer whose signal is not yet
    /// delivered shows 1 ns, an expired `SIGEV_NONE` one-shot 0.
    fn value(&self, now: Instant) -> (Duration, Duration) {
        let Some(mut e) = self.expires else {
            return (Duration::ZERO, self.interval);
        };
        if e <= now && !self.interval.is_zero() {
            e = forward(e, self.interval, now).0;
        }
        let rem = if e > now {
            e - now
        } else if self.event.notify == Notify::None {
            Duration::ZERO
        } else {
            Duration::from_nanos(1)
        };
        (rem, self.interval)
    }
}

/// Moves expiry `e` (<= `now`) forward by whole `interval`s past `now`: the next expiry and
/// how many grid points were at or before `now` (Linux `hrtimer_forward` + 1).
fn forward(e: Instant, interval: Duration, now: Instant) -> (Instant, u64) {
    if interval.is_zero() || e > now {
        return (e, 0);
    }
    let late = (now - e).as_nanos();
    let step = interval.as_nanos();
    let k = late / step + 1;
    let next = u32::try_from(k)
        .ok()
        .and_then(|k32| interval.checked_mul(k32))
        .and_then(|d| e.checked_add(d))
        .unwrap_or_else(|| now + interval);
    (next, u64::try_from(k).unwrap_or(u64::MAX))
}

/// A process's timers.
struct ProcTimers {
    process: Weak<Process>,
    timers: BTreeMap<Slot, Timer>,
    /// Next POSIX timer id to try.
    next_id: i32,
}

/// One heap entry: when, which generation, whose, which.
type Entry = Reverse<(Instant, u64, u32, Slot)>;

/// Everything, under one lock.
#[derive(Default)]
struct State {
    procs: HashMap<u32, ProcTimers>,
    heap: BinaryHeap<Entry>,
    generation: u64,
    /// Heap size at which stale entries are dropped (re-arming leaves the old entry behind).
    compact_at: usize,
}

impl State {
    /// The timers of `p`, created empty if needed (and replaced if the pid was reused).
    fn of(&mut self, p: &Arc<Process>) -> &mut ProcTimers {
        let e = self.procs.entry(p.pid).or_insert_with(|| ProcTimers {
            process: Arc::downgrade(p),
            timers: BTreeMap::new(),
            next_id: 0,
        });
        if !std::ptr::eq(e.process.as_ptr(), Arc::as_ptr(p)) {
            *e = ProcTimers {
                process: Arc::downgrade(p),
                timers: BTreeMap::new(),
                next_id: 0,
            };
        }
        e
    }

    /// (Re)arms `slot` of `pid`: `expires` None disarms.
    fn arm(&mut self, pid: u32, slot: Slot, expires: Option<Instant>, interval: Duration) {
        self.generation += 1;
        let generation = self.generation;
        let Some(t) = self
            .procs
            .get_mut(&pid)
            .and_then(|pt| pt.timers.get_mut(&slot))
        else {
            return;
        };
        t.generation = generation;
        t.expires = expires;
        t.interval = if expires.is_some() {
            interval
        } else {
            Duration::ZERO
        };
        t.overrun = 0;
        if let Some(at) = expires
            && t.event.notify != Notify::None
        {
            if self.heap.len() >= self.compact_at.max(1024) {
                self.compact();
            }
            self.heap.push(Reverse((at, generation, pid, slot)));
            TIMERS.1.notify_one();
            start_thread();
        }
    }

    /// Drops heap entries whose timer is gone or was re-armed since.
    fn compact(&mut self) {
        let procs = &self.procs;
        self.heap.retain(|Reverse((_, generation, pid, slot))| {
            procs
                .get(pid)
                .and_then(|pt| pt.timers.get(slot))
                .is_some_and(|t| t.generation == *generation)
        });
        self.compact_at = 2 * self.heap.len();
    }

    /// Pops the earliest entry due at `now`.
    fn pop_due(&mut self, now: Instant) -> Option<(Instant, u64, u32, Slot)> {
        match self.heap.peek() {
            Some(Reverse((at, ..))) if *at <= now => self.heap.pop().map(|Reverse(e)| e),
            _ => None,
        }
    }
}

static TIMERS: LazyLock<(Mutex<State>, Condvar)> =
    LazyLock::new(|| (Mutex::new(State::default()), Condvar::new()));
static KERNEL: OnceLock<Weak<Kernel>> = OnceLock::new();
static THREAD: Once = Once::new();

/// Shortest time between two firings of one timer: bounds the work of a tiny interval (its
/// missed periods are counted as overruns).
const MIN_REARM: Duration = Duration::from_micros(100);

fn start_thread() {
    THREAD.call_once(|| {
        if let Err(e) = std::thread::Builder::new()
            .name("timers".into())
            .spawn(timer_thread)
        {
            log::error!("timers: cannot start the timer thread: {e}");
        }
    });
}

/// A signal to send once the lock is dropped.
enum Send {
    Process(Arc<Process>, Siginfo),
    Thread(Arc<Task>, Siginfo),
}

/// Handles one due heap entry: decides whether a signal goes out and re-arms periodic timers.
fn expire(st: &mut State, k: &Kernel, now: Instant, e: (Instant, u64, u32, Slot)) -> Option<Send> {
    let (_, generation, pid, slot) = e;
    let pt = st.procs.get_mut(&pid)?;
    let Some(p) = pt.process.upgrade().filter(|p| lock(&p.exit).is_none()) else {
        st.procs.remove(&pid);
        return None;
    };
    let t = pt.timers.get_mut(&slot)?;
    if t.generation != generation {
        return None;
    }
    let exp = t.expires?;
    let (mut next, mut k_periods) = forward(exp, t.interval, now);
    if let Some(cpu_at) = t.cpu_at {
        // A CPU-time timer: due only once its clock has got there (posix-cpu-timers.c).
        let Some(used) = cpu_clock_now(t, &p) else {
            t.expires = None;
            return None;
        };
        if used < cpu_at {
            let at = now + Duration::from_nanos(cpu_at - used).max(MIN_REARM);
            t.expires = Some(at);
            st.heap.push(Reverse((at, generation, pid, slot)));
            return None;
        }
        // The periods of the CPU clock that have passed, and the next expiry on its grid.
        let step = t.interval.as_nanos() as u64;
        if let Some(q) = (used - cpu_at).checked_div(step) {
            k_periods = q + 1;
            let next_cpu = cpu_at.saturating_add(k_periods.saturating_mul(step));
            t.cpu_at = Some(next_cpu);
            next = now + Duration::from_nanos(next_cpu - used);
        }
    }
    if t.interval.is_zero() {
        t.expires = None;
    } else {
        t.expires = Some(next);
        let at = next.max(now + MIN_REARM);
        st.heap.push(Reverse((at, generation, pid, slot)));
    }
    let ev = t.event;
    let send = match slot {
        Slot::Itimer(_) => Send::Process(p, Siginfo::new(ev.signo, SI_KERNEL)),
        Slot::Posix(id) => {
            let target = match ev.notify {
                Notify::None => return None,
                Notify::Process => None,
                Notify::Thread(tid) => match k.tasks.get(tid) {
                    Some(th)
                        if Arc::ptr_eq(&th.process, &p)
                            && !th.exited.load(std::sync::atomic::Ordering::Acquire) =>
                    {
                        Some(th)
                    }
                    _ => return None,
                },
            };
            let pending = match &target {
                Some(th) => lock(&th.pending).bits(),
                None => lock(&p.shared_pending).bits(),
            } & sigmask(ev.signo)
                != 0;
            if pending {
                t.overrun = t.overrun.saturating_add(k_periods.max(1));
                return None;
            }
            // Expiries not yet reported: those counted while the last signal was pending (if
            // `signal_dequeued` did not report them) and the periods missed just now.
            let overrun = t.overrun.saturating_add(k_periods.saturating_sub(1));
            t.overrun = 0;
            t.overrun_last = i32::try_from(overrun).unwrap_or(i32::MAX);
            let info = Siginfo::timer(ev.signo, id, t.overrun_last, ev.value);
            match target {
                Some(th) => Send::Thread(th, info),
                None => Send::Process(p, info),
            }
        }
    };
    Some(send)
}

/// The current reading of a CPU-time timer's clock: its process's CPU time, or its owner
/// thread's (None once that thread is gone).
fn cpu_clock_now(t: &Timer, p: &Process) -> Option<u64> {
    match t.clock {
        3 => t
            .owner
            .upgrade()
            .filter(|o| !o.exited.load(std::sync::atomic::Ordering::Acquire))
            .map(|o| crate::cputime::task_times(&o).total()),
        _ => Some(crate::cputime::process_times(p).total()),
    }
}

fn timer_thread() {
    let (m, cv) = &*TIMERS;
    let mut st = lock(m);
    loop {
        let now = Instant::now();
        let mut sends = Vec::new();
        if let Some(k) = KERNEL.get().and_then(Weak::upgrade) {
            while let Some(e) = st.pop_due(now) {
                sends.extend(expire(&mut st, &k, now, e));
            }
            if !sends.is_empty() {
                drop(st);
                for s in sends {
                    match s {
                        Send::Process(p, info) => send_to_process(&k, &p, info),
                        Send::Thread(t, info) => send_to_task(&t, info),
                    }
                }
                st = lock(m);
                continue;
            }
        }
        let next = st.heap.peek().map(|Reverse((at, ..))| *at);
        st = match next {
            None => cv.wait(st).unwrap_or_else(|e| e.into_inner()),
            Some(at) => {
                cv.wait_timeout(st, at.saturating_duration_since(now))
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
    }
}

fn state(c: &SyscallCtx<'_>) -> std::sync::MutexGuard<'static, State> {
    KERNEL.get_or_init(|| Arc::downgrade(c.kernel));
    lock(&TIMERS.0)
}

/// Call when a signal with `si_code == SI_TIMER` is dequeued for process `pid` (delivery or
/// sigtimedwait): adds the expiries counted while it was pending to its `si_overrun` and makes
/// that the timer's `timer_getoverrun` value (Linux `posixtimer_rearm` in `dequeue_signal`).
/// Returns false if the timer has been deleted since: the signal is then dropped, not
/// delivered (Linux `posixtimer_deliver_signal`, since 6.13; a program that deleted its timer
/// does not get one more signal from it). Other signals are always delivered.
pub fn signal_dequeued(pid: u32, info: &mut Siginfo) -> bool {
    if info.si_code != SI_TIMER {
        return true;
    }
    let id = info.timer_id();
    let mut st = lock(&TIMERS.0);
    let Some(t) = st
        .procs
        .get_mut(&pid)
        .and_then(|pt| pt.timers.get_mut(&Slot::Posix(id)))
    else {
        return false;
    };
    let total = i64::from(info.overrun().max(0)) + i64::try_from(t.overrun).unwrap_or(i64::MAX);
    let total = i32::try_from(total).unwrap_or(i32::MAX);
    t.overrun = 0;
    t.overrun_last = total;
    *info = Siginfo::timer(info.si_signo as u32, id, total, info.value());
    true
}

/// Removes every timer of process `pid` (call at process exit).
pub fn exit_process(pid: u32) {
    lock(&TIMERS.0).procs.remove(&pid);
}

/// Removes the POSIX timers of process `pid` and keeps its itimers (call at exec: Linux
/// `exit_itimers` in `begin_new_exec`; `alarm` and `setitimer` timers survive exec).
pub fn exec_process(pid: u32) {
    if let Some(pt) = lock(&TIMERS.0).procs.get_mut(&pid) {
        pt.timers.retain(|s, _| matches!(s, Slot::Itimer(_)));
    }
}

fn ts_of(d: Duration) -> Timespec {
    Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: i64::from(d.subsec_nanos()),
    }
}

fn tv_of(d: Duration) -> Timeval {
    Timeval {
        tv_sec: d.as_secs() as i64,
        tv_usec: i64::from(d.subsec_micros()),
    }
}

fn dur_of(ts: Timespec) -> Duration {
    super::time::duration(ts)
}

/// `now + d`, saturating far in the future instead of overflowing.
fn after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(1 << 40))
}

/// The signal of each itimer.
const ITIMER_SIGNALS: [u32; 3] = [SIGALRM, SIGVTALRM, SIGPROF];

/// Current value of itimer `which` (Linux `itimer_get_remtime`: an expired but active timer
/// reads 1 us).
fn itimer_get(st: &mut State, p: &Arc<Process>, which: u32) -> (Duration, Duration) {
    let now = Instant::now();
    match st.of(p).timers.get(&Slot::Itimer(which)) {
        Some(t) if t.expires.is_some() => {
            let (rem, iv) = t.value(now);
            (rem.max(Duration::from_micros(1)), iv)
        }
        _ => (Duration::ZERO, Duration::ZERO),
    }
}

/// Sets itimer `which` (relative `value`, reload `interval`); returns the old setting.
fn itimer_set(
    st: &mut State,
    p: &Arc<Process>,
    which: u32,
    value: Duration,
    interval: Duration,
) -> (Duration, Duration) {
    let old = itimer_get(st, p, which);
    let slot = Slot::Itimer(which);
    let ev = SigEvent {
        notify: Notify::Process,
        signo: ITIMER_SIGNALS[which as usize],
        value: 0,
    };
    st.of(p)
        .timers
        .entry(slot)
        .or_insert_with(|| Timer::new(ev, 0));
    let expires = (!value.is_zero()).then(|| after(Instant::now(), value));
    st.arm(p.pid, slot, expires, interval);
    old
}

fn read_itimerval(c: &SyscallCtx<'_>, addr: u64) -> SysResult<(Duration, Duration)> {
    let v = Itimerval::from_bytes(&c.read_bytes(addr, Itimerval::SIZE)?).ok_or(Errno::EFAULT)?;
    let ok = |t: Timeval| t.tv_sec >= 0 && (0..1_000_000).contains(&t.tv_usec);
    if !ok(v.it_value) || !ok(v.it_interval) {
        return Err(Errno::EINVAL);
    }
    let d = |t: Timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok((d(v.it_value), d(v.it_interval)))
}

fn itimerval_bytes((value, interval): (Duration, Duration)) -> Vec<u8> {
    Itimerval {
        it_interval: tv_of(interval),
        it_value: tv_of(value),
    }
    .as_bytes()
}

/// setitimer(which, new, old) (kernel/time/itimer.c). A NULL `new` disarms (a misfeature
/// Linux still accepts).
fn setitimer(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let which = a[0] as i32;
    let (value, interval) = if a[1] != 0 {
        read_itimerval(c, a[1])?
    } else {
        (Duration::ZERO, Duration::ZERO)
    };
    if !(0..=2).contains(&which) {
        return Err(Errno::EINVAL);
    }
    let old = itimer_set(
        &mut state(c),
        &c.task.process,
        which as u32,
        value,
        interval,
    );
    if a[2] != 0 {
        c.write_bytes(a[2], &itimerval_bytes(old))?;
    }
    Ok(0)
}

/// getitimer(which, cur).
fn getitimer(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let which = a[0] as i32;
    if !(0..=2).contains(&which) {
        return Err(Errno::EINVAL);
    }
    let cur = itimer_get(&mut state(c), &c.task.process, which as u32);
    c.write_bytes(a[1], &itimerval_bytes(cur))?;
    Ok(0)
}

/// What `alarm` returns for an old remaining time (Linux `alarm_setitimer`): whole seconds,
/// rounded to nearest, but never 0 while an alarm was pending.
fn alarm_seconds(rem: Duration) -> u64 {
    let mut s = rem.as_secs();
    let ns = rem.subsec_nanos();
    if (s == 0 && ns != 0) || ns >= 500_000_000 {
        s += 1;
    }
    s
}

/// alarm(seconds): ITIMER_REAL without interval.
fn alarm(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let secs = u64::from(a[0] as u32);
    let old = itimer_set(
        &mut state(c),
        &c.task.process,
        0,
        Duration::from_secs(secs),
        Duration::ZERO,
    );
    Ok(alarm_seconds(old.0))
}

/// Clock ids `timer_create` accepts (`clockid_to_kclock` and each clock's `timer_create`):
/// `EINVAL` unknown, `EOPNOTSUPP` for the raw and coarse clocks, `EPERM` for the alarm clocks
/// without CAP_WAKE_ALARM. Clocks of other processes (negative ids) are not supported
/// (`EINVAL`).
fn timer_clock(id: i32, root: bool) -> SysResult<i32> {
    match id {
        0..=3 | 7 | 11 => Ok(id),
        4..=6 => Err(Errno::EOPNOTSUPP),
        8 | 9 if root => Ok(id),
        8 | 9 => Err(Errno::EPERM),
        _ => Err(Errno::EINVAL),
    }
}

/// The instant at which clock `clock` reads `abs` (TIMER_ABSTIME), for process `p`.
pub fn abs_instant(clock: i32, abs: Timespec, p: &Process) -> Instant {
    let host = match clock {
        0 | 8 => Some(libc::CLOCK_REALTIME),
        1 => Some(libc::CLOCK_MONOTONIC),
        7 | 9 => Some(libc::CLOCK_BOOTTIME),
        11 => Some(libc::CLOCK_TAI),
        _ => None,
    };
    // In a time namespace the absolute time is shifted back to the host's clock
    // (common_timer_set: timens_ktime_to_host).
    let abs = super::time::to_host(&crate::timens::offsets_of(p), clock, abs);
    match host {
        Some(h) => instant_at(h, abs).unwrap_or_else(|| after(Instant::now(), dur_of(abs))),
        // CPU-time clocks count wall time from the process's start.
        None => after(p.start, dur_of(abs)),
    }
}

/// timer_create(clockid, sevp, timerid).
fn timer_create(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let mut ev = if a[1] != 0 {
        Some(decode_sigevent(&c.read_bytes(a[1], SIGEVENT_SIZE)?)?)
    } else {
        None
    };
    let root = lock(&c.task.process.creds).euid == 0;
    let clock = timer_clock(a[0] as i32, root)?;
    // good_sigevent: SIGEV_THREAD_ID names a thread of the caller's process by its number
    // in the caller's pid namespace (find_vpid); the timer keeps the kernel-wide id.
    if let Some(SigEvent {
        notify: Notify::Thread(tid),
        ..
    }) = &mut ev
    {
        match c.kernel.tasks.find_task_vpid(c.task, *tid) {
            Some(t) if Arc::ptr_eq(&t.process, &c.task.process) => *tid = t.tid,
            _ => return Err(Errno::EINVAL),
        }
    }
    let p = c.task.process.clone();
    let id = {
        let mut st = state(c);
        let pt = st.of(&p);
        let mut id = pt.next_id;
        let mut tries = 0u64;
        while pt.timers.contains_key(&Slot::Posix(id)) {
            id = if id == i32::MAX { 0 } else { id + 1 };
            tries += 1;
            if tries > i32::MAX as u64 {
                return Err(Errno::EAGAIN);
            }
        }
        pt.next_id = if id == i32::MAX { 0 } else { id + 1 };
        // Without a sigevent: SIGEV_SIGNAL, SIGALRM, and the timer id as the value.
        let ev = ev.unwrap_or(SigEvent {
            notify: Notify::Process,
            signo: SIGALRM,
            value: id as u64,
        });
        let mut t = Timer::new(ev, clock);
        t.owner = Arc::downgrade(c.task);
        pt.timers.insert(Slot::Posix(id), t);
        id
    };
    if let Err(e) = c.write_bytes(a[2], &id.to_le_bytes()) {
        if let Some(pt) = state(c).procs.get_mut(&p.pid) {
            pt.timers.remove(&Slot::Posix(id));
        }
        return Err(e);
    }
    Ok(0)
}

fn itimerspec_bytes((value, interval): (Duration, Duration)) -> Vec<u8> {
    Itimerspec {
        it_interval: ts_of(interval),
        it_value: ts_of(value),
    }
    .as_bytes()
}

/// timer_settime(id, flags, new, old).
fn timer_settime(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (id, flags, new, old_addr): (i32, u32, u64, u64) = args(&a)?;
    if new == 0 {
        return Err(Errno::EINVAL);
    }
    let spec =
        Itimerspec::from_bytes(&c.read_bytes(new, Itimerspec::SIZE)?).ok_or(Errno::EFAULT)?;
    if !spec.it_value.is_valid() || !spec.it_interval.is_valid() {
        return Err(Errno::EINVAL);
    }
    let p = c.task.process.clone();
    let old = {
        let mut st = state(c);
        let now = Instant::now();
        let t = st
            .of(&p)
            .timers
            .get(&Slot::Posix(id))
            .ok_or(Errno::EINVAL)?;
        let old = t.value(now);
        let clock = t.clock;
        let value = dur_of(spec.it_value);
        // A CPU-time clock: the expiry on that clock, and a first look when it could be due.
        let cpu = if matches!(clock, 2 | 3) && !value.is_zero() {
            let used = cpu_clock_now(t, &p).unwrap_or(0);
            let v = value.as_nanos() as u64;
            let at = if flags & TIMER_ABSTIME != 0 {
                v
            } else {
                used.saturating_add(v)
            };
            Some((at, Duration::from_nanos(at.saturating_sub(used))))
        } else {
            None
        };
        let expires = if value.is_zero() {
            None
        } else if let Some((_, wait)) = cpu {
            Some(after(now, wait))
        } else if flags & TIMER_ABSTIME != 0 {
            Some(abs_instant(clock, spec.it_value, &p))
        } else {
            Some(after(now, value))
        };
        st.arm(p.pid, Slot::Posix(id), expires, dur_of(spec.it_interval));
        if let Some(t) = st
            .procs
            .get_mut(&p.pid)
            .and_then(|pt| pt.timers.get_mut(&Slot::Posix(id)))
        {
            t.cpu_at = cpu.map(|(at, _)| at);
        }
        old
    };
    if old_addr != 0 {
        c.write_bytes(old_addr, &itimerspec_bytes(old))?;
    }
    Ok(0)
}

/// timer_gettime(id, cur).
fn timer_gettime(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let p = c.task.process.clone();
    let cur = {
        let mut st = state(c);
        st.of(&p)
            .timers
            .get(&Slot::Posix(a[0] as i32))
            .ok_or(Errno::EINVAL)?
            .value(Instant::now())
    };
    c.write_bytes(a[1], &itimerspec_bytes(cur))?;
    Ok(0)
}

/// timer_getoverrun(id): the overrun count of the last signal.
fn timer_getoverrun(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let p = c.task.process.clone();
    let mut st = state(c);
    let t = st
        .of(&p)
        .timers
        .get(&Slot::Posix(a[0] as i32))
        .ok_or(Errno::EINVAL)?;
    Ok(t.overrun_last as u64)
}

/// timer_delete(id).
fn timer_delete(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let p = c.task.process.clone();
    let mut st = state(c);
    st.of(&p)
        .timers
        .remove(&Slot::Posix(a[0] as i32))
        .ok_or(Errno::EINVAL)?;
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("alarm", alarm);
    t.register("setitimer", setitimer);
    t.register("getitimer", getitimer);
    t.register("timer_create", timer_create);
    t.register("timer_settime", timer_settime);
    t.register("timer_gettime", timer_gettime);
    t.register("timer_getoverrun", timer_getoverrun);
    t.register("timer_delete", timer_delete);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sigevent(value: u64, signo: i32, notify: i32, tid: i32) -> Vec<u8> {
        let mut b = vec![0u8; SIGEVENT_SIZE];
        b[0..8].copy_from_slice(&value.to_le_bytes());
        b[8..12].copy_from_slice(&signo.to_le_bytes());
        b[12..16].copy_from_slice(&notify.to_le_bytes());
        b[16..20].copy_from_slice(&tid.to_le_bytes());
        b
    }

    #[test]
    fn sigevent_decoding() {
        assert_eq!(
            decode_sigevent(&sigevent(0x1234_5678_9abc, 10, SIGEV_SIGNAL, 0)),
            Ok(SigEvent {
                notify: Notify::Process,
                signo: 10,
                value: 0x1234_5678_9abc
            })
        );
        // musl's SIGEV_THREAD: SIGEV_THREAD_ID with its helper thread.
        assert_eq!(
            decode_sigevent(&sigevent(7, 32, SIGEV_THREAD_ID, 99)),
            Ok(SigEvent {
                notify: Notify::Thread(99),
                signo: 32,
                value: 7
            })
        );
        assert_eq!(
            decode_sigevent(&sigevent(0, 0, SIGEV_NONE, 0)).map(|e| e.notify),
            Ok(Notify::None)
        );
        assert_eq!(
            decode_sigevent(&sigevent(0, 14, SIGEV_THREAD, 0)).map(|e| e.notify),
            Ok(Notify::Process)
        );
        assert_eq!(
            decode_sigevent(&sigevent(0, 0, SIGEV_SIGNAL, 0)),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            decode_sigevent(&sigevent(0, 65, SIGEV_SIGNAL, 0)),
            Err(Errno::EINVAL)
        );
        assert_eq!(decode_sigevent(&sigevent(0, 10, 3, 0)), Err(Errno::EINVAL));
        assert_eq!(
            decode_sigevent(&sigevent(0, 10, SIGEV_THREAD | SIGEV_THREAD_ID, 0)),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn heap_pops_in_deadline_order() {
        let mut st = State::default();
        let t0 = Instant::now();
        for (ms, g) in [(30u64, 1u64), (10, 2), (20, 3), (10, 4)] {
            st.heap.push(Reverse((
                t0 + Duration::from_millis(ms),
                g,
                1,
                Slot::Posix(0),
            )));
        }
        assert_eq!(st.pop_due(t0), None);
        let now = t0 + Duration::from_millis(25);
        let order: Vec<u64> = std::iter::from_fn(|| st.pop_due(now).map(|e| e.1)).collect();
        assert_eq!(order, vec![2, 4, 3]);
        assert_eq!(st.heap.len(), 1);
        assert_eq!(
            st.pop_due(t0 + Duration::from_millis(30)).map(|e| e.1),
            Some(1)
        );
    }

    #[test]
    fn compaction_drops_stale_entries() {
        let mut st = State::default();
        let ev = SigEvent {
            notify: Notify::Process,
            signo: 14,
            value: 0,
        };
        let mut pt = ProcTimers {
            process: Weak::new(),
            timers: BTreeMap::new(),
            next_id: 0,
        };
        let mut t = Timer::new(ev, 1);
        t.generation = 7;
        pt.timers.insert(Slot::Itimer(0), t);
        st.procs.insert(3, pt);
        let at = Instant::now();
        st.heap.push(Reverse((at, 6, 3, Slot::Itimer(0))));
        st.heap.push(Reverse((at, 7, 3, Slot::Itimer(0))));
        st.heap.push(Reverse((at, 7, 4, Slot::Itimer(0))));
        st.heap.push(Reverse((at, 7, 3, Slot::Posix(0))));
        st.compact();
        assert_eq!(st.heap.len(), 1);
        assert_eq!(st.compact_at, 2);
    }

    #[test]
    fn forwarding_counts_missed_periods() {
        let t0 = Instant::now();
        let iv = Duration::from_millis(10);
        assert_eq!(forward(t0, iv, t0), (t0 + iv, 1));
        assert_eq!(
            forward(t0, iv, t0 + Duration::from_millis(35)),
            (t0 + Duration::from_millis(40), 4)
        );
        assert_eq!(
            forward(t0, iv, t0 + Duration::from_millis(40)),
            (t0 + Duration::from_millis(50), 5)
        );
        // Not yet due, or one-shot: unchanged.
        assert_eq!(forward(t0 + iv, iv, t0), (t0 + iv, 0));
        assert_eq!(forward(t0, Duration::ZERO, t0 + iv), (t0, 0));
    }

    #[test]
    fn timer_values() {
        let t0 = Instant::now();
        let ev = SigEvent {
            notify: Notify::Process,
            signo: 14,
            value: 0,
        };
        let mut t = Timer::new(ev, 1);
        assert_eq!(t.value(t0), (Duration::ZERO, Duration::ZERO));
        t.expires = Some(t0 + Duration::from_millis(5));
        assert_eq!(t.value(t0), (Duration::from_millis(5), Duration::ZERO));
        // Expired one-shot whose signal has not gone out yet: 1 ns.
        assert_eq!(
            t.value(t0 + Duration::from_secs(1)).0,
            Duration::from_nanos(1)
        );
        // SIGEV_NONE one-shot: 0 once expired.
        t.event.notify = Notify::None;
        assert_eq!(t.value(t0 + Duration::from_secs(1)).0, Duration::ZERO);
        // Periodic: moved forward on its grid.
        t.interval = Duration::from_millis(10);
        assert_eq!(
            t.value(t0 + Duration::from_millis(12)),
            (Duration::from_millis(3), Duration::from_millis(10))
        );
    }

    #[test]
    fn dequeue_reports_overruns() {
        const PID: u32 = u32::MAX - 7; // no real process: only this test uses it
        let ev = SigEvent {
            notify: Notify::Process,
            signo: 34,
            value: 5,
        };
        let mut t = Timer::new(ev, 1);
        t.overrun = 3; // counted while the signal was pending
        let mut timers = BTreeMap::new();
        timers.insert(Slot::Posix(2), t);
        lock(&TIMERS.0).procs.insert(
            PID,
            ProcTimers {
                process: Weak::new(),
                timers,
                next_id: 3,
            },
        );
        let mut info = Siginfo::timer(34, 2, 1, 5);
        assert!(signal_dequeued(PID, &mut info));
        assert_eq!((info.overrun(), info.timer_id(), info.value()), (4, 2, 5));
        assert_eq!(info.si_code, SI_TIMER);
        let mut other = Siginfo::new(34, SI_KERNEL);
        assert!(signal_dequeued(PID, &mut other));
        assert_eq!(other, Siginfo::new(34, SI_KERNEL));
        // A deleted timer's pending signal is dropped.
        let mut gone = Siginfo::timer(34, 7, 0, 5);
        assert!(!signal_dequeued(PID, &mut gone));
        let mut st = lock(&TIMERS.0);
        let t = &st.procs[&PID].timers[&Slot::Posix(2)];
        assert_eq!((t.overrun, t.overrun_last), (0, 4));
        st.procs.remove(&PID);
    }

    #[test]
    fn alarm_rounding() {
        assert_eq!(alarm_seconds(Duration::ZERO), 0);
        assert_eq!(alarm_seconds(Duration::from_millis(1)), 1);
        assert_eq!(alarm_seconds(Duration::from_millis(2_400)), 2);
        assert_eq!(alarm_seconds(Duration::from_millis(2_500)), 3);
        assert_eq!(alarm_seconds(Duration::from_secs(5)), 5);
    }

    #[test]
    fn clocks() {
        assert_eq!(timer_clock(0, false), Ok(0));
        assert_eq!(timer_clock(3, false), Ok(3));
        assert_eq!(timer_clock(4, false), Err(Errno::EOPNOTSUPP));
        assert_eq!(timer_clock(8, false), Err(Errno::EPERM));
        assert_eq!(timer_clock(9, true), Ok(9));
        assert_eq!(timer_clock(10, false), Err(Errno::EINVAL));
        assert_eq!(timer_clock(-6, false), Err(Errno::EINVAL));
    }
}
