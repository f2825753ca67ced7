"""The pair pre-flight: what a drafter, a target, an engine release and its launch options do
together, read from the release's own code (never imported) and the checkpoints' files.

Each module answers one question: which layers the drafter reads (``drafter``, ``setter``,
``capture_map``, ``layer_map``, ``id_keys``), what the release's draft class accepts
(``draft_class``), known defects of the release (``defects``), the vocabulary mapping's content
(``d2t``), the launch flags (``launch``); ``evaluate`` runs the small part of Python those
derivations need, and ``outcome`` folds the items into one answer.
"""
