//! Tests of the test HTTP server (tests/common/range_server.rs) with raw `TcpStream`
//! requests: ranges, errors, keep-alive, HEAD, counters and each injected fault.

use rasdf_testkit::range_server;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use range_server::{Fault, RangeServer, ServerOptions, Swap, Validators};

/// Byte `i` of the test files.
fn byte(i: u64) -> u8 {
    (i ^ (i >> 8) ^ (i >> 16).wrapping_mul(7)).to_le_bytes()[0]
}

/// A fresh folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let d = std::env::temp_dir().join(format!("rasdf-range-server-{tag}-{}-{nanos}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }

    /// Writes `name` with `len` known bytes; returns them.
    fn file(&self, name: &str, len: u64) -> Vec<u8> {
        let data: Vec<u8> = (0..len).map(byte).collect();
        let path = self.0.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &data).unwrap();
        data
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One response read off a connection.
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn content_length(&self) -> usize {
        self.header("content-length").expect("Content-Length").parse().unwrap()
    }
}

/// A client connection.
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(server: &RangeServer) -> Client {
        let addr = server.base().trim_start_matches("http://").to_string();
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Client { reader: BufReader::new(stream) }
    }

    fn send_raw(&mut self, text: &str) {
        self.reader.get_mut().write_all(text.as_bytes()).unwrap();
    }

    /// Sends `METHOD target HTTP/1.1` with the `extra` header lines (each ending in CRLF).
    fn send(&mut self, method: &str, target: &str, extra: &str) {
        self.send_raw(&format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n"));
    }

    fn read_line(&mut self) -> std::io::Result<String> {
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    }

    /// Status line and headers.
    fn read_head(&mut self) -> std::io::Result<Response> {
        let line = self.read_line()?;
        let status = line.split(' ').nth(1).unwrap_or_else(|| panic!("status line {line:?}")).parse().unwrap();
        assert!(line.starts_with("HTTP/1.1 "), "{line}");
        let mut headers = Vec::new();
        loop {
            let line = self.read_line()?;
            if line.is_empty() {
                break;
            }
            let (k, v) = line.split_once(':').unwrap();
            headers.push((k.to_string(), v.trim().to_string()));
        }
        Ok(Response { status, headers, body: Vec::new() })
    }

    /// A whole response; the body as Content-Length says, none after a HEAD.
    fn read_response(&mut self, head_only: bool) -> Response {
        let mut r = self.read_head().unwrap();
        if !head_only {
            r.body = vec![0; r.content_length()];
            self.reader.read_exact(&mut r.body).unwrap();
        }
        r
    }

    /// True if the server closed the connection (nothing more to read).
    fn at_eof(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.reader.read(&mut b), Ok(0))
    }
}

/// One request on a new connection.
fn get(server: &RangeServer, target: &str, extra: &str) -> Response {
    let mut c = Client::connect(server);
    c.send("GET", target, extra);
    c.read_response(false)
}

