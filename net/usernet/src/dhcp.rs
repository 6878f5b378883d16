//! The DHCP server (RFC 2131, options RFC 2132): one lease, 10.0.2.15, for whoever asks.
//!
//! DISCOVER -> OFFER, REQUEST -> ACK (or NAK for another address), INFORM -> ACK without a
//! lease; RELEASE and DECLINE need no answer. Replies carry the subnet mask, router, DNS server,
//! lease time, T1/T2, server identifier and (when not 1500) the interface MTU. Where the reply
//! goes follows RFC 2131 4.1: to `ciaddr` when the client has one (a renewal), else broadcast
//! when the client set the BROADCAST flag (busybox udhcpc does not, ISC dhclient may), else
//! unicast to `yiaddr` at the client's hardware address.

use std::net::Ipv4Addr;

use crate::wire::{Mac, Rd};
use crate::{DNS_ADDR, GATEWAY, GUEST_ADDR, LEASE_SECS, NETMASK};

const MAGIC: u32 = 0x6382_5363;
const DISCOVER: u8 = 1;
const OFFER: u8 = 2;
const REQUEST: u8 = 3;
const ACK: u8 = 5;
const NAK: u8 = 6;
const INFORM: u8 = 8;

/// A reply to send from 10.0.2.2:67 to `dst`:68 at `dst_mac`.
pub struct Reply {
    pub payload: Vec<u8>,
    pub dst: Ipv4Addr,
    pub dst_mac: Mac,
}

