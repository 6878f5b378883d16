//! The few wire formats the backend reads and writes: Ethernet II, ARP, IPv4, IPv6, TCP, UDP,
//! ICMP and ICMPv6, and the Internet checksum (RFC 1071).
//!
//! Written here rather than taken from smoltcp's `wire` module: the backend needs only a dozen
//! fixed-offset fields per header and one builder that writes Ethernet + IP + L4 header + payload
//! into one buffer (one copy of the payload, the checksum computed in place), which smoltcp's
//! `Repr::emit` split does not give; and every read here goes through [`Rd`], which returns
//! `None` past the end, so no malformed frame can index out of bounds (the "never panic on guest
//! input" rule is checked by the fuzz-ish unit test in `lib.rs`).
//!
//! Parsing does not verify the guest's checksums: the guest's NIC may use checksum offload, and
//! the guest is the only sender on this point-to-point link (passt trusts the tap the same way).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub type Mac = [u8; 6];

pub const ETH_HLEN: usize = 14;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
pub const BROADCAST: Mac = [0xff; 6];

pub const PROTO_ICMP: u8 = 1;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
pub const PROTO_ICMPV6: u8 = 58;

// TCP flags (RFC 9293 section 3.1).
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;

/// Bounds-checked big-endian reads over a byte slice.
#[derive(Clone, Copy)]
pub struct Rd<'a>(pub &'a [u8]);

impl<'a> Rd<'a> {
    pub fn u8(&self, off: usize) -> Option<u8> {
        self.0.get(off).copied()
    }
    pub fn u16(&self, off: usize) -> Option<u16> {
        let b = self.0.get(off..off.checked_add(2)?)?;
        Some(u16::from_be_bytes([b[0], b[1]]))
    }
    pub fn u32(&self, off: usize) -> Option<u32> {
        let b = self.0.get(off..off.checked_add(4)?)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn bytes(&self, off: usize, len: usize) -> Option<&'a [u8]> {
        self.0.get(off..off.checked_add(len)?)
    }
    pub fn rest(&self, off: usize) -> Option<&'a [u8]> {
        self.0.get(off..)
    }
    pub fn mac(&self, off: usize) -> Option<Mac> {
        self.bytes(off, 6)?.try_into().ok()
    }
    pub fn v4(&self, off: usize) -> Option<Ipv4Addr> {
        let b: [u8; 4] = self.bytes(off, 4)?.try_into().ok()?;
        Some(Ipv4Addr::from(b))
    }
    pub fn v6(&self, off: usize) -> Option<Ipv6Addr> {
        let b: [u8; 16] = self.bytes(off, 16)?.try_into().ok()?;
        Some(Ipv6Addr::from(b))
    }
}

/// One's-complement sum of `data` (RFC 1071), not yet folded. Eight bytes at a time: the
/// one's-complement sum may be accumulated in wider words and folded at the end (RFC 1071
/// 2.(B) "parallel summation"), which is what makes a 64 KiB segment cheap.
pub fn csum_add(sum: u32, data: &[u8]) -> u32 {
    let mut acc = u64::from(sum);
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let v = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        // Two 32-bit halves: each add is below 2^33, so 2^30 of them cannot overflow.
        acc += (v >> 32) + (v & 0xffff_ffff);
    }
    let mut rest = chunks.remainder().chunks_exact(2);
    for c in &mut rest {
        acc += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = rest.remainder() {
        acc += u64::from(*last) << 8;
    }
    while acc > 0xffff_ffff {
        acc = (acc & 0xffff_ffff) + (acc >> 32);
    }
    // Down to 16 bits plus a carry, so callers may keep adding small values.
    let mut s = acc as u32;
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s
}

pub fn csum_fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The TCP/UDP/ICMPv6 pseudo-header sum (RFC 9293 3.1, RFC 768, RFC 8200 8.1).
fn pseudo_sum(src: IpAddr, dst: IpAddr, proto: u8, len: usize) -> u32 {
    let mut s = 0;
    match (src, dst) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            s = csum_add(s, &a.octets());
            s = csum_add(s, &b.octets());
        }
        (a, b) => {
            s = csum_add(s, &v6_of(a).octets());
            s = csum_add(s, &v6_of(b).octets());
        }
    }
    s = s.wrapping_add(u32::from(proto));
    s.wrapping_add(len as u32)
}

