//! The kernel API that module code calls: `#[no_mangle] extern "C"` functions with the
//! signatures of `include/module/um_module.h`, and the table of exported kernel symbols the
//! loader resolves a module's undefined symbols against ([`kernel_symbols`]).
//!
//! Each function turns raw pointers into safe values (bounded C strings, slices of module
//! memory) and hands them to the kernel's [`crate::KernelApi`], with the calling module taken
//! from the call frame ([`crate::call`]). Memory (`kmalloc`/`kzalloc`/`kfree`) and firmware
//! blobs are allocated here and tracked per module: a `kfree` of a pointer the kernel never
//! handed out is logged and ignored rather than corrupting the host heap, and what a module
//! still holds at unload is reported ([`outstanding`]).
//!
//! The table holds function addresses, so referencing it keeps every exported function in the
//! `linux` executable whatever the linker does with unreferenced symbols. Besides the header's
//! functions it exports `memcpy`, `memmove`, `memset`, `memcmp` and `strlen` (compilers emit
//! calls to them even in freestanding code), as small functions of this crate, which lie near
//! the module arena, where host libc does not.
//!
//! Neighbours: [`crate::call`] (the frames), [`crate::mem`], the kernel side in `um-fs`.

use crate::call::{self, Fops, Opaque, ProcShow, RawFops};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void};
use std::sync::{Mutex, MutexGuard, OnceLock};
use um_uapi::Errno;

/// Longest message one `um_printk` logs.
const PRINTK_MAX: usize = 4096;
/// Longest name (device, proc entry, firmware file) taken from module code.
const NAME_MAX: usize = 255;
/// Largest `kmalloc` (Linux `KMALLOC_MAX_SIZE` with 4 KiB pages and `MAX_PAGE_ORDER` 10).
const KMALLOC_MAX: usize = 4 << 20;
/// What `kmalloc(0)` returns (Linux `ZERO_SIZE_PTR`); `kfree` accepts it.
const ZERO_SIZE_PTR: usize = 16;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The current module, or 0 when no module code is running on this thread.
fn owner() -> call::Owner {
    call::current_owner().map_or(0, |(o, _)| o)
}

/// Reads a NUL-terminated string of module code at `p`, at most `max` bytes; None for NULL or
/// too long.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string (or at least `max` readable bytes).
unsafe fn cstr(p: *const c_char, max: usize) -> Option<Vec<u8>> {
    if p.is_null() {
        return None;
    }
    let mut out = Vec::new();
    for i in 0..=max {
        // SAFETY: the caller guarantees the bytes up to the NUL (or `max`) are readable.
        let b = unsafe { *p.cast::<u8>().add(i) };
        if b == 0 {
            return Some(out);
        }
        out.push(b);
    }
    None
}

/// `void um_printk(int level, const char *msg, unsigned long len)`: one log line (level 0..7 as
/// `KERN_*`; other values are the default level).
///
/// # Safety
/// `msg` points to `len` readable bytes (or is NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn um_printk(level: c_int, msg: *const c_char, len: c_ulong) {
    if msg.is_null() {
        return;
    }
    let n = (len as usize).min(PRINTK_MAX);
    // SAFETY: the caller passes `len` readable bytes at `msg`; we read at most that many.
    let text = unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), n) };
    if let Some(k) = crate::api() {
        k.printk(call::current_owner().map(|(o, _)| o), level, text);
    }
}

/// Live `kmalloc` blocks: address -> (module, size).
fn allocs() -> &'static Mutex<HashMap<usize, (call::Owner, usize)>> {
    static A: OnceLock<Mutex<HashMap<usize, (call::Owner, usize)>>> = OnceLock::new();
    A.get_or_init(Default::default)
}

fn alloc(size: usize, zero: bool) -> *mut c_void {
    if size == 0 {
        return ZERO_SIZE_PTR as *mut c_void;
    }
    if size > KMALLOC_MAX {
        return std::ptr::null_mut();
    }
    // Power-of-two sizes are naturally aligned up to a page, as Linux kmalloc guarantees;
    // anything else 16 bytes.
    let align = if size.is_power_of_two() {
        size.clamp(16, 4096)
    } else {
        16
    };
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: posix_memalign writes the new block's address into `p`.
    if unsafe { libc::posix_memalign(&mut p, align, size) } != 0 || p.is_null() {
        return std::ptr::null_mut();
    }
    if zero {
        // SAFETY: `p` is a fresh block of `size` bytes.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, size) };
    }
    lock(allocs()).insert(p as usize, (owner(), size));
    p
}

