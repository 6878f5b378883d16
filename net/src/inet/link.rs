//! The device side of [`super::InetSocket`]: a socket whose route leaves through a device
//! (`eth0`) carries its traffic on that device's smoltcp stack ([`crate::stack`]) instead of
//! finding its peer on the loopback network.
//!
//! [`path`] routes a destination with the namespace's table (`crate::dev` `lookup`): the
//! loopback network and the host's own addresses (the local table) stay on the loopback path
//! of `stream.rs`/`udp.rs`; anything else goes out of the route's device. A socket holds a
//! [`Link`] to the smoltcp sockets that carry it: one TCP socket (a connection, or a connect
//! under way), a listener's listening sockets on every device (a small backlog each, refilled
//! as connections are taken), or a UDP socket's bound sockets on every device.
//!
//! Data and state move from smoltcp into the socket's own queues and flags in [`fill`]
//! (`InetSocket::fill`), called under the socket's lock wherever those are read (receive,
//! poll, accept, `FIONREAD`): stream bytes go to the receive queue up to its buffer size (the
//! rest stays in smoltcp, whose window then closes), datagrams to the datagram queue, the
//! connection's state to `state`, `fin` and `err`. So the receive, `MSG_PEEK`/`MSG_WAITALL`,
//! poll and shutdown logic of the loopback path serves device sockets unchanged. Sends go
//! straight into smoltcp's transmit buffer and the stack is polled at once.
//!
//! Errors as on Linux: a reset during connect is `ECONNREFUSED`, no answer within
//! [`CONNECT_TIMEOUT`] is `ETIMEDOUT`, a reset later is `ECONNRESET`; a blocking connect whose
//! `SO_SNDTIMEO` runs out returns `EINPROGRESS` (`__inet_stream_connect`), the next connect
//! `EALREADY` while it is under way.

use super::super::AF_INET;
use super::udp::Dgram;
use super::{InetSocket, Inner, State, sk_wait};
use crate::dev;
use crate::icmperr;
use crate::stack::{self, DevStack, MAX_BUF};
use smoltcp::iface::SocketHandle;
use smoltcp::socket::{tcp, udp};
use smoltcp::wire::{IpEndpoint, IpListenEndpoint};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use um_kernel::netns::NetNs;
use um_kernel::task::lock;
use um_kernel::wait::IoCtx;
use um_uapi::abi::netdevice::RTN_LOCAL;
use um_uapi::{Errno, SysResult};

/// How long a connect waits for the handshake: Linux's 6 SYN retries (`tcp_syn_retries`)
/// with exponential backoff from 1 s give up after 127 s.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(127);
/// How long sent data may stay unacknowledged before the connection is dropped (Linux's 15
/// retries, `tcp_retries2`, take about 15 minutes).
pub const DATA_TIMEOUT: Duration = Duration::from_secs(900);
/// Listening smoltcp sockets per device for one listener: the handshakes that can complete
/// between two accepts (the smoltcp stand-in for the SYN and accept queues).
pub const LISTEN_BACKLOG: usize = 16;

/// Where a packet to a destination goes.
pub(super) enum Path {
    /// The loopback network: `dst` as it is reached there, from `src`.
    Local { dst: IpAddr, src: IpAddr },
    /// Out of a device.
    Dev {
        stack: Arc<DevStack>,
        dst: IpAddr,
        src: IpAddr,
    },
}

/// Routes `dst` in `net` (`ip_route_connect`): the unspecified address and the loopback
/// network as before ([`super::addr::route`]), the host's own addresses (local routes)
/// locally from themselves, the rest through the route's device from its source address.
pub(super) fn path(net: &Arc<NetNs>, dst: IpAddr) -> SysResult<Path> {
    if let Ok((dst, src)) = super::addr::route(dst) {
        return Ok(Path::Local { dst, src });
    }
    let d = dev::devices(net);
    let r = d.lookup(dst).ok_or(Errno::ENETUNREACH)?;
    if r.kind == RTN_LOCAL || r.oif == dev::LO_IFINDEX {
        return Ok(Path::Local { dst, src: dst });
    }
    let stack = stack::stack_for(net, r.oif).ok_or(Errno::ENETUNREACH)?;
    let src = d.source_for(&r, dst).ok_or(Errno::EADDRNOTAVAIL)?;
    Ok(Path::Dev { stack, dst, src })
}

