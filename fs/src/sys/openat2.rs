//! openat2(2) (Linux fs/open.c `SYSCALL_DEFINE4(openat2)`, `build_open_flags`; fs/namei.c for
//! the `RESOLVE_*` restrictions, which [`crate::namei::Resolve`] carries into the walk).
//!
//! Unlike open and openat, which ignore unknown flags, openat2 checks all of its arguments:
//! `size` below `OPEN_HOW_SIZE_VER0` is `EINVAL`, above a page `E2BIG`, and a larger struct
//! than ours must be zero past our fields (`copy_struct_from_user`, else `E2BIG`); unknown
//! open or resolve flags, `RESOLVE_BENEATH` with `RESOLVE_IN_ROOT`, a mode without `O_CREAT`
//! or `O_TMPFILE` (or with bits beyond 07777), `O_TMPFILE` without `O_DIRECTORY` or write
//! access, and `O_PATH` with anything but `O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC` are `EINVAL`;
//! `RESOLVE_CACHED` with `O_CREAT`, `O_TRUNC` or `O_TMPFILE` is `EAGAIN`. (Every lookup here
//! is as good as cached, so `RESOLVE_CACHED` otherwise changes nothing.)

use super::open::do_open;
use crate::namei::Resolve;
use um_kernel::arch::native::abi::OPEN_FLAGS_ARCH as ARCH;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_uapi::abi::fcntl::OpenFlags;
use um_uapi::{Errno, SysResult};

/// `OPEN_HOW_SIZE_VER0`: `struct open_how { u64 flags, mode, resolve; }`.
const OPEN_HOW_SIZE_VER0: usize = 24;

const RESOLVE_NO_XDEV: u64 = 0x01;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_BENEATH: u64 = 0x08;
const RESOLVE_IN_ROOT: u64 = 0x10;
const RESOLVE_CACHED: u64 = 0x20;
/// `VALID_RESOLVE_FLAGS`.
const VALID_RESOLVE_FLAGS: u64 = 0x3f;
/// `S_IALLUGO`.
const S_IALLUGO: u64 = 0o7777;

/// `struct open_how`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `copy_struct_from_user` into a 24-byte `struct open_how`: `user` is all `size` bytes the
/// guest passed.
fn parse_how(user: &[u8]) -> SysResult<OpenHow> {
    if user[OPEN_HOW_SIZE_VER0..].iter().any(|&b| b != 0) {
        return Err(Errno::E2BIG);
    }
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&user[i * 8..i * 8 + 8]);
        u64::from_le_bytes(w)
    };
    Ok(OpenHow {
        flags: word(0),
        mode: word(1),
        resolve: word(2),
    })
}

/// `build_open_flags`' checks: the open flags to use and the walk's restrictions.
fn check_how(how: &OpenHow) -> SysResult<(u32, Resolve)> {
    let cloexec = u64::from(OpenFlags::CLOEXEC.bits());
    let valid = u64::from(ARCH.known_bits());
    let flags = how.flags & !cloexec;
    if flags & !valid != 0 || how.resolve & !VALID_RESOLVE_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    if how.resolve & RESOLVE_BENEATH != 0 && how.resolve & RESOLVE_IN_ROOT != 0 {
        return Err(Errno::EINVAL);
    }
    let tmpfile_bit = u64::from(OpenFlags::TMPFILE_BIT.bits());
    let creat = u64::from(OpenFlags::CREAT.bits());
    let will_create = flags & (creat | tmpfile_bit) != 0;
    if will_create && how.mode & !S_IALLUGO != 0 || !will_create && how.mode != 0 {
        return Err(Errno::EINVAL);
    }
    let directory = u64::from(ARCH.directory);
    if flags & tmpfile_bit != 0 && (flags & directory == 0 || flags & 3 == 0) {
        return Err(Errno::EINVAL);
    }
    let path = u64::from(OpenFlags::PATH.bits());
    if flags & path != 0 && flags & !(directory | u64::from(ARCH.nofollow) | path) != 0 {
        return Err(Errno::EINVAL);
    }
    let trunc = u64::from(OpenFlags::TRUNC.bits());
    if how.resolve & RESOLVE_CACHED != 0 && flags & (trunc | creat | tmpfile_bit) != 0 {
        return Err(Errno::EAGAIN);
    }
    let res = Resolve {
        no_xdev: how.resolve & RESOLVE_NO_XDEV != 0,
        no_magiclinks: how.resolve & RESOLVE_NO_MAGICLINKS != 0,
        no_symlinks: how.resolve & RESOLVE_NO_SYMLINKS != 0,
        beneath: how.resolve & RESOLVE_BENEATH != 0,
        in_root: how.resolve & RESOLVE_IN_ROOT != 0,
    };
    Ok((how.flags as u32, res))
}

