//! rtnetlink (`NETLINK_ROUTE`; Linux `net/core/rtnetlink.c`, `net/ipv4/devinet.c`,
//! `net/ipv6/addrconf.c`, `net/ipv4/fib_frontend.c`, `net/ipv4/route.c`, rtnetlink(7)), over
//! the device registry [`crate::dev`], which is the only state it reads or changes.
//!
//! - `RTM_GETLINK`: a dump of every device, or one by `ifi_index` / `IFLA_IFNAME` (`ENODEV`).
//!   The attributes `ip link` prints, in `rtnl_fill_ifinfo`'s order: name, queue length,
//!   operational state (lo: unknown, others up or down), MTU and its bounds, group, queue
//!   counts, carrier, map, hardware and broadcast address, qdisc ("noqueue" on lo, "noop"
//!   while down, "pfifo_fast" otherwise), `IFLA_STATS64` and `IFLA_STATS`.
//! - `RTM_NEWLINK`/`RTM_SETLINK` on an existing device: flags (`ifi_flags` under
//!   `ifi_change`), `IFLA_MTU`, `IFLA_TXQLEN`, `IFLA_IFNAME` (a rename, `EBUSY` while up).
//!   Creating devices is `EOPNOTSUPP` ("Unknown device type"), `RTM_DELLINK` too.
//! - `RTM_GETADDR` (dump; IPv4 then IPv6 for `AF_UNSPEC`), `RTM_NEWADDR` (`EEXIST` unless
//!   `NLM_F_REPLACE`), `RTM_DELADDR` (`EADDRNOTAVAIL`), IPv4 and IPv6.
//! - `RTM_GETROUTE`: a dump of every table (the caller filters, as no `NLM_F_DUMP_FILTERED`
//!   is set), or one lookup (`ip route get`: a cloned route with the source chosen, or
//!   with `RTM_F_FIB_MATCH` the table entry; `ENETUNREACH` if none). `RTM_NEWROUTE` /
//!   `RTM_DELROUTE` (`ESRCH`).
//! - Other `GET` dumps (neighbours, rules, qdiscs, netconf...) are empty; other requests
//!   `EOPNOTSUPP`. Every change needs `CAP_NET_ADMIN` (`EPERM`), as `rtnetlink_rcv_msg`.
//!
//! [`event_messages`] turns a registry event into the notification Linux multicasts.

use super::msg::{self, Msg};
use super::{Answer, NlError, NlResult, Request};
use crate::dev::{self, IfAddr, NetDevice, NetDevices, Route};
use crate::{AF_INET, AF_INET6, AF_UNSPEC};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use um_kernel::netns::NetNs;
use um_uapi::Errno;
use um_uapi::abi::netdevice::*;
use um_uapi::abi::netlink::ifa::*;
use um_uapi::abi::netlink::ifla::*;
use um_uapi::abi::netlink::rta::*;
use um_uapi::abi::netlink::rtm::*;
use um_uapi::abi::netlink::*;
use um_uapi::abi::pod::Pod;

/// `RTCF_LOCAL`: a route lookup's answer is delivered locally (`ip route get`'s `<local>`).
const RTCF_LOCAL: u32 = 0x8000_0000;
/// `IP6_RT_PRIO_USER`: the metric of an IPv6 route added without one.
const IP6_RT_PRIO_USER: u32 = 1024;
/// `IFA_F_*` a request may set on an IPv6 address (`inet6_rtm_newaddr`).
const IFA6_USER_FLAGS: u32 = IFA_F_NODAD | 0x10 | 0x100 | IFA_F_NOPREFIXROUTE | 0x400;

fn err(e: Errno, m: &'static str) -> NlError {
    NlError(e, Some(m))
}

