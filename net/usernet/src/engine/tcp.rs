//! TCP as passt does it ("L4 translation", passt(1) and passt's `tcp.c`): no second TCP stack
//! with its own buffers, but the guest's connection mirrored onto a host socket.
//!
//! - Guest SYN -> non-blocking host `connect`; the SYN-ACK goes to the guest only once the
//!   host connect completed (so a refused connect is an RST, ECONNREFUSED in the guest, and an
//!   unreachable one ICMP unreachable).
//! - Guest -> host: a segment's payload is written to the host socket, and the guest is ACKed
//!   only for the bytes the socket accepted. When it accepts less, the ACK advertises a zero
//!   window; the socket turning writable again (EPOLLOUT) sends the window update.
//! - Host -> guest: bytes are read with MSG_PEEK (std `peek`) up to the guest's window and sent
//!   as segments of at most the MSS; they stay in the host socket until the guest ACKs them,
//!   and are then consumed with a plain read. Retransmission (RTO, or three duplicate ACKs)
//!   rewinds to the oldest unacked byte and peeks again from the head of the queue (no
//!   SO_PEEK_OFF: Linux has it for TCP only since 6.9, and nix has no safe setter for it).
//! - FIN: the guest's FIN is `shutdown(SHUT_WR)` on the host; the host's EOF (EPOLLRDHUP, or a
//!   peek of 0 bytes) is a FIN after the last byte. RST both ways: a guest RST closes the host
//!   socket with SO_LINGER 0 (so the peer sees a reset); a host error becomes an RST.
//!
//! The state per flow is the fixed [`TcpFlow`] plus the host socket's own buffers; at most
//! [`MAX_INFLIGHT`] bytes are outstanding towards the guest per flow.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use nix::sys::epoll::{EpollEvent, EpollFlags};
use nix::sys::socket::{setsockopt, sockopt};

use super::{Deny, Engine, Flow, Key, token_flags_tcp};
use crate::GATEWAY;
use crate::config::HostFwd;
use crate::wire::{self, ACK, FIN, Ip, PSH, RST, SYN, Tcp};

/// Our window scale shift (RFC 7323) and the window we advertise: 1 MiB.
const OUR_WSCALE: u8 = 7;
const OUR_WND: u32 = 1 << 20;
/// At most this much unacknowledged data towards the guest per flow (what one peek copies).
pub const MAX_INFLIGHT: usize = 256 * 1024;
const RTO_INIT: Duration = Duration::from_millis(200);
const RTO_MAX: Duration = Duration::from_secs(8);
/// Give up (RST) after this many retransmissions without progress.
const MAX_RETRIES: u32 = 12;
/// A host connect that has not completed by then is given up (RST).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    /// Guest SYN seen, host connect in progress.
    Connecting,
    /// Host connected, SYN-ACK sent to the guest, waiting for its ACK.
    SynAckSent,
    /// hostfwd: host connection accepted, SYN sent to the guest, waiting for its SYN-ACK.
    SynSent,
    Established,
}

#[derive(Debug)]
pub struct TcpFlow {
    pub key: Key,
    sock: TcpStream,
    phase: Phase,
    isn: u32,
    /// Next sequence number expected from the guest.
    rcv_nxt: u32,
    /// Oldest byte sent to the guest and not yet acknowledged: the head of the host socket's
    /// receive queue.
    snd_una: u32,
    snd_nxt: u32,
    /// The highest sequence number sent so far (snd_nxt goes back on a retransmission).
    snd_max: u32,
    /// The sequence number of our FIN, once sent.
    fin_seq: Option<u32>,
    /// The guest's receive window, in bytes (scaled).
    wnd: u32,
    ws_guest: u8,
    ws_ok: bool,
    mss: usize,
    guest_fin: bool,
    host_eof: bool,
    fin_sent: bool,
    /// We advertised a zero window because the host socket was full.
    zero_wnd: bool,
    /// Stopped sending for want of NIC queue room.
    pub starved: bool,
    rto: Duration,
    retries: u32,
    pub deadline: Option<Instant>,
    dup_acks: u8,
}

