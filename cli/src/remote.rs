//! Remote inputs (`http://`, `https://`, `s3://`) for the read-only commands: the
//! library's [`rasdf::remote::RemoteOptions`] filled from the environment AWS's tools
//! read, as the command line and the Python package use them.

use std::path::Path;

use rasdf::remote::{RemoteOptions, S3Credentials, S3Options};
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

/// Whether `input` names a remote file.
pub fn is_url(input: &Path) -> bool {
    input.to_str().is_some_and(rasdf::remote::is_url)
}

/// Opens `input`: a URL through [`OpenOptions::open_url`], else a local path.
///
/// # Errors
/// As [`OpenOptions::open_url`] or [`OpenOptions::open`].
pub fn open(input: &Path, options: &OpenOptions) -> rasdf::Result<AsdfFile> {
    match input.to_str().filter(|s| rasdf::remote::is_url(s)) {
        Some(url) => options.open_url(url),
        None => options.open(input),
    }
}