/// Whether `ip` is an address of one of `net`'s devices (binding to it is allowed).
pub(super) fn is_local(net: &Arc<NetNs>, ip: IpAddr) -> bool {
    dev::devices(net).addrs().iter().any(|a| a.addr == ip)
}

/// A TCP connection on a device.
pub(super) struct TcpLink {
    pub(super) stack: Arc<DevStack>,
    pub(super) h: SocketHandle,
    /// When the connect started, until it completed or failed.
    connecting: Option<Instant>,
    /// The smoltcp state at the last fill.
    seen: tcp::State,
    /// Whether the socket holds its port in the bind table (an accepted one is added at
    /// accept).
    pub(super) hashed: bool,
}

/// The smoltcp sockets behind an internet socket.
#[derive(Default)]
pub(super) enum Link {
    /// Loopback only.
    #[default]
    None,
    Tcp(TcpLink),
    /// A listener's listening sockets, per device, with the endpoint they listen on.
    Listen(Vec<(Arc<DevStack>, SocketHandle)>, IpListenEndpoint),
    /// A UDP socket's bound sockets, per device.
    Udp(Vec<(Arc<DevStack>, SocketHandle)>),
    /// An ICMP socket's echo sockets, per device and identifier.
    Icmp(Vec<(Arc<DevStack>, SocketHandle, u16)>),
}

impl Link {
    /// Whether a connect is under way.
    pub(super) fn connecting(&self) -> bool {
        matches!(self, Link::Tcp(l) if l.connecting.is_some())
    }
}

fn smol(d: Duration) -> smoltcp::time::Duration {
    smoltcp::time::Duration::from_micros(d.as_micros() as u64)
}

fn ep(a: SocketAddr) -> IpEndpoint {
    IpEndpoint::from(a)
}

fn sa(e: IpEndpoint) -> SocketAddr {
    SocketAddr::from(e)
}

/// The part of the receive buffer a device socket stages in its own queue.
fn stage_cap(rcvbuf: i32) -> usize {
    (rcvbuf.max(0) as usize).clamp(4096, MAX_BUF)
}

/// Pulls data and state of `i`'s smoltcp sockets into `i` (see the module doc). `me` is the
/// socket `i` belongs to, for the connections a listener accepts.
pub(super) fn fill(me: &InetSocket, i: &mut Inner) {
    match std::mem::take(&mut i.link) {
        Link::None => {}
        Link::Tcp(mut l) => {
            fill_tcp(i, &mut l);
            i.link = Link::Tcp(l);
        }
        Link::Listen(mut v, lep) => {
            fill_listen(me, i, &mut v, lep);
            i.link = Link::Listen(v, lep);
        }
        Link::Udp(v) => {
            fill_udp(i, &v);
            i.link = Link::Udp(v);
        }
        Link::Icmp(v) => {
            me.fill_icmp(i, &v);
            i.link = Link::Icmp(v);
        }
    }
}

