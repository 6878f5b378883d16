//! clone, clone3, fork, vfork (Linux `kernel/fork.c`).
//!
//! A child that shares the address space (CLONE_VM: threads, vfork, posix_spawn's clone)
//! runs as a new host thread of the same stub process; any other child gets a stub process of
//! its own and a copy-on-write copy of the address space. Either way a new kernel host thread
//! serves it ([`crate::run::spawn`]).
//!
//! The child's numbers come from [`crate::pidns::alloc`] in the namespace it enters (a new
//! one with `CLONE_NEWPID`); the caller gets the number it sees ([`crate::pidns`]).

use crate::run::{self, Start};
use crate::syscall::{SyscallCtx, SyscallTable, lock_mm};
use crate::task::{Process, Task, lock};
use crate::wait::wait_event;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use um_uapi::abi::sched::CloneFlags;
use um_uapi::{Errno, SysResult};

/// The arguments of a clone, in clone3's form.
pub struct CloneArgs {
    pub flags: u64,
    pub exit_signal: u64,
    pub stack: u64,
    pub parent_tid: u64,
    pub child_tid: u64,
    pub tls: u64,
    /// Where `CLONE_PIDFD` stores the new pidfd (clone: `parent_tid`; clone3: its own field).
    pub pidfd: u64,
}

/// Creates a task as `clone` says and starts it; returns its tid.
pub fn do_clone(c: &mut SyscallCtx<'_>, a: CloneArgs) -> SysResult {
    do_clone_into(c, a, None)
}

