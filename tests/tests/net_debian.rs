//! Gate: Debian 12's own networking tools on eth0 (issue 18), every engine of
//! [`um_tests::ENGINES`], each boot with `eth0=user,restrict=loopback` (the network rule: the
//! guest reaches nothing but the user-mode network and, with `hostloop=on`, the host's
//! 127.0.0.1 as 10.0.2.2).
//!
//! The Debian tree is shared and never written: every boot puts tmpfs copies of /etc and /var
//! over the real ones and tmpfs on /run, /tmp and /opt (where the test package installs).
//! - `dhclient_ip_ss`: with `ip=off` (eth0 starts unconfigured) isc-dhcp-client's `dhclient`
//!   leases 10.0.2.15 and its dhclient-script configures eth0 through iproute2 and writes
//!   resolv.conf; `ip addr`, `ip route`, `ip link set down/up` and `ss -tan`/`-uan` (sock_diag)
//!   show the result and a TCP listener and UDP socket the script opened.
//! - `ping_root_and_user`: iputils `ping` as root (raw socket) and as nobody (an ICMP datagram
//!   socket). Linux's default `net.ipv4.ping_group_range` is `1 0` (nobody; `inet_init_net`
//!   in net/ipv4/af_inet.c), ours too, so the unprivileged ping first fails as on Linux. Debian
//!   12 makes it work in two ways: iputils-ping's postinst gives /bin/ping `cap_net_raw+ep`
//!   (setuid when setcap is missing), and systemd's /usr/lib/sysctl.d/50-default.conf sets
//!   `net.ipv4.ping_group_range = 0 2147483647` at boot (systemd-sysctl). The tree here is made
//!   without running that postinst as root and without systemd, so the gate does what
//!   systemd-sysctl does and the user's ping then goes through a datagram socket.
//! - `curl_and_apt_flat_repo`: a host `python3 -m http.server` on 127.0.0.1 serves a 16 MiB
//!   random file, which `curl` fetches with the host's sha256, and a flat apt repository (a
//!   Packages file written here, one .deb built here from tar archives) from which
//!   `apt-get update && apt-get install` installs a package.
//!
//! The kernel log is scanned as in every gate.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use um_tests::hostsvc::{free_port, http_server, http_server_on, random_file, scratch, sha256_hex};
use um_tests::{Boot, for_each_engine};

fn debian_tree() -> PathBuf {
    um_tests::debian_rootfs(&[
        "usr/sbin/dhclient",
        "usr/bin/ip",
        "usr/bin/ss",
        "usr/bin/ping",
        "usr/bin/curl",
        "usr/bin/apt-get",
        "usr/bin/python3",
        "usr/bin/setpriv",
    ])
}

/// The start of every script: /etc and /var as tmpfs copies, scratch tmpfs elsewhere.
const PRELUDE: &str = "export PATH=/usr/sbin:/usr/bin:/sbin:/bin\n\
     mount -t proc proc /proc\n\
     mount -t sysfs sysfs /sys\n\
     mount -t tmpfs tmpfs /run\n\
     mount -t tmpfs tmpfs /tmp\n\
     mount -t tmpfs tmpfs /opt\n\
     mkdir -p /dev/pts /run/lock && mount -t devpts devpts /dev/pts\n\
     cp -a /etc /run/etc && mount --bind /run/etc /etc\n\
     cp -a /var /run/var && mount --bind /run/var /var\n";

/// Static configuration of eth0 (for the gates that do not test DHCP).
const STATIC_NET: &str = "ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && \
     ip route add default via 10.0.2.2 && echo net-up\n";

/// A boot of the Debian tree running `script` after [`PRELUDE`], with the kernel options `opts`.
fn boot(engine: &[&str], opts: &[&str], script: &str, secs: u64) -> um_tests::Outcome {
    let mut b = Boot::new()
        .engine(engine)
        .mem("512M")
        .rootflags(&debian_tree().display().to_string());
    for o in opts {
        b = b.extra(o);
    }
    b.timeout(Duration::from_secs(secs))
        .init("/bin/bash")
        .args(&["-c", &format!("{PRELUDE}{script}")])
        .run()
}

