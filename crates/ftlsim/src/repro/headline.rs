//! Headlines: a paper's claims beside a run's figures, each with a verdict
//! and, where they differ, the reason, as one Markdown table. The README
//! carries the tables of the repros' full runs, rendered from their stored
//! results (`crates/ftlsim/tests/readme_headlines.rs`).

use std::fmt;

/// How a figure compares with the paper's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Within the paper's range or tolerance.
    Reproduced,
    /// Same direction (sign or order), different size.
    DirectionOnly,
    Differs,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Reproduced => "reproduced",
            Verdict::DirectionOnly => "direction only",
            Verdict::Differs => "differs",
        })
    }
}

/// Reproduced when the figure is `near` the paper's, else direction only
/// when it goes the `same_direction`, else differs.
pub fn verdict(near: bool, same_direction: bool) -> Verdict {
    match (near, same_direction) {
        (true, _) => Verdict::Reproduced,
        (false, true) => Verdict::DirectionOnly,
        (false, false) => Verdict::Differs,
    }
}

/// One claim of the paper on one workload.
#[derive(Clone, Debug)]
pub struct Headline {
    pub claim: String,
    pub workload: String,
    pub paper: String,
    pub ftlsim: String,
    pub verdict: Verdict,
    /// Why it differs (empty when reproduced).
    pub reason: String,
}

impl Headline {
    pub fn new(claim: &str, workload: &str, paper: &str, ftlsim: String, verdict: Verdict, reason: String) -> Self {
        Headline { claim: claim.into(), workload: workload.into(), paper: paper.into(), ftlsim, verdict, reason }
    }
}

/// The headlines as a Markdown table.
pub fn table(rows: &[Headline]) -> String {
    let mut s = String::from("| claim | workload | paper | ftlsim | verdict | reason |\n|---|---|---|---|---|---|\n");
    for h in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            h.claim, h.workload, h.paper, h.ftlsim, h.verdict, h.reason
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_rendered_with_its_verdict() {
        let rows = [Headline::new("c", "w", "1%", "2%".into(), Verdict::DirectionOnly, "why".into())];
        let t = table(&rows);
        assert!(t.ends_with("| c | w | 1% | 2% | direction only | why |\n"), "{t}");
    }
}
