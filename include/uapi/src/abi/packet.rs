//! Packet socket ABI (`AF_PACKET`): link-level addresses, ring requests and ring frame headers,
//! statistics, identical on x86_64 and arm64 (both LP64: `tpacket_hdr`'s `unsigned long`
//! status is 8 bytes on both).
//!
//! Sources: `include/uapi/linux/if_packet.h` (`sockaddr_ll`, `tpacket_*`, `packet_mreq`,
//! `PACKET_*`, `TP_STATUS_*`), `include/uapi/linux/if_ether.h` (`ETH_*`),
//! `include/uapi/linux/if_arp.h` (`ARPHRD_LOOPBACK`), `include/linux/socket.h` (`SOL_PACKET`).
//! The users are `net/src/packet.rs` (and the guest programs mirror these layouts).

use static_assertions::const_assert_eq;

/// `AF_PACKET`.
pub const AF_PACKET: u32 = 17;
/// `SOL_PACKET`.
pub const SOL_PACKET: i32 = 263;
/// `SOCK_PACKET`: the obsolete type-10 packet socket.
pub const SOCK_PACKET: u32 = 10;

/// `ETH_ALEN`.
pub const ETH_ALEN: usize = 6;
/// `ETH_HLEN`: destination, source, ethertype.
pub const ETH_HLEN: usize = 14;
/// `ETH_P_ALL`: every protocol (host byte order).
pub const ETH_P_ALL: u16 = 0x0003;
/// `ETH_P_802_3`: a Novell raw 802.3 frame (length field, payload starts 0xFFFF).
pub const ETH_P_802_3: u16 = 0x0001;
/// `ETH_P_802_2`: an 802.2 LLC frame (length field).
pub const ETH_P_802_2: u16 = 0x0004;
/// `ETH_P_802_3_MIN`: ethertypes below this are 802.3 lengths.
pub const ETH_P_802_3_MIN: u16 = 0x0600;
/// `ARPHRD_LOOPBACK`: the loopback device's hardware type.
pub const ARPHRD_LOOPBACK: u16 = 772;

/// `sll_pkttype` values.
pub const PACKET_HOST: u8 = 0;
pub const PACKET_BROADCAST: u8 = 1;
pub const PACKET_MULTICAST: u8 = 2;
pub const PACKET_OTHERHOST: u8 = 3;
pub const PACKET_OUTGOING: u8 = 4;

/// Options at `SOL_PACKET`.
pub mod opt {
    pub const PACKET_ADD_MEMBERSHIP: i32 = 1;
    pub const PACKET_DROP_MEMBERSHIP: i32 = 2;
    pub const PACKET_RECV_OUTPUT: i32 = 3;
    pub const PACKET_RX_RING: i32 = 5;
    pub const PACKET_STATISTICS: i32 = 6;
    pub const PACKET_COPY_THRESH: i32 = 7;
    pub const PACKET_AUXDATA: i32 = 8;
    pub const PACKET_ORIGDEV: i32 = 9;
    pub const PACKET_VERSION: i32 = 10;
    pub const PACKET_HDRLEN: i32 = 11;
    pub const PACKET_RESERVE: i32 = 12;
    pub const PACKET_TX_RING: i32 = 13;
    pub const PACKET_LOSS: i32 = 14;
    pub const PACKET_VNET_HDR: i32 = 15;
    pub const PACKET_TX_TIMESTAMP: i32 = 16;
    pub const PACKET_TIMESTAMP: i32 = 17;
    pub const PACKET_FANOUT: i32 = 18;
    pub const PACKET_TX_HAS_OFF: i32 = 19;
    pub const PACKET_QDISC_BYPASS: i32 = 20;
    pub const PACKET_ROLLOVER_STATS: i32 = 21;
    pub const PACKET_FANOUT_DATA: i32 = 22;
    pub const PACKET_IGNORE_OUTGOING: i32 = 23;
}

/// `packet_mreq.mr_type` values.
pub const PACKET_MR_MULTICAST: u16 = 0;
pub const PACKET_MR_PROMISC: u16 = 1;
pub const PACKET_MR_ALLMULTI: u16 = 2;
pub const PACKET_MR_UNICAST: u16 = 3;

/// `enum tpacket_versions`.
pub const TPACKET_V1: i32 = 0;
pub const TPACKET_V2: i32 = 1;
pub const TPACKET_V3: i32 = 2;
/// `TPACKET_ALIGNMENT`: frames and the headers' sockaddr_ll are aligned to this.
pub const TPACKET_ALIGNMENT: u32 = 16;
/// `TPACKET_ALIGN(x)`.
pub const fn tpacket_align(x: u32) -> u32 {
    (x + TPACKET_ALIGNMENT - 1) & !(TPACKET_ALIGNMENT - 1)
}

