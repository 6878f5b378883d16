//! Unit tests on synthetic frames against real host loopback sockets only (never another
//! address: a forbidden destination is refused before any host call, which [`Recording`]
//! proves, and the fuzz test uses a host that makes no sockets at all).

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::host::{HostNet, RealHost};
use crate::wire::{self, Mac};
use crate::*;

/// Tests run one at a time: the fd-count test must see only its own sockets.
static SERIAL: Mutex<()> = Mutex::new(());

const GMAC: Mac = GUEST_MAC_DEFAULT;
const G4: IpAddr = IpAddr::V4(GUEST_ADDR);
const GW: IpAddr = IpAddr::V4(GATEWAY);

/// The host calls a test's backend made, in order.
#[derive(Clone, Default)]
struct Calls(Arc<Mutex<Vec<String>>>);

impl Calls {
    fn list(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Records every call, then makes the real socket (always loopback in these tests).
struct Recording(Calls);

impl HostNet for Recording {
    fn tcp_connect(&mut self, to: SocketAddr) -> io::Result<TcpStream> {
        assert!(to.ip().is_loopback(), "a test tried to reach {to}");
        self.0.0.lock().unwrap().push(format!("tcp {to}"));
        RealHost.tcp_connect(to)
    }
    fn udp_connect(&mut self, to: SocketAddr) -> io::Result<UdpSocket> {
        assert!(to.ip().is_loopback(), "a test tried to reach {to}");
        self.0.0.lock().unwrap().push(format!("udp {to}"));
        RealHost.udp_connect(to)
    }
    fn icmp_connect(&mut self, to: IpAddr) -> io::Result<UdpSocket> {
        self.0.0.lock().unwrap().push(format!("icmp {to}"));
        Err(io::Error::from_raw_os_error(nix::libc::EACCES))
    }
}

/// Makes no socket: every call fails with `errno`.
struct Failing(i32, Calls);

impl HostNet for Failing {
    fn tcp_connect(&mut self, to: SocketAddr) -> io::Result<TcpStream> {
        self.1.0.lock().unwrap().push(format!("tcp {to}"));
        Err(io::Error::from_raw_os_error(self.0))
    }
    fn udp_connect(&mut self, to: SocketAddr) -> io::Result<UdpSocket> {
        self.1.0.lock().unwrap().push(format!("udp {to}"));
        Err(io::Error::from_raw_os_error(self.0))
    }
    fn icmp_connect(&mut self, to: IpAddr) -> io::Result<UdpSocket> {
        self.1.0.lock().unwrap().push(format!("icmp {to}"));
        Err(io::Error::from_raw_os_error(self.0))
    }
}

type Rx = Arc<(Mutex<VecDeque<Vec<u8>>>, Condvar)>;

/// A fake guest NIC: what the backend sends is queued here.
struct Guest {
    net: Usernet,
    rx: Rx,
    calls: Calls,
    _serial: Option<std::sync::MutexGuard<'static, ()>>,
}

#[derive(Debug, Clone)]
struct Seg {
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    ack: u32,
    flags: u8,
    window: u16,
    mss: Option<u16>,
    wscale: Option<u8>,
    payload: Vec<u8>,
}

fn cfg(opts: &str) -> Config {
    Config::parse(opts).unwrap()
}

impl Guest {
    fn new(c: Config) -> Guest {
        let calls = Calls::default();
        Self::with_host(c, Box::new(Recording(calls.clone())), calls)
    }

    fn with_host(c: Config, host: Box<dyn HostNet>, calls: Calls) -> Guest {
        Self::locked(
            c,
            host,
            calls,
            Some(SERIAL.lock().unwrap_or_else(|e| e.into_inner())),
        )
    }

    fn locked(
        c: Config,
        host: Box<dyn HostNet>,
        calls: Calls,
        serial: Option<std::sync::MutexGuard<'static, ()>>,
    ) -> Guest {
        let rx: Rx = Arc::default();
        let r2 = rx.clone();
        let to_guest = Box::new(move |f: &[u8]| {
            r2.0.lock().unwrap().push_back(f.to_vec());
            r2.1.notify_all();
            true
        });
        let net = Usernet::start_with(c, to_guest, host).unwrap();
        Guest {
            net,
            rx,
            calls,
            _serial: serial,
        }
    }

    fn send(&self, f: &[u8]) {
        self.net.transmit(f);
    }

    fn recv(&self, t: Duration) -> Option<Vec<u8>> {
        let end = Instant::now() + t;
        let mut q = self.rx.0.lock().unwrap();
        loop {
            if let Some(f) = q.pop_front() {
                return Some(f);
            }
            let now = Instant::now();
            if now >= end {
                return None;
            }
            q = self.rx.1.wait_timeout(q, end - now).unwrap().0;
        }
    }

    /// The next frame for which `pick` returns Some, skipping others.
    fn recv_map<T>(&self, t: Duration, mut pick: impl FnMut(&[u8]) -> Option<T>) -> Option<T> {
        let end = Instant::now() + t;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let f = self.recv(left)?;
            if let Some(v) = pick(&f) {
                return Some(v);
            }
        }
    }

    fn ip(&self, src: IpAddr, dst: IpAddr, proto: u8, l4: &[u8], payload: &[u8]) {
        self.send(&wire::build(
            GATEWAY_MAC,
            GMAC,
            src,
            dst,
            proto,
            l4,
            payload,
        ));
    }

    #[allow(clippy::too_many_arguments)]
    fn tcp(
        &self,
        src: SocketAddr,
        dst: SocketAddr,
        seq: u32,
        ack: u32,
        flags: u8,
        win: u16,
        opts: Option<(u16, Option<u8>)>,
        data: &[u8],
    ) {
        let h = wire::tcp_header(src.port(), dst.port(), seq, ack, flags, win, opts);
        self.ip(src.ip(), dst.ip(), wire::PROTO_TCP, &h, data);
    }

    /// The next TCP segment to `to`.
    fn recv_tcp(&self, to: SocketAddr, t: Duration) -> Option<Seg> {
        self.recv_map(t, |f| parse_seg(f).filter(|s| s.dst == to))
    }

    fn flows(&self) -> usize {
        lock(&self.net.inner.engine).flow_count()
    }
}

fn parse_ip(f: &[u8]) -> Option<(wire::Eth<'_>, wire::Ip<'_>)> {
    let eth = wire::parse_eth(f)?;
    let ip = match eth.ethertype {
        wire::ETHERTYPE_IPV4 => wire::parse_ipv4(eth.payload)?,
        wire::ETHERTYPE_IPV6 => wire::parse_ipv6(eth.payload)?,
        _ => return None,
    };
    Some((eth, ip))
}

/// Checks the IP (v4) and L4 checksums of a frame the backend built.
fn checksums_ok(ip: &wire::Ip<'_>) -> bool {
    let l4 = ip.payload;
    let base = match (ip.src, ip.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            if wire::csum_fold(wire::csum_add(0, &ip.packet[..20])) != 0 {
                return false;
            }
            if ip.proto == wire::PROTO_ICMP {
                0
            } else {
                let mut b = wire::csum_add(0, &s.octets());
                b = wire::csum_add(b, &d.octets());
                b + u32::from(ip.proto) + l4.len() as u32
            }
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let mut b = wire::csum_add(0, &s.octets());
            b = wire::csum_add(b, &d.octets());
            b + u32::from(ip.proto) + l4.len() as u32
        }
        _ => return false,
    };
    wire::csum_fold(wire::csum_add(base, l4)) == 0
}

