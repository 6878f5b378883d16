//! AF_NETLINK sockets (Linux `net/netlink/af_netlink.c`, netlink(7)): `SOCK_RAW` and
//! `SOCK_DGRAM` (the same thing), protocols `NETLINK_ROUTE` ([`route`], rtnetlink(7)) and
//! `NETLINK_SOCK_DIAG` ([`diag`], sock_diag(7)); any other protocol is `EPROTONOSUPPORT`.
//!
//! A socket has a port id, unique per network namespace and protocol: `bind` with `nl_pid` 0
//! (or the first `sendmsg`/`connect`) picks the caller's tgid if free, else a negative number
//! from -4096 down (`netlink_autobind`). Multicast memberships come from `nl_groups` at bind
//! (groups 1-32) and `NETLINK_ADD_MEMBERSHIP` (any group of the protocol). A message to port
//! 0 is the kernel's: it runs at once, in the sender's context (`netlink_unicast_kernel`),
//! and its replies queue at the sender: dumps as datagrams of [`msg::GOODSIZE`] bytes
//! (`NLM_F_MULTI` messages, then `NLMSG_DONE` in a datagram of its own), errors and
//! `NLM_F_ACK` acknowledgements as `NLMSG_ERROR` (the request echoed unless
//! `NETLINK_CAP_ACK`; `NLMSGERR_ATTR_MSG` with `NETLINK_EXT_ACK` where Linux has a message).
//! A message to another port id goes to that socket (`ECONNREFUSED` if none); to groups only
//! with `CAP_NET_ADMIN`. Every change of `crate::dev` (addresses, routes, links) reaches the
//! members of the rtnetlink groups ([`notify`], registered with `dev::register_notifier`).
//!
//! Receiving: one datagram per call, `MSG_TRUNC` when the buffer was short (the return value
//! is the datagram's length with `MSG_TRUNC` in the flags), `MSG_PEEK`, the sender's
//! `sockaddr_nl` (port id, the group bit for a multicast), `NETLINK_PKTINFO` control
//! messages. Multicast messages beyond `SO_RCVBUF` are dropped and the next receive fails
//! with `ENOBUFS` (unless `NETLINK_NO_ENOBUFS`); the kernel's replies are always queued (a
//! dump here is made whole at once: Linux makes it as the reader reads).
//!
//! Key types: [`NetlinkSocket`], [`NetlinkFile`] (its `FileOps`), [`Request`] (what a
//! protocol handler sees). Codec in [`msg`]. Layouts in `um_uapi::abi::netlink`.

pub mod diag;
pub mod msg;
pub mod route;

