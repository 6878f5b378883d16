//! Network devices and the addresses and routes on them, per network namespace (Linux
//! `net/core/dev.c` for devices and the receive/transmit entry points, `net/ipv4/devinet.c` and
//! `net/ipv6/addrconf.c` for addresses, `net/ipv4/fib_frontend.c` for the routes an address
//! brings with it).
//!
//! Every namespace starts with `lo` (ifindex 1: 127.0.0.1/8 and ::1, up, MTU 65536); drivers
//! add devices with [`NetDevices::register`] (the virtual NIC `eth0` of `um-drivers`). This is
//! the one model of interfaces that rtnetlink, the `SIOCGIF*`/`SIOCSIF*` ioctls, `/proc/net/*`,
//! `/sys/class/net` and the IP stacks read and change; whoever changes it goes through the
//! methods here, which keep Linux's side effects (an IPv4 address brings its local and prefix
//! routes, a device going down takes its routes with it) and tell every registered notifier
//! ([`register_notifier`], Linux `rtmsg_ifa`/`rtmsg_fib`/`rtmsg_ifinfo` and the netdevice
//! notifier chain), after the registry's lock is released.
//!
//! Frames: a driver hands a received frame to [`netif_rx`] (Linux `netif_rx`), which passes it
//! to the taps (packet sockets) and to the protocol handlers registered with
//! [`register_rx_handler`] (Linux `dev_add_pack`); a stack sends with [`dev_queue_xmit`], which
//! shows the frame to the taps as outgoing and calls the driver's [`NetDevOps::xmit`]. `lo` has
//! no driver: its frames loop back in `crate::packet` and its IP traffic never becomes frames
//! (`crate::inet`).
//!
//! Key types: [`NetDevice`], [`NetDevOps`], [`IfAddr`], [`Route`], [`Event`], [`NetDevices`]
//! (the per-namespace state, `um_kernel::netns` `PerNet`). Locking: one mutex per namespace
//! ([`NetDevices`]'s); device flags, MTU and counters are atomics readable without it; no
//! notifier, handler or driver call is made with it held.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::Instant;
use um_kernel::netns::{NetNs, PerNet};
use um_kernel::task::lock;
use um_uapi::abi::netdevice::{
    ARPHRD_LOOPBACK, IFA_F_DEPRECATED, IFA_F_NOPREFIXROUTE, IFA_F_PERMANENT, IFA_F_SECONDARY,
    IFF_LOOPBACK, IFF_LOWER_UP, IFF_RUNNING, IFF_UP, IFNAMSIZ, RT_SCOPE_HOST, RT_SCOPE_LINK,
    RT_SCOPE_UNIVERSE, RT_TABLE_LOCAL, RT_TABLE_MAIN, RTN_BROADCAST, RTN_LOCAL, RTN_UNICAST,
    RTPROT_KERNEL,
};
use um_uapi::{Errno, SysResult};

/// lo's interface index (Linux `LOOPBACK_IFINDEX`).
pub const LO_IFINDEX: i32 = 1;
/// lo's MTU (Linux `drivers/net/loopback.c`: 64 KiB since 3.6).
pub const LO_MTU: u32 = 65_536;

/// A new device's transmit queue length (`DEFAULT_TX_QUEUE_LEN`; lo has the same).
pub const DEFAULT_TXQLEN: u32 = 1000;

/// What a driver does for its device (Linux `struct net_device_ops`).
pub trait NetDevOps: Send + Sync {
    /// Sends one complete frame (`ndo_start_xmit`). Never blocks; `false` when the frame was
    /// dropped (the transmit queue is full), which counts in `tx_dropped`.
    fn xmit(&self, frame: &[u8]) -> bool;
    /// The device was brought up or down (`ndo_open`, `ndo_stop`).
    fn set_up(&self, _up: bool) {}
}

/// A device's counters (Linux `struct rtnl_link_stats64`, the ones `/proc/net/dev` shows).
#[derive(Default, Debug)]
pub struct DevStats {
    pub rx_packets: AtomicU64,
    pub rx_bytes: AtomicU64,
    pub rx_errors: AtomicU64,
    pub rx_dropped: AtomicU64,
    pub tx_packets: AtomicU64,
    pub tx_bytes: AtomicU64,
    pub tx_errors: AtomicU64,
    pub tx_dropped: AtomicU64,
    pub multicast: AtomicU64,
}

impl DevStats {
    fn count(n: &AtomicU64, by: u64) {
        n.fetch_add(by, Ordering::Relaxed);
    }
}

/// One network device (Linux `struct net_device`).
pub struct NetDevice {
    /// The interface index, unique in its namespace, never reused while the device exists.
    pub ifindex: i32,
    /// The hardware type (`ARPHRD_*`, `dev->type`).
    pub kind: u16,
    /// The hardware address (`dev->dev_addr`; lo's is all zeros).
    pub mac: [u8; 6],
    name: RwLock<String>,
    flags: AtomicU32,
    mtu: AtomicU32,
    txqlen: AtomicU32,
    /// The counters.
    pub stats: DevStats,
    ops: Option<Arc<dyn NetDevOps>>,
    netns: OnceLock<Weak<NetNs>>,
}

impl NetDevice {
    /// The interface name (`dev->name`).
    pub fn name(&self) -> String {
        self.name.read().map(|n| n.clone()).unwrap_or_default()
    }

    /// The `IFF_*` flags as rtnetlink shows them (`dev_get_flags`, with `IFF_LOWER_UP`).
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// Up (`IFF_UP`).
    pub fn is_up(&self) -> bool {
        self.flags() & IFF_UP != 0
    }

