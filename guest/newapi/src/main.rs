//! Guest test `newapi`: the newer calls that glibc-era tools (Debian's coreutils, dpkg,
//! python3, systemd-less daemons) use, with their error cases:
//!
//! * openat2: the `struct open_how` size and flag checks, `RESOLVE_BENEATH`, `RESOLVE_IN_ROOT`,
//!   `RESOLVE_NO_SYMLINKS`, `RESOLVE_NO_MAGICLINKS`, `RESOLVE_NO_XDEV`, `RESOLVE_CACHED`.
//! * membarrier: `QUERY`, registration before `PRIVATE_EXPEDITED`, `GLOBAL`, bad input.
//! * copy_file_range, splice (pipe to file, file to pipe, pipe to pipe), tee, vmsplice,
//!   sync_file_range: data and the errno of bad input.
//! * memfd_create and `F_ADD_SEALS`/`F_GET_SEALS`; the `/proc/self/fd` name of a memfd.
//! * pidfd_open, pidfd_send_signal, `waitid(P_PIDFD)`, `poll` on a pidfd, `CLONE_PIDFD`.
//! * inotify: events for create, modify, attrib, moves, mkdir/rmdir and delete, on a
//!   directory and a file, one-shot watches, `IN_IGNORED`, reads and their errors.
//! * creat; the argument checks of the xattr calls (whose answers for an existing
//!   attribute depend on the file system, so only what every file system says is printed).
//!
//! rseq is not tested: a kernel may register it or say ENOSYS. Run as init (under the
//! user-mode kernel) it mounts /proc first. Differential: prints the same lines natively and
//! under the user-mode kernel, then UM-NEWAPI-OK. Usage: newapi WORKDIR (empty on entry).

use std::ffi::CString;
use umt::{check, check_eq, errno, ok, say};

fn c(p: &str) -> CString {
    umt::cstr(p)
}

/// An errno name, with the ones umt does not list.
fn en(e: i32) -> String {
    match e {
        libc::ENODATA => "ENODATA".into(),
        libc::EOVERFLOW => "EOVERFLOW".into(),
        libc::EOPNOTSUPP => "EOPNOTSUPP".into(),
        _ => umt::ename(e),
    }
}

/// `ok` for a non-negative result, else the errno name.
fn res(r: i64) -> String {
    if r < 0 { en(errno()) } else { "ok".into() }
}

/// The number for a non-negative result, else the errno name.
fn val(r: i64) -> String {
    if r < 0 { en(errno()) } else { r.to_string() }
}

fn open(path: &str, flags: i32, mode: u32) -> i32 {
    let p = c(path);
    // SAFETY: valid C string.
    ok(
        unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC, mode) } as i64,
        &format!("open({path})"),
    ) as i32
}

fn write_file(path: &str, data: &[u8]) {
    std::fs::write(path, data).unwrap_or_else(|e| umt::fail(format!("write {path}: {e}")));
}

fn pread(fd: i32, len: usize, off: i64) -> Vec<u8> {
    let mut b = vec![0u8; len];
    // SAFETY: valid buffer.
    let n = ok(
        unsafe { libc::pread(fd, b.as_mut_ptr().cast(), len, off) } as i64,
        "pread",
    );
    b.truncate(n as usize);
    b
}

fn read_some(fd: i32, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    let n = ok(umt::read_raw(fd, &mut b), "read");
    b.truncate(n as usize);
    b
}

