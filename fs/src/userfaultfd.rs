//! userfaultfd (Linux `fs/userfaultfd.c`, `mm/userfaultfd.c`; man userfaultfd(2),
//! ioctl_userfaultfd(2)): page faults of registered ranges handled by a user-space monitor.
//!
//! [`UffdCtx`] is the context (`struct userfaultfd_ctx`): the negotiated features, the faults
//! not yet read and those read but not yet resolved, and two wait queues: the descriptor's
//! readers and pollers, and the faulting threads. [`UserfaultFile`] is the open descriptor;
//! closing it releases the context, which wakes every faulting thread (their faults then
//! resolve normally: a released context is ignored on the vmas that still name it, where Linux
//! clears them). `/dev/userfaultfd` ([`register_dev`], `USERFAULTFD_IOC_NEW`) makes the same
//! descriptors.
//!
//! The vma side lives in `um-mm`: [`um_mm::Vma::uffd`] holds a registration, and
//! [`um_mm::Mm::userfault`] tells the run loop (`kernel/src/run.rs`) which guest faults come
//! here; the faulting thread then sleeps in [`UffdCtx::handle_fault`] (interruptibly: a
//! pending signal ends the sleep, the loop delivers it and the access is retried) until
//! `UFFDIO_COPY`, `UFFDIO_ZEROPAGE` or `UFFDIO_WAKE` covers its page or the descriptor is
//! closed. The ioctls act on the address space the descriptor was made in (`ctx->mm`), which
//! may be the caller's own, so they are served from `ioctl(2)` before the caller's mm is
//! locked ([`UserfaultFile::ioctl`]).
//!
//! What is here: `UFFDIO_API` (features `PAGEFAULT_FLAG_WP`, `SIGBUS`, `THREAD_ID`,
//! `EXACT_ADDRESS`, `POISON`), `UFFDIO_REGISTER` in MISSING and WP modes on private anonymous
//! memory, `UFFDIO_UNREGISTER`, `UFFDIO_WAKE`, `UFFDIO_COPY` (with `MODE_WP`),
//! `UFFDIO_ZEROPAGE`, `UFFDIO_WRITEPROTECT` (present pages; the PTE bit is
//! `um_mm::PteFlags::UFFD_WP`), `UFFDIO_POISON` (its SIGBUS has `BUS_ADRERR`, not Linux's
//! `BUS_MCEERR_AR`). Not yet: minor mode, `WP_UNPOPULATED`/`WP_ASYNC`, shmem and hugetlbfs
//! ranges, `UFFDIO_MOVE`/`CONTINUE`, the non-fault events (fork, remap, remove, unmap: their
//! features are refused), and faults taken by the kernel's own copies of guest memory (they
//! fill the page with zeros, or end a write-protection, instead of waiting).
//! The syscall is in `sys/userfaultfd.rs`.

use crate::pipe::{anon_kstat, next_ino};
use std::any::Any;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use um_kernel::syscall::{SyscallCtx, lock_mm};
use um_kernel::task::lock;
use um_kernel::vfs::{self, FileOps, GuestMem, Kstat, OpenFile, Owner, mode};
use um_kernel::wait::{IoCtx, PollTable, WaitQueue, wait_event};
use um_mm::{Mm, SegvCode, UffdReg, Userfault};
use um_uapi::abi::loopdev::MISC_MAJOR;
use um_uapi::abi::pod::Pod;
use um_uapi::abi::poll::{POLLERR, POLLIN};
use um_uapi::abi::userfaultfd::*;
use um_uapi::{Errno, SysResult};

use um_uapi::abi::capability::CAP_SYS_PTRACE;
pub use um_uapi::abi::fcntl::O_CLOEXEC;
pub use um_uapi::abi::fcntl::O_NONBLOCK;

/// The features this implementation can honour (a request for any other is `EINVAL`, as a
/// Linux built without the option answers).
pub const FEATURES: u64 = UFFD_FEATURE_PAGEFAULT_FLAG_WP
    | UFFD_FEATURE_SIGBUS
    | UFFD_FEATURE_THREAD_ID
    | UFFD_FEATURE_EXACT_ADDRESS
    | UFFD_FEATURE_POISON;
