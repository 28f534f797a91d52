"""The probes a ``skip_conditions`` check may ask about the machine, e.g.
``torch.cuda.is_available()``, ``module_available("cupy")`` or ``sys.version_info``.

Each probe is one whitelisted call or attribute read. Probes run lazily, only when a condition
reaches them, and never raise: a framework that is missing or fails to import yields the
probe's "absent" value (False, 0, None or ""). Frameworks are imported inside the probe
functions only, so importing this module imports none of them.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

__all__ = ["PROBES", "Probe", "describe_probes"]



def _any_text(value: str) -> bool:
    return True


@dataclass(frozen=True)
class Probe:
    """One whitelisted probe: a call ``f()`` / ``f("x")`` or an attribute read ``a.b``."""

    name: str
    func: Callable[..., object] = field(repr=False)
    kind: Literal["call", "attribute"] = "call"
    arg: str | None = None
    """Placeholder name of the single string argument (``"name"``), or None for no argument."""
    absent: object = None
    """What the probe returns when its framework is missing or the probe fails."""
    valid_arg: Callable[[str], bool] = field(default=_any_text, repr=False)

    @property
    def arity(self) -> int:
        return 0 if self.arg is None else 1

    @property
    def usage(self) -> str:
        """How the probe is written in a condition, e.g. ``module_available("name")``."""
        if self.kind == "attribute":
            return self.name
        return f'{self.name}("{self.arg}")' if self.arg is not None else f"{self.name}()"

    def read(self, *args: str) -> object:
        """Run the probe; any failure yields :attr:`absent` instead of an exception."""
        try:
            return self.func(*args)
        except Exception:
            return self.absent


def _import(name: str) -> Any:
    return importlib.import_module(name)


def _torch_cuda_available() -> bool:
    return bool(_import("torch").cuda.is_available())


def _torch_cuda_device_count() -> int:
    return int(_import("torch").cuda.device_count())


def _torch_mps_available() -> bool:
    return bool(_import("torch").backends.mps.is_available())


def _torch_version(attribute: str) -> Callable[[], str | None]:
    def probe() -> str | None:
        value = getattr(_import("torch").version, attribute, None)
        return value if isinstance(value, str) else None

    return probe


def _jax_default_backend() -> str:
    return str(_import("jax").default_backend())


def _jax_device_count() -> int:
    return int(_import("jax").device_count())


def _cupy_available() -> bool:
    return bool(_import("cupy").cuda.is_available())


def _cpu_count() -> int:
    return os.cpu_count() or 0


def _module_available(name: str) -> bool:
    root = name.partition(".")[0]
    if root in sys.modules:
        return True
    return importlib.util.find_spec(root) is not None


def _env(name: str) -> str | None:
    return os.environ.get(name)


def _version_info() -> tuple[int, int, int]:
    return (sys.version_info.major, sys.version_info.minor, sys.version_info.micro)


def _sys_platform() -> str:
    return sys.platform


def _is_module_name(value: str) -> bool:
    return all(part.isidentifier() for part in value.split("."))


def _is_env_name(value: str) -> bool:
    return value != "" and "=" not in value and "\0" not in value


def _probe_table(*probes: Probe) -> Mapping[str, Probe]:
    return MappingProxyType({probe.name: probe for probe in probes})


PROBES: Mapping[str, Probe] = _probe_table(
    Probe("torch.cuda.is_available", _torch_cuda_available, absent=False),
    Probe("torch.cuda.device_count", _torch_cuda_device_count, absent=0),
    Probe("torch.backends.mps.is_available", _torch_mps_available, absent=False),
    Probe("torch.version.cuda", _torch_version("cuda"), kind="attribute"),
    Probe("torch.version.hip", _torch_version("hip"), kind="attribute"),
    Probe("jax.default_backend", _jax_default_backend, absent=""),
    Probe("jax.device_count", _jax_device_count, absent=0),
    Probe("cupy.is_available", _cupy_available, absent=False),
    Probe("platform.system", platform.system, absent=""),
    Probe("platform.machine", platform.machine, absent=""),
    Probe("os.cpu_count", _cpu_count, absent=0),
    Probe("sys.platform", _sys_platform, kind="attribute", absent=""),
    Probe("sys.version_info", _version_info, kind="attribute", absent=()),
    Probe("module_available", _module_available, arg="name", absent=False,
          valid_arg=_is_module_name),
    Probe("env", _env, arg="NAME", valid_arg=_is_env_name),
)
"""The whitelist of probes, by dotted name (without ``()``)."""


def describe_probes() -> str:
    """One line listing every probe as it is written in a condition."""
    return ", ".join(probe.usage for probe in PROBES.values())


