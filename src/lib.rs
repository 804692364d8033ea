//! rasdf: the Advanced Scientific Data Format (ASDF) in Rust.
//!
//! The format's layers are the crate's modules, and data flows one way through them:
//! bytes -> [`block`]s and the [`tree`] -> typed arrays ([`ndarray`]).
//!
//! - [`block`]: block headers, codecs (zlib, bzp2, lz4), checksums, walking;
//! - [`index`]: the block index at the end of the file, checked before use;
//! - [`tree`]: the header, comments and the YAML tree;
//! - [`ndarray`]: array datatypes, layouts and data;
//! - [`schema`]: what the standard's schemas add to a tree (defaults, in older files);
//! - [`file`](mod@file): opening files (lazy, memory-mapped);
//! - [`convert`]: conversion to and from RawArray (`.ra`) and GSD (`.gsd`);
//! - [`cli`]: the command-line tools, as library functions writing to `impl Write`.
//!
//! ```no_run
//! let file = rasdf::AsdfFile::open("data.asdf")?;
//! for (n, block) in file.blocks().iter().enumerate() {
//!     println!("block {n}: {} bytes, {}", block.data_size, block.compression);
//! }
//! # Ok::<(), rasdf::Error>(())
//! ```

pub mod block;
pub mod cli;
pub mod convert;
mod direct;
pub mod error;
pub mod external;
pub mod file;
#[doc(hidden)]
pub mod fuzzing;
mod hugepages;
pub mod index;
pub mod limits;
pub mod ndarray;
mod pipeline;
pub mod schema;
#[cfg(test)]
mod testutil;
pub mod tree;
mod uri;
pub mod write;

pub use error::{Error, ErrorKind, Location, Result, Warning};
pub use file::{AsdfFile, OpenOptions};
pub use limits::{LimitError, Limits};
