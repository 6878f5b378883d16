//! Gate: the guest's TCP/IP over `eth0` (issue 18; `net/src/stack.rs`, `net/src/inet/link.rs`):
//! busybox `wget` of a 4 MiB file from a python3 `http.server` on the host's 127.0.0.1 through
//! both backends (sha256 equal), `ping` of the gateway as root (raw ICMP) and as a user (ping
//! socket under `net.ipv4.ping_group_range`), a connect to a closed port refused, and a server
//! in the guest reached through usernet's `hostfwd` (accept on eth0, half-close both ways).
//!
//! The network rule: the guest talks only to the gateway 10.0.2.2, which both backends map to
//! the host's loopback (usernet with `restrict=loopback,hostloop=on`, passt by default), so
//! nothing here reaches anything but 127.0.0.1.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use um_tests::{Boot, Outcome, for_each_engine};

const USER: &str = "eth0=user,restrict=loopback,hostloop=on";
const PASST: &str = "/usr/bin/passt";

fn sh(engine: &[&str], backend: &str, script: &str) -> Outcome {
    Boot::new()
        .engine(engine)
        .init("/bin/sh")
        .args(&["-c", script])
        .extra(backend)
        .extra("ip=dhcp")
        .timeout(Duration::from_secs(120))
        .run()
}

/// A python3 `http.server` on 127.0.0.1 serving a directory with one 4 MiB random file.
struct Server {
    child: Child,
    port: u16,
    dir: PathBuf,
    sha: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn server() -> Server {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("um-net-stack-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let blob: Vec<u8> = (0..4 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    std::fs::write(dir.join("blob"), &blob).unwrap();
    let out = Command::new("sha256sum")
        .arg(dir.join("blob"))
        .output()
        .expect("sha256sum");
    let sha = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let mut child = Command::new("python3")
        .args(["-u", "-m", "http.server", "--bind", "127.0.0.1", "0"])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 -m http.server");
    // "Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ..."
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .split("port ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    Server {
        child,
        port,
        dir,
        sha,
    }
}

fn wget(backend: &str) {
    let s = server();
    for_each_engine(|engine| {
        let t0 = Instant::now();
        let out = sh(
            engine,
            backend,
            &format!(
                "wget -q -O - http://10.0.2.2:{}/blob | sha256sum; echo WGET-DONE",
                s.port
            ),
        );
        out.assert_ok("WGET-DONE");
        out.assert_ok(&format!("{}  -", s.sha));
        eprintln!(
            "{engine:?} {backend}: 4 MiB in {:?} (boot included)",
            t0.elapsed()
        );
    });
}

#[test]
fn wget_from_the_host_via_user() {
    wget(USER);
}

/// 50 downloads at once (50 connections on one device stack), every one complete.
#[test]
fn parallel_downloads() {
    let s = server();
    for_each_engine(|engine| {
        let out = sh(
            engine,
            USER,
            &format!(
                "mount -t tmpfs tmpfs /tmp; \
                 for i in $(seq 1 50); do \
                   (wget -q -O - http://10.0.2.2:{}/blob | sha256sum > /tmp/$i) & \
                 done; wait; cat /tmp/[0-9]* | sort | uniq -c; echo PAR-DONE",
                s.port
            ),
        );
        out.assert_ok("PAR-DONE");
        out.assert_ok(&format!("     50 {}  -", s.sha));
    });
}

#[test]
fn wget_from_the_host_via_passt() {
    assert!(
        std::path::Path::new(PASST).is_file(),
        "{PASST} is missing: install Debian's passt package (apt-get install passt)"
    );
    wget("eth0=passt");
}

/// Root pings with a raw socket; a user with a ping socket once `ping_group_range` takes its
/// group in. (Through passt a ping needs the host's own ping sockets, which this machine's
/// `ping_group_range` of "1 0" refuses; usernet answers the gateway's pings itself.)
#[test]
fn ping_the_gateway() {
    for_each_engine(|engine| {
        let out = sh(
            engine,
            USER,
            "mount -t proc proc /proc; \
             ping -c 3 -W 5 10.0.2.2; echo PING-ROOT $?; \
             cat /proc/sys/net/ipv4/ping_group_range; \
             echo 0 2147483647 > /proc/sys/net/ipv4/ping_group_range; \
             su -s /bin/sh nobody -c 'ping -c 2 -W 5 10.0.2.2; echo PING-USER $?'",
        );
        out.assert_ok("3 packets transmitted, 3 packets received");
        out.assert_ok("PING-ROOT 0");
        out.assert_ok("1\t0");
        out.assert_ok("2 packets transmitted, 2 packets received");
        out.assert_ok("PING-USER 0");
    });
}

/// Nothing listens on the host's port 1: the backend resets the connection and the guest
/// hears ECONNREFUSED (busybox `nc` exits 1 without a word, so `wget` asks).
#[test]
fn connect_refused() {
    for_each_engine(|engine| {
        let out = sh(
            engine,
            USER,
            "wget -q -O /dev/null http://10.0.2.2:1/ 2>&1; echo WGET $?",
        );
        out.assert_ok("can't connect to remote host (10.0.2.2): Connection refused");
        out.assert_ok("WGET 1");
    });
}

/// A server in the guest: usernet's `hostfwd` listens on the host's 127.0.0.1 and opens each
/// connection to the guest's port 8080, where busybox `nc -l` accepts it on eth0 (a device
/// listener); bytes go both ways and each side's half-close reaches the other.
#[test]
fn server_in_the_guest_via_hostfwd() {
    use std::io::{Read, Write};
    for_each_engine(|engine| {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let run = Boot::new()
            .engine(engine)
            .init("/bin/sh")
            .args(&[
                "-c",
                "mount -t tmpfs tmpfs /tmp; \
                 for i in 1 2; do echo guest-says-$i | nc -l -p 8080 > /tmp/got; \
                 echo GOT $(cat /tmp/got); done; echo GUEST-DONE",
            ])
            .extra(&format!(
                "eth0=user,restrict=loopback,hostfwd=tcp:127.0.0.1:{port}-:8080"
            ))
            .extra("ip=dhcp")
            .timeout(Duration::from_secs(60))
            .spawn();
        for i in 1..=2 {
            // Until the guest listens, the forwarded connection is reset: try again.
            let deadline = Instant::now() + Duration::from_secs(30);
            let got = loop {
                let attempt = (|| -> std::io::Result<Vec<u8>> {
                    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
                    s.set_read_timeout(Some(Duration::from_secs(10)))?;
                    s.write_all(format!("host-says-{i}\n").as_bytes())?;
                    s.shutdown(std::net::Shutdown::Write)?;
                    let mut v = Vec::new();
                    s.read_to_end(&mut v)?;
                    Ok(v)
                })();
                match attempt {
                    Ok(v) if !v.is_empty() => break v,
                    _ if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(200))
                    }
                    r => panic!("no answer from the guest's server: {r:?}"),
                }
            };
            assert_eq!(got, format!("guest-says-{i}\n").into_bytes());
        }
        let out = run.wait();
        out.assert_ok("GOT host-says-1");
        out.assert_ok("GOT host-says-2");
        out.assert_ok("GUEST-DONE");
    });
}
