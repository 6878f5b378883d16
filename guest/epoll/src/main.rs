//! Guest test `epoll`.
//!
//! * Level-triggered EPOLLIN on a pipe's read end reports again and again until drained.
//! * Edge-triggered (EPOLLET) reports once per new write.
//! * EPOLLOUT on a write end; EPOLLHUP when the writer closes; EPOLLONESHOT disarms until MOD.
//! * epoll_ctl errors: EEXIST, ENOENT, EBADF, EINVAL (epoll fd added to itself); a closed fd
//!   leaves the set.
//! * epoll_wait with a 50 ms timeout returns 0 after roughly that long; a blocked epoll_wait is
//!   woken by a child's write; the event's data (u64) comes back unchanged.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then UM-EPOLL-OK.

use umt::{check, check_eq, expect_err, ok, say};

fn ctl(ep: i32, op: i32, fd: i32, events: u32, data: u64) -> i64 {
    let mut ev = libc::epoll_event { events, u64: data };
    // SAFETY: ev is a valid epoll_event.
    unsafe { libc::epoll_ctl(ep, op, fd, &mut ev) as i64 }
}

/// epoll_wait; returns (events, data) pairs.
fn wait(ep: i32, timeout: i32) -> Vec<(u32, u64)> {
    let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 8];
    let n = loop {
        // SAFETY: evs has room for 8 events.
        let n = unsafe { libc::epoll_wait(ep, evs.as_mut_ptr(), 8, timeout) };
        if n < 0 && umt::errno() == libc::EINTR {
            continue;
        }
        break ok(n as i64, "epoll_wait") as usize;
    };
    evs[..n].iter().map(|e| (e.events, e.u64)).collect()
}

const IN: u32 = libc::EPOLLIN as u32;
const OUT: u32 = libc::EPOLLOUT as u32;
const HUP: u32 = libc::EPOLLHUP as u32;
const ET: u32 = libc::EPOLLET as u32;
const ONESHOT: u32 = libc::EPOLLONESHOT as u32;

fn epoll() -> i32 {
    // SAFETY: plain integer.
    ok(
        unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) } as i64,
        "epoll_create1",
    ) as i32
}

fn level() {
    let ep = epoll();
    let (r, w) = umt::pipe2(0);
    ok(
        ctl(ep, libc::EPOLL_CTL_ADD, r, IN, 0xdead_beef_0000_0001),
        "EPOLL_CTL_ADD",
    );
    check_eq(wait(ep, 0), vec![], "level: empty pipe");
    umt::write_all(w, b"ab", "write");
    check_eq(
        wait(ep, 0),
        vec![(IN, 0xdead_beef_0000_0001)],
        "level: first wait",
    );
    check_eq(
        wait(ep, 0),
        vec![(IN, 0xdead_beef_0000_0001)],
        "level: second wait (still readable)",
    );
    let mut b = [0u8; 1];
    umt::read_raw(r, &mut b);
    check_eq(
        wait(ep, 0),
        vec![(IN, 0xdead_beef_0000_0001)],
        "level: one byte left",
    );
    umt::read_raw(r, &mut b);
    check_eq(wait(ep, 0), vec![], "level: drained");
    umt::close(w);
    check_eq(
        wait(ep, 0),
        vec![(HUP, 0xdead_beef_0000_0001)],
        "level: writer closed",
    );
    umt::close(r);
    umt::close(ep);
    say("level-triggered: reported until drained; EPOLLHUP after writer closed; data u64 kept");
}

