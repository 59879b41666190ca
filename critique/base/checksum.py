"""The checksum of a dataset folder: what a run directory's manifest records as dataset.checksum,
and what the analysis compares a dataset folder against. One definition, for the datasets and
the analysis alike."""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath


def dataset_checksum(path: Path) -> str:
    """sha256 over every file of the dataset folder, in a fixed order."""
    path = Path(path)
    return _checksum((str(f.relative_to(path)), f.read_bytes()) for f in sorted(p for p in path.rglob("*")
                                                                                 if p.is_file()))


def files_checksum(files: dict[str, str]) -> str:
    """What `dataset_checksum` gives for a folder that holds just `files` (name -> text)."""
    return _checksum((name, files[name].encode("utf-8")) for name in sorted(files, key=PurePosixPath))


def _checksum(named_bytes) -> str:
    digest = hashlib.sha256()
    for name, data in named_bytes:
        digest.update(name.encode() + b"\0")
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()
