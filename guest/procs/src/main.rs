//! Guest test `procs`: fork, execve and the wait statuses.
//!
//! * Exit codes 0, 3 and 255 through waitpid; WNOHANG on a running child; ECHILD with no children;
//!   getppid in the child; waitid(P_PID) fills si_status/si_code.
//! * WIFSIGNALED for a child killed by SIGKILL, by a SIGSEGV fault, by SIGTERM.
//! * WUNTRACED/WCONTINUED: SIGSTOP gives a stopped status, SIGCONT a continued one.
//! * execve of this program again (argv and envp arrive; the exit code comes back), execve of a
//!   missing file fails with ENOENT, an O_CLOEXEC descriptor is closed in the new image while a
//!   plain one stays open.
//!
//! * PR_SET_PDEATHSIG: an orphaned grandchild gets its signal when its parent exits.
//! * A PID namespace (root only, as natively): its first process is pid 1 with parent 0, and
//!   pids coming out of the kernel elsewhere are in the caller's namespace too: the holder of
//!   a record lock (F_GETLK's l_pid), a descriptor's owner (F_GETOWN) and a socket peer
//!   (SO_PEERCRED).
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then UM-PROCS-OK.
//! Usage: procs WORKDIR (unused, for symmetry with the others). Internally re-executed as
//! `procs --exec-child CODE CLOEXEC_FD KEPT_FD`.

use umt::{check, check_eq, expect_err, ok, say};

fn status_of(pid: i32) -> String {
    umt::describe_status(umt::waitpid(pid, 0))
}

fn no_core() {
    let rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid struct; a child's own limit (no core file natively).
    unsafe { libc::setrlimit(libc::RLIMIT_CORE, &rl) };
}

fn exit_codes() {
    for code in [0, 3, 255] {
        let pid = umt::fork();
        if pid == 0 {
            umt::exit_now(code);
        }
        check_eq(
            status_of(pid),
            format!("exited {code}"),
            "child exit status",
        );
    }
    say("exit codes 0 3 255 seen by waitpid");

    // SAFETY: getpid has no arguments.
    let me = unsafe { libc::getpid() };
    let (r, w) = umt::pipe2(0);
    let pid = umt::fork();
    if pid == 0 {
        // SAFETY: no arguments.
        let pp = unsafe { libc::getppid() };
        umt::exit_now(if pp == me { 0 } else { 1 });
    }
    check_eq(
        status_of(pid),
        "exited 0".into(),
        "child's getppid() is the parent's pid (1 = no)",
    );
    say("child getppid is parent");

    let pid = umt::fork();
    if pid == 0 {
        let mut b = [0u8; 1];
        umt::read_raw(r, &mut b);
        umt::exit_now(9);
    }
    let mut st = 0;
    // SAFETY: st is a valid int.
    let got = unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
    check_eq(got, 0, "waitpid WNOHANG on a running child");
    umt::write_all(w, b"g", "release the child");
    check_eq(status_of(pid), "exited 9".into(), "child exit status");
    say("WNOHANG on a running child returns 0");
    umt::close(r);
    umt::close(w);

    let pid = umt::fork();
    if pid == 0 {
        umt::exit_now(17);
    }
    // SAFETY: zeroed siginfo for the kernel to fill.
    let mut si: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid siginfo pointer.
    ok(
        unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut si, libc::WEXITED) } as i64,
        "waitid",
    );
    check_eq(si.si_code, libc::CLD_EXITED, "waitid si_code");
    // SAFETY: a CLD_* siginfo has si_pid and si_status.
    let (spid, sst) = unsafe { (si.si_pid(), si.si_status()) };
    check_eq(spid, pid, "waitid si_pid");
    check_eq(sst, 17, "waitid si_status");
    say("waitid: CLD_EXITED status 17");

    let mut st = 0;
    // SAFETY: valid int.
    let r = unsafe { libc::waitpid(-1, &mut st, 0) };
    expect_err(r as i64, libc::ECHILD, "waitpid(-1) without children");
    say("waitpid without children: ECHILD");
}

