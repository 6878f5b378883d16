//! System V IPC syscalls (Linux ipc/shm.c, ipc/sem.c, ipc/msg.c `SYSCALL_DEFINE*`): shmget,
//! shmat, shmdt, shmctl, semget, semop, semtimedop, semctl, msgget, msgsnd, msgrcv, msgctl.
//!
//! Argument decoding, the copies to and from guest memory, sleeping, and the address-space side
//! of shmat/shmdt live here; the objects and their rules are [`crate::ipc`]. Both x86_64 and
//! arm64 have these as separate syscalls (x86_64 has no `ipc` multiplexer either); the layouts
//! are the same on both except `semid64_ds`, taken from the native arch crate. `cmd` carries no
//! `IPC_64` bit on these arches (`CONFIG_ARCH_WANT_IPC_PARSE_VERSION` is unset): a `cmd` with
//! it is unknown, `EINVAL`, as Linux answers.

use crate::msg::{self, Msg, Step};
use crate::sem::{self, SemNs, SemopArgs};
use crate::shm;
use crate::{CAP_IPC_LOCK, CAP_IPC_OWNER, CAP_SYS_ADMIN, CAP_SYS_RESOURCE, Caller};
use crate::{S_IRUGO, S_IWUGO, S_IXUGO, limits};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use um_kernel::arch::native::abi::SemidDs as NativeSemidDs;
use um_kernel::syscall::{SyscallCtx, SyscallTable, lock_mm};
use um_kernel::task::lock;
use um_kernel::wait::{WaitError, wait_event};
use um_mm::{Backing, MapFlags, Prot};
use um_uapi::abi::ipc::*;
use um_uapi::abi::{Pod, Timespec};
use um_uapi::{Errno, SysResult};

/// The caller's identity for the IPC checks.
/// A recorded pid (kept kernel-wide) as the caller's pid namespace sees it (`pid_vnr`).
fn vnr(c: &SyscallCtx<'_>, pid: i32) -> i32 {
    if pid <= 0 {
        return pid;
    }
    c.kernel.tasks.vnr(c.task, pid as u32) as i32
}

fn caller(c: &SyscallCtx<'_>) -> Caller {
    let p = &c.task.process;
    let cr = *lock(&p.creds);
    Caller {
        pid: p.pid as i32,
        euid: cr.euid,
        egid: cr.egid,
        groups: lock(&p.groups).clone(),
        cap_ipc_owner: p.capable(CAP_IPC_OWNER),
        cap_ipc_lock: p.capable(CAP_IPC_LOCK),
        cap_sys_admin: p.capable(CAP_SYS_ADMIN),
        cap_sys_resource: p.capable(CAP_SYS_RESOURCE),
    }
}

/// copy_from_user of a structure.
fn read_pod<T: Pod>(c: &SyscallCtx<'_>, addr: u64) -> SysResult<T> {
    T::from_bytes(&c.read_bytes(addr, T::SIZE)?).ok_or(Errno::EFAULT)
}

/// copy_to_user of a structure.
fn write_pod<T: Pod>(c: &SyscallCtx<'_>, addr: u64, v: &T) -> SysResult<()> {
    c.write_bytes(addr, &v.as_bytes())
}

/// An `int` argument.
fn int(a: u64) -> i32 {
    a as u32 as i32
}

// ---- shared memory ----

fn shmget(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (key, size, flg) = (int(a[0]), a[1], a[2] as u32);
    let who = caller(c);
    let page = lock_mm(&c.mm()).granule().size();
    let frames = c.kernel.frames.clone();
    let id = shm::lock_ns(&shm::table()).get(&who, key, size, flg, page, || {
        Arc::new(um_mm::Shmem::new(frames))
    })?;
    Ok(id as u64)
}

