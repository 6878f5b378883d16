//! Directory notification, `fcntl(F_NOTIFY)` (Linux `fs/notify/dnotify/dnotify.c`).
//!
//! A mark asks for a signal when something happens in a directory: `DN_ACCESS`, `DN_MODIFY`,
//! `DN_CREATE`, `DN_DELETE`, `DN_RENAME`, `DN_ATTRIB`, once, or for as long as the mark lives
//! with `DN_MULTISHOT`. Marks are kept by directory identity (as inotify's watches, whose event
//! hooks feed [`event`]: every event inotify sends to a directory's watches, whether about the
//! directory itself or a named child, is offered here), and by (open file description,
//! process) as Linux's (`filp`, `files_struct`) pair: a close of any descriptor of the
//! description by that process removes the mark (`dnotify_flush`, through
//! `locks::on_close`), as does `F_NOTIFY` with no event bits. The signal goes to the file's
//! owner, which `F_NOTIFY` sets to the calling process, with `si_fd` the descriptor given to
//! `F_NOTIFY` and `POLL_MSG` (fasync's [`crate::fasync::send_sigio`]).

use crate::inotify::{
    IN_ACCESS, IN_ATTRIB, IN_CREATE, IN_DELETE, IN_MODIFY, IN_MOVED_FROM, IN_MOVED_TO,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_kernel::task::lock;
use um_kernel::vfs::{OpenFile, mode};
use um_uapi::{Errno, SysResult};

pub const DN_ACCESS: u32 = 0x0000_0001;
pub const DN_MODIFY: u32 = 0x0000_0002;
pub const DN_CREATE: u32 = 0x0000_0004;
pub const DN_DELETE: u32 = 0x0000_0008;
pub const DN_RENAME: u32 = 0x0000_0010;
pub const DN_ATTRIB: u32 = 0x0000_0020;
pub const DN_MULTISHOT: u32 = 0x8000_0000;

/// The event inotify's rename hook adds for a rename within one directory (Linux
/// `FS_DN_RENAME`/`FS_RENAME`); never in an inotify mask.
pub const FS_DN_RENAME: u32 = 0x1000_0000;

/// The inotify-style events a `DN_*` mask wants (`convert_arg`).
pub fn convert_arg(arg: u32) -> u32 {
    let mut m = 0;
    if arg & DN_DELETE != 0 {
        m |= IN_DELETE | IN_MOVED_FROM;
    }
    if arg & DN_MODIFY != 0 {
        m |= IN_MODIFY;
    }
    if arg & DN_ACCESS != 0 {
        m |= IN_ACCESS;
    }
    if arg & DN_ATTRIB != 0 {
        m |= IN_ATTRIB;
    }
    if arg & DN_RENAME != 0 {
        m |= FS_DN_RENAME;
    }
    if arg & DN_CREATE != 0 {
        m |= IN_CREATE | IN_MOVED_TO;
    }
    m
}

/// One `dnotify_struct`.
struct Mark {
    file: Weak<OpenFile>,
    /// The description's address.
    filp: usize,
    /// The process whose close ends it (Linux: its `files_struct`).
    pid: u32,
    /// `dn_fd`.
    fd: i32,
    /// `DN_*` bits, `DN_MULTISHOT` included.
    arg: u32,
}

type Key = (u64, u64);

fn registry() -> &'static Mutex<HashMap<Key, Vec<Mark>>> {
    static R: OnceLock<Mutex<HashMap<Key, Vec<Mark>>>> = OnceLock::new();
    R.get_or_init(Default::default)
}

/// How many marks exist: the hooks return at once while it is 0.
static MARKS: AtomicUsize = AtomicUsize::new(0);

/// Whether any mark exists.
pub fn active() -> bool {
    MARKS.load(Ordering::Relaxed) != 0
}

fn recount(reg: &HashMap<Key, Vec<Mark>>) {
    MARKS.store(reg.values().map(Vec::len).sum(), Ordering::Relaxed);
}

