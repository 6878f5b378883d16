//! Pure text formatting of procfs files, byte for byte as Linux prints them (fs/proc/array.c,
//! fs/proc/task_mmu.c, fs/proc/base.c, fs/proc/meminfo.c, fs/proc/loadavg.c, fs/proc/uptime.c).
//!
//! Everything here takes plain data and returns bytes, so the formats are unit-tested without a
//! kernel; [`super::pid`] and [`super::sys`] gather the data. busybox `ps`, `top`, `free`,
//! `mount` and `df` parse these, so field order and separators matter.

use std::fmt::Write;

/// `/proc/PID/stat` (fs/proc/array.c `do_task_stat`): 52 fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatInfo {
    pub pid: u32,
    pub comm: Vec<u8>,
    pub state: char,
    pub ppid: u32,
    pub pgrp: u32,
    pub session: u32,
    pub tty_nr: u32,
    pub tpgid: i32,
    pub flags: u32,
    pub minflt: u64,
    pub majflt: u64,
    /// Clock ticks (USER_HZ = 100).
    pub utime: u64,
    pub stime: u64,
    pub cutime: u64,
    pub cstime: u64,
    pub priority: i64,
    pub nice: i64,
    pub num_threads: u64,
    /// Ticks after boot.
    pub starttime: u64,
    /// Bytes.
    pub vsize: u64,
    /// Pages.
    pub rss: u64,
    pub rsslim: u64,
    pub startcode: u64,
    pub endcode: u64,
    pub startstack: u64,
    pub signal: u64,
    pub blocked: u64,
    pub sigignore: u64,
    pub sigcatch: u64,
    pub sleeping: bool,
    pub exit_signal: i32,
    pub start_data: u64,
    pub end_data: u64,
    pub start_brk: u64,
    pub arg_start: u64,
    pub arg_end: u64,
    pub env_start: u64,
    pub env_end: u64,
    pub exit_code: i32,
}

/// The `/proc/PID/stat` line.
pub fn stat_line(s: &StatInfo) -> Vec<u8> {
    let mut out = format!("{} (", s.pid).into_bytes();
    // The name is printed raw here (proc_task_name(..., escape = false)).
    out.extend_from_slice(&s.comm);
    let mut t = String::new();
    // Linux prints the four signal words masked to 31 bits ("obsolete, use status").
    let m = |v: u64| v & 0x7fff_ffff;
    let _ = write!(
        t,
        ") {} {} {} {} {} {} {} {} 0 {} 0 {} {} {} {} {} {} {} 0 {} {} {} {}",
        s.state,
        s.ppid,
        s.pgrp,
        s.session,
        s.tty_nr,
        s.tpgid,
        s.flags,
        s.minflt,
        s.majflt,
        s.utime,
        s.stime,
        s.cutime,
        s.cstime,
        s.priority,
        s.nice,
        s.num_threads,
        s.starttime,
        s.vsize,
        s.rss,
        s.rsslim,
    );
    let _ = writeln!(
        t,
        " {} {} {} 0 0 {} {} {} {} {} 0 0 {} 0 0 0 0 0 0 {} {} {} {} {} {} {} {}",
        s.startcode,
        s.endcode,
        s.startstack,
        m(s.signal),
        m(s.blocked),
        m(s.sigignore),
        m(s.sigcatch),
        u8::from(s.sleeping),
        s.exit_signal,
        s.start_data,
        s.end_data,
        s.start_brk,
        s.arg_start,
        s.arg_end,
        s.env_start,
        s.env_end,
        s.exit_code,
    );
    out.extend_from_slice(t.as_bytes());
    out
}

/// The `State:` text of a state letter (fs/proc/array.c `task_state_array`).
pub fn state_name(c: char) -> &'static str {
    match c {
        'R' => "R (running)",
        'S' => "S (sleeping)",
        'D' => "D (disk sleep)",
        'T' => "T (stopped)",
        't' => "t (tracing stop)",
        'X' => "X (dead)",
        'Z' => "Z (zombie)",
        'P' => "P (parked)",
        _ => "I (idle)",
    }
}

