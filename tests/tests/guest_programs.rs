//! Differential gate: the guest test programs of guest/ (static musl executables) run natively on
//! the host and under `linux` (as init, in every engine of [`ENGINES`]); their stdout must be the
//! same line by line, and end with the program's `UM-<NAME>-OK` marker (issue 3).
//!
//! Each program takes a work directory (argv[1]): natively a fresh directory under
//! build/um-native/, under `linux` a fresh /opt/um/work-<prog>-<engine> in the hostfs rootfs.
//! After `hostfs` ran, the files it wrote are checked on the host side too.
//!
//! One #[test] per program, so `--test-threads=2` runs two at a time.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use um_tests::{Boot, ENGINES, Outcome, guest_program, rootfs, workspace_root};

/// Per-run timeout (native and per boot).
const TIMEOUT: Duration = Duration::from_secs(60);

/// A fresh, empty directory.
fn fresh_dir(p: &Path) {
    let _ = std::fs::remove_dir_all(p);
    std::fs::create_dir_all(p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
}

/// The console lines of a run: '\r' dropped, kernel-log lines (`[    1.234] ...`) dropped.
fn lines(s: &str) -> Vec<String> {
    s.lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !is_kernel_log(l))
        .map(str::to_string)
        .collect()
}

fn is_kernel_log(l: &str) -> bool {
    let Some(rest) = l.strip_prefix('[') else {
        return false;
    };
    let Some(end) = rest.find(']') else {
        return false;
    };
    let stamp = rest[..end].trim();
    !stamp.is_empty() && stamp.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// Runs the program natively; returns (stdout, exit status description).
fn run_native(prog: &str, workdir: &Path, extra: &[&str]) -> (String, String) {
    let exe = rootfs().join("opt/um").join(prog);
    let mut child = Command::new(&exe)
        .arg(workdir)
        .args(extra)
        .current_dir(workdir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {} natively: {e}", exe.display()));
    let mut out = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{prog} did not finish natively within {TIMEOUT:?}: the program itself hangs \
                 on this host"
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (reader.join().unwrap_or_default(), format!("{status}"))
}

/// First differing line, with context, or None if equal.
fn diff(native: &[String], guest: &[String]) -> Option<String> {
    let n = native.len().max(guest.len());
    for i in 0..n {
        let a = native.get(i).map(String::as_str);
        let b = guest.get(i).map(String::as_str);
        if a != b {
            return Some(format!(
                "first difference at line {}:\n  native: {}\n  linux:  {}",
                i + 1,
                a.unwrap_or("<end of output>"),
                b.unwrap_or("<end of output>")
            ));
        }
    }
    None
}

fn marker(prog: &str) -> String {
    format!("UM-{}-OK", prog.to_ascii_uppercase())
}

/// The host directory for the guest's work dir of this program and engine.
fn guest_workdir(prog: &str, engine_idx: usize) -> (PathBuf, String) {
    let name = format!("work-{prog}-{engine_idx}");
    (
        rootfs().join("opt/um").join(&name),
        format!("/opt/um/{name}"),
    )
}

/// Runs `prog` natively and in every engine, compares, asserts the marker; `after` checks the
/// work directory of each run (native and guest) on the host.
fn differential(prog: &str, after: impl Fn(&Path, &str)) {
    differential_with(prog, &[], after);
}

/// [`differential`] with extra arguments after the work directory.
fn differential_with(prog: &str, extra: &[&str], after: impl Fn(&Path, &str)) {
    let init = guest_program(prog);
    // Work directories per variant, so that variants may run at the same time.
    let tag = [&[prog], extra].concat().join("-");
    let native_dir = workspace_root().join("build/um-native").join(&tag);
    fresh_dir(&native_dir);
    let (native_out, native_status) = run_native(prog, &native_dir, extra);
    let native = lines(&native_out);
    let want = marker(prog);
    if native.last().map(String::as_str) != Some(want.as_str()) {
        panic!(
            "{prog} fails natively on this host ({native_status}), so there is no baseline; \
             its output:\n{native_out}"
        );
    }
    after(&native_dir, "native");
    let _ = std::fs::remove_dir_all(&native_dir);

    for (i, engine) in ENGINES.iter().enumerate() {
        eprintln!("um-tests: {prog}: engine: {}", engine.join(" "));
        let (host_dir, guest_dir) = guest_workdir(&tag, i);
        fresh_dir(&host_dir);
        let out: Outcome = Boot::new()
            .engine(engine)
            .init(&init)
            .args(&[&[guest_dir.as_str()], extra].concat())
            .timeout(TIMEOUT)
            .run();
        let guest = lines(&out.stdout);
        if let Some(d) = diff(&native, &guest) {
            panic!(
                "{prog} under linux ({}) differs from the native run\n{d}\n\
                 ---- native output:\n{}\n{}",
                engine.join(" "),
                native.join("\n"),
                out.report()
            );
        }
        out.assert_ok(&want);
        out.assert_exit_code(0);
        after(&host_dir, &format!("linux {}", engine.join(" ")));
        let _ = std::fs::remove_dir_all(&host_dir);
    }
}

fn no_check(_: &Path, _: &str) {}

#[test]
fn threads() {
    differential("threads", no_check);
}

#[test]
fn futex() {
    differential("futex", no_check);
}

#[test]
fn signals() {
    differential("signals", no_check);
}

/// ptrace(2) inside the guest (kernel/src/ptrace.rs): TRACEME, syscall stops, registers,
/// PEEK/POKEDATA, signal injection, the exec event, fork tracing, ATTACH/DETACH.
#[test]
fn ptrace() {
    differential("ptrace", no_check);
}

/// seccomp(2) filters of a guest program (kernel/src/seccomp): strict mode, the verifier,
/// every action and their precedence, TRAP's siginfo, inheritance, TSYNC, no_new_privs,
/// SECCOMP_RET_TRACE with a ptrace tracer.
#[test]
fn seccompf() {
    differential("seccompf", no_check);
}

/// guest/seccompn: seccomp user notification (NEW_LISTENER, the listener's RECV, SEND with a
/// value, an errno or CONTINUE, ID_VALID, poll states, signals, a closed listener).
#[test]
fn seccompn() {
    differential("seccompn", no_check);
}

#[test]
fn procs() {
    differential("procs", no_check);
}

#[test]
fn pipes() {
    differential("pipes", no_check);
}

#[test]
fn unixsock() {
    differential("unixsock", no_check);
}

#[test]
fn inetsock() {
    differential("inetsock", no_check);
}

#[test]
fn packetsock() {
    differential("packetsock", no_check);
}

/// rtnetlink, sock_diag, the interface ioctls, /proc/net, /sys/class/net and
/// sendmmsg/recvmmsg, in a network namespace of the program's own (guest/netlink).
#[test]
fn netlink() {
    differential("netlink", no_check);
}

#[test]
fn epoll() {
    differential("epoll", no_check);
}

#[test]
fn timers() {
    differential("timers", no_check);
}

#[test]
fn newapi() {
    differential("newapi", no_check);
}

#[test]
fn mmapfile() {
    differential("mmapfile", no_check);
}

/// Pages a file or shared memory object drops (hole punch, MADV_REMOVE, truncate) leave every
/// address space that maps them, one running guest code too: memfd, tmpfs, shared anonymous
/// memory, SysV shm, private copies (guest/shmcoherence).
#[test]
fn shmcoherence() {
    differential("shmcoherence", no_check);
}

/// fork while other threads write (issue 24): writer threads fault fresh pages in and write
/// them while the main thread forks hundreds of times; every child must see its memory as of
/// the fork and nothing the parent writes afterwards (guest/forkstress; at most 400 forks or
/// 8 s per run).
#[test]
fn forkstress() {
    differential("forkstress", no_check);
}

/// FP/SIMD and FP control/status registers of threads (and a forked process) survive clobbering
/// signal handlers, preemption, sched_yield and nanosleep (guest/fptorture).
#[test]
fn fptorture() {
    differential("fptorture", no_check);
}

/// The same with the AVX upper halves of ymm0-15 loaded, checked and clobbered too (x86_64
/// hosts with AVX; elsewhere there is nothing more to check): the XSAVE image travels through
/// guest signal frames, fork and both engines' register access.
#[test]
fn fptorture_avx() {
    let has_avx = std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| {
        c.lines()
            .find(|l| l.starts_with("flags"))
            .is_some_and(|l| l.split_whitespace().any(|f| f == "avx"))
    });
    if cfg!(target_arch = "x86_64") && has_avx {
        differential_with("fptorture", &["avx"], no_check);
    } else {
        eprintln!("um-tests: fptorture_avx: not an x86_64 host with AVX: same as fptorture");
        differential("fptorture", no_check);
    }
}

/// The vDSO: found through AT_SYSINFO_EHDR and its own ELF tables, time functions agree with the
/// syscalls, `[vdso]` in /proc/self/maps, a forked child uses it (guest/vdso; natively against
/// the host's vDSO).
#[test]
fn vdso() {
    differential("vdso", no_check);
}

/// What guest/hostfs leaves in its work directory (see its module docs).
fn check_hostfs_files(dir: &Path, run: &str) {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("hostfs ({run}): {name} not on the host: {e}"))
    };
    let expect = |name: &str, want: &str| {
        let got = read(name);
        assert_eq!(
            got, want,
            "hostfs ({run}): host file {name} has the wrong content"
        );
    };
    expect("out.txt", "line one\nLINE TWO\nline three\nappended\n");
    expect("renamed.txt", "moved\n");
    expect("hard", "moved\n");
    expect("sub/dir/file", "nested\n");
    assert!(
        !dir.join("tmp.txt").exists(),
        "hostfs ({run}): tmp.txt still exists on the host after rename"
    );
    assert!(
        !dir.join("gone.txt").exists(),
        "hostfs ({run}): gone.txt still exists on the host after unlink"
    );
    let link = std::fs::read_link(dir.join("link"))
        .unwrap_or_else(|e| panic!("hostfs ({run}): link is not a symlink on the host: {e}"));
    assert_eq!(link, Path::new("out.txt"), "hostfs ({run}): symlink target");
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(dir.join("renamed.txt")).expect("stat renamed.txt");
    assert_eq!(
        md.nlink(),
        2,
        "hostfs ({run}): link count of renamed.txt on the host"
    );
    let md = std::fs::metadata(dir.join("mode600")).expect("stat mode600");
    assert_eq!(
        md.mode() & 0o7777,
        0o600,
        "hostfs ({run}): mode of mode600 on the host"
    );
}