#[test]
fn dhclient_ip_ss() {
    // The listeners: a TCP socket on 8123 and a UDP socket on 5353, ready once
    // /tmp/ready exists.
    let script = "echo PRE:$(ip -4 addr show eth0 | grep -c inet)\n\
         timeout 60 dhclient -v -1 eth0 > /tmp/dh.log 2>&1 && echo DHCLIENT-OK\n\
         grep -o 'bound to [0-9.]*' /tmp/dh.log | sed 's/^/LEASE:/'\n\
         ip -4 addr show eth0 | grep -o 'inet [0-9./]*' | sed 's/^/ADDR:/'\n\
         ip route | grep '^default' | sed 's/^/ROUTE:/'\n\
         sed 's/^/RESOLV:/' /etc/resolv.conf\n\
         ip link set eth0 down\n\
         ip link show eth0 | grep -o 'state [A-Z]*' | sed 's/^/DOWN:/'\n\
         ip link set eth0 up\n\
         ip link show eth0 | grep -o 'state [A-Z]*' | sed 's/^/UP:/'\n\
         python3 -c 'import socket, time, os\n\
t = socket.socket(); t.bind((\"0.0.0.0\", 8123)); t.listen(5)\n\
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((\"0.0.0.0\", 5353))\n\
open(\"/tmp/ready\", \"w\").close(); time.sleep(60)' &\n\
         for i in $(seq 100); do [ -e /tmp/ready ] && break; sleep 0.2; done\n\
         ss -tan | awk '$4 == \"0.0.0.0:8123\" { print \"SS-TCP:\" $1 \" \" $4 }'\n\
         ss -uan | awk '$4 == \"0.0.0.0:5353\" { print \"SS-UDP:\" $1 \" \" $4 }'\n\
         kill %1\n\
         echo UM-DHCLIENT-OK\n";
    for_each_engine(|engine| {
        let out = boot(
            engine,
            &["eth0=user,restrict=loopback", "ip=off"],
            script,
            180,
        );
        out.assert_ok("UM-DHCLIENT-OK");
        for want in [
            "PRE:0",
            "DHCLIENT-OK",
            "LEASE:bound to 10.0.2.15",
            "ADDR:inet 10.0.2.15/24",
            "ROUTE:default via 10.0.2.2 dev eth0 ",
            "RESOLV:nameserver 10.0.2.3",
            "DOWN:state DOWN",
            "UP:state UP",
            "SS-TCP:LISTEN 0.0.0.0:8123",
            "SS-UDP:UNCONN 0.0.0.0:5353",
        ] {
            expect_line(&out, want);
        }
    });
}

#[test]
fn ping_root_and_user() {
    let user = "setpriv --reuid=65534 --regid=65534 --clear-groups";
    let script = format!(
        "{STATIC_NET}\
         ping -c3 -i 0.3 -W 5 10.0.2.2 | grep -o '[0-9]* packets transmitted, [0-9]* received' \
           | sed 's/^/ROOT:/'\n\
         echo RANGE:$(cat /proc/sys/net/ipv4/ping_group_range)\n\
         {user} ping -c1 -W 5 10.0.2.2 > /tmp/p 2>&1; echo USER-DEFAULT:$?\n\
         grep -o 'socket: Operation not permitted' /tmp/p | sed 's/^/USER-DEFAULT:/'\n\
         echo '0 2147483647' > /proc/sys/net/ipv4/ping_group_range\n\
         {user} ping -c3 -i 0.3 -W 5 10.0.2.2 | grep -o '[0-9]* packets transmitted, [0-9]* received' \
           | sed 's/^/USER:/'\n\
         echo UM-PING-OK\n"
    );
    for_each_engine(|engine| {
        let out = boot(engine, &["eth0=user,restrict=loopback"], &script, 120);
        out.assert_ok("UM-PING-OK");
        for want in [
            "net-up",
            "ROOT:3 packets transmitted, 3 received",
            "RANGE:1 0",
            "USER-DEFAULT:2",
            "USER-DEFAULT:socket: Operation not permitted",
            "USER:3 packets transmitted, 3 received",
        ] {
            expect_line(&out, want);
        }
    });
}

