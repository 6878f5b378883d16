//! Gate: file ownership in the guest on hostfs (issue 7, deliverable 3; `fs/src/hostfs_meta.rs`).
//!
//! On a private copy of the Alpine rootfs (without `/opt`), a first boot as guest root makes
//! files and directories, chowns them to several users and groups, chmods 4755, 2775, 1777 and
//! 0640, mknods a character device (1,3, the null driver) and a FIFO, chowns a symlink, and
//! checks `stat -c` and `ls -ln`; it uses them (writes to the emulated null node, passes a line
//! through the FIFO between two processes), runs `su nobody` to create a file that must be
//! nobody's, checks that guest permissions follow the guest owners (nobody cannot read a
//! root:42 0640 file, nor remove root's file from a sticky directory), and that a setgid
//! directory hands its group (and, to directories, its setgid bit) down. A second boot on the
//! same tree (the reboot) checks that everything is as it was set, then that rename and link
//! carry the metadata, that chown and an unprivileged write clear setuid, and that the
//! metadata store is invisible and cannot be created by the guest. Between and after the
//! boots the host side is checked: the host owner of every file is the host user running
//! `linux` (never a guest id), host modes keep the host user in and carry no setuid/sticky,
//! and the metadata is on the host (the `user.um.stat` xattr, read with python3's
//! `os.getxattr`; the symlink's owner in the `.um-meta` sidecar, removed again with the link).
//!
//! All of it runs once with `linux` as the user running the gate (root in CI) and once as a
//! non-root host user (uid/gid 65534, through `setpriv`, on a copy chowned to it, with a copy
//! of the `linux` binary it can execute), in every engine of [`ENGINES`]. The guest must see
//! the same in both. Run by a non-root user, the gate runs only the second half, as that user.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use um_tests::{Boot, ENGINES, Outcome, linux_binary, rootfs, workspace_root};

const PHASE1_MARKER: &str = "UM-OWNERSHIP-1-DONE";
const PHASE2_MARKER: &str = "UM-OWNERSHIP-2-DONE";
/// The non-root host user of the second half.
const NOBODY: u32 = 65534;

/// Shell helpers both boots use.
const COMMON: &str = r#"
S() { for f in "$@"; do stat -c 'STAT %n %u:%g %a %F %t,%T' "$f"; done; }
L() { ls -ln --color=never "$@" | sed 's/^/LS /'; }
nob() { su -s /bin/sh nobody -c "$1"; }
"#;

/// The first boot: make everything, check it, use it.
const PHASE1: &str = r#"
umask 022
mkdir /gate && cd /gate || { echo "FAIL cannot make /gate"; exit 1; }
echo data > f1 && chown 1000:1000 f1
echo secret > shadow && chown 0:42 shadow && chmod 0640 shadow
mkdir man && chown 6:12 man && chmod 0755 man
mkdir sg && chown 9:13 sg && chmod 2775 sg
echo '#!/bin/sh' > suid && chmod 4755 suid
mkdir sticky && chmod 1777 sticky
mknod null c 1 3 && chmod 0666 null
mkfifo fifo
ln -s f1 link && chown -h 5:6 link
touch sg/file && mkdir sg/dir
nob 'echo n > /gate/sticky/bynobody' || echo "FAIL nobody cannot create in a 1777 directory"
touch sticky/rootfile
S f1 shadow man sg suid sticky null fifo link sg/file sg/dir sticky/bynobody
L
echo hello > null && echo "NULLREAD $(wc -c < null)"
( echo through-fifo > fifo & ) ; echo "FIFO $(cat fifo)"
nob 'cat /gate/shadow' >/dev/null 2>&1 && echo "PERM shadow readable" || echo "PERM shadow denied"
nob 'echo x >> /gate/f1' 2>/dev/null && echo "PERM f1 writable" || echo "PERM f1 denied"
nob 'rm -f /gate/sticky/rootfile' 2>/dev/null; [ -e sticky/rootfile ] && echo "PERM sticky protects" || echo "PERM sticky lost"
echo mine > own && chown 65534:65534 own && chmod 0600 own
nob 'cat /gate/own' | sed 's/^/PERM own reads /'
echo UM-OWNERSHIP-1-DONE
"#;