/// Handles one rtnetlink request.
pub fn handle(r: &Request<'_>) -> NlResult {
    let ty = r.hdr.nlmsg_type;
    if ty > RTM_MAX {
        return Err(Errno::EOPNOTSUPP.into());
    }
    // rtnetlink_rcv_msg: shorter than a `struct rtgenmsg` is ignored.
    if r.payload.is_empty() {
        return Ok(Answer::Done);
    }
    let kind = (ty - RTM_NEWLINK) & 3;
    let dump = kind == 2 && r.hdr.nlmsg_flags & NLM_F_DUMP == NLM_F_DUMP;
    if kind != 2 && !r.admin {
        return Err(Errno::EPERM.into());
    }
    let d = dev::devices(r.net);
    let family = u32::from(r.payload[0]);
    let (seq, pid) = (r.hdr.nlmsg_seq, r.portid);
    match ty {
        // inet6_dump_ifinfo: IPv6's own, shorter, link messages.
        RTM_GETLINK if dump && family == AF_INET6 => Ok(Answer::Dump(
            d.list().iter().map(|dv| fill_link6(dv, seq, pid)).collect(),
        )),
        RTM_GETLINK if dump => Ok(Answer::Dump(
            d.list()
                .iter()
                .map(|dv| fill_link(dv, RTM_NEWLINK, NLM_F_MULTI, seq, pid, 0))
                .collect(),
        )),
        RTM_GETLINK => {
            let (ifm, attrs) = header::<Ifinfomsg>(r.payload)?;
            let dv = find_link(&d, &ifm, attrs)?;
            Ok(Answer::Reply(vec![fill_link(
                &dv,
                RTM_NEWLINK,
                0,
                seq,
                pid,
                0,
            )]))
        }
        RTM_NEWLINK | RTM_SETLINK => set_link(r, &d),
        RTM_DELLINK => Err(err(Errno::EOPNOTSUPP, "Operation not supported")),
        RTM_GETADDR if dump => Ok(Answer::Dump(dump_addrs(&d, family, seq, pid))),
        RTM_NEWADDR => new_addr(r, &d),
        RTM_DELADDR => del_addr(r, &d),
        RTM_GETROUTE if dump => Ok(Answer::Dump(
            sorted_routes(&d)
                .iter()
                .filter(|rt| family_match(family, rt.dst))
                .map(|rt| fill_route(rt, RTM_NEWROUTE, NLM_F_MULTI, seq, pid))
                .collect(),
        )),
        RTM_GETRULE if dump => Ok(Answer::Dump(rules(family, seq, pid))),
        RTM_GETROUTE => get_route(r, &d),
        RTM_NEWROUTE => new_route(r, &d),
        RTM_DELROUTE => del_route(r, &d),
        // Neighbours, rules, qdiscs, netconf, statistics...: nothing to show.
        _ if dump => Ok(Answer::Dump(Vec::new())),
        _ => Err(Errno::EOPNOTSUPP.into()),
    }
}

/// `RTM_GETRULE`, `FRA_*`, `FR_ACT_TO_TBL` (`include/uapi/linux/fib_rules.h`).
const RTM_GETRULE: u16 = 34;
const RTM_NEWRULE: u16 = 32;
const FRA_PRIORITY: u16 = 6;
const FRA_TABLE: u16 = 15;
const FRA_SUPPRESS_PREFIXLEN: u16 = 14;
const FRA_PROTOCOL: u16 = 21;
const FR_ACT_TO_TBL: u8 = 1;
/// `RT_TABLE_DEFAULT`.
const RT_TABLE_DEFAULT: u8 = 253;
/// `IFLA_PROTINFO`.
const IFLA_PROTINFO: u16 = 12;

/// The default policy rules (`fib_default_rules_init`, `fib6_rules_net_init`): IPv4 looks in
/// local (0), main (32766) and default (32767); IPv6 in local and main. Rules cannot be
/// changed here.
fn rules(family: u32, seq: u32, pid: u32) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (fam, list) in [
        (
            AF_INET,
            &[
                (0u32, RT_TABLE_LOCAL),
                (32766, RT_TABLE_MAIN),
                (32767, RT_TABLE_DEFAULT),
            ][..],
        ),
        (
            AF_INET6,
            &[(0u32, RT_TABLE_LOCAL), (32766, RT_TABLE_MAIN)][..],
        ),
    ] {
        if family != AF_UNSPEC && family != fam {
            continue;
        }
        for &(pref, table) in list {
            let mut m = Msg::new(RTM_NEWRULE, NLM_F_MULTI, seq, pid);
            // struct fib_rule_hdr has rtmsg's layout: family, dst_len, src_len, tos, table,
            // res1, res2, action, flags.
            m.put(&Rtmsg {
                rtm_family: fam as u8,
                rtm_table: table,
                rtm_type: FR_ACT_TO_TBL,
                ..Rtmsg::default()
            });
            m.u32(FRA_TABLE, u32::from(table))
                .u32(FRA_SUPPRESS_PREFIXLEN, u32::MAX);
            if pref != 0 {
                m.u32(FRA_PRIORITY, pref);
            }
            m.u8(FRA_PROTOCOL, RTPROT_KERNEL);
            out.push(m.finish());
        }
    }
    out
}

/// The routes in the order Linux dumps them: by table (main before local, the hash order),
/// then by destination, longer prefixes first for one destination (the trie's leaves).
pub fn sorted_routes(d: &NetDevices) -> Vec<Route> {
    let mut v = d.routes();
    let key = |a: IpAddr| -> u128 {
        match a {
            IpAddr::V4(x) => u128::from(u32::from(x)),
            IpAddr::V6(x) => u128::from(x),
        }
    };
    v.sort_by(|a, b| {
        (
            a.dst.is_ipv6(),
            a.table,
            key(a.dst),
            std::cmp::Reverse(a.dst_len),
            a.priority,
        )
            .cmp(&(
                b.dst.is_ipv6(),
                b.table,
                key(b.dst),
                std::cmp::Reverse(b.dst_len),
                b.priority,
            ))
    });
    v
}

