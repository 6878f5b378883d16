//! The IP stack of the guest's traffic over real devices (Linux `net/ipv4/ip_output.c`,
//! `ip_input.c`, `arp.c`, `net/ipv6/ndisc.c` and the TCP/UDP engines behind them), built on the
//! `smoltcp` crate: one [`DevStack`] per non-loopback device of [`crate::dev`] (`eth0`).
//!
//! Loopback traffic never comes here: `crate::inet` keeps finding its peers directly. When
//! [`crate::dev::NetDevices::lookup`] routes a destination out of a device, the internet socket
//! gets smoltcp sockets on that device's stack ([`crate::inet`]'s device links) and the bytes
//! become IP packets in Ethernet frames. A full TCP (retransmission, congestion and receive
//! windows, window scaling, timestamps, keep-alive) is smoltcp's; so are ARP and NDP.
//!
//! Each [`DevStack`] holds a smoltcp `Interface` (Ethernet, the device's MAC, its addresses and
//! gateway routes mirrored from `crate::dev` by a notifier) and its `SocketSet`. Frames arrive
//! through a `crate::dev` rx handler into a bounded queue ([`RXQ_MAX`]); one kernel thread,
//! `netstack`, polls every stack when frames arrive and when smoltcp's `poll_delay` says a timer
//! is due, and socket calls poll their stack inline after they change it ([`DevStack::service`]).
//! A poll produces frames into a list that is sent with `dev_queue_xmit` after the stack's lock
//! is dropped (under a transmit lock that only keeps frames in order), so no lock of this
//! module is held across a call into a driver, and a driver that delivers a frame back at once
//! (`netif_rx` inside `xmit`) only queues it.
//!
//! Wakeups: every smoltcp socket has an owner (a weak internet socket) and a signature of what
//! readiness depends on (state, queued bytes); a poll that changes it wakes the owner's wait
//! queue. The owner then pulls data and state into itself under its own lock (`inet/link.rs`),
//! so the lock order is: the bind table, a socket, a stack's `core`, its rx queue or transmit
//! lock; nothing here takes a socket's lock. A released TCP socket's smoltcp socket stays as an
//! orphan until it has closed (FIN exchanged), then is removed.
//!
//! Fragments (smoltcp 0.14 does neither for IPv6, and IPv4 only with fixed-size buffers): the
//! rx handler reassembles IPv4 and IPv6 fragments (`um_usernet::frag`, one table per device)
//! before smoltcp sees the packet; smoltcp is told the link takes [`PHY_MTU`]-byte packets, so
//! it hands over whole datagrams, and a poll's packets larger than the device's MTU are
//! fragmented on the way out. As smoltcp then believes in a 64 KiB MTU, the MSS option of
//! every TCP SYN is clamped to the device's MTU both ways (`frag::clamp_mss`), which keeps its
//! segments within the real MTU.
//!
//! Bounds: [`RXQ_MAX`] frames queued per device, [`MAX_SOCKETS`] smoltcp sockets per device,
//! each with buffers its socket's `SO_RCVBUF`/`SO_SNDBUF` size ([`tcp_buffers`]). smoltcp parses
//! every frame defensively; a panic inside it (a bug) is caught, logged and the frame dropped.

use crate::dev::{self, Event, NetDevice};
use crate::icmperr::{self, IcmpErr};
use crate::inet::InetSocket;
use crate::neigh::{self, NeighWatch};
use smoltcp::iface::{Config, Interface, Route as SRoute, SocketHandle, SocketSet};
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::socket::{icmp, tcp, udp};
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr};
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;
use um_kernel::netns::NetNs;
use um_kernel::task::lock;
use um_uapi::abi::netdevice::{ARPHRD_ETHER, RT_TABLE_MAIN};
use um_usernet::frag;

