//! Guest test `shmcoherence`: pages a file or shared memory object drops (hole punch,
//! `MADV_REMOVE`, truncate) are gone from every address space that maps them (Linux
//! `unmap_mapping_range`, mm/memory.c; `shmem_fallocate` and `shmem_setattr`, mm/shmem.c).
//!
//! * memfd, `MAP_SHARED`: writes through the mapping are seen by `pread` and by a second
//!   mapping; `fallocate(PUNCH_HOLE|KEEP_SIZE)` of page 1 reads zeros through both mappings,
//!   through `pread`, and in a forked child that had the page mapped (another address space),
//!   also one spinning in its own code without a system call; a partial punch zeroes only
//!   its bytes; `write(2)` to the file is seen by a mapping made before it.
//! * `MADV_REMOVE` of a shared memfd mapping, of `MAP_SHARED|MAP_ANONYMOUS` memory (seen by a
//!   forked child too) and of a SysV shm attachment; its errors for private mappings.
//! * `ftruncate` shrink: a page past the new end is `SIGBUS` (parent's and child's mappings),
//!   the tail of the last page is zero; grown again, the pages read zeros.
//! * A tmpfs file (`/dev/shm` if it is tmpfs, else a tmpfs mounted in WORKDIR): the same.
//! * `MAP_PRIVATE` of the file: a page never written sees the hole; a copy-on-write page keeps
//!   its private copy after a hole punch, but truncate drops it (`SIGBUS` past the end).
//! * `MADV_DONTNEED` of a shared mapping keeps the data.
//! * A file of WORKDIR (hostfs under the user-mode kernel): truncate and the private mapping
//!   cases.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then
//! UM-SHMCOHERENCE-OK. Usage: shmcoherence WORKDIR.

use umt::{ok, say};

/// The page size (AT_PAGESZ).
fn pg() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

const PUNCH: i32 = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;

