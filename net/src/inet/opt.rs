//! Socket options of internet sockets, pure: the values a socket keeps ([`Opts`]) and their
//! encoding for `getsockopt`/`setsockopt` at `SOL_SOCKET` (Linux `net/core/sock.c`
//! `sk_getsockopt`/`sk_setsockopt`), `SOL_IP` (`net/ipv4/ip_sockglue.c`), `SOL_IPV6`
//! (`net/ipv6/ipv6_sockglue.c`), `SOL_TCP` (`net/ipv4/tcp.c`) and `SOL_UDP` (`net/ipv4/udp.c`).
//!
//! Options that depend on the socket's state (`SO_ERROR`, `SO_ACCEPTCONN`, `SO_PEERNAME`,
//! `IP_MTU`, `IPV6_ADDRFORM`, ...) are answered by [`super::InetSocket`] before it asks
//! [`Opts`]. Most options are kept and reported without effect on the loopback network (there
//! is no TTL to expire, no Nagle delay, no keepalive probe); those that matter here are the
//! reuse flags, buffer sizes, timeouts, `SO_LINGER` (an abortive close), `SO_RCVLOWAT` and
//! `IPV6_V6ONLY`.

use super::super::{SOL_SOCKET, so::*};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;
use um_uapi::abi::inet::{
    GroupReq, IPPROTO_IP, IPPROTO_IPV6, IPPROTO_TCP, IPPROTO_UDP, In6Pktinfo, InPktinfo, IpMreqn,
    Ipv6Mreq, Linger, ip::*, ipv6::*, tcp::*,
};
use um_uapi::abi::pod::Pod;
use um_uapi::abi::time::Timeval;
use um_uapi::{Errno, SysResult};

/// `net.core.wmem_max` and `rmem_max`: the most `SO_SNDBUF`/`SO_RCVBUF` may ask for.
pub const WMEM_MAX: i32 = 212_992;
/// See [`WMEM_MAX`].
pub const RMEM_MAX: i32 = 212_992;
/// `SOCK_MIN_SNDBUF` (twice `TCP_SKB_MIN_TRUESIZE`).
pub const SOCK_MIN_SNDBUF: i32 = 4608;
/// `SOCK_MIN_RCVBUF` (`TCP_SKB_MIN_TRUESIZE`: 2048 plus an aligned `struct sk_buff`).
pub const SOCK_MIN_RCVBUF: i32 = 2304;
/// `net.ipv4.tcp_wmem[1]` / `tcp_rmem[1]`: a TCP socket's initial buffers.
pub const TCP_SNDBUF: i32 = 16_384;
/// See [`TCP_SNDBUF`].
pub const TCP_RCVBUF: i32 = 131_072;
/// `net.core.wmem_default` / `rmem_default`: a UDP socket's buffers.
pub const UDP_BUF: i32 = 212_992;
/// `net.ipv4.ip_default_ttl` (also the IPv6 hop limit).
pub const DEFAULT_TTL: i32 = 64;
/// `TCP_MSS_DEFAULT`: what `TCP_MAXSEG` reports before a connection.
pub const TCP_MSS_DEFAULT: i32 = 536;
/// The MSS of a loopback connection (MTU 65536 less IP, TCP and timestamp headers).
pub const LOOPBACK_MSS: i32 = 65_483;
/// The MTU of `lo`.
pub const LOOPBACK_MTU: i32 = 65_536;
pub use um_uapi::abi::capability::CAP_NET_ADMIN;
/// `SO_PRIORITY`, `SO_BINDTODEVICE`, `SO_MARK`, `SO_TIMESTAMP`, `SO_RXQ_OVFL`, `SO_BSDCOMPAT`,
/// `SO_NO_CHECK`, `SO_INCOMING_CPU`, `SO_COOKIE`, `SO_PEERNAME` (not in [`super::super::so`]).
pub const SO_NO_CHECK: i32 = 11;
pub const SO_PRIORITY: i32 = 12;
pub const SO_BSDCOMPAT: i32 = 14;
pub const SO_BINDTODEVICE: i32 = 25;
pub const SO_PEERNAME: i32 = 28;
pub const SO_TIMESTAMP: i32 = 29;
pub const SO_MARK: i32 = 36;
pub const SO_RXQ_OVFL: i32 = 40;
pub const SO_INCOMING_CPU: i32 = 49;
pub const SO_COOKIE: i32 = 57;
/// `SOL_UDP` options: `UDP_CORK`.
pub const UDP_CORK: i32 = 1;
/// `TCP_CA_NAME_MAX`.
const TCP_CA_NAME_MAX: usize = 16;
/// `INET_ECN_MASK`: the two ECN bits of the TOS byte.
const INET_ECN_MASK: i32 = 3;
/// The interface index of `lo`.
pub const LO_IFINDEX: i32 = 1;

/// The transport of a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    Tcp,
    Udp,
    /// ICMP echo, `SOCK_DGRAM` (a "ping socket", `net/ipv4/ping.c`).
    Ping,
    /// ICMP, `SOCK_RAW` (`net/ipv4/raw.c`).
    Raw,
}

/// What an option call needs to know about its socket.
#[derive(Clone, Copy, Debug)]
pub struct OptCtx {
    /// `AF_INET` or `AF_INET6` (an `IPV6_ADDRFORM`ed socket is `AF_INET`).
    pub family: u32,
    pub proto: Proto,
    /// Whether the socket has a local port (IPV6_V6ONLY is fixed from then on).
    pub bound: bool,
    /// Whether the caller holds `CAP_NET_ADMIN`.
    pub net_admin: bool,
}

/// A multicast group membership (kept; the loopback network carries no multicast).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Membership {
    pub group: IpAddr,
    pub ifindex: i32,
}