/// `void *kmalloc(unsigned long size, unsigned int flags)`: NULL on failure.
#[unsafe(no_mangle)]
pub extern "C" fn kmalloc(size: c_ulong, _flags: c_uint) -> *mut c_void {
    alloc(size as usize, false)
}

/// `void *kzalloc(unsigned long size, unsigned int flags)`: zeroed `kmalloc`.
#[unsafe(no_mangle)]
pub extern "C" fn kzalloc(size: c_ulong, _flags: c_uint) -> *mut c_void {
    alloc(size as usize, true)
}

/// `void kfree(const void *p)`: NULL and `ZERO_SIZE_PTR` are ignored, and so (logged) is a
/// pointer `kmalloc` never returned.
#[unsafe(no_mangle)]
pub extern "C" fn kfree(p: *const c_void) {
    let a = p as usize;
    if a == 0 || a == ZERO_SIZE_PTR {
        return;
    }
    if lock(allocs()).remove(&a).is_none() {
        log::error!("modules: kfree({a:#x}): not a kmalloc'd block; ignored");
        return;
    }
    // SAFETY: `a` was returned by posix_memalign in `alloc` and was still live (it was in the
    // table, and is now removed, so it is freed exactly once).
    unsafe { libc::free(a as *mut c_void) };
}

/// `unsigned long copy_to_user(void *to, const void *from, unsigned long n)`: bytes NOT copied.
///
/// # Safety
/// `from` points to `n` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn copy_to_user(to: *mut c_void, from: *const c_void, n: c_ulong) -> c_ulong {
    let len = n as usize;
    if len == 0 {
        return 0;
    }
    if from.is_null() {
        return n;
    }
    // SAFETY: the caller (module code) passes `n` readable bytes at `from`.
    let data = unsafe { std::slice::from_raw_parts(from as *const u8, len) };
    let ok = call::with_user(|u| match u {
        Some(u) => u.write(to as usize as u64, data),
        None => crate::api().is_some_and(|k| k.copy_to_user(to as usize as u64, data)),
    });
    if ok { 0 } else { n }
}

/// `unsigned long copy_from_user(void *to, const void *from, unsigned long n)`: bytes NOT
/// copied (the destination is zeroed then, as Linux does).
///
/// # Safety
/// `to` points to `n` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn copy_from_user(
    to: *mut c_void,
    from: *const c_void,
    n: c_ulong,
) -> c_ulong {
    let len = n as usize;
    if len == 0 {
        return 0;
    }
    if to.is_null() {
        return n;
    }
    let mut buf = vec![0u8; len];
    let ok = call::with_user(|u| match u {
        Some(u) => u.read(from as usize as u64, &mut buf),
        None => crate::api().is_some_and(|k| k.copy_from_user(from as usize as u64, &mut buf)),
    });
    if !ok {
        buf.fill(0);
    }
    // SAFETY: the caller (module code) passes `n` writable bytes at `to`; `buf` is separate.
    unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), to as *mut u8, len) };
    if ok { 0 } else { n }
}

/// `int um_register_chrdev(const char *name, const struct um_file_operations *fops, void
/// *priv)`: a handle (>= 0) or -errno; `/dev/<name>` appears.
///
/// # Safety
/// `name` is a C string and `fops` points to a `struct um_file_operations` (or they are NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn um_register_chrdev(
    name: *const c_char,
    fops: *const c_void,
    priv_: *mut c_void,
) -> c_int {
    let Some((owner, mem)) = call::current_owner() else {
        return -Errno::EPERM.get();
    };
    // SAFETY: the caller passes a C string.
    let Some(name) = (unsafe { cstr(name, NAME_MAX) }) else {
        return -Errno::EINVAL.get();
    };
    if fops.is_null() || (fops as usize) % std::mem::align_of::<RawFops>() != 0 {
        return -Errno::EINVAL.get();
    }
    // SAFETY: the caller passes a pointer to its `struct um_file_operations` (six function
    // pointers, the layout of `RawFops`), aligned as checked above.
    let raw = unsafe { std::ptr::read(fops as *const RawFops) };
    let Some(k) = crate::api() else {
        return -Errno::ENOSYS.get();
    };
    match k.register_chrdev(
        owner,
        &name,
        Fops::new(owner, mem, raw),
        Opaque(priv_ as usize),
    ) {
        Ok(h) => h,
        Err(e) => -e.get(),
    }
}

