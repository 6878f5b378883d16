//! System V shared memory segments (Linux ipc/shm.c; shmget(2), shmop(2), shmctl(2)).
//!
//! A segment's pages are a [`um_mm::Shmem`] object, the same one `MAP_SHARED|MAP_ANONYMOUS`
//! uses: `shmat` maps it as a shared mapping (`Backing::Shmem`), so attachments are inherited
//! across fork, dropped with the address space at exit and exec, and moved by `mremap`. Each
//! vma holds a reference to the object, so the number of attachments (`shm_nattch`) is the
//! object's reference count less the table's own: one per vma, as Linux counts `shm_open`s
//! (a vma split by mprotect counts twice there too).
//!
//! `IPC_RMID` of an attached segment marks it `SHM_DEST`, makes its key private and gives up
//! the table's reference (only a weak one is kept): the pages go with the last vma, and the
//! entry is dropped from the table the next time the table is looked at (`shm_destroy`, done
//! lazily by [`ShmNs::reap`]). Until then it can still be attached and stat'ed by id, as Linux
//! allows.

use super::{Caller, Ids, Perm, check_perms, limits, may_ctl, now};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use um_mm::Shmem;
use um_uapi::abi::ipc::{
    Ipc64Perm, SHM_DEST, SHM_HUGETLB, SHM_LOCKED, ShmInfo, ShmidDs, Shminfo64,
};
use um_uapi::{Errno, SysResult};

/// `SHMMIN`: the smallest segment.
pub const SHMMIN: u64 = 1;

/// One segment (`struct shmid_kernel`).
pub struct Segment {
    /// `shm_segsz`: the size asked for (the mapping is that rounded up to pages).
    pub size: u64,
    /// The table's reference, until `IPC_RMID`.
    shm: Option<Arc<Shmem>>,
    /// The object, for as long as anyone maps it.
    weak: Weak<Shmem>,
    /// `Shmem::id`, to recognise the segment's vmas.
    pub object_id: u64,
    pub atime: i64,
    pub dtime: i64,
    pub ctime: i64,
    pub cpid: i32,
    pub lpid: i32,
    /// Pages counted in `shm_tot`.
    pages: u64,
    /// The page size (for the byte figures of `/proc/sysvipc/shm`).
    page: u64,
    /// A `SHM_HUGETLB` segment's huge page reservation, given back with the segment.
    _huge: Option<um_mm::hugetlb::Reservation>,
}

impl Segment {
    /// `shm_nattch`: the vmas that map the segment.
    pub fn nattch(&self) -> u64 {
        (self.weak.strong_count() - usize::from(self.shm.is_some())) as u64
    }

    /// The pages object, while it exists.
    pub fn object(&self) -> Option<Arc<Shmem>> {
        self.weak.upgrade()
    }

    fn stat(&self, perm: &Perm) -> ShmidDs {
        ShmidDs {
            shm_perm: perm.to_abi(),
            shm_segsz: self.size,
            shm_atime: self.atime,
            shm_dtime: self.dtime,
            shm_ctime: self.ctime,
            shm_cpid: self.cpid,
            shm_lpid: self.lpid,
            shm_nattch: self.nattch(),
            ..Default::default()
        }
    }
}

/// The segment table and `shm_tot`.
#[derive(Default)]
pub struct ShmNs {
    pub ids: Ids<Segment>,
    /// Pages of all segments (`shm_tot`).
    tot: u64,
    /// `Shmem::id` to segment id, for shmdt.
    by_object: HashMap<u64, i32>,
}

/// The segment table of the caller's IPC namespace ([`um_kernel::ipcns`]).
pub fn table() -> Arc<Mutex<ShmNs>> {
    table_of(&um_kernel::ipcns::current())
}

/// The segment table of IPC namespace `ns` (its objects go when the namespace does).
pub fn table_of(ns: &um_kernel::ipcns::IpcNs) -> Arc<Mutex<ShmNs>> {
    ns.generic::<Mutex<ShmNs>>()
}

/// Locks a segment table, dropping the removed segments nobody maps any more.
pub fn lock_ns(t: &Mutex<ShmNs>) -> MutexGuard<'_, ShmNs> {
    let mut g = t.lock().unwrap_or_else(|e| e.into_inner());
    g.reap();
    g
}

