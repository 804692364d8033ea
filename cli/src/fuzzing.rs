//! Entry points of every fuzz target (fuzz/): the library's, the converters', and
//! `open_all`, which also draws `info`, runs `check` and `to-yaml`. Shared with `cargo
//! test`, which replays every input kept under `testdata/fuzz/<target>/`.

use rasdf::OpenOptions;
use rasdf::fuzzing::tight_limits;

pub use rasdf::fuzzing::install_panic_filter;

/// The names of every target, as in fuzz/Cargo.toml.
pub fn targets() -> impl Iterator<Item = &'static str> {
    rasdf::fuzzing::TARGETS.iter().chain(rasdf_convert::fuzzing::TARGETS).copied()
}

/// Runs target `name` on `data`.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "open_all" => open_all(data),
        _ if rasdf_convert::fuzzing::TARGETS.contains(&name) => rasdf_convert::fuzzing::run(name, data),
        _ => rasdf::fuzzing::run(name, data),
    }
}

/// Opens a whole file with tight limits and touches everything: every block, every
/// array (elements, statistics, mask), `info`, `check` and `to-yaml`.
pub fn open_all(data: &[u8]) {
    let Some(f) = rasdf::fuzzing::open_all(data) else { return };
    let mut sink = Vec::new();
    // Every line, and a drawing cut in both directions with the block tables.
    let all = rasdf_info::InfoOptions::default();
    let _ = rasdf_info::report(&f, &all, &mut sink);
    let cut = rasdf_info::InfoOptions::default()
        .max_rows(Some(data.len() % 40))
        .max_cols(Some(data.len() % 50))
        .show_blocks(true);
    let _ = rasdf_info::report(&f, &cut, &mut sink);
    let _ = crate::check::report(&f, "fuzz", &mut sink);
    let _ = crate::to_yaml::to_yaml(&f);
    // Read once, as the converters read (zlib blocks of any size piece by piece), every
    // array that reads gives the bytes it gives read whole.
    let Ok(once) = OpenOptions::new().limits(tight_limits()).stream_zlib_stats_from(0).from_bytes(data.to_vec()) else {
        panic!("a file that opened does not open again");
    };
    for array in f.arrays() {
        let path = array.path().unwrap_or_default();
        if let (Ok(a), Some(node)) = (f.array(path).and_then(|a| a.read_dyn()), once.get(path)) {
            let mut whole = Vec::new();
            let mut pieces = Vec::new();
            let _ = rasdf_convert::write_elements(&a, false, &mut whole);
            let read = rasdf_convert::write_ndarray_once(&once, node, false, &mut pieces);
            assert!(read.is_ok() && pieces == whole, "{path}: read once, {read:?}, not as read whole");
        }
    }
}
