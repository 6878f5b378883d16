//! Gate: the network tools of the guests against the loopback device (issue 18): busybox
//! `ip addr/link/route/rule`, `ifconfig`, `route`, `netstat` in Alpine
//! (tests/scripts/net-tools-gate.sh), and glibc's resolver in Debian: `getent ahosts` of
//! /etc/hosts (the `AI_ADDRCONFIG` check sends `RTM_GETADDR`), and of a name a fake DNS
//! server answers (tests/scripts/fake-dns.py, run inside the guest on its own 127.0.0.1: no
//! packet leaves the guest) with A and AAAA sent in one `sendmmsg`. Every engine of
//! [`um_tests::ENGINES`]. The expected lines are what these tools print on Linux 6.18 in a
//! fresh network namespace with lo up.

use std::path::PathBuf;
use um_tests::{Boot, for_each_engine, workspace_root};

fn script(name: &str) -> String {
    let p = workspace_root().join("tests/scripts").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn expect_lines(out: &um_tests::Outcome, want: &[&str]) {
    let text = out.stdout.replace('\r', "");
    for w in want {
        if !text.lines().any(|l| l.trim_end() == w.trim_end()) {
            panic!("missing line {w:?}\n{}", out.report());
        }
    }
}

#[test]
fn busybox_ip_ifconfig_route_netstat() {
    let sh = script("net-tools-gate.sh");
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .init("/bin/sh")
            .args(&["-c", &sh])
            .run();
        out.assert_ok("UM-NET-TOOLS-OK");
        expect_lines(
            &out,
            &[
                "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN qlen 1000",
                "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00",
                "    inet 127.0.0.1/8 scope host lo",
                "    inet6 ::1/128 scope host ",
                "       valid_lft forever preferred_lft forever",
                "local 127.0.0.0/8 dev lo scope host  src 127.0.0.1 ",
                "local 127.0.0.1 dev lo scope host  src 127.0.0.1 ",
                "broadcast 127.255.255.255 dev lo scope link  src 127.0.0.1 ",
                "    inet 10.1.2.3/24 scope global lo",
                // An address on lo makes its prefix local (fib_add_ifaddr).
                "local 10.1.2.0/24 dev lo scope host  src 10.1.2.3 ",
                "broadcast 10.1.2.255 dev lo scope link  src 10.1.2.3 ",
                "local 127.0.0.1 dev lo  src 127.0.0.1 ",
                "          inet addr:127.0.0.1  Mask:255.0.0.0",
                "          UP LOOPBACK RUNNING  MTU:65536  Metric:1",
                "10.5.0.0        0.0.0.0         255.255.0.0     U     0      0        0 lo",
                "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 1500 qdisc noqueue state UNKNOWN qlen 1000",
                "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever",
                "0:\tfrom all lookup local ",
                "32766:\tfrom all lookup main ",
                "32767:\tfrom all lookup default ",
                "tcp        0      0 :::8080                 :::*                    LISTEN      ",
                "unknown",
                "65536",
            ],
        );
    });
}

fn debian_tree() -> PathBuf {
    um_tests::debian_rootfs(&["usr/bin/getent"])
}

#[test]
fn debian_getent_ahosts_and_sendmmsg() {
    let tree = debian_tree();
    // Nothing is written to the tree: /etc is a copy on a tmpfs, bound over the real one.
    let sh = format!(
        "export PATH=/usr/sbin:/usr/bin:/sbin:/bin\n\
         mount -t proc proc /proc\n\
         mount -t tmpfs tmpfs /run\n\
         cp -a /etc /run/etc\n\
         printf '127.0.0.1 localhost\\n::1 localhost ip6-localhost ip6-loopback\\n' > /run/etc/hosts\n\
         printf 'nameserver 127.0.0.1\\n' > /run/etc/resolv.conf\n\
         mount --bind /run/etc /etc\n\
         cat > /run/fake-dns.py <<'PYEOF'\n{}PYEOF\n\
         getent ahosts localhost\n\
         python3 /run/fake-dns.py > /run/dns.log 2>&1 &\n\
         for i in 1 2 3 4 5 6 7 8 9 10; do grep -q ready /run/dns.log 2>/dev/null && break; sleep 0.5; done\n\
         strace -f -e trace=sendmmsg -o /run/st getent ahosts example.test\n\
         echo sendmmsg calls: $(grep -c 'sendmmsg(.*= 2' /run/st)\n\
         echo UM-GETENT-OK\n",
        script("fake-dns.py")
    );
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .rootflags(&tree.display().to_string())
            .init("/bin/bash")
            .args(&["-c", &sh])
            .run();
        out.assert_ok("UM-GETENT-OK");
        expect_lines(
            &out,
            &[
                "::1             STREAM localhost",
                "127.0.0.1       STREAM ",
                "fd00::7         STREAM example.test",
                "192.0.2.7       STREAM ",
                "sendmmsg calls: 1",
            ],
        );
    });
}
