//! `ip=`: the kernel configures eth0 itself at boot (Linux `net/ipv4/ipconfig.c`,
//! Documentation/admin-guide/nfs/nfsroot.rst), so `init=/bin/sh` has a network.
//!
//! - `ip=dhcp` (also `on`, `any`): eth0 is brought up and a DHCP client runs on raw frames,
//!   as Linux's `ic_bootp_send_if`/`ic_bootp_recv` do: DISCOVER, OFFER, REQUEST, ACK, sent
//!   with `um_net::dev::dev_queue_xmit` and received by a protocol handler
//!   (`um_net::dev::register_rx_handler`, Linux `dev_add_pack` of `bootp_packet_type`), with
//!   retries for [`DHCP_TIMEOUT`] in all. The lease configures the device registry: the
//!   address with its prefix and broadcast, the MTU (option 26, `ic_dev_mtu`), a default route
//!   via the router. Nothing is written into the root file system: the DNS servers are logged
//!   and shown in `/proc/net/pnp` ("nameserver X", `pnp_seq_show`), where an init script
//!   finds them (`ln -s /proc/net/pnp /etc/resolv.conf` is the kernel documentation's advice).
//!   No answer: "IP-Config: Auto-configuration of network failed" and eth0 goes down again
//!   (`ic_close_devs`); the boot goes on.
//! - `ip=CLIENT:SERVER:GW:NETMASK:HOSTNAME:DEVICE:AUTOCONF:DNS0:DNS1` with AUTOCONF `off`
//!   or `none` (Linux's static form; empty fields are unset; DEVICE empty or `eth0`).
//! - `ip=off` / `ip=none` (the default): nothing.
//!
//! `/proc/net/pnp` exists from boot, as on Linux (`#MANUAL` until something configured it).

use super::Nic;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use um_kernel::kernel::Kernel;
use um_kernel::netns;
use um_kernel::task::lock;
use um_net::dev::{self, IfAddr, NetDevice, Route};
use um_uapi::abi::netdevice::{IFF_UP, RT_SCOPE_UNIVERSE, RT_TABLE_MAIN, RTN_UNICAST, RTPROT_BOOT};

/// How long the DHCP client tries before it gives up.
pub const DHCP_TIMEOUT: Duration = Duration::from_secs(6);

/// What `ip=` asked for.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum IpConfig {
    /// `ip=off` (default).
    #[default]
    Off,
    /// `ip=dhcp`.
    Dhcp,
    /// The static form.
    Static(Static),
}

/// A static `ip=` configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Static {
    pub client: Ipv4Addr,
    pub gateway: Option<Ipv4Addr>,
    pub netmask: Option<Ipv4Addr>,
    pub hostname: Option<String>,
    pub dns: Vec<Ipv4Addr>,
}

/// Parses the value of `ip=`.
pub fn parse_ip(v: &str) -> Result<IpConfig, String> {
    match v {
        "off" | "none" => return Ok(IpConfig::Off),
        "dhcp" | "on" | "any" => return Ok(IpConfig::Dhcp),
        _ => {}
    }
    let f: Vec<&str> = v.split(':').collect();
    if f.len() < 2 {
        return Err(format!(
            "ip={v}: use dhcp, off, or CLIENT:SERVER:GW:NETMASK:HOSTNAME:DEVICE:AUTOCONF[:DNS0:DNS1]"
        ));
    }
    if f.len() > 10 {
        return Err(format!("ip={v}: too many fields"));
    }
    let field = |i: usize| f.get(i).copied().unwrap_or("");
    let addr = |i: usize, what: &str| -> Result<Option<Ipv4Addr>, String> {
        let s = field(i);
        if s.is_empty() {
            return Ok(None);
        }
        s.parse()
            .map(Some)
            .map_err(|_| format!("ip={v}: bad {what} address {s:?}"))
    };
    let client = addr(0, "client")?.ok_or_else(|| {
        format!("ip={v}: the static form needs the client address (or use ip=dhcp)")
    })?;
    addr(1, "server")?;
    let gateway = addr(2, "gateway")?;
    let netmask = addr(3, "netmask")?;
    if let Some(m) = netmask
        && u32::from(m).leading_ones() + u32::from(m).trailing_zeros() != 32
    {
        return Err(format!("ip={v}: netmask {m} is not contiguous"));
    }
    let hostname = Some(field(4)).filter(|s| !s.is_empty()).map(String::from);
    if !matches!(field(5), "" | "eth0") {
        return Err(format!("ip={v}: no device {:?} (only eth0)", field(5)));
    }
    match field(6) {
        "" | "off" | "none" => {}
        a @ ("dhcp" | "on" | "any" | "bootp" | "rarp" | "both") => {
            return Err(format!(
                "ip={v}: autoconf {a:?} with a static address; use ip=dhcp"
            ));
        }
        a => return Err(format!("ip={v}: bad autoconf {a:?} (off or none)")),
    }
    let dns = [addr(7, "DNS")?, addr(8, "DNS")?]
        .into_iter()
        .flatten()
        .collect();
    if f.len() > 9 {
        addr(9, "NTP")?;
    }
    Ok(IpConfig::Static(Static {
        client,
        gateway,
        netmask,
        hostname,
        dns,
    }))
}

