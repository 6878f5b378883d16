//! Guest test `timers`.
//!
//! * timer_create(CLOCK_MONOTONIC, SIGEV_SIGNAL SIGALRM): a 30 ms one-shot fires once with
//!   si_code SI_TIMER and the sigev_value; a periodic 20 ms timer fires at least 3 times in
//!   roughly the right time; timer_gettime; timer_delete; timer_getoverrun.
//! * setitimer(ITIMER_REAL): SIGALRM arrives; getitimer shows the remaining time; alarm(2).
//! * nanosleep(100 ms) and clock_nanosleep(TIMER_ABSTIME) take about that long; clocks advance.
//!
//! Bounds are generous (the kernel under test may be slow); no timings are printed.
//! Differential: prints the same lines natively and under the user-mode kernel, then UM-TIMERS-OK.

use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use umt::{check, check_eq, ok, say};

static COUNT: AtomicUsize = AtomicUsize::new(0);
static CODE: AtomicI32 = AtomicI32::new(0);
static VALUE: AtomicU64 = AtomicU64::new(0);

extern "C" fn alrm(_sig: i32, info: *mut libc::siginfo_t, _uc: *mut libc::c_void) {
    // SAFETY: valid siginfo from the kernel.
    unsafe {
        CODE.store((*info).si_code, Ordering::SeqCst);
        if (*info).si_code == libc::SI_TIMER {
            VALUE.store((*info).si_value().sival_ptr as u64, Ordering::SeqCst);
        }
    }
    COUNT.fetch_add(1, Ordering::SeqCst);
}

fn ms_since(start: u64) -> u64 {
    (umt::now_ns() - start) / 1_000_000
}

fn in_range(ms: u64, lo: u64, hi: u64, what: &str) {
    check(
        ms >= lo && ms <= hi,
        format!("{what}: took {ms} ms, want {lo}..{hi} ms"),
    );
}

/// Waits (sigsuspend with SIGALRM unblocked) until COUNT reaches `n` or 5 s pass.
fn wait_count(n: usize, what: &str) {
    let start = umt::now_ns();
    let empty = umt::sigset(&[]);
    while COUNT.load(Ordering::SeqCst) < n {
        check(
            ms_since(start) < 5000,
            format!(
                "{what}: only {} SIGALRM(s) after 5 s, want {n}",
                COUNT.load(Ordering::SeqCst)
            ),
        );
        // SAFETY: valid set; returns -1 EINTR after a handler ran.
        unsafe { libc::sigsuspend(&empty) };
    }
}

fn ts(ms: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ms / 1000) as _,
        tv_nsec: ((ms % 1000) * 1_000_000) as _,
    }
}

