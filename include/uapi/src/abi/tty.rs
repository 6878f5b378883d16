//! Terminal ioctls, `termios` and `winsize`, plus the generic ioctl number encoding.
//!
//! Sources: `include/uapi/asm-generic/ioctls.h` (x86_64 and arm64 both use it through
//! `arch/*/include/uapi/asm/ioctls.h`), `include/uapi/asm-generic/ioctl.h` (`_IOC` encoding:
//! 8 bits nr, 8 bits type, 14 bits size, 2 bits direction; the same on both arches),
//! `include/uapi/asm-generic/termbits.h` and `termbits-common.h` (the kernel `struct termios`
//! that `TCGETS` uses, `struct termios2`, `c_cc` indexes and flag bits),
//! `include/uapi/asm-generic/termios.h` (`struct winsize`).

use static_assertions::const_assert_eq;

/// `_IOC_NONE`.
pub const IOC_NONE: u32 = 0;
/// `_IOC_WRITE`: user space writes, the kernel reads.
pub const IOC_WRITE: u32 = 1;
/// `_IOC_READ`: the kernel writes.
pub const IOC_READ: u32 = 2;

/// `_IOC(dir, type, nr, size)`.
pub const fn ioc(dir: u32, ty: u8, nr: u8, size: usize) -> u32 {
    (dir << 30) | ((size as u32 & 0x3fff) << 16) | ((ty as u32) << 8) | nr as u32
}
/// `_IO(type, nr)`.
pub const fn io(ty: u8, nr: u8) -> u32 {
    ioc(IOC_NONE, ty, nr, 0)
}
/// `_IOR(type, nr, size)`.
pub const fn ior(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(IOC_READ, ty, nr, size)
}
/// `_IOW(type, nr, size)`.
pub const fn iow(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(IOC_WRITE, ty, nr, size)
}
/// `_IOWR(type, nr, size)`.
pub const fn iowr(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(IOC_READ | IOC_WRITE, ty, nr, size)
}
/// `_IOC_SIZE(cmd)`.
pub const fn ioc_size(cmd: u32) -> usize {
    ((cmd >> 16) & 0x3fff) as usize
}
/// `_IOC_DIR(cmd)`.
pub const fn ioc_dir(cmd: u32) -> u32 {
    cmd >> 30
}

