"""The settings: ``[tool.eagle3lint]`` read and validated against a vocabulary the caller gives
(config), shown (view), baselines, the globs of ``exclude`` and ``per-file-ignores``.

Takes files and a vocabulary; gives ``Settings``, baselines and path matching. This build's
vocabulary is bound in ``run.settings_load``.
"""