#[test]
fn ranges_errors_head_keep_alive_and_counters() {
    let dir = TempDir::new("basic");
    let data = dir.file("data.bin", 3_000_000);
    let small = dir.file("sub/x y.bin", 100);
    let server = RangeServer::start(&dir.0, ServerOptions::default());
    assert!(server.url("data.bin").starts_with("http://127.0.0.1:"));
    assert_eq!(server.url("data.bin"), format!("{}/data.bin", server.base()));

    let r = get(&server, "/data.bin", "Range: bytes=10-19\r\n");
    assert_eq!(r.status, 206);
    assert_eq!(r.body, &data[10..20]);
    assert_eq!(r.header("Content-Range"), Some("bytes 10-19/3000000"));
    assert_eq!(r.header("Accept-Ranges"), Some("bytes"));
    assert_eq!(r.content_length(), 10);

    // Suffix, open-ended, clamped end, across a chunk boundary.
    let r = get(&server, "/data.bin", "Range: bytes=-100\r\n");
    assert_eq!((r.status, r.header("Content-Range")), (206, Some("bytes 2999900-2999999/3000000")));
    assert_eq!(r.body, &data[2_999_900..]);
    let r = get(&server, "/data.bin", "Range: bytes=2999990-\r\n");
    assert_eq!((r.status, r.header("Content-Range")), (206, Some("bytes 2999990-2999999/3000000")));
    assert_eq!(r.body, &data[2_999_990..]);
    let r = get(&server, "/data.bin", "Range: bytes=2999995-9999999\r\n");
    assert_eq!(r.body, &data[2_999_995..]);
    let r = get(&server, "/data.bin", "Range: bytes=1048570-2097160\r\n");
    assert_eq!(r.body, &data[1_048_570..=2_097_160]);
    let r = get(&server, "/data.bin", "Range: bytes=-5000000\r\n");
    assert_eq!((r.status, r.body.len()), (206, 3_000_000));

    // No range: the whole file, streamed in several chunks.
    let r = get(&server, "/data.bin", "");
    assert_eq!(r.status, 200);
    assert!(r.body == data);

    // Unsatisfiable.
    let r = get(&server, "/data.bin", "Range: bytes=3000000-\r\n");
    assert_eq!((r.status, r.header("Content-Range"), r.content_length()), (416, Some("bytes */3000000"), 0));
    let r = get(&server, "/data.bin", "Range: bytes=-0\r\n");
    assert_eq!(r.status, 416);

    // Not found, outside the root, a folder; query strings and escapes.
    assert_eq!(get(&server, "/missing.bin", "").status, 404);
    assert_eq!(get(&server, "/../etc/passwd", "").status, 404);
    assert_eq!(get(&server, "/sub/../../etc/passwd", "").status, 404);
    assert_eq!(get(&server, "/%2e%2e/etc/passwd", "").status, 404);
    assert_eq!(get(&server, "/sub", "").status, 404);
    assert_eq!(get(&server, "/sub/x%20y.bin?v=1&w=2", "").body, small);
    assert_eq!(get(&server, "/sub/x%zzy.bin", "").status, 400);

    // HEAD: headers only, then a second request on the same connection (keep-alive).
    let mut c = Client::connect(&server);
    c.send("HEAD", "/data.bin", "");
    let r = c.read_response(true);
    assert_eq!((r.status, r.content_length()), (200, 3_000_000));
    c.send("HEAD", "/data.bin", "Range: bytes=5-9\r\n");
    let r = c.read_response(true);
    assert_eq!((r.status, r.content_length(), r.header("Content-Range")), (206, 5, Some("bytes 5-9/3000000")));
    c.send("GET", "/data.bin", "Range: bytes=0-3\r\n");
    assert_eq!(c.read_response(false).body, &data[..4]);
    // Pipelined: both requests sent before either answer is read.
    c.send("GET", "/data.bin", "Range: bytes=100-101\r\n");
    c.send("GET", "/sub/x%20y.bin", "Range: bytes=-1\r\n");
    assert_eq!(c.read_response(false).body, &data[100..102]);
    assert_eq!(c.read_response(false).body, &small[99..]);
    // Connection: close is honoured.
    c.send("GET", "/data.bin", "Range: bytes=0-0\r\nConnection: close\r\n");
    let r = c.read_response(false);
    assert_eq!(r.header("Connection"), Some("close"));
    assert!(c.at_eof());

    // Malformed requests: 400, then the connection closes.
    let mut c = Client::connect(&server);
    c.send_raw("GARBAGE\r\n\r\n");
    assert_eq!(c.read_response(false).status, 400);
    assert!(c.at_eof());
    let mut c = Client::connect(&server);
    c.send_raw("GET /data.bin HTTP/1.1\r\nno colon here\r\n\r\n");
    assert_eq!(c.read_response(false).status, 400);
    assert!(c.at_eof());
    let mut c = Client::connect(&server);
    c.send("DELETE", "/data.bin", "");
    assert_eq!(c.read_response(false).status, 405);

    // Counters.
    server.reset_counters();
    assert_eq!((server.requests(), server.bytes_sent(), server.ranges()), (0, 0, vec![]));
    let mut c = Client::connect(&server);
    c.send("GET", "/data.bin", "Range: bytes=10-19\r\n");
    c.read_response(false);
    c.send("GET", "/data.bin", "Range: bytes=-5\r\n");
    c.read_response(false);
    c.send("GET", "/sub/x%20y.bin", "");
    c.read_response(false);
    c.send("GET", "/missing", "");
    c.read_response(false);
    assert_eq!(server.requests(), 4);
    assert_eq!(server.bytes_sent(), 10 + 5 + 100);
    assert_eq!(server.ranges(), vec![(10, 19), (2_999_995, 2_999_999)]);

    let t = Instant::now();
    server.stop();
    assert!(t.elapsed() < Duration::from_secs(2), "stop took {:?}", t.elapsed());
    // The idle keep-alive connection was closed by the stop.
    assert!(c.at_eof());
}

