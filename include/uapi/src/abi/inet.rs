//! Internet socket ABI: addresses, option structures and protocol numbers, identical on x86_64
//! and arm64.
//!
//! Sources: `include/uapi/linux/in.h` (`sockaddr_in`, `ip_mreq`, `ip_mreqn`, `IPPROTO_*`,
//! `IP_*` options), `include/uapi/linux/in6.h` (`sockaddr_in6`, `ipv6_mreq`, `IPV6_*`),
//! `include/uapi/linux/socket.h` (`sockaddr_storage`), `include/linux/socket.h`
//! (`struct linger`), `include/uapi/linux/tcp.h` (`TCP_*`), `include/uapi/linux/udp.h`.
//!
//! Port, address and flow-label fields are in network byte order on the wire; they are kept
//! here as byte arrays so the little-endian [`Pod`](super::pod::Pod) image cannot swap them.

use static_assertions::const_assert_eq;

/// `sizeof(struct sockaddr_storage)`: the most address bytes a socket call copies in.
pub const SOCKADDR_STORAGE: usize = 128;
/// `SIN6_LEN_RFC2133`: the shortest `sockaddr_in6` Linux accepts (without `sin6_scope_id`).
pub const SIN6_LEN_RFC2133: usize = 24;

/// `IPPROTO_IP` (also `SOL_IP`).
pub const IPPROTO_IP: i32 = 0;
/// `IPPROTO_ICMP`.
pub const IPPROTO_ICMP: i32 = 1;
/// `IPPROTO_TCP` (also `SOL_TCP`).
pub const IPPROTO_TCP: i32 = 6;
/// `IPPROTO_UDP` (also `SOL_UDP`).
pub const IPPROTO_UDP: i32 = 17;
/// `IPPROTO_IPV6` (also `SOL_IPV6`).
pub const IPPROTO_IPV6: i32 = 41;
/// `IPPROTO_ICMPV6` (also `SOL_ICMPV6`).
pub const IPPROTO_ICMPV6: i32 = 58;
/// `ICMPV6_FILTER` (`include/uapi/linux/icmpv6.h`): the type filter of a raw ICMPv6 socket,
/// at `SOL_ICMPV6`.
pub const ICMPV6_FILTER: i32 = 1;
/// `IPPROTO_UDPLITE`.
pub const IPPROTO_UDPLITE: i32 = 136;
/// `IPPROTO_SCTP`.
pub const IPPROTO_SCTP: i32 = 132;
/// `IPPROTO_RAW`.
pub const IPPROTO_RAW: i32 = 255;

/// Options at `SOL_IP` (`include/uapi/linux/in.h`).
pub mod ip {
    pub const IP_TOS: i32 = 1;
    pub const IP_TTL: i32 = 2;
    pub const IP_HDRINCL: i32 = 3;
    pub const IP_OPTIONS: i32 = 4;
    pub const IP_RECVOPTS: i32 = 6;
    pub const IP_RETOPTS: i32 = 7;
    pub const IP_PKTINFO: i32 = 8;
    pub const IP_MTU_DISCOVER: i32 = 10;
    pub const IP_RECVERR: i32 = 11;
    pub const IP_RECVTTL: i32 = 12;
    pub const IP_RECVTOS: i32 = 13;
    pub const IP_MTU: i32 = 14;
    pub const IP_FREEBIND: i32 = 15;
    pub const IP_TRANSPARENT: i32 = 19;
    pub const IP_BIND_ADDRESS_NO_PORT: i32 = 24;
    pub const IP_MULTICAST_IF: i32 = 32;
    pub const IP_MULTICAST_TTL: i32 = 33;
    pub const IP_MULTICAST_LOOP: i32 = 34;
    pub const IP_ADD_MEMBERSHIP: i32 = 35;
    pub const IP_DROP_MEMBERSHIP: i32 = 36;
    pub const IP_MULTICAST_ALL: i32 = 49;
    pub const MCAST_JOIN_GROUP: i32 = 42;
    pub const MCAST_LEAVE_GROUP: i32 = 45;
}

