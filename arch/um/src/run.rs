//! `linux run`: the one-line way in (issue 25), `linux run ROOTFS [CMD...]`.
//!
//! It turns its arguments into an ordinary kernel command line and boots that in this process:
//! the root is ROOTFS through hostfs (a directory, or a rootfs tarball unpacked once into a
//! cache, with progress), or an ext2/3/4 image (`tools/mkimage` makes one) on `/dev/ubda`
//! through the kernel's own ext4, read-write (with `ro`: read-only, and a tmpfs on `/tmp`); init is the root's `/bin/sh` running a short script that mounts what a
//! booted system has (`/proc`, `/sys`, `/dev/pts`, `/dev/shm`, `/run`; `/dev` is the kernel's
//! devtmpfs) and then runs CMD (default: a login shell) as its child, so CMD's exit status is
//! init's and so `linux`'s, and ^C reaches CMD (init ignores the signals it has no handler for,
//! as on Linux). `--bind HOST[:GUEST]` mounts a host directory (default guest path `/host`)
//! through the kernel's `bind=` option. Words with `=` are kernel options (`seccomp=off`,
//! `mem=1G`, `eth0=...`), placed after the defaults so they win.
//!
//! How it maps: UML's `linux rootfstype=hostfs rootflags=DIR rw init=/bin/sh` plus the mounts;
//! proot's `proot -r DIR CMD` (and `-b HOST:GUEST`) as `linux run DIR CMD` (`--bind HOST:GUEST`).
//!
//! Neighbours: [`crate::cmdline`] parses what this builds; `main` calls [`args`] when the first
//! word is `run`.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `linux run --help`.
pub const HELP: &str = "\
Usage: linux run [--bind HOST[:GUEST]]... [KERNEL-OPTION...] ROOTFS [--] [CMD [ARG...]]

Boots ROOTFS and runs CMD in it (default: a login shell, /bin/sh -l); linux exits with CMD's
exit status. Before CMD runs, /proc, /sys, /dev (devtmpfs), /dev/pts, /dev/shm and /run are
mounted, as in a booted system.

  ROOTFS                a directory, or a rootfs tarball (.tar, .tar.gz/.tgz, .tar.xz,
                        .tar.bz2, .tar.zst), unpacked once into
                        $XDG_CACHE_HOME/um-linux/rootfs/ (else ~/.cache/...), or an
                        ext2/ext3/ext4 image (tools/mkimage makes one), mounted
                        read-write as /dev/ubda (with ro: read-only, a tmpfs on /tmp)
  --bind HOST[:GUEST]   mount the host directory HOST (relative: to the current
                        directory) at GUEST (default /host, made in the root if missing;
                        with an image: default /mnt, which must exist in it),
                        confined to HOST as the root is; repeatable; :ro at the end for
                        read-only
  KERNEL-OPTION         any word with '=' (or ro, nosysemu, nocancel, debug): an option of
                        linux itself (linux --help), e.g. seccomp=off, mem=1G, hostname=box
  --help                this text

The kernel log stays off the terminal (loglevel=0; dmesg in the guest shows it; give
loglevel=7 to see it). The same as UML's: linux rootfstype=hostfs rootflags=ROOTFS rw
loglevel=0 init=/bin/sh -- -c '<mounts>; CMD' (an image: ubd0=IMAGE root=/dev/ubda
rootfstype=ext4 rw instead of the hostfs words); as proot's `proot -r ROOTFS -b HOST:GUEST CMD`.
";

/// The kernel words of a bare flag that `linux run` passes through.
const FLAGS: &[&str] = &["ro", "rw", "quiet", "debug", "nosysemu", "nocancel"];

/// The init script: `$1` is the terminal type, the rest is CMD.
const SCRIPT: &str = r#"export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM="$1"
shift
mounted() { while read -r _ mp _; do [ "$mp" = "$1" ] && return 0; done </proc/mounts; return 1; }
mount -t proc proc /proc 2>/dev/null
mkdir -p /dev/pts /dev/shm 2>/dev/null
for m in sysfs:/sys devpts:/dev/pts tmpfs:/dev/shm tmpfs:/run; do
    [ -d "${m#*:}" ] && ! mounted "${m#*:}" && mount -t "${m%%:*}" "${m%%:*}" "${m#*:}" 2>/dev/null
