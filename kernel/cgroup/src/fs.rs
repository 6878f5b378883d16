//! The `cgroup2` file system: one directory per group, and the core interface files in each
//! (Linux `kernel/cgroup/cgroup.c` `cgroup_base_files`, on kernfs).
//!
//! [`CgInode`] is a group's directory or one of its files, named by the group's id
//! ([`super::tree::CgId`]), so an open descriptor of a removed group sees it gone (`ENODEV`
//! on writes, `ENOENT` on lookups) instead of keeping it alive. Files are generated when
//! opened for reading (a seq file's snapshot) and every `write` is one command, as kernfs
//! passes each write to the file's handler. As kernfs, opening a file for an access its
//! handlers lack is `EACCES`, even for root.
//!
//! Files: `cgroup.procs`, `cgroup.threads`, `cgroup.controllers`, `cgroup.subtree_control`,
//! `cgroup.max.depth`, `cgroup.max.descendants`, `cgroup.stat` everywhere; `cgroup.type`,
//! `cgroup.events` and `cgroup.kill` in non-root groups. Neighbours: [`super`] (the lock,
//! membership), [`super::tree`] (the rules).

use super::hierarchy;
use super::tree::{CONTROLLERS, CgId, Hierarchy, LIMIT_MAX, PIDS, ROOT};
use std::any::Any;
use std::sync::{Arc, OnceLock, Weak};
use um_kernel::kernel::Kernel;
use um_kernel::task::{Process, lock};
use um_kernel::vfs::{DirEntry, FileOps, Inode, Kstat, Owner, SetAttr, Statfs, mode};
use um_kernel::wait::IoCtx;
use um_uapi::{Errno, SysResult};

/// `CGROUP2_SUPER_MAGIC`.
pub const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
/// The anonymous device number the hierarchy reports in `st_dev`.
const CGROUP_DEV: (u32, u32) = (0, 27);

/// An interface file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum File {
    Procs,
    Threads,
    Controllers,
    SubtreeControl,
    Type,
    Events,
    MaxDepth,
    MaxDescendants,
    Stat,
    Kill,
    PidsMax,
    PidsCurrent,
    PidsEvents,
}

/// Which groups have a file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum On {
    /// Every group.
    All,
    /// Every group but the root (`CFTYPE_NOT_ON_ROOT`).
    NotRoot,
    /// Non-root groups whose parent enables pids (the pids controller's css exists).
    Pids,
}

/// Name, file, permission bits (`cgroup_file_mode`), and which groups have it.
const FILES: [(&str, File, u32, On); 13] = [
    ("cgroup.type", File::Type, 0o644, On::NotRoot),
    ("cgroup.procs", File::Procs, 0o644, On::All),
    ("cgroup.threads", File::Threads, 0o644, On::All),
    ("cgroup.controllers", File::Controllers, 0o444, On::All),
    (
        "cgroup.subtree_control",
        File::SubtreeControl,
        0o644,
        On::All,
    ),
    ("cgroup.events", File::Events, 0o444, On::NotRoot),
    (
        "cgroup.max.descendants",
        File::MaxDescendants,
        0o644,
        On::All,
    ),
    ("cgroup.max.depth", File::MaxDepth, 0o644, On::All),
    ("cgroup.stat", File::Stat, 0o444, On::All),
    ("cgroup.kill", File::Kill, 0o200, On::NotRoot),
    ("pids.max", File::PidsMax, 0o644, On::Pids),
    ("pids.current", File::PidsCurrent, 0o444, On::Pids),
    ("pids.events", File::PidsEvents, 0o444, On::Pids),
];

/// The files group `cg` has now.
fn files_of(h: &Hierarchy, cg: CgId) -> impl Iterator<Item = (usize, &'static str, File, u32)> {
    let pids = cg != ROOT && h.controllers(cg) & PIDS != 0;
    FILES
        .iter()
        .enumerate()
        .filter(move |(_, f)| match f.3 {
            On::All => true,
            On::NotRoot => cg != ROOT,
            On::Pids => pids,
        })
        .map(|(i, f)| (i, f.0, f.1, f.2))
}

