//! The TRIM cost model (`ftlsim::trim`): each part pinned on hand-built
//! cases, computed from the config rather than copied from a run, and the
//! shapes Son et al. measured (cost per byte falls with range size; one
//! command of 64 ranges beats 64 commands; aligned is no slower than
//! misaligned), for `page`, `dftl`, `hat` and `fast`.

use ftlsim::ftl::Span;
use ftlsim::trace::list::CmdList;
use ftlsim::trace::{HostCmd, Op};
use ftlsim::units::{Nanos, Sector, SimTime};
use ftlsim::{Config, Simulation};

/// A small drive: 2 channels × 2 planes × 64 blocks × 32 pages of 2 KiB.
const BASE: &str = r#"
name = "trim-cost"
overprovisioning = 0.25
[geometry]
channels = 2
planes_per_die = 2
blocks_per_plane = 64
pages_per_block = 32
page_size = 2048
[timing]
read_us = 50.0
program_us = 500.0
erase_us = 1500.0
bus_ns_per_byte = 10.0
[host]
link_ns_per_byte = 2.0
[trim]
command_us = 40.0
range_us = 3.0
[energy]
dram_access_ns = 50.0
"#;

const SPP: u64 = 4;

fn config(overrides: &[&str]) -> Config {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Config::from_toml_str(BASE, "trim-cost", &o).unwrap()
}

fn sim(overrides: &[&str]) -> Simulation {
    Simulation::new(config(overrides)).unwrap()
}

/// A drive with `overrides`, pages `0..pages` written and flushed, time restarted.
fn flushed(overrides: &[&str], pages: u64) -> Simulation {
    let mut s = sim(overrides);
    written(&mut s, pages);
    s.flush_unmeasured().unwrap();
    s
}

fn cmd(op: Op, start: u64, sectors: u64) -> HostCmd {
    HostCmd { time: SimTime::ZERO, op, start: Sector(start), sectors, continued: false }
}

fn span(start: u64, sectors: u64) -> Span {
    Span { start: Sector(start), sectors }
}

/// Writes pages `0..pages` (one command per 16 pages), then restarts time.
fn written(s: &mut Simulation, pages: u64) {
    let mut now = SimTime::ZERO;
    for first in (0..pages).step_by(16) {
        let n = 16.min(pages - first);
        now = s.submit(&cmd(Op::Write, first * SPP, n * SPP), now, None, None).unwrap();
    }
    s.restart_measurement().unwrap();
}

/// The parts every TRIM pays before its mapping work, from the config.
struct Parts {
    command: u64,
    range: u64,
    ram: u64,
    link_per_byte: f64,
}

fn parts(c: &Config) -> Parts {
    Parts {
        command: Nanos::from_us_f64(c.trim.command_us).0,
        range: Nanos::from_us_f64(c.trim.range_us).0,
        ram: c.energy.dram_access_ns as u64,
        link_per_byte: c.host.link_ns_per_byte,
    }
}

impl Parts {
    /// The DSM payload of `ranges` ranges over the host link.
    fn payload(&self, ranges: u64) -> u64 {
        let bytes = (ranges * 8).div_ceil(512) * 512;
        (bytes * (self.link_per_byte * 1000.0).round() as u64).div_ceil(1000)
    }
}

fn trim_at(s: &mut Simulation, ranges: &[Span], at: SimTime) -> u64 {
    (s.submit_trim(ranges, at).unwrap() - at).0
}

#[test]
fn a_command_costs_its_decode_its_ranges_and_two_ram_accesses_per_page() {
    let c = config(&[]);
    let p = parts(&c);
    let mut s = Simulation::new(c).unwrap();
    written(&mut s, 64);
    // One aligned range of 8 pages: lookup + update of each entry.
    let one = trim_at(&mut s, &[span(0, 8 * SPP)], SimTime::ZERO);
    assert_eq!(one, p.payload(1) + p.command + p.range + 16 * p.ram);
    // Three ranges of 2 pages each, later (the core is free again).
    let at = SimTime(1_000_000_000);
    let three = trim_at(&mut s, &[span(8 * SPP, 2 * SPP), span(20 * SPP, 2 * SPP), span(40 * SPP, 2 * SPP)], at);
    assert_eq!(three, p.payload(3) + p.command + 3 * p.range + 12 * p.ram);
    let r = s.report_from(&Default::default(), 0.0);
    assert_eq!((r.trim.commands, r.trim.ranges, r.trim.mapping_ram_accesses), (2, 4, 28));
    assert_eq!(r.trimmed_pages, 14);
    // 65 ranges cross into a second 512 B payload block.
    assert!(p.payload(65) > p.payload(64));
}

