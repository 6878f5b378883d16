//! Guest CPU-time accounting (Linux kernel/sched/cputime.c, the readers in kernel/sys.c
//! `getrusage`/`times` and kernel/time/posix-cpu-timers.c, the sums in kernel/exit.c).
//!
//! **Where the time comes from.** A guest thread runs as native code on a host thread of its
//! stub process (both engines), and one kernel host thread serves it for its whole life
//! (DESIGN.md, the 1:1 model). So:
//!
//! - *user time* is the run time of the stub host thread (`Task::host_pid`/`host_tid`): guest
//!   code, plus what the host spends on that thread trapping to us (the ptrace stop, or the
//!   seccomp SIGSYS and the stub's handler). Read on demand from
//!   `/proc/PID/task/TID/schedstat` ([`um_os_linux::host::ThreadRuntime`]; a task that reads
//!   its own time keeps the file open and re-reads it with one `pread`): the host lets
//!   no other process read a thread CPU clock of the stub, and `.../stat` counts in 10 ms ticks,
//!   too coarse for getrusage(RUSAGE_THREAD) readers that expect steps of a tick or less.
//!   The host brings a *running* thread's count up to date only at its scheduler tick and
//!   when the thread stops running: in the ptrace engine the stub thread is stopped whenever
//!   we read it, so the value is exact; in the seccomp engine a busy guest thread's stub rarely
//!   sleeps, so its user time advances in steps of the host tick (4 ms at HZ=250);
//! - *system time* is the CPU time of the serving kernel thread, read from its thread CPU
//!   clock ([`um_os_linux::host::own_thread_cpu_ns`], one `clock_gettime`): the syscalls,
//!   faults and signal deliveries we run on the guest's behalf, which is what Linux counts as
//!   the task's system time.
//!
//! Nothing is read on the syscall path: only when a guest asks (`times`, `getrusage`, a CPU
//! clock, `/proc/PID/stat`), at thread exit (the final value is kept, Linux `__exit_signal`
//! into `signal_struct.utime/stime`), when an exec moves a thread to a fresh stub, and by the
//! RLIMIT_CPU watcher for processes that set a finite limit.
//!
//! In the seccomp engine both host threads spin briefly for each handoff (`seccomp_spin=`):
//! the stub while the kernel serves, the kernel while the guest runs. That CPU time is neither
//! the guest's work nor serving it, and counting it would make a syscall-bound thread's user
//! plus system time twice its wall time; the engine measures those spins with the clock reads
//! it already makes ([`crate::engine::GuestThread::take_spin`]), the run loop adds them up
//! here after each switch (two relaxed atomic adds, no host call), and readings subtract them.
//!
//! Linux splits `sum_exec_runtime` by tick samples (`cputime_adjust`); here both halves are
//! measured directly, so no adjustment is needed: each half only grows (readings are kept
//! monotonic, and the last reading stands in once a host thread is gone).
//!
//! Exited threads' times join their process (`ProcCpu::dead`); a reaped child's times and its
//! own `children` times join its parent's `children` (kernel/exit.c `wait_task_zombie`:
//! `psig->cutime += tgutime + sig->cutime`). Children reaped automatically (SIGCHLD ignored)
//! are not counted, as in Linux.

use crate::kernel::Kernel;
use crate::task::{Process, Task, lock};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, Once, OnceLock, Weak};
use std::time::Duration;
use um_uapi::abi::signal::{SI_KERNEL, SIGKILL, SIGXCPU, Siginfo};
use um_uapi::abi::time::{NSEC_PER_SEC, Timeval, USER_HZ};
use um_uapi::{Errno, SysResult};

/// User and system CPU time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub system: u64,
}

impl CpuTimes {
    /// User plus system (Linux `CPUCLOCK_PROF`; also what `CPUCLOCK_SCHED` reads here).
    pub fn total(self) -> u64 {
        self.user.saturating_add(self.system)
    }

