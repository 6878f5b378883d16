//! Differential test of the calls programs probe for (issue 20 item 3): pidfd_getfd
//! (kernel/pid.c), kcmp (kernel/kcmp.c), ioprio_get/ioprio_set (block/ioprio.c), readahead
//! (mm/readahead.c), POSIX message queues and the `mqueue` file system (ipc/mqueue.c,
//! mq_overview(7)) and native AIO (fs/aio.c, io_setup(2) and friends).
//!
//! `probecalls WORKDIR` prints every answer (`ok N`, the errno name, the values read back),
//! so the gate's comparison with the native run shows the first difference; nothing printed
//! depends on the machine (kcmp's order is shown only as "same"/"differs", and checked to be
//! consistent). It runs as root (the gate's native run is root too).
//!
//! `probecalls WORKDIR absent` (guest only: a host kernel has these) checks that the calls
//! this kernel leaves out on purpose (io_uring, perf_event_open, fanotify, keyctl) answer
//! ENOSYS, as a Linux built without them does (bpf(2) exists since um-bpf: cgroup device
//! programs).
//!
//! glibc and musl have no wrappers for most of these: raw system calls throughout.

use umt::{ename, errno, fork, say, waitpid};

/// An address no program has mapped (the first page).
const BAD: usize = 8;
/// io_pgetevents (not in every libc target's list: arch/x86/entry/syscalls/syscall_64.tbl,
/// include/uapi/asm-generic/unistd.h).
#[cfg(target_arch = "x86_64")]
const SYS_IO_PGETEVENTS: libc::c_long = 333;
#[cfg(target_arch = "aarch64")]
const SYS_IO_PGETEVENTS: libc::c_long = 292;

fn sys(nr: libc::c_long, a: [usize; 6]) -> i64 {
    // SAFETY: every call passes integers or pointers to live buffers of the right size (or
    // deliberately bad addresses, which the kernel must refuse with EFAULT).
    unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) as i64 }
}

fn res(r: i64) -> String {
    if r < 0 {
        match errno() {
            libc::EINPROGRESS => "EINPROGRESS".into(),
            libc::EOVERFLOW => "EOVERFLOW".into(),
            e => ename(e),
        }
    } else {
        format!("ok {r}")
    }
}

/// Prints `what: <result>` and returns the raw result.
fn show(what: &str, r: i64) -> i64 {
    say(format!("{what}: {}", res(r)));
    r
}

/// Prints the call's result and fails unless it is `want` (a value, or an errno as `-E`).
fn want(what: &str, r: i64, want: i64) -> i64 {
    show(what, r);
    let got = if r < 0 { -i64::from(errno()) } else { r };
    umt::check(got == want, format!("{what}: want {}", res_want(want)));
    r
}

fn res_want(w: i64) -> String {
    if w < 0 {
        ename(-w as i32)
    } else {
        format!("ok {w}")
    }
}

fn open(path: &str, flags: i32) -> i32 {
    let p = umt::cstr(path);
    // SAFETY: a NUL-terminated path.
    unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC, 0o644) }
}

fn cloexec(fd: i64) -> bool {
    // SAFETY: plain fcntl.
    unsafe { libc::fcntl(fd as i32, libc::F_GETFD) == libc::FD_CLOEXEC }
}

fn getpid() -> usize {
    // SAFETY: plain getpid.
    unsafe { libc::getpid() as usize }
}

fn gettid() -> usize {
    sys(libc::SYS_gettid, [0; 6]) as usize
}

/// A child that waits for a byte on a pipe, then exits 0; (pid, the pipe's write end).
fn sleeper() -> (i32, i32) {
    let (r, w) = umt::pipe2(libc::O_CLOEXEC);
    let pid = fork();
    if pid == 0 {
        umt::close(w);
        let mut b = [0u8; 1];
        umt::read_raw(r, &mut b);
        umt::exit_now(0);
    }
    umt::close(r);
    (pid, w)
}

fn release(pid: i32, w: i32) {
    umt::close(w);
    waitpid(pid, 0);
}

fn pidfd_getfd(dir: &str) {
    let (child, w) = sleeper();
    let pidfd = sys(libc::SYS_pidfd_open, [child as usize, 0, 0, 0, 0, 0]);
    show("pidfd_open child", pidfd.min(0));
    // The child's stdout is the one it inherited from us.
    let fd = sys(libc::SYS_pidfd_getfd, [pidfd as usize, 1, 0, 0, 0, 0]);
    show("pidfd_getfd child stdout", fd.min(0));
    umt::check(
        fd >= 0 && cloexec(fd),
        "the new descriptor is close-on-exec",
    );
    say(format!("pidfd_getfd: close-on-exec {}", cloexec(fd)));
    // The same open file as our stdout (the child inherited it).
    want(
        "kcmp FILE of the copy and our stdout",
        sys(libc::SYS_kcmp, [getpid(), getpid(), 0, fd as usize, 1, 0]),
        0,
    );
    want(
        "pidfd_getfd flags 1",
        sys(libc::SYS_pidfd_getfd, [pidfd as usize, 1, 1, 0, 0, 0]),
        -i64::from(libc::EINVAL),
    );
    want(
        "pidfd_getfd of a closed descriptor",
        sys(libc::SYS_pidfd_getfd, [pidfd as usize, 999, 0, 0, 0, 0]),
        -i64::from(libc::EBADF),
    );
    let f = open(&format!("{dir}/plain"), libc::O_RDWR | libc::O_CREAT);
    want(
        "pidfd_getfd through a plain file",
        sys(libc::SYS_pidfd_getfd, [f as usize, 1, 0, 0, 0, 0]),
        -i64::from(libc::EBADF),
    );
    // Of ourselves.
    let me = sys(libc::SYS_pidfd_open, [getpid(), 0, 0, 0, 0, 0]);
    let dupf = sys(libc::SYS_pidfd_getfd, [me as usize, f as usize, 0, 0, 0, 0]);
    show("pidfd_getfd of our own file", dupf.min(0));
    want(
        "kcmp FILE of our file and its copy",
        sys(
            libc::SYS_kcmp,
            [getpid(), getpid(), 0, f as usize, dupf as usize, 0],
        ),
        0,
    );
    release(child, w);
    want(
        "pidfd_getfd of a reaped child",
        sys(libc::SYS_pidfd_getfd, [pidfd as usize, 1, 0, 0, 0, 0]),
        -i64::from(libc::ESRCH),
    );
    for fd in [pidfd, fd, me, dupf, i64::from(f)] {
        umt::close(fd as i32);
    }
}

