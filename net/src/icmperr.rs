//! ICMP errors that arrive on a device for the guest's own sockets (Linux `net/ipv4/icmp.c`
//! `icmp_unreach`/`icmp_err_convert`, `net/ipv6/icmp.c` `icmpv6_notify`/`icmpv6_err_convert`,
//! `net/ipv4/ip_sockglue.c` `ip_icmp_error`/`ip_recv_error`, `net/ipv6/datagram.c`
//! `ipv6_icmp_error`/`ipv6_recv_error`; ip(7), ipv6(7) `IP_RECVERR`/`IPV6_RECVERR`).
//!
//! smoltcp ignores ICMP errors, so the device stack (`crate::stack`) looks at every received
//! packet first: [`parse`] takes an ICMP destination unreachable / time exceeded (v4 types 3
//! and 11, v6 types 1 and 3; checksum checked) apart into an [`IcmpErr`] naming the quoted
//! packet's protocol, source and destination, and the stack hands it to the owner of the
//! smoltcp socket that sent that packet. The owner (`crate::inet`, `link.rs` `fill`) decides
//! as `udp_err`/`tcp_v4_err` do, with [`convert`]'s errno and "fatal" bit, and queues an
//! [`ErrEntry`] on its error queue when `IP_RECVERR`/`IPV6_RECVERR` is on; [`ErrEntry::cmsg`]
//! is the `sock_extended_err` + `SO_EE_OFFENDER` control message `recvmsg(MSG_ERRQUEUE)`
//! returns. "Fragmentation needed" / "packet too big" (path MTU) are not errors here: the
//! device MTU already bounds what smoltcp sends.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use um_uapi::Errno;
use um_uapi::abi::inet::{
    IPPROTO_IP, IPPROTO_IPV6, SO_EE_ORIGIN_ICMP, SO_EE_ORIGIN_ICMP6, SockExtendedErr, ip, ipv6,
};
use um_uapi::abi::pod::Pod;

/// IPPROTO_TCP / IPPROTO_UDP as the quoted header carries them.
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
/// Error-queue entries a socket keeps; more are dropped (Linux bounds the queue by the
/// receive buffer, `sock_queue_err_skb`).
pub const ERRQ_MAX: usize = 64;

/// One ICMP error about a packet one of our sockets sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IcmpErr {
    /// ICMPv6 (else ICMPv4).
    pub v6: bool,
    pub ty: u8,
    pub code: u8,
    /// The router or host that sent the ICMP message (`SO_EE_OFFENDER`).
    pub offender: IpAddr,
    /// The quoted packet's transport protocol, source (ours) and destination.
    pub proto: u8,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// The quoted packet's transport payload (after the 8-byte UDP header), as far as quoted.
    pub payload: Vec<u8>,
}