/// The option values of one socket.
#[derive(Clone, Debug)]
pub struct Opts {
    pub reuseaddr: bool,
    pub reuseport: bool,
    pub keepalive: bool,
    pub broadcast: bool,
    pub oobinline: bool,
    pub dontroute: bool,
    pub debug: bool,
    pub no_check: bool,
    pub timestamp: bool,
    pub rxq_ovfl: bool,
    pub priority: i32,
    pub mark: u32,
    /// `SO_LINGER`: on, and the time (kept when turned off, as Linux keeps `sk_lingertime`).
    pub linger_on: bool,
    pub linger_secs: i32,
    pub sndbuf: i32,
    pub rcvbuf: i32,
    /// `SO_RCVTIMEO` / `SO_SNDTIMEO`: `None` waits forever.
    pub rcvtimeo: Option<Duration>,
    pub sndtimeo: Option<Duration>,
    pub rcvlowat: i32,
    /// `IP_TTL` (-1: the default).
    pub ttl: i32,
    pub tos: i32,
    pub freebind: bool,
    pub bind_no_port: bool,
    pub recverr: bool,
    pub pktinfo: bool,
    pub recvttl: bool,
    pub recvtos: bool,
    pub recvopts: bool,
    pub retopts: bool,
    pub mtu_discover: i32,
    pub mc_ttl: i32,
    pub mc_loop: bool,
    pub mc_all: bool,
    pub mc_if: Ipv4Addr,
    pub v6only: bool,
    /// `IPV6_UNICAST_HOPS`, `IPV6_MULTICAST_HOPS`, `IPV6_TCLASS` (-1: the default).
    pub hops: i32,
    pub mc_hops: i32,
    pub mc_loop6: bool,
    pub mc_if6: i32,
    pub tclass: i32,
    pub recvpktinfo6: bool,
    /// `IPV6_RECVHOPLIMIT`: an `IPV6_HOPLIMIT` control message with each datagram.
    pub recvhoplimit6: bool,
    pub recverr6: bool,
    pub mtu_discover6: i32,
    pub memberships: Vec<Membership>,
    pub nodelay: bool,
    pub cork: bool,
    pub maxseg: i32,
    pub keepidle: i32,
    pub keepintvl: i32,
    pub keepcnt: i32,
    pub syncnt: i32,
    pub linger2: i32,
    pub defer_accept: i32,
    pub window_clamp: i32,
    pub quickack: bool,
    pub user_timeout: i32,
    pub notsent_lowat: i32,
    pub fastopen: i32,
    pub congestion: &'static str,
    pub udp_cork: bool,
}

impl Opts {
    /// A new socket's options (`sock_init_data`, `tcp_init_sock`, `inet_create`).
    pub fn new(proto: Proto) -> Opts {
        let (sndbuf, rcvbuf) = match proto {
            Proto::Tcp => (TCP_SNDBUF, TCP_RCVBUF),
            Proto::Udp | Proto::Ping | Proto::Raw => (UDP_BUF, UDP_BUF),
        };
        Opts {
            reuseaddr: false,
            reuseport: false,
            keepalive: false,
            broadcast: false,
            oobinline: false,
            dontroute: false,
            debug: false,
            no_check: false,
            timestamp: false,
            rxq_ovfl: false,
            priority: 0,
            mark: 0,
            linger_on: false,
            linger_secs: 0,
            sndbuf,
            rcvbuf,
            rcvtimeo: None,
            sndtimeo: None,
            rcvlowat: 1,
            ttl: -1,
            tos: 0,
            freebind: false,
            bind_no_port: false,
            recverr: false,
            pktinfo: false,
            recvttl: false,
            recvtos: false,
            recvopts: false,
            retopts: false,
            // IP_PMTUDISC_WANT for TCP, IP_PMTUDISC_DONT otherwise (sysctl ip_no_pmtu_disc).
            mtu_discover: if proto == Proto::Tcp { 1 } else { 0 },
            mc_ttl: 1,
            mc_loop: true,
            mc_all: true,
            mc_if: Ipv4Addr::UNSPECIFIED,
            v6only: false,
            hops: -1,
            mc_hops: -1,
            mc_loop6: true,
            mc_if6: 0,
            tclass: -1,
            recvpktinfo6: false,
            recvhoplimit6: false,
            recverr6: false,
            mtu_discover6: if proto == Proto::Tcp { 1 } else { 0 },
            memberships: Vec::new(),
            nodelay: false,
            cork: false,
            maxseg: 0,
            keepidle: 7200,
            keepintvl: 75,
            keepcnt: 9,
            syncnt: 6,
            linger2: 60,
            defer_accept: 0,
            window_clamp: 0,
            quickack: true,
            user_timeout: 0,
            notsent_lowat: 0,
            fastopen: 0,
            congestion: "cubic",
            udp_cork: false,
        }
    }

    /// What an accepted socket inherits from its listener (`sk_clone_lock`: everything but the
    /// multicast memberships, which `inet_csk_clone_lock` clears; the CVE-2017-8890 fix).
    pub fn clone_for_accept(&self) -> Opts {
        let mut o = self.clone();
        o.memberships.clear();
        o
    }

    /// The receive timeout as a deadline for a wait starting now.
    pub fn rcv_deadline(&self) -> Option<Duration> {
        self.rcvtimeo
    }
}

/// How many bytes of `optval` `setsockopt` reads for an option (Linux copies only the
/// structure it expects, so a longer `optlen` never faults beyond it).
pub fn set_len(level: i32, name: i32) -> usize {
    match (level, name) {
        (SOL_SOCKET, SO_LINGER) => Linger::SIZE,
        (SOL_SOCKET, SO_RCVTIMEO | SO_SNDTIMEO) => Timeval::SIZE,
        (SOL_SOCKET, SO_BINDTODEVICE) => 16,
        (IPPROTO_IP, IP_ADD_MEMBERSHIP | IP_DROP_MEMBERSHIP | IP_MULTICAST_IF) => IpMreqn::SIZE,
        (IPPROTO_IP | IPPROTO_IPV6, MCAST_JOIN_GROUP | MCAST_LEAVE_GROUP) => GroupReq::SIZE,
        (IPPROTO_IPV6, IPV6_JOIN_GROUP | IPV6_LEAVE_GROUP) => Ipv6Mreq::SIZE,
        (IPPROTO_TCP, TCP_CONGESTION) => TCP_CA_NAME_MAX,
        _ => 4,
    }
}

fn int_of(val: &[u8]) -> i32 {
    let mut b = [0u8; 4];
    let n = val.len().min(4);
    b[..n].copy_from_slice(&val[..n]);
    i32::from_le_bytes(b)
}

/// `sk_setsockopt`'s first check: every option but `SO_BINDTODEVICE` reads an int.
fn sol_int(val: &[u8], optlen: usize) -> SysResult<i32> {
    if optlen < 4 {
        return Err(Errno::EINVAL);
    }
    Ok(int_of(val))
}

/// `SO_RCVTIMEO`/`SO_SNDTIMEO` (`sock_set_timeout`, the 16-byte `old_timeval`).
pub fn parse_timeout(val: &[u8], optlen: usize) -> SysResult<Option<Duration>> {
    if optlen < Timeval::SIZE {
        return Err(Errno::EINVAL);
    }
    let tv = Timeval::read_le(val);
    if tv.tv_usec < 0 || tv.tv_usec >= 1_000_000 {
        return Err(Errno::EDOM);
    }
    if tv.tv_sec < 0 {
        // A negative time is "do not wait" (Linux warns once and stores 0).
        return Ok(Some(Duration::ZERO));
    }
    if tv.tv_sec == 0 && tv.tv_usec == 0 {
        return Ok(None);
    }
    Ok(Some(
        Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64),
    ))
}

