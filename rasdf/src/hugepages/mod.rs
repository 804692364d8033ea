//! Memory advice for large buffers: transparent huge pages, pages made present ahead
//! of the thread filling them ([`Prefault`]), pages given back ([`release`]), and cache
//! lines fetched ahead of a thread reading them ([`prefetch`]).
//!
//! A buffer of hundreds of MiB filled for the first time costs one page fault per
//! 4 KiB page; on systems that give huge pages only where asked (`madvise` mode, the
//! common default) rasdf asks for its large buffers (decoded blocks, a big tree's node
//! arena), so they fault in 2 MiB at a time. Advice only: nothing changes when the
//! kernel declines.
//!
//! The advice is Linux's `madvise` (`linux.rs`), with the feature `linux-tuning`;
//! elsewhere, or without it, every call does nothing (`portable.rs`). Either way the
//! program reads and writes the same bytes.

#[cfg(all(target_os = "linux", feature = "linux-tuning"))]
mod linux;
#[cfg(all(target_os = "linux", feature = "linux-tuning"))]
pub(crate) use linux::{Prefault, advise, release};

#[cfg(not(all(target_os = "linux", feature = "linux-tuning")))]
mod portable;
#[cfg(not(all(target_os = "linux", feature = "linux-tuning")))]
pub(crate) use portable::{Prefault, advise, release};

/// Whether [`release`] gives pages back here (else it does nothing, and a caller need
/// not arrange to call it while it works).
pub(crate) const RELEASES: bool = cfg!(all(target_os = "linux", feature = "linux-tuning"));

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
        assert_eq!(helper.is_some(), RELEASES, "a helper for 32 MiB where the advice exists");
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
        assert_eq!(helper.is_some(), RELEASES);
        v.extend((0..n as u64).map(|i| i ^ 0x5555));
        drop(helper);
        assert!(v.iter().enumerate().all(|(i, x)| *x == i as u64 ^ 0x5555));
    }

    /// A helper that finds no free worker (a pool of one thread, busy with the filler)
    /// is cancelled by the drop before it starts: nothing waits for it.
    #[test]
    fn a_helper_that_never_starts_does_not_hold_up_the_filler() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        pool.install(|| {
            let v: Vec<u64> = Vec::with_capacity(1 << 20);
            let helper = Prefault::start(v.as_ptr(), 8 << 20);
            drop(helper);
        });
    }
}