/// `inet6_fill_ifinfo`: a link as IPv6 describes it.
fn fill_link6(dv: &NetDevice, seq: u32, pid: u32) -> Vec<u8> {
    let mut m = Msg::new(RTM_NEWLINK, NLM_F_MULTI, seq, pid);
    m.put(&Ifinfomsg {
        ifi_family: AF_INET6 as u8,
        ifi_pad: 0,
        ifi_type: dv.kind,
        ifi_index: dv.ifindex,
        ifi_flags: dv.flags(),
        ifi_change: 0,
    });
    m.str(IFLA_IFNAME, &dv.name())
        .attr(IFLA_ADDRESS, &dv.mac)
        .u32(IFLA_MTU, dv.mtu())
        .u8(
            IFLA_OPERSTATE,
            if dv.is_up() {
                operstate(dv)
            } else {
                IF_OPER_DOWN
            },
        );
    let at = m.nest(IFLA_PROTINFO);
    m.end_nest(at);
    m.finish()
}

/// The family header `T` of a request and the attributes after it: `EINVAL` if short
/// (`nlmsg_parse`), or if the attributes are malformed.
fn header<T: Pod>(p: &[u8]) -> Result<(T, &[u8]), NlError> {
    let (h, _) = T::from_prefix(p).ok_or(Errno::EINVAL)?;
    let attrs = &p[msg::align(T::SIZE).min(p.len())..];
    if !msg::attrs_ok(attrs) {
        return Err(Errno::EINVAL.into());
    }
    Ok((h, attrs))
}

fn family_match(family: u32, a: IpAddr) -> bool {
    match family {
        AF_INET => a.is_ipv4(),
        AF_INET6 => a.is_ipv6(),
        _ => true,
    }
}

fn family_of(a: IpAddr) -> u8 {
    if a.is_ipv4() {
        AF_INET as u8
    } else {
        AF_INET6 as u8
    }
}

fn ip_bytes(a: IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// An address attribute of `family`: `EINVAL` for the wrong length.
fn parse_ip(family: u32, b: &[u8]) -> Result<IpAddr, NlError> {
    match (family, b.len()) {
        (AF_INET, 4) => Ok(IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))),
        (AF_INET6, 16) => {
            let mut o = [0u8; 16];
            o.copy_from_slice(b);
            Ok(IpAddr::V6(Ipv6Addr::from(o)))
        }
        _ => Err(Errno::EINVAL.into()),
    }
}

/// The operational state (`IF_OPER_*`): lo has none it tracks ("unknown") while up, as on
/// Linux; a device that is not running (lo of a new namespace too) is down.
pub fn operstate(dv: &NetDevice) -> u8 {
    if dv.flags() & IFF_RUNNING == 0 {
        IF_OPER_DOWN
    } else if dv.is_loopback() {
        IF_OPER_UNKNOWN
    } else if dv.flags() & IFF_RUNNING != 0 {
        IF_OPER_UP
    } else {
        IF_OPER_DOWN
    }
}

/// The queueing discipline `ip link` names.
fn qdisc(dv: &NetDevice) -> &'static str {
    if !dv.is_up() {
        "noop"
    } else if dv.is_loopback() {
        "noqueue"
    } else {
        "pfifo_fast"
    }
}

/// The 25 counters of `rtnl_link_stats64`.
pub fn link_stats(dv: &NetDevice) -> [u64; LINK_STATS_N] {
    use std::sync::atomic::Ordering::Relaxed;
    use um_uapi::abi::netlink::stats::*;
    let s = &dv.stats;
    let mut v = [0u64; LINK_STATS_N];
    v[RX_PACKETS] = s.rx_packets.load(Relaxed);
    v[TX_PACKETS] = s.tx_packets.load(Relaxed);
    v[RX_BYTES] = s.rx_bytes.load(Relaxed);
    v[TX_BYTES] = s.tx_bytes.load(Relaxed);
    v[RX_ERRORS] = s.rx_errors.load(Relaxed);
    v[TX_ERRORS] = s.tx_errors.load(Relaxed);
    v[RX_DROPPED] = s.rx_dropped.load(Relaxed);
    v[TX_DROPPED] = s.tx_dropped.load(Relaxed);
    v[MULTICAST] = s.multicast.load(Relaxed);
    v
}

/// The broadcast hardware address.
pub fn broadcast_mac(dv: &NetDevice) -> [u8; 6] {
    if dv.is_loopback() { [0; 6] } else { [0xff; 6] }
}

