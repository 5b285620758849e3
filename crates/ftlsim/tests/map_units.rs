//! Mapping units smaller than the page (`ftl.map_unit_bytes`): write
//! amplification in bytes shows the packing, GC copies and padding account
//! for every unit programmed, and bad values are refused naming the key.
//! (That the data path behaves as a block device is the conformance suite's
//! `page_*_units*` tests.)
//!
//! Print the figures with `cargo test -p ftlsim --test integration map_units:: -- --nocapture`.

use ftlsim::config::HostMode;
use ftlsim::workload::{WorkloadSpec, generator};
use ftlsim::{Config, Precondition, Report, RunOptions, Simulation};

/// 2 planes × 64 blocks × 64 pages of 16 KiB (128 MiB), a 64 KiB buffer.
const DRIVE: &str = r#"
name = "map-units"
overprovisioning = 0.25
seed = 5
[geometry]
channels = 1
planes_per_die = 2
blocks_per_plane = 64
pages_per_block = 64
page_size = 16384
[timing]
read_us = 50.0
program_us = 500.0
erase_us = 3000.0
bus_ns_per_byte = 1.0
[cache]
bytes = 65536
"#;

fn config(overrides: &[&str]) -> Config {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Config::from_toml_str(DRIVE, "map-units", &overrides).unwrap()
}

/// `ios` random 4 KiB writes at QD 8 after `precondition`.
fn run(overrides: &[&str], precondition: Option<Precondition>, ios: u64) -> Report {
    let mut sim = Simulation::new(config(overrides)).unwrap();
    if let Some(p) = precondition {
        sim.precondition(p).unwrap();
    }
    let spec: WorkloadSpec = format!("rw=randwrite,bs=4k,ios={ios},seed=7,iodepth=8").parse().unwrap();
    let mut src = generator(&spec, sim.logical_sectors()).unwrap();
    let mut opts = RunOptions::from_config(sim.config());
    opts.mode = HostMode::Closed;
    opts.queue_depth = 8;
    let r = sim.run(&mut src, &opts, &mut |_, _| true).unwrap();
    sim.check_invariants().unwrap();
    r
}

#[test]
fn four_kib_units_cut_byte_write_amplification_fourfold_before_gc() {
    // 4,000 writes fill an eighth of the drive: no GC.
    let page = run(&[], None, 4000);
    let units = run(&["ftl.map_unit_bytes=4096"], None, 4000);
    let (wa_page, wa_units) = (page.write_amplification_bytes.unwrap(), units.write_amplification_bytes.unwrap());
    eprintln!("byte WA before GC: 16 KiB units {wa_page:.3}, 4 KiB units {wa_units:.3}");
    assert_eq!((page.gc_invocations, units.gc_invocations), (0, 0));
    // Whole pages: each 4 KiB write programs a 16 KiB page (read-modify-write).
    assert!((wa_page - 4.0).abs() < 0.05, "16 KiB units: {wa_page}");
    // Units: four writes a page, padding only where a FLUSH or idle time
    // found fewer than four dirty (none here), less what the buffer holds.
    assert!((wa_units - 1.0).abs() < 0.02, "4 KiB units: {wa_units}");
    assert_eq!(units.units_padded, 0);
    assert_eq!(units.rmw_reads, 0);
    assert!(wa_page / wa_units > 3.8, "gain {}", wa_page / wa_units);
}