    /// The MTU (`dev->mtu`).
    pub fn mtu(&self) -> u32 {
        self.mtu.load(Ordering::Relaxed)
    }

    /// The transmit queue length (`dev->tx_queue_len`, `ip link`'s "qlen").
    pub fn txqlen(&self) -> u32 {
        self.txqlen.load(Ordering::Relaxed)
    }

    /// The namespace the device is in (None while it is being torn down).
    pub fn netns(&self) -> Option<Arc<NetNs>> {
        self.netns.get().and_then(Weak::upgrade)
    }

    /// `lo`.
    pub fn is_loopback(&self) -> bool {
        self.kind == ARPHRD_LOOPBACK
    }
}

impl std::fmt::Debug for NetDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetDevice")
            .field("ifindex", &self.ifindex)
            .field("name", &self.name())
            .field("flags", &self.flags())
            .finish()
    }
}

/// An interface address (Linux `struct in_ifaddr` / `struct inet6_ifaddr`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IfAddr {
    /// The device it is on.
    pub ifindex: i32,
    /// The address (`IFA_LOCAL`; for IPv6 `IFA_ADDRESS`).
    pub addr: IpAddr,
    /// The prefix length (`ifa_prefixlen`).
    pub prefix_len: u8,
    /// The IPv4 broadcast address (`IFA_BROADCAST`), if any.
    pub broadcast: Option<Ipv4Addr>,
    /// The label (`IFA_LABEL`, IPv4 only; the device name by default).
    pub label: String,
    /// `IFA_F_*`.
    pub flags: u32,
    /// `RT_SCOPE_*` (`ifa_scope`).
    pub scope: u8,
    /// When the address goes away (`ifa_valid` of `IFA_CACHEINFO`); None: forever. Set by
    /// IPv6 autoconfiguration (`crate::addrconf`) from a prefix's valid lifetime.
    pub valid_until: Option<Instant>,
    /// When it becomes deprecated (`ifa_prefered`, RFC 4862 5.5.4); None: never.
    pub preferred_until: Option<Instant>,
}

impl IfAddr {
    /// A permanent address with the scope Linux gives it: host for loopback addresses, link
    /// for IPv6 link-local ones, universe otherwise.
    pub fn new(ifindex: i32, addr: IpAddr, prefix_len: u8, label: &str) -> IfAddr {
        let scope = match addr {
            IpAddr::V4(a) if a.is_loopback() => RT_SCOPE_HOST,
            IpAddr::V6(a) if a.is_loopback() => RT_SCOPE_HOST,
            IpAddr::V6(a) if a.segments()[0] & 0xffc0 == 0xfe80 => RT_SCOPE_LINK,
            _ => RT_SCOPE_UNIVERSE,
        };
        IfAddr {
            ifindex,
            addr,
            prefix_len,
            broadcast: None,
            label: label.to_string(),
            flags: IFA_F_PERMANENT,
            scope,
            valid_until: None,
            preferred_until: None,
        }
    }
}

/// A route (Linux `struct fib_info` + `fib_alias` for IPv4, `struct fib6_info` for IPv6,
/// flattened: one next hop).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The destination prefix (`RTA_DST`; `0.0.0.0`/`::` with length 0 is the default route).
    pub dst: IpAddr,
    /// Its length.
    pub dst_len: u8,
    /// The gateway (`RTA_GATEWAY`), none for a direct route.
    pub gateway: Option<IpAddr>,
    /// The output device (`RTA_OIF`).
    pub oif: i32,
    /// `RT_TABLE_*` (`RTA_TABLE`).
    pub table: u8,
    /// `RTPROT_*`.
    pub protocol: u8,
    /// `RT_SCOPE_*`.
    pub scope: u8,
    /// `RTN_*`.
    pub kind: u8,
    /// The metric (`RTA_PRIORITY`).
    pub priority: u32,
    /// The preferred source (`RTA_PREFSRC`).
    pub prefsrc: Option<IpAddr>,
    /// When the route goes away (`RTF_EXPIRES`, `rta_expires`): routes learnt from router
    /// advertisements (`crate::addrconf`); None: never.
    pub expires: Option<Instant>,
}

impl Route {
    /// Whether `ip` falls in this route's prefix.
    pub fn covers(&self, ip: IpAddr) -> bool {
        prefix_match(self.dst, ip, self.dst_len)
    }
}

/// The first `len` bits of `a` and `b` are equal (and the families match).
pub fn prefix_match(a: IpAddr, b: IpAddr, len: u8) -> bool {
    let (a, b, bits): (u128, u128, u8) = match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u32::from(a).into(), u32::from(b).into(), 32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (a.into(), b.into(), 128),
        _ => return false,
    };
    let len = len.min(bits);
    if len == 0 {
        return true;
    }
    let shift = bits - len;
    (a >> shift) == (b >> shift)
}

/// The network part of `addr` for a prefix of `len` bits.
pub fn network(addr: IpAddr, len: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = if len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(len.min(32)))
            };
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & m))
        }
        IpAddr::V6(a) => {
            let m = if len == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(len.min(128)))
            };
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & m))
        }
    }
}

/// A change to the registry, as rtnetlink announces it (`RTM_NEWLINK`, `RTM_NEWADDR`, ...).
#[derive(Clone, Debug)]
pub enum Event {
    /// A device was registered or its flags, MTU or name changed.
    Link(Arc<NetDevice>),
    /// An address was added.
    NewAddr(IfAddr),
    /// An address was removed.
    DelAddr(IfAddr),
    /// A route was added.
    NewRoute(Route),
    /// A route was removed.
    DelRoute(Route),
}

