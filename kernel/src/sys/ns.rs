//! unshare(2) and setns(2) (Linux `kernel/fork.c` `ksys_unshare`, `kernel/nsproxy.c` `setns`).
//!
//! Every kind of namespace exists here: time, pid, network, UTS, IPC, mount, cgroup and
//! user ([`crate::timens`], [`crate::pidns`], [`crate::netns`], [`crate::utsns`],
//! [`crate::ipcns`], [`crate::mntns`], [`crate::cgroupns`], [`crate::userns`]). So
//! `unshare` creates time and pid namespaces (`CLONE_NEWTIME`, `CLONE_NEWPID`: both for the
//! caller's future children) and network, UTS, IPC, mount, cgroup and user namespaces
//! (`CLONE_NEWNET`, `CLONE_NEWUTS`, `CLONE_NEWIPC`, `CLONE_NEWNS`, `CLONE_NEWCGROUP`,
//! `CLONE_NEWUSER`: the caller moves at once; a new user namespace first, so the others
//! are owned by it and checked in it), unshares the descriptor table (`CLONE_FILES`),
//! accepts what is already unshared (`CLONE_FS`: each process has its own; `CLONE_SYSVSEM`;
//! and `CLONE_THREAD`/`CLONE_SIGHAND`/`CLONE_VM` in a single-threaded process, as Linux
//! does); every new namespace but a user namespace needs CAP_SYS_ADMIN in the (new) user
//! namespace (`EPERM`). `setns` enters a time namespace, or makes a pid namespace the one
//! for children, or enters a network, UTS, IPC, mount, cgroup or user namespace, from a
//! `/proc/PID/ns/{time,pid,net,uts,ipc,mnt,cgroup,user}*` descriptor or a pidfd.

use crate::pidfd::PidFd;
use crate::syscall::{SyscallCtx, SyscallTable};
use crate::task::lock;
use crate::timens::{self, CAP_SYS_ADMIN, NsFile};
use std::sync::Arc;
use std::sync::Mutex;
use um_uapi::abi::sched::CloneFlags;
use um_uapi::{Errno, SysResult};

/// The namespace flags (`CLONE_NEW*`).
fn ns_flags() -> CloneFlags {
    CloneFlags::NEWNS
        | CloneFlags::NEWCGROUP
        | CloneFlags::NEWUTS
        | CloneFlags::NEWIPC
        | CloneFlags::NEWUSER
        | CloneFlags::NEWPID
        | CloneFlags::NEWNET
        | CloneFlags::NEWTIME
}

fn unshare(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    // check_unshare_flags.
    let allowed = ns_flags()
        | CloneFlags::THREAD
        | CloneFlags::FS
        | CloneFlags::SIGHAND
        | CloneFlags::VM
        | CloneFlags::FILES
        | CloneFlags::SYSVSEM;
    let raw = a[0];
    if raw & !allowed.bits() != 0 {
        return Err(Errno::EINVAL);
    }
    let mut f = CloneFlags::from_bits_truncate(raw);
    // check_unshare_flags: a new user namespace implies CLONE_THREAD and CLONE_FS (each
    // process has its own fs context here, so only the thread rule bites).
    if f.contains(CloneFlags::NEWUSER) {
        f |= CloneFlags::THREAD | CloneFlags::FS;
    }
    let p = c.task.process.clone();
    if f.intersects(CloneFlags::THREAD | CloneFlags::SIGHAND | CloneFlags::VM)
        && p.live_threads(c.kernel).len() > 1
    {
        return Err(Errno::EINVAL);
    }
    let others = ns_flags() - CloneFlags::NEWUSER;
    if f.intersects(
        others
            - CloneFlags::NEWNS
            - CloneFlags::NEWTIME
            - CloneFlags::NEWPID
            - CloneFlags::NEWNET
            - CloneFlags::NEWUTS
            - CloneFlags::NEWIPC
            - CloneFlags::NEWCGROUP,
    ) {
        return Err(Errno::EINVAL);
    }
    // unshare_userns first: the other namespaces are checked against, and owned by, the
    // new one, where the caller has every capability.
    let new_user = if f.contains(CloneFlags::NEWUSER) {
        Some(crate::userns::create(&p)?)
    } else {
        None
    };
    // unshare_nsproxy_namespaces: CAP_SYS_ADMIN in the caller's user namespace.
    if f.intersects(others)
        && new_user.is_none()
        && !p.ns_capable(&crate::userns::of(&p), CAP_SYS_ADMIN)
    {
        return Err(Errno::EPERM);
    }
    if let Some(ns) = new_user {
        crate::userns::enter(&p, ns);
    }
    if f.contains(CloneFlags::FILES) {
        // unshare_fd: a private copy of the table.
        let copy = lock(&p.files()).clone();
        *lock(&p.files) = Arc::new(Mutex::new(copy));
    }
    if f.contains(CloneFlags::NEWNS) {
        // The caller moves into a copy of its namespace (crate::mntns); root and cwd stay
        // (they name the same places in the copy).
        crate::mntns::unshare(&p)?;
    }
    if f.contains(CloneFlags::NEWPID) {
        crate::pidns::unshare(&p)?;
    }
    if f.contains(CloneFlags::NEWTIME) {
        timens::unshare(&p);
    }
    if f.contains(CloneFlags::NEWNET) {
        // The caller itself moves (crate::netns).
        crate::netns::unshare(&p);
    }
    if f.contains(CloneFlags::NEWUTS) {
        // The caller moves into a copy of its namespace (crate::utsns).
        crate::utsns::unshare(c.kernel, &p);
    }
    if f.contains(CloneFlags::NEWIPC) {
        // The caller moves into a new, empty namespace (crate::ipcns).
        crate::ipcns::unshare(&p);
    }
    if f.contains(CloneFlags::NEWCGROUP) {
        // A namespace rooted at the caller's group (crate::cgroupns).
        crate::cgroupns::unshare(&p);
    }
    Ok(0)
}