fn memfd(name: &str) -> i32 {
    let n = umt::cstr(name);
    // SAFETY: valid C string.
    ok(
        unsafe { libc::syscall(libc::SYS_memfd_create, n.as_ptr(), 0) },
        "memfd_create",
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
    if p == libc::MAP_FAILED {
        umt::fail(format!("mmap: {}", umt::ename(umt::errno())));
    }
    p.cast()
}

fn unmap(p: *mut u8, len: usize) {
    // SAFETY: p/len is a mapping made by map().
    ok(unsafe { libc::munmap(p.cast(), len) } as i64, "munmap");
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

fn pread(fd: i32, off: usize, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    // SAFETY: valid buffer.
    let r = unsafe { libc::pread(fd, v.as_mut_ptr().cast(), n, off as libc::off_t) };
    v.truncate(ok(r as i64, "pread") as usize);
    v
}

fn pwrite(fd: i32, off: usize, data: &[u8]) {
    // SAFETY: valid buffer.
    let r = unsafe { libc::pwrite(fd, data.as_ptr().cast(), data.len(), off as libc::off_t) };
    ok(r as i64, "pwrite");
}

fn fallocate(fd: i32, mode: i32, off: usize, len: usize) -> String {
    // SAFETY: plain integers.
    let r = unsafe { libc::fallocate(fd, mode, off as libc::off_t, len as libc::off_t) };
    res(r as i64)
}

fn ftruncate(fd: i32, len: usize) {
    // SAFETY: plain integers.
    ok(
        unsafe { libc::ftruncate(fd, len as libc::off_t) } as i64,
        "ftruncate",
    );
}

fn madvise(p: *mut u8, len: usize, advice: i32) -> String {
    // SAFETY: madvise does not touch memory the process can see except as advised.
    res(unsafe { libc::madvise(p.cast(), len, advice) } as i64)
}

fn res(r: i64) -> String {
    if r < 0 {
        umt::ename(umt::errno())
    } else {
        "ok".into()
    }
}

/// What a byte range holds: "zeros", printable text, or hex.
fn desc(v: &[u8]) -> String {
    if v.iter().all(|&b| b == 0) {
        format!("zeros({})", v.len())
    } else if v.iter().all(|b| b.is_ascii_graphic()) {
        String::from_utf8_lossy(v).into_owned()
    } else {
        v.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Page `i`'s test text.
fn tag(i: usize) -> Vec<u8> {
    format!("PAGE{i}").into_bytes()
}

/// A child that maps (inherits) `p` and has touched `off`, then, on "go" through the pipe,
/// reports what `off` holds (and `SIGBUS` if the access faults). Returns (pid, go fd).
fn watcher(p: *mut u8, off: usize, n: usize, label: String) -> (i32, i32) {
    let (go_r, go_w) = umt::pipe2(0);
    let (ready_r, ready_w) = umt::pipe2(0);
    let pid = umt::fork();
    if pid == 0 {
        umt::close(go_w);
        umt::close(ready_r);
        let rl = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid struct (no core file).
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &rl) };
        let before = peek(p, off, n);
        umt::write_all(ready_w, b"r", "ready");
        let mut b = [0u8; 1];
        umt::read_raw(go_r, &mut b);
        let after = peek(p, off, n);
        say(format!(
            "{label}: child saw {} before, {} after",
            desc(&before),
            desc(&after)
        ));
        umt::exit_now(0);
    }
    umt::close(go_r);
    umt::close(ready_w);
    let mut b = [0u8; 1];
    umt::read_raw(ready_r, &mut b);
    umt::close(ready_r);
    (pid, go_w)
}

fn release(pid: i32, go: i32, label: &str) {
    umt::write_all(go, b"g", "go");
    umt::close(go);
    let st = umt::waitpid(pid, 0);
    say(format!("{label}: child {}", umt::describe_status(st)));
}

/// A child spinning in its own code (no system calls) until `off` reads zero or about two
/// seconds pass: the hole must reach an address space that is running right now.
fn spinner(p: *mut u8, off: usize) -> (i32, i32) {
    let (ready_r, ready_w) = umt::pipe2(0);
    let pid = umt::fork();
    if pid == 0 {
        umt::close(ready_r);
        let _ = peek(p, off, 1);
        umt::write_all(ready_w, b"r", "ready");
        // ~2 s of volatile reads (no clock calls: those may be system calls).
        let mut seen = false;
        for _ in 0..400_000_000u64 {
            // SAFETY: the inherited mapping covers off.
            if unsafe { std::ptr::read_volatile(p.add(off)) } == 0 {
                seen = true;
                break;
            }
            std::hint::spin_loop();
        }
        umt::exit_now(if seen { 0 } else { 3 });
    }
    umt::close(ready_w);
    (pid, ready_r)
}

fn fill(p: *mut u8, pages: usize) {
    for i in 0..pages {
        poke(p, i * pg(), &tag(i));
        poke(p, i * pg() + pg() - 4, b"TAIL");
    }
}

/// Punch hole, pread, second mapping, child mappings, partial punch, write(2) coherence.
fn punch(kind: &str, fd: i32) {
    let len = 4 * pg();
    ftruncate(fd, len);
    let p = map(fd, len, libc::MAP_SHARED);
    let q = map(fd, len, libc::MAP_SHARED);
    fill(p, 4);
    say(format!(
        "{kind}: pread after mapping writes: {} {}",
        desc(&pread(fd, pg(), 5)),
        desc(&pread(fd, 2 * pg() - 4, 4))
    ));
    say(format!(
        "{kind}: second mapping sees: {}",
        desc(&peek(q, pg(), 5))
    ));
    let (wpid, wgo) = watcher(p, pg(), 5, format!("{kind}: punch page 1"));
    let (spid, sready) = spinner(q, pg());
    let mut b = [0u8; 1];
    umt::read_raw(sready, &mut b);
    umt::close(sready);
    // Let it get well into its loop.
    umt::sleep_ms(50);
    say(format!(
        "{kind}: punch page 1: {}",
        fallocate(fd, PUNCH, pg(), pg())
    ));
    say(format!(
        "{kind}: after punch: mapping {} {}, second mapping {}, pread {}",
        desc(&peek(p, pg(), 5)),
        desc(&peek(p, 2 * pg() - 4, 4)),
        desc(&peek(q, pg(), 5)),
        desc(&pread(fd, pg(), 5))
    ));
    say(format!(
        "{kind}: neighbours kept: {} {}",
        desc(&peek(p, 0, 5)),
        desc(&peek(q, 2 * pg(), 5))
    ));
    release(wpid, wgo, &format!("{kind}: punch page 1"));
    say(format!(
        "{kind}: spinning child saw the hole: {}",
        umt::describe_status(umt::waitpid(spid, 0))
    ));
    // The page comes back as a fresh zero page on a write.
    poke(p, pg() + 8, b"AGAIN");
    say(format!(
        "{kind}: refilled hole: {} pread {}",
        desc(&peek(q, pg() + 8, 5)),
        desc(&pread(fd, pg() + 8, 5))
    ));
    // A partial punch zeroes its bytes in place.
    say(format!(
        "{kind}: punch bytes 2..4 of page 2: {}",
        fallocate(fd, PUNCH, 2 * pg() + 2, 2)
    ));
    say(format!(
        "{kind}: after partial punch: {} pread {}",
        desc(&peek(q, 2 * pg(), 5)),
        desc(&pread(fd, 2 * pg(), 5))
    ));
    // write(2) reaches a page already mapped.
    pwrite(fd, 3 * pg() + 1, b"WRITTEN");
    say(format!(
        "{kind}: mapping after pwrite: {}",
        desc(&peek(p, 3 * pg() + 1, 7))
    ));
    // MADV_REMOVE punches the file through a shared mapping.
    let (wpid, wgo) = watcher(p, 3 * pg(), 5, format!("{kind}: MADV_REMOVE page 3"));
    say(format!(
        "{kind}: MADV_REMOVE page 3: {}",
        // SAFETY: inside the mapping.
        madvise(unsafe { p.add(3 * pg()) }, pg(), libc::MADV_REMOVE)
    ));
    say(format!(
        "{kind}: after MADV_REMOVE: mapping {} second {} pread {}",
        desc(&peek(p, 3 * pg(), 8)),
        desc(&peek(q, 3 * pg(), 8)),
        desc(&pread(fd, 3 * pg(), 8))
    ));
    release(wpid, wgo, &format!("{kind}: MADV_REMOVE page 3"));
    // MADV_DONTNEED of a shared mapping drops only the page table entries.
    poke(p, 8, b"KEEP");
    say(format!(
        "{kind}: MADV_DONTNEED: {} then {} pread {}",
        madvise(p, pg(), libc::MADV_DONTNEED),
        desc(&peek(p, 8, 4)),
        desc(&pread(fd, 8, 4))
    ));
    unmap(q, len);
    truncate(kind, fd, p);
    unmap(p, len);
}

/// ftruncate shrink (SIGBUS past the end in the parent and a child, the tail zeroed), then grow.
fn truncate(kind: &str, fd: i32, p: *mut u8) {
    let len = 4 * pg();
    fill(p, 4);
    let (wpid, wgo) = watcher(p, 2 * pg(), 5, format!("{kind}: truncate"));
    ftruncate(fd, pg() + 100);
    say(format!(
        "{kind}: shrunk to 1 page + 100: last page {} tail {} pread {} bytes, {}",
        desc(&peek(p, pg(), 5)),
        desc(&peek(p, pg() + 100, 4)),
        pread(fd, pg(), 200).len(),
        desc(&pread(fd, pg() + 96, 8))
    ));
    release(wpid, wgo, &format!("{kind}: truncate"));
    probe(&format!("{kind}: page 2 past the end"), p, 2 * pg());
    ftruncate(fd, len);
    say(format!(
        "{kind}: grown again: page 2 {} old tail {} pread {}",
        desc(&peek(p, 2 * pg(), 5)),
        desc(&peek(p, 2 * pg() - 4, 4)),
        desc(&pread(fd, 2 * pg(), 5))
    ));
}

/// Reads `off` in a child: its value or the signal that killed it.
fn probe(label: &str, p: *mut u8, off: usize) {
    let pid = umt::fork();
    if pid == 0 {
        let rl = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid struct (no core file).
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &rl) };
        let v = peek(p, off, 1);
        umt::exit_now(v[0] as i32 % 100 + 10);
    }
    say(format!(
        "{label}: {}",
        umt::describe_status(umt::waitpid(pid, 0))
    ));
}

