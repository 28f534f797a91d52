"""Tests for kernbench.discovery.scan: finding kernels by reading their source, never importing
it."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from kernbench.discovery.scan import KernelDiscovery
from kernbench.errors import ConfigError, KernbenchError
from kernbench.results.model import KernelSpec

REPO_ROOT = Path(__file__).resolve().parents[2]

SIMPLE = "def run_benchmark():\n    return 1\n"


# -- helpers ---------------------------------------------------------------------------------


def write(root: Path, rel: str, text: str) -> Path:
    """Write `text` (dedented) to root/rel, creating folders."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def discover(root: Path, paths: list[str] | None = None) -> list[KernelSpec]:
    return KernelDiscovery(root, paths=paths).discover()


def by_name(root: Path, paths: list[str] | None = None) -> dict[str, KernelSpec]:
    specs = discover(root, paths)
    names = [s.name for s in specs]
    assert len(names) == len(set(names)), f"duplicate kernel names: {names}"
    return {s.name: s for s in specs}


def by_path(root: Path, paths: list[str] | None = None) -> dict[str, KernelSpec]:
    return {s.path: s for s in discover(root, paths)}


def only(root: Path, rel: str, text: str) -> KernelSpec:
    """Write one kernel file and return its spec (the only kernel under root)."""
    write(root, rel, text)
    specs = discover(root)
    assert [s.path for s in specs] == [rel]
    return specs[0]


# -- where kernels are looked for ------------------------------------------------------------


@pytest.mark.parametrize("folder", [
    "kernels",
    "src/kernels",
    "quasim/kernels",
    "integrations/kernels",
    "autonomous_systems_platform/services/backend/quasim/kernels",
])
def test_each_default_path_is_scanned(tmp_path: Path, folder: str) -> None:
    write(tmp_path, f"{folder}/thing.py", SIMPLE)
    specs = discover(tmp_path)
    assert [(s.name, s.path, s.status) for s in specs] == [("thing", f"{folder}/thing.py", "ok")]


def test_files_outside_discovery_paths_are_ignored(tmp_path: Path) -> None:
    write(tmp_path, "elsewhere/k.py", SIMPLE)
    write(tmp_path, "k.py", SIMPLE)
    assert discover(tmp_path) == []


def test_pyproject_paths_add_to_the_defaults(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.kernbench]\npaths = ["extra/benches"]\n')
    write(tmp_path, "kernels/a.py", SIMPLE)
    write(tmp_path, "extra/benches/b.py", SIMPLE)
    assert set(by_name(tmp_path)) == {"a", "b"}


def test_explicit_paths_replace_defaults_and_pyproject(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.kernbench]\npaths = ["extra"]\n')
    write(tmp_path, "kernels/a.py", SIMPLE)
    write(tmp_path, "extra/b.py", SIMPLE)
    write(tmp_path, "mine/c.py", SIMPLE)
    discovery = KernelDiscovery(tmp_path, paths=["mine"])
    assert discovery.paths == ("mine",)
    assert [s.name for s in discovery.discover()] == ["c"]


def test_explicit_path_may_name_a_single_file(tmp_path: Path) -> None:
    write(tmp_path, "stuff/one.py", SIMPLE)
    write(tmp_path, "stuff/two.py", SIMPLE)
    specs = discover(tmp_path, ["stuff/one.py"])
    assert [(s.name, s.path) for s in specs] == [("one", "stuff/one.py")]


def test_missing_paths_are_skipped_quietly(tmp_path: Path) -> None:
    write(tmp_path, "kernels/a.py", SIMPLE)
    assert [s.name for s in discover(tmp_path, ["nope", "kernels"])] == ["a"]


def test_broken_pyproject_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.kernbench]\nunknown = 1\n")
    write(tmp_path, "kernels/a.py", SIMPLE)
    with pytest.raises(ConfigError, match=r"tool\.kernbench\.unknown"):
        discover(tmp_path)