/// Called after every change, with the registry unlocked (Linux's netdevice and inetaddr
/// notifier chains and `rtnl_notify`).
pub type Notifier = fn(&Arc<NetNs>, &Event);
/// Sees every frame a device receives (Linux `struct packet_type.func` of `dev_add_pack`).
pub type RxHandler = fn(&Arc<NetDevice>, &[u8]);
/// Sees every frame a device receives or sends (`outgoing`; Linux `ptype_all`, the packet
/// socket taps and `dev_queue_xmit_nit`).
pub type Tap = fn(&Arc<NetDevice>, &[u8], bool);

static NOTIFIERS: Mutex<Vec<Notifier>> = Mutex::new(Vec::new());
static RX_HANDLERS: Mutex<Vec<RxHandler>> = Mutex::new(Vec::new());
static TAPS: Mutex<Vec<Tap>> = Mutex::new(Vec::new());

/// Adds a notifier (once, at boot).
pub fn register_notifier(f: Notifier) {
    lock(&NOTIFIERS).push(f);
}

/// Adds a protocol handler for received frames (once, at boot).
pub fn register_rx_handler(f: RxHandler) {
    lock(&RX_HANDLERS).push(f);
}

/// Adds a tap (once, at boot).
pub fn register_tap(f: Tap) {
    lock(&TAPS).push(f);
}

fn notify(ns: &Arc<NetNs>, events: &[Event]) {
    let fs: Vec<Notifier> = lock(&NOTIFIERS).clone();
    for e in events {
        for f in &fs {
            f(ns, e);
        }
    }
}

/// A driver received `frame` on `dev` (Linux `netif_rx` and `__netif_receive_skb`): counted,
/// shown to the taps, then to each protocol handler. Dropped while the device is down.
pub fn netif_rx(dev: &Arc<NetDevice>, frame: &[u8]) {
    if !dev.is_up() {
        DevStats::count(&dev.stats.rx_dropped, 1);
        return;
    }
    DevStats::count(&dev.stats.rx_packets, 1);
    DevStats::count(&dev.stats.rx_bytes, frame.len() as u64);
    if frame.first().is_some_and(|b| b & 1 != 0) {
        DevStats::count(&dev.stats.multicast, 1);
    }
    let taps: Vec<Tap> = lock(&TAPS).clone();
    for t in taps {
        t(dev, frame, false);
    }
    let hs: Vec<RxHandler> = lock(&RX_HANDLERS).clone();
    for h in hs {
        h(dev, frame);
    }
}

/// Sends `frame` on `dev` (Linux `dev_queue_xmit`): the taps see it as outgoing, then the
/// driver. `ENETDOWN` while the device is down, `ENOBUFS` when the driver dropped it, `ENXIO`
/// for a device without a driver (lo: its frames loop back in `crate::packet`).
pub fn dev_queue_xmit(dev: &Arc<NetDevice>, frame: &[u8]) -> SysResult<()> {
    if !dev.is_up() {
        return Err(Errno::ENETDOWN);
    }
    let Some(ops) = dev.ops.clone() else {
        return Err(Errno::ENXIO);
    };
    let taps: Vec<Tap> = lock(&TAPS).clone();
    for t in taps {
        t(dev, frame, true);
    }
    if ops.xmit(frame) {
        DevStats::count(&dev.stats.tx_packets, 1);
        DevStats::count(&dev.stats.tx_bytes, frame.len() as u64);
        Ok(())
    } else {
        DevStats::count(&dev.stats.tx_dropped, 1);
        Err(Errno::ENOBUFS)
    }
}

#[derive(Default)]
struct Inner {
    devs: Vec<Arc<NetDevice>>,
    addrs: Vec<IfAddr>,
    routes: Vec<Route>,
    next_ifindex: i32,
}

/// One namespace's devices, addresses and routes.
pub struct NetDevices {
    inner: Mutex<Inner>,
}

impl Default for NetDevices {
    /// A namespace's start: `lo` with 127.0.0.1/8 and ::1/128, up (as here every namespace's lo
    /// is; Linux brings a new namespace's lo up down), with the routes Linux gives them.
    fn default() -> Self {
        let lo = Arc::new(NetDevice {
            ifindex: LO_IFINDEX,
            kind: ARPHRD_LOOPBACK,
            mac: [0; 6],
            name: RwLock::new("lo".to_string()),
            flags: AtomicU32::new(IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_LOWER_UP),
            mtu: AtomicU32::new(LO_MTU),
            txqlen: AtomicU32::new(DEFAULT_TXQLEN),
            stats: DevStats::default(),
            ops: None,
            netns: OnceLock::new(),
        });
        let mut i = Inner {
            devs: vec![lo],
            next_ifindex: LO_IFINDEX + 1,
            ..Inner::default()
        };
        for a in [
            IfAddr::new(LO_IFINDEX, IpAddr::V4(Ipv4Addr::LOCALHOST), 8, "lo"),
            IfAddr::new(LO_IFINDEX, IpAddr::V6(Ipv6Addr::LOCALHOST), 128, "lo"),
        ] {
            let routes = addr_routes(&a);
            i.addrs.push(a);
            i.routes.extend(routes);
        }
        NetDevices {
            inner: Mutex::new(i),
        }
    }
}

impl PerNet for NetDevices {
    /// A namespace made later (`loopback_net_init`): `lo` down and without addresses, as
    /// Linux registers it; bringing it up gives it 127.0.0.1/8 and ::1/128 (see
    /// [`NetDevices::set_flags`]). Sandboxes such as bwrap add the address themselves first.
    fn for_new_ns(_init: &Self) -> Self {
        let d = NetDevices::default();
        {
            let mut i = lock(&d.inner);
            i.addrs.clear();
            i.routes.clear();
            for dev in &i.devs {
                dev.flags.store(IFF_LOOPBACK, Ordering::Relaxed);
            }
        }
        d
    }
}