fn seq_diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

trait SeqMax {
    fn max_seq(self, other: u32) -> u32;
}

impl SeqMax for u32 {
    fn max_seq(self, other: u32) -> u32 {
        if seq_diff(other, self) > 0 {
            other
        } else {
            self
        }
    }
}

fn flags_established() -> EpollFlags {
    EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET
}

fn set_linger0(s: &TcpStream) {
    let _ = setsockopt(
        s,
        sockopt::Linger,
        &nix::libc::linger {
            l_onoff: 1,
            l_linger: 0,
        },
    );
}

impl TcpFlow {
    fn our_window(&self) -> u16 {
        if self.zero_wnd {
            0
        } else if self.ws_ok {
            (OUR_WND >> OUR_WSCALE) as u16
        } else {
            u16::MAX
        }
    }
}

impl Engine {
    fn tcp_seg(
        &mut self,
        key: &Key,
        seq: u32,
        ack: u32,
        flags: u8,
        wnd: u16,
        opts: Option<(u16, Option<u8>)>,
        payload: &[u8],
    ) {
        let h = wire::tcp_header(
            key.remote.port(),
            key.guest.port(),
            seq,
            ack,
            flags,
            wnd,
            opts,
        );
        self.send_ip(
            key.remote.ip(),
            key.guest.ip(),
            wire::PROTO_TCP,
            &h,
            payload,
        );
    }

    /// The RST answering a segment that has no connection (RFC 9293 3.10.7.1).
    fn tcp_rst_for(&mut self, ip: &Ip<'_>, t: &Tcp<'_>) {
        if t.flags & RST != 0 {
            return;
        }
        let key = Key {
            proto: wire::PROTO_TCP,
            guest: SocketAddr::new(ip.src, t.sport),
            remote: SocketAddr::new(ip.dst, t.dport),
        };
        if t.flags & ACK != 0 {
            self.tcp_seg(&key, t.ack, 0, RST, 0, None, &[]);
        } else {
            let len = t.payload.len() as u32
                + u32::from(t.flags & SYN != 0)
                + u32::from(t.flags & FIN != 0);
            self.tcp_seg(&key, 0, t.seq.wrapping_add(len), RST | ACK, 0, None, &[]);
        }
    }

    fn our_mss(&self, v6: bool) -> usize {
        usize::from(self.cfg.mtu) - if v6 { 60 } else { 40 }
    }

    pub(super) fn tcp_from_guest(&mut self, ip: &Ip<'_>, t: &Tcp<'_>, now: Instant) {
        let key = Key {
            proto: wire::PROTO_TCP,
            guest: SocketAddr::new(ip.src, t.sport),
            remote: SocketAddr::new(ip.dst, t.dport),
        };
        if let Some(&fid) = self.keys.get(&key) {
            return self.tcp_segment(fid, t, now);
        }
        if t.flags & (SYN | ACK | RST | FIN) != SYN {
            return self.tcp_rst_for(ip, t);
        }
        let mapped = match self.map(wire::PROTO_TCP, key.remote) {
            Ok(m) => m,
            Err(Deny::Drop | Deny::Refused) => return,
            Err(Deny::Prohibited) => return self.tcp_rst_for(ip, t),
            Err(Deny::NoRoute) => {
                return self.unreachable(ip.dst, ip.src, ip.packet, Deny::NoRoute);
            }
        };
        if self.flows.len() >= self.max_flows {
            return self.tcp_rst_for(ip, t);
        }
        let sock = match self.host.tcp_connect(mapped) {
            Ok(s) => s,
            // ENETUNREACH / EHOSTUNREACH: ICMP; ECONNREFUSED, EMFILE, ENFILE, ENOBUFS and the
            // rest: RST (the guest sees ECONNREFUSED; fd exhaustion must not take us down).
            Err(e) => {
                return match super::deny_of(&e) {
                    Some(Deny::NoRoute) => {
                        self.unreachable(ip.dst, ip.src, ip.packet, Deny::NoRoute)
                    }
                    _ => self.tcp_rst_for(ip, t),
                };
            }
        };
        let fid = self.new_id();
        if self
            .epoll
            .add(&sock, EpollEvent::new(token_flags_tcp(), fid))
            .is_err()
        {
            return self.tcp_rst_for(ip, t);
        }
        let isn = self.random();
        let mss = usize::from(t.mss.unwrap_or(536)).clamp(64, self.our_mss(ip.src.is_ipv6()));
        let flow = TcpFlow {
            key,
            sock,
            phase: Phase::Connecting,
            isn,
            rcv_nxt: t.seq.wrapping_add(1),
            snd_una: isn,
            snd_nxt: isn,
            snd_max: isn,
            fin_seq: None,
            wnd: u32::from(t.window),
            ws_guest: t.wscale.unwrap_or(0),
            ws_ok: t.wscale.is_some(),
            mss,
            guest_fin: false,
            host_eof: false,
            fin_sent: false,
            zero_wnd: false,
            starved: false,
            rto: RTO_INIT,
            retries: 0,
            deadline: Some(now + CONNECT_TIMEOUT),
            dup_acks: 0,
        };
        self.arm(now + CONNECT_TIMEOUT);
        self.insert(fid, key, Flow::Tcp(Box::new(flow)));
    }

