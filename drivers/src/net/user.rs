//! The `user` backend (`eth0=user[,OPTS]`, the default): the in-process user-mode network of
//! `um-usernet` (QEMU slirp's addressing: the guest 10.0.2.15/24, gateway 10.0.2.2, DNS
//! 10.0.2.3), an adapter from [`NetBackend`] to `um_usernet::Usernet`. OPTS are usernet's
//! (`um_usernet::Config::parse`: `hostfwd=`, `hostloop=`, `restrict=`, `dns=`, `mtu=`, ...).
//!
//! usernet calls the NIC's sink from its I/O thread and from inside `transmit` (on the
//! guest-kernel thread that sent); the sink only queues (see the NIC's threads in the parent
//! module), and a full queue makes usernet hold the frame until [`NetBackend::rx_ready`].

use super::{NetBackend, RxSink};
use std::sync::Mutex;
use um_kernel::task::lock;
use um_usernet::{Config, Usernet};

/// Checks the options of `eth0=user,OPTS`.
pub fn check(opts: &str) -> Result<(), String> {
    Config::parse(opts).map(|_| ())
}

/// A running usernet.
struct User {
    net: Mutex<Option<Usernet>>,
    opts: String,
}

/// Starts the backend (binding its `hostfwd=` listeners: a port in use is the error).
pub fn start(opts: &str, sink: RxSink) -> Result<Box<dyn NetBackend>, String> {
    let cfg = Config::parse(opts)?;
    let net = Usernet::start(cfg, Box::new(move |f: &[u8]| sink(f)))
        .map_err(|e| format!("eth0=user: {e}"))?;
    Ok(Box::new(User {
        net: Mutex::new(Some(net)),
        opts: opts.to_string(),
    }))
}

impl NetBackend for User {
    fn transmit(&self, frame: &[u8]) -> bool {
        match lock(&self.net).as_ref() {
            Some(n) => {
                n.transmit(frame);
                true
            }
            None => false,
        }
    }

    fn rx_ready(&self) {
        if let Some(n) = lock(&self.net).as_ref() {
            n.rx_ready();
        }
    }

    fn shutdown(&self) {
        // Dropping it stops its thread and closes every host socket.
        drop(lock(&self.net).take());
    }

    fn describe(&self) -> String {
        if self.opts.is_empty() {
            "user-mode network (usernet)".into()
        } else {
            format!("user-mode network (usernet: {})", self.opts)
        }
    }
}
