//! Guest ownership on hostfs: the owner, group, all 12 mode bits and the node type (with the
//! device number) a guest gave a file, kept on the host next to the file, whatever host user
//! runs `linux` and across reboots.
//!
//! hostfs writes every file as the host user, who may not `chown` (chown(2): only a privileged
//! process may change the owner) nor `mknod` a device (mknod(2): `CAP_MKNOD`). So the guest's
//! view is metadata, as rootless podman keeps it for fuse-overlayfs in
//! `user.containers.override_stat`, and it is used the same way whether `linux` runs as root
//! or not (so CI, which runs as root, tests what users get):
//!
//! * **Where**: the host extended attribute [`XATTR`] (`user.um.stat`) of the host file, read
//!   and written through [`um_os_linux::xattr`]. It moves with the file on rename and link, goes
//!   with it on unlink, and is copied by `cp -a`, `tar --xattrs`, `rsync -X`. Its value is
//!   [`Meta::format`]: `UID:GID:MODE:TYPE`, decimal ids, the 12 permission bits in octal with a
//!   leading 0, and the type as containers/storage writes it: `file`, `dir`, `symlink`, `pipe`,
//!   `socket`, `char-MAJOR-MINOR`, `block-MAJOR-MINOR` (e.g. `0:42:0640:file`,
//!   `0:0:0666:char-1-3`). `UID:GID:MODE` alone is read too (the host's type).
//! * **Fallback**: Linux allows `user.` attributes only on regular files and directories
//!   (fs/xattr.c `xattr_permission`: `EPERM` on a symlink, even for root), only for a caller
//!   who may write the file, and some file systems take none (`EOPNOTSUPP`: tmpfs before 6.6,
//!   some network file systems). Those objects go to the [`Sidecar`]: a log file [`SIDECAR`]
//!   (`.um-meta`) at the hostfs root, keyed by host inode number, which the guest can never
//!   see, open, create, rename or remove (hostfs hides every name starting with it at the
//!   root). A symlink gets an entry only when its guest owner differs from the host's, so a
//!   tree used by root keeps no sidecar for root's links. Keying by inode number makes rename
//!   and link carry the entry for free; unlink of the last link drops it. A copy of the tree
//!   (new inode numbers) is recognised by the sidecar's own inode number, which its header
//!   records, and its entries are then ignored with one log line. Known limit: a host-side
//!   delete of a file that had an entry, outside `linux`, leaves the entry, which a new host
//!   file reusing that inode number of the same type would pick up.
//! * **Reading**: a file with metadata shows it ([`Meta::apply`] over the host's `stat`); one
//!   without shows the host's owner, group and mode as before, so a tree extracted by root
//!   shows its real owners.
//! * **Host mode**: hostfs never changes the host owner; a chmod sets the host mode to
//!   [`host_mode`] (the guest's read and execute bits plus what keeps the host user able to
//!   read and write the file, or list and change the directory; no group or other write and
//!   no setuid/setgid/sticky on the host).
//! * **Device nodes, FIFOs, sockets** made by the guest (mknod(2)) are empty regular host files
//!   whose metadata carries the type and `rdev`; hostfs opens them as what they say (the
//!   driver of the device number, the kernel's FIFO), exactly as it opens real host nodes. A
//!   directory listing still reports them as `DT_REG` (reading the metadata of every regular
//!   file of a directory would double the cost of `readdir`); `stat` gives the right type.
//!
//! * **Extended attributes** of the guest are host xattrs of ours ([`crate::hostfs_xattr`])
//!   where the host file system takes user xattrs. Where it takes none, they go to the
//!   [`Sidecar`] too, keyed by inode number like the ownership entries (so rename and link
//!   carry them, unlink of the last link drops them), on regular files and directories as
//!   with host xattrs, at most [`SIDECAR_XATTR_MAX`] bytes of names and values per inode
//!   (`ENOSPC` past it, as a full ext4 inode).
//!
//! * **Cost**: a `stat` is the host's `fstatat` plus, for a regular file or directory, a
//!   `lgetxattr`, which [`MetaStore`] skips while the host ctime it was read at is unchanged
//!   (any xattr change moves the ctime).
//!
//! The rules Linux applies when it makes an inode and changes one are here too, because they
//! act on the guest view: [`init_owner`] (`inode_init_owner` and `mode_strip_sgid`,
//! fs/inode.c) and [`strip_privs`] (`should_remove_suid`, fs/inode.c; 6.x
//! `setattr_should_drop_suidgid`).

use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use um_kernel::task::lock;
use um_kernel::vfs::{self, Kstat, Owner, mode};
use um_os_linux::host::{self, HostStat};
use um_os_linux::hostdir;
use um_os_linux::xattr::{self, XattrLoc};
use um_uapi::{Errno, SysResult};

/// The host extended attribute that holds a file's guest metadata.
pub const XATTR: &str = "user.um.stat";
/// The sidecar store at the hostfs root; every root entry whose name starts with this is
/// hidden from the guest ([`reserved`]).
pub const SIDECAR: &[u8] = b".um-meta";
/// The temporary name a sidecar is rewritten under before it replaces the old one.
const SIDECAR_NEW: &[u8] = b".um-meta.new";
/// One entry of [`MetaStore`]'s xattr cache: the host ctime it was read at, and what it said.
type XcacheEntry = ((i64, i64), Option<Meta>);
/// Entries of [`MetaStore`]'s xattr cache before it starts over.
const XCACHE_MAX: usize = 1 << 16;
/// First word of the sidecar's header line.
const SIDECAR_MAGIC: &str = "um-meta";
/// The most bytes of attribute names and values the sidecar keeps for one inode.
pub const SIDECAR_XATTR_MAX: usize = 256 * 1024;
/// The guest attributes of one inode in the sidecar, by name.
pub type Xattrs = BTreeMap<Vec<u8>, Vec<u8>>;

pub use um_uapi::abi::fcntl::S_ISGID;
pub use um_uapi::abi::fcntl::S_ISUID;
use um_uapi::abi::fcntl::S_IXGRP;

/// Whether `name` in the hostfs root is one of the store's own files.
pub fn reserved(name: &[u8]) -> bool {
    name.starts_with(SIDECAR)
}

/// A file's guest metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub uid: u32,
    pub gid: u32,
    /// The 12 permission bits (`07777`).
    pub perm: u32,
    /// The guest's file type (`S_IF*`), or 0 for "the host's".
    pub fmt: u32,
    /// The device number of a `char`/`block` node (`new_encode_dev` form).
    pub rdev: u64,
}

impl Meta {
    /// The metadata a host file shows today (no stored metadata).
    pub fn of_host(hs: &HostStat) -> Meta {
        Meta {
            uid: hs.uid,
            gid: hs.gid,
            perm: hs.mode & 0o7777,
            fmt: hs.mode & mode::S_IFMT,
            rdev: 0,
        }
    }

