//! overlayfs: one merged directory tree of an upper layer over one or more read-only lower
//! layers (Linux `fs/overlayfs/`, Documentation/filesystems/overlayfs.rst).
//!
//! `mount -t overlay overlay -o lowerdir=A:B:C,upperdir=U,workdir=W M`: the layers are
//! directories of any other file system here (tmpfs, hostfs, ext4, another overlay), walked
//! as the mounter at mount time ([`params`] parses the options, [`mount`] resolves and checks
//! them). Without `upperdir` the overlay is read-only and needs two lower layers at least,
//! as Linux. Changes only ever reach the upper layer:
//!
//! * **Lookup** ([`inode::OvlInode`]): the upper entry, then each lower layer's top down, a
//!   directory merging the directories of the same name below it until an opaque one; a
//!   whiteout (a character device 0:0) hides what is below; a non-directory hides everything
//!   below it.
//! * **Copy-up** ([`copy_up`]): the first write, truncate, chmod, chown, utimes, xattr change
//!   or open for writing of a lower object makes it in the upper layer (its parents first),
//!   with the data, mode, owner, times and extended attributes of the lower one; hard links
//!   of a lower file are broken by it, as Linux without `index`.
//! * **Removal**: unlink and rmdir of a name that exists in a lower layer leave a whiteout;
//!   a directory made where one was (or in a merged directory) is marked opaque with
//!   `trusted.overlay.opaque` = `y` (`user.overlay.opaque` with `userxattr`). overlayfs's
//!   own attributes are hidden from the guest; a guest name in that namespace is escaped on
//!   the layer (`trusted.overlay.X` stored as `trusted.overlay.overlay.X`, Linux 6.7's
//!   nesting), so an overlay over an overlay's layers works.
//! * **readdir** ([`file::OvlDir`]): the merged listing, upper entries first, each name once,
//!   whiteouts hidden; cached per open directory until the overlay changes (Linux's
//!   `ovl_dir_cache` and version).
//! * **rename**: of a directory that is merged or lower `EXDEV`, as Linux with `redirect_dir`
//!   off (`mv` then copies); a name that exists below is left as a whiteout.
//! * **st_dev/st_ino** (`ovl_map_dev_ino`, xino off): with every layer on one file system
//!   instance, the overlay's device and the real inode numbers; otherwise directories have the
//!   overlay's device and an inode number of the overlay's own (stable while mounted), and
//!   other files a pseudo device (`0:N`) per layer file system, the upper one's included,
//!   with their real inode number; a copied-up file keeps its lower origin's number and
//!   device, so `st_ino` does not change across copy-up (what Linux reports through the
//!   `trusted.overlay.origin` it records; no origin attribute is written here).
//! * **Files**: an open file is the real file's ([`file::OvlFile`]): reads, writes and `mmap`
//!   go to the upper or lower file itself, so a mapping shares the real file's page cache. A
//!   file opened for reading before a copy-up reads the upper copy afterwards (Linux's
//!   `ovl_real_fdget`), but a mapping made before a copy-up keeps mapping the lower file: the
//!   caveat overlayfs.rst documents ("If a file ... is memory mapped ... then the ... changes
//!   are not visible").
//!
//! Differences from Linux, on purpose or not yet: copy-up makes its copy in the work
//! directory `W/work` and renames it into place, as Linux, but new objects and whiteouts are
//! made directly in the upper directory (Linux makes those in the work directory too, and
//! replaces a whiteout with `RENAME_EXCHANGE`); `redirect_dir`, `index`, `metacopy`,
//! `nfs_export` and `xino=on` are off and refused if asked for (`EINVAL` and a log line);
//! permission is checked against the overlay's inode only (not again with the mounter's
//! credentials on the real one); an upper layer that cannot hold whiteouts (mknod of 0:0
//! fails) is refused with `EINVAL` and a log line, as Linux refuses upper layers it cannot
//! use; one on a read-only mount is `EINVAL` ("filesystem on ... is read-only").
//!
//! The overlay's inode numbers and the origins of copied-up files are tables of the mount
//! (an entry per object ever looked up, kept until the overlay is unmounted): Linux's
//! directory inode numbers are not persistent either, and its origins are xattrs.
//!
//! Neighbours: `um_fs::mount` (the type is registered with [`um_fs::mount::register_fs`], the
//! mount table tells which mount a layer is on), `um_fs::namei` (the layers' walk),
//! `um_fs::procfs::registry` (`/sys/module/overlay/parameters`), `um-bin` (calls [`init`]).

