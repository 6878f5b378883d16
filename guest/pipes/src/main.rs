//! Guest test `pipes`.
//!
//! * 16 MiB through a pipe from a child process in odd-sized writes, read in odd-sized reads,
//!   checksummed on both sides; EOF (read returns 0) after the writer exits.
//! * EPIPE with SIGPIPE ignored; a child with the default action is killed by SIGPIPE; with a
//!   handler, the handler runs and write fails with EPIPE.
//! * O_NONBLOCK: EAGAIN on an empty pipe; a full pipe takes F_GETPIPE_SZ (65536) bytes (the
//!   first 4096 written one at a time, merged into one buffer), then EAGAIN.
//! * poll: POLLOUT on an empty pipe, POLLIN with data, POLLHUP after the writer closed.
//! * Writes of at most PIPE_BUF bytes from two processes are not interleaved.
//! * Packet mode (pipe2 O_DIRECT): each write is a packet, a read takes one packet and loses
//!   what did not fit; F_SETFL without O_DIRECT turns it off.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then UM-PIPES-OK.

use std::sync::atomic::{AtomicUsize, Ordering};
use umt::{check, check_eq, expect_err, ok, say};

static COUNT: AtomicUsize = AtomicUsize::new(0);

/// xorshift64: the data stream both sides generate.
struct Gen(u64);
impl Gen {
    fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            *b = self.0 as u8;
        }
    }
}

