//! Tasks (guest threads) and processes (thread groups), and the kernel-wide task table.
//!
//! Each guest thread is served by one kernel host thread for its whole life (DESIGN.md, the
//! 1:1 model): the host thread runs [`crate::run::serve`], which owns the engine state of that
//! guest thread. Shared process state (address space, descriptors, cwd, credentials, signal
//! actions) sits behind fine-grained locks in [`Process`].

use crate::signal::SigQueue;
use crate::vfs::{Dentry, FdTable};
use crate::wait::{WaitQueue, Waker};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use um_mm::Mm;

/// Locks a mutex, recovering from poisoning: a panicking kernel thread is a bug that has been
/// logged; the data is still the best we have.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// User and group credentials (Linux `struct cred`, the parts we keep).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Creds {
    pub uid: u32,
    pub euid: u32,
    pub suid: u32,
    pub fsuid: u32,
    pub gid: u32,
    pub egid: u32,
    pub sgid: u32,
    pub fsgid: u32,
}

/// Capability sets, securebits and no_new_privs (the rest of Linux's `struct cred`, and the
/// task's `PFA_NO_NEW_PRIVS`; capabilities(7)). Kept beside [`Creds`], per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    pub inheritable: u64,
    pub permitted: u64,
    pub effective: u64,
    /// The bounding set.
    pub bset: u64,
    /// The ambient set (`cap_ambient`): kept over exec of an unprivileged program; always
    /// within permitted and inheritable.
    pub ambient: u64,
    pub securebits: u32,
    pub no_new_privs: bool,
}

pub use um_uapi::abi::capability::CAP_LAST_CAP;
/// Every capability.
pub const CAP_FULL: u64 = (1 << (CAP_LAST_CAP + 1)) - 1;

impl Caps {
    /// What init starts with: everything permitted and effective, nothing inheritable
    /// (kernel/cred.c `init_cred`).
    pub const fn init() -> Caps {
        Caps {
            inheritable: 0,
            permitted: CAP_FULL,
            effective: CAP_FULL,
            bset: CAP_FULL,
            ambient: 0,
            securebits: 0,
            no_new_privs: false,
        }
    }

    /// Whether capability `cap` is in the effective set (`ns_capable`).
    pub fn has(&self, cap: u32) -> bool {
        cap <= CAP_LAST_CAP && self.effective & (1 << cap) != 0
    }
}

/// The kernel's view of a `struct sigaction` (recorded; delivery comes with signals support).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigAction {
    pub handler: u64,
    pub flags: u64,
    pub restorer: u64,
    pub mask: u64,
}

/// Root and working directory (Linux `struct fs_struct`).
#[derive(Clone)]
pub struct FsContext {
    pub root: Arc<Dentry>,
    pub cwd: Arc<Dentry>,
    pub umask: u32,
}

/// How a process ended, in `wait` status form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// exit(code).
    Exited(i32),
    /// Killed by a signal.
    Signaled(i32),
    /// Killed by a signal whose default action dumped core (the core bit, 0x80, of the wait
    /// status; `CLD_DUMPED`).
    Dumped(i32),
}

impl ExitStatus {
    /// The `wstatus` word of wait4.
    pub fn wstatus(self) -> i32 {
        match self {
            ExitStatus::Exited(c) => (c & 0xff) << 8,
            ExitStatus::Signaled(s) => s & 0x7f,
            ExitStatus::Dumped(s) => (s & 0x7f) | 0x80,
        }
    }
}

/// Resource limits (RLIMIT_*), soft and hard.
pub type Rlimits = [(u64, u64); 16];

/// Job-control state of a process (Linux `signal_struct` stop flags).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JobState {
    #[default]
    Running,
    /// Stopped by this signal; `reported` once the parent's wait saw it (WUNTRACED).
    Stopped { sig: u32, reported: bool },
    /// Continued, not yet reported to a WCONTINUED wait.
    Continued,
}