/// Frames a device may queue for its stack; more are dropped (`netdev_max_backlog`, 1000 on
/// Linux, is per CPU).
pub const RXQ_MAX: usize = 4096;
/// Frames one poll may produce before smoltcp is told the device is busy.
pub const TXQ_MAX: usize = 4096;
/// smoltcp sockets per device (listening, connected, orphaned, UDP): a connect or bind beyond
/// it is `ENOBUFS`.
pub const MAX_SOCKETS: usize = 4096;
/// The Ethernet header smoltcp's MTU includes.
const ETH_HLEN: usize = 14;
/// The IP MTU smoltcp is told: the largest IPv6 packet (payload length 65535), so it never
/// drops or fragments a datagram itself.
pub const PHY_MTU: usize = 65_535 + 40;
/// `IFACE_MAX_ADDR_COUNT` of the smoltcp build (feature `iface-max-addr-count-8`).
const MAX_ADDRS: usize = 8;
/// Largest socket buffer (`net.core.rmem_max`-like bound on what one socket may pin).
pub const MAX_BUF: usize = 4 << 20;
/// A TCP buffer when the user did not size it: Linux autotunes `tcp_rmem`/`tcp_wmem` up to
/// megabytes; a fixed 256 KiB keeps a virtual link busy without autotuning.
pub const DEFAULT_TCP_BUF: usize = 256 << 10;
/// Datagrams a UDP or ICMP socket's smoltcp buffers hold.
const DGRAM_SLOTS: usize = 64;

/// What a smoltcp socket is for, and who is woken when it changes.
struct Owner {
    /// None: an orphan (its socket was released; it finishes closing on its own).
    sock: Option<Weak<InetSocket>>,
    /// What readiness depends on, as of the last poll.
    sig: (u8, usize, usize),
    /// ICMP errors about what this socket sent, for the owner to take ([`Core::take_errs`]).
    errs: Vec<IcmpErr>,
}

/// The locked part of a stack.
pub struct Core {
    iface: Interface,
    /// The smoltcp sockets (reachable from `crate::inet` through [`Core::tcp`] and friends).
    sockets: SocketSet<'static>,
    owners: HashMap<SocketHandle, Owner>,
    /// Frames a poll produced, sent once the lock is dropped.
    tx: Vec<Vec<u8>>,
    /// The IP MTU.
    mtu: usize,
    /// ARP requests not answered yet (`crate::neigh`).
    neigh: NeighWatch,
    /// The gateway routes last mirrored from `crate::dev` (destination, router), for the next
    /// hop of a failed neighbour.
    gateways: Vec<(IpCidr, IpAddress)>,
}

