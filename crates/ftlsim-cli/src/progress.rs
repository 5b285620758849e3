//! A progress bar on stderr for long runs, shown only when a person is
//! watching: stdout and stderr both terminals (not piped, not in CI).
//!
//! Once the phase's total is known (pages to precondition, a trace's bytes
//! or a workload's requests) the bar shows an estimate of the time left, from
//! indicatif's rate over the last seconds: a phase whose pace changes (COFTL's
//! random overwrites crawl after a fast fill) is re-estimated within seconds,
//! and a new phase (its position going back to zero) starts a new estimate.

use ftlsim::trace::Progress;
use indicatif::{HumanDuration, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;

const WITHOUT_TOTAL: &str = "{spinner} [{elapsed_precise}] {msg}";
const WITH_TOTAL: &str = "{spinner} [{elapsed_precise}] {wide_bar} {percent}% {left} {msg}";

/// The bar has a length (and shows percent and the time left) while the
/// phase's total is known.
pub struct Bar(Option<ProgressBar>);

impl Bar {
    pub fn new(quiet: bool) -> Bar {
        if quiet || !std::io::stderr().is_terminal() || !std::io::stdout().is_terminal() {
            return Bar(None);
        }
        Bar::drawn_to(ProgressDrawTarget::stderr())
    }

    fn drawn_to(target: ProgressDrawTarget) -> Bar {
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(style(WITHOUT_TOTAL));
        Bar(Some(bar))
    }

    /// Updates the bar; always asks the run to continue.
    pub fn update(&mut self, p: Progress, commands: u64) -> bool {
        if let Some(bar) = &self.0 {
            if p.total.is_some() != bar.length().is_some() {
                bar.set_style(style(if p.total.is_some() { WITH_TOTAL } else { WITHOUT_TOTAL }));
            }
            match p.total {
                Some(total) => bar.set_length(total),
                None => bar.unset_length(),
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

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).expect("valid template").with_key("left", time_left)
}

/// The time left at the recent rate; until a phase has a rate (its first
/// update), that it is being estimated, rather than indicatif's "0s".
fn time_left(state: &ProgressState, w: &mut dyn std::fmt::Write) {
    let _ = if state.per_sec() > 0.0 {
        write!(w, "(about {} left)", HumanDuration(state.eta()))
    } else {
        write!(w, "(estimating the time left)")
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::TermLike;
    use std::sync::{Arc, Mutex};

    /// A terminal that keeps the last line drawn.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<String>>);

    impl Screen {
        fn line(&self) -> String {
            self.0.lock().unwrap().clone()
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(s)
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            if !s.trim().is_empty() {
                *self.0.lock().unwrap() = s.to_string();
            }
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_time_left_shows_once_the_total_is_known() {
        let screen = Screen::default();
        let mut bar = Bar::drawn_to(ProgressDrawTarget::term_like_with_hz(Box::new(screen.clone()), 255));
        bar.update(Progress { done: 10, total: None }, 10);
        let before = screen.line();
        assert!(before.contains("10 requests") && !before.contains("left"), "{before}");

        bar.update(Progress { done: 0, total: Some(1000) }, 0);
        let started = screen.line();
        assert!(started.contains("0%") && started.contains("estimating the time left"), "{started}");
        std::thread::sleep(std::time::Duration::from_millis(20));
        bar.update(Progress { done: 500, total: Some(1000) }, 0);
        let after = screen.line();
        assert!(
            after.contains("50%")
                && after.contains("about")
                && after.contains("left)")
                && after.contains("preconditioning"),
            "{after}"
        );
        bar.finish();
    }
}
