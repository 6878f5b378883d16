//! `/proc/PID` and `/proc/PID/task/TID` (Linux `fs/proc/base.c`, `fs/proc/array.c`,
//! `fs/proc/task_mmu.c`, `fs/proc/fd.c`).
//!
//! A [`Target`] names a process (and, under `task/`, one of its threads) weakly: the files of
//! a process that is gone answer `ESRCH`, lookups `ENOENT`. [`PidNode`] says which file or
//! directory of it an inode is. Contents are gathered from the process's locks one at a time
//! (never two at once) and formatted by [`super::fmt`]. `cwd`, `root`, `exe` and `fd/N` are
//! magic links to the process's own dentries (never a host path), and like Linux (ptrace
//! access mode) only the owner or root may follow or read them. So are `ns/time` and
//! `ns/time_for_children`, which lead to nsfs inodes (`um_kernel::timens`); `timens_offsets`
//! shows and sets the offsets of the time namespace for children. `ns/pid` and
//! `ns/pid_for_children` lead to pid namespaces (`um_kernel::pidns`), `ns/net` to the
//! network namespace (`um_kernel::netns`), `ns/uts` to the UTS namespace (`um_kernel::utsns`), `ns/ipc`
//! to the IPC namespace (`um_kernel::ipcns`).
//!
//! Pids: the directories are named, and the files show ids, as the pid namespace of the task
//! looking sees them (Linux uses the namespace of the task that mounted /proc; here there is
//! one /proc, so the reader's own namespace decides: `/proc/self` and `/proc/PID` work with
//! the numbers a process in a new namespace knows). `/proc/sys/kernel/ns_last_pid` is
//! [`ns_last_pid`].
//!
//! Neighbours: [`super`] (the inode type), [`crate::mount`] (`mounts`, `mountinfo`).

use super::{ProcFs, ProcInode, fmt};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_kernel::kernel::Kernel;
use um_kernel::pidns::{Pid, PidNs};
use um_kernel::syscall::lock_mm;
use um_kernel::task::{JobState, Process, Task, lock};
use um_kernel::vfs::{Dentry, DirEntry, FileOps, Kstat, OpenFile, mode};
use um_kernel::wait::IoCtx;
use um_mm::{Backing, MapFlags, Prot, PteFlags};
use um_uapi::{Errno, SysResult};

/// Which process (and thread) an inode under `/proc/PID` describes.
#[derive(Clone)]
pub struct Target {
    process: Weak<Process>,
    /// The process's (or thread's) `serial`: the inode numbers' identity part.
    serial: u64,
    /// Under `task/TID` (or a hidden `/proc/TID`): that thread.
    thread: Option<(u32, Weak<Task>)>,
}

impl Target {
    /// The whole process.
    pub fn process(p: &Arc<Process>) -> Target {
        Target {
            process: Arc::downgrade(p),
            serial: p.serial,
            thread: None,
        }
    }

    /// One thread.
    pub fn thread(t: &Arc<Task>) -> Target {
        Target {
            process: Arc::downgrade(&t.process),
            serial: t.serial,
            thread: Some((t.tid, Arc::downgrade(t))),
        }
    }

    /// The process, if this names a whole process (`/proc/PID`), not a thread.
    pub fn tgid_process(&self) -> Option<Weak<Process>> {
        match self.thread {
            None => Some(self.process.clone()),
            Some(_) => None,
        }
    }

    fn proc(&self) -> SysResult<Arc<Process>> {
        self.process.upgrade().ok_or(Errno::ESRCH)
    }

    /// The numbers of the thread (or, for a whole process, its leader).
    fn pids(&self, p: &Process) -> Arc<Pid> {
        self.thread
            .as_ref()
            .and_then(|(_, t)| t.upgrade())
            .map_or_else(|| p.pids.clone(), |t| t.pids.clone())
    }

    /// The inode owner: the process's effective ids (fs/proc/base.c `task_dump_owner`).
    pub fn owner(&self) -> SysResult<(u32, u32)> {
        let p = self.process.upgrade().ok_or(Errno::ENOENT)?;
        let c = *lock(&p.creds);
        Ok((c.euid, c.egid))
    }

    /// The threads this target covers, live ones only.
    fn tasks(&self, p: &Process) -> Vec<Arc<Task>> {
        match &self.thread {
            Some((_, t)) => t
                .upgrade()
                .filter(|t| !t.exited.load(Ordering::Acquire))
                .into_iter()
                .collect(),
            None => live_threads(p),
        }
    }

    /// The thread whose per-thread state (mask, pending) is shown: the named one, else the
    /// first live thread.
    fn main_task(&self, p: &Process) -> Option<Arc<Task>> {
        self.tasks(p).into_iter().next()
    }
}

fn live_threads(p: &Process) -> Vec<Arc<Task>> {
    lock(&p.threads)
        .iter()
        .filter_map(Weak::upgrade)
        .filter(|t| !t.exited.load(Ordering::Acquire))
        .collect()
}

/// What an inode under `/proc/PID` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidNode {
    /// `/proc/PID` itself (or `task/TID`).
    Dir,
    TaskDir,
    FdDir,
    FdInfoDir,
    Fd(u32),
    FdInfo(u32),
    Cwd,
    Root,
    Exe,
    /// `ns/`: the namespace links.
    NsDir,
    /// `ns/time` (false) or `ns/time_for_children` (true): magic links to nsfs inodes.
    TimeNs(bool),
    /// `ns/pid` (false) or `ns/pid_for_children` (true).
    PidNs(bool),
    /// `ns/net`: the network namespace (`um_kernel::netns`).
    NetNs,
    /// `ns/uts`: the UTS namespace (`um_kernel::utsns`).
    UtsNs,
    /// `ns/ipc`: the IPC namespace (`um_kernel::ipcns`).
    IpcNs,
    /// `ns/mnt`.
    MntNs,
    /// `ns/cgroup`: the cgroup namespace (`um_kernel::cgroupns`).
    CgroupNs,
    /// `ns/user`: the user namespace of the credentials (`um_kernel::userns`).
    UserNs,
    File(PidFile),
}

/// The generated files of `/proc/PID`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidFile {
    Stat,
    Status,
    Statm,
    Cmdline,
    Environ,
    Maps,
    Comm,
    Limits,
    Mounts,
    Mountinfo,
    Wchan,
    /// The syscall a thread is in (`Task::cur_syscall`).
    Syscall,
    Cgroup,
    OomScore,
    OomAdj,
    OomScoreAdj,
    Io,
    Smaps,
    /// Served by [`PagemapFile`], not generated.
    Pagemap,
    /// Served by [`MemFile`], not generated.
    Mem,
    /// The auxiliary vector exec gave the program (`mm->saved_auxv`).
    Auxv,
    CoredumpFilter,
    /// The offsets of the time namespace for children (`um_kernel::timens`).
    TimensOffsets,
    /// The id maps and setgroups flag of the process's user namespace (`um_kernel::userns`).
    UidMap,
    GidMap,
    Setgroups,
}

/// The entries of `/proc/PID`, in Linux's order (`tgid_base_stuff`); the index is part of the
/// inode number.
const ENTRIES: &[(&str, PidNode)] = &[
    ("task", PidNode::TaskDir),
    ("fd", PidNode::FdDir),
    ("fdinfo", PidNode::FdInfoDir),
    ("environ", PidNode::File(PidFile::Environ)),
    ("status", PidNode::File(PidFile::Status)),
    ("limits", PidNode::File(PidFile::Limits)),
    ("comm", PidNode::File(PidFile::Comm)),
    ("syscall", PidNode::File(PidFile::Syscall)),
    ("cmdline", PidNode::File(PidFile::Cmdline)),
    ("stat", PidNode::File(PidFile::Stat)),
    ("statm", PidNode::File(PidFile::Statm)),
    ("maps", PidNode::File(PidFile::Maps)),
    ("cwd", PidNode::Cwd),
    ("root", PidNode::Root),
    ("exe", PidNode::Exe),
    ("mounts", PidNode::File(PidFile::Mounts)),
    ("mountinfo", PidNode::File(PidFile::Mountinfo)),
    ("wchan", PidNode::File(PidFile::Wchan)),
    ("cgroup", PidNode::File(PidFile::Cgroup)),
    ("oom_score", PidNode::File(PidFile::OomScore)),
    ("oom_adj", PidNode::File(PidFile::OomAdj)),
    ("oom_score_adj", PidNode::File(PidFile::OomScoreAdj)),
    ("io", PidNode::File(PidFile::Io)),
    ("smaps", PidNode::File(PidFile::Smaps)),
    ("pagemap", PidNode::File(PidFile::Pagemap)),
    ("coredump_filter", PidNode::File(PidFile::CoredumpFilter)),
    ("ns", PidNode::NsDir),
    ("timens_offsets", PidNode::File(PidFile::TimensOffsets)),
    // Last, not in Linux's places (after environ and maps): the index is part of the inode
    // numbers of the entries above.
    ("auxv", PidNode::File(PidFile::Auxv)),
    ("mem", PidNode::File(PidFile::Mem)),
    ("uid_map", PidNode::File(PidFile::UidMap)),
    ("gid_map", PidNode::File(PidFile::GidMap)),
    ("setgroups", PidNode::File(PidFile::Setgroups)),
];

