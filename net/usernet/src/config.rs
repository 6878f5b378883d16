//! `eth0=user,...` options: [`Config`] and its parser.
//!
//! Keys (each `key=value`, comma-separated, the order free; `dns=` and `hostfwd=` repeat):
//! - `restrict=loopback|off`: host sockets may reach only 127.0.0.0/8 and ::1 (after the
//!   10.0.2.2 mapping); every other destination is refused without a host socket call.
//! - `hostloop=on|off` (default off): 10.0.2.2 / fd00::2 reach the host's 127.0.0.1 / ::1.
//! - `dns=IP[:PORT]` / `dns=[IPV6]:PORT`: the DNS upstream(s) behind 10.0.2.3:53 (default:
//!   the `nameserver` lines of the host's /etc/resolv.conf, port 53).
//! - `hostfwd=tcp|udp:[HOSTADDR]:HOSTPORT-[GUESTADDR]:GUESTPORT` (QEMU's syntax, `docs/system/
//!   devices/net.rst`): an empty host address is 127.0.0.1, an empty guest address 10.0.2.15.
//! - `mtu=N` (576..=65520, default 1500).
//! - `ipv6=on|off` (default: on when the host can bind ::1).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

use crate::GUEST_ADDR;

/// The transport of a host forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
}

/// One `hostfwd=`: the backend listens on `host` and opens the guest side to
/// `guest_addr:guest_port` from the gateway.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostFwd {
    pub proto: Proto,
    pub host: SocketAddr,
    pub guest_addr: Ipv4Addr,
    pub guest_port: u16,
}

/// The backend's configuration (see the module docs for the option syntax).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub restrict_loopback: bool,
    pub hostloop: bool,
    /// DNS upstreams; empty means the host's /etc/resolv.conf nameservers (read at start).
    pub dns: Vec<SocketAddr>,
    pub mtu: u16,
    pub hostfwd: Vec<HostFwd>,
    pub ipv6: bool,
}

pub const MTU_MIN: u16 = 576;
pub const MTU_MAX: u16 = 65520;

impl Default for Config {
    fn default() -> Self {
        Config {
            restrict_loopback: false,
            hostloop: false,
            dns: Vec::new(),
            mtu: 1500,
            hostfwd: Vec::new(),
            ipv6: host_has_ipv6(),
        }
    }
}

/// Whether the host can bind ::1 (no IPv6 at all, or `disable_ipv6`, makes this fail).
pub fn host_has_ipv6() -> bool {
    UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)).is_ok()
}

fn on_off(key: &str, v: &str) -> Result<bool, String> {
    match v {
        "on" | "yes" | "true" | "1" => Ok(true),
        "off" | "no" | "false" | "0" => Ok(false),
        _ => Err(format!("eth0=user: {key}={v}: expected on or off")),
    }
}

/// `IP`, `IP:PORT`, `[IPV6]`, `[IPV6]:PORT` (a bare IPv6 address is taken whole).
fn parse_dns(v: &str) -> Option<SocketAddr> {
    if let Ok(a) = v.parse::<SocketAddr>() {
        return Some(a);
    }
    if let Ok(ip) = v.parse::<IpAddr>() {
        return Some(SocketAddr::new(ip, 53));
    }
    let inner = v.strip_prefix('[')?.strip_suffix(']')?;
    Some(SocketAddr::new(IpAddr::V6(inner.parse().ok()?), 53))
}

/// `ADDR:PORT` with ADDR possibly empty or `[v6]`; returns (addr, port).
fn split_addr_port(s: &str) -> Option<(&str, u16)> {
    let (a, p) = s.rsplit_once(':')?;
    let a = a
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(a);
    Some((a, p.parse().ok().filter(|&p| p != 0)?))
}

fn parse_hostfwd(v: &str) -> Option<HostFwd> {
    let (proto, rest) = v.split_once(':')?;
    let proto = match proto {
        "tcp" | "" => Proto::Tcp,
        "udp" => Proto::Udp,
        _ => return None,
    };
    let (host, guest) = rest.split_once('-')?;
    let (ha, hp) = split_addr_port(host)?;
    let (ga, gp) = split_addr_port(guest)?;
    let hip = if ha.is_empty() {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        ha.parse().ok()?
    };
    let gip = if ga.is_empty() {
        GUEST_ADDR
    } else {
        ga.parse().ok()?
    };
    Some(HostFwd {
        proto,
        host: SocketAddr::new(hip, hp),
        guest_addr: gip,
        guest_port: gp,
    })
}