/// What `/proc/net/pnp` shows (Linux's `ic_proto_used`, `ic_domain`, `ic_nameservers`,
/// `ic_servaddr`).
#[derive(Default)]
struct Pnp {
    dhcp: bool,
    domain: String,
    nameservers: Vec<Ipv4Addr>,
    bootserver: Option<Ipv4Addr>,
}

static PNP: Mutex<Pnp> = Mutex::new(Pnp {
    dhcp: false,
    domain: String::new(),
    nameservers: Vec::new(),
    bootserver: None,
});

/// `/proc/net/pnp` (`pnp_seq_show`).
pub fn pnp_text() -> String {
    let p = lock(&PNP);
    let mut s = String::from(if p.dhcp {
        "#PROTO: DHCP\n"
    } else {
        "#MANUAL\n"
    });
    if !p.domain.is_empty() {
        s += &format!("domain {}\n", p.domain);
    }
    for n in &p.nameservers {
        s += &format!("nameserver {n}\n");
    }
    if let Some(b) = p.bootserver {
        s += &format!("bootserver {b}\n");
    }
    s
}

/// Adds `/proc/net/pnp` (once, at boot).
pub fn register_proc() {
    use um_fs::procfs::{ProcInode, registry};
    registry::proc_create("net", "pnp", |fs| {
        ProcInode::file(fs, |_, _| Ok(pnp_text().into_bytes()))
    });
}

/// Runs `ip=` on eth0 (the boot thread waits for it, as Linux's late initcall).
pub fn run(kernel: &Arc<Kernel>, nic: &Arc<Nic>, ip: &IpConfig) {
    let Some(d) = nic.device().cloned() else {
        return;
    };
    match ip {
        IpConfig::Off => {}
        IpConfig::Static(s) => configure_static(kernel, &d, s),
        IpConfig::Dhcp => dhcp(kernel, &d),
    }
}

fn set_up(d: &Arc<NetDevice>, up: bool) -> bool {
    let ns = netns::root();
    let flags = if up {
        d.flags() | IFF_UP
    } else {
        d.flags() & !IFF_UP
    };
    match dev::devices(ns).set_flags(ns, d.ifindex, flags) {
        Ok(()) => true,
        Err(e) => {
            log::warn!("IP-Config: cannot bring {} up: {e:?}", d.name());
            false
        }
    }
}

/// The prefix length of a contiguous netmask.
fn prefix_of(mask: Ipv4Addr) -> u8 {
    u32::from(mask).leading_ones() as u8
}

/// The classful netmask of an address (`ic_defaults` when none is given).
fn default_mask(a: Ipv4Addr) -> Ipv4Addr {
    match a.octets()[0] {
        0..=127 => Ipv4Addr::new(255, 0, 0, 0),
        128..=191 => Ipv4Addr::new(255, 255, 0, 0),
        _ => Ipv4Addr::new(255, 255, 255, 0),
    }
}