/// The entries of `/proc/PID/ns` (fs/proc/namespaces.c `ns_entries`, in its order; only
/// net, uts, ipc, pid, mnt, user, cgroup and time namespaces exist here).
const NS_ENTRIES: &[(&str, PidNode)] = &[
    ("net", PidNode::NetNs),
    ("uts", PidNode::UtsNs),
    ("ipc", PidNode::IpcNs),
    ("pid", PidNode::PidNs(false)),
    ("pid_for_children", PidNode::PidNs(true)),
    ("mnt", PidNode::MntNs),
    ("user", PidNode::UserNs),
    ("cgroup", PidNode::CgroupNs),
    ("time", PidNode::TimeNs(false)),
    ("time_for_children", PidNode::TimeNs(true)),
];

use um_uapi::abi::fcntl::O_CLOEXEC;

/// Inode number of a node: pid inodes live above 2^48, the static ones below.
fn ino(t: &Target, n: PidNode) -> u64 {
    let (kind, sub) = match n {
        PidNode::Dir => (0, 0),
        PidNode::Fd(fd) => (200, fd),
        PidNode::FdInfo(fd) => (201, fd),
        PidNode::TimeNs(c) => (210 + u64::from(c), 0),
        PidNode::PidNs(c) => (212 + u64::from(c), 0),
        PidNode::NetNs => (214, 0),
        PidNode::UtsNs => (215, 0),
        PidNode::IpcNs => (216, 0),
        PidNode::MntNs => (217, 0),
        PidNode::UserNs => (218, 0),
        PidNode::CgroupNs => (219, 0),
        other => (
            ENTRIES
                .iter()
                .position(|(_, e)| *e == other)
                .map_or(255, |i| i as u64 + 1),
            0,
        ),
    };
    // The process's (thread's) serial, not its pid: a reused pid gets other inode numbers,
    // as Linux's `get_next_ino` gives (LTP pidfd_send_signal03 compares them as ints).
    (1 << 48)
        | ((t.serial & 0x7ff_ffff) << 21)
        | (u64::from(t.thread.is_some()) << 20)
        | (kind << 12)
        | u64::from(sub & 0xfff)
}

fn mode_of(n: PidNode, fd_flags: u32) -> u32 {
    match n {
        PidNode::Dir | PidNode::TaskDir | PidNode::FdInfoDir | PidNode::NsDir => {
            mode::S_IFDIR | 0o555
        }
        PidNode::TimeNs(_)
        | PidNode::PidNs(_)
        | PidNode::NetNs
        | PidNode::UtsNs
        | PidNode::IpcNs
        | PidNode::MntNs
        | PidNode::CgroupNs
        | PidNode::UserNs => mode::S_IFLNK | 0o777,
        PidNode::FdDir => mode::S_IFDIR | 0o500,
        PidNode::Cwd | PidNode::Root | PidNode::Exe => mode::S_IFLNK | 0o777,
        // fs/proc/fd.c tid_fd_update_inode: r-x for reading, -wx for writing, per owner.
        PidNode::Fd(_) => {
            let mut m = mode::S_IFLNK;
            if fd_flags & 3 != 1 {
                m |= 0o500;
            }
            if fd_flags & 3 != 0 {
                m |= 0o300;
            }
            m
        }
        PidNode::FdInfo(_) => mode::S_IFREG | 0o444,
        // fs/proc/base.c: `ONE("syscall", S_IRUSR, proc_pid_syscall)` and the like.
        PidNode::File(
            PidFile::Environ | PidFile::Io | PidFile::Pagemap | PidFile::Auxv | PidFile::Syscall,
        ) => mode::S_IFREG | 0o400,
        // fs/proc/base.c: `REG("mem", S_IRUSR|S_IWUSR, proc_mem_operations)`.
        PidNode::File(PidFile::Mem) => mode::S_IFREG | 0o600,
        PidNode::File(
            PidFile::Comm
            | PidFile::OomAdj
            | PidFile::OomScoreAdj
            | PidFile::CoredumpFilter
            | PidFile::TimensOffsets
            | PidFile::UidMap
            | PidFile::GidMap
            | PidFile::Setgroups,
        ) => mode::S_IFREG | 0o644,
        PidNode::File(_) => mode::S_IFREG | 0o444,
    }
}

fn make(fs: &Arc<ProcFs>, t: &Target, n: PidNode, fd_flags: u32) -> Arc<ProcInode> {
    ProcInode::new(
        fs,
        ino(t, n),
        mode_of(n, fd_flags),
        super::Node::Pid(t.clone(), n),
    )
}

/// A process by pid, zombies included (they have left the task table but are still their
/// parent's children).
fn find_process(k: &Kernel, pid: u32) -> Option<Arc<Process>> {
    if let Some(p) = k.tasks.process(pid) {
        return Some(p);
    }
    all_processes(k).into_iter().find(|p| p.pid == pid)
}

/// Every process: live ones and their unreaped children.
fn all_processes(k: &Kernel) -> Vec<Arc<Process>> {
    let mut v = k.tasks.processes();
    let mut extra = Vec::new();
    for p in &v {
        for c in lock(&p.children).iter() {
            if !v.iter().any(|x| Arc::ptr_eq(x, c)) && !extra.iter().any(|x| Arc::ptr_eq(x, c)) {
                extra.push(c.clone());
            }
        }
    }
    v.extend(extra);
    v.sort_by_key(|p| p.pid);
    v
}

/// The pid namespace whose numbers /proc shows: the reader's (the initial one for the
/// kernel itself).
pub fn viewer_ns() -> Arc<PidNs> {
    um_kernel::current::current()
        .map_or_else(|| um_kernel::pidns::root().clone(), |t| t.pids.ns().clone())
}

/// What the viewer sees of kernel-wide id `global` (a pgid, sid or ppid): its number in
/// `ns`, 0 outside it.
fn vnr(k: &Kernel, ns: &PidNs, global: u32) -> u32 {
    if ns.is_root() {
        return global;
    }
    k.tasks.get(global).map_or(0, |t| t.pids.nr_in(ns))
}

/// The pid directories of the root: the processes the reader's namespace sees, by their
/// numbers there.
pub fn root_entries(fs: &Arc<ProcFs>) -> SysResult<Vec<DirEntry>> {
    let k = fs.kernel()?;
    let ns = viewer_ns();
    let mut v: Vec<(u32, DirEntry)> = all_processes(&k)
        .iter()
        .filter_map(|p| {
            let nr = p.pids.nr_in(&ns);
            (nr != 0).then(|| {
                (
                    nr,
                    DirEntry {
                        ino: ino(&Target::process(p), PidNode::Dir),
                        kind: 4,
                        name: nr.to_string().into_bytes(),
                    },
                )
            })
        })
        .collect();
    v.sort_by_key(|e| e.0);
    Ok(v.into_iter().map(|e| e.1).collect())
}

fn parse_num(name: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(name).ok()?;
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) || s.starts_with('0')
    {
        return None;
    }
    s.parse().ok()
}

/// Looks up a pid (or the hidden tid of a non-leader thread) in the root.
pub fn root_lookup(fs: &Arc<ProcFs>, name: &[u8]) -> SysResult<Arc<ProcInode>> {
    let nr = parse_num(name).ok_or(Errno::ENOENT)?;
    let k = fs.kernel()?;
    // A number of the reader's pid namespace.
    let ns = viewer_ns();
    let id = if ns.is_root() {
        nr
    } else {
        ns.lookup(nr).ok_or(Errno::ENOENT)?
    };
    if let Some(p) = find_process(&k, id).filter(|p| p.pids.nr_in(&ns) == nr) {
        return Ok(make(fs, &Target::process(&p), PidNode::Dir, 0));
    }
    // fs/proc/base.c proc_pid_lookup finds any task; a thread's tid works but is not listed.
    let t = k.tasks.find_task(&ns, nr).ok_or(Errno::ENOENT)?;
    Ok(make(fs, &Target::thread(&t), PidNode::Dir, 0))
}