/// `void um_unregister_chrdev(int handle)`.
#[unsafe(no_mangle)]
pub extern "C" fn um_unregister_chrdev(handle: c_int) {
    if let Some(k) = crate::api() {
        k.unregister_chrdev(owner(), handle);
    }
}

/// `int um_proc_create(const char *name, int (*show)(char *, unsigned long, void *), void
/// *priv)`: a handle (>= 0) or -errno; `/proc/<name>` appears.
///
/// # Safety
/// `name` is a C string (or NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn um_proc_create(
    name: *const c_char,
    show: *const c_void,
    priv_: *mut c_void,
) -> c_int {
    let Some((owner, mem)) = call::current_owner() else {
        return -Errno::EPERM.get();
    };
    // SAFETY: the caller passes a C string.
    let Some(name) = (unsafe { cstr(name, NAME_MAX) }) else {
        return -Errno::EINVAL.get();
    };
    if show.is_null() {
        return -Errno::EINVAL.get();
    }
    let Some(k) = crate::api() else {
        return -Errno::ENOSYS.get();
    };
    match k.proc_create(
        owner,
        &name,
        ProcShow::new(owner, mem, show as usize),
        Opaque(priv_ as usize),
    ) {
        Ok(h) => h,
        Err(e) => -e.get(),
    }
}

/// `void um_proc_remove(int handle)`.
#[unsafe(no_mangle)]
pub extern "C" fn um_proc_remove(handle: c_int) {
    if let Some(k) = crate::api() {
        k.proc_remove(owner(), handle);
    }
}

/// `struct firmware` as module code sees it.
#[repr(C)]
struct Firmware {
    size: c_ulong,
    data: *const u8,
}

/// A firmware blob handed to module code: the header it sees first, then the data it points to.
#[repr(C)]
struct FirmwareBlob {
    fw: Firmware,
    bytes: Box<[u8]>,
}

/// Live firmware blobs: header address -> module.
fn firmware() -> &'static Mutex<HashMap<usize, call::Owner>> {
    static F: OnceLock<Mutex<HashMap<usize, call::Owner>>> = OnceLock::new();
    F.get_or_init(Default::default)
}

/// `int request_firmware(const struct firmware **fw, const char *name, void *dev)`: 0 and
/// `*fw` set, or -errno and `*fw` NULL. The file is `/lib/firmware/<name>` in the guest root.
///
/// # Safety
/// `fw` points to a writable pointer; `name` is a C string (or NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn request_firmware(
    fw: *mut *const c_void,
    name: *const c_char,
    _dev: *mut c_void,
) -> c_int {
    if fw.is_null() {
        return -Errno::EINVAL.get();
    }
    // SAFETY: the caller passes a writable `const struct firmware *`.
    unsafe { *fw = std::ptr::null() };
    // SAFETY: the caller passes a C string.
    let Some(name) = (unsafe { cstr(name, NAME_MAX) }) else {
        return -Errno::EINVAL.get();
    };
    if name.is_empty() {
        return -Errno::EINVAL.get();
    }
    let Some(k) = crate::api() else {
        return -Errno::ENOSYS.get();
    };
    let owner = owner();
    let bytes = match k.request_firmware(owner, &name) {
        Ok(b) => b.into_boxed_slice(),
        Err(e) => return -e.get(),
    };
    let mut blob = Box::new(FirmwareBlob {
        fw: Firmware {
            size: bytes.len() as c_ulong,
            data: std::ptr::null(),
        },
        bytes,
    });
    blob.fw.data = blob.bytes.as_ptr();
    let p = Box::into_raw(blob);
    lock(firmware()).insert(p as usize, owner);
    // SAFETY: as above; `p` points to the blob, whose first field is the `struct firmware`.
    unsafe { *fw = p as *const c_void };
    0
}

