//! The current task of this host thread (Linux `current`).
//!
//! Each guest thread is served by one host thread for its whole life (the 1:1 model), so
//! "the task whose syscall is being served" is a per-host-thread fact: [`crate::run::serve`]
//! records it once with [`set_current`], and code that gets no caller through its interface
//! (the procfs `self` and `thread-self` links, reached through `Inode::readlink` and
//! `Inode::lookup`) asks [`current`]. Threads that serve no guest (main, stub-spawner, tests)
//! have none.

use crate::task::Task;
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    static CURRENT: RefCell<Option<Arc<Task>>> = const { RefCell::new(None) };
}

/// Records the task this host thread serves (None when it stops serving one).
pub fn set_current(task: Option<Arc<Task>>) {
    CURRENT.with(|c| *c.borrow_mut() = task);
}

/// The task this host thread serves, if any.
pub fn current() -> Option<Arc<Task>> {
    CURRENT.with(|c| c.borrow().clone())
}