fn fstat(fd: i32) -> libc::stat {
    // SAFETY: zeroed stat is a valid out buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid buffer.
    ok(unsafe { libc::fstat(fd, &mut st) } as i64, "fstat");
    st
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

// ---- openat2 -------------------------------------------------------------------------------

const RESOLVE_NO_XDEV: u64 = 0x01;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_BENEATH: u64 = 0x08;
const RESOLVE_IN_ROOT: u64 = 0x10;
const RESOLVE_CACHED: u64 = 0x20;

fn openat2_raw(dirfd: i32, path: &str, how: &[u64], size: usize) -> i64 {
    let p = c(path);
    let mut buf = vec![0u8; size.max(how.len() * 8)];
    for (i, w) in how.iter().enumerate() {
        buf[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    // SAFETY: valid C string and a buffer of at least `size` bytes.
    let r = unsafe { libc::syscall(libc::SYS_openat2, dirfd, p.as_ptr(), buf.as_ptr(), size) };
    if r >= 0 {
        umt::close(r as i32);
    }
    r
}

fn openat2(dirfd: i32, path: &str, flags: i32, mode: u64, resolve: u64) -> String {
    res(openat2_raw(
        dirfd,
        path,
        &[(flags | libc::O_CLOEXEC) as u64, mode, resolve],
        24,
    ))
}

fn test_openat2(dir: &str) {
    let base = format!("{dir}/o2");
    std::fs::create_dir_all(format!("{base}/sub")).unwrap_or_else(|e| umt::fail(format!("{e}")));
    write_file(&format!("{base}/sub/file"), b"x");
    write_file(&format!("{dir}/outside"), b"y");
    let link = |target: &str, name: &str| {
        std::os::unix::fs::symlink(target, format!("{base}/{name}"))
            .unwrap_or_else(|e| umt::fail(format!("symlink {name}: {e}")));
    };
    link("sub/file", "rel");
    link("../outside", "up");
    link("/sub/file", "abs");
    let d = open(&base, libc::O_RDONLY | libc::O_DIRECTORY, 0);
    let rd = libc::O_RDONLY;
    say(format!(
        "openat2 plain: {}",
        openat2(d, "sub/file", rd, 0, 0)
    ));
    say(format!(
        "openat2 size 23: {}",
        res(openat2_raw(d, "sub/file", &[0, 0, 0], 23))
    ));
    say(format!(
        "openat2 size 32 zero tail: {}",
        res(openat2_raw(d, "sub/file", &[0, 0, 0, 0], 32))
    ));
    say(format!(
        "openat2 size 32 tail set: {}",
        res(openat2_raw(d, "sub/file", &[0, 0, 0, 1], 32))
    ));
    say(format!(
        "openat2 flag bit 40: {}",
        res(openat2_raw(d, "sub/file", &[1 << 40, 0, 0], 24))
    ));
    say(format!(
        "openat2 resolve 0x40: {}",
        openat2(d, "sub/file", rd, 0, 0x40)
    ));
    say(format!(
        "openat2 beneath+in_root: {}",
        openat2(d, "sub/file", rd, 0, RESOLVE_BENEATH | RESOLVE_IN_ROOT)
    ));
    say(format!(
        "openat2 mode without O_CREAT: {}",
        openat2(d, "sub/file", rd, 0o644, 0)
    ));
    say(format!(
        "openat2 O_CREAT mode 010000: {}",
        openat2(d, "new", libc::O_CREAT | libc::O_WRONLY, 0o10000, 0)
    ));
    say(format!(
        "openat2 O_PATH|O_RDWR: {}",
        openat2(d, "sub/file", libc::O_PATH | libc::O_RDWR, 0, 0)
    ));
    say(format!(
        "openat2 cached O_CREAT: {}",
        openat2(
            d,
            "new",
            libc::O_CREAT | libc::O_WRONLY,
            0o600,
            RESOLVE_CACHED
        )
    ));
    say(format!(
        "openat2 cached lookup: {}",
        openat2(d, "sub/file", rd, 0, RESOLVE_CACHED)
    ));
    let mut bad_how = [0u8; 24];
    bad_how[0] = 0;
    // SAFETY: a bad pointer for the path: the kernel must say EFAULT.
    let r = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            d,
            8usize as *const u8,
            bad_how.as_ptr(),
            24,
        )
    };
    say(format!("openat2 bad path pointer: {}", res(r)));
    // SAFETY: a bad pointer for the struct.
    let r = unsafe { libc::syscall(libc::SYS_openat2, d, c("sub/file").as_ptr(), 8usize, 24) };
    say(format!("openat2 bad how pointer: {}", res(r)));
    for (name, res_flags) in [
        ("beneath", RESOLVE_BENEATH),
        ("in_root", RESOLVE_IN_ROOT),
        ("no_symlinks", RESOLVE_NO_SYMLINKS),
    ] {
        for path in [
            "sub/file",
            "sub/../sub/file",
            "../outside",
            "/sub/file",
            "rel",
            "up",
            "abs",
        ] {
            say(format!(
                "openat2 {name} {path}: {}",
                openat2(d, path, rd, 0, res_flags)
            ));
        }
    }
    say(format!(
        "openat2 no_symlinks O_PATH|O_NOFOLLOW rel: {}",
        openat2(
            d,
            "rel",
            libc::O_PATH | libc::O_NOFOLLOW,
            0,
            RESOLVE_NO_SYMLINKS
        )
    ));
    say(format!(
        "openat2 in_root ../../sub/file: {}",
        openat2(d, "../../sub/file", rd, 0, RESOLVE_IN_ROOT)
    ));
    say(format!(
        "openat2 beneath O_CREAT sub/made: {}",
        openat2(
            d,
            "sub/made",
            libc::O_CREAT | libc::O_WRONLY,
            0o600,
            RESOLVE_BENEATH
        )
    ));
    say(format!(
        "openat2 beneath O_CREAT ../made: {}",
        openat2(
            d,
            "../made",
            libc::O_CREAT | libc::O_WRONLY,
            0o600,
            RESOLVE_BENEATH
        )
    ));
    // Magic links and mount crossings, through /proc.
    let fd = open(&format!("{base}/sub/file"), libc::O_RDONLY, 0);
    let magic = format!("/proc/self/fd/{fd}");
    say(format!(
        "openat2 plain magic link: {}",
        openat2(libc::AT_FDCWD, &magic, rd, 0, 0)
    ));
    say(format!(
        "openat2 no_magiclinks magic link: {}",
        openat2(libc::AT_FDCWD, &magic, rd, 0, RESOLVE_NO_MAGICLINKS)
    ));
    say(format!(
        "openat2 no_magiclinks O_PATH|O_NOFOLLOW magic link: {}",
        openat2(
            libc::AT_FDCWD,
            &magic,
            libc::O_PATH | libc::O_NOFOLLOW,
            0,
            RESOLVE_NO_MAGICLINKS
        )
    ));
    say(format!(
        "openat2 no_symlinks magic link: {}",
        openat2(libc::AT_FDCWD, &magic, rd, 0, RESOLVE_NO_SYMLINKS)
    ));
    umt::close(fd);
    let root = open("/", libc::O_RDONLY | libc::O_DIRECTORY, 0);
    say(format!(
        "openat2 no_xdev / -> proc/self: {}",
        openat2(root, "proc/self", rd, 0, RESOLVE_NO_XDEV)
    ));
    let proc_fd = open("/proc", libc::O_RDONLY | libc::O_DIRECTORY, 0);
    say(format!(
        "openat2 no_xdev /proc -> ..: {}",
        openat2(proc_fd, "..", rd, 0, RESOLVE_NO_XDEV)
    ));
    say(format!(
        "openat2 no_xdev /proc -> self: {}",
        openat2(proc_fd, "self", rd, 0, 0)
    ));
    say(format!(
        "openat2 beneath /proc -> ..: {}",
        openat2(proc_fd, "..", rd, 0, RESOLVE_BENEATH)
    ));
    say(format!(
        "openat2 in_root /proc -> ../self: {}",
        openat2(proc_fd, "../self", rd, 0, RESOLVE_IN_ROOT)
    ));
    umt::close(proc_fd);
    umt::close(root);
    umt::close(d);
}

// ---- membarrier ----------------------------------------------------------------------------

fn membarrier(cmd: i32, flags: u32) -> i64 {
    // SAFETY: membarrier takes no pointers.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, flags, 0) }
}

fn test_membarrier() {
    const GLOBAL: i64 = 1;
    const PRIVATE: i64 = 8;
    const REGISTER_PRIVATE: i64 = 16;
    let q = ok(membarrier(0, 0), "membarrier QUERY");
    let want = GLOBAL | PRIVATE | REGISTER_PRIVATE;
    say(format!(
        "membarrier query has GLOBAL|PRIVATE_EXPEDITED|REGISTER: {}",
        q & want == want
    ));
    say(format!(
        "membarrier query flags=1: {}",
        res(membarrier(0, 1))
    ));
    say(format!("membarrier cmd 3: {}", res(membarrier(3, 0))));
    say(format!("membarrier cmd -1: {}", res(membarrier(-1, 0))));
    say(format!(
        "membarrier PRIVATE_EXPEDITED unregistered: {}",
        res(membarrier(PRIVATE as i32, 0))
    ));
    say(format!(
        "membarrier REGISTER_PRIVATE_EXPEDITED: {}",
        val(membarrier(REGISTER_PRIVATE as i32, 0))
    ));
    say(format!(
        "membarrier PRIVATE_EXPEDITED: {}",
        val(membarrier(PRIVATE as i32, 0))
    ));
    say(format!(
        "membarrier GLOBAL: {}",
        val(membarrier(GLOBAL as i32, 0))
    ));
}

// ---- copy_file_range, splice, tee, vmsplice, sync_file_range --------------------------------

fn copy_file_range(
    fin: i32,
    off_in: Option<&mut i64>,
    fout: i32,
    off_out: Option<&mut i64>,
    len: usize,
    flags: u32,
) -> i64 {
    let pi = off_in.map_or(std::ptr::null_mut(), |p| p as *mut i64);
    let po = off_out.map_or(std::ptr::null_mut(), |p| p as *mut i64);
    // SAFETY: the offsets are null or valid i64s.
    unsafe { libc::syscall(libc::SYS_copy_file_range, fin, pi, fout, po, len, flags) }
}

fn splice(
    fin: i32,
    off_in: Option<&mut i64>,
    fout: i32,
    off_out: Option<&mut i64>,
    len: usize,
    flags: u32,
) -> i64 {
    let pi = off_in.map_or(std::ptr::null_mut(), |p| p as *mut i64);
    let po = off_out.map_or(std::ptr::null_mut(), |p| p as *mut i64);
    // SAFETY: the offsets are null or valid i64s.
    unsafe { libc::syscall(libc::SYS_splice, fin, pi, fout, po, len, flags) }
}

fn tee(fin: i32, fout: i32, len: usize, flags: u32) -> i64 {
    // SAFETY: no pointers.
    unsafe { libc::syscall(libc::SYS_tee, fin, fout, len, flags) }
}

fn test_copy_and_splice(dir: &str) {
    let data = pattern(100_000);
    let a = format!("{dir}/cfr-a");
    let b = format!("{dir}/cfr-b");
    write_file(&a, &data);
    let fa = open(&a, libc::O_RDWR, 0);
    let fb = open(&b, libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC, 0o644);
    let n = copy_file_range(fa, None, fb, None, 70_000, 0);
    say(format!("copy_file_range 70000 at positions: {}", val(n)));
    let mut oi = 70_000i64;
    let mut oo = 70_000i64;
    let n = copy_file_range(fa, Some(&mut oi), fb, Some(&mut oo), 1 << 20, 0);
    say(format!(
        "copy_file_range rest at offsets: {} (offsets now {oi} {oo})",
        val(n)
    ));
    // SAFETY: plain lseek.
    let pos = unsafe { libc::lseek(fa, 0, libc::SEEK_CUR) };
    say(format!("copy_file_range file position of input: {pos}"));
    check(
        std::fs::read(&b).ok() == Some(data.clone()),
        "copy_file_range: copy differs",
    );
    say("copy_file_range copy matches");
    let mut past = 200_000i64;
    say(format!(
        "copy_file_range past EOF: {}",
        val(copy_file_range(fa, Some(&mut past), fb, None, 10, 0))
    ));
    say(format!(
        "copy_file_range flags=1: {}",
        res(copy_file_range(fa, None, fb, None, 10, 1))
    ));
    let mut o1 = 0i64;
    let mut o2 = 10i64;
    say(format!(
        "copy_file_range overlapping same file: {}",
        res(copy_file_range(
            fa,
            Some(&mut o1),
            fa,
            Some(&mut o2),
            100,
            0
        ))
    ));
    let dfd = open(dir, libc::O_RDONLY | libc::O_DIRECTORY, 0);
    say(format!(
        "copy_file_range from a directory: {}",
        res(copy_file_range(dfd, None, fb, None, 10, 0))
    ));
    umt::close(dfd);
    let ro = open(&b, libc::O_RDONLY, 0);
    say(format!(
        "copy_file_range to a read-only fd: {}",
        res(copy_file_range(fa, None, ro, None, 10, 0))
    ));
    let app = open(&b, libc::O_WRONLY | libc::O_APPEND, 0);
    say(format!(
        "copy_file_range to O_APPEND: {}",
        res(copy_file_range(fa, None, app, None, 10, 0))
    ));
    let (pr, pw) = umt::pipe2(libc::O_CLOEXEC);
    say(format!(
        "copy_file_range from a pipe: {}",
        res(copy_file_range(pr, None, fb, None, 10, 0))
    ));
    say(format!(
        "copy_file_range bad fd: {}",
        res(copy_file_range(-1, None, fb, None, 10, 0))
    ));
    let mut neg = -1i64;
    say(format!(
        "copy_file_range negative offset: {}",
        res(copy_file_range(fa, Some(&mut neg), fb, None, 10, 0))
    ));

    // splice: file -> pipe -> file.
    let mut off = 1000i64;
    let n = splice(fa, Some(&mut off), pw, None, 5000, 0);
    say(format!("splice file->pipe: {} (offset now {off})", val(n)));
    let c_path = format!("{dir}/spl-c");
    let fc = open(&c_path, libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC, 0o644);
    let n = splice(pr, None, fc, None, 3000, 0);
    say(format!("splice pipe->file: {}", val(n)));
    let mut o = 5000i64;
    let n = splice(pr, None, fc, Some(&mut o), 10_000, 0);
    say(format!(
        "splice pipe->file at offset: {} (offset now {o})",
        val(n)
    ));
    let got = pread(fc, 3000, 0);
    check(got == data[1000..4000], "splice: file content differs");
    let got = pread(fc, 2000, 5000);
    check(got == data[4000..6000], "splice: content at offset differs");
    say("splice data matches");
    say(format!(
        "splice empty pipe nonblock: {}",
        res(splice(pr, None, fc, None, 10, 2))
    ));
    say(format!(
        "splice len 0: {}",
        val(splice(pr, None, fc, None, 0, 0))
    ));
    say(format!(
        "splice bad flags: {}",
        res(splice(pr, None, fc, None, 10, 0x10))
    ));
    say(format!(
        "splice file->file: {}",
        res(splice(fa, None, fc, None, 10, 0))
    ));
    let mut z = 0i64;
    say(format!(
        "splice offset on a pipe: {}",
        res(splice(pr, Some(&mut z), fc, None, 10, 0))
    ));
    say(format!(
        "splice to O_APPEND: {}",
        res(splice(pr, None, app, None, 10, 0))
    ));
    say(format!(
        "splice bad fd: {}",
        res(splice(-1, None, fc, None, 10, 0))
    ));
    say(format!(
        "splice from write end: {}",
        res(splice(pw, None, fc, None, 10, 0))
    ));
    // pipe -> pipe and tee.
    let (qr, qw) = umt::pipe2(libc::O_CLOEXEC);
    umt::write_all(pw, b"hello, pipes", "write");
    say(format!("tee: {}", val(tee(pr, qw, 5, 0))));
    say(format!("tee same pipe: {}", res(tee(pr, pw, 5, 0))));
    say(format!("tee file: {}", res(tee(fa, qw, 5, 0))));
    say(format!("tee bad flags: {}", res(tee(pr, qw, 5, 0x10))));
    say(format!(
        "splice pipe->pipe: {}",
        val(splice(pr, None, qw, None, 100, 0))
    ));
    say(format!(
        "pipe 2 holds: {:?}",
        String::from_utf8_lossy(&read_some(qr, 100))
    ));
    say(format!(
        "splice same pipe: {}",
        res(splice(pr, None, pw, None, 5, 0))
    ));
    say(format!("tee empty nonblock: {}", res(tee(pr, qw, 5, 2))));
    // vmsplice both ways.
    let parts: [&[u8]; 2] = [b"vm", b"splice"];
    let iov: Vec<libc::iovec> = parts
        .iter()
        .map(|p| libc::iovec {
            iov_base: p.as_ptr() as *mut libc::c_void,
            iov_len: p.len(),
        })
        .collect();
    // SAFETY: the iovecs point at live slices.
    let n = unsafe { libc::syscall(libc::SYS_vmsplice, pw, iov.as_ptr(), 2, 0) };
    say(format!("vmsplice to pipe: {}", val(n)));
    let mut out = [0u8; 5];
    let oiov = [libc::iovec {
        iov_base: out.as_mut_ptr().cast(),
        iov_len: 5,
    }];
    // SAFETY: the iovec points at a live buffer.
    let n = unsafe { libc::syscall(libc::SYS_vmsplice, pr, oiov.as_ptr(), 1, 0) };
    say(format!(
        "vmsplice from pipe: {} {:?}",
        val(n),
        String::from_utf8_lossy(&out)
    ));
    say(format!(
        "pipe rest: {:?}",
        String::from_utf8_lossy(&read_some(pr, 100))
    ));
    // SAFETY: the iovec points at a live buffer.
    let n = unsafe { libc::syscall(libc::SYS_vmsplice, fa, iov.as_ptr(), 2, 0) };
    say(format!("vmsplice to a file: {}", res(n)));
    umt::close(pw);
    say(format!(
        "splice at EOF: {}",
        val(splice(pr, None, fc, None, 10, 0))
    ));
    // sync_file_range.
    let sfr = |fd: i32, off: i64, n: i64, flags: u32| {
        // SAFETY: no pointers.
        res(unsafe { libc::syscall(libc::SYS_sync_file_range, fd, off, n, flags) })
    };
    say(format!("sync_file_range write+wait: {}", sfr(fc, 0, 0, 7)));
    say(format!("sync_file_range bad flags: {}", sfr(fc, 0, 0, 8)));
    say(format!(
        "sync_file_range negative offset: {}",
        sfr(fc, -1, 0, 2)
    ));
    say(format!(
        "sync_file_range end overflows: {}",
        sfr(fc, i64::MAX, 1, 2)
    ));
    say(format!("sync_file_range pipe: {}", sfr(pr, 0, 0, 2)));
    say(format!("sync_file_range bad fd: {}", sfr(-1, 0, 0, 2)));
    for fd in [fa, fb, fc, ro, app, pr, qr, qw] {
        umt::close(fd);
    }
}

// ---- memfd ---------------------------------------------------------------------------------

fn memfd_create(name: &str, flags: u32) -> i64 {
    let n = c(name);
    // SAFETY: valid C string.
    unsafe { libc::syscall(libc::SYS_memfd_create, n.as_ptr(), flags) }
}

fn fcntl(fd: i32, cmd: i32, arg: i64) -> i64 {
    // SAFETY: integer commands only.
    unsafe { libc::fcntl(fd, cmd, arg) as i64 }
}

fn test_memfd(dir: &str) {
    const F_ADD_SEALS: i32 = 1033;
    const F_GET_SEALS: i32 = 1034;
    const SEAL: i64 = 1;
    const SHRINK: i64 = 2;
    const GROW: i64 = 4;
    const WRITE: i64 = 8;
    let fd = ok(memfd_create("umtest", 1), "memfd_create") as i32;
    umt::write_all(fd, b"memfd data", "write memfd");
    say(format!(
        "memfd read back: {:?}",
        String::from_utf8_lossy(&pread(fd, 100, 0))
    ));
    let st = fstat(fd);
    say(format!(
        "memfd fstat: regular {} mode {:o} nlink {} size {}",
        st.st_mode & libc::S_IFMT == libc::S_IFREG,
        st.st_mode & 0o7777,
        st.st_nlink,
        st.st_size
    ));
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|e| format!("error {e}"));
    say(format!("memfd /proc/self/fd link: {link}"));
    // SAFETY: F_GETFD only.
    say(format!(
        "memfd cloexec: {}",
        unsafe { libc::fcntl(fd, libc::F_GETFD) } & 1
    ));
    let again = open(&format!("/proc/self/fd/{fd}"), libc::O_RDONLY, 0);
    say(format!(
        "memfd reopened via /proc: {:?}",
        String::from_utf8_lossy(&read_some(again, 100))
    ));
    umt::close(again);
    say(format!(
        "memfd seals without ALLOW_SEALING: {}",
        val(fcntl(fd, F_GET_SEALS, 0))
    ));
    say(format!(
        "memfd add seal without ALLOW_SEALING: {}",
        res(fcntl(fd, F_ADD_SEALS, GROW))
    ));
    umt::close(fd);
    let fd = ok(memfd_create("sealed", 3), "memfd_create sealing") as i32;
    umt::write_all(fd, b"0123456789", "write");
    say(format!(
        "sealing memfd seals: {}",
        val(fcntl(fd, F_GET_SEALS, 0))
    ));
    say(format!(
        "add unknown seal: {}",
        res(fcntl(fd, F_ADD_SEALS, 0x100))
    ));
    say(format!(
        "add GROW|SHRINK: {}",
        res(fcntl(fd, F_ADD_SEALS, GROW | SHRINK))
    ));
    // SAFETY: valid buffers / plain integers.
    unsafe {
        say(format!(
            "write past end under GROW: {}",
            res(libc::pwrite(fd, b"ab".as_ptr().cast(), 2, 9) as i64)
        ));
        say(format!(
            "write inside under GROW: {}",
            res(libc::pwrite(fd, b"ab".as_ptr().cast(), 2, 0) as i64)
        ));
        say(format!(
            "ftruncate bigger: {}",
            res(libc::ftruncate(fd, 20) as i64)
        ));
        say(format!(
            "ftruncate smaller: {}",
            res(libc::ftruncate(fd, 5) as i64)
        ));
    }
    say(format!("add WRITE: {}", res(fcntl(fd, F_ADD_SEALS, WRITE))));
    // SAFETY: valid buffer.
    say(format!(
        "write under WRITE: {}",
        res(unsafe { libc::pwrite(fd, b"x".as_ptr().cast(), 1, 0) } as i64)
    ));
    say(format!(
        "read under WRITE: {:?}",
        String::from_utf8_lossy(&pread(fd, 100, 0))
    ));
    say(format!("add SEAL: {}", res(fcntl(fd, F_ADD_SEALS, SEAL))));
    say(format!("seals now: {}", val(fcntl(fd, F_GET_SEALS, 0))));
    say(format!(
        "add after SEAL: {}",
        res(fcntl(fd, F_ADD_SEALS, 0))
    ));
    let ro = open(&format!("/proc/self/fd/{fd}"), libc::O_RDONLY, 0);
    say(format!(
        "add seal on read-only fd: {}",
        res(fcntl(ro, F_ADD_SEALS, 0))
    ));
    umt::close(ro);
    umt::close(fd);
    let plain = open(&format!("{dir}/cfr-a"), libc::O_RDWR, 0);
    say(format!(
        "F_GET_SEALS on a file: {}",
        res(fcntl(plain, F_GET_SEALS, 0))
    ));
    say(format!(
        "F_ADD_SEALS on a file: {}",
        res(fcntl(plain, F_ADD_SEALS, GROW))
    ));
    umt::close(plain);
    say(format!(
        "memfd_create bad flags: {}",
        res(memfd_create("x", 0x100))
    ));
    say(format!(
        "memfd_create name of 249: {}",
        res(memfd_create(&"n".repeat(249), 1))
    ));
    say(format!(
        "memfd_create name of 250: {}",
        res(memfd_create(&"n".repeat(250), 1))
    ));
    // SAFETY: a bad pointer: the kernel must say EFAULT.
    let r = unsafe { libc::syscall(libc::SYS_memfd_create, 8usize, 0) };
    say(format!("memfd_create bad name pointer: {}", res(r)));
}

