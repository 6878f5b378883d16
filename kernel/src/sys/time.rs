//! Time syscalls (Linux kernel/time/): the guest's clocks are the host's.
//!
//! Reading clocks, sleeping (`nanosleep`, `clock_nanosleep`: interruptible waits on the task's
//! waker, see [`crate::wait`]), `times`, `getrusage`, and the calls that would set the clock
//! (`clock_settime`, `settimeofday`, `adjtimex`), which are refused: the guest must never change
//! the host's clock. The CPU-time clocks (`CLOCK_PROCESS_CPUTIME_ID`, `CLOCK_THREAD_CPUTIME_ID`
//! and the negative ids of clock_getcpuclockid(3)), `times` and `getrusage` read the guest's
//! CPU time from [`crate::cputime`]. Also the helpers [`read_timespec_valid`], [`instant_at`] and
//! [`instant_after`] that turn guest times into host deadlines for futexes ([`super::futex`])
//! and timers ([`super::timer`]).

use crate::cputime::{self, CpuClock};
use crate::syscall::{SyscallCtx, SyscallTable};
use crate::wait::{WaitError, wait_event};
use std::time::{Duration, Instant};
use um_uapi::abi::Pod;
use um_uapi::abi::resource::Rusage;
use um_uapi::abi::time::{NSEC_PER_SEC, Timespec, Tms, USER_HZ};
use um_uapi::{Errno, SysResult};

/// The fixed clock ids Linux accepts (CLOCK_REALTIME .. CLOCK_TAI) that are host clocks: all
/// but the CPU-time clocks (2, 3), which are the guest's own ([`cputime_clock`]).
fn host_clock(id: u64) -> SysResult<libc::clockid_t> {
    match id as i32 {
        0 => Ok(libc::CLOCK_REALTIME),
        1 => Ok(libc::CLOCK_MONOTONIC),
        4 => Ok(libc::CLOCK_MONOTONIC_RAW),
        5 => Ok(libc::CLOCK_REALTIME_COARSE),
        6 => Ok(libc::CLOCK_MONOTONIC_COARSE),
        7 => Ok(libc::CLOCK_BOOTTIME),
        8 => Ok(libc::CLOCK_REALTIME_ALARM),
        9 => Ok(libc::CLOCK_BOOTTIME_ALARM),
        11 => Ok(libc::CLOCK_TAI),
        _ => Err(Errno::EINVAL),
    }
}

fn timespec_bytes(s: i64, ns: i64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&s.to_le_bytes());
    b[8..].copy_from_slice(&ns.to_le_bytes());
    b
}

/// The CPU-time clock clock id `id` names, if it names one (`EINVAL` for a malformed
/// negative id). clockid_t is an int: the upper half of the register is ignored.
fn cputime_clock(id: u64) -> SysResult<Option<CpuClock>> {
    CpuClock::decode(id as i32)
}

fn clock_gettime(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (s, ns) = if let Some(clock) = cputime_clock(a[0])? {
        // posix_cpu_clock_get: the guest's CPU time, not this kernel's.
        let ns = cputime::clock_read(c.kernel, c.task, clock, true)?;
        let sec = NSEC_PER_SEC as u64;
        ((ns / sec) as i64, (ns % sec) as i64)
    } else {
        let clk = host_clock(a[0])?;
        let t = um_os_linux::host::clock_gettime(clk).map_err(|_| Errno::EINVAL)?;
        // The caller's time namespace shifts the monotonic and boot-time clocks
        // (kernel/time/posix-timers.c `posix_get_monotonic_timespec`: timens_add_monotonic).
        crate::timens::offsets_of(&c.task.process).to_ns(a[0] as i32, t)
    };
    c.write_bytes(a[1], &timespec_bytes(s, ns))?;
    Ok(0)
}

fn clock_getres(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let res = if let Some(clock) = cputime_clock(a[0])? {
        // posix_cpu_clock_getres: the clock must exist (validate_clock_permissions).
        cputime::clock_read(c.kernel, c.task, clock, false)?;
        clock.resolution_ns()
    } else {
        host_clock(a[0])?;
        if matches!(a[0] as i32, 5 | 6) {
            cputime::TICK_NS
        } else {
            1
        }
    };
    if a[1] != 0 {
        c.write_bytes(a[1], &timespec_bytes(0, res))?;
    }
    Ok(0)
}

fn gettimeofday(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (s, ns) =
        um_os_linux::host::clock_gettime(libc::CLOCK_REALTIME).map_err(|_| Errno::EINVAL)?;
    if a[0] != 0 {
        c.write_bytes(a[0], &timespec_bytes(s, ns / 1000))?;
    }
    if a[1] != 0 {
        c.write_bytes(a[1], &[0u8; 8])?;
    }
    Ok(0)
}

