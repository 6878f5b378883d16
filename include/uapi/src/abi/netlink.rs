//! Netlink ABI: the socket address, message and attribute headers, rtnetlink's family headers
//! and attribute numbers, sock_diag's requests and replies, identical on x86_64 and arm64.
//!
//! Sources: `include/uapi/linux/netlink.h` (`sockaddr_nl`, `nlmsghdr`, `nlmsgerr`, `nlattr`,
//! `NLM_F_*`, `NLMSG_*`, `NETLINK_*` protocols and options), `include/uapi/linux/rtnetlink.h`
//! (`rtattr`, `rtmsg`, `rtgenmsg`, `RTM_*`, `RTA_*`, `RTMGRP_*`, `RTNLGRP_*`),
//! `include/uapi/linux/if_link.h` (`ifinfomsg` is in rtnetlink.h; `IFLA_*`,
//! `rtnl_link_stats{,64}`, `rtnl_link_ifmap`, `IF_OPER_*`), `include/uapi/linux/if_addr.h`
//! (`ifaddrmsg`, `IFA_*`, `ifa_cacheinfo`), `include/uapi/linux/sock_diag.h` and
//! `inet_diag.h` (`inet_diag_*`), `include/net/tcp_states.h` (`TCP_*` states). The users are
//! `net/src/netlink` (the sockets, rtnetlink and sock_diag) and the guest programs.

use static_assertions::const_assert_eq;

/// `AF_NETLINK`.
pub const AF_NETLINK: u32 = 16;
/// `SOL_NETLINK`.
pub const SOL_NETLINK: i32 = 270;
/// `MAX_LINKS`: protocol numbers are below this.
pub const MAX_LINKS: u32 = 32;

/// Protocols (`NETLINK_*`).
pub const NETLINK_ROUTE: u32 = 0;
/// `NETLINK_SOCK_DIAG` (= `NETLINK_INET_DIAG`).
pub const NETLINK_SOCK_DIAG: u32 = 4;

/// `nlmsg_flags`.
pub const NLM_F_REQUEST: u16 = 0x01;
pub const NLM_F_MULTI: u16 = 0x02;
pub const NLM_F_ACK: u16 = 0x04;
pub const NLM_F_ECHO: u16 = 0x08;
pub const NLM_F_DUMP_INTR: u16 = 0x10;
pub const NLM_F_DUMP_FILTERED: u16 = 0x20;
/// GET requests.
pub const NLM_F_ROOT: u16 = 0x100;
pub const NLM_F_MATCH: u16 = 0x200;
pub const NLM_F_ATOMIC: u16 = 0x400;
pub const NLM_F_DUMP: u16 = NLM_F_ROOT | NLM_F_MATCH;
/// NEW requests.
pub const NLM_F_REPLACE: u16 = 0x100;
pub const NLM_F_EXCL: u16 = 0x200;
pub const NLM_F_CREATE: u16 = 0x400;
pub const NLM_F_APPEND: u16 = 0x800;
/// Acknowledgements.
pub const NLM_F_CAPPED: u16 = 0x100;
pub const NLM_F_ACK_TLVS: u16 = 0x200;

/// Control message types.
pub const NLMSG_NOOP: u16 = 1;
pub const NLMSG_ERROR: u16 = 2;
pub const NLMSG_DONE: u16 = 3;
pub const NLMSG_OVERRUN: u16 = 4;
/// Types below this are control messages.
pub const NLMSG_MIN_TYPE: u16 = 0x10;
/// `NLMSG_ALIGNTO`.
pub const NLMSG_ALIGNTO: usize = 4;
/// `NLMSG_HDRLEN`.
pub const NLMSG_HDRLEN: usize = 16;

/// `nlmsgerr` attributes (extended acknowledgements).
pub const NLMSGERR_ATTR_MSG: u16 = 1;
pub const NLMSGERR_ATTR_OFFS: u16 = 2;