    /// Each half the larger of two readings (readings never go backwards).
    fn max(self, o: CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.max(o.user),
            system: self.system.max(o.system),
        }
    }
}

impl std::ops::Add for CpuTimes {
    type Output = CpuTimes;

    /// The sum of two (saturating).
    fn add(self, o: CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_add(o.user),
            system: self.system.saturating_add(o.system),
        }
    }
}

/// Nanoseconds as `clock_t` ticks of `USER_HZ` (Linux `nsec_to_clock_t`, truncating).
pub fn ns_to_clock_t(ns: u64) -> u64 {
    ns / (NSEC_PER_SEC as u64 / USER_HZ)
}

/// Nanoseconds as a `struct timeval` (Linux `ns_to_kernel_old_timeval`, truncating).
pub fn ns_to_timeval(ns: u64) -> Timeval {
    Timeval::from_nanos(ns)
}

/// What a CPU clock measures (`CPUCLOCK_WHICH`, include/linux/posix-timers_types.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuWhich {
    /// `CPUCLOCK_PROF` (0): user + system.
    Prof,
    /// `CPUCLOCK_VIRT` (1): user.
    Virt,
    /// `CPUCLOCK_SCHED` (2): the scheduler's run time (here user + system, exact).
    Sched,
}

/// A CPU-time clock (kernel/time/posix-cpu-timers.c): a process's or a thread's, with id 0
/// meaning the caller's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuClock {
    Process { pid: u32, which: CpuWhich },
    Thread { tid: u32, which: CpuWhich },
}

/// `CLOCK_PROCESS_CPUTIME_ID` / `CLOCK_THREAD_CPUTIME_ID`.
const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
/// `CPUCLOCK_PERTHREAD_MASK`, `CPUCLOCK_CLOCK_MASK`.
const CPUCLOCK_PERTHREAD_MASK: i32 = 4;
const CPUCLOCK_CLOCK_MASK: i32 = 3;

impl CpuClock {
    /// Decodes clock id `id`: `Ok(None)` if it is not a CPU clock (the fixed clocks other than
    /// 2 and 3), `EINVAL` for a negative id that names no CPU clock (`CPUCLOCK_WHICH` of 3 is
    /// `CLOCKFD`, a posix clock device, which does not exist here). The negative encoding is
    /// `MAKE_PROCESS_CPUCLOCK(pid, which) = (~pid << 3) | which` (| 4 for a thread).
    pub fn decode(id: i32) -> SysResult<Option<CpuClock>> {
        match id {
            CLOCK_PROCESS_CPUTIME_ID => {
                return Ok(Some(CpuClock::Process {
                    pid: 0,
                    which: CpuWhich::Sched,
                }));
            }
            CLOCK_THREAD_CPUTIME_ID => {
                return Ok(Some(CpuClock::Thread {
                    tid: 0,
                    which: CpuWhich::Sched,
                }));
            }
            0.. => return Ok(None),
            _ => {}
        }
        let which = match id & CPUCLOCK_CLOCK_MASK {
            0 => CpuWhich::Prof,
            1 => CpuWhich::Virt,
            2 => CpuWhich::Sched,
            _ => return Err(Errno::EINVAL),
        };
        // CPUCLOCK_PID: `~(clock >> 3)`, an arithmetic shift.
        let pid = !(id >> 3);
        let pid = u32::try_from(pid).map_err(|_| Errno::EINVAL)?;
        Ok(Some(if id & CPUCLOCK_PERTHREAD_MASK != 0 {
            CpuClock::Thread { tid: pid, which }
        } else {
            CpuClock::Process { pid, which }
        }))
    }

    /// What the clock measures.
    pub fn which(self) -> CpuWhich {
        match self {
            CpuClock::Process { which, .. } | CpuClock::Thread { which, .. } => which,
        }
    }

    /// The clock's resolution in ns (`posix_cpu_clock_getres`: 1 for `CPUCLOCK_SCHED`, one
    /// tick otherwise; the tick is the 4 ms the coarse clocks report too).
    pub fn resolution_ns(self) -> i64 {
        match self.which() {
            CpuWhich::Sched => 1,
            CpuWhich::Prof | CpuWhich::Virt => TICK_NS,
        }
    }
}

