//! Guest test `seccompf`: seccomp(2) filters of a guest program (kernel/src/seccomp).
//!
//! * Probes: SECCOMP_GET_ACTION_AVAIL, SECCOMP_GET_NOTIF_SIZES, bad operations and flags.
//! * Strict mode: read/write/exit go through, anything else (and on x86_64 rdtsc) kills.
//! * no_new_privs: without it a non-root user gets EACCES; PR_GET_NO_NEW_PRIVS.
//! * Bad filters: Linux's verifier rules (EINVAL), bad pointers (EFAULT).
//! * Actions: ERRNO (capped at MAX_ERRNO, 0 "succeeds"), TRAP (SIGSYS siginfo: si_code,
//!   si_errno = data, si_syscall, si_arch, si_call_addr; the rolled-back return register;
//!   a blocked or ignored SIGSYS kills), KILL_PROCESS, KILL_THREAD (one thread, then the
//!   last), LOG, TRACE and USER_NOTIF without a tracer or listener (ENOSYS).
//! * Stacking: the most restrictive action wins, the newest filter on a tie;
//!   `/proc/self/status` `Seccomp:` and `Seccomp_filters:`, PR_GET_SECCOMP.
//! * Inheritance over fork and execve; TSYNC, its failure (a thread id, or ESRCH).
//! * SECCOMP_RET_TRACE with a ptrace tracer (PTRACE_O_TRACESECCOMP): the event message, the
//!   seccomp op of GET_SYSCALL_INFO, a call cancelled and one changed (then judged again);
//!   and the order: a tracer's syscall-entry stop comes before the filters run.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then
//! UM-SECCOMPF-OK. Every filter is installed in a child, so the parent stays unfiltered.

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use umt::{check, check_eq, describe_status, ename, errno, expect_err, ok, say};

const SECCOMP_SET_MODE_STRICT: u64 = 0;
const SECCOMP_SET_MODE_FILTER: u64 = 1;
const SECCOMP_GET_ACTION_AVAIL: u64 = 2;
const SECCOMP_GET_NOTIF_SIZES: u64 = 3;
const FLAG_TSYNC: u64 = 1;
const FLAG_LOG: u64 = 2;
const FLAG_NEW_LISTENER: u64 = 8;
const FLAG_TSYNC_ESRCH: u64 = 16;
const FLAG_WAIT_KILLABLE_RECV: u64 = 32;

const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_KILL_THREAD: u32 = 0;
const RET_TRAP: u32 = 0x0003_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_USER_NOTIF: u32 = 0x7fc0_0000;
const RET_TRACE: u32 = 0x7ff0_0000;
const RET_LOG: u32 = 0x7ffc_0000;
const RET_ALLOW: u32 = 0x7fff_0000;

const PR_SET_NO_NEW_PRIVS: i32 = 38;
const PR_GET_NO_NEW_PRIVS: i32 = 39;
const PR_GET_SECCOMP: i32 = 21;
const PR_SET_SECCOMP: i32 = 22;

const PTRACE_O_TRACESYSGOOD: u64 = 1;
const PTRACE_O_TRACESECCOMP: u64 = 0x80;
const PTRACE_EVENT_SECCOMP: i32 = 7;
const PTRACE_GET_SYSCALL_INFO: u32 = 0x420e;
const WALL: i32 = 0x4000_0000;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

// Classic BPF (include/uapi/linux/filter.h).
const LD_W_ABS: u16 = 0x20;
const LD_W_LEN: u16 = 0x80;
const LD_MEM: u16 = 0x60;
const LD_B_ABS: u16 = 0x30;
const ST: u16 = 0x02;
const ALU_MOD_K: u16 = 0x94;
const ALU_DIV_K: u16 = 0x34;
const JMP_JA: u16 = 0x05;
const JEQ_K: u16 = 0x15;
const RET_K: u16 = 0x06;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jeq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: JEQ_K,
        jt,
        jf,
        k,
    }
}

/// A filter that checks the arch (KILL_PROCESS for another), then gives each listed
/// syscall its verdict and allows the rest.
fn rules(list: &[(i64, u32)]) -> Vec<libc::sock_filter> {
    let mut p = vec![
        stmt(LD_W_ABS, 4),
        jeq(AUDIT_ARCH, 1, 0),
        stmt(RET_K, RET_KILL_PROCESS),
        stmt(LD_W_ABS, 0),
    ];
    for &(nr, ret) in list {
        p.push(jeq(nr as u32, 0, 1));
        p.push(stmt(RET_K, ret));
    }
    p.push(stmt(RET_K, RET_ALLOW));
    p
}

fn seccomp(op: u64, flags: u64, args: u64) -> i64 {
    // SAFETY: raw seccomp(2); `args` points at live memory of the right type or is a
    // deliberately bad address the kernel must refuse.
    unsafe { libc::syscall(libc::SYS_seccomp, op, flags, args) }
}

/// Installs `prog` with `flags`; the raw result.
fn install(flags: u64, prog: &[libc::sock_filter]) -> i64 {
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr().cast_mut(),
    };
    seccomp(
        SECCOMP_SET_MODE_FILTER,
        flags,
        &fprog as *const libc::sock_fprog as u64,
    )
}

