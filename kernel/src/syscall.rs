//! The syscall table and dispatcher.
//!
//! Subsystems register their handlers by Linux name (as `SYSCALL_DEFINE` does in the file
//! that owns the call); `um-bin` assembles the table at boot. The native arch's generated
//! number table maps names to numbers, so a name the arch lacks (`open` on arm64) is simply not
//! installed. An unregistered number is `ENOSYS` and one log line naming it, once per name.
//!
//! The table checks itself: [`SyscallTable::register`] panics on a name that neither arch's
//! Linux table has (a misspelling) or that is registered twice, and keeps every
//! [`Registration`] (name, the registering file, a [`Status`]) whatever the native arch, so
//! `um-bin`'s unit tests check the full registration against both arches' tables and render
//! `docs/syscalls.md` from it.
//!
//! With `UM_SYSCALL_PROFILE` set in `linux`'s environment, [`dispatch`] also counts every
//! served call and the wall time its handler took, per number ([`Profile`]), and
//! [`SyscallTable::profile_report`] logs the totals when the kernel shuts down: a measurement
//! aid (issue 22) that costs one relaxed load per call when off.

use crate::arch::{Regs, syscalls};
use crate::engine::GuestThread;
use crate::kernel::Kernel;
use crate::task::{ExitStatus, Task};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use um_mm::Mm;
use um_uapi::{Errno, SysResult};

/// What the run loop does after a syscall returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Write the return value and resume the guest.
    Return,
    /// The registers were replaced wholesale (execve, rt_sigreturn): resume without writing a
    /// return value.
    Jump,
    /// This thread ends (exit).
    ExitThread(i32),
    /// The whole thread group ends (exit_group, fatal signal).
    ExitGroup(ExitStatus),
}

/// Everything a syscall handler gets.
pub struct SyscallCtx<'a> {
    pub kernel: &'a Arc<Kernel>,
    pub task: &'a Arc<Task>,
    /// The calling guest thread's engine state (registers, FP state, its stub).
    pub thread: &'a mut GuestThread,
    pub action: Action,
}

