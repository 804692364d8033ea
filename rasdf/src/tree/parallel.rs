//! Large texts parsed in parts on several threads: a tree whose root is a block mapping is
//! cut between the root's entries, the parts built on the rayon pool's threads, and the parts'
//! trees joined into the tree a parse of the whole text gives. A part that cannot be
//! parsed alone declines the split, and the caller parses the whole text at once.

use std::collections::HashSet;

use rayon::prelude::*;

use super::build::Builder;
use super::{Node, NodeId, Tree, Value, dedupe, fast};
use crate::Limits;

impl Tree {
    /// A large tree whose root is a block mapping, parsed in parts on several threads
    /// (the text cut between entries of the root mapping) and joined. `None` when the
    /// text is small, or a part cannot be parsed alone (the scanner gave up, an alias
    /// names an anchor of another part, a merge key, an error, a limit): the caller then
    /// parses the whole text at once, which gives the same tree or the error with its
    /// place.
    pub(super) fn parse_split(text: &str, limits: &Limits) -> Option<Tree> {
        if text.len() < 2 * SPLIT_PART_MIN {
            return None;
        }
        let threads = rayon::current_num_threads().min(text.len() / SPLIT_PART_MIN);
        if threads < 2 {
            return None;
        }
        Tree::parse_in_parts(text, limits, threads)
    }

    /// [`Tree::parse_split`] in (at most) `parts` parts, whatever the text's size.
    pub(crate) fn parse_in_parts(text: &str, limits: &Limits, parts: usize) -> Option<Tree> {
        let cuts = fast::split_points(text, parts);
        if cuts.is_empty() {
            return None;
        }
        let bounds: Vec<(usize, usize)> = std::iter::once(0)
            .chain(cuts.iter().copied())
            .zip(cuts.iter().copied().chain(std::iter::once(text.len())))
            .collect();
        let part = |(start, end): (usize, usize)| {
            // The first part's arena has room for the whole tree: the others join it.
            let mut b = Builder::new(limits, if start == 0 { text.len() } else { end - start }, false);
            let done = fast::scan_part(text, start, end, &mut b.sink());
            match done {
                Ok(true) if !b.any_merge => {
                    let anchors: Vec<String> = b.anchors.keys().cloned().collect();
                    Some((b.into_tree(), anchors))
                }
                _ => None,
            }
        };
        // On the rayon pool (where its workers are busy, the parts are parsed one after
        // another, to the same tree). A part that panicked is left undone.
        let parts: Vec<Option<(Tree, Vec<String>)>> = bounds
            .par_iter()
            .map(|&r| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| part(r))).ok().flatten())
            .collect();
        let parts: Vec<(Tree, Vec<String>)> = parts.into_iter().collect::<Option<_>>()?;
        // An anchor given in two parts is the whole parse's error to report.
        let mut names = HashSet::new();
        if !parts.iter().flat_map(|(_, a)| a).all(|a| names.insert(a)) {
            return None;
        }
        join_parts(parts.into_iter().map(|(t, _)| t).collect(), limits)
    }
}

/// Texts are parsed in parts of at least this many bytes. (A thread costs ~0.1 ms; but
/// where the second core of a virtual machine takes milliseconds to wake, as on the
/// machine the benchmarks ran on, parts of 170 KB gained nothing, parts of 1.4 MB a
/// quarter.)
const SPLIT_PART_MIN: usize = 512 << 10;

/// Nodes moved at a time when parts are joined (2 MiB of them).
const JOIN_RUN: usize = (2 << 20) / std::mem::size_of::<Node>();

