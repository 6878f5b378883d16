//! Network device ABI: interface flags, hardware types, address scopes and flags, identical on
//! x86_64 and arm64.
//!
//! Sources: `include/uapi/linux/if.h` (`IFF_*`, `IFNAMSIZ`), `include/uapi/linux/if_arp.h`
//! (`ARPHRD_*`), `include/uapi/linux/rtnetlink.h` (`RT_SCOPE_*`, `RTN_*`, `RTPROT_*`,
//! `RT_TABLE_*`), `include/uapi/linux/if_addr.h` (`IFA_F_*`). The users are `net/src/dev.rs` (the
//! device registry), rtnetlink, the `SIOCGIF*` ioctls and `/proc/net`.

pub use super::packet::ARPHRD_LOOPBACK;
use static_assertions::const_assert_eq;

/// `IFNAMSIZ`: an interface name's buffer, with its NUL.
pub const IFNAMSIZ: usize = 16;
/// `ARPHRD_ETHER`: Ethernet 10/100 Mbps (every Ethernet-like device).
pub const ARPHRD_ETHER: u16 = 1;

/// `IFF_UP`: administratively up.
pub const IFF_UP: u32 = 1 << 0;
/// `IFF_BROADCAST`: a broadcast address is valid.
pub const IFF_BROADCAST: u32 = 1 << 1;
/// `IFF_DEBUG`.
pub const IFF_DEBUG: u32 = 1 << 2;
/// `IFF_LOOPBACK`.
pub const IFF_LOOPBACK: u32 = 1 << 3;
/// `IFF_POINTOPOINT`.
pub const IFF_POINTOPOINT: u32 = 1 << 4;
/// `IFF_NOTRAILERS`.
pub const IFF_NOTRAILERS: u32 = 1 << 5;
/// `IFF_RUNNING`: operationally up (`netif_running` and the carrier, RFC 2863 "up").
pub const IFF_RUNNING: u32 = 1 << 6;
/// `IFF_NOARP`.
pub const IFF_NOARP: u32 = 1 << 7;
/// `IFF_PROMISC`.
pub const IFF_PROMISC: u32 = 1 << 8;
/// `IFF_ALLMULTI`.
pub const IFF_ALLMULTI: u32 = 1 << 9;
/// `IFF_MULTICAST`.
pub const IFF_MULTICAST: u32 = 1 << 12;
/// `IFF_LOWER_UP`: the driver signals L1 up (shown by rtnetlink, not by `SIOCGIFFLAGS`).
pub const IFF_LOWER_UP: u32 = 1 << 16;

/// `RT_SCOPE_UNIVERSE`: a global address or route.
pub const RT_SCOPE_UNIVERSE: u8 = 0;
/// `RT_SCOPE_LINK`: on this link only.
pub const RT_SCOPE_LINK: u8 = 253;
/// `RT_SCOPE_HOST`: on this host only (loopback addresses, local routes).
pub const RT_SCOPE_HOST: u8 = 254;

/// `RTN_UNICAST`: a gateway or direct route.
pub const RTN_UNICAST: u8 = 1;
/// `RTN_LOCAL`: accept locally.
pub const RTN_LOCAL: u8 = 2;
/// `RTN_BROADCAST`: accept locally as broadcast, send as broadcast.
pub const RTN_BROADCAST: u8 = 3;

/// `RTPROT_KERNEL`: a route the kernel made (from an address).
pub const RTPROT_KERNEL: u8 = 2;
/// `RTPROT_BOOT`: a route made at boot or by a user without saying who (`ip route add`).
pub const RTPROT_BOOT: u8 = 3;
/// `RTPROT_STATIC`: a route the administrator made (`route add`).
pub const RTPROT_STATIC: u8 = 4;
/// `RTPROT_DHCP`: a route a DHCP client made.
pub const RTPROT_DHCP: u8 = 16;
/// `RTPROT_RA`: a route from an IPv6 router advertisement.
pub const RTPROT_RA: u8 = 9;

/// `RT_TABLE_MAIN`: the table `ip route` shows.
pub const RT_TABLE_MAIN: u8 = 254;
/// `RT_TABLE_LOCAL`: local and broadcast routes, made by the kernel.
pub const RT_TABLE_LOCAL: u8 = 255;

/// `IFA_F_SECONDARY`: a second address of the same prefix on the same device.
pub const IFA_F_SECONDARY: u32 = 0x01;
/// `IFA_F_NODAD`: no duplicate address detection.
pub const IFA_F_NODAD: u32 = 0x02;
/// `IFA_F_DEPRECATED`: past its preferred lifetime (RFC 4862 5.5.4); not chosen as a
/// source for new connections.
pub const IFA_F_DEPRECATED: u32 = 0x20;
/// `IFA_F_PERMANENT`: configured, not from autoconfiguration.
pub const IFA_F_PERMANENT: u32 = 0x80;
/// `IFA_F_NOPREFIXROUTE`: adding the address adds no prefix route.
pub const IFA_F_NOPREFIXROUTE: u32 = 0x200;

/// `IFF_DYNAMIC`, `IFF_PORTSEL`, `IFF_AUTOMEDIA`, `IFF_MASTER`, `IFF_SLAVE` (the rest of the
/// 16 bits `SIOCGIFFLAGS` shows).
pub const IFF_MASTER: u32 = 1 << 10;
pub const IFF_SLAVE: u32 = 1 << 11;
pub const IFF_PORTSEL: u32 = 1 << 13;
pub const IFF_AUTOMEDIA: u32 = 1 << 14;
pub const IFF_DYNAMIC: u32 = 1 << 15;