// ---- pidfd ---------------------------------------------------------------------------------

fn pidfd_open(pid: i32, flags: u32) -> i64 {
    // SAFETY: no pointers.
    unsafe { libc::syscall(libc::SYS_pidfd_open, pid, flags) }
}

fn pidfd_send_signal(fd: i32, sig: i32, flags: u32) -> i64 {
    // SAFETY: a null siginfo.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd,
            sig,
            std::ptr::null::<u8>(),
            flags,
        )
    }
}

fn poll_in(fd: i32, timeout_ms: i32) -> String {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    format!("{} revents {:#x}", val(n as i64), p.revents)
}

/// waitid(P_PIDFD, fd): (si_pid == pid, si_code, si_status) or the errno.
fn waitid_pidfd(fd: i32, pid: i32, opts: i32) -> String {
    // SAFETY: zeroed siginfo is a valid out buffer.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid out buffer; P_PIDFD is 3.
    let r = unsafe { libc::waitid(3, fd as libc::id_t, &mut info, opts) };
    if r < 0 {
        return en(errno());
    }
    // SAFETY: filled in by waitid.
    let (spid, status) = unsafe { (info.si_pid(), info.si_status()) };
    format!(
        "pid matches {} code {} status {}",
        spid == pid,
        info.si_code,
        status
    )
}

