"""Fix patterns, one module per engine; importing this package registers them all."""

from eagle3lint.fix.patterns import sglang, vllm  # noqa: F401