#[test]
fn hostfs() {
    differential("hostfs", check_hostfs_files);
}

/// The arguments of guest/xattr: its tmpfs directory (`/dev/shm`, natively and in the guest),
/// and `unpriv` when the native run is not root (the guest's init always is), so both leave
/// out what needs root.
fn xattr_args() -> Vec<&'static str> {
    let root = nix::unistd::geteuid().is_root();
    if root {
        vec!["/dev/shm"]
    } else {
        vec!["/dev/shm", "unpriv"]
    }
}

/// A host xattr of a file, no follow (`None` if absent).
fn host_xattr(path: &Path, name: &str) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("path");
    let n = std::ffi::CString::new(name).expect("name");
    let mut buf = vec![0u8; 256];
    // SAFETY: valid C strings; `buf` has room for 256 bytes.
    let r = unsafe { libc::lgetxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), 256) };
    (r >= 0).then(|| {
        buf.truncate(r as usize);
        buf
    })
}

/// What guest/xattr leaves: `persist` with `user.persist` = `kept`, as the host xattr
/// `user.um.user.persist` after a guest run (fs/src/hostfs_xattr.rs).
fn check_xattr_files(dir: &Path, run: &str) {
    let f = dir.join("persist");
    let name = if run == "native" {
        "user.persist"
    } else {
        "user.um.user.persist"
    };
    assert_eq!(
        host_xattr(&f, name).as_deref(),
        Some(&b"kept"[..]),
        "xattr ({run}): host xattr {name} of {}",
        f.display()
    );
    if run != "native" {
        assert_eq!(
            host_xattr(&f, "user.persist"),
            None,
            "xattr ({run}): the guest's attribute is not in the host's own namespace"
        );
    }
}