fn posix_timers() {
    umt::set_handler(libc::SIGALRM, alrm as *const () as usize, 0, true);
    let old = umt::sigprocmask(libc::SIG_BLOCK, &[libc::SIGALRM]);
    // SAFETY: plain data.
    let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
    sev.sigev_notify = libc::SIGEV_SIGNAL;
    sev.sigev_signo = libc::SIGALRM;
    sev.sigev_value = libc::sigval {
        sival_ptr: 0xabc as *mut libc::c_void,
    };
    let mut t: libc::timer_t = std::ptr::null_mut();
    // SAFETY: valid sigevent and out pointer.
    ok(
        unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut t) } as i64,
        "timer_create(CLOCK_MONOTONIC, SIGEV_SIGNAL)",
    );

    COUNT.store(0, Ordering::SeqCst);
    let spec = libc::itimerspec {
        it_interval: ts(0),
        it_value: ts(30),
    };
    let start = umt::now_ns();
    // SAFETY: valid itimerspec; null old value.
    ok(
        unsafe { libc::timer_settime(t, 0, &spec, std::ptr::null_mut()) } as i64,
        "timer_settime one-shot 30 ms",
    );
    wait_count(1, "one-shot timer");
    in_range(ms_since(start), 25, 5000, "one-shot 30 ms timer");
    check_eq(
        CODE.load(Ordering::SeqCst),
        libc::SI_TIMER,
        "si_code of a POSIX timer's signal",
    );
    check_eq(
        VALUE.load(Ordering::SeqCst),
        0xabc,
        "si_value of a POSIX timer's signal",
    );
    umt::sleep_ms(60);
    check_eq(
        COUNT.load(Ordering::SeqCst),
        1,
        "a one-shot timer fires once",
    );
    say("timer_create one-shot: SIGALRM once, si_code=SI_TIMER, si_value=0xabc");

    // SAFETY: plain data.
    let mut cur: libc::itimerspec = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    ok(
        unsafe { libc::timer_gettime(t, &mut cur) } as i64,
        "timer_gettime",
    );
    check_eq(
        (cur.it_value.tv_sec, cur.it_value.tv_nsec),
        (0, 0),
        "timer_gettime of an expired one-shot",
    );

    COUNT.store(0, Ordering::SeqCst);
    let spec = libc::itimerspec {
        it_interval: ts(20),
        it_value: ts(20),
    };
    let start = umt::now_ns();
    // SAFETY: as above.
    ok(
        unsafe { libc::timer_settime(t, 0, &spec, std::ptr::null_mut()) } as i64,
        "timer_settime periodic 20 ms",
    );
    // SAFETY: valid out pointer.
    ok(
        unsafe { libc::timer_gettime(t, &mut cur) } as i64,
        "timer_gettime",
    );
    let left = cur.it_value.tv_sec as u64 * 1000 + cur.it_value.tv_nsec as u64 / 1_000_000;
    check(
        left <= 20 && (cur.it_value.tv_sec, cur.it_value.tv_nsec) != (0, 0),
        format!("timer_gettime of an armed 20 ms timer: {left} ms left"),
    );
    check_eq(
        (cur.it_interval.tv_sec, cur.it_interval.tv_nsec),
        (0, 20_000_000),
        "timer_gettime interval",
    );
    wait_count(3, "periodic timer");
    in_range(ms_since(start), 55, 5000, "three periods of a 20 ms timer");
    let off = libc::itimerspec {
        it_interval: ts(0),
        it_value: ts(0),
    };
    // SAFETY: as above.
    ok(
        unsafe { libc::timer_settime(t, 0, &off, std::ptr::null_mut()) } as i64,
        "timer_settime disarm",
    );
    // SAFETY: timer id from timer_create.
    check(
        unsafe { libc::timer_getoverrun(t) } >= 0,
        "timer_getoverrun",
    );
    // SAFETY: as above.
    ok(unsafe { libc::timer_delete(t) } as i64, "timer_delete");
    say("timer_create periodic 20 ms: at least 3 SIGALRMs; gettime, disarm, delete");

    // Absolute expiry: TIMER_ABSTIME with a CLOCK_MONOTONIC time 40 ms ahead.
    // SAFETY: as above.
    ok(
        unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut t) } as i64,
        "timer_create",
    );
    let mut now = ts(0);
    // SAFETY: valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    let mut at = now;
    at.tv_nsec += 40_000_000;
    if at.tv_nsec >= 1_000_000_000 {
        at.tv_nsec -= 1_000_000_000;
        at.tv_sec += 1;
    }
    COUNT.store(0, Ordering::SeqCst);
    let spec = libc::itimerspec {
        it_interval: ts(0),
        it_value: at,
    };
    // Measured from the reading the expiry was computed from (a loaded host may stall after it).
    let start = now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64;
    // SAFETY: as above.
    ok(
        unsafe { libc::timer_settime(t, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut()) } as i64,
        "timer_settime TIMER_ABSTIME",
    );
    wait_count(1, "absolute timer");
    in_range(ms_since(start), 35, 5000, "absolute timer 40 ms ahead");
    // SAFETY: as above.
    ok(unsafe { libc::timer_delete(t) } as i64, "timer_delete");
    say("timer_settime TIMER_ABSTIME fires at the absolute time");

    // SAFETY: restore the saved mask.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
}