    /// hostfwd: a host connection was accepted; open the guest side with a SYN from the
    /// gateway.
    pub(super) fn tcp_accepted(&mut self, sock: TcpStream, fwd: &HostFwd, now: Instant) {
        if self.flows.len() >= self.max_flows || sock.set_nonblocking(true).is_err() {
            set_linger0(&sock);
            return;
        }
        let _ = sock.set_nodelay(true);
        let guest = SocketAddr::new(IpAddr::V4(fwd.guest_addr), fwd.guest_port);
        let port = self.alloc_port(wire::PROTO_TCP, guest, IpAddr::V4(GATEWAY));
        let fid = self.new_id();
        if port == 0
            || self
                .epoll
                .add(&sock, EpollEvent::new(token_flags_tcp(), fid))
                .is_err()
        {
            set_linger0(&sock);
            return;
        }
        let key = Key {
            proto: wire::PROTO_TCP,
            guest,
            remote: SocketAddr::new(IpAddr::V4(GATEWAY), port),
        };
        let isn = self.random();
        let flow = TcpFlow {
            key,
            sock,
            phase: Phase::SynSent,
            isn,
            rcv_nxt: 0,
            snd_una: isn,
            snd_nxt: isn.wrapping_add(1),
            snd_max: isn.wrapping_add(1),
            fin_seq: None,
            wnd: 0,
            ws_guest: 0,
            ws_ok: false,
            mss: 536,
            guest_fin: false,
            host_eof: false,
            fin_sent: false,
            zero_wnd: false,
            starved: false,
            rto: RTO_INIT,
            retries: 0,
            deadline: Some(now + RTO_INIT),
            dup_acks: 0,
        };
        self.arm(now + RTO_INIT);
        self.insert(fid, key, Flow::Tcp(Box::new(flow)));
        let mss = self.our_mss(false) as u16;
        self.tcp_seg(
            &key,
            isn,
            0,
            SYN,
            u16::MAX,
            Some((mss, Some(OUR_WSCALE))),
            &[],
        );
    }

    /// Makes sure the engine's timer covers the flow's deadline (set in many places below).
    fn tcp_rearm(&mut self, fid: u64) {
        if let Some(at) = self.flow(fid).and_then(|f| f.deadline) {
            self.arm(at);
        }
    }

    fn flow(&mut self, fid: u64) -> Option<&mut TcpFlow> {
        match self.flows.get_mut(&fid) {
            Some(Flow::Tcp(t)) => Some(t),
            _ => None,
        }
    }