fn prctl(op: i32, a: u64) -> i64 {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(op, a, 0u64, 0u64, 0u64) as i64 }
}

fn no_new_privs() {
    ok(prctl(PR_SET_NO_NEW_PRIVS, 1), "PR_SET_NO_NEW_PRIVS");
}

fn sys(nr: i64, a: u64) -> i64 {
    // SAFETY: calls that take at most one integer argument.
    unsafe { libc::syscall(nr, a) }
}

fn getpid() -> i32 {
    sys(libc::SYS_getpid, 0) as i32
}

/// `Seccomp:` and `Seccomp_filters:` of /proc/self/status.
fn status_seccomp() -> (u32, u32) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(99)
    };
    (field("Seccomp:"), field("Seccomp_filters:"))
}

/// Runs `f` in a child and returns its wait status in words.
fn in_child(f: impl FnOnce()) -> String {
    let pid = umt::fork();
    if pid == 0 {
        f();
        umt::exit_now(0);
    }
    describe_status(umt::waitpid(pid, 0))
}

fn probes() {
    for (name, a) in [
        ("KILL_PROCESS", RET_KILL_PROCESS),
        ("KILL_THREAD", RET_KILL_THREAD),
        ("TRAP", RET_TRAP),
        ("ERRNO", RET_ERRNO),
        ("TRACE", RET_TRACE),
        ("LOG", RET_LOG),
        ("ALLOW", RET_ALLOW),
    ] {
        let r = seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &a as *const u32 as u64);
        say(format!("GET_ACTION_AVAIL {name}: {r}"));
    }
    let bad = 0x0001_0000u32;
    expect_err(
        seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &bad as *const u32 as u64),
        libc::EOPNOTSUPP,
        "GET_ACTION_AVAIL 0x10000",
    );
    let a = RET_ALLOW;
    expect_err(
        seccomp(SECCOMP_GET_ACTION_AVAIL, 1, &a as *const u32 as u64),
        libc::EINVAL,
        "GET_ACTION_AVAIL flags 1",
    );
    expect_err(
        seccomp(SECCOMP_GET_ACTION_AVAIL, 0, 8),
        libc::EFAULT,
        "GET_ACTION_AVAIL bad pointer",
    );
    let mut sizes = [0u16; 3];
    ok(
        seccomp(SECCOMP_GET_NOTIF_SIZES, 0, sizes.as_mut_ptr() as u64),
        "GET_NOTIF_SIZES",
    );
    say(format!("GET_NOTIF_SIZES: {sizes:?}"));
    expect_err(seccomp(99, 0, 0), libc::EINVAL, "seccomp op 99");
    expect_err(
        seccomp(SECCOMP_SET_MODE_STRICT, 1, 0),
        libc::EINVAL,
        "SET_MODE_STRICT flags 1",
    );
    expect_err(prctl(PR_SET_SECCOMP, 3), libc::EINVAL, "PR_SET_SECCOMP 3");
    say("probes ok");
}

fn strict() {
    let st = in_child(|| {
        ok(prctl(PR_SET_SECCOMP, 1), "PR_SET_SECCOMP strict");
        let msg = b"seccompf: strict: write allowed\n";
        sys3(libc::SYS_write, 1, msg.as_ptr() as u64, msg.len() as u64);
        sys(libc::SYS_getpid, 0);
        sys(libc::SYS_exit, 3);
    });
    say(format!("strict: getpid: {st}"));
    let st = in_child(|| {
        ok(seccomp(SECCOMP_SET_MODE_STRICT, 0, 0), "SET_MODE_STRICT");
        sys(libc::SYS_exit, 7);
    });
    say(format!("strict: exit(7): {st}"));
    let st = in_child(|| {
        ok(prctl(PR_SET_SECCOMP, 1), "PR_SET_SECCOMP strict");
        // exit_group is not one of the four.
        sys(libc::SYS_exit_group, 5);
    });
    say(format!("strict: exit_group: {st}"));
    #[cfg(target_arch = "x86_64")]
    {
        let st = in_child(|| {
            ok(prctl(PR_SET_SECCOMP, 1), "PR_SET_SECCOMP strict");
            // SAFETY: rdtsc has no memory effects (strict mode makes it fault).
            unsafe { core::arch::x86_64::_rdtsc() };
            sys(libc::SYS_exit, 0);
        });
        say(format!("strict: rdtsc: {st}"));
    }
}

fn sys3(nr: i64, a: u64, b: u64, c: u64) -> i64 {
    // SAFETY: raw calls with integer (or live buffer) arguments.
    unsafe { libc::syscall(nr, a, b, c) }
}

