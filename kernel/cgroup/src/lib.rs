//! Control groups, version 2 only (Linux `kernel/cgroup/cgroup.c`,
//! Documentation/admin-guide/cgroup-v2.rst, cgroups(7)).
//!
//! One hierarchy ([`tree::Hierarchy`] behind [`hierarchy`]'s lock); every `mount -t cgroup2`
//! shows its root ([`fs`]), so all mounts see the same tree, as Linux's single default
//! hierarchy does. One controller is implemented, pids (kernel/cgroup/pids.c: `pids.max`,
//! `pids.current`, `pids.events`; a fork past a limit is `EAGAIN`); the others (memory, cpu,
//! io ...) are not listed in `cgroup.controllers`, so programs that need one find it missing
//! instead of finding files that do nothing. The v1 `cgroup` type is not provided (`ENODEV`);
//! `/proc/cgroups` lists pids on hierarchy 0.
//!
//! Membership: [`init`] hangs a fork hook (`Kernel::fork_hooks`, called by clone before the
//! child is visible) and a process-exit hook on the kernel; a new process joins its creator's
//! group, or with clone3's `CLONE_INTO_CGROUP` the group whose directory the descriptor
//! names ([`on_fork`], Linux `cgroup_css_set_fork`); exit removes it. `/proc/PID/cgroup` is
//! [`proc_pid_cgroup`]. Pids are the kernel's global ones.
//!
//! `um-cgroup` sits above `um-fs` (Linux keeps it in `kernel/cgroup/`, not in `fs/`): the
//! VFS knows no cgroup. Neighbours: `um_fs::mount` (the `cgroup2` type is registered with
//! [`um_fs::mount::register_fs`]), `um_fs::sysfs` (`/sys/fs/cgroup`, the usual mount point),
//! `um_fs::procfs::registry` (`/proc/cgroups` by `proc_create`, `/proc/PID/cgroup` by
//! `register_pid_cgroup`), `um_kernel::sys::fork` (the fork hook), `um-bin` (calls [`init`]).

#![forbid(unsafe_code)]

pub mod fs;
pub mod tree;

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use tree::{CgId, Hierarchy};
use um_kernel::kernel::Kernel;
use um_kernel::task::{Process, lock};
use um_uapi::{Errno, SysResult};

/// The hierarchy (Linux `cgrp_dfl_root`), behind one lock (`cgroup_mutex`).
pub fn hierarchy() -> MutexGuard<'static, Hierarchy> {
    static H: OnceLock<Mutex<Hierarchy>> = OnceLock::new();
    lock(H.get_or_init(Default::default))
}

/// Registers the `cgroup2` file system type, the fork and exit hooks that keep membership, and
/// the procfs files (`/proc/cgroups`, `/proc/PID/cgroup`). Called once at boot, before init.
pub fn init(k: &Arc<Kernel>) {
    // /proc/cgroups (kernel/cgroup/cgroup-v1.c proc_cgroupstats_show).
    um_fs::procfs::registry::proc_create("", "cgroups", |fs| {
        um_fs::procfs::ProcInode::file(fs, |_, _| Ok(proc_cgroups()))
    });
    um_fs::procfs::registry::register_pid_cgroup(proc_pid_cgroup);
    // A new cgroup namespace is rooted at its creator's group (um_kernel::cgroupns).
    um_kernel::cgroupns::set_group_of(|pid| hierarchy().group_of(pid));
    let weak = Arc::downgrade(k);
    um_fs::mount::register_fs(
        "cgroup2",
        Arc::new(move |_flags, data| {
            let k = weak.upgrade().ok_or(Errno::ENODEV)?;
            fs::check_options(data)?;
            Ok(fs::root(&k))
        }),
    );
    let weak = Arc::downgrade(k);
    lock(&k.fork_hooks).push(Box::new(move |creator, child, thread, into| {
        match weak.upgrade() {
            Some(k) => on_fork(&k, creator, child, thread, into),
            None => Ok(()),
        }
    }));
    lock(&k.process_exit_hooks).push(Box::new(|p| hierarchy().exit(p.pid)));
}

/// The group whose cgroup2 directory descriptor `fd` of `creator` is open on
/// (`cgroup_get_from_file`): `EBADF` for a bad descriptor or anything but such a directory.
/// `O_PATH` descriptors count (`fdget_raw`).
fn group_of_fd(creator: &Process, fd: u64) -> SysResult<CgId> {
    let file = lock(&creator.files()).get(fd)?;
    let d = file.dentry.as_ref().ok_or(Errno::EBADF)?;
    fs::dir_group(&d.inode).ok_or(Errno::EBADF)
}

/// The fork hook (Linux `cgroup_can_fork` + `cgroup_post_fork`): `creator` made `child`
/// (the same process for a thread); `into` is clone3's `CLONE_INTO_CGROUP` descriptor. The
/// new task is charged to the pids controller first (`pids_can_fork`: `EAGAIN` past a
/// `pids.max` on the way up).
pub fn on_fork(
    k: &Kernel,
    creator: &Arc<Process>,
    child: &Arc<Process>,
    thread: bool,
    into: Option<u64>,
) -> SysResult<()> {
    let dst = into.map(|fd| group_of_fd(creator, fd)).transpose()?;
    let (fsuid, fsgid) = {
        let c = lock(&creator.creds);
        (c.fsuid, c.fsgid)
    };
    let mut h = hierarchy();
    if let Some(d) = dst {
        let src = h.group_of(creator.pid);
        // cgroup_css_set_fork: a removed group is ENODEV; the caller needs write access to
        // the destination's cgroup.procs (cgroup_may_write) and to the common ancestor's
        // (cgroup_attach_permissions).
        h.get(d)?;
        fs::may_write(&h, d, fsuid, fsgid)?;
        fs::may_write(&h, h.common_ancestor(src, d), fsuid, fsgid)?;
        // A thread cannot leave its process's (domain) group.
        if thread && d != src {
            return Err(Errno::EOPNOTSUPP);
        }
    }
    let target = dst.unwrap_or_else(|| h.group_of(creator.pid));
    h.pids_try_charge(target, |h, c| fs::pids_current(k, h, c))?;
    if !thread {
        h.fork(creator.pid, child.pid, dst);
    }
    Ok(())
}

/// The group at the root of the reader's cgroup namespace (`current->nsproxy->cgroup_ns`).
pub fn ns_root() -> CgId {
    um_kernel::cgroupns::root_group(&um_kernel::cgroupns::current()).unwrap_or(tree::ROOT)
}

/// `/proc/PID/cgroup` (kernel/cgroup/cgroup.c `proc_cgroup_show`): the v2 line only, the
/// path relative to the reader's cgroup namespace (`cgroup_path_ns`).
pub fn proc_pid_cgroup(pid: u32) -> Vec<u8> {
    let from = ns_root();
    let h = hierarchy();
    let mut out = b"0::".to_vec();
    out.extend_from_slice(&h.path_from(h.group_of(pid), from));
    out.push(b'\n');
    out
}

/// `/proc/cgroups` (`proc_cgroupstats_show`): the header and one line per controller; a
/// controller of the v2 hierarchy shows hierarchy 0 and that hierarchy's number of groups.
pub fn proc_cgroups() -> Vec<u8> {
    let n = hierarchy().count();
    let mut out = String::from("#subsys_name\thierarchy\tnum_cgroups\tenabled\n");
    for name in tree::CONTROLLERS {
        out.push_str(&format!("{name}\t0\t{n}\t1\n"));
    }
    out.into_bytes()
}
