/work/main/guest/target/x86_64-unknown-linux-musl/release/deps/threads-ea575e1fa57986ee.d: threads/src/main.rs

/work/main/guest/target/x86_64-unknown-linux-musl/release/deps/threads-ea575e1fa57986ee: threads/src/main.rs

threads/src/main.rs:
