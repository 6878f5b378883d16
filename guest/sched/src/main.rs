//! Differential test of scheduling policy, nice values and CPU affinity (issue 24 item 7;
//! Linux kernel/sched/syscalls.c, kernel/sys.c `setpriority`/`getpriority`, sched(7),
//! sched_setattr(2), setpriority(2), sched_setaffinity(2)).
//!
//! `sched WORKDIR [unpriv]`. Every answer is printed (`ok N`, the errno name, or the values
//! read back), so the gate's comparison with the native run shows the first difference.
//! Output never depends on the machine: CPUs are named by their place in the caller's
//! starting mask (`first`, `last`), nice values of a user relative to where it started.
//!
//! * Everyone: the priority ranges of each policy, the errors of every call (bad policy,
//!   priority, pid, pointer, size, flags), SCHED_OTHER/BATCH/IDLE for itself.
//! * Root (left out with `unpriv`): SCHED_FIFO and SCHED_RR with priorities, setparam,
//!   rr_get_interval, SCHED_RESET_ON_FORK (a child of a real-time or negative-nice parent
//!   starts at SCHED_OTHER nice 0; the flag itself is not inherited), nice below 0 and the
//!   clamps at -20 and 19, PRIO_PGRP over a group of two, PRIO_USER over a uid's processes,
//!   sched_setattr's nice and its KEEP flags.
//! * A user (a child of root that became uid 65534, or the whole program with `unpriv`):
//!   raises its nice but may not lower it (EACCES, RLIMIT_NICE 0), may not touch a root
//!   process (EPERM) but may read it, may not take SCHED_FIFO (EPERM, RLIMIT_RTPRIO 0), may
//!   not leave SCHED_IDLE or clear SCHED_RESET_ON_FORK (EPERM), sched_setattr of a lower nice
//!   (EPERM).
//! * Affinity: the starting mask is returned as set; pinned to its first and to its last
//!   CPU, the thread runs there (getcpu, raw and through the C library, after yields), a
//!   forked child and a new thread inherit the mask, another thread keeps its own; an empty or
//!   offline-only mask is EINVAL, a short buffer EINVAL, a bad pointer EFAULT, a dead pid ESRCH.
//!
//! The raw system calls are used throughout: musl's sched_setscheduler and friends are stubs
//! that return ENOSYS, and getpriority's raw return is `20 - nice` (checked against the C
//! library's).

use umt::{ename, errno, fork, say, waitpid};

const SCHED_OTHER: i64 = 0;
const SCHED_FIFO: i64 = 1;
const SCHED_RR: i64 = 2;
const SCHED_BATCH: i64 = 3;
const SCHED_IDLE: i64 = 5;
const SCHED_DEADLINE: i64 = 6;
const SCHED_RESET_ON_FORK: i64 = 0x4000_0000;
const PRIO_PROCESS: i64 = 0;
const PRIO_PGRP: i64 = 1;
const PRIO_USER: i64 = 2;
const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;
const SCHED_FLAG_KEEP_POLICY: u64 = 0x08;
const SCHED_FLAG_KEEP_PARAMS: u64 = 0x10;
/// An address no program has mapped (the first page).
const BAD: usize = 8;
/// A uid nothing else runs as.
const OTHER_UID: u32 = 4242;
const NOBODY: u32 = 65534;

fn sys(nr: libc::c_long, a: [usize; 4]) -> i64 {
    // SAFETY: every call here passes integers or pointers to live buffers of the right size
    // (or deliberately bad addresses, which the kernel must refuse with EFAULT).
    unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3]) as i64 }
}

fn res(r: i64) -> String {
    if r < 0 {
        ename(errno())
    } else {
        format!("ok {r}")
    }
}

fn line(what: &str, r: impl AsRef<str>) {
    say(format!("{what}: {}", r.as_ref()));
}

fn getpid() -> i32 {
    // SAFETY: plain getpid.
    unsafe { libc::getpid() }
}

fn gettid() -> i32 {
    sys(libc::SYS_gettid, [0; 4]) as i32
}

fn setscheduler(pid: i32, policy: i64, prio: i32) -> i64 {
    let p = prio;
    sys(
        libc::SYS_sched_setscheduler,
        [pid as usize, policy as usize, &p as *const i32 as usize, 0],
    )
}

fn getscheduler(pid: i32) -> i64 {
    sys(libc::SYS_sched_getscheduler, [pid as usize, 0, 0, 0])
}

fn getparam(pid: i32) -> String {
    let mut p: i32 = -1;
    let r = sys(
        libc::SYS_sched_getparam,
        [pid as usize, &mut p as *mut i32 as usize, 0, 0],
    );
    if r < 0 {
        ename(errno())
    } else {
        format!("prio {p}")
    }
}

