//! The UDP side of [`super::InetSocket`] (Linux `net/ipv4/udp.c`, `net/ipv6/udp.c`,
//! `net/ipv4/datagram.c`): the default peer, sending to the socket bound for the destination,
//! and receiving datagrams with their source and packet information.
//!
//! A datagram goes straight into the receiver's queue, found in the bind table by port and
//! address (a connected receiver takes only its peer's); a full receive buffer drops it, as
//! Linux does, and a send never waits. A datagram for a port nobody holds is lost, and a
//! connected sender hears `ECONNREFUSED` (the ICMP port-unreachable a loopback send draws).

use super::super::{MSG_PEEK, MSG_TRUNC};
use super::addr::match_score;
use super::link::{self, Path};
use super::opt::{self, Proto};
use super::{Dest, InetSocket, Recv, State, UDP_MAX_V4, UDP_MAX_V6, ports, sk_wait};
use crate::icmperr;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use um_kernel::task::lock;
use um_kernel::wait::IoCtx;
use um_uapi::{Errno, SysResult};

/// One queued datagram, where it came from and went to, and the TTL and TOS it was sent with
/// (for `IP_PKTINFO`, `IP_RECVTTL`, `IP_RECVTOS`).
pub(super) struct Dgram {
    pub(super) data: Vec<u8>,
    from: SocketAddr,
    to: SocketAddr,
    ttl: i32,
    tos: u8,
}

impl Dgram {
    /// A datagram that arrived from `from` for `to`, with its TTL and TOS.
    pub(super) fn new(data: Vec<u8>, from: SocketAddr, to: SocketAddr, ttl: i32, tos: u8) -> Dgram {
        Dgram {
            data,
            from,
            to,
            ttl,
            tos,
        }
    }
}

impl InetSocket {
    pub(super) fn connect_udp(&self, b: &[u8]) -> SysResult<()> {
        let d = match self.dest(b, false)? {
            Dest::Unspec => {
                self.disconnect();
                return Ok(());
            }
            Dest::Addr(a) => a,
        };
        let (dst_ip, src_ip) = match link::path(&self.net, d.ip())? {
            Path::Local { dst, src } => (dst, src),
            Path::Dev { dst, src, .. } => (dst, src),
        };
        if self.proto != Proto::Raw {
            self.autobind_for(src_ip, false, true)?;
        }
        self.udp_attach();
        let mut i = lock(&self.inner);
        i.remote = Some(SocketAddr::new(dst_ip, d.port()));
        i.state = State::Established;
        i.err = None;
        drop(i);
        self.wq.wake_all();
        Ok(())
    }