impl Core {
    /// The TCP socket `h`.
    pub fn tcp(&mut self, h: SocketHandle) -> &mut tcp::Socket<'static> {
        self.sockets.get_mut::<tcp::Socket<'static>>(h)
    }

    /// The UDP socket `h`.
    pub fn udp(&mut self, h: SocketHandle) -> &mut udp::Socket<'static> {
        self.sockets.get_mut::<udp::Socket<'static>>(h)
    }

    /// The ICMP socket `h`.
    pub fn icmp(&mut self, h: SocketHandle) -> &mut icmp::Socket<'static> {
        self.sockets.get_mut::<icmp::Socket<'static>>(h)
    }

    /// Starts a connect of TCP socket `h` (smoltcp needs the interface context for it).
    pub fn tcp_connect(
        &mut self,
        h: SocketHandle,
        remote: smoltcp::wire::IpEndpoint,
        local: smoltcp::wire::IpListenEndpoint,
    ) -> Result<(), tcp::ConnectError> {
        let Core { iface, sockets, .. } = self;
        sockets
            .get_mut::<tcp::Socket<'static>>(h)
            .connect(iface.context(), remote, local)
    }

    /// The device's IP MTU.
    pub fn mtu(&self) -> usize {
        self.mtu
    }

    fn add<T: smoltcp::socket::AnySocket<'static>>(
        &mut self,
        s: T,
        owner: Weak<InetSocket>,
    ) -> Option<SocketHandle> {
        if self.owners.len() >= MAX_SOCKETS {
            return None;
        }
        let h = self.sockets.add(s);
        self.owners.insert(
            h,
            Owner {
                sock: Some(owner),
                sig: (0, 0, 0),
                errs: Vec::new(),
            },
        );
        Some(h)
    }

    /// Adds a TCP socket with these buffer sizes for `owner`; None past [`MAX_SOCKETS`].
    pub fn add_tcp(
        &mut self,
        rx: usize,
        tx: usize,
        owner: Weak<InetSocket>,
    ) -> Option<SocketHandle> {
        if self.owners.len() >= MAX_SOCKETS {
            return None;
        }
        let mut s = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0u8; rx]),
            tcp::SocketBuffer::new(vec![0u8; tx]),
        );
        s.set_tsval_generator(Some(tsval));
        self.add(s, owner)
    }

    /// Adds a UDP socket with `rx`/`tx` payload bytes for `owner`.
    pub fn add_udp(
        &mut self,
        rx: usize,
        tx: usize,
        owner: Weak<InetSocket>,
    ) -> Option<SocketHandle> {
        if self.owners.len() >= MAX_SOCKETS {
            return None;
        }
        let s = udp::Socket::new(
            udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; DGRAM_SLOTS], vec![0u8; rx]),
            udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; DGRAM_SLOTS], vec![0u8; tx]),
        );
        self.add(s, owner)
    }

    /// Adds an ICMP socket for `owner`.
    pub fn add_icmp(
        &mut self,
        rx: usize,
        tx: usize,
        owner: Weak<InetSocket>,
    ) -> Option<SocketHandle> {
        if self.owners.len() >= MAX_SOCKETS {
            return None;
        }
        let s = icmp::Socket::new(
            icmp::PacketBuffer::new(
                vec![icmp::PacketMetadata::EMPTY; DGRAM_SLOTS],
                vec![0u8; rx],
            ),
            icmp::PacketBuffer::new(
                vec![icmp::PacketMetadata::EMPTY; DGRAM_SLOTS],
                vec![0u8; tx],
            ),
        );
        self.add(s, owner)
    }

    /// Hands `h` to another owner (an accepted connection leaves its listener).
    pub fn set_owner(&mut self, h: SocketHandle, owner: Weak<InetSocket>) {
        if let Some(o) = self.owners.get_mut(&h) {
            o.sock = Some(owner);
        }
    }

    /// Makes `h` an orphan: it is removed once closed (TCP) or at once (anything else).
    pub fn orphan(&mut self, h: SocketHandle) {
        let tcp = matches!(
            self.sockets.iter().find(|(x, _)| *x == h).map(|(_, s)| s),
            Some(smoltcp::socket::Socket::Tcp(_))
        );
        if tcp {
            if let Some(o) = self.owners.get_mut(&h) {
                o.sock = None;
            }
        } else {
            self.remove(h);
        }
    }

    /// The ICMP errors that arrived for `h` since the last call (`crate::icmperr`).
    pub fn take_errs(&mut self, h: SocketHandle) -> Vec<IcmpErr> {
        self.owners
            .get_mut(&h)
            .map(|o| std::mem::take(&mut o.errs))
            .unwrap_or_default()
    }

    /// Hands ICMP error `e` to the socket that sent the packet it quotes (`icmp_unreach` ->
    /// `__udp4_lib_lookup` / `inet_lookup_established`): a TCP socket by both endpoints, a
    /// UDP one by its port and address (connected or not). Returns the owner to wake.
    fn deliver_err(&mut self, e: IcmpErr) -> Option<Arc<InetSocket>> {
        let src = IpAddress::from(e.src.ip());
        let dst = IpAddress::from(e.dst.ip());
        let h = self.sockets.iter().find_map(|(h, s)| match s {
            smoltcp::socket::Socket::Tcp(t) if e.proto == icmperr::PROTO_TCP => {
                let l = t.local_endpoint()?;
                let r = t.remote_endpoint()?;
                (l.addr == src && l.port == e.src.port() && r.addr == dst && r.port == e.dst.port())
                    .then_some(h)
            }
            smoltcp::socket::Socket::Udp(u) if e.proto == icmperr::PROTO_UDP => {
                let l = u.endpoint();
                (l.port == e.src.port() && l.addr.is_none_or(|a| a == src)).then_some(h)
            }
            _ => None,
        })?;
        let o = self.owners.get_mut(&h)?;
        if o.errs.len() < icmperr::ERRQ_MAX {
            o.errs.push(e);
        }
        o.sock.as_ref()?.upgrade()
    }

    /// The ICMP host unreachable errors Linux makes for the packets queued on neighbour
    /// `ip` when its resolution fails (`arp_error_report` -> `ipv4_link_failure` ->
    /// `icmp_send(ICMP_DEST_UNREACH, ICMP_HOST_UNREACH)`; IPv6 `ndisc_error_report` ->
    /// `ip6_link_failure` -> `ICMPV6_DEST_UNREACH`/`ICMPV6_ADDR_UNREACH`; sent by this host to
    /// itself): one for each TCP socket still in SYN-SENT whose next hop is `ip`, so its
    /// connect fails with `EHOSTUNREACH` (`tcp_v4_err`, `tcp_v6_err`). Established
    /// connections keep retrying, as there (a host unreachable is a soft error for them).
    fn unreachable_via(&self, ip: IpAddr) -> Vec<IcmpErr> {
        let v6 = ip.is_ipv6();
        let me = if v6 {
            self.iface.ipv6_addr().map(IpAddr::V6)
        } else {
            self.iface.ipv4_addr().map(IpAddr::V4)
        };
        let Some(me) = me else {
            return Vec::new();
        };
        let hop = IpAddress::from(ip);
        self.sockets
            .iter()
            .filter_map(|(_, s)| match s {
                smoltcp::socket::Socket::Tcp(t) if t.state() == tcp::State::SynSent => {
                    let (l, r) = (t.local_endpoint()?, t.remote_endpoint()?);
                    (self.next_hop(r.addr) == Some(hop)).then(|| IcmpErr {
                        v6,
                        ty: if v6 { 1 } else { 3 },
                        code: if v6 { 3 } else { 1 },
                        offender: me,
                        proto: icmperr::PROTO_TCP,
                        src: std::net::SocketAddr::new(IpAddr::from(l.addr), l.port),
                        dst: std::net::SocketAddr::new(IpAddr::from(r.addr), r.port),
                        payload: Vec::new(),
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// Where a packet to `dst` goes first: `dst` itself when it is on a subnet of the device,
    /// else the router of the longest matching gateway route.
    fn next_hop(&self, dst: IpAddress) -> Option<IpAddress> {
        if self.iface.ip_addrs().iter().any(|c| c.contains_addr(&dst)) {
            return Some(dst);
        }
        self.gateways
            .iter()
            .filter(|(c, _)| c.contains_addr(&dst))
            .max_by_key(|(c, _)| c.prefix_len())
            .map(|&(_, via)| via)
    }

    /// Removes `h` now.
    pub fn remove(&mut self, h: SocketHandle) {
        if self.owners.remove(&h).is_some() {
            self.sockets.remove(h);
        }
    }

    /// The device's first IPv4 address.
    pub fn first_addr(&self) -> Option<IpAddr> {
        self.iface.ipv4_addr().map(IpAddr::V4)
    }

    /// Whether the device has address `a`.
    pub fn has_addr(&self, a: IpAddr) -> bool {
        self.iface.has_ip_addr(IpAddress::from(a))
    }
}

/// The TCP timestamp clock (RFC 7323 `TSval`): milliseconds, any origin.
fn tsval() -> u32 {
    epoch().elapsed().as_millis() as u32
}

fn epoch() -> std::time::Instant {
    static E: OnceLock<std::time::Instant> = OnceLock::new();
    *E.get_or_init(std::time::Instant::now)
}

/// smoltcp's clock.
fn now() -> smoltcp::time::Instant {
    smoltcp::time::Instant::from_micros(epoch().elapsed().as_micros() as i64)
}

/// The stack of one device.
pub struct DevStack {
    /// The device.
    pub dev: Arc<NetDevice>,
    /// Frames received and not yet processed.
    rxq: Mutex<VecDeque<Vec<u8>>>,
    core: Mutex<Core>,
    /// Held while a poll's frames go out, so they leave in the order they were made.
    txlock: Mutex<()>,
    /// A poll's frames are going out (set and cleared under `txlock`): a driver may hand a
    /// frame straight back on this thread, and the rx handler then only queues it.
    busy: std::sync::atomic::AtomicBool,
    /// Received fragments being reassembled.
    reasm: Mutex<frag::Reassembly>,
    /// The identification of the next datagram this device fragments.
    frag_id: std::sync::atomic::AtomicU32,
}

/// The smoltcp device: frames from the rx queue, frames into the poll's list.
struct Phy<'a> {
    rx: &'a mut VecDeque<Vec<u8>>,
    tx: &'a mut Vec<Vec<u8>>,
    mtu: usize,
}

struct Rx(Vec<u8>);
struct Tx<'a>(&'a mut Vec<Vec<u8>>);

impl RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut v = vec![0u8; len];
        let r = f(&mut v);
        self.0.push(v);
        r
    }
}

impl Device for Phy<'_> {
    type RxToken<'a>
        = Rx
    where
        Self: 'a;
    type TxToken<'a>
        = Tx<'a>
    where
        Self: 'a;

    fn receive(&mut self, _: smoltcp::time::Instant) -> Option<(Rx, Tx<'_>)> {
        let f = self.rx.pop_front()?;
        Some((Rx(f), Tx(self.tx)))
    }

    fn transmit(&mut self, _: smoltcp::time::Instant) -> Option<Tx<'_>> {
        (self.tx.len() < TXQ_MAX).then_some(Tx(self.tx))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ethernet;
        c.max_transmission_unit = self.mtu + ETH_HLEN;
        c.max_burst_size = None;
        c
    }
}