/// Memory figures of `/proc/PID/status`, in kB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VmInfo {
    pub peak: u64,
    pub size: u64,
    pub lck: u64,
    pub hwm: u64,
    pub rss: u64,
    pub rss_anon: u64,
    pub rss_file: u64,
    pub rss_shmem: u64,
    pub data: u64,
    pub stk: u64,
    pub exe: u64,
    pub lib: u64,
    pub pte: u64,
}

/// `/proc/PID/status` (fs/proc/array.c `proc_pid_status`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusInfo {
    pub name: Vec<u8>,
    pub umask: Option<u32>,
    pub state: char,
    pub tgid: u32,
    pub pid: u32,
    pub ppid: u32,
    pub tracer: u32,
    pub uids: [u32; 4],
    pub gids: [u32; 4],
    pub fdsize: u32,
    pub groups: Vec<u32>,
    pub pgid: u32,
    pub sid: u32,
    /// None for a zombie (no mm).
    pub vm: Option<VmInfo>,
    pub threads: u64,
    pub sigq: (u64, u64),
    pub sigpnd: u64,
    pub shdpnd: u64,
    pub sigblk: u64,
    pub sigign: u64,
    pub sigcgt: u64,
    /// Capability sets (CapInh, CapPrm, CapEff, CapBnd, CapAmb).
    pub caps: [u64; 5],
    pub no_new_privs: bool,
    /// seccomp mode and number of filters (`Seccomp:`, `Seccomp_filters:`).
    pub seccomp: (u32, u32),
    pub ncpus: u32,
}

pub use um_kernel::task::CAP_FULL;
pub use um_uapi::abi::capability::CAP_LAST_CAP;

/// Escapes a task name as `proc_task_name(..., escape = true)` does (`\n` and `\\`).
fn escape_name(name: &[u8]) -> String {
    let mut s = String::new();
    for &b in name {
        match b {
            b'\n' => s.push_str("\\n"),
            b'\\' => s.push_str("\\\\"),
            _ => s.push(b as char),
        }
    }
    s
}

/// `Cpus_allowed` style mask: 32-bit hex words separated by commas, highest first.
pub fn cpu_mask(ncpus: u32) -> String {
    let words = ncpus.div_ceil(32).max(1);
    let mut parts = Vec::new();
    for w in (0..words).rev() {
        let lo = w * 32;
        let n = ncpus.saturating_sub(lo).min(32);
        let v: u32 = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
        if w == words - 1 {
            parts.push(format!("{v:x}"));
        } else {
            parts.push(format!("{v:08x}"));
        }
    }
    parts.join(",")
}

/// A CPU list: "0" or "0-N".
pub fn cpu_list(ncpus: u32) -> String {
    match ncpus {
        0 | 1 => "0".to_string(),
        n => format!("0-{}", n - 1),
    }
}

