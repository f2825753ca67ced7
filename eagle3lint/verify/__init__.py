"""`eagle3lint verify`: launch the engine with EAGLE-3 and report whether speculation pays off.

Flow: preflight -> launch -> wait -> (classify a crash | measure) -> teardown -> report.
Kept light to import: `eagle3lint check` loads the CLI, and with it this package.
"""