/// Encodes a timeout for `getsockopt` (0 for none).
pub fn timeout_bytes(t: Option<Duration>) -> Vec<u8> {
    let tv = match t {
        None => Timeval::default(),
        Some(d) => Timeval {
            tv_sec: d.as_secs() as i64,
            tv_usec: i64::from(d.subsec_micros()),
        },
    };
    tv.as_bytes()
}

/// `__sock_set_sndbuf` / `__sock_set_rcvbuf`: doubled (for bookkeeping overhead), clamped.
pub fn buf_value(val: i32, min: i32) -> i32 {
    let v = val.min(i32::MAX / 2);
    (v * 2).max(min)
}

/// The bytes of an int option at `SOL_SOCKET` for a caller's `len` (at most 4 are copied).
fn int_out(v: i32, len: i32) -> Vec<u8> {
    let n = (len.max(0) as usize).min(4);
    v.to_le_bytes()[..n].to_vec()
}

/// `do_ip_getsockopt`'s int reply: one byte when the caller asked for less than an int and
/// the value fits one.
fn ip_int_out(v: i32, len: i32) -> Vec<u8> {
    if len > 0 && len < 4 && (0..=255).contains(&v) {
        vec![v as u8]
    } else {
        int_out(v, len)
    }
}

/// `do_ipv6_getsockopt` and `do_tcp_getsockopt`: `len` is clamped as unsigned, so a negative
/// one is an int.
fn unsigned_int_out(v: i32, len: i32) -> Vec<u8> {
    let n = (len as u32).min(4) as usize;
    v.to_le_bytes()[..n].to_vec()
}

impl Opts {
    /// `getsockopt` of a state-free option; `len` is the caller's buffer length.
    pub fn get(&self, level: i32, name: i32, len: i32, k: &OptCtx) -> SysResult<Vec<u8>> {
        match level {
            SOL_SOCKET => self.get_sol(name, len, k),
            IPPROTO_TCP if k.proto == Proto::Tcp => self.get_tcp(name, len),
            IPPROTO_UDP if k.proto == Proto::Udp => {
                if len < 0 {
                    return Err(Errno::EINVAL);
                }
                match name {
                    UDP_CORK => Ok(unsigned_int_out(self.udp_cork as i32, len)),
                    _ => Err(Errno::ENOPROTOOPT),
                }
            }
            IPPROTO_IP => self.get_ip(name, len),
            IPPROTO_IPV6 if k.family == super::super::AF_INET6 => self.get_ipv6(name, len),
            // ipv6_getsockopt refuses other levels with ENOPROTOOPT, ip_getsockopt with
            // EOPNOTSUPP.
            _ if k.family == super::super::AF_INET6 => Err(Errno::ENOPROTOOPT),
            _ => Err(Errno::EOPNOTSUPP),
        }
    }

    fn get_sol(&self, name: i32, len: i32, k: &OptCtx) -> SysResult<Vec<u8>> {
        if len < 0 {
            return Err(Errno::EINVAL);
        }
        let b = |v: bool| int_out(v as i32, len);
        let i = |v: i32| int_out(v, len);
        let n = len as usize;
        Ok(match name {
            SO_DEBUG => b(self.debug),
            SO_DONTROUTE => b(self.dontroute),
            SO_BROADCAST => b(self.broadcast),
            SO_SNDBUF => i(self.sndbuf),
            SO_RCVBUF => i(self.rcvbuf),
            SO_REUSEADDR => b(self.reuseaddr),
            SO_REUSEPORT => b(self.reuseport),
            SO_KEEPALIVE => b(self.keepalive),
            SO_OOBINLINE => b(self.oobinline),
            SO_NO_CHECK => b(self.no_check),
            SO_PRIORITY => i(self.priority),
            SO_MARK => i(self.mark as i32),
            SO_TIMESTAMP => b(self.timestamp),
            SO_RXQ_OVFL => b(self.rxq_ovfl),
            SO_BSDCOMPAT | SO_PASSCRED => i(0),
            SO_RCVLOWAT => i(self.rcvlowat),
            SO_SNDLOWAT => i(1),
            SO_INCOMING_CPU => i(-1),
            SO_DOMAIN => i(k.family as i32),
            SO_PROTOCOL => i(match k.proto {
                Proto::Tcp => IPPROTO_TCP,
                Proto::Udp => IPPROTO_UDP,
                Proto::Ping | Proto::Raw if k.family == super::super::AF_INET6 => {
                    um_uapi::abi::inet::IPPROTO_ICMPV6
                }
                Proto::Ping | Proto::Raw => um_uapi::abi::inet::IPPROTO_ICMP,
            }),
            SO_LINGER => {
                let l = Linger {
                    l_onoff: self.linger_on as i32,
                    l_linger: self.linger_secs,
                };
                let mut v = l.as_bytes();
                v.truncate(n);
                v
            }
            SO_RCVTIMEO | SO_SNDTIMEO => {
                let mut v = timeout_bytes(if name == SO_RCVTIMEO {
                    self.rcvtimeo
                } else {
                    self.sndtimeo
                });
                v.truncate(n);
                v
            }
            SO_PEERCRED => {
                // No peer process credentials on an internet socket: pid 0, ids -1.
                let mut v = [0i32, -1, -1]
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect::<Vec<u8>>();
                v.truncate(n);
                v
            }
            SO_BINDTODEVICE => Vec::new(),
            _ => return Err(Errno::ENOPROTOOPT),
        })
    }

    fn get_tcp(&self, name: i32, len: i32) -> SysResult<Vec<u8>> {
        let i = |v: i32| unsigned_int_out(v, len);
        Ok(match name {
            TCP_NODELAY => i(self.nodelay as i32),
            TCP_CORK => i(self.cork as i32),
            TCP_MAXSEG => i(if self.maxseg != 0 {
                self.maxseg
            } else {
                TCP_MSS_DEFAULT
            }),
            TCP_KEEPIDLE => i(self.keepidle),
            TCP_KEEPINTVL => i(self.keepintvl),
            TCP_KEEPCNT => i(self.keepcnt),
            TCP_SYNCNT => i(self.syncnt),
            TCP_LINGER2 => i(self.linger2),
            TCP_DEFER_ACCEPT => i(self.defer_accept),
            TCP_WINDOW_CLAMP => i(self.window_clamp),
            TCP_QUICKACK => i(self.quickack as i32),
            TCP_USER_TIMEOUT => i(self.user_timeout),
            TCP_NOTSENT_LOWAT => i(self.notsent_lowat),
            TCP_FASTOPEN => i(self.fastopen),
            TCP_CONGESTION => {
                let mut v = self.congestion.as_bytes().to_vec();
                v.resize(TCP_CA_NAME_MAX, 0);
                v.truncate((len as u32 as usize).min(TCP_CA_NAME_MAX));
                v
            }
            _ => return Err(Errno::ENOPROTOOPT),
        })
    }

