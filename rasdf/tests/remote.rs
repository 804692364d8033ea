//! Remote files (feature `remote`): every fixture read over HTTP from a server on
//! 127.0.0.1 reads as the local file does; few requests; S3 URLs; servers that fail or
//! lie give clear errors, bounded in time, never a wrong array.

use rasdf_testkit::lz4_file;
use rasdf_testkit::range_server;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use range_server::{Fault, RangeServer, Seen, ServerOptions, Swap, Validators};
use rasdf::remote::{RemoteOptions, S3Credentials, S3Options};
use rasdf::{AsdfFile, OpenOptions};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata")
}

fn fixtures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in ["pyasdf", "reference_files", "astro", "oldasdf", "bad", "yaml", "scalars", "strings"] {
        let mut stack = vec![testdata().join(sub)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "asdf") {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

fn quick() -> RemoteOptions {
    RemoteOptions::default().timeout(Duration::from_secs(5)).retry_pause(Duration::from_millis(10))
}

/// What a reader sees of a file: tree, blocks, index, warnings, every block's data (or
/// its error's text without the file's name).
fn seen(f: &rasdf::Result<AsdfFile>, name: &str) -> String {
    let strip = |s: String| s.replace(name, "FILE");
    match f {
        Err(e) => strip(format!("error {e}")),
        Ok(f) => {
            let mut s = format!(
                "tree {:?}\nblocks {:?}\nindex {:?}\nwalk {:?}\nwarnings {:?}\narrays {:?}\n",
                f.tree(),
                f.blocks(),
                f.index_status(),
                f.blocks_error().map(|e| e.to_string()),
                f.warnings(),
                rasdf_testkit::listing(f).map(|a| format!("{a:?}")).map_err(|e| e.to_string()),
            );
            for n in 0..f.blocks().len() {
                s += &match f.block_data(n) {
                    Ok(d) => format!("block {n}: {} bytes, md5 {:x?}\n", d.len(), rasdf::block::md5(d)),
                    Err(e) => format!("block {n}: {e}\n"),
                };
            }
            for (n, r) in f.verify_blocks().iter().enumerate() {
                s += &format!("verify {n}: {:?}\n", r.as_ref().map_err(|e| e.to_string()));
            }
            strip(s)
        }
    }
}

#[test]
fn every_fixture_reads_over_http_as_locally() {
    let root = testdata();
    let server = RangeServer::start(&root, ServerOptions::default());
    let options = OpenOptions::new().remote(quick());
    let files = fixtures();
    assert!(files.len() > 200, "{} fixtures", files.len());
    for path in files {
        let rel = path.strip_prefix(&root).unwrap().to_str().unwrap().replace('\\', "/");
        let url = server.url(&rel);
        let local = options.open(&path);
        let remote = options.open_url(&url);
        let (a, b) = (seen(&local, path.to_str().unwrap()), seen(&remote, &url));
        assert!(a == b, "{rel}: local and remote differ:\n--- local\n{a}\n--- remote\n{b}");
        if let Ok(f) = &remote {
            assert_eq!(f.url(), Some(url.as_str()));
        }
    }
}

/// A file of `n` small arrays (a valid block index) and one large lz4 one, written by rasdf.
fn write_file(dir: &Path, name: &str, n: usize, large: usize, index: bool) -> PathBuf {
    use rasdf::block::Compression;
    use rasdf::write::{Document, WriteOptions};
    let mut doc = Document::new();
    for i in 0..n {
        let a = ndarray::Array1::from_iter((0..64).map(|k| (i * 64 + k) as f64));
        doc.set_array(&format!("small/a{i}"), a.view(), Compression::None).unwrap();
        doc.set(&format!("meta/k{i}"), format!("value {i}").as_str()).unwrap();
    }
    // Noise, which lz4 cannot shrink much.
    let big = ndarray::Array2::from_shape_fn((large, 256), |(i, j)| {
        ((i as u64 * 256 + j as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as f32
    });
    doc.set_array("big", big.view(), Compression::Lz4).unwrap();
    let path = dir.join(name);
    doc.write_to_path(&path, &WriteOptions::default().include_index(index)).unwrap();
    path
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rasdf-remote-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn an_open_takes_few_requests_and_reads_only_what_is_asked() {
    let dir = tempdir("few");
    let path = write_file(&dir, "f.asdf", 300, 4096, true);
    let server = RangeServer::start(&dir, ServerOptions { latency: Duration::from_millis(20), ..Default::default() });
    let url = server.url("f.asdf");
    let file = OpenOptions::new().remote(quick()).open_url(&url).unwrap();
    assert!(matches!(file.index_status(), rasdf::index::IndexStatus::Valid));
    assert_eq!(file.blocks().len(), 301);
    let opened = server.requests();
    assert!(opened <= 4, "{opened} requests to open a file with a valid index");
    let len = std::fs::metadata(&path).unwrap().len();
    let big = file.blocks().last().unwrap().clone();
    assert!(big.used_size > 1 << 20, "the large block is {} bytes", big.used_size);
    let sent_at_open = server.bytes_sent();
    assert!(sent_at_open < len / 4, "{sent_at_open} of {len} bytes sent to open");
    // One small array: one request, its block only.
    server.reset_counters();
    let a = file.array("small/a7").unwrap().read::<f64>().unwrap();
    assert_eq!(a.iter().copied().collect::<Vec<_>>(), (448..512).map(f64::from).collect::<Vec<_>>());
    assert_eq!(server.requests(), 1);
    assert!(server.bytes_sent() < 1024, "{} bytes for a 512-byte block", server.bytes_sent());
    // The same array again: nothing more.
    let _ = file.array("small/a7").unwrap().read::<f64>().unwrap();
    assert_eq!(server.requests(), 1);
    // The large one: its block, fetched once, decoded as the local file's.
    server.reset_counters();
    let local = OpenOptions::new().open(&path).unwrap();
    assert_eq!(file.array("big").unwrap().read::<f32>().unwrap(), local.array("big").unwrap().read::<f32>().unwrap());
    assert_eq!(server.requests(), 1);
    assert!(server.bytes_sent() <= big.used_size + 64);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_without_index_and_a_large_tree() {
    let dir = tempdir("noindex");
    let path = write_file(&dir, "f.asdf", 2000, 16, false);
    let server = RangeServer::start(&dir, ServerOptions::default());
    let options = OpenOptions::new().remote(quick());
    let remote = options.open_url(&server.url("f.asdf")).unwrap();
    let local = options.open(&path).unwrap();
    assert!(local.tree_bytes().unwrap().len() > 128 * 1024, "the tree is larger than the first fetch");
    assert_eq!(remote.tree(), local.tree());
    assert_eq!(remote.blocks(), local.blocks());
    assert_eq!(
        remote.array("small/a1999").unwrap().read::<f64>().unwrap(),
        local.array("small/a1999").unwrap().read::<f64>().unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn s3_urls_path_style_signed_and_unsigned() {
    let dir = tempdir("s3");
    std::fs::create_dir_all(dir.join("bucket/dir")).unwrap();
    std::fs::copy(testdata().join("example.asdf"), dir.join("bucket/dir/example.asdf")).unwrap();
    let server = RangeServer::start(&dir, ServerOptions::default());
    let local = OpenOptions::new().open(testdata().join("example.asdf")).unwrap();
    for credentials in
        [None, Some(S3Credentials::new("AKIDEXAMPLE".into(), "secret".into()).session_token(Some("t".into())))]
    {
        let s3 = S3Options::default()
            .endpoint(Some(server.base()))
            .region(Some("eu-west-1".into()))
            .credentials(credentials);
        let f = OpenOptions::new().remote(quick().s3(s3)).open_url("s3://bucket/dir/example.asdf").unwrap();
        assert_eq!(f.tree(), local.tree());
        assert_eq!(
            f.array("sci/data").unwrap().read::<f32>().unwrap(),
            local.array("sci/data").unwrap().read::<f32>().unwrap()
        );
    }
    let s3 = S3Options::default().endpoint(Some(server.base()));
    let missing = OpenOptions::new().remote(quick().s3(s3)).open_url("s3://bucket/nope.asdf");
    assert_io_kind(missing, std::io::ErrorKind::NotFound);
    let _ = std::fs::remove_dir_all(&dir);
}

fn assert_io_kind(r: rasdf::Result<AsdfFile>, kind: std::io::ErrorKind) -> String {
    match r {
        Err(e) => match e.kind() {
            rasdf::ErrorKind::Io(io) if io.kind() == kind => e.to_string(),
            other => panic!("expected an I/O error of kind {kind:?}, got {other:?}: {e}"),
        },
        Ok(_) => panic!("expected an error of kind {kind:?}"),
    }
}

#[test]
fn servers_that_fail_or_lie() {
    let root = testdata();
    let options = OpenOptions::new().remote(quick().timeout(Duration::from_millis(400)));
    let start = |fault| RangeServer::start(&root, ServerOptions { fault, ..Default::default() });

    let s = start(Fault::None);
    let msg = assert_io_kind(options.open_url(&s.url("nothing.asdf")), std::io::ErrorKind::NotFound);
    assert!(msg.contains("404") && msg.contains("nothing.asdf"), "{msg}");

    let s = start(Fault::WrongContentRange);
    let msg = assert_io_kind(options.open_url(&s.url("example.asdf")), std::io::ErrorKind::InvalidData);
    assert!(msg.contains("Content-Range") || msg.contains("asked for"), "{msg}");

    let s = start(Fault::IgnoreRange);
    let msg = assert_io_kind(options.open_url(&s.url("example.asdf")), std::io::ErrorKind::InvalidData);
    assert!(msg.contains("ignored the byte range"), "{msg}");

    let s = start(Fault::ShortBody);
    let msg = assert_io_kind(options.open_url(&s.url("example.asdf")), std::io::ErrorKind::ConnectionAborted);
    assert!(msg.contains("attempts"), "{msg}");

    let s = start(Fault::Status500);
    let msg = assert_io_kind(options.open_url(&s.url("example.asdf")), std::io::ErrorKind::Other);
    assert!(msg.contains("500") && msg.contains("4 attempts"), "{msg}");
    // Two requests at once (head and tail), each tried 1 + 3 times.
    assert_eq!(s.requests(), 8);

    // Failures that pass: retried.
    let s = start(Fault::FailFirst(3));
    let f = options.open_url(&s.url("example.asdf")).unwrap();
    let local = OpenOptions::new().open(root.join("example.asdf")).unwrap();
    assert_eq!(
        f.array("sci/data").unwrap().read::<f32>().unwrap(),
        local.array("sci/data").unwrap().read::<f32>().unwrap()
    );

    // A server that never answers: a timeout, in one timeout (0.4 s: a timeout is not
    // retried), the head and the tail asked for once each.
    let s = start(Fault::Hang);
    let t = Instant::now();
    let msg = assert_io_kind(options.open_url(&s.url("example.asdf")), std::io::ErrorKind::TimedOut);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(msg.contains("timed out") && !msg.contains("attempts"), "{msg}");
    assert_eq!(s.requests(), 2);

    // Nothing listens.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/x.asdf", l.local_addr().unwrap())
    };
    assert_io_kind(options.open_url(&dead), std::io::ErrorKind::ConnectionAborted);
    // Not a URL.
    assert_io_kind(options.open_url("ftp://x/y"), std::io::ErrorKind::InvalidInput);
}

/// `open_any` opens a URL as `open_url` does and a path as `open` does; a URL of another
/// scheme is refused as a URL, never looked for on disk, its credentials not shown.
#[test]
fn open_any_tells_urls_from_paths() {
    let root = testdata();
    let s = RangeServer::start(&root, ServerOptions::default());
    let options = OpenOptions::new().remote(quick());
    let url = s.url("example.asdf");
    let remote = options.open_any(&url).unwrap();
    let local = options.open_any(root.join("example.asdf")).unwrap();
    assert!(remote.is_remote() && !local.is_remote());
    assert_eq!(
        remote.array("sci/data").unwrap().read::<f32>().unwrap(),
        local.array("sci/data").unwrap().read::<f32>().unwrap()
    );
    let msg = assert_io_kind(options.open_any("ftp://user:secret@x/y"), std::io::ErrorKind::InvalidInput);
    assert!(msg.contains("ftp://user:***@x/y") && !msg.contains("secret"), "{msg}");
    assert_io_kind(options.open_any(root.join("nothing.asdf")), std::io::ErrorKind::NotFound);
}

#[test]
fn a_block_whose_fetch_fails_is_an_error_of_that_block_only() {
    let dir = tempdir("midway");
    write_file(&dir, "f.asdf", 4, 64, true);
    let server = RangeServer::start(&dir, ServerOptions::default());
    let file = OpenOptions::new().remote(quick()).open_url(&server.url("f.asdf")).unwrap();
    // The object goes away after the open: reading a block fails, naming the URL.
    std::fs::remove_file(dir.join("f.asdf")).unwrap();
    let e = file.block_data(0).unwrap_err();
    assert!(e.to_string().contains("404") && e.to_string().contains("f.asdf"), "{e}");
    assert_eq!(e.location().block, Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exploded_files_read_their_blocks_from_the_same_folder_only() {
    let dir = tempdir("exploded");
    std::fs::create_dir_all(dir.join("site")).unwrap();
    std::fs::write(dir.join("secret.asdf"), std::fs::read(testdata().join("example.asdf")).unwrap()).unwrap();
    let main = "#ASDF 1.0.0\n#ASDF_STANDARD 1.5.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n\
                x: !core/ndarray-1.0.0 {source: ../secret.asdf, datatype: float32, shape: [1], byteorder: little}\n...\n";
    std::fs::write(dir.join("site/main.asdf"), main).unwrap();
    let server = RangeServer::start(&dir, ServerOptions::default());
    let file = OpenOptions::new().remote(quick()).open_url(&server.url("site/main.asdf")).unwrap();
    server.reset_counters();
    let e = file.array_at(file.get("x").unwrap()).read_dyn().unwrap_err();
    assert!(e.to_string().contains("outside"), "{e}");
    assert_eq!(server.requests(), 0, "nothing outside the folder is asked for");
}

#[test]
fn rows_of_an_uncompressed_array_are_fetched_alone() {
    let dir = tempdir("rows");
    let path = write_file(&dir, "f.asdf", 3, 64, true);
    let server = RangeServer::start(&dir, ServerOptions::default());
    let file = OpenOptions::new().remote(quick()).open_url(&server.url("f.asdf")).unwrap();
    let local = OpenOptions::new().open(&path).unwrap();
    let node = file.get("small/a2").unwrap();
    server.reset_counters();
    let (bytes, shape) = file.array_at(node).rows(10..20).unwrap().unwrap();
    assert_eq!(shape, vec![10]);
    assert_eq!(server.requests(), 1);
    assert_eq!(server.bytes_sent(), 80);
    let all = local.array("small/a2").unwrap().read::<f64>().unwrap();
    let got: Vec<f64> = bytes.chunks(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
    assert_eq!(got, all.iter().skip(10).take(10).copied().collect::<Vec<_>>());
    assert!(file.array_at(node).rows(60..65).is_err(), "rows past the end");
    // A zlib block is decoded whole: not by rows.
    let mut doc = rasdf::write::Document::new();
    doc.set_array("z", ndarray::Array1::<f64>::zeros(100).view(), rasdf::block::Compression::Zlib).unwrap();
    doc.write_to_path(dir.join("z.asdf"), &rasdf::write::WriteOptions::default()).unwrap();
    let z = OpenOptions::new().remote(quick()).open_url(&server.url("z.asdf")).unwrap();
    assert!(z.array_at(z.get("z").unwrap()).rows(0..1).unwrap().is_none());
    // A local file: not by rows either.
    assert!(local.array_at(local.get("small/a2").unwrap()).rows(0..1).unwrap().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rows_of_an_lz4_array_come_from_the_records_that_hold_them() {
    let dir = tempdir("lz4rows");
    // 12 000 rows of 1 KiB: three records of 4 MiB (of noise, barely compressed).
    let path = write_file(&dir, "f.asdf", 1, 12_000, true);
    let server = RangeServer::start(&dir, ServerOptions::default());
    let file = OpenOptions::new().remote(quick()).open_url(&server.url("f.asdf")).unwrap();
    let local = OpenOptions::new().open(&path).unwrap();
    let all = local.array("big").unwrap().read::<f32>().unwrap();
    let node = file.get("big").unwrap();
    let block = file.blocks().last().unwrap().clone();
    for rows in [0..16, 5000..5016, 4090..4100, 11_990..12_000, 0..12_000, 7..7] {
        server.reset_counters();
        let (bytes, shape) = file.array_at(node).rows(rows.clone()).unwrap().unwrap();
        assert_eq!(shape, vec![rows.len(), 256]);
        let got: Vec<f32> = bytes.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        let expected: Vec<f32> = all.slice(ndarray::s![rows.clone(), ..]).iter().copied().collect();
        assert!(got == expected, "rows {rows:?}");
        if rows.len() == 16 {
            // One or two records (4 MiB each) and the headers' windows, not the 12 MiB block.
            assert!(server.bytes_sent() < 9 << 20, "rows {rows:?}: {} bytes", server.bytes_sent());
        }
    }
    // The headers are walked once: a second read asks only for its record.
    let file = OpenOptions::new().remote(quick()).open_url(&server.url("f.asdf")).unwrap();
    let node = file.get("big").unwrap();
    file.array_at(node).rows(11_000..11_001).unwrap().unwrap();
    server.reset_counters();
    file.array_at(node).rows(0..1).unwrap().unwrap();
    assert_eq!(server.requests(), 1);
    assert!(server.bytes_sent() < block.used_size / 2);
    // Rows from the records read last: no request.
    let (bytes, _) = file.array_at(node).rows(100..120).unwrap().unwrap();
    assert_eq!(server.requests(), 1);
    let got: Vec<f32> = bytes.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    assert!(got == all.slice(ndarray::s![100..120, ..]).iter().copied().collect::<Vec<f32>>());
    // The whole block (12 MB): in parts of 8 MiB side by side, joined in order.
    server.reset_counters();
    assert_eq!(file.array("big").unwrap().read::<f32>().unwrap(), all);
    assert_eq!(server.requests(), block.used_size.div_ceil(8 << 20));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lz4_rows_follow_the_records_headers_through_guessed_windows() {
    // Records of steady length (noise: the guesses hold the headers), and of lengths
    // that vary from record to record (zeros after a varying share of noise: guesses
    // miss), each with a false record header planted in its data where a guess looks.
    let dir = tempdir("lz4guess");
    let noise = |seed: usize, out: &mut [u8]| {
        let mut x = (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for b in out.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x.to_le_bytes()[0];
        }
    };
    let plant = |out: &mut [u8]| {
        let at = out.len() / 2;
        out[at..at + 8].copy_from_slice(&[0, 0, 0, 12, 0, 1, 0, 0]);
    };
    let steady = |k: usize, out: &mut [u8]| {
        noise(k, out);
        plant(out);
    };
    let varied = |k: usize, out: &mut [u8]| {
        let share = out.len() * (20 + (k * 37) % 80) / 100;
        noise(k, &mut out[..share]);
        plant(out);
    };
    type Fill<'a> = &'a dyn Fn(usize, &mut [u8]);
    let files: [(&str, usize, usize, Fill); 2] =
        [("steady.asdf", 24, 512 << 10, &steady), ("varied.asdf", 90, 96 << 10, &varied)];
    let server = RangeServer::start(&dir, ServerOptions::default());
    for (name, records, raw, fill) in files {
        let all = lz4_file::lz4_records_file(&dir.join(name), records, raw, fill);
        let n = all.len();
        let local = OpenOptions::new().open(dir.join(name)).unwrap();
        let bits: Vec<u32> = local.array("data").unwrap().read::<f32>().unwrap().iter().map(|x| x.to_bits()).collect();
        assert!(bits == all, "{name}: the local read");
        let per = raw / 4;
        for rows in [n - 16..n, 0..16, per * 5 - 3..per * 5 + 3, n / 2..n / 2 + 1000, per * 7..per * 9 + 1, n - 1..n] {
            // A fresh open each time: the walk starts from the block's start.
            let file = OpenOptions::new().remote(quick()).open_url(&server.url(name)).unwrap();
            let node = file.get("data").unwrap();
            server.reset_counters();
            let (bytes, shape) = file.array_at(node).rows(rows.clone()).unwrap().unwrap();
            assert_eq!(shape, vec![rows.len()]);
            let got: Vec<u32> = bytes.chunks(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect();
            assert!(got == all[rows.clone()], "{name}, rows {rows:?}");
            // Never more than the block's stored bytes up to the records read, and the
            // guesses' budget.
            assert!(server.bytes_sent() < (rows.end * 4 / raw + 2) as u64 * raw as u64 + (4 << 20), "{name} {rows:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lz4_blocks_decoded_as_their_parts_arrive_are_the_local_ones() {
    // Every fixture with an lz4 block (damaged ones too: the same errors), read in parts
    // so small that records and their headers are cut between parts.
    let root = testdata();
    let server = RangeServer::start(&root, ServerOptions::default());
    let lz4_files: Vec<PathBuf> = fixtures()
        .into_iter()
        .filter(|p| {
            AsdfFile::open(p).is_ok_and(|f| f.blocks().iter().any(|b| b.compression == rasdf::block::Compression::Lz4))
        })
        .collect();
    assert!(lz4_files.len() >= 5, "{lz4_files:?}");
    for part_bytes in [5, 1000, 100_000] {
        let options = OpenOptions::new().remote(quick().part_bytes(part_bytes));
        for path in &lz4_files {
            let rel = path.strip_prefix(&root).unwrap().to_str().unwrap().replace('\\', "/");
            let url = server.url(&rel);
            let (a, b) = (seen(&options.open(path), path.to_str().unwrap()), seen(&options.open_url(&url), &url));
            assert!(a == b, "{rel}, parts of {part_bytes}: local and remote differ:\n--- local\n{a}\n--- remote\n{b}");
        }
    }
    // A block of several 4 MiB records in parts of 1 MiB, fetched side by side.
    let dir = tempdir("lz4-stream");
    let path = write_file(&dir, "big.asdf", 2, 40_000, true);
    let server = RangeServer::start(&dir, ServerOptions::default());
    let local = AsdfFile::open(&path).unwrap();
    let n = local.blocks().len() - 1;
    assert!(local.blocks()[n].data_size > 3 * rasdf::block::codec::LZ4_CHUNK as u64);
    let remote = OpenOptions::new().remote(quick().part_bytes(1 << 20)).open_url(&server.url("big.asdf")).unwrap();
    let before = remote.remote().unwrap().requests();
    assert_eq!(remote.block_data(n).unwrap(), local.block_data(n).unwrap());
    let parts = remote.remote().unwrap().requests() - before;
    // One request a part, each once: decoded as they came (reading the whole block
    // after would have asked for every part again).
    let used = local.blocks()[n].used_size;
    assert!(parts >= 10 && parts == used.div_ceil(1 << 20), "{parts} requests for {used} bytes");
    // The object cut short after the open: parts fail, an error of that block, never a
    // wrong array.
    let remote = OpenOptions::new().remote(quick().part_bytes(1 << 20)).open_url(&server.url("big.asdf")).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let e = remote.block_data(n).unwrap_err();
    assert_eq!(e.location().block, Some(n), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A FITS HDU: a header of `cards` (keyword, value as written) and `data`, each padded
/// to whole records of 2880 bytes.
fn fits_hdu(cards: &[(&str, String)], data: &[u8]) -> Vec<u8> {
    let mut header: String = cards.iter().map(|(k, v)| format!("{k:<8}= {v:>20}{:50}", "")).collect();
    header += &format!("{:<80}", "END");
    let mut out = header.into_bytes();
    out.resize(out.len().next_multiple_of(2880), b' ');
    let mut data = data.to_vec();
    data.resize(data.len().next_multiple_of(2880), 0);
    out.extend_from_slice(&data);
    out
}

/// An ASDF-in-FITS file as stdatamodels lays it out: a primary HDU, an image HDU `SCI`
/// of 500 x 1000 big-endian float32 (2 MB), an image `PAD` of 1 MiB, and the `ASDF`
/// binary table holding an ASDF file whose `data` is `fits:SCI,1`. Returns the file and
/// the image's values.
fn asdf_in_fits_file() -> (Vec<u8>, Vec<f32>) {
    let s = |v: &str| v.to_string();
    let values: Vec<f32> = (0..500_000).map(|i| (i % 1009) as f32 * 0.5).collect();
    let sci: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    let asdf = "#ASDF 1.0.0\n#ASDF_STANDARD 1.5.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n\
                data: !core/ndarray-1.0.0 {source: 'fits:SCI,1', datatype: float32, byteorder: big, shape: [500, 1000]}\n...\n";
    let image = |name: &str, bitpix: &str, axes: &[usize]| {
        let mut cards = vec![("XTENSION", s("'IMAGE   '")), ("BITPIX", s(bitpix)), ("NAXIS", axes.len().to_string())];
        for (i, n) in axes.iter().enumerate() {
            cards.push((["NAXIS1", "NAXIS2"][i], n.to_string()));
        }
        cards.extend([("PCOUNT", s("0")), ("GCOUNT", s("1")), ("EXTNAME", format!("'{name:<8}'"))]);
        cards
    };
    let file = [
        fits_hdu(&[("SIMPLE", s("T")), ("BITPIX", s("8")), ("NAXIS", s("0")), ("EXTEND", s("T"))], &[]),
        fits_hdu(&image("SCI", "-32", &[1000, 500]), &sci),
        fits_hdu(&image("PAD", "8", &[1 << 20]), &vec![7u8; 1 << 20]),
        fits_hdu(
            &[
                ("XTENSION", s("'BINTABLE'")),
                ("BITPIX", s("8")),
                ("NAXIS", s("2")),
                ("NAXIS1", asdf.len().to_string()),
                ("NAXIS2", s("1")),
                ("PCOUNT", s("0")),
                ("GCOUNT", s("1")),
                ("TFIELDS", s("1")),
                ("TTYPE1", s("'ASDF_METADATA'")),
                ("TFORM1", format!("'{}B'", asdf.len())),
                ("EXTNAME", s("'ASDF    '")),
            ],
            asdf.as_bytes(),
        ),
    ]
    .concat();
    (file, values)
}

#[test]
fn asdf_in_fits_reads_over_http_as_locally() {
    // The fixtures (each within the first fetch), and a file of 3 MiB whose HDUs'
    // headers are walked, their data fetched only when an array needs it.
    let dir = tempdir("fits");
    let mut names = Vec::new();
    for e in std::fs::read_dir(testdata().join("fits")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        std::fs::copy(&p, dir.join(&name)).unwrap();
        names.push(name);
    }
    let (big, values) = asdf_in_fits_file();
    std::fs::write(dir.join("big.fits"), &big).unwrap();
    names.push("big.fits".into());
    names.sort();
    assert!(names.len() >= 4);
    let server = RangeServer::start(&dir, ServerOptions::default());
    for name in &names {
        let local = OpenOptions::new().open(dir.join(name)).unwrap();
        server.reset_counters();
        let remote = OpenOptions::new().remote(quick()).open_url(&server.url(name)).unwrap();
        let opened = server.bytes_sent();
        assert_eq!(format!("{:?}", remote.tree()), format!("{:?}", local.tree()), "{name}");
        assert_eq!(remote.fits_extension(), local.fits_extension(), "{name}");
        let arrays = rasdf_testkit::listing(&local).unwrap();
        assert!(!arrays.is_empty(), "{name}");
        for a in arrays {
            let (l, r) =
                (local.array(&a.path).unwrap().read_dyn().unwrap(), remote.array(&a.path).unwrap().read_dyn().unwrap());
            assert_eq!((&l.shape, &l.datatype, l.byteorder), (&r.shape, &r.datatype, r.byteorder), "{name} {}", a.path);
            assert!(l.data() == r.data() && l.offset == r.offset, "{name} {}: data", a.path);
        }
        if name == "big.fits" {
            // The open: the headers and the ASDF extension, not the 3 MiB of data. The
            // array: its HDU's 2 MB, once.
            assert!(opened < 200_000, "{opened} bytes to open");
            assert!(server.bytes_sent() < opened + 2_100_000, "{} bytes in all", server.bytes_sent());
            let before = server.requests();
            let got: Vec<f32> = remote.array("data").unwrap().read::<f32>().unwrap().iter().copied().collect();
            assert!(got == values);
            assert_eq!(server.requests(), before, "the HDU's data was fetched once");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn damaged_asdf_in_fits_over_http_fails_as_locally() {
    // Cut short in the middle HDU's data; a header without its END card; an ASDF
    // extension whose table claims more bytes than the file has: the errors a local open
    // gives, in bounded requests.
    let dir = tempdir("fits-bad");
    let (big, _) = asdf_in_fits_file();
    let cut = big[..2_500_000].to_vec();
    let mut no_end = big.clone();
    let sci = 2880 + no_end[2880..].windows(4).position(|w| w == b"END ").unwrap();
    no_end[sci..sci + 3].copy_from_slice(b"   ");
    let mut huge = big.clone();
    let table = huge.windows(10).rposition(|w| w == b"NAXIS2  = ").unwrap();
    huge[table + 10..table + 30].copy_from_slice(format!("{:>20}", 999_999).as_bytes());
    for (name, bytes) in [("cut.fits", cut), ("no_end.fits", no_end), ("huge.fits", huge)] {
        std::fs::write(dir.join(name), &bytes).unwrap();
    }
    let server = RangeServer::start(&dir, ServerOptions::default());
    for name in ["cut.fits", "no_end.fits", "huge.fits"] {
        let local = OpenOptions::new()
            .open(dir.join(name))
            .map(|f| f.array("data").and_then(|a| a.read::<f32>()).map(|a| a.len()));
        server.reset_counters();
        let remote = OpenOptions::new()
            .remote(quick())
            .open_url(&server.url(name))
            .map(|f| f.array("data").and_then(|a| a.read::<f32>()).map(|a| a.len()));
        // The same verdict: the same length read, or errors of the same kind.
        let verdict = |r: &rasdf::Result<rasdf::Result<usize>>| match r {
            Ok(Ok(n)) => format!("{n} values"),
            Ok(Err(e)) | Err(e) => format!("{:?}", std::mem::discriminant(e.kind())),
        };
        assert_eq!(verdict(&local), verdict(&remote), "{name}: local {local:?}, remote {remote:?}");
        if name != "no_end.fits" {
            assert!(local.is_err() || local.as_ref().is_ok_and(|r| r.is_err()), "{name}: {local:?}");
        }
        assert!(server.requests() < 40, "{name}: {} requests", server.requests());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fits_url_of_many_small_hdus_opens_in_few_requests() {
    // 3000 HDUs of a header alone before the ASDF extension (8.6 MB): read in windows
    // that grow, not a request per HDU.
    let dir = tempdir("fits-many");
    let (big, _) = asdf_in_fits_file();
    let s = |v: &str| v.to_string();
    let empty = fits_hdu(
        &[("XTENSION", s("'IMAGE   '")), ("BITPIX", s("8")), ("NAXIS", s("0")), ("PCOUNT", s("0")), ("GCOUNT", s("1"))],
        &[],
    );
    let second = usize::try_from(rasdf::fits::Fits::parse(&big).unwrap().hdus()[1].header_at).unwrap();
    let many = [&big[..second], &empty.repeat(3000), &big[second..]].concat();
    std::fs::write(dir.join("many.fits"), &many).unwrap();
    let server = RangeServer::start(&dir, ServerOptions::default());
    let local = OpenOptions::new().open(dir.join("many.fits")).unwrap();
    let remote = OpenOptions::new().remote(quick()).open_url(&server.url("many.fits")).unwrap();
    assert_eq!(remote.fits().unwrap().hdus().len(), local.fits().unwrap().hdus().len());
    assert!(server.requests() < 30, "{} requests", server.requests());
    assert_eq!(
        remote.array("data").unwrap().read::<f32>().unwrap(),
        local.array("data").unwrap().read::<f32>().unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether `text` shows none of the secrets of the redaction tests.
fn no_secret(text: &str) -> bool {
    !["secret", "sig123", "cred456", "tok789", "AKIDSECRETKEYID", "s3secretkey"].iter().any(|s| text.contains(s))
}

#[test]
fn passwords_and_signatures_are_never_shown() {
    let dir = tempdir("redact");
    std::fs::copy(testdata().join("example.asdf"), dir.join("example.asdf")).unwrap();
    std::fs::write(dir.join("bad_tree.asdf"), "#ASDF 1.0.0\n%YAML 1.1\n--- !core/asdf-1.1.0\na: [1, 2\n...\n").unwrap();
    let server = RangeServer::start(&dir, ServerOptions::default());
    let other = RangeServer::start(&dir, ServerOptions::default());
    let port = server.base().rsplit(':').next().unwrap().to_string();
    let with_secret = |name: &str| format!("http://user:secret@127.0.0.1:{port}/{name}");
    let options = OpenOptions::new().remote(quick());
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://user:secret@{}/x.asdf", l.local_addr().unwrap())
    };
    let other_port = other.base().rsplit(':').next().unwrap().to_string();
    let failing = [
        with_secret("missing.asdf"),
        with_secret("bad_tree.asdf"),
        dead,
        format!("{}?X-Amz-Signature=sig123&X-Amz-Credential=cred456&token=tok789", with_secret("missing.asdf")),
        with_secret(&format!("__redirect/302/port/{other_port}/example.asdf")),
        "ftp://user:secret@host/x.asdf".to_string(),
    ];
    for url in &failing {
        let e = options.open_url(url).unwrap_err();
        let (shown, debug) = (e.to_string(), format!("{e:?}"));
        assert!(no_secret(&shown) && no_secret(&debug), "{url}:\n{shown}\n{debug}");
        assert!(shown.contains("***"), "{url}: {shown}");
        let file = e.location().file.as_ref().unwrap().to_str().unwrap().to_string();
        assert!(no_secret(&file), "{file}");
    }
    // An open that works: the URL as shown, and a block's error after the object went.
    let f = options.open_url(&with_secret("example.asdf")).unwrap();
    let shown = format!("{:?} {:?} {:?}", f.url(), f.path(), f.remote());
    assert!(no_secret(&shown), "{shown}");
    assert_eq!(f.url(), Some(format!("http://user:***@127.0.0.1:{port}/example.asdf").as_str()));
    let log = server.log();
    assert!(log.iter().any(|s| s.header("authorization").is_some()), "the credentials are sent");
    std::fs::remove_file(dir.join("example.asdf")).unwrap();
    let e = f.block_data(0).unwrap_err();
    assert!(no_secret(&e.to_string()) && no_secret(&format!("{e:?}")), "{e}");
    // S3: neither the credentials nor the signature of the request.
    std::fs::create_dir_all(dir.join("bucket")).unwrap();
    let s3 = S3Options::default()
        .endpoint(Some(format!("http://user:secret@127.0.0.1:{port}")))
        .region(None)
        .credentials(Some(
            S3Credentials::new("AKIDSECRETKEYID".into(), "s3secretkey".into()).session_token(Some("tok789".into())),
        ));
    let remote = quick().s3(s3);
    assert!(no_secret(&format!("{remote:?}")), "{remote:?}");
    let e = OpenOptions::new().remote(remote).open_url("s3://bucket/missing.asdf").unwrap_err();
    assert!(no_secret(&e.to_string()) && no_secret(&format!("{e:?}")), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn redirects_are_followed_within_the_origin_only() {
    let root = testdata();
    let server = RangeServer::start(&root, ServerOptions::default());
    let other = RangeServer::start(&root, ServerOptions::default());
    let options = OpenOptions::new().remote(quick());
    let local = OpenOptions::new().open(root.join("example.asdf")).unwrap();
    for code in [301, 302, 303, 307, 308] {
        for how in ["same", "abs"] {
            // Every request (the open's, then the block's) is redirected and followed.
            let url = server.url(&format!("__redirect/{code}/{how}/example.asdf"));
            let f = options.open_url(&url).unwrap();
            assert_eq!(
                f.array("sci/data").unwrap().read::<f32>().unwrap(),
                local.array("sci/data").unwrap().read::<f32>().unwrap(),
                "{code} {how}"
            );
            assert_eq!(f.url(), Some(url.as_str()));
        }
    }
    // Another port is another origin: refused, naming both, and never asked.
    let port = other.base().rsplit(':').next().unwrap().to_string();
    for code in [301, 302, 307, 308] {
        let url = server.url(&format!("__redirect/{code}/port/{port}/example.asdf"));
        let msg = assert_io_kind(options.open_url(&url), std::io::ErrorKind::InvalidData);
        assert!(msg.contains(&server.base()) && msg.contains(&other.base()), "{msg}");
        assert!(msg.contains("another origin"), "{msg}");
    }
    assert_eq!(other.requests(), 0);
    // A loop: bounded.
    server.reset_counters();
    let msg = assert_io_kind(options.open_url(&server.url("__redirect/302/self")), std::io::ErrorKind::InvalidData);
    assert!(msg.contains("more than 10 redirects"), "{msg}");
    assert!(server.requests() <= 2 * 11, "{} requests", server.requests());
}

#[test]
fn an_exploded_files_blocks_are_not_redirected_out_of_its_folder() {
    let dir = tempdir("redirect-exploded");
    let arrays = testdata().join("pyasdf/arrays");
    std::fs::create_dir_all(dir.join("site")).unwrap();
    let main = std::fs::read_to_string(arrays.join("exploded.asdf")).unwrap();
    for block in ["exploded0000.asdf", "exploded0001.asdf"] {
        std::fs::copy(arrays.join(block), dir.join("site").join(block)).unwrap();
        std::fs::copy(arrays.join(block), dir.join(block)).unwrap();
    }
    // Redirected inside the folder: followed; out of it (to a file of the same origin):
    // refused.
    let inside = main.replace("source: exploded0000.asdf", "source: __redirect/302/same/site/exploded0000.asdf");
    let outside = main.replace("source: exploded0000.asdf", "source: __redirect/302/same/exploded0000.asdf");
    std::fs::write(dir.join("site/inside.asdf"), inside).unwrap();
    std::fs::write(dir.join("site/outside.asdf"), outside).unwrap();
    let server = RangeServer::start(&dir, ServerOptions::default());
    let options = OpenOptions::new().remote(quick());
    let local = OpenOptions::new().open(arrays.join("exploded.asdf")).unwrap();
    let f = options.open_url(&server.url("site/inside.asdf")).unwrap();
    assert_eq!(f.array("a").unwrap().read::<i32>().unwrap(), local.array("a").unwrap().read::<i32>().unwrap());
    let f = options.open_url(&server.url("site/outside.asdf")).unwrap();
    server.reset_counters();
    let e = f.array("a").and_then(|a| a.read::<i32>()).unwrap_err();
    assert!(e.to_string().contains("out of the folder"), "{e}");
    assert!(server.log().iter().all(|s| s.target != "/exploded0000.asdf"), "{:?}", server.log());
    // The main file itself may be redirected anywhere on its origin: its blocks are
    // then named relative to where it was found (RFC 3986's base URI), and held to that
    // folder.
    for (main, ok) in
        [("elsewhere/__redirect/307/same/site/inside.asdf", true), ("x/__redirect/301/same/site/outside.asdf", false)]
    {
        let f = options.open_url(&server.url(main)).unwrap();
        assert_eq!(
            f.array("b/c").unwrap().read::<f64>().unwrap(),
            local.array("b/c").unwrap().read::<f64>().unwrap(),
            "{main}"
        );
        assert_eq!(f.array("a").and_then(|a| a.read::<i32>()).is_ok(), ok, "{main}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two versions of one file: the same layout (the tree's text and the blocks at the same
/// offsets), other values. Returns their paths.
fn two_versions(dir: &Path, name: &str, tree_padding: usize) -> (PathBuf, PathBuf) {
    use rasdf::write::{Document, WriteOptions};
    let mut paths = Vec::new();
    for (version, base) in [("A", 0.0), ("B", 1000.0)] {
        let mut doc = Document::new();
        doc.set("version", version).unwrap();
        doc.set("padding", "x".repeat(tree_padding).as_str()).unwrap();
        for k in 0..3 {
            let a = ndarray::Array1::from_iter((0..1000).map(|i| base + f64::from(k * 1000 + i)));
            doc.set_array(&format!("a{k}"), a.view(), rasdf::block::Compression::None).unwrap();
        }
        let path = dir.join(format!("{name}.{version}"));
        doc.write_to_path(&path, &WriteOptions::default()).unwrap();
        paths.push(path);
    }
    let (a, b) = (paths[0].clone(), paths[1].clone());
    assert_eq!(std::fs::metadata(&a).unwrap().len(), std::fs::metadata(&b).unwrap().len());
    (a, b)
}

fn changed(e: &rasdf::Error) -> bool {
    rasdf::remote::remote_error_of(e).is_some_and(rasdf::remote::RemoteError::is_changed)
        && e.to_string().contains("the remote file changed while it was read")
}

#[test]
fn a_file_that_changes_is_never_read_as_two_versions() {
    let dir = tempdir("changes");
    let (a, b) = two_versions(&dir, "f", 0);
    let values = |p: &Path| OpenOptions::new().open(p).unwrap().array("a1").unwrap().read::<f64>().unwrap().to_owned();
    assert_ne!(values(&a), values(&b));
    let options = OpenOptions::new().remote(quick());
    for validators in [Validators::Strong, Validators::Weak, Validators::LastModified] {
        for ignore_preconditions in [false, true] {
            let what = format!("{validators:?}, preconditions ignored: {ignore_preconditions}");
            std::fs::copy(&a, dir.join("f.asdf")).unwrap();
            let server =
                RangeServer::start(&dir, ServerOptions { validators, ignore_preconditions, ..Default::default() });
            let f = options.open_url(&server.url("f.asdf")).unwrap();
            assert_eq!(f.get("version").unwrap().as_str(), Some("A"));
            let first = f.array("a0").unwrap().read::<f64>().unwrap();
            // Version B in its place (a new file: another ETag; a later date).
            let next = dir.join("f.next");
            std::fs::copy(&b, &next).unwrap();
            let later = std::time::SystemTime::now() + Duration::from_secs(10);
            std::fs::File::options().write(true).open(&next).unwrap().set_modified(later).unwrap();
            std::fs::rename(&next, dir.join("f.asdf")).unwrap();
            let e = f.array("a1").and_then(|a| a.read::<f64>()).unwrap_err();
            assert!(changed(&e), "{what}: {e}");
            assert_eq!(e.location().block, Some(1), "{what}: {e}");
            // Once changed, the file reads no more, what was fetched before included,
            // and asks nothing more of the server.
            let log = server.log();
            server.reset_counters();
            assert!(f.array("a0").and_then(|a| a.read::<f64>()).is_err_and(|e| changed(&e)), "{what}");
            assert!(f.array("a2").and_then(|a| a.read::<f64>()).is_err_and(|e| changed(&e)), "{what}");
            assert!(f.check_unchanged().is_err_and(|e| changed(&e)), "{what}");
            assert_eq!(server.requests(), 0, "{what}");
            drop(first);
            // The open's two requests (sent side by side) unconditional; every later one
            // on condition that the file is the one first seen. A retry of the open's
            // second request, sent once the first answered (a connection lost on a
            // loaded machine), rightly carries the condition too.
            let unconditional = |s: &&Seen| s.header("if-match").is_none() && s.header("if-unmodified-since").is_none();
            let opening = log.iter().take_while(unconditional).count();
            assert!((1..=2).contains(&opening), "{what}: {log:?}");
            assert!(!log[opening..].iter().any(|s| unconditional(&s)), "{what}: {log:?}");
            for seen in &log[opening..] {
                let (m, u) = (seen.header("if-match"), seen.header("if-unmodified-since"));
                match validators {
                    Validators::Strong => assert!(m.is_some_and(|m| m.starts_with('"')), "{what}: {seen:?}"),
                    _ => assert!(m.is_none() && u.is_some_and(|u| u.ends_with("GMT")), "{what}: {seen:?}"),
                }
                // The same condition each time: the first answer's.
                let first = &log[opening];
                assert_eq!((m, u), (first.header("if-match"), first.header("if-unmodified-since")), "{what}");
            }
            let last = log.last().unwrap();
            assert_eq!(last.status, if ignore_preconditions { 206 } else { 412 }, "{what}: {last:?}");
            assert!(log.len() >= 4, "{what}: {log:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_change_seen_while_opening_fails_the_open() {
    // The second of the open's requests, and (a large tree without an index) a later
    // one of the open, answered from version B: the open fails. The same over S3.
    let dir = tempdir("changes-open");
    std::fs::create_dir_all(dir.join("bucket")).unwrap();
    let (a, b) = two_versions(&dir, "f", 0);
    let (big_a, big_b) = two_versions(&dir, "big", 300_000);
    std::fs::copy(&a, dir.join("f.asdf")).unwrap();
    std::fs::copy(&a, dir.join("bucket/f.asdf")).unwrap();
    std::fs::copy(&big_a, dir.join("big.asdf")).unwrap();
    let options = OpenOptions::new().remote(quick());
    for (name, replacement, after) in [("f.asdf", &b, 1), ("big.asdf", &big_b, 2), ("bucket/f.asdf", &b, 1)] {
        let swap = Swap { name: name.into(), replacement: replacement.clone(), after };
        let server = RangeServer::start(&dir, ServerOptions { swap: Some(swap), ..Default::default() });
        let opened = match name {
            "bucket/f.asdf" => {
                let s3 = S3Options::default().endpoint(Some(server.base()));
                OpenOptions::new().remote(quick().s3(s3)).open_url("s3://bucket/f.asdf")
            }
            _ => options.open_url(&server.url(name)),
        };
        let e = opened.unwrap_err();
        assert!(changed(&e), "{name}: {e}");
        // Not retried.
        assert!(server.requests() <= after + 2, "{name}: {} requests", server.requests());
    }
    // Without the swap, the large file takes more than two requests to open (the swap
    // above fell inside the open).
    let server = RangeServer::start(&dir, ServerOptions::default());
    options.open_url(&server.url("big.asdf")).unwrap();
    assert!(server.requests() > 2, "{}", server.requests());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_stalled_server_fails_within_the_timeout() {
    let dir = tempdir("stall");
    let path = write_file(&dir, "f.asdf", 2, 4096, true);
    let len = std::fs::metadata(&path).unwrap().len();
    let timeout = Duration::from_secs(1);
    // Small parts: a block is many requests, which must not each wait a timeout.
    let remote = RemoteOptions::default().part_bytes(64 * 1024).parallel(4).timeout(timeout);
    assert_eq!(remote.timeout, timeout);
    let options = OpenOptions::new().remote(remote);
    // Silent from the first request: the open fails in one timeout.
    let server = RangeServer::start(&dir, ServerOptions { fault: Fault::Hang, ..Default::default() });
    let t = Instant::now();
    let e = options.open_url(&server.url("f.asdf")).unwrap_err();
    let took = t.elapsed();
    assert!(took >= timeout && took < timeout * 3, "{took:?}");
    assert!(rasdf::remote::remote_error_of(&e).is_some_and(rasdf::remote::RemoteError::is_timeout), "{e}");
    assert_io_kind(Err(e), std::io::ErrorKind::TimedOut);
    assert_eq!(server.requests(), 2, "a timeout is not retried");
    drop(server);
    // Silent after the open: a block of many parts fails in one timeout too.
    let server = RangeServer::start(&dir, ServerOptions { fault: Fault::HangAfter(4), ..Default::default() });
    let f = options.open_url(&server.url("f.asdf")).unwrap();
    assert!(server.requests() <= 4);
    let big = f.blocks().last().unwrap().used_size;
    assert!(big > 16 * 64 * 1024 && big < len, "{big}");
    let t = Instant::now();
    let e = f.array("big").and_then(|a| a.read::<f32>()).unwrap_err();
    let took = t.elapsed();
    assert!(took >= timeout && took < timeout * 3, "{took:?}: {e}");
    assert!(e.to_string().contains("timed out"), "{e}");
    drop(server);
    // The same, the block fetched whole (its checksum verified) rather than decoded as
    // its parts arrive.
    let server = RangeServer::start(&dir, ServerOptions { fault: Fault::HangAfter(4), ..Default::default() });
    let f = options.clone().verify_checksums(true).open_url(&server.url("f.asdf")).unwrap();
    let t = Instant::now();
    let e = f.array("big").and_then(|a| a.read::<f32>()).unwrap_err();
    let took = t.elapsed();
    assert!(took >= timeout && took < timeout * 3, "{took:?}: {e}");
    assert!(e.to_string().contains("timed out"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