/// Extended attributes (issue 24; fs/xattr.c) on hostfs and tmpfs: every call, flag, limit,
/// namespace and permission rule of guest/xattr against the host's answers.
#[test]
fn xattr() {
    differential_with("xattr", &xattr_args(), check_xattr_files);
}

/// The guest's attributes on hostfs survive a reboot: a first boot sets them, a second one
/// (in every engine) reads them back.
#[test]
fn xattr_second_boot() {
    let init = guest_program("xattr");
    let extra = xattr_args();
    let unpriv = extra.contains(&"unpriv");
    for (i, engine) in ENGINES.iter().enumerate() {
        let (host_dir, guest_dir) = guest_workdir("xattr-reboot", i);
        fresh_dir(&host_dir);
        let first = Boot::new()
            .engine(engine)
            .init(&init)
            .args(&[&[guest_dir.as_str()], extra.as_slice()].concat())
            .timeout(TIMEOUT)
            .run();
        first.assert_ok("UM-XATTR-OK");
        let mut verify = vec![guest_dir.as_str(), "verify"];
        if unpriv {
            verify.push("unpriv");
        }
        let second = Boot::new()
            .engine(engine)
            .init(&init)
            .args(&verify)
            .timeout(TIMEOUT)
            .run();
        second.assert_ok("UM-XATTR-OK");
        let want = if unpriv {
            "xattr: persist: list: ok 13 [user.persist]"
        } else {
            "xattr: persist: list: ok 29 [trusted.persist user.persist]"
        };
        let out = lines(&second.stdout);
        for w in [want, "xattr: persist: user: ok 4 \"kept\""] {
            assert!(
                out.iter().any(|l| l == w),
                "xattr second boot ({}): no line {w:?}\n{}",
                engine.join(" "),
                second.report()
            );
        }
        if !unpriv {
            assert!(
                out.iter()
                    .any(|l| l == "xattr: persist: trusted: ok 4 \"kept\""),
                "xattr second boot ({}): trusted.persist lost\n{}",
                engine.join(" "),
                second.report()
            );
        }
        let _ = std::fs::remove_dir_all(&host_dir);
    }
}