#[test]
fn curl_and_apt_flat_repo() {
    let www = scratch("netdeb", "repo");
    let big = www.join("file");
    let want = random_file(&big, 16);
    let payload = format!("um-hello payload {}\n", std::process::id());
    let deb = www.join("um-hello_1.0_all.deb");
    build_deb(&www, &deb, &payload);
    let control = "Package: um-hello\nVersion: 1.0\nArchitecture: all\n\
                   Maintainer: um tests <um@example.invalid>\n";
    std::fs::write(
        www.join("Packages"),
        format!(
            "{control}Filename: ./um-hello_1.0_all.deb\nSize: {}\nSHA256: {}\n\
             Description: a file for the um apt gate\n\n",
            std::fs::metadata(&deb).unwrap().len(),
            sha256_hex(&deb)
        ),
    )
    .unwrap();
    let port = free_port();
    let _server = http_server(&www, port);
    // apt-get install reads no console: with the console as stdin, apt-get under timeout(1)
    // is a background group of the console (which this kernel grants init's session at boot)
    // whose parent is init, so an orphaned one, and its read of stdin is EIO as in Linux's
    // `__tty_check_change`; apt's DoStdin then writes that -1 as a length (EFAULT).
    let script = format!(
        "{STATIC_NET}\
         curl -s -S -m 60 -o /tmp/f http://10.0.2.2:{port}/file && echo CURL-OK\n\
         sha256sum /tmp/f | sed 's/ .*//; s/^/SHA:/'\n\
         rm -f /tmp/f\n\
         mv /etc/apt/sources.list /etc/apt/sources.list.off\n\
         rm -f /etc/apt/sources.list.d/*\n\
         echo 'deb [trusted=yes] http://10.0.2.2:{port} ./' > /etc/apt/sources.list.d/t.list\n\
         export DEBIAN_FRONTEND=noninteractive\n\
         timeout 90 apt-get update > /tmp/apt.log 2>&1 && echo APT-UPDATE-OK\n\
         timeout 90 apt-get install -y um-hello < /dev/null >> /tmp/apt.log 2>&1 \
           && echo APT-INSTALL-OK\n\
         sed 's/^/APT:/' /tmp/apt.log\n\
         sed 's/^/FILE:/' /opt/um-hello/hello.txt\n\
         dpkg-query -W -f='STATUS:${{Status}} ${{Version}}\\n' um-hello\n\
         echo UM-APT-OK\n"
    );
    for_each_engine(|engine| {
        let net = "eth0=user,restrict=loopback,hostloop=on";
        let out = boot(engine, &[net], &script, 300);
        out.assert_ok("UM-APT-OK");
        for want in [
            "net-up".to_string(),
            "CURL-OK".to_string(),
            format!("SHA:{want}"),
            "APT-UPDATE-OK".to_string(),
            "APT-INSTALL-OK".to_string(),
            format!("FILE:{}", payload.trim_end()),
            "STATUS:install ok installed 1.0".to_string(),
        ] {
            expect_line(&out, &want);
        }
        assert!(
            !out.stdout.contains("APT:E:"),
            "apt reported an error\n{}",
            out.report()
        );
    });
    let _ = std::fs::remove_dir_all(&www);
}

fn expect_line(out: &um_tests::Outcome, want: &str) {
    let text = out.stdout.replace('\r', "");
    if !text.lines().any(|l| l.trim_end() == want.trim_end()) {
        panic!("missing line {want:?}\n{}", out.report());
    }
}

/// A binary package (deb(5): an ar archive of `debian-binary`, `control.tar.gz` and
/// `data.tar.gz`) installing /opt/um-hello/hello.txt with `payload`; made with the host's
/// `tar` so the gate needs no dpkg on the host.
fn build_deb(work: &Path, deb: &Path, payload: &str) {
    let ctl = work.join("ctl");
    let data = work.join("data/opt/um-hello");
    std::fs::create_dir_all(&ctl).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(
        ctl.join("control"),
        "Package: um-hello\nVersion: 1.0\nArchitecture: all\n\
         Maintainer: um tests <um@example.invalid>\nDescription: a file for the um apt gate\n",
    )
    .unwrap();
    std::fs::write(data.join("hello.txt"), payload).unwrap();
    let tar = |dir: &Path, out: &Path| {
        let st = Command::new("tar")
            .args(["--owner=0", "--group=0", "--numeric-owner", "-czf"])
            .arg(out)
            .arg("-C")
            .arg(dir)
            .arg(".")
            .status()
            .expect("tar");
        assert!(st.success(), "tar {}", dir.display());
        std::fs::read(out).unwrap()
    };
    let members: [(&str, Vec<u8>); 3] = [
        ("debian-binary", b"2.0\n".to_vec()),
        ("control.tar.gz", tar(&ctl, &work.join("control.tar.gz"))),
        (
            "data.tar.gz",
            tar(&work.join("data"), &work.join("data.tar.gz")),
        ),
    ];
    let mut ar = b"!<arch>\n".to_vec();
    for (name, body) in &members {
        // ar(5) member header: name/16 mtime/12 uid/6 gid/6 mode/8 size/10 "`\n".
        let hdr = format!(
            "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            0,
            0,
            0,
            "100644",
            body.len()
        );
        assert_eq!(hdr.len(), 60);
        ar.extend_from_slice(hdr.as_bytes());
        ar.extend_from_slice(body);
        if body.len() % 2 == 1 {
            ar.push(b'\n');
        }
    }
    std::fs::write(deb, ar).unwrap();
    for f in ["ctl", "data", "control.tar.gz", "data.tar.gz"] {
        let p = work.join(f);
        let _ = std::fs::remove_dir_all(&p);
        let _ = std::fs::remove_file(&p);
    }
}