/// What `shmat` needs of a segment.
pub struct Attach {
    pub shm: Arc<Shmem>,
    pub size: u64,
}

impl ShmNs {
    /// `shm_destroy` of the removed segments nobody maps any more.
    pub fn reap(&mut self) {
        let mut gone = Vec::new();
        self.ids.retain(|p, s| {
            let keep = !(p.mode & SHM_DEST != 0 && s.nattch() == 0);
            if !keep {
                gone.push((s.object_id, s.pages));
            }
            keep
        });
        for (obj, pages) in gone {
            self.by_object.remove(&obj);
            self.tot -= pages;
        }
    }

    /// shmget (`newseg`, `shm_more_checks`). `page` is the guest page size.
    pub fn get(
        &mut self,
        c: &Caller,
        key: i32,
        size: u64,
        flg: u32,
        page: u64,
        make: impl FnOnce() -> Arc<Shmem>,
    ) -> SysResult<i32> {
        let l = limits();
        let max = l.shmmni.load(Ordering::Relaxed).max(0) as u32;
        let tot = self.tot;
        let mut created = None;
        let id = self.ids.get_or_create(
            c,
            key,
            flg,
            max,
            || {
                if size < SHMMIN || size > l.shmmax.load(Ordering::Relaxed) {
                    return Err(Errno::EINVAL);
                }
                let pages = size.div_ceil(page);
                if pages.checked_mul(page).is_none() {
                    return Err(Errno::ENOSPC);
                }
                match tot.checked_add(pages) {
                    Some(t) if t <= l.shmall.load(Ordering::Relaxed) => {}
                    _ => return Err(Errno::ENOSPC),
                }
                // SHM_HUGETLB: newseg -> hugetlb_file_setup's checks and reservation
                // (um_fs::hugetlbfs::shm_reserve); the segment holds the reservation.
                let huge = if flg & SHM_HUGETLB != 0 {
                    let may = c.cap_ipc_lock || c.in_group(um_fs::hugetlbfs::shm_group());
                    um_fs::hugetlbfs::shm_reserve(size, flg, may)?
                } else {
                    None
                };
                let shm = make();
                created = Some((shm.id(), pages));
                Ok(Segment {
                    size,
                    weak: Arc::downgrade(&shm),
                    object_id: shm.id(),
                    shm: Some(shm),
                    atime: 0,
                    dtime: 0,
                    ctime: now(),
                    cpid: c.pid,
                    lpid: 0,
                    pages,
                    page,
                    _huge: huge,
                })
            },
            |s| {
                if s.size < size {
                    Err(Errno::EINVAL)
                } else {
                    Ok(())
                }
            },
        )?;
        if let Some((obj, pages)) = created {
            self.tot += pages;
            self.by_object.insert(obj, id);
        }
        Ok(id)
    }

    /// The checks of shmat after the address ones (`do_shmat`): the segment (`EINVAL`), the
    /// permission for `acc` (`EACCES`); records the attach time and pid.
    pub fn attach(&mut self, c: &Caller, id: i32, acc: u32) -> SysResult<Attach> {
        let (p, s) = self.ids.get(id)?;
        check_perms(c, p, acc)?;
        let shm = s.object().ok_or(Errno::EIDRM)?;
        s.atime = now();
        s.lpid = c.pid;
        Ok(Attach { shm, size: s.size })
    }

    /// The segment whose object is `object_id`, if it is a SysV segment: its id and size.
    pub fn by_object(&mut self, object_id: u64) -> Option<(i32, u64)> {
        let id = *self.by_object.get(&object_id)?;
        let (_, s) = self.ids.get(id).ok()?;
        Some((id, s.size))
    }

    /// A detach by process `pid` (`shm_close`): the detach time and pid.
    pub fn detached(&mut self, pid: i32, id: i32) {
        if let Ok((_, s)) = self.ids.get(id) {
            s.dtime = now();
            s.lpid = pid;
        }
    }

    /// IPC_STAT, SHM_STAT, SHM_STAT_ANY (`shm_ctl_stat`): by id or (the `*_STAT` commands) by
    /// index; `check` asks for read permission. Returns the id too.
    pub fn stat(
        &mut self,
        c: &Caller,
        id: i32,
        by_idx: bool,
        check: bool,
    ) -> SysResult<(i32, ShmidDs)> {
        let (id, p, s) = self.ids.get_for_stat(c, id, by_idx, check)?;
        Ok((id, s.stat(p)))
    }

