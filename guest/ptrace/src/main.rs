//! Guest test `ptrace`: one process tracing another (ptrace(2)).
//!
//! * TRACEME + SIGSTOP: the parent's wait sees the stop, GETSIGINFO names SIGSTOP;
//!   PEEKDATA reads and POKEDATA writes the child's memory.
//! * Syscall stops (TRACESYSGOOD): entry and exit of getppid with GET_SYSCALL_INFO (number,
//!   return value) and the registers; the tracer changes a return value at the exit stop and
//!   cancels a call at its entry (number -1, the tracer's return value).
//! * Signal-delivery stops: a SIGUSR2 replaced by SIGUSR1 on restart, a SIGTERM suppressed.
//! * exec: PTRACE_EVENT_EXEC between execve's entry and exit stops; the exit status of the new
//!   program is the tracer's to see.
//! * Fork tracing (TRACEFORK): the event with the new pid, the child's first stop, its exit
//!   seen by the tracer before its real parent's wait returns.
//! * ATTACH/DETACH of a running process: TracerPid and state `t` in /proc/PID/status.
//! * process_vm_readv/writev naming the caller itself, from the main thread and from a second
//!   thread (the same address space on both sides: the kernel once held the remote side's
//!   lock while writing the local side, and hung; trinity found it).
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then
//! UM-PTRACE-OK.

use std::sync::atomic::{AtomicU64, Ordering};
use umt::{check, check_eq, ok, say};

const PTRACE_O_TRACESYSGOOD: i32 = 1;
const PTRACE_O_TRACEFORK: i32 = 2;
const PTRACE_O_TRACEEXEC: i32 = 0x10;
const PTRACE_EVENT_FORK: i32 = 1;
const PTRACE_EVENT_EXEC: i32 = 4;
const PTRACE_GET_SYSCALL_INFO: u32 = 0x420e;
const WALL: i32 = 0x4000_0000;

/// Memory the tracer reads and writes (the child's copy after fork).
static DATA: [AtomicU64; 2] = [AtomicU64::new(0x1122_3344_5566_7788), AtomicU64::new(0)];
static USR1: AtomicU64 = AtomicU64::new(0);
static USR2: AtomicU64 = AtomicU64::new(0);

fn pt(req: impl Into<i64>, pid: i32, addr: u64, data: u64) -> i64 {
    // SAFETY: raw ptrace; the tracer passes addresses of its own live buffers where the request
    // writes to its memory.
    unsafe { libc::syscall(libc::SYS_ptrace, req.into(), pid as i64, addr, data) }
}

fn sys0(nr: i64) -> i64 {
    // SAFETY: calls without arguments.
    unsafe { libc::syscall(nr) }
}

fn getpid() -> i32 {
    sys0(libc::SYS_getpid) as i32
}

/// Entry or exit of a syscall as GET_SYSCALL_INFO gives it: (op, nr or rval).
fn syscall_info(pid: i32) -> (u8, i64) {
    let mut b = [0u8; 88];
    let n = ok(
        pt(
            PTRACE_GET_SYSCALL_INFO,
            pid,
            b.len() as u64,
            b.as_mut_ptr() as u64,
        ),
        "GET_SYSCALL_INFO",
    );
    check(n >= 24, "GET_SYSCALL_INFO size");
    let w = i64::from_le_bytes(b[24..32].try_into().unwrap());
    (b[0], w)
}

/// The general registers of a stopped tracee (NT_PRSTATUS).
fn get_regs(pid: i32) -> libc::user_regs_struct {
    // SAFETY: user_regs_struct is plain integers.
    let mut r: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: (&mut r as *mut libc::user_regs_struct).cast(),
        iov_len: std::mem::size_of::<libc::user_regs_struct>(),
    };
    ok(
        pt(
            libc::PTRACE_GETREGSET,
            pid,
            1,
            (&mut iov as *mut libc::iovec) as u64,
        ),
        "GETREGSET",
    );
    check_eq(
        iov.iov_len,
        std::mem::size_of::<libc::user_regs_struct>(),
        "GETREGSET length",
    );
    r
}

fn set_regs(pid: i32, r: &libc::user_regs_struct) {
    let mut iov = libc::iovec {
        iov_base: (r as *const libc::user_regs_struct).cast_mut().cast(),
        iov_len: std::mem::size_of::<libc::user_regs_struct>(),
    };
    ok(
        pt(
            libc::PTRACE_SETREGSET,
            pid,
            1,
            (&mut iov as *mut libc::iovec) as u64,
        ),
        "SETREGSET",
    );
}

