"""Driving a run: the settings with this build's vocabulary, the check runner with its result
cache (and its pruning), history across releases, the fix session (plan, apply, recheck,
tally), the verify and pre-flight runs and their report.

Takes settings, engines (through the registry) and every stage below; gives results to the
reports and the commands.
"""