/// The second boot, on the same tree: everything survived; then rename, link, setuid rules,
/// the hidden store.
const PHASE2: &str = r#"
cd /gate || { echo "FAIL no /gate after the reboot"; exit 1; }
S f1 shadow man sg suid sticky null fifo link sg/file sg/dir sticky/bynobody
L
echo hello > null && echo "NULLREAD $(wc -c < null)"
( echo through-fifo > fifo & ) ; echo "FIFO $(cat fifo)"
nob 'cat /gate/shadow' >/dev/null 2>&1 && echo "PERM shadow readable" || echo "PERM shadow denied"
mv shadow shadow2 && ln shadow2 shadow3 && stat -c 'MOVED %n %u:%g %a' shadow2 shadow3
chown 65534:65534 suid && stat -c 'CHOWNED %a' suid
chmod 4755 suid && stat -c 'CHMODDED %u %a' suid
nob 'echo x >> /gate/suid' && stat -c 'WRITTEN %a' suid
chmod 4755 suid && echo y >> suid && stat -c 'ROOTWRITE %a' suid
echo "HIDDEN $(ls -a / | grep -c um-meta)"
touch /.um-meta 2>/dev/null && echo "RESERVED created" || echo "RESERVED refused"
rm link fifo && echo "REMOVED"
echo UM-OWNERSHIP-2-DONE
"#;

/// `STAT` lines both boots must print (the guest's view of what the first boot made).
const STATS: &[&str] = &[
    "STAT f1 1000:1000 644 regular file 0,0",
    "STAT shadow 0:42 640 regular file 0,0",
    "STAT man 6:12 755 directory 0,0",
    "STAT sg 9:13 2775 directory 0,0",
    "STAT suid 0:0 4755 regular file 0,0",
    "STAT sticky 0:0 1777 directory 0,0",
    "STAT null 0:0 666 character special file 1,3",
    "STAT fifo 0:0 644 fifo 0,0",
    "STAT link 5:6 777 symbolic link 0,0",
    "STAT sg/file 0:13 644 regular empty file 0,0",
    "STAT sg/dir 0:13 2755 directory 0,0",
    "STAT sticky/bynobody 65534:65534 644 regular file 0,0",
];

/// `ls -ln`: name, mode string, owner, group.
const LS: &[(&str, &str, &str, &str)] = &[
    ("f1", "-rw-r--r--", "1000", "1000"),
    ("shadow", "-rw-r-----", "0", "42"),
    ("man", "drwxr-xr-x", "6", "12"),
    ("sg", "drwxrwsr-x", "9", "13"),
    ("suid", "-rwsr-xr-x", "0", "0"),
    ("sticky", "drwxrwxrwt", "0", "0"),
    ("null", "crw-rw-rw-", "0", "0"),
    ("fifo", "prw-r--r--", "0", "0"),
    ("link", "lrwxrwxrwx", "5", "6"),
];

/// Other lines each boot must print.
const PHASE1_LINES: &[&str] = &[
    "NULLREAD 0",
    "FIFO through-fifo",
    "PERM shadow denied",
    "PERM f1 denied",
    "PERM sticky protects",
    "PERM own reads mine",
];
const PHASE2_LINES: &[&str] = &[
    "NULLREAD 0",
    "FIFO through-fifo",
    "PERM shadow denied",
    "MOVED shadow2 0:42 640",
    "MOVED shadow3 0:42 640",
    // chown(2) of a non-directory clears setuid; an unprivileged write clears it; root's
    // write does not (should_remove_suid).
    "CHOWNED 755",
    "CHMODDED 65534 4755",
    "WRITTEN 755",
    "ROOTWRITE 4755",
    "HIDDEN 0",
    "RESERVED refused",
    "REMOVED",
];

/// Console lines, without the tty's `\r`.
fn lines(out: &Outcome) -> Vec<String> {
    out.stdout
        .lines()
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect()
}

fn check_guest(out: &Outcome, phase: u32, what: &str) {
    let (marker, extra) = if phase == 1 {
        (PHASE1_MARKER, PHASE1_LINES)
    } else {
        (PHASE2_MARKER, PHASE2_LINES)
    };
    out.assert_ok(marker);
    let got = lines(out);
    let mut missing: Vec<String> = STATS
        .iter()
        .chain(extra)
        .filter(|want| !got.iter().any(|l| l == *want))
        .map(|s| s.to_string())
        .collect();
    for (name, m, u, g) in LS {
        let ok = got.iter().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.first() == Some(&"LS")
                && f.len() > 5
                && f[1] == *m
                && f[3] == *u
                && f[4] == *g
                && (f.last() == Some(name) || f.len() > 3 && f[f.len() - 3] == *name)
        });
        if !ok {
            missing.push(format!("LS {m} . {u} {g} ... {name}"));
        }
    }
    let fails: Vec<&String> = got.iter().filter(|l| l.starts_with("FAIL")).collect();
    if !missing.is_empty() || !fails.is_empty() {
        panic!(
            "{what}, boot {phase}: the guest does not see what it set.\nmissing lines:\n  {}\n\
             failures:\n  {}\n{}",
            missing.join("\n  "),
            fails
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n  "),
            out.report()
        );
    }
}

