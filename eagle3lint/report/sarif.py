"""SARIF 2.1.0 for code scanning: rules generated from the rule docs, repository-relative paths,
the engine call sites as related locations, and fingerprints that survive unrelated edits.

Findings the run does not report are carried, not dropped: one silenced by a suppression comment
as a result with an accepted ``inSource`` suppression, one recorded in the baseline with an
accepted ``external`` suppression and ``baselineState: "unchanged"`` (the reported ones are then
``"new"``). Code scanning closes an alert whose result carries an accepted suppression, and
reads a result that is missing from an upload as fixed, which a baselined finding is not.

Message texts are shown by viewers as they are: text from analysed files in them has its control
characters written out (``line_text``)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from eagle3lint import __version__
from eagle3lint.common.escape import display_path, line_text
from eagle3lint.engines import rule_registry
from eagle3lint.report.paths import relative_posix, report_base
from eagle3lint.source.sources import tree_path

if TYPE_CHECKING:
    from eagle3lint.checks.base import Rule
    from eagle3lint.common.findings import Finding
    from eagle3lint.model.result import CheckResult

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
# Placeholder: the project's public home is not decided yet; code scanning links rules here.
INFORMATION_URI = "https://pypi.org/project/eagle3lint/"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "eagle3lint/v1"

LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def fingerprint(finding: Finding) -> str:
    """Stable across runs and line shifts: what is wrong (code, member) and where (qualname)."""
    key = "\0".join([finding.code, finding.qualname, finding.method, finding.variant or ""])
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def rule_descriptor(rule: type[Rule], engine: str | None = None) -> dict[str, Any]:
    """A SARIF rule from the rule's documentation (the run's engine's part where it has one)."""
    sections = rule.doc_sections(engine)
    full = "\n\n".join(s for s in (sections.get("What it does"), sections.get("Why is this bad?")) if s)
    docs = rule.documentation(engine)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary()},
        "fullDescription": {"text": full or rule.summary()},
        "help": {"text": docs, "markdown": docs},
        "defaultConfiguration": {"level": LEVELS[rule.severity], "enabled": rule.default_enabled},
        "properties": {"tags": ["eagle3", rule.family], "fixSafety": rule.fix_safety},
    }


class Locator:
    """Turns file paths into SARIF artifact locations relative to one base (``%SRCROOT%``)."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def artifact(self, path: str) -> dict[str, str]:
        rel = relative_posix(path, self.base)
        if rel is None:  # outside the repository: an absolute URI, no base
            return {"uri": Path(tree_path(path)).as_uri()}
        # The name's bytes, percent-encoded (RFC 3986): a file name that is not valid UTF-8
        # (``\xff\xfe.py``, held as surrogates) has no text form to quote.
        return {"uri": quote(os.fsencode(rel)), "uriBaseId": SRCROOT}

    def physical(self, path: str, line: int, column: int | None = None) -> dict[str, Any]:
        location: dict[str, Any] = {"artifactLocation": self.artifact(path)}
        if line >= 1:
            region: dict[str, int] = {"startLine": line}
            if column is not None and column >= 1:
                region["startColumn"] = column
            location["region"] = region
        return location

    def original_uri_base_ids(self) -> dict[str, Any]:
        return {SRCROOT: {"uri": self.base.as_uri().rstrip("/") + "/"}}


def sarif_result(
    finding: Finding,
    rule_index: dict[str, int],
    locator: Locator,
    suppression: dict[str, str] | None = None,
    baseline_state: str | None = None,
) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "class": finding.class_name,
        "qualname": finding.qualname,
        "member": finding.method,
        "rule": finding.rule,
    }
    if finding.variant is not None:
        properties["variant"] = finding.variant
    if finding.fix is not None:
        properties["fix"] = finding.fix.to_json()
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": LEVELS.get(finding.severity, "warning"),
        "message": {"text": line_text(finding.message)},
        "locations": [
            {
                "physicalLocation": locator.physical(finding.path, finding.line, finding.column),
                "logicalLocations": [
                    {"fullyQualifiedName": finding.qualname, "name": finding.class_name, "kind": "type"}
                ],
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(finding)},
        "properties": properties,
    }
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    if finding.related:
        result["relatedLocations"] = [
            {
                "id": number,
                "physicalLocation": locator.physical(site.path, site.line),
                "message": {"text": line_text(site.message)},
            }
            for number, site in enumerate(finding.related, start=1)
        ]
    if suppression is not None:
        result["suppressions"] = [suppression]
    if baseline_state is not None:
        result["baselineState"] = baseline_state
    return result


def sarif_results(result: CheckResult, rule_index: dict[str, int], locator: Locator) -> list[dict[str, Any]]:
    """The reported findings, then those a suppression comment silenced, then those the baseline
    holds (module docstring)."""
    compared = "new" if result.baseline is not None else None
    out = [sarif_result(f, rule_index, locator, baseline_state=compared) for f in result.findings]
    in_source = {"kind": "inSource", "status": "accepted", "justification": "silenced by a suppression comment in the source"}
    out += [sarif_result(f, rule_index, locator, in_source) for f in result.suppressed_findings]
    if result.baseline is not None:
        name = line_text(display_path(result.baseline))
        external = {"kind": "external", "status": "accepted", "justification": f"recorded in the baseline {name}"}
        out += [sarif_result(f, rule_index, locator, external, "unchanged") for f in result.baselined_findings]
    return out


def result_to_sarif(result: CheckResult, cwd: Path | None = None) -> dict[str, Any]:
    locator = Locator(report_base(result.engine.root, cwd))
    rules = list(rule_registry())
    rule_index = {rule.code: number for number, rule in enumerate(rules)}
    notifications = [
        {
            "level": "error",
            "message": {"text": line_text(f"could not be analysed: {error.message}")},
            "locations": [{"physicalLocation": locator.physical(error.path, 0)}],
        }
        for error in result.errors
    ]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "eagle3lint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [rule_descriptor(rule, result.engine.name) for rule in rules],
            }
        },
        "originalUriBaseIds": locator.original_uri_base_ids(),
        "invocations": [
            {"executionSuccessful": not result.errors, "toolExecutionNotifications": notifications}
        ],
        "results": sarif_results(result, rule_index, locator),
        "properties": {"engine": result.engine.to_json()},
    }
    log: dict[str, Any] = valid_text({"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]})
    return log


def valid_text(value: Any) -> Any:
    """``value`` with every string made valid Unicode: a SARIF log is UTF-8 JSON, which has no
    form for the lone surrogates that a file name that is not UTF-8 decodes to. Such a name's
    bytes read ``\\xff`` in text (URIs carry them percent-encoded)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "".join(_surrogate_text(ch) for ch in value)
        return value
    if isinstance(value, dict):
        return {valid_text(k): valid_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_text(v) for v in value]
    return value


def _surrogate_text(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that did not decode (os.fsdecode's surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return ch


def write_sarif(result: CheckResult, out: TextIO, verbose: bool = False, *, quiet: bool = False) -> None:
    """One document, whatever ``verbose`` and ``quiet`` say."""
    out.write(json.dumps(result_to_sarif(result), indent=2))
    out.write("\n")


def write_sarif_engines(results: list[CheckResult], out: TextIO) -> None:
    """Several engine trees checked in one run: one log, a run per engine (SARIF's own way of
    holding several analyses), each with its engine in the run's properties."""
    logs = [result_to_sarif(r) for r in results]
    merged = {**logs[0], "runs": [run for log in logs for run in log["runs"]]}
    out.write(json.dumps(merged, indent=2))
    out.write("\n")
