//! The YAML tree: the header and comments ([`header`]), and YAML to a node tree.

pub mod header;

/// What can be wrong with the YAML tree.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    /// The YAML does not parse.
    #[error("invalid YAML: {0}")]
    Syntax(String),
}
