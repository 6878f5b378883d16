//! Internet sockets over devices, end to end without a guest: two network namespaces, each
//! with an `eth0` whose driver hands every frame to the other's `netif_rx` (a cable), and
//! sockets on both sides talking through their smoltcp stacks.

use super::*;
use crate::dev::{self, IfAddr, NetDevOps, NetDevice, netif_rx};
use crate::{MSG_PEEK, MSG_TRUNC, MSG_WAITALL};
use std::sync::Weak;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use um_kernel::task::{FsContext, Process, Task};
use um_kernel::vfs::{Dentry, FdTable};
use um_mm::{FrameAllocator, Granule, Layout, Mm, PageCache};
use um_uapi::abi::netdevice::{ARPHRD_ETHER, IFF_BROADCAST, IFF_MULTICAST, IFF_UP};

/// One end of the cable: frames go to the other end's device.
struct Cable {
    peer: OnceLock<Weak<NetDevice>>,
    /// Drop every frame (a pulled cable).
    cut: AtomicBool,
    sent: AtomicUsize,
}

impl NetDevOps for Cable {
    fn xmit(&self, frame: &[u8]) -> bool {
        self.sent.fetch_add(1, Ordering::Relaxed);
        if self.cut.load(Ordering::Relaxed) {
            return true;
        }
        if let Some(p) = self.peer.get().and_then(Weak::upgrade) {
            netif_rx(&p, frame);
        }
        true
    }
}

struct Net {
    a: Arc<NetNs>,
    b: Arc<NetNs>,
    cable_a: Arc<Cable>,
    dev_a: Arc<NetDevice>,
}

const A_IP: &str = "10.9.0.1";
const B_IP: &str = "10.9.0.2";

/// Two namespaces wired back to back: A has 10.9.0.1/24, B 10.9.0.2/24, both up.
fn net() -> Net {
    crate::stack::init();
    let a = crate::dev::test_ns();
    let b = crate::dev::test_ns();
    let ca = Arc::new(Cable {
        peer: OnceLock::new(),
        cut: AtomicBool::new(false),
        sent: AtomicUsize::new(0),
    });
    let cb = Arc::new(Cable {
        peer: OnceLock::new(),
        cut: AtomicBool::new(false),
        sent: AtomicUsize::new(0),
    });
    let flags = IFF_BROADCAST | IFF_MULTICAST;
    let da = dev::devices(&a)
        .register(
            &a,
            "eth0",
            ARPHRD_ETHER,
            [2, 0, 0, 0, 0, 1],
            1500,
            flags,
            ca.clone(),
        )
        .unwrap();
    let db = dev::devices(&b)
        .register(
            &b,
            "eth0",
            ARPHRD_ETHER,
            [2, 0, 0, 0, 0, 2],
            1500,
            flags,
            cb.clone(),
        )
        .unwrap();
    let _ = ca.peer.set(Arc::downgrade(&db));
    let _ = cb.peer.set(Arc::downgrade(&da));
    for (ns, d, ip) in [(&a, &da, A_IP), (&b, &db, B_IP)] {
        let reg = dev::devices(ns);
        reg.add_addr(ns, IfAddr::new(d.ifindex, ip.parse().unwrap(), 24, "eth0"))
            .unwrap();
        reg.set_flags(ns, d.ifindex, IFF_UP).unwrap();
    }
    Net {
        a,
        b,
        cable_a: ca,
        dev_a: da,
    }
}

/// A task to block in (sockets wait on its waker).
fn task() -> Arc<Task> {
    let phys = Arc::new(um_mm::HeapMemory::new(1 << 20));
    let frames = Arc::new(FrameAllocator::new(phys, Granule::K4));
    let cache = Arc::new(PageCache::new(frames.clone()));
    let layout = Layout {
        task_size: 0x7f80_0000_0000,
        mmap_base: 0x7f7f_f000_0000,
        stack_top: 0x7f7f_fff0_0000,
        stack_limit: 8 << 20,
        min_addr: 0x10000,
    };
    let mm = Arc::new(Mutex::new(Mm::new(frames, cache, layout)));
    let root = Dentry::root(um_fs::tmpfs::TmpFs::new_root_inode(0o755, 0, 0));
    let fs = FsContext {
        root: root.clone(),
        cwd: root,
        umask: 0o22,
    };
    let p = Arc::new(Process::new(
        1,
        None,
        mm,
        Arc::new(Mutex::new(FdTable::default())),
        fs,
    ));
    Task::new(1, p, 0)
}

