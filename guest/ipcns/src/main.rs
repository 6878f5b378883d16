//! Differential test of IPC namespaces (issue 23; ipc/namespace.c, kernel/nsproxy.c,
//! ipc_namespaces(7)).
//!
//! `ipcns WORKDIR [unpriv]`, run as root: a System V shared memory segment and message queue
//! made in the initial namespace (keys from the pid, so a native run meets nothing of the
//! host's) are not seen by a child after `unshare(CLONE_NEWIPC)` (`ENOENT` without
//! `IPC_CREAT`, a new object with it), nor by a `clone(CLONE_NEWIPC)` child; after setns(2)
//! back through a descriptor of `/proc/self/ns/ipc` the outer objects are found again and the
//! message sent in the inner namespace is not in the outer queue. A segment attached in the
//! inner namespace stays readable after the namespace is gone. An unprivileged child (setuid
//! to nobody) gets `EPERM` from unshare and setns. Only host-independent facts are printed.
//! `unpriv` (the gate passes it when the native run is not root) prints the marker only.

use umt::{check, check_eq, cstr, ename, errno, fail, say};

fn link() -> String {
    std::fs::read_link("/proc/self/ns/ipc")
        .unwrap_or_else(|e| fail(format!("readlink /proc/self/ns/ipc: {e}")))
        .to_string_lossy()
        .into_owned()
}

/// Whether `/proc/sysvipc/shm` lists a segment with `key` (its first column).
fn sysvipc_has(key: i32) -> bool {
    std::fs::read_to_string("/proc/sysvipc/shm")
        .map(|t| {
            t.lines()
                .any(|l| l.split_whitespace().next() == Some(&key.to_string()))
        })
        .unwrap_or(false)
}

fn res(r: i64) -> String {
    if r < 0 {
        ename(errno())
    } else {
        "ok".to_string()
    }
}

fn shmget(key: i32, flg: i32) -> i64 {
    // SAFETY: shmget takes plain values.
    i64::from(unsafe { libc::shmget(key, 4096, flg) })
}

fn msgget(key: i32, flg: i32) -> i64 {
    // SAFETY: msgget takes plain values.
    i64::from(unsafe { libc::msgget(key, flg) })
}

/// The number of messages in queue `id` (`msg_qnum`).
fn qnum(id: i32) -> i64 {
    // SAFETY: msqid_ds is plain old data.
    let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
    // SAFETY: `ds` is a live msqid_ds.
    if unsafe { libc::msgctl(id, libc::IPC_STAT, &mut ds) } < 0 {
        fail(format!("msgctl IPC_STAT: {}", ename(errno())));
    }
    ds.msg_qnum as i64
}

fn open_ns() -> i32 {
    let p = cstr("/proc/self/ns/ipc");
    // SAFETY: a valid C string.
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    check(fd >= 0, "open /proc/self/ns/ipc");
    fd
}

fn in_child(what: &str, f: impl FnOnce()) {
    let pid = umt::fork();
    if pid == 0 {
        f();
        umt::exit_now(0);
    }
    let st = umt::waitpid(pid, 0);
    check_eq(umt::describe_status(st), "exited 0".to_string(), what);
}

