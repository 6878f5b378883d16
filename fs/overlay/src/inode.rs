//! The overlay's inodes (Linux fs/overlayfs/namei.c lookup, inode.c attributes, dir.c the
//! namespace operations, xattrs.c).
//!
//! An [`OvlInode`] is one name of the merged tree: its upper inode (if it has one yet) and
//! the lower inodes it stands for (a non-directory: the topmost; a directory: every lower
//! directory it merges, top first, down to an opaque one). It keeps its parent and name so
//! that copy-up can make its parents first. The path walk makes a new one at every lookup
//! (dentries are not cached here), so the upper inode is found again through the parent when
//! another lookup's object copied it up ([`OvlInode::upper`]); inode numbers come from the
//! overlay's table by origin, so every object of one name has the same [`Inode::id`].
//! Neighbours: [`crate::copy_up`], [`crate::file`] (open files and the merged readdir).

use crate::{OvlFs, is_whiteout};
use std::any::Any;
use std::sync::{Arc, Mutex, Weak};
use um_kernel::task::lock;
use um_kernel::vfs::{FileOps, Inode, Kstat, Owner, SetAttr, Statfs, mode};
use um_kernel::wait::IoCtx;
use um_uapi::abi::fcntl::{O_ACCMODE, O_TRUNC, RENAME_EXCHANGE, RENAME_NOREPLACE};
use um_uapi::abi::overlay::{OVERLAYFS_SUPER_MAGIC, WHITEOUT_DEV, WHITEOUT_MODE};
use um_uapi::{Errno, SysResult};

/// The real inodes behind an overlay inode.
pub(crate) struct Layers {
    pub(crate) upper: Option<Arc<dyn Inode>>,
    /// Top first.
    pub(crate) lowers: Vec<Arc<dyn Inode>>,
}

/// One object of the merged tree (`struct ovl_inode` with its dentry's `ovl_entry`).
pub struct OvlInode {
    fs: Arc<OvlFs>,
    me: Weak<OvlInode>,
    parent: Option<Arc<OvlInode>>,
    name: Vec<u8>,
    /// `S_IFMT` of the object.
    fmt: u32,
    ino: u64,
    pub(crate) layers: Mutex<Layers>,
}

fn is_dir(fmt: u32) -> bool {
    fmt == mode::S_IFDIR
}

fn fmt_of(i: &dyn Inode) -> SysResult<u32> {
    Ok(i.stat()?.mode & mode::S_IFMT)
}

