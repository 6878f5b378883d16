//! Guest test `unixsock`: AF_UNIX sockets.
//!
//! * socketpair(SOCK_STREAM): both directions, shutdown(SHUT_WR) gives the peer EOF, closing the
//!   peer gives EPIPE (MSG_NOSIGNAL).
//! * socketpair(SOCK_DGRAM): message boundaries, MSG_TRUNC, MSG_PEEK.
//! * SCM_RIGHTS: the read end of a pipe passed over a socketpair still works after the sender
//!   closed its copy.
//! * Stream server bound to a path in WORKDIR: listen, connect from a child, accept, exchange,
//!   getsockname/getpeername, SO_PEERCRED; EADDRINUSE on a second bind, ECONNREFUSED to a path
//!   nobody listens on.
//! * Datagram sockets bound to paths: sendto/recvfrom with the sender's address.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then
//! UM-UNIXSOCK-OK. Usage: unixsock WORKDIR.

use umt::{check, check_eq, expect_err, ok, say};

fn socketpair(ty: i32) -> (i32, i32) {
    let mut sv = [0i32; 2];
    // SAFETY: sv has room for two ints.
    ok(
        unsafe { libc::socketpair(libc::AF_UNIX, ty | libc::SOCK_CLOEXEC, 0, sv.as_mut_ptr()) }
            as i64,
        "socketpair",
    );
    (sv[0], sv[1])
}

fn send(fd: i32, data: &[u8], flags: i32) -> i64 {
    // SAFETY: valid buffer.
    unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), flags) as i64 }
}

fn recv(fd: i32, buf: &mut [u8], flags: i32) -> i64 {
    // SAFETY: valid buffer.
    unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) as i64 }
}

fn stream_pair() {
    let (a, b) = socketpair(libc::SOCK_STREAM);
    check_eq(ok(send(a, b"ping", 0), "send a->b"), 4, "send");
    let mut buf = [0u8; 64];
    let n = ok(recv(b, &mut buf, 0), "recv") as usize;
    check_eq(&buf[..n], b"ping".as_slice(), "data a->b");
    check_eq(ok(send(b, b"pong!", 0), "send b->a"), 5, "send");
    let n = ok(recv(a, &mut buf, 0), "recv") as usize;
    check_eq(&buf[..n], b"pong!".as_slice(), "data b->a");
    // SAFETY: plain integers.
    ok(
        unsafe { libc::shutdown(a, libc::SHUT_WR) } as i64,
        "shutdown(SHUT_WR)",
    );
    check_eq(
        ok(recv(b, &mut buf, 0), "recv after peer shutdown"),
        0,
        "recv after the peer's SHUT_WR (EOF)",
    );
    umt::close(b);
    expect_err(
        send(a, b"x", libc::MSG_NOSIGNAL),
        libc::EPIPE,
        "send to a closed peer",
    );
    umt::close(a);
    say("stream socketpair: both directions, SHUT_WR gives EOF, closed peer gives EPIPE");

    // A large transfer through a stream pair with a child.
    let (a, b) = socketpair(libc::SOCK_STREAM);
    let pid = umt::fork();
    if pid == 0 {
        umt::close(a);
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        umt::write_all(b, &data, "child write to the socket");
        umt::exit_now(0);
    }
    umt::close(b);
    let mut total = 0usize;
    let mut sum = 0u64;
    let mut big = vec![0u8; 65536];
    loop {
        let n = ok(umt::read_raw(a, &mut big), "read from the socket") as usize;
        if n == 0 {
            break;
        }
        for &x in &big[..n] {
            sum = sum.wrapping_mul(31).wrapping_add(x as u64);
        }
        total += n;
    }
    let want = (0..1_000_000u32).fold(0u64, |s, i| {
        s.wrapping_mul(31).wrapping_add((i % 251) as u64)
    });
    check_eq(
        (total, sum),
        (1_000_000, want),
        "bytes and checksum through a stream socketpair",
    );
    umt::waitpid(pid, 0);
    umt::close(a);
    say("stream socketpair: 1000000 bytes from a child, checksum matches");
}

