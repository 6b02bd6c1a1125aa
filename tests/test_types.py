"""`make test` type-checks scalebook/ and autograder/ with mypy ([tool.mypy] in pyproject.toml).

Marked slow (a cold check takes about 20 s of CPU): `make test` runs it, `make test-fast` does
not; `make typecheck` runs the same check alone.
"""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_finds_no_errors():
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, f"mypy found errors:\n{result.stdout}{result.stderr}"
    assert "Success: no issues found" in result.stdout
