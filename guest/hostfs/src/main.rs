//! Guest test `hostfs`: writes in WORKDIR that must land on the host. The gate
//! (tests/tests/guest_programs.rs, `hostfs_*`) checks the host side after the run:
//!
//! * `out.txt`: exactly `EXPECTED_OUT` (written in pieces: write, pwrite over a range, ftruncate
//!   to cut the tail, fsync, an O_APPEND write).
//! * `renamed.txt`: the content `moved\n` (created as `tmp.txt`, fsynced, renamed; `tmp.txt` gone).
//! * `sub/dir/file`: `nested\n`; `link` is a symlink to `out.txt`; `hard` is a hard link of
//!   `renamed.txt` (link count 2); `gone.txt` was created and unlinked; `mode600` has mode 0600.
//!
//! The program reads everything back itself too. Differential: prints the same lines natively and
//! under the user-mode kernel, then UM-HOSTFS-OK. Usage: hostfs WORKDIR (empty on entry).

use umt::{check_eq, expect_err, ok, say};

/// What `out.txt` must contain at the end (the gate checks the same on the host).
const EXPECTED_OUT: &str = "line one\nLINE TWO\nline three\nappended\n";

fn c(p: &str) -> std::ffi::CString {
    umt::cstr(p)
}

fn open(path: &str, flags: i32, mode: u32) -> i32 {
    let p = c(path);
    // SAFETY: valid C string.
    ok(
        unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC, mode) } as i64,
        &format!("open({path})"),
    ) as i32
}

fn read_file(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| umt::fail(format!("reading {path}: {e}")))
}

fn main() {
    umt::init("hostfs");
    let dir = umt::workdir();
    let out = format!("{dir}/out.txt");

    let fd = open(&out, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o644);
    umt::write_all(
        fd,
        b"line one\nline two\nline three\nGARBAGE GARBAGE\n",
        "write",
    );
    // SAFETY: valid buffer.
    let n = unsafe { libc::pwrite(fd, b"LINE TWO".as_ptr().cast(), 8, 9) };
    check_eq(ok(n as i64, "pwrite"), 8, "pwrite length");
    // SAFETY: plain integers.
    ok(unsafe { libc::ftruncate(fd, 29) } as i64, "ftruncate");
    // SAFETY: plain integer.
    ok(unsafe { libc::fsync(fd) } as i64, "fsync");
    umt::close(fd);
    let fd = open(&out, libc::O_WRONLY | libc::O_APPEND, 0);
    // SAFETY: plain integers: O_APPEND writes go to the end whatever the offset.
    unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
    umt::write_all(fd, b"appended\n", "O_APPEND write");
    umt::close(fd);
    check_eq(
        String::from_utf8_lossy(&read_file(&out)).into_owned(),
        EXPECTED_OUT.to_string(),
        "out.txt read back",
    );
    say("out.txt: write, pwrite, ftruncate, fsync, O_APPEND");

    let tmp = format!("{dir}/tmp.txt");
    let ren = format!("{dir}/renamed.txt");
    let fd = open(&tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644);
    umt::write_all(fd, b"moved\n", "write");
    // SAFETY: plain integer.
    ok(unsafe { libc::fdatasync(fd) } as i64, "fdatasync");
    umt::close(fd);
    // SAFETY: valid C strings.
    ok(
        unsafe { libc::rename(c(&tmp).as_ptr(), c(&ren).as_ptr()) } as i64,
        "rename",
    );
    // SAFETY: valid C string.
    expect_err(
        unsafe { libc::access(c(&tmp).as_ptr(), libc::F_OK) } as i64,
        libc::ENOENT,
        "access of the old name after rename",
    );
    say("renamed.txt: created as tmp.txt, renamed");

    // SAFETY: valid C strings.
    ok(
        unsafe { libc::mkdir(c(&format!("{dir}/sub")).as_ptr(), 0o755) } as i64,
        "mkdir sub",
    );
    // SAFETY: valid C string.
    ok(
        unsafe { libc::mkdir(c(&format!("{dir}/sub/dir")).as_ptr(), 0o755) } as i64,
        "mkdir sub/dir",
    );
    // SAFETY: valid C string.
    expect_err(
        unsafe { libc::mkdir(c(&format!("{dir}/sub")).as_ptr(), 0o755) } as i64,
        libc::EEXIST,
        "mkdir of an existing dir",
    );
    let fd = open(
        &format!("{dir}/sub/dir/file"),
        libc::O_WRONLY | libc::O_CREAT,
        0o644,
    );
    umt::write_all(fd, b"nested\n", "write");
    umt::close(fd);
    // SAFETY: valid C string.
    expect_err(
        unsafe { libc::rmdir(c(&format!("{dir}/sub")).as_ptr()) } as i64,
        libc::ENOTEMPTY,
        "rmdir of a non-empty dir",
    );
    say("sub/dir/file: nested directories");

    // SAFETY: valid C strings.
    ok(
        unsafe { libc::symlink(c("out.txt").as_ptr(), c(&format!("{dir}/link")).as_ptr()) } as i64,
        "symlink",
    );
    let mut buf = [0u8; 64];
    // SAFETY: valid buffer.
    let n = ok(
        unsafe {
            libc::readlink(
                c(&format!("{dir}/link")).as_ptr(),
                buf.as_mut_ptr().cast(),
                64,
            )
        } as i64,
        "readlink",
    ) as usize;
    check_eq(&buf[..n], b"out.txt".as_slice(), "readlink");
    check_eq(
        String::from_utf8_lossy(&read_file(&format!("{dir}/link"))).into_owned(),
        EXPECTED_OUT.to_string(),
        "reading through the symlink",
    );
    // SAFETY: valid C strings.
    ok(
        unsafe { libc::link(c(&ren).as_ptr(), c(&format!("{dir}/hard")).as_ptr()) } as i64,
        "link",
    );
    // SAFETY: plain data.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid path and buffer.
    ok(
        unsafe { libc::stat(c(&ren).as_ptr(), &mut st) } as i64,
        "stat",
    );
    check_eq(st.st_nlink, 2, "link count after link()");
    say("link: symlink to out.txt, hard link of renamed.txt");

    let gone = format!("{dir}/gone.txt");
    let fd = open(&gone, libc::O_RDWR | libc::O_CREAT, 0o644);
    // SAFETY: valid C string.
    ok(
        unsafe { libc::unlink(c(&gone).as_ptr()) } as i64,
        "unlink of an open file",
    );
    umt::write_all(fd, b"still here", "write to an unlinked file");
    // SAFETY: valid buffer.
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), 64, 0) };
    check_eq(
        ok(n as i64, "pread of an unlinked file"),
        10,
        "pread length",
    );
    umt::close(fd);
    say("unlinked open file still readable and writable");

    let m = format!("{dir}/mode600");
    let fd = open(&m, libc::O_WRONLY | libc::O_CREAT, 0o644);
    // SAFETY: plain integers.
    ok(unsafe { libc::fchmod(fd, 0o600) } as i64, "fchmod");
    umt::close(fd);
    // SAFETY: valid path and buffer.
    ok(
        unsafe { libc::stat(c(&m).as_ptr(), &mut st) } as i64,
        "stat",
    );
    check_eq(st.st_mode & 0o7777, 0o600, "mode after fchmod");
    say("fchmod 0600");

    umt::done("hostfs");
}
