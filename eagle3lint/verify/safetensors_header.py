"""Tensor names, dtypes and shapes from safetensors headers, without reading tensor data.

The format: an 8-byte little-endian header length N, N bytes of JSON (name -> dtype, shape,
data_offsets), then the raw data. Only the first 8 + N bytes are read.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3lint.common.safe_io import open_regular_file, os_problem, read_upto
from eagle3lint.verify.model_files import (
    ModelFileError,
    OutsideFolder,
    as_size,
    describe,
    locate,
    open_model_file,
    parse_json,
    read_model_json,
)

# Real headers are kilobytes to a few megabytes; the safetensors library itself refuses more
# than 100 MB. Across a checkpoint's shards, a budget keeps a folder of thousands of maximal
# headers from being read for minutes.
_MAX_HEADER_BYTES = 100 * 1000 * 1000
_MAX_TOTAL_HEADER_BYTES = 256 * 1024 * 1024
_MAX_SHARDS = 10_000
INDEX_NAME = "model.safetensors.index.json"


class HeaderError(ModelFileError):
    """The file is not a readable safetensors file (message names the problem)."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    file: Path
    # Where its data lies in the file (absolute byte offsets), for the few small tensors read.
    begin: int = 0
    end: int = 0


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
    """The tensors the safetensors file ``path`` declares (links followed: the caller chose
    the path; :func:`read_checkpoint` confines a folder's files itself)."""
    try:
        fd = open_regular_file(path)
    except OSError as exc:
        raise HeaderError(f"{path}: {os_problem(exc)}") from exc
    try:
        return _read_header(fd, path)
    finally:
        os.close(fd)


def _read_header(fd: int, path: Path) -> dict[str, TensorInfo]:
    try:
        size_bytes = read_upto(fd, 8)
        if len(size_bytes) < 8:
            raise HeaderError(f"{path}: shorter than a safetensors header (truncated download?)")
        (header_len,) = struct.unpack("<Q", size_bytes)
        if header_len > _MAX_HEADER_BYTES:
            raise HeaderError(f"{path}: header length {header_len} is not plausible (not a safetensors file?)")
        raw = read_upto(fd, header_len)
        data_size = os.fstat(fd).st_size - 8 - header_len
    except OSError as exc:
        raise HeaderError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if len(raw) < header_len:
        raise HeaderError(f"{path}: header cut short (truncated download?)")
    try:
        header = parse_json(f"{path}: header", raw)
    except ModelFileError as exc:
        raise HeaderError(str(exc)) from exc
    if not isinstance(header, dict):
        raise HeaderError(f"{path}: header is not a JSON object")
    tensors: dict[str, TensorInfo] = {}
    data_end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, offsets = _entry(entry)
        if dtype is None or shape is None or offsets is None:
            raise HeaderError(f"{path}: tensor {describe(name)} has a malformed header entry ({_entry_problem(entry)})")
        begin, end = offsets
        if end < begin:
            raise HeaderError(f"{path}: tensor {describe(name)} has data_offsets {begin}..{end}")
        data_end = max(data_end, end)
        tensors[name] = TensorInfo(name, dtype, shape, path, 8 + header_len + begin, 8 + header_len + end)
    if data_end > data_size:
        raise HeaderError(
            f"{path}: header declares {data_end} bytes of tensor data but the file holds {data_size} "
            "(truncated download?)"
        )
    return tensors


def _entry(entry: Any) -> tuple[str | None, tuple[int, ...] | None, tuple[int, int] | None]:
    """A header entry's dtype, shape and data offsets, each None when it is not what the
    format says (a short string; a list of whole numbers; two of them)."""
    if not isinstance(entry, dict):
        return None, None, None
    dtype = entry.get("dtype")
    shape = entry.get("shape")
    offsets = entry.get("data_offsets")
    good_dtype = dtype if isinstance(dtype, str) and 0 < len(dtype) <= 16 else None
    dims = [as_size(d) for d in shape] if isinstance(shape, list) else None
    good_shape = tuple(d for d in dims if d is not None) if dims is not None and None not in dims else None
    ends = [as_size(o) for o in offsets] if isinstance(offsets, list) and len(offsets) == 2 else None
    good_offsets = (ends[0], ends[1]) if ends is not None and ends[0] is not None and ends[1] is not None else None
    return good_dtype, good_shape, good_offsets


def _entry_problem(entry: Any) -> str:
    if not isinstance(entry, dict):
        return f"{describe(entry)}, not an object"
    dtype, shape, _ = _entry(entry)
    if dtype is None:
        return f"dtype is {describe(entry.get('dtype'))}"
    if shape is None:
        return f"shape is {describe(entry.get('shape'))}, not a list of whole numbers (0 to 2**63 - 1)"
    return f"data_offsets is {describe(entry.get('data_offsets'))}, not two whole numbers (0 to 2**63 - 1)"


