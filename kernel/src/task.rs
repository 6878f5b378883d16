//! Tasks (guest threads) and processes (thread groups), and the kernel-wide task table.
//!
//! Each guest thread is served by one kernel host thread for its whole life (DESIGN.md, the
//! 1:1 model): the host thread runs [`crate::run::serve`], which owns the engine state of that
//! guest thread. Shared process state (address space, descriptors, cwd, credentials, signal
//! actions) sits behind fine-grained locks in [`Process`].

use crate::vfs::{Dentry, FdTable};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
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
}

impl ExitStatus {
    /// The `wstatus` word of wait4.
    pub fn wstatus(self) -> i32 {
        match self {
            ExitStatus::Exited(c) => (c & 0xff) << 8,
            ExitStatus::Signaled(s) => s & 0x7f,
        }
    }
}

/// Resource limits (RLIMIT_*), soft and hard.
pub type Rlimits = [(u64, u64); 16];

/// A thread group.
pub struct Process {
    pub pid: u32,
    pub ppid: AtomicU32,
    pub mm: Mutex<Arc<Mutex<Mm>>>,
    pub files: Mutex<FdTable>,
    pub fs: Mutex<FsContext>,
    pub creds: Mutex<Creds>,
    pub sigactions: Mutex<[SigAction; 64]>,
    pub rlimits: Mutex<Rlimits>,
    pub comm: Mutex<Vec<u8>>,
    pub exe: Mutex<Option<Arc<Dentry>>>,
    pub exit: Mutex<Option<ExitStatus>>,
    /// Arguments and environment ranges in guest memory, for /proc/PID/cmdline and environ.
    pub arg_range: Mutex<(u64, u64, u64, u64)>,
    /// Set by exec: the stub still holds the old program's mappings; the run loop removes
    /// them before the new program runs.
    pub exec_unmap: std::sync::atomic::AtomicBool,
}

/// A guest thread.
pub struct Task {
    pub tid: u32,
    pub process: Arc<Process>,
    pub sigmask: Mutex<u64>,
    pub clear_child_tid: Mutex<u64>,
    /// Host thread id of the stub thread that runs this guest thread (0 until it exists).
    pub host_tid: AtomicI32,
}

impl Task {
    /// The address space this thread runs in.
    pub fn mm(&self) -> Arc<Mutex<Mm>> {
        lock(&self.process.mm).clone()
    }
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

/// All tasks, by tid, and pid allocation.
#[derive(Default)]
pub struct TaskTable {
    tasks: Mutex<BTreeMap<u32, Arc<Task>>>,
    next: AtomicU32,
}

impl TaskTable {
    /// Allocates the next pid (1 for init).
    pub fn alloc_pid(&self) -> u32 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Registers a task.
    pub fn insert(&self, t: Arc<Task>) {
        lock(&self.tasks).insert(t.tid, t);
    }

    /// Removes a task.
    pub fn remove(&self, tid: u32) {
        lock(&self.tasks).remove(&tid);
    }

    /// Looks up a task.
    pub fn get(&self, tid: u32) -> Option<Arc<Task>> {
        lock(&self.tasks).get(&tid).cloned()
    }

    /// Snapshot of all tasks.
    pub fn all(&self) -> Vec<Arc<Task>> {
        lock(&self.tasks).values().cloned().collect()
    }
}
