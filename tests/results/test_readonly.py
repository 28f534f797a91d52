"""kernbench.results.readonly: a frozen result's mappings and lists refuse changes at any
depth, and still write, pickle and copy as dicts and lists."""

from __future__ import annotations

import copy
import json
import pickle

import orjson
import pytest

from kernbench.results.model import CaseResult


def test_a_results_nested_mappings_and_lists_are_read_only_too() -> None:
    """Read-only at the top only, `case.worker["rusage"]["x"] = 1` or an appended sample
    in a nested list still changed a frozen result's record."""
    case = CaseResult(kernel_name="k", kernel_path="k.py", framework="numpy", backend="cpu",
                      precision="fp32", problem_size=None, status="ok", samples_ms=(1.0,),
                      inner_loops=1, worker={"rusage": {"maxrss_kb": 1}, "pids": [1, 2],
                                             "pairs": ({"a": [3]},)})
    with pytest.raises(TypeError, match="read-only"):
        case.worker["rusage"]["maxrss_kb"] = 0
    for change in (lambda items: items.append(3), lambda items: items.__setitem__(0, 9),
                   lambda items: items.sort(), lambda items: items.extend([4])):
        with pytest.raises(TypeError, match="read-only"):
            change(case.worker["pids"])
    with pytest.raises(TypeError, match="read-only"):
        case.worker["pairs"][0]["a"].append(4)
    assert case.worker["pids"] == [1, 2] and case.worker["pairs"] == ({"a": [3]},)
    plain = {"rusage": {"maxrss_kb": 1}, "pids": [1, 2], "pairs": [{"a": [3]}]}
    assert json.loads(json.dumps(case.worker)) == plain == json.loads(orjson.dumps(case.worker))
    for again in (pickle.loads(pickle.dumps(case)), copy.deepcopy(case)):
        assert again == case
        with pytest.raises(TypeError, match="read-only"):
            again.worker["pids"].append(3)