done
while read -r _ mp _ o _; do
    [ "$mp" = / ] && case "$o" in ro|ro,*) mount -t tmpfs -o mode=1777 tmpfs /tmp 2>/dev/null;; esac
done </proc/mounts
cd "$HOME" 2>/dev/null || cd /
"$@"
"#;

/// The kernel command line for `linux run ARGS` (the words after `run`); `Ok(None)` when
/// `--help` was printed.
pub fn args(words: &[String]) -> Result<Option<Vec<String>>, String> {
    let mut kernel: Vec<String> = vec![];
    let mut binds: Vec<String> = vec![];
    let mut rootfs: Option<String> = None;
    let mut cmd: Vec<String> = vec![];
    let mut it = words.iter();
    while let Some(w) = it.next() {
        if rootfs.is_some() {
            if w == "--" {
                cmd.extend(it.by_ref().cloned());
                break;
            }
            if cmd.is_empty() && w.contains('=') && !w.starts_with('/') {
                kernel.push(w.clone());
                continue;
            }
            cmd.push(w.clone());
            cmd.extend(it.by_ref().cloned());
            break;
        }
        match w.as_str() {
            "--help" | "-h" => {
                let _ = std::io::stdout().write_all(HELP.as_bytes());
                return Ok(None);
            }
            "--bind" | "-b" => {
                let v = it.next().ok_or("run: --bind needs HOST[:GUEST]")?;
                binds.push(v.clone());
            }
            "--" => return Err("run: no ROOTFS before -- (see linux run --help)".into()),
            _ if w.starts_with("--bind=") => binds.push(w["--bind=".len()..].to_string()),
            _ if w.starts_with('-') => {
                return Err(format!("run: unknown option {w:?} (see linux run --help)"));
            }
            _ if FLAGS.contains(&w.as_str()) || (w.contains('=') && !w.starts_with('/')) => {
                kernel.push(w.clone());
            }
            _ => rootfs = Some(w.clone()),
        }
    }
    let rootfs = rootfs.ok_or("run: no ROOTFS (see linux run --help)")?;
    let mut out = match root_of(Path::new(&rootfs))? {
        Root::Dir(root) => {
            let mut out = vec![
                "rootfstype=hostfs".to_string(),
                format!("rootflags={}", root.display()),
                "rw".into(),
            ];
            for b in &binds {
                out.push(format!("bind={}", bind_word(Some(&root), b)?));
            }
            out
        }
        Root::Image(image) => {
            // Read-write as UML's `ubd0=`, unless the user said `ro`: then the disk too
            // (ubd's `r` flag), so nothing can write the image. fs/ext4 writes without a
            // journal and refuses `rw` on what it cannot keep consistent (the mount then
            // fails with EROFS and one log line: give `ro`).
            let ro = kernel.iter().any(|w| w == "ro");
            let mut out = vec![
                format!("ubd0{}={}", if ro { "r" } else { "" }, image.display()),
                "root=/dev/ubda".into(),
                "rootfstype=ext4".into(),
                if ro { "ro" } else { "rw" }.into(),
            ];
            for b in &binds {
                out.push(format!("bind={}", bind_word(None, b)?));
            }
            out
        }
    };
    // The user sees CMD, not the kernel: its log (init's exit is logged as Linux's
    // "Attempted to kill init!" panic) stays in the ring for dmesg; loglevel=7 shows it.
    out.push("loglevel=0".into());
    out.push("init=/bin/sh".into());
    out.extend(kernel);
    if cmd.is_empty() {
        cmd = vec!["/bin/sh".into(), "-l".into()];
    }
    let term = std::env::var("TERM").unwrap_or_else(|_| "linux".into());
    out.extend([
        "--".into(),
        "-c".into(),
        SCRIPT.into(),
        "linux-run".into(),
        term,
    ]);
    out.extend(cmd);
    Ok(Some(out))
}