/// `void release_firmware(const struct firmware *fw)`: NULL is ignored, and so (logged) is a
/// pointer `request_firmware` never returned.
#[unsafe(no_mangle)]
pub extern "C" fn release_firmware(fw: *const c_void) {
    let a = fw as usize;
    if a == 0 {
        return;
    }
    if lock(firmware()).remove(&a).is_none() {
        log::error!("modules: release_firmware({a:#x}): not a firmware blob; ignored");
        return;
    }
    // SAFETY: `a` came from Box::into_raw in `request_firmware` and was still live (it was in
    // the table, now removed, so it is freed once).
    drop(unsafe { Box::from_raw(a as *mut FirmwareBlob) });
}

/// `memcpy` for module code.
///
/// # Safety
/// As C `memcpy`.
unsafe extern "C" fn um_memcpy(d: *mut c_void, s: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: as C memcpy: the caller passes valid, non-overlapping ranges.
    unsafe { std::ptr::copy_nonoverlapping(s as *const u8, d as *mut u8, n) };
    d
}

/// `memmove` for module code.
///
/// # Safety
/// As C `memmove`.
unsafe extern "C" fn um_memmove(d: *mut c_void, s: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: as C memmove: the caller passes valid ranges, which may overlap.
    unsafe { std::ptr::copy(s as *const u8, d as *mut u8, n) };
    d
}

/// `memset` for module code.
///
/// # Safety
/// As C `memset`.
unsafe extern "C" fn um_memset(d: *mut c_void, c: c_int, n: usize) -> *mut c_void {
    // SAFETY: as C memset: the caller passes a valid range.
    unsafe { std::ptr::write_bytes(d as *mut u8, c as u8, n) };
    d
}

/// `memcmp` for module code.
///
/// # Safety
/// As C `memcmp`.
unsafe extern "C" fn um_memcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
    // SAFETY: as C memcmp: the caller passes two readable ranges of `n` bytes.
    let (x, y) = unsafe {
        (
            std::slice::from_raw_parts(a as *const u8, n),
            std::slice::from_raw_parts(b as *const u8, n),
        )
    };
    x.iter()
        .zip(y)
        .find(|(p, q)| p != q)
        .map_or(0, |(p, q)| *p as c_int - *q as c_int)
}

/// `strlen` for module code.
///
/// # Safety
/// As C `strlen`.
unsafe extern "C" fn um_strlen(s: *const c_char) -> usize {
    let mut n = 0;
    // SAFETY: as C strlen: the caller passes a NUL-terminated string.
    while unsafe { *s.add(n) } != 0 {
        n += 1;
    }
    n
}

/// The kernel's exported symbols: (name a module refers to, address).
pub fn kernel_symbols() -> &'static [(&'static str, u64)] {
    static T: OnceLock<Vec<(&'static str, u64)>> = OnceLock::new();
    T.get_or_init(|| {
        let a = |f: *const ()| f as usize as u64;
        vec![
            ("um_printk", a(um_printk as *const ())),
            ("kmalloc", a(kmalloc as *const ())),
            ("kzalloc", a(kzalloc as *const ())),
            ("kfree", a(kfree as *const ())),
            ("copy_to_user", a(copy_to_user as *const ())),
            ("copy_from_user", a(copy_from_user as *const ())),
            ("um_register_chrdev", a(um_register_chrdev as *const ())),
            ("um_unregister_chrdev", a(um_unregister_chrdev as *const ())),
            ("um_proc_create", a(um_proc_create as *const ())),
            ("um_proc_remove", a(um_proc_remove as *const ())),
            ("request_firmware", a(request_firmware as *const ())),
            ("release_firmware", a(release_firmware as *const ())),
            ("memcpy", a(um_memcpy as *const ())),
            ("memmove", a(um_memmove as *const ())),
            ("memset", a(um_memset as *const ())),
            ("memcmp", a(um_memcmp as *const ())),
            ("strlen", a(um_strlen as *const ())),
        ]
    })
}

/// The address of kernel symbol `name`.
pub fn kernel_symbol(name: &str) -> Option<u64> {
    kernel_symbols()
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, a)| a)
}

