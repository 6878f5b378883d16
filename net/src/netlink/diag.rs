//! `NETLINK_SOCK_DIAG` (Linux `net/core/sock_diag.c`, `net/ipv4/inet_diag.c`,
//! `tcp_diag.c`, `udp_diag.c`, sock_diag(7)): dumps of the namespace's TCP and UDP sockets
//! for `ss`, from [`crate::inet::list`].
//!
//! Requests: `SOCK_DIAG_BY_FAMILY` with an `inet_diag_req_v2` (`AF_INET`/`AF_INET6`,
//! `IPPROTO_TCP`/`IPPROTO_UDP`, a state mask), and the version 1 `TCPDIAG_GETSOCK` with an
//! `inet_diag_req` (TCP). Each socket is one `inet_diag_msg` with `INET_DIAG_SHUTDOWN`; a
//! filter program (`INET_DIAG_REQ_BYTECODE`) is not run, every socket of the state mask is
//! reported (ss filters again itself). Other families are `ENOENT` (no handler, as
//! `sock_diag_rcv_msg` for an unloaded module), other protocols `ENOENT` too; a request
//! without `NLM_F_DUMP` for one socket is `EOPNOTSUPP` here (Linux looks it up by its id).

use super::msg::Msg;
use super::{Answer, NlResult, Request};
use crate::inet::list::{SockInfo, sockets};
use crate::inet::opt::Proto;
use crate::{AF_INET, AF_INET6, AF_MAX};
use std::net::{IpAddr, SocketAddr};
use um_uapi::Errno;
use um_uapi::abi::inet::{IPPROTO_TCP, IPPROTO_UDP};
use um_uapi::abi::netlink::*;
use um_uapi::abi::pod::Pod;

/// Handles one sock_diag request.
pub fn handle(r: &Request<'_>) -> NlResult {
    let (family, protocol, states) = match r.hdr.nlmsg_type {
        SOCK_DIAG_BY_FAMILY => {
            let q = InetDiagReqV2::from_prefix(r.payload)
                .ok_or(Errno::EINVAL)?
                .0;
            (
                u32::from(q.sdiag_family),
                i32::from(q.sdiag_protocol),
                q.idiag_states,
            )
        }
        TCPDIAG_GETSOCK => {
            let q = InetDiagReq::from_prefix(r.payload).ok_or(Errno::EINVAL)?.0;
            (u32::from(q.idiag_family), IPPROTO_TCP, q.idiag_states)
        }
        DCCPDIAG_GETSOCK => return Err(Errno::ENOENT.into()),
        _ => return Err(Errno::EINVAL.into()),
    };
    if family >= AF_MAX {
        return Err(Errno::EINVAL.into());
    }
    if family != AF_INET && family != AF_INET6 {
        return Err(Errno::ENOENT.into());
    }
    let proto = match protocol {
        IPPROTO_TCP => Proto::Tcp,
        IPPROTO_UDP => Proto::Udp,
        _ => return Err(Errno::ENOENT.into()),
    };
    if r.hdr.nlmsg_flags & NLM_F_DUMP != NLM_F_DUMP {
        return Err(Errno::EOPNOTSUPP.into());
    }
    let msgs = sockets(r.net)
        .iter()
        .filter(|s| s.proto == proto && s.family == family)
        .filter(|s| states & (1u32 << s.state) != 0)
        .map(|s| fill(s, r.hdr.nlmsg_type, r.hdr.nlmsg_seq, r.portid))
        .collect();
    Ok(Answer::Dump(msgs))
}

/// The 16 address bytes of a sockid: an IPv4 address in the first four.
fn addr16(a: IpAddr) -> [u8; 16] {
    let mut o = [0u8; 16];
    match a {
        IpAddr::V4(v) => o[..4].copy_from_slice(&v.octets()),
        IpAddr::V6(v) => o = v.octets(),
    }
    o
}

/// `inet_sk_diag_fill`.
pub fn fill(s: &SockInfo, ty: u16, seq: u32, pid: u32) -> Vec<u8> {
    let remote = s.remote.unwrap_or_else(|| match s.local {
        SocketAddr::V4(_) => "0.0.0.0:0".parse().expect("literal"),
        SocketAddr::V6(_) => "[::]:0".parse().expect("literal"),
    });
    let listen = s.state == tcp_state::TCP_LISTEN;
    let msg = InetDiagMsg {
        idiag_family: s.family as u8,
        idiag_state: s.state,
        idiag_timer: 0,
        idiag_retrans: 0,
        id: InetDiagSockid {
            idiag_sport: s.local.port().to_be_bytes(),
            idiag_dport: remote.port().to_be_bytes(),
            idiag_src: addr16(s.local.ip()),
            idiag_dst: addr16(remote.ip()),
            idiag_if: 0,
            idiag_cookie: [s.ino as u32, (s.ino >> 32) as u32],
        },
        idiag_expires: 0,
        idiag_rqueue: s.rx_queue,
        idiag_wqueue: if listen { s.backlog } else { s.tx_queue },
        idiag_uid: s.uid,
        idiag_inode: s.ino as u32,
    };
    let mut m = Msg::new(ty, NLM_F_MULTI, seq, pid);
    m.put(&msg).u8(INET_DIAG_SHUTDOWN, s.shutdown);
    m.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diag_message_layout() {
        let s = SockInfo {
            proto: Proto::Tcp,
            family: AF_INET,
            state: tcp_state::TCP_LISTEN,
            local: "127.0.0.1:8080".parse().unwrap(),
            remote: None,
            rx_queue: 2,
            tx_queue: 0,
            backlog: 128,
            uid: 1000,
            ino: 4242,
            shutdown: 0,
        };
        let b = fill(&s, SOCK_DIAG_BY_FAMILY, 9, 5);
        assert_eq!(b.len(), 16 + 72 + 8);
        let m = InetDiagMsg::read_le(&b[16..]);
        assert_eq!(m.idiag_state, 10);
        assert_eq!(m.id.idiag_sport, [0x1f, 0x90]);
        assert_eq!(&m.id.idiag_src[..4], &[127, 0, 0, 1]);
        assert_eq!((m.idiag_rqueue, m.idiag_wqueue), (2, 128));
        assert_eq!((m.idiag_uid, m.idiag_inode), (1000, 4242));
    }
}
