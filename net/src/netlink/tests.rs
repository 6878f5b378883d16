//! The netlink socket and rtnetlink against the registry of a fresh namespace: dumps of lo
//! and of a dummy Ethernet device, changes with their acknowledgements, errors and
//! notifications.

use super::*;
use crate::dev::NetDevOps;
use crate::{AF_INET, AF_INET6};
use std::net::IpAddr;
use std::sync::Once;
use um_uapi::abi::netdevice::*;
use um_uapi::abi::netlink::ifa::*;
use um_uapi::abi::netlink::ifla::*;
use um_uapi::abi::netlink::rta::*;
use um_uapi::abi::netlink::rtm::*;

struct Null;
impl NetDevOps for Null {
    fn xmit(&self, _: &[u8]) -> bool {
        true
    }
}

fn setup() -> Arc<NetNs> {
    static ONCE: Once = Once::new();
    ONCE.call_once(init);
    crate::dev::test_ns()
}

fn sock(ns: &Arc<NetNs>, proto: u32) -> Arc<NetlinkSocket> {
    NetlinkSocket::new_in(SOCK_RAW, proto, (0, 0), ns.clone())
}

fn req<T: Pod>(ty: u16, flags: u16, seq: u32, hdr: &T, attrs: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut m = Msg::new(ty, flags | NLM_F_REQUEST, seq, 0);
    m.put(hdr);
    for (t, d) in attrs {
        m.attr(*t, d);
    }
    m.finish()
}

/// Every message of every queued datagram.
fn drain(s: &NetlinkSocket) -> Vec<(Nlmsghdr, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some((d, _, _)) = s.pop() {
        for (h, p) in msg::messages(&d) {
            out.push((h, p.to_vec()));
        }
    }
    out
}

fn errno_of(m: &(Nlmsghdr, Vec<u8>)) -> i32 {
    assert_eq!(m.0.nlmsg_type, NLMSG_ERROR);
    i32::from_le_bytes([m.1[0], m.1[1], m.1[2], m.1[3]])
}

fn dummy_eth(ns: &Arc<NetNs>) -> Arc<crate::dev::NetDevice> {
    crate::dev::devices(ns)
        .register(
            ns,
            "eth0",
            ARPHRD_ETHER,
            [0x52, 0x54, 0, 0x12, 0x34, 0x56],
            1500,
            IFF_BROADCAST | IFF_MULTICAST,
            Arc::new(Null),
        )
        .unwrap()
}

#[test]
fn bind_autobind_and_names() {
    let ns = setup();
    let a = sock(&ns, NETLINK_ROUTE);
    let b = sock(&ns, NETLINK_ROUTE);
    a.autobind(4242).unwrap();
    assert_eq!(a.portid(), 4242);
    b.autobind(4242).unwrap();
    assert_eq!(b.portid() as i32, -4096);
    let c = sock(&ns, NETLINK_ROUTE);
    let addr = |pid: u32, groups: u32| {
        SockaddrNl {
            nl_family: AF_NETLINK as u16,
            nl_pad: 0,
            nl_pid: pid,
            nl_groups: groups,
        }
        .as_bytes()
    };
    assert_eq!(c.bind(&addr(4242, 0), 1), Err(Errno::EADDRINUSE));
    c.bind(&addr(0, RTMGRP_LINK | RTMGRP_IPV4_IFADDR), 77)
        .unwrap();
    assert_eq!(SockaddrNl::read_le(&c.local_addr()).nl_pid, 77);
    assert_eq!(
        SockaddrNl::read_le(&c.local_addr()).nl_groups,
        RTMGRP_LINK | RTMGRP_IPV4_IFADDR
    );
    // Another protocol has its own port ids.
    let d = sock(&ns, NETLINK_SOCK_DIAG);
    d.bind(&addr(4242, 0), 1).unwrap();
    assert_eq!(c.bind(&addr(99, 0), 1), Err(Errno::EINVAL));
    assert_eq!(c.bind(&addr(0, 0)[..8], 1), Err(Errno::EINVAL));
    let mut bad = addr(0, 0);
    bad[0] = 2;
    assert_eq!(sock(&ns, 0).bind(&bad, 1), Err(Errno::EINVAL));
    assert_eq!(check_create(SOCK_RAW, 9), Err(Errno::EPROTONOSUPPORT));
    assert_eq!(check_create(1, 0), Err(Errno::ESOCKTNOSUPPORT));
    // Memberships.
    c.setsockopt(
        NETLINK_ADD_MEMBERSHIP,
        Some(RTNLGRP_IPV6_ROUTE as i32),
        false,
    )
    .unwrap();
    assert_eq!(
        c.setsockopt(NETLINK_ADD_MEMBERSHIP, Some(0), false),
        Err(Errno::EINVAL)
    );
    let (v, len) = c.getsockopt(NETLINK_LIST_MEMBERSHIPS, 4).unwrap();
    assert_eq!(len, 8);
    assert_eq!(
        u32::from_le_bytes([v[0], v[1], v[2], v[3]]),
        RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_ROUTE
    );
    assert_eq!(c.getsockopt(NETLINK_EXT_ACK, 2), Err(Errno::EINVAL));
}

