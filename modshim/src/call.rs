//! Calls into module code, and the context they run in.
//!
//! Module code runs synchronously on the host thread that serves the guest's syscall (insmod's
//! `init_module`, a `read` of `/dev/umchar`, ...). Around each call this module pushes a
//! **frame** on a thread-local stack: which module runs (its kernel-side [`Owner`] id and its
//! memory) and, optionally, the "user memory" its `copy_to_user`/`copy_from_user` act on
//! ([`UserMem`]: the guest's address space through an ioctl's `GuestMem`, or for read/write the
//! kernel buffer the syscall copies to the guest afterwards). The kernel API functions in
//! [`crate::api`] read the top frame, so registrations are attributed to the right module.
//!
//! Function pointers come from module memory; each call first checks that the address is live
//! module text ([`crate::mem::is_live_text`]): a pointer into init text freed after init, or
//! into an unloaded module, is refused instead of jumped to. Module code itself is trusted as
//! kernel code is in Linux.
//!
//! Neighbours: [`crate::mem`] (where the code is), [`crate::api`] (what the code calls back).

use crate::mem::{self, ModuleMem};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_long, c_longlong, c_uint, c_ulong, c_void};
use std::sync::Arc;
use um_uapi::Errno;

/// The kernel's identity of a loaded module (its registry id).
pub type Owner = u64;

/// A pointer-sized value module code gave the kernel to hand back (a `priv` or
/// `file_private` pointer); the kernel never dereferences it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Opaque(pub usize);

/// Where `copy_to_user`/`copy_from_user` go during one call into a module.
pub trait UserMem {
    /// copy_from_user: fills `buf` from user address `addr`; false on a fault.
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> bool;
    /// copy_to_user: writes `data` at user address `addr`; false on a fault.
    fn write(&mut self, addr: u64, data: &[u8]) -> bool;
}

/// One call into a module.
struct Frame {
    owner: Owner,
    mem: Arc<ModuleMem>,
    /// The user memory of this call; the `&mut` it came from is borrowed by [`enter`] for the
    /// whole call, which ends before the frame is popped.
    user: Option<*mut (dyn UserMem + 'static)>,
}

thread_local! {
    static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// Pops the frame even if the call unwinds.
struct PopGuard;

impl Drop for PopGuard {
    fn drop(&mut self) {
        FRAMES.with(|f| f.borrow_mut().pop());
    }
}

/// Runs `f` (a call into module code) with a frame for `owner` pushed.
fn enter<R>(
    owner: Owner,
    mem: &Arc<ModuleMem>,
    user: Option<&mut dyn UserMem>,
    f: impl FnOnce() -> R,
) -> R {
    let user = user.map(|u| {
        let p: *mut (dyn UserMem + '_) = u;
        // SAFETY: only the lifetime bound of the trait object is erased. The pointer is used
        // only while this frame is on the stack, i.e. inside `f` below, while the `&mut` it
        // came from is still borrowed by this function; the guard pops the frame before return.
        unsafe { std::mem::transmute::<*mut (dyn UserMem + '_), *mut (dyn UserMem + 'static)>(p) }
    });
    FRAMES.with(|fr| {
        fr.borrow_mut().push(Frame {
            owner,
            mem: mem.clone(),
            user,
        })
    });
    let _guard = PopGuard;
    f()
}

/// The module whose code is running on this thread, if any.
pub fn current_owner() -> Option<(Owner, Arc<ModuleMem>)> {
    FRAMES.with(|f| f.borrow().last().map(|fr| (fr.owner, fr.mem.clone())))
}

/// Runs `f` with the current call's user memory (None outside a call, or when the call has
/// none: then the kernel's [`crate::KernelApi`] copies through the current task).
pub(crate) fn with_user<R>(f: impl FnOnce(Option<&mut dyn UserMem>) -> R) -> R {
    let p = FRAMES.with(|fr| fr.borrow().last().and_then(|x| x.user));
    match p {
        // SAFETY: the pointer is valid while its frame is on the stack (see `enter`), and it is
        // the top frame of this thread, whose module code is the caller of this API function.
        // No other reference to the object is in use: `enter`'s caller is blocked in the call,
        // and a nested call pushes a frame of its own.
        Some(p) => f(Some(unsafe { &mut *p })),
        None => f(None),
    }
}

/// Checks that `addr` is live module text before a call.
fn code(addr: u64, what: &str) -> Result<usize, Errno> {
    if addr == 0 {
        return Err(Errno::EINVAL);
    }
    if !mem::is_live_text(addr) {
        log::error!("modules: refusing to call {what} at {addr:#x}: not in live module text");
        return Err(Errno::EFAULT);
    }
    Ok(addr as usize)
}

/// Calls a module's `init_module`; its return value (0 or -errno).
pub fn call_init(mem: &Arc<ModuleMem>, owner: Owner, addr: u64) -> Result<i32, Errno> {
    let a = code(addr, "init_module")?;
    // SAFETY: `a` is live module text, the address of the module's `int init_module(void)`
    // as the loader resolved it.
    let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn() -> c_int>(a) };
    // SAFETY: calling module code, which the kernel trusts; it takes no arguments.
    Ok(enter(owner, mem, None, || unsafe { f() }))
}

/// Calls a module's `cleanup_module`.
pub fn call_exit(mem: &Arc<ModuleMem>, owner: Owner, addr: u64) -> Result<(), Errno> {
    let a = code(addr, "cleanup_module")?;
    // SAFETY: `a` is live module text, the module's `void cleanup_module(void)`.
    let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn()>(a) };
    // SAFETY: calling module code, which the kernel trusts.
    enter(owner, mem, None, || unsafe { f() });
    Ok(())
}

/// `struct um_file_operations` as module code lays it out: six function pointers.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RawFops {
    pub open: usize,
    pub read: usize,
    pub write: usize,
    pub unlocked_ioctl: usize,
    pub poll: usize,
    pub release: usize,
}