/// A thread group.
pub struct Process {
    /// The kernel-wide id (level 0 of `pids`): every internal table uses it; the guest sees
    /// `pids`' number in its own namespace ([`crate::pidns`]).
    pub pid: u32,
    /// The thread-group leader's numbers in each pid namespace (Linux `task_tgid`).
    pub pids: Arc<crate::pidns::Pid>,
    /// The pid namespace the process's next children enter (`nsproxy->pid_ns_for_children`):
    /// its own, unless unshare(CLONE_NEWPID) or setns changed it.
    pub pid_ns_children: Mutex<Arc<crate::pidns::PidNs>>,
    /// A number no other process ever has (pids are reused): `/proc/PID` inode numbers
    /// differ between two processes that had the same pid, as Linux's do.
    pub serial: u64,
    /// Global ids of ppid, pgid and sid (translated when they leave the kernel).
    pub ppid: AtomicU32,
    pub pgid: AtomicU32,
    pub sid: AtomicU32,
    pub parent: Mutex<Weak<Process>>,
    pub children: Mutex<Vec<Arc<Process>>>,
    pub threads: Mutex<Vec<Weak<Task>>>,
    pub mm: Mutex<Arc<Mutex<Mm>>>,
    pub files: Mutex<Arc<Mutex<FdTable>>>,
    pub fs: Mutex<FsContext>,
    pub creds: Mutex<Creds>,
    /// Capabilities; lock after `creds` when both are needed.
    pub caps: Mutex<Caps>,
    /// Supplementary groups.
    pub groups: Mutex<Vec<u32>>,
    pub sigactions: Mutex<[SigAction; 64]>,
    pub shared_pending: Mutex<SigQueue>,
    pub rlimits: Mutex<Rlimits>,
    pub comm: Mutex<Vec<u8>>,
    /// The program it runs (`mm->exe_file`); dropped at exit.
    pub exe: Mutex<Option<crate::vfs::ExeFile>>,
    /// Set once the whole group has exited (a zombie until reaped).
    pub exit: Mutex<Option<ExitStatus>>,
    /// Job control.
    pub job: Mutex<JobState>,
    /// Woken when this process's children change state (wait4), and when it is continued.
    pub child_wait: WaitQueue,
    /// Signal sent to the parent when this process ends (SIGCHLD, or clone's exit signal).
    pub exit_signal: AtomicU32,
    /// Arguments and environment ranges in guest memory, for /proc/PID/cmdline and environ.
    pub arg_range: Mutex<(u64, u64, u64, u64)>,
    /// The auxiliary vector exec gave the program, AT_NULL included (`mm->saved_auxv`, for
    /// `/proc/PID/auxv`, which debuggers read for AT_ENTRY and the vDSO's address).
    pub auxv: Mutex<Vec<(u64, u64)>>,
    /// Set by exec: the stub still holds the old program's mappings; the run loop removes
    /// them before the new program runs.
    pub exec_unmap: std::sync::atomic::AtomicBool,
    /// When the process started, for /proc and times.
    pub start: std::time::Instant,
    /// Exited and not yet reaped by its parent.
    pub zombie: AtomicBool,
    /// The parent has been told about the last SIGCONT.
    pub cont_notified: AtomicBool,
    /// personality(2) flags (inherited; only recorded).
    pub personality: AtomicU32,
    /// A vfork parent waits for this: set at the child's exec or exit.
    pub vfork_done: AtomicBool,
    pub vfork_wait: WaitQueue,
    /// Has exec'd since fork (the inverse of Linux's PF_FORKNOEXEC): setpgid(2) by the parent
    /// then fails with EACCES.
    pub did_exec: AtomicBool,
    /// PR_SET_CHILD_SUBREAPER: orphaned descendants are reparented here rather than to init
    /// (kernel/exit.c `find_new_reaper`). Not inherited.
    pub child_subreaper: AtomicBool,
    /// Some ancestor is (or was) a subreaper, so an exit must look for one (Linux
    /// `signal_struct.has_child_subreaper`, inherited at fork).
    pub has_child_subreaper: AtomicBool,
    /// `/proc/PID/coredump_filter` (Linux `mm->flags` MMF_DUMP_FILTER bits): which kinds of
    /// memory a core dump contains; inherited at fork and kept across exec. Default 0x33.
    pub coredump_filter: AtomicU32,
    /// The largest resident size of the address spaces the process has left behind (exec,
    /// exit), in KiB (Linux `signal_struct.maxrss`); getrusage adds the current one.
    pub maxrss_kb: AtomicU64,
    /// The largest `maxrss_kb` of the reaped children and their descendants (`cmaxrss`).
    pub cmaxrss_kb: AtomicU64,
    /// CPU times of exited threads and reaped children ([`crate::cputime`]).
    pub cpu: crate::cputime::ProcCpu,
    /// Time namespaces: the process's and its children's ([`crate::timens`]); copied at
    /// fork, where `timens::on_fork` may move the child.
    pub timens: Mutex<crate::timens::TimeNsPair>,
    /// The network namespace ([`crate::netns`], Linux `nsproxy->net_ns`): the parent's at
    /// fork, where `netns::on_fork` may give the child a new one.
    pub netns: Mutex<Arc<crate::netns::NetNs>>,
    /// The UTS namespace ([`crate::utsns`], Linux `nsproxy->uts_ns`): the parent's at fork,
    /// where `utsns::on_fork` may give the child a copy.
    pub utsns: Mutex<Arc<crate::utsns::UtsNs>>,
    /// The IPC namespace ([`crate::ipcns`], Linux `nsproxy->ipc_ns`): the parent's at fork,
    /// where `ipcns::on_fork` may give the child a new one.
    pub ipcns: Mutex<Arc<crate::ipcns::IpcNs>>,
    /// The cgroup namespace ([`crate::cgroupns`], Linux `nsproxy->cgroup_ns`): the parent's
    /// at fork, where `cgroupns::on_fork` may give the child a new one.
    pub cgroupns: Mutex<Arc<crate::cgroupns::CgroupNs>>,
    /// The mount namespace ([`crate::mntns`], Linux `nsproxy->mnt_ns`): the parent's at
    /// fork, where `mntns::on_fork` may give the child a copy.
    pub mntns: Mutex<Arc<crate::mntns::MntNs>>,
    /// The user namespace of the credentials ([`crate::userns`], Linux `cred->user_ns`):
    /// `caps` hold there; the parent's at fork.
    pub userns: Mutex<Arc<crate::userns::UserNs>>,
    /// The threads this process traces ([`crate::ptrace`]).
    pub tracees: Mutex<Vec<Arc<Task>>>,
}