fn edge() {
    let ep = epoll();
    let (r, w) = umt::pipe2(libc::O_NONBLOCK);
    ok(
        ctl(ep, libc::EPOLL_CTL_ADD, r, IN | ET, 7),
        "EPOLL_CTL_ADD EPOLLET",
    );
    umt::write_all(w, b"x", "write");
    check_eq(wait(ep, 0), vec![(IN, 7)], "edge: after first write");
    check_eq(wait(ep, 0), vec![], "edge: no new data, not reported again");
    umt::write_all(w, b"y", "write");
    check_eq(wait(ep, 0), vec![(IN, 7)], "edge: after second write");
    let mut b = [0u8; 8];
    check_eq(umt::read_raw(r, &mut b), 2, "read both bytes");
    check_eq(wait(ep, 0), vec![], "edge: drained");
    umt::close(r);
    umt::close(w);
    umt::close(ep);
    say("edge-triggered: one report per write");

    let ep = epoll();
    let (r, w) = umt::pipe2(0);
    ok(ctl(ep, libc::EPOLL_CTL_ADD, w, OUT, 1), "add write end");
    ok(
        ctl(ep, libc::EPOLL_CTL_ADD, r, IN | ONESHOT, 2),
        "add read end oneshot",
    );
    check_eq(wait(ep, 0), vec![(OUT, 1)], "write end of an empty pipe");
    umt::write_all(w, b"z", "write");
    let mut got = wait(ep, 0);
    got.sort_by_key(|e| e.1);
    check_eq(got, vec![(OUT, 1), (IN, 2)], "both ends");
    check_eq(wait(ep, 0), vec![(OUT, 1)], "oneshot disarmed");
    ok(
        ctl(ep, libc::EPOLL_CTL_MOD, r, IN | ONESHOT, 3),
        "EPOLL_CTL_MOD rearm",
    );
    let mut got = wait(ep, 0);
    got.sort_by_key(|e| e.1);
    check_eq(got, vec![(OUT, 1), (IN, 3)], "rearmed with new data");
    ok(ctl(ep, libc::EPOLL_CTL_DEL, w, 0, 0), "EPOLL_CTL_DEL");
    check_eq(
        wait(ep, 0),
        vec![],
        "after DEL of the write end and oneshot fired",
    );
    say("EPOLLOUT; EPOLLONESHOT disarms until EPOLL_CTL_MOD; EPOLL_CTL_DEL");

    expect_err(
        ctl(ep, libc::EPOLL_CTL_ADD, r, IN, 0),
        libc::EEXIST,
        "adding an fd twice",
    );
    expect_err(
        ctl(ep, libc::EPOLL_CTL_DEL, w, 0, 0),
        libc::ENOENT,
        "deleting an fd not in the set",
    );
    expect_err(
        ctl(ep, libc::EPOLL_CTL_MOD, w, IN, 0),
        libc::ENOENT,
        "modifying an fd not in the set",
    );
    expect_err(
        ctl(ep, libc::EPOLL_CTL_ADD, 9999, IN, 0),
        libc::EBADF,
        "adding a bad fd",
    );
    expect_err(
        ctl(ep, libc::EPOLL_CTL_ADD, ep, IN, 0),
        libc::EINVAL,
        "adding the epoll fd to itself",
    );
    say("epoll_ctl: EEXIST, ENOENT, EBADF, EINVAL");

    // Closing the only descriptor of a file removes it from the set.
    umt::close(r);
    umt::close(w);
    check_eq(wait(ep, 0), vec![], "after closing the registered fds");
    umt::close(ep);
    say("closed fds leave the set");
}

fn blocking() {
    let ep = epoll();
    let (r, w) = umt::pipe2(0);
    ok(ctl(ep, libc::EPOLL_CTL_ADD, r, IN, 42), "add");
    let start = umt::now_ns();
    check_eq(wait(ep, 50), vec![], "epoll_wait with a 50 ms timeout");
    let ms = (umt::now_ns() - start) / 1_000_000;
    check(
        (45..=5000).contains(&ms),
        format!("epoll_wait 50 ms timeout took {ms} ms"),
    );
    say("epoll_wait timeout: 0 events after about 50 ms");

    let pid = umt::fork();
    if pid == 0 {
        umt::sleep_ms(50);
        umt::write_all(w, b"!", "child write");
        umt::exit_now(0);
    }
    check_eq(
        wait(ep, 10_000),
        vec![(IN, 42)],
        "blocking epoll_wait woken by a child's write",
    );
    umt::waitpid(pid, 0);
    umt::close(r);
    umt::close(w);

    // Nested: an epoll fd is itself pollable.
    let outer = epoll();
    let (r, w) = umt::pipe2(0);
    ok(ctl(ep, libc::EPOLL_CTL_ADD, r, IN, 5), "add to inner");
    ok(
        ctl(outer, libc::EPOLL_CTL_ADD, ep, IN, 6),
        "add inner epoll to outer",
    );
    check_eq(wait(outer, 0), vec![], "outer, nothing ready");
    umt::write_all(w, b"q", "write");
    check_eq(wait(outer, 0), vec![(IN, 6)], "outer sees inner ready");
    umt::close(outer);
    umt::close(ep);
    umt::close(r);
    umt::close(w);
    say("blocking epoll_wait woken by a child; nested epoll");
}

fn main() {
    umt::init("epoll");
    level();
    edge();
    blocking();
    umt::done("epoll");
}
