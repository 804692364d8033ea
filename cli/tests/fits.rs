//! The command line on ASDF-in-FITS files (testdata/fits/): `info` (with `--stats` and
//! `--json`), `check` (the HDUs, no complaint of missing blocks; damage and
//! disagreements told), `to-yaml`, `extract`, `defragment` (to a plain ASDF file) and
//! `convert` read the tree from the ASDF extension and the arrays from the HDUs; `edit`
//! refuses, leaving the file as it was.

use rasdf_testkit as common;

use std::path::{Path, PathBuf};
use std::process::Command;

use rasdf::AsdfFile;

/// The `rasdf` binary run with `args`: exit code, standard output, standard error.
fn rasdf(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rasdf")).args(args).env_remove("EDITOR").output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fits(name: &str) -> PathBuf {
    common::testdata("fits").join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every array of `a` and `b`, by path, holds the same datatype (byte order aside),
/// shape and values.
fn same_arrays(a: &AsdfFile, b: &AsdfFile) {
    let paths = common::array_paths(a);
    assert!(!paths.is_empty());
    assert_eq!(paths, common::array_paths(b));
    for p in &paths {
        let (x, y) = (a.array(p).unwrap().read_dyn().unwrap(), b.array(p).unwrap().read_dyn().unwrap());
        assert_eq!((x.datatype.to_string(), &x.shape), (y.datatype.to_string(), &y.shape), "{p}");
        let (x, y) =
            (format!("{:?}", x.elements().collect::<Vec<_>>()), format!("{:?}", y.elements().collect::<Vec<_>>()));
        assert_eq!(x, y, "{p}");
    }
}

#[test]
fn info_shows_hdu_arrays() {
    let (code, out, err) = rasdf(&["info", "--stats", s(&fits("jwst_image.fits"))]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("├─dq (NDArrayType): shape=(3, 4), dtype=uint32, fits:DQ,1 (HDU 2)"), "{out}");
    assert!(out.contains("/dq: uint32 [3, 4] FITS HDU 2: min=0.0 max=4294967295.0"), "{out}");
    assert!(out.contains("/data: float32 [3, 4] FITS HDU 1: min=-1.375 max=1.375"), "{out}");
    let (code, out, _) = rasdf(&["info", "--json", s(&fits("old_imagehdu.fits"))]);
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let node = j["nodes"].as_array().unwrap().iter().find(|n| n["path"] == "/unnamed").unwrap();
    assert_eq!(node["array"]["storage"], "fits");
    assert_eq!((node["array"]["source"].as_str(), node["array"]["hdu"].as_u64()), (Some("fits:10"), Some(10)));
}

#[test]
fn check_lists_the_hdus() {
    for name in ["jwst_image.fits", "jwst_multispec.fits", "old_imagehdu.fits"] {
        let (code, out, err) = rasdf(&["check", s(&fits(name))]);
        assert_eq!(code, 0, "{name}: {out}{err}");
        assert!(out.contains("sound (0 errors, 0 warnings)"), "{out}");
        assert!(!out.contains("no block index"), "{out}");
    }
    let (_, out, _) = rasdf(&["check", s(&fits("jwst_image.fits"))]);
    assert!(
        out.contains("FITS, 5 HDUs; the ASDF file is the data of HDU 4 (ASDF,1, BINTABLE), bytes 23040.."),
        "{out}"
    );
    assert!(
        out.contains("HDU 2 at byte 8640: DQ,1 IMAGE, BITPIX 32, NAXIS (4, 3), data at byte 11520, 48 bytes"),
        "{out}"
    );
    assert!(out.contains("arrays: 3 declared, 3 readable"), "{out}");
    let (code, out, _) = rasdf(&["check", "--json", s(&fits("jwst_image.fits"))]);
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((j["fits"]["asdf_hdu"].as_u64(), j["fits"]["hdus"][2]["label"].as_str()), (Some(4), Some("DQ,1")));
    assert_eq!(j["sound"], true);
}

#[test]
fn check_tells_damage_and_disagreements() {
    let dir = common::temp_dir("fits-check");
    let bytes = std::fs::read(fits("jwst_image.fits")).unwrap();
    let swap = |from: &[u8], to: &[u8]| {
        let at = bytes.windows(from.len()).position(|w| w == from).unwrap();
        let mut b = bytes.clone();
        b[at..at + to.len()].copy_from_slice(to);
        b
    };
    // A source naming no HDU: damaged.
    let missing = dir.join("missing.fits");
    std::fs::write(&missing, swap(b"fits:ERR,1", b"fits:ERR,7")).unwrap();
    let (code, out, _) = rasdf(&["check", s(&missing)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("tree path /err") && out.contains("source 'fits:ERR,7' names no HDU"), "{out}");
    assert!(out.contains("arrays: 3 declared, 2 readable"), "{out}");
    // The tree's datatype other than the HDU's: a warning, the HDU's read.
    let other = dir.join("other.fits");
    std::fs::write(&other, swap(b"datatype: uint32", b"datatype: int32 ")).unwrap();
    let (code, out, _) = rasdf(&["check", s(&other)]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("warning: tree path /dq: source 'fits:DQ,1' (HDU 2, DQ,1): the tree declares datatype int32"));
    // Cut short: the ASDF extension, the last HDU, is gone.
    let cut = dir.join("cut.fits");
    std::fs::write(&cut, &bytes[..bytes.len() - 2000]).unwrap();
    let (code, out, _) = rasdf(&["check", s(&cut)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("(ASDF,1): needs bytes") && out.contains("damaged"), "{out}");
    // `info` of the missing source says so for that array only.
    let (code, out, _) = rasdf(&["info", "--stats", s(&missing)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("/dq: uint32") && out.contains("fits:ERR,7 (missing)"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn to_yaml_extract_defragment_and_convert() {
    let dir = common::temp_dir("fits-out");
    for name in ["jwst_image.fits", "jwst_multispec.fits", "old_imagehdu.fits"] {
        let input = AsdfFile::open(fits(name)).unwrap();
        let yaml = dir.join(format!("{name}.yaml"));
        let (code, _, err) = rasdf(&["to-yaml", s(&fits(name)), "-o", s(&yaml)]);
        assert_eq!(code, 0, "{name}: {err}");
        same_arrays(&input, &AsdfFile::open(&yaml).unwrap());
        let asdf = dir.join(format!("{name}.asdf"));
        let (code, _, err) = rasdf(&["defragment", s(&fits(name)), "-o", s(&asdf), "-c", "zlib"]);
        assert_eq!(code, 0, "{name}: {err}");
        let out = AsdfFile::open(&asdf).unwrap();
        assert!(out.fits().is_none() && !out.blocks().is_empty());
        same_arrays(&input, &out);
        let (code, out, _) = rasdf(&["check", s(&asdf)]);
        assert_eq!(code, 0, "{out}");
    }
    // extract: DQ converted (uint32, the machine's order), SCI as stored (big-endian).
    let npy = dir.join("dq.npy");
    let (code, _, err) = rasdf(&["extract", s(&fits("jwst_image.fits")), "dq", "-o", s(&npy)]);
    assert_eq!(code, 0, "{err}");
    let got = std::fs::read(&npy).unwrap();
    let want: Vec<u8> =
        [0u32, 1, 2, 4, 1 << 31, u32::MAX, 7, 0, 1, 0, 0, 1024].iter().flat_map(|v| v.to_ne_bytes()).collect();
    assert!(got.ends_with(&want));
    let (code, _, err) = rasdf(&["extract", s(&fits("jwst_image.fits")), "/data", "-o", s(&npy)]);
    assert_eq!(code, 0, "{err}");
    let got = std::fs::read(&npy).unwrap();
    assert!(String::from_utf8_lossy(&got[..128]).contains("'descr': '>f4'"));
    assert!(got.ends_with(&(-1.375f32 + 0.25 * 11.0).to_be_bytes()));
    // convert: to RawArray, the array chosen.
    let ra = dir.join("dq.ra");
    let (code, _, err) = rasdf(&["convert", s(&fits("jwst_image.fits")), s(&ra), "--array", "dq"]);
    assert_eq!(code, 0, "{err}");
    let back = dir.join("dq.asdf");
    let (code, _, err) = rasdf(&["convert", s(&ra), s(&back), "--array", "dq"]);
    assert_eq!(code, 0, "{err}");
    let back = AsdfFile::open(&back).unwrap();
    let input = AsdfFile::open(fits("jwst_image.fits")).unwrap();
    assert_eq!(back.array("dq").unwrap().read::<u32>().unwrap(), input.array("dq").unwrap().read::<u32>().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn edit_refuses_fits_files() {
    let dir = common::temp_dir("fits-edit");
    let path = dir.join("img.fits");
    std::fs::copy(fits("jwst_image.fits"), &path).unwrap();
    let before = std::fs::read(&path).unwrap();
    let out =
        Command::new(env!("CARGO_BIN_EXE_rasdf")).args(["edit", s(&path)]).env("EDITOR", "true").output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("an ASDF-in-FITS file is not edited"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    std::fs::remove_dir_all(&dir).unwrap();
}
