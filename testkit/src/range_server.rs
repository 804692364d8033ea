//! A small HTTP/1.1 file server for the tests of remote reading, standard library only:
//! GET and HEAD of the files under one folder, single byte ranges, keep-alive, an
//! optional latency before each response and injected faults ([`Fault`]); validators
//! (`ETag`, `Last-Modified`) and preconditions (`If-Match`, `If-Unmodified-Since`: 412),
//! a file swapped for another version after some requests ([`Swap`]), redirects asked
//! for in the path (`/__redirect/CODE/...`, see [`redirect_of`]), and a log of every
//! request ([`RangeServer::log`]).
//!
//! Used by the integration tests as `rasdf_testkit::range_server`.
//!
//! ```ignore
//! let server = RangeServer::start(&dir, ServerOptions::default());
//! let url = server.url("big.asdf"); // http://127.0.0.1:PORT/big.asdf
//! // ... read it over HTTP ...
//! assert!(server.requests() > 0);
//! server.stop(); // or drop it
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The largest piece of a body read from the file and written at once.
const CHUNK: u64 = 1 << 20;
/// Read timeout of the sockets: how often an idle connection looks at the stop flag.
const IDLE_POLL: Duration = Duration::from_millis(200);
/// Step of the sleeps (latency, `Hang`): how late they see the stop flag at most.
const STEP: Duration = Duration::from_millis(10);
/// Write timeout of the sockets (a client that stops reading does not hold a thread forever).
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest request or header line.
const MAX_LINE: usize = 8 * 1024;
/// Most header lines of one request.
const MAX_HEADERS: usize = 100;
/// Largest request body (read and discarded).
const MAX_REQUEST_BODY: u64 = 1 << 20;
/// How long stopping waits for the connection threads before leaving them behind.
const CONNECTION_GRACE: Duration = Duration::from_secs(1);
/// How long a connection the server closes keeps reading what the client still sends
/// (so that the close is not a reset that could discard the last response).
const LINGER: Duration = Duration::from_millis(200);

/// A fault the server injects into its answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fault {
    /// None: a correct server.
    #[default]
    None,
    /// Send a correct status line and headers (Content-Length = the full range) but only half the body, then close.
    ShortBody,
    /// 206 with a Content-Range whose start and end are shifted by +1 (body of the right length from the shifted start, clamped).
    WrongContentRange,
    /// Every request answers 500.
    Status500,
    /// The first n requests (counted across the server) answer 503, later ones are served normally.
    FailFirst(usize),
    /// Accept, read the request, then never answer (until the server stops).
    Hang,
    /// Answer the first n requests (counted across the server), then hang as `Hang`.
    HangAfter(usize),
    /// Ignore Range headers: 200 with the whole file.
    IgnoreRange,
}

/// How the server behaves.
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// Slept before writing each response.
    pub latency: Duration,
    /// The fault injected.
    pub fault: Fault,
    /// The validators sent with a file (and honoured in preconditions).
    pub validators: Validators,
    /// Answer as if no `If-Match` or `If-Unmodified-Since` had been sent.
    pub ignore_preconditions: bool,
    /// A file replaced by another version after some requests.
    pub swap: Option<Swap>,
}

/// Which validators the server sends with a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Validators {
    /// A strong `ETag` (from the file's length, modification time, inode and path) and
    /// `Last-Modified`.
    #[default]
    Strong,
    /// The same ETag, weak (`W/"..."`), and `Last-Modified`.
    Weak,
    /// `Last-Modified` only.
    LastModified,
    /// None.
    None,
}

/// From the request after the first `after` ones for `name` (a path under the root,
/// `/`-separated, as in a URL but not escaped), the file `replacement` is served for
/// `name`: another version of it, with its own validators.
#[derive(Clone, Debug)]
pub struct Swap {
    /// The file swapped.
    pub name: String,
    /// Its other version (any path).
    pub replacement: PathBuf,
    /// Requests for `name` answered from the first version.
    pub after: u64,
}

