"""What every stage shares: findings and file errors, outcomes, errors, text lines and escapes, safe file io, rule codes, interrupts.

Takes nothing from the rest of the package; gives the plain values the stages hand each other.
"""