fn io(t: &Arc<Task>) -> IoCtx<'_> {
    IoCtx {
        task: t,
        nonblock: false,
        flags: 0,
    }
}

fn nb(t: &Arc<Task>) -> IoCtx<'_> {
    IoCtx {
        task: t,
        nonblock: true,
        flags: 0,
    }
}

fn sock(proto: Proto, ns: &Arc<NetNs>) -> Arc<InetSocket> {
    InetSocket::with_opts(proto, AF_INET, (0, 0), Opts::new(proto), ns.clone())
}

fn sa(s: &str) -> Vec<u8> {
    addr::encode(AF_INET, &s.parse().unwrap())
}

/// Deterministic bytes.
fn pattern(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn read_to_end(s: &InetSocket, t: &Arc<Task>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let r = s.recv(&io(t), &mut buf, 0).expect("recv");
        if r.n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..r.n]);
    }
}

fn write_all(s: &InetSocket, t: &Arc<Task>, mut data: &[u8]) {
    while !data.is_empty() {
        let n = s.send(&io(t), data, None, 0, true).expect("send");
        data = &data[n..];
    }
}

fn listener(ns: &Arc<NetNs>, port: u16) -> Arc<InetSocket> {
    let l = sock(Proto::Tcp, ns);
    l.bind(&sa(&format!("0.0.0.0:{port}")), true).unwrap();
    l.listen(8).unwrap();
    l
}

/// Connect, accept, 4 MiB each way (half-close in between), EOF on both sides, the
/// addresses each side reports.
#[test]
fn tcp_both_ways_with_half_close() {
    let n = net();
    let l = listener(&n.b, 5000);
    const N: usize = 4 << 20;
    let server = std::thread::spawn(move || {
        let t = task();
        let c = l.accept(&io(&t)).expect("accept");
        assert_eq!(c.local_addr(), format!("{B_IP}:5000").parse().unwrap());
        assert_eq!(c.peer_addr().unwrap().ip(), A_IP.parse::<IpAddr>().unwrap());
        let got = read_to_end(&c, &t);
        // The client's half-close: EOF, yet we may still send.
        assert_eq!(got.len(), N);
        assert!(got == pattern(N, 7), "client to server bytes differ");
        write_all(&c, &t, &pattern(N, 9));
        c.shutdown(SHUT_WR).unwrap();
        c.release();
        l.release();
    });
    let t = task();
    let c = sock(Proto::Tcp, &n.a);
    c.connect(&io(&t), &sa(&format!("{B_IP}:5000")))
        .expect("connect");
    let me = c.local_addr();
    assert_eq!(me.ip(), A_IP.parse::<IpAddr>().unwrap());
    assert!(me.port() >= 32768);
    assert_eq!(
        c.peer_addr().unwrap(),
        format!("{B_IP}:5000").parse().unwrap()
    );
    write_all(&c, &t, &pattern(N, 7));
    c.shutdown(SHUT_WR).unwrap();
    let back = read_to_end(&c, &t);
    assert_eq!(back.len(), N);
    assert!(back == pattern(N, 9), "server to client bytes differ");
    // EOF stays EOF; the connection is done both ways.
    let mut b = [0u8; 8];
    assert_eq!(c.recv(&io(&t), &mut b, 0).unwrap().n, 0);
    server.join().unwrap();
    let m = c.poll_mask(None);
    assert!(m & POLLIN != 0 && m & POLLRDHUP != 0, "mask {m:#x}");
    c.release();
}