    /// The stored text: `UID:GID:0MODE:TYPE`.
    pub fn format(&self) -> String {
        let (ma, mi) = vfs::decode_dev(self.rdev);
        let kind = match self.fmt {
            mode::S_IFDIR => "dir".to_string(),
            mode::S_IFLNK => "symlink".to_string(),
            mode::S_IFIFO => "pipe".to_string(),
            mode::S_IFSOCK => "socket".to_string(),
            mode::S_IFCHR => format!("char-{ma}-{mi}"),
            mode::S_IFBLK => format!("block-{ma}-{mi}"),
            _ => "file".to_string(),
        };
        format!(
            "{}:{}:0{:03o}:{kind}",
            self.uid,
            self.gid,
            self.perm & 0o7777
        )
    }

    /// Parses [`Meta::format`]'s text (or `UID:GID:MODE`); `None` if malformed.
    pub fn parse(text: &[u8]) -> Option<Meta> {
        let text = std::str::from_utf8(text)
            .ok()?
            .trim_end_matches(['\n', '\0']);
        let mut f = text.split(':');
        let uid = f.next()?.parse().ok()?;
        let gid = f.next()?.parse().ok()?;
        let perm = u32::from_str_radix(f.next()?, 8).ok()?;
        if perm > 0o7777 {
            return None;
        }
        let (fmt, rdev) = match f.next() {
            None => (0, 0),
            Some("file") => (mode::S_IFREG, 0),
            Some("dir") => (mode::S_IFDIR, 0),
            Some("symlink") => (mode::S_IFLNK, 0),
            Some("pipe") => (mode::S_IFIFO, 0),
            Some("socket") => (mode::S_IFSOCK, 0),
            Some(dev) => {
                let (fmt, nums) = if let Some(n) = dev.strip_prefix("char-") {
                    (mode::S_IFCHR, n)
                } else {
                    (mode::S_IFBLK, dev.strip_prefix("block-")?)
                };
                let (ma, mi) = nums.split_once('-')?;
                (fmt, vfs::encode_dev(ma.parse().ok()?, mi.parse().ok()?))
            }
        };
        if f.next().is_some() {
            return None;
        }
        Some(Meta {
            uid,
            gid,
            perm,
            fmt,
            rdev,
        })
    }

    /// Whether this metadata can describe a host object of type `host_fmt`: a regular host
    /// file may stand for any non-directory, non-symlink node the guest made; anything else
    /// keeps its own type.
    pub fn fits(&self, host_fmt: u32) -> bool {
        self.fmt == 0
            || self.fmt == host_fmt
            || host_fmt == mode::S_IFREG
                && matches!(
                    self.fmt,
                    mode::S_IFCHR | mode::S_IFBLK | mode::S_IFIFO | mode::S_IFSOCK
                )
    }

    /// Whether a regular host file stands for a device node, FIFO or socket.
    pub fn emulated(&self, host_fmt: u32) -> bool {
        host_fmt == mode::S_IFREG
            && self.fmt != 0
            && self.fmt != mode::S_IFREG
            && self.fits(host_fmt)
    }

    /// The guest's view of a host `stat`: owner, group, mode bits, and for an emulated node its
    /// type and device number. A symlink's mode stays `0777` (Linux's).
    pub fn apply(&self, st: &mut Kstat) {
        let host_fmt = st.mode & mode::S_IFMT;
        if !self.fits(host_fmt) {
            return;
        }
        st.uid = self.uid;
        st.gid = self.gid;
        if host_fmt == mode::S_IFLNK {
            return;
        }
        let mut fmt = host_fmt;
        if self.emulated(host_fmt) {
            fmt = self.fmt;
            st.rdev = if matches!(fmt, mode::S_IFCHR | mode::S_IFBLK) {
                self.rdev
            } else {
                0
            };
            st.size = 0;
        }
        st.mode = fmt | (self.perm & 0o7777);
    }
}

/// The host mode for a guest mode: the guest's read and execute bits, plus `u+rw` for files
/// and `u+rwx` for directories so the host user can always read and write what it stores (and
/// set its `user.` attribute, which needs write permission); never group or other write, nor
/// setuid, setgid or sticky, on the host: a guest's `chmod 4777` must not give other host
/// users a writable file or a setuid program of the user running `linux`.
pub fn host_mode(perm: u32, is_dir: bool) -> u32 {
    (perm & 0o755) | if is_dir { 0o700 } else { 0o600 }
}

/// The owner, group and mode of a new inode (Linux `inode_init_owner`, fs/inode.c): the
/// creator's fsuid; the directory's group if the directory is setgid (and a new directory
/// is setgid too), else the creator's fsgid. With `mode_strip_sgid` (fs/inode.c, applied by
/// `vfs_prepare_mode` in fs/namei.c): a non-directory made setgid and group-executable in a
/// setgid directory loses `S_ISGID` unless the creator is in the directory's group or
/// privileged (`CAP_FSETID`: fsuid 0 here; supplementary groups are not kept). `mode`
/// includes the `S_IFMT` type.
pub fn init_owner(dir: &Kstat, owner: Owner, mode: u32) -> Meta {
    let fmt = mode & mode::S_IFMT;
    let (owner, perm) = crate::namei::inode_init_owner(dir, owner, mode);
    Meta {
        uid: owner.uid,
        gid: owner.gid,
        perm,
        fmt,
        rdev: 0,
    }
}

/// Whether a write by an unprivileged process must clear bits of `mode`
/// (`should_remove_suid`, fs/inode.c): setuid, or setgid with group execute (setgid alone
/// is mandatory locking, kept), on a regular file.
pub fn has_privs(mode: u32) -> bool {
    mode & mode::S_IFMT == mode::S_IFREG
        && (mode & S_ISUID != 0 || mode & (S_ISGID | S_IXGRP) == (S_ISGID | S_IXGRP))
}

/// `mode` without the bits [`has_privs`] names (`file_remove_privs` → `notify_change` with
/// `ATTR_KILL_SUID`/`ATTR_KILL_SGID`).
pub fn strip_privs(mode: u32) -> u32 {
    let mut m = mode & !S_ISUID;
    if m & (S_ISGID | S_IXGRP) == (S_ISGID | S_IXGRP) {
        m &= !S_ISGID;
    }
    m
}

/// The sidecar's log format: a header line `um-meta 1 INO` (the sidecar file's own inode
/// number), then one line per change, `INO META` (see [`Meta::format`]) or `INO -` (entry
/// removed); the last line for an inode wins, and an unfinished last line is ignored.
/// Extended attributes (a host without user xattrs): `INO x NAME VALUE` (name and value in
/// lowercase hex, an empty value as `=`), `INO x NAME -` (that one removed) and `INO x -`
/// (all of the inode's removed). A reader that predates them skips those lines as malformed.
pub mod log_format {
    use super::{Meta, SIDECAR_MAGIC, Xattrs};
    use std::collections::HashMap;
    use std::fmt::Write;