fn openat2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (dirfd, path, how_addr, size) = (a[0], a[1], a[2], a[3]);
    if size < OPEN_HOW_SIZE_VER0 as u64 {
        return Err(Errno::EINVAL);
    }
    if size > um_mm::page_size() {
        return Err(Errno::E2BIG);
    }
    let how = parse_how(&c.read_bytes(how_addr, size as usize)?)?;
    let (mut flags, res) = check_how(&how)?;
    if flags & OpenFlags::PATH.bits() == 0 {
        // force_o_largefile on 64-bit: O_LARGEFILE for everything but O_PATH.
        flags |= ARCH.largefile;
    }
    do_open(c, dirfd, path, flags, how.mode, &res)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("openat2", openat2);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn how(flags: u64, mode: u64, resolve: u64) -> OpenHow {
        OpenHow {
            flags,
            mode,
            resolve,
        }
    }

    #[test]
    fn larger_structs_must_be_zero_past_ours() {
        let mut b = vec![0u8; 32];
        b[0] = 2;
        assert_eq!(parse_how(&b).unwrap(), how(2, 0, 0));
        b[30] = 1;
        assert_eq!(parse_how(&b), Err(Errno::E2BIG));
    }

    #[test]
    fn flag_checks() {
        let creat = u64::from(OpenFlags::CREAT.bits());
        let path = u64::from(OpenFlags::PATH.bits());
        let cloexec = u64::from(OpenFlags::CLOEXEC.bits());
        assert!(check_how(&how(0, 0, 0)).is_ok());
        assert!(check_how(&how(cloexec, 0, 0)).is_ok());
        assert_eq!(check_how(&how(1 << 40, 0, 0)).err(), Some(Errno::EINVAL));
        assert_eq!(check_how(&how(0, 0, 0x40)).err(), Some(Errno::EINVAL));
        assert_eq!(
            check_how(&how(0, 0, RESOLVE_BENEATH | RESOLVE_IN_ROOT)).err(),
            Some(Errno::EINVAL)
        );
        assert_eq!(
            check_how(&how(0, 0o644, 0)).err(),
            Some(Errno::EINVAL),
            "mode without O_CREAT"
        );
        assert!(check_how(&how(creat | 1, 0o644, 0)).is_ok());
        assert_eq!(
            check_how(&how(creat | 1, 0o10000, 0)).err(),
            Some(Errno::EINVAL)
        );
        assert!(check_how(&how(path | cloexec | u64::from(ARCH.nofollow), 0, 0)).is_ok());
        assert_eq!(check_how(&how(path | 1, 0, 0)).err(), Some(Errno::EINVAL));
        assert_eq!(
            check_how(&how(creat | 1, 0o600, RESOLVE_CACHED)).err(),
            Some(Errno::EAGAIN)
        );
        let (_, r) = check_how(&how(0, 0, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS)).unwrap();
        assert!(r.in_root && r.no_symlinks && !r.beneath && r.scoped());
    }
}
