//! IP fragmentation and reassembly, IPv4 (RFC 791 3.2, Linux `net/ipv4/ip_fragment.c`,
//! `ip_output.c` `ip_do_fragment`) and IPv6 (RFC 8200 4.5, `net/ipv6/reassembly.c`,
//! `ip6_output.c` `ip6_fragment`), and TCP MSS clamping (what `iptables -j TCPMSS
//! --clamp-mss-to-pmtu` does, RFC 9293 3.7.1).
//!
//! Pure functions over packets and one owned table, shared by the two ends of a user-mode
//! link: this crate's backend (reassembling what the guest sends, fragmenting host datagrams
//! larger than the MTU) and the guest's own IP stack in `um-net` (`net/src/stack.rs`, whose
//! smoltcp does neither for IPv6 and which fragments both families itself).
//!
//! Key items: [`fragment`] (an Ethernet frame into frames that fit an MTU), [`Reassembly`]
//! (fragments back into packets, bounded: [`MAX_PENDING`] datagrams, [`MAX_BYTES`] held,
//! [`TIMEOUT_V4`]/[`TIMEOUT_V6`]), [`is_fragment`], [`clamp_mss`].
//!
//! Not done: IPv4 options are copied into every fragment whatever their copy flag (nothing
//! here sends options); IPv6 extension headers before the fragment header are not walked (a
//! packet whose first next header is not 44 is no fragment here); no ICMP "fragment
//! reassembly time exceeded" is sent when a datagram times out (Linux sends one).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::wire::{ETH_HLEN, csum_add, csum_fold};

/// Datagrams being reassembled at once; a new one beyond evicts the oldest.
pub const MAX_PENDING: usize = 64;
/// Bytes of fragments held in all (Linux `ipfrag_high_thresh`, 4 MiB).
pub const MAX_BYTES: usize = 4 << 20;
/// How long an incomplete IPv4 datagram is kept (`ipfrag_time`, 30 s).
pub const TIMEOUT_V4: Duration = Duration::from_secs(30);
/// ... and an IPv6 one (`ip6frag_time`, 60 s).
pub const TIMEOUT_V6: Duration = Duration::from_secs(60);
/// The IPv6 Fragment header's next-header value.
const NH_FRAGMENT: u8 = 44;
/// The largest IPv4 datagram, and the largest IPv6 payload.
const MAX_DATAGRAM: usize = 0xffff;

/// Whether IP packet `ip` is a fragment: IPv4 with MF or an offset, IPv6 whose first next
/// header is a Fragment header.
pub fn is_fragment(ip: &[u8]) -> bool {
    match ip.first().map(|b| b >> 4) {
        Some(4) => ip.len() >= 20 && u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0,
        Some(6) => ip.len() >= 48 && ip[6] == NH_FRAGMENT,
        _ => false,
    }
}

