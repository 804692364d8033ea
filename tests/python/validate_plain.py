"""Validate ASDF files as `asdftool validate` does (the tree against the schemas of its
tags, `validate_on_read=True`), with the plain reference library; print a JSON object of
each path's verdict: "valid", "invalid" (a ValidationError) or "error" (the file does not
open at all, for another reason).

    python validate_plain.py FILE...
"""

import json
import sys
import warnings

import asdf
from asdf.config import config_context


def verdict(path):
    try:
        with config_context() as cfg:
            cfg.validate_on_read = True
            with asdf.open(path, lazy_load=True):
                return "valid"
    except asdf.exceptions.ValidationError:
        return "invalid"
    except Exception:  # noqa: BLE001 - any other failure to open
        return "error"


def main(paths):
    warnings.simplefilter("ignore")
    print(json.dumps({p: verdict(p) for p in paths}))


if __name__ == "__main__":
    main(sys.argv[1:])