/// The range ioctls a registered range answers (`UFFD_API_RANGE_IOCTLS` less those not here).
pub const RANGE_IOCTLS: u64 =
    (1 << NR_WAKE) | (1 << NR_COPY) | (1 << NR_ZEROPAGE) | (1 << NR_POISON);

/// What `UFFDIO_COPY`, `UFFDIO_ZEROPAGE` and `UFFDIO_POISON` put in each page.
#[derive(Clone, Copy)]
enum Fill {
    /// The caller's bytes from this address on.
    Copy(u64),
    Zero,
    /// A poison marker: an access raises SIGBUS.
    Poison,
}

/// One fault handed to the monitor.
struct Fault {
    /// Identifies the sleeping thread's entry.
    id: u64,
    /// The faulting page (what `UFFDIO_WAKE` ranges are matched against).
    page: u64,
    msg: UffdMsg,
}

#[derive(Default)]
struct State {
    /// Features from `UFFDIO_API`; `None` before the handshake.
    features: Option<u64>,
    /// Faults not read yet (`fault_pending_wqh`).
    pending: VecDeque<Fault>,
    /// Faults read, not yet woken (`fault_wqh`).
    waiting: Vec<Fault>,
}

/// A userfaultfd context (`struct userfaultfd_ctx`).
pub struct UffdCtx {
    state: Mutex<State>,
    /// Readers and pollers of the descriptor (`fd_wqh`).
    fd_wq: WaitQueue,
    /// Faulting threads (`fault_pending_wqh` and `fault_wqh` in one).
    fault_wq: WaitQueue,
    /// The address space it serves (`ctx->mm`).
    mm: Weak<Mutex<Mm>>,
    /// The descriptor is closed (`ctx->released`).
    released: AtomicBool,
    /// `O_NONBLOCK` at creation: Linux's poll answers only non-blocking descriptors.
    nonblock: bool,
    next_id: AtomicU64,
}

impl UffdCtx {
    /// A context for the address space `mm`.
    pub fn new(mm: &Arc<Mutex<Mm>>, nonblock: bool) -> Arc<UffdCtx> {
        Arc::new(UffdCtx {
            state: Mutex::new(State::default()),
            fd_wq: WaitQueue::new(),
            fault_wq: WaitQueue::new(),
            mm: Arc::downgrade(mm),
            released: AtomicBool::new(false),
            nonblock,
            next_id: AtomicU64::new(1),
        })
    }

    fn features(&self) -> SysResult<u64> {
        lock(&self.state).features.ok_or(Errno::EINVAL)
    }

    /// Takes the oldest unread fault, moving it to the read ones (`userfaultfd_ctx_read`).
    fn take_msg(&self) -> Option<UffdMsg> {
        let mut st = lock(&self.state);
        let f = st.pending.pop_front()?;
        let msg = f.msg;
        st.waiting.push(f);
        Some(msg)
    }

    /// Wakes the faults whose page lies in `[start, start + len)` (`wake_userfault`).
    fn wake_range(&self, start: u64, len: u64) {
        let end = start.saturating_add(len);
        {
            let mut st = lock(&self.state);
            st.pending.retain(|f| !(start <= f.page && f.page < end));
            st.waiting.retain(|f| !(start <= f.page && f.page < end));
        }
        self.fault_wq.wake_all();
    }

    /// The descriptor was closed (`userfaultfd_release`): every faulting thread is woken and
    /// its fault then resolves normally.
    fn release(&self) {
        self.released.store(true, Ordering::Release);
        {
            let mut st = lock(&self.state);
            st.pending.clear();
            st.waiting.clear();
        }
        self.fault_wq.wake_all();
        self.fd_wq.wake_all();
    }

    fn mm(&self) -> SysResult<Arc<Mutex<Mm>>> {
        self.mm.upgrade().ok_or(Errno::ESRCH)
    }

    /// fs/userfaultfd.c `validate_range`: page-aligned, non-empty, above `mmap_min_addr`,
    /// below `TASK_SIZE`.
    fn validate_range(&self, mm: &Mm, start: u64, len: u64) -> SysResult<u64> {
        let g = mm.granule();
        let l = mm.layout();
        if !g.is_aligned(start)
            || !g.is_aligned(len)
            || len == 0
            || start < l.min_addr
            || start >= l.task_size
            || len > l.task_size - start
        {
            return Err(Errno::EINVAL);
        }
        Ok(start + len)
    }
}

