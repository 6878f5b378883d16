//! The kernel object: what every subsystem shares (physical memory, the page cache, the task
//! table, the syscall table, the stub environment), created once at boot by `um-bin`.

use crate::syscall::SyscallTable;
use crate::task::TaskTable;
use crate::task::{Process, Task};
use std::sync::{Arc, Mutex};
use um_mm::{FrameAllocator, Layout, PageCache};
use um_os_linux::physmem::PhysMem;
use um_os_linux::stub::StubImage;

/// The host memfd every stub maps, as the memory the frame allocator hands out (`um-mm` knows
/// only its [`um_mm::PhysMemory`] trait, so it makes no host call of its own). Boot and the
/// unit tests that build a [`Kernel`] wrap [`Kernel::phys`] in it.
pub struct HostPhys(pub Arc<PhysMem>);

impl um_mm::PhysMemory for HostPhys {
    fn size(&self) -> usize {
        self.0.size()
    }
    fn read(&self, off: usize, buf: &mut [u8]) {
        self.0.read(off, buf);
    }
    fn write(&self, off: usize, data: &[u8]) {
        self.0.write(off, data);
    }
    fn zero(&self, off: usize, len: usize) {
        self.0.zero(off, len);
    }
    fn copy(&self, src: usize, dst: usize, len: usize) {
        self.0.copy(src, dst, len);
    }
    fn cmpxchg_u32(&self, off: usize, old: u32, new: u32) -> u32 {
        self.0.cmpxchg_u32(off, old, new)
    }
}

/// Which engine runs guest code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// ptrace, syscalls intercepted as the mode says.
    Ptrace(crate::engine::ptrace::Intercept),
    /// seccomp filter and signal handler in the stub, futex handoff.
    Seccomp(crate::engine::seccomp::Tuning),
}

/// `uname` strings. The host and domain names can be changed (sethostname(2),
/// setdomainname(2), `/proc/sys/kernel/{hostname,domainname}`); the rest are fixed at boot.
#[derive(Debug)]
pub struct Uts {
    pub sysname: String,
    pub nodename: Mutex<String>,
    pub release: String,
    pub version: String,
    pub machine: String,
    pub domainname: Mutex<String>,
}

/// `__NEW_UTS_LEN`: the longest host or domain name.
pub const NEW_UTS_LEN: usize = 64;

/// Where and how stub processes are made.
pub struct StubEnv {
    pub image: StubImage,
    /// Base address of the stub region in every stub process (= guest TASK_SIZE).
    pub base: u64,
    /// Host user VA bits.
    pub va_bits: u32,
    /// The host's special mappings (vvar and vDSO pages) that stay mapped in every stub, above
    /// the stub region (see `um_kernel::arch::vdso`), if boot found them usable.
    pub keep: Option<(u64, u64)>,
}

impl StubEnv {
    /// What a new stub unmaps above its stub region: everything exec put there up to the last
    /// host page (`top - page`), except [`StubEnv::keep`]. Non-empty (start, len) ranges.
    pub fn unmap_above(&self, page: u64) -> Vec<(u64, u64)> {
        let start = self.base + um_os_linux::stub_layout::STUB_REGION;
        let end = (1u64 << self.va_bits) - page;
        let mut cuts = vec![(start, end)];
        if let Some((lo, hi)) = self.keep {
            if lo >= start && hi <= end && lo < hi {
                cuts = vec![(start, lo), (hi, end)];
            }
        }
        cuts.into_iter()
            .filter(|(a, b)| a < b)
            .map(|(a, b)| (a, b - a))
            .collect()
    }
}

/// A function run when `linux` ends.
pub type ShutdownHook = Box<dyn Fn() + Send + Sync>;
/// A function run when a guest thread exits.
pub type ThreadExitHook = Box<dyn Fn(&Arc<Task>) + Send + Sync>;
/// A function run when a process's last thread is gone.
pub type ProcessExitHook = Box<dyn Fn(&Arc<Process>) + Send + Sync>;
/// A function run when clone has made a task, before it is visible or runs (Linux
/// `cgroup_can_fork` + `cgroup_post_fork`): `(creator, child, thread, into_cgroup)`, where
/// `child` is the creator's own process for a thread and `into_cgroup` is clone3's
/// `CLONE_INTO_CGROUP` descriptor. An error fails the clone.
pub type ForkHook = Box<
    dyn Fn(&Arc<Process>, &Arc<Process>, bool, Option<u64>) -> um_uapi::SysResult<()> + Send + Sync,
>;

/// The kernel.
pub struct Kernel {
    pub phys: Arc<PhysMem>,
    pub frames: Arc<FrameAllocator>,
    pub page_cache: Arc<PageCache>,
    pub layout: Layout,
    pub stub: StubEnv,
    pub tasks: TaskTable,
    pub syscalls: SyscallTable,
    pub uts: Uts,
    pub engine: EngineKind,
    /// AT_HWCAP for guests (the host's, masked by the arch: `arch::native::hwcap`).
    pub hwcap: u64,
    /// AT_HWCAP2 for guests.
    pub hwcap2: u64,
    /// Fault-around window for sequential anonymous faults, in pages (`prefault=`; 0: off).
    pub prefault_pages: usize,
    /// Registers of a fresh stub, the template for exec'd threads (segments, flags).
    pub exec_template: std::sync::OnceLock<crate::arch::Regs>,
    /// Run when `linux` ends (terminal restore and the like).
    pub shutdown_hooks: Mutex<Vec<ShutdownHook>>,
    /// Run when a guest thread exits, on its host thread.
    pub thread_exit_hooks: Mutex<Vec<ThreadExitHook>>,
    /// Run when a process's last thread is gone.
    pub process_exit_hooks: Mutex<Vec<ProcessExitHook>>,
    /// Run by clone for every new task (cgroup membership: `um_cgroup`).
    pub fork_hooks: Mutex<Vec<ForkHook>>,
}
