//! The kernel command line, in User Mode Linux's conventions (`arch/um/kernel/um_arch.c`,
//! `Documentation/virt/uml/user_mode_linux_howto_v2.rst`): `key=value` words and bare flags;
//! everything after a bare `--` is passed to init.

use std::path::PathBuf;

/// How the guest's console is wired (`con0=IN,OUT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConChannel {
    Null,
    Fd(i32),
}

/// `seccomp=` setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeccompMode {
    On,
    Auto,
    Off,
}

/// The parsed command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cmdline {
    pub mem: u64,
    pub rootflags: Option<PathBuf>,
    /// `rootfstype=`: `hostfs` (the default without `root=/dev/...`), `ext4`, `ext3`, `ext2`.
    pub rootfstype: Option<String>,
    /// `root=/dev/NAME` naming a block device (`ubda`, `ubda1`): the root is the file system
    /// on it (init/do_mounts.c); `root=/dev/root` (UML's hostfs boot) or none: hostfs.
    pub root_dev: Option<String>,
    pub readonly: bool,
    /// Whether `rw` was given: a block-device root is mounted read-only unless it was, as
    /// Linux's `root_mountflags` starts with `MS_RDONLY`.
    pub rw_given: bool,
    pub init: String,
    pub init_args: Vec<String>,
    pub con_in: ConChannel,
    pub con_out: ConChannel,
    pub seccomp: SeccompMode,
    pub nosysemu: bool,
    pub nocancel: bool,
    /// `seccomp_spin=`: microseconds either side of the seccomp handoff spins before parking.
    pub seccomp_spin_us: u64,
    /// `prefault=`: the fault-around window for sequential anonymous faults, in bytes; `None`:
    /// [`DEFAULT_PREFAULT_PAGES`] guest pages.
    pub prefault: Option<u64>,
    /// `pagesize=`: the guest page size in bytes (4K or 16K); `None`: the smallest the arch
    /// offers that is at least the host's page size.
    pub pagesize: Option<u64>,
    pub loglevel: u32,
    /// `hostname=` (Linux 5.19's early param in init/version.c): the boot-time nodename;
    /// `None`: derived from the root file system (see `boot::default_hostname`).
    pub hostname: Option<String>,
    pub stub_exe: Option<PathBuf>,
    /// `ubd<n><flags>=file[,backing]` disks, in command-line order.
    pub ubd: Vec<um_drivers::block::ubd::UbdSpec>,
    /// `ubd=sync`: every ubd disk opens its host file `O_SYNC`.
    pub ubd_sync: bool,
    /// `eth0=`: the virtual NIC's backend (default `user`).
    pub eth0: um_drivers::net::Eth0,
    /// `ip=`: configure eth0 at boot (default off).
    pub ip: um_drivers::net::ipconfig::IpConfig,
    /// `bind=HOST:GUEST[:ro]`: host directories mounted (hostfs) on guest directories at boot.
    pub binds: Vec<Bind>,
    /// `ncpus=` (UML's option): the CPUs the guest is told it has; `None`: the host's.
    pub ncpus: Option<u32>,
    /// `log=PATH`: a host file that gets the kernel log (every message `dmesg` would show).
    pub log: Option<PathBuf>,
    pub help: bool,
    /// The words as given, for the boot log.
    pub words: Vec<String>,
}

impl Default for Cmdline {
    fn default() -> Self {
        Cmdline {
            mem: 256 << 20,
            rootflags: None,
            rootfstype: None,
            root_dev: None,
            readonly: false,
            rw_given: false,
            init: String::from("/sbin/init"),
            init_args: Vec::new(),
            con_in: ConChannel::Fd(0),
            con_out: ConChannel::Fd(1),
            seccomp: SeccompMode::Auto,
            nosysemu: false,
            nocancel: false,
            seccomp_spin_us: DEFAULT_SECCOMP_SPIN_US,
            prefault: None,
            pagesize: None,
            loglevel: 7,
            hostname: None,
            stub_exe: None,
            ubd: Vec::new(),
            ubd_sync: false,
            eth0: Default::default(),
            ip: Default::default(),
            binds: Vec::new(),
            ncpus: None,
            log: None,
            help: false,
            words: Vec::new(),
        }
    }
}