/// The routes an address brings while its device is up (Linux `fib_add_ifaddr` for IPv4: a
/// local route for the address, a broadcast route for an explicit broadcast address and,
/// unless secondary or a /32, a prefix route (unless `IFA_F_NOPREFIXROUTE`; in the local table
/// on lo, else in main) and the network's broadcast route; `addrconf_prefix_route` and the local route for
/// IPv6).
fn addr_routes(a: &IfAddr) -> Vec<Route> {
    let base = Route {
        dst: a.addr,
        dst_len: if a.addr.is_ipv4() { 32 } else { 128 },
        gateway: None,
        oif: a.ifindex,
        table: RT_TABLE_LOCAL,
        protocol: RTPROT_KERNEL,
        scope: RT_SCOPE_HOST,
        kind: RTN_LOCAL,
        priority: 0,
        prefsrc: Some(a.addr),
        expires: None,
    };
    let mut v = vec![];
    match a.addr {
        IpAddr::V4(ip) => {
            v.push(base.clone());
            let bcast_route = |b: Ipv4Addr| Route {
                dst: IpAddr::V4(b),
                dst_len: 32,
                scope: RT_SCOPE_LINK,
                kind: RTN_BROADCAST,
                ..base.clone()
            };
            // An explicitly assigned broadcast address.
            if let Some(b) = a.broadcast.filter(|b| *b != Ipv4Addr::BROADCAST) {
                v.push(bcast_route(b));
            }
            // A secondary address brings no prefix or network broadcast route.
            if a.prefix_len < 32 && a.flags & IFA_F_SECONDARY == 0 {
                let net = network(a.addr, a.prefix_len);
                if a.flags & IFA_F_NOPREFIXROUTE == 0 {
                    // On the loopback device a prefix is local as a whole (`fib_magic` with
                    // RTN_LOCAL for IFF_LOOPBACK: "local 127.0.0.0/8 dev lo"); elsewhere it
                    // goes in main, reachable on the link.
                    if ip.is_loopback() || a.ifindex == LO_IFINDEX {
                        v.push(Route {
                            dst: net,
                            dst_len: a.prefix_len,
                            ..base.clone()
                        });
                    } else {
                        v.push(Route {
                            dst: net,
                            dst_len: a.prefix_len,
                            table: RT_TABLE_MAIN,
                            scope: RT_SCOPE_LINK,
                            kind: RTN_UNICAST,
                            ..base.clone()
                        });
                    }
                }
                if a.prefix_len < 31 {
                    let b = Ipv4Addr::from(u32::from(ip) | (u32::MAX >> u32::from(a.prefix_len)));
                    if a.broadcast != Some(b) {
                        v.push(bcast_route(b));
                    }
                }
            }
        }
        IpAddr::V6(ip) => {
            v.push(Route {
                priority: 0,
                ..base.clone()
            });
            if !ip.is_loopback() && a.flags & IFA_F_NOPREFIXROUTE == 0 && a.prefix_len < 128 {
                v.push(Route {
                    dst: network(a.addr, a.prefix_len),
                    dst_len: a.prefix_len,
                    table: RT_TABLE_MAIN,
                    scope: RT_SCOPE_UNIVERSE,
                    kind: RTN_UNICAST,
                    priority: 256,
                    prefsrc: None,
                    ..base.clone()
                });
            } else if ip.is_loopback() {
                // `ip -6 route`: "::1 dev lo proto kernel metric 256".
                v.push(Route {
                    table: RT_TABLE_MAIN,
                    scope: RT_SCOPE_UNIVERSE,
                    kind: RTN_UNICAST,
                    priority: 256,
                    prefsrc: None,
                    ..base.clone()
                });
            }
        }
    }
    v
}

/// The registry of namespace `ns`.
pub fn devices(ns: &Arc<NetNs>) -> Arc<NetDevices> {
    let d = ns.generic::<NetDevices>();
    // lo was made before the namespace could be named; tie it to its namespace now.
    if let Some(lo) = lock(&d.inner).devs.first() {
        let _ = lo.netns.set(Arc::downgrade(ns));
    }
    d
}

impl NetDevices {
    /// Every device, in ifindex order.
    pub fn list(&self) -> Vec<Arc<NetDevice>> {
        lock(&self.inner).devs.clone()
    }

    /// The device with index `ifindex`.
    pub fn by_index(&self, ifindex: i32) -> Option<Arc<NetDevice>> {
        lock(&self.inner)
            .devs
            .iter()
            .find(|d| d.ifindex == ifindex)
            .cloned()
    }

    /// The device named `name`.
    pub fn by_name(&self, name: &str) -> Option<Arc<NetDevice>> {
        lock(&self.inner)
            .devs
            .iter()
            .find(|d| d.name() == name)
            .cloned()
    }

