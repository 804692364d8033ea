//! Memory advice for large buffers: transparent huge pages, pages made present ahead
//! of the thread filling them ([`Prefault`]), and cache lines fetched ahead of a
//! thread reading them ([`prefetch`]).
//!
//! A buffer of hundreds of MiB filled for the first time costs one page fault per
//! 4 KiB page; on systems that give huge pages only where asked (`madvise` mode, the
//! common default) rasdf asks for its large buffers (decoded blocks, a big tree's node
//! arena), so they fault in 2 MiB at a time. Advice only: nothing changes when the
//! kernel declines.

/// A hint to bring the cache line at `at` in: it reads nothing the program sees and
/// never faults, so any address will do (past the data's end too). For loops that read
/// a mapped file's scattered 4 KiB pages, or bytes another core has just written, where
/// the processor's own prefetcher stops short.
#[inline(always)]
pub(crate) fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64, and a prefetch neither faults nor reads memory the
    // program sees, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

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

/// Gives back to the system the whole pages between `from` and `to` (addresses; the
/// partial pages at either end are kept) and returns where the released range ends, the
/// `from` of the next call when a buffer is given back piece by piece. The pages read as
/// zeros afterwards, and count in the process's memory again only once written.
///
/// # Safety
/// `from..to` must lie inside an allocation the caller owns, and hold nothing that will
/// be read before it is written again (the elements moved out of a vector being drained,
/// say): its contents become zeros.
#[cfg(target_os = "linux")]
pub(crate) unsafe fn release(from: usize, to: usize) -> usize {
    const PAGE: usize = 4096;
    let start = from.next_multiple_of(PAGE);
    let end = to / PAGE * PAGE;
    if end <= start {
        return from;
    }
    // SAFETY: the caller's promise: the range is its own and holds nothing to read.
    // MADV_DONTNEED on private anonymous memory replaces the pages by zero-fill-on-demand
    // ones; a failure leaves the memory as it was.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
    }
    end
}

/// Nothing to do where the advice does not exist.
///
/// # Safety
/// None needed; the same signature as on Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) unsafe fn release(from: usize, _to: usize) -> usize {
    from
}

/// Ranges smaller than this are not worth a thread.
#[cfg(target_os = "linux")]
const PREFAULT_MIN: usize = 1 << 20;

/// The pages of a buffer made present by a helper thread, a little ahead of the thread
/// filling it: a fresh page costs its first toucher a fault and the zeroing of 4 KiB, a
/// third of the time of parsing a dense tree; the second core, idle while one thread
/// parses, takes that cost instead. The kernel only makes the pages present (as
/// `MADV_POPULATE_WRITE` does: nothing is read or written in the buffer), so the
/// filling thread sees the same memory either way. The helper stays at most
/// [`Prefault::AHEAD`] bytes beyond what the filler reports with [`Prefault::filled`], so
/// a buffer reserved far larger than it is filled costs no more memory than before.
///
/// Drop it before the buffer is freed or moved.
pub(crate) struct Prefault {
    #[cfg(target_os = "linux")]
    shared: std::sync::Arc<Progress>,
    #[cfg(target_os = "linux")]
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the filler tells the helper.
#[cfg(target_os = "linux")]
struct Progress {
    stop: std::sync::atomic::AtomicBool,
    filled: std::sync::atomic::AtomicUsize,
}

impl Prefault {
    /// How far ahead of the filler the helper goes.
    pub(crate) const AHEAD: usize = 2 << 20;

    /// Starts making `ptr..ptr + len_bytes` present, step by step, on a thread of its own;
    /// `None` for short ranges or where this does not exist.
    #[cfg(target_os = "linux")]
    pub(crate) fn start<T>(ptr: *const T, len_bytes: usize) -> Option<Prefault> {
        Self::spawn(ptr, len_bytes, 0, 256 << 10)
    }

