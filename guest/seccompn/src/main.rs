//! Guest test `seccompn`: seccomp user notification (kernel/src/seccomp/notify.rs,
//! seccomp_unotify(2)).
//!
//! Filters are per thread, so a worker thread installs a filter with
//! SECCOMP_FILTER_FLAG_NEW_LISTENER that sends getpgid(2) to the listener, and the main
//! thread (unfiltered, sharing the descriptor table) supervises it:
//! * probes: GET_ACTION_AVAIL USER_NOTIF, GET_NOTIF_SIZES, TSYNC|NEW_LISTENER (EINVAL
//!   without TSYNC_ESRCH), one listener per chain (EBUSY), a new one once it is closed,
//!   the descriptor's close-on-exec flag;
//! * RECV: nr, arch, args, the caller's tid; SEND with a value, an errno, CONTINUE; the
//!   checks of SEND (EINVAL, ENOENT, EINPROGRESS) and RECV (EINVAL for a dirty buffer);
//!   ID_VALID before and after the answer; poll states (none, POLLIN, POLLOUT);
//! * a signal interrupting a received notification (EINTR without SA_RESTART; with it the
//!   call restarts and is notified anew with the next id);
//!   WAIT_KILLABLE_RECV ignoring it once received;
//! * NOTIF_ADDFD: the lowest free number or SETFD's, close-on-exec, a replaced
//!   descriptor, SEND (the call returns the descriptor), its checks, and the table of a
//!   forked child rather than the supervisor's;
//! * POLLHUP and RECV's ENOENT once the filter's thread is gone; a listener closed while a
//!   notification waits (ENOSYS), and later verdicts without a listener (ENOSYS).
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then
//! UM-SECCOMPN-OK.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use umt::{check, check_eq, ename, errno, expect_err, ok, say};

const SECCOMP_SET_MODE_FILTER: u64 = 1;
const SECCOMP_GET_ACTION_AVAIL: u64 = 2;
const SECCOMP_GET_NOTIF_SIZES: u64 = 3;
const FLAG_TSYNC: u64 = 1;
const FLAG_NEW_LISTENER: u64 = 8;
const FLAG_TSYNC_ESRCH: u64 = 16;
const FLAG_WAIT_KILLABLE_RECV: u64 = 32;

const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_USER_NOTIF: u32 = 0x7fc0_0000;
const RET_ALLOW: u32 = 0x7fff_0000;

const NOTIF_RECV: u64 = 0xc050_2100;
const NOTIF_SEND: u64 = 0xc018_2101;
const NOTIF_ID_VALID: u64 = 0x4008_2102;
const NOTIF_ADDFD: u64 = 0x4018_2103;
const FLAG_CONTINUE: u32 = 1;
const ADDFD_SETFD: u32 = 1;
const ADDFD_SEND: u32 = 2;

const PR_SET_NO_NEW_PRIVS: i32 = 38;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const RET_K: u16 = 0x06;

/// `struct seccomp_notif`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Notif {
    id: u64,
    pid: u32,
    flags: u32,
    nr: i32,
    arch: u32,
    ip: u64,
    args: [u64; 6],
}

/// `struct seccomp_notif_resp`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Resp {
    id: u64,
    val: i64,
    error: i32,
    flags: u32,
}

/// `struct seccomp_notif_addfd`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Addfd {
    id: u64,
    flags: u32,
    srcfd: u32,
    newfd: u32,
    newfd_flags: u32,
}

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

/// Arch check, then USER_NOTIF for getpgid, ALLOW for the rest.
fn notify_getpgid() -> Vec<libc::sock_filter> {
    vec![
        stmt(LD_W_ABS, 4),
        jeq(AUDIT_ARCH, 1, 0),
        stmt(RET_K, RET_KILL_PROCESS),
        stmt(LD_W_ABS, 0),
        jeq(libc::SYS_getpgid as u32, 0, 1),
        stmt(RET_K, RET_USER_NOTIF),
        stmt(RET_K, RET_ALLOW),
    ]
}

