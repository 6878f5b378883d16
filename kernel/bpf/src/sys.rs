//! bpf(2) (Linux `kernel/bpf/syscall.c` `__sys_bpf`): the commands container runtimes use on
//! cgroup device programs. `BPF_PROG_LOAD` of `BPF_PROG_TYPE_CGROUP_DEVICE`,
//! `BPF_PROG_ATTACH` / `BPF_PROG_DETACH` / `BPF_PROG_QUERY` with `BPF_CGROUP_DEVICE` on a
//! cgroup2 directory (the rules of kernel/bpf/cgroup.c `__cgroup_bpf_attach`,
//! `__cgroup_bpf_detach`, `__cgroup_bpf_query`), `BPF_PROG_GET_NEXT_ID`,
//! `BPF_PROG_GET_FD_BY_ID`, `BPF_OBJ_GET_INFO_BY_FD` of a program. Every other command is
//! `EINVAL`, as for a kernel without it (maps, links, BTF): runtimes probe and fall back.

use crate::{Prog, State, state, verifier};
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::{FileOps, Kstat, OpenFile};
use um_uapi::abi::bpf::*;
use um_uapi::abi::capability::{CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN};
use um_uapi::abi::fcntl::{O_CLOEXEC, O_RDWR};
use um_uapi::abi::pod::Pod;
use um_uapi::{Errno, SysResult};

/// An open program (`bpf_prog_fops` on an anonymous inode named `bpf-prog`).
pub struct ProgFile {
    pub prog: Arc<Prog>,
    ino: u64,
}

impl FileOps for ProgFile {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(um_kernel::vfs::anon_kstat(0o600, self.ino, 0x0d, 0, 0))
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
    fn anon_name(&self) -> Option<&'static str> {
        Some("bpf-prog")
    }
}

/// A new descriptor (close-on-exec, read-write) for `prog` (`bpf_prog_new_fd`).
fn new_fd(c: &SyscallCtx<'_>, prog: Arc<Prog>) -> SysResult {
    static INO: AtomicU64 = AtomicU64::new(1 << 40);
    let file = OpenFile::new(
        Box::new(ProgFile {
            prog,
            ino: INO.fetch_add(1, Ordering::Relaxed),
        }),
        O_RDWR | O_CLOEXEC,
        None,
    );
    Ok(lock(&c.task.process.files()).install(file, true, 0)? as u64)
}

/// `bpf_prog_get_type`: the program behind `fd` (`EBADF` if not open, `EINVAL` if not a
/// program or of another type).
fn prog_of_fd(c: &SyscallCtx<'_>, fd: u32) -> SysResult<Arc<Prog>> {
    let f = lock(&c.task.process.files()).get(fd as u64)?;
    let p = f
        .ops
        .as_any()
        .and_then(|a| a.downcast_ref::<ProgFile>())
        .ok_or(Errno::EINVAL)?;
    if p.prog.prog_type != BPF_PROG_TYPE_CGROUP_DEVICE {
        return Err(Errno::EINVAL);
    }
    Ok(p.prog.clone())
}

/// `cgroup_get_from_fd`: the group of a cgroup2 directory descriptor (`EBADF` otherwise).
fn group_of_fd(c: &SyscallCtx<'_>, fd: u32) -> SysResult<u64> {
    let f = lock(&c.task.process.files()).get(fd as u64)?;
    let d = f.dentry.as_ref().ok_or(Errno::EBADF)?;
    um_cgroup::fs::dir_group(&d.inode).ok_or(Errno::EBADF)
}

/// `bpf_capable()`: CAP_BPF or CAP_SYS_ADMIN in the initial user namespace.
fn bpf_capable(c: &SyscallCtx<'_>) -> bool {
    let p = &c.task.process;
    p.capable(CAP_BPF) || p.capable(CAP_SYS_ADMIN)
}