/// Splits Ethernet frame `frame` (IPv4 or IPv6) into frames whose IP packets fit `mtu`, with
/// identification `id` (IPv4 uses its low 16 bits). A packet that fits comes back whole;
/// what is not IP, or is too short to be, comes back whole too. IPv4 fragments lose DF.
pub fn fragment(frame: &[u8], mtu: usize, id: u32) -> Vec<Vec<u8>> {
    let Some(ip) = frame.get(ETH_HLEN..) else {
        return vec![frame.to_vec()];
    };
    if ip.len() <= mtu {
        return vec![frame.to_vec()];
    }
    let eth = &frame[..ETH_HLEN];
    match ip[0] >> 4 {
        4 if ip.len() >= 20 => {
            let ihl = usize::from(ip[0] & 0xf) * 4;
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]])).min(ip.len());
            if ihl < 20 || total <= ihl {
                return vec![frame.to_vec()];
            }
            let (hdr, payload) = (&ip[..ihl], &ip[ihl..total]);
            // An offset already there (a fragment being fragmented again) carries on.
            let base = usize::from(u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff) * 8;
            let last_more = u16::from_be_bytes([ip[6], ip[7]]) & 0x2000 != 0;
            let per = (mtu.saturating_sub(ihl) / 8 * 8).max(8);
            let mut out = Vec::new();
            let mut off = 0;
            while off < payload.len() {
                let n = per.min(payload.len() - off);
                let more = off + n < payload.len() || last_more;
                let mut h = hdr.to_vec();
                h[2..4].copy_from_slice(&((ihl + n) as u16).to_be_bytes());
                h[4..6].copy_from_slice(&(id as u16).to_be_bytes());
                let fo = ((base + off) / 8) as u16 | if more { 0x2000 } else { 0 };
                h[6..8].copy_from_slice(&fo.to_be_bytes());
                h[10..12].fill(0);
                let c = csum_fold(csum_add(0, &h));
                h[10..12].copy_from_slice(&c.to_be_bytes());
                let mut f = Vec::with_capacity(ETH_HLEN + ihl + n);
                f.extend_from_slice(eth);
                f.extend_from_slice(&h);
                f.extend_from_slice(&payload[off..off + n]);
                out.push(f);
                off += n;
            }
            out
        }
        6 if ip.len() >= 40 => {
            let plen = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
            let payload = &ip[40..(40 + plen).min(ip.len())];
            let next = ip[6];
            let per = (mtu.saturating_sub(48) / 8 * 8).max(8);
            let mut out = Vec::new();
            let mut off = 0;
            while off < payload.len() {
                let n = per.min(payload.len() - off);
                let more = off + n < payload.len();
                let mut f = Vec::with_capacity(ETH_HLEN + 48 + n);
                f.extend_from_slice(eth);
                f.extend_from_slice(&ip[..40]);
                f[ETH_HLEN + 4..ETH_HLEN + 6].copy_from_slice(&((8 + n) as u16).to_be_bytes());
                f[ETH_HLEN + 6] = NH_FRAGMENT;
                let fo = (off as u16) | u16::from(more);
                f.extend_from_slice(&[next, 0]);
                f.extend_from_slice(&fo.to_be_bytes());
                f.extend_from_slice(&id.to_be_bytes());
                f.extend_from_slice(&payload[off..off + n]);
                out.push(f);
                off += n;
            }
            out
        }
        _ => vec![frame.to_vec()],
    }
}

/// What a fragment does to the table.
#[derive(Debug, PartialEq, Eq)]
pub enum Push {
    /// Not a fragment (or not IP): use the packet as it is.
    NotFragment,
    /// Kept (or dropped: bad, overlapping IPv6, over the bounds) until the rest arrives.
    Held,
    /// The last missing piece: the whole IP packet, as if it had never been fragmented.
    Done(Vec<u8>),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Key {
    src: IpAddr,
    dst: IpAddr,
    id: u32,
    /// IPv4's protocol (part of its key, RFC 791); 0 for IPv6.
    proto: u8,
}

struct Pending {
    key: Key,
    /// The header of the packet to rebuild (from the first fragment): IPv4's, or IPv6's
    /// fixed header with the fragment header's next header in it.
    header: Vec<u8>,
    data: Vec<u8>,
    /// Byte ranges received, [start, end).
    have: Vec<(usize, usize)>,
    /// The datagram's payload length, once its last fragment came.
    total: Option<usize>,
    deadline: Instant,
    /// IPv6: an overlap was seen, so the datagram is dropped (RFC 5722).
    poisoned: bool,
}

/// Fragments being reassembled (one table per receiving interface).
#[derive(Default)]
pub struct Reassembly {
    pending: Vec<Pending>,
    bytes: usize,
}

impl Reassembly {
    /// Datagrams in progress.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether nothing is in progress.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Drops datagrams whose time ran out; returns the next deadline.
    pub fn expire(&mut self, now: Instant) -> Option<Instant> {
        self.pending.retain(|p| p.deadline > now);
        self.bytes = self.pending.iter().map(|p| p.data.len()).sum();
        self.pending.iter().map(|p| p.deadline).min()
    }