/// The kernel tick this system reports (`HZ` = 250): the resolution of the coarse clocks
/// and of the tick-based CPU clocks.
pub const TICK_NS: i64 = 4_000_000;

/// What a clock of `which` reads from `t`.
pub fn clock_value(t: CpuTimes, which: CpuWhich) -> u64 {
    match which {
        CpuWhich::Virt => t.user,
        CpuWhich::Prof | CpuWhich::Sched => t.total(),
    }
}

/// One guest thread's accounting state (in [`Task`]).
#[derive(Default)]
pub struct TaskCpu {
    /// Host tid of the kernel thread that serves the task (its system time); 0 until it runs.
    server_tid: AtomicI32,
    /// Handoff spins to discount (ns, seccomp engine): the current stub thread's while the
    /// kernel served, and the serving thread's while the guest ran.
    stub_spin: AtomicU64,
    kernel_spin: AtomicU64,
    state: Mutex<TaskCpuState>,
}

#[derive(Default)]
struct TaskCpuState {
    /// User time of the host threads that ran this task before its current one (an exec
    /// from a shared stub moves it to a fresh stub).
    prior_user: u64,
    /// The last reading: readings never go backwards, and it stands in for a host thread that
    /// can no longer be read.
    last: CpuTimes,
    /// Set at exit: the final times, already added to the process's `dead`.
    done: Option<CpuTimes>,
    /// The stub thread's run-time counter, kept open once the task has read its own time
    /// (a thread that reads its CPU clock tends to do so often); closed at exit.
    runtime: Option<um_os_linux::host::ThreadRuntime>,
}

/// One process's sums (in [`Process`]; Linux `signal_struct.utime/stime/cutime/cstime`).
#[derive(Default)]
pub struct ProcCpu {
    state: Mutex<ProcCpuState>,
}

#[derive(Default)]
struct ProcCpuState {
    /// Threads that have exited.
    dead: CpuTimes,
    /// Reaped children (and what they had reaped).
    children: CpuTimes,
}

/// Call on the kernel thread that will serve `t`, before it runs: its CPU time is `t`'s
/// system time.
pub fn start_serving(t: &Task) {
    t.cpu
        .server_tid
        .store(um_os_linux::host::gettid(), Ordering::Release);
}

/// Call on the serving thread after each switch with what
/// [`crate::engine::GuestThread::take_spin`] returned.
pub fn note_spin(t: &Task, (stub, kernel): (u64, u64)) {
    if stub != 0 {
        t.cpu.stub_spin.fetch_add(stub, Ordering::Relaxed);
    }
    if kernel != 0 {
        t.cpu.kernel_spin.fetch_add(kernel, Ordering::Relaxed);
    }
}

/// The run time of `t`'s stub thread `tid` of `pid`: through the kept counter, or (only when
/// `t` reads its own time) a counter opened and kept, or else a one-off read.
fn stub_runtime(
    t: &Task,
    st: &mut TaskCpuState,
    pid: libc::pid_t,
    tid: libc::pid_t,
) -> std::io::Result<u64> {
    use um_os_linux::host::{ThreadRuntime, thread_runtime_ns};
    if let Some(r) = &st.runtime {
        if r.thread() == (pid, tid) {
            return r.read_ns();
        }
        // The task moved to another host thread (exec).
        st.runtime = None;
    }
    let own = crate::current::current().is_some_and(|c| std::ptr::eq(Arc::as_ptr(&c), t));
    if !own {
        return thread_runtime_ns(pid, tid);
    }
    let r = ThreadRuntime::open(pid, tid)?;
    let ns = r.read_ns();
    st.runtime = Some(r);
    ns
}