fn seccomp(op: u64, flags: u64, args: u64) -> i64 {
    // SAFETY: raw seccomp(2) with a pointer to live memory of the right type.
    unsafe { libc::syscall(libc::SYS_seccomp, op, flags, args) }
}

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

fn ioctl<T>(fd: i32, cmd: u64, arg: &mut T) -> i64 {
    // SAFETY: `arg` is live memory of the size the command's number encodes.
    unsafe { libc::syscall(libc::SYS_ioctl, fd, cmd, arg as *mut T as u64) }
}

fn recv(fd: i32) -> Notif {
    let mut n = Notif::default();
    ok(ioctl(fd, NOTIF_RECV, &mut n), "NOTIF_RECV");
    n
}

fn send(fd: i32, id: u64, val: i64, error: i32, flags: u32) -> i64 {
    let mut r = Resp {
        id,
        val,
        error,
        flags,
    };
    ioctl(fd, NOTIF_SEND, &mut r)
}

fn id_valid(fd: i32, id: u64) -> String {
    let mut id = id;
    let r = ioctl(fd, NOTIF_ID_VALID, &mut id);
    if r == 0 {
        "valid".into()
    } else {
        ename(errno())
    }
}

/// poll(2) on the listener for POLLIN|POLLOUT, waiting up to `ms`; the events in words.
fn poll_state(fd: i32, ms: i32) -> String {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN | libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r < 0 {
        return ename(errno());
    }
    let mut s = Vec::new();
    for (bit, name) in [
        (libc::POLLIN, "IN"),
        (libc::POLLOUT, "OUT"),
        (libc::POLLHUP, "HUP"),
        (libc::POLLERR, "ERR"),
    ] {
        if p.revents & bit != 0 {
            s.push(name);
        }
    }
    if s.is_empty() {
        "none".into()
    } else {
        s.join("|")
    }
}

/// Polls until the listener shows `want` (at most 5 s).
fn wait_poll(fd: i32, want: i16) {
    let mut p = libc::pollfd {
        fd,
        events: want,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, 5000) };
    check(
        r == 1 && p.revents & want != 0,
        "listener never became ready",
    );
}

fn getpgid6(a: u64) -> (i64, i32) {
    // SAFETY: getpgid with extra integer arguments (ignored by the kernel, seen by the filter).
    let r = unsafe { libc::syscall(libc::SYS_getpgid, a, a + 1, a + 2, 0, 0, 0xabcd) };
    (r, if r < 0 { errno() } else { 0 })
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn describe((r, e): (i64, i32)) -> String {
    if r < 0 {
        format!("-1 {}", ename(e))
    } else {
        format!("{r}")
    }
}

static SIGNALS: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_usr1(_: i32) {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// A worker thread: installs the filter with `flags`, sends the listener and its tid, then
/// for each argument makes the notified call and reports the result.
struct Worker {
    fd: i32,
    tid: i32,
    results: mpsc::Receiver<(i64, i32)>,
    handle: std::thread::JoinHandle<()>,
}

fn worker(flags: u64, calls: Vec<u64>) -> Worker {
    let (tx, rx) = mpsc::channel::<(i64, i32)>();
    let handle = std::thread::spawn(move || {
        let fd = install(FLAG_NEW_LISTENER | flags, &notify_getpgid());
        let _ = tx.send((fd, if fd < 0 { errno() } else { 0 }));
        let _ = tx.send((i64::from(gettid()), 0));
        for a in calls {
            let _ = tx.send(getpgid6(a));
        }
    });
    let (fd, e) = rx.recv().unwrap_or((-1, 0));
    if fd < 0 {
        umt::fail(format!("NEW_LISTENER: {}", ename(e)));
    }
    let tid = rx.recv().unwrap_or((0, 0)).0 as i32;
    Worker {
        fd: fd as i32,
        tid,
        results: rx,
        handle,
    }
}

fn tgkill(tid: i32, sig: i32) {
    // SAFETY: tgkill with integer arguments.
    let r = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, sig) };
    ok(r, "tgkill");
}

