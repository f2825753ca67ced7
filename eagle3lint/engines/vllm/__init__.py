"""vLLM: the SupportsEagle3 protocol, the architecture registry, holders, rules, fixes, server.

``adapter`` is what the core sees. Behind it: ``protocol`` reads the contract's declared half from
``interfaces.py``; ``registry``, ``dispatch`` and ``discovery`` find the model classes; ``index``
follows registry factories; ``holders`` follows what the aux-layer setter really reaches and
``collect`` whether it collects; the rules (``rules``) see them per model through ``context``;
``fixes`` and ``fix_loop`` plan their fixes; ``server`` starts and reads ``vllm serve``.
Nothing here imports the analysed tree.
"""
