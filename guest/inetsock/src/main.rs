//! Guest test `inetsock`: AF_INET and AF_INET6 sockets on the loopback network.
//!
//! * TCP over 127.0.0.1: bind to port 0, listen, connect, accept; the addresses each side
//!   reports; data both ways, MSG_PEEK, MSG_DONTWAIT on an empty queue; shutdown(SHUT_WR) is
//!   the peer's EOF (and POLLRDHUP); after the peer closed, the first send succeeds and the
//!   next is EPIPE with SIGPIPE; closing with unread data resets the peer (ECONNRESET).
//! * ECONNREFUSED with no listener, blocking and non-blocking (EINPROGRESS, then SO_ERROR);
//!   EISCONN; EADDRINUSE, SO_REUSEADDR, and listen's second check; EADDRNOTAVAIL for an address
//!   the host does not have.
//! * UDP: sendto/recvfrom with addresses, message boundaries, MSG_TRUNC, a connected socket
//!   ignores other senders, ECONNREFUSED on a connected socket after sending to a dead port;
//!   IP_PKTINFO, IP_RECVTTL and IPV6_RECVPKTINFO control messages.
//! * IPv6: TCP over ::1, a dual-stack listener takes an IPv4 client (mapped addresses), an
//!   IPV6_V6ONLY one refuses it; IPV6_ADDRFORM where the kernel has it (a 6.18 host refuses it).
//! * Options (SO_TYPE, SO_DOMAIN, SO_PROTOCOL, SO_RCVBUF doubling, TCP_NODELAY, IP_TTL) and the
//!   poll mask of a fresh TCP socket.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then
//! UM-INETSOCK-OK. Usage: inetsock WORKDIR. Only loopback addresses are used; nothing
//! printed depends on the port numbers chosen.

use std::mem::size_of;
use std::sync::atomic::{AtomicU32, Ordering};
use umt::{check, check_eq, errno, expect_err, ok, say};

static SIGPIPES: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_sigpipe(_: i32) {
    SIGPIPES.fetch_add(1, Ordering::SeqCst);
}

fn sock(family: i32, ty: i32) -> i32 {
    // SAFETY: plain integers.
    ok(
        unsafe { libc::socket(family, ty | libc::SOCK_CLOEXEC, 0) } as i64,
        "socket",
    ) as i32
}

fn sin(ip: [u8; 4], port: u16) -> libc::sockaddr_in {
    // SAFETY: sockaddr_in is plain data; zeroed is valid.
    let mut a: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    a.sin_family = libc::AF_INET as u16;
    a.sin_port = port.to_be();
    a.sin_addr.s_addr = u32::from_ne_bytes(ip);
    a
}

fn sin6(ip: [u8; 16], port: u16) -> libc::sockaddr_in6 {
    // SAFETY: sockaddr_in6 is plain data; zeroed is valid.
    let mut a: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
    a.sin6_family = libc::AF_INET6 as u16;
    a.sin6_port = port.to_be();
    a.sin6_addr.s6_addr = ip;
    a
}

const LO6: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

fn bind4(fd: i32, a: &libc::sockaddr_in) -> i64 {
    // SAFETY: a is a valid sockaddr_in of the given length.
    unsafe {
        libc::bind(
            fd,
            (a as *const libc::sockaddr_in).cast(),
            size_of::<libc::sockaddr_in>() as u32,
        ) as i64
    }
}

fn bind6(fd: i32, a: &libc::sockaddr_in6) -> i64 {
    // SAFETY: a is a valid sockaddr_in6 of the given length.
    unsafe {
        libc::bind(
            fd,
            (a as *const libc::sockaddr_in6).cast(),
            size_of::<libc::sockaddr_in6>() as u32,
        ) as i64
    }
}

fn connect4(fd: i32, a: &libc::sockaddr_in) -> i64 {
    // SAFETY: a is a valid sockaddr_in of the given length.
    unsafe {
        libc::connect(
            fd,
            (a as *const libc::sockaddr_in).cast(),
            size_of::<libc::sockaddr_in>() as u32,
        ) as i64
    }
}

