//! Guest test `mmapfile`: file mappings on a writable file system (WORKDIR; under the user-mode
//! kernel that is a hostfs directory).
//!
//! * MAP_PRIVATE: a write through the mapping is visible in the mapping, not in the file (pread),
//!   and not in a second private mapping of the same file.
//! * MAP_SHARED: a write + msync(MS_SYNC) is visible through pread, and in a second shared mapping
//!   at once; write(2) to the file is visible in a shared mapping; a shared mapping's changes
//!   survive munmap and close (read back after reopening).
//! * A shared mapping across fork: the child's writes are seen by the parent.
//! * Touching a mapped page wholly past EOF raises SIGBUS (in a child); after ftruncate grows the
//!   file the same page works and reads zeros.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then
//! UM-MMAPFILE-OK. Usage: mmapfile WORKDIR.

use umt::{check, check_eq, ok, say};

/// The page size (AT_PAGESZ: 4K, or 16K on an arm64 16K-page kernel).
fn pg() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// The test file's length: four pages.
fn len() -> usize {
    4 * pg()
}

fn open(path: &str, flags: i32) -> i32 {
    let p = umt::cstr(path);
    // SAFETY: valid C string.
    ok(
        unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC, 0o644) } as i64,
        &format!("open({path})"),
    ) as i32
}

fn map(fd: i32, len: usize, flags: i32) -> *mut u8 {
    // SAFETY: a new mapping chosen by the kernel; checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            0,
        )
    };
    check(
        p != libc::MAP_FAILED,
        format!("mmap of the file: {}", umt::ename(umt::errno())),
    );
    p.cast()
}

fn unmap(p: *mut u8, len: usize) {
    // SAFETY: p/len is a mapping made by map().
    ok(unsafe { libc::munmap(p.cast(), len) } as i64, "munmap");
}

fn pread(fd: i32, off: usize, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    // SAFETY: valid buffer.
    let r = unsafe { libc::pread(fd, v.as_mut_ptr().cast(), n, off as libc::off_t) };
    check_eq(ok(r as i64, "pread") as usize, n, "pread length");
    v
}

fn pattern(i: usize) -> u8 {
    (i * 7 % 251) as u8
}

fn peek(p: *mut u8, off: usize, n: usize) -> Vec<u8> {
    // SAFETY: the caller's mapping covers off..off+n.
    (0..n)
        .map(|i| unsafe { std::ptr::read_volatile(p.add(off + i)) })
        .collect()
}

fn poke(p: *mut u8, off: usize, data: &[u8]) {
    for (i, &b) in data.iter().enumerate() {
        // SAFETY: the caller's mapping covers off..off+data.len() and is writable.
        unsafe { std::ptr::write_volatile(p.add(off + i), b) };
    }
}

fn setup(path: &str) -> i32 {
    let fd = open(path, libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC);
    let data: Vec<u8> = (0..len()).map(pattern).collect();
    umt::write_all(fd, &data, "write the initial file");
    fd
}

fn private(dir: &str) {
    let path = format!("{dir}/private.dat");
    let fd = setup(&path);
    let p = map(fd, len(), libc::MAP_PRIVATE);
    check_eq(
        peek(p, pg() + 10, 4),
        (pg() + 10..pg() + 14).map(pattern).collect(),
        "private mapping reads the file",
    );
    poke(p, pg() + 10, b"PRIV");
    check_eq(
        peek(p, pg() + 10, 4),
        b"PRIV".to_vec(),
        "private mapping sees its own write",
    );
    check_eq(
        pread(fd, pg() + 10, 4),
        (pg() + 10..pg() + 14).map(pattern).collect(),
        "file after a MAP_PRIVATE write (must be unchanged)",
    );
    let q = map(fd, len(), libc::MAP_PRIVATE);
    check_eq(
        peek(q, pg() + 10, 4),
        (pg() + 10..pg() + 14).map(pattern).collect(),
        "another private mapping after the first one's write",
    );
    // SAFETY: p/len() is a live mapping.
    ok(
        unsafe { libc::msync(p.cast(), len(), libc::MS_SYNC) } as i64,
        "msync of a private mapping",
    );
    check_eq(
        pread(fd, pg() + 10, 4),
        (pg() + 10..pg() + 14).map(pattern).collect(),
        "file after msync of a private mapping",
    );
    unmap(p, len());
    unmap(q, len());
    umt::close(fd);
    say("MAP_PRIVATE: write visible in the mapping only, not in the file or other mappings");
}

