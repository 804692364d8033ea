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
    #[error("external source '{0}' is an absolute path outside the file's folder")]
    Absolute(String),
    /// A path with a NUL byte in it (`%00`).
    #[error("external source '{0}' decodes to a path holding a NUL byte")]
    Nul(String),
    /// A relative path that climbs out of the folder.
    #[error("external source '{0}' leads outside the file's folder")]
    Escapes(String),
    /// A URI with a scheme other than `file:` (`http:`...), or a `file:` URI of another
    /// host.
    #[error("external source '{0}' is a URI rasdf does not read: only files in the file's folder are read")]
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
    crate::uri::escape(&bytes, crate::uri::FILE_NAME)
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
/// (an empty path, or only a fragment). As the reference reads them: a query (`?...`)
/// and a fragment (`#...`) are ignored, and a `file:` URI names a path; an absolute
/// path (or `file:///...`) is taken only when it lies inside the folder.
///
/// # Errors
/// An [`ExternalError`] saying why the source was refused.
pub fn resolve(base_dir: &Path, source: &str) -> Result<Option<PathBuf>, ExternalError> {
    let mut path = source.split('#').next().unwrap_or("");
    path = path.split('?').next().unwrap_or("");
    if path.is_empty() {
        return Ok(None);
    }
    // A scheme is letters, digits, `+-.` before a `:` (RFC 3986); a Windows drive letter
    // (`C:`) is an absolute path.
    if let Some(colon) = path.find(':') {
        let scheme = &path[..colon];
        if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
            if scheme.len() == 1 {
                return Err(ExternalError::Absolute(source.into()));
            }
            if !scheme.eq_ignore_ascii_case("file") {
                return Err(ExternalError::Scheme(source.into()));
            }
            path = &path[colon + 1..];
            // `file://host/path`: this machine only.
            if let Some(rest) = path.strip_prefix("//") {
                let (host, p) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
                    return Err(ExternalError::Scheme(source.into()));
                }
                path = p;
            }
        }
    }
    let mut decoded = crate::uri::unescape(path);
    if decoded.contains(&0) {
        return Err(ExternalError::Nul(source.into()));
    }
    // On Windows `\` separates folders (and `..\` leads out as `../` does); elsewhere it
    // is a character of a name, as the reference (and the writer that escaped it as
    // `%5C`) takes it.
    if cfg!(windows) {
        for b in &mut decoded {
            if *b == b'\\' {
                *b = b'/';
            }
        }
    }
    let io = |e: std::io::Error| ExternalError::Io { path: source.into(), message: e.to_string() };
    let absolute = decoded.starts_with(b"/");
    // The path from the folder: a relative one as it stands, an absolute one from the
    // folder's real path (refused unless it starts there, before anything is looked up).
    let (from, steps) = if absolute {
        let real_base = base_dir.canonicalize().map_err(io)?;
        let wanted = os_path(decoded);
        let inside = wanted.strip_prefix(&real_base).map_err(|_| ExternalError::Absolute(source.into()))?;
        (real_base.clone(), inside.to_path_buf())
    } else {
        (base_dir.to_path_buf(), os_path(decoded))
    };
    let mut rel = PathBuf::new();
    let mut depth = 0usize;
    for comp in steps.components() {
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
    let joined = from.join(&rel);
    // Symbolic links: the real path must stay inside the real folder.
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
        assert!(matches!(resolve(&dir, "file:///etc/passwd"), Err(ExternalError::Absolute(_))));
        assert!(matches!(resolve(&dir, "file://example.org/x.asdf"), Err(ExternalError::Scheme(_))));
        assert!(matches!(resolve(&dir, "file:../x.asdf"), Err(ExternalError::Escapes(_))));
        assert!(matches!(resolve(&dir, "http://example.org/x.asdf"), Err(ExternalError::Scheme(_))));
        assert!(matches!(resolve(&dir, "C:/x.asdf"), Err(ExternalError::Absolute(_))));
        assert!(matches!(resolve(&dir, "%2e%2e/x.asdf"), Err(ExternalError::Escapes(_))));
        assert_eq!(resolve(&dir, "#").unwrap(), None);
        assert_eq!(resolve(&dir, "").unwrap(), None);
        assert!(matches!(resolve(&dir, "a%00.asdf"), Err(ExternalError::Nul(_))));
        assert!(matches!(resolve(&dir, "%2Fetc/passwd"), Err(ExternalError::Absolute(_))));
        // `\` leads out on Windows only; elsewhere it is part of a name in the folder.
        if cfg!(windows) {
            assert!(matches!(resolve(&dir, "..%5Cx.asdf"), Err(ExternalError::Escapes(_))));
            assert!(matches!(resolve(&dir, "..\\x.asdf"), Err(ExternalError::Escapes(_))));
        }
    }

    /// A name holding `\` (a character of names on Unix), escaped as `%5C` by the
    /// writer, names that file in the folder.
    #[cfg(unix)]
    #[test]
    fn a_backslash_is_part_of_a_name_on_unix() {
        let dir = std::env::temp_dir().join(format!("rasdf-backslash-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["a\\b.asdf", "\\back.asdf", "..\\x.asdf"] {
            std::fs::write(dir.join(name), b"x").unwrap();
            let escaped = name.replace('\\', "%5C");
            let want = dir.canonicalize().unwrap().join(name);
            assert_eq!(resolve(&dir, &escaped).unwrap(), Some(want.clone()), "{escaped}");
            assert_eq!(resolve(&dir, name).unwrap(), Some(want), "{name}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
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
        // The forms of a URI the reference reads: a query, a fragment, `file:`; an
        // absolute path inside the folder, and not outside it or through a link.
        let real = inner.canonicalize().unwrap();
        let expected = real.join("inside.asdf");
        for source in [
            "inside.asdf?x=1".to_string(),
            "inside.asdf#/a".to_string(),
            "file:inside.asdf".to_string(),
            format!("file://{}/inside.asdf", real.display()),
            format!("file://localhost{}/inside.asdf", real.display()),
            format!("{}/./inside.asdf", real.display()),
        ] {
            assert_eq!(resolve(&inner, &source).unwrap(), Some(expected.clone()), "{source}");
        }
        for source in [format!("file://{}/outside.asdf", base.display()), format!("{}/../outside.asdf", real.display())]
        {
            let refused = resolve(&inner, &source);
            assert!(matches!(refused, Err(ExternalError::Absolute(_) | ExternalError::Escapes(_))), "{source}");
        }
        let link = format!("file://{}/link.asdf", real.display());
        assert!(matches!(resolve(&inner, &link), Err(ExternalError::Escapes(_))));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
