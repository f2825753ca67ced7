"""The ``eagle3lint`` command (the console script's entry point, and ``python -m eagle3lint``).

Only the interrupt handling is imported before Ctrl-C is ours: importing the command line
takes a noticeable part of a second, and an interrupt during it exits as one anywhere else
does (``interrupts``).
"""

from __future__ import annotations

import sys

from eagle3lint.common import interrupts

TYPE_CHECKING = False  # ``typing`` is not loaded before Ctrl-C is handled
if TYPE_CHECKING:
    from typing import NoReturn


def main() -> NoReturn:
    interrupts.install()
    code = interrupts.EXIT_INTERRUPTED
    try:
        code = _command()
        interrupts.finishing()
    except KeyboardInterrupt:  # in the imports, or past the command's own handling
        interrupts.finishing()
        code = interrupts.EXIT_INTERRUPTED
    interrupts.exit_now(code)


def _command() -> int:
    try:
        from eagle3lint.cli import main as run

        run()
    except SystemExit as exc:
        return _exit_code(exc.code)
    return 0


def _exit_code(value: object) -> int:
    """What the interpreter would exit with for ``sys.exit(value)``."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


if __name__ == "__main__":
    main()
