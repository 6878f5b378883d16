//! Host extended attributes, for hostfs's guest-ownership metadata (`fs/src/hostfs_meta.rs`).
//!
//! An object is named the way hostfs names everything: an open fd ([`XattrLoc::Fd`], through
//! `fgetxattr`/`fsetxattr`), or one component relative to a directory fd ([`XattrLoc::At`]).
//! The host has no `*xattrat()` calls before Linux 6.13, so `At(dir, name)` goes through the
//! path `/proc/self/fd/DIR/NAME` with the `l*xattr` calls: the walk follows the magic link of
//! `DIR` (exactly that directory, however it was reached) and then looks `NAME` up in it
//! without following a symlink, as [`crate::hostdir`] does for chmod. An empty name is the
//! directory itself (`/proc/self/fd/DIR/.`). Names are single components (no `/`, not `..`),
//! so nothing outside the directory can be reached.
//!
//! Linux allows `user.` attributes only on regular files and directories (fs/xattr.c
//! `xattr_permission`: `EPERM` on anything else, even for root), needs write permission on the
//! file to set one, and some file systems refuse them (`EOPNOTSUPP`, e.g. tmpfs before 6.6);
//! callers fall back on those errors.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Where an attribute lives.
#[derive(Clone, Copy, Debug)]
pub enum XattrLoc<'a> {
    /// An open (not `O_PATH`) descriptor of the object.
    Fd(BorrowedFd<'a>),
    /// The entry `name` of the directory `dir` (any fd, `O_PATH` too); `b""` is `dir` itself.
    At(BorrowedFd<'a>, &'a [u8]),
}

