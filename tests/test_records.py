"""The run-directory contract (critique.base.records): real records of the runner, the
probes and the synthetic generator all validate against its JSON Schemas, records.make
refuses a record that differs from the definition, and docs/run-directory.md holds its tables."""

import json
from importlib import metadata
from pathlib import Path

import jsonschema
import pytest

from critique.analysis import synthetic
from critique.base import distribution, records
from critique.base import rundir
from critique.cli import main

DOC = Path(__file__).resolve().parent.parent / "docs" / "run-directory.md"


def validate(kind, record):
    jsonschema.Draft202012Validator(records.json_schema(kind)).validate(record)


def test_schemas_are_valid_draft_2020_12():
    for kind in records.KINDS:
        jsonschema.Draft202012Validator.check_schema(records.json_schema(kind))


def test_a_real_run_matches_the_contract(home, fake_llm):
    out = home / "run"
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "4", "--k", "2",
                 "--out", str(out), "--quiet"]) == 0
    data = rundir.read_run(out)
    validate("manifest", data["manifest"])
    assert data["calls"] and data["predictions"]
    for call in data["calls"]:
        validate("call", call)
    for prediction in data["predictions"]:
        validate("prediction", prediction)
    entries = rundir.read_jsonl(out / rundir.MEMORY / "episodic.jsonl")
    assert entries
    for entry in entries:
        validate("memory_entry", entry)
    pools = json.loads((out / rundir.MEMORY / "semantic.json").read_text(encoding="utf-8"))
    assert pools
    for pool in pools.values():
        validate("semantic", pool)


def test_probe_runs_match_the_contract(home, fake_llm):
    """A probe's own fields are written under its name (record["experiment"][probe], as it declared them) and
    read by their names (records.flat: every reader), as older logs wrote them at the top level."""
    for argv in (["suggestibility"], ["consistency", "--repeats", "2"]):
        out = home / argv[0]
        assert main(["probe", *argv, "--dataset", "mcr-gen", "--model", "fake/m", "--limit", "2",
                     "--out", str(out), "--quiet"]) == 0
        data = rundir.read_run(out)
        validate("manifest", data["manifest"])
        for call in data["calls"]:
            validate("call", call)
        own = {"argued", "followed"} if argv[0] == "suggestibility" else {"split", "repeat"}
        written = [json.loads(line) for line in (out / rundir.PREDICTIONS).read_text(encoding="utf-8").splitlines()]
        for prediction in written:
            validate("prediction", prediction)
        probed = [p for p in written if p["stage"] == "probe"]  # not its zero-shot answers (probe_predict)
        assert probed and all(set(p["experiment"]) == {argv[0]} and own <= set(p["experiment"][argv[0]])
                              and not own & set(p) for p in probed)
        read = [p for p in data["predictions"] if p["stage"] == "probe"]
        assert len(read) == len(probed) and all(own <= set(p) and "experiment" not in p for p in read)


def test_an_experiment_field_is_declared_by_its_experiment():
    """Writing a field that no experiment declared, or one under an experiment that declared none, fails at
    once; a declared field that is a prediction field already is refused."""
    import critique.experiments.probes  # noqa: F401  (declares the suggestibility probe's fields)

    base = synthetic.prediction("probe", "truth", "t0", True)
    records.make("prediction", **records.split("suggestibility", {**base, "argued": "A"}))
    with pytest.raises(ValueError, match="unknown bogus"):
        records.make("prediction", **records.split("suggestibility", {**base, "bogus": 1}))
    with pytest.raises(ValueError, match="declares no fields"):
        records.make("prediction", **records.split("nobody", {**base, "argued": "A"}))
    with pytest.raises(ValueError, match="already a prediction field"):
        records.declare("clash", (records.Field("answer", "string", "a clash"),))
    flat = records.flat(records.split("suggestibility", {**base, "argued": "A"}))
    assert flat == {**base, "argued": "A"}