/// A host UDP echo server on `addr` (127.0.0.1 or ::1): every datagram goes back as it came.
fn udp_echo(addr: &str) -> u16 {
    let s = std::net::UdpSocket::bind((addr, 0)).expect("bind the echo server");
    let port = s.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 70_000];
        while let Ok((n, from)) = s.recv_from(&mut buf) {
            let _ = s.send_to(&buf[..n], from);
        }
    });
    port
}

/// The guest side of the fragment check: a 60 KiB datagram of random bytes to the echo
/// server, through 10.0.2.2 and fd00::2 (hostloop), back equal.
const UDP_BIG: &str = r#"
import socket, os, sys
for fam, dst, port in [(socket.AF_INET, '10.0.2.2', int(sys.argv[1])), (socket.AF_INET6, 'fd00::2', int(sys.argv[2]))]:
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.settimeout(10)
    data = os.urandom(61440)
    s.sendto(data, (dst, port))
    r, _ = s.recvfrom(70000)
    print('BIG', dst, len(r), 'equal' if r == data else 'DIFFERENT')
"#;

/// IPv6 autoconfiguration and IP fragments (issue 18): after `ip link set eth0 up` the
/// router advertisement of usernet gives eth0 fd00::5054:ff:fe12:3456/64 (EUI-64 of the MAC)
/// with lifetimes and a default route via fe80::2 (`ip -6 addr`/`ip -6 route` over netlink);
/// `ping -6` reaches the gateway; a 60 KiB UDP datagram goes to a host echo server on
/// 127.0.0.1 and on ::1 and comes back equal (fragmented by the guest stack, reassembled by
/// usernet, fragmented by usernet, reassembled by the guest stack, both families); `curl -6`
/// of a file from a host `http.server` bound on [::1] (as fd00::2 with `hostloop=on`) has the
/// host's sha256.
#[test]
fn ipv6_slaac_and_fragments() {
    let p4 = udp_echo("127.0.0.1");
    let p6 = udp_echo("::1");
    let dir = scratch("netv6", "udpbig");
    std::fs::write(dir.join("big.py"), UDP_BIG).unwrap();
    let sum = random_file(&dir.join("f"), 1);
    let port = free_port();
    let _http = http_server_on(&dir, "::1", port);
    for_each_engine(|engine| {
        let script = format!(
            "ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && \
             ip route add default via 10.0.2.2\n\
             for i in 1 2 3 4 5 6 7 8 9 10; do ip -6 addr show dev eth0 | grep -q 'scope global' && break; sleep 0.5; done\n\
             ip -6 addr show dev eth0\n\
             ip -6 route\n\
             cat /proc/sys/net/ipv6/conf/default/accept_ra\n\
             ping -6 -c3 -i 0.2 fd00::2 && echo PING6-OK\n\
             python3 /mnt/big.py {p4} {p6}\n\
             curl -6 -sS -o /tmp/f http://[fd00::2]:{port}/f && echo SUM:$(sha256sum < /tmp/f)\n\
             echo UM-V6-DONE\n"
        );
        let net = "eth0=user,restrict=loopback,hostloop=on";
        let out = boot(
            engine,
            &[net, &format!("bind={}:/mnt", dir.display())],
            &script,
            120,
        );
        out.assert_ok("UM-V6-DONE");
        let text = out.stdout.replace('\r', "");
        for want in [
            "inet6 fd00::5054:ff:fe12:3456/64 scope global dynamic",
            "inet6 fe80::5054:ff:fe12:3456/64 scope link",
            "default via fe80::2 dev eth0 proto ra metric 1024 expires",
            "fd00::/64 dev eth0 proto kernel metric 256 expires",
            "PING6-OK",
            "BIG 10.0.2.2 61440 equal",
            "BIG fd00::2 61440 equal",
        ] {
            assert!(text.contains(want), "{engine:?}: no {want:?} in\n{text}");
        }
        assert!(
            text.contains("valid_lft 86"),
            "{engine:?}: lifetimes\n{text}"
        );
        assert!(
            text.contains(&format!("SUM:{sum}")),
            "{engine:?}: curl -6 of the host's [::1] http.server\n{text}"
        );
    });
}