/// `HOST[:GUEST][:ro]` as `bind=`'s `HOST:GUEST[:ro]`, HOST made absolute and GUEST made in
/// the root directory (a directory; no symlink on the way, so nothing is made outside the
/// root). With an image (`root` None) GUEST defaults to `/mnt` and must exist in it: the
/// kernel says so at boot if not.
fn bind_word(root: Option<&Path>, spec: &str) -> Result<String, String> {
    let (spec, ro) = match spec.strip_suffix(":ro") {
        Some(s) => (s, true),
        None => (spec, false),
    };
    let (host, guest) = match spec.split_once(':') {
        Some((h, g)) => (h, g),
        None => (spec, if root.is_some() { "/host" } else { "/mnt" }),
    };
    if host.is_empty() || !guest.starts_with('/') || guest == "/" {
        return Err(format!(
            "run: --bind {spec}: use HOST[:GUEST] with GUEST absolute and not /"
        ));
    }
    let host = std::fs::canonicalize(host).map_err(|e| format!("run: --bind {host}: {e}"))?;
    if !host.is_dir() {
        return Err(format!("run: --bind {}: not a directory", host.display()));
    }
    let mut at = root.map(Path::to_path_buf);
    for c in guest.split('/').filter(|c| !c.is_empty()) {
        if c == "." || c == ".." {
            return Err(format!("run: --bind ...:{guest}: no . or .. in GUEST"));
        }
        let Some(at) = at.as_mut() else { continue };
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(format!(
                    "run: --bind ...:{guest}: {} is not a directory in the root",
                    at.display()
                ));
            }
            Err(_) => std::fs::create_dir(&*at).map_err(|e| {
                format!("run: --bind ...:{guest}: cannot make {}: {e}", at.display())
            })?,
        }
    }
    Ok(format!(
        "{}:{guest}{}",
        host.display(),
        if ro { ":ro" } else { "" }
    ))
}

/// The compression flag of GNU tar for a tarball's name; `None`: not a tarball name.
fn tar_flag(name: &str) -> Option<&'static str> {
    let n = name.to_ascii_lowercase();
    [
        (".tar", ""),
        (".tar.gz", "-z"),
        (".tgz", "-z"),
        (".tar.xz", "-J"),
        (".txz", "-J"),
        (".tar.bz2", "-j"),
        (".tar.zst", "--zstd"),
    ]
    .iter()
    .find(|(ext, _)| n.ends_with(ext))
    .map(|(_, f)| *f)
}

/// What ROOTFS names.
#[derive(Debug, PartialEq, Eq)]
enum Root {
    /// A directory to boot through hostfs (ROOTFS itself or an unpacked tarball).
    Dir(PathBuf),
    /// An ext2/3/4 image file.
    Image(PathBuf),
}

