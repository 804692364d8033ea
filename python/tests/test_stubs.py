"""The type stubs (rasdf/__init__.pyi) against the module as it runs: mypy's stubtest
finds every name, signature and default that differs."""

import subprocess
import sys
from pathlib import Path

from conftest import require

HERE = Path(__file__).resolve().parent


def test_stubs_match_the_runtime(tmp_path):
    require("mypy")
    # From another folder: the installed package is checked (python/ holds its source
    # without its built module).
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            "rasdf",
            "--mypy-config-file",
            str(HERE / "stubtest_mypy.ini"),
            "--allowlist",
            str(HERE / "stubtest_allowlist.txt"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success" in run.stdout
