#![allow(clippy::cast_possible_truncation)] // random bytes and indices from a u64 generator
//! The fuzz targets (src/fuzzing.rs) on mutated fixtures, in process: cargo-fuzz needs a
//! nightly toolchain, this runs with `cargo test`. Each fixture's bytes (the tree text
//! alone for the `tree` target) are mutated at random, with a fixed seed, and fed to the
//! targets; a panic is a find, reported with the seed and case that make it again.
//!
//! More cases: `RASDF_MUTATIONS=100000 RASDF_MUTATION_SEED=7 cargo test --release --test
//! mutations -- --nocapture`.

use rasdf_testkit as common;

use std::path::PathBuf;

/// xorshift64*: a small, fixed generator, so a seed names the same cases everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Pieces of YAML and of the file layout worth inserting: indicators, markers, numbers
/// on the edge of their types, block magic and codec names.
const TOKENS: &[&[u8]] = &[
    b":",
    b": ",
    b"- ",
    b"? ",
    b",",
    b"[",
    b"]",
    b"{",
    b"}",
    b"#",
    b" #",
    b"&a ",
    b"*a",
    b"!",
    b"!!str ",
    b"!core/",
    b"'",
    b"\"",
    b"\\",
    b"|",
    b">",
    b"|-",
    b">+",
    b"\n",
    b"\r\n",
    b"\t",
    b"  ",
    b"\n  ",
    b"\n- ",
    b"---",
    b"...",
    b"--- ",
    b"\n...\n",
    b"%YAML 1.1\n",
    b"%TAG ! tag:x:\n",
    b"<<",
    b"<<: ",
    b"~",
    b"null",
    b"yes",
    b"0x1f",
    b"0o17",
    b"017",
    b"1e5",
    b"1.5e+3",
    b"-.inf",
    b".nan",
    b"1:30",
    b"2001-12-14",
    b"2001-12-14t21:59:43.10-05:00",
    b"99999999999999999999",
    b"-9223372036854775809",
    b"\xd3BLK",
    b"zlib",
    b"bzp2",
    b"lz4\0",
    b"#ASDF BLOCK INDEX\n",
    b"\0",
    b"\xff",
    b"\xc3\xa9",
    b"\xe2\x80\xa8",
    b"source: ",
    b"shape: [",
    b"'*'",
    b"strides: [-",
    b"offset: ",
    b"datatype: ",
    b"byteorder: big",
    b"mask: ",
    b"data: [",
    b"!<tag:x.org,2024:a>",
    b"!!omap ",
    b"!!set ",
    b"!!binary ",
    b"? ",
    b"- - ",
    b"{? a: b}",
    b"|2\n",
    b">-\n  ",
    b"\\x41",
    b"\\u00e9",
    b"''",
    b"%TAG !e! tag:e.org:\n",
    b"!e!x ",
    b"\n# c\n",
    b"\n\n",
    b"   \n",
];

fn mutate(rng: &mut Rng, data: &mut Vec<u8>, others: &[Vec<u8>]) {
    for _ in 0..1 + rng.below(4) {
        let n = data.len();
        match rng.below(8) {
            0 if n > 0 => {
                let i = rng.below(n);
                data[i] ^= 1 << rng.below(8);
            }
            1 if n > 0 => {
                let i = rng.below(n);
                data[i] = rng.next() as u8;
            }
            2 | 3 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                let i = rng.below(n + 1);
                data.splice(i..i, t.iter().copied());
            }
            4 if n > 0 => {
                let i = rng.below(n);
                let len = 1 + rng.below((n - i).min(64));
                data.drain(i..i + len);
            }
            5 if n > 0 => {
                // A run copied elsewhere (repeated structure).
                let i = rng.below(n);
                let len = 1 + rng.below((n - i).min(256));
                let piece = data[i..i + len].to_vec();
                let at = rng.below(n + 1);
                data.splice(at..at, piece);
            }
            6 if !others.is_empty() => {
                // Splice: this input's head, another's tail.
                let o = &others[rng.below(others.len())];
                let cut = rng.below(n + 1);
                let from = rng.below(o.len() + 1);
                data.truncate(cut);
                data.extend_from_slice(&o[from..]);
            }
            _ if n > 0 => {
                // A number rewritten, which moves sizes and offsets.
                let i = rng.below(n);
                if let Some(d) = data[i..].iter().position(u8::is_ascii_digit) {
                    data[i + d] = b'0' + rng.below(10) as u8;
                }
            }
            _ => data.push(rng.next() as u8),
        }
    }
}

