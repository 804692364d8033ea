//! What the command-line tools set for the whole process, and a library must not: the
//! allocator, and the handling of signals.

/// mimalloc: trees are hundreds of thousands of small allocations, and it maps memory
/// in large spans, so far fewer page faults than glibc's malloc (measured: the 200 000-entry
/// benchmark tree 80 -> 56 ms).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_e`, the same in mimalloc 2
/// and 3; the Rust bindings leave this one out).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Memory freed is given back to the system at once. By default mimalloc keeps freed
/// spans resident for 100 ms (10 ms, times 10 for its arenas), longer than a whole
/// command on a tree often runs, so the spans a parse frees count in the peak again when
/// the write allocates fresh ones: rewriting the 200 000-entry benchmark tree peaked at
/// 65 MiB, and at 53 MiB with this, in the same time.
///
/// Signals: exceeding `ulimit -f` becomes an error (EFBIG) instead of killing the
/// process, and SIGINT, SIGTERM and SIGHUP remove any named temporary file of a write
/// under way before the process dies of them (unnamed ones, the usual kind, vanish by
/// themselves).
pub fn setup() {
    // SAFETY: sets one of mimalloc's options, before any other thread runs; mimalloc
    // reads its options when it needs them.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) };
    rasdf_cli::signals::install();
}
