//! `/proc/sys/net`: the network sysctls, one set per network namespace (Linux
//! `net/ipv4/devinet.c` `devinet_sysctl_table` / `devinet_init_net`, `sysctl_net_ipv4.c`
//! `ip_forward`, `net/core/sysctl_net_core.c` `somaxconn`).
//!
//! The values live in the namespace ([`NetSysctl`], kept by `um_kernel::netns` as per-namespace
//! state), and a file shows and changes those of the namespace of the process reading or
//! writing it (Linux picks the namespace of `current` when the file is opened; here a write
//! goes to the writer's namespace at write time, the same unless it moved in between).
//!
//! `ipv4/conf/{all,default,lo}/` hold the per-device values of [`DEVCONF`]; a new namespace
//! copies the initial namespace's `all` and `default` (`devinet_init_net` with the default
//! `net.core.devconf_inherit_init_net` = 0), and its `lo` starts as a copy of its `default`
//! (`inetdev_init`) with `disable_xfrm` and `disable_policy` set (`inetdev_event`,
//! loopback). As `lo` is always up here, and Linux marks every value of an up device as
//! set (`ipv4_devconf_setall`), later writes to `default` do not reach `lo`. Writing
//! `all/forwarding` (or its alias `ipv4/ip_forward`) sets `forwarding` of `default` and
//! of every device and clears `all/accept_redirects` (`inet_forward_change`). Writes need
//! CAP_NET_ADMIN (`EPERM`) and parse as `proc_dointvec` does ([`parse_int`]).
//! `ipv6/conf/{all,default}/` hold [`DEVCONF6`] (`net/ipv6/addrconf.c` `ipv6_devconf`,
//! `ipv6_devconf_dflt`, `addrconf_sysctl`); IPv6 autoconfiguration ([`crate::addrconf`])
//! reads them through [`ipv6_conf`]. There are no per-device `ipv6/conf/<dev>/` directories:
//! `default` stands for every device (a device copies it when it registers on Linux).
//! `core/somaxconn` caps the listen backlog of sockets of the namespace
//! ([`somaxconn`]); a new namespace starts at the default (4096).
//!
//! Neighbours: procfs's registry (`um_fs::procfs::registry`; [`crate::init`] hangs
//! [`sys_net_dir`] under `/proc/sys`), the sockets ([`crate::unix`], [`crate::inet`] read
//! [`somaxconn`]).

use std::sync::{Arc, Mutex};
use um_fs::procfs::{ProcFs, ProcInode};
use um_kernel::kernel::Kernel;
use um_kernel::netns::{self, NetNs, PerNet};
use um_kernel::task::lock;
use um_kernel::wait::IoCtx;
use um_uapi::{Errno, SysResult};

use um_uapi::abi::capability::CAP_NET_ADMIN;

/// `net.ipv4.ping_group_range`'s default, in every namespace (`inet_init_net`): nobody.
pub const PING_GROUP_RANGE_DEFAULT: (u32, u32) = (1, 0);

/// `SOMAXCONN` (include/linux/socket.h): the default of `net.core.somaxconn`.
pub const SOMAXCONN_DEFAULT: i32 = 4096;

/// One per-device value (`DEVINET_SYSCTL_*_ENTRY`): its name, its default in `conf/all`
/// (`ipv4_devconf`) and in `conf/default` (`ipv4_devconf_dflt`), and whether it is
/// read-only (`DEVINET_SYSCTL_RO_ENTRY`, mode 0444).
pub struct DevconfEntry {
    pub name: &'static str,
    pub all: i32,
    pub dflt: i32,
    pub ro: bool,
}

const fn rw(name: &'static str, all: i32, dflt: i32) -> DevconfEntry {
    DevconfEntry {
        name,
        all,
        dflt,
        ro: false,
    }
}

