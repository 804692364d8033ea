//! Bounds on what a file may make rasdf allocate or do, checked before the work starts.

/// Limits checked before any allocation or loop whose size comes from the file.
///
/// The defaults suit real astronomy files (trees of a few hundred MB, arrays of tens
/// of GB) while stopping hostile ones:
///
/// | field | default |
/// |---|---|
/// | `max_tree_bytes` | 1 GiB |
/// | `max_depth` | 1 000 |
/// | `max_nodes` | 100 000 000 |
/// | `max_alias_expansion` | 10 000 000 |
/// | `max_blocks` | 10 000 000 |
/// | `max_block_bytes` | 64 GiB |
/// | `max_array_elements` | 2^40 |
/// | `max_overlap_bytes` | 1 GiB |
/// | `max_index_bytes` | 256 MiB |
/// | `max_inline_bytes` | 256 MiB |
///
/// ```
/// let tight = rasdf::Limits::default().max_block_bytes(1 << 20);
/// assert!(tight.max_block_bytes < rasdf::Limits::unlimited().max_block_bytes);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest YAML tree, in bytes.
    pub max_tree_bytes: u64,
    /// Deepest nesting of sequences and mappings in the tree.
    pub max_depth: usize,
    /// Most nodes (scalars, sequences, mappings) in the tree.
    pub max_nodes: usize,
    /// Most nodes that walking the tree through aliases may visit (stops "billion laughs").
    pub max_alias_expansion: u64,
    /// Most binary blocks in one file.
    pub max_blocks: usize,
    /// Largest decoded block (the `data_size` rasdf allocates for a compressed block).
    pub max_block_bytes: u64,
    /// Most elements in one array.
    pub max_array_elements: u64,
    /// Largest array, in bytes of its elements, whose strides overlap so that it stands
    /// for more bytes than its data holds (a stride of 0, a sliding window; numpy and
    /// the reference read such views). Without overlap an array is never larger than
    /// its data; with it, a few bytes could stand for terabytes.
    pub max_overlap_bytes: u64,
    /// How far from the end of the file the block index is looked for.
    pub max_index_bytes: u64,
    /// Largest array whose data is inline in the tree, in bytes of its elements
    /// (elements times item size: a few bytes of text can declare a string or record
    /// type of a gigabyte per element).
    pub max_inline_bytes: u64,
}

crate::setters::setters!(Limits {
    max_tree_bytes: u64,
    max_depth: usize,
    max_nodes: usize,
    max_alias_expansion: u64,
    max_blocks: usize,
    max_block_bytes: u64,
    max_array_elements: u64,
    max_overlap_bytes: u64,
    max_index_bytes: u64,
    max_inline_bytes: u64,
});

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_tree_bytes: 1 << 30,
            max_depth: 1_000,
            max_nodes: 100_000_000,
            max_alias_expansion: 10_000_000,
            max_blocks: 10_000_000,
            max_block_bytes: 64 << 30,
            max_array_elements: 1 << 40,
            max_overlap_bytes: 1 << 30,
            max_index_bytes: 256 << 20,
            max_inline_bytes: 256 << 20,
        }
    }
}

impl Limits {
    /// No limits beyond what the machine has. Use only on trusted files.
    pub fn unlimited() -> Self {
        Limits {
            max_tree_bytes: u64::MAX,
            max_depth: usize::MAX,
            max_nodes: usize::MAX,
            max_alias_expansion: u64::MAX,
            max_blocks: usize::MAX,
            max_block_bytes: u64::MAX,
            max_array_elements: u64::MAX,
            max_overlap_bytes: u64::MAX,
            max_index_bytes: u64::MAX,
            max_inline_bytes: u64::MAX,
        }
    }

    /// Fails when `value` is over `limit`; `what` names the field.
    pub fn check(what: &'static str, value: u64, limit: u64) -> Result<(), LimitError> {
        if value > limit { Err(LimitError { what, value, limit }) } else { Ok(()) }
    }
}

/// A value from the file exceeded one of the [`Limits`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the file needs {value} where the limit {what} allows {limit}")]
pub struct LimitError {
    /// Which limit, named as the `Limits` field.
    pub what: &'static str,
    /// The value the file asked for.
    pub value: u64,
    /// The limit in force.
    pub limit: u64,
}