/// `rtnl_fill_ifinfo`.
pub fn fill_link(dv: &NetDevice, ty: u16, flags: u16, seq: u32, pid: u32, change: u32) -> Vec<u8> {
    let mut m = Msg::new(ty, flags, seq, pid);
    m.put(&Ifinfomsg {
        ifi_family: AF_UNSPEC as u8,
        ifi_pad: 0,
        ifi_type: dv.kind,
        ifi_index: dv.ifindex,
        ifi_flags: dv.flags(),
        ifi_change: change,
    });
    let (min_mtu, max_mtu) = if dv.is_loopback() {
        (0, 0)
    } else {
        (68, 65_535)
    };
    let carrier = u8::from(dv.is_loopback() || dv.flags() & IFF_RUNNING != 0);
    m.str(IFLA_IFNAME, &dv.name())
        .u32(IFLA_TXQLEN, dv.txqlen())
        .u8(IFLA_OPERSTATE, operstate(dv))
        .u8(IFLA_LINKMODE, 0)
        .u32(IFLA_MTU, dv.mtu())
        .u32(IFLA_MIN_MTU, min_mtu)
        .u32(IFLA_MAX_MTU, max_mtu)
        .u32(IFLA_GROUP, 0)
        .u32(IFLA_PROMISCUITY, u32::from(dv.flags() & IFF_PROMISC != 0))
        .u32(IFLA_ALLMULTI, u32::from(dv.flags() & IFF_ALLMULTI != 0))
        .u32(IFLA_NUM_TX_QUEUES, 1)
        .u32(IFLA_GSO_MAX_SEGS, 65_535)
        .u32(IFLA_GSO_MAX_SIZE, 65_536)
        .u32(IFLA_NUM_RX_QUEUES, 1)
        .u8(IFLA_CARRIER, carrier)
        .u32(IFLA_CARRIER_CHANGES, 0)
        .u32(IFLA_CARRIER_UP_COUNT, 0)
        .u32(IFLA_CARRIER_DOWN_COUNT, 0)
        .u8(IFLA_PROTO_DOWN, 0)
        .attr(IFLA_MAP, &RtnlLinkIfmap::default().as_bytes())
        .attr(IFLA_ADDRESS, &dv.mac)
        .attr(IFLA_BROADCAST, &broadcast_mac(dv))
        .str(IFLA_QDISC, qdisc(dv));
    let st = link_stats(dv);
    let s64: Vec<u8> = st.iter().flat_map(|v| v.to_le_bytes()).collect();
    let s32: Vec<u8> = st.iter().flat_map(|v| (*v as u32).to_le_bytes()).collect();
    m.attr(IFLA_STATS64, &s64).attr(IFLA_STATS, &s32);
    m.finish()
}

fn find_link(d: &NetDevices, ifm: &Ifinfomsg, attrs: &[u8]) -> Result<Arc<NetDevice>, NlError> {
    if ifm.ifi_index > 0 {
        return d
            .by_index(ifm.ifi_index)
            .ok_or_else(|| err(Errno::ENODEV, "Device not found"));
    }
    if let Some(n) = msg::find_str(attrs, IFLA_IFNAME) {
        return d
            .by_name(&n)
            .ok_or_else(|| err(Errno::ENODEV, "Device not found"));
    }
    Err(err(Errno::EINVAL, "Need ifindex or ifname"))
}

/// `rtnl_newlink` on an existing device (`do_setlink`).
fn set_link(r: &Request<'_>, d: &NetDevices) -> NlResult {
    let (ifm, attrs) = header::<Ifinfomsg>(r.payload)?;
    let dv = match find_link(d, &ifm, attrs) {
        Ok(dv) => dv,
        Err(e) => {
            if r.hdr.nlmsg_type == RTM_NEWLINK
                && r.hdr.nlmsg_flags & NLM_F_CREATE != 0
                && e.0 == Errno::ENODEV
            {
                return Err(err(Errno::EOPNOTSUPP, "Unknown device type"));
            }
            return Err(e);
        }
    };
    if r.hdr.nlmsg_type == RTM_NEWLINK && r.hdr.nlmsg_flags & NLM_F_EXCL != 0 {
        return Err(Errno::EEXIST.into());
    }
    let net = r.net;
    if let Some(mtu) = msg::find_u32(attrs, IFLA_MTU) {
        d.set_mtu(net, dv.ifindex, mtu)?;
    }
    if let Some(q) = msg::find_u32(attrs, IFLA_TXQLEN) {
        d.set_txqlen(net, dv.ifindex, q)?;
    }
    if ifm.ifi_index > 0
        && let Some(n) = msg::find_str(attrs, IFLA_IFNAME)
        && n != dv.name()
    {
        d.set_name(net, dv.ifindex, &n)?;
    }
    if let Some(a) = msg::find(attrs, IFLA_ADDRESS)
        && a != dv.mac
    {
        return Err(Errno::EOPNOTSUPP.into());
    }
    if ifm.ifi_flags != 0 || ifm.ifi_change != 0 {
        // rtnl_dev_combine_flags.
        let mut flags = ifm.ifi_flags;
        if ifm.ifi_change != 0 {
            flags = (flags & ifm.ifi_change) | (dv.flags() & !ifm.ifi_change);
        }
        d.set_flags(net, dv.ifindex, flags)?;
    }
    Ok(Answer::Done)
}