@pytest.mark.parametrize("kind", ["file", "missing"])
def test_root_that_is_not_a_directory_is_an_error(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "root"
    if kind == "file":
        root.write_text("x")
    with pytest.raises(KernbenchError, match="not a directory"):
        KernelDiscovery(root)


def test_hidden_and_cache_directories_are_skipped(tmp_path: Path) -> None:
    write(tmp_path, "kernels/.hidden/h.py", SIMPLE)
    write(tmp_path, "kernels/__pycache__/c.py", SIMPLE)
    write(tmp_path, "kernels/visible/v.py", SIMPLE)
    assert set(by_name(tmp_path)) == {"visible.v"}


def test_dunder_test_and_non_python_files_are_not_kernels(tmp_path: Path) -> None:
    write(tmp_path, "kernels/__init__.py", SIMPLE)
    write(tmp_path, "kernels/__main__.py", SIMPLE)
    write(tmp_path, "kernels/test_gemm.py", SIMPLE)
    write(tmp_path, "kernels/notes.txt", SIMPLE)
    write(tmp_path, "kernels/gemm_test.py", SIMPLE)
    assert set(by_name(tmp_path)) == {"gemm_test"}


def test_a_file_reached_through_overlapping_paths_appears_once(tmp_path: Path) -> None:
    write(tmp_path, "kernels/sub/a.py", SIMPLE)
    specs = discover(tmp_path, ["kernels", "kernels/sub", "./kernels", "kernels/sub/a.py"])
    assert [s.path for s in specs] == ["kernels/sub/a.py"]


def test_a_file_reached_through_default_and_pyproject_paths_appears_once(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.kernbench]\npaths = ["kernels", "kernels/x"]\n')
    write(tmp_path, "kernels/x/a.py", SIMPLE)
    assert [s.path for s in discover(tmp_path)] == ["kernels/x/a.py"]


# -- what counts as a kernel -----------------------------------------------------------------


def test_discovery_never_imports_the_kernel(tmp_path: Path) -> None:
    marker = tmp_path / "imported.marker"
    spec = only(tmp_path, "kernels/boom.py", f"""\
        from pathlib import Path
        Path({str(marker)!r}).write_text("imported")
        raise SystemExit("discovery must not import me")

        def run_benchmark():
            return 1
        """)
    assert spec.status == "ok"
    assert spec.name == "boom"
    assert not marker.exists()


@pytest.mark.parametrize("source", [
    SIMPLE,
    "async def run_benchmark():\n    return 1\n",
    "def _impl():\n    return 1\n\nrun_benchmark = _impl\n",
    "from functools import partial as run_benchmark\n",
    "import json as run_benchmark\n",
    "try:\n    import nothing\nexcept ImportError:\n    def run_benchmark():\n        pass\n",
    "if True:\n    def run_benchmark():\n        pass\nelse:\n    pass\n",
    "if False:\n    pass\nelse:\n    run_benchmark = print\n",
    "try:\n    pass\nfinally:\n    def run_benchmark():\n        pass\n",
], ids=["def", "async-def", "assignment", "from-import-as", "import-as", "try-except",
        "if-body", "if-else", "try-finally"])
def test_module_level_bindings_count(tmp_path: Path, source: str) -> None:
    spec = only(tmp_path, "kernels/k.py", source)
    assert spec.status == "ok"
    assert spec.function_name == "run_benchmark"


@pytest.mark.parametrize("source", [
    "class Bench:\n    def run_benchmark(self):\n        pass\n",
    "def outer():\n    def run_benchmark():\n        pass\n    return run_benchmark\n",
    "# run_benchmark is defined elsewhere\ndef other():\n    pass\n",
    "TEXT = 'run_benchmark'\n",
    "from kernels import run_benchmark_helper\n",
    "def run_benchmark_v2():\n    pass\n",
    "run_benchmark()\n",
], ids=["method", "nested-function", "comment", "string", "longer-import", "longer-def", "call"])
def test_mentions_that_do_not_define_the_function_are_not_kernels(
        tmp_path: Path, source: str) -> None:
    write(tmp_path, "kernels/k.py", source)
    assert discover(tmp_path) == []


def test_syntax_error_in_a_kernel_is_invalid_with_location(tmp_path: Path) -> None:
    write(tmp_path, "kernels/broken.py", "import os\n\ndef run_benchmark(:\n    pass\n")
    write(tmp_path, "kernels/fine.py", SIMPLE)
    specs = by_name(tmp_path)
    assert specs["fine"].status == "ok"
    broken = specs["broken"]
    assert broken.status == "invalid"
    assert broken.path == "kernels/broken.py"
    assert broken.error is not None
    assert re.search(r"kernels/broken\.py:3:\d+", broken.error), broken.error


def test_syntax_error_in_a_file_without_the_function_name_is_not_a_kernel(
        tmp_path: Path) -> None:
    write(tmp_path, "kernels/helper.py", "def helper(:\n    pass\n")
    assert discover(tmp_path) == []


def test_unparsable_bytes_give_an_invalid_kernel_with_a_real_location(tmp_path: Path) -> None:
    path = tmp_path / "kernels" / "nul.py"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"def run_benchmark():\x00\n    pass\n")
    (spec,) = discover(tmp_path)
    assert spec.status == "invalid"
    assert spec.error is not None
    assert spec.error.startswith("kernels/nul.py")
    assert "None" not in spec.error, spec.error