fn fnv(h: &mut u64, data: &[u8]) {
    for &b in data {
        *h ^= b as u64;
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

const TOTAL: usize = 16 << 20;

fn big_transfer() {
    let mut expect = 0xcbf2_9ce4_8422_2325u64;
    let mut g = Gen(0x1234_5678_9abc_def1);
    let mut chunk = vec![0u8; TOTAL];
    g.fill(&mut chunk);
    fnv(&mut expect, &chunk);

    let (r, w) = umt::pipe2(0);
    let pid = umt::fork();
    if pid == 0 {
        umt::close(r);
        let sizes = [1usize, 4095, 4096, 4097, 65536, 100_000, 7];
        let mut off = 0;
        let mut i = 0;
        while off < TOTAL {
            let n = sizes[i % sizes.len()].min(TOTAL - off);
            umt::write_all(w, &chunk[off..off + n], "child write to the pipe");
            off += n;
            i += 1;
        }
        umt::exit_now(0);
    }
    umt::close(w);
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut got = 0usize;
    let mut buf = vec![0u8; 70_001];
    let sizes = [70_001usize, 3, 512, 65536, 9999];
    let mut i = 0;
    loop {
        let want = sizes[i % sizes.len()];
        i += 1;
        let n = umt::read_raw(r, &mut buf[..want]);
        if n < 0 && umt::errno() == libc::EINTR {
            continue;
        }
        let n = ok(n, "read from the pipe") as usize;
        if n == 0 {
            break;
        }
        fnv(&mut h, &buf[..n]);
        got += n;
    }
    check_eq(got, TOTAL, "bytes received before EOF");
    check_eq(h, expect, "FNV-1a checksum of the received stream");
    check_eq(
        umt::describe_status(umt::waitpid(pid, 0)),
        "exited 0".into(),
        "writer child",
    );
    umt::close(r);
    say(format!(
        "transferred {TOTAL} bytes, checksum {expect:016x} matches, then EOF"
    ));
}

extern "C" fn count_handler(_sig: i32) {
    COUNT.fetch_add(1, Ordering::SeqCst);
}

fn epipe() {
    // SAFETY: setting a disposition to SIG_IGN.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let (r, w) = umt::pipe2(0);
    umt::close(r);
    // SAFETY: valid buffer.
    let n = unsafe { libc::write(w, b"x".as_ptr().cast(), 1) };
    expect_err(
        n as i64,
        libc::EPIPE,
        "write to a pipe without readers, SIGPIPE ignored",
    );
    umt::close(w);
    say("no readers, SIGPIPE ignored: EPIPE");

    umt::set_handler(libc::SIGPIPE, count_handler as *const () as usize, 0, false);
    COUNT.store(0, Ordering::SeqCst);
    let (r, w) = umt::pipe2(0);
    umt::close(r);
    // SAFETY: valid buffer.
    let n = unsafe { libc::write(w, b"x".as_ptr().cast(), 1) };
    expect_err(
        n as i64,
        libc::EPIPE,
        "write to a pipe without readers, SIGPIPE handled",
    );
    check_eq(COUNT.load(Ordering::SeqCst), 1, "SIGPIPE handler runs once");
    umt::close(w);
    say("no readers, SIGPIPE handler: handler ran, EPIPE");

    // The read end is closed before the fork: had the parent still held it while the child
    // wrote, the write would find a reader (a race the test must not have).
    let (r, w) = umt::pipe2(0);
    umt::close(r);
    let pid = umt::fork();
    if pid == 0 {
        // SAFETY: default disposition.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        // SAFETY: valid buffer.
        unsafe { libc::write(w, b"x".as_ptr().cast(), 1) };
        umt::exit_now(1);
    }
    umt::close(w);
    check_eq(
        umt::describe_status(umt::waitpid(pid, 0)),
        "killed SIGPIPE".into(),
        "child writing to a pipe without readers",
    );
    say("no readers, default action: child killed by SIGPIPE");

    // A writer blocked on a full pipe gets EPIPE when the last reader goes away.
    let (r, w) = umt::pipe2(0);
    let pid = umt::fork();
    if pid == 0 {
        // SAFETY: ignore in the child.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        umt::close(r);
        let big = vec![0u8; 1 << 20];
        // SAFETY: valid buffer.
        let n = unsafe { libc::write(w, big.as_ptr().cast(), big.len()) };
        // A partial write returns the count; the next one fails.
        let e = if n < 0 {
            umt::errno()
        } else {
            // SAFETY: valid buffer.
            let m = unsafe { libc::write(w, big.as_ptr().cast(), big.len()) };
            if m < 0 { umt::errno() } else { 0 }
        };
        umt::exit_now(if e == libc::EPIPE { 0 } else { 1 });
    }
    umt::close(w);
    umt::sleep_ms(50);
    umt::close(r);
    check_eq(
        umt::describe_status(umt::waitpid(pid, 0)),
        "exited 0".into(),
        "writer blocked on a full pipe gets EPIPE when the reader closes (1 = not)",
    );
    say("blocked writer: EPIPE when the last reader closes");
}

fn nonblock() {
    let (r, w) = umt::pipe2(libc::O_NONBLOCK);
    let mut b = [0u8; 16];
    expect_err(
        umt::read_raw(r, &mut b),
        libc::EAGAIN,
        "O_NONBLOCK read of an empty pipe",
    );
    // SAFETY: plain integers.
    let cap = ok(
        unsafe { libc::fcntl(w, libc::F_GETPIPE_SZ) } as i64,
        "F_GETPIPE_SZ",
    );
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as i64;
    check_eq(cap, 16 * page, "F_GETPIPE_SZ (16 pages)");
    // SAFETY: plain integers.
    let cap = ok(
        unsafe { libc::fcntl(w, libc::F_SETPIPE_SZ, 65536) } as i64,
        "F_SETPIPE_SZ",
    );
    check_eq(cap, 65536, "F_SETPIPE_SZ 64K");
    // Fill it: the first 4096 bytes one at a time (each must merge into the buffer before it,
    // as Linux's pipe_write does for anonymous pipes: were they not merged, the 16 slots would be
    // full after 16 bytes), then PIPE_BUF-sized writes until EAGAIN, then single bytes again for
    // whatever room a PIPE_BUF write could not take (writes of at most PIPE_BUF bytes to an
    // O_NONBLOCK pipe are all or nothing, pipe(7)). 4K calls instead of 64K keep the gate cheap
    // under emulation.
    let mut n = 0usize;
    let mut write_until_full = |chunk: usize, limit: usize| {
        let buf = [b'y'; 4096];
        while n < limit {
            // SAFETY: valid buffer of at least `chunk` bytes.
            let r = unsafe { libc::write(w, buf.as_ptr().cast(), chunk) };
            if r < 0 {
                check_eq(
                    umt::ename(umt::errno()),
                    "EAGAIN".into(),
                    "write to a full O_NONBLOCK pipe",
                );
                return;
            }
            check_eq(
                r as usize,
                chunk,
                "O_NONBLOCK pipe write of at most PIPE_BUF bytes",
            );
            n += chunk;
            check(
                n <= 1 << 20,
                "an O_NONBLOCK pipe never filled up (1 MiB written)",
            );
        }
    };
    write_until_full(1, 4096);
    write_until_full(4096, 1 << 20);
    write_until_full(1, 1 << 20);
    check_eq(n, 65536, "bytes a pipe holds, 4096 written one at a time");
    say("O_NONBLOCK: EAGAIN when empty; full after 65536 bytes, then EAGAIN");
    // SAFETY: FIONREAD writes one int.
    let mut avail: libc::c_int = 0;
    // SAFETY: valid int pointer.
    ok(
        unsafe { libc::ioctl(r, libc::FIONREAD, &mut avail) } as i64,
        "FIONREAD",
    );
    check_eq(avail, 65536, "FIONREAD on the full pipe");
    say("FIONREAD: 65536");
    umt::close(r);
    umt::close(w);
}

fn polling() {
    let (r, w) = umt::pipe2(0);
    let mut fds = [
        libc::pollfd {
            fd: r,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: w,
            events: libc::POLLOUT,
            revents: 0,
        },
    ];
    // SAFETY: valid array of two pollfds.
    let n = ok(unsafe { libc::poll(fds.as_mut_ptr(), 2, 0) } as i64, "poll");
    check_eq(
        (n, fds[0].revents, fds[1].revents),
        (1, 0, libc::POLLOUT),
        "poll on an empty pipe (n, read end, write end)",
    );
    umt::write_all(w, b"abc", "write");
    // SAFETY: as above.
    let n = ok(unsafe { libc::poll(fds.as_mut_ptr(), 2, 0) } as i64, "poll");
    check_eq(
        (n, fds[0].revents, fds[1].revents),
        (2, libc::POLLIN, libc::POLLOUT),
        "poll with data",
    );
    umt::close(w);
    // SAFETY: as above.
    let n = ok(unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) } as i64, "poll");
    check_eq(
        (n, fds[0].revents),
        (1, libc::POLLIN | libc::POLLHUP),
        "poll with data after the writer closed",
    );
    let mut b = [0u8; 8];
    check_eq(umt::read_raw(r, &mut b), 3, "read the data");
    // SAFETY: as above.
    let n = ok(unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) } as i64, "poll");
    check_eq(
        (n, fds[0].revents),
        (1, libc::POLLHUP),
        "poll on a drained pipe without writers",
    );
    check_eq(umt::read_raw(r, &mut b), 0, "read at EOF");
    umt::close(r);
    say("poll: POLLOUT empty, POLLIN data, POLLHUP after writer closed; read 0 at EOF");

    // A poll that blocks until a child writes.
    let (r, w) = umt::pipe2(0);
    let pid = umt::fork();
    if pid == 0 {
        umt::sleep_ms(50);
        umt::write_all(w, b"z", "child write");
        umt::exit_now(0);
    }
    let mut fds = [libc::pollfd {
        fd: r,
        events: libc::POLLIN,
        revents: 0,
    }];
    // SAFETY: valid pollfd.
    let n = ok(
        unsafe { libc::poll(fds.as_mut_ptr(), 1, 10_000) } as i64,
        "blocking poll",
    );
    check_eq(
        (n, fds[0].revents),
        (1, libc::POLLIN),
        "blocking poll woken by a write",
    );
    umt::waitpid(pid, 0);
    umt::close(r);
    umt::close(w);
    say("blocking poll woken by a child's write");
}

