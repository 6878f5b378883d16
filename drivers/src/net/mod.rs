//! The virtual NIC: `eth0`, an Ethernet device whose frames go to and come from a host-side
//! network backend (Linux's view: a driver like `virtio_net` or UML's `vector` transport,
//! `ARPHRD_ETHER`, MAC 52:54:00:12:34:56 as QEMU's first NIC, MTU 1500).
//!
//! [`init`] runs at boot (from `um-bin`, before init starts): it registers `eth0` in the initial
//! network namespace's device registry (`um_net::dev`, down, as Linux leaves a NIC until
//! something brings it up), starts the backend `eth0=` asked for and, with `ip=dhcp` or a
//! static `ip=`, configures it ([`ipconfig`], Linux `net/ipv4/ipconfig.c`).
//!
//! Frames: transmit goes straight from `dev_queue_xmit` (`NetDevOps::xmit`) to
//! [`NetBackend::transmit`], which never blocks (a backend queues, bounded, and drops when
//! full: `tx_dropped`). Receive: the backend hands frames to the NIC's bounded receive queue
//! ([`RX_QUEUE_FRAMES`]) from its own thread, and **one NIC thread** (`eth0-rx`) takes them
//! off and calls `um_net::dev::netif_rx` (the taps, then the protocol handlers). Why a thread
//! of the NIC's and not the backend's: a protocol handler may transmit while it handles a
//! frame (an ARP reply, a TCP ACK, a DHCP REQUEST after the OFFER), and that transmit goes back
//! into the backend; called on the backend's own thread, with whatever the backend holds while
//! it delivers (usernet's flow table), that would deadlock or reorder. The queue also bounds
//! what a fast backend can pile up when the guest is slow: a full queue refuses the frame
//! (the backend counts it and may retry after [`NetBackend::rx_ready`], usernet's
//! back-pressure) or drops it (passt's frames: `rx_dropped`).
//!
//! Backends ([`NetBackend`]): `user` ([`user`], the in-process user-mode network of
//! `um-usernet`), `passt` ([`passt`], Debian's `passt` process on a socketpair), `none` (no
//! eth0). Key types: [`Eth0`] (the `eth0=` choice), [`Nic`], [`NetBackend`], [`RxSink`].
//!
//! Neighbours: `um-net` below (the device registry and its entry points), `um-os-linux`
//! (helper processes), `um-kernel` (the shutdown hooks); `um-bin` above parses the options
//! ([`parse_eth0`], [`ipconfig::parse_ip`]) and calls [`init`].

pub mod ipconfig;
pub mod passt;
pub mod user;

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use um_kernel::kernel::Kernel;
use um_kernel::netns;
use um_kernel::task::lock;
use um_net::dev::{self, NetDevOps, NetDevice};
use um_uapi::abi::netdevice::{ARPHRD_ETHER, IFF_BROADCAST, IFF_MULTICAST};

/// eth0's hardware address: QEMU's default for its first NIC (locally administered range
/// 52:54:00, which passt and slirp expect too).
pub const ETH0_MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
/// The default MTU (`ETH_DATA_LEN`).
pub const ETH_DATA_LEN: u32 = 1500;
/// How many received frames wait for the NIC thread before more are refused.
pub const RX_QUEUE_FRAMES: usize = 1024;
/// The largest frame a backend may hand up: a 65535-byte MTU plus the Ethernet header and a
/// VLAN tag (passt's own limit is 65535 + `ETH_HLEN`).
pub const MAX_FRAME: usize = 65_535 + 14 + 4;

/// What `eth0=` asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Eth0 {
    /// `eth0=none`: no device.
    None,
    /// `eth0=user[,OPTS]` (the default): the options for `um_usernet::Config::parse`.
    User(String),
    /// `eth0=passt[,...]`.
    Passt(passt::Options),
}

impl Default for Eth0 {
    fn default() -> Self {
        Eth0::User(String::new())
    }
}