def test_function_name_from_bench_yaml(tmp_path: Path) -> None:
    write(tmp_path, "kernels/custom/bench.yaml", "function_name: compute\n")
    write(tmp_path, "kernels/custom/custom.py", "def compute(n=4):\n    return n\n")
    write(tmp_path, "kernels/custom/other.py", SIMPLE)  # has run_benchmark, not compute
    write(tmp_path, "kernels/plain.py", SIMPLE)
    specs = by_name(tmp_path)
    assert set(specs) == {"custom", "plain"}
    assert specs["custom"].function_name == "compute"
    assert specs["custom"].parameters == ("n",)
    assert specs["plain"].function_name == "run_benchmark"


def test_a_function_name_the_file_lacks_makes_the_kernel_invalid(tmp_path: Path) -> None:
    write(tmp_path, "kernels/k/bench.yaml", "function_name: nope\n")
    write(tmp_path, "kernels/k/k.py", "def setup(n=4):\n    return {}\n" + SIMPLE)
    write(tmp_path, "kernels/fine.py", SIMPLE)
    specs = by_name(tmp_path)
    assert set(specs) == {"k", "fine"}
    assert specs["fine"].status == "ok"
    k = specs["k"]
    assert (k.status, k.path, k.config_path) == ("invalid", "kernels/k/k.py",
                                                 "kernels/k/bench.yaml")
    assert k.error == ("kernels/k/bench.yaml: key 'function_name': expected a function defined "
                       "at module level in kernels/k/k.py, which has no nope()")


def test_a_function_name_only_mentioned_makes_the_kernel_invalid(tmp_path: Path) -> None:
    write(tmp_path, "kernels/k/bench.yaml", "function_name: compute\n")
    write(tmp_path, "kernels/k/k.py", "# compute() is coming\n" + SIMPLE)
    (spec,) = discover(tmp_path)
    assert spec.status == "invalid"
    assert spec.error is not None and "which has no compute()" in spec.error


def test_a_function_name_no_file_of_the_folder_defines_is_one_invalid_kernel(
        tmp_path: Path) -> None:
    write(tmp_path, "kernels/k/bench.yaml", "function_name: compute\n")
    write(tmp_path, "kernels/k/helper.py", SIMPLE)
    write(tmp_path, "kernels/k/k.py", SIMPLE)
    (spec,) = discover(tmp_path)
    assert (spec.name, spec.path, spec.status) == ("k", "kernels/k/k.py", "invalid")
    assert spec.error == ("kernels/k/bench.yaml: key 'function_name': expected a function "
                          "defined at module level in kernels/k/helper.py or kernels/k/k.py, "
                          "none of which has compute()")


def test_implementations_none_of_which_the_file_defines_make_it_invalid(
        tmp_path: Path) -> None:
    write(tmp_path, "kernels/k/bench.yaml",
          "implementations: {a: {function: fa}, b: {function: fb}}\n")
    write(tmp_path, "kernels/k/k.py", SIMPLE)
    (spec,) = discover(tmp_path)
    assert spec.status == "invalid"
    assert spec.error == ("kernels/k/bench.yaml: key 'implementations.a.function': expected a "
                          "function defined at module level in kernels/k/k.py, which has no "
                          "fa() or fb()")


def test_a_malformed_function_name_is_one_invalid_kernel(tmp_path: Path) -> None:
    write(tmp_path, "kernels/k/bench.yaml", 'function_name: "a:b:c"\n')
    write(tmp_path, "kernels/k/k.py", SIMPLE)
    (spec,) = discover(tmp_path)
    assert (spec.name, spec.status, spec.config_path) == ("k", "invalid", "kernels/k/bench.yaml")
    assert spec.error is not None
    assert spec.error.startswith("kernels/k/bench.yaml: key 'function_name': expected ")
    assert spec.error.endswith("(got 'a:b:c')")