fn setparam(pid: i32, prio: i32) -> i64 {
    let p = prio;
    sys(
        libc::SYS_sched_setparam,
        [pid as usize, &p as *const i32 as usize, 0, 0],
    )
}

fn policy_name(p: i64) -> String {
    if p < 0 {
        return ename(errno());
    }
    let base = match p & !SCHED_RESET_ON_FORK {
        SCHED_OTHER => "OTHER".to_string(),
        SCHED_FIFO => "FIFO".to_string(),
        SCHED_RR => "RR".to_string(),
        SCHED_BATCH => "BATCH".to_string(),
        SCHED_IDLE => "IDLE".to_string(),
        SCHED_DEADLINE => "DEADLINE".to_string(),
        n => format!("policy {n}"),
    };
    if p & SCHED_RESET_ON_FORK != 0 {
        format!("{base}|RESET_ON_FORK")
    } else {
        base
    }
}

fn show_policy(what: &str, pid: i32) {
    line(what, policy_name(getscheduler(pid)));
}

/// The nice value through the raw call (`20 - nice`), as a nice value, and the C library's
/// answer, which must agree.
fn nice_of(which: i64, who: u32) -> Result<i32, String> {
    let raw = sys(libc::SYS_getpriority, [which as usize, who as usize, 0, 0]);
    if raw < 0 {
        return Err(ename(errno()));
    }
    // SAFETY: errno is the calling thread's; getpriority takes plain integers.
    let lib = unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(which as _, who as _)
    };
    if lib == -1 && errno() != 0 {
        return Err(format!("raw {raw} but libc {}", ename(errno())));
    }
    if lib != 20 - raw as i32 {
        return Err(format!("raw {raw} (20 - nice) but libc nice {lib}"));
    }
    Ok(lib)
}

fn show_nice(what: &str, which: i64, who: u32) {
    line(
        what,
        match nice_of(which, who) {
            Ok(n) => format!("nice {n}"),
            Err(e) => e,
        },
    );
}

fn setprio(which: i64, who: u32, nice: i32) -> i64 {
    sys(
        libc::SYS_setpriority,
        [which as usize, who as usize, nice as usize, 0],
    )
}

fn rr_interval(pid: i32) -> String {
    let mut ts = libc::timespec {
        tv_sec: -1,
        tv_nsec: -1,
    };
    let r = sys(
        libc::SYS_sched_rr_get_interval,
        [pid as usize, &mut ts as *mut libc::timespec as usize, 0, 0],
    );
    if r < 0 {
        ename(errno())
    } else {
        format!("{}.{:09}", ts.tv_sec, ts.tv_nsec)
    }
}

/// `struct sched_attr` (include/uapi/linux/sched/types.h), VER1 (56 bytes) and room after it.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Attr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    prio: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
    tail: [u64; 2],
}

fn getattr(pid: i32, size: u32, flags: u32) -> String {
    let mut a = Attr::default();
    let r = sys(
        libc::SYS_sched_getattr,
        [
            pid as usize,
            &mut a as *mut Attr as usize,
            size as usize,
            flags as usize,
        ],
    );
    if r < 0 {
        return ename(errno());
    }
    // runtime/deadline/period and the clamps are left out: Linux 6.12+ reports the fair
    // class's slice in sched_runtime, and the clamps exist only with CONFIG_UCLAMP_TASK.
    format!(
        "size {} policy {} flags {:#x} nice {} prio {}",
        a.size,
        policy_name(i64::from(a.policy)),
        a.flags,
        a.nice,
        a.prio
    )
}

fn setattr(pid: i32, a: &mut Attr, flags: u32) -> i64 {
    sys(
        libc::SYS_sched_setattr,
        [pid as usize, a as *mut Attr as usize, flags as usize, 0],
    )
}

fn attr(policy: i64, flags: u64, nice: i32, prio: u32) -> Attr {
    Attr {
        size: 48,
        policy: policy as u32,
        flags,
        nice,
        prio,
        ..Attr::default()
    }
}

fn unsafe_zeroed_siginfo() -> libc::siginfo_t {
    // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
    unsafe { std::mem::zeroed() }
}

/// A pid that no process has: a child that exited and was reaped.
fn dead_pid() -> i32 {
    let pid = fork();
    if pid == 0 {
        umt::exit_now(0);
    }
    waitpid(pid, 0);
    pid
}

/// Waits for one byte on `fd` (a child's "ready").
fn wait_ready(fd: i32) {
    let mut b = [0u8; 1];
    if umt::read_raw(fd, &mut b) != 1 {
        umt::fail("a child did not get ready");
    }
}

fn kill_wait(pid: i32) {
    // SAFETY: plain kill of our own child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    waitpid(pid, 0);
}