/// A host ramfs mounted for one test, unmounted (lazily) when it ends.
struct Ramfs(PathBuf);

impl Ramfs {
    /// Mounts a ramfs on a fresh directory `build/NAME` (needs root, as CI runs).
    fn mount(name: &str) -> Ramfs {
        use std::os::unix::ffi::OsStrExt;
        let dir = workspace_root().join("build").join(name);
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).expect("path");
        // SAFETY: valid C strings; undoes an earlier run's mount if one was left.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        fresh_dir(&dir);
        let euid = nix::unistd::geteuid().as_raw();
        assert_eq!(
            euid, 0,
            "this test mounts a host ramfs (a file system without user xattrs) and needs root"
        );
        // SAFETY: valid C strings; no mount data.
        let r = unsafe {
            libc::mount(
                c"ramfs".as_ptr(),
                c.as_ptr(),
                c"ramfs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        assert_eq!(
            r,
            0,
            "mount -t ramfs on {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        );
        Ramfs(dir)
    }
}

impl Drop for Ramfs {
    fn drop(&mut self) {
        use std::os::unix::ffi::OsStrExt;
        if let Ok(c) = std::ffi::CString::new(self.0.as_os_str().as_bytes()) {
            // SAFETY: a valid C string.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
}

/// Extended attributes on hostfs over a host file system that takes no user xattrs (a
/// ramfs, as the arm64 lane's tmpfs of a 6.1 host): they live in hostfs's `.um-meta`
/// sidecar (fs/src/hostfs_meta.rs). guest/xattr's output equals its native run on a file
/// system with xattrs, in every engine, and a second boot reads them back.
#[test]
fn xattr_sidecar() {
    let ramfs = Ramfs::mount("um-xattr-ramfs");
    let probe = ramfs.0.join("probe");
    std::fs::write(&probe, b"p").expect("write probe");
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(probe.as_os_str().as_bytes()).expect("path");
        // SAFETY: valid C strings; a 1-byte value.
        let r =
            unsafe { libc::setxattr(c.as_ptr(), c"user.p".as_ptr(), c"v".as_ptr().cast(), 1, 0) };
        assert_eq!(
            r, -1,
            "the host ramfs took a user xattr: this test needs one that does not"
        );
    }
    std::fs::remove_file(&probe).expect("remove probe");
    let init = guest_program("xattr");
    let extra = xattr_args();
    let native_dir = workspace_root().join("build/um-native/xattr-sidecar");
    fresh_dir(&native_dir);
    let (native_out, native_status) = run_native("xattr", &native_dir, &extra);
    let native = lines(&native_out);
    let want = marker("xattr");
    assert_eq!(
        native.last().map(String::as_str),
        Some(want.as_str()),
        "xattr fails natively ({native_status}): {native_out}"
    );
    let _ = std::fs::remove_dir_all(&native_dir);
    let bind = format!("bind={}:/mnt", ramfs.0.display());
    let sidecar = ramfs.0.join(".um-meta");
    for (i, engine) in ENGINES.iter().enumerate() {
        let ctx = format!("xattr on a ramfs ({})", engine.join(" "));
        let host_dir = ramfs.0.join(format!("x{i}"));
        let guest_dir = format!("/mnt/x{i}");
        fresh_dir(&host_dir);
        let boot = |args: &[&str]| {
            Boot::new()
                .engine(engine)
                .extra(&bind)
                .init(&init)
                .args(args)
                .timeout(TIMEOUT)
                .run()
        };
        let out = boot(&[&[guest_dir.as_str()], extra.as_slice()].concat());
        if let Some(d) = diff(&native, &lines(&out.stdout)) {
            panic!("{ctx}: differs from the native run\n{d}\n{}", out.report());
        }
        out.assert_ok(&want);
        assert!(
            out.stderr.contains("takes no user xattrs"),
            "{ctx}: the kernel log does not say the bind mount has no host xattrs\n{}",
            out.report()
        );
        // On the host: no attribute of ours on the file (ramfs takes none), its entry in the
        // sidecar (`INO x NAME VALUE`, hex: user.persist = 757365722e70657273697374).
        let persist = host_dir.join("persist");
        assert_eq!(host_xattr(&persist, "user.um.user.persist"), None, "{ctx}");
        let ino =
            std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&persist).expect("persist"));
        let text = std::fs::read_to_string(&sidecar).unwrap_or_default();
        assert!(
            text.lines()
                .any(|l| l == format!("{ino} x 757365722e70657273697374 6b657074")),
            "{ctx}: no sidecar record of user.persist=kept for inode {ino}:\n{text}"
        );
        let mut verify = vec![guest_dir.as_str(), "verify"];
        verify.extend(extra.iter().filter(|a| **a == "unpriv"));
        let second = boot(&verify);
        second.assert_ok(&want);
        assert!(
            lines(&second.stdout)
                .iter()
                .any(|l| l == "xattr: persist: user: ok 4 \"kept\""),
            "{ctx}: second boot lost user.persist\n{}",
            second.report()
        );
        let _ = std::fs::remove_dir_all(&host_dir);
    }
}

