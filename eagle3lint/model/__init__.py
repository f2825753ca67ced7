"""The engine contract and model facts: the contract (call sites of the interface members), registrations, model classification, capture facts, inference, transformers' config types, launch checks and options, and the adapter base an engine fills in.

Takes the index (``source``); gives ``Contract``, ``ModelClass``, ``EngineAdapter`` and the run's ``CheckResult``.
"""
