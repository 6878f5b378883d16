//! The enumeration of a namespace's internet sockets, for `/proc/net/{tcp,tcp6,udp,udp6}` and
//! sock_diag (Linux walks `tcp_hashinfo` and `udp_table`; here the bind table [`super::ports`]
//! holds every socket with a port, accepted ones included). Unbound sockets are not listed,
//! as on Linux, where they are not hashed yet.

use super::{InetSocket, State, ports};
use crate::inet::opt::Proto;
use std::net::SocketAddr;
use std::sync::Arc;
use um_kernel::netns::NetNs;
use um_kernel::task::lock;
use um_uapi::abi::netlink::tcp_state::*;

/// What `/proc/net/tcp` and `inet_diag_msg` show of one socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SockInfo {
    pub proto: Proto,
    /// `AF_INET` or `AF_INET6`.
    pub family: u32,
    /// `TCP_*` (UDP: `TCP_ESTABLISHED` when connected, else `TCP_CLOSE`).
    pub state: u8,
    pub local: SocketAddr,
    /// The peer (the wildcard with port 0 when none).
    pub remote: Option<SocketAddr>,
    /// Bytes (listeners: connections) waiting to be read / accepted.
    pub rx_queue: u32,
    /// Bytes not yet taken by the peer (0: the loopback hands them over at once).
    pub tx_queue: u32,
    /// The listen backlog (listeners only).
    pub backlog: u32,
    pub uid: u32,
    pub ino: u64,
    /// `RCV_SHUTDOWN` (1) and `SEND_SHUTDOWN` (2).
    pub shutdown: u8,
}

impl InetSocket {
    fn info(&self) -> Option<SockInfo> {
        let i = lock(&self.inner);
        let local = i.local?;
        let state = match (self.proto, i.state) {
            (Proto::Tcp, State::Listen) => TCP_LISTEN,
            (Proto::Tcp, State::Established) if i.fin && !i.snd_shutdown => TCP_CLOSE_WAIT,
            (_, State::Established) => TCP_ESTABLISHED,
            _ => TCP_CLOSE,
        };
        let rx_queue = match (self.proto, i.state) {
            (Proto::Tcp, State::Listen) => i.accept_q.len(),
            (Proto::Tcp, _) => i.stream.len(),
            (Proto::Udp | Proto::Ping | Proto::Raw, _) => i.dgram_bytes,
        } as u32;
        Some(SockInfo {
            proto: self.proto,
            family: i.family,
            state,
            local,
            remote: if i.state == State::Established {
                i.remote
            } else {
                None
            },
            rx_queue,
            tx_queue: 0,
            backlog: if i.state == State::Listen {
                i.backlog as u32
            } else {
                0
            },
            uid: self.owner.0,
            ino: self.ino,
            shutdown: u8::from(i.rcv_shutdown) | (u8::from(i.snd_shutdown) << 1),
        })
    }
}

/// The sockets of `net` with a port, listeners first, then by local port.
pub fn sockets(net: &NetNs) -> Vec<SockInfo> {
    let socks: Vec<Arc<InetSocket>> = {
        let t = lock(ports());
        t.iter()
            .filter(|((ns, _, _), _)| *ns == net.inum())
            .flat_map(|(_, v)| v.iter().filter_map(std::sync::Weak::upgrade))
            .collect()
    };
    let mut v: Vec<SockInfo> = socks.iter().filter_map(|s| s.info()).collect();
    v.sort_by_key(|s| (s.state != TCP_LISTEN, s.local.port(), s.ino));
    v.dedup_by_key(|s| s.ino);
    v
}