/// The per-device values, in `devinet_sysctl_table`'s order, with their defaults.
pub const DEVCONF: &[DevconfEntry] = &[
    rw("forwarding", 0, 0),
    DevconfEntry {
        name: "mc_forwarding",
        all: 0,
        dflt: 0,
        ro: true,
    },
    rw("bc_forwarding", 0, 0),
    rw("accept_redirects", 1, 1),
    rw("secure_redirects", 1, 1),
    rw("shared_media", 1, 1),
    rw("rp_filter", 0, 0),
    rw("send_redirects", 1, 1),
    rw("accept_source_route", 0, 1),
    rw("accept_local", 0, 0),
    rw("src_valid_mark", 0, 0),
    rw("proxy_arp", 0, 0),
    rw("medium_id", 0, 0),
    rw("bootp_relay", 0, 0),
    rw("log_martians", 0, 0),
    rw("tag", 0, 0),
    rw("arp_filter", 0, 0),
    rw("arp_announce", 0, 0),
    rw("arp_ignore", 0, 0),
    rw("arp_accept", 0, 0),
    rw("arp_notify", 0, 0),
    rw("arp_evict_nocarrier", 1, 1),
    rw("proxy_arp_pvlan", 0, 0),
    rw("force_igmp_version", 0, 0),
    rw("igmpv2_unsolicited_report_interval", 10000, 10000),
    rw("igmpv3_unsolicited_report_interval", 1000, 1000),
    rw("ignore_routes_with_linkdown", 0, 0),
    rw("drop_gratuitous_arp", 0, 0),
    rw("disable_xfrm", 0, 0),
    rw("disable_policy", 0, 0),
    rw("promote_secondaries", 0, 0),
    rw("route_localnet", 0, 0),
    rw("drop_unicast_in_l2_multicast", 0, 0),
];

/// The IPv6 per-device values this kernel keeps (a subset of `ipv6_devconf`), with their
/// defaults in `all` and `default`; [`crate::addrconf`] honours `accept_ra`, `autoconf`,
/// `accept_ra_defrtr`, `accept_ra_pinfo`, `disable_ipv6`, `forwarding`, `addr_gen_mode`,
/// `rtr_solicits` and `rtr_solicit_interval` (seconds, as `proc_dointvec_jiffies` shows
/// it); the rest are kept and shown only.
pub const DEVCONF6: &[DevconfEntry] = &[
    rw("accept_dad", 0, 1),
    rw("accept_ra", 1, 1),
    rw("accept_ra_defrtr", 1, 1),
    rw("accept_ra_mtu", 1, 1),
    rw("accept_ra_pinfo", 1, 1),
    rw("accept_redirects", 1, 1),
    rw("addr_gen_mode", 0, 0),
    rw("autoconf", 1, 1),
    rw("dad_transmits", 1, 1),
    rw("disable_ipv6", 0, 0),
    rw("forwarding", 0, 0),
    rw("hop_limit", 64, 64),
    rw("keep_addr_on_down", 0, 0),
    rw("mtu", 1280, 1280),
    rw("rtr_solicit_delay", 1, 1),
    rw("rtr_solicit_interval", 4, 4),
    rw("rtr_solicit_max_interval", 3600, 3600),
    rw("rtr_solicits", -1, -1),
    rw("use_tempaddr", 0, 0),
];

fn index6(name: &str) -> usize {
    DEVCONF6.iter().position(|e| e.name == name).unwrap_or(0)
}

fn index(name: &str) -> usize {
    DEVCONF.iter().position(|e| e.name == name).unwrap_or(0)
}

/// Which `conf/` directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conf {
    All,
    Default,
    /// The loopback device.
    Lo,
}

impl Conf {
    const DIRS: [(&'static str, Conf); 3] = [
        ("all", Conf::All),
        ("default", Conf::Default),
        ("lo", Conf::Lo),
    ];
}

/// A namespace's network sysctl values (Linux `net->ipv4.devconf_all`, `devconf_dflt`, the
/// loopback's `in_device.cnf`, `net->core.sysctl_somaxconn`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Values {
    pub all: Vec<i32>,
    pub dflt: Vec<i32>,
    pub lo: Vec<i32>,
    /// `ipv6/conf/all` and `ipv6/conf/default`, by [`DEVCONF6`] index.
    pub all6: Vec<i32>,
    pub dflt6: Vec<i32>,
    pub somaxconn: i32,
    /// `net.ipv4.ping_group_range`: the groups that may open ping sockets (inclusive).
    pub ping_group_range: (u32, u32),
}

