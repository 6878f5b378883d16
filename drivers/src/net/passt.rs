//! The `passt` backend (`eth0=passt`): Debian's `/usr/bin/passt` (passt(1)) as a helper
//! process, on one end of an `AF_UNIX` `SOCK_STREAM` socketpair passed as `--fd N`, speaking
//! QEMU's stream format: each frame preceded by its length as a 4-byte big-endian number
//! (passt `tap.c`, QEMU `net/stream.c`).
//!
//! passt is told the addresses slirp and our `user` backend use (`-a 10.0.2.15 -n 24
//! -g 10.0.2.2`), IPv4 only unless `ipv6=on` (`-4`), no port forwarding (`-t none -u none`),
//! and by default `-D 10.0.2.2 -S none`: DHCP offers the gateway as the DNS server, and passt's
//! gateway mapping (its default; never `--no-map-gw`) sends what the guest sends to 10.0.2.2
//! to the host's loopback, so DNS goes to 127.0.0.1:53 on the host and never to the host's
//! resolver. `dns=host` lets passt read the host's resolv.conf instead, `dns=IP` names a server.
//!
//! Threads: a writer (`passt-tx`) drains the bounded transmit queue ([`TX_QUEUE_FRAMES`]; full:
//! the frame is dropped, as a NIC's full ring), a reader (`passt-rx`) reads frames and hands
//! them to the NIC (when the NIC's queue is full it waits for [`NetBackend::rx_ready`], so
//! passt's socket fills and passt itself applies back-pressure), and one relays passt's
//! standard error to the kernel log. passt dies with `linux`: `PR_SET_PDEATHSIG` (however
//! `linux` ends, see `um_os_linux::helper`), EOF on its socket (passt's `--fd` implies
//! `--one-off`), and at shutdown it is killed and reaped.

use super::{MAX_FRAME, NetBackend, RxSink};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use um_kernel::task::lock;

/// Frames waiting for the writer thread before transmit drops.
pub const TX_QUEUE_FRAMES: usize = 1024;

/// What `eth0=passt,...` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// `path=`: the passt executable (default `/usr/bin/passt`).
    pub path: PathBuf,
    /// `dns=`: `gateway` (default), `host`, `none` or an address.
    pub dns: String,
    /// `ipv6=on`: let passt do IPv6 too.
    pub ipv6: bool,
    /// `mtu=`: the MTU passt offers over DHCP (passt's default: 65520).
    pub mtu: Option<u32>,
    /// `arg=`: further passt arguments, verbatim, in order (repeatable; `arg=--pcap=/tmp/p`).
    pub args: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            path: PathBuf::from("/usr/bin/passt"),
            dns: "gateway".into(),
            ipv6: false,
            mtu: None,
            args: Vec::new(),
        }
    }
}

impl Options {
    /// Parses the comma-separated options after `passt`.
    pub fn parse(s: &str) -> Result<Options, String> {
        let mut o = Options::default();
        for kv in s.split(',').filter(|w| !w.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("{kv:?}: options are key=value"))?;
            match k {
                "path" if !v.is_empty() => o.path = PathBuf::from(v),
                "dns" => {
                    if !matches!(v, "gateway" | "host" | "none")
                        && v.parse::<std::net::IpAddr>().is_err()
                    {
                        return Err(format!("dns={v}: use gateway, host, none or an address"));
                    }
                    o.dns = v.into();
                }
                "ipv6" => {
                    o.ipv6 = match v {
                        "on" => true,
                        "off" => false,
                        _ => return Err(format!("ipv6={v}: use on or off")),
                    }
                }
                "mtu" => {
                    o.mtu = Some(
                        v.parse()
                            .ok()
                            .filter(|m| (68..=65_520).contains(m))
                            .ok_or_else(|| format!("mtu={v}: 68..65520"))?,
                    )
                }
                "arg" if !v.is_empty() => o.args.push(v.into()),
                _ => return Err(format!("unknown passt option {kv:?}")),
            }
        }
        Ok(o)
    }

    /// passt's command line after `passt`, for the socket at descriptor `fd`.
    pub fn argv(&self, fd: i32) -> Vec<String> {
        let mut a: Vec<String> = [
            "--foreground",
            "--quiet",
            "--fd",
            &fd.to_string(),
            "--address",
            "10.0.2.15",
            "--netmask",
            "24",
            "--gateway",
            "10.0.2.2",
            "--tcp-ports",
            "none",
            "--udp-ports",
            "none",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if !self.ipv6 {
            a.push("--ipv4-only".into());
        }
        match self.dns.as_str() {
            "host" => {}
            "gateway" => a.extend(["--dns", "10.0.2.2", "--search", "none"].map(String::from)),
            other => a.extend(["--dns", other, "--search", "none"].map(String::from)),
        }
        if let Some(m) = self.mtu {
            a.extend(["--mtu".to_string(), m.to_string()]);
        }
        a.extend(self.args.iter().cloned());
        a
    }
}

struct Shared {
    tx: Mutex<VecDeque<Vec<u8>>>,
    tx_cv: Condvar,
    /// The NIC had no room; the reader waits for `rx_ready`.
    rx_wait: Mutex<bool>,
    rx_cv: Condvar,
    dead: AtomicBool,
}

/// A running passt.
pub struct Passt {
    shared: Arc<Shared>,
    child: Mutex<Option<Child>>,
    sock: UnixStream,
    path: PathBuf,
}

