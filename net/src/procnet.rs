//! `/proc/net` and `/sys/class/net`: the network namespace's devices, addresses, routes and
//! sockets as files (Linux `net/core/net-procfs.c` `dev_seq_show`, `net/ipv4/fib_trie.c`
//! `fib_route_seq_show`, `net/ipv6/addrconf.c` `if6_seq_show`, `net/ipv6/route.c`
//! `ipv6_route_native_seq_show`, `net/ipv4/tcp_ipv4.c` `tcp4_seq_show`, `net/ipv6/tcp_ipv6.c`,
//! `net/ipv4/udp.c` `udp4_format_sock`, `net/ipv6/datagram.c`, `net/ipv4/arp.c`,
//! `net/ipv4/proc.c` (`snmp`, `netstat`, `sockstat`), `net/netlink/af_netlink.c`
//! `netlink_seq_show`, `net/packet/af_packet.c` `packet_seq_show`; `net/core/net-sysfs.c` for `/sys/class/net/NAME/*`).
//!
//! Everything is read from [`crate::dev`] and [`crate::inet::list`] of the namespace of the
//! process reading (for `/sys/class/net`: of the process listing it). Difference from Linux:
//! `/proc/net` is a directory, not the link to `self/net` (there is no `/proc/PID/net`); a
//! process reads its own namespace through it, which is what `/proc/self/net` would show.
//! Counters nothing here counts (IP, ICMP, UDP, the TCP extensions) are zeros; the neighbour
//! table is empty (`arp` is its header).

use crate::dev::{self, NetDevice};
use crate::inet::list::{SockInfo, sockets};
use crate::inet::opt::Proto;
use std::fmt::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use um_fs::procfs::{DynDir, Node, ProcFs, ProcInode, registry};
use um_kernel::netns::{self, NetNs};
use um_kernel::vfs::mode;
use um_kernel::wait::IoCtx;
use um_uapi::abi::netdevice::*;
use um_uapi::abi::netlink::tcp_state;
use um_uapi::{Errno, SysResult};

/// The namespace of the process doing the I/O.
fn net_of(io: &IoCtx<'_>) -> Arc<NetNs> {
    netns::of(&io.task.process)
}

/// `seq_pad`: `s` padded with spaces to `width`, then a newline.
fn pad(s: &str, width: usize) -> String {
    format!("{s:<width$}\n")
}

/// `/proc/net/dev`.
pub fn dev(net: &Arc<NetNs>) -> String {
    let mut s = String::from(
        "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n",
    );
    for d in dev::devices(net).list() {
        let st = crate::netlink::route::link_stats(&d);
        use um_uapi::abi::netlink::stats::*;
        let _ = writeln!(
            s,
            "{:>6}: {:7} {:7} {:4} {:4} {:4} {:5} {:10} {:9} {:8} {:7} {:4} {:4} {:4} {:5} {:7} {:10}",
            d.name(),
            st[RX_BYTES],
            st[RX_PACKETS],
            st[RX_ERRORS],
            st[RX_DROPPED],
            0,
            0,
            0,
            st[MULTICAST],
            st[TX_BYTES],
            st[TX_PACKETS],
            st[TX_ERRORS],
            st[TX_DROPPED],
            0,
            0,
            0,
            0
        );
    }
    s
}

/// An IPv4 address as `%08X` of the big-endian word read on a little-endian machine.
fn hex4(a: IpAddr) -> String {
    match a {
        IpAddr::V4(v) => format!("{:08X}", u32::from_le_bytes(v.octets())),
        IpAddr::V6(_) => "00000000".into(),
    }
}

