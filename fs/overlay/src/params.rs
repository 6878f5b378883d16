//! overlayfs mount options (Linux fs/overlayfs/params.c `ovl_parse_param`, the legacy
//! comma-separated string of mount(2)): `lowerdir=A:B` (top first; `\:` and `\,` escape),
//! `upperdir=`, `workdir=`, `userxattr`, and the features that stay off here: `redirect_dir`
//! (`off`, `follow`, `nofollow` accepted; `on` refused), `index=off`, `metacopy=off`,
//! `nfs_export=off`, `xino=off|auto` (auto falls back to off, as Linux does when the layers'
//! inode numbers do not fit), `uuid=`, `volatile`, `default_permissions` (accepted).
//! Unknown options and asking for a feature not implemented are `EINVAL` with a log line.

use um_uapi::abi::overlay::OVL_MAX_STACK;
use um_uapi::{Errno, SysResult};

/// The parsed options (`struct ovl_config`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// Lower directories, top first, as given.
    pub lowerdirs: Vec<Vec<u8>>,
    pub upperdir: Option<Vec<u8>>,
    pub workdir: Option<Vec<u8>>,
    /// `user.overlay.*` instead of `trusted.overlay.*`.
    pub userxattr: bool,
    /// `redirect_dir=` as given (`off`, `follow`, `nofollow`), if given.
    pub redirect_dir: Option<String>,
    /// `xino=auto` was given.
    pub xino_auto: bool,
    pub default_permissions: bool,
    pub volatile: bool,
    /// `uuid=` as given.
    pub uuid: Option<String>,
}

/// Splits at unescaped `sep`, removing the escaping backslashes.
fn split_escaped(s: &[u8], sep: u8) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new()];
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if b == b'\\' && i + 1 < s.len() {
            if let Some(v) = out.last_mut() {
                v.push(s[i + 1]);
            }
            i += 2;
            continue;
        }
        if b == sep {
            out.push(Vec::new());
        } else if let Some(v) = out.last_mut() {
            v.push(b);
        }
        i += 1;
    }
    out
}

/// Splits the option string at unescaped commas, keeping the escapes for the values.
fn split_options(s: &[u8]) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new()];
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if b == b'\\' && i + 1 < s.len() {
            if let Some(v) = out.last_mut() {
                v.extend_from_slice(&s[i..i + 2]);
            }
            i += 2;
            continue;
        }
        if b == b',' {
            out.push(Vec::new());
        } else if let Some(v) = out.last_mut() {
            v.push(b);
        }
        i += 1;
    }
    out.retain(|o| !o.is_empty());
    out
}

fn bad(msg: String) -> Errno {
    log::error!("{msg}");
    Errno::EINVAL
}

/// Parses the mount data string.
pub fn parse(data: &[u8]) -> SysResult<Config> {
    let mut c = Config::default();
    let mut have_lower = false;
    for opt in split_options(data) {
        let (key, val) = match opt.iter().position(|&b| b == b'=') {
            Some(p) => (&opt[..p], Some(&opt[p + 1..])),
            None => (&opt[..], None),
        };
        let key_s = String::from_utf8_lossy(key).into_owned();
        let unescaped = |v: &[u8]| split_escaped(v, 0).concat();
        let val_s = val.map(|v| String::from_utf8_lossy(v).into_owned());
        let onoff = |want_off: &[&str]| -> SysResult<()> {
            match val_s.as_deref() {
                Some(v) if want_off.contains(&v) => Ok(()),
                Some(v) => Err(bad(format!(
                    "overlayfs: {key_s}={v} is not supported here (only {})",
                    want_off.join(", ")
                ))),
                None => Err(bad(format!("overlay: Bad value for '{key_s}'"))),
            }
        };
        match (key, val) {
            (b"lowerdir", Some(v)) => {
                let dirs: Vec<Vec<u8>> = split_escaped(v, b':')
                    .into_iter()
                    .filter(|d| !d.is_empty())
                    .collect();
                if dirs.len() > OVL_MAX_STACK {
                    return Err(bad(format!(
                        "overlayfs: too many lower directories, limit is {OVL_MAX_STACK}"
                    )));
                }
                c.lowerdirs = dirs;
                have_lower = true;
            }
            (b"upperdir", Some(v)) => c.upperdir = Some(unescaped(v)),
            (b"workdir", Some(v)) => c.workdir = Some(unescaped(v)),
            (b"userxattr", None) => c.userxattr = true,
            (b"default_permissions", None) => c.default_permissions = true,
            (b"volatile", None) => c.volatile = true,
            (b"redirect_dir", _) => {
                onoff(&["off", "follow", "nofollow"])?;
                c.redirect_dir = val_s.clone();
            }
            (b"index", _) | (b"metacopy", _) | (b"nfs_export", _) => onoff(&["off"])?,
            (b"xino", _) => {
                onoff(&["off", "auto"])?;
                c.xino_auto = val_s.as_deref() == Some("auto");
            }
            (b"uuid", Some(_)) => c.uuid = val_s.clone(),
            _ => return Err(bad(format!("overlay: Unknown parameter '{key_s}'"))),
        }
    }
    if !have_lower || c.lowerdirs.is_empty() {
        return Err(bad("overlayfs: missing 'lowerdir'".into()));
    }
    if c.userxattr && c.redirect_dir.as_deref() == Some("follow") {
        return Err(bad(
            "overlayfs: conflicting options: userxattr,redirect_dir=follow".into(),
        ));
    }
    Ok(c)
}

