//! IPv6 stateless address autoconfiguration of Ethernet devices (Linux `net/ipv6/addrconf.c`,
//! `net/ipv6/ndisc.c` `ndisc_router_discovery`; RFC 4861 6.3.4 and 6.3.7, RFC 4862).
//!
//! What it owns: the link-local address a device gets when it comes up (`fe80::` + the EUI-64
//! of its MAC, `addr_gen_mode` 0; mode 1 makes none), the Router Solicitations sent then, and
//! what a Router Advertisement received on the device configures in [`crate::dev`]: a default
//! route through the router's link-local address (`proto ra`, metric 1024, expiring with the
//! router lifetime), a prefix route for an on-link prefix and, for an autonomous /64 prefix,
//! an address of the prefix and the EUI-64 interface identifier, `dynamic`, with the valid and
//! preferred lifetimes the advertisement gives (RFC 4862 5.5.3, its two-hour rule included).
//! The values of `/proc/sys/net/ipv6/conf/{all,default}` decide ([`crate::sysctl::ipv6_conf`]):
//! `disable_ipv6`, `accept_ra` (1 unless `forwarding`, or 2), `accept_ra_defrtr`,
//! `accept_ra_pinfo`, `autoconf`, `addr_gen_mode`, `rtr_solicits`, `rtr_solicit_interval`.
//! A device going down loses what autoconfiguration gave it (`addrconf_ifdown`); addresses
//! the user added stay, as IPv4 ones do here.
//!
//! Neighbours: [`crate::dev`] (a notifier sees devices come up and go down, an rx handler
//! sees every received frame; addresses and routes are changed through its methods, and its
//! [`crate::dev::NetDevices::expire`] runs lifetimes out), [`crate::stack`] (which mirrors the
//! result into smoltcp), rtnetlink (which shows the lifetimes). One kernel thread, `addrconf`,
//! sends the solicitations and expires lifetimes; nothing here is held across a call into
//! `crate::dev`.
//!
//! Not done: duplicate address detection (addresses are usable at once, never `tentative`),
//! stable-privacy and random interface identifiers (`addr_gen_mode` 2 and 3 act as 0),
//! temporary addresses (`use_tempaddr`), more than one prefix option per advertisement (the
//! last counts: smoltcp's parser keeps one), the advertised MTU and hop limit, RDNSS,
//! route preferences and information options.

use crate::dev::{self, Event, IfAddr, NetDevice, Route};
use crate::sysctl::ipv6_conf;
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr, Icmpv6Packet, Icmpv6Repr,
    IpProtocol, Ipv6Packet, Ipv6Repr, NdiscPrefixInfoFlags, NdiscRepr,
};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};
use um_kernel::netns::NetNs;
use um_kernel::task::lock;
use um_uapi::abi::netdevice::{
    ARPHRD_ETHER, IFA_F_DEPRECATED, IFA_F_PERMANENT, RT_SCOPE_UNIVERSE, RT_TABLE_MAIN, RTN_UNICAST,
    RTPROT_KERNEL, RTPROT_RA,
};

/// The metric of a default route from a router advertisement (`IP6_RT_PRIO_USER`).
pub const RA_DEFAULT_METRIC: u32 = 1024;
/// The metric of a prefix route (`IP6_RT_PRIO_ADDRCONF`).
pub const PREFIX_METRIC: u32 = 256;
/// RFC 4862 5.5.3 (e): a valid lifetime is not cut below two hours by an unauthenticated
/// advertisement.
const TWO_HOURS: Duration = Duration::from_secs(7200);
/// A lifetime field of all ones is infinite (RFC 4861 4.6.2).
const INFINITE: u64 = 0xffff_ffff;
/// The Ethernet header.
const ETH_HLEN: usize = 14;

/// The interface identifier from a MAC (RFC 4291 appendix A, modified EUI-64: ff:fe in the
/// middle and the universal/local bit inverted).
pub fn eui64(mac: [u8; 6]) -> [u8; 8] {
    [
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}

/// `prefix`'s first 64 bits and `iid`.
pub fn with_iid(prefix: Ipv6Addr, iid: [u8; 8]) -> Ipv6Addr {
    let mut o = prefix.octets();
    o[8..].copy_from_slice(&iid);
    Ipv6Addr::from(o)
}

fn is_link_local(a: Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

/// Devices autoconfiguration looks after: Ethernet ones with a unicast MAC.
fn eligible(d: &NetDevice) -> bool {
    !d.is_loopback() && d.kind == ARPHRD_ETHER && d.mac[0] & 1 == 0 && d.mac != [0; 6]
}

/// Whether `ns` takes router advertisements (`ipv6_accept_ra`: `accept_ra` 1 on a host, 2
/// even when forwarding) and has IPv6 at all.
fn accept_ra(ns: &NetNs) -> bool {
    if ipv6_conf(ns, "disable_ipv6") != 0 {
        return false;
    }
    match ipv6_conf(ns, "accept_ra") {
        1 => ipv6_conf(ns, "forwarding") == 0,
        2 => true,
        _ => false,
    }
}

/// A device waiting for a router (RFC 4861 6.3.7).
struct Solicit {
    dev: Weak<NetDevice>,
    /// Solicitations sent so far.
    sent: u32,
    /// The wait before the next one (doubling up to `rtr_solicit_max_interval`, RFC 7559).
    interval: Duration,
    next: Instant,
}

#[derive(Default)]
struct State {
    solicit: Vec<Solicit>,
    /// Namespaces with lifetimes to run out.
    nets: Vec<Weak<NetNs>>,
    kicked: bool,
}

struct Timer {
    st: Mutex<State>,
    cv: Condvar,
}

fn timer() -> &'static Timer {
    static T: OnceLock<&'static Timer> = OnceLock::new();
    T.get_or_init(|| {
        let t: &'static Timer = Box::leak(Box::new(Timer {
            st: Mutex::new(State::default()),
            cv: Condvar::new(),
        }));
        if let Err(e) = std::thread::Builder::new()
            .name("addrconf".into())
            .spawn(move || run(t))
        {
            log::error!("addrconf: cannot start its thread: {e}");
        }
        t
    })
}

impl Timer {
    fn kick(&self, f: impl FnOnce(&mut State)) {
        let mut s = lock(&self.st);
        f(&mut s);
        s.kicked = true;
        self.cv.notify_one();
    }

    fn watch(&self, ns: &Arc<NetNs>) {
        self.kick(|s| {
            if !s
                .nets
                .iter()
                .any(|w| w.upgrade().is_some_and(|n| Arc::ptr_eq(&n, ns)))
            {
                s.nets.push(Arc::downgrade(ns));
            }
        });
    }
}

