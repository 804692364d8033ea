//! Pieces made in parallel, used in order: the writers' pipeline.
//!
//! [`in_order`] has workers (jobs on the rayon pool) make numbered pieces (compress a record, say) into
//! buffers that go round, while the calling thread takes the finished pieces in their
//! order (to hash and write them). Unlike a pool working one batch at a time, nobody
//! waits at the end of a batch: a worker starts the next piece as soon as a buffer is
//! free, and the calling thread takes each piece as soon as it and those before it are
//! done. Memory stays at `slots` buffers however many pieces there are.
//!
//! The calling thread is one of the workers: whenever the piece it is to take next is
//! not ready, it makes one itself. So `workers` threads share the cores (no extra thread
//! for the in-order part, which on two cores made three threads take turns on two and
//! cost 10-15 % in the lz4 writer), and the sequential part gets done between pieces.

use std::sync::mpsc;
use std::sync::{Condvar, Mutex, PoisonError};

/// The shared state: which piece is next, the free buffers, and whether to stop.
struct Shared {
    next: usize,
    free: Vec<Vec<u8>>,
    stop: bool,
}

struct Pool {
    state: Mutex<Shared>,
    freed: Condvar,
}

impl Pool {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        // A worker that panicked holds no lock while it runs `make`; the state stays
        // consistent, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next piece to make and a buffer to make it in, or `None` when there is no
    /// more to do. The buffer is taken before the number, so the lowest unfinished
    /// piece always has a buffer and the calling thread can always move on.
    /// With `wait` false, `None` also when no buffer is free now.
    fn claim(&self, pieces: usize, wait: bool) -> Option<(usize, Vec<u8>)> {
        let mut s = self.lock();
        loop {
            if s.stop || s.next >= pieces {
                return None;
            }
            if let Some(buf) = s.free.pop() {
                let n = s.next;
                s.next += 1;
                return Some((n, buf));
            }
            if !wait {
                return None;
            }
            s = self.freed.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn give_back(&self, buf: Vec<u8>) {
        self.lock().free.push(buf);
        self.freed.notify_one();
    }

    fn stop(&self) {
        self.lock().stop = true;
        self.freed.notify_all();
    }
}

/// A piece made: its buffer, and which of its bytes are the piece (or why it is not).
struct Made<L, E> {
    buf: Vec<u8>,
    len: Result<L, E>,
}

/// Stops the workers when the calling thread leaves early (an error from `take`, or a
/// panic), and when a worker panics, so nobody waits for a buffer that will not come.
struct StopOnDrop<'a> {
    pool: &'a Pool,
    always: bool,
}

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        if self.always || std::thread::panicking() {
            self.pool.stop();
        }
    }
}

/// Makes `pieces` pieces on `workers` threads (the calling thread and `workers - 1`
/// jobs on the rayon pool) and hands them to `take` in order.
///
/// `make(n, buf)` makes piece `n` in `buf` (a buffer of an earlier piece, to be reused
/// or grown) and returns how many bytes of it are the piece; `take(bytes)` gets the
/// pieces in order, on the calling thread. At most `slots` buffers exist at a time
/// (at least `workers + 1` are used). The first error, from either side, is returned,
/// and the pieces after it are not made.
pub(crate) fn in_order<E: Send>(
    pieces: usize,
    workers: usize,
    slots: usize,
    make: impl Fn(usize, &mut Vec<u8>) -> Result<usize, E> + Sync,
    mut take: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    in_order_parts(pieces, workers, slots, make, |buf, len| take(&buf[..len]))
}