#[test]
fn misaligned_ranges_pay_per_fragment_and_ignore_keeps_partial_pages() {
    let c = config(&["nand.store_payloads=true"]);
    let p = parts(&c);
    let mut s = Simulation::new(c).unwrap();
    let data = vec![0xABu8; (8 * SPP * 512) as usize];
    s.submit(&cmd(Op::Write, 0, 8 * SPP), SimTime::ZERO, Some(&data), None).unwrap();
    s.restart_measurement().unwrap();
    // Sectors 1..29: a head fragment (page 0), pages 1..7 whole... minus the
    // tail fragment in page 7.
    let t = trim_at(&mut s, &[span(1, 28)], SimTime::ZERO);
    assert_eq!(t, p.payload(1) + p.command + 3 * p.range + 2 * 6 * p.ram);
    let mut out = vec![0u8; (8 * SPP * 512) as usize];
    s.submit(&cmd(Op::Read, 0, 8 * SPP), SimTime(1_000_000_000), None, Some(&mut out)).unwrap();
    let sector = |i: u64| &out[(i * 512) as usize..((i + 1) * 512) as usize];
    assert!(sector(0).iter().all(|&b| b == 0xAB) && sector(1).iter().all(|&b| b == 0xAB), "head page kept");
    assert!(sector(4).iter().all(|&b| b == 0), "whole page trimmed");
    assert!(sector(28).iter().all(|&b| b == 0xAB), "tail page kept");
    let r = s.report_from(&Default::default(), 0.0);
    assert_eq!((r.trim.partial_pages, r.trim.partial_pages_zeroed), (2, 0));
}

#[test]
fn zero_policy_rewrites_partial_pages_holding_data_with_a_read_modify_write() {
    let mut s = sim(&["nand.store_payloads=true", "trim.partial=\"zero\""]);
    let data = vec![0xCDu8; (8 * SPP * 512) as usize];
    s.submit(&cmd(Op::Write, 0, 8 * SPP), SimTime::ZERO, Some(&data), None).unwrap();
    s.restart_measurement().unwrap();
    let ignore = {
        let mut s = sim(&["nand.store_payloads=true"]);
        s.submit(&cmd(Op::Write, 0, 8 * SPP), SimTime::ZERO, Some(&data), None).unwrap();
        s.restart_measurement().unwrap();
        trim_at(&mut s, &[span(1, 28)], SimTime::ZERO)
    };
    let zero = trim_at(&mut s, &[span(1, 28)], SimTime::ZERO);
    // Both fragments held data: each is read and programmed again.
    let r = s.report_from(&Default::default(), 0.0);
    assert_eq!((r.trim.partial_pages, r.trim.partial_pages_zeroed), (2, 2));
    assert_eq!((r.flash_reads_by_cause.host, r.flash_programs_by_cause.host), (2, 2));
    let c = config(&[]);
    let program = Nanos::from_us_f64(c.timing.program_us).0;
    assert!(zero >= ignore + program, "zeroing waits for a program: {zero} vs {ignore}");
    let mut out = vec![0xEEu8; (8 * SPP * 512) as usize];
    s.submit(&cmd(Op::Read, 0, 8 * SPP), SimTime(1_000_000_000), None, Some(&mut out)).unwrap();
    assert!(out[..512].iter().all(|&b| b == 0xCD), "sector 0 was not trimmed");
    assert!(out[512..29 * 512].iter().all(|&b| b == 0), "the whole range reads zeros");
    assert!(out[29 * 512..].iter().all(|&b| b == 0xCD), "sectors after the range keep their data");
    // A fragment of a page that holds nothing costs no flash work.
    let before = s.report_from(&Default::default(), 0.0).flash_pages_programmed;
    trim_at(&mut s, &[span(60 * SPP + 1, 2)], SimTime(2_000_000_000));
    assert_eq!(s.report_from(&Default::default(), 0.0).flash_pages_programmed, before);
}