/// A live thread's times now (the caller holds its state lock).
fn read_live(t: &Task, st: &mut TaskCpuState) -> CpuTimes {
    let mut now = st.last;
    let (pid, tid) = (
        t.host_pid.load(Ordering::Acquire),
        t.host_tid.load(Ordering::Acquire),
    );
    if pid > 0
        && tid > 0
        && let Ok(ns) = stub_runtime(t, st, pid, tid)
    {
        let spun = t.cpu.stub_spin.load(Ordering::Relaxed);
        now.user = st.prior_user.saturating_add(ns.saturating_sub(spun));
    }
    let server = t.cpu.server_tid.load(Ordering::Acquire);
    if server > 0
        && let Ok(ns) = um_os_linux::host::own_thread_cpu_ns(server)
    {
        now.system = ns.saturating_sub(t.cpu.kernel_spin.load(Ordering::Relaxed));
    }
    st.last = st.last.max(now);
    st.last
}

/// The times of one thread (RUSAGE_THREAD, its thread CPU clock, `/proc/PID/task/TID/stat`).
pub fn task_times(t: &Task) -> CpuTimes {
    let mut st = lock(&t.cpu.state);
    match st.done {
        Some(d) => d,
        None => read_live(t, &mut st),
    }
}

/// The times of a whole process: its exited threads and its live ones (RUSAGE_SELF, `times`,
/// the process CPU clock; Linux `thread_group_cputime`).
pub fn process_times(p: &Process) -> CpuTimes {
    let threads: Vec<Arc<Task>> = lock(&p.threads).iter().filter_map(Weak::upgrade).collect();
    let pc = lock(&p.cpu.state);
    let mut sum = pc.dead;
    for t in &threads {
        let mut st = lock(&t.cpu.state);
        if st.done.is_none() {
            sum = sum + read_live(t, &mut st);
        }
    }
    sum
}

/// The times of the process's reaped children (RUSAGE_CHILDREN, `tms_cutime`/`tms_cstime`).
pub fn children_times(p: &Process) -> CpuTimes {
    lock(&p.cpu.state).children
}

/// Call when thread `t` ends, while its host thread still exists: its final times join its
/// process (Linux `__exit_signal`).
pub fn exit_thread(t: &Task) {
    let mut pc = lock(&t.process.cpu.state);
    let mut st = lock(&t.cpu.state);
    if st.done.is_some() {
        return;
    }
    let f = read_live(t, &mut st);
    st.done = Some(f);
    st.runtime = None;
    pc.dead = pc.dead + f;
}

/// Call when an exec moves `t` from its host thread to host thread `tid` of the fresh stub
/// process `pid` (the old one is about to end): the old thread's time is kept, and the task
/// is published as running on the new one (for kicks too).
pub fn move_host_thread(t: &Task, pid: libc::pid_t, tid: libc::pid_t) {
    let mut st = lock(&t.cpu.state);
    let now = read_live(t, &mut st);
    st.prior_user = now.user;
    // The new stub thread's spins are discounted from its own run time.
    t.cpu.stub_spin.store(0, Ordering::Relaxed);
    t.host_pid.store(pid, Ordering::Release);
    t.host_tid.store(tid, Ordering::Release);
}

/// Call when `parent` reaps the zombie `child` (kernel/exit.c `wait_task_zombie`): the
/// child's times and its reaped children's join the parent's `children`.
pub fn reap(parent: &Process, child: &Process) {
    let c = process_times(child) + children_times(child);
    let mut pc = lock(&parent.cpu.state);
    pc.children = pc.children + c;
}