/// Whether the caller may look into `p`'s private parts (fs/proc/base.c `proc_fd_access_allowed`,
/// ptrace's access mode reduced to: root, or the same user).
fn may_access(p: &Process) -> SysResult<()> {
    let Some(cur) = um_kernel::current::current() else {
        return Ok(());
    };
    let me = *lock(&cur.process.creds);
    let them = *lock(&p.creds);
    if me.fsuid == 0 || (me.fsuid == them.uid && me.fsuid == them.euid && me.fsuid == them.suid) {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

/// Looks up `name` in a directory under `/proc/PID`.
pub fn lookup(fs: &Arc<ProcFs>, t: &Target, n: PidNode, name: &[u8]) -> SysResult<Arc<ProcInode>> {
    let p = t.process.upgrade().ok_or(Errno::ENOENT)?;
    match n {
        PidNode::Dir => {
            let (_, node) = ENTRIES
                .iter()
                .filter(|(e, _)| t.thread.is_none() || *e != "task")
                .find(|(e, _)| e.as_bytes() == name)
                .ok_or(Errno::ENOENT)?;
            Ok(make(fs, t, *node, 0))
        }
        PidNode::TaskDir => {
            let tid = parse_num(name).ok_or(Errno::ENOENT)?;
            let ns = viewer_ns();
            let task = live_threads(&p)
                .into_iter()
                .find(|x| x.pids.nr_in(&ns) == tid)
                .ok_or(Errno::ENOENT)?;
            Ok(make(fs, &Target::thread(&task), PidNode::Dir, 0))
        }
        PidNode::FdDir | PidNode::FdInfoDir => {
            may_access(&p)?;
            let fd = parse_num(name).or_else(|| (name == b"0").then_some(0));
            let fd = fd.ok_or(Errno::ENOENT)?;
            let file = lock(&p.files()).get(fd as u64).map_err(|_| Errno::ENOENT)?;
            Ok(if n == PidNode::FdDir {
                make(fs, t, PidNode::Fd(fd), file.flags())
            } else {
                make(fs, t, PidNode::FdInfo(fd), 0)
            })
        }
        PidNode::NsDir => {
            may_access(&p)?;
            let (_, node) = NS_ENTRIES
                .iter()
                .find(|(e, _)| e.as_bytes() == name)
                .ok_or(Errno::ENOENT)?;
            Ok(make(fs, t, *node, 0))
        }
        _ => Err(Errno::ENOTDIR),
    }
}

/// The entries of a directory under `/proc/PID` (without `.` and `..`).
pub fn entries(_fs: &Arc<ProcFs>, t: &Target, n: PidNode) -> SysResult<Vec<DirEntry>> {
    let p = t.proc()?;
    let dir = |name: Vec<u8>, node: PidNode, tt: &Target, flags: u32| DirEntry {
        ino: ino(tt, node),
        kind: super::dt_of(mode_of(node, flags)),
        name,
    };
    Ok(match n {
        PidNode::Dir => ENTRIES
            .iter()
            .filter(|(e, _)| t.thread.is_none() || *e != "task")
            .map(|(e, node)| dir(e.as_bytes().to_vec(), *node, t, 0))
            .collect(),
        PidNode::TaskDir => live_threads(&p)
            .iter()
            .map(|x| {
                dir(
                    x.pids.nr_in(&viewer_ns()).to_string().into_bytes(),
                    PidNode::Dir,
                    &Target::thread(x),
                    0,
                )
            })
            .collect(),
        PidNode::FdDir | PidNode::FdInfoDir => {
            may_access(&p)?;
            let files = p.files();
            let table = lock(&files);
            table
                .iter()
                .map(|(fd, e)| {
                    let node = if n == PidNode::FdDir {
                        PidNode::Fd(fd)
                    } else {
                        PidNode::FdInfo(fd)
                    };
                    dir(fd.to_string().into_bytes(), node, t, e.file.flags())
                })
                .collect()
        }
        PidNode::NsDir => {
            may_access(&p)?;
            NS_ENTRIES
                .iter()
                .map(|(e, node)| dir(e.as_bytes().to_vec(), *node, t, 0))
                .collect()
        }
        _ => return Err(Errno::ENOTDIR),
    })
}

/// The time namespace a `/proc/PID/ns/time*` link names (fs/proc/namespaces.c: ptrace
/// access needed).
fn time_ns(t: &Target, for_children: bool) -> SysResult<Arc<um_kernel::timens::TimeNs>> {
    let p = t.proc()?;
    may_access(&p)?;
    let pair = lock(&p.timens);
    Ok(if for_children {
        pair.for_children.clone()
    } else {
        pair.active.clone()
    })
}

/// The network namespace `/proc/PID/ns/net` names (fs/proc/namespaces.c, ptrace access
/// needed).
fn net_ns(t: &Target) -> SysResult<Arc<um_kernel::netns::NetNs>> {
    let p = t.proc()?;
    may_access(&p)?;
    Ok(um_kernel::netns::of(&p))
}

/// The UTS namespace `/proc/PID/ns/uts` names (fs/proc/namespaces.c, ptrace access
/// needed).
fn uts_ns(t: &Target) -> SysResult<Arc<um_kernel::utsns::UtsNs>> {
    let p = t.proc()?;
    may_access(&p)?;
    Ok(um_kernel::utsns::of(&p))
}

/// The IPC namespace `/proc/PID/ns/ipc` names (fs/proc/namespaces.c, ptrace access
/// needed).
fn ipc_ns(t: &Target) -> SysResult<Arc<um_kernel::ipcns::IpcNs>> {
    let p = t.proc()?;
    may_access(&p)?;
    Ok(um_kernel::ipcns::of(&p))
}

/// The cgroup namespace `/proc/PID/ns/cgroup` names (fs/proc/namespaces.c, ptrace access
/// needed).
fn cgroup_ns(t: &Target) -> SysResult<Arc<um_kernel::cgroupns::CgroupNs>> {
    let p = t.proc()?;
    may_access(&p)?;
    Ok(um_kernel::cgroupns::of(&p))
}

/// The mount namespace `/proc/PID/ns/mnt` names (fs/proc/namespaces.c, ptrace access
/// needed).
fn mnt_ns(t: &Target) -> SysResult<Arc<um_kernel::mntns::MntNs>> {
    let p = t.proc()?;
    may_access(&p)?;
    Ok(um_kernel::mntns::of(&p))
}

/// The user namespace `/proc/PID/ns/user` names (ptrace access needed).
fn user_ns(t: &Target) -> SysResult<Arc<um_kernel::userns::UserNs>> {
    let p = t.proc()?;
    may_access(&p)?;
    Ok(um_kernel::userns::of(&p))
}

/// The pid namespace a `/proc/PID/ns/pid*` link names (fs/proc/namespaces.c, ptrace access
/// needed): the process's own, or the one for its children, which exists for the link only
/// once its init does (`pidns_for_children_get`: ENOENT before).
fn pid_ns(t: &Target, for_children: bool) -> SysResult<Arc<PidNs>> {
    let p = t.proc()?;
    may_access(&p)?;
    if !for_children {
        return Ok(p.pids.ns().clone());
    }
    let ns = lock(&p.pid_ns_children).clone();
    if !Arc::ptr_eq(&ns, p.pids.ns()) && ns.reaper().is_none() {
        return Err(Errno::ENOENT);
    }
    Ok(ns)
}

/// `/proc/sys/kernel/ns_last_pid` (kernel/pid_namespace.c `pid_ns_ctl_handler`): the last
/// pid the reader's namespace handed out; writing one (CAP_SYS_ADMIN or
/// CAP_CHECKPOINT_RESTORE, `EPERM`; `0..pid_max`, `EINVAL`) makes the next one follow it.
pub fn ns_last_pid(fs: &Arc<ProcFs>) -> Arc<ProcInode> {
    let render =
        |_: &Arc<Kernel>, _: &IoCtx<'_>| Ok(format!("{}\n", viewer_ns().last_pid()).into_bytes());
    let put = |_: &Arc<Kernel>, io: &IoCtx<'_>, data: &[u8]| {
        let p = &io.task.process;
        if !p.capable(21 /* CAP_SYS_ADMIN */) && !p.capable(40 /* CAP_CHECKPOINT_RESTORE */) {
            return Err(Errno::EPERM);
        }
        let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
        let v: i64 = s.trim().parse().map_err(|_| Errno::EINVAL)?;
        io.task.pids.ns().set_last_pid(v)?;
        Ok(data.len())
    };
    ProcInode::new(
        fs,
        fs.alloc_ino(),
        mode::S_IFREG | 0o666,
        super::Node::File {
            render: Box::new(render),
            put: Some(Box::new(put)),
        },
    )
}

/// The open file behind `/proc/PID/fd/N`.
fn fd_file(p: &Process, fd: u32) -> SysResult<Arc<OpenFile>> {
    lock(&p.files()).get(fd as u64).map_err(|_| Errno::ENOENT)
}

/// What `readlink` of `/proc/PID/fd/N` says (fs/d_path.c `d_path` and the `d_dname` of pipes,
/// sockets and anonymous inodes).
pub fn fd_name(f: &OpenFile) -> Vec<u8> {
    if let Some(d) = &f.dentry {
        // A namespace file lives in the internal nsfs mount: its `d_dname` is the name
        // `/proc/PID/ns` links show (`user:[4026531837]`).
        if d.parent.is_none()
            && d.inode
                .stat()
                .is_ok_and(|st| st.dev == um_kernel::nsfs::NSFS_DEV)
        {
            return d.name.clone();
        }
        return seen_path(d);
    }
    let st = f.ops.stat().unwrap_or_default();
    match st.mode & mode::S_IFMT {
        mode::S_IFIFO => format!("pipe:[{}]", st.ino).into_bytes(),
        mode::S_IFSOCK => format!("socket:[{}]", st.ino).into_bytes(),
        // The boot console is the only character device opened without a name.
        mode::S_IFCHR => b"/dev/console".to_vec(),
        _ => format!("anon_inode:{}", f.ops.anon_name().unwrap_or("[unknown]")).into_bytes(),
    }
}

/// The dentry a magic link leads to.
fn link_target(t: &Target, n: PidNode) -> SysResult<Arc<Dentry>> {
    let p = t.proc()?;
    may_access(&p)?;
    match n {
        PidNode::Cwd => Ok(lock(&p.fs).cwd.clone()),
        PidNode::Root => Ok(lock(&p.fs).root.clone()),
        PidNode::Exe => lock(&p.exe)
            .as_ref()
            .map(|e| e.dentry.clone())
            .ok_or(Errno::ENOENT),
        PidNode::Fd(fd) => fd_file(&p, fd)?.dentry.clone().ok_or(Errno::ENOENT),
        _ => Err(Errno::EINVAL),
    }
}

/// `readlink` under `/proc/PID`.
pub fn readlink(t: &Target, n: PidNode) -> SysResult<Vec<u8>> {
    if let PidNode::TimeNs(c) = n {
        return Ok(um_kernel::timens::link_name(&*time_ns(t, c)?));
    }
    if let PidNode::NetNs = n {
        return Ok(um_kernel::netns::link_name(&*net_ns(t)?));
    }
    if let PidNode::UtsNs = n {
        return Ok(um_kernel::utsns::link_name(&*uts_ns(t)?));
    }
    if let PidNode::MntNs = n {
        return Ok(um_kernel::mntns::link_name(&*mnt_ns(t)?));
    }
    if let PidNode::IpcNs = n {
        return Ok(um_kernel::ipcns::link_name(&*ipc_ns(t)?));
    }
    if let PidNode::CgroupNs = n {
        return Ok(um_kernel::cgroupns::link_name(&*cgroup_ns(t)?));
    }
    if let PidNode::UserNs = n {
        return Ok(um_kernel::userns::link_name(&*user_ns(t)?));
    }
    if let PidNode::PidNs(c) = n {
        return Ok(um_kernel::pidns::link_name(&*pid_ns(t, c)?));
    }
    if let PidNode::Fd(fd) = n {
        let p = t.proc()?;
        may_access(&p)?;
        return Ok(fd_name(&*fd_file(&p, fd)?));
    }
    Ok(seen_path(&*link_target(t, n)?))
}

/// A dentry's path as the reader sees it (`d_path`): relative to the reader's root, so after
/// a pivot_root or chroot the links show paths in the new root; one outside it keeps its
/// whole path.
fn seen_path(d: &Dentry) -> Vec<u8> {
    let path = d.path();
    let root = um_kernel::current::current().map(|t| lock(&t.process.fs).root.path());
    match root {
        Some(r) => crate::mount::relative_to(&path, &r).unwrap_or(path),
        None => path,
    }
}

/// Following a magic link.
pub fn magic_link(t: &Target, n: PidNode) -> Option<Arc<Dentry>> {
    match n {
        PidNode::Cwd | PidNode::Root | PidNode::Exe | PidNode::Fd(_) => link_target(t, n).ok(),
        PidNode::TimeNs(c) => time_ns(t, c)
            .ok()
            .map(|ns| um_kernel::timens::ns_dentry(&ns)),
        PidNode::PidNs(c) => pid_ns(t, c).ok().map(|ns| um_kernel::pidns::ns_dentry(&ns)),
        PidNode::NetNs => net_ns(t).ok().map(|ns| um_kernel::netns::ns_dentry(&ns)),
        PidNode::UtsNs => uts_ns(t).ok().map(|ns| um_kernel::utsns::ns_dentry(&ns)),
        PidNode::IpcNs => ipc_ns(t).ok().map(|ns| um_kernel::ipcns::ns_dentry(&ns)),
        PidNode::CgroupNs => cgroup_ns(t)
            .ok()
            .map(|ns| um_kernel::cgroupns::ns_dentry(&ns)),
        PidNode::MntNs => mnt_ns(t).ok().map(|ns| um_kernel::mntns::ns_dentry(&ns)),
        PidNode::UserNs => user_ns(t).ok().map(|ns| um_kernel::userns::ns_dentry(&ns)),
        _ => None,
    }
}

/// oom_score_adj values by pid, with the process they belong to (a reused pid starts at 0).
type OomTable = BTreeMap<u32, (Weak<Process>, i32)>;

/// oom_score_adj values, per process (Linux keeps it in `signal_struct`).
fn oom_table() -> &'static Mutex<OomTable> {
    static T: OnceLock<Mutex<OomTable>> = OnceLock::new();
    T.get_or_init(Default::default)
}