/// Seconds left until `t` (`INFINITY_LIFE_TIME` for none), as `inet6_fill_ifaddr` reports
/// `ifa_valid`/`ifa_prefered`.
fn secs_left(t: Option<std::time::Instant>) -> u32 {
    t.map_or(INFINITY_LIFE_TIME, |t| {
        let left = t.saturating_duration_since(std::time::Instant::now());
        left.as_secs().min(u64::from(INFINITY_LIFE_TIME - 1)) as u32
    })
}

/// `put_cacheinfo`: the address's remaining lifetimes (forever for a permanent one).
fn cacheinfo(a: &IfAddr) -> Vec<u8> {
    IfaCacheinfo {
        ifa_prefered: if a.flags & IFA_F_DEPRECATED != 0 {
            0
        } else {
            secs_left(a.preferred_until.or(a.valid_until))
        },
        ifa_valid: secs_left(a.valid_until),
        cstamp: 0,
        tstamp: 0,
    }
    .as_bytes()
}

/// `rtnl_put_cacheinfo` of a route: `rta_expires` in clock ticks (`USER_HZ`, 100 a second)
/// until it expires, 0 for a route that does not.
fn route_cacheinfo(rt: &Route) -> Vec<u8> {
    let expires = rt.expires.map_or(0, |t| {
        let left = t.saturating_duration_since(std::time::Instant::now());
        (left.as_millis() / 10).min(i32::MAX as u128) as i32
    });
    RtaCacheinfo {
        rta_expires: expires,
        ..RtaCacheinfo::default()
    }
    .as_bytes()
}

/// `inet_fill_ifaddr` / `inet6_fill_ifaddr`.
pub fn fill_addr(a: &IfAddr, ty: u16, flags: u16, seq: u32, pid: u32) -> Vec<u8> {
    let mut m = Msg::new(ty, flags, seq, pid);
    m.put(&Ifaddrmsg {
        ifa_family: family_of(a.addr),
        ifa_prefixlen: a.prefix_len,
        ifa_flags: a.flags as u8,
        ifa_scope: a.scope,
        ifa_index: a.ifindex as u32,
    });
    let ip = ip_bytes(a.addr);
    if a.addr.is_ipv4() {
        m.attr(IFA_ADDRESS, &ip).attr(IFA_LOCAL, &ip);
        if let Some(b) = a.broadcast {
            m.attr(IFA_BROADCAST, &b.octets());
        }
        m.str(IFA_LABEL, &a.label)
            .u32(IFA_FLAGS, a.flags)
            .attr(IFA_CACHEINFO, &cacheinfo(a));
    } else {
        m.attr(IFA_ADDRESS, &ip)
            .attr(IFA_CACHEINFO, &cacheinfo(a))
            .u32(IFA_FLAGS, a.flags);
    }
    m.finish()
}

fn dump_addrs(d: &NetDevices, family: u32, seq: u32, pid: u32) -> Vec<Vec<u8>> {
    let all = d.addrs();
    // rtnl_dump_all: IPv4's dump, then IPv6's; each in device order.
    let mut out = Vec::new();
    for v4 in [true, false] {
        if (v4 && family == AF_INET6) || (!v4 && family == AF_INET) {
            continue;
        }
        for dv in d.list() {
            let mut mine: Vec<(usize, &IfAddr)> = all
                .iter()
                .enumerate()
                .filter(|(_, a)| a.ifindex == dv.ifindex && a.addr.is_ipv4() == v4)
                .collect();
            if !v4 {
                // ipv6_link_dev_addr: wider source scope first, newest first among equals.
                mine.sort_by_key(|(k, a)| {
                    (std::cmp::Reverse(src_scope6(a.addr)), std::cmp::Reverse(*k))
                });
            }
            for (_, a) in mine {
                out.push(fill_addr(a, RTM_NEWADDR, NLM_F_MULTI, seq, pid));
            }
        }
    }
    out
}

/// `ipv6_addr_src_scope`: loopback 1, link-local 2, site-local 5, global 14.
fn src_scope6(a: IpAddr) -> u8 {
    match a {
        IpAddr::V6(v) if v.is_loopback() => 1,
        IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80 => 2,
        IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfec0 => 5,
        _ => 14,
    }
}

/// The address a request names (`IFA_LOCAL`, else `IFA_ADDRESS`).
fn req_addr(family: u32, attrs: &[u8]) -> Result<Option<IpAddr>, NlError> {
    match msg::find(attrs, IFA_LOCAL).or_else(|| msg::find(attrs, IFA_ADDRESS)) {
        Some(b) => Ok(Some(parse_ip(family, b)?)),
        None => Ok(None),
    }
}