#![forbid(unsafe_code)]

pub mod copy_up;
pub mod file;
pub mod inode;
pub mod params;
#[cfg(test)]
mod tests;

use inode::OvlInode;
use params::Config;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use um_kernel::task::lock;
use um_kernel::vfs::{self, Inode, Owner, mode};
use um_kernel::wait::IoCtx;
use um_uapi::abi::overlay::{
    FILESYSTEM_MAX_STACK_DEPTH, OVL_XATTR_OPAQUE, OVL_XATTR_TRUSTED_PREFIX, OVL_XATTR_USER_PREFIX,
};
use um_uapi::{Errno, SysResult};

/// One mounted overlay (Linux `struct ovl_fs`).
pub struct OvlFs {
    /// [`Inode::fs_id`] of its inodes.
    id: u64,
    /// Its anonymous device (`sb->s_dev`).
    dev: u64,
    /// The upper layer's root directory; `None` for a read-only overlay.
    upper: Option<Arc<dyn Inode>>,
    /// The work directory (`W/work`), where copy-up makes its copies.
    work: Option<Arc<dyn Inode>>,
    /// The lower layers' roots, top first.
    lowers: Vec<Arc<dyn Inode>>,
    /// The mount options.
    config: Config,
    /// Whether the upper layer keeps no extended attributes (`ofs->noxattr`).
    noxattr: bool,
    /// Every layer on one file system instance (`ovl_same_fs`).
    samefs: bool,
    /// How deep overlays are stacked here (`s_stack_depth`): 1 over plain file systems.
    depth: u32,
    /// The mounter's ids: owner of whiteouts and of the work directory (Linux makes them
    /// with the mounter's credentials, `ovl_override_creds`).
    mounter: Owner,
    /// Serialises copy-up and every change of the tree.
    ns: Mutex<()>,
    /// The overlay's own inode numbers, by the identity of the object's origin (its topmost
    /// lower inode, else its upper one): `(fs_id, id)`.
    inos: Mutex<HashMap<(u64, u64), u64>>,
    next_ino: AtomicU64,
    /// The origin of every object copied up by this mount, by its upper inode's `(fs_id,
    /// id)`: the lower inode's `(fs_id, id, st_ino)` (Linux keeps it on the layer in
    /// `trusted.overlay.origin`; here it lasts as long as the mount).
    origins: Mutex<HashMap<(u64, u64), Origin>>,
    /// The pseudo devices of lower file systems other than the upper one, by `fs_id`.
    pseudo_devs: Mutex<HashMap<u64, u64>>,
    /// Bumped by every change of the tree: open directories re-read their merged listing.
    version: AtomicU64,
}

/// A lower inode a copy-up started from: its `(fs_id, id, st_ino)`.
type Origin = (u64, u64, u64);

/// An anonymous device number `0:N` (Linux `get_anon_bdev`), from a range of overlay's own.
fn anon_dev() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0x400);
    vfs::encode_dev(0, NEXT.fetch_add(1, Ordering::Relaxed) as u32)
}

impl OvlFs {
    /// An overlay of resolved layers (the roots of its directories), its root inode.
    /// [`mount`] checks the layers first.
    pub fn new_root(
        upper: Option<Arc<dyn Inode>>,
        work: Option<Arc<dyn Inode>>,
        lowers: Vec<Arc<dyn Inode>>,
        config: Config,
        mounter: Owner,
        noxattr: bool,
    ) -> Arc<OvlInode> {
        let ids: Vec<u64> = upper
            .iter()
            .chain(lowers.iter())
            .map(|l| l.fs_id())
            .collect();
        let samefs = ids.windows(2).all(|w| w[0] == w[1]);
        let depth = upper
            .iter()
            .chain(lowers.iter())
            .map(|l| {
                l.as_any()
                    .downcast_ref::<OvlInode>()
                    .map_or(0, |o| o.fs().depth)
            })
            .max()
            .unwrap_or(0)
            + 1;
        let fs = Arc::new(OvlFs {
            id: vfs::new_fs_id(),
            dev: anon_dev(),
            upper: upper.clone(),
            work,
            lowers: lowers.clone(),
            config,
            noxattr,
            samefs,
            depth,
            mounter,
            ns: Mutex::new(()),
            inos: Mutex::new(HashMap::new()),
            next_ino: AtomicU64::new(1),
            origins: Mutex::new(HashMap::new()),
            pseudo_devs: Mutex::new(HashMap::new()),
            version: AtomicU64::new(0),
        });
        // The root merges every lower layer, whatever the upper root says (`ovl_get_root`).
        OvlInode::new(&fs, None, b"", mode::S_IFDIR, upper, lowers)
    }