fn connect6(fd: i32, a: &libc::sockaddr_in6) -> i64 {
    // SAFETY: a is a valid sockaddr_in6 of the given length.
    unsafe {
        libc::connect(
            fd,
            (a as *const libc::sockaddr_in6).cast(),
            size_of::<libc::sockaddr_in6>() as u32,
        ) as i64
    }
}

/// getsockname or getpeername into a sockaddr_storage: (bytes, length).
fn name(fd: i32, peer: bool) -> (Vec<u8>, u32) {
    // SAFETY: sockaddr_storage is plain data.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_storage>() as u32;
    let p = (&mut ss as *mut libc::sockaddr_storage).cast();
    // SAFETY: ss has room for len bytes; len is a valid socklen_t.
    let r = unsafe {
        if peer {
            libc::getpeername(fd, p, &mut len)
        } else {
            libc::getsockname(fd, p, &mut len)
        }
    };
    ok(r as i64, if peer { "getpeername" } else { "getsockname" });
    // SAFETY: ss is at least len bytes long.
    let b = unsafe {
        std::slice::from_raw_parts(
            (&ss as *const libc::sockaddr_storage).cast::<u8>(),
            len as usize,
        )
    };
    (b.to_vec(), len)
}

fn port_of(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[2], b[3]])
}

fn send(fd: i32, data: &[u8], flags: i32) -> i64 {
    // SAFETY: valid buffer.
    unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), flags) as i64 }
}

fn recv(fd: i32, buf: &mut [u8], flags: i32) -> i64 {
    // SAFETY: valid buffer.
    unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) as i64 }
}

