"""Rules: the framework (``base``), what every rule sees (``context``) and the rules that apply to
every engine (``presence``, ``hygiene``; listed in ``core``). Each engine adds its own rules from
its folder under ``eagle3lint/engines/``; ``eagle3lint.engines.rule_registry()`` has them all."""
