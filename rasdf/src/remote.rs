//! Files on HTTP(S) servers and in S3 buckets, read by byte ranges (feature `remote`).
//!
//! A [`Remote`] is one object behind a URL: `http://`, `https://` or `s3://bucket/key`.
//! It knows the object's length from its first answer and fetches byte ranges with HTTP
//! `Range` requests: several at once on their own threads, ranges close together
//! coalesced into one request. Each answer is checked (status 206, a `Content-Range`
//! that is the range asked for, a body of exactly that length); a server error (5xx,
//! 429) or a refused or broken connection is retried a bounded number of times, other
//! failures (a timeout among them) are errors at once. [`crate::OpenOptions::open_url`] opens an ASDF
//! file through one.
//!
//! **Threads.** The requests in flight run on threads of their own (scoped to the read
//! that makes them, at most [`RemoteOptions::parallel`] at a time), not on the rayon
//! pool: they block on the network, and a worker waiting for a server would hold up the
//! decoding that the pool is for (or, on a pool of one thread, the read itself). They
//! are the threads a caller asks for by opening a URL; local files start none.
//!
//! Three rules hold for every request, the first ones of an open as the later ones
//! (and an exploded file's block files):
//!
//! - **Redaction.** A URL is shown (in errors, [`Remote::url`], `Debug`) only as
//!   [`redact_url`] gives it: a password in it, a user name alone (often a token), and
//!   the values of query parameters that carry credentials (`X-Amz-Signature`,
//!   `X-Amz-Credential`, `sig`, `token`...) are `***`. S3 credentials are never shown.
//! - **Redirects** are followed (at most [`RemoteOptions::max_redirects`]) only to the
//!   same origin: scheme, host and port. Another origin is [`RemoteError::Redirect`],
//!   naming both. A block file of an exploded file is also held to the main file's
//!   folder: a redirect out of it is refused as well.
//! - **One version.** The first answer's `ETag` and `Last-Modified` are kept; every
//!   later request is sent on condition that the object did not change (`If-Match` with
//!   a strong ETag, else `If-Unmodified-Since` with the date) and every answer's
//!   validators are compared with the first's. A `412 Precondition Failed`, another
//!   validator or another length is [`RemoteError::Changed`] ("the remote file changed
//!   while it was read"), never retried; the object then fails every later request
//!   without asking. Bytes fetched before the change (the tree, cached blocks) are the
//!   first version's.
//!
//! **Timeout.** [`RemoteOptions::timeout`] bounds how long a server may stay silent: an
//! attempt fails when a connection is not made within it, or when no byte of the answer
//! comes for that long (a server that keeps sending, however slowly, is not cut off). A
//! request that timed out is not retried, and a fetch of several parts starts none after
//! one failed: a stalled server fails a read in one timeout (at most one for the name
//! lookup, one for connecting and one of silence), not one per attempt or part.
//!
//! S3 requests are signed (AWS Signature V4, as query parameters) when credentials are
//! given, and sent unsigned otherwise (public buckets). The library reads no environment
//! variables unless asked: [`RemoteOptions::from_env`] fills [`S3Options`] from the usual
//! `AWS_*` ones (the command line and the Python package call it).
//!
//! The HTTP client is `ureq` (blocking, rustls): a few dozen small crates, against the
//! hundred and seventy of an async object-store client and its runtime; S3 signing is
//! `rusty-s3`'s (it signs URLs and sends nothing).

use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How remote objects are read: [`RemoteOptions::default`] or
/// [`RemoteOptions::from_env`], then a setter for each field to change.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RemoteOptions {
    /// How long a server may stay silent (60 s by default): a request fails when no
    /// connection is made within it, or when no byte of the answer arrives for that long.
    /// A request that timed out is not retried. [`Duration::ZERO`]: no limit.
    pub timeout: Duration,
    /// Attempts after the first for a request that failed in a way that may pass (a 5xx
    /// or 429 answer, a broken or refused connection; not a timeout).
    pub retries: u32,
    /// Pause before the first retry, doubled for each next one.
    pub retry_pause: Duration,
    /// Ranges closer than this are fetched in one request.
    pub coalesce_gap: u64,
    /// Requests in flight at once.
    pub parallel: usize,
    /// A range larger than this is fetched in parts of this size, side by side.
    pub part_bytes: u64,
    /// Where and as whom to reach S3.
    pub s3: S3Options,
    /// Redirects followed for one request, each to the same origin (scheme, host, port).
    pub max_redirects: u32,
}

crate::setters::setters!(RemoteOptions {
    timeout: Duration,
    retries: u32,
    retry_pause: Duration,
    coalesce_gap: u64,
    parallel: usize,
    part_bytes: u64,
    s3: S3Options,
    max_redirects: u32,
});

impl RemoteOptions {
    /// The default options with [`S3Options`] from the environment AWS's tools read:
    /// `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` (another S3 endpoint), `AWS_REGION` or
    /// `AWS_DEFAULT_REGION`, `AWS_ACCESS_KEY_ID` with `AWS_SECRET_ACCESS_KEY` (and
    /// `AWS_SESSION_TOKEN`); requests are unsigned (public buckets) without a key, or
    /// when `AWS_NO_SIGN_REQUEST` is `true` (or `1`). An empty variable is an unset one.
    ///
    /// The library reads the environment only when this is called: the command line and
    /// the Python package call it.
    pub fn from_env() -> Self {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// [`RemoteOptions::from_env`] with `var` for the environment.
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let var = |k: &str| var(k).filter(|v| !v.is_empty());
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
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            timeout: Duration::from_secs(60),
            retries: 3,
            retry_pause: Duration::from_millis(100),
            coalesce_gap: 256 * 1024,
            parallel: 16,
            part_bytes: 8 << 20,
            s3: S3Options::default(),
            max_redirects: 10,
        }
    }
}

/// Where S3 is and the credentials to sign with: [`S3Options::default`] (AWS, unsigned),
/// then a setter for each field to change.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct S3Options {
    /// An endpoint other than AWS's (`http://127.0.0.1:9000`, a MinIO, moto...): objects
    /// are then addressed path-style, `ENDPOINT/bucket/key`.
    pub endpoint: Option<String>,
    /// The bucket's region (`us-east-1` when not given).
    pub region: Option<String>,
    /// Credentials; `None` sends requests unsigned (public buckets).
    pub credentials: Option<S3Credentials>,
}

