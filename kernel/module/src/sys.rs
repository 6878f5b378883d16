//! init_module, finit_module, delete_module (Linux `kernel/module/main.c`; init_module(2),
//! delete_module(2)): the argument handling and permission checks. Loading and unloading
//! themselves are the crate root's.

use crate::{MODULE_INIT_IGNORE_MODVERSIONS, MODULE_INIT_IGNORE_VERMAGIC};
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::mode;
use um_uapi::{Errno, SysResult};

/// Largest module image accepted (Linux is bounded by vmalloc space; this is generous).
const MAX_IMAGE: u64 = 64 << 20;
/// Longest parameter string (Linux `strndup_user(uargs, ~0UL >> 1)` is bounded only by memory;
/// a page-multiple bound keeps a bad pointer from reading the whole address space).
const MAX_ARGS: usize = 1 << 20;
/// Size of an ELF64 header: anything shorter is not a module (`copy_module_from_user`).
const EHDR_SIZE: u64 = 64;

/// `may_init_module`: CAP_SYS_MODULE, which root has, and modules not disabled (also the
/// check of delete_module).
fn may_init_module(c: &SyscallCtx<'_>) -> SysResult<()> {
    if lock(&c.task.process.creds).euid != 0 || crate::modules_disabled() {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// The parameter string (`uargs`), NUL-terminated in guest memory.
fn read_args(c: &SyscallCtx<'_>, addr: u64) -> SysResult<String> {
    let raw = c.read_cstr(addr, MAX_ARGS).map_err(|e| match e {
        Errno::ENAMETOOLONG => Errno::E2BIG,
        e => e,
    })?;
    Ok(String::from_utf8_lossy(&raw).into_owned())
}

/// init_module(image, len, param_values).
fn init_module(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    may_init_module(c)?;
    let len = a[1];
    if len < EHDR_SIZE {
        return Err(Errno::ENOEXEC);
    }
    if len > MAX_IMAGE {
        return Err(Errno::ENOMEM);
    }
    let image = c.read_bytes(a[0], len as usize)?;
    let args = read_args(c, a[2])?;
    crate::load(c.kernel, &image, &args, 0)?;
    Ok(0)
}

/// finit_module(fd, param_values, flags).
fn finit_module(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    may_init_module(c)?;
    let flags = a[2];
    if flags & !(MODULE_INIT_IGNORE_MODVERSIONS | MODULE_INIT_IGNORE_VERMAGIC) as u64 != 0 {
        return Err(Errno::EINVAL);
    }
    let f = lock(&c.task.process.files()).get(a[0] & 0xffff_ffff)?;
    // kernel_read_file_from_fd: the file must be open for reading and be a regular file.
    if f.flags() & 3 == 1 {
        return Err(Errno::EBADF);
    }
    let st = f.ops.stat()?;
    if st.mode & mode::S_IFMT != mode::S_IFREG {
        return Err(Errno::EINVAL);
    }
    let io = um_fs::sys::rw::io(c, &f);
    let mut image = Vec::new();
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = f.ops.read(&io, &mut buf, image.len() as u64)?;
        if n == 0 {
            break;
        }
        image.extend_from_slice(&buf[..n]);
        if image.len() as u64 > MAX_IMAGE {
            return Err(Errno::EFBIG);
        }
    }
    if (image.len() as u64) < EHDR_SIZE {
        return Err(Errno::ENOEXEC);
    }
    let args = read_args(c, a[1])?;
    crate::load(c.kernel, &image, &args, flags as u32)?;
    Ok(0)
}

/// delete_module(name, flags).
fn delete_module(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    may_init_module(c)?;
    // strncpy_from_user(name, name_user, MODULE_NAME_LEN-1): a longer name is cut there.
    let mut name = match c.read_cstr(a[0], 4096) {
        Ok(n) => n,
        Err(Errno::ENAMETOOLONG) => return Err(Errno::ENOENT),
        Err(e) => return Err(e),
    };
    name.truncate(crate::MODULE_NAME_LEN - 1);
    let name = String::from_utf8_lossy(&name).into_owned();
    crate::unload(c.task, &name, a[1] as u32)?;
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("init_module", init_module);
    t.register("finit_module", finit_module);
    t.register("delete_module", delete_module);
}
