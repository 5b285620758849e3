//! Preconditioned snapshots: a run that loads one reports exactly what the
//! run that preconditioned itself did; stale and damaged snapshots are
//! refused, recomputed and rewritten, and the result stays right.

use ftlsim::job::{Input, Job};
use ftlsim::{Config, Report};
use std::path::{Path, PathBuf};

const PRE: &str = "fill=1.0,overwrite=0.5";

fn config(ftl: &str, extra: &[&str]) -> Config {
    let mut o = vec!["geometry.blocks_per_plane=64".to_string(), format!("ftl.name={ftl}")];
    o.extend(extra.iter().map(|s| s.to_string()));
    Config::load("k9lag08u0m-4ch", &o).unwrap()
}

fn job(cfg: Config, dir: Option<&Path>, workload: &str) -> Job {
    Job {
        config: cfg,
        input: Input::Workload(workload.into()),
        precondition: Some(PRE.parse().unwrap()),
        snapshot_dir: dir.map(Path::to_path_buf),
    }
}

fn run(j: &Job) -> Report {
    j.run(&mut |_, _| true).unwrap()
}

/// The report without what legitimately differs between two equal runs:
/// wall time, memory, and the snapshot field under test.
fn comparable(mut r: Report) -> Report {
    (r.wall_time_s, r.peak_rss_bytes, r.input.snapshot) = (0.0, None, None);
    r
}

fn only_snapshot(dir: &Path) -> PathBuf {
    let snaps: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "snap"))
        .collect();
    assert_eq!(snaps.len(), 1, "{snaps:?}");
    snaps.into_iter().next().unwrap()
}

/// Fresh, saving and loading runs of one FTL give one report.
fn loaded_equals_fresh(ftl: &str, extra: &[&str]) {
    // Mixed reads, writes and trims, so the map, GC, the buffer and the
    // TRIM paths all run on the loaded state.
    let w = "rw=randrw,bs=4k,ios=4000,trimmix=10,iodepth=8";
    let dir = tempfile::tempdir().unwrap();
    let fresh = run(&job(config(ftl, extra), None, w));
    assert_eq!(fresh.input.snapshot.as_deref(), Some("none"));
    let saving = run(&job(config(ftl, extra), Some(dir.path()), w));
    assert_eq!(saving.input.snapshot.as_deref(), Some("saved"), "{ftl}");
    let loaded = run(&job(config(ftl, extra), Some(dir.path()), w));
    assert_eq!(loaded.input.snapshot.as_deref(), Some("loaded"), "{ftl}");
    assert!(fresh.gc_invocations + fresh.merges.full + fresh.merges.partial > 0, "{ftl}: the run must reclaim");
    let fresh = comparable(fresh);
    assert_eq!(fresh, comparable(saving), "{ftl}: saving changed the run");
    assert_eq!(fresh, comparable(loaded), "{ftl}: the loaded drive ran differently");
}

#[test]
fn page_from_a_snapshot_reports_as_if_preconditioned() {
    // cost-benefit GC uses block ages; a write buffer keeps state too.
    loaded_equals_fresh("page", &["gc.policy=\"cost-benefit\"", "cache.bytes=65536"]);
}

#[test]
fn page_with_random_victims_continues_the_rng() {
    // The pool's RNG must resume where preconditioning left it.
    loaded_equals_fresh("page", &["gc.policy=\"d-choices\""]);
}

#[test]
fn dftl_from_a_snapshot_reports_as_if_preconditioned() {
    loaded_equals_fresh("dftl", &[]);
}

#[test]
fn hat_from_a_snapshot_reports_as_if_preconditioned() {
    loaded_equals_fresh("hat", &[]);
}

#[test]
fn hybrids_from_a_snapshot_report_as_if_preconditioned() {
    for ftl in ["fast", "bast", "block"] {
        loaded_equals_fresh(ftl, &[]);
    }
    // DAC's regions write to blocks of their own, and a superblock's groups
    // need an update block each: more spare space.
    loaded_equals_fresh("dac", &["overprovisioning=0.25"]);
    loaded_equals_fresh("superblock", &["overprovisioning=0.5"]);
}

#[test]
fn coftl_from_a_snapshot_reports_as_if_preconditioned() {
    // Chains, the cleaner's cursors, the log, cached tables and the data cache.
    loaded_equals_fresh("coftl", &["ftl.coftl_cache_bytes=262144", "ftl.cache_bytes=4096"]);
    loaded_equals_fresh("coftl", &[]);
}

#[test]
fn mu_from_a_snapshot_reports_as_if_preconditioned() {
    // The μ-Tree, its caches (dirty leaves included) and the bitmap cache.
    loaded_equals_fresh("mu", &[]);
}

