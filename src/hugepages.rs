//! Transparent huge pages for large buffers.
//!
//! A buffer of hundreds of MiB filled for the first time costs one page fault per
//! 4 KiB page; on systems that give huge pages only where asked (`madvise` mode, the
//! common default) rasdf asks for its large buffers (decoded blocks, a big tree's node
//! arena), so they fault in 2 MiB at a time. Advice only: nothing changes when the
//! kernel declines.

/// Buffers smaller than this are left alone: a huge page may cost up to 2 MiB of
/// resident memory beyond what is used. (At 4 MiB, the node arena of a 440 KB tree
/// already takes ~200 page faults fewer.)
pub(crate) const MIN_LEN: usize = 4 << 20;

/// Advises the kernel to back the whole 2 MiB pages inside `ptr..ptr + len` with huge
/// pages, when `len` is at least [`MIN_LEN`].
#[cfg(target_os = "linux")]
pub(crate) fn advise<T>(ptr: *const T, len_bytes: usize) {
    const HUGE: usize = 2 << 20;
    if len_bytes < MIN_LEN {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + len_bytes) / HUGE * HUGE;
    if end > start {
        // SAFETY: madvise with MADV_HUGEPAGE only gives the kernel advice about a range
        // inside an allocation this process owns; it neither reads nor changes the memory,
        // and a failure (EINVAL where huge pages are unsupported) is harmless.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// No-op where the advice does not exist.
#[cfg(not(target_os = "linux"))]
pub(crate) fn advise<T>(_ptr: *const T, _len_bytes: usize) {}
