//! The kernel object: what every subsystem shares (physical memory, the page cache, the task
//! table, the syscall table, the stub environment), created once at boot by `um-bin`.

use crate::syscall::SyscallTable;
use crate::task::TaskTable;
use crate::task::{Process, Task};
use std::sync::{Arc, Mutex};
use um_mm::{FrameAllocator, Layout, PageCache};
use um_os_linux::physmem::PhysMem;
use um_os_linux::stub::StubImage;

/// Which engine runs guest code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// ptrace, syscalls intercepted as the mode says.
    Ptrace(crate::engine::ptrace::Intercept),
}

/// `uname` strings.
#[derive(Clone, Debug)]
pub struct Uts {
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
    pub domainname: String,
}

/// Where and how stub processes are made.
pub struct StubEnv {
    pub image: StubImage,
    /// Base address of the stub region in every stub process (= guest TASK_SIZE).
    pub base: u64,
    /// Host user VA bits.
    pub va_bits: u32,
}

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
    /// AT_HWCAP for guests.
    pub hwcap: u64,
    /// Registers of a fresh stub, the template for exec'd threads (segments, flags).
    pub exec_template: std::sync::OnceLock<crate::arch::Regs>,
    /// Run when `linux` ends (terminal restore and the like).
    pub shutdown_hooks: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
    /// Run when a guest thread exits (robust futexes, clear_child_tid), on its host thread.
    pub thread_exit_hooks: Mutex<Vec<Box<dyn Fn(&Arc<Task>) + Send + Sync>>>,
    /// Run when a process's last thread is gone (timers, ...).
    pub process_exit_hooks: Mutex<Vec<Box<dyn Fn(&Arc<Process>) + Send + Sync>>>,
}