/// Whether the file at `p` holds an ext2/3/4 superblock: the magic 0xEF53 at byte 56 of the
/// superblock, which starts at byte 1024 (Linux `fs/ext4/ext4.h` `struct ext4_super_block`,
/// `EXT4_SUPER_MAGIC`). The kernel checks the rest when it mounts the image.
fn is_ext_image(p: &Path) -> bool {
    use std::io::{Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(p) else {
        return false;
    };
    let mut magic = [0u8; 2];
    f.seek(SeekFrom::Start(1024 + 56)).is_ok()
        && f.read_exact(&mut magic).is_ok()
        && u16::from_le_bytes(magic) == 0xef53
}

/// What to boot: ROOTFS itself (a directory or an image), or the cache directory of the
/// unpacked tarball.
fn root_of(p: &Path) -> Result<Root, String> {
    let meta = std::fs::metadata(p).map_err(|e| format!("run: {}: {e}", p.display()))?;
    let canon = || std::fs::canonicalize(p).map_err(|e| format!("run: {}: {e}", p.display()));
    if meta.is_dir() {
        return Ok(Root::Dir(canon()?));
    }
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(flag) = tar_flag(&name) else {
        if meta.is_file() && is_ext_image(p) {
            return Ok(Root::Image(canon()?));
        }
        return Err(format!(
            "run: {}: not a directory, a rootfs tarball (.tar, .tar.gz, .tar.xz, ...) or an \
             ext2/3/4 image (tools/mkimage makes one)",
            p.display()
        ));
    };
    let abs = std::fs::canonicalize(p).map_err(|e| format!("run: {}: {e}", p.display()))?;
    // The cache key: the tarball's path, size and modification time (FNV-1a: stable across
    // builds, unlike std's hasher).
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let key = format!("{}\0{}\0{}", abs.display(), meta.len(), mtime);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let stem = name
        .split(".t")
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("rootfs");
    let cache = cache_dir()?.join(format!("{stem}-{h:016x}"));
    if cache.is_dir() {
        return Ok(Root::Dir(cache));
    }
    let parent = cache.parent().ok_or("run: no cache directory")?;
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("run: cannot make {}: {e}", parent.display()))?;
    let tmp = parent.join(format!(".unpack-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp).map_err(|e| format!("run: cannot make {}: {e}", tmp.display()))?;
    let r = unpack(&abs, flag, meta.len(), &tmp);
    if let Err(e) = r {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    // Another `linux run` may have finished the same tarball first: then use its tree.
    if std::fs::rename(&tmp, &cache).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
        if !cache.is_dir() {
            return Err(format!(
                "run: cannot move the tree into {}",
                cache.display()
            ));
        }
    }
    Ok(Root::Dir(cache))
}

/// `$XDG_CACHE_HOME/um-linux/rootfs`, else `$HOME/.cache/um-linux/rootfs`.
fn cache_dir() -> Result<PathBuf, String> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .ok_or("run: neither XDG_CACHE_HOME nor HOME is set (the tarball cache)")?,
        )
        .join(".cache"),
    };
    Ok(base.join("um-linux").join("rootfs"))
}