#[test]
fn one_snapshot_serves_other_workloads_on_the_drive() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = || config("page", &[]);
    assert_eq!(run(&job(cfg(), Some(dir.path()), "rw=randwrite,bs=4k,ios=2000")).input.snapshot.unwrap(), "saved");
    let other = "rw=randread,bs=8k,ios=2000";
    let loaded = run(&job(cfg(), Some(dir.path()), other));
    assert_eq!(loaded.input.snapshot.as_deref(), Some("loaded"));
    assert_eq!(comparable(loaded), comparable(run(&job(cfg(), None, other))));
}

/// Damages the one snapshot in `dir` with `damage`; the next run must
/// refuse it (the reason starting with `why`), give the right report, and
/// leave a good snapshot that the run after loads.
fn refused_and_recomputed(damage: impl Fn(&mut Vec<u8>), why: &str) {
    let dir = tempfile::tempdir().unwrap();
    let w = "rw=randwrite,bs=4k,ios=2000";
    let cfg = || config("page", &[]);
    run(&job(cfg(), Some(dir.path()), w));
    let snap = only_snapshot(dir.path());
    let mut bytes = std::fs::read(&snap).unwrap();
    damage(&mut bytes);
    std::fs::write(&snap, &bytes).unwrap();

    let again = run(&job(cfg(), Some(dir.path()), w));
    let said = again.input.snapshot.clone().unwrap();
    assert!(said.starts_with("recomputed: ") && said.contains(&snap.display().to_string()), "{said}");
    assert!(said.contains(why), "{said} (expected {why})");
    assert_eq!(comparable(again), comparable(run(&job(cfg(), None, w))));
    assert_eq!(run(&job(cfg(), Some(dir.path()), w)).input.snapshot.as_deref(), Some("loaded"));
}

#[test]
fn a_flipped_byte_is_refused_and_recomputed() {
    refused_and_recomputed(
        |b| {
            let mid = b.len() / 2;
            b[mid] ^= 0x40;
        },
        "damaged: checksum mismatch",
    );
}

#[test]
fn a_truncated_file_is_refused_and_recomputed() {
    refused_and_recomputed(|b| b.truncate(b.len() * 2 / 3), "damaged: truncated");
}

#[test]
fn an_empty_file_is_refused_and_recomputed() {
    refused_and_recomputed(Vec::clear, "damaged: truncated");
}

#[test]
fn a_stale_key_is_refused_and_recomputed() {
    // The key is stored in the file after the magic, version and length:
    // another key under the same name is a stale (or colliding) snapshot.
    refused_and_recomputed(|b| b[16] ^= 1, "stale: made for another");
}

#[test]
fn a_stale_format_version_is_refused_and_recomputed() {
    refused_and_recomputed(|b| b[8..12].copy_from_slice(&0u32.to_le_bytes()), "stale: format version 0");
}

#[test]
fn another_seed_or_spec_does_not_load_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let w = "rw=randwrite,bs=4k,ios=1000";
    run(&job(config("page", &[]), Some(dir.path()), w));
    let reseeded = run(&job(config("page", &["seed=99"]), Some(dir.path()), w));
    assert_eq!(reseeded.input.snapshot.as_deref(), Some("saved"));
    let mut j = job(config("page", &[]), Some(dir.path()), w);
    j.precondition = Some("fill=0.5".parse().unwrap());
    assert_eq!(run(&j).input.snapshot.as_deref(), Some("saved"));
}

#[test]
fn drives_that_cannot_be_saved_precondition_normally_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let w = "rw=randwrite,bs=4k,ios=500";
    let cfg = config("page", &["nand.store_payloads=true"]);
    let r = run(&job(cfg.clone(), Some(dir.path()), w));
    assert_eq!(r.input.snapshot.as_deref(), Some("unavailable: the drive stores payloads"));
    assert_eq!(comparable(r), comparable(run(&job(cfg, None, w))));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing saved, nothing locked");
}

#[test]
fn parallel_runs_sharing_a_key_precondition_once() {
    let dir = tempfile::tempdir().unwrap();
    let said: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..4)
            .map(|i| {
                let j = job(config("page", &[]), Some(dir.path()), &format!("rw=randwrite,bs=4k,ios=1000,seed={i}"));
                s.spawn(move || run(&j).input.snapshot.unwrap())
            })
            .collect();
        runs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(said.iter().filter(|s| *s == "saved").count(), 1, "{said:?}");
    assert_eq!(said.iter().filter(|s| *s == "loaded").count(), 3, "{said:?}");
}

/// Sub-page units behind a write buffer precondition timed whatever was
/// asked: a loaded snapshot says so as the run that made it did.
#[test]
fn page_with_sub_page_units_behind_a_write_buffer() {
    loaded_equals_fresh("page", &["ftl.map_unit_bytes=512", "cache.bytes=16384"]);
}