/// AWS credentials: [`S3Credentials::new`], with [`S3Credentials::session_token`] for
/// temporary ones.
#[derive(Clone)]
#[non_exhaustive]
pub struct S3Credentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret: String,
    /// `AWS_SESSION_TOKEN`, for temporary credentials.
    pub session_token: Option<String>,
}

crate::setters::setters!(S3Options { endpoint: Option<String>, region: Option<String>, credentials: Option<S3Credentials> });

impl S3Credentials {
    /// The key id (`AWS_ACCESS_KEY_ID`) and secret (`AWS_SECRET_ACCESS_KEY`), with no
    /// session token.
    pub fn new(key_id: String, secret: String) -> Self {
        S3Credentials { key_id, secret, session_token: None }
    }
}

crate::setters::setters!(S3Credentials { session_token: Option<String> });

impl std::fmt::Debug for S3Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Options")
            .field("endpoint", &self.endpoint.as_deref().map(redact_url))
            .field("region", &self.region)
            .field("credentials", &self.credentials)
            .finish()
    }
}

impl std::fmt::Debug for S3Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key id's last 4 characters, as AWS's tools show it.
        let n = self.key_id.chars().count();
        let shown: String = if n >= 16 { self.key_id.chars().skip(n - 4).collect() } else { String::new() };
        f.debug_struct("S3Credentials").field("key_id", &format!("***{shown}")).finish_non_exhaustive()
    }
}

/// What can go wrong reading a remote object. Every URL in it is as [`redact_url`]
/// shows it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// Not a URL rasdf reads.
    #[error("'{0}' is not an http://, https:// or s3://bucket/key URL")]
    BadUrl(String),
    /// The server answered with an error status.
    #[error("{url}: the server answered {status}{}", retried(*attempts))]
    Status {
        /// The URL (without signature).
        url: String,
        /// The HTTP status.
        status: u16,
        /// Requests made.
        attempts: u32,
    },
    /// The answer is not what was asked for.
    #[error("{url}: {message}")]
    Protocol {
        /// The URL.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// The connection failed or timed out.
    #[error("{url}: {message}{}", retried(*attempts))]
    Transport {
        /// The URL.
        url: String,
        /// What failed.
        message: String,
        /// Whether it was a timeout.
        timeout: bool,
        /// Requests made.
        attempts: u32,
    },
    /// A redirect to another origin (scheme, host, port), or out of the folder an
    /// exploded file's block files must stay in: not followed.
    #[error("{url}: the server redirected from {from} to {to}, {why}: not followed")]
    Redirect {
        /// The URL.
        url: String,
        /// Where the redirect came from (its origin, or its URL when the folder is what
        /// it leaves).
        from: String,
        /// Where it led.
        to: String,
        /// Which rule it breaks.
        why: &'static str,
    },
    /// The object changed since its first answer (another ETag, Last-Modified or
    /// length, or a 412 to a request made on condition that it had not): what was read
    /// would be a mix of two versions.
    #[error("{url}: the remote file changed while it was read ({detail})")]
    Changed {
        /// The URL.
        url: String,
        /// What told.
        detail: String,
    },
}

fn retried(attempts: u32) -> String {
    if attempts > 1 { format!(" (after {attempts} attempts)") } else { String::new() }
}

impl RemoteError {
    /// Whether this is a timeout (then [`io::ErrorKind::TimedOut`] as an I/O error).
    pub fn is_timeout(&self) -> bool {
        matches!(self, RemoteError::Transport { timeout: true, .. })
    }

    /// Whether the object changed while it was read ([`RemoteError::Changed`]).
    pub fn is_changed(&self) -> bool {
        matches!(self, RemoteError::Changed { .. })
    }
}

impl From<RemoteError> for io::Error {
    fn from(e: RemoteError) -> io::Error {
        let kind = match &e {
            RemoteError::BadUrl(_) => io::ErrorKind::InvalidInput,
            RemoteError::Status { status: 404 | 410, .. } => io::ErrorKind::NotFound,
            RemoteError::Status { status: 401 | 403, .. } => io::ErrorKind::PermissionDenied,
            RemoteError::Status { .. } | RemoteError::Changed { .. } => io::ErrorKind::Other,
            RemoteError::Protocol { .. } | RemoteError::Redirect { .. } => io::ErrorKind::InvalidData,
            RemoteError::Transport { timeout: true, .. } => io::ErrorKind::TimedOut,
            RemoteError::Transport { .. } => io::ErrorKind::ConnectionAborted,
        };
        io::Error::new(kind, e)
    }
}

/// The remote error inside `e`, if it is one (a remote file's I/O error).
pub fn remote_error_of(e: &crate::Error) -> Option<&RemoteError> {
    match e.kind() {
        crate::ErrorKind::Io(io) => io.get_ref().and_then(|x| x.downcast_ref::<RemoteError>()),
        _ => None,
    }
}

