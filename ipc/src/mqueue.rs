//! POSIX message queues (Linux ipc/mqueue.c, mq_overview(7)): the queues of each IPC
//! namespace, the `mqueue` file system that shows them, and the limits in
//! `/proc/sys/fs/mqueue`. The syscalls are in [`crate::mqsys`].
//!
//! A [`Queue`] holds its messages by priority, highest first, FIFO within a priority
//! (`msg_insert`/`msg_get`'s tree), with the attributes fixed at creation (`mq_maxmsg`,
//! `mq_msgsize`), the byte count `QSIZE` and the one registered notification. Names live in
//! the namespace's [`MqNs`] (kept in the namespace's generic slot, so a queue made in one IPC
//! namespace is not seen in another); a queue outlives its name while descriptors hold it,
//! as the inode of an unlinked file does. Senders and receivers sleep on the queue's one
//! [`WaitQueue`] and retry (Linux hands messages directly to the first waiter, `pipelined_send`;
//! the order of several waiters may differ here, the results do not). A descriptor is an
//! [`MqFile`]: readable and writable by poll (`mqueue_poll_file`), and `read` gives the
//! `QSIZE:... NOTIFY:... SIGNO:... NOTIFY_PID:...` line (`mqueue_read_file`).
//!
//! The limits (`msg_max` 10, `msgsize_max` 8192, `queues_max` 256, `msg_default`,
//! `msgsize_default`) are system-wide here, like the SysV ones ([`crate::Limits`]); Linux
//! keeps them per namespace. `RLIMIT_MSGQUEUE` is charged per real uid as Linux does.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_kernel::task::{Process, lock};
use um_kernel::vfs::{DirEntry, FileOps, Inode, Kstat, Owner, mode};
use um_kernel::wait::{IoCtx, PollTable, WaitQueue};
use um_uapi::abi::probe::MqAttr;
use um_uapi::{Errno, SysResult};

/// `DFLT_MSGMAX`, `DFLT_MSGSIZEMAX`, `DFLT_QUEUESMAX`, `DFLT_MSG`, `DFLT_MSGSIZE`
/// (include/linux/ipc_namespace.h).
pub static MSG_MAX: AtomicI64 = AtomicI64::new(10);
pub static MSGSIZE_MAX: AtomicI64 = AtomicI64::new(8192);
pub static QUEUES_MAX: AtomicI64 = AtomicI64::new(256);
pub static MSG_DEFAULT: AtomicI64 = AtomicI64::new(10);
pub static MSGSIZE_DEFAULT: AtomicI64 = AtomicI64::new(8192);
/// `HARD_MSGMAX` and `HARD_MSGSIZEMAX`: what CAP_SYS_RESOURCE may ask for and the sysctls take.
pub const HARD_MSGMAX: i64 = 65536;
pub const HARD_MSGSIZEMAX: i64 = 16 * 1024 * 1024;
/// `sizeof(struct msg_msg)` and `sizeof(struct posix_msg_tree_node)` on 64-bit Linux: what a
/// queue is charged against RLIMIT_MSGQUEUE besides its messages.
const MSG_MSG_SIZE: u64 = 48;
const TREE_NODE_SIZE: u64 = 40;
/// `DIRENT_SIZE` and `FILENT_SIZE`: the sizes the file system reports.
const DIRENT_SIZE: i64 = 20;
const FILENT_SIZE: i64 = 80;

/// The bytes charged to a queue's creator (`mqueue_get_inode`'s `mq_bytes`).
fn charge(maxmsg: i64, msgsize: i64) -> u64 {
    let m = maxmsg as u64;
    m * MSG_MSG_SIZE + m.min(32768) * TREE_NODE_SIZE + m * msgsize as u64
}

/// Bytes charged per uid (Linux `user_struct.mq_bytes`).
fn user_bytes() -> &'static Mutex<HashMap<u32, u64>> {
    static B: OnceLock<Mutex<HashMap<u32, u64>>> = OnceLock::new();
    B.get_or_init(Default::default)
}

/// The registered notification (`info->notify`, `notify_owner`).
#[derive(Clone)]
pub struct Notify {
    pub owner: Weak<Process>,
    /// `SIGEV_NONE` or `SIGEV_SIGNAL`.
    pub kind: i32,
    pub signo: i32,
    pub value: u64,
}