    /// Adds a device (Linux `register_netdev`), down, with the next free index. `EEXIST` for a
    /// name in use, `EINVAL` for an empty or too long one.
    pub fn register(
        &self,
        ns: &Arc<NetNs>,
        name: &str,
        kind: u16,
        mac: [u8; 6],
        mtu: u32,
        flags: u32,
        ops: Arc<dyn NetDevOps>,
    ) -> SysResult<Arc<NetDevice>> {
        if name.is_empty() || name.len() >= IFNAMSIZ || name.contains('/') {
            return Err(Errno::EINVAL);
        }
        let dev = {
            let mut i = lock(&self.inner);
            if i.devs.iter().any(|d| d.name() == name) {
                return Err(Errno::EEXIST);
            }
            let dev = Arc::new(NetDevice {
                ifindex: i.next_ifindex,
                kind,
                mac,
                name: RwLock::new(name.to_string()),
                flags: AtomicU32::new(flags & !(IFF_UP | IFF_RUNNING | IFF_LOWER_UP)),
                mtu: AtomicU32::new(mtu),
                txqlen: AtomicU32::new(DEFAULT_TXQLEN),
                stats: DevStats::default(),
                ops: Some(ops),
                netns: OnceLock::new(),
            });
            let _ = dev.netns.set(Arc::downgrade(ns));
            i.next_ifindex += 1;
            i.devs.push(dev.clone());
            dev
        };
        notify(ns, &[Event::Link(dev.clone())]);
        Ok(dev)
    }

    /// Sets the administrative flags that can be changed (`dev_change_flags`): `IFF_UP` (the
    /// driver is told; `IFF_RUNNING` and `IFF_LOWER_UP` follow it, as for a device whose
    /// carrier is always on), `IFF_PROMISC`, `IFF_ALLMULTI`, `IFF_DEBUG`, `IFF_NOARP`...; the
    /// others are the device's. Bringing a device down removes its routes (IPv4 addresses stay,
    /// as on Linux; their routes come back when it comes up).
    pub fn set_flags(&self, ns: &Arc<NetNs>, ifindex: i32, flags: u32) -> SysResult<()> {
        use um_uapi::abi::netdevice::{
            IFF_ALLMULTI, IFF_BROADCAST, IFF_DEBUG, IFF_MULTICAST, IFF_NOARP, IFF_POINTOPOINT,
            IFF_PROMISC,
        };
        const CHANGEABLE: u32 = IFF_UP
            | IFF_DEBUG
            | IFF_NOARP
            | IFF_PROMISC
            | IFF_ALLMULTI
            | IFF_MULTICAST
            | IFF_BROADCAST
            | IFF_POINTOPOINT;
        let dev = self.by_index(ifindex).ok_or(Errno::ENODEV)?;
        let old = dev.flags();
        let mut new = (old & !CHANGEABLE) | (flags & CHANGEABLE);
        if new & IFF_UP != 0 {
            new |= IFF_RUNNING | IFF_LOWER_UP;
        } else {
            new &= !(IFF_RUNNING | IFF_LOWER_UP);
        }
        if new == old {
            return Ok(());
        }
        let mut events = vec![];
        let up_changed = (old ^ new) & IFF_UP != 0;
        dev.flags.store(new, Ordering::Relaxed);
        if up_changed {
            let mut i = lock(&self.inner);
            if new & IFF_UP != 0 && dev.is_loopback() {
                // inetdev_event / addrconf_notify NETDEV_UP on a loopback device: 127.0.0.1/8
                // and ::1/128, unless it has them already.
                for a in [
                    IfAddr::new(ifindex, IpAddr::V4(Ipv4Addr::LOCALHOST), 8, &dev.name()),
                    IfAddr::new(ifindex, IpAddr::V6(Ipv6Addr::LOCALHOST), 128, &dev.name()),
                ] {
                    if !i
                        .addrs
                        .iter()
                        .any(|b| b.ifindex == ifindex && b.addr == a.addr)
                    {
                        i.addrs.push(a.clone());
                        events.push(Event::NewAddr(a));
                    }
                }
            }
            if new & IFF_UP != 0 {
                let addrs: Vec<IfAddr> = i
                    .addrs
                    .iter()
                    .filter(|a| a.ifindex == ifindex)
                    .cloned()
                    .collect();
                for a in &addrs {
                    for r in addr_routes(a) {
                        if !i.routes.contains(&r) {
                            i.routes.push(r.clone());
                            events.push(Event::NewRoute(r));
                        }
                    }
                }
            } else {
                let (gone, kept): (Vec<Route>, Vec<Route>) =
                    i.routes.drain(..).partition(|r| r.oif == ifindex);
                i.routes = kept;
                events.extend(gone.into_iter().map(Event::DelRoute));
            }
        }
        events.insert(0, Event::Link(dev.clone()));
        if up_changed && let Some(ops) = &dev.ops {
            ops.set_up(new & IFF_UP != 0);
        }
        notify(ns, &events);
        Ok(())
    }

    /// Sets the MTU (`dev_set_mtu`): `EINVAL` outside 68..=65535 for Ethernet-like devices (lo:
    /// up to its 64 KiB).
    pub fn set_mtu(&self, ns: &Arc<NetNs>, ifindex: i32, mtu: u32) -> SysResult<()> {
        let dev = self.by_index(ifindex).ok_or(Errno::ENODEV)?;
        let max = if dev.is_loopback() { LO_MTU } else { 65_535 };
        if !(68..=max).contains(&mtu) {
            return Err(Errno::EINVAL);
        }
        dev.mtu.store(mtu, Ordering::Relaxed);
        notify(ns, &[Event::Link(dev)]);
        Ok(())
    }