type OpenFn = unsafe extern "C" fn(*mut c_void, *mut *mut c_void) -> c_int;
type ReadFn = unsafe extern "C" fn(*mut c_void, *mut c_char, c_ulong, *mut c_longlong) -> c_long;
type WriteFn = unsafe extern "C" fn(*mut c_void, *const c_char, c_ulong, *mut c_longlong) -> c_long;
type IoctlFn = unsafe extern "C" fn(*mut c_void, c_uint, c_ulong) -> c_long;
type PollFn = unsafe extern "C" fn(*mut c_void) -> c_uint;
type ReleaseFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type ShowFn = unsafe extern "C" fn(*mut c_char, c_ulong, *mut c_void) -> c_int;

/// A character device's file operations as a module registered them: the safe way for the
/// kernel to call them.
#[derive(Clone)]
pub struct Fops {
    owner: Owner,
    mem: Arc<ModuleMem>,
    raw: RawFops,
}

/// A kernel buffer standing in for the user buffer of a read or write: the module is given its
/// address; copies inside it are plain copies, anything else goes to the guest.
struct Window<'a> {
    base: u64,
    buf: WindowBuf<'a>,
}

enum WindowBuf<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
}

impl Window<'_> {
    fn len(&self) -> u64 {
        match &self.buf {
            WindowBuf::Read(b) => b.len() as u64,
            WindowBuf::Write(b) => b.len() as u64,
        }
    }

    /// The offset of `[addr, addr+n)` in the window, if it lies inside.
    fn offset(&self, addr: u64, n: usize) -> Option<usize> {
        let off = addr.checked_sub(self.base)?;
        (off.checked_add(n as u64)? <= self.len()).then_some(off as usize)
    }
}

impl UserMem for Window<'_> {
    fn read(&mut self, addr: u64, out: &mut [u8]) -> bool {
        match (self.offset(addr, out.len()), &self.buf) {
            (Some(o), WindowBuf::Write(b)) => {
                out.copy_from_slice(&b[o..o + out.len()]);
                true
            }
            (Some(_), WindowBuf::Read(_)) => false,
            (None, _) => crate::api().is_some_and(|k| k.copy_from_user(addr, out)),
        }
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> bool {
        match (self.offset(addr, data.len()), &mut self.buf) {
            (Some(o), WindowBuf::Read(b)) => {
                b[o..o + data.len()].copy_from_slice(data);
                true
            }
            (Some(_), WindowBuf::Write(_)) => false,
            (None, _) => crate::api().is_some_and(|k| k.copy_to_user(addr, data)),
        }
    }
}

impl Fops {
    pub(crate) fn new(owner: Owner, mem: Arc<ModuleMem>, raw: RawFops) -> Fops {
        Fops { owner, mem, raw }
    }

    /// The module that registered these operations.
    pub fn owner(&self) -> Owner {
        self.owner
    }