    fn get_ip(&self, name: i32, len: i32) -> SysResult<Vec<u8>> {
        if len < 0 {
            return Err(Errno::EINVAL);
        }
        let i = |v: i32| ip_int_out(v, len);
        Ok(match name {
            IP_TOS => i(self.tos),
            IP_TTL => i(if self.ttl < 0 { DEFAULT_TTL } else { self.ttl }),
            IP_OPTIONS => Vec::new(),
            IP_RECVOPTS => i(self.recvopts as i32),
            IP_RETOPTS => i(self.retopts as i32),
            IP_PKTINFO => i(self.pktinfo as i32),
            IP_RECVTTL => i(self.recvttl as i32),
            IP_RECVTOS => i(self.recvtos as i32),
            IP_RECVERR => i(self.recverr as i32),
            IP_MTU_DISCOVER => i(self.mtu_discover),
            IP_FREEBIND => i(self.freebind as i32),
            IP_TRANSPARENT => i(0),
            IP_BIND_ADDRESS_NO_PORT => i(self.bind_no_port as i32),
            IP_MULTICAST_TTL => i(self.mc_ttl),
            IP_MULTICAST_LOOP => i(self.mc_loop as i32),
            IP_MULTICAST_ALL => i(self.mc_all as i32),
            IP_MULTICAST_IF => {
                let mut v = self.mc_if.octets().to_vec();
                v.truncate((len as usize).min(4));
                v
            }
            _ => return Err(Errno::ENOPROTOOPT),
        })
    }

    fn get_ipv6(&self, name: i32, len: i32) -> SysResult<Vec<u8>> {
        let i = |v: i32| unsigned_int_out(v, len);
        Ok(match name {
            IPV6_V6ONLY => i(self.v6only as i32),
            IPV6_UNICAST_HOPS => i(if self.hops < 0 {
                DEFAULT_TTL
            } else {
                self.hops
            }),
            IPV6_MULTICAST_HOPS => i(if self.mc_hops < 0 { 1 } else { self.mc_hops }),
            IPV6_MULTICAST_LOOP => i(self.mc_loop6 as i32),
            IPV6_MULTICAST_IF => i(self.mc_if6),
            IPV6_TCLASS => i(self.tclass.max(0)),
            IPV6_RECVPKTINFO => i(self.recvpktinfo6 as i32),
            IPV6_RECVHOPLIMIT => i(self.recvhoplimit6 as i32),
            IPV6_RECVERR => i(self.recverr6 as i32),
            IPV6_MTU_DISCOVER => i(self.mtu_discover6),
            _ => return Err(Errno::ENOPROTOOPT),
        })
    }

    /// `setsockopt` of a state-free option. `val` holds the first [`set_len`] bytes (fewer if
    /// `optlen` is shorter); `optlen` is the caller's length.
    pub fn set(
        &mut self,
        level: i32,
        name: i32,
        val: &[u8],
        optlen: usize,
        k: &OptCtx,
    ) -> SysResult<()> {
        match level {
            SOL_SOCKET => self.set_sol(name, val, optlen, k),
            IPPROTO_TCP if k.proto == Proto::Tcp => self.set_tcp(name, val, optlen),
            IPPROTO_UDP if k.proto == Proto::Udp => match name {
                UDP_CORK => {
                    self.udp_cork = sol_int(val, optlen)? != 0;
                    Ok(())
                }
                _ => Err(Errno::ENOPROTOOPT),
            },
            IPPROTO_IP => self.set_ip(name, val, optlen, k),
            IPPROTO_IPV6 if k.family == super::super::AF_INET6 => {
                self.set_ipv6(name, val, optlen, k)
            }
            _ => Err(Errno::ENOPROTOOPT),
        }
    }

    fn set_sol(&mut self, name: i32, val: &[u8], optlen: usize, k: &OptCtx) -> SysResult<()> {
        if name == SO_BINDTODEVICE {
            // Only `lo` exists: binding to it (or to no device) is accepted (unprivileged
            // since Linux 5.7, sock_setbindtodevice), any other name is ENODEV.
            let n = optlen.min(val.len());
            let end = val[..n].iter().position(|&c| c == 0).unwrap_or(n);
            return match &val[..end] {
                b"" | b"lo" => Ok(()),
                _ => Err(Errno::ENODEV),
            };
        }
        let v = sol_int(val, optlen)?;
        let on = v != 0;
        match name {
            SO_DEBUG => {
                if on && !k.net_admin {
                    return Err(Errno::EACCES);
                }
                self.debug = on;
            }
            SO_REUSEADDR => self.reuseaddr = on,
            SO_REUSEPORT => self.reuseport = on,
            SO_KEEPALIVE => self.keepalive = on,
            SO_BROADCAST => self.broadcast = on,
            SO_OOBINLINE => self.oobinline = on,
            SO_DONTROUTE => self.dontroute = on,
            SO_NO_CHECK => self.no_check = on,
            SO_TIMESTAMP => self.timestamp = on,
            SO_RXQ_OVFL => self.rxq_ovfl = on,
            SO_PASSCRED => {}
            SO_PRIORITY => {
                if !(0..=6).contains(&v) && !k.net_admin {
                    return Err(Errno::EPERM);
                }
                self.priority = v;
            }
            SO_MARK => {
                if !k.net_admin {
                    return Err(Errno::EPERM);
                }
                self.mark = v as u32;
            }
            SO_SNDBUF => {
                self.sndbuf = buf_value((v as u32).min(WMEM_MAX as u32) as i32, SOCK_MIN_SNDBUF)
            }
            SO_RCVBUF => {
                self.rcvbuf = buf_value((v as u32).min(RMEM_MAX as u32) as i32, SOCK_MIN_RCVBUF)
            }
            SO_SNDBUFFORCE | SO_RCVBUFFORCE => {
                if !k.net_admin {
                    return Err(Errno::EPERM);
                }
                // No negative values: they would underflow when doubled.
                if name == SO_SNDBUFFORCE {
                    self.sndbuf = buf_value(v.max(0), SOCK_MIN_SNDBUF);
                } else {
                    self.rcvbuf = buf_value(v.max(0), SOCK_MIN_RCVBUF);
                }
            }
            SO_LINGER => {
                if optlen < Linger::SIZE {
                    return Err(Errno::EINVAL);
                }
                let l = Linger::read_le(val);
                if l.l_onoff != 0 {
                    self.linger_on = true;
                    self.linger_secs = l.l_linger.max(0);
                } else {
                    self.linger_on = false;
                }
            }
            SO_RCVTIMEO => self.rcvtimeo = parse_timeout(val, optlen)?,
            SO_SNDTIMEO => self.sndtimeo = parse_timeout(val, optlen)?,
            SO_RCVLOWAT => self.rcvlowat = if v < 0 { i32::MAX } else { v.max(1) },
            _ => return Err(Errno::ENOPROTOOPT),
        }
        Ok(())
    }