    /// Renames a device (`dev_change_name`): `EBUSY` while it is up, `EEXIST` for a name in
    /// use, `EINVAL` for a bad one. The IPv4 labels that were the old name follow.
    pub fn set_name(&self, ns: &Arc<NetNs>, ifindex: i32, name: &str) -> SysResult<()> {
        if name.is_empty()
            || name.len() >= IFNAMSIZ
            || name.contains(['/', ':'])
            || name.contains(char::is_whitespace)
        {
            return Err(Errno::EINVAL);
        }
        let dev = self.by_index(ifindex).ok_or(Errno::ENODEV)?;
        let old = dev.name();
        if old == name {
            return Ok(());
        }
        if dev.is_up() {
            return Err(Errno::EBUSY);
        }
        {
            let mut i = lock(&self.inner);
            if i.devs.iter().any(|d| d.name() == name) {
                return Err(Errno::EEXIST);
            }
            if let Ok(mut n) = dev.name.write() {
                *n = name.to_string();
            }
            for a in i.addrs.iter_mut().filter(|a| a.ifindex == ifindex) {
                if a.label == old {
                    a.label = name.to_string();
                }
            }
        }
        notify(ns, &[Event::Link(dev)]);
        Ok(())
    }

    /// Sets the transmit queue length (`dev_change_tx_queue_len`).
    pub fn set_txqlen(&self, ns: &Arc<NetNs>, ifindex: i32, len: u32) -> SysResult<()> {
        let dev = self.by_index(ifindex).ok_or(Errno::ENODEV)?;
        if dev.txqlen.swap(len, Ordering::Relaxed) != len {
            notify(ns, &[Event::Link(dev)]);
        }
        Ok(())
    }

    /// Every address, in the order they were added.
    pub fn addrs(&self) -> Vec<IfAddr> {
        lock(&self.inner).addrs.clone()
    }

    /// Adds an address (`inet_insert_ifa`, `inet6_addr_add`): `ENODEV` for no such device,
    /// `EEXIST` when the device has it already; its routes are added while the device is up.
    pub fn add_addr(&self, ns: &Arc<NetNs>, a: IfAddr) -> SysResult<()> {
        let max = if a.addr.is_ipv4() { 32 } else { 128 };
        if a.prefix_len > max {
            return Err(Errno::EINVAL);
        }
        let dev = self.by_index(a.ifindex).ok_or(Errno::ENODEV)?;
        let mut events = vec![];
        {
            let mut i = lock(&self.inner);
            if i.addrs
                .iter()
                .any(|b| b.ifindex == a.ifindex && b.addr == a.addr)
            {
                return Err(Errno::EEXIST);
            }
            i.addrs.push(a.clone());
            events.push(Event::NewAddr(a.clone()));
            if dev.is_up() {
                for r in addr_routes(&a) {
                    if !i.routes.contains(&r) {
                        i.routes.push(r.clone());
                        events.push(Event::NewRoute(r));
                    }
                }
            }
        }
        notify(ns, &events);
        Ok(())
    }

    /// Removes the address `addr` from `ifindex` (`inet_del_ifa`): `EADDRNOTAVAIL` if it is
    /// not there. Its routes go with it, and (IPv4) so do routes through gateways it made
    /// reachable, as `fib_sync_down_addr` drops routes whose preferred source it was.
    pub fn del_addr(&self, ns: &Arc<NetNs>, ifindex: i32, addr: IpAddr) -> SysResult<IfAddr> {
        let mut events = vec![];
        let gone = {
            let mut i = lock(&self.inner);
            let pos = i
                .addrs
                .iter()
                .position(|b| b.ifindex == ifindex && b.addr == addr)
                .ok_or(Errno::EADDRNOTAVAIL)?;
            let gone = i.addrs.remove(pos);
            events.push(Event::DelAddr(gone.clone()));
            let own = addr_routes(&gone);
            let (drop, keep): (Vec<Route>, Vec<Route>) = i
                .routes
                .drain(..)
                .partition(|r| own.contains(r) || r.prefsrc == Some(addr));
            i.routes = keep;
            events.extend(drop.into_iter().map(Event::DelRoute));
            gone
        };
        notify(ns, &events);
        Ok(gone)
    }

    /// Every route, local table included.
    pub fn routes(&self) -> Vec<Route> {
        lock(&self.inner).routes.clone()
    }

    /// Adds a route (`fib_table_insert`, `ip6_route_add`): `ENODEV` for no such device,
    /// `EEXIST` for the same prefix, table and metric already there, `ENETUNREACH` for a
    /// gateway no direct route of the device reaches (Linux: "Nexthop has invalid gateway").
    pub fn add_route(&self, ns: &Arc<NetNs>, r: Route) -> SysResult<()> {
        let dev = self.by_index(r.oif).ok_or(Errno::ENODEV)?;
        if !dev.is_up() {
            return Err(Errno::ENETDOWN);
        }
        {
            let mut i = lock(&self.inner);
            if let Some(gw) = r.gateway
                && !i
                    .routes
                    .iter()
                    .any(|d| d.oif == r.oif && d.gateway.is_none() && d.covers(gw))
            {
                return Err(Errno::ENETUNREACH);
            }
            if i.routes.iter().any(|o| {
                o.table == r.table
                    && o.dst == r.dst
                    && o.dst_len == r.dst_len
                    && o.priority == r.priority
            }) {
                return Err(Errno::EEXIST);
            }
            i.routes.push(r.clone());
        }
        notify(ns, &[Event::NewRoute(r)]);
        Ok(())
    }

    /// Removes the first route matching `want` on the fields it sets (the prefix always; the
    /// gateway, device and table when given): `ESRCH` if none (`fib_table_delete`).
    pub fn del_route(
        &self,
        ns: &Arc<NetNs>,
        dst: IpAddr,
        dst_len: u8,
        gateway: Option<IpAddr>,
        oif: Option<i32>,
        table: Option<u8>,
    ) -> SysResult<Route> {
        let gone = {
            let mut i = lock(&self.inner);
            let pos = i
                .routes
                .iter()
                .position(|r| {
                    r.dst == dst
                        && r.dst_len == dst_len
                        && gateway.is_none_or(|g| r.gateway == Some(g))
                        && oif.is_none_or(|o| r.oif == o)
                        && table.is_none_or(|t| r.table == t)
                })
                .ok_or(Errno::ESRCH)?;
            i.routes.remove(pos)
        };
        notify(ns, &[Event::DelRoute(gone.clone())]);
        Ok(gone)
    }

