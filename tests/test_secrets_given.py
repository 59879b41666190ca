"""Secrets the project is given other than in the environment go through the one redactor too: a key written in
a study file's router parameters (and echoed back by a provider's 401), and credentials in an --api-base URL."""

import json

from critique.base import rundir
from critique.cli import main

KEY = "sk-study-file-canary-0123456789"


def files_under(root):
    return [p for p in root.rglob("*") if p.is_file()]


def test_a_key_in_a_study_files_router_parameters_is_redacted_when_a_401_echoes_it(home, monkeypatch, capsys):
    from faults.server import FaultServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(fault_rate=1.0, faults=("401",)) as server:
        study = home / "study.toml"
        study.write_text(f"""
datasets = ["mcr-gen"]
limit = 2
k = 1
retries = 0
strategies = ["zero_shot"]
out = "out"

[[models]]
name = "openai/served"

[[router.model_list]]
model_name = "openai/served"
litellm_params = {{ model = "openai/served", api_base = "{server.url}", api_key = "{KEY}" }}
""")
        assert main(["study", str(study)]) == 1
        assert server.auth == {f"Bearer {KEY}"}  # the key was really sent, and echoed back in the 401
    out = capsys.readouterr()
    calls = [c for p in (home / "out").iterdir() for c in rundir.read_jsonl(p / rundir.CALLS)]
    assert calls and all("Incorrect API key provided: Bearer [REDACTED]" in c["error"] for c in calls)
    leaks = [p for p in files_under(home) if p != study and KEY.encode() in p.read_bytes()]
    assert not leaks, leaks
    assert KEY not in out.out + out.err


def test_credentials_in_an_api_base_url_reach_no_file(home, fake_llm, capsys):
    url = "http://alice:hunter2-url-password@127.0.0.1:9/v1"  # the fake provider answers in process
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/served", "--api-base", url, "--limit", "2",
                 "--k", "1", "--strategies", "zero_shot", "--out", str(home / "run"), "--quiet"]) == 0
    manifest = json.loads((home / "run" / rundir.MANIFEST).read_text())
    assert manifest["config"]["api_base"].startswith("http://") and "[REDACTED]" in manifest["config"]["api_base"]
    leaks = [p for p in files_under(home) if b"hunter2-url-password" in p.read_bytes()]
    assert not leaks, leaks
    assert "hunter2-url-password" not in "".join(capsys.readouterr())


def test_a_key_in_the_query_of_an_api_base_reaches_no_file_and_no_table(home, fake_llm, capsys):
    url = "http://127.0.0.1:9/v1?api-version=2024-06-01&api-key=querycanary%2Bsecret-0123456789"
    assert main(["run", "--dataset", "mcr-gen", "--model", "fake/served", "--api-base", url, "--limit", "2",
                 "--k", "1", "--strategies", "zero_shot", "--out", str(home / "run"), "--quiet"]) == 0
    assert main(["tables", str(home / "run"), "-o", str(home / "tables.md")]) == 0
    manifest = json.loads((home / "run" / rundir.MANIFEST).read_text())
    assert "api-version=2024-06-01" in manifest["config"]["api_base"]  # a short value not named like a key stays
    leaks = [p for p in files_under(home) if b"querycanary" in p.read_bytes()]
    assert not leaks, leaks
    assert "querycanary" not in "".join(capsys.readouterr())


def test_a_credential_in_a_variable_not_named_like_a_key_is_redacted(monkeypatch):
    monkeypatch.setenv("MYSERVICE_CREDENTIAL", "credential-canary-0123")
    monkeypatch.setenv("SERVICE_AUTH", "auth-canary-456789")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ada Lovelace")
    echoed = "the provider says: credential-canary-0123 / auth-canary-456789 / Ada Lovelace"
    assert rundir.redact(echoed) == "the provider says: [REDACTED] / [REDACTED] / Ada Lovelace"


def test_every_value_a_router_deployment_is_configured_with_is_redacted(monkeypatch):
    monkeypatch.setattr(rundir, "_GIVEN", set())
    service_account = json.dumps({"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----abc",
                                  "client_email": "robot@project.iam.example.com"})
    rundir.add_param_secrets({"model": "vertex_ai/gemini-pro", "vertex_project": "my-project",
                              "vertex_credentials": service_account,
                              "extra_headers": {"X-Service-Ticket": "ticket-canary-0123"}, "max_retries": 2})
    text = rundir.redact(f"{service_account} robot@project.iam.example.com ticket-canary-0123 vertex_ai/gemini-pro")
    assert "PRIVATE KEY" not in text and "robot@" not in text and "ticket-canary" not in text
    assert text.endswith("vertex_ai/gemini-pro")  # the model is not a credential
