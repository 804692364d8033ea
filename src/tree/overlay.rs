//! Changes on top of a [`Tree`] without copying it: [`Overlay`].
//!
//! Writing a file fills in its array nodes, sets `asdf_library` and turns big integers
//! into `core/integer`: a few changes to a tree that may hold millions of nodes. An
//! overlay keeps those changes beside the tree it borrows, so the emitter reads the
//! changed tree while the tree itself stays as it is, uncopied.

use std::collections::HashMap;

use super::{Node, NodeId, Tree, Value};

/// Read access to an arena of nodes: what the emitter walks.
pub trait NodeStore {
    /// The root node's handle, when there is one.
    fn root_id(&self) -> Option<NodeId>;
    /// The number of nodes (every handle below it is valid).
    fn node_count(&self) -> usize;
    /// The node with handle `id`.
    ///
    /// # Panics
    /// When `id` is not below [`NodeStore::node_count`].
    fn node_at(&self, id: NodeId) -> &Node;
}

/// An arena that new nodes can be added to.
pub trait NodeArena: NodeStore {
    /// Adds a node (not yet attached anywhere) and returns its handle.
    fn push(&mut self, node: Node) -> NodeId;
}

impl NodeStore for Tree {
    fn root_id(&self) -> Option<NodeId> {
        self.root
    }

    fn node_count(&self) -> usize {
        self.nodes.len()
    }

    fn node_at(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }
}

impl NodeArena for Tree {
    fn push(&mut self, node: Node) -> NodeId {
        Tree::push(self, node)
    }
}

/// A [`Tree`] with changes on top: nodes added after its own, nodes of its own replaced,
/// another root. Reading a node finds the change if there is one, else the tree's node.
/// Handles of the tree stay valid; added nodes get the handles after them.
#[derive(Debug, Clone)]
pub struct Overlay<'b> {
    base: &'b Tree,
    root: Option<NodeId>,
    /// The nodes added, from handle `base.len()` on.
    added: Vec<Node>,
    /// One bit a node of the base: whether `replaced` holds a replacement for it (so that
    /// reading an unchanged node costs a bit test, not a hash lookup).
    is_replaced: Vec<u64>,
    replaced: HashMap<NodeId, Node>,
}

impl<'b> Overlay<'b> {
    /// No changes yet on `base`.
    pub fn new(base: &'b Tree) -> Self {
        Overlay::with_room(base, 0)
    }

    /// [`Overlay::new`] with room for `more` added nodes.
    pub fn with_room(base: &'b Tree, more: usize) -> Self {
        Overlay {
            base,
            root: base.root,
            added: Vec::with_capacity(more),
            is_replaced: vec![0; base.len().div_ceil(64)],
            replaced: HashMap::new(),
        }
    }

    /// The tree underneath.
    pub fn base(&self) -> &'b Tree {
        self.base
    }

    /// The number of nodes: the tree's and those added.
    pub fn len(&self) -> usize {
        self.base.len() + self.added.len()
    }

    /// True when there are no nodes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The root's handle.
    pub fn root(&self) -> Option<NodeId> {
        self.root
    }

    /// Sets the root.
    pub fn set_root(&mut self, id: NodeId) {
        self.root = Some(id);
    }

    /// The node with handle `id`, changed or not.
    ///
    /// # Panics
    /// When `id` is neither the tree's nor added here.
    pub fn node(&self, id: NodeId) -> &Node {
        let i = id.0 as usize;
        match i.checked_sub(self.base.len()) {
            Some(j) => &self.added[j],
            None if self.is_replaced[i / 64] & (1 << (i % 64)) != 0 => &self.replaced[&id],
            None => &self.base.nodes[i],
        }
    }

    /// The content of node `id`.
    pub fn value(&self, id: NodeId) -> &Value {
        &self.node(id).value
    }

    /// The text of node `id` when it is a string.
    pub fn as_str(&self, id: NodeId) -> Option<&str> {
        match self.value(id) {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Adds a node and returns its handle.
    pub fn push(&mut self, node: Node) -> NodeId {
        let id = NodeId(u32::try_from(self.len()).unwrap_or(u32::MAX));
        self.added.push(node);
        id
    }

    /// Replaces the content of node `id`.
    pub fn set_value(&mut self, id: NodeId, value: Value) {
        self.node_mut(id).value = value;
    }

    /// Replaces the tag of node `id`.
    pub fn set_tag(&mut self, id: NodeId, tag: Option<String>) {
        self.node_mut(id).tag = tag;
    }

    /// Node `id`, to change: a node of the tree is copied into the overlay first.
    fn node_mut(&mut self, id: NodeId) -> &mut Node {
        let i = id.0 as usize;
        match i.checked_sub(self.base.len()) {
            Some(j) => &mut self.added[j],
            None => {
                self.is_replaced[i / 64] |= 1 << (i % 64);
                let base = self.base;
                self.replaced.entry(id).or_insert_with(|| base.nodes[i].clone())
            }
        }
    }
}

impl NodeStore for Overlay<'_> {
    fn root_id(&self) -> Option<NodeId> {
        self.root
    }

    fn node_count(&self) -> usize {
        self.len()
    }

    fn node_at(&self, id: NodeId) -> &Node {
        self.node(id)
    }
}

