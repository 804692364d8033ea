//! The command-line tools as library functions: each writes its report to an
//! `impl Write`, so tests call them in process. The binaries only parse arguments.

pub mod args;
pub mod check;
pub mod info;
mod pyrepr;
pub mod rewrite;
pub mod to_yaml;

/// What a command tells its caller to exit with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0: all is well.
    Ok,
    /// Exit 1: the input is damaged or the command failed.
    Failed,
}

impl Outcome {
    /// The process exit code: 0 or 1 (usage errors, 2, are the argument parser's).
    pub fn code(self) -> u8 {
        match self {
            Outcome::Ok => 0,
            Outcome::Failed => 1,
        }
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so
/// that `path` holds either its old content or all of the new, never part of it.
///
/// # Errors
/// I/O errors; the temporary file is removed on failure.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    write_atomically_with(path, |f| f.write_all(bytes))
}

/// Like [`write_atomically`], with `fill` writing the content to the temporary file.
/// The file is not synced to disk: a killed process leaves the old file or the new one,
/// as the rename is atomic; set `RASDF_SYNC=1` (or [`crate::write::WriteOptions::sync`])
/// to also survive a power loss, at the cost of waiting for the disk.
///
/// # Errors
/// I/O errors; the temporary file is removed on failure.
pub fn write_atomically_with(
    path: &std::path::Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.rasdf-tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        fill(&mut f)?;
        if std::env::var_os("RASDF_SYNC").is_some_and(|v| v == "1") {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