    /// The prefix of overlayfs's own extended attributes (`ovl_xattr`).
    pub fn xattr_prefix(&self) -> &'static [u8] {
        if self.config.userxattr {
            OVL_XATTR_USER_PREFIX
        } else {
            OVL_XATTR_TRUSTED_PREFIX
        }
    }

    /// The layer's name of guest attribute `name`: one in overlayfs's namespace is escaped
    /// with a second prefix (`ovl_xattr_escape`, Linux 6.7), every other is as it is.
    pub fn escape_xattr(&self, name: &[u8]) -> Vec<u8> {
        let p = self.xattr_prefix();
        match name.strip_prefix(p) {
            Some(rest) => [p, b"overlay.", rest].concat(),
            None => name.to_vec(),
        }
    }

    /// The guest's name of layer attribute `name`; `None` for overlayfs's own (hidden).
    pub fn unescape_xattr(&self, name: &[u8]) -> Option<Vec<u8>> {
        let p = self.xattr_prefix();
        match name.strip_prefix(p) {
            Some(rest) => rest.strip_prefix(b"overlay.").map(|r| [p, r].concat()),
            None => Some(name.to_vec()),
        }
    }

    /// The name of the opaque attribute.
    fn opaque_name(&self) -> Vec<u8> {
        [self.xattr_prefix(), OVL_XATTR_OPAQUE].concat()
    }

    /// Whether real directory `dir` is opaque (`ovl_is_opaquedir`: the attribute is `y`).
    pub fn is_opaque(&self, dir: &dyn Inode) -> bool {
        dir.has_xattrs() && dir.getxattr(&self.opaque_name()).is_ok_and(|v| v == b"y")
    }

    /// Marks real directory `dir` opaque (`ovl_set_opaque`): `EIO` where the upper layer
    /// keeps no attributes, as Linux's `ovl_set_opaque_xerr`.
    fn set_opaque(&self, dir: &dyn Inode) -> SysResult<()> {
        if self.noxattr {
            log::warn!("overlayfs: cannot set opaque xattr on an upper fs without xattrs");
            return Err(Errno::EIO);
        }
        dir.setxattr(&self.opaque_name(), b"y", 0).map_err(|e| {
            log::warn!(
                "overlayfs: cannot set {} xattr on upper",
                String::from_utf8_lossy(&self.opaque_name())
            );
            if e == Errno::EOPNOTSUPP {
                Errno::EIO
            } else {
                e
            }
        })
    }

    /// The overlay inode number of the object whose origin is `key`.
    fn ino_of(&self, key: (u64, u64)) -> u64 {
        let mut m = lock(&self.inos);
        *m.entry(key)
            .or_insert_with(|| self.next_ino.fetch_add(1, Ordering::Relaxed))
    }

    /// Records that upper inode `upper` is the copy of lower inode `lower` (st_ino `ino`).
    fn set_origin(&self, upper: &dyn Inode, lower: &dyn Inode, ino: u64) {
        lock(&self.origins).insert(
            (upper.fs_id(), upper.id()),
            (lower.fs_id(), lower.id(), ino),
        );
    }

    /// The origin of upper inode `upper`, if this mount copied it up.
    fn origin_of(&self, upper: &dyn Inode) -> Option<Origin> {
        lock(&self.origins)
            .get(&(upper.fs_id(), upper.id()))
            .copied()
    }

    /// The pseudo device of the layers on file system `fs_id` (`ofs->fs[fsid].pseudo_dev`,
    /// an anonymous device per file system, upper included): the `st_dev` of non-directories
    /// when the layers are on more than one file system and xino is off.
    fn pseudo_dev(&self, fs_id: u64) -> u64 {
        *lock(&self.pseudo_devs)
            .entry(fs_id)
            .or_insert_with(anon_dev)
    }

    /// A change of the tree: open directories list anew.
    fn changed(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// The work directory.
    pub fn work_dir(&self) -> Option<&Arc<dyn Inode>> {
        self.work.as_ref()
    }

    /// The upper layer's root.
    pub fn upper_root(&self) -> Option<&Arc<dyn Inode>> {
        self.upper.as_ref()
    }

    /// The mount options as `/proc/mounts` shows them (`ovl_show_options`).
    pub fn show_options(&self) -> String {
        self.config.show()
    }
}