/// `url` as it may be shown: in errors, reports, `Debug` and a Python repr. Its user
/// information loses the password (`https://user:***@host/`; a user name alone, which is
/// often a token, becomes `***`), and the values of query (and fragment) parameters
/// whose names speak of credentials (holding `sig`, `token`, `credential`, `secret`,
/// `password`, `key`, `auth` or `session`, in any case: `X-Amz-Signature`,
/// `X-Amz-Credential`, `X-Amz-Security-Token`, `X-Goog-Signature`, Azure's `sig`...)
/// become `***`. Anything else is kept as it is, so a URL without secrets is shown
/// unchanged. Any text is taken (not only valid URLs).
pub fn redact_url(url: &str) -> String {
    let (rest, fragment) = match url.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (url, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let mut out = String::with_capacity(url.len());
    match rest.find("://") {
        Some(i) => {
            let (scheme, after) = rest.split_at(i + 3);
            let end = after.find('/').unwrap_or(after.len());
            let (authority, path) = after.split_at(end);
            out.push_str(scheme);
            match authority.rfind('@') {
                Some(at) => {
                    let (userinfo, host) = authority.split_at(at);
                    match userinfo.split_once(':') {
                        Some((user, _)) => {
                            out.push_str(user);
                            out.push_str(":***");
                        }
                        None => out.push_str("***"),
                    }
                    out.push_str(host);
                }
                None => out.push_str(authority),
            }
            out.push_str(path);
        }
        None => out.push_str(rest),
    }
    for (mark, part) in [('?', query), ('#', fragment)] {
        let Some(part) = part else { continue };
        out.push(mark);
        let pairs: Vec<String> = part
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) if sensitive(name) => format!("{name}=***"),
                _ => pair.to_string(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    out
}

/// `text` with every URL in it (from `http://`, `https://` or `s3://` to a blank, a
/// quote or an angle bracket) as [`redact_url`] shows it: a signed request URL in a
/// message of the HTTP client loses its signature.
fn redact_urls_in(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let lower = rest.to_ascii_lowercase();
        let Some(at) = ["http://", "https://", "s3://"].iter().filter_map(|p| lower.find(p)).min() else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        let url = &rest[at..];
        let end = url.find(|c: char| c.is_whitespace() || "'\"<>`".contains(c)).unwrap_or(url.len());
        out.push_str(&redact_url(&url[..end]));
        rest = &url[end..];
    }
}

/// Whether a query parameter's name speaks of credentials.
fn sensitive(name: &str) -> bool {
    let name = String::from_utf8_lossy(&crate::uri::unescape(name)).to_ascii_lowercase();
    ["sig", "token", "credential", "secret", "password", "passwd", "key", "auth", "session"]
        .iter()
        .any(|w| name.contains(w))
}

/// The secrets [`redact_url`] hides in `url`, as they may appear in other text (as
/// written and `%XX`-decoded): the user information's parts and the sensitive
/// parameters' values.
fn secrets_of(url: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |s: &str| {
        for s in [s.to_string(), String::from_utf8_lossy(&crate::uri::unescape(s)).into_owned()] {
            if !s.is_empty() && !out.contains(&s) {
                out.push(s);
            }
        }
    };
    let (rest, fragment) = url.split_once('#').map_or((url, None), |(r, f)| (r, Some(f)));
    let (rest, query) = rest.split_once('?').map_or((rest, None), |(r, q)| (r, Some(q)));
    if let Some(i) = rest.find("://") {
        let after = &rest[i + 3..];
        let authority = &after[..after.find('/').unwrap_or(after.len())];
        if let Some(at) = authority.rfind('@') {
            let userinfo = &authority[..at];
            match userinfo.split_once(':') {
                Some((_, password)) => add(password),
                None => add(userinfo),
            }
        }
    }
    for part in [query, fragment].into_iter().flatten() {
        for pair in part.split('&') {
            if let Some((name, value)) = pair.split_once('=')
                && sensitive(name)
            {
                add(value);
            }
        }
    }
    out
}

/// Whether `s` names a remote object (`http://`, `https://`, `s3://`). A URL of another
/// scheme is not one, but is no local path either: see [`crate::file::url_of`].
pub fn is_url(s: &str) -> bool {
    let lower = s.get(..8).unwrap_or(s).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("s3://")
}

enum Target {
    Http(String),
    S3(Box<S3Target>),
}

struct S3Target {
    bucket: rusty_s3::Bucket,
    key: String,
    credentials: Option<rusty_s3::Credentials>,
}

/// One remote object, read by ranges.
pub struct Remote {
    /// The URL as given (with its credentials: for requests only).
    given: String,
    /// The URL as shown ([`redact_url`]).
    url: String,
    target: Target,
    agent: ureq::Agent,
    options: RemoteOptions,
    len: u64,
    /// Where redirects may lead.
    scope: Scope,
    /// What must not appear in a message (the URL's and S3's credentials).
    secrets: Vec<String>,
    /// The first answer's validators.
    first: std::sync::Mutex<Option<Validators>>,
    /// Set once the object was seen to change: every later request fails at once.
    changed: std::sync::Mutex<Option<String>>,
    /// Where the first answer came from after redirects (HTTP): the base URL of the
    /// object's relative references (RFC 3986 5.1.3), credentials included.
    landed: std::sync::OnceLock<String>,
    requests: AtomicU64,
    received: AtomicU64,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("url", &self.url).field("len", &self.len).finish_non_exhaustive()
    }
}

/// The first bytes and the last bytes of an object, fetched as it is opened.
pub use crate::file::Ends;

/// Where the redirects of an object's requests may lead: its origin, and for an
/// exploded file's block file the main file's folder (a path prefix, ending in `/`).
#[derive(Debug, Clone)]
struct Scope {
    origin: (String, String, Option<u16>),
    folder: Option<String>,
}

/// A response's validators: what tells one version of an object from another.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Validators {
    etag: Option<String>,
    last_modified: Option<String>,
}

impl Validators {
    fn of(response: &ureq::http::Response<ureq::Body>) -> Validators {
        let header = |name: &str| {
            response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| !v.is_empty())
        };
        Validators {
            etag: header("etag").map(str::to_string),
            last_modified: header("last-modified").map(str::to_string),
        }
    }

    /// The header making a request conditional on the object being this version: a
    /// strong ETag's `If-Match` (a weak one never matches there, RFC 9110 13.1.1), else
    /// `If-Unmodified-Since` with the date.
    fn precondition(&self) -> Option<(&'static str, &str)> {
        match (&self.etag, &self.last_modified) {
            (Some(e), _) if !e.starts_with("W/") => Some(("If-Match", e)),
            (_, Some(d)) => Some(("If-Unmodified-Since", d)),
            _ => None,
        }
    }

    /// How `later` differs from these (each validator compared when both have it).
    fn differs(&self, later: &Validators) -> Option<String> {
        if let (Some(a), Some(b)) = (&self.etag, &later.etag)
            && a != b
        {
            return Some(format!("its ETag was {a}, then {b}"));
        }
        if let (Some(a), Some(b)) = (&self.last_modified, &later.last_modified)
            && a != b
        {
            return Some(format!("its Last-Modified was {a}, then {b}"));
        }
        None
    }
}

