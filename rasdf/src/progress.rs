//! How far a long piece of work has come, for progress bars: [`Progress`].

/// A callback told how far a long piece of work has come: `(done, total)`, called with
/// `(0, total)` when it starts and after each step (a block written, a block checked),
/// from any thread (calls from two threads may arrive out of order). Units are the
/// work's own (bytes of array data for a write, blocks for a check).
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// let last = Arc::new(AtomicU64::new(0));
/// let seen = last.clone();
/// let progress = rasdf::Progress::new(move |done, _total| {
///     seen.store(done, Ordering::Relaxed);
/// });
/// let options = rasdf::write::WriteOptions::default().progress(Some(progress));
/// # let _ = options;
/// ```
#[derive(Clone)]
pub struct Progress {
    inner: std::sync::Arc<ProgressInner>,
}

struct ProgressInner {
    report: Box<dyn Fn(u64, u64) + Send + Sync>,
    done: std::sync::atomic::AtomicU64,
    total: std::sync::atomic::AtomicU64,
}

impl Progress {
    /// A progress told to `report(done, total)`.
    pub fn new(report: impl Fn(u64, u64) + Send + Sync + 'static) -> Progress {
        Progress {
            inner: std::sync::Arc::new(ProgressInner {
                report: Box::new(report),
                done: std::sync::atomic::AtomicU64::new(0),
                total: std::sync::atomic::AtomicU64::new(0),
            }),
        }
    }

    /// Starts (or restarts) the count at 0 of `total`.
    pub fn start(&self, total: u64) {
        use std::sync::atomic::Ordering;
        self.inner.total.store(total, Ordering::Relaxed);
        self.inner.done.store(0, Ordering::Relaxed);
        (self.inner.report)(0, total);
    }

    /// Counts `n` more done.
    pub fn advance(&self, n: u64) {
        use std::sync::atomic::Ordering;
        let total = self.inner.total.load(Ordering::Relaxed);
        let done = self.inner.done.fetch_add(n, Ordering::Relaxed).saturating_add(n).min(total);
        (self.inner.report)(done, total);
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::sync::atomic::Ordering;
        f.debug_struct("Progress")
            .field("done", &self.inner.done.load(Ordering::Relaxed))
            .field("total", &self.inner.total.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