fn test_pidfd(dir: &str) {
    let (r, w) = umt::pipe2(libc::O_CLOEXEC);
    let child = umt::fork();
    if child == 0 {
        umt::close(w);
        let mut b = [0u8; 1];
        umt::read_raw(r, &mut b);
        umt::exit_now(3);
    }
    umt::close(r);
    let pfd = ok(pidfd_open(child, 0), "pidfd_open") as i32;
    // SAFETY: F_GETFD only.
    say(format!(
        "pidfd cloexec: {}",
        unsafe { libc::fcntl(pfd, libc::F_GETFD) } & 1
    ));
    say(format!("pidfd poll while running: {}", poll_in(pfd, 0)));
    say(format!(
        "pidfd read: {}",
        res(umt::read_raw(pfd, &mut [0u8; 8]))
    ));
    say(format!(
        "waitid P_PIDFD WNOHANG running: {}",
        waitid_pidfd(pfd, 0, libc::WEXITED | libc::WNOHANG)
    ));
    say(format!(
        "pidfd_send_signal 0: {}",
        res(pidfd_send_signal(pfd, 0, 0))
    ));
    say(format!(
        "pidfd_send_signal flags=8: {}",
        res(pidfd_send_signal(pfd, libc::SIGTERM, 8))
    ));
    say(format!(
        "pidfd_send_signal sig 65: {}",
        res(pidfd_send_signal(pfd, 65, 0))
    ));
    say(format!(
        "pidfd_send_signal SIGTERM: {}",
        res(pidfd_send_signal(pfd, libc::SIGTERM, 0))
    ));
    say(format!("pidfd poll after the kill: {}", poll_in(pfd, 5000)));
    say(format!(
        "waitid P_PIDFD: {}",
        waitid_pidfd(pfd, child, libc::WEXITED)
    ));
    say(format!(
        "pidfd_send_signal after reaping: {}",
        res(pidfd_send_signal(pfd, 0, 0))
    ));
    say(format!(
        "waitid P_PIDFD after reaping: {}",
        waitid_pidfd(pfd, child, libc::WEXITED)
    ));
    umt::close(pfd);
    umt::close(w);
    say(format!("pidfd_open 0: {}", res(pidfd_open(0, 0))));
    say(format!("pidfd_open -5: {}", res(pidfd_open(-5, 0))));
    say(format!("pidfd_open bad flags: {}", res(pidfd_open(1, 1))));
    say(format!(
        "pidfd_open no such pid: {}",
        res(pidfd_open(4_000_000, 0))
    ));
    let f = open(&format!("{dir}/cfr-a"), libc::O_RDONLY, 0);
    say(format!(
        "pidfd_send_signal on a file: {}",
        res(pidfd_send_signal(f, 0, 0))
    ));
    say(format!(
        "waitid P_PIDFD on a file: {}",
        waitid_pidfd(f, 0, libc::WEXITED)
    ));
    umt::close(f);
    say(format!(
        "waitid P_PIDFD bad fd: {}",
        waitid_pidfd(-1, 0, libc::WEXITED)
    ));
    // A non-blocking pidfd makes waitid WNOHANG; self is not a child.
    // SAFETY: plain getpid.
    let me = unsafe { libc::getpid() };
    let nb = ok(
        pidfd_open(me, libc::O_NONBLOCK as u32),
        "pidfd_open self nonblock",
    ) as i32;
    say(format!(
        "waitid on own pidfd: {}",
        waitid_pidfd(nb, me, libc::WEXITED)
    ));
    umt::close(nb);
    // CLONE_PIDFD through the raw clone call (the pidfd lands in the parent_tid argument).
    let mut pidfd: i32 = -1;
    // SAFETY: a fork-like clone (no CLONE_VM, no new stack); the child only exits.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as u64 | 0x1000,
            0usize,
            &mut pidfd as *mut i32,
            0usize,
            0usize,
        )
    };
    if pid == 0 {
        umt::exit_now(7);
    }
    ok(pid, "clone(CLONE_PIDFD)");
    say(format!("CLONE_PIDFD gave a descriptor: {}", pidfd >= 0));
    say(format!("CLONE_PIDFD poll: {}", poll_in(pidfd, 5000)));
    say(format!(
        "CLONE_PIDFD waitid: {}",
        waitid_pidfd(pidfd, pid as i32, libc::WEXITED)
    ));
    umt::close(pidfd);
    let mut same: i32 = 0;
    // SAFETY: must fail before creating anything.
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as u64 | 0x1000 | libc::CLONE_PARENT_SETTID as u64,
            0usize,
            &mut same as *mut i32,
            0usize,
            0usize,
        )
    };
    if r == 0 {
        umt::exit_now(0);
    }
    say(format!(
        "CLONE_PIDFD|CLONE_PARENT_SETTID same word: {}",
        res(r)
    ));
}

