#![allow(missing_docs)] // criterion macros
//! Criterion benchmarks per layer: tree parse, block decode per codec, MD5, array
//! decode, write. Inputs are generated here, deterministically.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rasdf::block::{Compression, codec};
use rasdf::write::{Document, WriteOptions};
use rasdf::{Limits, OpenOptions};

fn tree_text(groups: usize) -> String {
    let mut s = String::from("%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n");
    for g in 0..groups {
        s += &format!("group{g}:\n  flags: [true, false, true]\n  meta:\n");
        for k in 0..50 {
            if k % 3 == 0 {
                s += &format!("    key{k}: value {k} of group {g}\n");
            } else {
                s += &format!("    key{k}: {}\n", k as f64 * 1.5);
            }
        }
    }
    s + "...\n"
}

fn data(n: usize) -> Vec<u8> {
    (0..n / 8).flat_map(|i| ((i as f64).sin() * 1000.0).round().to_le_bytes()).collect()
}

fn bench_tree(c: &mut Criterion) {
    let text = tree_text(2000);
    let mut g = c.benchmark_group("tree");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("parse", |b| b.iter(|| rasdf::tree::Tree::parse(&text, &Limits::default()).unwrap()));
    let tree = rasdf::tree::Tree::parse(&text, &Limits::default()).unwrap();
    g.bench_function("emit", |b| b.iter(|| rasdf::tree::emit::Emitter::new(&tree).document()));
    g.finish();
}

fn bench_codecs(c: &mut Criterion) {
    let raw = data(16 << 20);
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Bytes(raw.len() as u64));
    g.sample_size(10);
    for comp in [Compression::Zlib, Compression::Bzp2, Compression::Lz4] {
        let enc = codec::encode(comp, &raw).unwrap();
        g.bench_function(format!("decode_{comp}"), |b| b.iter(|| codec::decode(comp, &enc, raw.len() as u64).unwrap()));
        g.bench_function(format!("encode_{comp}"), |b| b.iter(|| codec::encode(comp, &raw).unwrap()));
    }
    g.bench_function("md5", |b| b.iter(|| rasdf::block::md5(&raw)));
    g.finish();
}

fn bench_arrays(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("rasdf-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("arrays.asdf");
    let a = ndarray::Array2::from_shape_fn((2048, 2048), |(i, j)| (i * 2048 + j) as f32);
    let mut doc = Document::new();
    doc.set_array("plain", a.view(), Compression::None).unwrap();
    doc.set_array("zlib", a.view(), Compression::Zlib).unwrap();
    doc.write_to_path(&path, &WriteOptions::default()).unwrap();
    let mut g = c.benchmark_group("array");
    g.throughput(Throughput::Bytes((a.len() * 4) as u64));
    g.sample_size(10);
    g.bench_function("open_and_sum_plain", |b| {
        b.iter(|| {
            let f = OpenOptions::new().open(&path).unwrap();
            f.array("plain").unwrap().read::<f32>().unwrap().sum()
        })
    });
    g.bench_function("open_and_sum_zlib", |b| {
        b.iter(|| {
            let f = OpenOptions::new().open(&path).unwrap();
            f.array("zlib").unwrap().read::<f32>().unwrap().sum()
        })
    });
    g.bench_function("write_plain", |b| {
        b.iter(|| {
            let mut d = Document::new();
            d.set_array("x", a.view(), Compression::None).unwrap();
            d.write_to_path(dir.join("w.asdf"), &WriteOptions::default()).unwrap();
        })
    });
    g.finish();
    std::fs::remove_dir_all(&dir).unwrap();
}

criterion_group!(benches, bench_tree, bench_codecs, bench_arrays);
criterion_main!(benches);