/// The checks that need no privilege.
fn common() {
    for (name, p) in [
        ("OTHER", SCHED_OTHER),
        ("FIFO", SCHED_FIFO),
        ("RR", SCHED_RR),
        ("BATCH", SCHED_BATCH),
        ("IDLE", SCHED_IDLE),
        ("DEADLINE", SCHED_DEADLINE),
        ("4", 4),
        ("-1", -1),
    ] {
        let max = sys(libc::SYS_sched_get_priority_max, [p as usize, 0, 0, 0]);
        let max = res(max);
        let min = sys(libc::SYS_sched_get_priority_min, [p as usize, 0, 0, 0]);
        line(
            &format!("priority range {name}"),
            format!("{} .. {max}", res(min)),
        );
    }
    show_policy("policy at start", 0);
    line("param at start", getparam(0));
    line("getattr at start", getattr(0, 48, 0));
    // A zombie (exited, not yet reaped) is still there to ask.
    let z = fork();
    if z == 0 {
        umt::exit_now(0);
    }
    let mut info: libc::siginfo_t = unsafe_zeroed_siginfo();
    // SAFETY: `info` is a valid siginfo_t; WNOWAIT leaves the child a zombie.
    unsafe {
        libc::waitid(
            libc::P_PID,
            z as u32,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        )
    };
    show_policy("getscheduler of a zombie", z);
    line("getparam of a zombie", getparam(z));
    show_nice("getpriority of a zombie", PRIO_PROCESS, z as u32);
    waitpid(z, 0);
    let dead = dead_pid();
    // The errors, each call in the order Linux checks its arguments.
    line("getscheduler -1", policy_name(getscheduler(-1)));
    line("getscheduler dead pid", policy_name(getscheduler(dead)));
    line("setscheduler pid -1", res(setscheduler(-1, SCHED_OTHER, 0)));
    line("setscheduler policy -1", res(setscheduler(0, -1, 0)));
    line("setscheduler policy 4", res(setscheduler(0, 4, 0)));
    // Not 7: SCHED_EXT on Linux 6.12+ kernels built with it.
    line("setscheduler policy 8", res(setscheduler(0, 8, 0)));
    line(
        "setscheduler DEADLINE",
        res(setscheduler(0, SCHED_DEADLINE, 0)),
    );
    line(
        "setscheduler OTHER prio 1",
        res(setscheduler(0, SCHED_OTHER, 1)),
    );
    line(
        "setscheduler FIFO prio 0",
        res(setscheduler(0, SCHED_FIFO, 0)),
    );
    line(
        "setscheduler FIFO prio 100",
        res(setscheduler(0, SCHED_FIFO, 100)),
    );
    line(
        "setscheduler FIFO prio -1",
        res(setscheduler(0, SCHED_FIFO, -1)),
    );
    line(
        "setscheduler NULL param",
        res(sys(libc::SYS_sched_setscheduler, [0, 0, 0, 0])),
    );
    line(
        "setscheduler bad param",
        res(sys(libc::SYS_sched_setscheduler, [0, 0, BAD, 0])),
    );
    line(
        "setscheduler dead pid",
        res(setscheduler(dead, SCHED_OTHER, 0)),
    );
    line(
        "getparam NULL",
        res(sys(libc::SYS_sched_getparam, [0, 0, 0, 0])),
    );
    line(
        "getparam bad pointer",
        res(sys(libc::SYS_sched_getparam, [0, BAD, 0, 0])),
    );
    line("getparam pid -1", getparam(-1));
    line("getparam dead pid", getparam(dead));
    line("setparam OTHER prio 5", res(setparam(0, 5)));
    line(
        "setparam NULL",
        res(sys(libc::SYS_sched_setparam, [0, 0, 0, 0])),
    );
    line("setparam dead pid", res(setparam(dead, 0)));
    line("rr_get_interval pid -1", rr_interval(-1));
    line("rr_get_interval dead pid", rr_interval(dead));
    line(
        "rr_get_interval bad pointer",
        res(sys(libc::SYS_sched_rr_get_interval, [0, BAD, 0, 0])),
    );
    // The fair class's slice depends on the host's load and kernel: only that it answers.
    let r = rr_interval(0);
    line(
        "rr_get_interval OTHER",
        if r.contains('.') { "ok" } else { r.as_str() },
    );
    for (what, pol) in [
        ("BATCH", SCHED_BATCH),
        ("OTHER", SCHED_OTHER),
        ("BATCH|RESET_ON_FORK", SCHED_BATCH | SCHED_RESET_ON_FORK),
    ] {
        line(
            &format!("setscheduler {what}"),
            res(setscheduler(0, pol, 0)),
        );
        show_policy(&format!("policy after {what}"), 0);
        line(&format!("getattr after {what}"), getattr(0, 48, 0));
    }
    // The flag goes with the policy; a child of a non-real-time parent keeps the policy.
    let pid = fork();
    if pid == 0 {
        show_policy("child of BATCH|RESET_ON_FORK", 0);
        umt::exit_now(0);
    }
    waitpid(pid, 0);
    line("getattr size 47", getattr(0, 47, 0));
    line("getattr size 64 (a larger struct)", getattr(0, 64, 0));
    line("getattr size 4097", getattr(0, 4097, 0));
    line("getattr flags 1", getattr(0, 48, 1));
    line("getattr dead pid", getattr(dead, 48, 0));
    line("getattr pid -1", getattr(-1, 48, 0));
    line(
        "getattr NULL",
        res(sys(libc::SYS_sched_getattr, [0, 0, 48, 0])),
    );
    line(
        "getattr bad pointer",
        res(sys(libc::SYS_sched_getattr, [0, BAD, 48, 0])),
    );
    let mut a = attr(SCHED_OTHER, 0, 0, 0);
    a.size = 1;
    let r = setattr(0, &mut a, 0);
    line(
        "setattr size 1",
        format!("{} (size now {})", res(r), a.size),
    );
    let mut a = attr(SCHED_OTHER, 0, 0, 0);
    a.size = 64;
    a.tail[0] = 1;
    let r = setattr(0, &mut a, 0);
    line(
        "setattr size 64, non-zero tail",
        format!("{} (size now {})", res(r), a.size),
    );
    let mut a = attr(SCHED_OTHER, 0, 0, 0);
    a.size = 64;
    line("setattr size 64, zero tail", res(setattr(0, &mut a, 0)));
    let mut a = attr(SCHED_OTHER, 0, 0, 0);
    a.size = 0;
    line("setattr size 0 (VER0)", res(setattr(0, &mut a, 0)));
    let mut a = attr(SCHED_OTHER, 0, 0, 0);
    line("setattr flags argument 1", res(setattr(0, &mut a, 1)));
    let mut a = attr(SCHED_OTHER, 0x80, 0, 0);
    line("setattr unknown sched_flags", res(setattr(0, &mut a, 0)));
    let mut a = attr(-1, 0, 0, 0);
    line("setattr policy -1", res(setattr(0, &mut a, 0)));
    let mut a = attr(SCHED_DEADLINE, 0, 0, 0);
    line(
        "setattr DEADLINE without parameters",
        res(setattr(0, &mut a, 0)),
    );
    let mut a = attr(SCHED_OTHER, 0, 0, 0);
    line("setattr dead pid", res(setattr(dead, &mut a, 0)));
    line(
        "setattr NULL",
        res(sys(libc::SYS_sched_setattr, [0, 0, 0, 0])),
    );
    line(
        "setattr bad pointer",
        res(sys(libc::SYS_sched_setattr, [0, BAD, 0, 0])),
    );
    line("setscheduler IDLE", res(setscheduler(0, SCHED_IDLE, 0)));
    show_policy("policy after IDLE", 0);
    // A child of an IDLE parent is IDLE.
    let pid = fork();
    if pid == 0 {
        show_policy("child of IDLE", 0);
        umt::exit_now(0);
    }
    waitpid(pid, 0);
    // getpriority/setpriority argument errors.
    for (what, which) in [("which 3", 3), ("which -1", -1)] {
        show_nice(&format!("getpriority {what}"), which, 0);
        line(&format!("setpriority {what}"), res(setprio(which, 0, 0)));
    }
    show_nice("getpriority dead pid", PRIO_PROCESS, dead as u32);
    line(
        "setpriority dead pid",
        res(setprio(PRIO_PROCESS, dead as u32, 0)),
    );
    show_nice("getpriority PRIO_PGRP dead group", PRIO_PGRP, dead as u32);
    show_nice("getpriority PRIO_USER 4343 (no process)", PRIO_USER, 4343);
    line(
        "setpriority PRIO_USER 4343 (no process)",
        res(setprio(PRIO_USER, 4343, 0)),
    );
}

