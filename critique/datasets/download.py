"""`critique datasets download NAME --to DIR`: fetch a dataset's raw upstream files.

Each file comes from the pinned commit of the public repository it was taken from (the repositories,
commits, paths and sha256 are below) and is checked against its sha256. Three datasets come
as zip archives whose own checksum is not known; their size is checked, and every file
taken out of them is checked against its sha256. Downloads resume: an interrupted file is
kept as ``<file>.part`` and continued with an HTTP Range request (restarted when the
server ignores the range). A file that fails its check is removed. ``--mirror URL``
replaces ``https://raw.githubusercontent.com`` (for a local copy, or the tests).
"""

from __future__ import annotations

import http.client
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from critique.datasets.rawfiles import sha256
from critique.datasets.splits import DatasetError

GITHUB = "https://raw.githubusercontent.com"
CHUNK = 1 << 16


@dataclass(frozen=True)
class Remote:
    url: str
    path: str = ""  # where a plain file goes, under <to>/<name>/
    sha256: str = ""
    size: int | None = None
    members: tuple[tuple[str, str, str], ...] = ()  # zip archive: (member, path, sha256)


def gh(repo: str, commit: str, path: str) -> str:
    return f"{GITHUB}/{repo}/{commit}/{quote(path)}"


def _files(repo: str, commit: str, prefix: str, target: str, pinned: dict[str, str]) -> list[Remote]:
    return [Remote(gh(repo, commit, prefix + name), target + name, digest) for name, digest in pinned.items()]


def _zip(repo, commit, path, size, inner: str, target: str, pinned: dict[str, str]) -> Remote:
    return Remote(gh(repo, commit, path), size=size,
                  members=tuple((inner + name, target + name, digest) for name, digest in pinned.items()))


MCR = ("megagonlabs/MCR", "db2659835e4b881986afb9780bcc880294d4d1c3")
PUBMED = ("pubmedqa/pubmedqa", "1cbae8e92f72f20c8d3747cbb3bf5bc53554d997")
NF = ("hakimamarullah/medisearch-api", "0ae71a4bb2416506dbdd9a5f8894e7830b99f19f")
BEIR = ("TwistXXF/PaperPilot-Reproduction", "5471766d700d7825c2aad84a37f2746698ade6f5")
ML = ("vnelima/Phase-4-Project", "fe1425f79ecb6b819293a5d40cc6dc47241d3f59")
CASEREC = ("caserec/Datasets-for-Recommender-Systems", "4180b4dc4103452c591a1718560d29bdf1f48540")

