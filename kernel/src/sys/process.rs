//! Process identity and lifetime: getpid and friends, credentials, exit, uname, rlimits
//! (Linux kernel/sys.c, kernel/exit.c).

use crate::syscall::{Action, SyscallCtx, SyscallTable};
use crate::task::{CAP_LAST_CAP, ExitStatus, Process, lock};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use um_uapi::{Errno, SysResult};

// Ids go out as numbers of the caller's pid namespace (`task_tgid_vnr`, `task_pid_vnr`).
fn getpid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    Ok(u64::from(c.task.process.pids.own()))
}

fn gettid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    Ok(u64::from(c.task.pids.own()))
}

/// getppid(2): the parent's number in the caller's namespace, 0 for a parent outside it
/// (the init of a new namespace).
fn getppid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    let p = &c.task.process;
    if let Some(parent) = lock(&p.parent).upgrade() {
        return Ok(u64::from(parent.pids.nr_in(p.pids.ns())));
    }
    let ppid = p.ppid.load(Ordering::Relaxed);
    Ok(u64::from(c.kernel.tasks.vnr(c.task, ppid)))
}

// Ids go out as the caller's user namespace sees them (`from_kuid_munged`: an unmapped one
// is the overflow id).
fn uid_out(c: &SyscallCtx<'_>, kuid: u32) -> u32 {
    crate::userns::from_kuid_munged(&crate::userns::of(&c.task.process), kuid)
}

fn gid_out(c: &SyscallCtx<'_>, kgid: u32) -> u32 {
    crate::userns::from_kgid_munged(&crate::userns::of(&c.task.process), kgid)
}

fn getuid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    let id = lock(&c.task.process.creds).uid;
    Ok(u64::from(uid_out(c, id)))
}

fn geteuid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    let id = lock(&c.task.process.creds).euid;
    Ok(u64::from(uid_out(c, id)))
}

fn getgid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    let id = lock(&c.task.process.creds).gid;
    Ok(u64::from(gid_out(c, id)))
}

fn getegid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    let id = lock(&c.task.process.creds).egid;
    Ok(u64::from(gid_out(c, id)))
}

fn getresuid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let cr = *lock(&c.task.process.creds);
    c.write_u32(a[0], uid_out(c, cr.uid))?;
    c.write_u32(a[1], uid_out(c, cr.euid))?;
    c.write_u32(a[2], uid_out(c, cr.suid))?;
    Ok(0)
}

fn getresgid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let cr = *lock(&c.task.process.creds);
    c.write_u32(a[0], gid_out(c, cr.gid))?;
    c.write_u32(a[1], gid_out(c, cr.egid))?;
    c.write_u32(a[2], gid_out(c, cr.sgid))?;
    Ok(0)
}

fn set_tid_address(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    *lock(&c.task.clear_child_tid) = a[0];
    Ok(u64::from(c.task.pids.own()))
}

fn exit(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    c.action = Action::ExitThread((a[0] & 0xff) as i32);
    Ok(0)
}

fn exit_group(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    c.action = Action::ExitGroup(ExitStatus::Exited((a[0] & 0xff) as i32));
    Ok(0)
}

fn uname(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let u = &c.kernel.uts;
    let mut buf = vec![0u8; 65 * 6];
    // The host and domain names of the caller's UTS namespace (crate::utsns).
    let ns = crate::utsns::of(&c.task.process);
    let (node, domain) = (
        lock(ns.nodename(c.kernel)).clone(),
        lock(ns.domainname(c.kernel)).clone(),
    );
    for (i, s) in [
        &u.sysname, &node, &u.release, &u.version, &u.machine, &domain,
    ]
    .iter()
    .enumerate()
    {
        let b = s.as_bytes();
        let n = b.len().min(64);
        buf[i * 65..i * 65 + n].copy_from_slice(&b[..n]);
    }
    c.write_bytes(a[0], &buf)?;
    Ok(0)
}

use um_uapi::abi::capability::CAP_SYS_ADMIN;