    /// IPC_SET (`shmctl_down`).
    pub fn set(&mut self, c: &Caller, id: i32, perm: &Ipc64Perm) -> SysResult<()> {
        let (p, s) = self.ids.get(id)?;
        may_ctl(c, p)?;
        p.set(perm);
        s.ctime = now();
        Ok(())
    }

    /// IPC_RMID (`do_shm_rmid`): destroyed now if nobody maps it, else marked `SHM_DEST` with a
    /// private key, destroyed at the last detach.
    pub fn rmid(&mut self, c: &Caller, id: i32) -> SysResult<()> {
        let (p, s) = self.ids.get(id)?;
        may_ctl(c, p)?;
        p.mode |= SHM_DEST;
        p.key = super::IPC_PRIVATE;
        s.shm = None;
        self.reap();
        Ok(())
    }

    /// SHM_LOCK / SHM_UNLOCK (`shmctl_do_lock`): `CAP_IPC_LOCK`, or the owner or creator. Pages
    /// are never swapped here, so only the flag changes.
    pub fn lock(&mut self, c: &Caller, id: i32, lock: bool) -> SysResult<()> {
        let (p, _) = self.ids.get(id)?;
        if !c.cap_ipc_lock && c.euid != p.uid && c.euid != p.cuid {
            return Err(Errno::EPERM);
        }
        if lock {
            p.mode |= SHM_LOCKED;
        } else {
            p.mode &= !SHM_LOCKED;
        }
        Ok(())
    }

    /// IPC_INFO (`shm_ipc_info`): the limits, and the highest index in use.
    pub fn ipc_info(&self) -> (i32, Shminfo64) {
        let l = limits();
        let mni = l.shmmni.load(Ordering::Relaxed).max(0) as u64;
        let info = Shminfo64 {
            shmmax: l.shmmax.load(Ordering::Relaxed),
            shmmin: SHMMIN,
            shmmni: mni,
            shmseg: mni,
            shmall: l.shmall.load(Ordering::Relaxed),
            ..Default::default()
        };
        (self.ids.max_idx(), info)
    }

    /// SHM_INFO (`shm_get_stat`): segments in use, pages in them and pages resident.
    pub fn shm_info(&self) -> (i32, ShmInfo) {
        let rss = self
            .ids
            .iter()
            .filter_map(|(_, _, s)| s.object())
            .map(|o| o.pages() as u64)
            .sum();
        let info = ShmInfo {
            used_ids: self.ids.in_use() as i32,
            shm_tot: self.tot,
            shm_rss: rss,
            ..Default::default()
        };
        (self.ids.max_idx(), info)
    }

    /// `/proc/sysvipc/shm` (ipc/shm.c `sysvipc_shm_proc_show`).
    pub fn proc_text(&self) -> String {
        let mut s = String::from(
            "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n",
        );
        for (id, p, g) in self.ids.iter() {
            let rss = g.object().map_or(0, |o| o.pages() as u64) * g.page;
            s.push_str(&format!(
                "{:10} {:10}  {:4o} {:21} {:5} {:5}  {:5} {:5} {:5} {:5} {:5} {:10} {:10} {:10} {:21} {:21}\n",
                p.key, id, p.mode, g.size, g.cpid, g.lpid, g.nattch(), p.uid, p.gid, p.cuid,
                p.cgid, g.atime, g.dtime, g.ctime, rss, 0
            ));
        }
        s
    }
}