/// MAP_PRIVATE: a page never written sees the hole, a copy-on-write page keeps its copy after
/// a punch; truncate drops it too.
fn private(kind: &str, fd: i32) {
    let len = 3 * pg();
    ftruncate(fd, 0);
    ftruncate(fd, len);
    for i in 0..3 {
        pwrite(fd, i * pg(), &tag(i));
    }
    let r = map(fd, len, libc::MAP_PRIVATE);
    let _ = peek(r, 0, 1);
    poke(r, pg(), b"COW1");
    say(format!(
        "{kind}: private: punch pages 0-1: {}",
        fallocate(fd, PUNCH, 0, 2 * pg())
    ));
    say(format!(
        "{kind}: private after punch: page 0 {} page 1 {} page 2 {}",
        desc(&peek(r, 0, 5)),
        desc(&peek(r, pg(), 5)),
        desc(&peek(r, 2 * pg(), 5))
    ));
    let (wpid, wgo) = watcher(r, pg(), 4, format!("{kind}: private truncate"));
    ftruncate(fd, pg());
    release(wpid, wgo, &format!("{kind}: private truncate"));
    probe(&format!("{kind}: private COW page past the end"), r, pg());
    say(format!(
        "{kind}: MADV_REMOVE of a private file mapping: {}",
        madvise(r, pg(), libc::MADV_REMOVE)
    ));
    unmap(r, len);
}