impl Remote {
    /// Opens the object at `url`, fetching its first `head` bytes and its last `tail`
    /// bytes (two requests at once), which tell its length and version.
    ///
    /// # Errors
    /// A URL rasdf does not read; the server's errors (a missing object is a 404).
    pub fn open(url: &str, options: &RemoteOptions, head: u64, tail: u64) -> Result<(Remote, Ends), RemoteError> {
        Remote::open_within(url, options, head, tail, None)
    }

    /// [`Remote::open`], redirects held to `folder` (a path on the URL's origin, ending
    /// in `/`) as well as to the origin: for an exploded file's block files.
    pub(crate) fn open_within(
        url: &str,
        options: &RemoteOptions,
        head: u64,
        tail: u64,
        folder: Option<String>,
    ) -> Result<(Remote, Ends), RemoteError> {
        let target = target(url, &options.s3)?;
        let timeout = Some(options.timeout).filter(|t| !t.is_zero());
        // No whole-request limit (a large part on a slow link may take long): the
        // server's silence is what is bounded, while connecting and while reading.
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(None)
            .timeout_resolve(timeout)
            .timeout_connect(timeout)
            .timeout_per_read(timeout)
            .timeout_per_write(timeout)
            .http_status_as_error(false)
            .max_redirects(0)
            .max_idle_connections_per_host(options.parallel.max(2))
            .build()
            .into();
        let mut secrets = secrets_of(url);
        if let Some(c) = &options.s3.credentials {
            for s in [Some(&c.secret), Some(&c.key_id), c.session_token.as_ref()].into_iter().flatten() {
                if !s.is_empty() {
                    secrets.push(s.clone());
                }
            }
        }
        let shown = redact_url(url);
        let mut remote = Remote {
            given: url.to_string(),
            url: shown.clone(),
            target,
            agent,
            options: options.clone(),
            len: 0,
            scope: Scope { origin: (String::new(), String::new(), None), folder },
            secrets,
            first: std::sync::Mutex::new(None),
            changed: std::sync::Mutex::new(None),
            landed: std::sync::OnceLock::new(),
            requests: AtomicU64::new(0),
            received: AtomicU64::new(0),
        };
        let first_url = url::Url::parse(&remote.request_url()).map_err(|_| RemoteError::BadUrl(shown))?;
        remote.scope.origin = origin(&first_url);
        let (first, last) = std::thread::scope(|s| {
            let last = s.spawn(|| remote.get(Ask::Suffix(tail.max(1))));
            let first = remote.get(Ask::Range(0..head.max(1)));
            (first, last.join().unwrap_or_else(|_| Err(remote.protocol("the request thread failed".into()))))
        });
        let (head_bytes, len) = match first {
            Ok(Got { bytes, total, .. }) => (bytes, total),
            // An empty object has no byte 0.
            Err(RemoteError::Status { status: 416, .. }) => (Vec::new(), 0),
            Err(e) => return Err(e),
        };
        let tail = match last {
            Ok(Got { bytes, start, total }) if total == len => (start, bytes),
            Ok(Got { total, .. }) => return Err(remote.changed(format!("its length was {len}, then {total}"))),
            Err(_) if len == 0 => (0, Vec::new()),
            Err(e) => return Err(e),
        };
        remote.len = len;
        Ok((remote, Ends { head: head_bytes, tail }))
    }

    /// The object's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the object is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The URL as it may be shown ([`redact_url`]: without its password or signature).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL relative references of the object resolve against, credentials
    /// included (for requests, never to be shown): an HTTP object's URL after the
    /// redirects of its first answer, as RFC 3986 5.1.3 has it; an S3 object's as given.
    pub(crate) fn base_url(&self) -> &str {
        match self.target {
            Target::Http(_) => self.landed.get().map_or(&self.given, String::as_str),
            Target::S3(_) => &self.given,
        }
    }

    /// The folder of the object on its server (the path of [`Remote::base_url`], or of
    /// an S3 request, up to its last `/`): where an exploded file's block files must
    /// stay.
    pub(crate) fn folder(&self) -> Option<String> {
        let u = match self.target {
            Target::Http(_) => url::Url::parse(self.base_url()).ok()?,
            Target::S3(_) => url::Url::parse(&self.request_url()).ok()?,
        };
        let path = u.path();
        Some(path[..path.rfind('/')? + 1].to_string())
    }

    /// Whether the object was seen to change while it was read (every request since
    /// then failed, and fails): the error saying so.
    pub fn changed_error(&self) -> Option<RemoteError> {
        let detail = self.changed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()?;
        Some(RemoteError::Changed { url: self.url.clone(), detail })
    }