/// Get the terminal attributes (`struct termios`).
pub const TCGETS: u32 = 0x5401;
/// Set them now.
pub const TCSETS: u32 = 0x5402;
/// Set them after draining output.
pub const TCSETSW: u32 = 0x5403;
/// Set them after draining output and flushing input.
pub const TCSETSF: u32 = 0x5404;
/// Old `struct termio` get.
pub const TCGETA: u32 = 0x5405;
/// Old `struct termio` set.
pub const TCSETA: u32 = 0x5406;
/// Old `struct termio` set, drain.
pub const TCSETAW: u32 = 0x5407;
/// Old `struct termio` set, drain, flush.
pub const TCSETAF: u32 = 0x5408;
/// Send a break (`tcsendbreak`) / drain (`tcdrain`, arg 1).
pub const TCSBRK: u32 = 0x5409;
/// Flow control (`tcflow`).
pub const TCXONC: u32 = 0x540A;
/// Flush (`tcflush`).
pub const TCFLSH: u32 = 0x540B;
/// Exclusive mode on.
pub const TIOCEXCL: u32 = 0x540C;
/// Exclusive mode off.
pub const TIOCNXCL: u32 = 0x540D;
/// Make this the controlling terminal.
pub const TIOCSCTTY: u32 = 0x540E;
/// Get the foreground process group.
pub const TIOCGPGRP: u32 = 0x540F;
/// Set the foreground process group.
pub const TIOCSPGRP: u32 = 0x5410;
/// Bytes in the output queue.
pub const TIOCOUTQ: u32 = 0x5411;
/// Insert a byte into the input queue.
pub const TIOCSTI: u32 = 0x5412;
/// Get the window size.
pub const TIOCGWINSZ: u32 = 0x5413;
/// Set the window size.
pub const TIOCSWINSZ: u32 = 0x5414;
/// Get modem lines.
pub const TIOCMGET: u32 = 0x5415;
/// Set modem bits.
pub const TIOCMBIS: u32 = 0x5416;
/// Clear modem bits.
pub const TIOCMBIC: u32 = 0x5417;
/// Set modem lines.
pub const TIOCMSET: u32 = 0x5418;
/// Get software carrier.
pub const TIOCGSOFTCAR: u32 = 0x5419;
/// Set software carrier.
pub const TIOCSSOFTCAR: u32 = 0x541A;
/// Bytes available to read (`TIOCINQ`).
pub const FIONREAD: u32 = 0x541B;
/// Same as `FIONREAD`.
pub const TIOCINQ: u32 = 0x541B;
/// Linux console ioctls.
pub const TIOCLINUX: u32 = 0x541C;
/// Redirect the console.
pub const TIOCCONS: u32 = 0x541D;
/// Get serial info.
pub const TIOCGSERIAL: u32 = 0x541E;
/// Set serial info.
pub const TIOCSSERIAL: u32 = 0x541F;
/// Packet mode.
pub const TIOCPKT: u32 = 0x5420;
/// Set/clear non-blocking I/O.
pub const FIONBIO: u32 = 0x5421;
/// Give up the controlling terminal.
pub const TIOCNOTTY: u32 = 0x5422;
/// Set the line discipline.
pub const TIOCSETD: u32 = 0x5423;
/// Get the line discipline.
pub const TIOCGETD: u32 = 0x5424;
/// POSIX `tcsendbreak`.
pub const TCSBRKP: u32 = 0x5425;
/// Start a break.
pub const TIOCSBRK: u32 = 0x5427;
/// Stop a break.
pub const TIOCCBRK: u32 = 0x5428;
/// Get the session id of the terminal.
pub const TIOCGSID: u32 = 0x5429;
/// Get `struct termios2`.
pub const TCGETS2: u32 = ior(b'T', 0x2A, core::mem::size_of::<Termios2>());
/// Set `struct termios2`.
pub const TCSETS2: u32 = iow(b'T', 0x2B, core::mem::size_of::<Termios2>());
/// Set `struct termios2`, drain.
pub const TCSETSW2: u32 = iow(b'T', 0x2C, core::mem::size_of::<Termios2>());
/// Set `struct termios2`, drain, flush.
pub const TCSETSF2: u32 = iow(b'T', 0x2D, core::mem::size_of::<Termios2>());
/// Get the pty number.
pub const TIOCGPTN: u32 = ior(b'T', 0x30, 4);
/// Lock/unlock the pty.
pub const TIOCSPTLCK: u32 = iow(b'T', 0x31, 4);
/// Get the real device number.
pub const TIOCGDEV: u32 = ior(b'T', 0x32, 4);
/// Send a signal to the foreground group (pty master).
pub const TIOCSIG: u32 = iow(b'T', 0x36, 4);
/// Hang up the terminal.
pub const TIOCVHANGUP: u32 = 0x5437;
/// Get packet mode.
pub const TIOCGPKT: u32 = ior(b'T', 0x38, 4);
/// Get the pty lock state.
pub const TIOCGPTLCK: u32 = ior(b'T', 0x39, 4);
/// Get exclusive mode.
pub const TIOCGEXCL: u32 = ior(b'T', 0x40, 4);
/// Open the pty peer.
pub const TIOCGPTPEER: u32 = io(b'T', 0x41);
/// Clear close-on-exec.
pub const FIONCLEX: u32 = 0x5450;
/// Set close-on-exec.
pub const FIOCLEX: u32 = 0x5451;
/// Set/clear async I/O.
pub const FIOASYNC: u32 = 0x5452;
/// Get the locked termios.
pub const TIOCGLCKTRMIOS: u32 = 0x5456;
/// Set the locked termios.
pub const TIOCSLCKTRMIOS: u32 = 0x5457;
/// Size of a file or directory (`FIOQSIZE`).
pub const FIOQSIZE: u32 = 0x5460;

/// `TIOCPKT` packet-mode status bytes.
pub const TIOCPKT_DATA: u8 = 0;
/// Input flushed.
pub const TIOCPKT_FLUSHREAD: u8 = 1;
/// Output flushed.
pub const TIOCPKT_FLUSHWRITE: u8 = 2;
/// Output stopped.
pub const TIOCPKT_STOP: u8 = 4;
/// Output restarted.
pub const TIOCPKT_START: u8 = 8;
/// No more ^S/^Q.
pub const TIOCPKT_NOSTOP: u8 = 16;
/// ^S/^Q again.
pub const TIOCPKT_DOSTOP: u8 = 32;
/// termios changed (extproc).
pub const TIOCPKT_IOCTL: u8 = 64;

