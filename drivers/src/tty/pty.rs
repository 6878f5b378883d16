//! Unix 98 pseudo-terminals (Linux `drivers/tty/pty.c`, `fs/devpts/inode.c`): opening
//! `/dev/ptmx` makes a new pair; the master is a [`PtyMaster`] file, the slave a [`Tty`] whose
//! driver hands its processed output to the master's read buffer, and the master's writes are
//! the slave's input through its line discipline. The slave appears as `/dev/pts/N` in the
//! devpts file system ([`devpts_root`]) and as character device 136:N.
//!
//! Lifetimes as Linux: a new pair is locked until `unlockpt` (TIOCSPTLCK 0); when the master
//! closes, the slave is hung up (reads see end of file, writes EIO, POLLHUP) and disappears
//! from devpts; when the last slave file closes, master reads fail with EIO once the buffer is
//! empty and poll reports POLLHUP, until the slave is opened again.
//!
//! Neighbours: [`super`] (the tty core), `um-kernel` (`register_chrdev`, `Inode`, fd tables).

use super::{Node, Tty, TtyDriver, TtyFile, registry};
use std::any::Any;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_kernel::kernel::Kernel;
use um_kernel::signal;
use um_kernel::task::{Task, lock};
use um_kernel::vfs::{
    self, DirEntry, FileOps, GuestMem, Inode, Kstat, OpenFile, encode_dev, mode, register_chrdev,
};
use um_kernel::wait::{IoCtx, PollTable, WaitQueue};
use um_uapi::abi::signal::Siginfo;
use um_uapi::abi::tty::*;
use um_uapi::{Errno, SysResult};

/// Major number of Unix 98 pty slaves.
pub const PTS_MAJOR: u32 = 136;
/// Most ptys at once (Linux `kernel.pty.max` default).
pub const PTY_MAX: u32 = 4096;
/// The slave output the master has not read yet, at most (Linux's flip-buffer limit).
const MASTER_BUF: usize = 65536;

/// State shared by the two sides.
struct PtyInner {
    /// Slave output waiting for master reads.
    out: VecDeque<u8>,
    /// Slave opens refused until unlockpt.
    locked: bool,
    master_open: bool,
    /// The last slave file closed (TTY_OTHER_CLOSED on the master).
    slave_closed: bool,
    /// TIOCPKT packet mode on the master.
    packet: bool,
    /// TIOCEXCL on the master: the master's own tty flag (Linux `TTY_EXCLUSIVE` of the
    /// master's tty_struct), not the slave's.
    master_exclusive: bool,
}

struct PtyShared {
    inner: Mutex<PtyInner>,
    /// Master readers wait here.
    master_read: WaitQueue,
}

/// One pty pair.
pub struct Pty {
    pub index: u32,
    pub slave: Arc<Tty>,
    shared: Arc<PtyShared>,
    /// Owner of the slave node (the opener of /dev/ptmx).
    uid: u32,
    gid: u32,
}

/// The slave's driver: output goes to the master's buffer.
struct SlaveDriver {
    shared: Arc<PtyShared>,
}

impl TtyDriver for SlaveDriver {
    /// `pty_set_termios` (drivers/tty/pty.c): a pty is always 8 bits, no parity, receiving.
    fn set_termios(&self, t: &mut Termios) {
        t.c_cflag = (t.c_cflag & !(CSIZE | PARENB)) | CS8 | CREAD;
    }
    fn write(&self, data: &[u8]) -> usize {
        let mut i = lock(&self.shared.inner);
        if !i.master_open {
            return data.len();
        }
        i.out.extend(data);
        drop(i);
        self.shared.master_read.wake_all();
        data.len()
    }
    fn write_room(&self) -> usize {
        let i = lock(&self.shared.inner);
        if !i.master_open {
            return usize::MAX;
        }
        MASTER_BUF.saturating_sub(i.out.len())
    }
    // No `chars_in_buffer`: Linux's pty has none, so TIOCOUTQ on a slave is 0 whatever the
    // master has not read yet.
    fn flush_output(&self) {
        lock(&self.shared.inner).out.clear();
    }
    fn opened(&self) {
        lock(&self.shared.inner).slave_closed = false;
        self.shared.master_read.wake_all();
    }
    fn closed(&self) {
        lock(&self.shared.inner).slave_closed = true;
        self.shared.master_read.wake_all();
    }
    fn is_pty(&self) -> bool {
        true
    }
}

