//! The engine: all of the backend's state (the flow table, the host sockets, the listeners)
//! and what it does with a frame from the guest ([`Engine::guest_frame`]), a host socket event
//! ([`Engine::host_event`]) and the clock ([`Engine::timers`]). It never blocks: every host
//! socket is non-blocking, and frames for the guest go to [`Engine::tx`], which `lib.rs` moves
//! to the NIC.
//!
//! The flow table: [`Engine::flows`] by flow id (which is also the flow's epoll token, never
//! reused, so a stale event finds nothing) and [`Engine::keys`] by [`Key`] (protocol, the
//! guest's address and port, the address and port the guest sees on the far side). TCP lives
//! in `tcp.rs`; UDP, ICMP echo, ARP, NDP and the policy are here.

use std::collections::HashMap;
use std::io::{self, ErrorKind};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::epoll::{Epoll, EpollEvent, EpollFlags};

use crate::config::{Config, HostFwd};
use crate::host::HostNet;
use crate::wire::{self, Ip, Mac, Rd};
use crate::{DNS_ADDR, DNS6, GATEWAY, GATEWAY_MAC, GW6, GW6_LL, NET_ADDR};

mod tcp;
use tcp::TcpFlow;

/// At most this many flows (TCP + UDP + ICMP) at once; a new one past it is refused (TCP RST,
/// UDP/ICMP dropped), so a guest cannot exhaust the host's file descriptors through us.
pub const MAX_FLOWS: usize = 4096;
/// A UDP or ICMP flow with no datagram either way for this long is closed.
pub const UDP_IDLE: Duration = Duration::from_secs(60);
/// DNS flows (one per query's source port, as resolvers randomise it) idle out sooner: a
/// resolver waits 5 s per try (resolv.conf(5) `timeout`), so an answer after 10 s is useless.
pub const DNS_IDLE: Duration = Duration::from_secs(10);
/// Epoll tokens: 0 is the wakeup eventfd, 1.. the listeners, flow ids from here on.
pub const FLOW_ID_BASE: u64 = 1 << 20;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Key {
    pub proto: u8,
    /// The guest's end (for ICMP echo: the address and the echo identifier).
    pub guest: SocketAddr,
    /// The far end as the guest sees it (before the 10.0.2.2 / 10.0.2.3 mapping).
    pub remote: SocketAddr,
}

/// How much of an offending packet an ICMP error about it quotes: 576 - 28 bytes for ICMPv4
/// (RFC 1812 4.3.2.3), 1280 - 48 for ICMPv6 (RFC 4443 2.4 (c)).
fn quote_max(a: IpAddr) -> usize {
    if a.is_ipv4() { 576 - 28 } else { 1280 - 48 }
}

/// Why a destination gets no host socket.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Deny {
    /// The policy forbids it (hostloop off, restrict=loopback, host loopback by another name):
    /// TCP RST, ICMP "administratively prohibited".
    Prohibited,
    /// No such network here (IPv6 without host IPv6, a 10.0.2.x that is nobody): ICMP "no route".
    NoRoute,
    /// Not a unicast destination: silently dropped.
    Drop,
    /// Not a policy answer: the host said ECONNREFUSED (ICMP port unreachable).
    Refused,
}

enum UdpSide {
    Own(UdpSocket),
    /// A hostfwd flow: datagrams go back through listener `0` to the host peer `1`.
    Fwd(usize, SocketAddr),
}

struct UdpFlow {
    key: Key,
    side: UdpSide,
    idle_deadline: Instant,
    /// The head of the guest's last datagram (IP header on, as much as an ICMP error
    /// quotes): what a host ECONNREFUSED's port unreachable quotes back, so the guest's
    /// error queue holds its own payload as on Linux (`ip_recv_error`).
    last: Vec<u8>,
}

struct IcmpFlow {
    key: Key,
    sock: UdpSocket,
    idle_deadline: Instant,
}

enum Flow {
    Tcp(Box<TcpFlow>),
    Udp(UdpFlow),
    Icmp(IcmpFlow),
}

enum Listener {
    Tcp(TcpListener, HostFwd),
    Udp(UdpSocket, HostFwd),
}