    /// The route to `dst` (`fib_lookup`): the local table first, then the longest prefix of
    /// the main table, the lowest metric among equals. None: `ENETUNREACH` for the caller.
    pub fn lookup(&self, dst: IpAddr) -> Option<Route> {
        let i = lock(&self.inner);
        let best = |table: u8| {
            i.routes
                .iter()
                .filter(|r| r.table == table && r.kind != RTN_BROADCAST && r.covers(dst))
                .max_by(|a, b| {
                    a.dst_len
                        .cmp(&b.dst_len)
                        .then_with(|| b.priority.cmp(&a.priority))
                })
                .cloned()
        };
        best(RT_TABLE_LOCAL).or_else(|| best(RT_TABLE_MAIN))
    }

    /// The source address for a packet to `dst` on `route` (`inet_select_addr`, RFC 6724's
    /// first rules for IPv6, simplified): the route's preferred source, else the first
    /// address of the output device of the same family whose prefix covers the destination
    /// or gateway, else its first address of that family.
    pub fn source_for(&self, route: &Route, dst: IpAddr) -> Option<IpAddr> {
        if let Some(s) = route.prefsrc {
            return Some(s);
        }
        let i = lock(&self.inner);
        let on_dev = || {
            i.addrs
                .iter()
                .filter(|a| a.ifindex == route.oif && a.addr.is_ipv4() == dst.is_ipv4())
        };
        if let IpAddr::V6(d6) = dst {
            // RFC 6724 5, rules 1, 2, 3 and 8 (as `ipv6_dev_get_saddr`): the destination
            // itself, then an address of the destination's scope or wider, not deprecated,
            // then the longest prefix shared with the destination.
            let ll = |a: &IfAddr| a.scope == RT_SCOPE_LINK;
            let dst_ll = d6.segments()[0] & 0xffc0 == 0xfe80 || d6.is_multicast();
            // Reversed: among equals the first address wins.
            return on_dev()
                .rev()
                .max_by_key(|a| {
                    let common = match a.addr {
                        IpAddr::V6(s) => (u128::from(s) ^ u128::from(d6)).leading_zeros(),
                        IpAddr::V4(_) => 0,
                    };
                    (
                        a.addr == dst,
                        dst_ll || !ll(a),
                        dst_ll == ll(a),
                        a.flags & IFA_F_DEPRECATED == 0,
                        common,
                    )
                })
                .map(|a| a.addr);
        }
        let hop = route.gateway.unwrap_or(dst);
        on_dev()
            .find(|a| prefix_match(a.addr, hop, a.prefix_len))
            .or_else(|| on_dev().next())
            .map(|a| a.addr)
    }

    /// Changes the lifetimes or flags of address `addr` of `ifindex` with `f` (a router
    /// advertisement refreshing a prefix, `inet6_addr_modify`); `EADDRNOTAVAIL` if absent.
    /// Announced as `RTM_NEWADDR`, as Linux does.
    pub fn update_addr(
        &self,
        ns: &Arc<NetNs>,
        ifindex: i32,
        addr: IpAddr,
        f: impl FnOnce(&mut IfAddr),
    ) -> SysResult<()> {
        let a = {
            let mut i = lock(&self.inner);
            let a = i
                .addrs
                .iter_mut()
                .find(|b| b.ifindex == ifindex && b.addr == addr)
                .ok_or(Errno::EADDRNOTAVAIL)?;
            let (keep_addr, keep_dev) = (a.addr, a.ifindex);
            f(a);
            (a.addr, a.ifindex) = (keep_addr, keep_dev);
            a.clone()
        };
        notify(ns, &[Event::NewAddr(a)]);
        Ok(())
    }

    /// Sets the expiry of the routes `pick` selects (`rt6_set_expires`); announced as
    /// `RTM_NEWROUTE`. Returns how many it changed.
    pub fn set_route_expiry(
        &self,
        ns: &Arc<NetNs>,
        pick: impl Fn(&Route) -> bool,
        expires: Option<Instant>,
    ) -> usize {
        let changed: Vec<Route> = {
            let mut i = lock(&self.inner);
            i.routes
                .iter_mut()
                .filter(|r| pick(r) && r.expires != expires)
                .map(|r| {
                    r.expires = expires;
                    r.clone()
                })
                .collect()
        };
        let n = changed.len();
        notify(
            ns,
            &changed.into_iter().map(Event::NewRoute).collect::<Vec<_>>(),
        );
        n
    }