    /// Takes IP packet `ip` (no link header).
    pub fn push(&mut self, ip: &[u8], now: Instant) -> Push {
        if !is_fragment(ip) {
            return Push::NotFragment;
        }
        self.expire(now);
        let v4 = ip[0] >> 4 == 4;
        let (key, header, off, more, body) = if v4 {
            let ihl = usize::from(ip[0] & 0xf) * 4;
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            if ihl < 20 || total < ihl || total > ip.len() {
                return Push::Held;
            }
            let fo = u16::from_be_bytes([ip[6], ip[7]]);
            let key = Key {
                src: IpAddr::from(<[u8; 4]>::try_from(&ip[12..16]).unwrap_or([0; 4])),
                dst: IpAddr::from(<[u8; 4]>::try_from(&ip[16..20]).unwrap_or([0; 4])),
                id: u32::from(u16::from_be_bytes([ip[4], ip[5]])),
                proto: ip[9],
            };
            (
                key,
                ip[..ihl].to_vec(),
                usize::from(fo & 0x1fff) * 8,
                fo & 0x2000 != 0,
                &ip[ihl..total],
            )
        } else {
            let plen = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
            if 40 + plen > ip.len() || plen < 8 {
                return Push::Held;
            }
            let fh = &ip[40..48];
            let fo = u16::from_be_bytes([fh[2], fh[3]]);
            let key = Key {
                src: IpAddr::from(<[u8; 16]>::try_from(&ip[8..24]).unwrap_or([0; 16])),
                dst: IpAddr::from(<[u8; 16]>::try_from(&ip[24..40]).unwrap_or([0; 16])),
                id: u32::from_be_bytes([fh[4], fh[5], fh[6], fh[7]]),
                proto: 0,
            };
            let mut h = ip[..40].to_vec();
            h[6] = fh[0];
            (
                key,
                h,
                usize::from(fo & 0xfff8),
                fo & 1 != 0,
                &ip[48..40 + plen],
            )
        };
        let end = off + body.len();
        // Every fragment but the last carries a multiple of 8 bytes; nothing ends past the
        // largest datagram (RFC 8200 4.5; Linux drops both).
        if (more && body.len() % 8 != 0) || end > MAX_DATAGRAM || (body.is_empty() && more) {
            return Push::Held;
        }
        let idx = match self.pending.iter().position(|p| p.key == key) {
            Some(i) => i,
            None => {
                if self.pending.len() >= MAX_PENDING {
                    let old = self.pending.remove(0);
                    self.bytes -= old.data.len();
                }
                self.pending.push(Pending {
                    key,
                    header: header.clone(),
                    data: Vec::new(),
                    have: Vec::new(),
                    total: None,
                    deadline: now + if v4 { TIMEOUT_V4 } else { TIMEOUT_V6 },
                    poisoned: false,
                });
                self.pending.len() - 1
            }
        };
        let grow = end.saturating_sub(self.pending[idx].data.len());
        if self.bytes + grow > MAX_BYTES {
            self.bytes -= self.pending.remove(idx).data.len();
            return Push::Held;
        }
        let p = &mut self.pending[idx];
        if !more {
            if p.total.is_some_and(|t| t != end) || p.have.iter().any(|&(_, e)| e > end) {
                p.poisoned = true;
            }
            p.total = Some(end);
        } else if p.total.is_some_and(|t| end > t) {
            p.poisoned = true;
        }
        if !v4 && p.have.iter().any(|&(s, e)| off < e && s < end) {
            p.poisoned = true;
        }
        if off == 0 {
            p.header = header;
        }
        if p.data.len() < end {
            p.data.resize(end, 0);
        }
        p.data[off..end].copy_from_slice(body);
        p.have.push((off, end));
        self.bytes += grow;
        let Some(total) = p.total else {
            return Push::Held;
        };
        p.have.sort_unstable();
        let mut reach = 0;
        for &(s, e) in &p.have {
            if s > reach {
                return Push::Held;
            }
            reach = reach.max(e);
        }
        if reach < total {
            return Push::Held;
        }
        let p = self.pending.remove(idx);
        self.bytes -= p.data.len();
        if p.poisoned || p.have.first().is_none_or(|&(s, _)| s != 0) {
            return Push::Held;
        }
        let mut out = p.header;
        if v4 {
            let ihl = out.len();
            if ihl + total > MAX_DATAGRAM {
                return Push::Held;
            }
            out[2..4].copy_from_slice(&((ihl + total) as u16).to_be_bytes());
            // Keep DF, clear MF and the offset.
            out[6] &= 0x40;
            out[7] = 0;
            out[10..12].fill(0);
            let c = csum_fold(csum_add(0, &out));
            out[10..12].copy_from_slice(&c.to_be_bytes());
        } else {
            out[4..6].copy_from_slice(&(total as u16).to_be_bytes());
        }
        out.extend_from_slice(&p.data[..total]);
        Push::Done(out)
    }
}

/// Lowers the MSS option of a TCP SYN in IP packet `ip` to at most `max` and fixes the TCP
/// checksum. Returns whether it changed anything.
pub fn clamp_mss(ip: &mut [u8], max: u16) -> bool {
    let (l4off, proto, src, dst) = match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 20 && !is_fragment(ip) => {
            let ihl = usize::from(ip[0] & 0xf) * 4;
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            if total > ip.len() || ihl < 20 {
                return false;
            }
            (ihl, ip[9], &ip[12..16], &ip[16..20])
        }
        Some(6) if ip.len() >= 40 => (40, ip[6], &ip[8..24], &ip[24..40]),
        _ => return false,
    };
    if proto != 6 {
        return false;
    }
    let mut pseudo = csum_add(0, src);
    pseudo = csum_add(pseudo, dst);
    let end = if ip[0] >> 4 == 4 {
        usize::from(u16::from_be_bytes([ip[2], ip[3]]))
    } else {
        (40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]))).min(ip.len())
    };
    let Some(tcp) = ip.get_mut(l4off..end) else {
        return false;
    };
    if tcp.len() < 20 || tcp[13] & 0x02 == 0 {
        return false;
    }
    let doff = (usize::from(tcp[12] >> 4) * 4).min(tcp.len());
    let mut i = 20;
    let mut changed = false;
    while i < doff {
        match tcp[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let Some(&len) = tcp.get(i + 1) else { break };
                let len = usize::from(len);
                if len < 2 || i + len > doff {
                    break;
                }
                if kind == 2 && len == 4 {
                    let mss = u16::from_be_bytes([tcp[i + 2], tcp[i + 3]]);
                    if mss > max {
                        tcp[i + 2..i + 4].copy_from_slice(&max.to_be_bytes());
                        changed = true;
                    }
                }
                i += len;
            }
        }
    }
    if changed {
        tcp[16..18].fill(0);
        let mut s = pseudo.wrapping_add(6).wrapping_add(tcp.len() as u32);
        s = csum_add(s, tcp);
        let c = csum_fold(s);
        tcp[16..18].copy_from_slice(&c.to_be_bytes());
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{self, PROTO_TCP, PROTO_UDP};
    use std::net::Ipv4Addr;

    fn udp_frame(src: IpAddr, dst: IpAddr, n: usize) -> Vec<u8> {
        let data: Vec<u8> = (0..n as u32).map(|i| (i * 7) as u8).collect();
        let h = wire::udp_header(1000, 2000, data.len());
        wire::build([2; 6], [4; 6], src, dst, PROTO_UDP, &h, &data)
    }

    fn round_trip(src: IpAddr, dst: IpAddr, n: usize, mtu: usize, reverse: bool) {
        let whole = udp_frame(src, dst, n);
        let mut frags = fragment(&whole, mtu, 0x1234_5678);
        assert!(frags.len() > 1, "{n} bytes at MTU {mtu}");
        for f in &frags {
            assert!(f.len() - ETH_HLEN <= mtu);
            assert!(is_fragment(&f[ETH_HLEN..]));
        }
        if reverse {
            frags.reverse();
        }
        let mut r = Reassembly::default();
        let now = Instant::now();
        let last = frags.pop().unwrap();
        for f in &frags {
            assert_eq!(r.push(&f[ETH_HLEN..], now), Push::Held);
        }
        let Push::Done(p) = r.push(&last[ETH_HLEN..], now) else {
            panic!("not reassembled");
        };
        let mut want = whole[ETH_HLEN..].to_vec();
        if src.is_ipv4() {
            // Reassembly rebuilds the header: the ID differs, and fragments dropped DF.
            assert_eq!(p[6..8], [0, 0]);
            want[4..8].copy_from_slice(&p[4..8]);
            want[10..12].copy_from_slice(&p[10..12]);
            assert_eq!(csum_fold(csum_add(0, &p[..20])), 0);
        }
        assert!(
            p == want,
            "{n} bytes at MTU {mtu}: {} vs {}",
            p.len(),
            want.len()
        );
        assert!(r.is_empty());
    }

    #[test]
    fn both_families_round_trip_in_any_order() {
        let (s4, d4) = (
            IpAddr::V4(Ipv4Addr::new(10, 0, 2, 15)),
            IpAddr::V4(Ipv4Addr::new(10, 0, 2, 2)),
        );
        let (s6, d6): (IpAddr, IpAddr) = ("fd00::15".parse().unwrap(), "fd00::2".parse().unwrap());
        for reverse in [false, true] {
            round_trip(s4, d4, 61_440, 1500, reverse);
            round_trip(s4, d4, 4000, 576, reverse);
            round_trip(s6, d6, 61_440, 1500, reverse);
            round_trip(s6, d6, 1300, 1280, reverse);
        }
    }

    #[test]
    fn small_packets_stay_whole_and_bad_ones_are_held() {
        let s: IpAddr = "fd00::15".parse().unwrap();
        let d: IpAddr = "fd00::2".parse().unwrap();
        let f = udp_frame(s, d, 100);
        assert_eq!(fragment(&f, 1500, 1), vec![f.clone()]);
        let mut r = Reassembly::default();
        assert_eq!(r.push(&f[ETH_HLEN..], Instant::now()), Push::NotFragment);
        // A middle fragment whose length is no multiple of 8 is dropped.
        let mut frags = fragment(&udp_frame(s, d, 3000), 1280, 9);
        let bad = &mut frags[0];
        bad.truncate(bad.len() - 3);
        let plen = u16::from_be_bytes([bad[ETH_HLEN + 4], bad[ETH_HLEN + 5]]) - 3;
        bad[ETH_HLEN + 4..ETH_HLEN + 6].copy_from_slice(&plen.to_be_bytes());
        assert_eq!(r.push(&bad[ETH_HLEN..], Instant::now()), Push::Held);
        assert!(r.is_empty());
        // An overlapping IPv6 fragment poisons its datagram (RFC 5722).
        let frags = fragment(&udp_frame(s, d, 3000), 1280, 10);
        let now = Instant::now();
        for f in &frags[..frags.len() - 1] {
            r.push(&f[ETH_HLEN..], now);
        }
        r.push(&frags[0][ETH_HLEN..], now);
        assert_eq!(r.push(&frags[frags.len() - 1][ETH_HLEN..], now), Push::Held);
        // Time runs out.
        let frags = fragment(&udp_frame(s, d, 3000), 1280, 11);
        r.push(&frags[0][ETH_HLEN..], now);
        assert_eq!(r.len(), 1);
        assert_eq!(r.expire(now + TIMEOUT_V6 + Duration::from_secs(1)), None);
        assert!(r.is_empty());
    }

    #[test]
    fn pending_datagrams_are_bounded() {
        let s = IpAddr::V4(Ipv4Addr::new(10, 0, 2, 15));
        let d = IpAddr::V4(Ipv4Addr::new(10, 0, 2, 2));
        let mut r = Reassembly::default();
        let now = Instant::now();
        for id in 0..(MAX_PENDING as u32 + 10) {
            let f = fragment(&udp_frame(s, d, 3000), 1500, id);
            r.push(&f[0][ETH_HLEN..], now);
        }
        assert_eq!(r.len(), MAX_PENDING);
    }

    #[test]
    fn syn_mss_is_clamped_with_a_valid_checksum() {
        for (s, d) in [
            (
                IpAddr::V4(Ipv4Addr::new(10, 0, 2, 15)),
                IpAddr::V4(Ipv4Addr::new(10, 0, 2, 2)),
            ),
            ("fd00::15".parse().unwrap(), "fd00::2".parse().unwrap()),
        ] {
            let h = wire::tcp_header(1, 2, 3, 0, wire::SYN, 100, Some((65_000, Some(7))));
            let mut f = wire::build([2; 6], [4; 6], s, d, PROTO_TCP, &h, &[]);
            assert!(clamp_mss(&mut f[ETH_HLEN..], 1460));
            let t = wire::parse_tcp(if s.is_ipv4() {
                &f[ETH_HLEN + 20..]
            } else {
                &f[ETH_HLEN + 40..]
            })
            .unwrap();
            assert_eq!(t.mss, Some(1460));
            // The checksum is what building it with 1460 gives.
            let h2 = wire::tcp_header(1, 2, 3, 0, wire::SYN, 100, Some((1460, Some(7))));
            let f2 = wire::build([2; 6], [4; 6], s, d, PROTO_TCP, &h2, &[]);
            assert_eq!(f, f2);
            assert!(!clamp_mss(&mut f[ETH_HLEN..], 1460));
        }
    }
}
