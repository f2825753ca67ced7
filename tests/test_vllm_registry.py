"""Registry dict literals and platform-dispatched packages, read without importing anything."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from eagle3lint.engines.vllm.discovery import build_vllm_index, discover_vllm_models
from eagle3lint.engines.vllm.dispatch import platform_variants
from eagle3lint.engines.vllm.registry import read_registry
from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.source.index import ClassRef
from tests.helpers import FIXTURES

MODEL = "class {name}:\n    pass\n"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"vllm/__init__.py": "", "vllm/model_executor/__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root / "vllm"


def _variants(package_root: Path, module: str, name: str) -> dict[str, str] | None:
    index = build_vllm_index(discover_engine([package_root]))
    found = platform_variants(index, module, name, index.vpack)
    return None if found is None else {v.label: v.ref.module for v in found}


def _platform_package(init: str) -> dict[str, str]:
    files = {"vllm/models/__init__.py": "", "vllm/models/foo/__init__.py": init}
    for platform in ("nvidia", "amd", "xpu"):
        files[f"vllm/models/foo/{platform}/__init__.py"] = ""
        files[f"vllm/models/foo/{platform}/model.py"] = MODEL.format(name="FooForCausalLM")
    files["vllm/models/foo/stub.py"] = MODEL.format(name="FooForCausalLM")
    return files


def test_branch_dispatch_skips_type_checking(tmp_path: Path) -> None:
    root = _tree(tmp_path, _platform_package("""
        from typing import TYPE_CHECKING
        from vllm.platforms import current_platform
        if TYPE_CHECKING:
            from .xpu.model import FooForCausalLM
        elif current_platform.is_rocm():
            from .amd.model import FooForCausalLM
        else:
            from .nvidia.model import FooForCausalLM
    """))
    assert _variants(root, "vllm.models.foo", "FooForCausalLM") == {
        "amd": "vllm.models.foo.amd.model",
        "nvidia": "vllm.models.foo.nvidia.model",
    }


def test_type_checking_or_condition_is_a_runtime_branch(tmp_path: Path) -> None:
    root = _tree(tmp_path, _platform_package("""
        from typing import TYPE_CHECKING
        from vllm.platforms import current_platform
        if TYPE_CHECKING or not current_platform.is_rocm():
            from .nvidia.model import FooForCausalLM
        else:
            from .amd.model import FooForCausalLM
    """))
    assert set(_variants(root, "vllm.models.foo", "FooForCausalLM") or {}) == {"nvidia", "amd"}


def test_file_outside_a_platform_folder_is_labelled_by_its_branches(tmp_path: Path) -> None:
    root = _tree(tmp_path, _platform_package("""
        from vllm.platforms import current_platform
        if current_platform.is_xpu():
            from .stub import FooForCausalLM
        elif current_platform.is_cpu():
            from .stub import FooForCausalLM
        else:
            from .nvidia.model import FooForCausalLM
    """))
    assert _variants(root, "vllm.models.foo", "FooForCausalLM") == {
        "xpu+cpu": "vllm.models.foo.stub",
        "nvidia": "vllm.models.foo.nvidia.model",
    }


def test_module_getattr_dispatch(tmp_path: Path) -> None:
    root = _tree(tmp_path, _platform_package("""
        from vllm.platforms import current_platform
        def __getattr__(name):
            if name == "FooForCausalLM":
                if current_platform.is_rocm():
                    from .amd import model as amd_model
                    return amd_model.FooForCausalLM
                from .nvidia.model import FooForCausalLM
                return FooForCausalLM
            raise AttributeError(name)
    """))
    assert set(_variants(root, "vllm.models.foo", "FooForCausalLM") or {}) == {"amd", "nvidia"}


@pytest.mark.parametrize(
    "init",
    [
        "from .nvidia.model import FooForCausalLM\n",  # no platform test at all
        "from vllm.platforms import current_platform\nfrom .nvidia.model import FooForCausalLM\n"
        "if current_platform.is_xpu():\n    raise NotImplementedError\n",  # unconditional import
    ],
)
def test_no_dispatch(tmp_path: Path, init: str) -> None:
    root = _tree(tmp_path, _platform_package(init))
    assert _variants(root, "vllm.models.foo", "FooForCausalLM") is None


def test_registry_sections_merged_tables_and_relative_modules() -> None:
    index = build_vllm_index(discover_engine([FIXTURES / "vllm_modern"]))
    registry = read_registry(index, index.vpack)
    assert registry is not None
    llama = registry.lookup("LlamaForCausalLM")
    assert llama is not None
    assert (llama.module, llama.class_name, llama.sections) == (
        "vllm.model_executor.models.llama",
        "LlamaForCausalLM",
        ["_TEXT_GENERATION_MODELS"],
    )
    dual = registry.lookup("DualForCausalLM")
    assert dual is not None and dual.module == "vllm.models.dual"
    # Version strings of retired architectures and the merged dict are not registrations.
    assert registry.lookup("OldForCausalLM") is None
    assert all("_VLLM_MODELS" not in e.sections for e in registry.entries.values())


def test_class_in_two_sections_keeps_the_generation_kind() -> None:
    index = build_vllm_index(discover_engine([FIXTURES / "vllm_modern"]))
    discovery = discover_vllm_models(index)
    (llama,) = [m for m in discovery.models if m.ref == ClassRef("vllm.model_executor.models.llama", "LlamaForCausalLM")]
    assert llama.kind == "target"
    assert sorted(llama.architectures) == ["LlamaForCausalLM", "LlamaModel"]
    registered = {a for m in discovery.models for a in m.architectures}
    assert registered == set(discovery.registry.entries)  # type: ignore[union-attr]
