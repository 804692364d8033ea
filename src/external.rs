//! Exploded files: an ndarray's `source` may name another ASDF file, relative to the
//! main file's folder. rasdf opens it only when it stays inside that folder.
//!
//! Refused: absolute paths, `..` steps that climb out of the folder, `file:` and other
//! URI schemes, and symbolic links that lead outside. `http(s)` sources are never
//! fetched.

use std::path::{Component, Path, PathBuf};

/// Why a `source` was refused or could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExternalError {
    /// An absolute path.
    #[error("external source '{0}' is an absolute path; only paths relative to the file's folder are allowed")]
    Absolute(String),
    /// A path with a NUL byte in it (`%00`).
    #[error("external source '{0}' decodes to a path holding a NUL byte")]
    Nul(String),
    /// A relative path that climbs out of the folder.
    #[error("external source '{0}' leads outside the file's folder")]
    Escapes(String),
    /// A URI with a scheme (`file:`, `http:`...).
    #[error("external source '{0}' is a URI with a scheme; rasdf reads only relative paths")]
    Scheme(String),
    /// The file reads from memory, so it has no folder to resolve against.
    #[error("external source '{0}' cannot be resolved: the file was not opened from a path")]
    NoBase(String),
    /// The file does not exist or cannot be read.
    #[error("external source '{path}': {message}")]
    Io {
        /// The source.
        path: String,
        /// The I/O error.
        message: String,
    },
}

/// The file name as a relative URI, `%XX`-escaped as the reference's `pathname2url`
/// escapes it: every byte but ASCII letters, digits and `-._~` (so `my file%.asdf` is
/// `my%20file%25.asdf`, which the reference reads back).
pub(crate) fn percent_encode(name: &std::ffi::OsStr) -> String {
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(name).to_vec();
    #[cfg(not(unix))]
    let bytes = name.to_string_lossy().into_owned().into_bytes();
    crate::uri::escape(&bytes, b"-._~")
}

/// A decoded path as the OS takes it (its bytes as they are, on Unix).
fn os_path(bytes: Vec<u8>) -> PathBuf {
    #[cfg(unix)]
    {
        PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Resolves `source` against `base_dir` (the folder of the main file), refusing anything
/// that could lead outside it. Returns `None` when the source names the main file itself
/// (an empty path, or only a fragment).
///
/// # Errors
/// An [`ExternalError`] saying why the source was refused.
pub fn resolve(base_dir: &Path, source: &str) -> Result<Option<PathBuf>, ExternalError> {
    let no_fragment = source.split('#').next().unwrap_or("");
    if no_fragment.is_empty() {
        return Ok(None);
    }
    // A scheme is letters, digits, `+-.` before a `:` (RFC 3986); a Windows drive letter
    // (`C:`) is an absolute path.
    if let Some(colon) = no_fragment.find(':') {
        let scheme = &no_fragment[..colon];
        if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
            if scheme.len() == 1 {
                return Err(ExternalError::Absolute(source.into()));
            }
            return Err(ExternalError::Scheme(source.into()));
        }
    }
    let mut decoded = crate::uri::unescape(no_fragment);
    if decoded.contains(&0) {
        return Err(ExternalError::Nul(source.into()));
    }
    if decoded.starts_with(b"/") || decoded.starts_with(b"\\") {
        return Err(ExternalError::Absolute(source.into()));
    }
    for b in &mut decoded {
        if *b == b'\\' {
            *b = b'/';
        }
    }
    let mut rel = PathBuf::new();
    let mut depth = 0usize;
    for comp in os_path(decoded).components() {
        match comp {
            Component::Normal(c) => {
                rel.push(c);
                depth += 1;
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return Err(ExternalError::Escapes(source.into()));
                }
                rel.pop();
                depth -= 1;
            }
            Component::RootDir | Component::Prefix(_) => return Err(ExternalError::Absolute(source.into())),
        }
    }
    if depth == 0 {
        return Ok(None);
    }
    let joined = base_dir.join(&rel);
    // Symbolic links: the real path must stay inside the real folder.
    let io = |e: std::io::Error| ExternalError::Io { path: source.into(), message: e.to_string() };
    let real_base = base_dir.canonicalize().map_err(io)?;
    let real = joined.canonicalize().map_err(io)?;
    if !real.starts_with(&real_base) {
        return Err(ExternalError::Escapes(source.into()));
    }
    Ok(Some(real))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_leads_out() {
        let dir = std::env::temp_dir();
        assert!(matches!(resolve(&dir, "/etc/passwd"), Err(ExternalError::Absolute(_))));
        assert!(matches!(resolve(&dir, "../x.asdf"), Err(ExternalError::Escapes(_))));
        assert!(matches!(resolve(&dir, "a/../../x.asdf"), Err(ExternalError::Escapes(_))));
        assert!(matches!(resolve(&dir, "file:///etc/passwd"), Err(ExternalError::Scheme(_))));
        assert!(matches!(resolve(&dir, "http://example.org/x.asdf"), Err(ExternalError::Scheme(_))));
        assert!(matches!(resolve(&dir, "C:/x.asdf"), Err(ExternalError::Absolute(_))));
        assert!(matches!(resolve(&dir, "%2e%2e/x.asdf"), Err(ExternalError::Escapes(_))));
        assert_eq!(resolve(&dir, "#").unwrap(), None);
        assert_eq!(resolve(&dir, "").unwrap(), None);
        assert!(matches!(resolve(&dir, "a%00.asdf"), Err(ExternalError::Nul(_))));
        assert!(matches!(resolve(&dir, "%2Fetc/passwd"), Err(ExternalError::Absolute(_))));
    }

    #[test]
    fn names_are_escaped_as_the_reference_escapes_them_and_read_back() {
        // pathname2url("out é%+~(1)0000.asdf") in the reference.
        let name = std::ffi::OsStr::new("out é%+~(1)0000.asdf");
        assert_eq!(percent_encode(name), "out%20%C3%A9%25%2B~%281%290000.asdf");
        let base = std::env::temp_dir().join(format!("rasdf-ext-names-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        std::fs::write(base.join(name), b"#ASDF 1.0.0\n").unwrap();
        let found = resolve(&base, &percent_encode(name)).unwrap().unwrap();
        assert_eq!(found.file_name(), Some(name));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn refuses_symlinks_that_lead_out() {
        let base = std::env::temp_dir().join(format!("rasdf-ext-{}", std::process::id()));
        let inner = base.join("inner");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(base.join("outside.asdf"), b"#ASDF 1.0.0\n").unwrap();
        std::fs::write(inner.join("inside.asdf"), b"#ASDF 1.0.0\n").unwrap();
        let _ = std::fs::remove_file(inner.join("link.asdf"));
        std::os::unix::fs::symlink(base.join("outside.asdf"), inner.join("link.asdf")).unwrap();
        assert!(matches!(resolve(&inner, "link.asdf"), Err(ExternalError::Escapes(_))));
        assert!(resolve(&inner, "inside.asdf").unwrap().is_some());
        assert!(resolve(&inner, "sub/../inside.asdf").unwrap().is_some());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
