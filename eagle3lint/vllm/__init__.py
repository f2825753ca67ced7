"""vLLM-specific analysis: the SupportsEagle3 protocol, the architecture registry, holders.

The flow mirrors the SGLang one: ``protocol`` reads the contract's declared half from
``interfaces.py``; ``registry`` and ``dispatch`` find the model classes; ``holders`` follows what
the aux-layer setter really reaches; ``analysis`` combines them per model for the rules in
``eagle3lint.checks.vllm_rules``. Nothing here imports the analysed tree.
"""