impl DevStack {
    fn new(dev: Arc<NetDevice>) -> Option<Arc<DevStack>> {
        let mac = EthernetAddress(dev.mac);
        if !mac.is_unicast() {
            log::warn!("netstack: {} has no unicast MAC; no IP on it", dev.name());
            return None;
        }
        let mut seed = [0u8; 8];
        let _ = um_os_linux::host::getrandom(&mut seed);
        let mut cfg = Config::new(HardwareAddress::Ethernet(mac));
        cfg.random_seed = u64::from_le_bytes(seed);
        let mtu = dev.mtu() as usize;
        let (mut rx, mut tx) = (VecDeque::new(), Vec::new());
        let iface = Interface::new(
            cfg,
            &mut Phy {
                rx: &mut rx,
                tx: &mut tx,
                mtu: PHY_MTU,
            },
            now(),
        );
        Some(Arc::new(DevStack {
            dev,
            rxq: Mutex::new(VecDeque::new()),
            core: Mutex::new(Core {
                iface,
                sockets: SocketSet::new(Vec::new()),
                owners: HashMap::new(),
                tx: Vec::new(),
                mtu,
                neigh: NeighWatch::default(),
                gateways: Vec::new(),
            }),
            txlock: Mutex::new(()),
            busy: std::sync::atomic::AtomicBool::new(false),
            reasm: Mutex::new(frag::Reassembly::default()),
            frag_id: std::sync::atomic::AtomicU32::new(u32::from_le_bytes([
                seed[0], seed[1], seed[2], seed[3],
            ])),
        }))
    }

