//! Differential test of UTS namespaces (issue 23; kernel/utsname.c, kernel/nsproxy.c,
//! uts_namespaces(7)).
//!
//! `utsns WORKDIR [unpriv]`, run as root: a child unshares its UTS namespace (its
//! `/proc/self/ns/uts` link changes, the names start as a copy of the parent's), sets its host
//! and domain names (uname(2) and `/proc/sys/kernel/{hostname,domainname}` show them), and
//! goes back with setns(2) on a descriptor of its old namespace (the link and names are the
//! parent's again); `clone(CLONE_NEWUTS)` gives a child a namespace of its own; the parent's
//! names never change. An unprivileged child (setuid to nobody) gets `EPERM` from unshare,
//! sethostname and setns. Only host-independent facts are printed (names this program set,
//! and comparisons of the host's names and inode numbers), so the output is the same natively
//! and under `linux`. `unpriv` (the gate passes it when the native run is not root) prints
//! the marker only.

use std::ffi::CStr;
use umt::{check, check_eq, cstr, ename, errno, fail, say};

/// uname(2): (nodename, domainname).
fn names() -> (String, String) {
    // SAFETY: utsname is plain old data.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a live utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        fail(format!("uname: {}", ename(errno())));
    }
    let s = |f: &[libc::c_char]| {
        // SAFETY: uname NUL-terminates each field within its array.
        unsafe { CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    (s(&u.nodename), s(&u.domainname))
}

/// The text of `/proc/self/ns/uts` and the inode number in it; checks the form.
fn link() -> (String, u64) {
    let l = std::fs::read_link("/proc/self/ns/uts")
        .unwrap_or_else(|e| fail(format!("readlink /proc/self/ns/uts: {e}")));
    let l = l.to_string_lossy().into_owned();
    let n = l
        .strip_prefix("uts:[")
        .and_then(|r| r.strip_suffix(']'))
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| fail(format!("/proc/self/ns/uts link {l:?} is not uts:[N]")));
    (l, n)
}

/// stat(2)'s inode number of `path` (following links).
fn ino(path: &str) -> u64 {
    std::fs::metadata(path)
        .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
        .unwrap_or_else(|e| fail(format!("stat {path}: {e}")))
}

fn res(r: i64) -> String {
    if r < 0 {
        ename(errno())
    } else {
        format!("ok {r}")
    }
}

fn sethostname(s: &str) -> String {
    // SAFETY: the pointer and length describe a live slice.
    res(unsafe { libc::sethostname(s.as_ptr().cast(), s.len()) } as i64)
}

fn setdomainname(s: &str) -> String {
    // SAFETY: the pointer and length describe a live slice.
    res(unsafe { libc::setdomainname(s.as_ptr().cast(), s.len()) } as i64)
}

fn sysctl(name: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_else(|e| fail(format!("read /proc/sys/kernel/{name}: {e}")))
}

/// Runs `f` in a forked child and checks that it exits 0.
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
    umt::init("utsns");
    let _ = umt::workdir();
    // As init under linux, /proc is not mounted yet.
    umt::mount_proc_if_init();
    if std::env::args().nth(2).as_deref() == Some("unpriv") {
        umt::done("utsns");
        return;
    }
    let outer = names();
    let (outer_link, outer_ino) = link();
    say("outer link has the form uts:[N]");
    check_eq(ino("/proc/self/ns/uts"), outer_ino, "stat ino of ns/uts");
    say("stat of /proc/self/ns/uts gives the link's number");

    // unshare(CLONE_NEWUTS), names, then setns back.
    in_child("unshare child", || {
        let old = cstr("/proc/self/ns/uts");
        // SAFETY: a valid C string.
        let fd = unsafe { libc::open(old.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        check(fd >= 0, "open /proc/self/ns/uts");
        say(format!(
            "unshare(CLONE_NEWUTS): {}",
            // SAFETY: unshare takes flags only.
            res(unsafe { libc::unshare(libc::CLONE_NEWUTS) } as i64)
        ));
        let (inner_link, inner_ino) = link();
        say(format!("inner link differs: {}", inner_link != outer_link));
        say(format!(
            "inner stat ino matches: {}",
            ino("/proc/self/ns/uts") == inner_ino
        ));
        say(format!("inner names start as a copy: {}", names() == outer));
        say(format!("sethostname: {}", sethostname("um-utsns-inner")));
        say(format!("setdomainname: {}", setdomainname("um-utsns-dom")));
        let (n, d) = names();
        say(format!("inner uname: {n} {d}"));
        say(format!(
            "inner sysctl: {} {}",
            sysctl("hostname"),
            sysctl("domainname")
        ));
        std::fs::write("/proc/sys/kernel/hostname", "um-utsns-proc\n")
            .unwrap_or_else(|e| fail(format!("write hostname sysctl: {e}")));
        say(format!("after sysctl write: {}", names().0));
        say(format!(
            "setns(fd, CLONE_NEWNET): {}",
            // SAFETY: setns takes a descriptor and flags.
            res(unsafe { libc::setns(fd, libc::CLONE_NEWNET) } as i64)
        ));
        say(format!(
            "setns(fd, CLONE_NEWUTS): {}",
            // SAFETY: as above.
            res(unsafe { libc::setns(fd, libc::CLONE_NEWUTS) } as i64)
        ));
        say(format!(
            "back in the outer link: {}",
            link().0 == outer_link
        ));
        say(format!("back to the outer names: {}", names() == outer));
    });
    say(format!(
        "parent unchanged after unshare child: {}",
        names() == outer && link().0 == outer_link
    ));

    // clone(CLONE_NEWUTS) as a fork.
    // SAFETY: a fork-like raw clone (no CLONE_VM, stack 0): the child continues on a copy.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_NEWUTS | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    } as i32;
    if pid < 0 {
        fail(format!("clone(CLONE_NEWUTS): {}", ename(errno())));
    }
    if pid == 0 {
        let ok = link().0 != outer_link && names() == outer;
        let set = sethostname("um-utsns-clone");
        let now = names().0;
        say(format!(
            "clone child: own namespace copy {ok}, {set}, {now}"
        ));
        umt::exit_now(0);
    }
    let st = umt::waitpid(pid, 0);
    check_eq(
        umt::describe_status(st),
        "exited 0".to_string(),
        "clone child",
    );
    say(format!(
        "parent unchanged after clone child: {}",
        names() == outer && link().0 == outer_link
    ));

    // Unprivileged: EPERM.
    in_child("unprivileged child", || {
        let old = cstr("/proc/self/ns/uts");
        // SAFETY: a valid C string.
        let fd = unsafe { libc::open(old.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        check(fd >= 0, "open /proc/self/ns/uts");
        // SAFETY: plain id changes.
        let r = unsafe { libc::setgid(65534) | libc::setuid(65534) };
        check(r == 0, "setgid/setuid nobody");
        say(format!(
            "unprivileged unshare(CLONE_NEWUTS): {}",
            // SAFETY: unshare takes flags only.
            res(unsafe { libc::unshare(libc::CLONE_NEWUTS) } as i64)
        ));
        say(format!(
            "unprivileged sethostname: {}",
            sethostname("um-nope")
        ));
        say(format!(
            "unprivileged setns: {}",
            // SAFETY: setns takes a descriptor and flags.
            res(unsafe { libc::setns(fd, libc::CLONE_NEWUTS) } as i64)
        ));
        say(format!(
            "unprivileged names unchanged: {}",
            names() == outer
        ));
    });
    say(format!("parent unchanged at the end: {}", names() == outer));
    umt::done("utsns");
}