fn itimers() {
    umt::set_handler(libc::SIGALRM, alrm as *const () as usize, 0, true);
    let old = umt::sigprocmask(libc::SIG_BLOCK, &[libc::SIGALRM]);
    COUNT.store(0, Ordering::SeqCst);
    let tv = |ms: i64| libc::timeval {
        tv_sec: (ms / 1000) as _,
        tv_usec: ((ms % 1000) * 1000) as _,
    };
    let it = libc::itimerval {
        it_interval: tv(0),
        it_value: tv(40),
    };
    let start = umt::now_ns();
    // SAFETY: valid itimerval; null old.
    ok(
        unsafe { libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()) } as i64,
        "setitimer(ITIMER_REAL, 40 ms)",
    );
    // SAFETY: plain data.
    let mut cur: libc::itimerval = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    ok(
        unsafe { libc::getitimer(libc::ITIMER_REAL, &mut cur) } as i64,
        "getitimer",
    );
    let left = cur.it_value.tv_sec as i64 * 1000 + cur.it_value.tv_usec as i64 / 1000;
    check(
        left <= 40 && (cur.it_value.tv_sec, cur.it_value.tv_usec) != (0, 0),
        format!("getitimer right after setitimer(40 ms): {left} ms left"),
    );
    wait_count(1, "setitimer");
    in_range(ms_since(start), 35, 5000, "setitimer 40 ms");
    check_eq(
        CODE.load(Ordering::SeqCst),
        libc::SI_KERNEL,
        "si_code of an ITIMER_REAL SIGALRM",
    );
    say("setitimer ITIMER_REAL: getitimer counts down, SIGALRM arrives with si_code=SI_KERNEL");

    // Periodic itimer, then cancel with a zero value.
    COUNT.store(0, Ordering::SeqCst);
    let it = libc::itimerval {
        it_interval: tv(15),
        it_value: tv(15),
    };
    // SAFETY: as above.
    ok(
        unsafe { libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()) } as i64,
        "setitimer periodic",
    );
    wait_count(3, "periodic setitimer");
    let zero = libc::itimerval {
        it_interval: tv(0),
        it_value: tv(0),
    };
    let mut prev: libc::itimerval = cur;
    // SAFETY: valid pointers.
    ok(
        unsafe { libc::setitimer(libc::ITIMER_REAL, &zero, &mut prev) } as i64,
        "setitimer cancel",
    );
    check_eq(
        (prev.it_interval.tv_sec, prev.it_interval.tv_usec),
        (0, 15_000),
        "old interval returned by setitimer",
    );
    say("setitimer periodic: 3 SIGALRMs, cancelled; old value returned");

    // alarm(2): returns the seconds left of the previous alarm.
    // SAFETY: plain integers.
    let prev = unsafe { libc::alarm(10) };
    check_eq(prev, 0, "alarm(10) with no alarm pending");
    // SAFETY: plain integers.
    let prev = unsafe { libc::alarm(0) };
    check(
        (9..=10).contains(&prev),
        format!("alarm(0) after alarm(10) returned {prev}"),
    );
    say("alarm: returns the remaining seconds");
    // SAFETY: restore.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
}

fn sleeps() {
    let start = umt::now_ns();
    let req = ts(100);
    // SAFETY: valid timespec.
    ok(
        unsafe { libc::nanosleep(&req, std::ptr::null_mut()) } as i64,
        "nanosleep 100 ms",
    );
    in_range(ms_since(start), 95, 3000, "nanosleep(100 ms)");
    say("nanosleep 100 ms: about 100 ms");

    let mut now = ts(0);
    // SAFETY: valid timespec.
    ok(
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) } as i64,
        "clock_gettime",
    );
    let mut at = now;
    at.tv_nsec += 80_000_000;
    if at.tv_nsec >= 1_000_000_000 {
        at.tv_nsec -= 1_000_000_000;
        at.tv_sec += 1;
    }
    // Measured from the reading the deadline was computed from (not from a later one, which a
    // loaded host may take well after it).
    let start = now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64;
    // SAFETY: valid timespec; returns an error number directly.
    let r = unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &at,
            std::ptr::null_mut(),
        )
    };
    check(
        r == 0,
        format!("clock_nanosleep TIMER_ABSTIME: {}", umt::ename(r)),
    );
    in_range(ms_since(start), 75, 3000, "clock_nanosleep to 80 ms ahead");
    let mut after = ts(0);
    // SAFETY: valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut after) };
    check(
        (after.tv_sec, after.tv_nsec) >= (at.tv_sec, at.tv_nsec),
        "CLOCK_MONOTONIC after an absolute clock_nanosleep is at or past the deadline",
    );
    say("clock_nanosleep TIMER_ABSTIME: wakes at the deadline");

    let mut rt = ts(0);
    // SAFETY: valid timespec.
    ok(
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut rt) } as i64,
        "clock_gettime(CLOCK_REALTIME)",
    );
    // SAFETY: null is allowed.
    let t = unsafe { libc::time(std::ptr::null_mut()) };
    check(
        (t - rt.tv_sec).abs() <= 2,
        "time() agrees with CLOCK_REALTIME",
    );
    check(rt.tv_sec > 1_600_000_000, "CLOCK_REALTIME is after 2020");
    let mut res = ts(0);
    // SAFETY: valid timespec.
    ok(
        unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut res) } as i64,
        "clock_getres",
    );
    check(
        res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 10_000_000,
        "clock_getres(CLOCK_MONOTONIC) is at most 10 ms",
    );
    let mut a = ts(0);
    let mut b = ts(0);
    // SAFETY: valid timespecs.
    unsafe {
        libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut a);
        let mut x = 0u64;
        for i in 0..3_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut b);
    }
    check(
        (b.tv_sec, b.tv_nsec) >= (a.tv_sec, a.tv_nsec),
        "CLOCK_PROCESS_CPUTIME_ID does not go backwards",
    );
    say("clocks: realtime agrees with time(), resolution fine, cputime monotonic");
}

fn main() {
    umt::init("timers");
    posix_timers();
    itimers();
    sleeps();
    umt::done("timers");
}