impl Default for Values {
    /// The initial namespace at boot.
    fn default() -> Values {
        let dflt: Vec<i32> = DEVCONF.iter().map(|e| e.dflt).collect();
        Values {
            all: DEVCONF.iter().map(|e| e.all).collect(),
            lo: Values::loopback(&dflt),
            dflt,
            all6: DEVCONF6.iter().map(|e| e.all).collect(),
            dflt6: DEVCONF6.iter().map(|e| e.dflt).collect(),
            somaxconn: SOMAXCONN_DEFAULT,
            ping_group_range: PING_GROUP_RANGE_DEFAULT,
        }
    }
}

impl Values {
    /// A new device's values (`inetdev_init` copies `default`), for the loopback
    /// (`inetdev_event` NETDEV_REGISTER sets `disable_xfrm` and `disable_policy`).
    fn loopback(dflt: &[i32]) -> Vec<i32> {
        let mut v = dflt.to_vec();
        v[index("disable_xfrm")] = 1;
        v[index("disable_policy")] = 1;
        v
    }

    /// The values a namespace made now starts with, `init` being the initial namespace's
    /// (`devinet_init_net`, `netdev_init` of the new loopback, `sysctl_core_net_init`).
    pub fn for_new_ns(init: &Values) -> Values {
        Values {
            all: init.all.clone(),
            lo: Values::loopback(&init.dflt),
            dflt: init.dflt.clone(),
            all6: init.all6.clone(),
            dflt6: init.dflt6.clone(),
            somaxconn: SOMAXCONN_DEFAULT,
            ping_group_range: PING_GROUP_RANGE_DEFAULT,
        }
    }

    fn conf(&self, c: Conf) -> &Vec<i32> {
        match c {
            Conf::All => &self.all,
            Conf::Default => &self.dflt,
            Conf::Lo => &self.lo,
        }
    }

    /// Value `i` of [`DEVCONF`] in `c`.
    pub fn get(&self, c: Conf, i: usize) -> i32 {
        self.conf(c)[i]
    }

    /// Writes value `i` of [`DEVCONF`] in `c` (`devinet_conf_proc`, `devinet_sysctl_forward`).
    pub fn set(&mut self, c: Conf, i: usize, v: i32) {
        let fwd = index("forwarding");
        match c {
            Conf::All => self.all[i] = v,
            Conf::Default => self.dflt[i] = v,
            Conf::Lo => self.lo[i] = v,
        }
        if i == fwd && c == Conf::All {
            // inet_forward_change: every device and `default` follow; a router does not
            // take redirects.
            self.all[index("accept_redirects")] = i32::from(v == 0);
            self.dflt[fwd] = v;
            self.lo[fwd] = v;
        }
    }
}

/// The per-namespace state (see [`Values`]).
#[derive(Default)]
pub struct NetSysctl(Mutex<Values>);

impl PerNet for NetSysctl {
    fn for_new_ns(init: &Self) -> Self {
        NetSysctl(Mutex::new(Values::for_new_ns(&lock(&init.0))))
    }
}

/// `net.core.somaxconn` of namespace `ns`: the most pending connections a listener of it
/// queues (a negative value caps at 0, as `min(backlog, somaxconn)` on unsigned does).
pub fn somaxconn(ns: &NetNs) -> u32 {
    lock(&ns.generic::<NetSysctl>().0).somaxconn.max(0) as u32
}

/// `net.ipv4.ping_group_range` of namespace `ns`.
pub fn ping_group_range(ns: &NetNs) -> (u32, u32) {
    lock(&ns.generic::<NetSysctl>().0).ping_group_range
}

/// `ipv4_ping_group_range`: two ints, each within 0..=`GID_T_MAX`, else `EINVAL`; a range
/// whose high end is below its low end is stored as the empty default "1 0".
pub fn parse_ping_group_range(data: &[u8]) -> SysResult<(u32, u32)> {
    let text = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
    let mut it = text.split_ascii_whitespace();
    let (Some(a), Some(b)) = (it.next(), it.next()) else {
        return Err(Errno::EINVAL);
    };
    let a = parse_int(a.as_bytes())?;
    let b = parse_int(b.as_bytes())?;
    if a < 0 || b < 0 {
        return Err(Errno::EINVAL);
    }
    let (a, b) = (a as u32, b as u32);
    Ok(if b < a {
        PING_GROUP_RANGE_DEFAULT
    } else {
        (a, b)
    })
}