/// The `addrconf` thread: sends due solicitations and expires lifetimes.
fn run(t: &'static Timer) {
    loop {
        let now = Instant::now();
        let (due, nets) = {
            let mut s = lock(&t.st);
            s.kicked = false;
            s.solicit.retain(|x| x.dev.strong_count() > 0);
            s.nets.retain(|w| w.strong_count() > 0);
            let mut due = vec![];
            for x in s.solicit.iter_mut().filter(|x| x.next <= now) {
                if let Some(d) = x.dev.upgrade() {
                    due.push(d);
                }
                x.sent += 1;
                x.next = now + x.interval;
                x.interval = (x.interval * 2).min(max_interval(&x.dev));
            }
            // rtr_solicits >= 0 bounds how many are sent (-1: no bound).
            s.solicit.retain(|x| {
                let max = x
                    .dev
                    .upgrade()
                    .and_then(|d| d.netns())
                    .map_or(0, |ns| ipv6_conf(&ns, "rtr_solicits"));
                max < 0 || x.sent < max as u32
            });
            (
                due,
                s.nets.iter().filter_map(Weak::upgrade).collect::<Vec<_>>(),
            )
        };
        for d in due {
            send_rs(&d);
        }
        let mut next: Option<Instant> = None;
        for ns in &nets {
            if let Some(t) = dev::devices(ns).expire(ns, Instant::now()) {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        let mut s = lock(&t.st);
        if let Some(t) = s.solicit.iter().map(|x| x.next).min() {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        if !s.kicked {
            s = match next {
                None => t.cv.wait(s).unwrap_or_else(|e| e.into_inner()),
                Some(when) => {
                    let d = when.saturating_duration_since(Instant::now());
                    // Lifetimes are in seconds: a little late is fine, and it batches.
                    let d = d + Duration::from_millis(5);
                    t.cv.wait_timeout(s, d).unwrap_or_else(|e| e.into_inner()).0
                }
            };
        }
        drop(s);
    }
}

fn max_interval(d: &Weak<NetDevice>) -> Duration {
    let s = d
        .upgrade()
        .and_then(|d| d.netns())
        .map_or(3600, |ns| ipv6_conf(&ns, "rtr_solicit_max_interval"));
    Duration::from_secs(s.max(1) as u64)
}

/// The device's link-local address, if it has one.
fn link_local(ns: &Arc<NetNs>, d: &NetDevice) -> Option<Ipv6Addr> {
    dev::devices(ns)
        .addrs()
        .into_iter()
        .find_map(|a| match a.addr {
            IpAddr::V6(v) if a.ifindex == d.ifindex && is_link_local(v) => Some(v),
            _ => None,
        })
}

/// Sends a Router Solicitation to all-routers (RFC 4861 4.1), from the link-local address
/// with the source link-layer option, or from `::` without it.
fn send_rs(d: &Arc<NetDevice>) {
    let Some(ns) = d.netns() else { return };
    if !d.is_up() || !accept_ra(&ns) {
        return;
    }
    let src = link_local(&ns, d).unwrap_or(Ipv6Addr::UNSPECIFIED);
    let dst = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);
    let mac = EthernetAddress(d.mac);
    let icmp = Icmpv6Repr::Ndisc(NdiscRepr::RouterSolicit {
        lladdr: (!src.is_unspecified()).then(|| mac.into()),
    });
    let ip = Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Icmpv6,
        payload_len: icmp.buffer_len(),
        hop_limit: 255,
    };
    let eth = EthernetRepr {
        src_addr: mac,
        dst_addr: EthernetAddress([0x33, 0x33, 0, 0, 0, 2]),
        ethertype: EthernetProtocol::Ipv6,
    };
    let mut buf = vec![0u8; ETH_HLEN + ip.buffer_len() + icmp.buffer_len()];
    let mut f = EthernetFrame::new_unchecked(&mut buf[..]);
    eth.emit(&mut f);
    let mut p = Ipv6Packet::new_unchecked(f.payload_mut());
    ip.emit(&mut p);
    let mut m = Icmpv6Packet::new_unchecked(p.payload_mut());
    icmp.emit(&src, &dst, &mut m, &ChecksumCapabilities::default());
    let _ = dev::dev_queue_xmit(d, &buf);
}

/// The notifier: a device that came up gets its link-local address and solicits; one that
/// went down loses what autoconfiguration gave it.
fn notify(ns: &Arc<NetNs>, e: &Event) {
    let Event::Link(d) = e else { return };
    if !eligible(d) {
        return;
    }
    let w = Arc::downgrade(d);
    let was_up = {
        let mut up = lock(&UP);
        up.retain(|x| x.strong_count() > 0);
        let was = up.iter().any(|x| x.ptr_eq(&w));
        if d.is_up() && !was {
            up.push(w.clone());
        } else if !d.is_up() {
            up.retain(|x| !x.ptr_eq(&w));
        }
        was
    };
    let devs = dev::devices(ns);
    let ll = with_iid(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), eui64(d.mac));
    if d.is_up() {
        // An MTU or name change of an up device is a Link event too: only a device that just
        // came up is configured (`addrconf_notify` NETDEV_UP).
        if was_up || ipv6_conf(ns, "disable_ipv6") != 0 {
            return;
        }
        if link_local(ns, d).is_none() && ipv6_conf(ns, "addr_gen_mode") != 1 {
            let _ = devs.add_addr(ns, IfAddr::new(d.ifindex, IpAddr::V6(ll), 64, &d.name()));
        }
        if accept_ra(ns) {
            let interval = Duration::from_secs(ipv6_conf(ns, "rtr_solicit_interval").max(1) as u64);
            timer().kick(|s| {
                s.solicit.retain(|x| !x.dev.ptr_eq(&w));
                s.solicit.push(Solicit {
                    dev: w,
                    sent: 0,
                    interval,
                    next: Instant::now(),
                });
            });
        }
    } else if was_up {
        timer().kick(|s| s.solicit.retain(|x| !x.dev.ptr_eq(&w)));
        for a in devs.addrs() {
            let auto = a.flags & IFA_F_PERMANENT == 0 || a.addr == IpAddr::V6(ll);
            if a.ifindex == d.ifindex && a.addr.is_ipv6() && auto {
                let _ = devs.del_addr(ns, a.ifindex, a.addr);
            }
        }
    }
}