/// Number of control characters in the kernel `struct termios`.
pub const NCCS: usize = 19;
/// `c_cc` index: interrupt (^C).
pub const VINTR: usize = 0;
/// Quit (^\).
pub const VQUIT: usize = 1;
/// Erase (DEL).
pub const VERASE: usize = 2;
/// Kill line (^U).
pub const VKILL: usize = 3;
/// End of file (^D).
pub const VEOF: usize = 4;
/// Non-canonical read timeout, tenths of a second.
pub const VTIME: usize = 5;
/// Non-canonical read minimum.
pub const VMIN: usize = 6;
/// Switch (unused).
pub const VSWTC: usize = 7;
/// Start output (^Q).
pub const VSTART: usize = 8;
/// Stop output (^S).
pub const VSTOP: usize = 9;
/// Suspend (^Z).
pub const VSUSP: usize = 10;
/// Additional end of line.
pub const VEOL: usize = 11;
/// Reprint (^R).
pub const VREPRINT: usize = 12;
/// Discard (^O).
pub const VDISCARD: usize = 13;
/// Word erase (^W).
pub const VWERASE: usize = 14;
/// Literal next (^V).
pub const VLNEXT: usize = 15;
/// Second additional end of line.
pub const VEOL2: usize = 16;

/// `c_iflag`: ignore break.
pub const IGNBRK: u32 = 0x001;
/// Break sends SIGINT.
pub const BRKINT: u32 = 0x002;
/// Ignore parity errors.
pub const IGNPAR: u32 = 0x004;
/// Mark parity errors.
pub const PARMRK: u32 = 0x008;
/// Input parity check.
pub const INPCK: u32 = 0x010;
/// Strip the 8th bit.
pub const ISTRIP: u32 = 0x020;
/// NL to CR on input.
pub const INLCR: u32 = 0x040;
/// Ignore CR.
pub const IGNCR: u32 = 0x080;
/// CR to NL on input.
pub const ICRNL: u32 = 0x100;
/// Upper to lower case.
pub const IUCLC: u32 = 0x0200;
/// XON/XOFF output flow control.
pub const IXON: u32 = 0x0400;
/// Any character restarts output.
pub const IXANY: u32 = 0x800;
/// XON/XOFF input flow control.
pub const IXOFF: u32 = 0x1000;
/// Ring the bell when the input queue is full.
pub const IMAXBEL: u32 = 0x2000;
/// Input is UTF-8 (for erase).
pub const IUTF8: u32 = 0x4000;

/// `c_oflag`: post-process output.
pub const OPOST: u32 = 0x01;
/// Lower to upper case.
pub const OLCUC: u32 = 0x02;
/// NL to CR-NL.
pub const ONLCR: u32 = 0x04;
/// CR to NL.
pub const OCRNL: u32 = 0x08;
/// No CR at column 0.
pub const ONOCR: u32 = 0x10;
/// NL does the CR function.
pub const ONLRET: u32 = 0x20;
/// Fill characters for delays.
pub const OFILL: u32 = 0x40;
/// Fill is DEL.
pub const OFDEL: u32 = 0x80;
/// Newline delay mask.
pub const NLDLY: u32 = 0x00100;
/// CR delay mask.
pub const CRDLY: u32 = 0x00600;
/// Tab delay mask.
pub const TABDLY: u32 = 0x01800;
/// Expand tabs to spaces (`TAB3`).
pub const XTABS: u32 = 0x01800;
/// Backspace delay mask.
pub const BSDLY: u32 = 0x02000;
/// Vertical tab delay mask.
pub const VTDLY: u32 = 0x04000;
/// Form feed delay mask.
pub const FFDLY: u32 = 0x08000;

