//! Gate: the virtual NIC `eth0` (issue 18): the device is there (and not with `eth0=none`),
//! busybox `udhcpc` gets a lease over AF_PACKET through both backends, `ip=dhcp` configures eth0
//! at boot and shows the DNS server in `/proc/net/pnp`, bad `eth0=`/`ip=` values are one error
//! line and exit status 2, and no `passt` outlives `linux`.
//!
//! What the shell-based checks need besides this crate's NIC: `/sys/class/net`, `/proc/net` (with
//! the `pnp` entry the NIC's ipconfig registers in procfs's "net" directory), `ip link`/`ip
//! addr`/`ip route` (rtnetlink) and the interface ioctls from the netlink work, and for
//! busybox `udhcpc` an `AF_INET`/`SOCK_RAW`/`IPPROTO_RAW` socket (its `udhcp_read_interface`
//! opens one for the ioctls). The python3 checks (AF_PACKET by raw syscalls) need none of them.
//!
//! The network rule: the guest sends nothing but DHCP (to passt or usernet themselves); the user
//! backend always runs `restrict=loopback`, and passt's DNS is its gateway mapping to the host's
//! loopback (the backend's default), so no test can reach anything but the host's loopback.

use std::time::{Duration, Instant};
use um_tests::{Boot, HostProc, Outcome, children_of, for_each_engine, kill_group};

const PASST: &str = "/usr/bin/passt";
const USER: &str = "eth0=user,restrict=loopback";

fn need_passt() {
    assert!(
        std::path::Path::new(PASST).is_file(),
        "{PASST} is missing: install Debian's passt package (apt-get install passt)"
    );
}

/// A shell script run as init's `sh -c`, after mounting /proc and /sys.
fn sh(engine: &[&str], extra: &[&str], script: &str) -> Outcome {
    let script = format!("mount -t proc proc /proc && mount -t sysfs sysfs /sys && {script}");
    let mut b = Boot::new()
        .engine(engine)
        .init("/bin/sh")
        .args(&["-c", &script])
        .timeout(Duration::from_secs(90));
    for e in extra {
        b = b.extra(e);
    }
    b.run()
}

#[test]
fn eth0_is_an_ethernet_device() {
    for_each_engine(|engine| {
        let out = sh(
            engine,
            &[USER],
            "cd /sys/class/net/eth0 && echo \"ETH0 $(cat address) type $(cat type) mtu $(cat mtu)\"",
        );
        out.assert_ok("ETH0 52:54:00:12:34:56 type 1 mtu 1500");
    });
}

/// Binds an AF_PACKET socket to ifindex 2 (no interface ioctls involved) and prints what
/// getsockname says, or the errno.
const BIND2: &str = "import ctypes, struct, socket, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.socket(17, 3, socket.htons(3))
a = struct.pack('=HHiHBB8s', 17, socket.htons(3), 2, 0, 0, 0, b'')
if libc.bind(fd, a, 20) < 0:
    print('BIND2', os.strerror(ctypes.get_errno()))
else:
    n = ctypes.create_string_buffer(32); l = ctypes.c_uint(32)
    libc.getsockname(fd, n, ctypes.byref(l))
    f, p, i, h, t, hl, ad = struct.unpack('=HHiHBB8s', n.raw[:20])
    print('BIND2 ok hatype=%d addr=%s' % (h, ad[:hl].hex(':')))
";

fn bind2(engine: &[&str], backend: &str) -> Outcome {
    Boot::new()
        .engine(engine)
        .rootflags(&debian_tree())
        .extra("ro")
        .extra(backend)
        .init("/usr/bin/python3")
        .args(&["-c", BIND2])
        .timeout(Duration::from_secs(90))
        .run()
}

#[test]
fn eth0_is_ifindex_2() {
    for_each_engine(|engine| {
        bind2(engine, USER).assert_ok("BIND2 ok hatype=1 addr=52:54:00:12:34:56");
    });
}

#[test]
fn eth0_none_has_no_eth0() {
    for_each_engine(|engine| {
        bind2(engine, "eth0=none").assert_ok("BIND2 No such device");
        let out = sh(
            engine,
            &["eth0=none"],
            "test -e /sys/class/net/lo && ! test -e /sys/class/net/eth0 && echo NO-ETH0",
        );
        out.assert_ok("NO-ETH0");
    });
}

/// The udhcpc script: prints the lease it is given (busybox networking/udhcp's environment).
const SCRIPT: &str = "mount -t tmpfs tmpfs /tmp && \
    printf '#!/bin/sh\\necho \"LEASE $1 ip=$ip subnet=$subnet router=$router dns=$dns\"\\n' \
    > /tmp/s && chmod +x /tmp/s && ip link set eth0 up && \
    udhcpc -i eth0 -n -q -s /tmp/s; echo UDHCPC-EXIT $?";

