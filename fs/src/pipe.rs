//! Pipes and FIFOs (Linux `fs/pipe.c`, `fs/fifo.c` folded into `fifo_open`).
//!
//! A [`Pipe`] is a bounded byte [`Ring`] (64 KiB, `PIPE_DEF_BUFFERS` pages) with reader and
//! writer counts and two wait queues (`rd_wait`: readers wait for data or for the last writer
//! to go; `wr_wait`: writers wait for room or for the last reader to go). Each open end is a
//! [`PipeEnd`] (the `FileOps` behind an `OpenFile`); dropping it (the last `close` of the open
//! file description) is Linux's `pipe_release`. `pipe(2)`/`pipe2(2)` live in `sys/pipe.rs`;
//! named FIFOs are opened through [`open_fifo`], keyed by the inode identity the VFS hands in.
//!
//! Also here: small helpers for the other pseudo files of this crate (sockets, epoll, eventfd,
//! timerfd, signalfd): inode numbers ([`next_ino`]), their `Kstat` ([`anon_kstat`]), and the
//! SIGPIPE a write to a reader-less pipe or socket raises ([`send_sigpipe`]).

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use um_kernel::task::{Task, lock};
use um_kernel::vfs::{FileOps, GuestMem, Kstat, SetAttr, mode};
use um_kernel::wait::{IoCtx, PollTable, WaitQueue};
use um_uapi::abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use um_uapi::abi::signal::{SI_USER, SIGPIPE, Siginfo};
use um_uapi::{Errno, SysResult};

/// Writes of at most this many bytes are atomic (`PIPE_BUF`).
pub const PIPE_BUF: usize = 4096;
/// Default pipe capacity in pages (`PIPE_DEF_BUFFERS`).
pub const PIPE_DEF_BUFFERS: usize = 16;
pub use um_uapi::abi::capability::CAP_SYS_RESOURCE;
/// `/proc/sys/fs/pipe-max-size` at boot.
pub const PIPE_MAX_SIZE: usize = 1 << 20;

/// The current `/proc/sys/fs/pipe-max-size`: how large an unprivileged F_SETPIPE_SZ may go.
static MAX_SIZE: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(PIPE_MAX_SIZE);

/// `/proc/sys/fs/pipe-max-size`.
pub fn pipe_max_size() -> usize {
    MAX_SIZE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Sets `/proc/sys/fs/pipe-max-size` (fs/pipe.c `proc_dopipe_max_size_conv`): the value is
/// rounded as `round_pipe_size` does (at least a page, a power of two); above 2^31 `EINVAL`.
pub fn set_pipe_max_size(v: u64) -> SysResult<usize> {
    if v > 1 << 31 {
        return Err(Errno::EINVAL);
    }
    let page = um_mm::page_size() as usize;
    let size = (v as usize).max(page).next_power_of_two();
    MAX_SIZE.store(size, std::sync::atomic::Ordering::Relaxed);
    Ok(size)
}
pub use um_uapi::abi::tty::FIONREAD;

/// A bounded FIFO of bytes, which may hold packets (a pipe in packet mode).
#[derive(Debug)]
pub struct Ring {
    buf: VecDeque<u8>,
    cap: usize,
    /// How the queued bytes were written, front first: runs of ordinary bytes and packets
    /// (Linux pipe buffers with `PIPE_BUF_FLAG_PACKET`). Adjacent ordinary runs merge.
    segs: VecDeque<Seg>,
}

/// A run of queued bytes in a [`Ring`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seg {
    len: usize,
    packet: bool,
}