#[test]
fn link_dump_of_lo_and_a_dummy_ethernet() {
    let ns = setup();
    let eth = dummy_eth(&ns);
    let s = sock(&ns, NETLINK_ROUTE);
    let q = req(RTM_GETLINK, NLM_F_DUMP, 7, &Ifinfomsg::default(), &[]);
    assert_eq!(s.send(&q, None, 100, false, 0), Ok(q.len()));
    let ms = drain(&s);
    assert_eq!(ms.len(), 3, "two links and DONE");
    assert_eq!(ms[2].0.nlmsg_type, NLMSG_DONE);
    for m in &ms {
        assert_eq!((m.0.nlmsg_seq, m.0.nlmsg_pid), (7, 100));
        assert_ne!(m.0.nlmsg_flags & NLM_F_MULTI, 0);
    }
    let lo = Ifinfomsg::read_le(&ms[0].1);
    assert_eq!((lo.ifi_index, lo.ifi_type), (1, ARPHRD_LOOPBACK));
    assert_eq!(
        lo.ifi_flags,
        IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_LOWER_UP
    );
    let at = &ms[0].1[16..];
    assert_eq!(msg::find_str(at, IFLA_IFNAME).as_deref(), Some("lo"));
    assert_eq!(msg::find_u32(at, IFLA_MTU), Some(65_536));
    assert_eq!(msg::find_u32(at, IFLA_TXQLEN), Some(1000));
    assert_eq!(msg::find(at, IFLA_OPERSTATE), Some(&[IF_OPER_UNKNOWN][..]));
    assert_eq!(msg::find_str(at, IFLA_QDISC).as_deref(), Some("noqueue"));
    assert_eq!(msg::find(at, IFLA_STATS64).map(<[u8]>::len), Some(200));
    let e = Ifinfomsg::read_le(&ms[1].1);
    assert_eq!((e.ifi_index, e.ifi_type), (eth.ifindex, ARPHRD_ETHER));
    let at = &ms[1].1[16..];
    assert_eq!(msg::find_str(at, IFLA_IFNAME).as_deref(), Some("eth0"));
    assert_eq!(msg::find(at, IFLA_ADDRESS), Some(&eth.mac[..]));
    assert_eq!(msg::find(at, IFLA_BROADCAST), Some(&[0xff; 6][..]));
    assert_eq!(msg::find(at, IFLA_OPERSTATE), Some(&[IF_OPER_DOWN][..]));
    assert_eq!(msg::find_str(at, IFLA_QDISC).as_deref(), Some("noop"));
    // One device by name; an unknown one is ENODEV.
    let mut name = b"eth0".to_vec();
    name.push(0);
    s.send(
        &req(
            RTM_GETLINK,
            0,
            8,
            &Ifinfomsg::default(),
            &[(IFLA_IFNAME, name)],
        ),
        None,
        100,
        false,
        0,
    )
    .unwrap();
    let ms = drain(&s);
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].0.nlmsg_type, RTM_NEWLINK);
    let q = req(
        RTM_GETLINK,
        NLM_F_ACK,
        9,
        &Ifinfomsg {
            ifi_index: 99,
            ..Default::default()
        },
        &[],
    );
    s.send(&q, None, 100, false, 0).unwrap();
    let ms = drain(&s);
    assert_eq!(errno_of(&ms[0]), -Errno::ENODEV.get());
    // The request is echoed whole after the error.
    assert_eq!(ms[0].0.nlmsg_len as usize, 16 + 20 + 16);
}