    /// The locked state (never held across a call into `crate::dev` or a socket's lock).
    pub fn core(&self) -> MutexGuard<'_, Core> {
        lock(&self.core)
    }

    /// Copies the device's addresses, gateway routes and MTU from `crate::dev`.
    fn sync(&self) {
        let Some(ns) = self.dev.netns() else { return };
        let d = dev::devices(&ns);
        let ifindex = self.dev.ifindex;
        let addrs: Vec<IpCidr> = d
            .addrs()
            .into_iter()
            .filter(|a| a.ifindex == ifindex)
            .map(|a| IpCidr::new(IpAddress::from(a.addr), a.prefix_len))
            .take(MAX_ADDRS)
            .collect();
        let routes: Vec<SRoute> = d
            .routes()
            .into_iter()
            .filter(|r| r.oif == ifindex && r.table == RT_TABLE_MAIN)
            .filter_map(|r| {
                let gw = r.gateway?;
                (gw.is_ipv4() == r.dst.is_ipv4()).then(|| SRoute {
                    cidr: IpCidr::new(IpAddress::from(r.dst), r.dst_len),
                    via_router: IpAddress::from(gw),
                    preferred_until: None,
                    expires_at: None,
                })
            })
            .collect();
        let mut c = self.core();
        c.gateways = routes.iter().map(|r| (r.cidr, r.via_router)).collect();
        c.iface.update_ip_addrs(|v| {
            v.clear();
            for a in addrs {
                let _ = v.push(a);
            }
        });
        c.iface.routes_mut().update(|v| {
            v.clear();
            for r in routes {
                let _ = v.push(r);
            }
        });
        c.mtu = (self.dev.mtu() as usize).max(576);
    }

    /// Processes queued frames and due timers, sends what that produced, and wakes the
    /// sockets whose state changed. Returns when it next wants to run. Callers hold no lock.
    pub fn service(&self) -> Option<Duration> {
        let mut woken: Vec<Arc<InetSocket>> = Vec::new();
        let mut errs = Vec::new();
        let mut c = self.core();
        let mut rx = std::mem::take(&mut *lock(&self.rxq));
        let t = now();
        let Core {
            iface,
            sockets,
            tx,
            mtu,
            neigh,
            ..
        } = &mut *c;
        let real_mtu = *mtu;
        // smoltcp drops ICMP errors; the sockets they are about hear of them here.
        for f in rx.iter() {
            if let Some(e) = f.get(ETH_HLEN..).and_then(icmperr::parse) {
                errs.push(e);
            }
            if let Some(ip) = neigh::arp_sender(f) {
                neigh.heard(IpAddr::V4(ip));
            }
            if let Some(ip) = neigh::ndp_heard(f) {
                neigh.heard(IpAddr::V6(ip));
            }
        }
        let mut phy = Phy {
            rx: &mut rx,
            tx,
            mtu: PHY_MTU,
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            iface.poll(t, &mut phy, sockets);
        }));
        if r.is_err() {
            log::error!(
                "netstack: smoltcp panicked on {}; frames dropped",
                self.dev.name()
            );
        }
        let tnow = epoch().elapsed();
        let Core { tx, neigh, .. } = &mut *c;
        for f in tx.iter() {
            if let Some(ip) = neigh::arp_request_target(f) {
                neigh.asked(IpAddr::V4(ip), tnow);
            }
            if let Some(ip) = neigh::ns_target(f) {
                neigh.asked(IpAddr::V6(ip), tnow);
            }
        }
        for ip in c.neigh.expired(tnow) {
            errs.extend(c.unreachable_via(ip));
        }
        for e in errs {
            if let Some(s) = c.deliver_err(e) {
                woken.push(s);
            }
        }
        let Core {
            iface,
            sockets,
            tx,
            owners,
            neigh,
            ..
        } = &mut *c;
        let mut gone = Vec::new();
        for (h, s) in sockets.iter() {
            let Some(o) = owners.get_mut(&h) else {
                continue;
            };
            let (sig, closed) = match s {
                smoltcp::socket::Socket::Tcp(s) => (
                    (s.state() as u8, s.recv_queue(), s.send_queue()),
                    matches!(s.state(), tcp::State::Closed | tcp::State::TimeWait),
                ),
                smoltcp::socket::Socket::Udp(s) => ((1, s.recv_queue(), s.send_queue()), false),
                smoltcp::socket::Socket::Icmp(s) => {
                    ((2, s.can_recv() as usize, s.can_send() as usize), false)
                }
                #[allow(unreachable_patterns)]
                _ => ((0, 0, 0), false),
            };
            match &o.sock {
                None if closed => gone.push(h),
                None => {}
                Some(w) if sig != o.sig => {
                    o.sig = sig;
                    match w.upgrade() {
                        Some(s) => woken.push(s),
                        None => o.sock = None,
                    }
                }
                Some(_) => {}
            }
        }
        for h in gone {
            owners.remove(&h);
            sockets.remove(h);
        }
        let delay = iface
            .poll_delay(now(), sockets)
            .map(|d| Duration::from_micros(d.total_micros()));
        // Come back when an unanswered ARP request fails, even if smoltcp has nothing due.
        let delay = match (delay, neigh.next_deadline(epoch().elapsed())) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut frames = std::mem::take(tx);
        if frames
            .iter()
            .any(|f| f.len() - ETH_HLEN.min(f.len()) > real_mtu || is_syn(f))
        {
            frames = frames
                .into_iter()
                .flat_map(|mut f| {
                    clamp(&mut f, real_mtu);
                    if f.len() > ETH_HLEN + real_mtu {
                        let id = self.frag_id.fetch_add(1, Ordering::Relaxed);
                        frag::fragment(&f, real_mtu, id)
                    } else {
                        vec![f]
                    }
                })
                .collect();
        }
        let g = lock(&self.txlock);
        self.busy.store(true, Ordering::Release);
        drop(c);
        for f in frames {
            let _ = dev::dev_queue_xmit(&self.dev, &f);
        }
        self.busy.store(false, Ordering::Release);
        drop(g);
        for s in woken {
            s.wake();
        }
        delay
    }

    /// [`DevStack::service`], then makes sure the netstack thread comes back when smoltcp's
    /// timers say: a datagram waiting for neighbour discovery (rate-limited to one request a
    /// second) goes out only on a later poll that nothing else would make.
    pub fn service_armed(&self) {
        match self.service() {
            Some(d) if d < Duration::from_millis(1) => poller().kick(),
            Some(d) => poller().timer(d),
            None => {}
        }
    }

    /// Asks the `netstack` thread to poll this stack soon (after a socket freed room in its
    /// receive buffer, say).
    pub fn kick(&self) {
        poller().kick();
    }
}