/// A host without IPv6 (`ipv6=off`): no router advertisement, so no global address and no
/// default route; a connect to fd00::2 fails at once with ENETUNREACH.
#[test]
fn ipv6_off_is_enetunreach() {
    let script = "ip link set eth0 up\nsleep 1\n\
         python3 -c \"import socket,time,errno\n\
s=socket.socket(socket.AF_INET6)\nt=time.time()\n\
try:\n s.connect(('fd00::2',80))\nexcept OSError as e:\n print('CONNECT', errno.errorcode[e.errno], round(time.time()-t))\"\n\
         ip -6 route\necho UM-V6OFF-DONE\n";
    for_each_engine(|engine| {
        let out = boot(
            engine,
            &["eth0=user,restrict=loopback,ipv6=off"],
            script,
            60,
        );
        out.assert_ok("UM-V6OFF-DONE");
        let text = out.stdout.replace('\r', "");
        assert!(
            text.contains("CONNECT ENETUNREACH 0"),
            "{engine:?}:\n{text}"
        );
        assert!(!text.contains("default via"), "{engine:?}:\n{text}");
    });
}

/// ICMP errors at the guest's sockets, differential: `net_icmp_err.py` prints the same lines
/// natively against a closed host 127.0.0.1 / ::1 port and in the guest against that port
/// through 10.0.2.2 / fd00::2 (`hostloop=on`; usernet turns the host's ECONNREFUSED into port
/// unreachable): connected UDP's ECONNREFUSED on send/recv and SO_ERROR, IP_RECVERR /
/// IPV6_RECVERR's error queue (sock_extended_err, offender, payload, name), POLLERR. Then the
/// guest-only lines: under `restrict=loopback` a connect to 192.0.2.1 is refused at once and a
/// datagram there draws "administratively prohibited" (EHOSTUNREACH) in the error queue; a
/// connect to an on-link address nobody answers ARP or NDP for fails with EHOSTUNREACH after
/// ~3 s (`um_net::neigh`).
#[test]
fn icmp_errors_differential() {
    let dir = scratch("neticmp", "script");
    std::fs::write(dir.join("e.py"), include_str!("net_icmp_err.py")).unwrap();
    let port = free_port();
    let native = Command::new("python3")
        .arg(dir.join("e.py"))
        .args(["127.0.0.1", "::1", &port.to_string()])
        .output()
        .expect("host python3");
    let native = String::from_utf8_lossy(&native.stdout).to_string();
    assert!(native.contains("ICMP-ERR-DONE"), "native run:\n{native}");
    for_each_engine(|engine| {
        let script = format!(
            "{STATIC_NET}for i in 1 2 3 4 5 6 7 8 9 10; do ip -6 addr show dev eth0 | grep -q 'scope global' && break; sleep 0.5; done\npython3 /mnt/e.py 10.0.2.2 fd00::2 {port} guest\necho UM-ICMP-DONE\n"
        );
        let out = boot(
            engine,
            &[
                "eth0=user,restrict=loopback,hostloop=on",
                &format!("bind={}:/mnt", dir.display()),
            ],
            &script,
            120,
        );
        out.assert_ok("UM-ICMP-DONE");
        let text = out.stdout.replace('\r', "");
        let guest: Vec<&str> = text
            .lines()
            .filter(|l| {
                ["udp", "tcp", "restricted", "neigh", "ICMP-ERR"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .collect();
        let mut want: Vec<&str> = native.lines().filter(|l| *l != "ICMP-ERR-DONE").collect();
        want.extend([
            "restricted-tcp connect ECONNREFUSED prompt True",
            "restricted-udp recverr poll ERR",
            "restricted-udp cmsg 0 11 EHOSTUNREACH origin 2 type 3 code 13 info 0 data 0 offender T",
            "restricted-udp data b'x' flags-errqueue True name T False",
            "neigh-tcp connect EHOSTUNREACH after 2-5 s True",
            "neigh-tcp6 connect EHOSTUNREACH after 2-5 s True",
            "ICMP-ERR-DONE",
        ]);
        assert_eq!(guest, want, "{engine:?}: guest vs native\n{text}");
    });
}
