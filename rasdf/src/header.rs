//! The file's opening: `#ASDF 1.0.0`, `#` comment lines, and the YAML tree's byte range.
//!
//! ASDF Standard, file_layout "Header": the first line is `#ASDF <version>`; comment lines
//! starting with `#` follow (`#ASDF_STANDARD 1.6.0` names the core schema version); then
//! the tree, from `%YAML` up to a line holding only `...`, or binary blocks directly.

use std::ops::Range;

/// What can be wrong with the opening of a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// The first line is not `#ASDF <version>`.
    #[error("not an ASDF file: the first line is not '#ASDF <version>'")]
    NotAsdf,
    /// The file format version is not 1.0.0.
    #[error("unsupported ASDF file format version '{0}' (only 1.0.0 exists)")]
    UnsupportedVersion(String),
    /// A line between the header and the tree does not start with `#`.
    #[error("invalid content between the header and the tree: the line does not start with '#'")]
    InvalidComment,
    /// Bytes after the comments are neither `%YAML` nor a block magic.
    #[error("garbage after the header: expected '%YAML' or a block magic")]
    Garbage,
    /// The tree has no `...` end line.
    #[error("the YAML tree has no end marker ('...' on a line of its own)")]
    NoTreeEnd,
}

/// The parsed opening of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The file format version from `#ASDF`, always `1.0.0`.
    pub file_format_version: String,
    /// The `#ASDF_STANDARD` version, when the comments give one.
    pub standard_version: Option<String>,
    /// The comment lines, without their `#` and surrounding white space.
    pub comments: Vec<String>,
    /// The YAML tree's bytes (from `%YAML` to just after the `...` line), if any.
    pub tree: Option<Range<u64>>,
    /// Where to look for the first block: the end of the tree, or of the comments.
    pub blocks_from: u64,
    /// Odd but accepted things (blank comment lines...), with their byte offsets.
    pub warnings: Vec<(u64, String)>,
}

impl Header {
    /// The core schema version in force: `#ASDF_STANDARD`'s, or 1.0.0 when absent, as the
    /// reference library does.
    pub fn standard(&self) -> &str {
        self.standard_version.as_deref().unwrap_or("1.0.0")
    }
}

/// Versions of the ASDF Standard whose schemas rasdf knows.
pub const KNOWN_STANDARDS: &[&str] = &["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0"];

