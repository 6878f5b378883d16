//! Guest test `netlink`: what network tools ask the kernel about interfaces, in a network
//! namespace of its own (so natively only the namespace's `lo` is seen and nothing of the
//! host's network changes).
//!
//! * rtnetlink: bind (autobind to the pid), getsockname; an `RTM_NEWLINK` that brings lo up
//!   (on Linux a new namespace's lo starts down); `RTM_GETLINK` dumps (NLM_F_MULTI, seq, pid,
//!   `NLMSG_DONE`) and single queries by index and name (`ENODEV`
//!   with the request echoed, or only its header with `NETLINK_CAP_ACK`); `RTM_GETADDR`;
//!   `RTM_GETROUTE` of the local table and `ip route get`; `RTM_NEWADDR` / `RTM_DELADDR` of
//!   127.0.0.2/8 and fd00::1/64 on lo with acknowledgements, `EEXIST`, `EADDRNOTAVAIL`, and the
//!   notifications a member of the address groups receives; `EPERM` without
//!   `CAP_NET_ADMIN`; `MSG_PEEK`/`MSG_TRUNC`; `NETLINK_EXT_ACK`, `NETLINK_GET_STRICT_CHK`,
//!   `NETLINK_LIST_MEMBERSHIPS`; unknown protocols.
//! * sock_diag: a TCP listener and a UDP socket found in `SOCK_DIAG_BY_FAMILY` dumps.
//! * ioctls on lo: SIOCGIFCONF, SIOCGIFNAME/INDEX/FLAGS/MTU/ADDR/NETMASK/BRDADDR/HWADDR/TXQLEN,
//!   SIOCSIFMTU, SIOCADDRT/SIOCDELRT, ENODEV; getifaddrs and if_nameindex (musl: netlink).
//! * /proc/net/{dev,route,if_inet6,tcp,udp,packet,snmp} and /sys/class/net/lo.
//! * sendmmsg/recvmmsg over UDP loopback: counts, msg_len, a partial send (EFAULT in the
//!   second message), the first message's error, MSG_WAITFORONE, EAGAIN, a timeout, vlen 0.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then
//! UM-NETLINK-OK. Usage: netlink WORKDIR. Needs root (unshare(CLONE_NEWNET)).

use std::mem::size_of;
use umt::{check, check_eq, errno, expect_err, ok, say};

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_MULTI: u16 = 2;
const NLM_F_ACK: u16 = 4;
const NLM_F_DUMP: u16 = 0x300;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
const NLM_F_CAPPED: u16 = 0x100;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWADDR: u16 = 20;
const RTM_DELADDR: u16 = 21;
const RTM_GETADDR: u16 = 22;
const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
const SOL_NETLINK: i32 = 270;

/// The kernel's messages: (type, flags, seq, pid, payload).
type NlMsg = (u16, u16, u32, u32, Vec<u8>);

fn u16le(b: &[u8]) -> u16 {
    u16::from_ne_bytes([b[0], b[1]])
}
fn u32le(b: &[u8]) -> u32 {
    u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
}

fn nl_sock(proto: i32) -> i32 {
    // SAFETY: plain integers.
    ok(
        unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, proto) }
            as i64,
        "socket(AF_NETLINK)",
    ) as i32
}

fn nladdr(pid: u32, groups: u32) -> libc::sockaddr_nl {
    // SAFETY: sockaddr_nl is plain data.
    let mut a: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    a.nl_family = libc::AF_NETLINK as u16;
    a.nl_pid = pid;
    a.nl_groups = groups;
    a
}

fn nl_bind(fd: i32, groups: u32) {
    let a = nladdr(0, groups);
    // SAFETY: a valid sockaddr_nl.
    ok(
        unsafe {
            libc::bind(
                fd,
                (&a as *const libc::sockaddr_nl).cast(),
                size_of::<libc::sockaddr_nl>() as u32,
            )
        } as i64,
        "bind(AF_NETLINK)",
    );
}

fn setopt(fd: i32, level: i32, name: i32, v: i32) -> i64 {
    // SAFETY: an int option.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const i32).cast(),
            size_of::<i32>() as u32,
        ) as i64
    }
}

/// A request: header, family header, attributes.
fn msg(ty: u16, flags: u16, seq: u32, hdr: &[u8], attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut b = vec![0u8; 16];
    b.extend_from_slice(hdr);
    while b.len() % 4 != 0 {
        b.push(0);
    }
    for (t, d) in attrs {
        b.extend_from_slice(&((4 + d.len()) as u16).to_ne_bytes());
        b.extend_from_slice(&t.to_ne_bytes());
        b.extend_from_slice(d);
        while b.len() % 4 != 0 {
            b.push(0);
        }
    }
    let len = b.len() as u32;
    b[..4].copy_from_slice(&len.to_ne_bytes());
    b[4..6].copy_from_slice(&ty.to_ne_bytes());
    b[6..8].copy_from_slice(&(flags | NLM_F_REQUEST).to_ne_bytes());
    b[8..12].copy_from_slice(&seq.to_ne_bytes());
    b
}

fn nl_send(fd: i32, m: &[u8]) {
    let to = nladdr(0, 0);
    // SAFETY: valid buffer and address.
    let n = unsafe {
        libc::sendto(
            fd,
            m.as_ptr().cast(),
            m.len(),
            0,
            (&to as *const libc::sockaddr_nl).cast(),
            size_of::<libc::sockaddr_nl>() as u32,
        )
    };
    check_eq(
        ok(n as i64, "sendto(netlink)"),
        m.len() as i64,
        "sendto returns the length",
    );
}

/// One datagram (blocking unless `nonblock`); None on EAGAIN. Checks the sender is the kernel.
fn nl_recv_dgram(fd: i32, nonblock: bool) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 32768];
    let mut from = nladdr(1, 1);
    let mut alen = size_of::<libc::sockaddr_nl>() as u32;
    // SAFETY: valid buffers.
    let n = unsafe {
        libc::recvfrom(
            fd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            if nonblock { libc::MSG_DONTWAIT } else { 0 },
            (&mut from as *mut libc::sockaddr_nl).cast(),
            &mut alen,
        )
    };
    if n < 0 && errno() == libc::EAGAIN {
        return None;
    }
    let n = ok(n as i64, "recvfrom(netlink)") as usize;
    check_eq(
        alen as usize,
        size_of::<libc::sockaddr_nl>(),
        "nladdr length",
    );
    check_eq(from.nl_pid, 0, "the kernel sends from port 0");
    buf.truncate(n);
    Some(buf)
}

