//! Linux native AIO contexts (fs/aio.c, io_setup(2)): the `kioctx` of each io_setup, found
//! by its id within the address space that made it, and the system-wide count behind
//! `/proc/sys/fs/aio-nr` and `aio-max-nr`. The syscalls are `sys/aio.rs`.
//!
//! I/O is done synchronously at submit (reads and writes through the file layer's own
//! pread/pwrite paths), so a context holds finished events until io_getevents reaps them;
//! only `IOCB_CMD_POLL` stays pending until its file is ready (or io_cancel). The id is the
//! address of a zeroed read-write mapping in the caller's address space, as Linux's is the
//! address of its event ring: libaio reads the ring header there and, finding no
//! `AIO_RING_MAGIC`, always takes the syscall (the ring is not kept; nothing reads it).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_kernel::task::lock;
use um_kernel::vfs::OpenFile;
use um_kernel::wait::WaitQueue;
use um_mm::Mm;
use um_uapi::abi::probe::IoEvent;

/// `/proc/sys/fs/aio-max-nr` (fs/aio.c `aio_max_nr`, 0x10000).
static MAX_NR: AtomicU64 = AtomicU64::new(65536);
/// `aio_nr`: the events all live contexts asked for.
static NR: AtomicU64 = AtomicU64::new(0);

/// `aio-max-nr`.
pub fn max_nr() -> u64 {
    MAX_NR.load(Ordering::Relaxed)
}

/// `aio-nr`.
pub fn nr() -> u64 {
    NR.load(Ordering::Relaxed)
}

/// A poll request waiting for its file (`struct poll_iocb`).
pub struct PendingPoll {
    pub file: Arc<OpenFile>,
    /// `demangle_poll(aio_buf) | EPOLLERR | EPOLLHUP`.
    pub events: u16,
    pub data: u64,
    pub obj: u64,
    pub resfd: Option<Arc<OpenFile>>,
}

/// Events and pending polls of a context.
#[derive(Default)]
pub struct CtxState {
    pub done: VecDeque<IoEvent>,
    pub polls: Vec<PendingPoll>,
    /// Set by io_destroy: waiters return.
    pub dead: bool,
}

/// One context (`struct kioctx`).
pub struct Kioctx {
    pub id: u64,
    /// The address space it belongs to (`lookup_ioctx` looks in `current->mm` only).
    pub mm: Weak<Mutex<Mm>>,
    /// What io_setup asked for (`max_reqs`, counted in `aio-nr`).
    pub max_reqs: u64,
    /// Ring slots (`nr_events`): at most `nr_events - 1` requests in flight.
    pub nr_events: u64,
    /// The ring mapping's length, unmapped by io_destroy.
    pub ring_len: u64,
    pub st: Mutex<CtxState>,
    /// Woken when an event is added or the context dies.
    pub wq: WaitQueue,
}

fn table() -> &'static Mutex<HashMap<u64, Arc<Kioctx>>> {
    static T: OnceLock<Mutex<HashMap<u64, Arc<Kioctx>>>> = OnceLock::new();
    T.get_or_init(Default::default)
}

/// Forgets contexts whose address space is gone (`exit_aio` at exit and exec), giving their
/// events back to `aio-nr`.
fn reap_dead(t: &mut HashMap<u64, Arc<Kioctx>>) {
    t.retain(|_, k| {
        let live = k.mm.strong_count() > 0;
        if !live {
            NR.fetch_sub(k.max_reqs, Ordering::Relaxed);
        }
        live
    });
}

/// Charges `max_reqs` to `aio-nr` (`ioctx_alloc`): false past `aio-max-nr`.
pub fn charge(max_reqs: u64) -> bool {
    let mut t = lock(table());
    reap_dead(&mut t);
    let cur = NR.load(Ordering::Relaxed);
    if cur.checked_add(max_reqs).is_none_or(|n| n > max_nr()) {
        return false;
    }
    NR.store(cur + max_reqs, Ordering::Relaxed);
    true
}

/// Gives back a charge whose context could not be made.
pub fn remove_charge(max_reqs: u64) {
    NR.fetch_sub(max_reqs, Ordering::Relaxed);
}

/// Records a new context.
pub fn insert(k: Arc<Kioctx>) {
    lock(table()).insert(k.id, k);
}

/// `lookup_ioctx`: the context `id` of address space `mm`.
pub fn lookup(id: u64, mm: &Arc<Mutex<Mm>>) -> Option<Arc<Kioctx>> {
    lock(table())
        .get(&id)
        .filter(|k| std::ptr::eq(k.mm.as_ptr(), Arc::as_ptr(mm)))
        .cloned()
}

/// `kill_ioctx`: removes the context and gives back its events.
pub fn remove(id: u64) -> Option<Arc<Kioctx>> {
    let k = lock(table()).remove(&id)?;
    NR.fetch_sub(k.max_reqs, Ordering::Relaxed);
    lock(&k.st).dead = true;
    k.wq.wake_all();
    Some(k)
}

/// `aio_complete`: queues the event and signals the eventfd of `IOCB_FLAG_RESFD`.
pub fn complete(k: &Kioctx, ev: IoEvent, resfd: Option<&Arc<OpenFile>>) {
    lock(&k.st).done.push_back(ev);
    if let Some(e) = resfd.and_then(|f| crate::eventfd::EventFd::of(f)) {
        e.signal(1);
    }
    k.wq.wake_all();
}