impl Process {
    /// Whether the process holds capability `cap` in the initial user namespace (Linux
    /// `capable()`): its effective set there, none inside another user namespace
    /// ([`crate::userns::ns_capable`]).
    pub fn capable(&self, cap: u32) -> bool {
        crate::userns::ns_capable(self, crate::userns::root(), cap)
    }

    /// Whether the process holds `cap` in its own user namespace (`ns_capable(
    /// current_user_ns(), ..)`): what setuid(2), chown(2) and the like check.
    pub fn capable_own(&self, cap: u32) -> bool {
        lock(&self.caps).has(cap)
    }

    /// Whether the process holds `cap` over its network namespace
    /// (`ns_capable(net->user_ns, ..)`): what raw sockets, low ports and rtnetlink changes
    /// check.
    pub fn net_capable(&self, cap: u32) -> bool {
        let owner = lock(&self.netns).owner().clone();
        crate::userns::ns_capable(self, &owner, cap)
    }

    /// Whether the process holds `cap` in user namespace `ns` (`ns_capable`).
    pub fn ns_capable(&self, ns: &Arc<crate::userns::UserNs>, cap: u32) -> bool {
        crate::userns::ns_capable(self, ns, cap)
    }

    /// The process's largest resident size so far in KiB: what it left behind and the current
    /// address space's high-water mark (getrusage's `ru_maxrss`).
    pub fn maxrss_now_kb(&self) -> u64 {
        let mm = lock(&self.mm).clone();
        let m = lock(&mm);
        let kb = m.hiwater_pages() as u64 * m.granule().size() / 1024;
        self.maxrss_kb.load(Ordering::Relaxed).max(kb)
    }

    /// Keeps the current address space's high-water mark before exec or exit drops it
    /// (Linux `setmax_mm_hiwater_rss` into `signal_struct.maxrss`).
    pub fn note_maxrss(&self) {
        let v = self.maxrss_now_kb();
        self.maxrss_kb.fetch_max(v, Ordering::Relaxed);
    }
}

