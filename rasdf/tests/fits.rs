#![allow(clippy::cast_possible_truncation)] // test code on 64-bit hosts
//! ASDF-in-FITS (testdata/fits/, made by tests/python/make_fits_fixtures.py with
//! stdatamodels): the tree and every array as stdatamodels reads them
//! (tests/python/dump_fits.py, in the astro venv); data read in place where it can be;
//! hostile FITS files (cut short, huge axes, an ASDF extension past the end, a `fits:`
//! source naming no HDU) give clear errors, never a panic or an unbounded allocation.

use rasdf_testkit as common;

use std::path::PathBuf;

use rasdf::file::StorageInfo;
use rasdf::fits::FitsError;
use rasdf::ndarray::Element;
use rasdf::{AsdfFile, ErrorKind, Limits, OpenOptions};

fn fixtures() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(common::testdata("fits"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "fits"))
        .collect();
    out.sort();
    assert!(out.len() >= 3, "testdata/fits is missing its fixtures");
    out
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(common::testdata("fits").join(name)).unwrap()
}

/// `bytes` with the first `from` after `after` replaced by `to` (of the same length).
fn patched(bytes: &[u8], after: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let find = |hay: &[u8], needle: &[u8], start: usize| {
        hay[start..].windows(needle.len()).position(|w| w == needle).map(|i| i + start)
    };
    let start = find(bytes, after, 0).unwrap_or_else(|| panic!("{} not found", String::from_utf8_lossy(after)));
    let at = find(bytes, from, start).unwrap_or_else(|| panic!("{} not found", String::from_utf8_lossy(from)));
    let mut out = bytes.to_vec();
    out[at..at + to.len()].copy_from_slice(to);
    out
}

/// A header card `KEYWORD = value`, as astropy writes it (value right-aligned to column 30).
fn card(keyword: &str, value: &str) -> Vec<u8> {
    format!("{keyword:<8}= {value:>20}").into_bytes()
}

#[test]
fn fixtures_match_stdatamodels() {
    let files = fixtures();
    let Some(py) = common::python_astro() else {
        eprintln!("skipped: RASDF_PYTHON_ASTRO is not set (run through .ci/run to compare with stdatamodels)");
        return;
    };
    let out = std::process::Command::new(py)
        .arg(common::root().join("tests/python/dump_fits.py"))
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "dump_fits.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let reference: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for path in &files {
        let f = AsdfFile::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let ours = common::dump::dump_file(&f);
        let theirs = &reference[path.to_str().unwrap()];
        if let Some(d) = common::dump::diff(&ours, theirs, "") {
            panic!("{}: rasdf and stdatamodels differ: {d}", path.display());
        }
    }
}

