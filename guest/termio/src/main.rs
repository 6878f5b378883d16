//! Differential test of the terminal ioctls (issue 24 item 5; drivers/tty/tty_ioctl.c,
//! drivers/tty/tty_io.c, ioctl_tty(2)) on a pty pair from `/dev/ptmx` (the slave opened with
//! `TIOCGPTPEER`), natively and in the guest.
//!
//! Checked: the old `struct termio` (`TCGETA`; `TCSETA`, `TCSETAW`, `TCSETAF` change only the
//! low 16 bits of the flags and the first 8 control characters, `TCSETAF` flushes input; a pty
//! keeps `CS8` and no parity), the locked termios (`TIOCGLCKTRMIOS`; `TIOCSLCKTRMIOS` for root
//! only, after which locked bits and characters survive `TCSETS` and `TCSETA`), the soft
//! carrier (`TIOCGSOFTCAR`/`TIOCSSOFTCAR`), breaks (`TIOCSBRK`, `TIOCCBRK`, `TCSBRK`,
//! `TCSBRKP`), `TIOCGDEV`, the modem and serial ioctls a pty does not have (`ENOTTY`),
//! exclusive mode, `TIOCSTI` (root; refused to others), flow control and flush arguments,
//! `TIOCGSID`/`TIOCGPGRP` with and without a controlling tty, `FIONBIO`, the queue sizes, the
//! line discipline, the window size, `TCGETS2` speeds, bad pointers and a non-tty.
//! `termio WORKDIR [unpriv]`: `unpriv` (the gate passes it when the native run is not root)
//! leaves out what needs root.

use umt::{ename, errno, say};

const TIOCGPTPEER: u32 = 0x5441;
const TIOCGDEV: u32 = 0x8004_5432;
const TIOCGLCKTRMIOS: u32 = 0x5456;
const TIOCSLCKTRMIOS: u32 = 0x5457;
const TIOCGEXCL: u32 = 0x8004_5440;
const TIOCGICOUNT: u32 = 0x545D;
const TIOCMIWAIT: u32 = 0x545C;
const TCGETS2: u32 = 0x802c_542a;

/// The kernel's `struct termios` (36 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct KTermios {
    iflag: u32,
    oflag: u32,
    cflag: u32,
    lflag: u32,
    line: u8,
    cc: [u8; 19],
}

/// `struct termio` (18 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Termio {
    iflag: u16,
    oflag: u16,
    cflag: u16,
    lflag: u16,
    line: u8,
    cc: [u8; 8],
}

fn res(r: i32) -> String {
    if r < 0 {
        ename(errno())
    } else {
        format!("ok {r}")
    }
}

/// An ioctl number, whatever integer type the libc gives it.
trait Cmd: Copy {
    fn n(self) -> u32;
}

impl Cmd for i32 {
    fn n(self) -> u32 {
        self as u32
    }
}

impl Cmd for u32 {
    fn n(self) -> u32 {
        self
    }
}

impl Cmd for u64 {
    fn n(self) -> u32 {
        self as u32
    }
}

fn ioctl_p<T>(fd: i32, cmd: impl Cmd, p: *mut T) -> i32 {
    // SAFETY: the callers pass a pointer to a live value of the size the command uses (or a
    // deliberately bad one, which the kernel refuses with EFAULT).
    unsafe { libc::ioctl(fd, cmd.n() as _, p) }
}

fn ioctl_v(fd: i32, cmd: impl Cmd, v: libc::c_ulong) -> i32 {
    // SAFETY: commands that take an integer argument, no memory.
    unsafe { libc::ioctl(fd, cmd.n() as _, v) }
}

fn tcgets(fd: i32) -> KTermios {
    let mut t = KTermios::default();
    umt::ok(ioctl_p(fd, libc::TCGETS, &mut t) as i64, "TCGETS");
    t
}

fn tcsets(fd: i32, t: &KTermios) {
    let mut t = *t;
    umt::ok(ioctl_p(fd, libc::TCSETS, &mut t) as i64, "TCSETS");
}