/// A NUL-terminated string at `addr` in kernel memory that module code may point at (a
/// `charp` parameter): inside a live module region or a live `kmalloc` block, at most `max`
/// bytes. None for any other address.
pub fn read_kernel_cstr(addr: u64, max: usize) -> Option<Vec<u8>> {
    if let Some(s) = crate::mem::read_cstr_any(addr, max) {
        return Some(s);
    }
    let blocks = lock(allocs());
    let (&start, &(_, size)) = blocks
        .iter()
        .find(|&(&s, &(_, n))| addr >= s as u64 && addr < s as u64 + n as u64)?;
    let avail = (start + size - addr as usize).min(max);
    let mut out = vec![0u8; avail];
    // SAFETY: [addr, addr+avail) lies inside a live kmalloc block; holding the table's lock
    // keeps kfree from freeing it during the copy.
    unsafe { std::ptr::copy_nonoverlapping(addr as usize as *const u8, out.as_mut_ptr(), avail) };
    let n = out.iter().position(|&b| b == 0).unwrap_or(avail);
    out.truncate(n);
    Some(out)
}

/// A `kmalloc`'d NUL-terminated copy of `s` charged to module `owner` (a `charp` parameter
/// set through sysfs); its address, or None when out of memory.
pub fn alloc_cstring(owner: call::Owner, s: &[u8]) -> Option<u64> {
    let p = alloc(s.len() + 1, true);
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` is a fresh zeroed block of len+1 bytes; the copy leaves the NUL in place.
    unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), p as *mut u8, s.len()) };
    if let Some(e) = lock(allocs()).get_mut(&(p as usize)) {
        e.0 = owner;
    }
    Some(p as usize as u64)
}

/// What module `owner` still holds: (kmalloc blocks, their bytes, firmware blobs).
pub fn outstanding(owner: call::Owner) -> (usize, usize, usize) {
    let (n, bytes) = lock(allocs())
        .values()
        .filter(|(o, _)| *o == owner)
        .fold((0, 0), |(n, b), (_, s)| (n + 1, b + s));
    let fw = lock(firmware()).values().filter(|&&o| o == owner).count();
    (n, bytes, fw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kmalloc_tracks_and_aligns() {
        let p = kzalloc(64, 0);
        assert!(!p.is_null());
        assert_eq!(p as usize % 64, 0);
        // SAFETY: a fresh zeroed block of 64 bytes.
        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, 64) };
        assert!(bytes.iter().all(|&b| b == 0));
        assert!(outstanding(0).0 >= 1);
        kfree(p);
        kfree(p); // logged and ignored
        assert_eq!(kmalloc(0, 0) as usize, ZERO_SIZE_PTR);
        kfree(ZERO_SIZE_PTR as *const c_void);
        assert!(kmalloc(KMALLOC_MAX as c_ulong + 1, 0).is_null());
    }

    #[test]
    fn string_helpers() {
        let s = b"hello\0";
        // SAFETY: NUL-terminated.
        let got = unsafe { cstr(s.as_ptr().cast::<c_char>(), 10) };
        assert_eq!(got.unwrap(), b"hello");
        // SAFETY: 6 readable bytes; max 3 stops before reading past them.
        assert_eq!(unsafe { cstr(s.as_ptr().cast::<c_char>(), 3) }, None);
        // SAFETY: NUL-terminated.
        assert_eq!(unsafe { um_strlen(s.as_ptr().cast::<c_char>()) }, 5);
        let (a, b) = (*b"abc", *b"abd");
        // SAFETY: two 3-byte arrays.
        assert!(unsafe { um_memcmp(a.as_ptr().cast(), b.as_ptr().cast(), 3) } < 0);
        assert!(kernel_symbol("kmalloc").is_some());
        assert!(kernel_symbol("printf").is_none());
    }
}
