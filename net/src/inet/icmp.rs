//! ICMP echo sockets (Linux `net/ipv4/ping.c`, `net/ipv4/raw.c`, `net/ipv6/ping.c`,
//! `net/ipv6/raw.c`): what `ping` opens. [`Proto::Ping`] is `SOCK_DGRAM`/`IPPROTO_ICMP` (the
//! unprivileged "ping socket", allowed to the groups of `net.ipv4.ping_group_range`): it sends
//! echo requests whose identifier the kernel sets to the socket's "port" (bound or picked from
//! the ephemeral range), checksums them, and receives the replies with that identifier, without
//! the IP header. [`Proto::Raw`] is `SOCK_RAW`/`IPPROTO_ICMP` (for `CAP_NET_RAW`): requests go
//! out as the user wrote them (identifier included; the checksum is filled in), and an IPv4
//! socket receives the whole packet, IP header first (ICMPv6 raw sockets get no header, as on
//! Linux).
//!
//! Echo requests to the loopback network or the host's own addresses are answered at once
//! into the socket's own queue (the reply `icmp_echo` would send); to a device, they go
//! through the device stack's smoltcp ICMP sockets, bound to the identifier, which receive the
//! replies. Only echo replies are received (no other ICMP types reach raw sockets here).
//! smoltcp answers echo requests for the device's addresses itself.

use super::link::{Link, Path, path};
use super::opt::Proto;
use super::udp::Dgram;
use super::{Dest, InetSocket, State, sk_wait};
use crate::stack::{DevStack, MAX_BUF};
use smoltcp::iface::SocketHandle;
use smoltcp::socket::icmp;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use um_kernel::task::lock;
use um_kernel::wait::IoCtx;
use um_uapi::{Errno, SysResult};

/// `ICMP_ECHO`, `ICMP_ECHOREPLY`, `ICMPV6_ECHO_REQUEST`, `ICMPV6_ECHO_REPLY`.
const ICMP_ECHO: u8 = 8;
const ICMP_ECHOREPLY: u8 = 0;
const ICMPV6_ECHO_REQUEST: u8 = 128;
const ICMPV6_ECHO_REPLY: u8 = 129;
/// The ICMP header: type, code, checksum, identifier, sequence.
const ICMP_HLEN: usize = 8;
/// Largest echo message (an IP packet's 65535 bytes less the IPv4 header).
const ICMP_MAX: usize = 65_515;