fn parse(b: &[u8]) -> Vec<NlMsg> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + 16 <= b.len() {
        let len = u32le(&b[off..]) as usize;
        if len < 16 || off + len > b.len() {
            break;
        }
        out.push((
            u16le(&b[off + 4..]),
            u16le(&b[off + 6..]),
            u32le(&b[off + 8..]),
            u32le(&b[off + 12..]),
            b[off + 16..off + len].to_vec(),
        ));
        off += (len + 3) & !3;
    }
    out
}

/// Reads a dump up to NLMSG_DONE; checks the flags, seq and pid of every message (DONE comes
/// alone or after the last messages, depending on the dump).
fn dump(fd: i32, seq: u32, pid: u32) -> Vec<NlMsg> {
    let mut out = Vec::new();
    loop {
        let d = nl_recv_dgram(fd, false).expect("blocking");
        let ms = parse(&d);
        for m in ms {
            check_eq((m.2, m.3), (seq, pid), "dump seq and pid");
            check(m.1 & NLM_F_MULTI != 0, "dump messages are NLM_F_MULTI");
            if m.0 == NLMSG_DONE {
                return out;
            }
            check(m.0 != NLMSG_ERROR, format!("dump error {}", errno_of(&m)));
            out.push(m);
        }
    }
}

fn errno_of(m: &NlMsg) -> i32 {
    -(u32le(&m.4) as i32)
}

/// The reply to a request that wants an acknowledgement: the errno (0 for success).
fn ack(fd: i32, seq: u32) -> i32 {
    let d = nl_recv_dgram(fd, false).expect("blocking");
    let ms = parse(&d);
    check_eq(ms.len(), 1, "one message in an ack");
    check_eq(ms[0].0, NLMSG_ERROR, "ack type");
    check_eq(ms[0].2, seq, "ack seq");
    errno_of(&ms[0])
}

fn attrs(b: &[u8]) -> Vec<(u16, Vec<u8>)> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + 4 <= b.len() {
        let len = u16le(&b[off..]) as usize;
        if len < 4 || off + len > b.len() {
            break;
        }
        out.push((
            u16le(&b[off + 2..]) & 0x3fff,
            b[off + 4..off + len].to_vec(),
        ));
        off += (len + 3) & !3;
    }
    out
}

fn attr(a: &[(u16, Vec<u8>)], t: u16) -> Option<Vec<u8>> {
    a.iter().find(|x| x.0 == t).map(|x| x.1.clone())
}

fn attr_str(a: &[(u16, Vec<u8>)], t: u16) -> String {
    attr(a, t)
        .map(|v| {
            let end = v.iter().position(|&c| c == 0).unwrap_or(v.len());
            String::from_utf8_lossy(&v[..end]).into_owned()
        })
        .unwrap_or_else(|| "-".into())
}

fn attr_u32(a: &[(u16, Vec<u8>)], t: u16) -> String {
    attr(a, t).map_or("-".into(), |v| u32le(&v).to_string())
}

fn ip_text(v: &[u8]) -> String {
    match v.len() {
        4 => std::net::Ipv4Addr::new(v[0], v[1], v[2], v[3]).to_string(),
        16 => {
            let mut o = [0u8; 16];
            o.copy_from_slice(v);
            std::net::Ipv6Addr::from(o).to_string()
        }
        _ => format!("{v:?}"),
    }
}

fn ifinfomsg(index: i32, flags: u32, change: u32) -> Vec<u8> {
    let mut b = vec![0u8; 16];
    b[4..8].copy_from_slice(&index.to_ne_bytes());
    b[8..12].copy_from_slice(&flags.to_ne_bytes());
    b[12..16].copy_from_slice(&change.to_ne_bytes());
    b
}

fn ifaddrmsg(family: u8, plen: u8, scope: u8, index: u32) -> Vec<u8> {
    let mut b = vec![family, plen, 0, scope];
    b.extend_from_slice(&index.to_ne_bytes());
    b
}

fn getsockname_nl(fd: i32) -> libc::sockaddr_nl {
    let mut a = nladdr(0, 0);
    let mut len = size_of::<libc::sockaddr_nl>() as u32;
    // SAFETY: valid buffers.
    ok(
        unsafe { libc::getsockname(fd, (&mut a as *mut libc::sockaddr_nl).cast(), &mut len) }
            as i64,
        "getsockname",
    );
    check_eq(
        len as usize,
        size_of::<libc::sockaddr_nl>(),
        "getsockname length",
    );
    a
}

/// Describes a link message as `ip link` would need it.
fn link_line(p: &[u8]) -> String {
    let a = attrs(&p[16..]);
    let hex = |v: Option<Vec<u8>>| {
        v.map_or("-".into(), |v| {
            v.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(":")
        })
    };
    format!(
        "index {} type {} flags {:#x} name {} mtu {} qlen {} operstate {} linkmode {} qdisc {} addr {} brd {} stats64 {} stats {}",
        u32le(&p[4..]),
        u16le(&p[2..]),
        u32le(&p[8..]),
        attr_str(&a, 3),
        attr_u32(&a, 4),
        attr_u32(&a, 13),
        attr(&a, 16).map_or("-".into(), |v| v[0].to_string()),
        attr(&a, 17).map_or("-".into(), |v| v[0].to_string()),
        attr_str(&a, 6),
        hex(attr(&a, 1)),
        hex(attr(&a, 2)),
        attr(&a, 23).map_or(0, |v| v.len()) >= 192,
        attr(&a, 7).map_or(0, |v| v.len()) >= 96,
    )
}

fn addr_line(p: &[u8]) -> String {
    let a = attrs(&p[8..]);
    format!(
        "family {} plen {} flags {:#x} scope {} index {} address {} local {} label {} ifa_flags {} cacheinfo {}",
        p[0],
        p[1],
        p[2],
        p[3],
        u32le(&p[4..]),
        attr(&a, 1).map_or("-".into(), |v| ip_text(&v)),
        attr(&a, 2).map_or("-".into(), |v| ip_text(&v)),
        attr_str(&a, 3),
        attr(&a, 8).map_or("-".into(), |v| format!("{:#x}", u32le(&v))),
        attr(&a, 6).map_or(0, |v| v.len()),
    )
}