fn show_termios(t: &KTermios) -> String {
    format!(
        "iflag {:#x} oflag {:#x} cflag {:#x} lflag {:#x} line {} cc {:?}",
        t.iflag, t.oflag, t.cflag, t.lflag, t.line, t.cc
    )
}

fn show_termio(r: i32, t: &Termio) -> String {
    if r < 0 {
        return res(r);
    }
    format!(
        "ok iflag {:#x} oflag {:#x} cflag {:#x} lflag {:#x} line {} cc {:?}",
        t.iflag, t.oflag, t.cflag, t.lflag, t.line, t.cc
    )
}

fn int_of(fd: i32, cmd: impl Cmd) -> String {
    let mut v: i32 = -7;
    let r = ioctl_p(fd, cmd, &mut v);
    if r < 0 { res(r) } else { format!("ok {v}") }
}

fn inq(fd: i32) -> String {
    int_of(fd, libc::FIONREAD)
}

/// FIONREAD once it reaches `want` (at most a second).
fn wait_inq(fd: i32, want: i32) -> String {
    for _ in 0..200 {
        if inq(fd) == format!("ok {want}") {
            break;
        }
        umt::sleep_ms(5);
    }
    inq(fd)
}

/// A pty pair: (master, slave).
fn open_pty() -> (i32, i32) {
    let p = umt::cstr("/dev/ptmx");
    // SAFETY: valid C string.
    let m = unsafe { libc::open(p.as_ptr(), libc::O_RDWR | libc::O_NOCTTY) };
    umt::ok(m as i64, "open /dev/ptmx");
    let mut unlock: i32 = 0;
    umt::ok(
        ioctl_p(m, libc::TIOCSPTLCK, &mut unlock) as i64,
        "TIOCSPTLCK",
    );
    let s = ioctl_v(
        m,
        TIOCGPTPEER,
        (libc::O_RDWR | libc::O_NOCTTY) as libc::c_ulong,
    );
    umt::ok(s as i64, "TIOCGPTPEER");
    (m, s)
}

fn write_bytes(fd: i32, b: &[u8]) {
    umt::write_all(fd, b, "write");
}