use crate::inet::opt::{RMEM_MAX, SOCK_MIN_RCVBUF, SOCK_MIN_SNDBUF, WMEM_MAX, buf_value};
use crate::{MSG_DONTWAIT, MSG_PEEK, MSG_TRUNC, SOCK_DGRAM, SOCK_RAW};
use msg::Msg;
use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use um_fs::pipe::{FIONREAD, next_ino};
use um_kernel::netns::{self, NetNs};
use um_kernel::task::lock;
use um_kernel::vfs::{FileOps, GuestMem, Kstat};
use um_kernel::wait::{IoCtx, PollTable, WaitQueue};
use um_uapi::abi::netlink::opt::*;
use um_uapi::abi::netlink::*;
use um_uapi::abi::pod::Pod;
use um_uapi::abi::poll::{POLLERR, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use um_uapi::{Errno, SysResult};

/// `net.core.rmem_default`: a new socket's buffers.
const BUF_DEFAULT: i32 = 212_992;
/// What each queued datagram is charged beyond its bytes (an estimate of `skb->truesize`).
const SKB_OVERHEAD: usize = 576;
/// `MSG_OOB`, `MSG_ERRQUEUE`.
const MSG_OOB: u32 = crate::MSG_OOB;
const MSG_ERRQUEUE: u32 = 0x2000;

/// A queued datagram.
struct Skb {
    data: Vec<u8>,
    /// The sender's port id (0: the kernel).
    portid: u32,
    /// The group it was sent to (0: unicast).
    group: u32,
}

struct Inner {
    portid: u32,
    bound: bool,
    /// Group memberships, bit `g - 1` for group `g`.
    groups: u64,
    dst_portid: u32,
    dst_group: u32,
    queue: VecDeque<Skb>,
    rmem: usize,
    rcvbuf: i32,
    sndbuf: i32,
    err: Option<Errno>,
    pktinfo: bool,
    broadcast_error: bool,
    no_enobufs: bool,
    cap_ack: bool,
    ext_ack: bool,
    strict_chk: bool,
    drops: u64,
}

/// A netlink socket (Linux `struct netlink_sock`).
pub struct NetlinkSocket {
    ty: u32,
    protocol: u32,
    inner: Mutex<Inner>,
    wq: WaitQueue,
    ino: u64,
    owner: (u32, u32),
    net: Arc<NetNs>,
    me: Weak<NetlinkSocket>,
}

/// Every netlink socket that has a port id (Linux `nl_table`), all namespaces and protocols.
static TABLE: Mutex<Vec<Weak<NetlinkSocket>>> = Mutex::new(Vec::new());

fn live() -> Vec<Arc<NetlinkSocket>> {
    let mut t = lock(&TABLE);
    t.retain(|w| w.strong_count() > 0);
    t.iter().filter_map(Weak::upgrade).collect()
}

/// The protocols here: `socket` refuses the others with `EPROTONOSUPPORT`.
pub fn protocol_supported(p: u32) -> bool {
    p == NETLINK_ROUTE || p == NETLINK_SOCK_DIAG
}

/// How many groups a protocol has (`nl_table[].groups`).
fn ngroups(protocol: u32) -> u32 {
    if protocol == NETLINK_ROUTE {
        RTNLGRP_MAX
    } else {
        32
    }
}

/// A request to the kernel side of a protocol.
pub struct Request<'a> {
    pub hdr: Nlmsghdr,
    pub payload: &'a [u8],
    /// The sender's port id (replies go there).
    pub portid: u32,
    /// The sender holds `CAP_NET_ADMIN` (in the socket's namespace).
    pub admin: bool,
    pub net: &'a Arc<NetNs>,
    /// `NETLINK_GET_STRICT_CHK`.
    pub strict: bool,
}

/// What a handler answers.
pub enum Answer {
    /// Nothing beyond the acknowledgement (sent if `NLM_F_ACK` asked for one).
    Done,
    /// Reply messages, then the acknowledgement if asked.
    Reply(Vec<Vec<u8>>),
    /// The messages of a dump (`NLMSG_DONE` follows, no acknowledgement).
    Dump(Vec<Vec<u8>>),
}

/// An error with the extended-ack message Linux gives (`NL_SET_ERR_MSG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NlError(pub Errno, pub Option<&'static str>);

impl From<Errno> for NlError {
    fn from(e: Errno) -> NlError {
        NlError(e, None)
    }
}

/// A handler's result.
pub type NlResult = Result<Answer, NlError>;

impl NetlinkSocket {
    /// A new socket in the caller's namespace (`netlink_create`); the caller checked the type
    /// and protocol.
    pub fn new(ty: u32, protocol: u32, owner: (u32, u32)) -> Arc<NetlinkSocket> {
        Self::new_in(ty, protocol, owner, netns::current())
    }

    /// A new socket in namespace `net`.
    pub fn new_in(
        ty: u32,
        protocol: u32,
        owner: (u32, u32),
        net: Arc<NetNs>,
    ) -> Arc<NetlinkSocket> {
        Arc::new_cyclic(|me| NetlinkSocket {
            ty,
            protocol,
            inner: Mutex::new(Inner {
                portid: 0,
                bound: false,
                groups: 0,
                dst_portid: 0,
                dst_group: 0,
                queue: VecDeque::new(),
                rmem: 0,
                rcvbuf: BUF_DEFAULT,
                sndbuf: BUF_DEFAULT,
                err: None,
                pktinfo: false,
                broadcast_error: false,
                no_enobufs: false,
                cap_ack: false,
                ext_ack: false,
                strict_chk: false,
                drops: 0,
            }),
            wq: WaitQueue::new(),
            ino: next_ino(),
            owner,
            net,
            me: me.clone(),
        })
    }

