//! Guest test `futex`: raw futex(2) calls, no libc locking on top.
//!
//! * FUTEX_WAIT on a changed value fails with EAGAIN; with a relative timeout it fails with
//!   ETIMEDOUT after roughly that long; FUTEX_WAKE without waiters returns 0.
//! * FUTEX_WAIT_BITSET with an absolute CLOCK_MONOTONIC (and CLOCK_REALTIME) timeout.
//! * A thread blocked in FUTEX_WAIT is woken by FUTEX_WAKE (which returns 1), and four waiters are
//!   all woken one by one.
//! * A shared (non-private) futex in MAP_SHARED anonymous memory works across fork, both ways.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then UM-FUTEX-OK.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use umt::{check, check_eq, expect_err, ok, say};

const PRIVATE: i32 = libc::FUTEX_PRIVATE_FLAG;

fn futex(uaddr: *const AtomicU32, op: i32, val: u32, ts: *const libc::timespec, val3: u32) -> i64 {
    // SAFETY: uaddr points to a live AtomicU32 (or shared mapping) for the whole call; ts is null
    // or a valid timespec; the kernel reads and compares the word atomically.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            uaddr,
            op,
            val,
            ts,
            std::ptr::null::<u32>(),
            val3,
        )
    }
}

fn ts_ms(ms: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ms / 1000) as _,
        tv_nsec: ((ms % 1000) * 1_000_000) as _,
    }
}

fn clock(id: libc::clockid_t) -> libc::timespec {
    let mut t = ts_ms(0);
    // SAFETY: t is a valid timespec.
    ok(
        unsafe { libc::clock_gettime(id, &mut t) } as i64,
        "clock_gettime",
    );
    t
}

fn add_ms(mut t: libc::timespec, ms: i64) -> libc::timespec {
    t.tv_nsec += (ms * 1_000_000) as libc::c_long;
    while t.tv_nsec >= 1_000_000_000 {
        t.tv_nsec -= 1_000_000_000;
        t.tv_sec += 1;
    }
    t
}

/// The elapsed milliseconds must lie in [lo, hi] (generous: the kernel under test is slow).
fn check_elapsed(start: u64, lo: u64, hi: u64, what: &str) {
    let ms = (umt::now_ns() - start) / 1_000_000;
    check(
        ms >= lo && ms <= hi,
        format!("{what}: took {ms} ms, want {lo}..{hi} ms"),
    );
}

fn basic() {
    let w = AtomicU32::new(5);
    expect_err(
        futex(&w, libc::FUTEX_WAIT | PRIVATE, 4, std::ptr::null(), 0),
        libc::EAGAIN,
        "FUTEX_WAIT with a stale value",
    );
    say("wait on changed value: EAGAIN");

    let t = ts_ms(50);
    let start = umt::now_ns();
    expect_err(
        futex(&w, libc::FUTEX_WAIT | PRIVATE, 5, &t, 0),
        libc::ETIMEDOUT,
        "FUTEX_WAIT with a 50 ms timeout",
    );
    check_elapsed(start, 45, 5000, "FUTEX_WAIT 50 ms timeout");
    say("wait with 50ms relative timeout: ETIMEDOUT");

    check_eq(
        ok(
            futex(&w, libc::FUTEX_WAKE | PRIVATE, 1, std::ptr::null(), 0),
            "FUTEX_WAKE",
        ),
        0,
        "FUTEX_WAKE without waiters",
    );
    say("wake without waiters: 0");

    // Absolute timeouts: FUTEX_WAIT_BITSET measures against CLOCK_MONOTONIC, or CLOCK_REALTIME
    // with FUTEX_CLOCK_REALTIME (futex(2)).
    // Start timing before the deadline is computed: a loaded host may stall between the two,
    // which must not make the wait look short.
    let start = umt::now_ns();
    let deadline = add_ms(clock(libc::CLOCK_MONOTONIC), 40);
    expect_err(
        futex(
            &w,
            libc::FUTEX_WAIT_BITSET | PRIVATE,
            5,
            &deadline,
            u32::MAX,
        ),
        libc::ETIMEDOUT,
        "FUTEX_WAIT_BITSET with an absolute CLOCK_MONOTONIC deadline 40 ms ahead",
    );
    check_elapsed(start, 35, 5000, "FUTEX_WAIT_BITSET monotonic deadline");
    say("wait_bitset absolute monotonic deadline: ETIMEDOUT");

    // Start timing before the deadline is computed: a loaded host may stall between the two,
    // which must not make the wait look short.
    let start = umt::now_ns();
    let deadline = add_ms(clock(libc::CLOCK_REALTIME), 40);
    expect_err(
        futex(
            &w,
            libc::FUTEX_WAIT_BITSET | PRIVATE | libc::FUTEX_CLOCK_REALTIME,
            5,
            &deadline,
            u32::MAX,
        ),
        libc::ETIMEDOUT,
        "FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME with a deadline 40 ms ahead",
    );
    check_elapsed(start, 30, 5000, "FUTEX_WAIT_BITSET realtime deadline");
    say("wait_bitset absolute realtime deadline: ETIMEDOUT");

    // A deadline in the past times out at once.
    let past = clock(libc::CLOCK_MONOTONIC);
    expect_err(
        futex(&w, libc::FUTEX_WAIT_BITSET | PRIVATE, 5, &past, u32::MAX),
        libc::ETIMEDOUT,
        "FUTEX_WAIT_BITSET with a deadline in the past",
    );
    say("wait_bitset past deadline: ETIMEDOUT");

    expect_err(
        futex(&w, libc::FUTEX_WAIT_BITSET | PRIVATE, 5, &past, 0),
        libc::EINVAL,
        "FUTEX_WAIT_BITSET with bitset 0",
    );
    say("wait_bitset with bitset 0: EINVAL");
}