/// Options at `SOL_IPV6` (`include/uapi/linux/in6.h`).
pub mod ipv6 {
    pub const IPV6_ADDRFORM: i32 = 1;
    pub const IPV6_UNICAST_HOPS: i32 = 16;
    pub const IPV6_MULTICAST_IF: i32 = 17;
    pub const IPV6_MULTICAST_HOPS: i32 = 18;
    pub const IPV6_MULTICAST_LOOP: i32 = 19;
    pub const IPV6_JOIN_GROUP: i32 = 20;
    pub const IPV6_LEAVE_GROUP: i32 = 21;
    pub const IPV6_MTU_DISCOVER: i32 = 23;
    pub const IPV6_MTU: i32 = 24;
    pub const IPV6_RECVERR: i32 = 25;
    pub const IPV6_V6ONLY: i32 = 26;
    pub const IPV6_RECVPKTINFO: i32 = 49;
    pub const IPV6_RECVHOPLIMIT: i32 = 51;
    /// The control message type of `IPV6_RECVHOPLIMIT`.
    pub const IPV6_HOPLIMIT: i32 = 52;
    pub const IPV6_RTHDR: i32 = 57;
    /// The control message type of `IPV6_RECVPKTINFO`.
    pub const IPV6_PKTINFO: i32 = 50;
    pub const IPV6_TCLASS: i32 = 67;
}

/// Options at `SOL_TCP` (`include/uapi/linux/tcp.h`).
pub mod tcp {
    pub const TCP_NODELAY: i32 = 1;
    pub const TCP_MAXSEG: i32 = 2;
    pub const TCP_CORK: i32 = 3;
    pub const TCP_KEEPIDLE: i32 = 4;
    pub const TCP_KEEPINTVL: i32 = 5;
    pub const TCP_KEEPCNT: i32 = 6;
    pub const TCP_SYNCNT: i32 = 7;
    pub const TCP_LINGER2: i32 = 8;
    pub const TCP_DEFER_ACCEPT: i32 = 9;
    pub const TCP_WINDOW_CLAMP: i32 = 10;
    /// `struct tcp_info` ([`super::TcpInfo`]).
    pub const TCP_INFO: i32 = 11;
    pub const TCP_QUICKACK: i32 = 12;
    pub const TCP_CONGESTION: i32 = 13;
    pub const TCP_USER_TIMEOUT: i32 = 18;
    pub const TCP_FASTOPEN: i32 = 23;
    pub const TCP_NOTSENT_LOWAT: i32 = 25;
}

crate::pod_struct! {
    /// `struct tcp_info` of `include/uapi/linux/tcp.h` up to `tcpi_total_rto_time` (Linux
    /// 6.7): 248 bytes; `getsockopt(TCP_INFO)` copies the caller's length of it.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct TcpInfo {
        /// `tcpi_state` (`TCP_*`, include/net/tcp_states.h).
        pub tcpi_state: u8,
        pub tcpi_ca_state: u8,
        pub tcpi_retransmits: u8,
        pub tcpi_probes: u8,
        pub tcpi_backoff: u8,
        pub tcpi_options: u8,
        /// `tcpi_snd_wscale : 4, tcpi_rcv_wscale : 4`.
        pub tcpi_wscale: u8,
        /// `tcpi_delivery_rate_app_limited : 1, tcpi_fastopen_client_fail : 2`.
        pub tcpi_flags: u8,
        pub tcpi_rto: u32,
        pub tcpi_ato: u32,
        pub tcpi_snd_mss: u32,
        pub tcpi_rcv_mss: u32,
        pub tcpi_unacked: u32,
        pub tcpi_sacked: u32,
        pub tcpi_lost: u32,
        pub tcpi_retrans: u32,
        pub tcpi_fackets: u32,
        pub tcpi_last_data_sent: u32,
        pub tcpi_last_ack_sent: u32,
        pub tcpi_last_data_recv: u32,
        pub tcpi_last_ack_recv: u32,
        pub tcpi_pmtu: u32,
        pub tcpi_rcv_ssthresh: u32,
        pub tcpi_rtt: u32,
        pub tcpi_rttvar: u32,
        pub tcpi_snd_ssthresh: u32,
        pub tcpi_snd_cwnd: u32,
        pub tcpi_advmss: u32,
        pub tcpi_reordering: u32,
        pub tcpi_rcv_rtt: u32,
        pub tcpi_rcv_space: u32,
        pub tcpi_total_retrans: u32,
        pub tcpi_pacing_rate: u64,
        pub tcpi_max_pacing_rate: u64,
        pub tcpi_bytes_acked: u64,
        pub tcpi_bytes_received: u64,
        pub tcpi_segs_out: u32,
        pub tcpi_segs_in: u32,
        pub tcpi_notsent_bytes: u32,
        pub tcpi_min_rtt: u32,
        pub tcpi_data_segs_in: u32,
        pub tcpi_data_segs_out: u32,
        pub tcpi_delivery_rate: u64,
        pub tcpi_busy_time: u64,
        pub tcpi_rwnd_limited: u64,
        pub tcpi_sndbuf_limited: u64,
        pub tcpi_delivered: u32,
        pub tcpi_delivered_ce: u32,
        pub tcpi_bytes_sent: u64,
        pub tcpi_bytes_retrans: u64,
        pub tcpi_dsack_dups: u32,
        pub tcpi_reord_seen: u32,
        pub tcpi_rcv_ooopack: u32,
        pub tcpi_snd_wnd: u32,
        pub tcpi_rcv_wnd: u32,
        pub tcpi_rehash: u32,
        pub tcpi_total_rto: u16,
        pub tcpi_total_rto_recoveries: u16,
        pub tcpi_total_rto_time: u32,
    }
}
const_assert_eq!(core::mem::size_of::<TcpInfo>(), 248);
const_assert_eq!(core::mem::offset_of!(TcpInfo, tcpi_total_retrans), 100);
const_assert_eq!(core::mem::offset_of!(TcpInfo, tcpi_pacing_rate), 104);
const_assert_eq!(core::mem::offset_of!(TcpInfo, tcpi_rcv_wnd), 232);

