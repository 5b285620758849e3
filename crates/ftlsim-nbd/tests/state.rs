//! `--state`: a drive saved and loaded is the drive it was — same data, same
//! FTL and flash state — for every FTL, checked by driving the original and
//! the loaded copy on with the same commands and comparing everything.

use ftlsim::report::Metrics;
use ftlsim::{Config, Simulation};
use ftlsim_nbd::drive::{Command, Drive};
use ftlsim_nbd::{Attach, Durable, Pace, StateDir};
use std::path::Path;

const SECTOR: u64 = 512;

fn sim(ftl: &str, extra: &[&str]) -> Simulation {
    let mut o: Vec<String> = vec![
        "nand.store_payloads=true".into(),
        "geometry.blocks_per_plane=48".into(),
        format!("ftl.name={ftl}"),
        "ftl.cache_bytes=2048".into(),
    ];
    o.extend(extra.iter().map(|s| s.to_string()));
    Simulation::new(Config::load("k9lag08u0m-4ch", &o).unwrap()).unwrap()
}

/// A deterministic mix of writes (partial pages too), reads, trims,
/// write-zeroes and flushes over the first `span` bytes, enough to run GC.
fn drive_on(d: &mut Drive, seed: u64, commands: u32, span: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..commands {
        let start = next() % (span / SECTOR - 64);
        let sectors = 1 + next() % 24;
        let kind = next() % 100;
        let bytes = (sectors * SECTOR) as usize;
        if kind < 60 {
            let fill = (next() % 251) as u8 + 1;
            d.execute(Command::Write { fua: kind < 3 }, start, sectors, Some(&vec![fill; bytes]), None).unwrap();
        } else if kind < 80 {
            let mut out = vec![0; bytes];
            d.execute(Command::Read, start, sectors, None, Some(&mut out)).unwrap();
        } else if kind < 92 {
            d.execute(Command::Trim { fua: false }, start, sectors * 4, None, None).unwrap();
        } else if kind < 97 {
            d.execute(Command::WriteZeroes { fua: false, no_hole: kind % 2 == 0 }, start, sectors, None, None).unwrap();
        } else {
            d.execute(Command::Flush, 0, 0, None, None).unwrap();
        }
    }
}

/// Everything observable but the data (compared by [`same_data`]): each
/// block's wear, and the full report (FTL statistics included) with wall
/// time left out.
fn fingerprint(d: &Drive) -> (Vec<u32>, String) {
    let sim = d.simulation();
    let mut report = sim.report_from(&Metrics::default(), 0.0);
    report.peak_rss_bytes = None;
    (sim.device().array.erase_counts().to_vec(), serde_json::to_string(&report).unwrap())
}

/// Every logical page's data (a page never written reads as zeros), in order.
/// Visited page by page: the drive holds ~180 MiB, and copying it all into
/// one buffer took most of these tests' time.
fn pages(d: &Drive) -> impl Iterator<Item = std::borrow::Cow<'_, [u8]>> {
    let sim = d.simulation();
    let page = sim.config().geometry.page_size as usize;
    let pages = sim.logical_sectors() * SECTOR / page as u64;
    (0..pages as u32).map(move |lpn| sim.page_contents(lpn).unwrap_or_else(|| vec![0; page].into()))
}

/// The same data in every logical page, and as many pages.
fn same_data(a: &Drive, b: &Drive) -> bool {
    pages(a).eq(pages(b))
}

