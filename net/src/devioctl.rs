//! The interface ioctls of every socket (Linux `net/core/dev_ioctl.c` `dev_ioctl` and
//! `dev_ifconf`, `net/ipv4/devinet.c` `devinet_ioctl` and `inet_gifconf`,
//! `net/ipv4/fib_frontend.c` `ip_rt_ioctl`, netdevice(7)), over [`crate::dev`] of the
//! caller's network namespace.
//!
//! Any socket: `SIOCGIFCONF` (the IPv4 addresses, one `ifreq` each, labelled), `SIOCGIFNAME`,
//! `SIOCGIFINDEX`, `SIOCGIFFLAGS`/`SIOCSIFFLAGS` (the low 16 flag bits), `SIOCGIFMTU`/
//! `SIOCSIFMTU`, `SIOCGIFHWADDR`, `SIOCGIFTXQLEN`/`SIOCSIFTXQLEN`, `SIOCGIFMETRIC` (0),
//! `SIOCGIFMAP` (zeros), `SIOCSIFNAME`. IPv4 and packet sockets also take the address ioctls
//! (`SIOCGIFADDR`, `SIOCGIFNETMASK`, `SIOCGIFBRDADDR`, `SIOCGIFDSTADDR` and their `SIOCS`
//! forms: an address found by label and, 4.4BSD style, address; `EADDRNOTAVAIL` without
//! one) and the route ioctls `SIOCADDRT`/`SIOCDELRT` (`struct rtentry`). Changes need
//! `CAP_NET_ADMIN` (`EPERM`, checked before the device is looked up, as Linux does); an
//! unknown name is `ENODEV`; bad guest pointers `EFAULT`; unknown commands `ENOTTY`.
//!
//! Difference from Linux: the namespace is the caller's, not the socket's (the same unless
//! the socket was passed across namespaces). `SIOCETHTOOL` is `EOPNOTSUPP`.

use crate::dev::{self, IfAddr, NetDevices, Route};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use um_kernel::netns::{self, NetNs};
use um_kernel::vfs::GuestMem;
use um_kernel::wait::IoCtx;
use um_uapi::abi::capability::CAP_NET_ADMIN;
use um_uapi::abi::netdevice::sioc::*;
use um_uapi::abi::netdevice::*;
use um_uapi::abi::pod::Pod;
use um_uapi::{Errno, SysResult};

const AF_INET: u16 = 2;

fn read<T: Pod>(mem: &mut dyn GuestMem, addr: u64) -> SysResult<T> {
    let mut b = vec![0u8; T::SIZE];
    mem.read(addr, &mut b)?;
    Ok(T::read_le(&b))
}

/// The name in an `ifreq` (up to its NUL; the last byte is always a terminator).
fn ifr_name(r: &Ifreq) -> String {
    let n = &r.ifr_name[..IFNAMSIZ - 1];
    let end = n.iter().position(|&c| c == 0).unwrap_or(n.len());
    String::from_utf8_lossy(&n[..end]).into_owned()
}

fn set_name(r: &mut Ifreq, name: &str) {
    r.ifr_name = [0; IFNAMSIZ];
    let b = name.as_bytes();
    let n = b.len().min(IFNAMSIZ - 1);
    r.ifr_name[..n].copy_from_slice(&b[..n]);
}

/// A `sockaddr_in` in the union.
fn put_sin(r: &mut Ifreq, a: Ipv4Addr) {
    r.ifr_ifru = [0; 24];
    r.ifr_ifru[..2].copy_from_slice(&AF_INET.to_le_bytes());
    r.ifr_ifru[4..8].copy_from_slice(&a.octets());
}

fn sin_of(r: &Ifreq) -> (u16, Ipv4Addr) {
    let u = &r.ifr_ifru;
    (
        u16::from_le_bytes([u[0], u[1]]),
        Ipv4Addr::new(u[4], u[5], u[6], u[7]),
    )
}

fn int_of(r: &Ifreq) -> i32 {
    let u = &r.ifr_ifru;
    i32::from_le_bytes([u[0], u[1], u[2], u[3]])
}

fn put_int(r: &mut Ifreq, v: i32) {
    r.ifr_ifru = [0; 24];
    r.ifr_ifru[..4].copy_from_slice(&v.to_le_bytes());
}