fn shared(dir: &str) {
    let path = format!("{dir}/shared.dat");
    let fd = setup(&path);
    let p = map(fd, len(), libc::MAP_SHARED);
    let q = map(fd, len(), libc::MAP_SHARED);
    poke(p, 2 * pg() + 100, b"SHARED");
    check_eq(
        peek(q, 2 * pg() + 100, 6),
        b"SHARED".to_vec(),
        "a second shared mapping sees the write at once",
    );
    // SAFETY: live mapping.
    ok(
        unsafe { libc::msync(p.cast(), len(), libc::MS_SYNC) } as i64,
        "msync(MS_SYNC)",
    );
    check_eq(
        pread(fd, 2 * pg() + 100, 6),
        b"SHARED".to_vec(),
        "pread after a MAP_SHARED write + msync",
    );
    say("MAP_SHARED: write + msync visible through read(2) and other shared mappings");

    // SAFETY: valid buffer.
    let r = unsafe {
        libc::pwrite(
            fd,
            b"WRITTEN".as_ptr().cast(),
            7,
            (3 * pg() + 5) as libc::off_t,
        )
    };
    check_eq(ok(r as i64, "pwrite"), 7, "pwrite length");
    check_eq(
        peek(p, 3 * pg() + 5, 7),
        b"WRITTEN".to_vec(),
        "shared mapping after pwrite to the file",
    );
    say("MAP_SHARED: pwrite to the file visible in the mapping");

    // Across fork: the child writes, the parent sees it.
    let pid = umt::fork();
    if pid == 0 {
        poke(p, 50, b"CHILD");
        umt::exit_now(0);
    }
    umt::waitpid(pid, 0);
    check_eq(
        peek(p, 50, 5),
        b"CHILD".to_vec(),
        "shared file mapping after the child wrote to it",
    );
    say("MAP_SHARED across fork: the child's write is seen by the parent");

    poke(p, 0, b"LAST");
    unmap(p, len());
    unmap(q, len());
    umt::close(fd);
    let fd = open(&path, libc::O_RDONLY);
    check_eq(
        pread(fd, 0, 4),
        b"LAST".to_vec(),
        "file reopened after munmap of a dirty shared mapping (no msync)",
    );
    check_eq(
        pread(fd, 2 * pg() + 100, 6),
        b"SHARED".to_vec(),
        "file reopened: earlier write",
    );
    umt::close(fd);
    say("MAP_SHARED: unsynced writes reach the file by munmap and close");
}

fn sigbus(dir: &str) {
    let path = format!("{dir}/short.dat");
    let fd = setup(&path);
    // SAFETY: plain integers.
    ok(
        unsafe { libc::ftruncate(fd, pg() as libc::off_t) } as i64,
        "ftruncate to one page",
    );
    let p = map(fd, len(), libc::MAP_SHARED);
    check_eq(
        peek(p, 100, 2),
        vec![pattern(100), pattern(101)],
        "first page after truncate",
    );
    let pid = umt::fork();
    if pid == 0 {
        let rl = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid struct (no core file natively).
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &rl) };
        let v = peek(p, 2 * pg(), 1);
        umt::exit_now(v[0] as i32 + 10);
    }
    check_eq(
        umt::describe_status(umt::waitpid(pid, 0)),
        "killed SIGBUS".into(),
        "child touching a mapped page past EOF",
    );
    // SAFETY: plain integers.
    ok(
        unsafe { libc::ftruncate(fd, len() as libc::off_t) } as i64,
        "ftruncate back to four pages",
    );
    check_eq(
        peek(p, 2 * pg(), 4),
        vec![0; 4],
        "page past the old EOF after growing the file",
    );
    unmap(p, len());
    umt::close(fd);
    say("page past EOF: SIGBUS; after ftruncate grows the file it reads zeros");
}

fn main() {
    umt::init("mmapfile");
    let dir = umt::workdir();
    private(&dir);
    shared(&dir);
    sigbus(&dir);
    for f in ["private.dat", "shared.dat", "short.dat"] {
        let p = umt::cstr(&format!("{dir}/{f}"));
        // SAFETY: valid C string.
        ok(unsafe { libc::unlink(p.as_ptr()) } as i64, "unlink");
    }
    umt::done("mmapfile");
}
