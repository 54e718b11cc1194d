"""What a caller of an oracle may be told instead of a verdict."""
from __future__ import annotations


class ToolchainMissing(RuntimeError):
    """The configured compiler is not there. Never a pass: callers surface this to the user."""
