"""`critique datasets list|build` and `--dataset` resolution, without upstream files."""

import json

from critique.cli import main
from critique.datasets.registry import REGISTRY, resolve
from critique.datasets.splits import DatasetError

from test_datasets_pubmed import write_raw as write_pubmed


def test_build_all_builds_what_it_can_and_names_what_failed(tmp_path, capsys):
    out = tmp_path / "data"
    assert main(["datasets", "build", "all", "--raw", str(tmp_path / "raw"), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert "built pref-gen: 250 train / 250 test (10 users)" in captured.out
    assert "built mcr-gen: 250 train / 250 test" in captured.out
    for name in ("mcr", "pubmed", "nfcorpus", "steam", "book", "anime", "movie"):
        assert f"{name}: {tmp_path / 'raw' / name}: raw folder for '{name}' does not exist" in captured.err
        assert not (out / name).exists()
    assert main(["datasets", "list", "--out", str(out)]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert {name for name in rows if not name.startswith("preset:")} == set(REGISTRY)  # and the presets' rows
    assert "yes    10 users, 250/250" in rows["pref-gen"] and "A/B" in rows["pref-gen"]
    assert rows["pubmed"].split()[-2:] == ["no", "-"] and "yes/no" in rows["pubmed"]


def test_single_build_error_names_the_file_and_writes_nothing(tmp_path, capsys):
    raw, data, _ = write_pubmed(tmp_path / "raw" / "pubmed")
    data["1002"]["final_decision"] = 3
    (raw / "ori_pqal.json").write_text(json.dumps(data, indent=1))
    out = tmp_path / "data"
    assert main(["datasets", "build", "pubmed", "--raw", str(tmp_path / "raw"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{raw / 'ori_pqal.json'}:" in err and "PMID 1002: final_decision 3" in err
    assert not out.exists() or not any(out.iterdir())


def test_unknown_name_and_missing_raw(tmp_path, capsys, monkeypatch):
    assert main(["datasets", "build", "nosuch", "--out", str(tmp_path)]) == 2
    assert "unknown dataset 'nosuch'" in capsys.readouterr().err
    monkeypatch.setenv("CRITIQUE_RAW_DIR", str(tmp_path / "nowhere"))
    assert main(["datasets", "build", "movie", "--out", str(tmp_path)]) == 2
    assert f"{tmp_path / 'nowhere' / 'movie'}: raw folder for 'movie' does not exist" in capsys.readouterr().err


def test_resolve_by_name_and_by_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("CRITIQUE_DATA_DIR", str(tmp_path / "data"))
    generated = resolve("pref-gen")  # generated on first use
    assert generated.path == tmp_path / "data" / "pref-gen" and generated.card.kind == "preference"
    assert resolve(str(generated.path)).checksum == generated.checksum
    try:
        resolve("pubmed")
    except DatasetError as exc:
        assert "not built yet" in str(exc) and "datasets download pubmed" in str(exc)
    else:
        raise AssertionError("pubmed is not built here")
