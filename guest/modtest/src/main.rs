//! Guest test `modtest`: drives the character device of the example module `umchar`
//! (tools/modules/src/umchar.c) from a program, for what a shell cannot do: ioctls with
//! pointers, poll, positional reads, several open files.
//!
//! Usage: `modtest [DEVICE]` (default `/dev/umchar`), with the module loaded. Checks:
//! * `UMCHAR_IOC_OPENS` counts open files (1, then 2 with a second open, 1 after its close);
//! * `UMCHAR_IOC_CLEAR` empties the buffer, `UMCHAR_IOC_GETLEN` reports its length through
//!   copy_to_user into this program's memory; a bad pointer is EFAULT; an unknown command
//!   ENOTTY;
//! * write appends, read and pread return the data from a position, lseek rewinds;
//! * poll: POLLOUT on an empty buffer (no POLLIN), POLLIN|POLLOUT with data.
//!
//! Not a differential test (there is no such device natively): the module gate
//! (tests/tests/modules.rs) runs it under the kernel and expects UM-MODTEST-OK.

use umt::{check_eq, cstr, expect_err, ok, say};

/// `_IO('u', 1)`.
const UMCHAR_IOC_CLEAR: u64 = 0x7501;
/// `_IOR('u', 2, long)`.
const UMCHAR_IOC_GETLEN: u64 = (2 << 30) | (8 << 16) | (0x75 << 8) | 2;
/// `_IOR('u', 3, int)`.
const UMCHAR_IOC_OPENS: u64 = (2 << 30) | (4 << 16) | (0x75 << 8) | 3;

fn open(path: &str) -> i32 {
    let p = cstr(path);
    // SAFETY: a NUL-terminated path.
    ok(
        unsafe { libc::open(p.as_ptr(), libc::O_RDWR) } as i64,
        "open",
    ) as i32
}

fn ioctl_ptr<T>(fd: i32, cmd: u64, out: &mut T) -> i64 {
    // SAFETY: `out` is a live, writable T of the size the command encodes.
    unsafe { libc::ioctl(fd, cmd as _, out as *mut T) as i64 }
}

fn opens(fd: i32) -> i32 {
    let mut n: i32 = -1;
    ok(ioctl_ptr(fd, UMCHAR_IOC_OPENS, &mut n), "ioctl OPENS");
    n
}

fn getlen(fd: i32) -> i64 {
    let mut n: i64 = -1;
    ok(ioctl_ptr(fd, UMCHAR_IOC_GETLEN, &mut n), "ioctl GETLEN");
    n
}

fn poll(fd: i32) -> i16 {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN | libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one pollfd.
    ok(unsafe { libc::poll(&mut p, 1, 0) } as i64, "poll");
    p.revents
}

fn main() {
    umt::init("modtest");
    let dev = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/dev/umchar".into());
    let fd = open(&dev);
    check_eq(opens(fd), 1, "open count with one open file");
    let fd2 = open(&dev);
    check_eq(opens(fd), 2, "open count with two open files");
    umt::close(fd2);
    check_eq(opens(fd), 1, "open count after closing one");
    say("open counts ok");

    // SAFETY: an ioctl without an argument.
    ok(
        unsafe { libc::ioctl(fd, UMCHAR_IOC_CLEAR as _) } as i64,
        "ioctl CLEAR",
    );
    check_eq(getlen(fd), 0, "length after CLEAR");
    check_eq(poll(fd), libc::POLLOUT, "poll on an empty buffer");
    umt::write_all(fd, b"hello, module", "write");
    check_eq(getlen(fd), 13, "length after write");
    check_eq(
        poll(fd),
        libc::POLLIN | libc::POLLOUT,
        "poll with data in the buffer",
    );
    say("ioctl and poll ok");

    let mut buf = [0u8; 64];
    // SAFETY: a live buffer of 64 bytes.
    let n = ok(
        unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 7) } as i64,
        "pread",
    );
    check_eq(&buf[..n as usize], b"module".as_slice(), "pread at 7");
    // SAFETY: lseek touches no memory.
    ok(
        unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } as i64,
        "lseek",
    );
    let n = ok(umt::read_raw(fd, &mut buf), "read");
    check_eq(
        &buf[..n as usize],
        b"hello, module".as_slice(),
        "read from 0",
    );
    check_eq(umt::read_raw(fd, &mut buf), 0, "read at the end");
    say("read and write ok");

    // A pointer the guest cannot write: the module's copy_to_user fails, it returns EFAULT.
    // SAFETY: the kernel checks the pointer; nothing is written here.
    let r =
        unsafe { libc::ioctl(fd, UMCHAR_IOC_GETLEN as _, std::ptr::dangling_mut::<i64>()) } as i64;
    expect_err(r, libc::EFAULT, "ioctl GETLEN with a bad pointer");
    // SAFETY: an unknown command without an argument.
    let r = unsafe { libc::ioctl(fd, 0x75ff as _) } as i64;
    expect_err(r, libc::ENOTTY, "unknown ioctl");
    say("ioctl errors ok");
    umt::close(fd);
    umt::done("modtest");
}