    /// `SOCK_RAW` or `SOCK_DGRAM`.
    pub fn ty(&self) -> u32 {
        self.ty
    }

    /// The protocol (`NETLINK_*`).
    pub fn protocol(&self) -> u32 {
        self.protocol
    }

    /// The port id (0 before bind).
    pub fn portid(&self) -> u32 {
        lock(&self.inner).portid
    }

    /// Takes port id `portid` (`netlink_insert`): `EADDRINUSE` if another socket of the
    /// namespace and protocol has it.
    fn insert(&self, portid: u32) -> SysResult<()> {
        let mut t = lock(&TABLE);
        t.retain(|w| w.strong_count() > 0);
        let taken = t.iter().filter_map(Weak::upgrade).any(|s| {
            !std::ptr::eq(Arc::as_ptr(&s), self)
                && s.protocol == self.protocol
                && Arc::ptr_eq(&s.net, &self.net)
                && {
                    let i = lock(&s.inner);
                    i.bound && i.portid == portid
                }
        });
        if taken {
            return Err(Errno::EADDRINUSE);
        }
        let mut i = lock(&self.inner);
        if i.bound {
            // Raced with another bind of this socket: keep the first (`nlk->bound`).
            return if i.portid == portid {
                Ok(())
            } else {
                Err(Errno::EINVAL)
            };
        }
        i.portid = portid;
        i.bound = true;
        drop(i);
        t.push(self.me.clone());
        Ok(())
    }