fn is_semver(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Splits `s` at the first line break, returning (line without `\r?\n`, rest offset).
fn line_at(file: &[u8], from: usize) -> (&[u8], usize) {
    let rest = &file[from..];
    match memchr::memchr(b'\n', rest) {
        Some(i) => {
            let line = &rest[..i];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            (line, from + i + 1)
        }
        None => (rest, file.len()),
    }
}

/// Parses the header line, the comments and finds the tree's byte range.
///
/// # Errors
/// A [`HeaderError`] and the byte offset it applies to.
pub fn parse(file: &[u8]) -> Result<Header, (HeaderError, u64)> {
    let (first, mut pos) = line_at(file, 0);
    let tokens: Vec<&[u8]> = first.split(|b| b.is_ascii_whitespace()).filter(|t| !t.is_empty()).collect();
    if tokens.len() != 2 || tokens[0] != b"#ASDF" {
        return Err((HeaderError::NotAsdf, 0));
    }
    let version = String::from_utf8_lossy(tokens[1]).into_owned();
    if version != "1.0.0" {
        return Err((HeaderError::UnsupportedVersion(version), 6));
    }
    // Comment section: up to the first `%YAML` or block magic, or the end of the file.
    let rest = &file[pos..];
    let yaml_at = memchr::memmem::find(rest, b"%YAML");
    let magic_at = memchr::memmem::find(rest, &crate::block::BLOCK_MAGIC);
    let comments_end = pos
        + match (yaml_at, magic_at) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => rest.len(),
        };
    let mut comments = Vec::new();
    let mut warnings = Vec::new();
    let mut standard_version = None;
    while pos < comments_end {
        let line_start = pos;
        let (line, next) = line_at(&file[..comments_end], pos);
        pos = next;
        if line.iter().all(u8::is_ascii_whitespace) {
            // The reference rejects blank lines here; accepting them is harmless.
            warnings.push((line_start as u64, "blank line between the header and the tree".into()));
            continue;
        }
        let Some(text) = line.strip_prefix(b"#") else {
            return Err((HeaderError::InvalidComment, line_start as u64));
        };
        let text = String::from_utf8_lossy(text).trim().to_string();
        let parts: Vec<&str> = text.split_whitespace().collect();
        if standard_version.is_none() && parts.len() == 2 && parts[0] == "ASDF_STANDARD" {
            if is_semver(parts[1]) {
                if !KNOWN_STANDARDS.contains(&parts[1]) {
                    warnings.push((
                        line_start as u64,
                        format!("unknown ASDF Standard version {}; reading as the newest known", parts[1]),
                    ));
                }
                standard_version = Some(parts[1].to_string());
            } else {
                warnings.push((
                    line_start as u64,
                    format!("unparsable ASDF Standard version '{}'; assuming 1.0.0", parts[1]),
                ));
            }
        }
        comments.push(text);
    }
    pos = comments_end;
    let tail = &file[pos..];
    // No tree: the file ends, or blocks start right after the comments.
    if tail.is_empty() || tail.starts_with(&crate::block::BLOCK_MAGIC) {
        return Ok(Header {
            file_format_version: version,
            standard_version,
            comments,
            tree: None,
            blocks_from: pos as u64,
            warnings,
        });
    }
    if !tail.starts_with(b"%YAM") {
        return Err((HeaderError::Garbage, pos as u64));
    }
    let end = find_tree_end(tail).ok_or((HeaderError::NoTreeEnd, pos as u64))?;
    let tree = pos as u64..(pos + end) as u64;
    Ok(Header {
        file_format_version: version,
        standard_version,
        comments,
        tree: Some(tree.clone()),
        blocks_from: tree.end,
        warnings,
    })
}

/// The end (exclusive) of the first `\r?\n...` followed by `\r?\n` or the end of input.
pub fn find_tree_end(tree: &[u8]) -> Option<usize> {
    let finder = memchr::memmem::Finder::new(b"\n...");
    let mut from = 0;
    while let Some(i) = finder.find(&tree[from..]) {
        let after = from + i + 4;
        match &tree[after..] {
            [] => return Some(after),
            [b'\n', ..] => return Some(after + 1),
            [b'\r', b'\n', ..] => return Some(after + 2),
            _ => from = from + i + 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_file() {
        let h = parse(b"#ASDF 1.0.0").unwrap();
        assert_eq!(h.tree, None);
        assert_eq!(h.standard(), "1.0.0");
    }

    #[test]
    fn crlf_header_and_tree() {
        let f = b"#ASDF 1.0.0\r\n#ASDF_STANDARD 1.5.0\r\n%YAML 1.1\r\n---\r\na: 1\r\n...\r\n";
        let h = parse(f).unwrap();
        assert_eq!(h.standard_version.as_deref(), Some("1.5.0"));
        assert_eq!(h.tree, Some(35..f.len() as u64));
    }

    #[test]
    fn errors_with_offsets() {
        assert_eq!(parse(b"SIMPLE  = T").unwrap_err(), (HeaderError::NotAsdf, 0));
        assert_eq!(parse(b"#ASDF 1.0.1\n").unwrap_err().0, HeaderError::UnsupportedVersion("1.0.1".into()));
        assert_eq!(parse(b"#ASDF 1.0.0\nhello\n%YAML 1.1").unwrap_err(), (HeaderError::InvalidComment, 12));
        assert_eq!(parse(b"#ASDF 1.0.0\n%YAML 1.1\n--- {}\n").unwrap_err(), (HeaderError::NoTreeEnd, 12));
    }

    #[test]
    fn tree_end_needs_a_line_of_its_own() {
        assert_eq!(find_tree_end(b"a\n... # c\nb\n...\n"), Some(16));
        assert_eq!(find_tree_end(b"a\n  ...\n"), None);
        assert_eq!(find_tree_end(b"a\n..."), Some(5));
    }
}
