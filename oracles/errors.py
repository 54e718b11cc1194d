"""Every error synth raises on purpose has one root, `SynthError`, which says how `synth` exits
on it (`exit_code`) and how its message starts (`label`); `synth`'s `main()` is the one place
that turns them into a message and an exit status. An error the user fixes by changing what they
gave (arguments, a config, a file) is an `InputError`: exit 2. Each class also keeps the builtin
it specialises (ValueError, RuntimeError, ...), so callers that catch those still do. It lives in
the lowest package (oracles/ imports nothing of synth/ or training/), so every package can use it."""
from __future__ import annotations


class SynthError(Exception):
    """Something synth could not do and says why: exit 1 unless a subclass says otherwise."""
    exit_code = 1
    label = "error"  # `synth: <label>: <message>`; None: the message alone


class InputError(SynthError, ValueError):
    """Bad input (arguments, config, a file's content): the user fixes it and runs again. Exit 2."""
    exit_code = 2


class MissingInput(InputError, FileNotFoundError):
    """A file or folder the command needs is not there."""


class ToolchainMissing(SynthError, RuntimeError):
    """The configured compiler is not there. Never a pass: callers surface this to the user."""
    exit_code = 2


class SandboxStarved(SynthError, RuntimeError):
    """The machine could not start the processes or threads a check needed, however long synth
    waited (oracles/isolation/starved.py): never a verdict."""
