"""The engine's own launch checks that refuse EAGLE-3 under a launch option.

The rule pack names, per option, the messages such a check raises (``refusals``) and where the
engine keeps its launch checks (``refusal_files``); a refusal is believed only where this
release's source holds a ``raise`` or an ``assert`` with a matching message, so the pack cannot
drift from the engine: SGLang's "Pipeline parallelism ... speculative decoding" assertion, say.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Any

from eagle3lint.source.ast_strings import message_text
from eagle3lint.source.engine import Engine
from eagle3lint.source.rulepack import OptionSpec
from eagle3lint.source.sources import decode_source, parse_text, read_source


@dataclass(frozen=True)
class LaunchRefusal:
    """A check that stops a launch with EAGLE-3 when ``option`` is on."""

    option: str
    path: str  # relative to the engine's source root: <package>/...
    line: int
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"option": self.option, "path": self.path, "line": self.line, "message": self.message}


def _needles(spec: OptionSpec) -> list[tuple[str, bool]]:
    """Cheap text every matching file holds, and whether to compare it ignoring case: the first
    words of each refusal's literal start (a message is often split over several string
    literals, so the whole pattern cannot be searched in the file's text)."""
    out = []
    for pattern in spec.refusals:
        folded = bool(pattern.flags & re.IGNORECASE)
        literal = re.match(r"[\w ,'-]*", pattern.pattern.removeprefix("(?i)"))
        words = (literal.group(0) if literal else "").split()[:2]
        needle = " ".join(w for w in words if w.isalnum() or "-" in w)
        out.append((needle.lower() if folded else needle, folded))
    return out


def _holds(text: str, needles: list[tuple[str, bool]]) -> bool:
    lowered = ""
    for needle, folded in needles:
        if folded:
            lowered = lowered or text.lower()
            if needle in lowered:
                return True
        elif needle in text:
            return True
    return False


def _files(engine: Engine, spec: OptionSpec) -> list[str]:
    root = str(engine.root)
    out: list[str] = []
    for rel in spec.refusal_files:
        path = os.path.join(root, rel)
        if rel.endswith("/"):
            if os.path.isdir(path):
                out.extend(sorted(os.path.join(path, name) for name in os.listdir(path) if name.endswith(".py")))
        elif os.path.isfile(path):
            out.append(path)
    return out


def read_launch_refusals(engine: Engine) -> list[LaunchRefusal]:
    """Every option's refusal this release's source confirms (first per file and message)."""
    found: list[LaunchRefusal] = []
    for spec in engine.pack.options.values():
        if not spec.refusals:
            continue
        needles = _needles(spec)
        for path in _files(engine, spec):
            data = read_source(path)
            if not isinstance(data, bytes):
                continue
            text = decode_source(path, data)
            if not isinstance(text, str) or not _holds(text, needles):
                continue
            tree = parse_text(path, text)
            if not isinstance(tree, ast.Module):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, (ast.Assert, ast.Raise)):
                    continue
                message = message_text(node.msg) if isinstance(node, ast.Assert) else message_text(node.exc)
                if message and any(p.search(message) for p in spec.refusals):
                    rel = os.path.relpath(path, str(engine.source_root)).replace(os.sep, "/")
                    found.append(LaunchRefusal(spec.name, rel, node.lineno, " ".join(message.split())))
    return found
