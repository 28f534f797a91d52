"""Every ```python block of README.md runs: each as its own script, in an empty directory.

A block that truly cannot run here (it needs a GPU, say) is preceded by the line
``<!-- readme-test: skip (the reason) -->``; the reason is shown in the skip. Keep them rare.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SKIP = re.compile(r"<!-- readme-test: skip \((.+)\) -->\s*$")


def python_blocks(text: str) -> list[tuple[int, str, str | None]]:
    """(line, code, skip reason or None) of each ```python block."""
    blocks = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = SKIP.search(before)
        blocks.append((line, match.group(1), reason.group(1) if reason else None))
    return blocks


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 5


def test_the_extractor_finds_blocks_and_skip_marks() -> None:
    text = ("x\n```python\nprint(1)\n```\n<!-- readme-test: skip (needs a GPU) -->\n"
            "```python\nimport cupy\n```\n```bash\nls\n```\n")
    assert python_blocks(text) == [(2, "print(1)\n", None), (6, "import cupy\n", "needs a GPU")]


@pytest.mark.parametrize(("line", "code", "skip"), BLOCKS, ids=[f"line{b[0]}" for b in BLOCKS])
def test_readme_example_runs(line: int, code: str, skip: str | None, tmp_path: Path) -> None:
    if skip:
        pytest.skip(f"README.md:{line}: {skip}")
    script = tmp_path / f"readme_line{line}.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, (f"README.md:{line}: the example failed\n{done.stdout[-3000:]}"
                                  f"\n{done.stderr[-3000:]}")