fn atomic_writes() {
    let (r, w) = umt::pipe2(0);
    let mut kids = Vec::new();
    for c in [b'a', b'b'] {
        let pid = umt::fork();
        if pid == 0 {
            let rec = [c; libc::PIPE_BUF];
            for _ in 0..64 {
                umt::write_all(w, &rec, "child record write");
            }
            umt::exit_now(0);
        }
        kids.push(pid);
    }
    umt::close(w);
    let mut all = Vec::new();
    let mut buf = vec![0u8; 10_000];
    loop {
        let n = ok(umt::read_raw(r, &mut buf), "read") as usize;
        if n == 0 {
            break;
        }
        all.extend_from_slice(&buf[..n]);
    }
    for p in kids {
        umt::waitpid(p, 0);
    }
    check_eq(
        all.len(),
        2 * 64 * libc::PIPE_BUF,
        "total bytes from two writers",
    );
    let torn = all
        .chunks(libc::PIPE_BUF)
        .filter(|rec| rec.iter().any(|&b| b != rec[0]))
        .count();
    check_eq(
        torn,
        0,
        "PIPE_BUF-sized records interleaved with another writer's",
    );
    umt::close(r);
    say("PIPE_BUF writes from two processes are atomic");
}

fn packets() {
    let (r, w) = umt::pipe2(libc::O_DIRECT);
    // SAFETY: plain integers.
    let fl = ok(unsafe { libc::fcntl(w, libc::F_GETFL) } as i64, "F_GETFL") as i32;
    check(
        fl & libc::O_DIRECT != 0,
        "O_DIRECT in the write end's flags",
    );
    for msg in [&b"first"[..], b"second!", b"3"] {
        // SAFETY: valid buffer.
        let n = unsafe { libc::write(w, msg.as_ptr().cast(), msg.len()) };
        check_eq(n, msg.len() as isize, "packet write");
    }
    let mut b = [0u8; 64];
    let n = ok(umt::read_raw(r, &mut b), "read a packet") as usize;
    check_eq(&b[..n], &b"first"[..], "one packet per read");
    let n = ok(umt::read_raw(r, &mut b[..3]), "short read of a packet") as usize;
    check_eq(&b[..n], &b"sec"[..], "the head of the second packet");
    let n = ok(umt::read_raw(r, &mut b), "read the third packet") as usize;
    check_eq(&b[..n], &b"3"[..], "the rest of the second packet is gone");
    // SAFETY: plain integers.
    ok(
        unsafe { libc::fcntl(w, libc::F_SETFL, 0) } as i64,
        "F_SETFL 0",
    );
    for msg in [&b"ab"[..], b"cd"] {
        // SAFETY: valid buffer.
        unsafe { libc::write(w, msg.as_ptr().cast(), msg.len()) };
    }
    let n = ok(umt::read_raw(r, &mut b), "read a byte stream") as usize;
    check_eq(
        &b[..n],
        &b"abcd"[..],
        "without O_DIRECT the writes run together",
    );
    say("packet mode: one packet per read, the rest of a short read lost; F_SETFL turns it off");
    umt::close(r);
    umt::close(w);
}

fn main() {
    umt::init("pipes");
    big_transfer();
    epipe();
    nonblock();
    polling();
    atomic_writes();
    packets();
    umt::done("pipes");
}