/// Options at `SOL_NETLINK`.
pub mod opt {
    pub const NETLINK_ADD_MEMBERSHIP: i32 = 1;
    pub const NETLINK_DROP_MEMBERSHIP: i32 = 2;
    pub const NETLINK_PKTINFO: i32 = 3;
    pub const NETLINK_BROADCAST_ERROR: i32 = 4;
    pub const NETLINK_NO_ENOBUFS: i32 = 5;
    pub const NETLINK_RX_RING: i32 = 6;
    pub const NETLINK_TX_RING: i32 = 7;
    pub const NETLINK_LISTEN_ALL_NSID: i32 = 8;
    pub const NETLINK_LIST_MEMBERSHIPS: i32 = 9;
    pub const NETLINK_CAP_ACK: i32 = 10;
    pub const NETLINK_EXT_ACK: i32 = 11;
    pub const NETLINK_GET_STRICT_CHK: i32 = 12;
}

/// rtnetlink message types.
pub mod rtm {
    pub const RTM_NEWLINK: u16 = 16;
    pub const RTM_DELLINK: u16 = 17;
    pub const RTM_GETLINK: u16 = 18;
    pub const RTM_SETLINK: u16 = 19;
    pub const RTM_NEWADDR: u16 = 20;
    pub const RTM_DELADDR: u16 = 21;
    pub const RTM_GETADDR: u16 = 22;
    pub const RTM_NEWROUTE: u16 = 24;
    pub const RTM_DELROUTE: u16 = 25;
    pub const RTM_GETROUTE: u16 = 26;
    /// The last rtnetlink type (`RTM_MAX`, Linux 6.x: `RTM_NEWTUNNEL` + 3).
    pub const RTM_MAX: u16 = 123;
}

/// Legacy multicast group bits of `nl_groups` (`RTMGRP_*`).
pub const RTMGRP_LINK: u32 = 0x1;
pub const RTMGRP_IPV4_IFADDR: u32 = 0x10;
pub const RTMGRP_IPV4_ROUTE: u32 = 0x40;
pub const RTMGRP_IPV6_IFADDR: u32 = 0x100;
pub const RTMGRP_IPV6_ROUTE: u32 = 0x400;

/// Multicast group numbers (`enum rtnetlink_groups`); group `g` is bit `g - 1`.
pub const RTNLGRP_LINK: u32 = 1;
pub const RTNLGRP_IPV4_IFADDR: u32 = 5;
pub const RTNLGRP_IPV4_ROUTE: u32 = 7;
pub const RTNLGRP_IPV6_IFADDR: u32 = 9;
pub const RTNLGRP_IPV6_ROUTE: u32 = 11;
/// The number of rtnetlink groups a socket may join (`RTNLGRP_MAX` of Linux 6.x, rounded up).
pub const RTNLGRP_MAX: u32 = 0x30;

/// `IFLA_*` link attributes.
pub mod ifla {
    pub const IFLA_ADDRESS: u16 = 1;
    pub const IFLA_BROADCAST: u16 = 2;
    pub const IFLA_IFNAME: u16 = 3;
    pub const IFLA_MTU: u16 = 4;
    pub const IFLA_LINK: u16 = 5;
    pub const IFLA_QDISC: u16 = 6;
    pub const IFLA_STATS: u16 = 7;
    pub const IFLA_TXQLEN: u16 = 13;
    pub const IFLA_MAP: u16 = 14;
    pub const IFLA_OPERSTATE: u16 = 16;
    pub const IFLA_LINKMODE: u16 = 17;
    pub const IFLA_LINKINFO: u16 = 18;
    pub const IFLA_STATS64: u16 = 23;
    pub const IFLA_GROUP: u16 = 27;
    pub const IFLA_EXT_MASK: u16 = 29;
    pub const IFLA_PROMISCUITY: u16 = 30;
    pub const IFLA_NUM_TX_QUEUES: u16 = 31;
    pub const IFLA_NUM_RX_QUEUES: u16 = 32;
    pub const IFLA_CARRIER: u16 = 33;
    pub const IFLA_CARRIER_CHANGES: u16 = 35;
    pub const IFLA_PROTO_DOWN: u16 = 39;
    pub const IFLA_GSO_MAX_SEGS: u16 = 40;
    pub const IFLA_GSO_MAX_SIZE: u16 = 41;
    pub const IFLA_CARRIER_UP_COUNT: u16 = 47;
    pub const IFLA_CARRIER_DOWN_COUNT: u16 = 48;
    pub const IFLA_MIN_MTU: u16 = 50;
    pub const IFLA_MAX_MTU: u16 = 51;
    pub const IFLA_ALLMULTI: u16 = 61;
}