fn parse_seg(f: &[u8]) -> Option<Seg> {
    let (_, ip) = parse_ip(f)?;
    if ip.proto != wire::PROTO_TCP {
        return None;
    }
    assert!(checksums_ok(&ip), "bad checksum on a TCP segment");
    let t = wire::parse_tcp(ip.payload)?;
    Some(Seg {
        src: SocketAddr::new(ip.src, t.sport),
        dst: SocketAddr::new(ip.dst, t.dport),
        seq: t.seq,
        ack: t.ack,
        flags: t.flags,
        window: t.window,
        mss: t.mss,
        wscale: t.wscale,
        payload: t.payload.to_vec(),
    })
}

/// (src, dst, sport, dport, payload) of a UDP datagram.
fn parse_udp(f: &[u8]) -> Option<(SocketAddr, SocketAddr, Vec<u8>, Mac)> {
    let (eth, ip) = parse_ip(f)?;
    if ip.proto != wire::PROTO_UDP {
        return None;
    }
    assert!(checksums_ok(&ip), "bad checksum on a UDP datagram");
    let u = wire::parse_udp(ip.payload)?;
    Some((
        SocketAddr::new(ip.src, u.sport),
        SocketAddr::new(ip.dst, u.dport),
        u.payload.to_vec(),
        eth.src,
    ))
}

/// (type, code, rest) of an ICMP/ICMPv6 message.
fn parse_icmp(f: &[u8]) -> Option<(IpAddr, IpAddr, u8, u8, Vec<u8>)> {
    let (_, ip) = parse_ip(f)?;
    if ip.proto != wire::PROTO_ICMP && ip.proto != wire::PROTO_ICMPV6 {
        return None;
    }
    assert!(checksums_ok(&ip), "bad checksum on an ICMP message");
    Some((
        ip.src,
        ip.dst,
        *ip.payload.first()?,
        *ip.payload.get(1)?,
        ip.payload.get(4..)?.to_vec(),
    ))
}

const T: Duration = Duration::from_secs(5);

fn sa(ip: IpAddr, port: u16) -> SocketAddr {
    SocketAddr::new(ip, port)
}

fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n).map(|i| ((i * 7 + i / 251) as u8) ^ salt).collect()
}

#[test]
fn arp_requests_for_gateway_and_dns_are_answered() {
    let g = Guest::new(cfg("restrict=loopback"));
    for (target, answered) in [
        (GATEWAY, true),
        (DNS_ADDR, true),
        (Ipv4Addr::new(10, 0, 2, 99), false),
    ] {
        let mut f = Vec::new();
        f.extend_from_slice(&wire::BROADCAST);
        f.extend_from_slice(&GMAC);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&GMAC);
        f.extend_from_slice(&GUEST_ADDR.octets());
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&target.octets());
        g.send(&f);
        let r = g.recv(Duration::from_millis(if answered { 5000 } else { 100 }));
        if !answered {
            assert!(r.is_none());
            continue;
        }
        let r = r.unwrap();
        let mac = wire::special_mac(target);
        assert_eq!(&r[0..6], &GMAC, "to the asker");
        assert_eq!(&r[6..12], &mac);
        assert_eq!(&r[12..14], &[0x08, 0x06]);
        assert_eq!(&r[20..22], &[0, 2], "a reply");
        assert_eq!(&r[22..28], &mac);
        assert_eq!(&r[28..32], &target.octets());
        assert_eq!(&r[32..38], &GMAC);
        assert_eq!(&r[38..42], &GUEST_ADDR.octets());
    }
    assert_eq!(wire::special_mac(GATEWAY), [0x52, 0x55, 0x0a, 0, 2, 2]);
    assert_eq!(g.net.guest_mac(), Some(GMAC));
}

#[test]
fn dhcp_discover_offer_request_ack() {
    use crate::dhcp::tests::{options, request};
    let g = Guest::new(cfg("restrict=loopback,mtu=1500"));
    let bcast = IpAddr::V4(Ipv4Addr::BROADCAST);
    let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    for (kind, broadcast, expect) in [(1u8, false, 2u8), (1, true, 2), (3, false, 5), (3, true, 5)]
    {
        let m = request(
            kind,
            0x1234_5678,
            GMAC,
            (kind == 3).then_some(GUEST_ADDR),
            broadcast,
            Ipv4Addr::UNSPECIFIED,
        );
        let mut f = wire::build(
            wire::BROADCAST,
            GMAC,
            any,
            bcast,
            wire::PROTO_UDP,
            &wire::udp_header(68, 67, m.len()),
            &m,
        );
        // DHCP clients send from 0.0.0.0 to 255.255.255.255.
        let _ = &mut f;
        g.send(&f);
        let r = g.recv(T).expect("a DHCP reply");
        let (src, dst, p, smac) = parse_udp(&r).unwrap();
        assert_eq!(src, sa(GW, 67));
        assert_eq!(smac, GATEWAY_MAC);
        if broadcast {
            assert_eq!(dst, sa(bcast, 68));
            assert_eq!(&r[0..6], &wire::BROADCAST);
        } else {
            assert_eq!(dst, sa(G4, 68));
            assert_eq!(&r[0..6], &GMAC);
        }
        assert_eq!(p[0], 2);
        assert_eq!(&p[4..8], &0x1234_5678u32.to_be_bytes(), "xid");
        assert_eq!(&p[16..20], &GUEST_ADDR.octets(), "yiaddr");
        assert_eq!(&p[28..34], &GMAC, "chaddr");
        let o = options(&p);
        assert_eq!(o[0], (53, vec![expect]));
        for want in [
            (54, GATEWAY.octets().to_vec()),
            (1, vec![255, 255, 255, 0]),
            (3, GATEWAY.octets().to_vec()),
            (6, DNS_ADDR.octets().to_vec()),
            (51, 86400u32.to_be_bytes().to_vec()),
        ] {
            assert!(o.contains(&want), "option {} in {o:?}", want.0);
        }
    }
    let l = g.net.lease();
    assert_eq!(
        (l.addr, l.prefix_len, l.gateway, l.dns, l.gateway_mac),
        (GUEST_ADDR, 24, GATEWAY, DNS_ADDR, GATEWAY_MAC)
    );
}

