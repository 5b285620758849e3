//! Power cuts on the FTLs that rebuild their map from OOB records (`page`,
//! `dftl`, `hat`, `dac`, `superblock`, `mu`, and the block-mapped `block`,
//! `bast`, `fast`): the TRIM semantics across a cut, torn programs, and the
//! recovery's cost against the configured flash.
//!
//! The random cuts (≥ 1,000 per FTL, inside GC and mid-write) are in
//! `conformance.rs` (`*_power_cuts`); these are the named cases.

use ftlsim::ftl::Span;
use ftlsim::trace::{HostCmd, Op};
use ftlsim::units::{Sector, SimTime};
use ftlsim::{Config, Simulation};

/// 1 channel, 2 planes × 16 blocks × 8 pages of 1 KiB, payloads on.
const DRIVE: &str = include_str!("drives/tiny.toml");

const FTLS: [(&str, &[&str]); 9] = [
    ("page", &[]),
    ("dftl", &["ftl.cache_bytes=32"]),
    ("hat", &["ftl.cache_bytes=32"]),
    ("dac", &["ftl.dac_regions=2"]),
    ("block", &["geometry.channels=2"]),
    ("bast", &["geometry.channels=2"]),
    ("fast", &["geometry.channels=2"]),
    ("superblock", &["ftl.superblock_blocks=8", "ftl.gc_until_free=4"]),
    ("mu", &["ftl.mu_ram_bytes=2096", "ftl.mu_bitmap_cache_bytes=16", "ftl.gc_until_free=5"]),
];

/// The block-mapped FTLs: recovery also merges their log blocks away.
fn merges_on_recovery(ftl: &str) -> bool {
    matches!(ftl, "block" | "bast" | "fast")
}

fn sim(ftl: &str, extra: &[&str]) -> Simulation {
    let mut o = vec![format!("ftl.name=\"{ftl}\"")];
    o.extend(extra.iter().map(|s| s.to_string()));
    Simulation::new(Config::from_toml_str(DRIVE, "power-cuts", &o).unwrap()).unwrap()
}

/// Two sectors per page: page `lpn` of the drive.
fn page(lpn: u64) -> (u64, u64) {
    (lpn * 2, 2)
}

fn cmd(op: Op, (start, sectors): (u64, u64), t: SimTime) -> HostCmd {
    HostCmd { time: t, op, start: Sector(start), sectors, continued: false }
}

fn write(s: &mut Simulation, lpn: u64, byte: u8, t: SimTime) -> SimTime {
    s.submit(&cmd(Op::Write, page(lpn), t), t, Some(&[byte; 1024]), None).unwrap()
}

fn flush(s: &mut Simulation, t: SimTime) -> SimTime {
    s.submit(&cmd(Op::Flush, (0, 0), t), t, None, None).unwrap()
}

fn trim(s: &mut Simulation, lpn: u64, t: SimTime) -> SimTime {
    let (start, sectors) = page(lpn);
    s.submit_trim(&[Span { start: Sector(start), sectors }], t).unwrap()
}

/// The first byte of page `lpn` (each test writes whole pages of one byte).
fn read(s: &mut Simulation, lpn: u64, t: SimTime) -> (u8, SimTime) {
    let mut out = [0xEEu8; 1024];
    let done = s.submit(&cmd(Op::Read, page(lpn), t), t, None, Some(&mut out)).unwrap();
    assert!(out.iter().all(|&b| b == out[0]), "page {lpn} mixes bytes");
    (out[0], done)
}

/// A TRIM followed by a completed FLUSH survives a cut; one not flushed
/// may or may not (here: the page reads its data from before the TRIM,
/// and never anything else). A write not flushed from the write buffer is
/// lost; one that reached flash survives.
#[test]
fn flushed_trims_survive_a_cut_and_unflushed_ones_may_not() {
    for buffer in [None, Some("cache.bytes=8192")] {
        for (ftl, extra) in FTLS {
            let all: Vec<&str> = extra.iter().copied().chain(buffer).collect();
            let mut s = sim(ftl, &all);
            let mut t = SimTime::ZERO;
            for lpn in 0..6 {
                t = write(&mut s, lpn, 0xA0 + lpn as u8, t);
            }
            t = flush(&mut s, t);
            t = trim(&mut s, 0, t);
            t = trim(&mut s, 1, t);
            t = flush(&mut s, t);
            t = trim(&mut s, 2, t);
            t = write(&mut s, 3, 0xB3, t);
            s.check_invariants().unwrap();
            let r = s.power_cut(t).unwrap();
            s.check_invariants().unwrap_or_else(|e| panic!("{ftl} {all:?}: {e}"));
            let mut t = r.recovered_at.max(t);
            let mut got = Vec::new();
            for lpn in 0..6 {
                let (b, done) = read(&mut s, lpn, t);
                got.push(b);
                t = done;
            }
            let what = format!("{ftl} {all:?}: {got:02x?}");
            assert_eq!(&got[..2], &[0, 0], "flushed TRIMs: {what}");
            assert!([0, 0xA2].contains(&got[2]), "unflushed TRIM: {what}");
            // Unflushed: in the buffer it may be lost, or destaged before the cut.
            let b3: &[u8] = if buffer.is_some() { &[0xA3, 0xB3] } else { &[0xB3] };
            assert!(b3.contains(&got[3]), "unflushed write: {what}");
            assert_eq!(&got[4..], &[0xA4, 0xA5], "{what}");
            if !merges_on_recovery(ftl) {
                // Nothing erased since the TRIM, so nothing journalled it: it is lost.
                // (The hybrids' write of page 3 merges, and GC journals TRIMs
                // before it erases.)
                assert_eq!(got[2], 0xA2, "{what}");
            }
        }
    }
}