/// Parses the value of `eth0=`. Errors name the option, for one `linux: error:` line.
pub fn parse_eth0(v: &str) -> Result<Eth0, String> {
    let (kind, opts) = v.split_once(',').unwrap_or((v, ""));
    match kind {
        "none" if opts.is_empty() => Ok(Eth0::None),
        "none" => Err(format!("eth0={v}: none takes no options")),
        "user" => {
            // usernet's errors name the option ("eth0=user: ...").
            user::check(opts)?;
            Ok(Eth0::User(opts.to_string()))
        }
        "passt" => Ok(Eth0::Passt(
            passt::Options::parse(opts).map_err(|e| format!("eth0={v}: {e}"))?,
        )),
        _ => Err(format!(
            "eth0={v}: unknown backend {kind:?} (use user, passt or none)"
        )),
    }
}

/// The checks that can be made before the boot starts: the passt executable exists.
pub fn check(eth0: &Eth0) -> Result<(), String> {
    if let Eth0::Passt(o) = eth0 {
        use std::os::unix::fs::PermissionsExt;
        let md = std::fs::metadata(&o.path)
            .map_err(|e| format!("eth0=passt: {}: {e}", o.path.display()))?;
        if !md.is_file() || md.permissions().mode() & 0o111 == 0 {
            return Err(format!(
                "eth0=passt: {}: not an executable file",
                o.path.display()
            ));
        }
    }
    Ok(())
}

/// Where a backend delivers received frames: true when the NIC took the frame, false when
/// its queue was full (then [`NetBackend::rx_ready`] is called once there is room again).
pub type RxSink = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// The host side of the NIC.
pub trait NetBackend: Send + Sync {
    /// Sends one frame to the network. Never blocks; false when it was dropped (the
    /// backend's queue is full, or the backend is gone).
    fn transmit(&self, frame: &[u8]) -> bool;
    /// The NIC's receive queue has room again after it refused a frame.
    fn rx_ready(&self) {}
    /// `linux` is ending: stop, and leave no host process behind.
    fn shutdown(&self) {}
    /// One line for the boot log.
    fn describe(&self) -> String;
}

struct RxQueue {
    frames: VecDeque<Vec<u8>>,
    /// A frame was refused since the backend was last told there is room.
    refused: bool,
}

/// The NIC: its device, its backend and its receive queue.
pub struct Nic {
    backend: OnceLock<Box<dyn NetBackend>>,
    dev: OnceLock<Arc<NetDevice>>,
    rx: Mutex<RxQueue>,
    rx_cv: Condvar,
}

impl Nic {
    fn new() -> Arc<Nic> {
        Arc::new(Nic {
            backend: OnceLock::new(),
            dev: OnceLock::new(),
            rx: Mutex::new(RxQueue {
                frames: VecDeque::new(),
                refused: false,
            }),
            rx_cv: Condvar::new(),
        })
    }

    /// The receive side of the backend: queue the frame for the NIC thread.
    fn receive(&self, frame: &[u8]) -> bool {
        if frame.len() < 14 || frame.len() > MAX_FRAME {
            if let Some(d) = self.dev.get() {
                d.stats
                    .rx_errors
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            // A malformed frame is consumed (and counted), not retried.
            return true;
        }
        let mut q = lock(&self.rx);
        if q.frames.len() >= RX_QUEUE_FRAMES {
            q.refused = true;
            return false;
        }
        q.frames.push_back(frame.to_vec());
        drop(q);
        self.rx_cv.notify_one();
        true
    }

    /// The NIC thread: hands queued frames to the stack, one at a time, in order.
    fn rx_thread(self: Arc<Self>) {
        loop {
            let (frame, tell) = {
                let mut q = lock(&self.rx);
                loop {
                    if let Some(f) = q.frames.pop_front() {
                        let tell = q.refused && q.frames.len() < RX_QUEUE_FRAMES / 2;
                        if tell {
                            q.refused = false;
                        }
                        break (f, tell);
                    }
                    q = self.rx_cv.wait(q).unwrap_or_else(|e| e.into_inner());
                }
            };
            if tell && let Some(b) = self.backend.get() {
                b.rx_ready();
            }
            if let Some(d) = self.dev.get() {
                dev::netif_rx(d, &frame);
            }
        }
    }

    /// The device (once registered).
    pub fn device(&self) -> Option<&Arc<NetDevice>> {
        self.dev.get()
    }
}

/// The driver's half of the device (`net_device_ops`).
struct NicOps(Arc<Nic>);

impl NetDevOps for NicOps {
    fn xmit(&self, frame: &[u8]) -> bool {
        self.0.backend.get().is_some_and(|b| b.transmit(frame))
    }
}

/// The NIC of the initial namespace, once [`init`] made it.
static ETH0: OnceLock<Arc<Nic>> = OnceLock::new();

/// eth0, if there is one.
pub fn eth0() -> Option<&'static Arc<Nic>> {
    ETH0.get()
}

