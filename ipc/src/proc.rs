//! The IPC files of procfs: the limits in `/proc/sys/kernel` (ipc/ipc_sysctl.c: `shmmax`,
//! `shmall`, `shmmni`, `shm_rmid_forced`, `sem`, `msgmax`, `msgmnb`, `msgmni`; root may write
//! them) and the object lists `/proc/sysvipc/{shm,sem,msg}` (ipc/util.c `sysvipc_proc_show`).

use super::{IPCMNI, limits, msg, sem, shm};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use um_fs::procfs::{ProcFs, ProcInode};
use um_kernel::task::lock;
use um_kernel::wait::IoCtx;
use um_uapi::{Errno, SysResult};

/// The first number written (`proc_dointvec` and friends read one value).
fn parse<T: std::str::FromStr>(data: &[u8]) -> SysResult<T> {
    let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
    s.split_whitespace()
        .next()
        .ok_or(Errno::EINVAL)?
        .parse::<T>()
        .map_err(|_| Errno::EINVAL)
}

/// Writes are root's (the files are 0644, owned by root).
fn root_only(io: &IoCtx<'_>) -> SysResult<()> {
    if lock(&io.task.process.creds).euid != 0 {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// An `unsigned long` limit (`proc_doulongvec_minmax`).
fn ulong(fs: &Arc<ProcFs>, v: &'static AtomicU64) -> Arc<ProcInode> {
    ProcInode::file_rw(
        fs,
        move |_, _| Ok(format!("{}\n", v.load(Ordering::Relaxed)).into_bytes()),
        move |_, io, data| {
            root_only(io)?;
            v.store(parse::<u64>(data)?, Ordering::Relaxed);
            Ok(data.len())
        },
    )
}

/// An `int` limit in `0..=max` (`proc_dointvec_minmax`).
fn int(fs: &Arc<ProcFs>, v: &'static AtomicI32, max: i32) -> Arc<ProcInode> {
    ProcInode::file_rw(
        fs,
        move |_, _| Ok(format!("{}\n", v.load(Ordering::Relaxed)).into_bytes()),
        move |_, io, data| {
            root_only(io)?;
            let x = parse::<i32>(data)?;
            if !(0..=max).contains(&x) {
                return Err(Errno::EINVAL);
            }
            v.store(x, Ordering::Relaxed);
            Ok(data.len())
        },
    )
}

/// The entries of `/proc/sys/kernel` that belong to IPC.
pub fn sysctl_entries(fs: &Arc<ProcFs>) -> Vec<(&'static str, Arc<ProcInode>)> {
    let l = limits();
    let sem = ProcInode::file_rw(
        fs,
        |_, _| Ok(limits().sem_text().into_bytes()),
        |_, io, data| {
            root_only(io)?;
            let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
            limits().set_sem(s)?;
            Ok(data.len())
        },
    );
    vec![
        ("msgmax", int(fs, &l.msgmax, i32::MAX)),
        ("msgmnb", int(fs, &l.msgmnb, i32::MAX)),
        ("msgmni", int(fs, &l.msgmni, IPCMNI as i32)),
        ("sem", sem),
        ("shm_rmid_forced", ProcInode::text(fs, "0\n")),
        ("shmall", ulong(fs, &l.shmall)),
        ("shmmax", ulong(fs, &l.shmmax)),
        ("shmmni", int(fs, &l.shmmni, IPCMNI as i32)),
    ]
}

/// `/proc/sysvipc`.
pub fn sysvipc_dir(fs: &Arc<ProcFs>) -> Arc<ProcInode> {
    ProcInode::dir(
        fs,
        vec![
            (
                "msg",
                ProcInode::file(fs, |_, _| {
                    Ok(msg::lock_ns(&msg::table()).proc_text().into_bytes())
                }),
            ),
            (
                "sem",
                ProcInode::file(fs, |_, _| {
                    Ok(sem::lock_ns(&sem::table()).proc_text().into_bytes())
                }),
            ),
            (
                "shm",
                ProcInode::file(fs, |_, _| {
                    Ok(shm::lock_ns(&shm::table()).proc_text().into_bytes())
                }),
            ),
        ],
    )
}

/// Registers the IPC files with procfs (Linux `ipc_init_proc_interface`, `register_ipc_sysctl`).
pub fn register() {
    um_fs::procfs::registry::register_sysctl("sys/kernel", sysctl_entries);
    um_fs::procfs::registry::proc_create("", "sysvipc", sysvipc_dir);
}