/// Whether real inode `i` is a whiteout (`ovl_is_whiteout`: a character device 0:0).
pub fn is_whiteout(i: &dyn Inode) -> bool {
    i.stat()
        .is_ok_and(|st| st.mode & mode::S_IFMT == mode::S_IFCHR && st.rdev == 0)
}

/// Runs `f` with an I/O context of the current task: copy-up and readdir open the real files
/// from calls that get none (`setattr`, `readdir`). `EIO` off a guest thread.
pub fn with_io<R>(f: impl FnOnce(&IoCtx<'_>) -> SysResult<R>) -> SysResult<R> {
    let task = um_kernel::current::current().ok_or(Errno::EIO)?;
    f(&IoCtx {
        task: &task,
        nonblock: false,
        flags: 0,
    })
}

/// `mount -t overlay`: parses `data`, walks the layers as the current task, checks them
/// (`ovl_fill_super`), makes the work directory and returns the overlay's root. The mount
/// flags are the VFS's (`MS_RDONLY` makes the mount read-only there).
pub fn mount(_flags: u64, data: &[u8]) -> SysResult<Arc<dyn Inode>> {
    use um_fs::namei::{self, Last};
    let config = params::parse(data)?;
    let task = um_kernel::current::current().ok_or(Errno::EINVAL)?;
    let fsctx = lock(&task.process.fs).clone();
    let creds = *lock(&task.process.creds);
    let walk = |p: &[u8]| -> SysResult<Arc<vfs::Dentry>> {
        let start = if p.first() == Some(&b'/') {
            fsctx.root.clone()
        } else {
            fsctx.cwd.clone()
        };
        let d = namei::walk_with(&fsctx, &creds, &start, p, Last::Follow).inspect_err(|e| {
            log::error!(
                "overlayfs: failed to resolve '{}': {}",
                String::from_utf8_lossy(p),
                e.name()
            );
        })?;
        if d.inode.stat()?.mode & mode::S_IFMT != mode::S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        Ok(d)
    };
    let mounter = Owner {
        uid: creds.fsuid,
        gid: creds.fsgid,
    };
    let mut lowers = Vec::new();
    for l in &config.lowerdirs {
        lowers.push(walk(l)?.inode.clone());
    }
    let (mut upper, mut work, mut noxattr) = (None, None, false);
    if let Some(u) = &config.upperdir {
        let ud = walk(u)?;
        let w = config.workdir.as_ref().ok_or_else(|| {
            log::error!("overlayfs: missing 'workdir'");
            Errno::EINVAL
        })?;
        let wd = walk(w)?;
        let shown = String::from_utf8_lossy(u);
        if um_fs::mount::is_readonly(&ud) {
            log::error!("overlay: filesystem on {shown} is read-only");
            return Err(Errno::EINVAL);
        }
        let same_mount = match (um_fs::mount::mount_of(&ud), um_fs::mount::mount_of(&wd)) {
            (Some(a), Some(b)) => a.id == b.id,
            _ => false,
        };
        if !same_mount {
            log::error!("overlayfs: workdir and upperdir must reside under the same mount");
            return Err(Errno::EINVAL);
        }
        let (up, wp) = (ud.path(), wd.path());
        if um_fs::mount::under(&up, &wp) || um_fs::mount::under(&wp, &up) {
            log::error!("overlayfs: workdir and upperdir must be separate subtrees");
            return Err(Errno::EINVAL);
        }
        let (w, nx) = make_workdir(&wd.inode, mounter, &config, &shown)?;
        noxattr = nx;
        work = Some(w);
        upper = Some(ud.inode.clone());
    } else if config.workdir.is_some() {
        log::warn!("overlayfs: option 'workdir=...' is useless in a non-upper mount, ignore");
    }
    if upper.is_none() && lowers.len() < 2 {
        log::error!("overlayfs: at least 2 lowerdir are needed while upperdir nonexistent");
        return Err(Errno::EINVAL);
    }
    let root = OvlFs::new_root(upper, work, lowers, config, mounter, noxattr);
    if root.fs().depth > FILESYSTEM_MAX_STACK_DEPTH {
        log::error!("overlayfs: maximum fs stacking depth exceeded");
        return Err(Errno::EINVAL);
    }
    Ok(root)
}

/// `ovl_make_workdir`: `W/work` anew (an old one emptied and removed first), mode 0, owned by
/// the mounter; then the probes: a whiteout must be possible there (else `EINVAL`), and an
/// extended attribute (else the overlay keeps none: `noxattr`, with Linux's warning).
fn make_workdir(
    wdir: &Arc<dyn Inode>,
    mounter: Owner,
    config: &Config,
    upper_name: &str,
) -> SysResult<(Arc<dyn Inode>, bool)> {
    const WORK: &[u8] = b"work";
    if wdir.lookup(WORK).is_ok() {
        // ovl_workdir_cleanup: what a previous mount left (at one level).
        if let Ok(old) = wdir.lookup(WORK) {
            if let Ok(names) = with_io(|io| file::real_names(&*old, io)) {
                for n in names {
                    if old.unlink(&n).is_err() {
                        let _ = old.rmdir(&n);
                    }
                }
            }
        }
        let _ = wdir.rmdir(WORK);
    }
    let work = match wdir.lookup(WORK) {
        Ok(w) => w,
        Err(_) => wdir.mkdir(WORK, 0, mounter).map_err(|e| {
            log::error!("overlayfs: failed to create directory {upper_name}/work ({e:?})");
            Errno::EINVAL
        })?,
    };
    const PROBE: &[u8] = b"#whiteout-probe";
    match work.mknod(PROBE, mode::S_IFCHR, 0, mounter) {
        Ok(_) => {
            let _ = work.unlink(PROBE);
        }
        Err(e) => {
            log::error!(
                "overlayfs: filesystem on '{upper_name}' not supported as upperdir (no whiteouts: {e:?})"
            );
            return Err(Errno::EINVAL);
        }
    }
    let probe = [
        if config.userxattr {
            OVL_XATTR_USER_PREFIX
        } else {
            OVL_XATTR_TRUSTED_PREFIX
        },
        OVL_XATTR_OPAQUE,
    ]
    .concat();
    let noxattr = !work.has_xattrs() || work.setxattr(&probe, b"0", 0).is_err();
    if noxattr {
        log::warn!(
            "overlayfs: upper fs does not support xattr, falling back to index=off and metacopy=off."
        );
    } else {
        let _ = work.removexattr(&probe);
    }
    Ok((work, noxattr))
}

/// `/sys/module/overlay/parameters/*`: the module parameters and Linux's defaults
/// (fs/overlayfs/params.c, dir.c, copy_up.c), read-only here.
pub const MODULE_PARAMETERS: &[(&str, &str)] = &[
    ("check_copy_up", "N"),
    ("index", "N"),
    ("metacopy", "N"),
    ("nfs_export", "N"),
    ("redirect_always_follow", "Y"),
    ("redirect_dir", "N"),
    ("redirect_max", "256"),
    ("xino_auto", "N"),
];

/// Registers the `overlay` file system type and `/sys/module/overlay` (at boot, before init).
pub fn init() {
    um_fs::mount::register_fs("overlay", Arc::new(mount));
    um_fs::mount::register_show_options(
        "overlay",
        Arc::new(|root| {
            let o = root.as_any().downcast_ref::<OvlInode>()?;
            Some(o.fs().show_options())
        }),
    );
    um_fs::procfs::registry::proc_create("sysfs/module", "overlay", |fs| {
        use um_fs::procfs::ProcInode;
        let params: Vec<(&str, Arc<ProcInode>)> = MODULE_PARAMETERS
            .iter()
            .map(|(n, v)| (*n, ProcInode::text(fs, format!("{v}\n"))))
            .collect();
        ProcInode::dir(fs, vec![("parameters", ProcInode::dir(fs, params))])
    });
}
