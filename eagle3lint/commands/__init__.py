"""The sub-commands ``eagle3lint.cli`` loads when named: ``fix``, ``verify`` and ``preflight``,
``engine-run``.

Takes the command line's options; drives ``run`` and writes what it found.
"""
