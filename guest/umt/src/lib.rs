//! Shared helpers of the guest test programs (`futex`, `signals`, `procs`, `pipes`, `unixsock`,
//! `epoll`, `timers`, `mmapfile`, `hostfs`).
//!
//! Every program is a differential test: it runs natively on the host and under the user-mode
//! kernel, and the gate (tests/tests/guest_programs.rs) compares their stdout line by line. So the
//! output must be deterministic: no addresses, pids or timings, only what was checked. A failed
//! check prints `<prog>: FAIL <what>: <detail>` (with the errno name when a call failed) and exits
//! with status 1, so the first differing line of the comparison says what is missing.
//!
//! Raw calls go through `libc`; the helpers here keep the unsafe blocks in the programs small.

use std::ffi::CString;
use std::io::Write;
use std::sync::OnceLock;

static PROG: OnceLock<String> = OnceLock::new();

/// Sets the program name used as the prefix of every line.
pub fn init(name: &str) {
    let _ = PROG.set(name.to_string());
}

fn prog() -> &'static str {
    PROG.get().map(String::as_str).unwrap_or("guest")
}

/// Prints `<prog>: <msg>` and flushes (so the line is out before a fork or an exit).
pub fn say(msg: impl AsRef<str>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}: {}", prog(), msg.as_ref());
    let _ = out.flush();
}

/// Prints `<prog>: FAIL <what>` and exits with status 1.
pub fn fail(what: impl AsRef<str>) -> ! {
    say(format!("FAIL {}", what.as_ref()));
    // SAFETY: _exit ends the process without running destructors; nothing is shared.
    unsafe { libc::_exit(1) }
}

/// Fails with `what` unless `ok`.
pub fn check(ok: bool, what: impl AsRef<str>) {
    if !ok {
        fail(what);
    }
}

/// Fails unless `got == want`, printing both.
pub fn check_eq<T: PartialEq + std::fmt::Debug>(got: T, want: T, what: &str) {
    if got != want {
        fail(format!("{what}: got {got:?}, want {want:?}"));
    }
}

/// The calling thread's errno.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The symbolic name of an errno value (`E?<n>` for ones not listed).
pub fn ename(e: i32) -> String {
    let s = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::E2BIG => "E2BIG",
        libc::ENOEXEC => "ENOEXEC",
        libc::EBADF => "EBADF",
        libc::ECHILD => "ECHILD",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        libc::ENOTTY => "ENOTTY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::ESPIPE => "ESPIPE",
        libc::EROFS => "EROFS",
        libc::EPIPE => "EPIPE",
        libc::ERANGE => "ERANGE",
        libc::ENODATA => "ENODATA",
        libc::ENXIO => "ENXIO",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS (not implemented)",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::ENOTSOCK => "ENOTSOCK",
        libc::EDESTADDRREQ => "EDESTADDRREQ",
        libc::EMSGSIZE => "EMSGSIZE",
        libc::EPROTOTYPE => "EPROTOTYPE",
        libc::ENOPROTOOPT => "ENOPROTOOPT",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::EADDRINUSE => "EADDRINUSE",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::ECONNRESET => "ECONNRESET",
        libc::EISCONN => "EISCONN",
        libc::ENOTCONN => "ENOTCONN",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ECONNREFUSED => "ECONNREFUSED",
        _ => return format!("E?{e}"),
    };
    s.to_string()
}

/// Checks a raw return value: on a negative result fails with `what` and the errno name.
pub fn ok(ret: i64, what: &str) -> i64 {
    if ret < 0 {
        fail(format!("{what}: {}", ename(errno())));
    }
    ret
}

/// Checks that a raw call failed with errno `want`.
pub fn expect_err(ret: i64, want: i32, what: &str) {
    if ret >= 0 {
        fail(format!(
            "{what}: succeeded (returned {ret}), want {}",
            ename(want)
        ));
    }
    let e = errno();
    if e != want {
        fail(format!(
            "{what}: failed with {}, want {}",
            ename(e),
            ename(want)
        ));
    }
}

/// The name of a signal number.
pub fn signame(sig: i32) -> String {
    let s = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("SIG{sig}"),
    };
    s.to_string()
}

/// A wait status in words: `exited N`, `killed SIGX`, `stopped SIGX`, `continued`.
pub fn describe_status(st: i32) -> String {
    if libc::WIFEXITED(st) {
        format!("exited {}", libc::WEXITSTATUS(st))
    } else if libc::WIFSIGNALED(st) {
        format!("killed {}", signame(libc::WTERMSIG(st)))
    } else if libc::WIFSTOPPED(st) {
        format!("stopped {}", signame(libc::WSTOPSIG(st)))
    } else if libc::WIFCONTINUED(st) {
        "continued".to_string()
    } else {
        format!("status {st:#x}")
    }
}

/// fork(2); fails the program if it fails. Returns 0 in the child.
pub fn fork() -> i32 {
    // SAFETY: the programs fork only while single-threaded, so the child's heap and locks are sane.
    let pid = unsafe { libc::fork() };
    ok(pid as i64, "fork");
    pid
}