fn accept(fd: i32) -> i32 {
    // SAFETY: null address pointers are allowed.
    ok(
        unsafe {
            libc::accept4(
                fd,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        } as i64,
        "accept",
    ) as i32
}

fn listen(fd: i32, backlog: i32) -> i64 {
    // SAFETY: plain integers.
    unsafe { libc::listen(fd, backlog) as i64 }
}

fn getint(fd: i32, level: i32, opt: i32) -> i32 {
    let mut v = 0i32;
    let mut len = 4u32;
    // SAFETY: v and len are valid.
    ok(
        unsafe { libc::getsockopt(fd, level, opt, (&mut v as *mut i32).cast(), &mut len) } as i64,
        "getsockopt",
    );
    check_eq(len, 4, "getsockopt length");
    v
}

fn setint(fd: i32, level: i32, opt: i32, v: i32) -> i64 {
    // SAFETY: v is a valid int.
    unsafe { libc::setsockopt(fd, level, opt, (&v as *const i32).cast(), 4) as i64 }
}

fn poll1(fd: i32, events: i16, timeout: i32) -> i16 {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    ok(unsafe { libc::poll(&mut p, 1, timeout) } as i64, "poll");
    p.revents
}

/// A listener on 127.0.0.1 (port chosen by the kernel) and its address.
fn listener4() -> (i32, libc::sockaddr_in) {
    let l = sock(libc::AF_INET, libc::SOCK_STREAM);
    ok(bind4(l, &sin([127, 0, 0, 1], 0)), "bind 127.0.0.1:0");
    ok(listen(l, 8), "listen");
    let (b, len) = name(l, false);
    check_eq(len, 16, "getsockname length (sockaddr_in)");
    check(port_of(&b) != 0, "bind to port 0 picked a port");
    (l, sin([127, 0, 0, 1], port_of(&b)))
}

fn tcp4() {
    let (l, addr) = listener4();
    let c = sock(libc::AF_INET, libc::SOCK_STREAM);
    ok(connect4(c, &addr), "connect");
    expect_err(connect4(c, &addr), libc::EISCONN, "second connect");
    let s = accept(l);
    let (cl, _) = name(c, false);
    let (sp, _) = name(s, true);
    check_eq(&cl, &sp, "client's name = server's peer name");
    let (cp, _) = name(c, true);
    let (sl, _) = name(s, false);
    check_eq(&cp, &sl, "client's peer name = server's name");
    check_eq(
        &sl[4..8],
        &[127u8, 0, 0, 1][..],
        "accepted socket's address",
    );
    say("tcp4: connect, accept and names agree");

    let mut buf = [0u8; 64];
    expect_err(
        recv(s, &mut buf, libc::MSG_DONTWAIT),
        libc::EAGAIN,
        "recv on empty",
    );
    check_eq(errno(), libc::EAGAIN, "MSG_DONTWAIT errno");
    check_eq(ok(send(c, b"hello", 0), "send"), 5, "send length");
    check_eq(
        ok(recv(s, &mut buf, libc::MSG_PEEK), "peek"),
        5,
        "peek length",
    );
    check_eq(ok(recv(s, &mut buf[..3], 0), "recv 3"), 3, "partial recv");
    check_eq(&buf[..3], b"hel".as_slice(), "partial data");
    check_eq(ok(recv(s, &mut buf, 0), "recv rest"), 2, "rest");
    check_eq(&buf[..2], b"lo".as_slice(), "rest data");
    check_eq(ok(send(s, b"world!", 0), "send back"), 6, "send back");
    check_eq(
        ok(recv(c, &mut buf[..6], libc::MSG_WAITALL), "recv waitall"),
        6,
        "MSG_WAITALL fills the buffer",
    );
    check_eq(&buf[..6], b"world!".as_slice(), "data back");
    say("tcp4: data both ways, MSG_PEEK, MSG_DONTWAIT");

    ok(unsafe_shutdown(c, libc::SHUT_WR), "shutdown(SHUT_WR)");
    let r = poll1(s, libc::POLLIN | libc::POLLRDHUP | libc::POLLOUT, 1000);
    check_eq(
        r & (libc::POLLIN | libc::POLLRDHUP | libc::POLLOUT | libc::POLLHUP),
        libc::POLLIN | libc::POLLRDHUP | libc::POLLOUT,
        "poll after the peer's SHUT_WR",
    );
    check_eq(ok(recv(s, &mut buf, 0), "recv at EOF"), 0, "EOF");
    expect_err(
        send(c, b"x", libc::MSG_NOSIGNAL),
        libc::EPIPE,
        "send after SHUT_WR",
    );
    check_eq(errno(), libc::EPIPE, "errno after SHUT_WR");
    say("tcp4: SHUT_WR is EOF and POLLRDHUP at the peer, EPIPE here");

    // The peer closes: our first send still succeeds, the reset it draws fails the next one.
    umt::close(c);
    check_eq(
        ok(send(s, b"one", libc::MSG_NOSIGNAL), "send to closed peer"),
        3,
        "first send",
    );
    umt::sleep_ms(50);
    expect_err(send(s, b"two", 0), libc::EPIPE, "second send");
    check_eq(errno(), libc::EPIPE, "errno of the second send");
    check_eq(SIGPIPES.load(Ordering::SeqCst), 1, "SIGPIPE count");
    check_eq(
        getint(s, libc::SOL_SOCKET, libc::SO_ERROR),
        0,
        "SO_ERROR after the failed send took the error",
    );
    umt::close(s);
    say("tcp4: after the peer closed, one send succeeds, then EPIPE and SIGPIPE");

    // Closing with unread data resets the peer.
    let c = sock(libc::AF_INET, libc::SOCK_STREAM);
    ok(connect4(c, &addr), "connect 2");
    let s = accept(l);
    ok(send(c, b"unread", 0), "send unread");
    umt::sleep_ms(20);
    umt::close(s);
    umt::sleep_ms(20);
    expect_err(recv(c, &mut buf, 0), libc::ECONNRESET, "recv after a reset");
    check_eq(errno(), libc::ECONNRESET, "reset errno");
    check_eq(
        ok(recv(c, &mut buf, 0), "recv after the reset"),
        0,
        "then EOF",
    );
    umt::close(c);
    say("tcp4: closing with unread data resets the peer");
    umt::close(l);

    // A listener closed with a connection nobody accepted resets it.
    let (l, addr) = listener4();
    let c = sock(libc::AF_INET, libc::SOCK_STREAM);
    ok(connect4(c, &addr), "connect to a listener that will close");
    umt::close(l);
    umt::sleep_ms(20);
    expect_err(
        recv(c, &mut buf, 0),
        libc::ECONNRESET,
        "recv after the listener closed",
    );
    check_eq(errno(), libc::ECONNRESET, "unaccepted connection reset");
    umt::close(c);
    say("tcp4: closing a listener resets the connections it did not accept");
}

fn unsafe_shutdown(fd: i32, how: i32) -> i64 {
    // SAFETY: plain integers.
    unsafe { libc::shutdown(fd, how) as i64 }
}

fn refused_and_inuse() {
    // A port nobody holds: bind one, note it, close it.
    let t = sock(libc::AF_INET, libc::SOCK_STREAM);
    ok(bind4(t, &sin([127, 0, 0, 1], 0)), "bind");
    let port = port_of(&name(t, false).0);
    umt::close(t);
    let c = sock(libc::AF_INET, libc::SOCK_STREAM);
    expect_err(
        connect4(c, &sin([127, 0, 0, 1], port)),
        libc::ECONNREFUSED,
        "connect",
    );
    check_eq(errno(), libc::ECONNREFUSED, "blocking connect errno");
    umt::close(c);
    let c = sock(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK);
    let r = connect4(c, &sin([127, 0, 0, 1], port));
    let e = errno();
    check(
        r < 0 && (e == libc::EINPROGRESS || e == libc::ECONNREFUSED),
        "non-blocking refused",
    );
    if e == libc::EINPROGRESS {
        let ev = poll1(c, libc::POLLOUT, 1000);
        check(ev & libc::POLLERR != 0, "POLLERR after a refused connect");
        check_eq(
            getint(c, libc::SOL_SOCKET, libc::SO_ERROR),
            libc::ECONNREFUSED,
            "SO_ERROR",
        );
    }
    umt::close(c);
    say("refused: blocking ECONNREFUSED; non-blocking reports it through SO_ERROR");

    let (l, addr) = listener4();
    let c = sock(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK);
    let r = connect4(c, &addr);
    check(
        r == 0 || errno() == libc::EINPROGRESS,
        "non-blocking connect to a listener",
    );
    let ev = poll1(c, libc::POLLOUT, 1000);
    check(ev & libc::POLLOUT != 0, "POLLOUT once connected");
    check_eq(
        getint(c, libc::SOL_SOCKET, libc::SO_ERROR),
        0,
        "SO_ERROR of a good connect",
    );
    let lev = poll1(l, libc::POLLIN, 1000);
    check(
        lev & libc::POLLIN != 0,
        "listener readable with a pending connection",
    );
    let s = accept(l);
    umt::close(s);
    umt::close(c);
    say("nonblocking: EINPROGRESS, POLLOUT, SO_ERROR 0, listener POLLIN");

    let o = sock(libc::AF_INET, libc::SOCK_STREAM);
    expect_err(
        bind4(o, &addr),
        libc::EADDRINUSE,
        "bind to a listener's port",
    );
    check_eq(errno(), libc::EADDRINUSE, "EADDRINUSE");
    expect_err(
        bind4(o, &sin([10, 255, 254, 253], 0)),
        libc::EADDRNOTAVAIL,
        "bind to a foreign address",
    );
    check_eq(errno(), libc::EADDRNOTAVAIL, "EADDRNOTAVAIL");
    umt::close(o);
    umt::close(l);
    // Two SO_REUSEADDR sockets share a port until one listens; the other's listen fails.
    let a = sock(libc::AF_INET, libc::SOCK_STREAM);
    let b = sock(libc::AF_INET, libc::SOCK_STREAM);
    ok(
        setint(a, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1),
        "SO_REUSEADDR a",
    );
    ok(
        setint(b, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1),
        "SO_REUSEADDR b",
    );
    ok(bind4(a, &sin([127, 0, 0, 1], 0)), "bind a");
    let pa = sin([127, 0, 0, 1], port_of(&name(a, false).0));
    ok(bind4(b, &pa), "bind b to a's port");
    ok(listen(a, 1), "listen a");
    expect_err(listen(b, 1), libc::EADDRINUSE, "listen b");
    check_eq(errno(), libc::EADDRINUSE, "listen b errno");
    umt::close(a);
    umt::close(b);
    say("bind: EADDRINUSE, EADDRNOTAVAIL, SO_REUSEADDR until listen");
}

fn udp4() {
    let r = sock(libc::AF_INET, libc::SOCK_DGRAM);
    ok(bind4(r, &sin([127, 0, 0, 1], 0)), "bind r");
    let raddr = sin([127, 0, 0, 1], port_of(&name(r, false).0));
    let w = sock(libc::AF_INET, libc::SOCK_DGRAM);
    for m in [b"first".as_slice(), b"second message"] {
        // SAFETY: valid buffer and address.
        let n = unsafe {
            libc::sendto(
                w,
                m.as_ptr().cast(),
                m.len(),
                0,
                (&raddr as *const libc::sockaddr_in).cast(),
                16,
            )
        };
        check_eq(ok(n as i64, "sendto") as usize, m.len(), "sendto length");
    }
    let (wname, _) = name(w, false);
    check(port_of(&wname) != 0, "sendto bound the sender");
    let mut buf = [0u8; 64];
    // SAFETY: sockaddr_in is plain data.
    let mut from: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut flen = 16u32;
    // SAFETY: valid buffers.
    let n = unsafe {
        libc::recvfrom(
            r,
            buf.as_mut_ptr().cast(),
            buf.len(),
            0,
            (&mut from as *mut libc::sockaddr_in).cast(),
            &mut flen,
        )
    };
    check_eq(ok(n as i64, "recvfrom"), 5, "one datagram at a time");
    check_eq(flen, 16, "recvfrom address length");
    check_eq(
        u16::from_be(from.sin_port),
        port_of(&wname),
        "recvfrom port",
    );
    check_eq(
        from.sin_addr.s_addr.to_ne_bytes(),
        [127, 0, 0, 1],
        "recvfrom address",
    );
    let n = recv(r, &mut buf[..6], libc::MSG_TRUNC);
    check_eq(
        ok(n, "recv MSG_TRUNC"),
        14,
        "MSG_TRUNC returns the real length",
    );
    check_eq(&buf[..6], b"second".as_slice(), "truncated data");
    // A connected socket takes datagrams from its peer only.
    let other = sock(libc::AF_INET, libc::SOCK_DGRAM);
    ok(
        connect4(r, &sin([127, 0, 0, 1], port_of(&wname))),
        "connect r to w",
    );
    // SAFETY: valid buffer and address.
    ok(
        unsafe {
            libc::sendto(
                other,
                b"x".as_ptr().cast(),
                1,
                0,
                (&raddr as *const libc::sockaddr_in).cast(),
                16,
            )
        } as i64,
        "sendto from another socket",
    );
    expect_err(
        recv(r, &mut buf, libc::MSG_DONTWAIT),
        libc::EAGAIN,
        "filtered datagram",
    );
    expect_err(
        send(w, b"x", 0),
        libc::EDESTADDRREQ,
        "send without an address",
    );
    check_eq(errno(), libc::EDESTADDRREQ, "unconnected UDP send");
    say("udp4: sendto/recvfrom, boundaries, MSG_TRUNC, a connected socket filters senders");
    umt::close(other);
    umt::close(r);
    umt::close(w);
}

fn udp_refused() {
    let t = sock(libc::AF_INET, libc::SOCK_DGRAM);
    ok(bind4(t, &sin([127, 0, 0, 1], 0)), "bind");
    let port = port_of(&name(t, false).0);
    umt::close(t);
    let c = sock(libc::AF_INET, libc::SOCK_DGRAM);
    ok(connect4(c, &sin([127, 0, 0, 1], port)), "connect udp");
    check_eq(
        ok(send(c, b"lost", 0), "send to a dead port"),
        4,
        "send succeeds",
    );
    umt::sleep_ms(20);
    expect_err(send(c, b"again", 0), libc::ECONNREFUSED, "next send");
    check_eq(
        errno(),
        libc::ECONNREFUSED,
        "connected UDP hears ECONNREFUSED",
    );
    umt::close(c);
    say("udp: a connected socket hears ECONNREFUSED from a dead port");
}

fn tcp6() {
    let l = sock(libc::AF_INET6, libc::SOCK_STREAM);
    ok(bind6(l, &sin6([0; 16], 0)), "bind [::]:0");
    ok(listen(l, 4), "listen v6");
    let (b, len) = name(l, false);
    check_eq(len, 28, "getsockname length (sockaddr_in6)");
    let port = port_of(&b);
    // An IPv6 client over ::1.
    let c = sock(libc::AF_INET6, libc::SOCK_STREAM);
    ok(connect6(c, &sin6(LO6, port)), "connect [::1]");
    let s = accept(l);
    let (sp, _) = name(s, true);
    check_eq(&sp[8..24], &LO6[..], "peer is ::1");
    umt::close(s);
    umt::close(c);
    // An IPv4 client of the dual-stack listener: mapped addresses on the server side.
    let c = sock(libc::AF_INET, libc::SOCK_STREAM);
    ok(
        connect4(c, &sin([127, 0, 0, 1], port)),
        "connect 127.0.0.1 to [::]",
    );
    let s = accept(l);
    let (sp, splen) = name(s, true);
    check_eq(splen, 28, "accepted peer is a sockaddr_in6");
    check_eq(
        &sp[8..24],
        &[0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1][..],
        "peer is ::ffff:127.0.0.1",
    );
    // Newer Linux dropped IPV6_ADDRFORM (ENOPROTOOPT on a 6.18 host); the 6.1 we report has it. Either
    // answer is right for its kernel, and where it converts, the socket must be IPv4 after.
    if setint(s, libc::IPPROTO_IPV6, libc::IPV6_ADDRFORM, libc::AF_INET) == 0 {
        check_eq(
            getint(s, libc::SOL_SOCKET, libc::SO_DOMAIN),
            libc::AF_INET,
            "domain after ADDRFORM",
        );
        check_eq(
            name(s, true).1,
            16,
            "peer name after ADDRFORM is a sockaddr_in",
        );
    } else {
        check_eq(
            errno(),
            libc::ENOPROTOOPT,
            "IPV6_ADDRFORM refused as removed",
        );
        check_eq(
            getint(s, libc::SOL_SOCKET, libc::SO_DOMAIN),
            libc::AF_INET6,
            "domain without ADDRFORM",
        );
    }
    umt::close(s);
    umt::close(c);
    umt::close(l);
    // A v6-only listener does not take IPv4 clients.
    let l = sock(libc::AF_INET6, libc::SOCK_STREAM);
    ok(
        setint(l, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 1),
        "IPV6_V6ONLY",
    );
    ok(bind6(l, &sin6([0; 16], 0)), "bind v6only");
    ok(listen(l, 4), "listen v6only");
    let port = port_of(&name(l, false).0);
    let c = sock(libc::AF_INET, libc::SOCK_STREAM);
    expect_err(
        connect4(c, &sin([127, 0, 0, 1], port)),
        libc::ECONNREFUSED,
        "v4 to v6only",
    );
    check_eq(errno(), libc::ECONNREFUSED, "v6only refuses IPv4");
    expect_err(
        setint(l, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 0),
        libc::EINVAL,
        "IPV6_V6ONLY after bind",
    );
    umt::close(c);
    umt::close(l);
    say("tcp6: ::1, a dual-stack listener maps IPv4 clients, IPV6_ADDRFORM, IPV6_V6ONLY");
}

fn options() {
    let t = sock(libc::AF_INET, libc::SOCK_STREAM);
    let u = sock(libc::AF_INET6, libc::SOCK_DGRAM);
    check_eq(
        getint(t, libc::SOL_SOCKET, libc::SO_TYPE),
        libc::SOCK_STREAM,
        "SO_TYPE",
    );
    check_eq(
        getint(u, libc::SOL_SOCKET, libc::SO_DOMAIN),
        libc::AF_INET6,
        "SO_DOMAIN",
    );
    check_eq(
        getint(t, libc::SOL_SOCKET, libc::SO_PROTOCOL),
        libc::IPPROTO_TCP,
        "SO_PROTOCOL",
    );
    check_eq(
        getint(u, libc::SOL_SOCKET, libc::SO_PROTOCOL),
        libc::IPPROTO_UDP,
        "SO_PROTOCOL udp",
    );
    ok(
        setint(t, libc::SOL_SOCKET, libc::SO_RCVBUF, 10000),
        "SO_RCVBUF",
    );
    check_eq(
        getint(t, libc::SOL_SOCKET, libc::SO_RCVBUF),
        20000,
        "SO_RCVBUF is doubled",
    );
    ok(setint(t, libc::SOL_SOCKET, libc::SO_SNDBUF, 1), "SO_SNDBUF");
    check_eq(
        getint(t, libc::SOL_SOCKET, libc::SO_SNDBUF),
        4608,
        "SO_SNDBUF minimum",
    );
    check_eq(
        getint(t, libc::IPPROTO_TCP, libc::TCP_NODELAY),
        0,
        "TCP_NODELAY off",
    );
    ok(
        setint(t, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1),
        "TCP_NODELAY",
    );
    check_eq(
        getint(t, libc::IPPROTO_TCP, libc::TCP_NODELAY),
        1,
        "TCP_NODELAY on",
    );
    check_eq(
        getint(t, libc::IPPROTO_IP, libc::IP_TTL),
        64,
        "IP_TTL default",
    );
    ok(setint(t, libc::IPPROTO_IP, libc::IP_TOS, 0x13), "IP_TOS");
    check_eq(
        getint(t, libc::IPPROTO_IP, libc::IP_TOS),
        0x10,
        "TCP keeps its ECN bits",
    );
    check_eq(
        getint(t, libc::SOL_SOCKET, libc::SO_ACCEPTCONN),
        0,
        "SO_ACCEPTCONN",
    );
    check_eq(
        getint(u, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY),
        0,
        "IPV6_V6ONLY default",
    );
    expect_err(
        setint(t, libc::SOL_SOCKET, 9999, 1),
        libc::ENOPROTOOPT,
        "unknown option",
    );
    let ev = poll1(t, libc::POLLIN | libc::POLLOUT, 0);
    check_eq(
        ev,
        libc::POLLOUT | libc::POLLHUP,
        "poll of a fresh TCP socket",
    );
    let ev = poll1(u, libc::POLLIN | libc::POLLOUT, 0);
    check_eq(ev, libc::POLLOUT, "poll of a fresh UDP socket");
    umt::close(t);
    umt::close(u);
    say("options: SO_TYPE/DOMAIN/PROTOCOL, buffer doubling, TCP_NODELAY, IP_TTL, poll masks");
}

/// recvmsg with a control buffer: (data length, control messages as (level, type, data)).
fn recvmsg_ctl(fd: i32, buf: &mut [u8]) -> (i64, Vec<(i32, i32, Vec<u8>)>) {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut ctl = [0u64; 32];
    // SAFETY: msghdr is plain data.
    let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
    mh.msg_iov = &mut iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.as_mut_ptr().cast();
    mh.msg_controllen = size_of::<[u64; 32]>() as _;
    // SAFETY: mh points at valid buffers.
    let n = ok(unsafe { libc::recvmsg(fd, &mut mh, 0) } as i64, "recvmsg");
    let mut out = Vec::new();
    // SAFETY: the kernel filled msg_controllen bytes of ctl with cmsghdrs.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&mh);
        while !c.is_null() {
            let len = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
            let data = std::slice::from_raw_parts(libc::CMSG_DATA(c), len).to_vec();
            out.push(((*c).cmsg_level, (*c).cmsg_type, data));
            c = libc::CMSG_NXTHDR(&mh, c);
        }
    }
    (n, out)
}

