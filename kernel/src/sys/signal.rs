//! Signal syscalls. For now actions and masks are recorded with Linux's argument checks
//! (kernel/signal.c); delivery comes with the signals work.

use crate::syscall::{SyscallCtx, SyscallTable};
use crate::task::{SigAction, lock};
use um_uapi::{Errno, SysResult};

const SIGKILL: u64 = 9;
const SIGSTOP: u64 = 19;
/// Bits that can never be blocked.
const UNBLOCKABLE: u64 = (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1));

fn rt_sigaction(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (sig, act, oact, size) = (a[0], a[1], a[2], a[3]);
    if size != 8 || sig == 0 || sig > 64 {
        return Err(Errno::EINVAL);
    }
    let new = if act != 0 {
        if sig == SIGKILL || sig == SIGSTOP {
            return Err(Errno::EINVAL);
        }
        let b = c.read_bytes(act, 32)?;
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
        Some(SigAction {
            handler: w(0),
            flags: w(1),
            restorer: w(2),
            mask: w(3) & !UNBLOCKABLE,
        })
    } else {
        None
    };
    let mut acts = lock(&c.task.process.sigactions);
    let old = acts[(sig - 1) as usize];
    if oact != 0 {
        let mut b = Vec::with_capacity(32);
        for v in [old.handler, old.flags, old.restorer, old.mask] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        c.write_bytes(oact, &b)?;
    }
    if let Some(n) = new {
        acts[(sig - 1) as usize] = n;
    }
    Ok(0)
}

fn rt_sigprocmask(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (how, set, oset, size) = (a[0], a[1], a[2], a[3]);
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    let new = if set != 0 {
        Some(c.read_u64(set)?)
    } else {
        None
    };
    let mut mask = lock(&c.task.sigmask);
    let old = *mask;
    if let Some(s) = new {
        *mask = match how {
            0 => old | s,  // SIG_BLOCK
            1 => old & !s, // SIG_UNBLOCK
            2 => s,        // SIG_SETMASK
            _ => return Err(Errno::EINVAL),
        } & !UNBLOCKABLE;
    }
    drop(mask);
    if oset != 0 {
        c.write_u64(oset, old)?;
    }
    Ok(0)
}

fn sigaltstack(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[1] != 0 {
        // No alternate stack yet: report SS_DISABLE.
        let mut b = [0u8; 24];
        b[8..12].copy_from_slice(&2i32.to_le_bytes());
        c.write_bytes(a[1], &b)?;
    }
    Ok(0)
}

/// What happens when `sig` reaches a process with action `act` (kernel/signal.c): true if
/// it ends the process.
fn is_fatal(sig: u64, act: &SigAction) -> bool {
    const SIG_IGN: u64 = 1;
    match act.handler {
        SIG_IGN => false,
        // SIG_DFL: SIGCHLD, SIGCONT, SIGURG, SIGWINCH are ignored; the stop signals stop the
        // process once job control exists, and are ignored until then.
        0 => !matches!(sig, 17 | 18 | 19 | 20 | 21 | 22 | 23 | 28),
        // A handler: delivery to handlers comes with the signals work; until then the
        // process ends as if it had none, with a log line saying why.
        _ => {
            log::warn!(
                "signal {sig}: delivery to a guest handler is not implemented yet; terminating"
            );
            true
        }
    }
}

/// Sends `sig` to the calling process (the only target there is for now).
fn signal_self(c: &mut SyscallCtx<'_>, sig: u64) -> SysResult {
    if sig == 0 {
        return Ok(0);
    }
    let act = lock(&c.task.process.sigactions)[(sig - 1) as usize];
    if sig == SIGKILL || is_fatal(sig, &act) {
        c.action = crate::syscall::Action::ExitGroup(crate::task::ExitStatus::Signaled(sig as i32));
    }
    Ok(0)
}

fn check_sig(sig: u64) -> SysResult<()> {
    if sig > 64 { Err(Errno::EINVAL) } else { Ok(()) }
}

fn kill(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    check_sig(a[1])?;
    let pid = a[0] as i32;
    let me = c.task.process.pid as i32;
    if pid == me || pid == 0 || pid == -1 || pid == -me {
        return signal_self(c, a[1]);
    }
    Err(Errno::ESRCH)
}

fn tkill(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    check_sig(a[1])?;
    if a[0] as i32 <= 0 {
        return Err(Errno::EINVAL);
    }
    if a[0] as u32 != c.task.tid {
        return Err(Errno::ESRCH);
    }
    signal_self(c, a[1])
}

fn tgkill(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    check_sig(a[2])?;
    if a[0] as i32 <= 0 || a[1] as i32 <= 0 {
        return Err(Errno::EINVAL);
    }
    if a[0] as u32 != c.task.process.pid || a[1] as u32 != c.task.tid {
        return Err(Errno::ESRCH);
    }
    signal_self(c, a[2])
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("rt_sigaction", rt_sigaction);
    t.register("rt_sigprocmask", rt_sigprocmask);
    t.register("sigaltstack", sigaltstack);
    t.register("kill", kill);
    t.register("tkill", tkill);
    t.register("tgkill", tgkill);
}
