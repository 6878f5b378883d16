//! Internet addresses of the loopback network, pure: `sockaddr_in`/`sockaddr_in6` decoding and
//! encoding, the one route (`lo`: 127.0.0.0/8 and ::1), which addresses a socket may bind, which
//! bound addresses overlap (Linux `inet_rcv_saddr_equal`, `ipv6_rcv_saddr_equal` in
//! `net/ipv4/inet_connection_sock.c`), which socket an incoming packet matches, and ephemeral
//! port selection (`inet_csk_find_open_port`, `__inet_hash_connect` in
//! `net/ipv4/inet_hashtables.c`).
//!
//! Addresses are [`SocketAddr`]s in canonical form: an IPv4-mapped IPv6 address
//! (`::ffff:a.b.c.d`) of an AF_INET6 socket is kept as the IPv4 address it maps, so a packet is
//! either IPv4 or IPv6 whatever the family of the socket that sent it; [`encode`] maps it back
//! for AF_INET6 sockets.

use super::super::{AF_INET, AF_INET6, AF_UNSPEC};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use um_uapi::abi::inet::{SIN6_LEN_RFC2133, SockaddrIn, SockaddrIn6};
use um_uapi::abi::pod::Pod;
use um_uapi::{Errno, SysResult};

/// `net.ipv4.ip_local_port_range`: the ephemeral ports, inclusive.
pub const EPHEMERAL_PORTS: (u16, u16) = (32768, 60999);
/// `net.ipv4.ip_unprivileged_port_start`: lower ports need `CAP_NET_BIND_SERVICE`.
pub const PROT_SOCK: u16 = 1024;

/// A decoded socket address argument, before the per-call rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sa {
    /// `AF_UNSPEC`; with 16 bytes or more, also what they say read as a `sockaddr_in` (an
    /// `INADDR_ANY` one is what `inet_bind` accepts for compatibility).
    Unspec { v4: Option<SocketAddrV4> },
    /// `AF_INET` with at least 16 bytes.
    V4(SocketAddrV4),
    /// `AF_INET6` with at least 24 bytes (`sin6_scope_id` is 0 when absent). The address is
    /// raw: a mapped one is not yet converted.
    V6(SocketAddrV6),
    /// Any other family, or a known family too short to hold its address.
    Other { family: u32, len: usize },
}

/// Decodes the bytes of an address argument. Fewer than two bytes (no family) is `EINVAL`,
/// as every Linux `connect`/`bind` checks first.
pub fn decode(b: &[u8]) -> SysResult<Sa> {
    if b.len() < 2 {
        return Err(Errno::EINVAL);
    }
    let family = u32::from(u16::from_le_bytes([b[0], b[1]]));
    let v4 = (b.len() >= SockaddrIn::SIZE).then(|| {
        let s = SockaddrIn::read_le(b);
        SocketAddrV4::new(Ipv4Addr::from(s.sin_addr), u16::from_be_bytes(s.sin_port))
    });
    Ok(match (family, v4) {
        (AF_INET, Some(a)) => Sa::V4(a),
        (AF_INET6, _) if b.len() >= SIN6_LEN_RFC2133 => {
            let mut full = [0u8; SockaddrIn6::SIZE];
            full[..b.len().min(SockaddrIn6::SIZE)]
                .copy_from_slice(&b[..b.len().min(SockaddrIn6::SIZE)]);
            let s = SockaddrIn6::read_le(&full);
            Sa::V6(SocketAddrV6::new(
                Ipv6Addr::from(s.sin6_addr),
                u16::from_be_bytes(s.sin6_port),
                u32::from_be_bytes(s.sin6_flowinfo),
                s.sin6_scope_id,
            ))
        }
        (AF_UNSPEC, v4) => Sa::Unspec { v4 },
        _ => Sa::Other {
            family,
            len: b.len(),
        },
    })
}

/// The IPv4 address an IPv4-mapped IPv6 address stands for.
pub fn unmap(a: &Ipv6Addr) -> Option<Ipv4Addr> {
    let o = a.octets();
    if o[..10] == [0; 10] && o[10] == 0xff && o[11] == 0xff {
        Some(Ipv4Addr::new(o[12], o[13], o[14], o[15]))
    } else {
        None
    }
}