/// waitpid(2) with `flags`, retrying on EINTR; fails on error. Returns the status.
pub fn waitpid(pid: i32, flags: i32) -> i32 {
    let mut st = 0;
    loop {
        // SAFETY: st is a valid int for the kernel to write.
        let r = unsafe { libc::waitpid(pid, &mut st, flags) };
        if r < 0 && errno() == libc::EINTR {
            continue;
        }
        ok(r as i64, "waitpid");
        return st;
    }
}

/// Ends the calling process at once with `code` (no atexit handlers, no stdio flush).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit takes an int and does not return.
    unsafe { libc::_exit(code) }
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the kernel to write.
    ok(
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } as i64,
        "clock_gettime(CLOCK_MONOTONIC)",
    );
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps `ms` milliseconds with nanosleep(2), resuming after signal handlers.
pub fn sleep_ms(ms: u64) {
    let mut req = libc::timespec {
        tv_sec: (ms / 1000) as _,
        tv_nsec: ((ms % 1000) * 1_000_000) as _,
    };
    loop {
        let mut rem = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: both timespecs are valid.
        let r = unsafe { libc::nanosleep(&req, &mut rem) };
        if r == 0 {
            return;
        }
        if errno() != libc::EINTR {
            fail(format!("nanosleep: {}", ename(errno())));
        }
        req = rem;
    }
}

/// Installs `handler` for `sig` with sigaction(2) and `flags` (SA_SIGINFO is added when the
/// handler takes three arguments: pass `siginfo = true`). An empty sa_mask.
pub fn set_handler(sig: i32, handler: usize, flags: i32, siginfo: bool) {
    // SAFETY: sigaction is plain data; zeroed is a valid starting value.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = handler;
    sa.sa_flags = flags | if siginfo { libc::SA_SIGINFO } else { 0 };
    // SAFETY: sa and its mask are valid; a null old action is allowed.
    unsafe {
        libc::sigemptyset(&mut sa.sa_mask);
    }
    // SAFETY: as above.
    let r = unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) };
    ok(r as i64, &format!("sigaction({})", signame(sig)));
}

/// A signal set with just these signals.
pub fn sigset(sigs: &[i32]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid sigset_t.
    unsafe {
        libc::sigemptyset(&mut set);
        for &s in sigs {
            libc::sigaddset(&mut set, s);
        }
    }
    set
}

/// sigprocmask(how, sigs); returns the old mask.
pub fn sigprocmask(how: i32, sigs: &[i32]) -> libc::sigset_t {
    let set = sigset(sigs);
    let mut old = sigset(&[]);
    // SAFETY: both sets are valid.
    let r = unsafe { libc::sigprocmask(how, &set, &mut old) };
    ok(r as i64, "sigprocmask");
    old
}

/// The work directory: argv[1], which must be a writable directory (the gate passes a fresh one).
pub fn workdir() -> String {
    match std::env::args().nth(1) {
        Some(d) if !d.starts_with('-') => d,
        _ => fail("usage: <program> WORKDIR (a writable directory; the gate passes one)"),
    }
}

/// A C string (fails on an interior NUL).
pub fn cstr(s: &str) -> CString {
    CString::new(s).unwrap_or_else(|_| fail(format!("path {s:?} has a NUL")))
}

/// pipe2(flags) -> (read end, write end).
pub fn pipe2(flags: i32) -> (i32, i32) {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for two ints.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), flags) };
    ok(r as i64, "pipe2");
    (fds[0], fds[1])
}

/// write(2) of all of `buf`; fails on error or a short write.
pub fn write_all(fd: i32, buf: &[u8], what: &str) {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: the pointer and length describe a live slice.
        let r = unsafe { libc::write(fd, buf[off..].as_ptr().cast(), buf.len() - off) };
        if r < 0 && errno() == libc::EINTR {
            continue;
        }
        ok(r as i64, what);
        off += r as usize;
    }
}

/// read(2) once into `buf`; returns the raw result (errno is left for the caller).
pub fn read_raw(fd: i32, buf: &mut [u8]) -> i64 {
    // SAFETY: the pointer and length describe a live mutable slice.
    unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) as i64 }
}

/// close(2); fails on error.
pub fn close(fd: i32) {
    // SAFETY: closing a descriptor number touches no memory.
    ok(unsafe { libc::close(fd) } as i64, "close");
}

/// Prints the final marker `UM-<NAME>-OK`.
/// As init under linux (pid 1 with nothing mounted), mounts proc on /proc, which the program
/// then reads; anywhere else /proc is already there and nothing is done.
pub fn mount_proc_if_init() {
    // SAFETY: plain getpid.
    if unsafe { libc::getpid() } != 1 || std::fs::metadata("/proc/self").is_ok() {
        return;
    }
    let (src, dst) = (cstr("proc"), cstr("/proc"));
    // SAFETY: NUL-terminated strings that outlive the call.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            src.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    ok(r as i64, "mount /proc");
}

pub fn done(name: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "UM-{}-OK", name.to_ascii_uppercase());
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(ename(libc::ENOSYS), "ENOSYS (not implemented)");
        assert_eq!(ename(99999), "E?99999");
        assert_eq!(signame(libc::SIGKILL), "SIGKILL");
    }
}