/// A cut while a write's programs are in flight tears them: the pages read
/// their flushed data after recovery, and the report counts the torn pages.
#[test]
fn a_cut_mid_write_tears_its_programs_and_the_flushed_data_stays() {
    for (ftl, extra) in FTLS {
        let mut s = sim(ftl, extra);
        let mut t = SimTime::ZERO;
        for lpn in 0..4 {
            t = write(&mut s, lpn, 0x10 + lpn as u8, t);
        }
        t = flush(&mut s, t);
        let issue = t;
        let data = vec![0x77u8; 4 * 1024];
        let done = s.submit(&cmd(Op::Write, (0, 8), issue), issue, Some(&data), None).unwrap();
        // 4 programs of 200 µs on a 2-plane die: the first ends 200 µs in.
        let cut = SimTime(issue.0 + 100_000);
        let r = s.power_cut(cut).unwrap();
        assert!(done > cut, "{ftl}: the write ended before the cut");
        // Torn pages, or an erase in the write (the block FTL's rewrite)
        // moved the cut past its programs (the erase barrier of `engine::power`).
        let moved = (r.at_s * 1e9).round() as u64 > cut.0;
        assert!(r.pages_torn >= 1 || (moved && merges_on_recovery(ftl)), "{ftl}: {r:?}, write done at {done:?}");
        s.check_invariants().unwrap();
        let mut t = r.recovered_at;
        for lpn in 0..4 {
            let (b, d) = read(&mut s, lpn, t);
            assert!([0x10 + lpn as u8, 0x77].contains(&b), "{ftl}: page {lpn} reads {b:#x}");
            t = d;
        }
        // The drive goes on: the torn pages are never read, GC reclaims them.
        for i in 0..300u64 {
            t = write(&mut s, i % 40, i as u8, t);
        }
        s.check_invariants().unwrap();
    }
}

/// Recovery reads every programmed page's OOB: its flash time is bounded
/// below by those reads spread over the array units and above by doing
/// them one after another.
#[test]
fn recovery_scans_every_programmed_page_in_a_time_the_flash_allows() {
    for (ftl, extra) in FTLS {
        let mut s = sim(ftl, extra);
        let mut t = SimTime::ZERO;
        for i in 0..200u64 {
            t = write(&mut s, (i * 7) % 100, i as u8, t);
        }
        t = flush(&mut s, t);
        let geo = s.device().geometry().clone();
        let written = |s: &Simulation, b| s.device().array.written_pages(ftlsim::units::BlockId(b)) as u64;
        let programmed: u64 = (0..geo.blocks).map(|b| written(&s, b)).sum();
        let blocks_open = (0..geo.blocks).filter(|&b| written(&s, b) < geo.pages_per_block as u64).count() as u64;
        let r = s.power_cut(t).unwrap();
        // Each block is read up to its first erased page.
        assert_eq!(r.pages_scanned, programmed + blocks_open, "{ftl}");
        let timing = s.device().timing();
        let per_read = timing.command + timing.read;
        // Reads queue one after another on each array unit (a die of 2 planes per channel).
        let low = r.pages_scanned as f64 * per_read.as_us_f64() / geo.channels as f64;
        let high = r.pages_scanned as f64 * (per_read + timing.page_transfer).as_us_f64() + 1.0;
        let flash_us = r.recovery_us;
        if !matches!(ftl, "hat" | "superblock" | "mu") && !merges_on_recovery(ftl) {
            assert!(
                (low..=high).contains(&flash_us),
                "{ftl}: {flash_us} µs for {} reads, [{low}, {high}]",
                r.pages_scanned
            );
        } else {
            // HAT also rewrites PCM entries (90 µs each) that differ from
            // what the scan found; the hybrids merge their logs away;
            // superblock erases the blocks left without data, and mu those
            // and its old tree blocks, then writes its rebuilt tree.
            assert!(flash_us >= low, "{ftl}: {flash_us} µs");
        }
    }
}

/// Without program sequences recovery cannot tell a page's copies apart:
/// a cut is refused with the key to set, and the drive goes on unchanged.
#[test]
fn a_cut_without_program_sequences_is_refused_and_changes_nothing() {
    let mut s = sim("page", &["nand.record_sequence=false"]);
    let t = write(&mut s, 3, 7, SimTime(0));
    let e = s.power_cut(t).unwrap_err().to_string();
    assert!(e.contains("nand.record_sequence"), "{e}");
    assert_eq!(read(&mut s, 3, t).0, 7, "the write survives a refused cut");
}