fn killed() {
    let pid = umt::fork();
    if pid == 0 {
        // SAFETY: plain integers.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        umt::exit_now(1);
    }
    check_eq(
        status_of(pid),
        "killed SIGKILL".into(),
        "child that SIGKILLs itself",
    );

    let pid = umt::fork();
    if pid == 0 {
        no_core();
        // SAFETY: deliberately faulting write to an unmapped low address.
        unsafe { std::ptr::write_volatile(8usize as *mut u32, 1) };
        umt::exit_now(1);
    }
    check_eq(
        status_of(pid),
        "killed SIGSEGV".into(),
        "child that writes to address 8",
    );

    let pid = umt::fork();
    if pid == 0 {
        loop {
            // SAFETY: pause has no arguments.
            unsafe { libc::pause() };
        }
    }
    // SAFETY: plain integers.
    ok(
        unsafe { libc::kill(pid, libc::SIGTERM) } as i64,
        "kill SIGTERM",
    );
    check_eq(
        status_of(pid),
        "killed SIGTERM".into(),
        "paused child sent SIGTERM",
    );
    say("WIFSIGNALED: SIGKILL, SIGSEGV, SIGTERM");
}

fn stop_continue() {
    let pid = umt::fork();
    if pid == 0 {
        loop {
            // SAFETY: pause has no arguments.
            unsafe { libc::pause() };
        }
    }
    // SAFETY: plain integers.
    ok(
        unsafe { libc::kill(pid, libc::SIGSTOP) } as i64,
        "kill SIGSTOP",
    );
    let st = umt::waitpid(pid, libc::WUNTRACED);
    check_eq(
        umt::describe_status(st),
        "stopped SIGSTOP".into(),
        "WUNTRACED after SIGSTOP",
    );
    let mut st = 0;
    // SAFETY: valid int.
    let r = unsafe { libc::waitpid(pid, &mut st, libc::WUNTRACED | libc::WNOHANG) };
    check_eq(
        r,
        0,
        "a stop is reported once (second WUNTRACED|WNOHANG wait)",
    );
    // SAFETY: plain integers.
    ok(
        unsafe { libc::kill(pid, libc::SIGCONT) } as i64,
        "kill SIGCONT",
    );
    let st = umt::waitpid(pid, libc::WCONTINUED);
    check_eq(
        umt::describe_status(st),
        "continued".into(),
        "WCONTINUED after SIGCONT",
    );
    // SAFETY: plain integers.
    ok(
        unsafe { libc::kill(pid, libc::SIGKILL) } as i64,
        "kill SIGKILL",
    );
    check_eq(
        status_of(pid),
        "killed SIGKILL".into(),
        "killed after continuing",
    );
    say("WUNTRACED: stopped SIGSTOP; WCONTINUED: continued; then killed SIGKILL");

    // A stopped child can be killed without being continued first.
    let pid = umt::fork();
    if pid == 0 {
        loop {
            // SAFETY: no arguments.
            unsafe { libc::pause() };
        }
    }
    // SAFETY: plain integers.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    check_eq(
        umt::describe_status(umt::waitpid(pid, libc::WUNTRACED)),
        "stopped SIGSTOP".into(),
        "stop",
    );
    // SAFETY: plain integers.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    check_eq(
        status_of(pid),
        "killed SIGKILL".into(),
        "SIGKILL of a stopped child",
    );
    say("SIGKILL ends a stopped child");
}