/// sethostname(2) and setdomainname(2) (kernel/sys.c), in the caller's UTS namespace:
/// CAP_SYS_ADMIN over the namespace (`ns_capable(uts_ns->user_ns, ..)`), at most
/// `__NEW_UTS_LEN` bytes (`EINVAL` for more or a negative length), copied as given.
fn set_uts_name(c: &SyscallCtx<'_>, addr: u64, len: u64, domain: bool) -> SysResult {
    let owner = crate::nsfs::Namespace::owner(&*crate::utsns::of(&c.task.process));
    if !owner.is_some_and(|o| c.task.process.ns_capable(&o, CAP_SYS_ADMIN)) {
        return Err(Errno::EPERM);
    }
    let len = usize::try_from(len as i64).map_err(|_| Errno::EINVAL)?;
    if len > crate::kernel::NEW_UTS_LEN {
        return Err(Errno::EINVAL);
    }
    let name = c.read_bytes(addr, len)?;
    let name = String::from_utf8_lossy(&name).into_owned();
    let ns = crate::utsns::of(&c.task.process);
    *lock(if domain {
        ns.domainname(c.kernel)
    } else {
        ns.nodename(c.kernel)
    }) = name;
    Ok(0)
}

fn sethostname(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    set_uts_name(c, a[0], a[1], false)
}

fn setdomainname(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    set_uts_name(c, a[0], a[1], true)
}

const RLIM_NLIMITS: u64 = 16;
const RLIMIT_NOFILE: u64 = 7;
/// `fs.nr_open` (fs/file.c `sysctl_nr_open`, /proc/sys/fs/nr_open): the most descriptors a
/// process may be allowed.
const NR_OPEN: u64 = 1_048_576;

fn prlimit64(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (pid, res, new, old) = (a[0] as i32, a[1], a[2], a[3]);
    if res >= RLIM_NLIMITS {
        return Err(Errno::EINVAL);
    }
    // Another process of the caller's pid namespace (kernel/sys.c prlimit64: runc sets the
    // container init's limits this way), with check_prlimit_permission's rule: the caller's
    // uid and gid are all of the target's ids, or CAP_SYS_RESOURCE.
    let target = if pid == 0 || pid as u32 == c.task.process.pids.own() {
        c.task.process.clone()
    } else {
        let t = c
            .kernel
            .tasks
            .find_task_vpid(c.task, pid as u32)
            .ok_or(Errno::ESRCH)?;
        let me = *lock(&c.task.process.creds);
        let tc = *lock(&t.process.creds);
        let same = [tc.uid, tc.euid, tc.suid].iter().all(|&u| u == me.uid)
            && [tc.gid, tc.egid, tc.sgid].iter().all(|&g| g == me.gid);
        if !same
            && !c
                .task
                .process
                .capable_own(um_uapi::abi::capability::CAP_SYS_RESOURCE)
        {
            return Err(Errno::EPERM);
        }
        t.process.clone()
    };
    let newval = if new != 0 {
        let b = c.read_bytes(new, 16)?;
        let cur = u64::from_le_bytes(b[0..8].try_into().map_err(|_| Errno::EFAULT)?);
        let max = u64::from_le_bytes(b[8..16].try_into().map_err(|_| Errno::EFAULT)?);
        if cur > max {
            return Err(Errno::EINVAL);
        }
        // kernel/sys.c do_prlimit: no RLIMIT_NOFILE above nr_open, not even for root.
        if res == RLIMIT_NOFILE && max > NR_OPEN {
            return Err(Errno::EPERM);
        }
        Some((cur, max))
    } else {
        None
    };
    let mut lim = lock(&target.rlimits);
    let prev = lim[res as usize];
    if old != 0 {
        let mut b = prev.0.to_le_bytes().to_vec();
        b.extend_from_slice(&prev.1.to_le_bytes());
        c.write_bytes(old, &b)?;
    }
    if let Some(v) = newval {
        // Raising a hard limit needs CAP_SYS_RESOURCE: root has it.
        if v.1 > prev.1 && lock(&c.task.process.creds).euid != 0 {
            return Err(Errno::EPERM);
        }
        lim[res as usize] = v;
        if res == RLIMIT_NOFILE {
            // The descriptor table enforces the soft limit (fs/file.c alloc_fd, dup2).
            lock(&target.files()).set_nofile(v.0);
        }
        drop(lim);
        if res as usize == crate::cputime::RLIMIT_CPU {
            // kernel/sys.c do_prlimit -> update_rlimit_cpu: a finite limit is watched.
            crate::cputime::watch_rlimit_cpu(c.kernel, &target);
        }
    }
    Ok(0)
}