fn rtnetlink() -> i32 {
    let fd = nl_sock(libc::NETLINK_ROUTE);
    // SAFETY: getpid has no arguments.
    let me = unsafe { libc::getpid() } as u32;
    check_eq(getsockname_nl(fd).nl_pid, 0, "unbound: port 0");
    nl_bind(fd, 0);
    check_eq(getsockname_nl(fd).nl_pid, me, "autobind takes the pid");
    let fd2 = nl_sock(libc::NETLINK_ROUTE);
    nl_bind(fd2, 0);
    check(
        (getsockname_nl(fd2).nl_pid as i32) < 0,
        "the second socket gets a negative id",
    );
    let a = nladdr(me, 0);
    let fd3 = nl_sock(libc::NETLINK_ROUTE);
    // SAFETY: a valid sockaddr_nl.
    expect_err(
        unsafe {
            libc::bind(
                fd3,
                (&a as *const libc::sockaddr_nl).cast(),
                size_of::<libc::sockaddr_nl>() as u32,
            )
        } as i64,
        libc::EADDRINUSE,
        "bind to a taken port id",
    );
    umt::close(fd3);
    umt::close(fd2);
    say("netlink sockets: autobind to the pid, then negative ids; EADDRINUSE");

    // Bring lo up (a new namespace's lo starts down on Linux).
    let up = msg(RTM_NEWLINK, NLM_F_ACK, 1, &ifinfomsg(1, 1, 1), &[]);
    nl_send(fd, &up);
    check_eq(ack(fd, 1), 0, "RTM_NEWLINK lo up");

    // Links.
    nl_send(
        fd,
        &msg(RTM_GETLINK, NLM_F_DUMP, 2, &ifinfomsg(0, 0, 0), &[]),
    );
    let links = dump(fd, 2, me);
    check(links.iter().all(|m| m.0 == RTM_NEWLINK), "link dump types");
    let lo: Vec<&NlMsg> = links.iter().filter(|m| u32le(&m.4[4..]) == 1).collect();
    check_eq(lo.len(), 1, "lo once in the dump");
    say(format!("link dump: {}", link_line(&lo[0].4)));
    nl_send(
        fd,
        &msg(RTM_GETLINK, 0, 3, &ifinfomsg(0, 0, 0), &[(3, b"lo\0")]),
    );
    let d = parse(&nl_recv_dgram(fd, false).expect("reply"));
    check_eq(
        (d.len(), d[0].0, d[0].1),
        (1, RTM_NEWLINK, 0),
        "getlink by name",
    );
    say(format!("link by name: {}", link_line(&d[0].4)));
    let q = msg(RTM_GETLINK, 0, 4, &ifinfomsg(9999, 0, 0), &[]);
    nl_send(fd, &q);
    let d = parse(&nl_recv_dgram(fd, false).expect("reply"));
    check_eq(errno_of(&d[0]), libc::ENODEV, "getlink of index 9999");
    check_eq(d[0].4.len(), 4 + q.len(), "the error echoes the request");
    check_eq(d[0].1 & NLM_F_CAPPED, 0, "not capped");
    ok(setopt(fd, SOL_NETLINK, 10, 1), "NETLINK_CAP_ACK");
    nl_send(fd, &q);
    let d = parse(&nl_recv_dgram(fd, false).expect("reply"));
    check_eq(
        (errno_of(&d[0]), d[0].4.len()),
        (libc::ENODEV, 20),
        "capped error",
    );
    check(d[0].1 & NLM_F_CAPPED != 0, "NLM_F_CAPPED");
    ok(setopt(fd, SOL_NETLINK, 10, 0), "NETLINK_CAP_ACK off");
    ok(setopt(fd, SOL_NETLINK, 11, 1), "NETLINK_EXT_ACK");
    ok(setopt(fd, SOL_NETLINK, 12, 1), "NETLINK_GET_STRICT_CHK");
    say("getlink: by name, ENODEV echoes the request (or its header with NETLINK_CAP_ACK)");

    // MSG_PEEK and MSG_TRUNC on a dump datagram.
    nl_send(
        fd,
        &msg(RTM_GETLINK, NLM_F_DUMP, 5, &ifinfomsg(0, 0, 0), &[]),
    );
    let mut small = [0u8; 20];
    // SAFETY: valid buffer.
    let n = unsafe {
        libc::recv(
            fd,
            small.as_mut_ptr().cast(),
            20,
            libc::MSG_PEEK | libc::MSG_TRUNC,
        )
    };
    check(n > 20, "MSG_PEEK|MSG_TRUNC gives the whole length");
    // SAFETY: valid buffer.
    let n2 = unsafe { libc::recv(fd, small.as_mut_ptr().cast(), 20, 0) };
    check_eq(n2, 20, "a short read returns what fit");
    let rest = dump_rest(fd, 5);
    check(rest >= 1, "the dump goes on after a truncated datagram");
    say("MSG_PEEK|MSG_TRUNC and a truncated datagram");

    // Addresses.
    nl_send(
        fd,
        &msg(RTM_GETADDR, NLM_F_DUMP, 6, &ifaddrmsg(0, 0, 0, 0), &[]),
    );
    let addrs = dump(fd, 6, me);
    for m in addrs.iter().filter(|m| u32le(&m.4[4..]) == 1) {
        say(format!("addr dump: {}", addr_line(&m.4)));
    }
    // A watcher of the address groups.
    let w = nl_sock(libc::NETLINK_ROUTE);
    nl_bind(w, 0x10 | 0x100);
    let ip2 = [127u8, 0, 0, 2];
    let add = msg(
        RTM_NEWADDR,
        NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
        7,
        &ifaddrmsg(2, 8, 254, 1),
        &[(2, &ip2), (1, &ip2)],
    );
    nl_send(fd, &add);
    check_eq(ack(fd, 7), 0, "add 127.0.0.2/8");
    let n = parse(&nl_recv_dgram(w, false).expect("notification"));
    check_eq(
        (n[0].0, n[0].2, n[0].3 == me || n[0].3 == 0),
        (RTM_NEWADDR, n[0].2, true),
        "notification",
    );
    say(format!("notified: new {}", addr_line(&n[0].4)));
    nl_send(fd, &add);
    check_eq(ack(fd, 7), libc::EEXIST, "add again");
    let del = msg(
        RTM_DELADDR,
        NLM_F_ACK,
        8,
        &ifaddrmsg(2, 8, 254, 1),
        &[(2, &ip2)],
    );
    nl_send(fd, &del);
    check_eq(ack(fd, 8), 0, "del 127.0.0.2/8");
    let n = parse(&nl_recv_dgram(w, false).expect("notification"));
    check_eq(n[0].0, RTM_DELADDR, "RTM_DELADDR notification");
    say(format!("notified: del {}", addr_line(&n[0].4)));
    nl_send(fd, &del);
    check_eq(ack(fd, 8), libc::EADDRNOTAVAIL, "del again");
    let ip6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let add6 = msg(
        RTM_NEWADDR,
        NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
        9,
        &ifaddrmsg(10, 64, 0, 1),
        &[(1, &ip6), (8, &0x02u32.to_ne_bytes())],
    );
    nl_send(fd, &add6);
    check_eq(ack(fd, 9), 0, "add fd00::1/64 nodad");
    // Linux announces it from its DAD work, a moment later: wait up to 2 s.
    let mut saw = false;
    for _ in 0..200 {
        while let Some(d) = nl_recv_dgram(w, true) {
            for m in parse(&d) {
                if m.0 == RTM_NEWADDR && m.4[0] == 10 {
                    saw = true;
                }
            }
        }
        if saw {
            break;
        }
        umt::sleep_ms(10);
    }
    check(saw, "RTM_NEWADDR for fd00::1");
    nl_send(
        fd,
        &msg(RTM_GETADDR, NLM_F_DUMP, 10, &ifaddrmsg(10, 0, 0, 0), &[]),
    );
    let v6: Vec<String> = dump(fd, 10, me)
        .iter()
        .map(|m| addr_line(&m.4))
        .filter(|l| l.contains("index 1 "))
        .collect();
    for l in &v6 {
        say(format!("v6 dump: {l}"));
    }
    let del6 = msg(
        RTM_DELADDR,
        NLM_F_ACK,
        11,
        &ifaddrmsg(10, 64, 0, 1),
        &[(1, &ip6)],
    );
    nl_send(fd, &del6);
    check_eq(ack(fd, 11), 0, "del fd00::1/64");
    while nl_recv_dgram(w, true).is_some() {}
    umt::close(w);
    say("addresses: add, EEXIST, del, EADDRNOTAVAIL, with notifications to the groups");

    // Routes of the local table, sorted (the kernel's order is its trie's).
    let mut rtm = vec![2u8, 0, 0, 0, 255, 0, 0, 0, 0, 0, 0, 0];
    nl_send(fd, &msg(RTM_GETROUTE, NLM_F_DUMP, 12, &rtm, &[]));
    let mut lines: Vec<String> = dump(fd, 12, me)
        .iter()
        .filter(|m| m.0 == RTM_NEWROUTE)
        .filter_map(|m| {
            let p = &m.4;
            let a = attrs(&p[12..]);
            let table = attr(&a, 15).map_or(u32::from(p[4]), |v| u32le(&v));
            if table != 255 || attr(&a, 4).map(|v| u32le(&v)) != Some(1) {
                return None;
            }
            Some(format!(
                "type {} dst {}/{} table {} proto {} scope {} prefsrc {}",
                p[7],
                attr(&a, 1).map_or("-".into(), |v| ip_text(&v)),
                p[1],
                table,
                p[5],
                p[6],
                attr(&a, 7).map_or("-".into(), |v| ip_text(&v)),
            ))
        })
        .filter(|l| l.contains("dst 127."))
        .collect();
    lines.sort();
    for l in &lines {
        say(format!("route: {l}"));
    }
    rtm[1] = 32;
    rtm[4] = 0;
    nl_send(fd, &msg(RTM_GETROUTE, 0, 13, &rtm, &[(1, &[127, 0, 0, 1])]));
    let d = parse(&nl_recv_dgram(fd, false).expect("reply"));
    let p = &d[0].4;
    let a = attrs(&p[12..]);
    say(format!(
        "route get 127.0.0.1: type {} table {} cloned {} oif {} prefsrc {}",
        p[7],
        attr_u32(&a, 15),
        u32le(&p[8..]) & 0x200 != 0,
        attr_u32(&a, 4),
        attr(&a, 7).map_or("-".into(), |v| ip_text(&v)),
    ));
    nl_send(fd, &msg(RTM_GETROUTE, 0, 14, &rtm, &[(1, &[192, 0, 2, 1])]));
    let d = parse(&nl_recv_dgram(fd, false).expect("reply"));
    check_eq(errno_of(&d[0]), libc::ENETUNREACH, "route get 192.0.2.1");
    say("routes: the local table of lo, ip route get, ENETUNREACH");

    // Memberships.
    let g = nl_sock(libc::NETLINK_ROUTE);
    nl_bind(g, 1);
    ok(setopt(g, SOL_NETLINK, 1, 11), "NETLINK_ADD_MEMBERSHIP 11");
    expect_err(setopt(g, SOL_NETLINK, 1, 0), libc::EINVAL, "join group 0");
    let mut words = [0u32; 1];
    let mut len = 4u32;
    // SAFETY: valid buffers.
    ok(
        unsafe { libc::getsockopt(g, SOL_NETLINK, 9, words.as_mut_ptr().cast(), &mut len) } as i64,
        "NETLINK_LIST_MEMBERSHIPS",
    );
    check_eq(words[0], 1 | (1 << 10), "memberships");
    check(len >= 4, "membership length");
    check_eq(
        getsockname_nl(g).nl_groups,
        1 | (1 << 10),
        "getsockname groups",
    );
    umt::close(g);
    // SAFETY: plain integers.
    expect_err(
        unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_STREAM, 0) } as i64,
        libc::ESOCKTNOSUPPORT,
        "SOCK_STREAM netlink",
    );
    // SAFETY: plain integers.
    expect_err(
        unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW, 40) } as i64,
        libc::EPROTONOSUPPORT,
        "protocol 40",
    );
    say("memberships: nl_groups, ADD_MEMBERSHIP, LIST_MEMBERSHIPS; bad type and protocol");
    fd
}