impl Userfault for UffdCtx {
    fn released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    /// fs/userfaultfd.c `handle_userfault`: queue the message, wake the readers, sleep until
    /// the entry is woken or the context released; a pending signal ends the sleep and drops
    /// the message (the access is retried after delivery and faults again).
    fn handle_fault(&self, addr: u64, flags: u64) -> Result<(), SegvCode> {
        let Some(task) = um_kernel::current::current() else {
            return Ok(());
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let page = addr & !(um_mm::page_size() - 1);
        {
            let mut st = lock(&self.state);
            let features = st.features.unwrap_or(0);
            if features & UFFD_FEATURE_SIGBUS != 0 {
                return Err(SegvCode::Bus);
            }
            if self.released() {
                return Ok(());
            }
            let address = if features & UFFD_FEATURE_EXACT_ADDRESS != 0 {
                addr
            } else {
                page
            };
            let ptid = if features & UFFD_FEATURE_THREAD_ID != 0 {
                task.tid
            } else {
                0
            };
            let msg = UffdMsg::pagefault(flags, address, ptid);
            st.pending.push_back(Fault { id, page, msg });
        }
        self.fd_wq.wake_all();
        let queued = || {
            let st = lock(&self.state);
            st.pending
                .iter()
                .chain(st.waiting.iter())
                .any(|f| f.id == id)
        };
        let r = wait_event(&task, &[&self.fault_wq], None, || {
            (self.released() || !queued()).then_some(())
        });
        if r.is_err() {
            let mut st = lock(&self.state);
            st.pending.retain(|f| f.id != id);
            st.waiting.retain(|f| f.id != id);
        }
        Ok(())
    }
}

/// An open userfaultfd.
pub struct UserfaultFile {
    ctx: Arc<UffdCtx>,
    ino: u64,
}

impl UserfaultFile {
    /// A descriptor for a new context on `mm`.
    pub fn new(mm: &Arc<Mutex<Mm>>, nonblock: bool) -> UserfaultFile {
        UserfaultFile {
            ctx: UffdCtx::new(mm, nonblock),
            ino: next_ino(),
        }
    }

    /// The context as the vmas hold it.
    fn dyn_ctx(&self) -> Arc<dyn Userfault> {
        self.ctx.clone()
    }

    /// `userfaultfd_ioctl`, called by `ioctl(2)` before it locks the caller's address space
    /// (the context's may be the same one).
    pub fn ioctl(&self, c: &SyscallCtx<'_>, cmd: u32, arg: u64) -> SysResult {
        if cmd != UFFDIO_API {
            self.ctx.features()?;
        }
        match cmd {
            UFFDIO_API => self.api(c, arg),
            UFFDIO_REGISTER => self.register(c, arg),
            UFFDIO_UNREGISTER => {
                let r = UffdioRange::read_le(&c.read_bytes(arg, UffdioRange::SIZE)?);
                let mm = self.ctx.mm()?;
                {
                    let mut m = lock_mm(&mm);
                    let end = self.ctx.validate_range(&m, r.start, r.len)?;
                    m.uffd_unregister(r.start, end, &self.dyn_ctx())?;
                }
                // userfaultfd_unregister wakes the faults of the range it leaves.
                self.ctx.wake_range(r.start, r.len);
                Ok(0)
            }
            UFFDIO_WAKE => {
                let r = UffdioRange::read_le(&c.read_bytes(arg, UffdioRange::SIZE)?);
                let mm = self.ctx.mm()?;
                self.ctx.validate_range(&lock_mm(&mm), r.start, r.len)?;
                self.ctx.wake_range(r.start, r.len);
                Ok(0)
            }
            UFFDIO_COPY => {
                // The last field is out only (copy_from_user of sizeof - sizeof(__s64)).
                let b = c.read_bytes(arg, UffdioCopy::SIZE - 8)?;
                let mut a = b.clone();
                a.extend_from_slice(&[0; 8]);
                let u = UffdioCopy::read_le(&a);
                if u.src.checked_add(u.len).is_none_or(|e| e <= u.src)
                    || u.mode & !(UFFDIO_COPY_MODE_DONTWAKE | UFFDIO_COPY_MODE_WP) != 0
                {
                    return Err(Errno::EINVAL);
                }
                self.fill(c, arg + 32, u.dst, u.len, Fill::Copy(u.src), u.mode)
            }
            UFFDIO_ZEROPAGE => {
                let b = c.read_bytes(arg, UffdioZeropage::SIZE - 8)?;
                let mut a = b.clone();
                a.extend_from_slice(&[0; 8]);
                let u = UffdioZeropage::read_le(&a);
                if u.mode & !UFFDIO_COPY_MODE_DONTWAKE != 0 {
                    return Err(Errno::EINVAL);
                }
                self.fill(c, arg + 24, u.range.start, u.range.len, Fill::Zero, u.mode)
            }
            UFFDIO_POISON => {
                let mut b = c.read_bytes(arg, UffdioZeropage::SIZE - 8)?;
                b.extend_from_slice(&[0; 8]);
                let u = UffdioZeropage::read_le(&b);
                // UFFDIO_POISON_MODE_DONTWAKE is bit 0 as for the others.
                if u.mode & !UFFDIO_COPY_MODE_DONTWAKE != 0 {
                    return Err(Errno::EINVAL);
                }
                self.fill(
                    c,
                    arg + 24,
                    u.range.start,
                    u.range.len,
                    Fill::Poison,
                    u.mode,
                )
            }
            UFFDIO_WRITEPROTECT => self.writeprotect(arg, c),
            _ => Err(Errno::EINVAL),
        }
    }