    fn hex(b: &[u8]) -> String {
        if b.is_empty() {
            return "=".to_string();
        }
        b.iter()
            .fold(String::with_capacity(b.len() * 2), |mut s, x| {
                let _ = write!(s, "{x:02x}");
                s
            })
    }

    fn unhex(t: &[u8]) -> Option<Vec<u8>> {
        if t == b"=" {
            return Some(Vec::new());
        }
        if t.is_empty() || t.len() % 2 != 0 {
            return None;
        }
        t.chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
            .collect()
    }

    /// The header line for a sidecar whose own inode number is `ino`.
    pub fn header(ino: u64) -> String {
        format!("{SIDECAR_MAGIC} 1 {ino}\n")
    }

    /// One change.
    pub fn record(ino: u64, m: Option<&Meta>) -> String {
        match m {
            Some(m) => format!("{ino} {}\n", m.format()),
            None => format!("{ino} -\n"),
        }
    }

    /// One attribute change: `Some(value)` set, `None` removed; `name` `None`: all of them
    /// removed.
    pub fn xrecord(ino: u64, name: Option<&[u8]>, value: Option<&[u8]>) -> String {
        match (name, value) {
            (None, _) => format!("{ino} x -\n"),
            (Some(n), None) => format!("{ino} x {} -\n", hex(n)),
            (Some(n), Some(v)) => format!("{ino} x {} {}\n", hex(n), hex(v)),
        }
    }

    /// A parsed sidecar: the inode number its header names, the live entries, and how many
    /// record lines the file holds.
    #[derive(Debug, Default, PartialEq, Eq)]
    pub struct Parsed {
        /// The file starts with a sidecar header (it is ours to rewrite or remove).
        pub ours: bool,
        pub header_ino: Option<u64>,
        pub map: HashMap<u64, Meta>,
        /// Extended attributes by inode (never an empty set).
        pub xattrs: HashMap<u64, Xattrs>,
        pub records: usize,
    }

    /// Applies one `x` record (the text after `INO x `); `false` if malformed.
    fn apply_x(xattrs: &mut HashMap<u64, Xattrs>, ino: u64, rest: &[u8]) -> bool {
        let f: Vec<&[u8]> = rest.split(|&b| b == b' ').collect();
        match f[..] {
            [b"-"] => {
                xattrs.remove(&ino);
            }
            [n, b"-"] => {
                let Some(n) = unhex(n) else { return false };
                if let Some(set) = xattrs.get_mut(&ino) {
                    set.remove(&n);
                    if set.is_empty() {
                        xattrs.remove(&ino);
                    }
                }
            }
            [n, v] => {
                let (Some(n), Some(v)) = (unhex(n), unhex(v)) else {
                    return false;
                };
                xattrs.entry(ino).or_default().insert(n, v);
            }
            _ => return false,
        }
        true
    }

    /// Parses a whole sidecar file; malformed lines are skipped.
    pub fn parse(text: &[u8]) -> Parsed {
        let mut out = Parsed::default();
        // Only complete lines: a crash in the middle of an append leaves a partial one.
        let end = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let mut lines = text[..end].split(|&b| b == b'\n').filter(|l| !l.is_empty());
        let Some(first) = lines.next() else {
            return out;
        };
        let head = String::from_utf8_lossy(first);
        let mut w = head.split_whitespace();
        if w.next() != Some(SIDECAR_MAGIC) || w.next() != Some("1") {
            return out;
        }
        out.ours = true;
        out.header_ino = w.next().and_then(|s| s.parse().ok());
        for line in lines {
            out.records += 1;
            let Some(sp) = line.iter().position(|&b| b == b' ') else {
                continue;
            };
            let Some(ino) = std::str::from_utf8(&line[..sp])
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
            else {
                continue;
            };
            let rest = &line[sp + 1..];
            if let Some(x) = rest.strip_prefix(b"x ") {
                apply_x(&mut out.xattrs, ino, x);
            } else if rest == b"-" {
                out.map.remove(&ino);
            } else if let Some(m) = Meta::parse(rest) {
                out.map.insert(ino, m);
            }
        }
        out
    }
}

/// The sidecar store (see the module docs): entries in memory, every change appended to the
/// file at the root; the file is rewritten (compacted) at the first change of each boot and
/// removed when it holds nothing.
pub struct Sidecar {
    map: HashMap<u64, Meta>,
    /// Guest extended attributes by inode, where the host takes no user xattrs.
    xattrs: HashMap<u64, Xattrs>,
    /// Open for writing after the first change of this boot, with the offset of its end.
    file: Option<(OwnedFd, u64)>,
    /// A write failed: entries are kept in memory only (logged once).
    failed: bool,
}

fn errno(e: std::io::Error) -> Errno {
    crate::hostfs::host_errno(e)
}

fn read_all(fd: BorrowedFd<'_>) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let n = host::pread(fd, &mut buf, out.len() as u64)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

fn write_at(fd: BorrowedFd<'_>, data: &[u8], mut off: u64) -> std::io::Result<u64> {
    let mut done = 0;
    while done < data.len() {
        let n = host::pwrite(fd, &data[done..], off)?;
        if n == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EIO));
        }
        done += n;
        off += n as u64;
    }
    Ok(off)
}

impl Sidecar {
    /// Loads the sidecar of the root `root` (if any). On a read-write mount a sidecar of
    /// another copy of the tree, or one with nothing left in it, is removed.
    pub fn load(root: BorrowedFd<'_>, readonly: bool) -> Sidecar {
        let mut sc = Sidecar {
            map: HashMap::new(),
            xattrs: HashMap::new(),
            file: None,
            failed: false,
        };
        let fd = match host::openat(root, SIDECAR, libc::O_RDONLY, 0) {
            Ok(fd) => fd,
            Err(e) => {
                if e.raw_os_error() != Some(libc::ENOENT) {
                    log::warn!(
                        "hostfs: cannot read {}: {e}",
                        String::from_utf8_lossy(SIDECAR)
                    );
                }
                return sc;
            }
        };
        let (text, ino) = match (read_all(fd.as_fd()), host::fstatat(fd.as_fd(), b"")) {
            (Ok(t), Ok(st)) => (t, st.ino),
            (Err(e), _) | (_, Err(e)) => {
                log::warn!(
                    "hostfs: cannot read {}: {e}",
                    String::from_utf8_lossy(SIDECAR)
                );
                return sc;
            }
        };
        let p = log_format::parse(&text);
        if !p.ours {
            // Not a file this store wrote: leave it alone, and keep entries in memory only.
            log::warn!(
                "hostfs: {} is not a guest-metadata file; guest ownership of symlinks is not \
                 persistent",
                String::from_utf8_lossy(SIDECAR)
            );
            sc.failed = true;
            return sc;
        }
        if p.header_ino == Some(ino) {
            sc.map = p.map;
            sc.xattrs = p.xattrs;
        } else {
            log::warn!(
                "hostfs: {} was written for another copy of this tree (inode {:?}, now {ino}): \
                 its {} entries are ignored",
                String::from_utf8_lossy(SIDECAR),
                p.header_ino,
                p.map.len()
            );
        }
        if !readonly && sc.is_empty() {
            let _ = hostdir::unlinkat(root, SIDECAR, false);
        }
        sc
    }

