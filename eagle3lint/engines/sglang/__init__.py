"""SGLang: models listed in ``EntryClass``, the interface its workers call on them, its fixes and
its server (``adapter`` is what the core sees; the rest is read only through it)."""
