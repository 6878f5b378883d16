//! Host calls of the block drivers (`um-drivers` `block`): vectored positional I/O on an image
//! file (`preadv`/`pwritev`, one host call for a run of guest buffers), and the host lock that
//! keeps two kernels off one image (UML's `os_lock_file`, here an open-file-description lock,
//! `F_OFD_SETLK`, so that closing some other descriptor of the same file in this process, as
//! hostfs may, does not drop it the way a classic POSIX record lock would be dropped).
//!
//! Neighbours: [`crate::hostdir`] (`fsync`, `fallocate`, used for flush and discard).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// At most this many buffers go to one host call (`IOV_MAX`).
const IOV_MAX: usize = 1024;

fn retry(mut call: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        let r = call();
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// `preadv(fd, bufs, off)`: fills `bufs` in order from `off`; returns the bytes read (short
/// only at the end of the file). Loops over short reads and over `IOV_MAX`.
pub fn preadv_all(fd: BorrowedFd<'_>, bufs: &mut [&mut [u8]], mut off: u64) -> io::Result<usize> {
    let mut total = 0;
    // (index of the first unfinished buffer, bytes of it already filled)
    let (mut i, mut skip) = (0, 0usize);
    while i < bufs.len() {
        let iov: Vec<libc::iovec> = bufs[i..]
            .iter_mut()
            .take(IOV_MAX)
            .enumerate()
            .map(|(k, b)| {
                let s = if k == 0 { skip } else { 0 };
                libc::iovec {
                    iov_base: b[s..].as_mut_ptr().cast(),
                    iov_len: b.len() - s,
                }
            })
            .collect();
        // SAFETY: each iovec points into a distinct live `&mut [u8]` of `bufs` and covers at
        // most its remaining length; preadv writes only inside them.
        let n = retry(|| unsafe {
            libc::preadv(
                fd.as_raw_fd(),
                iov.as_ptr(),
                iov.len() as libc::c_int,
                off as libc::off_t,
            )
        })?;
        if n == 0 {
            break;
        }
        total += n;
        off += n as u64;
        let mut left = n;
        while left > 0 && i < bufs.len() {
            let room = bufs[i].len() - skip;
            if left >= room {
                left -= room;
                i += 1;
                skip = 0;
            } else {
                skip += left;
                left = 0;
            }
        }
        while i < bufs.len() && bufs[i].len() == skip {
            i += 1;
            skip = 0;
        }
    }
    Ok(total)
}

/// `pwritev(fd, bufs, off)`: writes all of `bufs` in order from `off` (loops over short writes).
pub fn pwritev_all(fd: BorrowedFd<'_>, bufs: &[&[u8]], mut off: u64) -> io::Result<()> {
    let (mut i, mut skip) = (0, 0usize);
    while i < bufs.len() {
        let iov: Vec<libc::iovec> = bufs[i..]
            .iter()
            .take(IOV_MAX)
            .enumerate()
            .map(|(k, b)| {
                let s = if k == 0 { skip } else { 0 };
                libc::iovec {
                    iov_base: b[s..].as_ptr() as *mut libc::c_void,
                    iov_len: b.len() - s,
                }
            })
            .collect();
        // SAFETY: each iovec points into a live `&[u8]` of `bufs` within its length; pwritev
        // only reads them.
        let n = retry(|| unsafe {
            libc::pwritev(
                fd.as_raw_fd(),
                iov.as_ptr(),
                iov.len() as libc::c_int,
                off as libc::off_t,
            )
        })?;
        if n == 0 && iov.iter().any(|v| v.iov_len > 0) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        off += n as u64;
        let mut left = n;
        while i < bufs.len() && (left > 0 || bufs[i].len() == skip) {
            let room = bufs[i].len() - skip;
            if left >= room {
                left -= room;
                i += 1;
                skip = 0;
            } else {
                skip += left;
                left = 0;
            }
        }
    }
    Ok(())
}

/// Takes a whole-file lock on `fd` without waiting: a write lock when `write`, else a read
/// lock (UML `os_lock_file`). `EAGAIN`/`EACCES` when another holder conflicts.
pub fn lock_file(fd: BorrowedFd<'_>, write: bool) -> io::Result<()> {
    // SAFETY: an all-zero flock is a valid value of the plain C struct.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = if write { libc::F_WRLCK } else { libc::F_RDLCK } as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = 0;
    fl.l_len = 0;
    // SAFETY: F_OFD_SETLK reads the flock we pass and keeps no pointer to it.
    let r = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_OFD_SETLK, &fl) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn vectored_round_trip_and_lock() {
        let dir = std::env::temp_dir().join(format!("um-blockio-{}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&dir)
            .unwrap();
        pwritev_all(f.as_fd(), &[b"abc", b"", b"defg"], 10).unwrap();
        let (mut a, mut b) = ([0u8; 2], [0u8; 8]);
        let n = preadv_all(f.as_fd(), &mut [&mut a, &mut b], 10).unwrap();
        assert_eq!(n, 7);
        assert_eq!(&a, b"ab");
        assert_eq!(&b[..5], b"cdefg");
        lock_file(f.as_fd(), true).unwrap();
        let g = std::fs::File::open(&dir).unwrap();
        // A second description of the same file conflicts, even in this process.
        assert!(lock_file(g.as_fd(), false).is_err());
        drop(f);
        lock_file(g.as_fd(), false).unwrap();
        let _ = std::fs::remove_file(&dir);
    }
}