fn v6_of(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

/// A parsed Ethernet II frame.
pub struct Eth<'a> {
    pub src: Mac,
    pub ethertype: u16,
    pub payload: &'a [u8],
}

pub fn parse_eth(f: &[u8]) -> Option<Eth<'_>> {
    let r = Rd(f);
    Some(Eth {
        src: r.mac(6)?,
        ethertype: r.u16(12)?,
        payload: r.rest(ETH_HLEN)?,
    })
}

/// A parsed IPv4 or IPv6 packet (no fragments, no IPv6 extension headers other than none).
pub struct Ip<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub proto: u8,
    /// The whole IP packet, header included, trimmed to its stated length (for ICMP errors).
    pub packet: &'a [u8],
    pub payload: &'a [u8],
}

pub fn parse_ipv4(p: &[u8]) -> Option<Ip<'_>> {
    let r = Rd(p);
    let vihl = r.u8(0)?;
    if vihl >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(vihl & 0xf) * 4;
    let total = usize::from(r.u16(2)?);
    if ihl < 20 || total < ihl || total > p.len() {
        return None;
    }
    // Fragments (MF set or a non-zero offset) are for `crate::frag` to reassemble first.
    let frag = r.u16(6)?;
    if frag & 0x3fff != 0 {
        return None;
    }
    let packet = r.bytes(0, total)?;
    Some(Ip {
        src: IpAddr::V4(r.v4(12)?),
        dst: IpAddr::V4(r.v4(16)?),
        proto: r.u8(9)?,
        packet,
        payload: packet.get(ihl..)?,
    })
}

pub fn parse_ipv6(p: &[u8]) -> Option<Ip<'_>> {
    let r = Rd(p);
    if r.u8(0)? >> 4 != 6 {
        return None;
    }
    let plen = usize::from(r.u16(4)?);
    let packet = r.bytes(0, 40 + plen)?;
    // Extension headers are not followed (fragments are reassembled by `crate::frag`
    // first): hop-by-hop ones are dropped, which loses only MLD reports (there is no
    // multicast router here).
    Some(Ip {
        src: IpAddr::V6(r.v6(8)?),
        dst: IpAddr::V6(r.v6(24)?),
        proto: r.u8(6)?,
        packet,
        payload: packet.get(40..)?,
    })
}

/// A parsed TCP segment.
pub struct Tcp<'a> {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub payload: &'a [u8],
}

pub fn parse_tcp(p: &[u8]) -> Option<Tcp<'_>> {
    let r = Rd(p);
    let doff = usize::from(r.u8(12)? >> 4) * 4;
    if doff < 20 || doff > p.len() {
        return None;
    }
    let (mut mss, mut wscale) = (None, None);
    // Options (RFC 9293 3.2): kind 0 end, 1 nop, 2 MSS, 3 window scale (RFC 7323 2.2).
    let mut i = 20;
    while i < doff {
        match r.u8(i)? {
            0 => break,
            1 => i += 1,
            kind => {
                let len = usize::from(r.u8(i + 1)?);
                if len < 2 || i + len > doff {
                    break;
                }
                match (kind, len) {
                    (2, 4) => mss = r.u16(i + 2),
                    (3, 3) => wscale = r.u8(i + 2).map(|s| s.min(14)),
                    _ => {}
                }
                i += len;
            }
        }
    }
    Some(Tcp {
        sport: r.u16(0)?,
        dport: r.u16(2)?,
        seq: r.u32(4)?,
        ack: r.u32(8)?,
        flags: r.u8(13)?,
        window: r.u16(14)?,
        mss,
        wscale,
        payload: r.rest(doff)?,
    })
}

pub struct Udp<'a> {
    pub sport: u16,
    pub dport: u16,
    pub payload: &'a [u8],
}