#[test]
fn jwst_image_reads_in_place_and_converts_dq() {
    let path = common::testdata("fits/jwst_image.fits");
    let f = AsdfFile::open(&path).unwrap();
    let fits = f.fits().expect("a FITS file");
    let names: Vec<String> = fits.hdus().iter().map(|h| h.label()).collect();
    assert_eq!(names, ["PRIMARY", "SCI,1", "DQ,1", "ERR,1", "ASDF,1"]);
    let (asdf, range) = f.fits_extension().unwrap();
    assert_eq!(asdf, 4);
    assert_eq!(
        &f.read_bytes(0..f.len()).unwrap()[..],
        &f.fits_bytes().unwrap()[range.start as usize..range.end as usize]
    );
    assert!(f.blocks().is_empty());

    // SCI: big-endian float32 with no scaling, read in place.
    let sci = f.array("data").unwrap().read_dyn().unwrap();
    let whole = f.fits_bytes().unwrap().as_ptr_range();
    assert!(whole.contains(&sci.data().as_ptr()), "SCI was copied");
    assert_eq!(sci.shape, [3, 4]);
    let values = sci.to_array::<f32>().unwrap();
    assert_eq!(values[[0, 0]], -1.375);
    assert!(values[[1, 2]].is_nan());

    // DQ: BITPIX 32 with BZERO 2^31, uint32 as the tree says.
    let dq = f.array("dq").unwrap().read::<u32>().unwrap();
    assert_eq!(dq.as_slice().unwrap(), &[0, 1, 2, 4, 1 << 31, u32::MAX, 7, 0, 1, 0, 0, 1024]);

    let listing = rasdf_testkit::listing(&f).unwrap();
    let storage: Vec<String> = listing.iter().map(|a| a.storage.to_string()).collect();
    assert_eq!(storage, ["fits:SCI,1 (HDU 1)", "fits:DQ,1 (HDU 2, scaled)", "fits:ERR,1 (HDU 3)"]);
    assert!(matches!(listing[1].storage, StorageInfo::Fits { hdu: 2, in_place: false, .. }));
    assert_eq!(listing[1].datatype.to_string(), "uint32");
    for node in f.arrays().map(|a| a.node()) {
        assert_eq!(f.fits_disagreement(node).unwrap(), None);
    }
    f.check_unchanged().unwrap();

    // The same from bytes in memory.
    let g = OpenOptions::new().from_bytes(std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(g.array("dq").unwrap().read::<u32>().unwrap(), dq);
}

#[test]
fn tables_and_old_image_extensions() {
    let f = AsdfFile::open(common::testdata("fits/jwst_multispec.fits")).unwrap();
    let t = f.array("spec/1/spec_table").unwrap().read_dyn().unwrap();
    assert_eq!(t.shape, [3]);
    let rows: Vec<_> = t.elements().collect();
    let Element::Record(first) = &rows[0] else { panic!("{:?}", rows[0]) };
    assert_eq!(first[0], Element::Float(2.0)); // WAVELENGTH
    let Element::Record(last) = &rows[2] else { panic!() };
    assert_eq!(last[11], Element::UInt((1 << 31) + 1)); // DQ, TZERO 2^31

    let f = AsdfFile::open(common::testdata("fits/old_imagehdu.fits")).unwrap();
    let (asdf, _) = f.fits_extension().unwrap();
    assert_eq!(f.fits().unwrap().hdus()[asdf].kind, rasdf::fits::HduKind::Image);
    assert_eq!(f.array("u16").unwrap().read::<u16>().unwrap().as_slice().unwrap(), &[0, 1, 65535, 32768]);
    assert_eq!(f.array("u64").unwrap().read::<u64>().unwrap().as_slice().unwrap(), &[u64::MAX, 0, 1 << 63]);
    assert_eq!(f.array("i8").unwrap().read::<i8>().unwrap().as_slice().unwrap(), &[-128, -127, -1, 0, 127]);
    assert_eq!(
        f.array("sci/1").unwrap().read::<f32>().unwrap().as_slice().unwrap(),
        &[0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    );
    assert_eq!(f.array("unnamed").unwrap().read::<i64>().unwrap().as_slice().unwrap(), &[1, 2, 3, 4]);
    let blank = f.array("blank16").unwrap().read::<f32>().unwrap();
    assert_eq!((blank[0], blank[1]), (1.0, -1.0));
    assert!(blank[2].is_nan());
    let cat = f.array("catalog").unwrap().read_dyn().unwrap();
    assert_eq!(
        cat.datatype.to_string(),
        "[FLAG: bool8, NAME: [ascii, 6], COUNT: uint16, SCALED: float64, GRID: float32 [2, 3], BYTES: uint8 [2]]"
    );
    let Some(Element::Record(row)) = cat.elements().nth(1) else { panic!() };
    assert_eq!(
        row[..4],
        [Element::Bool(false), Element::Bytes(b"b".to_vec()), Element::UInt(40000), Element::Float(1.5)]
    );
}

#[test]
fn the_tree_and_its_hdu_disagreeing_is_told() {
    let bytes = fixture("jwst_image.fits");
    let bad = patched(&bytes, b"source: fits:ERR,1", b"shape: [3, 4]", b"shape: [4, 3]");
    let f = OpenOptions::new().from_bytes(bad).unwrap();
    let said = f.fits_disagreement(f.get("err").unwrap()).unwrap().expect("a disagreement");
    assert!(said.contains("shape [4, 3] but the HDU holds [3, 4] (NAXIS1 = 4, NAXIS2 = 3)"), "{said}");
    // Read as stdatamodels reads it: the HDU's.
    assert_eq!(f.array("err").unwrap().read_dyn().unwrap().shape, [3, 4]);
    let bad = patched(&bytes, b"source: fits:DQ,1", b"datatype: uint32", b"datatype: ui_t32");
    assert!(OpenOptions::new().from_bytes(bad).unwrap().array("dq").and_then(|a| a.read_dyn()).is_err());
    let bad = patched(&bytes, b"source: fits:DQ,1", b"datatype: uint32", b"datatype: int32 ");
    let f = OpenOptions::new().from_bytes(bad).unwrap();
    let said = f.fits_disagreement(f.get("dq").unwrap()).unwrap().unwrap();
    assert!(said.contains("datatype int32 but the HDU holds uint32"), "{said}");
}

#[test]
fn hostile_fits_files_give_clear_errors() {
    let bytes = fixture("jwst_image.fits");
    let open = |b: Vec<u8>| OpenOptions::new().from_bytes(b);

    // A source naming an HDU the file does not have.
    let f = open(patched(&bytes, b"source: fits:ERR,1", b"ERR,1", b"ERR,9")).unwrap();
    let e = f.array("err").and_then(|a| a.read_dyn()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Fits(FitsError::NoSuchHdu { .. })), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("source 'fits:ERR,9' names no HDU of the file (it has 5: PRIMARY, SCI,1"), "{msg}");
    assert!(f.array("data").and_then(|a| a.read_dyn()).is_ok(), "the other arrays are still read");
    assert!(rasdf_testkit::listing(&f).is_err());
    let f = open(patched(&bytes, b"source: fits:ERR,1", b"fits:ERR,1", b"fits:E,R,x")).unwrap();
    assert!(
        f.array("err")
            .and_then(|a| a.read_dyn())
            .unwrap_err()
            .to_string()
            .contains("neither fits:EXTNAME,EXTVER nor fits:INDEX")
    );

    // An HDU before the ASDF extension with a huge NAXIS1: its data goes past the end.
    let huge = patched(&bytes, &card("BITPIX", "32"), &card("NAXIS1", "4"), &card("NAXIS1", "4000000000000"));
    let e = open(huge).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Fits(FitsError::NoAsdf { .. })), "{e}");
    assert!(e.to_string().contains("HDU 2 (DQ,1): needs bytes"), "{e}");
    // Overflowing 64 bits.
    let sci = card("BITPIX", "-32");
    let huge = patched(&bytes, &sci, &card("NAXIS2", "3"), &card("NAXIS2", "9000000000000000000"));
    let huge = patched(&huge, &sci, &card("NAXIS1", "4"), &card("NAXIS1", "9000000000000000000"));
    let e = open(huge).unwrap_err();
    assert!(e.to_string().contains("the data size overflows 64 bits"), "{e}");

    // The ASDF extension pointing past the end of the file.
    let past = patched(&bytes, b"XTENSION= 'BINTABLE'", &card("NAXIS2", "1"), &card("NAXIS2", "7"));
    let e = open(past).unwrap_err();
    assert!(e.to_string().contains("(ASDF,1): needs bytes"), "{e}");

    // No ASDF extension at all.
    let e = open(patched(&bytes, b"TTYPE1  = 'ASDF_METADATA'", b"'ASDF    '", b"'ASDX    '")).unwrap_err();
    assert!(e.to_string().contains("a FITS file without an ASDF extension: none of its 5 HDUs is named ASDF"), "{e}");

    // A limit on the elements read.
    let tight = Limits::default().max_array_elements(5);
    let f = OpenOptions::new().limits(tight).from_bytes(bytes.clone()).unwrap();
    assert!(f.array("dq").and_then(|a| a.read_dyn()).unwrap_err().to_string().contains("max_array_elements"));

    // A `fits:` source in a file that is no FITS file.
    let start = bytes.windows(5).position(|w| w == b"#ASDF").unwrap();
    let len = bytes[start..].windows(4).position(|w| w == b"\n...").unwrap() + 5;
    let plain = open(bytes[start..start + len].to_vec()).unwrap();
    assert!(plain.fits().is_none());
    assert!(
        plain
            .array("dq")
            .and_then(|a| a.read_dyn())
            .unwrap_err()
            .to_string()
            .contains("this ASDF file is not inside a FITS file")
    );
}