fn main() {
    umt::init("termio");
    let _dir = umt::workdir();
    let unpriv = std::env::args().any(|a| a == "unpriv");
    // SAFETY: plain geteuid.
    let root = !unpriv && unsafe { libc::geteuid() } == 0;
    let (m, s) = open_pty();
    let orig = tcgets(s);
    say(format!("default: {}", show_termios(&orig)));

    // struct termio.
    let mut o = Termio::default();
    say(format!(
        "TCGETA slave: {}",
        show_termio(ioctl_p(s, libc::TCGETA, &mut o), &o)
    ));
    let mut om = Termio::default();
    say(format!(
        "TCGETA master: {}",
        show_termio(ioctl_p(m, libc::TCGETA, &mut om), &om)
    ));
    // A high bit termio cannot carry: set through TCSETS, kept by TCSETA.
    let mut t = orig;
    t.cflag |= libc::CRTSCTS;
    t.cc[libc::VSTART] = 0x01;
    tcsets(s, &t);
    let mut n = o;
    n.lflag &= !((libc::ICANON | libc::ECHO) as u16);
    n.cc[libc::VMIN] = 0;
    n.cc[libc::VTIME] = 5;
    n.cflag = (n.cflag & !(libc::CSIZE as u16)) | (libc::CS7 | libc::PARENB) as u16;
    say(format!("TCSETA: {}", res(ioctl_p(s, libc::TCSETA, &mut n))));
    say(format!("after TCSETA: {}", show_termios(&tcgets(s))));
    let mut o2 = Termio::default();
    say(format!(
        "TCGETA after: {}",
        show_termio(ioctl_p(s, libc::TCGETA, &mut o2), &o2)
    ));
    n.lflag |= libc::ECHO as u16;
    say(format!(
        "TCSETAW via master: {}",
        res(ioctl_p(m, libc::TCSETAW, &mut n))
    ));
    say(format!("after TCSETAW: {}", show_termios(&tcgets(s))));
    write_bytes(m, b"abc");
    // The master's writes reach the slave's line discipline asynchronously in Linux.
    say(format!("slave input before TCSETAF: {}", wait_inq(s, 3)));
    n.lflag |= (libc::ICANON | libc::ECHO) as u16;
    say(format!(
        "TCSETAF: {}",
        res(ioctl_p(s, libc::TCSETAF, &mut n))
    ));
    say(format!("slave input after TCSETAF: {}", inq(s)));
    // Echo of "abc" went to the master before the flush: drain it.
    let mut junk = [0u8; 64];
    // SAFETY: plain fcntl calls.
    unsafe { libc::fcntl(m, libc::F_SETFL, libc::O_NONBLOCK) };
    while umt::read_raw(m, &mut junk) > 0 {}
    // SAFETY: as above.
    unsafe { libc::fcntl(m, libc::F_SETFL, 0) };
    say(format!(
        "TCGETA bad pointer: {}",
        res(ioctl_p(s, libc::TCGETA, 8usize as *mut Termio))
    ));
    say(format!(
        "TCSETA bad pointer: {}",
        res(ioctl_p(s, libc::TCSETA, 8usize as *mut Termio))
    ));
    tcsets(s, &orig);

    // Locked termios.
    let mut l = KTermios::default();
    let r = ioctl_p(s, TIOCGLCKTRMIOS, &mut l);
    say(format!("TIOCGLCKTRMIOS: {} {}", res(r), show_termios(&l)));
    let mut lm = KTermios::default();
    let r = ioctl_p(m, TIOCGLCKTRMIOS, &mut lm);
    say(format!(
        "TIOCGLCKTRMIOS master: {} {}",
        res(r),
        show_termios(&lm)
    ));
    if root {
        let mut lock = KTermios {
            lflag: libc::ECHO,
            cflag: libc::CLOCAL,
            ..Default::default()
        };
        lock.cc[libc::VINTR] = 1;
        say(format!(
            "TIOCSLCKTRMIOS: {}",
            res(ioctl_p(s, TIOCSLCKTRMIOS, &mut lock))
        ));
        let mut back = KTermios::default();
        ioctl_p(m, TIOCGLCKTRMIOS, &mut back);
        say(format!("locked via master: {}", show_termios(&back)));
        let mut t = orig;
        t.lflag &= !(libc::ECHO | libc::ICANON);
        t.cflag |= libc::CLOCAL;
        t.cc[libc::VINTR] = 0x05;
        t.cc[libc::VQUIT] = 0x06;
        tcsets(s, &t);
        say(format!("TCSETS with locks: {}", show_termios(&tcgets(s))));
        let mut a = Termio::default();
        ioctl_p(s, libc::TCGETA, &mut a);
        a.lflag |= libc::ECHO as u16;
        a.cc[libc::VINTR] = 0x07;
        ioctl_p(s, libc::TCSETA, &mut a);
        say(format!("TCSETA with locks: {}", show_termios(&tcgets(s))));
        let pid = umt::fork();
        if pid == 0 {
            // SAFETY: plain id calls in the child.
            unsafe {
                if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                    umt::fail("setuid 65534");
                }
            }
            let mut z = KTermios::default();
            say(format!(
                "user TIOCSLCKTRMIOS: {}",
                res(ioctl_p(s, TIOCSLCKTRMIOS, &mut z))
            ));
            let mut g = KTermios::default();
            let r = ioctl_p(s, TIOCGLCKTRMIOS, &mut g);
            say(format!(
                "user TIOCGLCKTRMIOS: {} lflag {:#x}",
                res(r),
                g.lflag
            ));
            let c = b'q';
            say(format!(
                "user TIOCSTI (not the controlling tty): {}",
                res(ioctl_p(s, libc::TIOCSTI, &c as *const u8 as *mut u8))
            ));
            // Redirecting the console is for CAP_SYS_ADMIN only (root is not tried: natively
            // that would redirect the host's console).
            say(format!(
                "user TIOCCONS: {}",
                res(ioctl_v(s, libc::TIOCCONS, 0))
            ));
            umt::exit_now(0);
        }
        let st = umt::waitpid(pid, 0);
        umt::check(
            libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
            "user child",
        );
        let mut z = KTermios::default();
        say(format!(
            "unlock: {}",
            res(ioctl_p(s, TIOCSLCKTRMIOS, &mut z))
        ));
        tcsets(s, &orig);
        say(format!("restored: {}", show_termios(&tcgets(s))));
        // TIOCSTI as root: the byte is the slave's input.
        let c = b'z';
        say(format!(
            "TIOCSTI: {}",
            res(ioctl_p(s, libc::TIOCSTI, &c as *const u8 as *mut u8))
        ));
        let mut raw = orig;
        raw.lflag &= !libc::ICANON;
        tcsets(s, &raw);
        say(format!("input after TIOCSTI: {}", inq(s)));
        let mut b = [0u8; 4];
        let r = umt::read_raw(s, &mut b);
        say(format!(
            "read after TIOCSTI: {r} {:?}",
            &b[..r.max(0) as usize]
        ));
        tcsets(s, &orig);
        // The echo of the byte reaches the master asynchronously in Linux: wait for it, then
        // drain the master.
        wait_inq(m, 1);
        while {
            // SAFETY: plain fcntl calls.
            unsafe { libc::fcntl(m, libc::F_SETFL, libc::O_NONBLOCK) };
            umt::read_raw(m, &mut junk) > 0
        } {}
        // SAFETY: as above.
        unsafe { libc::fcntl(m, libc::F_SETFL, 0) };
        // On the master, TIOCSTI is input of the master's own tty: the master reads it.
        let c2 = b'w';
        say(format!(
            "TIOCSTI master: {}",
            res(ioctl_p(m, libc::TIOCSTI, &c2 as *const u8 as *mut u8))
        ));
        say(format!("master input after TIOCSTI: {}", wait_inq(m, 1)));
        let mut b1 = [0u8; 4];
        let r = umt::read_raw(m, &mut b1);
        say(format!(
            "master read after TIOCSTI: {r} {:?}",
            &b1[..r.max(0) as usize]
        ));
    }

    // Soft carrier.
    say(format!("TIOCGSOFTCAR: {}", int_of(s, libc::TIOCGSOFTCAR)));
    let mut one: i32 = 1;
    say(format!(
        "TIOCSSOFTCAR 1: {}",
        res(ioctl_p(s, libc::TIOCSSOFTCAR, &mut one))
    ));
    say(format!(
        "after TIOCSSOFTCAR 1: CLOCAL {} softcar {}",
        tcgets(s).cflag & libc::CLOCAL != 0,
        int_of(m, libc::TIOCGSOFTCAR)
    ));
    let mut zero: i32 = 0;
    say(format!(
        "TIOCSSOFTCAR 0 via master: {}",
        res(ioctl_p(m, libc::TIOCSSOFTCAR, &mut zero))
    ));
    say(format!(
        "after TIOCSSOFTCAR 0: CLOCAL {}",
        tcgets(s).cflag & libc::CLOCAL != 0
    ));

    // Breaks.
    for (what, cmd, v) in [
        ("TIOCSBRK", libc::TIOCSBRK as u32, 0),
        ("TIOCCBRK", libc::TIOCCBRK as u32, 0),
        ("TCSBRK 1", libc::TCSBRK as u32, 1),
        ("TCSBRKP 0", libc::TCSBRKP as u32, 0),
    ] {
        say(format!(
            "{what}: slave {} master {}",
            res(ioctl_v(s, cmd, v)),
            res(ioctl_v(m, cmd, v))
        ));
    }

    // Device numbers: the slave's, from either side.
    let mut ptn: u32 = 0;
    umt::ok(ioctl_p(m, libc::TIOCGPTN, &mut ptn) as i64, "TIOCGPTN");
    for (side, fd) in [("slave", s), ("master", m)] {
        let mut dev: u32 = 0;
        let r = ioctl_p(fd, TIOCGDEV, &mut dev);
        let (ma, mi) = ((dev >> 8) & 0xfff, (dev & 0xff) | ((dev >> 12) & 0xfff00));
        say(format!(
            "TIOCGDEV {side}: {} major {ma} minor is the pty number {}",
            res(r),
            mi == ptn
        ));
    }

    // What a pty does not have.
    let mut buf = [0u8; 128];
    for (what, cmd) in [
        ("TIOCMGET", libc::TIOCMGET as u32),
        ("TIOCMSET", libc::TIOCMSET as u32),
        ("TIOCMBIS", libc::TIOCMBIS as u32),
        ("TIOCMBIC", libc::TIOCMBIC as u32),
        ("TIOCGICOUNT", TIOCGICOUNT),
        ("TIOCGSERIAL", libc::TIOCGSERIAL as u32),
        ("TIOCLINUX", libc::TIOCLINUX as u32),
    ] {
        say(format!(
            "{what}: slave {} master {}",
            res(ioctl_p(s, cmd, buf.as_mut_ptr())),
            res(ioctl_p(m, cmd, buf.as_mut_ptr()))
        ));
    }
    say(format!("TIOCMIWAIT: {}", res(ioctl_v(s, TIOCMIWAIT, 0))));

    // Exclusive mode.
    say(format!("TIOCGEXCL: {}", int_of(s, TIOCGEXCL)));
    say(format!("TIOCEXCL: {}", res(ioctl_v(s, libc::TIOCEXCL, 0))));
    say(format!("TIOCGEXCL after: {}", int_of(s, TIOCGEXCL)));
    say(format!("TIOCNXCL: {}", res(ioctl_v(s, libc::TIOCNXCL, 0))));
    say(format!("TIOCGEXCL cleared: {}", int_of(s, TIOCGEXCL)));

    // The master's exclusive flag is its own (each side is a tty of its own in Linux).
    say(format!(
        "TIOCEXCL master: {}",
        res(ioctl_v(m, libc::TIOCEXCL, 0))
    ));
    say(format!(
        "TIOCGEXCL after master's: master {} slave {}",
        int_of(m, TIOCGEXCL),
        int_of(s, TIOCGEXCL)
    ));
    say(format!(
        "TIOCNXCL master: {}",
        res(ioctl_v(m, libc::TIOCNXCL, 0))
    ));
    say(format!(
        "TIOCGEXCL master cleared: {}",
        int_of(m, TIOCGEXCL)
    ));

    // Flow control and flushing: bad arguments.
    say(format!(
        "TCXONC TCOOFF: {}",
        res(ioctl_v(s, libc::TCXONC, 0))
    ));
    say(format!(
        "TCXONC TCOON: {}",
        res(ioctl_v(s, libc::TCXONC, 1))
    ));
    say(format!("TCXONC 9: {}", res(ioctl_v(s, libc::TCXONC, 9))));
    say(format!("TCFLSH 9: {}", res(ioctl_v(s, libc::TCFLSH, 9))));
    say(format!(
        "TCFLSH TCIOFLUSH: {}",
        res(ioctl_v(s, libc::TCFLSH, 2))
    ));

    // Job-control ids without and with a controlling tty.
    say(format!("TIOCGSID no ctty: {}", int_of(s, libc::TIOCGSID)));
    say(format!("TIOCGPGRP no ctty: {}", int_of(s, libc::TIOCGPGRP)));
    say(format!(
        "TIOCGSID master no session: {}",
        int_of(m, libc::TIOCGSID)
    ));
    let pid = umt::fork();
    if pid == 0 {
        // SAFETY: plain calls in the child.
        unsafe {
            if libc::setsid() < 0 {
                umt::fail("setsid");
            }
        }
        say(format!(
            "child TIOCSCTTY: {}",
            res(ioctl_v(s, libc::TIOCSCTTY, 0))
        ));
        let mut v: i32 = 0;
        // SAFETY: plain getsid/getpgrp.
        let (sid, pg) = unsafe { (libc::getsid(0), libc::getpgrp()) };
        let r = ioctl_p(s, libc::TIOCGSID, &mut v);
        say(format!(
            "child TIOCGSID: {} is the session {}",
            res(r),
            v == sid
        ));
        let r = ioctl_p(s, libc::TIOCGPGRP, &mut v);
        say(format!(
            "child TIOCGPGRP: {} is the group {}",
            res(r),
            v == pg
        ));
        let r = ioctl_p(m, libc::TIOCGSID, &mut v);
        say(format!(
            "child TIOCGSID via master: {} is the session {}",
            res(r),
            v == sid
        ));
        let r = ioctl_p(m, libc::TIOCGPGRP, &mut v);
        say(format!(
            "child TIOCGPGRP via master: {} is the group {}",
            res(r),
            v == pg
        ));
        // The leader giving the tty up sends SIGHUP to the foreground group: itself.
        // SAFETY: SIG_IGN for SIGHUP.
        unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
        say(format!(
            "child TIOCNOTTY: {}",
            res(ioctl_v(s, libc::TIOCNOTTY, 0))
        ));
        say(format!(
            "child TIOCGSID after TIOCNOTTY: {}",
            int_of(s, libc::TIOCGSID)
        ));
        umt::exit_now(0);
    }
    let st = umt::waitpid(pid, 0);
    umt::check(
        libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
        "session child",
    );

    // Non-blocking reads and the queues.
    let mut on: i32 = 1;
    say(format!(
        "FIONBIO 1: {}",
        res(ioctl_p(s, libc::FIONBIO, &mut on))
    ));
    let r = umt::read_raw(s, &mut buf);
    say(format!(
        "read empty non-blocking: {}",
        if r < 0 {
            ename(errno())
        } else {
            format!("{r}")
        }
    ));
    let mut off: i32 = 0;
    say(format!(
        "FIONBIO 0: {}",
        res(ioctl_p(s, libc::FIONBIO, &mut off))
    ));
    write_bytes(s, b"xy\n");
    say(format!(
        "master input after slave wrote xy\\n: {}",
        wait_inq(m, 4)
    ));
    say(format!("TIOCOUTQ slave: {}", int_of(s, libc::TIOCOUTQ)));
    say(format!(
        "TCFLSH TCIFLUSH master: {}",
        res(ioctl_v(m, libc::TCFLSH, 0))
    ));
    say(format!("master input after flush: {}", inq(m)));
    write_bytes(m, b"line\n");
    say(format!(
        "slave input after master wrote line: {}",
        wait_inq(s, 5)
    ));
    say(format!("TIOCOUTQ master: {}", int_of(m, libc::TIOCOUTQ)));
    ioctl_v(s, libc::TCFLSH, 0);
    while {
        // SAFETY: plain fcntl calls.
        unsafe { libc::fcntl(m, libc::F_SETFL, libc::O_NONBLOCK) };
        umt::read_raw(m, &mut junk) > 0
    } {}

    // Line discipline, window size, speeds.
    say(format!("TIOCGETD: {}", int_of(s, libc::TIOCGETD)));
    let mut ld: i32 = 0;
    say(format!(
        "TIOCSETD 0: {}",
        res(ioctl_p(s, libc::TIOCSETD, &mut ld))
    ));
    let mut bad: i32 = 99;
    say(format!(
        "TIOCSETD 99: {}",
        res(ioctl_p(s, libc::TIOCSETD, &mut bad))
    ));
    let mut ws = libc::winsize {
        ws_row: 33,
        ws_col: 101,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    say(format!(
        "TIOCSWINSZ master: {}",
        res(ioctl_p(m, libc::TIOCSWINSZ, &mut ws))
    ));
    let mut ws2 = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let r = ioctl_p(s, libc::TIOCGWINSZ, &mut ws2);
    say(format!(
        "TIOCGWINSZ slave: {} {}x{}",
        res(r),
        ws2.ws_row,
        ws2.ws_col
    ));
    let mut t2 = [0u32; 11];
    let r = ioctl_p(s, TCGETS2, t2.as_mut_ptr());
    say(format!(
        "TCGETS2: {} ispeed {} ospeed {}",
        res(r),
        t2[9],
        t2[10]
    ));

    // Not a tty.
    let (pr, pw) = umt::pipe2(0);
    let mut x = Termio::default();
    say(format!(
        "TCGETA on a pipe: {}",
        res(ioctl_p(pr, libc::TCGETA, &mut x))
    ));
    say(format!(
        "TIOCGLCKTRMIOS on a pipe: {}",
        res(ioctl_p(pr, TIOCGLCKTRMIOS, &mut l))
    ));
    umt::close(pr);
    umt::close(pw);
    umt::close(s);
    umt::close(m);
    umt::done("termio");
}