pub struct Engine {
    cfg: Config,
    dns: Vec<SocketAddr>,
    host: Box<dyn HostNet>,
    epoll: Arc<Epoll>,
    guest_mac: Option<Mac>,
    /// Frames for the guest, in order; `lib.rs` takes them after each call.
    pub tx: Vec<Vec<u8>>,
    /// How many more TCP data segments may be produced now (the NIC queue's free room);
    /// set by `lib.rs` before each call.
    pub budget: usize,
    /// Some flow stopped sending for want of `budget`: call [`Engine::resume`] once the queue
    /// has drained.
    pub starved: bool,
    flows: HashMap<u64, Flow>,
    keys: HashMap<Key, u64>,
    /// [`MAX_FLOWS`]; a field so a test can make the limit small.
    pub max_flows: usize,
    next_id: u64,
    listeners: Vec<Listener>,
    udp_fwd_peers: HashMap<(usize, SocketAddr), u64>,
    scratch: Vec<u8>,
    next_timer: Option<Instant>,
    rand: u64,
    eph_port: u16,
    frag_id: u32,
    /// The guest's fragments being put back together (`crate::frag`).
    reasm: crate::frag::Reassembly,
}

fn token_flags_tcp() -> EpollFlags {
    EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET
}

/// The ICMP error codes for a host errno (Linux `net/ipv4/icmp.c` icmp_err_convert, reversed).
fn deny_of(e: &io::Error) -> Option<Deny> {
    match e.raw_os_error() {
        Some(nix::libc::ENETUNREACH) => Some(Deny::NoRoute),
        Some(nix::libc::EHOSTUNREACH) => Some(Deny::NoRoute),
        Some(nix::libc::EACCES) | Some(nix::libc::EPERM) => Some(Deny::Prohibited),
        _ => None,
    }
}

