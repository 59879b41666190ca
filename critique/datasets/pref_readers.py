"""One small reader per upstream recommendation format (steam, book, anime, movie).

Each reader turns its raw folder into ``Interactions``: what every item is called, every
item each user touched (``history``), and the items the user liked (``positives``), under
a stated rule. Errors name the file, line and problem.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from critique.datasets.rawfiles import fail, number, read_csv, read_tsv, require

ENTITY_CUT = re.compile(r"&(#\d+|[A-Za-z]+)$")  # an HTML entity whose ';' became a field break


@dataclass
class Interactions:
    items: dict[str, str]  # item id -> the description shown to the model
    history: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    positives: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    files: list[Path] = field(default_factory=list)
    version: str = ""
    positive_rule: str = ""
    users_file: Path | None = None  # the file that decides who has enough positives


SAFE_ID = re.compile(r"[A-Za-z0-9_.-]+")  # user ids name folders


def _add(inter: Interactions, path: Path, line: int, user: str, item: str, liked: bool) -> None:
    if not SAFE_ID.fullmatch(user):
        raise fail(path, line, f"user id {user!r} is not a plain name")
    if item not in inter.items:
        raise fail(path, line, f"item {item!r} has no metadata")
    inter.history[user].add(item)
    if liked:
        inter.positives[user].add(item)


def steam(folder: Path) -> Interactions:
    """caserec re-encoding of Kaggle steam-200k: purchases and hours played."""
    base = folder / "caserec-steam200k"
    info, purchases, plays = require(base, "item_info.dat", "game_purchase.dat", "game_play.dat")
    items = {f[0]: html.unescape(f[1].strip()) for _, f in read_tsv(info, 2)}
    inter = Interactions(items, files=[info, purchases, plays], users_file=plays,
                         version="Kaggle tamber/steam-video-games steam-200k, caserec re-encoding",
                         positive_rule="played the game for at least 1 hour; history = purchased or played")
    for line, f in read_tsv(purchases, 3):
        _add(inter, purchases, line, f[0], f[1], False)
    for line, f in read_tsv(plays, 3):
        _add(inter, plays, line, f[0], f[1], number(plays, line, f[2], "hours") >= 1.0)
    return inter


def _repair(text: str) -> str:
    """Undo UTF-8 read as cp1252/latin-1 (upstream BX mojibake) where that round-trips."""
    if "Ã" not in text and "Â" not in text:
        return text
    for encoding in ("cp1252", "latin-1"):
        try:
            return text.encode(encoding).decode("utf-8")
        except UnicodeError:
            continue
    return text


def _book_fields(raw: list[str]) -> list[str]:
    """Rejoin fields split at the ';' of an HTML entity, then unescape them."""
    fields: list[str] = []
    for piece in raw:
        if fields and ENTITY_CUT.search(fields[-1]):
            fields[-1] += ";" + piece
        else:
            fields.append(piece)
    while fields and not fields[-1].strip():
        fields.pop()
    return [_repair(html.unescape(f)).strip() for f in fields]


def book(folder: Path) -> Interactions:
    """caserec filtered subset of Book-Crossing: explicit ratings 1-10 and all interactions."""
    base = folder / "caserec-bookcrossing"
    info, ratings, history = require(base, "items_info.dat", "book_ratings.dat", "book_history.dat")
    items = {}
    for line, raw in read_tsv(info, 6):
        f = _book_fields(raw)
        if len(f) < 6:
            raise fail(info, line, f"expected id, ISBN, title, author, year, publisher; found {len(f)} fields")
        year = f" ({f[4]})" if f[4] not in ("", "0") else ""
        items[f[0]] = f'"{f[2]}" by {f[3]}{year}'
    inter = Interactions(items, files=[info, ratings, history], users_file=ratings,
                         version="Book-Crossing (Ziegler et al. 2005), caserec filtered subset; not Goodreads",
                         positive_rule="explicit rating of at least 7 out of 10; history = any interaction")
    for line, f in read_tsv(history, 3):
        _add(inter, history, line, f[0], f[1], False)
    for line, f in read_tsv(ratings, 3):
        _add(inter, ratings, line, f[0], f[1], number(ratings, line, f[2], "rating") >= 7)
    return inter


def anime(folder: Path) -> Interactions:
    """caserec 5,000-user subsample of the Kaggle CooperUnion anime data."""
    base = folder / "caserec-5000users"
    info, ratings, history = require(base, "anime_info.dat", "anime_ratings.dat", "anime_history.dat")
    items = {}
    for _, f in read_tsv(info, 5):
        name, genre, kind, episodes = (html.unescape(x.strip()) for x in f[1:5])
        parts = [p for p in (kind, f"{episodes} episodes" if episodes not in ("", "Unknown") else "") if p]
        genres = f"; genres: {genre}" if genre else ""
        items[f[0]] = f"{name} ({', '.join(parts)}{genres})" if parts or genre else name
    inter = Interactions(items, files=[info, ratings, history], users_file=ratings,
                         version="Kaggle CooperUnion anime-recommendations-database (MyAnimeList), "
                                 "caserec random 5,000-user subsample",
                         positive_rule="rating of at least 8 out of 10; history = every list entry")
    for line, f in read_tsv(history, 3):
        _add(inter, history, line, f[0], f[1], False)
    for line, f in read_tsv(ratings, 3):
        _add(inter, ratings, line, f[0], f[1], number(ratings, line, f[2], "rating") >= 8)
    return inter


def movie(folder: Path) -> Interactions:
    """MovieLens ml-latest-small when present, else ml-100k; liked = rated 4 or more of 5."""
    if (folder / "ml-latest-small").is_dir():
        return _movielens_small(folder / "ml-latest-small")
    return _movielens_100k(folder / "ml-100k")


def _movielens_small(base: Path) -> Interactions:
    movies, ratings = require(base, "movies.csv", "ratings.csv")
    items = {}
    for _, row in read_csv(movies, ["movieId", "title", "genres"]):
        genres = row["genres"].replace("|", ", ") if row["genres"] != "(no genres listed)" else ""
        items[row["movieId"]] = f"{row['title']}" + (f" (genres: {genres})" if genres else "")
    inter = Interactions(items, files=[movies, ratings], users_file=ratings,
                         version="MovieLens ml-latest-small (GroupLens, 2018-09-26)",
                         positive_rule="rating of at least 4.0 out of 5; history = every rated movie")
    for line, row in read_csv(ratings, ["userId", "movieId", "rating"]):
        liked = number(ratings, line, row["rating"], "rating") >= 4.0
        _add(inter, ratings, line, row["userId"], row["movieId"], liked)
    return inter


ML100K_GENRES = ["unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime", "Documentary",
                 "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance", "Sci-Fi",
                 "Thriller", "War", "Western"]


def _movielens_100k(base: Path) -> Interactions:
    movies, ratings = require(base, "u.item", "u.data")
    items = {}
    for line, f in read_tsv(movies, 5 + len(ML100K_GENRES), header=False, sep="|", encoding="latin-1"):
        genres = [g for g, flag in zip(ML100K_GENRES, f[5:]) if flag.strip() == "1" and g != "unknown"]
        items[f[0]] = f[1] + (f" (genres: {', '.join(genres)})" if genres else "")
    inter = Interactions(items, files=[movies, ratings], users_file=ratings,
                         version="MovieLens ml-100k (GroupLens)",
                         positive_rule="rating of at least 4 out of 5; history = every rated movie")
    for line, f in read_tsv(ratings, 3, header=False):
        _add(inter, ratings, line, f[0], f[1], number(ratings, line, f[2], "rating") >= 4)
    return inter


READERS = {"steam": steam, "book": book, "anime": anime, "movie": movie}