fn oom_score_adj(p: &Arc<Process>) -> i32 {
    match lock(oom_table()).get(&p.pid) {
        Some((w, v)) if w.as_ptr() == Arc::as_ptr(p) => *v,
        _ => 0,
    }
}

fn set_oom_score_adj(p: &Arc<Process>, v: i32) {
    let mut t = lock(oom_table());
    t.retain(|_, (w, _)| w.strong_count() > 0);
    t.insert(p.pid, (Arc::downgrade(p), v));
}

fn parse_int(data: &[u8]) -> SysResult<i64> {
    std::str::from_utf8(data)
        .map_err(|_| Errno::EINVAL)?
        .trim()
        .parse()
        .map_err(|_| Errno::EINVAL)
}

/// A write to a file under `/proc/PID`.
pub fn write(
    _fs: &Arc<ProcFs>,
    t: &Target,
    n: PidNode,
    io: &IoCtx<'_>,
    data: &[u8],
) -> SysResult<usize> {
    let p = t.proc()?;
    match n {
        // fs/proc/base.c comm_write: the first 15 bytes, taken as they are (a trailing
        // newline included), and only for the caller's own thread group.
        PidNode::File(PidFile::Comm) => {
            if !Arc::ptr_eq(&io.task.process, &p) {
                return Err(Errno::EINVAL);
            }
            let n = data.len().min(15);
            let name: Vec<u8> = data[..n].iter().copied().take_while(|&b| b != 0).collect();
            *lock(&p.comm) = name;
            Ok(data.len())
        }
        PidNode::File(PidFile::OomScoreAdj) => {
            let v = parse_int(data)?;
            if !(-1000..=1000).contains(&v) {
                return Err(Errno::EINVAL);
            }
            set_oom_score_adj(&p, v as i32);
            Ok(data.len())
        }
        PidNode::File(PidFile::CoredumpFilter) => {
            // proc_coredump_filter_write: a number in any base kstrtouint takes; the filter
            // bits (MMF_DUMP_FILTER_MASK, 9 bits) are kept.
            let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?.trim();
            let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                u32::from_str_radix(h, 16)
            } else if s.len() > 1 && s.starts_with('0') {
                u32::from_str_radix(&s[1..], 8)
            } else {
                s.parse::<u32>()
            }
            .map_err(|_| Errno::EINVAL)?;
            p.coredump_filter.store(v & 0x1ff, Ordering::Relaxed);
            Ok(data.len())
        }
        PidNode::File(PidFile::OomAdj) => {
            // oom_adj_write: -17..15, scaled to oom_score_adj (15 is the maximum 1000).
            let v = parse_int(data)?;
            if !(-17..=15).contains(&v) {
                return Err(Errno::EINVAL);
            }
            let adj = if v == 15 { 1000 } else { v * 1000 / 17 };
            set_oom_score_adj(&p, adj as i32);
            Ok(data.len())
        }
        PidNode::File(PidFile::TimensOffsets) => write_timens_offsets(&p, io, data),
        // kernel/user_namespace.c proc_uid_map_write, proc_gid_map_write and
        // proc_setgroups_write, on the target's user namespace.
        PidNode::File(PidFile::UidMap) => um_kernel::userns::write_map(
            &um_kernel::userns::of(&p),
            um_kernel::userns::MapKind::Uid,
            &io.task.process,
            data,
        ),
        PidNode::File(PidFile::GidMap) => um_kernel::userns::write_map(
            &um_kernel::userns::of(&p),
            um_kernel::userns::MapKind::Gid,
            &io.task.process,
            data,
        ),
        PidNode::File(PidFile::Setgroups) => {
            um_kernel::userns::write_setgroups(&um_kernel::userns::of(&p), &io.task.process, data)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// fs/proc/base.c `timens_offsets_write`: less than a page, parsed (`EINVAL`), then
/// `proc_timens_set_offset` on the namespace for children: CAP_SYS_TIME (`EPERM`), the range
/// (`ERANGE`), not yet entered (`EACCES`). Returns the bytes taken (at most two lines).
fn write_timens_offsets(p: &Process, io: &IoCtx<'_>, data: &[u8]) -> SysResult<usize> {
    if data.len() as u64 >= um_mm::page_size() {
        return Err(Errno::EINVAL);
    }
    let (offsets, taken) = um_kernel::timens::parse_offsets(data)?;
    if !io.task.process.capable(um_kernel::timens::CAP_SYS_TIME) {
        return Err(Errno::EPERM);
    }
    let ns = lock(&p.timens).for_children.clone();
    ns.set_offsets(&offsets, |clock| {
        let host = if clock == um_kernel::timens::CLOCK_BOOTTIME {
            libc::CLOCK_BOOTTIME
        } else {
            libc::CLOCK_MONOTONIC
        };
        um_os_linux::host::clock_gettime(host).unwrap_or((0, 0))
    })?;
    Ok(taken)
}

/// The state letter (fs/proc/array.c `task_state_array`): S while every thread sleeps in the
/// kernel, T when job-stopped, Z when exited and not reaped, else R (in the guest, or serving a
/// syscall without blocking).
fn state(t: &Target, p: &Process) -> char {
    if lock(&p.exit).is_some() {
        return 'Z';
    }
    let tasks = t.tasks(p);
    // A thread in a ptrace-stop: `t` (tracing stop).
    if tasks.iter().any(|x| um_kernel::ptrace::is_stopped(x)) {
        return 't';
    }
    if matches!(*lock(&p.job), JobState::Stopped { .. }) {
        return 'T';
    }
    if tasks.is_empty() {
        return 'Z';
    }
    if let Some(cur) = um_kernel::current::current() {
        if tasks.iter().any(|x| Arc::ptr_eq(x, &cur)) {
            return 'R';
        }
    }
    if tasks.iter().all(|x| x.waker.is_sleeping()) {
        'S'
    } else {
        'R'
    }
}

/// User and system clock ticks of the target (fs/proc/array.c `do_task_stat`): the whole
/// process's (`thread_group_cputime_adjusted`) or one thread's, and the reaped children's.
fn cpu_ticks(t: &Target, p: &Process) -> [u64; 4] {
    use um_kernel::cputime;
    let own = match &t.thread {
        Some((_, w)) => w
            .upgrade()
            .map(|x| cputime::task_times(&x))
            .unwrap_or_default(),
        None => cputime::process_times(p),
    };
    let ch = cputime::children_times(p);
    [own.user, own.system, ch.user, ch.system].map(cputime::ns_to_clock_t)
}

/// Memory figures of a process, in pages.
#[derive(Default)]
struct MmFigures {
    total: u64,
    rss: u64,
    data: u64,
    stack: u64,
    exe: u64,
    lib: u64,
    code: (u64, u64),
    start_brk: u64,
    page_kb: u64,
    locked: u64,
}

fn exe_name(p: &Process) -> Option<Vec<u8>> {
    lock(&p.exe).as_ref().map(|e| e.dentry.name.clone())
}

fn mm_figures(p: &Process) -> MmFigures {
    let exe = exe_name(p);
    let mm = lock(&p.mm).clone();
    let m = lock_mm(&mm);
    let g = m.granule();
    let mut f = MmFigures {
        total: m.total_vm(),
        rss: m.rss_pages() as u64,
        start_brk: m.brk_range().0,
        page_kb: g.size() / 1024,
        locked: m.locked_pages(),
        ..Default::default()
    };
    for v in m.vmas() {
        let pages = g.pages(v.len());
        let stack = v.grows_down() || v.name.as_deref() == Some("[stack]");
        // mm.h is_data_mapping: writable, private, not stack.
        if v.prot.contains(Prot::WRITE) && !v.flags.contains(MapFlags::SHARED) && !stack {
            f.data += pages;
        }
        if stack {
            f.stack += pages;
        }
        if v.prot.contains(Prot::EXEC) && !v.prot.contains(Prot::WRITE) {
            let is_exe = matches!(&v.backing, Backing::File { file, .. }
                if exe.as_deref() == Some(file.name().as_bytes()));
            if is_exe {
                f.exe += pages;
                if f.code.0 == 0 {
                    f.code = (v.start, v.end);
                } else {
                    f.code.1 = v.end;
                }
            } else {
                f.lib += pages;
            }
        }
    }
    f
}

fn sig_sets(p: &Process) -> (u64, u64) {
    let acts = lock(&p.sigactions);
    let (mut ign, mut cgt) = (0u64, 0u64);
    for (i, a) in acts.iter().enumerate() {
        match a.handler {
            0 => {}
            1 => ign |= 1 << i,
            _ => cgt |= 1 << i,
        }
    }
    (ign, cgt)
}

fn ticks_since_boot(p: &Process) -> u64 {
    let up = um_kernel::printk::uptime();
    let ns = up.saturating_sub(p.start.elapsed()).as_nanos() as i128;
    // do_task_stat: the start time in the reader's time namespace (timens_add_boottime_ns).
    let boot = um_kernel::timens::current_offsets().boottime.as_nanos();
    ((ns + boot).max(0) / 10_000_000) as u64
}

fn stat_info(k: &Kernel, t: &Target, p: &Process) -> fmt::StatInfo {
    let st = state(t, p);
    let [ut, stt, cut, cst] = cpu_ticks(t, p);
    let zombie = st == 'Z';
    let mm = if zombie {
        MmFigures::default()
    } else {
        mm_figures(p)
    };
    let main = t.main_task(p);
    let (blocked, pending) = main
        .as_ref()
        .map(|m| (*lock(&m.sigmask), lock(&m.pending).bits()))
        .unwrap_or_default();
    let (ign, cgt) = sig_sets(p);
    let (a0, a1, e0, e1) = if zombie {
        (0, 0, 0, 0)
    } else {
        *lock(&p.arg_range)
    };
    let exit_code = lock(&p.exit).map_or(0, |e| e.wstatus());
    let ids = Ids::of(k, t, p);
    fmt::StatInfo {
        pid: ids.pid,
        comm: lock(&p.comm).clone(),
        state: st,
        ppid: ids.ppid,
        pgrp: ids.pgid,
        session: ids.sid,
        tty_nr: 0,
        tpgid: -1,
        // PF_* flags are not tracked (PF_RANDOMIZE would be wrong: there is no ASLR).
        flags: 0,
        utime: ut,
        stime: stt,
        cutime: cut,
        cstime: cst,
        priority: 20,
        nice: 0,
        num_threads: live_threads(p).len() as u64,
        starttime: ticks_since_boot(p),
        vsize: mm.total * mm.page_kb * 1024,
        rss: mm.rss,
        rsslim: lock(&p.rlimits)[5].0,
        startcode: mm.code.0,
        endcode: mm.code.1,
        startstack: a0,
        signal: pending | lock(&p.shared_pending).bits(),
        blocked,
        sigignore: ign,
        sigcatch: cgt,
        sleeping: st == 'S',
        exit_signal: p.exit_signal.load(Ordering::Relaxed) as i32,
        start_brk: mm.start_brk,
        arg_start: a0,
        arg_end: a1,
        env_start: e0,
        env_end: e1,
        exit_code,
        ..Default::default()
    }
}

/// `FDSize`: the size of the descriptor table as Linux grows it (64, then powers of two).
fn fd_size(max_fd: Option<u32>) -> u32 {
    match max_fd {
        Some(m) if m >= 64 => (m + 1).next_power_of_two().max(256),
        _ => 64,
    }
}

/// A process's ids as the reader's pid namespace sees them (fs/proc/array.c, `ns` being
/// the proc's namespace).
struct Ids {
    tgid: u32,
    pid: u32,
    ppid: u32,
    pgid: u32,
    sid: u32,
}

impl Ids {
    fn of(k: &Kernel, t: &Target, p: &Process) -> Ids {
        let ns = viewer_ns();
        let ppid = match lock(&p.parent).upgrade() {
            Some(parent) => parent.pids.nr_in(&ns),
            None => vnr(k, &ns, p.ppid.load(Ordering::Relaxed)),
        };
        Ids {
            tgid: p.pids.nr_in(&ns),
            pid: t.pids(p).nr_in(&ns),
            ppid,
            pgid: vnr(k, &ns, p.pgid.load(Ordering::Relaxed)),
            sid: vnr(k, &ns, p.sid.load(Ordering::Relaxed)),
        }
    }
}

/// The `NStgid`, `NSpid`, `NSpgid` and `NSsid` lines (fs/proc/array.c `proc_pid_status`):
/// the numbers from the reader's namespace down to the process's own.
fn ns_lines(k: &Kernel, t: &Target, p: &Process) -> String {
    let ns = viewer_ns();
    let join = |v: Vec<u32>| {
        v.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join("\t")
    };
    let levels: Vec<Arc<PidNs>> = p
        .pids
        .levels()
        .iter()
        .skip(ns.level())
        .map(|(n, _)| n.clone())
        .collect();
    let per_level =
        |global: u32| -> Vec<u32> { levels.iter().map(|n| vnr(k, n, global)).collect() };
    format!(
        "NStgid:\t{}\nNSpid:\t{}\nNSpgid:\t{}\nNSsid:\t{}\n",
        join(p.pids.numbers_from(&ns)),
        join(t.pids(p).numbers_from(&ns)),
        join(per_level(p.pgid.load(Ordering::Relaxed))),
        join(per_level(p.sid.load(Ordering::Relaxed))),
    )
}

/// Puts the multi-level `NS*` lines in place of the single-number ones `fmt` writes.
fn with_ns_lines(text: Vec<u8>, lines: &str) -> Vec<u8> {
    let s = String::from_utf8_lossy(&text);
    let mut out = String::with_capacity(s.len() + lines.len());
    let mut done = false;
    for l in s.split_inclusive('\n') {
        if l.starts_with("NStgid:")
            || l.starts_with("NSpid:")
            || l.starts_with("NSpgid:")
            || l.starts_with("NSsid:")
        {
            if !done {
                out.push_str(lines);
                done = true;
            }
            continue;
        }
        out.push_str(l);
    }
    out.into_bytes()
}

fn status_info(k: &Kernel, t: &Target, p: &Process) -> fmt::StatusInfo {
    let st = state(t, p);
    let creds = *lock(&p.creds);
    let vm = (st != 'Z').then(|| {
        let m = mm_figures(p);
        let kb = |x: u64| x * m.page_kb;
        fmt::VmInfo {
            peak: kb(m.total),
            size: kb(m.total),
            hwm: kb(m.rss),
            lck: kb(m.locked),
            rss: kb(m.rss),
            rss_anon: kb(m.rss),
            rss_file: 0,
            rss_shmem: 0,
            data: kb(m.data),
            stk: kb(m.stack),
            exe: kb(m.exe),
            lib: kb(m.lib),
            pte: 0,
        }
    });
    let max_fd = lock(&p.files()).iter().map(|(fd, _)| fd).max();
    let main = t.main_task(p);
    let (blocked, pending) = main
        .as_ref()
        .map(|m| (*lock(&m.sigmask), lock(&m.pending).bits()))
        .unwrap_or_default();
    let shared = lock(&p.shared_pending).bits();
    let (ign, cgt) = sig_sets(p);
    let ids = Ids::of(k, t, p);
    fmt::StatusInfo {
        name: lock(&p.comm).clone(),
        umask: Some(lock(&p.fs).umask),
        state: st,
        tgid: ids.tgid,
        pid: ids.pid,
        ppid: ids.ppid,
        tracer: main
            .as_ref()
            .map(|m| um_kernel::ptrace::tracer_pid(m))
            .filter(|&g| g != 0)
            .map_or(0, |g| vnr(k, &viewer_ns(), g)),
        // fs/proc/array.c task_state: ids through the reader's user namespace.
        uids: [creds.uid, creds.euid, creds.suid, creds.fsuid].map(um_kernel::userns::uid_out),
        gids: [creds.gid, creds.egid, creds.sgid, creds.fsgid].map(um_kernel::userns::gid_out),
        fdsize: fd_size(max_fd),
        groups: Vec::new(),
        pgid: ids.pgid,
        sid: ids.sid,
        vm,
        threads: live_threads(p).len() as u64,
        sigq: (
            u64::from((pending | shared).count_ones()),
            lock(&p.rlimits)[11].0,
        ),
        sigpnd: pending,
        shdpnd: shared,
        sigblk: blocked,
        sigign: ign,
        sigcgt: cgt,
        // The sets themselves (fs/proc/array.c render_cap_t); they hold in the process's
        // user namespace.
        caps: {
            let c = *lock(&p.caps);
            [c.inheritable, c.permitted, c.effective, c.bset, c.ambient]
        },
        no_new_privs: lock(&p.caps).no_new_privs,
        seccomp: main
            .as_ref()
            .map(|m| (m.seccomp.mode(), m.seccomp.filter_count()))
            .unwrap_or_default(),
        ncpus: super::system::ncpus(),
    }
}

/// Reads `[start, end)` of the process's memory, at most `cap` bytes; what is unreadable ends it.
fn read_range(p: &Process, start: u64, end: u64, cap: u64) -> Vec<u8> {
    if end <= start {
        return Vec::new();
    }
    let len = (end - start).min(cap) as usize;
    let mm = lock(&p.mm).clone();
    let mut m = lock_mm(&mm);
    let mut out = vec![0u8; len];
    // Page by page, so an unreadable page only cuts the tail.
    let page = m.granule().size() as usize;
    let mut done = 0;
    while done < len {
        let a = start + done as u64;
        let n = (page - (a as usize % page)).min(len - done);
        if m.read_bytes(a, &mut out[done..done + n]).is_err() {
            break;
        }
        done += n;
    }
    out.truncate(done);
    out
}

/// The most `cmdline`/`environ` returns (Linux pages through any length; we snapshot).
const ARG_CAP: u64 = 2 << 20;

/// `/proc/PID/cmdline` (fs/proc/base.c `get_mm_cmdline`): the argument strings; if the
/// program overwrote the final NUL (setproctitle), the text up to the first NUL, running on
/// into the environment area.
fn cmdline(p: &Process) -> Vec<u8> {
    let (a0, a1, e0, e1) = *lock(&p.arg_range);
    if a1 <= a0 {
        return Vec::new();
    }
    let mut v = read_range(p, a0, a1, ARG_CAP);
    if v.last().is_some_and(|&b| b != 0) && v.len() as u64 == a1 - a0 {
        let end = if e0 == a1 && e1 >= e0 { e1 } else { a1 };
        v = read_range(p, a0, end, ARG_CAP);
        if let Some(i) = v.iter().position(|&b| b == 0) {
            v.truncate(i);
        }
    }
    v
}

/// `/proc/PID/maps`, or with `smaps` `/proc/PID/smaps` (fs/proc/task_mmu.c `show_smap`):
/// each vma's line followed by its memory figures.
fn maps(p: &Process, smaps: bool) -> Vec<u8> {
    let exe = lock(&p.exe).as_ref().map(|e| e.dentry.clone());
    let mm = lock(&p.mm).clone();
    let vmas = lock_mm(&mm).vmas();
    let mut s = String::new();
    for v in vmas {
        let (dev, ino) = match &v.backing {
            // The page-cache id of a hostfs file carries its inode number in the low bits.
            Backing::File { file, .. } => ((0, 0), file.id() & 0xff_ffff_ffff),
            _ => ((0, 0), 0),
        };
        let mut name = v.path();
        // Files name themselves by their last component; the executable's full path is known.
        if let (Some(n), Some(e)) = (&name, &exe) {
            if matches!(v.backing, Backing::File { .. }) && n.as_bytes() == e.name.as_slice() {
                name = Some(String::from_utf8_lossy(&e.path()).into_owned());
            }
        }
        s.push_str(&fmt::maps_line(
            v.start,
            v.end,
            (
                v.prot.contains(Prot::READ),
                v.prot.contains(Prot::WRITE),
                v.prot.contains(Prot::EXEC),
            ),
            v.is_shared(),
            v.backing.offset(),
            dev,
            ino,
            name.as_deref(),
        ));
        if smaps {
            s.push_str(&smaps_fields(&lock_mm(&mm), &v));
        }
    }
    s.into_bytes()
}

/// The figures `show_smap` prints for one vma, in kB. Every page here is mapped once per
/// address space, so Pss is Rss; anonymous pages are always dirty; a locked vma's resident
/// pages are its Locked figure.
fn smaps_fields(m: &um_mm::Mm, v: &um_mm::Vma) -> String {
    let g = m.granule();
    let kb = g.size() / 1024;
    let (mut rss, mut anon, mut shared_clean, mut shared_dirty, mut priv_clean, mut priv_dirty) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    m.for_each_pte(v.start, v.end, |_, pte| {
        rss += 1;
        let dirty = pte.flags.contains(PteFlags::ANON) || pte.flags.contains(PteFlags::DIRTY);
        let shared = pte.flags.contains(PteFlags::SHARED);
        if pte.flags.contains(PteFlags::ANON) && !shared {
            anon += 1;
        }
        match (shared, dirty) {
            (true, false) => shared_clean += 1,
            (true, true) => shared_dirty += 1,
            (false, false) => priv_clean += 1,
            (false, true) => priv_dirty += 1,
        }
    });
    let locked = if v.lock == um_mm::VmLock::None {
        0
    } else {
        rss
    };
    let mut out = String::new();
    for (k, n) in [
        ("Size", g.pages(v.len())),
        ("KernelPageSize", 1),
        ("MMUPageSize", 1),
        ("Rss", rss),
        ("Pss", rss),
        ("Pss_Dirty", shared_dirty + priv_dirty),
        ("Shared_Clean", shared_clean),
        ("Shared_Dirty", shared_dirty),
        ("Private_Clean", priv_clean),
        ("Private_Dirty", priv_dirty),
        ("Referenced", rss),
        ("Anonymous", anon),
        ("KSM", 0),
        ("LazyFree", 0),
        ("AnonHugePages", 0),
        ("ShmemPmdMapped", 0),
        ("FilePmdMapped", 0),
        ("Shared_Hugetlb", 0),
        ("Private_Hugetlb", 0),
        ("Swap", 0),
        ("SwapPss", 0),
        ("Locked", locked),
    ] {
        // "%-16s%8lu kB" (SEQ_PUT_DEC in task_mmu.c pads the name to 16 with the colon).
        out.push_str(&format!("{:<16}{:>8} kB\n", format!("{k}:"), n * kb));
    }
    out.push_str("THPeligible:    0\n");
    out.push_str(&format!("VmFlags: {}\n", vm_flags(v)));
    out
}

/// The `VmFlags:` mnemonics of a vma (task_mmu.c `show_smap_vma_flags`), those that apply here.
fn vm_flags(v: &um_mm::Vma) -> String {
    let mut f = Vec::new();
    for (on, name) in [
        (v.prot.contains(Prot::READ), "rd"),
        (v.prot.contains(Prot::WRITE), "wr"),
        (v.prot.contains(Prot::EXEC), "ex"),
        (v.is_shared(), "sh"),
        (true, "mr"),
        (true, "mw"),
        (true, "me"),
        (v.is_shared(), "ms"),
        (v.grows_down(), "gd"),
        (v.lock != um_mm::VmLock::None, "lo"),
    ] {
        if on {
            f.push(name);
        }
    }
    f.join(" ") + " "
}

/// Bit 63 of a pagemap entry: the page is present.
const PM_PRESENT: u64 = 1 << 63;
/// Bit 61: a file page or shared anonymous memory.
const PM_FILE: u64 = 1 << 61;
/// Bits 0-54: the page frame number.
const PM_PFN_MASK: u64 = (1 << 55) - 1;

/// `/proc/PID/pagemap` (fs/proc/task_mmu.c `pagemap_read`; Documentation/admin-guide/mm/
/// pagemap.rst): one 64-bit entry per virtual page, read at `vaddr / page size * 8`. Frame
/// numbers (of guest physical memory) only for a reader with CAP_SYS_ADMIN, as Linux hides
/// them from others since 4.2.
pub struct PagemapFile {
    process: std::sync::Weak<Process>,
    st: Kstat,
    show_pfn: bool,
}

impl PagemapFile {
    pub fn open(t: &Target, st: Kstat) -> SysResult<PagemapFile> {
        let p = t.proc()?;
        may_access(&p)?;
        let show_pfn =
            um_kernel::current::current().is_none_or(|c| lock(&c.process.creds).euid == 0);
        Ok(PagemapFile {
            process: Arc::downgrade(&p),
            st,
            show_pfn,
        })
    }
}

impl FileOps for PagemapFile {
    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        // pagemap_read: offset and count in whole entries.
        if off % 8 != 0 || buf.len() % 8 != 0 {
            return Err(Errno::EINVAL);
        }
        let p = self.process.upgrade().ok_or(Errno::ESRCH)?;
        let mm = lock(&p.mm).clone();
        let m = lock_mm(&mm);
        let size = m.granule().size();
        let end_page = m.layout().task_size / size;
        let first = off / 8;
        if first >= end_page {
            return Ok(0);
        }
        let n = (buf.len() as u64 / 8).min(end_page - first);
        let mut entries = vec![0u64; n as usize];
        m.for_each_pte(first * size, (first + n) * size, |va, pte| {
            let mut e = PM_PRESENT;
            if pte.flags.intersects(PteFlags::FILE | PteFlags::SHARED) {
                e |= PM_FILE;
            }
            if self.show_pfn {
                e |= u64::from(pte.frame.0) & PM_PFN_MASK;
            }
            entries[(va / size - first) as usize] = e;
        });
        for (i, e) in entries.iter().enumerate() {
            buf[i * 8..i * 8 + 8].copy_from_slice(&e.to_le_bytes());
        }
        Ok(n as usize * 8)
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(self.st)
    }

    fn can_poll(&self) -> bool {
        false
    }
}

/// `/proc/PID/mem` (fs/proc/base.c `mem_open`, `mem_rw`): the process's memory at the file
/// offset, read and written as a tracer's PTRACE_PEEKDATA/POKEDATA do (FOLL_FORCE: a
/// read-only text page takes a breakpoint, COW-broken). Opening needs ptrace attach rights
/// (`proc_mem_open` with PTRACE_MODE_ATTACH); the address space is the one of the open, and
/// once it is gone reads return 0 (Linux: `mmget_not_zero` fails). A transfer that copies
/// nothing fails with EIO (`access_remote_vm` returned 0), a partial one returns its length.
/// Debuggers (gdb's `linux_proc_xfer_memory_partial`) use it in preference to PEEKDATA.
pub struct MemFile {
    mm: Weak<Mutex<um_mm::Mm>>,
    st: Kstat,
}

/// The largest chunk a `/proc/PID/mem` transfer copies under one mm lock (Linux copies a
/// page at a time through a bounce page).
const MEM_CHUNK: usize = 64 << 10;

impl MemFile {
    pub fn open(t: &Target, st: Kstat) -> SysResult<MemFile> {
        let p = t.proc()?;
        if let Some(cur) = um_kernel::current::current() {
            um_kernel::ptrace::may_access_mem(&cur.process, &p).map_err(|_| Errno::EACCES)?;
        }
        let mm = Arc::downgrade(&lock(&p.mm).clone());
        Ok(MemFile { mm, st })
    }

    /// Copies `len` bytes at `off` with `f(mm, addr, at, n)` (at: offset in the caller's
    /// buffer), a chunk at a time; after a failed chunk, page by page up to the bad page.
    fn rw(
        &self,
        len: usize,
        off: u64,
        mut f: impl FnMut(&mut um_mm::Mm, u64, usize, usize) -> SysResult<()>,
    ) -> SysResult<usize> {
        let Some(mm) = self.mm.upgrade() else {
            return Ok(0);
        };
        let mut done = 0usize;
        'chunks: while done < len {
            let n = (len - done).min(MEM_CHUNK);
            let Some(addr) = off.checked_add(done as u64) else {
                break;
            };
            if f(&mut lock_mm(&mm), addr, done, n).is_ok() {
                done += n;
                continue;
            }
            let end = done + n;
            while done < end {
                let a = off + done as u64;
                let n1 = (end - done).min(4096 - (a % 4096) as usize);
                if f(&mut lock_mm(&mm), a, done, n1).is_err() {
                    break 'chunks;
                }
                done += n1;
            }
        }
        if done == 0 && len > 0 {
            return Err(Errno::EIO);
        }
        Ok(done)
    }
}

