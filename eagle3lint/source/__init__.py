"""Reading the engine's source: the engine tree (its version, rule pack, plugins), each file parsed once into a summary (the summary walk, capture facts, suppressions), and the project index that links them.

Takes a folder of Python source; gives ``Engine``, ``ModuleSummary`` and ``ProjectIndex``. Builds on ``common`` only.
"""