/// Every device stack, of every namespace.
fn stacks() -> &'static Mutex<Vec<Arc<DevStack>>> {
    static S: Mutex<Vec<Arc<DevStack>>> = Mutex::new(Vec::new());
    &S
}

/// The stack of `dev`, made on first use (None for lo and for devices without a MAC).
pub fn stack_of(dev: &Arc<NetDevice>) -> Option<Arc<DevStack>> {
    if dev.is_loopback() || dev.kind != ARPHRD_ETHER {
        return None;
    }
    let mut v = lock(stacks());
    if let Some(s) = v.iter().find(|s| Arc::ptr_eq(&s.dev, dev)) {
        return Some(s.clone());
    }
    // Forget the stacks of namespaces that are gone.
    v.retain(|s| s.dev.netns().is_some());
    let s = DevStack::new(dev.clone())?;
    v.push(s.clone());
    drop(v);
    s.sync();
    poller();
    Some(s)
}

/// The stack of device `ifindex` in `ns`.
pub fn stack_for(ns: &Arc<NetNs>, ifindex: i32) -> Option<Arc<DevStack>> {
    let d = dev::devices(ns).by_index(ifindex)?;
    stack_of(&d)
}

/// The stacks of every device of `ns`.
pub fn stacks_in(ns: &Arc<NetNs>) -> Vec<Arc<DevStack>> {
    dev::devices(ns)
        .list()
        .iter()
        .filter_map(stack_of)
        .collect()
}

