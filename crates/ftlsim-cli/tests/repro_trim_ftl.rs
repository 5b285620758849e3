//! `ftlsim repro trim-ftl --quick` as a user runs it: the table on stdout
//! and the four data files, consistent with each other.

use assert_cmd::Command;

#[test]
fn repro_trim_ftl_quick_writes_table_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("ftlsim")
        .unwrap()
        .args(["repro", "trim-ftl", "--quick", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    let (results, heads) = table.split_once("\n## Headlines\n\n").expect("a Headlines section");
    assert_eq!(results.lines().count(), 2 + 8, "{table}");
    // Per workload: TRIM's gain for page and FAST, blocks programmed, wear.
    let claims: Vec<Vec<&str>> = heads.lines().skip(2).map(|l| l.split(" | ").collect()).collect();
    assert_eq!(claims.len(), 2 * 4, "{heads}");
    for c in &claims {
        assert_eq!(c.len(), 6, "{c:?}");
        assert!(["reproduced", "direction only", "differs"].contains(&c[4]), "{c:?}");
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("trim-ftl.md")).unwrap(), table);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("trim-ftl.json")).unwrap()).unwrap();
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 8);
    let csv = std::fs::read_to_string(dir.path().join("trim-ftl.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * (1 + 3) * 2, "header + per config per phase");
    let svg = std::fs::read_to_string(dir.path().join("trim-ftl.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>") && svg.matches("<rect").count() >= 16);
    // The figure says what ran (its drawing is checked in crates/ftlsim/tests/figures.rs).
    assert!(svg.contains("repro trim-ftl on k9lag08u0m-4ch (quick)"), "{svg}");
    // Page mapping programs fewer blocks than FAST on every workload, with or without TRIM.
    for w in ["os-install", "iozone"] {
        for trim in [true, false] {
            let n_pb = |ftl: &str| {
                rows.iter().find(|r| r["workload"] == w && r["ftl"] == ftl && r["trim"] == trim).unwrap()["n_pb"]
                    .as_u64()
                    .unwrap()
            };
            assert!(n_pb("page") < n_pb("fast"), "{w} trim={trim}");
        }
    }
}