impl Process {
    /// A new process with the given identity and resources; `parent` None only for init.
    /// Its pid is `pid` of the initial pid namespace only (see [`Process::new_in`]).
    pub fn new(
        pid: u32,
        parent: Option<&Arc<Process>>,
        mm: Arc<Mutex<Mm>>,
        files: Arc<Mutex<FdTable>>,
        fs: FsContext,
    ) -> Process {
        Process::new_in(crate::pidns::Pid::root_only(pid), parent, mm, files, fs)
    }

    /// A new process whose leader has the numbers `pids` (allocated by
    /// [`crate::pidns::alloc`]); it starts with its own namespace as the one for children.
    pub fn new_in(
        pids: Arc<crate::pidns::Pid>,
        parent: Option<&Arc<Process>>,
        mm: Arc<Mutex<Mm>>,
        files: Arc<Mutex<FdTable>>,
        fs: FsContext,
    ) -> Process {
        let pid = pids.global();
        let (ppid, pgid, sid, creds, acts, rl, comm) = match parent {
            Some(p) => (
                p.pid,
                p.pgid.load(Ordering::Relaxed),
                p.sid.load(Ordering::Relaxed),
                *lock(&p.creds),
                *lock(&p.sigactions),
                *lock(&p.rlimits),
                lock(&p.comm).clone(),
            ),
            None => (
                0,
                pid,
                pid,
                Creds::default(),
                [SigAction::default(); 64],
                default_rlimits(),
                b"init".to_vec(),
            ),
        };
        Process {
            pid,
            serial: next_serial(),
            pid_ns_children: Mutex::new(pids.ns().clone()),
            pids,
            ppid: AtomicU32::new(ppid),
            pgid: AtomicU32::new(pgid),
            sid: AtomicU32::new(sid),
            parent: Mutex::new(parent.map(Arc::downgrade).unwrap_or_default()),
            children: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
            mm: Mutex::new(mm),
            files: Mutex::new(files),
            fs: Mutex::new(fs),
            creds: Mutex::new(creds),
            caps: Mutex::new(parent.map(|p| *lock(&p.caps)).unwrap_or(Caps::init())),
            child_subreaper: AtomicBool::new(false),
            has_child_subreaper: AtomicBool::new(parent.is_some_and(|p| {
                p.child_subreaper.load(Ordering::Relaxed)
                    || p.has_child_subreaper.load(Ordering::Relaxed)
            })),
            groups: Mutex::new(parent.map(|p| lock(&p.groups).clone()).unwrap_or_default()),
            sigactions: Mutex::new(acts),
            shared_pending: Mutex::new(SigQueue::default()),
            rlimits: Mutex::new(rl),
            comm: Mutex::new(comm),
            exe: Mutex::new(None),
            exit: Mutex::new(None),
            job: Mutex::new(JobState::Running),
            child_wait: WaitQueue::new(),
            exit_signal: AtomicU32::new(17),
            arg_range: Mutex::new((0, 0, 0, 0)),
            auxv: Mutex::new(Vec::new()),
            exec_unmap: Default::default(),
            start: std::time::Instant::now(),
            zombie: AtomicBool::new(false),
            cont_notified: AtomicBool::new(false),
            personality: AtomicU32::new(
                parent
                    .map(|p| p.personality.load(Ordering::Relaxed))
                    .unwrap_or(0),
            ),
            vfork_done: AtomicBool::new(false),
            vfork_wait: WaitQueue::new(),
            did_exec: AtomicBool::new(false),
            maxrss_kb: AtomicU64::new(0),
            cmaxrss_kb: AtomicU64::new(0),
            cpu: Default::default(),
            timens: Mutex::new(parent.map(|p| lock(&p.timens).clone()).unwrap_or_default()),
            netns: Mutex::new(
                parent.map_or_else(|| crate::netns::root().clone(), |p| lock(&p.netns).clone()),
            ),
            utsns: Mutex::new(
                parent.map_or_else(|| crate::utsns::root().clone(), |p| lock(&p.utsns).clone()),
            ),
            ipcns: Mutex::new(
                parent.map_or_else(|| crate::ipcns::root().clone(), |p| lock(&p.ipcns).clone()),
            ),
            cgroupns: Mutex::new(parent.map_or_else(
                || crate::cgroupns::root().clone(),
                |p| lock(&p.cgroupns).clone(),
            )),
            userns: Mutex::new(parent.map_or_else(
                || crate::userns::root().clone(),
                |p| lock(&p.userns).clone(),
            )),
            mntns: Mutex::new(
                parent.map_or_else(|| crate::mntns::root().clone(), |p| lock(&p.mntns).clone()),
            ),
            tracees: Mutex::new(Vec::new()),
            coredump_filter: AtomicU32::new(
                parent
                    .map(|p| p.coredump_filter.load(Ordering::Relaxed))
                    .unwrap_or(0x33),
            ),
        }
    }