/// `inet_make_mask`.
fn mask(len: u8) -> Ipv4Addr {
    Ipv4Addr::from(if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    })
}

/// `inet_mask_len` of a contiguous mask, None for a bad one (`bad_mask`).
fn mask_len(m: Ipv4Addr) -> Option<u8> {
    let v = u32::from(m);
    let len = v.leading_ones();
    if v.checked_shl(len).unwrap_or(0) != 0 {
        return None;
    }
    Some(len as u8)
}

/// `inet_abc_len`: the classful prefix of an address (`EINVAL` for class D/E).
fn abc_len(a: Ipv4Addr) -> Option<u8> {
    let o = a.octets()[0];
    if a.is_unspecified() {
        Some(0)
    } else if o < 128 {
        Some(8)
    } else if o < 192 {
        Some(16)
    } else if o < 224 {
        Some(24)
    } else {
        None
    }
}

/// The interface ioctls. `inet`: the socket is IPv4 or packet (the address and route
/// ioctls exist there).
pub fn dev_ioctl(
    io: &IoCtx<'_>,
    cmd: u32,
    arg: u64,
    mem: &mut dyn GuestMem,
    inet: bool,
) -> SysResult<u64> {
    let net = netns::of(&io.task.process);
    let admin = io.task.process.net_capable(CAP_NET_ADMIN);
    match cmd {
        SIOCGIFCONF => ifconf(&net, arg, mem),
        SIOCADDRT | SIOCDELRT if inet => route_ioctl(&net, cmd, arg, mem, admin),
        SIOCGIFADDR | SIOCSIFADDR | SIOCGIFDSTADDR | SIOCSIFDSTADDR | SIOCGIFBRDADDR
        | SIOCSIFBRDADDR | SIOCGIFNETMASK | SIOCSIFNETMASK
            if inet =>
        {
            let mut r: Ifreq = read(mem, arg)?;
            devinet(&net, cmd, &mut r, admin)?;
            mem.write(arg, &r.as_bytes())?;
            Ok(0)
        }
        SIOCGIFNAME | SIOCGIFINDEX | SIOCGIFFLAGS | SIOCSIFFLAGS | SIOCGIFMTU | SIOCSIFMTU
        | SIOCGIFHWADDR | SIOCGIFTXQLEN | SIOCSIFTXQLEN | SIOCGIFMETRIC | SIOCSIFMETRIC
        | SIOCGIFMAP | SIOCSIFMAP | SIOCSIFNAME | SIOCSIFHWADDR | SIOCADDMULTI | SIOCDELMULTI
        | SIOCETHTOOL => {
            let mut r: Ifreq = read(mem, arg)?;
            if ifsioc(&net, cmd, &mut r, admin)? {
                mem.write(arg, &r.as_bytes())?;
            }
            Ok(0)
        }
        _ => Err(Errno::ENOTTY),
    }
}

/// `dev_ifconf` with `inet_gifconf`: with a NULL buffer, the bytes needed.
fn ifconf(net: &Arc<NetNs>, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
    let mut ifc: Ifconf = read(mem, arg)?;
    let d = dev::devices(net);
    let addrs = d.addrs();
    let mut total = 0usize;
    let len = ifc.ifc_len.max(0) as usize;
    'devs: for dv in d.list() {
        for a in addrs.iter().filter(|a| a.ifindex == dv.ifindex) {
            let IpAddr::V4(ip) = a.addr else { continue };
            if ifc.ifc_buf != 0 {
                if len - total < Ifreq::SIZE {
                    break 'devs;
                }
                let mut r = Ifreq::default();
                set_name(&mut r, &a.label);
                put_sin(&mut r, ip);
                mem.write(ifc.ifc_buf + total as u64, &r.as_bytes())?;
            }
            total += Ifreq::SIZE;
        }
    }
    ifc.ifc_len = total as i32;
    mem.write(arg, &ifc.ifc_len.to_le_bytes())?;
    Ok(0)
}