impl Ring {
    /// An empty ring holding at most `cap` bytes.
    pub fn new(cap: usize) -> Ring {
        Ring {
            buf: VecDeque::new(),
            cap,
            segs: VecDeque::new(),
        }
    }
    /// Bytes queued.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// Free space.
    pub fn room(&self) -> usize {
        self.cap.saturating_sub(self.buf.len())
    }
    /// The capacity.
    pub fn capacity(&self) -> usize {
        self.cap
    }
    /// Changes the capacity; never below what is queued.
    pub fn set_capacity(&mut self, cap: usize) -> bool {
        if cap < self.buf.len() {
            return false;
        }
        self.cap = cap;
        true
    }
    /// Appends as much of `data` as fits; returns how much.
    pub fn push(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.room());
        self.buf.extend(&data[..n]);
        match self.segs.back_mut() {
            Some(s) if !s.packet => s.len += n,
            _ if n > 0 => self.segs.push_back(Seg {
                len: n,
                packet: false,
            }),
            _ => {}
        }
        n
    }

    /// Appends `data` as one packet if it fits whole; returns whether it did.
    pub fn push_packet(&mut self, data: &[u8]) -> bool {
        if data.is_empty() || data.len() > self.room() {
            return false;
        }
        self.buf.extend(data);
        self.segs.push_back(Seg {
            len: data.len(),
            packet: true,
        });
        true
    }

    /// Drops `n` (at most what is queued) bytes from the front, and the runs they end.
    fn consume(&mut self, n: usize) {
        self.buf.drain(..n);
        let mut left = n;
        while left > 0 {
            let Some(s) = self.segs.front_mut() else {
                break;
            };
            if s.len <= left {
                left -= s.len;
                self.segs.pop_front();
            } else {
                s.len -= left;
                left = 0;
            }
        }
    }
    /// Copies up to `out.len()` bytes from the front without consuming them.
    pub fn peek(&self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.buf.len());
        let (a, b) = self.buf.as_slices();
        if n <= a.len() {
            out[..n].copy_from_slice(&a[..n]);
        } else {
            out[..a.len()].copy_from_slice(a);
            out[a.len()..n].copy_from_slice(&b[..n - a.len()]);
        }
        n
    }
    /// Removes and returns up to `out.len()` bytes from the front (pipe_read): a read takes
    /// at most one packet, and what of it does not fit in `out` is lost; ordinary bytes are
    /// read up to the next packet.
    pub fn pop(&mut self, out: &mut [u8]) -> usize {
        let Some(seg) = self.segs.front().copied() else {
            return 0;
        };
        let want = out.len().min(seg.len);
        let n = self.peek(&mut out[..want]);
        self.consume(if seg.packet { seg.len } else { n });
        n
    }
    /// Drops up to `n` bytes from the front; returns how many.
    pub fn discard(&mut self, n: usize) -> usize {
        let n = n.min(self.buf.len());
        self.consume(n);
        n
    }
}

/// A fresh inode number for a pseudo file (pipefs, sockfs, anon inodes).
pub fn next_ino() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1000);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

pub use um_kernel::vfs::anon_kstat;

/// Raises SIGPIPE for `task` (Linux `send_sig(SIGPIPE, current, 0)`: `SI_USER` from itself).
pub fn send_sigpipe(task: &Arc<Task>) {
    let uid = lock(&task.process.creds).uid;
    // si_pid: the sender, itself, as its own pid namespace numbers it (task_tgid_vnr).
    let info = Siginfo::kill(SIGPIPE, SI_USER, task.process.pids.own() as i32, uid);
    um_kernel::signal::send_to_task(task, info);
}

struct State {
    ring: Ring,
    readers: usize,
    writers: usize,
    /// How many read / write opens there have ever been (FIFO open waits for a change).
    r_counter: u64,
    w_counter: u64,
}

/// A pipe: the buffer both ends share (Linux `struct pipe_inode_info`).
pub struct Pipe {
    st: Mutex<State>,
    rd_wait: WaitQueue,
    wr_wait: WaitQueue,
    ino: u64,
    /// The FIFO registry key, for named pipes.
    key: Option<u64>,
    /// The pipefs inode's mode bits, owner and group: (mode & 07777, uid, gid); fchmod and
    /// fchown of an anonymous pipe change them (`simple_setattr`).
    attrs: Mutex<(u32, u32, u32)>,
}