/// [`in_order`] with pieces that are not simply the start of their buffer: `make`
/// returns a `L` that says where the piece is (several ranges, say), and `take` gets the
/// whole buffer with it.
pub(crate) fn in_order_parts<L: Send, E: Send>(
    pieces: usize,
    workers: usize,
    slots: usize,
    make: impl Fn(usize, &mut Vec<u8>) -> Result<L, E> + Sync,
    mut take: impl FnMut(&[u8], L) -> Result<(), E>,
) -> Result<(), E> {
    let workers = workers.clamp(1, pieces.max(1));
    let slots = slots.max(workers + 1);
    let pool = Pool {
        state: Mutex::new(Shared { next: 0, free: (0..slots).map(|_| Vec::new()).collect(), stop: false }),
        freed: Condvar::new(),
    };
    let (done, finished) = mpsc::channel::<(usize, Made<L, E>)>();
    rayon::in_place_scope(|scope| {
        // The calling thread is one of the workers; the others are jobs on the rayon pool
        // (should none start, this thread makes every piece).
        for _ in 1..workers {
            let done = done.clone();
            let (pool, make) = (&pool, &make);
            scope.spawn(move |_| {
                let _stop_if_panicking = StopOnDrop { pool, always: false };
                while let Some((n, mut buf)) = pool.claim(pieces, true) {
                    let len = make(n, &mut buf);
                    if done.send((n, Made { buf, len })).is_err() {
                        return;
                    }
                }
            });
        }
        // Only the workers hold senders now: if they all end, `recv` says so.
        drop(done);
        let _stop = StopOnDrop { pool: &pool, always: true };
        // Pieces that came before their turn, by number modulo `slots` (at most
        // `slots` are out at a time, all within `slots` of the next one to take).
        let mut early: Vec<Option<Made<L, E>>> = (0..slots).map(|_| None).collect();
        let mut expected = 0;
        while expected < pieces {
            if let Some(Made { buf, len }) = early[expected % slots].take() {
                take(&buf, len?)?;
                pool.give_back(buf);
                expected += 1;
                continue;
            }
            if let Ok((n, made)) = finished.try_recv() {
                early[n % slots] = Some(made);
                continue;
            }
            // The next piece is not ready: make one here meanwhile, if a buffer is free.
            if let Some((n, mut buf)) = pool.claim(pieces, false) {
                let len = make(n, &mut buf);
                early[n % slots] = Some(Made { buf, len });
                continue;
            }
            match finished.recv() {
                Ok((n, made)) => early[n % slots] = Some(made),
                // Every other worker ended without the piece: one panicked, and the
                // scope passes its panic on.
                Err(mpsc::RecvError) => return Ok(()),
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(n: usize) -> Vec<u8> {
        (0..n % 7 + 1).map(|i| (n * 31 + i).to_le_bytes()[0]).collect()
    }

    #[test]
    fn pieces_come_in_order_whatever_finishes_first() {
        for workers in 1..5 {
            for slots in [0, 1, 3, 8] {
                let mut got = Vec::new();
                let r: Result<(), ()> = in_order(
                    40,
                    workers,
                    slots,
                    |n, buf| {
                        // Later pieces finish sooner, to exercise the reordering.
                        std::thread::sleep(std::time::Duration::from_micros(((40 - n) % 5) as u64 * 200));
                        buf.clear();
                        buf.extend_from_slice(&piece(n));
                        buf.extend_from_slice(b"junk past the piece");
                        Ok(piece(n).len())
                    },
                    |bytes| {
                        got.push(bytes.to_vec());
                        Ok(())
                    },
                );
                assert_eq!(r, Ok(()));
                let want: Vec<Vec<u8>> = (0..40).map(piece).collect();
                assert_eq!(got, want, "workers {workers}, slots {slots}");
            }
        }
    }

    #[test]
    fn no_pieces_no_calls() {
        let r: Result<(), ()> = in_order(0, 3, 4, |_, _| panic!("nothing to make"), |_| panic!("nothing to take"));
        assert_eq!(r, Ok(()));
    }

    #[test]
    fn a_making_error_stops_the_rest() {
        let made = std::sync::atomic::AtomicUsize::new(0);
        let mut taken = 0;
        let r = in_order(
            1000,
            2,
            4,
            |n, buf| {
                made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                buf.resize(1, 0);
                if n == 5 { Err(format!("piece {n}")) } else { Ok(1) }
            },
            |_| {
                taken += 1;
                Ok(())
            },
        );
        assert_eq!(r, Err("piece 5".to_string()));
        assert_eq!(taken, 5);
        // Workers stop soon after: at most a buffer's worth beyond the failing piece.
        assert!(made.into_inner() < 20);
    }

    #[test]
    fn a_taking_error_stops_the_workers() {
        let made = std::sync::atomic::AtomicUsize::new(0);
        let r = in_order(
            1000,
            3,
            5,
            |_, buf| {
                made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                buf.resize(1, 0);
                Ok(1)
            },
            |_| Err("disk full"),
        );
        assert_eq!(r, Err("disk full"));
        assert!(made.into_inner() < 20);
    }

    #[test]
    fn a_panicking_worker_does_not_hang_the_caller() {
        let r = std::panic::catch_unwind(|| {
            in_order::<()>(
                100,
                2,
                3,
                |n, buf| {
                    assert!(n != 3, "piece 3 cannot be made");
                    buf.resize(1, 0);
                    Ok(1)
                },
                |_| Ok(()),
            )
        });
        assert!(r.is_err(), "the worker's panic is passed on");
    }
}