/// `getsockopt(TCP_INFO)`: the state byte of a listener, an unconnected and a connected
/// socket, the connected one's MSS from eth0's MTU, and the length clamp of
/// `do_tcp_getsockopt`.
#[test]
fn tcp_info_state_mss_and_length() {
    use um_uapi::abi::inet::{TcpInfo, tcp::TCP_INFO};
    use um_uapi::abi::pod::Pod;
    let n = net();
    let l = listener(&n.b, 5003);
    let info =
        |s: &InetSocket| TcpInfo::read_le(&s.getsockopt(IPPROTO_TCP, TCP_INFO, 248).unwrap());
    assert_eq!(info(&l).tcpi_state, 10);
    let server = std::thread::spawn(move || {
        let t = task();
        let c = l.accept(&io(&t)).expect("accept");
        let i = TcpInfo::read_le(&c.getsockopt(IPPROTO_TCP, TCP_INFO, 248).unwrap());
        c.release();
        l.release();
        i
    });
    let t = task();
    let c = sock(Proto::Tcp, &n.a);
    assert_eq!(info(&c).tcpi_state, 7);
    assert_eq!(info(&c).tcpi_snd_mss, 536);
    c.connect(&io(&t), &sa(&format!("{B_IP}:5003")))
        .expect("connect");
    let i = info(&c);
    assert_eq!(i.tcpi_state, 1);
    assert_eq!(
        (i.tcpi_pmtu, i.tcpi_snd_mss, i.tcpi_advmss),
        (1500, 1460, 1460)
    );
    assert_eq!((i.tcpi_snd_cwnd, i.tcpi_total_retrans), (10, 0));
    assert_eq!(server.join().unwrap().tcpi_state, 1);
    // Longer is clamped to sizeof(struct tcp_info), shorter truncates, negative (as unsigned)
    // is the whole struct too.
    assert_eq!(
        c.getsockopt(IPPROTO_TCP, TCP_INFO, 4096).unwrap().len(),
        248
    );
    assert_eq!(c.getsockopt(IPPROTO_TCP, TCP_INFO, 1).unwrap(), vec![1]);
    assert_eq!(c.getsockopt(IPPROTO_TCP, TCP_INFO, 0).unwrap().len(), 0);
    assert_eq!(c.getsockopt(IPPROTO_TCP, TCP_INFO, -1).unwrap().len(), 248);
    c.release();
}

