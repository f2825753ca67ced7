"""Fetching releases and finding the engine: pip's package index, wheels read by range requests, PEP 440 release queries, the release cache, libraries read beside the engine, and which installed engine or tree a run reads.

Takes release specs and paths; gives engine trees on disk and the ``Engine`` values with their adapters (asks the registry, ``eagle3lint.engines``).
"""