#[test]
fn a_non_queued_trim_waits_for_earlier_commands_and_holds_later_ones() {
    for queued in [true, false] {
        let mut s = sim(&[&format!("host.trim_queued={queued}")]);
        written(&mut s, 64);
        // A write in flight at t=0; a TRIM at 1 µs; a read at 2 µs.
        let write_done = s.submit(&cmd(Op::Write, 100 * SPP, SPP), SimTime::ZERO, None, None).unwrap();
        let trim_done = s.submit(&cmd(Op::Trim, 0, 8 * SPP), SimTime(1_000), None, None).unwrap();
        let read_done = s.submit(&cmd(Op::Read, 32 * SPP, SPP), SimTime(2_000), None, None).unwrap();
        // The same write and read without the TRIM.
        let alone = {
            let mut s = sim(&[]);
            written(&mut s, 64);
            s.submit(&cmd(Op::Write, 100 * SPP, SPP), SimTime::ZERO, None, None).unwrap();
            s.submit(&cmd(Op::Read, 32 * SPP, SPP), SimTime(2_000), None, None).unwrap()
        };
        let r = s.report_from(&Default::default(), 0.0);
        if queued {
            assert!(trim_done < write_done, "a queued TRIM does not wait: {trim_done:?} vs {write_done:?}");
            assert_eq!(read_done, alone, "nor does a read after it");
            assert_eq!((r.trim.drain_waits, r.trim.held_commands), (0, 0));
        } else {
            let cost = trim_at(&mut sim(&[]), &[span(0, 8 * SPP)], SimTime::ZERO);
            assert_eq!(trim_done, write_done + Nanos(cost), "starts when the write is done");
            assert!(read_done > trim_done && read_done > alone, "the read waits for the TRIM");
            assert_eq!((r.trim.drain_waits, r.trim.held_commands), (1, 1));
            assert_eq!(r.trim.drain_wait_ms, (write_done - SimTime(1_000)).0 as f64 / 1e6);
        }
    }
}

/// TRIMs' core work and other commands' `controller.command_us` share the
/// firmware cores: on one core a read issued just after a TRIM waits for
/// the TRIM's work; on two it takes the other core; without command time
/// it waits for no core at all (only TRIMs queue on the core).
#[test]
fn trims_and_other_commands_share_the_controllers_cores() {
    let c = config(&[]);
    let p = parts(&c);
    let read_alone = {
        let mut s = sim(&[]);
        written(&mut s, 64);
        (s.submit(&cmd(Op::Read, 40 * SPP, SPP), SimTime::ZERO, None, None).unwrap() - SimTime::ZERO).0
    };
    for (cores, command_us) in [(1, 0.0), (1, 7.0), (2, 7.0)] {
        let command = Nanos::from_us_f64(command_us).0;
        let mut s = sim(&[&format!("controller.cores={cores}"), &format!("controller.command_us={command_us}")]);
        written(&mut s, 64);
        let trim_done = s.submit_trim(&[span(0, 8 * SPP)], SimTime::ZERO).unwrap();
        let core_work = p.command + p.range + 16 * p.ram;
        assert_eq!(trim_done, SimTime(p.payload(1) + core_work), "{cores} cores: the TRIM's own time");
        // The read is issued once the TRIM's payload has crossed the link.
        let at = SimTime(p.payload(1));
        let read_done = s.submit(&cmd(Op::Read, 40 * SPP, SPP), at, None, None).unwrap();
        let read = (read_done - at).0;
        let expected = match (cores, command > 0) {
            (_, false) => read_alone,
            (1, true) => core_work + command + read_alone,
            _ => command + read_alone,
        };
        assert_eq!(read, expected, "{cores} cores, {command_us} us a command");
        // Over the time the drive worked (no host metrics here: until the
        // read's flash work ended, before its data crossed the link).
        let worked = (read_done.0 - (SPP * 512) * c.host.link_ns_per_byte as u64) as f64;
        let r = s.report_from(&Default::default(), 0.0);
        let busy = (core_work + command) as f64;
        assert!(
            (r.utilization.controller - busy / (cores as f64 * worked)).abs() < 1e-9,
            "{cores} cores: controller busy {} of {worked} ns",
            r.utilization.controller
        );
    }
}