/// Parses a memory size: decimal or 0x hex with an optional K/M/G suffix (either case),
/// as Linux `memparse()` does.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (num, mult) = match s.chars().last() {
        Some(c @ ('K' | 'M' | 'G' | 'T' | 'P' | 'k' | 'm' | 'g' | 't' | 'p')) => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => 1 << 50,
            };
            (&s[..s.len() - 1], m)
        }
        _ => (s, 1),
    };
    let n = if let Some(h) = num.strip_prefix("0x") {
        u64::from_str_radix(h, 16)
    } else {
        num.parse::<u64>()
    }
    .map_err(|_| format!("bad size {s:?} (a number with an optional K, M or G suffix)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} is too large"))
}

fn parse_channel(s: &str) -> Result<ConChannel, String> {
    if s == "null" {
        return Ok(ConChannel::Null);
    }
    if let Some(n) = s.strip_prefix("fd:") {
        let fd: i32 = n
            .parse()
            .map_err(|_| format!("bad console channel {s:?}"))?;
        if fd < 0 {
            return Err(format!("bad console channel {s:?}"));
        }
        return Ok(ConChannel::Fd(fd));
    }
    Err(format!(
        "unsupported console channel {s:?} (use fd:N or null)"
    ))
}

/// Parses the words after the program name.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Cmdline, String> {
    let mut c = Cmdline::default();
    let mut it = args.into_iter();
    while let Some(w) = it.next() {
        if w == "--" {
            c.init_args = it.by_ref().collect();
            break;
        }
        c.words.push(w.clone());
        let (k, v) = match w.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (w.as_str(), None),
        };
        fn need<'a>(k: &str, v: Option<&'a str>) -> Result<&'a str, String> {
            v.filter(|s| !s.is_empty())
                .ok_or_else(|| format!("{k}= needs a value"))
        }
        match (k, v) {
            ("--help" | "-h" | "help", None) => c.help = true,
            ("mem", v) => c.mem = parse_size(need(k, v)?)?,
            ("rootfstype", v) => {
                let t = need(k, v)?;
                if !matches!(t, "hostfs" | "ext4" | "ext3" | "ext2") {
                    return Err(format!(
                        "rootfstype={t}: hostfs, ext4, ext3 and ext2 are supported"
                    ));
                }
                c.rootfstype = Some(t.to_string());
            }
            ("rootflags", v) => c.rootflags = Some(PathBuf::from(need(k, v)?)),
            ("root", v) => {
                // UML's hostfs boot says root=/dev/root (the host directory is rootflags=);
                // any other /dev/NAME is a block device.
                let r = need(k, v)?;
                match r.strip_prefix("/dev/") {
                    Some("root") => c.root_dev = None,
                    Some(name) if !name.is_empty() && !name.contains('/') => {
                        c.root_dev = Some(name.to_string())
                    }
                    _ => {
                        return Err(format!(
                            "root={r}: give /dev/NAME (a block device such as /dev/ubda) or /dev/root"
                        ));
                    }
                }
            }
            ("rw", None) => {
                c.readonly = false;
                c.rw_given = true;
            }
            ("ro", None) => {
                c.readonly = true;
                c.rw_given = false;
            }
            ("init", v) => {
                let p = need(k, v)?;
                if !p.starts_with('/') {
                    return Err(format!("init={p}: must be an absolute path"));
                }
                c.init = p.to_string();
            }
            ("con0", v) => {
                let s = need(k, v)?;
                let (i, o) = s.split_once(',').unwrap_or((s, s));
                c.con_in = parse_channel(i)?;
                c.con_out = parse_channel(o)?;
            }
            ("con", v) => {
                // con=null (every other console off): there is only con0 here.
                need(k, v)?;
            }
            ("seccomp", v) => {
                c.seccomp = match need(k, v)? {
                    "on" => SeccompMode::On,
                    "auto" => SeccompMode::Auto,
                    "off" => SeccompMode::Off,
                    o => return Err(format!("seccomp={o}: use on, auto or off")),
                }
            }
            ("nosysemu", None) => c.nosysemu = true,
            ("nocancel", None) => {
                c.nocancel = true;
                c.nosysemu = true;
            }
            ("prefault", v) => {
                let n = parse_size(need(k, v)?).map_err(|e| format!("prefault: {e}"))?;
                if n > 16 << 20 {
                    return Err(format!("prefault={n}: at most 16M"));
                }
                c.prefault = Some(n);
            }
            ("pagesize", v) => {
                let s = need(k, v)?;
                let n = parse_size(s).map_err(|e| format!("pagesize={s}: {e}"))?;
                if n != 4 << 10 && n != 16 << 10 {
                    return Err(format!("pagesize={s}: use 4K or 16K"));
                }
                c.pagesize = Some(n);
            }
            ("seccomp_spin", v) => {
                c.seccomp_spin_us = need(k, v)?
                    .parse()
                    .ok()
                    .filter(|&n: &u64| n <= 1_000_000)
                    .ok_or_else(|| {
                        format!("seccomp_spin={}: microseconds, 0..1000000", v.unwrap_or(""))
                    })?;
            }
            ("loglevel", v) => {
                let n: u32 = need(k, v)?
                    .parse()
                    .map_err(|_| format!("bad loglevel {:?}", v.unwrap_or("")))?;
                if n > 15 {
                    return Err(format!("loglevel={n}: must be 0..15"));
                }
                c.loglevel = n;
            }
            ("hostname", v) => c.hostname = Some(truncate_nodename(need(k, v)?)),
            ("quiet", None) => c.loglevel = 4,
            ("debug", None) => c.loglevel = 10,
            ("stub_exe", v) => c.stub_exe = Some(PathBuf::from(need(k, v)?)),
            ("eth0", v) => c.eth0 = um_drivers::net::parse_eth0(need(k, v)?)?,
            ("ip", v) => c.ip = um_drivers::net::ipconfig::parse_ip(need(k, v)?)?,
            ("bind", v) => c.binds.push(parse_bind(need(k, v)?)?),
            ("log", v) => c.log = Some(PathBuf::from(need(k, v)?)),
            ("ncpus", v) => {
                let s = need(k, v)?;
                let max = um_kernel::cpus::MAX;
                c.ncpus = Some(
                    s.parse()
                        .ok()
                        .filter(|n| (1..=max).contains(n))
                        .ok_or_else(|| format!("ncpus={s}: a number of CPUs, 1 to {max}"))?,
                );
            }
            (k, Some(_)) if k.starts_with("ubd") => {
                if let Some(s) = um_drivers::block::ubd::parse(&w[3..], &mut c.ubd_sync)? {
                    c.ubd.push(s);
                }
            }
            // UML's guard against the ubd -> udb typo.
            (k, _) if k.starts_with("udb") => {
                return Err(format!("{w}: almost certainly a ubd -> udb typo"));
            }
            _ => return Err(format!("unknown option {w:?} (see linux --help)")),
        }
    }
    Ok(c)
}

