//! execve (Linux `fs/exec.c`): find the file, pick the binary format (ELF, `#!` script), build a
//! fresh address space with the ELF loader, and switch the process over to it.

use crate::binfmt_elf::{self, ExecParams, ExecSource};
use crate::namei::{self, Last};
use std::sync::Arc;
use um_kernel::arch::{self, Regs};
use um_kernel::kernel::Kernel;
use um_kernel::task::{SigAction, Task, lock};
use um_kernel::vfs::{Dentry, DenyWrite, ExeFile, FileOps, mode};
use um_kernel::wait::IoCtx;
use um_mm::{Mm, VmFile};
use um_uapi::{Errno, SysResult};

/// How deep `#!` interpreters may nest (Linux `BINPRM_MAX_RECURSION`).
const MAX_SCRIPT_DEPTH: u32 = 4;

/// An executable opened for loading.
struct Exe {
    ops: Box<dyn FileOps>,
    vm: Arc<dyn VmFile>,
    task: Arc<Task>,
    /// Writes to it are refused while it is being loaded (and, for the program itself, while
    /// the process runs it: [`ExeFile`]).
    deny: DenyWrite,
}

impl ExecSource for Exe {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.ops.read(
            &IoCtx {
                task: &self.task,
                nonblock: false,
                flags: 0,
            },
            buf,
            off,
        )
    }
    fn vm_file(&self) -> Arc<dyn VmFile> {
        self.vm.clone()
    }
}

/// `open_exec()`: a regular file with some execute bit, not open for writing anywhere
/// (`ETXTBSY`, fs/exec.c `do_open_execat` -> `deny_write_access`).
fn open_exec(d: &Arc<Dentry>, task: &Arc<Task>) -> SysResult<Exe> {
    let st = d.inode.stat()?;
    if st.mode & mode::S_IFMT != mode::S_IFREG || st.mode & 0o111 == 0 {
        return Err(Errno::EACCES);
    }
    // may_open with MAY_EXEC: the x bit that applies to the caller (owner, group or other).
    let creds = *lock(&task.process.creds);
    namei::permission(&st, &creds, namei::MAY_EXEC)?;
    let deny = DenyWrite::new(crate::mount::inode_key(&*d.inode))?;
    let ops = d.inode.open(
        &IoCtx {
            task,
            nonblock: false,
            flags: 0,
        },
        0,
    )?;
    let vm = ops.vm_file().ok_or(Errno::EACCES)?;
    Ok(Exe {
        ops,
        vm,
        task: task.clone(),
        deny,
    })
}

/// Parses a `#!` line: interpreter and optional single argument (fs/binfmt_script.c).
fn parse_shebang(head: &[u8]) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let line = head.strip_prefix(b"#!")?;
    let end = line.iter().position(|&b| b == b'\n').unwrap_or(line.len());
    let line = &line[..end];
    let trim = |s: &[u8]| -> Vec<u8> {
        let s: &[u8] = &s[s
            .iter()
            .position(|&b| b != b' ' && b != b'\t')
            .unwrap_or(s.len())..];
        let e = s
            .iter()
            .rposition(|&b| b != b' ' && b != b'\t')
            .map(|i| i + 1)
            .unwrap_or(0);
        s[..e].to_vec()
    };
    let line = trim(line);
    if line.is_empty() {
        return None;
    }
    match line.iter().position(|&b| b == b' ' || b == b'\t') {
        Some(i) => {
            let arg = trim(&line[i..]);
            Some((
                line[..i].to_vec(),
                if arg.is_empty() { None } else { Some(arg) },
            ))
        }
        None => Some((line, None)),
    }
}

/// What a successful exec leaves for the caller: the registers to start the thread with.
pub struct Exec {
    pub regs: Regs,
}

/// Replaces `task`'s program with the one at `path`. On success the process has its new
/// address space, name and descriptors; the caller installs `regs` and, if the stub held an
/// older address space, clears it.
pub fn do_execve(
    k: &Arc<Kernel>,
    task: &Arc<Task>,
    path: &[u8],
    argv: Vec<Vec<u8>>,
    envp: Vec<Vec<u8>>,
) -> SysResult<Exec> {
    do_execve_file(k, task, path, None, argv, envp)
}