/// [`do_clone`], with clone3's `CLONE_INTO_CGROUP` descriptor (`cgroup`) for the fork hooks.
pub fn do_clone_into(c: &mut SyscallCtx<'_>, a: CloneArgs, cgroup: Option<u64>) -> SysResult {
    let f = CloneFlags::from_bits_truncate(a.flags);
    // Linux copy_process checks, in its order.
    if f.contains(CloneFlags::NEWNS | CloneFlags::FS)
        || f.contains(CloneFlags::NEWUSER | CloneFlags::FS)
    {
        return Err(Errno::EINVAL);
    }
    if f.contains(CloneFlags::THREAD) && !f.contains(CloneFlags::SIGHAND) {
        return Err(Errno::EINVAL);
    }
    if f.contains(CloneFlags::SIGHAND) && !f.contains(CloneFlags::VM) {
        return Err(Errno::EINVAL);
    }
    // A namespace's init (or the global one) may not make siblings (SIGNAL_UNKILLABLE).
    if f.contains(CloneFlags::PARENT)
        && (c.task.process.pid == 1 || crate::pidns::is_ns_init(&c.task.process))
    {
        return Err(Errno::EINVAL);
    }
    // A thread stays in its process's pid namespace: not with CLONE_NEWPID, nor after
    // unshare(CLONE_NEWPID) or setns changed the namespace for children.
    if f.contains(CloneFlags::THREAD)
        && (f.intersects(CloneFlags::NEWUSER | CloneFlags::NEWPID)
            || !Arc::ptr_eq(
                &lock(&c.task.process.pid_ns_children),
                c.task.process.pids.ns(),
            ))
    {
        return Err(Errno::EINVAL);
    }
    let namespaces = CloneFlags::NEWNS
        | CloneFlags::NEWPID
        | CloneFlags::NEWNET
        | CloneFlags::NEWUSER
        | CloneFlags::NEWUTS
        | CloneFlags::NEWIPC
        | CloneFlags::NEWCGROUP
        | CloneFlags::NEWTIME;
    // A new user namespace needs no privilege (copy_creds, create_user_ns); it is made
    // first, and the child, which has every capability in it, owns the other new ones.
    // Without one, every new namespace needs CAP_SYS_ADMIN in the caller's user namespace
    // (kernel/nsproxy.c copy_namespaces).
    if f.intersects(namespaces - CloneFlags::NEWUSER)
        && !f.contains(CloneFlags::NEWUSER)
        && !c.task.process.capable_own(crate::timens::CAP_SYS_ADMIN)
    {
        return Err(Errno::EPERM);
    }
    if f.intersects(
        namespaces
            - CloneFlags::NEWUSER
            - CloneFlags::NEWNS
            - CloneFlags::NEWPID
            - CloneFlags::NEWTIME
            - CloneFlags::NEWNET
            - CloneFlags::NEWUTS
            - CloneFlags::NEWIPC
            - CloneFlags::NEWCGROUP,
    ) {
        return Err(Errno::EPERM);
    }
    // Network, UTS, IPC, mount and cgroup namespaces are per process here (crate::netns,
    // crate::utsns, crate::ipcns, crate::mntns, crate::cgroupns), so a thread cannot have its
    // own (Linux allows it).
    if f.contains(CloneFlags::THREAD)
        && f.intersects(
            CloneFlags::NEWNET
                | CloneFlags::NEWUTS
                | CloneFlags::NEWIPC
                | CloneFlags::NEWNS
                | CloneFlags::NEWCGROUP,
        )
    {
        return Err(Errno::EINVAL);
    }
    if a.exit_signal > 64 {
        return Err(Errno::EINVAL);
    }
    // CLONE_PIDFD (kernel_clone, copy_process): not for threads or with CLONE_DETACHED, and
    // not into the same word as CLONE_PARENT_SETTID.
    if f.contains(CloneFlags::PIDFD)
        && (f.intersects(CloneFlags::THREAD | CloneFlags::DETACHED)
            || f.contains(CloneFlags::PARENT_SETTID) && a.pidfd == a.parent_tid)
    {
        return Err(Errno::EINVAL);
    }
    let k = c.kernel;
    let parent_task = c.task.clone();
    let pp = &parent_task.process;
    let new_user = if f.contains(CloneFlags::NEWUSER) {
        Some(crate::userns::create(pp)?)
    } else {
        None
    };
    let owner = new_user.clone().unwrap_or_else(|| crate::userns::of(pp));
    // The child's pid namespace: the process's own for a thread, else its namespace for
    // children, or a new one below that with CLONE_NEWPID (copy_pid_ns).
    let ns = if f.contains(CloneFlags::THREAD) {
        pp.pids.ns().clone()
    } else {
        let nsc = lock(&pp.pid_ns_children).clone();
        if f.contains(CloneFlags::NEWPID) {
            crate::pidns::PidNs::new_child_owned(&nsc, owner.clone())?
        } else {
            nsc
        }
    };
    let mut pids = PidGuard {
        pid: crate::pidns::alloc(&ns)?,
        armed: true,
    };
    // What the caller sees (clone's return value, CLONE_PARENT_SETTID) and what the child
    // sees of itself (CLONE_CHILD_SETTID).
    let vnr = pids.pid().nr_in(parent_task.pids.ns());
    let own = pids.pid().own();

    // The child's registers: the parent's at this syscall, returning 0, on its own stack.
    let mut regs = c.thread.regs;
    regs.set_return(0);
    if a.stack != 0 {
        regs.set_sp(a.stack);
    }
    if f.contains(CloneFlags::SETTLS) {
        regs.set_tls(a.tls);
    }
    let fp = c.thread.get_fpregs().map_err(|_| Errno::EAGAIN)?;

    let (task, start) = if f.contains(CloneFlags::THREAD) {
        let (host_tid, seed) = c.thread.spawn_thread().map_err(|e| {
            log::warn!("clone: cannot create a stub thread: {e}");
            Errno::EAGAIN
        })?;
        let mask = *lock(&parent_task.sigmask);
        let t = Task::new_in(pids.pid().clone(), pp.clone(), mask);
        (
            t,
            Start::Thread {
                seed,
                host_tid,
                regs,
                fp,
            },
        )
    } else {
        let mm = if f.contains(CloneFlags::VM) {
            c.mm()
        } else {
            // dup_mmap: the parent's pages are write-protected in the host before the mm
            // lock goes and before the child runs (Linux flushes the TLB before dup_mmap
            // returns): otherwise the parent's other threads, still running, would keep
            // writing through their writable mappings into frames the child now shares, and
            // a thread faulting on a page already protected would not wait for the rest.
            let parent_mm = c.mm();
            let mut pm = lock_mm(&parent_mm);
            let mut child_mm = pm.fork()?;
            if c.thread.ordered_apply() {
                let ops = pm.take_host_ops();
                let gather = pm.take_gathered();
                if let Err(e) = c.thread.apply_now(&ops, gather) {
                    log::warn!("fork: cannot write-protect the parent's pages: {e}");
                    return Err(Errno::EAGAIN);
                }
            }
            // Only now, with the parent's pages read-only in the host and its mm lock still
            // held: the pages this copies must be the fork's snapshot, as the child's
            // untouched pages are; copied before the write-protect, a parent thread's later
            // write could reach those and not these.
            prefault_child(&mut child_mm, &regs);
            drop(pm);
            child_mm.into_shared()
        };
        let files = if f.contains(CloneFlags::FILES) {
            pp.files()
        } else {
            Arc::new(Mutex::new(lock(&pp.files()).clone()))
        };
        let fs = lock(&pp.fs).clone();
        // CLONE_NEWNS: the copy is made before the child exists, so a failure leaves nothing.
        let new_mntns = if f.contains(CloneFlags::NEWNS) {
            Some(crate::mntns::copy_of(pp, owner.clone())?)
        } else {
            None
        };
        let child = Arc::new(Process::new_in(pids.pid().clone(), Some(pp), mm, files, fs));
        *lock(&child.exe) = lock(&pp.exe).clone();
        *lock(&child.arg_range) = *lock(&pp.arg_range);
        *lock(&child.auxv) = lock(&pp.auxv).clone();
        // CLONE_NEWUSER: the child lives in the new user namespace, with every capability
        // there, before its other new namespaces are made (they take it as owner).
        if let Some(ns) = new_user {
            crate::userns::enter(&child, ns);
        }
        // Time namespaces: a new one with CLONE_NEWTIME; the child enters its parent's
        // namespace for children unless it shares the address space.
        crate::timens::on_fork(
            &child,
            f.contains(CloneFlags::NEWTIME),
            f.contains(CloneFlags::VM),
        );
        // Network namespaces: CLONE_NEWNET puts the child in a new one at once.
        if f.contains(CloneFlags::NEWNET) {
            crate::netns::on_fork(&child);
        }
        // UTS namespaces: CLONE_NEWUTS gives the child a copy of its parent's.
        if f.contains(CloneFlags::NEWUTS) {
            crate::utsns::on_fork(k, &child);
        }
        // IPC namespaces: CLONE_NEWIPC gives the child a new, empty one.
        if f.contains(CloneFlags::NEWIPC) {
            crate::ipcns::on_fork(&child);
        }
        // Mount namespaces: CLONE_NEWNS gives the child a copy of its parent's.
        if let Some(ns) = new_mntns {
            *lock(&child.mntns) = ns;
        }
        child
            .exit_signal
            .store(a.exit_signal as u32, Ordering::Relaxed);
        if f.contains(CloneFlags::PARENT) {
            if let Some(gp) = lock(&pp.parent).upgrade() {
                child.ppid.store(gp.pid, Ordering::Relaxed);
                *lock(&child.parent) = Arc::downgrade(&gp);
            }
        }
        let mask = *lock(&parent_task.sigmask);
        let t = Task::new_in(pids.pid().clone(), child.clone(), mask);
        let start = if f.contains(CloneFlags::VM) {
            let (host_tid, seed) = c.thread.spawn_thread().map_err(|_| Errno::EAGAIN)?;
            Start::Thread {
                seed,
                host_tid,
                regs,
                fp,
            }
        } else {
            Start::Fork { regs, fp }
        };
        (t, start)
    };
    // kernel/fork.c copy_process: the creator's current timer slack becomes both the
    // child's current and default slack.
    let slack = parent_task.timer_slack_ns.load(Ordering::Relaxed);
    task.timer_slack_ns.store(slack, Ordering::Relaxed);
    task.default_timer_slack_ns.store(slack, Ordering::Relaxed);
    let notsc = parent_task.tsc_sigsegv.load(Ordering::Relaxed);
    task.tsc_sigsegv.store(notsc, Ordering::Relaxed);
    // seccomp mode and filters (copy_seccomp), now that the child is in its thread list.
    crate::seccomp::on_clone(&parent_task, &task);
    crate::sys::sched::on_clone(&parent_task, &task);
    // block/blk-ioc.c `__copy_io`: a set I/O priority is copied to the new thread.
    let ioprio = parent_task.ioprio.load(Ordering::Relaxed);
    task.ioprio.store(ioprio, Ordering::Relaxed);
    if f.contains(CloneFlags::CHILD_CLEARTID) {
        *lock(&task.clear_child_tid) = a.child_tid;
    }
    if f.contains(CloneFlags::CHILD_SETTID) {
        lock_mm(&task.mm()).write_bytes(a.child_tid, &own.to_le_bytes())?;
    }
    if f.contains(CloneFlags::PARENT_SETTID) {
        c.write_u32(a.parent_tid, vnr)?;
    }
    // cgroup membership (`Kernel::fork_hooks`, um_cgroup): the child joins its creator's
    // group or the CLONE_INTO_CGROUP one; a refusal (EBADF, EACCES ...) fails the clone.
    for hook in lock(&k.fork_hooks).iter() {
        hook(pp, &task.process, f.contains(CloneFlags::THREAD), cgroup)?;
    }
    // CLONE_NEWCGROUP: a namespace rooted at the group the child just joined (the
    // CLONE_INTO_CGROUP one if given, as cgroup_post_fork re-roots it).
    if f.contains(CloneFlags::NEWCGROUP) {
        crate::cgroupns::on_fork(&task.process);
    }
    if f.contains(CloneFlags::PIDFD) {
        // pidfd_prepare: O_RDWR | O_CLOEXEC in the parent, its number stored as an int.
        let pf = crate::vfs::OpenFile::new(
            Box::new(crate::pidfd::PidFd::new(task.process.clone())),
            0o2 | 0o2000000,
            None,
        );
        let fd = lock(&pp.files()).install(pf, true, 0)?;
        if let Err(e) = c.write_u32(a.pidfd, fd) {
            let _ = lock(&pp.files()).remove(u64::from(fd));
            return Err(e);
        }
    }
    k.tasks.insert(task.clone());
    // From here the task table owns the numbers (freed by `TaskTable::remove`).
    pids.armed = false;
    if !f.contains(CloneFlags::THREAD) {
        crate::pidns::on_fork(&task.process);
        let parent_of_child = lock(&task.process.parent).upgrade();
        if let Some(par) = parent_of_child {
            lock(&par.children).push(task.process.clone());
        }
    }
    let child_proc = task.process.clone();
    let new_process = !f.contains(CloneFlags::THREAD);
    // A traced creator's tracer may trace the child too ([`crate::ptrace::on_clone`]).
    let trace_event = crate::ptrace::on_clone(&parent_task, &task, a.flags, a.exit_signal);
    run::spawn(k, task, start).map_err(|_| Errno::EAGAIN)?;
    if let Some(ev) = trace_event {
        crate::ptrace::event_stop(k, c.task, c.thread, ev, u64::from(vnr));
    }
    if new_process {
        // An inherited finite RLIMIT_CPU applies to the child's own CPU time.
        crate::cputime::watch_rlimit_cpu(k, &child_proc);
    }
    if f.contains(CloneFlags::VFORK) {
        // The parent sleeps until the child execs or exits (Linux `wait_for_vfork_done`);
        // a signal does not end that wait, as the child borrows the parent's memory.
        while !child_proc.vfork_done.load(Ordering::Acquire) {
            let deadline = std::time::Instant::now() + std::time::Duration::from_millis(100);
            let _ = wait_event(c.task, &[&child_proc.vfork_wait], Some(deadline), || {
                child_proc.vfork_done.load(Ordering::Acquire).then_some(())
            });
        }
        if c.task.ptrace.traced() {
            crate::ptrace::event_stop(
                k,
                c.task,
                c.thread,
                um_uapi::abi::ptrace::PTRACE_EVENT_VFORK_DONE,
                u64::from(vnr),
            );
        }
    }
    Ok(u64::from(vnr))
}