fn corpus() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for sub in ["pyasdf", "pyasdf/arrays", "yaml", "scalars", "bad", "astro", "oldasdf", "strings"] {
        let mut paths: Vec<PathBuf> =
            std::fs::read_dir(common::testdata(sub)).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        for p in paths {
            if p.extension().is_some_and(|x| x == "asdf") {
                let data = std::fs::read(&p).unwrap();
                // Small files only: every case runs every target.
                if data.len() <= 64 << 10 {
                    out.push(data);
                }
            }
        }
    }
    out.push(std::fs::read(common::testdata("example.asdf")).unwrap());
    out
}

/// Blocks for the `block_header` target: the files' blocks (from the first magic), and
/// blocks of several records or bzip2 blocks each, which take the parallel decoders.
fn blocks(files: &[Vec<u8>]) -> Vec<Vec<u8>> {
    use rasdf::block::{BlockHeader, Compression, codec, md5};
    let mut out: Vec<Vec<u8>> =
        files.iter().filter_map(|f| rasdf::block::find_first_block(f, 0).map(|at| f[at as usize..].to_vec())).collect();
    // Compressible but not trivially: bzip2 level 1 makes blocks of a few kB.
    let mut x = 5u64;
    let data: Vec<u8> = (0..300_000u64)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (i / 700 % 50) as u8 + (x % 4) as u8
        })
        .collect();
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(1));
    std::io::Write::write_all(&mut bz, &data).unwrap();
    let mut lz4 = Vec::new();
    for chunk in data.chunks(40_000) {
        lz4.extend_from_slice(&codec::encode(Compression::Lz4, chunk).unwrap());
    }
    for (compression, stored) in [(Compression::Bzp2, bz.finish().unwrap()), (Compression::Lz4, lz4)] {
        let h = BlockHeader {
            offset: 0,
            header_size: 48,
            flags: 0,
            compression,
            allocated_size: stored.len() as u64,
            used_size: stored.len() as u64,
            data_size: data.len() as u64,
            checksum: md5(&stored),
        };
        out.push([&h.to_bytes()[..], &stored].concat());
    }
    out
}

/// The tree text of a file (from `%YAML` or `---` to the end of the tree), when it has one.
fn tree_text(data: &[u8]) -> Option<Vec<u8>> {
    let h = rasdf::header::parse(data).ok()?;
    let r = h.tree?;
    data.get(r.start as usize..r.end as usize).map(<[u8]>::to_vec)
}

#[test]
fn fuzz_targets_survive_mutated_fixtures() {
    let seed: u64 = std::env::var("RASDF_MUTATION_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(20_261_123);
    let cases: usize = std::env::var("RASDF_MUTATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(600);
    let files = corpus();
    let trees: Vec<Vec<u8>> = files.iter().filter_map(|f| tree_text(f)).collect();
    let blocks = blocks(&files);
    assert!(files.len() > 40 && trees.len() > 40, "{} files, {} trees", files.len(), trees.len());
    rasdf::fuzzing::install_panic_filter();
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    for case in 0..cases {
        let (target, pool) = match case % 4 {
            0 | 1 => ("tree", &trees),
            2 => ("open_all", &files),
            _ if case / 4 % 5 == 4 => ("block_header", &blocks),
            _ => (["header", "block_walk", "index", "roundtrip"][case / 4 % 5], &files),
        };
        let mut data = pool[rng.below(pool.len())].clone();
        mutate(&mut rng, &mut data, pool);
        let run = std::panic::catch_unwind(|| rasdf::fuzzing::run(target, &data));
        if run.is_err() {
            let saved = common::temp_dir("mutations").join(format!("{target}-{seed}-{case}"));
            std::fs::write(&saved, &data).unwrap();
            panic!("target {target} panicked on case {case} of seed {seed}; the input is in {}", saved.display());
        }
    }
}