/// `c_cflag`: baud rate mask.
pub const CBAUD: u32 = 0x0000_100f;
/// Hang up.
pub const B0: u32 = 0;
/// 9600 baud.
pub const B9600: u32 = 0x0000_000d;
/// 19200 baud.
pub const B19200: u32 = 0x0000_000e;
/// 38400 baud.
pub const B38400: u32 = 0x0000_000f;
/// 57600 baud.
pub const B57600: u32 = 0x0000_1001;
/// 115200 baud.
pub const B115200: u32 = 0x0000_1002;
/// Character size mask.
pub const CSIZE: u32 = 0x0000_0030;
/// 5 bits.
pub const CS5: u32 = 0x0000_0000;
/// 6 bits.
pub const CS6: u32 = 0x0000_0010;
/// 7 bits.
pub const CS7: u32 = 0x0000_0020;
/// 8 bits.
pub const CS8: u32 = 0x0000_0030;
/// Two stop bits.
pub const CSTOPB: u32 = 0x0000_0040;
/// Enable the receiver.
pub const CREAD: u32 = 0x0000_0080;
/// Parity enable.
pub const PARENB: u32 = 0x0000_0100;
/// Odd parity.
pub const PARODD: u32 = 0x0000_0200;
/// Hang up on last close.
pub const HUPCL: u32 = 0x0000_0400;
/// Ignore modem control lines.
pub const CLOCAL: u32 = 0x0000_0800;
/// Extended baud rates.
pub const CBAUDEX: u32 = 0x0000_1000;
/// Speed in `c_ispeed`/`c_ospeed` (termios2).
pub const BOTHER: u32 = 0x0000_1000;
/// Input baud rate mask.
pub const CIBAUD: u32 = 0x100f_0000;
/// Shift of `CIBAUD`.
pub const IBSHIFT: u32 = 16;
/// Address bit.
pub const ADDRB: u32 = 0x2000_0000;
/// Mark or space parity.
pub const CMSPAR: u32 = 0x4000_0000;
/// Hardware flow control.
pub const CRTSCTS: u32 = 0x8000_0000;

/// `c_lflag`: generate signals for INTR, QUIT, SUSP.
pub const ISIG: u32 = 0x00001;
/// Canonical (line) mode.
pub const ICANON: u32 = 0x00002;
/// Case conversion (obsolete).
pub const XCASE: u32 = 0x00004;
/// Echo input.
pub const ECHO: u32 = 0x00008;
/// ERASE erases a character.
pub const ECHOE: u32 = 0x00010;
/// KILL erases the line.
pub const ECHOK: u32 = 0x00020;
/// Echo NL even without ECHO.
pub const ECHONL: u32 = 0x00040;
/// No flush after INTR/QUIT/SUSP.
pub const NOFLSH: u32 = 0x00080;
/// SIGTTOU for background output.
pub const TOSTOP: u32 = 0x00100;
/// Echo control characters as `^X`.
pub const ECHOCTL: u32 = 0x00200;
/// Echo erased characters (printer style).
pub const ECHOPRT: u32 = 0x00400;
/// KILL erases by echoing ERASE.
pub const ECHOKE: u32 = 0x00800;
/// Output is being flushed.
pub const FLUSHO: u32 = 0x01000;
/// Retype pending input.
pub const PENDIN: u32 = 0x04000;
/// Extended input processing (WERASE, LNEXT, ...).
pub const IEXTEN: u32 = 0x08000;
/// External processing.
pub const EXTPROC: u32 = 0x10000;

/// `tcflow`: suspend output.
pub const TCOOFF: u32 = 0;
/// Restart output.
pub const TCOON: u32 = 1;
/// Send STOP.
pub const TCIOFF: u32 = 2;
/// Send START.
pub const TCION: u32 = 3;
/// `tcflush`: flush input.
pub const TCIFLUSH: u32 = 0;
/// Flush output.
pub const TCOFLUSH: u32 = 1;
/// Flush both.
pub const TCIOFLUSH: u32 = 2;
/// `tcsetattr` actions (glibc maps them to `TCSETS` + n).
pub const TCSANOW: u32 = 0;
/// After draining.
pub const TCSADRAIN: u32 = 1;
/// After draining and flushing input.
pub const TCSAFLUSH: u32 = 2;

crate::pod_struct! {
    /// The kernel `struct termios` used by `TCGETS`/`TCSETS*`: 36 bytes (glibc's user-space
    /// `struct termios` is larger; the libc translates).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Termios {
        /// Input modes.
        pub c_iflag: u32,
        /// Output modes.
        pub c_oflag: u32,
        /// Control modes.
        pub c_cflag: u32,
        /// Local modes.
        pub c_lflag: u32,
        /// Line discipline.
        pub c_line: u8,
        /// Control characters.
        pub c_cc: [u8; NCCS],
    }
}

