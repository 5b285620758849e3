//! When the page-mapped FTLs collect garbage: `gc.threshold` as a fraction
//! of each plane's spare blocks (the default) or of its free space
//! (`gc.threshold_of = "free-space"`, the TRIM and HAT papers), and blocks
//! left without valid data erased when found (`gc.reclaim_empty`).

use ftlsim::Config;
use ftlsim::engine::{Cause, Device};
use ftlsim::ftl::page::PageFtl;
use ftlsim::ftl::{Ftl, Span};
use ftlsim::nand::{Geometry, NandArray, Timing};
use ftlsim::rng::SimRng;
use ftlsim::units::{Sector, SimTime};

/// The conformance tests' tiny drive cut to one plane of 64 blocks × 16
/// single-sector pages, half of it logical. Writes here reach the FTL
/// without a controller, so no background step runs: a preemptible job's
/// copies are made ahead of the writes that owe them.
fn drive(extra: &[&str]) -> (PageFtl, Device) {
    let shape = [
        "geometry.planes_per_die=1",
        "geometry.blocks_per_plane=64",
        "geometry.pages_per_block=16",
        "geometry.page_size=512",
        "overprovisioning=1.0",
        "gc.debt=\"ahead\"",
    ];
    let overrides: Vec<String> = shape.iter().chain(extra).map(|s| s.to_string()).collect();
    let cfg = Config::from_toml_str(include_str!("drives/tiny.toml"), "gc-trigger", &overrides).unwrap();
    let geo = Geometry::new(&cfg.geometry);
    let timing = Timing::new(&cfg.timing, geo.page_size, cfg.host.link_ns_per_byte);
    let dev = Device::new(NandArray::new(geo, 100_000, false, false), timing);
    (PageFtl::new(&cfg, &dev).unwrap(), dev)
}

fn page(lpn: u64) -> Span {
    Span { start: Sector(lpn), sectors: 1 }
}

/// Fills the 512 logical pages, then overwrites 4× at random, one write
/// after another as the host's time moves on; returns the fewest and the
/// most free blocks seen after the first overwrite pass.
fn churn(ftl: &mut PageFtl, dev: &mut Device) -> (u32, u32) {
    let mut now = SimTime::ZERO;
    let mut write = |ftl: &mut PageFtl, dev: &mut Device, lpn: u64| {
        now = ftl.write(dev, page(lpn), now, now, None).unwrap();
    };
    for lpn in 0..512 {
        write(ftl, dev, lpn);
    }
    let mut rng = SimRng::derived(7, 1);
    let (mut fewest, mut most) = (u32::MAX, 0);
    for i in 0..2048 {
        write(ftl, dev, rng.below(512));
        if i >= 512 {
            fewest = fewest.min(ftl.free_blocks());
            most = most.max(ftl.free_blocks());
        }
    }
    ftl.check_invariants(dev).unwrap();
    (fewest, most)
}

#[test]
fn free_space_threshold_keeps_that_share_of_blocks_free() {
    for mode in ["blocking", "preemptible"] {
        let mode = format!("gc.mode=\"{mode}\"");
        // 30% of 64 blocks: GC keeps about 20 free (one may be in the
        // host's hands, one a job's victim not yet erased).
        let (mut ftl, mut dev) = drive(&["gc.threshold=0.3", "gc.threshold_of=\"free-space\"", &mode]);
        let (fewest, most) = churn(&mut ftl, &mut dev);
        assert!((18..=20).contains(&fewest) && most <= 21, "{mode}, free space: {fewest}..={most} free blocks");
        // The default meaning: 30% of the 32 spare blocks is a reserve of 10.
        let (mut ftl, mut dev) = drive(&["gc.threshold=0.3", &mode]);
        let (fewest, most) = churn(&mut ftl, &mut dev);
        assert!((8..=10).contains(&fewest) && most <= 11, "{mode}, spare blocks: {fewest}..={most} free blocks");
    }
}

#[test]
fn free_space_gc_leaves_full_blocks_alone_above_the_reserve() {
    // 90% free space is more than the data leaves (half the drive is
    // logical): GC never gets there, and must not copy nearly full blocks
    // trying; it takes only victims at least 90% invalid, or any at the
    // reserve, so WA stays near that of the plain reserve.
    let wa = |extra: &[&str]| {
        let (mut ftl, mut dev) = drive(extra);
        churn(&mut ftl, &mut dev);
        let stats = ftl.stats();
        (stats.gc_pages_copied as f64 + 2560.0) / 2560.0
    };
    let free_space = wa(&["gc.threshold=0.9", "gc.threshold_of=\"free-space\""]);
    let reserve = wa(&["gc.threshold=0.0"]);
    assert!(free_space < reserve * 1.1, "WA {free_space:.2} at 90% free space vs {reserve:.2} with the reserve alone");
}

#[test]
fn a_block_left_without_valid_pages_is_erased_when_found() {
    for reclaim in [true, false] {
        let (mut ftl, mut dev) = drive(&[&format!("gc.reclaim_empty={reclaim}")]);
        // Two blocks' worth, then trim the first (a closed block).
        for lpn in 0..32 {
            ftl.write(&mut dev, page(lpn), SimTime::ZERO, SimTime::ZERO, None).unwrap();
        }
        let before = ftl.free_blocks();
        ftl.trim(&mut dev, Span { start: Sector(0), sectors: 16 }, SimTime::ZERO).unwrap();
        ftl.check_invariants(&dev).unwrap();
        let erased = dev.counters.erases[Cause::Gc as usize];
        assert_eq!((erased, ftl.free_blocks() - before), if reclaim { (1, 1) } else { (0, 0) }, "reclaim {reclaim}");
        // Overwriting the second block's pages empties it too.
        for lpn in 16..32 {
            ftl.write(&mut dev, page(lpn), SimTime::ZERO, SimTime::ZERO, None).unwrap();
        }
        ftl.check_invariants(&dev).unwrap();
        assert_eq!(dev.counters.erases[Cause::Gc as usize], if reclaim { 2 } else { 0 }, "reclaim {reclaim}");
    }
}