/// Root: real-time policies, reset-on-fork, negative nice, PRIO_PGRP and PRIO_USER.
fn as_root() {
    line(
        "root: setscheduler OTHER",
        res(setscheduler(0, SCHED_OTHER, 0)),
    );
    line(
        "root: setscheduler FIFO 10",
        res(setscheduler(0, SCHED_FIFO, 10)),
    );
    show_policy("root: policy", 0);
    line("root: param", getparam(0));
    line("root: rr_get_interval FIFO", rr_interval(0));
    line("root: setparam 50", res(setparam(0, 50)));
    line("root: param after setparam", getparam(0));
    line("root: setparam 0 (FIFO)", res(setparam(0, 0)));
    line("root: setparam 100", res(setparam(0, 100)));
    line("root: getattr FIFO", getattr(0, 48, 0));
    line(
        "root: setscheduler RR 20",
        res(setscheduler(0, SCHED_RR, 20)),
    );
    line("root: rr_get_interval RR", rr_interval(0));
    line(
        "root: setscheduler RR|RESET_ON_FORK 30",
        res(setscheduler(0, SCHED_RR | SCHED_RESET_ON_FORK, 30)),
    );
    show_policy("root: policy", 0);
    line("root: getattr RR|RESET_ON_FORK", getattr(0, 48, 0));
    let pid = fork();
    if pid == 0 {
        show_policy("root: child of RR|RESET_ON_FORK", 0);
        line("root: child's param", getparam(0));
        umt::exit_now(0);
    }
    waitpid(pid, 0);
    // Seen from the parent, right after fork (LTP sched_setscheduler04).
    let pid = fork();
    if pid == 0 {
        umt::exit_now(0);
    }
    show_policy("root: the child, seen by its parent", pid);
    line("root: the child's param, seen by its parent", getparam(pid));
    waitpid(pid, 0);
    // Root may clear the flag.
    line(
        "root: setscheduler OTHER (clears RESET_ON_FORK)",
        res(setscheduler(0, SCHED_OTHER, 0)),
    );
    show_policy("root: policy", 0);
    line("root: getattr OTHER", getattr(0, 48, 0));
    // Nice values and their clamps; the raw return is 20 - nice.
    for n in [-5, -100, 100, 7, 0] {
        line(
            &format!("root: setpriority self {n}"),
            res(setprio(PRIO_PROCESS, 0, n)),
        );
        show_nice("root: getpriority self", PRIO_PROCESS, 0);
    }
    // A negative nice parent's reset-on-fork child starts at nice 0; without the flag the
    // child inherits the nice value.
    setprio(PRIO_PROCESS, 0, -3);
    let pid = fork();
    if pid == 0 {
        show_nice("root: child of nice -3", PRIO_PROCESS, 0);
        umt::exit_now(0);
    }
    waitpid(pid, 0);
    line(
        "root: setscheduler OTHER|RESET_ON_FORK at nice -3",
        res(setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, 0)),
    );
    let pid = fork();
    if pid == 0 {
        show_nice("root: reset-on-fork child of nice -3", PRIO_PROCESS, 0);
        show_policy("root: its policy", 0);
        umt::exit_now(0);
    }
    waitpid(pid, 0);
    setscheduler(0, SCHED_OTHER, 0);
    setprio(PRIO_PROCESS, 0, 0);
    // sched_setattr sets the nice value of a fair policy, and reports it.
    let mut a = attr(SCHED_BATCH, 0, 4, 0);
    line("root: setattr BATCH nice 4", res(setattr(0, &mut a, 0)));
    line("root: getattr", getattr(0, 48, 0));
    show_nice("root: getpriority after setattr", PRIO_PROCESS, 0);
    let mut a = attr(SCHED_OTHER, SCHED_FLAG_KEEP_POLICY, -2, 0);
    line(
        "root: setattr KEEP_POLICY nice -2",
        res(setattr(0, &mut a, 0)),
    );
    line("root: getattr", getattr(0, 48, 0));
    let mut a = attr(SCHED_OTHER, SCHED_FLAG_KEEP_PARAMS, 9, 0);
    line(
        "root: setattr OTHER KEEP_PARAMS nice 9",
        res(setattr(0, &mut a, 0)),
    );
    line("root: getattr", getattr(0, 48, 0));
    let mut a = attr(SCHED_FIFO, SCHED_FLAG_RESET_ON_FORK, 0, 5);
    line(
        "root: setattr FIFO 5 RESET_ON_FORK",
        res(setattr(0, &mut a, 0)),
    );
    line("root: getattr", getattr(0, 48, 0));
    let mut a = attr(SCHED_OTHER, 0, 30, 0);
    line("root: setattr OTHER nice 30", res(setattr(0, &mut a, 0)));
    line("root: getattr (nice clamped)", getattr(0, 48, 0));
    setprio(PRIO_PROCESS, 0, 0);

    // PRIO_PGRP: a group of two, each at its own nice; the group's is the lowest.
    let (r, w) = umt::pipe2(0);
    let a = fork();
    if a == 0 {
        // SAFETY: plain setpgid of ourselves.
        unsafe { libc::setpgid(0, 0) };
        let b = fork();
        let n = if b == 0 { 8 } else { 4 };
        setprio(PRIO_PROCESS, 0, n);
        umt::write_all(w, b"r", "ready");
        loop {
            // SAFETY: pause until killed.
            unsafe { libc::pause() };
        }
    }
    // SAFETY: the child's group, set here too so that it exists whoever runs first.
    unsafe { libc::setpgid(a, a) };
    wait_ready(r);
    wait_ready(r);
    show_nice("root: getpriority PRIO_PGRP (4 and 8)", PRIO_PGRP, a as u32);
    line(
        "root: setpriority PRIO_PGRP 6",
        res(setprio(PRIO_PGRP, a as u32, 6)),
    );
    show_nice("root: the group's leader", PRIO_PROCESS, a as u32);
    show_nice("root: the group", PRIO_PGRP, a as u32);
    // SAFETY: kill our child's group.
    unsafe { libc::kill(-a, libc::SIGKILL) };
    waitpid(a, 0);

    // PRIO_USER: the processes of one uid.
    let c = fork();
    if c == 0 {
        // SAFETY: plain id changes in the child.
        unsafe {
            if libc::setgid(OTHER_UID) != 0 || libc::setuid(OTHER_UID) != 0 {
                umt::fail("setuid 4242");
            }
        }
        setprio(PRIO_PROCESS, 0, 7);
        umt::write_all(w, b"r", "ready");
        loop {
            // SAFETY: pause until killed.
            unsafe { libc::pause() };
        }
    }
    wait_ready(r);
    show_nice("root: getpriority PRIO_USER 4242", PRIO_USER, OTHER_UID);
    line(
        "root: setpriority PRIO_USER 4242 9",
        res(setprio(PRIO_USER, OTHER_UID, 9)),
    );
    show_nice("root: uid 4242's process", PRIO_PROCESS, c as u32);
    line(
        "root: setpriority of uid 4242's process -1",
        res(setprio(PRIO_PROCESS, c as u32, -1)),
    );
    show_nice("root: uid 4242's process", PRIO_PROCESS, c as u32);
    line(
        "root: setscheduler of uid 4242's process BATCH",
        res(setscheduler(c, SCHED_BATCH, 0)),
    );
    show_policy("root: its policy", c);
    kill_wait(c);
    umt::close(r);
    umt::close(w);
}

