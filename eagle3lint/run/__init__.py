"""Driving a run: the check runner with its result cache, history across releases, the fix session (plan, apply, recheck, tally), the verify and pre-flight runs.

Takes settings, engines and the stages below; gives results for the reports and commands.
"""
