//! The TCP side of [`super::InetSocket`] (Linux `net/ipv4/tcp.c`, `tcp_ipv4.c`,
//! `inet_connection_sock.c`): connecting to a listener, accepting, and moving stream bytes.
//!
//! A connect finds the best listener for the destination in the bind table and queues a new
//! established socket (the server's end) on it; the two ends point at each other. A send
//! appends to the peer's receive queue while it holds less than the peer's receive buffer plus
//! the sender's send buffer, waiting on the peer's queue for room; a receive takes from its own
//! queue (waking the sender) and sees EOF after the peer's FIN once the queue is empty.

use super::super::{MSG_PEEK, MSG_TRUNC, MSG_WAITALL};
use super::addr::match_score;
use super::opt::Proto;
use super::{InetSocket, Recv, State, ports, sk_wait};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use um_kernel::task::lock;
use um_kernel::wait::IoCtx;
use um_uapi::{Errno, SysResult};

/// `MSG_OOB`.
const MSG_OOB: u32 = super::super::MSG_OOB;

/// How far a stream receive got.
enum Step {
    /// Return this many bytes.
    Done(usize),
    /// This many so far; wait for more.
    More(usize),
    Fail(Errno),
}

/// Copies `dst.len()` bytes of `q` from `start` (the queue is two slices).
fn copy_out(q: &VecDeque<u8>, start: usize, dst: &mut [u8]) {
    let (a, b) = q.as_slices();
    let mut pos = start;
    let mut done = 0;
    for part in [a, b] {
        if pos >= part.len() {
            pos -= part.len();
            continue;
        }
        let k = (part.len() - pos).min(dst.len() - done);
        dst[done..done + k].copy_from_slice(&part[pos..pos + k]);
        done += k;
        pos = 0;
        if done == dst.len() {
            break;
        }
    }
}

impl InetSocket {
    /// The best listener for `dst`.
    pub(super) fn find_listener(&self, dst: SocketAddr) -> Option<Arc<InetSocket>> {
        let t = lock(ports());
        let mut best: Option<(u32, Arc<InetSocket>)> = None;
        for s in self.others_on(&t, dst.port()) {
            let score = {
                let i = lock(&s.inner);
                if i.state != State::Listen || i.dead {
                    continue;
                }
                let Some(l) = i.local else { continue };
                match match_score(l.ip(), i.opts.v6only, dst.ip()) {
                    Some(sc) => sc,
                    None => continue,
                }
            };
            if best.as_ref().is_none_or(|(b, _)| score > *b) {
                best = Some((score, s));
            }
        }
        best.map(|(_, s)| s)
    }

    pub(super) fn connect_tcp(&self, io: &IoCtx<'_>, dst: SocketAddr) -> SysResult<()> {
        let listener = self.find_listener(dst).ok_or(Errno::ECONNREFUSED)?;
        let me = self.me();
        let src = self.local_addr();
        let timeo = lock(&self.inner).opts.sndtimeo;
        let nonblock = io.nonblock;
        // A blocking connect waits while the accept queue is full (the SYN would be dropped and
        // sent again); a non-blocking one queues past it.
        let embryo = sk_wait(
            &IoCtx {
                task: io.task,
                nonblock: false,
                flags: 0,
            },
            if nonblock { None } else { timeo },
            &[&listener.wq],
            || {
                let mut l = lock(&listener.inner);
                if l.state != State::Listen || l.dead {
                    return Some(Err(Errno::ECONNREFUSED));
                }
                if l.accept_q.len() > l.backlog && !nonblock {
                    return None;
                }
                let e = InetSocket::with_opts(
                    Proto::Tcp,
                    l.family,
                    listener.owner,
                    l.opts.clone_for_accept(),
                    listener.net.clone(),
                );
                {
                    let mut ei = lock(&e.inner);
                    ei.state = State::Established;
                    ei.local = Some(dst);
                    ei.remote = Some(src);
                    ei.peer = Some(me.clone());
                }
                l.accept_q.push_back(e.clone());
                Some(Ok(e))
            },
        )
        .map_err(|e| {
            if e == Errno::EAGAIN {
                Errno::ETIMEDOUT
            } else {
                e
            }
        })??;
        embryo.inherit_port(dst.port());
        listener.wq.wake_all();
        let mut i = lock(&self.inner);
        i.state = State::Established;
        i.remote = Some(dst);
        i.peer = Some(embryo);
        i.err = None;
        i.rcv_shutdown = false;
        i.snd_shutdown = false;
        i.fin = false;
        drop(i);
        self.wq.wake_all();
        Ok(())
    }

    /// `accept` (`inet_csk_accept`).
    pub fn accept(&self, io: &IoCtx<'_>) -> SysResult<Arc<InetSocket>> {
        if self.proto == Proto::Udp {
            return Err(Errno::EOPNOTSUPP);
        }
        let timeo = lock(&self.inner).opts.rcvtimeo;
        let s = sk_wait(io, timeo, &[&self.wq], || {
            let mut i = lock(&self.inner);
            self.fill(&mut i);
            if i.state != State::Listen {
                return Some(Err(Errno::EINVAL));
            }
            i.accept_q.pop_front().map(Ok)
        })??;
        if s.take_hash() {
            // A connection from a device: it shares its listener's port from now on.
            let port = s.local_addr().port();
            s.inherit_port(port);
        }
        self.wq.wake_all();
        Ok(s)
    }

