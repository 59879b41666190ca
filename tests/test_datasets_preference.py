"""steam / book / anime / movie builders on small fixtures in each upstream format."""

import random
from collections import Counter

import pytest

from critique.datasets import preference, pref_readers
from critique.datasets.splits import DatasetError, load_dataset

N_ITEMS = 90
USERS = {str(u): (12 if u <= 4 else 3) for u in range(1, 7)}  # user -> liked items; users 5, 6 have too few


@pytest.fixture(autouse=True)
def small(monkeypatch):
    monkeypatch.setattr(preference, "N_USERS", 3)
    monkeypatch.setattr(preference, "MIN_POSITIVES", 8)
    monkeypatch.setattr(preference, "PER_USER", 8)


def interactions(seed=0):
    """user -> [(item, liked)], with an uneven popularity across items."""
    rng = random.Random(seed)
    weights = [1 + (k % 9) ** 2 for k in range(N_ITEMS)]
    out = {}
    for user, n_liked in USERS.items():
        chosen = []
        while len(chosen) < n_liked + 5:
            item = str(rng.choices(range(1, N_ITEMS + 1), weights)[0])
            if item not in chosen:
                chosen.append(item)
        out[user] = [(item, k < n_liked) for k, item in enumerate(chosen)]
    return out


def write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_steam(folder, data):
    base = folder / "caserec-steam200k"
    write(base / "item_info.dat", ["Game_ID\tGame Name"] + [f"{k}\tGame {k}" for k in range(1, N_ITEMS + 1)])
    write(base / "game_purchase.dat", ["User_ID\tGame_ID\tPurchase"] +
          [f"{u}\t{i}\t1.0" for u, rows in data.items() for i, _ in rows])
    write(base / "game_play.dat", ["User_ID\tGame_ID\tHours"] +
          [f"{u}\t{i}\t{12.5 if liked else 0.3}" for u, rows in data.items() for i, liked in rows])
    return base / "game_play.dat"


def write_book(folder, data):
    base = folder / "caserec-bookcrossing"
    info = ["Book_ID\tISBN\tBook-Title\tBook-Author\tYear-Of-Publication\tPublisher\tS\tM\tL"]
    titles = {k: "Tom &amp\t Jerry" if k == 5 else f"Book {k}" for k in range(1, N_ITEMS + 1)}
    info += [f"{k}\t00{k}\t{titles[k]}\tAuthor {k}\t199{k % 10}\tSimon &amp\t Schuster\thttp://s\thttp://m\thttp://l\t"
             for k in range(1, N_ITEMS + 1)]
    write(base / "items_info.dat", info)
    write(base / "book_ratings.dat", ["user\titem\trating"] +
          [f"{u}\t{i}\t{9.0 if liked else 3.0}" for u, rows in data.items() for i, liked in rows])
    write(base / "book_history.dat", ["user\titem\taccessed"] +
          [f"{u}\t{i}\t1" for u, rows in data.items() for i, _ in rows])
    return base / "book_ratings.dat"


def write_anime(folder, data):
    base = folder / "caserec-5000users"
    write(base / "anime_info.dat", ["anime_ids\tname\tgenre\ttype\tepisodes\trating\tmembers"] +
          [f"{k}\tShow&#039;s {k}\tAction, Drama\tTV\t{k}\t7.5\t{100 * k}" for k in range(1, N_ITEMS + 1)])
    write(base / "anime_ratings.dat", ["User_ID\tAnime_ID\tFeedback"] +
          [f"{u}\t{i}\t{9 if liked else 5}" for u, rows in data.items() for i, liked in rows])
    write(base / "anime_history.dat", ["User_ID\tAnime_ID\tFeedback"] +
          [f"{u}\t{i}\t1" for u, rows in data.items() for i, _ in rows])
    return base / "anime_ratings.dat"


def write_movie(folder, data):
    base = folder / "ml-latest-small"
    write(base / "movies.csv", ["movieId,title,genres"] +
          [f'{k},"Film, The {k} (199{k % 10})",Comedy|Drama' for k in range(1, N_ITEMS + 1)])
    write(base / "ratings.csv", ["userId,movieId,rating,timestamp"] +
          [f"{u},{i},{4.5 if liked else 2.0},964982703" for u, rows in data.items() for i, liked in rows])
    return base / "ratings.csv"


def write_movie_100k(folder, data):
    base = folder / "ml-100k"
    flags = "|".join(["0", "1"] + ["0"] * 17)
    write(base / "u.item", [f"{k}|Film {k} (1995)|01-Jan-1995||http://x|{flags}" for k in range(1, N_ITEMS + 1)])
    write(base / "u.data", [f"{u}\t{i}\t{5 if liked else 2}\t881250949"
                            for u, rows in data.items() for i, liked in rows])
    return base / "u.data"


