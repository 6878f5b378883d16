//! pidfd_open, pidfd_getfd and pidfd_send_signal (Linux kernel/pid.c, kernel/signal.c). The file is
//! [`crate::pidfd::PidFd`]; `waitid(P_PIDFD)` is in `wait.rs`.

use crate::pidfd::{O_NONBLOCK, PidFd, pid_of_fd, signal_target_of_fd};
use crate::signal as sigs;
use crate::sysarg::args;
use crate::syscall::{SyscallCtx, SyscallTable};
use crate::task::lock;
use crate::vfs::OpenFile;
use std::sync::Arc;
use um_uapi::abi::pod::Pod;
use um_uapi::abi::signal::Siginfo;
use um_uapi::{Errno, SysResult};

use um_uapi::abi::fcntl::O_CLOEXEC;
use um_uapi::abi::fcntl::O_RDWR;
use um_uapi::abi::signal::SI_TKILL;
use um_uapi::abi::signal::SI_USER;

/// pidfd_open(2): `EINVAL` for unknown flags (only `PIDFD_NONBLOCK`), a pid <= 0, or a thread
/// that does not lead a thread group; `ESRCH` if no such pid exists (a zombie still does).
fn pidfd_open(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (pid, flags): (i32, u64) = args(&a)?;
    if flags & !u64::from(O_NONBLOCK) != 0 || pid <= 0 {
        return Err(Errno::EINVAL);
    }
    // A number of the caller's pid namespace.
    let t = c
        .kernel
        .tasks
        .find_task_vpid(c.task, pid as u32)
        .ok_or(Errno::ESRCH)?;
    if t.tid != t.process.pid {
        return Err(Errno::EINVAL);
    }
    let file = OpenFile::new(
        Box::new(PidFd::new(t.process.clone())),
        O_RDWR | O_CLOEXEC | flags as u32,
        None,
    );
    Ok(lock(&c.task.process.files()).install(file, true, 0)? as u64)
}

/// pidfd_getfd(2) (kernel/pid.c `pidfd_getfd`, `__pidfd_fget`): a duplicate of descriptor
/// `fd` of the process behind `pidfd`, installed close-on-exec. Flags must be 0 (`EINVAL`);
/// `pidfd` must be a pidfd (`EBADF`) of a process that has not been reaped (`ESRCH`); the
/// caller needs ptrace's attach access (`PTRACE_MODE_ATTACH_REALCREDS`,
/// [`crate::ptrace::may_access`]; `EPERM`); `fd` must be open there (`EBADF`); a full table
/// is `EMFILE`.
fn pidfd_getfd(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (pidfd, fd, flags): (u64, u32, u64) = args(&a)?;
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let (target, _) = pid_of_fd(c, pidfd)?;
    let alive = c
        .kernel
        .tasks
        .process(target.pid)
        .is_some_and(|p| Arc::ptr_eq(&p, &target));
    if !alive {
        return Err(Errno::ESRCH);
    }
    crate::ptrace::may_access(&c.task.process, &target, true)?;
    // A zombie has closed its descriptors (`fget_task` finds no files).
    if target.zombie.load(std::sync::atomic::Ordering::Acquire) {
        return Err(Errno::EBADF);
    }
    let file = lock(&target.files()).get(u64::from(fd))?;
    Ok(lock(&c.task.process.files()).install(file, true, 0)? as u64)
}

/// pidfd_send_signal(2) (kernel/signal.c): flags must be 0; the descriptor must be a pidfd
/// or an open `/proc/PID` directory (`EBADF`); a given siginfo must carry the same signal (`EINVAL`) and may claim a kernel or
/// `kill()` origin only when sent to oneself (`EPERM`); a process already reaped is `ESRCH`.
fn pidfd_send_signal(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd, sig, uinfo, flags): (u64, u64, u64, u64) = args(&a)?;
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let target = signal_target_of_fd(c, fd)?;
    let me = &c.task.process;
    let info = if uinfo != 0 {
        let info = Siginfo::from_bytes(&c.read_bytes(uinfo, 128)?).ok_or(Errno::EFAULT)?;
        if i64::from(info.si_signo) != sig as i64 {
            return Err(Errno::EINVAL);
        }
        if !Arc::ptr_eq(&target, me) && (info.si_code >= 0 || info.si_code == SI_TKILL) {
            return Err(Errno::EPERM);
        }
        info
    } else {
        // The sender as the target's namespace sees it.
        let spid = crate::pidns::tgid_seen_by(me, &target) as i32;
        Siginfo::kill(sig as u32, SI_USER, spid, lock(&me.creds).uid)
    };
    // kill_pid_info: the pid must still have its task (a zombie does; a reaped process not).
    let alive = c
        .kernel
        .tasks
        .process(target.pid)
        .is_some_and(|p| Arc::ptr_eq(&p, &target));
    if !alive {
        return Err(Errno::ESRCH);
    }
    // check_kill_permission: valid_signal.
    if sig > 64 {
        return Err(Errno::EINVAL);
    }
    // check_kill_permission, then the queue limit (`__send_signal_locked`).
    sigs::check_kill_permission(me, &target, sig as u32, info.si_code)?;
    if sig != 0 && !target.zombie.load(std::sync::atomic::Ordering::Acquire) {
        sigs::check_sigpending(c.kernel, &target, sig as u32, info.si_code)?;
        sigs::send_to_process(c.kernel, &target, info);
    }
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("pidfd_open", pidfd_open);
    t.register("pidfd_getfd", pidfd_getfd);
    t.register("pidfd_send_signal", pidfd_send_signal);
}