fn time(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (s, _) =
        um_os_linux::host::clock_gettime(libc::CLOCK_REALTIME).map_err(|_| Errno::EINVAL)?;
    if a[0] != 0 {
        c.write_bytes(a[0], &s.to_le_bytes())?;
    }
    Ok(s as u64)
}

/// The host clock `clk` now.
pub(crate) fn now(clk: libc::clockid_t) -> Timespec {
    let (s, ns) = um_os_linux::host::clock_gettime(clk).unwrap_or((0, 0));
    Timespec {
        tv_sec: s,
        tv_nsec: ns,
    }
}

/// A `struct timespec` from the guest: `EFAULT` if unreadable, `EINVAL` unless valid
/// (`timespec64_valid`: seconds not negative, nanoseconds below one second).
pub(crate) fn read_timespec_valid(c: &SyscallCtx<'_>, addr: u64) -> SysResult<Timespec> {
    let b = c.read_bytes(addr, Timespec::SIZE)?;
    let ts = Timespec::from_bytes(&b).ok_or(Errno::EFAULT)?;
    if !ts.is_valid() {
        return Err(Errno::EINVAL);
    }
    Ok(ts)
}

/// A valid timespec as a duration.
pub(crate) fn duration(ts: Timespec) -> Duration {
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// The host instant `d` from now; `None` if that is too far away to represent (never).
pub(crate) fn instant_after(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

/// The host instant at which clock `clk` reads `abs` (now if that has passed); `None` if too
/// far away to represent. Later steps of the host clock are not followed.
pub(crate) fn instant_at(clk: libc::clockid_t, abs: Timespec) -> Option<Instant> {
    let start = Instant::now();
    let n = now(clk);
    if abs <= n {
        return Some(start);
    }
    let mut sec = abs.tv_sec - n.tv_sec;
    let mut nsec = abs.tv_nsec - n.tv_nsec;
    if nsec < 0 {
        nsec += 1_000_000_000;
        sec -= 1;
    }
    start.checked_add(Duration::new(sec as u64, nsec as u32))
}

/// The absolute time `t` of clock `id` in a time namespace with offsets `off`, as the host
/// clock's time ([`crate::timens::Offsets::to_host`]).
pub(crate) fn to_host(off: &crate::timens::Offsets, id: i32, t: Timespec) -> Timespec {
    let ns = u128::from(t.tv_sec.max(0) as u64) * 1_000_000_000 + t.tv_nsec.max(0) as u128;
    let h = off.to_host(id, ns);
    Timespec {
        tv_sec: (h / 1_000_000_000).min(i64::MAX as u128) as i64,
        tv_nsec: (h % 1_000_000_000) as i64,
    }
}

/// Time left until `deadline` as a timespec (zero once passed).
pub(crate) fn remaining(deadline: Instant) -> Timespec {
    let d = deadline.saturating_duration_since(Instant::now());
    Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: i64::from(d.subsec_nanos()),
    }
}

/// Sleeps until `deadline` (`None`: until a signal); `Err` when a signal interrupted it.
fn sleep_until(c: &SyscallCtx<'_>, deadline: Option<Instant>) -> Result<(), ()> {
    match wait_event(c.task, &[], deadline, || None::<()>) {
        Ok(()) | Err(WaitError::TimedOut) => Ok(()),
        Err(WaitError::Interrupted) => Err(()),
    }
}

/// nanosleep (kernel/time/hrtimer.c). Interrupted by a signal it writes the time left to `rem`
/// and returns `ERESTARTNOHAND`: a handler sees `EINTR`; with no handler the call restarts.
/// (Linux uses a restart block that resumes with the time left; here a restart sleeps the
/// full request again.)
fn nanosleep(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let req = read_timespec_valid(c, a[0])?;
    let deadline = instant_after(duration(req));
    if sleep_until(c, deadline).is_err() {
        if a[1] != 0 {
            let rem = deadline.map(remaining).unwrap_or(req);
            c.write_bytes(a[1], &rem.as_bytes())?;
        }
        return Err(Errno::ERESTARTNOHAND);
    }
    Ok(0)
}

/// Which clocks `clock_nanosleep` sleeps on (kernel/time/posix-timers.c `clockid_to_kclock`
/// and each clock's `nsleep`): `EINVAL` for unknown ids, `EOPNOTSUPP` for clocks without
/// `nsleep`: the thread CPU clock (posix-cpu-timers.c `clock_thread` has none; libcs turn
/// that into EINVAL themselves), raw and coarse.
fn nsleep_clock(id: u64) -> SysResult<libc::clockid_t> {
    match id as i32 {
        // Other processes' CPU clocks have no sleep here (approximating them by wall time
        // would be no better than refusing).
        i32::MIN..=-1 => Err(Errno::EINVAL),
        3..=6 => Err(Errno::EOPNOTSUPP),
        // The process CPU clock is approximated by wall time: it sleeps at least as long.
        2 => Ok(libc::CLOCK_MONOTONIC),
        // The alarm clocks behave as their base clocks (no suspend here).
        8 => Ok(libc::CLOCK_REALTIME),
        9 => Ok(libc::CLOCK_BOOTTIME),
        _ => host_clock(id),
    }
}

/// clock_nanosleep. Absolute sleeps interrupted by a signal return `ERESTARTNOHAND` (as Linux
/// `hrtimer_nanosleep` does); relative ones write the time left to `rem` first.
fn clock_nanosleep(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let clk = nsleep_clock(a[0])?;
    let req = read_timespec_valid(c, a[2])?;
    let abs = a[1] as u32 & um_uapi::abi::time::TIMER_ABSTIME != 0;
    let deadline = if abs {
        // An absolute time on a namespaced clock is a host time minus the offset
        // (hrtimer_nanosleep's caller, common_nsleep_timens: timens_ktime_to_host).
        let off = crate::timens::offsets_of(&c.task.process);
        instant_at(clk, to_host(&off, a[0] as i32, req))
    } else {
        instant_after(duration(req))
    };
    if sleep_until(c, deadline).is_err() {
        if !abs && a[3] != 0 {
            let rem = deadline.map(remaining).unwrap_or(req);
            c.write_bytes(a[3], &rem.as_bytes())?;
        }
        return Err(Errno::ERESTARTNOHAND);
    }
    Ok(0)
}

/// times (kernel/sys.c `do_sys_times`): the process's CPU times and its reaped children's,
/// in `USER_HZ` ticks; the result is the host's uptime in ticks, which is what callers use
/// (differences of two calls).
fn times(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[0] != 0 {
        let p = &c.task.process;
        let (me, ch) = (cputime::process_times(p), cputime::children_times(p));
        let t = |ns: u64| cputime::ns_to_clock_t(ns) as i64;
        let tms = Tms {
            tms_utime: t(me.user),
            tms_stime: t(me.system),
            tms_cutime: t(ch.user),
            tms_cstime: t(ch.system),
        };
        c.write_bytes(a[0], &tms.as_bytes())?;
    }
    let up = now(libc::CLOCK_BOOTTIME);
    Ok(up.tv_sec as u64 * USER_HZ + up.tv_nsec as u64 / (1_000_000_000 / USER_HZ))
}

/// getrusage (kernel/sys.c): CPU times of the process (RUSAGE_SELF), of the calling thread
/// (RUSAGE_THREAD) or of the reaped children (RUSAGE_CHILDREN); `ru_maxrss` is the largest
/// resident size in KiB, of this process (its address spaces' high-water marks, exec
/// included) or of its reaped children. The counters are not measured (zero).
fn getrusage(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let who = a[0] as i32;
    if !(-1..=1).contains(&who) {
        return Err(Errno::EINVAL);
    }
    let mut ru = Rusage::default();
    let p = &c.task.process;
    let t = match who {
        -1 => cputime::children_times(p),
        1 => cputime::task_times(c.task),
        _ => cputime::process_times(p),
    };
    ru.ru_utime = cputime::ns_to_timeval(t.user);
    ru.ru_stime = cputime::ns_to_timeval(t.system);
    ru.ru_maxrss = if who == -1 {
        // RUSAGE_CHILDREN: the largest of the reaped children (and their descendants).
        p.cmaxrss_kb.load(std::sync::atomic::Ordering::Relaxed)
    } else {
        p.maxrss_now_kb()
    } as i64;
    c.write_bytes(a[1], &ru.as_bytes())?;
    Ok(0)
}

/// Whether the caller has CAP_SYS_TIME. Nobody has, not even root: the guest's clock is the
/// host's, which this kernel must never change (as in a container without CAP_SYS_TIME).
const HAS_CAP_SYS_TIME: bool = false;

/// clock_settime: only CLOCK_REALTIME can be set; the time is checked, then refused. Other
/// clocks are `EINVAL` (kernel/time/posix-timers.c: no `clock_set`), including
/// CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID (`clock_process`/`clock_thread` have
/// none), except the negative CPU-clock ids, which are `EPERM` once the clock is found to
/// exist (posix-cpu-timers.c `posix_cpu_clock_set`).
fn clock_settime(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    match a[0] as i32 {
        0 => {}
        // posix_cpu_clock_set: an existing CPU clock cannot be set.
        id if id < 0 => {
            let clock = cputime_clock(a[0])?.ok_or(Errno::EINVAL)?;
            c.read_bytes(a[1], Timespec::SIZE)?;
            cputime::clock_read(c.kernel, c.task, clock, false)?;
            return Err(Errno::EPERM);
        }
        _ => return Err(Errno::EINVAL),
    }
    read_timespec_valid(c, a[1])?;
    Err(Errno::EPERM)
}

/// settimeofday (kernel/time/time.c): arguments are checked as Linux does, then refused.
fn settimeofday(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[0] != 0 {
        let b = c.read_bytes(a[0], 16)?;
        let usec = i64::from_le_bytes(b[8..16].try_into().map_err(|_| Errno::EFAULT)?);
        let sec = i64::from_le_bytes(b[..8].try_into().map_err(|_| Errno::EFAULT)?);
        if !(0..1_000_000).contains(&usec) || sec < 0 {
            return Err(Errno::EINVAL);
        }
    }
    if a[1] != 0 {
        c.read_bytes(a[1], 8)?;
    }
    Err(Errno::EPERM)
}

/// Size of `struct __kernel_timex` on 64-bit.
const TIMEX_SIZE: usize = 208;
/// `ADJ_ADJTIME` (kernel-internal bit of the `adjtime` modes).
const ADJ_ADJTIME: u32 = 0x8000;
/// `ADJ_OFFSET_SINGLESHOT` (kernel-internal bit).
const ADJ_OFFSET_SINGLESHOT: u32 = 0x0001;
/// `ADJ_OFFSET_READONLY`.
const ADJ_OFFSET_READONLY: u32 = 0x2000;

/// The read-only NTP state: a synchronised clock, so the result is `TIME_OK` (0).
fn timex_state(mut t: Vec<u8>) -> Vec<u8> {
    let put =
        |t: &mut Vec<u8>, off: usize, v: i64| t[off..off + 8].copy_from_slice(&v.to_le_bytes());
    let n = now(libc::CLOCK_REALTIME);
    put(&mut t, 8, 0); // offset
    put(&mut t, 16, 0); // freq
    put(&mut t, 24, 0); // maxerror
    put(&mut t, 32, 0); // esterror
    t[40..44].copy_from_slice(&0i32.to_le_bytes()); // status: no STA_UNSYNC
    put(&mut t, 48, 2); // constant
    put(&mut t, 56, 1); // precision (us)
    put(&mut t, 64, 500 << 16); // tolerance: MAXFREQ 500 ppm, scaled
    put(&mut t, 72, n.tv_sec);
    put(&mut t, 80, n.tv_nsec / 1000);
    put(&mut t, 88, (1_000_000 / USER_HZ) as i64); // tick (us)
    for off in [96, 104, 120, 128, 136, 144, 152] {
        put(&mut t, off, 0);
    }
    t[112..116].copy_from_slice(&0i32.to_le_bytes()); // shift
    t[160..164].copy_from_slice(&0i32.to_le_bytes()); // tai
    t
}

/// adjtimex / clock_adjtime(CLOCK_REALTIME) (kernel/time/ntp.c `__do_adjtimex`): reading the
/// state works for everyone; any change needs CAP_SYS_TIME, which nobody has here.
fn do_adjtimex(c: &mut SyscallCtx<'_>, buf: u64) -> SysResult {
    let t = c.read_bytes(buf, TIMEX_SIZE)?;
    let modes = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
    if modes & ADJ_ADJTIME != 0 {
        if modes & ADJ_OFFSET_SINGLESHOT == 0 {
            return Err(Errno::EINVAL);
        }
        if modes & ADJ_OFFSET_READONLY == 0 && !HAS_CAP_SYS_TIME {
            return Err(Errno::EPERM);
        }
    } else if modes != 0 && !HAS_CAP_SYS_TIME {
        return Err(Errno::EPERM);
    }
    c.write_bytes(buf, &timex_state(t))?;
    Ok(0) // TIME_OK
}

fn adjtimex(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_adjtimex(c, a[0])
}

fn clock_adjtime(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    match a[0] as i32 {
        0 => do_adjtimex(c, a[1]),
        1..=9 | 11 => Err(Errno::EOPNOTSUPP),
        _ => Err(Errno::EINVAL),
    }
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("clock_gettime", clock_gettime);
    t.register("clock_getres", clock_getres);
    t.register("gettimeofday", gettimeofday);
    t.register("time", time);
    t.register("nanosleep", nanosleep);
    t.register("clock_nanosleep", clock_nanosleep);
    t.register("times", times);
    t.register("getrusage", getrusage);
    t.register("clock_settime", clock_settime)
        .partial("arguments checked as Linux does, then EPERM: the clock is never set");
    t.register("settimeofday", settimeofday)
        .partial("arguments checked as Linux does, then EPERM: the clock is never set");
    t.register("adjtimex", adjtimex)
        .partial("reads the NTP state; any change is EPERM (no CAP_SYS_TIME here)");
    t.register("clock_adjtime", clock_adjtime)
        .partial("CLOCK_REALTIME as adjtimex; the other clocks are EOPNOTSUPP or EINVAL");
}