fn fill_tcp(i: &mut Inner, l: &mut TcpLink) {
    let mut c = l.stack.core();
    let s = c.tcp(l.h);
    let cap = stage_cap(i.opts.rcvbuf);
    let mut moved = 0;
    while i.stream.len() < cap && s.can_recv() {
        let room = cap - i.stream.len();
        let stream = &mut i.stream;
        let n = s
            .recv(|b| {
                let n = b.len().min(room);
                stream.extend(&b[..n]);
                (n, n)
            })
            .unwrap_or(0);
        if n == 0 {
            break;
        }
        moved += n;
    }
    use tcp::State as T;
    for e in c.take_errs(l.h) {
        let (errno, _) = icmperr::convert(&e);
        let recverr = if e.v6 {
            i.opts.recverr6
        } else {
            i.opts.recverr
        };
        if recverr {
            queue_err(i, errno, e);
        }
        let s = c.tcp(l.h);
        if l.connecting.is_some() && s.state() == T::SynSent {
            // tcp_v4_err / tcp_v6_err in SYN-SENT: the connect fails now with the ICMP's
            // errno (tcp_done_with_error), not after the SYN retries; no RST is sent.
            s.close();
            l.connecting = None;
            l.seen = T::Closed;
            i.err = Some(errno);
            i.rcv_shutdown = true;
            i.snd_shutdown = true;
        } else if recverr {
            // Established: a hard error only with IP_RECVERR, else a soft one (kept by Linux
            // for a later timeout; smoltcp's timeout reports its own).
            i.err = Some(errno);
        }
    }
    let s = c.tcp(l.h);
    let st = s.state();
    match st {
        T::SynSent | T::SynReceived | T::Listen => {}
        T::Closed => {
            if let Some(t0) = l.connecting.take() {
                i.err = Some(if t0.elapsed() >= CONNECT_TIMEOUT {
                    Errno::ETIMEDOUT
                } else {
                    Errno::ECONNREFUSED
                });
                i.rcv_shutdown = true;
                i.snd_shutdown = true;
            } else if l.seen != T::Closed {
                let normal = matches!(l.seen, T::LastAck | T::TimeWait | T::Closing);
                if !normal && i.state == State::Established {
                    i.err = Some(Errno::ECONNRESET);
                }
                if normal {
                    i.fin = true;
                }
                i.state = State::Closed;
                i.rcv_shutdown = true;
                i.snd_shutdown = true;
            }
        }
        _ => {
            if l.connecting.take().is_some() {
                i.state = State::Established;
                i.err = None;
                s.set_timeout(Some(smol(DATA_TIMEOUT)));
            }
            if matches!(st, T::CloseWait | T::LastAck | T::Closing | T::TimeWait) && !s.can_recv() {
                i.fin = true;
            }
        }
    }
    l.seen = st;
    drop(c);
    if moved > 0 {
        // The window opened: let smoltcp tell the peer.
        l.stack.kick();
    }
}

fn fill_listen(
    me: &InetSocket,
    i: &mut Inner,
    v: &mut Vec<(Arc<DevStack>, SocketHandle)>,
    lep: IpListenEndpoint,
) {
    if i.state != State::Listen {
        return;
    }
    let mut lost = Vec::new();
    for (k, (stack, h)) in v.iter_mut().enumerate() {
        let mut c = stack.core();
        let st = c.tcp(*h).state();
        match st {
            tcp::State::Listen | tcp::State::SynReceived => continue,
            tcp::State::Closed => {
                // A handshake that was reset: listen again.
                let _ = c.tcp(*h).listen(lep);
                continue;
            }
            _ => {}
        }
        if i.accept_q.len() > i.backlog {
            continue;
        }
        let s = c.tcp(*h);
        let (Some(local), Some(remote)) = (s.local_endpoint(), s.remote_endpoint()) else {
            continue;
        };
        let (local, remote) = (sa(local), sa(remote));
        if i.family == AF_INET && remote.is_ipv6() || i.opts.v6only && remote.is_ipv4() {
            // smoltcp listens on both families; this one is not ours.
            s.abort();
            continue;
        }
        s.set_timeout(Some(smol(DATA_TIMEOUT)));
        s.set_nagle_enabled(!i.opts.nodelay);
        let e = InetSocket::with_opts(
            me.proto,
            i.family,
            me.owner,
            i.opts.clone_for_accept(),
            me.net.clone(),
        );
        c.set_owner(*h, Arc::downgrade(&e));
        {
            let mut ei = lock(&e.inner);
            ei.state = State::Established;
            ei.local = Some(local);
            ei.remote = Some(remote);
            ei.link = Link::Tcp(TcpLink {
                stack: stack.clone(),
                h: *h,
                connecting: None,
                seen: st,
                hashed: false,
            });
        }
        i.accept_q.push_back(e);
        // The listening socket became the connection: a fresh one takes its place (none
        // past MAX_SOCKETS: the slot then stays with the connection, one listener fewer).
        match replace_listener(&mut c, me, i, lep) {
            Some(nh) => *h = nh,
            None => lost.push(k),
        }
    }
    for k in lost.into_iter().rev() {
        v.remove(k);
    }
}

