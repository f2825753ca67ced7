"""From a dead server's log to a cause, the rule that predicts it, and the next step.

SGLang's parent SIGKILLs its own tree when the scheduler dies, so the exit code (-9) says nothing:
the traceback sits in the scheduler's ``Scheduler hit an exception:`` block, which is read first.
"""

from __future__ import annotations

import re
import shlex
import signal
from dataclasses import dataclass, field
from typing import Any

from eagle3lint.checks.base import Rule, RuleRegistry
from eagle3lint.common.findings import Finding
from eagle3lint.verify.knowledge import CrashPattern, EngineKnowledge

# vLLM (and Ray) prefix every line a worker prints: "(EngineCore_DP0 pid=4242) ".
_WORKER_PREFIX = re.compile(r"^\([\w\-]+ pid=\d+\) ", re.M)
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))\b(?::.*)?$")
_CHAIN_MARKERS = ("During handling of the above exception", "The above exception was the direct cause")
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')
_MAX_BLOCK_LINES = 300
_TAIL_LINES = 300
_EXCERPT_LINES = 24


@dataclass(frozen=True)
class RuleRef:
    code: str | None
    name: str

    def __str__(self) -> str:
        return f"{self.code} {self.name}" if self.code else self.name

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "name": self.name}


@dataclass
class CrashCause:
    kind: str  # interface | aux-capture | config-mismatch | environment | unknown
    cause: str
    rules: list[RuleRef] = field(default_factory=list)
    excerpt: list[str] = field(default_factory=list)
    exception: str | None = None
    next_step: str = ""
    exit_code: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "cause": self.cause,
            "rules": [r.to_json() for r in self.rules],
            "exception": self.exception,
            "excerpt": self.excerpt,
            "next_step": self.next_step,
            "exit_code": self.exit_code,
        }


@dataclass
class ClassifyContext:
    """What the rest of the run knows, to make the cause and the next step precise."""

    engine_root: str | None = None
    model_file: str | None = None
    target_architecture: str | None = None
    target_findings: list[Finding] = field(default_factory=list)
    preflight_command: str = ""
    log_path: str = ""


def strip_worker_prefixes(log: str) -> str:
    return _WORKER_PREFIX.sub("", log)


def exception_block(log: str, knowledge: EngineKnowledge) -> list[str]:
    """The lines of the most telling traceback: the engine's exception block, else the last traceback."""
    lines = strip_worker_prefixes(log).splitlines()
    start = None
    for i in range(len(lines) - 1, -1, -1):
        if knowledge.exception_block.search(lines[i]):
            start = i
            break
    if start is None:
        for i in range(len(lines) - 1, -1, -1):
            if _TRACEBACK in lines[i]:
                start = i
                break
    if start is None:
        return []
    block = [lines[start]]
    rest = lines[start + 1 : start + _MAX_BLOCK_LINES]
    for i, line in enumerate(rest):
        if knowledge.record_start.search(line):
            break
        block.append(line)
        # A traceback ends at its exception line, unless a chained exception follows; what comes
        # after is another process's output (vLLM's API server re-raising "see root cause above").
        if _EXCEPTION_LINE.match(line) and not _chain_follows(rest[i + 1 : i + 4]):
            break
    return block


def _chain_follows(lines: list[str]) -> bool:
    return any(line.startswith(_CHAIN_MARKERS) for line in lines)


def last_exception(block: list[str]) -> str | None:
    for line in reversed(block):
        candidate = line.strip()
        # "Scheduler hit an exception: Traceback ..." can put the traceback on the record line.
        if _EXCEPTION_LINE.match(candidate):
            return candidate
    return None


def innermost_frame(block: list[str]) -> str | None:
    for line in reversed(block):
        match = _FRAME.match(line)
        if match:
            return match.group(1)
    return None


def resolve_rules(refs: tuple[str, ...] | list[str], known: tuple[type[Rule], ...]) -> list[RuleRef]:
    """Rule codes, names or ``family:NAME`` as the knowledge names them, as rules of ``known``."""
    registry = RuleRegistry(known)
    out: list[RuleRef] = []
    for ref in refs:
        if ref.startswith("family:"):
            family = ref.split(":", 1)[1]
            members = [r for r in registry if r.family == family]
            out.extend(RuleRef(r.code, r.name) for r in members)
            if not members:
                out.append(RuleRef(None, f"{family} rules"))
            continue
        rule = registry.by_code(ref)
        out.append(RuleRef(rule.code, rule.name) if rule else RuleRef(None, ref))
    return out


