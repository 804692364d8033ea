//! MD5 (RFC 1321), the checksum of ASDF blocks.
//!
//! Written here rather than taken from a crate for speed: MD5 is one long chain of
//! dependent steps, so its speed is the chain's length in cycles, and compilers lengthen
//! it. Left to LLVM, each step's sum is reassociated so that the round function is added
//! late (md-5 0.11 ran at 526-528 MiB/s on this project's 2-core AMD EPYC machine, OpenSSL
//! at 625-630). On x86-64 each step's chain is therefore written in a few lines of
//! assembly: everything that does not wait for the newest state word (message word,
//! constant, the older words' share of the round function) is summed beforehand in Rust,
//! and the chain that does wait is 4 instructions (rounds 2 and 3) or 5 (rounds 1 and 4),
//! 4.5 cycles a byte: 653-670 MiB/s on the same machine in the same hour. Other targets
//! use the same steps in plain Rust.
//!
//! Where the processor has AVX-512 (F and VL), each step's chain can be shorter still:
//! one `vpternlogd` makes the round function of any round, so every step waits for 4
//! instructions (`vpternlogd`, `vpaddd`, `vprold`, `vpaddd`), 4 cycles a byte where those
//! take a cycle each. That holds on Intel's cores (859-873 MiB/s against 762-772 for the
//! scalar chain, on a 2-core Xeon VM), not on every processor: on an AMD EPYC the vector
//! chain ran at 530 MiB/s against the scalar's 760. So which chain hashes a long input is
//! chosen by timing both once per process on a small buffer (see [`vector_is_faster`]);
//! the two give the same digest, so the choice changes only the speed.

/// The sine table of RFC 1321 (section 3.4): `floor(abs(sin(i + 1)) * 2^32)`.
const T: [u32; 64] = [
    0xd76a_a478,
    0xe8c7_b756,
    0x2420_70db,
    0xc1bd_ceee,
    0xf57c_0faf,
    0x4787_c62a,
    0xa830_4613,
    0xfd46_9501,
    0x6980_98d8,
    0x8b44_f7af,
    0xffff_5bb1,
    0x895c_d7be,
    0x6b90_1122,
    0xfd98_7193,
    0xa679_438e,
    0x49b4_0821,
    0xf61e_2562,
    0xc040_b340,
    0x265e_5a51,
    0xe9b6_c7aa,
    0xd62f_105d,
    0x0244_1453,
    0xd8a1_e681,
    0xe7d3_fbc8,
    0x21e1_cde6,
    0xc337_07d6,
    0xf4d5_0d87,
    0x455a_14ed,
    0xa9e3_e905,
    0xfcef_a3f8,
    0x676f_02d9,
    0x8d2a_4c8a,
    0xfffa_3942,
    0x8771_f681,
    0x6d9d_6122,
    0xfde5_380c,
    0xa4be_ea44,
    0x4bde_cfa9,
    0xf6bb_4b60,
    0xbebf_bc70,
    0x289b_7ec6,
    0xeaa1_27fa,
    0xd4ef_3085,
    0x0488_1d05,
    0xd9d4_d039,
    0xe6db_99e5,
    0x1fa2_7cf8,
    0xc4ac_5665,
    0xf429_2244,
    0x432a_ff97,
    0xab94_23a7,
    0xfc93_a039,
    0x655b_59c3,
    0x8f0c_cc92,
    0xffef_f47d,
    0x8584_5dd1,
    0x6fa8_7e4f,
    0xfe2c_e6e0,
    0xa301_4314,
    0x4e08_11a1,
    0xf753_7e82,
    0xbd3a_f235,
    0x2ad7_d2bb,
    0xeb86_d391,
];

/// How far ahead of the hash [`Md5::update_copying`] has the bytes fetched: bytes another
/// core has just written (the lz4 writer's records) come in late otherwise.
const PREFETCH_AHEAD: usize = 4096;

/// The state before any input (RFC 1321, section 3.3).
const START: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

/// An MD5 being computed: feed it with [`Md5::update`], read it with [`Md5::finalize`].
#[derive(Clone)]
pub(crate) struct Md5 {
    state: [u32; 4],
    /// Input not yet hashed: always less than a 64-byte block.
    pending: [u8; 64],
    pending_len: usize,
    /// Bytes seen in all.
    len: u64,
}

