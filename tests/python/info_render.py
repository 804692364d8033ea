"""Print, as JSON, what `asdftool info` prints for each case: argv[1] is a JSON list of
[path, [option, ...]] pairs; the output maps "<index>" to the text printed.

    python tests/python/info_render.py '[["testdata/example.asdf", ["--max-rows", "5"]]]'
"""

import contextlib
import io
import json
import sys
import warnings

from asdf._commands import main


def main_():
    cases = json.loads(sys.argv[1])
    out = {}
    for n, (path, options) in enumerate(cases):
        buf = io.StringIO()
        with warnings.catch_warnings(), contextlib.redirect_stdout(buf):
            warnings.simplefilter("ignore")
            main.main_from_args(["info", *options, path])
        out[str(n)] = buf.getvalue()
    print(json.dumps(out))


if __name__ == "__main__":
    main_()