fn pktinfo() {
    // IPv4: IP_PKTINFO names the destination address and lo's interface.
    let r = sock(libc::AF_INET, libc::SOCK_DGRAM);
    ok(bind4(r, &sin([0, 0, 0, 0], 0)), "bind 0.0.0.0:0");
    ok(
        setint(r, libc::IPPROTO_IP, libc::IP_PKTINFO, 1),
        "IP_PKTINFO",
    );
    ok(
        setint(r, libc::IPPROTO_IP, libc::IP_RECVTTL, 1),
        "IP_RECVTTL",
    );
    let port = port_of(&name(r, false).0);
    let w = sock(libc::AF_INET, libc::SOCK_DGRAM);
    ok(
        connect4(w, &sin([127, 0, 0, 3], port)),
        "connect to 127.0.0.3",
    );
    ok(send(w, b"pkt", 0), "send");
    let mut buf = [0u8; 16];
    let (n, c) = recvmsg_ctl(r, &mut buf);
    check_eq(n, 3, "datagram length");
    check_eq(c.len(), 2, "two control messages");
    check_eq(
        (c[0].0, c[0].1),
        (libc::IPPROTO_IP, libc::IP_PKTINFO),
        "first is IP_PKTINFO",
    );
    check_eq(&c[0].2[..4], &1i32.to_ne_bytes()[..], "ipi_ifindex is lo");
    check_eq(
        &c[0].2[8..12],
        &[127u8, 0, 0, 3][..],
        "ipi_addr is the destination",
    );
    check_eq(
        (c[1].0, c[1].1),
        (libc::IPPROTO_IP, libc::IP_TTL),
        "then IP_TTL",
    );
    check_eq(&c[1].2[..], &64i32.to_ne_bytes()[..], "TTL 64");
    umt::close(w);
    umt::close(r);
    // IPv6 over ::1 with IPV6_RECVPKTINFO.
    let r = sock(libc::AF_INET6, libc::SOCK_DGRAM);
    ok(bind6(r, &sin6(LO6, 0)), "bind [::1]:0");
    ok(
        setint(r, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 1),
        "IPV6_RECVPKTINFO",
    );
    let port = port_of(&name(r, false).0);
    let w = sock(libc::AF_INET6, libc::SOCK_DGRAM);
    let dst = sin6(LO6, port);
    // SAFETY: valid buffer and address.
    ok(
        unsafe {
            libc::sendto(
                w,
                b"six".as_ptr().cast(),
                3,
                0,
                (&dst as *const libc::sockaddr_in6).cast(),
                size_of::<libc::sockaddr_in6>() as u32,
            )
        } as i64,
        "sendto [::1]",
    );
    let (n, c) = recvmsg_ctl(r, &mut buf);
    check_eq(n, 3, "v6 datagram length");
    check_eq(c.len(), 1, "one control message");
    check_eq(
        (c[0].0, c[0].1),
        (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO),
        "IPV6_PKTINFO",
    );
    check_eq(&c[0].2[..16], &LO6[..], "ipi6_addr is ::1");
    check_eq(
        &c[0].2[16..20],
        &1i32.to_ne_bytes()[..],
        "ipi6_ifindex is lo",
    );
    umt::close(w);
    umt::close(r);
    say("pktinfo: IP_PKTINFO, IP_RECVTTL and IPV6_RECVPKTINFO describe the datagram");
}

fn main() {
    umt::init("inetsock");
    let _ = umt::workdir();
    umt::set_handler(libc::SIGPIPE, on_sigpipe as *const () as usize, 0, false);
    tcp4();
    refused_and_inuse();
    udp4();
    udp_refused();
    pktinfo();
    tcp6();
    options();
    umt::done("inetsock");
}