/// `ENOENT` as "absent".
fn opt(r: SysResult<Arc<dyn Inode>>) -> SysResult<Option<Arc<dyn Inode>>> {
    match r {
        Ok(i) => Ok(Some(i)),
        Err(Errno::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

impl OvlInode {
    pub(crate) fn new(
        fs: &Arc<OvlFs>,
        parent: Option<Arc<OvlInode>>,
        name: &[u8],
        fmt: u32,
        upper: Option<Arc<dyn Inode>>,
        lowers: Vec<Arc<dyn Inode>>,
    ) -> Arc<OvlInode> {
        let origin = match (lowers.first(), &upper) {
            (Some(l), _) => (l.fs_id(), l.id()),
            (None, Some(u)) => fs
                .origin_of(&**u)
                .map_or((u.fs_id(), u.id()), |(f, i, _)| (f, i)),
            (None, None) => (0, 0),
        };
        let ino = fs.ino_of(origin);
        Arc::new_cyclic(|me| OvlInode {
            fs: fs.clone(),
            me: me.clone(),
            parent,
            name: name.to_vec(),
            fmt,
            ino,
            layers: Mutex::new(Layers { upper, lowers }),
        })
    }

    /// The overlay this inode is of.
    pub fn fs(&self) -> &Arc<OvlFs> {
        &self.fs
    }

    pub(crate) fn arc(&self) -> SysResult<Arc<OvlInode>> {
        self.me.upgrade().ok_or(Errno::ENOENT)
    }

    pub(crate) fn name(&self) -> &[u8] {
        &self.name
    }

    pub(crate) fn parent(&self) -> Option<&Arc<OvlInode>> {
        self.parent.as_ref()
    }

    pub(crate) fn fmt(&self) -> u32 {
        self.fmt
    }

    /// The upper inode: the one this object has, or the one a copy-up through another object
    /// of the same name made (found through the parent's upper directory).
    pub fn upper(&self) -> Option<Arc<dyn Inode>> {
        if let Some(u) = lock(&self.layers).upper.clone() {
            return Some(u);
        }
        let pu = self.parent.as_ref()?.upper()?;
        let c = pu.lookup(&self.name).ok()?;
        if is_whiteout(&*c) || fmt_of(&*c).ok()? != self.fmt {
            return None;
        }
        lock(&self.layers).upper = Some(c.clone());
        Some(c)
    }

    pub(crate) fn set_upper(&self, u: Arc<dyn Inode>) {
        lock(&self.layers).upper = Some(u);
    }

    /// The lower inodes, top first.
    pub fn lowers(&self) -> Vec<Arc<dyn Inode>> {
        lock(&self.layers).lowers.clone()
    }

    /// The inode that answers for the object now (`ovl_inode_real`): upper, else top lower.
    pub fn real(&self) -> SysResult<Arc<dyn Inode>> {
        if let Some(u) = self.upper() {
            return Ok(u);
        }
        lock(&self.layers)
            .lowers
            .first()
            .cloned()
            .ok_or(Errno::ESTALE)
    }

    /// Whether the object is on the upper layer now.
    pub fn is_upper(&self) -> bool {
        self.upper().is_some()
    }

    /// A directory with lower layers (`OVL_TYPE_MERGE` or lower): what cannot be renamed
    /// without `redirect_dir`.
    fn merge_or_lower(&self) -> bool {
        !lock(&self.layers).lowers.is_empty()
    }

    fn check_dir(&self) -> SysResult<()> {
        if is_dir(self.fmt) {
            Ok(())
        } else {
            Err(Errno::ENOTDIR)
        }
    }

    fn check_writable(&self) -> SysResult<()> {
        if self.fs.upper.is_none() {
            return Err(Errno::EROFS);
        }
        Ok(())
    }

    /// `ovl_lookup` of one name, as an overlay inode.
    pub(crate) fn lookup_ovl(&self, name: &[u8]) -> SysResult<Arc<OvlInode>> {
        self.check_dir()?;
        let me = self.arc()?;
        let (upper_dir, lower_dirs) = (self.upper(), self.lowers());
        let mut upper = None;
        let mut fmt = None;
        let mut stop = false;
        if let Some(ud) = &upper_dir
            && let Some(c) = opt(ud.lookup(name))?
        {
            if is_whiteout(&*c) {
                return Err(Errno::ENOENT);
            }
            let f = fmt_of(&*c)?;
            stop = !is_dir(f) || self.fs.is_opaque(&*c);
            fmt = Some(f);
            upper = Some(c);
        }
        let mut lowers: Vec<Arc<dyn Inode>> = Vec::new();
        if !stop {
            for ld in &lower_dirs {
                let Some(c) = opt(ld.lookup(name))? else {
                    continue;
                };
                if is_whiteout(&*c) {
                    break;
                }
                let f = fmt_of(&*c)?;
                match fmt {
                    // A directory below a directory merges; anything else ends the stack.
                    Some(have) if is_dir(have) && is_dir(f) => {}
                    Some(_) => break,
                    None => fmt = Some(f),
                }
                let opaque = is_dir(f) && self.fs.is_opaque(&*c);
                lowers.push(c);
                if !is_dir(f) || opaque {
                    break;
                }
            }
        }
        let fmt = fmt.ok_or(Errno::ENOENT)?;
        Ok(OvlInode::new(&self.fs, Some(me), name, fmt, upper, lowers))
    }

    /// `ovl_lower_positive`: whether `name` exists in a lower layer below this directory (so
    /// removing or moving it away must leave a whiteout).
    fn lower_positive(&self, name: &[u8]) -> bool {
        for ld in self.lowers() {
            match ld.lookup(name) {
                Ok(c) => return !is_whiteout(&*c),
                Err(_) => continue,
            }
        }
        false
    }

    /// Makes a whiteout `name` in upper directory `pu` (`ovl_do_whiteout`).
    fn whiteout(&self, pu: &Arc<dyn Inode>, name: &[u8]) -> SysResult<()> {
        pu.mknod(
            name,
            mode::S_IFCHR | WHITEOUT_MODE,
            WHITEOUT_DEV,
            self.fs.mounter,
        )
        .map(|_| ())
    }

    /// Removes a whiteout at `name` in upper directory `pu`; whether there was one.
    fn clear_whiteout(pu: &Arc<dyn Inode>, name: &[u8]) -> SysResult<bool> {
        match opt(pu.lookup(name))? {
            Some(c) if is_whiteout(&*c) => {
                pu.unlink(name)?;
                Ok(true)
            }
            Some(_) => Err(Errno::EEXIST),
            None => Ok(false),
        }
    }

    /// `ovl_create_object`: a new object `name` in this directory, made in the upper layer by
    /// `make`, over a whiteout if there is one; a new directory in a merged directory or over
    /// a whiteout is opaque (`ovl_create_upper`, `ovl_create_over_whiteout`).
    fn create_object(
        &self,
        name: &[u8],
        make: impl FnOnce(&Arc<dyn Inode>) -> SysResult<Arc<dyn Inode>>,
    ) -> SysResult<Arc<dyn Inode>> {
        self.check_dir()?;
        self.check_writable()?;
        let _g = lock(&self.fs.ns);
        if self.lookup_ovl(name).is_ok() {
            return Err(Errno::EEXIST);
        }
        let me = self.arc()?;
        let pu = crate::copy_up::copy_up(&me, false)?;
        let over_whiteout = Self::clear_whiteout(&pu, name)?;
        let new = make(&pu)?;
        let f = fmt_of(&*new)?;
        if is_dir(f) && (over_whiteout || self.merge_or_lower()) {
            if let Err(e) = self.fs.set_opaque(&*new) {
                let _ = pu.rmdir(name);
                return Err(e);
            }
        }
        self.fs.changed();
        Ok(OvlInode::new(
            &self.fs,
            Some(me),
            name,
            f,
            Some(new),
            Vec::new(),
        ))
    }

    /// Whether this directory, merged, has nothing but whiteouts (`ovl_check_empty_dir`).
    fn check_empty(&self) -> SysResult<()> {
        let entries = crate::with_io(|io| crate::file::merged(self, io))?;
        if entries.iter().any(|e| e.name != b"." && e.name != b"..") {
            return Err(Errno::ENOTEMPTY);
        }
        Ok(())
    }

    /// Removes the whiteouts from this directory's upper directory, so that it can be
    /// removed (`ovl_clear_empty`, `ovl_cleanup_whiteouts`).
    fn clear_upper_whiteouts(&self) -> SysResult<()> {
        let Some(u) = self.upper() else {
            return Ok(());
        };
        let names = crate::with_io(|io| crate::file::real_names(&*u, io))?;
        for n in names {
            if let Ok(c) = u.lookup(&n)
                && is_whiteout(&*c)
            {
                u.unlink(&n)?;
            }
        }
        Ok(())
    }

    /// unlink and rmdir (`ovl_do_remove`).
    fn remove(&self, name: &[u8], dir: bool) -> SysResult<()> {
        self.check_dir()?;
        self.check_writable()?;
        let _g = lock(&self.fs.ns);
        let child = self.lookup_ovl(name)?;
        match (dir, is_dir(child.fmt)) {
            (true, false) => return Err(Errno::ENOTDIR),
            (false, true) => return Err(Errno::EISDIR),
            _ => {}
        }
        if dir {
            child.check_empty()?;
        }
        let me = self.arc()?;
        let pu = crate::copy_up::copy_up(&me, false)?;
        let below = !child.lowers().is_empty() || self.lower_positive(name);
        if child.upper().is_some() {
            if dir {
                child.clear_upper_whiteouts()?;
                pu.rmdir(name)?;
            } else {
                pu.unlink(name)?;
            }
        }
        if below {
            self.whiteout(&pu, name)?;
        }
        self.fs.changed();
        Ok(())
    }
}

impl Inode for OvlInode {
    /// `ovl_getattr` with `ovl_map_dev_ino` (xino off).
    fn stat(&self) -> SysResult<Kstat> {
        let real = self.real()?;
        let mut st = real.stat()?;
        if is_dir(self.fmt) {
            st.dev = self.fs.dev;
            if !self.fs.samefs {
                st.ino = self.ino;
            }
            let l = lock(&self.layers);
            // "nlink=1 seems to pacify 'find' and other utilities" for merged directories.
            if l.upper.is_some() as usize + l.lowers.len() > 1 {
                st.nlink = 1;
            }
        } else if !self.fs.samefs {
            // A copied-up file keeps its lower inode number and device (the origin), so
            // st_ino does not change across copy-up; every layer's file system has a pseudo
            // device, the upper one's included (`ofs->fs[fsid].pseudo_dev`).
            let lower = lock(&self.layers).lowers.first().cloned();
            let origin = match (self.upper(), lower) {
                (Some(_), Some(l)) => Some((l.fs_id(), l.stat()?.ino)),
                (Some(u), None) => self.fs.origin_of(&*u).map(|(f, _, ino)| (f, ino)),
                (None, _) => None,
            };
            match origin {
                Some((fs_id, ino)) => {
                    st.ino = ino;
                    st.dev = self.fs.pseudo_dev(fs_id);
                }
                None => st.dev = self.fs.pseudo_dev(real.fs_id()),
            }
        } else {
            st.dev = self.fs.dev;
        }
        Ok(st)
    }

    fn lookup(&self, name: &[u8]) -> SysResult<Arc<dyn Inode>> {
        Ok(self.lookup_ovl(name)?)
    }

    fn readlink(&self) -> SysResult<Vec<u8>> {
        self.real()?.readlink()
    }

    /// `ovl_open`: opening a regular file for writing or truncation copies it up first
    /// (special files never are: they open the real node's driver or FIFO).
    fn open(&self, io: &IoCtx<'_>, flags: u32) -> SysResult<Box<dyn FileOps>> {
        let me = self.arc()?;
        if is_dir(self.fmt) {
            if flags & O_ACCMODE != 0 {
                return Err(Errno::EISDIR);
            }
            return Ok(Box::new(crate::file::OvlDir::new(me)));
        }
        let trunc = flags & O_TRUNC != 0;
        if self.fmt == mode::S_IFREG && (flags & O_ACCMODE != 0 || trunc) {
            self.check_writable()?;
            let _g = lock(&self.fs.ns);
            crate::copy_up::copy_up(&me, true)?;
        }
        crate::file::OvlFile::open(me, io, flags)
    }

    fn id(&self) -> u64 {
        self.ino
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn create(&self, name: &[u8], mode: u32, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.create_object(name, |pu| pu.create(name, mode, owner))
    }

    fn mkdir(&self, name: &[u8], mode: u32, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.create_object(name, |pu| pu.mkdir(name, mode, owner))
    }

    fn mknod(&self, name: &[u8], mode: u32, rdev: u64, owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.create_object(name, |pu| pu.mknod(name, mode, rdev, owner))
    }

    fn symlink(&self, name: &[u8], target: &[u8], owner: Owner) -> SysResult<Arc<dyn Inode>> {
        self.create_object(name, |pu| pu.symlink(name, target, owner))
    }

    /// `ovl_link`: the target is copied up and linked in the upper layer.
    fn link(&self, name: &[u8], target: &Arc<dyn Inode>) -> SysResult<()> {
        let t = target
            .as_any()
            .downcast_ref::<OvlInode>()
            .filter(|t| Arc::ptr_eq(&t.fs, &self.fs))
            .ok_or(Errno::EXDEV)?
            .arc()?;
        self.check_dir()?;
        self.check_writable()?;
        let _g = lock(&self.fs.ns);
        if self.lookup_ovl(name).is_ok() {
            return Err(Errno::EEXIST);
        }
        let tu = crate::copy_up::copy_up(&t, true)?;
        let pu = crate::copy_up::copy_up(&self.arc()?, false)?;
        Self::clear_whiteout(&pu, name)?;
        pu.link(name, &tu)?;
        self.fs.changed();
        Ok(())
    }

    fn unlink(&self, name: &[u8]) -> SysResult<()> {
        self.remove(name, false)
    }

    fn rmdir(&self, name: &[u8]) -> SysResult<()> {
        self.remove(name, true)
    }

    /// `ovl_rename`: a merged or lower directory cannot move (`EXDEV`, `ovl_can_move` with
    /// `redirect_dir` off); everything else is copied up and renamed in the upper layer, a
    /// name that exists below the source left as a whiteout, a directory moved over a lower
    /// one made opaque.
    fn rename(
        &self,
        old_name: &[u8],
        new_dir: &Arc<dyn Inode>,
        new_name: &[u8],
        flags: u32,
    ) -> SysResult<()> {
        if flags & !(RENAME_EXCHANGE | RENAME_NOREPLACE) != 0 {
            return Err(Errno::EINVAL);
        }
        let nd = new_dir
            .as_any()
            .downcast_ref::<OvlInode>()
            .filter(|t| Arc::ptr_eq(&t.fs, &self.fs))
            .ok_or(Errno::EXDEV)?
            .arc()?;
        self.check_dir()?;
        self.check_writable()?;
        let _g = lock(&self.fs.ns);
        let src = self.lookup_ovl(old_name)?;
        let dst = match nd.lookup_ovl(new_name) {
            Ok(d) => Some(d),
            Err(Errno::ENOENT) => None,
            Err(e) => return Err(e),
        };
        let exchange = flags & RENAME_EXCHANGE != 0;
        if let Some(d) = &dst {
            if flags & RENAME_NOREPLACE != 0 {
                return Err(Errno::EEXIST);
            }
            if d.ino == src.ino && d.fmt == src.fmt {
                return Ok(()); // the same object: rename(2) does nothing
            }
            if !exchange {
                match (is_dir(src.fmt), is_dir(d.fmt)) {
                    (true, false) => return Err(Errno::ENOTDIR),
                    (false, true) => return Err(Errno::EISDIR),
                    (true, true) => d.check_empty()?,
                    _ => {}
                }
            }
        } else if exchange {
            return Err(Errno::ENOENT);
        }
        if is_dir(src.fmt) && src.merge_or_lower() {
            return Err(Errno::EXDEV);
        }
        if exchange
            && let Some(d) = &dst
            && is_dir(d.fmt)
            && d.merge_or_lower()
        {
            return Err(Errno::EXDEV);
        }
        crate::copy_up::copy_up(&src, true)?;
        if exchange && let Some(d) = &dst {
            crate::copy_up::copy_up(d, true)?;
        }
        let opu = crate::copy_up::copy_up(&self.arc()?, false)?;
        let npu = crate::copy_up::copy_up(&nd, false)?;
        let old_below = self.lower_positive(old_name) || !src.lowers().is_empty();
        let new_below =
            dst.as_ref().is_some_and(|d| !d.lowers().is_empty()) || nd.lower_positive(new_name);
        if exchange {
            opu.rename(old_name, &npu, new_name, RENAME_EXCHANGE)?;
            self.fs.changed();
            return Ok(());
        }
        if let Some(d) = &dst
            && is_dir(d.fmt)
        {
            d.clear_upper_whiteouts()?;
        }
        // The target's name may hold a whiteout (or the target's upper copy: replaced).
        if let Some(c) = opt(npu.lookup(new_name))?
            && is_whiteout(&*c)
        {
            npu.unlink(new_name)?;
        }
        opu.rename(old_name, &npu, new_name, 0)?;
        if old_below {
            self.whiteout(&opu, old_name)?;
        }
        if is_dir(src.fmt)
            && new_below
            && let Ok(moved) = npu.lookup(new_name)
        {
            self.fs.set_opaque(&*moved)?;
        }
        self.fs.changed();
        Ok(())
    }

    /// `ovl_setattr`: copies up (with the data, unless truncating to 0), then changes the
    /// upper inode.
    fn setattr(&self, attr: &SetAttr) -> SysResult<()> {
        self.check_writable()?;
        // Truncating to nothing needs none of the data (open's O_TRUNC comes here first).
        let data = attr.size != Some(0);
        let u = {
            let _g = lock(&self.fs.ns);
            crate::copy_up::copy_up(&self.arc()?, data)?
        };
        u.setattr(attr)
    }

    fn fsync(&self, datasync: bool) -> SysResult<()> {
        self.real()?.fsync(datasync)
    }

    fn fs_id(&self) -> u64 {
        self.fs.id
    }

    /// `ovl_statfs`: the upper layer's (the top lower's without one), overlayfs's magic.
    fn statfs(&self) -> SysResult<Statfs> {
        let top = self
            .fs
            .upper
            .clone()
            .or_else(|| self.fs.lowers.first().cloned())
            .ok_or(Errno::EIO)?;
        let mut s = top.statfs()?;
        s.fs_type = OVERLAYFS_SUPER_MAGIC;
        Ok(s)
    }

    fn fallocate(&self, mode: u32, offset: u64, len: u64) -> Option<SysResult<()>> {
        match self.real() {
            Ok(r) => r.fallocate(mode, offset, len),
            Err(e) => Some(Err(e)),
        }
    }

    /// `ovl_tmpfile`: an unnamed file in the upper copy of this directory.
    fn tmpfile(&self, mode: u32, owner: Owner, linkable: bool) -> SysResult<Arc<dyn Inode>> {
        self.check_dir()?;
        self.check_writable()?;
        let pu = {
            let _g = lock(&self.fs.ns);
            crate::copy_up::copy_up(&self.arc()?, false)?
        };
        let t = pu.tmpfile(mode, owner, linkable)?;
        Ok(OvlInode::new(
            &self.fs,
            None,
            b"",
            mode::S_IFREG,
            Some(t),
            Vec::new(),
        ))
    }

    fn fsflags(&self) -> Option<u32> {
        self.real().ok()?.fsflags()
    }

    fn set_fsflags(&self, flags: u32) -> SysResult<()> {
        self.check_writable()?;
        let u = {
            let _g = lock(&self.fs.ns);
            crate::copy_up::copy_up(&self.arc()?, true)?
        };
        u.set_fsflags(flags)
    }

    fn statx_attributes_mask(&self) -> u64 {
        self.real().map_or(0, |r| r.statx_attributes_mask())
    }

    fn has_xattrs(&self) -> bool {
        self.real().is_ok_and(|r| r.has_xattrs())
    }

    /// `ovl_xattr_get`: a name in overlayfs's own namespace is the guest's escaped one
    /// (`trusted.overlay.X` is `trusted.overlay.overlay.X` on the layer, Linux 6.7's
    /// `ovl_own_xattr_get` for nested overlays).
    fn getxattr(&self, name: &[u8]) -> SysResult<Vec<u8>> {
        self.real()?.getxattr(&self.fs.escape_xattr(name))
    }

    /// `ovl_xattr_set`: copies up and sets on the upper inode.
    fn setxattr(&self, name: &[u8], value: &[u8], flags: u32) -> SysResult<()> {
        let name = &self.fs.escape_xattr(name)[..];
        self.check_writable()?;
        let u = {
            let _g = lock(&self.fs.ns);
            crate::copy_up::copy_up(&self.arc()?, true)?
        };
        u.setxattr(name, value, flags)
    }

    /// Removing an attribute the lower inode does not have is `ENODATA` without a copy-up.
    fn removexattr(&self, name: &[u8]) -> SysResult<()> {
        let name = &self.fs.escape_xattr(name)[..];
        self.check_writable()?;
        if self.upper().is_none() {
            self.real()?.getxattr(name)?;
        }
        let u = {
            let _g = lock(&self.fs.ns);
            crate::copy_up::copy_up(&self.arc()?, true)?
        };
        u.removexattr(name)
    }

    /// `ovl_listxattr`: without overlayfs's own, escaped names shown unescaped.
    fn listxattr(&self) -> SysResult<Vec<Vec<u8>>> {
        let names = self.real()?.listxattr()?;
        Ok(names
            .into_iter()
            .filter_map(|n| self.fs.unescape_xattr(&n))
            .collect())
    }
}