/// The `/proc/PID/status` text.
pub fn status_text(s: &StatusInfo) -> Vec<u8> {
    let mut t = String::new();
    let _ = writeln!(t, "Name:\t{}", escape_name(&s.name));
    if let Some(u) = s.umask {
        let _ = writeln!(t, "Umask:\t{u:04o}");
    }
    let _ = writeln!(t, "State:\t{}", state_name(s.state));
    let _ = writeln!(t, "Tgid:\t{}", s.tgid);
    let _ = writeln!(t, "Ngid:\t0");
    let _ = writeln!(t, "Pid:\t{}", s.pid);
    let _ = writeln!(t, "PPid:\t{}", s.ppid);
    let _ = writeln!(t, "TracerPid:\t{}", s.tracer);
    let [a, b, c, d] = s.uids;
    let _ = writeln!(t, "Uid:\t{a}\t{b}\t{c}\t{d}");
    let [a, b, c, d] = s.gids;
    let _ = writeln!(t, "Gid:\t{a}\t{b}\t{c}\t{d}");
    let _ = writeln!(t, "FDSize:\t{}", s.fdsize);
    let groups: Vec<String> = s.groups.iter().map(|g| g.to_string()).collect();
    // fs/proc/array.c keeps a trailing space ("shouldn't have been added in the first place").
    let _ = writeln!(t, "Groups:\t{} ", groups.join(" "));
    let _ = writeln!(t, "NStgid:\t{}", s.tgid);
    let _ = writeln!(t, "NSpid:\t{}", s.pid);
    let _ = writeln!(t, "NSpgid:\t{}", s.pgid);
    let _ = writeln!(t, "NSsid:\t{}", s.sid);
    if let Some(v) = &s.vm {
        // task_mem (fs/proc/task_mmu.c): "%s\t%8lu kB".
        for (k, n) in [
            ("VmPeak", v.peak),
            ("VmSize", v.size),
            ("VmLck", v.lck),
            ("VmPin", 0),
            ("VmHWM", v.hwm),
            ("VmRSS", v.rss),
            ("RssAnon", v.rss_anon),
            ("RssFile", v.rss_file),
            ("RssShmem", v.rss_shmem),
            ("VmData", v.data),
            ("VmStk", v.stk),
            ("VmExe", v.exe),
            ("VmLib", v.lib),
            ("VmPTE", v.pte),
            ("VmSwap", 0),
        ] {
            let _ = writeln!(t, "{k}:\t{n:8} kB");
        }
        let _ = writeln!(t, "HugetlbPages:\t{:8} kB", 0);
    }
    let _ = writeln!(t, "CoreDumping:\t0");
    let _ = writeln!(t, "THP_enabled:\t1");
    let _ = writeln!(t, "Threads:\t{}", s.threads);
    let _ = writeln!(t, "SigQ:\t{}/{}", s.sigq.0, s.sigq.1);
    for (k, v) in [
        ("SigPnd", s.sigpnd),
        ("ShdPnd", s.shdpnd),
        ("SigBlk", s.sigblk),
        ("SigIgn", s.sigign),
        ("SigCgt", s.sigcgt),
        ("CapInh", s.caps[0]),
        ("CapPrm", s.caps[1]),
        ("CapEff", s.caps[2]),
        ("CapBnd", s.caps[3]),
        ("CapAmb", s.caps[4]),
    ] {
        let _ = writeln!(t, "{k}:\t{v:016x}");
    }
    let _ = writeln!(t, "NoNewPrivs:\t{}", u8::from(s.no_new_privs));
    let _ = writeln!(t, "Seccomp:\t{}", s.seccomp.0);
    let _ = writeln!(t, "Seccomp_filters:\t{}", s.seccomp.1);
    let _ = writeln!(t, "Speculation_Store_Bypass:\tthread vulnerable");
    let _ = writeln!(t, "SpeculationIndirectBranch:\tconditional enabled");
    let _ = writeln!(t, "Cpus_allowed:\t{}", cpu_mask(s.ncpus));
    let _ = writeln!(t, "Cpus_allowed_list:\t{}", cpu_list(s.ncpus));
    let _ = writeln!(t, "Mems_allowed:\t00000000,00000001");
    let _ = writeln!(t, "Mems_allowed_list:\t0");
    let _ = writeln!(t, "voluntary_ctxt_switches:\t0");
    let _ = writeln!(t, "nonvoluntary_ctxt_switches:\t0");
    t.into_bytes()
}

/// One `/proc/PID/maps` line (fs/proc/task_mmu.c `show_map_vma`): the prefix is padded to
/// 73 columns before the name; an unnamed mapping keeps the trailing space, as Linux does.
#[allow(clippy::too_many_arguments)]
pub fn maps_line(
    start: u64,
    end: u64,
    prot: (bool, bool, bool),
    shared: bool,
    offset: u64,
    dev: (u32, u32),
    ino: u64,
    name: Option<&str>,
) -> String {
    let flag = |b: bool, c: char| if b { c } else { '-' };
    let mut s = format!(
        "{start:08x}-{end:08x} {}{}{}{} {offset:08x} {:02x}:{:02x} {ino} ",
        flag(prot.0, 'r'),
        flag(prot.1, 'w'),
        flag(prot.2, 'x'),
        if shared { 's' } else { 'p' },
        dev.0,
        dev.1,
    );
    if let Some(n) = name {
        // seq_setwidth(m, 25 + sizeof(void *) * 6 - 1) then seq_pad(m, ' ').
        while s.len() < 73 {
            s.push(' ');
        }
        s.push(' ');
        s.push_str(n);
    }
    s.push('\n');
    s
}

