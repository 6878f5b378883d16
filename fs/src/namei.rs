//! Path walk (Linux `fs/namei.c`): from the process root or a starting directory, one
//! component at a time; `..` follows the dentry's parent and stops at the process root;
//! symlinks are read and walked here, relative to the directory holding them or to the
//! process root, at most [`MAXSYMLINKS`] of them per walk.

use std::sync::Arc;
use um_kernel::task::FsContext;
use um_kernel::vfs::{Dentry, mode};
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

fn is_dir(d: &Dentry) -> SysResult<bool> {
    Ok(d.inode.stat()?.mode & mode::S_IFMT == mode::S_IFDIR)
}

fn is_symlink(d: &Dentry) -> SysResult<bool> {
    Ok(d.inode.stat()?.mode & mode::S_IFMT == mode::S_IFLNK)
}

/// Walks `path` starting at `start` (used when the path is relative).
pub fn walk(
    fs: &FsContext,
    start: &Arc<Dentry>,
    path: &[u8],
    last: Last,
) -> SysResult<Arc<Dentry>> {
    let mut links = 0;
    walk_inner(fs, start, path, last, &mut links)
}

fn walk_inner(
    fs: &FsContext,
    start: &Arc<Dentry>,
    path: &[u8],
    last: Last,
    links: &mut u32,
) -> SysResult<Arc<Dentry>> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= 4096 {
        return Err(Errno::ENAMETOOLONG);
    }
    let mut cur = if path[0] == b'/' {
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
        if !is_dir(&cur)? {
            return Err(Errno::ENOTDIR);
        }
        if *comp == b"." {
            continue;
        }
        if *comp == b".." {
            if !Arc::ptr_eq(&cur, &fs.root) {
                if let Some(p) = cur.parent.clone() {
                    cur = p;
                }
            }
            continue;
        }
        let inode = cur.inode.lookup(comp)?;
        let mut next = Dentry::child(&cur, comp, inode);
        let mounted = um_kernel::task::lock(&next.mounted).clone();
        if let Some(m) = mounted {
            next = m;
        }
        let follow = !is_last || last == Last::Follow || trailing_slash;
        if follow {
            if let Some(target) = next.inode.magic_link() {
                *links += 1;
                if *links > MAXSYMLINKS {
                    return Err(Errno::ELOOP);
                }
                cur = target;
                continue;
            }
        }
        if follow && is_symlink(&next)? {
            *links += 1;
            if *links > MAXSYMLINKS {
                return Err(Errno::ELOOP);
            }
            let target = next.inode.readlink()?;
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
            return walk_inner(fs, &cur, &rest, last, links);
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
    let parent = walk(fs, start, dir, Last::Follow)?;
    if !is_dir(&parent)? {
        return Err(Errno::ENOTDIR);
    }
    Ok((parent, name.to_vec()))
}