// ---- inotify -------------------------------------------------------------------------------

const IN_MODIFY: u32 = 0x2;
const IN_ATTRIB: u32 = 0x4;
const IN_MOVED_FROM: u32 = 0x40;
const IN_MOVED_TO: u32 = 0x80;
const IN_CREATE: u32 = 0x100;
const IN_DELETE: u32 = 0x200;
const IN_DELETE_SELF: u32 = 0x400;
const IN_MOVE_SELF: u32 = 0x800;
const IN_ONLYDIR: u32 = 0x0100_0000;
const IN_MASK_CREATE: u32 = 0x1000_0000;
const IN_MASK_ADD: u32 = 0x2000_0000;
const IN_ONESHOT: u32 = 0x8000_0000;

fn add_watch(fd: i32, path: &str, mask: u32) -> i64 {
    let p = c(path);
    // SAFETY: valid C string.
    unsafe { libc::syscall(libc::SYS_inotify_add_watch, fd, p.as_ptr(), mask) }
}

fn mask_name(m: u32) -> String {
    let names = [
        (0x1, "ACCESS"),
        (0x2, "MODIFY"),
        (0x4, "ATTRIB"),
        (0x8, "CLOSE_WRITE"),
        (0x10, "CLOSE_NOWRITE"),
        (0x20, "OPEN"),
        (0x40, "MOVED_FROM"),
        (0x80, "MOVED_TO"),
        (0x100, "CREATE"),
        (0x200, "DELETE"),
        (0x400, "DELETE_SELF"),
        (0x800, "MOVE_SELF"),
        (0x2000, "UNMOUNT"),
        (0x4000, "Q_OVERFLOW"),
        (0x8000, "IGNORED"),
        (0x4000_0000, "ISDIR"),
    ];
    let v: Vec<&str> = names
        .iter()
        .filter(|(b, _)| m & b != 0)
        .map(|(_, n)| *n)
        .collect();
    v.join("|")
}