/// Puts the address, the MTU and the default route on eth0 (`ic_setup_if`, `ic_setup_routes`).
fn apply(d: &Arc<NetDevice>, addr: Ipv4Addr, mask: Ipv4Addr, gw: Option<Ipv4Addr>, mtu: u16) {
    let ns = netns::root();
    let devs = dev::devices(ns);
    let bcast = Ipv4Addr::from(u32::from(addr) | !u32::from(mask));
    let mut a = IfAddr::new(d.ifindex, IpAddr::V4(addr), prefix_of(mask), &d.name());
    a.broadcast = Some(bcast);
    if let Err(e) = devs.add_addr(ns, a) {
        log::warn!("IP-Config: cannot set the address {addr}: {e:?}");
    }
    if mtu != 0 {
        if let Err(e) = devs.set_mtu(ns, d.ifindex, u32::from(mtu)) {
            log::warn!("IP-Config: cannot set the MTU {mtu}: {e:?}");
        }
    }
    if let Some(g) = gw.filter(|g| !g.is_unspecified()) {
        let r = Route {
            dst: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            dst_len: 0,
            gateway: Some(IpAddr::V4(g)),
            oif: d.ifindex,
            table: RT_TABLE_MAIN,
            protocol: RTPROT_BOOT,
            scope: RT_SCOPE_UNIVERSE,
            kind: RTN_UNICAST,
            priority: 0,
            prefsrc: None,
            expires: None,
        };
        if let Err(e) = devs.add_route(ns, r) {
            log::warn!("IP-Config: cannot add the default route via {g}: {e:?}");
        }
    }
}

fn configure_static(kernel: &Arc<Kernel>, d: &Arc<NetDevice>, s: &Static) {
    if !set_up(d, true) {
        return;
    }
    let mask = s.netmask.unwrap_or_else(|| default_mask(s.client));
    apply(d, s.client, mask, s.gateway, 0);
    if let Some(h) = &s.hostname {
        *lock(&kernel.uts.nodename) = h.clone();
    }
    {
        let mut p = lock(&PNP);
        p.nameservers = s.dns.clone();
    }
    complete(d, s.client, mask, s.gateway, s.hostname.as_deref(), None);
}

/// The "IP-Config: Complete:" report (`ip_auto_config`).
fn complete(
    d: &NetDevice,
    addr: Ipv4Addr,
    mask: Ipv4Addr,
    gw: Option<Ipv4Addr>,
    host: Option<&str>,
    server: Option<Ipv4Addr>,
) {
    let none = Ipv4Addr::BROADCAST;
    let p = lock(&PNP);
    log::info!("IP-Config: Complete:");
    log::info!(
        "     device={}, hwaddr={}, ipaddr={addr}, mask={mask}, gw={}",
        d.name(),
        super::fmt_mac(&d.mac),
        gw.unwrap_or(none)
    );
    log::info!(
        "     host={}, domain={}, nis-domain=(none)",
        host.map_or_else(|| addr.to_string(), String::from),
        p.domain
    );
    log::info!(
        "     bootserver={}, rootserver={}, rootpath=",
        server.unwrap_or(none),
        server.unwrap_or(none)
    );
    for (i, n) in p.nameservers.iter().enumerate() {
        log::info!("     nameserver{i}={n}");
    }
}

// ---- the DHCP client ----

/// DHCP message types (RFC 2132 option 53).
const DHCPDISCOVER: u8 = 1;
const DHCPOFFER: u8 = 2;
const DHCPREQUEST: u8 = 3;
const DHCPACK: u8 = 5;
const DHCPNAK: u8 = 6;
const BOOTP_MAGIC: [u8; 4] = [99, 130, 83, 99];
const ETH_P_IP: u16 = 0x0800;
/// Ethernet + IPv4 (no options) + UDP headers.
const HDRS: usize = 14 + 20 + 8;
/// The fixed BOOTP header (RFC 951) before the options' magic cookie.
const BOOTP_FIXED: usize = 236;

/// Replies the protocol handler collected while a client runs.
static REPLIES: Mutex<VecDeque<Vec<u8>>> = Mutex::new(VecDeque::new());
static REPLY_CV: Condvar = Condvar::new();
static LISTENING: AtomicBool = AtomicBool::new(false);

/// The protocol handler: BOOTP replies to port 68 while the client listens (`ic_bootp_recv`
/// checks the rest).
fn bootp_rx(_dev: &Arc<NetDevice>, f: &[u8]) {
    if !LISTENING.load(Ordering::Relaxed) || f.len() < HDRS + BOOTP_FIXED + 4 {
        return;
    }
    if u16::from_be_bytes([f[12], f[13]]) != ETH_P_IP || f[14] >> 4 != 4 || f[23] != 17 {
        return;
    }
    let ihl = usize::from(f[14] & 0xf) * 4;
    let udp = 14 + ihl;
    if ihl < 20 || f.len() < udp + 8 || u16::from_be_bytes([f[udp + 2], f[udp + 3]]) != 68 {
        return;
    }
    let mut q = lock(&REPLIES);
    if q.len() < 16 {
        q.push_back(f[udp + 8..].to_vec());
    }
    drop(q);
    REPLY_CV.notify_all();
}

