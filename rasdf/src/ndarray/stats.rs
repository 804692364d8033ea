//! Summary statistics of numeric arrays, computed in parallel over contiguous data.

use rayon::prelude::*;

use super::{ByteOrder, Datatype, NativeType, NdArray, ScalarType};

/// Minimum, maximum and mean of the non-NaN elements, and the number of NaNs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Elements.
    pub count: u64,
    /// NaN elements.
    pub nan: u64,
    /// Smallest non-NaN element (NaN when there is none).
    pub min: f64,
    /// Largest non-NaN element (NaN when there is none).
    pub max: f64,
    /// Sum of the non-NaN elements.
    pub sum: f64,
}

impl Stats {
    const EMPTY: Stats = Stats { count: 0, nan: 0, min: f64::INFINITY, max: f64::NEG_INFINITY, sum: 0.0 };

    fn add(&mut self, x: f64) {
        self.count += 1;
        if x.is_nan() {
            self.nan += 1;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
            self.sum += x;
        }
    }

    fn merge(mut self, o: Stats) -> Stats {
        self.count += o.count;
        self.nan += o.nan;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
        self
    }

    /// Mean of the non-NaN elements (NaN when there is none).
    pub fn mean(&self) -> f64 {
        let n = self.count - self.nan;
        #[allow(clippy::cast_precision_loss)]
        if n == 0 { f64::NAN } else { self.sum / n as f64 }
    }

    fn finish(mut self) -> Stats {
        if self.count == self.nan {
            self.min = f64::NAN;
            self.max = f64::NAN;
        }
        self
    }
}

/// Elements per parallel piece.
const PIECE: usize = 1 << 16;

/// Independent accumulators per piece: no element waits for the previous one's min, max
/// or sum, so the loop vectorizes.
const LANES: usize = 8;

fn contiguous<T: NativeType>(bytes: &[u8], order: ByteOrder) -> Stats {
    let size = std::mem::size_of::<T>();
    if bytes.len() <= PIECE * size {
        // One piece: on this thread (the pool's threads are not started for it).
        return piece_of::<T>(bytes, order);
    }
    let pieces: Vec<Stats> = bytes.par_chunks(PIECE * size).map(|piece| piece_of::<T>(piece, order)).collect();
    // Merged in order, on one thread: a parallel reduce would add the pieces' sums in an
    // order that depends on how the work was split, and the mean could change in its last
    // digits from one run to the next.
    pieces.into_iter().fold(Stats::EMPTY, Stats::merge)
}

/// [`piece_stats`] with the byte order a constant of each loop.
fn piece_of<T: NativeType>(piece: &[u8], order: ByteOrder) -> Stats {
    match order {
        ByteOrder::Little => piece_stats::<T>(piece, ByteOrder::Little),
        ByteOrder::Big => piece_stats::<T>(piece, ByteOrder::Big),
    }
}

/// `$f::<T>(args)` with `T` the Rust type of the element type `$t`; `None` for complex
/// numbers (no statistics).
macro_rules! by_scalar {
    ($t:expr, $f:ident($($arg:expr),*)) => {
        match $t {
            ScalarType::Int8 => Some($f::<i8>($($arg),*)),
            ScalarType::Int16 => Some($f::<i16>($($arg),*)),
            ScalarType::Int32 => Some($f::<i32>($($arg),*)),
            ScalarType::Int64 => Some($f::<i64>($($arg),*)),
            ScalarType::UInt8 => Some($f::<u8>($($arg),*)),
            ScalarType::UInt16 => Some($f::<u16>($($arg),*)),
            ScalarType::UInt32 => Some($f::<u32>($($arg),*)),
            ScalarType::UInt64 => Some($f::<u64>($($arg),*)),
            ScalarType::Float16 => Some($f::<half::f16>($($arg),*)),
            ScalarType::Float32 => Some($f::<f32>($($arg),*)),
            ScalarType::Float64 => Some($f::<f64>($($arg),*)),
            ScalarType::Bool8 => Some($f::<bool>($($arg),*)),
            ScalarType::Complex64 | ScalarType::Complex128 => None,
        }
    };
}