impl Pipe {
    /// A new pipe; `privileged`: its creator has CAP_SYS_RESOURCE (see [`initial_capacity`]).
    fn new(key: Option<u64>, uid: u32, gid: u32, privileged: bool) -> Arc<Pipe> {
        Arc::new(Pipe {
            st: Mutex::new(State {
                ring: Ring::new(initial_capacity(privileged)),
                readers: 0,
                writers: 0,
                r_counter: 0,
                w_counter: 0,
            }),
            rd_wait: WaitQueue::new(),
            wr_wait: WaitQueue::new(),
            ino: key.unwrap_or_else(next_ino),
            key,
            attrs: Mutex::new((0o600, uid, gid)),
        })
    }

    fn wake(&self) {
        self.rd_wait.wake_all();
        self.wr_wait.wake_all();
    }
}

/// One open end of a pipe or FIFO.
pub struct PipeEnd {
    pipe: Arc<Pipe>,
    read: bool,
    write: bool,
    /// `w_counter` when this read end was opened: a FIFO reader that has never seen a writer
    /// does not report POLLHUP (Linux keeps it in `filp->f_version`).
    w_seen: u64,
}

impl Drop for PipeEnd {
    fn drop(&mut self) {
        // pipe_release. Registry lock before state lock, as in open_fifo.
        let mut reg = self.pipe.key.map(|_| lock(fifos()));
        {
            let mut st = lock(&self.pipe.st);
            if self.read {
                st.readers -= 1;
            }
            if self.write {
                st.writers -= 1;
            }
            if st.readers == 0
                && st.writers == 0
                && let (Some(k), Some(reg)) = (self.pipe.key, reg.as_mut())
                && reg.get(&k).is_some_and(|p| Arc::ptr_eq(p, &self.pipe))
            {
                reg.remove(&k);
            }
        }
        drop(reg);
        self.pipe.wake();
    }
}

impl PipeEnd {
    /// Opens a new end on `pipe`, counting it.
    fn open(pipe: &Arc<Pipe>, read: bool, write: bool) -> PipeEnd {
        Self::open_seeing_partner(pipe, read, write).0
    }

    /// Opens a new end on `pipe`, counting it, and returns what the other side looked like in
    /// the same critical section: for a read end (writers, `w_counter`), for a write end
    /// (readers, `r_counter`). A FIFO open decides whether to wait for a partner from these;
    /// reading them after the lock is dropped lets a partner open, do its work and close in
    /// between, and the open then waits for a partner that has come and gone (Linux
    /// `fifo_open` checks under `pipe->mutex` for the same reason).
    fn open_seeing_partner(pipe: &Arc<Pipe>, read: bool, write: bool) -> (PipeEnd, usize, u64) {
        let mut st = lock(&pipe.st);
        if read {
            st.readers += 1;
            st.r_counter += 1;
        }
        if write {
            st.writers += 1;
            st.w_counter += 1;
        }
        let partner = if read {
            (st.writers, st.w_counter)
        } else {
            (st.readers, st.r_counter)
        };
        drop(st);
        pipe.wake();
        let end = PipeEnd {
            pipe: pipe.clone(),
            read,
            write,
            w_seen: 0,
        };
        (end, partner.0, partner.1)
    }

    /// Queues bytes without waiting (unit tests, which have no task).
    #[cfg(test)]
    pub(crate) fn test_push(&self, data: &[u8]) -> usize {
        let n = lock(&self.pipe.st).ring.push(data);
        self.pipe.rd_wait.wake_all();
        n
    }

    /// The pipe's capacity (`F_GETPIPE_SZ`).
    pub fn capacity(&self) -> usize {
        lock(&self.pipe.st).ring.capacity()
    }