    /// The threads that have not exited.
    pub fn live_threads(&self, _k: &crate::kernel::Kernel) -> Vec<Arc<Task>> {
        lock(&self.threads)
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|t| !t.exited.load(Ordering::Acquire))
            .collect()
    }

    /// Leaves a job-control stop (SIGCONT or SIGKILL): wakes the stopped threads.
    pub fn resume_from_stop(&self) {
        let mut j = lock(&self.job);
        if let JobState::Stopped { .. } = *j {
            *j = JobState::Continued;
            self.cont_notified.store(false, Ordering::Release);
            drop(j);
            crate::ptrace::on_continue(self);
            self.child_wait.wake_all();
            for t in lock(&self.threads).iter().filter_map(Weak::upgrade) {
                t.waker.wake();
            }
        }
    }

    /// The descriptor table (shared between threads, and with CLONE_FILES children).
    pub fn files(&self) -> Arc<Mutex<FdTable>> {
        lock(&self.files).clone()
    }
}

/// A guest thread.
pub struct Task {
    /// The kernel-wide id (level 0 of `pids`).
    pub tid: u32,
    /// The thread's numbers in each pid namespace (Linux `task_pid`).
    pub pids: Arc<crate::pidns::Pid>,
    /// Like [`Process::serial`], for the thread's `/proc/PID/task/TID` inodes.
    pub serial: u64,
    pub process: Arc<Process>,
    pub sigmask: Mutex<u64>,
    /// Signals pending for this thread only.
    pub pending: Mutex<SigQueue>,
    /// The mask to restore after a sigsuspend-style call once a handler ran.
    pub saved_mask: Mutex<Option<u64>>,
    /// The mask before rt_sigtimedwait unblocked the signals it waits for (Linux
    /// `real_blocked`): a signal blocked here is never discarded as ignored.
    pub real_blocked: Mutex<u64>,
    /// sigaltstack: (sp, size, flags).
    pub altstack: Mutex<(u64, u64, i32)>,
    pub clear_child_tid: Mutex<u64>,
    /// robust_list head and length.
    pub robust_list: Mutex<(u64, u64)>,
    /// What the thread sleeps on in the kernel.
    pub waker: Arc<Waker>,
    /// Host process and thread id of the stub thread that runs this guest thread (0 until
    /// they exist), for interrupting it.
    pub host_pid: AtomicI32,
    pub host_tid: AtomicI32,
    /// The stub's mapper (seccomp engine), so that a shootdown can unmap pages in the host
    /// without the thread's help (`crate::shootdown`).
    pub host_mapper: Mutex<Option<crate::engine::HostMapper>>,
    /// Whether the thread is (about to be) running guest code, so a kick must interrupt it.
    pub in_guest: AtomicBool,
    /// The syscall the thread is in, for `/proc/PID/syscall` (fs/proc/base.c
    /// `proc_pid_syscall`): the number plus one (0: not in a syscall), the six argument
    /// registers, then sp and pc as at entry. Relaxed stores on every call (no lock on the hot
    /// path); a reader racing the thread may see parts of two calls, which is harmless for a
    /// debugging file.
    pub cur_syscall: [AtomicU64; 9],
    /// Set when the thread has exited.
    pub exited: AtomicBool,
    /// Set when another thread's exec ends this one (Linux `de_thread`).
    pub zap: AtomicBool,
    /// PR_SET_PDEATHSIG.
    pub pdeath_signal: AtomicU32,
    /// PR_SET_TIMERSLACK: the current and the default timer slack in ns (Linux
    /// `task_struct.timer_slack_ns`, `default_timer_slack_ns`); a clone copies the creator's
    /// current value into both.
    pub timer_slack_ns: AtomicU64,
    pub default_timer_slack_ns: AtomicU64,
    /// prctl(PR_SET_TSC, PR_TSC_SIGSEGV): rdtsc faults in this thread (Linux TIF_NOTSC,
    /// arch/x86/kernel/process.c); copied to the threads and processes it creates and kept
    /// across execve. The engine makes the host thread agree before the guest runs.
    pub tsc_sigsegv: AtomicBool,
    /// CPU-time accounting ([`crate::cputime`]).
    pub cpu: crate::cputime::TaskCpu,
    /// Traced or not, and the ptrace-stop ([`crate::ptrace`]).
    pub ptrace: crate::ptrace::PtraceSlot,
    /// seccomp mode and filters ([`crate::seccomp`]).
    pub seccomp: crate::seccomp::SeccompSlot,
    /// Scheduling policy and priority ([`crate::sys::sched`]).
    pub sched: Mutex<crate::sys::sched::SchedParams>,
    /// The I/O priority ioprio_set gave this thread (Linux `io_context->ioprio`; 0, class
    /// NONE, until set), [`crate::sys::ioprio`].
    pub ioprio: AtomicU32,
}

