"""run_forked: one function in a forked child, its JSON reply read back."""

from __future__ import annotations

import os
import signal
import time

import pytest

from kernbench.errors import KernbenchError
from kernbench.execution.forked import run_forked


def test_the_reply_comes_back_from_another_process() -> None:
    parent = os.getpid()
    assert run_forked(lambda: {"pid": os.getpid()})["pid"] != parent


def test_a_large_reply_does_not_block_the_child() -> None:
    assert len(run_forked(lambda: "x" * 3_000_000)) == 3_000_000


def test_the_childs_exception_is_named() -> None:
    with pytest.raises(KernbenchError, match="raised in the forked child: KeyError"):
        run_forked(lambda: {}["missing"])


def test_a_child_killed_by_a_signal_is_named() -> None:
    with pytest.raises(KernbenchError, match="died of SIGKILL"):
        run_forked(lambda: os.kill(os.getpid(), signal.SIGKILL))


def test_a_child_past_its_time_limit_is_killed() -> None:
    began = time.monotonic()
    with pytest.raises(KernbenchError, match=r"time limit of 0\.5 s"):
        run_forked(lambda: time.sleep(30), timeout_s=0.5)
    assert time.monotonic() - began < 10


def test_a_reply_that_is_not_json_is_named() -> None:
    with pytest.raises(KernbenchError, match="not JSON"):
        run_forked(lambda: object())


def test_a_timeout_with_torch_imported_says_why_the_child_may_wait_forever(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A forked child blocks on torch's thread pool once it has run in the parent: the
    timeout said only 'killed'."""
    import sys
    import types

    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    with pytest.raises(KernbenchError, match="torch is imported in this process, and a forked "
                                             "child waits forever"):
        run_forked(lambda: time.sleep(30), timeout_s=0.5)