#[test]
fn dftl_trims_read_translation_pages_and_hat_reads_pcm() {
    // A one-entry cache: every trimmed entry's translation page comes from flash.
    let mut d = flushed(&["ftl.name=\"dftl\"", "ftl.cache_bytes=8"], 64);
    let t = trim_at(&mut d, &[span(0, 4 * SPP)], SimTime::ZERO);
    let r = d.report_from(&Default::default(), 0.0);
    assert!(r.flash_reads_by_cause.mapping >= 1, "{:?}", r.flash_reads_by_cause);
    let read = Nanos::from_us_f64(config(&[]).timing.read_us).0;
    assert!(t > read, "the TRIM waits for its translation read: {t} ns");
    let mut h = flushed(&["ftl.name=\"hat\"", "ftl.cache_bytes=8"], 64);
    trim_at(&mut h, &[span(0, 4 * SPP)], SimTime::ZERO);
    assert!(h.report_from(&Default::default(), 0.0).pcm_reads >= 4);
}

#[test]
fn fast_pays_for_trim_list_insertions() {
    let mut f = sim(&["ftl.name=\"fast\""]);
    written(&mut f, 64);
    trim_at(&mut f, &[span(0, 4 * SPP), span(40 * SPP, 4 * SPP)], SimTime::ZERO);
    let r = f.report_from(&Default::default(), 0.0);
    assert!(r.trim.mapping_ram_accesses >= 2, "{:?}", r.trim);
    assert!(r.trim_list.entries >= 1);
}

const FTLS: [&str; 4] = ["page", "dftl", "hat", "fast"];

/// Latency of one TRIM of `ranges` on a freshly written drive of `ftl`.
fn fresh_trim(ftl: &str, extra: &[&str], ranges: &[Span]) -> u64 {
    let name = format!("ftl.name=\"{ftl}\"");
    let mut o = vec![name.as_str()];
    o.extend_from_slice(extra);
    trim_at(&mut flushed(&o, 512), ranges, SimTime::ZERO)
}

#[test]
fn cost_per_byte_falls_with_range_size() {
    for ftl in FTLS {
        let per_byte: Vec<f64> = [1u64, 4, 16, 64, 256]
            .iter()
            .map(|&pages| fresh_trim(ftl, &[], &[span(0, pages * SPP)]) as f64 / (pages * SPP * 512) as f64)
            .collect();
        assert!(per_byte.windows(2).all(|w| w[1] < w[0]), "{ftl}: {per_byte:?}");
    }
}

#[test]
fn one_command_of_64_ranges_beats_64_commands_of_one() {
    for ftl in FTLS {
        for queued in ["host.trim_queued=true", "host.trim_queued=false"] {
            let ranges: Vec<Span> = (0..64).map(|i| span(i * 8 * SPP, SPP)).collect();
            let one = fresh_trim(ftl, &[queued], &ranges);
            let name = format!("ftl.name=\"{ftl}\"");
            let mut s = sim(&[&name, queued]);
            written(&mut s, 512);
            s.flush_unmeasured().unwrap();
            let last = ranges.iter().map(|r| s.submit_trim(&[*r], SimTime::ZERO).unwrap()).max().unwrap();
            assert!(SimTime(one) < last, "{ftl} {queued}: one command {one} ns, 64 commands end at {last:?}");
        }
    }
}

#[test]
fn aligned_is_no_slower_than_misaligned() {
    for ftl in FTLS {
        for partial in ["trim.partial=\"ignore\"", "trim.partial=\"zero\""] {
            for pages in [1u64, 8, 64] {
                let aligned = fresh_trim(ftl, &[partial], &[span(8 * SPP, pages * SPP)]);
                let misaligned = fresh_trim(ftl, &[partial], &[span(8 * SPP + 1, pages * SPP)]);
                assert!(aligned <= misaligned, "{ftl} {partial} {pages} pages: {aligned} vs {misaligned}");
            }
        }
    }
}

