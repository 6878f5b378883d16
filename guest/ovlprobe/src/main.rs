//! Guest test helper `ovlprobe` for the overlayfs gate (tests/scripts/overlay-gate.sh): the
//! calls busybox has no tool for, each answer printed raw (`ok` or the errno name), the same
//! natively and under the user-mode kernel.
//!
//! * `ovlprobe rename OLD NEW`: rename(2) (`EXDEV` for a lower directory on an overlay).
//! * `ovlprobe getxattr PATH NAME`: the value, or the errno name.
//! * `ovlprobe setxattr PATH NAME VALUE`: `ok` or the errno name.
//! * `ovlprobe mmap PATH`: maps the file shared, read-only, prints its first line; then opens
//!   it read-write, maps it shared and writable, writes `MAPPED` over its first six bytes,
//!   msyncs, unmaps, and prints the first line read back with read(2).

use std::ffi::CString;
use umt::{cstr, ename, errno};

/// One answer line, bare (the script puts it in its own line).
fn say(s: impl AsRef<str>) {
    println!("{}", s.as_ref());
}

fn res(r: i64) -> String {
    if r < 0 { ename(errno()) } else { "ok".into() }
}

fn first_line(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == b'\n').unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

fn size_of(fd: i32) -> usize {
    // SAFETY: an all-zero stat is a valid out buffer for fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open; st is a valid out pointer.
    if unsafe { libc::fstat(fd, &mut st) } < 0 {
        return 0;
    }
    st.st_size as usize
}

fn mmap_probe(p: &CString) {
    // SAFETY: a valid C string.
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDONLY) };
    if fd < 0 {
        say(format!("MMAP-RO {}", ename(errno())));
        return;
    }
    let len = size_of(fd).max(1);
    // SAFETY: a new mapping of len bytes of an open file; checked for MAP_FAILED.
    let m = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if m == libc::MAP_FAILED {
        say(format!("MMAP-RO {}", ename(errno())));
    } else {
        // SAFETY: the mapping is len bytes long and readable.
        let b = unsafe { std::slice::from_raw_parts(m as *const u8, len) };
        say(format!("MMAP-RO {}", first_line(b)));
        // SAFETY: unmapping what was mapped above.
        unsafe { libc::munmap(m, len) };
    }
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    // SAFETY: a valid C string.
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDWR) };
    if fd < 0 {
        say(format!("MMAP-RW {}", ename(errno())));
        return;
    }
    let len = size_of(fd);
    if len < 6 {
        say("MMAP-RW short");
        return;
    }
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: as above, now writable and shared.
    let m = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
    if m == libc::MAP_FAILED {
        say(format!("MMAP-RW {}", ename(errno())));
        return;
    }
    // SAFETY: the mapping is at least 6 bytes long and writable.
    unsafe {
        std::ptr::copy_nonoverlapping(b"MAPPED".as_ptr(), m as *mut u8, 6);
        libc::msync(m, len, libc::MS_SYNC);
        libc::munmap(m, len);
    }
    let mut buf = vec![0u8; len];
    // SAFETY: buf is len bytes long.
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), len, 0) };
    say(format!("MMAP-RW {}", first_line(&buf[..n.max(0) as usize])));
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let arg = |i: usize| cstr(a.get(i).map(String::as_str).unwrap_or(""));
    match a.get(1).map(String::as_str) {
        Some("rename") => {
            let (o, n) = (arg(2), arg(3));
            // SAFETY: valid C strings.
            say(res(unsafe { libc::rename(o.as_ptr(), n.as_ptr()) } as i64));
        }
        Some("getxattr") => {
            let (p, n) = (arg(2), arg(3));
            let mut buf = [0u8; 256];
            // SAFETY: valid C strings; buf is 256 bytes.
            let r = unsafe {
                libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
            };
            if r < 0 {
                say(ename(errno()));
            } else {
                say(String::from_utf8_lossy(&buf[..r as usize]));
            }
        }
        Some("setxattr") => {
            let (p, n, v) = (arg(2), arg(3), a.get(4).cloned().unwrap_or_default());
            // SAFETY: valid C strings; v is live for its length.
            let r =
                unsafe { libc::setxattr(p.as_ptr(), n.as_ptr(), v.as_ptr().cast(), v.len(), 0) };
            say(res(r as i64));
        }
        Some("mmap") => mmap_probe(&arg(2)),
        _ => say("usage: ovlprobe rename|getxattr|setxattr|mmap ..."),
    }
}
