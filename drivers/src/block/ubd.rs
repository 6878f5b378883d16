//! User Mode Linux's block driver (`arch/um/drivers/ubd_kern.c`): `ubd<n><flags>=file[,backing]`
//! on the command line makes `/dev/ubd<a+n>` (block major 98, 16 minors per disk, so
//! `/dev/ubda1` .. `/dev/ubda15` for partitions) on a host file.
//!
//! Syntax and semantics as UML's: `<n>` is `0`..`15` or a letter `a`..`p`; flags `r` (read
//! only), `s` (host `O_SYNC`), `d` (no COW detection: the file is the disk even if it looks
//! like a COW file), `c` (shared: no host lock), `t` (no discard); `ubd=sync` makes every
//! device `s`. `file,backing` (or `file:backing`) is a COW file over a backing file; the COW
//! file is made (UML's layout, 512-byte sectors, 4096 alignment) when it does not exist. A
//! single file that starts with a COW header is a COW file over the backing file named in
//! the header. The backing file's size and mtime must match the header, or the boot stops
//! with one line (`backing_file_mismatch`); a backing file given on the command line that
//! is not the one in the header replaces it in the header when size and mtime match
//! (`path_requires_switch`).
//!
//! Unless `c`, the file written (the disk file, or the COW file) is locked on the host for
//! writing and a backing file for reading (`os_lock_file`; open-file-description locks here),
//! so a second kernel on the same image stops with one line. Flush (`fsync`, `BLKFLSBUF`,
//! `sync`) is `fsync` of the file written, never of the backing file; discard punches a hole
//! (`FALLOC_FL_PUNCH_HOLE`). In a COW disk a write goes to the COW file's data area and then
//! sets the sectors' bits in the on-disk bitmap (data first, as `ubd_kern.c`); a partial
//! sector not yet in the COW file is first copied from the backing file. The backing file
//! is only ever read.
//!
//! [`configure`] parses and opens everything before the boot prints anything (bad input:
//! one `linux: error:` line, exit 2); [`add_all`] adds the disks once devtmpfs is up.

use super::cow::{self, CowHeader};
use super::{Backend, SECTOR};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use um_kernel::task::lock;
use um_os_linux::{blockio, hostdir};
use um_uapi::abi::blkdev::{UBD_MAJOR, UBD_MAX_DEV, UBD_SHIFT};

/// One `ubd<n><flags>=...` option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UbdSpec {
    pub n: u32,
    pub read_only: bool,
    pub sync: bool,
    pub no_cow: bool,
    pub shared: bool,
    pub no_trim: bool,
    pub file: PathBuf,
    pub backing: Option<PathBuf>,
}

/// Parses the text after `ubd` of one option (`ubd_setup_common`): `0=disk.img`,
/// `1rc=cow,backing`; `=sync` returns `Ok(None)` and sets `global_sync`.
pub fn parse(rest: &str, global_sync: &mut bool) -> Result<Option<UbdSpec>, String> {
    if let Some(v) = rest.strip_prefix('=') {
        if v == "sync" {
            *global_sync = true;
            return Ok(None);
        }
        return Err(format!("ubd={v}: only ubd=sync is supported"));
    }
    let b = rest.as_bytes();
    let (n, mut i) = if b.first().is_some_and(u8::is_ascii_digit) {
        let end = b
            .iter()
            .position(|c| !c.is_ascii_digit())
            .unwrap_or(b.len());
        let n: u32 = rest[..end]
            .parse()
            .map_err(|_| format!("ubd{rest}: couldn't parse device number"))?;
        (n, end)
    } else if b.first().is_some_and(|c| c.is_ascii_lowercase()) {
        (u32::from(b[0] - b'a'), 1)
    } else {
        return Err(format!("ubd{rest}: couldn't parse device number"));
    };
    if n >= UBD_MAX_DEV {
        return Err(format!("ubd{rest}: device number out of range (0-15)"));
    }
    let mut s = UbdSpec {
        n,
        read_only: false,
        sync: false,
        no_cow: false,
        shared: false,
        no_trim: false,
        file: PathBuf::new(),
        backing: None,
    };
    loop {
        match b.get(i) {
            Some(b'r') => s.read_only = true,
            Some(b's') => s.sync = true,
            Some(b'd') => s.no_cow = true,
            Some(b'c') => s.shared = true,
            Some(b't') => s.no_trim = true,
            Some(b'=') => break,
            Some(_) => {
                return Err(format!(
                    "ubd{rest}: expected '=' or flag letter (r, s, d, c or t)"
                ));
            }
            None => return Err(format!("ubd{rest}: missing '='")),
        }
        i += 1;
    }
    let v = &rest[i + 1..];
    let mut it = v.splitn(3, [',', ':']);
    let file = it.next().unwrap_or("");
    if file.is_empty() {
        return Err(format!("ubd{rest}: no file given"));
    }
    s.file = PathBuf::from(file);
    s.backing = it.next().filter(|b| !b.is_empty()).map(PathBuf::from);
    if s.backing.is_some() && s.no_cow {
        return Err(format!("ubd{rest}: can't specify both 'd' and a cow file"));
    }
    Ok(Some(s))
}

