//! The memory advice where there is none (not Linux, or the feature `linux-tuning`
//! off): every call does nothing.

/// Nothing: no advice.
pub(crate) fn advise<T>(_ptr: *const T, _len_bytes: usize) {}

/// Nothing to do: returns `from`, as though no whole page lay in the range.
///
/// # Safety
/// None needed; the same signature as where pages are given back.
pub(crate) unsafe fn release(from: usize, _to: usize) -> usize {
    from
}

/// No helper exists here: [`Prefault::start`] and [`Prefault::whole`] give `None`.
pub(crate) struct Prefault;

impl Prefault {
    pub(crate) fn start<T>(_ptr: *const T, _len_bytes: usize) -> Option<Prefault> {
        None
    }

    pub(crate) fn whole<T>(_ptr: *const T, _len_bytes: usize) -> Option<Prefault> {
        None
    }

    pub(crate) fn filled(&self, _bytes: usize) {}
}

/// Nothing to stop; a drop as where a helper runs, so that callers drop it alike.
impl Drop for Prefault {
    fn drop(&mut self) {}
}
