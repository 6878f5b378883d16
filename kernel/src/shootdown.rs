//! The host side of [`um_mm`]'s `unmap_mapping_range` for other processes: a TLB shootdown's
//! equivalent.
//!
//! When a hole punch or truncate removes pages from an address space other than the caller's
//! (`um_mm`'s reverse map), the PTEs are gone and `HostOp::Unmap`s are queued on that `Mm`, but
//! its stub process keeps the old host mapping until one of its threads takes the queue on
//! its way back to the guest (`run::serve`). A thread asleep in the kernel takes it before it
//! runs guest code again, so nothing needs doing for it. A thread running guest code right now
//! could go on reading the old bytes: [`shootdown`] interrupts it with the kick signal (the
//! engines turn it into `Event::Interrupted`, after which `serve` takes the queue), and waits
//! until the queue was taken or no thread of that address space is in the guest any more, at
//! most [`WAIT`] (a stopped or traced stub cannot hold the caller up for longer; its threads
//! are not in the guest then anyway).
//!
//! In the seccomp engine none of that is needed: the shootdown takes the queue itself and has
//! the stub's mapper thread run it (`engine::HostMapper`), which no guest code can delay.
//!
//! The caller's own address space is left alone: the calling thread takes the queue itself when
//! its system call returns. Neighbours: `um_mm::set_shootdown` (installed by [`install`] at
//! boot), [`crate::signal`] (the kick), [`crate::run::serve`] (where queues are taken).

use crate::kernel::Kernel;
use crate::syscall::lock_mm;
use crate::task::Task;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use um_mm::Mm;

/// The longest a shootdown waits for another process's threads to leave the guest.
const WAIT: Duration = Duration::from_millis(200);

/// Makes `k`'s address spaces answer `um_mm`'s shootdowns.
pub fn install(k: &Arc<Kernel>) {
    let weak = Arc::downgrade(k);
    um_mm::set_shootdown(move |mm| {
        if let Some(k) = weak.upgrade() {
            shootdown(&k, mm);
        }
    });
}

/// Interrupts the threads of `mm` that run guest code and waits until one of them took its
/// queued host ops (see the module docs). Called with no lock held.
pub fn shootdown(k: &Kernel, mm: &Arc<Mutex<Mm>>) {
    let me = crate::current::current();
    if me.as_ref().is_some_and(|c| Arc::ptr_eq(&c.mm(), mm)) {
        return;
    }
    let tasks: Vec<Arc<Task>> = k
        .tasks
        .all()
        .into_iter()
        .filter(|t| Arc::ptr_eq(&t.mm(), mm))
        .collect();
    if tasks.is_empty() {
        return;
    }
    // The seccomp engine: the stub's mapper makes the changes, whatever its guest threads do
    // (a guest can block the kick signal in its host thread: rt_sigreturn and rt_sigprocmask
    // are its to call). Under the mm lock, so that the ops reach the mapper's ring in the
    // mm's order (every taker applies under the lock: `GuestThread::ordered_apply`).
    if let Some(m) = tasks
        .iter()
        .find_map(|t| crate::task::lock(&t.host_mapper).clone())
    {
        let mut g = lock_mm(mm);
        if !g.host_ops_pending() {
            return;
        }
        let ops = g.take_host_ops();
        let gather = g.take_gathered();
        // False: the stub is gone, and its host mappings with it.
        m.apply(&ops, gather);
        return;
    }
    let taken = {
        let g = lock_mm(mm);
        if !g.host_ops_pending() {
            return;
        }
        g.host_ops_taken()
    };
    let deadline = Instant::now() + WAIT;
    let mut idle_checks = 0;
    let mut last_kick: Option<Instant> = None;
    loop {
        {
            let g = lock_mm(mm);
            if !g.host_ops_pending() || g.host_ops_taken() != taken {
                return;
            }
        }
        let running: Vec<&Arc<Task>> = tasks
            .iter()
            .filter(|t| t.in_guest.load(Ordering::Acquire))
            .collect();
        if running.is_empty() {
            // Twice, a little apart: a thread that took its queue just before ours was added
            // may be about to enter the guest (it sets `in_guest` after taking the queue).
            idle_checks += 1;
            if idle_checks >= 2 {
                return;
            }
        } else {
            idle_checks = 0;
            if last_kick.is_none_or(|t| t.elapsed() >= Duration::from_millis(1)) {
                for t in running {
                    kick_guest(t);
                }
                last_kick = Some(Instant::now());
            }
        }
        if Instant::now() >= deadline {
            log::debug!("shootdown: an address space's threads did not leave the guest");
            return;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// The host half of `Task::kick`: interrupts the thread's guest code if it runs (without
/// waking it from a kernel sleep, which a shootdown must not disturb).
fn kick_guest(t: &Task) {
    let (pid, tid) = (
        t.host_pid.load(Ordering::Acquire),
        t.host_tid.load(Ordering::Acquire),
    );
    if pid > 0 && tid > 0 && t.in_guest.load(Ordering::Acquire) {
        let _ = um_os_linux::ptrace::tgkill(pid, tid, crate::signal::KICK_SIGNAL);
    }
}