/// `dev_ifsioc_locked` and `dev_ifsioc`: returns whether the `ifreq` goes back out.
fn ifsioc(net: &Arc<NetNs>, cmd: u32, r: &mut Ifreq, admin: bool) -> SysResult<bool> {
    let d = dev::devices(net);
    if cmd == SIOCGIFNAME {
        let dv = d.by_index(int_of(r)).ok_or(Errno::ENODEV)?;
        set_name(r, &dv.name());
        return Ok(true);
    }
    let getter = matches!(
        cmd,
        SIOCGIFINDEX
            | SIOCGIFFLAGS
            | SIOCGIFMTU
            | SIOCGIFHWADDR
            | SIOCGIFTXQLEN
            | SIOCGIFMETRIC
            | SIOCGIFMAP
    );
    if !getter && !admin {
        return Err(Errno::EPERM);
    }
    let dv = d.by_name(&ifr_name(r)).ok_or(Errno::ENODEV)?;
    let i = dv.ifindex;
    match cmd {
        SIOCGIFINDEX => put_int(r, i),
        SIOCGIFFLAGS => {
            // The short `ifr_flags`: IFF_LOWER_UP and above do not fit.
            r.ifr_ifru = [0; 24];
            r.ifr_ifru[..2].copy_from_slice(&(dv.flags() as u16).to_le_bytes());
        }
        SIOCGIFMTU => put_int(r, dv.mtu() as i32),
        SIOCGIFMETRIC => put_int(r, 0),
        SIOCGIFTXQLEN => put_int(r, dv.txqlen() as i32),
        SIOCGIFMAP => r.ifr_ifru = [0; 24],
        SIOCGIFHWADDR => {
            r.ifr_ifru = [0; 24];
            r.ifr_ifru[..2].copy_from_slice(&dv.kind.to_le_bytes());
            r.ifr_ifru[2..8].copy_from_slice(&dv.mac);
        }
        SIOCSIFFLAGS => {
            let low = u32::from(u16::from_le_bytes([r.ifr_ifru[0], r.ifr_ifru[1]]));
            d.set_flags(net, i, (dv.flags() & !0xffff) | low)?;
            return Ok(false);
        }
        SIOCSIFMTU => {
            let m = int_of(r);
            if m < 0 {
                return Err(Errno::EINVAL);
            }
            d.set_mtu(net, i, m as u32)?;
            return Ok(false);
        }
        SIOCSIFTXQLEN => {
            let q = int_of(r);
            if q < 0 {
                return Err(Errno::EINVAL);
            }
            d.set_txqlen(net, i, q as u32)?;
            return Ok(false);
        }
        SIOCSIFNAME => {
            let mut n = [0u8; IFNAMSIZ];
            n.copy_from_slice(&r.ifr_ifru[..IFNAMSIZ]);
            n[IFNAMSIZ - 1] = 0;
            let end = n.iter().position(|&c| c == 0).unwrap_or(IFNAMSIZ);
            let new = String::from_utf8_lossy(&n[..end]).into_owned();
            d.set_name(net, i, &new)?;
            return Ok(false);
        }
        SIOCSIFHWADDR => {
            if r.ifr_ifru[2..8] != dv.mac {
                return Err(Errno::EOPNOTSUPP);
            }
            return Ok(false);
        }
        // Metric and map changes: `EOPNOTSUPP` (dev_ifsioc); multicast lists are not kept.
        SIOCSIFMETRIC | SIOCSIFMAP | SIOCETHTOOL => return Err(Errno::EOPNOTSUPP),
        SIOCADDMULTI | SIOCDELMULTI => return Ok(false),
        _ => return Err(Errno::ENOTTY),
    }
    Ok(true)
}

