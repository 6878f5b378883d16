//! `um-usernet`: the user-mode network backend behind the guest's `eth0` (`eth0=user`).
//!
//! Ethernet frames from the guest's NIC come in through [`Usernet::transmit`]; frames for the
//! guest go out through the `to_guest` callback given to [`Usernet::start`]. In between, the
//! backend is the guest's whole network, built as passt is (passt(1): "doesn't implement a full
//! TCP stack"): L4 translation over ordinary host sockets, in this process, unprivileged.
//!
//! # Design
//! - **Addressing** as QEMU's slirp: the guest net is 10.0.2.0/24, the gateway 10.0.2.2 (MAC
//!   52:55:0a:00:02:02), the DNS forwarder 10.0.2.3, the guest 10.0.2.15 by DHCP (`dhcp.rs`);
//!   IPv6 fd00::/64 by SLAAC from our Router Advertisement, gateway fd00::2 (link-local
//!   fe80::2), DNS fd00::3. ARP and NDP are answered for those addresses.
//! - **TCP** (`engine/tcp.rs`): each guest connection is mirrored onto one non-blocking host
//!   socket: SYN-ACK only after the host connect succeeded, guest data ACKed only as far as the
//!   host socket took it, host data sent from `MSG_PEEK` and consumed on the guest's ACK,
//!   retransmission by peeking again from the head. No second buffering stack.
//! - **UDP**: one connected host socket per (guest address:port, destination), closed after
//!   60 s idle; datagram boundaries are kept; a host ECONNREFUSED is ICMP port unreachable.
//! - **ICMP echo**: 10.0.2.2/10.0.2.3 (and fd00::2/3) answer themselves; other destinations go
//!   through a host ping socket (`SOCK_DGRAM/IPPROTO_ICMP`). Where the host's
//!   `net.ipv4.ping_group_range` refuses it (the default "1 0", as on this machine), the guest
//!   gets ICMP "administratively prohibited" at once rather than silence.
//! - **DNS** at 10.0.2.3:53 and fd00::3:53, UDP and TCP: forwarded to the first `dns=` upstream
//!   (or the host resolv.conf's first nameserver) as an ordinary flow with a mapped destination.
//! - **hostfwd**: the backend listens on the host; an accepted TCP connection becomes a SYN
//!   from 10.0.2.2 to the guest; a UDP datagram from a host peer becomes a flow from a
//!   gateway port, whose replies go back to that peer.
//!
//! # The flow table
//! `engine::Engine` holds every flow by id (the id is also the host socket's epoll token)
//! and by key (protocol, guest end, far end as the guest sees it); at most
//! `engine::MAX_FLOWS` (4096) flows. A flow's state is a fixed struct plus its host socket; the
//! data lives in the host kernel's socket buffers, at most `MAX_INFLIGHT` (256 KiB) unacked
//! per TCP flow towards the guest. Frames for the guest wait in one bounded queue (here):
//! TCP stops producing data while it is full and resumes on [`Usernet::rx_ready`].
//!
//! # Policy
//! `engine::Engine::map` decides every destination before any host socket call (behind the
//! `host::HostNet` trait, so tests can prove a forbidden one gets none): 10.0.2.2 / fd00::2
//! are the host's 127.0.0.1 / ::1 only with `hostloop=on` (off by default: host loopback
//! services trust their callers); other ways of naming host loopback (v4-mapped v6, 0.0.0.0)
//! are refused; with `restrict=loopback` every host socket must go to 127.0.0.0/8 or ::1 after
//! mapping. Refused TCP gets an RST, UDP/ICMP an ICMP "administratively prohibited".
//!
//! # Threads
//! [`Usernet::transmit`] handles the frame on the caller's thread under the engine lock (all
//! host calls are non-blocking); one I/O thread waits in epoll for host sockets, the wakeup
//! eventfd and the next timer. `to_guest` is called with no lock held, from either.
//!
//! # Not done
//! - IPv6 extension headers other than a leading Fragment header; DHCPv6. (The guest's IP
//!   fragments are reassembled and datagrams for the guest larger than the MTU fragmented,
//!   both families, by `frag`.)
//! - TCP SACK and timestamps; SO_PEEK_OFF (each re-peek copies the in-flight bytes again); a
//!   precise advertised window (SIOCOUTQ needs unsafe: a full host socket means a zero window
//!   until EPOLLOUT).
//! - A guest must ACK a lone segment within its delayed-ACK time: an unacknowledged segment
//!   pins host receive memory (skb overhead), which can stop the host peer until that ACK.
//! - DNS beyond the first upstream, multicast, and more than one DHCP lease (every client
//!   gets 10.0.2.15).
#![forbid(unsafe_code)]