/// `/dev/shm` if it is a tmpfs, else a tmpfs mounted at WORKDIR/tmpfs.
fn tmpfs_dir(work: &str) -> Option<String> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let fs_type = |d: &str| {
        let c = umt::cstr(d);
        // SAFETY: statfs is plain data.
        let mut s: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: valid path and buffer.
        (unsafe { libc::statfs(c.as_ptr(), &mut s) } == 0).then_some(s.f_type as i64)
    };
    if fs_type("/dev/shm") == Some(TMPFS_MAGIC) {
        return Some("/dev/shm".into());
    }
    let d = format!("{work}/tmpfs");
    let c = umt::cstr(&d);
    // SAFETY: valid C strings.
    unsafe {
        libc::mkdir(c.as_ptr(), 0o755);
        let t = umt::cstr("tmpfs");
        if libc::mount(t.as_ptr(), c.as_ptr(), t.as_ptr(), 0, std::ptr::null()) != 0 {
            return None;
        }
    }
    Some(d)
}

fn anon_shared() {
    let len = 2 * pg();
    // SAFETY: a new anonymous mapping.
    let a = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if a == libc::MAP_FAILED {
        umt::fail("mmap MAP_SHARED|MAP_ANONYMOUS");
    }
    let a: *mut u8 = a.cast();
    fill(a, 2);
    let (wpid, wgo) = watcher(a, 0, 5, "anon shared MADV_REMOVE".into());
    say(format!(
        "anon shared: MADV_REMOVE page 0: {}",
        madvise(a, pg(), libc::MADV_REMOVE)
    ));
    say(format!(
        "anon shared: after: page 0 {} page 1 {}",
        desc(&peek(a, 0, 5)),
        desc(&peek(a, pg(), 5))
    ));
    release(wpid, wgo, "anon shared MADV_REMOVE");
    unmap(a, len);

    // SAFETY: a new anonymous private mapping.
    let b = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            pg(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    say(format!(
        "anon private: MADV_REMOVE: {}",
        madvise(b.cast(), pg(), libc::MADV_REMOVE)
    ));
    unmap(b.cast(), pg());
}

fn sysv() {
    let len = 2 * pg();
    // SAFETY: plain integers.
    let id = unsafe { libc::shmget(libc::IPC_PRIVATE, len, libc::IPC_CREAT | 0o600) };
    ok(id as i64, "shmget");
    // SAFETY: attaching a new segment at an address the kernel picks.
    let s = unsafe { libc::shmat(id, std::ptr::null(), 0) };
    if s as isize == -1 {
        umt::fail("shmat");
    }
    let s: *mut u8 = s.cast();
    // SAFETY: plain integers; the segment goes when the last attachment does.
    unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
    fill(s, 2);
    let (wpid, wgo) = watcher(s, pg(), 5, "SysV shm MADV_REMOVE".into());
    say(format!(
        "SysV shm: MADV_REMOVE page 1: {}",
        // SAFETY: inside the attachment.
        madvise(unsafe { s.add(pg()) }, pg(), libc::MADV_REMOVE)
    ));
    say(format!(
        "SysV shm: after: page 0 {} page 1 {}",
        desc(&peek(s, 0, 5)),
        desc(&peek(s, pg(), 5))
    ));
    release(wpid, wgo, "SysV shm MADV_REMOVE");
    // SAFETY: s is the attachment.
    ok(unsafe { libc::shmdt(s.cast()) } as i64, "shmdt");
}

fn main() {
    umt::init("shmcoherence");
    let work = umt::workdir();
    let fd = memfd("shmco");
    punch("memfd", fd);
    private("memfd", fd);
    umt::close(fd);

    match tmpfs_dir(&work) {
        Some(d) => {
            let path = format!("{d}/shmcoherence.dat");
            let c = umt::cstr(&path);
            // SAFETY: valid C string.
            let fd = ok(
                unsafe {
                    libc::open(
                        c.as_ptr(),
                        libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC,
                        0o600,
                    )
                } as i64,
                "open tmpfs file",
            ) as i32;
            // SAFETY: valid C string.
            unsafe { libc::unlink(c.as_ptr()) };
            punch("tmpfs", fd);
            private("tmpfs", fd);
            umt::close(fd);
            if d != "/dev/shm" {
                let c = umt::cstr(&d);
                // SAFETY: valid C string.
                unsafe { libc::umount(c.as_ptr()) };
            }
        }
        None => say("no tmpfs to test"),
    }
    // A file of WORKDIR (hostfs under the user-mode kernel): truncate with mappings present,
    // and a private mapping across a punch and a truncate.
    let path = format!("{work}/shmcoherence-host.dat");
    let c = umt::cstr(&path);
    // SAFETY: valid C string.
    let fd = ok(
        unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC,
                0o600,
            )
        } as i64,
        "open WORKDIR file",
    ) as i32;
    ftruncate(fd, 4 * pg());
    let p = map(fd, 4 * pg(), libc::MAP_SHARED);
    truncate("file", fd, p);
    poke(p, pg() + 8, b"HOSTFS");
    say(format!(
        "file: MADV_REMOVE page 1: {}; then mapping {} pread {}",
        // SAFETY: inside the mapping.
        madvise(unsafe { p.add(pg()) }, pg(), libc::MADV_REMOVE),
        desc(&peek(p, pg() + 8, 6)),
        desc(&pread(fd, pg() + 8, 6))
    ));
    unmap(p, 4 * pg());
    private("file", fd);
    umt::close(fd);
    // SAFETY: valid C string.
    unsafe { libc::unlink(c.as_ptr()) };
    anon_shared();
    sysv();
    umt::done("shmcoherence");
}