#[test]
fn udhcpc_lease_via_passt() {
    need_passt();
    for_each_engine(|engine| {
        let out = sh(engine, &["eth0=passt"], SCRIPT);
        out.assert_ok("LEASE bound ip=10.0.2.15 subnet=255.255.255.0 router=10.0.2.2 dns=10.0.2.2");
        out.assert_ok("UDHCPC-EXIT 0");
    });
}

#[test]
fn udhcpc_lease_via_user() {
    for_each_engine(|engine| {
        let out = sh(engine, &[USER], SCRIPT);
        out.assert_ok("LEASE bound ip=10.0.2.15 subnet=255.255.255.0 router=10.0.2.2 dns=10.0.2.3");
        out.assert_ok("UDHCPC-EXIT 0");
    });
}

/// The Debian tree (python3 drives AF_PACKET by raw syscalls through ctypes): `$UM_DEBIAN_ROOTFS`
/// or `build/debian-amd64` (`build/debian-arm64` on arm64).
fn debian_tree() -> String {
    let arch = if cfg!(target_arch = "aarch64") {
        "arm64"
    } else {
        "amd64"
    };
    let p = std::env::var("UM_DEBIAN_ROOTFS")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| {
            um_tests::workspace_root()
                .join(format!("build/debian-{arch}"))
                .display()
                .to_string()
        });
    assert!(
        std::path::Path::new(&p).join("usr/bin/python3").exists(),
        "the Debian tree {p} has no python3 (make it with tools/mkrootfs-debian, or set \
         UM_DEBIAN_ROOTFS)"
    );
    p
}

/// AF_PACKET on eth0 without the interface ioctls (`net_packet.py`, ifindex 2): bind, the
/// link address from getsockname, udhcpc's BPF filter and PACKET_AUXDATA on a SOCK_DGRAM
/// socket that sends a DHCP DISCOVER and gets the OFFER, a SOCK_RAW ETH_P_ALL socket that sees
/// the DISCOVER as PACKET_OUTGOING and the OFFER incoming, and an accept-none filter that
/// sees nothing. eth0 is up by `ip=dhcp`.
fn af_packet(engine: &[&str], backend: &str) {
    let out = Boot::new()
        .engine(engine)
        .rootflags(&debian_tree())
        .extra("ro")
        .extra(backend)
        .extra("ip=dhcp")
        .init("/usr/bin/python3")
        .args(&["-c", include_str!("net_packet.py")])
        .timeout(Duration::from_secs(90))
        .run();
    out.assert_ok("NAME ifindex=2 hatype=1 halen=6 addr=52:54:00:12:34:56 len=18");
    out.assert_ok("OFFER yiaddr=10.0.2.15 pkttype=0 hatype=1 aux=1");
    out.assert_ok("TAP outgoing=True incoming=True");
    out.assert_ok("NONE empty");
    out.assert_ok("BINDTODEVICE eth0 nosuch=No such device GET_FILTER 9");
    out.assert_ok("PKT-DONE");
}

#[test]
fn af_packet_on_eth0_via_user() {
    for_each_engine(|engine| af_packet(engine, USER));
}

#[test]
fn af_packet_on_eth0_via_passt() {
    need_passt();
    for_each_engine(|engine| af_packet(engine, "eth0=passt"));
}

fn assert_log(out: &Outcome, what: &str) {
    assert!(
        out.stderr.contains(what),
        "the kernel log has no {what:?}\n{}",
        out.report()
    );
}

#[test]
fn ip_dhcp_via_passt() {
    need_passt();
    for_each_engine(|engine| {
        let out = sh(
            engine,
            &["eth0=passt", "ip=dhcp"],
            "cat /proc/net/pnp; ip -4 addr show eth0; ip route; echo PNP-DONE",
        );
        out.assert_ok("PNP-DONE");
        out.assert_ok("#PROTO: DHCP");
        out.assert_ok("nameserver 10.0.2.2");
        out.assert_ok("inet 10.0.2.15/24");
        out.assert_ok("default via 10.0.2.2 dev eth0");
        assert_log(
            &out,
            "IP-Config: Got DHCP answer from 10.0.2.2, my address is 10.0.2.15",
        );
        assert_log(&out, "ipaddr=10.0.2.15, mask=255.255.255.0, gw=10.0.2.2");
    });
}