/// `devinet_ioctl`.
fn devinet(net: &Arc<NetNs>, cmd: u32, r: &mut Ifreq, admin: bool) -> SysResult<()> {
    let (orig_family, orig_addr) = sin_of(r);
    let getter = matches!(
        cmd,
        SIOCGIFADDR | SIOCGIFBRDADDR | SIOCGIFDSTADDR | SIOCGIFNETMASK
    );
    if getter {
        put_sin(r, Ipv4Addr::UNSPECIFIED);
    } else {
        if !admin {
            return Err(Errno::EPERM);
        }
        if orig_family != AF_INET {
            return Err(Errno::EINVAL);
        }
    }
    let full = ifr_name(r);
    let devname = full.split(':').next().unwrap_or_default().to_string();
    let d = dev::devices(net);
    let dv = d.by_name(&devname).ok_or(Errno::ENODEV)?;
    let addrs: Vec<IfAddr> = d
        .addrs()
        .into_iter()
        .filter(|a| a.ifindex == dv.ifindex && a.addr.is_ipv4())
        .collect();
    let mut ifa = None;
    if getter && orig_family == AF_INET {
        ifa = addrs
            .iter()
            .find(|a| a.label == full && a.addr == IpAddr::V4(orig_addr));
    }
    if ifa.is_none() {
        ifa = addrs.iter().find(|a| a.label == full);
    }
    let ifa = ifa.cloned();
    let v4 = |a: &IfAddr| match a.addr {
        IpAddr::V4(v) => v,
        IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
    };
    if ifa.is_none() && cmd != SIOCSIFADDR {
        return Err(Errno::EADDRNOTAVAIL);
    }
    let broadcast_capable = dv.flags() & IFF_BROADCAST != 0;
    match cmd {
        SIOCGIFADDR | SIOCGIFDSTADDR => put_sin(r, v4(ifa.as_ref().expect("found"))),
        SIOCGIFBRDADDR => put_sin(
            r,
            ifa.as_ref()
                .and_then(|a| a.broadcast)
                .unwrap_or(Ipv4Addr::UNSPECIFIED),
        ),
        SIOCGIFNETMASK => put_sin(r, mask(ifa.as_ref().expect("found").prefix_len)),
        SIOCSIFADDR => {
            let len = abc_len(orig_addr).ok_or(Errno::EINVAL)?;
            let mut a = match ifa {
                Some(old) => {
                    if old.addr == IpAddr::V4(orig_addr) {
                        return Ok(());
                    }
                    d.del_addr(net, dv.ifindex, old.addr)?;
                    IfAddr {
                        broadcast: None,
                        ..old
                    }
                }
                None => IfAddr::new(dv.ifindex, IpAddr::V4(orig_addr), 0, &full),
            };
            a.addr = IpAddr::V4(orig_addr);
            a.scope = IfAddr::new(dv.ifindex, a.addr, 0, "").scope;
            if dv.flags() & IFF_POINTOPOINT == 0 {
                a.prefix_len = len;
                if broadcast_capable && len < 31 {
                    a.broadcast =
                        Some(Ipv4Addr::from(u32::from(orig_addr) | !u32::from(mask(len))));
                }
            } else {
                a.prefix_len = 32;
            }
            d.add_addr(net, a)?;
        }
        SIOCSIFBRDADDR => {
            let mut a = ifa.expect("found");
            if a.broadcast != Some(orig_addr) {
                d.del_addr(net, dv.ifindex, a.addr)?;
                a.broadcast = Some(orig_addr);
                d.add_addr(net, a)?;
            }
        }
        SIOCSIFDSTADDR => {
            // No point-to-point peers here: accepted as long as the address exists.
        }
        SIOCSIFNETMASK => {
            let len = mask_len(orig_addr).ok_or(Errno::EINVAL)?;
            let mut a = ifa.expect("found");
            if a.prefix_len != len {
                let old_mask = mask(a.prefix_len);
                let local = v4(&a);
                d.del_addr(net, dv.ifindex, a.addr)?;
                if broadcast_capable
                    && len < 31
                    && a.broadcast == Some(Ipv4Addr::from(u32::from(local) | !u32::from(old_mask)))
                {
                    a.broadcast = Some(Ipv4Addr::from(u32::from(local) | !u32::from(orig_addr)));
                }
                a.prefix_len = len;
                d.add_addr(net, a)?;
            }
        }
        _ => return Err(Errno::EINVAL),
    }
    Ok(())
}