fn getrlimit(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    prlimit64(c, [0, a[0], 0, a[1], 0, 0])
}

fn setrlimit(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    prlimit64(c, [0, a[0], a[1], 0, 0, 0])
}

fn sched_yield(_c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    std::thread::yield_now();
    Ok(0)
}

fn umask(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let mut fs = lock(&c.task.process.fs);
    let old = fs.umask;
    fs.umask = (a[0] & 0o777) as u32;
    Ok(old as u64)
}

const PR_SET_PDEATHSIG: u64 = 1;
const PR_GET_PDEATHSIG: u64 = 2;
const PR_GET_DUMPABLE: u64 = 3;
const PR_SET_DUMPABLE: u64 = 4;
const PR_GET_KEEPCAPS: u64 = 7;
const PR_SET_KEEPCAPS: u64 = 8;
const PR_SET_NAME: u64 = 15;
const PR_GET_NAME: u64 = 16;
use um_uapi::abi::seccomp::{PR_GET_SECCOMP, PR_SET_SECCOMP};
const PR_CAPBSET_READ: u64 = 23;
const PR_CAPBSET_DROP: u64 = 24;
const PR_GET_TSC: u64 = 25;
const PR_SET_TSC: u64 = 26;
const PR_GET_SECUREBITS: u64 = 27;
const PR_SET_SECUREBITS: u64 = 28;
const PR_SET_TIMERSLACK: u64 = 29;
const PR_GET_TIMERSLACK: u64 = 30;
const PR_SET_CHILD_SUBREAPER: u64 = 36;
const PR_GET_CHILD_SUBREAPER: u64 = 37;
const PR_SET_NO_NEW_PRIVS: u64 = 38;
const PR_GET_NO_NEW_PRIVS: u64 = 39;
const PR_CAP_AMBIENT: u64 = 47;
const PR_CAP_AMBIENT_IS_SET: u64 = 1;
const PR_CAP_AMBIENT_RAISE: u64 = 2;
const PR_CAP_AMBIENT_LOWER: u64 = 3;
const PR_CAP_AMBIENT_CLEAR_ALL: u64 = 4;
/// include/uapi/linux/securebits.h `SECBIT_NO_CAP_AMBIENT_RAISE`.
const SECBIT_NO_CAP_AMBIENT_RAISE: u32 = 1 << 6;
const PR_SET_VMA: u64 = 0x53564d41;
/// PR_SET_TSC's modes "rdtsc allowed" and "rdtsc raises SIGSEGV" (include/uapi/linux/prctl.h).
const PR_TSC_ENABLE: u64 = 1;
const PR_TSC_SIGSEGV: u64 = 2;
use um_uapi::abi::capability::CAP_SETPCAP;
/// include/uapi/linux/securebits.h: the settable bits (NOROOT, NO_SETUID_FIXUP, KEEP_CAPS,
/// NO_CAP_AMBIENT_RAISE) and their locks.
const SECURE_ALL_BITS: u64 = 0x55;
const SECURE_ALL_LOCKS: u64 = 0xaa;
const SECBIT_KEEP_CAPS_LOCKED: u32 = 1 << 5;

/// Marks `p`'s descendants as having a subreaper above them (kernel/sys.c
/// PR_SET_CHILD_SUBREAPER, `propagate_has_child_subreaper`).
fn propagate_subreaper(p: &Arc<Process>) {
    let children: Vec<Arc<Process>> = lock(&p.children).clone();
    for ch in children {
        if !ch.has_child_subreaper.swap(true, Ordering::Relaxed) {
            propagate_subreaper(&ch);
        }
    }
}