/// A user's rules. `other` is a root process (the parent, or pid 1 when there is none).
fn as_user(other: i32) {
    let base = nice_of(PRIO_PROCESS, 0).unwrap_or_else(|e| umt::fail(format!("getpriority: {e}")));
    if base > 12 {
        umt::fail(format!("starts at nice {base}: no room to raise it"));
    }
    let rel = |what: &str| match nice_of(PRIO_PROCESS, 0) {
        Ok(n) => line(what, format!("start+{}", n - base)),
        Err(e) => line(what, e),
    };
    line(
        "user: setpriority +2",
        res(setprio(PRIO_PROCESS, 0, base + 2)),
    );
    rel("user: nice");
    line(
        "user: setpriority +1 (lower)",
        res(setprio(PRIO_PROCESS, 0, base + 1)),
    );
    rel("user: nice");
    line(
        "user: setpriority +2 (same)",
        res(setprio(PRIO_PROCESS, 0, base + 2)),
    );
    line(
        "user: setpriority +5",
        res(setprio(PRIO_PROCESS, 0, base + 5)),
    );
    rel("user: nice");
    let mut a = attr(SCHED_OTHER, 0, base + 3, 0);
    line("user: setattr lower nice", res(setattr(0, &mut a, 0)));
    let mut a = attr(SCHED_OTHER, 0, base + 6, 0);
    line("user: setattr higher nice", res(setattr(0, &mut a, 0)));
    rel("user: nice");
    line(
        "user: setpriority of a root process",
        res(setprio(PRIO_PROCESS, other as u32, 10)),
    );
    line(
        "user: getpriority of a root process",
        match nice_of(PRIO_PROCESS, other as u32) {
            Ok(_) => "ok".to_string(),
            Err(e) => e,
        },
    );
    line(
        "user: setscheduler of a root process",
        res(setscheduler(other, SCHED_OTHER, 0)),
    );
    // Only that it may read it: the policy of pid 1 natively is the host's business.
    let r = getscheduler(other);
    line(
        "user: getscheduler of a root process",
        if r >= 0 {
            "ok".to_string()
        } else {
            ename(errno())
        },
    );
    let mut z = [0u64; 16];
    let r = sys(
        libc::SYS_sched_getaffinity,
        [other as usize, 128, z.as_mut_ptr() as usize, 0],
    );
    line(
        "user: getaffinity of a root process",
        if r > 0 { "ok".to_string() } else { res(r) },
    );
    let r = sys(
        libc::SYS_sched_setaffinity,
        [other as usize, 128, z.as_ptr() as usize, 0],
    );
    line("user: setaffinity of a root process", res(r));
    line(
        "user: setscheduler FIFO 1",
        res(setscheduler(0, SCHED_FIFO, 1)),
    );
    line("user: setscheduler RR 1", res(setscheduler(0, SCHED_RR, 1)));
    line(
        "user: setscheduler BATCH",
        res(setscheduler(0, SCHED_BATCH, 0)),
    );
    show_policy("user: policy", 0);
    line(
        "user: setscheduler OTHER|RESET_ON_FORK",
        res(setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, 0)),
    );
    line(
        "user: setscheduler OTHER (clear RESET_ON_FORK)",
        res(setscheduler(0, SCHED_OTHER, 0)),
    );
    show_policy("user: policy", 0);
    line(
        "user: setscheduler IDLE",
        res(setscheduler(0, SCHED_IDLE | SCHED_RESET_ON_FORK, 0)),
    );
    line(
        "user: setscheduler OTHER (leave IDLE)",
        res(setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, 0)),
    );
    show_policy("user: policy", 0);
    // RLIMIT_NICE: a user may lower its soft limit, not raise the hard one.
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: rl is a valid rlimit.
    let r = unsafe { libc::getrlimit(libc::RLIMIT_NICE, &mut rl) };
    line(
        "user: RLIMIT_NICE",
        if r == 0 {
            format!("{} {}", rl.rlim_cur, rl.rlim_max)
        } else {
            ename(errno())
        },
    );
    let up = libc::rlimit {
        rlim_cur: rl.rlim_max + 1,
        rlim_max: rl.rlim_max + 1,
    };
    // SAFETY: up is a valid rlimit.
    let r = unsafe { libc::setrlimit(libc::RLIMIT_NICE, &up) };
    line("user: raise RLIMIT_NICE", res(r as i64));
}