# -- names -----------------------------------------------------------------------------------


def test_names_are_dotted_paths_with_a_repeated_tail_collapsed(tmp_path: Path) -> None:
    write(tmp_path, "kernels/gemm/gemm.py", SIMPLE)
    write(tmp_path, "kernels/linalg/norm.py", SIMPLE)
    write(tmp_path, "kernels/flat.py", SIMPLE)
    write(tmp_path, "kernels/a/b/c.py", SIMPLE)
    specs = discover(tmp_path)
    assert [(s.name, s.path) for s in specs] == [
        ("a.b.c", "kernels/a/b/c.py"),
        ("flat", "kernels/flat.py"),
        ("gemm", "kernels/gemm/gemm.py"),
        ("linalg.norm", "kernels/linalg/norm.py"),
    ]


def test_colliding_names_both_take_their_full_path(tmp_path: Path) -> None:
    write(tmp_path, "kernels/a.py", SIMPLE)
    write(tmp_path, "integrations/kernels/a.py", SIMPLE)
    write(tmp_path, "kernels/b.py", SIMPLE)
    specs = by_name(tmp_path)
    assert specs["kernels.a"].path == "kernels/a.py"
    assert specs["integrations.kernels.a"].path == "integrations/kernels/a.py"
    assert specs["b"].path == "kernels/b.py"
    assert "a" not in specs


def test_colliding_collapsed_names_take_their_full_path(tmp_path: Path) -> None:
    write(tmp_path, "kernels/gemm/gemm.py", SIMPLE)
    write(tmp_path, "quasim/kernels/gemm.py", SIMPLE)
    specs = by_name(tmp_path)
    assert set(specs) == {"kernels.gemm", "quasim.kernels.gemm"}
    assert specs["kernels.gemm"].path == "kernels/gemm/gemm.py"


def test_names_stay_unique_when_a_full_path_equals_another_short_name(tmp_path: Path) -> None:
    # kernels/a.py and integrations/kernels/a.py collide and become "kernels.a" and
    # "integrations.kernels.a"; src/kernels/kernels/a.py's short name is also "kernels.a".
    write(tmp_path, "kernels/a.py", SIMPLE)
    write(tmp_path, "integrations/kernels/a.py", SIMPLE)
    write(tmp_path, "src/kernels/kernels/a.py", SIMPLE)
    specs = discover(tmp_path)
    names = [s.name for s in specs]
    assert len(specs) == 3
    assert len(set(names)) == 3, names


# -- framework, dependencies, backends -------------------------------------------------------


@pytest.mark.parametrize(("imports", "framework"), [
    ("", "python"),
    ("import math", "python"),
    ("import numpy as np", "numpy"),
    ("from scipy import linalg", "numpy"),
    ("import torch", "pytorch"),
    ("import torch.nn.functional as F", "pytorch"),
    ("import numpy\nimport torch", "pytorch"),
    ("import numpy\nimport jax.numpy as jnp", "jax"),
    ("import torch\nimport jax", "jax"),
    ("import torch\nimport triton", "triton"),
    ("import torch\nimport cupy", "cupy"),
    ("import triton\nimport jax", "jax"),
])
def test_framework_follows_import_priority(tmp_path: Path, imports: str, framework: str) -> None:
    spec = only(tmp_path, "kernels/k.py", f"{imports}\n\n{SIMPLE}")
    assert spec.framework == framework


def test_imports_inside_functions_decide_the_framework(tmp_path: Path) -> None:
    spec = only(tmp_path, "kernels/k.py", """\
        import numpy as np

        def run_benchmark():
            import torch
            return torch.zeros(1)
        """)
    assert spec.framework == "pytorch"
    assert spec.frameworks == ("pytorch", "numpy")
    assert spec.dependencies == ("numpy",)  # only module-level imports are dependencies


def test_dependencies_are_third_party_module_level_import_roots(tmp_path: Path) -> None:
    spec = only(tmp_path, "kernels/k.py", """\
        from __future__ import annotations

        import json
        import os.path
        import numpy as np
        from scipy.linalg import lu
        from . import sibling
        from .helpers import util

        try:
            import ml_dtypes
        except ImportError:
            ml_dtypes = None

        if True:
            import numpy.linalg

        def run_benchmark():
            import torch
            return 1
        """)
    assert spec.dependencies == ("numpy", "scipy", "ml_dtypes")


