//! procfs, the process information pseudo-file system (Linux `fs/proc/`).
//!
//! [`mount`] builds one instance: a [`ProcFs`] (holding the kernel weakly, so the mount table
//! and the kernel do not keep each other alive) and its root [`ProcInode`]. Every node is a
//! `ProcInode` whose [`Node`] says what it is: a fixed directory, a file generated from the
//! kernel's state when it is opened (like Linux `single_open` seq files, so one `read` loop sees
//! one consistent snapshot), a symlink, the `self`/`thread-self` links, or something under
//! `/proc/PID` ([`pid`]). The caller of `readlink("/proc/self")` is found through
//! [`um_kernel::current`], since the `Inode` interface carries no caller.
//!
//! `/proc/PID/{cwd,root,exe,fd/N}` are magic links (`Inode::magic_link`): the walk jumps to the
//! target's dentry instead of walking the text, so `/proc/self/root` is the process root and
//! can never lead to a host path.
//!
//! Files: [`fmt`] formats (pure, unit-tested), [`pid`] the per-process directories, [`system`]
//! the system-wide files and `/proc/sys`, [`registry`] the entries other subsystems add
//! (`proc_create`, `register_sysctl`: `/proc/sysvipc` from `um-ipc`, `/proc/sys/net` from `um-net`). Neighbours: `crate::mount` (mounts it, and gives
//! `/proc/mounts` its content), [`crate::sysfs`].

mod config;
pub mod fmt;
mod pid;
pub mod registry;
mod system;

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use um_kernel::kernel::Kernel;
use um_kernel::vfs::{DirEntry, FileOps, Inode, Kstat, SetAttr, Statfs, mode};
use um_kernel::wait::{IoCtx, PollTable};
use um_uapi::{Errno, SysResult};

pub use pid::{Target, fd_name};
pub use system::ncpus;
pub(crate) use system::{HugeKnob, huge_knob};

/// `PROC_SUPER_MAGIC`.
pub const PROC_SUPER_MAGIC: i64 = 0x9fa0;
/// The root directory's inode number (`PROC_ROOT_INO`).
pub const PROC_ROOT_INO: u64 = 1;
/// Anonymous device numbers (major 0) the pseudo file systems report in `st_dev`.
pub const PROC_DEV: (u32, u32) = (0, 22);

/// One mounted procfs.
pub struct ProcFs {
    kernel: Weak<Kernel>,
    fs_id: u64,
    next_ino: AtomicU64,
    dev: (u32, u32),
    /// `f_type` for statfs (procfs, or sysfs which reuses these nodes).
    magic: i64,
}

impl ProcFs {
    /// A new instance of a pseudo file system built from procfs nodes (procfs itself, sysfs).
    pub fn new_instance(k: &Arc<Kernel>, magic: i64, dev: (u32, u32)) -> Arc<ProcFs> {
        Arc::new(ProcFs {
            kernel: Arc::downgrade(k),
            fs_id: um_kernel::vfs::new_fs_id(),
            next_ino: AtomicU64::new(PROC_ROOT_INO + 1),
            dev,
            magic,
        })
    }

    /// The kernel, or ENOENT once it is gone (shutdown).
    pub fn kernel(&self) -> SysResult<Arc<Kernel>> {
        self.kernel.upgrade().ok_or(Errno::ENOENT)
    }

    /// A fresh inode number of this instance (for inodes made outside procfs, as the block
    /// layer's sysfs directories).
    pub fn alloc_ino(&self) -> u64 {
        self.next_ino.fetch_add(1, Ordering::Relaxed)
    }
}