/// [`do_execve`] of an already resolved `file` (execveat of a descriptor with AT_EMPTY_PATH:
/// a memfd, an O_PATH fd of a file unlinked or unmounted since, as runc and crun re-execute
/// themselves), `path` being only its name for the new program (`/dev/fd/N`, fs/exec.c
/// `alloc_bprm`). Without `file`, `path` is walked.
pub fn do_execve_file(
    k: &Arc<Kernel>,
    task: &Arc<Task>,
    path: &[u8],
    file: Option<Arc<Dentry>>,
    argv: Vec<Vec<u8>>,
    envp: Vec<Vec<u8>>,
) -> SysResult<Exec> {
    let mut file = file;
    let fs = lock(&task.process.fs).clone();
    let creds = *lock(&task.process.creds);
    let mut argv = argv;
    let mut path = path.to_vec();
    let mut depth = 0;
    let (dentry, exe) = loop {
        let d = match file.take() {
            Some(d) => d,
            None => namei::walk_with(&fs, &creds, &fs.cwd, &path, Last::Follow)?,
        };
        let exe = open_exec(&d, task)?;
        let mut head = [0u8; 256];
        let n = exe.read_at(0, &mut head)?;
        match parse_shebang(&head[..n]) {
            Some((interp, arg)) if n >= 2 => {
                depth += 1;
                if depth > MAX_SCRIPT_DEPTH {
                    return Err(Errno::ELOOP);
                }
                // argv becomes: interp [arg] path argv[1..]
                let mut new = vec![interp.clone()];
                new.extend(arg);
                new.push(path.clone());
                new.extend(argv.into_iter().skip(1));
                argv = new;
                path = interp;
            }
            _ => break (d, exe),
        }
    };
    if argv.is_empty() {
        // fs/exec.c: an empty argv gets "" as argv[0].
        argv.push(Vec::new());
    }
    let mut random = [0u8; 16];
    um_os_linux::host::getrandom(&mut random).map_err(|_| Errno::EIO)?;
    let mut mm = Mm::new(k.frames.clone(), k.page_cache.clone(), k.layout);
    let params = ExecParams {
        argv: &argv,
        envp: &envp,
        execfn: &path,
        machine: arch::ELF_MACHINE,
        platform: arch::native::abi::PLATFORM.as_bytes(),
        hwcap: k.hwcap,
        hwcap2: k.hwcap2,
        uid: creds.uid,
        euid: creds.euid,
        gid: creds.gid,
        egid: creds.egid,
        secure: false,
        random,
        clktck: 100,
        vdso: Some(um_kernel::arch::vdso::image_for_exec(&task.process)),
        minsigstksz: None,
    };
    let mut open_interp = |p: &[u8]| -> Result<Box<dyn ExecSource>, Errno> {
        let d = namei::walk_with(&fs, &creds, &fs.cwd, p, Last::Follow)?;
        Ok(Box::new(open_exec(&d, task)?))
    };
    let img = binfmt_elf::load_elf(&mut mm, &exe, &mut open_interp, &params)?;
    // Point of no return: switch the process over.
    let p = &task.process;
    um_kernel::sys::futex::mm_release(task);
    um_kernel::sys::timer::exec_process(p.pid);
    p.note_maxrss();
    *lock(&p.mm) = mm.into_shared();
    // exec_task_namespaces: the process enters its time namespace for children.
    um_kernel::timens::on_exec(p);
    p.exec_unmap
        .store(true, std::sync::atomic::Ordering::Release);
    lock(&p.files()).close_on_exec();
    {
        // Caught signals reset to default on exec; ignored ones stay ignored (fs/exec.c).
        let mut acts = lock(&p.sigactions);
        for a in acts.iter_mut() {
            if a.handler != 1 {
                *a = SigAction::default();
            }
        }
    }
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(&path);
    *lock(&p.comm) = name[..name.len().min(15)].to_vec();
    *lock(&p.exe) = Some(ExeFile {
        dentry,
        deny: exe.deny.clone(),
    });
    *lock(&p.arg_range) = (img.argv_start, img.argv_end, img.env_start, img.env_end);
    *lock(&p.auxv) = img.auxv.clone();
    *lock(&task.altstack) = (0, 0, 2);
    *lock(&task.robust_list) = (0, 0);
    // Saved ids and capabilities as exec sets them (security/commoncap.c).
    um_kernel::sys::cred::exec_process(p);
    // setpgid(2) by the parent now fails with EACCES (kernel/sys.c, PF_FORKNOEXEC).
    p.did_exec.store(true, std::sync::atomic::Ordering::Release);
    // A vfork parent may go on now.
    p.vfork_done
        .store(true, std::sync::atomic::Ordering::Release);
    p.vfork_wait.wake_all();
    let template = k.exec_template.get().copied().unwrap_or_default();
    Ok(Exec {
        regs: Regs::for_exec(&template, img.entry, img.sp),
    })
}

/// The exec entry for init (`um_kernel::run::Start::Exec`).
pub fn exec_init(
    k: &Arc<Kernel>,
    task: &Arc<Task>,
    path: &[u8],
    argv: Vec<Vec<u8>>,
    envp: Vec<Vec<u8>>,
) -> SysResult<Regs> {
    do_execve(k, task, path, argv, envp).map(|e| e.regs)
}

#[cfg(test)]
mod tests {
    use super::parse_shebang;

    #[test]
    fn shebang_lines() {
        assert_eq!(
            parse_shebang(b"#!/bin/sh\necho"),
            Some((b"/bin/sh".to_vec(), None))
        );
        assert_eq!(
            parse_shebang(b"#! /usr/bin/env  python3 \n"),
            Some((b"/usr/bin/env".to_vec(), Some(b"python3".to_vec())))
        );
        assert_eq!(parse_shebang(b"#!\n"), None);
        assert_eq!(parse_shebang(b"\x7fELF"), None);
    }
}