    /// Lifetimes that ran out by `now`: addresses past their valid lifetime are removed (with
    /// their routes), those past their preferred one marked `IFA_F_DEPRECATED`, expired
    /// routes removed (Linux `addrconf_verify_rtnl`, the fib6 garbage collector). Returns the
    /// next deadline, if any lifetime is left.
    pub fn expire(&self, ns: &Arc<NetNs>, now: Instant) -> Option<Instant> {
        let (dead, deprecated, routes) = {
            let mut i = lock(&self.inner);
            let dead: Vec<(i32, IpAddr)> = i
                .addrs
                .iter()
                .filter(|a| a.valid_until.is_some_and(|t| t <= now))
                .map(|a| (a.ifindex, a.addr))
                .collect();
            let mut deprecated = vec![];
            for a in i.addrs.iter_mut() {
                if a.flags & IFA_F_DEPRECATED == 0 && a.preferred_until.is_some_and(|t| t <= now) {
                    a.flags |= IFA_F_DEPRECATED;
                    deprecated.push(Event::NewAddr(a.clone()));
                }
            }
            let (gone, kept): (Vec<Route>, Vec<Route>) = i
                .routes
                .drain(..)
                .partition(|r| r.expires.is_some_and(|t| t <= now));
            i.routes = kept;
            (dead, deprecated, gone)
        };
        notify(ns, &deprecated);
        notify(
            ns,
            &routes.into_iter().map(Event::DelRoute).collect::<Vec<_>>(),
        );
        for (ifindex, addr) in dead {
            let _ = self.del_addr(ns, ifindex, addr);
        }
        let i = lock(&self.inner);
        let a = i.addrs.iter().flat_map(|a| {
            [
                a.valid_until,
                a.preferred_until
                    .filter(|_| a.flags & IFA_F_DEPRECATED == 0),
            ]
        });
        let r = i.routes.iter().map(|r| r.expires);
        a.chain(r).flatten().min()
    }
}

/// A new namespace with its lo brought up (what a test of the socket layer wants; a new
/// namespace's lo starts down, as on Linux).
#[cfg(test)]
pub fn test_ns() -> Arc<NetNs> {
    let ns = NetNs::new();
    devices(&ns)
        .set_flags(&ns, LO_IFINDEX, IFF_UP)
        .expect("lo up");
    ns
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Null;
    impl NetDevOps for Null {
        fn xmit(&self, _: &[u8]) -> bool {
            true
        }
    }

    fn v4(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn lo_and_its_routes() {
        let d = NetDevices::default();
        let lo = d.by_name("lo").unwrap();
        assert_eq!(lo.ifindex, LO_IFINDEX);
        assert!(lo.is_up() && lo.is_loopback());
        let r = d.lookup(v4("127.1.2.3")).unwrap();
        assert_eq!(
            (r.kind, r.table, r.oif),
            (RTN_LOCAL, RT_TABLE_LOCAL, LO_IFINDEX)
        );
        assert!(d.lookup(v4("10.0.2.2")).is_none());
        assert!(d.lookup("::1".parse().unwrap()).is_some());
    }

    #[test]
    fn address_brings_prefix_route_and_down_takes_it() {
        let ns = test_ns();
        let d = devices(&ns);
        let eth = d
            .register(&ns, "eth0", 1, [2, 0, 0, 0, 0, 1], 1500, 0, Arc::new(Null))
            .unwrap();
        assert_eq!(eth.ifindex, 2);
        assert_eq!(
            d.register(&ns, "eth0", 1, [0; 6], 1500, 0, Arc::new(Null))
                .unwrap_err(),
            Errno::EEXIST
        );
        d.add_addr(&ns, IfAddr::new(2, v4("10.0.2.15"), 24, "eth0"))
            .unwrap();
        // Down: no routes yet.
        assert!(d.lookup(v4("10.0.2.2")).is_none());
        d.set_flags(&ns, 2, IFF_UP).unwrap();
        assert!(eth.flags() & IFF_RUNNING != 0);
        let r = d.lookup(v4("10.0.2.2")).unwrap();
        assert_eq!((r.oif, r.dst_len, r.scope), (2, 24, RT_SCOPE_LINK));
        assert_eq!(d.source_for(&r, v4("10.0.2.2")), Some(v4("10.0.2.15")));
        // A default route through the gateway; one through an unreachable gateway fails.
        let def = Route {
            dst: v4("0.0.0.0"),
            dst_len: 0,
            gateway: Some(v4("10.0.2.2")),
            oif: 2,
            table: RT_TABLE_MAIN,
            protocol: 3,
            scope: RT_SCOPE_UNIVERSE,
            kind: RTN_UNICAST,
            priority: 0,
            prefsrc: None,
            expires: None,
        };
        d.add_route(&ns, def.clone()).unwrap();
        assert_eq!(d.add_route(&ns, def.clone()).unwrap_err(), Errno::EEXIST);
        let bad = Route {
            gateway: Some(v4("192.0.2.1")),
            priority: 5,
            ..def.clone()
        };
        assert_eq!(d.add_route(&ns, bad).unwrap_err(), Errno::ENETUNREACH);
        assert_eq!(
            d.lookup(v4("192.0.2.9")).unwrap().gateway,
            Some(v4("10.0.2.2"))
        );
        d.set_flags(&ns, 2, 0).unwrap();
        assert!(d.lookup(v4("192.0.2.9")).is_none());
        assert_eq!(
            d.addrs().len(),
            3,
            "IPv4 addresses stay when the device goes down"
        );
        d.set_flags(&ns, 2, IFF_UP).unwrap();
        assert!(d.lookup(v4("10.0.2.3")).is_some());
        d.del_addr(&ns, 2, v4("10.0.2.15")).unwrap();
        assert!(d.lookup(v4("10.0.2.3")).is_none());
        assert_eq!(
            d.del_addr(&ns, 2, v4("10.0.2.15")).unwrap_err(),
            Errno::EADDRNOTAVAIL
        );
    }

    #[test]
    fn prefixes() {
        assert!(prefix_match(v4("10.0.2.15"), v4("10.0.2.2"), 24));
        assert!(!prefix_match(v4("10.0.3.15"), v4("10.0.2.2"), 24));
        assert!(prefix_match(v4("1.2.3.4"), v4("9.9.9.9"), 0));
        assert!(!prefix_match(v4("1.2.3.4"), "::1".parse().unwrap(), 0));
        assert_eq!(network(v4("10.0.2.15"), 24), v4("10.0.2.0"));
    }
}