/// The devices autoconfiguration saw come up (and not yet go down).
static UP: Mutex<Vec<Weak<NetDevice>>> = Mutex::new(Vec::new());

/// The rx handler: Router Advertisements (RFC 4861 6.1.2: from a link-local address, hop
/// limit 255, a valid checksum) on a device that takes them.
fn rx(d: &Arc<NetDevice>, frame: &[u8]) {
    // Cheap filter first: IPv6, ICMPv6 (no extension headers), type 134.
    if frame.len() < ETH_HLEN + 40 + 16
        || frame[12..14] != [0x86, 0xdd]
        || frame[ETH_HLEN + 6] != 58
        || frame[ETH_HLEN + 40] != 134
        || !eligible(d)
        || !d.is_up()
    {
        return;
    }
    let Some(ns) = d.netns() else { return };
    if !accept_ra(&ns) {
        return;
    }
    let Ok(p) = Ipv6Packet::new_checked(&frame[ETH_HLEN..]) else {
        return;
    };
    let Ok(ip) = Ipv6Repr::parse(&p) else { return };
    if ip.hop_limit != 255 || !is_link_local(ip.src_addr) {
        return;
    }
    let Ok(m) = Icmpv6Packet::new_checked(p.payload()) else {
        return;
    };
    let Ok(Icmpv6Repr::Ndisc(NdiscRepr::RouterAdvert {
        router_lifetime,
        prefix_info,
        ..
    })) = Icmpv6Repr::parse(
        &ip.src_addr,
        &ip.dst_addr,
        &m,
        &ChecksumCapabilities::default(),
    )
    else {
        return;
    };
    let prefix = prefix_info.map(|p| Prefix {
        prefix: p.prefix,
        len: p.prefix_len,
        on_link: p.flags.contains(NdiscPrefixInfoFlags::ON_LINK),
        autonomous: p.flags.contains(NdiscPrefixInfoFlags::ADDRCONF),
        valid: p.valid_lifetime.secs(),
        preferred: p.preferred_lifetime.secs(),
    });
    // A router answered: stop soliciting.
    let w = Arc::downgrade(d);
    timer().kick(|s| s.solicit.retain(|x| !x.dev.ptr_eq(&w)));
    advert(
        &ns,
        d,
        ip.src_addr,
        router_lifetime.secs(),
        prefix,
        Instant::now(),
    );
    timer().watch(&ns);
}

/// A Prefix Information option (RFC 4861 4.6.2), lifetimes in seconds.
#[derive(Clone, Copy, Debug)]
pub struct Prefix {
    pub prefix: Ipv6Addr,
    pub len: u8,
    pub on_link: bool,
    pub autonomous: bool,
    pub valid: u64,
    pub preferred: u64,
}

fn until(now: Instant, secs: u64) -> Option<Instant> {
    (secs < INFINITE).then(|| now + Duration::from_secs(secs))
}