/// RFC 1071 checksum of `parts` (0 when they carry a correct checksum).
fn csum(parts: &[&[u8]]) -> u16 {
    let mut sum: u64 = 0;
    let mut odd: Option<u8> = None;
    for p in parts {
        for &b in *p {
            match odd.take() {
                Some(hi) => sum += u64::from(u16::from_be_bytes([hi, b])),
                None => odd = Some(b),
            }
        }
    }
    if let Some(hi) = odd {
        sum += u64::from(hi) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The quoted packet of an ICMP error: (proto, src, dst, transport bytes).
fn quoted(q: &[u8], v6: bool) -> Option<(u8, SocketAddr, SocketAddr, &[u8])> {
    let (proto, s, d, l4) = if v6 {
        if q.len() < 40 || q[0] >> 4 != 6 {
            return None;
        }
        let s: [u8; 16] = q[8..24].try_into().ok()?;
        let d: [u8; 16] = q[24..40].try_into().ok()?;
        (
            q[6],
            IpAddr::V6(Ipv6Addr::from(s)),
            IpAddr::V6(Ipv6Addr::from(d)),
            &q[40..],
        )
    } else {
        let ihl = usize::from(q.first()? & 0xf) * 4;
        if q[0] >> 4 != 4 || ihl < 20 || q.len() < ihl {
            return None;
        }
        let s: [u8; 4] = q[12..16].try_into().ok()?;
        let d: [u8; 4] = q[16..20].try_into().ok()?;
        (
            q[9],
            IpAddr::V4(Ipv4Addr::from(s)),
            IpAddr::V4(Ipv4Addr::from(d)),
            &q[ihl..],
        )
    };
    if !matches!(proto, PROTO_TCP | PROTO_UDP) || l4.len() < 8 {
        return None;
    }
    let sp = u16::from_be_bytes([l4[0], l4[1]]);
    let dp = u16::from_be_bytes([l4[2], l4[3]]);
    Some((proto, SocketAddr::new(s, sp), SocketAddr::new(d, dp), l4))
}

/// The ICMP error in IP packet `p` (an Ethernet frame's payload), if it is one we act on.
pub fn parse(p: &[u8]) -> Option<IcmpErr> {
    let v6 = p.first()? >> 4 == 6;
    let (src, icmp) = if v6 {
        if p.len() < 48 || p[6] != 58 {
            return None;
        }
        let plen = usize::from(u16::from_be_bytes([p[4], p[5]]));
        let icmp = p.get(40..40 + plen)?;
        let s: [u8; 16] = p[8..24].try_into().ok()?;
        let d = &p[24..40];
        let len = (icmp.len() as u32).to_be_bytes();
        if csum(&[&s, d, &len, &[0, 0, 0, 58], icmp]) != 0 {
            return None;
        }
        (IpAddr::V6(Ipv6Addr::from(s)), icmp)
    } else {
        let ihl = usize::from(p[0] & 0xf) * 4;
        let total = usize::from(u16::from_be_bytes([*p.get(2)?, *p.get(3)?]));
        if p[0] >> 4 != 4 || ihl < 20 || p.len() < total || total < ihl + 8 || p[9] != 1 {
            return None;
        }
        // Fragments are reassembled before this; a non-first one would not start with ICMP.
        if u16::from_be_bytes([p[6], p[7]]) & 0x1fff != 0 {
            return None;
        }
        let icmp = &p[ihl..total];
        if csum(&[icmp]) != 0 {
            return None;
        }
        let s: [u8; 4] = p[12..16].try_into().ok()?;
        (IpAddr::V4(Ipv4Addr::from(s)), icmp)
    };
    let (ty, code) = (icmp[0], icmp[1]);
    let ours = if v6 {
        matches!(ty, 1 | 3)
    } else {
        // 3/4 is "fragmentation needed": path MTU, not an error (see the module doc).
        ty == 11 || ty == 3 && code != 4
    };
    if !ours {
        return None;
    }
    let (proto, qs, qd, l4) = quoted(&icmp[8..], v6)?;
    Some(IcmpErr {
        v6,
        ty,
        code,
        offender: src,
        proto,
        src: qs,
        dst: qd,
        payload: if proto == PROTO_UDP {
            l4[8..].to_vec()
        } else {
            Vec::new()
        },
    })
}

/// The errno of an error and whether it is "fatal" (a hard error a socket without
/// `IP_RECVERR` still hears): `icmp_err_convert` and `icmpv6_err_convert`.
pub fn convert(e: &IcmpErr) -> (Errno, bool) {
    if e.v6 {
        return match (e.ty, e.code) {
            (1, 0) => (Errno::ENETUNREACH, false),
            (1, 1) | (1, 5) | (1, 6) => (Errno::EACCES, true),
            (1, 2) | (1, 3) => (Errno::EHOSTUNREACH, false),
            (1, 4) => (Errno::ECONNREFUSED, true),
            (1, _) => (Errno::EPROTO, true),
            (3, _) => (Errno::EHOSTUNREACH, false),
            _ => (Errno::EPROTO, false),
        };
    }
    match (e.ty, e.code) {
        (3, 0) | (3, 11) => (Errno::ENETUNREACH, false),
        (3, 1) | (3, 12) => (Errno::EHOSTUNREACH, false),
        (3, 2) => (Errno::ENOPROTOOPT, true),
        (3, 3) => (Errno::ECONNREFUSED, true),
        (3, 5) => (Errno::EOPNOTSUPP, false),
        (3, 6) | (3, 9) => (Errno::ENETUNREACH, true),
        (3, 7) => (Errno::EHOSTDOWN, true),
        (3, 8) => (Errno::ENONET, true),
        (3, 10) | (3, 13) | (3, 14) | (3, 15) => (Errno::EHOSTUNREACH, true),
        // __udp4_lib_err: beyond NR_ICMP_UNREACH, EHOSTUNREACH and not fatal.
        (3, _) => (Errno::EHOSTUNREACH, false),
        // ICMP_TIME_EXCEEDED.
        _ => (Errno::EHOSTUNREACH, false),
    }
}

/// An error-queue entry (the `sk_buff` `ip_icmp_error` queues, reduced to what
/// `ip_recv_error` returns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrEntry {
    pub errno: Errno,
    pub err: IcmpErr,
}

impl ErrEntry {
    /// The `IP_RECVERR` / `IPV6_RECVERR` control message for a socket of `family`
    /// (`ip_recv_error`: `SOL_IP` and a `sockaddr_in` offender; `ipv6_recv_error`: `SOL_IPV6`
    /// and a `sockaddr_in6`, IPv4 mapped for an ICMPv4 error).
    pub fn cmsg(&self, family: u32) -> (i32, i32, Vec<u8>) {
        let ee = SockExtendedErr {
            ee_errno: self.errno.get() as u32,
            ee_origin: if self.err.v6 {
                SO_EE_ORIGIN_ICMP6
            } else {
                SO_EE_ORIGIN_ICMP
            },
            ee_type: self.err.ty,
            ee_code: self.err.code,
            ..Default::default()
        };
        let mut b = ee.as_bytes();
        b.extend(crate::inet::addr::encode(
            family,
            &SocketAddr::new(self.err.offender, 0),
        ));
        if family == crate::AF_INET6 {
            (IPPROTO_IPV6, ipv6::IPV6_RECVERR, b)
        } else {
            (IPPROTO_IP, ip::IP_RECVERR, b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ICMPv4 error of `ty`/`code` from `from` quoting a UDP datagram 10.0.2.15:4000 ->
    /// 10.0.2.2:9 carrying `data`.
    fn v4_err(ty: u8, code: u8, data: &[u8]) -> Vec<u8> {
        let mut q = vec![
            0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 2, 15, 10, 0, 2, 2,
        ];
        let ql = (28 + data.len()) as u16;
        q[2..4].copy_from_slice(&ql.to_be_bytes());
        q.extend_from_slice(&[0x0f, 0xa0, 0, 9]);
        q.extend_from_slice(&(8 + data.len() as u16).to_be_bytes());
        q.extend_from_slice(&[0, 0]);
        q.extend_from_slice(data);
        let mut icmp = vec![ty, code, 0, 0, 0, 0, 0, 0];
        icmp.extend(q);
        let c = csum(&[&icmp]);
        icmp[2..4].copy_from_slice(&c.to_be_bytes());
        let mut p = vec![
            0x45, 0, 0, 0, 0, 0, 0, 0, 64, 1, 0, 0, 10, 0, 2, 2, 10, 0, 2, 15,
        ];
        let tl = (20 + icmp.len()) as u16;
        p[2..4].copy_from_slice(&tl.to_be_bytes());
        p.extend(icmp);
        p
    }

    #[test]
    fn port_unreachable_names_the_datagram() {
        let e = parse(&v4_err(3, 3, b"ping")).expect("parsed");
        assert_eq!(e.proto, PROTO_UDP);
        assert_eq!(e.src, "10.0.2.15:4000".parse().unwrap());
        assert_eq!(e.dst, "10.0.2.2:9".parse().unwrap());
        assert_eq!(e.offender, "10.0.2.2".parse::<IpAddr>().unwrap());
        assert_eq!(e.payload, b"ping");
        assert_eq!(convert(&e), (Errno::ECONNREFUSED, true));
    }

    #[test]
    fn bad_checksum_echo_and_frag_needed_are_ignored() {
        let mut p = v4_err(3, 3, b"x");
        p[22] ^= 1;
        assert!(parse(&p).is_none());
        assert!(parse(&v4_err(0, 0, b"x")).is_none());
        assert!(parse(&v4_err(3, 4, b"x")).is_none());
        // Truncated anywhere: nothing, and no panic.
        let p = v4_err(3, 1, b"abc");
        for n in 0..p.len() {
            let _ = parse(&p[..n]);
        }
    }

    #[test]
    fn errno_table_follows_icmp_err_convert() {
        let mut e = parse(&v4_err(3, 1, b"")).unwrap();
        assert_eq!(convert(&e), (Errno::EHOSTUNREACH, false));
        e.code = 0;
        assert_eq!(convert(&e), (Errno::ENETUNREACH, false));
        e.code = 13;
        assert_eq!(convert(&e), (Errno::EHOSTUNREACH, true));
        e.v6 = true;
        e.ty = 1;
        e.code = 1;
        assert_eq!(convert(&e), (Errno::EACCES, true));
        e.code = 4;
        assert_eq!(convert(&e), (Errno::ECONNREFUSED, true));
        e.code = 0;
        assert_eq!(convert(&e), (Errno::ENETUNREACH, false));
    }

    #[test]
    fn cmsg_is_extended_err_and_offender() {
        let e = parse(&v4_err(3, 3, b"")).unwrap();
        let ent = ErrEntry {
            errno: Errno::ECONNREFUSED,
            err: e,
        };
        let (lvl, ty, b) = ent.cmsg(crate::AF_INET);
        assert_eq!((lvl, ty, b.len()), (0, 11, 32));
        assert_eq!(&b[..8], &[111, 0, 0, 0, 2, 3, 3, 0]);
        assert_eq!(&b[16..24], &[2, 0, 0, 0, 10, 0, 2, 2]);
        let (lvl, ty, b) = ent.cmsg(crate::AF_INET6);
        assert_eq!((lvl, ty, b.len()), (41, 25, 44));
    }
}
