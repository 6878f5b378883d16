//! Gate: the guest's network end to end (issue 18), on the Alpine rootfs with busybox's tools.
//!
//! Every boot uses `eth0=user,restrict=loopback` (host sockets may reach only 127.0.0.0/8 and
//! ::1; the network rule of these machines) and a DNS upstream this test runs on 127.0.0.1.
//! - `dhcp_download_dns`: busybox `udhcpc` leases 10.0.2.15 (its script configures eth0 through
//!   `ip`); `ip addr`, `ip route` and `/proc/net/route` show it; `wget` of a 64 MiB random file
//!   from a host `python3 -m http.server` on 127.0.0.1 through 10.0.2.2 (`hostloop=on`) has the
//!   host's sha256; `nslookup` through 10.0.2.3 gets the fake upstream's answer.
//! - `policy`: without `hostloop` the same server is unreachable from the guest (refused at
//!   once); with `restrict=loopback` a connect to 192.0.2.1 (TEST-NET-1) is refused at once.
//!
//! (A server in the guest through `hostfwd` is `net_stack`'s.)
//!
//! All four engines. The kernel log is scanned as in every gate.

use std::net::UdpSocket;
use std::time::Duration;
use um_tests::hostsvc::{free_port, http_server, random_file, scratch};
use um_tests::{Boot, for_each_engine};

/// The answer the fake DNS upstream gives to every A query (TEST-NET-2: only data here).
const FAKE_A: [u8; 4] = [198, 51, 100, 7];

/// A DNS upstream on 127.0.0.1 (UDP) that answers every A query with [`FAKE_A`] and every other
/// query with an empty NOERROR answer; it runs until the test process ends.
fn fake_dns() -> u16 {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind the fake DNS upstream");
    let port = sock.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1500];
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            let q = &buf[..n];
            if n < 12 {
                continue;
            }
            // The question: labels up to the zero byte, then QTYPE and QCLASS.
            let mut i = 12;
            while i < n && q[i] != 0 {
                i += 1 + q[i] as usize;
            }
            let end = i + 5;
            if end > n {
                continue;
            }
            let qtype = u16::from_be_bytes([q[i + 1], q[i + 2]]);
            let mut r = Vec::with_capacity(end + 16);
            r.extend_from_slice(&q[..2]);
            r.extend_from_slice(&[0x81, 0x80, 0, 1, 0, u8::from(qtype == 1), 0, 0, 0, 0]);
            r.extend_from_slice(&q[12..end]);
            if qtype == 1 {
                r.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
                r.extend_from_slice(&FAKE_A);
            }
            let _ = sock.send_to(&r, from);
        }
    });
    port
}

#[test]
fn dhcp_download_dns() {
    let www = scratch("net", "www");
    let big = www.join("big");
    let want = random_file(&big, 64);
    let port = free_port();
    let _server = http_server(&www, port);
    let dns = fake_dns();
    // Alpine's own udhcpc script, with the rootfs's udhcpc.conf (tools/mkrootfs): resolv.conf
    // goes to /run (a tmpfs here, as in the booted system), never into the shared rootfs.
    let script = format!(
        "mount -t proc proc /proc && mount -t sysfs sysfs /sys && mount -t tmpfs tmpfs /run && \
         ip link set eth0 up && \
         udhcpc -i eth0 -n -q -t 5 -T 1 >/dev/null 2>&1 && echo dhcp-ok; \
         sed 's/^/RESOLV:/' /etc/resolv.conf; \
         ip -4 addr show dev eth0 | grep -o 'inet [0-9./]*' | sed 's/^/ADDR:/'; \
         ip route | grep '^default' | sed 's/^/ROUTE:/'; \
         awk 'NR > 1 && $2 == \"00000000\" {{ print \"PROCROUTE:\" $1 \":\" $3 }}' /proc/net/route; \
         wget -q -O - http://10.0.2.2:{port}/big | sha256sum | sed 's/ .*//; s/^/SHA:/'; \
         nslookup test.example 10.0.2.3 2>&1 | grep -A2 'Name:' | grep -o 'Address: [0-9.]*' \
           | sed 's/^/DNS:/'"
    );
    for_each_engine(|engine| {
        let opt = format!("eth0=user,restrict=loopback,hostloop=on,dns=127.0.0.1:{dns}");
        let out = Boot::new()
            .engine(engine)
            .extra(&opt)
            .timeout(Duration::from_secs(180))
            .args(&["sh", "-c", &script])
            .run();
        out.assert_ok("dhcp-ok");
        out.assert_ok("RESOLV:nameserver 10.0.2.3");
        out.assert_ok("ADDR:inet 10.0.2.15/24");
        out.assert_ok("ROUTE:default via 10.0.2.2 dev eth0");
        out.assert_ok("PROCROUTE:eth0:0202000A");
        out.assert_ok(&format!("SHA:{want}"));
        out.assert_ok(&format!(
            "DNS:Address: {}.{}.{}.{}",
            FAKE_A[0], FAKE_A[1], FAKE_A[2], FAKE_A[3]
        ));
    });
    let _ = std::fs::remove_dir_all(&www);
}

#[test]
fn policy() {
    let www = scratch("net", "policy");
    std::fs::write(www.join("f"), "host-file\n").unwrap();
    let port = free_port();
    let _server = http_server(&www, port);
    let script = format!(
        "ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && \
         ip route add default via 10.0.2.2 && echo net-up; \
         t0=$(date +%s); wget -q -T 5 -O - http://10.0.2.2:{port}/f && echo REACHED-HOST; \
         wget -q -T 5 -O - http://192.0.2.1/ && echo REACHED-WORLD; \
         echo \"FAST:$(( $(date +%s) - t0 < 4 ))\""
    );
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .extra("eth0=user,restrict=loopback")
            .args(&["sh", "-c", &script])
            .run();
        out.assert_ok("net-up");
        out.assert_ok("FAST:1");
        assert!(
            !out.stdout.contains("REACHED-HOST") && !out.stdout.contains("host-file"),
            "without hostloop the guest reached the host's 127.0.0.1\n{}",
            out.report()
        );
        assert!(
            !out.stdout.contains("REACHED-WORLD"),
            "restrict=loopback let a connect to 192.0.2.1 through\n{}",
            out.report()
        );
    });
    let _ = std::fs::remove_dir_all(&www);
}