/// `ubda` for 0.
pub fn disk_name(n: u32) -> String {
    format!("ubd{}", char::from(b'a' + n as u8))
}

fn open_file(path: &Path, write: bool, sync: bool, create: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(write).create(create);
    if sync {
        o.custom_flags(libc::O_SYNC);
    }
    o.open(path)
}

/// The lock of `os_lock_file`, with the line the boot stops with.
fn host_lock(dev: &str, path: &Path, f: &File, write: bool, shared: bool) -> Result<(), String> {
    if shared {
        log::info!("{dev}: not locking \"{}\" on the host", path.display());
        return Ok(());
    }
    blockio::lock_file(f.as_fd(), write).map_err(|e| {
        format!(
            "{dev}: cannot lock {}: {e} (another kernel has it open? the 'c' flag shares it)",
            path.display()
        )
    })
}

/// A disk that is a host file.
struct RawFile {
    file: File,
    path: PathBuf,
    size: u64,
    discard: bool,
}

fn zero_tail(bufs: &mut [&mut [u8]], mut got: usize) {
    for b in bufs.iter_mut() {
        if got >= b.len() {
            got -= b.len();
        } else {
            b[got..].fill(0);
            got = 0;
        }
    }
}

impl Backend for RawFile {
    fn size(&self) -> u64 {
        self.size
    }
    fn read(&self, bufs: &mut [&mut [u8]], off: u64) -> io::Result<()> {
        let got = blockio::preadv_all(self.file.as_fd(), bufs, off)?;
        zero_tail(bufs, got);
        Ok(())
    }
    fn write(&self, bufs: &[&[u8]], off: u64) -> io::Result<()> {
        blockio::pwritev_all(self.file.as_fd(), bufs, off)
    }
    fn flush(&self) -> io::Result<()> {
        hostdir::fsync(self.file.as_fd(), false)
    }
    fn discard(&self, off: u64, len: u64) -> io::Result<()> {
        if !self.discard {
            return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        }
        hostdir::fallocate(
            self.file.as_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off,
            len,
        )
    }
    fn write_zeroes(&self, off: u64, len: u64) -> io::Result<()> {
        let r = hostdir::fallocate(
            self.file.as_fd(),
            libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE,
            off,
            len,
        );
        match r {
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => write_zeros(self, off, len),
            r => r,
        }
    }
    fn can_discard(&self) -> bool {
        self.discard
    }
    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

/// Zeroes by writing zeros, 64 KiB at a time.
fn write_zeros(b: &dyn Backend, off: u64, len: u64) -> io::Result<()> {
    let z = vec![0u8; 64 << 10];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(z.len() as u64) as usize;
        b.write(&[&z[..n]], off + done)?;
        done += n as u64;
    }
    Ok(())
}

/// A disk that is a COW file over a backing file.
struct CowDisk {
    cow: File,
    backing: File,
    cow_path: PathBuf,
    backing_path: PathBuf,
    h: CowHeader,
    bitmap: Mutex<Vec<u8>>,
    discard: bool,
}

