//! System V message queues (Linux ipc/msg.c; msgget(2), msgop(2), msgctl(2)).
//!
//! A queue is a FIFO of typed messages with a byte limit (`msg_qbytes`, default `msgmnb`).
//! `msgsnd` sleeps while the message does not fit (`msg_fits_inqueue`: the bytes, and at most
//! `msg_qbytes` messages), `msgrcv` while no message matches ([`Search`], Linux `convert_mode`
//! and `find_msg`: any, the first of a type, the first not of a type with `MSG_EXCEPT`, or the
//! first of the lowest type up to `-msgtyp`). Both sleep on the queue's wait queue, woken by
//! every change; removal wakes them with `EIDRM`, a signal with `ERESTARTNOHAND` (restarted
//! without a handler, `EINTR` with one). `MSG_COPY` needs `CONFIG_CHECKPOINT_RESTORE`, which
//! this kernel does not claim: `ENOSYS`, as Linux without it.

use super::{Caller, Ids, check_perms, limits, may_ctl, now};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use um_kernel::wait::WaitQueue;
use um_uapi::abi::ipc::{Ipc64Perm, MSG_COPY, MSG_EXCEPT, MSG_NOERROR, Msginfo, MsqidDs};
use um_uapi::{Errno, SysResult};

/// `MSGMAX`: the largest message.
pub const MSGMAX: i32 = 8192;
/// `MSGMNB`: the default byte limit of a queue.
pub const MSGMNB: i32 = 16384;
/// `MSGMNI`: most queues.
pub const MSGMNI: i32 = 32000;
/// `MSGPOOL` (KiB), `MSGMAP`, `MSGTQL`, `MSGSSZ`, `MSGSEG`: the figures IPC_INFO reports.
const MSGPOOL: i32 = (MSGMNI as i64 * MSGMNB as i64 / 1024) as i32;
const MSGMAP: i32 = MSGMNB;
const MSGTQL: i32 = MSGMNB;
const MSGSSZ: i32 = 16;
const MSGSEG: u16 = 0xffff;

/// One message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Msg {
    pub mtype: i64,
    pub text: Vec<u8>,
}

/// One queue (`struct msg_queue`).
pub struct Queue {
    pub msgs: VecDeque<Msg>,
    pub cbytes: u64,
    pub qbytes: u64,
    pub stime: i64,
    pub rtime: i64,
    pub ctime: i64,
    pub lspid: i32,
    pub lrpid: i32,
    /// Senders and receivers sleep here.
    pub queue: Arc<WaitQueue>,
}

impl Queue {
    /// `msg_fits_inqueue`.
    pub fn fits(&self, size: u64) -> bool {
        self.cbytes + size <= self.qbytes && (self.msgs.len() as u64) < self.qbytes
    }
}

/// How msgrcv picks a message (`SEARCH_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Search {
    Any,
    Equal(i64),
    NotEqual(i64),
    /// The lowest type up to this one.
    LessEqual(i64),
}

/// `convert_mode`: `msgtyp` 0 is any message, `> 0` that type (or, with `MSG_EXCEPT`, any
/// other), `< 0` the lowest type up to `|msgtyp|`.
pub fn convert_mode(msgtyp: i64, flg: u32) -> Search {
    if msgtyp == 0 {
        Search::Any
    } else if msgtyp < 0 {
        Search::LessEqual(if msgtyp == i64::MIN {
            i64::MAX
        } else {
            -msgtyp
        })
    } else if flg & MSG_EXCEPT != 0 {
        Search::NotEqual(msgtyp)
    } else {
        Search::Equal(msgtyp)
    }
}

/// `find_msg`: the index of the message to receive.
pub fn find_msg(msgs: &VecDeque<Msg>, s: Search) -> Option<usize> {
    match s {
        Search::Any => (!msgs.is_empty()).then_some(0),
        Search::Equal(t) => msgs.iter().position(|m| m.mtype == t),
        Search::NotEqual(t) => msgs.iter().position(|m| m.mtype != t),
        Search::LessEqual(t) => {
            let mut best: Option<usize> = None;
            for (i, m) in msgs.iter().enumerate() {
                if m.mtype <= t && best.is_none_or(|b| m.mtype < msgs[b].mtype) {
                    best = Some(i);
                }
            }
            best
        }
    }
}