/// The rest of a dump after a truncated datagram: the messages until DONE.
fn dump_rest(fd: i32, seq: u32) -> usize {
    let mut n = 0;
    loop {
        let d = nl_recv_dgram(fd, false).expect("blocking");
        for m in parse(&d) {
            check_eq(m.2, seq, "seq");
            if m.0 == NLMSG_DONE {
                return n + 1;
            }
            n += 1;
        }
    }
}

fn no_admin() {
    // SAFETY: fork/exit in a single-threaded program.
    let pid = umt::fork();
    if pid == 0 {
        // SAFETY: plain integers; dropping to nobody loses every capability.
        if unsafe { libc::setresuid(65534, 65534, 65534) } != 0 {
            umt::fail("setresuid");
        }
        let s = nl_sock(libc::NETLINK_ROUTE);
        nl_bind(s, 0);
        let ip = [127u8, 0, 0, 9];
        nl_send(
            s,
            &msg(
                RTM_NEWADDR,
                NLM_F_ACK | NLM_F_CREATE,
                1,
                &ifaddrmsg(2, 8, 254, 1),
                &[(2, &ip)],
            ),
        );
        check_eq(ack(s, 1), libc::EPERM, "RTM_NEWADDR as nobody");
        nl_send(
            s,
            &msg(RTM_GETLINK, NLM_F_DUMP, 2, &ifinfomsg(0, 0, 0), &[]),
        );
        check(
            !dump(s, 2, getsockname_nl(s).nl_pid).is_empty(),
            "nobody may dump",
        );
        umt::exit_now(0);
    }
    check_eq(umt::waitpid(pid, 0), 0, "child status");
    say("without CAP_NET_ADMIN: changes are EPERM, dumps work");
}