    /// The entry of inode `ino`.
    pub fn get(&self, ino: u64) -> Option<Meta> {
        self.map.get(&ino).copied()
    }

    /// Number of entries (inodes with ownership metadata or attributes).
    pub fn len(&self) -> usize {
        self.map.len()
            + self
                .xattrs
                .keys()
                .filter(|k| !self.map.contains_key(k))
                .count()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty() && self.xattrs.is_empty()
    }

    /// The attributes of inode `ino`.
    pub fn xattrs(&self, ino: u64) -> Option<&Xattrs> {
        self.xattrs.get(&ino)
    }

    /// Sets (`Some`) or removes (`None`) the attribute `name` of `ino`, in memory and in the
    /// file. The caller has checked the flags and the size.
    pub fn set_xattr(&mut self, root: BorrowedFd<'_>, ino: u64, name: &[u8], v: Option<&[u8]>) {
        match v {
            Some(v) => {
                self.xattrs
                    .entry(ino)
                    .or_default()
                    .insert(name.to_vec(), v.to_vec());
            }
            None => {
                let Some(set) = self.xattrs.get_mut(&ino) else {
                    return;
                };
                if set.remove(name).is_none() {
                    return;
                }
                if set.is_empty() {
                    self.xattrs.remove(&ino);
                }
            }
        }
        self.append(root, log_format::xrecord(ino, Some(name), v));
    }

    /// Drops every attribute of `ino`.
    pub fn drop_xattrs(&mut self, root: BorrowedFd<'_>, ino: u64) {
        if self.xattrs.remove(&ino).is_some() {
            self.append(root, log_format::xrecord(ino, None, None));
        }
    }

    /// Sets (`Some`) or removes (`None`) the entry of `ino`, in memory and in the file.
    pub fn update(&mut self, root: BorrowedFd<'_>, ino: u64, m: Option<Meta>) {
        let changed = match m {
            Some(m) => self.map.insert(ino, m) != Some(m),
            None => self.map.remove(&ino).is_some(),
        };
        if changed {
            self.append(root, log_format::record(ino, m.as_ref()));
        }
    }

    /// Records a change already made in memory: appends `line`, or at the first change of
    /// this boot rewrites the whole file (which then holds the change).
    fn append(&mut self, root: BorrowedFd<'_>, line: String) {
        if self.failed {
            return;
        }
        let r = match self.file.take() {
            None => self.rewrite(root),
            Some((fd, off)) => {
                write_at(fd.as_fd(), line.as_bytes(), off).map(|off| Some((fd, off)))
            }
        };
        match r {
            Ok(f) => self.file = f,
            Err(e) => {
                self.failed = true;
                log::warn!(
                    "hostfs: cannot write {}: {e}; guest ownership changes are not persistent",
                    String::from_utf8_lossy(SIDECAR)
                );
            }
        }
    }

    /// Writes every entry into a fresh file that then replaces the sidecar (or removes the
    /// sidecar if there are none). Returns the new file open for appending.
    fn rewrite(&self, root: BorrowedFd<'_>) -> std::io::Result<Option<(OwnedFd, u64)>> {
        if self.is_empty() {
            return match hostdir::unlinkat(root, SIDECAR, false) {
                Err(e) if e.raw_os_error() != Some(libc::ENOENT) => Err(e),
                _ => Ok(None),
            };
        }
        let fd = host::openat(
            root,
            SIDECAR_NEW,
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
            0o600,
        )?;
        let ino = host::fstatat(fd.as_fd(), b"")?.ino;
        let mut text = log_format::header(ino);
        let mut entries: Vec<_> = self.map.iter().collect();
        entries.sort_by_key(|(k, _)| **k);
        for (k, m) in entries {
            text.push_str(&log_format::record(*k, Some(m)));
        }
        let mut xs: Vec<_> = self.xattrs.iter().collect();
        xs.sort_by_key(|(k, _)| **k);
        for (k, set) in xs {
            for (n, v) in set {
                text.push_str(&log_format::xrecord(*k, Some(n), Some(v)));
            }
        }
        let off = write_at(fd.as_fd(), text.as_bytes(), 0)?;
        hostdir::renameat2(root, SIDECAR_NEW, root, SIDECAR, 0)?;
        Ok(Some((fd, off)))
    }
}

/// The metadata layer of one hostfs instance: user xattrs where the host takes them, the
/// sidecar elsewhere.
pub struct MetaStore {
    /// The root directory (`O_PATH`), where the sidecar lives.
    root: OwnedFd,
    /// Host device of the root: sidecar entries are for inodes of that file system only
    /// (inode numbers of other file systems mounted inside the tree could collide).
    root_dev: u64,
    /// The host file system of the root takes `user.` xattrs.
    xattrs: bool,
    /// What the xattr of a host inode said, by (device, inode), with the host ctime it was
    /// read at. Setting an xattr (by anyone) changes the ctime, so an entry whose ctime
    /// still matches the host's is current; this store's own changes drop the entry. Saves
    /// the xattr read on most `stat`s (every path walk stats each directory it passes).
    xcache: Mutex<HashMap<(u64, u64), XcacheEntry>>,
    /// Bumped by every xattr write: a read that raced with one is not cached.
    xgen: AtomicU64,
    sidecar: Mutex<Sidecar>,
    /// Serialises read-modify-write of one file's metadata (Linux holds the inode lock).
    pub attr_lock: Mutex<()>,
}

fn is_xattr_refusal(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::EPERM | libc::EACCES | libc::EROFS)
    )
}

