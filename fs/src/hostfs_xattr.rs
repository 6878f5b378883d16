//! The guest's extended attributes on hostfs: host xattrs in a namespace of ours.
//!
//! A guest attribute `NAME` (always `user.*`, `trusted.*` or `security.*`: the syscall layer,
//! `sys/xattr.rs`, refuses every other namespace) is the host attribute `user.um.NAME`
//! ([`PREFIX`]), so the host user needs no privilege for the guest's `trusted.` and
//! `security.` attributes, none of them can collide with the host's own attributes or with
//! [`crate::hostfs_meta::XATTR`] (`user.um.stat`: a guest name never is `stat`), and they
//! move with the file on rename and link, go with it on unlink, survive reboots, and are
//! copied by a host `cp -a` or `rsync -X`. The host's own attributes are not shown.
//!
//! A guest name longer than `XATTR_NAME_MAX - 8` would not fit: it is stored as
//! `user.um.#HASH` (64-bit FNV-1a of the name, 16 hex digits; a guest name never starts
//! with `#`) with the value `NAME NUL VALUE`, and read back by checking the name. Two long
//! names of one file with the same hash would be a collision: the second is refused with
//! `ENOSPC` (not expected to happen).
//!
//! Only host regular files and directories take user xattrs (fs/xattr.c
//! `xattr_permission`): a guest attribute on a host symlink (or a real host device node,
//! FIFO or socket) is `EOPNOTSUPP` to set and absent to read. Device nodes and FIFOs the
//! guest made with mknod are regular host files and take them. Where the host file system
//! takes no user xattrs, the guest's attributes are kept in hostfs's sidecar instead
//! ([`crate::hostfs_meta`], [`crate::hostfs_meta::MetaStore::sidecar_setxattr`]).

use crate::hostfs::host_errno;
use um_os_linux::xattr::{XattrLoc, raw};
use um_uapi::abi::xattr::{XATTR_CREATE, XATTR_NAME_MAX, XATTR_REPLACE};
use um_uapi::{Errno, SysResult};

/// The host prefix of every guest attribute.
pub const PREFIX: &[u8] = b"user.um.";
/// The host prefix of a hashed long name.
const HASHED: &[u8] = b"user.um.#";

/// How a guest name is stored on the host.
#[derive(Debug, PartialEq, Eq)]
enum HostName {
    /// `user.um.NAME`, the value as is.
    Plain(Vec<u8>),
    /// `user.um.#HASH`, the value prefixed with the name and a NUL.
    Hashed(Vec<u8>),
}

/// 64-bit FNV-1a.
fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn host_name(guest: &[u8]) -> HostName {
    if PREFIX.len() + guest.len() <= XATTR_NAME_MAX {
        HostName::Plain([PREFIX, guest].concat())
    } else {
        HostName::Hashed([HASHED, format!("{:016x}", fnv1a(guest)).as_bytes()].concat())
    }
}

/// What a host attribute name is to the guest: `Some(Ok(name))` for a plain one,
/// `Some(Err(()))` for a hashed one (the name is in the value), `None` for the host's own.
fn guest_name(host: &[u8]) -> Option<Result<Vec<u8>, ()>> {
    let rest = host.strip_prefix(PREFIX)?;
    if rest.first() == Some(&b'#') {
        return Some(Err(()));
    }
    // The guest's names always have a namespace (`user.`, ...); `stat` is hostfs's own.
    if !rest.contains(&b'.') {
        return None;
    }
    Some(Ok(rest.to_vec()))
}

/// Splits a hashed value into its name and value.
fn split_hashed(v: &[u8]) -> Option<(&[u8], &[u8])> {
    let nul = v.iter().position(|&b| b == 0)?;
    Some((&v[..nul], &v[nul + 1..]))
}

/// The host's answer for an attribute it does not have: `None`.
fn absent<T>(r: std::io::Result<T>) -> SysResult<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.raw_os_error() == Some(libc::ENODATA) => Ok(None),
        Err(e) => Err(host_errno(e)),
    }
}

/// The guest attribute `name` of the host object at `loc`: `ENODATA` if none.
pub fn get(loc: XattrLoc<'_>, name: &[u8]) -> SysResult<Vec<u8>> {
    match host_name(name) {
        HostName::Plain(h) => absent(raw::get(loc, &h))?.ok_or(Errno::ENODATA),
        HostName::Hashed(h) => {
            let v = absent(raw::get(loc, &h))?.ok_or(Errno::ENODATA)?;
            match split_hashed(&v) {
                Some((n, val)) if n == name => Ok(val.to_vec()),
                _ => Err(Errno::ENODATA),
            }
        }
    }
}

