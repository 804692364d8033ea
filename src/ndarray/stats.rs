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

fn contiguous<T: NativeType>(bytes: &[u8], order: ByteOrder) -> Stats {
    let size = std::mem::size_of::<T>();
    bytes
        .par_chunks(PIECE * size)
        .map(|piece| {
            let mut s = Stats::EMPTY;
            for b in piece.chunks_exact(size) {
                s.add(T::decode(b, order).to_f64());
            }
            s
        })
        .reduce(|| Stats::EMPTY, Stats::merge)
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
        let s = match t {
            ScalarType::Int8 => contiguous::<i8>(bytes, order),
            ScalarType::Int16 => contiguous::<i16>(bytes, order),
            ScalarType::Int32 => contiguous::<i32>(bytes, order),
            ScalarType::Int64 => contiguous::<i64>(bytes, order),
            ScalarType::UInt8 => contiguous::<u8>(bytes, order),
            ScalarType::UInt16 => contiguous::<u16>(bytes, order),
            ScalarType::UInt32 => contiguous::<u32>(bytes, order),
            ScalarType::UInt64 => contiguous::<u64>(bytes, order),
            ScalarType::Float16 => contiguous::<half::f16>(bytes, order),
            ScalarType::Float32 => contiguous::<f32>(bytes, order),
            ScalarType::Float64 => contiguous::<f64>(bytes, order),
            ScalarType::Bool8 => contiguous::<bool>(bytes, order),
            ScalarType::Complex64 | ScalarType::Complex128 => return None,
        };
        return Some(s.finish());
    }
    let mut s = Stats::EMPTY;
    a.for_each_f64(|x| s.add(x)).ok()?;
    Some(s.finish())
}