fn ptys() -> &'static Mutex<BTreeMap<u32, Arc<Pty>>> {
    static P: OnceLock<Mutex<BTreeMap<u32, Arc<Pty>>>> = OnceLock::new();
    P.get_or_init(Default::default)
}

fn kernel_ref() -> &'static OnceLock<Weak<Kernel>> {
    static K: OnceLock<Weak<Kernel>> = OnceLock::new();
    &K
}

/// Remembers the kernel for the ptys made later.
pub fn set_kernel(k: &Arc<Kernel>) {
    let _ = kernel_ref().set(Arc::downgrade(k));
}

/// The pty with this index, if it exists.
pub fn pty(index: u32) -> Option<Arc<Pty>> {
    lock(ptys()).get(&index).cloned()
}

/// The devpts device number (an anonymous block device, as Linux gives devpts).
fn devpts_dev() -> u64 {
    encode_dev(0, 24)
}

/// Opens `/dev/ptmx` (Linux `ptmx_open`): a new locked pair, the master file returned.
pub fn open_ptmx(task: &Task, _flags: u32) -> SysResult<Box<dyn FileOps>> {
    let kernel = kernel_ref().get().cloned().unwrap_or_default();
    let creds = *lock(&task.process.creds);
    let mut map = lock(ptys());
    let index = (0..PTY_MAX)
        .find(|i| !map.contains_key(i))
        .ok_or(Errno::ENOSPC)?;
    let shared = Arc::new(PtyShared {
        inner: Mutex::new(PtyInner {
            out: VecDeque::new(),
            locked: true,
            master_open: true,
            slave_closed: false,
            packet: false,
            master_exclusive: false,
        }),
        master_read: WaitQueue::new(),
    });
    let slave = Tty::new(
        format!("pts/{index}"),
        encode_dev(PTS_MAJOR, index),
        Box::new(SlaveDriver {
            shared: shared.clone(),
        }),
        kernel,
        Winsize::default(),
    );
    // `pts_driver->init_termios`: tty_std_termios with `c_cflag = B38400 | CS8 | CREAD`.
    let mut init = Termios::linux_default();
    init.c_cflag = B38400 | CS8 | CREAD;
    slave.set_initial_termios(init);
    registry::add(&slave);
    let pty = Arc::new(Pty {
        index,
        slave,
        shared,
        uid: creds.fsuid,
        gid: creds.fsgid,
    });
    map.insert(index, pty.clone());
    drop(map);
    register_chrdev(
        PTS_MAJOR,
        index,
        Arc::new(move |io: &IoCtx<'_>, flags: u32| open_slave(index, io.task, flags)),
    );
    Ok(Box::new(PtyMaster { pty }))
}

/// Opens slave `index` (Linux `pty_open` / `pts_unix98_lookup`): EIO when it is locked or its
/// master is gone.
pub fn open_slave(index: u32, task: &Task, flags: u32) -> SysResult<Box<dyn FileOps>> {
    let p = pty(index).ok_or(Errno::EIO)?;
    {
        let i = lock(&p.shared.inner);
        if i.locked || !i.master_open {
            return Err(Errno::EIO);
        }
    }
    if p.slave.hung_up() {
        return Err(Errno::EIO);
    }
    let node = p.slave_node();
    let f = TtyFile::open(p.slave.clone(), node, flags, task)?;
    p.slave.open_set_ctty(task, flags);
    Ok(Box::new(f))
}

impl Pty {
    fn slave_node(&self) -> Node {
        Node {
            rdev: encode_dev(PTS_MAJOR, self.index),
            mode: 0o620,
            uid: self.uid,
            gid: self.gid,
            ino: self.index as u64 + 3,
            dev: devpts_dev(),
        }
    }

    fn set_lock(&self, on: bool) {
        lock(&self.shared.inner).locked = on;
    }
}

/// The pty ioctls both sides answer (Linux `pty_unix98_ioctl`).
fn pty_ioctl(p: &Pty, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
    match cmd {
        TIOCGPTN => {
            mem.write(arg, &p.index.to_le_bytes())?;
            Ok(0)
        }
        TIOCSPTLCK => {
            let mut b = [0u8; 4];
            mem.read(arg, &mut b)?;
            p.set_lock(i32::from_le_bytes(b) != 0);
            Ok(0)
        }
        TIOCGPTLCK => {
            let l = lock(&p.shared.inner).locked as i32;
            mem.write(arg, &l.to_le_bytes())?;
            Ok(0)
        }
        TIOCPKT => {
            let mut b = [0u8; 4];
            mem.read(arg, &mut b)?;
            lock(&p.shared.inner).packet = i32::from_le_bytes(b) != 0;
            Ok(0)
        }
        TIOCGPKT => {
            let v = lock(&p.shared.inner).packet as i32;
            mem.write(arg, &v.to_le_bytes())?;
            Ok(0)
        }
        _ => Err(Errno::ENOTTY),
    }
}

/// TIOCSIG sends only the keyboard signals (Linux `pty_signal`).
fn valid_tiocsig(sig: u32) -> bool {
    matches!(sig, signal::SIGINT | signal::SIGQUIT | signal::SIGTSTP)
}

/// Pty ioctls issued on a slave file.
pub fn slave_ioctl(tty: &Arc<Tty>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
    let p = lock(ptys())
        .values()
        .find(|p| Arc::ptr_eq(&p.slave, tty))
        .cloned();
    match p {
        // TIOCSIG on the slave signals the master's (nonexistent) foreground group.
        Some(_) if cmd == TIOCSIG => {
            if valid_tiocsig(arg as u32) {
                Ok(0)
            } else {
                Err(Errno::EINVAL)
            }
        }
        Some(p) => pty_ioctl(&p, cmd, arg, mem),
        None => Err(Errno::ENOTTY),
    }
}

/// The master side of a pty.
pub struct PtyMaster {
    pty: Arc<Pty>,
}

impl Drop for PtyMaster {
    fn drop(&mut self) {
        // Linux pty_close(master): the slave is hung up and the pair leaves devpts.
        lock(&self.pty.shared.inner).master_open = false;
        self.pty.slave.hangup();
        let mut map = lock(ptys());
        if map
            .get(&self.pty.index)
            .is_some_and(|p| Arc::ptr_eq(p, &self.pty))
        {
            map.remove(&self.pty.index);
        }
    }
}

use um_uapi::abi::poll::POLLERR;
use um_uapi::abi::poll::POLLHUP;
use um_uapi::abi::poll::POLLIN;
use um_uapi::abi::poll::POLLOUT;
use um_uapi::abi::poll::POLLRDNORM;
use um_uapi::abi::poll::POLLWRNORM;

impl FileOps for PtyMaster {
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let sh = &self.pty.shared;
        io.wait(&[&sh.master_read], || {
            let mut i = lock(&sh.inner);
            if !i.out.is_empty() {
                let mut start = 0;
                if i.packet {
                    buf[0] = TIOCPKT_DATA;
                    start = 1;
                }
                let n = (buf.len() - start).min(i.out.len());
                for (slot, b) in buf[start..start + n].iter_mut().zip(i.out.drain(..n)) {
                    *slot = b;
                }
                return Some(Ok(start + n));
            }
            if i.slave_closed {
                return Some(Err(Errno::EIO));
            }
            None
        })
        .and_then(|r| r)
        .inspect(|_| self.pty.slave.write_wait.wake_all())
    }

    fn write(&self, io: &IoCtx<'_>, data: &[u8], _off: u64) -> SysResult<usize> {
        let slave = &self.pty.slave;
        let mut done = 0;
        while done < data.len() {
            let n = slave.receive(&data[done..]);
            done += n;
            if done == data.len() {
                break;
            }
            if n == 0 {
                let r = io.wait(&[&slave.room_wait], || slave.has_room().then_some(()));
                if let Err(e) = r {
                    return if done > 0 { Ok(done) } else { Err(e) };
                }
            }
        }
        Ok(done)
    }

    fn is_stream(&self) -> bool {
        true
    }

    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        let sh = &self.pty.shared;
        if let Some(pt) = pt {
            pt.wait_on(&sh.master_read);
            pt.wait_on(&self.pty.slave.room_wait);
        }
        let mut m = 0;
        let i = lock(&sh.inner);
        if !i.out.is_empty() {
            m |= POLLIN | POLLRDNORM;
        }
        if i.slave_closed {
            m |= POLLHUP;
        }
        drop(i);
        if self.pty.slave.has_room() {
            m |= POLLOUT | POLLWRNORM;
        }
        m & (events | POLLERR | POLLHUP)
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(Kstat {
            dev: devpts_dev(),
            ino: 2,
            mode: mode::S_IFCHR | 0o666,
            rdev: encode_dev(5, 2),
            nlink: 1,
            blksize: 1024,
            ..Kstat::default()
        })
    }

    fn ioctl(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        let p = &self.pty;
        match cmd {
            TIOCGPTN | TIOCSPTLCK | TIOCGPTLCK | TIOCPKT | TIOCGPKT => pty_ioctl(p, cmd, arg, mem),
            TIOCSIG => {
                // Linux pty_signal: a signal for the slave's foreground group.
                let sig = arg as u32;
                if !valid_tiocsig(sig) {
                    return Err(Errno::EINVAL);
                }
                let pgrp = {
                    let k = kernel_ref().get().and_then(Weak::upgrade);
                    (k, p.slave.foreground())
                };
                if let (Some(k), pg) = pgrp
                    && pg != 0
                {
                    let _ = signal::send_to_pgrp(&k, pg, Siginfo::kill(sig, 0x80, 0, 0));
                }
                Ok(0)
            }
            TIOCGPTPEER => {
                // Opens the slave and returns a new descriptor (Linux `ptm_open_peer`).
                let flags = arg as u32;
                let f = open_slave(p.index, io.task, flags | super::O_NOCTTY)?;
                let cloexec = flags & 0o2000000 != 0;
                let file = OpenFile::new(f, flags & !0o2000000, None);
                let fd = lock(&io.task.process.files()).install(file, cloexec, 0)?;
                Ok(fd as u64)
            }
            TCFLSH => {
                // The master's input is the slave's output and the other way round.
                match arg as u32 {
                    TCIFLUSH => lock(&p.shared.inner).out.clear(),
                    TCOFLUSH => {
                        p.slave
                            .ioctl(io, TCFLSH, TCIFLUSH as u64, mem, true, true)?;
                    }
                    TCIOFLUSH => {
                        lock(&p.shared.inner).out.clear();
                        p.slave
                            .ioctl(io, TCFLSH, TCIFLUSH as u64, mem, true, true)?;
                    }
                    _ => return Err(Errno::EINVAL),
                }
                Ok(0)
            }
            TIOCEXCL | TIOCNXCL => {
                lock(&p.shared.inner).master_exclusive = cmd == TIOCEXCL;
                Ok(0)
            }
            TIOCGEXCL => {
                let e = lock(&p.shared.inner).master_exclusive as i32;
                mem.write(arg, &e.to_le_bytes())?;
                Ok(0)
            }
            TIOCSTI => {
                // tiocsti on the master's own tty (never a controlling tty): CAP_SYS_ADMIN;
                // the byte is input of the master's raw line discipline, read on the master.
                if !io
                    .task
                    .process
                    .capable(um_uapi::abi::capability::CAP_SYS_ADMIN)
                {
                    return Err(Errno::EPERM);
                }
                let mut b = [0u8; 1];
                mem.read(arg, &mut b)?;
                lock(&p.shared.inner).out.extend(b);
                p.shared.master_read.wake_all();
                Ok(0)
            }
            TIOCINQ => {
                let n = lock(&p.shared.inner).out.len() as i32;
                mem.write(arg, &n.to_le_bytes())?;
                Ok(0)
            }
            // tty_chars_in_buffer of the master: 0, as the pty driver has no
            // `chars_in_buffer` (whatever the slave has not read yet).
            TIOCOUTQ => {
                mem.write(arg, &0i32.to_le_bytes())?;
                Ok(0)
            }
            _ => p.slave.ioctl(io, cmd, arg, mem, true, true),
        }
    }
}