def test_synthetic_records_match_the_contract(tmp_path):
    validate("manifest", synthetic.manifest("m", "d"))
    validate("manifest", synthetic.manifest("m", "d", reasoning_model=True))
    validate("call", synthetic.call("test", "zero_shot"))
    validate("prediction", synthetic.prediction("test", "zero_shot", "t0", True))
    runs = synthetic.generate_study(tmp_path, models=1, users=2, n_single=2, per_user=2)
    for path in runs:
        data = rundir.read_run(path)
        validate("manifest", data["manifest"])
        for call in data["calls"]:
            validate("call", call)
            assert call["template"] in synthetic.TEMPLATES
        for prediction in data["predictions"]:
            validate("prediction", prediction)
        config = data["manifest"]["config"]
        assert "reasoning_model" not in config and config["parts"] == "full"
        ablation = data["manifest"]["ablation"] or {}
        assert ablation.get("name") != "parts" or ablation["value"] in ("local", "global", "full")


def test_make_refuses_a_missing_or_unknown_field():
    good = synthetic.prediction("test", "zero_shot", "t0", True)
    assert records.make("prediction", **good) == good
    missing = {k: v for k, v in good.items() if k != "correct"}
    with pytest.raises(ValueError, match="missing correct"):
        records.make("prediction", **missing)
    with pytest.raises(ValueError, match="unknown colour"):
        records.check("prediction", {**good, "colour": "red"})
    with pytest.raises(ValueError, match="unknown record kind"):
        records.check("nothing", {})
    # the schema refuses them too
    with pytest.raises(jsonschema.ValidationError):
        validate("prediction", missing)
    with pytest.raises(jsonschema.ValidationError):
        validate("prediction", {**good, "colour": "red"})


def test_the_config_definition_is_run_config():
    from dataclasses import fields

    from critique.base.config import RunConfig

    defined = {f.name for f in records.CONFIG} - {"reasoning_model"}  # the one field a third party may add
    assert defined == {f.name for f in fields(RunConfig)}


def _experiments() -> list[str]:
    from critique.experiments import conditioning, dose, overturn, priors, probes, verify  # noqa: F401  (they declare)
    from critique.experiments.credit import deletion, prune  # noqa: F401  (they declare)
    from critique.experiments.stream import loop  # noqa: F401  (they declare)

    return [f"experiment {name}" for name in sorted(records.EXPERIMENTS)]


@pytest.mark.parametrize("kind", list(records.KINDS) + _experiments())
def test_the_document_holds_each_generated_table(kind):
    assert records.markdown_table(kind) in DOC.read_text(encoding="utf-8"), \
        f"docs/run-directory.md is out of date: paste records.markdown_table({kind!r})"


def test_the_manifest_names_the_code_the_command_and_the_folders(home, fake_llm):
    import re

    from critique import Learner
    from critique.cli import main

    out = home / "run"
    command = ["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "2", "--strategies", "zero_shot",
               "--out", str(out), "--quiet"]
    assert main(command) == 0
    manifest = rundir.read_manifest(out)
    assert manifest["command"] == ["critique", *command]
    code = manifest["code"]
    # the version of the installed distribution (critique-bench: critique.base.distribution), not None
    assert code["version"] == manifest["versions"][distribution.NAME] == metadata.version(distribution.NAME)
    if (Path(records.__file__).resolve().parents[2] / ".git").exists():  # a checkout: its commit
        assert re.fullmatch(r"[0-9a-f]{40}", code["commit"]) and isinstance(code["dirty"], bool)
    assert manifest["folders"] == {"cache": str(home / "cache"), "data": str(home / "data")}
    learner = home / "learner"
    Learner("fake/model", task="Is it true?", answer_space=["yes", "no"], out=learner, progress=False).fit(
        [("Water is wet.", "yes"), ("Fire is cold.", "no")])
    assert rundir.read_manifest(learner)["command"] is None  # from Python: no command line


def test_the_experiments_reader_names_the_memory_files_the_engine_writes():
    from critique.engine.memory import episodic, semantic
    from critique.experiments import source_run

    assert (source_run.ENTRIES, source_run.SEMANTIC) == (episodic.ENTRIES, semantic.FILE)