/// An AF_INET6 address in canonical form (mapped addresses become IPv4).
pub fn canon6(a: &SocketAddrV6) -> SocketAddr {
    match unmap(a.ip()) {
        Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, a.port())),
        None => SocketAddr::V6(SocketAddrV6::new(*a.ip(), a.port(), 0, 0)),
    }
}

/// The address bytes `getsockname`, `getpeername`, `accept` and `recvfrom` report for a socket
/// of `family`: a `sockaddr_in` (16 bytes) or a `sockaddr_in6` (28 bytes, IPv4 mapped).
pub fn encode(family: u32, a: &SocketAddr) -> Vec<u8> {
    if family == AF_INET {
        let ip = match a.ip() {
            IpAddr::V4(v4) => v4,
            IpAddr::V6(v6) => unmap(&v6).unwrap_or(Ipv4Addr::UNSPECIFIED),
        };
        return SockaddrIn {
            sin_family: AF_INET as u16,
            sin_port: a.port().to_be_bytes(),
            sin_addr: ip.octets(),
            pad: [0; 8],
        }
        .as_bytes();
    }
    let ip = match a.ip() {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    };
    SockaddrIn6 {
        sin6_family: AF_INET6 as u16,
        sin6_port: a.port().to_be_bytes(),
        sin6_flowinfo: [0; 4],
        sin6_addr: ip.octets(),
        sin6_scope_id: 0,
    }
    .as_bytes()
}

/// The unspecified address of a socket of `family` (what an unbound socket reports).
pub fn any(family: u32) -> IpAddr {
    if family == AF_INET {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    }
}

/// Routes to `dst` over `lo`, the only interface: returns the destination (the unspecified
/// address means this host, as `ip_route_connect` treats it) and the source address the
/// packet gets. Anything off the loopback network is `ENETUNREACH`: the guest has no other
/// network.
pub fn route(dst: IpAddr) -> SysResult<(IpAddr, IpAddr)> {
    match dst {
        IpAddr::V4(a) if a.is_unspecified() || a.is_loopback() => {
            let d = if a.is_unspecified() {
                Ipv4Addr::LOCALHOST
            } else {
                a
            };
            // The local route 127.0.0.0/8 has preferred source 127.0.0.1.
            Ok((IpAddr::V4(d), IpAddr::V4(Ipv4Addr::LOCALHOST)))
        }
        IpAddr::V6(a) if a.is_unspecified() || a.is_loopback() => Ok((
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        )),
        _ => Err(Errno::ENETUNREACH),
    }
}

/// Whether a socket may bind `ip` (Linux `inet_addr_valid_or_nonlocal` / the checks of
/// `__inet6_bind`): the wildcard, a loopback address, or a multicast or broadcast address.
pub fn bindable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            a.is_unspecified() || a.is_loopback() || a.is_multicast() || a.is_broadcast()
        }
        IpAddr::V6(a) => a.is_unspecified() || a.is_loopback() || a.is_multicast(),
    }
}

/// Whether two bound addresses (each with its socket's `IPV6_V6ONLY`) claim a common address,
/// so that they compete for a port (`inet_rcv_saddr_equal` with `match_wildcard`).
pub fn overlap(a: IpAddr, a_v6only: bool, b: IpAddr, b_v6only: bool) -> bool {
    match (a, b) {
        (IpAddr::V4(x), IpAddr::V4(y)) => x.is_unspecified() || y.is_unspecified() || x == y,
        (IpAddr::V6(x), IpAddr::V6(y)) => x.is_unspecified() || y.is_unspecified() || x == y,
        // A dual-stack wildcard (:: without IPV6_V6ONLY) also holds every IPv4 address.
        (IpAddr::V4(_), IpAddr::V6(y)) => y.is_unspecified() && !b_v6only,
        (IpAddr::V6(x), IpAddr::V4(_)) => x.is_unspecified() && !a_v6only,
    }
}