fn dgram_pair() {
    let (a, b) = socketpair(libc::SOCK_DGRAM);
    send(a, b"a", 0);
    send(a, b"bcd", 0);
    send(a, b"0123456789", 0);
    let mut buf = [0u8; 64];
    check_eq(ok(recv(b, &mut buf, 0), "recv"), 1, "first datagram length");
    check_eq(
        ok(recv(b, &mut buf, libc::MSG_PEEK), "recv MSG_PEEK"),
        3,
        "peeked datagram length",
    );
    check_eq(
        ok(recv(b, &mut buf, 0), "recv"),
        3,
        "second datagram length (after peek)",
    );
    let mut small = [0u8; 4];
    check_eq(
        ok(recv(b, &mut small, libc::MSG_TRUNC), "recv MSG_TRUNC"),
        10,
        "MSG_TRUNC returns the real length",
    );
    check_eq(&small, b"0123", "truncated datagram contents");
    // SAFETY: plain integers.
    ok(
        unsafe { libc::fcntl(b, libc::F_SETFL, libc::O_NONBLOCK) } as i64,
        "O_NONBLOCK",
    );
    expect_err(
        recv(b, &mut buf, 0),
        libc::EAGAIN,
        "recv with no datagram queued",
    );
    umt::close(a);
    umt::close(b);
    say("dgram socketpair: boundaries kept, MSG_PEEK, MSG_TRUNC, EAGAIN when empty");
}

fn send_fd(sock: i32, fd: i32) {
    let mut data = *b"F";
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(4) } as usize;
    let mut cbuf = vec![0u64; space.div_ceil(8)];
    // SAFETY: msghdr is plain data.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: the control buffer holds one cmsg with a 4-byte payload, as sized above.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(4) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut i32, fd);
    }
    // SAFETY: msg points at live buffers.
    check_eq(
        ok(
            unsafe { libc::sendmsg(sock, &msg, 0) } as i64,
            "sendmsg SCM_RIGHTS",
        ),
        1,
        "sendmsg bytes",
    );
}

fn recv_fd(sock: i32) -> i32 {
    let mut data = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: pure size computation.
    let space = unsafe { libc::CMSG_SPACE(4) } as usize;
    let mut cbuf = vec![0u64; space.div_ceil(8)];
    // SAFETY: plain data.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: msg points at live buffers.
    let n = ok(
        unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) } as i64,
        "recvmsg",
    );
    check_eq((n, data[0]), (1, b'F'), "recvmsg data byte");
    // SAFETY: the kernel filled msg_control (msg_controllen says how much).
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        check(
            !c.is_null(),
            "recvmsg returned no control message (SCM_RIGHTS lost)",
        );
        check_eq(
            ((*c).cmsg_level, (*c).cmsg_type),
            (libc::SOL_SOCKET, libc::SCM_RIGHTS),
            "cmsg level/type",
        );
        check_eq(
            (*c).cmsg_len as usize,
            libc::CMSG_LEN(4) as usize,
            "cmsg_len",
        );
        std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const i32)
    }
}

fn scm_rights() {
    let (a, b) = socketpair(libc::SOCK_STREAM);
    let (pr, pw) = umt::pipe2(0);
    send_fd(a, pr);
    umt::close(pr);
    let got = recv_fd(b);
    check(got >= 0, "received descriptor is valid");
    // SAFETY: plain integers.
    let fdfl = unsafe { libc::fcntl(got, libc::F_GETFD) };
    check_eq(
        fdfl & libc::FD_CLOEXEC,
        libc::FD_CLOEXEC,
        "MSG_CMSG_CLOEXEC sets FD_CLOEXEC on the received fd",
    );
    umt::write_all(pw, b"through-the-passed-fd", "write to the pipe");
    let mut buf = [0u8; 64];
    let n = ok(umt::read_raw(got, &mut buf), "read from the received fd") as usize;
    check_eq(
        &buf[..n],
        b"through-the-passed-fd".as_slice(),
        "data read through the passed pipe fd",
    );
    umt::close(pw);
    check_eq(
        umt::read_raw(got, &mut buf),
        0,
        "EOF on the passed fd after the writer closed",
    );
    umt::close(got);

    // Across processes: a child sends its pipe's write end; the parent writes through it.
    let pid = umt::fork();
    if pid == 0 {
        umt::close(b);
        let (cr, cw) = umt::pipe2(0);
        send_fd(a, cw);
        umt::close(cw);
        let mut buf = [0u8; 16];
        let n = umt::read_raw(cr, &mut buf);
        umt::exit_now(if n == 5 && &buf[..5] == b"hello" {
            0
        } else {
            1
        });
    }
    let wfd = recv_fd(b);
    umt::write_all(
        wfd,
        b"hello",
        "write through the write end received from the child",
    );
    umt::close(wfd);
    check_eq(
        umt::describe_status(umt::waitpid(pid, 0)),
        "exited 0".into(),
        "child that reads what the parent wrote through its passed fd",
    );
    umt::close(a);
    umt::close(b);
    say("SCM_RIGHTS: passed pipe fds work, in both directions between processes");
}