/// `fcntl(fd, F_NOTIFY, arg)` by process `pid` (`fcntl_dirnotify`).
pub fn fcntl_notify(
    f: &Arc<OpenFile>,
    fd: i32,
    arg: u32,
    pid: u32,
    ids: (u32, u32),
) -> SysResult<u64> {
    let filp = Arc::as_ptr(f) as usize;
    if arg & !DN_MULTISHOT == 0 {
        flush(f, pid);
        return Ok(0);
    }
    let d = f.dentry.as_ref().ok_or(Errno::ENOTDIR)?;
    // The open file's own metadata (fstat's), valid after an unlink too.
    let st = f.ops.stat()?;
    if st.mode & mode::S_IFMT != mode::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    let k = (d.inode.fs_id(), d.inode.id());
    // The caller becomes the owner (`__f_setown(filp, task_pid(current), PIDTYPE_TGID, 0)`).
    crate::fasync::set_owner(f, crate::fasync::OwnerKind::Pid, pid, ids.0, ids.1);
    let mut reg = lock(registry());
    let marks = reg.entry(k).or_default();
    marks.retain(|m| m.file.strong_count() > 0);
    if let Some(m) = marks.iter_mut().find(|m| m.filp == filp && m.pid == pid) {
        // attach_dn: more events for an existing mark.
        m.fd = fd;
        m.arg |= arg;
    } else {
        marks.push(Mark {
            file: Arc::downgrade(f),
            filp,
            pid,
            fd,
            arg,
        });
    }
    recount(&reg);
    Ok(0)
}

/// Removes the marks `f` holds for process `pid` (`dnotify_flush`, on close).
pub fn flush(f: &OpenFile, pid: u32) {
    if !active() {
        return;
    }
    let filp = f as *const OpenFile as usize;
    let mut reg = lock(registry());
    reg.retain(|_, v| {
        v.retain(|m| !(m.filp == filp && m.pid == pid) && m.file.strong_count() > 0);
        !v.is_empty()
    });
    recount(&reg);
}

/// The description `f` is gone: every mark of it goes.
pub fn released(f: &OpenFile) {
    if !active() {
        return;
    }
    let filp = f as *const OpenFile as usize;
    let mut reg = lock(registry());
    reg.retain(|_, v| {
        v.retain(|m| m.filp != filp);
        !v.is_empty()
    });
    recount(&reg);
}

/// An event with inotify mask `mask` (plus [`FS_DN_RENAME`]) for the directory `k`
/// (`dnotify_handle_event`): signals each mark that wants it; one-shot marks end.
pub fn event(k: Key, mask: u32) {
    if !active() {
        return;
    }
    let mut fire = Vec::new();
    {
        let mut reg = lock(registry());
        let Some(marks) = reg.get_mut(&k) else { return };
        marks.retain(|m| {
            if convert_arg(m.arg) & mask == 0 {
                return true;
            }
            fire.push((m.file.clone(), m.fd));
            m.arg & DN_MULTISHOT != 0
        });
        if marks.is_empty() {
            reg.remove(&k);
        }
        recount(&reg);
    }
    for (f, fd) in fire {
        if let Some(f) = f.upgrade() {
            let fown = crate::fasync::fown(&f);
            drop(f);
            crate::fasync::send_sigio(&fown, fd, crate::fasync::POLL_MSG);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_mapping() {
        assert_eq!(convert_arg(DN_ATTRIB | DN_MULTISHOT), IN_ATTRIB);
        assert_eq!(convert_arg(DN_CREATE), IN_CREATE | IN_MOVED_TO);
        assert_eq!(convert_arg(DN_DELETE), IN_DELETE | IN_MOVED_FROM);
        // A rename into or out of the directory is a create or delete, not DN_RENAME.
        assert_eq!(convert_arg(DN_RENAME) & (IN_MOVED_FROM | IN_MOVED_TO), 0);
        assert_eq!(convert_arg(DN_RENAME), FS_DN_RENAME);
        assert_eq!(convert_arg(DN_ACCESS | DN_MODIFY), IN_ACCESS | IN_MODIFY);
    }
}
