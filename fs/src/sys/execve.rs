//! execve and execveat (Linux `fs/exec.c`): reading the argument vectors, and what the engine
//! must do around [`crate::exec::do_execve`].

use crate::exec::do_execve_file;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use um_kernel::engine::GuestThread;
use um_kernel::syscall::{Action, SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::Dentry;
use um_uapi::{Errno, SysResult};

/// Reads a NULL-terminated array of string pointers (argv, envp) from the guest, with Linux's
/// limits (`MAX_ARG_STRLEN`, 32 pages per string; 2 MiB in all: a quarter of the default stack
/// limit).
fn read_strings(c: &SyscallCtx<'_>, mut addr: u64) -> SysResult<Vec<Vec<u8>>> {
    let mut v = Vec::new();
    if addr == 0 {
        return Ok(v);
    }
    let mut total = 0usize;
    let max_strlen = 32 * um_mm::page_size() as usize;
    loop {
        let p = c.read_u64(addr)?;
        if p == 0 {
            return Ok(v);
        }
        let s = c.read_cstr(p, max_strlen).map_err(|e| {
            if e == Errno::ENAMETOOLONG {
                Errno::E2BIG
            } else {
                e
            }
        })?;
        total += s.len() + 1 + 8;
        if total > 2 << 20 {
            return Err(Errno::E2BIG);
        }
        v.push(s);
        addr += 8;
    }
}

fn execve_common(
    c: &mut SyscallCtx<'_>,
    path: Vec<u8>,
    file: Option<Arc<Dentry>>,
    argv: u64,
    envp: u64,
) -> SysResult {
    let argv = read_strings(c, argv)?;
    let envp = read_strings(c, envp)?;
    let k = c.kernel.clone();
    let task = c.task.clone();
    let ex = do_execve_file(&k, &task, &path, file, argv, envp)?;
    // Other threads of this process end (Linux `de_thread`).
    for t in task.process.live_threads(&k) {
        if t.tid != task.tid {
            t.zap.store(true, Ordering::Release);
            t.kick();
        }
    }
    // A thread (or vfork child) shares its stub with others: the new program gets a stub
    // process of its own.
    if c.thread.shares_stub() {
        let fresh = GuestThread::new_process(&k).map_err(|e| {
            log::error!("execve: cannot start a stub process: {e}");
            Errno::ENOMEM
        })?;
        // The old host thread's CPU time stays the task's.
        um_kernel::cputime::move_host_thread(&task, fresh.pid(), fresh.tid());
        *c.thread = fresh;
        // The fresh stub has none of the old mappings: nothing to unmap.
        task.process.exec_unmap.store(false, Ordering::Release);
    }
    // A fresh FP state, as a new program gets (in the format of the thread's image).
    if let Ok(cur) = c.thread.get_fpregs() {
        let _ = c
            .thread
            .set_fpregs(&um_kernel::arch::native::signal::init_fp_image(&cur));
    }
    c.thread.regs = ex.regs;
    c.action = Action::Jump;
    // PTRACE_EVENT_EXEC (or a traced thread's SIGTRAP) with the new program's registers.
    um_kernel::ptrace::exec_event(&k, &task, c.thread);
    Ok(0)
}

fn execve(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let path = c.read_path(a[0])?;
    execve_common(c, path, None, a[1], a[2])
}

fn execveat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    use um_uapi::abi::fcntl::AT_EMPTY_PATH;
    use um_uapi::abi::fcntl::AT_SYMLINK_NOFOLLOW;
    if a[4] & !(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0 {
        return Err(Errno::EINVAL);
    }
    let rel = c.read_cstr(a[1], 4096)?;
    let fd = a[0] as i32;
    if rel.is_empty() && a[4] & AT_EMPTY_PATH != 0 {
        // The descriptor's own file, whatever has become of its name (fs/exec.c
        // `do_open_execat` opens the fd's path, not a name): a memfd, or the O_PATH fd of a
        // bind mount detached and unlinked since (crun's and runc's self re-exec). Its name
        // for the new program is "/dev/fd/N" (`alloc_bprm`).
        // AT_FDCWD names the working directory (EACCES, as any directory).
        let d = if fd == super::AT_FDCWD {
            lock(&c.task.process.fs).cwd.clone()
        } else {
            let f = lock(&c.task.process.files()).get(a[0] & 0xffff_ffff)?;
            f.dentry.clone().ok_or(Errno::EACCES)?
        };
        let name = format!("/dev/fd/{fd}").into_bytes();
        return execve_common(c, name, Some(d), a[2], a[3]);
    }
    let path = if rel.first() == Some(&b'/') {
        rel
    } else {
        // Name the directory by its path.
        let d = if fd == super::AT_FDCWD {
            lock(&c.task.process.fs).cwd.clone()
        } else {
            let f = lock(&c.task.process.files()).get(a[0] & 0xffff_ffff)?;
            f.dentry.clone().ok_or(Errno::ENOENT)?
        };
        let mut p = d.path();
        if rel.is_empty() {
            // An empty name without AT_EMPTY_PATH (getname_flags).
            return Err(Errno::ENOENT);
        }
        p.push(b'/');
        p.extend_from_slice(&rel);
        p
    };
    if a[4] & AT_SYMLINK_NOFOLLOW != 0 {
        // do_open_execat with AT_SYMLINK_NOFOLLOW: a symlink as the last component is ELOOP.
        let fs = lock(&c.task.process.fs).clone();
        let creds = *lock(&c.task.process.creds);
        let d = crate::namei::walk_with(&fs, &creds, &fs.cwd, &path, crate::namei::Last::NoFollow)?;
        if d.inode.stat()?.mode & um_kernel::vfs::mode::S_IFMT == um_kernel::vfs::mode::S_IFLNK {
            return Err(Errno::ELOOP);
        }
    }
    execve_common(c, path, None, a[2], a[3])
}

/// Registers execve and execveat.
pub fn register(t: &mut SyscallTable) {
    t.register("execve", execve);
    t.register("execveat", execveat);
}
