//! Differential test of extended attributes (issue 24 item 3; fs/xattr.c, xattr(7)).
//!
//! `xattr WORKDIR TMPFSDIR [unpriv]`: the same checks in a fresh directory under WORKDIR (a
//! disk: hostfs under `linux`, the host's file system natively) and under TMPFSDIR (a tmpfs:
//! `/dev/shm` both natively and in the guest). Every call's answer is printed (`ok N` or the
//! errno name, values and sorted name lists), so the gate's comparison with the native run
//! shows the first difference. Checked: get/set/list/remove and their `l*`/`f*` forms,
//! `XATTR_CREATE`/`XATTR_REPLACE`, empty values, size 0 queries and `ERANGE`, the name and
//! value limits (`ERANGE`, `E2BIG`), unknown namespaces (`EOPNOTSUPP`) and bare prefixes
//! (`EINVAL`), `user.` on symlinks and FIFOs (`EPERM`), `O_PATH` descriptors (`EBADF`), and,
//! as root, `trusted.` and `security.` (hidden from and refused to an unprivileged child,
//! which also meets the file's own read/write permission for `user.`), and an immutable file
//! on tmpfs. `unpriv` (the gate passes it when the native run is not root) leaves out what
//! needs root.
//!
//! Left behind for the gate: `WORKDIR/persist` with `user.persist` = `kept` (and, as root,
//! `trusted.persist`), which `xattr WORKDIR verify` prints on a second boot.

use std::ffi::CString;
use umt::{cstr, ename, errno, say};

fn res(r: isize) -> String {
    if r < 0 {
        ename(errno())
    } else {
        format!("ok {r}")
    }
}

fn set(p: &CString, name: &str, v: &[u8], flags: i32) -> String {
    let n = cstr(name);
    // SAFETY: valid C strings; `v` is live for `v.len()` bytes.
    res(
        unsafe { libc::setxattr(p.as_ptr(), n.as_ptr(), v.as_ptr().cast(), v.len(), flags) }
            as isize,
    )
}

fn lset(p: &CString, name: &str, v: &[u8]) -> String {
    let n = cstr(name);
    // SAFETY: as in `set`.
    res(unsafe { libc::lsetxattr(p.as_ptr(), n.as_ptr(), v.as_ptr().cast(), v.len(), 0) } as isize)
}

/// getxattr with a buffer of `size`: the answer and the value read.
fn get(p: &CString, name: &str, size: usize) -> String {
    let n = cstr(name);
    let mut buf = vec![0u8; size.max(1)];
    // SAFETY: `buf` has room for `size` bytes.
    let r = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), size) };
    show(r, &buf, size)
}

fn lget(p: &CString, name: &str) -> String {
    let n = cstr(name);
    let mut buf = vec![0u8; 256];
    // SAFETY: `buf` has room for 256 bytes.
    let r = unsafe { libc::lgetxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), 256) };
    show(r, &buf, 256)
}

fn show(r: isize, buf: &[u8], size: usize) -> String {
    if r > 0 && size > 0 {
        let v = &buf[..r as usize];
        if v.len() <= 32 {
            return format!("ok {r} {:?}", String::from_utf8_lossy(v));
        }
        let sum: u32 = v.iter().map(|&b| u32::from(b)).sum();
        return format!("ok {r} sum {sum}");
    }
    res(r)
}

/// The sorted name list, from a listxattr-like call with buffer size `size`.
fn names(r: isize, buf: &[u8]) -> String {
    if r <= 0 {
        return res(r);
    }
    let mut v: Vec<String> = buf[..r as usize]
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| {
            let s = String::from_utf8_lossy(n).into_owned();
            if s.len() > 40 {
                format!("{}...({})", &s[..12], s.len())
            } else {
                s
            }
        })
        .collect();
    v.sort();
    format!("ok {r} [{}]", v.join(" "))
}