/// GC packs live units as it would copy pages of their size: 4 KiB units in
/// 16 KiB pages of 64 pages a block reach the steady-state byte write
/// amplification of 4 KiB pages of 256 a block (the same bytes a block),
/// but for the padding of each victim's last page. Blocking GC: on this
/// small drive preemptible GC inflates WA for pages and units alike.
#[test]
fn gc_packs_units_like_pages_of_the_unit_size() {
    let p = Some(Precondition::new(1.0, 1.0));
    let blocking = "gc.mode=\"blocking\"";
    let units = run(&["ftl.map_unit_bytes=4096", blocking], p, 60_000);
    let small_pages = run(&["geometry.page_size=4096", "geometry.pages_per_block=256", blocking], p, 60_000);
    let (wa_units, wa_pages) =
        (units.write_amplification_bytes.unwrap(), small_pages.write_amplification_bytes.unwrap());
    eprintln!("steady-state byte WA: 4 KiB units in 16 KiB pages {wa_units:.3}, 4 KiB pages {wa_pages:.3}");
    assert!(wa_pages > 2.0, "GC ran hard: {wa_pages}");
    assert!(wa_units >= wa_pages * 0.99 && wa_units <= wa_pages * 1.04, "{wa_units} against {wa_pages}");
}

#[test]
fn every_programmed_unit_is_a_host_unit_a_gc_copy_or_padding() {
    let p = Precondition::new(1.0, 1.0);
    let r = run(&["ftl.map_unit_bytes=4096"], Some(p), 40_000);
    let programs = r.flash_programs_by_cause.host + r.flash_programs_by_cause.gc;
    // Buffer slots are units: each destaged slot is one host unit staged.
    let host_units = r.write_buffer.as_ref().unwrap().destaged_pages;
    eprintln!(
        "steady state, 4 KiB units: {programs} programs, {host_units} host units, {} GC unit copies, {} padded; \
         byte WA {:.3}, WA in pages {:.3}",
        r.gc_pages_copied,
        r.units_padded,
        r.write_amplification_bytes.unwrap(),
        r.write_amplification.unwrap()
    );
    assert!(r.gc_pages_copied > 0, "GC ran");
    assert_eq!(programs * 4, host_units + r.gc_pages_copied + r.units_padded);
    // Padding is rare: GC pads a victim's last page only.
    assert!(r.units_padded * 100 < programs * 4, "{} padded", r.units_padded);
}

/// A GC job reads each victim page once, however its copies are stepped:
/// all at once (blocking), a host page's share at a time (`"ahead"`), or a
/// unit step at a time in the background. So GC reads no more pages than
/// the victims it erased and the jobs still open hold (2 planes).
#[test]
fn gc_reads_each_victim_page_once_however_its_units_are_stepped() {
    let p = Some(Precondition::new(1.0, 1.0));
    for mode in ["gc.mode=\"blocking\"", "gc.debt=\"ahead\"", "gc.debt=\"background\""] {
        let r = run(&["ftl.map_unit_bytes=4096", "ftl.allocation=\"dynamic\"", mode], p, 40_000);
        let (reads, erases) = (r.flash_reads_by_cause.gc, r.erases_by_cause.gc);
        eprintln!("{mode}: {reads} GC reads, {erases} GC erases, {} unit copies", r.gc_pages_copied);
        assert!(erases > 50, "{mode}: GC ran ({erases} erases)");
        assert!(reads <= (erases + 2) * 64, "{mode}: {reads} GC reads for {erases} victims of 64 pages");
    }
}

#[test]
fn bad_unit_sizes_and_other_ftls_are_refused_naming_the_key() {
    for (value, why) in [
        ("1000", "power-of-two multiple of 512"),
        ("256", "power-of-two multiple of 512"),
        ("32768", "does not divide"),
    ] {
        let e = Config::from_toml_str(DRIVE, "map-units", &[format!("ftl.map_unit_bytes={value}")]).unwrap_err();
        let e = e.to_string();
        assert!(e.contains("ftl.map_unit_bytes") && e.contains(why), "{value}: {e}");
    }
    for ftl in ["dftl", "hat", "fast", "mu"] {
        let cfg = config(&["ftl.map_unit_bytes=4096", &format!("ftl.name=\"{ftl}\"")]);
        let e = Simulation::new(cfg).err().expect("refused").to_string();
        assert!(e.contains("ftl.map_unit_bytes") && e.contains(ftl), "{ftl}: {e}");
    }
    // The page size itself is today's behaviour.
    assert_eq!(config(&["ftl.map_unit_bytes=16384"]).units_per_page(), 1);
}