impl CowDisk {
    fn sect(&self) -> u64 {
        u64::from(self.h.sectorsize)
    }
}

impl Backend for CowDisk {
    fn size(&self) -> u64 {
        self.h.size
    }

    /// Runs of sectors from the same file, each one `pread` per run.
    fn read(&self, bufs: &mut [&mut [u8]], off: u64) -> io::Result<()> {
        let ss = self.sect();
        let bm = lock(&self.bitmap);
        let mut pos = off;
        for b in bufs.iter_mut() {
            let mut done = 0usize;
            while done < b.len() {
                let s = pos / ss;
                let in_cow = s < self.h.size.div_ceil(ss) && cow::test_bit(&bm, s);
                // Extend the run while the next sectors come from the same file.
                let mut end = (s + 1) * ss;
                while end < pos + (b.len() - done) as u64
                    && end / ss < self.h.size.div_ceil(ss)
                    && cow::test_bit(&bm, end / ss) == in_cow
                {
                    end += ss;
                }
                let n = ((end - pos) as usize).min(b.len() - done);
                let chunk = &mut b[done..done + n];
                let got = if in_cow {
                    blockio::preadv_all(self.cow.as_fd(), &mut [chunk], self.h.data_offset + pos)?
                } else {
                    blockio::preadv_all(self.backing.as_fd(), &mut [chunk], pos)?
                };
                b[done + got..done + n].fill(0);
                done += n;
                pos += n as u64;
            }
        }
        Ok(())
    }

    fn write(&self, bufs: &[&[u8]], off: u64) -> io::Result<()> {
        let ss = self.sect();
        let data: Vec<u8> = if bufs.len() == 1 {
            bufs[0].to_vec()
        } else {
            bufs.concat()
        };
        if data.is_empty() {
            return Ok(());
        }
        let end = off + data.len() as u64;
        let (first, last) = (off / ss, (end - 1) / ss);
        let mut bm = lock(&self.bitmap);
        // Widen to whole sectors; a partial edge sector not yet in the COW file is read
        // from the backing file first.
        let (wstart, wend) = (first * ss, (last + 1) * ss);
        let mut buf = vec![0u8; (wend - wstart) as usize];
        for s in [first, last] {
            let at = ((s - first) * ss) as usize;
            let sector = &mut buf[at..at + ss as usize];
            let covered = s * ss >= off && (s + 1) * ss <= end;
            if !covered {
                let got = if cow::test_bit(&bm, s) {
                    blockio::preadv_all(
                        self.cow.as_fd(),
                        &mut [sector],
                        self.h.data_offset + s * ss,
                    )?
                } else {
                    blockio::preadv_all(self.backing.as_fd(), &mut [sector], s * ss)?
                };
                sector[got..].fill(0);
            }
        }
        let at = (off - wstart) as usize;
        buf[at..at + data.len()].copy_from_slice(&data);
        blockio::pwritev_all(self.cow.as_fd(), &[&buf], self.h.data_offset + wstart)?;
        // Then the bitmap bytes that changed (update_bitmap).
        let (b0, b1) = ((first / 8) as usize, (last / 8) as usize);
        let mut changed = false;
        for s in first..=last {
            if !cow::test_bit(&bm, s) {
                cow::set_bit(&mut bm, s);
                changed = true;
            }
        }
        if changed {
            blockio::pwritev_all(
                self.cow.as_fd(),
                &[&bm[b0..=b1]],
                self.h.bitmap_offset + b0 as u64,
            )?;
        }
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        hostdir::fsync(self.cow.as_fd(), false)
    }

    /// Sectors already in the COW file lose their data (the hole reads as zeros); the bitmap
    /// keeps them, so they never fall back to the backing file's old contents.
    fn discard(&self, off: u64, len: u64) -> io::Result<()> {
        if !self.discard {
            return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        }
        write_zeros(self, off, len)
    }

    fn write_zeroes(&self, off: u64, len: u64) -> io::Result<()> {
        write_zeros(self, off, len)
    }

    fn can_discard(&self) -> bool {
        self.discard
    }

