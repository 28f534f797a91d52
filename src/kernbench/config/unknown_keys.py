"""Keys a bench.yaml or suite file does not know, all reported at once, each with the nearest
known key (did-you-mean), and the dotted path that names a key in messages."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kernbench.errors import ConfigError

__all__ = ["UnknownKey", "UnknownKeysError", "key_path", "unknown_keys"]


class UnknownKeysError(ConfigError):
    """Several unknown keys in one file: each with the nearest known key, then the keys each
    mapping knows."""

    def __init__(self, source: str, unknown: list[UnknownKey]) -> None:
        super().__init__(source, unknown[0].path, unknown[0].expected)
        keys = ", ".join(f"'{u.path}'" + (f" (did you mean '{u.hint}'?)" if u.hint else "")
                         for u in unknown)
        known = {u.parent or "the top level": u.allowed for u in unknown}
        self.message = (f"{source}: {len(unknown)} unknown keys: {keys}; expected known keys: "
                        + "; ".join(f"at {where}: {', '.join(allowed)}"
                                    for where, allowed in known.items()))
        self.args = (self.message,)


@dataclass(frozen=True)
class UnknownKey:
    """One key a mapping of the file does not know."""

    path: str
    parent: str
    allowed: tuple[str, ...]
    hint: str | None

    @property
    def expected(self) -> str:
        text = f"a known key: one of {', '.join(self.allowed)}"
        return text + (f" (did you mean '{self.hint}'?)" if self.hint else "")


def unknown_keys(error: Any) -> list[UnknownKey]:
    """Each unknown key an additionalProperties error found, with the nearest known one."""
    allowed = tuple(sorted(error.schema.get("properties", {})))
    unknown = sorted(str(k) for k in error.instance if k not in allowed) or ["?"]
    return [UnknownKey(key_path([*error.absolute_path, name]), key_path(error.absolute_path),
                       allowed, next(iter(difflib.get_close_matches(name, allowed, n=1)), None))
            for name in unknown]


def key_path(parts: Iterable[object]) -> str:
    """`skip_conditions[0].check` from ('skip_conditions', 0, 'check')."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