    /// `F_SETPIPE_SZ` (`pipe_set_size`): rounded up to a power-of-two number of pages; above
    /// `/proc/sys/fs/pipe-max-size` (1 MiB) only for the privileged (`EPERM`); `EBUSY` if the
    /// queued data would not fit. Returns the new size.
    pub fn set_capacity(&self, arg: u64, privileged: bool) -> SysResult<usize> {
        if arg > 1 << 31 {
            return Err(Errno::EINVAL);
        }
        let page = um_mm::page_size() as usize;
        let pages = (arg as usize).div_ceil(page).max(1).next_power_of_two();
        let size = pages * page;
        if size > pipe_max_size() && !privileged {
            return Err(Errno::EPERM);
        }
        if !lock(&self.pipe.st).ring.set_capacity(size) {
            return Err(Errno::EBUSY);
        }
        self.pipe.wake();
        Ok(size)
    }

    /// Bytes waiting to be read.
    pub fn available(&self) -> usize {
        lock(&self.pipe.st).ring.len()
    }
}

/// What splice(2), tee(2) and vmsplice(2) need from a pipe (Linux fs/splice.c works on the
/// `pipe_inode_info` directly: `ipipe_prep`/`opipe_prep`, `splice_pipe_to_pipe`, `link_pipe`,
/// `wait_for_space`). Waits follow `io.nonblock`, which the caller sets from
/// `SPLICE_F_NONBLOCK` and the files' `O_NONBLOCK` as `do_splice` does.
impl PipeEnd {
    /// Whether this end may be read.
    pub fn is_reader(&self) -> bool {
        self.read
    }

    /// Whether this end may be written.
    pub fn is_writer(&self) -> bool {
        self.write
    }

    /// Whether both ends belong to the same pipe.
    pub fn same_pipe(&self, other: &PipeEnd) -> bool {
        Arc::ptr_eq(&self.pipe, &other.pipe)
    }

    /// Pipe to something else (`splice_from_pipe`): waits for data (0 at end of file), then
    /// offers up to `max` queued bytes to `sink` and removes as many as it took. With `hold`
    /// the pipe stays locked while `sink` runs, so a concurrent reader cannot take the same
    /// bytes (Linux holds `pipe->mutex` throughout); use it only for sinks that never wait on
    /// a pipe themselves (regular files). Without it, the bytes are copied out first.
    pub fn splice_out(
        &self,
        io: &IoCtx<'_>,
        max: usize,
        hold: bool,
        mut sink: impl FnMut(&[u8]) -> SysResult<usize>,
    ) -> SysResult<usize> {
        if !self.read {
            return Err(Errno::EBADF);
        }
        let p = &self.pipe;
        loop {
            let more = io.wait(&[&p.rd_wait], || {
                let st = lock(&p.st);
                if !st.ring.is_empty() {
                    Some(true)
                } else if st.writers == 0 {
                    Some(false)
                } else {
                    None
                }
            })?;
            if !more {
                return Ok(0);
            }
            let taken = if hold {
                let mut st = lock(&p.st);
                let mut buf = vec![0u8; max.min(st.ring.len())];
                let n = st.ring.peek(&mut buf);
                if n == 0 {
                    continue;
                }
                let w = sink(&buf[..n])?.min(n);
                st.ring.discard(w)
            } else {
                let buf = {
                    let st = lock(&p.st);
                    let mut buf = vec![0u8; max.min(st.ring.len())];
                    let n = st.ring.peek(&mut buf);
                    buf.truncate(n);
                    buf
                };
                if buf.is_empty() {
                    continue;
                }
                let w = sink(&buf)?.min(buf.len());
                lock(&p.st).ring.discard(w)
            };
            if taken > 0 {
                p.wr_wait.wake_all();
            }
            return Ok(taken);
        }
    }

