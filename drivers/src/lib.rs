//! `um-drivers`: devices. The TTY layer ([`tty`]: the core with its N_TTY line discipline and
//! job control, and Unix 98 ptys with devpts), and the console ([`console`]), a tty on host
//! fds; the block layer ([`block`]) with UML's `ubd` disks; the virtual NIC `eth0` ([`net`]) with
//! its network backends and `ip=` configuration.
//!
//! [`init`] wires the character devices into the kernel at boot: /dev/tty (5:0), /dev/console
//! (5:1), /dev/ptmx (5:2) and the pty slaves (136:N, registered as ptys are made), all through
//! `um_kernel::vfs::register_chrdev`. [`devpts_root`] is the devpts root inode for mounting.
//!
//! Neighbours: `um-kernel` (the `FileOps`/`Inode` traits, wait queues, signals), `um-net` (the
//! network device registry) and
//! `um-os-linux` (host fds, the host terminal) below; `um-bin` above.
#![forbid(unsafe_code)]

pub mod block;
pub mod console;
pub mod net;
pub mod tty;

use console::Channel;
use std::sync::Arc;
use tty::{Node, TtyFile, registry};
use um_kernel::kernel::Kernel;
use um_kernel::task::lock;
use um_kernel::vfs::{FileOps, Inode, encode_dev, register_chrdev};
use um_kernel::wait::IoCtx;
use um_uapi::Errno;

/// The node /dev/console is opened through.
fn console_node() -> Node {
    Node {
        rdev: encode_dev(5, 1),
        mode: 0o600,
        uid: 0,
        gid: 0,
        ino: 5 << 8 | 1,
        dev: 0,
    }
}

/// Starts the console on the `con0=` channels, makes it the controlling tty of init's session
/// (session 1, foreground group 1), registers the tty character devices and the exit hooks
/// (host terminal restore at shutdown, session-leader exit). Returns the console file for
/// init's descriptors 0, 1 and 2 (open for reading and writing).
pub fn init(kernel: &Arc<Kernel>, input: Channel, output: Channel) -> Box<dyn FileOps> {
    tty::pty::set_kernel(kernel);
    let con = console::start(kernel, input, output);
    con.set_ctty(1, 1);
    registry::add(&con);

    let c = con.clone();
    register_chrdev(
        5,
        1,
        Arc::new(move |io: &IoCtx<'_>, flags: u32| {
            Ok(
                Box::new(TtyFile::open(c.clone(), console_node(), flags, io.task)?)
                    as Box<dyn FileOps>,
            )
        }),
    );
    register_chrdev(
        5,
        0,
        Arc::new(|io: &IoCtx<'_>, flags: u32| {
            // /dev/tty: the caller's controlling tty (Linux `tty_open_current_tty`).
            let t = registry::ctty_of(&io.task.process).ok_or(Errno::ENXIO)?;
            if t.hung_up() {
                return Err(Errno::EIO);
            }
            let node = Node {
                rdev: encode_dev(5, 0),
                mode: 0o666,
                uid: 0,
                gid: 0,
                ino: 5 << 8,
                dev: 0,
            };
            Ok(Box::new(TtyFile::open(t, node, flags, io.task)?) as Box<dyn FileOps>)
        }),
    );
    register_chrdev(
        5,
        2,
        Arc::new(|io: &IoCtx<'_>, flags: u32| tty::pty::open_ptmx(io.task, flags)),
    );

    lock(&kernel.shutdown_hooks).push(Box::new(um_os_linux::term::restore));
    lock(&kernel.process_exit_hooks).push(Box::new(|p| registry::process_exited(p)));

    Box::new(TtyFile::attach(con, console_node(), 2))
}

/// The root inode of a devpts file system, for mounting on /dev/pts (type "devpts").
pub fn devpts_root() -> Arc<dyn Inode> {
    tty::pty::devpts_root()
}