/// Joins the trees of a split parse ([`Tree::parse_split`]): the first holds the
/// document's root mapping, each later one (node 0, its root) more entries of it. The
/// nodes keep the order of a parse of the whole text.
fn join_parts(parts: Vec<Tree>, limits: &Limits) -> Option<Tree> {
    let mut parts = parts.into_iter();
    let mut tree = parts.next()?;
    let root = tree.root?.0 as usize;
    let Value::Map(own) = &mut tree.nodes[root].value else { return None };
    let mut pairs = std::mem::take(own);
    for part in parts {
        let total = tree.nodes.len().checked_add(part.nodes.len())?;
        // (A part with `!!pairs` tuples is left to the whole parse: they are rare.)
        if part.root != Some(NodeId(0))
            || total > limits.max_nodes
            || u32::try_from(total).is_err()
            || !part.tuples.is_empty()
        {
            return None;
        }
        // Node k of the part becomes node `offset + k`; its node 0 is dropped.
        let offset = u32::try_from(tree.nodes.len() - 1).ok()?;
        let shift = |id: &mut NodeId| id.0 += offset;
        let shift_pair = |(k, v): &mut (NodeId, NodeId)| {
            shift(k);
            shift(v);
        };
        let from = part.nodes.as_ptr() as usize;
        let mut nodes = part.nodes.into_iter();
        let Some(Node { tag: None, value: Value::Map(mut more), .. }) = nodes.next() else { return None };
        more.iter_mut().for_each(shift_pair);
        pairs.append(&mut more);
        // Moved a run at a time, the part's pages given back as their nodes leave, so
        // that the part's nodes are not held twice (a tree of 200 000 entries: 15 MB).
        let mut released = from;
        while nodes.len() > 0 {
            tree.nodes.extend(nodes.by_ref().take(JOIN_RUN).map(|mut n| {
                match &mut n.value {
                    Value::Seq(items) => items.iter_mut().for_each(shift),
                    Value::Map(p) => p.iter_mut().for_each(shift_pair),
                    _ => {}
                }
                n
            }));
            let moved_to = nodes.as_slice().as_ptr() as usize;
            // SAFETY: `released..moved_to` lies in the part's arena, which `nodes` owns
            // until the end of this loop's scope, and holds only nodes moved out: the
            // iterator reads from `moved_to` on and frees the arena without reading it.
            released = unsafe { crate::hugepages::release(released, moved_to) };
        }
    }
    // Keys repeated across parts merge as in one mapping.
    let pairs = dedupe(&tree, pairs).ok()?;
    tree.nodes[root].value = Value::Map(pairs);
    Some(tree)
}

#[cfg(test)]
mod tests {
    use super::super::TreeError;
    use super::*;

    /// A root mapping of `n` entries of many shapes, each `~60-200` bytes.
    fn many_entries(n: usize) -> String {
        let mut t = String::from("%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n");
        for i in 0..n {
            match i % 8 {
                0 => {
                    t += &format!("e{i}: !core/ndarray-1.1.0\n  source: {i}\n  shape: [3, {i}]\n  datatype: float64\n")
                }
                1 => t += &format!("e{i}: {{a: 1.5, b: value {i}, c: [x, 'y z', \"w\\t\"],\n  d: yes}}\n"),
                2 => t += &format!("'e{i}':\n  a: &a{i} [1, 2, {i}]\n  copy: *a{i}\n"),
                3 => t += &format!("e{i}:\n- 1\n- [nested, 0x1F]\n- k: v\n  m: ~\n"),
                4 => t += &format!("# a comment\n\ne{i}: plain text {i}  \n"),
                5 => t += &format!("\"e{i}\": !!str 017\ndup: {i}\n"),
                6 => t += &format!("e{i}:\n  deep:\n    deeper: {{x: !<tag:x.org:y-1.0> 1}}\n  list: []\n"),
                _ => t += &format!("e{i}: 2001-12-14t21:59:43.10-05:00\nempty{i}:\n"),
            }
        }
        t
    }

    fn whole(text: &str) -> Tree {
        Tree::parse_fast_whole(text, &Limits::default()).expect("the fast scanner takes it").expect("it parses")
    }

    #[test]
    fn parse_in_parts_is_the_parse_of_the_whole() {
        for (text, ends) in [(many_entries(200), ""), (many_entries(57), "...\n"), (many_entries(9), "...\r\n")] {
            let text = text + ends;
            let expected = whole(&text);
            for parts in 2..=7 {
                let split = Tree::parse_in_parts(&text, &Limits::default(), parts);
                assert!(split.as_ref() == Some(&expected), "{parts} parts of {} bytes", text.len());
            }
        }
        // Parts of many runs of nodes (moved a run at a time, their pages given back).
        let text = many_entries(24_000);
        let expected = whole(&text);
        assert!(expected.len() > 4 * JOIN_RUN, "{} nodes", expected.len());
        assert!(Tree::parse_in_parts(&text, &Limits::default(), 2) == Some(expected), "many runs");
        // Nesting as deep as the scanner follows, in a part parsed on a spawned thread
        // (smaller stack than the main thread's).
        let text = format!("{}deep: {{a: {}1{}}}\n", many_entries(60), "[".repeat(120), "]".repeat(120));
        assert!(Tree::parse_in_parts(&text, &Limits::default(), 2) == Some(whole(&text)), "deep");
        // Lines ending in CRLF: positions still count lines.
        let text = many_entries(40).replace('\n', "\r\n");
        assert!(Tree::parse_in_parts(&text, &Limits::default(), 3) == Some(whole(&text)), "CRLF");
        // `!!pairs` (whose items the tree marks as tuples) in the first part and in later
        // ones: the later ones are left to the whole parse, the tuples the same either way.
        let head = "--- !core/asdf-1.1.0\n";
        for text in [
            many_entries(60).replacen(head, &format!("{head}p: !!pairs [a: 1, b: 2]\n"), 1),
            format!("{}p: !!pairs [a: 1, b: 2]\n", many_entries(60)),
        ] {
            let expected = Tree::parse_libyaml(&text, &Limits::default()).unwrap();
            let p = expected.get("p").unwrap();
            assert!(p.items().unwrap().all(|item| expected.is_tuple(item.id())), "pairs are tuples");
            assert!(!expected.is_tuple(p.id()));
            for parts in 2..=4 {
                let split = Tree::parse_in_parts(&text, &Limits::default(), parts);
                assert!(split.as_ref().is_none_or(|t| t == &expected), "{parts} parts with !!pairs");
            }
        }
        // Keys repeated across parts: the last value, at the first place.
        let text = many_entries(64);
        let t = Tree::parse_in_parts(&text, &Limits::default(), 4).unwrap();
        assert_eq!(t.get("dup").unwrap().as_i64(), Some(61));
        assert_eq!(t.root().unwrap().pairs().unwrap().filter(|(k, _)| k.as_str() == Some("dup")).count(), 1);
    }

