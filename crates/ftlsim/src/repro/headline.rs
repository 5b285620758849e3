//! Headlines: a paper's claims beside a run's figures, each with a verdict
//! and, where they differ, the reason, as one Markdown table. The README
//! carries each repro's table of its full run between two markers
//! (`<!-- generated: NAME -->` … `<!-- /generated: NAME -->`), and a test
//! regenerates the table from the stored results of that run
//! (`docs/repro/NAME.json`) and compares, so the README cannot drift from
//! what the repro prints; `scripts/readme-numbers` writes the blocks with
//! [`replace_readme_block`] from the same stored results.

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

/// Where the text between `<!-- generated: NAME -->` and
/// `<!-- /generated: NAME -->` lies in `doc`, without the marker lines.
fn block_range(doc: &str, name: &str) -> Option<std::ops::Range<usize>> {
    let open = format!("<!-- generated: {name} -->\n");
    let start = doc.find(&open)? + open.len();
    let end = start + doc[start..].find(&format!("<!-- /generated: {name} -->"))?;
    Some(start..end)
}

/// The block `name` of `doc` (the README), without the marker lines.
pub fn readme_block<'a>(doc: &'a str, name: &str) -> Option<&'a str> {
    block_range(doc, name).map(|r| &doc[r])
}

/// `doc` with the block `name` replaced by `text` (None: no such markers).
pub fn replace_readme_block(doc: &str, name: &str, text: &str) -> Option<String> {
    let r = block_range(doc, name)?;
    Some(format!("{}{text}{}", &doc[..r.start], &doc[r.end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_between_markers_is_found_and_rendered_alike() {
        let rows = [Headline::new("c", "w", "1%", "2%".into(), Verdict::DirectionOnly, "why".into())];
        let t = table(&rows);
        assert!(t.ends_with("| c | w | 1% | 2% | direction only | why |\n"), "{t}");
        let doc = format!("intro\n<!-- generated: x -->\n{t}<!-- /generated: x -->\nrest");
        assert_eq!(readme_block(&doc, "x"), Some(t.as_str()));
        assert_eq!(readme_block(&doc, "y"), None);
        let new = replace_readme_block(&doc, "x", "new\n").unwrap();
        assert_eq!(new, "intro\n<!-- generated: x -->\nnew\n<!-- /generated: x -->\nrest");
        assert_eq!(replace_readme_block(&doc, "y", ""), None);
    }
}
