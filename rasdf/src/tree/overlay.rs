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

/// An arena that new nodes can be added to, and its nodes changed.
pub trait NodeArena: NodeStore {
    /// Adds a node (not yet attached anywhere) and returns its handle.
    fn push(&mut self, node: Node) -> NodeId;
    /// Replaces the content of node `id`.
    fn set_value(&mut self, id: NodeId, value: Value);
    /// Replaces the tag of node `id`.
    fn set_tag(&mut self, id: NodeId, tag: Option<String>);
}

/// Which children of a node [`visit_reachable`] goes into.
pub(crate) enum Children {
    /// Every item, and every key and value.
    All,
    /// None.
    Skip,
    /// The values of the pairs whose key is not one of these strings (nor the keys).
    ValuesExcept(&'static [&'static str]),
}

/// Visits every node reachable from the root once, in no set order (a node met again
/// through an alias, or in a cycle, is not visited again), going into the children
/// `visit` names; stops at `visit`'s first error.
pub(crate) fn visit_reachable<S: NodeStore + ?Sized, E>(
    store: &S,
    mut visit: impl FnMut(NodeId, &Node) -> Result<Children, E>,
) -> Result<(), E> {
    let mut seen = vec![false; store.node_count()];
    let mut stack: Vec<NodeId> = store.root_id().into_iter().collect();
    while let Some(id) = stack.pop() {
        if std::mem::replace(&mut seen[id.0 as usize], true) {
            continue;
        }
        let node = store.node_at(id);
        match (visit(id, node)?, &node.value) {
            (Children::All, Value::Seq(items)) => stack.extend(items),
            (Children::All, Value::Map(pairs)) => stack.extend(pairs.iter().flat_map(|&(k, v)| [k, v])),
            (Children::ValuesExcept(keys), Value::Map(pairs)) => stack.extend(pairs.iter().filter_map(|&(k, v)| {
                let named = matches!(&store.node_at(k).value, Value::Str(s) if keys.contains(&s.as_str()));
                (!named).then_some(v)
            })),
            _ => {}
        }
    }
    Ok(())
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

    fn set_value(&mut self, id: NodeId, value: Value) {
        Tree::set_value(self, id, value);
    }

    fn set_tag(&mut self, id: NodeId, tag: Option<String>) {
        Tree::set_tag(self, id, tag);
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

    fn set_value(&mut self, id: NodeId, value: Value) {
        Overlay::set_value(self, id, value);
    }

    fn set_tag(&mut self, id: NodeId, tag: Option<String>) {
        Overlay::set_tag(self, id, tag);
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
        // The same edits on a copy of the tree and on an overlay of it.
        fn edit(t: &mut impl NodeArena, root: NodeId, b: NodeId, y: NodeId) {
            let k = t.push(node(Value::Str("e".into())));
            let v = t.push(node(Value::Float(2.5)));
            let Value::Map(mut pairs) = t.node_at(root).value.clone() else { unreachable!() };
            pairs.push((k, v));
            t.set_value(root, Value::Map(pairs));
            t.set_value(y, Value::Str("z".into()));
            t.set_tag(b, Some("tag:stsci.edu:asdf/core/list-1.0.0".into()));
        }
        edit(&mut changed, root, b, y);
        edit(&mut over, root, b, y);
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
}