fn nnp() {
    let st = in_child(|| {
        check_eq(prctl(PR_GET_NO_NEW_PRIVS, 0), 0, "PR_GET_NO_NEW_PRIVS");
        let allow = [stmt(RET_K, RET_ALLOW)];
        // SAFETY: plain integer calls.
        if unsafe { libc::getuid() } == 0 {
            // Root has CAP_SYS_ADMIN: allowed without no_new_privs (in a grandchild, whose
            // filter does not matter).
            let st = in_child(|| check_eq(install(0, &allow), 0, "install as root"));
            check_eq(st.as_str(), "exited 0", "root install");
            // SAFETY: as above.
            ok(unsafe { libc::setgid(65534) } as i64, "setgid");
            // SAFETY: as above.
            ok(unsafe { libc::setuid(65534) } as i64, "setuid");
        }
        expect_err(
            install(0, &allow),
            libc::EACCES,
            "install without no_new_privs",
        );
        say("nnp: a user without no_new_privs: EACCES");
        expect_err(
            prctl(PR_SET_NO_NEW_PRIVS, 2),
            libc::EINVAL,
            "PR_SET_NO_NEW_PRIVS 2",
        );
        no_new_privs();
        say(format!(
            "nnp: PR_GET_NO_NEW_PRIVS: {}",
            prctl(PR_GET_NO_NEW_PRIVS, 0)
        ));
        say(format!("nnp: install: {}", install(0, &allow)));
    });
    say(format!("nnp: {st}"));
}

fn bad_filters() {
    let st = in_child(|| {
        no_new_privs();
        let ret = stmt(RET_K, RET_ALLOW);
        let cases: Vec<(&str, Vec<libc::sock_filter>)> = vec![
            ("empty", vec![]),
            ("4097 instructions", vec![ret; 4097]),
            ("no RET at the end", vec![stmt(LD_W_ABS, 0)]),
            ("unaligned load", vec![stmt(LD_W_ABS, 2), ret]),
            ("load past seccomp_data", vec![stmt(LD_W_ABS, 64), ret]),
            ("byte load", vec![stmt(LD_B_ABS, 0), ret]),
            ("MOD", vec![stmt(ALU_MOD_K, 3), ret]),
            ("divide by constant 0", vec![stmt(ALU_DIV_K, 0), ret]),
            ("scratch slot 16", vec![stmt(ST, 16), ret]),
            ("read before write", vec![stmt(LD_MEM, 0), ret]),
            ("jump past the end", vec![stmt(JMP_JA, 1), ret]),
            ("branch past the end", vec![jeq(0, 0, 1), ret]),
            ("unknown opcode", vec![stmt(0xff, 0), ret]),
        ];
        for (what, p) in &cases {
            expect_err(install(0, p), libc::EINVAL, what);
        }
        say(format!("bad filters: {} refused with EINVAL", cases.len()));
        let p = [ret];
        for (what, flags) in [
            ("unknown flag", 1 << 6),
            ("WAIT_KILLABLE_RECV alone", FLAG_WAIT_KILLABLE_RECV),
            ("TSYNC|NEW_LISTENER", FLAG_TSYNC | FLAG_NEW_LISTENER),
        ] {
            expect_err(install(flags, &p), libc::EINVAL, what);
        }
        let nullprog = libc::sock_fprog {
            len: 1,
            filter: std::ptr::null_mut(),
        };
        expect_err(
            seccomp(SECCOMP_SET_MODE_FILTER, 0, &nullprog as *const _ as u64),
            libc::EINVAL,
            "null program",
        );
        expect_err(
            seccomp(SECCOMP_SET_MODE_FILTER, 0, 8),
            libc::EFAULT,
            "bad sock_fprog",
        );
        let badprog = libc::sock_fprog {
            len: 1,
            filter: 8 as *mut libc::sock_filter,
        };
        expect_err(
            seccomp(SECCOMP_SET_MODE_FILTER, 0, &badprog as *const _ as u64),
            libc::EFAULT,
            "bad program pointer",
        );
        say("bad filters: flags EINVAL, pointers EINVAL/EFAULT");
        // BPF_LEN is the size of seccomp_data: RET A = 64 = ERRNO? No: 64 is KILL_THREAD's
        // data range; compare it instead and allow.
        let len = [
            stmt(LD_W_LEN, 0),
            jeq(64, 1, 0),
            stmt(RET_K, RET_KILL_PROCESS),
            ret,
        ];
        check_eq(install(0, &len), 0, "BPF_LEN filter");
        check_eq(status_seccomp().0, 2, "Seccomp: after the filter");
        check_eq(prctl(PR_GET_SECCOMP, 0), 2, "PR_GET_SECCOMP");
        expect_err(
            seccomp(SECCOMP_SET_MODE_STRICT, 0, 0),
            libc::EINVAL,
            "strict after a filter",
        );
        say("bad filters: BPF_LEN is 64; strict after a filter: EINVAL");
    });
    say(format!("bad filters: {st}"));
}

fn errno_action() {
    let st = in_child(|| {
        no_new_privs();
        let before = status_seccomp().1;
        let p = rules(&[
            (libc::SYS_getppid, RET_ERRNO | libc::EACCES as u32),
            (libc::SYS_getpgid, RET_ERRNO | 5000),
            (libc::SYS_getpid, RET_ERRNO),
        ]);
        check_eq(install(FLAG_LOG, &p), 0, "install ERRNO filter");
        let r = sys(libc::SYS_getppid, 0);
        say(format!("errno: getppid = {r} {}", ename(errno())));
        let r = sys(libc::SYS_getpgid, 0);
        say(format!("errno: ERRNO|5000 = {r} errno {}", errno()));
        say(format!(
            "errno: ERRNO|0 getpid = {}",
            sys(libc::SYS_getpid, 0)
        ));
        let (mode, n) = status_seccomp();
        say(format!("errno: Seccomp: {mode}, filters +{}", n - before));
        say(format!(
            "errno: PR_GET_SECCOMP = {}",
            prctl(PR_GET_SECCOMP, 0)
        ));
    });
    say(format!("errno: {st}"));
}