/// Opens a guest connection to `dst`; returns (guest seq after SYN, server ISN + 1).
fn handshake(g: &Guest, src: SocketAddr, dst: SocketAddr, win: u16) -> (u32, u32) {
    g.tcp(
        src,
        dst,
        1000,
        0,
        wire::SYN,
        65535,
        Some((1460, Some(7))),
        &[],
    );
    let s = g.recv_tcp(src, T).expect("SYN-ACK");
    assert_eq!(s.flags, wire::SYN | wire::ACK, "{s:?}");
    assert_eq!(s.src, dst);
    assert_eq!(s.ack, 1001);
    assert_eq!(s.mss, Some(1460));
    assert_eq!(s.wscale, Some(7));
    g.tcp(
        src,
        dst,
        1001,
        s.seq.wrapping_add(1),
        wire::ACK,
        win,
        None,
        &[],
    );
    (1001, s.seq.wrapping_add(1))
}

#[test]
fn tcp_to_host_loopback_data_both_ways_retransmit_and_fin() {
    let g = Guest::new(cfg("hostloop=on,restrict=loopback"));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let me = sa(G4, 40000);
    let dst = sa(GW, port);
    let (mut seq, mut rcv) = handshake(&g, me, dst, 2048);
    assert_eq!(g.calls.list(), vec![format!("tcp 127.0.0.1:{port}")]);
    let (mut host, _) = l.accept().unwrap();
    host.set_read_timeout(Some(T)).unwrap();

    // Guest -> host: 3 MiB, within the window the backend advertises, retransmitting what
    // is not acknowledged within 100 ms.
    const N: usize = 3 << 20;
    let up = pattern(N, 0x5a);
    let mut h2 = host.try_clone().unwrap();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = vec![0; 65536];
        while got.len() < N {
            let n = h2.read(&mut buf).unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
        got
    });
    let base = seq;
    let (mut una, mut nxt, mut wnd) = (0usize, 0usize, 65535usize);
    while una < N {
        while nxt < N && nxt - una < wnd.min(256 * 1024) {
            let len = 1460.min(N - nxt);
            g.tcp(
                me,
                dst,
                base.wrapping_add(nxt as u32),
                rcv,
                wire::ACK,
                2048,
                None,
                &up[nxt..nxt + len],
            );
            nxt += len;
        }
        match g.recv_tcp(me, Duration::from_millis(100)) {
            Some(s) => {
                assert_eq!(s.flags & wire::RST, 0);
                let a = s.ack.wrapping_sub(base) as usize;
                if a > una && a <= nxt {
                    una = a;
                }
                wnd = usize::from(s.window) << 7;
            }
            None => nxt = una,
        }
    }
    seq = base.wrapping_add(N as u32);
    assert!(reader.join().unwrap() == up, "guest->host bytes differ");

    // Host -> guest: 3 MiB; the guest drops one segment once and must get it again.
    let down = pattern(N, 0xa5);
    let d2 = down.clone();
    let mut h3 = host.try_clone().unwrap();
    let writer = std::thread::spawn(move || h3.write_all(&d2).unwrap());
    let mut got = Vec::with_capacity(N);
    let mut dropped = None;
    let mut resent = false;
    while got.len() < N {
        let s = g.recv_tcp(me, T).expect("data from the host");
        assert_eq!(s.flags & wire::RST, 0);
        assert!(s.payload.len() <= 1460);
        if s.payload.is_empty() {
            continue;
        }
        if dropped.is_none() && got.len() > 100_000 && s.seq == rcv {
            dropped = Some(s.seq);
            continue;
        }
        if Some(s.seq) == dropped {
            resent = true;
        }
        if s.seq == rcv {
            got.extend_from_slice(&s.payload);
            rcv = rcv.wrapping_add(s.payload.len() as u32);
        }
        g.tcp(me, dst, seq, rcv, wire::ACK, 2048, None, &[]);
    }
    writer.join().unwrap();
    assert!(resent, "the dropped segment was sent again");
    assert!(got == down, "host->guest bytes differ");

    // FIN host -> guest.
    host.shutdown(std::net::Shutdown::Write).unwrap();
    let s = g
        .recv_map(T, |f| {
            parse_seg(f).filter(|s| s.dst == me && s.flags & wire::FIN != 0)
        })
        .expect("FIN");
    assert_eq!(s.seq, rcv);
    rcv = rcv.wrapping_add(1);
    // Half-closed: the guest can still send.
    g.tcp(
        me,
        dst,
        seq,
        rcv,
        wire::ACK | wire::PSH,
        2048,
        None,
        b"tail",
    );
    seq = seq.wrapping_add(4);
    let mut b = [0; 4];
    host.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"tail");
    // FIN guest -> host.
    g.tcp(me, dst, seq, rcv, wire::FIN | wire::ACK, 2048, None, &[]);
    assert_eq!(host.read(&mut b).unwrap(), 0, "EOF on the host");
    let s = g
        .recv_map(T, |f| {
            parse_seg(f).filter(|s| s.dst == me && s.ack == seq.wrapping_add(1))
        })
        .expect("ACK of FIN");
    assert_eq!(s.flags & wire::RST, 0);
    assert_eq!(g.flows(), 0, "the flow is gone");
}

#[test]
fn a_lost_tail_segment_is_retransmitted_on_timeout() {
    let g = Guest::new(cfg("hostloop=on,restrict=loopback"));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let dst = sa(GW, l.local_addr().unwrap().port());
    let me = sa(G4, 40003);
    let (seq, rcv) = handshake(&g, me, dst, 2048);
    let (mut host, _) = l.accept().unwrap();
    host.write_all(b"only segment").unwrap();
    // The guest "loses" it: no ACK, so no duplicate ACKs either; only the RTO brings it back.
    let first = g
        .recv_map(T, |f| {
            parse_seg(f).filter(|s| s.dst == me && !s.payload.is_empty())
        })
        .unwrap();
    let t0 = Instant::now();
    let again = g
        .recv_map(T, |f| {
            parse_seg(f).filter(|s| s.dst == me && !s.payload.is_empty())
        })
        .expect("retransmission");
    assert_eq!(
        (again.seq, &again.payload[..]),
        (first.seq, &b"only segment"[..])
    );
    assert!(
        t0.elapsed() >= Duration::from_millis(150),
        "{:?}",
        t0.elapsed()
    );
    g.tcp(
        me,
        dst,
        seq,
        rcv.wrapping_add(12),
        wire::ACK,
        2048,
        None,
        &[],
    );
    // Acknowledged: nothing more is sent.
    assert!(
        g.recv_map(Duration::from_millis(600), |f| parse_seg(f)
            .filter(|s| s.dst == me && !s.payload.is_empty()))
            .is_none()
    );
}

