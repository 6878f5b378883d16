//! Gate: hostfs's lookup, attribute and spare-fd cache (fs/src/hostfs_cache.rs) is coherent.
//!
//! A scratch host directory is bound on the guest's `/mnt` (`bind=`, a hostfs instance of its
//! own). The guest first checks that its own changes are seen at once, each right after the
//! cache holds the old answer: a create after a negative lookup, sizes after appends, the link
//! count of a hard link, a rename and an unlink, a directory removed and made again (its
//! inode number may come back), chmod and explicit times, a file rewritten in place while its
//! read-only host fd is a spare. Then, with every name cached, the host changes the directory
//! behind the kernel's back (a new file, a removed one, one replaced by a rename, one
//! rewritten in place) and creates `go`; the guest must see `go` within a few seconds and,
//! after the cache's 1 s TTL, every change.

use std::path::PathBuf;
use std::time::{Duration, Instant};
use um_tests::{Boot, for_each_engine};

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const SCRIPT: &str = r#"
cd /mnt || exit 1
ok() { echo "CACHE-OK $1"; }
bad() { echo "CACHE-BAD $1: $2"; }
# A negative lookup, then a create.
[ -e f ] && bad neg "f exists"
echo 1 > f
[ -e f ] && ok create
# Sizes after appends (the attributes are cached between).
s=$(stat -c %s f); [ "$s" = 2 ] && ok size1 || bad size1 "$s"
echo 22 >> f
s=$(stat -c %s f); [ "$s" = 5 ] && ok size2 || bad size2 "$s"
# A hard link: both names see the new link count and the same data.
ln f g
n=$(stat -c %h f); [ "$n" = 2 ] && ok nlink || bad nlink "$n"
echo 333 >> g
s=$(stat -c %s f); [ "$s" = 9 ] && ok link-size || bad link-size "$s"
# Rename and unlink.
mv f h
[ -e f ] && bad rename-old "f still there"
[ "$(cat h)" = "$(printf '1\n22\n333')" ] && ok rename
rm h
[ -e h ] && bad unlink "h still there"
n=$(stat -c %h g); [ "$n" = 1 ] && ok unlink || bad unlink "$n"
# A directory removed and made again (perhaps with the same inode number).
mkdir d; touch d/x d/y; ls d > /dev/null
rm -rf d; mkdir d
n=$(ls d | wc -l); [ "$n" = 0 ] && ok rmdir || bad rmdir "$n entries"
[ -e d/x ] && bad rmdir-x "d/x exists"
# Attributes.
chmod 640 g
m=$(stat -c %a g); [ "$m" = 640 ] && ok chmod || bad chmod "$m"
touch -d @1000000000 g
t=$(stat -c %Y g); [ "$t" = 1000000000 ] && ok utimes || bad utimes "$t"
# The spare fd of a closed read-only file: a rewrite in place (same inode) is read.
echo aaa > s; cat s > /dev/null; cat s > /dev/null
echo bbbbbb > s
[ "$(cat s)" = bbbbbb ] && ok spare-rewrite || bad spare-rewrite "$(cat s)"
# Cache everything the host will change.
for n in ext-new ext-old ext-rep ext-inplace go; do [ -e $n ] && cat $n > /dev/null; done
cat ext-old ext-rep ext-inplace > /dev/null
echo CACHE-READY
i=0
while [ ! -e go ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
[ -e go ] && ok go-seen || bad go-seen "not within 10 s"
sleep 1.2
[ -e ext-new ] && ok ext-new || bad ext-new "not seen"
[ -e ext-old ] && bad ext-old "still there"
[ "$(cat ext-rep)" = v2 ] && ok ext-rep || bad ext-rep "$(cat ext-rep)"
[ "$(cat ext-inplace)" = v2 ] && ok ext-inplace || bad ext-inplace "$(cat ext-inplace)"
echo CACHE-DONE
"#;

const OWN: [&str; 12] = [
    "create",
    "size1",
    "size2",
    "nlink",
    "link-size",
    "rename",
    "unlink",
    "rmdir",
    "chmod",
    "utimes",
    "spare-rewrite",
    "go-seen",
];

const OUTSIDE: [&str; 3] = ["ext-new", "ext-rep", "ext-inplace"];

#[test]
fn own_changes_at_once_outside_changes_within_the_ttl() {
    for_each_engine(|engine| {
        let dir = std::env::temp_dir().join(format!(
            "um-hostfs-cache-{}-{}",
            std::process::id(),
            engine.join("-")
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let scratch = Scratch(dir.clone());
        for (n, v) in [("ext-old", "v1"), ("ext-rep", "v1"), ("ext-inplace", "v1")] {
            std::fs::write(dir.join(n), v).unwrap();
        }
        let bind = format!("bind={}:/mnt", dir.display());
        let mut run = Boot::new()
            .engine(engine)
            .extra(&bind)
            .args(&["sh", "-c", SCRIPT])
            .spawn();
        let t0 = Instant::now();
        while !run.stdout_so_far().contains("CACHE-READY") && !run.has_exited() {
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "no CACHE-READY from the guest"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // Behind the kernel's back.
        std::fs::write(dir.join("ext-new"), "v1").unwrap();
        std::fs::remove_file(dir.join("ext-old")).unwrap();
        std::fs::write(dir.join("ext-rep.tmp"), "v2").unwrap();
        std::fs::rename(dir.join("ext-rep.tmp"), dir.join("ext-rep")).unwrap();
        std::fs::write(dir.join("ext-inplace"), "v2").unwrap();
        std::fs::write(dir.join("go"), "").unwrap();
        let out = run.wait();
        let report = out.report();
        assert!(
            !out.stdout.contains("CACHE-BAD"),
            "a stale answer from the hostfs cache\n{report}"
        );
        for m in OWN.iter().chain(OUTSIDE.iter()) {
            out.assert_ok(&format!("CACHE-OK {m}"));
        }
        out.assert_ok("CACHE-DONE");
        drop(scratch);
    });
}
