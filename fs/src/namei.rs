//! Path walk (Linux `fs/namei.c`): from the process root or a starting directory, one
//! component at a time; `..` follows the dentry's parent and stops at the process root;
//! symlinks are read and walked here, relative to the directory holding them or to the
//! process root, at most [`MAXSYMLINKS`] of them per walk. After each lookup a mount point is
//! crossed into the root of what is mounted on it ([`crate::mount::cross`]): the new dentry
//! keeps the mount point's name and parent, so `..` from a mounted root leads to the mount
//! point's parent and [`Dentry::path`] stays right. [`permission`] is the DAC check
//! (`generic_permission`); [`inode_permission`] adds the inode flags (immutable, append-only)
//! that the file syscalls enforce; [`walk_with`] applies its search (x) check to each directory.

use std::sync::Arc;
use um_kernel::task::{Creds, FsContext};
use um_kernel::vfs::{Dentry, Inode, Kstat, Owner, mode};
use um_uapi::abi::fs::{FS_APPEND_FL, FS_IMMUTABLE_FL};
use um_uapi::{Errno, SysResult};

/// Symlinks followed per walk before `ELOOP` (Linux `MAXSYMLINKS`).
pub const MAXSYMLINKS: u32 = 40;

/// How to treat the last component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Last {
    /// Follow a symlink in the last component.
    Follow,
    /// Return the symlink itself.
    NoFollow,
}

/// Restrictions on a walk: openat2's `RESOLVE_*` flags (Linux `LOOKUP_NO_XDEV`,
/// `LOOKUP_NO_MAGICLINKS`, `LOOKUP_NO_SYMLINKS`, `LOOKUP_BENEATH`, `LOOKUP_IN_ROOT`).
/// Every other walk uses [`Resolve::NONE`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resolve {
    /// Never cross a mount point, either way (`EXDEV`).
    pub no_xdev: bool,
    /// Never follow a magic link such as `/proc/self/fd/N` (`ELOOP`).
    pub no_magiclinks: bool,
    /// Never follow any symlink (`ELOOP`); implies `no_magiclinks`.
    pub no_symlinks: bool,
    /// Stay below the starting directory: absolute paths and `..` above it are `EXDEV`.
    pub beneath: bool,
    /// Treat the starting directory as the root: absolute paths, absolute symlinks and `..`
    /// stay inside it, as in a chroot.
    pub in_root: bool,
}

impl Resolve {
    /// No restrictions.
    pub const NONE: Resolve = Resolve {
        no_xdev: false,
        no_magiclinks: false,
        no_symlinks: false,
        beneath: false,
        in_root: false,
    };

    /// `LOOKUP_IS_SCOPED`: the walk's root is its starting directory.
    pub fn scoped(&self) -> bool {
        self.beneath || self.in_root
    }

    /// The context a walk with these restrictions runs in: for a scoped walk the starting
    /// directory becomes the root (`nd->root = nd->path` in `path_init`).
    pub fn scope(&self, fs: &FsContext, start: &Arc<Dentry>) -> FsContext {
        let mut fs = fs.clone();
        if self.scoped() {
            fs.root = start.clone();
        }
        fs
    }

    /// About to follow a symlink (`pick_link`) or, with `magic`, a magic link
    /// (`nd_jump_link`): `ELOOP` if not allowed, `EXDEV` for a magic link in a scoped walk
    /// or (with `no_xdev`) one that leads to another file system.
    pub fn follow_link(&self, magic: Option<(&Dentry, &Dentry)>) -> SysResult<()> {
        if self.no_symlinks {
            return Err(Errno::ELOOP);
        }
        if let Some((from, to)) = magic {
            if self.no_magiclinks {
                return Err(Errno::ELOOP);
            }
            if self.no_xdev && from.inode.fs_id() != to.inode.fs_id() {
                return Err(Errno::EXDEV);
            }
            if self.scoped() {
                return Err(Errno::EXDEV);
            }
        }
        Ok(())
    }
}

