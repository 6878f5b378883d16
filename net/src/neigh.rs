//! Neighbour resolution failure (Linux `net/core/neighbour.c` `neigh_timer_handler`,
//! `net/ipv4/arp.c` `arp_error_report`, `net/ipv4/route.c` `ipv4_link_failure`).
//!
//! smoltcp resolves IPv4 neighbours with ARP but never gives up: a packet whose next hop does
//! not answer is dropped and re-tried with the next retransmission, so a TCP connect to an
//! unused on-link address waits out every SYN retry (about two minutes). Linux instead sends
//! `mcast_solicit` (3) probes `retrans_time` (1 s) apart; when none is answered the neighbour
//! is FAILED and every packet queued on it comes back as a locally made ICMP host
//! unreachable, so `connect` fails with `EHOSTUNREACH` after about 3 s (`ip-sysctl.rst`,
//! `neigh/default/mcast_solicit`, `retrans_time_ms`).
//!
//! [`NeighWatch`] gives the device stack (`crate::stack`) that verdict: it sees every ARP
//! request the stack sends ([`arp_request_target`]) and every ARP packet it receives
//! ([`arp_sender`]); an address asked for and unheard for [`FAIL_AFTER`] is reported once by
//! [`NeighWatch::expired`], and the stack hands the connecting TCP sockets whose next hop it
//! was an ICMP host unreachable through the same path as a received one (`crate::icmperr`).
//! IPv6 is the same with NDP (`net/ipv6/ndisc.c`, `ndisc_error_report` ->
//! `ICMPV6_ADDR_UNREACH`): neighbour solicitations sent ([`ns_target`]) against neighbour
//! advertisements and solicitations received ([`ndp_heard`]).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// How long an unanswered ARP request takes to fail: `mcast_solicit` (3) x `retrans_time`
/// (1000 ms), Linux's defaults.
pub const FAIL_AFTER: Duration = Duration::from_secs(3);

const ETH_HLEN: usize = 14;
const ETHERTYPE_ARP: [u8; 2] = [0x08, 0x06];
/// ARP over Ethernet carrying IPv4 (RFC 826): htype 1, ptype 0x0800, hlen 6, plen 4.
const ARP_ETH_IPV4: [u8; 6] = [0, 1, 0x08, 0x00, 6, 4];
const ARPOP_REQUEST: u16 = 1;

/// The ARP payload of Ethernet frame `f`, if it is Ethernet/IPv4 ARP: (op, sender IP,
/// target IP).
fn arp(f: &[u8]) -> Option<(u16, Ipv4Addr, Ipv4Addr)> {
    if f.get(12..14)? != ETHERTYPE_ARP {
        return None;
    }
    let a = f.get(ETH_HLEN..ETH_HLEN + 28)?;
    if a[..6] != ARP_ETH_IPV4 {
        return None;
    }
    let op = u16::from_be_bytes([a[6], a[7]]);
    let spa = Ipv4Addr::new(a[14], a[15], a[16], a[17]);
    let tpa = Ipv4Addr::new(a[24], a[25], a[26], a[27]);
    Some((op, spa, tpa))
}

/// The address an outgoing frame asks for, if it is an ARP request (not a gratuitous one,
/// whose target is the sender itself).
pub fn arp_request_target(f: &[u8]) -> Option<Ipv4Addr> {
    let (op, spa, tpa) = arp(f)?;
    (op == ARPOP_REQUEST && spa != tpa).then_some(tpa)
}

/// The sender of a received ARP packet (a request or a reply: either proves the sender is
/// there, and smoltcp learns its address from both).
pub fn arp_sender(f: &[u8]) -> Option<Ipv4Addr> {
    arp(f).map(|(_, spa, _)| spa)
}

const ETHERTYPE_IPV6: [u8; 2] = [0x86, 0xdd];
const IPPROTO_ICMPV6: u8 = 58;
const NDISC_NEIGHBOUR_SOLICITATION: u8 = 135;
const NDISC_NEIGHBOUR_ADVERTISEMENT: u8 = 136;