/// The `/proc/self/fd/DIR/NAME` path of an `At` location.
fn at_path(dir: BorrowedFd<'_>, name: &[u8]) -> io::Result<CString> {
    if name.contains(&b'/') || name == b".." || name.contains(&0) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut p = format!("/proc/self/fd/{}/", dir.as_raw_fd()).into_bytes();
    p.extend_from_slice(if name.is_empty() { b"." } else { name });
    CString::new(p).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn attr_name(attr: &str) -> io::Result<CString> {
    CString::new(attr).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Reads attribute `attr`: `Ok(None)` if the object has none of that name (`ENODATA`).
pub fn get(loc: XattrLoc<'_>, attr: &str) -> io::Result<Option<Vec<u8>>> {
    let a = attr_name(attr)?;
    let path = match loc {
        XattrLoc::Fd(_) => None,
        XattrLoc::At(dir, name) => Some(at_path(dir, name)?),
    };
    // Our values are small; grow once if the host says the buffer is too small.
    let mut size = 256usize;
    loop {
        let mut buf = vec![0u8; size];
        let r = match (&loc, &path) {
            // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`; names are
            // NUL-terminated.
            (XattrLoc::Fd(fd), _) => unsafe {
                libc::fgetxattr(
                    fd.as_raw_fd(),
                    a.as_ptr(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            },
            // SAFETY: as above.
            (XattrLoc::At(..), Some(p)) => unsafe {
                libc::lgetxattr(p.as_ptr(), a.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
            },
            (XattrLoc::At(..), None) => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
        };
        if r >= 0 {
            buf.truncate(r as usize);
            return Ok(Some(buf));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENODATA) => return Ok(None),
            Some(libc::ERANGE) if size < 65536 => size = 65536,
            _ => return Err(e),
        }
    }
}

/// Sets attribute `attr` to `value` (creating or replacing it).
pub fn set(loc: XattrLoc<'_>, attr: &str, value: &[u8]) -> io::Result<()> {
    let a = attr_name(attr)?;
    let r = match loc {
        // SAFETY: the kernel reads `value.len()` bytes from `value`; the name is NUL-terminated.
        XattrLoc::Fd(fd) => unsafe {
            libc::fsetxattr(
                fd.as_raw_fd(),
                a.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        },
        XattrLoc::At(dir, name) => {
            let p = at_path(dir, name)?;
            // SAFETY: as above; the path is NUL-terminated.
            unsafe {
                libc::lsetxattr(
                    p.as_ptr(),
                    a.as_ptr(),
                    value.as_ptr().cast(),
                    value.len(),
                    0,
                )
            }
        }
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Removes attribute `attr`; not having it is not an error.
pub fn remove(loc: XattrLoc<'_>, attr: &str) -> io::Result<()> {
    let a = attr_name(attr)?;
    let r = match loc {
        // SAFETY: NUL-terminated name; no memory is written.
        XattrLoc::Fd(fd) => unsafe { libc::fremovexattr(fd.as_raw_fd(), a.as_ptr()) },
        XattrLoc::At(dir, name) => {
            let p = at_path(dir, name)?;
            // SAFETY: NUL-terminated path and name; no memory is written.
            unsafe { libc::lremovexattr(p.as_ptr(), a.as_ptr()) }
        }
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENODATA) {
            return Ok(());
        }
        return Err(e);
    }
    Ok(())
}

/// The raw calls for attributes named by bytes (the guest's attributes under hostfs): the
/// host's answer unchanged, errors as the host's errno.
pub mod raw {
    use super::{XattrLoc, at_path};
    use std::ffi::CString;
    use std::io;
    use std::os::fd::AsRawFd;

    fn cname(attr: &[u8]) -> io::Result<CString> {
        CString::new(attr).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
    }

    fn result(r: isize) -> io::Result<usize> {
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }

    /// `fgetxattr`/`lgetxattr` into `buf` (size 0: the value's length).
    fn get_into(loc: XattrLoc<'_>, a: &CString, buf: &mut [u8]) -> io::Result<usize> {
        let r = match loc {
            // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`; the name is
            // NUL-terminated.
            XattrLoc::Fd(fd) => unsafe {
                libc::fgetxattr(
                    fd.as_raw_fd(),
                    a.as_ptr(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            },
            XattrLoc::At(dir, name) => {
                let p = at_path(dir, name)?;
                // SAFETY: as above; the path is NUL-terminated.
                unsafe {
                    libc::lgetxattr(p.as_ptr(), a.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
                }
            }
        };
        result(r)
    }

    /// The value of `attr` (`ENODATA` if none).
    pub fn get(loc: XattrLoc<'_>, attr: &[u8]) -> io::Result<Vec<u8>> {
        let a = cname(attr)?;
        loop {
            let len = get_into(loc, &a, &mut [])?;
            let mut buf = vec![0u8; len.max(1)];
            match get_into(loc, &a, &mut buf) {
                Ok(n) => {
                    buf.truncate(n);
                    return Ok(buf);
                }
                // It grew in between: ask again.
                Err(e) if e.raw_os_error() == Some(libc::ERANGE) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Sets `attr` with `XATTR_CREATE`/`XATTR_REPLACE` `flags`.
    pub fn set(loc: XattrLoc<'_>, attr: &[u8], value: &[u8], flags: i32) -> io::Result<()> {
        let a = cname(attr)?;
        let r = match loc {
            // SAFETY: the kernel reads `value.len()` bytes from `value`; the name is
            // NUL-terminated.
            XattrLoc::Fd(fd) => unsafe {
                libc::fsetxattr(
                    fd.as_raw_fd(),
                    a.as_ptr(),
                    value.as_ptr().cast(),
                    value.len(),
                    flags,
                )
            },
            XattrLoc::At(dir, name) => {
                let p = at_path(dir, name)?;
                // SAFETY: as above; the path is NUL-terminated.
                unsafe {
                    libc::lsetxattr(
                        p.as_ptr(),
                        a.as_ptr(),
                        value.as_ptr().cast(),
                        value.len(),
                        flags,
                    )
                }
            }
        };
        result(r as isize).map(|_| ())
    }

    /// Removes `attr` (`ENODATA` if none).
    pub fn remove(loc: XattrLoc<'_>, attr: &[u8]) -> io::Result<()> {
        let a = cname(attr)?;
        let r = match loc {
            // SAFETY: NUL-terminated name; no memory is written.
            XattrLoc::Fd(fd) => unsafe { libc::fremovexattr(fd.as_raw_fd(), a.as_ptr()) },
            XattrLoc::At(dir, name) => {
                let p = at_path(dir, name)?;
                // SAFETY: NUL-terminated path and name; no memory is written.
                unsafe { libc::lremovexattr(p.as_ptr(), a.as_ptr()) }
            }
        };
        result(r as isize).map(|_| ())
    }

    fn list_into(loc: XattrLoc<'_>, buf: &mut [u8]) -> io::Result<usize> {
        let r = match loc {
            // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
            XattrLoc::Fd(fd) => unsafe {
                libc::flistxattr(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len())
            },
            XattrLoc::At(dir, name) => {
                let p = at_path(dir, name)?;
                // SAFETY: as above; the path is NUL-terminated.
                unsafe { libc::llistxattr(p.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) }
            }
        };
        result(r)
    }

    /// The names of every attribute the host shows.
    pub fn list(loc: XattrLoc<'_>) -> io::Result<Vec<Vec<u8>>> {
        loop {
            let len = list_into(loc, &mut [])?;
            if len == 0 {
                return Ok(Vec::new());
            }
            let mut buf = vec![0u8; len];
            match list_into(loc, &mut buf) {
                Ok(n) => {
                    buf.truncate(n);
                    return Ok(buf
                        .split(|&b| b == 0)
                        .filter(|n| !n.is_empty())
                        .map(<[u8]>::to_vec)
                        .collect());
                }
                Err(e) if e.raw_os_error() == Some(libc::ERANGE) => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn set_get_remove_through_dir_fd_and_fd() {
        let dir = std::env::temp_dir().join(format!("um-xattr-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f"), b"x").unwrap();
        std::os::unix::fs::symlink("f", dir.join("l")).unwrap();
        let d = std::fs::File::open(&dir).unwrap();
        let at = XattrLoc::At(d.as_fd(), b"f");
        match set(at, "user.um.test", b"1:2") {
            // A host without user xattrs here: nothing more to check.
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
            r => {
                r.unwrap();
                assert_eq!(
                    get(at, "user.um.test").unwrap().as_deref(),
                    Some(&b"1:2"[..])
                );
                let f = std::fs::File::open(dir.join("f")).unwrap();
                let byfd = XattrLoc::Fd(f.as_fd());
                assert_eq!(
                    get(byfd, "user.um.test").unwrap().as_deref(),
                    Some(&b"1:2"[..])
                );
                remove(byfd, "user.um.test").unwrap();
                assert_eq!(get(at, "user.um.test").unwrap(), None);
                remove(at, "user.um.test").unwrap();
                // The directory itself.
                let me = XattrLoc::At(d.as_fd(), b"");
                set(me, "user.um.test", b"d").unwrap();
                assert_eq!(get(me, "user.um.test").unwrap().as_deref(), Some(&b"d"[..]));
                // Linux refuses user xattrs on symlinks, and the link is not followed.
                let l = XattrLoc::At(d.as_fd(), b"l");
                assert_eq!(
                    set(l, "user.um.test", b"x").unwrap_err().raw_os_error(),
                    Some(libc::EPERM)
                );
            }
        }
        // The raw calls: flags, listing, strict removal.
        let f = XattrLoc::At(d.as_fd(), b"f");
        if raw::set(f, b"user.um.raw", b"v1", 0).is_ok() {
            assert_eq!(
                raw::set(f, b"user.um.raw", b"v2", libc::XATTR_CREATE)
                    .unwrap_err()
                    .raw_os_error(),
                Some(libc::EEXIST)
            );
            raw::set(f, b"user.um.raw", b"", libc::XATTR_REPLACE).unwrap();
            assert_eq!(raw::get(f, b"user.um.raw").unwrap(), b"");
            assert!(raw::list(f).unwrap().contains(&b"user.um.raw".to_vec()));
            raw::remove(f, b"user.um.raw").unwrap();
            assert_eq!(
                raw::remove(f, b"user.um.raw").unwrap_err().raw_os_error(),
                Some(libc::ENODATA)
            );
            assert_eq!(
                raw::set(f, b"user.um.raw", b"x", libc::XATTR_REPLACE)
                    .unwrap_err()
                    .raw_os_error(),
                Some(libc::ENODATA)
            );
        }
        assert!(get(XattrLoc::At(d.as_fd(), b"../x"), "user.a").is_err());
        assert!(get(XattrLoc::At(d.as_fd(), b"a/b"), "user.a").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