    /// Something else to pipe (`wait_for_space`): waits until the pipe has room and returns
    /// how much; `EPIPE` (and SIGPIPE) when no one reads it. The caller then fills at most
    /// that much with [`FileOps::write`].
    pub fn wait_room(&self, io: &IoCtx<'_>) -> SysResult<usize> {
        if !self.write {
            return Err(Errno::EBADF);
        }
        let p = &self.pipe;
        let r = io.wait(&[&p.wr_wait], || {
            let st = lock(&p.st);
            if st.readers == 0 {
                Some(Err(Errno::EPIPE))
            } else if st.ring.room() > 0 {
                Some(Ok(st.ring.room()))
            } else {
                None
            }
        })?;
        if r == Err(Errno::EPIPE) {
            send_sigpipe(io.task);
        }
        r
    }

    /// Pipe to pipe: `splice_pipe_to_pipe` (`consume`) or `link_pipe` for tee (the bytes stay
    /// in `self`). Waits until `self` has data (0 once it is empty with no writers) and `out`
    /// has room (`EPIPE` and SIGPIPE with no reader), then moves what fits, up to `max`. The
    /// two pipes are locked in address order, as `pipe_double_lock` does.
    pub fn transfer(
        &self,
        io: &IoCtx<'_>,
        out: &PipeEnd,
        max: usize,
        consume: bool,
    ) -> SysResult<usize> {
        if !self.read || !out.write {
            return Err(Errno::EBADF);
        }
        if self.same_pipe(out) {
            return Err(Errno::EINVAL);
        }
        let (a, b) = (&self.pipe, &out.pipe);
        let r = io.wait(&[&a.rd_wait, &b.wr_wait], || {
            let (mut si, mut so);
            if Arc::as_ptr(a) < Arc::as_ptr(b) {
                si = lock(&a.st);
                so = lock(&b.st);
            } else {
                so = lock(&b.st);
                si = lock(&a.st);
            }
            if si.ring.is_empty() {
                return if si.writers == 0 { Some(Ok(0)) } else { None };
            }
            if so.readers == 0 {
                return Some(Err(Errno::EPIPE));
            }
            let n = max.min(si.ring.len()).min(so.ring.room());
            if n == 0 {
                return None;
            }
            let mut buf = vec![0u8; n];
            si.ring.peek(&mut buf);
            so.ring.push(&buf);
            if consume {
                si.ring.discard(n);
            }
            Some(Ok(n))
        })?;
        match r {
            Ok(n) if n > 0 => {
                b.rd_wait.wake_all();
                if consume {
                    a.wr_wait.wake_all();
                }
            }
            Err(Errno::EPIPE) => send_sigpipe(io.task),
            _ => {}
        }
        r
    }
}

/// The capacity of a new pipe (fs/pipe.c `alloc_pipe_info`): `PIPE_DEF_BUFFERS` pages, but
/// no more than `pipe-max-size` for a creator without CAP_SYS_RESOURCE.
fn initial_capacity(privileged: bool) -> usize {
    let page = um_mm::page_size() as usize;
    let def = PIPE_DEF_BUFFERS * page;
    let max = pipe_max_size();
    if def > max && !privileged {
        (max / page).max(1) * page
    } else {
        def
    }
}

/// Makes an anonymous pipe: (read end, write end), owned by `uid:gid`; `privileged` as for
/// [`initial_capacity`].
pub fn new_pipe(uid: u32, gid: u32, privileged: bool) -> (PipeEnd, PipeEnd) {
    let p = Pipe::new(None, uid, gid, privileged);
    let r = PipeEnd::open(&p, true, false);
    let w = PipeEnd::open(&p, false, true);
    (r, w)
}

impl FileOps for PipeEnd {
    /// pipe_read: waits for data or for every writer to be gone (EOF).
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        if !self.read {
            return Err(Errno::EBADF);
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let p = &self.pipe;
        let n = io.wait(&[&p.rd_wait], || {
            let mut st = lock(&p.st);
            if !st.ring.is_empty() {
                Some(st.ring.pop(buf))
            } else if st.writers == 0 {
                Some(0)
            } else {
                None
            }
        })?;
        if n > 0 {
            p.wr_wait.wake_all();
        }
        Ok(n)
    }

