//! Linux's `madvise`: huge pages for large buffers, pages given back, and pages made
//! present ahead of a filler by a helper on the rayon pool.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// Buffers smaller than this are left alone: a huge page may cost up to 2 MiB of
/// resident memory beyond what is used. (At 4 MiB, the node arena of a 440 KB tree
/// already takes ~200 page faults fewer.)
const MIN_LEN: usize = 4 << 20;

/// Advises the kernel to back the whole 2 MiB pages inside `ptr..ptr + len` with huge
/// pages, when `len` is at least [`MIN_LEN`].
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

/// Gives back to the system the whole pages between `from` and `to` (addresses; the
/// partial pages at either end are kept) and returns where the released range ends, the
/// `from` of the next call when a buffer is given back piece by piece. The pages read as
/// zeros afterwards (a file map's: the file's bytes, read again), and count in the
/// process's memory again only once touched.
///
/// # Safety
/// `from..to` must lie inside an allocation the caller owns, and hold nothing that will
/// be read before it is written again (the elements moved out of a vector being drained,
/// say): its contents become zeros.
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

/// Ranges smaller than this are not worth a helper.
const PREFAULT_MIN: usize = 1 << 20;

/// How far ahead of the filler the helper goes.
const AHEAD: usize = 2 << 20;

/// The pages of a buffer made present by a helper, a little ahead of the thread filling
/// it: a fresh page costs its first toucher a fault and the zeroing of 4 KiB, a third of
/// the time of parsing a dense tree; the second core, idle while one thread parses,
/// takes that cost instead. The kernel only makes the pages present (as
/// `MADV_POPULATE_WRITE` does: nothing is read or written in the buffer), so the filling
/// thread sees the same memory either way. The helper stays at most [`AHEAD`] bytes
/// beyond what the filler reports with [`Prefault::filled`], so a buffer reserved far
/// larger than it is filled costs no more memory than before.
///
/// The helper is a job on the rayon pool (`rayon::spawn`), not a thread of its own: where
/// no worker is free it starts late, or, once the drop has cancelled it, not at all (it
/// then touches nothing). The drop waits only for a helper that has started.
///
/// Drop it before the buffer is freed or moved.
pub(crate) struct Prefault {
    shared: Arc<Progress>,
}

/// What the filler and the helper tell each other.
struct Progress {
    stop: AtomicBool,
    filled: AtomicUsize,
    state: Mutex<State>,
    /// Wakes the helper (to stop) and the drop (the helper has ended).
    changed: Condvar,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Queued on the pool, not started.
    Queued,
    /// Running: the buffer must stay until it ends.
    Running,
    /// Ended, or cancelled before it started.
    Over,
}

impl Progress {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Prefault {
    /// Starts making `ptr..ptr + len_bytes` present, step by step, on the rayon pool;
    /// `None` for short ranges.
    pub(crate) fn start<T>(ptr: *const T, len_bytes: usize) -> Option<Prefault> {
        Self::spawn(ptr, len_bytes, 0, 256 << 10)
    }

    /// [`Prefault::start`] for a buffer that will be filled whole by a writer that cannot
    /// report its progress (a one-shot decoder): the helper runs ahead as far as it can.
    pub(crate) fn whole<T>(ptr: *const T, len_bytes: usize) -> Option<Prefault> {
        Self::spawn(ptr, len_bytes, len_bytes, 8 << 20)
    }

    /// The helper, told that the first `filled` bytes are filled, making `step` bytes
    /// present at a time.
    fn spawn<T>(ptr: *const T, len_bytes: usize, filled: usize, step: usize) -> Option<Prefault> {
        const PAGE: usize = 4096;
        if len_bytes < PREFAULT_MIN {
            return None;
        }
        // Whole pages only: the first and last may be shared with other allocations.
        let base = ptr as usize;
        let start = base.next_multiple_of(PAGE);
        let end = (base + len_bytes) / PAGE * PAGE;
        let shared = Arc::new(Progress {
            stop: AtomicBool::new(false),
            filled: AtomicUsize::new(filled),
            state: Mutex::new(State::Queued),
            changed: Condvar::new(),
        });
        let progress = shared.clone();
        rayon::spawn(move || {
            {
                let mut state = progress.state();
                if *state != State::Queued {
                    return;
                }
                *state = State::Running;
            }
            let mut at = start;
            while at < end && !progress.stop.load(Ordering::Relaxed) {
                let limit = (base + progress.filled.load(Ordering::Relaxed) + AHEAD).min(end);
                if at >= limit {
                    // Ahead of the filler: wait a little (woken early by the drop).
                    let state = progress.state();
                    if !progress.stop.load(Ordering::Relaxed) {
                        let _ = progress.changed.wait_timeout(state, Duration::from_micros(100));
                    }
                    continue;
                }
                let n = step.min(limit - at);
                // SAFETY: the range lies inside an allocation the caller owns and keeps
                // until the `Prefault` is dropped (which waits for this helper while it
                // runs); MADV_POPULATE_WRITE only makes its pages present and writable,
                // leaving the contents as they are (a missing anonymous page reads as
                // zeros either way). On kernels without it (before 5.14) it fails with
                // EINVAL: then stop.
                if unsafe { libc::madvise(at as *mut libc::c_void, n, libc::MADV_POPULATE_WRITE) } != 0 {
                    break;
                }
                at += n;
            }
            *progress.state() = State::Over;
            progress.changed.notify_all();
        });
        Some(Prefault { shared })
    }

    /// Tells the helper that the first `bytes` of the buffer are filled.
    pub(crate) fn filled(&self, bytes: usize) {
        self.shared.filled.store(bytes, Ordering::Relaxed);
    }
}

/// Dropping stops the helper: cancels it if it has not started, else waits for it.
impl Drop for Prefault {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let mut state = self.shared.state();
        if *state == State::Queued {
            *state = State::Over;
            return;
        }
        self.shared.changed.notify_all();
        while *state == State::Running {
            state = self.shared.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
    }
}