/// A server with `fault` over a folder with `data.bin` (1000 bytes).
fn faulty(tag: &str, fault: Fault) -> (TempDir, Vec<u8>, RangeServer) {
    let dir = TempDir::new(tag);
    let data = dir.file("data.bin", 1000);
    let server = RangeServer::start(&dir.0, ServerOptions { fault, ..ServerOptions::default() });
    (dir, data, server)
}

#[test]
fn short_body() {
    let (_dir, data, server) = faulty("short", Fault::ShortBody);
    let mut c = Client::connect(&server);
    c.send("GET", "/data.bin", "Range: bytes=0-99\r\n");
    let r = c.read_head().unwrap();
    assert_eq!((r.status, r.content_length(), r.header("Content-Range")), (206, 100, Some("bytes 0-99/1000")));
    let mut body = Vec::new();
    c.reader.read_to_end(&mut body).unwrap();
    assert_eq!(body, &data[..50]);
    let mut c = Client::connect(&server);
    c.send("GET", "/data.bin", "");
    let r = c.read_head().unwrap();
    assert_eq!((r.status, r.content_length()), (200, 1000));
    let mut body = Vec::new();
    c.reader.read_to_end(&mut body).unwrap();
    assert_eq!(body, &data[..500]);
    assert_eq!(server.bytes_sent(), 550);
}

#[test]
fn wrong_content_range() {
    let (_dir, data, server) = faulty("wrong-range", Fault::WrongContentRange);
    let r = get(&server, "/data.bin", "Range: bytes=10-19\r\n");
    assert_eq!((r.status, r.header("Content-Range")), (206, Some("bytes 11-20/1000")));
    assert_eq!(r.body, &data[11..21]);
    // Clamped at the end of the file.
    let r = get(&server, "/data.bin", "Range: bytes=990-999\r\n");
    assert_eq!((r.status, r.header("Content-Range")), (206, Some("bytes 991-999/1000")));
    assert_eq!(r.body, &data[991..]);
    assert_eq!(server.ranges(), vec![(10, 19), (990, 999)]);
}

#[test]
fn status_500() {
    let (_dir, _data, server) = faulty("500", Fault::Status500);
    let mut c = Client::connect(&server);
    for _ in 0..2 {
        c.send("GET", "/data.bin", "Range: bytes=0-9\r\n");
        let r = c.read_response(false);
        assert_eq!((r.status, r.body.len()), (500, 0));
    }
    assert_eq!((server.requests(), server.bytes_sent()), (2, 0));
    assert!(server.ranges().is_empty());
}

#[test]
fn fail_first() {
    let (_dir, data, server) = faulty("fail-first", Fault::FailFirst(2));
    assert_eq!(get(&server, "/data.bin", "Range: bytes=0-9\r\n").status, 503);
    let mut c = Client::connect(&server);
    c.send("GET", "/data.bin", "Range: bytes=0-9\r\n");
    assert_eq!(c.read_response(false).status, 503);
    c.send("GET", "/data.bin", "Range: bytes=0-9\r\n");
    let r = c.read_response(false);
    assert_eq!((r.status, r.body), (206, data[..10].to_vec()));
    assert_eq!(get(&server, "/data.bin", "").status, 200);
    assert_eq!(server.requests(), 4);
}

#[test]
fn hang() {
    let (_dir, _data, server) = faulty("hang", Fault::Hang);
    let mut c = Client::connect(&server);
    c.reader.get_ref().set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    c.send("GET", "/data.bin", "Range: bytes=0-9\r\n");
    let t = Instant::now();
    let mut b = [0u8; 1];
    let e = c.reader.read(&mut b).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut), "{e}");
    assert!(t.elapsed() >= Duration::from_millis(250));
    assert_eq!(server.requests(), 1);
    let t = Instant::now();
    server.stop();
    assert!(t.elapsed() < Duration::from_secs(2), "stop took {:?}", t.elapsed());
    // Closed without an answer.
    c.reader.get_ref().set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    assert!(matches!(c.reader.read(&mut b), Ok(0) | Err(_)));
}

