"""GitHub Actions workflow commands: one annotation per finding, most severe first, then the
summary line. Escaping follows GitHub's actions toolkit (``escapeData``/``escapeProperty``),
after ``line_text``: the runner's log shows an annotation's text with its escape sequences
interpreted, so text from analysed files has its control characters written out first, and
only our own line breaks (between a message and its call sites) become ``%0A``."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from eagle3lint.common.escape import display_path, line_text
from eagle3lint.common.findings import SEVERITY_ORDER
from eagle3lint.report.concise import summary_line
from eagle3lint.report.paths import relative_posix, report_base

if TYPE_CHECKING:
    from pathlib import Path

    from eagle3lint.common.findings import Finding
    from eagle3lint.model.result import CheckResult

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, properties: dict[str, str | int], message: str) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    return f"::{command} {props}::{escape_data(message)}" if props else f"::{command}::{escape_data(message)}"


# Lines the runner reads as commands: ``::name ...::`` and the older ``##[name]`` (after leading
# whitespace is trimmed).
_COMMAND_STARTS = ("::", "##[")


def annotation_path(path: str, base: Path) -> str:
    """Annotations attach to files by repository-relative path (a name's control characters
    written out: such a file cannot be annotated, and its name must not drive the log)."""
    return line_text(relative_posix(path, base) or display_path(path))


def finding_message(finding: Finding, base: Path) -> str:
    variant = f" [{finding.variant}]" if finding.variant else ""
    lines = [line_text(f"{finding.message}{variant}")]
    if finding.related:
        lines.append("Engine call sites:")
        lines.extend(f"  {annotation_path(s.path, base)}:{s.line}: {line_text(s.message)}" for s in finding.related)
    return "\n".join(lines)


def plain_line(text: str) -> str:
    """A line of log text that the runner cannot take for a command, whatever it begins with."""
    text = line_text(text)
    return f"eagle3lint: {text}" if text.lstrip().startswith(_COMMAND_STARTS) else text


def write_github(result: CheckResult, out: TextIO, verbose: bool = False, *, quiet: bool = False) -> None:
    base = report_base(result.engine.root)
    for error in result.errors:
        path = annotation_path(error.path, base)
        out.write(workflow_command("error", {"file": path, "title": "eagle3lint: file not analysed"}, line_text(error.message)) + "\n")
    ordered = sorted(result.findings, key=lambda f: (SEVERITY_ORDER.get(f.severity, 9), *f.sort_key()))
    for finding in ordered:
        properties: dict[str, str | int] = {"file": annotation_path(finding.path, base)}
        if finding.line >= 1:
            properties["line"] = finding.line
            properties["col"] = finding.column
        properties["title"] = f"{finding.code} {finding.rule}"
        command = COMMANDS.get(finding.severity, "warning")
        out.write(workflow_command(command, properties, finding_message(finding, base)) + "\n")
    if not quiet:
        out.write(plain_line(summary_line(result)) + "\n")