/// Adds a listening socket on `c` for the listener `me`.
fn replace_listener(
    c: &mut stack::Core,
    me: &InetSocket,
    i: &Inner,
    lep: IpListenEndpoint,
) -> Option<SocketHandle> {
    let (rx, tx) = stack::tcp_buffers(i.opts.rcvbuf, i.opts.sndbuf);
    let h = c.add_tcp(rx, tx, me.me.clone())?;
    if c.tcp(h).listen(lep).is_err() {
        c.remove(h);
        return None;
    }
    Some(h)
}

fn fill_udp(i: &mut Inner, v: &[(Arc<DevStack>, SocketHandle)]) {
    let local_port = i.local.map_or(0, |l| l.port());
    let connected = (i.state == State::Established)
        .then_some(i.remote)
        .flatten();
    for (stack, h) in v {
        let mut c = stack.core();
        for e in c.take_errs(*h) {
            // __udp4_lib_err / __udp6_lib_err: a connected socket hears only of its peer.
            if connected.is_some_and(|r| !same_addr(r, e.dst)) {
                continue;
            }
            let (errno, fatal) = icmperr::convert(&e);
            let recverr = if e.v6 {
                i.opts.recverr6
            } else {
                i.opts.recverr
            };
            if recverr {
                queue_err(i, errno, e);
            } else if !fatal || connected.is_none() {
                continue;
            }
            i.err = Some(errno);
        }
        let s = c.udp(*h);
        while let Ok((data, meta)) = s.recv() {
            let from = sa(meta.endpoint);
            if connected.is_some_and(|r| r != from) {
                continue;
            }
            if i.dgram_bytes > i.opts.rcvbuf.max(0) as usize {
                continue;
            }
            let to_ip = meta
                .local_address
                .map(IpAddr::from)
                .unwrap_or_else(|| super::addr::any(i.family));
            i.dgram_bytes += crate::unix::dgram_charge(data.len());
            i.dgrams.push_back(Dgram::new(
                data.to_vec(),
                from,
                SocketAddr::new(to_ip, local_port),
                i32::from(super::opt::DEFAULT_TTL as u8),
                0,
            ));
        }
    }
}

/// Whether `a` and `b` are the same endpoint, IPv4-mapped IPv6 or not.
fn same_addr(a: SocketAddr, b: SocketAddr) -> bool {
    let canon = |x: SocketAddr| match x.ip() {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or(x, |v4| SocketAddr::new(IpAddr::V4(v4), x.port())),
        IpAddr::V4(_) => x,
    };
    canon(a) == canon(b)
}

/// Queues an ICMP error on `i`'s error queue (`ip_icmp_error` / `ipv6_icmp_error`), bounded
/// by [`icmperr::ERRQ_MAX`].
fn queue_err(i: &mut Inner, errno: Errno, err: icmperr::IcmpErr) {
    if i.errq.len() < icmperr::ERRQ_MAX {
        i.errq.push_back(icmperr::ErrEntry { errno, err });
    }
}

impl InetSocket {
    /// Pulls the device state into the socket (see [`fill`]).
    pub(super) fn fill(&self, i: &mut Inner) {
        if !matches!(i.link, Link::None) {
            fill(self, i);
        }
    }

    /// Wakes the socket's waiters (the device stack calls it when its smoltcp sockets change).
    pub fn wake(&self) {
        self.wq.wake_all();
    }

    /// The stack a connection runs on.
    fn tcp_stack(&self) -> Option<(Arc<DevStack>, SocketHandle)> {
        match &lock(&self.inner).link {
            Link::Tcp(l) => Some((l.stack.clone(), l.h)),
            _ => None,
        }
    }

    /// Whether this socket's connection runs on a device.
    pub(super) fn on_device(&self) -> bool {
        matches!(lock(&self.inner).link, Link::Tcp(_))
    }