/// An i386 `int $0x80` call of a 64-bit guest (issue 24 item 6; guest/int80): this kernel has
/// no IA32 emulation, so every engine answers it with the #GP of a Linux built without it
/// (SIGSEGV, SI_KERNEL, at the instruction, rax kept), never as the 64-bit call of that
/// number, which the ptrace engines did before (and the seccomp engine killed the process).
/// Not differential: a host with IA32 emulation runs the call.
#[cfg(target_arch = "x86_64")]
#[test]
fn int80_is_a_general_protection_fault() {
    let init = guest_program("int80");
    for engine in ENGINES {
        let out = Boot::new()
            .engine(engine)
            .init(&init)
            .timeout(TIMEOUT)
            .run();
        out.assert_ok("UM-INT80-OK");
        let got = lines(&out.stdout);
        for want in [
            "int80: SIGSEGV code 128 addr 0 at the instruction, rax 20",
            "int80: child exited 0",
        ] {
            assert!(
                got.iter().any(|l| l == want),
                "int80 ({}): no line {want:?}\n{}",
                engine.join(" "),
                out.report()
            );
        }
    }
}

/// Terminal ioctls on a pty pair (issue 24; drivers/tty/tty_ioctl.c): struct termio, locked
/// termios, soft carrier, breaks, modem lines, exclusive mode, TIOCSTI, job-control ids,
/// queues (guest/termio).
#[test]
fn termio() {
    let root = nix::unistd::geteuid().is_root();
    differential_with("termio", if root { &[] } else { &["unpriv"] }, no_check);
}