    /// `netlink_autobind`: the tgid `tgid` if free, else -4096, -4097, ...
    pub fn autobind(&self, tgid: u32) -> SysResult<()> {
        if lock(&self.inner).bound {
            return Ok(());
        }
        if self.insert(tgid).is_ok() {
            return Ok(());
        }
        let mut rover: i32 = -4096;
        loop {
            match self.insert(rover as u32) {
                Ok(()) => return Ok(()),
                Err(Errno::EADDRINUSE) => {
                    rover = rover.checked_sub(1).ok_or(Errno::EADDRINUSE)?;
                    if rover == i32::MIN {
                        return Err(Errno::EADDRINUSE);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// `netlink_bind`: `b` is the `sockaddr_nl`; `tgid` is the caller's (for the autobind);
    /// `may_listen`: the caller may join groups (always for rtnetlink and sock_diag, whose
    /// groups are `NL_CFG_F_NONROOT_RECV`).
    pub fn bind(&self, b: &[u8], tgid: u32) -> SysResult<()> {
        if b.len() < SockaddrNl::SIZE {
            return Err(Errno::EINVAL);
        }
        let a = SockaddrNl::read_le(b);
        if u32::from(a.nl_family) != AF_NETLINK {
            return Err(Errno::EINVAL);
        }
        {
            let i = lock(&self.inner);
            if i.bound && a.nl_pid != i.portid {
                return Err(Errno::EINVAL);
            }
        }
        let bound = lock(&self.inner).bound;
        if !bound {
            if a.nl_pid != 0 {
                self.insert(a.nl_pid)?;
            } else {
                self.autobind(tgid)?;
            }
        }
        let mut i = lock(&self.inner);
        // Groups 1-32 are replaced by nl_groups; the others stay (`netlink_bind`).
        i.groups = (i.groups & !0xffff_ffff) | u64::from(a.nl_groups);
        if self.protocol != NETLINK_ROUTE {
            i.groups &= (1u64 << ngroups(self.protocol)) - 1;
        }
        Ok(())
    }

    /// `netlink_connect`: sets the default destination (`AF_UNSPEC`: back to the kernel).
    pub fn connect(&self, b: &[u8], tgid: u32, admin: bool) -> SysResult<()> {
        if b.len() < 2 {
            return Err(Errno::EINVAL);
        }
        if u16::from_le_bytes([b[0], b[1]]) == 0 {
            let mut i = lock(&self.inner);
            i.dst_portid = 0;
            i.dst_group = 0;
            return Ok(());
        }
        if b.len() < SockaddrNl::SIZE {
            return Err(Errno::EINVAL);
        }
        let a = SockaddrNl::read_le(b);
        if u32::from(a.nl_family) != AF_NETLINK {
            return Err(Errno::EINVAL);
        }
        if a.nl_groups != 0 && !admin {
            return Err(Errno::EPERM);
        }
        self.autobind(tgid)?;
        let mut i = lock(&self.inner);
        i.dst_portid = a.nl_pid;
        i.dst_group = ffs(a.nl_groups);
        Ok(())
    }

    /// `getsockname`.
    pub fn local_addr(&self) -> Vec<u8> {
        let i = lock(&self.inner);
        SockaddrNl {
            nl_family: AF_NETLINK as u16,
            nl_pad: 0,
            nl_pid: i.portid,
            nl_groups: i.groups as u32,
        }
        .as_bytes()
    }

    /// `getpeername`: the default destination.
    pub fn peer_addr(&self) -> Vec<u8> {
        let i = lock(&self.inner);
        SockaddrNl {
            nl_family: AF_NETLINK as u16,
            nl_pad: 0,
            nl_pid: i.dst_portid,
            nl_groups: group_mask(i.dst_group),
        }
        .as_bytes()
    }

    /// Queues a datagram; multicasts over the receive buffer are dropped (`ENOBUFS` later).
    fn deliver(&self, data: Vec<u8>, portid: u32, group: u32) -> bool {
        let mut i = lock(&self.inner);
        let charge = data.len() + SKB_OVERHEAD;
        if group != 0 && i.rmem + charge > i.rcvbuf.max(0) as usize {
            i.drops += 1;
            if !i.no_enobufs {
                i.err = Some(Errno::ENOBUFS);
            }
            drop(i);
            self.wq.wake_all();
            return false;
        }
        i.rmem += charge;
        i.queue.push_back(Skb {
            data,
            portid,
            group,
        });
        drop(i);
        self.wq.wake_all();
        true
    }

    /// `sendmsg`: `to` is the raw `msg_name` (None: the connected destination). `tgid` and
    /// `admin` are the sender's. Returns the bytes sent.
    pub fn send(
        &self,
        data: &[u8],
        to: Option<&[u8]>,
        tgid: u32,
        admin: bool,
        flags: u32,
    ) -> SysResult<usize> {
        if flags & MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let (dst_portid, dst_group) = match to {
            Some(b) => {
                if b.len() < SockaddrNl::SIZE {
                    return Err(Errno::EINVAL);
                }
                let a = SockaddrNl::read_le(b);
                if u32::from(a.nl_family) != AF_NETLINK {
                    return Err(Errno::EINVAL);
                }
                let g = ffs(a.nl_groups);
                if (g != 0 || a.nl_pid != 0) && !admin {
                    return Err(Errno::EPERM);
                }
                (a.nl_pid, g)
            }
            None => {
                let i = lock(&self.inner);
                (i.dst_portid, i.dst_group)
            }
        };
        self.autobind(tgid)?;
        let (portid, sndbuf) = {
            let i = lock(&self.inner);
            (i.portid, i.sndbuf)
        };
        if data.len() as i64 > i64::from(sndbuf) - 32 {
            return Err(Errno::EMSGSIZE);
        }
        if dst_group != 0 {
            broadcast(
                &self.net,
                self.protocol,
                dst_group,
                data,
                portid,
                Some(self),
            );
        }
        if dst_portid == 0 {
            self.kernel_input(data, admin);
            return Ok(data.len());
        }
        let peer = live()
            .into_iter()
            .find(|s| {
                s.protocol == self.protocol && Arc::ptr_eq(&s.net, &self.net) && {
                    let i = lock(&s.inner);
                    i.bound && i.portid == dst_portid
                }
            })
            .ok_or(Errno::ECONNREFUSED)?;
        peer.deliver(data.to_vec(), portid, 0);
        Ok(data.len())
    }

    /// The kernel receives `data` from this socket (`netlink_rcv_skb` with the protocol's
    /// handler); replies queue here.
    fn kernel_input(&self, data: &[u8], admin: bool) {
        let (portid, strict, cap_ack, ext_ack) = {
            let i = lock(&self.inner);
            (i.portid, i.strict_chk, i.cap_ack, i.ext_ack)
        };
        for (hdr, payload) in msg::messages(data) {
            let mut res: NlResult = Ok(Answer::Done);
            if hdr.nlmsg_flags & NLM_F_REQUEST != 0 && hdr.nlmsg_type >= NLMSG_MIN_TYPE {
                let req = Request {
                    hdr,
                    payload,
                    portid,
                    admin,
                    net: &self.net,
                    strict,
                };
                res = match self.protocol {
                    NETLINK_ROUTE => route::handle(&req),
                    NETLINK_SOCK_DIAG => diag::handle(&req),
                    _ => Err(Errno::EOPNOTSUPP.into()),
                };
            }
            match res {
                Ok(Answer::Dump(msgs)) => {
                    for d in msg::pack(msgs, msg::GOODSIZE) {
                        self.deliver(d, 0, 0);
                    }
                    let mut done = Msg::new(NLMSG_DONE, NLM_F_MULTI, hdr.nlmsg_seq, portid);
                    done.raw(&0i32.to_le_bytes());
                    self.deliver(done.finish(), 0, 0);
                }
                Ok(a) => {
                    if let Answer::Reply(msgs) = a {
                        for m in msgs {
                            self.deliver(m, 0, 0);
                        }
                    }
                    if hdr.nlmsg_flags & NLM_F_ACK != 0 {
                        let m = ack(&hdr, payload, None, cap_ack, ext_ack, portid);
                        self.deliver(m, 0, 0);
                    }
                }
                Err(e) => {
                    let m = ack(&hdr, payload, Some(e), cap_ack, ext_ack, portid);
                    self.deliver(m, 0, 0);
                }
            }
        }
    }

    /// `recvmsg`: one datagram, at most `len` bytes of it. Returns the bytes, the return
    /// value, `msg_flags`, the sender's address and control messages.
    pub fn recv(&self, io: &IoCtx<'_>, len: usize, flags: u32) -> SysResult<NlRecv> {
        if flags & MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        if flags & MSG_ERRQUEUE != 0 {
            return Err(Errno::EAGAIN);
        }
        let io = IoCtx {
            task: io.task,
            nonblock: io.nonblock || flags & MSG_DONTWAIT != 0,
            flags: io.flags,
        };
        io.wait(&[&self.wq], || {
            let mut i = lock(&self.inner);
            if let Some(e) = i.err.take() {
                return Some(Err(e));
            }
            let (data, portid, group) = if flags & MSG_PEEK != 0 {
                let s = i.queue.front()?;
                (s.data.clone(), s.portid, s.group)
            } else {
                let s = i.queue.pop_front()?;
                i.rmem = i.rmem.saturating_sub(s.data.len() + SKB_OVERHEAD);
                (s.data, s.portid, s.group)
            };
            let pktinfo = i.pktinfo;
            drop(i);
            let full = data.len();
            let mut out_flags = 0;
            let mut data = data;
            if len < full {
                data.truncate(len);
                out_flags |= MSG_TRUNC;
            }
            let ret = if flags & MSG_TRUNC != 0 {
                full
            } else {
                data.len()
            };
            let name = SockaddrNl {
                nl_family: AF_NETLINK as u16,
                nl_pad: 0,
                nl_pid: portid,
                nl_groups: group_mask(group),
            }
            .as_bytes();
            let mut control = Vec::new();
            if pktinfo {
                control.push((SOL_NETLINK, NETLINK_PKTINFO, group.to_le_bytes().to_vec()));
            }
            Some(Ok(NlRecv {
                data,
                ret,
                flags: out_flags,
                name,
                control,
            }))
        })?
    }

    /// `SIOCINQ`: the next datagram's size.
    fn inq(&self) -> usize {
        lock(&self.inner).queue.front().map_or(0, |s| s.data.len())
    }

    /// The poll mask.
    pub fn poll_mask(&self, pt: Option<&PollTable<'_>>) -> u16 {
        if let Some(pt) = pt {
            pt.wait_on(&self.wq);
        }
        let i = lock(&self.inner);
        let mut m = POLLOUT | POLLWRNORM;
        if i.err.is_some() {
            m |= POLLERR;
        }
        if !i.queue.is_empty() {
            m |= POLLIN | POLLRDNORM;
        }
        m
    }

    /// `SO_ERROR`.
    pub fn take_error(&self) -> i32 {
        lock(&self.inner).err.take().map_or(0, |e| e.get())
    }

    /// `SO_SNDBUF`, `SO_RCVBUF`.
    pub fn bufs(&self) -> (i32, i32) {
        let i = lock(&self.inner);
        (i.sndbuf, i.rcvbuf)
    }

    /// `SO_SNDBUF`/`SO_RCVBUF` (`force`: the `*FORCE` variants, past the maxima).
    pub fn set_buf(&self, snd: bool, v: i32, force: bool) {
        let mut i = lock(&self.inner);
        if snd {
            let v = if force { v.max(0) } else { v.min(WMEM_MAX) };
            i.sndbuf = buf_value(v, SOCK_MIN_SNDBUF);
        } else {
            let v = if force { v.max(0) } else { v.min(RMEM_MAX) };
            i.rcvbuf = buf_value(v, SOCK_MIN_RCVBUF);
        }
    }

    /// `SOL_NETLINK` options (`netlink_setsockopt`). `val` is the int the caller gave (None
    /// if `optlen` was shorter than an int).
    pub fn setsockopt(&self, name: i32, val: Option<i32>, admin: bool) -> SysResult<()> {
        let v = val.unwrap_or(0);
        let mut i = lock(&self.inner);
        match name {
            NETLINK_PKTINFO => i.pktinfo = v != 0,
            NETLINK_ADD_MEMBERSHIP | NETLINK_DROP_MEMBERSHIP => {
                let g = v as u32;
                if g == 0 || g > ngroups(self.protocol) || g > 64 {
                    return Err(Errno::EINVAL);
                }
                drop(i);
                self.autobind_current()?;
                i = lock(&self.inner);
                if name == NETLINK_ADD_MEMBERSHIP {
                    i.groups |= 1u64 << (g - 1);
                } else {
                    i.groups &= !(1u64 << (g - 1));
                }
            }
            NETLINK_BROADCAST_ERROR => i.broadcast_error = v != 0,
            NETLINK_NO_ENOBUFS => {
                i.no_enobufs = v != 0;
                if v != 0 {
                    i.err = None;
                }
            }
            NETLINK_LISTEN_ALL_NSID => {
                if !admin {
                    return Err(Errno::EPERM);
                }
            }
            NETLINK_CAP_ACK => i.cap_ack = v != 0,
            NETLINK_EXT_ACK => i.ext_ack = v != 0,
            NETLINK_GET_STRICT_CHK => i.strict_chk = v != 0,
            _ => return Err(Errno::ENOPROTOOPT),
        }
        Ok(())
    }

    fn autobind_current(&self) -> SysResult<()> {
        let tgid = um_kernel::current::current().map_or(0, |t| t.process.pids.own());
        self.autobind(tgid)
    }

    /// `SOL_NETLINK` options (`netlink_getsockopt`): `len` is the caller's buffer size.
    /// Returns the bytes to copy out and the length to report.
    pub fn getsockopt(&self, name: i32, len: i32) -> SysResult<(Vec<u8>, u32)> {
        if len < 0 {
            return Err(Errno::EINVAL);
        }
        let i = lock(&self.inner);
        let flag = |b: bool| -> SysResult<(Vec<u8>, u32)> {
            if len < 4 {
                return Err(Errno::EINVAL);
            }
            Ok((i32::from(b).to_le_bytes().to_vec(), 4))
        };
        match name {
            NETLINK_PKTINFO => flag(i.pktinfo),
            NETLINK_BROADCAST_ERROR => flag(i.broadcast_error),
            NETLINK_NO_ENOBUFS => flag(i.no_enobufs),
            NETLINK_CAP_ACK => flag(i.cap_ack),
            NETLINK_EXT_ACK => flag(i.ext_ack),
            NETLINK_GET_STRICT_CHK => flag(i.strict_chk),
            NETLINK_LIST_MEMBERSHIPS => {
                // Whole u32 words of the bitmap that fit; the length says how many exist.
                let words = ngroups(self.protocol).div_ceil(32) as usize;
                let mut out = Vec::new();
                for w in 0..words.min(len as usize / 4) {
                    out.extend_from_slice(&((i.groups >> (32 * w)) as u32).to_le_bytes());
                }
                Ok((out, (words * 4) as u32))
            }
            _ => Err(Errno::ENOPROTOOPT),
        }
    }

    /// The line of `/proc/net/netlink` (`netlink_seq_show`).
    fn proc_line(&self) -> String {
        let i = lock(&self.inner);
        format!(
            "{:016x} {:<3} {:<10} {:08x} {:<8} {:<8} {:<5} {:<8} {:<8} {:<8}\n",
            0, self.protocol, i.portid, i.groups as u32, i.rmem, 0, 0, 2, i.drops, self.ino
        )
    }

    /// The next queued datagram, if any (unit tests: no task to block).
    #[cfg(test)]
    fn pop(&self) -> Option<(Vec<u8>, u32, u32)> {
        let mut i = lock(&self.inner);
        let s = i.queue.pop_front()?;
        i.rmem = i.rmem.saturating_sub(s.data.len() + SKB_OVERHEAD);
        Some((s.data, s.portid, s.group))
    }

    /// Drops the socket from the table (`netlink_release`).
    pub fn release(&self) {
        lock(&TABLE).retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), self));
    }
}

/// What a receive got.
pub struct NlRecv {
    pub data: Vec<u8>,
    pub ret: usize,
    pub flags: u32,
    pub name: Vec<u8>,
    pub control: Vec<crate::inet::opt::Cmsg>,
}

/// `ffs`: the lowest set bit, 1-based (0 for none).
fn ffs(x: u32) -> u32 {
    if x == 0 { 0 } else { x.trailing_zeros() + 1 }
}

/// `netlink_group_mask`: the `nl_groups` bit of group `g` (0 past 32).
fn group_mask(g: u32) -> u32 {
    if g == 0 || g > 32 { 0 } else { 1 << (g - 1) }
}

/// The `NLMSG_ERROR` answer to `hdr` (`netlink_ack`): error 0 acknowledges. On error the
/// request is echoed whole unless `cap_ack` (`NLM_F_CAPPED`); with `ext_ack` the error's
/// message follows as `NLMSGERR_ATTR_MSG` (`NLM_F_ACK_TLVS`).
pub fn ack(
    hdr: &Nlmsghdr,
    payload: &[u8],
    err: Option<NlError>,
    cap_ack: bool,
    ext_ack: bool,
    portid: u32,
) -> Vec<u8> {
    let e = err.map_or(0, |e| -e.0.get());
    let mut flags = 0;
    let echo = e != 0 && !cap_ack;
    if !echo {
        flags |= NLM_F_CAPPED;
    }
    let text = err.and_then(|e| e.1).filter(|_| ext_ack);
    if text.is_some() {
        flags |= NLM_F_ACK_TLVS;
    }
    let mut m = Msg::new(NLMSG_ERROR, flags, hdr.nlmsg_seq, portid);
    m.put(&Nlmsgerr {
        error: e,
        msg: *hdr,
    });
    if echo {
        m.raw(payload);
    }
    if let Some(t) = text {
        m.str(NLMSGERR_ATTR_MSG, t);
    }
    m.finish()
}

/// Sends `data` to every member of `group` of `protocol` in `net` (`netlink_broadcast`),
/// except `skip` (the sender).
pub fn broadcast(
    net: &Arc<NetNs>,
    protocol: u32,
    group: u32,
    data: &[u8],
    portid: u32,
    skip: Option<&NetlinkSocket>,
) {
    if group == 0 || group > 64 {
        return;
    }
    for s in live() {
        if s.protocol != protocol
            || !Arc::ptr_eq(&s.net, net)
            || skip.is_some_and(|k| std::ptr::eq(k, Arc::as_ptr(&s)))
        {
            continue;
        }
        if lock(&s.inner).groups & (1u64 << (group - 1)) == 0 {
            continue;
        }
        s.deliver(data.to_vec(), portid, group);
    }
}

/// The registry changed: tell rtnetlink's groups (`rtmsg_ifinfo`, `rtmsg_ifa`, `rtmsg_fib`).
fn notify(net: &Arc<NetNs>, e: &crate::dev::Event) {
    for (group, m) in route::event_messages(net, e) {
        broadcast(net, NETLINK_ROUTE, group, &m, 0, None);
    }
}

/// Boot-time setup: the registry's notifier.
pub fn init() {
    crate::dev::register_notifier(notify);
}

/// `/proc/net/netlink` of `net`.
pub fn proc_netlink(net: &Arc<NetNs>) -> String {
    let mut s = String::from(
        "sk               Eth Pid        Groups   Rmem     Wmem     Dump  Locks    Drops    Inode\n",
    );
    for k in live() {
        if Arc::ptr_eq(&k.net, net) {
            s.push_str(&k.proc_line());
        }
    }
    s
}

/// The open file of a netlink socket; dropping the last one is `netlink_release`.
pub struct NetlinkFile {
    pub sock: Arc<NetlinkSocket>,
}

impl Drop for NetlinkFile {
    fn drop(&mut self) {
        self.sock.release();
    }
}

impl FileOps for NetlinkFile {
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        let r = self.sock.recv(io, buf.len(), 0)?;
        buf[..r.data.len()].copy_from_slice(&r.data);
        Ok(r.ret)
    }

    fn write(&self, io: &IoCtx<'_>, data: &[u8], _off: u64) -> SysResult<usize> {
        let tgid = io.task.process.pids.own();
        let admin = io.task.process.net_capable(crate::inet::opt::CAP_NET_ADMIN);
        self.sock.send(data, None, tgid, admin, 0)
    }

    fn is_stream(&self) -> bool {
        true
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(super::sock_kstat(self.sock.ino, self.sock.owner))
    }

    fn size(&self) -> SysResult<u64> {
        Ok(0)
    }

    fn ioctl(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        match cmd {
            FIONREAD => {
                mem.write(arg, &(self.sock.inq() as i32).to_le_bytes())?;
                Ok(0)
            }
            _ => crate::devioctl::dev_ioctl(io, cmd, arg, mem, false),
        }
    }

    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        self.sock.poll_mask(pt) & (events | POLLERR)
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// `netlink_create`'s checks: the type (`ESOCKTNOSUPPORT`) and protocol
/// (`EPROTONOSUPPORT`).
pub fn check_create(ty: u32, protocol: i32) -> SysResult<()> {
    if ty != SOCK_RAW && ty != SOCK_DGRAM {
        return Err(Errno::ESOCKTNOSUPPORT);
    }
    if protocol < 0 || protocol as u32 >= MAX_LINKS || !protocol_supported(protocol as u32) {
        return Err(Errno::EPROTONOSUPPORT);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