def _rules_for_member(role: str) -> tuple[str, ...]:
    if role == "draft":
        return ("missing-draft-method",)
    return ("missing-target-method", "wrapper-delegation-gap")


def _refine(rules: list[RuleRef], member: str | None, findings: list[Finding]) -> list[RuleRef]:
    """Keep the rules the static check actually reported for this member, when it did."""
    reported = {f.code for f in findings if member is None or f.method == member}
    narrowed = [r for r in rules if r.code in reported]
    return narrowed or rules


def _next_step(pattern: CrashPattern | None, ctx: ClassifyContext) -> str:
    root = f"--engine-root {shlex.quote(ctx.engine_root)} " if ctx.engine_root else ""
    target = shlex.quote(ctx.model_file) if ctx.model_file else f"<the file defining {ctx.target_architecture or 'the target class'}>"
    if pattern is None:
        return f"read the whole log: {ctx.log_path}" if ctx.log_path else "read the server log"
    if pattern.next == "fix":
        return f"eagle3lint fix {root}{target}   (shows the patch; add --apply to write it, then verify again)"
    if pattern.next == "check":
        return f"eagle3lint check {root}{target}   (the capture rules show where the aux hidden states are lost)"
    if pattern.next == "preflight":
        return f"{ctx.preflight_command or 'eagle3lint verify --preflight-only ...'}   (hidden size, aux layer ids, fc shape)"
    return pattern.advice


def _match(pattern: CrashPattern, text: str, frame: str | None, knowledge: EngineKnowledge) -> dict[str, str] | None:
    found = pattern.pattern.search(text)
    if found is None:
        return None
    if pattern.frame is not None and (frame is None or not pattern.frame.search(frame)):
        return None
    groups = {k: v for k, v in found.groupdict().items() if v is not None}
    if pattern.requires_known_member:
        role = knowledge.member_roles.get(groups.get("member", ""))
        if role is None:
            return None
        groups["role"] = role
    return groups


def classify_crash(log: str, exit_code: int | None, knowledge: EngineKnowledge, ctx: ClassifyContext | None = None) -> CrashCause:
    ctx = ctx or ClassifyContext()
    block = exception_block(log, knowledge)
    exception = last_exception(block)
    frame = innermost_frame(block)
    tail = strip_worker_prefixes(log).splitlines()[-_TAIL_LINES:]
    excerpt = _excerpt(block) if block else [line for line in tail if line.strip()][-_EXCERPT_LINES:]
    for text in (("\n".join(block),) if block else ()) + ("\n".join(tail),):
        for pattern in knowledge.crashes:
            groups = _match(pattern, text, frame, knowledge)
            if groups is None:
                continue
            member = groups.get("member")
            refs = pattern.rules or (_rules_for_member(groups["role"]) if "role" in groups else ())
            rules = _refine(resolve_rules(refs, knowledge.rules), member, ctx.target_findings)
            values = {"class": groups.get("class", "the model class"), "member": member or "", "role": groups.get("role", ""), "module": groups.get("module", "")}
            return CrashCause(
                kind=pattern.kind,
                cause=pattern.cause.format(**values),
                rules=rules,
                excerpt=excerpt,
                exception=exception,
                next_step=_next_step(pattern, ctx),
                exit_code=exit_code,
            )
    if not block and exit_code is not None and exit_code < 0:
        name = _signal_name(-exit_code)
        return CrashCause(
            kind="environment",
            cause=f"the server was killed by {name} with no traceback (the kernel's OOM killer, or another process)",
            excerpt=excerpt,
            next_step="check host memory (`dmesg | grep -i kill`) and whether something else ends processes on this host",
            exit_code=exit_code,
        )
    if exception:
        cause = f"the server died with {exception}"
    elif exit_code is not None:
        cause = f"the server exited with code {exit_code} and no traceback"
    else:
        cause = "the server stopped without a recognisable error"
    return CrashCause(kind="unknown", cause=cause, excerpt=excerpt, exception=exception, next_step=_next_step(None, ctx), exit_code=exit_code)


def _excerpt(block: list[str]) -> list[str]:
    if len(block) <= _EXCERPT_LINES:
        return block
    return [block[0], "  ...", *block[-(_EXCERPT_LINES - 2) :]]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