/// `inet_rtm_newaddr` / `inet6_rtm_newaddr`.
fn new_addr(r: &Request<'_>, d: &NetDevices) -> NlResult {
    let (ifm, attrs) = header::<Ifaddrmsg>(r.payload)?;
    let family = u32::from(ifm.ifa_family);
    let max = match family {
        AF_INET => 32,
        AF_INET6 => 128,
        _ => return Err(Errno::EOPNOTSUPP.into()),
    };
    if ifm.ifa_prefixlen > max {
        return Err(Errno::EINVAL.into());
    }
    let ip = req_addr(family, attrs)?.ok_or(Errno::EINVAL)?;
    let dv = d
        .by_index(ifm.ifa_index as i32)
        .ok_or_else(|| err(Errno::ENODEV, "Device not found"))?;
    let flags = msg::find_u32(attrs, IFA_FLAGS).unwrap_or(u32::from(ifm.ifa_flags));
    let mut a = IfAddr::new(dv.ifindex, ip, ifm.ifa_prefixlen, &dv.name());
    if let IpAddr::V4(v4) = ip {
        if v4.is_multicast() {
            return Err(Errno::EINVAL.into());
        }
        a.scope = ifm.ifa_scope;
        a.flags = (flags & !(IFA_F_SECONDARY | 0x40)) | IFA_F_PERMANENT;
        if let Some(l) = msg::find_str(attrs, IFA_LABEL) {
            a.label = l;
        }
        if let Some(b) = msg::find(attrs, IFA_BROADCAST) {
            if let IpAddr::V4(b) = parse_ip(AF_INET, b)? {
                a.broadcast = Some(b);
            }
        }
        // inet_insert_ifa: a second address of a prefix the device has is secondary.
        if d.addrs().iter().any(|o| {
            o.ifindex == a.ifindex
                && o.addr.is_ipv4()
                && o.addr != ip
                && o.prefix_len == a.prefix_len
                && dev::prefix_match(o.addr, ip, a.prefix_len)
        }) {
            a.flags |= IFA_F_SECONDARY;
        }
    } else {
        if let IpAddr::V6(v6) = ip
            && v6.is_multicast()
        {
            return Err(Errno::EINVAL.into());
        }
        a.flags = (flags & IFA6_USER_FLAGS) | IFA_F_PERMANENT;
    }
    let exists = d
        .addrs()
        .iter()
        .any(|o| o.ifindex == a.ifindex && o.addr == ip);
    if exists {
        if r.hdr.nlmsg_flags & NLM_F_EXCL != 0 || r.hdr.nlmsg_flags & NLM_F_REPLACE == 0 {
            return Err(Errno::EEXIST.into());
        }
        d.del_addr(r.net, a.ifindex, ip)?;
    }
    d.add_addr(r.net, a)?;
    Ok(Answer::Done)
}

/// `inet_rtm_deladdr` / `inet6_rtm_deladdr`.
fn del_addr(r: &Request<'_>, d: &NetDevices) -> NlResult {
    let (ifm, attrs) = header::<Ifaddrmsg>(r.payload)?;
    let family = u32::from(ifm.ifa_family);
    if family != AF_INET && family != AF_INET6 {
        return Err(Errno::EOPNOTSUPP.into());
    }
    let v4 = family == AF_INET;
    let dv = d.by_index(ifm.ifa_index as i32).ok_or_else(|| {
        err(
            Errno::ENODEV,
            if v4 {
                "ipv4: Device not found"
            } else {
                "ipv6: Device not found"
            },
        )
    })?;
    let local = msg::find(attrs, IFA_LOCAL)
        .map(|b| parse_ip(family, b))
        .transpose()?;
    let address = msg::find(attrs, IFA_ADDRESS)
        .map(|b| parse_ip(family, b))
        .transpose()?;
    let label = msg::find_str(attrs, IFA_LABEL);
    let found = d.addrs().into_iter().find(|a| {
        a.ifindex == dv.ifindex
            && a.addr.is_ipv4() == v4
            && if v4 {
                local.is_none_or(|l| a.addr == l)
                    && label.as_ref().is_none_or(|l| *l == a.label)
                    && address.is_none_or(|p| {
                        ifm.ifa_prefixlen == a.prefix_len
                            && dev::prefix_match(p, a.addr, a.prefix_len)
                    })
            } else {
                local.or(address) == Some(a.addr) && a.prefix_len == ifm.ifa_prefixlen
            }
    });
    let a = found.ok_or_else(|| {
        err(
            Errno::EADDRNOTAVAIL,
            if v4 {
                "ipv4: Address not found"
            } else {
                "ipv6: address not found"
            },
        )
    })?;
    d.del_addr(r.net, a.ifindex, a.addr)?;
    Ok(Answer::Done)
}