static SYS_INFO: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];

extern "C" fn on_sigsys(sig: i32, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo; SIGSYS's fields are at Linux's offsets
    // (si_errno 4, si_code 8, si_call_addr 16, si_syscall 24, si_arch 28).
    let b = unsafe { std::slice::from_raw_parts(info as *const u8, 32) };
    let w32 = |o: usize| u64::from(u32::from_le_bytes(b[o..o + 4].try_into().unwrap()));
    SYS_INFO[0].store(sig as u64, Ordering::SeqCst);
    SYS_INFO[1].store(w32(4), Ordering::SeqCst);
    SYS_INFO[2].store(w32(8), Ordering::SeqCst);
    SYS_INFO[3].store(
        u64::from_le_bytes(b[16..24].try_into().unwrap()),
        Ordering::SeqCst,
    );
    SYS_INFO[4].store(w32(24), Ordering::SeqCst);
    SYS_INFO[5].store(w32(28), Ordering::SeqCst);
    SYS_INFO[6].fetch_add(1, Ordering::SeqCst);
}

/// Prints what the SIGSYS handler saw.
fn report_sigsys(tag: &str, nr: i64) {
    let g = |i: usize| SYS_INFO[i].load(Ordering::SeqCst);
    let call = g(3);
    let sc = libc::syscall as *const () as usize as u64;
    say(format!(
        "{tag}: SIGSYS x{}: signo {} si_errno {:#x} si_code {} si_syscall is nr {} \
         si_arch ok {} si_call_addr in syscall() {}",
        g(6),
        umt::signame(g(0) as i32),
        g(1),
        g(2),
        g(4) == nr as u64,
        g(5) == u64::from(AUDIT_ARCH),
        call > sc && call < sc + 256,
    ));
}

fn trap() {
    let st = in_child(|| {
        no_new_privs();
        umt::set_handler(libc::SIGSYS, on_sigsys as *const () as usize, 0, true);
        check_eq(
            install(0, &rules(&[(libc::SYS_getppid, RET_TRAP | 0x42)])),
            0,
            "install TRAP filter",
        );
        // The handler returns; the call's result is the rolled-back register: the number
        // on x86_64 (rax = orig_rax), the first argument on arm64 (x0 = orig_x0).
        let r = sys(libc::SYS_getppid, 0x77);
        report_sigsys("trap", libc::SYS_getppid);
        say(format!(
            "trap: returned {}",
            if r == libc::SYS_getppid {
                "the syscall number"
            } else if r == 0x77 {
                "the first argument"
            } else {
                "something else"
            }
        ));
        // Blocked SIGSYS: forced, the default action kills.
        let st = in_child(|| {
            umt::sigprocmask(libc::SIG_BLOCK, &[libc::SIGSYS]);
            sys(libc::SYS_getppid, 0);
        });
        say(format!("trap: SIGSYS blocked: {st}"));
        let st = in_child(|| {
            umt::set_handler(libc::SIGSYS, libc::SIG_IGN, 0, false);
            sys(libc::SYS_getppid, 0);
        });
        say(format!("trap: SIGSYS ignored: {st}"));
    });
    say(format!("trap: {st}"));
}

fn no_core() {
    let rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid rlimit.
    ok(
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &rl) } as i64,
        "setrlimit(RLIMIT_CORE)",
    );
}

static THREAD_RESULT: AtomicI32 = AtomicI32::new(0);
static THREAD_TID: AtomicI32 = AtomicI32::new(0);

extern "C" fn killed_thread(_: *mut libc::c_void) -> *mut libc::c_void {
    sys(libc::SYS_getppid, 0);
    THREAD_RESULT.store(1, Ordering::SeqCst);
    std::ptr::null_mut()
}

/// `Threads:` of /proc/self/status.
fn threads() -> u32 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn spawn(f: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void) -> libc::pthread_t {
    // SAFETY: pthread_t is an integer or pointer filled in by pthread_create.
    let mut t: libc::pthread_t = unsafe { std::mem::zeroed() };
    // SAFETY: default attributes; the function is extern "C" and takes no data.
    let r = unsafe { libc::pthread_create(&mut t, std::ptr::null(), f, std::ptr::null_mut()) };
    check_eq(r, 0, "pthread_create");
    t
}

fn join(t: libc::pthread_t) {
    // SAFETY: a thread created by spawn, joined once.
    let r = unsafe { libc::pthread_join(t, std::ptr::null_mut()) };
    check_eq(r, 0, "pthread_join");
}