fn list(p: &CString, size: usize) -> String {
    let mut buf = vec![0u8; size.max(1)];
    // SAFETY: `buf` has room for `size` bytes.
    let r = unsafe { libc::listxattr(p.as_ptr(), buf.as_mut_ptr().cast(), size) };
    if size == 0 { res(r) } else { names(r, &buf) }
}

fn llist(p: &CString) -> String {
    let mut buf = vec![0u8; 4096];
    // SAFETY: `buf` has room for 4096 bytes.
    let r = unsafe { libc::llistxattr(p.as_ptr(), buf.as_mut_ptr().cast(), 4096) };
    names(r, &buf)
}

fn remove(p: &CString, name: &str) -> String {
    let n = cstr(name);
    // SAFETY: valid C strings.
    res(unsafe { libc::removexattr(p.as_ptr(), n.as_ptr()) } as isize)
}

fn lremove(p: &CString, name: &str) -> String {
    let n = cstr(name);
    // SAFETY: valid C strings.
    res(unsafe { libc::lremovexattr(p.as_ptr(), n.as_ptr()) } as isize)
}

fn mkfile(path: &str, mode: u32) -> CString {
    let p = cstr(path);
    // SAFETY: valid C string.
    let fd = unsafe {
        libc::open(
            p.as_ptr(),
            libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
            mode,
        )
    };
    umt::ok(fd as i64, &format!("create {path}"));
    umt::close(fd);
    // SAFETY: valid C string (the umask may have cut the mode).
    umt::ok(unsafe { libc::chmod(p.as_ptr(), mode) } as i64, "chmod");
    p
}