type Mask = [u64; 16];

fn getaffinity(pid: i32) -> Result<Mask, String> {
    let mut m: Mask = [0; 16];
    let r = sys(
        libc::SYS_sched_getaffinity,
        [pid as usize, 128, m.as_mut_ptr() as usize, 0],
    );
    if r < 0 {
        return Err(ename(errno()));
    }
    if r < 8 || r % 8 != 0 {
        return Err(format!("returned {r}"));
    }
    Ok(m)
}

fn setaffinity(pid: i32, m: &Mask) -> i64 {
    sys(
        libc::SYS_sched_setaffinity,
        [pid as usize, 128, m.as_ptr() as usize, 0],
    )
}

fn cpus(m: &Mask) -> Vec<usize> {
    (0..1024)
        .filter(|&c| m[c / 64] & (1 << (c % 64)) != 0)
        .collect()
}

fn only(cpu: usize) -> Mask {
    let mut m: Mask = [0; 16];
    m[cpu / 64] |= 1 << (cpu % 64);
    m
}

/// Where the thread runs, after some yields: the raw getcpu and the C library's.
fn runs_on() -> Vec<(i64, i32)> {
    (0..20)
        .map(|_| {
            // SAFETY: plain sched_yield.
            unsafe { libc::sched_yield() };
            let mut cpu: u32 = u32::MAX;
            let r = sys(libc::SYS_getcpu, [&mut cpu as *mut u32 as usize, 0, 0, 0]);
            // SAFETY: plain sched_getcpu.
            let lib = unsafe { libc::sched_getcpu() };
            (if r < 0 { -1 } else { i64::from(cpu) }, lib)
        })
        .collect()
}