/// A parsed reply.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reply {
    kind: u8,
    yiaddr: Ipv4Addr,
    server: Option<Ipv4Addr>,
    mask: Option<Ipv4Addr>,
    router: Option<Ipv4Addr>,
    dns: Vec<Ipv4Addr>,
    domain: String,
    hostname: Option<String>,
    mtu: u16,
}

/// Parses a BOOTP reply (op 2) to transaction `xid` for hardware address `mac`.
fn parse_reply(b: &[u8], xid: u32, mac: &[u8; 6]) -> Option<Reply> {
    if b.len() < BOOTP_FIXED + 4 || b[0] != 2 || b[1] != 1 || b[2] != 6 {
        return None;
    }
    if u32::from_be_bytes(b[4..8].try_into().ok()?) != xid || b[28..34] != mac[..] {
        return None;
    }
    if b[BOOTP_FIXED..BOOTP_FIXED + 4] != BOOTP_MAGIC {
        return None;
    }
    let v4 = |s: &[u8]| Ipv4Addr::new(s[0], s[1], s[2], s[3]);
    let mut r = Reply {
        kind: 0,
        yiaddr: v4(&b[16..20]),
        server: None,
        mask: None,
        router: None,
        dns: Vec::new(),
        domain: String::new(),
        hostname: None,
        mtu: 0,
    };
    let mut i = BOOTP_FIXED + 4;
    while i < b.len() {
        let code = b[i];
        if code == 0 {
            i += 1;
            continue;
        }
        if code == 255 || i + 1 >= b.len() {
            break;
        }
        let len = usize::from(b[i + 1]);
        let Some(v) = b.get(i + 2..i + 2 + len) else {
            break;
        };
        match (code, len) {
            (53, 1) => r.kind = v[0],
            (54, 4) => r.server = Some(v4(v)),
            (1, 4) => r.mask = Some(v4(v)),
            (3, l) if l >= 4 => r.router = Some(v4(v)),
            (6, l) if l >= 4 => r.dns = v.chunks_exact(4).map(v4).take(3).collect(),
            (15, _) => r.domain = String::from_utf8_lossy(v).trim_end_matches('\0').into(),
            (12, _) => r.hostname = Some(String::from_utf8_lossy(v).trim_end_matches('\0').into()),
            (26, 2) => r.mtu = u16::from_be_bytes([v[0], v[1]]),
            _ => {}
        }
        i += 2 + len;
    }
    (r.kind != 0).then_some(r)
}