/// `/proc/PID/statm`: size resident shared text lib data dt, in pages.
pub fn statm_line(size: u64, resident: u64, shared: u64, text: u64, data: u64) -> String {
    format!("{size} {resident} {shared} {text} 0 {data} 0\n")
}

/// Names and units of `/proc/PID/limits` (fs/proc/base.c `lnames`), by RLIMIT_* index.
const LIMIT_NAMES: [(&str, &str); 16] = [
    ("Max cpu time", "seconds"),
    ("Max file size", "bytes"),
    ("Max data size", "bytes"),
    ("Max stack size", "bytes"),
    ("Max core file size", "bytes"),
    ("Max resident set", "bytes"),
    ("Max processes", "processes"),
    ("Max open files", "files"),
    ("Max locked memory", "bytes"),
    ("Max address space", "bytes"),
    ("Max file locks", "locks"),
    ("Max pending signals", "signals"),
    ("Max msgqueue size", "bytes"),
    ("Max nice priority", ""),
    ("Max realtime priority", ""),
    ("Max realtime timeout", "us"),
];

/// `/proc/PID/limits` (fs/proc/base.c `proc_pid_limits`).
pub fn limits_text(rl: &[(u64, u64); 16]) -> String {
    let mut t = format!(
        "{:<25} {:<20} {:<20} {:<10}\n",
        "Limit", "Soft Limit", "Hard Limit", "Units"
    );
    let val = |v: u64| {
        if v == u64::MAX {
            "unlimited".to_string()
        } else {
            v.to_string()
        }
    };
    for (i, (name, unit)) in LIMIT_NAMES.iter().enumerate() {
        let _ = write!(t, "{:<25} {:<20} {:<20} ", name, val(rl[i].0), val(rl[i].1));
        if unit.is_empty() {
            t.push('\n');
        } else {
            let _ = writeln!(t, "{unit:<10}");
        }
    }
    t
}

/// `/proc/meminfo` (fs/proc/meminfo.c): values in kB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemInfo {
    pub total: u64,
    pub free: u64,
    pub available: u64,
    pub cached: u64,
    pub shmem: u64,
    pub anon: u64,
    pub mapped: u64,
    pub page_kb: u64,
    /// `CommitLimit` (`vm_commit_limit`).
    pub commit_limit: u64,
    /// `Committed_AS` (`vm_committed_as`).
    pub committed: u64,
    /// `HugePages_Total`, `_Free`, `_Rsvd`, `_Surp` of the default size (mm/hugetlb.c
    /// `hugetlb_report_meminfo`), in pages.
    pub huge_pages: [u64; 4],
    /// `Hugepagesize` (0: the PMD size of the page size).
    pub hugepagesize: u64,
    /// `Hugetlb`: all pools' pages, in kB.
    pub hugetlb: u64,
}