/// The rx handler: queues IP, ARP and IPv6 frames for the device's stack.
fn rx(dev: &Arc<NetDevice>, frame: &[u8]) {
    if frame.len() < ETH_HLEN {
        return;
    }
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    if !matches!(ethertype, 0x0800 | 0x0806 | 0x86dd) {
        return;
    }
    let Some(s) = stack_of(dev) else { return };
    let mut f = if ethertype != 0x0806 && frag::is_fragment(&frame[ETH_HLEN..]) {
        let now = std::time::Instant::now();
        match lock(&s.reasm).push(&frame[ETH_HLEN..], now) {
            frag::Push::Done(p) => {
                let mut f = frame[..ETH_HLEN].to_vec();
                f.extend_from_slice(&p);
                f
            }
            _ => return,
        }
    } else {
        frame.to_vec()
    };
    // The device's MTU, not `core().mtu`: the rx path may run inside another stack's
    // transmit, where taking a stack's lock would invert the lock order.
    clamp(&mut f, (dev.mtu() as usize).max(576));
    {
        let mut q = lock(&s.rxq);
        if q.len() >= RXQ_MAX {
            dev.stats
                .rx_dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return;
        }
        q.push_back(f);
    }
    // The driver's receive thread processes the frame itself (Linux's softirq on the CPU that
    // took it), unless this stack is sending right now on this thread or another: then the
    // netstack thread takes over.
    if s.busy.load(std::sync::atomic::Ordering::Acquire) {
        poller().kick();
    } else {
        s.service_armed();
    }
}

/// Whether frame `f` may be a TCP SYN (IPv4 or IPv6 carrying TCP, SYN set; options unchecked).
fn is_syn(f: &[u8]) -> bool {
    let Some(ip) = f.get(ETH_HLEN..) else {
        return false;
    };
    let (proto, l4) = match ip.first().map(|b| b >> 4) {
        Some(4) => (ip.get(9), usize::from(ip[0] & 0xf) * 4),
        Some(6) => (ip.get(6), 40),
        _ => return false,
    };
    proto == Some(&6) && ip.get(l4 + 13).is_some_and(|fl| fl & 0x02 != 0)
}

