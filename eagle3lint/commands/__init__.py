"""The sub-commands ``eagle3lint.cli`` loads lazily: ``fix``, ``verify``/``preflight``, ``engine-run``.

Takes parsed options; drives ``run`` and writes ``report`` output.
"""