/// Frame and block status bits (`tp_status`, `block_status`): receive side.
pub const TP_STATUS_KERNEL: u32 = 0;
pub const TP_STATUS_USER: u32 = 1 << 0;
pub const TP_STATUS_COPY: u32 = 1 << 1;
pub const TP_STATUS_LOSING: u32 = 1 << 2;
pub const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;
pub const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
pub const TP_STATUS_BLK_TMO: u32 = 1 << 5;
pub const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
pub const TP_STATUS_CSUM_VALID: u32 = 1 << 7;
/// Transmit side.
pub const TP_STATUS_AVAILABLE: u32 = 0;
pub const TP_STATUS_SEND_REQUEST: u32 = 1 << 0;
pub const TP_STATUS_SENDING: u32 = 1 << 1;
pub const TP_STATUS_WRONG_FORMAT: u32 = 1 << 2;

crate::pod_struct! {
    /// `struct sockaddr_ll`: 20 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SockaddrLl {
        /// `AF_PACKET`.
        pub sll_family: u16,
        /// Ethertype, network byte order.
        pub sll_protocol: [u8; 2],
        pub sll_ifindex: i32,
        pub sll_hatype: u16,
        pub sll_pkttype: u8,
        pub sll_halen: u8,
        pub sll_addr: [u8; 8],
    }
}
const_assert_eq!(core::mem::size_of::<SockaddrLl>(), 20);
const_assert_eq!(core::mem::offset_of!(SockaddrLl, sll_ifindex), 4);
const_assert_eq!(core::mem::offset_of!(SockaddrLl, sll_addr), 12);

crate::pod_struct! {
    /// `struct packet_mreq`: 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct PacketMreq {
        pub mr_ifindex: i32,
        pub mr_type: u16,
        pub mr_alen: u16,
        pub mr_address: [u8; 8],
    }
}
const_assert_eq!(core::mem::size_of::<PacketMreq>(), 16);
const_assert_eq!(core::mem::offset_of!(PacketMreq, mr_address), 8);

crate::pod_struct! {
    /// `struct tpacket_req` (TPACKET_V1/V2 rings): 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct TpacketReq {
        pub tp_block_size: u32,
        pub tp_block_nr: u32,
        pub tp_frame_size: u32,
        pub tp_frame_nr: u32,
    }
}
const_assert_eq!(core::mem::size_of::<TpacketReq>(), 16);

crate::pod_struct! {
    /// `struct tpacket_req3` (TPACKET_V3 rings): 28 bytes, `tpacket_req` plus three fields.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct TpacketReq3 {
        pub tp_block_size: u32,
        pub tp_block_nr: u32,
        pub tp_frame_size: u32,
        pub tp_frame_nr: u32,
        pub tp_retire_blk_tov: u32,
        pub tp_sizeof_priv: u32,
        pub tp_feature_req_word: u32,
    }
}
const_assert_eq!(core::mem::size_of::<TpacketReq3>(), 28);
const_assert_eq!(core::mem::offset_of!(TpacketReq3, tp_sizeof_priv), 20);

crate::pod_struct! {
    /// `struct tpacket_hdr` (TPACKET_V1 frame header): 32 bytes on LP64.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct TpacketHdr {
        /// `unsigned long`.
        pub tp_status: u64,
        pub tp_len: u32,
        pub tp_snaplen: u32,
        pub tp_mac: u16,
        pub tp_net: u16,
        pub tp_sec: u32,
        pub tp_usec: u32,
        /// Tail padding to the `unsigned long` alignment.
        pub pad: u32,
    }
}
const_assert_eq!(core::mem::size_of::<TpacketHdr>(), 32);
const_assert_eq!(core::mem::offset_of!(TpacketHdr, tp_len), 8);
const_assert_eq!(core::mem::offset_of!(TpacketHdr, tp_mac), 16);
const_assert_eq!(core::mem::offset_of!(TpacketHdr, tp_sec), 20);

crate::pod_struct! {
    /// `struct tpacket2_hdr` (TPACKET_V2 frame header): 32 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Tpacket2Hdr {
        pub tp_status: u32,
        pub tp_len: u32,
        pub tp_snaplen: u32,
        pub tp_mac: u16,
        pub tp_net: u16,
        pub tp_sec: u32,
        pub tp_nsec: u32,
        pub tp_vlan_tci: u16,
        pub tp_vlan_tpid: u16,
        pub tp_padding: [u8; 4],
    }
}
const_assert_eq!(core::mem::size_of::<Tpacket2Hdr>(), 32);
const_assert_eq!(core::mem::offset_of!(Tpacket2Hdr, tp_mac), 12);
const_assert_eq!(core::mem::offset_of!(Tpacket2Hdr, tp_vlan_tci), 24);