/// A host directory mounted on a guest directory at boot (`bind=`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bind {
    pub host: PathBuf,
    pub guest: String,
    pub readonly: bool,
}

/// `HOST:GUEST[:ro|:rw]`: both absolute paths.
pub fn parse_bind(s: &str) -> Result<Bind, String> {
    let (rest, readonly) = match s.rsplit_once(':') {
        Some((r, "ro")) => (r, true),
        Some((r, "rw")) => (r, false),
        _ => (s, false),
    };
    let (host, guest) = rest
        .split_once(':')
        .ok_or_else(|| format!("bind={s}: use HOSTDIR:GUESTDIR[:ro]"))?;
    if !host.starts_with('/') || !guest.starts_with('/') || guest == "/" {
        return Err(format!(
            "bind={s}: both directories must be absolute paths (and not the guest's /)"
        ));
    }
    Ok(Bind {
        host: PathBuf::from(host),
        guest: guest.to_string(),
        readonly,
    })
}

/// The longest nodename: `__NEW_UTS_LEN` (include/uapi/linux/utsname.h), the field less its NUL.
const NEW_UTS_LEN: usize = um_uapi::abi::resource::UTS_LEN - 1;

/// A nodename cut to `__NEW_UTS_LEN` bytes on a character boundary, as Linux's
/// `early_hostname` truncates with `strscpy`.
pub fn truncate_nodename(s: &str) -> String {
    let mut end = s.len().min(NEW_UTS_LEN);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// Default of `prefault=`: 128 guest pages (512K at 4K pages, 2M at 16K): four times the C
/// port's window, since every fault costs a round trip through the kernel (and in the seccomp
/// engine one through the stub's mapper too) while a sequential writer touches every page of
/// it (about what THP gives it on Linux).
pub const DEFAULT_PREFAULT_PAGES: u64 = 128;

/// Default of `seccomp_spin=` (the C port's default).
pub const DEFAULT_SECCOMP_SPIN_US: u64 = 10;

/// `linux --help`.
pub const HELP: &str = "\
Usage: linux [options] [-- init arguments]

A Linux kernel that runs as an ordinary process. Options (User Mode Linux conventions):
  mem=SIZE              guest memory, with K/M/G suffix (default 256M)
  rootfstype=hostfs     root file system type (hostfs: a host directory)
  rootflags=DIR         the host directory that is the guest's root
  root=/dev/root        accepted for compatibility with UML's hostfs boot
  root=/dev/ubda        the root is the file system on a block device (with
                        rootfstype=ext4, ext3 or ext2, the default ext4; read-only:
                        ro is the default there, and rootflags= are mount options)
  rw | ro               mount the root read-write (default) or read-only
  init=PATH             the first program (default /sbin/init); words after a bare --
                        are its arguments
  con0=IN,OUT           console channels: fd:N or null (default fd:0,fd:1);
                        con0=null,fd:1 when stdin is not usable
  seccomp=on|auto|off   the seccomp engine: required, if available (default), or never
  pagesize=4K|16K       guest page size (arm64: 4K or 16K; x86_64: 4K); at least the
                        host's page size (default: the smallest that is)
  prefault=SIZE         fault-around window for sequential anonymous page faults
                        (default 128 pages: 512K, or 2M with 16K pages; more than
                        that has no effect; 0 disables)
  seccomp_spin=US       how long the seccomp handoff spins before it sleeps, in
                        microseconds (default 10; 0 = always sleep)
  nosysemu              ptrace engine without PTRACE_SYSEMU (cancel the call at the stop)
  nocancel              ptrace engine substituting getppid instead of cancelling (implies
                        nosysemu)
  ubd<n><flags>=FILE[,BACKING]
                        block device /dev/ubd<a+n> (n 0-15 or a-p; major 98, 16
                        minors: /dev/ubda1.. are partitions) on a host file; with
                        BACKING (or a FILE with a COW header), FILE is a UML COW v3
                        file over it, made if missing. Flags: r read-only, s O_SYNC,
                        d no COW detection, c shared (no host lock), t no discard
  ubd=sync              every ubd device opens its file O_SYNC
  stub_exe=PATH         write the stub executable to PATH and exec it from there (for hosts
                        that refuse exec of a memfd)
  eth0=user[,OPTS]      the virtual NIC eth0 (52:54:00:12:34:56) on the in-process
                        user-mode network (default; 10.0.2.15/24, gateway 10.0.2.2, DNS
                        10.0.2.3). OPTS, comma-separated: hostfwd=tcp:HOST:PORT-:PORT
                        and udp:..., hostloop=on, restrict=loopback, dns=IP[:PORT],
                        mtu=N (see README.md, Networking)
  eth0=passt[,OPTS]     eth0 on an external passt(1) process instead; OPTS: path=P
                        (default /usr/bin/passt), dns=gateway|host|none|IP (default
                        gateway: DNS to the host's 127.0.0.1:53), ipv6=on, mtu=N,
                        arg=PASST-ARGUMENT (repeatable)
  eth0=none             no eth0
  ip=dhcp|off           configure eth0 by DHCP at boot, as Linux's ipconfig (default
                        off); /proc/net/pnp shows the DNS servers. Static form:
                        ip=CLIENT::GW:NETMASK:HOSTNAME:eth0:off[:DNS0:DNS1]
  hostname=NAME         the hostname at boot (default: the root's /etc/hostname, else
                        the name of the rootflags= directory)
  ncpus=N               CPUs the guest sees (nproc, /proc/cpuinfo, affinity masks;
                        default: the host's); its threads still run on every host CPU
  bind=HOST:GUEST[:ro]  mount the host directory HOST on the guest directory GUEST at
                        boot (hostfs, confined to HOST; repeatable)
  log=PATH              also write the kernel log (all that dmesg shows, whatever the
                        loglevel) to the host file PATH (created or truncated)
  loglevel=N            kernel log verbosity (0-15, default 7); quiet = 4; debug = 10
  --help                this text
  --version             the version of linux and the Linux release it reports

  linux run [--bind HOST[:GUEST]] [OPTION...] ROOTFS [CMD...]
                        boot ROOTFS (a directory or a rootfs tarball) and run CMD in it
                        (default a login shell), with /proc, /sys, /dev/pts, /dev/shm and
                        /run mounted; linux exits with CMD's status (linux run --help)
";

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Cmdline, String> {
        parse(s.split_whitespace().map(String::from))
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256M").unwrap(), 256 << 20);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64K").unwrap(), 64 << 10);
        assert_eq!(parse_size("0x1000").unwrap(), 4096);
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
    }

    #[test]
    fn full_line() {
        let c = p("mem=512M rootfstype=hostfs rootflags=/r rw init=/bin/busybox con0=fd:0,fd:1 seccomp=off -- echo a b")
            .unwrap();
        assert_eq!(c.mem, 512 << 20);
        assert_eq!(c.rootflags.as_deref(), Some(std::path::Path::new("/r")));
        assert_eq!(c.init, "/bin/busybox");
        assert_eq!(c.init_args, vec!["echo", "a", "b"]);
        assert_eq!(c.seccomp, SeccompMode::Off);
        assert_eq!(
            (c.con_in, c.con_out),
            (ConChannel::Fd(0), ConChannel::Fd(1))
        );
        assert!(!c.readonly);
    }

    #[test]
    fn flags_and_channels() {
        let c = p("ro con0=null,fd:1 nocancel quiet").unwrap();
        assert!(c.readonly && c.nocancel && c.nosysemu);
        assert_eq!(c.con_in, ConChannel::Null);
        assert_eq!(c.loglevel, 4);
        assert!(p("--help").unwrap().help);
        // Words after -- are not options.
        assert_eq!(
            p("-- frobnicate=1").unwrap().init_args,
            vec!["frobnicate=1"]
        );
    }

    #[test]
    fn ubd_options() {
        let c = p("ubd0=/a.img ubd1rc=/c.cow,/b.img ubd=sync").unwrap();
        assert!(c.ubd_sync);
        assert_eq!(c.ubd.len(), 2);
        assert_eq!(c.ubd[0].file, std::path::Path::new("/a.img"));
        assert!(c.ubd[1].read_only && c.ubd[1].shared);
        assert_eq!(
            c.ubd[1].backing.as_deref(),
            Some(std::path::Path::new("/b.img"))
        );
        assert!(p("udb0=/a.img").unwrap_err().contains("typo"));
        assert!(p("ubd0x=/a.img").unwrap_err().contains("flag letter"));
        assert!(p("ubd16=/a.img").unwrap_err().contains("out of range"));
    }

    #[test]
    fn errors() {
        assert!(p("frobnicate=1").unwrap_err().contains("unknown option"));
        assert!(p("seccomp=maybe").is_err());
        assert_eq!(p("prefault=64K").unwrap().prefault, Some(64 << 10));
        assert_eq!(p("prefault=0").unwrap().prefault, Some(0));
        assert_eq!(p("").unwrap().prefault, None);
        assert!(p("prefault=1G").is_err());
        assert!(p("prefault=lots").is_err());
        assert_eq!(p("seccomp_spin=0").unwrap().seccomp_spin_us, 0);
        assert!(p("seccomp_spin=x").is_err());
        assert!(p("rootfstype=xfs").is_err());
        assert!(p("root=ubda").is_err());
        let c = p("root=/dev/ubda1 rootfstype=ext4 ro").unwrap();
        assert_eq!(c.root_dev.as_deref(), Some("ubda1"));
        assert_eq!(c.rootfstype.as_deref(), Some("ext4"));
        assert!(c.readonly && !c.rw_given);
        assert_eq!(p("root=/dev/root").unwrap().root_dev, None);
        assert!(p("con0=tty:1").is_err());
        assert!(p("init=relative").is_err());
        assert!(p("mem=").is_err());
        assert!(p("loglevel=x").is_err());
        assert!(p("nosysemu=1").is_err());
    }

    #[test]
    fn network() {
        use um_drivers::net::{Eth0, ipconfig::IpConfig};
        let c = p("").unwrap();
        assert_eq!((c.eth0, c.ip), (Eth0::User(String::new()), IpConfig::Off));
        let c = p("eth0=none ip=dhcp").unwrap();
        assert_eq!((c.eth0, c.ip), (Eth0::None, IpConfig::Dhcp));
        assert!(matches!(p("eth0=passt").unwrap().eth0, Eth0::Passt(_)));
        assert!(p("eth0=tap").unwrap_err().starts_with("eth0=tap: "));
        assert!(p("eth0=").is_err());
        assert!(p("ip=sometimes").unwrap_err().starts_with("ip=sometimes: "));
        assert!(p("eth0=passt,frob=1").is_err());
    }

    #[test]
    fn hostname() {
        assert_eq!(p("").unwrap().hostname, None);
        assert_eq!(p("hostname=box").unwrap().hostname.as_deref(), Some("box"));
        let b = p("bind=/h/x:/mnt/y:ro bind=/a:/b").unwrap().binds;
        assert_eq!(
            (b[0].host.to_str(), b[0].guest.as_str(), b[0].readonly),
            (Some("/h/x"), "/mnt/y", true)
        );
        assert!(!b[1].readonly);
        assert!(p("bind=/a").is_err());
        assert!(p("bind=a:/b").is_err());
        assert!(p("bind=/a:/").is_err());
        assert_eq!(p("ncpus=3").unwrap().ncpus, Some(3));
        assert_eq!(
            p("log=/tmp/k.log").unwrap().log.as_deref(),
            Some(std::path::Path::new("/tmp/k.log"))
        );
        assert!(p("log=").is_err());
        assert!(p("ncpus=0").is_err() && p("ncpus=65").is_err() && p("ncpus=x").is_err());
        assert!(p("hostname=").is_err());
        let long = "h".repeat(70);
        assert_eq!(
            p(&format!("hostname={long}"))
                .unwrap()
                .hostname
                .unwrap()
                .len(),
            64
        );
        assert_eq!(truncate_nodename(&"é".repeat(40)).len(), 64);
        assert_eq!(truncate_nodename(&format!("a{}", "é".repeat(40))).len(), 63);
    }

    #[test]
    fn pagesize() {
        assert_eq!(p("").unwrap().pagesize, None);
        assert_eq!(p("pagesize=4K").unwrap().pagesize, Some(4096));
        assert_eq!(p("pagesize=16K").unwrap().pagesize, Some(16384));
        assert_eq!(p("pagesize=16k").unwrap().pagesize, Some(16384));
        assert_eq!(p("pagesize=16384").unwrap().pagesize, Some(16384));
        let e = p("pagesize=8K").unwrap_err();
        assert!(e.starts_with("pagesize=8K: "), "{e}");
        assert!(p("pagesize=64K").is_err());
        assert!(p("pagesize=big").unwrap_err().starts_with("pagesize=big: "));
        assert!(p("pagesize=").is_err());
    }
}
