"""The pytest plugin's comparisons name the plugin's knobs, never kernbench run's flags."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

FAST = ("--kernbench-iterations", "6", "--kernbench-warmup", "1", "-p", "no:cacheprovider")
KERNELS = '''
def work(n):
    return sum(range(n))

def test_sum(kernbench):
    assert kernbench(work, 10) == 45
'''


def test_a_session_compared_without_saving_is_judged_as_pytests(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its candidate is the session itself, not a saved set: the runner must come with it,
    or the advice falls back to `--ab` and `--processes`."""
    import kernbench.api.compare as api_compare

    pytester.makepyfile(test_kernels=KERNELS)
    assert pytester.runpytest_subprocess(*FAST, "--kernbench-save", "base").ret == 0
    runners: list[object] = []
    real = api_compare.run_comparison

    def spy(base, cand, *args, **kwargs):  # type: ignore[no-untyped-def]
        runners.append(cand.meta.get("runner"))
        return real(base, cand, *args, **kwargs)

    monkeypatch.setattr(api_compare, "run_comparison", spy)
    assert pytester.runpytest(*FAST, "--kernbench-compare", "base").ret == 0
    assert runners == ["pytest"]
