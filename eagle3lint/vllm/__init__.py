"""vLLM-specific analysis: the SupportsEagle3 protocol, the architecture registry, holders.

The flow mirrors the SGLang one: ``protocol`` reads the contract's declared half from
``interfaces.py``; ``registry`` and ``dispatch`` find the model classes; ``holders`` follows what
the aux-layer setter really reaches and ``collect`` whether it collects; the rules in
``eagle3lint.checks.vllm_rules`` see them per model through ``eagle3lint.checks.vllm_context``.
Nothing here imports the analysed tree.
"""
