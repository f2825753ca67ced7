"""Fetching releases and finding the engine: pip's package index, wheels read with range
requests, PEP 440 release queries, releases unpacked into the user cache, the libraries read
beside an engine, and which engine (installed, a checkout, a release, a list of files) a run
reads.

Takes release specs and paths; gives engine trees on disk and ``Engine`` values with their
libraries (asks the registry, ``eagle3lint.engines``, which engine a tree is).
"""