fn kill_actions() {
    no_core();
    let st = in_child(|| {
        no_new_privs();
        install(0, &rules(&[(libc::SYS_getppid, RET_KILL_PROCESS)]));
        sys(libc::SYS_getppid, 0);
        say("kill: FAIL survived KILL_PROCESS");
    });
    say(format!("kill: KILL_PROCESS: {st}"));
    let st = in_child(|| {
        no_new_privs();
        install(0, &rules(&[(libc::SYS_getppid, RET_KILL_THREAD)]));
        let _t = spawn(killed_thread);
        // musl's pthread_join waits for the thread's own exit code to wake it, which a killed
        // thread never runs: wait for the kernel to drop it from the thread count instead.
        for _ in 0..5000 {
            if threads() == 1 {
                break;
            }
            umt::sleep_ms(1);
        }
        check_eq(threads(), 1, "threads after KILL_THREAD");
        say(format!(
            "kill: KILL_THREAD ended the thread only (it went on: {})",
            THREAD_RESULT.load(Ordering::SeqCst)
        ));
        // The last thread: the process dies of SIGSYS.
        sys(libc::SYS_getppid, 0);
        say("kill: FAIL survived KILL_THREAD");
    });
    say(format!("kill: KILL_THREAD in the last thread: {st}"));
    // A process killed while other threads run: all of them go.
    let st = in_child(|| {
        no_new_privs();
        install(0, &rules(&[(libc::SYS_getppid, RET_KILL_PROCESS)]));
        let _t = spawn(sleeper);
        umt::sleep_ms(20);
        sys(libc::SYS_getppid, 0);
    });
    say(format!("kill: KILL_PROCESS with a second thread: {st}"));
}

extern "C" fn sleeper(_: *mut libc::c_void) -> *mut libc::c_void {
    loop {
        umt::sleep_ms(1000);
    }
}

fn stacking() {
    let st = in_child(|| {
        no_new_privs();
        umt::set_handler(libc::SIGSYS, on_sigsys as *const () as usize, 0, true);
        let before = status_seccomp().1;
        let nr = libc::SYS_getppid;
        install(0, &rules(&[(nr, RET_ERRNO | 1)]));
        install(0, &rules(&[(nr, RET_TRAP | 7)]));
        install(FLAG_LOG, &rules(&[(nr, RET_LOG)]));
        sys(nr, 0);
        report_sigsys("stack: ERRNO+TRAP+LOG", nr);
        say(format!(
            "stack: Seccomp_filters +{}",
            status_seccomp().1 - before
        ));
    });
    say(format!("stack: {st}"));
    let st = in_child(|| {
        no_new_privs();
        let nr = libc::SYS_getppid;
        install(0, &rules(&[(nr, RET_ERRNO | 1)]));
        install(0, &rules(&[(nr, RET_ERRNO | 2)]));
        let r = sys(nr, 0);
        say(format!(
            "stack: ERRNO|1 then ERRNO|2: {r} {}",
            ename(errno())
        ));
        // LOG and ALLOW: the call runs.
        let nr2 = libc::SYS_getpgid;
        let real = sys(nr2, 0);
        install(0, &rules(&[(nr2, RET_LOG)]));
        say(format!("stack: LOG: call ran {}", sys(nr2, 0) == real));
        // TRACE and USER_NOTIF with nobody to hear them: ENOSYS.
        let (t, u) = (libc::SYS_getsid, libc::SYS_getuid);
        install(0, &rules(&[(t, RET_TRACE | 5), (u, RET_USER_NOTIF)]));
        let r = sys(t, 0);
        say(format!("stack: TRACE untraced: {r} {}", ename(errno())));
        let r = sys(u, 0);
        say(format!(
            "stack: USER_NOTIF without listener: {r} {}",
            ename(errno())
        ));
        // ALLOW under ERRNO: ERRNO wins whichever came first.
        install(0, &rules(&[(nr, RET_ALLOW)]));
        let r = sys(nr, 0);
        say(format!("stack: ALLOW over ERRNO: {r} {}", ename(errno())));
        // KILL_PROCESS over everything.
        install(0, &rules(&[(nr, RET_KILL_PROCESS)]));
        sys(nr, 0);
    });
    say(format!("stack: KILL_PROCESS over ERRNO: {st}"));
}

fn inheritance(argv0: &str, workdir: &str) {
    let st = in_child(|| {
        no_new_privs();
        install(
            0,
            &rules(&[(libc::SYS_getppid, RET_ERRNO | libc::EPERM as u32)]),
        );
        let st = in_child(|| {
            let r = sys(libc::SYS_getppid, 0);
            say(format!(
                "inherit: fork child getppid: {r} {}",
                ename(errno())
            ));
            let (mode, _) = status_seccomp();
            say(format!("inherit: fork child Seccomp: {mode}"));
        });
        say(format!("inherit: fork child {st}"));
        let pid = umt::fork();
        if pid == 0 {
            let (a, b, c) = (
                umt::cstr(argv0),
                umt::cstr(workdir),
                umt::cstr("--after-exec"),
            );
            let argv = [a.as_ptr(), b.as_ptr(), c.as_ptr(), std::ptr::null()];
            // SAFETY: NUL-terminated strings and a NULL-terminated array that outlive the call.
            unsafe { libc::execv(a.as_ptr(), argv.as_ptr()) };
            umt::fail(format!("execv: {}", ename(errno())));
        }
        say(format!(
            "inherit: exec child {}",
            describe_status(umt::waitpid(pid, 0))
        ));
    });
    say(format!("inherit: {st}"));
}