    pub(super) fn send_udp(
        &self,
        io: &IoCtx<'_>,
        data: &[u8],
        to: Option<&[u8]>,
    ) -> SysResult<usize> {
        let dest = match to {
            Some(b) => self.dest(b, true)?,
            None => Dest::Unspec,
        };
        let (dst, family, ttl, tos) = {
            let mut i = lock(&self.inner);
            let dst = match dest {
                Dest::Addr(a) => a,
                Dest::Unspec => match (i.state, i.remote) {
                    (State::Established, Some(r)) => r,
                    _ => return Err(Errno::EDESTADDRREQ),
                },
            };
            if let Some(e) = i.err.take() {
                return Err(e);
            }
            if i.snd_shutdown {
                return Err(Errno::EPIPE);
            }
            let v6 = dst.is_ipv6();
            (dst, i.family, i.opts.ttl_out(v6), i.opts.tos as u8)
        };
        if dst.port() == 0 {
            return Err(Errno::EINVAL);
        }
        let _ = family;
        let max = if dst.is_ipv4() {
            UDP_MAX_V4
        } else {
            UDP_MAX_V6
        };
        if data.len() > max {
            return Err(Errno::EMSGSIZE);
        }
        let (dst_ip, src_ip, stack) = match link::path(&self.net, dst.ip())? {
            Path::Local { dst, src } => (dst, src, None),
            Path::Dev { stack, dst, src } => (dst, src, Some(stack)),
        };
        let dst = SocketAddr::new(dst_ip, dst.port());
        self.autobind_for(src_ip, false, false)?;
        let local = self.local_addr();
        let src_ip = if local.ip().is_unspecified() || local.is_ipv4() != dst.is_ipv4() {
            src_ip
        } else {
            local.ip()
        };
        if let Some(stack) = stack {
            return self.send_udp_dev(io, &stack, data, dst, src_ip);
        }
        let src = SocketAddr::new(src_ip, local.port());
        match self.find_udp_receiver(dst, src) {
            Some(r) => {
                let mut ri = lock(&r.inner);
                // A full receive buffer drops the datagram (__udp_enqueue_schedule_skb).
                if ri.dgram_bytes <= ri.opts.rcvbuf.max(0) as usize {
                    ri.dgram_bytes += crate::unix::dgram_charge(data.len());
                    ri.dgrams.push_back(Dgram {
                        data: data.to_vec(),
                        from: src,
                        to: dst,
                        ttl,
                        tos,
                    });
                }
                drop(ri);
                r.wq.wake_all();
            }
            None => {
                // ICMP port unreachable (__udp4_lib_err): a connected socket hears of it
                // (ECONNREFUSED); with IP_RECVERR / IPV6_RECVERR any socket does, and the
                // error queue gets the datagram's head (up to the 576-byte ICMP quote).
                let mut i = lock(&self.inner);
                let v6 = dst.is_ipv6();
                let recverr = if v6 { i.opts.recverr6 } else { i.opts.recverr };
                if recverr && i.errq.len() < icmperr::ERRQ_MAX {
                    let err = icmperr::IcmpErr {
                        v6,
                        ty: if v6 { 1 } else { 3 },
                        code: if v6 { 4 } else { 3 },
                        offender: dst.ip(),
                        proto: icmperr::PROTO_UDP,
                        src,
                        dst,
                        payload: data[..data.len().min(if v6 { 1184 } else { 520 })].to_vec(),
                    };
                    i.errq.push_back(icmperr::ErrEntry {
                        errno: Errno::ECONNREFUSED,
                        err,
                    });
                }
                if recverr || i.state == State::Established {
                    i.err = Some(Errno::ECONNREFUSED);
                    drop(i);
                    self.wq.wake_all();
                }
            }
        }
        Ok(data.len())
    }

    /// The UDP socket a datagram from `src` to `dst` is for (`__udp4_lib_lookup`): the best
    /// score; a connected socket takes only its peer's datagrams.
    fn find_udp_receiver(&self, dst: SocketAddr, src: SocketAddr) -> Option<Arc<InetSocket>> {
        let t = lock(ports());
        let mut best: Option<(u32, Arc<InetSocket>)> = None;
        let cands = t
            .get(&self.key(dst.port()))
            .map(|v| v.iter().filter_map(Weak::upgrade).collect::<Vec<_>>())
            .unwrap_or_default();
        drop(t);
        for s in cands {
            let score = {
                let i = lock(&s.inner);
                if i.dead {
                    continue;
                }
                let Some(l) = i.local else { continue };
                let Some(mut sc) = match_score(l.ip(), i.opts.v6only, dst.ip()) else {
                    continue;
                };
                if let Some(r) = i.remote {
                    if i.state == State::Established {
                        if r != src {
                            continue;
                        }
                        sc += 4;
                    }
                }
                sc
            };
            if best.as_ref().is_none_or(|(b, _)| score > *b) {
                best = Some((score, s));
            }
        }
        best.map(|(_, s)| s)
    }

    pub(super) fn recv_udp(&self, io: &IoCtx<'_>, buf: &mut [u8], flags: u32) -> SysResult<Recv> {
        let peek = flags & MSG_PEEK != 0;
        let timeo = lock(&self.inner).opts.rcvtimeo;
        let r = sk_wait(io, timeo, &[&self.wq], || {
            let mut i = lock(&self.inner);
            self.fill(&mut i);
            if let Some(d) = i.dgrams.front() {
                let n = d.data.len().min(buf.len());
                buf[..n].copy_from_slice(&d.data[..n]);
                let r = Recv {
                    n,
                    full_len: d.data.len(),
                    flags: if n < d.data.len() { MSG_TRUNC } else { 0 },
                    from: Some(d.from),
                    control: opt::recv_control(&i.opts, i.family, &d.to, d.ttl, d.tos),
                };
                if !peek {
                    let d = i.dgrams.pop_front().expect("front exists");
                    i.dgram_bytes -= crate::unix::dgram_charge(d.data.len());
                }
                return Some(Ok(r));
            }
            if let Some(e) = i.err.take() {
                return Some(Err(e));
            }
            if i.rcv_shutdown {
                return Some(Ok(Recv::default()));
            }
            None
        })??;
        Ok(r)
    }
}
