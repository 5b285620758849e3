//! μ-FTL unit tests: the overlap cases and the merge rule (the paper's
//! Fig. 4 situations), the bitmap cache's three ways out, and the tree's
//! flash writes.

use super::*;
use crate::nand::{NandArray, Timing};
use crate::units::Sector;

/// One plane of 24 blocks × 8 pages of 512 B; 128 logical pages.
fn drive(overrides: &[&str]) -> (Mu, Device) {
    drive_recording(overrides, false)
}

/// As [`drive`], recording program sequence numbers (power cuts) when `seq`.
fn drive_recording(overrides: &[&str], seq: bool) -> (Mu, Device) {
    let text = r#"
name = "tiny"
overprovisioning = 0.5
[geometry]
channels = 1
blocks_per_plane = 24
pages_per_block = 8
page_size = 512
[timing]
read_us = 20.0
program_us = 200.0
erase_us = 1500.0
bus_ns_per_byte = 1.0
[ftl]
name = "mu"
mu_ram_bytes = 1144
mu_bitmap_cache_bytes = 96
gc_until_free = 4
"#;
    let all: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let cfg = Config::from_toml_str(text, "tiny", &all).unwrap();
    let geo = Geometry::new(&cfg.geometry);
    let timing = Timing::new(&cfg.timing, geo.page_size, cfg.host.link_ns_per_byte);
    let dev = Device::new(NandArray::new(geo, 1000, false, seq), timing);
    (Mu::new(&cfg, &dev).unwrap(), dev)
}

fn write(mu: &mut Mu, dev: &mut Device, lpn: u32, n: u32) {
    let span = Span { start: Sector(lpn as u64), sectors: n as u64 };
    mu.write(dev, span, SimTime::ZERO, SimTime::ZERO, None).unwrap();
    mu.check_invariants(dev).unwrap();
}

/// Extents as (lpn, ppn, len).
fn extents(mu: &Mu) -> Vec<(u32, u32, u32)> {
    mu.tree.range(0, BITMAP_KEYS).map(|(a, v)| (a, unpack(v).0, unpack(v).1)).collect()
}

#[test]
fn ram_equals_the_budget() {
    let (mu, _) = drive(&[]);
    // 24 counters + 96 B bitmap cache + two 512 B tree cache pages.
    assert_eq!(mu.mapping_ram_bytes(), 1144);
    assert_eq!((mu.tree.capacity(0), mu.ram_bytes), (32, 1144));
}

/// μ-FTL on the `mu-ftl-mlc` preset (4 KiB pages) with `blocks` blocks.
fn preset_mu(blocks: u32, more: &[&str]) -> Result<Mu> {
    let mut o = vec![format!("geometry.blocks_per_plane={blocks}"), "ftl.name=\"mu\"".to_string()];
    o.extend(more.iter().map(|s| s.to_string()));
    let cfg = Config::load("mu-ftl-mlc", &o)?;
    let geo = Geometry::new(&cfg.geometry);
    let timing = Timing::new(&cfg.timing, geo.page_size, cfg.host.link_ns_per_byte);
    Mu::new(&cfg, &Device::new(NandArray::new(geo, 1000, false, false), timing))
}

#[test]
fn the_default_budget_is_a_block_table_but_never_too_small_to_run() {
    // The paper's drive: 8,192 blocks × 4 B = 32 KiB (8 KiB counters, 8 KiB
    // bitmap cache, four tree-cache pages).
    let mu = preset_mu(8192, &[]).unwrap();
    assert_eq!(mu.mapping_ram_bytes(), 32 * 1024);
    // 12,000 blocks: still 4 B per block.
    assert_eq!(preset_mu(12_000, &[]).unwrap().mapping_ram_bytes(), 48_000);
    // 1,024 blocks: 4 KiB cannot hold two 4 KiB tree pages; the default is
    // the least budget that runs: counters + bitmap cache + two pages.
    let small = preset_mu(1024, &[]).unwrap();
    assert_eq!(small.mapping_ram_bytes(), 1024 + 8192 + 2 * 4096);
    assert_eq!(small.tree.cache_pages(), (1, 1));
    // An explicit budget too small is refused, naming the key and the least.
    let e = preset_mu(1024, &["ftl.mu_ram_bytes=4096"]).err().expect("refused").to_string();
    assert!(e.contains("ftl.mu_ram_bytes") && e.contains("at least 17408"), "{e}");
}