fn diag() {
    let fd = nl_sock(libc::NETLINK_SOCK_DIAG);
    let l = tcp_listener();
    let port = local_port(l);
    let u = udp_bound();
    let uport = local_port(u);
    for (proto, want_port, what) in [
        (libc::IPPROTO_TCP, port, "tcp"),
        (libc::IPPROTO_UDP, uport, "udp"),
    ] {
        let mut req = vec![libc::AF_INET as u8, proto as u8, 0, 0];
        req.extend_from_slice(&u32::MAX.to_ne_bytes());
        req.extend_from_slice(&[0u8; 48]);
        nl_send(fd, &msg(20, NLM_F_DUMP, 1, &req, &[]));
        let mut found = Vec::new();
        loop {
            let d = nl_recv_dgram(fd, false).expect("blocking");
            let ms = parse(&d);
            if ms.iter().any(|m| m.0 == NLMSG_DONE) {
                break;
            }
            for m in ms {
                check_eq(m.0, 20, "SOCK_DIAG_BY_FAMILY replies");
                let p = &m.4;
                let sport = u16::from_be_bytes([p[4], p[5]]);
                if sport == want_port {
                    found.push(format!(
                        "family {} state {} src {} rqueue {} wqueue {} inode-set {}",
                        p[0],
                        p[1],
                        ip_text(&p[8..12]),
                        u32le(&p[56..]),
                        u32le(&p[60..]),
                        u32le(&p[68..]) != 0
                    ));
                }
            }
        }
        check_eq(found.len(), 1, "our socket once");
        say(format!("sock_diag {what}: {}", found[0]));
    }
    umt::close(l);
    umt::close(u);
    umt::close(fd);
    say("sock_diag: the listener and the UDP socket of this namespace");
}

fn tcp_listener() -> i32 {
    // SAFETY: plain calls on valid buffers.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        let a = sin([127, 0, 0, 1], 0);
        ok(
            libc::bind(s, (&a as *const libc::sockaddr_in).cast(), 16) as i64,
            "bind tcp",
        );
        ok(libc::listen(s, 5) as i64, "listen");
        s
    }
}

fn udp_bound() -> i32 {
    // SAFETY: plain calls on valid buffers.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        let a = sin([127, 0, 0, 1], 0);
        ok(
            libc::bind(s, (&a as *const libc::sockaddr_in).cast(), 16) as i64,
            "bind udp",
        );
        s
    }
}

fn sin(ip: [u8; 4], port: u16) -> libc::sockaddr_in {
    // SAFETY: plain data.
    let mut a: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    a.sin_family = libc::AF_INET as u16;
    a.sin_port = port.to_be();
    a.sin_addr.s_addr = u32::from_ne_bytes(ip);
    a
}

fn local_port(fd: i32) -> u16 {
    let mut a = sin([0; 4], 0);
    let mut len = 16u32;
    // SAFETY: valid buffers.
    ok(
        unsafe { libc::getsockname(fd, (&mut a as *mut libc::sockaddr_in).cast(), &mut len) }
            as i64,
        "getsockname",
    );
    u16::from_be(a.sin_port)
}

fn ifreq(name: &str) -> libc::ifreq {
    // SAFETY: plain data.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    for (i, b) in name.bytes().enumerate() {
        r.ifr_name[i] = b as libc::c_char;
    }
    r
}

fn ioctl_r(fd: i32, cmd: libc::c_ulong, r: &mut libc::ifreq) -> i64 {
    // SAFETY: r is a valid ifreq.
    unsafe { libc::ioctl(fd, cmd as _, r as *mut libc::ifreq) as i64 }
}

fn sa_ip(r: &libc::ifreq) -> String {
    // SAFETY: reading the sockaddr view of the union.
    let sa = unsafe { r.ifr_ifru.ifru_addr };
    let d = sa.sa_data;
    format!(
        "{} {}.{}.{}.{}",
        sa.sa_family, d[2] as u8, d[3] as u8, d[4] as u8, d[5] as u8
    )
}