/// The program after execve in [`inheritance`]: the filter is still there.
fn after_exec() {
    let r = sys(libc::SYS_getppid, 0);
    say(format!(
        "inherit: after execve getppid: {r} {}",
        ename(errno())
    ));
    let (mode, _) = status_seccomp();
    say(format!(
        "inherit: after execve Seccomp: {mode}, no_new_privs {}",
        prctl(PR_GET_NO_NEW_PRIVS, 0)
    ));
}

static GO: AtomicI32 = AtomicI32::new(0);

extern "C" fn waiting_thread(_: *mut libc::c_void) -> *mut libc::c_void {
    THREAD_TID.store(sys(libc::SYS_gettid, 0) as i32, Ordering::SeqCst);
    while GO.load(Ordering::SeqCst) == 0 {
        umt::sleep_ms(1);
    }
    let r = sys(libc::SYS_getppid, 0);
    let e = errno();
    THREAD_RESULT.store(if r == -1 { e } else { 0 }, Ordering::SeqCst);
    std::ptr::null_mut()
}

extern "C" fn filtered_thread(_: *mut libc::c_void) -> *mut libc::c_void {
    THREAD_TID.store(sys(libc::SYS_gettid, 0) as i32, Ordering::SeqCst);
    // A filter of its own that the other threads do not have.
    install(0, &rules(&[(libc::SYS_getsid, RET_ERRNO | 1)]));
    GO.store(1, Ordering::SeqCst);
    while GO.load(Ordering::SeqCst) == 1 {
        umt::sleep_ms(1);
    }
    std::ptr::null_mut()
}

fn tsync() {
    let st = in_child(|| {
        no_new_privs();
        let t = spawn(waiting_thread);
        while THREAD_TID.load(Ordering::SeqCst) == 0 {
            umt::sleep_ms(1);
        }
        let r = install(
            FLAG_TSYNC,
            &rules(&[(libc::SYS_getppid, RET_ERRNO | libc::EPERM as u32)]),
        );
        say(format!("tsync: install: {r}"));
        GO.store(1, Ordering::SeqCst);
        join(t);
        say(format!(
            "tsync: the other thread's getppid: {}",
            ename(THREAD_RESULT.load(Ordering::SeqCst))
        ));
    });
    say(format!("tsync: {st}"));
    let st = in_child(|| {
        no_new_privs();
        let t = spawn(filtered_thread);
        while GO.load(Ordering::SeqCst) == 0 {
            umt::sleep_ms(1);
        }
        let p = rules(&[(libc::SYS_getppid, RET_ERRNO | 1)]);
        let r = install(FLAG_TSYNC, &p);
        say(format!(
            "tsync: a thread with its own filter: returned its tid {}",
            r == i64::from(THREAD_TID.load(Ordering::SeqCst))
        ));
        expect_err(
            install(FLAG_TSYNC | FLAG_TSYNC_ESRCH, &p),
            libc::ESRCH,
            "TSYNC_ESRCH",
        );
        say("tsync: with TSYNC_ESRCH: ESRCH");
        // Nothing was installed by the failed calls.
        check_eq(
            sys(libc::SYS_getppid, 0) > 0,
            true,
            "getppid after failed TSYNC",
        );
        GO.store(2, Ordering::SeqCst);
        join(t);
    });
    say(format!("tsync: {st}"));
}

fn pt(req: impl Into<i64>, pid: i32, addr: u64, data: u64) -> i64 {
    // SAFETY: raw ptrace; addresses are the tracer's own live buffers.
    unsafe { libc::syscall(libc::SYS_ptrace, req.into(), pid as i64, addr, data) }
}

fn get_regs(pid: i32) -> libc::user_regs_struct {
    // SAFETY: plain integers.
    let mut r: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: (&mut r as *mut libc::user_regs_struct).cast(),
        iov_len: std::mem::size_of::<libc::user_regs_struct>(),
    };
    ok(
        pt(libc::PTRACE_GETREGSET, pid, 1, &mut iov as *mut _ as u64),
        "GETREGSET",
    );
    r
}

fn set_regs(pid: i32, r: &libc::user_regs_struct) {
    let mut iov = libc::iovec {
        iov_base: (r as *const libc::user_regs_struct).cast_mut().cast(),
        iov_len: std::mem::size_of::<libc::user_regs_struct>(),
    };
    ok(
        pt(libc::PTRACE_SETREGSET, pid, 1, &mut iov as *mut _ as u64),
        "SETREGSET",
    );
}

/// Sets the syscall number at a stop (x86_64 orig_rax; arm64 NT_ARM_SYSTEM_CALL) and,
/// if given, the return register.
fn set_syscall(pid: i32, nr: i64, ret: Option<u64>) {
    let mut r = get_regs(pid);
    #[cfg(target_arch = "x86_64")]
    {
        r.orig_rax = nr as u64;
        if let Some(v) = ret {
            r.rax = v;
        }
        set_regs(pid, &r);
    }
    #[cfg(target_arch = "aarch64")]
    {
        if let Some(v) = ret {
            r.regs[0] = v;
        }
        set_regs(pid, &r);
        let mut n = nr as i32;
        let mut iov = libc::iovec {
            iov_base: (&mut n as *mut i32).cast(),
            iov_len: 4,
        };
        ok(
            pt(
                libc::PTRACE_SETREGSET,
                pid,
                0x404,
                &mut iov as *mut _ as u64,
            ),
            "SETREGSET NT_ARM_SYSTEM_CALL",
        );
    }
}