/// The queue table and the totals MSG_INFO reports.
#[derive(Default)]
pub struct MsgNs {
    pub ids: Ids<Queue>,
    /// Messages in all queues.
    hdrs: u64,
    /// Bytes in all queues.
    bytes: u64,
}

/// The queue table of the caller's IPC namespace ([`um_kernel::ipcns`]).
pub fn table() -> Arc<Mutex<MsgNs>> {
    table_of(&um_kernel::ipcns::current())
}

/// The queue table of IPC namespace `ns` (its objects go when the namespace does).
pub fn table_of(ns: &um_kernel::ipcns::IpcNs) -> Arc<Mutex<MsgNs>> {
    ns.generic::<Mutex<MsgNs>>()
}

/// Locks a queue table.
pub fn lock_ns(t: &Mutex<MsgNs>) -> MutexGuard<'_, MsgNs> {
    t.lock().unwrap_or_else(|e| e.into_inner())
}

/// What one send or receive attempt did.
#[derive(Debug, PartialEq, Eq)]
pub enum Step<T> {
    Done(T),
    /// Would block (the caller sleeps or, with `IPC_NOWAIT`, fails).
    Wait,
}

impl MsgNs {
    /// msgget (`newque`).
    pub fn get(&mut self, c: &Caller, key: i32, flg: u32) -> SysResult<i32> {
        let l = limits();
        self.ids.get_or_create(
            c,
            key,
            flg,
            l.msgmni.load(Ordering::Relaxed).max(0) as u32,
            || {
                Ok(Queue {
                    msgs: VecDeque::new(),
                    cbytes: 0,
                    qbytes: l.msgmnb.load(Ordering::Relaxed).max(0) as u64,
                    stime: 0,
                    rtime: 0,
                    ctime: now(),
                    lspid: 0,
                    lrpid: 0,
                    queue: Arc::new(WaitQueue::new()),
                })
            },
            |_| Ok(()),
        )
    }

    /// The queue's wait queue, and the object check (`EINVAL`).
    pub fn wait_queue(&mut self, id: i32) -> SysResult<Arc<WaitQueue>> {
        Ok(self.ids.get(id)?.1.queue.clone())
    }

    /// One attempt of msgsnd (`do_msgsnd`): `EACCES`, `EIDRM` once the queue is gone (`first`
    /// false: it existed when the call began), else queued or [`Step::Wait`].
    pub fn send(&mut self, c: &Caller, id: i32, msg: &Msg, first: bool) -> SysResult<Step<()>> {
        let q = match self.ids.get(id) {
            Ok((p, q)) => {
                check_perms(c, p, super::S_IWUGO)?;
                q
            }
            Err(e) if first => return Err(e),
            Err(_) => return Err(Errno::EIDRM),
        };
        let size = msg.text.len() as u64;
        if !q.fits(size) {
            return Ok(Step::Wait);
        }
        q.msgs.push_back(msg.clone());
        q.cbytes += size;
        q.lspid = c.pid;
        q.stime = now();
        q.queue.wake_all();
        self.hdrs += 1;
        self.bytes += size;
        Ok(Step::Done(()))
    }

    /// One attempt of msgrcv (`do_msgrcv`): `EACCES`, `EIDRM`, `E2BIG` for a longer message
    /// without `MSG_NOERROR` (it stays queued), else the message (truncated to `bufsz`) or
    /// [`Step::Wait`].
    pub fn receive(
        &mut self,
        c: &Caller,
        id: i32,
        bufsz: u64,
        how: Search,
        flg: u32,
        first: bool,
    ) -> SysResult<Step<Msg>> {
        let q = match self.ids.get(id) {
            Ok((p, q)) => {
                check_perms(c, p, super::S_IRUGO)?;
                q
            }
            Err(e) if first => return Err(e),
            Err(_) => return Err(Errno::EIDRM),
        };
        let Some(i) = find_msg(&q.msgs, how) else {
            return Ok(Step::Wait);
        };
        if q.msgs[i].text.len() as u64 > bufsz && flg & MSG_NOERROR == 0 {
            return Err(Errno::E2BIG);
        }
        let mut m = q.msgs.remove(i).ok_or(Errno::EINVAL)?;
        let size = m.text.len() as u64;
        q.cbytes -= size;
        q.rtime = now();
        q.lrpid = c.pid;
        q.queue.wake_all();
        self.hdrs -= 1;
        self.bytes -= size;
        m.text.truncate(bufsz as usize);
        Ok(Step::Done(m))
    }