impl Config {
    /// The options as `ovl_show_options` prints them (after the VFS's `rw,relatime`).
    pub fn show(&self) -> String {
        let esc = |v: &[u8]| -> String {
            let mut s = String::new();
            for ch in String::from_utf8_lossy(v).chars() {
                if ch == ':' || ch == ',' || ch == '\\' {
                    s.push('\\');
                }
                s.push(ch);
            }
            s
        };
        let lower: Vec<String> = self.lowerdirs.iter().map(|l| esc(l)).collect();
        let mut s = format!("lowerdir={}", lower.join(":"));
        if let Some(u) = &self.upperdir {
            s.push_str(&format!(",upperdir={}", esc(u)));
        }
        if let (Some(_), Some(w)) = (&self.upperdir, &self.workdir) {
            s.push_str(&format!(",workdir={}", esc(w)));
        }
        if self.default_permissions {
            s.push_str(",default_permissions");
        }
        // Shown when not the default mode, `follow` (redirect_dir=N, redirect_always_follow=Y);
        // `userxattr` implies `nofollow` (params.c `ovl_fs_params_verify`).
        let redirect = self.redirect_dir.as_deref().unwrap_or(if self.userxattr {
            "nofollow"
        } else {
            "follow"
        });
        if redirect != "follow" {
            s.push_str(&format!(",redirect_dir={redirect}"));
        }
        if let Some(u) = &self.uuid {
            s.push_str(&format!(",uuid={u}"));
        }
        if self.xino_auto {
            s.push_str(",xino=auto");
        }
        if self.userxattr {
            s.push_str(",userxattr");
        }
        if self.volatile {
            s.push_str(",volatile");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_layers_and_escapes() {
        let c = parse(b"lowerdir=/a:/b\\:c:/d,upperdir=/u,workdir=/w,userxattr").unwrap();
        assert_eq!(
            c.lowerdirs,
            vec![b"/a".to_vec(), b"/b:c".to_vec(), b"/d".to_vec()]
        );
        assert_eq!(c.upperdir.as_deref(), Some(&b"/u"[..]));
        assert_eq!(c.workdir.as_deref(), Some(&b"/w"[..]));
        assert!(c.userxattr);
        assert_eq!(
            c.show(),
            "lowerdir=/a:/b\\:c:/d,upperdir=/u,workdir=/w,redirect_dir=nofollow,userxattr"
        );
        let c = parse(b"lowerdir=/a,redirect_dir=off,xino=auto").unwrap();
        assert_eq!(c.show(), "lowerdir=/a,redirect_dir=off,xino=auto");
        let c = parse(b"lowerdir=/a,redirect_dir=follow,xino=off").unwrap();
        assert_eq!(c.show(), "lowerdir=/a");
        let c = parse(b"lowerdir=/x\\,y").unwrap();
        assert_eq!(c.lowerdirs, vec![b"/x,y".to_vec()]);
    }

    #[test]
    fn refuses_what_linux_refuses_and_features_not_done() {
        assert_eq!(parse(b"upperdir=/u,workdir=/w"), Err(Errno::EINVAL));
        assert_eq!(parse(b"lowerdir=/a,bogus"), Err(Errno::EINVAL));
        assert_eq!(parse(b"lowerdir=/a,index=on"), Err(Errno::EINVAL));
        assert_eq!(parse(b"lowerdir=/a,redirect_dir=on"), Err(Errno::EINVAL));
        assert_eq!(parse(b"lowerdir=/a,xino=on"), Err(Errno::EINVAL));
        assert!(
            parse(b"lowerdir=/a,index=off,metacopy=off,xino=auto,redirect_dir=nofollow").is_ok()
        );
        let many: Vec<String> = (0..=OVL_MAX_STACK).map(|i| format!("/l{i}")).collect();
        let opt = format!("lowerdir={}", many.join(":"));
        assert_eq!(parse(opt.as_bytes()), Err(Errno::EINVAL));
    }

    #[test]
    fn junk_is_an_errno_never_a_panic() {
        // A simple generator (xorshift): every byte value, escapes and separators included.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for n in 0..2000 {
            let len = n % 64;
            let mut v = Vec::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let b = (x & 0xff) as u8;
                v.push(match b % 8 {
                    0 => b'\\',
                    1 => b',',
                    2 => b':',
                    3 => b'=',
                    _ => b,
                });
            }
            if n % 3 == 0 {
                v.splice(0..0, b"lowerdir=".iter().copied());
            }
            let _ = parse(&v);
        }
        assert_eq!(
            parse(b"lowerdir=\\"),
            Ok(Config {
                lowerdirs: vec![b"\\".to_vec()],
                ..Config::default()
            })
        );
        assert_eq!(parse(b"lowerdir=::"), Err(Errno::EINVAL));
        assert_eq!(parse(b"lowerdir="), Err(Errno::EINVAL));
    }
}