/// `IF_OPER_*` (RFC 2863 operational states).
pub const IF_OPER_UNKNOWN: u8 = 0;
pub const IF_OPER_DOWN: u8 = 2;
pub const IF_OPER_UP: u8 = 6;

/// `IFA_*` address attributes.
pub mod ifa {
    pub const IFA_ADDRESS: u16 = 1;
    pub const IFA_LOCAL: u16 = 2;
    pub const IFA_LABEL: u16 = 3;
    pub const IFA_BROADCAST: u16 = 4;
    pub const IFA_ANYCAST: u16 = 5;
    pub const IFA_CACHEINFO: u16 = 6;
    pub const IFA_FLAGS: u16 = 8;
    pub const IFA_RT_PRIORITY: u16 = 9;
}
/// `INFINITY_LIFE_TIME`: a lifetime that never runs out.
pub const INFINITY_LIFE_TIME: u32 = 0xFFFF_FFFF;

/// `RTA_*` route attributes.
pub mod rta {
    pub const RTA_DST: u16 = 1;
    pub const RTA_SRC: u16 = 2;
    pub const RTA_IIF: u16 = 3;
    pub const RTA_OIF: u16 = 4;
    pub const RTA_GATEWAY: u16 = 5;
    pub const RTA_PRIORITY: u16 = 6;
    pub const RTA_PREFSRC: u16 = 7;
    pub const RTA_METRICS: u16 = 8;
    pub const RTA_CACHEINFO: u16 = 12;
    pub const RTA_TABLE: u16 = 15;
    pub const RTA_MARK: u16 = 16;
    pub const RTA_PREF: u16 = 20;
    pub const RTA_UID: u16 = 25;
}
/// `RTM_F_CLONED`: a cached route (`ip route get` answers).
pub const RTM_F_CLONED: u32 = 0x200;
/// `RTM_F_LOOKUP_TABLE`: answer with the table the lookup used.
pub const RTM_F_LOOKUP_TABLE: u32 = 0x1000;
/// `RTM_F_FIB_MATCH`: answer with the FIB entry, not the resolved route.
pub const RTM_F_FIB_MATCH: u32 = 0x2000;
/// `RT_TABLE_UNSPEC`.
pub const RT_TABLE_UNSPEC: u8 = 0;
/// `RTN_UNREACHABLE`.
pub const RTN_UNREACHABLE: u8 = 7;
/// `RT_SCOPE_NOWHERE`.
pub const RT_SCOPE_NOWHERE: u8 = 255;

crate::pod_struct! {
    /// `struct sockaddr_nl`: 12 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SockaddrNl {
        pub nl_family: u16,
        pub nl_pad: u16,
        /// The port id (0: the kernel).
        pub nl_pid: u32,
        /// Multicast group bits (groups 1..=32).
        pub nl_groups: u32,
    }
}
const_assert_eq!(core::mem::size_of::<SockaddrNl>(), 12);

crate::pod_struct! {
    /// `struct nlmsghdr`: 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Nlmsghdr {
        /// Length of the message, header included.
        pub nlmsg_len: u32,
        pub nlmsg_type: u16,
        pub nlmsg_flags: u16,
        pub nlmsg_seq: u32,
        /// The sender's port id.
        pub nlmsg_pid: u32,
    }
}
const_assert_eq!(core::mem::size_of::<Nlmsghdr>(), NLMSG_HDRLEN);

crate::pod_struct! {
    /// `struct nlmsgerr`: 20 bytes (the request's payload, or TLVs, follow).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Nlmsgerr {
        /// 0 (an acknowledgement) or a negative errno.
        pub error: i32,
        /// The request's header.
        pub msg: Nlmsghdr,
    }
}
const_assert_eq!(core::mem::size_of::<Nlmsgerr>(), 20);

crate::pod_struct! {
    /// `struct rtattr` / `struct nlattr`: 4 bytes, the payload follows (aligned to 4).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Rtattr {
        pub rta_len: u16,
        pub rta_type: u16,
    }
}
const_assert_eq!(core::mem::size_of::<Rtattr>(), 4);
/// `NLA_F_NESTED` / `NLA_F_NET_BYTEORDER`: flag bits of an attribute type.
pub const NLA_TYPE_MASK: u16 = 0x3fff;