@pytest.mark.parametrize(("source", "backends"), [
    ("import numpy as np\n\ndef run_benchmark(device='cpu'):\n    pass\n", ("cpu",)),
    ("import numpy as np\n# runs on cuda? no\ndef run_benchmark():\n    pass\n", ("cpu",)),
    ("import torch\n\ndef run_benchmark(n):\n    return torch.zeros(n)\n", ("cpu",)),
    ("import torch\n\ndef run_benchmark(device):\n    pass\n", ("cpu", "cuda")),
    ("import torch\n\ndef run_benchmark(backend):\n    pass\n", ("cpu", "cuda")),
    ("import torch\n\ndef setup(device):\n    pass\n\ndef run_benchmark(state):\n    pass\n",
     ("cpu", "cuda")),
    ("import torch\n\ndef run_benchmark():\n    return torch.cuda.is_available()\n",
     ("cpu", "cuda")),
    ("import jax\n\ndef run_benchmark():\n    pass\n", ("cpu",)),
    ("import jax\n\ndef run_benchmark():\n    return jax.devices('gpu')\n", ("cpu", "cuda")),
    ("import jax\n\ndef run_benchmark(device=None):\n    pass\n", ("cpu", "cuda")),
    ("import cupy as cp\n\ndef run_benchmark():\n    pass\n", ("cuda",)),
    ("def run_benchmark(device='cpu'):\n    pass\n", ("cpu",)),
], ids=["numpy-device", "numpy-cuda-comment", "torch-plain", "torch-device", "torch-backend",
        "torch-setup-device", "torch-mentions-cuda", "jax-plain", "jax-mentions-gpu",
        "jax-device", "cupy", "python-device"])
def test_backends_are_inferred(tmp_path: Path, source: str, backends: tuple[str, ...]) -> None:
    spec = only(tmp_path, "kernels/k.py", source)
    assert spec.backends == backends


def test_parameters_and_setup_parameters_are_recorded(tmp_path: Path) -> None:
    spec = only(tmp_path, "kernels/k.py", """\
        def setup(n, *, precision="fp32"):
            return n, precision

        def run_benchmark(state, /, scale=1.0, *args, seed=0, **kwargs):
            return state
        """)
    assert spec.parameters == ("state", "scale", "seed")
    assert spec.has_setup
    assert spec.setup_parameters == ("n", "precision")
    assert spec.signature_known
    assert spec.takes_precision


@pytest.mark.parametrize(("source", "takes"), [
    ("def run_benchmark(precision):\n    return precision\n", True),
    ("def run_benchmark(*, precision='fp32'):\n    return precision\n", True),
    ("def setup(precision):\n    return precision\n\ndef run_benchmark(x):\n    pass\n", True),
    ("def setup(precision):\n    return {}\n\ndef run_benchmark(x, precision):\n"
     "    return precision\n", True),
    ("def run_benchmark(precision):\n    return locals()\n", True),
    ("def run_benchmark(precision):\n    def inner():\n        return precision\n"
     "    return inner()\n", True),
    ("def run_benchmark(precision):\n    pass\n", False),
    ("def setup(precision):\n    pass\n\ndef run_benchmark(x, precision):\n    pass\n",
     False),
    ("def run_benchmark(n, device=None):\n    pass\n", False),
    ("def setup():\n    pass\n\ndef run_benchmark():\n    pass\n", False),
])
def test_takes_precision(tmp_path: Path, source: str, takes: bool) -> None:
    spec = only(tmp_path, "kernels/k.py", source)
    assert spec.takes_precision is takes


def test_kernel_without_setup(tmp_path: Path) -> None:
    spec = only(tmp_path, "kernels/k.py", SIMPLE)
    assert not spec.has_setup
    assert spec.setup_parameters == ()
    assert spec.parameters == ()


def test_signature_unknown_when_bound_by_assignment_or_import(tmp_path: Path) -> None:
    write(tmp_path, "kernels/assigned.py", "def f(precision):\n    pass\n\nrun_benchmark = f\n")
    write(tmp_path, "kernels/imported.py", "from os.path import join as run_benchmark\n")
    specs = by_name(tmp_path)
    for name in ("assigned", "imported"):
        assert specs[name].status == "ok"
        assert specs[name].signature_known is False
        assert specs[name].parameters == ()