    fn describe(&self) -> String {
        format!(
            "{} (COW over {})",
            self.cow_path.display(),
            self.backing_path.display()
        )
    }
}

/// An opened, not yet added, disk.
struct Opened {
    n: u32,
    backend: Arc<dyn Backend>,
    ro: bool,
}

fn pending() -> &'static Mutex<Vec<Opened>> {
    static P: OnceLock<Mutex<Vec<Opened>>> = OnceLock::new();
    P.get_or_init(Default::default)
}

fn mtime_of(f: &File) -> io::Result<(u64, u32)> {
    let m = f.metadata()?;
    Ok((m.len(), m.mtime() as u32))
}

/// Opens the COW file `cow_path` (made if missing, when `backing` is given).
fn open_cow(
    dev: &str,
    s: &UbdSpec,
    sync: bool,
    cow_file: Option<File>,
    backing: Option<&Path>,
) -> Result<(Arc<dyn Backend>, bool), String> {
    let cp = &s.file;
    let show = |p: &Path| p.display().to_string();
    let (cow_file, h) = match cow_file {
        Some(f) => {
            let mut head = vec![0u8; 4136];
            let n = read_head(&f, &mut head).map_err(|e| format!("{dev}: {}: {e}", show(cp)))?;
            let h =
                CowHeader::parse(&head[..n]).map_err(|e| format!("{dev}: {}: {e}", show(cp)))?;
            (f, h)
        }
        None => {
            let bp = backing.ok_or_else(|| format!("{dev}: {}: no such file", show(cp)))?;
            let abs = std::fs::canonicalize(bp)
                .map_err(|e| format!("{dev}: backing file {}: {e}", show(bp)))?;
            let bf =
                File::open(&abs).map_err(|e| format!("{dev}: backing file {}: {e}", show(bp)))?;
            let (size, mtime) = mtime_of(&bf).map_err(|e| format!("{dev}: {}: {e}", show(bp)))?;
            let h = CowHeader::layout(
                abs.as_os_str().as_encoded_bytes().to_vec(),
                mtime,
                size,
                SECTOR as u32,
                4096,
                cow::HEADER_V3,
            )
            .map_err(|e| format!("{dev}: {e}"))?;
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .custom_flags(if sync { libc::O_SYNC } else { 0 })
                .open(cp)
                .map_err(|e| format!("{dev}: cannot create COW file {}: {e}", show(cp)))?;
            let bytes = h.encode().map_err(|e| format!("{dev}: {e}"))?;
            f.write_all_at(&bytes, 0)
                .and_then(|()| f.set_len(h.data_offset + size))
                .map_err(|e| format!("{dev}: cannot write COW file {}: {e}", show(cp)))?;
            log::info!(
                "Creating \"{}\" as COW file for \"{}\"",
                show(cp),
                abs.display()
            );
            (f, h)
        }
    };
    let writable = !s.read_only;
    host_lock(dev, cp, &cow_file, writable, s.shared)?;
    let from_header = PathBuf::from(std::ffi::OsStr::new(
        std::str::from_utf8(&h.backing_file).unwrap_or(""),
    ));
    let mut h = h;
    let bpath = match backing {
        Some(b) if !same_file(b, &from_header) => {
            // path_requires_switch: the command line wins when it matches the header.
            let f = File::open(b).map_err(|e| format!("{dev}: backing file {}: {e}", show(b)))?;
            check_backing(dev, &f, &h, b)?;
            let abs = std::fs::canonicalize(b).map_err(|e| format!("{dev}: {}: {e}", show(b)))?;
            h.backing_file = abs.as_os_str().as_encoded_bytes().to_vec();
            if writable {
                let bytes = h.encode().map_err(|e| format!("{dev}: {e}"))?;
                cow_file
                    .write_all_at(&bytes, 0)
                    .map_err(|e| format!("{dev}: cannot rewrite COW header: {e}"))?;
            }
            log::info!("{dev}: switching backing file to '{}'", abs.display());
            abs
        }
        _ => from_header,
    };
    let bf =
        File::open(&bpath).map_err(|e| format!("{dev}: backing file {}: {e}", show(&bpath)))?;
    check_backing(dev, &bf, &h, &bpath)?;
    host_lock(dev, &bpath, &bf, false, s.shared)?;
    let mut bitmap = vec![0u8; h.bitmap_len as usize];
    let got = blockio::preadv_all(cow_file.as_fd(), &mut [&mut bitmap], h.bitmap_offset)
        .map_err(|e| format!("{dev}: cannot read COW bitmap of {}: {e}", show(cp)))?;
    if got < bitmap.len() {
        return Err(format!("{dev}: COW file {} is truncated", show(cp)));
    }
    let b = CowDisk {
        cow: cow_file,
        backing: bf,
        cow_path: cp.clone(),
        backing_path: bpath,
        h,
        bitmap: Mutex::new(bitmap),
        discard: !s.no_trim,
    };
    Ok((Arc::new(b), !writable))
}