/// The timer slack of init's first thread (include/linux/init_task.h: 50 us).
pub const DEFAULT_TIMER_SLACK_NS: u64 = 50_000;

impl Task {
    /// A new thread of `process` with signal mask `sigmask`, id `tid` of the initial pid
    /// namespace only; the process's leader reuses the process's numbers.
    pub fn new(tid: u32, process: Arc<Process>, sigmask: u64) -> Arc<Task> {
        let pids = if tid == process.pid {
            process.pids.clone()
        } else {
            crate::pidns::Pid::root_only(tid)
        };
        Task::new_in(pids, process, sigmask)
    }

    /// A new thread with the numbers `pids` (see [`crate::pidns::alloc`]).
    pub fn new_in(pids: Arc<crate::pidns::Pid>, process: Arc<Process>, sigmask: u64) -> Arc<Task> {
        let t = Arc::new(Task {
            tid: pids.global(),
            serial: next_serial(),
            pids,
            process,
            sigmask: Mutex::new(sigmask),
            pending: Mutex::new(SigQueue::default()),
            saved_mask: Mutex::new(None),
            real_blocked: Mutex::new(0),
            altstack: Mutex::new((0, 0, 2)),
            clear_child_tid: Mutex::new(0),
            robust_list: Mutex::new((0, 0)),
            waker: Arc::new(Waker::default()),
            host_pid: AtomicI32::new(0),
            host_tid: AtomicI32::new(0),
            host_mapper: Mutex::new(None),
            in_guest: AtomicBool::new(false),
            cur_syscall: Default::default(),
            exited: AtomicBool::new(false),
            zap: AtomicBool::new(false),
            pdeath_signal: AtomicU32::new(0),
            timer_slack_ns: AtomicU64::new(DEFAULT_TIMER_SLACK_NS),
            default_timer_slack_ns: AtomicU64::new(DEFAULT_TIMER_SLACK_NS),
            tsc_sigsegv: AtomicBool::new(false),
            cpu: Default::default(),
            ptrace: Default::default(),
            seccomp: Default::default(),
            sched: Default::default(),
            ioprio: AtomicU32::new(0),
        });
        lock(&t.process.threads).push(Arc::downgrade(&t));
        t
    }

    /// The address space this thread runs in.
    pub fn mm(&self) -> Arc<Mutex<Mm>> {
        lock(&self.process.mm).clone()
    }
}

/// A number never handed out before (for [`Process::serial`], [`Task::serial`]).
fn next_serial() -> u64 {
    static SERIAL: AtomicU64 = AtomicU64::new(1);
    SERIAL.fetch_add(1, Ordering::Relaxed)
}

