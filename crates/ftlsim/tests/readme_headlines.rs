//! Every figure the README quotes from a simulation sits between
//! `<!-- generated: NAME -->` markers and is the output of the code that
//! prints it, rendered from stored results: each repro's full run
//! (`docs/repro/NAME.json`) by the repro's own Markdown, and the README's
//! example commands (`docs/readme/NAME.json`, their `--json` reports) by the
//! report table. `scripts/readme-numbers` reruns them and writes the blocks
//! by running this test with `FTLSIM_BLESS_README=1`; otherwise it fails
//! when the README differs. The main job is also run again here, so a
//! change of the simulator's results fails until the script is rerun.

use ftlsim::job::{Input, Job};
use ftlsim::report::{render_comparison, render_table};
use ftlsim::repro::{coftl, hat, mu_ftl, trim_cost, trim_ftl};
use ftlsim::{Config, Report};

/// Where the text between `<!-- generated: NAME -->` and
/// `<!-- /generated: NAME -->` lies in `doc`, without the marker lines.
fn block_range(doc: &str, name: &str) -> Option<std::ops::Range<usize>> {
    let open = format!("<!-- generated: {name} -->\n");
    let start = doc.find(&open)? + open.len();
    let end = start + doc[start..].find(&format!("<!-- /generated: {name} -->"))?;
    Some(start..end)
}

fn readme_block<'a>(doc: &'a str, name: &str) -> Option<&'a str> {
    block_range(doc, name).map(|r| &doc[r])
}

fn replace_readme_block(doc: &str, name: &str, text: &str) -> Option<String> {
    let r = block_range(doc, name)?;
    Some(format!("{}{text}{}", &doc[..r.start], &doc[r.end..]))
}

#[test]
fn a_block_between_markers_is_found_and_replaced() {
    let doc = "intro\n<!-- generated: x -->\nold\n<!-- /generated: x -->\nrest";
    assert_eq!(readme_block(doc, "x"), Some("old\n"));
    assert_eq!(readme_block(doc, "y"), None);
    let new = replace_readme_block(doc, "x", "new\n").unwrap();
    assert_eq!(new, "intro\n<!-- generated: x -->\nnew\n<!-- /generated: x -->\nrest");
    assert_eq!(replace_readme_block(doc, "y", ""), None);
}