/// The interface ioctls (`include/uapi/linux/sockios.h`), on any socket (`net/core/dev_ioctl.c`,
/// the address ones through `net/ipv4/devinet.c`, routes through `net/ipv4/fib_frontend.c`).
pub mod sioc {
    pub const SIOCADDRT: u32 = 0x890B;
    pub const SIOCDELRT: u32 = 0x890C;
    pub const SIOCGIFNAME: u32 = 0x8910;
    pub const SIOCGIFCONF: u32 = 0x8912;
    pub const SIOCGIFFLAGS: u32 = 0x8913;
    pub const SIOCSIFFLAGS: u32 = 0x8914;
    pub const SIOCGIFADDR: u32 = 0x8915;
    pub const SIOCSIFADDR: u32 = 0x8916;
    pub const SIOCGIFDSTADDR: u32 = 0x8917;
    pub const SIOCSIFDSTADDR: u32 = 0x8918;
    pub const SIOCGIFBRDADDR: u32 = 0x8919;
    pub const SIOCSIFBRDADDR: u32 = 0x891a;
    pub const SIOCGIFNETMASK: u32 = 0x891b;
    pub const SIOCSIFNETMASK: u32 = 0x891c;
    pub const SIOCGIFMETRIC: u32 = 0x891d;
    pub const SIOCSIFMETRIC: u32 = 0x891e;
    pub const SIOCGIFMTU: u32 = 0x8921;
    pub const SIOCSIFMTU: u32 = 0x8922;
    pub const SIOCSIFNAME: u32 = 0x8923;
    pub const SIOCSIFHWADDR: u32 = 0x8924;
    pub const SIOCGIFHWADDR: u32 = 0x8927;
    pub const SIOCADDMULTI: u32 = 0x8931;
    pub const SIOCDELMULTI: u32 = 0x8932;
    pub const SIOCGIFINDEX: u32 = 0x8933;
    pub const SIOCDIFADDR: u32 = 0x8936;
    pub const SIOCGIFCOUNT: u32 = 0x8938;
    pub const SIOCGIFTXQLEN: u32 = 0x8942;
    pub const SIOCSIFTXQLEN: u32 = 0x8943;
    pub const SIOCETHTOOL: u32 = 0x8946;
    pub const SIOCGIFMAP: u32 = 0x8970;
    pub const SIOCSIFMAP: u32 = 0x8971;
}

/// `rt_flags` of `struct rtentry` and `/proc/net/route` (`include/uapi/linux/route.h`).
pub const RTF_UP: u16 = 0x0001;
pub const RTF_GATEWAY: u16 = 0x0002;
pub const RTF_HOST: u16 = 0x0004;
pub const RTF_REJECT: u16 = 0x0200;

crate::pod_struct! {
    /// `struct ifreq` (LP64): the name, then a 24-byte union (`ifr_addr`, `ifr_flags`,
    /// `ifr_ifindex`, `ifr_mtu`, `ifr_hwaddr`, `ifr_newname`, `ifr_map`...).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Ifreq {
        pub ifr_name: [u8; IFNAMSIZ],
        pub ifr_ifru: [u8; 24],
    }
}
const_assert_eq!(core::mem::size_of::<Ifreq>(), 40);

crate::pod_struct! {
    /// `struct ifconf` (LP64).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Ifconf {
        /// Bytes of the buffer; out: bytes used (or needed, with a NULL buffer).
        pub ifc_len: i32,
        pub pad: u32,
        pub ifc_buf: u64,
    }
}
const_assert_eq!(core::mem::size_of::<Ifconf>(), 16);

crate::pod_struct! {
    /// `struct sockaddr`: 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Sockaddr {
        pub sa_family: u16,
        pub sa_data: [u8; 14],
    }
}
const_assert_eq!(core::mem::size_of::<Sockaddr>(), 16);

crate::pod_struct! {
    /// `struct rtentry` (LP64): 120 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Rtentry {
        pub rt_pad1: u64,
        pub rt_dst: Sockaddr,
        pub rt_gateway: Sockaddr,
        pub rt_genmask: Sockaddr,
        pub rt_flags: u16,
        pub rt_pad2: i16,
        pub pad0: u32,
        pub rt_pad3: u64,
        pub rt_pad4: u64,
        /// The metric plus one (0: the default).
        pub rt_metric: i16,
        pub pad1: [u8; 6],
        /// A user pointer to the device name, or 0.
        pub rt_dev: u64,
        pub rt_mtu: u64,
        pub rt_window: u64,
        pub rt_irtt: u16,
        pub pad2: [u8; 6],
    }
}
const_assert_eq!(core::mem::size_of::<Rtentry>(), 120);
const_assert_eq!(core::mem::offset_of!(Rtentry, rt_flags), 56);
const_assert_eq!(core::mem::offset_of!(Rtentry, rt_metric), 80);
const_assert_eq!(core::mem::offset_of!(Rtentry, rt_dev), 88);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_linux() {
        // include/uapi/linux/if.h: IFF_LOWER_UP = 1<<16 (`net_device_flags`).
        assert_eq!(IFF_UP | IFF_BROADCAST | IFF_RUNNING | IFF_MULTICAST, 0x1043);
        assert_eq!(IFF_LOWER_UP, 0x10000);
        assert_eq!((ARPHRD_ETHER, ARPHRD_LOOPBACK), (1, 772));
        assert_eq!((RT_TABLE_MAIN, RT_TABLE_LOCAL), (254, 255));
        // include/uapi/linux/if_addr.h.
        assert_eq!((IFA_F_DEPRECATED, IFA_F_PERMANENT), (0x20, 0x80));
        // include/uapi/linux/rtnetlink.h: RTPROT_RA 9.
        assert_eq!(RTPROT_RA, 9);
    }
}
