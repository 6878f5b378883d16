//! The files loadable modules show: `/proc/modules` (Linux `kernel/module/procfs.c`), the
//! `/proc/<name>` entries modules create (`um_proc_create`), and `/sys/module/<name>/`
//! (`kernel/module/sysfs.c`, `kernel/params.c`): `refcnt`, `initstate`, `coresize`,
//! `initsize`, `taint`, `version`, `holders/` and `parameters/<p>` (mode = the parameter's
//! perm; readable, and writable when its perm has write bits).
//!
//! Module nodes get inode numbers derived from the module's registry id (above the range the
//! instance's counter hands out), so a path keeps its number while the module stays loaded.
//! Neighbours: [`crate::module`] (the registry these render), [`super`] (the nodes),
//! `crate::sysfs` (mounts `/sys/module`).

use super::{DynDir, Node, ProcFs, ProcInode};
use crate::module::{self, Module, params};
use std::sync::Arc;
use um_kernel::kernel::Kernel;
use um_kernel::vfs::{DirEntry, mode};
use um_kernel::wait::IoCtx;
use um_uapi::{Errno, SysResult};

/// First inode number of module nodes: `(id << 12) | n` above it.
const MODULE_INO_BASE: u64 = 1 << 40;
/// Inode numbers of module-made `/proc` entries: plus the handle.
const PROC_ENTRY_INO_BASE: u64 = 1 << 39;

/// Taint letters in Linux's order (`taint_flags`: P, F, ..., O, E).
fn taint_letters(t: &str) -> String {
    "PFOE".chars().filter(|c| t.contains(*c)).collect()
}

/// One `/proc/modules` line (`m_show`).
pub fn modules_line(m: &Module) -> String {
    let mut s = format!("{} {} {} ", m.name, m.core_size, m.refcount());
    let users = module::users(m);
    for u in &users {
        s.push_str(u);
        s.push(',');
    }
    if m.permanent() {
        s.push_str("[permanent],");
    }
    if users.is_empty() && !m.permanent() {
        s.push('-');
    }
    let state = match m.state() {
        module::State::Going => "Unloading",
        module::State::Coming => "Loading",
        module::State::Live => "Live",
    };
    // The address as Linux shows it to readers without CAP_SYSLOG rights (kptr_restrict).
    s.push_str(&format!(" {state} 0x{:016x}", 0));
    let taints = taint_letters(&m.taints);
    let mark = match m.state() {
        module::State::Going => "-",
        module::State::Coming => "+",
        module::State::Live => "",
    };
    if !taints.is_empty() || !mark.is_empty() {
        s.push_str(&format!(" ({taints}{mark})"));
    }
    s.push('\n');
    s
}

/// `/proc/modules`.
pub(super) fn proc_modules(fs: &Arc<ProcFs>) -> Arc<ProcInode> {
    ProcInode::file(fs, |_, _| {
        Ok(module::modules()
            .iter()
            .map(|m| modules_line(m))
            .collect::<String>()
            .into_bytes())
    })
}

/// The inode of a module-made `/proc` entry.
fn proc_entry_inode(fs: &Arc<ProcFs>, e: Arc<module::api::ProcEntry>, ino: u64) -> Arc<ProcInode> {
    ProcInode::new(
        fs,
        ino,
        mode::S_IFREG | 0o444,
        Node::File {
            render: Box::new(move |_, _| module::api::proc_render(&e)),
            put: None,
        },
    )
}

/// Directory entries of the module-made `/proc` entries (for the root's readdir).
pub(super) fn proc_dirents() -> Vec<DirEntry> {
    module::api::proc_entries()
        .iter()
        .enumerate()
        .map(|(i, e)| DirEntry {
            ino: PROC_ENTRY_INO_BASE + i as u64,
            kind: 8,
            name: e.name.clone(),
        })
        .collect()
}

/// The module-made `/proc` entry `name`, if any.
pub(super) fn proc_lookup(fs: &Arc<ProcFs>, name: &[u8]) -> Option<Arc<ProcInode>> {
    let all = module::api::proc_entries();
    let i = all.iter().position(|e| e.name == name)?;
    Some(proc_entry_inode(
        fs,
        all[i].clone(),
        PROC_ENTRY_INO_BASE + i as u64,
    ))
}

/// Hands out the inode numbers of one module's nodes.
struct Inos(u64);