crate::pod_struct! {
    /// `struct ifinfomsg`: 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Ifinfomsg {
        pub ifi_family: u8,
        pub ifi_pad: u8,
        /// `ARPHRD_*`.
        pub ifi_type: u16,
        pub ifi_index: i32,
        /// `IFF_*`.
        pub ifi_flags: u32,
        /// Which flags a request changes.
        pub ifi_change: u32,
    }
}
const_assert_eq!(core::mem::size_of::<Ifinfomsg>(), 16);

crate::pod_struct! {
    /// `struct ifaddrmsg`: 8 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Ifaddrmsg {
        pub ifa_family: u8,
        pub ifa_prefixlen: u8,
        /// The low 8 bits of `IFA_F_*` (all of them in `IFA_FLAGS`).
        pub ifa_flags: u8,
        pub ifa_scope: u8,
        pub ifa_index: u32,
    }
}
const_assert_eq!(core::mem::size_of::<Ifaddrmsg>(), 8);

crate::pod_struct! {
    /// `struct ifa_cacheinfo`: 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct IfaCacheinfo {
        pub ifa_prefered: u32,
        pub ifa_valid: u32,
        /// Created, in hundredths of a second since boot.
        pub cstamp: u32,
        /// Last updated, the same unit.
        pub tstamp: u32,
    }
}
const_assert_eq!(core::mem::size_of::<IfaCacheinfo>(), 16);

crate::pod_struct! {
    /// `struct rtmsg`: 12 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Rtmsg {
        pub rtm_family: u8,
        pub rtm_dst_len: u8,
        pub rtm_src_len: u8,
        pub rtm_tos: u8,
        /// `RT_TABLE_*` (tables above 255 are in `RTA_TABLE` only).
        pub rtm_table: u8,
        /// `RTPROT_*`.
        pub rtm_protocol: u8,
        /// `RT_SCOPE_*`.
        pub rtm_scope: u8,
        /// `RTN_*`.
        pub rtm_type: u8,
        /// `RTM_F_*`.
        pub rtm_flags: u32,
    }
}
const_assert_eq!(core::mem::size_of::<Rtmsg>(), 12);

crate::pod_struct! {
    /// `struct rta_cacheinfo`: 32 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct RtaCacheinfo {
        pub rta_clntref: u32,
        pub rta_lastuse: u32,
        pub rta_expires: i32,
        pub rta_error: u32,
        pub rta_used: u32,
        pub rta_id: u32,
        pub rta_ts: u32,
        pub rta_tsage: u32,
    }
}
const_assert_eq!(core::mem::size_of::<RtaCacheinfo>(), 32);

crate::pod_struct! {
    /// `struct rtnl_link_ifmap`: 32 bytes (24 of fields, padded to 8).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct RtnlLinkIfmap {
        pub mem_start: u64,
        pub mem_end: u64,
        pub base_addr: u64,
        pub irq: u16,
        pub dma: u8,
        pub port: u8,
        pub pad: u32,
    }
}
const_assert_eq!(core::mem::size_of::<RtnlLinkIfmap>(), 32);

/// How many counters `struct rtnl_link_stats64` (and `rtnl_link_stats`) have since Linux 5.19
/// (`rx_otherhost_dropped` last).
pub const LINK_STATS_N: usize = 25;
/// Indexes into the counter arrays (the field order of `rtnl_link_stats64`).
pub mod stats {
    pub const RX_PACKETS: usize = 0;
    pub const TX_PACKETS: usize = 1;
    pub const RX_BYTES: usize = 2;
    pub const TX_BYTES: usize = 3;
    pub const RX_ERRORS: usize = 4;
    pub const TX_ERRORS: usize = 5;
    pub const RX_DROPPED: usize = 6;
    pub const TX_DROPPED: usize = 7;
    pub const MULTICAST: usize = 8;
}
const_assert_eq!(LINK_STATS_N * 8, 200);