/// `fib_dump_info` (IPv4) / `rt6_fill_node` (IPv6).
pub fn fill_route(rt: &Route, ty: u16, flags: u16, seq: u32, pid: u32) -> Vec<u8> {
    let v4 = rt.dst.is_ipv4();
    let mut m = Msg::new(ty, flags, seq, pid);
    m.put(&Rtmsg {
        rtm_family: family_of(rt.dst),
        rtm_dst_len: rt.dst_len,
        rtm_src_len: 0,
        rtm_tos: 0,
        rtm_table: rt.table,
        rtm_protocol: rt.protocol,
        // IPv6 routes have no scope (rt6_fill_node: universe).
        rtm_scope: if v4 { rt.scope } else { RT_SCOPE_UNIVERSE },
        rtm_type: rt.kind,
        rtm_flags: 0,
    });
    m.u32(RTA_TABLE, u32::from(rt.table));
    if rt.dst_len > 0 {
        m.attr(RTA_DST, &ip_bytes(rt.dst));
    }
    if v4 {
        if rt.priority != 0 {
            m.u32(RTA_PRIORITY, rt.priority);
        }
        if let Some(s) = rt.prefsrc {
            m.attr(RTA_PREFSRC, &ip_bytes(s));
        }
        if let Some(g) = rt.gateway {
            m.attr(RTA_GATEWAY, &ip_bytes(g));
        }
        m.u32(RTA_OIF, rt.oif as u32);
    } else {
        // The kernel's own IPv6 routes carry no preferred source.
        if let Some(s) = rt.prefsrc
            && s != rt.dst
        {
            m.attr(RTA_PREFSRC, &ip_bytes(s));
        }
        m.u32(RTA_PRIORITY, rt.priority);
        if let Some(g) = rt.gateway {
            m.attr(RTA_GATEWAY, &ip_bytes(g));
        }
        m.u32(RTA_OIF, rt.oif as u32)
            .attr(RTA_CACHEINFO, &route_cacheinfo(rt))
            .u8(RTA_PREF, 0);
    }
    m.finish()
}

/// What a route request says (`rtm_to_fib_config`, `rtm_to_fib6_config`).
struct RouteReq {
    rtm: Rtmsg,
    dst: IpAddr,
    gateway: Option<IpAddr>,
    oif: Option<i32>,
    table: u8,
    priority: Option<u32>,
    prefsrc: Option<IpAddr>,
}

fn route_req(p: &[u8]) -> Result<RouteReq, NlError> {
    let (rtm, attrs) = header::<Rtmsg>(p)?;
    let family = u32::from(rtm.rtm_family);
    let max = match family {
        AF_INET => 32,
        AF_INET6 => 128,
        _ => return Err(Errno::EAFNOSUPPORT.into()),
    };
    if rtm.rtm_dst_len > max {
        return Err(err(Errno::EINVAL, "Invalid prefix length"));
    }
    let any = if family == AF_INET {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    };
    let dst = match msg::find(attrs, RTA_DST) {
        Some(b) => parse_ip(family, b)?,
        None => any,
    };
    let gateway = msg::find(attrs, RTA_GATEWAY)
        .map(|b| parse_ip(family, b))
        .transpose()?
        .filter(|g| !g.is_unspecified());
    let prefsrc = msg::find(attrs, RTA_PREFSRC)
        .map(|b| parse_ip(family, b))
        .transpose()?;
    let table = msg::find_u32(attrs, RTA_TABLE).map_or(rtm.rtm_table, |t| t as u8);
    Ok(RouteReq {
        rtm,
        dst,
        gateway,
        oif: msg::find_u32(attrs, RTA_OIF)
            .filter(|&o| o != 0)
            .map(|o| o as i32),
        table: if table == RT_TABLE_UNSPEC {
            RT_TABLE_MAIN
        } else {
            table
        },
        priority: msg::find_u32(attrs, RTA_PRIORITY),
        prefsrc,
    })
}

/// `inet_rtm_newroute` / `inet6_rtm_newroute`.
fn new_route(r: &Request<'_>, d: &NetDevices) -> NlResult {
    let q = route_req(r.payload)?;
    if dev::network(q.dst, q.rtm.rtm_dst_len) != q.dst {
        return Err(err(Errno::EINVAL, "Invalid prefix for given prefix length"));
    }
    let v4 = q.dst.is_ipv4();
    let oif = match (q.oif, q.gateway) {
        (Some(o), _) => o,
        (None, Some(g)) => d
            .lookup(g)
            .filter(|rt| rt.gateway.is_none() && rt.kind == RTN_UNICAST)
            .map(|rt| rt.oif)
            .ok_or_else(|| err(Errno::ENETUNREACH, "Nexthop has invalid gateway"))?,
        (None, None) => return Err(err(Errno::ENODEV, "Nexthop device required")),
    };
    let route = Route {
        dst: q.dst,
        dst_len: q.rtm.rtm_dst_len,
        gateway: q.gateway,
        oif,
        table: q.table,
        protocol: q.rtm.rtm_protocol,
        scope: if v4 {
            q.rtm.rtm_scope
        } else {
            RT_SCOPE_UNIVERSE
        },
        kind: if q.rtm.rtm_type == 0 {
            RTN_UNICAST
        } else {
            q.rtm.rtm_type
        },
        priority: q.priority.unwrap_or(if v4 { 0 } else { IP6_RT_PRIO_USER }),
        prefsrc: q.prefsrc,
        expires: None,
    };
    if d.by_index(oif).is_none() {
        return Err(err(Errno::ENODEV, "Device not found"));
    }
    if r.hdr.nlmsg_flags & NLM_F_REPLACE != 0 {
        let _ = d.del_route(
            r.net,
            route.dst,
            route.dst_len,
            None,
            None,
            Some(route.table),
        );
    }
    d.add_route(r.net, route)?;
    Ok(Answer::Done)
}