    fn set_tcp(&mut self, name: i32, val: &[u8], optlen: usize) -> SysResult<()> {
        if name == TCP_CONGESTION {
            if optlen < 1 {
                return Err(Errno::EINVAL);
            }
            let n = optlen.min(val.len());
            let end = val[..n].iter().position(|&c| c == 0).unwrap_or(n);
            self.congestion = match &val[..end] {
                b"cubic" => "cubic",
                b"reno" => "reno",
                _ => return Err(Errno::ENOENT),
            };
            return Ok(());
        }
        let v = sol_int(val, optlen)?;
        let range = |lo: i32, hi: i32| {
            if (lo..=hi).contains(&v) {
                Ok(v)
            } else {
                Err(Errno::EINVAL)
            }
        };
        match name {
            TCP_NODELAY => self.nodelay = v != 0,
            TCP_CORK => self.cork = v != 0,
            TCP_MAXSEG => {
                // TCP_MIN_MSS .. MAX_TCP_WINDOW, or 0 for the default.
                if v != 0 && !(88..=32767).contains(&v) {
                    return Err(Errno::EINVAL);
                }
                self.maxseg = v;
            }
            TCP_KEEPIDLE => self.keepidle = range(1, 32767)?,
            TCP_KEEPINTVL => self.keepintvl = range(1, 32767)?,
            TCP_KEEPCNT => self.keepcnt = range(1, 127)?,
            TCP_SYNCNT => self.syncnt = range(1, 127)?,
            TCP_LINGER2 => self.linger2 = v.clamp(-1, 120),
            TCP_DEFER_ACCEPT => self.defer_accept = v.max(0),
            TCP_WINDOW_CLAMP => {
                if v != 0 && v < SOCK_MIN_RCVBUF / 2 {
                    self.window_clamp = SOCK_MIN_RCVBUF / 2;
                } else {
                    self.window_clamp = v.max(0);
                }
            }
            TCP_QUICKACK => self.quickack = v != 0,
            TCP_USER_TIMEOUT => self.user_timeout = range(0, i32::MAX)?,
            TCP_NOTSENT_LOWAT => self.notsent_lowat = v,
            TCP_FASTOPEN => self.fastopen = range(0, i32::MAX)?,
            _ => return Err(Errno::ENOPROTOOPT),
        }
        Ok(())
    }

    fn set_ip(&mut self, name: i32, val: &[u8], optlen: usize, k: &OptCtx) -> SysResult<()> {
        // do_ip_setsockopt reads an int, or one byte when optlen is shorter (0 means 0).
        let v = if optlen >= 4 {
            int_of(val)
        } else if optlen >= 1 {
            i32::from(val[0])
        } else {
            0
        };
        match name {
            IP_TOS => {
                // Stream sockets keep their ECN bits, TCP owns them (__ip_sock_set_tos).
                let v = v & 0xff;
                self.tos = if k.proto == Proto::Tcp {
                    (v & !INET_ECN_MASK) | (self.tos & INET_ECN_MASK)
                } else {
                    v
                };
            }
            IP_TTL => {
                if optlen < 1 {
                    return Err(Errno::EINVAL);
                }
                if v != -1 && !(1..=255).contains(&v) {
                    return Err(Errno::EINVAL);
                }
                self.ttl = v;
            }
            IP_RECVOPTS => self.recvopts = v != 0,
            IP_RETOPTS => self.retopts = v != 0,
            IP_PKTINFO => self.pktinfo = v != 0,
            IP_RECVTTL => self.recvttl = v != 0,
            IP_RECVTOS => self.recvtos = v != 0,
            IP_RECVERR => self.recverr = v != 0,
            IP_FREEBIND => self.freebind = v != 0,
            IP_BIND_ADDRESS_NO_PORT => self.bind_no_port = v != 0,
            IP_MTU_DISCOVER => {
                if !(0..=5).contains(&v) {
                    return Err(Errno::EINVAL);
                }
                self.mtu_discover = v;
            }
            IP_MULTICAST_TTL => {
                if optlen < 1 {
                    return Err(Errno::EINVAL);
                }
                let v = if v == -1 { 1 } else { v };
                if !(0..=255).contains(&v) {
                    return Err(Errno::EINVAL);
                }
                self.mc_ttl = v;
            }
            IP_MULTICAST_LOOP => {
                if optlen < 1 {
                    return Err(Errno::EINVAL);
                }
                self.mc_loop = v != 0;
            }
            IP_MULTICAST_ALL => {
                if optlen < 1 {
                    return Err(Errno::EINVAL);
                }
                self.mc_all = v != 0;
            }
            IP_MULTICAST_IF => {
                if optlen < 4 {
                    return Err(Errno::EINVAL);
                }
                let m = if optlen >= IpMreqn::SIZE {
                    IpMreqn::read_le(val)
                } else {
                    let mut b = [0u8; IpMreqn::SIZE];
                    b[..val.len().min(8)].copy_from_slice(&val[..val.len().min(8)]);
                    IpMreqn::read_le(&b)
                };
                // With an ip_mreq, the interface is named by the second address.
                let a = if optlen >= 8 {
                    Ipv4Addr::from(m.imr_address)
                } else {
                    Ipv4Addr::from(m.imr_multiaddr)
                };
                if !a.is_unspecified() && !a.is_loopback() {
                    return Err(Errno::EADDRNOTAVAIL);
                }
                self.mc_if = a;
            }
            IP_ADD_MEMBERSHIP | IP_DROP_MEMBERSHIP => {
                if optlen < 8 {
                    return Err(Errno::EINVAL);
                }
                let mut b = [0u8; IpMreqn::SIZE];
                b[..val.len().min(IpMreqn::SIZE)]
                    .copy_from_slice(&val[..val.len().min(IpMreqn::SIZE)]);
                let m = IpMreqn::read_le(&b);
                let ifindex = if optlen >= IpMreqn::SIZE {
                    m.imr_ifindex
                } else {
                    0
                };
                let iface = Ipv4Addr::from(m.imr_address);
                if !iface.is_unspecified() && !iface.is_loopback() {
                    return Err(Errno::ENODEV);
                }
                let g = IpAddr::V4(Ipv4Addr::from(m.imr_multiaddr));
                self.membership(g, ifindex, name == IP_ADD_MEMBERSHIP)?;
            }
            MCAST_JOIN_GROUP | MCAST_LEAVE_GROUP => {
                self.group_req(val, optlen, name == MCAST_JOIN_GROUP)?
            }
            IP_TRANSPARENT => return Err(Errno::EPERM),
            // IP_HDRINCL is for raw sockets only; IP_OPTIONS would need real headers.
            _ => return Err(Errno::ENOPROTOOPT),
        }
        Ok(())
    }