# -- bench.yaml ------------------------------------------------------------------------------


def test_folder_bench_yaml_is_applied(tmp_path: Path) -> None:
    write(tmp_path, "kernels/gemm/bench.yaml", """\
        problem_size: {n: 64}
        precisions: [fp32, fp8]
        backends: [cpu, cuda]
        tolerances: {rmse: 1.0e-3}
        """)
    write(tmp_path, "kernels/gemm/gemm.py",
          "import numpy as np\n\ndef run_benchmark(n, precision):\n    return precision\n")
    (spec,) = discover(tmp_path)
    assert spec.status == "ok", spec.error
    assert spec.config_path == "kernels/gemm/bench.yaml"
    assert spec.config is not None
    assert spec.config.problem_size == {"n": 64}
    assert spec.config.precisions == ("fp32", "fp8_e4m3")
    assert spec.backends == ("cpu", "cuda")  # bench.yaml overrides numpy's ("cpu",)


def test_bench_yaml_backends_can_narrow_inferred_backends(tmp_path: Path) -> None:
    write(tmp_path, "kernels/t/bench.yaml", "backends: [cuda]\n")
    write(tmp_path, "kernels/t/t.py", "import torch\n\ndef run_benchmark(device):\n    pass\n")
    (spec,) = discover(tmp_path)
    assert spec.backends == ("cuda",)


def test_bench_yaml_framework_overrides_inference(tmp_path: Path) -> None:
    write(tmp_path, "kernels/k/bench.yaml", "framework: numpy\n")
    write(tmp_path, "kernels/k/k.py", "import torch\n\ndef run_benchmark():\n    pass\n")
    (spec,) = discover(tmp_path)
    assert spec.framework == "numpy"


def test_stem_bench_yaml_wins_over_folder_bench_yaml(tmp_path: Path) -> None:
    write(tmp_path, "kernels/pair/bench.yaml", "backends: [cpu]\ndescription: folder\n")
    write(tmp_path, "kernels/pair/one.bench.yaml", "backends: [cuda]\ndescription: stem\n")
    write(tmp_path, "kernels/pair/one.py", SIMPLE)
    write(tmp_path, "kernels/pair/two.py", SIMPLE)
    specs = by_name(tmp_path)
    one, two = specs["pair.one"], specs["pair.two"]
    assert one.config_path == "kernels/pair/one.bench.yaml"
    assert one.config is not None and one.config.description == "stem"
    assert one.backends == ("cuda",)
    assert two.config_path == "kernels/pair/bench.yaml"
    assert two.config is not None and two.config.description == "folder"
    assert two.backends == ("cpu",)


def test_kernel_without_bench_yaml_has_no_config(tmp_path: Path) -> None:
    spec = only(tmp_path, "kernels/k.py", SIMPLE)
    assert spec.config is None
    assert spec.config_path is None


def test_precisions_on_a_kernel_without_precision_parameter_is_invalid(tmp_path: Path) -> None:
    write(tmp_path, "kernels/native/bench.yaml", "precisions: [fp32, fp16]\n")
    write(tmp_path, "kernels/native/native.py", "def run_benchmark(n=1):\n    pass\n")
    (spec,) = discover(tmp_path)
    assert spec.status == "invalid"
    assert spec.error is not None
    assert "kernels/native/bench.yaml" in spec.error
    assert "'precisions'" in spec.error
    assert "expected" in spec.error


@pytest.mark.parametrize(("backends", "ok"), [("", False), ("backends: [cpu, cuda]\n", True)])
def test_a_reference_backend_the_kernel_does_not_run_on_is_invalid(
        tmp_path: Path, backends: str, ok: bool) -> None:
    write(tmp_path, "kernels/ref/bench.yaml",
          f"{backends}reference: {{backend: cuda, precision: fp64}}\n")
    write(tmp_path, "kernels/ref/ref.py",
          "import numpy as np\n\ndef run_benchmark(precision='fp32'):\n"
          "    return np.ones(4, dtype=precision)\n")
    (spec,) = discover(tmp_path)
    assert (spec.status == "ok") == ok, spec.error
    if not ok:
        assert spec.error == (
            "kernels/ref/bench.yaml: key 'reference.backend': expected one of the kernel's "
            "backends (cpu), got 'cuda': no case of the kernel could compute the reference, "
            "so no case would be checked")