#[test]
fn a_full_host_socket_closes_the_window_until_it_drains() {
    let g = Guest::new(cfg("hostloop=on,restrict=loopback"));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let dst = sa(GW, l.local_addr().unwrap().port());
    let me = sa(G4, 40004);
    let (base, rcv) = handshake(&g, me, dst, 2048);
    let (mut host, _) = l.accept().unwrap();
    // The host application does not read: the guest sends until the backend's ACK
    // advertises a zero window (the host socket took no more), at most 256 MiB.
    let chunk = vec![0x42u8; 1460];
    let (mut una, mut nxt, mut wnd) = (0u64, 0u64, 65535u64);
    let mut closed = false;
    while !closed && una < 256 << 20 {
        while nxt - una < wnd.min(512 * 1024) {
            g.tcp(
                me,
                dst,
                base.wrapping_add(nxt as u32),
                rcv,
                wire::ACK,
                2048,
                None,
                &chunk,
            );
            nxt += 1460;
        }
        match g.recv_tcp(me, Duration::from_millis(100)) {
            Some(s) => {
                let a = u64::from(s.ack.wrapping_sub(base.wrapping_add(una as u32))) + una;
                if a > una && a <= nxt {
                    una = a;
                }
                wnd = u64::from(s.window) << 7;
                closed = s.window == 0;
            }
            None => nxt = una,
        }
    }
    assert!(closed, "the window closed");
    assert!(una > 0);
    // The host drains it: a window update follows without the guest sending anything.
    let total = una;
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0; 1 << 16];
        let mut got = 0u64;
        while got < total {
            got += host.read(&mut buf).unwrap() as u64;
        }
        got
    });
    let upd = g
        .recv_map(T, |f| parse_seg(f).filter(|s| s.dst == me && s.window > 0))
        .expect("window update");
    assert_eq!(upd.ack, base.wrapping_add(una as u32));
    assert_eq!(reader.join().unwrap(), total);
}

#[test]
fn guest_rst_resets_the_host_and_host_rst_reaches_the_guest() {
    let g = Guest::new(cfg("hostloop=on,restrict=loopback"));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let dst = sa(GW, l.local_addr().unwrap().port());
    let me = sa(G4, 40001);
    let (seq, rcv) = handshake(&g, me, dst, 2048);
    let (mut host, _) = l.accept().unwrap();
    g.tcp(me, dst, seq, rcv, wire::RST | wire::ACK, 0, None, &[]);
    host.set_read_timeout(Some(T)).unwrap();
    let e = host.read(&mut [0; 8]).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::ConnectionReset);

    // A host peer that resets: the guest gets an RST.
    let me = sa(G4, 40002);
    let (_, _) = handshake(&g, me, dst, 2048);
    let (host, _) = l.accept().unwrap();
    nix::sys::socket::setsockopt(
        &host,
        nix::sys::socket::sockopt::Linger,
        &nix::libc::linger {
            l_onoff: 1,
            l_linger: 0,
        },
    )
    .unwrap();
    drop(host);
    let s = g
        .recv_map(T, |f| {
            parse_seg(f).filter(|s| s.dst == me && s.flags & (wire::RST | wire::FIN) != 0)
        })
        .expect("RST");
    assert_ne!(s.flags & wire::RST, 0, "{s:?}");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(g.flows(), 0);
}

#[test]
fn hostloop_off_is_rst_without_a_host_connect() {
    let g = Guest::new(cfg("hostloop=off"));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let me = sa(G4, 40010);
    let dst = sa(GW, l.local_addr().unwrap().port());
    g.tcp(
        me,
        dst,
        5000,
        0,
        wire::SYN,
        65535,
        Some((1460, Some(7))),
        &[],
    );
    let s = g.recv_tcp(me, T).expect("RST");
    assert_eq!(s.flags, wire::RST | wire::ACK);
    assert_eq!(s.ack, 5001);
    assert!(g.calls.list().is_empty(), "{:?}", g.calls.list());
    assert!(l.accept().is_err(), "nothing reached the listener");
    // UDP and ping to the gateway without hostloop: "administratively prohibited" for UDP,
    // while the gateway answers pings itself.
    g.ip(G4, GW, wire::PROTO_UDP, &wire::udp_header(5000, 7, 1), b"x");
    let (_, _, ty, code, _) = g.recv_map(T, parse_icmp).unwrap();
    assert_eq!((ty, code), (3, 13));
    g.ip(
        G4,
        GW,
        wire::PROTO_ICMP,
        &[8, 0, 0, 0, 0x12, 0x34, 0, 1],
        b"ping!",
    );
    let (src, dst, ty, code, rest) = g.recv_map(T, parse_icmp).unwrap();
    assert_eq!((src, dst, ty, code), (GW, G4, 0, 0));
    assert_eq!(rest, [0x12, 0x34, 0, 1, b'p', b'i', b'n', b'g', b'!']);
    assert!(g.calls.list().is_empty());
}

#[test]
fn restrict_loopback_refuses_other_destinations_without_a_host_call() {
    let g = Guest::new(cfg("restrict=loopback,hostloop=on"));
    let far = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    let me = sa(G4, 40020);
    g.tcp(
        me,
        sa(far, 80),
        7,
        0,
        wire::SYN,
        65535,
        Some((1460, None)),
        &[],
    );
    let s = g.recv_tcp(me, T).expect("RST");
    assert_eq!(
        (s.flags, s.ack, s.src),
        (wire::RST | wire::ACK, 8, sa(far, 80))
    );
    g.ip(
        G4,
        far,
        wire::PROTO_UDP,
        &wire::udp_header(5000, 53, 3),
        b"dns",
    );
    let (src, _, ty, code, rest) = g.recv_map(T, parse_icmp).unwrap();
    assert_eq!((src, ty, code), (far, 3, 13));
    assert_eq!(
        rest.len(),
        4 + 20 + 8 + 3,
        "unused + the whole original (within the 576-byte quote of RFC 1812 4.3.2.3)"
    );
    g.ip(G4, far, wire::PROTO_ICMP, &[8, 0, 0, 0, 0, 1, 0, 1], b"p");
    let (_, _, ty, code, _) = g.recv_map(T, parse_icmp).unwrap();
    assert_eq!((ty, code), (3, 13));
    // Host loopback by other names: the guest's own 127.0.0.1, 0.0.0.0, v4-mapped v6.
    for (i, d) in [
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)),
    ]
    .into_iter()
    .enumerate()
    {
        let me = sa(G4, 40030 + i as u16);
        g.tcp(me, sa(d, 80), 7, 0, wire::SYN, 65535, None, &[]);
        assert_eq!(g.recv_tcp(me, T).expect("RST").flags, wire::RST | wire::ACK);
    }
    g.tcp(
        me,
        sa(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 80),
        7,
        0,
        wire::SYN,
        65535,
        None,
        &[],
    );
    assert!(
        g.recv(Duration::from_millis(100)).is_none(),
        "0.0.0.0 is dropped"
    );
    assert!(g.calls.list().is_empty(), "{:?}", g.calls.list());
    // Without restrict too, host loopback by another name is refused before any host call.
    let e = &lock(&g.net.inner.engine);
    assert_eq!(
        e.map(wire::PROTO_TCP, "[::ffff:127.0.0.1]:80".parse().unwrap()),
        Err(crate::engine::Deny::NoRoute)
    );
    assert_eq!(
        e.map(wire::PROTO_TCP, "127.0.0.1:80".parse().unwrap()),
        Err(crate::engine::Deny::Prohibited)
    );
    assert_eq!(
        e.map(wire::PROTO_TCP, sa(GW, 80)),
        Ok("127.0.0.1:80".parse().unwrap())
    );
}

