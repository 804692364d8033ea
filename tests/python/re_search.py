"""Search texts with patterns as the reference's validator does (`re.search`, for
`pattern` and `patternProperties`); print a JSON list, one entry a case: a list of
booleans (a match in each text), or {"error": message} when Python refuses the pattern.

    python re_search.py CASES.json     # [[pattern, [text, ...]], ...]
"""

import json
import re
import sys
import warnings


def main(path):
    warnings.simplefilter("ignore")
    with open(path, encoding="utf-8") as f:
        cases = json.load(f)
    out = []
    for pattern, texts in cases:
        try:
            compiled = re.compile(pattern)
        except (re.error, OverflowError, RecursionError) as e:
            out.append({"error": str(e)})
            continue
        out.append([compiled.search(t) is not None for t in texts])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
