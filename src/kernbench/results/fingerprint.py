"""The machine fingerprint: a stable id of the hardware and OS, hashed from environment data.

It names a machine in history records and their file names, so it lives beside them; being a
pure hash of an environment mapping it needs nothing that probes the machine.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["machine_fingerprint"]


def machine_fingerprint(env: Mapping[str, Any]) -> str:
    """A stable 16-hex-digit id of the hardware/OS (never hostname or time)."""
    cpu, os_info = env.get("cpu") or {}, env.get("os") or {}
    gpu_names = sorted(str(g.get("name")) for g in env.get("gpus") or [])
    key = [cpu.get("model"), cpu.get("logical_cores"), os_info.get("machine"),
           os_info.get("system"), gpu_names]  # fmt: skip
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