/// An IPv6 address as four such words (`%08X%08X%08X%08X`).
fn hex16(a: IpAddr) -> String {
    let o = match a {
        IpAddr::V6(v) => v.octets(),
        IpAddr::V4(v) => v.to_ipv6_mapped().octets(),
    };
    o.chunks(4)
        .map(|w| format!("{:08X}", u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
        .collect()
}

/// `%pi6`: 32 lower-case hex digits.
fn pi6(a: IpAddr) -> String {
    match a {
        IpAddr::V6(v) => v.octets().iter().map(|b| format!("{b:02x}")).collect(),
        IpAddr::V4(_) => "0".repeat(32),
    }
}

/// `/proc/net/route`: the main table's IPv4 routes, broadcast and multicast ones left out.
pub fn route(net: &Arc<NetNs>) -> String {
    let d = dev::devices(net);
    let mut s = pad(
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT",
        127,
    );
    for r in crate::netlink::route::sorted_routes(&d) {
        if !r.dst.is_ipv4() || r.table != RT_TABLE_MAIN || r.kind == RTN_BROADCAST || r.kind == 5 {
            continue;
        }
        let mask = IpAddr::V4(std::net::Ipv4Addr::from(if r.dst_len == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(r.dst_len))
        }));
        let mut flags = RTF_UP;
        if r.kind == um_uapi::abi::netlink::RTN_UNREACHABLE || r.kind == 8 {
            flags |= RTF_REJECT;
        }
        if r.gateway.is_some() {
            flags |= RTF_GATEWAY;
        }
        if r.dst_len == 32 {
            flags |= RTF_HOST;
        }
        let name = d.by_index(r.oif).map_or("*".to_string(), |dv| dv.name());
        let line = format!(
            "{}\t{}\t{}\t{:04X}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            name,
            hex4(r.dst),
            r.gateway.map_or("00000000".into(), hex4),
            flags,
            0,
            0,
            r.priority,
            hex4(mask),
            0,
            0,
            0
        );
        s.push_str(&pad(&line, 127));
    }
    s
}

/// `ipv6_addr_scope` as `if_inet6` shows it (`IPV6_ADDR_*` scope bits).
fn scope6(a: IpAddr) -> u8 {
    match a {
        IpAddr::V6(v) if v.is_loopback() => 0x10,
        IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80 => 0x20,
        IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfec0 => 0x40,
        _ => 0,
    }
}

/// `/proc/net/if_inet6`.
pub fn if_inet6(net: &Arc<NetNs>) -> String {
    let d = dev::devices(net);
    let mut s = String::new();
    for a in d.addrs().iter().filter(|a| a.addr.is_ipv6()) {
        let name = d
            .by_index(a.ifindex)
            .map(|dv| dv.name())
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "{} {:02x} {:02x} {:02x} {:02x} {:>8}",
            pi6(a.addr),
            a.ifindex,
            a.prefix_len,
            scope6(a.addr),
            a.flags as u8,
            name
        );
    }
    s
}

/// `/proc/net/ipv6_route`.
pub fn ipv6_route(net: &Arc<NetNs>) -> String {
    let d = dev::devices(net);
    let zero = "0".repeat(32);
    let mut s = String::new();
    for r in d.routes().iter().filter(|r| r.dst.is_ipv6()) {
        let mut flags: u32 = 0x1;
        if r.gateway.is_some() {
            flags |= 0x2;
        }
        if r.kind == RTN_LOCAL {
            // RTF_LOCAL | RTF_NONEXTHOP.
            flags |= 0x8020_0000;
        }
        let name = d.by_index(r.oif).map(|dv| dv.name()).unwrap_or_default();
        let _ = writeln!(
            s,
            "{} {:02x} {} 00 {} {:08x} {:08x} {:08x} {:08x} {:>8}",
            pi6(r.dst),
            r.dst_len,
            zero,
            r.gateway.map_or(zero.clone(), pi6),
            r.priority,
            1,
            0,
            flags,
            name
        );
    }
    s
}

fn remote_or_any(x: &SockInfo) -> SocketAddr {
    x.remote.unwrap_or_else(|| {
        SocketAddr::new(
            match x.local.ip() {
                IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
                IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
            },
            0,
        )
    })
}

/// `/proc/net/tcp` (`v6` false) or `tcp6`.
pub fn tcp(net: &Arc<NetNs>, v6: bool) -> String {
    let fam = if v6 { crate::AF_INET6 } else { crate::AF_INET };
    let mut s = if v6 {
        "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n".to_string()
    } else {
        pad(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
            149,
        )
    };
    let list: Vec<SockInfo> = sockets(net)
        .into_iter()
        .filter(|x| x.proto == Proto::Tcp && x.family == fam)
        .collect();
    for (n, x) in list.iter().enumerate() {
        let r = remote_or_any(x);
        let listen = x.state == tcp_state::TCP_LISTEN;
        let (addr, raddr) = if v6 {
            (hex16(x.local.ip()), hex16(r.ip()))
        } else {
            (hex4(x.local.ip()), hex4(r.ip()))
        };
        let line = format!(
            "{:4}: {}:{:04X} {}:{:04X} {:02X} {:08X}:{:08X} {:02X}:{:08X} {:08X} {:5} {:8} {} {} {:016x} {} {} {} {} {}",
            n,
            addr,
            x.local.port(),
            raddr,
            r.port(),
            x.state,
            x.tx_queue,
            x.rx_queue,
            0,
            0,
            0,
            x.uid,
            0,
            x.ino,
            1,
            0,
            if listen { 100 } else { 20 },
            if listen { 0 } else { 4 },
            0,
            10,
            if listen { 0 } else { -1 }
        );
        if v6 {
            s.push_str(&line);
            s.push('\n');
        } else {
            s.push_str(&pad(&line, 149));
        }
    }
    s
}