#[test]
fn ignore_range() {
    let (_dir, data, server) = faulty("ignore-range", Fault::IgnoreRange);
    let r = get(&server, "/data.bin", "Range: bytes=10-19\r\n");
    assert_eq!((r.status, r.header("Content-Range")), (200, None));
    assert_eq!(r.body, data);
    assert!(server.ranges().is_empty());
    assert_eq!(server.bytes_sent(), 1000);
}

#[test]
fn latency() {
    let dir = TempDir::new("latency");
    let data = dir.file("data.bin", 1000);
    let options = ServerOptions { latency: Duration::from_millis(150), ..ServerOptions::default() };
    let server = RangeServer::start(&dir.0, options);
    let t = Instant::now();
    let r = get(&server, "/data.bin", "Range: bytes=0-9\r\n");
    assert!(t.elapsed() >= Duration::from_millis(150), "{:?}", t.elapsed());
    assert_eq!(r.body, &data[..10]);

    // A long latency does not delay stop (nor does drop).
    let server =
        RangeServer::start(&dir.0, ServerOptions { latency: Duration::from_secs(30), ..ServerOptions::default() });
    let mut c = Client::connect(&server);
    c.send("GET", "/data.bin", "Range: bytes=0-9\r\n");
    std::thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    drop(server);
    assert!(t.elapsed() < Duration::from_secs(1), "stop took {:?}", t.elapsed());
    let mut b = [0u8; 1];
    assert!(matches!(c.reader.read(&mut b), Ok(0) | Err(_)));
}

#[test]
fn hang_after() {
    let (_dir, data, server) = faulty("hang-after", Fault::HangAfter(1));
    assert_eq!(get(&server, "/data.bin", "Range: bytes=0-9\r\n").body, &data[..10]);
    let mut c = Client::connect(&server);
    c.reader.get_ref().set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    c.send("GET", "/data.bin", "Range: bytes=0-9\r\n");
    let mut b = [0u8; 1];
    let e = c.reader.read(&mut b).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut), "{e}");
    assert_eq!(server.requests(), 2);
}

#[test]
fn validators_and_preconditions() {
    let dir = TempDir::new("validators");
    dir.file("data.bin", 1000);
    let path = dir.0.join("data.bin");
    let modified = std::time::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(modified).unwrap();
    let date = "Sun, 06 Nov 1994 08:49:37 GMT";
    for validators in [Validators::Strong, Validators::Weak, Validators::LastModified, Validators::None] {
        let server = RangeServer::start(&dir.0, ServerOptions { validators, ..ServerOptions::default() });
        let r = get(&server, "/data.bin", "Range: bytes=0-9\r\n");
        let etag = r.header("ETag").map(str::to_string);
        match validators {
            Validators::Strong => assert!(etag.as_deref().is_some_and(|e| e.starts_with('"') && e.ends_with('"'))),
            Validators::Weak => assert!(etag.as_deref().is_some_and(|e| e.starts_with("W/\""))),
            _ => assert_eq!(etag, None),
        }
        let lm = if validators == Validators::None { None } else { Some(date) };
        assert_eq!(r.header("Last-Modified"), lm, "{validators:?}");
        // The same answer again; 200 answers carry them too.
        assert_eq!(get(&server, "/data.bin", "").header("ETag").map(str::to_string), etag);
        let status = |extra: &str| get(&server, "/data.bin", &format!("Range: bytes=0-9\r\n{extra}")).status;
        // If-Match: strong comparison; `*` matches.
        assert_eq!(status("If-Match: *\r\n"), 206);
        assert_eq!(status("If-Match: \"other\"\r\n"), 412);
        if let Some(e) = &etag {
            let strong = validators == Validators::Strong;
            assert_eq!(status(&format!("If-Match: {e}\r\n")), if strong { 206 } else { 412 }, "{validators:?}");
            assert_eq!(status(&format!("If-Match: \"x\", {e}\r\n")), if strong { 206 } else { 412 });
        }
        // If-Unmodified-Since: the file is not newer than the date.
        assert_eq!(status(&format!("If-Unmodified-Since: {date}\r\n")), 206);
        assert_eq!(status("If-Unmodified-Since: Sat, 05 Nov 1994 08:49:37 GMT\r\n"), 412);
        assert_eq!(status("If-Unmodified-Since: not a date\r\n"), 206);
        // If-Match first: If-Unmodified-Since is then not looked at.
        assert_eq!(status("If-Match: *\r\nIf-Unmodified-Since: Sat, 05 Nov 1994 08:49:37 GMT\r\n"), 206);
        let log = server.log();
        assert_eq!(log.len() as u64, server.requests());
        assert_eq!(log.last().map(|s| (s.target.as_str(), s.status)), Some(("/data.bin", 206)));
        assert!(log.iter().any(|s| s.status == 412 && s.header("if-match") == Some("\"other\"")));
    }
    // Ignored preconditions.
    let server = RangeServer::start(&dir.0, ServerOptions { ignore_preconditions: true, ..ServerOptions::default() });
    assert_eq!(get(&server, "/data.bin", "Range: bytes=0-9\r\nIf-Match: \"other\"\r\n").status, 206);
    // The ETag follows the file: another file in its place has another.
    let server = RangeServer::start(&dir.0, ServerOptions::default());
    let before = get(&server, "/data.bin", "").header("ETag").map(str::to_string);
    std::fs::copy(&path, dir.0.join("copy.bin")).unwrap();
    std::fs::rename(dir.0.join("copy.bin"), &path).unwrap();
    let after = get(&server, "/data.bin", "").header("ETag").map(str::to_string);
    assert!(before.is_some() && after.is_some() && before != after);
}

