//! Tests of the codecs of other writers (feature `extra-codecs`): round trips, streams
//! that decode to more or fewer bytes than `data_size` (bombs among them), cut and
//! damaged streams, bytes after the stream, and no panic on any of it.

use super::*;
use crate::blosc;

/// Compressible bytes that are not trivially so.
fn sample(n: usize) -> Vec<u8> {
    (0..n as u64).map(|i| ((i / 7) % 251) as u8 ^ ((i.wrapping_mul(2_654_435_761) >> 29) & 3) as u8).collect()
}

fn hex(parts: &[&str]) -> Vec<u8> {
    let s: String = parts.concat();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The bytes of `XZ_CRC64`: `(i % 251) ^ (i / 1000)` for i below 5000.
fn xz_data() -> Vec<u8> {
    (0..5000u32).map(|i| u8::try_from(i % 251).unwrap() ^ u8::try_from(i / 1000).unwrap()).collect()
}

/// `xz_data()` as Python's `lzma.compress(format=FORMAT_XZ, check=CHECK_CRC64)` writes it.
const XZ_CRC64: &[&str] = &[
    "fd377a585a000004e6d6b4460200210116000000742fe5a3e01387033d5d00000052500a84f99bb28021a969d627e03e",
    "065a5f048d53d404ba39570509c15524de9db871593160a19ff96f4973f2c8ea8cba1a8b29692180fe338366af466dec",
    "9e898a0b83f03c0e898e3fed5fe79e90d91cff32f4b2e03951b2d21415b4c571badb06e3799a9fbb38c1b000ac930baa",
    "0619031208155b9bc848f0322efe2da087c8f0a4e0d251eb8d675692b24d84c5f18631df6a625bc2792dd9f73c73ba74",
    "7407d83ca9562224a166f85a845f3067d2f64b492e7f20ebdbf8100e947877c73f6befb4cd95e26ff6446e06cf0b821a",
    "cbdb7af0578d98ff90c03ee6c1124175ee039ea8e87a0491b771a3913f14ccd0a3ff0d8b57ff6c8ca9a7e42a8549db65",
    "aab7d41a50e47e4cfe06f55f60ca9fa01fa3093d5f4ccf513df437f71e0e95bf0369d76397fe8e81c73e44f618026144",
    "6c62b7adaa60d7e1eb5621c8d8367ea81c3d7843b29d6ecba696affeab3fa2bdbfabb4284da8b5106ea0e300da9d835c",
    "7d339fef22a3dff3e949f165108e8d04298832cfe130defc28d554b507f695b2677f3e63e35e0210c262b15c5fb4e5a8",
    "d0956839eaaad759d96a9c9cf85fcf1c4a6b43fe88777c48dff5e9a1dfaa39de487278b0250cd8eb0ea10db95092c8cd",
    "10f5991d870a8303146e5a2178d022b07c409c102293e2eacf59214365ce29b6cc8abc98dcfcaef74b271428a70f44b6",
    "b830d33220549947b971646cae5b24052d59d3232e9a88c36d7ad944e728adec41c1c3e93ccad6de1c93b3acac4e81d2",
    "b3c4e6ed2ddae69042348674bb80eba6db0688cbb7801bbb0568d0f12a869b801b408313d283946600eddd8aa92c2e40",
    "91d4062fb64eb6f153d623c465a91878a651ece0b0791b5405d4bff7748c3bfad90df5caf30928545dcc84f8050a9c7a",
    "6abfe9c334b620e96c40fff36c15a6b4c7f8f7d499efb863e571ff966be37fcc4135fcda61d448d76e889a574d36f17c",
    "b85b69a71f11437f916d93992598fa2f7649a2c2bb91cddf53ff9a423e354090452d2aaadc03c5c0f7541105e785a8b2",
    "e567af53a13bbdc26e63e4bb950ac08addca453f3d9ebafb5098374f3967133842901dc29096e0cb27e11da8b16e3a7c",
    "18c359c271d4b3572184f87dde50d382408f23a4d9c39a6a6135ee88a8c429ff1c16b29b6d69f510111bef9600000000",
    "5f5bd9b2e32636d00001d906882700002ba2cb6cb1c467fb020000000004595a",
];

/// 1 MiB of zeros, xz (CRC64): a bomb for a small `data_size`.
const XZ_ZEROS: &[&str] = &[
    "fd377a585a000004e6d6b4460200210116000000742fe5a3efffff00d95d00006ffdffffa3b7ff473e481572396151b8",
    "9228e6a38607f9eee41e82d32fc53a3c014bb17ec98a8a4d2fa30dd97fa6e38c231153e05918c5758ae277f8b6947f0c",
    "6ac0de744964e2e95c53b204d8f7440cab5f0d6d46e9e5c37688b79657acb64de1691d6ffb4b88106c42cb883f5c008f",
    "d04eaf262894711f3d8f24e1709ea7235fec28cb85d195988a7e2a91f22775f719c006984d98fdd8afd5900fc42553f8",
    "f591363105a5b0ee6fc1704d470cd19111aaad601dbaceb127185c5986e9665258bee976ac59e4e55b0508f9c7daadfc",
    "fb522af7e495250000000000c2f6ba3ea2706b600001f5018080400079977f47b1c467fb020000000004595a",
];

/// `decode` of every cut of `stored` and of every bit flip (every byte's low and high
/// bit) returns, without panicking.
fn no_panic(codec: Compression, stored: &[u8], n: u64) {
    for cut in 0..stored.len() {
        let _ = decode(codec, &stored[..cut], n);
    }
    for at in 0..stored.len() {
        for bit in [0x01, 0x80] {
            let mut s = stored.to_vec();
            s[at] ^= bit;
            let _ = decode(codec, &s, n);
        }
    }
}

/// The verdicts every codec owes: exact size, one byte fewer (too long), one more
/// (too short), cut in half, and bytes after the stream.
fn verdicts(codec: Compression, stored: &[u8], data: &[u8]) {
    let n = data.len() as u64;
    assert!(decode(codec, stored, n).unwrap() == data, "{codec}: round trip");
    assert!(matches!(decode(codec, stored, n - 1), Err(BlockError::DecodedTooLong { .. })), "{codec}: too long");
    assert!(matches!(decode(codec, stored, n + 1), Err(BlockError::DecodedTooShort { .. })), "{codec}: too short");
    assert!(decode(codec, &stored[..stored.len() / 2], n).is_err(), "{codec}: cut in half");
    assert!(decode(codec, &stored[..stored.len() - 1], n).is_err(), "{codec}: last byte cut");
    let longer = [stored, b"tail"].concat();
    assert!(decode(codec, &longer, n).is_err(), "{codec}: bytes after the stream");
}

#[test]
fn labels_names_and_display() {
    for (label, c, shown) in [
        (*b"zstd", Compression::Zstd, "zstd"),
        (*b"lz4f", Compression::Lz4Frame, "lz4f"),
        (*b"blsc", Compression::Blosc, "blsc"),
        (*b"bls2", Compression::Blosc2, "bls2"),
        (*b"bsc2", Compression::Bsc2, "bsc2"),
        (*b"xz\0\0", Compression::Xz, "xz"),
    ] {
        assert_eq!(Compression::from_label(label), c);
        assert_eq!(c.label(), label);
        assert_eq!(c.to_string(), shown);
    }
    assert_eq!(Compression::from_name("zstd"), Some(Compression::Zstd));
    assert_eq!(Compression::from_name("blsc"), Some(Compression::Blosc));
    assert_eq!(Compression::from_name("lz4f"), None, "read only");
    assert!(Compression::Zstd.writable() && Compression::Blosc.writable() && !Compression::Xz.writable());
    assert_eq!(encode(Compression::Xz, b"x"), Err(BlockError::NotWritten(Compression::Xz)));
    let other = Compression::from_label(*b"zfp\0");
    assert_eq!(encode(other, b"x"), Err(BlockError::UnknownCompression(other)));
    for (from, to) in [
        (Compression::Lz4Frame, Compression::Lz4),
        (Compression::Blosc2, Compression::Blosc),
        (Compression::Bsc2, Compression::Blosc),
        (Compression::Xz, Compression::Bzp2),
        (Compression::Zstd, Compression::Zstd),
        (other, other),
    ] {
        assert_eq!(from.rewritten_as(), to);
    }
}

#[test]
fn zstd_round_trips_and_refuses_what_does_not_fit() {
    for data in [sample(100_000), Vec::new(), vec![7u8; 1]] {
        let z = encode(Compression::Zstd, &data).unwrap();
        assert!(decode(Compression::Zstd, &z, data.len() as u64).unwrap() == data);
    }
    let data = sample(100_000);
    let z = encode(Compression::Zstd, &data).unwrap();
    verdicts(Compression::Zstd, &z, &data);
    // Another frame after the first decodes too, so it must fit.
    let two = [&z[..], &encode(Compression::Zstd, b"more").unwrap()].concat();
    assert!(matches!(decode(Compression::Zstd, &two, 100_000), Err(BlockError::DecodedTooLong { .. })));
    assert!(decode(Compression::Zstd, &two, 100_004).unwrap()[100_000..] == *b"more");
    // A bomb: 64 MiB of zeros in a few kilobytes stops at data_size.
    let bomb = encode(Compression::Zstd, &vec![0u8; 64 << 20]).unwrap();
    assert!(bomb.len() < 10_000);
    assert!(matches!(decode(Compression::Zstd, &bomb, 1024), Err(BlockError::DecodedTooLong { .. })));
    assert!(matches!(decode(Compression::Zstd, b"garbage!", 8), Err(BlockError::Corrupt { .. })));
    no_panic(Compression::Zstd, &encode(Compression::Zstd, &sample(3000)).unwrap(), 3000);
}

#[test]
fn zstd_levels_read_back_the_same() {
    let data = sample(50_000);
    for level in [1, 9] {
        let z = encode_items(Compression::Zstd, &data, 4, Some(level)).unwrap();
        assert!(decode(Compression::Zstd, &z, 50_000).unwrap() == data, "level {level}");
    }
}

#[test]
fn lz4_frames_of_each_kind_round_trip() {
    use std::io::Write;
    let data = sample(300_000);
    let frame = |info: lz4_flex::frame::FrameInfo, data: &[u8]| {
        let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    };
    let plain = lz4_flex::frame::FrameInfo::new();
    let linked = lz4_flex::frame::FrameInfo::new()
        .block_mode(lz4_flex::frame::BlockMode::Linked)
        .content_checksum(true)
        .block_checksums(true)
        .content_size(Some(data.len() as u64));
    for info in [plain.clone(), linked.clone()] {
        verdicts(Compression::Lz4Frame, &frame(info, &data), &data);
    }
    // A wrong content checksum.
    let mut f = frame(linked, &data);
    let last = f.len() - 1;
    f[last] ^= 1;
    assert!(matches!(decode(Compression::Lz4Frame, &f, data.len() as u64), Err(BlockError::Corrupt { .. })));
    let bomb = frame(plain.clone(), &vec![0u8; 16 << 20]);
    assert!(matches!(decode(Compression::Lz4Frame, &bomb, 4096), Err(BlockError::DecodedTooLong { .. })));
    no_panic(Compression::Lz4Frame, &frame(plain, &sample(2000)), 2000);
}

#[test]
fn an_lz4_frame_under_the_lz4_label_reads_as_asdf_jl_means_it() {
    // ASDF.jl's `:frame` layout labels its LZ4 frames `lz4\0`: the frame's magic number
    // tells them from the reference's records, by every way of decoding a block.
    let data = sample(300_000);
    let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
    std::io::Write::write_all(&mut e, &data).unwrap();
    let frame = e.finish().unwrap();
    assert_eq!(frame[..4], [0x04, 0x22, 0x4d, 0x18]);
    verdicts(Compression::Lz4, &frame, &data);
    let n = data.len() as u64;
    let mut pieces = Vec::new();
    decode_pieces::<BlockError>(Compression::Lz4, &frame, n, |p| {
        pieces.extend_from_slice(p);
        Ok(())
    })
    .unwrap();
    assert!(pieces == data);
    let released = std::sync::Mutex::new(0..0);
    let release = |r: std::ops::Range<usize>| *released.lock().unwrap() = r;
    assert!(decode_releasing(Compression::Lz4, &frame, n, Some(&release)).unwrap() == data);
    assert_eq!(*released.lock().unwrap(), 0..frame.len());
    // The reference's records still read as records.
    assert!(decode(Compression::Lz4, &encode(Compression::Lz4, &data).unwrap(), n).unwrap() == data);
    no_panic(Compression::Lz4, &frame[..2000.min(frame.len())], n);
}

#[test]
fn xz_streams_decode_with_their_check() {
    let data = xz_data();
    let x = hex(XZ_CRC64);
    verdicts(Compression::Xz, &x, &data);
    // Two streams, and stream padding after them, as liblzma reads them for ASDF.jl.
    let two = [&x[..], &x[..], &[0u8; 4][..]].concat();
    assert!(decode(Compression::Xz, &two, 10_000).unwrap() == [&data[..], &data[..]].concat());
    // The check: a flipped byte of the CRC64 (just before the index).
    let mut bad = x.clone();
    let at = x.len() - 12 - 12 - 8;
    bad[at] ^= 1;
    assert!(decode(Compression::Xz, &bad, 5000).is_err(), "a wrong CRC64");
    let bomb = hex(XZ_ZEROS);
    assert!(matches!(decode(Compression::Xz, &bomb, 4096), Err(BlockError::DecodedTooLong { .. })));
    assert!(decode(Compression::Xz, &bomb, 1 << 20).unwrap().iter().all(|&b| b == 0));
    no_panic(Compression::Xz, &x, 5000);
}

/// AbacusSummit's pieces: each `[u32 BE length][c-blosc1 buffer]`.
fn abacus_pieces(data: &[u8], piece: usize, typesize: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for p in data.chunks(piece) {
        let b = blosc::encode_blosc1(p, typesize, 1).unwrap();
        out.extend_from_slice(&u32::try_from(b.len()).unwrap().to_be_bytes());
        out.extend_from_slice(&b);
    }
    out
}

#[test]
fn blsc_round_trips_one_buffer_for_every_item_size() {
    let data = sample(700_001);
    for ts in [1, 2, 3, 4, 8, 16, 300] {
        let b = encode_items(Compression::Blosc, &data, ts, None).unwrap();
        assert!(b.len() < data.len() / 2, "typesize {ts}: {} bytes", b.len());
        assert_eq!(b[0], 2, "c-blosc1 format version");
        assert_eq!(b[3], u8::try_from(ts).unwrap_or(1), "typesize in the header");
        verdicts(Compression::Blosc, &b, &data);
    }
    // Nothing, one byte, and noise (stored whole after the header: memcpyed).
    for data in [Vec::new(), vec![9], crate::samples::noise(5000, 3)] {
        let b = encode_items(Compression::Blosc, &data, 8, None).unwrap();
        assert!(decode(Compression::Blosc, &b, data.len() as u64).unwrap() == data);
    }
    let noise = encode_items(Compression::Blosc, &crate::samples::noise(5000, 3), 8, None).unwrap();
    assert_eq!((noise.len(), noise[2] & 0x02), (5016, 0x02));
}

#[test]
fn blsc_reads_abacus_pieces() {
    let data = sample(1_000_003);
    let stored = abacus_pieces(&data, 1 << 18, 4);
    assert_eq!(stored[0], 0, "a piece's length starts with 0");
    verdicts(Compression::Blosc, &stored, &data);
    // Nothing at all is no piece: zero bytes.
    assert!(decode(Compression::Blosc, &[], 0).unwrap().is_empty());
    // A piece whose length is not its buffer's.
    let mut wrong = stored.clone();
    wrong[3] = wrong[3].wrapping_add(1);
    assert!(matches!(decode(Compression::Blosc, &wrong, data.len() as u64), Err(BlockError::Corrupt { .. })));
    no_panic(Compression::Blosc, &abacus_pieces(&sample(3000), 1000, 4), 3000);
}

#[test]
fn blosc_bombs_are_refused_before_decoding() {
    // A buffer that says it holds 2 GiB (blocks of zero runs, a few bytes each).
    let mut b = blosc::encode(&vec![0u8; 1 << 20], 1, 1 << 16, blosc::BloscCodec::Lz4, false);
    b[4..8].copy_from_slice(&i32::MAX.to_le_bytes());
    for c in [Compression::Blosc, Compression::Blosc2] {
        assert!(matches!(decode(c, &b, 1 << 20), Err(BlockError::DecodedTooLong { .. })), "{c}");
    }
    // Pieces that say more than data_size, however few bytes they take.
    let pieces = abacus_pieces(&vec![0u8; 4 << 20], 1 << 20, 1);
    assert!(pieces.len() < 4096);
    assert!(matches!(decode(Compression::Blosc, &pieces, 1 << 20), Err(BlockError::DecodedTooLong { .. })));
}

#[test]
fn blosc2_chunks_read_as_bls2_and_bsc2() {
    let data = sample(200_000);
    for codec in [blosc::BloscCodec::Zstd, blosc::BloscCodec::Lz4, blosc::BloscCodec::Zlib, blosc::BloscCodec::None] {
        let chunk = blosc::encode(&data, 4, 32 << 10, codec, true);
        verdicts(Compression::Blosc2, &chunk, &data);
        assert!(decode(Compression::Bsc2, &chunk, data.len() as u64).unwrap() == data);
    }
    no_panic(Compression::Blosc2, &blosc::encode(&sample(3000), 4, 1024, blosc::BloscCodec::Lz4, true), 3000);
}

#[test]
fn new_codecs_decode_in_pieces_and_release_as_the_others() {
    let data = sample(100_000);
    for codec in [Compression::Zstd, Compression::Blosc] {
        let enc = encode_items(codec, &data, 4, None).unwrap();
        let pieces = tests::joined(|sink| decode_pieces(codec, &enc, data.len() as u64, sink)).unwrap();
        assert!(pieces == data, "{codec}");
        let released = std::sync::Mutex::new(Vec::new());
        let record = |r: std::ops::Range<usize>| released.lock().unwrap().push(r);
        assert!(decode_releasing(codec, &enc, data.len() as u64, Some(&record)).unwrap() == data);
        assert_eq!(released.into_inner().unwrap().iter().map(|r| r.end).max(), Some(enc.len()), "{codec}");
    }
}