/// `/proc/net/udp` or `udp6`.
pub fn udp(net: &Arc<NetNs>, v6: bool) -> String {
    let fam = if v6 { crate::AF_INET6 } else { crate::AF_INET };
    let mut s = if v6 {
        "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n".to_string()
    } else {
        pad(
            "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops",
            127,
        )
    };
    let list: Vec<SockInfo> = sockets(net)
        .into_iter()
        .filter(|x| x.proto == Proto::Udp && x.family == fam)
        .collect();
    for (n, x) in list.iter().enumerate() {
        let r = remote_or_any(x);
        let (addr, raddr) = if v6 {
            (hex16(x.local.ip()), hex16(r.ip()))
        } else {
            (hex4(x.local.ip()), hex4(r.ip()))
        };
        let line = format!(
            "{:5}: {}:{:04X} {}:{:04X} {:02X} {:08X}:{:08X} {:02X}:{:08X} {:08X} {:5} {:8} {} {} {:016x} {}",
            n,
            addr,
            x.local.port(),
            raddr,
            r.port(),
            x.state,
            x.tx_queue,
            x.rx_queue,
            0,
            0,
            0,
            x.uid,
            0,
            x.ino,
            2,
            0,
            0
        );
        if v6 {
            s.push_str(&line);
            s.push('\n');
        } else {
            s.push_str(&pad(&line, 127));
        }
    }
    s
}

/// A header line and a value line of zeros (`snmp_seq_show`'s pairs), with `vals` first.
fn pair(s: &mut String, tag: &str, names: &str, vals: &[i64]) {
    let n = names.split(' ').count();
    let _ = writeln!(s, "{tag}: {names}");
    let v: Vec<String> = (0..n)
        .map(|i| vals.get(i).copied().unwrap_or(0).to_string())
        .collect();
    let _ = writeln!(s, "{tag}: {}", v.join(" "));
}

/// `/proc/net/snmp`.
pub fn snmp(net: &Arc<NetNs>) -> String {
    let fwd = crate::sysctl::ip_forward(net);
    let estab = sockets(net)
        .iter()
        .filter(|x| x.proto == Proto::Tcp && x.state == tcp_state::TCP_ESTABLISHED)
        .count() as i64;
    let mut s = String::new();
    pair(
        &mut s,
        "Ip",
        "Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates OutTransmits",
        &[if fwd { 1 } else { 2 }, 64],
    );
    pair(
        &mut s,
        "Icmp",
        "InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds InParmProbs InSrcQuenchs InRedirects InEchos InEchoReps InTimestamps InTimestampReps InAddrMasks InAddrMaskReps OutMsgs OutErrors OutRateLimitGlobal OutRateLimitHost OutDestUnreachs OutTimeExcds OutParmProbs OutSrcQuenchs OutRedirects OutEchos OutEchoReps OutTimestamps OutTimestampReps OutAddrMasks OutAddrMaskReps",
        &[],
    );
    pair(
        &mut s,
        "Tcp",
        "RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors",
        &[1, 200, 120_000, -1, 0, 0, 0, 0, estab],
    );
    let udp = "InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors";
    pair(&mut s, "Udp", udp, &[]);
    pair(&mut s, "UdpLite", udp, &[]);
    s
}