    #[test]
    fn parse_in_parts_declines_what_it_cannot_join() {
        let limits = Limits::default();
        let head = many_entries(30);
        let declined = |text: &str| {
            for parts in 2..=4 {
                let split = Tree::parse_in_parts(text, &limits, parts);
                assert!(split.is_none(), "{parts} parts of {:?}...", &text[text.len() - 40..]);
            }
        };
        // An alias to an anchor of an earlier part; a merge key; an anchor given again
        // in a later part (the whole parse's error).
        declined(&format!("{head}{}", "late: *a2\n".repeat(40)));
        let again = format!("{head}{}", "late: &a2 [1]\n".repeat(40));
        declined(&again);
        assert!(Tree::parse(&again, &limits).unwrap_err().0.to_string().contains("duplicate anchor &a2"));
        declined(&format!("{head}{}", "m: {<<: {a: 1}}\n".repeat(40)));
        // A key-like line at column 0 inside a flow collection or a quoted scalar.
        let cut_inside = |inner: &str| format!("{head}tail: [1,\n{inner}\n]\n{}", "x: 1\n".repeat(3));
        let text = cut_inside(&"k: 1,\n".repeat(400));
        assert_eq!(Tree::parse(&text, &limits).is_ok(), Tree::parse_libyaml(&text, &limits).is_ok());
        for parts in 2..=4 {
            if let Some(t) = Tree::parse_in_parts(&text, &limits, parts) {
                assert!(Some(Ok(t)) == Tree::parse_fast_whole(&text, &limits), "{parts} parts");
            }
        }
        declined(&format!("{head}q: \"{}\"\n", "word\n".repeat(400)));
        // The document ends in an early part and more follows: an error, as in PyYAML
        // (a file's tree text ends at its `...`, so this is never a file's).
        let text = format!("{head}...\n{}", "k: 1\n".repeat(400));
        declined(&text);
        let (err, _) = Tree::parse(&text, &limits).unwrap_err();
        assert!(err.to_string().contains("did not find expected <document start>"), "{err}");
        let text = format!("{head}...\n--- {}", "k: 1\n".repeat(400));
        let (err, _) = Tree::parse(&text, &limits).unwrap_err();
        assert!(err.to_string().contains("expected a single document"), "{err}");
        // A root that is not a block mapping, then key-like lines: invalid YAML.
        declined(&format!("--- [a,\n{}b]\n", "k: 1\n".repeat(400)));
        declined(&format!("--- {{a: 1}}\n{}", "k: 1\n".repeat(400)));
        declined(&format!("---\n- a\n{}", "k: 1\n".repeat(400)));
        // An error in a later part; the whole parse reports it, at its place.
        let text = format!("{head}{}bad: !!int x\n", "k: 1\n".repeat(400));
        declined(&text);
        let (err, pos) = Tree::parse(&text, &limits).unwrap_err();
        assert!(matches!(err, TreeError::BadScalar { .. }), "{err:?}");
        assert_eq!(pos.map(|p| p.0), Some(text.lines().count()));
        // Too many nodes altogether, though each part has few enough.
        let small = Limits { max_nodes: whole(&head).len() - 5, ..Limits::default() };
        assert!(Tree::parse_in_parts(&head, &small, 2).is_none());
    }
}
