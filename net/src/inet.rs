//! AF_INET and AF_INET6 sockets (Linux `net/ipv4/af_inet.c`, `tcp.c`, `tcp_ipv4.c`, `udp.c`,
//! `inet_connection_sock.c`, `inet_hashtables.c`, `net/ipv6/af_inet6.c`, `tcp_ipv6.c`,
//! `udp.c`): `SOCK_STREAM` (TCP), `SOCK_DGRAM` (UDP) and ICMP echo ([`icmp`]: ping and raw).
//!
//! Two paths. On the loopback network (`lo`: 127.0.0.0/8, ::1, and the host's own device
//! addresses, which the local routing table puts on it) no packet is built: a TCP connect
//! finds the listener and queues a new connected socket on it at once (the handshake of a
//! loopback connection completes before `connect` returns on Linux too), and stream bytes and
//! datagrams queue at the receiver. A destination the namespace's routes (`crate::dev`) send
//! out of a device goes through that device's TCP/IP stack ([`crate::stack`], on smoltcp) as
//! real packets; `link.rs` ties a socket to its smoltcp sockets, and one listener or UDP socket
//! serves both paths. Without a route the destination is `ENETUNREACH`. Other raw protocols
//! are refused in [`crate::sys`].
//!
//! Key types: [`InetSocket`] (the `struct sock`: state behind one mutex, one wait queue woken on
//! every change), [`InetFile`] (its `FileOps`; dropping it is `inet_release`), [`Recv`]. Bound
//! sockets are found through one global table keyed by protocol and port ([`ports`]), which also
//! serialises binding: it is locked before any socket, and no code holds two sockets' locks at
//! once. Pure parts: [`addr`] (address codec, routing, bind overlap, port choice) and [`opt`]
//! (socket option values and their encoding); the TCP and UDP data paths are in [`stream`]
//! and [`udp`].
//!
//! Differences from Linux, on purpose: no TIME_WAIT (a closed connection frees its port at
//! once), a non-blocking connect to a full backlog queues anyway (a blocking one waits, and
//! `SO_SNDTIMEO` running out is `ETIMEDOUT`), out-of-band data is sent inline (`MSG_OOB` on
//! receive is `EINVAL`, as with no urgent data), multicast memberships are recorded but nothing
//! is sent to a group (`ENETUNREACH`), and of the ancillary data only UDP's `IP_PKTINFO`,
//! `IP_TTL`, `IP_TOS` and `IPV6_PKTINFO` are received.

pub mod addr;
mod icmp;
mod link;
pub mod list;
pub mod opt;
mod stream;
mod udp;

use link::{Link, Path};
use udp::Dgram;

use super::{AF_INET, AF_INET6, SHUT_RD, SHUT_RDWR, SHUT_WR};
use addr::{Sa, canon6, overlap, pick_port, unmap};
use opt::{LOOPBACK_MSS, LOOPBACK_MTU, OptCtx, Opts, Proto};
use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};
use um_fs::pipe::{FIONREAD, next_ino, send_sigpipe};
use um_kernel::netns::{self, NetNs};
use um_kernel::task::lock;
use um_kernel::vfs::{FileOps, GuestMem, Kstat};
use um_kernel::wait::{IoCtx, PollTable, WaitError, WaitQueue, wait_event};
use um_uapi::abi::inet::{IPPROTO_IP, IPPROTO_IPV6, IPPROTO_TCP, ip, ipv6, tcp};
use um_uapi::abi::poll::{
    POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDHUP, POLLRDNORM, POLLWRBAND, POLLWRNORM,
};
use um_uapi::{Errno, SysResult};

/// `MSG_OOB`.
const MSG_OOB: u32 = super::MSG_OOB;
/// `MSG_ERRQUEUE`: receive from the error queue.
pub use um_uapi::abi::inet::MSG_ERRQUEUE;
/// Most pending connections a listener accepts by default (`net.core.somaxconn`, per network
/// namespace: `crate::sysctl::somaxconn`).
pub const SOMAXCONN: u32 = 4096;
/// Largest UDP payload over IPv4 (65535 less the IP and UDP headers) and over IPv6.
pub const UDP_MAX_V4: usize = 65_507;
/// See [`UDP_MAX_V4`].
pub const UDP_MAX_V6: usize = 65_527;
pub use um_uapi::abi::capability::CAP_NET_BIND_SERVICE;
/// `SOL_RAW` (`include/linux/socket.h`).
const SOL_RAW: i32 = 255;
/// `SIOCATMARK`.
const SIOCATMARK: u32 = 0x8905;
/// `SIOCOUTQ` (= `TIOCOUTQ`).
const SIOCOUTQ: u32 = 0x5411;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// `TCP_CLOSE` (UDP: not connected).
    Closed,
    /// `TCP_LISTEN`.
    Listen,
    /// `TCP_ESTABLISHED` (UDP: connected), and stays so after the peer's FIN.
    Established,
}

struct Inner {
    /// `AF_INET` or `AF_INET6` (`IPV6_ADDRFORM` turns the second into the first).
    family: u32,
    state: State,
    /// The local address once the socket has a port (its IP may be the wildcard).
    local: Option<SocketAddr>,
    /// `SOCK_BINDADDR_LOCK` / `SOCK_BINDPORT_LOCK`: the user bound an address / a port, which a
    /// disconnect keeps.
    user_addr: bool,
    user_port: bool,
    remote: Option<SocketAddr>,
    /// The other end of a TCP connection.
    peer: Option<Arc<InetSocket>>,
    backlog: usize,
    accept_q: VecDeque<Arc<InetSocket>>,
    /// TCP receive queue.
    stream: VecDeque<u8>,
    /// UDP receive queue and what it is charged against the receive buffer.
    dgrams: VecDeque<Dgram>,
    dgram_bytes: usize,
    rcv_shutdown: bool,
    snd_shutdown: bool,
    /// The peer's FIN arrived (`SOCK_DONE`): reads see EOF once the queue is empty.
    fin: bool,
    err: Option<Errno>,
    /// The error queue (`sk_error_queue`): ICMP errors kept for `recvmsg(MSG_ERRQUEUE)` when
    /// `IP_RECVERR`/`IPV6_RECVERR` is on (`crate::icmperr`).
    errq: VecDeque<crate::icmperr::ErrEntry>,
    /// The last open file is gone (or the embryo was dropped unaccepted).
    dead: bool,
    /// A non-blocking connect returned `EINPROGRESS`; the next connect reports its outcome.
    connect_pending: bool,
    opts: Opts,
    /// The smoltcp sockets that carry it over a device (`link.rs`).
    link: Link,
}

