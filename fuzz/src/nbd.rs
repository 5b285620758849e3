//! The `nbd` target: `[drive, client bytes...]`.
//!
//! `drive` picks the FTL of a small simulated drive (payloads stored); the
//! rest is everything a client sends, from its handshake flags on. The
//! server's own handshake and transmission code reads it from one end of a
//! Unix socket pair, as it would a connection, while two threads feed the
//! bytes in and drain the replies. A fresh drive per input keeps each
//! execution independent of the ones before it.

use ftlsim::{Config, Simulation};
use ftlsim_nbd::drive::Drive;
use ftlsim_nbd::handshake::{Outcome, negotiate};
#[cfg(test)]
use ftlsim_nbd::proto::SIMPLE_REPLY_MAGIC;
use ftlsim_nbd::server::export;
use ftlsim_nbd::stream::Stream;
use ftlsim_nbd::{Pace, transmission};
use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Reply bytes kept for tests; the rest is drained and dropped.
const KEPT_REPLY_BYTES: usize = 1 << 20;

/// The FTLs a drive can run (the page-mapped, the caching and a hybrid).
const FTLS: &[&str] = &["page", "dftl", "fast"];

fn configs() -> &'static [Config] {
    static CONFIGS: OnceLock<Vec<Config>> = OnceLock::new();
    CONFIGS.get_or_init(|| {
        FTLS.iter()
            .map(|ftl| {
                // 256 MiB: 4 channels x 4 planes x 64 blocks x 128 pages x 2 KiB.
                let o = ["nand.store_payloads=true", "geometry.blocks_per_plane=64", &format!("ftl.name={ftl}")];
                Config::load("k9lag08u0m-4ch", &o.map(String::from)).expect("the fuzz drive's config is valid")
            })
            .collect()
    })
}

pub fn nbd(data: &[u8]) {
    serve(data);
}

/// Serves `data`; returns the first [`KEPT_REPLY_BYTES`] the server sent.
fn serve(data: &[u8]) -> Vec<u8> {
    let [drive, client_bytes @ ..] = data else { return Vec::new() };
    let cfg = &configs()[*drive as usize % FTLS.len()];
    let sim = Simulation::new(cfg.clone()).expect("the fuzz drive builds");
    let drive = Drive::new(sim, Pace::None, None).expect("the fuzz drive builds");
    let export = export(&drive, "fuzz");
    let drive = Arc::new(Mutex::new(drive));
    let (server, client) = UnixStream::pair().expect("socket pair");
    let mut feed = client.try_clone().expect("socket clone");
    let bytes = client_bytes.to_vec();
    // The server may close before reading everything: a failed write is fine.
    let feeder = std::thread::spawn(move || {
        let _ = feed.write_all(&bytes);
        let _ = feed.shutdown(Shutdown::Write);
    });
    let drain = std::thread::spawn(move || {
        let (mut c, mut sink, mut kept) = (client, vec![0u8; 64 << 10], Vec::new());
        while let Ok(n @ 1..) = c.read(&mut sink) {
            let room = KEPT_REPLY_BYTES.saturating_sub(kept.len());
            kept.extend_from_slice(&sink[..n.min(room)]);
        }
        kept
    });
    let mut stream = Stream::Unix(server);
    if let Ok(Outcome::Transmission) = negotiate(&mut stream, &export, &mut || None) {
        let _ = transmission::serve(stream, &drive, export.size, export.max_block, Duration::ZERO);
    } else {
        drop(stream);
    }
    feeder.join().expect("feeder thread");
    drain.join().expect("drain thread")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeds;

    /// The harness reaches transmission: the session seed's READ of what it
    /// wrote (cookie 3) is answered with that data.
    #[test]
    fn session_seed_reads_back_its_write() {
        for (_, name, bytes) in seeds::all().into_iter().filter(|(_, n, _)| n.starts_with("seed-go-session")) {
            let replies = serve(&bytes);
            let mut header = SIMPLE_REPLY_MAGIC.to_be_bytes().to_vec();
            header.extend_from_slice(&0u32.to_be_bytes());
            header.extend_from_slice(&3u64.to_be_bytes());
            let at =
                replies.windows(16).position(|w| w == header).unwrap_or_else(|| panic!("{name}: no reply to READ"));
            let data: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
            assert_eq!(&replies[at + 16..at + 16 + 4096], &data[..], "{name}");
        }
    }
}