fn check_runs_on(what: &str, cpu: usize) {
    let seen = runs_on();
    let bad: Vec<_> = seen
        .iter()
        .filter(|&&(raw, lib)| raw != cpu as i64 || lib != cpu as i32)
        .collect();
    line(
        what,
        if bad.is_empty() {
            "yes".to_string()
        } else {
            format!(
                "no: {} of 20 readings elsewhere, first {:?}",
                bad.len(),
                bad[0]
            )
        },
    );
}

fn affinity() {
    let start = getaffinity(0).unwrap_or_else(|e| umt::fail(format!("getaffinity: {e}")));
    let all = cpus(&start);
    let (first, last) = (all[0], all[all.len() - 1]);
    line("affinity: getaffinity", "ok");
    for (name, cpu) in [("first", first), ("last", last)] {
        line(
            &format!("affinity: pin to the {name} cpu"),
            res(setaffinity(0, &only(cpu))),
        );
        line(
            "affinity: getaffinity is that cpu alone",
            match getaffinity(0) {
                Ok(m) => (cpus(&m) == [cpu]).to_string(),
                Err(e) => e,
            },
        );
        check_runs_on("affinity: runs there", cpu);
    }
    // Inherited by a child and by a new thread; a thread's own mask is its own.
    let pid = fork();
    if pid == 0 {
        line(
            "affinity: child inherits the mask",
            match getaffinity(0) {
                Ok(m) => (cpus(&m) == [last]).to_string(),
                Err(e) => e,
            },
        );
        check_runs_on("affinity: child runs there", last);
        umt::exit_now(0);
    }
    waitpid(pid, 0);
    let t = std::thread::spawn(move || {
        let inherited = getaffinity(0).map(|m| cpus(&m) == [last]);
        let r = setaffinity(0, &only(first));
        let e = errno();
        let own = getaffinity(0).map(|m| cpus(&m) == [first]);
        (inherited, r, e, own, runs_on(), gettid())
    });
    let (inherited, r, e, own, seen, tid) = t.join().unwrap_or_else(|_| umt::fail("thread"));
    line(
        "affinity: thread inherits the mask",
        format!("{inherited:?}"),
    );
    line(
        "affinity: thread pins itself to the first cpu",
        if r < 0 { ename(e) } else { format!("ok {r}") },
    );
    line("affinity: thread's mask", format!("{own:?}"));
    line(
        "affinity: thread runs there",
        (seen
            .iter()
            .all(|&(raw, lib)| raw == first as i64 && lib == first as i32))
        .to_string(),
    );
    line(
        "affinity: main thread's mask unchanged",
        match getaffinity(0) {
            Ok(m) => (cpus(&m) == [last]).to_string(),
            Err(e) => e,
        },
    );
    line(
        "affinity: getaffinity of the exited thread",
        match getaffinity(tid) {
            Ok(_) => "ok".to_string(),
            Err(e) => e,
        },
    );
    // Errors.
    line("affinity: empty mask", res(setaffinity(0, &[0; 16])));
    line("affinity: only cpu 1000", res(setaffinity(0, &only(1000))));
    line(
        "affinity: length 0",
        res(sys(
            libc::SYS_sched_setaffinity,
            [0, 0, start.as_ptr() as usize, 0],
        )),
    );
    line(
        "affinity: setaffinity bad pointer",
        res(sys(libc::SYS_sched_setaffinity, [0, 128, BAD, 0])),
    );
    line(
        "affinity: getaffinity bad pointer",
        res(sys(libc::SYS_sched_getaffinity, [0, 128, BAD, 0])),
    );
    let mut m: Mask = [0; 16];
    for len in [0usize, 4, 12] {
        line(
            &format!("affinity: getaffinity length {len}"),
            res(sys(
                libc::SYS_sched_getaffinity,
                [0, len, m.as_mut_ptr() as usize, 0],
            )),
        );
    }
    let dead = dead_pid();
    line(
        "affinity: getaffinity dead pid",
        match getaffinity(dead) {
            Ok(_) => "ok".to_string(),
            Err(e) => e,
        },
    );
    line(
        "affinity: setaffinity dead pid",
        res(setaffinity(dead, &start)),
    );
    line(
        "affinity: back to the start mask",
        res(setaffinity(0, &start)),
    );
    line(
        "affinity: getaffinity is the start mask",
        match getaffinity(0) {
            Ok(m) => (m == start).to_string(),
            Err(e) => e,
        },
    );
}

