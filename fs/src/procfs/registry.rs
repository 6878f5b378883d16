//! Entries that other subsystems add to procfs, so procfs does not import them (Linux
//! `proc_create`/`proc_mkdir` for `/proc` itself, `register_sysctl` for `/proc/sys/...`).
//!
//! A registration names a directory by its path below `/proc` (`""` is the root,
//! `"sys/kernel"` is `/proc/sys/kernel`) and gives a callback that builds the entries for one
//! procfs instance; the callback runs at every procfs mount, and the entries it makes generate
//! their content at open, as the fixed ones do. Registrations are made once at boot, before
//! init can mount procfs (`um-bin` calls each subsystem's init). The directories that take
//! registered entries are the ones whose builders ask for them ([`entries`],
//! [`insert_in_order`]): the root, `sys` and `sys/kernel` today, and sysfs's `block`, `dev/block`
//! and `class` ("sysfs", "sysfs/dev", "sysfs/class").
//!
//! Neighbours: the subsystem crates above `um-fs` (`um-ipc`: `/proc/sysvipc`, the IPC limits
//! in `/proc/sys/kernel`; `um-net`: `/proc/sys/net`, `/proc/net`, `/sys/class/net`).

use super::{DynDir, ProcFs, ProcInode};
use std::sync::{Arc, Mutex, OnceLock};
use um_kernel::task::lock;

/// Builds a table of named entries for one procfs instance.
pub type Table = Arc<dyn Fn(&Arc<ProcFs>) -> Vec<(&'static str, Arc<ProcInode>)> + Send + Sync>;

/// Every registration: the directory and its table builder, in registration order.
static REGISTRY: Mutex<Vec<(&'static str, Table)>> = Mutex::new(Vec::new());

/// Adds one entry `name` to the procfs directory `dir` (Linux `proc_create`, `proc_mkdir`):
/// `build` makes its inode (a file, or a directory of its own) for each procfs instance.
pub fn proc_create(
    dir: &'static str,
    name: &'static str,
    build: impl Fn(&Arc<ProcFs>) -> Arc<ProcInode> + Send + Sync + 'static,
) {
    register_sysctl(dir, move |fs| vec![(name, build(fs))]);
}

/// Adds a table of entries to the procfs directory `dir` (Linux `register_sysctl("kernel",
/// table)`, for `/proc/sys/...` directories; any directory that takes registrations works).
pub fn register_sysctl(
    dir: &'static str,
    table: impl Fn(&Arc<ProcFs>) -> Vec<(&'static str, Arc<ProcInode>)> + Send + Sync + 'static,
) {
    lock(&REGISTRY).push((dir, Arc::new(table)));
}

/// The registered entries of `dir` for the instance `fs`, in registration order; a name
/// registered twice is listed once (the first registration).
pub fn entries(fs: &Arc<ProcFs>, dir: &str) -> Vec<(&'static str, Arc<ProcInode>)> {
    // The builders run outside the lock: they may take other locks of their own.
    let tables: Vec<Table> = lock(&REGISTRY)
        .iter()
        .filter(|(d, _)| *d == dir)
        .map(|(_, t)| t.clone())
        .collect();
    let mut out: Vec<(&'static str, Arc<ProcInode>)> = Vec::new();
    for t in tables {
        for (name, inode) in t(fs) {
            if !out.iter().any(|(n, _)| *n == name) {
                out.push((name, inode));
            }
        }
    }
    out
}

/// Adds the registered entries of `dir` to the fixed entries `v` (sorted by name), each at its
/// place in name order, so a directory lists the same whichever crate made an entry.
pub fn insert_in_order(fs: &Arc<ProcFs>, dir: &str, v: &mut Vec<(&'static str, Arc<ProcInode>)>) {
    for (name, inode) in entries(fs, dir) {
        let at = v.iter().position(|(n, _)| *n > name).unwrap_or(v.len());
        v.insert(at, (name, inode));
    }
}

/// The source of `/proc/PID/cgroup` (`um-cgroup`'s `proc_cgroup_show`), set once at boot.
static PID_CGROUP: OnceLock<fn(u32) -> Vec<u8>> = OnceLock::new();

/// Sets what `/proc/PID/cgroup` shows for a process (the cgroup crate, at boot); a second call
/// is ignored.
pub fn register_pid_cgroup(f: fn(u32) -> Vec<u8>) {
    let _ = PID_CGROUP.set(f);
}

/// `/proc/PID/cgroup` of `pid`: the registered source's text, or the root group's v2 line
/// when no cgroup code was registered (unit tests).
pub fn pid_cgroup(pid: u32) -> Vec<u8> {
    PID_CGROUP
        .get()
        .map_or_else(|| b"0::/\n".to_vec(), |f| f(pid))
}

/// Computed entries of the `/proc` root besides the pid directories (the `/proc/<name>`
/// entries loadable modules create), in registration order.
static ROOT_DYN: Mutex<Vec<Arc<dyn DynDir>>> = Mutex::new(Vec::new());

/// Adds a source of computed `/proc` root entries, listed and searched at every readdir and
/// lookup of the root (after its fixed entries, before the pids).
pub fn register_root_dyn(d: Arc<dyn DynDir>) {
    lock(&ROOT_DYN).push(d);
}

/// The computed root entries now, for the instance `fs`.
pub fn root_dyn(fs: &Arc<ProcFs>) -> Vec<(Vec<u8>, Arc<ProcInode>)> {
    let dirs: Vec<Arc<dyn DynDir>> = lock(&ROOT_DYN).clone();
    dirs.iter().flat_map(|d| d.entries(fs)).collect()
}
