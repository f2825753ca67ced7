"""Tensor names, dtypes and shapes from safetensors headers, without reading tensor data.

The format: an 8-byte little-endian header length N, N bytes of JSON (name -> dtype, shape,
data_offsets), then the raw data. Only the first 8 + N bytes are read.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

# Real headers are kilobytes to a few megabytes; anything far larger is a corrupt file.
_MAX_HEADER_BYTES = 100 * 1024 * 1024


class HeaderError(Exception):
    """The file is not a readable safetensors file (message names the problem)."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    file: Path


@dataclass(frozen=True)
class CheckpointTensors:
    """Every tensor declared by a checkpoint folder's safetensors files."""

    tensors: dict[str, TensorInfo]
    files: tuple[Path, ...]

    def find(self, suffix: str) -> TensorInfo | None:
        """The tensor named ``suffix`` or ending in ``.suffix`` (``d2t``, ``model.fc.weight``)."""
        if suffix in self.tensors:
            return self.tensors[suffix]
        for name, info in self.tensors.items():
            if name.endswith("." + suffix):
                return info
        return None


def read_header(path: Path) -> dict[str, TensorInfo]:
    try:
        with path.open("rb") as handle:
            size_bytes = handle.read(8)
            if len(size_bytes) < 8:
                raise HeaderError(f"{path}: shorter than a safetensors header (truncated download?)")
            (header_len,) = struct.unpack("<Q", size_bytes)
            if header_len > _MAX_HEADER_BYTES:
                raise HeaderError(f"{path}: header length {header_len} is not plausible (not a safetensors file?)")
            raw = handle.read(header_len)
            data_size = handle.seek(0, 2) - 8 - header_len
    except OSError as exc:
        raise HeaderError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if len(raw) < header_len:
        raise HeaderError(f"{path}: header cut short (truncated download?)")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HeaderError(f"{path}: header is not valid JSON ({exc})") from exc
    if not isinstance(header, dict):
        raise HeaderError(f"{path}: header is not a JSON object")
    tensors: dict[str, TensorInfo] = {}
    data_end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = str(entry["dtype"])
            shape = tuple(int(d) for d in entry["shape"])
            begin, end = (int(o) for o in entry["data_offsets"])
        except (KeyError, TypeError, ValueError) as exc:
            raise HeaderError(f"{path}: tensor {name!r} has a malformed header entry") from exc
        if end < begin:
            raise HeaderError(f"{path}: tensor {name!r} has data_offsets {begin}..{end}")
        data_end = max(data_end, end)
        tensors[name] = TensorInfo(name, dtype, shape, path)
    if data_end > data_size:
        raise HeaderError(
            f"{path}: header declares {data_end} bytes of tensor data but the file holds {data_size} "
            "(truncated download?)"
        )
    return tensors


def read_checkpoint(folder: Path) -> CheckpointTensors | None:
    """All tensors of the ``*.safetensors`` files in ``folder``; None when it has none.

    A sharded checkpoint's index (``model.safetensors.index.json``) must name only files that exist.
    """
    index_path = folder / "model.safetensors.index.json"
    files = sorted(folder.glob("*.safetensors"))
    if index_path.is_file():
        try:
            index = json.loads(index_path.read_text(encoding="utf-8"))
            shard_names = sorted(set(index["weight_map"].values()))
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            raise HeaderError(f"{index_path}: not a readable safetensors index ({exc})") from exc
        missing = [name for name in shard_names if not (folder / name).is_file()]
        if missing:
            raise HeaderError(f"{index_path}: names shard(s) that are missing: {', '.join(missing)}")
        files = [folder / name for name in shard_names]
    if not files:
        return None
    tensors: dict[str, TensorInfo] = {}
    for file in files:
        tensors.update(read_header(file))
    return CheckpointTensors(tensors, tuple(files))