/// The `/proc/meminfo` text.
pub fn meminfo_text(m: &MemInfo) -> String {
    let mut t = String::new();
    let rows: [(&str, u64); 42] = [
        ("MemTotal", m.total),
        ("MemFree", m.free),
        ("MemAvailable", m.available),
        ("Buffers", 0),
        ("Cached", m.cached),
        ("SwapCached", 0),
        ("Active", m.anon + m.cached / 2),
        ("Inactive", m.cached - m.cached / 2),
        ("Active(anon)", m.anon),
        ("Inactive(anon)", 0),
        ("Active(file)", m.cached / 2),
        ("Inactive(file)", m.cached - m.cached / 2),
        ("Unevictable", 0),
        ("Mlocked", 0),
        ("SwapTotal", 0),
        ("SwapFree", 0),
        ("Dirty", 0),
        ("Writeback", 0),
        ("AnonPages", m.anon),
        ("Mapped", m.mapped),
        ("Shmem", m.shmem),
        ("KReclaimable", 0),
        ("Slab", 0),
        ("SReclaimable", 0),
        ("SUnreclaim", 0),
        ("KernelStack", 0),
        ("PageTables", 0),
        ("NFS_Unstable", 0),
        ("Bounce", 0),
        ("WritebackTmp", 0),
        ("CommitLimit", m.commit_limit),
        ("Committed_AS", m.committed),
        ("VmallocTotal", 34_359_738_367),
        ("VmallocUsed", 0),
        ("VmallocChunk", 0),
        ("Percpu", 0),
        ("AnonHugePages", 0),
        ("ShmemHugePages", 0),
        ("ShmemPmdMapped", 0),
        ("FileHugePages", 0),
        ("FilePmdMapped", 0),
        ("Hugetlb", m.hugetlb),
    ];
    for (k, v) in rows.iter() {
        if *k == "Hugetlb" {
            // hugetlb_report_meminfo comes just before Hugetlb.
            let [total, free, rsvd, surp] = m.huge_pages;
            let _ = writeln!(t, "HugePages_Total:   {total:>5}");
            let _ = writeln!(t, "HugePages_Free:    {free:>5}");
            let _ = writeln!(t, "HugePages_Rsvd:    {rsvd:>5}");
            let _ = writeln!(t, "HugePages_Surp:    {surp:>5}");
            // HPAGE_PMD_SIZE: one page of page-table entries' worth of pages (2M at 4K, 32M
            // at 16K), unless the pools say otherwise.
            let pmd_kb = m.page_kb * m.page_kb * 1024 / 8;
            let size_kb = if m.hugepagesize != 0 {
                m.hugepagesize
            } else {
                pmd_kb
            };
            let _ = writeln!(t, "Hugepagesize:   {size_kb:>8} kB");
        }
        let _ = writeln!(t, "{:<16}{v:>8} kB", format!("{k}:"));
    }
    let _ = writeln!(t, "{:<16}{:>8} kB", "DirectMap4k:", m.total);
    t
}

/// `/proc/uptime`: "%lu.%02lu %lu.%02lu".
pub fn uptime_line(up_cs: u64, idle_cs: u64) -> String {
    format!(
        "{}.{:02} {}.{:02}\n",
        up_cs / 100,
        up_cs % 100,
        idle_cs / 100,
        idle_cs % 100
    )
}

/// `/proc/loadavg`: three averages (in hundredths), running/total, last pid.
pub fn loadavg_line(avg: [u64; 3], running: usize, total: usize, last_pid: u32) -> String {
    format!(
        "{}.{:02} {}.{:02} {}.{:02} {running}/{total} {last_pid}\n",
        avg[0] / 100,
        avg[0] % 100,
        avg[1] / 100,
        avg[1] % 100,
        avg[2] / 100,
        avg[2] % 100
    )
}

/// `/proc/PID/fdinfo/N` (fs/proc/fd.c `seq_show`).
pub fn fdinfo_text(pos: u64, flags: u32, mnt_id: u32, ino: u64) -> String {
    format!("pos:\t{pos}\nflags:\t0{flags:o}\nmnt_id:\t{mnt_id}\nino:\t{ino}\n")
}

/// One `/proc/mounts` line (fs/proc_namespace.c `show_vfsmnt`): spaces, tabs, newlines and
/// backslashes in names are octal-escaped.
pub fn mounts_line(source: &[u8], point: &[u8], fstype: &str, opts: &str) -> String {
    format!("{} {} {fstype} {opts} 0 0\n", mangle(source), mangle(point))
}

/// One `/proc/PID/mountinfo` line (fs/proc_namespace.c `show_mountinfo`).
#[allow(clippy::too_many_arguments)]
pub fn mountinfo_line(
    id: u32,
    parent: u32,
    dev: (u32, u32),
    root: &[u8],
    point: &[u8],
    mnt_opts: &str,
    optional: &str,
    fstype: &str,
    source: &[u8],
    super_opts: &str,
) -> String {
    format!(
        "{id} {parent} {}:{} {} {} {mnt_opts} {optional}- {fstype} {} {super_opts}\n",
        dev.0,
        dev.1,
        mangle(root),
        mangle(point),
        mangle(source),
    )
}