fn shmat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (id, mut addr, flg) = (int(a[0]), a[1], a[2] as u32);
    let who = caller(c);
    let mm = c.mm();
    let page = lock_mm(&mm).granule().size();
    // do_shmat: SHMLBA is the page size on x86_64 and arm64.
    if id < 0 {
        return Err(Errno::EINVAL);
    }
    let mut flags = MapFlags::SHARED;
    if addr != 0 {
        if addr & (page - 1) != 0 {
            if flg & SHM_RND == 0 {
                return Err(Errno::EINVAL);
            }
            addr &= !(page - 1);
            if addr == 0 && flg & SHM_REMAP != 0 {
                return Err(Errno::EINVAL);
            }
        }
        flags |= MapFlags::FIXED;
    } else if flg & SHM_REMAP != 0 {
        return Err(Errno::EINVAL);
    }
    let (mut prot, mut acc) = if flg & SHM_RDONLY != 0 {
        (Prot::READ, S_IRUGO)
    } else {
        (Prot::READ | Prot::WRITE, S_IRUGO | S_IWUGO)
    };
    if flg & SHM_EXEC != 0 {
        prot |= Prot::EXEC;
        acc |= S_IXUGO;
    }
    let at = shm::lock_ns(&shm::table()).attach(&who, id, acc)?;
    let size = at.size.div_ceil(page) * page;
    let mut m = lock_mm(&mm);
    if addr != 0 && flg & SHM_REMAP == 0 {
        let end = addr.checked_add(size).ok_or(Errno::EINVAL)?;
        if m.vmas().iter().any(|v| v.start < end && addr < v.end) {
            return Err(Errno::EINVAL);
        }
    }
    let backing = Backing::Shmem {
        shm: at.shm,
        offset: 0,
    };
    // A read-only attach is a mapping of a file opened O_RDONLY: mprotect cannot add write.
    m.mmap_may_write(addr, size, prot, flags, backing, flg & SHM_RDONLY == 0)
}

fn shmdt(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let addr = a[0];
    let who = caller(c);
    let mm = c.mm();
    let mut m = lock_mm(&mm);
    let page = m.granule().size();
    if addr & (page - 1) != 0 {
        return Err(Errno::EINVAL);
    }
    // ksys_shmdt: the first segment vma at or after addr that maps the segment from where addr
    // would be its start, then the rest of that segment's vmas up to addr + its size.
    let table = shm::table();
    let mut ns = shm::lock_ns(&table);
    let seg_of = |ns: &mut shm::ShmNs, v: &um_mm::Vma| match &v.backing {
        Backing::Shmem { shm, offset } if v.start >= addr && v.start - addr == *offset => ns
            .by_object(shm.id())
            .map(|(id, size)| (id, size, shm.id())),
        _ => None,
    };
    // The vma copies hold references to the segments: gone before the reap below counts them.
    let (id, unmap) = {
        let vmas: Vec<um_mm::Vma> = m.vmas().into_iter().filter(|v| v.end > addr).collect();
        let mut it = vmas.iter();
        let mut found = None;
        for v in it.by_ref() {
            if let Some(s) = seg_of(&mut ns, v) {
                found = Some((s, v.start, v.len()));
                break;
            }
        }
        let Some(((id, size, obj), start, len)) = found else {
            return Err(Errno::EINVAL);
        };
        let mut unmap = vec![(start, len)];
        let size = size.div_ceil(page) * page;
        for v in it {
            if v.end - addr > size {
                break;
            }
            if seg_of(&mut ns, v).is_some_and(|(_, _, o)| o == obj) {
                unmap.push((v.start, v.len()));
            }
        }
        (id, unmap)
    };
    for (s, l) in unmap {
        m.munmap(s, l)?;
    }
    drop(m);
    ns.detached(who.pid, id);
    ns.reap();
    Ok(0)
}