fn probes() {
    let a = RET_USER_NOTIF;
    let r = seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &a as *const u32 as u64);
    say(format!("GET_ACTION_AVAIL USER_NOTIF: {r}"));
    let mut sizes = [0u16; 3];
    ok(
        seccomp(SECCOMP_GET_NOTIF_SIZES, 0, sizes.as_mut_ptr() as u64),
        "GET_NOTIF_SIZES",
    );
    say(format!("GET_NOTIF_SIZES: {sizes:?}"));
    // In a child: these filters stay there.
    let pid = umt::fork();
    if pid == 0 {
        let p = notify_getpgid();
        expect_err(
            install(FLAG_TSYNC | FLAG_NEW_LISTENER, &p),
            libc::EINVAL,
            "TSYNC|NEW_LISTENER",
        );
        let fd = ok(
            install(FLAG_TSYNC | FLAG_TSYNC_ESRCH | FLAG_NEW_LISTENER, &p),
            "TSYNC|TSYNC_ESRCH|NEW_LISTENER",
        ) as i32;
        // SAFETY: fcntl with an integer command.
        let fdflags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        say(format!(
            "listener close-on-exec: {}",
            fdflags & libc::FD_CLOEXEC
        ));
        expect_err(
            install(FLAG_NEW_LISTENER, &p),
            libc::EBUSY,
            "a second listener",
        );
        // Without a listener flag the chain may grow.
        ok(install(0, &p), "a filter without a listener");
        umt::close(fd);
        let fd2 = ok(install(FLAG_NEW_LISTENER, &p), "a listener after close") as i32;
        umt::close(fd2);
        // Every listener closed: the verdict gets ENOSYS.
        say(format!(
            "USER_NOTIF, listeners closed: {}",
            describe(getpgid6(0))
        ));
        umt::exit_now(0);
    }
    say(format!(
        "probe child: {}",
        umt::describe_status(umt::waitpid(pid, 0))
    ));
}