fn addr(path: &str) -> (libc::sockaddr_un, libc::socklen_t) {
    // SAFETY: plain data.
    let mut sa: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    sa.sun_family = libc::AF_UNIX as _;
    let bytes = path.as_bytes();
    check(
        bytes.len() < sa.sun_path.len(),
        format!(
            "socket path too long ({} bytes); use a shorter WORKDIR",
            bytes.len()
        ),
    );
    for (d, &s) in sa.sun_path.iter_mut().zip(bytes) {
        *d = s as libc::c_char;
    }
    let len = (std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1) as libc::socklen_t;
    (sa, len)
}

fn socket(ty: i32) -> i32 {
    // SAFETY: plain integers.
    ok(
        unsafe { libc::socket(libc::AF_UNIX, ty | libc::SOCK_CLOEXEC, 0) } as i64,
        "socket(AF_UNIX)",
    ) as i32
}

fn bind(fd: i32, path: &str) -> i64 {
    let (sa, len) = addr(path);
    // SAFETY: sa is a valid sockaddr_un of len bytes.
    unsafe { libc::bind(fd, (&sa as *const libc::sockaddr_un).cast(), len) as i64 }
}

fn connect(fd: i32, path: &str) -> i64 {
    let (sa, len) = addr(path);
    // SAFETY: as above.
    unsafe { libc::connect(fd, (&sa as *const libc::sockaddr_un).cast(), len) as i64 }
}