pub fn parse_udp(p: &[u8]) -> Option<Udp<'_>> {
    let r = Rd(p);
    let len = usize::from(r.u16(4)?);
    if len < 8 || len > p.len() {
        return None;
    }
    Some(Udp {
        sport: r.u16(0)?,
        dport: r.u16(2)?,
        payload: r.bytes(8, len - 8)?,
    })
}

/// The MAC the backend uses for one of its own IPv4 addresses: slirp's `special_ethaddr`
/// 52:55 followed by the address (libslirp `arp_input`), so 10.0.2.2 is 52:55:0a:00:02:02.
pub fn special_mac(a: Ipv4Addr) -> Mac {
    let o = a.octets();
    [0x52, 0x55, o[0], o[1], o[2], o[3]]
}

/// Builds one Ethernet frame: Ethernet + IP header (TTL/hop limit 64, or 255 for NDP) +
/// `l4` (the L4 header with its checksum field zero) + `payload`, and fills in the L4
/// checksum (TCP, UDP, ICMP, ICMPv6). `src` and `dst` must be the same family.
pub fn build(
    dst_mac: Mac,
    src_mac: Mac,
    src: IpAddr,
    dst: IpAddr,
    proto: u8,
    l4: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let l4len = l4.len() + payload.len();
    let v6 = matches!(dst, IpAddr::V6(_));
    let iphl = if v6 { 40 } else { 20 };
    let mut f = Vec::with_capacity(ETH_HLEN + iphl + l4len);
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&(if v6 { ETHERTYPE_IPV6 } else { ETHERTYPE_IPV4 }).to_be_bytes());
    let ttl = if proto == PROTO_ICMPV6 { 255 } else { 64 };
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let total = (20 + l4len).min(0xffff) as u16;
            let mut h = [0u8; 20];
            h[0] = 0x45;
            h[2..4].copy_from_slice(&total.to_be_bytes());
            h[6] = 0x40; // DF: the backend never sends anything that would need fragmenting
            h[8] = ttl;
            h[9] = proto;
            h[12..16].copy_from_slice(&s.octets());
            h[16..20].copy_from_slice(&d.octets());
            let c = csum_fold(csum_add(0, &h));
            h[10..12].copy_from_slice(&c.to_be_bytes());
            f.extend_from_slice(&h);
        }
        (s, d) => {
            let mut h = [0u8; 40];
            h[0] = 0x60;
            h[4..6].copy_from_slice(&(l4len.min(0xffff) as u16).to_be_bytes());
            h[6] = proto;
            h[7] = ttl;
            h[8..24].copy_from_slice(&v6_of(s).octets());
            h[24..40].copy_from_slice(&v6_of(d).octets());
            f.extend_from_slice(&h);
        }
    }
    let l4off = f.len();
    f.extend_from_slice(l4);
    f.extend_from_slice(payload);
    let coff = match proto {
        PROTO_TCP => Some(16),
        PROTO_UDP => Some(6),
        PROTO_ICMP | PROTO_ICMPV6 => Some(2),
        _ => None,
    };
    if let Some(coff) = coff.filter(|c| c + 2 <= l4.len()) {
        let seg = &f[l4off..];
        let base = if proto == PROTO_ICMP {
            0
        } else {
            pseudo_sum(src, dst, proto, l4len)
        };
        let mut c = csum_fold(csum_add(base, seg));
        if proto == PROTO_UDP && c == 0 {
            c = 0xffff; // RFC 768: a computed zero is sent as all ones
        }
        f[l4off + coff..l4off + coff + 2].copy_from_slice(&c.to_be_bytes());
    }
    f
}

/// A TCP header (no options beyond MSS and window scale, which go on SYNs only).
pub fn tcp_header(
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    window: u16,
    syn_opts: Option<(u16, Option<u8>)>,
) -> Vec<u8> {
    let optlen = match syn_opts {
        None => 0,
        Some((_, None)) => 4,
        Some((_, Some(_))) => 8,
    };
    let mut h = vec![0u8; 20 + optlen];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    h[8..12].copy_from_slice(&ack.to_be_bytes());
    h[12] = (((20 + optlen) / 4) as u8) << 4;
    h[13] = flags;
    h[14..16].copy_from_slice(&window.to_be_bytes());
    if let Some((mss, ws)) = syn_opts {
        // MSS (kind 2), then NOP + window scale (kind 3) (RFC 9293 3.7.1, RFC 7323 2.2).
        h[20..24].copy_from_slice(&[2, 4, (mss >> 8) as u8, mss as u8]);
        if let Some(ws) = ws {
            h[24..28].copy_from_slice(&[1, 3, 3, ws]);
        }
    }
    h
}