/// Frees the child's numbers if clone fails before the task is registered.
struct PidGuard {
    pid: Arc<crate::pidns::Pid>,
    armed: bool,
}

impl PidGuard {
    fn pid(&self) -> &Arc<crate::pidns::Pid> {
        &self.pid
    }
}

impl Drop for PidGuard {
    fn drop(&mut self) {
        if self.armed {
            crate::pidns::free(&self.pid);
        }
    }
}

fn clone(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    // x86_64: clone(flags, stack, parent_tid, child_tid, tls); arm64 (CLONE_BACKWARDS):
    // clone(flags, stack, parent_tid, tls, child_tid).
    let (child_tid, tls) = if cfg!(target_arch = "aarch64") {
        (a[4], a[3])
    } else {
        (a[3], a[4])
    };
    do_clone(
        c,
        CloneArgs {
            flags: a[0] & !0xff,
            exit_signal: a[0] & 0xff,
            stack: a[1],
            parent_tid: a[2],
            child_tid,
            tls,
            pidfd: a[2],
        },
    )
}

fn clone3(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let size = a[1] as usize;
    if !(64..=4096).contains(&size) {
        return Err(Errno::EINVAL);
    }
    let b = c.read_bytes(a[0], size)?;
    let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    // Fields past what we know must be zero (kernel/fork.c copy_clone_args_from_user).
    if b.len() > 88 && b[88..].iter().any(|&x| x != 0) {
        return Err(Errno::E2BIG);
    }
    let (flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls) =
        (w(0), w(1), w(2), w(3), w(4), w(5), w(6), w(7));
    // The low byte is clone's exit signal, not flags; clone3 reuses only 0x80 there, as
    // CLONE_NEWTIME.
    if (stack == 0) != (stack_size == 0) || flags & 0x7f != 0 {
        return Err(Errno::EINVAL);
    }
    let sp = if stack != 0 { stack + stack_size } else { 0 };
    // CLONE_INTO_CGROUP: clone_args.cgroup, present from CLONE_ARGS_SIZE_VER2 (88 bytes) on
    // and an int (kernel/fork.c copy_clone_args_from_user).
    let cgroup = if flags & CloneFlags::INTO_CGROUP.bits() != 0 {
        if size < 88 || w(10) > i32::MAX as u64 {
            return Err(Errno::EINVAL);
        }
        Some(w(10))
    } else {
        None
    };
    do_clone_into(
        c,
        CloneArgs {
            flags,
            exit_signal,
            stack: sp,
            parent_tid,
            child_tid,
            tls,
            pidfd,
        },
        cgroup,
    )
}

