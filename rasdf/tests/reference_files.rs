#![allow(clippy::cast_possible_truncation)] // test code on 64-bit hosts
//! The standard's reference files: each `.asdf` read by rasdf, with every ndarray turned
//! into its values, equals its `.yaml` (ndarrays inline, aliases expanded), as the
//! reference_files README asks.

use rasdf_testkit as common;

use std::collections::HashSet;

use rasdf::AsdfFile;
use rasdf::ndarray::Element;
use rasdf::tree::{NodeRef, Value};

fn elements_eq(a: &Element, b: &Element) -> bool {
    match (a, b) {
        (Element::Float(x), Element::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Element::Complex(a1, a2), Element::Complex(b1, b2)) => {
            (a1 == b1 || (a1.is_nan() && b1.is_nan())) && (a2 == b2 || (a2.is_nan() && b2.is_nan()))
        }
        (Element::Record(x), Element::Record(y)) | (Element::List(x), Element::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| elements_eq(p, q))
        }
        // Inline ints are int64 by default; compare numbers by value.
        (Element::Int(x), Element::UInt(y)) | (Element::UInt(y), Element::Int(x)) => u64::try_from(*x) == Ok(*y),
        _ => a == b,
    }
}

/// Compares two nodes at the YAML level; ndarrays by shape, datatype and values.
fn same(
    fa: &AsdfFile,
    a: NodeRef<'_>,
    fb: &AsdfFile,
    b: NodeRef<'_>,
    path: &str,
    seen: &mut HashSet<(u32, u32)>,
) -> Result<(), String> {
    if !seen.insert((a.id().0, b.id().0)) {
        return Ok(());
    }
    if a.is_asdf_tag("core/ndarray") {
        let x = fa.array_at(a).read_dyn().map_err(|e| format!("{path}: {e}"))?;
        let y = fb.array_at(b).read_dyn().map_err(|e| format!("{path} (yaml): {e}"))?;
        if x.shape != y.shape {
            return Err(format!("{path}: shape {:?} != {:?}", x.shape, y.shape));
        }
        if x.datatype.to_string() != y.datatype.to_string() {
            return Err(format!("{path}: datatype {} != {}", x.datatype, y.datatype));
        }
        let (ex, ey): (Vec<_>, Vec<_>) = (x.elements().collect(), y.elements().collect());
        for (i, (p, q)) in ex.iter().zip(&ey).enumerate() {
            if !elements_eq(p, q) {
                return Err(format!("{path}: element {i}: {p:?} != {q:?}"));
            }
        }
        return Ok(());
    }
    if a.tag() != b.tag() {
        return Err(format!("{path}: tag {:?} != {:?}", a.tag(), b.tag()));
    }
    match (a.value(), b.value()) {
        (Value::Seq(_), Value::Seq(_)) => {
            let (x, y): (Vec<_>, Vec<_>) = (a.items().unwrap().collect(), b.items().unwrap().collect());
            if x.len() != y.len() {
                return Err(format!("{path}: {} items != {}", x.len(), y.len()));
            }
            for (i, (p, q)) in x.into_iter().zip(y).enumerate() {
                same(fa, p, fb, q, &format!("{path}/{i}"), seen)?;
            }
            Ok(())
        }
        (Value::Map(_), Value::Map(_)) => {
            let (x, y): (Vec<_>, Vec<_>) = (a.pairs().unwrap().collect(), b.pairs().unwrap().collect());
            if x.len() != y.len() {
                return Err(format!("{path}: {} keys != {}", x.len(), y.len()));
            }
            for ((ka, va), (kb, vb)) in x.into_iter().zip(y) {
                if ka.value() != kb.value() {
                    return Err(format!("{path}: key {:?} != {:?}", ka.value(), kb.value()));
                }
                same(fa, va, fb, vb, &format!("{path}/{}", ka.key_text()), seen)?;
            }
            Ok(())
        }
        (Value::Float(x), Value::Float(y)) if x.is_nan() && y.is_nan() => Ok(()),
        (x, y) if x == y => Ok(()),
        (x, y) => Err(format!("{path}: {x:?} != {y:?}")),
    }
}

#[test]
fn every_reference_file_matches_its_yaml() {
    let files = common::reference_files();
    let mut compared = 0;
    for path in files {
        let yaml = path.with_extension("yaml");
        if !yaml.exists() {
            // exploded0000.asdf is the external half of exploded.asdf.
            assert!(
                path.file_name().unwrap().to_string_lossy().starts_with("exploded0"),
                "{} has no .yaml",
                path.display()
            );
            continue;
        }
        let fa = AsdfFile::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let fb = AsdfFile::open(&yaml).unwrap_or_else(|e| panic!("{e}"));
        let mut seen = HashSet::new();
        same(&fa, fa.tree().root().unwrap(), &fb, fb.tree().root().unwrap(), "", &mut seen)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        compared += 1;
    }
    assert!(compared >= 7 * 15, "compared only {compared} files");
}
