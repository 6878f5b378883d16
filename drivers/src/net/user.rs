//! The `user` backend (`eth0=user[,OPTS]`, the default): the in-process user-mode network of
//! `um-usernet`, an adapter from [`NetBackend`] to `um_usernet::Usernet`.

use super::{NetBackend, RxSink};

/// Checks the options of `eth0=user,OPTS` (`um_usernet::Config::parse`).
pub fn check(_opts: &str) -> Result<(), String> {
    Ok(())
}

/// Starts the backend.
pub fn start(_opts: &str, _sink: RxSink) -> Result<Box<dyn NetBackend>, String> {
    Err("eth0=user: the user-mode network is not built in yet; use eth0=passt or eth0=none".into())
}