/// The checks on one directory; `label` starts every line.
fn suite(dir: &str, label: &str, tmpfs: bool, root: bool) {
    let t = |what: &str, r: String| say(format!("{label}: {what}: {r}"));
    let f = mkfile(&format!("{dir}/f"), 0o644);
    let dpath = cstr(&format!("{dir}/d"));
    // SAFETY: valid C string.
    umt::ok(
        unsafe { libc::mkdir(dpath.as_ptr(), 0o755) } as i64,
        "mkdir",
    );
    let l = cstr(&format!("{dir}/l"));
    std::os::unix::fs::symlink("f", format!("{dir}/l"))
        .unwrap_or_else(|e| umt::fail(format!("symlink: {e}")));
    let fifo = cstr(&format!("{dir}/p"));
    // SAFETY: valid C string.
    umt::ok(
        unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) } as i64,
        "mkfifo",
    );

    // A fresh file has none of ours.
    t("list fresh", list(&f, 4096));
    t("get missing", get(&f, "user.a", 64));
    t("set user.a", set(&f, "user.a", b"1", 0));
    t("get size 0", get(&f, "user.a", 0));
    t("get", get(&f, "user.a", 64));
    t("set longer", set(&f, "user.a", b"hello", 0));
    t("get too small", get(&f, "user.a", 2));
    t("get exact", get(&f, "user.a", 5));
    t(
        "create existing",
        set(&f, "user.a", b"x", libc::XATTR_CREATE),
    );
    t(
        "replace missing",
        set(&f, "user.b", b"x", libc::XATTR_REPLACE),
    );
    t("create new", set(&f, "user.b", b"bee", libc::XATTR_CREATE));
    t(
        "replace existing",
        set(&f, "user.b", b"BEE", libc::XATTR_REPLACE),
    );
    t("get replaced", get(&f, "user.b", 64));
    t("bad flags", set(&f, "user.c", b"x", 4));
    t("set empty value", set(&f, "user.empty", b"", 0));
    t("get empty value", get(&f, "user.empty", 64));
    t("get empty size 0", get(&f, "user.empty", 0));
    t("list size 0", list(&f, 0));
    t("list too small", list(&f, 5));
    t("list", list(&f, 4096));
    // Limits: names of 255 bytes (all of XATTR_NAME_MAX) and more, values past 64 KiB.
    let n255 = format!("user.{}", "n".repeat(250));
    let n256 = format!("user.{}", "n".repeat(251));
    t("name 255", set(&f, &n255, b"long name", 0));
    t("get name 255", get(&f, &n255, 64));
    t("name 256", set(&f, &n256, b"x", 0));
    t("get name 256", get(&f, &n256, 64));
    t("empty name", set(&f, "", b"x", 0));
    let big = vec![7u8; 65537];
    t("value 65537", set(&f, "user.big", &big, 0));
    let mid: Vec<u8> = (0..2000u32).map(|i| (i % 251) as u8).collect();
    t("value 2000", set(&f, "user.mid", &mid, 0));
    t("get value 2000", get(&f, "user.mid", 4096));
    if tmpfs {
        // A disk file system may keep less (ext4: one block); tmpfs keeps all of it.
        t("value 65536", set(&f, "user.max", &big[..65536], 0));
        t("get value 65536", get(&f, "user.max", 65536));
        t("get value 65536 huge buffer", get(&f, "user.max", 200000));
        t("remove value 65536", remove(&f, "user.max"));
    }
    t("list with long", list(&f, 4096));
    t("remove name 255", remove(&f, &n255));
    // Namespaces.
    t("unknown namespace", set(&f, "foo.bar", b"x", 0));
    t("get unknown namespace", get(&f, "foo.bar", 64));
    t("bare user.", set(&f, "user.", b"x", 0));
    t("get bare user.", get(&f, "user.", 64));
    t("system.foo", set(&f, "system.foo", b"x", 0));
    // Remove.
    t("remove", remove(&f, "user.a"));
    t("remove again", remove(&f, "user.a"));
    t("get removed", get(&f, "user.a", 64));
    t("remove never set", remove(&f, "user.never"));
    // Directories take user attributes; symlinks and FIFOs do not.
    t("dir set", set(&dpath, "user.d", b"dir", 0));
    t("dir get", get(&dpath, "user.d", 64));
    t("dir list", list(&dpath, 4096));
    t("symlink lset", lset(&l, "user.s", b"x"));
    t("symlink lget", lget(&l, "user.s"));
    t("symlink llist", llist(&l));
    t("symlink lremove", lremove(&l, "user.s"));
    t("through symlink set", set(&l, "user.via", b"link", 0));
    t("through symlink get", get(&f, "user.via", 64));
    t("symlink lget target's", lget(&l, "user.via"));
    t("fifo set", set(&fifo, "user.x", b"x", 0));
    t("fifo get", get(&fifo, "user.x", 64));
    t("fifo list", list(&fifo, 4096));

    // Descriptors.
    // SAFETY: valid C string.
    let fd = unsafe { libc::open(f.as_ptr(), libc::O_RDONLY) };
    umt::ok(fd as i64, "open");
    let n = cstr("user.fd");
    let mut buf = [0u8; 256];
    // SAFETY: valid C strings and buffers.
    unsafe {
        t(
            "fset",
            res(libc::fsetxattr(fd, n.as_ptr(), b"fdv".as_ptr().cast(), 3, 0) as isize),
        );
        t(
            "fget",
            show(
                libc::fgetxattr(fd, n.as_ptr(), buf.as_mut_ptr().cast(), 256),
                &buf,
                256,
            ),
        );
        let r = libc::flistxattr(fd, buf.as_mut_ptr().cast(), 256);
        t("flist", names(r, &buf));
        t("fremove", res(libc::fremovexattr(fd, n.as_ptr()) as isize));
        t(
            "fremove again",
            res(libc::fremovexattr(fd, n.as_ptr()) as isize),
        );
        t(
            "fget bad fd",
            res(libc::fgetxattr(
                -1,
                n.as_ptr(),
                buf.as_mut_ptr().cast(),
                256,
            )),
        );
    }
    umt::close(fd);
    // SAFETY: valid C string.
    let pfd = unsafe { libc::open(f.as_ptr(), libc::O_PATH) };
    umt::ok(pfd as i64, "open O_PATH");
    // SAFETY: valid C strings and buffers.
    unsafe {
        t(
            "fget O_PATH",
            res(libc::fgetxattr(
                pfd,
                n.as_ptr(),
                buf.as_mut_ptr().cast(),
                256,
            )),
        );
        t(
            "flist O_PATH",
            res(libc::flistxattr(pfd, buf.as_mut_ptr().cast(), 256)),
        );
    }
    umt::close(pfd);
    // A pipe: no file system with attributes behind it.
    let (r, w) = umt::pipe2(0);
    // SAFETY: valid C strings and buffers.
    unsafe {
        t(
            "pipe fset user.",
            res(libc::fsetxattr(r, n.as_ptr(), b"x".as_ptr().cast(), 1, 0) as isize),
        );
        t(
            "pipe flist",
            res(libc::flistxattr(r, buf.as_mut_ptr().cast(), 256)),
        );
    }
    umt::close(r);
    umt::close(w);

    if root {
        privileged(dir, label, &f, &fifo, tmpfs);
    }
}