    /// IPC_STAT, MSG_STAT, MSG_STAT_ANY (`msgctl_stat`), and the id.
    pub fn stat(
        &mut self,
        c: &Caller,
        id: i32,
        by_idx: bool,
        check: bool,
    ) -> SysResult<(i32, MsqidDs)> {
        let (id, p, q) = self.ids.get_for_stat(c, id, by_idx, check)?;
        Ok((
            id,
            MsqidDs {
                msg_perm: p.to_abi(),
                msg_stime: q.stime,
                msg_rtime: q.rtime,
                msg_ctime: q.ctime,
                msg_cbytes: q.cbytes,
                msg_qnum: q.msgs.len() as u64,
                msg_qbytes: q.qbytes,
                msg_lspid: q.lspid,
                msg_lrpid: q.lrpid,
                ..Default::default()
            },
        ))
    }

    /// IPC_SET (`msgctl_down`): the owner, mode and `msg_qbytes` (above `msgmnb` needs
    /// `CAP_SYS_RESOURCE`: `EPERM`); wakes senders that may fit now.
    pub fn set(&mut self, c: &Caller, id: i32, perm: &Ipc64Perm, qbytes: u64) -> SysResult<()> {
        let (p, q) = self.ids.get(id)?;
        may_ctl(c, p)?;
        let mnb = limits().msgmnb.load(Ordering::Relaxed).max(0) as u64;
        if qbytes > mnb && !c.cap_sys_resource {
            return Err(Errno::EPERM);
        }
        q.qbytes = qbytes;
        p.set(perm);
        q.ctime = now();
        q.queue.wake_all();
        Ok(())
    }

    /// IPC_RMID (`freeque`): the messages go, sleepers get `EIDRM`.
    pub fn rmid(&mut self, c: &Caller, id: i32) -> SysResult<()> {
        let (p, _) = self.ids.get(id)?;
        may_ctl(c, p)?;
        let q = self.ids.remove(id).ok_or(Errno::EINVAL)?;
        self.hdrs -= q.msgs.len() as u64;
        self.bytes -= q.cbytes;
        q.queue.wake_all();
        Ok(())
    }

    /// IPC_INFO / MSG_INFO (`msgctl_info`).
    pub fn info(&self, msg_info: bool) -> (i32, Msginfo) {
        let l = limits();
        let mut i = Msginfo {
            msgmni: l.msgmni.load(Ordering::Relaxed),
            msgmax: l.msgmax.load(Ordering::Relaxed),
            msgmnb: l.msgmnb.load(Ordering::Relaxed),
            msgssz: MSGSSZ,
            msgseg: MSGSEG,
            msgpool: MSGPOOL,
            msgmap: MSGMAP,
            msgtql: MSGTQL,
            pad: 0,
        };
        if msg_info {
            i.msgpool = self.ids.in_use() as i32;
            i.msgmap = self.hdrs as i32;
            i.msgtql = self.bytes as i32;
        }
        (self.ids.max_idx(), i)
    }

    /// `/proc/sysvipc/msg` (`sysvipc_msg_proc_show`).
    pub fn proc_text(&self) -> String {
        let mut s = String::from(
            "       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid      stime      rtime      ctime\n",
        );
        for (id, p, q) in self.ids.iter() {
            s.push_str(&format!(
                "{:10} {:10}  {:4o}  {:10} {:10} {:5} {:5} {:5} {:5} {:5} {:5} {:10} {:10} {:10}\n",
                p.key,
                id,
                p.mode,
                q.cbytes,
                q.msgs.len(),
                q.lspid,
                q.lrpid,
                p.uid,
                p.gid,
                p.cuid,
                p.cgid,
                q.stime,
                q.rtime,
                q.ctime
            ));
        }
        s
    }
}