/// The statistics of C-contiguous elements whose bytes come in consecutive pieces of any
/// size (a block as it is decoded): the same numbers, to the last digit, as [`stats`]
/// gives for the same elements whole, for the elements are regrouped into the same
/// pieces and those merged in the same order. Holds at most one piece of elements.
#[derive(Debug, Clone)]
pub struct StatsStream {
    scalar: ScalarType,
    order: ByteOrder,
    /// Bytes still to pass over before the first element.
    skip: usize,
    /// Element bytes still to come.
    left: usize,
    /// The bytes of one piece of [`stats`].
    piece: usize,
    /// The start of a piece, cut where a fed piece ended.
    pending: Vec<u8>,
    acc: Stats,
}

impl StatsStream {
    /// For `len` elements of `scalar` in `order`, starting `offset` bytes into the bytes
    /// to come. `None` for complex numbers (no statistics) and sizes beyond memory.
    pub fn new(scalar: ScalarType, order: ByteOrder, offset: usize, len: usize) -> Option<StatsStream> {
        if matches!(scalar, ScalarType::Complex64 | ScalarType::Complex128) {
            return None;
        }
        let size = scalar.size();
        Some(StatsStream {
            scalar,
            order,
            skip: offset,
            left: len.checked_mul(size)?,
            piece: PIECE * size,
            pending: Vec::new(),
            acc: Stats::EMPTY,
        })
    }

    /// Takes the next `bytes` (bytes before the elements and after them are passed over).
    pub fn feed(&mut self, bytes: &[u8]) {
        let skipped = self.skip.min(bytes.len());
        self.skip -= skipped;
        let bytes = &bytes[skipped..];
        let mut bytes = &bytes[..self.left.min(bytes.len())];
        self.left -= bytes.len();
        if !self.pending.is_empty() {
            let fill = (self.piece - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..fill]);
            bytes = &bytes[fill..];
            if self.pending.len() == self.piece {
                let mut full = std::mem::take(&mut self.pending);
                self.add(&full);
                full.clear();
                self.pending = full;
            }
        }
        let mut whole = bytes.chunks_exact(self.piece);
        for piece in &mut whole {
            self.add(piece);
        }
        self.pending.extend_from_slice(whole.remainder());
    }

    fn add(&mut self, piece: &[u8]) {
        if let Some(s) = by_scalar!(self.scalar, piece_of(piece, self.order)) {
            self.acc = self.acc.merge(s);
        }
    }

    /// The statistics of the elements fed.
    pub fn finish(mut self) -> Stats {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.add(&rest);
        }
        self.acc.finish()
    }
}

#[inline(always)]
fn piece_stats<T: NativeType>(piece: &[u8], order: ByteOrder) -> Stats {
    let size = std::mem::size_of::<T>();
    let rest = piece.len() % (size * LANES);
    let whole = &piece[..piece.len() - rest];
    // Batch by batch without counting NaNs, which leaves a loop of plain minimums,
    // maximums and sums that the compiler vectorizes well (twice as fast on 1 GiB of
    // float64). A NaN element makes its lane's sum NaN: that batch is then gone over again
    // from where it began, counting, and so is the rest of the piece. Without NaNs the two
    // loops are the same operations in the same order, so the numbers are those of the
    // counting loop alone, bit for bit; a piece full of NaNs redoes one batch.
    let mut lanes = Lanes::EMPTY;
    let mut counting = false;
    for batch in whole.chunks(BATCH * size * LANES) {
        if !counting {
            let before = lanes;
            lanes.add::<T, false>(batch, order);
            counting = lanes.sum.iter().any(|s| s.is_nan());
            if counting {
                lanes = before;
            }
        }
        if counting {
            lanes.add::<T, true>(batch, order);
        }
    }
    let mut s = Stats::EMPTY;
    for l in 0..LANES {
        s = s.merge(Stats { count: 0, nan: lanes.nan[l], min: lanes.min[l], max: lanes.max[l], sum: lanes.sum[l] });
    }
    s.count = (whole.len() / size) as u64;
    for b in piece[whole.len()..].chunks_exact(size) {
        s.add(T::decode(b, order).to_f64());
    }
    s
}