impl Engine {
    pub fn new(
        cfg: Config,
        dns: Vec<SocketAddr>,
        host: Box<dyn HostNet>,
        epoll: Arc<Epoll>,
    ) -> io::Result<Engine> {
        let mut listeners = Vec::new();
        for f in &cfg.hostfwd {
            let l = match f.proto {
                crate::config::Proto::Tcp => {
                    let l = TcpListener::bind(f.host).map_err(|e| name_err(e, f))?;
                    l.set_nonblocking(true)?;
                    Listener::Tcp(l, f.clone())
                }
                crate::config::Proto::Udp => {
                    let s = UdpSocket::bind(f.host).map_err(|e| name_err(e, f))?;
                    s.set_nonblocking(true)?;
                    Listener::Udp(s, f.clone())
                }
            };
            let tok = 1 + listeners.len() as u64;
            match &l {
                Listener::Tcp(s, _) => epoll.add(s, EpollEvent::new(EpollFlags::EPOLLIN, tok))?,
                Listener::Udp(s, _) => epoll.add(s, EpollEvent::new(EpollFlags::EPOLLIN, tok))?,
            }
            listeners.push(l);
        }
        let rand = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(Instant::now().elapsed().as_nanos());
            h.finish()
        };
        Ok(Engine {
            cfg,
            dns,
            host,
            epoll,
            guest_mac: None,
            tx: Vec::new(),
            budget: usize::MAX,
            starved: false,
            flows: HashMap::new(),
            keys: HashMap::new(),
            max_flows: MAX_FLOWS,
            next_id: FLOW_ID_BASE,
            listeners,
            udp_fwd_peers: HashMap::new(),
            scratch: vec![0; 65536],
            next_timer: None,
            rand,
            eph_port: 49152,
            frag_id: 0,
            reasm: Default::default(),
        })
    }

    pub fn guest_mac(&self) -> Option<Mac> {
        self.guest_mac
    }

    #[cfg(test)]
    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    fn random(&mut self) -> u32 {
        // xorshift64*: sequence numbers need to be unpredictable only to off-path guessers,
        // and there are none on this point-to-point link; they must merely differ per flow.
        let mut x = self.rand;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rand = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }

    fn arm(&mut self, at: Instant) {
        if self.next_timer.is_none_or(|t| at < t) {
            self.next_timer = Some(at);
        }
    }

    /// How long the I/O thread may sleep.
    pub fn timeout(&self, now: Instant) -> Duration {
        self.next_timer
            .map_or(Duration::from_secs(1), |t| t.saturating_duration_since(now))
            .min(Duration::from_secs(1))
    }

    // ---- Sending to the guest ----

    fn dst_mac(&self, dst: IpAddr) -> Mac {
        match dst {
            IpAddr::V4(a) if a.is_broadcast() => wire::BROADCAST,
            IpAddr::V6(a) if a.is_multicast() => {
                let o = a.octets();
                [0x33, 0x33, o[12], o[13], o[14], o[15]]
            }
            _ => self.guest_mac.unwrap_or(wire::BROADCAST),
        }
    }

    fn src_mac(src: IpAddr) -> Mac {
        match src {
            IpAddr::V4(a) if (a.octets()[..3]) == NET_ADDR.octets()[..3] => wire::special_mac(a),
            _ => GATEWAY_MAC,
        }
    }

    fn send_ip(&mut self, src: IpAddr, dst: IpAddr, proto: u8, l4: &[u8], payload: &[u8]) {
        let f = wire::build(
            self.dst_mac(dst),
            Self::src_mac(src),
            src,
            dst,
            proto,
            l4,
            payload,
        );
        self.tx.push(f);
    }

    /// ICMP / ICMPv6 destination unreachable to the guest about `orig` (its IP packet), from
    /// `from`, with `code` chosen by `why` (RFC 792, RFC 4443 3.1).
    fn unreachable(&mut self, from: IpAddr, to: IpAddr, orig: &[u8], why: Deny) {
        match (from, to) {
            (IpAddr::V4(_), IpAddr::V4(_)) => {
                // 1 host unreachable, 3 port unreachable, 13 communication administratively
                // prohibited. Payload: as much of the original as keeps the error within 576
                // bytes (RFC 1812 4.3.2.3; Linux icmp_send quotes the same).
                let code = match why {
                    Deny::NoRoute => 1,
                    Deny::Prohibited => 13,
                    Deny::Refused | Deny::Drop => 3,
                };
                let n = orig.len().min(quote_max(from));
                self.send_ip(
                    from,
                    to,
                    wire::PROTO_ICMP,
                    &[3, code, 0, 0, 0, 0, 0, 0],
                    &orig[..n],
                );
            }
            (IpAddr::V6(_), IpAddr::V6(_)) => {
                // 0 no route, 1 administratively prohibited, 4 port unreachable; as much of the
                // original as fits in the 1280-byte minimum MTU (RFC 4443 2.4 (c)).
                let code = match why {
                    Deny::NoRoute => 0,
                    Deny::Prohibited => 1,
                    Deny::Refused | Deny::Drop => 4,
                };
                let n = orig.len().min(quote_max(from));
                self.send_ip(
                    from,
                    to,
                    wire::PROTO_ICMPV6,
                    &[1, code, 0, 0, 0, 0, 0, 0],
                    &orig[..n],
                );
            }
            _ => {}
        }
    }

    /// A stand-in for the guest's original packet of flow `key` (IP header + 8 bytes of L4:
    /// the ports), for an ICMP error the host reported after the packet itself is gone.
    fn fake_orig(key: &Key, l4_first8: [u8; 8]) -> Vec<u8> {
        let f = wire::build(
            [0; 6],
            [0; 6],
            key.guest.ip(),
            key.remote.ip(),
            key.proto,
            &l4_first8,
            &[],
        );
        f[wire::ETH_HLEN..].to_vec()
    }

    // ---- Policy ----

    /// Where a guest destination goes on the host, or why nowhere. This is the only gate in
    /// front of [`HostNet`]: a destination it denies never reaches a host socket call.
    pub fn map(&self, proto: u8, dst: SocketAddr) -> Result<SocketAddr, Deny> {
        let port = dst.port();
        let dns_port = port == 53 && (proto == wire::PROTO_TCP || proto == wire::PROTO_UDP);
        let mapped = match dst.ip() {
            IpAddr::V4(a) if a == GATEWAY => {
                if !self.cfg.hostloop {
                    return Err(Deny::Prohibited);
                }
                SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
            }
            IpAddr::V4(a) if a == DNS_ADDR => {
                if !dns_port {
                    return Err(Deny::Prohibited);
                }
                *self.dns.first().ok_or(Deny::Prohibited)?
            }
            // The subnet's broadcast and network addresses: dropped; its other addresses are
            // nobody (only .2, .3 and the guest live on 10.0.2.0/24).
            IpAddr::V4(a) if a.octets()[..3] == NET_ADDR.octets()[..3] => {
                return Err(if matches!(a.octets()[3], 0 | 255) {
                    Deny::Drop
                } else {
                    Deny::NoRoute
                });
            }
            IpAddr::V4(a) if a.is_broadcast() || a.is_multicast() || a.is_unspecified() => {
                return Err(Deny::Drop);
            }
            IpAddr::V6(a) if a == GW6 || a == GW6_LL => {
                if !self.cfg.hostloop {
                    return Err(Deny::Prohibited);
                }
                SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port)
            }
            IpAddr::V6(a) if a == DNS6 => {
                if !dns_port {
                    return Err(Deny::Prohibited);
                }
                *self.dns.first().ok_or(Deny::Prohibited)?
            }
            IpAddr::V6(a) if a.is_multicast() || a.is_unspecified() => return Err(Deny::Drop),
            // Link-local (fe80::/10) has no other node here; v4-mapped/compatible addresses
            // would be host IPv4 by another name.
            IpAddr::V6(a) if (a.segments()[0] & 0xffc0) == 0xfe80 || a.to_ipv4().is_some() => {
                return Err(Deny::NoRoute);
            }
            // Host loopback only by the gateway mapping: a guest "127.0.0.1" is its own.
            ip if ip.is_loopback() => return Err(Deny::Prohibited),
            _ => dst,
        };
        if mapped.is_ipv6() && !self.cfg.ipv6 {
            return Err(Deny::NoRoute);
        }
        if self.cfg.restrict_loopback && !mapped.ip().to_canonical().is_loopback() {
            return Err(Deny::Prohibited);
        }
        Ok(mapped)
    }

    // ---- Frames from the guest ----

    pub fn guest_frame(&mut self, f: &[u8], now: Instant) {
        let Some(eth) = wire::parse_eth(f) else {
            return;
        };
        if eth.src[0] & 1 == 0 && eth.src != GATEWAY_MAC && eth.src != [0; 6] {
            self.guest_mac = Some(eth.src);
        }
        match eth.ethertype {
            wire::ETHERTYPE_ARP => self.arp(eth.payload),
            wire::ETHERTYPE_IPV4 | wire::ETHERTYPE_IPV6 => {
                // A guest's big datagram arrives in fragments: the last one brings it whole.
                let whole;
                let pkt = match self.reasm.push(eth.payload, now) {
                    crate::frag::Push::NotFragment => eth.payload,
                    crate::frag::Push::Held => {
                        if let Some(t) = self.reasm.expire(now) {
                            self.arm(t);
                        }
                        return;
                    }
                    crate::frag::Push::Done(p) => {
                        whole = p;
                        &whole[..]
                    }
                };
                let ip = if eth.ethertype == wire::ETHERTYPE_IPV4 {
                    wire::parse_ipv4(pkt)
                } else {
                    wire::parse_ipv6(pkt)
                };
                if let Some(ip) = ip {
                    self.ip(&ip, now)
                }
            }
            _ => {}
        }
    }

    /// ARP (RFC 826): answer requests for the gateway and the DNS address (slirp answers for
    /// every special address; nobody else lives on 10.0.2.0/24).
    fn arp(&mut self, p: &[u8]) {
        let r = Rd(p);
        let (Some(1), Some(0x0800), Some(6), Some(4), Some(1)) =
            (r.u16(0), r.u16(2), r.u8(4), r.u8(5), r.u16(6))
        else {
            return;
        };
        let (Some(sha), Some(spa), Some(tpa)) = (r.mac(8), r.v4(14), r.v4(24)) else {
            return;
        };
        if tpa == GATEWAY || tpa == DNS_ADDR {
            self.tx
                .push(wire::arp_reply(wire::special_mac(tpa), tpa, sha, spa));
        }
    }

    fn ip(&mut self, ip: &Ip<'_>, now: Instant) {
        match ip.proto {
            wire::PROTO_TCP => {
                if let Some(t) = wire::parse_tcp(ip.payload) {
                    if ip.src.is_ipv6() && !self.cfg.ipv6 {
                        // No IPv6 on the host: "no route" at once, so connect fails with
                        // ENETUNREACH now rather than after SYN retries.
                        self.unreachable(ip.dst, ip.src, ip.packet, Deny::NoRoute);
                        return;
                    }
                    self.tcp_from_guest(ip, &t, now);
                }
            }
            wire::PROTO_UDP => {
                if let Some(u) = wire::parse_udp(ip.payload) {
                    if u.dport == 67 && ip.src.is_ipv4() {
                        if let Some(rep) = crate::dhcp::handle(u.payload, self.cfg.mtu) {
                            let h = wire::udp_header(67, 68, rep.payload.len());
                            let f = wire::build(
                                rep.dst_mac,
                                GATEWAY_MAC,
                                IpAddr::V4(GATEWAY),
                                IpAddr::V4(rep.dst),
                                wire::PROTO_UDP,
                                &h,
                                &rep.payload,
                            );
                            self.tx.push(f);
                        }
                        return;
                    }
                    if ip.src.is_ipv6() && !self.cfg.ipv6 {
                        self.unreachable(ip.dst, ip.src, ip.packet, Deny::NoRoute);
                        return;
                    }
                    self.udp_from_guest(ip, u.sport, u.dport, u.payload, now);
                }
            }
            wire::PROTO_ICMP if ip.src.is_ipv4() => self.icmp_from_guest(ip, now),
            wire::PROTO_ICMPV6 if ip.src.is_ipv6() => self.icmp6_from_guest(ip, now),
            _ => {}
        }
    }

    // ---- ICMP echo ----

    fn icmp_from_guest(&mut self, ip: &Ip<'_>, now: Instant) {
        let r = Rd(ip.payload);
        if r.u8(0) != Some(8) || ip.payload.len() < 8 {
            return; // only echo requests; errors from the guest concern nothing we hold
        }
        if ip.dst == IpAddr::V4(GATEWAY) || ip.dst == IpAddr::V4(DNS_ADDR) {
            // The gateway answers itself (with hostloop or not, as slirp does).
            let mut h = ip.payload[..8].to_vec();
            h[0] = 0;
            h[2..4].fill(0);
            self.send_ip(ip.dst, ip.src, wire::PROTO_ICMP, &h, &ip.payload[8..]);
            return;
        }
        self.echo_out(ip, now);
    }

    fn icmp6_from_guest(&mut self, ip: &Ip<'_>, now: Instant) {
        let r = Rd(ip.payload);
        let ours =
            |a: IpAddr| a == IpAddr::V6(GW6) || a == IpAddr::V6(DNS6) || a == IpAddr::V6(GW6_LL);
        match r.u8(0) {
            // Router Solicitation -> Router Advertisement (RFC 4861 6.2.6), only when the host
            // has IPv6: without it the guest gets no address and no default route, so its own
            // stack fails v6 connects with ENETUNREACH at once.
            Some(133) if self.cfg.ipv6 => self.router_advert(ip.src),
            // Neighbor Solicitation for one of ours -> Neighbor Advertisement (RFC 4861 7.2.4).
            Some(135) => {
                let Some(target) = r.v6(8) else { return };
                if !ours(IpAddr::V6(target)) {
                    return;
                }
                let dad = ip.src.to_canonical().is_unspecified();
                let dst = if dad {
                    IpAddr::V6(Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1))
                } else {
                    ip.src
                };
                // Router, Solicited (not for DAD), Override.
                let flags = if dad { 0xa0 } else { 0xe0 };
                let mut m = vec![136, 0, 0, 0, flags, 0, 0, 0];
                m.extend_from_slice(&target.octets());
                m.extend_from_slice(&[2, 1]);
                m.extend_from_slice(&GATEWAY_MAC);
                self.send_ip(IpAddr::V6(target), dst, wire::PROTO_ICMPV6, &m, &[]);
            }
            Some(128) if ip.payload.len() >= 8 => {
                if ours(ip.dst) {
                    let mut h = ip.payload[..8].to_vec();
                    h[0] = 129;
                    h[2..4].fill(0);
                    self.send_ip(ip.dst, ip.src, wire::PROTO_ICMPV6, &h, &ip.payload[8..]);
                } else if !self.cfg.ipv6 {
                    self.unreachable(IpAddr::V6(GW6), ip.src, ip.packet, Deny::NoRoute);
                } else {
                    self.echo_out(ip, now);
                }
            }
            _ => {}
        }
    }

    /// RA: hop limit 64, no M/O (SLAAC, RFC 4862), router lifetime 1800 s, with the source
    /// link-layer address, the MTU, the prefix fd00::/64 (on-link, autonomous) and the DNS
    /// server fd00::3 (RDNSS, RFC 8106).
    fn router_advert(&mut self, to: IpAddr) {
        let to = if to.to_canonical().is_unspecified() {
            IpAddr::V6(Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1))
        } else {
            to
        };
        let mut m = vec![134, 0, 0, 0, 64, 0];
        m.extend_from_slice(&1800u16.to_be_bytes());
        m.extend_from_slice(&[0; 8]);
        m.extend_from_slice(&[1, 1]);
        m.extend_from_slice(&GATEWAY_MAC);
        m.extend_from_slice(&[5, 1, 0, 0]);
        m.extend_from_slice(&u32::from(self.cfg.mtu).to_be_bytes());
        m.extend_from_slice(&[3, 4, 64, 0xc0]);
        m.extend_from_slice(&86400u32.to_be_bytes());
        m.extend_from_slice(&14400u32.to_be_bytes());
        m.extend_from_slice(&[0; 4]);
        m.extend_from_slice(&crate::PREFIX6.octets());
        m.extend_from_slice(&[25, 3, 0, 0]);
        m.extend_from_slice(&1800u32.to_be_bytes());
        m.extend_from_slice(&DNS6.octets());
        self.send_ip(IpAddr::V6(GW6_LL), to, wire::PROTO_ICMPV6, &m, &[]);
    }

    /// An echo request to a far destination, through a host ping socket. Where the host
    /// refuses ping sockets (EACCES: the user's group is outside `net.ipv4.ping_group_range`,
    /// default "1 0"), the guest gets "administratively prohibited" at once, so `ping` prints
    /// an error instead of hanging.
    fn echo_out(&mut self, ip: &Ip<'_>, now: Instant) {
        let r = Rd(ip.payload);
        let Some(id) = r.u16(4) else { return };
        let key = Key {
            proto: ip.proto,
            guest: SocketAddr::new(ip.src, id),
            remote: SocketAddr::new(ip.dst, id),
        };
        let fid = match self.keys.get(&key) {
            Some(&fid) => fid,
            None => {
                let mapped = match self.map(ip.proto, SocketAddr::new(ip.dst, 0)) {
                    Ok(m) => m,
                    Err(Deny::Drop) => return,
                    Err(why) => return self.unreachable(ip.dst, ip.src, ip.packet, why),
                };
                if self.flows.len() >= self.max_flows && !self.evict_datagram_flow() {
                    return;
                }
                let sock = match self.host.icmp_connect(mapped.ip()) {
                    Ok(s) => s,
                    Err(e) => {
                        let why = deny_of(&e).unwrap_or(Deny::NoRoute);
                        return self.unreachable(ip.dst, ip.src, ip.packet, why);
                    }
                };
                let fid = self.new_id();
                if self
                    .epoll
                    .add(&sock, EpollEvent::new(EpollFlags::EPOLLIN, fid))
                    .is_err()
                {
                    return;
                }
                self.insert(
                    fid,
                    key,
                    Flow::Icmp(IcmpFlow {
                        key,
                        sock,
                        idle_deadline: now + UDP_IDLE,
                    }),
                );
                fid
            }
        };
        self.arm(now + UDP_IDLE);
        if let Some(Flow::Icmp(f)) = self.flows.get_mut(&fid) {
            f.idle_deadline = now + UDP_IDLE;
            // The kernel fills in the identifier and the checksum of a ping socket's echo.
            let _ = f.sock.send(ip.payload);
        }
    }

    fn icmp_host_event(&mut self, fid: u64) {
        let mut buf = std::mem::take(&mut self.scratch);
        while let Some(Flow::Icmp(f)) = self.flows.get(&fid) {
            let key = f.key;
            let n = match f.sock.recv(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let reply_type = if key.proto == wire::PROTO_ICMP {
                0
            } else {
                129
            };
            if n < 8 || buf[0] != reply_type {
                continue;
            }
            // Back to the guest's identifier; the checksum is recomputed by build().
            let mut h = buf[..8].to_vec();
            h[2..4].fill(0);
            h[4..6].copy_from_slice(&key.guest.port().to_be_bytes());
            let payload = buf[8..n].to_vec();
            self.send_ip(key.remote.ip(), key.guest.ip(), key.proto, &h, &payload);
        }
        self.scratch = buf;
    }

    // ---- UDP ----

    fn udp_from_guest(
        &mut self,
        ip: &Ip<'_>,
        sport: u16,
        dport: u16,
        payload: &[u8],
        now: Instant,
    ) {
        let key = Key {
            proto: wire::PROTO_UDP,
            guest: SocketAddr::new(ip.src, sport),
            remote: SocketAddr::new(ip.dst, dport),
        };
        let fid = match self.keys.get(&key) {
            Some(&fid) => fid,
            None => {
                let mapped = match self.map(wire::PROTO_UDP, key.remote) {
                    Ok(m) => m,
                    Err(Deny::Drop) => return,
                    Err(why) => return self.unreachable(ip.dst, ip.src, ip.packet, why),
                };
                if self.flows.len() >= self.max_flows && !self.evict_datagram_flow() {
                    return;
                }
                let sock = match self.host.udp_connect(mapped) {
                    Ok(s) => s,
                    Err(e) => {
                        if let Some(why) = deny_of(&e) {
                            self.unreachable(ip.dst, ip.src, ip.packet, why);
                        }
                        return;
                    }
                };
                let fid = self.new_id();
                if self
                    .epoll
                    .add(&sock, EpollEvent::new(EpollFlags::EPOLLIN, fid))
                    .is_err()
                {
                    return;
                }
                self.insert(
                    fid,
                    key,
                    Flow::Udp(UdpFlow {
                        key,
                        side: UdpSide::Own(sock),
                        idle_deadline: now + UDP_IDLE,
                        last: Vec::new(),
                    }),
                );
                fid
            }
        };
        let idle = if dport == 53 { DNS_IDLE } else { UDP_IDLE };
        self.arm(now + idle);
        let Some(Flow::Udp(f)) = self.flows.get_mut(&fid) else {
            return;
        };
        f.idle_deadline = now + idle;
        let quote = ip.packet.len().min(quote_max(ip.src));
        f.last.clear();
        f.last.extend_from_slice(&ip.packet[..quote]);
        let res = match &f.side {
            UdpSide::Own(s) => s.send(payload),
            UdpSide::Fwd(l, peer) => match self.listeners.get(*l) {
                Some(Listener::Udp(s, _)) => s.send_to(payload, peer),
                _ => return,
            },
        };
        if let Err(e) = res {
            // An earlier datagram's ICMP port unreachable shows up on the next send.
            if e.kind() == ErrorKind::ConnectionRefused {
                self.unreachable(ip.dst, ip.src, ip.packet, Deny::Refused);
            }
        }
    }

    fn udp_host_event(&mut self, fid: u64) {
        let mut buf = std::mem::take(&mut self.scratch);
        while let Some(Flow::Udp(UdpFlow {
            key,
            side: UdpSide::Own(s),
            ..
        })) = self.flows.get(&fid)
        {
            let key = *key;
            match s.recv(&mut buf) {
                Ok(n) => self.udp_to_guest(&key, &buf[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    // The host got ICMP port unreachable: tell the guest the same (RFC 1122
                    // 4.1.3.3), about a stand-in of its datagram.
                    let mut l4 = [0u8; 8];
                    l4[0..2].copy_from_slice(&key.guest.port().to_be_bytes());
                    l4[2..4].copy_from_slice(&key.remote.port().to_be_bytes());
                    l4[4..6].copy_from_slice(&8u16.to_be_bytes());
                    let orig = match self.flows.get(&fid) {
                        Some(Flow::Udp(f)) if !f.last.is_empty() => f.last.clone(),
                        _ => Self::fake_orig(&key, l4),
                    };
                    self.unreachable(key.remote.ip(), key.guest.ip(), &orig, Deny::Refused);
                }
                Err(_) => break,
            }
        }
        self.scratch = buf;
    }

    fn udp_to_guest(&mut self, key: &Key, data: &[u8]) {
        if self.budget == 0 {
            return; // the NIC queue is far behind: drop, as a full NIC does
        }
        let v4 = key.remote.is_ipv4();
        let h = wire::udp_header(key.remote.port(), key.guest.port(), data.len());
        let hdr = if v4 { 28 } else { 48 };
        let mtu = usize::from(self.cfg.mtu);
        if data.len() + hdr <= mtu {
            return self.send_ip(key.remote.ip(), key.guest.ip(), wire::PROTO_UDP, &h, data);
        }
        if data.len() + hdr - if v4 { 0 } else { 40 } > 0xffff {
            return;
        }
        // Fragments of the whole datagram (RFC 791 3.2, RFC 8200 4.5), e.g. a large DNS
        // answer or a big datagram from a host service.
        let whole = wire::build(
            self.dst_mac(key.guest.ip()),
            Self::src_mac(key.remote.ip()),
            key.remote.ip(),
            key.guest.ip(),
            wire::PROTO_UDP,
            &h,
            data,
        );
        self.frag_id = self.frag_id.wrapping_add(1);
        self.tx
            .extend(crate::frag::fragment(&whole, mtu, self.frag_id));
    }

    // ---- Listeners (hostfwd) ----

    fn listener_event(&mut self, idx: usize, now: Instant) {
        loop {
            match self.listeners.get(idx) {
                Some(Listener::Tcp(l, fwd)) => {
                    let fwd = fwd.clone();
                    match l.accept() {
                        Ok((s, _)) => self.tcp_accepted(s, &fwd, now),
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        // WouldBlock, or EMFILE/ENFILE: the connection waits in the backlog.
                        Err(_) => break,
                    }
                }
                Some(Listener::Udp(s, fwd)) => {
                    let fwd = fwd.clone();
                    let mut buf = std::mem::take(&mut self.scratch);
                    let r = s.recv_from(&mut buf);
                    let res = match r {
                        Ok((n, peer)) => {
                            self.udp_fwd_datagram(idx, &fwd, peer, &buf[..n], now);
                            true
                        }
                        Err(e) => {
                            e.kind() == ErrorKind::Interrupted
                                || e.kind() == ErrorKind::ConnectionRefused
                        }
                    };
                    self.scratch = buf;
                    if !res {
                        break;
                    }
                }
                None => break,
            }
        }
    }

    /// A free gateway-side port for a flow the host opened towards `guest`.
    fn alloc_port(&mut self, proto: u8, guest: SocketAddr, gw: IpAddr) -> u16 {
        for _ in 0..16384 {
            let p = self.eph_port;
            self.eph_port = if p == 65535 { 49152 } else { p + 1 };
            if !self.keys.contains_key(&Key {
                proto,
                guest,
                remote: SocketAddr::new(gw, p),
            }) {
                return p;
            }
        }
        0
    }

    fn udp_fwd_datagram(
        &mut self,
        idx: usize,
        fwd: &HostFwd,
        peer: SocketAddr,
        data: &[u8],
        now: Instant,
    ) {
        let fid = match self.udp_fwd_peers.get(&(idx, peer)) {
            Some(&fid) => fid,
            None => {
                if self.flows.len() >= self.max_flows {
                    return;
                }
                let guest = SocketAddr::new(IpAddr::V4(fwd.guest_addr), fwd.guest_port);
                let port = self.alloc_port(wire::PROTO_UDP, guest, IpAddr::V4(GATEWAY));
                if port == 0 {
                    return;
                }
                let key = Key {
                    proto: wire::PROTO_UDP,
                    guest,
                    remote: SocketAddr::new(IpAddr::V4(GATEWAY), port),
                };
                let fid = self.new_id();
                self.insert(
                    fid,
                    key,
                    Flow::Udp(UdpFlow {
                        key,
                        side: UdpSide::Fwd(idx, peer),
                        idle_deadline: now + UDP_IDLE,
                        last: Vec::new(),
                    }),
                );
                self.udp_fwd_peers.insert((idx, peer), fid);
                fid
            }
        };
        self.arm(now + UDP_IDLE);
        let Some(Flow::Udp(f)) = self.flows.get_mut(&fid) else {
            return;
        };
        f.idle_deadline = now + UDP_IDLE;
        let key = f.key;
        self.udp_to_guest(&key, data);
    }

    // ---- The flow table ----

    /// At the flow limit, a new UDP or ICMP flow replaces the one idle longest (TCP flows are
    /// never evicted: they end by FIN or RST). Returns whether room was made.
    fn evict_datagram_flow(&mut self) -> bool {
        let oldest = self
            .flows
            .iter()
            .filter_map(|(id, f)| match f {
                Flow::Udp(u) => Some((u.idle_deadline, *id)),
                Flow::Icmp(i) => Some((i.idle_deadline, *id)),
                Flow::Tcp(_) => None,
            })
            .min();
        oldest.is_some_and(|(_, id)| self.remove(id).is_some())
    }

    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn insert(&mut self, fid: u64, key: Key, flow: Flow) {
        self.keys.insert(key, fid);
        self.flows.insert(fid, flow);
    }

    /// Removes a flow; dropping it closes its host socket (which also leaves the epoll set).
    fn remove(&mut self, fid: u64) -> Option<Flow> {
        let flow = self.flows.remove(&fid)?;
        let key = match &flow {
            Flow::Tcp(t) => t.key,
            Flow::Udp(u) => {
                if let UdpSide::Fwd(l, peer) = u.side {
                    self.udp_fwd_peers.remove(&(l, peer));
                }
                u.key
            }
            Flow::Icmp(i) => i.key,
        };
        self.keys.remove(&key);
        Some(flow)
    }

    // ---- Host events and timers ----

    pub fn host_event(&mut self, token: u64, ev: EpollFlags, now: Instant) {
        if token < FLOW_ID_BASE {
            if let Some(idx) = (token as usize).checked_sub(1) {
                self.listener_event(idx, now);
            }
            return;
        }
        match self.flows.get(&token) {
            Some(Flow::Tcp(_)) => self.tcp_host_event(token, ev, now),
            Some(Flow::Udp(_)) => self.udp_host_event(token),
            Some(Flow::Icmp(_)) => self.icmp_host_event(token),
            None => {}
        }
    }

    pub fn timers(&mut self, now: Instant) {
        if self.next_timer.is_none_or(|t| now < t) {
            return;
        }
        self.next_timer = None;
        let ids: Vec<u64> = self.flows.keys().copied().collect();
        for fid in ids {
            let due = match self.flows.get(&fid) {
                Some(Flow::Tcp(t)) => t.deadline,
                Some(Flow::Udp(u)) => Some(u.idle_deadline),
                Some(Flow::Icmp(i)) => Some(i.idle_deadline),
                None => None,
            };
            let Some(due) = due else { continue };
            if now < due {
                self.arm(due);
                continue;
            }
            match self.flows.get(&fid) {
                Some(Flow::Tcp(_)) => self.tcp_timer(fid, now),
                Some(_) => {
                    self.remove(fid);
                }
                None => {}
            }
        }
        if let Some(t) = self.reasm.expire(now) {
            self.arm(t);
        }
    }

    /// The NIC queue has drained: let the flows that stopped for it send again.
    pub fn resume(&mut self, now: Instant) {
        self.starved = false;
        let ids: Vec<u64> = self
            .flows
            .iter()
            .filter_map(|(id, f)| matches!(f, Flow::Tcp(t) if t.starved).then_some(*id))
            .collect();
        for fid in ids {
            self.tcp_fill(fid, now);
        }
    }
}

fn name_err(e: io::Error, f: &HostFwd) -> io::Error {
    let proto = match f.proto {
        crate::config::Proto::Tcp => "tcp",
        crate::config::Proto::Udp => "udp",
    };
    io::Error::new(
        e.kind(),
        format!("eth0=user: hostfwd {proto} {}: {e}", f.host),
    )
}