    /// `userfaultfd_api`: the handshake, once. A bad version, an unknown feature or a second
    /// call is `EINVAL` and zeroes the caller's structure.
    fn api(&self, c: &SyscallCtx<'_>, arg: u64) -> SysResult {
        let mut a = UffdioApi::read_le(&c.read_bytes(arg, UffdioApi::SIZE)?);
        let fail = |c: &SyscallCtx<'_>, e: Errno| {
            c.write_bytes(arg, &UffdioApi::default().as_bytes())?;
            Err(e)
        };
        let want = a.features;
        if a.api != UFFD_API || want & !FEATURES != 0 {
            return fail(c, Errno::EINVAL);
        }
        a.features = FEATURES;
        a.ioctls = UFFD_API_IOCTLS;
        c.write_bytes(arg, &a.as_bytes())?;
        let mut st = lock(&self.ctx.state);
        if st.features.is_some() {
            drop(st);
            return fail(c, Errno::EINVAL);
        }
        st.features = Some(want);
        Ok(0)
    }

    /// `userfaultfd_register`: MISSING and WP modes (MINOR needs an option this kernel lacks:
    /// `EINVAL`, as Linux without `CONFIG_HAVE_ARCH_USERFAULTFD_MINOR`).
    fn register(&self, c: &SyscallCtx<'_>, arg: u64) -> SysResult {
        let r = UffdioRegister::read_le(&c.read_bytes(arg, UffdioRegister::SIZE)?);
        let modes = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP;
        if r.mode & !modes != 0 || r.mode == 0 {
            return Err(Errno::EINVAL);
        }
        let mm = self.ctx.mm()?;
        {
            let mut m = lock_mm(&mm);
            let end = self.ctx.validate_range(&m, r.range.start, r.range.len)?;
            let reg = UffdReg {
                ctx: self.dyn_ctx(),
                mode: r.mode,
            };
            m.uffd_register(r.range.start, end, reg)?;
        }
        // UFFDIO_WRITEPROTECT only for a WP range.
        let mut ioctls = RANGE_IOCTLS;
        if r.mode & UFFDIO_REGISTER_MODE_WP != 0 {
            ioctls |= 1 << NR_WRITEPROTECT;
        }
        c.write_bytes(arg + 24, &ioctls.to_le_bytes())?;
        Ok(0)
    }