/// Groups of `LANES` elements in a batch of [`piece_stats`].
const BATCH: usize = 512;

/// How far ahead of the elements being reduced their bytes are asked for. A mapped file's
/// pages lie anywhere in memory, and the processor's own prefetcher stops at each 4 KiB
/// page's end; asking a page ahead keeps the loads from waiting on memory (1 GiB of
/// float64 from the page cache, two threads: 0.13 -> 0.077 s).
const PREFETCH_AHEAD: usize = 4096;

/// `LANES` independent running minimums, maximums, sums and NaN counts: element `i` of a
/// group goes to lane `i`, so no element waits for the one before it.
#[derive(Clone, Copy)]
struct Lanes {
    min: [f64; LANES],
    max: [f64; LANES],
    sum: [f64; LANES],
    nan: [u64; LANES],
}

impl Lanes {
    const EMPTY: Lanes =
        Lanes { min: [f64::INFINITY; LANES], max: [f64::NEG_INFINITY; LANES], sum: [0.0; LANES], nan: [0; LANES] };

    /// Takes in `bytes`, whole groups of `LANES` elements; with `COUNT_NAN` false, NaNs
    /// are neither counted nor passed over in the sums.
    fn add<T: NativeType, const COUNT_NAN: bool>(&mut self, bytes: &[u8], order: ByteOrder) {
        let size = std::mem::size_of::<T>();
        let Lanes { min, max, sum, nan } = self;
        for g in bytes.chunks_exact(size * LANES) {
            crate::hugepages::prefetch(g.as_ptr().wrapping_add(PREFETCH_AHEAD));
            for l in 0..LANES {
                let x = T::decode(&g[l * size..(l + 1) * size], order).to_f64();
                // f64::min and max already pass over a NaN operand.
                min[l] = min[l].min(x);
                max[l] = max[l].max(x);
                if COUNT_NAN {
                    let is_nan = x.is_nan();
                    nan[l] += u64::from(is_nan);
                    sum[l] += if is_nan { 0.0 } else { x };
                } else {
                    sum[l] += x;
                }
            }
        }
    }
}

/// Statistics of a numeric (or boolean) array; `None` for complex, string and record
/// arrays.
pub fn stats(a: &NdArray<'_>) -> Option<Stats> {
    let Datatype::Scalar(t) = a.datatype else { return None };
    if matches!(t, ScalarType::Complex64 | ScalarType::Complex128) {
        return None;
    }
    if a.is_c_contiguous() {
        let bytes = &a.data()[a.offset..a.offset + a.len() * t.size()];
        let order = a.byteorder;
        let s = by_scalar!(t, contiguous(bytes, order))?;
        return Some(s.finish());
    }
    let mut s = Stats::EMPTY;
    a.for_each_f64(|x| s.add(x)).ok()?;
    Some(s.finish())
}