    /// Drops the flow; `rst_guest` sends the guest an RST, `rst_host` resets the host peer.
    fn tcp_abort(&mut self, fid: u64, rst_guest: bool, rst_host: bool) {
        let Some(Flow::Tcp(f)) = self.remove(fid) else {
            return;
        };
        if rst_host {
            set_linger0(&f.sock);
        }
        if rst_guest {
            let ack = f.rcv_nxt;
            self.tcp_seg(&f.key, f.snd_nxt, ack, RST | ACK, 0, None, &[]);
        }
    }

    fn send_synack(&mut self, fid: u64) {
        let Some(f) = self.flow(fid) else { return };
        let (key, isn, ack) = (f.key, f.isn, f.rcv_nxt);
        // Without the guest's window scale option we send none either (RFC 7323 1.3).
        let ws = f.ws_ok.then_some(OUR_WSCALE);
        let mss = self.our_mss(key.guest.is_ipv6()) as u16;
        self.tcp_seg(&key, isn, ack, SYN | ACK, u16::MAX, Some((mss, ws)), &[]);
    }

    fn send_ack(&mut self, fid: u64) {
        let Some(f) = self.flow(fid) else { return };
        let (key, seq, ack, w) = (f.key, f.snd_nxt, f.rcv_nxt, f.our_window());
        self.tcp_seg(&key, seq, ack, ACK, w, None, &[]);
    }

    /// One segment from the guest on an existing flow.
    fn tcp_segment(&mut self, fid: u64, t: &Tcp<'_>, now: Instant) {
        self.tcp_segment_inner(fid, t, now);
        self.tcp_rearm(fid);
    }