/// The drive in `path` after two sessions (seeds 1 and 2) on a drive
/// preconditioned with `precondition`: the first shut down cleanly, the
/// second checkpointing every `checkpoint_bytes` and then killed.
fn two_sessions(
    path: &Path,
    ftl: &str,
    extra: &[&str],
    precondition: Option<&str>,
    checkpoint_bytes: u64,
    save_every: Option<u64>,
) {
    let commands = 3000;
    for seed in [1, 2] {
        let state = StateDir::open(path).unwrap();
        assert_eq!(state.is_saved(), seed > 1);
        let mut s = sim(ftl, extra);
        if let (Some(p), false) = (precondition, state.is_saved()) {
            s.precondition(p.parse().unwrap()).unwrap();
        }
        let checkpoint_bytes = if seed == 1 { 256 << 20 } else { checkpoint_bytes };
        let how = Attach { recover: false, checkpoint_bytes, save_every };
        let durable = state.attach(&mut s, how, &mut |_, _| {}).unwrap();
        let mut d = Drive::new(s, Pace::None, None).unwrap();
        d.make_durable(durable);
        let span = d.size_bytes();
        drive_on(&mut d, seed, commands, span);
        if seed == 1 {
            d.checkpoint_and_detach().unwrap();
        }
        // Seed 2: dropped without a checkpoint, as a killed server leaves it.
    }
}

/// How the drive's state is saved before it is loaded.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Saves {
    /// As the server does: at the first session's end (and at the start
    /// when preconditioned).
    Default,
    /// Also at the checkpoints of the killed second session.
    Often,
    /// Saved, then every saved state deleted: loading replays everything.
    Removed,
}

fn save_load_continue(ftl: &str, extra: &[&str], precondition: Option<&str>) {
    for saves in [Saves::Default, Saves::Often, Saves::Removed] {
        save_load_continue_with(ftl, extra, precondition, saves);
    }
}

fn save_load_continue_with(ftl: &str, extra: &[&str], precondition: Option<&str>, saves: Saves) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("drive");
    // Checkpoints in the middle of the second session too.
    two_sessions(&path, ftl, extra, precondition, 256 << 10, (saves == Saves::Often).then_some(700));
    let manifest: toml::Table = std::fs::read_to_string(path.join("state.toml")).unwrap().parse().unwrap();
    let checkpoints = manifest["checkpoint"].as_integer().unwrap();
    assert!(checkpoints >= 3, "{ftl}: {checkpoints} checkpoints; some should be in the second session");
    let commands = manifest["commands"].as_integer().unwrap() as u64;
    let saved = manifest["saved"]["commands"].as_integer().unwrap() as u64;
    match saves {
        // Saved when the first session (3,000 NBD commands, more host commands) closed.
        Saves::Default => assert!(saved > 3000 && saved < commands - 3000, "{ftl}: saved after {saved} of {commands}"),
        Saves::Often => assert!(commands - saved < 3000, "{ftl}: saved after {saved} of {commands}"),
        Saves::Removed => {
            for e in std::fs::read_dir(&path).unwrap().flatten() {
                if e.file_name().to_string_lossy().ends_with(".snap") {
                    std::fs::remove_file(e.path()).unwrap();
                }
            }
        }
    }
    // The original, never saved: the same two sessions in one process.
    let mut s = sim(ftl, extra);
    if let Some(p) = precondition {
        s.precondition(p.parse().unwrap()).unwrap();
    }
    for seed in [1, 2] {
        s.restart_measurement().unwrap();
        let mut d = Drive::new(s, Pace::None, None).unwrap();
        let span = d.size_bytes();
        drive_on(&mut d, seed, 3000, span);
        s = d.into_simulation();
    }
    s.restart_measurement().unwrap();
    let mut original = Drive::new(s, Pace::None, None).unwrap();
    let (mut loaded, replayed, notices) = load(&path, ftl, extra);
    if saves == Saves::Removed {
        assert_eq!(replayed, commands, "{ftl}: without a saved state everything is replayed");
        assert!(notices.iter().any(|n| n.contains("is missing; replaying all")), "{ftl}: {notices:?}");
    } else {
        assert_eq!(replayed, commands - saved, "{ftl} {saves:?}: only the commands after the saved state");
        assert!(notices.is_empty(), "{ftl}: {notices:?}");
    }
    let (wear, _) = fingerprint(&original);
    assert!(wear.iter().any(|&e| e > 0), "{ftl}: the sessions should have run GC or merges");
    assert!(pages(&original).any(|p| p.iter().any(|&b| b != 0)));
    assert!(
        same_data(&loaded, &original) && fingerprint(&loaded) == fingerprint(&original),
        "{ftl}: the loaded drive differs"
    );
    // Driven on alike, they stay alike: the hidden state (maps, caches, free
    // blocks, victims) was the same too.
    for d in [&mut original, &mut loaded] {
        let span = d.size_bytes();
        drive_on(d, 3, 3000, span);
    }
    let (a, b) = (fingerprint(&original), fingerprint(&loaded));
    assert!(same_data(&original, &loaded) && a.0 == b.0, "{ftl}: data or wear differ after more commands");
    assert_eq!(a.1, b.1, "{ftl}: reports differ after more commands");
}