    /// A TCP connect out of `stack` (see the module doc for the errors).
    pub(super) fn connect_dev(
        &self,
        io: &IoCtx<'_>,
        stack: Arc<DevStack>,
        dst: SocketAddr,
        src: IpAddr,
    ) -> SysResult<()> {
        self.autobind_for(src, true, true)?;
        let local = self.local_addr();
        let (rx, tx, nodelay, keepalive, timeo) = {
            let i = lock(&self.inner);
            let (rx, tx) = stack::tcp_buffers(i.opts.rcvbuf, i.opts.sndbuf);
            (
                rx,
                tx,
                i.opts.nodelay,
                i.opts
                    .keepalive
                    .then(|| Duration::from_secs(i.opts.keepidle.max(1) as u64)),
                i.opts.sndtimeo,
            )
        };
        let h = {
            let mut c = stack.core();
            let Some(h) = c.add_tcp(rx, tx, self.me.clone()) else {
                drop(c);
                self.release_port_if_auto();
                return Err(Errno::ENOBUFS);
            };
            let lep = IpListenEndpoint {
                addr: Some(local.ip().into()),
                port: local.port(),
            };
            let r = c.tcp_connect(h, ep(dst), lep);
            if r.is_err() {
                c.remove(h);
                drop(c);
                self.release_port_if_auto();
                return Err(Errno::EADDRNOTAVAIL);
            }
            let s = c.tcp(h);
            s.set_nagle_enabled(!nodelay);
            s.set_keep_alive(keepalive.map(smol));
            s.set_timeout(Some(smol(CONNECT_TIMEOUT)));
            h
        };
        {
            let mut i = lock(&self.inner);
            i.link = Link::Tcp(TcpLink {
                stack: stack.clone(),
                h,
                connecting: Some(Instant::now()),
                seen: tcp::State::SynSent,
                hashed: true,
            });
            i.remote = Some(dst);
            i.err = None;
            i.rcv_shutdown = false;
            i.snd_shutdown = false;
            i.fin = false;
        }
        // Armed: the SYN's retransmission and a failed ARP resolution (`crate::neigh`) need
        // the netstack thread to come back even if no frame arrives.
        stack.service_armed();
        if io.nonblock {
            lock(&self.inner).connect_pending = true;
            return Err(Errno::EINPROGRESS);
        }
        self.wait_connected(io, timeo)
    }