/// A queue's changing state.
#[derive(Default)]
pub struct QState {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub attr: MqAttr,
    /// Messages by priority (highest first when iterated in reverse).
    msgs: BTreeMap<u32, VecDeque<Vec<u8>>>,
    /// `info->qsize`: the bytes of the queued messages.
    pub qsize: u64,
    pub notify: Option<Notify>,
    /// Receivers sleeping in mq_timedreceive: a message that arrives then goes to one of
    /// them, and registered notification is not sent (mq_notify(3)).
    pub receivers: usize,
    pub atime: (i64, i64),
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

/// One message queue (Linux `struct mqueue_inode_info`).
pub struct Queue {
    pub st: Mutex<QState>,
    /// Woken by every send, receive and attribute change.
    pub wq: WaitQueue,
    pub ino: u64,
    fs: Arc<MqNs>,
    charged: (u32, u64),
}

impl Drop for Queue {
    /// `mqueue_evict_inode`: the queue's bytes and its count go back.
    fn drop(&mut self) {
        self.fs.count.fetch_sub(1, Ordering::Relaxed);
        let mut b = lock(user_bytes());
        if let Some(v) = b.get_mut(&self.charged.0) {
            *v = v.saturating_sub(self.charged.1);
        }
    }
}

fn now() -> (i64, i64) {
    um_os_linux::host::clock_gettime(libc::CLOCK_REALTIME).unwrap_or((0, 0))
}

impl QState {
    /// `msg_insert`.
    pub fn insert(&mut self, prio: u32, m: Vec<u8>) {
        self.qsize += m.len() as u64;
        self.attr.mq_curmsgs += 1;
        self.msgs.entry(prio).or_default().push_back(m);
    }

    /// `msg_get`: the oldest message of the highest priority.
    pub fn take(&mut self) -> Option<(u32, Vec<u8>)> {
        let mut e = self.msgs.last_entry()?;
        let prio = *e.key();
        let m = e.get_mut().pop_front()?;
        if e.get().is_empty() {
            e.remove();
        }
        self.qsize -= m.len() as u64;
        self.attr.mq_curmsgs -= 1;
        Some((prio, m))
    }

    /// The notification that sending into an empty queue fires, if any (`__do_notify`);
    /// it is unregistered then.
    pub fn take_notify(&mut self) -> Option<Notify> {
        if self.attr.mq_curmsgs != 1 || self.receivers > 0 {
            return None;
        }
        let live = self.live_notify().is_some();
        self.notify.take().filter(|_| live)
    }

    /// The registration, unless its owner has exited (its descriptors were closed then,
    /// which unregisters it: `mqueue_flush_file`).
    pub fn live_notify(&self) -> Option<&Notify> {
        self.notify.as_ref().filter(|n| {
            n.owner
                .upgrade()
                .is_some_and(|o| !o.zombie.load(Ordering::Acquire) && lock(&o.exit).is_none())
        })
    }

