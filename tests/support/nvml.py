"""A pynvml stand-in on one GPU that counts the nvmlInit calls not yet undone (NVML counts
them, and a measurement must leave none behind)."""

from __future__ import annotations


class OneGpuNVML:
    """pynvml on one GPU: init and shutdown counted, the device found by index."""

    def __init__(self) -> None:
        self.open = 0
        """nvmlInit calls not yet undone by nvmlShutdown."""

    def nvmlInit(self) -> None:
        self.open += 1

    def nvmlShutdown(self) -> None:
        self.open -= 1

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"h{index}"