#[test]
fn sequential_writes_merge_into_one_extent_per_block() {
    let (mut mu, mut dev) = drive(&[]);
    write(&mut mu, &mut dev, 0, 4);
    write(&mut mu, &mut dev, 4, 4); // contiguous on both sides, same block: merged
    let e = extents(&mu);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].2, 8);
    assert_eq!(mu.mu.extent_merges, 1);
    write(&mut mu, &mut dev, 8, 2); // the next block: not merged
    assert_eq!(extents(&mu).len(), 2);
}

#[test]
fn the_four_overlap_cases() {
    let (mut mu, mut dev) = drive(&[]);
    write(&mut mu, &mut dev, 0, 8); // ⟨0, p, 8⟩
    let p = extents(&mu)[0].1;
    // Split: 2..4 inside 0..8.
    write(&mut mu, &mut dev, 2, 2);
    let e = extents(&mu);
    assert_eq!(mu.mu.overlap_split, 1);
    assert_eq!((e[0], e[2]), ((0, p, 2), (4, p + 4, 4)));
    assert_eq!(e[1].0, 2);
    // Trim right: 7..9 cuts the tail of ⟨4, p+4, 4⟩.
    write(&mut mu, &mut dev, 7, 2);
    assert_eq!(mu.mu.overlap_trim_right, 1);
    assert!(extents(&mu).contains(&(4, p + 4, 3)));
    // Trim left: 0..1 cuts the head of ⟨0, p, 2⟩.
    write(&mut mu, &mut dev, 0, 1);
    assert_eq!(mu.mu.overlap_trim_left, 1);
    assert!(extents(&mu).contains(&(1, p + 1, 1)));
    // Delete: 2..4 covers the extent written for it before.
    write(&mut mu, &mut dev, 2, 2);
    assert_eq!(mu.mu.overlap_delete, 1);
    // Every overlapped page was counted invalid in the first block.
    let b = mu.geo.block_of(Ppn(p));
    // Split 2, trim right 1, trim left 1; the deleted extent was in the next block.
    assert_eq!(mu.space.invalid[b.idx()], 4);
}

#[test]
fn trim_shrinks_extents_and_marks_pages_invalid() {
    let (mut mu, mut dev) = drive(&[]);
    write(&mut mu, &mut dev, 16, 8);
    let p = extents(&mu)[0].1;
    mu.trim(&mut dev, Span { start: Sector(18), sectors: 3 }, SimTime::ZERO).unwrap();
    mu.check_invariants(&dev).unwrap();
    assert_eq!(extents(&mu), vec![(16, p, 2), (21, p + 5, 3)]);
    assert_eq!(mu.mapped(19), None);
    assert_eq!(mu.stats().trimmed_pages, 3);
    assert_eq!(mu.space.invalid[mu.geo.block_of(Ppn(p)).idx()], 3);
}

#[test]
fn a_tree_update_costs_page_programs() {
    // One write-cache page: a second dirty leaf forces a path write.
    let (mut mu, mut dev) = drive(&["ftl.mu_write_cache_pages=1"]);
    let before = dev.counters.programs[Cause::Mapping as usize];
    write(&mut mu, &mut dev, 0, 1);
    for k in 0..40 {
        write(&mut mu, &mut dev, 2 + 3 * k, 1); // extents not mergeable: the tree splits
    }
    let programs = dev.counters.programs[Cause::Mapping as usize] - before;
    assert!(mu.tree.height() >= 2);
    assert!(programs > 0, "no tree page programmed");
    assert_eq!(programs, mu.tree.stats.programs[0] + mu.tree.stats.programs[1]);
    mu.flush(&mut dev, SimTime::ZERO).unwrap();
    assert_eq!(mu.tree.dirty_leaves(), 0);
    mu.check_invariants(&dev).unwrap();
}