    fn set_ipv6(&mut self, name: i32, val: &[u8], optlen: usize, k: &OptCtx) -> SysResult<()> {
        if matches!(name, MCAST_JOIN_GROUP | MCAST_LEAVE_GROUP) {
            return self.group_req(val, optlen, name == MCAST_JOIN_GROUP);
        }
        if matches!(name, IPV6_JOIN_GROUP | IPV6_LEAVE_GROUP) {
            if optlen < Ipv6Mreq::SIZE {
                return Err(Errno::EINVAL);
            }
            let m = Ipv6Mreq::read_le(val);
            let g = IpAddr::V6(Ipv6Addr::from(m.ipv6mr_multiaddr));
            return self.membership(g, m.ipv6mr_interface, name == IPV6_JOIN_GROUP);
        }
        if name == IPV6_RTHDR {
            // No routing header type is supported (as without CONFIG_IPV6_MIP6 and
            // CONFIG_IPV6_SEG6): clearing is fine, setting one is EINVAL.
            return if optlen == 0 {
                Ok(())
            } else {
                Err(Errno::EINVAL)
            };
        }
        if optlen < 4 {
            return Err(Errno::EINVAL);
        }
        let v = int_of(val);
        match name {
            IPV6_V6ONLY => {
                // Fixed once the socket has a port (it decides what the port holds).
                if k.bound {
                    return Err(Errno::EINVAL);
                }
                self.v6only = v != 0;
            }
            IPV6_UNICAST_HOPS | IPV6_MULTICAST_HOPS | IPV6_TCLASS => {
                if !(-1..=255).contains(&v) {
                    return Err(Errno::EINVAL);
                }
                match name {
                    IPV6_UNICAST_HOPS => self.hops = v,
                    IPV6_MULTICAST_HOPS => self.mc_hops = v,
                    _ => self.tclass = v,
                }
            }
            IPV6_MULTICAST_LOOP => {
                if v != 0 && v != 1 {
                    return Err(Errno::EINVAL);
                }
                self.mc_loop6 = v != 0;
            }
            IPV6_MULTICAST_IF => {
                if v != 0 && v != LO_IFINDEX {
                    return Err(Errno::ENODEV);
                }
                self.mc_if6 = v;
            }
            IPV6_RECVPKTINFO => self.recvpktinfo6 = v != 0,
            IPV6_RECVHOPLIMIT => self.recvhoplimit6 = v != 0,
            IPV6_RECVERR => self.recverr6 = v != 0,
            IPV6_MTU_DISCOVER => {
                if !(0..=5).contains(&v) {
                    return Err(Errno::EINVAL);
                }
                self.mtu_discover6 = v;
            }
            _ => return Err(Errno::ENOPROTOOPT),
        }
        Ok(())
    }

    /// `MCAST_JOIN_GROUP` / `MCAST_LEAVE_GROUP` with a `struct group_req`.
    fn group_req(&mut self, val: &[u8], optlen: usize, join: bool) -> SysResult<()> {
        if optlen < GroupReq::SIZE {
            return Err(Errno::EINVAL);
        }
        let r = GroupReq::read_le(val);
        let group = match super::addr::decode(&r.gr_group)? {
            super::addr::Sa::V4(a) => IpAddr::V4(*a.ip()),
            super::addr::Sa::V6(a) => IpAddr::V6(*a.ip()),
            _ => return Err(Errno::EINVAL),
        };
        self.membership(group, r.gr_interface as i32, join)
    }

    /// Joins or leaves a group on `lo` (interface 0 picks it). Leaving a group the socket has
    /// not joined is `EADDRNOTAVAIL`, joining twice `EADDRINUSE` (`ip_mc_join_group`).
    pub fn membership(&mut self, group: IpAddr, ifindex: i32, join: bool) -> SysResult<()> {
        let multicast = match group {
            IpAddr::V4(a) => a.is_multicast(),
            IpAddr::V6(a) => a.is_multicast(),
        };
        if !multicast {
            return Err(Errno::EINVAL);
        }
        if ifindex != 0 && ifindex != LO_IFINDEX {
            return Err(Errno::ENODEV);
        }
        let pos = self.memberships.iter().position(|m| m.group == group);
        match (join, pos) {
            (true, Some(_)) => Err(Errno::EADDRINUSE),
            (true, None) => {
                self.memberships.push(Membership {
                    group,
                    ifindex: LO_IFINDEX,
                });
                Ok(())
            }
            (false, Some(i)) => {
                self.memberships.remove(i);
                Ok(())
            }
            (false, None) => Err(Errno::EADDRNOTAVAIL),
        }
    }
}

/// One control message of a receive: level, type, data.
pub type Cmsg = (i32, i32, Vec<u8>);

