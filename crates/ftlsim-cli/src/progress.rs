//! A progress bar on stderr for long runs, shown only when a person is
//! watching: stdout and stderr both terminals (not piped, not in CI).

use ftlsim::trace::Progress;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

pub struct Bar(Option<ProgressBar>);

impl Bar {
    pub fn new(quiet: bool) -> Bar {
        if quiet || !std::io::stderr().is_terminal() || !std::io::stdout().is_terminal() {
            return Bar(None);
        }
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {percent}% {msg}")
                .expect("valid template"),
        );
        Bar(Some(bar))
    }

    /// Updates the bar; always asks the run to continue.
    pub fn update(&mut self, p: Progress, commands: u64) -> bool {
        if let Some(bar) = &self.0 {
            if let Some(total) = p.total {
                bar.set_length(total);
            }
            bar.set_position(p.done);
            // Preconditioning reports pages written, before any request.
            bar.set_message(if commands == 0 { "preconditioning".to_string() } else { format!("{commands} requests") });
        }
        true
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
        }
    }
}