    /// The status line of `read` (`mqueue_read_file`), pids as `reader` sees them.
    fn notify_line(&self, reader: &Process) -> String {
        let (kind, signo, pid) = match self.live_notify() {
            Some(n) => (
                n.kind,
                if n.kind == um_uapi::abi::signal::SIGEV_SIGNAL {
                    n.signo
                } else {
                    0
                },
                n.owner
                    .upgrade()
                    .map_or(0, |o| um_kernel::pidns::tgid_seen_by(&o, reader)),
            ),
            None => (0, 0, 0),
        };
        format!(
            "QSIZE:{:<10} NOTIFY:{:<5} SIGNO:{:<5} NOTIFY_PID:{:<6}\n",
            self.qsize, kind, signo, pid
        )
    }
}

/// The queues of one IPC namespace, and the root of its `mqueue` file system.
pub struct MqNs {
    pub names: Mutex<BTreeMap<Vec<u8>, Arc<Queue>>>,
    /// Live queues, named or not (`mq_queues_count`).
    count: AtomicUsize,
    fs_id: u64,
    root_ino: u64,
    me: Weak<MqNs>,
}

/// The slot kept in the namespace (its `generic` store wants `Default`).
#[derive(Default)]
pub struct MqSlot(OnceLock<Arc<MqNs>>);

/// The queues of the caller's IPC namespace.
pub fn ns() -> Arc<MqNs> {
    ns_of(&um_kernel::ipcns::current())
}

/// The queues of IPC namespace `ns`.
pub fn ns_of(ns: &um_kernel::ipcns::IpcNs) -> Arc<MqNs> {
    ns.generic::<MqSlot>()
        .0
        .get_or_init(|| {
            Arc::new_cyclic(|me| MqNs {
                names: Mutex::new(BTreeMap::new()),
                count: AtomicUsize::new(0),
                fs_id: um_kernel::vfs::new_fs_id(),
                root_ino: next_ino(),
                me: me.clone(),
            })
        })
        .clone()
}

fn next_ino() -> u64 {
    static INO: AtomicU64 = AtomicU64::new(2);
    INO.fetch_add(1, Ordering::Relaxed)
}

/// Who creates a queue.
pub struct Creator {
    pub uid: u32,
    pub euid: u32,
    pub egid: u32,
    pub cap_sys_resource: bool,
    pub rlimit_msgqueue: u64,
}

/// `mq_attr_ok` (in `mqueue_get_inode`): the attributes a new queue asks for, or the
/// defaults: `EINVAL` for a non-positive count or size or one above the limits (the hard
/// ones with CAP_SYS_RESOURCE), `EOVERFLOW` if their product overflows.
pub fn check_attr(attr: Option<&MqAttr>, cap_sys_resource: bool) -> SysResult<(i64, i64)> {
    let Some(a) = attr else {
        return Ok((
            MSG_DEFAULT.load(Ordering::Relaxed),
            MSGSIZE_DEFAULT.load(Ordering::Relaxed),
        ));
    };
    if a.mq_maxmsg <= 0 || a.mq_msgsize <= 0 {
        return Err(Errno::EINVAL);
    }
    let (mm, ms) = if cap_sys_resource {
        (HARD_MSGMAX, HARD_MSGSIZEMAX)
    } else {
        (
            MSG_MAX.load(Ordering::Relaxed),
            MSGSIZE_MAX.load(Ordering::Relaxed),
        )
    };
    if a.mq_maxmsg > mm || a.mq_msgsize > ms {
        return Err(Errno::EINVAL);
    }
    if (a.mq_msgsize as u64)
        .checked_mul(a.mq_maxmsg as u64)
        .is_none()
    {
        return Err(Errno::EOVERFLOW);
    }
    Ok((a.mq_maxmsg, a.mq_msgsize))
}

impl MqNs {
    /// `mqueue_create_attr`: a new queue named `name` (the caller checked it is free):
    /// `ENOSPC` past `queues_max` without CAP_SYS_RESOURCE, `EMFILE` past the creator's
    /// RLIMIT_MSGQUEUE.
    pub fn create(
        &self,
        name: &[u8],
        perm: u32,
        attr: (i64, i64),
        who: &Creator,
    ) -> SysResult<Arc<Queue>> {
        let max = QUEUES_MAX.load(Ordering::Relaxed).max(0) as usize;
        if self.count.load(Ordering::Relaxed) >= max && !who.cap_sys_resource {
            return Err(Errno::ENOSPC);
        }
        let bytes = charge(attr.0, attr.1);
        {
            let mut b = lock(user_bytes());
            let used = b.entry(who.uid).or_default();
            if used
                .checked_add(bytes)
                .is_none_or(|t| t > who.rlimit_msgqueue)
            {
                return Err(Errno::EMFILE);
            }
            *used += bytes;
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let t = now();
        let q = Arc::new(Queue {
            st: Mutex::new(QState {
                mode: perm & 0o7777,
                uid: who.euid,
                gid: who.egid,
                attr: MqAttr {
                    mq_maxmsg: attr.0,
                    mq_msgsize: attr.1,
                    ..Default::default()
                },
                atime: t,
                mtime: t,
                ctime: t,
                ..Default::default()
            }),
            wq: WaitQueue::new(),
            ino: next_ino(),
            fs: self
                .me
                .upgrade()
                .expect("the namespace's queues outlive their calls"),
            charged: (who.uid, bytes),
        });
        lock(&self.names).insert(name.to_vec(), q.clone());
        Ok(q)
    }
}

/// `inode_permission` for a queue: owner, group or other bits of `mode`, or
/// CAP_DAC_OVERRIDE.
pub fn permitted(p: &Process, st: &QState, want: u32) -> bool {
    use um_uapi::abi::capability::CAP_DAC_OVERRIDE;
    if p.capable(CAP_DAC_OVERRIDE) {
        return true;
    }
    let cr = *lock(&p.creds);
    let bits = if cr.euid == st.uid {
        st.mode >> 6
    } else if cr.egid == st.gid || lock(&p.groups).contains(&st.gid) {
        st.mode >> 3
    } else {
        st.mode
    };
    bits & want == want
}

/// `lookup_one_len`'s checks on a queue name: `EACCES` for an empty name, `.`, `..` or one
/// with a `/`; `ENAMETOOLONG` past `NAME_MAX`.
pub fn check_name(name: &[u8]) -> SysResult<()> {
    if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') {
        return Err(Errno::EACCES);
    }
    if name.len() > 255 {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(())
}

/// An open queue (`mqueue_file_operations`).
pub struct MqFile {
    pub queue: Arc<Queue>,
}

impl MqFile {
    /// The queue behind an open file, if it is one.
    pub fn of(f: &um_kernel::vfs::OpenFile) -> Option<&Arc<Queue>> {
        f.ops
            .as_any()
            .and_then(|a| a.downcast_ref::<MqFile>())
            .map(|m| &m.queue)
    }
}

fn queue_kstat(fs: &MqNs, q: &Queue) -> Kstat {
    let st = lock(&q.st);
    Kstat {
        dev: fs.fs_id,
        ino: q.ino,
        mode: mode::S_IFREG | st.mode,
        nlink: 1,
        uid: st.uid,
        gid: st.gid,
        rdev: 0,
        size: FILENT_SIZE,
        blksize: um_mm::page_size() as i64,
        blocks: 0,
        atime: st.atime,
        mtime: st.mtime,
        ctime: st.ctime,
    }
}

impl FileOps for MqFile {
    /// `mqueue_read_file`: the status line, from the file position on.
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let line = lock(&self.queue.st).notify_line(&io.task.process);
        let b = line.as_bytes();
        let off = (off as usize).min(b.len());
        let n = buf.len().min(b.len() - off);
        buf[..n].copy_from_slice(&b[off..off + n]);
        Ok(n)
    }