/// Boot: registers eth0 (unless `eth0=none`), starts its backend and its NIC thread, adds the
/// backend's shutdown to the kernel's, then runs `ip=` ([`ipconfig::run`]). Also makes
/// `/proc/net/pnp`. Errors are one line (the backend could not start).
pub fn init(kernel: &Arc<Kernel>, eth0: &Eth0, ip: &ipconfig::IpConfig) -> Result<(), String> {
    ipconfig::register_proc();
    if *eth0 == Eth0::None {
        log::info!("eth0: none (eth0=none)");
        if *ip != ipconfig::IpConfig::Off {
            log::warn!("IP-Config: no device to configure (eth0=none)");
        }
        return Ok(());
    }
    let nic = Nic::new();
    let ns = netns::root();
    let devs = dev::devices(ns);
    let d = devs
        .register(
            ns,
            "eth0",
            ARPHRD_ETHER,
            ETH0_MAC,
            ETH_DATA_LEN,
            IFF_BROADCAST | IFF_MULTICAST,
            Arc::new(NicOps(nic.clone())),
        )
        .map_err(|e| format!("eth0: cannot register the device: {e:?}"))?;
    let _ = nic.dev.set(d);
    let n2 = nic.clone();
    let sink: RxSink = Arc::new(move |f: &[u8]| n2.receive(f));
    let backend: Box<dyn NetBackend> = match eth0 {
        Eth0::None => unreachable!("handled above"),
        Eth0::User(opts) => user::start(opts, sink)?,
        Eth0::Passt(o) => Box::new(passt::Passt::start(o, sink)?),
    };
    log::info!(
        "eth0: {}, MAC {}, mtu {ETH_DATA_LEN}",
        backend.describe(),
        fmt_mac(&ETH0_MAC)
    );
    let _ = nic.backend.set(backend);
    let n3 = nic.clone();
    std::thread::Builder::new()
        .name("eth0-rx".into())
        .spawn(move || n3.rx_thread())
        .map_err(|e| format!("eth0: cannot start its receive thread: {e}"))?;
    let n4 = nic.clone();
    lock(&kernel.shutdown_hooks).push(Box::new(move || {
        if let Some(b) = n4.backend.get() {
            b.shutdown();
        }
    }));
    let _ = ETH0.set(nic.clone());
    ipconfig::run(kernel, &nic, ip);
    Ok(())
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn fmt_mac(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eth0_values() {
        assert_eq!(parse_eth0("none"), Ok(Eth0::None));
        assert!(parse_eth0("none,x=1").is_err());
        assert!(parse_eth0("tap").unwrap_err().contains("unknown backend"));
        match parse_eth0("passt,path=/opt/passt").unwrap() {
            Eth0::Passt(o) => assert_eq!(o.path, std::path::PathBuf::from("/opt/passt")),
            e => panic!("{e:?}"),
        }
        assert!(parse_eth0("passt,bogus=1").is_err());
    }

    #[test]
    fn queue_is_bounded() {
        let nic = Nic::new();
        let f = vec![0u8; 60];
        for _ in 0..RX_QUEUE_FRAMES {
            assert!(nic.receive(&f));
        }
        assert!(!nic.receive(&f), "a full queue refuses");
        assert!(lock(&nic.rx).refused);
        // Runts and giants are consumed, not queued.
        assert!(nic.receive(&[0u8; 10]));
        assert_eq!(lock(&nic.rx).frames.len(), RX_QUEUE_FRAMES);
    }
}