/// `/proc/net/netstat`.
pub fn netstat() -> String {
    let mut s = String::new();
    pair(
        &mut s,
        "TcpExt",
        "SyncookiesSent SyncookiesRecv SyncookiesFailed EmbryonicRsts PruneCalled RcvPruned OfoPruned OutOfWindowIcmps LockDroppedIcmps ArpFilter TW TWRecycled TWKilled PAWSActive PAWSEstab BeyondWindow TSEcrRejected PAWSOldAck PAWSTimewait DelayedACKs DelayedACKLocked DelayedACKLost ListenOverflows ListenDrops TCPHPHits TCPPureAcks TCPHPAcks TCPRenoRecovery TCPSackRecovery TCPSACKReneging TCPSACKReorder TCPRenoReorder TCPTSReorder TCPFullUndo TCPPartialUndo TCPDSACKUndo TCPLossUndo TCPLostRetransmit TCPRenoFailures TCPSackFailures TCPLossFailures TCPFastRetrans TCPSlowStartRetrans TCPTimeouts TCPLossProbes TCPLossProbeRecovery TCPRenoRecoveryFail TCPSackRecoveryFail TCPRcvCollapsed TCPBacklogCoalesce TCPDSACKOldSent TCPDSACKOfoSent TCPDSACKRecv TCPDSACKOfoRecv TCPAbortOnData TCPAbortOnClose TCPAbortOnMemory TCPAbortOnTimeout TCPAbortOnLinger TCPAbortFailed TCPMemoryPressures TCPMemoryPressuresChrono TCPSACKDiscard TCPDSACKIgnoredOld TCPDSACKIgnoredNoUndo TCPSpuriousRTOs TCPMD5NotFound TCPMD5Unexpected TCPMD5Failure TCPSackShifted TCPSackMerged TCPSackShiftFallback TCPBacklogDrop PFMemallocDrop TCPMinTTLDrop TCPDeferAcceptDrop IPReversePathFilter TCPTimeWaitOverflow TCPReqQFullDoCookies TCPReqQFullDrop TCPRetransFail TCPRcvCoalesce TCPOFOQueue TCPOFODrop TCPOFOMerge TCPChallengeACK TCPSYNChallenge TCPFastOpenActive TCPFastOpenActiveFail TCPFastOpenPassive TCPFastOpenPassiveFail TCPFastOpenListenOverflow TCPFastOpenCookieReqd TCPFastOpenBlackhole TCPSpuriousRtxHostQueues BusyPollRxPackets TCPAutoCorking TCPFromZeroWindowAdv TCPToZeroWindowAdv TCPWantZeroWindowAdv TCPSynRetrans TCPOrigDataSent TCPHystartTrainDetect TCPHystartTrainCwnd TCPHystartDelayDetect TCPHystartDelayCwnd TCPACKSkippedSynRecv TCPACKSkippedPAWS TCPACKSkippedSeq TCPACKSkippedFinWait2 TCPACKSkippedTimeWait TCPACKSkippedChallenge TCPWinProbe TCPKeepAlive TCPMTUPFail TCPMTUPSuccess TCPDelivered TCPDeliveredCE TCPAckCompressed TCPZeroWindowDrop TCPRcvQDrop TCPWqueueTooBig TCPFastOpenPassiveAltKey TcpTimeoutRehash TcpDuplicateDataRehash TCPDSACKRecvSegs TCPDSACKIgnoredDubious TCPMigrateReqSuccess TCPMigrateReqFailure TCPPLBRehash TCPAORequired TCPAOBad TCPAOKeyNotFound TCPAOGood TCPAODroppedIcmps",
        &[],
    );
    pair(
        &mut s,
        "IpExt",
        "InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts InOctets OutOctets InMcastOctets OutMcastOctets InBcastOctets OutBcastOctets InCsumErrors InNoECTPkts InECT1Pkts InECT0Pkts InCEPkts ReasmOverlaps",
        &[],
    );
    s
}

/// `/proc/net/sockstat`.
pub fn sockstat(net: &Arc<NetNs>) -> String {
    let l = sockets(net);
    let tcp = l
        .iter()
        .filter(|x| x.proto == Proto::Tcp && x.family == crate::AF_INET)
        .count();
    let udp = l
        .iter()
        .filter(|x| x.proto == Proto::Udp && x.family == crate::AF_INET)
        .count();
    format!(
        "sockets: used {}\nTCP: inuse {tcp} orphan 0 tw 0 alloc {tcp} mem 0\nUDP: inuse {udp} mem 0\nUDPLITE: inuse 0\nRAW: inuse 0\nFRAG: inuse 0 memory 0\n",
        l.len()
    )
}

const ARP_HEADER: &str =
    "IP address       HW type     Flags       HW address            Mask     Device\n";

/// A `/proc/net` file made from the reader's namespace.
fn nfile(fs: &Arc<ProcFs>, f: fn(&Arc<NetNs>) -> String) -> Arc<ProcInode> {
    ProcInode::file(fs, move |_, io| Ok(f(&net_of(io)).into_bytes()))
}

