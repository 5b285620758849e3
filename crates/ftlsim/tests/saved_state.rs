//! A drive's whole state saved between any two commands
//! (`Simulation::save_state`) and loaded into a fresh simulation of the same
//! config (`load_state`, then `restore_page` for the data) goes on exactly
//! as the drive it was saved from: the same completion time for every later
//! command and the same data read back. `ftlsim serve --state` relies on it
//! to load a drive without replaying its whole history.

use ftlsim::trace::{HostCmd, Op};
use ftlsim::units::{Sector, SimTime};
use ftlsim::{Config, Simulation};

const BASE: &str = include_str!("drives/tiny.toml");
/// COFTL on the tiny drive as the conformance suite runs it: a VPT cache of
/// two tables (evictions commit summaries), then its data cache.
const COFTL: &[&str] = &[
    "geometry.pages_per_block=16",
    "geometry.blocks_per_plane=32",
    "overprovisioning=0.6",
    "ftl.coftl_set_blocks=2",
    "ftl.cache_bytes=112",
    "ftl.coftl_cache_bytes=8192",
];

fn config(ftl: &str, overrides: &[&str]) -> Config {
    let mut all = vec![format!("ftl.name=\"{ftl}\"")];
    all.extend(overrides.iter().map(|s| s.to_string()));
    Config::from_toml_str(BASE, "saved-state", &all).unwrap()
}

/// xorshift64*: commands and data alike.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Submits command `i` of a seeded random stream (writes, reads, trims,
/// flushes of 1–3 pages and odd sector counts) at `now`; returns its
/// completion time and, for a read, what it read.
fn step(sim: &mut Simulation, rng: &mut Rng, now: SimTime) -> (SimTime, Vec<u8>) {
    let sectors = sim.logical_sectors();
    let len = 1 + rng.below(6);
    let start = rng.below(sectors - len);
    let op = match rng.below(10) {
        0..=4 => Op::Write,
        5..=7 => Op::Read,
        8 => Op::Trim,
        _ => Op::Flush,
    };
    let cmd = HostCmd { time: now, op, start: Sector(start), sectors: len, continued: false };
    let fill = rng.next();
    let data: Vec<u8> = (0..len * 512).map(|b| (fill >> (b % 8 * 8)) as u8 ^ b as u8).collect();
    let mut out = vec![0u8; (len * 512) as usize];
    let done = match op {
        Op::Write => sim.submit(&cmd, now, Some(&data), None),
        Op::Read => sim.submit(&cmd, now, None, Some(&mut out)),
        _ => sim.submit(&cmd, now, None, None),
    }
    .unwrap();
    (done, if op == Op::Read { out } else { Vec::new() })
}

/// Runs `before` commands, saves, runs `after` more on the original and on
/// a fresh simulation loaded from the saved state, and compares.
fn check(ftl: &str, overrides: &[&str], before: usize, after: usize) {
    let cfg = config(ftl, overrides);
    let mut sim = Simulation::new(cfg.clone()).unwrap();
    let mut rng = Rng(0x5EED ^ before as u64);
    let mut now = SimTime::ZERO;
    for i in 0..before {
        let (done, _) = step(&mut sim, &mut rng, now);
        // Issues often overlap the previous command's background work.
        now = if i % 3 == 0 { done } else { SimTime(now.0 + 50_000) };
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.snap");
    sim.save_state(&path, "key").unwrap();
    let pages = cfg.logical_pages() as u32;
    let contents: Vec<(u32, Vec<u8>)> =
        (0..pages).filter_map(|lpn| sim.page_contents(lpn).map(|c| (lpn, c.into_owned()))).collect();

    let mut loaded = Simulation::new(cfg.clone()).unwrap();
    assert_eq!(loaded.load_state(&path, "key", None), Ok(true));
    for (lpn, bytes) in &contents {
        loaded.restore_page(*lpn, bytes).unwrap();
    }
    loaded.check_invariants().unwrap();

    let mut twin = Rng(rng.0);
    let mut later = now;
    for i in 0..after {
        let a = step(&mut sim, &mut rng, now);
        let b = step(&mut loaded, &mut twin, later);
        assert_eq!(a, b, "{ftl} {overrides:?}: command {} after the save differs", i);
        now = if i % 3 == 0 { a.0 } else { SimTime(now.0 + 50_000) };
        later = now;
    }
    loaded.check_invariants().unwrap();
    let all = |s: &mut Simulation, at| {
        let cmd = HostCmd { time: at, op: Op::Read, start: Sector(0), sectors: s.logical_sectors(), continued: false };
        let mut out = vec![0u8; (s.logical_sectors() * 512) as usize];
        (s.submit(&cmd, at, None, Some(&mut out)).unwrap(), out)
    };
    assert!(all(&mut sim, now) == all(&mut loaded, now), "{ftl} {overrides:?}: the whole drive reads differently");
    assert_eq!(sim.device().array.erase_counts(), loaded.device().array.erase_counts(), "{ftl}: wear");
}

#[test]
fn every_saveable_ftl_goes_on_as_if_never_saved() {
    for (ftl, overrides) in [
        ("page", &[][..]),
        ("page", &["cache.bytes=8192"]),
        ("page", &["cache.bytes=8192", "cache.policy=\"heap\"", "cache.alpha=0.5"]),
        ("page", &["gc.mode=\"blocking\"", "ftl.allocation=\"static\""]),
        ("dftl", &["ftl.cache_bytes=64"]),
        ("hat", &["ftl.cache_bytes=64"]),
        ("block", &["geometry.channels=2", "ftl.striping=block"]),
        ("bast", &["geometry.channels=2", "ftl.striping=page"]),
        ("fast", &["geometry.channels=2", "ftl.striping=block", "cache.bytes=4096"]),
        ("dac", &["ftl.dac_regions=2"]),
        ("superblock", &["ftl.superblock_blocks=8", "ftl.gc_until_free=4"]),
        // Merges, replacement chains, cached tables and dirty data slots.
        ("coftl", COFTL),
        ("coftl", &COFTL[..5]),
        // The μ-Tree with its caches, the bitmap cache and partitions.
        ("mu", &[]),
        ("mu", &["ftl.mu_bitmap_cache_bytes=0", "ftl.partition_bytes=65536"]),
    ] {
        for before in [0, 37, 400] {
            check(ftl, overrides, before, 300);
        }
    }
}

#[test]
fn what_cannot_be_saved_says_why() {
    let mut units = Simulation::new(config("page", &["geometry.page_size=2048", "ftl.map_unit_bytes=512"])).unwrap();
    assert_eq!(units.state_unsaveable().as_deref(), Some("mapping units are smaller than the page"));
    let mut page = Simulation::new(config("page", &[])).unwrap();
    assert_eq!(page.state_unsaveable(), None);
}