#[test]
fn refused_and_fd_exhaustion_are_rst() {
    let g = Guest::new(cfg("hostloop=on,restrict=loopback"));
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let me = sa(G4, 40040);
    g.tcp(
        me,
        sa(GW, port),
        99,
        0,
        wire::SYN,
        65535,
        Some((1460, Some(7))),
        &[],
    );
    let s = g.recv_tcp(me, T).expect("RST for ECONNREFUSED");
    assert_eq!((s.flags, s.ack), (wire::RST | wire::ACK, 100));
    assert_eq!(g.flows(), 0);
    drop(g);
    let calls = Calls::default();
    let g = Guest::with_host(
        cfg("hostloop=on"),
        Box::new(Failing(nix::libc::EMFILE, calls.clone())),
        calls,
    );
    g.tcp(me, sa(GW, 80), 99, 0, wire::SYN, 65535, None, &[]);
    let s = g.recv_tcp(me, T).expect("RST for EMFILE");
    assert_eq!((s.flags, s.ack), (wire::RST | wire::ACK, 100));
    assert_eq!(g.calls.list(), vec!["tcp 127.0.0.1:80"]);
    // A segment for no connection: RST (RFC 9293 3.10.7.1).
    g.tcp(me, sa(GW, 80), 5, 77, wire::ACK, 100, None, b"zz");
    let s = g.recv_tcp(me, T).expect("RST");
    assert_eq!((s.flags, s.seq), (wire::RST, 77));
}

#[test]
fn udp_echo_keeps_datagram_boundaries_and_refused_is_icmp() {
    let g = Guest::new(cfg("hostloop=on,restrict=loopback"));
    let echo = UdpSocket::bind("127.0.0.1:0").unwrap();
    echo.set_read_timeout(Some(T)).unwrap();
    let port = echo.local_addr().unwrap().port();
    let sizes = [1usize, 500, 1400, 0, 1472];
    let e2 = echo.try_clone().unwrap();
    let t = std::thread::spawn(move || {
        let mut buf = [0; 2000];
        for _ in 0..sizes.len() {
            let (n, peer) = e2.recv_from(&mut buf).unwrap();
            e2.send_to(&buf[..n], peer).unwrap();
        }
    });
    let me = sa(G4, 5353);
    for (i, &n) in sizes.iter().enumerate() {
        let d = pattern(n, i as u8);
        g.ip(
            G4,
            GW,
            wire::PROTO_UDP,
            &wire::udp_header(5353, port, n),
            &d,
        );
        let (src, dst, p, _) = g.recv_map(T, parse_udp).expect("echo");
        assert_eq!((src, dst), (sa(GW, port), me));
        assert_eq!(p, d, "datagram {i}");
    }
    t.join().unwrap();
    assert_eq!(
        g.calls.list(),
        vec![format!("udp 127.0.0.1:{port}")],
        "one socket per flow"
    );
    drop(echo);
    // Nobody on the port any more: the host's ECONNREFUSED is ICMP port unreachable.
    g.ip(
        G4,
        GW,
        wire::PROTO_UDP,
        &wire::udp_header(5353, port, 1),
        b"?",
    );
    let (src, dst, ty, code, rest) = g.recv_map(T, parse_icmp).expect("port unreachable");
    assert_eq!((src, dst, ty, code), (GW, G4, 3, 3));
    assert_eq!(
        &rest[4 + 20..4 + 24],
        &[5353u16.to_be_bytes(), port.to_be_bytes()].concat()[..]
    );
    // The guest's own datagram is quoted whole, so its error queue gets its payload.
    assert_eq!(&rest[4 + 28..], b"?");
}

#[test]
fn udp_flows_idle_out() {
    let g = Guest::new(cfg("hostloop=on,restrict=loopback"));
    let host = UdpSocket::bind("127.0.0.1:0").unwrap();
    host.set_read_timeout(Some(T)).unwrap();
    let port = host.local_addr().unwrap().port();
    g.ip(
        G4,
        GW,
        wire::PROTO_UDP,
        &wire::udp_header(6000, port, 1),
        b"a",
    );
    let mut b = [0; 4];
    host.recv_from(&mut b).unwrap();
    assert_eq!(g.flows(), 1);
    let now = Instant::now();
    lock(&g.net.inner.engine).timers(now + Duration::from_secs(30));
    assert_eq!(g.flows(), 1, "not idle yet");
    lock(&g.net.inner.engine).timers(now + Duration::from_secs(61));
    assert_eq!(g.flows(), 0, "closed after 60 s idle");
}

#[test]
fn the_flow_table_is_bounded() {
    let g = Guest::new(cfg("hostloop=on,restrict=loopback"));
    lock(&g.net.inner.engine).max_flows = 2;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let dst = sa(GW, l.local_addr().unwrap().port());
    handshake(&g, sa(G4, 40100), dst, 2048);
    handshake(&g, sa(G4, 40101), dst, 2048);
    // Full: a third connection is refused (RST) without a host connect.
    let me = sa(G4, 40102);
    g.tcp(me, dst, 1, 0, wire::SYN, 65535, None, &[]);
    let s = g.recv_tcp(me, T).expect("RST");
    assert_eq!((s.flags, s.ack), (wire::RST | wire::ACK, 2));
    assert_eq!(g.calls.list().len(), 2);
    assert_eq!(g.flows(), 2);
    // UDP flows make room by replacing the one idle longest; TCP flows are never evicted.
    lock(&g.net.inner.engine).max_flows = 3;
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    u.set_read_timeout(Some(T)).unwrap();
    let up = u.local_addr().unwrap().port();
    let mut b = [0; 4];
    for sport in [7001, 7002, 7003] {
        g.ip(
            G4,
            GW,
            wire::PROTO_UDP,
            &wire::udp_header(sport, up, 1),
            b"u",
        );
        u.recv_from(&mut b).unwrap();
        assert_eq!(g.flows(), 3);
    }
    g.tcp(me, dst, 1, 0, wire::SYN, 65535, None, &[]);
    assert_eq!(g.recv_tcp(me, T).expect("RST").flags, wire::RST | wire::ACK);
}

#[test]
fn dns_is_relayed_to_the_upstream() {
    let up = UdpSocket::bind("127.0.0.1:0").unwrap();
    up.set_read_timeout(Some(T)).unwrap();
    let upa = up.local_addr().unwrap();
    let g = Guest::new(cfg(&format!("restrict=loopback,dns={upa}")));
    let q =
        b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01";
    g.ip(
        G4,
        IpAddr::V4(DNS_ADDR),
        wire::PROTO_UDP,
        &wire::udp_header(33333, 53, q.len()),
        q,
    );
    let mut buf = [0; 512];
    let (n, peer) = up.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], q);
    let mut a = q.to_vec();
    a[2] = 0x81;
    a[3] = 0x80;
    a.extend_from_slice(b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\x7f\x00\x00\x01");
    up.send_to(&a, peer).unwrap();
    let (src, dst, p, smac) = g.recv_map(T, parse_udp).expect("answer");
    assert_eq!((src, dst), (sa(IpAddr::V4(DNS_ADDR), 53), sa(G4, 33333)));
    assert_eq!(smac, [0x52, 0x55, 10, 0, 2, 3]);
    assert_eq!(p, a);
    // An answer larger than the MTU reaches the guest as IPv4 fragments.
    let big = pattern(3000, 9);
    up.send_to(&big, peer).unwrap();
    let mut joined = Vec::new();
    let mut more = true;
    while more {
        let f = g.recv(T).expect("a fragment");
        assert!(f.len() <= 14 + 1500);
        let ip = &f[14..];
        let fo = u16::from_be_bytes([ip[6], ip[7]]);
        assert_eq!(usize::from(fo & 0x1fff) * 8, joined.len());
        more = fo & 0x2000 != 0;
        joined.extend_from_slice(&ip[20..]);
    }
    assert_eq!(&joined[8..], &big[..], "the datagram after its UDP header");
    assert_eq!(g.calls.list(), vec![format!("udp {upa}")]);
    // Not port 53 at the DNS address: refused, no host call.
    g.ip(
        G4,
        IpAddr::V4(DNS_ADDR),
        wire::PROTO_UDP,
        &wire::udp_header(33333, 54, 1),
        b"x",
    );
    let (_, _, ty, code, _) = g.recv_map(T, parse_icmp).unwrap();
    assert_eq!((ty, code), (3, 13));
    assert_eq!(g.calls.list().len(), 1);
}

#[test]
fn dns_over_tcp_is_relayed() {
    let up = TcpListener::bind("127.0.0.1:0").unwrap();
    let upa = up.local_addr().unwrap();
    let g = Guest::new(cfg(&format!("restrict=loopback,dns={upa}")));
    let me = sa(G4, 40050);
    let (seq, rcv) = handshake(&g, me, sa(IpAddr::V4(DNS_ADDR), 53), 2048);
    let (mut s, _) = up.accept().unwrap();
    g.tcp(
        me,
        sa(IpAddr::V4(DNS_ADDR), 53),
        seq,
        rcv,
        wire::ACK | wire::PSH,
        2048,
        None,
        b"\x00\x02hi",
    );
    let mut b = [0; 4];
    s.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"\x00\x02hi");
    s.write_all(b"\x00\x02yo").unwrap();
    let d = g
        .recv_map(T, |f| {
            parse_seg(f).filter(|x| x.dst == me && !x.payload.is_empty())
        })
        .unwrap();
    assert_eq!(
        (d.src, &d.payload[..]),
        (sa(IpAddr::V4(DNS_ADDR), 53), &b"\x00\x02yo"[..])
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn hostfwd_tcp_opens_the_guest_side() {
    let port = free_port();
    let g = Guest::new(cfg(&format!(
        "restrict=loopback,hostfwd=tcp:127.0.0.1:{port}-:80"
    )));
    let mut host = TcpStream::connect(("127.0.0.1", port)).unwrap();
    host.set_read_timeout(Some(T)).unwrap();
    let syn = g
        .recv_map(T, |f| parse_seg(f).filter(|s| s.dst == sa(G4, 80)))
        .expect("SYN to the guest");
    assert_eq!(syn.flags, wire::SYN);
    assert_eq!(syn.src.ip(), GW);
    assert!(syn.mss.is_some() && syn.wscale.is_some());
    // The guest's SYN-ACK.
    let me = sa(G4, 80);
    g.tcp(
        me,
        syn.src,
        9000,
        syn.seq.wrapping_add(1),
        wire::SYN | wire::ACK,
        65535,
        Some((1460, Some(7))),
        &[],
    );
    let ack = g.recv_tcp(me, T).expect("ACK");
    assert_eq!((ack.flags & wire::ACK, ack.ack), (wire::ACK, 9001));
    g.tcp(
        me,
        syn.src,
        9001,
        syn.seq.wrapping_add(1),
        wire::ACK | wire::PSH,
        2048,
        None,
        b"hello",
    );
    let mut b = [0; 5];
    host.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"hello");
    host.write_all(b"world").unwrap();
    let d = g
        .recv_map(T, |f| {
            parse_seg(f).filter(|x| x.dst == me && !x.payload.is_empty())
        })
        .unwrap();
    assert_eq!(d.payload, b"world");
    assert_eq!(d.seq, syn.seq.wrapping_add(1));
    assert!(
        g.calls.list().is_empty(),
        "forwarding makes no outgoing host call"
    );

    // A bad MTU in a hand-built Config is refused, not a panic later.
    let bad = Config {
        mtu: 100,
        ..cfg("")
    };
    assert!(Usernet::start(bad, Box::new(|_: &[u8]| true)).is_err());
    // A port in use is an error that names it.
    let e = Usernet::start(
        cfg(&format!("hostfwd=tcp:127.0.0.1:{port}-:80")),
        Box::new(|_: &[u8]| true),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
}

#[test]
fn hostfwd_udp_round_trip() {
    let port = free_port();
    let g = Guest::new(cfg(&format!("restrict=loopback,hostfwd=udp::{port}-:53")));
    let host = UdpSocket::bind("127.0.0.1:0").unwrap();
    host.set_read_timeout(Some(T)).unwrap();
    host.send_to(b"query", ("127.0.0.1", port)).unwrap();
    let (src, dst, p, _) = g.recv_map(T, parse_udp).expect("datagram to the guest");
    assert_eq!((src.ip(), dst, &p[..]), (GW, sa(G4, 53), &b"query"[..]));
    g.ip(
        G4,
        GW,
        wire::PROTO_UDP,
        &wire::udp_header(53, src.port(), 6),
        b"answer",
    );
    let mut b = [0; 16];
    let (n, from) = host.recv_from(&mut b).unwrap();
    assert_eq!((&b[..n], from.port()), (&b"answer"[..], port));
}

#[test]
fn ndp_and_router_advertisement() {
    let g = Guest::new(Config {
        ipv6: true,
        ..cfg("restrict=loopback")
    });
    let me6: IpAddr = "fd00::5054:ff:fe12:3456".parse().unwrap();
    let ll: IpAddr = "fe80::5054:ff:fe12:3456".parse().unwrap();
    // NS for fd00::2.
    let mut ns = vec![135, 0, 0, 0, 0, 0, 0, 0];
    ns.extend_from_slice(&GW6.octets());
    ns.extend_from_slice(&[1, 1]);
    ns.extend_from_slice(&GMAC);
    g.ip(
        me6,
        "ff02::1:ff00:2".parse().unwrap(),
        wire::PROTO_ICMPV6,
        &ns,
        &[],
    );
    let (src, dst, ty, _, rest) = g.recv_map(T, parse_icmp).expect("NA");
    assert_eq!((src, dst, ty), (IpAddr::V6(GW6), me6, 136));
    assert_eq!(rest[0] & 0x40, 0x40, "solicited");
    assert_eq!(&rest[4..20], &GW6.octets());
    assert_eq!(&rest[20..28], &[2, 1, 0x52, 0x55, 10, 0, 2, 2]);
    // RS -> RA with the prefix and RDNSS.
    g.ip(
        ll,
        "ff02::2".parse().unwrap(),
        wire::PROTO_ICMPV6,
        &[133, 0, 0, 0, 0, 0, 0, 0],
        &[],
    );
    let (src, dst, ty, _, rest) = g.recv_map(T, parse_icmp).expect("RA");
    assert_eq!((src, dst, ty), (IpAddr::V6(GW6_LL), ll, 134));
    let opts = &rest[12..];
    let mut i = 0;
    let mut saw = (false, false);
    while i + 2 <= opts.len() {
        let (kind, len) = (opts[i], usize::from(opts[i + 1]) * 8);
        if kind == 3 {
            assert_eq!(opts[i + 2], 64);
            assert_eq!(opts[i + 3] & 0xc0, 0xc0, "on-link, autonomous");
            assert_eq!(&opts[i + 16..i + 32], &PREFIX6.octets());
            saw.0 = true;
        }
        if kind == 25 {
            assert_eq!(&opts[i + 8..i + 24], &DNS6.octets());
            saw.1 = true;
        }
        i += len.max(8);
    }
    assert_eq!(saw, (true, true));
    // Ping the v6 gateway.
    g.ip(
        me6,
        IpAddr::V6(GW6),
        wire::PROTO_ICMPV6,
        &[128, 0, 0, 0, 0, 7, 0, 1],
        b"6",
    );
    let (_, _, ty, _, rest) = g.recv_map(T, parse_icmp).expect("echo reply");
    assert_eq!((ty, &rest[..]), (129, &[0, 7, 0, 1, b'6'][..]));
}

#[test]
fn ipv6_without_host_ipv6_is_unreachable_at_once() {
    let g = Guest::new(Config {
        ipv6: false,
        ..cfg("hostloop=on")
    });
    let me: SocketAddr = "[fd00::15]:40060".parse().unwrap();
    let t0 = Instant::now();
    g.tcp(
        me,
        sa(IpAddr::V6(GW6), 80),
        1,
        0,
        wire::SYN,
        65535,
        None,
        &[],
    );
    let (_, dst, ty, code, _) = g.recv_map(T, parse_icmp).expect("ICMPv6 unreachable");
    assert_eq!((dst, ty, code), (me.ip(), 1, 0));
    assert!(t0.elapsed() < Duration::from_secs(1));
    assert!(g.calls.list().is_empty());
    // No RA: the guest configures no v6 address or route.
    g.ip(
        "fe80::1".parse().unwrap(),
        "ff02::2".parse().unwrap(),
        wire::PROTO_ICMPV6,
        &[133, 0, 0, 0, 0, 0, 0, 0],
        &[],
    );
    assert!(g.recv(Duration::from_millis(100)).is_none());
}

#[test]
fn ipv6_tcp_to_host_loopback() {
    if !crate::config::host_has_ipv6() {
        // No ::1 here: then IPv6 must default to off (the unreachable path is tested above).
        assert!(!Config::default().ipv6);
        return;
    }
    let g = Guest::new(Config {
        ipv6: true,
        ..cfg("hostloop=on,restrict=loopback")
    });
    let l = TcpListener::bind("[::1]:0").unwrap();
    let me: SocketAddr = "[fd00::15]:40070".parse().unwrap();
    let dst = sa(IpAddr::V6(GW6), l.local_addr().unwrap().port());
    g.tcp(
        me,
        dst,
        1000,
        0,
        wire::SYN,
        65535,
        Some((1440, Some(7))),
        &[],
    );
    let s = g.recv_tcp(me, T).expect("SYN-ACK");
    assert_eq!(s.flags, wire::SYN | wire::ACK);
    assert_eq!(s.mss, Some(1440), "MTU 1500 - 60");
    let (mut h, _) = l.accept().unwrap();
    g.tcp(
        me,
        dst,
        1001,
        s.seq.wrapping_add(1),
        wire::ACK | wire::PSH,
        2048,
        None,
        b"v6!",
    );
    let mut b = [0; 3];
    h.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"v6!");
    assert_eq!(g.calls.list(), vec![format!("tcp [::1]:{}", dst.port())]);
}