#[test]
fn setlink_up_notifies_and_needs_admin() {
    let ns = setup();
    let eth = dummy_eth(&ns);
    let s = sock(&ns, NETLINK_ROUTE);
    let watcher = sock(&ns, NETLINK_ROUTE);
    watcher.autobind(5).unwrap();
    watcher
        .setsockopt(NETLINK_ADD_MEMBERSHIP, Some(RTNLGRP_LINK as i32), false)
        .unwrap();
    watcher
        .setsockopt(
            NETLINK_ADD_MEMBERSHIP,
            Some(RTNLGRP_IPV4_ROUTE as i32),
            false,
        )
        .unwrap();
    let up = Ifinfomsg {
        ifi_index: eth.ifindex,
        ifi_flags: IFF_UP,
        ifi_change: IFF_UP,
        ..Default::default()
    };
    let q = req(
        RTM_NEWLINK,
        NLM_F_ACK,
        1,
        &up,
        &[(IFLA_MTU, 9000u32.to_le_bytes().to_vec())],
    );
    s.send(&q, None, 100, false, 0).unwrap();
    assert_eq!(errno_of(&drain(&s)[0]), -Errno::EPERM.get());
    assert!(!eth.is_up());
    s.send(&q, None, 100, true, 0).unwrap();
    let ms = drain(&s);
    assert_eq!(ms.len(), 1);
    assert_eq!(errno_of(&ms[0]), 0);
    // An acknowledgement echoes only the header.
    assert_eq!(ms[0].0.nlmsg_len, 36);
    assert_ne!(ms[0].0.nlmsg_flags & NLM_F_CAPPED, 0);
    assert!(eth.is_up());
    assert_eq!(eth.mtu(), 9000);
    let notes = drain(&watcher);
    assert!(notes.iter().all(|m| m.0.nlmsg_type == RTM_NEWLINK));
    let last = Ifinfomsg::read_le(&notes.last().unwrap().1);
    assert_ne!(last.ifi_flags & IFF_UP, 0);
    // Creating a device: not here.
    let q = req(
        RTM_NEWLINK,
        NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK,
        2,
        &Ifinfomsg::default(),
        &[(IFLA_IFNAME, b"dummy0\0".to_vec())],
    );
    s.setsockopt(NETLINK_EXT_ACK, Some(1), true).unwrap();
    s.send(&q, None, 100, true, 0).unwrap();
    let ms = drain(&s);
    assert_eq!(errno_of(&ms[0]), -Errno::EOPNOTSUPP.get());
    assert_ne!(ms[0].0.nlmsg_flags & NLM_F_ACK_TLVS, 0);
    let tlvs = &ms[0].1[20 + q.len() - 16..];
    assert_eq!(
        msg::find_str(tlvs, NLMSGERR_ATTR_MSG).as_deref(),
        Some("Unknown device type")
    );
}

