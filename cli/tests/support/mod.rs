//! The in-process runner the command-line tests share (`mod support;` in a test file).
#![allow(dead_code)]

/// `rasdf ARGS` in process: the exit code and what went to standard output.
pub fn rasdf_bytes(args: &[&str]) -> (u8, Vec<u8>) {
    let argv = std::iter::once("rasdf").chain(args.iter().copied()).map(Into::into).collect();
    let mut out = Vec::new();
    let code = rasdf_cli::args::main(argv, &mut out);
    (code, out)
}

/// [`rasdf_bytes`], standard output as text.
pub fn rasdf(args: &[&str]) -> (u8, String) {
    let (code, out) = rasdf_bytes(args);
    (code, String::from_utf8(out).expect("the report is UTF-8"))
}

/// The exit code of `rasdf ARGS` in process.
pub fn cli(args: &[&str]) -> u8 {
    rasdf_bytes(args).0
}