/// `/proc/net`.
fn proc_net_dir(fs: &Arc<ProcFs>) -> Arc<ProcInode> {
    let mut v = vec![
        ("arp", ProcInode::text(fs, ARP_HEADER)),
        ("dev", nfile(fs, dev)),
        ("if_inet6", nfile(fs, if_inet6)),
        ("ipv6_route", nfile(fs, ipv6_route)),
        ("netlink", nfile(fs, crate::netlink::proc_netlink)),
        (
            "netstat",
            ProcInode::file(fs, |_, _| Ok(netstat().into_bytes())),
        ),
        ("packet", nfile(fs, |n| crate::packet::proc_packet(n))),
        ("route", nfile(fs, route)),
        ("snmp", nfile(fs, snmp)),
        ("sockstat", nfile(fs, sockstat)),
        ("tcp", nfile(fs, |n| tcp(n, false))),
        ("tcp6", nfile(fs, |n| tcp(n, true))),
        ("udp", nfile(fs, |n| udp(n, false))),
        ("udp6", nfile(fs, |n| udp(n, true))),
    ];
    // What others register in /proc/net (ipconfig's `pnp`).
    registry::insert_in_order(fs, "net", &mut v);
    ProcInode::dir(fs, v)
}

/// `/sys/class/net/NAME`'s `operstate`.
fn operstate_name(d: &NetDevice) -> &'static str {
    match crate::netlink::route::operstate(d) {
        um_uapi::abi::netlink::IF_OPER_UP => "up",
        um_uapi::abi::netlink::IF_OPER_DOWN => "down",
        _ => "unknown",
    }
}

fn mac_text(m: &[u8; 6]) -> String {
    let p: Vec<String> = m.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}\n", p.join(":"))
}

/// One device's directory (`net-sysfs.c` attributes; read-only here).
fn sys_dev_dir(fs: &Arc<ProcFs>, d: &Arc<NetDevice>) -> Arc<ProcInode> {
    let f = |g: fn(&NetDevice) -> SysResult<String>| {
        let d = d.clone();
        ProcInode::file(fs, move |_, _| g(&d).map(String::into_bytes))
    };
    let stat = |i: usize| {
        let d = d.clone();
        ProcInode::file(fs, move |_, _| {
            Ok(format!("{}\n", crate::netlink::route::link_stats(&d)[i]).into_bytes())
        })
    };
    use um_uapi::abi::netlink::stats::*;
    let zero = || ProcInode::text(fs, "0\n");
    let stats = ProcInode::dir(
        fs,
        vec![
            ("collisions", zero()),
            ("multicast", stat(MULTICAST)),
            ("rx_bytes", stat(RX_BYTES)),
            ("rx_compressed", zero()),
            ("rx_crc_errors", zero()),
            ("rx_dropped", stat(RX_DROPPED)),
            ("rx_errors", stat(RX_ERRORS)),
            ("rx_fifo_errors", zero()),
            ("rx_frame_errors", zero()),
            ("rx_length_errors", zero()),
            ("rx_missed_errors", zero()),
            ("rx_nohandler", zero()),
            ("rx_over_errors", zero()),
            ("rx_packets", stat(RX_PACKETS)),
            ("tx_aborted_errors", zero()),
            ("tx_bytes", stat(TX_BYTES)),
            ("tx_carrier_errors", zero()),
            ("tx_compressed", zero()),
            ("tx_dropped", stat(TX_DROPPED)),
            ("tx_errors", stat(TX_ERRORS)),
            ("tx_fifo_errors", zero()),
            ("tx_heartbeat_errors", zero()),
            ("tx_packets", stat(TX_PACKETS)),
            ("tx_window_errors", zero()),
        ],
    );
    ProcInode::dir(
        fs,
        vec![
            ("addr_assign_type", zero()),
            ("addr_len", ProcInode::text(fs, "6\n")),
            ("address", f(|d| Ok(mac_text(&d.mac)))),
            (
                "broadcast",
                f(|d| Ok(mac_text(&crate::netlink::route::broadcast_mac(d)))),
            ),
            (
                "carrier",
                // Reading the carrier of a device that is down is EINVAL (`carrier_show`).
                f(|d| {
                    if d.is_up() {
                        Ok("1\n".into())
                    } else {
                        Err(Errno::EINVAL)
                    }
                }),
            ),
            ("dev_id", ProcInode::text(fs, "0x0\n")),
            ("dev_port", zero()),
            ("dormant", zero()),
            (
                "flags",
                f(|d| {
                    Ok(format!(
                        "{:#x}\n",
                        d.flags() & !(IFF_RUNNING | IFF_LOWER_UP)
                    ))
                }),
            ),
            ("ifindex", f(|d| Ok(format!("{}\n", d.ifindex)))),
            ("iflink", f(|d| Ok(format!("{}\n", d.ifindex)))),
            ("link_mode", zero()),
            ("mtu", f(|d| Ok(format!("{}\n", d.mtu())))),
            ("netdev_group", zero()),
            ("operstate", f(|d| Ok(format!("{}\n", operstate_name(d))))),
            ("proto_down", zero()),
            ("statistics", stats),
            ("tx_queue_len", f(|d| Ok(format!("{}\n", d.txqlen())))),
            ("type", f(|d| Ok(format!("{}\n", d.kind)))),
            (
                "uevent",
                f(|d| Ok(format!("INTERFACE={}\nIFINDEX={}\n", d.name(), d.ifindex))),
            ),
        ],
    )
}