fn ioctls() {
    // SAFETY: plain integers.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    let mut r = ifreq("lo");
    ok(ioctl_r(fd, libc::SIOCGIFINDEX, &mut r), "SIOCGIFINDEX");
    // SAFETY: the union's int view.
    let idx = unsafe { r.ifr_ifru.ifru_ifindex };
    let mut n = ifreq("");
    n.ifr_ifru.ifru_ifindex = idx;
    ok(ioctl_r(fd, libc::SIOCGIFNAME, &mut n), "SIOCGIFNAME");
    // SAFETY: a NUL-terminated name.
    let name = unsafe { std::ffi::CStr::from_ptr(n.ifr_name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let mut f = ifreq("lo");
    ok(ioctl_r(fd, libc::SIOCGIFFLAGS, &mut f), "SIOCGIFFLAGS");
    let mut m = ifreq("lo");
    ok(ioctl_r(fd, libc::SIOCGIFMTU, &mut m), "SIOCGIFMTU");
    let mut q = ifreq("lo");
    ok(ioctl_r(fd, 0x8942, &mut q), "SIOCGIFTXQLEN");
    // SAFETY: union views written by the kernel.
    unsafe {
        say(format!(
            "ioctl: index {idx} name {name} flags {:#x} mtu {} txqlen {}",
            f.ifr_ifru.ifru_flags as u16, m.ifr_ifru.ifru_mtu, q.ifr_ifru.ifru_ifindex
        ));
    }
    for (cmd, what) in [
        (libc::SIOCGIFADDR, "addr"),
        (libc::SIOCGIFNETMASK, "netmask"),
        (libc::SIOCGIFBRDADDR, "broadcast"),
    ] {
        let mut a = ifreq("lo");
        ok(ioctl_r(fd, cmd, &mut a), what);
        say(format!("ioctl {what}: {}", sa_ip(&a)));
    }
    let mut h = ifreq("lo");
    ok(ioctl_r(fd, libc::SIOCGIFHWADDR, &mut h), "SIOCGIFHWADDR");
    // SAFETY: the sockaddr view.
    let hw = unsafe { h.ifr_ifru.ifru_hwaddr };
    say(format!(
        "ioctl hwaddr: family {} {:?}",
        hw.sa_family,
        &hw.sa_data[..6]
    ));
    let mut bad = ifreq("nosuch0");
    expect_err(
        ioctl_r(fd, libc::SIOCGIFFLAGS, &mut bad),
        libc::ENODEV,
        "SIOCGIFFLAGS nosuch0",
    );
    expect_err(
        ioctl_r(fd, libc::SIOCGIFADDR, &mut bad),
        libc::ENODEV,
        "SIOCGIFADDR nosuch0",
    );
    // SIOCGIFCONF: the size with a NULL buffer, then the entries.
    // SAFETY: plain data.
    let mut ifc: libc::ifconf = unsafe { std::mem::zeroed() };
    // SAFETY: a valid ifconf with a NULL buffer.
    ok(
        unsafe { libc::ioctl(fd, libc::SIOCGIFCONF as _, &mut ifc) } as i64,
        "SIOCGIFCONF size",
    );
    let need = ifc.ifc_len;
    let mut buf = vec![ifreq(""); 8];
    ifc.ifc_len = (8 * size_of::<libc::ifreq>()) as i32;
    ifc.ifc_ifcu.ifcu_req = buf.as_mut_ptr();
    // SAFETY: the buffer holds 8 ifreqs.
    ok(
        unsafe { libc::ioctl(fd, libc::SIOCGIFCONF as _, &mut ifc) } as i64,
        "SIOCGIFCONF",
    );
    check_eq(ifc.ifc_len, need, "SIOCGIFCONF length");
    for r in buf
        .iter()
        .take(ifc.ifc_len as usize / size_of::<libc::ifreq>())
    {
        // SAFETY: a NUL-terminated name.
        let nm = unsafe { std::ffi::CStr::from_ptr(r.ifr_name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        say(format!("ifconf: {nm} {}", sa_ip(r)));
    }
    // Set the MTU and back.
    let mut s = ifreq("lo");
    s.ifr_ifru.ifru_mtu = 1500;
    ok(ioctl_r(fd, libc::SIOCSIFMTU, &mut s), "SIOCSIFMTU");
    let mut m = ifreq("lo");
    ok(ioctl_r(fd, libc::SIOCGIFMTU, &mut m), "SIOCGIFMTU");
    // SAFETY: the int view.
    check_eq(unsafe { m.ifr_ifru.ifru_mtu }, 1500, "mtu after SIOCSIFMTU");
    s.ifr_ifru.ifru_mtu = 65536;
    ok(ioctl_r(fd, libc::SIOCSIFMTU, &mut s), "SIOCSIFMTU back");
    // The same ioctls on a unix socket.
    // SAFETY: plain integers.
    let ux = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    let mut r = ifreq("lo");
    ok(
        ioctl_r(ux, libc::SIOCGIFINDEX, &mut r),
        "SIOCGIFINDEX on AF_UNIX",
    );
    umt::close(ux);
    // A route through lo: SIOCADDRT, /proc/net/route, SIOCDELRT.
    // SAFETY: plain data.
    let mut rt: libc::rtentry = unsafe { std::mem::zeroed() };
    let dst = sin([10, 99, 0, 0], 0);
    let mask = sin([255, 255, 0, 0], 0);
    // SAFETY: sockaddr_in and sockaddr have the same size.
    unsafe {
        rt.rt_dst = std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(dst);
        rt.rt_genmask = std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(mask);
    }
    rt.rt_flags = libc::RTF_UP;
    let dev = umt::cstr("lo");
    rt.rt_dev = dev.as_ptr() as *mut libc::c_char;
    // SAFETY: a valid rtentry.
    ok(
        unsafe { libc::ioctl(fd, libc::SIOCADDRT as _, &rt) } as i64,
        "SIOCADDRT",
    );
    let route = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    for l in route.lines() {
        say(format!("proc route: {}", l.trim_end()));
    }
    // SAFETY: a valid rtentry.
    ok(
        unsafe { libc::ioctl(fd, libc::SIOCDELRT as _, &rt) } as i64,
        "SIOCDELRT",
    );
    // SAFETY: a valid rtentry.
    expect_err(
        unsafe { libc::ioctl(fd, libc::SIOCDELRT as _, &rt) } as i64,
        libc::ESRCH,
        "SIOCDELRT again",
    );
    umt::close(fd);
    say("ioctls: lo's index, name, flags, mtu, addresses, ifconf, SIOCSIFMTU, SIOCADDRT/SIOCDELRT");

    // SAFETY: a valid C string.
    check_eq(
        unsafe { libc::if_nametoindex(umt::cstr("lo").as_ptr()) },
        1,
        "if_nametoindex",
    );
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills the list; freed below.
    ok(unsafe { libc::getifaddrs(&mut ifap) } as i64, "getifaddrs");
    let mut p = ifap;
    let mut rows = Vec::new();
    while !p.is_null() {
        // SAFETY: a list getifaddrs made.
        let e = unsafe { &*p };
        // SAFETY: a NUL-terminated name.
        let nm = unsafe { std::ffi::CStr::from_ptr(e.ifa_name) }
            .to_string_lossy()
            .into_owned();
        let fam = if e.ifa_addr.is_null() {
            -1
        } else {
            // SAFETY: a sockaddr from getifaddrs.
            i32::from(unsafe { (*e.ifa_addr).sa_family })
        };
        if nm == "lo" {
            rows.push(format!("{nm} family {fam} flags {:#x}", e.ifa_flags));
        }
        p = e.ifa_next;
    }
    // SAFETY: the list from getifaddrs.
    unsafe { libc::freeifaddrs(ifap) };
    rows.sort();
    for r in rows {
        say(format!("getifaddrs: {r}"));
    }
}

fn files() {
    let dev = std::fs::read_to_string("/proc/net/dev").unwrap_or_default();
    let mut it = dev.lines();
    say(format!("proc dev: {}", it.next().unwrap_or("")));
    say(format!("proc dev: {}", it.next().unwrap_or("")));
    for l in it {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.first() == Some(&"lo:") {
            say(format!("proc dev: lo with {} fields", f.len()));
        }
    }
    let v6 = std::fs::read_to_string("/proc/net/if_inet6").unwrap_or_default();
    for l in v6.lines() {
        say(format!("proc if_inet6: {l}"));
    }
    let l = tcp_listener();
    let port = local_port(l);
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let mut lines = tcp.lines();
    say(format!(
        "proc tcp header: {}",
        lines.next().unwrap_or("").trim_end()
    ));
    for l in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() > 9 && f[1] == format!("0100007F:{port:04X}") {
            say(format!(
                "proc tcp: rem {} st {} queues {} uid {} fields {}",
                f[2],
                f[3],
                f[4],
                f[7],
                f.len()
            ));
        }
    }
    umt::close(l);
    let u = udp_bound();
    let port = local_port(u);
    let udp = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
    let mut lines = udp.lines();
    say(format!(
        "proc udp header: {}",
        lines.next().unwrap_or("").trim_end()
    ));
    for l in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() > 9 && f[1] == format!("0100007F:{port:04X}") {
            say(format!(
                "proc udp: rem {} st {} fields {}",
                f[2],
                f[3],
                f.len()
            ));
        }
    }
    umt::close(u);
    // A packet socket in /proc/net/packet (found by its inode).
    // SAFETY: plain integers.
    let p = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            i32::from(0x0800u16.to_be()),
        )
    };
    ok(p as i64, "socket(AF_PACKET)");
    // SAFETY: plain data filled by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid stat buffer.
    ok(unsafe { libc::fstat(p, &mut st) } as i64, "fstat");
    let packet = std::fs::read_to_string("/proc/net/packet").unwrap_or_default();
    let mut lines = packet.lines();
    say(format!(
        "proc packet header: {}",
        lines.next().unwrap_or("")
    ));
    for l in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 9 && f[8] == st.st_ino.to_string() {
            say(format!(
                "proc packet: type {} proto {} iface {} running {} rmem {} user {}",
                f[2], f[3], f[4], f[5], f[6], f[7]
            ));
        }
    }
    umt::close(p);
    let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
    for l in snmp.lines().step_by(2) {
        say(format!(
            "proc snmp: {}",
            l.split(' ').take(4).collect::<Vec<_>>().join(" ")
        ));
    }
    for f in [
        "ifindex",
        "mtu",
        "flags",
        "operstate",
        "type",
        "address",
        "carrier",
        "tx_queue_len",
    ] {
        let v = std::fs::read_to_string(format!("/sys/class/net/lo/{f}"))
            .unwrap_or_else(|e| format!("{e}"));
        say(format!("sys lo {f}: {}", v.trim_end()));
    }
    say("files: /proc/net and /sys/class/net/lo");
}