/// The drive saved in `path`, loaded (and its directory released), with
/// the checkpointed commands replayed and what loading said.
fn load(path: &Path, ftl: &str, extra: &[&str]) -> (Drive, u64, Vec<String>) {
    let mut s = sim(ftl, extra);
    let mut replayed = 0;
    let d = StateDir::open(path).unwrap().attach(&mut s, Attach::default(), &mut |_, total| replayed = total).unwrap();
    let notices = d.notices().to_vec();
    drop(d);
    (Drive::new(s, Pace::None, None).unwrap(), replayed, notices)
}

#[test]
fn page() {
    save_load_continue("page", &[], Some("fill=1.0"));
}

#[test]
fn page_preconditioned_and_cost_benefit() {
    save_load_continue("page", &["gc.policy=cost-benefit"], Some("fill=1.0,overwrite=0.5"));
}

#[test]
fn dftl() {
    // DFTL writes two streams (data, translation blocks): one spare block
    // more than 48 blocks per plane leave.
    save_load_continue("dftl", &["geometry.blocks_per_plane=64"], Some("fill=1.0"));
}

#[test]
fn hat() {
    save_load_continue("hat", &[], Some("fill=1.0"));
}

#[test]
fn block() {
    save_load_continue("block", &[], None);
}

#[test]
fn bast() {
    save_load_continue("bast", &[], None);
}

#[test]
fn fast_with_trim_list() {
    save_load_continue("fast", &["ftl.trim_mode=list"], None);
}

#[test]
fn fast_immediate_trim() {
    save_load_continue("fast", &["ftl.trim_mode=immediate"], None);
}

/// A page-FTL drive with one checkpoint (after seed 5) and a journal of
/// seed 6 after it, left as a killed server leaves it.
fn saved_drive() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::open(dir.path()).unwrap();
    let mut s = sim("page", &[]);
    let durable = state.attach(&mut s, Attach::default(), &mut |_, _| {}).unwrap();
    let mut d = Drive::new(s, Pace::None, None).unwrap();
    d.make_durable(durable);
    drive_on(&mut d, 5, 200, 8 << 20);
    let durable = d.checkpoint_and_detach().unwrap().unwrap();
    d.make_durable(durable);
    drive_on(&mut d, 6, 200, 8 << 20);
    dir
}

fn attach(path: &Path, s: &mut Simulation, recover: bool) -> ftlsim::Result<Durable> {
    StateDir::open(path)?.attach(s, Attach { recover, ..Attach::default() }, &mut |_, _| {})
}

fn load_error(path: &Path, s: &mut Simulation) -> String {
    attach(path, s, false).err().expect("refused").to_string()
}

fn contents(s: &Simulation) -> Vec<u8> {
    let page = s.config().geometry.page_size as usize;
    (0..(8u64 << 20) / page as u64)
        .flat_map(|lpn| s.page_contents(lpn as u32).map_or(vec![0; page], |c| c.into_owned()))
        .collect()
}

