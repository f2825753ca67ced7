"""The prompts verify measures with: a fixed built-in chat set, or the user's file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3lint.common.errors import UsageError
from eagle3lint.common.escape import line_path
from eagle3lint.common.safe_io import os_problem, read_regular_file
from eagle3lint.verify.model_files import (
    ModelFileError,
    parse_json,
    read_model_bytes,
    read_model_json,
)

# Verify sends every prompt at each concurrency level: a file this large is a dataset dump,
# not a prompt set (and a named pipe or /dev/zero given by mistake must not be read for ever).
MAX_PROMPTS_BYTES = 64 * 1024 * 1024
# Chat templates are kilobytes; tokenizer_config.json is read through read_model_json's limit.
_MAX_TEMPLATE_BYTES = 4 * 1024 * 1024

# Mixed on purpose (code, maths, prose, facts): acceptance differs a lot between them, and one
# kind of text alone would flatter or punish a drafter.
BUILTIN_PROMPTS = (
    "Write a Python function that returns the n-th Fibonacci number iteratively, with a docstring.",
    "Explain the difference between a process and a thread to a new programmer.",
    "A train leaves at 9:40 and arrives at 13:05. How long is the journey? Show your reasoning.",
    "Summarise the causes of the French Revolution in five bullet points.",
    "Write a short poem about the sea at night.",
    "What is the capital of Australia, and why is it not Sydney?",
    "Give a SQL query that lists the ten customers with the highest total order value.",
    "Translate into French: 'The meeting has been moved to Thursday afternoon.'",
    "Explain what a hash table is and the average cost of a lookup.",
    "List the planets of the solar system in order from the Sun, with one fact about each.",
    "Write a bash one-liner that counts the lines of every .py file under the current folder.",
    "Solve for x: 3x + 7 = 25. Explain each step.",
    "Draft a polite email declining a meeting invitation.",
    "What are the main differences between TCP and UDP?",
    "Describe how photosynthesis works in simple terms.",
    "Write a JavaScript function that removes duplicate values from an array.",
)


@dataclass(frozen=True)
class Prompt:
    messages: tuple[dict[str, str], ...]

    @property
    def plain(self) -> str:
        return "\n\n".join(m["content"] for m in self.messages)


def builtin_prompts() -> list[Prompt]:
    return [Prompt(({"role": "user", "content": text},)) for text in BUILTIN_PROMPTS]


def load_prompts(path: Path) -> list[Prompt]:
    """A ``.jsonl`` file (each line ``{"messages": [...]}`` or ``{"prompt": "..."}``) or a text file
    with one prompt per line. The file is read as untrusted input: a regular file of at most
    ``MAX_PROMPTS_BYTES``, each JSON line parsed defensively and each value checked."""
    shown = line_path(str(path))
    try:
        text = read_regular_file(path, MAX_PROMPTS_BYTES).decode("utf-8")
    except OSError as exc:
        raise UsageError(f"{shown}: cannot read prompts ({os_problem(exc)})") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{shown}: cannot read prompts (not valid UTF-8 at byte {exc.start})") from exc
    prompts: list[Prompt] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if path.suffix in (".jsonl", ".json"):
            prompts.append(_from_json(path, number, line))
        else:
            prompts.append(Prompt(({"role": "user", "content": line.strip()},)))
    if not prompts:
        raise UsageError(f"{shown}: no prompts in it")
    return prompts


def _from_json(path: Path, number: int, line: str) -> Prompt:
    try:
        item: Any = parse_json(f"{line_path(str(path))}:{number}", line)
    except ModelFileError as exc:
        raise UsageError(str(exc)) from exc
    if isinstance(item, dict) and isinstance(item.get("prompt"), str):
        return Prompt(({"role": "user", "content": item["prompt"]},))
    messages = item.get("messages") if isinstance(item, dict) else None
    if isinstance(messages, list) and messages and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages
    ):
        return Prompt(tuple({"role": m["role"], "content": m["content"]} for m in messages))
    raise UsageError(f'{line_path(str(path))}:{number}: expected {{"prompt": "..."}} or {{"messages": [{{"role", "content"}}, ...]}}')


def chat_template(model_path: str) -> str | None:
    """The target's chat template, from ``chat_template.jinja`` or ``tokenizer_config.json``."""
    folder = Path(model_path)
    try:
        return read_model_bytes(folder, "chat_template.jinja", _MAX_TEMPLATE_BYTES).decode("utf-8")
    except FileNotFoundError:
        pass
    except (ModelFileError, UnicodeDecodeError):
        return None
    config = _tokenizer_config(folder)
    template = config.get("chat_template") if isinstance(config, dict) else None
    if isinstance(template, list):  # named templates: take "default"
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    return template if isinstance(template, str) else None


def render_chat(template: str | None, prompt: Prompt, special: dict[str, str] | None = None) -> str | None:
    """The prompt as the target sees it in chat; None when it cannot be rendered here (no template,
    or jinja2 not installed: it comes with torch and every engine)."""
    if template is None:
        return None
    try:
        from jinja2 import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        return None

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    try:
        return env.from_string(template).render(
            messages=list(prompt.messages), add_generation_prompt=True, **(special or {})
        )
    except Exception:  # a template this renderer cannot run: fall back to plain text
        return None


def _tokenizer_config(folder: Path) -> Any:
    """The target's tokenizer_config.json, None when it cannot be read safely (the prompts are
    then sent plain, and the report says so)."""
    try:
        return read_model_json(folder, "tokenizer_config.json")
    except (FileNotFoundError, ModelFileError):
        return None


def special_tokens(model_path: str) -> dict[str, str]:
    config = _tokenizer_config(Path(model_path))
    out: dict[str, str] = {}
    for key in ("bos_token", "eos_token"):
        value = config.get(key) if isinstance(config, dict) else None
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            out[key] = value
    return out