impl MetaStore {
    /// Opens the store of the hostfs root `root`; logs one line saying where metadata goes.
    pub fn new(root: OwnedFd, root_dev: u64, readonly: bool, what: &str) -> MetaStore {
        let xattrs = !matches!(
            xattr::get(XattrLoc::At(root.as_fd(), b""), XATTR),
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP)
        );
        let sidecar = Sidecar::load(root.as_fd(), readonly);
        let sc = String::from_utf8_lossy(SIDECAR);
        if xattrs {
            log::info!(
                "hostfs: {what}: guest owners and modes in {XATTR} xattrs ({} in {sc})",
                if sidecar.is_empty() {
                    "symlinks and files the host user may not change".to_string()
                } else {
                    format!("{} entries", sidecar.len())
                }
            );
        } else {
            log::info!(
                "hostfs: {what}: the host file system takes no user xattrs; guest owners, \
                 modes and extended attributes in {sc} ({} entries)",
                sidecar.len()
            );
        }
        MetaStore {
            root,
            root_dev,
            xattrs,
            xcache: Mutex::new(HashMap::new()),
            xgen: AtomicU64::new(0),
            sidecar: Mutex::new(sidecar),
            attr_lock: Mutex::new(()),
        }
    }

    /// Whether the host file system of the root takes `user.` xattrs.
    pub fn host_xattrs(&self) -> bool {
        self.xattrs
    }

    /// The stored metadata of the host object `hs` at `loc`, if any.
    pub fn get(&self, loc: XattrLoc<'_>, hs: &HostStat) -> Option<Meta> {
        let fmt = hs.mode & mode::S_IFMT;
        if self.xattrs
            && matches!(fmt, mode::S_IFREG | mode::S_IFDIR)
            && let Some(m) = self.xattr_meta(loc, hs)
        {
            return Some(m);
        }
        if hs.dev != self.root_dev {
            return None;
        }
        let sc = lock(&self.sidecar);
        if sc.is_empty() {
            return None;
        }
        sc.get(hs.ino).filter(|m| m.fits(fmt))
    }

    /// The metadata in the xattr of `hs` at `loc`, through [`MetaStore::xcache`].
    fn xattr_meta(&self, loc: XattrLoc<'_>, hs: &HostStat) -> Option<Meta> {
        let key = (hs.dev, hs.ino);
        if let Some((ctime, m)) = lock(&self.xcache).get(&key)
            && *ctime == hs.ctime
        {
            return *m;
        }
        let fmt = hs.mode & mode::S_IFMT;
        let generation = self.xgen.load(Ordering::Acquire);
        let m = match xattr::get(loc, XATTR) {
            Ok(Some(v)) => Meta::parse(&v).filter(|m| m.fits(fmt)),
            // No xattr, or the host user may not read it (then a sidecar entry may exist).
            _ => None,
        };
        let mut c = lock(&self.xcache);
        if self.xgen.load(Ordering::Acquire) == generation {
            if c.len() >= XCACHE_MAX {
                c.clear();
            }
            c.insert(key, (hs.ctime, m));
        }
        m
    }

    /// Stores `m` for the host object `hs` at `loc`.
    pub fn set(&self, loc: XattrLoc<'_>, hs: &HostStat, m: Meta) -> SysResult<()> {
        let fmt = hs.mode & mode::S_IFMT;
        if fmt == mode::S_IFLNK {
            // No user xattrs on symlinks; an entry only when the host's owner is not right.
            let entry = (m.uid != hs.uid || m.gid != hs.gid).then_some(Meta {
                fmt: mode::S_IFLNK,
                perm: 0o777,
                ..m
            });
            self.set_sidecar(hs, entry);
            return Ok(());
        }
        if self.xattrs && matches!(fmt, mode::S_IFREG | mode::S_IFDIR) {
            let r = xattr::set(loc, XATTR, m.format().as_bytes());
            {
                let mut c = lock(&self.xcache);
                self.xgen.fetch_add(1, Ordering::AcqRel);
                c.remove(&(hs.dev, hs.ino));
            }
            match r {
                Ok(()) => {
                    self.forget_meta(hs);
                    return Ok(());
                }
                Err(e) if is_xattr_refusal(&e) => {
                    log::debug!("hostfs: {XATTR} refused ({e}); using the sidecar");
                }
                Err(e) => return Err(errno(e)),
            }
        }
        self.set_sidecar(hs, Some(m));
        Ok(())
    }

    fn set_sidecar(&self, hs: &HostStat, m: Option<Meta>) {
        if hs.dev != self.root_dev {
            log::debug!(
                "hostfs: guest metadata of inode {} (another host fs) not kept",
                hs.ino
            );
            return;
        }
        let mut sc = lock(&self.sidecar);
        if m.is_none() && sc.get(hs.ino).is_none() {
            return;
        }
        sc.update(self.root.as_fd(), hs.ino, m);
    }

    /// The metadata of `hs` is now in its xattr: drop its sidecar entry.
    fn forget_meta(&self, hs: &HostStat) {
        if hs.dev == self.root_dev && lock(&self.sidecar).get(hs.ino).is_some() {
            self.set_sidecar(hs, None);
        }
    }

    /// The host object `hs` is going away (its last link): drop its sidecar entry and
    /// attributes.
    pub fn forget(&self, hs: &HostStat) {
        self.forget_meta(hs);
        if hs.dev == self.root_dev {
            lock(&self.sidecar).drop_xattrs(self.root.as_fd(), hs.ino);
        }
    }

    /// The guest attribute `name` of `hs` in the sidecar (a host without user xattrs).
    pub fn sidecar_getxattr(&self, hs: &HostStat, name: &[u8]) -> SysResult<Vec<u8>> {
        let sc = lock(&self.sidecar);
        sc.xattrs(hs.ino)
            .filter(|_| hs.dev == self.root_dev)
            .and_then(|set| set.get(name))
            .cloned()
            .ok_or(Errno::ENODATA)
    }

    /// The guest attribute names of `hs` in the sidecar.
    pub fn sidecar_listxattr(&self, hs: &HostStat) -> Vec<Vec<u8>> {
        let sc = lock(&self.sidecar);
        sc.xattrs(hs.ino)
            .filter(|_| hs.dev == self.root_dev)
            .map(|set| set.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Sets (`Some`) or removes (`None`) the guest attribute `name` of `hs` in the sidecar,
    /// with `XATTR_CREATE`/`XATTR_REPLACE` as `simple_xattr_set` (fs/xattr.c): `EEXIST`,
    /// `ENODATA`; `ENOSPC` past [`SIDECAR_XATTR_MAX`]; `EOPNOTSUPP` for an inode of another
    /// host file system mounted inside the tree (the sidecar keys inodes of the root's).
    pub fn sidecar_setxattr(
        &self,
        hs: &HostStat,
        name: &[u8],
        value: Option<&[u8]>,
        flags: u32,
    ) -> SysResult<()> {
        use um_uapi::abi::xattr::{XATTR_CREATE, XATTR_REPLACE};
        if hs.dev != self.root_dev {
            return Err(Errno::EOPNOTSUPP);
        }
        let mut sc = lock(&self.sidecar);
        let set = sc.xattrs(hs.ino);
        let old = set.and_then(|s| s.get(name));
        match (value, old) {
            (None, None) => return Err(Errno::ENODATA),
            (Some(_), Some(_)) if flags & XATTR_CREATE != 0 => return Err(Errno::EEXIST),
            (Some(_), None) if flags & XATTR_REPLACE != 0 => return Err(Errno::ENODATA),
            _ => {}
        }
        if let Some(v) = value {
            let used: usize = set.map_or(0, |s| s.iter().map(|(n, v)| n.len() + v.len()).sum());
            let freed = old.map_or(0, |o| name.len() + o.len());
            if used - freed + name.len() + v.len() > SIDECAR_XATTR_MAX {
                return Err(Errno::ENOSPC);
            }
        }
        sc.set_xattr(self.root.as_fd(), hs.ino, name, value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(uid: u32, gid: u32, perm: u32, fmt: u32, rdev: u64) -> Meta {
        Meta {
            uid,
            gid,
            perm,
            fmt,
            rdev,
        }
    }

    #[test]
    fn format_and_parse() {
        let cases = [
            (m(0, 42, 0o640, mode::S_IFREG, 0), "0:42:0640:file"),
            (m(9, 13, 0o2775, mode::S_IFDIR, 0), "9:13:02775:dir"),
            (m(0, 0, 0o4755, mode::S_IFREG, 0), "0:0:04755:file"),
            (m(5, 6, 0o777, mode::S_IFLNK, 0), "5:6:0777:symlink"),
            (m(0, 0, 0o644, mode::S_IFIFO, 0), "0:0:0644:pipe"),
            (m(0, 0, 0o755, mode::S_IFSOCK, 0), "0:0:0755:socket"),
            (
                m(0, 0, 0o666, mode::S_IFCHR, vfs::encode_dev(1, 3)),
                "0:0:0666:char-1-3",
            ),
            (
                m(0, 6, 0o660, mode::S_IFBLK, vfs::encode_dev(259, 70000)),
                "0:6:0660:block-259-70000",
            ),
            (
                m(65534, 65534, 0, mode::S_IFREG, 0),
                "65534:65534:0000:file",
            ),
        ];
        for (meta, text) in cases {
            assert_eq!(meta.format(), text);
            assert_eq!(Meta::parse(text.as_bytes()), Some(meta), "{text}");
        }
        // Three fields: the host's type. A NUL or newline at the end is tolerated.
        assert_eq!(Meta::parse(b"1:2:0755"), Some(m(1, 2, 0o755, 0, 0)));
        assert_eq!(
            Meta::parse(b"1:2:755:dir\n"),
            Some(m(1, 2, 0o755, mode::S_IFDIR, 0))
        );
        for bad in [
            &b""[..],
            b"1:2",
            b"x:2:0755",
            b"1:2:08",
            b"1:2:017777",
            b"1:2:0755:door",
            b"1:2:0755:char-1",
            b"1:2:0755:file:x",
            b"-1:2:0755",
        ] {
            assert_eq!(Meta::parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn apply_over_host_stat() {
        let host = Kstat {
            mode: mode::S_IFREG | 0o644,
            uid: 1000,
            gid: 1000,
            size: 0,
            rdev: 0,
            ..Default::default()
        };
        let mut st = host;
        m(0, 42, 0o640, mode::S_IFREG, 0).apply(&mut st);
        assert_eq!((st.mode, st.uid, st.gid), (mode::S_IFREG | 0o640, 0, 42));
        // An emulated character device.
        let mut st = host;
        m(0, 0, 0o666, mode::S_IFCHR, vfs::encode_dev(1, 3)).apply(&mut st);
        assert_eq!(st.mode, mode::S_IFCHR | 0o666);
        assert_eq!(vfs::decode_dev(st.rdev), (1, 3));
        // A FIFO has no device number.
        let mut st = host;
        m(0, 0, 0o600, mode::S_IFIFO, 0).apply(&mut st);
        assert_eq!((st.mode, st.rdev), (mode::S_IFIFO | 0o600, 0));
        // A symlink keeps 0777; a directory cannot be made a file.
        let link = Kstat {
            mode: mode::S_IFLNK | 0o777,
            ..host
        };
        let mut st = link;
        m(5, 6, 0o600, mode::S_IFLNK, 0).apply(&mut st);
        assert_eq!((st.mode, st.uid, st.gid), (mode::S_IFLNK | 0o777, 5, 6));
        let dir = Kstat {
            mode: mode::S_IFDIR | 0o755,
            ..host
        };
        let mut st = dir;
        m(1, 1, 0o644, mode::S_IFREG, 0).apply(&mut st);
        assert_eq!(st, dir, "a record of another type is ignored");
        let mut st = dir;
        m(1, 2, 0o2775, 0, 0).apply(&mut st);
        assert_eq!((st.mode, st.uid, st.gid), (mode::S_IFDIR | 0o2775, 1, 2));
    }

    #[test]
    fn host_mode_keeps_the_host_user_in() {
        assert_eq!(host_mode(0o640, false), 0o640);
        assert_eq!(host_mode(0o000, false), 0o600);
        assert_eq!(host_mode(0o444, false), 0o644);
        assert_eq!(host_mode(0o4755, false), 0o755);
        assert_eq!(host_mode(0o2775, true), 0o755);
        assert_eq!(host_mode(0o1777, true), 0o755);
        assert_eq!(host_mode(0o666, false), 0o644);
        assert_eq!(host_mode(0o500, true), 0o700);
    }

    #[test]
    fn init_owner_follows_setgid_directories() {
        let plain = Kstat {
            mode: mode::S_IFDIR | 0o755,
            uid: 0,
            gid: 0,
            ..Default::default()
        };
        let sgid = Kstat {
            mode: mode::S_IFDIR | 0o2777,
            uid: 0,
            gid: 50,
            ..Default::default()
        };
        let user = Owner { uid: 7, gid: 8 };
        let root = Owner { uid: 0, gid: 0 };
        // A plain directory: the creator's ids.
        assert_eq!(
            init_owner(&plain, user, mode::S_IFREG | 0o644),
            m(7, 8, 0o644, mode::S_IFREG, 0)
        );
        // A setgid one: its group; a new directory inherits S_ISGID.
        assert_eq!(
            init_owner(&sgid, user, mode::S_IFREG | 0o644),
            m(7, 50, 0o644, mode::S_IFREG, 0)
        );
        assert_eq!(
            init_owner(&sgid, user, mode::S_IFDIR | 0o755),
            m(7, 50, 0o2755, mode::S_IFDIR, 0)
        );
        // A non-member asking for setgid + group-exec loses S_ISGID (creat08, open10)...
        assert_eq!(init_owner(&sgid, user, mode::S_IFREG | 0o2755).perm, 0o755);
        // ... a member or root keeps it, and setgid without group-exec is kept.
        let member = Owner { uid: 7, gid: 50 };
        assert_eq!(
            init_owner(&sgid, member, mode::S_IFREG | 0o2755).perm,
            0o2755
        );
        assert_eq!(init_owner(&sgid, root, mode::S_IFREG | 0o2755).perm, 0o2755);
        assert_eq!(init_owner(&sgid, user, mode::S_IFREG | 0o2745).perm, 0o2745);
        // Outside a setgid directory nothing is stripped.
        assert_eq!(
            init_owner(&plain, user, mode::S_IFREG | 0o2755).perm,
            0o2755
        );
    }

    #[test]
    fn privileges_removed_on_write() {
        let reg = mode::S_IFREG;
        assert!(has_privs(reg | 0o4755));
        assert!(has_privs(reg | 0o2755));
        assert!(
            !has_privs(reg | 0o2745),
            "setgid without group exec is mandatory locking"
        );
        assert!(!has_privs(reg | 0o755));
        assert!(!has_privs(mode::S_IFDIR | 0o2755));
        assert_eq!(strip_privs(0o6755), 0o755);
        assert_eq!(strip_privs(0o4755), 0o755);
        assert_eq!(strip_privs(0o2745), 0o2745);
        assert_eq!(strip_privs(0o1777), 0o1777);
    }

    #[test]
    fn sidecar_log_last_line_wins() {
        let a = m(5, 6, 0o777, mode::S_IFLNK, 0);
        let b = m(0, 42, 0o640, mode::S_IFREG, 0);
        let mut text = log_format::header(77);
        text += &log_format::record(10, Some(&a));
        text += &log_format::record(11, Some(&b));
        text += &log_format::record(10, None);
        text += &log_format::record(12, Some(&a));
        text += "garbage line\n";
        text += "13 0:0:0644:fi"; // an unfinished append
        let p = log_format::parse(text.as_bytes());
        assert_eq!(p.header_ino, Some(77));
        assert_eq!(p.records, 5);
        assert_eq!(p.map.len(), 2);
        assert_eq!(p.map.get(&11), Some(&b));
        assert_eq!(p.map.get(&12), Some(&a));
        assert_eq!(p.map.get(&10), None);
        assert_eq!(p.map.get(&13), None);
        // Not a sidecar: nothing.
        assert_eq!(
            log_format::parse(b"hello 1 2\n10 0:0:0644:file\n")
                .map
                .len(),
            0
        );
    }

    #[test]
    fn sidecar_log_keeps_attributes() {
        let b = m(0, 42, 0o640, mode::S_IFREG, 0);
        let mut text = log_format::header(77);
        text += &log_format::record(10, Some(&b));
        text += &log_format::xrecord(10, Some(b"user.a"), Some(b"1 2\n"));
        text += &log_format::xrecord(10, Some(b"user.empty"), Some(b""));
        text += &log_format::xrecord(11, Some(b"trusted.t"), Some(&[0, 255]));
        text += &log_format::xrecord(12, Some(b"user.z"), Some(b"z"));
        text += &log_format::xrecord(12, None, None);
        text += &log_format::xrecord(11, Some(b"trusted.t"), None);
        text += &log_format::xrecord(13, Some(b"user.q"), Some(b"q"));
        text += "13 x 7573 zz\n13 x 75 7\n13 x\n"; // malformed: skipped
        // Removing the ownership entry keeps the attributes.
        text += &log_format::record(10, None);
        let p = log_format::parse(text.as_bytes());
        assert!(p.map.is_empty());
        let want: Xattrs = [
            (b"user.a".to_vec(), b"1 2\n".to_vec()),
            (b"user.empty".to_vec(), Vec::new()),
        ]
        .into();
        assert_eq!(p.xattrs.get(&10), Some(&want));
        assert_eq!(
            p.xattrs.get(&11),
            None,
            "the last one removed: no empty set"
        );
        assert_eq!(p.xattrs.get(&12), None, "all removed");
        assert_eq!(p.xattrs.get(&13).map(|s| s.len()), Some(1));
        assert!(!log_format::xrecord(1, Some(b"user.a"), Some(b"v v")).contains("v v"));
    }

    #[test]
    fn sidecar_attributes_as_simple_xattr_set() {
        use um_uapi::abi::xattr::{XATTR_CREATE, XATTR_REPLACE};
        let dir = std::env::temp_dir().join(format!("um-sidecar-x-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f"), b"x").unwrap();
        let open = || {
            let root = host::open_root(&dir).unwrap();
            let dev = host::fstatat(root.as_fd(), b"").unwrap().dev;
            MetaStore::new(root, dev, false, "test")
        };
        let st = open();
        let hs = host::fstatat(st.root.as_fd(), b"f").unwrap();
        assert_eq!(st.sidecar_getxattr(&hs, b"user.a"), Err(Errno::ENODATA));
        assert_eq!(
            st.sidecar_setxattr(&hs, b"user.a", Some(b"1"), XATTR_REPLACE),
            Err(Errno::ENODATA)
        );
        st.sidecar_setxattr(&hs, b"user.a", Some(b"1"), XATTR_CREATE)
            .unwrap();
        assert_eq!(
            st.sidecar_setxattr(&hs, b"user.a", Some(b"2"), XATTR_CREATE),
            Err(Errno::EEXIST)
        );
        st.sidecar_setxattr(&hs, b"user.a", Some(b"2"), XATTR_REPLACE)
            .unwrap();
        st.sidecar_setxattr(&hs, b"trusted.t", Some(b""), 0)
            .unwrap();
        let big = vec![7u8; 65536];
        for i in 0..3 {
            st.sidecar_setxattr(&hs, format!("user.big{i}").as_bytes(), Some(&big), 0)
                .unwrap();
        }
        assert_eq!(
            st.sidecar_setxattr(&hs, b"user.big3", Some(&big), 0),
            Err(Errno::ENOSPC),
            "past SIDECAR_XATTR_MAX"
        );
        // Replacing one with a value of the same size fits.
        st.sidecar_setxattr(&hs, b"user.big2", Some(&big), 0)
            .unwrap();
        st.sidecar_setxattr(&hs, b"user.big2", None, 0).unwrap();
        assert_eq!(
            st.sidecar_setxattr(&hs, b"user.big2", None, 0),
            Err(Errno::ENODATA)
        );
        drop(st);
        // Another boot reads them back from the file.
        let st = open();
        let names = st.sidecar_listxattr(&hs);
        assert_eq!(
            names,
            [&b"trusted.t"[..], b"user.a", b"user.big0", b"user.big1"].map(<[u8]>::to_vec)
        );
        assert_eq!(st.sidecar_getxattr(&hs, b"user.a").unwrap(), b"2");
        assert_eq!(st.sidecar_getxattr(&hs, b"user.big1").unwrap(), big);
        assert_eq!(st.sidecar_getxattr(&hs, b"trusted.t").unwrap(), b"");
        // Another host file system's inode: not the sidecar's.
        let other = HostStat {
            dev: hs.dev ^ 1,
            ..hs
        };
        assert_eq!(
            st.sidecar_setxattr(&other, b"user.a", Some(b"1"), 0),
            Err(Errno::EOPNOTSUPP)
        );
        assert!(st.sidecar_listxattr(&other).is_empty());
        // The last link goes: so do its attributes, and the file when nothing is left.
        st.forget(&hs);
        assert!(st.sidecar_listxattr(&hs).is_empty());
        drop(st);
        assert!(!dir.join(".um-meta").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn sidecar_file_survives_reload_and_detects_a_copy() {
        let dir = std::env::temp_dir().join(format!("um-sidecar-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let root = host::open_root(&dir).unwrap();
        let a = m(5, 6, 0o777, mode::S_IFLNK, 0);
        let b = m(0, 42, 0o640, mode::S_IFREG, 0);
        {
            let mut sc = Sidecar::load(root.as_fd(), false);
            assert!(sc.is_empty());
            sc.update(root.as_fd(), 100, Some(a));
            sc.update(root.as_fd(), 101, Some(b));
            sc.update(root.as_fd(), 100, None);
            sc.update(root.as_fd(), 102, Some(a));
        }
        assert!(dir.join(".um-meta").is_file());
        assert!(!dir.join(".um-meta.new").exists());
        let sc = Sidecar::load(root.as_fd(), false);
        assert_eq!(
            (sc.len(), sc.get(101), sc.get(102), sc.get(100)),
            (2, Some(b), Some(a), None)
        );
        // Removing every entry removes the file.
        let mut sc = sc;
        sc.update(root.as_fd(), 101, None);
        sc.update(root.as_fd(), 102, None);
        drop(sc);
        assert!(Sidecar::load(root.as_fd(), false).is_empty());
        assert!(!dir.join(".um-meta").exists());
        // A copy of the file (another inode) is ignored, and removed on a rw mount.
        {
            let mut sc = Sidecar::load(root.as_fd(), false);
            sc.update(root.as_fd(), 7, Some(b));
        }
        let text = std::fs::read(dir.join(".um-meta")).unwrap();
        // (Written beside the original, so it cannot reuse the original's inode number.)
        std::fs::write(dir.join("copy"), &text).unwrap();
        std::fs::rename(dir.join("copy"), dir.join(".um-meta")).unwrap();
        assert!(Sidecar::load(root.as_fd(), true).is_empty());
        assert!(dir.join(".um-meta").exists(), "read-only: left alone");
        assert!(Sidecar::load(root.as_fd(), false).is_empty());
        assert!(!dir.join(".um-meta").exists());
        // A file that is not a sidecar is never touched.
        std::fs::write(dir.join(".um-meta"), b"someone else's\n").unwrap();
        let mut sc = Sidecar::load(root.as_fd(), false);
        sc.update(root.as_fd(), 7, Some(b));
        assert_eq!(sc.get(7), Some(b));
        drop(sc);
        assert_eq!(
            std::fs::read(dir.join(".um-meta")).unwrap(),
            b"someone else's\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn hostfs_keeps_guest_metadata_across_mounts() {
        use crate::hostfs::HostInode;
        use std::os::unix::fs::MetadataExt;
        use std::sync::Arc;
        use um_kernel::vfs::{Inode, SetAttr};
        use um_mm::HeapMemory;
        use um_mm::{FrameAllocator, Granule, PageCache};

        let dir = std::env::temp_dir().join(format!("um-hostfs-meta-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let host_uid = std::fs::metadata(&dir).unwrap().uid();
        let phys = Arc::new(HeapMemory::new(4 << 20));
        let cache = Arc::new(PageCache::new(Arc::new(FrameAllocator::new(
            phys,
            Granule::K4,
        ))));
        let mount = || HostInode::new_root(&dir, false, cache.clone()).unwrap();
        let ids = |i: &Arc<dyn Inode>| {
            let st = i.stat().unwrap();
            (st.uid, st.gid, st.mode)
        };
        let root = mount();
        let f = root.create(b"f", 0o644, Owner { uid: 7, gid: 8 }).unwrap();
        assert_eq!(ids(&f), (7, 8, mode::S_IFREG | 0o644));
        f.setattr(&SetAttr {
            uid: Some(0),
            gid: Some(42),
            mode: Some(0o4640),
            ..Default::default()
        })
        .unwrap();
        root.symlink(b"l", b"f", Owner { uid: 5, gid: 6 }).unwrap();
        let rdev = vfs::encode_dev(1, 3);
        root.mknod(b"n", mode::S_IFCHR | 0o666, rdev, Owner::default())
            .unwrap();
        let d = root.mkdir(b"d", 0o755, Owner::default()).unwrap();
        d.setattr(&SetAttr {
            gid: Some(50),
            mode: Some(0o2775),
            ..Default::default()
        })
        .unwrap();
        let user = Owner { uid: 9, gid: 9 };
        d.create(b"x", 0o644, user).unwrap();
        d.mkdir(b"y", 0o755, user).unwrap();
        // The store's names are not the guest's.
        assert_eq!(root.lookup(SIDECAR).err(), Some(Errno::ENOENT));
        assert_eq!(
            root.create(SIDECAR, 0o644, Owner::default()).err(),
            Some(Errno::EPERM)
        );
        assert_eq!(root.unlink(SIDECAR).err(), Some(Errno::ENOENT));
        // The host owner never changes; the host mode keeps the host user in.
        let md = std::fs::metadata(dir.join("f")).unwrap();
        assert_eq!((md.uid(), md.mode() & 0o7777), (host_uid, 0o640));
        assert!(std::fs::metadata(dir.join("n")).unwrap().is_file());
        assert_eq!(
            std::fs::metadata(dir.join("d")).unwrap().mode() & 0o7777,
            0o755
        );
        drop((f, d, root));
        // A new mount (a reboot) sees the same.
        let root = mount();
        let get = |p: &[&[u8]]| {
            let mut i: Arc<dyn Inode> = root.clone();
            for c in p {
                i = i.lookup(c).unwrap();
            }
            i
        };
        assert_eq!(ids(&get(&[b"f"])), (0, 42, mode::S_IFREG | 0o4640));
        assert_eq!(ids(&get(&[b"l"])), (5, 6, mode::S_IFLNK | 0o777));
        assert_eq!(ids(&get(&[b"n"])), (0, 0, mode::S_IFCHR | 0o666));
        assert_eq!(get(&[b"n"]).stat().unwrap().rdev, rdev);
        assert_eq!(ids(&get(&[b"d"])), (0, 50, mode::S_IFDIR | 0o2775));
        assert_eq!(ids(&get(&[b"d", b"x"])), (9, 50, mode::S_IFREG | 0o644));
        assert_eq!(ids(&get(&[b"d", b"y"])), (9, 50, mode::S_IFDIR | 0o2755));
        // Rename and link carry it; the symlink's sidecar entry goes with the symlink.
        root.rename(b"f", &(root.clone() as Arc<dyn Inode>), b"g", 0)
            .unwrap();
        root.link(b"h", &get(&[b"g"])).unwrap();
        assert_eq!(ids(&get(&[b"h"])), (0, 42, mode::S_IFREG | 0o4640));
        if host_uid != 5 {
            assert!(dir.join(".um-meta").exists());
        }
        root.unlink(b"l").unwrap();
        assert!(!dir.join(".um-meta").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn reserved_names() {
        assert!(reserved(b".um-meta"));
        assert!(reserved(b".um-meta.new"));
        assert!(!reserved(b".um-met"));
        assert!(!reserved(b"um-meta"));
    }
}