impl FileOps for MemFile {
    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let len = buf.len();
        self.rw(len, off, |m, addr, at, n| {
            m.read_bytes_force(addr, &mut buf[at..at + n])
        })
    }

    fn write(&self, _io: &IoCtx<'_>, data: &[u8], off: u64) -> SysResult<usize> {
        self.rw(data.len(), off, |m, addr, at, n| {
            m.write_bytes_force(addr, &data[at..at + n])
        })
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(self.st)
    }

    fn can_poll(&self) -> bool {
        false
    }
}

/// The mounts of `p`'s namespace seen from `p`'s root (fs/proc_namespace.c
/// `mounts_open_common` takes the task's namespace and root).
fn mounts_seen_by(p: &Process) -> Vec<crate::mount::MountInfo> {
    let root = lock(&p.fs).root.clone();
    crate::mount::mounts_of(&um_kernel::mntns::of(p), &root)
}

fn mounts_text(p: &Process) -> Vec<u8> {
    mounts_seen_by(p).iter().flat_map(|m| m.line()).collect()
}

/// `/proc/PID/mountinfo` (fs/proc_namespace.c `show_mountinfo`): mount id, parent id,
/// `major:minor` of the mounted root, the root inside its file system, the mount point from
/// the reader's root, per-mount options, the optional fields (`shared:N`, `master:N`,
/// `unbindable`), `-`, type, source, the file system's options.
fn mountinfo_text(p: &Process) -> Vec<u8> {
    let ms = mounts_seen_by(p);
    let mut s = String::new();
    for m in &ms {
        let mut mnt = Vec::new();
        let mut sup = Vec::new();
        for (j, o) in m.options.split(',').enumerate() {
            if j == 0 {
                mnt.push(o);
                sup.push(o);
            } else if matches!(
                o,
                "nosuid"
                    | "nodev"
                    | "noexec"
                    | "noatime"
                    | "nodiratime"
                    | "relatime"
                    | "nosymfollow"
            ) {
                mnt.push(o);
            } else {
                sup.push(o);
            }
        }
        s.push_str(&fmt::mountinfo_line(
            m.id as u32,
            m.parent as u32,
            um_kernel::vfs::decode_dev(m.dev),
            &m.root_path,
            &m.target,
            &mnt.join(","),
            &m.optional_fields(),
            &m.fstype,
            m.source.as_bytes(),
            &sup.join(","),
        ));
    }
    s.into_bytes()
}