#[test]
fn refuses_another_drive_naming_the_difference() {
    let dir = saved_drive();
    let e = load_error(dir.path(), &mut sim("page", &["geometry.blocks_per_plane=64"]));
    assert!(e.contains("geometry.blocks_per_plane is 48 there, 64 here"), "{e}");
    assert!(e.contains("state.toml"), "{e}");
    let e = load_error(dir.path(), &mut sim("fast", &[]));
    assert!(e.contains("ftl.name is \"page\" there, \"fast\" here"), "{e}");
}

#[test]
fn a_torn_journal_tail_is_dropped_with_a_notice() {
    let dir = saved_drive();
    let mut whole = sim("page", &[]);
    drop(attach(dir.path(), &mut whole, false).unwrap());
    let journal = dir.path().join("journal.bin");
    // Killed while writing a record: its length says more than follows.
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend_from_slice(&(25u32 + 4096).to_le_bytes());
    bytes.extend_from_slice(&[7; 100]);
    std::fs::write(&journal, &bytes).unwrap();
    let mut s = sim("page", &[]);
    let d = attach(dir.path(), &mut s, false).unwrap();
    assert_eq!(d.notices().len(), 1, "{:?}", d.notices());
    assert!(d.notices()[0].contains("dropped an incomplete last record (104 bytes"), "{:?}", d.notices());
    assert!(contents(&s) == contents(&whole));
}

#[test]
fn a_damaged_journal_is_refused_and_recover_cuts_it() {
    let dir = saved_drive();
    let journal = dir.path().join("journal.bin");
    let good = std::fs::read(&journal).unwrap();
    // Walk to record 40 by the records' lengths.
    let mut at = 16usize;
    for _ in 0..40 {
        at += 8 + u32::from_le_bytes(good[at..at + 4].try_into().unwrap()) as usize;
    }
    let mut bad = good.clone();
    bad[at + 8 + 3] ^= 0x10;
    std::fs::write(&journal, &bad).unwrap();
    let e = load_error(dir.path(), &mut sim("page", &[]));
    assert!(
        e.contains("journal.bin") && e.contains(&format!("record 40 at byte {at} is damaged (checksum mismatch)")),
        "{e}"
    );
    assert!(e.contains("--recover"), "{e}");
    // What --recover serves: the drive after the 40 records before the damage.
    let mut s = sim("page", &[]);
    let d = attach(dir.path(), &mut s, true).unwrap();
    let n = &d.notices()[0];
    assert!(
        n.contains("--recover") && n.contains(&format!("record 40 at byte {at}")) && n.contains("command(s) after it"),
        "{n}"
    );
    drop(d);
    // The journal was cut: it loads as is now, and the same.
    let mut again = sim("page", &[]);
    let d = attach(dir.path(), &mut again, false).unwrap();
    assert!(d.notices().is_empty(), "{:?}", d.notices());
    assert!(contents(&again) == contents(&s));
    drop(d);
    std::fs::write(&journal, &good).unwrap();
    let mut whole = sim("page", &[]);
    drop(attach(dir.path(), &mut whole, false).unwrap());
    assert!(contents(&whole) != contents(&s), "the cut should have dropped writes");
}

#[test]
fn a_damaged_image_is_refused_not_served() {
    let dir = saved_drive();
    let image = dir.path().join("image.bin");
    let mut bytes = std::fs::read(&image).unwrap();
    let at = bytes.iter().position(|&b| b != 0).expect("data in the image");
    bytes[at] ^= 0xff;
    std::fs::write(&image, &bytes).unwrap();
    let e = load_error(dir.path(), &mut sim("page", &[]));
    assert!(e.contains("image.bin") && e.contains(&format!("page {} ", at / 2048)), "{e}");
    assert!(e.contains("does not match its checksum in") && e.contains("image.sums"), "{e}");
}