/// Makes the content of a generated file, at open.
pub type Gen = Box<dyn Fn(&Arc<Kernel>, &IoCtx<'_>) -> SysResult<Vec<u8>> + Send + Sync>;
/// Takes a write to a generated file.
pub type Put = Box<dyn Fn(&Arc<Kernel>, &IoCtx<'_>, &[u8]) -> SysResult<usize> + Send + Sync>;

/// A directory whose entries are computed each time it is listed or searched
/// (`/sys/module`).
pub trait DynDir: Send + Sync {
    /// The entries now.
    fn entries(&self, fs: &Arc<ProcFs>) -> Vec<(Vec<u8>, Arc<ProcInode>)>;
}

/// What a procfs inode is.
pub enum Node {
    /// A directory with fixed entries; `pids` adds one directory per process, `self` and
    /// `thread-self` (the root).
    Dir {
        entries: Vec<(Vec<u8>, Arc<ProcInode>)>,
        pids: bool,
    },
    /// A file generated at open.
    File { render: Gen, put: Option<Put> },
    /// A symlink with fixed text.
    Link(Vec<u8>),
    /// `/proc/self`: the caller's pid.
    SelfLink,
    /// `/proc/thread-self`: `PID/task/TID` of the caller.
    ThreadSelf,
    /// Something in `/proc/PID`.
    Pid(pid::Target, pid::PidNode),
    /// A directory with computed entries.
    Dyn(Box<dyn DynDir>),
}

/// A procfs inode.
pub struct ProcInode {
    fs: Arc<ProcFs>,
    ino: u64,
    /// Type and permission bits.
    mode: u32,
    node: Node,
    me: Weak<ProcInode>,
}

/// `DT_*` of a mode.
fn dt_of(m: u32) -> u8 {
    match m & mode::S_IFMT {
        mode::S_IFDIR => 4,
        mode::S_IFLNK => 10,
        mode::S_IFREG => 8,
        _ => 0,
    }
}

/// Realtime now, for inode times.
fn now() -> (i64, i64) {
    um_os_linux::host::clock_gettime(libc::CLOCK_REALTIME).unwrap_or((0, 0))
}

impl ProcInode {
    /// A new inode of `fs`.
    pub fn new(fs: &Arc<ProcFs>, ino: u64, mode: u32, node: Node) -> Arc<ProcInode> {
        Arc::new_cyclic(|me| ProcInode {
            fs: fs.clone(),
            ino,
            mode,
            node,
            me: me.clone(),
        })
    }

    /// The file system this inode belongs to.
    pub fn fs(&self) -> &Arc<ProcFs> {
        &self.fs
    }

    fn is_dir(&self) -> bool {
        self.mode & mode::S_IFMT == mode::S_IFDIR
    }

    /// A fixed directory.
    pub fn dir(fs: &Arc<ProcFs>, entries: Vec<(&str, Arc<ProcInode>)>) -> Arc<ProcInode> {
        let entries = entries
            .into_iter()
            .map(|(n, i)| (n.as_bytes().to_vec(), i))
            .collect();
        ProcInode::new(
            fs,
            fs.alloc_ino(),
            mode::S_IFDIR | 0o555,
            Node::Dir {
                entries,
                pids: false,
            },
        )
    }

    /// A read-only generated file.
    pub fn file(
        fs: &Arc<ProcFs>,
        render: impl Fn(&Arc<Kernel>, &IoCtx<'_>) -> SysResult<Vec<u8>> + Send + Sync + 'static,
    ) -> Arc<ProcInode> {
        ProcInode::new(
            fs,
            fs.alloc_ino(),
            mode::S_IFREG | 0o444,
            Node::File {
                render: Box::new(render),
                put: None,
            },
        )
    }

    /// A read-only file with fixed text.
    pub fn text(fs: &Arc<ProcFs>, s: impl Into<String>) -> Arc<ProcInode> {
        let s: String = s.into();
        ProcInode::file(fs, move |_, _| Ok(s.clone().into_bytes()))
    }

    /// A writable generated file (mode 0644).
    pub fn file_rw(
        fs: &Arc<ProcFs>,
        render: impl Fn(&Arc<Kernel>, &IoCtx<'_>) -> SysResult<Vec<u8>> + Send + Sync + 'static,
        put: impl Fn(&Arc<Kernel>, &IoCtx<'_>, &[u8]) -> SysResult<usize> + Send + Sync + 'static,
    ) -> Arc<ProcInode> {
        ProcInode::new(
            fs,
            fs.alloc_ino(),
            mode::S_IFREG | 0o644,
            Node::File {
                render: Box::new(render),
                put: Some(Box::new(put)),
            },
        )
    }

    /// A symlink with fixed text.
    pub fn link(fs: &Arc<ProcFs>, target: &str) -> Arc<ProcInode> {
        ProcInode::new(
            fs,
            fs.alloc_ino(),
            mode::S_IFLNK | 0o777,
            Node::Link(target.as_bytes().to_vec()),
        )
    }

    /// Directory entries (with `.` and `..`).
    fn entries(&self) -> SysResult<Vec<DirEntry>> {
        let mut out = vec![
            DirEntry {
                ino: self.ino,
                kind: 4,
                name: b".".to_vec(),
            },
            DirEntry {
                ino: self.ino,
                kind: 4,
                name: b"..".to_vec(),
            },
        ];
        match &self.node {
            Node::Dir { entries, pids } => {
                for (n, i) in entries {
                    out.push(DirEntry {
                        ino: i.ino,
                        kind: dt_of(i.mode),
                        name: n.clone(),
                    });
                }
                if *pids {
                    for (n, i) in registry::root_dyn(&self.fs) {
                        out.push(DirEntry {
                            ino: i.ino,
                            kind: dt_of(i.mode),
                            name: n,
                        });
                    }
                    out.extend(pid::root_entries(&self.fs)?);
                }
            }
            Node::Dyn(d) => {
                for (n, i) in d.entries(&self.fs) {
                    out.push(DirEntry {
                        ino: i.ino,
                        kind: dt_of(i.mode),
                        name: n,
                    });
                }
            }
            Node::Pid(t, n) => out.extend(pid::entries(&self.fs, t, *n)?),
            _ => return Err(Errno::ENOTDIR),
        }
        Ok(out)
    }

    /// The write side of a file.
    fn put(&self, io: &IoCtx<'_>, data: &[u8]) -> SysResult<usize> {
        match &self.node {
            Node::File { put: Some(p), .. } => p(&self.fs.kernel()?, io, data),
            Node::Pid(t, n) => pid::write(&self.fs, t, *n, io, data),
            _ => Err(Errno::EINVAL),
        }
    }
}

impl Inode for ProcInode {
    /// `/proc/PID` (a process, not `task/TID`) is a pidfd to pidfd_send_signal(2), as Linux's
    /// `tgid_pidfd_to_pid` (fs/proc/base.c) accepts `proc_tgid_base_operations` files.
    fn pidfd_process(&self) -> Option<Weak<um_kernel::task::Process>> {
        match &self.node {
            Node::Pid(t, pid::PidNode::Dir) => t.tgid_process(),
            _ => None,
        }
    }

    fn stat(&self) -> SysResult<Kstat> {
        let (uid, gid) = match &self.node {
            Node::Pid(t, _) => t.owner()?,
            _ => (0, 0),
        };
        let t = now();
        Ok(Kstat {
            dev: um_kernel::vfs::encode_dev(self.fs.dev.0, self.fs.dev.1),
            ino: self.ino,
            mode: self.mode,
            nlink: if self.is_dir() { 2 } else { 1 },
            uid,
            gid,
            rdev: 0,
            size: 0,
            blksize: 1024,
            blocks: 0,
            atime: t,
            mtime: t,
            ctime: t,
        })
    }

    fn lookup(&self, name: &[u8]) -> SysResult<Arc<dyn Inode>> {
        match &self.node {
            Node::Dir { entries, pids } => {
                if let Some((_, i)) = entries.iter().find(|(n, _)| n == name) {
                    return Ok(i.clone());
                }
                if *pids {
                    let dynamic = registry::root_dyn(&self.fs);
                    if let Some((_, i)) = dynamic.into_iter().find(|(n, _)| n == name) {
                        return Ok(i);
                    }
                    return pid::root_lookup(&self.fs, name).map(|i| i as Arc<dyn Inode>);
                }
                Err(Errno::ENOENT)
            }
            Node::Dyn(d) => d
                .entries(&self.fs)
                .into_iter()
                .find(|(n, _)| n == name)
                .map(|(_, i)| i as Arc<dyn Inode>)
                .ok_or(Errno::ENOENT),
            Node::Pid(t, n) => pid::lookup(&self.fs, t, *n, name).map(|i| i as Arc<dyn Inode>),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn readlink(&self) -> SysResult<Vec<u8>> {
        match &self.node {
            Node::Link(t) => Ok(t.clone()),
            // fs/proc/self.c: ENOENT when there is no current task (a kernel thread).
            Node::SelfLink => {
                let t = um_kernel::current::current().ok_or(Errno::ENOENT)?;
                // Numbers of the reader's pid namespace (procfs/pid.rs `viewer_ns`).
                Ok(t.process.pids.own().to_string().into_bytes())
            }
            Node::ThreadSelf => {
                let t = um_kernel::current::current().ok_or(Errno::ENOENT)?;
                Ok(format!("{}/task/{}", t.process.pids.own(), t.pids.own()).into_bytes())
            }
            Node::Pid(t, n) => pid::readlink(t, *n),
            _ => Err(Errno::EINVAL),
        }
    }

    fn magic_link(&self) -> Option<Arc<um_kernel::vfs::Dentry>> {
        match &self.node {
            Node::Pid(t, n) => pid::magic_link(t, *n),
            _ => None,
        }
    }

    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
        let me = self.me.upgrade().ok_or(Errno::ENOENT)?;
        let st = self.stat()?;
        if self.is_dir() {
            return Ok(Box::new(ProcDirFile {
                entries: self.entries()?,
                st,
            }));
        }
        if let Node::Pid(t, pid::PidNode::File(pid::PidFile::Pagemap)) = &self.node {
            return Ok(Box::new(pid::PagemapFile::open(t, st)?));
        }
        if let Node::Pid(t, pid::PidNode::File(pid::PidFile::Mem)) = &self.node {
            return Ok(Box::new(pid::MemFile::open(t, st)?));
        }
        let readable = flags & 3 != 1;
        let data = if !readable {
            Vec::new()
        } else {
            match &self.node {
                Node::File { render, .. } => render(&self.fs.kernel()?, io)?,
                Node::Pid(t, n) => pid::generate(&self.fs, t, *n, io)?,
                _ => return Err(Errno::ENXIO),
            }
        };
        Ok(Box::new(ProcFile {
            data,
            inode: me,
            st,
            mount_event: std::sync::atomic::AtomicU64::new(crate::mount::mount_event()),
        }))
    }

    fn setattr(&self, attr: &SetAttr) -> SysResult<()> {
        // fs/proc/base.c proc_setattr: mode changes are refused; the rest (O_TRUNC's size,
        // times) are accepted and change nothing.
        if attr.mode.is_some() {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    fn fs_id(&self) -> u64 {
        self.fs.fs_id
    }

    fn statfs(&self) -> SysResult<Statfs> {
        Ok(Statfs {
            fs_type: self.fs.magic,
            bsize: um_mm::page_size() as i64,
            namelen: 255,
            frsize: um_mm::page_size() as i64,
            ..Default::default()
        })
    }

    fn id(&self) -> u64 {
        self.ino
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An open procfs directory: its entries as of open.
struct ProcDirFile {
    entries: Vec<DirEntry>,
    st: Kstat,
}

impl FileOps for ProcDirFile {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(self.st)
    }

    fn readdir(&self) -> SysResult<Vec<DirEntry>> {
        Ok(self.entries.clone())
    }
}

/// An open procfs file: its content as of open.
struct ProcFile {
    data: Vec<u8>,
    inode: Arc<ProcInode>,
    st: Kstat,
    /// For `mounts` and `mountinfo`: the mount-table change count last reported by poll
    /// (Linux `proc_mounts.event`).
    mount_event: std::sync::atomic::AtomicU64,
}

impl ProcFile {
    fn is_mount_table(&self) -> bool {
        matches!(
            &self.inode.node,
            Node::Pid(
                _,
                pid::PidNode::File(pid::PidFile::Mounts | pid::PidFile::Mountinfo)
            )
        )
    }
}

impl FileOps for ProcFile {
    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let start = usize::try_from(off)
            .unwrap_or(usize::MAX)
            .min(self.data.len());
        let n = buf.len().min(self.data.len() - start);
        buf[..n].copy_from_slice(&self.data[start..start + n]);
        Ok(n)
    }

    fn write(&self, io: &IoCtx<'_>, data: &[u8], _off: u64) -> SysResult<usize> {
        self.inode.put(io, data)
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(self.st)
    }

    /// Most procfs files have no poll method in Linux (fs/proc/base.c, `single_open` files),
    /// but `mounts` and `mountinfo` (`mounts_poll`) and the sysctl files, the writable ones
    /// here (`proc_sys_poll`), do.
    fn can_poll(&self) -> bool {
        match &self.inode.node {
            Node::Pid(_, pid::PidNode::File(_)) => self.is_mount_table(),
            Node::File { put, .. } => put.is_some(),
            _ => false,
        }
    }

    /// `mounts_poll` (fs/proc_namespace.c): always readable, and POLLERR|POLLPRI once after
    /// every change of the mount table since the last report.
    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        use um_uapi::abi::poll::POLLERR;
        use um_uapi::abi::poll::POLLIN;
        use um_uapi::abi::poll::POLLPRI;
        use um_uapi::abi::poll::POLLRDNORM;
        if !self.is_mount_table() {
            return events & (0x1 | 0x4 | 0x40 | 0x100);
        }
        if let Some(pt) = pt {
            pt.wait_on(&crate::mount::MOUNT_POLL);
        }
        let mut r = POLLIN | POLLRDNORM;
        let now = crate::mount::mount_event();
        if self
            .mount_event
            .swap(now, std::sync::atomic::Ordering::AcqRel)
            != now
        {
            r |= POLLERR | POLLPRI;
        }
        r
    }
}

/// Mounts a new procfs (Linux `proc_fill_super`) and returns its root inode.
pub fn mount(k: &Arc<Kernel>) -> SysResult<Arc<dyn Inode>> {
    Ok(new_root(k))
}

/// The root inode of a new procfs instance.
pub fn new_root(k: &Arc<Kernel>) -> Arc<ProcInode> {
    let fs = ProcFs::new_instance(k, PROC_SUPER_MAGIC, PROC_DEV);
    let mut entries = system::entries(&fs);
    entries.push((
        b"self".to_vec(),
        ProcInode::new(&fs, fs.alloc_ino(), mode::S_IFLNK | 0o777, Node::SelfLink),
    ));
    entries.push((
        b"thread-self".to_vec(),
        ProcInode::new(&fs, fs.alloc_ino(), mode::S_IFLNK | 0o777, Node::ThreadSelf),
    ));
    ProcInode::new(
        &fs,
        PROC_ROOT_INO,
        mode::S_IFDIR | 0o555,
        Node::Dir {
            entries,
            pids: true,
        },
    )
}

#[cfg(test)]
mod tests;