impl Default for Md5 {
    fn default() -> Self {
        Md5 { state: START, pending: [0; 64], pending_len: 0, len: 0 }
    }
}

impl Md5 {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        self.len = self.len.wrapping_add(bytes.len() as u64);
        if self.pending_len > 0 {
            let take = bytes.len().min(64 - self.pending_len);
            self.pending[self.pending_len..self.pending_len + take].copy_from_slice(&bytes[..take]);
            self.pending_len += take;
            bytes = &bytes[take..];
            if self.pending_len < 64 {
                return;
            }
            compress(&mut self.state, &self.pending);
            self.pending_len = 0;
        }
        let whole = bytes.len() - bytes.len() % 64;
        compress(&mut self.state, &bytes[..whole]);
        let rest = &bytes[whole..];
        self.pending[..rest.len()].copy_from_slice(rest);
        self.pending_len = rest.len();
    }

    /// [`Md5::update`] with `bytes`, copying them into `copy_to` (as long) in the same
    /// pass: the copy costs next to nothing beside the hash, whose speed is its chain of
    /// dependent steps (a separate copy of 122 MB took 18 ms of the 256 MiB lz4 write).
    ///
    /// # Panics
    /// If `copy_to` is not as long as `bytes`.
    pub(crate) fn update_copying(&mut self, bytes: &[u8], copy_to: &mut [u8]) {
        assert_eq!(bytes.len(), copy_to.len(), "a copy as long as the bytes");
        // The bytes that complete a pending block, then whole blocks, then the rest:
        // the same split as `update`, with the copy beside each part.
        let head = if self.pending_len > 0 { bytes.len().min(64 - self.pending_len) } else { 0 };
        copy_to[..head].copy_from_slice(&bytes[..head]);
        self.update(&bytes[..head]);
        let whole = (bytes.len() - head) / 64 * 64;
        let (blocks, rest) = bytes[head..].split_at(whole);
        self.len = self.len.wrapping_add(whole as u64);
        compress_copying::<true>(&mut self.state, blocks, &mut copy_to[head..head + whole]);
        copy_to[head + whole..].copy_from_slice(rest);
        self.update(rest);
    }

    pub(crate) fn finalize(mut self) -> [u8; 16] {
        // A 1 bit, zeros to 56 bytes into a block, then the length in bits, little-endian
        // (RFC 1321, sections 3.1 and 3.2).
        let bits = self.len.wrapping_mul(8);
        let mut tail = [0u8; 128];
        let n = self.pending_len;
        tail[..n].copy_from_slice(&self.pending[..n]);
        tail[n] = 0x80;
        let end = if n < 56 { 64 } else { 128 };
        tail[end - 8..end].copy_from_slice(&bits.to_le_bytes());
        compress(&mut self.state, &tail[..end]);
        let mut out = [0u8; 16];
        for (o, w) in out.chunks_exact_mut(4).zip(self.state) {
            o.copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}

/// The MD5 of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> [u8; 16] {
    let mut m = Md5::new();
    m.update(bytes);
    m.finalize()
}

/// Hashes whole 64-byte blocks (a shorter rest is ignored: callers pass whole blocks).
fn compress(state: &mut [u32; 4], blocks: &[u8]) {
    compress_copying::<false>(state, blocks, &mut []);
}