def test_a_precision_spelled_in_capitals_gets_a_hint(tmp_path: Path) -> None:
    write(tmp_path, "kernels/k/bench.yaml", "precisions: [FP32]\n")
    write(tmp_path, "kernels/k/k.py", "def run_benchmark(precision):\n    return precision\n")
    (spec,) = discover(tmp_path)
    assert spec.status == "invalid" and "(did you mean 'fp32'?) (got 'FP32')" in str(spec.error)


def test_precisions_are_allowed_when_the_signature_is_unknown(tmp_path: Path) -> None:
    write(tmp_path, "kernels/alias/bench.yaml", "precisions: [fp32]\n")
    write(tmp_path, "kernels/alias/alias.py",
          "def impl(precision):\n    pass\n\nrun_benchmark = impl\n")
    (spec,) = discover(tmp_path)
    assert spec.status == "ok", spec.error


def test_a_precision_parameter_never_read_is_reported(tmp_path: Path) -> None:
    """A kernel that declares `precision` but never reads it would be timed under every
    label at the one precision it computes in: it runs once, natively, and says why."""
    spec = only(tmp_path, "kernels/k.py", "def run_benchmark(precision):\n    return 1.0\n")
    assert spec.ignores_precision
    assert not spec.takes_precision


def test_precisions_on_a_kernel_that_ignores_its_precision_are_invalid(tmp_path: Path) -> None:
    write(tmp_path, "kernels/lazy/bench.yaml", "precisions: [fp32, fp16]\n")
    write(tmp_path, "kernels/lazy/lazy.py",
          "import numpy as np\n\ndef run_benchmark(precision='fp32'):\n"
          "    return np.ones(4)\n")
    spec = KernelDiscovery(tmp_path).discover()[0]
    assert spec.status == "invalid"
    assert spec.error is not None
    assert "never reads it" in spec.error and "kernels/lazy/bench.yaml" in spec.error


def test_precisions_are_allowed_when_setup_takes_precision(tmp_path: Path) -> None:
    write(tmp_path, "kernels/s/bench.yaml", "precisions: [fp32, bf16]\n")
    write(tmp_path, "kernels/s/s.py",
          "def setup(precision):\n    return precision\n\ndef run_benchmark(state):\n    pass\n")
    (spec,) = discover(tmp_path)
    assert spec.status == "ok", spec.error


BROKEN_YAML = "precisions: [fp32]\nbackends:\n  - cpu\n - cuda\n"  # error at line 4, column 2


def test_broken_bench_yaml_invalidates_only_its_folder(tmp_path: Path) -> None:
    write(tmp_path, "kernels/bad/bench.yaml", BROKEN_YAML)
    write(tmp_path, "kernels/bad/bad.py", SIMPLE)
    write(tmp_path, "kernels/bad/also.py", SIMPLE)
    write(tmp_path, "kernels/good/bench.yaml", "backends: [cpu]\n")
    write(tmp_path, "kernels/good/good.py", SIMPLE)
    write(tmp_path, "kernels/loose.py", SIMPLE)
    specs = by_name(tmp_path)
    assert set(specs) == {"bad", "bad.also", "good", "loose"}
    for name in ("bad", "bad.also"):
        assert specs[name].status == "invalid"
        assert specs[name].error is not None
        assert "kernels/bad/bench.yaml:4:2" in specs[name].error
        assert specs[name].config_path == "kernels/bad/bench.yaml"
    assert specs["good"].status == "ok"
    assert specs["loose"].status == "ok"


@pytest.mark.parametrize("text", [
    "1: x\n",                 # a non-string key
    "timeout_s: !!int x\n",   # an explicit tag PyYAML cannot construct
], ids=["int-key", "bad-tag"])
def test_odd_bench_yaml_invalidates_its_kernel_without_stopping_discovery(
        tmp_path: Path, text: str) -> None:
    write(tmp_path, "kernels/odd/bench.yaml", text)
    write(tmp_path, "kernels/odd/odd.py", SIMPLE)
    write(tmp_path, "kernels/fine.py", SIMPLE)
    specs = by_name(tmp_path)
    assert specs["fine"].status == "ok"
    assert specs["odd"].status == "invalid"
    assert specs["odd"].error is not None
    assert "kernels/odd/bench.yaml" in specs["odd"].error