/// Reads every queued event: lines `wd=<label> MASK name` (cookies: `cookie=pair` when a
/// MOVED_FROM/MOVED_TO pair shares a non-zero cookie).
fn drain_events(fd: i32, labels: &[(i64, &str)]) {
    let mut buf = vec![0u8; 4096];
    let n = umt::read_raw(fd, &mut buf);
    if n < 0 {
        say(format!("  (no events: {})", en(errno())));
        return;
    }
    let mut off = 0usize;
    let mut last_cookie = 0u32;
    while off + 16 <= n as usize {
        let w =
            |i: usize| u32::from_le_bytes(buf[off + i..off + i + 4].try_into().unwrap_or([0; 4]));
        let (wd, mask, cookie, len) = (w(0) as i32, w(4), w(8), w(12) as usize);
        let name_bytes = &buf[off + 16..off + 16 + len];
        let name = String::from_utf8_lossy(name_bytes.split(|&b| b == 0).next().unwrap_or(&[]));
        let label = labels
            .iter()
            .find(|(l, _)| *l == wd as i64)
            .map_or_else(|| wd.to_string(), |(_, s)| s.to_string());
        let ck = if cookie == 0 {
            String::new()
        } else if mask & IN_MOVED_TO != 0 && cookie == last_cookie {
            " cookie=pair".into()
        } else {
            " cookie".into()
        };
        last_cookie = cookie;
        say(format!(
            "  wd={label} {} {name:?} len={len}{ck}",
            mask_name(mask)
        ));
        off += 16 + len;
    }
}