/// The reply to one client message (the UDP payload sent to port 67), if any.
pub fn handle(msg: &[u8], mtu: u16) -> Option<Reply> {
    let r = Rd(msg);
    // BOOTREQUEST over Ethernet (htype 1, hlen 6), and the options cookie.
    if r.u8(0)? != 1 || r.u8(1)? != 1 || r.u8(2)? != 6 || r.u32(236)? != MAGIC {
        return None;
    }
    let xid = r.u32(4)?;
    let flags = r.u16(10)?;
    let ciaddr = r.v4(12)?;
    let chaddr = r.mac(28)?;
    let (mut kind, mut requested) = (None, None);
    let mut i = 240;
    while let Some(code) = r.u8(i) {
        match code {
            0 => i += 1,
            255 => break,
            _ => {
                let len = usize::from(r.u8(i + 1)?);
                let v = r.bytes(i + 2, len)?;
                match (code, len) {
                    (53, 1) => kind = Some(v[0]),
                    (50, 4) => requested = Rd(v).v4(0),
                    _ => {}
                }
                i += 2 + len;
            }
        }
    }
    let (reply_kind, yiaddr) = match kind? {
        DISCOVER => (OFFER, GUEST_ADDR),
        REQUEST => {
            // SELECTING/INIT-REBOOT name the address in option 50; RENEWING/REBINDING in
            // ciaddr (RFC 2131 4.3.2). Anything but our one address is refused.
            let asked = requested.unwrap_or(ciaddr);
            if asked == GUEST_ADDR {
                (ACK, GUEST_ADDR)
            } else {
                (NAK, Ipv4Addr::UNSPECIFIED)
            }
        }
        INFORM => (ACK, Ipv4Addr::UNSPECIFIED),
        _ => return None,
    };
    let mut p = vec![0u8; 240];
    p[0] = 2; // BOOTREPLY
    p[1] = 1;
    p[2] = 6;
    p[4..8].copy_from_slice(&xid.to_be_bytes());
    p[10..12].copy_from_slice(&flags.to_be_bytes());
    p[12..16].copy_from_slice(&ciaddr.octets());
    p[16..20].copy_from_slice(&yiaddr.octets());
    if reply_kind != NAK {
        p[20..24].copy_from_slice(&GATEWAY.octets()); // siaddr
    }
    p[28..34].copy_from_slice(&chaddr);
    p[236..240].copy_from_slice(&MAGIC.to_be_bytes());
    let mut opt = |code: u8, v: &[u8]| {
        p.push(code);
        p.push(v.len() as u8);
        p.extend_from_slice(v);
    };
    opt(53, &[reply_kind]);
    opt(54, &GATEWAY.octets());
    if reply_kind != NAK {
        opt(1, &NETMASK.octets());
        opt(3, &GATEWAY.octets());
        opt(6, &DNS_ADDR.octets());
        if kind != Some(INFORM) {
            opt(51, &LEASE_SECS.to_be_bytes());
            opt(58, &(LEASE_SECS / 2).to_be_bytes());
            opt(59, &(LEASE_SECS / 8 * 7).to_be_bytes());
        }
        if mtu != 1500 {
            opt(26, &mtu.to_be_bytes());
        }
    }
    p.push(255);
    // Pad to the 300-byte BOOTP minimum some old clients expect (RFC 1542 2.1).
    if p.len() < 300 {
        p.resize(300, 0);
    }
    let (dst, dst_mac) = if !ciaddr.is_unspecified() && reply_kind != NAK {
        (ciaddr, chaddr)
    } else if flags & 0x8000 != 0 || reply_kind == NAK {
        (Ipv4Addr::BROADCAST, crate::wire::BROADCAST)
    } else {
        (yiaddr, chaddr)
    };
    Some(Reply {
        payload: p,
        dst,
        dst_mac,
    })
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A client message as busybox udhcpc sends it.
    pub fn request(
        kind: u8,
        xid: u32,
        mac: Mac,
        requested: Option<Ipv4Addr>,
        broadcast: bool,
        ciaddr: Ipv4Addr,
    ) -> Vec<u8> {
        let mut p = vec![0u8; 240];
        p[0] = 1;
        p[1] = 1;
        p[2] = 6;
        p[4..8].copy_from_slice(&xid.to_be_bytes());
        if broadcast {
            p[10] = 0x80;
        }
        p[12..16].copy_from_slice(&ciaddr.octets());
        p[28..34].copy_from_slice(&mac);
        p[236..240].copy_from_slice(&MAGIC.to_be_bytes());
        p.extend_from_slice(&[53, 1, kind]);
        if let Some(a) = requested {
            p.extend_from_slice(&[50, 4]);
            p.extend_from_slice(&a.octets());
        }
        p.extend_from_slice(&[55, 3, 1, 3, 6, 255]);
        p
    }

    /// The options of a reply, as (code, value) pairs.
    pub fn options(p: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut v = Vec::new();
        let mut i = 240;
        while i < p.len() && p[i] != 255 {
            if p[i] == 0 {
                i += 1;
                continue;
            }
            let len = usize::from(p[i + 1]);
            v.push((p[i], p[i + 2..i + 2 + len].to_vec()));
            i += 2 + len;
        }
        v
    }

    #[test]
    fn request_for_another_address_is_naked() {
        let m = request(
            REQUEST,
            1,
            [2; 6],
            Some(Ipv4Addr::new(10, 0, 2, 99)),
            false,
            Ipv4Addr::UNSPECIFIED,
        );
        let r = handle(&m, 1500).unwrap();
        assert_eq!(options(&r.payload)[0], (53, vec![NAK]));
        assert_eq!(r.dst, Ipv4Addr::BROADCAST);
    }

    #[test]
    fn renewal_is_unicast_to_ciaddr_and_inform_has_no_lease() {
        let m = request(REQUEST, 1, [2; 6], None, false, GUEST_ADDR);
        let r = handle(&m, 9000).unwrap();
        let o = options(&r.payload);
        assert_eq!(o[0], (53, vec![ACK]));
        assert!(o.contains(&(26, 9000u16.to_be_bytes().to_vec())));
        assert_eq!((r.dst, r.dst_mac), (GUEST_ADDR, [2; 6]));
        let m = request(INFORM, 1, [2; 6], None, false, GUEST_ADDR);
        let o = options(&handle(&m, 1500).unwrap().payload);
        assert!(!o.iter().any(|(c, _)| *c == 51));
        assert!(handle(&m[..100], 1500).is_none());
    }
}