/// Applies a Router Advertisement from `router` (`ndisc_router_discovery`,
/// `addrconf_prefix_rcv`).
pub fn advert(
    ns: &Arc<NetNs>,
    d: &Arc<NetDevice>,
    router: Ipv6Addr,
    lifetime: u64,
    prefix: Option<Prefix>,
    now: Instant,
) {
    let devs = dev::devices(ns);
    let any = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
    let gw = IpAddr::V6(router);
    if ipv6_conf(ns, "accept_ra_defrtr") != 0 {
        let is_it = |r: &Route| {
            r.dst == any && r.dst_len == 0 && r.gateway == Some(gw) && r.oif == d.ifindex
        };
        let have = devs.routes().iter().any(is_it);
        if lifetime == 0 {
            if have {
                let _ = devs.del_route(ns, any, 0, Some(gw), Some(d.ifindex), Some(RT_TABLE_MAIN));
            }
        } else if have {
            devs.set_route_expiry(ns, is_it, until(now, lifetime));
        } else {
            let r = Route {
                dst: any,
                dst_len: 0,
                gateway: Some(gw),
                oif: d.ifindex,
                table: RT_TABLE_MAIN,
                protocol: RTPROT_RA,
                scope: RT_SCOPE_UNIVERSE,
                kind: RTN_UNICAST,
                priority: RA_DEFAULT_METRIC,
                prefsrc: None,
                expires: until(now, lifetime),
            };
            if let Err(e) = devs.add_route(ns, r) {
                log::debug!("addrconf: default route via {router}: {e:?}");
            }
        }
    }
    let Some(p) = prefix else { return };
    // RFC 4862 5.5.3 (a)-(c): no link-local prefix, preferred <= valid.
    if ipv6_conf(ns, "accept_ra_pinfo") == 0
        || is_link_local(p.prefix)
        || p.prefix.is_multicast()
        || p.preferred > p.valid
        || p.len > 128
    {
        return;
    }
    let net = dev::network(IpAddr::V6(p.prefix), p.len);
    if p.autonomous && ipv6_conf(ns, "autoconf") != 0 && p.len == 64 {
        let IpAddr::V6(net6) = net else { return };
        let addr = IpAddr::V6(with_iid(net6, eui64(d.mac)));
        let existing = devs
            .addrs()
            .into_iter()
            .find(|a| a.ifindex == d.ifindex && a.addr == addr);
        match existing {
            None if p.valid > 0 => {
                let a = IfAddr {
                    flags: 0,
                    scope: RT_SCOPE_UNIVERSE,
                    valid_until: until(now, p.valid),
                    preferred_until: until(now, p.preferred),
                    ..IfAddr::new(d.ifindex, addr, 64, &d.name())
                };
                if let Err(e) = devs.add_addr(ns, a) {
                    log::debug!("addrconf: {addr}: {e:?}");
                }
            }
            None => {}
            // A permanent address of the same value is the user's: left alone.
            Some(a) if a.flags & IFA_F_PERMANENT != 0 => {}
            Some(a) => {
                // RFC 4862 5.5.3 (e).
                let left = a
                    .valid_until
                    .map_or(u64::MAX, |t| t.saturating_duration_since(now).as_secs());
                let valid = if p.valid > TWO_HOURS.as_secs() || p.valid > left {
                    until(now, p.valid)
                } else if left <= TWO_HOURS.as_secs() {
                    a.valid_until
                } else {
                    Some(now + TWO_HOURS)
                };
                let preferred = until(now, p.preferred);
                let _ = devs.update_addr(ns, d.ifindex, addr, |a| {
                    a.valid_until = valid;
                    a.preferred_until = preferred;
                    if p.preferred > 0 {
                        a.flags &= !IFA_F_DEPRECATED;
                    }
                });
            }
        }
    }
    if p.on_link {
        let is_it = |r: &Route| {
            r.dst == net
                && r.dst_len == p.len
                && r.gateway.is_none()
                && r.oif == d.ifindex
                && r.table == RT_TABLE_MAIN
        };
        if p.valid == 0 {
            let _ = devs.del_route(ns, net, p.len, None, Some(d.ifindex), Some(RT_TABLE_MAIN));
        } else if devs.routes().iter().any(is_it) {
            devs.set_route_expiry(ns, is_it, until(now, p.valid));
        } else {
            let r = Route {
                dst: net,
                dst_len: p.len,
                gateway: None,
                oif: d.ifindex,
                table: RT_TABLE_MAIN,
                protocol: RTPROT_KERNEL,
                scope: RT_SCOPE_UNIVERSE,
                kind: RTN_UNICAST,
                priority: PREFIX_METRIC,
                prefsrc: None,
                expires: until(now, p.valid),
            };
            let _ = devs.add_route(ns, r);
        }
    }
}

/// Registers the notifier and the rx handler (once, at boot; unit tests call it too).
pub fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        dev::register_notifier(notify);
        dev::register_rx_handler(rx);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eui64_of_the_nic() {
        let mac = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
        let a = with_iid("fd00::".parse().unwrap(), eui64(mac));
        assert_eq!(a, "fd00::5054:ff:fe12:3456".parse::<Ipv6Addr>().unwrap());
        let ll = with_iid("fe80::".parse().unwrap(), eui64(mac));
        assert_eq!(ll, "fe80::5054:ff:fe12:3456".parse::<Ipv6Addr>().unwrap());
    }
}