    /// Requests made so far (retries included).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Body bytes received so far.
    pub fn bytes_received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// The bytes of each of `ranges` (each inside the object), fetched at once: ranges
    /// closer than [`RemoteOptions::coalesce_gap`] in one request, up to
    /// [`RemoteOptions::parallel`] requests in flight.
    ///
    /// # Errors
    /// The first request that failed (after its retries).
    pub fn fetch(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, RemoteError> {
        for r in ranges {
            if r.start > r.end || r.end > self.len {
                return Err(
                    self.protocol(format!("range {}..{} is outside the object's {} bytes", r.start, r.end, self.len))
                );
            }
        }
        // Coalesce, in offset order.
        let mut order: Vec<usize> = (0..ranges.len()).filter(|&i| !ranges[i].is_empty()).collect();
        order.sort_by_key(|&i| ranges[i].start);
        let mut spans: Vec<(Range<u64>, Vec<usize>)> = Vec::new();
        for i in order {
            let r = &ranges[i];
            match spans.last_mut() {
                Some((span, members)) if r.start <= span.end.saturating_add(self.options.coalesce_gap) => {
                    span.end = span.end.max(r.end);
                    members.push(i);
                }
                _ => spans.push((r.clone(), vec![i])),
            }
        }
        // A large span in parts of `part_bytes`, fetched side by side (one connection
        // alone is slower than several), joined in order.
        let part = self.options.part_bytes.max(1);
        let parts: Vec<(usize, Range<u64>)> = spans
            .iter()
            .enumerate()
            .flat_map(|(k, (span, _))| {
                let n = (span.end - span.start).div_ceil(part).max(1);
                (0..n).map(move |j| (k, span.start + j * part..(span.start + (j + 1) * part).min(span.end)))
            })
            .collect();
        let fetched: Vec<Fetched> = {
            let next = std::sync::atomic::AtomicUsize::new(0);
            // After a failure no more requests are started (a stalled server fails the
            // fetch in one timeout, not one per part).
            let stop = std::sync::atomic::AtomicBool::new(false);
            let results: Vec<std::sync::Mutex<Option<Fetched>>> =
                parts.iter().map(|_| std::sync::Mutex::new(None)).collect();
            let workers = self.options.parallel.clamp(1, parts.len().max(1));
            std::thread::scope(|s| {
                for _ in 0..workers {
                    s.spawn(|| {
                        while !stop.load(Ordering::Relaxed) {
                            let k = next.fetch_add(1, Ordering::Relaxed);
                            let Some((_, range)) = parts.get(k) else { break };
                            let r = self.get(Ask::Range(range.clone())).map(|g| g.bytes);
                            if r.is_err() {
                                stop.store(true, Ordering::Relaxed);
                            }
                            *results[k].lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(r);
                        }
                    });
                }
            });
            let results: Vec<Option<Fetched>> = results
                .into_iter()
                .map(|m| m.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner))
                .collect();
            // The failure that stopped the fetch, rather than a part not asked for.
            let mut results = results;
            if let Some(i) = results.iter().position(|r| matches!(r, Some(Err(_))))
                && let Some(Some(Err(e))) = results.get_mut(i).map(Option::take)
            {
                return Err(e);
            }
            results
                .into_iter()
                .map(|r| r.unwrap_or_else(|| Err(self.protocol("a request was not made".into()))))
                .collect()
        };
        let mut got: Vec<Fetched> = spans.iter().map(|_| Ok(Vec::new())).collect();
        for ((k, _), bytes) in parts.iter().zip(fetched) {
            match (&mut got[*k], bytes) {
                (Ok(joined), Ok(b)) if joined.is_empty() => {
                    // Room for the whole span at once: the parts are copied in once each.
                    let span = &spans[*k].0;
                    let whole = usize::try_from(span.end - span.start).unwrap_or(0);
                    if b.len() < whole && joined.try_reserve_exact(whole).is_ok() {
                        joined.extend_from_slice(&b);
                    } else {
                        *joined = b;
                    }
                }
                (Ok(joined), Ok(b)) => joined.extend_from_slice(&b),
                (slot @ Ok(_), Err(e)) => *slot = Err(e),
                (Err(_), _) => {}
            }
        }
        let mut out: Vec<Vec<u8>> = vec![Vec::new(); ranges.len()];
        for ((span, members), bytes) in spans.iter().zip(got) {
            let mut bytes = bytes?;
            // A span that is one range asked for: its bytes as they came, not copied.
            if let [i] = members[..]
                && ranges[i] == *span
            {
                out[i] = std::mem::take(&mut bytes);
                continue;
            }
            for &i in members {
                let r = &ranges[i];
                // `get` checked the length: every member lies inside.
                let at = |x: u64| usize::try_from(x - span.start).unwrap_or(usize::MAX);
                out[i] =
                    bytes.get(at(r.start)..at(r.end)).ok_or_else(|| self.protocol("a short answer".into()))?.to_vec();
            }
        }
        Ok(out)
    }

