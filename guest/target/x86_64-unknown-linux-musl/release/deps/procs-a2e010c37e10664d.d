/work/main/guest/target/x86_64-unknown-linux-musl/release/deps/procs-a2e010c37e10664d.d: procs/src/main.rs Cargo.toml

/work/main/guest/target/x86_64-unknown-linux-musl/release/deps/libprocs-a2e010c37e10664d.rmeta: procs/src/main.rs Cargo.toml

procs/src/main.rs:
Cargo.toml:

# env-dep:CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
# env-dep:CLIPPY_CONF_DIR