/// Answers with a value, an errno, CONTINUE; SEND's and RECV's checks; ID_VALID; poll.
fn answers() {
    // SAFETY: getpgid(0) of the process, for CONTINUE's result.
    let real = unsafe { libc::getpgid(0) } as i64;
    let w = worker(0, vec![0x1111, 0x2222, 0, 0x3333, 0x4444]);
    let fd = w.fd;
    wait_poll(fd, libc::POLLIN);
    say(format!("poll, call waiting: {}", poll_state(fd, 0)));
    // RECV takes only a zeroed struct.
    let mut dirty = Notif {
        pid: 1,
        ..Default::default()
    };
    expect_err(
        ioctl(fd, NOTIF_RECV, &mut dirty),
        libc::EINVAL,
        "RECV dirty",
    );
    let n = recv(fd);
    say(format!(
        "RECV: nr is getpgid {}, arch ok {}, args {:#x} {:#x} {:#x} {:#x}, pid is the caller {}, flags {}",
        n.nr as i64 == libc::SYS_getpgid,
        n.arch == AUDIT_ARCH,
        n.args[0],
        n.args[1],
        n.args[2],
        n.args[5],
        n.pid as i32 == w.tid,
        n.flags
    ));
    check(n.ip != 0, "instruction_pointer is 0");
    say(format!("poll, received: {}", poll_state(fd, 0)));
    say(format!(
        "ID_VALID before the answer: {}",
        id_valid(fd, n.id)
    ));
    // SEND's checks come before the id is looked up.
    expect_err(send(fd, n.id, 0, 0, 2), libc::EINVAL, "SEND flags 2");
    expect_err(
        send(fd, n.id, 1, 0, FLAG_CONTINUE),
        libc::EINVAL,
        "CONTINUE with a value",
    );
    expect_err(
        send(fd, n.id, 0, -1, FLAG_CONTINUE),
        libc::EINVAL,
        "CONTINUE with an error",
    );
    expect_err(
        send(fd, n.id + 1000, 0, 0, 0),
        libc::ENOENT,
        "SEND unknown id",
    );
    ok(send(fd, n.id, 42, 0, 0), "SEND 42");
    say(format!("ID_VALID after the answer: {}", id_valid(fd, n.id)));
    let r = w.results.recv().unwrap_or((-9, 0));
    say(format!("answered with a value: {}", describe(r)));
    expect_err(send(fd, n.id, 1, 0, 0), libc::ENOENT, "SEND twice");

    // An errno; and the next id is the next number, unreceived: EINPROGRESS.
    wait_poll(fd, libc::POLLIN);
    expect_err(
        send(fd, n.id + 1, 0, 0, 0),
        libc::EINPROGRESS,
        "SEND unreceived",
    );
    let n2 = recv(fd);
    say(format!(
        "second: id is the next {}, arg {:#x}",
        n2.id == n.id + 1,
        n2.args[0]
    ));
    ok(send(fd, n2.id, 0, -libc::EPERM, 0), "SEND -EPERM");
    say(format!(
        "answered with an errno: {}",
        describe(w.results.recv().unwrap_or((-9, 0)))
    ));

    // CONTINUE: the call runs.
    let n3 = recv(fd);
    ok(send(fd, n3.id, 0, 0, FLAG_CONTINUE), "SEND CONTINUE");
    let r = w.results.recv().unwrap_or((-9, 0));
    say(format!("CONTINUE ran the call: {}", r.0 == real));

    // A value with an error: the error wins (syscall_set_return_value).
    let n4 = recv(fd);
    ok(send(fd, n4.id, 5, -libc::EACCES, 0), "SEND 5 and -EACCES");
    say(format!(
        "value and errno: {}",
        describe(w.results.recv().unwrap_or((-9, 0)))
    ));

    // A signal without SA_RESTART interrupts a received notification: EINTR, and the
    // notification is gone.
    umt::set_handler(libc::SIGUSR1, on_usr1 as *const () as usize, 0, false);
    let n5 = recv(fd);
    tgkill(w.tid, libc::SIGUSR1);
    say(format!(
        "signal, no SA_RESTART: {}",
        describe(w.results.recv().unwrap_or((-9, 0)))
    ));
    say(format!(
        "ID_VALID after the signal: {}",
        id_valid(fd, n5.id)
    ));
    expect_err(send(fd, n5.id, 1, 0, 0), libc::ENOENT, "SEND after signal");

    let _ = w.handle.join();
    say(format!(
        "handler ran {} times",
        SIGNALS.load(Ordering::SeqCst)
    ));
    // The filter's only thread is gone: POLLHUP, and RECV has nothing to wait for.
    wait_poll(fd, libc::POLLHUP);
    say(format!("poll, thread gone: {}", poll_state(fd, 0)));
    let mut n = Notif::default();
    expect_err(ioctl(fd, NOTIF_RECV, &mut n), libc::ENOENT, "RECV, no task");
    umt::close(fd);
}

/// WAIT_KILLABLE_RECV: once received, a non-fatal signal does not interrupt.
fn killable() {
    umt::set_handler(libc::SIGUSR1, on_usr1 as *const () as usize, 0, false);
    let w = worker(FLAG_WAIT_KILLABLE_RECV, vec![0x7777]);
    let fd = w.fd;
    let n = recv(fd);
    tgkill(w.tid, libc::SIGUSR1);
    umt::sleep_ms(200);
    say(format!(
        "WAIT_KILLABLE_RECV, signalled: {}",
        id_valid(fd, n.id)
    ));
    ok(send(fd, n.id, 9, 0, 0), "SEND 9");
    say(format!(
        "WAIT_KILLABLE_RECV answer: {}",
        describe(w.results.recv().unwrap_or((-9, 0)))
    ));
    let _ = w.handle.join();
    umt::close(fd);
}

/// SA_RESTART: a signal withdraws the notification (kernel/seccomp.c
/// `seccomp_do_user_notification`: the interrupted wait's `-ERESTARTSYS` becomes the call's
/// return value), and once the handler returns the call runs again and is notified anew,
/// with the next id; the old id is gone.
fn restarts() {
    umt::set_handler(
        libc::SIGUSR1,
        on_usr1 as *const () as usize,
        libc::SA_RESTART,
        false,
    );
    let before = SIGNALS.load(Ordering::SeqCst);
    let w = worker(0, vec![0x5555]);
    let fd = w.fd;
    let n = recv(fd);
    tgkill(w.tid, libc::SIGUSR1);
    // RECV at once, not after a poll: it sleeps while the worker runs its handler and
    // restarts (this is what hung while ioctls held the address space's lock: the worker
    // could not write its signal frame).
    let n2 = recv(fd);
    say(format!(
        "SA_RESTART: notified anew, next id {}, same arg {:#x}, same caller {}",
        n2.id == n.id + 1,
        n2.args[0],
        n2.pid == n.pid
    ));
    say(format!(
        "SA_RESTART: old id after the signal: {}",
        id_valid(fd, n.id)
    ));
    expect_err(send(fd, n.id, 1, 0, 0), libc::ENOENT, "SEND to the old id");
    ok(send(fd, n2.id, 77, 0, 0), "SEND 77");
    say(format!(
        "SA_RESTART: restarted call answered: {}",
        describe(w.results.recv().unwrap_or((-9, 0)))
    ));
    say(format!(
        "SA_RESTART: handler ran {} times",
        SIGNALS.load(Ordering::SeqCst) - before
    ));
    let _ = w.handle.join();
    umt::close(fd);
}

/// NOTIF_ADDFD with a struct of `size` bytes (the ioctl number carries the size: an
/// extensible-argument ioctl), the bytes past the 24 of `a` all `tail`.
fn addfd_sized(fd: i32, a: Addfd, size: usize, tail: u8) -> i64 {
    let mut buf = [tail; 64];
    // SAFETY: Addfd is 24 bytes of plain integers.
    let raw: [u8; 24] = unsafe { std::mem::transmute(a) };
    buf[..24].copy_from_slice(&raw);
    let cmd = (NOTIF_ADDFD & !(0x3fff << 16)) | ((size as u64) << 16);
    // SAFETY: `buf` is live memory of at least `size` bytes.
    unsafe { libc::syscall(libc::SYS_ioctl, fd, cmd, buf.as_mut_ptr() as u64) }
}

fn addfd(fd: i32, id: u64, flags: u32, srcfd: i32, newfd: u32, newfd_flags: i32) -> i64 {
    let a = Addfd {
        id,
        flags,
        srcfd: srcfd as u32,
        newfd,
        newfd_flags: newfd_flags as u32,
    };
    addfd_sized(fd, a, 24, 0)
}

/// F_GETFD of `fd` in words: "cloexec", "open" or the errno.
fn fd_state(fd: i64) -> String {
    // SAFETY: fcntl with an integer command.
    let r = unsafe { libc::fcntl(fd as i32, libc::F_GETFD) };
    match r {
        r if r < 0 => ename(errno()),
        r if r & libc::FD_CLOEXEC != 0 => "cloexec".into(),
        _ => "open".into(),
    }
}

/// Writes `msg` into `fd` and reads it back from `rfd`: whether `fd` is the pipe's write end.
fn carries(fd: i64, rfd: i32, msg: &[u8]) -> bool {
    // SAFETY: write from a live buffer.
    let w = unsafe { libc::write(fd as i32, msg.as_ptr().cast(), msg.len()) };
    if w != msg.len() as isize {
        return false;
    }
    let mut buf = [0u8; 64];
    let n = umt::read_raw(rfd, &mut buf[..msg.len()]);
    n == msg.len() as i64 && &buf[..msg.len()] == msg
}