/// An internet socket.
pub struct InetSocket {
    proto: Proto,
    inner: Mutex<Inner>,
    wq: WaitQueue,
    ino: u64,
    /// The creator's fsuid/fsgid (the socket inode's owner, `sock_i_uid` for SO_REUSEPORT).
    owner: (u32, u32),
    /// The network namespace the socket was made in (`sock_net`): it binds, connects and
    /// receives only there.
    net: Arc<NetNs>,
    /// A raw socket's protocol other than ICMP (0: ICMP/ICMPv6, the only one carried). Such
    /// sockets exist for `CAP_NET_RAW` so that what programs open them for works: busybox
    /// `udhcpc` and `ifconfig` take one for the interface ioctls; sending is `EOPNOTSUPP`.
    raw_protocol: std::sync::atomic::AtomicU32,
    me: Weak<InetSocket>,
}

/// A bound port: network namespace ([`NetNs::inum`]), transport, port.
type PortKey = (u64, Proto, u16);

/// The bind table (Linux `inet_bind_hashbucket` plus `udp_table`): every socket holding a port,
/// keyed by network namespace too (Linux hashes `net` into the buckets and compares it).
fn ports() -> &'static Mutex<HashMap<PortKey, Vec<Weak<InetSocket>>>> {
    static T: OnceLock<Mutex<HashMap<PortKey, Vec<Weak<InetSocket>>>>> = OnceLock::new();
    T.get_or_init(Default::default)
}

/// What a bound socket claims, for the conflict check.
#[derive(Clone, Copy, Debug)]
pub struct BindView {
    pub ip: IpAddr,
    pub v6only: bool,
    pub reuse: bool,
    pub reuseport: bool,
    pub listening: bool,
    pub uid: u32,
}

/// Whether binding `me` conflicts with `other` on the same port (Linux `inet_bind_conflict`
/// with `relax` for TCP, `udp_lib_lport_inuse` for UDP): overlapping addresses conflict unless
/// both set `SO_REUSEADDR` (and, for TCP, the other does not listen), or both set
/// `SO_REUSEPORT` under the same user.
pub fn bind_conflict(proto: Proto, me: &BindView, other: &BindView) -> bool {
    if !overlap(me.ip, me.v6only, other.ip, other.v6only) {
        return false;
    }
    let reuse_ok = me.reuse && other.reuse && (proto == Proto::Udp || !other.listening);
    if reuse_ok {
        return false;
    }
    !(me.reuseport && other.reuseport && me.uid == other.uid)
}

/// Blocks through `io` until `cond` gives a value, with a socket timeout: `EAGAIN` when it
/// passes (or at once for a non-blocking call), `EINTR` for a signal during a timed wait
/// (`sock_intr_errno`), `ERESTARTSYS` during an untimed one.
fn sk_wait<T>(
    io: &IoCtx<'_>,
    timeo: Option<Duration>,
    queues: &[&WaitQueue],
    mut cond: impl FnMut() -> Option<T>,
) -> SysResult<T> {
    if io.nonblock || timeo == Some(Duration::ZERO) {
        return cond().ok_or(Errno::EAGAIN);
    }
    // A timeout too far to represent is no timeout.
    match timeo.and_then(|d| Instant::now().checked_add(d)) {
        None => io.wait(queues, cond),
        Some(deadline) => wait_event(io.task, queues, Some(deadline), cond).map_err(|e| match e {
            WaitError::Interrupted => Errno::EINTR,
            WaitError::TimedOut => Errno::EAGAIN,
        }),
    }
}

/// What a receive got.
#[derive(Debug, Default)]
pub struct Recv {
    /// Bytes copied into the buffer.
    pub n: usize,
    /// The datagram's real length (`MSG_TRUNC` in the flags returns it).
    pub full_len: usize,
    /// `msg_flags` out: `MSG_TRUNC` when a datagram did not fit.
    pub flags: u32,
    /// The sender (UDP).
    pub from: Option<SocketAddr>,
    /// Control messages (UDP packet information the socket asked for).
    pub control: Vec<opt::Cmsg>,
}

/// Where a socket sends: the destination of a send or connect, decoded by the family's rules.
enum Dest {
    /// `AF_UNSPEC`: dissolve the association (connect) / use the connected peer (IPv6 send).
    Unspec,
    Addr(SocketAddr),
}

impl InetSocket {
    /// Makes this raw socket one of protocol `p` (not ICMP): see [`InetSocket::raw_protocol`].
    pub fn set_raw_protocol(&self, p: u32) {
        self.raw_protocol
            .store(p, std::sync::atomic::Ordering::Relaxed);
    }