fn exec_tests() {
    let me = std::env::args().next().unwrap_or_default();
    check(
        me.starts_with('/'),
        "argv[0] must be an absolute path (the gate runs us by one)",
    );
    let (cr, _cw) = umt::pipe2(libc::O_CLOEXEC);
    let (kr, _kw) = umt::pipe2(0);
    let pid = umt::fork();
    if pid == 0 {
        let args = [
            me.clone(),
            "--exec-child".into(),
            "5".into(),
            cr.to_string(),
            kr.to_string(),
        ];
        let cargs: Vec<_> = args.iter().map(|a| umt::cstr(a)).collect();
        let mut argv: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
        argv.push(std::ptr::null());
        let env = [umt::cstr("UMTEST=exec-env"), umt::cstr("PATH=/bin")];
        let envp = [env[0].as_ptr(), env[1].as_ptr(), std::ptr::null()];
        // SAFETY: NULL-terminated arrays of valid C strings.
        unsafe { libc::execve(cargs[0].as_ptr(), argv.as_ptr(), envp.as_ptr()) };
        umt::exit_now(100 + umt::errno().min(100));
    }
    check_eq(
        status_of(pid),
        "exited 5".into(),
        "re-executed child (exit 11: argv wrong, 12: env wrong, 13: O_CLOEXEC fd still open, 14: plain fd closed, 100+errno: execve failed)",
    );
    say("execve: argv and envp passed, O_CLOEXEC fd closed, plain fd kept, exit code 5");

    let pid = umt::fork();
    if pid == 0 {
        let p = umt::cstr("/nonexistent/um-no-such-program");
        let argv = [p.as_ptr(), std::ptr::null()];
        let envp = [std::ptr::null()];
        // SAFETY: valid arrays.
        let r = unsafe { libc::execve(p.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
        umt::exit_now(if r == -1 && umt::errno() == libc::ENOENT {
            0
        } else {
            1
        });
    }
    check_eq(
        status_of(pid),
        "exited 0".into(),
        "execve of a missing file fails with ENOENT (1 = not)",
    );
    say("execve of a missing file: ENOENT");

    // vfork-style: posix_spawn-like use of vfork then exec (std::process uses it).
    let out = std::process::Command::new(&me)
        .args(["--exec-child", "0", "-1", "-1"])
        .env_clear()
        .env("UMTEST", "exec-env")
        .output();
    match out {
        Ok(o) => check_eq(
            o.status.code(),
            Some(0),
            "std::process::Command child exit code",
        ),
        Err(e) => umt::fail(format!("std::process::Command spawn: {e}")),
    }
    say("std::process::Command (clone+exec) child ran");
}

fn exec_child(args: &[String]) -> ! {
    let code: i32 = args[2].parse().unwrap_or(99);
    let cloexec_fd: i32 = args[3].parse().unwrap_or(-1);
    let kept_fd: i32 = args[4].parse().unwrap_or(-1);
    if args.len() != 5 {
        umt::exit_now(11);
    }
    if std::env::var("UMTEST").ok().as_deref() != Some("exec-env") {
        umt::exit_now(12);
    }
    // SAFETY: F_GETFD on a descriptor number touches no memory.
    if cloexec_fd >= 0 && unsafe { libc::fcntl(cloexec_fd, libc::F_GETFD) } != -1 {
        umt::exit_now(13);
    }
    // SAFETY: as above.
    if kept_fd >= 0 && unsafe { libc::fcntl(kept_fd, libc::F_GETFD) } == -1 {
        umt::exit_now(14);
    }
    umt::exit_now(code);
}

/// PR_SET_PDEATHSIG: a grandchild that asked for SIGUSR1 gets it when its parent exits, and
/// reports through a pipe (it is no longer our child, so we cannot wait for it).
fn pdeath_signal() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static GOT: AtomicBool = AtomicBool::new(false);
    extern "C" fn on_usr1(_: i32) {
        GOT.store(true, Ordering::SeqCst);
    }
    let mut fds = [0i32; 2];
    let mut armed = [0i32; 2];
    // SAFETY: pipe/fork/prctl/signal/usleep/write/read/_exit with valid arguments; the children
    // only make async-signal-safe calls before they exit.
    let verdict = unsafe {
        ok(libc::pipe(fds.as_mut_ptr()) as i64, "pipe");
        ok(libc::pipe(armed.as_mut_ptr()) as i64, "pipe");
        let mid = libc::fork();
        if mid == 0 {
            let g = libc::fork();
            if g == 0 {
                libc::signal(libc::SIGUSR1, on_usr1 as extern "C" fn(i32) as usize);
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGUSR1 as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                // Armed: the parent may die now.
                libc::write(armed[1], b"a".as_ptr().cast(), 1);
                let mut v = b'N';
                for _ in 0..500 {
                    if GOT.load(Ordering::SeqCst) {
                        v = b'Y';
                        break;
                    }
                    libc::usleep(10_000);
                }
                libc::write(fds[1], (&v as *const u8).cast(), 1);
                libc::_exit(0);
            }
            // Die once the grandchild has armed its parent-death signal.
            let mut b = 0u8;
            libc::read(armed[0], (&mut b as *mut u8).cast(), 1);
            libc::_exit(0);
        }
        libc::close(fds[1]);
        libc::close(armed[0]);
        libc::close(armed[1]);
        let mut st = 0;
        libc::waitpid(mid, &mut st, 0);
        let mut v = 0u8;
        let n = libc::read(fds[0], (&mut v as *mut u8).cast(), 1);
        libc::close(fds[0]);
        if n == 1 { v } else { b'?' }
    };
    check_eq(
        verdict,
        b'Y',
        "PR_SET_PDEATHSIG delivers SIGUSR1 when the parent exits",
    );
    say("pdeathsig: the orphaned grandchild got its signal");
}

/// The child of [`pid_namespace`], pid 1 of a new namespace: its pids, a lock it holds as
/// a child of its own sees it, and an owner it sets, as one line through `out`.
fn pidns_init(out: i32) -> ! {
    // SAFETY: plain calls with valid arguments in a single-threaded child; the buffers live
    // on this stack and the lock struct is fully initialised by zeroing.
    unsafe {
        let (me, parent) = (libc::getpid(), libc::getppid());
        let path = b"/tmp/um-procs-pidns-lock\0";
        let fd = libc::open(
            path.as_ptr().cast(),
            libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC,
            0o600,
        );
        let mut fl: libc::flock = std::mem::zeroed();
        fl.l_type = libc::F_WRLCK as i16;
        fl.l_whence = libc::SEEK_SET as i16;
        libc::fcntl(fd, libc::F_SETLK, &fl);
        let mut ready = [0i32; 2];
        libc::pipe(ready.as_mut_ptr());
        let c = libc::fork();
        if c == 0 {
            let mut q: libc::flock = std::mem::zeroed();
            q.l_type = libc::F_WRLCK as i16;
            q.l_whence = libc::SEEK_SET as i16;
            libc::fcntl(fd, libc::F_GETLK, &mut q);
            let b = [q.l_pid as u8];
            libc::write(ready[1], b.as_ptr().cast(), 1);
            libc::_exit(0);
        }
        let mut holder = [0u8; 1];
        libc::read(ready[0], holder.as_mut_ptr().cast(), 1);
        let mut st = 0;
        libc::waitpid(c, &mut st, 0);
        libc::fcntl(fd, libc::F_SETOWN, me);
        let owner = libc::fcntl(fd, libc::F_GETOWN);
        let mut sv = [0i32; 2];
        libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr());
        let mut cred: libc::ucred = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        libc::getsockopt(
            sv[0],
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        );
        libc::unlink(path.as_ptr().cast());
        let line = format!(
            "pidns: pid {me} ppid {parent} child {c} lock holder {} owner {owner} peer {}\n",
            holder[0], cred.pid
        );
        libc::write(out, line.as_ptr().cast(), line.len());
        libc::_exit(0);
    }
}

