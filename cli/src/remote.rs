//! Remote inputs (`http://`, `https://`, `s3://`) for the read-only commands: how the
//! command line shows them and names what it makes of them. Telling a URL from a path
//! ([`rasdf::file::url_of`]), opening either ([`rasdf::OpenOptions::open_any`]) and the
//! environment's S3 settings ([`rasdf::remote::RemoteOptions::from_env`]) are the
//! library's.

use std::path::Path;

use rasdf::remote::RemoteError;

/// Whether `input` names a URL, not a local path ([`rasdf::file::url_of`]): a remote
/// file, or a URL rasdf refuses as one (`ftp://`), never looked for on disk.
pub fn is_url(input: &Path) -> bool {
    rasdf::file::url_of(input).is_some()
}

/// `input` as it may be printed: a URL without its password, token or signature
/// ([`rasdf::remote::redact_url`]), a path as it is.
pub fn shown(input: &Path) -> String {
    match rasdf::file::url_of(input) {
        Some(url) => rasdf::remote::redact_url(url),
        None => input.display().to_string(),
    }
}

/// The name of a file made from URL `url` (`to-yaml`'s default output): the last part
/// of its path, without query or fragment (`data` when the path has none).
pub fn file_name_of_url(url: &str) -> String {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let path = path.split_once("://").map_or(path, |(_, rest)| rest.split_once('/').map_or("", |(_, p)| p));
    let last = path.rsplit('/').next().unwrap_or("");
    let name = String::from_utf8_lossy(&percent_decode(last)).replace(['/', '\\', '\0'], "_");
    if name.is_empty() || name == "." || name == ".." { "data".to_string() } else { name }
}

/// `%XX` escapes decoded (a malformed one kept as it is).
fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| char::from(c).to_digit(16);
        if b[i] == b'%'
            && let (Some(h), Some(l)) = (b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex))
        {
            out.push(u8::try_from(h * 16 + l).unwrap_or(b'_'));
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Whether an error opening or reading an input is a failure of the read (exit 1)
/// rather than an input that cannot be opened (exit 2): a remote file that changed
/// while it was read, or a server that stopped answering.
pub fn failed_while_read(e: &rasdf::Error) -> bool {
    rasdf::remote::remote_error_of(e).is_some_and(|r: &RemoteError| r.is_changed() || r.is_timeout())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_urls() {
        assert_eq!(file_name_of_url("https://h/d/x.asdf"), "x.asdf");
        assert_eq!(file_name_of_url("https://h/d/x.asdf?X-Amz-Signature=a/b#c"), "x.asdf");
        assert_eq!(file_name_of_url("s3://bucket/dir/my%20file.asdf"), "my file.asdf");
        assert_eq!(file_name_of_url("https://h/d/a%2Fb.asdf"), "a_b.asdf");
        for none in ["https://h", "https://h/", "https://h/d/..", "https://h/%2e%2e"] {
            assert_eq!(file_name_of_url(none), "data", "{none}");
        }
        assert_eq!(shown(Path::new("https://u:secret@h/x.asdf")), "https://u:***@h/x.asdf");
        assert_eq!(shown(Path::new("/tmp/u:secret@h")), "/tmp/u:secret@h");
        assert_eq!(shown(Path::new("ftp://u:secret@h/x")), "ftp://u:***@h/x");
        assert!(is_url(Path::new("HTTPS://h/x")) && is_url(Path::new("ftp://h/x")) && is_url(Path::new("s3://b/k")));
        assert!(!is_url(Path::new("C://x/y.asdf")) && !is_url(Path::new("x.asdf")) && !is_url(Path::new("1a://x")));
    }
}