/// prctl(2), the parts programs commonly use (kernel/sys.c; capability and securebits
/// options in security/commoncap.c `cap_task_prctl`).
fn prctl(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let p = c.task.process.clone();
    match a[0] {
        PR_SET_NAME => {
            let mut name = c.read_bytes(a[1], 16).or_else(|_| c.read_cstr(a[1], 16))?;
            if let Some(n) = name.iter().position(|&b| b == 0) {
                name.truncate(n);
            }
            name.truncate(15);
            *lock(&p.comm) = name;
            Ok(0)
        }
        PR_GET_NAME => {
            let mut name = lock(&p.comm).clone();
            name.resize(16, 0);
            c.write_bytes(a[1], &name)?;
            Ok(0)
        }
        PR_SET_PDEATHSIG => {
            if a[1] > 64 {
                return Err(Errno::EINVAL);
            }
            c.task.pdeath_signal.store(a[1] as u32, Ordering::Relaxed);
            Ok(0)
        }
        PR_GET_PDEATHSIG => {
            let v = c.task.pdeath_signal.load(Ordering::Relaxed);
            c.write_u32(a[1], v)?;
            Ok(0)
        }
        PR_GET_DUMPABLE => Ok(1),
        PR_SET_DUMPABLE => {
            if a[1] > 1 {
                Err(Errno::EINVAL)
            } else {
                Ok(0)
            }
        }
        PR_GET_SECCOMP => crate::seccomp::prctl_get(c.task),
        PR_SET_SECCOMP => crate::seccomp::prctl_set(c, a[1], a[2]),
        PR_CAPBSET_READ => {
            if a[1] > u64::from(CAP_LAST_CAP) {
                return Err(Errno::EINVAL);
            }
            Ok(lock(&p.caps).bset >> a[1] & 1)
        }
        // The ambient set (security/commoncap.c cap_task_prctl): a capability may be raised
        // only while permitted and inheritable and SECBIT_NO_CAP_AMBIENT_RAISE is clear.
        PR_CAP_AMBIENT => {
            let mut caps = lock(&p.caps);
            if a[1] == PR_CAP_AMBIENT_CLEAR_ALL {
                if a[2] | a[3] | a[4] != 0 {
                    return Err(Errno::EINVAL);
                }
                caps.ambient = 0;
                return Ok(0);
            }
            if a[2] > u64::from(CAP_LAST_CAP) || a[3] | a[4] != 0 {
                return Err(Errno::EINVAL);
            }
            let bit = 1u64 << a[2];
            match a[1] {
                PR_CAP_AMBIENT_IS_SET => Ok(u64::from(caps.ambient & bit != 0)),
                PR_CAP_AMBIENT_RAISE => {
                    if caps.permitted & bit == 0
                        || caps.inheritable & bit == 0
                        || caps.securebits & SECBIT_NO_CAP_AMBIENT_RAISE != 0
                    {
                        return Err(Errno::EPERM);
                    }
                    caps.ambient |= bit;
                    Ok(0)
                }
                PR_CAP_AMBIENT_LOWER => {
                    caps.ambient &= !bit;
                    Ok(0)
                }
                _ => Err(Errno::EINVAL),
            }
        }
        // cap_prctl_drop: CAP_SETPCAP first, then a valid capability.
        PR_CAPBSET_DROP => {
            let mut caps = lock(&p.caps);
            if !caps.has(CAP_SETPCAP) {
                return Err(Errno::EPERM);
            }
            if a[1] > u64::from(CAP_LAST_CAP) {
                return Err(Errno::EINVAL);
            }
            caps.bset &= !(1 << a[1]);
            Ok(0)
        }
        PR_GET_SECUREBITS => Ok(u64::from(lock(&p.caps).securebits)),
        // A locked bit cannot change, a lock cannot be released, unknown bits are refused,
        // and it all needs CAP_SETPCAP: every failure is EPERM.
        PR_SET_SECUREBITS => {
            let mut caps = lock(&p.caps);
            let old = u64::from(caps.securebits);
            let locks = old & SECURE_ALL_LOCKS;
            if (locks >> 1) & (old ^ a[1]) != 0
                || locks & !a[1] != 0
                || a[1] & !(SECURE_ALL_LOCKS | SECURE_ALL_BITS) != 0
                || !caps.has(CAP_SETPCAP)
            {
                return Err(Errno::EPERM);
            }
            caps.securebits = a[1] as u32;
            Ok(0)
        }
        PR_GET_KEEPCAPS => Ok(u64::from(
            lock(&p.caps).securebits & crate::sys::cred::SECBIT_KEEP_CAPS != 0,
        )),
        PR_SET_KEEPCAPS => {
            let mut caps = lock(&p.caps);
            if a[1] > 1 {
                return Err(Errno::EINVAL);
            }
            if caps.securebits & SECBIT_KEEP_CAPS_LOCKED != 0 {
                return Err(Errno::EPERM);
            }
            if a[1] == 1 {
                caps.securebits |= crate::sys::cred::SECBIT_KEEP_CAPS;
            } else {
                caps.securebits &= !crate::sys::cred::SECBIT_KEEP_CAPS;
            }
            Ok(0)
        }
        PR_SET_CHILD_SUBREAPER => {
            p.child_subreaper.store(a[1] != 0, Ordering::Relaxed);
            if a[1] != 0 {
                propagate_subreaper(&p);
            }
            Ok(0)
        }
        PR_GET_CHILD_SUBREAPER => {
            c.write_u32(a[1], u32::from(p.child_subreaper.load(Ordering::Relaxed)))?;
            Ok(0)
        }
        // 0 restores the thread's default slack (set from its creator's at clone).
        PR_SET_TIMERSLACK => {
            let v = if a[1] == 0 {
                c.task.default_timer_slack_ns.load(Ordering::Relaxed)
            } else {
                a[1]
            };
            c.task.timer_slack_ns.store(v, Ordering::Relaxed);
            Ok(0)
        }
        PR_GET_TIMERSLACK => Ok(c.task.timer_slack_ns.load(Ordering::Relaxed)),
        // arch/x86/kernel/process.c `get_tsc_mode`/`set_tsc_mode`: per thread (TIF_NOTSC).
        // The engine makes the host thread's own mode agree before the guest runs again, so
        // rdtsc faults in the host and the fault comes back as the guest's SIGSEGV.
        PR_GET_TSC if crate::arch::HAS_TSC_CTL => {
            let off = c.task.tsc_sigsegv.load(Ordering::Relaxed);
            let mode = if off { PR_TSC_SIGSEGV } else { PR_TSC_ENABLE };
            c.write_u32(a[1], mode as u32)?;
            Ok(0)
        }
        PR_SET_TSC if crate::arch::HAS_TSC_CTL => match a[1] {
            PR_TSC_ENABLE | PR_TSC_SIGSEGV => {
                c.task
                    .tsc_sigsegv
                    .store(a[1] == PR_TSC_SIGSEGV, Ordering::Relaxed);
                Ok(0)
            }
            _ => Err(Errno::EINVAL),
        },
        PR_SET_NO_NEW_PRIVS => {
            if a[1] != 1 || a[2] != 0 || a[3] != 0 || a[4] != 0 {
                return Err(Errno::EINVAL);
            }
            lock(&p.caps).no_new_privs = true;
            Ok(0)
        }
        PR_GET_NO_NEW_PRIVS => {
            if a[1] != 0 || a[2] != 0 || a[3] != 0 || a[4] != 0 {
                return Err(Errno::EINVAL);
            }
            Ok(u64::from(lock(&p.caps).no_new_privs))
        }
        PR_SET_VMA => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

/// setgroups(2) (kernel/groups.c): `may_setgroups` is CAP_SETGID, not euid 0, so a process
/// that kept its capabilities across setresuid (PR_SET_KEEPCAPS, as `setpriv --reuid
/// --clear-groups` does) may still set its groups.
fn setgroups(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[0] > 65536 {
        return Err(Errno::EINVAL);
    }
    // may_setgroups: CAP_SETGID in the caller's user namespace, and the namespace allows
    // setgroups ("allow" in /proc/PID/setgroups and a gid map written).
    let p = &c.task.process;
    let ns = crate::userns::of(p);
    if !p.capable_own(um_uapi::abi::capability::CAP_SETGID) || !ns.may_setgroups() {
        return Err(Errno::EPERM);
    }
    let b = c.read_bytes(a[1], a[0] as usize * 4)?;
    let groups = b
        .chunks(4)
        .map(|x| {
            let g = u32::from_le_bytes([x[0], x[1], x[2], x[3]]);
            crate::userns::make_kgid(&ns, g).ok_or(Errno::EINVAL)
        })
        .collect::<SysResult<Vec<u32>>>()?;
    *lock(&p.groups) = groups;
    Ok(0)
}

fn getgroups2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let g = lock(&c.task.process.groups).clone();
    let n = a[0] as i32;
    if n < 0 {
        return Err(Errno::EINVAL);
    }
    if n == 0 {
        return Ok(g.len() as u64);
    }
    if (n as usize) < g.len() {
        return Err(Errno::EINVAL);
    }
    let b: Vec<u8> = g
        .iter()
        .flat_map(|&x| gid_out(c, x).to_le_bytes())
        .collect();
    c.write_bytes(a[1], &b)?;
    Ok(g.len() as u64)
}

/// reboot(2) (kernel/reboot.c): power off, halt and restart end `linux` (status 0, as a
/// machine that was shut down cleanly); Ctrl-Alt-Del settings are accepted.
fn reboot(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    const MAGIC1: u32 = 0xfee1_dead;
    const MAGIC2: [u32; 4] = [672_274_793, 85_072_278, 369_367_448, 537_993_216];
    if a[0] as u32 != MAGIC1 || !MAGIC2.contains(&(a[1] as u32)) {
        return Err(Errno::EINVAL);
    }
    if lock(&c.task.process.creds).euid != 0 {
        return Err(Errno::EPERM);
    }
    let msg = match a[2] as u32 {
        0x4321_fedc => "reboot: Power down",
        0xcdef_0123 => "reboot: System halted",
        0x0123_4567 | 0xa1b2_c3d4 => "reboot: Restarting system",
        0x89ab_cdef | 0 => return Ok(0),
        _ => return Err(Errno::EINVAL),
    };
    crate::printk::line(msg);
    crate::run::shutdown(c.kernel, 0)
}

/// personality(2) (kernel/exec_domain.c): only PER_LINUX exists here; 0xffffffff queries.
fn personality(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let old = c
        .task
        .process
        .personality
        .load(std::sync::atomic::Ordering::Relaxed);
    if a[0] as u32 != u32::MAX {
        c.task
            .process
            .personality
            .store(a[0] as u32, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(old as u64)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("getpid", getpid);
    t.register("gettid", gettid);
    t.register("getppid", getppid);
    t.register("getuid", getuid);
    t.register("geteuid", geteuid);
    t.register("getgid", getgid);
    t.register("getegid", getegid);
    t.register("getresuid", getresuid);
    t.register("getresgid", getresgid);
    t.register("getgroups", getgroups2);
    t.register("set_tid_address", set_tid_address);
    t.register("exit", exit);
    t.register("exit_group", exit_group);
    t.register("uname", uname);
    t.register("sethostname", sethostname);
    t.register("setdomainname", setdomainname);
    t.register("prlimit64", prlimit64);
    t.register("getrlimit", getrlimit);
    t.register("setrlimit", setrlimit);
    t.register("sched_yield", sched_yield);
    t.register("umask", umask);
    t.register("prctl", prctl);
    t.register("setgroups", setgroups);
    t.register("reboot", reboot);
    t.register("personality", personality)
        .partial("stores and reports the value; only PER_LINUX behaviour exists");
}