#[test]
fn a_second_server_on_the_directory_is_refused_naming_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let first = StateDir::open(dir.path()).unwrap();
    let e = StateDir::open(dir.path()).err().expect("refused").to_string();
    assert!(e.contains(&format!("in use by another ftlsim serve (pid {}", std::process::id())), "{e}");
    assert!(e.contains("lock"), "{e}");
    drop(first);
    StateDir::open(dir.path()).unwrap();
}

#[test]
fn a_kill_during_a_checkpoint_leaves_the_previous_one() {
    let dir = saved_drive();
    let mut whole = sim("page", &[]);
    drop(attach(dir.path(), &mut whole, false).unwrap());
    let keep = |name: &str| (name.to_string(), std::fs::read(dir.path().join(name)).unwrap());
    let before = [keep("state.toml"), keep("journal.bin")];
    // A checkpoint that ran up to its commit: commands appended, pages written.
    let mut s = sim("page", &[]);
    let durable = attach(dir.path(), &mut s, false).unwrap();
    let mut d = Drive::new(s, Pace::None, None).unwrap();
    d.make_durable(durable);
    drop(d.checkpoint_and_detach().unwrap());
    drop(d);
    for (name, bytes) in &before {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let mut s = sim("page", &[]);
    drop(attach(dir.path(), &mut s, false).unwrap());
    assert!(contents(&s) == contents(&whole));
}

#[test]
fn damaged_states_are_clear_errors() {
    let dir = saved_drive();
    let commands = dir.path().join("commands.bin");
    let good = std::fs::read(&commands).unwrap();
    std::fs::write(&commands, &good[..good.len() - 3]).unwrap();
    let e = load_error(dir.path(), &mut sim("page", &[]));
    assert!(e.contains("commands.bin") && e.contains("commands of 25 bytes"), "{e}");
    let mut bad_op = good.clone();
    bad_op[25] = 0x7f;
    std::fs::write(&commands, &bad_op).unwrap();
    // Commands before the saved state are not read again while it loads...
    drop(attach(dir.path(), &mut sim("page", &[]), false).unwrap());
    // ...but without it they are, and checked.
    let snaps: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".snap"))
        .collect();
    assert_eq!(snaps.len(), 1, "one saved state, of the closing checkpoint");
    let saved = std::fs::read(snaps[0].path()).unwrap();
    std::fs::remove_file(snaps[0].path()).unwrap();
    let e = load_error(dir.path(), &mut sim("page", &[]));
    assert!(e.contains("commands.bin") && e.contains("do not match their checksum"), "{e}");
    // A damaged saved state is not used: everything is replayed.
    std::fs::write(&commands, &good).unwrap();
    let mut damaged = saved.clone();
    let mid = damaged.len() / 2;
    damaged[mid] ^= 1;
    std::fs::write(snaps[0].path(), &damaged).unwrap();
    let mut s = sim("page", &[]);
    let d = attach(dir.path(), &mut s, false).unwrap();
    assert!(d.notices().iter().any(|n| n.contains("not used") && n.contains("replaying all")), "{:?}", d.notices());
    drop(d);
    assert!(
        contents(&s)
            == contents(&{
                std::fs::write(snaps[0].path(), &saved).unwrap();
                let mut t = sim("page", &[]);
                drop(attach(dir.path(), &mut t, false).unwrap());
                t
            })
    );
    std::fs::write(&commands, &good).unwrap();
    std::fs::remove_file(dir.path().join("journal.bin")).unwrap();
    let e = load_error(dir.path(), &mut sim("page", &[]));
    assert!(e.contains("journal.bin") && e.contains("is missing") && e.contains("--recover"), "{e}");
    std::fs::write(dir.path().join("state.toml"), "format = 3").unwrap();
    let e = load_error(dir.path(), &mut sim("page", &[]));
    assert!(e.contains("state.toml"), "{e}");
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let e = StateDir::open(&file).err().unwrap().to_string();
    assert!(e.contains("is not a directory"), "{e}");
}
