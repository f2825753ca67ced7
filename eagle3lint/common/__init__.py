"""What every stage shares: findings and file errors, outcomes and the places they point at,
usage and fetch errors, text lines and one-line escapes, safe file io, rule codes, the user
cache's place, interrupt handling.

Takes nothing from the rest of the package; gives the plain values the stages hand each other.
"""