    /// pipe_write: writes of at most `PIPE_BUF` bytes go in whole; larger ones as room allows,
    /// waiting until everything is written unless non-blocking. No reader: SIGPIPE and EPIPE.
    /// A file with `O_DIRECT` writes packets (`is_packetized`): each write, a page at a time,
    /// becomes packets that a read takes one at a time.
    fn write(&self, io: &IoCtx<'_>, data: &[u8], _off: u64) -> SysResult<usize> {
        if !self.write {
            return Err(Errno::EBADF);
        }
        if data.is_empty() {
            return Ok(0);
        }
        let p = &self.pipe;
        let atomic = data.len() <= PIPE_BUF;
        let packet = io.flags & um_kernel::arch::native::abi::O_DIRECT != 0;
        let page = um_mm::page_size() as usize;
        let mut done = 0usize;
        while done < data.len() {
            let r = io.wait(&[&p.wr_wait], || {
                let mut st = lock(&p.st);
                if st.readers == 0 {
                    return Some(Err(Errno::EPIPE));
                }
                if packet {
                    let chunk = &data[done..data.len().min(done + page)];
                    return st.ring.push_packet(chunk).then_some(Ok(chunk.len()));
                }
                let need = if atomic { data.len() } else { 1 };
                if st.ring.room() >= need {
                    Some(Ok(st.ring.push(&data[done..])))
                } else {
                    None
                }
            });
            match r {
                Ok(Ok(n)) => {
                    done += n;
                    p.rd_wait.wake_all();
                }
                Ok(Err(e)) => {
                    send_sigpipe(io.task);
                    return if done > 0 { Ok(done) } else { Err(e) };
                }
                Err(e) => return if done > 0 { Ok(done) } else { Err(e) },
            }
        }
        Ok(done)
    }

    fn is_stream(&self) -> bool {
        true
    }

    fn stat(&self) -> SysResult<Kstat> {
        let p = &self.pipe;
        let (m, uid, gid) = *lock(&p.attrs);
        Ok(anon_kstat(
            mode::S_IFIFO | m,
            p.ino,
            if p.key.is_some() { 0 } else { 0x0c },
            uid,
            gid,
        ))
    }

    fn setattr(&self, attr: &SetAttr) -> SysResult<()> {
        let mut a = lock(&self.pipe.attrs);
        if let Some(m) = attr.mode {
            a.0 = m & 0o7777;
        }
        if let Some(u) = attr.uid {
            a.1 = u;
        }
        if let Some(g) = attr.gid {
            a.2 = g;
        }
        Ok(())
    }

    fn size(&self) -> SysResult<u64> {
        Ok(0)
    }

    fn ioctl(&self, _io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        match cmd {
            FIONREAD => {
                let n = self.available() as i32;
                mem.write(arg, &n.to_le_bytes())?;
                Ok(0)
            }
            _ => Err(Errno::ENOTTY),
        }
    }