/// The NDP message of Ethernet frame `f` (RFC 4861: ICMPv6 type 135/136 with hop limit 255,
/// no extension headers): (type, IPv6 source, target address).
fn ndp(f: &[u8]) -> Option<(u8, Ipv6Addr, Ipv6Addr)> {
    if f.get(12..14)? != ETHERTYPE_IPV6 {
        return None;
    }
    let ip = f.get(ETH_HLEN..ETH_HLEN + 40)?;
    if ip[0] >> 4 != 6 || ip[6] != IPPROTO_ICMPV6 || ip[7] != 255 {
        return None;
    }
    let icmp = f.get(ETH_HLEN + 40..ETH_HLEN + 40 + 24)?;
    if icmp[0] != NDISC_NEIGHBOUR_SOLICITATION && icmp[0] != NDISC_NEIGHBOUR_ADVERTISEMENT {
        return None;
    }
    let src = <[u8; 16]>::try_from(&ip[8..24]).ok()?;
    let target = <[u8; 16]>::try_from(&icmp[8..24]).ok()?;
    Some((icmp[0], Ipv6Addr::from(src), Ipv6Addr::from(target)))
}

/// The address an outgoing frame solicits, if it is a neighbour solicitation for resolution
/// (not duplicate address detection, whose source is `::`).
pub fn ns_target(f: &[u8]) -> Option<Ipv6Addr> {
    let (ty, src, target) = ndp(f)?;
    (ty == NDISC_NEIGHBOUR_SOLICITATION && !src.is_unspecified() && src != target).then_some(target)
}

/// The address a received NDP message proves present: an advertisement's target, a
/// solicitation's (non-DAD) source.
pub fn ndp_heard(f: &[u8]) -> Option<Ipv6Addr> {
    let (ty, src, target) = ndp(f)?;
    match ty {
        NDISC_NEIGHBOUR_ADVERTISEMENT => Some(target),
        _ if !src.is_unspecified() => Some(src),
        _ => None,
    }
}

/// Addresses asked for and not yet heard from, with when they were first asked for.
#[derive(Debug, Default)]
pub struct NeighWatch {
    pending: HashMap<IpAddr, Duration>,
}

/// Addresses pending at once; more requests are not watched (a guest scanning its subnet
/// must not grow the map without bound; those connects then wait as smoltcp makes them).
const MAX_PENDING: usize = 256;

impl NeighWatch {
    /// The stack sent an ARP request for `ip` at `now` (a clock with any origin).
    pub fn asked(&mut self, ip: IpAddr, now: Duration) {
        if self.pending.len() < MAX_PENDING || self.pending.contains_key(&ip) {
            self.pending.entry(ip).or_insert(now);
        }
    }

    /// An ARP packet from `ip` arrived.
    pub fn heard(&mut self, ip: IpAddr) {
        self.pending.remove(&ip);
    }

    /// The addresses that failed by `now`; each is reported once (a later request starts a
    /// new round, as a FAILED neighbour is probed again when used again).
    pub fn expired(&mut self, now: Duration) -> Vec<IpAddr> {
        let failed: Vec<IpAddr> = self
            .pending
            .iter()
            .filter(|&(_, &t)| now.saturating_sub(t) >= FAIL_AFTER)
            .map(|(&ip, _)| ip)
            .collect();
        for ip in &failed {
            self.pending.remove(ip);
        }
        failed
    }