/// Sets the guest attribute `name` (`XATTR_CREATE`/`XATTR_REPLACE` in `flags`). The caller
/// serialises changes of one file.
pub fn set(loc: XattrLoc<'_>, name: &[u8], value: &[u8], flags: u32) -> SysResult<()> {
    let mut host_flags = 0;
    if flags & XATTR_CREATE != 0 {
        host_flags |= libc::XATTR_CREATE;
    }
    if flags & XATTR_REPLACE != 0 {
        host_flags |= libc::XATTR_REPLACE;
    }
    match host_name(name) {
        HostName::Plain(h) => raw::set(loc, &h, value, host_flags).map_err(host_errno),
        HostName::Hashed(h) => {
            let old = absent(raw::get(loc, &h))?;
            match old.as_deref().map(split_hashed) {
                Some(Some((n, _))) if n != name => return Err(Errno::ENOSPC),
                Some(_) if flags & XATTR_CREATE != 0 => return Err(Errno::EEXIST),
                None if flags & XATTR_REPLACE != 0 => return Err(Errno::ENODATA),
                _ => {}
            }
            let v = [name, b"\0", value].concat();
            raw::set(loc, &h, &v, 0).map_err(host_errno)
        }
    }
}

/// Removes the guest attribute `name`: `ENODATA` if none.
pub fn remove(loc: XattrLoc<'_>, name: &[u8]) -> SysResult<()> {
    match host_name(name) {
        HostName::Plain(h) => raw::remove(loc, &h).map_err(host_errno),
        HostName::Hashed(h) => {
            get(loc, name)?;
            raw::remove(loc, &h).map_err(host_errno)
        }
    }
}

/// The guest attribute names of the host object at `loc`.
pub fn list(loc: XattrLoc<'_>) -> SysResult<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    for h in raw::list(loc).map_err(host_errno)? {
        match guest_name(&h) {
            Some(Ok(n)) => out.push(n),
            Some(Err(())) => {
                // Removed in between, or not one of ours after all: not listed.
                if let Ok(Some(v)) = absent(raw::get(loc, &h))
                    && let Some((n, _)) = split_hashed(&v)
                    && host_name(n) == HostName::Hashed(h.clone())
                {
                    out.push(n.to_vec());
                }
            }
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn names() {
        assert_eq!(
            host_name(b"user.a"),
            HostName::Plain(b"user.um.user.a".to_vec())
        );
        let long = [b"trusted.".as_slice(), &[b'n'; 247]].concat();
        assert!(matches!(host_name(&long), HostName::Hashed(h) if h.len() == 9 + 16));
        let fits = [b"user.".as_slice(), &[b'n'; 242]].concat();
        assert!(matches!(host_name(&fits), HostName::Plain(h) if h.len() == 255));
        assert_eq!(guest_name(b"user.um.user.a"), Some(Ok(b"user.a".to_vec())));
        assert_eq!(guest_name(b"user.um.stat"), None);
        assert_eq!(guest_name(b"user.other"), None);
        assert_eq!(guest_name(b"security.selinux"), None);
        assert_eq!(guest_name(b"user.um.#0123"), Some(Err(())));
    }

    #[test]
    fn on_a_host_file() {
        let dir = std::env::temp_dir().join(format!("um-hostfs-xattr-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f"), b"x").unwrap();
        let d = std::fs::File::open(&dir).unwrap();
        let f = XattrLoc::At(d.as_fd(), b"f");
        if raw::set(f, b"user.um.probe", b"", 0).is_err() {
            // A host without user xattrs here: nothing more to check.
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        raw::remove(f, b"user.um.probe").unwrap();
        let long = [b"user.".as_slice(), &[b'l'; 250]].concat();
        for n in [b"user.x".as_slice(), b"trusted.t", &long] {
            assert_eq!(get(f, n), Err(Errno::ENODATA));
            assert_eq!(set(f, n, b"v", XATTR_REPLACE), Err(Errno::ENODATA));
            set(f, n, b"v1", XATTR_CREATE).unwrap();
            assert_eq!(set(f, n, b"v2", XATTR_CREATE), Err(Errno::EEXIST));
            set(f, n, b"v2", XATTR_REPLACE).unwrap();
            assert_eq!(get(f, n).unwrap(), b"v2");
        }
        // hostfs's own metadata and the host's own attributes are not the guest's.
        raw::set(f, b"user.um.stat", b"0:0:0644:file", 0).unwrap();
        raw::set(f, b"user.host", b"h", 0).unwrap();
        let mut l = list(f).unwrap();
        l.sort();
        let mut want = vec![b"user.x".to_vec(), b"trusted.t".to_vec(), long.clone()];
        want.sort();
        assert_eq!(l, want);
        for n in [b"user.x".as_slice(), b"trusted.t", &long] {
            remove(f, n).unwrap();
            assert_eq!(remove(f, n), Err(Errno::ENODATA));
        }
        assert_eq!(list(f).unwrap(), Vec::<Vec<u8>>::new());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