#[test]
fn ping_socket_refused_is_prohibited() {
    // Without restrict the policy allows 198.51.100.1, so the host is asked for a ping
    // socket; the test double refuses it as ping_group_range "1 0" does (no packet leaves).
    let g = Guest::new(cfg(""));
    let far = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1));
    g.ip(G4, far, wire::PROTO_ICMP, &[8, 0, 0, 0, 0, 1, 0, 1], b"p");
    let (src, _, ty, code, _) = g.recv_map(T, parse_icmp).unwrap();
    assert_eq!((src, ty, code), (far, 3, 13));
    assert_eq!(g.calls.list(), vec!["icmp 198.51.100.1"]);
}

#[test]
fn nic_backpressure_keeps_frames_until_rx_ready() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let full = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let got: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let (f2, g2) = (full.clone(), got.clone());
    let net = Usernet::start(
        cfg("restrict=loopback"),
        Box::new(move |f: &[u8]| {
            if f2.load(std::sync::atomic::Ordering::SeqCst) {
                return false;
            }
            g2.lock().unwrap().push(f.to_vec());
            true
        }),
    )
    .unwrap();
    for id in 0..3u8 {
        let f = wire::build(
            GATEWAY_MAC,
            GMAC,
            G4,
            GW,
            wire::PROTO_ICMP,
            &[8, 0, 0, 0, 0, id, 0, 1],
            &[],
        );
        net.transmit(&f);
    }
    assert!(got.lock().unwrap().is_empty());
    full.store(false, std::sync::atomic::Ordering::SeqCst);
    net.rx_ready();
    let ids: Vec<u8> = got
        .lock()
        .unwrap()
        .iter()
        .map(|f| parse_icmp(f).unwrap().4[1])
        .collect();
    assert_eq!(ids, [0, 1, 2], "all kept, in order");
}

fn socket_fds() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p.starts_with("socket:") || p.contains("eventpoll") || p.contains("eventfd"))
        .collect()
}