#[test]
fn ranges_beyond_the_limit_or_the_device_are_refused() {
    let mut s = sim(&["host.trim_max_ranges=2"]);
    let err = s.submit_trim(&[span(0, 4), span(8, 4), span(16, 4)], SimTime::ZERO).unwrap_err().to_string();
    assert!(err.contains("3 ranges"), "{err}");
    let cap = s.logical_sectors();
    let err = s.submit_trim(&[span(cap - 2, 4)], SimTime::ZERO).unwrap_err().to_string();
    assert!(err.contains("beyond the device"), "{err}");
    let err = Config::from_toml_str(BASE, "t", &["host.trim_max_ranges=0".into()]).unwrap_err().to_string();
    assert!(err.contains("host.trim_max_ranges"), "{err}");
    let err = Config::from_toml_str(BASE, "t", &["trim.partial=\"half\"".into()]).unwrap_err().to_string();
    assert!(err.contains("trim.partial"), "{err}");
    let err = Config::from_toml_str(BASE, "t", &["trim.range_us=-1".into()]).unwrap_err().to_string();
    assert!(err.contains("trim.range_us"), "{err}");
}

fn ranges_cmd(first: u64, n: u64) -> Vec<HostCmd> {
    (0..n).map(|i| HostCmd { continued: i + 1 < n, ..cmd(Op::Trim, (first + 4 * i) * SPP, SPP) }).collect()
}

#[test]
fn a_run_regroups_ranges_into_commands_and_splits_beyond_the_limit() {
    let mut cmds = vec![cmd(Op::Write, 0, 256 * SPP)];
    cmds.extend(ranges_cmd(0, 5));
    cmds.extend(ranges_cmd(100, 1));
    cmds.extend(ranges_cmd(200, 7));
    let run = |max: u32| {
        let mut s = sim(&[&format!("host.trim_max_ranges={max}")]);
        let opts = ftlsim::RunOptions::from_config(s.config());
        s.run(&mut CmdList::new("cmds", cmds.clone()), &opts, &mut |_, _| true).unwrap()
    };
    let r = run(64);
    assert_eq!((r.trims, r.trim_ranges, r.trim.commands), (3, 13, 3));
    assert_eq!(r.trim_bytes, 13 * SPP * 512);
    assert_eq!((r.host_pages_trimmed, r.trimmed_pages), (13, 13));
    // At most 4 ranges a command: 5 = 4 + 1, 1, 7 = 4 + 3.
    let r = run(4);
    assert_eq!((r.trims, r.trim_ranges), (5, 13));
    // A continued TRIM followed by a read is a broken source, not a panic.
    let mut bad = ranges_cmd(0, 2);
    bad[1] = cmd(Op::Read, 0, 8);
    let mut s = sim(&[]);
    let opts = ftlsim::RunOptions::from_config(s.config());
    let err = s.run(&mut CmdList::new("cmds", bad), &opts, &mut |_, _| true).unwrap_err().to_string();
    assert!(err.contains("continues a TRIM"), "{err}");
}

/// Son et al.'s result, in shape: deleting files with TRIMs batched up to 64
/// ranges a command takes less time than ext4's one range per command,
/// under non-queued TRIM, on two presets.
#[test]
fn file_deletion_is_faster_with_batching_on_two_presets_under_non_queued_trim() {
    use ftlsim::repro::trim_cost::{DELETE_PRESETS, config, deletion_time};
    let spec = ftlsim::workload::DeleteSpec::parse("rw=delete,files=150,filesize=16k-512k,frag=25,iodepth=32").unwrap();
    for preset in DELETE_PRESETS {
        let cfg = || config(preset, "page", true, &["host.trim_queued=false"]).unwrap();
        let (one, batched) = (deletion_time(cfg(), &spec, 1).unwrap(), deletion_time(cfg(), &spec, 64).unwrap());
        assert_eq!(one.commands, one.ranges, "{preset}: one range per command without batching");
        assert!(batched.commands * 32 <= batched.ranges, "{preset}: {batched:?}");
        assert!(batched.seconds < one.seconds, "{preset}: {} s batched vs {} s", batched.seconds, one.seconds);
    }
}