impl NodeArena for Overlay<'_> {
    fn push(&mut self, node: Node) -> NodeId {
        Overlay::push(self, node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;
    use crate::tree::emit::Emitter;

    fn node(value: Value) -> Node {
        Node { tag: None, value, line: 0, col: 0 }
    }

    /// An overlay's changes show through it and leave the tree alone; what it emits is
    /// what the tree changed in place emits.
    #[test]
    fn changes_show_through_and_leave_the_tree_alone() {
        let text = "a: 1\nb: [x, y]\nc: {d: 2}\n";
        let tree = Tree::parse(text, &Limits::default()).unwrap();
        let before = tree.clone();
        let mut changed = tree.clone();
        let mut over = Overlay::new(&tree);
        let root = tree.root().unwrap().id();
        let b = tree.get("b").unwrap().id();
        let y = tree.get("b/1").unwrap().id();
        for t in [&mut changed as &mut dyn Edit, &mut over as &mut dyn Edit] {
            let k = t.add(node(Value::Str("e".into())));
            let v = t.add(node(Value::Float(2.5)));
            let mut pairs = match t.value_of(root) {
                Value::Map(p) => p.clone(),
                _ => unreachable!(),
            };
            pairs.push((k, v));
            t.change(root, Value::Map(pairs));
            t.change(y, Value::Str("z".into()));
            t.retag(b, Some("tag:stsci.edu:asdf/core/list-1.0.0".into()));
        }
        assert_eq!(tree, before, "the tree underneath changed");
        assert_eq!(over.len(), changed.len());
        assert_eq!(over.as_str(y), Some("z"));
        assert_eq!(tree.get("b/1").unwrap().as_str(), Some("y"));
        let out = Emitter::new(&over).document();
        assert_eq!(out, Emitter::new(&changed).document());
        assert!(out.contains("e: 2.5") && out.contains("b: !core/list-1.0.0 [x, z]"), "{out}");
        // Unchanged, an overlay emits the tree.
        assert_eq!(Emitter::new(&Overlay::new(&tree)).document(), Emitter::new(&tree).document());
    }

    /// The same edits on a tree and on an overlay, for the test above.
    trait Edit {
        fn add(&mut self, n: Node) -> NodeId;
        fn value_of(&self, id: NodeId) -> &Value;
        fn change(&mut self, id: NodeId, v: Value);
        fn retag(&mut self, id: NodeId, t: Option<String>);
    }

    impl Edit for Tree {
        fn add(&mut self, n: Node) -> NodeId {
            self.push(n)
        }
        fn value_of(&self, id: NodeId) -> &Value {
            self.node(id).value()
        }
        fn change(&mut self, id: NodeId, v: Value) {
            self.set_value(id, v);
        }
        fn retag(&mut self, id: NodeId, t: Option<String>) {
            self.set_tag(id, t);
        }
    }

    impl Edit for Overlay<'_> {
        fn add(&mut self, n: Node) -> NodeId {
            self.push(n)
        }
        fn value_of(&self, id: NodeId) -> &Value {
            self.value(id)
        }
        fn change(&mut self, id: NodeId, v: Value) {
            self.set_value(id, v);
        }
        fn retag(&mut self, id: NodeId, t: Option<String>) {
            self.set_tag(id, t);
        }
    }
}
