"""``eagle3lint fix``: findings -> planned edits (from templates) -> libcst edits -> proof -> write.

The flow, one module per step: ``templates`` (rule-pack data), ``planner`` + each engine's patterns
(``eagle3lint/engines/<name>/fixes.py``: which template fits a finding, with what names), ``apply`` (libcst), ``proof`` (parse, AST
equality, re-check, second run), ``write`` (atomic), ``diff`` (unified diffs), ``session``
(ties them together for the CLI), ``attach`` (the fixes ``check --format json``/``full`` show).

Importing this package does not import libcst; only files that receive edits are parsed with it.
"""