    /// The bytes of `range`, in parts of [`RemoteOptions::part_bytes`] fetched side by
    /// side, handed to `consume` in order as they arrive (part `k` as soon as parts `0`
    /// to `k` are in): for decoding a block while the rest of it is on its way.
    ///
    /// # Errors
    /// The first request that failed (after its retries), or `consume`'s error; the
    /// requests not yet started are then not made.
    pub fn fetch_in_order<E: From<RemoteError>>(
        &self,
        range: Range<u64>,
        mut consume: impl FnMut(Vec<u8>) -> Result<(), E>,
    ) -> Result<(), E> {
        if range.start > range.end || range.end > self.len {
            return Err(self
                .protocol(format!("range {}..{} is outside the object's {} bytes", range.start, range.end, self.len))
                .into());
        }
        let part = self.options.part_bytes.max(1);
        let n = (range.end - range.start).div_ceil(part);
        let parts: Vec<Range<u64>> =
            (0..n).map(|j| range.start + j * part..(range.start + (j + 1) * part).min(range.end)).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Fetched)>();
        let workers = self.options.parallel.clamp(1, parts.len().max(1));
        std::thread::scope(|s| {
            for _ in 0..workers {
                let tx = tx.clone();
                let (next, stop, parts) = (&next, &stop, &parts);
                s.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(range) = parts.get(k) else { break };
                        let got = self.get(Ask::Range(range.clone())).map(|g| g.bytes);
                        if tx.send((k, got)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            let mut waiting = std::collections::BTreeMap::new();
            let mut want = 0usize;
            let result = (|| {
                while want < parts.len() {
                    let Ok((k, got)) = rx.recv() else {
                        return Err(self.protocol("a request was not made".into()).into());
                    };
                    waiting.insert(k, got);
                    while let Some(got) = waiting.remove(&want) {
                        consume(got?)?;
                        want += 1;
                    }
                }
                Ok(())
            })();
            if result.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            drop(rx);
            result
        })
    }

    /// The bytes of one range (see [`Remote::fetch`]).
    ///
    /// # Errors
    /// As [`Remote::fetch`].
    pub fn fetch_one(&self, range: Range<u64>) -> Result<Vec<u8>, RemoteError> {
        Ok(self.fetch(std::slice::from_ref(&range))?.pop().unwrap_or_default())
    }

    fn protocol(&self, message: String) -> RemoteError {
        RemoteError::Protocol { url: self.url.clone(), message: self.scrub(&message) }
    }

    /// The error of a change seen (`detail`: how), remembered: every later request
    /// fails with it at once.
    fn changed(&self, detail: String) -> RemoteError {
        let detail = self.scrub(&detail);
        let mut changed = self.changed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let detail = changed.get_or_insert(detail).clone();
        RemoteError::Changed { url: self.url.clone(), detail }
    }

    /// `text` with the URL's and S3's secrets replaced by `***`, and the URL as given
    /// (or any request URL made from it) by the URL as shown.
    fn scrub(&self, text: &str) -> String {
        let mut out = redact_urls_in(&text.replace(&self.given, &self.url));
        for s in &self.secrets {
            out = out.replace(s.as_str(), "***");
        }
        out
    }

    /// The URL to send a request to (S3: signed for an hour).
    fn request_url(&self) -> String {
        match &self.target {
            Target::Http(u) => u.clone(),
            Target::S3(t) => {
                use rusty_s3::S3Action;
                t.bucket.get_object(t.credentials.as_ref(), &t.key).sign(Duration::from_secs(3600)).to_string()
            }
        }
    }

    /// One range request, retried as the options say.
    fn get(&self, ask: Ask) -> Result<Got, RemoteError> {
        let mut attempts = 0;
        let mut pause = self.options.retry_pause;
        loop {
            attempts += 1;
            if let Some(e) = self.changed_error() {
                return Err(e);
            }
            match self.get_once(&ask, attempts) {
                Err(e) if attempts <= self.options.retries && transient(&e) => {
                    std::thread::sleep(pause);
                    pause = pause.saturating_mul(2);
                }
                r => return r,
            }
        }
    }

    /// Where a redirect from `from` to `location` leads, if it may be followed: same
    /// origin, and inside the scope's folder when there is one; the user information
    /// of `from` is kept (the origin is the same).
    fn redirect(&self, from: &str, location: &str) -> Result<String, RemoteError> {
        let from = url::Url::parse(from).map_err(|_| self.protocol("a request URL that does not parse".into()))?;
        let mut to = from
            .join(location)
            .map_err(|_| self.protocol(format!("a redirect to '{}', which is not a URL", redact_url(location))))?;
        let refused = |from: String, to: String, why| RemoteError::Redirect { url: self.url.clone(), from, to, why };
        if origin(&to) != self.scope.origin {
            return Err(refused(origin_text(&from), origin_text(&to), "another origin"));
        }
        if let Some(folder) = &self.scope.folder
            && !inside(to.path(), folder)
        {
            return Err(refused(
                redact_url(from.as_str()),
                redact_url(to.as_str()),
                "out of the folder of the exploded file's blocks",
            ));
        }
        if to.username().is_empty() && to.password().is_none() {
            // Same origin: the same credentials.
            let _ = to.set_username(from.username());
            let _ = to.set_password(from.password());
        }
        Ok(to.into())
    }

    fn get_once(&self, ask: &Ask, attempts: u32) -> Result<Got, RemoteError> {
        let header = match ask {
            Ask::Range(r) => format!("bytes={}-{}", r.start, r.end - 1),
            Ask::Suffix(n) => format!("bytes=-{n}"),
        };
        let timeout = self.options.timeout;
        let transport = |e: ureq::Error| {
            let (timed_out, message) = match &e {
                ureq::Error::Timeout(ureq::Timeout::Connect | ureq::Timeout::Resolve) => {
                    (true, format!("timed out: no connection within {timeout:?}"))
                }
                ureq::Error::Timeout(_) => (true, format!("timed out: the server sent nothing for {timeout:?}")),
                // The system's own (a connection attempt it gave up on).
                ureq::Error::Io(io) if io_timeout(io) => (true, format!("timed out: {}", self.scrub(&io.to_string()))),
                _ => (false, self.scrub(&e.to_string())),
            };
            RemoteError::Transport { url: self.url.clone(), timeout: timed_out, message, attempts }
        };
        let first = self.first.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let precondition = first.as_ref().and_then(Validators::precondition);
        let mut url = self.request_url();
        let mut redirects = 0;
        let mut response = loop {
            self.requests.fetch_add(1, Ordering::Relaxed);
            let mut request = self.agent.get(&url).header("Range", &header);
            if let Some((name, value)) = precondition {
                request = request.header(name, value);
            }
            let response = request.call().map_err(transport)?;
            let status = response.status().as_u16();
            if !matches!(status, 301 | 302 | 303 | 307 | 308) {
                break response;
            }
            redirects += 1;
            if redirects > self.options.max_redirects {
                return Err(self.protocol(format!("more than {} redirects", self.options.max_redirects)));
            }
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| self.protocol(format!("a {status} redirect without a Location")))?;
            url = self.redirect(&url, location)?;
        };
        // The open's answers (the length is not known yet) tell where the object is.
        if redirects > 0 && self.len == 0 {
            let _ = self.landed.set(url);
        }
        let status = response.status().as_u16();
        if status == 412 && precondition.is_some() {
            let (name, value) = precondition.unwrap_or_default();
            return Err(self.changed(format!("the server answered 412 to {name}: {value}")));
        }
        // Validators are those of the object: a range's answer, or a 416 (an empty one).
        if matches!(status, 206 | 416) {
            let seen = Validators::of(&response);
            let mut kept = self.first.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match &*kept {
                None => *kept = Some(seen),
                Some(first) => {
                    if let Some(how) = first.differs(&seen) {
                        drop(kept);
                        return Err(self.changed(how));
                    }
                }
            }
        }
        if status != 206 {
            return Err(match status {
                200 => self.protocol(format!(
                    "the server ignored the byte range asked for ({header}): rasdf reads remote files by ranges"
                )),
                _ => RemoteError::Status { url: self.url.clone(), status, attempts },
            });
        }
        let content_range = response
            .headers()
            .get("content-range")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| self.protocol("a 206 answer without Content-Range".into()))?;
        let (start, end, total) = parse_content_range(content_range)
            .ok_or_else(|| self.protocol(format!("a Content-Range rasdf cannot read: '{content_range}'")))?;
        if self.len != 0 && total != self.len {
            return Err(self.changed(format!("its length was {}, then {total}", self.len)));
        }
        let expected = match ask {
            Ask::Range(r) => r.start..r.end.min(total),
            Ask::Suffix(n) => total.saturating_sub(*n)..total,
        };
        if start != expected.start || end != expected.end {
            return Err(self.protocol(format!(
                "asked for bytes {}..{}, the server sent '{content_range}'",
                expected.start, expected.end
            )));
        }
        let want = end - start;
        let size = usize::try_from(want).map_err(|_| self.protocol(format!("{want} bytes do not fit in memory")))?;
        // Read straight into a buffer of the length asked for, zeroed by the system (no
        // pass of zeros over it) and advised huge pages, then check that nothing follows.
        let mut bytes =
            crate::block::codec::zeroed(size).ok_or_else(|| self.protocol(format!("no memory for {want} bytes")))?;
        let short = |got: usize| RemoteError::Transport {
            url: self.url.clone(),
            message: format!("the answer to {header} has {got} bytes, not {want}"),
            timeout: false,
            attempts,
        };
        let failed = |e: std::io::Error| {
            let timed_out = io_timeout(&e);
            RemoteError::Transport {
                url: self.url.clone(),
                message: match timed_out {
                    true => format!("timed out: the server sent nothing for {timeout:?}"),
                    false => self.scrub(&e.to_string()),
                },
                timeout: timed_out,
                attempts,
            }
        };
        {
            use std::io::Read;
            let mut reader = response.body_mut().with_config().limit(want.saturating_add(1)).reader();
            let mut filled = 0;
            while filled < size {
                match reader.read(&mut bytes[filled..]) {
                    Ok(0) => {
                        self.received.fetch_add(filled as u64, Ordering::Relaxed);
                        return Err(short(filled));
                    }
                    Ok(k) => filled += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(failed(e)),
                }
            }
            self.received.fetch_add(filled as u64, Ordering::Relaxed);
            // More than asked for: an answer longer than its Content-Range.
            let mut extra = [0u8; 1];
            loop {
                match reader.read(&mut extra) {
                    Ok(0) => break,
                    Ok(_) => return Err(short(size + 1)),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(failed(e)),
                }
            }
        }
        Ok(Got { bytes, start, total })
    }
}

