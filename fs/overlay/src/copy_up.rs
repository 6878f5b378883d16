//! Copy-up (Linux fs/overlayfs/copy_up.c `ovl_copy_up_one`): the upper copy of a lower
//! object, its parents first. A directory is made empty (its lower entries stay visible
//! through the merge), a regular file with the lower file's data (when `data`: every
//! copy-up here copies the data, metacopy being off), a symlink with its target, a FIFO,
//! socket or device node with its type and number; then the lower object's extended
//! attributes (not overlayfs's own; skipped where either layer keeps none, as
//! `ovl_copy_xattr`), all 12 mode bits, owner and group, and atime and mtime
//! (`ovl_set_attr`). The copy is made in the work directory and renamed into the upper
//! directory when complete, as Linux does. The caller holds the overlay's namespace lock.
//! Neighbours: [`crate::inode`] (which calls it before every change).

use crate::inode::OvlInode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use um_kernel::vfs::{Inode, Owner, SetAttr, TimeSet, mode};
use um_uapi::abi::fcntl::{O_RDONLY, O_WRONLY};
use um_uapi::{Errno, SysResult};

/// The chunk the data is copied in (`OVL_COPY_UP_CHUNK_SIZE`, 1 MiB in Linux).
const CHUNK: usize = 128 * 1024;

/// The upper inode of `o`, made now if it has none. `EROFS` on an overlay without upper.
pub fn copy_up(o: &Arc<OvlInode>, data: bool) -> SysResult<Arc<dyn Inode>> {
    if let Some(u) = o.upper() {
        return Ok(u);
    }
    if o.fs().upper_root().is_none() {
        return Err(Errno::EROFS);
    }
    // Every object with no upper copy has a parent: the root is upper when the overlay is.
    let parent = o.parent().ok_or(Errno::EROFS)?.clone();
    let pu = copy_up(&parent, false)?;
    let lower = o.lowers().first().cloned().ok_or(Errno::ESTALE)?;
    let st = lower.stat()?;
    let name = o.name().to_vec();
    // Made in the work directory under a temporary name, then renamed into place, so the
    // upper layer never shows a half-made copy (`ovl_copy_up_workdir`); straight in the upper
    // directory when there is no work directory.
    let (dir, tmp) = match o.fs().work_dir() {
        Some(w) => {
            static NEXT: AtomicU64 = AtomicU64::new(1);
            (
                w.clone(),
                format!("#{:x}", NEXT.fetch_add(1, Ordering::Relaxed)).into_bytes(),
            )
        }
        None => (pu.clone(), name.clone()),
    };
    let new = make_copy(o, &*lower, &st, &dir, &tmp, data)?;
    if !Arc::ptr_eq(&dir, &pu)
        && let Err(e) = dir.rename(&tmp, &pu, &name, 0)
    {
        remove(&dir, &tmp, o.fmt());
        return Err(e);
    }
    o.fs().set_origin(&*new, &*lower, st.ino);
    o.set_upper(new.clone());
    o.fs().changed();
    Ok(new)
}

/// Makes the copy of `lower` (attributes `st`) as `name` in `dir`; removed again on failure.
fn make_copy(
    o: &OvlInode,
    lower: &dyn Inode,
    st: &um_kernel::vfs::Kstat,
    dir: &Arc<dyn Inode>,
    name: &[u8],
    data: bool,
) -> SysResult<Arc<dyn Inode>> {
    let owner = Owner {
        uid: st.uid,
        gid: st.gid,
    };
    let perm = st.mode & 0o7777;
    let new = match o.fmt() {
        mode::S_IFDIR => dir.mkdir(name, perm, owner)?,
        mode::S_IFREG => {
            let f = dir.create(name, perm, owner)?;
            if data && let Err(e) = copy_data(lower, &*f, st.size.max(0) as u64) {
                remove(dir, name, o.fmt());
                return Err(e);
            }
            f
        }
        mode::S_IFLNK => dir.symlink(name, &lower.readlink()?, owner)?,
        _ => dir.mknod(name, st.mode, st.rdev, owner)?,
    };
    copy_xattrs(o, lower, &*new);
    let attr = SetAttr {
        mode: (o.fmt() != mode::S_IFLNK).then_some(perm),
        uid: Some(st.uid),
        gid: Some(st.gid),
        size: None,
        atime: Some(TimeSet::At(st.atime.0, st.atime.1)),
        mtime: Some(TimeSet::At(st.mtime.0, st.mtime.1)),
    };
    if let Err(e) = new.setattr(&attr) {
        // A symlink's times may not be settable on every upper file system.
        if o.fmt() != mode::S_IFLNK {
            log::warn!(
                "overlayfs: copy-up of {}: attributes not kept ({e:?})",
                String::from_utf8_lossy(o.name())
            );
        }
    }
    Ok(new)
}

/// Removes a half-made copy.
fn remove(dir: &Arc<dyn Inode>, name: &[u8], fmt: u32) {
    let _ = if fmt == mode::S_IFDIR {
        dir.rmdir(name)
    } else {
        dir.unlink(name)
    };
}

/// Copies `size` bytes of `from` into `to` through their open files.
fn copy_data(from: &dyn Inode, to: &dyn Inode, size: u64) -> SysResult<()> {
    if size == 0 {
        return Ok(());
    }
    crate::with_io(|io| {
        let r = from.open(io, O_RDONLY)?;
        let w = to.open(io, O_WRONLY)?;
        let mut buf = vec![0u8; CHUNK];
        let mut off = 0u64;
        while off < size {
            let n = r.read(io, &mut buf, off)?;
            if n == 0 {
                break;
            }
            let mut done = 0;
            while done < n {
                let m = w.write(io, &buf[done..n], off + done as u64)?;
                if m == 0 {
                    return Err(Errno::EIO);
                }
                done += m;
            }
            off += n as u64;
        }
        Ok(())
    })
}

/// `ovl_copy_xattr`.
fn copy_xattrs(o: &OvlInode, from: &dyn Inode, to: &dyn Inode) {
    if !from.has_xattrs() || !to.has_xattrs() {
        return;
    }
    let Ok(names) = from.listxattr() else {
        return;
    };
    for n in names {
        if o.fs().unescape_xattr(&n).is_none() {
            continue;
        }
        if let Ok(v) = from.getxattr(&n)
            && let Err(e) = to.setxattr(&n, &v, 0)
            && e != Errno::EOPNOTSUPP
        {
            log::warn!(
                "overlayfs: failed to copy up xattr {}: {e:?}",
                String::from_utf8_lossy(&n)
            );
        }
    }
}
