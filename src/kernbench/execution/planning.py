"""Which cases a kernel expands to: implementation x backend x precision x sweep point, under
the run's selection. Pure functions of the kernel's spec and the run's settings."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence

from kernbench.config.sweeps import problem_size_at
from kernbench.errors import KernbenchError
from kernbench.execution.references import is_reference
from kernbench.execution.settings import RunSettings
from kernbench.measure.precision import canonical
from kernbench.results.model import NATIVE, Case, Implementation, KernelSpec, SweepPoint
from kernbench.results.vocabulary import GPU_CAPABLE_FRAMEWORKS

DEFAULT_PRECISION = "fp32"


def plan_backends(spec: KernelSpec, requested: tuple[str, ...] | None,
                  implementation: Implementation | None = None) -> list[str]:
    declared = implementation.backends if implementation and implementation.backends \
        else spec.backends
    if requested is None:
        return list(declared)
    framework = implementation.framework if implementation else spec.framework
    gpu_capable = framework in GPU_CAPABLE_FRAMEWORKS and "cuda" in declared
    return [b for b in requested if b in declared or (b == "rocm" and gpu_capable)]


def plan_precisions(spec: KernelSpec, requested: tuple[str, ...] | None) -> list[str]:
    if not spec.takes_precision:
        return [NATIVE]
    declared = list(spec.config.precisions) if spec.config and spec.config.precisions else []
    if requested is None:
        return declared or [DEFAULT_PRECISION]
    wanted = [canonical(p) for p in requested]  # "fp8" asks for what bench.yaml calls fp8_e4m3
    return [p for p in declared if p in wanted] if declared else list(dict.fromkeys(wanted))


def select_kernels(specs: Iterable[KernelSpec], filters: Sequence[str]) -> list[KernelSpec]:
    """Kernels whose name matches any of the glob `filters` (all when there are none)."""
    if not filters:
        return list(specs)
    return [s for s in specs if any(fnmatch.fnmatchcase(s.name, f) for f in filters)]


def unmatched_filters(specs: Iterable[KernelSpec], filters: Sequence[str]) -> list[str]:
    """The --filter globs that match no kernel: `gemm*,sofmax` runs gemm and says nothing of
    the typo unless someone asks."""
    names = [s.name for s in specs]
    return [f for f in filters if not any(fnmatch.fnmatchcase(n, f) for n in names)]


def check_sweep_globs(settings: RunSettings, specs: Iterable[KernelSpec]) -> None:
    """Every suite-file `sweeps` glob must match a discovered kernel: a typo would otherwise
    leave the kernel at its bench.yaml sweep without a word."""
    names = sorted(s.name for s in specs)
    for pattern, _ in settings.sweeps:
        if not any(fnmatch.fnmatchcase(name, pattern) for name in names):
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            raise KernbenchError(f"{settings.sweeps_source}: key 'sweeps.{pattern}': expected a "
                                 f"glob matching a kernel (kernels: {shown or 'none'})")


def not_selected(spec: KernelSpec, settings: RunSettings) -> str | None:
    """Why a valid kernel has no case under the run's --backends and --precision, or None:
    it declares none of the backends, or none of the precisions, asked for. (A kernel that
    runs at its native precision has no precision to select: it runs whatever is asked.)"""
    variants = (spec.config.implementations if spec.config and spec.config.implementations
                else (None,))
    if not any(plan_backends(spec, settings.backends, v) for v in variants):
        backends = sorted({b for v in variants for b in (v.backends if v and v.backends
                                                          else spec.backends)})
        return (f"none of its backends ({', '.join(backends)}) is among --backends "
                f"{','.join(settings.backends or ())}")
    if not plan_precisions(spec, settings.precisions):
        precisions = spec.config.precisions if spec.config else ()
        return (f"none of its precisions ({', '.join(precisions)}) is among --precision "
                f"{','.join(settings.precisions or ())}")
    return None


def selection(spec: KernelSpec, settings: RunSettings) -> tuple[list[str], list[str]] | str:
    """What a valid kernel runs under the run's --backends and --precision, (backends,
    precisions), or why it runs nothing (:func:`not_selected`): what ``run --list`` shows."""
    reason = not_selected(spec, settings)
    if reason is not None:
        return reason
    variants = (spec.config.implementations if spec.config and spec.config.implementations
                else (None,))
    backends = dict.fromkeys(b for v in variants for b in plan_backends(spec, settings.backends, v))
    return list(backends), plan_precisions(spec, settings.precisions)


def plan_cases(spec: KernelSpec, settings: RunSettings) -> list[Case]:
    """The cases of one valid kernel under the run's backend and precision selection: each
    implementation (when it has several) x backend x precision x sweep point. Reference cases
    (bench.yaml `reference`, or the reference implementation) come first, so the others can
    compare to their saved outputs."""
    config = spec.config
    problem_size = config.problem_size if config else None
    points = _sweep_points(spec, settings)
    sizes = ([(problem_size_at(problem_size, p), p.label) for p in points] if points
             else [(problem_size, None)])
    variants: tuple[Implementation | None, ...] = (config.implementations if config and
                                                   config.implementations else (None,))
    cases = [Case(spec, backend, precision, size, point, impl)
             for impl in variants
             for backend in plan_backends(spec, settings.backends, impl)
             for precision in plan_precisions(spec, settings.precisions)
             for size, point in sizes]
    return sorted(cases, key=lambda c: not is_reference(c))


def _sweep_points(spec: KernelSpec, settings: RunSettings) -> tuple[SweepPoint, ...]:
    """The kernel's bench.yaml sweep, or the suite file's sweep for it (the first glob that
    matches its name wins)."""
    for pattern, points in settings.sweeps:
        if fnmatch.fnmatchcase(spec.name, pattern):
            problem_size = spec.config.problem_size if spec.config else None
            if problem_size is not None and not isinstance(problem_size, Mapping):
                raise KernbenchError(
                    f"{settings.sweeps_source}: key 'sweeps.{pattern}': kernel {spec.name} has "
                    f"a scalar problem_size ({problem_size!r}); a sweep needs a mapping, or none")
            return points
    return spec.config.sweep if spec.config else ()


def plan_key(item: Case | KernelSpec) -> str:
    """The shard key: a kernel's cases share its shard, so a bench.yaml reference case stays
    beside the others."""
    return item.kernel.name if isinstance(item, Case) else item.name