/// Wakes one waiter of `w` (value kept at 0), retrying until FUTEX_WAKE reports it woke one.
fn wake_one(w: &AtomicU32, op_flags: i32) {
    for _ in 0..2000 {
        let n = ok(
            futex(w, libc::FUTEX_WAKE | op_flags, 1, std::ptr::null(), 0),
            "FUTEX_WAKE",
        );
        if n == 1 {
            return;
        }
        check(n == 0, format!("FUTEX_WAKE(1) returned {n}"));
        umt::sleep_ms(2);
    }
    umt::fail("FUTEX_WAKE never found the waiter within 4 s (is the waiter queued?)");
}

fn threads() {
    let w = Arc::new(AtomicU32::new(0));
    let w2 = Arc::clone(&w);
    let h =
        std::thread::spawn(move || futex(&*w2, libc::FUTEX_WAIT | PRIVATE, 0, std::ptr::null(), 0));
    wake_one(&w, PRIVATE);
    let r = h.join().unwrap_or(-1);
    check_eq(r, 0, "the woken thread's FUTEX_WAIT result");
    say("thread woken by FUTEX_WAKE: wait returned 0, wake returned 1");

    let w = Arc::new(AtomicU32::new(0));
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let w2 = Arc::clone(&w);
            std::thread::spawn(move || {
                futex(&*w2, libc::FUTEX_WAIT | PRIVATE, 0, std::ptr::null(), 0)
            })
        })
        .collect();
    for _ in 0..4 {
        wake_one(&w, PRIVATE);
    }
    let rs: Vec<i64> = hs.into_iter().map(|h| h.join().unwrap_or(-1)).collect();
    check_eq(rs, vec![0; 4], "four woken waiters' results");
    say("four waiters woken one at a time");

    // A wait with a timeout that is woken before the timeout returns 0, not ETIMEDOUT.
    let w = Arc::new(AtomicU32::new(0));
    let w2 = Arc::clone(&w);
    let h = std::thread::spawn(move || {
        let t = ts_ms(10_000);
        futex(&*w2, libc::FUTEX_WAIT | PRIVATE, 0, &t, 0)
    });
    let start = umt::now_ns();
    wake_one(&w, PRIVATE);
    check_eq(h.join().unwrap_or(-1), 0, "timed FUTEX_WAIT woken early");
    check_elapsed(start, 0, 5000, "timed FUTEX_WAIT woken early");
    say("timed wait woken before its timeout: 0");
}

fn shared_across_fork() {
    // SAFETY: a fresh anonymous shared mapping; checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    check(p != libc::MAP_FAILED, "mmap MAP_SHARED|MAP_ANONYMOUS");
    let words = p as *const AtomicU32;
    // SAFETY: the page is mapped, 4-byte aligned, and lives until munmap at the end.
    let (w, flag) = unsafe { (&*words, &*words.add(1)) };

    // Child waits, parent wakes.
    let pid = umt::fork();
    if pid == 0 {
        flag.store(1, Ordering::SeqCst);
        let r = futex(w, libc::FUTEX_WAIT, 0, std::ptr::null(), 0);
        umt::exit_now(if r == 0 {
            42
        } else {
            10 + umt::errno().min(100)
        });
    }
    while flag.load(Ordering::SeqCst) == 0 {
        umt::sleep_ms(1);
    }
    wake_one(w, 0);
    let st = umt::waitpid(pid, 0);
    check_eq(
        umt::describe_status(st),
        "exited 42".into(),
        "child woken through the shared futex",
    );
    say("shared futex: parent woke child across fork");

    // Parent waits, child changes the value and wakes.
    w.store(0, Ordering::SeqCst);
    let pid = umt::fork();
    if pid == 0 {
        umt::sleep_ms(30);
        w.store(1, Ordering::SeqCst);
        let n = futex(w, libc::FUTEX_WAKE, 1, std::ptr::null(), 0);
        umt::exit_now(if n >= 0 { 0 } else { 1 });
    }
    let t = ts_ms(10_000);
    while w.load(Ordering::SeqCst) == 0 {
        let r = futex(w, libc::FUTEX_WAIT, 0, &t, 0);
        if r < 0 {
            let e = umt::errno();
            check(
                e == libc::EAGAIN || e == libc::EINTR,
                format!("FUTEX_WAIT on the shared word: {}", umt::ename(e)),
            );
        }
    }
    let st = umt::waitpid(pid, 0);
    check_eq(umt::describe_status(st), "exited 0".into(), "waking child");
    say("shared futex: child woke parent across fork");

    // A private futex in shared memory is not found by a shared wake from the other process: here
    // we only check that FUTEX_WAKE on the shared word with no waiters returns 0.
    check_eq(
        ok(
            futex(w, libc::FUTEX_WAKE, 10, std::ptr::null(), 0),
            "FUTEX_WAKE",
        ),
        0,
        "shared FUTEX_WAKE without waiters",
    );
    // SAFETY: p is the mapping made above; nothing references it any more.
    ok(unsafe { libc::munmap(p, 4096) } as i64, "munmap");
}

fn main() {
    umt::init("futex");
    basic();
    threads();
    shared_across_fork();
    umt::done("futex");
}