#[cfg(target_arch = "x86_64")]
fn set_ret(r: &mut libc::user_regs_struct, v: u64) {
    r.rax = v;
}
#[cfg(target_arch = "aarch64")]
fn set_ret(r: &mut libc::user_regs_struct, v: u64) {
    r.regs[0] = v;
}
#[cfg(target_arch = "x86_64")]
fn pc(r: &libc::user_regs_struct) -> u64 {
    r.rip
}
#[cfg(target_arch = "aarch64")]
fn pc(r: &libc::user_regs_struct) -> u64 {
    r.pc
}

/// Cancels the syscall at an entry stop: x86_64 orig_rax = -1 and rax the result; arm64
/// NT_ARM_SYSTEM_CALL = -1 and x0 the result.
fn cancel_syscall(pid: i32, ret: u64) {
    let mut r = get_regs(pid);
    set_ret(&mut r, ret);
    #[cfg(target_arch = "x86_64")]
    {
        r.orig_rax = u64::MAX;
    }
    set_regs(pid, &r);
    #[cfg(target_arch = "aarch64")]
    {
        let mut nr: i32 = -1;
        let mut iov = libc::iovec {
            iov_base: (&mut nr as *mut i32).cast(),
            iov_len: 4,
        };
        ok(
            pt(
                libc::PTRACE_SETREGSET,
                pid,
                0x404,
                (&mut iov as *mut libc::iovec) as u64,
            ),
            "SETREGSET NT_ARM_SYSTEM_CALL",
        );
    }
}

fn wait_stop(pid: i32, what: &str) -> i32 {
    let st = umt::waitpid(pid, WALL);
    if !libc::WIFSTOPPED(st) {
        umt::fail(format!("{what}: {}", umt::describe_status(st)));
    }
    st
}

/// Restarts with PTRACE_SYSCALL and waits for the next stop of the tracee.
fn next_stop(pid: i32, sig: i32, what: &str) -> i32 {
    ok(
        pt(libc::PTRACE_SYSCALL, pid, 0, sig as u64),
        "PTRACE_SYSCALL",
    );
    wait_stop(pid, what)
}

/// Whether `st` is a syscall stop under TRACESYSGOOD.
fn is_syscall_stop(st: i32) -> bool {
    libc::WSTOPSIG(st) == libc::SIGTRAP | 0x80
}

extern "C" fn on_usr1(_: i32) {
    USR1.fetch_add(1, Ordering::SeqCst);
}
extern "C" fn on_usr2(_: i32) {
    USR2.fetch_add(1, Ordering::SeqCst);
}