fn read_head(f: &File, buf: &mut [u8]) -> io::Result<usize> {
    blockio::preadv_all(f.as_fd(), &mut [buf], 0)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// `backing_file_mismatch`.
fn check_backing(dev: &str, f: &File, h: &CowHeader, p: &Path) -> Result<(), String> {
    let (size, mtime) = mtime_of(f).map_err(|e| format!("{dev}: {}: {e}", p.display()))?;
    if size != h.size {
        return Err(format!(
            "{dev}: size mismatch ({} vs {size}) of COW header vs backing file {}",
            h.size,
            p.display()
        ));
    }
    if mtime != h.mtime {
        return Err(format!(
            "{dev}: mtime mismatch ({} vs {mtime}) of COW header vs backing file {}",
            h.mtime,
            p.display()
        ));
    }
    Ok(())
}

/// Opens one device (`ubd_open_dev`).
fn open(s: &UbdSpec, global_sync: bool) -> Result<Opened, String> {
    let dev = format!("ubd{}", s.n);
    let sync = s.sync || global_sync;
    let show = s.file.display();
    // UML opens read-write, and falls back to read-only when the host says EROFS/EACCES.
    let mut ro = s.read_only;
    let f = match open_file(&s.file, !ro, sync, false) {
        Ok(f) => Some(f),
        Err(e) if !ro && matches!(e.raw_os_error(), Some(libc::EROFS | libc::EACCES)) => {
            ro = true;
            Some(
                open_file(&s.file, false, sync, false)
                    .map_err(|e| format!("{dev}: {show}: {e}"))?,
            )
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound && s.backing.is_some() => None,
        Err(e) => return Err(format!("{dev}: {show}: {e}")),
    };
    if let Some(f) = &f {
        let md = f.metadata().map_err(|e| format!("{dev}: {show}: {e}"))?;
        if md.is_dir() {
            return Err(format!("{dev}: {show}: is a directory"));
        }
    }
    let is_cow = match &f {
        None => true,
        Some(_) if s.no_cow => false,
        Some(f) => {
            let mut head = [0u8; 8];
            let n = read_head(f, &mut head).map_err(|e| format!("{dev}: {show}: {e}"))?;
            cow::is_cow(&head[..n])
        }
    };
    if s.backing.is_some() && !is_cow {
        return Err(format!("{dev}: {show}: not a COW file (no COW header)"));
    }
    if is_cow {
        let mut spec = s.clone();
        spec.read_only = ro;
        let (backend, ro) = open_cow(&dev, &spec, sync, f, s.backing.as_deref())?;
        return Ok(Opened {
            n: s.n,
            backend,
            ro,
        });
    }
    let Some(f) = f else {
        return Err(format!("{dev}: {show}: no such file"));
    };
    host_lock(&dev, &s.file, &f, !ro, s.shared)?;
    let size = f
        .metadata()
        .map_err(|e| format!("{dev}: {show}: {e}"))?
        .len();
    Ok(Opened {
        n: s.n,
        backend: Arc::new(RawFile {
            file: f,
            path: s.file.clone(),
            size,
            discard: !s.no_trim,
        }),
        ro,
    })
}

/// Opens every configured device, before anything is printed: the first problem is the one
/// line the boot stops with.
pub fn configure(specs: &[UbdSpec], global_sync: bool) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for s in specs {
        if !seen.insert(s.n) {
            return Err(format!("ubd{}: device is already configured", s.n));
        }
        out.push(open(s, global_sync)?);
    }
    *lock(pending()) = out;
    Ok(())
}

/// Adds the opened devices as disks (after devtmpfs is mounted).
pub fn add_all() {
    let list = std::mem::take(&mut *lock(pending()));
    for o in list {
        super::add_disk(
            disk_name(o.n),
            UBD_MAJOR,
            o.n << UBD_SHIFT,
            1 << UBD_SHIFT,
            o.backend,
            o.ro,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Option<UbdSpec>, String> {
        let mut g = false;
        parse(s, &mut g)
    }

    #[test]
    fn option_syntax() {
        let s = p("0=disk.img").unwrap().unwrap();
        assert_eq!(
            (s.n, s.file.to_str(), s.backing.is_none()),
            (0, Some("disk.img"), true)
        );
        let s = p("1rsct=c.cow,base.img").unwrap().unwrap();
        assert!(s.read_only && s.sync && s.shared && s.no_trim && !s.no_cow);
        assert_eq!(s.backing.as_deref(), Some(Path::new("base.img")));
        let s = p("b=c.cow:base").unwrap().unwrap();
        assert_eq!((s.n, s.backing.as_deref()), (1, Some(Path::new("base"))));
        let s = p("15d=x").unwrap().unwrap();
        assert!(s.no_cow && s.n == 15);
        let mut g = false;
        assert_eq!(parse("=sync", &mut g), Ok(None));
        assert!(g);
        assert!(p("16=x").is_err());
        assert!(p("0x=x").is_err());
        assert!(p("0").is_err());
        assert!(p("0=").is_err());
        assert!(p("0d=a,b").is_err());
        assert!(p("=other").is_err());
        assert_eq!(disk_name(0), "ubda");
        assert_eq!(disk_name(15), "ubdp");
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("um-ubd-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&d);
        d
    }

    #[test]
    fn cow_reads_backing_and_writes_cow() {
        let base = tmp("base");
        let data: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&base, &data).unwrap();
        let cowp = tmp("cow");
        let spec = UbdSpec {
            n: 0,
            read_only: false,
            sync: false,
            no_cow: false,
            shared: false,
            no_trim: false,
            file: cowp.clone(),
            backing: Some(base.clone()),
        };
        let o = open(&spec, false).unwrap();
        let b = o.backend;
        assert_eq!(b.size(), 8192);
        // A write that starts and ends inside sectors.
        b.write(&[b"XYZ", b"W"], 1000).unwrap();
        let mut got = vec![0u8; 8192];
        b.read(&mut [&mut got], 0).unwrap();
        let mut want = data.clone();
        want[1000..1004].copy_from_slice(b"XYZW");
        assert_eq!(got, want);
        // The base is untouched; the bitmap has sector 1 set (byte 0, bit 1).
        assert_eq!(std::fs::read(&base).unwrap(), data);
        let cowbytes = std::fs::read(&cowp).unwrap();
        let h = CowHeader::parse(&cowbytes).unwrap();
        assert_eq!(cowbytes[h.bitmap_offset as usize], 0b10);
        drop(b);
        // Reopened from the COW file alone (backing named in the header).
        let spec2 = UbdSpec {
            backing: None,
            ..spec.clone()
        };
        let o = open(&spec2, false).unwrap();
        let mut got2 = vec![0u8; 8192];
        o.backend.read(&mut [&mut got2], 0).unwrap();
        assert_eq!(got2, want);
        // A second open conflicts with the first's lock.
        let e = open(&spec2, false).err().unwrap();
        assert!(e.contains("cannot lock"), "{e}");
        drop(o);
        // A touched backing file refuses.
        std::fs::write(&base, [0u8; 512]).unwrap();
        let e = open(&spec2, false).err().unwrap();
        assert!(e.contains("mismatch"), "{e}");
        let _ = std::fs::remove_file(&base);
        let _ = std::fs::remove_file(&cowp);
    }
}
