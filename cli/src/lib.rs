//! The command-line tools as library functions: each writes its report to an
//! `impl Write`, so tests call them in process. The binaries only parse arguments.

pub mod args;
pub mod check;
pub mod diff;
pub mod edit;
pub mod extract;
#[doc(hidden)]
pub mod fuzzing;
pub mod outputs;
pub mod preview;
pub mod progress;
pub mod remote;
pub mod rewrite;
pub mod search;
pub mod signals;
pub mod terminal;
pub mod to_yaml;

/// What a command tells its caller to exit with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0: all is well.
    Ok,
    /// Exit 1: the input is damaged or the command failed.
    Failed,
    /// Exit 2: the input could not be opened (missing, a folder, no permission): a
    /// usage error, not damage.
    Unopened,
}

impl Outcome {
    /// The process exit code: 0, 1, or 2 for an input that could not be opened (other
    /// usage errors, also 2, are the argument parser's).
    pub fn code(self) -> u8 {
        match self {
            Outcome::Ok => 0,
            Outcome::Failed => 1,
            Outcome::Unopened => 2,
        }
    }
}