impl Termios {
    /// The settings of a freshly opened Linux tty (`tty_std_termios` in
    /// `drivers/tty/tty_io.c`, `INIT_C_CC` in `include/linux/tty.h`), 38400 8N1.
    pub const fn linux_default() -> Self {
        let mut c_cc = [0u8; NCCS];
        c_cc[VINTR] = 0x03;
        c_cc[VQUIT] = 0x1c;
        c_cc[VERASE] = 0x7f;
        c_cc[VKILL] = 0x15;
        c_cc[VEOF] = 0x04;
        c_cc[VTIME] = 0;
        c_cc[VMIN] = 1;
        c_cc[VSTART] = 0x11;
        c_cc[VSTOP] = 0x13;
        c_cc[VSUSP] = 0x1a;
        c_cc[VREPRINT] = 0x12;
        c_cc[VDISCARD] = 0x0f;
        c_cc[VWERASE] = 0x17;
        c_cc[VLNEXT] = 0x16;
        Termios {
            c_iflag: ICRNL | IXON,
            c_oflag: OPOST | ONLCR,
            c_cflag: B38400 | CS8 | CREAD | HUPCL,
            c_lflag: ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN,
            c_line: 0,
            c_cc,
        }
    }
}

crate::pod_struct! {
    /// `struct termios2` (`TCGETS2`): [`Termios`] plus explicit speeds, 44 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Termios2 {
        /// Input modes.
        pub c_iflag: u32,
        /// Output modes.
        pub c_oflag: u32,
        /// Control modes.
        pub c_cflag: u32,
        /// Local modes.
        pub c_lflag: u32,
        /// Line discipline.
        pub c_line: u8,
        /// Control characters.
        pub c_cc: [u8; NCCS],
        /// Input speed.
        pub c_ispeed: u32,
        /// Output speed.
        pub c_ospeed: u32,
    }
}

/// Number of control characters in the old `struct termio` (`NCC`).
pub const NCC: usize = 8;

crate::pod_struct! {
    /// The old System V `struct termio` (`TCGETA`, `TCSETA*`; include/uapi/asm-generic/termios.h):
    /// the low 16 bits of each flag word and the first [`NCC`] control characters, 18 bytes
    /// (17 of fields, one of tail padding for the `unsigned short` alignment).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Termio {
        /// Input modes.
        pub c_iflag: u16,
        /// Output modes.
        pub c_oflag: u16,
        /// Control modes.
        pub c_cflag: u16,
        /// Local modes.
        pub c_lflag: u16,
        /// Line discipline.
        pub c_line: u8,
        /// Control characters.
        pub c_cc: [u8; NCC],
        /// Tail padding (never read or written by Linux).
        pub pad: u8,
    }
}

/// The bytes of `struct termio` Linux reads and writes (without the tail padding).
pub const TERMIO_BYTES: usize = 17;

impl Termio {
    /// `kernel_termios_to_user_termio` (drivers/tty/tty_ioctl.c): each flag word truncated
    /// to its low 16 bits, the first [`NCC`] control characters.
    pub fn from_termios(t: &Termios) -> Termio {
        let mut c_cc = [0u8; NCC];
        c_cc.copy_from_slice(&t.c_cc[..NCC]);
        Termio {
            c_iflag: t.c_iflag as u16,
            c_oflag: t.c_oflag as u16,
            c_cflag: t.c_cflag as u16,
            c_lflag: t.c_lflag as u16,
            c_line: t.c_line,
            c_cc,
            pad: 0,
        }
    }

    /// `user_termio_to_kernel_termios`: `t` with the low 16 bits of each flag word, the line
    /// discipline and the first [`NCC`] control characters replaced by this termio's; the
    /// high bits and the other control characters stay.
    pub fn apply_to(&self, t: &Termios) -> Termios {
        let merge = |old: u32, new: u16| (old & 0xffff_0000) | u32::from(new);
        let mut out = *t;
        out.c_iflag = merge(t.c_iflag, self.c_iflag);
        out.c_oflag = merge(t.c_oflag, self.c_oflag);
        out.c_cflag = merge(t.c_cflag, self.c_cflag);
        out.c_lflag = merge(t.c_lflag, self.c_lflag);
        out.c_line = self.c_line;
        out.c_cc[..NCC].copy_from_slice(&self.c_cc);
        out
    }
}