/// [`stats`] of the elements `mask` leaves unmasked (C order), as numpy's masked
/// reductions take them; `count` is of those elements.
pub fn stats_unmasked(a: &NdArray<'_>, mask: &[bool]) -> Option<Stats> {
    let Datatype::Scalar(t) = a.datatype else { return None };
    if matches!(t, ScalarType::Complex64 | ScalarType::Complex128) {
        return None;
    }
    let mut s = Stats::EMPTY;
    let mut masked = mask.iter();
    a.for_each_f64(|x| {
        if masked.next() != Some(&true) {
            s.add(x);
        }
    })
    .ok()?;
    Some(s.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statistics one element at a time, in order.
    fn naive(xs: &[f64]) -> Stats {
        let mut s = Stats::EMPTY;
        for &x in xs {
            s.add(x);
        }
        s.finish()
    }

    fn check<T: NativeType + Copy>(xs: &[T], to_bytes: impl Fn(T, ByteOrder) -> Vec<u8>) {
        let expected = naive(&xs.iter().map(|x| x.to_f64()).collect::<Vec<_>>());
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let bytes: Vec<u8> = xs.iter().flat_map(|&x| to_bytes(x, order)).collect();
            let got = contiguous::<T>(&bytes, order).finish();
            assert_eq!((got.count, got.nan), (expected.count, expected.nan), "{} elements", xs.len());
            for (a, b) in [(got.min, expected.min), (got.max, expected.max)] {
                assert!(a == b || (a.is_nan() && b.is_nan()), "min/max {a} vs {b}, {} elements", xs.len());
            }
            // Sums differ only by rounding in another order.
            let tolerance = 1e-9 * expected.sum.abs().max(1.0);
            assert!((got.sum - expected.sum).abs() <= tolerance, "sum {} vs {}", got.sum, expected.sum);
        }
    }

    /// Fed in pieces of any size, from any offset, the streamed statistics are those of
    /// the elements whole, bit for bit.
    #[test]
    fn streamed_statistics_are_the_whole_arrays() {
        let noise = crate::testutil::noise(8 * (3 * PIECE + 77), 5);
        for (scalar, order) in [
            (ScalarType::Float64, ByteOrder::Little),
            (ScalarType::Float32, ByteOrder::Big),
            (ScalarType::Int16, ByteOrder::Little),
            (ScalarType::UInt8, ByteOrder::Big),
        ] {
            let size = scalar.size();
            for (offset, len) in [(0, 3 * PIECE + 5), (3, PIECE - 1), (size, 10), (1, 0)] {
                let bytes = &noise[..offset + len * size + 9];
                let elements = &bytes[offset..offset + len * size];
                let want = match scalar {
                    ScalarType::Float64 => contiguous::<f64>(elements, order),
                    ScalarType::Float32 => contiguous::<f32>(elements, order),
                    ScalarType::Int16 => contiguous::<i16>(elements, order),
                    _ => contiguous::<u8>(elements, order),
                }
                .finish();
                for feed in [1, 7, 4096, PIECE * size - 1, PIECE * size, usize::MAX] {
                    let mut s = StatsStream::new(scalar, order, offset, len).unwrap();
                    for piece in bytes.chunks(feed.min(bytes.len()).max(1)) {
                        s.feed(piece);
                    }
                    let got = s.finish();
                    let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
                    assert!(
                        (got.count, got.nan) == (want.count, want.nan)
                            && same(got.min, want.min)
                            && same(got.max, want.max)
                            && same(got.sum, want.sum),
                        "{scalar:?} offset {offset} len {len} fed {feed}: {got:?} vs {want:?}"
                    );
                }
            }
        }
        assert!(StatsStream::new(ScalarType::Complex64, ByteOrder::Little, 0, 4).is_none());
    }

    #[test]
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss, clippy::cast_possible_wrap)]
    fn lanes_agree_with_one_element_at_a_time() {
        let mut x = 42u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [0, 1, 7, 8, 9, 100, PIECE - 1, PIECE + 13, 3 * PIECE + 5] {
            let f: Vec<f64> = (0..n)
                .map(|i| if next() % 17 == 0 { f64::NAN } else { (next() % 2_000_001) as f64 - 1e6 + i as f64 * 1e-3 })
                .collect();
            check(&f, |v, o| if o == ByteOrder::Little { v.to_le_bytes().to_vec() } else { v.to_be_bytes().to_vec() });
            let g: Vec<f32> = f.iter().map(|&v| v as f32).collect();
            check(&g, |v, o| if o == ByteOrder::Little { v.to_le_bytes().to_vec() } else { v.to_be_bytes().to_vec() });
            let h: Vec<i16> = (0..n).map(|_| next().to_le_bytes()[0] as i16 * 97 - 12000).collect();
            check(&h, |v, o| if o == ByteOrder::Little { v.to_le_bytes().to_vec() } else { v.to_be_bytes().to_vec() });
        }
        // The pieces' sums are added in order, whatever the threads did: here in any other
        // order they round to 0, in order to 1.
        let mut spread = vec![0.0f64; 4 * PIECE];
        for (piece, x) in [1e16, 1.0, -1e16, 1.0].into_iter().enumerate() {
            spread[piece * PIECE] = x;
        }
        let bytes: Vec<u8> = spread.iter().flat_map(|v| v.to_le_bytes()).collect();
        for _ in 0..20 {
            assert_eq!(contiguous::<f64>(&bytes, ByteOrder::Little).sum, 1.0);
        }
        // All NaN: min and max are NaN, the count of NaNs is every element.
        let all_nan = vec![f64::NAN; 20];
        check(
            &all_nan,
            |v, o| if o == ByteOrder::Little { v.to_le_bytes().to_vec() } else { v.to_be_bytes().to_vec() },
        );
        let s = contiguous::<f64>(&all_nan.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(), ByteOrder::Little);
        assert_eq!((s.count, s.nan), (20, 20));
        assert!(s.finish().min.is_nan());
    }

    #[test]
    #[allow(clippy::cast_precision_loss)]
    fn the_loop_without_nan_counting_gives_the_counting_loops_numbers_and_hands_over_on_a_nan() {
        let le = |v: f64, o: ByteOrder| {
            if o == ByteOrder::Little { v.to_le_bytes().to_vec() } else { v.to_be_bytes().to_vec() }
        };
        let ramp: Vec<f64> = (0..PIECE + 5).map(|i| (i as f64).sin() * 1e3 + 0.25).collect();
        // Without NaNs the two passes are the same numbers, bit for bit, lane by lane.
        let bytes: Vec<u8> = ramp.iter().flat_map(|v| v.to_le_bytes()).collect();
        let whole = &bytes[..bytes.len() / (8 * LANES) * (8 * LANES)];
        let (mut fast, mut counting) = (Lanes::EMPTY, Lanes::EMPTY);
        fast.add::<f64, false>(whole, ByteOrder::Little);
        counting.add::<f64, true>(whole, ByteOrder::Little);
        let bits = |l: &Lanes| (l.nan, l.min.map(f64::to_bits), l.max.map(f64::to_bits), l.sum.map(f64::to_bits));
        assert_eq!(bits(&fast), bits(&counting));
        // One NaN anywhere (first, in a lane's middle, in a later batch, last of the groups,
        // in the rest after them) is counted and left out of the sum.
        for at in [0, 7, 8, 1000, 8 * LANES * BATCH + 3, PIECE - 1, PIECE + 4] {
            let mut xs = ramp.clone();
            xs[at] = f64::NAN;
            check(&xs, le);
            let bytes: Vec<u8> = xs.iter().flat_map(|v| v.to_le_bytes()).collect();
            let s = piece_stats::<f64>(&bytes, ByteOrder::Little);
            assert_eq!((s.count, s.nan), (xs.len() as u64, 1), "NaN at {at}");
            assert!(!s.sum.is_nan(), "NaN at {at}");
        }
        // Infinities of both signs make a sum NaN with no NaN element: none is counted.
        let mut xs = ramp.clone();
        xs[3] = f64::INFINITY;
        xs[PIECE - 2] = f64::NEG_INFINITY;
        let bytes: Vec<u8> = xs.iter().flat_map(|v| v.to_le_bytes()).collect();
        let s = piece_stats::<f64>(&bytes, ByteOrder::Little);
        assert_eq!((s.nan, s.min, s.max), (0, f64::NEG_INFINITY, f64::INFINITY));
        assert!(s.sum.is_nan());
    }
}