/// Whether an error of reading a body is a timeout (ureq's, wrapped in an I/O error).
fn io_timeout(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|x| x.downcast_ref::<ureq::Error>())
            .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)))
}

/// A URL's origin: scheme, host, port (the scheme's default when not given).
fn origin(u: &url::Url) -> (String, String, Option<u16>) {
    (u.scheme().to_string(), u.host_str().unwrap_or("").to_ascii_lowercase(), u.port_or_known_default())
}

/// A URL's origin as text: `http://host:port`.
fn origin_text(u: &url::Url) -> String {
    let (scheme, host, port) = origin(u);
    match port {
        Some(p) => format!("{scheme}://{host}:{p}"),
        None => format!("{scheme}://{host}"),
    }
}

/// Whether URL path `path` names something inside `folder` (a path ending in `/`):
/// under it, with no segment that (decoded) is `..` or `.` or hides a separator (`%2F`,
/// `\`).
fn inside(path: &str, folder: &str) -> bool {
    let Some(rest) = path.strip_prefix(folder) else { return false };
    rest.split('/').all(|seg| {
        let d = crate::uri::unescape(seg);
        d != b".." && d != b"." && !d.iter().any(|&b| b == b'/' || b == b'\\' || b == 0)
    })
}

/// Whether a failed request may pass when made again.
fn transient(e: &RemoteError) -> bool {
    match e {
        RemoteError::Status { status, .. } => *status >= 500 || *status == 429,
        // A timeout is not retried: the wait would be one timeout per attempt.
        RemoteError::Transport { timeout, .. } => !timeout,
        _ => false,
    }
}

/// One request's bytes, or why there are none.
type Fetched = Result<Vec<u8>, RemoteError>;

enum Ask {
    Range(Range<u64>),
    Suffix(u64),
}

struct Got {
    bytes: Vec<u8>,
    start: u64,
    total: u64,
}

/// `bytes START-END/TOTAL` as `(start, end exclusive, total)`.
fn parse_content_range(v: &str) -> Option<(u64, u64, u64)> {
    let rest = v.trim().strip_prefix("bytes")?.trim_start();
    let (span, total) = rest.split_once('/')?;
    let (a, b) = span.split_once('-')?;
    let (a, b, total): (u64, u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?, total.trim().parse().ok()?);
    (a <= b && b < total).then_some((a, b + 1, total))
}