/// A scratch tree: removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(cmd: &mut Command) {
    let st = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(st.success(), "{cmd:?} failed: {st}");
}

/// A copy of the rootfs without `/opt` (the LTP and guest programs: large and not needed).
fn copy_rootfs(dest: &Path) {
    std::fs::create_dir_all(dest).expect("create the scratch rootfs");
    let src = rootfs();
    let mut cp = Command::new("cp");
    cp.arg("-a");
    for e in std::fs::read_dir(&src).expect("read the rootfs") {
        let e = e.expect("rootfs entry");
        if e.file_name() != "opt" {
            cp.arg(e.path());
        }
    }
    cp.arg(dest);
    run(&mut cp);
    std::fs::create_dir_all(dest.join("opt")).expect("mkdir opt");
}

/// What the host says about one file of the tree: owner, group, mode, size, and the
/// `user.um.stat` xattr (python3's `os.getxattr`, no follow).
#[derive(Debug)]
struct HostView {
    uid: u32,
    gid: u32,
    mode: u32,
    size: u64,
    xattr: Option<String>,
}

fn host_view(root: &Path, names: &[&str]) -> Vec<HostView> {
    let code = "import os, sys\n\
                for p in sys.argv[1:]:\n\
                \x20   try:\n\
                \x20       print(os.getxattr(p, 'user.um.stat', follow_symlinks=False).decode())\n\
                \x20   except OSError as e:\n\
                \x20       print('-', e.errno)\n";
    let paths: Vec<PathBuf> = names.iter().map(|n| root.join("gate").join(n)).collect();
    let out = Command::new("python3")
        .arg("-c")
        .arg(code)
        .args(&paths)
        .output()
        .unwrap_or_else(|e| panic!("python3 (to read host xattrs) cannot run: {e}"));
    assert!(out.status.success(), "python3 failed: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    paths
        .iter()
        .zip(text.lines())
        .map(|(p, x)| {
            let md = std::fs::symlink_metadata(p)
                .unwrap_or_else(|e| panic!("host stat {}: {e}", p.display()));
            HostView {
                uid: md.uid(),
                gid: md.gid(),
                mode: md.mode(),
                size: md.size(),
                xattr: (!x.starts_with("- ")).then(|| x.to_string()),
            }
        })
        .collect()
}

/// Host-side checks after boot `phase`: the host owner is the host user, host modes keep
/// the host user in, and the guest's metadata is stored on the host.
fn check_host(root: &Path, host_ids: (u32, u32), phase: u32, what: &str) {
    let names = ["f1", "sg", "null", "sticky", "sg/dir", "sticky/bynobody"];
    let v = host_view(root, &names);
    let ctx = format!("{what}, host side after boot {phase}");
    for (n, h) in names.iter().zip(&v) {
        assert_eq!(
            (h.uid, h.gid),
            host_ids,
            "{ctx}: {n} must stay owned by the host user: {h:?}"
        );
        assert_eq!(
            h.mode & 0o7022,
            0,
            "{ctx}: {n}: host mode with setuid/setgid/sticky or group/other write: {h:?}"
        );
    }
    let xattrs = v[0].xattr.is_some();
    let sidecar = root.join(".um-meta");
    if xattrs {
        let want = [
            "1000:1000:0644:file",
            "9:13:02775:dir",
            "0:0:0666:char-1-3",
            "0:0:01777:dir",
            "0:13:02755:dir",
            "65534:65534:0644:file",
        ];
        for ((n, h), w) in names.iter().zip(&v).zip(want) {
            assert_eq!(h.xattr.as_deref(), Some(w), "{ctx}: user.um.stat of {n}");
        }
        // The emulated node is an empty regular host file, never a host device.
        assert_eq!(
            v[2].mode & 0o170000,
            0o100000,
            "{ctx}: null on the host: {:?}",
            v[2]
        );
        assert_eq!(
            v[2].size, 0,
            "{ctx}: the write to null reached the host file"
        );
        assert_eq!(
            v[1].mode & 0o7777,
            0o755,
            "{ctx}: host mode of sg (guest 2775)"
        );
        // The symlink's owner is in the sidecar while the link exists, and goes with it.
        let text = std::fs::read_to_string(&sidecar).unwrap_or_default();
        if phase == 1 {
            assert!(
                text.lines().any(|l| l.ends_with(" 5:6:0777:symlink")),
                "{ctx}: no sidecar entry for the chowned symlink in {}:\n{text}",
                sidecar.display()
            );
        } else {
            assert!(
                !sidecar.exists(),
                "{ctx}: the sidecar should be gone with the last entry:\n{text}"
            );
        }
    } else {
        // A host file system without user xattrs: everything is in the sidecar.
        let text = std::fs::read_to_string(&sidecar).unwrap_or_else(|e| {
            panic!(
                "{ctx}: no user.um.stat xattr on {} and no sidecar {}: {e}",
                root.join("gate/f1").display(),
                sidecar.display()
            )
        });
        assert!(
            text.lines().any(|l| l.ends_with(" 0:0:0666:char-1-3")),
            "{ctx}: the sidecar lacks the null node:\n{text}"
        );
        eprintln!("um-tests: {ctx}: the host takes no user xattrs here; the sidecar was used");
    }
}

/// Both boots on a fresh copy, as the current user (`as_nobody` false) or as [`NOBODY`].
fn scenario(engine: &[&str], scratch: &Path, as_nobody: bool) {
    let what = format!(
        "engine `{}`, linux run by {}",
        engine.join(" "),
        if as_nobody {
            format!("uid {NOBODY}")
        } else {
            format!("uid {}", euid())
        }
    );
    let root = scratch.join("root");
    copy_rootfs(&root);
    let (bin, host_ids) = if as_nobody {
        // A copy of the binary the non-root user can reach (the workspace may not be).
        let bin = scratch.join("linux");
        std::fs::copy(linux_binary(), &bin).expect("copy linux");
        run(Command::new("chown")
            .args(["-R", "-h", &format!("{NOBODY}:{NOBODY}")])
            .arg(scratch));
        run(Command::new("chmod").arg("0755").arg(scratch).arg(&bin));
        (bin, (NOBODY, NOBODY))
    } else {
        let md = std::fs::metadata(&root).expect("stat the scratch rootfs");
        (linux_binary(), (md.uid(), md.gid()))
    };
    for (phase, script) in [(1, PHASE1), (2, PHASE2)] {
        let full = format!("{COMMON}{script}");
        let boot = Boot::new()
            .engine(engine)
            .rootflags(&root.display().to_string())
            .init("/bin/busybox")
            .args(&["sh", "-c", full.as_str()]);
        let boot = if as_nobody {
            boot.binary(&bin).wrapper(&[
                "setpriv".to_string(),
                format!("--reuid={NOBODY}"),
                format!("--regid={NOBODY}"),
                "--clear-groups".into(),
                "--".into(),
            ])
        } else {
            boot
        };
        let out = boot.run();
        check_guest(&out, phase, &what);
        check_host(&root, host_ids, phase, &what);
    }
}

/// This process's effective uid (the owner of `/proc/self`).
fn euid() -> u32 {
    std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

/// A fresh scratch directory for one scenario. The non-root half lives in the temporary
/// directory, which every user can reach.
fn scratch_dir(tag: &str, world: bool) -> Scratch {
    let base = if world {
        std::env::temp_dir()
    } else {
        workspace_root().join("build")
    };
    let dir = base.join(format!("um-ownership-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    Scratch(dir)
}

#[test]
fn guest_ownership_survives_reboot_as_root_and_non_root_host() {
    let root_host = euid() == 0;
    if !root_host {
        eprintln!(
            "um-tests: not root: the half with `linux` run by root and the switch to uid \
             {NOBODY} need root; running the non-root half as this user"
        );
    }
    for (i, engine) in ENGINES.iter().enumerate() {
        eprintln!("um-tests: engine: {}", engine.join(" "));
        let s = scratch_dir(&format!("{i}-a"), !root_host);
        scenario(engine, &s.0, false);
        drop(s);
        if root_host {
            let s = scratch_dir(&format!("{i}-b"), true);
            scenario(engine, &s.0, true);
        }
    }
}