/// Whether a socket bound to `local` takes a packet for `dst`; the score ranks candidates
/// (Linux `compute_score`: an exact address beats a wildcard, the packet's own family beats a
/// dual-stack socket). `None`: no match.
pub fn match_score(local: IpAddr, v6only: bool, dst: IpAddr) -> Option<u32> {
    match (local, dst) {
        (IpAddr::V4(l), IpAddr::V4(d)) if l == d => Some(4),
        (IpAddr::V4(l), IpAddr::V4(_)) if l.is_unspecified() => Some(2),
        (IpAddr::V6(l), IpAddr::V6(d)) if l == d => Some(4),
        (IpAddr::V6(l), IpAddr::V6(_)) if l.is_unspecified() => Some(2),
        (IpAddr::V6(l), IpAddr::V4(_)) if l.is_unspecified() && !v6only => Some(1),
        _ => None,
    }
}

/// Picks a free port from `[low, high]` starting at `seed` (a random number), trying one
/// parity first and then the other, as Linux does: `bind` to port 0 prefers ports whose
/// offset from `low` is odd, `connect` even ones (so the two rarely compete). `free` says
/// whether a port may be taken.
pub fn pick_port(
    (low, high): (u16, u16),
    seed: u32,
    for_connect: bool,
    mut free: impl FnMut(u16) -> bool,
) -> Option<u16> {
    let low = u32::from(low);
    let end = u32::from(high) + 1;
    let mut remaining = end.saturating_sub(low);
    if remaining == 0 {
        return None;
    }
    if remaining > 1 {
        remaining &= !1;
    }
    let mut offset = seed % remaining;
    offset = if for_connect { offset & !1 } else { offset | 1 };
    for _ in 0..2 {
        let mut port = low + offset;
        let mut i = 0;
        while i < remaining {
            if port >= end {
                port -= remaining;
            }
            if port >= low && port < end && free(port as u16) {
                return Some(port as u16);
            }
            port += 2;
            i += 2;
        }
        offset ^= 1;
    }
    // An odd-sized range leaves its last port out of the paired scan.
    (low..end).map(|p| p as u16).find(|&p| free(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sin(ip: [u8; 4], port: u16) -> Vec<u8> {
        SockaddrIn {
            sin_family: AF_INET as u16,
            sin_port: port.to_be_bytes(),
            sin_addr: ip,
            pad: [0; 8],
        }
        .as_bytes()
    }

    #[test]
    fn decode_families_and_lengths() {
        let b = sin([127, 0, 0, 1], 8080);
        assert_eq!(b.len(), 16);
        assert_eq!(
            decode(&b).unwrap(),
            Sa::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8080))
        );
        // Short sockaddr_in: not an AF_INET address at all.
        assert_eq!(
            decode(&b[..15]).unwrap(),
            Sa::Other {
                family: AF_INET,
                len: 15
            }
        );
        assert_eq!(decode(&b[..1]), Err(Errno::EINVAL));
        let mut u = b.clone();
        u[0] = 0;
        assert_eq!(
            decode(&u).unwrap(),
            Sa::Unspec {
                v4: Some(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8080))
            }
        );
        assert_eq!(decode(&u[..2]).unwrap(), Sa::Unspec { v4: None });
        let mut s6 = SockaddrIn6 {
            sin6_family: AF_INET6 as u16,
            sin6_port: 443u16.to_be_bytes(),
            sin6_addr: Ipv6Addr::LOCALHOST.octets(),
            ..Default::default()
        }
        .as_bytes();
        assert_eq!(s6.len(), 28);
        let want = Sa::V6(SocketAddrV6::new(Ipv6Addr::LOCALHOST, 443, 0, 0));
        assert_eq!(decode(&s6).unwrap(), want);
        // RFC 2133 length (no scope id) is still an AF_INET6 address; 23 bytes is not.
        assert_eq!(decode(&s6[..24]).unwrap(), want);
        assert!(matches!(decode(&s6[..23]).unwrap(), Sa::Other { .. }));
        s6[0] = 47;
        assert!(matches!(decode(&s6).unwrap(), Sa::Other { family: 47, .. }));
    }

    #[test]
    fn mapped_addresses_are_ipv4() {
        let m = Ipv4Addr::new(127, 0, 0, 1).to_ipv6_mapped();
        assert_eq!(unmap(&m), Some(Ipv4Addr::LOCALHOST));
        assert_eq!(unmap(&Ipv6Addr::LOCALHOST), None);
        let c = canon6(&SocketAddrV6::new(m, 5, 0, 0));
        assert_eq!(c, "127.0.0.1:5".parse::<SocketAddr>().unwrap());
        // And back: an AF_INET6 socket reports it mapped, an AF_INET one as sockaddr_in.
        let b = encode(AF_INET6, &c);
        assert_eq!(b.len(), 28);
        assert_eq!(&b[8..24], &m.octets());
        assert_eq!(&b[2..4], &[0, 5]);
        assert_eq!(encode(AF_INET, &c), sin([127, 0, 0, 1], 5));
    }

    #[test]
    fn only_loopback_routes() {
        let v4 = |s: &str| IpAddr::V4(s.parse().unwrap());
        assert_eq!(
            route(v4("127.3.2.1")).unwrap(),
            (v4("127.3.2.1"), v4("127.0.0.1"))
        );
        assert_eq!(route(v4("0.0.0.0")).unwrap().0, v4("127.0.0.1"));
        assert_eq!(route(v4("10.255.254.253")), Err(Errno::ENETUNREACH));
        assert_eq!(route(v4("8.8.8.8")), Err(Errno::ENETUNREACH));
        assert_eq!(route(v4("224.0.0.1")), Err(Errno::ENETUNREACH));
        let v6 = |s: &str| IpAddr::V6(s.parse().unwrap());
        assert_eq!(route(v6("::")).unwrap(), (v6("::1"), v6("::1")));
        assert_eq!(route(v6("2001:db8::1")), Err(Errno::ENETUNREACH));
        assert!(bindable(v4("127.1.2.3")) && bindable(v4("0.0.0.0")));
        assert!(!bindable(v4("10.255.254.253")));
        assert!(bindable(v6("::1")) && !bindable(v6("fe80::1")));
    }

    #[test]
    fn overlap_and_match_rules() {
        let any4 = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        let lo4 = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let lo4b = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        let any6 = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
        let lo6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        assert!(overlap(any4, false, lo4, false));
        assert!(!overlap(lo4, false, lo4b, false));
        assert!(overlap(any4, false, any6, false));
        assert!(!overlap(any4, false, any6, true));
        assert!(overlap(lo4, false, any6, false));
        assert!(!overlap(lo4, false, lo6, false));
        assert!(overlap(any6, true, any6, false));
        assert_eq!(match_score(lo4, false, lo4), Some(4));
        assert_eq!(match_score(any4, false, lo4), Some(2));
        assert_eq!(match_score(any6, false, lo4), Some(1));
        assert_eq!(match_score(any6, true, lo4), None);
        assert_eq!(match_score(lo4b, false, lo4), None);
        assert_eq!(match_score(lo6, false, lo6), Some(4));
    }

    #[test]
    fn port_picking() {
        // bind(0) takes odd offsets first, connect even ones, and both wrap inside the range.
        let p = pick_port(EPHEMERAL_PORTS, 0, false, |_| true).unwrap();
        assert_eq!(p, 32769);
        let p = pick_port(EPHEMERAL_PORTS, 0, true, |_| true).unwrap();
        assert_eq!(p, 32768);
        let p = pick_port(EPHEMERAL_PORTS, 28231, false, |_| true).unwrap();
        assert_eq!(p, 60999);
        let p = pick_port(EPHEMERAL_PORTS, 28231, true, |_| true).unwrap();
        assert_eq!(p, 60998);
        // Every port gets tried once: only the last free one is found.
        let mut seen = std::collections::HashSet::new();
        let p = pick_port(EPHEMERAL_PORTS, 12345, false, |p| {
            assert!((32768..=60999).contains(&p));
            seen.insert(p);
            p == 40000
        });
        assert_eq!(p, Some(40000));
        assert_eq!(pick_port(EPHEMERAL_PORTS, 7, true, |_| false), None);
        assert_eq!(pick_port((5, 5), 3, false, |_| true), Some(5));
        assert_eq!(pick_port((5, 7), 3, true, |p| p == 7), Some(7));
    }
}