#[repr(C)]
struct Mmsg {
    hdr: libc::msghdr,
    len: u32,
}

fn mmsgs(bufs: &mut [Vec<u8>], iovs: &mut Vec<libc::iovec>) -> Vec<Mmsg> {
    iovs.clear();
    for b in bufs.iter_mut() {
        iovs.push(libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        });
    }
    iovs.iter_mut()
        .map(|io| {
            // SAFETY: plain data.
            let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
            h.msg_iov = io;
            h.msg_iovlen = 1;
            Mmsg { hdr: h, len: 999 }
        })
        .collect()
}

fn mmsg() {
    let r = udp_bound();
    let port = local_port(r);
    // SAFETY: plain integers.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    let to = sin([127, 0, 0, 1], port);
    // SAFETY: a valid address.
    ok(
        unsafe { libc::connect(s, (&to as *const libc::sockaddr_in).cast(), 16) } as i64,
        "connect",
    );
    let mut out: Vec<Vec<u8>> = vec![b"one".to_vec(), b"two!".to_vec(), b"three".to_vec()];
    let mut iovs = Vec::new();
    let mut v = mmsgs(&mut out, &mut iovs);
    // SAFETY: v holds 3 valid mmsghdrs.
    let n = unsafe { libc::sendmmsg(s, v.as_mut_ptr().cast(), 3, 0) };
    check_eq(n, 3, "sendmmsg of 3");
    say(format!(
        "sendmmsg: 3 sent, lengths {:?}",
        v.iter().map(|m| m.len).collect::<Vec<_>>()
    ));
    let mut inb: Vec<Vec<u8>> = (0..8).map(|_| vec![0u8; 16]).collect();
    let mut iiov = Vec::new();
    let mut w = mmsgs(&mut inb, &mut iiov);
    // SAFETY: w holds 8 valid mmsghdrs.
    let n = unsafe {
        libc::recvmmsg(
            r,
            w.as_mut_ptr().cast(),
            8,
            libc::MSG_DONTWAIT as _,
            std::ptr::null_mut(),
        )
    };
    check_eq(n, 3, "recvmmsg gets 3");
    let got: Vec<String> = (0..3)
        .map(|i| String::from_utf8_lossy(&inb[i][..w[i].len as usize]).into_owned())
        .collect();
    say(format!("recvmmsg: {got:?} untouched len {}", w[3].len));
    // SAFETY: as above.
    let n = unsafe {
        libc::recvmmsg(
            r,
            w.as_mut_ptr().cast(),
            8,
            libc::MSG_DONTWAIT as _,
            std::ptr::null_mut(),
        )
    };
    expect_err(n as i64, libc::EAGAIN, "recvmmsg on an empty queue");
    // A partial send: the second message's buffer is not mapped.
    let mut v = mmsgs(&mut out, &mut iovs);
    iovs[1].iov_base = 16usize as *mut libc::c_void;
    // SAFETY: the kernel reads the bad pointer, not us.
    let n = unsafe { libc::sendmmsg(s, v.as_mut_ptr().cast(), 3, 0) };
    check_eq(n, 1, "sendmmsg stops at the bad message");
    // The first message bad: its error.
    let mut v = mmsgs(&mut out, &mut iovs);
    iovs[0].iov_base = 16usize as *mut libc::c_void;
    // SAFETY: as above.
    expect_err(
        unsafe { libc::sendmmsg(s, v.as_mut_ptr().cast(), 3, 0) } as i64,
        libc::EFAULT,
        "sendmmsg first bad",
    );
    // SAFETY: vlen 0.
    check_eq(
        unsafe { libc::sendmmsg(s, v.as_mut_ptr().cast(), 0, 0) },
        0,
        "sendmmsg of 0",
    );
    // MSG_WAITFORONE: one is there (the partial send's), then no wait.
    let mut w = mmsgs(&mut inb, &mut iiov);
    // SAFETY: as above.
    let n = unsafe {
        libc::recvmmsg(
            r,
            w.as_mut_ptr().cast(),
            8,
            libc::MSG_WAITFORONE as _,
            std::ptr::null_mut(),
        )
    };
    check_eq(n, 1, "MSG_WAITFORONE returns what is there");
    // A timeout with three queued: all three, the rest of the timeout written back.
    let mut v = mmsgs(&mut out, &mut iovs);
    // SAFETY: as above.
    check_eq(
        unsafe { libc::sendmmsg(s, v.as_mut_ptr().cast(), 3, 0) },
        3,
        "sendmmsg again",
    );
    let mut ts = libc::timespec {
        tv_sec: 5,
        tv_nsec: 0,
    };
    let mut w = mmsgs(&mut inb, &mut iiov);
    // SAFETY: as above.
    let n = unsafe { libc::recvmmsg(r, w.as_mut_ptr().cast(), 3, 0, &mut ts) };
    check_eq(n, 3, "recvmmsg with a timeout");
    check(ts.tv_sec <= 5, "the timeout left");
    // Bad descriptors.
    // SAFETY: invalid descriptors only.
    expect_err(
        unsafe { libc::sendmmsg(999, v.as_mut_ptr().cast(), 1, 0) } as i64,
        libc::EBADF,
        "sendmmsg EBADF",
    );
    let (p0, p1) = umt::pipe2(libc::O_CLOEXEC);
    // SAFETY: a pipe is no socket.
    expect_err(
        unsafe { libc::recvmmsg(p0, w.as_mut_ptr().cast(), 1, 0, std::ptr::null_mut()) } as i64,
        libc::ENOTSOCK,
        "recvmmsg ENOTSOCK",
    );
    umt::close(p0);
    umt::close(p1);
    umt::close(s);
    umt::close(r);
    say(
        "sendmmsg/recvmmsg: counts, msg_len, partial, first error, MSG_WAITFORONE, timeout, errors",
    );
}