/// `shm_close` for the segments an exiting process still maps (Linux `exit_mmap` closes each
/// vma): their detach time and pid. The pages themselves go with the address space. An address
/// space another process still uses (a vfork parent's, shared by the exiting child) is not
/// being torn down: nothing is detached.
pub fn exit_mm(p: &um_kernel::task::Process) {
    let mm = um_kernel::task::lock(&p.mm).clone();
    // The process's own reference and this one.
    if Arc::strong_count(&mm) > 2 {
        return;
    }
    let objects: Vec<u64> = um_kernel::task::lock(&mm)
        .vmas()
        .iter()
        .filter_map(|v| match &v.backing {
            um_mm::Backing::Shmem { shm, .. } => Some(shm.id()),
            _ => None,
        })
        .collect();
    drop(mm);
    if objects.is_empty() {
        return;
    }
    // The segments are in the namespace the process is in now (one it entered later with
    // setns does not have them: their detach is not recorded).
    let table = table_of(&um_kernel::ipcns::of(p));
    let mut ns = lock_ns(&table);
    for o in objects {
        if let Some((id, _)) = ns.by_object(o) {
            ns.detached(p.pid as i32, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use um_mm::FrameAllocator;
    use um_uapi::abi::ipc::{IPC_CREAT, IPC_EXCL, IPC_PRIVATE};

    fn root() -> Caller {
        Caller {
            pid: 10,
            ..Default::default()
        }
    }

    fn frames() -> Arc<FrameAllocator> {
        let pm = Arc::new(um_mm::HeapMemory::new(1 << 20));
        Arc::new(FrameAllocator::new(pm, um_mm::Granule::K4))
    }

    #[test]
    fn create_rmid_and_last_detach() {
        let f = frames();
        let mut ns = ShmNs::default();
        let c = root();
        let mk = || Arc::new(Shmem::new(f.clone()));
        assert_eq!(
            ns.get(&c, 7, 0, IPC_CREAT | 0o600, 4096, mk),
            Err(Errno::EINVAL),
            "size 0 on create"
        );
        let id = ns.get(&c, 7, 5000, IPC_CREAT | 0o600, 4096, mk).unwrap();
        assert_eq!(ns.tot, 2);
        assert_eq!(ns.get(&c, 7, 4096, 0, 4096, mk), Ok(id));
        assert_eq!(ns.get(&c, 7, 9000, 0, 4096, mk), Err(Errno::EINVAL));
        assert_eq!(
            ns.get(&c, 7, 1, IPC_CREAT | IPC_EXCL, 4096, mk),
            Err(Errno::EEXIST)
        );
        // Two attaches (two vmas), then IPC_RMID: still there, private, marked.
        let a1 = ns.attach(&c, id, 0o666).unwrap();
        let a2 = ns.attach(&c, id, 0o444).unwrap();
        let (_, st) = ns.stat(&c, id, false, true).unwrap();
        assert_eq!((st.shm_nattch, st.shm_segsz, st.shm_cpid), (2, 5000, 10));
        ns.rmid(&c, id).unwrap();
        let (_, st) = ns.stat(&c, id, false, true).unwrap();
        assert_eq!(st.shm_perm.key, IPC_PRIVATE);
        assert_eq!(u32::from(st.shm_perm.mode) & SHM_DEST, SHM_DEST);
        assert_eq!(ns.get(&c, 7, 1, 0, 4096, mk), Err(Errno::ENOENT));
        drop(a1.shm);
        ns.reap();
        assert_eq!(ns.stat(&c, id, false, true).unwrap().1.shm_nattch, 1);
        drop(a2.shm);
        ns.reap();
        assert_eq!(ns.stat(&c, id, false, true).err(), Some(Errno::EINVAL));
        assert_eq!(ns.tot, 0);
    }

    #[test]
    fn permissions_and_owner() {
        let f = frames();
        let mut ns = ShmNs::default();
        let c = root();
        let mk = || Arc::new(Shmem::new(f.clone()));
        let id = ns
            .get(&c, IPC_PRIVATE, 100, IPC_CREAT | 0o640, 4096, mk)
            .unwrap();
        let other = Caller {
            pid: 11,
            euid: 1000,
            egid: 1000,
            ..Default::default()
        };
        assert_eq!(ns.attach(&other, id, 0o444).err(), Some(Errno::EACCES));
        assert_eq!(ns.stat(&other, id, false, true).err(), Some(Errno::EACCES));
        assert!(ns.stat(&other, 0, true, false).is_ok(), "SHM_STAT_ANY");
        assert_eq!(ns.rmid(&other, id), Err(Errno::EPERM));
        assert_eq!(ns.lock(&other, id, true), Err(Errno::EPERM));
        ns.lock(&c, id, true).unwrap();
        assert_eq!(
            u32::from(ns.stat(&c, id, false, true).unwrap().1.shm_perm.mode) & SHM_LOCKED,
            SHM_LOCKED
        );
        ns.rmid(&c, id).unwrap();
        assert_eq!(ns.ids.in_use(), 0, "no attachment: gone at once");
    }
}
