"""The fuzzer behind tests/test_fuzz.py: mutations of model files, and one ``check`` run of a
tree in this process, judged as a user would judge it (exit code 0/1/2, no traceback).

Kept apart from the test so that a longer hunt can run it by hand::

    python -m tests.fuzzing 2000 [seed]

which prints every failing input it finds; save those as regression cases in tests/data/fuzz/.
"""

from __future__ import annotations

import contextlib
import gc
import io
import random
import re
import shutil
import signal
import sys
import textwrap
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import FIXTURES

FORMATS = ("concise", "full", "json", "sarif", "github")


@dataclass(frozen=True)
class EngineTree:
    """A fixture engine tree: where its model files are, and which of them the fuzzer edits."""

    name: str
    fixture: Path
    models: str  # relative to the tree root
    call_sites: tuple[str, ...]  # engine files the contract is read from

    def model_files(self, root: Path) -> list[Path]:
        return sorted(p for p in (root / self.models).glob("*.py") if p.name != "__init__.py")


TREES = {
    "sglang": EngineTree(
        "sglang", FIXTURES / "sglang_basic", "sglang/srt/models",
        ("sglang/srt/model_executor/model_runner.py", "sglang/srt/speculative/eagle_worker.py"),
    ),
    "vllm": EngineTree(
        "vllm", FIXTURES / "vllm_modern", "vllm/model_executor/models",
        ("vllm/v1/worker/gpu_model_runner.py", "vllm/model_executor/model_loader/utils.py"),
    ),
}

# Code that once broke a resolver, or that a resolver must meet without looping: cycles of
# every kind the index follows, self-references, odd bases and entry lists.
SNIPPETS = (
    "class CycleAForCausalLM(CycleBForCausalLM):\n    pass\n\n\nclass CycleBForCausalLM(CycleAForCausalLM):\n    pass\n\n\nEntryClass = [CycleAForCausalLM]\n",
    "class SelfForCausalLM(SelfForCausalLM):\n    pass\n\n\nEntryClass = SelfForCausalLM\n",
    "A = B\nB = A\n\n\nclass AliasForCausalLM(A):\n    pass\n\n\nEntryClass = [AliasForCausalLM]\n",
    "from . import *\nfrom .{module} import *\n",
    "class ParamForCausalLM(nn.Module):\n    def __init__(self, config, a=b, b=a, c=c, *, d=d.e.f):\n        super().__init__()\n        self.model = a(config)\n        self.lm_head = c(config)\n        self.other = d(config)\n\n\nEntryClass = [ParamForCausalLM]\n",
    "class LoopForCausalLM(nn.Module):\n    def __init__(self, config):\n        self.model = self.model\n        self.language_model = self.model.inner\n\n    @property\n    def inner(self):\n        return self.inner\n\n    def __getattr__(self, name):\n        return getattr(self.language_model, name)\n\n\nEntryClass = [LoopForCausalLM]\n",
    "class PropForCausalLM(nn.Module):\n    @property\n    def model(self):\n        return self.language_model\n\n    @property\n    def language_model(self):\n        return self.model\n\n    def __init__(self, config):\n        self.lm_head = self.model\n\n\nEntryClass = [PropForCausalLM]\n",
    "EntryClass = EntryClass\n",
    "EntryClass = [1, 'x', None, lambda: 0, *rest, f()(), a[0]]\n",
    "class NestedForCausalLM(nn.Module):\n    class Inner(NestedForCausalLM.Inner):\n        pass\n\n    def __init__(self, config):\n        self.model = NestedForCausalLM.Inner(config)\n\n\nEntryClass = [NestedForCausalLM, NestedForCausalLM.Inner]\n",
    "import sglang.srt.models as models\nimport vllm.model_executor.models as vmodels\n\n\nclass ModForCausalLM(models.ModForCausalLM, vmodels.ModForCausalLM):\n    pass\n\n\nEntryClass = [ModForCausalLM]\n",
    "class DupForCausalLM(nn.Module):\n    def get_embed_and_head(self):\n        pass\n\n    def get_embed_and_head(self):\n        pass\n\n    get_embed_and_head = 3\n\n\nEntryClass = [DupForCausalLM]\n",
    "class StarredForCausalLM(*bases, metaclass=Meta, **kw):\n    pass\n\n\nEntryClass = [StarredForCausalLM]\n",
    "class GenForCausalLM(Base[T][U](1).x, object, 3, 'x'):\n    pass\n\n\nEntryClass = GenForCausalLM\n",
    "# eagle3lint: ignore-file\n# eagle3lint: ignore[E3L001, ZZZ999,]\n# noqa: E3L, E3L001,,\n",
    "class WithForCausalLM(nn.Module):\n    def __init__(self, config):\n        with self.x(), self.y() as (a, b):\n            with self.z():\n                self.model, self.lm_head = Model(config), None\n\n\nEntryClass = [WithForCausalLM]\n",
    "_TEXT_GENERATION_MODELS = {**_TEXT_GENERATION_MODELS, 'X': ('x', 'X'), 1: 2, 'Y': ('y',), 'Z': 'z', 'W': ('', '')}\n",
    "_VLLM_MODELS = {'A': ('wrapper', 'A'), **_VLLM_MODELS, **_MISSING}\n",
    "_TEXT_GENERATION_MODELS = {'SelfForCausalLM': ('registry', 'SelfForCausalLM'), 'LoopForCausalLM': ('..', 'X'), 'Dotted': ('a.b.c', 'D')}\n",
    "class SupportsEagle3(SupportsEagle3):\n    pass\n\n\nclass MixedForCausalLM(SupportsEagle3, SupportsEagle3):\n    supports_eagle3 = True\n\n    def get_eagle3_aux_hidden_state_layers(self):\n        return self.get_eagle3_aux_hidden_state_layers()\n",
    "def __getattr__(name):\n    return globals()[name]\n\n\nclass ModuleGetattrForCausalLM(Missing):\n    pass\n",
)


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b"\n"]