    /// `userfaultfd_writeprotect`: set (`MODE_WP`) or clear the write protection of a range;
    /// clearing wakes its faults unless `MODE_DONTWAKE` (both together are `EINVAL`).
    fn writeprotect(&self, arg: u64, c: &SyscallCtx<'_>) -> SysResult {
        let b = c.read_bytes(arg, 24)?;
        let r = UffdioRange::read_le(&b);
        let mode = u64::from_le_bytes(b[16..24].try_into().map_err(|_| Errno::EFAULT)?);
        let wp = mode & UFFDIO_WRITEPROTECT_MODE_WP != 0;
        let dontwake = mode & UFFDIO_WRITEPROTECT_MODE_DONTWAKE != 0;
        let mm = self.ctx.mm()?;
        {
            let mut m = lock_mm(&mm);
            let end = self.ctx.validate_range(&m, r.start, r.len)?;
            if mode & !(UFFDIO_WRITEPROTECT_MODE_WP | UFFDIO_WRITEPROTECT_MODE_DONTWAKE) != 0
                || (wp && dontwake)
            {
                return Err(Errno::EINVAL);
            }
            m.uffd_writeprotect(r.start, end, wp, &self.dyn_ctx())?;
        }
        if !wp && !dontwake {
            self.ctx.wake_range(r.start, r.len);
        }
        Ok(0)
    }

    /// `UFFDIO_COPY`, `UFFDIO_ZEROPAGE` and `UFFDIO_POISON` (mm/userfaultfd.c `mfill_atomic`):
    /// page by page into the context's address space, then the result (bytes done or a
    /// negative errno) into the caller's structure at `out`, the faults of the filled range
    /// woken unless DONTWAKE, and `EAGAIN` if only part was done.
    fn fill(
        &self,
        c: &SyscallCtx<'_>,
        out: u64,
        dst: u64,
        len: u64,
        what: Fill,
        mode: u64,
    ) -> SysResult {
        let mm = self.ctx.mm()?;
        let ctx = self.dyn_ctx();
        let page = um_mm::page_size();
        // Only UFFDIO_COPY has MODE_WP (bit 1 of UFFDIO_ZEROPAGE's mode is refused above).
        let wp = matches!(what, Fill::Copy(_)) && mode & UFFDIO_COPY_MODE_WP != 0;
        let res: Result<u64, Errno> = (|| {
            let end = {
                let m = lock_mm(&mm);
                let end = self.ctx.validate_range(&m, dst, len)?;
                m.uffd_dst_ok(dst, end, &ctx)?;
                end
            };
            let mut done = 0u64;
            let mut va = dst;
            while va < end {
                let step = (|| {
                    // mfill_atomic: a fatal signal stops a long copy.
                    if c.task.dying() {
                        return Err(Errno::EINTR);
                    }
                    let data = match what {
                        Fill::Copy(s) => Some(c.read_bytes(s + (va - dst), page as usize)?),
                        Fill::Zero => None,
                        Fill::Poison => return lock_mm(&mm).uffd_poison(va, &ctx),
                    };
                    lock_mm(&mm).uffd_fill(va, data.as_deref(), wp, &ctx)
                })();
                if let Err(e) = step {
                    return if done > 0 { Ok(done) } else { Err(e) };
                }
                done += page;
                va += page;
            }
            Ok(done)
        })();
        let v = match res {
            Ok(n) => n as i64,
            Err(e) => -i64::from(e.get()),
        };
        c.write_bytes(out, &v.to_le_bytes())?;
        let done = res?;
        if mode & UFFDIO_COPY_MODE_DONTWAKE == 0 {
            self.ctx.wake_range(dst, done);
        }
        if done == len {
            Ok(0)
        } else {
            Err(Errno::EAGAIN)
        }
    }
}

impl Drop for UserfaultFile {
    fn drop(&mut self) {
        self.ctx.release();
    }
}