/// NOTIF_ADDFD: a descriptor of the supervisor's appears in the notified task's table, at
/// the lowest free number or (SETFD) at a chosen one, replacing what is there; with SEND the
/// notified call returns it. The argument checks (EINVAL, EBADF, ENOENT, EINPROGRESS, the
/// size rules of an extensible struct: EINVAL below 24 bytes, E2BIG for a non-zero tail).
fn addfds() {
    let (rfd, wfd) = umt::pipe2(0);
    let w = worker(0, vec![0xa1, 0xa2, 0xa3]);
    let fd = w.fd;
    let n = recv(fd);
    expect_err(addfd(fd, n.id, 4, wfd, 0, 0), libc::EINVAL, "ADDFD flags 4");
    expect_err(
        addfd(fd, n.id, 0, wfd, 0, libc::O_NONBLOCK),
        libc::EINVAL,
        "ADDFD newfd_flags O_NONBLOCK",
    );
    expect_err(
        addfd(fd, n.id, 0, wfd, 50, 0),
        libc::EINVAL,
        "ADDFD newfd without SETFD",
    );
    expect_err(
        addfd(fd, n.id, 0, 9999, 0, 0),
        libc::EBADF,
        "ADDFD bad srcfd",
    );
    expect_err(
        addfd(fd, n.id + 1000, 0, wfd, 0, 0),
        libc::ENOENT,
        "ADDFD unknown id",
    );
    let a = Addfd {
        id: n.id,
        srcfd: wfd as u32,
        ..Default::default()
    };
    expect_err(addfd_sized(fd, a, 16, 0), libc::EINVAL, "ADDFD size 16");
    expect_err(
        addfd_sized(fd, a, 32, 1),
        libc::E2BIG,
        "ADDFD size 32, tail set",
    );

    // The lowest free descriptor (the worker shares this table), close-on-exec as asked.
    // SAFETY: dup of an open descriptor.
    let low = unsafe { libc::dup(rfd) };
    umt::close(low);
    let r = ok(addfd(fd, n.id, 0, wfd, 0, libc::O_CLOEXEC), "ADDFD");
    say(format!(
        "ADDFD: lowest free {}, {}, the pipe's write end {}",
        r == i64::from(low),
        fd_state(r),
        carries(r, rfd, b"lowest")
    ));
    umt::close(r as i32);
    // SETFD, through a 32-byte struct with a zero tail.
    let a = Addfd {
        id: n.id,
        flags: ADDFD_SETFD,
        srcfd: wfd as u32,
        newfd: 100,
        newfd_flags: 0,
    };
    let r = addfd_sized(fd, a, 32, 0);
    say(format!(
        "ADDFD SETFD 100 (32-byte struct): {}, {}, the pipe's write end {}",
        describe((r, if r < 0 { errno() } else { 0 })),
        fd_state(100),
        carries(100, rfd, b"setfd")
    ));
    // SETFD onto an open descriptor replaces it (here with the read end).
    let r = addfd(fd, n.id, ADDFD_SETFD, rfd, 100, libc::O_CLOEXEC);
    // SAFETY: write from a live buffer.
    unsafe { libc::write(wfd, b"re".as_ptr().cast(), 2) };
    let mut buf = [0u8; 2];
    let got = umt::read_raw(100, &mut buf);
    say(format!(
        "ADDFD SETFD 100 again: {r}, {}, now the read end {}",
        fd_state(100),
        got == 2 && &buf == b"re"
    ));
    umt::close(100);
    // At or above RLIMIT_NOFILE: EBADF, and with SEND the notification stays unanswered.
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit into a live struct.
    ok(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } as i64,
        "getrlimit",
    );
    let limit = u32::try_from(lim.rlim_cur).unwrap_or(u32::MAX);
    expect_err(
        addfd(fd, n.id, ADDFD_SETFD | ADDFD_SEND, wfd, limit, 0),
        libc::EBADF,
        "ADDFD SETFD|SEND at RLIMIT_NOFILE",
    );
    say(format!(
        "ADDFD failed with SEND, ID_VALID: {}",
        id_valid(fd, n.id)
    ));
    ok(send(fd, n.id, 0, 0, 0), "SEND 0");
    say(format!(
        "ADDFD, then answered: {}",
        describe(w.results.recv().unwrap_or((-9, 0)))
    ));

    // SEND: the call returns the new descriptor, and the notification is answered.
    wait_poll(fd, libc::POLLIN);
    expect_err(
        addfd(fd, n.id + 1, 0, wfd, 0, 0),
        libc::EINPROGRESS,
        "ADDFD unreceived",
    );
    let n2 = recv(fd);
    let r = ok(addfd(fd, n2.id, ADDFD_SEND, wfd, 0, 0), "ADDFD SEND");
    let res = w.results.recv().unwrap_or((-9, 0));
    say(format!(
        "ADDFD SEND: the call returned it {}, {}",
        res.0 == r,
        fd_state(r)
    ));
    say(format!("ADDFD SEND, ID_VALID: {}", id_valid(fd, n2.id)));
    expect_err(
        addfd(fd, n2.id, 0, wfd, 0, 0),
        libc::ENOENT,
        "ADDFD after SEND",
    );
    expect_err(
        send(fd, n2.id, 0, 0, 0),
        libc::ENOENT,
        "SEND after ADDFD SEND",
    );
    umt::close(r as i32);
    let n3 = recv(fd);
    let r = addfd(
        fd,
        n3.id,
        ADDFD_SETFD | ADDFD_SEND,
        wfd,
        101,
        libc::O_CLOEXEC,
    );
    say(format!(
        "ADDFD SETFD|SEND 101: {r}, the call returned {}, {}",
        describe(w.results.recv().unwrap_or((-9, 0))),
        fd_state(101)
    ));
    umt::close(101);
    let _ = w.handle.join();
    umt::close(fd);

    // Another process: the descriptor goes into the notified task's table, not the
    // supervisor's. A thread installs the filter and forks; its child makes the call.
    let (tx, rx) = mpsc::channel::<i64>();
    let t = std::thread::spawn(move || {
        let fd = install(FLAG_NEW_LISTENER, &notify_getpgid());
        let _ = tx.send(fd);
        if fd < 0 {
            return;
        }
        let pid = umt::fork();
        if pid == 0 {
            let (got, _) = getpgid6(0xb1);
            // Only raw calls in the child of a threaded process.
            // SAFETY: write from a live buffer.
            let w = unsafe { libc::write(got as i32, b"child".as_ptr().cast(), 5) };
            umt::exit_now(if got == 200 && w == 5 { 0 } else { 1 });
        }
        let _ = tx.send(i64::from(umt::waitpid(pid, 0)));
    });
    let fd = rx.recv().unwrap_or(-1);
    if fd < 0 {
        umt::fail("NEW_LISTENER in the forking thread");
    }
    let fd = fd as i32;
    let n = recv(fd);
    let r = addfd(fd, n.id, ADDFD_SETFD | ADDFD_SEND, wfd, 200, 0);
    say(format!(
        "ADDFD into a child: {r}; in the supervisor's table: {}",
        fd_state(200)
    ));
    let st = rx.recv().unwrap_or(-1) as i32;
    let mut buf = [0u8; 5];
    let got = umt::read_raw(rfd, &mut buf);
    say(format!(
        "child: {}, wrote through it {}",
        umt::describe_status(st),
        got == 5 && &buf == b"child"
    ));
    let _ = t.join();
    umt::close(fd);
    umt::close(rfd);
    umt::close(wfd);
}

/// The listener closes while a call waits: ENOSYS, then ENOSYS at once.
fn closed() {
    let w = worker(0, vec![0x6666, 0x6667]);
    wait_poll(w.fd, libc::POLLIN);
    umt::close(w.fd);
    say(format!(
        "listener closed while waiting: {}",
        describe(w.results.recv().unwrap_or((-9, 0)))
    ));
    say(format!(
        "listener closed, next call: {}",
        describe(w.results.recv().unwrap_or((-9, 0)))
    ));
    let _ = w.handle.join();
}

fn main() {
    umt::init("seccompn");
    // SAFETY: prctl with integer arguments.
    let r = unsafe { libc::prctl(PR_SET_NO_NEW_PRIVS, 1u64, 0u64, 0u64, 0u64) };
    check_eq(r, 0, "PR_SET_NO_NEW_PRIVS");
    probes();
    answers();
    killable();
    restarts();
    addfds();
    closed();
    umt::done("seccompn");
}
