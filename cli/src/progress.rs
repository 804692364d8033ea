//! Progress bars on standard error for long work (`indicatif`): shown only when standard
//! error is a terminal and `--quiet` is not given, so that scripts and logs see nothing.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What a bar counts.
#[derive(Debug, Clone, Copy)]
pub enum Unit {
    /// Bytes of array data.
    Bytes,
    /// Blocks.
    Blocks,
}

/// Whether bars are drawn: standard error is a terminal and the user did not ask for
/// quiet.
pub fn wanted(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// A bar, and the library's [`rasdf::Progress`] that moves it (`None` when bars are not
/// wanted). The bar is cleared when dropped.
pub fn bar(quiet: bool, message: &str, unit: Unit) -> Option<(Bar, rasdf::Progress)> {
    if !wanted(quiet) {
        return None;
    }
    let template = match unit {
        Unit::Bytes => "{msg} [{bar:32}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
        Unit::Blocks => "{msg} [{bar:32}] {pos}/{len} blocks ({eta})",
    };
    let pb = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> "),
    );
    pb.set_message(message.to_owned());
    let moved = pb.clone();
    let progress = rasdf::Progress::new(move |done, total| {
        if moved.length() != Some(total) {
            moved.set_length(total);
        }
        moved.set_position(done.max(moved.position()));
    });
    Some((Bar(pb), progress))
}

/// A spinner with the time taken, for work whose size is not known ahead.
pub fn spinner(quiet: bool, message: &str) -> Option<Bar> {
    if !wanted(quiet) {
        return None;
    }
    let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb.set_message(message.to_owned());
    pb.enable_steady_tick(Duration::from_millis(120));
    Some(Bar(pb))
}

/// A bar on screen, cleared when dropped (whether the work succeeded or not), so that
/// messages printed after it stand alone.
pub struct Bar(ProgressBar);

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