/// Whether kcmp says "same" (0) or "differs" (1 or 2), checking that the reverse order
/// gives the opposite answer.
fn kcmp_same(what: &str, p1: usize, p2: usize, kind: usize, i1: usize, i2: usize) {
    let a = sys(libc::SYS_kcmp, [p1, p2, kind, i1, i2, 0]);
    let b = sys(libc::SYS_kcmp, [p2, p1, kind, i2, i1, 0]);
    let s = match a {
        0 => "same",
        1 | 2 => "differs",
        _ => {
            show(what, a);
            return;
        }
    };
    umt::check(
        (a == 0 && b == 0) || (a == 1 && b == 2) || (a == 2 && b == 1),
        format!("{what}: kcmp order consistent ({a} then {b})"),
    );
    say(format!("{what}: {s}"));
}

fn kcmp(dir: &str) {
    let me = getpid();
    for (kind, name) in [
        (0, "FILE"),
        (1, "VM"),
        (2, "FILES"),
        (3, "FS"),
        (4, "SIGHAND"),
        (5, "IO"),
        (6, "SYSVSEM"),
    ] {
        kcmp_same(&format!("kcmp self {name}"), me, me, kind, 1, 1);
    }
    let f1 = open(&format!("{dir}/k1"), libc::O_RDWR | libc::O_CREAT) as usize;
    let f2 = open(&format!("{dir}/k1"), libc::O_RDWR) as usize;
    // SAFETY: plain dup.
    let d1 = unsafe { libc::dup(f1 as i32) } as usize;
    kcmp_same("kcmp FILE dup", me, me, 0, f1, d1);
    kcmp_same("kcmp FILE two opens", me, me, 0, f1, f2);
    want(
        "kcmp FILE closed descriptor",
        sys(libc::SYS_kcmp, [me, me, 0, f1, 999, 0]),
        -i64::from(libc::EBADF),
    );
    want(
        "kcmp bad type",
        sys(libc::SYS_kcmp, [me, me, 8, 0, 0, 0]),
        -i64::from(libc::EINVAL),
    );
    want(
        "kcmp no such pid",
        sys(libc::SYS_kcmp, [me, 999_999, 1, 0, 0, 0]),
        -i64::from(libc::ESRCH),
    );
    // A thread shares everything but its I/O context.
    let tid = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (r, w) = umt::pipe2(libc::O_CLOEXEC);
    let t2 = tid.clone();
    let h = std::thread::spawn(move || {
        t2.store(gettid(), std::sync::atomic::Ordering::SeqCst);
        let mut b = [0u8; 1];
        umt::read_raw(r, &mut b);
    });
    while tid.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        umt::sleep_ms(1);
    }
    let t = tid.load(std::sync::atomic::Ordering::SeqCst);
    for (kind, name) in [(1, "VM"), (2, "FILES"), (3, "FS"), (4, "SIGHAND")] {
        kcmp_same(&format!("kcmp thread {name}"), me, t, kind, 0, 0);
    }
    kcmp_same("kcmp thread FILE 1", me, t, 0, 1, 1);
    umt::write_all(w, b"x", "wake the thread");
    let _ = h.join();
    // A forked child has copies.
    let (child, cw) = sleeper();
    let c = child as usize;
    for (kind, name) in [(1, "VM"), (2, "FILES"), (3, "FS"), (4, "SIGHAND")] {
        kcmp_same(&format!("kcmp child {name}"), me, c, kind, 0, 0);
    }
    kcmp_same("kcmp child FILE inherited", me, c, 0, f1, f1);
    // KCMP_EPOLL_TFD: a file against what an epoll instance watches.
    // SAFETY: plain epoll_create1 and epoll_ctl on our descriptors.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) } as usize;
    let mut ev = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: 7,
    };
    // A regular file cannot be watched (EPERM): a pipe.
    let (pr, pw) = umt::pipe2(libc::O_CLOEXEC);
    let (pr, pw) = (pr as usize, pw as usize);
    // SAFETY: as above.
    let added = unsafe { libc::epoll_ctl(ep as i32, libc::EPOLL_CTL_ADD, pr as i32, &mut ev) };
    show("epoll_ctl ADD pipe", i64::from(added));
    let slot = |efd: usize, tfd: usize, toff: u32| [efd as u32, tfd as u32, toff];
    let s = slot(ep, pr, 0);
    kcmp_same_epoll("kcmp EPOLL_TFD watched file", me, pr, &s);
    kcmp_same_epoll("kcmp EPOLL_TFD another file", me, pw, &s);
    let s = slot(ep, pr, 1);
    want(
        "kcmp EPOLL_TFD second item of the fd",
        sys(libc::SYS_kcmp, [me, me, 7, pr, s.as_ptr() as usize, 0]),
        -i64::from(libc::ENOENT),
    );
    let s = slot(ep, f1, 0);
    want(
        "kcmp EPOLL_TFD not watched",
        sys(libc::SYS_kcmp, [me, me, 7, f2, s.as_ptr() as usize, 0]),
        -i64::from(libc::ENOENT),
    );
    let s = slot(f1, f2, 0);
    want(
        "kcmp EPOLL_TFD not an epoll",
        sys(libc::SYS_kcmp, [me, me, 7, f2, s.as_ptr() as usize, 0]),
        -i64::from(libc::EINVAL),
    );
    want(
        "kcmp EPOLL_TFD no slot",
        sys(libc::SYS_kcmp, [me, me, 7, f2, 0, 0]),
        -i64::from(libc::EFAULT),
    );
    want(
        "kcmp EPOLL_TFD bad slot",
        sys(libc::SYS_kcmp, [me, me, 7, f2, BAD, 0]),
        -i64::from(libc::EFAULT),
    );
    release(child, cw);
    for fd in [f1, f2, d1, ep, pr, pw] {
        umt::close(fd as i32);
    }
}

fn kcmp_same_epoll(what: &str, me: usize, fd: usize, slot: &[u32; 3]) {
    let r = sys(libc::SYS_kcmp, [me, me, 7, fd, slot.as_ptr() as usize, 0]);
    say(format!(
        "{what}: {}",
        match r {
            0 => "same".to_string(),
            1 | 2 => "differs".to_string(),
            r => res(r),
        }
    ));
}