fn target(url: &str, s3: &S3Options) -> Result<Target, RemoteError> {
    let bad = || RemoteError::BadUrl(redact_url(url));
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Ok(Target::Http(url.to_string()));
    }
    let rest = url.get(5..).filter(|_| lower.starts_with("s3://")).ok_or_else(bad)?;
    let (bucket, key) = rest.split_once('/').filter(|(b, k)| !b.is_empty() && !k.is_empty()).ok_or_else(bad)?;
    let region = s3.region.clone().unwrap_or_else(|| "us-east-1".to_string());
    let (endpoint, style) = match &s3.endpoint {
        Some(e) => (e.clone(), rusty_s3::UrlStyle::Path),
        None => (format!("https://s3.{region}.amazonaws.com"), rusty_s3::UrlStyle::VirtualHost),
    };
    let endpoint: url::Url = endpoint.parse().map_err(|_| RemoteError::BadUrl(redact_url(&endpoint)))?;
    let bucket = rusty_s3::Bucket::new(endpoint, style, bucket.to_string(), region).map_err(|_| bad())?;
    let credentials = s3.credentials.as_ref().map(|c| match &c.session_token {
        Some(t) => rusty_s3::Credentials::new_with_token(&c.key_id, &c.secret, t),
        None => rusty_s3::Credentials::new(&c.key_id, &c.secret),
    });
    Ok(Target::S3(Box::new(S3Target { bucket, key: key.to_string(), credentials })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_range_parses_and_refuses() {
        assert_eq!(parse_content_range("bytes 0-9/100"), Some((0, 10, 100)));
        assert_eq!(parse_content_range("bytes 90-99/100"), Some((90, 100, 100)));
        for bad in ["bytes */100", "bytes 9-0/100", "bytes 0-100/100", "items 0-9/100", "bytes 0-9/*", ""] {
            assert_eq!(parse_content_range(bad), None, "{bad}");
        }
    }

    #[test]
    fn redaction_hides_passwords_tokens_and_signatures_only() {
        for (url, shown) in [
            ("https://host/a/b.asdf", "https://host/a/b.asdf"),
            ("https://user:secret@host:8443/b.asdf", "https://user:***@host:8443/b.asdf"),
            ("https://ghp_token@host/b.asdf", "https://***@host/b.asdf"),
            ("https://u:p@ss@host/b.asdf", "https://u:***@host/b.asdf"),
            (
                "http://host/b.asdf?v=2&X-Amz-Signature=abc&x-amz-credential=AK%2F1",
                "http://host/b.asdf?v=2&X-Amz-Signature=***&x-amz-credential=***",
            ),
            (
                "http://host/b?sig=1&se=2&X-Goog-Signature=3&access_token=4&api%5Fkey=5",
                "http://host/b?sig=***&se=2&X-Goog-Signature=***&access_token=***&api%5Fkey=***",
            ),
            ("http://host/b#token=abc", "http://host/b#token=***"),
            ("http://host/user:pw@x/b", "http://host/user:pw@x/b"),
            ("s3://bucket/key.asdf", "s3://bucket/key.asdf"),
            ("not a url", "not a url"),
            ("", ""),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
        assert_eq!(
            redact_urls_in("GET 'https://b.s3.x/k?X-Amz-Signature=abc&v=1' and http://u:p@h/x failed"),
            "GET 'https://b.s3.x/k?X-Amz-Signature=***&v=1' and http://u:***@h/x failed"
        );
        assert_eq!(redact_urls_in("no URL here"), "no URL here");
        assert_eq!(secrets_of("https://user:se%63ret@host/?token=a%2Fb"), ["se%63ret", "secret", "a%2Fb", "a/b"]);
        assert_eq!(secrets_of("https://tok@host/?v=1"), ["tok"]);
        assert!(secrets_of("https://host/x?v=1").is_empty());
    }

    #[test]
    fn preconditions_and_changes() {
        let v = |etag: Option<&str>, lm: Option<&str>| Validators {
            etag: etag.map(str::to_string),
            last_modified: lm.map(str::to_string),
        };
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert_eq!(v(Some("\"a\""), Some(date)).precondition(), Some(("If-Match", "\"a\"")));
        // A weak ETag never matches If-Match: the date instead, or nothing.
        assert_eq!(v(Some("W/\"a\""), Some(date)).precondition(), Some(("If-Unmodified-Since", date)));
        assert_eq!(v(Some("W/\"a\""), None).precondition(), None);
        assert_eq!(v(None, None).precondition(), None);
        assert!(v(Some("\"a\""), None).differs(&v(Some("\"b\""), None)).is_some());
        assert!(v(Some("W/\"a\""), None).differs(&v(Some("W/\"b\""), None)).is_some());
        assert!(v(None, Some(date)).differs(&v(None, Some("Mon, 07 Nov 1994 08:49:37 GMT"))).is_some());
        // What one answer lacks is not compared.
        assert!(v(Some("\"a\""), Some(date)).differs(&v(None, None)).is_none());
        assert!(v(Some("\"a\""), Some(date)).differs(&v(Some("\"a\""), Some(date))).is_none());
    }

    #[test]
    fn a_redirect_stays_in_its_folder() {
        assert!(inside("/d/f.asdf", "/d/") && inside("/d/sub/f.asdf", "/d/"));
        for out in ["/e/f.asdf", "/d/../f.asdf", "/d/%2e%2e/f.asdf", "/d/a%2Ff", "/d/a%5Cf", "/d"] {
            assert!(!inside(out, "/d/"), "{out}");
        }
    }

    #[test]
    fn options_from_the_environment() {
        let env = |pairs: &[(&str, &str)]| {
            RemoteOptions::from_vars(|k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_string()))
        };
        let o = env(&[]);
        assert!(o.s3.endpoint.is_none() && o.s3.region.is_none() && o.s3.credentials.is_none());
        assert_eq!(o.timeout, RemoteOptions::default().timeout);
        let o = env(&[
            ("AWS_ENDPOINT_URL", "http://a:9000"),
            ("AWS_ENDPOINT_URL_S3", "http://s3:9000"),
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", ""),
        ]);
        assert_eq!(o.s3.endpoint.as_deref(), Some("http://s3:9000"));
        assert_eq!(o.s3.region.as_deref(), Some("eu-west-1"));
        let c = o.s3.credentials.expect("credentials");
        assert_eq!((c.key_id.as_str(), c.secret.as_str(), c.session_token), ("AKIDEXAMPLE", "secret", None));
        let o = env(&[
            ("AWS_ENDPOINT_URL", "http://a:9000"),
            ("AWS_REGION", "us-west-2"),
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "token"),
        ]);
        assert_eq!((o.s3.endpoint.as_deref(), o.s3.region.as_deref()), (Some("http://a:9000"), Some("us-west-2")));
        assert_eq!(o.s3.credentials.and_then(|c| c.session_token).as_deref(), Some("token"));
        for no in ["true", "TRUE", "1"] {
            let o = env(&[("AWS_ACCESS_KEY_ID", "k"), ("AWS_SECRET_ACCESS_KEY", "s"), ("AWS_NO_SIGN_REQUEST", no)]);
            assert!(o.s3.credentials.is_none(), "{no}");
        }
        let signed = env(&[("AWS_ACCESS_KEY_ID", "k"), ("AWS_SECRET_ACCESS_KEY", "s"), ("AWS_NO_SIGN_REQUEST", "no")]);
        assert!(signed.s3.credentials.is_some());
        assert!(env(&[("AWS_ACCESS_KEY_ID", "k")]).s3.credentials.is_none(), "a key without its secret");
    }

    #[test]
    fn urls() {
        assert!(is_url("http://x/y") && is_url("HTTPS://x") && is_url("s3://b/k"));
        assert!(!is_url("/tmp/x.asdf") && !is_url("file.asdf") && !is_url("s3:/b"));
        let s3 = S3Options { endpoint: Some("http://127.0.0.1:9".into()), ..S3Options::default() };
        assert!(matches!(target("s3://b/dir/k.asdf", &s3), Ok(Target::S3(_))));
        for bad in ["s3://b", "s3:///k", "ftp://x/y", "s3://b/"] {
            assert!(matches!(target(bad, &s3), Err(RemoteError::BadUrl(_))), "{bad}");
        }
    }
}