/// `/proc/PID/syscall`'s line from a thread's [`Task::cur_syscall`] words.
fn syscall_line(cur: &[AtomicU64; 9]) -> Vec<u8> {
    let nr = cur[0].load(Ordering::Acquire);
    if nr == 0 {
        return b"running\n".to_vec();
    }
    let mut s = (nr - 1).to_string();
    for w in &cur[1..] {
        let _ = write!(s, " {:#x}", w.load(Ordering::Relaxed));
    }
    s.push('\n');
    s.into_bytes()
}

/// The content of a file under `/proc/PID`.
pub fn generate(_fs: &Arc<ProcFs>, t: &Target, n: PidNode, _io: &IoCtx<'_>) -> SysResult<Vec<u8>> {
    let p = t.proc()?;
    let zombie = lock(&p.exit).is_some();
    Ok(match n {
        PidNode::File(f) => match f {
            PidFile::Stat => fmt::stat_line(&stat_info(&*_fs.kernel()?, t, &p)),
            PidFile::Status => {
                let k = _fs.kernel()?;
                let text = fmt::status_text(&status_info(&k, t, &p));
                with_ns_lines(text, &ns_lines(&k, t, &p))
            }
            PidFile::Statm => {
                if zombie {
                    fmt::statm_line(0, 0, 0, 0, 0).into_bytes()
                } else {
                    let m = mm_figures(&p);
                    fmt::statm_line(m.total, m.rss, 0, m.exe, m.data + m.stack).into_bytes()
                }
            }
            PidFile::Cmdline if !zombie => cmdline(&p),
            PidFile::Environ if !zombie => {
                may_access(&p)?;
                let (_, _, e0, e1) = *lock(&p.arg_range);
                read_range(&p, e0, e1, ARG_CAP)
            }
            PidFile::Maps if !zombie => maps(&p, false),
            PidFile::Smaps if !zombie => {
                may_access(&p)?;
                maps(&p, true)
            }
            PidFile::Cmdline | PidFile::Environ | PidFile::Maps | PidFile::Smaps => Vec::new(),
            PidFile::Pagemap | PidFile::Mem => return Err(Errno::EINVAL),
            // fs/proc/base.c proc_pid_auxv: the saved vector, pairs of native words; a
            // zombie's is empty (its mm is gone).
            PidFile::Auxv if !zombie => {
                may_access(&p)?;
                lock(&p.auxv)
                    .iter()
                    .flat_map(|&(k, v)| k.to_le_bytes().into_iter().chain(v.to_le_bytes()))
                    .collect()
            }
            PidFile::Auxv => Vec::new(),
            PidFile::Comm => {
                let mut c = lock(&p.comm).clone();
                c.push(b'\n');
                c
            }
            PidFile::Limits => fmt::limits_text(&lock(&p.rlimits)).into_bytes(),
            PidFile::Mounts => mounts_text(&p),
            PidFile::Mountinfo => mountinfo_text(&p),
            PidFile::Wchan => b"0".to_vec(),
            // fs/proc/base.c proc_pid_syscall (ptrace access checked): "running" for a thread
            // in guest code, else the number, six arguments, sp and pc in hex.
            PidFile::Syscall => {
                may_access(&p)?;
                match t.main_task(&p) {
                    Some(task) => syscall_line(&task.cur_syscall),
                    None => b"running\n".to_vec(),
                }
            }
            // The v2 hierarchy's line (kernel/cgroup/cgroup.c proc_cgroup_show), from um-cgroup.
            PidFile::Cgroup => super::registry::pid_cgroup(p.pid),
            PidFile::OomScore => b"0\n".to_vec(),
            PidFile::OomScoreAdj => format!("{}\n", oom_score_adj(&p)).into_bytes(),
            PidFile::CoredumpFilter => {
                format!("{:08x}\n", p.coredump_filter.load(Ordering::Relaxed)).into_bytes()
            }
            PidFile::OomAdj => {
                // oom_adj_read: the adj scaled back to -17..15.
                let a = oom_score_adj(&p);
                let v = if a == 1000 { 15 } else { a * 17 / 1000 };
                format!("{v}\n").into_bytes()
            }
            PidFile::TimensOffsets => {
                let ns = lock(&p.timens).for_children.clone();
                um_kernel::timens::format_offsets(&ns.offsets()).into_bytes()
            }
            // uid_m_show / gid_m_show: lower ids relative to the reader's namespace.
            PidFile::UidMap | PidFile::GidMap => {
                let kind = if f == PidFile::UidMap {
                    um_kernel::userns::MapKind::Uid
                } else {
                    um_kernel::userns::MapKind::Gid
                };
                let reader = um_kernel::userns::current();
                um_kernel::userns::format_map(&um_kernel::userns::of(&p), kind, &reader)
                    .into_bytes()
            }
            PidFile::Setgroups => {
                um_kernel::userns::setgroups_text(&um_kernel::userns::of(&p))
                    .as_bytes()
                    .to_vec()
            }
            PidFile::Io => b"rchar: 0\nwchar: 0\nsyscr: 0\nsyscw: 0\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n".to_vec(),
        },
        PidNode::FdInfo(fd) => {
            may_access(&p)?;
            let (file, cloexec) = {
                let files = p.files();
                let table = lock(&files);
                let e = table
                    .iter()
                    .find(|(f, _)| *f == fd)
                    .map(|(_, e)| (e.file.clone(), e.cloexec));
                e.ok_or(Errno::ENOENT)?
            };
            // Linux reads f_pos unlocked; a reader must not wait on a read in progress.
            let pos = match file.pos.try_lock() {
                Ok(g) => *g,
                Err(std::sync::TryLockError::Poisoned(e)) => *e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => 0,
            };
            let flags = file.flags() | if cloexec { O_CLOEXEC } else { 0 };
            let ino = file.ops.stat().map_or(0, |s| s.ino);
            let mnt_id = file
                .dentry
                .as_ref()
                .and_then(|d| crate::mount::mount_of(d))
                .map_or(21, |m| m.id as u32);
            fmt::fdinfo_text(pos, flags, mnt_id, ino).into_bytes()
        }
        _ => return Err(Errno::EINVAL),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers() {
        assert_eq!(parse_num(b"12"), Some(12));
        assert_eq!(parse_num(b"012"), None);
        assert_eq!(parse_num(b"self"), None);
        assert_eq!(parse_num(b""), None);
        assert_eq!(parse_num(b"99999999999"), None);
        assert_eq!(fd_size(None), 64);
        assert_eq!(fd_size(Some(3)), 64);
        assert_eq!(fd_size(Some(100)), 256);
        assert_eq!(fd_size(Some(600)), 1024);
        assert!(crate::mount::under(b"/proc/sys", b"/proc"));
        assert!(!crate::mount::under(b"/procx", b"/proc"));
        assert!(crate::mount::under(b"/proc", b"/"));
    }

    #[test]
    fn fd_link_modes() {
        assert_eq!(mode_of(PidNode::Fd(0), 0), mode::S_IFLNK | 0o500);
        assert_eq!(mode_of(PidNode::Fd(0), 1), mode::S_IFLNK | 0o300);
        assert_eq!(mode_of(PidNode::Fd(0), 2), mode::S_IFLNK | 0o700);
        assert_eq!(
            mode_of(PidNode::File(PidFile::Comm), 0),
            mode::S_IFREG | 0o644
        );
    }
}