/// `CHECK_ATTR`: the bytes past the command's last field must be zero (`EINVAL`).
fn check_attr(attr: &[u8], end: usize) -> SysResult<()> {
    if attr[end..].iter().any(|&b| b != 0) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// The attribute: `size` bytes at `addr`, the rest zero. Bytes beyond what this kernel knows
/// must be zero (`bpf_check_uarg_tail_zero`: `E2BIG`, also for more than a page).
fn read_attr(c: &SyscallCtx<'_>, addr: u64, size: u64) -> SysResult<Vec<u8>> {
    if size > 4096 {
        return Err(Errno::E2BIG);
    }
    let size = size as usize;
    if size > BPF_ATTR_SIZE {
        let tail = c.read_bytes(off(addr, BPF_ATTR_SIZE as u64)?, size - BPF_ATTR_SIZE)?;
        if tail.iter().any(|&b| b != 0) {
            return Err(Errno::E2BIG);
        }
    }
    let mut attr = c.read_bytes(addr, size.min(BPF_ATTR_SIZE))?;
    attr.resize(BPF_ATTR_SIZE, 0);
    Ok(attr)
}

/// `base + off` in guest memory; `EFAULT` past the end of the address space.
fn off(base: u64, off: u64) -> SysResult<u64> {
    base.checked_add(off).ok_or(Errno::EFAULT)
}

/// bpf(cmd, attr, size).
fn bpf(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let cmd = a[0] as u32;
    let attr = read_attr(c, a[1], a[2])?;
    match cmd {
        BPF_PROG_LOAD => prog_load(c, &attr, a[1]),
        BPF_PROG_ATTACH => prog_attach(c, &attr),
        BPF_PROG_DETACH => prog_detach(c, &attr),
        BPF_PROG_QUERY => prog_query(c, &attr, a[1]),
        BPF_PROG_GET_NEXT_ID => get_next_id(c, &attr, a[1]),
        BPF_PROG_GET_FD_BY_ID => get_fd_by_id(c, &attr),
        BPF_OBJ_GET_INFO_BY_FD => get_info(c, &attr, a[1]),
        _ => {
            log::debug!("bpf: command {cmd} not implemented (EINVAL)");
            Err(Errno::EINVAL)
        }
    }
}

/// Writes the verifier's message to the log buffer (`bpf_verifier_log_write`): truncated
/// to `log_size - 1` bytes and NUL-terminated; `ENOSPC` if it did not fit.
fn write_log(c: &SyscallCtx<'_>, at: &ProgLoadAttr, msg: &str) -> SysResult<()> {
    if at.log_level == 0 || at.log_buf == 0 {
        return Ok(());
    }
    let max = at.log_size as usize - 1;
    let mut b = msg.as_bytes().to_vec();
    let full = b.len() <= max;
    b.truncate(max);
    b.push(0);
    c.write_bytes(at.log_buf, &b)?;
    if full { Ok(()) } else { Err(Errno::ENOSPC) }
}

/// BPF_PROG_LOAD (`bpf_prog_load`).
fn prog_load(c: &mut SyscallCtx<'_>, attr: &[u8], uattr: u64) -> SysResult {
    let at = ProgLoadAttr::read_le(attr);
    // BPF_F_STRICT_ALIGNMENT .. BPF_F_SLEEPABLE: known, and meaningless to this verifier.
    if at.prog_flags & !0x1f != 0 {
        return Err(Errno::EINVAL);
    }
    if !bpf_capable(c) {
        // kernel.unprivileged_bpf_disabled, and the type is not one unprivileged users load.
        return Err(Errno::EPERM);
    }
    if at.insn_cnt == 0 {
        return Err(Errno::EINVAL);
    }
    if at.insn_cnt > BPF_COMPLEXITY_LIMIT_INSNS {
        return Err(Errno::E2BIG);
    }
    // A cgroup socket-buffer program loads only so that cilium/ebpf's BPF_PROG_ATTACH probe
    // (runc: load `r0 = 0; exit` as CGROUP_SKB) passes: it may not read its context and
    // cannot be attached.
    let ctx_size = match at.prog_type {
        BPF_PROG_TYPE_CGROUP_DEVICE => verifier::DEV_CTX_SIZE,
        BPF_PROG_TYPE_CGROUP_SKB => 0,
        t => {
            log::debug!("bpf: program type {t} not supported (EINVAL)");
            return Err(Errno::EINVAL);
        }
    };
    // The fields a device program has no use for (BTF, func/line info, relocations, offload).
    if at.prog_btf_fd != 0
        || at.func_info_cnt != 0
        || at.line_info_cnt != 0
        || at.attach_btf_id != 0
        || at.attach_prog_fd != 0
        || at.core_relo_cnt != 0
        || at.prog_ifindex != 0
    {
        return Err(Errno::EINVAL);
    }
    // bpf_verifier_log_attr_valid.
    if (at.log_buf != 0 || at.log_size != 0 || at.log_level != 0)
        && (at.log_level & !7 != 0
            || at.log_level == 0
            || at.log_buf == 0
            || at.log_size < 128
            || at.log_size > u32::MAX >> 2)
    {
        return Err(Errno::EINVAL);
    }
    let license = c.read_cstr(at.license, 128).map_err(|e| match e {
        Errno::ENAMETOOLONG => Errno::EINVAL,
        e => e,
    })?;
    // bpf_obj_name_cpy: alphanumerics, '_' and '.', NUL-terminated within the 16 bytes.
    let nul = at
        .prog_name
        .iter()
        .position(|&b| b == 0)
        .ok_or(Errno::EINVAL)?;
    if !at.prog_name[..nul]
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    {
        return Err(Errno::EINVAL);
    }
    let bytes = c.read_bytes(at.insns, at.insn_cnt as usize * BpfInsn::SIZE)?;
    let insns: Vec<BpfInsn> = bytes
        .chunks_exact(BpfInsn::SIZE)
        .map(BpfInsn::read_le)
        .collect();
    log::debug!("bpf: PROG_LOAD {} insns: {:?}", insns.len(), insns);
    if let Err(msg) = verifier::verify(&insns, ctx_size) {
        log::info!("bpf: verifier refused a program: {msg}");
        write_log(c, &at, &format!("{msg}\n"))?;
        return Err(Errno::EINVAL);
    }
    let n = insns.len();
    let msg = format!(
        "processed {n} insns (limit {BPF_COMPLEXITY_LIMIT_INSNS}) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0\n"
    );
    write_log(c, &at, &msg)?;
    if at.log_level != 0 {
        // log_true_size (Linux 6.4): the log's full length, NUL included.
        c.write_bytes(off(uattr, 140)?, &(msg.len() as u32 + 1).to_le_bytes())?;
    }
    let gpl = matches!(
        &license[..],
        b"GPL"
            | b"GPL v2"
            | b"GPL and additional rights"
            | b"Dual BSD/GPL"
            | b"Dual MIT/GPL"
            | b"Dual MPL/GPL"
    );
    let uid = lock(&c.task.process.creds).uid;
    let mut st = state();
    let id = st.alloc_id();
    let prog = Arc::new(Prog {
        id,
        prog_type: at.prog_type,
        tag: tag(&insns),
        insns,
        name: at.prog_name,
        gpl,
        load_time: 0,
        uid,
    });
    st.ids.insert(id, Arc::downgrade(&prog));
    drop(st);
    new_fd(c, prog)
}

/// The program's tag (`bpf_prog_calc_tag`): the first 8 bytes of the SHA-1 of its
/// instructions.
fn tag(insns: &[BpfInsn]) -> [u8; 8] {
    let mut data = Vec::with_capacity(insns.len() * 8);
    for i in insns {
        i.write_le(&mut data);
    }
    let h = sha1(&data);
    let mut t = [0u8; 8];
    t.copy_from_slice(&h[..8]);
    t
}

/// SHA-1 (FIPS 180-1), for the program tag only.
fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
    let mut m = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    m.push(0x80);
    while m.len() % 64 != 56 {
        m.push(0);
    }
    m.extend_from_slice(&bits.to_be_bytes());
    for block in m.chunks_exact(64) {
        let mut w = [0u32; 80];
        for i in 0..16 {
            w[i] = u32::from_be_bytes([
                block[4 * i],
                block[4 * i + 1],
                block[4 * i + 2],
                block[4 * i + 3],
            ]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut cc, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & cc) | (!b & d), 0x5A827999),
                20..=39 => (b ^ cc ^ d, 0x6ED9EBA1),
                40..=59 => ((b & cc) | (b & d) | (cc & d), 0x8F1BBCDC),
                _ => (b ^ cc ^ d, 0xCA62C1D6u32),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = cc;
            cc = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b, cc, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 20];
    for (i, x) in h.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

/// Attach and detach need CAP_NET_ADMIN (or CAP_SYS_ADMIN), as `bpf_prog_attach` did
/// before per-type checks; so does query.
fn may_attach(c: &SyscallCtx<'_>) -> SysResult<()> {
    let p = &c.task.process;
    if p.capable(CAP_NET_ADMIN) || p.capable(CAP_SYS_ADMIN) {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// BPF_PROG_ATTACH (`bpf_prog_attach`, `cgroup_bpf_prog_attach`, `__cgroup_bpf_attach`).
fn prog_attach(c: &mut SyscallCtx<'_>, attr: &[u8]) -> SysResult {
    check_attr(attr, 20)?;
    let at = AttachAttr::read_le(attr);
    may_attach(c)?;
    if at.attach_flags & !(BPF_F_ALLOW_OVERRIDE | BPF_F_ALLOW_MULTI | BPF_F_REPLACE) != 0 {
        return Err(Errno::EINVAL);
    }
    if at.attach_type != BPF_CGROUP_DEVICE {
        return Err(Errno::EINVAL);
    }
    let prog = prog_of_fd(c, at.attach_bpf_fd)?;
    let cg = group_of_fd(c, at.target_fd)?;
    let replace = if at.attach_flags & BPF_F_REPLACE != 0 {
        Some(prog_of_fd(c, at.replace_bpf_fd)?)
    } else {
        None
    };
    let h = um_cgroup::hierarchy();
    let mut st = state();
    attach(&mut st, &h, cg, prog, replace, at.attach_flags)?;
    Ok(0)
}

/// `__cgroup_bpf_attach` on the state: the flag rules, the hierarchy's consent, the
/// single/multi list rules, `BPF_F_REPLACE`.
pub fn attach(
    st: &mut State,
    h: &um_cgroup::tree::Hierarchy,
    cg: u64,
    prog: Arc<Prog>,
    replace: Option<Arc<Prog>>,
    flags: u32,
) -> SysResult<()> {
    let multi = flags & BPF_F_ALLOW_MULTI != 0;
    if (flags & BPF_F_ALLOW_OVERRIDE != 0 && multi) || (flags & BPF_F_REPLACE != 0 && !multi) {
        return Err(Errno::EINVAL);
    }
    if replace.is_some() != (flags & BPF_F_REPLACE != 0) {
        return Err(Errno::EINVAL);
    }
    st.cgroups.retain(|&g, a| h.alive(g) && !a.progs.is_empty());
    // hierarchy_allows_attach: the nearest ancestor with a program decides.
    let mut p = h.get(cg)?.parent;
    while let Some(g) = p {
        if let Some(a) = st.cgroups.get(&g) {
            if a.flags & BPF_F_ALLOW_MULTI != 0 {
                break;
            }
            if a.progs.len() == 1 {
                if a.flags & BPF_F_ALLOW_OVERRIDE == 0 {
                    return Err(Errno::EPERM);
                }
                break;
            }
        }
        p = h.get(g).ok().and_then(|g| g.parent);
    }
    let saved = flags & (BPF_F_ALLOW_OVERRIDE | BPF_F_ALLOW_MULTI);
    let a = st.cgroups.entry(cg).or_default();
    if !a.progs.is_empty() && a.flags != saved {
        return Err(Errno::EPERM);
    }
    if a.progs.len() >= BPF_CGROUP_MAX_PROGS {
        return Err(Errno::E2BIG);
    }
    // find_attach_entry.
    if !multi {
        if a.progs.is_empty() {
            a.progs.push(prog);
        } else {
            a.progs[0] = prog;
        }
    } else {
        let same = |x: &Arc<Prog>, y: &Arc<Prog>| Arc::ptr_eq(x, y);
        if a.progs.iter().any(|q| same(q, &prog))
            && !replace.as_ref().is_some_and(|r| same(r, &prog))
        {
            return Err(Errno::EINVAL);
        }
        if let Some(r) = replace {
            let slot = a
                .progs
                .iter_mut()
                .find(|q| same(q, &r))
                .ok_or(Errno::ENOENT)?;
            *slot = prog;
        } else {
            a.progs.push(prog);
        }
    }
    a.flags = saved;
    Ok(())
}

/// BPF_PROG_DETACH (`bpf_prog_detach`, `__cgroup_bpf_detach`).
fn prog_detach(c: &mut SyscallCtx<'_>, attr: &[u8]) -> SysResult {
    check_attr(attr, 12)?;
    let at = AttachAttr::read_le(attr);
    may_attach(c)?;
    if at.attach_type != BPF_CGROUP_DEVICE {
        return Err(Errno::EINVAL);
    }
    let cg = group_of_fd(c, at.target_fd)?;
    // An unusable program descriptor is "no program" (legacy single-program detach).
    let prog = prog_of_fd(c, at.attach_bpf_fd).ok();
    let _h = um_cgroup::hierarchy();
    let mut st = state();
    detach(&mut st, cg, prog.as_ref())?;
    Ok(0)
}

/// `__cgroup_bpf_detach` on the state (`find_detach_entry`).
pub fn detach(st: &mut State, cg: u64, prog: Option<&Arc<Prog>>) -> SysResult<()> {
    let a = st.cgroups.get_mut(&cg).ok_or(Errno::ENOENT)?;
    if a.progs.is_empty() {
        return Err(Errno::ENOENT);
    }
    let idx = if a.flags & BPF_F_ALLOW_MULTI == 0 {
        0
    } else {
        let p = prog.ok_or(Errno::EINVAL)?;
        a.progs
            .iter()
            .position(|q| Arc::ptr_eq(q, p))
            .ok_or(Errno::ENOENT)?
    };
    a.progs.remove(idx);
    if a.progs.is_empty() {
        a.flags = 0;
    }
    Ok(())
}

/// BPF_PROG_QUERY (`bpf_prog_query`, `__cgroup_bpf_query`).
fn prog_query(c: &mut SyscallCtx<'_>, attr: &[u8], uattr: u64) -> SysResult {
    check_attr(attr, 40)?;
    let q = QueryAttr::read_le(attr);
    may_attach(c)?;
    if q.query_flags & !BPF_F_QUERY_EFFECTIVE != 0 {
        return Err(Errno::EINVAL);
    }
    if q.attach_type != BPF_CGROUP_DEVICE {
        return Err(Errno::EINVAL);
    }
    let cg = group_of_fd(c, q.target_fd)?;
    let effective = q.query_flags & BPF_F_QUERY_EFFECTIVE != 0;
    if effective && q.prog_attach_flags != 0 {
        return Err(Errno::EINVAL);
    }
    let (progs, flags) = {
        let h = um_cgroup::hierarchy();
        let st = state();
        let flags = st.cgroups.get(&cg).map_or(0, |a| a.flags);
        if effective {
            (st.effective(&h, cg), 0)
        } else {
            (
                st.cgroups
                    .get(&cg)
                    .map_or_else(Vec::new, |a| a.progs.clone()),
                flags,
            )
        }
    };
    let total = progs.len() as u32;
    c.write_bytes(off(uattr, 12)?, &flags.to_le_bytes())?;
    c.write_bytes(off(uattr, 24)?, &total.to_le_bytes())?;
    if q.prog_cnt == 0 || q.prog_ids == 0 || total == 0 {
        return Ok(0);
    }
    let n = total.min(q.prog_cnt) as usize;
    let ids: Vec<u8> = progs[..n].iter().flat_map(|p| p.id.to_le_bytes()).collect();
    c.write_bytes(q.prog_ids, &ids)?;
    if q.prog_attach_flags != 0 {
        let f: Vec<u8> = (0..n).flat_map(|_| flags.to_le_bytes()).collect();
        c.write_bytes(q.prog_attach_flags, &f)?;
    }
    if q.prog_cnt < total {
        return Err(Errno::ENOSPC);
    }
    Ok(0)
}

/// BPF_PROG_GET_NEXT_ID (`bpf_obj_get_next_id`): the smallest live id above `start_id`.
fn get_next_id(c: &mut SyscallCtx<'_>, attr: &[u8], uattr: u64) -> SysResult {
    check_attr(attr, 8)?;
    let g = GetIdAttr::read_le(attr);
    if !c.task.process.capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    let next = {
        let st = state();
        st.ids
            .range(g.id.saturating_add(1)..)
            .find(|(_, w)| w.strong_count() > 0)
            .map(|(&id, _)| id)
    };
    let next = next.ok_or(Errno::ENOENT)?;
    c.write_bytes(off(uattr, 4)?, &next.to_le_bytes())?;
    Ok(0)
}

/// BPF_PROG_GET_FD_BY_ID (`bpf_prog_get_fd_by_id`): CAP_SYS_ADMIN; `ENOENT` for no such
/// program.
fn get_fd_by_id(c: &mut SyscallCtx<'_>, attr: &[u8]) -> SysResult {
    check_attr(attr, 12)?;
    let g = GetIdAttr::read_le(attr);
    if g.open_flags & !(BPF_F_RDONLY | BPF_F_WRONLY) != 0 {
        return Err(Errno::EINVAL);
    }
    if !c.task.process.capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    let prog = state().by_id(g.id).ok_or(Errno::ENOENT)?;
    new_fd(c, prog)
}

/// BPF_OBJ_GET_INFO_BY_FD of a program (`bpf_prog_get_info_by_fd`): the caller's
/// `info_len` bytes of `struct bpf_prog_info` (more than this kernel knows must be zero:
/// `E2BIG`), the translated instructions when asked for and the caller may see them.
fn get_info(c: &mut SyscallCtx<'_>, attr: &[u8], uattr: u64) -> SysResult {
    check_attr(attr, 16)?;
    let ia = InfoAttr::read_le(attr);
    let f = lock(&c.task.process.files()).get(ia.bpf_fd as u64)?;
    let prog = f
        .ops
        .as_any()
        .and_then(|a| a.downcast_ref::<ProgFile>())
        .map(|p| p.prog.clone())
        .ok_or(Errno::EINVAL)?;
    let ulen = ia.info_len as usize;
    let size = BpfProgInfo::SIZE;
    if ulen > size {
        if ulen > 4096 {
            return Err(Errno::E2BIG);
        }
        let tail = c.read_bytes(off(ia.info, size as u64)?, ulen - size)?;
        if tail.iter().any(|&b| b != 0) {
            return Err(Errno::E2BIG);
        }
    }
    let len = ulen.min(size);
    let mut given = c.read_bytes(ia.info, len)?;
    given.resize(size, 0);
    let user = BpfProgInfo::read_le(&given);
    let xlated: Vec<u8> = prog.insns.iter().flat_map(|i| i.as_bytes()).collect();
    let mut info = BpfProgInfo {
        prog_type: prog.prog_type,
        id: prog.id,
        tag: prog.tag,
        load_time: prog.load_time,
        created_by_uid: prog.uid,
        name: prog.name,
        flags: prog.gpl as u32,
        verified_insns: prog.insns.len() as u32,
        xlated_prog_len: xlated.len() as u32,
        ..Default::default()
    };
    if bpf_capable(c) && user.xlated_prog_len != 0 && user.xlated_prog_insns != 0 {
        let n = xlated.len().min(user.xlated_prog_len as usize);
        c.write_bytes(user.xlated_prog_insns, &xlated[..n])?;
        info.xlated_prog_insns = user.xlated_prog_insns;
    } else if !bpf_capable(c) {
        info.xlated_prog_len = 0;
    }
    // In-out fields this kernel has none of keep the caller's pointers, counts zeroed.
    info.jited_prog_insns = user.jited_prog_insns;
    info.map_ids = user.map_ids;
    let bytes = info.as_bytes();
    c.write_bytes(ia.info, &bytes[..len])?;
    c.write_bytes(off(uattr, 4)?, &(len as u32).to_le_bytes())?;
    Ok(0)
}

/// Registers bpf(2).
pub fn register(t: &mut SyscallTable) {
    t.register("bpf", bpf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_of_abc() {
        let h = sha1(b"abc");
        assert_eq!(h[..4], [0xa9, 0x99, 0x3e, 0x36]);
        assert_eq!(h[16..], [0x9c, 0xd0, 0xd8, 0x9d]);
    }
}