/// The control messages a datagram sent to `to` with `ttl` and `tos` carries to a socket of
/// `family` with these options (`ip_cmsg_recv_offset`; `ip6_datagram_recv_common_ctl` for
/// AF_INET6), in Linux's order: packet info, then TTL, then TOS.
pub fn recv_control(
    o: &Opts,
    family: u32,
    to: &std::net::SocketAddr,
    ttl: i32,
    tos: u8,
) -> Vec<Cmsg> {
    let mut out = Vec::new();
    if family == super::super::AF_INET6 && o.recvpktinfo6 {
        let addr = match to.ip() {
            IpAddr::V4(a) => a.to_ipv6_mapped(),
            IpAddr::V6(a) => a,
        };
        let p = In6Pktinfo {
            ipi6_addr: addr.octets(),
            ipi6_ifindex: LO_IFINDEX,
        };
        out.push((IPPROTO_IPV6, IPV6_PKTINFO, p.as_bytes()));
    }
    if family == super::super::AF_INET6 && o.recvhoplimit6 {
        // ip6_datagram_recv_specific_ctl: an int, after the packet info.
        out.push((IPPROTO_IPV6, IPV6_HOPLIMIT, ttl.to_le_bytes().to_vec()));
    }
    if let IpAddr::V4(a) = to.ip() {
        if o.pktinfo {
            let p = InPktinfo {
                ipi_ifindex: LO_IFINDEX,
                ipi_spec_dst: a.octets(),
                ipi_addr: a.octets(),
            };
            out.push((IPPROTO_IP, IP_PKTINFO, p.as_bytes()));
        }
        if o.recvttl {
            out.push((IPPROTO_IP, IP_TTL, ttl.to_le_bytes().to_vec()));
        }
        if o.recvtos {
            out.push((IPPROTO_IP, IP_TOS, vec![tos]));
        }
    }
    out
}

impl Opts {
    /// The TTL (or hop limit) packets from this socket carry.
    pub fn ttl_out(&self, v6: bool) -> i32 {
        let t = if v6 { self.hops } else { self.ttl };
        if t < 0 { DEFAULT_TTL } else { t }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AF_INET, AF_INET6};

    fn ctx(family: u32, proto: Proto) -> OptCtx {
        OptCtx {
            family,
            proto,
            bound: false,
            net_admin: false,
        }
    }