/// Unpacks `tarball` into `dir` with the host's tar, fed from here so the progress can be shown
/// (a percentage on a terminal, a line at the start and the end otherwise).
fn unpack(tarball: &Path, flag: &str, size: u64, dir: &Path) -> Result<(), String> {
    let mut f =
        std::fs::File::open(tarball).map_err(|e| format!("run: {}: {e}", tarball.display()))?;
    let mut tar = Command::new("tar");
    tar.arg("-x");
    if !flag.is_empty() {
        tar.arg(flag);
    }
    let mut child = tar
        .arg("-f")
        .arg("-")
        .arg("-C")
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("run: cannot start tar (needed to unpack a tarball): {e}"))?;
    let tty = std::io::stderr().is_terminal();
    let mib = |n: u64| n as f64 / (1 << 20) as f64;
    eprintln!(
        "linux run: unpacking {} ({:.1} MiB) into {}",
        tarball.display(),
        mib(size),
        dir.parent().unwrap_or(dir).display()
    );
    let mut stdin = child.stdin.take().ok_or("run: tar has no stdin")?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut done, mut shown) = (0u64, 101u64);
    let fed = loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => n,
            Err(e) => break Err(format!("run: reading {}: {e}", tarball.display())),
        };
        if let Err(e) = stdin.write_all(&buf[..n]) {
            break Err(format!("run: tar stopped reading: {e}"));
        }
        done += n as u64;
        let pct = done * 100 / size.max(1);
        if tty && pct != shown {
            shown = pct;
            eprint!(
                "\rlinux run: {pct:3}% ({:.1} / {:.1} MiB)",
                mib(done),
                mib(size)
            );
        }
    };
    drop(stdin);
    let st = child
        .wait()
        .map_err(|e| format!("run: waiting for tar: {e}"))?;
    if tty {
        eprintln!();
    }
    fed?;
    if !st.success() {
        return Err(format!("run: tar failed on {} ({st})", tarball.display()));
    }
    eprintln!("linux run: unpacked");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn words_and_defaults() {
        let d = std::env::temp_dir();
        let dir = d.to_str().unwrap();
        let w = args(&s(&["seccomp=off", dir, "mem=1G", "ls", "-l", "x=y"]))
            .unwrap()
            .unwrap();
        let canon = std::fs::canonicalize(&d).unwrap();
        assert_eq!(w[1], format!("rootflags={}", canon.display()));
        assert!(w.contains(&"seccomp=off".to_string()) && w.contains(&"mem=1G".to_string()));
        // CMD starts at the first word without '=' after ROOTFS and takes the rest verbatim.
        assert_eq!(&w[w.len() - 3..], &s(&["ls", "-l", "x=y"])[..]);
        let w = args(&s(&[dir])).unwrap().unwrap();
        assert_eq!(&w[w.len() - 2..], &s(&["/bin/sh", "-l"])[..]);
        let w = args(&s(&[dir, "--", "a=b"])).unwrap().unwrap();
        assert_eq!(w.last().unwrap(), "a=b");
    }

    #[test]
    fn bad_input() {
        assert!(args(&s(&[])).unwrap_err().contains("no ROOTFS"));
        assert!(
            args(&s(&["--frob"]))
                .unwrap_err()
                .contains("unknown option")
        );
        assert!(args(&s(&["/nonexistent-um-root"])).is_err());
        assert!(args(&s(&["--bind"])).unwrap_err().contains("needs"));
        let f = std::env::temp_dir().join(format!("um-run-test-{}.img", std::process::id()));
        std::fs::write(&f, b"x").unwrap();
        let e = args(&s(&[f.to_str().unwrap()])).unwrap_err();
        assert!(e.contains("not a directory, a rootfs tarball"), "{e}");
        let _ = std::fs::remove_file(&f);
    }

    #[test]
    fn image_by_its_superblock_magic() {
        let f = std::env::temp_dir().join(format!("um-run-img-{}.raw", std::process::id()));
        let mut b = vec![0u8; 4096];
        std::fs::write(&f, &b).unwrap();
        assert!(!is_ext_image(&f), "zeros are no image");
        b[1024 + 56..1024 + 58].copy_from_slice(&0xef53u16.to_le_bytes());
        std::fs::write(&f, &b).unwrap();
        assert!(is_ext_image(&f));
        let w = args(&s(&[f.to_str().unwrap(), "true"])).unwrap().unwrap();
        let canon = std::fs::canonicalize(&f).unwrap();
        assert_eq!(w[0], format!("ubd0={}", canon.display()));
        assert!(
            w[1..4] == s(&["root=/dev/ubda", "rootfstype=ext4", "rw"]),
            "{w:?}"
        );
        let w = args(&s(&["ro", f.to_str().unwrap(), "true"]))
            .unwrap()
            .unwrap();
        assert_eq!(w[0], format!("ubd0r={}", canon.display()));
        assert_eq!(w[3], "ro");
        // With an image, GUEST is not made on the host: /mnt by default.
        let host = std::env::temp_dir();
        assert!(
            bind_word(None, host.to_str().unwrap())
                .unwrap()
                .ends_with(":/mnt")
        );
        std::fs::write(&f, &b[..1000]).unwrap();
        assert!(!is_ext_image(&f), "too short");
        let _ = std::fs::remove_file(&f);
    }

    #[test]
    fn tarball_names() {
        assert_eq!(
            tar_flag("alpine-minirootfs-3.20.3-x86_64.tar.gz"),
            Some("-z")
        );
        assert_eq!(tar_flag("r.TAR.XZ"), Some("-J"));
        assert_eq!(tar_flag("r.tar"), Some(""));
        assert_eq!(tar_flag("r.img"), None);
    }

    #[test]
    fn bind_made_in_root_without_leaving_it() {
        let root = std::env::temp_dir().join(format!("um-run-root-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::os::unix::fs::symlink("/tmp", root.join("link")).unwrap();
        let host = std::env::temp_dir();
        let h = host.to_str().unwrap();
        let w = bind_word(Some(&root), h).unwrap();
        assert!(w.ends_with(":/host") && root.join("host").is_dir(), "{w}");
        assert!(
            bind_word(Some(&root), &format!("{h}:/mnt/x:ro"))
                .unwrap()
                .ends_with(":/mnt/x:ro")
        );
        assert!(
            bind_word(Some(&root), &format!("{h}:/link/x")).is_err(),
            "through a symlink"
        );
        assert!(bind_word(Some(&root), &format!("{h}:/")).is_err());
        assert!(bind_word(Some(&root), "/nonexistent-um:/x").is_err());
        let _ = std::fs::remove_dir_all(&root);
    }
}