crate::pod_struct! {
    /// `struct tpacket3_hdr` (TPACKET_V3 frame in a block): 48 bytes; `hv1` is
    /// `struct tpacket_hdr_variant1` flattened.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Tpacket3Hdr {
        pub tp_next_offset: u32,
        pub tp_sec: u32,
        pub tp_nsec: u32,
        pub tp_snaplen: u32,
        pub tp_len: u32,
        pub tp_status: u32,
        pub tp_mac: u16,
        pub tp_net: u16,
        pub tp_rxhash: u32,
        pub tp_vlan_tci: u32,
        pub tp_vlan_tpid: u16,
        pub hv1_padding: u16,
        pub tp_padding: [u8; 8],
    }
}
const_assert_eq!(core::mem::size_of::<Tpacket3Hdr>(), 48);
const_assert_eq!(core::mem::offset_of!(Tpacket3Hdr, tp_status), 20);
const_assert_eq!(core::mem::offset_of!(Tpacket3Hdr, tp_mac), 24);
const_assert_eq!(core::mem::offset_of!(Tpacket3Hdr, tp_rxhash), 28);

crate::pod_struct! {
    /// `struct tpacket_block_desc` with its `tpacket_hdr_v1` (the only `bd_header_u` member)
    /// flattened: 48 bytes, the head of each TPACKET_V3 block.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct TpacketBlockDesc {
        pub version: u32,
        pub offset_to_priv: u32,
        pub block_status: u32,
        pub num_pkts: u32,
        pub offset_to_first_pkt: u32,
        pub blk_len: u32,
        /// `aligned_u64`.
        pub seq_num: u64,
        pub ts_first_sec: u32,
        pub ts_first_nsec: u32,
        pub ts_last_sec: u32,
        pub ts_last_nsec: u32,
    }
}
const_assert_eq!(core::mem::size_of::<TpacketBlockDesc>(), 48);
const_assert_eq!(core::mem::offset_of!(TpacketBlockDesc, block_status), 8);
const_assert_eq!(core::mem::offset_of!(TpacketBlockDesc, seq_num), 24);
const_assert_eq!(core::mem::offset_of!(TpacketBlockDesc, ts_last_sec), 40);

crate::pod_struct! {
    /// `struct tpacket_stats`: 8 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct TpacketStats {
        pub tp_packets: u32,
        pub tp_drops: u32,
    }
}
const_assert_eq!(core::mem::size_of::<TpacketStats>(), 8);

crate::pod_struct! {
    /// `struct tpacket_stats_v3`: 12 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct TpacketStatsV3 {
        pub tp_packets: u32,
        pub tp_drops: u32,
        pub tp_freeze_q_cnt: u32,
    }
}
const_assert_eq!(core::mem::size_of::<TpacketStatsV3>(), 12);

crate::pod_struct! {
    /// `struct tpacket_auxdata` (the `PACKET_AUXDATA` control message): 20 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct TpacketAuxdata {
        pub tp_status: u32,
        pub tp_len: u32,
        pub tp_snaplen: u32,
        pub tp_mac: u16,
        pub tp_net: u16,
        pub tp_vlan_tci: u16,
        pub tp_vlan_tpid: u16,
    }
}
const_assert_eq!(core::mem::size_of::<TpacketAuxdata>(), 20);

/// `TPACKET_HDRLEN`, `TPACKET2_HDRLEN`, `TPACKET3_HDRLEN`: a frame header, aligned, plus the
/// `sockaddr_ll` after it (what `tp_hdrlen` is for the version).
pub const fn tpacket_hdrlen(version: i32) -> u32 {
    let h = match version {
        TPACKET_V1 => core::mem::size_of::<TpacketHdr>(),
        TPACKET_V2 => core::mem::size_of::<Tpacket2Hdr>(),
        _ => core::mem::size_of::<Tpacket3Hdr>(),
    };
    tpacket_align(h as u32) + core::mem::size_of::<SockaddrLl>() as u32
}
const_assert_eq!(tpacket_hdrlen(TPACKET_V1), 52);
const_assert_eq!(tpacket_hdrlen(TPACKET_V2), 52);
const_assert_eq!(tpacket_hdrlen(TPACKET_V3), 68);
