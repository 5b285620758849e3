//! The README's headline tables of `repro hat` (and `repro trim-ftl`'s whole
//! table) are the repros' own output: regenerated here from the stored results of the full
//! runs (`docs/repro/*.json`, written by `scripts/readme-numbers`), they must
//! equal what the README shows.

use ftlsim::repro::headline::readme_block;
use ftlsim::repro::{hat, trim_ftl};

fn root_file(path: &str) -> String {
    let p = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn readme_hat_headlines_are_the_full_runs_output() {
    let results: hat::HatResults = serde_json::from_str(&root_file("docs/repro/hat.json")).unwrap();
    assert!(!results.quick, "the README quotes the full run");
    let readme = root_file("README.md");
    let block = readme_block(&readme, "hat").expect("README has the hat-headlines markers");
    assert_eq!(block, hat::headlines(&results), "rerun scripts/readme-numbers");
}

#[test]
fn readme_trim_ftl_headlines_are_the_full_runs_output() {
    let rows: Vec<trim_ftl::Row> = serde_json::from_str(&root_file("docs/repro/trim-ftl.json")).unwrap();
    let full = trim_ftl::config("page", true, false, 1).unwrap().logical_pages();
    assert!(rows.iter().all(|r| r.host_pages_written > full / 2), "the README quotes the full run");
    let readme = root_file("README.md");
    let block = readme_block(&readme, "trim-ftl").expect("README has the trim-ftl-headlines markers");
    // The whole output: the results table and the headlines.
    assert_eq!(block, trim_ftl::to_markdown(&rows), "rerun scripts/readme-numbers");
}