fn root_path(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

fn root_file(path: &str) -> String {
    let p = root_path(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn stored<T: serde::de::DeserializeOwned>(path: &str) -> T {
    serde_json::from_str(&root_file(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The wall time is this machine's, not the simulation's: left out.
fn without_wall_time(table: String) -> String {
    table.lines().filter(|l| !l.starts_with("wall time")).map(|l| format!("{l}\n")).collect()
}

/// The rows of a report table whose label starts with one of `labels`.
fn rows(table: String, labels: &[&str]) -> String {
    table.lines().filter(|l| labels.iter().any(|k| l.starts_with(k))).map(|l| format!("{l}\n")).collect()
}

fn text_block(table: String) -> String {
    format!("```text\n{table}```\n")
}

/// The README's main job, as "Two commands" gives it.
fn main_job_table(r: &Report) -> String {
    text_block(without_wall_time(render_table(r)))
}

fn repro_hat() -> String {
    let results: hat::HatResults = stored("docs/repro/hat.json");
    assert!(!results.quick, "the README quotes the full run");
    hat::headlines(&results)
}

fn repro_trim_ftl() -> String {
    let rows: Vec<trim_ftl::Row> = stored("docs/repro/trim-ftl.json");
    let full = trim_ftl::config("page", true, false, 1).unwrap().logical_pages();
    assert!(rows.iter().all(|r| r.host_pages_written > full / 2), "the README quotes the full run");
    // The whole output: the results table and the headlines.
    trim_ftl::to_markdown(&rows)
}

fn repro_trim_cost() -> String {
    let rows: Vec<trim_cost::Row> = stored("docs/repro/trim-cost.json");
    // Only the full run's ranges reach 1 GiB.
    assert!(
        rows.iter().any(|r| r.series == "size" && r.x == (1u64 << 30).to_string()),
        "the README quotes the full run"
    );
    trim_cost::to_markdown(&rows)
}

fn repro_mu_ftl() -> String {
    let rows: Vec<mu_ftl::Row> = stored("docs/repro/mu-ftl.json");
    let real = mu_ftl::REAL_TRACE.rsplit('/').next().unwrap();
    assert!(rows.iter().any(|r| r.workload == real), "the README quotes the run with the real trace");
    // DAC's forward and backward maps (4 B an entry) cover the full run's
    // drive, not --quick's half-size one.
    let pages = mu_ftl::config("dac", 3.0, false, 1, &[]).unwrap().logical_pages();
    let dac = rows.iter().find(|r| r.figure == "fig8" && r.ftl == "dac").expect("a DAC row");
    assert!(dac.mapping_ram_bytes >= 8 * pages, "the README quotes the full run");
    mu_ftl::to_markdown(&rows)
}

fn repro_coftl() -> String {
    let rows: Vec<coftl::Row> = stored("docs/repro/coftl.json");
    let recoveries = rows.iter().filter(|r| r.figure == "recovery" && r.ftl == "coftl").count();
    assert_eq!(recoveries, coftl::scale(false).recovery_blocks.len(), "the README quotes the full run");
    coftl::to_markdown(&rows)
}

fn main_job() -> String {
    main_job_table(&stored("docs/readme/main-job.json"))
}

/// `compare --vary ftl.map_unit_bytes=16384,4096`, labelled as `compare` does.
fn map_units() -> String {
    let reports: Vec<Report> = stored("docs/readme/map-units.json");
    let labels: Vec<String> = reports.iter().map(|r| format!("{} {}", r.ftl, r.overrides.join(" "))).collect();
    text_block(without_wall_time(render_comparison(&reports, &labels)))
}

fn coftl_randwrite() -> String {
    let r: Report = stored("docs/readme/coftl-randwrite.json");
    text_block(rows(render_table(&r), &["IOPS", "write amplification", "blocks erased"]))
}

/// A power-cut example: the report table's recovery row.
fn power_cut(name: &str) -> String {
    let r: Report = stored(&format!("docs/readme/{name}.json"));
    assert!(!r.power_cuts.is_empty(), "{name}: the stored run made no power cut");
    text_block(rows(render_table(&r), &["power cuts"]))
}

/// The README's generated blocks: name and what it must hold.
fn blocks() -> Vec<(&'static str, String)> {
    vec![
        ("repro-hat", repro_hat()),
        ("repro-trim-ftl", repro_trim_ftl()),
        ("repro-trim-cost", repro_trim_cost()),
        ("repro-mu-ftl", repro_mu_ftl()),
        ("repro-coftl", repro_coftl()),
        ("main-job", main_job()),
        ("map-units", map_units()),
        ("coftl-randwrite", coftl_randwrite()),
        ("coftl-power-cut", power_cut("coftl-power-cut")),
        ("mu-power-cut", power_cut("mu-power-cut")),
    ]
}

#[test]
fn readme_blocks_are_the_stored_runs_output() {
    let mut readme = root_file("README.md");
    let bless = std::env::var_os("FTLSIM_BLESS_README").is_some();
    let mut stale = Vec::new();
    for (name, text) in blocks() {
        let block = readme_block(&readme, name).unwrap_or_else(|| panic!("README has no generated: {name} block"));
        if block == text {
            continue;
        }
        if bless {
            readme = replace_readme_block(&readme, name, &text).unwrap();
        } else {
            stale.push(format!("{name}:\n--- README\n{block}--- stored run\n{text}"));
        }
    }
    if bless {
        std::fs::write(root_path("README.md"), readme).unwrap();
    }
    assert!(stale.is_empty(), "rerun scripts/readme-numbers; stale README blocks:\n{}", stale.join("\n"));
}

/// The simulator still prints the README's main job (deterministic: same
/// config, workload and seed, same report).
#[test]
fn the_main_job_prints_what_the_readme_shows() {
    let job = Job {
        config: Config::load("hat-table4", &[]).unwrap(),
        input: Input::Workload("rw=randwrite,bs=4k,ios=200000,iodepth=32".into()),
        precondition: Some("fill=1.0,overwrite=0.5".parse().unwrap()),
        snapshot_dir: None,
    };
    let now = main_job_table(&job.run(&mut |_, _| true).unwrap());
    let readme = root_file("README.md");
    let block = readme_block(&readme, "main-job").expect("README has the main-job block");
    assert_eq!(block, now, "the simulator's results changed: rerun scripts/readme-numbers");
}

/// Every paper headline the stored runs give (each repro's table of claim,
/// paper, ftlsim, verdict, reason) says why where it is not reproduced.
#[test]
fn every_headline_not_reproduced_says_why() {
    let mut headlines = 0;
    for (name, text) in blocks() {
        let mut in_headlines = false;
        for line in text.lines() {
            if line.starts_with("| claim |") {
                in_headlines = line.trim_end().ends_with("| verdict | reason |");
                continue;
            }
            if !in_headlines || !line.starts_with('|') || line.starts_with("|---") {
                in_headlines &= line.starts_with('|');
                continue;
            }
            let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
            let (verdict, reason) = (cells[cells.len() - 2], cells[cells.len() - 1]);
            assert!(
                ["reproduced", "direction only", "differs"].contains(&verdict),
                "{name}: verdict {verdict:?} in {line}"
            );
            assert!(verdict == "reproduced" || !reason.is_empty(), "{name}: {verdict} without a reason: {line}");
            headlines += 1;
        }
    }
    assert!(headlines >= 20, "only {headlines} headlines found in the stored runs' tables");
}