    /// pipe_poll.
    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        let p = &self.pipe;
        // A reader is woken by writes and closes (rd_wait), a writer by reads and closes
        // (wr_wait): registering only there keeps writes from waking writers' pollers.
        if let Some(pt) = pt {
            if self.read {
                pt.wait_on(&p.rd_wait);
            }
            if self.write {
                pt.wait_on(&p.wr_wait);
            }
        }
        let st = lock(&p.st);
        let mut mask = 0;
        if self.read {
            if !st.ring.is_empty() {
                mask |= POLLIN | POLLRDNORM;
            }
            if st.writers == 0 && st.w_counter != self.w_seen {
                mask |= POLLHUP;
            }
        }
        if self.write {
            if st.ring.room() >= PIPE_BUF.min(st.ring.capacity()) {
                mask |= POLLOUT | POLLWRNORM;
            }
            if st.readers == 0 {
                mask |= POLLERR;
            }
        }
        mask & (events | POLLERR | POLLHUP)
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// The pipe end behind an open file, if it is one (`get_pipe_info`).
pub fn pipe_of(f: &um_kernel::vfs::OpenFile) -> Option<&PipeEnd> {
    f.ops.as_any().and_then(|a| a.downcast_ref::<PipeEnd>())
}

fn fifos() -> &'static Mutex<HashMap<u64, Arc<Pipe>>> {
    static FIFOS: OnceLock<Mutex<HashMap<u64, Arc<Pipe>>>> = OnceLock::new();
    FIFOS.get_or_init(Default::default)
}

