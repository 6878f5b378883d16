//! Process identity and lifetime: getpid and friends, credentials, exit, uname, rlimits
//! (Linux kernel/sys.c, kernel/exit.c).

use crate::syscall::{Action, SyscallCtx, SyscallTable};
use crate::task::{ExitStatus, lock};
use um_uapi::{Errno, SysResult};

fn getpid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    Ok(c.task.process.pid as u64)
}

fn gettid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    Ok(c.task.tid as u64)
}

fn getppid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    Ok(c.task
        .process
        .ppid
        .load(std::sync::atomic::Ordering::Relaxed) as u64)
}

fn getuid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    Ok(lock(&c.task.process.creds).uid as u64)
}

fn geteuid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    Ok(lock(&c.task.process.creds).euid as u64)
}

fn getgid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    Ok(lock(&c.task.process.creds).gid as u64)
}

fn getegid(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    Ok(lock(&c.task.process.creds).egid as u64)
}

fn getresuid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let cr = *lock(&c.task.process.creds);
    c.write_u32(a[0], cr.uid)?;
    c.write_u32(a[1], cr.euid)?;
    c.write_u32(a[2], cr.suid)?;
    Ok(0)
}

fn getresgid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let cr = *lock(&c.task.process.creds);
    c.write_u32(a[0], cr.gid)?;
    c.write_u32(a[1], cr.egid)?;
    c.write_u32(a[2], cr.sgid)?;
    Ok(0)
}

fn getgroups(_c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if (a[0] as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

fn set_tid_address(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    *lock(&c.task.clear_child_tid) = a[0];
    Ok(c.task.tid as u64)
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
    for (i, s) in [
        &u.sysname,
        &u.nodename,
        &u.release,
        &u.version,
        &u.machine,
        &u.domainname,
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

const RLIM_NLIMITS: u64 = 16;

fn prlimit64(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (pid, res, new, old) = (a[0] as i32, a[1], a[2], a[3]);
    if res >= RLIM_NLIMITS {
        return Err(Errno::EINVAL);
    }
    if pid != 0 && pid as u32 != c.task.process.pid {
        return Err(Errno::ESRCH);
    }
    let newval = if new != 0 {
        let b = c.read_bytes(new, 16)?;
        let cur = u64::from_le_bytes(b[0..8].try_into().map_err(|_| Errno::EFAULT)?);
        let max = u64::from_le_bytes(b[8..16].try_into().map_err(|_| Errno::EFAULT)?);
        if cur > max {
            return Err(Errno::EINVAL);
        }
        Some((cur, max))
    } else {
        None
    };
    let mut lim = lock(&c.task.process.rlimits);
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

fn getpgid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[0] != 0 && a[0] as u32 != c.task.process.pid {
        return Err(Errno::ESRCH);
    }
    Ok(c.task.process.pid as u64)
}

fn getpgrp(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    Ok(c.task.process.pid as u64)
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
    t.register("getgroups", getgroups);
    t.register("set_tid_address", set_tid_address);
    t.register("exit", exit);
    t.register("exit_group", exit_group);
    t.register("uname", uname);
    t.register("prlimit64", prlimit64);
    t.register("getrlimit", getrlimit);
    t.register("setrlimit", setrlimit);
    t.register("sched_yield", sched_yield);
    t.register("umask", umask);
    t.register("getpgid", getpgid);
    t.register("getpgrp", getpgrp);
}