    pub(super) fn send_tcp(&self, io: &IoCtx<'_>, data: &[u8]) -> SysResult<usize> {
        let (peer, sndbuf, timeo) = {
            let mut i = lock(&self.inner);
            if i.state != State::Established {
                // sk_stream_wait_connect: a pending error first (a refused connect), then EPIPE.
                if let Some(e) = i.err.take() {
                    return Err(e);
                }
                return Err(Errno::EPIPE);
            }
            if i.err.is_some() || i.snd_shutdown {
                // sk_stream_error: a pending error is reported (and consumed) first.
                return Err(i.err.take().unwrap_or(Errno::EPIPE));
            }
            (
                i.peer.clone().ok_or(Errno::EPIPE)?,
                i.opts.sndbuf.max(0) as usize,
                i.opts.sndtimeo,
            )
        };
        if data.is_empty() {
            return Ok(0);
        }
        let mut done = 0usize;
        while done < data.len() {
            let r = sk_wait(io, timeo, &[&peer.wq, &self.wq], || {
                if let Some(e) = lock(&self.inner).err.take() {
                    return Some(Err(e));
                }
                let mut p = lock(&peer.inner);
                if p.dead {
                    return Some(Ok(None));
                }
                let cap = p.opts.rcvbuf.max(0) as usize + sndbuf;
                let room = cap.saturating_sub(p.stream.len());
                if room == 0 {
                    return None;
                }
                let n = room.min(data.len() - done);
                p.stream.extend(&data[done..done + n]);
                Some(Ok(Some(n)))
            });
            match r {
                Ok(Ok(Some(n))) => {
                    peer.wq.wake_all();
                    done += n;
                }
                Ok(Ok(None)) => {
                    // The peer is closed: what we send draws a reset (EPIPE after its FIN),
                    // so this write "succeeds" and the next one fails.
                    let mut i = lock(&self.inner);
                    i.err = Some(Errno::EPIPE);
                    i.state = State::Closed;
                    i.rcv_shutdown = true;
                    i.snd_shutdown = true;
                    drop(i);
                    self.wq.wake_all();
                    return Ok(data.len());
                }
                Ok(Err(e)) | Err(e) => return if done > 0 { Ok(done) } else { Err(e) },
            }
        }
        Ok(done)
    }

    pub(super) fn recv_tcp(&self, io: &IoCtx<'_>, buf: &mut [u8], flags: u32) -> SysResult<Recv> {
        if flags & MSG_OOB != 0 {
            // No urgent data is ever pending.
            return Err(Errno::EINVAL);
        }
        let peek = flags & MSG_PEEK != 0;
        let discard = flags & MSG_TRUNC != 0;
        let (timeo, lowat, state) = {
            let i = lock(&self.inner);
            (i.opts.rcvtimeo, i.opts.rcvlowat, i.state)
        };
        if state == State::Listen {
            return Err(Errno::ENOTCONN);
        }
        let len = buf.len();
        if len == 0 {
            return Ok(Recv::default());
        }
        let target = if flags & MSG_WAITALL != 0 {
            len
        } else {
            (lowat.max(1) as usize).min(len)
        };
        let mut copied = 0usize;
        loop {
            let r = sk_wait(io, timeo, &[&self.wq], || {
                let mut i = lock(&self.inner);
                self.fill(&mut i);
                let start = if peek { copied } else { 0 };
                let n = i.stream.len().saturating_sub(start).min(len - copied);
                if n > 0 {
                    if !discard {
                        copy_out(&i.stream, start, &mut buf[copied..copied + n]);
                    }
                    if !peek {
                        i.stream.drain(..n);
                    }
                }
                let total = copied + n;
                let ended =
                    i.fin || i.err.is_some() || i.rcv_shutdown || i.state != State::Established;
                if total >= target || (total > 0 && ended) {
                    return Some(Step::Done(total));
                }
                if n > 0 {
                    return Some(Step::More(total));
                }
                if total > 0 {
                    return None;
                }
                if i.fin {
                    return Some(Step::Done(0));
                }
                if let Some(e) = i.err.take() {
                    return Some(Step::Fail(e));
                }
                if i.rcv_shutdown {
                    return Some(Step::Done(0));
                }
                if i.link.connecting() {
                    return None;
                }
                if i.state != State::Established {
                    return Some(Step::Fail(Errno::ENOTCONN));
                }
                None
            });
            let done = |total: usize| Recv {
                n: if discard { 0 } else { total },
                full_len: total,
                ..Default::default()
            };
            match r {
                Ok(Step::Done(total)) => {
                    if !peek && total > 0 {
                        self.wq.wake_all();
                    }
                    return Ok(done(total));
                }
                // Progress below the target (MSG_WAITALL, SO_RCVLOWAT): keep it, wait for more.
                Ok(Step::More(total)) => {
                    if !peek {
                        self.wq.wake_all();
                    }
                    copied = total;
                }
                Ok(Step::Fail(e)) => return Err(e),
                Err(_) if copied > 0 => return Ok(done(copied)),
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_copy_spans_both_halves() {
        let mut q: VecDeque<u8> = VecDeque::with_capacity(8);
        q.extend([0u8; 6]);
        q.drain(..5);
        q.extend(1..=6u8); // wraps around the ring
        let mut out = [0u8; 4];
        copy_out(&q, 2, &mut out);
        assert_eq!(out, [2, 3, 4, 5]);
        let mut all = vec![0u8; q.len()];
        copy_out(&q, 0, &mut all);
        assert_eq!(all, vec![0, 1, 2, 3, 4, 5, 6]);
    }
}