/// Opens the FIFO whose inode identity is `key` (Linux `fifo_open`): `O_RDONLY` waits for a
/// writer (not with `O_NONBLOCK`), `O_WRONLY` waits for a reader (`O_NONBLOCK`: `ENXIO` when
/// there is none), `O_RDWR` never waits. The pipe lives while any end is open.
pub fn open_fifo(key: u64, flags: u32, io: &IoCtx<'_>) -> SysResult<Box<dyn FileOps>> {
    let nonblock = flags & 0o4000 != 0;
    let (uid, gid) = {
        let c = lock(&io.task.process.creds);
        (c.fsuid, c.fsgid)
    };
    let privileged = io.task.process.capable(CAP_SYS_RESOURCE);
    let mut reg = lock(fifos());
    let pipe = reg
        .entry(key)
        .or_insert_with(|| Pipe::new(Some(key), uid, gid, privileged))
        .clone();
    match flags & 3 {
        0 => {
            let (mut end, writers, seen) = PipeEnd::open_seeing_partner(&pipe, true, false);
            drop(reg);
            // fifo_open: only a non-blocking reader that finds no writer suppresses POLLHUP
            // until a writer comes (`f_version = w_counter`); any other reader reports it once
            // the last writer goes (runc waits in epoll for its exec FIFO's writer to close).
            if nonblock && writers == 0 {
                end.w_seen = seen;
            }
            if writers == 0 && !nonblock {
                // wait_for_partner: until some writer has opened since.
                io.wait(&[&pipe.rd_wait], || {
                    (lock(&pipe.st).w_counter != seen).then_some(())
                })?;
            }
            Ok(Box::new(end))
        }
        1 => {
            let readers = lock(&pipe.st).readers;
            if readers == 0 && nonblock {
                let st = lock(&pipe.st);
                if st.readers == 0 && st.writers == 0 {
                    reg.remove(&key);
                }
                return Err(Errno::ENXIO);
            }
            let (end, readers, seen) = PipeEnd::open_seeing_partner(&pipe, false, true);
            drop(reg);
            if readers == 0 {
                io.wait(&[&pipe.wr_wait], || {
                    (lock(&pipe.st).r_counter != seen).then_some(())
                })?;
            }
            Ok(Box::new(end))
        }
        2 => {
            let end = PipeEnd::open(&pipe, true, true);
            drop(reg);
            Ok(Box::new(end))
        }
        _ => {
            let st = lock(&pipe.st);
            if st.readers == 0 && st.writers == 0 {
                reg.remove(&key);
            }
            Err(Errno::EINVAL)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_wraps_and_bounds() {
        let mut r = Ring::new(8);
        assert_eq!(r.push(b"abcdef"), 6);
        let mut out = [0u8; 4];
        assert_eq!(r.pop(&mut out), 4);
        assert_eq!(&out, b"abcd");
        assert_eq!(r.push(b"ghijklmn"), 6);
        assert_eq!(r.room(), 0);
        assert_eq!(r.push(b"x"), 0);
        let mut all = [0u8; 16];
        assert_eq!(r.peek(&mut all), 8);
        assert_eq!(&all[..8], b"efghijkl");
        assert_eq!(r.len(), 8);
        assert_eq!(r.pop(&mut all), 8);
        assert!(r.is_empty());
        assert_eq!(r.pop(&mut all), 0);
    }

    #[test]
    fn packets_are_read_one_at_a_time() {
        let mut r = Ring::new(16);
        assert!(r.push_packet(b"abc"));
        assert!(r.push_packet(b"defgh"));
        assert!(
            !r.push_packet(b"0123456789"),
            "a packet goes in whole or not at all"
        );
        assert_eq!(r.push(b"xy"), 2);
        assert_eq!(r.push(b"z"), 1);
        let mut out = [0u8; 16];
        // One packet per read, even with room for more.
        assert_eq!(r.pop(&mut out), 3);
        assert_eq!(&out[..3], b"abc");
        // A short read loses the rest of its packet.
        assert_eq!(r.pop(&mut out[..2]), 2);
        assert_eq!(&out[..2], b"de");
        // Ordinary bytes written one after the other read together.
        assert_eq!(r.pop(&mut out), 3);
        assert_eq!(&out[..3], b"xyz");
        assert!(r.is_empty());
        // Ordinary bytes stop at the next packet; discarding keeps the runs right.
        assert_eq!(r.push(b"12"), 2);
        assert!(r.push_packet(b"pq"));
        assert_eq!(r.pop(&mut out), 2);
        assert_eq!(r.discard(1), 1);
        assert_eq!(r.pop(&mut out), 1);
        assert_eq!(&out[..1], b"q");
        assert!(r.is_empty());
    }

    #[test]
    fn counts_follow_ends() {
        let (r, w) = new_pipe(0, 0, true);
        let p = r.pipe.clone();
        let counts = |p: &Pipe| {
            let st = lock(&p.st);
            (st.readers, st.writers)
        };
        assert_eq!(counts(&p), (1, 1));
        drop(w);
        assert_eq!(lock(&p.st).writers, 0);
        assert_eq!(r.poll(POLLIN, None), POLLHUP);
        drop(r);
        assert_eq!(lock(&p.st).readers, 0);
    }

    #[test]
    fn fifo_reader_sees_hangup_unless_opened_nonblocking_alone() {
        // A reader opened while a writer is there: POLLHUP once the writer closes.
        let pipe = Pipe::new(Some(7), 0, 0, true);
        let (w, _, _) = PipeEnd::open_seeing_partner(&pipe, false, true);
        let (r, writers, _) = PipeEnd::open_seeing_partner(&pipe, true, false);
        assert_eq!(writers, 1);
        assert_eq!(r.poll(POLLIN, None), 0);
        drop(w);
        assert_eq!(r.poll(POLLIN, None), POLLHUP);
        // A non-blocking reader alone (its open records w_counter): no POLLHUP until a writer
        // has come and gone.
        let pipe = Pipe::new(Some(8), 0, 0, true);
        let (mut r, writers, seen) = PipeEnd::open_seeing_partner(&pipe, true, false);
        assert_eq!(writers, 0);
        r.w_seen = seen;
        assert_eq!(r.poll(POLLIN, None), 0);
        let (w, _, _) = PipeEnd::open_seeing_partner(&pipe, false, true);
        drop(w);
        assert_eq!(r.poll(POLLIN, None), POLLHUP);
    }

    #[test]
    fn poll_bits() {
        let (r, w) = new_pipe(0, 0, true);
        assert_eq!(r.poll(POLLIN, None), 0);
        assert_eq!(w.poll(POLLOUT, None), POLLOUT);
        lock(&r.pipe.st).ring.push(b"hi");
        assert_eq!(r.poll(POLLIN, None), POLLIN);
        assert_eq!(r.available(), 2);
        drop(r);
        assert_eq!(w.poll(POLLOUT, None), POLLOUT | POLLERR);
    }
}