/// As root: `trusted.` and `security.`, then an unprivileged child's view.
fn privileged(dir: &str, label: &str, f: &CString, fifo: &CString, tmpfs: bool) {
    let t = |what: &str, r: String| say(format!("{label}: {what}: {r}"));
    t("trusted set", set(f, "trusted.t", b"tv", 0));
    t("trusted get", get(f, "trusted.t", 64));
    t("security set", set(f, "security.s", b"sv", 0));
    t("security get", get(f, "security.s", 64));
    t("fifo trusted set", set(fifo, "trusted.p", b"pv", 0));
    t("fifo trusted get", get(fifo, "trusted.p", 64));
    t("root list", list(f, 4096));
    // security.capability: a version 2 header of 20 bytes, or EINVAL.
    let mut caps = vec![0u8; 20];
    caps[..4].copy_from_slice(&0x0200_0000u32.to_le_bytes());
    t(
        "capability bad size",
        set(f, "security.capability", &caps[..12], 0),
    );
    t("capability v2", set(f, "security.capability", &caps, 0));
    t("capability get size", get(f, "security.capability", 0));
    t("capability remove", remove(f, "security.capability"));
    let ro = mkfile(&format!("{dir}/ro"), 0o644);
    t("ro set", set(&ro, "user.r", b"readable", 0));
    let private = mkfile(&format!("{dir}/private"), 0o600);
    t("private set", set(&private, "user.p", b"secret", 0));
    let shared = mkfile(&format!("{dir}/shared"), 0o666);
    t("shared set", set(&shared, "user.w", b"w", 0));
    // The work directory must be searchable by the child.
    let dc = cstr(dir);
    // SAFETY: a plain C struct; zero is a valid bit pattern.
    let mut dst: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `dst` is a valid out buffer.
    umt::ok(
        unsafe { libc::stat(dc.as_ptr(), &mut dst) } as i64,
        "stat dir",
    );
    // SAFETY: valid C string.
    umt::ok(
        unsafe { libc::chmod(dc.as_ptr(), 0o755) } as i64,
        "chmod dir",
    );
    let pid = umt::fork();
    if pid == 0 {
        // SAFETY: plain id calls in the child.
        unsafe {
            if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                umt::fail("setuid 65534");
            }
        }
        let t = |what: &str, r: String| say(format!("{label}: user: {what}: {r}"));
        t("list hides trusted", list(f, 4096));
        t("trusted get", get(f, "trusted.t", 64));
        t("trusted set", set(f, "trusted.u", b"x", 0));
        t("trusted remove", remove(f, "trusted.t"));
        t("security get", get(f, "security.s", 64));
        t("security set", set(&shared, "security.u", b"x", 0));
        t("security remove", remove(f, "security.s"));
        t("ro get", get(&ro, "user.r", 64));
        t("ro set", set(&ro, "user.r", b"x", 0));
        t("ro remove", remove(&ro, "user.r"));
        t("private get", get(&private, "user.p", 64));
        t("private list", list(&private, 4096));
        t("shared set", set(&shared, "user.w2", b"w2", 0));
        t("shared get", get(&shared, "user.w2", 64));
        umt::exit_now(0);
    }
    let ws = umt::waitpid(pid, 0);
    umt::check(
        libc::WIFEXITED(ws) && libc::WEXITSTATUS(ws) == 0,
        format!("unprivileged child: {}", umt::describe_status(ws)),
    );
    // SAFETY: valid C string.
    umt::ok(
        unsafe { libc::chmod(dc.as_ptr(), dst.st_mode & 0o7777) } as i64,
        "chmod back",
    );
    t("trusted remove", remove(f, "trusted.t"));
    t("trusted remove again", remove(f, "trusted.t"));
    if tmpfs {
        // FS_IOC_SETFLAGS immutable: no attribute changes (may_write_xattr), reads still work.
        let fd = {
            // SAFETY: valid C string.
            let fd = unsafe { libc::open(f.as_ptr(), libc::O_RDONLY) };
            umt::ok(fd as i64, "open for flags")
        } as i32;
        let set_flags = |flags: libc::c_long| {
            // SAFETY: FS_IOC_SETFLAGS reads one long from a live variable.
            unsafe { libc::ioctl(fd, libc::FS_IOC_SETFLAGS as _, &flags) }
        };
        umt::ok(set_flags(0x10) as i64, "FS_IOC_SETFLAGS immutable");
        t("immutable set", set(f, "user.i", b"x", 0));
        t("immutable remove", remove(f, "security.s"));
        t("immutable get", get(f, "security.s", 64));
        umt::ok(set_flags(0) as i64, "FS_IOC_SETFLAGS clear");
        umt::close(fd);
    }
}

