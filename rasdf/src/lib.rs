//! rasdf: the Advanced Scientific Data Format (ASDF) in Rust.
//!
//! The format's layers are the crate's modules, and data flows one way through them:
//! bytes -> [`block`]s and the [`tree`] -> typed arrays ([`ndarray`]).
//!
//! - [`block`]: block headers, codecs (zlib, bzp2, lz4; with the feature `extra-codecs`,
//!   other writers' zstd, lz4f, blsc, bls2/bsc2 and xz), checksums, walking;
//! - [`index`]: the block index at the end of the file, checked before use;
//! - [`header`]: the `#ASDF` header line, the comments and where the tree lies;
//! - [`tree`]: the YAML tree;
//! - [`ndarray`]: array datatypes, layouts and data;
//! - [`schema`]: the standard's schemas (and extensions'): validation, and the defaults
//!   they add to the tree of an older file;
//! - [`file`](mod@file): opening files (lazy, memory-mapped), listing and reading arrays;
//! - [`fits`]: FITS files holding an ASDF file (ASDF-in-FITS, as JWST writes them);
//! - [`write`](mod@write): writing files.
//!
//! The command-line tools are the package `rasdf-cli`; conversion to and from RawArray,
//! GSD and Blosc2 b2nd is the package `rasdf-convert`.
//!
//! To see what a file holds, list its arrays with [`AsdfFile::arrays`]: each a lazy
//! handle ([`ArrayRef`]) whose [`ArrayRef::info`] tells path, shape, datatype and
//! storage, from the tree and the block headers, no block decoded; its other methods
//! read the array (typed, any datatype, by rows, once, its mask, its statistics).
//!
//! ```no_run
//! let file = rasdf::AsdfFile::open("data.asdf")?;
//! for array in file.arrays() {
//!     let info = array.info()?;
//!     println!("{}: {} {}, {}", info.path, info.shape, info.datatype, info.storage);
//! }
//! for (n, block) in file.blocks().iter().enumerate() {
//!     println!("block {n}: {} bytes, {}", block.data_size, block.compression);
//! }
//! let data = file.array("sci/data")?.read::<f32>()?; // read (decoded) on demand
//! # Ok::<(), rasdf::Error>(())
//! ```

pub mod block;
#[cfg(feature = "extra-codecs")]
pub mod blosc;
mod direct;
pub mod error;
pub mod external;
pub mod file;
pub mod fits;
#[doc(hidden)]
pub mod fuzzing;
pub mod header;
mod hugepages;
pub mod index;
pub mod limits;
pub mod ndarray;
mod pipeline;
mod progress;
#[cfg(feature = "remote")]
pub mod remote;
#[doc(hidden)]
pub mod samples;
pub mod schema;
mod setters;
#[cfg(test)]
mod testutil;
pub mod tree;
mod uri;
pub mod write;

pub use error::{Error, ErrorKind, Location, Result, Warning};

/// The crates of rasdf's public API, re-exported so that a user's versions match:
/// [`ndarray`](::ndarray) for arrays, [`half`] for `float16`,
/// [`num_complex`] for complex numbers.
pub mod deps {
    pub use ::half;
    pub use ::ndarray;
    pub use ::num_complex;
}

// The README's Rust examples run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
pub use file::{ArrayRef, AsdfFile, OpenOptions};
pub use limits::{LimitError, Limits};
pub use progress::Progress;