/// One request as the server saw it, and its answer's status.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The request target (`/path?query`).
    pub target: String,
    /// Lower-case names, trimmed values.
    pub headers: Vec<(String, String)>,
    /// The status answered (0: none, the connection was dropped).
    pub status: u16,
}

impl Seen {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

thread_local! {
    /// The log entry of the request a connection thread is answering.
    static CURRENT: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// What the server and its threads share.
struct Shared {
    root: PathBuf,
    options: ServerOptions,
    stop: AtomicBool,
    requests: AtomicU64,
    bytes_sent: AtomicU64,
    /// Requests seen by `Fault::FailFirst` and `Fault::HangAfter` (not reset by
    /// `reset_counters`).
    fault_count: AtomicU64,
    ranges: Mutex<Vec<(u64, u64)>>,
    /// Every request, in the order read.
    log: Mutex<Vec<Seen>>,
    /// Requests for the file of `ServerOptions::swap`.
    swap_count: AtomicU64,
    /// Where the server listens (for absolute redirects).
    addr: SocketAddr,
    /// Clones of the open connections' sockets, shut down on stop so that reads and
    /// writes blocked in them end at once.
    streams: Mutex<HashMap<u64, TcpStream>>,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Sleeps `d` in small steps; false if the server stopped meanwhile.
    fn pause(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        loop {
            if self.stopped() {
                return false;
            }
            let now = Instant::now();
            if now >= end {
                return true;
            }
            thread::sleep((end - now).min(STEP));
        }
    }

    /// Shuts down every open connection.
    fn shutdown_streams(&self) {
        for s in lock(&self.streams).values() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Locks, whether or not a thread panicked while holding the lock.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running server on `127.0.0.1`, stopped by [`RangeServer::stop`] or on drop.
pub struct RangeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl RangeServer {
    /// Serves the files under `root` on `127.0.0.1` at a free port. Panics if it cannot bind.
    pub fn start(root: impl Into<PathBuf>, options: ServerOptions) -> RangeServer {
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("range server: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("range server: local address");
        let shared = Arc::new(Shared {
            root: root.into(),
            options,
            stop: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            bytes_sent: AtomicU64::new(0),
            fault_count: AtomicU64::new(0),
            ranges: Mutex::new(Vec::new()),
            log: Mutex::new(Vec::new()),
            swap_count: AtomicU64::new(0),
            addr,
            streams: Mutex::new(HashMap::new()),
        });
        let s = Arc::clone(&shared);
        let accept = thread::Builder::new()
            .name("range-server-accept".into())
            .spawn(move || accept_loop(&listener, &s))
            .expect("range server: spawn the accept thread");
        RangeServer { addr, shared, accept: Some(accept) }
    }

    /// `http://127.0.0.1:PORT/` followed by `name` (relative, `/`-separated, appended as
    /// it is: escape it yourself if it needs escaping).
    pub fn url(&self, name: &str) -> String {
        format!("{}/{}", self.base(), name.trim_start_matches('/'))
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests received (each request line read counts one, answered or not).
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Body bytes written (file contents only: error responses have empty bodies).
    pub fn bytes_sent(&self) -> u64 {
        self.shared.bytes_sent.load(Ordering::SeqCst)
    }

    /// `(start, end_inclusive)` of every satisfied range request (GET or HEAD answered
    /// 206; as requested, after clamping the end, even under `Fault::WrongContentRange`
    /// or `Fault::ShortBody`), in order.
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        lock(&self.shared.ranges).clone()
    }

    /// Every request read (answered or not), in order, with its status.
    pub fn log(&self) -> Vec<Seen> {
        lock(&self.shared.log).clone()
    }

    /// Zeroes `requests` and `bytes_sent` and empties `ranges` and `log` (the counts of
    /// `Fault::FailFirst` and of `Swap` go on).
    pub fn reset_counters(&self) {
        self.shared.requests.store(0, Ordering::SeqCst);
        self.shared.bytes_sent.store(0, Ordering::SeqCst);
        lock(&self.shared.ranges).clear();
        lock(&self.shared.log).clear();
    }

    /// Stops the server: closes the listener and every connection (also done on drop).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(accept) = self.accept.take() else { return };
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.shutdown_streams();
        // Unblock the accept; the accept thread sees the flag and waits for the
        // connection threads (at most CONNECTION_GRACE).
        drop(TcpStream::connect_timeout(&self.addr, Duration::from_millis(500)));
        let deadline = Instant::now() + CONNECTION_GRACE + Duration::from_millis(500);
        while !accept.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        if accept.is_finished() {
            let _ = accept.join();
        }
    }
}

impl Drop for RangeServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut handles: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id = 0u64;
    for conn in listener.incoming() {
        if shared.stopped() {
            break;
        }
        let Ok(stream) = conn else {
            thread::sleep(STEP);
            continue;
        };
        handles.retain(|h| !h.is_finished());
        let id = next_id;
        next_id += 1;
        if let Ok(clone) = stream.try_clone() {
            lock(&shared.streams).insert(id, clone);
        }
        let s = Arc::clone(shared);
        let spawned = thread::Builder::new().name("range-server-conn".into()).spawn(move || {
            serve_connection(stream, &s);
            lock(&s.streams).remove(&id);
        });
        match spawned {
            Ok(h) => handles.push(h),
            Err(_) => {
                lock(&shared.streams).remove(&id);
            }
        }
    }
    // A connection accepted while stop swept the sockets is shut down here.
    shared.shutdown_streams();
    let deadline = Instant::now() + CONNECTION_GRACE;
    while handles.iter().any(|h| !h.is_finished()) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    for h in handles {
        if h.is_finished() {
            let _ = h.join();
        }
    }
}

/// What follows a request.
enum Next {
    /// Read the next request of the connection.
    KeepAlive,
    /// The server closes the connection.
    Close,
    /// The client left, an I/O error, or the server stopped: drop the connection.
    Gone,
}

fn serve_connection(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(IDLE_POLL));
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let mut reader = BufReader::new(stream);
    loop {
        match handle_request(&mut reader, shared) {
            Next::KeepAlive => {}
            Next::Close => {
                linger_close(reader.get_ref(), shared);
                return;
            }
            Next::Gone => {
                let _ = reader.get_ref().shutdown(Shutdown::Both);
                return;
            }
        }
    }
}

/// Closes our side, then reads (and discards) what the client still sends for a
/// moment, so that unread input does not turn the close into a reset.
fn linger_close(stream: &TcpStream, shared: &Shared) {
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
    let end = Instant::now() + LINGER;
    let mut buf = [0u8; 4096];
    let mut s = stream;
    while Instant::now() < end && !shared.stopped() {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

/// One line read from the client.
enum Line {
    /// Its bytes, without the line end.
    Text(Vec<u8>),
    /// Longer than `MAX_LINE`.
    TooLong,
    /// End of input, an error, or the server stopped.
    Gone,
}

/// Reads one line (ended by LF, CRLF accepted), waiting across read timeouts until the
/// server stops.
fn read_line(reader: &mut BufReader<TcpStream>, shared: &Shared) -> Line {
    let mut buf = Vec::new();
    loop {
        let limit = (MAX_LINE + 1).saturating_sub(buf.len()) as u64;
        match (&mut *reader).take(limit).read_until(b'\n', &mut buf) {
            Ok(_) if buf.last() == Some(&b'\n') => {
                buf.pop();
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                return Line::Text(buf);
            }
            Ok(_) if buf.len() > MAX_LINE => return Line::TooLong,
            Ok(_) => return Line::Gone,
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {
                if shared.stopped() {
                    return Line::Gone;
                }
                if buf.len() > MAX_LINE {
                    return Line::TooLong;
                }
            }
            Err(_) => return Line::Gone,
        }
    }
}

/// Reads and discards `n` bytes of request body; false if the connection failed.
fn discard(reader: &mut BufReader<TcpStream>, n: u64, shared: &Shared) -> bool {
    let mut left = n;
    let mut sink = [0u8; 8192];
    while left > 0 {
        let want = usize::try_from(left.min(sink.len() as u64)).unwrap_or(sink.len());
        match reader.read(&mut sink[..want]) {
            Ok(0) => return false,
            Ok(k) => left -= k as u64,
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {
                if shared.stopped() {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
    true
}

/// A request, as far as the server reads it.
struct Request {
    method: String,
    target: String,
    keep_alive: bool,
    /// Lower-case names, trimmed values.
    headers: Vec<(String, String)>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Reads one request (line and headers, body discarded).
fn read_request(reader: &mut BufReader<TcpStream>, shared: &Shared) -> Result<Request, Next> {
    // Empty lines before a request line are ignored (RFC 9112 2.2), a few of them.
    let mut line = Vec::new();
    for _ in 0..4 {
        if shared.stopped() {
            return Err(Next::Gone);
        }
        match read_line(reader, shared) {
            Line::Text(t) if t.is_empty() => {}
            Line::Text(t) => {
                line = t;
                break;
            }
            Line::TooLong => {
                shared.requests.fetch_add(1, Ordering::SeqCst);
                return Err(bad_request(reader, shared));
            }
            Line::Gone => return Err(Next::Gone),
        }
    }
    if line.is_empty() {
        return Err(Next::Gone);
    }
    shared.requests.fetch_add(1, Ordering::SeqCst);
    let Ok(text) = String::from_utf8(line) else { return Err(bad_request(reader, shared)) };
    let parts: Vec<&str> = text.split_ascii_whitespace().collect();
    let [method, target, version] = parts[..] else { return Err(bad_request(reader, shared)) };
    let http11 = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => return Err(bad_request(reader, shared)),
    };
    if !method.bytes().all(|b| b.is_ascii_alphabetic()) || target.is_empty() {
        return Err(bad_request(reader, shared));
    }
    let mut headers = Vec::new();
    loop {
        let line = match read_line(reader, shared) {
            Line::Text(t) => t,
            Line::TooLong => return Err(bad_request(reader, shared)),
            Line::Gone => return Err(Next::Gone),
        };
        if line.is_empty() {
            break;
        }
        if headers.len() >= MAX_HEADERS {
            return Err(bad_request(reader, shared));
        }
        let Ok(line) = String::from_utf8(line) else { return Err(bad_request(reader, shared)) };
        let Some((name, value)) = line.split_once(':') else { return Err(bad_request(reader, shared)) };
        if name.is_empty() || name.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
            return Err(bad_request(reader, shared));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut request = Request { method: method.to_string(), target: target.to_string(), keep_alive: http11, headers };
    if let Some(c) = request.header("connection") {
        let has = |token: &str| c.split(',').any(|t| t.trim().eq_ignore_ascii_case(token));
        request.keep_alive = if http11 { !has("close") } else { has("keep-alive") };
    }
    if request.header("transfer-encoding").is_some() {
        return Err(bad_request(reader, shared));
    }
    if let Some(n) = request.header("content-length") {
        let n = match parse_digits(n) {
            Some(n) if n <= MAX_REQUEST_BODY => n,
            _ => return Err(bad_request(reader, shared)),
        };
        if !discard(reader, n, shared) {
            return Err(Next::Gone);
        }
    }
    Ok(request)
}

/// Answers 400 (which closes the connection).
fn bad_request(reader: &BufReader<TcpStream>, shared: &Shared) -> Next {
    respond(reader.get_ref(), shared, &Head::new(400, 0, true), None, false)
}

/// The status line and headers of a response.
struct Head {
    status: u16,
    content_length: u64,
    close: bool,
    extra: Vec<(&'static str, String)>,
}

impl Head {
    fn new(status: u16, content_length: u64, close: bool) -> Head {
        Head { status, content_length, close, extra: Vec::new() }
    }

    fn with(mut self, name: &'static str, value: impl Into<String>) -> Head {
        self.extra.push((name, value.into()));
        self
    }

    fn text(&self) -> String {
        let reason = match self.status {
            200 => "OK",
            206 => "Partial Content",
            301 => "Moved Permanently",
            302 => "Found",
            303 => "See Other",
            307 => "Temporary Redirect",
            308 => "Permanent Redirect",
            412 => "Precondition Failed",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            416 => "Range Not Satisfiable",
            500 => "Internal Server Error",
            503 => "Service Unavailable",
            _ => "Unknown",
        };
        let mut s = format!("HTTP/1.1 {} {reason}\r\n", self.status);
        for (k, v) in &self.extra {
            let _ = write!(s, "{k}: {v}\r\n");
        }
        let _ = write!(s, "Content-Length: {}\r\n", self.content_length);
        if self.close {
            s.push_str("Connection: close\r\n");
        }
        s.push_str("\r\n");
        s
    }
}

/// Part of a file to send as a body.
struct Body {
    file: File,
    start: u64,
    /// Bytes sent: `Content-Length`, or less under `Fault::ShortBody`.
    send: u64,
}

/// Waits the latency, writes `head` then `body` (unless `head_only`); what follows.
fn respond(stream: &TcpStream, shared: &Shared, head: &Head, body: Option<Body>, head_only: bool) -> Next {
    if let Some(i) = CURRENT.with(std::cell::Cell::take)
        && let Some(seen) = lock(&shared.log).get_mut(i)
    {
        seen.status = head.status;
    }
    if !shared.pause(shared.options.latency) {
        return Next::Gone;
    }
    let mut w = stream;
    if w.write_all(head.text().as_bytes()).is_err() {
        return Next::Gone;
    }
    if let Some(body) = body.filter(|_| !head_only)
        && send_file(stream, shared, body).is_err()
    {
        return Next::Gone;
    }
    if w.flush().is_err() {
        return Next::Gone;
    }
    if head.close { Next::Close } else { Next::KeepAlive }
}

/// Streams `body.send` bytes of the file from `body.start`, at most `CHUNK` at a time.
fn send_file(stream: &TcpStream, shared: &Shared, mut body: Body) -> io::Result<()> {
    if body.send == 0 {
        return Ok(());
    }
    body.file.seek(SeekFrom::Start(body.start))?;
    let mut buf = vec![0u8; usize::try_from(body.send.min(CHUNK)).unwrap_or(1 << 20)];
    let mut left = body.send;
    let mut w = stream;
    while left > 0 {
        let n = usize::try_from(left.min(CHUNK)).unwrap_or(1 << 20).min(buf.len());
        body.file.read_exact(&mut buf[..n])?;
        // Counted before it is written (and what is not written taken back), so that a
        // client that has read the body always sees it counted.
        shared.bytes_sent.fetch_add(n as u64, Ordering::SeqCst);
        let mut off = 0;
        while off < n {
            let result = if shared.stopped() { Err(io::ErrorKind::Interrupted.into()) } else { w.write(&buf[off..n]) };
            match result {
                Ok(k) if k > 0 => off += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted && !shared.stopped() => {}
                other => {
                    shared.bytes_sent.fetch_sub((n - off) as u64, Ordering::SeqCst);
                    return Err(other.err().unwrap_or_else(|| io::ErrorKind::WriteZero.into()));
                }
            }
        }
        left -= n as u64;
    }
    Ok(())
}

/// Reads one request and answers it.
fn handle_request(reader: &mut BufReader<TcpStream>, shared: &Shared) -> Next {
    let request = match read_request(reader, shared) {
        Ok(r) => r,
        Err(next) => return next,
    };
    {
        let mut log = lock(&shared.log);
        CURRENT.with(|c| c.set(Some(log.len())));
        log.push(Seen { target: request.target.clone(), headers: request.headers.clone(), status: 0 });
    }
    let stream = reader.get_ref();
    let close = !request.keep_alive;
    let fault = shared.options.fault;
    match fault {
        Fault::Hang => {
            while shared.pause(STEP) {}
            return Next::Gone;
        }
        Fault::HangAfter(n) => {
            let k = shared.fault_count.fetch_add(1, Ordering::SeqCst);
            if k >= n as u64 {
                while shared.pause(STEP) {}
                return Next::Gone;
            }
        }
        Fault::Status500 => return respond(stream, shared, &Head::new(500, 0, close), None, false),
        Fault::FailFirst(n) => {
            let k = shared.fault_count.fetch_add(1, Ordering::SeqCst);
            if k < n as u64 {
                return respond(stream, shared, &Head::new(503, 0, close), None, false);
            }
        }
        _ => {}
    }
    let head_only = match request.method.as_str() {
        "GET" => false,
        "HEAD" => true,
        _ => return respond(stream, shared, &Head::new(405, 0, close).with("Allow", "GET, HEAD"), None, false),
    };
    if let Some((status, location)) = redirect_of(&request.target, shared.addr) {
        return respond(stream, shared, &Head::new(status, 0, close).with("Location", location), None, false);
    }
    let path = match resolve(&shared.root, &request.target) {
        Ok(p) => p,
        Err(400) => return bad_request(reader, shared),
        Err(status) => return respond(stream, shared, &Head::new(status, 0, close), None, false),
    };
    let path = match &shared.options.swap {
        Some(swap) if resolve(&shared.root, &format!("/{}", swap.name)).is_ok_and(|p| p == path) => {
            if shared.swap_count.fetch_add(1, Ordering::SeqCst) >= swap.after { swap.replacement.clone() } else { path }
        }
        _ => path,
    };
    let not_found = || respond(stream, shared, &Head::new(404, 0, close), None, false);
    let Ok(file) = File::open(&path) else { return not_found() };
    let Ok(meta) = file.metadata() else { return not_found() };
    if !meta.is_file() {
        return not_found();
    }
    let len = meta.len();
    let (etag, modified) = validators(&path, &meta);
    let (etag, last_modified) = match shared.options.validators {
        Validators::Strong => (Some(format!("\"{etag}\"")), Some(http_date(modified))),
        Validators::Weak => (Some(format!("W/\"{etag}\"")), Some(http_date(modified))),
        Validators::LastModified => (None, Some(http_date(modified))),
        Validators::None => (None, None),
    };
    if !shared.options.ignore_preconditions && !preconditions_hold(&request, etag.as_deref(), modified) {
        return respond(stream, shared, &Head::new(412, 0, close), None, false);
    }
    let with_validators = |mut head: Head| {
        if let Some(e) = &etag {
            head = head.with("ETag", e.clone());
        }
        if let Some(d) = &last_modified {
            head = head.with("Last-Modified", d.clone());
        }
        head
    };
    let range = if fault == Fault::IgnoreRange { Range::Full } else { parse_range(request.header("range"), len) };
    let short = |n: u64| if fault == Fault::ShortBody { n / 2 } else { n };
    // A short body ends the connection: what follows could not be told from the body.
    let close_after = |n: u64| close || (short(n) < n && !head_only);
    match range {
        Range::Full => {
            let head = with_validators(
                Head::new(200, len, close_after(len))
                    .with("Content-Type", "application/octet-stream")
                    .with("Accept-Ranges", "bytes"),
            );
            respond(stream, shared, &head, Some(Body { file, start: 0, send: short(len) }), head_only)
        }
        Range::Unsatisfiable => {
            let head = Head::new(416, 0, close).with("Content-Range", format!("bytes */{len}"));
            respond(stream, shared, &head, None, false)
        }
        Range::Part(a, b) => {
            lock(&shared.ranges).push((a, b));
            let (start, end) = if fault == Fault::WrongContentRange {
                let start = a + 1;
                (start, (b + 1).min(len - 1).max(start))
            } else {
                (a, b)
            };
            // Under WrongContentRange the shifted start can be the end of the file.
            let n = (end + 1).min(len).saturating_sub(start);
            let head = with_validators(
                Head::new(206, n, close_after(n))
                    .with("Content-Type", "application/octet-stream")
                    .with("Accept-Ranges", "bytes")
                    .with("Content-Range", format!("bytes {start}-{end}/{len}")),
            );
            respond(stream, shared, &head, Some(Body { file, start, send: short(n) }), head_only)
        }
    }
}

/// The answer to a Range header.
#[derive(Debug, PartialEq, Eq)]
enum Range {
    /// No Range header, or one not understood (ignored, as RFC 9110 allows): the whole file.
    Full,
    /// 416.
    Unsatisfiable,
    /// `(start, end_inclusive)`, within the file.
    Part(u64, u64),
}

/// ASCII digits as a number (saturated); `None` if not all digits.
fn parse_digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.bytes().fold(0u64, |n, d| n.saturating_mul(10).saturating_add(u64::from(d - b'0'))))
}

/// `bytes=a-b`, `bytes=a-` or `bytes=-n` against a file of `len` bytes.
fn parse_range(value: Option<&str>, len: u64) -> Range {
    let Some(value) = value else { return Range::Full };
    let Some((unit, spec)) = value.split_once('=') else { return Range::Full };
    if !unit.trim().eq_ignore_ascii_case("bytes") || spec.contains(',') {
        return Range::Full;
    }
    let Some((a, b)) = spec.split_once('-') else { return Range::Full };
    let (a, b) = (a.trim(), b.trim());
    if a.is_empty() {
        let Some(n) = parse_digits(b) else { return Range::Full };
        if n == 0 || len == 0 {
            return Range::Unsatisfiable;
        }
        return Range::Part(len - n.min(len), len - 1);
    }
    let Some(a) = parse_digits(a) else { return Range::Full };
    let b = if b.is_empty() {
        None
    } else {
        match parse_digits(b) {
            Some(b) if b >= a => Some(b),
            _ => return Range::Full,
        }
    };
    if a >= len {
        return Range::Unsatisfiable;
    }
    Range::Part(a, b.map_or(len - 1, |b| b.min(len - 1)))
}

/// Decodes `%XX` escapes; `None` if one is malformed.
fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// The file a request target names under `root`, or the status to answer: 400 for a
/// malformed target, 404 for anything missing or outside `root`.
fn resolve(root: &Path, target: &str) -> Result<PathBuf, u16> {
    let path = target.split(['?', '#']).next().unwrap_or("");
    // The absolute form (`http://host/path`) is accepted too.
    let path = match path.strip_prefix("http://") {
        Some(rest) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => path,
    };
    let Some(path) = path.strip_prefix('/') else { return Err(400) };
    let decoded = percent_decode(path).ok_or(400u16)?;
    let decoded = String::from_utf8(decoded).map_err(|_| 404u16)?;
    let root = root.canonicalize().map_err(|_| 404u16)?;
    let mut full = root.clone();
    for seg in decoded.split('/') {
        if seg.is_empty() || seg == "." {
            continue;
        }
        if seg == ".." || seg.contains(['\\', '\0']) {
            return Err(404);
        }
        let mut parts = Path::new(seg).components();
        match (parts.next(), parts.next()) {
            (Some(Component::Normal(_)), None) => full.push(seg),
            _ => return Err(404),
        }
    }
    let real = full.canonicalize().map_err(|_| 404u16)?;
    if !real.starts_with(&root) {
        return Err(404);
    }
    Ok(real)
}

/// A redirect asked for in the request's path: a segment `__redirect` followed by the
/// status (301, 302, 303, 307 or 308) and where to:
///
/// - `same/REST`: `/REST` on this server (a root-relative `Location`);
/// - `abs/REST`: `http://127.0.0.1:PORT/REST`, this server's own address;
/// - `port/P/REST`: `http://127.0.0.1:P/REST`, another origin;
/// - `self`: the request's own target (a loop).
///
/// `(status, Location)`, or `None` when the path asks for no redirect.
pub fn redirect_of(target: &str, addr: SocketAddr) -> Option<(u16, String)> {
    let path = target.split(['?', '#']).next().unwrap_or("");
    let segments: Vec<&str> = path.split('/').collect();
    let at = segments.iter().position(|s| *s == "__redirect")?;
    let status: u16 = segments.get(at + 1)?.parse().ok().filter(|s| [301, 302, 303, 307, 308].contains(s))?;
    let rest = |from: usize| segments.get(from..).map(|r| r.join("/")).unwrap_or_default();
    let location = match *segments.get(at + 2)? {
        "same" => format!("/{}", rest(at + 3)),
        "abs" => format!("http://{addr}/{}", rest(at + 3)),
        "port" => format!("http://127.0.0.1:{}/{}", segments.get(at + 3)?.parse::<u16>().ok()?, rest(at + 4)),
        "self" => target.to_string(),
        _ => return None,
    };
    Some((status, location))
}

/// A file's ETag (without quotes: its length, modification time, inode and path,
/// hashed) and modification time in seconds since 1970.
fn validators(path: &Path, meta: &std::fs::Metadata) -> (String, u64) {
    let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).unwrap_or_default();
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0u64;
    // FNV-1a of the path.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.as_os_str().as_encoded_bytes() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    (format!("{:x}-{:x}-{inode:x}-{h:x}", meta.len(), modified.as_nanos()), modified.as_secs())
}

/// Whether a request's `If-Match` (strong comparison; `*` matches) or, without one,
/// `If-Unmodified-Since` holds for a file of ETag `etag` modified at `modified`
/// (RFC 9110 13.2.2). A precondition the server cannot evaluate holds.
fn preconditions_hold(request: &Request, etag: Option<&str>, modified: u64) -> bool {
    if let Some(wanted) = request.header("if-match") {
        return wanted
            .split(',')
            .map(str::trim)
            .any(|w| w == "*" || (!w.starts_with("W/") && etag.is_some_and(|e| !e.starts_with("W/") && e == w)));
    }
    if let Some(date) = request.header("if-unmodified-since") {
        return parse_http_date(date).is_none_or(|d| modified <= d);
    }
    true
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: u64, d: u64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + i64::try_from(doy).unwrap_or(0);
    era * 146_097 + doe - 719_468
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// `secs` since 1970 as an HTTP date: `Sun, 06 Nov 1994 08:49:37 GMT`.
fn http_date(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][usize::try_from(days.rem_euclid(7)).unwrap_or(0)];
    format!(
        "{weekday}, {d:02} {} {y} {:02}:{:02}:{:02} GMT",
        MONTHS[usize::try_from(m - 1).unwrap_or(0)],
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`) as seconds since 1970.
fn parse_http_date(s: &str) -> Option<u64> {
    let parts: Vec<&str> = s.split_ascii_whitespace().collect();
    let [_, d, mon, y, hms, "GMT"] = parts[..] else { return None };
    let m = MONTHS.iter().position(|x| *x == mon)? as u64 + 1;
    let (d, y): (u64, i64) = (d.parse().ok()?, y.parse().ok()?);
    let t: Vec<u64> = hms.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let [h, min, sec] = t[..] else { return None };
    let days = u64::try_from(days_from_civil(y, m, d)).ok()?;
    Some(days * 86_400 + h * 3600 + min * 60 + sec)
}