pub mod config;
mod dhcp;
mod engine;
pub mod frag;
mod host;
mod wire;

use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};

pub use config::{Config, HostFwd, Proto};

/// The guest network (slirp's defaults, libslirp `slirp.c`).
pub const NET_ADDR: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 0);
pub const NETMASK: Ipv4Addr = Ipv4Addr::new(255, 255, 255, 0);
pub const GATEWAY: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
pub const DNS_ADDR: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 3);
pub const GUEST_ADDR: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 15);
pub const GATEWAY_MAC: [u8; 6] = [0x52, 0x55, 10, 0, 2, 2];
/// QEMU's default NIC address, a good choice for the guest's eth0.
pub const GUEST_MAC_DEFAULT: [u8; 6] = [0x52, 0x54, 0, 0x12, 0x34, 0x56];
pub const PREFIX6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 0);
pub const GW6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2);
pub const GW6_LL: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);
pub const DNS6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 3);
pub const LEASE_SECS: u32 = 86400;

/// Frames for the guest beyond this many queued stop TCP data (it resumes on `rx_ready`).
const DATA_QUEUE: usize = 1024;
/// Beyond this many queued frames, new ones are dropped (as a NIC does when it is full).
const HARD_QUEUE: usize = 8192;

/// What the DHCP server hands out (the kernel's `ip=dhcp` may configure eth0 from it directly).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub gateway_mac: [u8; 6],
    pub addr: Ipv4Addr,
    pub prefix_len: u8,
    pub gateway: Ipv4Addr,
    pub dns: Ipv4Addr,
    pub mtu: u16,
    pub lease_secs: u32,
    /// The IPv6 prefix (/64, SLAAC), gateway and DNS, when the host has IPv6.
    pub ipv6: Option<Lease6>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease6 {
    pub prefix: Ipv6Addr,
    pub prefix_len: u8,
    pub gateway: Ipv6Addr,
    pub gateway_link_local: Ipv6Addr,
    pub dns: Ipv6Addr,
}

/// Delivers one Ethernet frame to the guest's NIC; false when its receive queue is full.
pub type ToGuest = Box<dyn Fn(&[u8]) -> bool + Send + Sync>;

#[derive(Default)]
struct OutQ {
    q: VecDeque<Vec<u8>>,
    /// A thread is delivering (only one at a time, so frames keep their order).
    busy: bool,
    /// `to_guest` said the NIC is full; wait for `rx_ready`.
    blocked: bool,
    /// TCP stopped for queue room: wake the I/O thread once the queue drains.
    starved: bool,
}

struct Inner {
    engine: Mutex<engine::Engine>,
    out: Mutex<OutQ>,
    to_guest: ToGuest,
    epoll: Arc<Epoll>,
    wake: EventFd,
    stop: AtomicBool,
    resume: AtomicBool,
    lease: Lease,
}

/// The backend: see the crate docs.
pub struct Usernet {
    inner: Arc<Inner>,
    thread: Option<JoinHandle<()>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not wedge the network: the state is still consistent per call.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Inner {
    /// Runs `f` on the engine with the NIC queue's room as its budget, then queues its frames
    /// (under the engine lock, so frames keep the order they were made in) and delivers them.
    fn with_engine(&self, f: impl FnOnce(&mut engine::Engine, Instant)) {
        {
            let mut e = lock(&self.engine);
            e.budget = DATA_QUEUE.saturating_sub(lock(&self.out).q.len());
            f(&mut e, Instant::now());
            let frames = std::mem::take(&mut e.tx);
            let starved = std::mem::take(&mut e.starved);
            let mut o = lock(&self.out);
            for fr in frames {
                if o.q.len() < HARD_QUEUE && !fr.is_empty() {
                    o.q.push_back(fr);
                }
            }
            o.starved |= starved;
        }
        self.flush();
    }

    /// Delivers queued frames until the queue is empty or the NIC is full.
    fn flush(&self) {
        let mut o = lock(&self.out);
        if o.busy || o.blocked {
            return;
        }
        o.busy = true;
        while let Some(fr) = o.q.pop_front() {
            drop(o);
            let ok = (self.to_guest)(&fr);
            o = lock(&self.out);
            if !ok {
                o.q.push_front(fr);
                o.blocked = true;
                break;
            }
        }
        o.busy = false;
        let wake = o.q.len() < DATA_QUEUE / 2 && o.starved;
        if wake {
            o.starved = false;
        }
        drop(o);
        if wake {
            self.resume.store(true, Ordering::Release);
            let _ = self.wake.write(1);
        }
    }

    fn run(&self) {
        let mut events = vec![EpollEvent::empty(); 64];
        while !self.stop.load(Ordering::Acquire) {
            let timeout = lock(&self.engine).timeout(Instant::now());
            // Round up so a timer due in 0.4 ms does not spin.
            let ms = (timeout.as_micros().div_ceil(1000)).min(1000) as u16;
            let n = match self.epoll.wait(&mut events, EpollTimeout::from(ms)) {
                Ok(n) => n,
                Err(nix::errno::Errno::EINTR) => 0,
                Err(e) => {
                    log::error!("usernet: epoll_wait: {e}");
                    return;
                }
            };
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            self.with_engine(|e, now| {
                for ev in &events[..n] {
                    if ev.data() == 0 {
                        let _ = self.wake.read();
                    } else {
                        e.host_event(ev.data(), ev.events(), now);
                    }
                }
                if self.resume.swap(false, Ordering::AcqRel) {
                    e.resume(now);
                }
                e.timers(now);
            });
        }
    }
}

impl Usernet {
    /// Starts the backend: binds the hostfwd listeners (a port in use is an Err naming it),
    /// starts one I/O thread. `to_guest` delivers one complete Ethernet frame to the guest's
    /// NIC and returns false if the NIC's receive queue is full (then the frame is kept and
    /// retried after [`Usernet::rx_ready`]). `to_guest` must not block; it may call
    /// [`Usernet::transmit`] (no lock is held while it runs).
    pub fn start(cfg: Config, to_guest: ToGuest) -> io::Result<Usernet> {
        Self::start_with(cfg, to_guest, Box::new(host::RealHost))
    }

