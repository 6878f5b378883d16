//! Network device ABI: interface flags, hardware types, address scopes and flags, identical on
//! x86_64 and arm64.
//!
//! Sources: `include/uapi/linux/if.h` (`IFF_*`, `IFNAMSIZ`), `include/uapi/linux/if_arp.h`
//! (`ARPHRD_*`), `include/uapi/linux/rtnetlink.h` (`RT_SCOPE_*`, `RTN_*`, `RTPROT_*`,
//! `RT_TABLE_*`), `include/uapi/linux/if_addr.h` (`IFA_F_*`). The users are `net/src/dev.rs` (the
//! device registry), rtnetlink, the `SIOCGIF*` ioctls and `/proc/net`.

pub use super::packet::ARPHRD_LOOPBACK;

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
/// `IFA_F_PERMANENT`: configured, not from autoconfiguration.
pub const IFA_F_PERMANENT: u32 = 0x80;
/// `IFA_F_NOPREFIXROUTE`: adding the address adds no prefix route.
pub const IFA_F_NOPREFIXROUTE: u32 = 0x200;

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
    }
}