#[test]
fn bitmap_cache_flushes_to_the_tree_when_full() {
    // 96 B = 24 cached extents; scattered overwrites make more.
    let (mut mu, mut dev) = drive(&[]);
    write(&mut mu, &mut dev, 0, 128);
    for k in 0..40 {
        write(&mut mu, &mut dev, (k * 3) % 128, 1);
    }
    assert!(mu.mu.bitmap_flushes > 0);
    assert!(mu.tree.entry_counts()[1] > 0, "no bitmap entry in the tree");
    assert!(mu.bitmaps.extents() <= 24);
}

#[test]
fn gc_takes_the_victims_bucket() {
    let (mut mu, mut dev) = drive(&[]);
    write(&mut mu, &mut dev, 0, 128);
    for k in 0..200u32 {
        write(&mut mu, &mut dev, (k * 37) % 128, 1);
    }
    assert!(mu.stats.gc_invocations > 0);
    assert!(mu.mu.bitmap_taken_by_gc > 0);
    assert!(mu.stats.gc_pages_copied > 0);
    assert!(dev.counters.erases[Cause::Gc as usize] > 0);
}

#[test]
fn a_wholly_invalid_block_is_erased_at_once_and_its_entries_dropped() {
    let (mut mu, mut dev) = drive(&[]);
    write(&mut mu, &mut dev, 0, 8); // one full block
    write(&mut mu, &mut dev, 8, 1); // opens the next, so the first is closed
    let b = mu.geo.block_of(Ppn(extents(&mu)[0].1));
    write(&mut mu, &mut dev, 0, 4); // partly invalid: entries cached
    assert!(!mu.bitmaps.runs(b.0).is_empty());
    let erases = dev.counters.erases.iter().sum::<u64>();
    write(&mut mu, &mut dev, 4, 4); // now wholly invalid
    assert_eq!(dev.counters.erases.iter().sum::<u64>(), erases + 1);
    assert_eq!(mu.space.pool.state(b), BlockState::Free);
    assert!(mu.bitmaps.runs(b.0).is_empty());
    assert_eq!((mu.mu.bitmap_dropped, mu.mu.wholly_invalid_erases), (1, 1));
}

/// A cut after GC, bitmap flushes and TRIMs: recovery rebuilds the same
/// map from the data pages alone, with consistent counters and bitmaps,
/// erases every old tree block, and the drive goes on.
#[test]
fn a_power_cut_rebuilds_the_extents_and_the_bitmaps() {
    let (mut mu, mut dev) = drive_recording(&[], true);
    let mut x = 7u32;
    for i in 0..600u32 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let lpn = if i % 3 == 0 { (x >> 8) % 16 } else { (x >> 8) % 120 };
        write(&mut mu, &mut dev, lpn, 1 + (x >> 4) % 4);
        if i % 50 == 49 {
            mu.trim(&mut dev, Span { start: Sector(((x >> 12) % 100) as u64), sectors: 6 }, SimTime::ZERO).unwrap();
        }
    }
    mu.flush(&mut dev, SimTime::ZERO).unwrap();
    let before: Vec<_> = (0..128).map(|l| mu.physical(Lpn(l))).collect();
    let old_tree: Vec<BlockId> = (0..24).map(BlockId).filter(|&b| mu.tree.owns(b)).collect();
    assert!(mu.stats.gc_invocations > 0 && mu.bitmaps.stats.inserts > 0 && !old_tree.is_empty());
    let now = dev.last_unit_end();
    let r = mu.power_cut(&mut dev, now).unwrap();
    mu.check_invariants(&dev).unwrap();
    let after: Vec<_> = (0..128).map(|l| mu.physical(Lpn(l))).collect();
    assert_eq!(before, after, "every page the FTL programmed survives");
    let programmed: u32 = (0..24).map(|b| dev.array.written_pages(BlockId(b))).sum();
    assert!(r.pages_scanned >= programmed as u64 && r.recovery_us > 0.0, "{r:?}");
    let [extents, bitmaps] = mu.tree.entry_counts();
    assert!(extents > 0 && bitmaps > 0 && mu.tree.dirty_leaves() == 0, "{extents} {bitmaps}");
    for b in old_tree.into_iter().filter(|&b| !mu.tree.owns(b)) {
        assert!(dev.array.written_pages(b) == 0, "old tree block {b} left on flash");
    }
    for i in 0..300u32 {
        write(&mut mu, &mut dev, (i * 13) % 120, 2);
    }
}