const IOPRIO_CLASS_RT: usize = 1;
const IOPRIO_CLASS_BE: usize = 2;
const IOPRIO_CLASS_IDLE: usize = 3;
const WHO_PROCESS: usize = 1;
const WHO_PGRP: usize = 2;
const WHO_USER: usize = 3;

fn prio(class: usize, level: usize) -> usize {
    (class << 13) | level
}

fn ioprio_get(which: usize, who: usize) -> i64 {
    sys(libc::SYS_ioprio_get, [which, who, 0, 0, 0, 0])
}

fn ioprio_set(which: usize, who: usize, v: usize) -> i64 {
    sys(libc::SYS_ioprio_set, [which, who, v, 0, 0, 0])
}

fn ioprio() {
    want("ioprio_get self, never set", ioprio_get(WHO_PROCESS, 0), 0);
    want(
        "ioprio_set BE 3",
        ioprio_set(WHO_PROCESS, 0, prio(IOPRIO_CLASS_BE, 3)),
        0,
    );
    want(
        "ioprio_get self",
        ioprio_get(WHO_PROCESS, 0),
        prio(IOPRIO_CLASS_BE, 3) as i64,
    );
    want(
        "ioprio_get self by tid",
        ioprio_get(WHO_PROCESS, gettid()),
        prio(IOPRIO_CLASS_BE, 3) as i64,
    );
    let bad = [
        ("NONE level 1", 1),
        ("class 4", prio(4, 0)),
        ("class 7", prio(7, 0)),
    ];
    for (name, v) in bad {
        want(
            &format!("ioprio_set {name}"),
            ioprio_set(WHO_PROCESS, 0, v),
            -i64::from(libc::EINVAL),
        );
    }
    want(
        "ioprio_set which 0",
        ioprio_set(0, 0, prio(IOPRIO_CLASS_BE, 0)),
        -i64::from(libc::EINVAL),
    );
    want(
        "ioprio_get which 4",
        ioprio_get(4, 0),
        -i64::from(libc::EINVAL),
    );
    want(
        "ioprio_get no such pid",
        ioprio_get(WHO_PROCESS, 999_999),
        -i64::from(libc::ESRCH),
    );
    want(
        "ioprio_set IDLE",
        ioprio_set(WHO_PROCESS, 0, prio(IOPRIO_CLASS_IDLE, 0)),
        0,
    );
    want(
        "ioprio_get IDLE",
        ioprio_get(WHO_PROCESS, 0),
        prio(IOPRIO_CLASS_IDLE, 0) as i64,
    );
    want(
        "ioprio_set RT 0 as root",
        ioprio_set(WHO_PROCESS, 0, prio(IOPRIO_CLASS_RT, 0)),
        0,
    );
    // A new thread and a child inherit it; the thread's own value is its own.
    let h = std::thread::spawn(|| {
        let inherited = ioprio_get(WHO_PROCESS, 0);
        ioprio_set(WHO_PROCESS, 0, prio(IOPRIO_CLASS_BE, 7));
        (inherited, ioprio_get(WHO_PROCESS, 0))
    });
    let (inh, own) = h.join().unwrap_or((-1, -1));
    want(
        "ioprio thread inherited",
        inh,
        prio(IOPRIO_CLASS_RT, 0) as i64,
    );
    want("ioprio thread's own", own, prio(IOPRIO_CLASS_BE, 7) as i64);
    want(
        "ioprio main thread kept",
        ioprio_get(WHO_PROCESS, 0),
        prio(IOPRIO_CLASS_RT, 0) as i64,
    );
    let parent = getpid();
    let pid = fork();
    if pid == 0 {
        want(
            "ioprio child inherited",
            ioprio_get(WHO_PROCESS, 0),
            prio(IOPRIO_CLASS_RT, 0) as i64,
        );
        // Alone in a process group: the group's best value in effect; BE 4 for a thread
        // never set at nice 0, so set one value.
        // The value in effect follows the nice value: start from 0 whatever the host
        // gave the run (root may lower it).
        // SAFETY: plain setpgid and setpriority.
        unsafe {
            libc::setpgid(0, 0);
            libc::setpriority(libc::PRIO_PROCESS, 0, 0);
        }
        ioprio_set(WHO_PROCESS, 0, 0);
        want(
            "ioprio_get PGRP, nothing set",
            ioprio_get(WHO_PGRP, 0),
            prio(IOPRIO_CLASS_BE, 4) as i64,
        );
        want(
            "ioprio_set PGRP BE 2",
            ioprio_set(WHO_PGRP, 0, prio(IOPRIO_CLASS_BE, 2)),
            0,
        );
        want(
            "ioprio_get PGRP",
            ioprio_get(WHO_PGRP, 0),
            prio(IOPRIO_CLASS_BE, 2) as i64,
        );
        // As an unprivileged user of its own.
        // SAFETY: plain setresgid/setresuid in the child.
        unsafe {
            libc::setresgid(4243, 4243, 4243);
            libc::setresuid(4243, 4243, 4243);
        }
        want(
            "ioprio_set RT unprivileged",
            ioprio_set(WHO_PROCESS, 0, prio(IOPRIO_CLASS_RT, 0)),
            -i64::from(libc::EPERM),
        );
        want(
            "ioprio_set another user's process",
            ioprio_set(WHO_PROCESS, parent, prio(IOPRIO_CLASS_BE, 0)),
            -i64::from(libc::EPERM),
        );
        // who 0 is uid 0 for ioprio_set (Linux compares with the literal uid), the
        // caller's uid for ioprio_get.
        want(
            "ioprio_set USER 0 unprivileged",
            ioprio_set(WHO_USER, 0, prio(IOPRIO_CLASS_IDLE, 0)),
            -i64::from(libc::EPERM),
        );
        want(
            "ioprio_set USER (own) IDLE",
            ioprio_set(WHO_USER, 4243, prio(IOPRIO_CLASS_IDLE, 0)),
            0,
        );
        want(
            "ioprio_get USER",
            ioprio_get(WHO_USER, 0),
            prio(IOPRIO_CLASS_IDLE, 0) as i64,
        );
        want(
            "ioprio_get another user's process",
            ioprio_get(WHO_PROCESS, parent),
            prio(IOPRIO_CLASS_RT, 0) as i64,
        );
        umt::exit_now(0);
    }
    let st = waitpid(pid, 0);
    umt::check(
        st == 0,
        format!("ioprio child: {}", umt::describe_status(st)),
    );
    ioprio_set(WHO_PROCESS, 0, 0);
}