/// Reads CPU clock `clock` as the task `cur` sees it (Linux `posix_cpu_clock_get`); `gettime`
/// false for `clock_getres`, which only checks that the clock exists. A thread clock names a
/// thread of the caller's own process; a process clock a thread-group leader (or, for
/// `clock_gettime`, the caller's own tid). Anything else is `EINVAL` (`pid_for_clock`).
pub fn clock_read(k: &Kernel, cur: &Arc<Task>, clock: CpuClock, gettime: bool) -> SysResult<u64> {
    let times = match clock {
        CpuClock::Thread { tid: 0, .. } => task_times(cur),
        // Numbers of the caller's pid namespace (pid_for_clock's find_vpid).
        CpuClock::Thread { tid, .. } => {
            let t = k.tasks.find_task_vpid(cur, tid).ok_or(Errno::EINVAL)?;
            if !Arc::ptr_eq(&t.process, &cur.process) {
                return Err(Errno::EINVAL);
            }
            task_times(&t)
        }
        CpuClock::Process { pid: 0, .. } => process_times(&cur.process),
        CpuClock::Process { pid, .. } if gettime && pid == cur.pids.own() => {
            process_times(&cur.process)
        }
        CpuClock::Process { pid, .. } => {
            let t = k.tasks.find_task_vpid(cur, pid).ok_or(Errno::EINVAL)?;
            if t.process.pid != t.tid {
                return Err(Errno::EINVAL);
            }
            process_times(&t.process)
        }
    };
    Ok(clock_value(times, clock.which()))
}

// RLIMIT_CPU (kernel/time/posix-cpu-timers.c `check_process_timers`): processes with a finite
// soft limit are watched by one kernel thread, which samples their CPU time often enough not to
// miss a limit by much and sends SIGXCPU at the soft limit and every second after it (raising
// the soft limit by one second each time, as Linux does), SIGKILL at the hard limit.

/// `RLIMIT_CPU`.
pub const RLIMIT_CPU: usize = 0;
use um_uapi::abi::resource::RLIM_INFINITY;
/// Bounds on the watcher's sampling period.
const WATCH_MIN: Duration = Duration::from_millis(10);
const WATCH_MAX: Duration = Duration::from_secs(1);

/// The watched processes, and whether the list changed since the watcher last looked.
#[derive(Default)]
struct Watched {
    procs: Vec<Weak<Process>>,
    changed: bool,
}

static WATCH: LazyLock<(Mutex<Watched>, Condvar)> =
    LazyLock::new(|| (Mutex::new(Watched::default()), Condvar::new()));
static WATCH_KERNEL: OnceLock<Weak<Kernel>> = OnceLock::new();
static WATCH_THREAD: Once = Once::new();

/// What RLIMIT_CPU asks for now, given CPU time `used` (ns) and the limits in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuLimitAction {
    /// Nothing yet; look again after the process may have used this much more CPU time.
    Wait(u64),
    /// The soft limit is reached: SIGXCPU, and the soft limit moves one second on.
    Xcpu,
    /// The hard limit is reached: SIGKILL.
    Kill,
    /// No finite soft limit: stop watching.
    Unwatch,
}

/// The RLIMIT_CPU rule (`check_process_timers`): the hard limit first, then the soft one.
pub fn cpu_limit_action(used: u64, soft: u64, hard: u64) -> CpuLimitAction {
    if soft == RLIM_INFINITY {
        return CpuLimitAction::Unwatch;
    }
    let secs = |s: u64| s.saturating_mul(NSEC_PER_SEC as u64);
    if hard != RLIM_INFINITY && used >= secs(hard) {
        return CpuLimitAction::Kill;
    }
    if used >= secs(soft) {
        return CpuLimitAction::Xcpu;
    }
    let next = if hard == RLIM_INFINITY {
        secs(soft)
    } else {
        secs(soft).min(secs(hard))
    };
    CpuLimitAction::Wait(next - used)
}

/// Starts watching `p` if its RLIMIT_CPU soft limit is finite (call after setrlimit and for a
/// new process, which inherits the limit; Linux `update_rlimit_cpu`,
/// `posix_cpu_timers_init_group`).
pub fn watch_rlimit_cpu(k: &Arc<Kernel>, p: &Arc<Process>) {
    if lock(&p.rlimits)[RLIMIT_CPU].0 == RLIM_INFINITY {
        return;
    }
    WATCH_KERNEL.get_or_init(|| Arc::downgrade(k));
    let (m, cv) = &*WATCH;
    {
        let mut v = lock(m);
        v.procs.retain(|w| w.strong_count() > 0);
        if !v
            .procs
            .iter()
            .any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(p)))
        {
            v.procs.push(Arc::downgrade(p));
        }
        v.changed = true;
    }
    cv.notify_one();
    WATCH_THREAD.call_once(|| {
        if let Err(e) = std::thread::Builder::new()
            .name("rlimit-cpu".into())
            .spawn(watch_thread)
        {
            log::error!("rlimit-cpu: cannot start the watcher thread: {e}");
        }
    });
}

