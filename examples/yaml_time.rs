//! Times the YAML event parser alone on a file's tree.
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: yaml_time FILE");
    let f = rasdf::AsdfFile::open(&path).unwrap();
    let text = std::str::from_utf8(f.tree_bytes().unwrap()).unwrap();
    let t = Instant::now();
    let mut parser = libyaml_safer::Parser::new();
    let mut input = text.as_bytes();
    parser.set_input_string(&mut input);
    let mut n = 0usize;
    for ev in parser {
        ev.unwrap();
        n += 1;
    }
    let e = t.elapsed();
    println!("{n} events in {e:?}: {:.1} MB/s", text.len() as f64 / e.as_secs_f64() / 1e6);
    let t = Instant::now();
    let tree = rasdf::tree::Tree::parse(text, &rasdf::Limits::default()).unwrap();
    let e = t.elapsed();
    println!("{} nodes in {e:?}: {:.1} MB/s", tree.len(), text.len() as f64 / e.as_secs_f64() / 1e6);
}