    /// [`Prefault::start`] for a buffer that will be filled whole by a writer that cannot
    /// report its progress (a one-shot decoder): the helper runs ahead as far as it can.
    #[cfg(target_os = "linux")]
    pub(crate) fn whole<T>(ptr: *const T, len_bytes: usize) -> Option<Prefault> {
        Self::spawn(ptr, len_bytes, len_bytes, 8 << 20)
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn whole<T>(_ptr: *const T, _len_bytes: usize) -> Option<Prefault> {
        None
    }

    /// The helper, told that the first `filled` bytes are filled, making `step` bytes
    /// present at a time.
    #[cfg(target_os = "linux")]
    fn spawn<T>(ptr: *const T, len_bytes: usize, filled: usize, step: usize) -> Option<Prefault> {
        use std::sync::atomic::Ordering;
        const PAGE: usize = 4096;
        if len_bytes < PREFAULT_MIN {
            return None;
        }
        // Whole pages only: the first and last may be shared with other allocations.
        let base = ptr as usize;
        let start = base.next_multiple_of(PAGE);
        let end = (base + len_bytes) / PAGE * PAGE;
        let shared = std::sync::Arc::new(Progress {
            stop: std::sync::atomic::AtomicBool::new(false),
            filled: std::sync::atomic::AtomicUsize::new(filled),
        });
        let progress = shared.clone();
        let thread = std::thread::Builder::new()
            .name("rasdf-prefault".into())
            .spawn(move || {
                let mut at = start;
                while at < end && !progress.stop.load(Ordering::Relaxed) {
                    let limit = (base + progress.filled.load(Ordering::Relaxed) + Self::AHEAD).min(end);
                    if at >= limit {
                        std::thread::park_timeout(std::time::Duration::from_micros(100));
                        continue;
                    }
                    let n = step.min(limit - at);
                    // SAFETY: the range lies inside an allocation the caller owns and keeps
                    // until the `Prefault` is dropped (which joins this thread);
                    // MADV_POPULATE_WRITE only makes its pages present and writable, leaving
                    // the contents as they are (a missing anonymous page reads as zeros
                    // either way). On kernels without it (before 5.14) it fails with
                    // EINVAL: then stop.
                    if unsafe { libc::madvise(at as *mut libc::c_void, n, libc::MADV_POPULATE_WRITE) } != 0 {
                        break;
                    }
                    at += n;
                }
            })
            .ok()?;
        Some(Prefault { shared, thread: Some(thread) })
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn start<T>(_ptr: *const T, _len_bytes: usize) -> Option<Prefault> {
        None
    }

    /// Tells the helper that the first `bytes` of the buffer are filled.
    pub(crate) fn filled(&self, bytes: usize) {
        #[cfg(target_os = "linux")]
        self.shared.filled.store(bytes, std::sync::atomic::Ordering::Relaxed);
        #[cfg(not(target_os = "linux"))]
        let _ = bytes;
    }
}

/// Dropping stops the helper and waits for it.
impl Drop for Prefault {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        {
            self.shared.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            if let Some(t) = self.thread.take() {
                t.thread().unpark();
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The helper never changes what the filler wrote, whether it runs ahead, is told
    /// how far the filling got, or is stopped part-way.
    #[test]
    fn prefault_leaves_the_contents_alone() {
        let n = 4 << 20;
        let mut v: Vec<u64> = Vec::with_capacity(n);
        let helper = Prefault::start(v.as_ptr(), n * 8);
        if cfg!(target_os = "linux") {
            assert!(helper.is_some(), "no helper for 32 MiB");
        }
        for i in 0..n as u64 {
            v.push(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            if i % 4096 == 0
                && let Some(h) = &helper
            {
                h.filled(usize::try_from(i).unwrap() * 8);
            }
        }
        drop(helper);
        assert!(v.iter().enumerate().all(|(i, x)| *x == (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        // Stopped before anything is filled: nothing is left running.
        let w: Vec<u8> = Vec::with_capacity(8 << 20);
        drop(Prefault::start(w.as_ptr(), 8 << 20));
        assert!(Prefault::start(w.as_ptr(), 4096).is_none(), "a helper for one page");
        // Running ahead over the whole buffer while it is filled: the same.
        let mut v: Vec<u64> = Vec::with_capacity(n);
        let helper = Prefault::whole(v.as_ptr(), n * 8);
        assert_eq!(helper.is_some(), cfg!(target_os = "linux"));
        v.extend((0..n as u64).map(|i| i ^ 0x5555));
        drop(helper);
        assert!(v.iter().enumerate().all(|(i, x)| *x == i as u64 ^ 0x5555));
    }
}
