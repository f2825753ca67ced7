"""What SGLang's rules see: the core's context, and which models a fix can implement EAGLE-3 in."""

from __future__ import annotations

from eagle3lint.checks.context import CheckContext
from eagle3lint.models import ModelClass


class SglangContext(CheckContext):
    def implementation_refusals(self, models: list[ModelClass]) -> dict[int, str]:
        """Why no fix implements EAGLE-3 in each model (the leaf-capture template's shape is
        missing); a model left out gets the unsafe fix."""
        from eagle3lint.engines.sglang.fixes import implementation_refusal
        from eagle3lint.fix.templates import load_templates
        from eagle3lint.fix.texts import SourceSet

        templates, sources = load_templates(self.index.engine.name), SourceSet()
        refusals = {id(m): implementation_refusal(self.index, m, templates, sources.get) for m in models}
        return {key: why for key, why in refusals.items() if why is not None}