fn watch_thread() {
    let (m, cv) = &*WATCH;
    loop {
        let procs: Vec<Arc<Process>> = {
            let mut v = lock(m);
            v.changed = false;
            v.procs.iter().filter_map(Weak::upgrade).collect()
        };
        let Some(k) = WATCH_KERNEL.get().and_then(Weak::upgrade) else {
            return;
        };
        let mut sleep = WATCH_MAX;
        let mut gone: Vec<*const Process> = Vec::new();
        for p in &procs {
            if lock(&p.exit).is_some() {
                gone.push(Arc::as_ptr(p));
                continue;
            }
            let (soft, hard) = lock(&p.rlimits)[RLIMIT_CPU];
            let used = process_times(p).total();
            match cpu_limit_action(used, soft, hard) {
                CpuLimitAction::Unwatch => gone.push(Arc::as_ptr(p)),
                CpuLimitAction::Kill => {
                    crate::signal::send_to_process(&k, p, Siginfo::new(SIGKILL, SI_KERNEL));
                    gone.push(Arc::as_ptr(p));
                }
                CpuLimitAction::Xcpu => {
                    {
                        let mut rl = lock(&p.rlimits);
                        if rl[RLIMIT_CPU].0 == soft {
                            rl[RLIMIT_CPU].0 = soft.saturating_add(1);
                        }
                    }
                    crate::signal::send_to_process(&k, p, Siginfo::new(SIGXCPU, SI_KERNEL));
                    sleep = sleep.min(WATCH_MIN);
                }
                CpuLimitAction::Wait(ns) => {
                    // CPU time grows at most as fast as wall time on each live thread.
                    let n = p.live_threads(&k).len().max(1) as u64;
                    sleep = sleep.min(Duration::from_nanos(ns / n).max(WATCH_MIN));
                }
            }
        }
        drop(procs);
        let mut v = lock(m);
        if v.changed {
            // Registered while we looked: look again (a new limit may be near), before
            // dropping anything (the registration may be for a process we just let go).
            continue;
        }
        v.procs
            .retain(|w| w.strong_count() > 0 && !gone.contains(&w.as_ptr()));
        if v.procs.is_empty() {
            v = cv.wait(v).unwrap_or_else(|e| e.into_inner());
        } else {
            v = cv
                .wait_timeout(v, sleep)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_timevals() {
        assert_eq!(ns_to_clock_t(0), 0);
        assert_eq!(ns_to_clock_t(9_999_999), 0);
        assert_eq!(ns_to_clock_t(10_000_000), 1);
        assert_eq!(ns_to_clock_t(1_234_000_000), 123);
        let tv = ns_to_timeval(3_000_456_789);
        assert_eq!((tv.tv_sec, tv.tv_usec), (3, 456));
    }

    fn mk(pid: i32, which: i32, thread: bool) -> i32 {
        (!pid << 3) | which | if thread { 4 } else { 0 }
    }

    #[test]
    fn clock_ids_decode() {
        assert_eq!(CpuClock::decode(0), Ok(None));
        assert_eq!(CpuClock::decode(1), Ok(None));
        assert_eq!(CpuClock::decode(11), Ok(None));
        assert_eq!(
            CpuClock::decode(2),
            Ok(Some(CpuClock::Process {
                pid: 0,
                which: CpuWhich::Sched
            }))
        );
        assert_eq!(
            CpuClock::decode(3),
            Ok(Some(CpuClock::Thread {
                tid: 0,
                which: CpuWhich::Sched
            }))
        );
        // clock_getcpuclockid(42): MAKE_PROCESS_CPUCLOCK(42, CPUCLOCK_SCHED) = -342.
        assert_eq!(mk(42, 2, false), -342);
        assert_eq!(
            CpuClock::decode(-342),
            Ok(Some(CpuClock::Process {
                pid: 42,
                which: CpuWhich::Sched
            }))
        );
        assert_eq!(
            CpuClock::decode(mk(7, 1, true)),
            Ok(Some(CpuClock::Thread {
                tid: 7,
                which: CpuWhich::Virt
            }))
        );
        assert_eq!(
            CpuClock::decode(mk(0, 0, false)),
            Ok(Some(CpuClock::Process {
                pid: 0,
                which: CpuWhich::Prof
            }))
        );
        // CPUCLOCK_WHICH 3 is CLOCKFD (a posix clock device): none here.
        assert_eq!(CpuClock::decode(mk(3, 3, false)), Err(Errno::EINVAL));
        assert_eq!(CpuClock::decode(mk(3, 3, true)), Err(Errno::EINVAL));
        // A negative pid encodes to a non-negative id: not a CPU clock.
        assert_eq!(CpuClock::decode(mk(-5, 2, false)), Ok(None));
        assert_eq!(
            CpuClock::decode(i32::MIN | 2),
            Ok(Some(CpuClock::Process {
                pid: (!(i32::MIN >> 3)) as u32,
                which: CpuWhich::Sched
            }))
        );
    }

    #[test]
    fn clock_values_and_resolution() {
        let t = CpuTimes { user: 5, system: 7 };
        assert_eq!(clock_value(t, CpuWhich::Virt), 5);
        assert_eq!(clock_value(t, CpuWhich::Prof), 12);
        assert_eq!(clock_value(t, CpuWhich::Sched), 12);
        let sched = CpuClock::Process {
            pid: 0,
            which: CpuWhich::Sched,
        };
        let virt = CpuClock::Thread {
            tid: 0,
            which: CpuWhich::Virt,
        };
        assert_eq!(sched.resolution_ns(), 1);
        assert_eq!(virt.resolution_ns(), TICK_NS);
    }

    #[test]
    fn accumulation() {
        let a = CpuTimes { user: 1, system: 2 };
        let b = CpuTimes {
            user: 10,
            system: 20,
        };
        assert_eq!(
            (a + b),
            CpuTimes {
                user: 11,
                system: 22
            }
        );
        assert_eq!((a + b).total(), 33);
        let big = CpuTimes {
            user: u64::MAX,
            system: 0,
        };
        assert_eq!((big + b).user, u64::MAX, "saturates");
        assert_eq!(
            CpuTimes { user: 5, system: 1 }.max(CpuTimes { user: 3, system: 4 }),
            CpuTimes { user: 5, system: 4 }
        );
    }

    #[test]
    fn rlimit_cpu_rule() {
        const S: u64 = 1_000_000_000;
        let inf = RLIM_INFINITY;
        assert_eq!(cpu_limit_action(5 * S, inf, inf), CpuLimitAction::Unwatch);
        assert_eq!(cpu_limit_action(0, 1, 2), CpuLimitAction::Wait(S));
        assert_eq!(cpu_limit_action(S / 2, 1, inf), CpuLimitAction::Wait(S / 2));
        assert_eq!(cpu_limit_action(S, 1, 2), CpuLimitAction::Xcpu);
        assert_eq!(cpu_limit_action(S + 1, 2, 2), CpuLimitAction::Wait(S - 1));
        assert_eq!(cpu_limit_action(2 * S, 2, 2), CpuLimitAction::Kill);
        assert_eq!(cpu_limit_action(3 * S, 1, 2), CpuLimitAction::Kill);
        assert_eq!(cpu_limit_action(0, 0, 0), CpuLimitAction::Kill);
        assert_eq!(cpu_limit_action(0, 0, inf), CpuLimitAction::Xcpu);
    }
}