impl Inos {
    fn next(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

/// A read-only file of module `id`'s state.
fn mod_file(
    fs: &Arc<ProcFs>,
    inos: &mut Inos,
    id: u64,
    f: impl Fn(&Module) -> String + Send + Sync + 'static,
) -> Arc<ProcInode> {
    ProcInode::new(
        fs,
        inos.next(),
        mode::S_IFREG | 0o444,
        Node::File {
            render: Box::new(move |_, _| {
                let m = module::by_id(id).ok_or(Errno::ENODEV)?;
                Ok(f(&m).into_bytes())
            }),
            put: None,
        },
    )
}

fn dir_with_ino(
    fs: &Arc<ProcFs>,
    ino: u64,
    entries: Vec<(String, Arc<ProcInode>)>,
) -> Arc<ProcInode> {
    ProcInode::new(
        fs,
        ino,
        mode::S_IFDIR | 0o755,
        Node::Dir {
            entries: entries
                .into_iter()
                .map(|(n, i)| (n.into_bytes(), i))
                .collect(),
            pids: false,
        },
    )
}

/// The text of parameter `p` of module `m` (`param_attr_show`).
fn param_show(m: &Module, p: &module::Param) -> SysResult<Vec<u8>> {
    let mut raw = vec![0u8; p.ty.size()];
    if !m.mem().read(p.addr, &mut raw) {
        return Err(Errno::EIO);
    }
    if p.ty == params::ParamType::Charp {
        let ptr = u64::from_le_bytes(raw.try_into().map_err(|_| Errno::EIO)?);
        let mut s = if ptr == 0 {
            b"(null)".to_vec()
        } else {
            um_modshim::read_kernel_cstr(ptr, 4095).ok_or(Errno::EIO)?
        };
        s.push(b'\n');
        return Ok(s);
    }
    Ok(params::format(p.ty, &raw).into_bytes())
}

/// A write to parameter `p` of module `m` (`param_attr_store`).
fn param_store(m: &Module, p: &module::Param, data: &[u8]) -> SysResult<usize> {
    let text = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
    let bytes = if p.ty == params::ParamType::Charp {
        let s = text.strip_suffix('\n').unwrap_or(text);
        let ptr = um_modshim::alloc_cstring(m.id, s.as_bytes()).ok_or(Errno::ENOMEM)?;
        ptr.to_le_bytes().to_vec()
    } else {
        params::parse(p.ty, text)?
    };
    if !m.mem().write(p.addr, &bytes) {
        return Err(Errno::EIO);
    }
    Ok(data.len())
}

/// `/sys/module/<name>/` of module `m`.
fn module_dir(fs: &Arc<ProcFs>, m: &Module) -> Arc<ProcInode> {
    let base = MODULE_INO_BASE + (m.id << 12);
    let mut inos = Inos(base);
    let id = m.id;
    let mut entries: Vec<(String, Arc<ProcInode>)> = vec![
        (
            "refcnt".into(),
            mod_file(fs, &mut inos, id, |m| format!("{}\n", m.refcount())),
        ),
        (
            "initstate".into(),
            mod_file(fs, &mut inos, id, |m| format!("{}\n", m.state().name())),
        ),
        (
            "coresize".into(),
            mod_file(fs, &mut inos, id, |m| format!("{}\n", m.core_size)),
        ),
        (
            "initsize".into(),
            mod_file(fs, &mut inos, id, |m| format!("{}\n", m.init_size)),
        ),
        (
            "taint".into(),
            mod_file(fs, &mut inos, id, |m| {
                format!("{}\n", taint_letters(&m.taints))
            }),
        ),
    ];
    if m.info("version").is_some() {
        entries.push((
            "version".into(),
            mod_file(fs, &mut inos, id, |m| {
                format!("{}\n", m.info("version").unwrap_or(""))
            }),
        ));
    }
    let holders: Vec<(String, Arc<ProcInode>)> = module::users(m)
        .into_iter()
        .map(|u| {
            let link = ProcInode::new(
                fs,
                inos.next(),
                mode::S_IFLNK | 0o777,
                Node::Link(format!("../../{u}").into_bytes()),
            );
            (u, link)
        })
        .collect();
    let holders_ino = inos.next();
    entries.push(("holders".into(), dir_with_ino(fs, holders_ino, holders)));
    let visible: Vec<&module::Param> = m.params.iter().filter(|p| p.perm & 0o777 != 0).collect();
    if !visible.is_empty() {
        let mut files = Vec::new();
        for p in visible {
            let (pr, pw) = (p.clone(), p.clone());
            let put: Option<super::Put> = (p.perm & 0o222 != 0).then(|| {
                Box::new(move |_: &Arc<Kernel>, _: &IoCtx<'_>, data: &[u8]| {
                    let m = module::by_id(id).ok_or(Errno::ENODEV)?;
                    param_store(&m, &pw, data)
                }) as super::Put
            });
            let node = ProcInode::new(
                fs,
                inos.next(),
                mode::S_IFREG | (p.perm & 0o777),
                Node::File {
                    render: Box::new(move |_, _| {
                        let m = module::by_id(id).ok_or(Errno::ENODEV)?;
                        param_show(&m, &pr)
                    }),
                    put,
                },
            );
            files.push((p.name.clone(), node));
        }
        let pino = inos.next();
        entries.push(("parameters".into(), dir_with_ino(fs, pino, files)));
    }
    dir_with_ino(fs, base, entries)
}

/// `/sys/module`: one directory per loaded module.
struct SysModule;

impl DynDir for SysModule {
    fn entries(&self, fs: &Arc<ProcFs>) -> Vec<(Vec<u8>, Arc<ProcInode>)> {
        module::modules()
            .iter()
            .map(|m| (m.name.clone().into_bytes(), module_dir(fs, m)))
            .collect()
    }
}

/// The `/sys/module` directory.
pub fn sys_module_dir(fs: &Arc<ProcFs>) -> Arc<ProcInode> {
    ProcInode::new(
        fs,
        fs.alloc_ino(),
        mode::S_IFDIR | 0o755,
        Node::Dyn(Box::new(SysModule)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_modules_lines() {
        use crate::module::{State, test_module};
        // Init without exit: "[permanent]" instead of "-".
        let m = test_module("umt", State::Live, 0, "OP");
        assert_eq!(
            modules_line(&m),
            "umt 12288 0 [permanent], Live 0x0000000000000000 (PO)\n"
        );
        let m = test_module("umt", State::Going, 2, "");
        assert_eq!(
            modules_line(&m),
            "umt 12288 2 [permanent], Unloading 0x0000000000000000 (-)\n"
        );
    }

    #[test]
    fn taints_in_linux_order() {
        assert_eq!(taint_letters("OFP"), "PFO");
        assert_eq!(taint_letters(""), "");
    }
}
