"""Every rule code and its name, without importing the rules.

Validating ``--select``/``select =`` needs only the codes; importing every rule (and what they
analyse with) would cost a warm, cached run more than the rest of it. A test keeps this table
equal to the registry.
"""

from __future__ import annotations

RULE_CODES: dict[str, str] = {
    "E3L001": "missing-target-method",
    "E3L002": "missing-draft-method",
    "E3L003": "stub-method",
    "E3L004": "wrapper-delegation-gap",
    "E3L005": "signature-mismatch",
    "E3L006": "presence-not-provable",
    "E3L010": "holder-lacks-mixin",
    "E3L011": "forward-never-collects",
    "E3L012": "protocol-not-declared",
    "E3L013": "undeclared-eagle3-support",
    "E3L014": "stale-interface-override",
    "E3L015": "platform-variants-disagree",
    "E3L016": "holder-not-provable",
    "E3L900": "unused-suppression",
}


def is_known_code(code: str) -> bool:
    """``code`` names a rule, or is a prefix of some rule's code (``E3L0``), or ``ALL``."""
    upper = code.upper()
    return upper == "ALL" or any(known.startswith(upper) for known in RULE_CODES)