/// The devpts root directory: `ptmx` and one node per pty.
struct DevptsRoot;

/// `/dev/pts/ptmx`.
struct PtmxNode;

/// `/dev/pts/N`.
struct SlaveNode {
    index: u32,
    pty: Weak<Pty>,
}

fn devpts_fs_id() -> u64 {
    static ID: OnceLock<u64> = OnceLock::new();
    *ID.get_or_init(vfs::new_fs_id)
}

impl Inode for DevptsRoot {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(Kstat {
            dev: devpts_dev(),
            ino: 1,
            mode: mode::S_IFDIR | 0o755,
            nlink: 2,
            blksize: 1024,
            ..Kstat::default()
        })
    }
    fn lookup(&self, name: &[u8]) -> SysResult<Arc<dyn Inode>> {
        if name == b"ptmx" {
            return Ok(Arc::new(PtmxNode));
        }
        let s = std::str::from_utf8(name).map_err(|_| Errno::ENOENT)?;
        if s.is_empty() || (s.len() > 1 && s.starts_with('0')) {
            return Err(Errno::ENOENT);
        }
        let index: u32 = s.parse().map_err(|_| Errno::ENOENT)?;
        let p = pty(index).ok_or(Errno::ENOENT)?;
        Ok(Arc::new(SlaveNode {
            index,
            pty: Arc::downgrade(&p),
        }))
    }
    fn open(&self, _io: &IoCtx<'_>, _flags: u32) -> SysResult<Box<dyn FileOps>> {
        Ok(Box::new(DevptsDir))
    }
    fn id(&self) -> u64 {
        1
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn fs_id(&self) -> u64 {
        devpts_fs_id()
    }
}