/// Default resource limits, as a fresh Linux boot gives init.
pub fn default_rlimits() -> Rlimits {
    const INF: u64 = u64::MAX;
    let mut r = [(INF, INF); 16];
    r[3] = (8 << 20, INF); // RLIMIT_STACK
    r[4] = (0, INF); // RLIMIT_CORE
    r[6] = (4096, 4096); // RLIMIT_NPROC
    r[7] = (1024, 4096); // RLIMIT_NOFILE
    r[8] = (8 << 20, 8 << 20); // RLIMIT_MEMLOCK
    r[11] = (4096, 4096); // RLIMIT_SIGPENDING
    r[12] = (819200, 819200); // RLIMIT_MSGQUEUE
    r[13] = (0, 0); // RLIMIT_NICE
    r[14] = (0, 0); // RLIMIT_RTPRIO
    r
}

/// All tasks, by their kernel-wide id; pid allocation is in [`crate::pidns`].
#[derive(Default)]
pub struct TaskTable {
    tasks: Mutex<BTreeMap<u32, Arc<Task>>>,
}

impl TaskTable {
    /// Allocates the next pid of the initial pid namespace (1 for init).
    pub fn alloc_pid(&self) -> u32 {
        crate::pidns::alloc_root()
    }

    /// Registers a task.
    pub fn insert(&self, t: Arc<Task>) {
        lock(&self.tasks).insert(t.tid, t);
    }

    /// Removes a task; its numbers become free (`release_task` -> `free_pid`).
    pub fn remove(&self, tid: u32) {
        let t = lock(&self.tasks).remove(&tid);
        if let Some(t) = t {
            crate::pidns::free(&t.pids);
        }
    }

    /// Looks up a task.
    pub fn get(&self, tid: u32) -> Option<Arc<Task>> {
        lock(&self.tasks).get(&tid).cloned()
    }

    /// Snapshot of all tasks.
    pub fn all(&self) -> Vec<Arc<Task>> {
        lock(&self.tasks).values().cloned().collect()
    }

    /// Snapshot of all processes (each once, by its pid).
    pub fn processes(&self) -> Vec<Arc<Process>> {
        let mut v: Vec<Arc<Process>> = Vec::new();
        for t in lock(&self.tasks).values() {
            if !v.iter().any(|p| Arc::ptr_eq(p, &t.process)) {
                v.push(t.process.clone());
            }
        }
        v
    }

    /// The process with (kernel-wide) id `pid`.
    pub fn process(&self, pid: u32) -> Option<Arc<Process>> {
        let tasks = lock(&self.tasks);
        if let Some(t) = tasks.get(&pid)
            && t.process.pid == pid
        {
            return Some(t.process.clone());
        }
        tasks
            .values()
            .find(|t| t.process.pid == pid)
            .map(|t| t.process.clone())
    }

    /// The task with number `nr` in pid namespace `ns` (`find_task_by_pid_ns`).
    pub fn find_task(&self, ns: &crate::pidns::PidNs, nr: u32) -> Option<Arc<Task>> {
        let g = ns.lookup(nr)?;
        self.get(g).filter(|t| t.pids.nr_in(ns) == nr)
    }

    /// The task that number `nr` names for `caller` (`find_task_by_vpid`).
    pub fn find_task_vpid(&self, caller: &Task, nr: u32) -> Option<Arc<Task>> {
        self.find_task(caller.pids.ns(), nr)
    }

    /// The process whose thread-group id is `nr` in `caller`'s namespace.
    pub fn find_process_vpid(&self, caller: &Task, nr: u32) -> Option<Arc<Process>> {
        let t = self.find_task_vpid(caller, nr)?;
        (t.process.pid == t.tid).then(|| t.process.clone())
    }

    /// The kernel-wide id that number `nr` stands for in `caller`'s namespace (a pid,
    /// process group or session id coming in), if any.
    pub fn global_of(&self, caller: &Task, nr: u32) -> Option<u32> {
        let ns = caller.pids.ns();
        if ns.is_root() {
            return Some(nr);
        }
        ns.lookup(nr)
    }

    /// What `caller` sees of kernel-wide id `global` (a pid, process group or session id
    /// going out, `pid_vnr`): its number there, 0 if it lies outside the namespace.
    pub fn vnr(&self, caller: &Task, global: u32) -> u32 {
        let ns = caller.pids.ns();
        if ns.is_root() {
            return global;
        }
        self.get(global).map_or(0, |t| t.pids.nr_in(ns))
    }
}
