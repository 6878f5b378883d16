//! Open overlay files (Linux fs/overlayfs/file.c, readdir.c).
//!
//! [`OvlFile`]: a regular file is the real file opened (upper, else lower),
//! with the overlay's `stat`; every other operation is the real file's, `mmap` included (its
//! [`FileOps::vm_file`]). A file opened read-only on the lower layer that was copied up since
//! reads the upper copy (`ovl_real_fdget_meta` reopens it); mappings already made stay on
//! the lower file (overlayfs.rst's caveat). A FIFO, socket or device node opens as the
//! real node's driver or pipe does, unwrapped.
//!
//! [`OvlDir`]: the merged listing (`ovl_dir_read_merged`): `.` and `..`, then the upper
//! directory's entries, then each lower directory's top down, a name listed once (the top
//! one wins), whiteouts hidden (a name whose top entry is a whiteout is not listed from
//! below either). Entry types `DT_CHR`, `DT_UNKNOWN`, and on hostfs `DT_REG` (hostfs lists
//! its device nodes as regular files) are looked up to recognise whiteouts. The listing is
//! cached until the overlay changes (Linux's `ovl_dir_cache` and `ovl_dir_version`).

use crate::inode::OvlInode;
use crate::is_whiteout;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use um_kernel::task::lock;
use um_kernel::vfs::{DirEntry, FileOps, GuestMem, Inode, Kstat};
use um_kernel::wait::{IoCtx, PollTable};
use um_mm::VmFile;
use um_uapi::abi::fcntl::{DT_CHR, DT_DIR, DT_REG, DT_UNKNOWN, O_CREAT, O_EXCL, O_TRUNC};
use um_uapi::{Errno, SysResult};

/// The names in real directory `dir`, without `.` and `..`.
pub fn real_names(dir: &dyn Inode, io: &IoCtx<'_>) -> SysResult<Vec<Vec<u8>>> {
    Ok(real_entries(dir, io)?.into_iter().map(|e| e.name).collect())
}

fn real_entries(dir: &dyn Inode, io: &IoCtx<'_>) -> SysResult<Vec<DirEntry>> {
    let f = dir.open(io, um_uapi::abi::fcntl::O_RDONLY)?;
    let mut v = f.readdir()?;
    v.retain(|e| e.name != b"." && e.name != b"..");
    Ok(v)
}

/// Whether entry `e` of real directory `dir` is a whiteout.
fn entry_is_whiteout(dir: &dyn Inode, e: &DirEntry) -> bool {
    let hostfs = dir.as_any().is::<um_fs::hostfs::HostInode>();
    let check = matches!(e.kind, DT_CHR | DT_UNKNOWN) || (hostfs && e.kind == DT_REG);
    check && dir.lookup(&e.name).is_ok_and(|c| is_whiteout(&*c))
}

/// The merged listing of overlay directory `d`, `.` and `..` first.
pub fn merged(d: &OvlInode, io: &IoCtx<'_>) -> SysResult<Vec<DirEntry>> {
    let st = d.stat()?;
    let parent_ino = d
        .parent()
        .and_then(|p| p.stat().ok())
        .map_or(st.ino, |p| p.ino);
    let mut out = vec![
        DirEntry {
            ino: st.ino,
            kind: DT_DIR,
            name: b".".to_vec(),
        },
        DirEntry {
            ino: parent_ino,
            kind: DT_DIR,
            name: b"..".to_vec(),
        },
    ];
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let layers: Vec<Arc<dyn Inode>> = d.upper().into_iter().chain(d.lowers()).collect();
    for layer in layers {
        for e in real_entries(&*layer, io)? {
            if seen.contains(&e.name) {
                continue;
            }
            seen.insert(e.name.clone());
            if !entry_is_whiteout(&*layer, &e) {
                out.push(e);
            }
        }
    }
    Ok(out)
}

/// An open overlay directory.
pub struct OvlDir {
    inode: Arc<OvlInode>,
    /// The listing and the overlay version it was made at.
    cache: Mutex<Option<(u64, Vec<DirEntry>)>>,
}

impl OvlDir {
    pub(crate) fn new(inode: Arc<OvlInode>) -> OvlDir {
        OvlDir {
            inode,
            cache: Mutex::new(None),
        }
    }
}

