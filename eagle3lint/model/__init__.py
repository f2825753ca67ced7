"""The engine contract and model facts: the contract (every call site of an interface member,
with its guard), registrations, model classification, capture facts, inference, transformers'
config types, launch checks and options, the adapter base an engine fills in (with its ports),
and the values a run hands up (``CheckResult``, a history's cells).

Takes the index (``source``); gives ``Contract``, ``ModelClass``, ``EngineAdapter``,
``CheckResult``.
"""