    #[test]
    fn buffers_double_and_clamp() {
        let k = ctx(AF_INET, Proto::Tcp);
        let mut o = Opts::new(Proto::Tcp);
        assert_eq!(
            o.get(SOL_SOCKET, SO_SNDBUF, 4, &k).unwrap(),
            16384i32.to_le_bytes()
        );
        o.set(SOL_SOCKET, SO_SNDBUF, &10000i32.to_le_bytes(), 4, &k)
            .unwrap();
        assert_eq!(o.sndbuf, 20000);
        o.set(SOL_SOCKET, SO_RCVBUF, &1i32.to_le_bytes(), 4, &k)
            .unwrap();
        assert_eq!(o.rcvbuf, SOCK_MIN_RCVBUF);
        o.set(SOL_SOCKET, SO_SNDBUF, &(-1i32).to_le_bytes(), 4, &k)
            .unwrap();
        assert_eq!(o.sndbuf, 2 * WMEM_MAX);
        // FORCE needs CAP_NET_ADMIN and never goes negative (CVE-2016-9793).
        let fb = 0xffff_ff00u32.to_le_bytes();
        assert_eq!(
            o.set(SOL_SOCKET, SO_SNDBUFFORCE, &fb, 4, &k),
            Err(Errno::EPERM)
        );
        let admin = OptCtx {
            net_admin: true,
            ..k
        };
        o.set(SOL_SOCKET, SO_SNDBUFFORCE, &fb, 4, &admin).unwrap();
        assert_eq!(o.sndbuf, SOCK_MIN_SNDBUF);
        assert_eq!(
            o.set(SOL_SOCKET, SO_SNDBUF, &[1, 0], 2, &k),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn levels_and_unknown_options() {
        let o = Opts::new(Proto::Tcp);
        let k4 = ctx(AF_INET, Proto::Tcp);
        let k6 = ctx(AF_INET6, Proto::Tcp);
        assert_eq!(o.get(500, 1, 4, &k4), Err(Errno::EOPNOTSUPP));
        assert_eq!(o.get(IPPROTO_UDP, 10, 4, &k4), Err(Errno::EOPNOTSUPP));
        assert_eq!(o.get(500, 1, 4, &k6), Err(Errno::ENOPROTOOPT));
        assert_eq!(o.get(IPPROTO_IP, -1, 4, &k4), Err(Errno::ENOPROTOOPT));
        assert_eq!(o.get(IPPROTO_TCP, -1, 4, &k4), Err(Errno::ENOPROTOOPT));
        assert_eq!(o.get(SOL_SOCKET, 9999, 4, &k4), Err(Errno::ENOPROTOOPT));
        assert_eq!(o.get(SOL_SOCKET, SO_OOBINLINE, -1, &k4), Err(Errno::EINVAL));
        assert_eq!(
            o.get(IPPROTO_IPV6, IPV6_V6ONLY, 4, &k4),
            Err(Errno::EOPNOTSUPP)
        );
        let mut o = o;
        let one = 1i32.to_le_bytes();
        assert_eq!(o.set(500, 1, &one, 4, &k4), Err(Errno::ENOPROTOOPT));
        assert_eq!(
            o.set(IPPROTO_UDP, 10, &one, 4, &k4),
            Err(Errno::ENOPROTOOPT)
        );
        assert_eq!(o.set(IPPROTO_IP, -1, &one, 4, &k4), Err(Errno::ENOPROTOOPT));
        assert_eq!(
            o.set(IPPROTO_TCP, -1, &one, 4, &k4),
            Err(Errno::ENOPROTOOPT)
        );
        assert_eq!(
            o.set(SOL_SOCKET, SO_SNDLOWAT, &one, 4, &k4),
            Err(Errno::ENOPROTOOPT)
        );
        assert_eq!(
            o.get(SOL_SOCKET, SO_DOMAIN, 4, &k6).unwrap(),
            10i32.to_le_bytes()
        );
        assert_eq!(
            o.get(SOL_SOCKET, SO_PROTOCOL, 4, &k6).unwrap(),
            6i32.to_le_bytes()
        );
    }

    #[test]
    fn int_encodings() {
        let k = ctx(AF_INET, Proto::Udp);
        let mut o = Opts::new(Proto::Udp);
        assert_eq!(
            o.get(IPPROTO_IP, IP_TTL, 4, &k).unwrap(),
            64i32.to_le_bytes()
        );
        // A short buffer gets one byte at SOL_IP, a partial int at SOL_SOCKET.
        assert_eq!(o.get(IPPROTO_IP, IP_TTL, 1, &k).unwrap(), vec![64]);
        assert_eq!(
            o.get(SOL_SOCKET, SO_RCVBUF, 2, &k).unwrap(),
            vec![0x00, 0x40]
        );
        assert_eq!(
            o.set(IPPROTO_IP, IP_TTL, &[0; 4], 4, &k),
            Err(Errno::EINVAL)
        );
        o.set(IPPROTO_IP, IP_TTL, &[7], 1, &k).unwrap();
        assert_eq!(
            o.get(IPPROTO_IP, IP_TTL, 4, &k).unwrap(),
            7i32.to_le_bytes()
        );
        o.set(IPPROTO_IP, IP_TOS, &0x13i32.to_le_bytes(), 4, &k)
            .unwrap();
        assert_eq!(
            o.get(IPPROTO_IP, IP_TOS, 4, &k).unwrap(),
            0x13i32.to_le_bytes()
        );
        // TCP keeps its own ECN bits.
        let mut tt = Opts::new(Proto::Tcp);
        let ktt = ctx(AF_INET, Proto::Tcp);
        tt.set(IPPROTO_IP, IP_TOS, &0x13i32.to_le_bytes(), 4, &ktt)
            .unwrap();
        assert_eq!(tt.tos, 0x10);
        // TCP clamps a negative length as unsigned: an int.
        let t = Opts::new(Proto::Tcp);
        let kt = ctx(AF_INET, Proto::Tcp);
        assert_eq!(
            t.get(IPPROTO_TCP, TCP_NODELAY, -1, &kt).unwrap(),
            vec![0; 4]
        );
        assert_eq!(
            t.get(IPPROTO_TCP, TCP_MAXSEG, 4, &kt).unwrap(),
            536i32.to_le_bytes()
        );
        assert_eq!(
            &t.get(IPPROTO_TCP, TCP_CONGESTION, 16, &kt).unwrap()[..6],
            b"cubic\0"
        );
    }

    #[test]
    fn linger_and_timeouts() {
        let k = ctx(AF_INET, Proto::Tcp);
        let mut o = Opts::new(Proto::Tcp);
        let l = Linger {
            l_onoff: 1,
            l_linger: 5,
        };
        o.set(SOL_SOCKET, SO_LINGER, &l.as_bytes(), 8, &k).unwrap();
        assert_eq!(o.get(SOL_SOCKET, SO_LINGER, 8, &k).unwrap(), l.as_bytes());
        assert_eq!(
            o.set(SOL_SOCKET, SO_LINGER, &l.as_bytes(), 4, &k),
            Err(Errno::EINVAL)
        );
        let off = Linger {
            l_onoff: 0,
            l_linger: 9,
        };
        o.set(SOL_SOCKET, SO_LINGER, &off.as_bytes(), 8, &k)
            .unwrap();
        // Off keeps the old time, as Linux's sk_lingertime.
        assert_eq!(
            o.get(SOL_SOCKET, SO_LINGER, 8, &k).unwrap(),
            Linger {
                l_onoff: 0,
                l_linger: 5
            }
            .as_bytes()
        );
        let tv = Timeval {
            tv_sec: 1,
            tv_usec: 500_000,
        };
        o.set(SOL_SOCKET, SO_RCVTIMEO, &tv.as_bytes(), 16, &k)
            .unwrap();
        assert_eq!(o.rcvtimeo, Some(Duration::from_millis(1500)));
        assert_eq!(
            o.get(SOL_SOCKET, SO_RCVTIMEO, 16, &k).unwrap(),
            tv.as_bytes()
        );
        let bad = Timeval {
            tv_sec: 1,
            tv_usec: 1_000_000,
        };
        assert_eq!(
            o.set(SOL_SOCKET, SO_SNDTIMEO, &bad.as_bytes(), 16, &k),
            Err(Errno::EDOM)
        );
        o.set(
            SOL_SOCKET,
            SO_RCVTIMEO,
            &Timeval::default().as_bytes(),
            16,
            &k,
        )
        .unwrap();
        assert_eq!(o.rcvtimeo, None);
    }

    #[test]
    fn packet_info_messages() {
        let mut o = Opts::new(Proto::Udp);
        let to: std::net::SocketAddr = "127.0.0.5:53".parse().unwrap();
        assert!(recv_control(&o, AF_INET, &to, 64, 0).is_empty());
        o.pktinfo = true;
        o.recvttl = true;
        let c = recv_control(&o, AF_INET, &to, 64, 0);
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].0, c[0].1), (IPPROTO_IP, IP_PKTINFO));
        assert_eq!(c[0].2, vec![1, 0, 0, 0, 127, 0, 0, 5, 127, 0, 0, 5]);
        assert_eq!(c[1], (IPPROTO_IP, IP_TTL, 64i32.to_le_bytes().to_vec()));
        // An AF_INET6 socket sees the IPv4 destination mapped in IPV6_PKTINFO first.
        o.recvpktinfo6 = true;
        o.recvttl = false;
        let c = recv_control(&o, AF_INET6, &to, 64, 0);
        assert_eq!(
            (c[0].0, c[0].1, c[0].2.len()),
            (IPPROTO_IPV6, IPV6_PKTINFO, 20)
        );
        assert_eq!(&c[0].2[10..16], &[0xff, 0xff, 127, 0, 0, 5]);
        assert_eq!(c[1].1, IP_PKTINFO);
        let to6: std::net::SocketAddr = "[::1]:53".parse().unwrap();
        assert_eq!(recv_control(&o, AF_INET6, &to6, 64, 0).len(), 1);
        // IPV6_RECVHOPLIMIT (ping -6 asks for it): the hop limit as an int, after the info.
        o.recvhoplimit6 = true;
        let c = recv_control(&o, AF_INET6, &to6, 63, 0);
        assert_eq!(
            c[1],
            (IPPROTO_IPV6, IPV6_HOPLIMIT, 63i32.to_le_bytes().to_vec())
        );
    }

    #[test]
    fn v6only_and_memberships() {
        let mut k = ctx(AF_INET6, Proto::Udp);
        let mut o = Opts::new(Proto::Udp);
        o.set(IPPROTO_IPV6, IPV6_V6ONLY, &1i32.to_le_bytes(), 4, &k)
            .unwrap();
        assert!(o.v6only);
        k.bound = true;
        assert_eq!(
            o.set(IPPROTO_IPV6, IPV6_V6ONLY, &0i32.to_le_bytes(), 4, &k),
            Err(Errno::EINVAL)
        );
        let g = IpAddr::V4(Ipv4Addr::new(224, 0, 0, 0));
        o.membership(g, 0, true).unwrap();
        assert_eq!(o.membership(g, 0, true), Err(Errno::EADDRINUSE));
        assert_eq!(o.clone_for_accept().memberships, vec![]);
        o.membership(g, 0, false).unwrap();
        assert_eq!(o.membership(g, 0, false), Err(Errno::EADDRNOTAVAIL));
        assert_eq!(
            o.membership(IpAddr::V4(Ipv4Addr::LOCALHOST), 0, true),
            Err(Errno::EINVAL)
        );
        assert_eq!(o.membership(g, 7, true), Err(Errno::ENODEV));
    }
}