fn fork(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    do_clone(
        c,
        CloneArgs {
            flags: 0,
            exit_signal: 17,
            stack: 0,
            parent_tid: 0,
            child_tid: 0,
            tls: 0,
            pidfd: 0,
        },
    )
}

fn vfork(c: &mut SyscallCtx<'_>, _: [u64; 6]) -> SysResult {
    let flags = (CloneFlags::VM | CloneFlags::VFORK).bits();
    do_clone(
        c,
        CloneArgs {
            flags,
            exit_signal: 17,
            stack: 0,
            parent_tid: 0,
            child_tid: 0,
            tls: 0,
            pidfd: 0,
        },
    )
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("clone", clone);
    t.register("clone3", clone3);
    t.register("fork", fork);
    t.register("vfork", vfork);
}

/// Maps a fork child's first touches with its first resume, one host-op batch instead of a
/// fault (and, in the seccomp engine, a mapper hop) each: the text around the instruction it
/// returns to; its stack page and its thread block (the TLS pointer's page: the C library's
/// fork writes the child's tid there at once, musl `_Fork`, glibc `fork`), copied now as its
/// first write would copy them, each with the present pages around it (the library's data
/// next to the thread block, the caller frames above sp). Linux's child inherits the parent's
/// present PTEs (kernel/fork.c `dup_mmap`, mm/memory.c `copy_page_range`) and takes none of
/// those faults; the copies are the ones its first writes would make. Best effort: a page
/// that cannot be resolved is left to fault as before (a bad sp or TLS pointer is only a
/// guess not taken).
fn prefault_child(mm: &mut um_mm::Mm, regs: &crate::arch::Regs) {
    use um_mm::Access;
    let pc = regs.pc();
    if mm.pte(pc).is_some() && mm.handle_fault(pc, Access::Read).is_ok() {
        mm.map_present_around(pc, run::PRESENT_AROUND_PAGES);
    }
    let sp = regs.sp();
    let tls = regs.tls();
    // The page below sp too when the red zone under it crosses into it (x86_64: 128 bytes).
    // Only copy-on-write pages: a write to a shared page would dirty it, which the child may
    // never do.
    for a in [sp, sp.saturating_sub(128), tls] {
        let cow = mm
            .pte(a)
            .is_some_and(|p| p.flags.contains(um_mm::PteFlags::COW));
        if a != 0 && cow && mm.handle_fault(a, Access::Write).is_ok() {
            mm.map_present_around(a, run::PRESENT_AROUND_PAGES);
        }
    }
}