/// `inet_rtm_delroute` / `inet6_rtm_delroute`.
fn del_route(r: &Request<'_>, d: &NetDevices) -> NlResult {
    let q = route_req(r.payload)?;
    d.del_route(
        r.net,
        q.dst,
        q.rtm.rtm_dst_len,
        q.gateway,
        q.oif,
        Some(q.table),
    )
    .map_err(|e| {
        if e == Errno::ESRCH {
            err(Errno::ESRCH, "No such process")
        } else {
            e.into()
        }
    })?;
    Ok(Answer::Done)
}

/// `inet_rtm_getroute` (`ip route get`).
fn get_route(r: &Request<'_>, d: &NetDevices) -> NlResult {
    let q = route_req(r.payload)?;
    let rt = d
        .lookup(q.dst)
        .ok_or_else(|| err(Errno::ENETUNREACH, "Network is unreachable"))?;
    let (seq, pid) = (r.hdr.nlmsg_seq, r.portid);
    if q.rtm.rtm_flags & RTM_F_FIB_MATCH != 0 {
        return Ok(Answer::Reply(vec![fill_route(
            &rt,
            RTM_NEWROUTE,
            0,
            seq,
            pid,
        )]));
    }
    let v4 = q.dst.is_ipv4();
    let local = rt.kind == RTN_LOCAL;
    // The table is main unless RTM_F_LOOKUP_TABLE asks for the one the lookup used.
    let table = if q.rtm.rtm_flags & RTM_F_LOOKUP_TABLE != 0 {
        rt.table
    } else {
        RT_TABLE_MAIN
    };
    let mut m = Msg::new(RTM_NEWROUTE, 0, seq, pid);
    m.put(&Rtmsg {
        rtm_family: family_of(q.dst),
        rtm_dst_len: if v4 { 32 } else { 128 },
        rtm_src_len: 0,
        rtm_tos: 0,
        rtm_table: table,
        rtm_protocol: 0,
        rtm_scope: RT_SCOPE_UNIVERSE,
        rtm_type: rt.kind,
        rtm_flags: RTM_F_CLONED | if local && v4 { RTCF_LOCAL } else { 0 },
    });
    m.u32(RTA_TABLE, u32::from(table))
        .attr(RTA_DST, &ip_bytes(q.dst))
        .u32(RTA_OIF, rt.oif as u32);
    if let Some(src) = d.source_for(&rt, q.dst) {
        m.attr(RTA_PREFSRC, &ip_bytes(src));
    }
    if let Some(g) = rt.gateway {
        m.attr(RTA_GATEWAY, &ip_bytes(g));
    }
    if !v4 {
        m.u32(RTA_PRIORITY, rt.priority);
    }
    m.u32(RTA_UID, 0).attr(RTA_CACHEINFO, &route_cacheinfo(&rt));
    if !v4 {
        m.u8(RTA_PREF, 0);
    }
    Ok(Answer::Reply(vec![m.finish()]))
}

/// The notification for a registry event: its group and message.
pub fn event_messages(_net: &Arc<NetNs>, e: &dev::Event) -> Vec<(u32, Vec<u8>)> {
    use dev::Event::*;
    let addr_group = |a: &IfAddr| {
        if a.addr.is_ipv4() {
            RTNLGRP_IPV4_IFADDR
        } else {
            RTNLGRP_IPV6_IFADDR
        }
    };
    let route_group = |r: &Route| {
        if r.dst.is_ipv4() {
            RTNLGRP_IPV4_ROUTE
        } else {
            RTNLGRP_IPV6_ROUTE
        }
    };
    match e {
        Link(dv) => vec![(RTNLGRP_LINK, fill_link(dv, RTM_NEWLINK, 0, 0, 0, 0))],
        NewAddr(a) => vec![(addr_group(a), fill_addr(a, RTM_NEWADDR, 0, 0, 0))],
        DelAddr(a) => vec![(addr_group(a), fill_addr(a, RTM_DELADDR, 0, 0, 0))],
        NewRoute(r) => vec![(route_group(r), fill_route(r, RTM_NEWROUTE, 0, 0, 0))],
        DelRoute(r) => vec![(route_group(r), fill_route(r, RTM_DELROUTE, 0, 0, 0))],
    }
}