/// `/sys/class/net`: the devices of the namespace of whoever lists it.
struct ClassNet;

impl DynDir for ClassNet {
    fn entries(&self, fs: &Arc<ProcFs>) -> Vec<(Vec<u8>, Arc<ProcInode>)> {
        dev::devices(&netns::current())
            .list()
            .iter()
            .map(|d| (d.name().into_bytes(), sys_dev_dir(fs, d)))
            .collect()
    }
}

/// Adds `/proc/net` and `/sys/class/net` to procfs's and sysfs's registries.
pub fn register() {
    registry::proc_create("", "net", proc_net_dir);
    registry::proc_create("sysfs/class", "net", |fs| {
        ProcInode::new(
            fs,
            fs.alloc_ino(),
            mode::S_IFDIR | 0o755,
            Node::Dyn(Box::new(ClassNet)),
        )
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dev::{IfAddr, NetDevOps};

    struct Null;
    impl NetDevOps for Null {
        fn xmit(&self, _: &[u8]) -> bool {
            true
        }
    }

    #[test]
    fn files_of_lo_and_a_dummy_ethernet() {
        let ns = crate::dev::test_ns();
        let d = dev::devices(&ns);
        let eth = d
            .register(
                &ns,
                "eth0",
                ARPHRD_ETHER,
                [2, 0, 0, 0, 0, 1],
                1500,
                IFF_BROADCAST | IFF_MULTICAST,
                Arc::new(Null),
            )
            .unwrap();
        d.set_flags(&ns, eth.ifindex, IFF_UP | IFF_BROADCAST | IFF_MULTICAST)
            .unwrap();
        d.add_addr(
            &ns,
            IfAddr::new(eth.ifindex, "10.0.2.15".parse().unwrap(), 24, "eth0"),
        )
        .unwrap();
        d.add_addr(
            &ns,
            IfAddr::new(eth.ifindex, "fd00::2".parse().unwrap(), 64, "eth0"),
        )
        .unwrap();
        let r = route(&ns);
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines.len(), 2, "{r}");
        assert!(
            lines[1].starts_with("eth0\t0002000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t"),
            "{r}"
        );
        assert!(r.lines().all(|l| l.len() == 127));
        let v6 = if_inet6(&ns);
        assert!(
            v6.contains("00000000000000000000000000000001 01 80 10 80       lo\n"),
            "{v6}"
        );
        assert!(
            v6.contains("fd000000000000000000000000000002 02 40 00 80     eth0\n"),
            "{v6}"
        );
        let devf = dev(&ns);
        assert!(devf.contains("\n    lo:       0"), "{devf}");
        assert!(devf.contains("\n  eth0:       0"), "{devf}");
        let r6 = ipv6_route(&ns);
        assert!(r6.contains("fd000000000000000000000000000000 40 "), "{r6}");
        assert!(r6.contains("80200001       lo\n"), "{r6}");
        assert_eq!(tcp(&ns, false).lines().next().unwrap().len(), 149);
        let sn = snmp(&ns);
        assert!(sn.starts_with("Ip: Forwarding DefaultTTL"));
        assert!(sn.contains("\nIp: 2 64 0 "), "{sn}");
    }
}