    /// Waits for a device connect to complete: `Ok`, its error, `EINPROGRESS` when
    /// `SO_SNDTIMEO` ran out, `EINTR`/`ERESTARTSYS` for a signal (the connect goes on).
    fn wait_connected(&self, io: &IoCtx<'_>, timeo: Option<Duration>) -> SysResult<()> {
        let r = sk_wait(io, timeo, &[&self.wq], || {
            let mut i = lock(&self.inner);
            self.fill(&mut i);
            if i.state == State::Established {
                return Some(Ok(()));
            }
            if let Some(e) = i.err.take() {
                return Some(Err(e));
            }
            if !i.link.connecting() {
                return Some(Err(Errno::ECONNABORTED));
            }
            None
        });
        match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                self.drop_link();
                self.release_port_if_auto();
                Err(e)
            }
            Err(e) => {
                lock(&self.inner).connect_pending = true;
                Err(if e == Errno::EAGAIN {
                    Errno::EINPROGRESS
                } else {
                    e
                })
            }
        }
    }

    /// The second connect after `EINPROGRESS` on a device (`__inet_stream_connect` in
    /// `SS_CONNECTING`): `EALREADY` while under way, 0 once connected, the error once failed.
    pub(super) fn connect_again_dev(&self) -> Option<SysResult<()>> {
        let mut i = lock(&self.inner);
        if !matches!(i.link, Link::Tcp(_)) || !i.connect_pending {
            return None;
        }
        self.fill(&mut i);
        if i.link.connecting() {
            return Some(Err(Errno::EALREADY));
        }
        i.connect_pending = false;
        if i.state == State::Established {
            return Some(Ok(()));
        }
        let e = i.err.take().unwrap_or(Errno::ECONNABORTED);
        drop(i);
        self.drop_link();
        self.release_port_if_auto();
        Some(Err(e))
    }

    /// Forgets the smoltcp sockets (a failed connect, a disconnect): aborted and removed.
    pub(super) fn drop_link(&self) {
        let link = std::mem::take(&mut lock(&self.inner).link);
        let stacks = release_link(link, true);
        for s in stacks {
            s.service();
        }
    }

    /// Sends stream bytes on a device connection.
    pub(super) fn send_dev(&self, io: &IoCtx<'_>, data: &[u8]) -> SysResult<usize> {
        let Some((stack, h)) = self.tcp_stack() else {
            return Err(Errno::EPIPE);
        };
        let timeo = lock(&self.inner).opts.sndtimeo;
        let mut done = 0usize;
        while done < data.len() {
            let r = sk_wait(io, timeo, &[&self.wq], || {
                let mut i = lock(&self.inner);
                self.fill(&mut i);
                if let Some(e) = i.err.take() {
                    return Some(Err(e));
                }
                if i.snd_shutdown || i.state != State::Established {
                    return Some(Err(Errno::EPIPE));
                }
                let mut c = stack.core();
                let s = c.tcp(h);
                if !s.may_send() {
                    return Some(Err(Errno::EPIPE));
                }
                match s.send_slice(&data[done..]) {
                    Ok(0) => None,
                    Ok(n) => Some(Ok(n)),
                    Err(_) => Some(Err(Errno::EPIPE)),
                }
            });
            match r {
                Ok(Ok(n)) => {
                    done += n;
                    stack.service();
                }
                Ok(Err(e)) | Err(e) => return if done > 0 { Ok(done) } else { Err(e) },
            }
        }
        Ok(done)
    }

    /// `shutdown(SHUT_WR)` of a device connection: the FIN goes out after the queued bytes.
    pub(super) fn shutdown_dev(&self) {
        if let Some((stack, h)) = self.tcp_stack() {
            stack.core().tcp(h).close();
            stack.service();
        }
    }

    /// Whether a device connection can take more bytes now (`sk_stream_is_writeable`).
    pub(super) fn dev_writable(i: &Inner) -> Option<bool> {
        match &i.link {
            Link::Tcp(l) => Some(l.stack.core().tcp(l.h).can_send()),
            _ => None,
        }
    }

    /// Applies the options smoltcp knows (Nagle, keep-alive) to a device connection.
    pub(super) fn dev_opts(i: &Inner) {
        if let Link::Tcp(l) = &i.link {
            let mut c = l.stack.core();
            let s = c.tcp(l.h);
            s.set_nagle_enabled(!i.opts.nodelay);
            s.set_keep_alive(
                i.opts
                    .keepalive
                    .then(|| smol(Duration::from_secs(i.opts.keepidle.max(1) as u64))),
            );
        }
    }

    /// The MSS and MTU of a device connection.
    pub(super) fn dev_mtu(i: &Inner) -> Option<usize> {
        match &i.link {
            Link::Tcp(l) => Some(l.stack.core().mtu()),
            _ => None,
        }
    }

    /// After `listen`: listening sockets on every device of the namespace, unless the socket
    /// is bound to a loopback address.
    pub(super) fn listen_dev(&self) {
        let (local, v6only) = {
            let i = lock(&self.inner);
            if !matches!(i.link, Link::None) {
                return;
            }
            match i.local {
                Some(l) => (l, i.opts.v6only),
                None => return,
            }
        };
        let _ = v6only;
        if local.ip().is_loopback() {
            return;
        }
        let lep = IpListenEndpoint {
            addr: (!local.ip().is_unspecified()).then(|| local.ip().into()),
            port: local.port(),
        };
        let mut v = Vec::new();
        let stacks = stack::stacks_in(&self.net);
        let mut i = lock(&self.inner);
        let n = (i.backlog + 1).min(LISTEN_BACKLOG);
        for s in stacks {
            if let Some(a) = lep.addr
                && !s.core().has_addr(a.into())
            {
                continue;
            }
            let mut c = s.core();
            for _ in 0..n {
                if let Some(h) = replace_listener(&mut c, self, &i, lep) {
                    v.push((s.clone(), h));
                }
            }
        }
        if !v.is_empty() {
            i.link = Link::Listen(v, lep);
        }
    }

    /// After a UDP socket got its port: bound smoltcp sockets on every device of the
    /// namespace (so datagrams arriving there reach it), unless it is bound to loopback.
    pub(super) fn udp_attach(&self) {
        if self.proto != super::opt::Proto::Udp {
            return;
        }
        let (local, rx, tx) = {
            let i = lock(&self.inner);
            if !matches!(i.link, Link::None) {
                return;
            }
            let Some(l) = i.local else { return };
            (
                l,
                (i.opts.rcvbuf.max(0) as usize).clamp(4096, MAX_BUF),
                (i.opts.sndbuf.max(0) as usize).clamp(4096, MAX_BUF),
            )
        };
        if local.ip().is_loopback() {
            return;
        }
        let lep = IpListenEndpoint {
            addr: (!local.ip().is_unspecified()).then(|| local.ip().into()),
            port: local.port(),
        };
        let mut v = Vec::new();
        for s in stack::stacks_in(&self.net) {
            let mut c = s.core();
            if let Some(a) = lep.addr
                && !c.has_addr(a.into())
            {
                continue;
            }
            if let Some(h) = c.add_udp(rx, tx, self.me.clone()) {
                if c.udp(h).bind(lep).is_ok() {
                    v.push((s.clone(), h));
                } else {
                    c.remove(h);
                }
            }
        }
        if !v.is_empty() {
            lock(&self.inner).link = Link::Udp(v);
        }
    }

    /// Sends a datagram out of `stack` from `src`.
    pub(super) fn send_udp_dev(
        &self,
        io: &IoCtx<'_>,
        stack: &Arc<DevStack>,
        data: &[u8],
        dst: SocketAddr,
        src: IpAddr,
    ) -> SysResult<usize> {
        self.udp_attach();
        let (h, timeo) = {
            let i = lock(&self.inner);
            let h = match &i.link {
                Link::Udp(v) => v
                    .iter()
                    .find(|(s, _)| Arc::ptr_eq(s, stack))
                    .map(|(_, h)| *h),
                _ => None,
            };
            (h.ok_or(Errno::ENETUNREACH)?, i.opts.sndtimeo)
        };
        let meta = udp::UdpMetadata {
            endpoint: ep(dst),
            local_address: Some(src.into()),
            meta: Default::default(),
        };
        sk_wait(io, timeo, &[&self.wq], || {
            let mut c = stack.core();
            let s = c.udp(h);
            if data.len() > s.payload_send_capacity() {
                return Some(Err(Errno::EMSGSIZE));
            }
            match s.send_slice(data, meta) {
                Ok(()) => Some(Ok(())),
                Err(udp::SendError::BufferFull) => None,
                Err(udp::SendError::Unaddressable) => Some(Err(Errno::EINVAL)),
            }
        })??;
        stack.service_armed();
        Ok(data.len())
    }
}