/// `seq_escape(m, s, " \t\n\\")`: those bytes become `\ooo`.
pub fn mangle(s: &[u8]) -> String {
    let mut o = String::new();
    for &b in s {
        if matches!(b, b' ' | b'\t' | b'\n' | b'\\') {
            let _ = write!(o, "\\{b:03o}");
        } else {
            o.push(b as char);
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_has_52_fields_in_order() {
        let s = StatInfo {
            pid: 42,
            comm: b"my prog)".to_vec(),
            state: 'S',
            ppid: 1,
            pgrp: 42,
            session: 1,
            tpgid: -1,
            flags: 0x400000,
            utime: 7,
            stime: 3,
            priority: 20,
            num_threads: 1,
            starttime: 150,
            vsize: 4096 * 10,
            rss: 5,
            rsslim: u64::MAX,
            sigcatch: 1 << 16,
            sleeping: true,
            exit_signal: 17,
            arg_start: 0x1000,
            arg_end: 0x1010,
            ..Default::default()
        };
        let line = String::from_utf8(stat_line(&s)).unwrap();
        assert!(line.ends_with('\n'));
        assert!(line.starts_with("42 (my prog)) S 1 42 1 0 -1 4194304 "));
        // Split after the last ')' as ps does.
        let rest = &line[line.rfind(')').unwrap() + 2..line.len() - 1];
        let f: Vec<&str> = rest.split(' ').collect();
        assert_eq!(f.len() + 2, 52);
        // Field n (1-based) is f[n - 3].
        assert_eq!(f[14 - 3], "7");
        assert_eq!(f[15 - 3], "3");
        assert_eq!(f[18 - 3], "20");
        assert_eq!(f[20 - 3], "1");
        assert_eq!(f[22 - 3], "150");
        assert_eq!(f[23 - 3], "40960");
        assert_eq!(f[24 - 3], "5");
        assert_eq!(f[25 - 3], u64::MAX.to_string());
        assert_eq!(f[34 - 3], "65536");
        assert_eq!(f[35 - 3], "1");
        assert_eq!(f[38 - 3], "17");
        assert_eq!(f[48 - 3], "4096");
        assert_eq!(f[49 - 3], "4112");
        assert_eq!(f[52 - 3], "0");
    }

    #[test]
    fn status_lines() {
        let s = StatusInfo {
            name: b"sh".to_vec(),
            umask: Some(0o22),
            state: 'R',
            tgid: 5,
            pid: 5,
            ppid: 1,
            fdsize: 64,
            vm: Some(VmInfo {
                size: 1234,
                rss: 56,
                ..Default::default()
            }),
            threads: 1,
            sigq: (0, 4096),
            sigcgt: 0x10002,
            caps: [0, CAP_FULL, CAP_FULL, CAP_FULL, 0],
            ncpus: 2,
            ..Default::default()
        };
        let t = String::from_utf8(status_text(&s)).unwrap();
        assert!(t.starts_with("Name:\tsh\nUmask:\t0022\nState:\tR (running)\nTgid:\t5\n"));
        assert!(t.contains("\nUid:\t0\t0\t0\t0\n"));
        assert!(t.contains("\nGroups:\t \n"));
        assert!(t.contains("\nVmSize:\t    1234 kB\n"));
        assert!(t.contains("\nVmRSS:\t      56 kB\n"));
        assert!(t.contains("\nThreads:\t1\n"));
        assert!(t.contains("\nSigQ:\t0/4096\n"));
        assert!(t.contains("\nSigCgt:\t0000000000010002\n"));
        assert!(t.contains("\nCapEff:\t000001ffffffffff\n"));
        assert!(t.contains("\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n"));
        assert!(t.contains("\nNoNewPrivs:\t0\nSeccomp:\t0\nSeccomp_filters:\t0\n"));
        let f = StatusInfo {
            no_new_privs: true,
            seccomp: (2, 3),
            ..s.clone()
        };
        let t = String::from_utf8(status_text(&f)).unwrap();
        assert!(t.contains("\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t3\n"));
        // Escaping of the name.
        let e = StatusInfo {
            name: b"a\nb\\".to_vec(),
            state: 'Z',
            ..Default::default()
        };
        let t = String::from_utf8(status_text(&e)).unwrap();
        assert!(t.starts_with("Name:\ta\\nb\\\\\nState:\tZ (zombie)\n"));
        assert!(!t.contains("VmSize"));
    }

    #[test]
    fn maps_lines() {
        let l = maps_line(
            0x5555_5555_4000,
            0x5555_5555_6000,
            (true, false, true),
            false,
            0x1000,
            (0, 0x1f),
            1234,
            Some("/bin/busybox"),
        );
        assert_eq!(
            l,
            "555555554000-555555556000 r-xp 00001000 00:1f 1234                        /bin/busybox\n"
        );
        assert_eq!(l.find('/').unwrap(), 74);
        let a = maps_line(
            0x1_0000,
            0x2_0000,
            (true, true, false),
            true,
            0,
            (0, 0),
            0,
            None,
        );
        assert_eq!(a, "00010000-00020000 rw-s 00000000 00:00 0 \n");
        let s = maps_line(
            0x7ffd_0000_0000,
            0x7ffd_0002_1000,
            (true, true, false),
            false,
            0,
            (0, 0),
            0,
            Some("[stack]"),
        );
        assert!(s.ends_with(" [stack]\n"));
        assert_eq!(s.len(), 74 + "[stack]\n".len());
    }

    #[test]
    fn masks_and_lists() {
        assert_eq!(cpu_mask(1), "1");
        assert_eq!(cpu_mask(4), "f");
        assert_eq!(cpu_mask(32), "ffffffff");
        assert_eq!(cpu_mask(33), "1,ffffffff");
        assert_eq!(cpu_list(1), "0");
        assert_eq!(cpu_list(8), "0-7");
    }

    #[test]
    fn limits_format() {
        let t = limits_text(&[(u64::MAX, u64::MAX); 16]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 17);
        assert_eq!(
            lines[0],
            "Limit                     Soft Limit           Hard Limit           Units     "
        );
        assert_eq!(
            lines[1],
            "Max cpu time              unlimited            unlimited            seconds   "
        );
        assert_eq!(
            lines[14],
            "Max nice priority         unlimited            unlimited            "
        );
    }

    #[test]
    fn meminfo_format() {
        let t = meminfo_text(&MemInfo {
            total: 262144,
            free: 200000,
            available: 210000,
            cached: 1000,
            page_kb: 4,
            ..Default::default()
        });
        assert!(t.starts_with("MemTotal:         262144 kB\nMemFree:          200000 kB\n"));
        assert!(t.contains("\nSwapTotal:             0 kB\n"));
        assert!(t.contains("\nHugePages_Total:       0\n"));
        assert!(t.contains("\nHugepagesize:       2048 kB\n"));
        for l in t.lines().filter(|l| l.starts_with("HugePages_")) {
            assert_eq!(l.len(), 24, "{l}");
        }
        assert!(t.contains("\nShmem:                 0 kB\n"));
    }

    #[test]
    fn small_lines() {
        assert_eq!(uptime_line(12345, 20000), "123.45 200.00\n");
        assert_eq!(
            loadavg_line([0, 5, 100], 1, 3, 17),
            "0.00 0.05 1.00 1/3 17\n"
        );
        assert_eq!(statm_line(10, 5, 2, 1, 3), "10 5 2 1 0 3 0\n");
        assert_eq!(
            fdinfo_text(5, 0o2100002, 21, 7),
            "pos:\t5\nflags:\t02100002\nmnt_id:\t21\nino:\t7\n"
        );
        assert_eq!(
            mounts_line(b"proc", b"/pr oc", "proc", "rw"),
            "proc /pr\\040oc proc rw 0 0\n"
        );
        assert_eq!(
            mountinfo_line(
                21,
                1,
                (0, 22),
                b"/",
                b"/proc",
                "rw,relatime",
                "",
                "proc",
                b"proc",
                "rw"
            ),
            "21 1 0:22 / /proc rw,relatime - proc proc rw\n"
        );
        assert_eq!(
            mountinfo_line(
                30,
                29,
                (0, 40),
                b"/sub",
                b"/b",
                "rw",
                "shared:3 master:1 ",
                "tmpfs",
                b"t",
                "rw"
            ),
            "30 29 0:40 /sub /b rw shared:3 master:1 - tmpfs t rw\n"
        );
    }
}