/// The tasks (threads) of group `cg` and its descendants (`pids.current`): the live threads
/// of its processes.
pub fn pids_current(k: &Kernel, h: &Hierarchy, cg: CgId) -> u64 {
    h.subtree_procs(cg)
        .into_iter()
        .filter_map(|p| k.tasks.process(p))
        .map(|p| p.live_threads(k).len() as u64)
        .sum()
}

/// `cgroup_print_ss_mask`: the controllers' names, space separated, and a newline.
fn show_mask(mask: u32) -> Vec<u8> {
    let names: Vec<&str> = CONTROLLERS
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect();
    format!("{}\n", names.join(" ")).into_bytes()
}

/// A `cgroup.subtree_control` write (`cgroup_subtree_control_write`): `+name`/`-name`
/// tokens, the last one for a controller winning; `EINVAL` for anything else.
fn parse_subtree_control(data: &[u8]) -> SysResult<(u32, u32)> {
    let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
    let (mut enable, mut disable) = (0, 0);
    for tok in s.split_whitespace() {
        let (plus, name) = match tok.as_bytes()[0] {
            b'+' => (true, &tok[1..]),
            b'-' => (false, &tok[1..]),
            _ => return Err(Errno::EINVAL),
        };
        let i = CONTROLLERS
            .iter()
            .position(|c| *c == name)
            .ok_or(Errno::EINVAL)?;
        let bit = 1 << i;
        if plus {
            enable |= bit;
            disable &= !bit;
        } else {
            disable |= bit;
            enable &= !bit;
        }
    }
    Ok((enable, disable))
}

/// The mount options cgroup2 knows (`cgroup2_fs_parameters`); others are `EINVAL`. They
/// change nothing here (no controllers, no namespaces to delegate to).
pub fn check_options(data: &[u8]) -> SysResult<()> {
    const KNOWN: [&[u8]; 6] = [
        b"nsdelegate",
        b"favordynmods",
        b"memory_localevents",
        b"memory_recursiveprot",
        b"memory_hugetlb_accounting",
        b"pids_localevents",
    ];
    let data = data.split(|&b| b == 0).next().unwrap_or(&[]);
    for opt in data.split(|&b| b == b',').filter(|o| !o.is_empty()) {
        if !KNOWN.contains(&opt) {
            return Err(Errno::EINVAL);
        }
    }
    Ok(())
}

/// The hierarchy's one super block.
struct CgFs {
    kernel: Weak<Kernel>,
    fs_id: u64,
}

fn cgfs(k: &Arc<Kernel>) -> Arc<CgFs> {
    static FS: OnceLock<Arc<CgFs>> = OnceLock::new();
    FS.get_or_init(|| {
        Arc::new(CgFs {
            kernel: Arc::downgrade(k),
            fs_id: um_kernel::vfs::new_fs_id(),
        })
    })
    .clone()
}

/// The root directory, for a new mount: the mounter's cgroup namespace root (in a
/// namespace other than the initial one `cgroup_get_tree` roots the mount there).
pub fn root(k: &Arc<Kernel>) -> Arc<dyn Inode> {
    Arc::new(CgInode {
        fs: cgfs(k),
        cg: crate::ns_root(),
        file: None,
    })
}

/// The group a cgroup2 directory inode stands for (`None` for any other inode).
pub fn dir_group(inode: &Arc<dyn Inode>) -> Option<CgId> {
    let i = inode.as_any().downcast_ref::<CgInode>()?;
    i.file.is_none().then_some(i.cg)
}

