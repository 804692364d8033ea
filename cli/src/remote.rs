//! Remote inputs (`http://`, `https://`, `s3://`) for the read-only commands: the
//! library's [`rasdf::remote::RemoteOptions`] filled from the environment AWS's tools
//! read, as the command line and the Python package use them.

use std::path::Path;

use rasdf::remote::{RemoteError, RemoteOptions, S3Credentials, S3Options};
use rasdf::{AsdfFile, OpenOptions};

/// [`RemoteOptions`] from the environment: `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`
/// (another S3 endpoint), `AWS_REGION` or `AWS_DEFAULT_REGION`, `AWS_ACCESS_KEY_ID` with
/// `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`); requests are unsigned (public
/// buckets) without a key, or when `AWS_NO_SIGN_REQUEST` is `true`.
pub fn options_from_env() -> RemoteOptions {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let unsigned = var("AWS_NO_SIGN_REQUEST").is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    let credentials = match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        (Some(key_id), Some(secret)) if !unsigned => {
            Some(S3Credentials { key_id, secret, session_token: var("AWS_SESSION_TOKEN") })
        }
        _ => None,
    };
    RemoteOptions {
        s3: S3Options {
            endpoint: var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL")),
            region: var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")),
            credentials,
        },
        ..RemoteOptions::default()
    }
}

/// Whether `input` names a URL, not a local path: `SCHEME://...` with a scheme of two
/// characters or more (`C://x` is a Windows path). A remote file (`http://`, `https://`,
/// `s3://`), or a URL rasdf refuses as one (`ftp://`), never looked for on disk.
pub fn is_url(input: &Path) -> bool {
    input.to_str().is_some_and(|s| {
        rasdf::remote::is_url(s)
            || s.split_once("://").is_some_and(|(scheme, _)| {
                scheme.len() >= 2
                    && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                    && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            })
    })
}

/// Opens `input`: a URL through [`OpenOptions::open_url`] (which refuses other
/// schemes than http, https and s3), else a local path.
///
/// # Errors
/// As [`OpenOptions::open_url`] or [`OpenOptions::open`].
pub fn open(input: &Path, options: &OpenOptions) -> rasdf::Result<AsdfFile> {
    match input.to_str().filter(|_| is_url(input)) {
        Some(url) => options.open_url(url),
        None => options.open(input),
    }
}

/// `input` as it may be printed: a URL without its password, token or signature
/// ([`rasdf::remote::redact_url`]), a path as it is.
pub fn shown(input: &Path) -> String {
    match input.to_str().filter(|_| is_url(input)) {
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