fn path_of(sa: &libc::sockaddr_un, len: libc::socklen_t) -> String {
    let n = (len as usize).saturating_sub(std::mem::size_of::<libc::sa_family_t>());
    let bytes: Vec<u8> = sa.sun_path[..n.min(sa.sun_path.len())]
        .iter()
        .map(|&c| c as u8)
        .take_while(|&c| c != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn by_path(dir: &str) {
    let path = format!("{dir}/srv.sock");
    let p = umt::cstr(&path);
    // SAFETY: valid C string (a leftover from an earlier run is removed).
    unsafe { libc::unlink(p.as_ptr()) };
    let srv = socket(libc::SOCK_STREAM);
    ok(bind(srv, &path), "bind to a path in WORKDIR");
    // SAFETY: zeroed stat for the kernel to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid path and stat.
    ok(
        unsafe { libc::stat(p.as_ptr(), &mut st) } as i64,
        "stat of the bound socket path",
    );
    check_eq(
        st.st_mode & libc::S_IFMT,
        libc::S_IFSOCK,
        "file type of the bound path",
    );
    // SAFETY: plain integers.
    ok(unsafe { libc::listen(srv, 4) } as i64, "listen");
    let again = socket(libc::SOCK_STREAM);
    expect_err(
        bind(again, &path),
        libc::EADDRINUSE,
        "second bind to the same path",
    );
    umt::close(again);
    say("bind: path is a socket file; second bind EADDRINUSE");

    // SAFETY: no arguments.
    let parent = unsafe { libc::getpid() };
    let pid = umt::fork();
    if pid == 0 {
        let c = socket(libc::SOCK_STREAM);
        if connect(c, &path) < 0 {
            umt::exit_now(2);
        }
        let mut buf = [0u8; 32];
        if send(c, b"hello server", 0) != 12 {
            umt::exit_now(3);
        }
        let n = recv(c, &mut buf, 0);
        umt::exit_now(if n == 12 && &buf[..12] == b"hello client" {
            0
        } else {
            4
        });
    }
    // SAFETY: plain data.
    let mut peer: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let mut plen = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: valid address buffer and length.
    let conn = ok(
        unsafe {
            libc::accept4(
                srv,
                (&mut peer as *mut libc::sockaddr_un).cast(),
                &mut plen,
                libc::SOCK_CLOEXEC,
            )
        } as i64,
        "accept4",
    ) as i32;
    check_eq(
        path_of(&peer, plen),
        String::new(),
        "accept: an unbound client's address is empty",
    );
    let mut buf = [0u8; 32];
    let n = ok(recv(conn, &mut buf, 0), "recv from the client") as usize;
    check_eq(
        &buf[..n],
        b"hello server".as_slice(),
        "data from the client",
    );
    check_eq(send(conn, b"hello client", 0), 12, "send to the client");
    // SAFETY: plain data.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut clen = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: valid buffer and length.
    ok(
        unsafe {
            libc::getsockopt(
                conn,
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&mut cred as *mut libc::ucred).cast(),
                &mut clen,
            )
        } as i64,
        "SO_PEERCRED",
    );
    check_eq(cred.pid, pid, "SO_PEERCRED pid is the connecting child's");
    // SAFETY: no arguments.
    check_eq(cred.uid, unsafe { libc::getuid() }, "SO_PEERCRED uid");
    let _ = parent;
    // SAFETY: plain data.
    let mut me: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let mut mlen = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: valid buffer and length.
    ok(
        unsafe { libc::getsockname(conn, (&mut me as *mut libc::sockaddr_un).cast(), &mut mlen) }
            as i64,
        "getsockname",
    );
    check_eq(
        path_of(&me, mlen),
        path.clone(),
        "getsockname of the accepted socket",
    );
    check_eq(
        umt::describe_status(umt::waitpid(pid, 0)),
        "exited 0".into(),
        "client child (2: connect failed, 3: send, 4: reply wrong)",
    );
    umt::close(conn);
    umt::close(srv);
    say("stream by path: connect, accept, exchange, SO_PEERCRED, getsockname");

    let c = socket(libc::SOCK_STREAM);
    expect_err(
        connect(c, &path),
        libc::ECONNREFUSED,
        "connect to a path whose socket was closed",
    );
    umt::close(c);
    // SAFETY: valid C string.
    ok(
        unsafe { libc::unlink(p.as_ptr()) } as i64,
        "unlink the socket path",
    );
    let c = socket(libc::SOCK_STREAM);
    expect_err(connect(c, &path), libc::ENOENT, "connect to a removed path");
    umt::close(c);
    say("connect: ECONNREFUSED without a listener, ENOENT after unlink");

    // Datagrams between two bound sockets.
    let pa = format!("{dir}/dg-a.sock");
    let pb = format!("{dir}/dg-b.sock");
    for q in [&pa, &pb] {
        let c = umt::cstr(q);
        // SAFETY: valid C string.
        unsafe { libc::unlink(c.as_ptr()) };
    }
    let a = socket(libc::SOCK_DGRAM);
    let b = socket(libc::SOCK_DGRAM);
    ok(bind(a, &pa), "bind dgram a");
    ok(bind(b, &pb), "bind dgram b");
    let (sb, lb) = addr(&pb);
    // SAFETY: valid buffer and address.
    let n = unsafe {
        libc::sendto(
            a,
            b"dgram".as_ptr().cast(),
            5,
            0,
            (&sb as *const libc::sockaddr_un).cast(),
            lb,
        )
    };
    check_eq(ok(n as i64, "sendto"), 5, "sendto length");
    // SAFETY: plain data.
    let mut from: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let mut flen = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    let mut buf = [0u8; 16];
    // SAFETY: valid buffers.
    let n = unsafe {
        libc::recvfrom(
            b,
            buf.as_mut_ptr().cast(),
            16,
            0,
            (&mut from as *mut libc::sockaddr_un).cast(),
            &mut flen,
        )
    };
    check_eq(ok(n as i64, "recvfrom"), 5, "recvfrom length");
    check_eq(&buf[..5], b"dgram".as_slice(), "datagram contents");
    check_eq(path_of(&from, flen), pa.clone(), "recvfrom sender address");
    umt::close(a);
    umt::close(b);
    for q in [&pa, &pb] {
        let c = umt::cstr(q);
        // SAFETY: valid C string.
        unsafe { libc::unlink(c.as_ptr()) };
    }
    say("dgram by path: sendto/recvfrom with the sender's address");
}

fn main() {
    umt::init("unixsock");
    let dir = umt::workdir();
    stream_pair();
    dgram_pair();
    scm_rights();
    by_path(&dir);
    umt::done("unixsock");
}
