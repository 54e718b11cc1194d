"""The environment every compiler, build script, test and tool process gets: an allowlist, and
nothing named like a secret (keys come only from the environment and never reach a subprocess)."""
from __future__ import annotations

import fnmatch
import os

ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "SOURCE_DATE_EPOCH")
SECRET_PATTERNS = ("*_KEY", "*_KEY_*", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*CREDENTIAL*", "OPENAI_*", "ANTHROPIC_*")


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_PATTERNS)


def safe_environ(extra: dict[str, str] | None = None, source: dict[str, str] | None = None) -> dict[str, str]:
    """Allowlisted variables of `source` plus `extra`; nothing secret-looking survives either."""
    source = os.environ if source is None else source
    env = {k: source[k] for k in ENV_ALLOWLIST if k in source}
    env.update(extra or {})
    return {k: v for k, v in env.items() if not is_secret_name(k)}