/// Becomes uid and gid 65534 with no supplementary groups.
fn become_nobody() {
    let g = [NOBODY];
    // SAFETY: plain id changes; `g` outlives the call.
    let r = unsafe { libc::setgroups(1, g.as_ptr()) | libc::setgid(NOBODY) | libc::setuid(NOBODY) };
    if r != 0 {
        umt::fail("setuid 65534");
    }
}

/// Runs `f` in a child that became nobody; fails unless it exits 0.
fn as_nobody_child(f: impl FnOnce()) {
    let pid = fork();
    if pid == 0 {
        become_nobody();
        f();
        umt::exit_now(0);
    }
    let st = waitpid(pid, 0);
    if st != 0 {
        umt::fail(format!("nobody child: {}", umt::describe_status(st)));
    }
}

fn main() {
    umt::init("sched");
    let _dir = umt::workdir();
    let unpriv = std::env::args().any(|a| a == "unpriv");
    // SAFETY: plain geteuid.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 {
        // A root run starts from nice 0 and SCHED_OTHER, whatever it was started under.
        setprio(PRIO_PROCESS, 0, 0);
        setscheduler(0, SCHED_OTHER, 0);
    }
    match (euid == 0, unpriv) {
        // Root: everything, the user part in a child that became nobody.
        (true, false) => {
            common();
            setscheduler(0, SCHED_OTHER, 0);
            as_root();
            let parent = getpid();
            as_nobody_child(|| as_user(parent));
            affinity();
        }
        // `unpriv` as root (the guest of a gate whose native run is not root): the whole
        // program as nobody in a child, as natively; its parent is the root process.
        (true, true) => {
            let parent = getpid();
            as_nobody_child(|| {
                common();
                as_user(parent);
                affinity();
            });
        }
        // Not root: no root process of ours to try, so pid 1's.
        (false, _) => {
            common();
            as_user(1);
            affinity();
        }
    }
    umt::done("sched");
}
