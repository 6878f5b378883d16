//! The probed-for calls this kernel leaves out on purpose, each answering what a Linux kernel
//! built without the feature answers (`sys_ni_syscall`, kernel/sys_ni.c `COND_SYSCALL`):
//! `ENOSYS`, whatever the arguments. That is the answer callers' fallbacks test for:
//!
//! * io_uring_setup/enter/register (`CONFIG_IO_URING`): liburing users (systemd-journald,
//!   QEMU, MariaDB, fio's io_uring engine) see `ENOSYS` and use the thread pool, AIO
//!   ([`um_uapi::abi::probe::Iocb`], the file layer's `sys/aio.rs`) or plain reads instead.
//! * perf_event_open (`CONFIG_PERF_EVENTS`): `perf` reports "not supported", rr and profilers
//!   refuse cleanly; `EACCES` would send them to `perf_event_paranoid` instead, which is no
//!   fix here.
//! * fanotify_init/mark (`CONFIG_FANOTIFY`): callers fall back to inotify, which is real.
//! * keyctl, add_key, request_key (`CONFIG_KEYS`): keyutils, systemd and kerberos treat
//!   `ENOSYS` as "no kernel keyring" and keep secrets in their own memory.
//!
//! Each is named once in the kernel log at its first call (not as an "unimplemented
//! syscall": the gates count those as missing features), and `docs/syscalls.md` shows them
//! as "ENOSYS on purpose" with the reasons below.

use crate::syscall::{SyscallCtx, SyscallTable};
use std::collections::HashSet;
use std::sync::Mutex;
use um_uapi::{Errno, SysResult};

/// `sys_ni_syscall`, logging the name at its first call.
fn absent(c: &mut SyscallCtx<'_>, _a: [u64; 6]) -> SysResult {
    static SEEN: Mutex<Option<HashSet<u64>>> = Mutex::new(None);
    let nr = c.regs().syscall_nr();
    let first = crate::task::lock(&SEEN)
        .get_or_insert_with(HashSet::new)
        .insert(nr);
    if first {
        let name = crate::arch::syscalls::name(nr as u32).unwrap_or("?");
        log::info!(
            "{name}: ENOSYS on purpose (this kernel is built as Linux without the feature), pid {}",
            c.task.tid
        );
    }
    Err(Errno::ENOSYS)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    const URING: &str = "as a kernel without CONFIG_IO_URING: liburing users fall back to threads, native AIO or plain reads";
    t.register("io_uring_setup", absent).enosys(URING);
    t.register("io_uring_enter", absent).enosys(URING);
    t.register("io_uring_register", absent).enosys(URING);
    t.register("perf_event_open", absent)
        .enosys("as a kernel without CONFIG_PERF_EVENTS: no host counters are exposed to guests; perf reports it unsupported (EACCES would point at perf_event_paranoid instead)");
    const FAN: &str =
        "as a kernel without CONFIG_FANOTIFY: callers fall back to inotify, which is implemented";
    t.register("fanotify_init", absent).enosys(FAN);
    t.register("fanotify_mark", absent).enosys(FAN);
    const KEYS: &str = "as a kernel without CONFIG_KEYS: keyutils, systemd and kerberos treat ENOSYS as no kernel keyring";
    t.register("keyctl", absent).enosys(KEYS);
    t.register("add_key", absent).enosys(KEYS);
    t.register("request_key", absent).enosys(KEYS);
}