/// Whether `fsuid`/`fsgid` may write group `cg`'s `cgroup.procs` (`cgroup_may_write`: the
/// file's mode and owner, which are the directory's owner's): root always may.
pub fn may_write(h: &Hierarchy, cg: CgId, fsuid: u32, fsgid: u32) -> SysResult<()> {
    let g = h.get(cg)?;
    let perm = FILES[1].2;
    let bits = if fsuid == 0 {
        0o2
    } else if fsuid == g.uid {
        perm >> 6
    } else if fsgid == g.gid {
        perm >> 3
    } else {
        perm
    };
    if bits & 0o2 != 0 {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

/// A group's directory (`file` None) or one of its files.
pub struct CgInode {
    fs: Arc<CgFs>,
    cg: CgId,
    file: Option<File>,
}

/// Realtime now (the clock every in-memory file system stamps with).
fn now() -> (i64, i64) {
    um_fs::tmpfs::now()
}

/// `kstrtoint(strstrip(buf), 0, ...)`: decimal, `0x` hex or `0` octal, an optional sign;
/// `EINVAL` for anything else, `ERANGE` past `int`.
fn parse_int(data: &[u8]) -> SysResult<i64> {
    parse_num(data, i64::from(i32::MIN), i64::from(i32::MAX))
}

/// `kstrto*` with base 0 for a type whose range is `min..=max`.
fn parse_num(data: &[u8], min: i64, max: i64) -> SysResult<i64> {
    let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?.trim();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (radix, digits) = if let Some(h) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
        (16, h)
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(Errno::EINVAL);
    }
    let v = i64::from_str_radix(digits, radix).map_err(|_| Errno::ERANGE)?;
    let v = if neg { -v } else { v };
    if v < min || v > max {
        return Err(Errno::ERANGE);
    }
    Ok(v)
}

/// A limit as `cgroup.max.*` shows it.
fn show_limit(v: u32) -> Vec<u8> {
    if v == LIMIT_MAX {
        b"max\n".to_vec()
    } else {
        format!("{v}\n").into_bytes()
    }
}

/// A limit written to `cgroup.max.*` (`cgroup_max_depth_write`): `max` or a number >= 0.
fn parse_limit(data: &[u8]) -> SysResult<u32> {
    if std::str::from_utf8(data).map(str::trim) == Ok("max") {
        return Ok(LIMIT_MAX);
    }
    let v = parse_int(data)?;
    u32::try_from(v).map_err(|_| Errno::ERANGE)
}

impl CgInode {
    fn kernel(&self) -> SysResult<Arc<Kernel>> {
        self.fs.kernel.upgrade().ok_or(Errno::ENODEV)
    }

    fn file_perm(&self) -> u32 {
        FILES
            .iter()
            .find(|f| Some(f.1) == self.file)
            .map_or(0o444, |f| f.2)
    }

    fn child(&self, cg: CgId, file: Option<File>) -> Arc<CgInode> {
        Arc::new(CgInode {
            fs: self.fs.clone(),
            cg,
            file,
        })
    }

    /// The content of a file now.
    /// `reader` is the task that opens the file: pids are shown as its pid namespace numbers
    /// them (`task_pid_vnr`: 0 for a process outside it).
    fn render(&self, reader: &um_kernel::task::Task, file: File) -> SysResult<Vec<u8>> {
        let k = self.kernel()?;
        // The root's members are every live process not moved elsewhere (init and the
        // processes made before the hooks were there were never added to a set).
        let everyone = if self.cg == ROOT && matches!(file, File::Procs | File::Threads) {
            let mut v: Vec<_> = k
                .tasks
                .processes()
                .into_iter()
                .filter(|p| lock(&p.exit).is_none())
                .collect();
            v.sort_by_key(|p| p.pid);
            v
        } else {
            Vec::new()
        };
        let h = hierarchy();
        let g = h.get(self.cg)?;
        let members: Vec<Arc<Process>> = if self.cg == ROOT {
            everyone
                .into_iter()
                .filter(|p| h.group_of(p.pid) == ROOT)
                .collect()
        } else if matches!(file, File::Procs | File::Threads) {
            g.procs.iter().filter_map(|&p| k.tasks.process(p)).collect()
        } else {
            Vec::new()
        };
        Ok(match file {
            File::Procs => members
                .iter()
                .map(|p| format!("{}\n", k.tasks.vnr(reader, p.pid)))
                .collect::<String>(),
            File::Threads => {
                drop(h);
                let mut tids = Vec::new();
                for p in members {
                    tids.extend(
                        p.live_threads(&k)
                            .iter()
                            .map(|t| k.tasks.vnr(reader, t.tid)),
                    );
                }
                tids.iter().map(|t| format!("{t}\n")).collect::<String>()
            }
            File::Controllers => return Ok(show_mask(h.controllers(self.cg))),
            File::SubtreeControl => return Ok(show_mask(g.subtree_control)),
            File::PidsMax => match g.pids_max {
                None => "max\n".to_string(),
                Some(m) => format!("{m}\n"),
            },
            File::PidsCurrent => format!("{}\n", pids_current(&k, &h, self.cg)),
            File::PidsEvents => format!("max {}\n", g.pids_events_max),
            File::Type => "domain\n".to_string(),
            File::Events => format!("populated {}\nfrozen 0\n", u8::from(h.populated(self.cg))),
            File::MaxDepth => return Ok(show_limit(g.max_depth)),
            File::MaxDescendants => return Ok(show_limit(g.max_descendants)),
            File::Stat => format!(
                "nr_descendants {}\nnr_dying_descendants 0\n",
                g.nr_descendants
            ),
            File::Kill => return Err(Errno::EACCES),
        }
        .into_bytes())
    }

    /// One write to a file.
    fn write(&self, io: &IoCtx<'_>, file: File, data: &[u8]) -> SysResult<usize> {
        let k = self.kernel()?;
        match file {
            File::Procs | File::Threads => {
                let id = parse_int(data)?;
                let id = u32::try_from(id).map_err(|_| Errno::EINVAL)?;
                // 0 names the writer; other numbers are the writer's pid namespace's
                // (cgroup_procs_write_start, find_task_by_vpid).
                let task = if id == 0 {
                    io.task.clone()
                } else {
                    k.tasks.find_task_vpid(io.task, id).ok_or(Errno::ESRCH)?
                };
                let p = task.process.clone();
                let (fsuid, fsgid) = {
                    let c = lock(&io.task.process.creds);
                    (c.fsuid, c.fsgid)
                };
                let ns_root = crate::ns_root();
                let mut h = hierarchy();
                h.get(self.cg)?;
                let src = h.group_of(p.pid);
                // cgroup_procs_write_permission: both groups must be inside the writer's
                // cgroup namespace (`ENOENT`).
                if !h.is_descendant(src, ns_root) || !h.is_descendant(self.cg, ns_root) {
                    return Err(Errno::ENOENT);
                }
                may_write(&h, h.common_ancestor(src, self.cg), fsuid, fsgid)?;
                if file == File::Threads {
                    // cgroup_attach_permissions: a thread may only move within its domain;
                    // without threaded subtrees that is its process's own group.
                    return if src == self.cg {
                        Ok(data.len())
                    } else {
                        Err(Errno::EOPNOTSUPP)
                    };
                }
                // An exiting process is not moved (cgroup_migrate_add_task skips PF_EXITING):
                // its exit hook has run or will run once this lock is released.
                if lock(&p.exit).is_none() {
                    h.attach(p.pid, self.cg)?;
                }
            }
            File::SubtreeControl => {
                let (enable, disable) = parse_subtree_control(data)?;
                hierarchy().set_subtree_control(self.cg, enable, disable)?;
            }
            File::PidsMax => {
                // pids_max_write: "max" or 0..=PID_MAX_LIMIT (kstrtoll).
                const PID_MAX_LIMIT: i64 = 4 * 1024 * 1024;
                let v = if std::str::from_utf8(data).map(str::trim) == Ok("max") {
                    None
                } else {
                    let v = parse_num(data, i64::MIN, i64::MAX)?;
                    if !(0..=PID_MAX_LIMIT).contains(&v) {
                        return Err(Errno::EINVAL);
                    }
                    Some(v as u64)
                };
                hierarchy().get_mut(self.cg)?.pids_max = v;
            }
            File::Type => {
                hierarchy().get(self.cg)?;
                // cgroup_type_write: only "threaded" may be written; threaded subtrees are
                // not implemented.
                return match std::str::from_utf8(data).map(str::trim) {
                    Ok("threaded") => Err(Errno::EOPNOTSUPP),
                    _ => Err(Errno::EINVAL),
                };
            }
            File::MaxDepth | File::MaxDescendants => {
                let v = parse_limit(data)?;
                let mut h = hierarchy();
                let g = h.get_mut(self.cg)?;
                if file == File::MaxDepth {
                    g.max_depth = v;
                } else {
                    g.max_descendants = v;
                }
            }
            File::Kill => {
                // cgroup_kill_write: only 1; SIGKILL to every process of the subtree.
                if parse_int(data)? != 1 {
                    return Err(Errno::ERANGE);
                }
                let pids = {
                    let h = hierarchy();
                    h.get(self.cg)?;
                    let mut pids = Vec::new();
                    let mut stack = vec![self.cg];
                    while let Some(c) = stack.pop() {
                        if let Ok(g) = h.get(c) {
                            pids.extend(g.procs.iter().copied());
                            stack.extend(g.children.values().copied());
                        }
                    }
                    pids
                };
                let (me, uid) = (io.task.process.pid, lock(&io.task.process.creds).uid);
                for pid in pids {
                    if let Some(p) = k.tasks.process(pid) {
                        let info = um_uapi::abi::signal::Siginfo::kill(
                            um_uapi::abi::signal::SIGKILL,
                            um_uapi::abi::signal::SI_USER,
                            me as i32,
                            uid,
                        );
                        um_kernel::signal::send_to_process(&k, &p, info);
                    }
                }
            }
            File::Controllers
            | File::Events
            | File::Stat
            | File::PidsCurrent
            | File::PidsEvents => return Err(Errno::EACCES),
        }
        Ok(data.len())
    }
}

impl Inode for CgInode {
    fn stat(&self) -> SysResult<Kstat> {
        let h = hierarchy();
        let (uid, gid, perm, ctime, nlink) = match h.get(self.cg) {
            Ok(g) => (g.uid, g.gid, g.perm, g.ctime, 2 + g.children.len() as u64),
            Err(_) => (0, 0, 0o755, (0, 0), 1),
        };
        drop(h);
        let (mode, nlink) = match self.file {
            None => (mode::S_IFDIR | perm, nlink),
            Some(_) => (mode::S_IFREG | self.file_perm(), 1),
        };
        let t = if ctime == (0, 0) { now() } else { ctime };
        Ok(Kstat {
            dev: um_kernel::vfs::encode_dev(CGROUP_DEV.0, CGROUP_DEV.1),
            ino: self.id(),
            mode,
            nlink,
            uid,
            gid,
            rdev: 0,
            size: 0,
            blksize: 4096,
            blocks: 0,
            atime: t,
            mtime: t,
            ctime: t,
        })
    }

    fn lookup(&self, name: &[u8]) -> SysResult<Arc<dyn Inode>> {
        if self.file.is_some() {
            return Err(Errno::ENOTDIR);
        }
        let h = hierarchy();
        h.get(self.cg).map_err(|_| Errno::ENOENT)?;
        if let Some((_, _, f, _)) = files_of(&h, self.cg).find(|f| f.1.as_bytes() == name) {
            return Ok(self.child(self.cg, Some(f)));
        }
        let c = h.child(self.cg, name).ok_or(Errno::ENOENT)?;
        Ok(self.child(c, None))
    }

    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
        let st = self.stat()?;
        let Some(file) = self.file else {
            let h = hierarchy();
            let g = h.get(self.cg).map_err(|_| Errno::ENOENT)?;
            let mut entries = vec![
                DirEntry {
                    ino: self.id(),
                    kind: 4,
                    name: b".".to_vec(),
                },
                DirEntry {
                    ino: g.parent.map_or(self.id(), |p| p << 4),
                    kind: 4,
                    name: b"..".to_vec(),
                },
            ];
            for (i, name, _, _) in files_of(&h, self.cg) {
                entries.push(DirEntry {
                    ino: (self.cg << 4) | (i as u64 + 1),
                    kind: 8,
                    name: name.as_bytes().to_vec(),
                });
            }
            for (name, &c) in &g.children {
                entries.push(DirEntry {
                    ino: c << 4,
                    kind: 4,
                    name: name.clone(),
                });
            }
            return Ok(Box::new(CgDirFile { entries, st }));
        };
        // kernfs_fop_open: a file without a read (write) handler cannot be opened for
        // reading (writing).
        let (read, write) = match flags & 3 {
            0 => (true, false),
            1 => (false, true),
            _ => (true, true),
        };
        let perm = self.file_perm();
        if read && perm & 0o444 == 0 || write && perm & 0o222 == 0 {
            return Err(Errno::EACCES);
        }
        let data = if read {
            self.render(io.task, file)?
        } else {
            Vec::new()
        };
        Ok(Box::new(CgFile {
            inode: self.child(self.cg, Some(file)),
            file,
            data,
            st,
        }))
    }

    fn mkdir(&self, name: &[u8], mode: u32, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        if self.file.is_some() {
            return Err(Errno::ENOTDIR);
        }
        let mut h = hierarchy();
        let cg = self.cg;
        // Every interface file's name is taken, also where the file is not (yet) shown.
        let id = h.mkdir(cg, name, owner.uid, owner.gid, mode & 0o7777, |n| {
            FILES.iter().any(|f| f.0.as_bytes() == n)
        })?;
        h.get_mut(id)?.ctime = now();
        Ok(self.child(id, None))
    }

    fn rmdir(&self, name: &[u8]) -> SysResult<()> {
        if self.file.is_some() {
            return Err(Errno::ENOTDIR);
        }
        if FILES.iter().any(|f| f.0.as_bytes() == name) {
            return Err(Errno::ENOTDIR);
        }
        hierarchy().rmdir(self.cg, name).map(|_| ())
    }

    fn unlink(&self, name: &[u8]) -> SysResult<()> {
        let h = hierarchy();
        if h.child(self.cg, name).is_some() {
            return Err(Errno::EISDIR);
        }
        Err(Errno::EPERM)
    }

    fn setattr(&self, attr: &SetAttr) -> SysResult<()> {
        // kernfs_iop_setattr: owner and mode stick (delegation chowns a group's directory);
        // sizes and times are accepted (O_TRUNC on an interface file).
        let mut h = hierarchy();
        let g = h.get_mut(self.cg)?;
        if self.file.is_none() {
            if let Some(m) = attr.mode {
                g.perm = m & 0o7777;
            }
            if let Some(u) = attr.uid {
                g.uid = u;
            }
            if let Some(gid) = attr.gid {
                g.gid = gid;
            }
        }
        Ok(())
    }

    fn fs_id(&self) -> u64 {
        self.fs.fs_id
    }

    fn statfs(&self) -> SysResult<Statfs> {
        Ok(Statfs {
            fs_type: CGROUP2_SUPER_MAGIC,
            bsize: um_mm::page_size() as i64,
            namelen: 255,
            frsize: um_mm::page_size() as i64,
            ..Default::default()
        })
    }

    /// `cg << 4` for the directory, plus 1 + the file's index for its files.
    fn id(&self) -> u64 {
        let f = match self.file {
            None => 0,
            Some(file) => FILES.iter().position(|f| f.1 == file).unwrap_or(0) as u64 + 1,
        };
        (self.cg << 4) | f
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An open group directory: its entries as of open.
struct CgDirFile {
    entries: Vec<DirEntry>,
    st: Kstat,
}

impl FileOps for CgDirFile {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(self.st)
    }

    fn readdir(&self) -> SysResult<Vec<DirEntry>> {
        Ok(self.entries.clone())
    }
}

/// An open interface file: the content as of open; each write one command.
struct CgFile {
    inode: Arc<CgInode>,
    file: File,
    data: Vec<u8>,
    st: Kstat,
}

impl FileOps for CgFile {
    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let start = usize::try_from(off)
            .unwrap_or(usize::MAX)
            .min(self.data.len());
        let n = buf.len().min(self.data.len() - start);
        buf[..n].copy_from_slice(&self.data[start..start + n]);
        Ok(n)
    }

    fn write(&self, io: &IoCtx<'_>, data: &[u8], _off: u64) -> SysResult<usize> {
        self.inode.write(io, self.file, data)
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(self.st)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_limits_parse_as_kstrtoint() {
        assert_eq!(parse_int(b"12\n"), Ok(12));
        assert_eq!(parse_int(b" 0x1f "), Ok(31));
        assert_eq!(parse_int(b"010"), Ok(8));
        assert_eq!(parse_int(b"-3"), Ok(-3));
        assert_eq!(parse_int(b"1 2"), Err(Errno::EINVAL));
        assert_eq!(parse_int(b""), Err(Errno::EINVAL));
        assert_eq!(parse_int(b"4294967296"), Err(Errno::ERANGE));
        assert_eq!(parse_limit(b"max\n"), Ok(LIMIT_MAX));
        assert_eq!(parse_limit(b"-1"), Err(Errno::ERANGE));
        assert_eq!(show_limit(LIMIT_MAX), b"max\n");
        assert_eq!(show_limit(3), b"3\n");
    }

    #[test]
    fn mount_options() {
        assert_eq!(check_options(b"memory_recursiveprot\0"), Ok(()));
        assert_eq!(check_options(b"nsdelegate,favordynmods"), Ok(()));
        assert_eq!(check_options(b""), Ok(()));
        assert_eq!(check_options(b"bogus"), Err(Errno::EINVAL));
    }

    #[test]
    fn root_has_no_type_events_or_kill() {
        let mut h = Hierarchy::default();
        let names: Vec<&str> = files_of(&h, ROOT).map(|f| f.1).collect();
        assert!(names.contains(&"cgroup.procs") && !names.contains(&"cgroup.type"));
        assert!(!names.contains(&"pids.max"));
        let a = h.mkdir(ROOT, b"a", 0, 0, 0o755, |_| false).unwrap();
        assert_eq!(files_of(&h, a).count(), FILES.len() - 3);
        h.set_subtree_control(ROOT, PIDS, 0).unwrap();
        assert_eq!(files_of(&h, a).count(), FILES.len());
        assert_eq!(show_mask(PIDS), b"pids\n");
        assert_eq!(show_mask(0), b"\n");
        assert_eq!(parse_subtree_control(b"+pids -pids\n"), Ok((0, PIDS)));
        assert_eq!(parse_subtree_control(b" +pids "), Ok((PIDS, 0)));
        assert_eq!(parse_subtree_control(b"+memory"), Err(Errno::EINVAL));
        assert_eq!(parse_subtree_control(b"pids"), Err(Errno::EINVAL));
    }

    #[test]
    fn write_permission_follows_the_owner() {
        let mut h = Hierarchy::default();
        let a = h.mkdir(ROOT, b"a", 1000, 1000, 0o755, |_| false).unwrap();
        assert_eq!(may_write(&h, a, 0, 0), Ok(()));
        assert_eq!(may_write(&h, a, 1000, 5), Ok(()));
        assert_eq!(may_write(&h, a, 1001, 1000), Err(Errno::EACCES));
        assert_eq!(may_write(&h, ROOT, 1000, 1000), Err(Errno::EACCES));
    }
}