impl Config {
    /// Parses the option list after `eth0=user,`: e.g. "restrict=loopback,hostloop=on,
    /// dns=127.0.0.1:5353,hostfwd=tcp:127.0.0.1:8080-:80,hostfwd=udp::5353-:53,mtu=65520".
    /// Err is one line naming the bad key/value (the caller prints `linux: error: ...` and
    /// exits 2).
    pub fn parse(opts: &str) -> Result<Config, String> {
        let mut c = Config::default();
        for item in opts.split(',').filter(|s| !s.is_empty()) {
            let Some((key, v)) = item.split_once('=') else {
                return Err(format!(
                    "eth0=user: option '{item}' needs a value (key=value)"
                ));
            };
            match key {
                "restrict" => {
                    c.restrict_loopback = match v {
                        "loopback" | "on" | "yes" => true,
                        "off" | "no" => false,
                        _ => return Err(format!("eth0=user: restrict={v}: expected loopback or off")),
                    }
                }
                "hostloop" => c.hostloop = on_off(key, v)?,
                "ipv6" => c.ipv6 = on_off(key, v)?,
                "dns" => c.dns.push(
                    parse_dns(v).ok_or_else(|| format!("eth0=user: dns={v}: expected IP[:PORT]"))?,
                ),
                "mtu" => {
                    c.mtu = v.parse().ok().filter(|m| (MTU_MIN..=MTU_MAX).contains(m)).ok_or_else(
                        || format!("eth0=user: mtu={v}: expected {MTU_MIN}..={MTU_MAX}"),
                    )?
                }
                "hostfwd" => c.hostfwd.push(parse_hostfwd(v).ok_or_else(|| {
                    format!(
                        "eth0=user: hostfwd={v}: expected tcp|udp:[HOSTADDR]:HOSTPORT-[GUESTADDR]:GUESTPORT"
                    )
                })?),
                _ => return Err(format!("eth0=user: unknown option '{key}'")),
            }
        }
        Ok(c)
    }
}

/// The `nameserver` addresses of a resolv.conf text (resolv.conf(5)), port 53.
pub fn resolv_conf_nameservers(text: &str) -> Vec<SocketAddr> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next()? == "nameserver").then_some(())?;
            // A scoped v6 address (fe80::1%eth0) is not reachable from here; skip it.
            let ip: IpAddr = w.next()?.parse().ok()?;
            Some(SocketAddr::new(ip, 53))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_example() {
        let c = Config::parse(
            "restrict=loopback,hostloop=on,dns=127.0.0.1:5353,hostfwd=tcp:127.0.0.1:8080-:80,hostfwd=udp::5353-:53,mtu=65520",
        )
        .unwrap();
        assert!(c.restrict_loopback && c.hostloop);
        assert_eq!(c.dns, vec!["127.0.0.1:5353".parse().unwrap()]);
        assert_eq!(c.mtu, 65520);
        assert_eq!(
            c.hostfwd,
            vec![
                HostFwd {
                    proto: Proto::Tcp,
                    host: "127.0.0.1:8080".parse().unwrap(),
                    guest_addr: GUEST_ADDR,
                    guest_port: 80
                },
                HostFwd {
                    proto: Proto::Udp,
                    host: "127.0.0.1:5353".parse().unwrap(),
                    guest_addr: GUEST_ADDR,
                    guest_port: 53
                },
            ]
        );
        let d = Config::parse("").unwrap();
        assert!(!d.restrict_loopback && !d.hostloop && d.dns.is_empty() && d.mtu == 1500);
        let c = Config::parse(
            "dns=::1,dns=[::1]:5300,dns=10.0.0.1,hostfwd=tcp:[::1]:80-10.0.2.16:8080,ipv6=off",
        )
        .unwrap();
        assert_eq!(
            c.dns,
            vec![
                "[::1]:53".parse().unwrap(),
                "[::1]:5300".parse().unwrap(),
                "10.0.0.1:53".parse().unwrap()
            ]
        );
        assert_eq!(c.hostfwd[0].host, "[::1]:80".parse().unwrap());
        assert_eq!(c.hostfwd[0].guest_addr, Ipv4Addr::new(10, 0, 2, 16));
        assert!(!c.ipv6);
    }

    #[test]
    fn errors_name_the_bad_option() {
        for (opts, needle) in [
            ("foo=1", "unknown option 'foo'"),
            ("restrict", "'restrict' needs a value"),
            ("restrict=all", "restrict=all"),
            ("hostloop=maybe", "hostloop=maybe"),
            ("mtu=575", "mtu=575"),
            ("mtu=65521", "mtu=65521"),
            ("mtu=x", "mtu=x"),
            ("dns=nohost", "dns=nohost"),
            ("hostfwd=tcp:8080-:80", "hostfwd=tcp:8080-:80"),
            ("hostfwd=sctp::1-:2", "hostfwd=sctp::1-:2"),
            ("hostfwd=tcp::0-:80", "hostfwd=tcp::0-:80"),
            ("hostfwd=tcp::80-bad:80", "hostfwd=tcp::80-bad:80"),
        ] {
            let e = Config::parse(opts).unwrap_err();
            assert!(e.contains(needle), "{opts}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn resolv_conf() {
        let t = "# c\nsearch x\nnameserver 127.0.0.53\nnameserver ::1\nnameserver fe80::1%eth0\noptions edns0\n";
        assert_eq!(
            resolv_conf_nameservers(t),
            vec![
                "127.0.0.53:53".parse().unwrap(),
                "[::1]:53".parse().unwrap()
            ]
        );
    }
}