/// The IPv6 value `name` of [`DEVCONF6`] that applies to the devices of `ns`: `default`'s,
/// except that `disable_ipv6` and `forwarding` set in `all` count for every device (a write
/// to `all` reaches every device on Linux: `addrconf_disable_ipv6`, `addrconf_fixup_forwarding`).
pub fn ipv6_conf(ns: &NetNs, name: &str) -> i32 {
    let g = ns.generic::<NetSysctl>();
    let v = lock(&g.0);
    let i = index6(name);
    match name {
        "disable_ipv6" | "forwarding" => v.all6[i].max(v.dflt6[i]),
        _ => v.dflt6[i],
    }
}

/// Whether namespace `ns` forwards IPv4 (`net.ipv4.conf.all.forwarding`).
pub fn ip_forward(ns: &NetNs) -> bool {
    lock(&ns.generic::<NetSysctl>().0).get(Conf::All, index("forwarding")) != 0
}

/// Parses a write of one int as `proc_dointvec` does (kernel/sysctl.c `proc_get_long`):
/// leading white space, an optional `-`, a number in C notation (`0x` hex, leading `0`
/// octal), then white space, a NUL or the end; the value must fit an `int`. Text after
/// that is ignored. `EINVAL` otherwise (also for nothing at all).
pub fn parse_int(data: &[u8]) -> SysResult<i32> {
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r');
    let start = data.iter().position(|b| !ws(b)).ok_or(Errno::EINVAL)?;
    let mut s = &data[start..];
    let neg = s.first() == Some(&b'-');
    if neg {
        s = &s[1..];
    }
    if !s.first().is_some_and(u8::is_ascii_digit) {
        return Err(Errno::EINVAL);
    }
    let (radix, digits) = if s.len() > 2 && s[0] == b'0' && (s[1] | 0x20) == b'x' {
        (16, &s[2..])
    } else if s[0] == b'0' {
        (8, s)
    } else {
        (10, s)
    };
    let end = digits
        .iter()
        .position(|&b| !(b as char).is_digit(radix))
        .unwrap_or(digits.len());
    if let Some(&b) = digits.get(end)
        && !(ws(&b) || b == 0)
    {
        return Err(Errno::EINVAL);
    }
    let text = std::str::from_utf8(&digits[..end]).map_err(|_| Errno::EINVAL)?;
    let v = if text.is_empty() {
        0
    } else {
        u64::from_str_radix(text, radix).map_err(|_| Errno::EINVAL)?
    };
    if neg {
        if v > i32::MAX as u64 + 1 {
            return Err(Errno::EINVAL);
        }
        Ok((-(v as i64)) as i32)
    } else {
        i32::try_from(v).map_err(|_| Errno::EINVAL)
    }
}

/// The values of the namespace of the process doing the I/O.
fn values_of(io: &IoCtx<'_>) -> Arc<NetSysctl> {
    netns::of(&io.task.process).generic::<NetSysctl>()
}

/// A writable int of the caller's namespace: `get` reads it, `set` stores a parsed value.
fn knob(
    fs: &Arc<ProcFs>,
    get: impl Fn(&Values) -> i32 + Send + Sync + 'static,
    set: impl Fn(&mut Values, i32) -> SysResult<()> + Send + Sync + 'static,
) -> Arc<ProcInode> {
    ProcInode::file_rw(
        fs,
        move |_: &Arc<Kernel>, io: &IoCtx<'_>| {
            let v = get(&lock(&values_of(io).0));
            Ok(format!("{v}\n").into_bytes())
        },
        move |_: &Arc<Kernel>, io: &IoCtx<'_>, data: &[u8]| {
            if !io.task.process.net_capable(CAP_NET_ADMIN) {
                return Err(Errno::EPERM);
            }
            let v = parse_int(data)?;
            set(&mut lock(&values_of(io).0), v)?;
            Ok(data.len())
        },
    )
}

/// A `conf/<dir>/` directory, entries in name order (sysctl directories list that way).
fn conf_dir(fs: &Arc<ProcFs>, c: Conf) -> Arc<ProcInode> {
    let mut entries: Vec<(&str, Arc<ProcInode>)> = DEVCONF
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let node = if e.ro {
                ProcInode::file(fs, move |_, io| {
                    let v = lock(&values_of(io).0).get(c, i);
                    Ok(format!("{v}\n").into_bytes())
                })
            } else {
                knob(
                    fs,
                    move |v| v.get(c, i),
                    move |v, x| {
                        v.set(c, i, x);
                        Ok(())
                    },
                )
            };
            (e.name, node)
        })
        .collect();
    entries.sort_by_key(|(n, _)| *n);
    ProcInode::dir(fs, entries)
}