/// The Internet checksum (RFC 1071) over `parts`.
fn csum(parts: &[&[u8]]) -> u16 {
    let mut sum: u32 = 0;
    for p in parts {
        let mut it = p.chunks_exact(2);
        for w in &mut it {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        if let [b] = it.remainder() {
            sum += u32::from(*b) << 8;
        }
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Sets the checksum of ICMP message `m` from `src` to `dst` (ICMPv6's covers a pseudo-header).
fn set_csum(m: &mut [u8], src: IpAddr, dst: IpAddr) {
    m[2] = 0;
    m[3] = 0;
    let c = match (src, dst) {
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let len = (m.len() as u32).to_be_bytes();
            csum(&[&s.octets(), &d.octets(), &len, &[0, 0, 0, 58], m])
        }
        _ => csum(&[m]),
    };
    m[2..4].copy_from_slice(&c.to_be_bytes());
}

/// The IPv4 header a raw socket sees before a received ICMP message.
fn ipv4_header(src: Ipv4Addr, dst: Ipv4Addr, len: usize) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&((20 + len).min(65535) as u16).to_be_bytes());
    h[8] = 64;
    h[9] = 1;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = csum(&[&h]);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

impl InetSocket {
    /// What a received echo reply looks like to this socket: a raw IPv4 socket gets the IP
    /// header too.
    fn icmp_dgram(&self, msg: &[u8], from: IpAddr, to: IpAddr) -> Dgram {
        let data = match (self.proto, from, to) {
            (Proto::Raw, IpAddr::V4(f), IpAddr::V4(t)) => {
                let mut v = ipv4_header(f, t, msg.len()).to_vec();
                v.extend_from_slice(msg);
                v
            }
            _ => msg.to_vec(),
        };
        Dgram::new(
            data,
            SocketAddr::new(from, 0),
            SocketAddr::new(to, 0),
            64,
            0,
        )
    }

    /// Queues a received message, as long as the receive buffer has room.
    fn icmp_queue(&self, i: &mut super::Inner, d: Dgram) {
        if i.dgram_bytes <= i.opts.rcvbuf.max(0) as usize {
            i.dgram_bytes += crate::unix::dgram_charge(d.data.len());
            i.dgrams.push_back(d);
        }
    }

    /// `sendto`/`sendmsg` of an ICMP socket (`ping_v4_sendmsg`, `raw_sendmsg`).
    pub(super) fn send_icmp(
        &self,
        io: &IoCtx<'_>,
        data: &[u8],
        to: Option<&[u8]>,
    ) -> SysResult<usize> {
        let dest = match to {
            Some(b) => self.dest(b, true)?,
            None => Dest::Unspec,
        };
        let dst = {
            let mut i = lock(&self.inner);
            if let Some(e) = i.err.take() {
                return Err(e);
            }
            match dest {
                Dest::Addr(a) => a.ip(),
                Dest::Unspec => match (i.state, i.remote) {
                    (State::Established, Some(r)) => r.ip(),
                    _ => return Err(Errno::EDESTADDRREQ),
                },
            }
        };
        if data.len() < ICMP_HLEN || data.len() > ICMP_MAX {
            return Err(Errno::EINVAL);
        }
        let (req, rep) = if dst.is_ipv4() {
            (ICMP_ECHO, ICMP_ECHOREPLY)
        } else {
            (ICMPV6_ECHO_REQUEST, ICMPV6_ECHO_REPLY)
        };
        let mut m = data.to_vec();
        if self.proto == Proto::Ping {
            // ping_common_sendmsg: only echo requests; the identifier is the socket's.
            if m[0] != req || m[1] != 0 {
                return Err(Errno::EINVAL);
            }
            if lock(&self.inner).local.is_none() {
                let any = super::addr::any(self.family());
                self.take_port(any, 0, false)?;
            }
            let id = self.local_addr().port();
            m[4..6].copy_from_slice(&id.to_be_bytes());
        }
        match path(&self.net, dst)? {
            Path::Local { dst, src } => {
                if m[0] == req {
                    // The loopback answers at once (icmp_echo).
                    let mut reply = m.clone();
                    reply[0] = rep;
                    set_csum(&mut reply, dst, src);
                    let d = self.icmp_dgram(&reply, dst, src);
                    let mut i = lock(&self.inner);
                    self.icmp_queue(&mut i, d);
                    drop(i);
                    self.wq.wake_all();
                }
                Ok(data.len())
            }
            Path::Dev { stack, dst, src } => {
                set_csum(&mut m, src, dst);
                let id = u16::from_be_bytes([m[4], m[5]]);
                let h = self.icmp_attach(&stack, id)?;
                let timeo = lock(&self.inner).opts.sndtimeo;
                sk_wait(io, timeo, &[&self.wq], || {
                    let mut c = stack.core();
                    let s = c.icmp(h);
                    if m.len() > s.payload_send_capacity() {
                        return Some(Err(Errno::EMSGSIZE));
                    }
                    match s.send_slice(&m, dst.into()) {
                        Ok(()) => Some(Ok(())),
                        Err(icmp::SendError::BufferFull) => None,
                        Err(icmp::SendError::Unaddressable) => Some(Err(Errno::EINVAL)),
                    }
                })??;
                stack.service_armed();
                Ok(data.len())
            }
        }
    }

    /// The smoltcp ICMP socket of `stack` bound to identifier `id` (made on first use; a raw
    /// socket follows the identifier its requests carry).
    fn icmp_attach(&self, stack: &Arc<DevStack>, id: u16) -> SysResult<SocketHandle> {
        let mut i = lock(&self.inner);
        if let Link::Icmp(v) = &i.link
            && let Some((_, h, _)) = v.iter().find(|(s, _, x)| Arc::ptr_eq(s, stack) && *x == id)
        {
            return Ok(*h);
        }
        let rx = (i.opts.rcvbuf.max(0) as usize).clamp(4096, MAX_BUF);
        let tx = (i.opts.sndbuf.max(0) as usize).clamp(4096, MAX_BUF);
        let mut c = stack.core();
        let h = c.add_icmp(rx, tx, self.me.clone()).ok_or(Errno::ENOBUFS)?;
        if c.icmp(h).bind(icmp::Endpoint::Ident(id)).is_err() {
            c.remove(h);
            return Err(Errno::EINVAL);
        }
        drop(c);
        match &mut i.link {
            Link::Icmp(v) => v.push((stack.clone(), h, id)),
            l => *l = Link::Icmp(vec![(stack.clone(), h, id)]),
        }
        Ok(h)
    }

    /// Moves the echo replies smoltcp received into the socket's queue.
    pub(super) fn fill_icmp(&self, i: &mut super::Inner, v: &[(Arc<DevStack>, SocketHandle, u16)]) {
        let connected = (i.state == State::Established)
            .then_some(i.remote)
            .flatten()
            .map(|r| r.ip());
        for (stack, h, _) in v {
            let mut got = Vec::new();
            {
                let mut c = stack.core();
                let local = c.first_addr();
                let s = c.icmp(*h);
                while let Ok((data, from)) = s.recv() {
                    if data
                        .first()
                        .is_some_and(|&t| t == ICMP_ECHOREPLY || t == ICMPV6_ECHO_REPLY)
                    {
                        got.push((data.to_vec(), IpAddr::from(from), local));
                    }
                }
            }
            for (m, from, local) in got {
                if connected.is_some_and(|r| r != from) {
                    continue;
                }
                let to = match (from, local) {
                    (IpAddr::V4(_), Some(l @ IpAddr::V4(_))) => l,
                    _ => super::addr::any(i.family),
                };
                let d = self.icmp_dgram(&m, from, to);
                self.icmp_queue(i, d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums() {
        // RFC 1071's example words sum to 0xddf2; the checksum is its complement.
        assert_eq!(
            csum(&[&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]]),
            !0xddf2
        );
        // A message with its checksum in place sums to zero.
        let mut m = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, b'a', b'b', b'c'];
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        set_csum(&mut m, lo, lo);
        assert_eq!(csum(&[&m]), 0);
        let h = ipv4_header(Ipv4Addr::new(10, 0, 2, 2), Ipv4Addr::new(10, 0, 2, 15), 64);
        assert_eq!(csum(&[&h]), 0);
        assert_eq!(u16::from_be_bytes([h[2], h[3]]), 84);
    }
}