/// Nothing listens: the peer's RST makes the connect fail with ECONNREFUSED, blocking or
/// not; the non-blocking one says EINPROGRESS, then POLLERR|POLLHUP and SO_ERROR.
#[test]
fn refused_connects() {
    let n = net();
    let t = task();
    let c = sock(Proto::Tcp, &n.a);
    assert_eq!(
        c.connect(&io(&t), &sa(&format!("{B_IP}:5999"))),
        Err(Errno::ECONNREFUSED)
    );
    // The ephemeral port went back.
    assert_eq!(c.local_addr().port(), 0);
    let c = sock(Proto::Tcp, &n.a);
    assert_eq!(
        c.connect(&nb(&t), &sa(&format!("{B_IP}:5999"))),
        Err(Errno::EINPROGRESS)
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.poll_mask(None) & POLLERR == 0 {
        assert!(Instant::now() < deadline, "no POLLERR");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(c.poll_mask(None) & POLLHUP != 0);
    let e = c
        .getsockopt(crate::SOL_SOCKET, crate::so::SO_ERROR, 4)
        .unwrap();
    assert_eq!(
        i32::from_le_bytes(e[..4].try_into().unwrap()),
        Errno::ECONNREFUSED.get()
    );
    c.release();
}

/// A non-blocking connect: EINPROGRESS, EALREADY while under way, POLLOUT when done, then
/// a second connect says 0 and SO_ERROR is 0; MSG_PEEK, MSG_DONTWAIT and MSG_WAITALL work.
#[test]
fn nonblocking_connect_and_recv_flags() {
    let n = net();
    let t = task();
    let l = listener(&n.b, 5001);
    let c = sock(Proto::Tcp, &n.a);
    // Cut the cable so the SYN hangs: the connect stays under way.
    n.cable_a.cut.store(true, Ordering::Relaxed);
    let dst = sa(&format!("{B_IP}:5001"));
    assert_eq!(c.connect(&nb(&t), &dst), Err(Errno::EINPROGRESS));
    assert_eq!(c.connect(&nb(&t), &dst), Err(Errno::EALREADY));
    assert_eq!(c.poll_mask(None) & (POLLOUT | POLLHUP | POLLIN), 0);
    n.cable_a.cut.store(false, Ordering::Relaxed);
    // smoltcp retransmits the SYN within its RTO (a second or so).
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.poll_mask(None) & POLLOUT == 0 {
        assert!(Instant::now() < deadline, "never connected");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(c.connect(&nb(&t), &dst), Ok(()));
    assert_eq!(c.connect(&nb(&t), &dst), Err(Errno::EISCONN));
    let e = c
        .getsockopt(crate::SOL_SOCKET, crate::so::SO_ERROR, 4)
        .unwrap();
    assert_eq!(e, 0i32.to_le_bytes().to_vec());
    let s = l.accept(&io(&t)).unwrap();
    let mut b = [0u8; 16];
    assert_eq!(s.recv(&nb(&t), &mut b, 0).unwrap_err(), Errno::EAGAIN);
    write_all(&c, &t, b"hello, ");
    let server = {
        let s = s.clone();
        std::thread::spawn(move || {
            let t = task();
            let mut b = [0u8; 12];
            // MSG_WAITALL waits for the second send.
            let r = s.recv(&io(&t), &mut b, MSG_WAITALL).unwrap();
            (r.n, b)
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    write_all(&c, &t, b"world");
    let (got, b) = server.join().unwrap();
    assert_eq!(&b[..got], b"hello, world");
    write_all(&c, &t, b"peek");
    let mut p = [0u8; 4];
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.poll_mask(None) & POLLIN == 0 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(s.recv(&io(&t), &mut p, MSG_PEEK).unwrap().n, 4);
    assert_eq!(s.inq().unwrap(), 4);
    assert_eq!(s.recv(&io(&t), &mut p, 0).unwrap().n, 4);
    assert_eq!(&p, b"peek");
    // Closing with unread data resets the peer.
    write_all(&c, &t, b"unread");
    std::thread::sleep(Duration::from_millis(50));
    s.release();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match c.recv(&nb(&t), &mut [0u8; 16], 0) {
            Err(Errno::ECONNRESET) => break,
            Err(Errno::EAGAIN) => {}
            r => panic!("expected a reset, got {r:?}"),
        }
        assert!(Instant::now() < deadline, "no reset");
        std::thread::sleep(Duration::from_millis(2));
    }
    c.release();
    l.release();
}

/// UDP keeps datagram boundaries both ways and reports the sender; a connected socket takes
/// only its peer's datagrams.
#[test]
fn udp_datagrams() {
    let n = net();
    let t = task();
    let srv = sock(Proto::Udp, &n.b);
    srv.bind(&sa("0.0.0.0:6000"), true).unwrap();
    let cli = sock(Proto::Udp, &n.a);
    let dst = sa(&format!("{B_IP}:6000"));
    for len in [1usize, 100, 1400] {
        let d = pattern(len, len as u32);
        assert_eq!(cli.send(&io(&t), &d, Some(&dst), 0, true).unwrap(), len);
    }
    let mut buf = vec![0u8; 2000];
    for len in [1usize, 100, 1400] {
        let r = srv.recv(&io(&t), &mut buf, 0).unwrap();
        assert_eq!(r.n, len);
        assert_eq!(&buf[..len], &pattern(len, len as u32)[..]);
        let from = r.from.unwrap();
        assert_eq!(from.ip(), A_IP.parse::<IpAddr>().unwrap());
        assert_eq!(from.port(), cli.local_addr().port());
    }
    // Reply to the sender; the client connected to the server hears it.
    let from = SocketAddr::new(A_IP.parse().unwrap(), cli.local_addr().port());
    cli.connect(&io(&t), &dst).unwrap();
    srv.send(
        &io(&t),
        b"pong",
        Some(&addr::encode(AF_INET, &from)),
        0,
        true,
    )
    .unwrap();
    let r = cli.recv(&io(&t), &mut buf, 0).unwrap();
    assert_eq!(&buf[..r.n], b"pong");
    // A datagram from elsewhere (another port of B) is not for the connected client.
    let other = sock(Proto::Udp, &n.b);
    other
        .send(
            &io(&t),
            b"stray",
            Some(&addr::encode(AF_INET, &from)),
            0,
            true,
        )
        .unwrap();
    srv.send(
        &io(&t),
        b"again",
        Some(&addr::encode(AF_INET, &from)),
        0,
        true,
    )
    .unwrap();
    let r = cli.recv(&io(&t), &mut buf, 0).unwrap();
    assert_eq!(&buf[..r.n], b"again");
    // Truncation keeps the boundary.
    srv.send(
        &io(&t),
        &[7u8; 50],
        Some(&addr::encode(AF_INET, &from)),
        0,
        true,
    )
    .unwrap();
    let mut small = [0u8; 10];
    let r = cli.recv(&io(&t), &mut small, 0).unwrap();
    assert_eq!((r.n, r.full_len, r.flags), (10, 50, MSG_TRUNC));
    for s in [srv, cli, other] {
        s.release();
    }
}

/// One listener takes loopback connections (as before) and device ones; a connect to the
/// host's own device address stays on the loopback path.
#[test]
fn one_listener_loopback_and_device() {
    let n = net();
    let t = task();
    let l = listener(&n.b, 5002);
    let local = sock(Proto::Tcp, &n.b);
    local.connect(&io(&t), &sa("127.0.0.1:5002")).unwrap();
    let own = sock(Proto::Tcp, &n.b);
    own.connect(&io(&t), &sa(&format!("{B_IP}:5002"))).unwrap();
    assert!(!own.on_device(), "the host's own address is local");
    assert_eq!(own.local_addr().ip(), B_IP.parse::<IpAddr>().unwrap());
    let remote = sock(Proto::Tcp, &n.a);
    remote
        .connect(&io(&t), &sa(&format!("{B_IP}:5002")))
        .unwrap();
    assert!(remote.on_device());
    let mut peers = Vec::new();
    for _ in 0..3 {
        let s = l.accept(&io(&t)).unwrap();
        peers.push(s.peer_addr().unwrap().ip());
        s.release();
    }
    peers.sort();
    let want: Vec<IpAddr> = vec![
        A_IP.parse().unwrap(),
        B_IP.parse().unwrap(),
        "127.0.0.1".parse().unwrap(),
    ];
    let mut want = want;
    want.sort();
    assert_eq!(peers, want);
    // A bound-to-device-address socket is allowed; elsewhere is not.
    let b = sock(Proto::Udp, &n.b);
    b.bind(&sa(&format!("{B_IP}:0")), false).unwrap();
    let x = sock(Proto::Udp, &n.b);
    assert_eq!(x.bind(&sa("10.9.0.77:0"), false), Err(Errno::EADDRNOTAVAIL));
    // Off the device's network with no default route: unreachable.
    assert_eq!(remote_unreachable(&n.a, &t), Err(Errno::ENETUNREACH),);
    for s in [l, local, own, remote, b, x] {
        s.release();
    }
}

fn remote_unreachable(ns: &Arc<NetNs>, t: &Arc<Task>) -> SysResult<()> {
    let c = sock(Proto::Tcp, ns);
    let r = c.connect(&io(t), &sa("192.0.2.1:80"));
    c.release();
    r
}

/// Garbage frames of every length do not disturb the stack: a connection made after them
/// works.
#[test]
fn malformed_frames_are_dropped() {
    let n = net();
    let t = task();
    let mut x = 12345u32;
    for len in 0..300usize {
        let mut f = pattern(len, x);
        x = x.wrapping_mul(2654435761).wrapping_add(1);
        if f.len() >= 14 {
            // Half of them claim to be IPv4, ARP or IPv6 so the parser sees them.
            let et: [u8; 2] = match len % 4 {
                0 => [0x08, 0x00],
                1 => [0x08, 0x06],
                2 => [0x86, 0xdd],
                _ => [f[12], f[13]],
            };
            f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
            f[12..14].copy_from_slice(&et);
        }
        netif_rx(&n.dev_a, &f);
    }
    let l = listener(&n.b, 5003);
    let c = sock(Proto::Tcp, &n.a);
    c.connect(&io(&t), &sa(&format!("{B_IP}:5003"))).unwrap();
    let s = l.accept(&io(&t)).unwrap();
    write_all(&c, &t, b"ok");
    let mut b = [0u8; 2];
    assert_eq!(s.recv(&io(&t), &mut b, MSG_WAITALL).unwrap().n, 2);
    for s in [l, c, s] {
        s.release();
    }
}

/// Echo requests from a ping socket and a raw socket get their replies, across the cable and
/// on the loopback; a ping socket's identifier is its port, a raw socket sees the IP header.
#[test]
fn ping_sockets() {
    let n = net();
    let t = task();
    let mut req = vec![8u8, 0, 0, 0, 0x12, 0x34, 0, 1];
    req.extend_from_slice(b"0123456789abcdef");
    let mut buf = [0u8; 256];
    for dst in [B_IP, "127.0.0.1", A_IP] {
        let p = sock(Proto::Ping, &n.a);
        let to = sa(&format!("{dst}:0"));
        assert_eq!(
            p.send(&io(&t), &req, Some(&to), 0, true).unwrap(),
            req.len()
        );
        let id = p.local_addr().port();
        let r = p.recv(&io(&t), &mut buf, 0).unwrap();
        assert_eq!(r.n, req.len(), "{dst}");
        assert_eq!(buf[0], 0, "an echo reply from {dst}");
        assert_eq!(u16::from_be_bytes([buf[4], buf[5]]), id);
        assert_eq!(&buf[8..r.n], b"0123456789abcdef");
        assert_eq!(r.from.unwrap().ip(), dst.parse::<IpAddr>().unwrap());
        assert_eq!(icmp_sum(&buf[..r.n]), 0, "the reply's checksum");
        // Only echo requests.
        let mut bad = req.clone();
        bad[0] = 13;
        assert_eq!(
            p.send(&io(&t), &bad, Some(&to), 0, true),
            Err(Errno::EINVAL)
        );
        p.release();
    }
    let raw = sock(Proto::Raw, &n.a);
    assert_eq!(raw.sock_type(), crate::SOCK_RAW);
    let to = sa(&format!("{B_IP}:0"));
    raw.send(&io(&t), &req, Some(&to), 0, true).unwrap();
    let r = raw.recv(&io(&t), &mut buf, 0).unwrap();
    assert_eq!(r.n, 20 + req.len());
    assert_eq!(buf[0], 0x45);
    assert_eq!(buf[9], 1, "ICMP");
    assert_eq!(&buf[12..16], &[10, 9, 0, 2]);
    assert_eq!(buf[20], 0);
    assert_eq!(
        u16::from_be_bytes([buf[24], buf[25]]),
        0x1234,
        "the raw id stays"
    );
    raw.release();
}

fn icmp_sum(m: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in m.chunks(2) {
        s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// IPv6 across the cable: NDP (smoltcp's) finds the peer, TCP and UDP work, and an AF_INET6
/// socket reports the peer's IPv6 address.
#[test]
fn ipv6_tcp_and_udp() {
    let n = net();
    for (ns, ip) in [(&n.a, "fd00::1"), (&n.b, "fd00::2")] {
        let reg = dev::devices(ns);
        let eth = reg.by_name("eth0").unwrap();
        reg.add_addr(
            ns,
            IfAddr::new(eth.ifindex, ip.parse().unwrap(), 64, "eth0"),
        )
        .unwrap();
    }
    let t = task();
    let s6 = |proto, ns: &Arc<NetNs>| {
        InetSocket::with_opts(proto, AF_INET6, (0, 0), Opts::new(proto), ns.clone())
    };
    let a6 = |s: &str| addr::encode(AF_INET6, &s.parse().unwrap());
    let l = s6(Proto::Tcp, &n.b);
    l.bind(&a6("[::]:5100"), true).unwrap();
    l.listen(4).unwrap();
    let c = s6(Proto::Tcp, &n.a);
    c.connect(&io(&t), &a6("[fd00::2]:5100"))
        .expect("connect over IPv6");
    assert_eq!(c.local_addr().ip(), "fd00::1".parse::<IpAddr>().unwrap());
    let s = l.accept(&io(&t)).unwrap();
    assert_eq!(
        s.peer_addr().unwrap().ip(),
        "fd00::1".parse::<IpAddr>().unwrap()
    );
    let data = pattern(300_000, 3);
    let w = {
        let c = c.clone();
        let data = data.clone();
        std::thread::spawn(move || {
            let t = task();
            write_all(&c, &t, &data);
            c.shutdown(SHUT_WR).unwrap();
        })
    };
    assert!(read_to_end(&s, &t) == data);
    w.join().unwrap();
    let u = s6(Proto::Udp, &n.b);
    u.bind(&a6("[::]:6100"), true).unwrap();
    let v = s6(Proto::Udp, &n.a);
    v.send(&io(&t), b"six", Some(&a6("[fd00::2]:6100")), 0, true)
        .unwrap();
    let mut buf = [0u8; 16];
    let r = u.recv(&io(&t), &mut buf, 0).unwrap();
    assert_eq!(&buf[..r.n], b"six");
    assert_eq!(r.from.unwrap().ip(), "fd00::1".parse::<IpAddr>().unwrap());
    for x in [l, c, s, u, v] {
        x.release();
    }
}

/// A frame from B to A carrying an ICMPv4 error `ty`/`code` that quotes a `proto` packet
/// `src` -> `dst` (ports, then 4 more header bytes, then `payload`), checksums right.
fn icmp_err_frame(
    ty: u8,
    code: u8,
    proto: u8,
    src: SocketAddr,
    dst: SocketAddr,
    payload: &[u8],
) -> Vec<u8> {
    let ip4 = |a: SocketAddr| match a.ip() {
        IpAddr::V4(v) => v.octets(),
        IpAddr::V6(_) => unreachable!("IPv4 only"),
    };
    let iph = |proto: u8, len: usize, s: [u8; 4], d: [u8; 4]| {
        let mut h = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0];
        h[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        h.extend_from_slice(&s);
        h.extend_from_slice(&d);
        let c = icmp_sum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    };
    let mut q = iph(proto, 28 + payload.len(), ip4(src), ip4(dst));
    q.extend_from_slice(&src.port().to_be_bytes());
    q.extend_from_slice(&dst.port().to_be_bytes());
    q.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
    q.extend_from_slice(&[0, 0]);
    q.extend_from_slice(payload);
    let mut icmp = vec![ty, code, 0, 0, 0, 0, 0, 0];
    icmp.extend(q);
    let c = icmp_sum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let b: [u8; 4] = B_IP.parse::<std::net::Ipv4Addr>().unwrap().octets();
    let a: [u8; 4] = A_IP.parse::<std::net::Ipv4Addr>().unwrap().octets();
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00];
    f.extend(iph(1, 20 + icmp.len(), b, a));
    f.extend(icmp);
    f
}

fn wait_pollerr(s: &InetSocket) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.poll_mask(None) & POLLERR == 0 {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

fn so_error(s: &InetSocket) -> i32 {
    let e = s
        .getsockopt(crate::SOL_SOCKET, crate::so::SO_ERROR, 4)
        .unwrap();
    i32::from_le_bytes(e[..4].try_into().unwrap())
}

/// ICMP host unreachable for a SYN fails the connect at once with EHOSTUNREACH
/// (tcp_v4_err in SYN-SENT), not after the SYN retries; "administratively prohibited" too.
#[test]
fn icmp_unreachable_fails_a_connect() {
    let n = net();
    let t = task();
    n.cable_a.cut.store(true, Ordering::Relaxed);
    for (code, want) in [
        (1u8, Errno::EHOSTUNREACH),
        (13, Errno::EHOSTUNREACH),
        (0, Errno::ENETUNREACH),
    ] {
        let c = sock(Proto::Tcp, &n.a);
        let dst: SocketAddr = format!("{B_IP}:5999").parse().unwrap();
        assert_eq!(
            c.connect(&nb(&t), &sa(&dst.to_string())),
            Err(Errno::EINPROGRESS)
        );
        let src = SocketAddr::new(A_IP.parse().unwrap(), c.local_addr().port());
        // About another connection: nothing happens.
        let other = SocketAddr::new(src.ip(), src.port().wrapping_add(1));
        netif_rx(&n.dev_a, &icmp_err_frame(3, code, 6, other, dst, &[]));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(c.poll_mask(None) & POLLERR, 0);
        let t0 = Instant::now();
        netif_rx(&n.dev_a, &icmp_err_frame(3, code, 6, src, dst, &[]));
        assert!(wait_pollerr(&c), "code {code}: no POLLERR");
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert_eq!(so_error(&c), want.get(), "code {code}");
        c.release();
    }
}

/// UDP: a connected socket hears a port unreachable on its next call (ECONNREFUSED), an
/// unconnected one only with IP_RECVERR, whose error queue then holds the payload, the
/// original destination and the sock_extended_err; reading it clears SO_ERROR and POLLERR.
#[test]
fn icmp_port_unreachable_reaches_udp_sockets() {
    let n = net();
    let t = task();
    n.cable_a.cut.store(true, Ordering::Relaxed);
    let dst: SocketAddr = format!("{B_IP}:6001").parse().unwrap();
    let mut buf = [0u8; 64];
    // Connected.
    let c = sock(Proto::Udp, &n.a);
    c.connect(&io(&t), &sa(&dst.to_string())).unwrap();
    c.send(&io(&t), b"ping", None, 0, true).unwrap();
    let src = SocketAddr::new(A_IP.parse().unwrap(), c.local_addr().port());
    // From another peer than the connected one: ignored.
    let elsewhere: SocketAddr = format!("{B_IP}:6002").parse().unwrap();
    netif_rx(&n.dev_a, &icmp_err_frame(3, 3, 17, src, elsewhere, b"ping"));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(c.poll_mask(None) & POLLERR, 0);
    netif_rx(&n.dev_a, &icmp_err_frame(3, 3, 17, src, dst, b"ping"));
    assert!(wait_pollerr(&c));
    assert_eq!(
        c.recv(&nb(&t), &mut buf, 0).unwrap_err(),
        Errno::ECONNREFUSED
    );
    assert_eq!(c.poll_mask(None) & POLLERR, 0);
    // Not fatal (host unreachable) and no IP_RECVERR: ignored even when connected.
    netif_rx(&n.dev_a, &icmp_err_frame(3, 1, 17, src, dst, b"ping"));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(so_error(&c), 0);
    c.release();
    // Unconnected, without and then with IP_RECVERR.
    let u = sock(Proto::Udp, &n.a);
    u.send(&io(&t), b"hello", Some(&sa(&dst.to_string())), 0, true)
        .unwrap();
    let src = SocketAddr::new(A_IP.parse().unwrap(), u.local_addr().port());
    netif_rx(&n.dev_a, &icmp_err_frame(3, 3, 17, src, dst, b"hello"));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(u.poll_mask(None) & POLLERR, 0);
    assert_eq!(so_error(&u), 0);
    u.setsockopt(IPPROTO_IP, ip::IP_RECVERR, &1i32.to_le_bytes(), 4, false)
        .unwrap();
    netif_rx(&n.dev_a, &icmp_err_frame(3, 3, 17, src, dst, b"hello"));
    assert!(wait_pollerr(&u));
    let r = u.recv(&nb(&t), &mut buf, MSG_ERRQUEUE).unwrap();
    assert_eq!(&buf[..r.n], b"hello");
    assert_eq!(r.flags, MSG_ERRQUEUE);
    assert_eq!(r.from, Some(dst));
    let (lvl, ty, b) = &r.control[0];
    assert_eq!((*lvl, *ty), (IPPROTO_IP, ip::IP_RECVERR));
    // ee_errno ECONNREFUSED, SO_EE_ORIGIN_ICMP, type 3 code 3; offender B.
    assert_eq!(&b[..8], &[111, 0, 0, 0, 2, 3, 3, 0]);
    assert_eq!(&b[16..24], &[2, 0, 0, 0, 10, 9, 0, 2]);
    assert_eq!(so_error(&u), 0);
    assert_eq!(u.poll_mask(None) & POLLERR, 0);
    assert_eq!(
        u.recv(&nb(&t), &mut buf, MSG_ERRQUEUE).unwrap_err(),
        Errno::EAGAIN
    );
    u.release();
}