# Integer tensors whose values the pre-flight reads (a vocabulary mapping): little-endian.
_INT_FORMATS = {"I64": ("<q", 8), "I32": ("<i", 4), "I16": ("<h", 2), "I8": ("<b", 1), "U8": ("<B", 1)}


def read_int_tensor(folder: Path, info: TensorInfo, max_elements: int) -> list[int]:
    """The values of the small integer tensor ``info`` of a checkpoint in ``folder``: read
    through the same confinement as its header (a regular file inside the folder), at most
    ``max_elements`` values; :class:`HeaderError` for another dtype, a size that does not match
    its shape, or a tensor too large to be a vocabulary mapping."""
    import struct as _struct

    fmt = _INT_FORMATS.get(info.dtype)
    if fmt is None:
        raise HeaderError(f"{info.file}: tensor {describe(info.name)} is {describe(info.dtype)}, not an integer tensor")
    count = 1
    for dim in info.shape:
        count *= dim
    code, width = fmt
    if count > max_elements:
        raise HeaderError(f"{info.file}: tensor {describe(info.name)} has {count} values; more than {max_elements} is not a vocabulary mapping")
    if info.end - info.begin != count * width:
        raise HeaderError(f"{info.file}: tensor {describe(info.name)} holds {info.end - info.begin} bytes, not the {count * width} its shape needs")
    try:
        fd = open_model_file(folder, info.file.name)
    except FileNotFoundError:
        raise HeaderError(f"{info.file}: no such file") from None
    try:
        os.lseek(fd, info.begin, os.SEEK_SET)
        data = read_upto(fd, count * width)
    except OSError as exc:
        raise HeaderError(f"{info.file}: cannot read ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)
    if len(data) != count * width:
        raise HeaderError(f"{info.file}: tensor {describe(info.name)} is cut short (truncated download?)")
    return [v[0] for v in _struct.iter_unpack(code, data)]


def read_checkpoint(folder: Path) -> CheckpointTensors | None:
    """All tensors of the ``*.safetensors`` files in ``folder``; None when it has none.

    A sharded checkpoint's index (``model.safetensors.index.json``) must name only files that
    exist inside the folder. Raises :class:`HeaderError` (or another ``ModelFileError``) for an
    unusable file, :class:`OutsideFolder` for a link that leaves the folder.
    """
    names = _shard_names(folder)
    if names is None:
        names = sorted(p.name for p in folder.glob("*.safetensors"))
        if len(names) > _MAX_SHARDS:
            raise HeaderError(f"{folder}: {len(names)} safetensors files; more than {_MAX_SHARDS} is not a checkpoint")
    if not names:
        return None
    tensors: dict[str, TensorInfo] = {}
    files: list[Path] = []
    budget = _MAX_TOTAL_HEADER_BYTES
    for name in names:
        path = folder / name
        try:
            fd = open_model_file(folder, name)
        except FileNotFoundError:
            raise HeaderError(f"{path}: no such file") from None
        try:
            if budget <= 0:
                raise HeaderError(f"{folder}: the safetensors headers add up to more than {_MAX_TOTAL_HEADER_BYTES >> 20} MiB")
            header = _read_header(fd, path)
            budget -= os.lseek(fd, 0, os.SEEK_CUR)
        finally:
            os.close(fd)
        tensors.update(header)
        files.append(path)
    return CheckpointTensors(tensors, tuple(files))


def _shard_names(folder: Path) -> list[str] | None:
    """The shard files a sharded checkpoint's index names, each checked to lie inside the
    folder and to exist; None when the folder has no index."""
    index_path = folder / INDEX_NAME
    try:
        index = read_model_json(folder, INDEX_NAME)
    except FileNotFoundError:
        return None
    except OutsideFolder:
        raise
    except ModelFileError as exc:
        raise HeaderError(f"{exc} (not a readable safetensors index)") from exc
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        what = "a JSON object" if isinstance(index, dict) else describe(index)
        raise HeaderError(f"{index_path}: not a safetensors index ({what} without a `weight_map` object)")
    names: set[str] = set()
    for tensor, shard in weight_map.items():
        if not isinstance(shard, str):
            raise HeaderError(f"{index_path}: tensor {describe(tensor)} is mapped to {describe(shard)}, not a file name")
        names.add(shard)
    if len(names) > _MAX_SHARDS:
        raise HeaderError(f"{index_path}: names {len(names)} shards; more than {_MAX_SHARDS} is not a checkpoint")
    missing: list[str] = []
    for name in sorted(names):
        try:
            real = locate(folder, name)
        except FileNotFoundError:  # a link to nowhere
            missing.append(name)
            continue
        except OutsideFolder:
            raise
        except ModelFileError as exc:
            raise HeaderError(f"{index_path}: {exc}") from exc
        if not real.exists():
            missing.append(name)
    if missing:
        shown = ", ".join(describe(m) for m in missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise HeaderError(f"{index_path}: names shard(s) that are missing: {shown}")
    return sorted(names)