    /// `open`: the file's private value, or the error it returned. Without an `open`, the
    /// file's private value is the device's.
    pub fn open(&self, data: Opaque) -> Result<Opaque, Errno> {
        if self.raw.open == 0 {
            return Ok(data);
        }
        let a = code(self.raw.open as u64, "open")?;
        // SAFETY: live module text, the module's `open` of `struct um_file_operations`.
        let f = unsafe { std::mem::transmute::<usize, OpenFn>(a) };
        let mut out: *mut c_void = data.0 as *mut c_void;
        // SAFETY: calling module code with its own private pointer and a pointer to a local
        // that outlives the call.
        let r = enter(self.owner, &self.mem, None, || unsafe {
            f(data.0 as *mut c_void, &mut out)
        });
        if r < 0 {
            return Err(errno(r as i64));
        }
        Ok(Opaque(out as usize))
    }

    /// `read` into `buf` at `*pos`: bytes read or the error; None without a `read`.
    pub fn read(
        &self,
        file: Opaque,
        buf: &mut [u8],
        pos: &mut i64,
    ) -> Option<Result<usize, Errno>> {
        if self.raw.read == 0 {
            return None;
        }
        let a = match code(self.raw.read as u64, "read") {
            Ok(a) => a,
            Err(e) => return Some(Err(e)),
        };
        // SAFETY: live module text, the module's `read`.
        let f = unsafe { std::mem::transmute::<usize, ReadFn>(a) };
        let len = buf.len();
        let base = buf.as_mut_ptr() as usize as u64;
        let mut win = Window {
            base,
            buf: WindowBuf::Read(buf),
        };
        let mut p: c_longlong = *pos;
        // SAFETY: calling module code. The "user" buffer is a kernel buffer the module reaches
        // through copy_to_user (the window), and `p` outlives the call.
        let r = enter(self.owner, &self.mem, Some(&mut win), || unsafe {
            f(
                file.0 as *mut c_void,
                base as usize as *mut c_char,
                len as c_ulong,
                &mut p,
            )
        });
        *pos = p;
        Some(result(r, len))
    }

    /// `write` of `data` at `*pos`: bytes written or the error; None without a `write`.
    pub fn write(&self, file: Opaque, data: &[u8], pos: &mut i64) -> Option<Result<usize, Errno>> {
        if self.raw.write == 0 {
            return None;
        }
        let a = match code(self.raw.write as u64, "write") {
            Ok(a) => a,
            Err(e) => return Some(Err(e)),
        };
        // SAFETY: live module text, the module's `write`.
        let f = unsafe { std::mem::transmute::<usize, WriteFn>(a) };
        let len = data.len();
        let base = data.as_ptr() as usize as u64;
        let mut win = Window {
            base,
            buf: WindowBuf::Write(data),
        };
        let mut p: c_longlong = *pos;
        // SAFETY: calling module code; the data is reached through copy_from_user (the window).
        let r = enter(self.owner, &self.mem, Some(&mut win), || unsafe {
            f(
                file.0 as *mut c_void,
                base as usize as *const c_char,
                len as c_ulong,
                &mut p,
            )
        });
        *pos = p;
        Some(result(r, len))
    }

    /// `unlocked_ioctl` with the raw guest argument; its copies go through `user`. None
    /// without an `unlocked_ioctl`.
    pub fn ioctl(
        &self,
        file: Opaque,
        cmd: u32,
        arg: u64,
        user: &mut dyn UserMem,
    ) -> Option<Result<u64, Errno>> {
        if self.raw.unlocked_ioctl == 0 {
            return None;
        }
        let a = match code(self.raw.unlocked_ioctl as u64, "unlocked_ioctl") {
            Ok(a) => a,
            Err(e) => return Some(Err(e)),
        };
        // SAFETY: live module text, the module's `unlocked_ioctl`.
        let f = unsafe { std::mem::transmute::<usize, IoctlFn>(a) };
        // SAFETY: calling module code with plain integers.
        let r = enter(self.owner, &self.mem, Some(user), || unsafe {
            f(file.0 as *mut c_void, cmd as c_uint, arg as c_ulong)
        });
        Some(if r < 0 { Err(errno(r)) } else { Ok(r as u64) })
    }

    /// `poll`: the ready mask; None without a `poll`.
    pub fn poll(&self, file: Opaque) -> Option<u32> {
        if self.raw.poll == 0 {
            return None;
        }
        let a = code(self.raw.poll as u64, "poll").ok()?;
        // SAFETY: live module text, the module's `poll`.
        let f = unsafe { std::mem::transmute::<usize, PollFn>(a) };
        // SAFETY: calling module code with its private pointer.
        Some(enter(self.owner, &self.mem, None, || unsafe {
            f(file.0 as *mut c_void)
        }))
    }