/// Hashes whole 64-byte blocks and, with `COPY`, copies them into `copy_to` (as long
/// as `blocks`) as it goes.
fn compress_copying<const COPY: bool>(state: &mut [u32; 4], blocks: &[u8], copy_to: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        if blocks.len() >= VECTOR_MIN && vector_is_faster() {
            // SAFETY: vector_is_faster is true only where AVX-512 F and VL were detected.
            unsafe { compress_avx512::<COPY>(state, blocks, copy_to) };
        } else {
            compress_x86_64::<COPY>(state, blocks, copy_to);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    compress_portable::<COPY>(state, blocks, copy_to);
}

/// Inputs at least this long may be hashed by the AVX-512 chain: below it, the one-time
/// timing of both chains (about 50 µs) would not pay for itself.
#[cfg(target_arch = "x86_64")]
const VECTOR_MIN: usize = 1 << 20;

/// Whether the AVX-512 chain is there and faster than the scalar one on this machine:
/// both hash the same 4 KiB (in the first level cache, so no page fault or cache miss
/// falls on either) five times, alternately, and the faster best time wins. Decided once
/// per process.
#[cfg(target_arch = "x86_64")]
fn vector_is_faster() -> bool {
    static FASTER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FASTER.get_or_init(|| {
        if !has_avx512() {
            return false;
        }
        let buf = [0x5au8; 4096];
        let mut best = [std::time::Duration::MAX; 2];
        for _ in 0..5 {
            for (vector, best) in [false, true].into_iter().zip(best.iter_mut()) {
                let mut state = START;
                let t = std::time::Instant::now();
                if vector {
                    // SAFETY: AVX-512 F and VL were detected above.
                    unsafe { compress_avx512::<false>(&mut state, std::hint::black_box(&buf), &mut []) };
                } else {
                    compress_x86_64::<false>(&mut state, std::hint::black_box(&buf), &mut []);
                }
                std::hint::black_box(state);
                *best = (*best).min(t.elapsed());
            }
        }
        best[1] < best[0]
    })
}

/// Whether the processor has what the AVX-512 chain uses: AVX-512 F and VL.
#[cfg(target_arch = "x86_64")]
fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vl")
}

/// One step of the portable version: `a = b + ((a + f + x + t) <<< s)`, with `f` the
/// round's function of `b`, `c` and `d`, as RFC 1321 writes them.
macro_rules! step_portable {
    (F, $a:ident, $b:ident, $c:ident, $d:ident, $xt:expr, $s:literal) => {
        $a = $a.wrapping_add($xt).wrapping_add($d ^ ($b & ($c ^ $d))).rotate_left($s).wrapping_add($b)
    };
    (G, $a:ident, $b:ident, $c:ident, $d:ident, $xt:expr, $s:literal) => {
        // (b & d) | (c & !d): the two never share a bit, so the sum is the same.
        $a = $a.wrapping_add($xt).wrapping_add($c & !$d).wrapping_add($b & $d).rotate_left($s).wrapping_add($b)
    };
    (H, $a:ident, $b:ident, $c:ident, $d:ident, $xt:expr, $s:literal) => {
        $a = $a.wrapping_add($xt).wrapping_add($b ^ $c ^ $d).rotate_left($s).wrapping_add($b)
    };
    (I, $a:ident, $b:ident, $c:ident, $d:ident, $xt:expr, $s:literal) => {
        $a = $a.wrapping_add($xt).wrapping_add($c ^ ($b | !$d)).rotate_left($s).wrapping_add($b)
    };
}

/// One step on x86-64: the part of the step that waits for `b`, the newest word, in
/// assembly, so that it stays as short as written; the rest is summed first, in Rust.
/// `$sum` is `a` plus all that does not wait for `b`, `$f` what the round function
/// starts from, and `$ops` finish the function from `b` (and `x`, an older word).
#[cfg(target_arch = "x86_64")]
macro_rules! chain_x86_64 {
    ($a:ident, $b:ident, $s:literal, $sum:expr, $f:expr, [$($op:literal),+] $(, $x:expr)?) => {{
        let mut sum = $sum;
        let mut f = $f;
        // SAFETY: register arithmetic only: no memory, no stack.
        unsafe {
            core::arch::asm!(
                $($op,)+
                "add {sum:e}, {f:e}",
                concat!("rol {sum:e}, ", $s),
                "add {sum:e}, {b:e}",
                f = inout(reg) f, sum = inout(reg) sum, b = in(reg) $b, $(x = in(reg) $x,)?
                options(pure, nomem, nostack),
            );
        }
        let _ = f;
        $a = sum;
    }};
}

#[cfg(target_arch = "x86_64")]
macro_rules! step_x86_64 {
    // f = d ^ (b & (c ^ d))
    (F, $a:ident, $b:ident, $c:ident, $d:ident, $xt:expr, $s:literal) => {
        chain_x86_64!($a, $b, $s, $a.wrapping_add($xt), $c ^ $d, ["and {f:e}, {b:e}", "xor {f:e}, {x:e}"], $d)
    };
    // g = (b & d) + (c & !d), the second part known before b
    (G, $a:ident, $b:ident, $c:ident, $d:ident, $xt:expr, $s:literal) => {
        chain_x86_64!($a, $b, $s, $a.wrapping_add($xt).wrapping_add($c & !$d), $d, ["and {f:e}, {b:e}"])
    };
    // h = b ^ (c ^ d)
    (H, $a:ident, $b:ident, $c:ident, $d:ident, $xt:expr, $s:literal) => {
        chain_x86_64!($a, $b, $s, $a.wrapping_add($xt), $c ^ $d, ["xor {f:e}, {b:e}"])
    };
    // i = c ^ (b | !d)
    (I, $a:ident, $b:ident, $c:ident, $d:ident, $xt:expr, $s:literal) => {
        chain_x86_64!($a, $b, $s, $a.wrapping_add($xt), !$d, ["or {f:e}, {b:e}", "xor {f:e}, {x:e}"], $c)
    };
}