fn test_inotify(dir: &str) {
    // SAFETY: no pointers.
    let init1 = |flags: i32| unsafe { libc::syscall(libc::SYS_inotify_init1, flags) };
    say(format!("inotify_init1 bad flags: {}", res(init1(1))));
    let fd = ok(init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC), "inotify_init1") as i32;
    let wdir = format!("{dir}/watched");
    std::fs::create_dir(&wdir).unwrap_or_else(|e| umt::fail(format!("mkdir: {e}")));
    let events = IN_MODIFY
        | IN_ATTRIB
        | IN_MOVED_FROM
        | IN_MOVED_TO
        | IN_CREATE
        | IN_DELETE
        | IN_DELETE_SELF
        | IN_MOVE_SELF;
    say(format!(
        "add_watch mask 0: {}",
        res(add_watch(fd, &wdir, 0))
    ));
    say(format!(
        "add_watch bad fd: {}",
        res(add_watch(-1, &wdir, events))
    ));
    let plain = open(&format!("{dir}/cfr-a"), libc::O_RDONLY, 0);
    say(format!(
        "add_watch on a file fd: {}",
        res(add_watch(plain, &wdir, events))
    ));
    umt::close(plain);
    say(format!(
        "add_watch missing path: {}",
        res(add_watch(fd, &format!("{dir}/nope"), events))
    ));
    say(format!(
        "add_watch ONLYDIR on a file: {}",
        res(add_watch(fd, &format!("{dir}/cfr-a"), events | IN_ONLYDIR))
    ));
    say(format!(
        "add_watch MASK_ADD|MASK_CREATE: {}",
        res(add_watch(fd, &wdir, events | IN_MASK_ADD | IN_MASK_CREATE))
    ));
    let wd = ok(add_watch(fd, &wdir, events), "add_watch dir");
    say(format!(
        "add_watch same dir again, same wd: {}",
        add_watch(fd, &wdir, events) == wd
    ));
    say(format!(
        "add_watch MASK_CREATE existing: {}",
        res(add_watch(fd, &wdir, events | IN_MASK_CREATE))
    ));
    say(format!(
        "read with nothing queued: {}",
        res(umt::read_raw(fd, &mut [0u8; 64]))
    ));
    let f = format!("{wdir}/f");
    let ffd = open(&f, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o644);
    umt::write_all(ffd, b"one", "write");
    umt::write_all(ffd, b"two", "write");
    umt::close(ffd);
    let mut n: i32 = 0;
    // SAFETY: FIONREAD writes one int.
    ok(
        unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) } as i64,
        "FIONREAD",
    );
    say(format!("FIONREAD: {n}"));
    say(format!(
        "read into 8 bytes: {}",
        res(umt::read_raw(fd, &mut [0u8; 8]))
    ));
    say(format!("poll: {}", poll_in(fd, 0)));
    let labels = [(wd, "dir")];
    say("events after create + 2 writes:");
    drain_events(fd, &labels);
    let fw = ok(
        add_watch(
            fd,
            &f,
            IN_ATTRIB | IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF,
        ),
        "add_watch file",
    );
    let labels = [(wd, "dir"), (fw, "file")];
    let cf = c(&f);
    // SAFETY: valid C string.
    ok(unsafe { libc::chmod(cf.as_ptr(), 0o600) } as i64, "chmod");
    say("events after chmod:");
    drain_events(fd, &labels);
    let g = format!("{wdir}/g");
    std::fs::rename(&f, &g).unwrap_or_else(|e| umt::fail(format!("rename: {e}")));
    say("events after rename f -> g:");
    drain_events(fd, &labels);
    // SAFETY: valid C string.
    ok(
        unsafe { libc::truncate(c(&g).as_ptr(), 1) } as i64,
        "truncate",
    );
    say("events after truncate:");
    drain_events(fd, &labels);
    let sub = format!("{wdir}/sub");
    std::fs::create_dir(&sub).unwrap_or_else(|e| umt::fail(format!("mkdir: {e}")));
    std::fs::remove_dir(&sub).unwrap_or_else(|e| umt::fail(format!("rmdir: {e}")));
    say("events after mkdir + rmdir:");
    drain_events(fd, &labels);
    std::fs::remove_file(&g).unwrap_or_else(|e| umt::fail(format!("unlink: {e}")));
    say("events after unlink g:");
    drain_events(fd, &labels);
    say(format!(
        "rm_watch of the gone file: {}",
        res(unsafe_rm(fd, fw as i32))
    ));
    let one = format!("{wdir}/one");
    write_file(&one, b"");
    let ow = ok(
        add_watch(fd, &one, IN_ATTRIB | IN_ONESHOT),
        "add_watch oneshot",
    );
    let labels = [(wd, "dir"), (ow, "oneshot")];
    drain_events(fd, &labels);
    // SAFETY: valid C string.
    ok(
        unsafe { libc::chmod(c(&one).as_ptr(), 0o600) } as i64,
        "chmod",
    );
    // SAFETY: valid C string.
    ok(
        unsafe { libc::chmod(c(&one).as_ptr(), 0o644) } as i64,
        "chmod",
    );
    say("events after two chmods of a one-shot watch:");
    drain_events(fd, &labels);
    say(format!("rm_watch dir: {}", res(unsafe_rm(fd, wd as i32))));
    say(format!(
        "rm_watch dir again: {}",
        res(unsafe_rm(fd, wd as i32))
    ));
    say("events after rm_watch:");
    drain_events(fd, &labels);
    say(format!("rm_watch on a pipe: {}", {
        let (pr, pw) = umt::pipe2(libc::O_CLOEXEC);
        let r = res(unsafe_rm(pr, 1));
        umt::close(pr);
        umt::close(pw);
        r
    }));
    umt::close(fd);
}