/// An `ipv6/conf/<all|default>/` directory.
fn conf6_dir(fs: &Arc<ProcFs>, all: bool) -> Arc<ProcInode> {
    let entries: Vec<(&str, Arc<ProcInode>)> = DEVCONF6
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let node = knob(
                fs,
                move |v| if all { v.all6[i] } else { v.dflt6[i] },
                move |v, x| {
                    if all {
                        v.all6[i] = x;
                    } else {
                        v.dflt6[i] = x;
                    }
                    Ok(())
                },
            );
            (e.name, node)
        })
        .collect();
    ProcInode::dir(fs, entries)
}

/// `ipv4/ping_group_range`: "LOW\tHIGH" (`proc_dointvec` prints vectors tab-separated).
fn ping_group_range_file(fs: &Arc<ProcFs>) -> Arc<ProcInode> {
    ProcInode::file_rw(
        fs,
        |_: &Arc<Kernel>, io: &IoCtx<'_>| {
            let (a, b) = lock(&values_of(io).0).ping_group_range;
            Ok(format!("{a}\t{b}\n").into_bytes())
        },
        |_: &Arc<Kernel>, io: &IoCtx<'_>, data: &[u8]| {
            if !io.task.process.net_capable(CAP_NET_ADMIN) {
                return Err(Errno::EPERM);
            }
            let r = parse_ping_group_range(data)?;
            lock(&values_of(io).0).ping_group_range = r;
            Ok(data.len())
        },
    )
}

