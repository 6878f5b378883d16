//! Host-side services the network gates start on 127.0.0.1 (never any other address: the
//! machines' network rule): a free port, a scratch directory, `python3 -m http.server`, each
//! process killed when its guard drops. Used by tests/tests/network.rs and net_debian.rs.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A host process killed (and reaped) when the test ends.
pub struct Host(pub Child);

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free TCP port on 127.0.0.1 (bound and released: good enough for a test).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

/// A fresh, empty directory `um-TAG-NAME-PID` in the temporary directory.
pub fn scratch(tag: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("um-{tag}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create a scratch directory");
    d
}

/// Writes `mib` MiB of random bytes to `path` and returns their sha256 (hex, by the host's
/// `sha256sum`).
pub fn random_file(path: &Path, mib: usize) -> String {
    use std::io::{Read, Write};
    let mut f = std::fs::File::create(path).expect("create the random file");
    let mut r = std::fs::File::open("/dev/urandom").expect("open /dev/urandom");
    let mut buf = vec![0u8; 1 << 20];
    for _ in 0..mib {
        r.read_exact(&mut buf).expect("read /dev/urandom");
        f.write_all(&buf).expect("write the random file");
    }
    sha256_hex(path)
}

/// The host's `sha256sum` of a file, as hex.
pub fn sha256_hex(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// `python3 -m http.server` on 127.0.0.1:`port` serving `dir`, once it answers (10 s at most).
pub fn http_server(dir: &Path, port: u16) -> Host {
    http_server_on(dir, "127.0.0.1", port)
}

/// The same on `addr` (127.0.0.1 or ::1).
pub fn http_server_on(dir: &Path, addr: &str, port: u16) -> Host {
    let child = Command::new("python3")
        .args(["-m", "http.server", "--bind", addr, &port.to_string()])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 -m http.server (python3 is needed on the host)");
    let host = Host(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect((addr, port)).is_err() {
        assert!(Instant::now() < deadline, "http.server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    host
}