    fn tcp_segment_inner(&mut self, fid: u64, t: &Tcp<'_>, now: Instant) {
        let mtu = usize::from(self.cfg.mtu);
        let Some(f) = self.flow(fid) else { return };
        if t.flags & RST != 0 {
            // Accept an RST only in the window (RFC 5961 3.2 asks for an exact match; a
            // point-to-point link has no blind attacker, so within the window will do).
            let d = seq_diff(t.seq, f.rcv_nxt);
            if f.phase == Phase::SynSent || (-(1 << 20)..=(1 << 24)).contains(&d) {
                self.tcp_abort(fid, false, true);
            }
            return;
        }
        match f.phase {
            Phase::Connecting => return, // a retransmitted SYN: the SYN-ACK comes on connect
            Phase::SynAckSent => {
                if t.flags & SYN != 0 && t.flags & ACK == 0 {
                    return self.send_synack(fid);
                }
                if t.flags & ACK == 0 || t.ack != f.isn.wrapping_add(1) {
                    return;
                }
                f.phase = Phase::Established;
                f.snd_una = t.ack;
                f.snd_nxt = t.ack;
                f.snd_max = t.ack;
                f.retries = 0;
                f.rto = RTO_INIT;
                f.deadline = None;
            }
            Phase::SynSent => {
                if t.flags & (SYN | ACK) != (SYN | ACK) || t.ack != f.isn.wrapping_add(1) {
                    return;
                }
                f.rcv_nxt = t.seq.wrapping_add(1);
                f.ws_ok = t.wscale.is_some();
                f.ws_guest = t.wscale.unwrap_or(0);
                f.mss = usize::from(t.mss.unwrap_or(536)).clamp(64, mtu - 40);
                f.wnd = u32::from(t.window);
                f.phase = Phase::Established;
                f.snd_una = t.ack;
                f.snd_nxt = t.ack;
                f.snd_max = t.ack;
                f.retries = 0;
                f.rto = RTO_INIT;
                f.deadline = None;
                self.send_ack(fid);
                self.tcp_fill(fid, now);
                return;
            }
            Phase::Established => {}
        }
        let Some(Flow::Tcp(f)) = self.flows.get_mut(&fid) else {
            return;
        };
        let mut need_ack = false;
        if t.flags & SYN != 0 {
            // A retransmitted SYN after we are established: re-ACK it.
            need_ack = true;
        }
        if t.flags & ACK != 0 {
            let new_wnd = u32::from(t.window) << if f.ws_ok { f.ws_guest } else { 0 };
            let acked = seq_diff(t.ack, f.snd_una);
            let inflight = seq_diff(f.snd_nxt, f.snd_una);
            // Up to snd_max: after a rewind the guest may ACK what the first send delivered.
            if acked > 0 && acked <= seq_diff(f.snd_max, f.snd_una) {
                let mut data = acked as usize;
                if f.fin_seq == Some(t.ack.wrapping_sub(1)) {
                    data -= 1; // our FIN takes one sequence number, not a byte
                    f.fin_sent = true;
                }
                if seq_diff(t.ack, f.snd_nxt) > 0 {
                    f.snd_nxt = t.ack;
                }
                // The acknowledged bytes leave the host socket's queue now.
                let mut buf = std::mem::take(&mut self.scratch);
                let mut left = data;
                while left > 0 {
                    let n = left.min(buf.len());
                    match (&f.sock).read(&mut buf[..n]) {
                        Ok(0) => break,
                        Ok(k) => left -= k,
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                self.scratch = buf;
                f.snd_una = t.ack;
                f.retries = 0;
                f.rto = RTO_INIT;
                f.dup_acks = 0;
                f.deadline = (f.snd_max != f.snd_una).then_some(now + f.rto);
            } else if acked == 0
                && t.payload.is_empty()
                && inflight > 0
                && t.flags & FIN == 0
                && new_wnd == f.wnd
            {
                f.dup_acks += 1;
                if f.dup_acks == 3 {
                    // Fast retransmit (RFC 5681 3.2), go-back-N from the head.
                    f.snd_nxt = f.snd_una;
                    f.fin_sent = false;
                }
            }
            f.wnd = new_wnd;
        }
        if !t.payload.is_empty() && !f.guest_fin {
            let off = seq_diff(f.rcv_nxt, t.seq);
            if off < 0 || off as usize >= t.payload.len() {
                need_ack = true; // out of order (a gap), or all old: a duplicate ACK
            } else {
                let data = &t.payload[off as usize..];
                let full = match (&f.sock).write(data) {
                    Ok(n) => {
                        f.rcv_nxt = f.rcv_nxt.wrapping_add(n as u32);
                        n < data.len()
                    }
                    Err(e)
                        if e.kind() == ErrorKind::WouldBlock
                            || e.kind() == ErrorKind::Interrupted =>
                    {
                        true
                    }
                    Err(_) => return self.tcp_abort(fid, true, true),
                };
                if full && !f.zero_wnd {
                    // Zero window until the host socket has room (EPOLLOUT).
                    f.zero_wnd = true;
                    let ev = flags_established() | EpollFlags::EPOLLOUT;
                    let _ = self.epoll.modify(&f.sock, &mut EpollEvent::new(ev, fid));
                }
                need_ack = true;
            }
        }
        if t.flags & FIN != 0 {
            let end = t.seq.wrapping_add(t.payload.len() as u32);
            if !f.guest_fin && end == f.rcv_nxt {
                let _ = f.sock.shutdown(Shutdown::Write);
                f.rcv_nxt = f.rcv_nxt.wrapping_add(1);
                f.guest_fin = true;
            }
            need_ack = true;
        }
        let sent = self.tcp_fill(fid, now);
        if need_ack && sent == 0 && self.flows.contains_key(&fid) {
            self.send_ack(fid);
        }
        self.tcp_maybe_done(fid);
    }

    /// Both FINs exchanged and ours acknowledged: the flow is over (no TIME-WAIT: the host
    /// socket keeps that, and the guest's ports are the guest's business).
    fn tcp_maybe_done(&mut self, fid: u64) {
        if let Some(f) = self.flow(fid) {
            if f.guest_fin && f.fin_seq.is_some_and(|s| f.snd_una == s.wrapping_add(1)) {
                self.remove(fid);
            }
        }
    }

    /// Sends what the guest's window allows from the host socket; returns the segments sent.
    pub(super) fn tcp_fill(&mut self, fid: u64, now: Instant) -> usize {
        let mut buf = std::mem::take(&mut self.scratch);
        let r = self.tcp_fill_with(fid, now, &mut buf);
        self.scratch = buf;
        r
    }

    fn tcp_fill_with(&mut self, fid: u64, now: Instant, buf: &mut Vec<u8>) -> usize {
        let budget = self.budget;
        let Some(f) = self.flow(fid) else { return 0 };
        f.starved = false;
        if f.phase != Phase::Established || f.fin_sent {
            return 0;
        }
        let inflight = seq_diff(f.snd_nxt, f.snd_una).max(0) as usize;
        let limit = (f.wnd as usize).min(MAX_INFLIGHT);
        if inflight >= limit {
            return 0;
        }
        // Sender silly-window avoidance (RFC 9293 3.8.6.2.1), and fewer re-peeks of the
        // in-flight bytes: with data outstanding, wait until a quarter of the window is free.
        // (A host EOF still goes out: the FIN needs no window.)
        if inflight > 0 && limit - inflight < (limit / 4).max(f.mss) && !f.host_eof {
            return 0;
        }
        if budget == 0 {
            f.starved = true;
            self.starved = true;
            return 0;
        }
        if buf.len() < limit {
            buf.resize(limit, 0);
        }
        let avail = match f.sock.peek(&mut buf[..limit]) {
            Ok(0) => {
                f.host_eof = true;
                0
            }
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => 0,
            Err(_) => {
                self.tcp_abort(fid, true, false);
                return 0;
            }
        };
        let (key, una, ack, w, mss, eof) = (
            f.key,
            f.snd_una,
            f.rcv_nxt,
            f.our_window(),
            f.mss,
            f.host_eof,
        );
        let mut off = inflight;
        let mut sent = 0;
        while off < avail && sent < budget {
            let len = mss.min(avail - off);
            let flags = if off + len == avail { ACK | PSH } else { ACK };
            self.tcp_seg(
                &key,
                una.wrapping_add(off as u32),
                ack,
                flags,
                w,
                None,
                &buf[off..off + len],
            );
            off += len;
            sent += 1;
        }
        self.budget -= sent;
        let Some(f) = self.flow(fid) else { return sent };
        f.snd_nxt = una.wrapping_add(off.max(inflight) as u32);
        if seq_diff(f.snd_nxt, f.snd_max) > 0 {
            f.snd_max = f.snd_nxt;
        }
        if off < avail {
            f.starved = true;
            self.starved = true;
        } else if eof && avail < limit && !f.fin_sent {
            // Everything the host will ever send is out: our FIN follows the last byte.
            let seq = f.snd_nxt;
            f.snd_nxt = seq.wrapping_add(1);
            f.snd_max = f.snd_max.max_seq(f.snd_nxt);
            f.fin_seq = Some(seq);
            f.fin_sent = true;
            self.tcp_seg(&key, seq, ack, FIN | ACK, w, None, &[]);
            sent += 1;
        }
        let Some(f) = self.flow(fid) else { return sent };
        if f.snd_max != f.snd_una && f.deadline.is_none() {
            let at = now + f.rto;
            f.deadline = Some(at);
            self.arm(at);
        }
        sent
    }

    pub(super) fn tcp_host_event(&mut self, fid: u64, ev: EpollFlags, now: Instant) {
        self.tcp_host_event_inner(fid, ev, now);
        self.tcp_rearm(fid);
    }

    fn tcp_host_event_inner(&mut self, fid: u64, ev: EpollFlags, now: Instant) {
        let Some(Flow::Tcp(f)) = self.flows.get_mut(&fid) else {
            return;
        };
        // Edge-triggered: an EOF seen in any phase must be remembered, it is not reported again.
        if ev.intersects(EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLHUP)
            && f.phase != Phase::Connecting
        {
            f.host_eof = true;
        }
        if f.phase == Phase::Connecting {
            if !ev.intersects(EpollFlags::EPOLLOUT | EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP) {
                return;
            }
            let err = match f.sock.take_error() {
                Ok(e) => e,
                Err(e) => Some(e),
            };
            let err = err.or_else(|| f.sock.peer_addr().err());
            if let Some(e) = err {
                let key = f.key;
                if super::deny_of(&e) == Some(Deny::NoRoute) {
                    self.tcp_abort(fid, false, false);
                    let mut l4 = [0u8; 8];
                    l4[0..2].copy_from_slice(&key.guest.port().to_be_bytes());
                    l4[2..4].copy_from_slice(&key.remote.port().to_be_bytes());
                    let orig = Self::fake_orig(&key, l4);
                    self.unreachable(key.remote.ip(), key.guest.ip(), &orig, Deny::NoRoute);
                    return;
                }
                // ECONNREFUSED, ETIMEDOUT, ...: an RST|ACK acknowledging the guest's SYN,
                // which a SYN-SENT socket takes as ECONNREFUSED (RFC 9293 3.10.7.3).
                return self.tcp_abort(fid, true, false);
            }
            f.phase = Phase::SynAckSent;
            f.snd_nxt = f.isn.wrapping_add(1);
            f.snd_max = f.snd_nxt;
            if ev.intersects(EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLHUP) {
                f.host_eof = true;
            }
            // EPOLLOUT only matters again when the host socket fills up.
            let _ = self
                .epoll
                .modify(&f.sock, &mut EpollEvent::new(flags_established(), fid));
            f.deadline = Some(now + f.rto);
            self.arm(now + RTO_INIT);
            self.send_synack(fid);
            return;
        }
        if ev.contains(EpollFlags::EPOLLERR) {
            return self.tcp_abort(fid, true, false);
        }
        if ev.contains(EpollFlags::EPOLLOUT) && f.zero_wnd && f.phase == Phase::Established {
            f.zero_wnd = false;
            let _ = self
                .epoll
                .modify(&f.sock, &mut EpollEvent::new(flags_established(), fid));
            self.send_ack(fid); // the window update
        }
        if ev.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLHUP) {
            self.tcp_fill(fid, now);
            self.tcp_maybe_done(fid);
        }
    }

    pub(super) fn tcp_timer(&mut self, fid: u64, now: Instant) {
        self.tcp_timer_inner(fid, now);
        self.tcp_rearm(fid);
    }

    fn tcp_timer_inner(&mut self, fid: u64, now: Instant) {
        let Some(f) = self.flow(fid) else { return };
        f.deadline = None;
        match f.phase {
            Phase::Connecting => self.tcp_abort(fid, true, false),
            Phase::SynAckSent | Phase::SynSent => {
                f.retries += 1;
                if f.retries > MAX_RETRIES {
                    let rst_guest = f.phase == Phase::SynAckSent;
                    return self.tcp_abort(fid, rst_guest, true);
                }
                f.rto = (f.rto * 2).min(RTO_MAX);
                let at = now + f.rto;
                f.deadline = Some(at);
                let (phase, key, isn) = (f.phase, f.key, f.isn);
                self.arm(at);
                if phase == Phase::SynAckSent {
                    self.send_synack(fid);
                } else {
                    let mss = self.our_mss(false) as u16;
                    self.tcp_seg(
                        &key,
                        isn,
                        0,
                        SYN,
                        u16::MAX,
                        Some((mss, Some(OUR_WSCALE))),
                        &[],
                    );
                }
            }
            Phase::Established => {
                if f.snd_max == f.snd_una {
                    return;
                }
                f.retries += 1;
                if f.retries > MAX_RETRIES {
                    return self.tcp_abort(fid, true, true);
                }
                // Go back to the oldest unacknowledged byte and peek again from the head.
                f.snd_nxt = f.snd_una;
                f.fin_sent = false;
                f.rto = (f.rto * 2).min(RTO_MAX);
                self.tcp_fill(fid, now);
            }
        }
    }
}