/// The traced child: every check of what the tracer did is folded into its exit code (the
/// tracee's own output would only add syscall stops).
fn traced_child() -> ! {
    umt::set_handler(libc::SIGUSR1, on_usr1 as *const () as usize, 0, false);
    umt::set_handler(libc::SIGUSR2, on_usr2 as *const () as usize, 0, false);
    ok(pt(libc::PTRACE_TRACEME as u32, 0, 0, 0), "TRACEME");
    // SAFETY: kill takes plain integers.
    unsafe { libc::kill(getpid(), libc::SIGSTOP) };
    let mut code = 0;
    // The tracer poked DATA[1] at the SIGSTOP stop.
    if DATA[1].load(Ordering::SeqCst) != 0xdead_beef {
        code |= 1;
    }
    // getppid: observed; the tracer rewrites its second call's result to 4242.
    let real = sys0(libc::SYS_getppid);
    if sys0(libc::SYS_getppid) != 4242 || real <= 0 {
        code |= 2;
    }
    // getuid, cancelled at entry with result -EPERM.
    if sys0(libc::SYS_getuid) != -(libc::EPERM as i64) {
        code |= 4;
    }
    // SIGUSR2, which the tracer turns into SIGUSR1; SIGTERM, which it suppresses.
    // SAFETY: kill takes plain integers.
    unsafe { libc::kill(getpid(), libc::SIGUSR2) };
    // SAFETY: as above.
    unsafe { libc::kill(getpid(), libc::SIGTERM) };
    if USR1.load(Ordering::SeqCst) != 1 || USR2.load(Ordering::SeqCst) != 0 {
        code |= 8;
    }
    // exec: the new program exits with 40 + code.
    let exe = umt::cstr("/proc/self/exe");
    let a0 = umt::cstr("ptrace");
    let a1 = umt::cstr("--exit");
    let a2 = umt::cstr(&(40 + code).to_string());
    let argv = [a0.as_ptr(), a1.as_ptr(), a2.as_ptr(), std::ptr::null()];
    let envp = [std::ptr::null()];
    // SAFETY: NUL-terminated strings and NULL-terminated arrays that outlive the call.
    unsafe { libc::execve(exe.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    umt::exit_now(100 + umt::errno())
}

fn traceme_and_syscalls() {
    let pid = umt::fork();
    if pid == 0 {
        traced_child();
    }
    let st = wait_stop(pid, "first stop");
    check_eq(libc::WSTOPSIG(st), libc::SIGSTOP, "first stop signal");
    // SAFETY: siginfo_t is plain data.
    let mut si: libc::siginfo_t = unsafe { std::mem::zeroed() };
    ok(
        pt(
            libc::PTRACE_GETSIGINFO,
            pid,
            0,
            (&mut si as *mut libc::siginfo_t) as u64,
        ),
        "GETSIGINFO",
    );
    check_eq(si.si_signo, libc::SIGSTOP, "GETSIGINFO si_signo");
    say("TRACEME: SIGSTOP stop, GETSIGINFO SIGSTOP");
    // PEEKDATA/POKEDATA. The raw call stores the word at *data.
    let mut word = 0u64;
    let a0 = DATA[0].as_ptr() as u64;
    let a1 = DATA[1].as_ptr() as u64;
    ok(
        pt(
            libc::PTRACE_PEEKDATA,
            pid,
            a0,
            (&mut word as *mut u64) as u64,
        ),
        "PEEKDATA",
    );
    check_eq(word, 0x1122_3344_5566_7788, "PEEKDATA value");
    ok(pt(libc::PTRACE_POKEDATA, pid, a1, 0xdead_beef), "POKEDATA");
    ok(
        pt(
            libc::PTRACE_PEEKDATA,
            pid,
            a1,
            (&mut word as *mut u64) as u64,
        ),
        "PEEKDATA 2",
    );
    check_eq(word, 0xdead_beef, "PEEKDATA after POKEDATA");
    check_eq(
        pt(
            libc::PTRACE_PEEKDATA,
            pid,
            8,
            (&mut word as *mut u64) as u64,
        ),
        -1,
        "PEEKDATA at an unmapped address",
    );
    check_eq(umt::errno(), libc::EIO, "PEEKDATA unmapped errno");
    say("PEEKDATA/POKEDATA: ok");
    ok(
        pt(
            libc::PTRACE_SETOPTIONS,
            pid,
            0,
            (PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC) as u64,
        ),
        "SETOPTIONS",
    );
    check_eq(
        pt(libc::PTRACE_SETOPTIONS, pid, 0, 1 << 30),
        -1,
        "SETOPTIONS with an unknown bit",
    );
    check_eq(umt::errno(), libc::EINVAL, "SETOPTIONS unknown bit errno");
    // First getppid: entry and exit as they are.
    let st = next_stop(pid, 0, "getppid entry");
    check(is_syscall_stop(st), "getppid entry is a syscall stop");
    check_eq(
        syscall_info(pid),
        (1, libc::SYS_getppid),
        "getppid entry info",
    );
    let mut msg = 0u64;
    ok(
        pt(
            libc::PTRACE_GETEVENTMSG,
            pid,
            0,
            (&mut msg as *mut u64) as u64,
        ),
        "GETEVENTMSG",
    );
    check_eq(msg, 1, "GETEVENTMSG at an entry stop");
    let r = get_regs(pid);
    check(pc(&r) != 0, "pc at the entry stop");
    #[cfg(target_arch = "x86_64")]
    {
        check_eq(r.orig_rax, libc::SYS_getppid as u64, "orig_rax at entry");
        check_eq(r.rax as i64, -(libc::ENOSYS as i64), "rax at entry");
    }
    let st = next_stop(pid, 0, "getppid exit");
    check(is_syscall_stop(st), "getppid exit is a syscall stop");
    check_eq(
        syscall_info(pid),
        (2, i64::from(getpid())),
        "getppid exit info",
    );
    say("syscall stops: getppid entry and exit");
    // Second getppid: the result becomes 4242.
    next_stop(pid, 0, "getppid 2 entry");
    check_eq(syscall_info(pid).0, 1, "getppid 2 entry op");
    next_stop(pid, 0, "getppid 2 exit");
    let mut r = get_regs(pid);
    set_ret(&mut r, 4242);
    set_regs(pid, &r);
    // getuid, cancelled.
    next_stop(pid, 0, "getuid entry");
    check_eq(
        syscall_info(pid),
        (1, libc::SYS_getuid),
        "getuid entry info",
    );
    cancel_syscall(pid, -(libc::EPERM as i64) as u64);
    next_stop(pid, 0, "getuid exit");
    check_eq(
        syscall_info(pid),
        (2, -(libc::EPERM as i64)),
        "cancelled getuid exit info",
    );
    say("syscall stops: return value changed, call cancelled");
    // kill(SIGUSR2): entry, exit, then the signal-delivery stop.
    let mut sig_stops = Vec::new();
    let mut inject = 0;
    let mut exec_event = false;
    let mut after_exec_exit = None;
    let exited;
    loop {
        ok(
            pt(libc::PTRACE_SYSCALL, pid, 0, inject as u64),
            "PTRACE_SYSCALL",
        );
        inject = 0;
        let st = umt::waitpid(pid, WALL);
        if libc::WIFEXITED(st) {
            exited = libc::WEXITSTATUS(st);
            break;
        }
        check(libc::WIFSTOPPED(st), "stopped or exited");
        if is_syscall_stop(st) {
            let (op, v) = syscall_info(pid);
            if exec_event && op == 2 && after_exec_exit.is_none() {
                after_exec_exit = Some(v);
            }
            continue;
        }
        if st >> 16 == PTRACE_EVENT_EXEC {
            exec_event = true;
            continue;
        }
        let s = libc::WSTOPSIG(st);
        sig_stops.push(umt::signame(s));
        inject = match s {
            libc::SIGUSR2 => libc::SIGUSR1,
            libc::SIGTERM => 0,
            other => other,
        };
    }
    say(format!("signal-delivery stops: {}", sig_stops.join(" ")));
    check(
        exec_event,
        format!("PTRACE_EVENT_EXEC stop (exit {exited})"),
    );
    check_eq(after_exec_exit, Some(0), "execve exit stop value");
    say("exec: event stop, execve returned 0");
    say(format!("tracee exited with {exited}"));
}

/// TRACEFORK: a traced child forks; the tracer gets the event, the new child's stop and its
/// exit, and the real parent's wait still sees the exit afterwards.
fn fork_tracing() {
    let pid = umt::fork();
    if pid == 0 {
        ok(pt(libc::PTRACE_TRACEME as u32, 0, 0, 0), "TRACEME");
        // SAFETY: kill takes plain integers.
        unsafe { libc::kill(getpid(), libc::SIGSTOP) };
        let g = umt::fork();
        if g == 0 {
            umt::exit_now(5);
        }
        let st = umt::waitpid(g, 0);
        umt::exit_now(if libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 5 {
            0
        } else {
            1
        });
    }
    wait_stop(pid, "fork child first stop");
    ok(
        pt(libc::PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEFORK as u64),
        "SETOPTIONS TRACEFORK",
    );
    ok(pt(libc::PTRACE_CONT, pid, 0, 0), "CONT");
    let mut grandchild = 0;
    let mut events = Vec::new();
    let mut done = 0;
    while done < 2 {
        let mut st = 0;
        // SAFETY: st is a valid int.
        let w = unsafe { libc::waitpid(-1, &mut st, WALL) };
        ok(w as i64, "waitpid(-1, __WALL)");
        if libc::WIFEXITED(st) {
            events.push(format!(
                "{} exited {}",
                if w == pid { "child" } else { "grandchild" },
                libc::WEXITSTATUS(st)
            ));
            done += 1;
            continue;
        }
        check(libc::WIFSTOPPED(st), "fork tracing: stopped");
        if w == pid && st >> 16 == PTRACE_EVENT_FORK {
            let mut msg = 0u64;
            ok(
                pt(
                    libc::PTRACE_GETEVENTMSG,
                    pid,
                    0,
                    (&mut msg as *mut u64) as u64,
                ),
                "EVENTMSG",
            );
            grandchild = msg as i32;
            events.push("child: fork event".into());
        } else if w != pid {
            check_eq(w, grandchild, "the new tracee is the forked pid");
            events.push(format!("grandchild: {}", umt::signame(libc::WSTOPSIG(st))));
            ok(pt(libc::PTRACE_CONT, w, 0, 0), "CONT grandchild");
            continue;
        }
        let sig = if st >> 16 != 0 { 0 } else { libc::WSTOPSIG(st) };
        ok(pt(libc::PTRACE_CONT, w, 0, sig as u64), "CONT child");
    }
    for e in events {
        say(format!("fork tracing: {e}"));
    }
}

/// A field of /proc/PID/status.
fn status_field(pid: i32, name: &str) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
        .unwrap_or_default()
}

fn attach_detach() {
    let pid = umt::fork();
    if pid == 0 {
        loop {
            umt::sleep_ms(10);
        }
    }
    check_eq(
        status_field(pid, "TracerPid:"),
        "0".to_string(),
        "TracerPid before",
    );
    ok(pt(libc::PTRACE_ATTACH as u32, pid, 0, 0), "ATTACH");
    check_eq(
        pt(libc::PTRACE_ATTACH as u32, pid, 0, 0),
        -1,
        "a second ATTACH",
    );
    check_eq(umt::errno(), libc::EPERM, "second ATTACH errno");
    let st = wait_stop(pid, "attach stop");
    check_eq(libc::WSTOPSIG(st), libc::SIGSTOP, "attach stop signal");
    check_eq(
        status_field(pid, "TracerPid:"),
        getpid().to_string(),
        "TracerPid while traced",
    );
    check(
        status_field(pid, "State:").starts_with('t'),
        "state t while in a ptrace-stop",
    );
    say("ATTACH: SIGSTOP stop, TracerPid, state t");
    ok(pt(libc::PTRACE_DETACH, pid, 0, 0), "DETACH");
    check_eq(pt(libc::PTRACE_CONT, pid, 0, 0), -1, "CONT after DETACH");
    check_eq(umt::errno(), libc::ESRCH, "CONT after DETACH errno");
    check_eq(
        status_field(pid, "TracerPid:"),
        "0".to_string(),
        "TracerPid after",
    );
    // SAFETY: kill takes plain integers.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let st = umt::waitpid(pid, 0);
    check(
        libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGKILL,
        "detached child killed",
    );
    say("DETACH: untraced, runs on");
}

/// One process_vm_readv (or writev) of `n` bytes between `local` and `remote`, both in the
/// caller's own memory, naming `pid`.
fn process_vm(pid: i32, local: *mut u8, remote: *mut u8, n: usize, write: bool) -> i64 {
    let l = libc::iovec {
        iov_base: local.cast(),
        iov_len: n,
    };
    let r = libc::iovec {
        iov_base: remote.cast(),
        iov_len: n,
    };
    // SAFETY: both iovecs describe live buffers of `n` bytes owned by the caller.
    unsafe {
        if write {
            libc::process_vm_writev(pid, &l, 1, &r, 1, 0) as i64
        } else {
            libc::process_vm_readv(pid, &l, 1, &r, 1, 0) as i64
        }
    }
}

/// process_vm_readv/writev of the caller's own memory, by pid from the main thread and from
/// another thread of the process.
fn process_vm_self() {
    let pid = getpid();
    let mut src = *b"process_vm source";
    let mut dst = [0u8; 17];
    let n = src.len();
    check_eq(
        process_vm(pid, dst.as_mut_ptr(), src.as_mut_ptr(), n, false),
        n as i64,
        "process_vm_readv self",
    );
    check_eq(&dst, &src, "process_vm_readv self data");
    let mut back = *b"written by writev";
    check_eq(
        process_vm(pid, back.as_mut_ptr(), dst.as_mut_ptr(), n, true),
        n as i64,
        "process_vm_writev self",
    );
    check_eq(&dst, &back, "process_vm_writev self data");
    let t = std::thread::spawn(move || {
        let mut a = *b"from the thread..";
        let mut b = [0u8; 17];
        let r = process_vm(pid, b.as_mut_ptr(), a.as_mut_ptr(), a.len(), false);
        (r, b == a)
    });
    let (r, same) = t.join().unwrap_or((-1, false));
    check_eq(
        (r, same),
        (n as i64, true),
        "process_vm_readv self from a thread",
    );
    say("process_vm_readv/writev of itself: ok (main thread and a second thread)");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--exit") {
        umt::exit_now(args.get(2).and_then(|s| s.parse().ok()).unwrap_or(98));
    }
    umt::init("ptrace");
    // As init under linux, /proc is not mounted yet (exec of /proc/self/exe, /proc/PID/status).
    umt::mount_proc_if_init();
    // Not traceable targets: ourselves, nobody.
    check_eq(
        pt(libc::PTRACE_ATTACH as u32, getpid(), 0, 0),
        -1,
        "ATTACH self",
    );
    check_eq(umt::errno(), libc::EPERM, "ATTACH self errno");
    check_eq(
        pt(libc::PTRACE_CONT, 0x3fff_fff0, 0, 0),
        -1,
        "CONT of nobody",
    );
    check_eq(umt::errno(), libc::ESRCH, "CONT of nobody errno");
    traceme_and_syscalls();
    fork_tracing();
    attach_detach();
    process_vm_self();
    umt::done("ptrace");
}