SOURCES: dict[str, list[Remote]] = {
    "mcr": _files(*MCR, "data/Token-level/", "", {
        "3-conditions_5-items.jsonl": "d594475def017db72c4609480df3376626efd6120e954ee848a0baccaa8487fa",
        "README.md": "1a4c9fd5531d0b0fe000cf9a7a8c7f89234abeba4825071850e85f20af137dd7"})
    + _files(*MCR, "", "", {
        "LICENSE": "6e23597f38df0cd9a9f1e44878d3b45c2648cc1565b35d21208417e135cfad40",
        "NOTICE": "5cf1927fe545af69c37b3299d26d853093cf5eda8f477a3883daad55a26d8fa9"}),
    "pubmed": _files(*PUBMED, "data/", "", {
        "ori_pqal.json": "8b3276be8942ebbd77f3ddcda12c1749bf0e490045a736fd8438ee40cf37a41d",
        "test_ground_truth.json": "939fe566f09017d13b1ca64d2ddfee0bc2374b366048152997669cccedc44d51"})
    + _files(*PUBMED, "", "", {"LICENSE": "8e75abc6136be91e5ae66dbb6dda07c8bc9dcc215ed3bc1ba3ae7fab7904777e"}),
    "nfcorpus": _files(*NF, "data/nfcorpus/", "original-release/", {
        "README.txt": "191c16392f4e9edd9fdb4b9948192814df2e7a8d1f38b94c843b1ad0bb1c6780",
        "test.all.queries": "e4d563ad21eccf12a7a0164caffc86b9630556ea24c7c3de322f3188105a54cf",
        "test.docs": "9d779d34db160e63a92a6b753ac79bcbc80d0f04dd01bdde71f38e98d6ad1f16",
        "test.3-2-1.qrel": "da94251f365be353ca30f15a46956b6e94dea5deac4d9174668cfa46f1b96b07",
        "dev.all.queries": "f14fae97eb0b5e48923da05c27b54469576cec3d99efab546e1fd6797095fb82",
        "dev.docs": "b7cf623af8f991e9d006d901a585234da65b0560a215e3bee85f884946b39751",
        "dev.3-2-1.qrel": "bb7048b9c7b029da5fe3a6f537f8be6e9e291554997c6face817d99c993c6c75"})
    + _files(*BEIR, "data/nfcorpus/", "beir/", {
        "queries.jsonl": "1b893f53f3f62e8f2949a6db619a9cb058e8d97901a5010e108e60c4ef5fd924"}),
    "movie": _files(*ML, "ml-latest-small/", "ml-latest-small/", {
        "README.txt": "63d22ac138e80fae37021797ed8e1b9424b5239dc576a137422adf783ae3f404",
        "movies.csv": "c47b783f23eb304413307e1bb05335e427737da20ec8d3c0e96335567dd5f3dc",
        "ratings.csv": "80da8b3393dae325bbba5a31f291a6ba55d8d4f4396de3c456f2c1635b1b70e8"}),
    "anime": [_zip(*CASEREC, "Processed Datasets/Anime/anime.zip", 2810609, "anime/", "caserec-5000users/", {
        "README": "758ed1853dcd502f3798e385fc90d519ed6a3c536005943c921816d31f0a2a9b",
        "anime_info.dat": "1fbbadd4cc02276e4119062810835a3a6930d40ed1bd7d32df8d867731cc518b",
        "anime_ratings.dat": "30e4172121bc511b97155a8812a0fbfd0c72015adfd0e56e92fdb53d4741886b",
        "anime_history.dat": "7471f79e408910bf72e2aa2fc7c9fb754d9185fe351e7547979669b57e931c7e"})],
    "book": [_zip(*CASEREC, "Processed Datasets/BookCrossing/book_crossing.zip", 2156533, "book_crossing/",
                  "caserec-bookcrossing/", {
                      "README": "061b5e3370ee25110a6172df95f4776fd8beabee11044e7a50302be69bcdd3a5",
                      "items_info.dat": "e8785b6744d6758b41ed497a5849a66ab2e17279b71e67d0a43b1e0687a39df1",
                      "book_ratings.dat": "703c6efadfee9bd790354b230fe948c61f246ba5e3642c67ace96501de6667b3",
                      "book_history.dat": "9866c79c6022bd68729403768496c7ffb8f481db268884e0a22e5cf80fc5eadd"})],
    "steam": [_zip(*CASEREC, "Processed Datasets/Steam/steam.zip", 823340, "steam/", "caserec-steam200k/", {
        "README": "a1fd73c29c66eafdd0f147684529e7d84eb7ea65d9da7e7c02061b190600c018",
        "item_info.dat": "0f799721e472a14ef3c7a06e0771532d47611ec18e87c158e4864074ed5c5c60",
        "game_purchase.dat": "d353d441b6325862be2162292b6ad6b501fa16380b9625a96daa8fa456c4ec52",
        "game_play.dat": "86ac428985a323da0c6cee634b2c8d8851bb028048426a6381c68c96554d0b14"})],
}


def _open(url: str, offset: int):
    """The response for ``url`` from byte ``offset``; None when the range is already complete."""
    request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-"} if offset else {})
    try:
        return urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:
            return None
        raise DatasetError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise DatasetError(f"{url}: cannot download ({getattr(exc, 'reason', exc)})") from None