def delete_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def duplicate_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return b"".join(lines)


def swap_lines(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def shift_indent(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines[i] = lines[i][4:] if lines[i].startswith(b"    ") and rng.random() < 0.5 else b"    " + lines[i]
    return b"".join(lines)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def insert_nul(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + b"\x00" + data[at:]


BAD_BYTES = (b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82", b"\xef\xbb\xbf", b"\r", b"\x0c", b"\t")


def insert_bad_bytes(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice(BAD_BYTES) + data[at:]


def swap_identifiers(rng: random.Random, data: bytes) -> bytes:
    """One identifier of the file replaced by another of the file: still Python, new meaning
    (a class named as its own base, a method renamed into a member the engine needs)."""
    names = sorted(set(re.findall(rb"\b[A-Za-z_][A-Za-z0-9_]*\b", data)))
    if len(names) < 2:
        return data
    old, new = rng.choice(names), rng.choice(names)
    spots = [m.start() for m in re.finditer(rb"\b" + re.escape(old) + rb"\b", data)]
    at = rng.choice(spots)
    return data[:at] + new + data[at + len(old) :]


def _deep(rng: random.Random) -> bytes:
    depth = rng.choice((10, 90, 99, 101, 200, 500, 1000, 3000))
    kind = rng.randrange(8)
    if kind == 0:
        return b"x = " + b"(" * depth + b"1" + b")" * depth + b"\n"
    if kind == 1:
        return b"class DeepAttrForCausalLM(" + b"a." * depth + b"b):\n    pass\n\n\nEntryClass = [DeepAttrForCausalLM]\n"
    if kind == 2:
        chain = b" if c else ".join([b"Model(config)"] * depth)
        return b"class DeepIfForCausalLM(nn.Module):\n    def __init__(self, config, c=None):\n        self.model = " + chain + b"\n\n\nEntryClass = [DeepIfForCausalLM]\n"
    if kind == 3:
        levels = min(depth, 120)
        body = b"".join(b"    " * i + b"if x:\n" for i in range(levels)) + b"    " * levels + b"pass\n"
        return body
    if kind == 4:
        return b"class DeepCallForCausalLM(nn.Module):\n    def __init__(self, config):\n        self.model = " + b"f(" * depth + b"config" + b")" * depth + b"\n"
    if kind == 5:
        return b"EntryClass = " + b"[" * depth + b"X" + b"]" * depth + b"\n"
    if kind == 6:
        return b"class DeepSubForCausalLM(Base" + b"[0]" * depth + b"):\n    pass\n"
    return b"x = " + b" or ".join([b"a.b"] * depth) + b"\n" + b"y = " + b"-" * depth + b"1\n"


def deep_nesting(rng: random.Random, data: bytes) -> bytes:
    return data + b"\n\n" + _deep(rng)


def append_snippet(rng: random.Random, data: bytes) -> bytes:
    return data + b"\n\n" + rng.choice(SNIPPETS).encode()


def splice_donor(rng: random.Random, data: bytes, donor: bytes) -> bytes:
    """A run of lines from another model file."""
    lines, other = _lines(data), _lines(donor)
    start = rng.randrange(len(other))
    piece = other[start : start + rng.randrange(1, 40)]
    at = rng.randrange(len(lines) + 1)
    return b"".join(lines[:at] + piece + lines[at:])


MUTATIONS: tuple[Callable[[random.Random, bytes], bytes], ...] = (
    delete_line, duplicate_line, swap_lines, shift_indent, truncate, insert_nul, insert_bad_bytes,
    swap_identifiers, swap_identifiers, deep_nesting, append_snippet, append_snippet,
)


def mutate(rng: random.Random, data: bytes, donors: list[bytes]) -> tuple[bytes, list[str]]:
    applied = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        if donors and rng.random() < 0.1:
            data = splice_donor(rng, data, rng.choice(donors))
            applied.append("splice_donor")
        else:
            operation = rng.choice(MUTATIONS)
            data = operation(rng, data)
            applied.append(operation.__name__)
    return data, applied


@dataclass
class Outcome:
    code: object
    stdout: str
    stderr: str

    @property
    def problem(self) -> str | None:
        """Why the run is a failure, or None."""
        if isinstance(self.code, str):
            return self.code
        if self.code not in (0, 1, 2):
            return f"exit code {self.code!r}"
        for marker in ("Traceback", "internal error"):
            if marker in self.stderr:
                return f"{marker!r} on stderr"
        return None


# One run of the small fixture trees takes a few hundredths of a second; one that takes this
# long has met an input it cannot finish (an exponential search), and is failed, not waited on.
RUN_LIMIT_S = 60


class RunTooLong(BaseException):
    """Raised by the alarm in the middle of a run (a BaseException: the CLI must not catch it)."""


def _too_long(signum: int, frame: object) -> None:
    raise RunTooLong


def run_check(tree: Path, output_format: str) -> Outcome:
    """``eagle3lint check`` in this process (no cache, no pool: the tree is small)."""
    import eagle3lint.source.parallel as parallel
    from eagle3lint.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = parallel.usable_cpus
    parallel.usable_cpus = lambda: 1
    code: object = 0
    previous = signal.signal(signal.SIGALRM, _too_long)
    signal.setitimer(signal.ITIMER_REAL, RUN_LIMIT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(["check", "--no-cache", "--format", output_format, str(tree)])
            except SystemExit as exc:
                code = exc.code if exc.code is not None else 0
            except RunTooLong:
                code = f"still running after {RUN_LIMIT_S} s:\n" + "".join(traceback.format_exc(limit=-12))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        parallel.usable_cpus = saved
        gc.unfreeze()  # main() freezes the heap for a process that ends; this one goes on
    return Outcome(code, out.getvalue(), err.getvalue())


@dataclass
class Failure:
    engine: str
    target: str  # the file's path in the tree ("sglang/srt/models/llama_like.py")
    data: bytes
    output_format: str
    why: str
    stderr: str

    def describe(self) -> str:
        tail = self.stderr[-1500:]
        return f"{self.engine} {self.target} --format {self.output_format}: {self.why}\n{self.data[:300]!r}...\n{tail}"


class Fuzzer:
    """Edits copies of the fixture trees in ``work``; each case edits one to three model files,
    runs ``check`` and puts the files back."""

    def __init__(self, work: Path, seed: int, extra_donors: dict[str, list[bytes]] | None = None) -> None:
        self.rng = random.Random(seed)
        self.roots: dict[str, Path] = {}
        self.donors: dict[str, list[bytes]] = {}
        for name, tree in TREES.items():
            root = work / name
            if not root.exists():
                shutil.copytree(tree.fixture, root)
            self.roots[name] = root
            self.donors[name] = [p.read_bytes() for p in tree.model_files(root)] + (extra_donors or {}).get(name, [])

    def one(self) -> Failure | None:
        engine = self.rng.choice(sorted(TREES))
        tree, root = TREES[engine], self.roots[engine]
        files = tree.model_files(root)
        targets = self.rng.sample(files, k=min(len(files), self.rng.choice((1, 1, 2, 3))))
        if self.rng.random() < 0.1:  # now and then the engine's own call sites too
            targets.append(root / self.rng.choice(tree.call_sites))
        originals = {p: p.read_bytes() for p in targets}
        output_format = self.rng.choice(FORMATS)
        try:
            written = {}
            for path in targets:
                seed = originals[path] if self.rng.random() < 0.7 else self.rng.choice(self.donors[engine])
                data, _ = mutate(self.rng, seed, self.donors[engine])
                data = data.replace(b"{module}", path.stem.encode())
                path.write_bytes(data)
                written[path] = data
            outcome = run_check(root, output_format)
            why = outcome.problem
            if why is None:
                return None
            # Name the culprit: the first file that fails alone.
            for path, data in written.items():
                for other, original in originals.items():
                    other.write_bytes(data if other == path else original)
                alone = run_check(root, output_format)
                if alone.problem is not None:
                    return Failure(engine, _rel(path, root), data, output_format, alone.problem, alone.stderr)
            first = next(iter(written))
            return Failure(engine, _rel(first, root), written[first], output_format, why + " (only with the others)", outcome.stderr)
        finally:
            for path, original in originals.items():
                path.write_bytes(original)


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def check_replaced(root: Path, target: str, data: bytes, output_format: str) -> Outcome:
    """``check`` of the tree at ``root`` with ``target`` (a path in it) holding ``data``; the
    tree is put back afterwards (a new file is removed)."""
    path = root / target
    original = path.read_bytes() if path.exists() else None
    try:
        path.write_bytes(data)
        return run_check(root, output_format)
    finally:
        if original is None:
            path.unlink()
        else:
            path.write_bytes(original)


def generated_file(engine: str, source: str, inside_init: bool) -> tuple[str, bytes]:
    """Where a generated program goes in the engine's fixture tree, and the file's bytes: as a
    module of its own, or as the body of a model's ``__init__``. For vLLM it replaces a model
    the registry names (a new file would never be read)."""
    name = "PlainForCausalLM" if engine == "vllm" else "FuzzForCausalLM"  # as the registry has it
    if inside_init:
        body = textwrap.indent(source, " " * 8) if source.strip() else " " * 8 + "pass\n"
        source = (
            f"from torch import nn\n\n\nclass {name}(nn.Module):\n"
            "    def __init__(self, config):\n        super().__init__()\n" + body + f"\n\nEntryClass = [{name}]\n"
        )
    target = "vllm/model_executor/models/plain.py" if engine == "vllm" else "sglang/srt/models/fuzz_generated.py"
    return target, source.encode("utf-8", "surrogateescape")


_DONORS = {
    "sglang": ("llama.py", "qwen2.py", "kimi_vl.py", "llava.py", "mllama4.py", "deepseek_nextn.py", "gemma3_causal.py"),
    "vllm": ("llama.py", "qwen2.py", "llava.py", "mllama4.py", "deepseek_mtp.py", "llama_eagle3.py", "registry.py"),
}
_MODELS = {"sglang": "srt/models", "vllm": "model_executor/models"}


def release_model_donors(packages: dict[str, Path], limit_per_engine: int = 6) -> dict[str, list[bytes]]:
    """A few model files of the given release packages (engine -> ``.../sglang``): real code
    for the mutations to start from."""
    found: dict[str, list[bytes]] = {}
    for engine, package in packages.items():
        paths = [package / _MODELS[engine] / name for name in _DONORS[engine]]
        found[engine] = [p.read_bytes() for p in paths if p.is_file()][:limit_per_engine]
    return found


def real_model_donors(limit_per_engine: int = 6) -> dict[str, list[bytes]]:
    """Model files of engine releases already in the release cache (never downloaded here), the
    newest folder name of each engine that has them: for a long hunt by hand."""
    from eagle3lint.common.cache_dir import cache_root

    packages = {}
    releases = cache_root() / "releases"
    for engine in _DONORS:
        for folder in sorted(releases.glob(f"{engine}-*"), reverse=True):
            if any((folder / engine / _MODELS[engine] / name).is_file() for name in _DONORS[engine]):
                packages[engine] = folder / engine
                break
    return release_model_donors(packages, limit_per_engine)


def main(argv: list[str]) -> int:  # pragma: no cover - a developer's long hunt
    import tempfile

    runs = int(argv[0]) if argv else 500
    seed = int(argv[1]) if len(argv) > 1 else 1
    with tempfile.TemporaryDirectory() as work:
        fuzzer = Fuzzer(Path(work), seed, real_model_donors())
        failures = 0
        for n in range(runs):
            failure = fuzzer.one()
            if failure is not None:
                failures += 1
                print(f"--- case {n}: {failure.describe()}", flush=True)
    print(f"{runs} runs, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