pub fn udp_header(sport: u16, dport: u16, payload_len: usize) -> [u8; 8] {
    let mut h = [0u8; 8];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..6].copy_from_slice(&((8 + payload_len).min(0xffff) as u16).to_be_bytes());
    h
}

/// ARP over Ethernet for IPv4 (RFC 826): a reply from `sha`/`spa` to `tha`/`tpa`.
pub fn arp_reply(sha: Mac, spa: Ipv4Addr, tha: Mac, tpa: Ipv4Addr) -> Vec<u8> {
    let mut f = Vec::with_capacity(42);
    f.extend_from_slice(&tha);
    f.extend_from_slice(&sha);
    f.extend_from_slice(&ETHERTYPE_ARP.to_be_bytes());
    f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
    f.extend_from_slice(&sha);
    f.extend_from_slice(&spa.octets());
    f.extend_from_slice(&tha);
    f.extend_from_slice(&tpa.octets());
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_of_rfc1071_example() {
        // RFC 1071 section 3: the sum of 00 01 f2 03 f4 f5 f6 f7 is ddf2 (before complement).
        let s = csum_add(0, &[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]);
        assert_eq!(csum_fold(s), !0xddf2);
    }

    #[test]
    fn wide_checksum_matches_the_plain_one() {
        let plain = |d: &[u8]| {
            let mut s: u32 = 0;
            for c in d.chunks(2) {
                s += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
                s = (s & 0xffff) + (s >> 16);
            }
            s
        };
        let data: Vec<u8> = (0..70000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for n in [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 1499, 65535, 70000] {
            assert_eq!(
                csum_fold(csum_add(0, &data[..n])),
                csum_fold(plain(&data[..n])),
                "{n}"
            );
            assert_eq!(
                csum_fold(csum_add(0xfffe, &data[..n])),
                csum_fold(plain(&data[..n]) + 0xfffe),
                "{n}"
            );
        }
    }

    #[test]
    fn built_frames_check_out() {
        let src = IpAddr::V4(Ipv4Addr::new(10, 0, 2, 2));
        let dst = IpAddr::V4(Ipv4Addr::new(10, 0, 2, 15));
        let h = tcp_header(80, 1234, 7, 9, ACK | SYN, 100, Some((1460, Some(7))));
        let f = build([1; 6], [2; 6], src, dst, PROTO_TCP, &h, b"abc");
        let eth = parse_eth(&f).unwrap();
        let ip = parse_ipv4(eth.payload).unwrap();
        // A header with a correct checksum sums to zero.
        assert_eq!(csum_fold(csum_add(0, &ip.packet[..20])), 0);
        let base = pseudo_sum(src, dst, PROTO_TCP, ip.payload.len());
        assert_eq!(csum_fold(csum_add(base, ip.payload)), 0);
        let t = parse_tcp(ip.payload).unwrap();
        assert_eq!(
            (t.sport, t.dport, t.seq, t.ack, t.mss, t.wscale),
            (80, 1234, 7, 9, Some(1460), Some(7))
        );
        assert_eq!(t.payload, b"abc");
        let src6 = IpAddr::V6("fd00::2".parse().unwrap());
        let dst6 = IpAddr::V6("fd00::15".parse().unwrap());
        let f = build(
            [1; 6],
            [2; 6],
            src6,
            dst6,
            PROTO_UDP,
            &udp_header(53, 9, 2),
            b"hi",
        );
        let ip = parse_ipv6(parse_eth(&f).unwrap().payload).unwrap();
        let base = pseudo_sum(src6, dst6, PROTO_UDP, ip.payload.len());
        assert_eq!(csum_fold(csum_add(base, ip.payload)), 0);
        assert_eq!(parse_udp(ip.payload).unwrap().payload, b"hi");
    }
}