/// `ip_rt_ioctl` with `rtentry_to_fib_config`.
fn route_ioctl(
    net: &Arc<NetNs>,
    cmd: u32,
    arg: u64,
    mem: &mut dyn GuestMem,
    admin: bool,
) -> SysResult<u64> {
    if !admin {
        return Err(Errno::EPERM);
    }
    let rt: Rtentry = read(mem, arg)?;
    let sa = |s: &Sockaddr| Ipv4Addr::new(s.sa_data[2], s.sa_data[3], s.sa_data[4], s.sa_data[5]);
    if rt.rt_dst.sa_family != AF_INET {
        return Err(Errno::EAFNOSUPPORT);
    }
    let dst = sa(&rt.rt_dst);
    let mut plen = 32u8;
    if rt.rt_flags & RTF_HOST == 0 {
        let m = sa(&rt.rt_genmask);
        if rt.rt_genmask.sa_family != AF_INET
            && (!m.is_unspecified() || rt.rt_genmask.sa_family != 0)
        {
            return Err(Errno::EAFNOSUPPORT);
        }
        plen = mask_len(m).ok_or(Errno::EINVAL)?;
        if u32::from(dst) & !u32::from(m) != 0 {
            return Err(Errno::EINVAL);
        }
    }
    let d = dev::devices(net);
    let oif = if rt.rt_dev != 0 {
        let mut b = [0u8; IFNAMSIZ];
        // strncpy_from_user of at most IFNAMSIZ - 1 bytes: read what is there byte by byte.
        for (k, slot) in b.iter_mut().take(IFNAMSIZ - 1).enumerate() {
            let mut c = [0u8];
            mem.read(rt.rt_dev + k as u64, &mut c)?;
            if c[0] == 0 {
                break;
            }
            *slot = c[0];
        }
        let end = b.iter().position(|&c| c == 0).unwrap_or(IFNAMSIZ);
        let full = String::from_utf8_lossy(&b[..end]).into_owned();
        let name = full.split(':').next().unwrap_or_default();
        Some(d.by_name(name).ok_or(Errno::ENODEV)?.ifindex)
    } else {
        None
    };
    let gw = sa(&rt.rt_gateway);
    let gateway =
        (rt.rt_gateway.sa_family == AF_INET && !gw.is_unspecified()).then_some(IpAddr::V4(gw));
    let priority = if rt.rt_metric > 0 {
        (rt.rt_metric - 1) as u32
    } else {
        0
    };
    let dst = IpAddr::V4(dst);
    if cmd == SIOCDELRT {
        d.del_route(net, dst, plen, gateway, oif, Some(RT_TABLE_MAIN))?;
        return Ok(0);
    }
    if rt.rt_flags & RTF_GATEWAY != 0 && gateway.is_none() {
        return Err(Errno::EINVAL);
    }
    let reject = rt.rt_flags & RTF_REJECT != 0;
    let oif = match (oif, gateway) {
        (Some(o), _) => o,
        (None, Some(g)) => route_dev(&d, g).ok_or(Errno::ENETUNREACH)?,
        (None, None) if reject => dev::LO_IFINDEX,
        (None, None) => return Err(Errno::ENODEV),
    };
    let scope = if reject {
        RT_SCOPE_HOST
    } else if gateway.is_some() && rt.rt_flags & RTF_GATEWAY != 0 {
        RT_SCOPE_UNIVERSE
    } else {
        RT_SCOPE_LINK
    };
    d.add_route(
        net,
        Route {
            dst,
            dst_len: plen,
            gateway,
            oif,
            table: RT_TABLE_MAIN,
            protocol: RTPROT_BOOT,
            scope,
            kind: if reject {
                um_uapi::abi::netlink::RTN_UNREACHABLE
            } else {
                RTN_UNICAST
            },
            priority,
            prefsrc: None,
            expires: None,
        },
    )?;
    Ok(0)
}

/// The device of the direct route that reaches `gw`.
fn route_dev(d: &NetDevices, gw: IpAddr) -> Option<i32> {
    d.lookup(gw)
        .filter(|r| r.gateway.is_none() && r.kind == RTN_UNICAST)
        .map(|r| r.oif)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(mask(24), Ipv4Addr::new(255, 255, 255, 0));
        assert_eq!(mask(0), Ipv4Addr::UNSPECIFIED);
        assert_eq!(mask_len(Ipv4Addr::new(255, 255, 0, 0)), Some(16));
        assert_eq!(mask_len(Ipv4Addr::new(255, 0, 255, 0)), None);
        assert_eq!(mask_len(Ipv4Addr::BROADCAST), Some(32));
        assert_eq!(mask_len(Ipv4Addr::UNSPECIFIED), Some(0));
        assert_eq!(abc_len(Ipv4Addr::new(10, 0, 2, 15)), Some(8));
        assert_eq!(abc_len(Ipv4Addr::new(172, 16, 0, 1)), Some(16));
        assert_eq!(abc_len(Ipv4Addr::new(192, 168, 0, 1)), Some(24));
        assert_eq!(abc_len(Ipv4Addr::new(224, 0, 0, 1)), None);
    }
}