#[test]
fn swap() {
    let dir = TempDir::new("swap");
    let data = dir.file("data.bin", 1000);
    let other: Vec<u8> = data.iter().map(|b| b ^ 0xff).collect();
    let replacement = dir.0.join("other.bin");
    std::fs::write(&replacement, &other).unwrap();
    let swap = Swap { name: "data.bin".into(), replacement, after: 2 };
    let server = RangeServer::start(&dir.0, ServerOptions { swap: Some(swap), ..ServerOptions::default() });
    let etag = |r: &Response| r.header("ETag").map(str::to_string);
    let (r1, r2) =
        (get(&server, "/data.bin", "Range: bytes=0-9\r\n"), get(&server, "/data.bin", "Range: bytes=0-9\r\n"));
    // Other files do not count.
    dir.file("x.bin", 10);
    assert_eq!(get(&server, "/x.bin", "").status, 200);
    let r3 = get(&server, "/data.bin", "Range: bytes=0-9\r\n");
    assert_eq!((&r1.body[..], &r2.body[..], &r3.body[..]), (&data[..10], &data[..10], &other[..10]));
    assert!(etag(&r1) == etag(&r2) && etag(&r2) != etag(&r3));
    // A request on condition of the first version: 412.
    let r = get(&server, "/data.bin", &format!("Range: bytes=0-9\r\nIf-Match: {}\r\n", etag(&r1).unwrap()));
    assert_eq!(r.status, 412);
}

#[test]
fn redirects() {
    let dir = TempDir::new("redirects");
    let data = dir.file("sub/data.bin", 100);
    let server = RangeServer::start(&dir.0, ServerOptions::default());
    for code in [301, 302, 303, 307, 308] {
        let r = get(&server, &format!("/__redirect/{code}/same/sub/data.bin"), "");
        assert_eq!((r.status, r.header("Location"), r.content_length()), (code, Some("/sub/data.bin"), 0));
    }
    let r = get(&server, "/a/__redirect/302/abs/sub/data.bin?q=1", "");
    assert_eq!(r.header("Location"), Some(format!("{}/sub/data.bin", server.base()).as_str()));
    let r = get(&server, "/__redirect/307/port/9/sub/data.bin", "");
    assert_eq!(r.header("Location"), Some("http://127.0.0.1:9/sub/data.bin"));
    let r = get(&server, "/__redirect/308/self", "");
    assert_eq!((r.status, r.header("Location")), (308, Some("/__redirect/308/self")));
    // Not a redirect: a status that is not one, or no target.
    assert_eq!(get(&server, "/__redirect/200/same/sub/data.bin", "").status, 404);
    assert_eq!(get(&server, "/__redirect/302/nowhere/sub/data.bin", "").status, 404);
    assert_eq!(get(&server, "/sub/data.bin", "").body, data);
    // The log has each request's status.
    assert_eq!(server.log().iter().filter(|s| s.status == 302).count(), 2);
}