    fn start_with(
        cfg: Config,
        to_guest: ToGuest,
        host: Box<dyn host::HostNet>,
    ) -> io::Result<Usernet> {
        // The fields are public, so a Config built by hand is checked as parse() checks.
        if !(config::MTU_MIN..=config::MTU_MAX).contains(&cfg.mtu) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "eth0=user: mtu={}: expected {}..={}",
                    cfg.mtu,
                    config::MTU_MIN,
                    config::MTU_MAX
                ),
            ));
        }
        let dns = if cfg.dns.is_empty() {
            config::resolv_conf_nameservers(
                &std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default(),
            )
        } else {
            cfg.dns.clone()
        };
        let lease = Lease {
            gateway_mac: GATEWAY_MAC,
            addr: GUEST_ADDR,
            prefix_len: 24,
            gateway: GATEWAY,
            dns: DNS_ADDR,
            mtu: cfg.mtu,
            lease_secs: LEASE_SECS,
            ipv6: cfg.ipv6.then_some(Lease6 {
                prefix: PREFIX6,
                prefix_len: 64,
                gateway: GW6,
                gateway_link_local: GW6_LL,
                dns: DNS6,
            }),
        };
        let epoll = Arc::new(Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?);
        let wake = EventFd::from_flags(EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)?;
        epoll.add(&wake, EpollEvent::new(EpollFlags::EPOLLIN, 0))?;
        let engine = engine::Engine::new(cfg, dns, host, epoll.clone())?;
        let inner = Arc::new(Inner {
            engine: Mutex::new(engine),
            out: Mutex::new(OutQ::default()),
            to_guest,
            epoll,
            wake,
            stop: AtomicBool::new(false),
            resume: AtomicBool::new(false),
            lease,
        });
        let i2 = inner.clone();
        let thread = std::thread::Builder::new()
            .name("usernet".into())
            .spawn(move || i2.run())?;
        Ok(Usernet {
            inner,
            thread: Some(thread),
        })
    }

    /// One frame the guest sent (called from guest-kernel threads, concurrently; does not
    /// block beyond the engine lock: every host call is non-blocking).
    pub fn transmit(&self, frame: &[u8]) {
        self.inner.with_engine(|e, now| e.guest_frame(frame, now));
    }

    /// The NIC's receive queue has room again.
    pub fn rx_ready(&self) {
        lock(&self.inner.out).blocked = false;
        self.inner.flush();
    }

    /// The gateway's MAC and the guest address/prefix/gateway/DNS the DHCP server hands out.
    pub fn lease(&self) -> Lease {
        self.inner.lease.clone()
    }

    /// The guest's MAC, once a frame from it was seen.
    pub fn guest_mac(&self) -> Option<[u8; 6]> {
        lock(&self.inner.engine).guest_mac()
    }
}

impl Drop for Usernet {
    /// Stops the I/O thread; the last reference to the engine then closes every host socket
    /// (flows, listeners, epoll, eventfd).
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::Release);
        let _ = self.inner.wake.write(1);
        if let Some(t) = self.thread.take() {
            // Dropped from inside `to_guest` on the I/O thread (the callback held the last
            // reference): that thread ends on its own once this returns; it cannot join itself.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests;
