//! devtmpfs and the memory devices (Linux `drivers/base/devtmpfs.c`, `drivers/char/mem.c`,
//! `drivers/char/random.c`).
//!
//! [`devtmpfs`] is one tmpfs instance shared by every `mount -t devtmpfs` (as in Linux),
//! populated at first use with the standard nodes: `null` 1:3, `zero` 1:5, `full` 1:7,
//! `random` 1:8, `urandom` 1:9, `tty` 5:0, `console` 5:1, `ptmx` 5:2, the `fd`, `stdin`,
//! `stdout`, `stderr` symlinks into `/proc/self/fd`, and the `shm` and `pts` directories.
//! Opening a node asks the character-device registry in the kernel crate
//! ([`um_kernel::vfs::open_chrdev`]); [`register_mem_devices`] registers the memory devices
//! implemented here. The console, tty and ptmx drivers are registered by the TTY code.
//! Neighbours: `tmpfs` (the storage), `mount` (mounts it at `/dev` at boot).

use crate::tmpfs::TmpFs;
use std::sync::{Arc, OnceLock};
use um_kernel::vfs::{self, FileOps, Inode, Kstat, Owner, mode};
use um_kernel::wait::IoCtx;
use um_uapi::{Errno, SysResult};

/// The memory devices of major 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mem {
    Null,
    Zero,
    Full,
    Random,
    Urandom,
}

impl Mem {
    fn minor(self) -> u32 {
        match self {
            Mem::Null => 3,
            Mem::Zero => 5,
            Mem::Full => 7,
            Mem::Random => 8,
            Mem::Urandom => 9,
        }
    }
}

/// An open memory device.
struct MemFile {
    dev: Mem,
}

impl FileOps for MemFile {
    /// drivers/char/mem.c: null, zero and full have no poll method (epoll refuses them);
    /// random and urandom do (drivers/char/random.c `random_poll`).
    fn can_poll(&self) -> bool {
        matches!(self.dev, Mem::Random | Mem::Urandom)
    }

    /// drivers/char/mem.c `mmap_zero`.
    fn maps_as_anonymous(&self) -> bool {
        self.dev == Mem::Zero
    }

    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        match self.dev {
            Mem::Null => Ok(0),
            Mem::Zero | Mem::Full => {
                buf.fill(0);
                Ok(buf.len())
            }
            Mem::Random | Mem::Urandom => {
                um_os_linux::host::getrandom(buf).map_err(|_| Errno::EIO)?;
                Ok(buf.len())
            }
        }
    }

    fn write(&self, _io: &IoCtx<'_>, data: &[u8], _off: u64) -> SysResult<usize> {
        match self.dev {
            Mem::Full => Err(Errno::ENOSPC),
            // Writes to random mix into the pool in Linux; here they are accepted and dropped.
            _ => Ok(data.len()),
        }
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(Kstat {
            mode: mode::S_IFCHR | 0o666,
            nlink: 1,
            rdev: vfs::encode_dev(1, self.dev.minor()),
            blksize: um_mm::page_size() as i64,
            ..Default::default()
        })
    }

    fn size(&self) -> SysResult<u64> {
        Ok(0)
    }

    fn poll(&self, events: u16, _pt: Option<&um_kernel::wait::PollTable<'_>>) -> u16 {
        events & (0x1 | 0x4 | 0x40 | 0x100)
    }
}

/// Registers null, zero, full, random and urandom with the character-device registry.
pub fn register_mem_devices() {
    for dev in [Mem::Null, Mem::Zero, Mem::Full, Mem::Random, Mem::Urandom] {
        vfs::register_chrdev(
            1,
            dev.minor(),
            Arc::new(move |_io: &IoCtx<'_>, _flags: u32| {
                Ok(Box::new(MemFile { dev }) as Box<dyn FileOps>)
            }),
        );
    }
}

/// The standard nodes: name, major, minor, permission bits.
const NODES: [(&[u8], u32, u32, u32); 8] = [
    (b"null", 1, 3, 0o666),
    (b"zero", 1, 5, 0o666),
    (b"full", 1, 7, 0o666),
    (b"random", 1, 8, 0o666),
    (b"urandom", 1, 9, 0o666),
    (b"tty", 5, 0, 0o666),
    (b"console", 5, 1, 0o600),
    (b"ptmx", 5, 2, 0o666),
];

/// The symlinks `/dev` has from userspace conventions (udev, mdev, systemd).
const LINKS: [(&[u8], &[u8]); 4] = [
    (b"fd", b"/proc/self/fd"),
    (b"stdin", b"/proc/self/fd/0"),
    (b"stdout", b"/proc/self/fd/1"),
    (b"stderr", b"/proc/self/fd/2"),
];

fn populate(root: &dyn Inode) -> SysResult<()> {
    let owner = Owner::default();
    for (name, major, minor, perm) in NODES {
        root.mknod(
            name,
            mode::S_IFCHR | perm,
            vfs::encode_dev(major, minor),
            owner,
        )?;
    }
    for (name, target) in LINKS {
        root.symlink(name, target, owner)?;
    }
    root.mkdir(b"shm", 0o1777, owner)?;
    root.mkdir(b"pts", 0o755, owner)?;
    Ok(())
}

/// The devtmpfs root (one instance, made and populated on first use).
pub fn devtmpfs() -> Arc<dyn Inode> {
    static ROOT: OnceLock<Arc<dyn Inode>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root: Arc<dyn Inode> = TmpFs::new_root_inode(0o755, 0, 0);
        if let Err(e) = populate(&*root) {
            log::warn!("devtmpfs: cannot create the standard nodes: {e}");
        }
        root
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_exist_with_numbers() {
        let root = devtmpfs();
        let null = root.lookup(b"null").unwrap().stat().unwrap();
        assert_eq!(null.mode, mode::S_IFCHR | 0o666);
        assert_eq!(vfs::decode_dev(null.rdev), (1, 3));
        let ptmx = root.lookup(b"ptmx").unwrap().stat().unwrap();
        assert_eq!(vfs::decode_dev(ptmx.rdev), (5, 2));
        assert_eq!(
            root.lookup(b"fd").unwrap().readlink().unwrap(),
            b"/proc/self/fd"
        );
        assert_eq!(
            root.lookup(b"shm").unwrap().stat().unwrap().mode,
            mode::S_IFDIR | 0o1777
        );
    }

    #[test]
    fn dev_numbers_round_trip() {
        for (ma, mi) in [(1, 3), (5, 2), (136, 0), (4095, 1 << 19)] {
            assert_eq!(vfs::decode_dev(vfs::encode_dev(ma, mi)), (ma, mi));
        }
    }
}