impl Passt {
    /// Starts passt and the threads that carry its frames.
    pub fn start(o: &Options, sink: RxSink) -> Result<Passt, String> {
        let (ours, theirs) =
            UnixStream::pair().map_err(|e| format!("eth0=passt: socketpair: {e}"))?;
        let mut cmd = Command::new(&o.path);
        cmd.args(o.argv(theirs.as_raw_fd()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = um_os_linux::helper::spawn_with_fd(&mut cmd, theirs.as_fd())
            .map_err(|e| format!("eth0=passt: cannot start {}: {e}", o.path.display()))?;
        drop(theirs);
        log::info!(
            "eth0: started {} (pid {}) {}",
            o.path.display(),
            child.id(),
            o.argv(3)[4..].join(" ")
        );
        if let Some(err) = child.stderr.take() {
            let _ = std::thread::Builder::new()
                .name("passt-log".into())
                .spawn(move || {
                    for line in BufReader::new(err).lines().map_while(Result::ok) {
                        log::info!("passt: {line}");
                    }
                });
        }
        let shared = Arc::new(Shared {
            tx: Mutex::new(VecDeque::new()),
            tx_cv: Condvar::new(),
            rx_wait: Mutex::new(false),
            rx_cv: Condvar::new(),
            dead: AtomicBool::new(false),
        });
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .map(|_| ())
                .map_err(|e| format!("eth0=passt: cannot start a thread: {e}"))
        };
        let (w, r) = (
            ours.try_clone().map_err(|e| format!("eth0=passt: {e}"))?,
            ours.try_clone().map_err(|e| format!("eth0=passt: {e}"))?,
        );
        let s = shared.clone();
        spawn("passt-tx", Box::new(move || writer(&s, w)))?;
        let s = shared.clone();
        spawn("passt-rx", Box::new(move || reader(&s, r, &sink)))?;
        Ok(Passt {
            shared,
            child: Mutex::new(Some(child)),
            sock: ours,
            path: o.path.clone(),
        })
    }
}

/// Writes queued frames, each after its 4-byte big-endian length.
fn writer(s: &Shared, mut sock: UnixStream) {
    loop {
        let f = {
            let mut q = lock(&s.tx);
            loop {
                if s.dead.load(Ordering::Relaxed) {
                    return;
                }
                if let Some(f) = q.pop_front() {
                    break f;
                }
                q = s.tx_cv.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        if let Err(e) = sock.write_all(&f) {
            if !s.dead.swap(true, Ordering::Relaxed) {
                log::warn!("eth0: passt socket write failed: {e}");
            }
            return;
        }
    }
}

/// Reads frames and hands them up, waiting while the NIC has no room.
fn reader(s: &Shared, sock: UnixStream, sink: &RxSink) {
    let mut r = BufReader::with_capacity(256 << 10, sock);
    let mut frame = Vec::with_capacity(MAX_FRAME);
    loop {
        let mut len = [0u8; 4];
        if r.read_exact(&mut len).is_err() {
            break;
        }
        let n = u32::from_be_bytes(len) as usize;
        if n > MAX_FRAME {
            log::warn!("eth0: passt sent a {n}-byte frame; closing the connection");
            break;
        }
        frame.resize(n, 0);
        if r.read_exact(&mut frame).is_err() {
            break;
        }
        while !sink(&frame) {
            let mut w = lock(&s.rx_wait);
            *w = true;
            // A lost wakeup costs 100 ms, not the frame.
            let (mut w, _) = s
                .rx_cv
                .wait_timeout_while(w, Duration::from_millis(100), |w| {
                    *w && !s.dead.load(Ordering::Relaxed)
                })
                .unwrap_or_else(|e| e.into_inner());
            *w = false;
            if s.dead.load(Ordering::Relaxed) {
                return;
            }
        }
    }
    if !s.dead.swap(true, Ordering::Relaxed) {
        log::warn!("eth0: passt closed its connection (passt exited?)");
    }
    s.tx_cv.notify_all();
}

impl NetBackend for Passt {
    fn transmit(&self, frame: &[u8]) -> bool {
        if self.shared.dead.load(Ordering::Relaxed) || frame.len() > MAX_FRAME {
            return false;
        }
        let mut q = lock(&self.shared.tx);
        if q.len() >= TX_QUEUE_FRAMES {
            return false;
        }
        let mut b = Vec::with_capacity(4 + frame.len());
        b.extend_from_slice(&(frame.len() as u32).to_be_bytes());
        b.extend_from_slice(frame);
        q.push_back(b);
        drop(q);
        self.shared.tx_cv.notify_one();
        true
    }

    fn rx_ready(&self) {
        *lock(&self.shared.rx_wait) = false;
        self.shared.rx_cv.notify_all();
    }

    fn shutdown(&self) {
        self.shared.dead.store(true, Ordering::Relaxed);
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
        if let Some(mut c) = lock(&self.child).take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn describe(&self) -> String {
        format!("passt ({})", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options() {
        let o = Options::parse("").unwrap();
        assert_eq!(o, Options::default());
        let a = o.argv(7);
        assert!(a.windows(2).any(|w| w == ["--fd", "7"]));
        assert!(a.windows(2).any(|w| w == ["--dns", "10.0.2.2"]));
        assert!(a.contains(&"--ipv4-only".to_string()));
        assert!(!a.iter().any(|x| x == "--no-map-gw"));
        let o = Options::parse("path=/x/passt,dns=host,ipv6=on,mtu=1500,arg=--trace").unwrap();
        let a = o.argv(3);
        assert!(!a.iter().any(|x| x == "--dns" || x == "--ipv4-only"));
        assert_eq!(a.last().map(String::as_str), Some("--trace"));
        assert!(a.windows(2).any(|w| w == ["--mtu", "1500"]));
        assert!(Options::parse("dns=resolver").is_err());
        assert!(Options::parse("mtu=9").is_err());
        assert!(Options::parse("ipv6=maybe").is_err());
        assert!(Options::parse("frob").is_err());
        assert!(Options::parse("path=").is_err());
    }
}