fn main() {
    umt::init("ipcns");
    let _ = umt::workdir();
    // As init under linux, /proc is not mounted yet.
    umt::mount_proc_if_init();
    // SAFETY: plain getpid.
    let pid = unsafe { libc::getpid() };
    if std::env::args().nth(2).as_deref() == Some("unpriv") {
        umt::done("ipcns");
        return;
    }
    let shm_key = 0x55a0_0000 | (pid & 0xffff);
    let msg_key = 0x55b0_0000 | (pid & 0xffff);
    let shm_id = shmget(shm_key, libc::IPC_CREAT | libc::IPC_EXCL | 0o600);
    let msg_id = msgget(msg_key, libc::IPC_CREAT | libc::IPC_EXCL | 0o600);
    check(shm_id >= 0 && msg_id >= 0, "outer shmget/msgget");
    let outer = link();
    say(format!(
        "outer link has the form ipc:[N]: {}",
        outer.starts_with("ipc:[") && outer.ends_with(']')
    ));

    say(format!(
        "outer sysvipc lists the segment: {}",
        sysvipc_has(shm_key)
    ));

    in_child("unshare child", || {
        let fd = open_ns();
        say(format!(
            "unshare(CLONE_NEWIPC): {}",
            // SAFETY: unshare takes flags only.
            res(i64::from(unsafe { libc::unshare(libc::CLONE_NEWIPC) }))
        ));
        say(format!("inner link differs: {}", link() != outer));
        say(format!("inner msgget(key, 0): {}", res(msgget(msg_key, 0))));
        say(format!("inner shmget(key, 0): {}", res(shmget(shm_key, 0))));
        say(format!(
            "inner sysvipc lists the outer segment: {}",
            sysvipc_has(shm_key)
        ));
        let inner_shm = shmget(shm_key, libc::IPC_CREAT | libc::IPC_EXCL | 0o600);
        say(format!(
            "inner shmget(key, IPC_CREAT|IPC_EXCL): {}",
            res(inner_shm)
        ));
        let inner_msg = msgget(msg_key, libc::IPC_CREAT | libc::IPC_EXCL | 0o600);
        say(format!(
            "inner msgget(key, IPC_CREAT|IPC_EXCL): {}",
            res(inner_msg)
        ));
        let m: [u8; 16] = [1, 0, 0, 0, 0, 0, 0, 0, b'h', b'i', 0, 0, 0, 0, 0, 0];
        // SAFETY: `m` is a live msgbuf (mtype then text) of 8 + 2 bytes at least.
        let r = unsafe { libc::msgsnd(inner_msg as i32, m.as_ptr().cast(), 2, 0) };
        say(format!("inner msgsnd: {}", res(i64::from(r))));
        // SAFETY: attaching a segment of this namespace anywhere.
        let at = unsafe { libc::shmat(inner_shm as i32, std::ptr::null(), 0) };
        check(at as isize != -1, "inner shmat");
        let bytes = at.cast::<u8>();
        // SAFETY: the segment is 4096 bytes, mapped read-write at `at`.
        unsafe { bytes.write_volatile(42) };
        say(format!(
            "setns(fd, CLONE_NEWIPC): {}",
            // SAFETY: setns takes a descriptor and flags.
            res(i64::from(unsafe { libc::setns(fd, libc::CLONE_NEWIPC) }))
        ));
        say(format!("back in the outer link: {}", link() == outer));
        say(format!(
            "outer msgget(key, 0) finds the outer queue: {}",
            msgget(msg_key, 0) == msg_id
        ));
        say(format!(
            "outer shmget(key, 0) finds the outer segment: {}",
            shmget(shm_key, 0) == shm_id
        ));
        say(format!("outer queue has {} messages", qnum(msg_id as i32)));
        // SAFETY: the mapping is still there (shmat's pages outlive the namespace).
        say(format!("inner segment still mapped: {}", unsafe {
            bytes.read_volatile()
        }));
        // munmap, not shmdt: shmdt here finds segments through the caller's namespace only
        // (Linux finds them by the vma), and this one's namespace is gone.
        // SAFETY: unmapping what shmat mapped.
        say(format!(
            "munmap: {}",
            res(i64::from(unsafe { libc::munmap(at, 4096) }))
        ));
    });

    // clone(CLONE_NEWIPC) as a fork.
    // SAFETY: a fork-like raw clone (no CLONE_VM, stack 0): the child continues on a copy.
    let c = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_NEWIPC | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    } as i32;
    if c < 0 {
        fail(format!("clone(CLONE_NEWIPC): {}", ename(errno())));
    }
    if c == 0 {
        let own = link() != outer;
        say(format!(
            "clone child: own namespace {own}, msgget(key, 0): {}",
            res(msgget(msg_key, 0))
        ));
        umt::exit_now(0);
    }
    let st = umt::waitpid(c, 0);
    check_eq(
        umt::describe_status(st),
        "exited 0".to_string(),
        "clone child",
    );

    in_child("unprivileged child", || {
        let fd = open_ns();
        // SAFETY: plain id changes.
        let r = unsafe { libc::setgid(65534) | libc::setuid(65534) };
        check(r == 0, "setgid/setuid nobody");
        say(format!(
            "unprivileged unshare(CLONE_NEWIPC): {}",
            // SAFETY: unshare takes flags only.
            res(i64::from(unsafe { libc::unshare(libc::CLONE_NEWIPC) }))
        ));
        say(format!(
            "unprivileged setns: {}",
            // SAFETY: setns takes a descriptor and flags.
            res(i64::from(unsafe { libc::setns(fd, libc::CLONE_NEWIPC) }))
        ));
    });
    say(format!(
        "parent still in the outer link: {}",
        link() == outer
    ));
    // SAFETY: removing this program's own objects.
    let r = unsafe {
        libc::shmctl(shm_id as i32, libc::IPC_RMID, std::ptr::null_mut())
            | libc::msgctl(msg_id as i32, libc::IPC_RMID, std::ptr::null_mut())
    };
    say(format!("cleanup: {}", res(i64::from(r))));
    umt::done("ipcns");
}