#[test]
fn addresses_add_dump_delete_with_notifications() {
    let ns = setup();
    let eth = dummy_eth(&ns);
    let d = crate::dev::devices(&ns);
    d.set_flags(&ns, eth.ifindex, IFF_UP | IFF_BROADCAST)
        .unwrap();
    let s = sock(&ns, NETLINK_ROUTE);
    let w = sock(&ns, NETLINK_ROUTE);
    w.bind(
        &SockaddrNl {
            nl_family: AF_NETLINK as u16,
            nl_pad: 0,
            nl_pid: 0,
            nl_groups: RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE,
        }
        .as_bytes(),
        9,
    )
    .unwrap();
    let ifa = Ifaddrmsg {
        ifa_family: AF_INET as u8,
        ifa_prefixlen: 24,
        ifa_flags: 0,
        ifa_scope: 0,
        ifa_index: eth.ifindex as u32,
    };
    let ip = vec![10, 0, 2, 15];
    let add = req(
        RTM_NEWADDR,
        NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
        3,
        &ifa,
        &[
            (IFA_LOCAL, ip.clone()),
            (IFA_ADDRESS, ip.clone()),
            (IFA_BROADCAST, vec![10, 0, 2, 255]),
        ],
    );
    s.send(&add, None, 100, true, 0).unwrap();
    assert_eq!(errno_of(&drain(&s)[0]), 0);
    let notes = drain(&w);
    let types: Vec<u16> = notes.iter().map(|m| m.0.nlmsg_type).collect();
    assert_eq!(types[0], RTM_NEWADDR, "{types:?}");
    assert!(types[1..].iter().all(|&t| t == RTM_NEWROUTE), "{types:?}");
    assert!(
        types.len() >= 3,
        "the local, prefix and broadcast routes: {types:?}"
    );
    s.send(&add, None, 100, true, 0).unwrap();
    assert_eq!(errno_of(&drain(&s)[0]), -Errno::EEXIST.get());
    // A v6 address, then the dump: v4 (lo, eth0), then v6 (lo, eth0).
    let ifa6 = Ifaddrmsg {
        ifa_family: AF_INET6 as u8,
        ifa_prefixlen: 64,
        ..ifa
    };
    let ip6: IpAddr = "fd00::15".parse().unwrap();
    let IpAddr::V6(v6) = ip6 else { unreachable!() };
    s.send(
        &req(
            RTM_NEWADDR,
            NLM_F_ACK,
            4,
            &ifa6,
            &[(IFA_ADDRESS, v6.octets().to_vec())],
        ),
        None,
        100,
        true,
        0,
    )
    .unwrap();
    assert_eq!(errno_of(&drain(&s)[0]), 0);
    s.send(
        &req(RTM_GETADDR, NLM_F_DUMP, 5, &Ifaddrmsg::default(), &[]),
        None,
        100,
        false,
        0,
    )
    .unwrap();
    let ms = drain(&s);
    let rows: Vec<(u8, u32, u8)> = ms
        .iter()
        .filter(|m| m.0.nlmsg_type == RTM_NEWADDR)
        .map(|m| {
            let h = Ifaddrmsg::read_le(&m.1);
            (h.ifa_family, h.ifa_index, h.ifa_prefixlen)
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (2, 1, 8),
            (2, eth.ifindex as u32, 24),
            (10, 1, 128),
            (10, eth.ifindex as u32, 64)
        ]
    );
    let v4 = &ms[1].1[8..];
    assert_eq!(msg::find(v4, IFA_LOCAL), Some(&ip[..]));
    assert_eq!(msg::find(v4, IFA_BROADCAST), Some(&[10, 0, 2, 255][..]));
    assert_eq!(msg::find_str(v4, IFA_LABEL).as_deref(), Some("eth0"));
    assert_eq!(msg::find_u32(v4, IFA_FLAGS), Some(IFA_F_PERMANENT));
    assert_eq!(ms.last().unwrap().0.nlmsg_type, NLMSG_DONE);
    // Only IPv6.
    s.send(
        &req(
            RTM_GETADDR,
            NLM_F_DUMP,
            6,
            &Ifaddrmsg {
                ifa_family: AF_INET6 as u8,
                ..Default::default()
            },
            &[],
        ),
        None,
        100,
        false,
        0,
    )
    .unwrap();
    assert_eq!(drain(&s).len(), 3);
    // Delete; again is EADDRNOTAVAIL.
    let del = req(RTM_DELADDR, NLM_F_ACK, 7, &ifa, &[(IFA_LOCAL, ip.clone())]);
    drain(&w);
    s.send(&del, None, 100, true, 0).unwrap();
    assert_eq!(errno_of(&drain(&s)[0]), 0);
    assert_eq!(drain(&w)[0].0.nlmsg_type, RTM_DELADDR);
    s.send(&del, None, 100, true, 0).unwrap();
    assert_eq!(errno_of(&drain(&s)[0]), -Errno::EADDRNOTAVAIL.get());
    assert!(
        !d.addrs()
            .iter()
            .any(|a| a.addr == IpAddr::V4([10, 0, 2, 15].into()))
    );
}