crate::pod_struct! {
    /// `struct winsize` (`TIOCGWINSZ`): 8 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Winsize {
        /// Rows.
        pub ws_row: u16,
        /// Columns.
        pub ws_col: u16,
        /// Width in pixels.
        pub ws_xpixel: u16,
        /// Height in pixels.
        pub ws_ypixel: u16,
    }
}

const_assert_eq!(core::mem::size_of::<Termios>(), 36);
const_assert_eq!(core::mem::offset_of!(Termios, c_line), 16);
const_assert_eq!(core::mem::offset_of!(Termios, c_cc), 17);
const_assert_eq!(core::mem::size_of::<Termios2>(), 44);
const_assert_eq!(core::mem::offset_of!(Termios2, c_ispeed), 36);
const_assert_eq!(core::mem::size_of::<Winsize>(), 8);
const_assert_eq!(core::mem::size_of::<Termio>(), 18);
const_assert_eq!(core::mem::offset_of!(Termio, c_line), 8);
const_assert_eq!(core::mem::offset_of!(Termio, c_cc), 9);
const_assert_eq!(core::mem::offset_of!(Termio, pad), TERMIO_BYTES);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Pod;

    #[test]
    fn ioctl_numbers() {
        assert_eq!(TIOCGPTN, 0x8004_5430);
        assert_eq!(TIOCSPTLCK, 0x4004_5431);
        assert_eq!(TIOCGPTPEER, 0x5441);
        assert_eq!(TCGETS2, 0x802c_542a);
        assert_eq!(TCSETS2, 0x402c_542b);
        assert_eq!(ioc_size(TIOCGPTN), 4);
        assert_eq!(ioc_dir(TIOCGPTN), IOC_READ);
    }

    #[test]
    fn termios_bytes() {
        let t = Termios::linux_default();
        let b = t.as_bytes();
        assert_eq!(b.len(), 36);
        assert_eq!(b[16], 0);
        assert_eq!(b[17 + VINTR], 3);
        assert_eq!(b[17 + VMIN], 1);
        assert_eq!(Termios::from_bytes(&b), Some(t));
        assert_eq!(t.c_lflag, 0o105073);
        let w = Winsize {
            ws_row: 24,
            ws_col: 80,
            ..Default::default()
        };
        assert_eq!(w.as_bytes(), vec![24, 0, 80, 0, 0, 0, 0, 0]);
        assert_eq!(Termios2::default().as_bytes().len(), 44);
    }

    #[test]
    fn termio_conversions() {
        let mut t = Termios::linux_default();
        t.c_cflag |= CRTSCTS; // a high bit termio cannot carry
        t.c_lflag |= EXTPROC;
        let o = Termio::from_termios(&t);
        assert_eq!(u32::from(o.c_cflag), t.c_cflag & 0xffff);
        assert_eq!(u32::from(o.c_lflag), t.c_lflag & 0xffff);
        assert_eq!(o.c_cc, [3, 0x1c, 0x7f, 0x15, 4, 0, 1, 0]);
        let b = o.as_bytes();
        assert_eq!(b.len(), 18);
        assert_eq!(b[8], 0);
        assert_eq!(b[9 + VINTR], 3);
        let mut n = o;
        n.c_lflag &= !(ICANON as u16);
        n.c_cc[VMIN] = 5;
        let back = n.apply_to(&t);
        assert_eq!(back.c_lflag, t.c_lflag & !ICANON);
        assert_eq!(back.c_cflag & CRTSCTS, CRTSCTS, "high bits are kept");
        assert_eq!(back.c_cc[VMIN], 5);
        assert_eq!(
            back.c_cc[VSTART..],
            t.c_cc[VSTART..],
            "c_cc past NCC is kept"
        );
        // TCGETA, TCSETA, TCSETAW, TCSETAF, TIOCGLCKTRMIOS, TIOCSLCKTRMIOS.
        assert_eq!(
            [
                TCGETA,
                TCSETA,
                TCSETAW,
                TCSETAF,
                TIOCGLCKTRMIOS,
                TIOCSLCKTRMIOS
            ],
            [0x5405, 0x5406, 0x5407, 0x5408, 0x5456, 0x5457]
        );
    }
}
