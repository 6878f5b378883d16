//! membarrier(2) (Linux kernel/sched/membarrier.c).
//!
//! Guest threads run on the host's CPUs in stub processes, so a barrier must reach host
//! threads this kernel does not schedule. The one host command that does that without the
//! targets registering anything is `MEMBARRIER_CMD_GLOBAL` (an RCU grace period on the host:
//! every CPU passes a full barrier before it returns), so every barrier command here is
//! served by it: `GLOBAL`, `GLOBAL_EXPEDITED` and `PRIVATE_EXPEDITED` (slower than Linux's
//! IPIs, never weaker). The registration commands record the registration per address space,
//! as Linux keeps it in `mm->membarrier_state`: `PRIVATE_EXPEDITED` before
//! `REGISTER_PRIVATE_EXPEDITED` is `EPERM`, and a fork or exec starts unregistered.
//!
//! Left out, as in a Linux built without them: the `SYNC_CORE` commands (a host grace period
//! does not promise a core-serialising return to user mode; `EINVAL`, as on an arch without
//! `CONFIG_ARCH_HAS_MEMBARRIER_SYNC_CORE`) and the `RSEQ` ones (`EINVAL`: no `CONFIG_RSEQ`,
//! see `rseq.rs`). If the host refuses `MEMBARRIER_CMD_GLOBAL` (no membarrier, `nohz_full`),
//! `QUERY` reports no commands and every other command is `EINVAL`, which is what programs
//! fall back from.

use crate::sysarg::args;
use crate::syscall::{SyscallCtx, SyscallTable};
use crate::task::lock;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_mm::Mm;
use um_uapi::{Errno, SysResult};

const CMD_QUERY: u64 = 0;
const CMD_GLOBAL: u64 = 1 << 0;
const CMD_GLOBAL_EXPEDITED: u64 = 1 << 1;
const CMD_REGISTER_GLOBAL_EXPEDITED: u64 = 1 << 2;
const CMD_PRIVATE_EXPEDITED: u64 = 1 << 3;
const CMD_REGISTER_PRIVATE_EXPEDITED: u64 = 1 << 4;
const CMD_PRIVATE_EXPEDITED_RSEQ: u64 = 1 << 7;
/// `MEMBARRIER_CMD_FLAG_CPU`: only with `PRIVATE_EXPEDITED_RSEQ`.
const CMD_FLAG_CPU: u64 = 1;

/// What `QUERY` reports when the host can back it.
const SUPPORTED: u64 = CMD_GLOBAL
    | CMD_GLOBAL_EXPEDITED
    | CMD_REGISTER_GLOBAL_EXPEDITED
    | CMD_PRIVATE_EXPEDITED
    | CMD_REGISTER_PRIVATE_EXPEDITED;

/// `MEMBARRIER_STATE_PRIVATE_EXPEDITED_READY`.
const PRIVATE_READY: u32 = 1;
/// `MEMBARRIER_STATE_GLOBAL_EXPEDITED_READY`.
const GLOBAL_READY: u32 = 2;

/// Whether the host's `MEMBARRIER_CMD_GLOBAL` is there (asked once).
fn host_global() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        um_os_linux::host::membarrier(CMD_QUERY as i32)
            .is_ok_and(|mask| mask as u64 & CMD_GLOBAL != 0)
    })
}

/// An address space (by identity) and its `MEMBARRIER_STATE_*` bits.
type Registration = (Weak<Mutex<Mm>>, u32);

/// Registrations per address space (`mm->membarrier_state`).
fn states() -> &'static Mutex<Vec<Registration>> {
    static S: OnceLock<Mutex<Vec<Registration>>> = OnceLock::new();
    S.get_or_init(Default::default)
}

fn state_of(mm: &Arc<Mutex<Mm>>) -> u32 {
    let me = Arc::downgrade(mm);
    lock(states())
        .iter()
        .find(|(w, _)| w.ptr_eq(&me))
        .map_or(0, |e| e.1)
}

fn register_state(mm: &Arc<Mutex<Mm>>, bit: u32) {
    let me = Arc::downgrade(mm);
    let mut s = lock(states());
    s.retain(|(w, _)| w.strong_count() > 0);
    match s.iter_mut().find(|(w, _)| w.ptr_eq(&me)) {
        Some(e) => e.1 |= bit,
        None => s.push((me, bit)),
    }
}

/// A full barrier on every host CPU.
fn barrier() -> SysResult {
    um_os_linux::host::membarrier(CMD_GLOBAL as i32).map_err(|_| Errno::EINVAL)?;
    Ok(0)
}

fn membarrier(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    // SYSCALL_DEFINE3(membarrier, int, cmd, unsigned int, flags, int, cpu_id); `cmd` is
    // compared sign-extended, as Linux's `int` is against the `MEMBARRIER_CMD_*` values.
    let (cmd, flags): (i32, u32) = args(&a)?;
    let (cmd, flags) = (cmd as i64 as u64, u64::from(flags));
    let flags_ok = if cmd == CMD_PRIVATE_EXPEDITED_RSEQ {
        flags == 0 || flags == CMD_FLAG_CPU
    } else {
        flags == 0
    };
    if !flags_ok {
        return Err(Errno::EINVAL);
    }
    let host = host_global();
    if cmd == CMD_QUERY {
        return Ok(if host { SUPPORTED } else { 0 });
    }
    if !host || cmd & SUPPORTED == 0 || cmd.count_ones() != 1 {
        return Err(Errno::EINVAL);
    }
    let mm = c.mm();
    match cmd {
        CMD_GLOBAL | CMD_GLOBAL_EXPEDITED => barrier(),
        CMD_REGISTER_GLOBAL_EXPEDITED => {
            register_state(&mm, GLOBAL_READY);
            Ok(0)
        }
        CMD_PRIVATE_EXPEDITED => {
            if state_of(&mm) & PRIVATE_READY == 0 {
                return Err(Errno::EPERM);
            }
            barrier()
        }
        CMD_REGISTER_PRIVATE_EXPEDITED => {
            register_state(&mm, PRIVATE_READY);
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("membarrier", membarrier);
}