/// GET_SYSCALL_INFO: (op, nr, the seccomp op's ret_data).
fn syscall_info(pid: i32) -> (u8, i64, u32) {
    let mut b = [0u8; 88];
    let n = ok(
        pt(PTRACE_GET_SYSCALL_INFO, pid, 88, b.as_mut_ptr() as u64),
        "GET_SYSCALL_INFO",
    );
    let nr = i64::from_le_bytes(b[24..32].try_into().unwrap());
    let data = if n >= 84 {
        u32::from_le_bytes(b[80..84].try_into().unwrap())
    } else {
        0
    };
    (b[0], nr, data)
}

fn wait_stop(pid: i32, what: &str) -> i32 {
    let st = umt::waitpid(pid, WALL);
    if !libc::WIFSTOPPED(st) {
        umt::fail(format!("{what}: {}", describe_status(st)));
    }
    st
}

fn trace() {
    let pid = umt::fork();
    if pid == 0 {
        ok(pt(libc::PTRACE_TRACEME as u32, 0, 0, 0), "TRACEME");
        // SAFETY: kill with plain integers.
        unsafe { libc::kill(getpid(), libc::SIGSTOP) };
        no_new_privs();
        let sid = sys(libc::SYS_getsid, 0);
        install(
            0,
            &rules(&[
                (libc::SYS_getppid, RET_TRACE | 0x55),
                (libc::SYS_getpgid, RET_TRACE | 0x66),
                (libc::SYS_getsid, RET_TRACE | 0x77),
                (libc::SYS_getuid, RET_ERRNO | libc::EPERM as u32),
                (-1, RET_ERRNO | libc::EDOM as u32),
            ]),
        );
        let a = sys(libc::SYS_getppid, 0);
        let b = sys(libc::SYS_getpgid, 0);
        let c = sys(libc::SYS_getsid, 0);
        let d = sys(libc::SYS_getuid, 0);
        let e = sys(libc::SYS_getgid, 0);
        let e = if e == -1 {
            ename(errno())
        } else {
            e.to_string()
        };
        say(format!("trace: tracee: cancelled getppid = {a}"));
        say(format!(
            "trace: tracee: getpgid made getpid: {}",
            b == i64::from(getpid())
        ));
        say(format!(
            "trace: tracee: getsid left alone ran: {}",
            c == sid
        ));
        say(format!(
            "trace: tracee: getuid made getpid at the entry stop: {}",
            d == i64::from(getpid())
        ));
        say(format!(
            "trace: tracee: getgid cancelled at entry, the filter judges -1: {e}"
        ));
        umt::exit_now(0);
    }
    wait_stop(pid, "SIGSTOP");
    ok(
        pt(
            libc::PTRACE_SETOPTIONS,
            pid,
            0,
            PTRACE_O_TRACESECCOMP | PTRACE_O_TRACESYSGOOD,
        ),
        "SETOPTIONS",
    );
    ok(pt(libc::PTRACE_CONT, pid, 0, 0), "CONT");
    let seccomp_stop = libc::SIGTRAP | (PTRACE_EVENT_SECCOMP << 8);
    for round in 0..3 {
        let st = wait_stop(pid, "seccomp stop");
        check_eq(st >> 8, seccomp_stop, "PTRACE_EVENT_SECCOMP stop");
        let mut msg = 0u64;
        ok(
            pt(
                libc::PTRACE_GETEVENTMSG,
                pid,
                0,
                &mut msg as *mut u64 as u64,
            ),
            "GETEVENTMSG",
        );
        let (op, nr, data) = syscall_info(pid);
        say(format!(
            "trace: stop {round}: event msg {msg:#x}, info op {op} ret_data {data:#x}, nr {}",
            match nr {
                n if n == libc::SYS_getppid => "getppid",
                n if n == libc::SYS_getpgid => "getpgid",
                n if n == libc::SYS_getsid => "getsid",
                _ => "other",
            }
        ));
        match round {
            0 => set_syscall(pid, -1, Some(4242)),
            1 => set_syscall(pid, libc::SYS_getpid, None),
            _ => {}
        }
        if round < 2 {
            ok(pt(libc::PTRACE_CONT, pid, 0, 0), "CONT");
        }
    }
    // Syscall stops on: at getuid's entry stop the number becomes getpid, before the filter
    // (which refuses getuid) runs.
    let mut changed = false;
    for _ in 0..64 {
        ok(pt(libc::PTRACE_SYSCALL, pid, 0, 0), "PTRACE_SYSCALL");
        let st = wait_stop(pid, "syscall stop");
        if libc::WSTOPSIG(st) != libc::SIGTRAP | 0x80 {
            continue;
        }
        let (op, nr, _) = syscall_info(pid);
        if op == 1 && nr == libc::SYS_getuid {
            set_syscall(pid, libc::SYS_getpid, None);
            changed = true;
            break;
        }
    }
    check(changed, "no getuid entry stop");
    // getgid cancelled at its entry stop (number -1, result 777): the filters still run, on
    // -1, and their ERRNO replaces the tracer's value.
    changed = false;
    for _ in 0..64 {
        ok(pt(libc::PTRACE_SYSCALL, pid, 0, 0), "PTRACE_SYSCALL");
        let st = wait_stop(pid, "syscall stop");
        if libc::WSTOPSIG(st) != libc::SIGTRAP | 0x80 {
            continue;
        }
        let (op, nr, _) = syscall_info(pid);
        if op == 1 && nr == libc::SYS_getgid {
            set_syscall(pid, -1, Some(777));
            changed = true;
            break;
        }
    }
    check(changed, "no getgid entry stop");
    ok(pt(libc::PTRACE_CONT, pid, 0, 0), "CONT");
    let st = umt::waitpid(pid, WALL);
    say(format!("trace: tracee {}", describe_status(st)));
}