fn unsafe_rm(fd: i32, wd: i32) -> i64 {
    // SAFETY: no pointers.
    unsafe { libc::syscall(libc::SYS_inotify_rm_watch, fd, wd) }
}

// ---- creat and xattr argument checks -------------------------------------------------------

fn test_creat_xattr(dir: &str) {
    let p = format!("{dir}/created");
    write_file(&p, b"old content");
    let cp = c(&p);
    // The creat syscall where the arch has one (musl's creat() is an open()).
    #[cfg(target_arch = "x86_64")]
    // SAFETY: valid C string.
    let r = unsafe { libc::syscall(libc::SYS_creat, cp.as_ptr(), 0o600) };
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: valid C string.
    let r = unsafe { libc::creat(cp.as_ptr(), 0o600) } as i64;
    let fd = ok(r, "creat") as i32;
    let st = fstat(fd);
    // SAFETY: F_GETFL only.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) } & libc::O_ACCMODE;
    say(format!(
        "creat truncated: size {} write-only {}",
        st.st_size,
        fl == libc::O_WRONLY
    ));
    umt::close(fd);
    let x = |r: i64| -> String {
        match (r, errno()) {
            (r, _) if r >= 0 => "ok".into(),
            // What a file system without xattrs (EOPNOTSUPP) or without this one (ENODATA)
            // says; which of them depends on the file system.
            (_, libc::EOPNOTSUPP) | (_, libc::ENODATA) => "absent".into(),
            (_, e) => en(e),
        }
    };
    let name = c("user.umtest");
    let path = c(&p);
    let missing = c(&format!("{dir}/missing"));
    let mut buf = [0u8; 64];
    let long = c(&format!("user.{}", "n".repeat(251)));
    let empty = c("");
    // SAFETY: valid C strings and buffers; bad pointers are deliberate where noted.
    unsafe {
        say(format!(
            "getxattr missing path: {}",
            x(libc::getxattr(missing.as_ptr(), name.as_ptr(), buf.as_mut_ptr().cast(), 64) as i64)
        ));
        say(format!(
            "fgetxattr bad fd: {}",
            x(libc::fgetxattr(-1, name.as_ptr(), buf.as_mut_ptr().cast(), 64) as i64)
        ));
        say(format!(
            "setxattr bad flags: {}",
            x(libc::setxattr(path.as_ptr(), name.as_ptr(), b"v".as_ptr().cast(), 1, 4) as i64)
        ));
        say(format!(
            "setxattr empty name: {}",
            x(libc::setxattr(path.as_ptr(), empty.as_ptr(), b"v".as_ptr().cast(), 1, 0) as i64)
        ));
        say(format!(
            "setxattr name too long: {}",
            x(libc::setxattr(path.as_ptr(), long.as_ptr(), b"v".as_ptr().cast(), 1, 0) as i64)
        ));
        say(format!(
            "setxattr value too big: {}",
            x(libc::setxattr(path.as_ptr(), name.as_ptr(), buf.as_ptr().cast(), 65537, 0) as i64)
        ));
        say(format!(
            "getxattr bad name pointer: {}",
            x(libc::syscall(
                libc::SYS_getxattr,
                path.as_ptr(),
                8usize,
                buf.as_mut_ptr(),
                64
            ))
        ));
        say(format!(
            "removexattr missing path: {}",
            x(libc::removexattr(missing.as_ptr(), name.as_ptr()) as i64)
        ));
        say(format!(
            "listxattr missing path: {}",
            x(libc::listxattr(missing.as_ptr(), buf.as_mut_ptr().cast(), 64) as i64)
        ));
        say(format!(
            "listxattr: {}",
            x(libc::listxattr(path.as_ptr(), buf.as_mut_ptr().cast(), 64) as i64)
        ));
        say(format!(
            "getxattr user.umtest: {}",
            x(libc::getxattr(path.as_ptr(), name.as_ptr(), buf.as_mut_ptr().cast(), 64) as i64)
        ));
        say(format!(
            "lgetxattr user.umtest: {}",
            x(libc::lgetxattr(path.as_ptr(), name.as_ptr(), buf.as_mut_ptr().cast(), 64) as i64)
        ));
        let fd = open(&p, libc::O_RDONLY, 0);
        say(format!(
            "fgetxattr user.umtest: {}",
            x(libc::fgetxattr(fd, name.as_ptr(), buf.as_mut_ptr().cast(), 64) as i64)
        ));
        say(format!(
            "fremovexattr user.umtest: {}",
            x(libc::fremovexattr(fd, name.as_ptr()) as i64)
        ));
        umt::close(fd);
        let sl = format!("{dir}/xlink");
        std::os::unix::fs::symlink("created", &sl)
            .unwrap_or_else(|e| umt::fail(format!("symlink: {e}")));
        let slc = c(&sl);
        say(format!(
            "lsetxattr user.* on a symlink: {}",
            x(libc::lsetxattr(slc.as_ptr(), name.as_ptr(), b"v".as_ptr().cast(), 1, 0) as i64)
        ));
        say(format!(
            "lgetxattr user.* on a symlink: {}",
            x(libc::lgetxattr(slc.as_ptr(), name.as_ptr(), buf.as_mut_ptr().cast(), 64) as i64)
        ));
    }
}

fn main() {
    umt::init("newapi");
    let dir = umt::workdir();
    // SAFETY: plain getpid; as init under the user-mode kernel, /proc is not mounted yet.
    if unsafe { libc::getpid() } == 1 && std::fs::metadata("/proc/self").is_err() {
        let (src, target, fstype) = (c("proc"), c("/proc"), c("proc"));
        // SAFETY: valid C strings.
        ok(
            unsafe {
                libc::mount(
                    src.as_ptr(),
                    target.as_ptr(),
                    fstype.as_ptr(),
                    0,
                    std::ptr::null(),
                )
            } as i64,
            "mount /proc",
        );
    }
    test_openat2(&dir);
    test_membarrier();
    test_copy_and_splice(&dir);
    test_memfd(&dir);
    test_pidfd(&dir);
    test_inotify(&dir);
    test_creat_xattr(&dir);
    check_eq(1, 1, "done");
    umt::done("newapi");
}