/// `/proc/sys/net`.
pub fn sys_net_dir(fs: &Arc<ProcFs>) -> Arc<ProcInode> {
    let conf = ProcInode::dir(
        fs,
        Conf::DIRS
            .iter()
            .map(|&(n, c)| (n, conf_dir(fs, c)))
            .collect(),
    );
    let fwd = index("forwarding");
    let ipv4 = ProcInode::dir(
        fs,
        vec![
            ("conf", conf),
            // sysctl_net_ipv4.c ipv4_sysctl_forward: conf/all/forwarding.
            (
                "ip_forward",
                knob(
                    fs,
                    move |v| v.get(Conf::All, fwd),
                    move |v, x| {
                        v.set(Conf::All, fwd, x);
                        Ok(())
                    },
                ),
            ),
            ("ping_group_range", ping_group_range_file(fs)),
        ],
    );
    let core = ProcInode::dir(
        fs,
        vec![(
            "somaxconn",
            // proc_dointvec_minmax, extra1 = SYSCTL_ZERO.
            knob(
                fs,
                |v| v.somaxconn,
                |v, x| {
                    if x < 0 {
                        return Err(Errno::EINVAL);
                    }
                    v.somaxconn = x;
                    Ok(())
                },
            ),
        )],
    );
    let ipv6 = ProcInode::dir(
        fs,
        vec![(
            "conf",
            ProcInode::dir(
                fs,
                vec![
                    ("all", conf6_dir(fs, true)),
                    ("default", conf6_dir(fs, false)),
                ],
            ),
        )],
    );
    ProcInode::dir(fs, vec![("core", core), ("ipv4", ipv4), ("ipv6", ipv6)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_defaults() {
        let v = Values::default();
        let get = |c, n| v.get(c, index(n));
        assert_eq!(DEVCONF[index("tag")].name, "tag");
        assert_eq!(get(Conf::All, "accept_redirects"), 1);
        assert_eq!(get(Conf::All, "accept_source_route"), 0);
        assert_eq!(get(Conf::Default, "accept_source_route"), 1);
        assert_eq!(get(Conf::Lo, "accept_source_route"), 1);
        assert_eq!(
            get(Conf::Default, "igmpv2_unsolicited_report_interval"),
            10000
        );
        assert_eq!(get(Conf::Lo, "disable_xfrm"), 1);
        assert_eq!(get(Conf::Default, "disable_xfrm"), 0);
        assert_eq!(get(Conf::Lo, "tag"), 0);
        assert_eq!(v.somaxconn, 4096);
        // addrconf.c ipv6_devconf / ipv6_devconf_dflt.
        let six = |all: bool, n: &str| {
            if all {
                v.all6[index6(n)]
            } else {
                v.dflt6[index6(n)]
            }
        };
        assert_eq!((six(false, "accept_ra"), six(false, "autoconf")), (1, 1));
        assert_eq!((six(true, "accept_dad"), six(false, "accept_dad")), (0, 1));
        assert_eq!(six(false, "rtr_solicits"), -1);
        for (i, e) in DEVCONF6.iter().enumerate() {
            assert_eq!(index6(e.name), i);
        }
        assert!(DEVCONF6.windows(2).all(|w| w[0].name < w[1].name));
        // Names are unique and only mc_forwarding is read-only.
        for (i, e) in DEVCONF.iter().enumerate() {
            assert_eq!(index(e.name), i);
            assert_eq!(e.ro, e.name == "mc_forwarding");
        }
    }

    #[test]
    fn new_namespace_copies_all_and_default() {
        let mut init = Values::default();
        let tag = index("tag");
        init.set(Conf::Lo, tag, 5);
        init.set(Conf::Default, index("rp_filter"), 2);
        init.set(Conf::All, index("log_martians"), 1);
        init.somaxconn = 10;
        let n = Values::for_new_ns(&init);
        // lo starts from default (clone09: not the parent's lo).
        assert_eq!(n.get(Conf::Lo, tag), init.get(Conf::Default, tag));
        assert_eq!(n.get(Conf::Lo, tag), 0);
        assert_eq!(n.get(Conf::Lo, index("rp_filter")), 2);
        assert_eq!(n.get(Conf::Default, index("rp_filter")), 2);
        assert_eq!(n.get(Conf::All, index("log_martians")), 1);
        assert_eq!(n.somaxconn, SOMAXCONN_DEFAULT);
    }

    #[test]
    fn forwarding_follows_all() {
        let mut v = Values::default();
        let fwd = index("forwarding");
        v.set(Conf::Lo, fwd, 1);
        assert_eq!((v.get(Conf::All, fwd), v.get(Conf::Default, fwd)), (0, 0));
        v.set(Conf::All, fwd, 1);
        assert_eq!(v.get(Conf::Default, fwd), 1);
        assert_eq!(v.get(Conf::Lo, fwd), 1);
        assert_eq!(v.get(Conf::All, index("accept_redirects")), 0);
        v.set(Conf::All, fwd, 0);
        assert_eq!(v.get(Conf::Lo, fwd), 0);
        assert_eq!(v.get(Conf::All, index("accept_redirects")), 1);
        // default alone changes nothing else.
        v.set(Conf::Default, fwd, 1);
        assert_eq!((v.get(Conf::All, fwd), v.get(Conf::Lo, fwd)), (0, 0));
    }

    #[test]
    fn ping_group_range_parsing() {
        assert_eq!(
            parse_ping_group_range(b"0 2147483647\n"),
            Ok((0, i32::MAX as u32))
        );
        assert_eq!(parse_ping_group_range(b"100\t200"), Ok((100, 200)));
        assert_eq!(parse_ping_group_range(b"5 1"), Ok(PING_GROUP_RANGE_DEFAULT));
        assert_eq!(parse_ping_group_range(b"5"), Err(Errno::EINVAL));
        assert_eq!(parse_ping_group_range(b"-1 5"), Err(Errno::EINVAL));
        assert_eq!(Values::default().ping_group_range, (1, 0));
    }

    #[test]
    fn dointvec_parsing() {
        for (s, v) in [
            (&b"5"[..], 5),
            (b"  42\n", 42),
            (b"-7\n", -7),
            (b"0x10", 16),
            (b"010", 8),
            (b"0", 0),
            (b"1 2", 1),
            (b"3\0junk", 3),
            (b"2147483647", i32::MAX),
            (b"-2147483648", i32::MIN),
        ] {
            assert_eq!(parse_int(s), Ok(v), "{:?}", String::from_utf8_lossy(s));
        }
        for s in [
            &b""[..],
            b"\n",
            b"abc",
            b"12abc",
            b"--1",
            b"2147483648",
            b"-2147483649",
            b"99999999999999999999999",
            b"09",
        ] {
            assert_eq!(
                parse_int(s),
                Err(Errno::EINVAL),
                "{:?}",
                String::from_utf8_lossy(s)
            );
        }
    }
}
