//! `ArrayRef::rows` on local files: an lz4 array's rows decoded from the records that
//! hold them alone, the same bytes as the whole array's; `None` where the whole array is
//! to be read; the records decoded last kept for the next rows.

use rasdf_testkit as common;
use rasdf_testkit::lz4_file;

use rasdf::OpenOptions;
use rasdf::block::Compression;
use rasdf::file::StorageInfo;

/// The 4-byte words of rows `rows` of a 1-D float32 array read by `rows`.
fn words(file: &rasdf::AsdfFile, rows: std::ops::Range<usize>) -> Option<Vec<u32>> {
    let (bytes, shape) = file.array_at(file.get("data").unwrap()).rows(rows.clone()).unwrap()?;
    assert_eq!(shape, vec![rows.len()]);
    Some(bytes.chunks(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect())
}

/// Noise from `seed` (lz4 barely shrinks it, so records keep their size).
fn noise(seed: usize, out: &mut [u8]) {
    let mut x = (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for b in out {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x.to_le_bytes()[0];
    }
}

#[test]
fn lz4_rows_are_the_whole_arrays_rows() {
    let dir = common::temp_dir("rows-lz4");
    let path = dir.join("f.asdf");
    // 6 records of 256 KiB, the last 12 bytes short.
    let all = lz4_file::lz4_records_file(&path, 6, 256 << 10, &noise);
    let file = OpenOptions::new().open(&path).unwrap();
    let per = (256 << 10) / 4;
    let n = all.len();
    for rows in [0..16, per - 3..per + 3, n - 16..n, 0..n, 2 * per..4 * per + 1, n - 1..n, 5..5] {
        assert!(words(&file, rows.clone()).unwrap() == all[rows.clone()], "rows {rows:?}");
    }
    assert!(file.array_at(file.get("data").unwrap()).rows(n - 1..n + 1).is_err(), "rows past the end");
    // The whole array after: the same, and `rows` now leaves it to the decoded block.
    let whole: Vec<u32> = file.array("data").unwrap().read::<f32>().unwrap().iter().map(|x| x.to_bits()).collect();
    assert!(whole == all);
    assert!(words(&file, 0..16).is_none());
    // Checksums to verify: the whole block is read.
    let checked = OpenOptions::new().verify_checksums(true).open(&path).unwrap();
    assert!(words(&checked, 0..16).is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lz4_rows_decode_only_their_records() {
    let dir = common::temp_dir("rows-lz4-damaged");
    let path = dir.join("f.asdf");
    let all = lz4_file::lz4_records_file(&path, 4, 256 << 10, &noise);
    // Swap the decoded lengths of the last two records (4 MiB and 12 bytes less): the
    // framing still adds up, but neither decodes to the length its header says.
    let mut bytes = std::fs::read(&path).unwrap();
    let data_at = bytes.windows(4).position(|w| w == b"\xd3BLK").unwrap() + 54;
    let mut at = data_at;
    let mut starts = Vec::new();
    for _ in 0..4 {
        starts.push(at);
        at += 4 + u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    }
    let (third, fourth) = (starts[2] + 4, starts[3] + 4);
    let a: [u8; 4] = bytes[third..third + 4].try_into().unwrap();
    let b: [u8; 4] = bytes[fourth..fourth + 4].try_into().unwrap();
    assert_ne!(a, b);
    bytes[third..third + 4].copy_from_slice(&b);
    bytes[fourth..fourth + 4].copy_from_slice(&a);
    std::fs::write(&path, &bytes).unwrap();
    let file = OpenOptions::new().open(&path).unwrap();
    let per = (256 << 10) / 4;
    // Rows of the first two records read; the last two's fail as the whole block does
    // (`None`: the caller reads the whole array and reports its error).
    assert!(words(&file, 0..per * 2).unwrap() == all[..per * 2]);
    assert!(words(&file, per + 5..per + 6).unwrap() == all[per + 5..per + 6]);
    assert!(words(&file, per * 2 + 5..per * 2 + 6).is_none());
    assert!(words(&file, per * 3..per * 3 + 10).is_none());
    assert!(file.array("data").and_then(|a| a.read::<f32>()).is_err());
    // A framing that does not add up (the second record's length one too long): rows of
    // the records walked before it read, those at or past it `None`. (The headers are
    // walked as far as the rows asked for: a remote file's are fetched, a request a
    // round; mapped, every header is read first.)
    let mut cut = std::fs::read(&path).unwrap();
    let second = data_at + 4 + u32::from_be_bytes(cut[data_at..data_at + 4].try_into().unwrap()) as usize;
    let l = u32::from_be_bytes(cut[second..second + 4].try_into().unwrap()) + 1;
    cut[second..second + 4].copy_from_slice(&l.to_be_bytes());
    std::fs::write(&path, &cut).unwrap();
    let file = OpenOptions::new().open(&path).unwrap();
    assert!(words(&file, 0..16).unwrap() == all[..16]);
    assert!(words(&file, per * 3..per * 3 + 10).is_none());
    let mapped = OpenOptions::new().memmap(true).open(&path).unwrap();
    assert!(words(&mapped, 0..16).is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rows_of_other_arrays_are_left_to_the_whole_array() {
    // Uncompressed (mapped), zlib and bzp2 blocks, inline data: `None`, on every fixture
    // array that is not lz4; lz4 arrays' rows are the whole array's.
    let mut lz4_seen = 0;
    for path in common::asdf_files_in(&["pyasdf", "reference_files"]) {
        let Ok(file) = OpenOptions::new().open(&path) else { continue };
        let Ok(arrays) = rasdf_testkit::listing(&file) else { continue };
        for a in arrays {
            let node = file.get(&a.path).unwrap();
            let Some(&rows) = a.shape.as_slice().first() else { continue };
            let got = file.array_at(node).rows(0..rows.min(3));
            let lz4 = matches!(a.storage, StorageInfo::Block { compression: Compression::Lz4, .. });
            match got {
                Ok(Some((bytes, _))) => {
                    assert!(lz4, "{}: {}", path.display(), a.path);
                    lz4_seen += 1;
                    let whole = OpenOptions::new().open(&path).unwrap();
                    let array = whole.array(&a.path).unwrap().read_dyn().unwrap();
                    assert!(array.is_c_contiguous());
                    let expected = &array.data()[array.offset..array.offset + bytes.len()];
                    assert_eq!(bytes, expected, "{}: {}", path.display(), a.path);
                }
                // An lz4 array not read alone: not C-contiguous, or 0-d.
                Ok(None) => assert!(!lz4 || !file.array(&a.path).unwrap().read_dyn().unwrap().is_c_contiguous()),
                Err(e) => panic!("{}: {}: {e}", path.display(), a.path),
            }
        }
    }
    assert!(lz4_seen >= 1);
}

#[cfg(feature = "extra-codecs")]
#[test]
fn an_lz4_frame_under_the_lz4_label_reads_whole() {
    // ASDF.jl's frame layout: one LZ4 frame labelled `lz4\0`. Its rows are not read
    // alone (no records): `rows` leaves it to the whole array, which reads.
    let dir = common::temp_dir("rows-lz4-frame");
    let path = dir.join("jl.asdf");
    let values: Vec<f32> = (0..100_000).map(|i| (i % 977) as f32).collect();
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
    std::io::Write::write_all(&mut e, &data).unwrap();
    let stored = e.finish().unwrap();
    let mut file = format!(
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.5.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n\
         data: !core/ndarray-1.0.0 {{source: 0, datatype: float32, byteorder: little, shape: [{}]}}\n...\n",
        values.len()
    )
    .into_bytes();
    file.extend_from_slice(b"\xd3BLK\x000\0\0\0\0lz4\0");
    for n in [stored.len(), stored.len(), data.len()] {
        file.extend_from_slice(&(n as u64).to_be_bytes());
    }
    file.extend_from_slice(&[0; 16]);
    file.extend_from_slice(&stored);
    std::fs::write(&path, &file).unwrap();
    let f = OpenOptions::new().open(&path).unwrap();
    assert!(words(&f, 10..20).is_none());
    assert_eq!(f.array("data").unwrap().read::<f32>().unwrap().as_slice().unwrap(), &values[..]);
    let _ = std::fs::remove_dir_all(&dir);
}
