"""Which case a case's output is checked against: bench.yaml `reference` or the reference
implementation. The reference case runs first and saves its output; the others load it."""

from __future__ import annotations

from typing import NamedTuple

from kernbench.results.model import Case, Implementation


class ReferenceKey(NamedTuple):
    """The case whose saved output a case is checked against."""

    kernel: str
    backend: str
    precision: str
    point: str
    """The sweep point: each point of a sweep has its own reference output."""
    implementation: str
    """The reference implementation ("" for a kernel with one)."""

    @property
    def label(self) -> str:
        """How accuracy records name the reference."""
        if self.implementation:
            return (f"reference implementation {self.implementation} "
                    f"[{self.backend},{self.precision}]")
        return f"reference case [{self.backend},{self.precision}]"


def reference_implementation(case: Case) -> Implementation | None:
    """The kernel's reference implementation (bench.yaml `reference: {implementation}`)."""
    config = case.kernel.config
    name = config.reference_implementation if config else None
    if config is None or name is None:
        return None
    return next(i for i in config.implementations if i.name == name)


def reference_key(case: Case) -> ReferenceKey | None:
    """The reference case of `case`: bench.yaml `reference` {backend, precision,
    implementation} with the case's own for what it leaves out; the reference implementation
    runs on the case's backend if it can, else on its first."""
    config = case.kernel.config
    impl = reference_implementation(case)
    if config is None or (not config.reference and impl is None):
        return None
    reference = config.reference or {}
    backend = reference.get("backend", case.backend)
    if impl is not None and "backend" not in reference and impl.backends \
            and backend not in impl.backends:
        backend = impl.backends[0]
    return ReferenceKey(case.kernel.name, backend, reference.get("precision", case.precision),
                        case.point or "", impl.name if impl else "")


def is_reference(case: Case) -> bool:
    """Whether `case` is itself the reference case of its kernel."""
    key = reference_key(case)
    name = case.implementation.name if case.implementation else ""
    return key is not None and (case.backend, case.precision, name) == (
        key.backend, key.precision, key.implementation)