/// A 30-rule allow-list (arch check, 30 numbers allowed, ERRNO for the rest), the shape of
/// a typical sandbox profile; `read_arg` first loads args[0] (and ignores it), which makes the
/// verdicts uncacheable.
fn allow_list(read_arg: bool) -> Vec<libc::sock_filter> {
    // What a small program needs, getppid last: the longest walk through the list.
    let nrs = [
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_exit,
        libc::SYS_exit_group,
        libc::SYS_clock_gettime,
        libc::SYS_mmap,
        libc::SYS_munmap,
        libc::SYS_brk,
        libc::SYS_rt_sigaction,
        libc::SYS_rt_sigprocmask,
        libc::SYS_rt_sigreturn,
        libc::SYS_futex,
        libc::SYS_close,
        libc::SYS_openat,
        libc::SYS_fstat,
        libc::SYS_madvise,
        libc::SYS_mprotect,
        libc::SYS_getpid,
        libc::SYS_gettid,
        libc::SYS_tgkill,
        libc::SYS_nanosleep,
        libc::SYS_clock_nanosleep,
        libc::SYS_sched_yield,
        libc::SYS_getrandom,
        libc::SYS_ioctl,
        libc::SYS_writev,
        libc::SYS_readv,
        libc::SYS_lseek,
        libc::SYS_prlimit64,
        libc::SYS_getppid,
    ];
    let mut p = vec![
        stmt(LD_W_ABS, 4),
        jeq(AUDIT_ARCH, 1, 0),
        stmt(RET_K, RET_KILL_PROCESS),
    ];
    if read_arg {
        p.push(stmt(LD_W_ABS, 16));
    }
    p.push(stmt(LD_W_ABS, 0));
    for (i, &nr) in nrs.iter().enumerate() {
        // Jump to the ALLOW at the end; the next rule otherwise.
        let to_allow = (nrs.len() - i - 1 + 1) as u8;
        p.push(jeq(nr as u32, to_allow, 0));
    }
    p.push(stmt(RET_K, RET_ERRNO | libc::EPERM as u32));
    p.push(stmt(RET_K, RET_ALLOW));
    p
}

/// `seccompf --bench N`: ns per getppid without a filter, under a cacheable 30-rule
/// allow-list, and under the same list made uncacheable (not part of the gate).
fn bench(n: u64) {
    let time = |what: &str| {
        let t0 = umt::now_ns();
        for _ in 0..n {
            sys(libc::SYS_getppid, 0);
        }
        let dt = umt::now_ns() - t0;
        say(format!("bench: {what}: {} ns/call", dt / n));
    };
    time("no filter");
    let st = in_child(|| {
        no_new_privs();
        check_eq(install(0, &allow_list(false)), 0, "install allow-list");
        check(sys(libc::SYS_getppid, 0) > 0, "getppid allowed");
        check_eq(sys(libc::SYS_getpgid, 0), -1, "getpgid refused");
        time("30-rule allow-list (cached)");
    });
    check_eq(st.as_str(), "exited 0", "bench child");
    let st = in_child(|| {
        no_new_privs();
        check_eq(install(0, &allow_list(true)), 0, "install allow-list");
        check(sys(libc::SYS_getppid, 0) > 0, "getppid allowed");
        time("30-rule allow-list reading args[0] (uncached)");
    });
    check_eq(st.as_str(), "exited 0", "bench child");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    umt::init("seccompf");
    if args.get(2).map(String::as_str) == Some("--bench") {
        bench(args.get(3).and_then(|s| s.parse().ok()).unwrap_or(200_000));
        umt::exit_now(0);
    }
    if args.get(2).map(String::as_str) == Some("--after-exec") {
        after_exec();
        umt::exit_now(0);
    }
    // As init under linux, /proc is not mounted yet.
    umt::mount_proc_if_init();
    let workdir = args.get(1).cloned().unwrap_or_else(|| "/tmp".into());
    probes();
    strict();
    nnp();
    bad_filters();
    errno_action();
    trap();
    kill_actions();
    stacking();
    inheritance(&args[0], &workdir);
    tsync();
    trace();
    umt::done("seccompf");
}
