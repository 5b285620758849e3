//! `ftlsim serve --state` run as a user and killed: everything a client
//! flushed (FLUSH, or a FUA write) reads back after SIGKILL and a restart,
//! and several clients driving the drive through a kill see no mismatch.

use ftlsim_nbd::client::Client;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BLOCK: usize = 4096;

struct Served {
    child: Child,
    socket: PathBuf,
    log: PathBuf,
}

/// Starts `ftlsim serve` on a small drive kept in `dir/state`; returns once
/// a client can connect.
fn serve(dir: &Path, run: u32) -> Served {
    let socket = dir.join("nbd.sock");
    let log = dir.join(format!("serve-{run}.err"));
    let child = Command::new(env!("CARGO_BIN_EXE_ftlsim"))
        .args(["serve", "-c", "k9lag08u0m-4ch", "--set", "geometry.blocks_per_plane=64", "--checkpoint-mib", "1"])
        .arg("--socket")
        .arg(&socket)
        .arg("--state")
        .arg(dir.join("state"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while Client::connect_unix(&socket).is_err() {
        assert!(started.elapsed() < Duration::from_secs(60), "no server: {}", std::fs::read_to_string(&log).unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
    Served { child, socket, log }
}

impl Served {
    fn client(&self) -> Client {
        Client::connect_unix(&self.socket).unwrap()
    }

    fn kill(mut self) -> String {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        std::fs::read_to_string(&self.log).unwrap()
    }

    /// SIGTERM: a clean shutdown with a last checkpoint.
    fn stop(mut self) -> String {
        // SAFETY: signals a child this test started and still owns.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) }, 0);
        let status = self.child.wait().unwrap();
        let log = std::fs::read_to_string(&self.log).unwrap();
        assert!(status.success(), "{log}");
        log
    }
}

/// A block's contents, different for every (block, version).
fn block(index: u64, version: u64) -> Vec<u8> {
    let mut x = (index << 20 ^ version).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..BLOCK)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn flushed_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), 0);
    let mut c = server.client();
    let blocks = c.size() / BLOCK as u64;
    let mut rng = Rng(0x5EED);
    // What must survive: each block's version as of its last FLUSH or FUA write.
    let mut durable: BTreeMap<u64, u64> = BTreeMap::new();
    let mut pending: BTreeMap<u64, u64> = BTreeMap::new();
    let mut version = 0;
    for round in 0..150 {
        for i in 0..30 {
            let b = rng.next(blocks / 2);
            version += 1;
            let fua = i == 29 && round % 3 == 0;
            c.write(b * BLOCK as u64, &block(b, version), fua).unwrap();
            if fua {
                durable.insert(b, version);
                pending.remove(&b);
            } else {
                pending.insert(b, version);
            }
        }
        c.flush().unwrap();
        durable.append(&mut pending);
    }
    // Written after the last FLUSH: may or may not survive.
    for i in 0..20 {
        version += 1;
        let b = blocks / 2 + i;
        c.write(b * BLOCK as u64, &block(b, version), false).unwrap();
    }
    let log = server.kill();
    assert!(log.contains("listening on"), "{log}");
    // 150 × 30 writes of 4 KiB: checkpoints (every MiB) and a journal after the last.
    let manifest = std::fs::read_to_string(dir.path().join("state/state.toml")).unwrap();
    let checkpoints: u64 = manifest.lines().find_map(|l| l.strip_prefix("checkpoint = ")).unwrap().parse().unwrap();
    assert!(checkpoints >= 10, "{checkpoints} checkpoints");
    assert!(std::fs::metadata(dir.path().join("state/journal.bin")).unwrap().len() > 4096);
    let server = serve(dir.path(), 1);
    let mut c = server.client();
    let mut mismatches = 0;
    for (&b, &v) in &durable {
        if c.read(b * BLOCK as u64, BLOCK as u32).unwrap() != block(b, v) {
            mismatches += 1;
        }
    }
    drop(c);
    let log = server.stop();
    assert!(log.contains("removed") && log.contains("nbd.sock"), "the killed server's socket: {log}");
    assert!(log.contains("loading the drive saved in"), "{log}");
    assert_eq!(mismatches, 0, "of {} flushed blocks", durable.len());
    assert!(durable.len() > 3000, "{} blocks checked", durable.len());
    eprintln!("{} flushed blocks checked after SIGKILL after 150 FLUSHes", durable.len());
}

/// One client's share of the soak: its own stretch of blocks, random
/// writes, reads (checked), trims and flushes; returns the commands sent.
fn soak_client(c: &mut Client, first: u64, blocks: u64, seed: u64, model: &mut BTreeMap<u64, u64>) -> u64 {
    let mut rng = Rng(seed);
    let mut commands = 0;
    for i in 0..4000u64 {
        let b = first + rng.next(blocks);
        let at = b * BLOCK as u64;
        match rng.next(100) {
            0..=49 => {
                let v = seed << 32 | i;
                c.write(at, &block(b, v), false).unwrap();
                model.insert(b, v);
            }
            50..=89 => {
                let want = model.get(&b).map_or(vec![0; BLOCK], |&v| block(b, v));
                assert!(c.read(at, BLOCK as u32).unwrap() == want, "client {seed}: block {b} mismatch");
            }
            90..=96 => {
                c.trim(at, BLOCK as u32).unwrap();
                model.remove(&b);
            }
            _ => c.flush().unwrap(),
        }
        commands += 1;
    }
    c.flush().unwrap();
    commands + 1
}

fn check_all(c: &mut Client, first: u64, blocks: u64, model: &BTreeMap<u64, u64>) {
    for b in first..first + blocks {
        let want = model.get(&b).map_or(vec![0; BLOCK], |&v| block(b, v));
        assert!(c.read(b * BLOCK as u64, BLOCK as u32).unwrap() == want, "block {b} after the restart");
    }
}

/// Clients killed mid-request, one after another, on their own stretch of
/// blocks: a write cut inside its payload, a write whose reply is never
/// read, a read whose reply is never read. Returns how many.
fn aborting_clients(served: &Served, first: u64, blocks: u64, seed: u64) -> u64 {
    let mut rng = Rng(seed);
    let n = 60;
    for i in 0..n {
        let c = served.client();
        let b = first + rng.next(blocks);
        let at = b * BLOCK as u64;
        match i % 3 {
            0 => c.abort_write(at, &block(b, i), 1 + rng.next(BLOCK as u64 - 1) as usize),
            1 => c.abort_write(at, &block(b, i), BLOCK),
            _ => c.abort_read(at, BLOCK as u32),
        }
        .unwrap();
    }
    n
}

/// The server's resident memory (`VmRSS`), bytes.
fn rss(served: &Served) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", served.child.id())).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// Three clients with verified random reads, writes, trims and flushes,
/// a fourth side killed mid-request over and over, and the server killed
/// (SIGKILL) and restarted from `--state` after each phase: no mismatch,
/// every block checked after each restart, the server's memory flat from
/// phase to phase. `FTLSIM_SOAK_PHASES` (default 3) makes it longer.
#[test]
fn soak_three_clients_across_a_kill() {
    let phases: u64 = std::env::var("FTLSIM_SOAK_PHASES").map_or(3, |v| v.parse().expect("FTLSIM_SOAK_PHASES"));
    let dir = tempfile::tempdir().unwrap();
    let mut server = serve(dir.path(), 0);
    let blocks = server.client().size() / BLOCK as u64 / 4;
    let mut models: Vec<BTreeMap<u64, u64>> = vec![BTreeMap::new(); 3];
    let (mut commands, mut aborted, mut memory) = (0, 0, Vec::new());
    let started = Instant::now();
    for phase in 0..phases {
        // Each client ends its phase with a FLUSH: everything it did is durable.
        let sent: Vec<u64> = std::thread::scope(|s| {
            let served = &server;
            let aborts = s.spawn(move || aborting_clients(served, 3 * blocks, blocks, 100 + phase));
            let handles: Vec<_> = models
                .iter_mut()
                .enumerate()
                .map(|(k, model)| {
                    let mut c = served.client();
                    let first = k as u64 * blocks;
                    s.spawn(move || {
                        check_all(&mut c, first, blocks, model);
                        soak_client(&mut c, first, blocks, 1 + k as u64 + 10 * phase, model)
                    })
                })
                .collect();
            aborted += aborts.join().unwrap();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        commands += sent.iter().sum::<u64>();
        // The aborted clients' blocks still read (whatever a cut request left).
        let mut c = server.client();
        for b in 3 * blocks..4 * blocks {
            c.read(b * BLOCK as u64, BLOCK as u32).unwrap();
        }
        drop(c);
        memory.push(rss(&server));
        server.kill();
        server = serve(dir.path(), 1 + phase as u32);
    }
    let mut c = server.client();
    for (k, model) in models.iter().enumerate() {
        check_all(&mut c, k as u64 * blocks, blocks, model);
    }
    drop(c);
    server.stop();
    assert!(commands >= 12_000 * phases, "{commands}");
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    eprintln!(
        "soak: {commands} commands from 3 clients and {aborted} killed mid-request over {phases} phases, {phases} \
         server kills, every block checked after each, in {:.0} s; server RSS per phase (MiB): {:?}",
        started.elapsed().as_secs_f64(),
        memory.iter().map(|&b| mib(b).round()).collect::<Vec<_>>()
    );
    // The first phase's server started blank; from the second on each
    // loaded the drive, so their memory must not grow with the history.
    if let Some(&base) = memory.get(1) {
        for (k, &m) in memory.iter().enumerate().skip(2) {
            assert!(m <= base + (base / 4).max(16 << 20), "phase {k}: {:.0} MiB against {:.0} MiB", mib(m), mib(base));
        }
    }
}