crate::pod_struct! {
    /// `struct sockaddr_in`: 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SockaddrIn {
        /// `AF_INET`.
        pub sin_family: u16,
        /// Port, network byte order.
        pub sin_port: [u8; 2],
        /// Address, network byte order.
        pub sin_addr: [u8; 4],
        /// `sin_zero`.
        pub pad: [u8; 8],
    }
}
const_assert_eq!(core::mem::size_of::<SockaddrIn>(), 16);
const_assert_eq!(core::mem::offset_of!(SockaddrIn, sin_addr), 4);

crate::pod_struct! {
    /// `struct sockaddr_in6`: 28 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SockaddrIn6 {
        /// `AF_INET6`.
        pub sin6_family: u16,
        /// Port, network byte order.
        pub sin6_port: [u8; 2],
        /// Flow information, network byte order.
        pub sin6_flowinfo: [u8; 4],
        /// Address, network byte order.
        pub sin6_addr: [u8; 16],
        /// Interface of a link-local address (host byte order).
        pub sin6_scope_id: u32,
    }
}
const_assert_eq!(core::mem::size_of::<SockaddrIn6>(), 28);
const_assert_eq!(core::mem::offset_of!(SockaddrIn6, sin6_addr), 8);
const_assert_eq!(core::mem::offset_of!(SockaddrIn6, sin6_scope_id), 24);

crate::pod_struct! {
    /// `struct linger` (`SO_LINGER`): 8 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Linger {
        pub l_onoff: i32,
        /// Seconds.
        pub l_linger: i32,
    }
}
const_assert_eq!(core::mem::size_of::<Linger>(), 8);

crate::pod_struct! {
    /// `struct ip_mreqn` (`IP_ADD_MEMBERSHIP`; its first 8 bytes are `struct ip_mreq`): 12 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct IpMreqn {
        /// Group, network byte order.
        pub imr_multiaddr: [u8; 4],
        /// Local interface address, network byte order.
        pub imr_address: [u8; 4],
        /// Interface index (0: any).
        pub imr_ifindex: i32,
    }
}
const_assert_eq!(core::mem::size_of::<IpMreqn>(), 12);

crate::pod_struct! {
    /// `struct group_req` (`MCAST_JOIN_GROUP`): 136 bytes on 64-bit.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct GroupReq {
        pub gr_interface: u32,
        pub pad: u32,
        /// A `sockaddr_in` or `sockaddr_in6` inside a `sockaddr_storage`.
        pub gr_group: [u8; 128],
    }
}
const_assert_eq!(core::mem::size_of::<GroupReq>(), 136);
const_assert_eq!(core::mem::offset_of!(GroupReq, gr_group), 8);

impl Default for GroupReq {
    fn default() -> Self {
        GroupReq {
            gr_interface: 0,
            pad: 0,
            gr_group: [0; 128],
        }
    }
}

crate::pod_struct! {
    /// `struct ipv6_mreq` (`IPV6_JOIN_GROUP`): 20 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Ipv6Mreq {
        /// Group, network byte order.
        pub ipv6mr_multiaddr: [u8; 16],
        /// Interface index (0: any).
        pub ipv6mr_interface: i32,
    }
}
const_assert_eq!(core::mem::size_of::<Ipv6Mreq>(), 20);

crate::pod_struct! {
    /// `struct in_pktinfo` (an `IP_PKTINFO` control message): 12 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct InPktinfo {
        /// The interface the packet arrived on.
        pub ipi_ifindex: i32,
        /// The local address a reply would come from, network byte order.
        pub ipi_spec_dst: [u8; 4],
        /// The packet's destination address, network byte order.
        pub ipi_addr: [u8; 4],
    }
}
const_assert_eq!(core::mem::size_of::<InPktinfo>(), 12);

crate::pod_struct! {
    /// `struct in6_pktinfo` (an `IPV6_PKTINFO` control message): 20 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct In6Pktinfo {
        /// The packet's destination address, network byte order.
        pub ipi6_addr: [u8; 16],
        pub ipi6_ifindex: i32,
    }
}
const_assert_eq!(core::mem::size_of::<In6Pktinfo>(), 20);

/// `SO_EE_ORIGIN_ICMP` (`include/uapi/linux/errqueue.h`): an error-queue entry an ICMP error
/// made.
pub const SO_EE_ORIGIN_ICMP: u8 = 2;
/// `SO_EE_ORIGIN_ICMP6`: the same for ICMPv6.
pub const SO_EE_ORIGIN_ICMP6: u8 = 3;
/// `MSG_ERRQUEUE` (`include/linux/socket.h`): receive from the error queue; also set in
/// `msg_flags` of what it returns.
pub const MSG_ERRQUEUE: u32 = 0x2000;

crate::pod_struct! {
    /// `struct sock_extended_err` (`include/uapi/linux/errqueue.h`): the head of an
    /// `IP_RECVERR`/`IPV6_RECVERR` control message, followed by the offender's address
    /// (`SO_EE_OFFENDER`): 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SockExtendedErr {
        pub ee_errno: u32,
        /// `SO_EE_ORIGIN_*`.
        pub ee_origin: u8,
        /// The ICMP type and code.
        pub ee_type: u8,
        pub ee_code: u8,
        pub ee_pad: u8,
        /// The MTU of a "fragmentation needed", else 0.
        pub ee_info: u32,
        pub ee_data: u32,
    }
}
const_assert_eq!(core::mem::size_of::<SockExtendedErr>(), 16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn icmpv6_numbers() {
        // include/uapi/linux/in6.h IPPROTO_ICMPV6, include/uapi/linux/icmpv6.h ICMPV6_FILTER.
        assert_eq!((IPPROTO_ICMPV6, ICMPV6_FILTER), (58, 1));
        assert_eq!((ipv6::IPV6_RECVHOPLIMIT, ipv6::IPV6_HOPLIMIT), (51, 52));
    }

    #[test]
    fn errqueue_numbers() {
        use crate::abi::pod::Pod;
        // include/uapi/linux/errqueue.h, include/linux/socket.h.
        assert_eq!(
            (SO_EE_ORIGIN_ICMP, SO_EE_ORIGIN_ICMP6, MSG_ERRQUEUE),
            (2, 3, 0x2000)
        );
        let e = SockExtendedErr {
            ee_errno: 111,
            ee_origin: 2,
            ee_type: 3,
            ee_code: 3,
            ..Default::default()
        };
        assert_eq!(&e.as_bytes()[..8], &[111, 0, 0, 0, 2, 3, 3, 0]);
    }
}