#[test]
fn drop_closes_every_host_socket() {
    let (p1, p2) = (free_port(), free_port());
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let echo = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (lport, uport) = (
        l.local_addr().unwrap().port(),
        echo.local_addr().unwrap().port(),
    );
    let opts = format!("hostloop=on,restrict=loopback,hostfwd=tcp::{p1}-:80,hostfwd=udp::{p2}-:53");
    // Held to the end: dropping the guest must not let another test start meanwhile.
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = socket_fds();
    let calls = Calls::default();
    let g = Guest::locked(cfg(&opts), Box::new(Recording(calls.clone())), calls, None);
    let me = sa(G4, 40080);
    handshake(&g, me, sa(GW, lport), 2048);
    let (h, _) = l.accept().unwrap();
    g.ip(
        G4,
        GW,
        wire::PROTO_UDP,
        &wire::udp_header(5000, uport, 1),
        b"x",
    );
    let mut b = [0; 4];
    echo.recv_from(&mut b).unwrap();
    assert_eq!(g.flows(), 2);
    // Socket inode numbers are not reused while the test runs, so "what appeared" is exact
    // even if a test that does not take SERIAL (config's ::1 probe) opens one meanwhile.
    let new: Vec<String> = socket_fds()
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    // Two listeners, a TCP and a UDP flow, epoll, eventfd, and the test's accepted socket.
    assert!(new.len() >= 7, "{new:?}");
    assert!(
        new.iter().any(|f| f.contains("eventpoll")) && new.iter().any(|f| f.contains("eventfd"))
    );
    drop(g);
    drop(h);
    let after = socket_fds();
    let left: Vec<&String> = new.iter().filter(|f| after.contains(f)).collect();
    assert!(left.is_empty(), "still open after drop: {left:?}");
}

/// Random and truncated frames do not panic (they reach no real host socket: the host double
/// fails every call, and the policy allows loopback only).
#[test]
fn malformed_frames_do_not_panic() {
    let calls = Calls::default();
    let g = Guest::with_host(
        cfg("restrict=loopback,hostloop=on,ipv6=on"),
        Box::new(Failing(nix::libc::ECONNREFUSED, calls.clone())),
        calls,
    );
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut samples: Vec<Vec<u8>> = Vec::new();
    let dhcp = crate::dhcp::tests::request(1, 1, GMAC, None, false, Ipv4Addr::UNSPECIFIED);
    samples.push(wire::build(
        wire::BROADCAST,
        GMAC,
        IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V4(Ipv4Addr::BROADCAST),
        wire::PROTO_UDP,
        &wire::udp_header(68, 67, dhcp.len()),
        &dhcp,
    ));
    samples.push(wire::build(
        GATEWAY_MAC,
        GMAC,
        G4,
        GW,
        wire::PROTO_TCP,
        &wire::tcp_header(1, 2, 3, 4, wire::SYN, 5, Some((1460, Some(7)))),
        b"",
    ));
    samples.push(wire::build(
        GATEWAY_MAC,
        GMAC,
        G4,
        GW,
        wire::PROTO_ICMP,
        &[8, 0, 0, 0, 0, 1, 0, 1],
        b"x",
    ));
    let v6: IpAddr = "fd00::15".parse().unwrap();
    samples.push(wire::build(
        GATEWAY_MAC,
        GMAC,
        v6,
        IpAddr::V6(GW6),
        wire::PROTO_ICMPV6,
        &[135, 0, 0, 0, 0, 0, 0, 0],
        &GW6.octets(),
    ));
    samples.push(wire::build(
        GATEWAY_MAC,
        GMAC,
        v6,
        IpAddr::V6(Ipv6Addr::LOCALHOST),
        wire::PROTO_UDP,
        &wire::udp_header(1, 2, 0),
        b"",
    ));
    for s in &samples {
        for n in 0..=s.len() {
            g.send(&s[..n]);
        }
        for _ in 0..300 {
            let mut m = s.clone();
            let i = rnd() as usize % m.len();
            m[i] = rnd() as u8;
            let j = rnd() as usize % m.len();
            m[j] = rnd() as u8;
            g.send(&m);
        }
    }
    for _ in 0..3000 {
        let len = rnd() as usize % 400;
        let mut f: Vec<u8> = (0..len).map(|_| rnd() as u8).collect();
        if f.len() > 23 && rnd() % 2 == 0 {
            // Make it look like IPv4 or IPv6 to get past the first checks.
            f[12] = if rnd() % 2 == 0 { 0x08 } else { 0x86 };
            f[13] = if f[12] == 0x08 { 0 } else { 0xdd };
            f[14] = if f[12] == 0x08 { 0x45 } else { 0x60 };
        }
        g.send(&f);
    }
    // Still alive: the gateway answers a ping.
    while g.recv(Duration::from_millis(50)).is_some() {}
    g.ip(
        G4,
        GW,
        wire::PROTO_ICMP,
        &[8, 0, 0, 0, 0xab, 0xcd, 0, 1],
        b"alive",
    );
    let r = g.recv_map(T, |f| {
        parse_icmp(f).filter(|m| m.2 == 0 && m.4.starts_with(&[0xab, 0xcd]))
    });
    assert!(r.is_some());
    let calls = g.calls.list();
    assert!(
        calls
            .iter()
            .all(|c| c.contains("127.") || c.contains("::1")),
        "{calls:?}"
    );
}

fn echo_request(id: u16) -> Vec<u8> {
    let h = [8, 0, 0, 0, (id >> 8) as u8, id as u8, 0, 1];
    wire::build(GATEWAY_MAC, GMAC, G4, GW, wire::PROTO_ICMP, &h, b"x")
}

/// The NIC driver's contract: `transmit` from several guest threads at once, and `to_guest`
/// calling `transmit` on the same thread (a NIC that answers synchronously) do not deadlock.
#[test]
fn concurrent_and_reentrant_transmit() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let slot: Arc<Mutex<Option<std::sync::Weak<Usernet>>>> = Arc::default();
    let replies: Arc<Mutex<Vec<u16>>> = Arc::default();
    let (s2, r2) = (slot.clone(), replies.clone());
    let to_guest = Box::new(move |f: &[u8]| {
        if let Some((_, _, 0, 0, rest)) = parse_icmp(f) {
            let id = u16::from_be_bytes([rest[0], rest[1]]);
            r2.lock().unwrap().push(id);
            if id == 1 {
                let net = s2
                    .lock()
                    .unwrap()
                    .as_ref()
                    .and_then(std::sync::Weak::upgrade);
                if let Some(n) = net {
                    n.transmit(&echo_request(1000));
                }
            }
        }
        true
    });
    let net = Arc::new(Usernet::start(cfg("restrict=loopback"), to_guest).unwrap());
    *slot.lock().unwrap() = Some(Arc::downgrade(&net));
    let threads: Vec<_> = (0..4u16)
        .map(|t| {
            let n = net.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    n.transmit(&echo_request(t * 100 + i + 1));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let end = Instant::now() + T;
    while replies.lock().unwrap().len() < 401 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut got = replies.lock().unwrap().clone();
    got.sort_unstable();
    let want: Vec<u16> = (1..=400).chain([1000]).collect();
    assert_eq!(got, want);
}
