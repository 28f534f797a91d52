"""Backends: where a case runs and how its work is waited for and timed.

A *framework* (numpy, pytorch, jax, cupy) is what the kernel is written in; a *backend*
(one of :data:`~kernbench.results.vocabulary.BACKEND_NAMES`) is the device kind a case runs
on. :func:`backend_for` returns the object that knows, for one framework, whether a device
kind is available here, the device string to hand the kernel, how to synchronise a result,
which timer to use and which dtype stands for each precision. Framework modules are
imported only inside these methods, in the worker process.
"""

from __future__ import annotations

from kernbench.measure.backends.base import Backend, CpuOnlyBackend, wait_for_result
from kernbench.measure.backends.jax_backend import JaxBackend
from kernbench.measure.backends.numpy_backend import NumpyBackend
from kernbench.measure.backends.torch_backend import TorchBackend
from kernbench.results.vocabulary import BACKEND_FRAMEWORK

__all__ = ["Backend", "backend_for", "wait_for_result"]


def backend_for(framework: str) -> Backend:
    """The backend object for a framework name as discovery reports it (a Triton kernel gets
    PyTorch's: see :data:`~kernbench.results.vocabulary.BACKEND_FRAMEWORK`)."""
    framework = BACKEND_FRAMEWORK.get(framework, framework)
    if framework == "pytorch":
        return TorchBackend()
    if framework == "jax":
        return JaxBackend()
    if framework == "numpy":
        return NumpyBackend()
    if framework == "cupy":
        from kernbench.measure.backends.cupy_backend import CupyBackend

        return CupyBackend()
    return CpuOnlyBackend(framework)
