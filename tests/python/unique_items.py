"""The reference validator's verdict on `uniqueItems: true` for YAML lists, each read as
asdf reads a tree: print a JSON list, one entry a list, "valid", "invalid" or "error"
(the validator fails, as on a recursive list).

    python unique_items.py LISTS.json     # ["[1, 1.0]", ...]
"""

import io
import json
import sys
import warnings

import asdf
import asdf.schema
import asdf.yamlutil


def verdict(text):
    tree = asdf.yamlutil.load_tree(io.BytesIO(b"%YAML 1.1\n---\n" + text.encode() + b"\n"))
    try:
        # As a file is read: large literals and float keys are warnings then, not failures.
        asdf.schema.validate(tree, schema={"uniqueItems": True}, reading=True)
        return "valid"
    except asdf.exceptions.ValidationError:
        return "invalid"
    except Exception:  # noqa: BLE001 - RecursionError and the like
        return "error"


def main(path):
    warnings.simplefilter("ignore")
    with open(path, encoding="utf-8") as f:
        lists = json.load(f)
    json.dump([verdict(t) for t in lists], sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