/// The 64 steps over each block, with `$step` doing one (RFC 1321, section 3.4: the
/// message word, table entry and shift of each step, and the state words turning).
macro_rules! compress_with {
    ($(#[$attr:meta])* [$($qual:tt)*] $name:ident, $step:ident, $word:ty, $add:path) => {
        $(#[$attr])*
        $($qual)* fn $name<const COPY: bool>(state: &mut [$word; 4], blocks: &[u8], copy_to: &mut [u8]) {
            let [mut a, mut b, mut c, mut d] = *state;
            for (i, block) in blocks.chunks_exact(64).enumerate() {
                if COPY {
                    // The copy waits on nothing in the chain, so it runs in its shadow.
                    copy_to[64 * i..64 * i + 64].copy_from_slice(block);
                    crate::hugepages::prefetch(block.as_ptr().wrapping_add(PREFETCH_AHEAD));
                }
                let mut x = [0u32; 16];
                for (w, b) in x.iter_mut().zip(block.chunks_exact(4)) {
                    *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
                let (a0, b0, c0, d0) = (a, b, c, d);
                macro_rules! four {
                    ($f:ident, $t:literal, [$i0:literal, $i1:literal, $i2:literal, $i3:literal], [$s0:literal, $s1:literal, $s2:literal, $s3:literal]) => {
                        $step!($f, a, b, c, d, x[$i0].wrapping_add(T[$t]), $s0);
                        $step!($f, d, a, b, c, x[$i1].wrapping_add(T[$t + 1]), $s1);
                        $step!($f, c, d, a, b, x[$i2].wrapping_add(T[$t + 2]), $s2);
                        $step!($f, b, c, d, a, x[$i3].wrapping_add(T[$t + 3]), $s3);
                    };
                }
                four!(F, 0, [0, 1, 2, 3], [7, 12, 17, 22]);
                four!(F, 4, [4, 5, 6, 7], [7, 12, 17, 22]);
                four!(F, 8, [8, 9, 10, 11], [7, 12, 17, 22]);
                four!(F, 12, [12, 13, 14, 15], [7, 12, 17, 22]);
                four!(G, 16, [1, 6, 11, 0], [5, 9, 14, 20]);
                four!(G, 20, [5, 10, 15, 4], [5, 9, 14, 20]);
                four!(G, 24, [9, 14, 3, 8], [5, 9, 14, 20]);
                four!(G, 28, [13, 2, 7, 12], [5, 9, 14, 20]);
                four!(H, 32, [5, 8, 11, 14], [4, 11, 16, 23]);
                four!(H, 36, [1, 4, 7, 10], [4, 11, 16, 23]);
                four!(H, 40, [13, 0, 3, 6], [4, 11, 16, 23]);
                four!(H, 44, [9, 12, 15, 2], [4, 11, 16, 23]);
                four!(I, 48, [0, 7, 14, 5], [6, 10, 15, 21]);
                four!(I, 52, [12, 3, 10, 1], [6, 10, 15, 21]);
                four!(I, 56, [8, 15, 6, 13], [6, 10, 15, 21]);
                four!(I, 60, [4, 11, 2, 9], [6, 10, 15, 21]);
                a = $add(a, a0);
                b = $add(b, b0);
                c = $add(c, c0);
                d = $add(d, d0);
            }
            *state = [a, b, c, d];
        }
    };
}

#[cfg(target_arch = "x86_64")]
compress_with!([] compress_x86_64, step_x86_64, u32, u32::wrapping_add);

/// One step with AVX-512 on the lowest lane of vector registers: `a` plus all that does not
/// wait for `b` is summed first; the chain that waits is the round function by one
/// `vpternlogd` (its truth table `$imm` indexed by `d`, `b`, `c`: `d` is an older word, so
/// copying it into the destination costs the chain nothing), then an add, a rotation and
/// an add.
#[cfg(target_arch = "x86_64")]
macro_rules! step_avx512 {
    ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $xt:expr, $s:literal) => {{
        let mut sum = add_lanes($a, lane($xt));
        let mut f = $d;
        // SAFETY: register arithmetic only: no memory, no stack. The caller makes sure
        // the processor has AVX-512 F and VL.
        unsafe {
            core::arch::asm!(
                concat!("vpternlogd {f}, {b}, {c}, ", step_avx512!(@imm $f)),
                "vpaddd {sum}, {sum}, {f}",
                concat!("vprold {sum}, {sum}, ", $s),
                "vpaddd {sum}, {sum}, {b}",
                f = inout(xmm_reg) f, sum = inout(xmm_reg) sum, b = in(xmm_reg) $b, c = in(xmm_reg) $c,
                options(pure, nomem, nostack),
            );
        }
        let _ = f;
        $a = sum;
    }};
    // The truth tables, bit `4d + 2b + c` of each being the function of those bits.
    (@imm F) => { "0xb8" }; // (b & c) | (!b & d)
    (@imm G) => { "0xca" }; // (b & d) | (c & !d)
    (@imm H) => { "0x96" }; // b ^ c ^ d
    (@imm I) => { "0x65" }; // c ^ (b | !d)
}

compress_with!(
    /// The 64 steps with the state in the lowest lanes of vector registers
    /// ([`step_avx512`]).
    ///
    /// # Safety
    /// The processor must have AVX-512 F and VL.
    #[cfg(target_arch = "x86_64")]
    [unsafe] compress_avx512_lanes,
    step_avx512,
    core::arch::x86_64::__m128i,
    add_lanes
);

/// `w` in the lowest lane of a vector, the others 0.
#[cfg(target_arch = "x86_64")]
fn lane(w: u32) -> core::arch::x86_64::__m128i {
    // SAFETY: SSE2 is part of x86-64.
    unsafe { core::arch::x86_64::_mm_cvtsi32_si128(w as i32) }
}

/// The lowest lane of `v`.
#[cfg(target_arch = "x86_64")]
fn lane_value(v: core::arch::x86_64::__m128i) -> u32 {
    // SAFETY: SSE2 is part of x86-64.
    unsafe { core::arch::x86_64::_mm_cvtsi128_si32(v) as u32 }
}

/// Lane-wise wrapping sum.
#[cfg(target_arch = "x86_64")]
fn add_lanes(a: core::arch::x86_64::__m128i, b: core::arch::x86_64::__m128i) -> core::arch::x86_64::__m128i {
    // SAFETY: SSE2 is part of x86-64.
    unsafe { core::arch::x86_64::_mm_add_epi32(a, b) }
}

/// [`compress_avx512_lanes`] on a state of plain words.
///
/// # Safety
/// The processor must have AVX-512 F and VL.
#[cfg(target_arch = "x86_64")]
unsafe fn compress_avx512<const COPY: bool>(state: &mut [u32; 4], blocks: &[u8], copy_to: &mut [u8]) {
    let mut lanes = state.map(lane);
    // SAFETY: passed on from the caller.
    unsafe { compress_avx512_lanes::<COPY>(&mut lanes, blocks, copy_to) };
    *state = lanes.map(lane_value);
}

compress_with!(
    #[cfg_attr(target_arch = "x86_64", allow(dead_code, reason = "tested against the x86-64 version"))]
    [] compress_portable,
    step_portable,
    u32,
    u32::wrapping_add
);

impl crate::direct::CopyHasher for Md5 {
    fn update(&mut self, bytes: &[u8]) {
        Md5::update(self, bytes);
    }
    fn update_copying(&mut self, from: &[u8], to: &mut [u8]) {
        Md5::update_copying(self, from, to);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::noise;

    fn hex(d: [u8; 16]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn rfc_1321_test_suite() {
        // RFC 1321, appendix A.5.
        let cases = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(hex(digest(text.as_bytes())), want, "{text:?}");
        }
    }

    #[test]
    fn agrees_with_the_md5_crate_at_every_length_and_split() {
        use md5::Digest;
        let data = noise(4096 + 200, 0x9e37_79b9_7f4a_7c15);
        // Every length around the padding's edges (55, 56, 63, 64 and their multiples),
        // whole and fed in two parts at every split.
        for len in (0..300).chain([1000, 4095, 4096, 4097, 4296]) {
            let want: [u8; 16] = md5::Md5::digest(&data[..len]).into();
            assert_eq!(digest(&data[..len]), want, "length {len}");
            if len < 300 {
                for split in 0..=len {
                    let mut m = Md5::new();
                    m.update(&data[..split]);
                    m.update(&data[split..len]);
                    assert_eq!(m.finalize(), want, "length {len} split at {split}");
                }
            }
        }
    }

    #[test]
    fn a_long_input_hashes_as_the_md5_crate_hashes_it_whichever_chain_is_chosen() {
        // Past VECTOR_MIN, `compress` may take the AVX-512 chain; the digest must not
        // change with the choice, and the pending bytes around it must be kept.
        use md5::Digest;
        let data = noise(3 * 1024 * 1024 + 77, 0x2545_f491_4f6c_dd1d);
        let want: [u8; 16] = md5::Md5::digest(&data).into();
        assert_eq!(digest(&data), want);
        let mut m = Md5::new();
        m.update(&data[..13]);
        m.update(&data[13..]);
        assert_eq!(m.finalize(), want);
    }

    #[test]
    fn hashing_while_copying_gives_the_same_digest_and_a_true_copy() {
        use md5::Digest;
        // Long enough for the AVX-512 chain (VECTOR_MIN) in one of the parts.
        let data = noise((1 << 20) + 300, 0x1234_5678_9abc_def1);
        for (len, splits) in
            [(200, (0..=200).collect::<Vec<_>>()), (data.len(), vec![0, 1, 63, 64, 65, 1000, data.len()])]
        {
            let want: [u8; 16] = md5::Md5::digest(&data[..len]).into();
            for split in splits {
                let mut m = Md5::new();
                let mut copy = vec![0u8; len];
                let (first, second) = copy.split_at_mut(split);
                m.update_copying(&data[..split], first);
                m.update_copying(&data[split..len], second);
                assert_eq!(m.finalize(), want, "length {len} split at {split}");
                assert!(copy == data[..len], "length {len} split at {split}: the copy differs");
            }
        }
        // With the portable steps and the AVX-512 ones (where there), directly.
        let blocks = &data[..64 * 40];
        let mut plain = START;
        compress_portable::<false>(&mut plain, blocks, &mut []);
        let mut copied = START;
        let mut to = vec![0u8; blocks.len()];
        compress_portable::<true>(&mut copied, blocks, &mut to);
        assert_eq!((plain, &to[..]), (copied, blocks));
        #[cfg(target_arch = "x86_64")]
        if has_avx512() {
            let mut vector = START;
            let mut to = vec![0u8; blocks.len()];
            // SAFETY: AVX-512 F and VL were detected just above.
            unsafe { compress_avx512::<true>(&mut vector, blocks, &mut to) };
            assert_eq!((plain, &to[..]), (vector, blocks));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx512_steps_give_what_the_scalar_steps_give() {
        if !has_avx512() {
            eprintln!("skipped: this processor has no AVX-512 F and VL, so the vector chain cannot run here");
            return;
        }
        let data = noise(64 * 50, 0x9e37_79b9_7f4a_7c15);
        for blocks in [0, 1, 2, 50] {
            let mut scalar = START;
            let mut vector = START;
            compress_x86_64::<false>(&mut scalar, &data[..64 * blocks], &mut []);
            // SAFETY: AVX-512 F and VL were detected above.
            unsafe { compress_avx512::<false>(&mut vector, &data[..64 * blocks], &mut []) };
            assert_eq!(scalar, vector, "{blocks} blocks");
        }
    }

    #[test]
    fn the_portable_steps_give_what_the_assembly_gives() {
        // On x86-64 `compress` is the assembly; the portable steps, which other targets
        // use, must agree with it (and so with RFC 1321).
        let data = noise(64 * 50, 0x9e37_79b9_7f4a_7c15);
        let mut asm = START;
        let mut portable = START;
        compress(&mut asm, &data);
        compress_portable::<false>(&mut portable, &data, &mut []);
        assert_eq!(asm, portable);
        assert_ne!(asm, START);
    }
}
