"""Engine runs: launch the installed engine on a shrunken config with a generated one-layer
EAGLE-3 drafter and dummy weights, observe what the target does, and compare the outcome with
the static verdict.

The modules here are engine-agnostic; what an engine needs to be launched (its probe script, its
refusal messages) lives in that engine's folder. ``shrink`` and ``matcher`` import only the
standard library: the probe loads them inside the engine's own interpreter.
"""