/// The Internet checksum of `b`, folded, starting from `sum`.
fn csum(mut sum: u32, b: &[u8]) -> u16 {
    for c in b.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A DHCP request of `kind` (`ic_bootp_send_if` with `ic_dhcp_init_options`), broadcast
/// from 0.0.0.0:68 to 255.255.255.255:67.
fn request_frame(kind: u8, xid: u32, mac: &[u8; 6], secs: u16, offer: Option<&Reply>) -> Vec<u8> {
    let mut bootp = vec![0u8; BOOTP_FIXED];
    bootp[0] = 1; // BOOTREQUEST
    bootp[1] = 1; // Ethernet
    bootp[2] = 6;
    bootp[4..8].copy_from_slice(&xid.to_be_bytes());
    bootp[8..10].copy_from_slice(&secs.to_be_bytes());
    bootp[28..34].copy_from_slice(mac);
    bootp.extend_from_slice(&BOOTP_MAGIC);
    bootp.extend_from_slice(&[53, 1, kind]);
    if let Some(o) = offer {
        if let Some(s) = o.server {
            bootp.extend_from_slice(&[54, 4]);
            bootp.extend_from_slice(&s.octets());
        }
        bootp.extend_from_slice(&[50, 4]);
        bootp.extend_from_slice(&o.yiaddr.octets());
    }
    // Subnet mask, router, DNS, host name, domain, root path, MTU, NIS domain, NTP.
    bootp.extend_from_slice(&[55, 9, 1, 3, 6, 12, 15, 17, 26, 40, 42]);
    // Maximum message size: a whole Ethernet MTU.
    bootp.extend_from_slice(&[57, 2, 0x05, 0xdc]);
    bootp.push(255);
    bootp.resize(bootp.len().max(300), 0);

    let udp_len = 8 + bootp.len();
    let (src, dst) = ([0u8; 4], [0xffu8; 4]);
    let mut udp = Vec::with_capacity(udp_len);
    udp.extend_from_slice(&68u16.to_be_bytes());
    udp.extend_from_slice(&67u16.to_be_bytes());
    udp.extend_from_slice(&(udp_len as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(&bootp);
    let mut pseudo = Vec::with_capacity(12);
    pseudo.extend_from_slice(&src);
    pseudo.extend_from_slice(&dst);
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&(udp_len as u16).to_be_bytes());
    let mut sum = 0u32;
    for c in pseudo.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    let c = csum(sum, &udp);
    udp[6..8].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());

    let mut ip = vec![0x45, 0x10, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0];
    ip[2..4].copy_from_slice(&((20 + udp_len) as u16).to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = csum(0, &ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());

    let mut f = Vec::with_capacity(14 + ip.len() + udp.len());
    f.extend_from_slice(&[0xff; 6]);
    f.extend_from_slice(mac);
    f.extend_from_slice(&ETH_P_IP.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&udp);
    f
}

/// Waits until `deadline` for a reply of one of `kinds` to `xid`.
fn wait_reply(xid: u32, mac: &[u8; 6], kinds: &[u8], deadline: Instant) -> Option<Reply> {
    let mut q = lock(&REPLIES);
    loop {
        while let Some(b) = q.pop_front() {
            if let Some(r) = parse_reply(&b, xid, mac)
                && kinds.contains(&r.kind)
            {
                return Some(r);
            }
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        q = REPLY_CV
            .wait_timeout(q, deadline - now)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

fn dhcp(kernel: &Arc<Kernel>, d: &Arc<NetDevice>) {
    static HANDLER: std::sync::Once = std::sync::Once::new();
    HANDLER.call_once(|| dev::register_rx_handler(bootp_rx));
    if !set_up(d, true) {
        return;
    }
    let mut seed = [0u8; 4];
    let _ = um_os_linux::host::getrandom(&mut seed);
    let xid =
        u32::from_be_bytes(seed) ^ u32::from_be_bytes([d.mac[2], d.mac[3], d.mac[4], d.mac[5]]);
    lock(&REPLIES).clear();
    LISTENING.store(true, Ordering::Relaxed);
    log::info!("Sending DHCP requests on {}", d.name());
    let start = Instant::now();
    let end = start + DHCP_TIMEOUT;
    let mut wait = Duration::from_millis(500);
    let mut ack = None;
    while Instant::now() < end && ack.is_none() {
        let secs = start.elapsed().as_secs() as u16;
        let _ = dev::dev_queue_xmit(d, &request_frame(DHCPDISCOVER, xid, &d.mac, secs, None));
        let until = (Instant::now() + wait).min(end);
        wait = (wait * 2).min(Duration::from_secs(2));
        let Some(offer) = wait_reply(xid, &d.mac, &[DHCPOFFER], until) else {
            continue;
        };
        let secs = start.elapsed().as_secs() as u16;
        let _ = dev::dev_queue_xmit(
            d,
            &request_frame(DHCPREQUEST, xid, &d.mac, secs, Some(&offer)),
        );
        let until = (Instant::now() + Duration::from_secs(2)).min(end);
        match wait_reply(xid, &d.mac, &[DHCPACK, DHCPNAK], until) {
            Some(r) if r.kind == DHCPACK => ack = Some(r),
            Some(_) => log::info!("IP-Config: DHCP server NAKed the offer; retrying"),
            None => {}
        }
    }
    LISTENING.store(false, Ordering::Relaxed);
    lock(&REPLIES).clear();
    let Some(r) = ack else {
        log::warn!(
            "IP-Config: no DHCP answer on {} in {} s",
            d.name(),
            DHCP_TIMEOUT.as_secs()
        );
        log::warn!("IP-Config: Auto-configuration of network failed");
        set_up(d, false);
        return;
    };
    let server = r.server;
    log::info!(
        "IP-Config: Got DHCP answer from {}, my address is {}",
        server.map_or_else(|| "?".into(), |s| s.to_string()),
        r.yiaddr
    );
    let mask = r.mask.unwrap_or_else(|| default_mask(r.yiaddr));
    apply(d, r.yiaddr, mask, r.router, r.mtu);
    if let Some(h) = r.hostname.as_ref().filter(|h| !h.is_empty()) {
        *lock(&kernel.uts.nodename) = h.clone();
    }
    {
        let mut p = lock(&PNP);
        p.dhcp = true;
        p.domain = r.domain.clone();
        p.nameservers = r.dns.clone();
        p.bootserver = server;
    }
    complete(d, r.yiaddr, mask, r.router, r.hostname.as_deref(), server);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_values() {
        assert_eq!(parse_ip("dhcp"), Ok(IpConfig::Dhcp));
        assert_eq!(parse_ip("off"), Ok(IpConfig::Off));
        let s = parse_ip("10.0.2.15::10.0.2.2:255.255.255.0::eth0:off").unwrap();
        assert_eq!(
            s,
            IpConfig::Static(Static {
                client: Ipv4Addr::new(10, 0, 2, 15),
                gateway: Some(Ipv4Addr::new(10, 0, 2, 2)),
                netmask: Some(Ipv4Addr::new(255, 255, 255, 0)),
                hostname: None,
                dns: vec![],
            })
        );
        match parse_ip("10.0.2.15::::box::none:10.0.2.3").unwrap() {
            IpConfig::Static(s) => {
                assert_eq!(s.hostname.as_deref(), Some("box"));
                assert_eq!(s.dns, vec![Ipv4Addr::new(10, 0, 2, 3)]);
            }
            o => panic!("{o:?}"),
        }
        assert!(parse_ip("maybe").is_err());
        assert!(parse_ip("10.0.2.x::::::off").is_err());
        assert!(parse_ip(":::::eth0:off").is_err());
        assert!(parse_ip("10.0.2.15:::255.0.255.0:::off").is_err());
        assert!(parse_ip("10.0.2.15:::::eth1:off").is_err());
        assert!(parse_ip("10.0.2.15::::::dhcp").is_err());
        assert!(parse_ip("10.0.2.15::::::sometimes").is_err());
    }

    #[test]
    fn request_and_reply() {
        let mac = [0x52, 0x54, 0, 0x12, 0x34, 0x56];
        let f = request_frame(DHCPDISCOVER, 0x1234_5678, &mac, 0, None);
        assert_eq!(&f[0..6], &[0xff; 6]);
        assert_eq!(csum(0, &f[14..34]), 0, "IPv4 header checksum");
        let udp_len = f.len() - 34;
        let mut sum = 0u32;
        for w in [0u16, 0, 0xffff, 0xffff, 17, udp_len as u16] {
            sum += u32::from(w);
        }
        assert_eq!(csum(sum, &f[34..]), 0, "UDP checksum");
        // A reply as passt builds it.
        let mut r = f[HDRS..].to_vec();
        r[0] = 2;
        r[16..20].copy_from_slice(&[10, 0, 2, 15]);
        r.truncate(BOOTP_FIXED + 4);
        r.extend_from_slice(&[53, 1, DHCPOFFER, 54, 4, 10, 0, 2, 2, 1, 4, 255, 255, 255, 0]);
        r.extend_from_slice(&[
            3, 4, 10, 0, 2, 2, 6, 8, 10, 0, 2, 3, 10, 0, 2, 4, 26, 2, 0xff,
        ]);
        r.extend_from_slice(&[0xf0, 0, 255]);
        let p = parse_reply(&r, 0x1234_5678, &mac).unwrap();
        assert_eq!(p.kind, DHCPOFFER);
        assert_eq!(p.yiaddr, Ipv4Addr::new(10, 0, 2, 15));
        assert_eq!(p.router, Some(Ipv4Addr::new(10, 0, 2, 2)));
        assert_eq!(p.dns.len(), 2);
        assert_eq!(p.mtu, 65520);
        assert!(parse_reply(&r, 1, &mac).is_none(), "another transaction");
        let mut bad = r.clone();
        bad[BOOTP_FIXED + 8] = 200; // option 54 running past the end
        assert!(parse_reply(&bad, 0x1234_5678, &mac).is_some_and(|p| p.server.is_none()));
        assert_eq!(prefix_of(Ipv4Addr::new(255, 255, 255, 0)), 24);
        let req = request_frame(DHCPREQUEST, 9, &mac, 1, Some(&p));
        assert!(req.windows(6).any(|w| w == [50, 4, 10, 0, 2, 15]));
    }

    #[test]
    fn pnp() {
        let t = pnp_text();
        assert!(t.starts_with('#'));
    }
}