def fetch(url: str, dest: Path, digest: str = "", size: int | None = None) -> Path:
    """Download ``url`` to ``dest``, resuming ``dest.part``; check size and sha256."""
    if dest.is_file() and (digest or size is not None) and not _problem(dest, digest, size):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    offset = part.stat().st_size if part.is_file() else 0
    response = _open(url, offset)
    if response is not None:
        _save(url, response, part, offset)
    problem = _problem(part, digest, size)
    if problem:
        part.unlink(missing_ok=True)
        raise DatasetError(f"{url}: {problem}; the download was removed, run the command again")
    os.replace(part, dest)
    return dest


def _save(url: str, response, part: Path, offset: int) -> None:
    """Write the body to ``part``, appending when the server honoured the range."""
    resumed = offset and response.status == 206
    announced = int(response.headers.get("Content-Length") or -1)
    written, problem = 0, ""
    try:
        with response, part.open("ab" if resumed else "wb") as handle:
            for block in iter(lambda: response.read(CHUNK), b""):
                written += handle.write(block)
    except (http.client.HTTPException, OSError) as exc:
        problem = type(exc).__name__
    if problem or 0 <= written < announced:
        raise DatasetError(f"{url}: download interrupted after {part.stat().st_size} bytes "
                           f"({problem or 'connection closed early'}); run the command again to resume")


def _problem(path: Path, digest: str, size: int | None) -> str:
    if size is not None and path.stat().st_size != size:
        return f"size {path.stat().st_size} bytes, expected {size}"
    if digest and sha256(path) != digest:
        return f"sha256 {sha256(path)}, expected {digest}"
    return ""


def extract(archive: Path, members: tuple[tuple[str, str, str], ...], folder: Path) -> None:
    """Take the listed members out of a zip archive, each checked against its sha256."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            for member, path, digest in members:
                if member not in zipped.namelist():
                    raise DatasetError(f"{archive}: has no member {member}")
                _extract_one(zipped, member, folder / path, digest, archive)
    except zipfile.BadZipFile as exc:
        raise DatasetError(f"{archive}: not a usable zip archive ({exc})") from None


def _extract_one(zipped: zipfile.ZipFile, member: str, target: Path, digest: str, archive: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out, zipped.open(member) as source:
            shutil.copyfileobj(source, out)
        got = sha256(Path(tmp))
        if got != digest:
            raise DatasetError(f"{archive}: member {member}: sha256 {got}, expected {digest}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _present(folder: Path, path: str, digest: str) -> bool:
    return (folder / path).is_file() and sha256(folder / path) == digest


def download(name: str, to: str | Path, mirror: str | None = None, say=print) -> Path:
    """Fetch every raw file of ``name`` into ``<to>/<name>/``; returns that folder."""
    if name not in SOURCES:
        raise DatasetError(f"no download for {name!r}; known: {', '.join(sorted(SOURCES))}")
    folder = Path(to) / name
    for remote in SOURCES[name]:
        url = mirror.rstrip("/") + remote.url[len(GITHUB):] if mirror else remote.url
        if remote.members:
            if all(_present(folder, path, digest) for _, path, digest in remote.members):
                say(f"{name}: {len(remote.members)} files from {url.rsplit('/', 1)[-1]} already present")
                continue
            archive = fetch(url, folder / ".downloads" / Path(remote.url).name, size=remote.size)
            try:
                extract(archive, remote.members, folder)
            finally:  # an archive is only kept while its members are taken out
                archive.unlink()
                if not any(archive.parent.iterdir()):
                    archive.parent.rmdir()
            say(f"{name}: {len(remote.members)} files from {url} verified")
        else:
            fetch(url, folder / remote.path, remote.sha256, remote.size)
            say(f"{name}: {remote.path} verified")
    return folder
