//! Times the YAML layer on a file's tree: libyaml's events, the tree through libyaml,
//! and the tree through the fast scanner (`yaml_time FILE [REPEATS]`; repeats time the
//! fast scanner's tree again, warm). With the allocator of the rasdf tools, so that the
//! figures are theirs.
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let path = std::env::args().nth(1).expect("usage: yaml_time FILE [REPEATS]");
    let reps: usize = std::env::args().nth(2).map_or(1, |s| s.parse().expect("REPEATS is a number"));
    let f = rasdf::AsdfFile::open(&path).unwrap();
    let text = std::str::from_utf8(f.tree_bytes().unwrap()).unwrap();
    let mb = text.len() as f64 / 1e6;
    let t = Instant::now();
    let mut parser = libyaml_safer::Parser::new();
    let mut input = text.as_bytes();
    parser.set_input_string(&mut input);
    let mut n = 0usize;
    for ev in parser {
        ev.unwrap();
        n += 1;
    }
    println!("libyaml events: {n} in {:?}: {:.1} MB/s", t.elapsed(), mb / t.elapsed().as_secs_f64());
    let limits = rasdf::Limits::default();
    let t = Instant::now();
    let tree = rasdf::tree::Tree::parse_libyaml(text, &limits).unwrap();
    println!("tree via libyaml: {} nodes in {:?}: {:.1} MB/s", tree.len(), t.elapsed(), mb / t.elapsed().as_secs_f64());
    for _ in 0..reps {
        let t = Instant::now();
        match rasdf::tree::Tree::parse_fast(text, &limits) {
            Some(Ok(tree)) => {
                println!(
                    "tree via fast scanner: {} nodes in {:?}: {:.1} MB/s",
                    tree.len(),
                    t.elapsed(),
                    mb / t.elapsed().as_secs_f64()
                )
            }
            other => println!("fast scanner: {}", if other.is_none() { "gave up" } else { "error" }),
        }
    }
}