impl FileOps for OvlDir {
    fn stat(&self) -> SysResult<Kstat> {
        self.inode.stat()
    }

    fn readdir(&self) -> SysResult<Vec<DirEntry>> {
        let version = self.inode.fs().version.load(Ordering::Acquire);
        if let Some((v, list)) = &*lock(&self.cache)
            && *v == version
        {
            return Ok(list.clone());
        }
        let list = crate::with_io(|io| merged(&self.inode, io))?;
        *lock(&self.cache) = Some((version, list.clone()));
        Ok(list)
    }

    fn fsync(&self, datasync: bool) -> Option<SysResult<()>> {
        Some(self.inode.real().and_then(|r| r.fsync(datasync)))
    }
}

/// The real file under an [`OvlFile`].
struct Real {
    ops: Arc<dyn FileOps>,
    upper: bool,
}

/// An open overlay regular or special file.
pub struct OvlFile {
    inode: Arc<OvlInode>,
    flags: u32,
    real: Mutex<Real>,
}

impl OvlFile {
    /// Opens the real file of `inode` (the caller copied it up if it is opened for writing).
    pub(crate) fn open(
        inode: Arc<OvlInode>,
        io: &IoCtx<'_>,
        flags: u32,
    ) -> SysResult<Box<dyn FileOps>> {
        if inode.fmt() != um_kernel::vfs::mode::S_IFREG {
            // FIFOs, sockets and device nodes are their driver's open file, never copied up.
            return inode.real()?.open(io, flags);
        }
        let upper = inode.is_upper();
        let ops: Arc<dyn FileOps> = Arc::from(inode.real()?.open(io, flags)?);
        Ok(Box::new(OvlFile {
            inode,
            flags,
            real: Mutex::new(Real { ops, upper }),
        }))
    }

    /// The real file now; a lower one replaced by its upper copy if there is one since.
    fn real(&self, io: Option<&IoCtx<'_>>) -> Arc<dyn FileOps> {
        let mut r = lock(&self.real);
        if !r.upper
            && let Some(io) = io
            && let Some(u) = self.inode.upper()
            && let Ok(ops) = u.open(io, self.flags & !(O_CREAT | O_EXCL | O_TRUNC))
        {
            r.ops = Arc::from(ops);
            r.upper = true;
        }
        r.ops.clone()
    }
}

impl FileOps for OvlFile {
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], off: u64) -> SysResult<usize> {
        self.real(Some(io)).read(io, buf, off)
    }

    fn write(&self, io: &IoCtx<'_>, data: &[u8], off: u64) -> SysResult<usize> {
        self.real(Some(io)).write(io, data, off)
    }

    fn is_stream(&self) -> bool {
        self.real(None).is_stream()
    }

    /// The overlay's attributes (`ovl_getattr`), not the real file's.
    fn stat(&self) -> SysResult<Kstat> {
        self.inode.stat()
    }

    fn size(&self) -> SysResult<u64> {
        self.real(None).size()
    }

    fn seek_data_hole(&self, off: u64, data: bool) -> SysResult<u64> {
        self.real(None).seek_data_hole(off, data)
    }

    fn readdir(&self) -> SysResult<Vec<DirEntry>> {
        Err(Errno::ENOTDIR)
    }

    fn ioctl(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        self.real(Some(io)).ioctl(io, cmd, arg, mem)
    }

    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        self.real(None).poll(events, pt)
    }

    fn can_poll(&self) -> bool {
        self.real(None).can_poll()
    }

    fn maps_as_anonymous(&self) -> bool {
        self.real(None).maps_as_anonymous()
    }

    fn vm_file(&self) -> Option<Arc<dyn VmFile>> {
        self.real(None).vm_file()
    }

    fn may_mmap(&self, shared_write: bool) -> SysResult<()> {
        self.real(None).may_mmap(shared_write)
    }

    fn mmap_check(&self, off: u64, len: u64) -> SysResult<()> {
        self.real(None).mmap_check(off, len)
    }

    fn fsync(&self, datasync: bool) -> Option<SysResult<()>> {
        Some(match self.real(None).fsync(datasync) {
            Some(r) => r,
            None => self.inode.real().and_then(|r| r.fsync(datasync)),
        })
    }
}