#[test]
fn routes_dump_get_add_delete() {
    let ns = setup();
    let s = sock(&ns, NETLINK_ROUTE);
    let v4 = Rtmsg {
        rtm_family: AF_INET as u8,
        ..Default::default()
    };
    s.send(
        &req(RTM_GETROUTE, NLM_F_DUMP, 1, &v4, &[]),
        None,
        100,
        false,
        0,
    )
    .unwrap();
    let ms = drain(&s);
    let local: Vec<Rtmsg> = ms
        .iter()
        .filter(|m| m.0.nlmsg_type == RTM_NEWROUTE)
        .map(|m| Rtmsg::read_le(&m.1))
        .collect();
    assert!(local.iter().all(|r| r.rtm_family == AF_INET as u8));
    assert!(
        local.iter().any(|r| r.rtm_dst_len == 8
            && r.rtm_type == RTN_LOCAL
            && r.rtm_table == RT_TABLE_LOCAL)
    );
    // ip route get 127.1.2.3.
    s.send(
        &req(
            RTM_GETROUTE,
            0,
            2,
            &Rtmsg {
                rtm_dst_len: 32,
                ..v4
            },
            &[(RTA_DST, vec![127, 1, 2, 3])],
        ),
        None,
        100,
        false,
        0,
    )
    .unwrap();
    let ms = drain(&s);
    let r = Rtmsg::read_le(&ms[0].1);
    assert_eq!(r.rtm_type, RTN_LOCAL);
    assert_ne!(r.rtm_flags & RTM_F_CLONED, 0);
    assert_eq!(
        msg::find(&ms[0].1[12..], RTA_PREFSRC),
        Some(&[127, 0, 0, 1][..])
    );
    // Unreachable.
    s.send(
        &req(
            RTM_GETROUTE,
            0,
            3,
            &Rtmsg {
                rtm_dst_len: 32,
                ..v4
            },
            &[(RTA_DST, vec![192, 0, 2, 1])],
        ),
        None,
        100,
        false,
        0,
    )
    .unwrap();
    assert_eq!(errno_of(&drain(&s)[0]), -Errno::ENETUNREACH.get());
    // A route through lo, deleted again.
    let add = Rtmsg {
        rtm_dst_len: 24,
        rtm_table: RT_TABLE_MAIN,
        rtm_protocol: RTPROT_BOOT,
        rtm_scope: RT_SCOPE_LINK,
        rtm_type: RTN_UNICAST,
        ..v4
    };
    let attrs = [
        (RTA_DST, vec![10, 9, 8, 0]),
        (RTA_OIF, 1u32.to_le_bytes().to_vec()),
    ];
    s.send(
        &req(
            RTM_NEWROUTE,
            NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
            4,
            &add,
            &attrs,
        ),
        None,
        100,
        true,
        0,
    )
    .unwrap();
    assert_eq!(errno_of(&drain(&s)[0]), 0);
    assert!(
        crate::dev::devices(&ns)
            .lookup("10.9.8.7".parse().unwrap())
            .is_some()
    );
    // A prefix with host bits set is refused.
    let bad = [
        (RTA_DST, vec![10, 9, 8, 1]),
        (RTA_OIF, 1u32.to_le_bytes().to_vec()),
    ];
    s.send(
        &req(RTM_NEWROUTE, NLM_F_ACK, 5, &add, &bad),
        None,
        100,
        true,
        0,
    )
    .unwrap();
    assert_eq!(errno_of(&drain(&s)[0]), -Errno::EINVAL.get());
    s.send(
        &req(RTM_DELROUTE, NLM_F_ACK, 6, &add, &attrs),
        None,
        100,
        true,
        0,
    )
    .unwrap();
    assert_eq!(errno_of(&drain(&s)[0]), 0);
    s.send(
        &req(RTM_DELROUTE, NLM_F_ACK, 7, &add, &attrs),
        None,
        100,
        true,
        0,
    )
    .unwrap();
    assert_eq!(errno_of(&drain(&s)[0]), -Errno::ESRCH.get());
    // Other dumps are empty; unknown requests EOPNOTSUPP.
    s.send(
        &req(30, NLM_F_DUMP, 8, &Ifinfomsg::default(), &[]),
        None,
        100,
        false,
        0,
    )
    .unwrap();
    let ms = drain(&s);
    assert_eq!((ms.len(), ms[0].0.nlmsg_type), (1, NLMSG_DONE));
    s.send(
        &req(200, 0, 9, &Ifinfomsg::default(), &[]),
        None,
        100,
        false,
        0,
    )
    .unwrap();
    assert_eq!(errno_of(&drain(&s)[0]), -Errno::EOPNOTSUPP.get());
}

#[test]
fn unicast_between_sockets_and_sizes() {
    let ns = setup();
    let a = sock(&ns, NETLINK_ROUTE);
    let b = sock(&ns, NETLINK_ROUTE);
    b.autobind(600).unwrap();
    let to = SockaddrNl {
        nl_family: AF_NETLINK as u16,
        nl_pad: 0,
        nl_pid: 600,
        nl_groups: 0,
    }
    .as_bytes();
    assert_eq!(a.send(b"hi", Some(&to), 500, false, 0), Err(Errno::EPERM));
    assert_eq!(a.send(b"hi", Some(&to), 500, true, 0), Ok(2));
    assert_eq!(b.pop(), Some((b"hi".to_vec(), 500, 0)));
    let nobody = SockaddrNl {
        nl_pid: 601,
        ..SockaddrNl::read_le(&to)
    }
    .as_bytes();
    assert_eq!(
        a.send(b"hi", Some(&nobody), 500, true, 0),
        Err(Errno::ECONNREFUSED)
    );
    let big = vec![0u8; BUF_DEFAULT as usize];
    assert_eq!(a.send(&big, None, 500, false, 0), Err(Errno::EMSGSIZE));
    // A datagram that is no request is acknowledged only if asked.
    let mut m = Msg::new(RTM_GETLINK, NLM_F_ACK, 1, 0);
    m.put(&Ifinfomsg::default());
    a.send(&m.finish(), None, 500, false, 0).unwrap();
    let ms = drain(&a);
    assert_eq!(errno_of(&ms[0]), 0);
}