/// Lets go of a link's smoltcp sockets: a connection is closed gracefully (FIN, the smoltcp
/// socket finishing as an orphan) or, with `abort`, reset; listening and UDP sockets go at
/// once. Returns the stacks to poll.
pub(super) fn release_link(link: Link, abort: bool) -> Vec<Arc<DevStack>> {
    match link {
        Link::None => vec![],
        Link::Tcp(l) => {
            {
                let mut c = l.stack.core();
                let s = c.tcp(l.h);
                if abort {
                    s.abort();
                } else {
                    s.close();
                }
                c.orphan(l.h);
            }
            vec![l.stack]
        }
        Link::Icmp(v) => release_link(
            Link::Udp(v.into_iter().map(|(s, h, _)| (s, h)).collect()),
            abort,
        ),
        Link::Listen(v, _) => {
            // Handshakes done but not accepted are reset, as for embryos in the accept queue.
            let mut out: Vec<Arc<DevStack>> = Vec::new();
            for (s, h) in v {
                {
                    let mut c = s.core();
                    c.tcp(h).abort();
                    c.orphan(h);
                }
                if !out.iter().any(|o| Arc::ptr_eq(o, &s)) {
                    out.push(s);
                }
            }
            out
        }
        Link::Udp(v) => {
            let mut out: Vec<Arc<DevStack>> = Vec::new();
            for (s, h) in v {
                s.core().remove(h);
                if !out.iter().any(|o| Arc::ptr_eq(o, &s)) {
                    out.push(s);
                }
            }
            out
        }
    }
}

impl InetSocket {
    /// Whether an accepted device connection still has to take its port in the bind table.
    pub(super) fn take_hash(&self) -> bool {
        match &mut lock(&self.inner).link {
            Link::Tcp(l) if !l.hashed => {
                l.hashed = true;
                true
            }
            _ => false,
        }
    }

    /// Releases the device side of a socket being closed (`abort`: with a reset).
    pub(super) fn release_dev(&self, link: Link, abort: bool) {
        for s in release_link(link, abort) {
            s.service();
        }
    }
}