/// An open devpts root.
struct DevptsDir;

impl FileOps for DevptsDir {
    fn stat(&self) -> SysResult<Kstat> {
        DevptsRoot.stat()
    }
    fn readdir(&self) -> SysResult<Vec<DirEntry>> {
        let mut v = vec![
            DirEntry {
                ino: 1,
                kind: 4,
                name: b".".to_vec(),
            },
            DirEntry {
                ino: 1,
                kind: 4,
                name: b"..".to_vec(),
            },
            DirEntry {
                ino: 2,
                kind: 2,
                name: b"ptmx".to_vec(),
            },
        ];
        for &i in lock(ptys()).keys() {
            v.push(DirEntry {
                ino: i as u64 + 3,
                kind: 2,
                name: i.to_string().into_bytes(),
            });
        }
        Ok(v)
    }
}

impl Inode for PtmxNode {
    fn stat(&self) -> SysResult<Kstat> {
        // devpts' own ptmx node: mode 0 unless mounted with ptmxmode= (Linux default).
        Ok(Kstat {
            dev: devpts_dev(),
            ino: 2,
            mode: mode::S_IFCHR,
            rdev: encode_dev(5, 2),
            nlink: 1,
            blksize: 1024,
            ..Kstat::default()
        })
    }
    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
        open_ptmx(io.task, flags)
    }
    fn id(&self) -> u64 {
        2
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn fs_id(&self) -> u64 {
        devpts_fs_id()
    }
}

impl Inode for SlaveNode {
    fn stat(&self) -> SysResult<Kstat> {
        let p = self.pty.upgrade().ok_or(Errno::ENOENT)?;
        let n = p.slave_node();
        Ok(Kstat {
            dev: n.dev,
            ino: n.ino,
            mode: mode::S_IFCHR | n.mode,
            uid: n.uid,
            gid: n.gid,
            rdev: n.rdev,
            nlink: 1,
            blksize: 1024,
            ..Kstat::default()
        })
    }
    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
        match self.pty.upgrade() {
            Some(p) if pty(self.index).is_some_and(|q| Arc::ptr_eq(&p, &q)) => {
                open_slave(self.index, io.task, flags)
            }
            _ => Err(Errno::EIO),
        }
    }
    fn id(&self) -> u64 {
        self.index as u64 + 3
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn fs_id(&self) -> u64 {
        devpts_fs_id()
    }
}

/// The root inode of devpts, for mounting on `/dev/pts`.
pub fn devpts_root() -> Arc<dyn Inode> {
    Arc::new(DevptsRoot)
}