    fn write(&self, _io: &IoCtx<'_>, _data: &[u8], _off: u64) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(queue_kstat(&self.queue.fs, &self.queue))
    }

    /// `mqueue_poll_file`: readable with a message queued, writable with room for one.
    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        use um_uapi::abi::poll::{POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
        if let Some(pt) = pt {
            pt.wait_on(&self.queue.wq);
        }
        let st = lock(&self.queue.st);
        let mut r = 0;
        if st.attr.mq_curmsgs > 0 {
            r |= POLLIN | POLLRDNORM;
        }
        if st.attr.mq_curmsgs < st.attr.mq_maxmsg {
            r |= POLLOUT | POLLWRNORM;
        }
        events & r
    }

    fn can_poll(&self) -> bool {
        true
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

/// The root directory of a namespace's `mqueue` file system.
pub struct MqRoot(Arc<MqNs>);

/// A queue as a file of the `mqueue` file system.
pub struct MqInode(Arc<Queue>);

impl Inode for MqRoot {
    fn stat(&self) -> SysResult<Kstat> {
        let n = lock(&self.0.names).len() as i64;
        let t = now();
        Ok(Kstat {
            dev: self.0.fs_id,
            ino: self.0.root_ino,
            mode: mode::S_IFDIR | 0o1777,
            nlink: 2,
            size: 2 * DIRENT_SIZE + n * DIRENT_SIZE,
            blksize: um_mm::page_size() as i64,
            atime: t,
            mtime: t,
            ctime: t,
            ..Default::default()
        })
    }

    fn lookup(&self, name: &[u8]) -> SysResult<Arc<dyn Inode>> {
        let q = lock(&self.0.names)
            .get(name)
            .cloned()
            .ok_or(Errno::ENOENT)?;
        Ok(Arc::new(MqInode(q)))
    }

    fn open(&self, _io: &IoCtx<'_>, _flags: u32) -> SysResult<Box<dyn FileOps>> {
        Ok(Box::new(MqDir(self.0.clone())))
    }

    /// `mqueue_create`: a queue with the default attributes (open(O_CREAT) in the mount).
    fn create(&self, name: &[u8], perm: u32, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        check_name(name)?;
        if lock(&self.0.names).contains_key(name) {
            return Err(Errno::EEXIST);
        }
        let who = Creator {
            uid: owner.uid,
            euid: owner.uid,
            egid: owner.gid,
            cap_sys_resource: false,
            rlimit_msgqueue: um_uapi::abi::probe::MQ_BYTES_MAX,
        };
        let q = self.0.create(name, perm, check_attr(None, false)?, &who)?;
        Ok(Arc::new(MqInode(q)))
    }

    /// `mqueue_unlink`: the name goes; the queue stays while descriptors hold it.
    fn unlink(&self, name: &[u8]) -> SysResult<()> {
        lock(&self.0.names)
            .remove(name)
            .map(|_| ())
            .ok_or(Errno::ENOENT)
    }

    fn fs_id(&self) -> u64 {
        self.0.fs_id
    }

    fn id(&self) -> u64 {
        self.0.root_ino
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Inode for MqInode {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(queue_kstat(&self.0.fs, &self.0))
    }

    fn open(&self, _io: &IoCtx<'_>, _flags: u32) -> SysResult<Box<dyn FileOps>> {
        Ok(Box::new(MqFile {
            queue: self.0.clone(),
        }))
    }

    fn fs_id(&self) -> u64 {
        self.0.fs.fs_id
    }

    fn id(&self) -> u64 {
        self.0.ino
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// An open root directory.
struct MqDir(Arc<MqNs>);

impl FileOps for MqDir {
    fn stat(&self) -> SysResult<Kstat> {
        MqRoot(self.0.clone()).stat()
    }

    fn readdir(&self) -> SysResult<Vec<DirEntry>> {
        let mut out = vec![
            DirEntry {
                ino: self.0.root_ino,
                kind: 4,
                name: b".".to_vec(),
            },
            DirEntry {
                ino: self.0.root_ino,
                kind: 4,
                name: b"..".to_vec(),
            },
        ];
        for (name, q) in lock(&self.0.names).iter() {
            out.push(DirEntry {
                ino: q.ino,
                kind: 8,
                name: name.clone(),
            });
        }
        Ok(out)
    }
}

/// Registers the `mqueue` file system type (each mount shows the mounting process's IPC
/// namespace, `mqueue_get_tree`) and `/proc/sys/fs/mqueue`.
pub fn register() {
    um_fs::mount::register_fs(
        "mqueue",
        Arc::new(|_flags, _data| {
            let ns = ns();
            Ok(Arc::new(MqRoot(ns)) as Arc<dyn Inode>)
        }),
    );
    um_fs::procfs::registry::register_sysctl("sys/fs", |fs| {
        use um_fs::procfs::ProcInode;
        let knob = |v: &'static AtomicI64, min: i64, max: i64| {
            ProcInode::file_rw(
                fs,
                move |_, _| Ok(format!("{}\n", v.load(Ordering::Relaxed)).into_bytes()),
                move |_, io, data| {
                    if lock(&io.task.process.creds).euid != 0 {
                        return Err(Errno::EPERM);
                    }
                    let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
                    let x = s.trim().parse::<i64>().map_err(|_| Errno::EINVAL)?;
                    if !(min..=max).contains(&x) {
                        return Err(Errno::EINVAL);
                    }
                    v.store(x, Ordering::Relaxed);
                    Ok(data.len())
                },
            )
        };
        // ipc/mq_sysctl.c: msg_max 1..=HARD_MSGMAX, msgsize_max 128..=HARD_MSGSIZEMAX,
        // queues_max 0..=INT_MAX, and the defaults in the same ranges.
        let dir = ProcInode::dir(
            fs,
            vec![
                ("msg_default", knob(&MSG_DEFAULT, 1, HARD_MSGMAX)),
                ("msg_max", knob(&MSG_MAX, 1, HARD_MSGMAX)),
                (
                    "msgsize_default",
                    knob(&MSGSIZE_DEFAULT, 128, HARD_MSGSIZEMAX),
                ),
                ("msgsize_max", knob(&MSGSIZE_MAX, 128, HARD_MSGSIZEMAX)),
                ("queues_max", knob(&QUEUES_MAX, 0, i64::from(i32::MAX))),
            ],
        );
        vec![("mqueue", dir)]
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_order_fifo_within() {
        let mut s = QState::default();
        s.insert(1, b"a".to_vec());
        s.insert(5, b"b".to_vec());
        s.insert(1, b"c".to_vec());
        s.insert(5, b"d".to_vec());
        assert_eq!(s.qsize, 4);
        let got: Vec<(u32, Vec<u8>)> = std::iter::from_fn(|| s.take()).collect();
        assert_eq!(
            got,
            vec![
                (5, b"b".to_vec()),
                (5, b"d".to_vec()),
                (1, b"a".to_vec()),
                (1, b"c".to_vec())
            ]
        );
        assert_eq!((s.qsize, s.attr.mq_curmsgs), (0, 0));
    }

    #[test]
    fn attributes_are_checked() {
        assert_eq!(check_attr(None, false), Ok((10, 8192)));
        let a = |m, s| MqAttr {
            mq_maxmsg: m,
            mq_msgsize: s,
            ..Default::default()
        };
        assert_eq!(check_attr(Some(&a(0, 1)), false), Err(Errno::EINVAL));
        assert_eq!(check_attr(Some(&a(11, 1)), false), Err(Errno::EINVAL));
        assert_eq!(check_attr(Some(&a(11, 1)), true), Ok((11, 1)));
        assert_eq!(check_attr(Some(&a(10, 8193)), false), Err(Errno::EINVAL));
        assert_eq!(check_name(b"a/b"), Err(Errno::EACCES));
        assert_eq!(check_name(&[b'x'; 256]), Err(Errno::ENAMETOOLONG));
    }
}