/// No DHCP server (passt's is off): the client gives up after its timeout, says so, and the
/// boot goes on.
#[test]
fn ip_dhcp_without_a_server() {
    need_passt();
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .extra("eth0=passt,arg=--no-dhcp")
            .extra("ip=dhcp")
            .args(&["echo", "BOOTED-WITHOUT-LEASE"])
            .timeout(Duration::from_secs(60))
            .run();
        out.assert_ok("BOOTED-WITHOUT-LEASE");
        assert_log(&out, "IP-Config: Auto-configuration of network failed");
    });
}

#[test]
fn ip_dhcp_via_user() {
    for_each_engine(|engine| {
        let out = sh(
            engine,
            &[USER, "ip=dhcp"],
            "cat /proc/net/pnp; ip -4 addr show eth0; echo PNP-DONE",
        );
        out.assert_ok("PNP-DONE");
        out.assert_ok("nameserver 10.0.2.3");
        out.assert_ok("inet 10.0.2.15/24");
        assert_log(&out, "my address is 10.0.2.15");
    });
}

#[test]
fn ip_static() {
    for_each_engine(|engine| {
        let out = sh(
            engine,
            &["eth0=none", "ip=off"],
            "cat /proc/net/pnp; echo PNP-DONE",
        );
        out.assert_ok("#MANUAL");
        let out = sh(
            engine,
            &[
                USER,
                "ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:off:10.0.2.3",
            ],
            "cat /proc/net/pnp; ip -4 addr show eth0; ip route; echo PNP-DONE",
        );
        out.assert_ok("nameserver 10.0.2.3");
        out.assert_ok("inet 10.0.2.15/24");
        out.assert_ok("default via 10.0.2.2 dev eth0");
    });
}

fn assert_one_error_line(out: &Outcome, what: &str) {
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(
        out.code() == Some(2) && lines.len() == 1 && lines[0].starts_with("linux: error:"),
        "{what}: expected exit status 2 and one `linux: error:` line\n{}",
        out.report()
    );
    eprintln!("um-tests: {what}: {}", lines[0]);
}

#[test]
fn bad_options_exit_2() {
    for_each_engine(|engine| {
        for bad in [
            "eth0=tap",
            "eth0=",
            "eth0=none,x=1",
            "eth0=user,frobnicate=1",
            "eth0=user,hostfwd=tcp:nonsense",
            "eth0=passt,frob=1",
            "eth0=passt,path=/nonexistent/passt",
            "eth0=passt,dns=resolver",
            "ip=sometimes",
            "ip=10.0.2.x::::eth0:off",
            "ip=10.0.2.15:::::eth1:off",
        ] {
            let out = Boot::new().engine(engine).extra(bad).args(&["true"]).run();
            assert_one_error_line(&out, bad);
        }
    });
}

#[test]
fn help_lists_the_network_options() {
    let out = Boot::raw(&["--help"]).run();
    for o in ["eth0=user", "eth0=passt", "eth0=none", "ip=dhcp"] {
        assert!(out.stdout.contains(o), "--help lacks {o}\n{}", out.report());
    }
}

/// passt processes among `procs`.
fn passts(procs: &[HostProc]) -> Vec<HostProc> {
    procs
        .iter()
        .filter(|p| p.comm.starts_with("passt"))
        .cloned()
        .collect()
}

fn no_passt_left(engine: &[&str], kill: bool) {
    let mut running = Boot::new()
        .engine(engine)
        .extra("eth0=passt")
        .init("/bin/busybox")
        .args(&["sleep", if kill { "30" } else { "2" }])
        .timeout(Duration::from_secs(60))
        .spawn();
    let pid = running.pid();
    let deadline = Instant::now() + Duration::from_secs(20);
    let seen = loop {
        let p = passts(&children_of(pid));
        if !p.is_empty() {
            break p;
        }
        if running.has_exited() || Instant::now() >= deadline {
            kill_group(pid, libc::SIGKILL);
            let out = running.wait();
            panic!(
                "never saw passt as a child of linux pid {pid}\n{}",
                out.report()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if kill {
        std::thread::sleep(Duration::from_millis(300));
        running.signal(libc::SIGKILL);
    }
    let out = running.wait();
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.iter().any(HostProc::is_alive) {
        if Instant::now() >= deadline {
            for p in &seen {
                p.kill();
            }
            panic!(
                "passt (pid {}) outlived linux ({})\n{}",
                seen[0].pid,
                if kill { "SIGKILL" } else { "init exited" },
                out.report()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if !kill {
        out.assert_exit_code(0);
        out.scan_log();
    }
}

#[test]
fn no_passt_left_after_exit() {
    need_passt();
    for_each_engine(|engine| no_passt_left(engine, false));
}

#[test]
fn no_passt_left_after_sigkill() {
    need_passt();
    for_each_engine(|engine| no_passt_left(engine, true));
}