#[test]
fn superblock_trims_pay_two_ram_accesses_per_page() {
    let c = config(&["ftl.name=\"superblock\"", "overprovisioning=0.5"]);
    let p = parts(&c);
    let mut s = Simulation::new(c).unwrap();
    written(&mut s, 64);
    let t = trim_at(&mut s, &[span(0, 8 * SPP)], SimTime::ZERO);
    assert_eq!(t, p.payload(1) + p.command + p.range + 16 * p.ram);
    let r = s.report_from(&Default::default(), 0.0);
    assert_eq!(r.trim.mapping_ram_accesses, 16);
}

/// Why `repro trim-cost`'s HAT loses throughput on the largest ranges,
/// and DFTL would on a range within one translation page: within the map
/// cache a TRIM only marks entries dirty; past it, trimmed entries are
/// evicted dirty and written back (translation pages on flash, PCM
/// entries), so the cost per byte rises again.
#[test]
fn past_its_cache_a_cached_map_writes_trimmed_entries_back_and_cost_per_byte_rises() {
    // 256 entries of 8 B; the written space is 2048 pages. DFTL's ranges
    // start at page 1: the whole translation pages (512 entries) of a
    // range are dropped without a write (the next test).
    for (ftl, first) in [("dftl", 1), ("hat", 0)] {
        let name = format!("ftl.name=\"{ftl}\"");
        let trim = |pages: u64| {
            let mut s = flushed(&[&name, "ftl.cache_bytes=2048"], 2048);
            let ns = trim_at(&mut s, &[span(first * SPP, pages * SPP)], SimTime::ZERO);
            let r = s.report_from(&Default::default(), 0.0);
            (ns as f64 / pages as f64, r.flash_programs_by_cause.mapping + r.pcm_writes)
        };
        let ((within, none), (past, written_back)) = (trim(128), trim(511));
        assert_eq!(none, 0, "{ftl}: nothing written back within the cache");
        assert!(written_back > 0, "{ftl}: trimmed entries written back past the cache");
        assert!(past > within, "{ftl}: {past} ns a page past the cache, {within} within");
    }
}

/// A TRIM covering DFTL translation pages whole drops them: each read once
/// (its entries' old pages lose their valid counts) and none written,
/// however small the cache; the data reads back unmapped, and written
/// again it maps and reads as any page.
#[test]
fn dftl_drops_the_translation_pages_a_trim_covers_whole() {
    // 512 entries a translation page; a one-entry cache.
    let mut s = flushed(&["ftl.name=\"dftl\"", "ftl.cache_bytes=8"], 2048);
    let whole = trim_at(&mut s, &[span(0, 2048 * SPP)], SimTime::ZERO);
    let r = s.report_from(&Default::default(), 0.0);
    assert_eq!(r.flash_reads_by_cause.mapping, 4, "one read a translation page");
    assert_eq!(r.flash_programs_by_cause.mapping, 0, "nothing written back");
    assert_eq!(r.trimmed_pages, 2048, "every page held data");
    let read = Nanos::from_us_f64(config(&[]).timing.read_us).0;
    assert!(whole > read, "the TRIM waits for its translation reads: {whole} ns");
    s.check_invariants().unwrap();
    for lpn in [0, 511, 512, 2047] {
        assert_eq!(s.physical(lpn), None, "LPN {lpn} still mapped");
    }
    // Nothing dirty is left to flush, and a miss on a dropped page reads nothing.
    let flushed = s.submit(&cmd(Op::Flush, 0, 0), SimTime(10_000_000), None, None).unwrap();
    let now = s.submit(&cmd(Op::Read, 5 * SPP, SPP), flushed, None, None).unwrap();
    let r = s.report_from(&Default::default(), 0.0);
    assert_eq!((r.flash_programs_by_cause.mapping, r.flash_reads_by_cause.mapping), (0, 4));
    // Written again, the page is mapped (its translation page exists once written back).
    s.submit(&cmd(Op::Write, 5 * SPP, SPP), now, None, None).unwrap();
    s.flush_unmeasured().unwrap();
    assert!(s.physical(5).is_some());
    s.check_invariants().unwrap();
}