/// A fresh subdirectory `name` of `base`.
fn fresh(base: &str, name: &str) -> String {
    let d = format!("{base}/{name}");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir(&d).unwrap_or_else(|e| umt::fail(format!("mkdir {d}: {e}")));
    d
}

/// Leaves `persist` for a second boot, or (`verify`) prints what a first boot left.
fn persist(dir: &str, root: bool, verify: bool) {
    let p = format!("{dir}/persist");
    let pc = cstr(&p);
    if verify {
        say(format!("persist: list: {}", list(&pc, 4096)));
        say(format!("persist: user: {}", get(&pc, "user.persist", 64)));
        if root {
            say(format!(
                "persist: trusted: {}",
                get(&pc, "trusted.persist", 64)
            ));
        }
        return;
    }
    // Printed, not checked: the gate checks the host's copy (a host directory without user
    // xattrs would give a hostfs without attributes, and the same answers natively).
    let pc = mkfile(&p, 0o644);
    say(format!(
        "persist: set user: {}",
        set(&pc, "user.persist", b"kept", 0)
    ));
    if root {
        say(format!(
            "persist: set trusted: {}",
            set(&pc, "trusted.persist", b"kept", 0)
        ));
    }
}

fn main() {
    umt::init("xattr");
    let dir = umt::workdir();
    let args: Vec<String> = std::env::args().collect();
    let unpriv = args.iter().any(|a| a == "unpriv");
    // SAFETY: plain geteuid.
    let root = !unpriv && unsafe { libc::geteuid() } == 0;
    if args.get(2).map(String::as_str) == Some("verify") {
        persist(&dir, root, true);
        umt::done("xattr");
        return;
    }
    let shm = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| umt::fail("usage: xattr WORKDIR TMPFSDIR [unpriv]"));
    let disk = fresh(&dir, "disk");
    suite(&disk, "disk", false, root);
    // SAFETY: plain getpid.
    let tmp = fresh(&shm, &format!("um-xattr-{}", unsafe { libc::getpid() }));
    suite(&tmp, "tmpfs", true, root);
    let _ = std::fs::remove_dir_all(&tmp);
    persist(&dir, root, false);
    umt::done("xattr");
}