fn setns(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let p = c.task.process.clone();
    let file = lock(&p.files()).get(a[0])?;
    let nstype = u64::from(a[1] as u32);
    let any = file.ops.as_any();
    let threads = p.live_threads(c.kernel).len();
    if let Some(nf) = any.and_then(|x| x.downcast_ref::<NsFile>()) {
        // A namespace file: `nstype` 0 or its type.
        if nstype != 0 && nstype != CloneFlags::NEWTIME.bits() {
            return Err(Errno::EINVAL);
        }
        timens::setns(&p, &nf.ns, threads)?;
        return Ok(0);
    }
    if let Some(nf) = any.and_then(|x| x.downcast_ref::<crate::pidns::PidNsFile>()) {
        if nstype != 0 && nstype != CloneFlags::NEWPID.bits() {
            return Err(Errno::EINVAL);
        }
        crate::pidns::setns(&p, &nf.ns)?;
        return Ok(0);
    }
    if let Some(nf) = any.and_then(|x| x.downcast_ref::<crate::netns::NetNsFile>()) {
        if nstype != 0 && nstype != CloneFlags::NEWNET.bits() {
            return Err(Errno::EINVAL);
        }
        crate::netns::setns(&p, &nf.ns)?;
        return Ok(0);
    }
    if let Some(nf) = any.and_then(|x| x.downcast_ref::<crate::utsns::UtsNsFile>()) {
        if nstype != 0 && nstype != CloneFlags::NEWUTS.bits() {
            return Err(Errno::EINVAL);
        }
        crate::utsns::setns(&p, &nf.ns)?;
        return Ok(0);
    }
    if let Some(nf) = any.and_then(|x| x.downcast_ref::<crate::ipcns::IpcNsFile>()) {
        if nstype != 0 && nstype != CloneFlags::NEWIPC.bits() {
            return Err(Errno::EINVAL);
        }
        crate::ipcns::setns(&p, &nf.ns)?;
        return Ok(0);
    }
    if let Some(nf) = any.and_then(|x| x.downcast_ref::<crate::mntns::MntNsFile>()) {
        if nstype != 0 && nstype != CloneFlags::NEWNS.bits() {
            return Err(Errno::EINVAL);
        }
        crate::mntns::setns(&p, &nf.ns)?;
        return Ok(0);
    }
    if let Some(nf) = any.and_then(|x| x.downcast_ref::<crate::cgroupns::CgroupNsFile>()) {
        if nstype != 0 && nstype != CloneFlags::NEWCGROUP.bits() {
            return Err(Errno::EINVAL);
        }
        crate::cgroupns::setns(&p, &nf.ns)?;
        return Ok(0);
    }
    if let Some(nf) = any.and_then(|x| x.downcast_ref::<crate::userns::UserNsFile>()) {
        if nstype != 0 && nstype != CloneFlags::NEWUSER.bits() {
            return Err(Errno::EINVAL);
        }
        crate::userns::setns(&p, &nf.ns, threads)?;
        return Ok(0);
    }
    if let Some(pf) = any.and_then(|x| x.downcast_ref::<PidFd>()) {
        // A pidfd: the namespaces `nstype` names, of that process (check_setns_flags).
        if nstype == 0 || nstype & !ns_flags().bits() != 0 {
            return Err(Errno::EINVAL);
        }
        let target = pf.process().clone();
        if lock(&target.exit).is_some() {
            return Err(Errno::ESRCH);
        }
        let f = CloneFlags::from_bits_truncate(nstype);
        // validate_nsset: the user namespace first (skipped when it is the caller's own),
        // so the others are checked with the credentials it gives.
        if f.contains(CloneFlags::NEWUSER) {
            let ns = crate::userns::of(&target);
            if !Arc::ptr_eq(&ns, &crate::userns::of(&p)) {
                crate::userns::setns(&p, &ns, threads)?;
            }
        }
        if f.contains(CloneFlags::NEWPID) {
            crate::pidns::setns(&p, target.pids.ns())?;
        }
        if f.contains(CloneFlags::NEWTIME) {
            let ns = timens::active(&target);
            timens::setns(&p, &ns, threads)?;
        }
        if f.contains(CloneFlags::NEWNET) {
            crate::netns::setns(&p, &crate::netns::of(&target))?;
        }
        if f.contains(CloneFlags::NEWUTS) {
            crate::utsns::setns(&p, &crate::utsns::of(&target))?;
        }
        if f.contains(CloneFlags::NEWIPC) {
            crate::ipcns::setns(&p, &crate::ipcns::of(&target))?;
        }
        if f.contains(CloneFlags::NEWNS) {
            crate::mntns::setns(&p, &crate::mntns::of(&target))?;
        }
        if f.contains(CloneFlags::NEWCGROUP) {
            crate::cgroupns::setns(&p, &crate::cgroupns::of(&target))?;
        }
        return Ok(0);
    }
    Err(Errno::EINVAL)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("unshare", unshare);
    t.register("setns", setns);
}