    /// `release` (the last close of an open file).
    pub fn release(&self, file: Opaque) -> i32 {
        if self.raw.release == 0 {
            return 0;
        }
        let Ok(a) = code(self.raw.release as u64, "release") else {
            return -Errno::EFAULT.get();
        };
        // SAFETY: live module text, the module's `release`.
        let f = unsafe { std::mem::transmute::<usize, ReleaseFn>(a) };
        // SAFETY: calling module code with its private pointer.
        enter(self.owner, &self.mem, None, || unsafe {
            f(file.0 as *mut c_void)
        })
    }
}

/// A `/proc` entry's `show` callback as a module registered it.
#[derive(Clone)]
pub struct ProcShow {
    owner: Owner,
    mem: Arc<ModuleMem>,
    show: usize,
}

impl ProcShow {
    pub(crate) fn new(owner: Owner, mem: Arc<ModuleMem>, show: usize) -> ProcShow {
        ProcShow { owner, mem, show }
    }

    /// The module that registered the entry.
    pub fn owner(&self) -> Owner {
        self.owner
    }

    /// Fills `buf`: the length of the whole output (which did not fit when it is
    /// `buf.len()` or more: `um_snprintf` convention) or the error.
    pub fn show(&self, data: Opaque, buf: &mut [u8]) -> Result<usize, Errno> {
        let a = code(self.show as u64, "show")?;
        // SAFETY: live module text, the entry's `show`.
        let f = unsafe { std::mem::transmute::<usize, ShowFn>(a) };
        let len = buf.len();
        let p = buf.as_mut_ptr();
        // SAFETY: calling module code with a kernel buffer of `len` bytes that outlives the call.
        let r = enter(self.owner, &self.mem, None, || unsafe {
            f(p as *mut c_char, len as c_ulong, data.0 as *mut c_void)
        });
        if r < 0 {
            return Err(errno(i64::from(r)));
        }
        Ok(r as usize)
    }
}

/// A negative return value as an errno (EINVAL when out of range).
fn errno(r: i64) -> Errno {
    i32::try_from(-r)
        .ok()
        .and_then(Errno::new)
        .unwrap_or(Errno::EINVAL)
}

/// A byte count or -errno from module code, with the count capped at what was asked.
fn result(r: i64, cap: usize) -> Result<usize, Errno> {
    if r < 0 {
        Err(errno(r))
    } else {
        Ok((r as u64).min(cap as u64) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_copies_inside_only() {
        let mut buf = [0u8; 8];
        let base = 0x1000;
        let mut w = Window {
            base,
            buf: WindowBuf::Read(&mut buf),
        };
        assert!(w.write(base + 2, b"abc"));
        assert!(!w.read(base, &mut [0u8; 2]), "a read window is write-only");
        assert_eq!(w.offset(base + 6, 3), None);
        assert_eq!(w.offset(base - 1, 1), None);
        let _ = w;
        assert_eq!(&buf[2..5], b"abc");
        let data = *b"xyz";
        let mut w = Window {
            base,
            buf: WindowBuf::Write(&data),
        };
        let mut out = [0u8; 2];
        assert!(w.read(base + 1, &mut out));
        assert_eq!(&out, b"yz");
        assert!(!w.write(base, b"q"));
    }

    /// `int f(void) { return 42; }` in the host's machine code.
    #[cfg(target_arch = "x86_64")]
    const RETURN_42: &[u8] = &[0xb8, 0x2a, 0, 0, 0, 0xc3];
    #[cfg(target_arch = "aarch64")]
    const RETURN_42: &[u8] = &[0x40, 0x05, 0x80, 0x52, 0xc0, 0x03, 0x5f, 0xd6];

    #[test]
    fn calls_code_placed_in_module_memory() {
        use crate::mem::{Prot, RegionReq};
        let req = RegionReq {
            size: 64,
            align: 16,
            init: true,
        };
        let (mem, addrs) = ModuleMem::alloc(&[req]).unwrap();
        // Not installed yet: not text, so not called.
        assert_eq!(call_init(&mem, 7, addrs[0]), Err(Errno::EFAULT));
        mem.install(0, RETURN_42, Prot::ReadExec).unwrap();
        assert_eq!(current_owner().map(|o| o.0), None);
        assert_eq!(call_init(&mem, 7, addrs[0]), Ok(42));
        assert_eq!(call_init(&mem, 7, 0), Err(Errno::EINVAL));
        // Freed init text is refused, not jumped to.
        mem.free_init();
        assert_eq!(call_init(&mem, 7, addrs[0]), Err(Errno::EFAULT));
    }

    #[test]
    fn return_values() {
        assert_eq!(result(5, 3), Ok(3));
        assert_eq!(result(-14, 3), Err(Errno::EFAULT));
        assert_eq!(errno(-100000), Errno::EINVAL);
    }
}