    /// A raw socket's protocol other than ICMP, or 0.
    pub fn raw_protocol(&self) -> u32 {
        self.raw_protocol.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A new unbound socket in the caller's network namespace (`inet_create` with
    /// `current->nsproxy->net_ns`).
    pub fn new(proto: Proto, family: u32, owner: (u32, u32)) -> Arc<InetSocket> {
        Self::with_opts(proto, family, owner, Opts::new(proto), netns::current())
    }

    fn with_opts(
        proto: Proto,
        family: u32,
        owner: (u32, u32),
        opts: Opts,
        net: Arc<NetNs>,
    ) -> Arc<InetSocket> {
        Arc::new_cyclic(|me| InetSocket {
            proto,
            inner: Mutex::new(Inner {
                family,
                state: State::Closed,
                local: None,
                user_addr: false,
                user_port: false,
                remote: None,
                peer: None,
                backlog: 0,
                accept_q: VecDeque::new(),
                stream: VecDeque::new(),
                dgrams: VecDeque::new(),
                dgram_bytes: 0,
                rcv_shutdown: false,
                snd_shutdown: false,
                fin: false,
                err: None,
                errq: VecDeque::new(),
                dead: false,
                connect_pending: false,
                opts,
                link: Link::None,
            }),
            wq: WaitQueue::new(),
            ino: next_ino(),
            owner,
            net,
            raw_protocol: std::sync::atomic::AtomicU32::new(0),
            me: me.clone(),
        })
    }

    fn me(&self) -> Arc<InetSocket> {
        self.me.upgrade().expect("a socket in use is alive")
    }

    /// The bind table key of `port` for this socket's namespace and transport.
    fn key(&self, port: u16) -> PortKey {
        (self.net.inum(), self.proto, port)
    }

    /// The transport.
    pub fn proto(&self) -> Proto {
        self.proto
    }

    /// `SOCK_STREAM` or `SOCK_DGRAM`.
    pub fn sock_type(&self) -> u32 {
        match self.proto {
            Proto::Tcp => super::SOCK_STREAM,
            Proto::Udp | Proto::Ping => super::SOCK_DGRAM,
            Proto::Raw => super::SOCK_RAW,
        }
    }

    /// `AF_INET` or `AF_INET6`.
    pub fn family(&self) -> u32 {
        lock(&self.inner).family
    }

    fn view(&self) -> Option<(u16, BindView)> {
        let i = lock(&self.inner);
        let local = i.local?;
        Some((
            local.port(),
            BindView {
                ip: local.ip(),
                v6only: i.opts.v6only,
                reuse: i.opts.reuseaddr,
                reuseport: i.opts.reuseport,
                listening: i.state == State::Listen,
                uid: self.owner.0,
            },
        ))
    }

    /// The live sockets holding `port`, other than this one.
    fn others_on(
        &self,
        t: &HashMap<PortKey, Vec<Weak<InetSocket>>>,
        port: u16,
    ) -> Vec<Arc<InetSocket>> {
        t.get(&self.key(port))
            .map(|v| {
                v.iter()
                    .filter_map(Weak::upgrade)
                    .filter(|s| !std::ptr::eq(Arc::as_ptr(s), self))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn port_in_use(&self, t: &HashMap<PortKey, Vec<Weak<InetSocket>>>, port: u16) -> bool {
        t.get(&self.key(port))
            .is_some_and(|v| v.iter().any(|w| w.strong_count() > 0))
    }

    /// Takes a port for `ip` (0: an ephemeral one) and records the local address: the core of
    /// bind, listen's and connect's autobind (`inet_csk_get_port`, `udp_lib_get_port`).
    /// `for_connect` picks ephemeral ports of the other parity.
    fn take_port(&self, ip: IpAddr, port: u16, for_connect: bool) -> SysResult<u16> {
        let mut t = lock(ports());
        let mut me = {
            let i = lock(&self.inner);
            if i.local.is_some() {
                return Err(Errno::EINVAL);
            }
            BindView {
                ip,
                v6only: i.opts.v6only,
                reuse: i.opts.reuseaddr,
                reuseport: i.opts.reuseport,
                listening: i.state == State::Listen,
                uid: self.owner.0,
            }
        };
        let port = if port == 0 {
            let mut seed = [0u8; 4];
            let _ = um_os_linux::host::getrandom(&mut seed);
            pick_port(
                addr::EPHEMERAL_PORTS,
                u32::from_le_bytes(seed),
                for_connect,
                |p| !self.port_in_use(&t, p),
            )
            .ok_or(Errno::EADDRINUSE)?
        } else {
            for o in self.others_on(&t, port) {
                if let Some((_, v)) = o.view()
                    && bind_conflict(self.proto, &me, &v)
                {
                    return Err(Errno::EADDRINUSE);
                }
            }
            port
        };
        me.ip = ip;
        let v = t.entry(self.key(port)).or_default();
        v.retain(|w| w.strong_count() > 0);
        v.push(self.me.clone());
        lock(&self.inner).local = Some(SocketAddr::new(me.ip, port));
        Ok(port)
    }

    /// Gives the port back (`inet_put_port`).
    fn unhash(&self) {
        let port = match lock(&self.inner).local {
            Some(l) => l.port(),
            None => return,
        };
        let mut t = lock(ports());
        if let Some(v) = t.get_mut(&self.key(port)) {
            v.retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), self));
            if v.is_empty() {
                t.remove(&self.key(port));
            }
        }
    }

    /// Registers an accepted socket on its listener's port (`__inet_inherit_port`).
    fn inherit_port(&self, port: u16) {
        lock(ports())
            .entry(self.key(port))
            .or_default()
            .push(self.me.clone());
    }

    /// `bind` (`inet_bind`, `inet6_bind`). `may_bind_low`: the caller holds
    /// `CAP_NET_BIND_SERVICE`.
    pub fn bind(&self, b: &[u8], may_bind_low: bool) -> SysResult<()> {
        let (family, v6only, freebind) = {
            let i = lock(&self.inner);
            (i.family, i.opts.v6only, i.opts.freebind)
        };
        let a = if family == AF_INET {
            if b.len() < 16 {
                return Err(Errno::EINVAL);
            }
            match addr::decode(b)? {
                Sa::V4(a) => SocketAddr::V4(a),
                // Compatibility: AF_UNSPEC is AF_INET when the address is INADDR_ANY.
                Sa::Unspec { v4: Some(a) } if a.ip().is_unspecified() => SocketAddr::V4(a),
                _ => return Err(Errno::EAFNOSUPPORT),
            }
        } else {
            if b.len() < um_uapi::abi::inet::SIN6_LEN_RFC2133 {
                return Err(Errno::EINVAL);
            }
            match addr::decode(b)? {
                Sa::V6(a) => {
                    if unmap(a.ip()).is_some() && v6only {
                        // A v6-only socket cannot hold an IPv4 address.
                        return Err(Errno::EINVAL);
                    }
                    if a.ip().segments()[0] & 0xffc0 == 0xfe80 && a.scope_id() == 0 {
                        // Link-local needs an interface.
                        return Err(Errno::EINVAL);
                    }
                    canon6(&a)
                }
                _ => return Err(Errno::EAFNOSUPPORT),
            }
        };
        if !addr::bindable(a.ip()) && !freebind && !link::is_local(&self.net, a.ip()) {
            return Err(Errno::EADDRNOTAVAIL);
        }
        if a.port() != 0 && a.port() < addr::PROT_SOCK && !may_bind_low {
            return Err(Errno::EACCES);
        }
        {
            let mut i = lock(&self.inner);
            if i.state != State::Closed || i.local.is_some() {
                return Err(Errno::EINVAL);
            }
            if self.proto == Proto::Raw {
                // raw_bind: an address only; raw sockets have no ports.
                i.local = Some(SocketAddr::new(a.ip(), 0));
                i.user_addr = !a.ip().is_unspecified();
                return Ok(());
            }
        }
        self.take_port(a.ip(), a.port(), false)?;
        {
            let mut i = lock(&self.inner);
            i.user_addr = !a.ip().is_unspecified();
            i.user_port = a.port() != 0;
        }
        if self.proto == Proto::Udp {
            self.udp_attach();
        }
        Ok(())
    }

    /// `getsockname`: the bound address (the wildcard and port 0 before bind).
    pub fn local_addr(&self) -> SocketAddr {
        let i = lock(&self.inner);
        i.local
            .unwrap_or_else(|| SocketAddr::new(addr::any(i.family), 0))
    }

    /// `getpeername`: `ENOTCONN` without a peer.
    pub fn peer_addr(&self) -> SysResult<SocketAddr> {
        let i = lock(&self.inner);
        match (i.state, i.remote) {
            (State::Established, Some(r)) => Ok(r),
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// Encodes an address for this socket's family.
    pub fn encode(&self, a: &SocketAddr) -> Vec<u8> {
        addr::encode(self.family(), a)
    }

    /// `listen` (`inet_listen`): autobinds an unbound socket and checks the port again now
    /// that it listens.
    pub fn listen(&self, backlog: i32) -> SysResult<()> {
        if self.proto != Proto::Tcp {
            return Err(Errno::EOPNOTSUPP);
        }
        let backlog = (backlog as u32).min(crate::sysctl::somaxconn(&self.net)) as usize;
        let bound = {
            let mut i = lock(&self.inner);
            match i.state {
                State::Established => return Err(Errno::EINVAL),
                State::Listen => {
                    i.backlog = backlog;
                    return Ok(());
                }
                State::Closed => {}
            }
            i.local.is_some()
        };
        if bound {
            let t = lock(ports());
            if let Some((port, me)) = self.view() {
                for o in self.others_on(&t, port) {
                    if let Some((_, v)) = o.view()
                        && bind_conflict(self.proto, &me, &v)
                    {
                        return Err(Errno::EADDRINUSE);
                    }
                }
            }
            let mut i = lock(&self.inner);
            i.state = State::Listen;
            i.backlog = backlog;
        } else {
            let ip = addr::any(self.family());
            self.take_port(ip, 0, false)?;
            let mut i = lock(&self.inner);
            i.state = State::Listen;
            i.backlog = backlog;
        }
        self.listen_dev();
        self.wq.wake_all();
        Ok(())
    }

    /// Decodes a connect or sendto address by the family's rules (`tcp_v4_connect`,
    /// `tcp_v6_connect`, `__ip4_datagram_connect`, `__ip6_datagram_connect`, `udp_sendmsg`,
    /// `udpv6_sendmsg`).
    fn dest(&self, b: &[u8], sending: bool) -> SysResult<Dest> {
        let (family, v6only) = {
            let i = lock(&self.inner);
            (i.family, i.opts.v6only)
        };
        let sa = addr::decode(b)?;
        if family == AF_INET {
            if let Sa::Unspec { v4 } = sa {
                if !sending {
                    return Ok(Dest::Unspec);
                }
                // udp_sendmsg treats AF_UNSPEC as AF_INET.
                return match v4 {
                    Some(a) => Ok(Dest::Addr(SocketAddr::V4(a))),
                    None => Err(Errno::EINVAL),
                };
            }
            if b.len() < 16 {
                return Err(Errno::EINVAL);
            }
            return match sa {
                Sa::V4(a) => Ok(Dest::Addr(SocketAddr::V4(a))),
                _ => Err(Errno::EAFNOSUPPORT),
            };
        }
        match sa {
            Sa::Unspec { .. } => Ok(Dest::Unspec),
            // A UDP socket of AF_INET6 also takes IPv4 addresses.
            Sa::V4(a) if self.proto == Proto::Udp => {
                if v6only {
                    return Err(if sending {
                        Errno::ENETUNREACH
                    } else {
                        Errno::EAFNOSUPPORT
                    });
                }
                Ok(Dest::Addr(SocketAddr::V4(a)))
            }
            Sa::V6(a) => {
                if unmap(a.ip()).is_some() && v6only {
                    return Err(Errno::ENETUNREACH);
                }
                Ok(Dest::Addr(canon6(&a)))
            }
            _ if b.len() < um_uapi::abi::inet::SIN6_LEN_RFC2133 => Err(Errno::EINVAL),
            _ if sending => Err(Errno::EINVAL),
            _ => Err(Errno::EAFNOSUPPORT),
        }
    }

    /// Makes sure the socket has a port for talking to `src`'s network: an unbound socket
    /// gets an ephemeral port, a wildcard-bound one the route's source address.
    fn autobind_for(&self, src: IpAddr, for_connect: bool, set_addr: bool) -> SysResult<()> {
        let local = lock(&self.inner).local;
        match local {
            None => {
                let ip = if set_addr {
                    src
                } else {
                    addr::any(self.family())
                };
                self.take_port(ip, 0, for_connect)
                    .map_err(|e| if for_connect { Errno::EADDRNOTAVAIL } else { e })?;
            }
            Some(l) if set_addr && l.ip().is_unspecified() => {
                lock(&self.inner).local = Some(SocketAddr::new(src, l.port()));
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// `connect`. TCP: finds the listener and queues the server's end on it (blocking while
    /// its backlog is full); a non-blocking connect completes too but says `EINPROGRESS`, as
    /// Linux's does before the handshake. UDP: sets the default peer.
    pub fn connect(&self, io: &IoCtx<'_>, b: &[u8]) -> SysResult<()> {
        if b.len() < 2 {
            return Err(Errno::EINVAL);
        }
        if self.proto != Proto::Tcp {
            return self.connect_udp(b);
        }
        if let Some(r) = self.connect_again_dev() {
            return r;
        }
        {
            let mut i = lock(&self.inner);
            if i.connect_pending {
                // The second connect after EINPROGRESS reports the outcome.
                i.connect_pending = false;
                if i.state == State::Established {
                    return Ok(());
                }
                if let Some(e) = i.err.take() {
                    return Err(e);
                }
            }
        }
        let d = match self.dest(b, false)? {
            Dest::Unspec => {
                self.disconnect();
                return Ok(());
            }
            Dest::Addr(a) => a,
        };
        {
            let i = lock(&self.inner);
            if i.state != State::Closed {
                return Err(Errno::EISCONN);
            }
        }
        let (dst_ip, src_ip) = match link::path(&self.net, d.ip())? {
            Path::Local { dst, src } => (dst, src),
            Path::Dev { stack, dst, src } => {
                return self.connect_dev(io, stack, SocketAddr::new(dst, d.port()), src);
            }
        };
        self.autobind_for(src_ip, true, true)?;
        let dst = SocketAddr::new(dst_ip, d.port());
        let r = self.connect_tcp(io, dst);
        match r {
            Ok(()) if io.nonblock => {
                lock(&self.inner).connect_pending = true;
                Err(Errno::EINPROGRESS)
            }
            Ok(()) => Ok(()),
            Err(Errno::ECONNREFUSED) => {
                self.release_port_if_auto();
                if io.nonblock {
                    let mut i = lock(&self.inner);
                    i.err = Some(Errno::ECONNREFUSED);
                    i.connect_pending = true;
                    i.rcv_shutdown = true;
                    i.snd_shutdown = true;
                    drop(i);
                    self.wq.wake_all();
                    Err(Errno::EINPROGRESS)
                } else {
                    Err(Errno::ECONNREFUSED)
                }
            }
            Err(e) => Err(e),
        }
    }

    /// After a failed connect the ephemeral port goes back (`tcp_set_state(TCP_CLOSE)`).
    fn release_port_if_auto(&self) {
        let (auto, user_addr) = {
            let i = lock(&self.inner);
            (!i.user_port, i.user_addr)
        };
        if auto {
            self.unhash();
            lock(&self.inner).local = None;
        } else if !user_addr {
            let mut i = lock(&self.inner);
            if let Some(l) = i.local {
                i.local = Some(SocketAddr::new(addr::any(i.family), l.port()));
            }
        }
    }

    /// `connect(AF_UNSPEC)` (`tcp_disconnect`, `udp_disconnect`): drops the association (a TCP
    /// peer sees a reset, a listener's pending connections are reset), gives back what the
    /// user did not bind.
    pub fn disconnect(&self) {
        let (peer, embryos, link) = {
            let mut i = lock(&self.inner);
            let link = if self.proto == Proto::Tcp {
                std::mem::take(&mut i.link)
            } else {
                Link::None
            };
            let peer = if self.proto == Proto::Tcp && i.state == State::Established {
                i.peer.take()
            } else {
                None
            };
            let embryos = std::mem::take(&mut i.accept_q);
            i.state = State::Closed;
            i.remote = None;
            i.stream.clear();
            i.dgrams.clear();
            i.dgram_bytes = 0;
            i.rcv_shutdown = false;
            i.snd_shutdown = false;
            i.fin = false;
            i.connect_pending = false;
            (peer, embryos, link)
        };
        self.release_dev(link, true);
        if let Some(p) = peer {
            p.reset_by_peer();
        }
        for e in embryos {
            e.abort();
        }
        self.release_port_if_auto();
        if self.proto != Proto::Tcp && lock(&self.inner).local.is_none() {
            // The port went back: so do its sockets on the devices.
            let link = std::mem::take(&mut lock(&self.inner).link);
            self.release_dev(link, true);
        }
        self.wq.wake_all();
    }

    /// The peer sent a reset: `ECONNRESET`, both directions shut, the connection closed.
    fn reset_by_peer(&self) {
        let mut i = lock(&self.inner);
        if i.state == State::Established {
            i.err = Some(Errno::ECONNRESET);
            i.state = State::Closed;
        }
        i.rcv_shutdown = true;
        i.snd_shutdown = true;
        drop(i);
        self.wq.wake_all();
    }

    /// `shutdown` (`inet_shutdown`): an unconnected socket records the halves but says
    /// `ENOTCONN`; `SHUT_RD` on a listener stops it; `SHUT_WR` of a connection is the peer's
    /// EOF.
    pub fn shutdown(&self, how: u32) -> SysResult<()> {
        let (rd, wr) = match how {
            SHUT_RD => (true, false),
            SHUT_WR => (false, true),
            SHUT_RDWR => (true, true),
            _ => return Err(Errno::EINVAL),
        };
        let (state, peer) = {
            let i = lock(&self.inner);
            (i.state, i.peer.clone())
        };
        let r = match state {
            State::Listen => {
                if rd {
                    self.disconnect();
                }
                return Ok(());
            }
            State::Closed => Err(Errno::ENOTCONN),
            State::Established => Ok(()),
        };
        {
            let mut i = lock(&self.inner);
            i.rcv_shutdown |= rd;
            i.snd_shutdown |= wr;
        }
        self.wq.wake_all();
        if wr && state == State::Established {
            self.shutdown_dev();
        }
        if wr
            && state == State::Established
            && let Some(p) = peer
        {
            let mut pi = lock(&p.inner);
            pi.fin = true;
            pi.rcv_shutdown = true;
            drop(pi);
            p.wq.wake_all();
        }
        r
    }

    /// `inet_release`: the last file is gone. An unread receive queue or a zero linger time
    /// resets the peer; otherwise it sees EOF. Unaccepted connections are reset.
    pub fn release(&self) {
        self.unhash();
        let (peer, embryos, abort, link) = {
            let mut i = lock(&self.inner);
            i.dead = true;
            self.fill(&mut i);
            let abort = !i.stream.is_empty() || (i.opts.linger_on && i.opts.linger_secs == 0);
            let peer = if i.state == State::Established {
                i.peer.take()
            } else {
                i.peer.take();
                None
            };
            i.state = State::Closed;
            i.rcv_shutdown = true;
            i.snd_shutdown = true;
            i.stream.clear();
            i.dgrams.clear();
            i.dgram_bytes = 0;
            let link = std::mem::take(&mut i.link);
            (peer, std::mem::take(&mut i.accept_q), abort, link)
        };
        self.release_dev(link, abort);
        if let Some(p) = peer {
            if abort {
                p.reset_by_peer();
            } else {
                let mut pi = lock(&p.inner);
                pi.fin = true;
                pi.rcv_shutdown = true;
                drop(pi);
                p.wq.wake_all();
            }
        }
        self.wq.wake_all();
        for e in embryos {
            // Nobody will accept them: the client sees a reset.
            e.abort();
        }
    }

    /// Releases an unaccepted connection with a reset (`inet_child_forget`).
    fn abort(&self) {
        {
            let mut i = lock(&self.inner);
            i.opts.linger_on = true;
            i.opts.linger_secs = 0;
        }
        self.release();
    }

    /// Sends (`tcp_sendmsg`, `udp_sendmsg`, `udpv6_sendmsg`). `to` is the raw destination of
    /// sendto/sendmsg (TCP ignores it). `nosignal` suppresses SIGPIPE.
    pub fn send(
        &self,
        io: &IoCtx<'_>,
        data: &[u8],
        to: Option<&[u8]>,
        flags: u32,
        nosignal: bool,
    ) -> SysResult<usize> {
        match self.proto {
            Proto::Tcp => {
                let r = if self.on_device() {
                    self.send_dev(io, data)
                } else {
                    self.send_tcp(io, data)
                };
                if r == Err(Errno::EPIPE) && !nosignal {
                    send_sigpipe(io.task);
                }
                r
            }
            Proto::Udp => {
                if flags & MSG_OOB != 0 {
                    return Err(Errno::EOPNOTSUPP);
                }
                self.send_udp(io, data, to)
            }
            Proto::Ping | Proto::Raw => {
                if flags & MSG_OOB != 0 || self.raw_protocol() != 0 {
                    return Err(Errno::EOPNOTSUPP);
                }
                self.send_icmp(io, data, to)
            }
        }
    }

    /// Receives into `buf` (`tcp_recvmsg`, `udp_recvmsg`).
    pub fn recv(&self, io: &IoCtx<'_>, buf: &mut [u8], flags: u32) -> SysResult<Recv> {
        if flags & MSG_ERRQUEUE != 0 {
            return self.recv_errqueue(buf);
        }
        match self.proto {
            Proto::Tcp => self.recv_tcp(io, buf, flags),
            Proto::Udp | Proto::Ping | Proto::Raw => self.recv_udp(io, buf, flags),
        }
    }

    /// `recvmsg(MSG_ERRQUEUE)` (`ip_recv_error`, `ipv6_recv_error`): the oldest entry's
    /// quoted payload, its original destination as the name, the `sock_extended_err` control
    /// message; never waits. What stays behind sets `SO_ERROR` again
    /// (`sock_dequeue_err_skb`).
    fn recv_errqueue(&self, buf: &mut [u8]) -> SysResult<Recv> {
        let mut i = lock(&self.inner);
        self.fill(&mut i);
        let e = i.errq.pop_front().ok_or(Errno::EAGAIN)?;
        i.err = i.errq.front().map(|n| n.errno);
        let data = &e.err.payload;
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        let mut flags = MSG_ERRQUEUE;
        if n < data.len() {
            flags |= super::MSG_TRUNC;
        }
        Ok(Recv {
            n,
            full_len: data.len(),
            flags,
            from: Some(e.err.dst),
            control: vec![e.cmsg(i.family)],
        })
    }

    /// Readiness (`tcp_poll`, `udp_poll`).
    pub fn poll_mask(&self, pt: Option<&PollTable<'_>>) -> u16 {
        if let Some(pt) = pt {
            pt.wait_on(&self.wq);
        }
        let mut i = lock(&self.inner);
        self.fill(&mut i);
        let mut m = 0u16;
        if i.err.is_some() || !i.errq.is_empty() {
            m |= POLLERR;
        }
        if i.link.connecting() {
            // SYN sent: neither readable nor writable nor hung up yet (tcp_poll).
            return m;
        }
        if self.proto != Proto::Tcp {
            if i.rcv_shutdown {
                m |= POLLRDHUP | POLLIN | POLLRDNORM;
            }
            if i.rcv_shutdown && i.snd_shutdown {
                m |= POLLHUP;
            }
            if !i.dgrams.is_empty() {
                m |= POLLIN | POLLRDNORM;
            }
            return m | POLLOUT | POLLWRNORM | POLLWRBAND;
        }
        if i.state == State::Listen {
            if !i.accept_q.is_empty() {
                m |= POLLIN | POLLRDNORM;
            }
            return m;
        }
        if (i.rcv_shutdown && i.snd_shutdown) || i.state == State::Closed {
            m |= POLLHUP;
        }
        if i.rcv_shutdown || i.fin {
            m |= POLLIN | POLLRDNORM | POLLRDHUP;
        }
        if !i.stream.is_empty() {
            m |= POLLIN | POLLRDNORM;
        }
        let peer = i.peer.clone();
        let (snd_shut, sndbuf) = (i.snd_shutdown, i.opts.sndbuf.max(0) as usize);
        let dev_w = Self::dev_writable(&i);
        drop(i);
        let writable = snd_shut
            || match peer {
                None if dev_w.is_some() => dev_w == Some(true),
                None => true,
                Some(p) => {
                    if let Some(pt) = pt {
                        pt.wait_on(&p.wq);
                    }
                    let pi = lock(&p.inner);
                    pi.dead || pi.stream.len() < pi.opts.rcvbuf.max(0) as usize + sndbuf
                }
            };
        if writable {
            m |= POLLOUT | POLLWRNORM;
        }
        m
    }

    /// Bytes readable now (`SIOCINQ`): `EINVAL` on a listener; the next datagram's size.
    pub fn inq(&self) -> SysResult<usize> {
        let mut i = lock(&self.inner);
        self.fill(&mut i);
        match self.proto {
            Proto::Tcp if i.state == State::Listen => Err(Errno::EINVAL),
            Proto::Tcp => Ok(i.stream.len()),
            Proto::Udp | Proto::Ping | Proto::Raw => {
                Ok(i.dgrams.front().map_or(0, |d| d.data.len()))
            }
        }
    }

    fn opt_ctx(&self, i: &Inner, net_admin: bool) -> OptCtx {
        OptCtx {
            family: i.family,
            proto: self.proto,
            bound: i.local.is_some(),
            net_admin,
        }
    }

    /// `getsockopt`: the options that depend on the socket's state, then [`Opts::get`].
    /// Returns the bytes to copy out (their length is the new `*optlen`).
    pub fn getsockopt(&self, level: i32, name: i32, len: i32) -> SysResult<Vec<u8>> {
        use super::so::*;
        let int = |v: i32| -> Vec<u8> {
            let n = (len.max(0) as usize).min(4);
            v.to_le_bytes()[..n].to_vec()
        };
        let mut i = lock(&self.inner);
        if level == super::SOL_SOCKET {
            if len < 0 {
                return Err(Errno::EINVAL);
            }
            match name {
                SO_TYPE => return Ok(int(self.sock_type() as i32)),
                SO_ERROR => {
                    // An ICMP error waiting in the device stack counts (sock_error).
                    self.fill(&mut i);
                    return Ok(int(i.err.take().map_or(0, |e| e.get())));
                }
                SO_ACCEPTCONN => return Ok(int((i.state == State::Listen) as i32)),
                opt::SO_PEERNAME => {
                    let r = match (i.state, i.remote) {
                        (State::Established, Some(r)) => r,
                        _ => return Err(Errno::ENOTCONN),
                    };
                    let b = addr::encode(i.family, &r);
                    if b.len() < len as usize {
                        return Err(Errno::EINVAL);
                    }
                    return Ok(b[..len as usize].to_vec());
                }
                opt::SO_COOKIE => {
                    let n = (len.max(0) as usize).min(8);
                    return Ok(self.ino.to_le_bytes()[..n].to_vec());
                }
                _ => {}
            }
        }
        if level == IPPROTO_TCP && self.proto == Proto::Tcp && name == tcp::TCP_MAXSEG {
            // The MSS of the path: lo's, or the device's MTU less the IP and TCP headers.
            let path_mss = Self::dev_mtu(&i).map_or(LOOPBACK_MSS, |m| {
                let ip = if i.remote.is_some_and(|r| r.is_ipv6()) {
                    40
                } else {
                    20
                };
                m as i32 - ip - 20
            });
            let v = if i.state == State::Established {
                if i.opts.maxseg != 0 {
                    i.opts.maxseg.min(path_mss)
                } else {
                    path_mss
                }
            } else if i.opts.maxseg != 0 {
                i.opts.maxseg
            } else {
                opt::TCP_MSS_DEFAULT
            };
            let n = (len as u32).min(4) as usize;
            return Ok(v.to_le_bytes()[..n].to_vec());
        }
        if level == IPPROTO_TCP && self.proto == Proto::Tcp && name == tcp::TCP_INFO {
            return Ok(Self::tcp_info(&i, len));
        }
        let mtu_opt = (level == IPPROTO_IP && name == ip::IP_MTU)
            || (level == IPPROTO_IPV6 && i.family == AF_INET6 && name == ipv6::IPV6_MTU);
        if mtu_opt {
            if len < 0 && level == IPPROTO_IP {
                return Err(Errno::EINVAL);
            }
            if i.state != State::Established {
                return Err(Errno::ENOTCONN);
            }
            let n = (len as u32).min(4) as usize;
            let mtu = Self::dev_mtu(&i).map_or(LOOPBACK_MTU, |m| m as i32);
            return Ok(mtu.to_le_bytes()[..n].to_vec());
        }
        let k = self.opt_ctx(&i, false);
        i.opts.get(level, name, len, &k)
    }

    /// `getsockopt(TCP_INFO)` (Linux `tcp_get_info`, net/ipv4/tcp.c): the state, the path's
    /// MSS and MTU, and the initial congestion numbers Linux reports for a fresh connection
    /// (`TCP_INIT_CWND`, `TCP_INFINITE_SSTHRESH`, `TCP_RTO_MIN` / `TCP_TIMEOUT_INIT`,
    /// `TCP_ATO_MIN`, `sysctl_tcp_reordering`). The host's TCP (or smoltcp's) does the
    /// retransmitting, so the counters it alone knows (retransmits, RTT, bytes, segments) are
    /// zero, never garbage. Like `do_tcp_getsockopt`, `len` is clamped to
    /// `0..=sizeof(struct tcp_info)` (as unsigned) and that many bytes are returned.
    fn tcp_info(i: &Inner, len: i32) -> Vec<u8> {
        use um_uapi::abi::inet::TcpInfo;
        use um_uapi::abi::netlink::tcp_state;
        use um_uapi::abi::pod::Pod;
        let v6 = i.remote.is_some_and(|r| r.is_ipv6());
        let mtu = Self::dev_mtu(i).map_or(LOOPBACK_MTU, |m| m as i32);
        let mss = mtu - if v6 { 40 } else { 20 } - 20;
        let est = i.state == State::Established;
        let info = TcpInfo {
            tcpi_state: match i.state {
                State::Established => tcp_state::TCP_ESTABLISHED,
                State::Listen => tcp_state::TCP_LISTEN,
                State::Closed => tcp_state::TCP_CLOSE,
            },
            // TCP_RTO_MIN once connected (200 ms), TCP_TIMEOUT_INIT (1 s) before; in µs.
            tcpi_rto: if est { 200_000 } else { 1_000_000 },
            // TCP_ATO_MIN (HZ / 25), in µs.
            tcpi_ato: if est { 40_000 } else { 0 },
            tcpi_snd_mss: if est {
                mss as u32
            } else {
                opt::TCP_MSS_DEFAULT as u32
            },
            tcpi_rcv_mss: if est {
                mss as u32
            } else {
                opt::TCP_MSS_DEFAULT as u32
            },
            tcpi_pmtu: mtu as u32,
            tcpi_snd_ssthresh: 0x7fff_ffff,
            tcpi_snd_cwnd: 10,
            tcpi_advmss: mss as u32,
            tcpi_reordering: 3,
            // No RTT sample: `tcp_min_rtt` of an empty minmax is ~0U.
            tcpi_min_rtt: u32::MAX,
            ..TcpInfo::default()
        };
        let mut v = info.as_bytes();
        v.truncate((len as u32 as usize).min(v.len()));
        v
    }

    /// `setsockopt`: `IPV6_ADDRFORM` here, the rest through [`Opts::set`]. `val` holds the
    /// first [`opt::set_len`] bytes of the option, `optlen` the caller's length.
    pub fn setsockopt(
        &self,
        level: i32,
        name: i32,
        val: &[u8],
        optlen: usize,
        net_admin: bool,
    ) -> SysResult<()> {
        let mut i = lock(&self.inner);
        if level == IPPROTO_IPV6 && i.family == AF_INET6 && name == ipv6::IPV6_ADDRFORM {
            if optlen < 4 {
                return Err(Errno::EINVAL);
            }
            if i32::from_le_bytes([val[0], val[1], val[2], val[3]]) != AF_INET as i32 {
                return Err(Errno::EINVAL);
            }
            if i.state != State::Established {
                return Err(Errno::ENOTCONN);
            }
            let v4 = i.remote.is_some_and(|r| r.is_ipv4()) && i.local.is_none_or(|l| l.is_ipv4());
            if i.opts.v6only || !v4 {
                return Err(Errno::EADDRNOTAVAIL);
            }
            // The socket becomes an AF_INET socket for good (its addresses already are IPv4).
            i.family = AF_INET;
            return Ok(());
        }
        if level == IPPROTO_IP && name == ip::IP_HDRINCL {
            return Err(Errno::ENOPROTOOPT);
        }
        if level == SOL_RAW && self.proto == Proto::Raw {
            // ICMP_FILTER and friends: only echo replies are ever received here.
            return Ok(());
        }
        if level == um_uapi::abi::inet::IPPROTO_ICMPV6
            && self.proto == Proto::Raw
            && i.family == AF_INET6
        {
            // `rawv6_seticmpfilter` (net/ipv6/raw.c): `ping -6` blocks all but echo replies,
            // which are all a raw ICMPv6 socket receives here anyway.
            return if name == um_uapi::abi::inet::ICMPV6_FILTER {
                Ok(())
            } else {
                Err(Errno::ENOPROTOOPT)
            };
        }
        let k = self.opt_ctx(&i, net_admin);
        let r = i.opts.set(level, name, val, optlen, &k);
        if r.is_ok() {
            // TCP_NODELAY, SO_KEEPALIVE and friends reach a device connection at once.
            Self::dev_opts(&i);
        }
        drop(i);
        if r.is_ok() && level == super::SOL_SOCKET {
            // Buffer sizes and timeouts change what waiters wait for.
            self.wq.wake_all();
        }
        r
    }
}

/// The open file of an internet socket; dropping it releases the socket.
pub struct InetFile {
    pub sock: Arc<InetSocket>,
}

impl Drop for InetFile {
    fn drop(&mut self) {
        self.sock.release();
    }
}

impl FileOps for InetFile {
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        Ok(self.sock.recv(io, buf, 0)?.n)
    }

    fn write(&self, io: &IoCtx<'_>, data: &[u8], _off: u64) -> SysResult<usize> {
        self.sock.send(io, data, None, 0, false)
    }

    fn is_stream(&self) -> bool {
        true
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(super::sock_kstat(self.sock.ino, self.sock.owner))
    }

    fn size(&self) -> SysResult<u64> {
        Ok(0)
    }

    fn ioctl(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        let v: i32 = match cmd {
            FIONREAD => self.sock.inq()? as i32,
            SIOCOUTQ | SIOCATMARK => 0,
            // Interface ioctls (inet_ioctl: the IPv4 address and route ones too).
            _ => {
                let v4 = self.sock.family() == super::AF_INET;
                return crate::devioctl::dev_ioctl(io, cmd, arg, mem, v4);
            }
        };
        mem.write(arg, &v.to_le_bytes())?;
        Ok(0)
    }

    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        self.sock.poll_mask(pt) & (events | POLLERR | POLLHUP)
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

#[cfg(test)]
mod devtests;

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn view(ip: IpAddr, reuse: bool, reuseport: bool, listening: bool, uid: u32) -> BindView {
        BindView {
            ip,
            v6only: false,
            reuse,
            reuseport,
            listening,
            uid,
        }
    }

    #[test]
    fn bind_conflicts_follow_linux() {
        let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let lo2 = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        let any6 = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
        let t = Proto::Tcp;
        // No reuse: overlapping addresses conflict, distinct ones do not.
        assert!(bind_conflict(
            t,
            &view(lo, false, false, false, 0),
            &view(any, false, false, false, 0)
        ));
        assert!(!bind_conflict(
            t,
            &view(lo, false, false, false, 0),
            &view(lo2, false, false, false, 0)
        ));
        assert!(bind_conflict(
            t,
            &view(any6, false, false, false, 0),
            &view(lo, false, false, false, 0)
        ));
        // SO_REUSEADDR on both: fine unless the other listens (TCP); UDP does not care.
        assert!(!bind_conflict(
            t,
            &view(any, true, false, false, 0),
            &view(any, true, false, false, 0)
        ));
        assert!(bind_conflict(
            t,
            &view(any, true, false, false, 0),
            &view(any, true, false, true, 0)
        ));
        assert!(!bind_conflict(
            Proto::Udp,
            &view(any, true, false, false, 0),
            &view(any, true, false, true, 0)
        ));
        assert!(bind_conflict(
            t,
            &view(any, true, false, false, 0),
            &view(any, false, false, false, 0)
        ));
        // SO_REUSEPORT on both, same user: fine even while listening; another user: conflict.
        assert!(!bind_conflict(
            t,
            &view(any, false, true, false, 5),
            &view(any, false, true, true, 5)
        ));
        assert!(bind_conflict(
            t,
            &view(any, false, true, false, 5),
            &view(any, false, true, true, 6)
        ));
    }

    #[test]
    fn tcp_loopback_round_trip_without_a_task() {
        // Bind, listen, and look the listener up as connect would.
        let l = InetSocket::new(Proto::Tcp, AF_INET, (0, 0));
        let sa = addr::encode(
            AF_INET,
            &SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
        );
        l.bind(&sa, false).unwrap();
        let port = l.local_addr().port();
        assert!((32768..=60999).contains(&port));
        assert_eq!(l.bind(&sa, false), Err(Errno::EINVAL));
        l.listen(5).unwrap();
        let c = InetSocket::new(Proto::Tcp, AF_INET6, (0, 0));
        let dst = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
        assert!(c.find_listener(dst).is_some_and(|f| Arc::ptr_eq(&f, &l)));
        // Another socket may not take the listener's port.
        let o = InetSocket::new(Proto::Tcp, AF_INET, (0, 0));
        let same = addr::encode(
            AF_INET,
            &SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port),
        );
        assert_eq!(o.bind(&same, false), Err(Errno::EADDRINUSE));
        // Non-local addresses and privileged ports.
        let far = addr::encode(AF_INET, &"10.255.254.253:0".parse().unwrap());
        assert_eq!(o.bind(&far, false), Err(Errno::EADDRNOTAVAIL));
        let low = addr::encode(AF_INET, &"0.0.0.0:463".parse().unwrap());
        assert_eq!(o.bind(&low, false), Err(Errno::EACCES));
        assert_eq!(o.bind(&far[..15], false), Err(Errno::EINVAL));
        let mut un = far.clone();
        un[0] = 1;
        assert_eq!(o.bind(&un, false), Err(Errno::EAFNOSUPPORT));
        // Another network namespace has its own ports: the same port binds there, and the
        // listener of the initial namespace is not reachable from it.
        let net = crate::dev::test_ns();
        let n = InetSocket::with_opts(Proto::Tcp, AF_INET, (0, 0), Opts::new(Proto::Tcp), net);
        assert!(n.find_listener(dst).is_none());
        n.bind(&same, false).unwrap();
        n.listen(5).unwrap();
        assert!(c.find_listener(dst).is_some_and(|f| Arc::ptr_eq(&f, &l)));
        n.release();
        l.release();
        assert!(c.find_listener(dst).is_none());
        o.bind(&same, false).unwrap();
        o.release();
    }

    #[test]
    fn addrform_and_v6only_binding() {
        let s = InetSocket::new(Proto::Udp, AF_INET6, (0, 0));
        s.setsockopt(
            IPPROTO_IPV6,
            ipv6::IPV6_V6ONLY,
            &1i32.to_le_bytes(),
            4,
            false,
        )
        .unwrap();
        let mapped = addr::encode(AF_INET6, &"127.0.0.1:0".parse().unwrap());
        assert_eq!(s.bind(&mapped, false), Err(Errno::EINVAL));
        assert_eq!(
            s.setsockopt(
                IPPROTO_IPV6,
                ipv6::IPV6_ADDRFORM,
                &2i32.to_le_bytes(),
                4,
                false
            ),
            Err(Errno::ENOTCONN)
        );
        let lo6 = addr::encode(AF_INET6, &"[::1]:0".parse().unwrap());
        s.bind(&lo6, false).unwrap();
        assert_eq!(s.encode(&s.local_addr()).len(), 28);
        s.release();
    }
}