impl FileOps for UserfaultFile {
    /// `userfaultfd_read`: whole messages only (`EINVAL` below 32 bytes or before the
    /// handshake); only the first one may block.
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        self.ctx.features()?;
        if buf.len() < UffdMsg::SIZE {
            return Err(Errno::EINVAL);
        }
        let first = io.wait(&[&self.ctx.fd_wq], || self.ctx.take_msg())?;
        buf[..UffdMsg::SIZE].copy_from_slice(&first.as_bytes());
        let mut n = UffdMsg::SIZE;
        while buf.len() - n >= UffdMsg::SIZE {
            let Some(m) = self.ctx.take_msg() else { break };
            buf[n..n + UffdMsg::SIZE].copy_from_slice(&m.as_bytes());
            n += UffdMsg::SIZE;
        }
        Ok(n)
    }

    fn is_stream(&self) -> bool {
        true
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(anon_kstat(0o600, self.ino, 0x0d, 0, 0))
    }

    /// `userfaultfd_poll`: `POLLERR` before the handshake and for a blocking descriptor (a
    /// fault may be woken before it is read, so poll could not promise a read would not block);
    /// `POLLIN` while a fault is unread.
    fn poll(&self, _events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        if let Some(pt) = pt {
            pt.wait_on(&self.ctx.fd_wq);
        }
        let st = lock(&self.ctx.state);
        if st.features.is_none() || !self.ctx.nonblock {
            return POLLERR;
        }
        if st.pending.is_empty() { 0 } else { POLLIN }
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }

    fn anon_name(&self) -> Option<&'static str> {
        Some("[userfaultfd]")
    }
}

/// Makes a userfaultfd for the calling task (`new_userfaultfd`): `flags` are
/// `O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY`; without the last the caller needs
/// `CAP_SYS_PTRACE` (`userfaultfd_syscall_allowed` with `vm.unprivileged_userfaultfd` = 0).
pub fn new_fd(c: &SyscallCtx<'_>, flags: u32) -> SysResult {
    if flags & !(O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & UFFD_USER_MODE_ONLY == 0 && !c.task.process.capable(CAP_SYS_PTRACE) {
        return Err(Errno::EPERM);
    }
    install(c.task, flags)
}

fn install(task: &Arc<um_kernel::task::Task>, flags: u32) -> SysResult {
    let file = UserfaultFile::new(&task.mm(), flags & O_NONBLOCK != 0);
    let f = OpenFile::new(Box::new(file), 2 | (flags & O_NONBLOCK), None);
    Ok(lock(&task.process.files()).install(f, flags & O_CLOEXEC != 0, 0)? as u64)
}

/// An open `/dev/userfaultfd` (Linux 6.1 `userfaultfd_dev_ioctl`): its one ioctl makes a
/// userfaultfd with the given flags; who may open the node decides who may use it, so no
/// capability is needed.
struct DevFile;

impl FileOps for DevFile {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(anon_kstat(0o600, 0, 0x0d, 0, 0))
    }

    fn ioctl(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, _mem: &mut dyn GuestMem) -> SysResult<u64> {
        if cmd != USERFAULTFD_IOC_NEW {
            return Err(Errno::EINVAL);
        }
        let flags = arg as u32;
        if flags & !(O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY) != 0 {
            return Err(Errno::EINVAL);
        }
        install(io.task, flags)
    }
}

/// Registers `/dev/userfaultfd` (misc 10:126, root's, mode 0600) at boot.
pub fn register_dev() {
    vfs::register_chrdev(
        MISC_MAJOR,
        USERFAULTFD_MINOR,
        Arc::new(|_io: &IoCtx<'_>, _flags: u32| Ok(Box::new(DevFile) as Box<dyn FileOps>)),
    );
    let made = crate::devfs::devtmpfs().mknod(
        b"userfaultfd",
        mode::S_IFCHR | 0o600,
        vfs::encode_dev(MISC_MAJOR, USERFAULTFD_MINOR),
        Owner::default(),
    );
    if let Err(e) = made
        && e != Errno::EEXIST
    {
        log::warn!("userfaultfd: cannot make /dev/userfaultfd: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The advertised features and ioctl masks are what the implementation serves: none of
    /// the event, write-protect or minor-fault features, and the range ioctls it answers.
    #[test]
    fn advertised_features_and_ioctls() {
        assert_eq!(FEATURES & UFFD_FEATURE_EVENT_FORK, 0);
        assert_eq!(FEATURES & UFFD_FEATURE_MINOR_SHMEM, 0);
        assert_eq!(FEATURES & !UFFD_FEATURES_ALL, 0);
        assert_eq!(RANGE_IOCTLS, 0b1_0001_1100);
        assert_eq!(UFFD_API_IOCTLS, (1 << 0x3f) | 0b11);
    }
}