fn readahead(dir: &str) {
    let f = open(&format!("{dir}/ra"), libc::O_RDWR | libc::O_CREAT);
    umt::write_all(f, &[7u8; 10000], "fill the file");
    want(
        "readahead regular file",
        sys(libc::SYS_readahead, [f as usize, 0, 8192, 0, 0, 0]),
        0,
    );
    want(
        "readahead huge count",
        sys(libc::SYS_readahead, [f as usize, 0, usize::MAX, 0, 0, 0]),
        -i64::from(libc::EINVAL),
    );
    let wo = open(&format!("{dir}/ra"), libc::O_WRONLY);
    want(
        "readahead write-only",
        sys(libc::SYS_readahead, [wo as usize, 0, 1, 0, 0, 0]),
        -i64::from(libc::EBADF),
    );
    let (r, w) = umt::pipe2(libc::O_CLOEXEC);
    want(
        "readahead pipe",
        sys(libc::SYS_readahead, [r as usize, 0, 1, 0, 0, 0]),
        -i64::from(libc::EINVAL),
    );
    let d = open(dir, libc::O_RDONLY | libc::O_DIRECTORY);
    want(
        "readahead directory",
        sys(libc::SYS_readahead, [d as usize, 0, 1, 0, 0, 0]),
        -i64::from(libc::EINVAL),
    );
    let null = open("/dev/null", libc::O_RDONLY);
    want(
        "readahead /dev/null",
        sys(libc::SYS_readahead, [null as usize, 0, 1, 0, 0, 0]),
        -i64::from(libc::EINVAL),
    );
    want(
        "readahead closed descriptor",
        sys(libc::SYS_readahead, [999, 0, 1, 0, 0, 0]),
        -i64::from(libc::EBADF),
    );
    for fd in [f, wo, r, w, d, null] {
        umt::close(fd);
    }
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct MqAttr {
    flags: i64,
    maxmsg: i64,
    msgsize: i64,
    curmsgs: i64,
    reserved: [i64; 4],
}

fn mq_open(name: &str, oflag: i32, attr: Option<&MqAttr>) -> i64 {
    let n = umt::cstr(name);
    sys(
        libc::SYS_mq_open,
        [
            n.as_ptr() as usize,
            oflag as usize,
            0o600,
            attr.map_or(0, |a| a as *const MqAttr as usize),
            0,
            0,
        ],
    )
}

fn mq_unlink(name: &str) -> i64 {
    let n = umt::cstr(name);
    sys(libc::SYS_mq_unlink, [n.as_ptr() as usize, 0, 0, 0, 0, 0])
}

fn send(q: i64, msg: &[u8], prio: usize, ts: Option<&libc::timespec>) -> i64 {
    sys(
        libc::SYS_mq_timedsend,
        [
            q as usize,
            msg.as_ptr() as usize,
            msg.len(),
            prio,
            ts.map_or(0, |t| t as *const libc::timespec as usize),
            0,
        ],
    )
}

fn recv(q: i64, buf: &mut [u8], prio: &mut u32, ts: Option<&libc::timespec>) -> i64 {
    sys(
        libc::SYS_mq_timedreceive,
        [
            q as usize,
            buf.as_mut_ptr() as usize,
            buf.len(),
            prio as *mut u32 as usize,
            ts.map_or(0, |t| t as *const libc::timespec as usize),
            0,
        ],
    )
}

fn getattr(q: i64) -> MqAttr {
    let mut a = MqAttr::default();
    ok_or_fail(
        "mq_getsetattr",
        sys(
            libc::SYS_mq_getsetattr,
            [q as usize, 0, &mut a as *mut MqAttr as usize, 0, 0, 0],
        ),
    );
    a
}

fn setflags(q: i64, flags: i64) -> i64 {
    let a = MqAttr {
        flags,
        ..Default::default()
    };
    sys(
        libc::SYS_mq_getsetattr,
        [q as usize, &a as *const MqAttr as usize, 0, 0, 0, 0],
    )
}

fn ok_or_fail(what: &str, r: i64) -> i64 {
    umt::ok(r, what)
}

/// CLOCK_REALTIME now plus `ms` (negative: in the past).
fn realtime_in(ms: i64) -> libc::timespec {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut t) };
    let ns = t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128 + ms as i128 * 1_000_000;
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as _,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

#[repr(C)]
struct Sigevent {
    value: u64,
    signo: i32,
    notify: i32,
    rest: [u8; 48],
}

fn notify(q: i64, kind: i32, signo: i32, value: u64) -> i64 {
    let ev = Sigevent {
        value,
        signo,
        notify: kind,
        rest: [0; 48],
    };
    sys(
        libc::SYS_mq_notify,
        [q as usize, &ev as *const Sigevent as usize, 0, 0, 0, 0],
    )
}

