"""The settings: ``pyproject.toml``/``eagle3lint.toml`` read and validated (config), loaded with this build's vocabulary, shown (view), baselines, path patterns.

Takes files and the registry's vocabulary; gives ``Settings`` and the baseline filter.
"""