fn is_dir(d: &Dentry) -> SysResult<bool> {
    Ok(d.inode.stat()?.mode & mode::S_IFMT == mode::S_IFDIR)
}

fn is_symlink(d: &Dentry) -> SysResult<bool> {
    Ok(d.inode.stat()?.mode & mode::S_IFMT == mode::S_IFLNK)
}

/// The owner and permission bits of a new inode in directory `dir` (Linux `inode_init_owner`,
/// fs/inode.c, with `mode_strip_sgid` as `vfs_prepare_mode` applies it): the creator's fsuid;
/// the directory's group if the directory is setgid (and a new directory is setgid too), else
/// the creator's fsgid; a non-directory asking for setgid and group execute in a setgid
/// directory loses `S_ISGID` unless the creator is in the directory's group or privileged
/// (`CAP_FSETID`: fsuid 0 here; supplementary groups are not kept). `mode` includes the
/// `S_IFMT` type; the result's permission bits do not. Every file system applies this.
pub fn inode_init_owner(dir: &Kstat, owner: Owner, mode: u32) -> (Owner, u32) {
    use um_uapi::abi::fcntl::S_ISGID;
    let fmt = mode & mode::S_IFMT;
    let mut perm = mode & 0o7777;
    let gid = if dir.mode & S_ISGID != 0 {
        if fmt == mode::S_IFDIR {
            perm |= S_ISGID;
        } else {
            perm = mode_strip_sgid(dir, owner, fmt | perm) & 0o7777;
        }
        dir.gid
    } else {
        owner.gid
    };
    (
        Owner {
            uid: owner.uid,
            gid,
        },
        perm,
    )
}

/// `mode_strip_sgid` (fs/inode.c): a non-directory asking for setgid and group execute in a
/// setgid directory loses `S_ISGID` unless the creator is in the directory's group or
/// privileged (`CAP_FSETID`: fsuid 0 here). The create calls apply it *before* the umask
/// (`vfs_prepare_mode`, Linux 6.0+), so a umask that clears group execute cannot keep the bit.
pub fn mode_strip_sgid(dir: &Kstat, owner: Owner, mode: u32) -> u32 {
    use um_uapi::abi::fcntl::S_ISGID;
    use um_uapi::abi::fcntl::S_IXGRP;
    if mode & mode::S_IFMT != mode::S_IFDIR
        && dir.mode & S_ISGID != 0
        && mode & (S_ISGID | S_IXGRP) == (S_ISGID | S_IXGRP)
        && owner.gid != dir.gid
        && owner.uid != 0
    {
        mode & !S_ISGID
    } else {
        mode
    }
}

/// `MAY_EXEC`.
pub const MAY_EXEC: u32 = 1;
/// `MAY_WRITE`.
pub const MAY_WRITE: u32 = 2;
/// `MAY_READ`.
pub const MAY_READ: u32 = 4;

/// Linux `generic_permission` (fs/namei.c) without ACLs or supplementary groups: `mask` is
/// `MAY_*` bits. Root (fsuid 0) may read and write anything and search any directory, but
/// executing a non-directory needs at least one x bit (`capable_wrt_inode_uidgid` with
/// CAP_DAC_OVERRIDE). Everyone else gets the owner, group or other bits, first match only.
pub fn permission(st: &Kstat, creds: &Creds, mask: u32) -> SysResult<()> {
    let mask = mask & 7;
    let is_dir = st.mode & mode::S_IFMT == mode::S_IFDIR;
    if creds.fsuid == 0 {
        if mask & MAY_EXEC != 0 && !is_dir && st.mode & 0o111 == 0 {
            return Err(Errno::EACCES);
        }
        return Ok(());
    }
    let bits = if creds.fsuid == st.uid {
        (st.mode >> 6) & 7
    } else if creds.fsgid == st.gid {
        (st.mode >> 3) & 7
    } else {
        st.mode & 7
    };
    if bits & mask == mask {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

/// `IS_IMMUTABLE` (include/linux/fs.h): the inode carries `FS_IMMUTABLE_FL`.
pub fn is_immutable(inode: &dyn Inode) -> bool {
    inode.fsflags().unwrap_or(0) & FS_IMMUTABLE_FL != 0
}

/// `IS_APPEND`: the inode carries `FS_APPEND_FL`.
pub fn is_append(inode: &dyn Inode) -> bool {
    inode.fsflags().unwrap_or(0) & FS_APPEND_FL != 0
}

/// Linux `inode_permission` (fs/namei.c) for what this kernel has: writing to an immutable
/// inode is `EPERM` whoever asks, then the DAC check ([`permission`]). `st` is `inode`'s.
pub fn inode_permission(inode: &dyn Inode, st: &Kstat, creds: &Creds, mask: u32) -> SysResult<()> {
    if mask & MAY_WRITE != 0 && is_immutable(inode) {
        return Err(Errno::EPERM);
    }
    permission(st, creds, mask)
}

/// The attribute changes an immutable or append-only inode refuses (`EPERM`): mode, owner
/// and explicit times (`notify_change`, fs/attr.c), and hard links to it (`may_linkat`).
pub fn check_attr_change(inode: &dyn Inode) -> SysResult<()> {
    if is_immutable(inode) || is_append(inode) {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// Root credentials: a walk that checks nothing (the kernel's own lookups).
const ROOT: Creds = Creds {
    uid: 0,
    euid: 0,
    suid: 0,
    fsuid: 0,
    gid: 0,
    egid: 0,
    sgid: 0,
    fsgid: 0,
};

/// Walks `path` starting at `start` (used when the path is relative), with root's rights.
pub fn walk(
    fs: &FsContext,
    start: &Arc<Dentry>,
    path: &[u8],
    last: Last,
) -> SysResult<Arc<Dentry>> {
    walk_with(fs, &ROOT, start, path, last)
}

/// Walks `path` as `creds`: every directory passed through needs search (x) permission.
pub fn walk_with(
    fs: &FsContext,
    creds: &Creds,
    start: &Arc<Dentry>,
    path: &[u8],
    last: Last,
) -> SysResult<Arc<Dentry>> {
    walk_resolve(fs, creds, start, path, last, &Resolve::NONE)
}

/// [`walk_with`] under openat2's restrictions; `fs` is already [`Resolve::scope`]d.
pub fn walk_resolve(
    fs: &FsContext,
    creds: &Creds,
    start: &Arc<Dentry>,
    path: &[u8],
    last: Last,
    res: &Resolve,
) -> SysResult<Arc<Dentry>> {
    let mut links = 0;
    walk_inner(fs, creds, start, path, last, &mut links, res)
}

fn walk_inner(
    fs: &FsContext,
    creds: &Creds,
    start: &Arc<Dentry>,
    path: &[u8],
    last: Last,
    links: &mut u32,
    res: &Resolve,
) -> SysResult<Arc<Dentry>> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= 4096 {
        return Err(Errno::ENAMETOOLONG);
    }
    let mut cur = if path[0] == b'/' {
        // nd_jump_root: a scoped-beneath walk may not start over at the root.
        if res.beneath {
            return Err(Errno::EXDEV);
        }
        fs.root.clone()
    } else {
        start.clone()
    };
    let comps: Vec<&[u8]> = path
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .collect();
    let trailing_slash = path.len() > 1 && path.ends_with(b"/");
    for (i, comp) in comps.iter().enumerate() {
        let is_last = i + 1 == comps.len();
        if comp.len() > 255 {
            return Err(Errno::ENAMETOOLONG);
        }
        let st = cur.inode.stat()?;
        if st.mode & mode::S_IFMT != mode::S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        if creds.fsuid != 0 {
            permission(&st, creds, MAY_EXEC)?;
        }
        if *comp == b"." {
            continue;
        }
        if *comp == b".." {
            if crate::mount::same_place(&cur, &fs.root) {
                // follow_dotdot at the root: stay, except that a walk beneath its start
                // may not try to leave it.
                if res.beneath {
                    return Err(Errno::EXDEV);
                }
            } else if let Some(p) = cur.parent.clone() {
                if res.no_xdev && p.inode.fs_id() != cur.inode.fs_id() {
                    return Err(Errno::EXDEV);
                }
                cur = p;
            }
            continue;
        }
        let found = cur.inode.lookup(comp)?;
        if res.no_xdev && crate::mount::is_mountpoint(&*found) {
            return Err(Errno::EXDEV);
        }
        let mut next = match crate::mount::cross_mnt(&cur, found) {
            (inode, None) => Dentry::child(&cur, comp, inode),
            // The root of a mount: its dentry carries the mount (`struct path`'s `mnt`).
            (inode, Some(m)) => Dentry::mount_root(Some(cur.clone()), comp, inode, m),
        };
        let mounted = um_kernel::task::lock(&next.mounted).clone();
        if let Some(m) = mounted {
            if res.no_xdev {
                return Err(Errno::EXDEV);
            }
            next = m;
        }
        let follow = !is_last || last == Last::Follow || trailing_slash;
        if follow {
            if let Some(target) = next.inode.magic_link() {
                res.follow_link(Some((&cur, &target)))?;
                *links += 1;
                if *links > MAXSYMLINKS {
                    return Err(Errno::ELOOP);
                }
                cur = target;
                continue;
            }
        }
        if follow && is_symlink(&next)? {
            res.follow_link(None)?;
            *links += 1;
            if *links > MAXSYMLINKS {
                return Err(Errno::ELOOP);
            }
            let target = next.inode.readlink()?;
            if res.no_xdev
                && target.first() == Some(&b'/')
                && fs.root.inode.fs_id() != cur.inode.fs_id()
            {
                return Err(Errno::EXDEV);
            }
            // The target is walked from the directory that holds the link; the rest of the
            // path continues from wherever it leads.
            let mut rest = target;
            for c in &comps[i + 1..] {
                rest.push(b'/');
                rest.extend_from_slice(c);
            }
            if trailing_slash {
                rest.push(b'/');
            }
            return walk_inner(fs, creds, &cur, &rest, last, links, res);
        }
        cur = next;
    }
    if trailing_slash && !is_dir(&cur)? {
        return Err(Errno::ENOTDIR);
    }
    Ok(cur)
}

/// Walks to the parent of the last component and returns it with that component's name
/// (for create, unlink, rename). `..` and `.` as the last component are refused.
pub fn walk_parent(
    fs: &FsContext,
    start: &Arc<Dentry>,
    path: &[u8],
) -> SysResult<(Arc<Dentry>, Vec<u8>)> {
    walk_parent_with(fs, &ROOT, start, path)
}

/// [`walk_parent`] as `creds` (search permission on each directory, including the parent).
pub fn walk_parent_with(
    fs: &FsContext,
    creds: &Creds,
    start: &Arc<Dentry>,
    path: &[u8],
) -> SysResult<(Arc<Dentry>, Vec<u8>)> {
    walk_parent_resolve(fs, creds, start, path, &Resolve::NONE)
}

/// [`walk_parent_with`] under openat2's restrictions; `fs` is already [`Resolve::scope`]d.
pub fn walk_parent_resolve(
    fs: &FsContext,
    creds: &Creds,
    start: &Arc<Dentry>,
    path: &[u8],
    res: &Resolve,
) -> SysResult<(Arc<Dentry>, Vec<u8>)> {
    let trimmed: &[u8] = {
        let mut p = path;
        while p.len() > 1 && p.ends_with(b"/") {
            p = &p[..p.len() - 1];
        }
        p
    };
    let (dir, name) = match trimmed.iter().rposition(|&b| b == b'/') {
        Some(0) => (&b"/"[..], &trimmed[1..]),
        Some(i) => (&trimmed[..i], &trimmed[i + 1..]),
        None => (&b"."[..], trimmed),
    };
    if name.is_empty() || name == b"." || name == b".." {
        return Err(Errno::EEXIST);
    }
    if name.len() > 255 {
        return Err(Errno::ENAMETOOLONG);
    }
    let parent = walk_resolve(fs, creds, start, dir, Last::Follow, res)?;
    let st = parent.inode.stat()?;
    if st.mode & mode::S_IFMT != mode::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    if creds.fsuid != 0 {
        permission(&st, creds, MAY_EXEC)?;
    }
    Ok((parent, name.to_vec()))
}

#[cfg(test)]
mod tests {
    //! Confinement on hostfs: nothing a guest path says can name a host file outside the root.
    use super::*;
    use crate::hostfs::HostInode;
    use um_kernel::vfs::Owner;
    use um_mm::HeapMemory;
    use um_mm::{FrameAllocator, Granule, PageCache};

    struct Tree {
        dir: std::path::PathBuf,
        fs: FsContext,
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// `<tmp>/outside` (a host file outside the root) and `<tmp>/root/{etc -> /, up ->
    /// ../../.., sub/}` with `<tmp>/root` as the guest root.
    fn tree(tag: &str) -> Tree {
        let dir = std::env::temp_dir().join(format!("um-namei-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(dir.join("outside"), b"host").unwrap();
        std::os::unix::fs::symlink("/", root.join("etc")).unwrap();
        std::os::unix::fs::symlink("../../..", root.join("sub/up")).unwrap();
        std::fs::write(root.join("inside"), b"guest").unwrap();
        let phys = Arc::new(HeapMemory::new(4 << 20));
        let frames = Arc::new(FrameAllocator::new(phys, Granule::K4));
        let cache = Arc::new(PageCache::new(frames));
        let ino = HostInode::new_root(&root, false, cache).unwrap();
        let r = Dentry::root(ino);
        Tree {
            dir,
            fs: FsContext {
                root: r.clone(),
                cwd: r,
                umask: 0o022,
            },
        }
    }

    fn names(d: &Dentry) -> Vec<Vec<u8>> {
        let st = d.inode.stat().unwrap();
        assert_eq!(st.mode & mode::S_IFMT, mode::S_IFDIR);
        let mut v: Vec<Vec<u8>> = ["etc", "inside", "sub"]
            .iter()
            .filter(|n| d.inode.lookup(n.as_bytes()).is_ok())
            .map(|n| n.as_bytes().to_vec())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn dotdot_at_root_stays() {
        let t = tree("dotdot");
        let fs = &t.fs;
        for p in [&b"/.."[..], b"../../..", b"/sub/../../..", b"sub/../../../"] {
            let d = walk(fs, &fs.cwd, p, Last::Follow).unwrap();
            assert_eq!(d.path(), b"/".to_vec());
            assert_eq!(names(&d).len(), 3);
        }
        assert_eq!(
            walk(fs, &fs.root, b"../outside", Last::Follow).err(),
            Some(Errno::ENOENT)
        );
    }

    #[test]
    fn absolute_symlink_resolves_inside() {
        let t = tree("abs");
        let fs = &t.fs;
        let d = walk(fs, &fs.root, b"/etc", Last::Follow).unwrap();
        assert_eq!(d.path(), b"/".to_vec());
        let d = walk(fs, &fs.root, b"/etc/inside", Last::Follow).unwrap();
        assert_eq!(d.inode.stat().unwrap().size, 5);
        assert!(walk(fs, &fs.root, b"/etc/outside", Last::Follow).is_err());
    }

    #[test]
    fn relative_symlink_up_stays_inside() {
        let t = tree("rel");
        let fs = &t.fs;
        let d = walk(fs, &fs.root, b"/sub/up", Last::Follow).unwrap();
        assert_eq!(d.path(), b"/".to_vec());
        assert!(walk(fs, &fs.root, b"/sub/up/outside", Last::Follow).is_err());
        assert!(walk(fs, &fs.root, b"sub/up/inside", Last::Follow).is_ok());
    }

    #[test]
    fn create_and_rename_outside_stay_inside() {
        let t = tree("rename");
        let fs = &t.fs;
        let (parent, name) = walk_parent(fs, &fs.root, b"../x").unwrap();
        assert_eq!(parent.path(), b"/".to_vec());
        parent.inode.create(&name, 0o644, Owner::default()).unwrap();
        assert!(t.dir.join("root/x").exists());
        assert!(!t.dir.join("x").exists());
        // rename("/x", "../../y"): the new parent is the root too.
        let (np, nn) = walk_parent(fs, &fs.root, b"../../y").unwrap();
        parent.inode.rename(&name, &np.inode, &nn, 0).unwrap();
        assert!(t.dir.join("root/y").exists());
        assert!(!t.dir.join("y").exists());
        // Through the absolute symlink: still the root.
        let (np, nn) = walk_parent(fs, &fs.root, b"/etc/z").unwrap();
        parent.inode.rename(b"y", &np.inode, &nn, 0).unwrap();
        assert!(t.dir.join("root/z").exists());
        // Names with a slash or `..` never reach the host.
        assert_eq!(
            fs.root.inode.mkdir(b"..", 0o755, Owner::default()).err(),
            Some(Errno::EINVAL)
        );
        assert_eq!(
            fs.root.inode.unlink(b"../outside").err(),
            Some(Errno::EINVAL)
        );
        assert!(t.dir.join("outside").exists());
        // unlink of a directory is EISDIR, rmdir of a non-empty one ENOTEMPTY.
        assert_eq!(fs.root.inode.unlink(b"sub").err(), Some(Errno::EISDIR));
        assert_eq!(fs.root.inode.rmdir(b"sub").err(), Some(Errno::ENOTEMPTY));
        // A device node on hostfs is never a host device: an empty regular host file that
        // the guest sees as the node (hostfs_meta).
        let null = fs
            .root
            .inode
            .mknod(b"null", mode::S_IFCHR | 0o666, 0x103, Owner::default())
            .unwrap();
        assert_eq!(null.stat().unwrap().mode, mode::S_IFCHR | 0o666);
        assert_eq!(null.stat().unwrap().rdev, 0x103);
        assert!(t.dir.join("root/null").is_file());
    }

    #[test]
    fn permission_bits() {
        let st = Kstat {
            mode: mode::S_IFREG | 0o640,
            uid: 10,
            gid: 20,
            ..Default::default()
        };
        let user = |uid, gid| Creds {
            fsuid: uid,
            fsgid: gid,
            ..ROOT
        };
        assert!(permission(&st, &user(10, 0), MAY_READ | MAY_WRITE).is_ok());
        assert!(permission(&st, &user(11, 20), MAY_READ).is_ok());
        assert_eq!(
            permission(&st, &user(11, 20), MAY_WRITE).err(),
            Some(Errno::EACCES)
        );
        assert_eq!(
            permission(&st, &user(11, 21), MAY_READ).err(),
            Some(Errno::EACCES)
        );
        // Root: anything but executing a file without x bits.
        assert!(permission(&st, &ROOT, MAY_READ | MAY_WRITE).is_ok());
        assert_eq!(permission(&st, &ROOT, MAY_EXEC).err(), Some(Errno::EACCES));
        let dir = Kstat {
            mode: mode::S_IFDIR,
            ..st
        };
        assert!(permission(&dir, &ROOT, MAY_EXEC).is_ok());
    }
}