/// The flag checks of msgrcv before the queue (`do_msgrcv`): `MSG_COPY` with `MSG_EXCEPT` or
/// without `IPC_NOWAIT` is `EINVAL`, otherwise `ENOSYS` (no `CONFIG_CHECKPOINT_RESTORE`).
pub fn check_rcv_flags(flg: u32) -> SysResult<()> {
    if flg & MSG_COPY != 0 {
        if flg & MSG_EXCEPT != 0 || flg & um_uapi::abi::ipc::IPC_NOWAIT == 0 {
            return Err(Errno::EINVAL);
        }
        return Err(Errno::ENOSYS);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(types: &[i64]) -> VecDeque<Msg> {
        types
            .iter()
            .map(|&t| Msg {
                mtype: t,
                text: vec![t as u8],
            })
            .collect()
    }

    #[test]
    fn type_selection() {
        let m = q(&[3, 1, 2, 1]);
        assert_eq!(find_msg(&m, convert_mode(0, 0)), Some(0));
        assert_eq!(find_msg(&m, convert_mode(2, 0)), Some(2));
        assert_eq!(find_msg(&m, convert_mode(3, MSG_EXCEPT)), Some(1));
        assert_eq!(find_msg(&m, convert_mode(5, 0)), None);
        // Lowest type up to 2: the first message of type 1.
        assert_eq!(find_msg(&m, convert_mode(-2, 0)), Some(1));
        assert_eq!(find_msg(&m, convert_mode(-5, 0)), Some(1));
        assert_eq!(find_msg(&q(&[3, 4]), convert_mode(-2, 0)), None);
        assert_eq!(convert_mode(i64::MIN, 0), Search::LessEqual(i64::MAX));
        assert_eq!(convert_mode(-4, MSG_EXCEPT), Search::LessEqual(4));
        assert_eq!(find_msg(&VecDeque::new(), Search::Any), None);
    }

    #[test]
    fn send_receive_limits() {
        let mut ns = MsgNs::default();
        let c = Caller {
            pid: 4,
            ..Default::default()
        };
        let id = ns.get(&c, 0, 0o600).unwrap();
        ns.set(
            &c,
            id,
            &Ipc64Perm {
                mode: 0o600,
                ..Default::default()
            },
            10,
        )
        .unwrap();
        let m = |t: i64, n: usize| Msg {
            mtype: t,
            text: vec![0; n],
        };
        assert_eq!(ns.send(&c, id, &m(1, 6), true), Ok(Step::Done(())));
        assert_eq!(
            ns.send(&c, id, &m(2, 6), true),
            Ok(Step::Wait),
            "16 > qbytes 10"
        );
        assert_eq!(ns.send(&c, id, &m(2, 4), true), Ok(Step::Done(())));
        assert_eq!(ns.info(true).1.msgmap, 2);
        assert_eq!(
            ns.receive(&c, id, 5, Search::Any, 0, true),
            Err(Errno::E2BIG)
        );
        let got = ns
            .receive(&c, id, 5, Search::Any, MSG_NOERROR, true)
            .unwrap();
        assert_eq!(
            got,
            Step::Done(Msg {
                mtype: 1,
                text: vec![0; 5]
            })
        );
        assert_eq!(
            ns.receive(&c, id, 100, Search::Equal(7), 0, true),
            Ok(Step::Wait)
        );
        let (_, st) = ns.stat(&c, id, false, true).unwrap();
        assert_eq!((st.msg_qnum, st.msg_cbytes, st.msg_lrpid), (1, 4, 4));
        let other = Caller {
            pid: 5,
            euid: 1000,
            ..Default::default()
        };
        assert_eq!(
            ns.set(&c, id, &Ipc64Perm::default(), 1 << 20),
            Err(Errno::EPERM),
            "qbytes above msgmnb without CAP_SYS_RESOURCE"
        );
        assert_eq!(ns.send(&other, id, &m(1, 1), true), Err(Errno::EACCES));
        assert_eq!(ns.rmid(&other, id), Err(Errno::EPERM));
        ns.rmid(&c, id).unwrap();
        assert_eq!(ns.send(&c, id, &m(1, 1), false), Err(Errno::EIDRM));
        assert_eq!(ns.send(&c, id, &m(1, 1), true), Err(Errno::EINVAL));
        assert_eq!((ns.hdrs, ns.bytes), (0, 0));
    }

    #[test]
    fn copy_flags() {
        use um_uapi::abi::ipc::IPC_NOWAIT;
        assert_eq!(check_rcv_flags(MSG_COPY), Err(Errno::EINVAL));
        assert_eq!(
            check_rcv_flags(MSG_COPY | IPC_NOWAIT | MSG_EXCEPT),
            Err(Errno::EINVAL)
        );
        assert_eq!(check_rcv_flags(MSG_COPY | IPC_NOWAIT), Err(Errno::ENOSYS));
        assert_eq!(check_rcv_flags(MSG_EXCEPT), Ok(()));
    }
}
