//! ndarray nodes: datatypes, byte order, layout and data.

/// What can be wrong with an ndarray node or its data.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ArrayError {
    /// The node is not a valid ndarray.
    #[error("invalid ndarray: {0}")]
    Invalid(String),
}