fn shmctl(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (id, cmd, buf) = (int(a[0]), int(a[1]), a[2]);
    if cmd < 0 || id < 0 {
        return Err(Errno::EINVAL);
    }
    let who = caller(c);
    match cmd {
        IPC_INFO => {
            let (max, info) = shm::lock_ns(&shm::table()).ipc_info();
            write_pod(c, buf, &info)?;
            Ok(max as u64)
        }
        SHM_INFO => {
            let (max, info) = shm::lock_ns(&shm::table()).shm_info();
            write_pod(c, buf, &info)?;
            Ok(max as u64)
        }
        IPC_STAT | SHM_STAT | SHM_STAT_ANY => {
            let (id, mut ds) =
                shm::lock_ns(&shm::table()).stat(&who, id, cmd != IPC_STAT, cmd != SHM_STAT_ANY)?;
            ds.shm_cpid = vnr(c, ds.shm_cpid);
            ds.shm_lpid = vnr(c, ds.shm_lpid);
            write_pod(c, buf, &ds)?;
            Ok(if cmd == IPC_STAT { 0 } else { id as u64 })
        }
        IPC_SET => {
            let ds: ShmidDs = read_pod(c, buf)?;
            shm::lock_ns(&shm::table()).set(&who, id, &ds.shm_perm)?;
            Ok(0)
        }
        IPC_RMID => {
            shm::lock_ns(&shm::table()).rmid(&who, id)?;
            Ok(0)
        }
        SHM_LOCK | SHM_UNLOCK => {
            shm::lock_ns(&shm::table()).lock(&who, id, cmd == SHM_LOCK)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

// ---- semaphores ----

fn semget(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let who = caller(c);
    Ok(sem::lock_ns(&sem::table()).get(&who, int(a[0]), int(a[1]), a[2] as u32)? as u64)
}

fn semop(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_semtimedop(c, int(a[0]), a[1], a[2], None)
}

fn semtimedop(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let to = if a[3] != 0 {
        Some(read_pod::<Timespec>(c, a[3])?)
    } else {
        None
    };
    do_semtimedop(c, int(a[0]), a[1], a[2], to)
}

/// `do_semtimedop`.
fn do_semtimedop(
    c: &mut SyscallCtx<'_>,
    id: i32,
    sops_addr: u64,
    nsops: u64,
    timeout: Option<Timespec>,
) -> SysResult {
    if nsops < 1 || id < 0 {
        return Err(Errno::EINVAL);
    }
    if nsops > limits().semopm().max(0) as u64 {
        return Err(Errno::E2BIG);
    }
    let bytes = c.read_bytes(sops_addr, nsops as usize * Sembuf::SIZE)?;
    let sops: Vec<Sembuf> = bytes.chunks(Sembuf::SIZE).map(Sembuf::read_le).collect();
    let deadline = match timeout {
        Some(t) => {
            if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) {
                return Err(Errno::EINVAL);
            }
            let d = Duration::new(t.tv_sec as u64, t.tv_nsec as u32);
            Some(Instant::now().checked_add(d)).flatten()
        }
        None => None,
    };
    let args = SemopArgs {
        id,
        sops: &sops,
        alter: sops.iter().any(|s| s.sem_op != 0),
        undo: sops.iter().any(|s| s.sem_flg & SEM_UNDO != 0),
        max: sops.iter().map(|s| s.sem_num).max().unwrap_or(0),
    };
    let who = caller(c);
    let queue = sem::lock_ns(&sem::table()).semop_prepare(&who, &args)?;
    let tok = sem::token();
    let r = wait_event(c.task, &[&queue], deadline, || {
        match sem::lock_ns(&sem::table()).semop_try(&who, &args, tok) {
            Ok(Some(())) => Some(Ok(())),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    });
    match r {
        Ok(r) => r.map(|()| 0),
        Err(e) => {
            sem::lock_ns(&sem::table()).semop_cancel(id, tok);
            Err(match e {
                // ipc/sem.c: a signal is -EINTR (semop is not restarted), a timeout -EAGAIN.
                WaitError::Interrupted => Errno::EINTR,
                WaitError::TimedOut => Errno::EAGAIN,
            })
        }
    }
}

fn semctl(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (id, num, cmd, arg) = (int(a[0]), int(a[1]), int(a[2]), a[3]);
    if id < 0 {
        return Err(Errno::EINVAL);
    }
    let who = caller(c);
    match cmd {
        IPC_INFO | SEM_INFO => {
            let (max, info) = sem::lock_ns(&sem::table()).info(cmd == SEM_INFO);
            write_pod(c, arg, &info)?;
            Ok(max as u64)
        }
        IPC_STAT | SEM_STAT | SEM_STAT_ANY => {
            let (id, perm, otime, ctime, nsems) =
                sem::lock_ns(&sem::table()).stat(&who, id, cmd != IPC_STAT, cmd != SEM_STAT_ANY)?;
            let ds = <NativeSemidDs as SemidDs>::new(perm, otime, ctime, nsems);
            write_pod(c, arg, &ds)?;
            Ok(if cmd == IPC_STAT { 0 } else { id as u64 })
        }
        GETALL => {
            let vals: Vec<u8> = {
                let table = sem::table();
                let mut ns = sem::lock_ns(&table);
                let set = ns.checked(&who, id, S_IRUGO)?;
                set.sems
                    .iter()
                    .flat_map(|s| (s.val as u16).to_le_bytes())
                    .collect()
            };
            c.write_bytes(arg, &vals)?;
            Ok(0)
        }
        SETALL => {
            let n = sem::lock_ns(&sem::table())
                .checked(&who, id, S_IWUGO)?
                .sems
                .len();
            let b = c.read_bytes(arg, n * 2)?;
            let vals: Vec<u16> = b
                .chunks(2)
                .map(|x| u16::from_le_bytes([x[0], x[1]]))
                .collect();
            sem::lock_ns(&sem::table()).setall(&who, id, &vals)?;
            Ok(0)
        }
        GETVAL | GETPID | GETNCNT | GETZCNT => {
            let table = sem::table();
            let mut ns = sem::lock_ns(&table);
            let set = ns.checked(&who, id, S_IRUGO)?;
            let s = usize::try_from(num)
                .ok()
                .and_then(|i| set.sems.get(i))
                .copied()
                .ok_or(Errno::EINVAL)?;
            let v = match cmd {
                GETVAL => s.val,
                GETPID => s.pid,
                GETNCNT => SemNs::count_waiters(set, num as u16, false),
                _ => SemNs::count_waiters(set, num as u16, true),
            };
            drop(ns);
            // The pid is translated outside the IPC lock (it takes the task table's).
            Ok(if cmd == GETPID { vnr(c, v) } else { v } as u64)
        }
        SETVAL => {
            sem::lock_ns(&sem::table()).setval(&who, id, num, arg as u32 as i32)?;
            Ok(0)
        }
        IPC_SET => {
            let ds: NativeSemidDs = read_pod(c, arg)?;
            sem::lock_ns(&sem::table()).set(&who, id, &ds.perm())?;
            Ok(0)
        }
        IPC_RMID => {
            sem::lock_ns(&sem::table()).rmid(&who, id)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

// ---- message queues ----

fn msgget(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let who = caller(c);
    Ok(msg::lock_ns(&msg::table()).get(&who, int(a[0]), a[1] as u32)? as u64)
}

/// The end of an interrupted msgsnd/msgrcv sleep (ipc/msg.c: `-ERESTARTNOHAND`).
fn restart(e: WaitError) -> Errno {
    match e {
        WaitError::Interrupted => Errno::ERESTARTNOHAND,
        WaitError::TimedOut => Errno::EAGAIN,
    }
}

fn msgsnd(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (id, ptr, size, flg) = (int(a[0]), a[1], a[2], a[3] as u32);
    // ksys_msgsnd reads mtype before anything else.
    let mtype = c.read_u64(ptr)? as i64;
    if size > limits().msgmax.load(Ordering::Relaxed).max(0) as u64 || id < 0 {
        return Err(Errno::EINVAL);
    }
    if mtype < 1 {
        return Err(Errno::EINVAL);
    }
    let text = c.read_bytes(ptr.checked_add(8).ok_or(Errno::EFAULT)?, size as usize)?;
    let m = Msg { mtype, text };
    let who = caller(c);
    let queue = msg::lock_ns(&msg::table()).wait_queue(id)?;
    let mut first = true;
    let r = wait_event(c.task, &[&queue], None, || {
        let r = msg::lock_ns(&msg::table()).send(&who, id, &m, first);
        first = false;
        match r {
            Ok(Step::Done(())) => Some(Ok(())),
            Ok(Step::Wait) if flg & IPC_NOWAIT != 0 => Some(Err(Errno::EAGAIN)),
            Ok(Step::Wait) => None,
            Err(e) => Some(Err(e)),
        }
    });
    r.map_err(restart)?.map(|()| 0)
}

fn msgrcv(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (id, ptr, bufsz, typ, flg) = (int(a[0]), a[1], a[2], a[3] as i64, a[4] as u32);
    if id < 0 || (bufsz as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    msg::check_rcv_flags(flg)?;
    let how = msg::convert_mode(typ, flg);
    let who = caller(c);
    let queue = msg::lock_ns(&msg::table()).wait_queue(id)?;
    let mut first = true;
    let r = wait_event(c.task, &[&queue], None, || {
        let r = msg::lock_ns(&msg::table()).receive(&who, id, bufsz, how, flg, first);
        first = false;
        match r {
            Ok(Step::Done(m)) => Some(Ok(m)),
            Ok(Step::Wait) if flg & IPC_NOWAIT != 0 => Some(Err(Errno::ENOMSG)),
            Ok(Step::Wait) => None,
            Err(e) => Some(Err(e)),
        }
    });
    let m = r.map_err(restart)??;
    // do_msg_fill: the type, then the (possibly truncated) text.
    c.write_u64(ptr, m.mtype as u64)?;
    c.write_bytes(ptr.checked_add(8).ok_or(Errno::EFAULT)?, &m.text)?;
    Ok(m.text.len() as u64)
}

fn msgctl(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (id, cmd, buf) = (int(a[0]), int(a[1]), a[2]);
    if cmd < 0 || id < 0 {
        return Err(Errno::EINVAL);
    }
    let who = caller(c);
    match cmd {
        IPC_INFO | MSG_INFO => {
            let (max, info) = msg::lock_ns(&msg::table()).info(cmd == MSG_INFO);
            write_pod(c, buf, &info)?;
            Ok(max as u64)
        }
        IPC_STAT | MSG_STAT | MSG_STAT_ANY => {
            let (id, mut ds) =
                msg::lock_ns(&msg::table()).stat(&who, id, cmd != IPC_STAT, cmd != MSG_STAT_ANY)?;
            ds.msg_lspid = vnr(c, ds.msg_lspid);
            ds.msg_lrpid = vnr(c, ds.msg_lrpid);
            write_pod(c, buf, &ds)?;
            Ok(if cmd == IPC_STAT { 0 } else { id as u64 })
        }
        IPC_SET => {
            let ds: MsqidDs = read_pod(c, buf)?;
            msg::lock_ns(&msg::table()).set(&who, id, &ds.msg_perm, ds.msg_qbytes)?;
            Ok(0)
        }
        IPC_RMID => {
            msg::lock_ns(&msg::table()).rmid(&who, id)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("shmget", shmget);
    t.register("shmat", shmat);
    t.register("shmdt", shmdt);
    t.register("shmctl", shmctl);
    t.register("semget", semget);
    t.register("semop", semop);
    t.register("semtimedop", semtimedop);
    t.register("semctl", semctl);
    t.register("msgget", msgget);
    t.register("msgsnd", msgsnd);
    t.register("msgrcv", msgrcv)
        .partial("MSG_COPY is ENOSYS, as without CONFIG_CHECKPOINT_RESTORE");
    t.register("msgctl", msgctl);
}