WRITERS = {"steam": write_steam, "book": write_book, "anime": write_anime, "movie": write_movie}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_build_pairs_liked_items_with_unseen_items_of_similar_popularity(tmp_path, name):
    data = interactions()
    WRITERS[name](tmp_path / "raw", data)
    ds = getattr(preference, name)(tmp_path / "out" / name, seed=1, raw=tmp_path / "raw")
    assert ds.card.kind == "preference" and len(ds.card.users) == 3
    assert set(ds.card.users) <= {f"u{u}" for u in USERS if USERS[u] >= 8}
    assert ds.card.extra["positive_rule"] and ds.card.extra["raw_sha256"]
    history = {f"u{u}": {i for i, _ in rows} for u, rows in data.items()}
    liked = {f"u{u}": {i for i, ok in rows if ok} for u, rows in data.items()}
    pop = Counter(i for rows in data.values() for i, _ in rows)
    for user in ds.card.users:
        train = [i for i in ds.train if i.user == user]
        test = [i for i in ds.test if i.user == user]
        assert len(train) == len(test) == 4
        for split in (train, test):
            assert Counter(i.answer for i in split) == {"A": 2, "B": 2}
        shown = []
        for item in train + test:
            meta = item.meta
            assert meta["liked"] in liked[user] and meta["unseen"] not in history[user]
            assert meta[f"item_{item.answer.lower()}"] == meta["liked"]
            assert item.question.startswith(f"Is user {user} more likely to prefer A or B?\nA: ")
            assert meta["popularity"] == {"liked": pop[meta["liked"]], "unseen": pop[meta["unseen"]]}
            shown += [meta["liked"], meta["unseen"]]
        assert len(shown) == len(set(shown))  # every item at most once per user
    reloaded = load_dataset(tmp_path / "out" / name)
    assert reloaded.checksum == ds.checksum and len(reloaded.train) == 12


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_same_seed_same_bytes(tmp_path, name):
    WRITERS[name](tmp_path / "raw", interactions())
    build = getattr(preference, name)
    assert build(tmp_path / "a", seed=3, raw=tmp_path / "raw").checksum == \
        build(tmp_path / "b", seed=3, raw=tmp_path / "raw").checksum


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_too_few_users_with_enough_liked_items(tmp_path, name, monkeypatch):
    users_file = WRITERS[name](tmp_path / "raw", interactions())
    monkeypatch.setattr(preference, "MIN_POSITIVES", 13)
    out = tmp_path / "out" / name
    with pytest.raises(DatasetError, match=rf"{users_file.name}: only 0 users have at least 13 liked items"):
        getattr(preference, name)(out, raw=tmp_path / "raw")
    assert not out.exists()


def test_user_with_too_few_items_to_pair(tmp_path):
    write_movie(tmp_path / "raw", interactions())
    inter = pref_readers.movie(tmp_path / "raw")
    near = preference.Neighbours(preference.popularity(inter))
    with pytest.raises(DatasetError, match=r"here: user 5 has 3 liked items, 8 needed"):
        preference.user_pairs(random.Random(0), "5", inter, preference.popularity(inter), near, "here")


def test_malformed_lines_name_file_and_line(tmp_path):
    path = write_book(tmp_path / "raw", interactions())
    lines = path.read_text().splitlines()
    lines[3] = lines[3].rsplit("\t", 1)[0] + "\tten"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"book_ratings.dat:4: rating 'ten' is not a number"):
        preference.book(tmp_path / "out", raw=tmp_path / "raw")
    plays = write_steam(tmp_path / "raw2", interactions())
    plays.write_text(plays.read_text() + "7\n")
    n = len(plays.read_text().splitlines())
    with pytest.raises(DatasetError, match=rf"game_play.dat:{n}: expected 3 fields"):
        preference.steam(tmp_path / "out", raw=tmp_path / "raw2")


def test_item_without_metadata_is_an_error(tmp_path):
    path = write_anime(tmp_path / "raw", interactions())
    path.write_text(path.read_text() + "1\t999\t9\n")
    n = len(path.read_text().splitlines())
    with pytest.raises(DatasetError, match=rf"anime_ratings.dat:{n}: item '999' has no metadata"):
        preference.anime(tmp_path / "out", raw=tmp_path / "raw")


def test_descriptions_and_movielens_100k(tmp_path):
    data = interactions()
    write_book(tmp_path / "book", data)
    books = pref_readers.book(tmp_path / "book").items
    assert books["3"] == '"Book 3" by Author 3 (1993)'
    assert books["5"] == '"Tom & Jerry" by Author 5 (1995)'  # an entity split at its ';' upstream
    write_anime(tmp_path / "anime", data)
    assert pref_readers.anime(tmp_path / "anime").items["2"] == "Show's 2 (TV, 2 episodes; genres: Action, Drama)"
    write_movie(tmp_path / "movie", data)
    assert pref_readers.movie(tmp_path / "movie").items["4"] == "Film, The 4 (1994) (genres: Comedy, Drama)"
    write_movie_100k(tmp_path / "ml100k", data)
    inter = pref_readers.movie(tmp_path / "ml100k")
    assert inter.items["4"] == "Film 4 (1995) (genres: Action)" and "ml-100k" in inter.version
    ds = preference.movie(tmp_path / "out", raw=tmp_path / "ml100k")
    assert len(ds.train) == 12 and "ml-100k" in ds.card.version


def test_neighbours_prefers_the_closest_popularity():
    near = preference.Neighbours(Counter({"a": 1, "b": 5, "c": 6, "d": 9, "e": 20}))
    assert near.closest(6, lambda i: i != "c", 2) == ["b", "d"]
    assert near.closest(100, lambda i: True, 1) == ["e"]
    assert near.closest(3, lambda i: False, 3) == []
