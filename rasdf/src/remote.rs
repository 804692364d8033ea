//! Files on HTTP(S) servers and in S3 buckets, read by byte ranges (feature `remote`).
//!
//! A [`Remote`] is one object behind a URL: `http://`, `https://` or `s3://bucket/key`.
//! It knows the object's length from its first answer and fetches byte ranges with HTTP
//! `Range` requests: several at once on their own threads, ranges close together
//! coalesced into one request. Each answer is checked (status 206, a `Content-Range`
//! that is the range asked for, a body of exactly that length); a server error (5xx),
//! a refused or broken connection or a timeout is retried a bounded number of times,
//! other failures are errors at once. [`crate::OpenOptions::open_url`] opens an ASDF
//! file through one.
//!
//! S3 requests are signed (AWS Signature V4, as query parameters) when credentials are
//! given, and sent unsigned otherwise (public buckets). The library reads no environment
//! variables: the command line and the Python package fill [`S3Options`] from the usual
//! `AWS_*` ones.
//!
//! The HTTP client is `ureq` (blocking, rustls): a few dozen small crates, against the
//! hundred and seventy of an async object-store client and its runtime; S3 signing is
//! `rusty-s3`'s (it signs URLs and sends nothing).

use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How remote objects are read.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// Longest time for one request, connection and whole answer included.
    pub timeout: Duration,
    /// Attempts after the first for a request that failed in a way that may pass (a 5xx
    /// answer, a broken or refused connection, a timeout).
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
        }
    }
}

/// Where S3 is and the credentials to sign with.
#[derive(Debug, Clone, Default)]
pub struct S3Options {
    /// An endpoint other than AWS's (`http://127.0.0.1:9000`, a MinIO, moto...): objects
    /// are then addressed path-style, `ENDPOINT/bucket/key`.
    pub endpoint: Option<String>,
    /// The bucket's region (`us-east-1` when not given).
    pub region: Option<String>,
    /// Credentials; `None` sends requests unsigned (public buckets).
    pub credentials: Option<S3Credentials>,
}

/// AWS credentials.
#[derive(Clone)]
pub struct S3Credentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret: String,
    /// `AWS_SESSION_TOKEN`, for temporary credentials.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for S3Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Credentials").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

/// What can go wrong reading a remote object.
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
}

fn retried(attempts: u32) -> String {
    if attempts > 1 { format!(" (after {attempts} attempts)") } else { String::new() }
}

impl From<RemoteError> for io::Error {
    fn from(e: RemoteError) -> io::Error {
        let kind = match &e {
            RemoteError::BadUrl(_) => io::ErrorKind::InvalidInput,
            RemoteError::Status { status: 404 | 410, .. } => io::ErrorKind::NotFound,
            RemoteError::Status { status: 401 | 403, .. } => io::ErrorKind::PermissionDenied,
            RemoteError::Status { .. } => io::ErrorKind::Other,
            RemoteError::Protocol { .. } => io::ErrorKind::InvalidData,
            RemoteError::Transport { timeout: true, .. } => io::ErrorKind::TimedOut,
            RemoteError::Transport { .. } => io::ErrorKind::ConnectionAborted,
        };
        io::Error::new(kind, e)
    }
}

/// Whether `s` names a remote object (`http://`, `https://`, `s3://`).
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
    url: String,
    target: Target,
    agent: ureq::Agent,
    options: RemoteOptions,
    len: u64,
    requests: AtomicU64,
    received: AtomicU64,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("url", &self.url).field("len", &self.len).finish_non_exhaustive()
    }
}

/// The first bytes and the last bytes of an object, fetched as it is opened.
#[derive(Debug)]
pub struct Ends {
    /// The first bytes (all of a small object).
    pub head: Vec<u8>,
    /// The last bytes, and where they start.
    pub tail: (u64, Vec<u8>),
}

impl Remote {
    /// Opens the object at `url`, fetching its first `head` bytes and its last `tail`
    /// bytes (two requests at once), which tell its length.
    ///
    /// # Errors
    /// A URL rasdf does not read; the server's errors (a missing object is a 404).
    pub fn open(url: &str, options: &RemoteOptions, head: u64, tail: u64) -> Result<(Remote, Ends), RemoteError> {
        let target = target(url, &options.s3)?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(options.timeout))
            .http_status_as_error(false)
            .max_idle_connections_per_host(options.parallel.max(2))
            .build()
            .into();
        let mut remote = Remote {
            url: url.to_string(),
            target,
            agent,
            options: options.clone(),
            len: 0,
            requests: AtomicU64::new(0),
            received: AtomicU64::new(0),
        };
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
            Ok(_) => return Err(remote.protocol("the object changed length between two requests".into())),
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

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
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
            let results: Vec<std::sync::Mutex<Option<Fetched>>> =
                parts.iter().map(|_| std::sync::Mutex::new(None)).collect();
            let workers = self.options.parallel.clamp(1, parts.len().max(1));
            std::thread::scope(|s| {
                for _ in 0..workers {
                    s.spawn(|| {
                        loop {
                            let k = next.fetch_add(1, Ordering::Relaxed);
                            let Some((_, range)) = parts.get(k) else { break };
                            let r = self.get(Ask::Range(range.clone())).map(|g| g.bytes);
                            *results[k].lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(r);
                        }
                    });
                }
            });
            results
                .into_iter()
                .map(|m| {
                    m.into_inner()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .unwrap_or_else(|| Err(self.protocol("a request was not made".into())))
                })
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
        RemoteError::Protocol { url: self.url.clone(), message }
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
            match self.get_once(&ask, attempts) {
                Err(e) if attempts <= self.options.retries && transient(&e) => {
                    std::thread::sleep(pause);
                    pause = pause.saturating_mul(2);
                }
                r => return r,
            }
        }
    }

    fn get_once(&self, ask: &Ask, attempts: u32) -> Result<Got, RemoteError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let header = match ask {
            Ask::Range(r) => format!("bytes={}-{}", r.start, r.end - 1),
            Ask::Suffix(n) => format!("bytes=-{n}"),
        };
        let transport = |e: ureq::Error| RemoteError::Transport {
            url: self.url.clone(),
            timeout: matches!(e, ureq::Error::Timeout(_)),
            message: e.to_string(),
            attempts,
        };
        let mut response = self.agent.get(&self.request_url()).header("Range", &header).call().map_err(transport)?;
        let status = response.status().as_u16();
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
        let expected = match ask {
            Ask::Range(r) => r.start..r.end.min(total),
            Ask::Suffix(n) => total.saturating_sub(*n)..total,
        };
        if start != expected.start || end != expected.end || (self.len != 0 && total != self.len) {
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
        let failed = |e: std::io::Error| RemoteError::Transport {
            url: self.url.clone(),
            message: e.to_string(),
            timeout: e.kind() == std::io::ErrorKind::TimedOut,
            attempts,
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

/// Whether a failed request may pass when made again.
fn transient(e: &RemoteError) -> bool {
    match e {
        RemoteError::Status { status, .. } => *status >= 500 || *status == 429,
        RemoteError::Transport { .. } => true,
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
    let bad = || RemoteError::BadUrl(url.to_string());
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
    let endpoint: url::Url = endpoint.parse().map_err(|_| RemoteError::BadUrl(endpoint.clone()))?;
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
