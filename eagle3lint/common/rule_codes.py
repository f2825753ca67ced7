"""The core rules' codes and names, without importing the rules.

Validating ``--select``/``select =`` needs only the codes; importing every rule (and what they
analyse with) would cost a warm, cached run more than the rest of it. Each engine adapter keeps
the same table for its own rules (``EngineAdapter.rule_codes``); a test keeps the tables equal
to the rules.
"""

from __future__ import annotations

from collections.abc import Mapping

CORE_RULE_CODES: dict[str, str] = {
    "E3L001": "missing-target-method",
    "E3L002": "missing-draft-method",
    "E3L003": "stub-method",
    "E3L004": "wrapper-delegation-gap",
    "E3L005": "signature-mismatch",
    "E3L006": "presence-not-provable",
    "E3L014": "stale-interface-override",
    "E3L020": "eagle3-not-implemented",
    "E3L021": "replacement-drops-eagle3",
    "E3L022": "missing-attribute-chain",
    "E3L023": "member-reads-missing-attr",
    "E3L101": "capture-state-never-read",
    "E3L102": "aux-not-handed-off",
    "E3L103": "capture-flag-not-initialised",
    "E3L104": "capture-offset-mismatch",
    "E3L107": "capture-skipped-under-option",
    "E3L900": "unused-suppression",
}


def code_matches(code: str, known: Mapping[str, str]) -> bool:
    """``code`` names a rule of ``known``, or is a prefix of one (``E3L0``), or is ``ALL``."""
    upper = code.upper()
    return upper == "ALL" or any(k.startswith(upper) for k in known)


def resolve_code(value: str, known: Mapping[str, str]) -> str | None:
    """What ``value`` (a ``--select`` item, a ``select =`` entry) names, as a code: a code or a
    prefix of one, upper-cased (``e3l0`` -> ``E3L0``), ``ALL``, or the code of the rule whose name
    it is (``wrapper-delegation-gap`` -> ``E3L004``, as ``explain`` takes names); None when it
    names nothing."""
    text = value.strip()
    for code, name in known.items():
        if name == text.lower():
            return code
    return text.upper() if text and code_matches(text, known) else None


def did_you_mean(value: str, known: Mapping[str, str]) -> str:
    """``; did you mean `wrapper-delegation-gap` (E3L004)?`` for a rule name or code that names
    nothing: the closest names and codes of ``known`` (difflib), three at most; empty when none
    is close."""
    import difflib

    text = value.strip()
    names = {name: code for code, name in known.items()}
    spelled = text.lower().replace("_", "-").replace(" ", "-")
    close_names = [spelled] if spelled in names else difflib.get_close_matches(spelled, list(names), n=3, cutoff=0.6)
    # A code cut short (``E3L01``) means the codes it begins, before any merely similar one.
    begun = sorted(c for c in known if c.startswith(text.upper()) and c != text.upper()) if text else []
    close_codes = begun[:3] or difflib.get_close_matches(text.upper(), list(known), n=3, cutoff=0.8)
    # Equally close codes in their order (difflib puts the last first).
    if not begun:
        close_codes.sort(key=lambda c: (-difflib.SequenceMatcher(None, text.upper(), c).ratio(), c))
    shown = [f"`{n}` ({names[n]})" for n in close_names]
    shown += [f"`{c}` ({known[c]})" for c in close_codes if known[c] not in close_names]
    shown = shown[:3]
    if not shown:
        return ""
    listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
    if len(begun) > 3:
        listed += f" (of the {len(begun)} codes that begin with `{text.upper()}`)"
    return f"; did you mean {listed}?"