/// Every cut of every fixture, and bytes changed all over their headers, open or fail
/// with an error, and so does every array read: never a panic.
#[test]
fn cut_and_damaged_fits_files_never_panic() {
    let read_all = |f: &AsdfFile| {
        for node in f.arrays().map(|a| a.node()) {
            let _ = f.array_at(node).read_dyn().map(|a| a.elements().len());
            let _ = f.fits_disagreement(node);
        }
        let _ = rasdf_testkit::listing(f);
    };
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let mut cuts: Vec<usize> = (0..bytes.len()).step_by(997).collect();
        cuts.extend((1..=bytes.len() / 2880).flat_map(|r| [r * 2880 - 1, r * 2880, r * 2880 + 80]));
        for cut in cuts {
            if let Ok(f) = OpenOptions::new().from_bytes(bytes[..cut.min(bytes.len())].to_vec()) {
                read_all(&f);
            }
        }
        // Deterministic byte changes in the header records.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let headers: Vec<usize> = rasdf::fits::Fits::parse(&bytes)
            .unwrap()
            .hdus()
            .iter()
            .flat_map(|h| h.header_at as usize..h.data_at as usize)
            .collect();
        for _ in 0..300 {
            let mut b = bytes.clone();
            for _ in 0..3 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = headers[(seed % headers.len() as u64) as usize];
                b[at] = b"0123456789 '=-.TFE"[(seed >> 40) as usize % 18];
            }
            if let Ok(f) = OpenOptions::new().from_bytes(b) {
                read_all(&f);
            }
        }
    }
}