    /// How long until the next address would fail, if any is pending.
    pub fn next_deadline(&self, now: Duration) -> Option<Duration> {
        self.pending
            .values()
            .map(|&t| (t + FAIL_AFTER).saturating_sub(now))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arp_frame(op: u16, spa: [u8; 4], tpa: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend([0x52, 0x54, 0, 0x12, 0x34, 0x56]);
        f.extend(ETHERTYPE_ARP);
        f.extend(ARP_ETH_IPV4);
        f.extend(op.to_be_bytes());
        f.extend([0x52, 0x54, 0, 0x12, 0x34, 0x56]);
        f.extend(spa);
        f.extend([0; 6]);
        f.extend(tpa);
        f
    }

    #[test]
    fn requests_and_senders_are_parsed() {
        let q = arp_frame(1, [10, 0, 2, 15], [10, 0, 2, 77]);
        assert_eq!(arp_request_target(&q), Some(Ipv4Addr::new(10, 0, 2, 77)));
        assert_eq!(arp_sender(&q), Some(Ipv4Addr::new(10, 0, 2, 15)));
        let reply = arp_frame(2, [10, 0, 2, 2], [10, 0, 2, 15]);
        assert_eq!(arp_request_target(&reply), None);
        assert_eq!(arp_sender(&reply), Some(Ipv4Addr::new(10, 0, 2, 2)));
        // Gratuitous ARP asks for nobody; a truncated or non-ARP frame is nothing.
        assert_eq!(
            arp_request_target(&arp_frame(1, [10, 0, 2, 15], [10, 0, 2, 15])),
            None
        );
        assert_eq!(arp_sender(&q[..30]), None);
        let mut ip = q.clone();
        ip[12..14].copy_from_slice(&[0x08, 0x00]);
        assert_eq!(arp_sender(&ip), None);
    }

    fn ndp_frame(ty: u8, src: Ipv6Addr, target: Ipv6Addr) -> Vec<u8> {
        let mut f = vec![0x33, 0x33, 0xff, 0, 0, 0x77];
        f.extend([0x52, 0x54, 0, 0x12, 0x34, 0x56]);
        f.extend(ETHERTYPE_IPV6);
        f.extend([0x60, 0, 0, 0, 0, 32, IPPROTO_ICMPV6, 255]);
        f.extend(src.octets());
        f.extend([0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 0x77]);
        f.extend([ty, 0, 0, 0, 0, 0, 0, 0]);
        f.extend(target.octets());
        f.extend([1, 1, 0x52, 0x54, 0, 0x12, 0x34, 0x56]);
        f
    }

    #[test]
    fn solicitations_and_advertisements_are_parsed() {
        let me: Ipv6Addr = "fd00::5054:ff:fe12:3456".parse().unwrap();
        let gw: Ipv6Addr = "fd00::2".parse().unwrap();
        let nobody: Ipv6Addr = "fd00::77".parse().unwrap();
        let ns = ndp_frame(135, me, nobody);
        assert_eq!(ns_target(&ns), Some(nobody));
        assert_eq!(ndp_heard(&ns), Some(me));
        // Duplicate address detection solicits from :: and proves nobody present.
        let dad = ndp_frame(135, Ipv6Addr::UNSPECIFIED, me);
        assert_eq!(ns_target(&dad), None);
        assert_eq!(ndp_heard(&dad), None);
        let na = ndp_frame(136, gw, gw);
        assert_eq!(ns_target(&na), None);
        assert_eq!(ndp_heard(&na), Some(gw));
        // A hop limit other than 255 is not NDP (RFC 4861 7.1.1).
        let mut off = ns.clone();
        off[ETH_HLEN + 7] = 64;
        assert_eq!(ns_target(&off), None);
        assert_eq!(ns_target(&ns[..60]), None);
    }

    #[test]
    fn an_unanswered_address_fails_once_after_three_seconds() {
        let mut w = NeighWatch::default();
        let a = IpAddr::V4(Ipv4Addr::new(10, 0, 2, 77));
        let b = IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2));
        w.asked(a, Duration::from_millis(100));
        w.asked(b, Duration::from_millis(200));
        // A second request does not restart the clock.
        w.asked(a, Duration::from_millis(1100));
        w.heard(b);
        assert_eq!(
            w.next_deadline(Duration::from_millis(600)),
            Some(Duration::from_millis(2500))
        );
        assert!(w.expired(Duration::from_millis(3099)).is_empty());
        assert_eq!(w.expired(Duration::from_millis(3100)), vec![a]);
        assert!(w.expired(Duration::from_secs(10)).is_empty());
        assert_eq!(w.next_deadline(Duration::from_secs(10)), None);
    }

    #[test]
    fn the_watch_is_bounded() {
        let mut w = NeighWatch::default();
        for i in 0..1000u32 {
            w.asked(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i)), Duration::ZERO);
        }
        assert_eq!(w.expired(FAIL_AFTER).len(), MAX_PENDING);
    }
}
