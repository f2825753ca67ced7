"""Errors that end a run with exit code 2 and a message for the user, never a traceback."""

from __future__ import annotations


class UsageError(Exception):
    """Bad command line, configuration or environment: reported, exit code 2."""


class ReleaseFetchError(UsageError):
    """A requested engine release could not be downloaded or unpacked."""
