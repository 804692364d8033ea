//! Plain scalars resolve as the reference library's PyYAML 1.1 resolvers do: a table of
//! 170+ scalars whose expected values tests/python/make_scalar_table.py got from the
//! pinned reference library.

use rasdf_testkit as common;

use rasdf::AsdfFile;
use serde_json::Value;

#[test]
fn scalars_resolve_as_the_reference_does() {
    let dir = common::testdata("scalars");
    let table: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    assert!(table.len() >= 150);
    let f = AsdfFile::open(dir.join("scalars.asdf")).unwrap();
    let dump = common::dump::dump_file(&f);
    let items = dump["$map"][0][1].as_array().unwrap();
    assert_eq!(items.len(), table.len());
    let mut wrong = Vec::new();
    for (row, got) in table.iter().zip(items) {
        if &row["value"] != got {
            wrong.push(format!("{:?}: rasdf {got}, reference {}", row["text"].as_str().unwrap(), row["value"]));
        }
    }
    assert!(wrong.is_empty(), "{} of {} differ:\n{}", wrong.len(), table.len(), wrong.join("\n"));
}