fn mqueue(dir: &str) {
    let _ = mq_unlink("pc-q1");
    let attr = MqAttr {
        maxmsg: 4,
        msgsize: 64,
        ..Default::default()
    };
    let q = mq_open(
        "pc-q1",
        libc::O_RDWR | libc::O_CREAT | libc::O_EXCL,
        Some(&attr),
    );
    show("mq_open create", q.min(0));
    say(format!("mq_open: close-on-exec {}", cloexec(q)));
    want(
        "mq_open O_EXCL again",
        mq_open("pc-q1", libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, None),
        -i64::from(libc::EEXIST),
    );
    let a = getattr(q);
    say(format!(
        "mq_getattr: flags {} maxmsg {} msgsize {} curmsgs {}",
        a.flags, a.maxmsg, a.msgsize, a.curmsgs
    ));
    for (name, flags, at, w) in [
        ("missing", libc::O_RDWR, None, libc::ENOENT),
        ("a/b", libc::O_RDWR | libc::O_CREAT, None, libc::EACCES),
        ("", libc::O_RDWR | libc::O_CREAT, None, libc::ENOENT),
        ("pc-q1", 3, None, libc::EINVAL),
    ] {
        want(
            &format!("mq_open {name:?} {flags:#o}"),
            mq_open(name, flags, at),
            -i64::from(w),
        );
    }
    let long = "x".repeat(256);
    want(
        "mq_open a 256-byte name",
        mq_open(&long, libc::O_RDWR | libc::O_CREAT, None),
        -i64::from(libc::ENAMETOOLONG),
    );
    for (m, s) in [(0, 8), (4, 0), (-1, 8), (70000, 8), (4, 20 << 20)] {
        let a = MqAttr {
            maxmsg: m,
            msgsize: s,
            ..Default::default()
        };
        want(
            &format!("mq_open attr maxmsg {m} msgsize {s}"),
            mq_open("pc-bad", libc::O_RDWR | libc::O_CREAT, Some(&a)),
            -i64::from(libc::EINVAL),
        );
    }
    // Priority order, FIFO within a priority.
    for (m, p) in [(&b"a"[..], 1), (b"b", 5), (b"c", 1), (b"d", 5)] {
        want(
            &format!("mq_send {:?} prio {p}", m[0] as char),
            send(q, m, p, None),
            0,
        );
    }
    let a = getattr(q);
    say(format!("mq_getattr: curmsgs {}", a.curmsgs));
    let mut buf = [0u8; 64];
    let mut p = 0u32;
    want(
        "mq_receive small buffer",
        recv(q, &mut buf[..63], &mut p, None),
        -i64::from(libc::EMSGSIZE),
    );
    for _ in 0..4 {
        let n = recv(q, &mut buf, &mut p, None);
        show("mq_receive", n);
        if n > 0 {
            say(format!(
                "mq_receive: {:?} prio {p}",
                String::from_utf8_lossy(&buf[..n as usize])
            ));
        }
    }
    want(
        "mq_send too long",
        send(q, &[0; 65], 0, None),
        -i64::from(libc::EMSGSIZE),
    );
    want(
        "mq_send prio MQ_PRIO_MAX",
        send(q, b"x", 32768, None),
        -i64::from(libc::EINVAL),
    );
    let bad_ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000_000,
    };
    want(
        "mq_send bad timeout",
        send(q, b"x", 0, Some(&bad_ts)),
        -i64::from(libc::EINVAL),
    );
    want(
        "mq_receive timeout in the past",
        recv(q, &mut buf, &mut p, Some(&realtime_in(-10))),
        -i64::from(libc::ETIMEDOUT),
    );
    let t0 = umt::now_ns();
    want(
        "mq_receive 50 ms timeout",
        recv(q, &mut buf, &mut p, Some(&realtime_in(50))),
        -i64::from(libc::ETIMEDOUT),
    );
    umt::check(
        umt::now_ns() - t0 >= 40_000_000,
        "mq_receive waited its timeout",
    );
    // Non-blocking.
    want(
        "mq_setattr O_NONBLOCK",
        setflags(q, libc::O_NONBLOCK as i64),
        0,
    );
    say(format!("mq_getattr: flags {:#o}", getattr(q).flags));
    want(
        "mq_receive empty non-blocking",
        recv(q, &mut buf, &mut p, None),
        -i64::from(libc::EAGAIN),
    );
    for i in 0..4 {
        want(&format!("mq_send fill {i}"), send(q, b"f", 0, None), 0);
    }
    want(
        "mq_send full non-blocking",
        send(q, b"f", 0, None),
        -i64::from(libc::EAGAIN),
    );
    want(
        "mq_setattr bad flags",
        setflags(q, libc::O_APPEND as i64),
        -i64::from(libc::EINVAL),
    );
    want("mq_setattr blocking", setflags(q, 0), 0);
    want(
        "mq_send full 50 ms timeout",
        send(q, b"f", 0, Some(&realtime_in(50))),
        -i64::from(libc::ETIMEDOUT),
    );
    // Poll: full and not empty.
    let mut pfd = libc::pollfd {
        fd: q as i32,
        events: libc::POLLIN | libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one pollfd.
    unsafe { libc::poll(&mut pfd, 1, 0) };
    say(format!("poll full queue: revents {:#x}", pfd.revents));
    // The mqueue file system shows it.
    let mnt = format!("{dir}/mq");
    let mntc = umt::cstr(&mnt);
    // SAFETY: a path to make and mount on.
    unsafe { libc::mkdir(mntc.as_ptr(), 0o755) };
    let none = umt::cstr("none");
    let fstype = umt::cstr("mqueue");
    // SAFETY: NUL-terminated strings.
    let m = unsafe {
        libc::mount(
            none.as_ptr(),
            mntc.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    show("mount -t mqueue", i64::from(m));
    let names: Vec<String> = std::fs::read_dir(&mnt)
        .map(|d| {
            let mut v: Vec<String> = d
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("pc-"))
                .collect();
            v.sort();
            v
        })
        .unwrap_or_default();
    say(format!("ls mqueue: {names:?}"));
    let status = std::fs::read_to_string(format!("{mnt}/pc-q1")).unwrap_or_default();
    say(format!("cat pc-q1: {status:?}"));
    // SAFETY: a mounted path.
    unsafe { libc::umount(mntc.as_ptr()) };
    // Drain, then a blocked receive gets a message a child sends.
    for _ in 0..4 {
        recv(q, &mut buf, &mut p, None);
    }
    let pid = fork();
    if pid == 0 {
        umt::sleep_ms(30);
        let r = send(q, b"late", 3, None);
        umt::exit_now(if r == 0 { 0 } else { 1 });
    }
    let n = recv(q, &mut buf, &mut p, None);
    show("mq_receive blocked", n);
    if n > 0 {
        say(format!(
            "mq_receive blocked got {:?} prio {p}",
            String::from_utf8_lossy(&buf[..n as usize])
        ));
    }
    waitpid(pid, 0);
    // Notification: SIGUSR1 with our value when a message arrives in the empty queue.
    umt::sigprocmask(libc::SIG_BLOCK, &[libc::SIGUSR1]);
    want(
        "mq_notify bad kind",
        notify(q, 99, 0, 0),
        -i64::from(libc::EINVAL),
    );
    want(
        "mq_notify bad signal",
        notify(q, libc::SIGEV_SIGNAL, 65, 0),
        -i64::from(libc::EINVAL),
    );
    want(
        "mq_notify SIGUSR1",
        notify(q, libc::SIGEV_SIGNAL, libc::SIGUSR1, 42),
        0,
    );
    let pid = fork();
    if pid == 0 {
        let r = notify(q, libc::SIGEV_NONE, 0, 0);
        let e = errno();
        umt::exit_now(if r < 0 && e == libc::EBUSY { 0 } else { 1 });
    }
    let st = waitpid(pid, 0);
    say(format!(
        "mq_notify from another process: {}",
        if st == 0 { "EBUSY" } else { "not EBUSY" }
    ));
    want("mq_send wakes the notification", send(q, b"n", 0, None), 0);
    let set = umt::sigset(&[libc::SIGUSR1]);
    // SAFETY: zeroed siginfo to fill.
    let mut si: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let to = libc::timespec {
        tv_sec: 2,
        tv_nsec: 0,
    };
    // SAFETY: valid set, siginfo and timeout.
    let sig = unsafe { libc::sigtimedwait(&set, &mut si, &to) };
    // SAFETY: reading the union fields of a filled siginfo.
    let (code, pid_ok, value) = unsafe {
        (
            si.si_code,
            si.si_pid() == libc::getpid(),
            si.si_value().sival_ptr as usize,
        )
    };
    say(format!(
        "notification: signal {sig} code {code} from self {pid_ok} value {value}"
    ));
    want(
        "mq_notify again after delivery",
        notify(q, libc::SIGEV_NONE, 0, 0),
        0,
    );
    want(
        "mq_notify unregister",
        sys(libc::SYS_mq_notify, [q as usize, 0, 0, 0, 0, 0]),
        0,
    );
    want(
        "mq_notify after unregister",
        notify(q, libc::SIGEV_SIGNAL, libc::SIGUSR1, 1),
        0,
    );
    sys(libc::SYS_mq_notify, [q as usize, 0, 0, 0, 0, 0]);
    recv(q, &mut buf, &mut p, None);
    // Access modes.
    let ro = mq_open("pc-q1", libc::O_RDONLY, None);
    want(
        "mq_send on a read-only descriptor",
        send(ro, b"x", 0, None),
        -i64::from(libc::EBADF),
    );
    let wo = mq_open("pc-q1", libc::O_WRONLY, None);
    want(
        "mq_receive on a write-only descriptor",
        recv(wo, &mut buf, &mut p, None),
        -i64::from(libc::EBADF),
    );
    let (pr, pw) = umt::pipe2(libc::O_CLOEXEC);
    want(
        "mq_send on a pipe",
        send(i64::from(pw), b"x", 0, None),
        -i64::from(libc::EBADF),
    );
    // Queues belong to the IPC namespace (ipc_namespaces(7)).
    let pid = fork();
    if pid == 0 {
        // SAFETY: plain unshare in the child.
        let r = unsafe { libc::unshare(libc::CLONE_NEWIPC) };
        let seen = mq_open("pc-q1", libc::O_RDWR, None);
        let e = errno();
        let made = mq_open("pc-ns", libc::O_RDWR | libc::O_CREAT, None);
        let code = if r != 0 {
            2
        } else if seen >= 0 || e != libc::ENOENT {
            3
        } else if made < 0 {
            4
        } else {
            0
        };
        umt::exit_now(code);
    }
    say(format!(
        "mq in a new IPC namespace: {}",
        umt::describe_status(waitpid(pid, 0))
    ));
    want(
        "mq_open a queue of another namespace",
        mq_open("pc-ns", libc::O_RDWR, None),
        -i64::from(libc::ENOENT),
    );
    // Unlinked, the queue lives on in its descriptors.
    want("mq_unlink", mq_unlink("pc-q1"), 0);
    want(
        "mq_unlink again",
        mq_unlink("pc-q1"),
        -i64::from(libc::ENOENT),
    );
    want(
        "mq_open after unlink",
        mq_open("pc-q1", libc::O_RDWR, None),
        -i64::from(libc::ENOENT),
    );
    want("mq_send after unlink", send(q, b"still", 0, None), 0);
    let n = recv(q, &mut buf, &mut p, None);
    want("mq_receive after unlink", n, 5);
    for fd in [q, ro, wo, i64::from(pr), i64::from(pw)] {
        umt::close(fd as i32);
    }
    for (f, min) in [("msg_max", 1), ("msgsize_max", 128), ("queues_max", 0)] {
        let v = std::fs::read_to_string(format!("/proc/sys/fs/mqueue/{f}"))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok());
        say(format!(
            "/proc/sys/fs/mqueue/{f}: {}",
            if v.is_some_and(|v| v >= min) {
                "a limit"
            } else {
                "missing"
            }
        ));
    }
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Iocb {
    data: u64,
    key: u32,
    rw_flags: u32,
    opcode: u16,
    reqprio: i16,
    fildes: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

#[repr(C)]
#[derive(Default, Clone, Copy, Debug)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const PREAD: u16 = 0;
const PWRITE: u16 = 1;
const FSYNC: u16 = 2;
const FDSYNC: u16 = 3;
const POLL: u16 = 5;
const PREADV: u16 = 7;
const PWRITEV: u16 = 8;

fn submit(ctx: u64, cbs: &[&Iocb]) -> i64 {
    let ptrs: Vec<usize> = cbs.iter().map(|c| *c as *const Iocb as usize).collect();
    sys(
        libc::SYS_io_submit,
        [ctx as usize, ptrs.len(), ptrs.as_ptr() as usize, 0, 0, 0],
    )
}

fn getevents(ctx: u64, min: usize, evs: &mut [IoEvent], ts: Option<&libc::timespec>) -> i64 {
    sys(
        libc::SYS_io_getevents,
        [
            ctx as usize,
            min,
            evs.len(),
            evs.as_mut_ptr() as usize,
            ts.map_or(0, |t| t as *const libc::timespec as usize),
            0,
        ],
    )
}

fn aio_nr() -> i64 {
    std::fs::read_to_string("/proc/sys/fs/aio-nr")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(-1)
}

fn aio(dir: &str) {
    let mut ctx: u64 = 0;
    let pctx = &mut ctx as *mut u64 as usize;
    want(
        "io_setup 0 events",
        sys(libc::SYS_io_setup, [0, pctx, 0, 0, 0, 0]),
        -i64::from(libc::EINVAL),
    );
    want(
        "io_setup bad pointer",
        sys(libc::SYS_io_setup, [8, BAD, 0, 0, 0, 0]),
        -i64::from(libc::EFAULT),
    );
    want(
        "io_setup past aio-max-nr",
        sys(libc::SYS_io_setup, [65537, pctx, 0, 0, 0, 0]),
        -i64::from(libc::EAGAIN),
    );
    let before = aio_nr();
    want(
        "io_setup 128",
        sys(libc::SYS_io_setup, [128, pctx, 0, 0, 0, 0]),
        0,
    );
    let after = aio_nr();
    say(format!(
        "aio-nr grew by 128 or more: {}",
        after - before >= 128
    ));
    // libaio reads the ring header at the context's address.
    // SAFETY: the context id is the address of a mapping io_setup made.
    let _magic = unsafe { std::ptr::read_volatile((ctx + 16) as *const u32) };
    say("io_setup: the context's address is mapped");
    want(
        "io_setup with *ctxp set",
        sys(libc::SYS_io_setup, [8, pctx, 0, 0, 0, 0]),
        -i64::from(libc::EINVAL),
    );
    let path = format!("{dir}/aio");
    let f = open(&path, libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC) as u32;
    let hello = *b"hello, aio";
    let mut rbuf = [0u8; 10];
    let v1 = *b"vec-one ";
    let v2 = *b"vec-two";
    let mut r1 = [0u8; 8];
    let mut r2 = [0u8; 7];
    let wiov = [
        libc::iovec {
            iov_base: v1.as_ptr() as *mut _,
            iov_len: v1.len(),
        },
        libc::iovec {
            iov_base: v2.as_ptr() as *mut _,
            iov_len: v2.len(),
        },
    ];
    let riov = [
        libc::iovec {
            iov_base: r1.as_mut_ptr() as *mut _,
            iov_len: r1.len(),
        },
        libc::iovec {
            iov_base: r2.as_mut_ptr() as *mut _,
            iov_len: r2.len(),
        },
    ];
    let cb = |data: u64, opcode: u16, buf: usize, nbytes: usize, offset: i64| Iocb {
        data,
        opcode,
        fildes: f,
        buf: buf as u64,
        nbytes: nbytes as u64,
        offset,
        ..Default::default()
    };
    let w = cb(1, PWRITE, hello.as_ptr() as usize, hello.len(), 100);
    want("io_submit PWRITE", submit(ctx, &[&w]), 1);
    let mut evs = [IoEvent::default(); 8];
    want("io_getevents PWRITE", getevents(ctx, 1, &mut evs, None), 1);
    say(format!(
        "event: data {} obj is the iocb {} res {}",
        evs[0].data,
        evs[0].obj == &w as *const Iocb as u64,
        evs[0].res
    ));
    let r = cb(2, PREAD, rbuf.as_mut_ptr() as usize, rbuf.len(), 100);
    let wv = cb(3, PWRITEV, wiov.as_ptr() as usize, 2, 200);
    let rv = cb(4, PREADV, riov.as_ptr() as usize, 2, 200);
    let fs = cb(5, FSYNC, 0, 0, 0);
    let fds = cb(6, FDSYNC, 0, 0, 0);
    let past = cb(7, PREAD, rbuf.as_mut_ptr() as usize, rbuf.len(), 1 << 20);
    let fault = cb(8, PREAD, BAD, 4, 100);
    want(
        "io_submit 7 iocbs",
        submit(ctx, &[&r, &wv, &rv, &fs, &fds, &past, &fault]),
        7,
    );
    let n = getevents(ctx, 7, &mut evs, None);
    want("io_getevents 7", n, 7);
    let mut got: Vec<IoEvent> = evs[..n.max(0) as usize].to_vec();
    got.sort_by_key(|e| e.data);
    for e in &got {
        say(format!("event: data {} res {}", e.data, e.res));
    }
    say(format!(
        "PREAD read {:?}, PREADV read {:?}{:?}",
        String::from_utf8_lossy(&rbuf),
        String::from_utf8_lossy(&r1),
        String::from_utf8_lossy(&r2)
    ));
    // Submit-time errors: the first iocb's error, or the count before it.
    let badfd = Iocb {
        fildes: 999,
        ..cb(9, PREAD, rbuf.as_mut_ptr() as usize, 1, 0)
    };
    want(
        "io_submit bad descriptor",
        submit(ctx, &[&badfd]),
        -i64::from(libc::EBADF),
    );
    want("io_submit good then bad", submit(ctx, &[&r, &badfd]), 1);
    getevents(ctx, 1, &mut evs, None);
    let bad_op = cb(10, 99, 0, 0, 0);
    want(
        "io_submit bad opcode",
        submit(ctx, &[&bad_op]),
        -i64::from(libc::EINVAL),
    );
    let noop = cb(10, 6, 0, 0, 0);
    want(
        "io_submit NOOP",
        submit(ctx, &[&noop]),
        -i64::from(libc::EINVAL),
    );
    let resv = Iocb { reserved2: 1, ..r };
    want(
        "io_submit reserved field",
        submit(ctx, &[&resv]),
        -i64::from(libc::EINVAL),
    );
    let fsync_buf = cb(11, FSYNC, 8, 0, 0);
    want(
        "io_submit FSYNC with a buffer",
        submit(ctx, &[&fsync_buf]),
        -i64::from(libc::EINVAL),
    );
    let flags = Iocb {
        rw_flags: 0x8000_0000,
        ..r
    };
    want(
        "io_submit unknown RWF flag",
        submit(ctx, &[&flags]),
        -i64::from(libc::EOPNOTSUPP),
    );
    let wo = open(&path, libc::O_WRONLY) as u32;
    let rwo = Iocb { fildes: wo, ..r };
    want(
        "io_submit PREAD write-only",
        submit(ctx, &[&rwo]),
        -i64::from(libc::EBADF),
    );
    want(
        "io_submit negative count",
        sys(libc::SYS_io_submit, [ctx as usize, usize::MAX, 0, 0, 0, 0]),
        -i64::from(libc::EINVAL),
    );
    want(
        "io_submit bad list",
        sys(libc::SYS_io_submit, [ctx as usize, 1, BAD, 0, 0, 0]),
        -i64::from(libc::EFAULT),
    );
    // IOCB_FLAG_RESFD: the eventfd counts completions.
    // SAFETY: plain eventfd.
    let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    let with_efd = Iocb {
        flags: 1,
        resfd: efd as u32,
        ..cb(12, PREAD, rbuf.as_mut_ptr() as usize, 5, 100)
    };
    want("io_submit with RESFD", submit(ctx, &[&with_efd]), 1);
    want("io_getevents RESFD", getevents(ctx, 1, &mut evs, None), 1);
    let mut cnt = [0u8; 8];
    umt::read_raw(efd, &mut cnt);
    say(format!("eventfd count {}", u64::from_le_bytes(cnt)));
    let bad_resfd = Iocb {
        resfd: f,
        ..with_efd
    };
    want(
        "io_submit RESFD not an eventfd",
        submit(ctx, &[&bad_resfd]),
        -i64::from(libc::EINVAL),
    );
    // POLL: pending until the pipe is readable; io_cancel of a pending and a done one.
    let (pr, pw) = umt::pipe2(libc::O_CLOEXEC);
    let poll = Iocb {
        fildes: pr as u32,
        ..cb(13, POLL, libc::POLLIN as usize, 0, 0)
    };
    want("io_submit POLL", submit(ctx, &[&poll]), 1);
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    want(
        "io_getevents POLL not ready",
        getevents(ctx, 1, &mut evs, Some(&zero)),
        0,
    );
    let t0 = umt::now_ns();
    let short = libc::timespec {
        tv_sec: 0,
        tv_nsec: 30_000_000,
    };
    want(
        "io_getevents 30 ms",
        getevents(ctx, 1, &mut evs, Some(&short)),
        0,
    );
    umt::check(
        umt::now_ns() - t0 >= 20_000_000,
        "io_getevents waited its timeout",
    );
    umt::write_all(pw, b"p", "make the pipe readable");
    want(
        "io_getevents POLL ready",
        getevents(ctx, 1, &mut evs, None),
        1,
    );
    say(format!(
        "POLL event: data {} res {:#x}",
        evs[0].data, evs[0].res
    ));
    let (cr, _cw) = umt::pipe2(libc::O_CLOEXEC);
    let poll2 = Iocb {
        fildes: cr as u32,
        ..cb(14, POLL, libc::POLLIN as usize, 0, 0)
    };
    want("io_submit POLL 2", submit(ctx, &[&poll2]), 1);
    want(
        "io_cancel pending POLL",
        sys(
            libc::SYS_io_cancel,
            [
                ctx as usize,
                &poll2 as *const Iocb as usize,
                evs.as_mut_ptr() as usize,
                0,
                0,
                0,
            ],
        ),
        -i64::from(libc::EINPROGRESS),
    );
    want(
        "io_getevents cancelled",
        getevents(ctx, 1, &mut evs, None),
        1,
    );
    say(format!(
        "cancelled event: data {} res {}",
        evs[0].data, evs[0].res
    ));
    want(
        "io_cancel completed",
        sys(
            libc::SYS_io_cancel,
            [
                ctx as usize,
                &r as *const Iocb as usize,
                evs.as_mut_ptr() as usize,
                0,
                0,
                0,
            ],
        ),
        -i64::from(libc::EINVAL),
    );
    want(
        "io_getevents min > nr",
        sys(
            libc::SYS_io_getevents,
            [ctx as usize, 2, 1, evs.as_mut_ptr() as usize, 0, 0],
        ),
        -i64::from(libc::EINVAL),
    );
    want(
        "io_getevents bad context",
        sys(
            libc::SYS_io_getevents,
            [1, 0, 1, evs.as_mut_ptr() as usize, 0, 0],
        ),
        -i64::from(libc::EINVAL),
    );
    // io_pgetevents with a signal mask.
    let mask = umt::sigset(&[libc::SIGUSR2]);
    let sigset = [&mask as *const libc::sigset_t as usize, 8usize];
    want(
        "io_pgetevents",
        sys(
            SYS_IO_PGETEVENTS,
            [
                ctx as usize,
                0,
                8,
                evs.as_mut_ptr() as usize,
                &zero as *const libc::timespec as usize,
                sigset.as_ptr() as usize,
            ],
        ),
        0,
    );
    // A child has no context (the ring is not inherited).
    let pid = fork();
    if pid == 0 {
        let r = submit(ctx, &[&r]);
        umt::exit_now(if r < 0 && errno() == libc::EINVAL {
            0
        } else {
            1
        });
    }
    say(format!(
        "io_submit in a child: {}",
        if waitpid(pid, 0) == 0 {
            "EINVAL"
        } else {
            "not EINVAL"
        }
    ));
    want(
        "io_destroy",
        sys(libc::SYS_io_destroy, [ctx as usize, 0, 0, 0, 0, 0]),
        0,
    );
    want(
        "io_destroy again",
        sys(libc::SYS_io_destroy, [ctx as usize, 0, 0, 0, 0, 0]),
        -i64::from(libc::EINVAL),
    );
    want(
        "io_submit destroyed",
        submit(ctx, &[&r]),
        -i64::from(libc::EINVAL),
    );
    for fd in [f as i32, wo as i32, efd, pr, pw, cr] {
        umt::close(fd);
    }
}

/// The calls left out on purpose answer ENOSYS, whatever the arguments.
fn absent() {
    let calls: [(&str, libc::c_long); 9] = [
        ("io_uring_setup", libc::SYS_io_uring_setup),
        ("io_uring_enter", libc::SYS_io_uring_enter),
        ("io_uring_register", libc::SYS_io_uring_register),
        ("perf_event_open", libc::SYS_perf_event_open),
        ("fanotify_init", libc::SYS_fanotify_init),
        ("fanotify_mark", libc::SYS_fanotify_mark),
        ("keyctl", libc::SYS_keyctl),
        ("add_key", libc::SYS_add_key),
        ("request_key", libc::SYS_request_key),
    ];
    for (name, nr) in calls {
        want(name, sys(nr, [0; 6]), -i64::from(libc::ENOSYS));
    }
}

fn main() {
    umt::init("probecalls");
    let dir = umt::workdir();
    umt::mount_proc_if_init();
    if std::env::args().nth(2).as_deref() == Some("absent") {
        absent();
    } else {
        pidfd_getfd(&dir);
        kcmp(&dir);
        ioprio();
        readahead(&dir);
        mqueue(&dir);
        aio(&dir);
    }
    umt::done("probecalls");
}
