"""``eagle3lint contract`` as text: members, roles, guards and every call site.

Names, paths and branch conditions come from the engine's (or a plugin's) source: each goes out
through ``line_text``, so none can break a line or drive the terminal. An engine's facts
(``Contract.extra``) are the tool's own blocks of several lines: each line goes out on its own
(their ``__str__`` escapes the analysed text in them, so a line break there is the tool's)."""

from __future__ import annotations

from typing import TextIO

from eagle3lint.common.escape import line_text
from eagle3lint.model.contract_types import Contract, MemberContract


def write_contract_text(contract: Contract, out: TextIO) -> None:
    engine = contract.engine
    out.write(f"{line_text(engine.label)} at {line_text(str(engine.root))}\n")
    skipped = ", ".join(engine.pack.scan_skip)
    out.write(
        f"read {contract.scanned_files} {'engine and plugin' if engine.plugins else 'engine'} files that mention the interface (models folders"
        + (f" and {skipped} not scanned" if skipped else " not scanned")
        + ")\n\n"
    )
    for member in contract.members.values():
        if not member.known:
            continue
        _write_member(member, out)
    unknown = contract.unknown_members()
    if unknown:
        out.write("unknown members (touched on model objects, not in the rule pack):\n")
        for member in unknown:
            _write_member(member, out, indent="  ")
    for key, value in contract.extra.items():
        out.write(block_text(f"{key}: {value}"))


def block_text(text: str) -> str:
    """The tool's text of several lines (``"\\n"`` its line breaks), each line as ``line_text``
    writes it: real newlines, while any other control character stays escaped."""
    return "".join(line_text(line) + "\n" for line in text.rstrip("\n").split("\n"))


def _write_member(member: MemberContract, out: TextIO, indent: str = "") -> None:
    name = line_text(member.name)
    if not member.sites:
        out.write(f"{indent}{name} ({member.kind}): not used by this engine version\n\n")
        return
    roles = []
    for role in ("target", "draft"):
        guard = member.strongest_guard(role)
        if guard:
            state = {"none": "unguarded", "error": "guarded-with-error", "fallback": "guarded-with-fallback"}[guard]
            required = "required" if guard != "fallback" else "optional"
            roles.append(f"{role}: {state} ({required})")
    if not roles:
        roles.append("probed only")
    out.write(f"{indent}{name} ({member.kind}): {'; '.join(roles)}\n")
    for site in member.sites:
        call = f"({site.positional_args} args)" if site.access == "call" else ""
        branch = f" [{site.branch}]" if site.branch else ""
        guard = "probe" if site.access == "probe" else site.guard
        text = f"{site.path}:{site.line}  {site.function}  {site.receiver}.{site.member}{call}  {site.role} {site.access} {guard}{branch}"
        out.write(f"{indent}  {line_text(text)}\n")
    out.write("\n")