/// Clamps the MSS of a TCP SYN in frame `f` to what `mtu` carries (IP and TCP headers off).
fn clamp(f: &mut [u8], mtu: usize) {
    if !is_syn(f) {
        return;
    }
    let v6 = f[ETH_HLEN] >> 4 == 6;
    let max = mtu
        .saturating_sub(if v6 { 60 } else { 40 })
        .clamp(64, 65_535) as u16;
    frag::clamp_mss(&mut f[ETH_HLEN..], max);
}

/// The notifier: a device, address or route change reaches the device's stack.
fn notify(ns: &Arc<NetNs>, e: &Event) {
    let ifindex = match e {
        Event::Link(d) => d.ifindex,
        Event::NewAddr(a) | Event::DelAddr(a) => a.ifindex,
        Event::NewRoute(r) | Event::DelRoute(r) => r.oif,
    };
    if let Some(s) = stack_for(ns, ifindex) {
        s.sync();
        poller().kick();
    }
}

/// Registers the rx handler and the notifier (once, at boot; unit tests call it too).
pub fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        dev::register_rx_handler(rx);
        dev::register_notifier(notify);
    });
}

/// The `netstack` thread's doorbell.
struct Poller {
    kicked: Mutex<bool>,
    cv: Condvar,
    /// The earliest deadline the thread knows of.
    next: Mutex<Option<std::time::Instant>>,
}

impl Poller {
    fn kick(&self) {
        *lock(&self.kicked) = true;
        self.cv.notify_one();
    }

    /// Makes sure the thread polls within `d` (a timer smoltcp armed while the rx path ran).
    fn timer(&self, d: Duration) {
        let when = std::time::Instant::now() + d;
        let mut n = lock(&self.next);
        if n.is_none_or(|t| when < t) {
            *n = Some(when);
            drop(n);
            self.kick();
        }
    }
}

fn poller() -> &'static Poller {
    static P: OnceLock<&'static Poller> = OnceLock::new();
    P.get_or_init(|| {
        let p: &'static Poller = Box::leak(Box::new(Poller {
            kicked: Mutex::new(false),
            cv: Condvar::new(),
            next: Mutex::new(None),
        }));
        if let Err(e) = std::thread::Builder::new()
            .name("netstack".into())
            .spawn(move || poll_thread(p))
        {
            log::error!("netstack: cannot start the poll thread: {e}");
        }
        p
    })
}

/// Polls every stack whenever kicked or when the earliest smoltcp timer is due.
fn poll_thread(p: &'static Poller) {
    loop {
        let all: Vec<Arc<DevStack>> = lock(stacks()).clone();
        let mut next: Option<Duration> = None;
        for s in &all {
            if let Some(d) = s.service() {
                next = Some(next.map_or(d, |n| n.min(d)));
            }
        }
        drop(all);
        *lock(&p.next) = next.map(|d| std::time::Instant::now() + d);
        let mut k = lock(&p.kicked);
        if !*k {
            k = match next {
                None => p.cv.wait(k).unwrap_or_else(|e| e.into_inner()),
                Some(d) if d.is_zero() => k,
                Some(d) => p.cv.wait_timeout(k, d).unwrap_or_else(|e| e.into_inner()).0,
            };
        }
        *k = false;
    }
}

/// Buffer sizes of a device TCP socket from its `SO_RCVBUF`/`SO_SNDBUF` (the values Linux
/// reports, doubled already; the defaults become [`DEFAULT_TCP_BUF`]).
pub fn tcp_buffers(rcvbuf: i32, sndbuf: i32) -> (usize, usize) {
    use crate::inet::opt::{TCP_RCVBUF, TCP_SNDBUF};
    let pick = |v: i32, default: i32| {
        if v == default {
            DEFAULT_TCP_BUF
        } else {
            (v.max(0) as usize).clamp(4096, MAX_BUF)
        }
    };
    (pick(rcvbuf, TCP_RCVBUF), pick(sndbuf, TCP_SNDBUF))
}