/// A syscall handler: the six raw argument registers in, a value or an errno out.
pub type Handler = fn(&mut SyscallCtx<'_>, [u64; 6]) -> SysResult<u64>;

/// How much of a syscall its handler does, as `docs/syscalls.md` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Linux's behaviour, as far as the gates and LTP know.
    Implemented,
    /// Works for what programs use; the text says what is missing.
    Partial(&'static str),
    /// Answers `ENOSYS` on purpose, as a Linux kernel configured without the feature does; the
    /// text says why. (The handler exists so the call is not logged as unimplemented.)
    Enosys(&'static str),
}

/// One `register` call: what `docs/syscalls.md` and the table test are made of.
#[derive(Clone, Copy, Debug)]
pub struct Registration {
    /// The Linux name (`"openat"`).
    pub name: &'static str,
    pub handler: Handler,
    /// The source file that registered it (`fs/src/sys/open.rs`), from `#[track_caller]`.
    pub file: &'static str,
    pub status: Status,
}

impl Registration {
    /// Marks the handler as partial: `missing` says what it does not do.
    pub fn partial(&mut self, missing: &'static str) -> &mut Self {
        self.status = Status::Partial(missing);
        self
    }

    /// Marks the handler as answering `ENOSYS` on purpose: `why` says why.
    pub fn enosys(&mut self, why: &'static str) -> &mut Self {
        self.status = Status::Enosys(why);
        self
    }
}

/// Whether Linux has a syscall called `name` on any arch this kernel runs (x86_64, arm64).
pub fn known_name(name: &str) -> bool {
    um_arch_x86::syscalls::number(name).is_some() || um_arch_arm64::syscalls::number(name).is_some()
}

/// The table, indexed by native syscall number.
pub struct SyscallTable {
    entries: Vec<Option<(&'static str, Handler)>>,
    registrations: Vec<Registration>,
    reported: Mutex<HashSet<u32>>,
    /// Per-number call counts and handler time, when `UM_SYSCALL_PROFILE` is set.
    profile: Option<Profile>,
}

/// Calls served and nanoseconds spent in their handlers, per syscall number (the engine's
/// handoff is not included: the difference to a guest-side timing is the trap's cost).
pub struct Profile {
    calls: Vec<AtomicU64>,
    nanos: Vec<AtomicU64>,
}

impl Profile {
    fn new(n: usize) -> Profile {
        Profile {
            calls: (0..n).map(|_| AtomicU64::new(0)).collect(),
            nanos: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn add(&self, nr: usize, ns: u64) {
        if let (Some(c), Some(t)) = (self.calls.get(nr), self.nanos.get(nr)) {
            c.fetch_add(1, Ordering::Relaxed);
            t.fetch_add(ns, Ordering::Relaxed);
        }
    }
}

impl Default for SyscallTable {
    fn default() -> Self {
        let n = syscalls::MAX_NR as usize + 1;
        SyscallTable {
            entries: vec![None; n],
            registrations: Vec::new(),
            reported: Mutex::default(),
            profile: std::env::var_os("UM_SYSCALL_PROFILE")
                .filter(|v| !v.is_empty())
                .map(|_| Profile::new(n)),
        }
    }
}

impl SyscallTable {
    /// Installs `h` for the syscall named `name` if the native arch has it (`open` does not
    /// exist on arm64: recorded, not installed), as [`Status::Implemented`]; the returned
    /// registration can say otherwise (`.partial(..)`, `.enosys(..)`).
    ///
    /// # Panics
    /// If neither arch's Linux table has `name` (a misspelling would otherwise be a silent
    /// `ENOSYS`), or `name` is already registered (the second would silently win). Both are
    /// bugs in this kernel that the first boot and `um-bin`'s unit tests catch.
    #[track_caller]
    pub fn register(&mut self, name: &'static str, h: Handler) -> &mut Registration {
        let file = std::panic::Location::caller().file();
        assert!(
            known_name(name),
            "{file}: register({name:?}): no such syscall in Linux's x86_64 or arm64 table"
        );
        if let Some(prev) = self.registrations.iter().find(|r| r.name == name) {
            panic!(
                "{file}: register({name:?}): already registered by {}",
                prev.file
            );
        }
        if let Some(nr) = syscalls::number(name) {
            self.entries[nr as usize] = Some((name, h));
        }
        self.registrations.push(Registration {
            name,
            handler: h,
            file,
            status: Status::Implemented,
        });
        self.registrations.last_mut().expect("just pushed")
    }

    /// Every registration in order, including names the native arch lacks.
    pub fn registrations(&self) -> &[Registration] {
        &self.registrations
    }

    /// The handler for `nr`, if any.
    pub fn get(&self, nr: u64) -> Option<(&'static str, Handler)> {
        usize::try_from(nr)
            .ok()
            .and_then(|i| self.entries.get(i).copied().flatten())
    }

    /// Number of installed handlers.
    pub fn len(&self) -> usize {
        self.entries.iter().filter(|e| e.is_some()).count()
    }

    /// Whether nothing is installed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Logs the [`Profile`] (if on): one line per syscall that was called, the most time
    /// first, with calls, total and mean handler time.
    pub fn profile_report(&self) {
        let Some(p) = &self.profile else { return };
        let mut rows: Vec<(u64, u64, usize)> = (0..p.calls.len())
            .map(|i| {
                (
                    p.nanos[i].load(Ordering::Relaxed),
                    p.calls[i].load(Ordering::Relaxed),
                    i,
                )
            })
            .filter(|r| r.1 > 0)
            .collect();
        rows.sort_unstable_by(|a, b| b.cmp(a));
        for (ns, calls, nr) in rows {
            let name = syscalls::name(nr as u32).unwrap_or("?");
            log::info!(
                "syscall profile: {name} calls={calls} total_us={} mean_ns={}",
                ns / 1000,
                ns / calls
            );
        }
    }

    /// Logs an unimplemented syscall, once per number.
    fn report(&self, nr: u64, task: &Task) {
        let n = nr as u32;
        let first = crate::task::lock(&self.reported).insert(n);
        if first {
            let name = syscalls::name(n).unwrap_or("?");
            let comm = String::from_utf8_lossy(&crate::task::lock(&task.process.comm)).into_owned();
            log::warn!(
                "unimplemented syscall {name} (nr {nr}) called by pid {} ({comm})",
                task.tid
            );
        }
    }
}

impl SyscallCtx<'_> {
    /// The calling thread's registers.
    pub fn regs(&mut self) -> &mut Regs {
        &mut self.thread.regs
    }

    /// The address space of the calling thread.
    pub fn mm(&self) -> Arc<Mutex<Mm>> {
        self.task.mm()
    }

    /// copy_from_user of `len` bytes.
    pub fn read_bytes(&self, addr: u64, len: usize) -> SysResult<Vec<u8>> {
        let mut buf = vec![0u8; len];
        lock_mm(&self.mm()).read_bytes(addr, &mut buf)?;
        Ok(buf)
    }

    /// copy_to_user.
    pub fn write_bytes(&self, addr: u64, data: &[u8]) -> SysResult<()> {
        lock_mm(&self.mm()).write_bytes(addr, data)
    }

    /// A NUL-terminated string from the guest, at most `max` bytes.
    pub fn read_cstr(&self, addr: u64, max: usize) -> SysResult<Vec<u8>> {
        lock_mm(&self.mm()).read_cstr(addr, max)
    }

    /// A path argument (`PATH_MAX` = 4096 including the NUL).
    pub fn read_path(&self, addr: u64) -> SysResult<Vec<u8>> {
        let p = self.read_cstr(addr, 4096)?;
        if p.is_empty() {
            return Err(Errno::ENOENT);
        }
        Ok(p)
    }

    /// Reads a u64 from the guest.
    pub fn read_u64(&self, addr: u64) -> SysResult<u64> {
        let b = self.read_bytes(addr, 8)?;
        Ok(u64::from_le_bytes(b.try_into().map_err(|_| Errno::EFAULT)?))
    }

    /// Writes a u64 to the guest.
    pub fn write_u64(&self, addr: u64, v: u64) -> SysResult<()> {
        self.write_bytes(addr, &v.to_le_bytes())
    }

    /// Writes a u32 to the guest.
    pub fn write_u32(&self, addr: u64, v: u32) -> SysResult<()> {
        self.write_bytes(addr, &v.to_le_bytes())
    }
}

/// Locks an address space.
pub fn lock_mm(m: &Arc<Mutex<Mm>>) -> MutexGuard<'_, Mm> {
    crate::task::lock(m)
}

/// Runs the syscall in the thread's registers for `task`: sets the return register unless
/// the handler says otherwise, and returns what the run loop must do next.
pub fn dispatch(kernel: &Arc<Kernel>, task: &Arc<Task>, thread: &mut GuestThread) -> Action {
    let nr = thread.regs.syscall_nr();
    let args = thread.regs.syscall_args();
    let Some((name, handler)) = kernel.syscalls.get(nr) else {
        kernel.syscalls.report(nr, task);
        thread.regs.set_return(Errno::ENOSYS.to_return());
        return Action::Return;
    };
    let cur = &task.cur_syscall;
    for (slot, v) in cur[1..]
        .iter()
        .zip(args.iter().chain(&[thread.regs.sp(), thread.regs.pc()]))
    {
        slot.store(*v, Ordering::Relaxed);
    }
    cur[0].store(nr.wrapping_add(1), Ordering::Release);
    let mut ctx = SyscallCtx {
        kernel,
        task,
        thread,
        action: Action::Return,
    };
    let r = match &kernel.syscalls.profile {
        None => handler(&mut ctx, args),
        Some(p) => {
            let t0 = Instant::now();
            let r = handler(&mut ctx, args);
            p.add(nr as usize, t0.elapsed().as_nanos() as u64);
            r
        }
    };
    cur[0].store(0, Ordering::Release);
    let action = ctx.action;
    if log::log_enabled!(log::Level::Trace) {
        log::trace!(
            "pid {} {name}({:#x}, {:#x}, {:#x}) = {r:?}",
            task.tid,
            args[0],
            args[1],
            args[2]
        );
    }
    if action == Action::Return {
        thread.regs.set_return(match r {
            Ok(v) => v,
            Err(e) => e.to_return(),
        });
    }
    action
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nop(_: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult<u64> {
        Ok(0)
    }

    #[test]
    fn register_records_the_caller_and_installs_native_names() {
        let mut t = SyscallTable::default();
        t.register("openat", nop);
        t.register("open", nop).partial("x");
        let r = t.registrations();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].file, file!());
        assert_eq!(r[0].status, Status::Implemented);
        assert_eq!(r[1].status, Status::Partial("x"));
        let nr = syscalls::number("openat").expect("every arch has openat");
        assert_eq!(t.get(u64::from(nr)).map(|e| e.0), Some("openat"));
        // `open` is installed only where the native table has it (x86_64, not arm64).
        assert_eq!(t.len(), 1 + usize::from(syscalls::number("open").is_some()));
    }

    #[test]
    #[should_panic(expected = "no such syscall")]
    fn register_refuses_a_misspelt_name() {
        SyscallTable::default().register("opnat", nop);
    }

    #[test]
    #[should_panic(expected = "already registered")]
    fn register_refuses_a_second_registration() {
        let mut t = SyscallTable::default();
        t.register("read", nop);
        t.register("read", nop);
    }
}
