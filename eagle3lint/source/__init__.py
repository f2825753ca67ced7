"""Reading the engine's source: the engine tree (``Engine``: root, version, rule pack, plugins),
each file parsed once into a summary (the summary walk, its data, capture facts, suppression
comments), parsed in parallel, and the project index that links the summaries.

Takes a folder of Python source; gives ``Engine``, ``ModuleSummary`` and ``ProjectIndex``.
Builds on ``common`` only.
"""