/// Run as init with nothing mounted: mount procfs and sysfs (natively they are there).
fn mounts() {
    for (fstype, dir, probe) in [
        ("proc", "/proc", "/proc/self"),
        ("sysfs", "/sys", "/sys/class"),
    ] {
        if std::path::Path::new(probe).exists() {
            continue;
        }
        let (src, d) = (umt::cstr(fstype), umt::cstr(dir));
        // SAFETY: valid C strings; no data argument.
        ok(
            unsafe { libc::mount(src.as_ptr(), d.as_ptr(), src.as_ptr(), 0, std::ptr::null()) }
                as i64,
            "mount",
        );
    }
}

/// A new namespace's lo is down without addresses, as on Linux; bringing it up gives it
/// 127.0.0.1/8 and ::1/128 (net/ipv4/devinet.c inetdev_event, NETDEV_UP).
fn lo_up() {
    // SAFETY: plain socket call.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    ok(s as i64, "socket for SIOCSIFFLAGS");
    let mut r = ifreq("lo");
    // SAFETY: `r` is a valid ifreq.
    ok(
        unsafe { libc::ioctl(s, libc::SIOCGIFFLAGS as _, &mut r) } as i64,
        "SIOCGIFFLAGS lo",
    );
    // SAFETY: the flags member of the union, just filled in.
    let flags = unsafe { r.ifr_ifru.ifru_flags };
    check(
        flags & libc::IFF_UP as i16 == 0,
        "lo of a new namespace starts down",
    );
    r.ifr_ifru.ifru_flags = flags | libc::IFF_UP as i16;
    // SAFETY: as above.
    ok(
        unsafe { libc::ioctl(s, libc::SIOCSIFFLAGS as _, &r) } as i64,
        "SIOCSIFFLAGS lo up",
    );
    umt::close(s);
}

fn main() {
    umt::init("netlink");
    let _ = umt::workdir();
    mounts();
    // SAFETY: plain integer.
    ok(
        unsafe { libc::unshare(libc::CLONE_NEWNET) } as i64,
        "unshare(CLONE_NEWNET)",
    );
    lo_up();
    let fd = rtnetlink();
    no_admin();
    ioctls();
    files();
    diag();
    mmsg();
    umt::close(fd);
    umt::done("netlink");
}