crate::pod_struct! {
    /// `struct inet_diag_sockid`: 48 bytes. Ports and addresses in network byte order.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct InetDiagSockid {
        pub idiag_sport: [u8; 2],
        pub idiag_dport: [u8; 2],
        pub idiag_src: [u8; 16],
        pub idiag_dst: [u8; 16],
        pub idiag_if: u32,
        pub idiag_cookie: [u32; 2],
    }
}
const_assert_eq!(core::mem::size_of::<InetDiagSockid>(), 48);

crate::pod_struct! {
    /// `struct inet_diag_req_v2`: 56 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct InetDiagReqV2 {
        pub sdiag_family: u8,
        pub sdiag_protocol: u8,
        /// Bits of the `INET_DIAG_*` attributes wanted (bit `n - 1` for attribute `n`).
        pub idiag_ext: u8,
        pub pad: u8,
        /// Bits of the TCP states wanted (`1 << TCP_*`).
        pub idiag_states: u32,
        pub id: InetDiagSockid,
    }
}
const_assert_eq!(core::mem::size_of::<InetDiagReqV2>(), 56);

crate::pod_struct! {
    /// `struct inet_diag_req` (the version 1 request of `TCPDIAG_GETSOCK`): 60 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct InetDiagReq {
        pub idiag_family: u8,
        pub idiag_src_len: u8,
        pub idiag_dst_len: u8,
        pub idiag_ext: u8,
        pub id: InetDiagSockid,
        pub idiag_states: u32,
        pub idiag_dbs: u32,
    }
}
const_assert_eq!(core::mem::size_of::<InetDiagReq>(), 60);

crate::pod_struct! {
    /// `struct inet_diag_msg`: 72 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct InetDiagMsg {
        pub idiag_family: u8,
        /// `TCP_*` (UDP: `TCP_ESTABLISHED` when connected, else `TCP_CLOSE`).
        pub idiag_state: u8,
        pub idiag_timer: u8,
        pub idiag_retrans: u8,
        pub id: InetDiagSockid,
        pub idiag_expires: u32,
        pub idiag_rqueue: u32,
        pub idiag_wqueue: u32,
        pub idiag_uid: u32,
        pub idiag_inode: u32,
    }
}
const_assert_eq!(core::mem::size_of::<InetDiagMsg>(), 72);

/// `SOCK_DIAG_BY_FAMILY`: the version 2 request.
pub const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `TCPDIAG_GETSOCK` / `DCCPDIAG_GETSOCK`: version 1 requests (`inet_diag_req`).
pub const TCPDIAG_GETSOCK: u16 = 18;
pub const DCCPDIAG_GETSOCK: u16 = 19;
/// `INET_DIAG_SHUTDOWN`: a u8 of the socket's shutdown bits.
pub const INET_DIAG_SHUTDOWN: u16 = 8;
/// `INET_DIAG_REQ_BYTECODE`: a filter program after the request (ignored here: every
/// socket is reported, the caller filters too).
pub const INET_DIAG_REQ_BYTECODE: u16 = 1;

/// TCP states (`include/net/tcp_states.h`).
pub mod tcp_state {
    pub const TCP_ESTABLISHED: u8 = 1;
    pub const TCP_CLOSE: u8 = 7;
    pub const TCP_CLOSE_WAIT: u8 = 8;
    pub const TCP_LISTEN: u8 = 10;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::pod::Pod;

    #[test]
    fn values_as_linux() {
        assert_eq!(NLM_F_DUMP, 0x300);
        assert_eq!(1 << (RTNLGRP_IPV6_ROUTE - 1), RTMGRP_IPV6_ROUTE);
        assert_eq!(1 << (RTNLGRP_IPV4_IFADDR - 1), RTMGRP_IPV4_IFADDR);
        assert_eq!(core::mem::offset_of!(InetDiagMsg, idiag_expires), 52);
        assert_eq!(core::mem::offset_of!(InetDiagReqV2, id), 8);
        let h = Nlmsghdr {
            nlmsg_len: 0x14,
            nlmsg_type: NLMSG_DONE,
            nlmsg_flags: NLM_F_MULTI,
            nlmsg_seq: 7,
            nlmsg_pid: 99,
        };
        assert_eq!(
            h.as_bytes(),
            [0x14, 0, 0, 0, 3, 0, 2, 0, 7, 0, 0, 0, 99, 0, 0, 0]
        );
    }
}
