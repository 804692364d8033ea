//! Replays every input kept under testdata/fuzz/<target>/ (crashes found by fuzzing,
//! and seeds) through the same entry points the fuzz targets use.

use rasdf_testkit as common;

#[test]
fn replay_fuzz_inputs() {
    let base = common::testdata("fuzz");
    let mut replayed = 0;
    for target in rasdf_cli::fuzzing::targets() {
        let dir = base.join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries {
            let p = e.unwrap().path();
            let data = std::fs::read(&p).unwrap();
            rasdf_cli::fuzzing::run(target, &data);
            replayed += 1;
        }
    }
    // Every target also runs on every good and bad fixture.
    for sub in ["pyasdf", "pyasdf/arrays", "bad", "scalars", "astro", "oldasdf", "strings", "ra", "gsd", "b2nd"] {
        for e in std::fs::read_dir(common::testdata(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "asdf" || x == "ra" || x == "gsd" || x == "b2nd") {
                let data = std::fs::read(&p).unwrap();
                for target in rasdf_cli::fuzzing::targets() {
                    rasdf_cli::fuzzing::run(target, &data);
                }
                replayed += 1;
            }
        }
    }
    assert!(replayed > 40, "replayed {replayed}");
}