def test_schema_error_in_bench_yaml_invalidates_the_kernel(tmp_path: Path) -> None:
    write(tmp_path, "kernels/k/bench.yaml", "backends: [gpu]\n")
    write(tmp_path, "kernels/k/k.py", SIMPLE)
    (spec,) = discover(tmp_path)
    assert spec.status == "invalid"
    assert spec.error is not None
    assert "kernels/k/bench.yaml" in spec.error
    assert "backends[0]" in spec.error


def test_broken_bench_yaml_with_readable_function_name_uses_it(tmp_path: Path) -> None:
    write(tmp_path, "kernels/named/bench.yaml", "function_name: compute\n" + BROKEN_YAML)
    write(tmp_path, "kernels/named/named.py", "def compute():\n    pass\n")
    (spec,) = discover(tmp_path)
    assert spec.name == "named"
    assert spec.function_name == "compute"
    assert spec.status == "invalid"
    assert spec.error is not None
    assert "kernels/named/bench.yaml:5:2" in spec.error


def test_bench_yaml_with_dangerous_check_never_runs_it(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    write(tmp_path, "kernels/k/bench.yaml", f"""\
        skip_conditions:
          - reason: nope
            check: "__import__('os').system('touch {marker}')"
        """)
    write(tmp_path, "kernels/k/k.py", SIMPLE)
    (spec,) = discover(tmp_path)
    assert spec.status == "invalid"
    assert spec.error is not None and "skip_conditions[0].check" in spec.error
    assert not marker.exists()


# -- the repository's own kernels ------------------------------------------------------------


def test_bundled_kernels_are_discovered() -> None:
    specs = KernelDiscovery(REPO_ROOT).discover()
    assert len(specs) >= 8
    assert [s.name for s in specs if s.status != "ok"] == []
    assert {"numpy", "pytorch", "jax"} <= {s.framework for s in specs}
    assert len({s.name for s in specs}) == len(specs)
    assert [s.name for s in specs] == sorted(s.name for s in specs)
    for spec in specs:
        assert (REPO_ROOT / spec.path).is_file()
        assert not spec.path.startswith("/")


# -- function_name: Class.method ----------------------------------------------------------------


def test_a_class_method_is_a_kernel_with_the_methods_parameters(tmp_path: Path) -> None:
    write(tmp_path, "kernels/ops/ops.py", """
        class Ops:
            def run(self, n, precision):
                return precision

            @staticmethod
            def fixed(n, device):
                return n
    """)
    write(tmp_path, "kernels/ops/bench.yaml", "function_name: Ops.run\nproblem_size: {n: 4}\n")
    write(tmp_path, "kernels/fixed/fixed.py", "from ops_lib import Ops\n")
    write(tmp_path, "kernels/fixed/bench.yaml", "function_name: Ops.fixed\n")
    write(tmp_path, "kernels/missing/missing.py", "class Ops:\n    pass\n")
    write(tmp_path, "kernels/missing/bench.yaml", "function_name: Ops.run\n")
    specs = by_name(tmp_path)
    assert specs["ops"].function_name == "Ops.run"
    assert specs["ops"].parameters == ("n", "precision")  # self is not one
    assert specs["ops"].takes_precision
    assert specs["fixed"].signature_known is False  # imported: its parameters are unseen
    missing = specs["missing"]  # names Ops.run, but Ops has no run
    assert missing.status == "invalid"
    assert missing.error == ("kernels/missing/bench.yaml: key 'function_name': expected a "
                             "function defined at module level in kernels/missing/missing.py, "
                             "which has no Ops.run()")


def test_a_symlinked_folder_is_walked_once_and_a_fifo_is_invalid(tmp_path: Path) -> None:
    """A linked folder was skipped without a word; a FIFO named like a kernel hung discovery."""
    import os

    write(tmp_path, "kernels/real/r.py", SIMPLE)
    (tmp_path / "kernels" / "linked").symlink_to(tmp_path / "kernels" / "real")
    (tmp_path / "kernels" / "real" / "loop").symlink_to(tmp_path / "kernels")  # a cycle
    os.mkfifo(tmp_path / "kernels" / "pipe.py")
    found = by_name(tmp_path)
    assert sorted(found) == ["pipe", "real.r"]  # linked/ is real/ walked already
    assert found["pipe"].status == "invalid"
    assert "a FIFO, not a regular file" in str(found["pipe"].error)