/// UTS namespaces (issue 23; kernel/utsname.c, uts_namespaces(7)): unshare and
/// clone(CLONE_NEWUTS), names per namespace through uname, sethostname, setdomainname and
/// /proc/sys/kernel, setns back through /proc/self/ns/uts, EPERM unprivileged (guest/utsns).
#[test]
fn utsns() {
    let root = nix::unistd::geteuid().is_root();
    differential_with("utsns", if root { &[] } else { &["unpriv"] }, no_check);
}

/// IPC namespaces (issue 23; ipc/namespace.c, ipc_namespaces(7)): SysV shm and msg keys per
/// namespace across unshare, clone and setns(CLONE_NEWIPC), /proc/sysvipc per namespace, a
/// mapped segment outliving its namespace, EPERM unprivileged (guest/ipcns).
#[test]
fn ipcns() {
    let root = nix::unistd::geteuid().is_root();
    differential_with("ipcns", if root { &[] } else { &["unpriv"] }, no_check);
}

/// Scheduling (issue 24 item 7; kernel/sched/syscalls.c, kernel/sys.c): policies and
/// real-time priorities, sched_setattr/getattr, SCHED_RESET_ON_FORK, nice values through
/// setpriority/getpriority (PRIO_PROCESS, PGRP, USER) with a user's rules, and the affinity
/// mask, which getcpu must honour (guest/sched). Its output names CPUs only by their place
/// in the starting mask, so the guest's CPU count need not be the host's.
#[test]
fn sched() {
    let root = nix::unistd::geteuid().is_root();
    differential_with("sched", if root { &[] } else { &["unpriv"] }, no_check);
}

/// The calls programs probe for (issue 20 item 3; kernel/pid.c pidfd_getfd, kernel/kcmp.c,
/// block/ioprio.c, mm/readahead.c, ipc/mqueue.c, fs/aio.c): pidfd_getfd, kcmp, ioprio,
/// readahead, POSIX message queues with notification and the `mqueue` file system, and native
/// AIO with eventfd completion, polls and cancellation (guest/probecalls). Root only: it
/// mounts, takes real-time I/O priorities and becomes another user in a child.
#[test]
fn probecalls() {
    if !nix::unistd::geteuid().is_root() {
        panic!("probecalls needs root natively (mount -t mqueue, RT ioprio, setresuid)");
    }
    differential("probecalls", no_check);
}

/// The calls this kernel leaves out on purpose (io_uring, perf_event_open, fanotify,
/// keyctl) answer ENOSYS as a Linux built without them, and the log names each once, not as an
/// unimplemented syscall (guest/probecalls `absent`). Not differential: the host has them.
#[test]
fn probecalls_absent() {
    let init = guest_program("probecalls");
    for engine in ENGINES {
        let out = Boot::new()
            .engine(engine)
            .init(&init)
            .args(&["/tmp", "absent"])
            .timeout(TIMEOUT)
            .run();
        out.assert_ok("UM-PROBECALLS-OK");
        for name in [
            "io_uring_setup",
            "perf_event_open",
            "fanotify_init",
            "keyctl",
        ] {
            let want = format!("{name}: ENOSYS on purpose");
            assert!(
                out.stderr.contains(&want),
                "probecalls absent ({}): the log does not name {name}\n{}",
                engine.join(" "),
                out.report()
            );
        }
    }
}

#[test]
fn kernel_log_lines_are_dropped() {
    assert_eq!(
        lines("a\r\n[    0.123456] Kernel panic - x\n[x] y\nb\n"),
        ["a", "[x] y", "b"]
    );
    assert_eq!(
        diff(&["a".into()], &["a".into(), "b".into()]).as_deref(),
        Some("first difference at line 2:\n  native: <end of output>\n  linux:  b")
    );
}