/// unshare(CLONE_NEWPID) in a child, whose next child is pid 1 of the new namespace.
fn pid_namespace() {
    let mut fds = [0i32; 2];
    // SAFETY: pipe/fork/unshare/read/waitpid with valid arguments; the children exit with
    // _exit and make only plain calls.
    let line = unsafe {
        ok(libc::pipe(fds.as_mut_ptr()) as i64, "pipe");
        let mid = libc::fork();
        if mid == 0 {
            libc::close(fds[0]);
            if libc::unshare(libc::CLONE_NEWPID) != 0 {
                let e = b"pidns: unshare(CLONE_NEWPID) refused\n";
                libc::write(fds[1], e.as_ptr().cast(), e.len());
                libc::_exit(1);
            }
            let init = libc::fork();
            if init == 0 {
                pidns_init(fds[1]);
            }
            let mut st = 0;
            libc::waitpid(init, &mut st, 0);
            libc::_exit(0);
        }
        libc::close(fds[1]);
        let mut buf = vec![0u8; 256];
        let n = libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len());
        libc::close(fds[0]);
        let mut st = 0;
        libc::waitpid(mid, &mut st, 0);
        String::from_utf8_lossy(&buf[..n.max(0) as usize]).into_owned()
    };
    check_eq(
        line.trim_end(),
        "pidns: pid 1 ppid 0 child 2 lock holder 1 owner 1 peer 1",
        "a new PID namespace numbers its processes from 1, locks and owners included",
    );
    say(line.trim_end());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--exec-child") && args.len() >= 5 {
        exec_child(&args);
    }
    umt::init("procs");
    exit_codes();
    killed();
    stop_continue();
    exec_tests();
    pdeath_signal();
    pid_namespace();
    umt::done("procs");
}
