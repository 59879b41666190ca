"""What an experiment is, besides its model, dataset, probe and ablation: the run settings that make a run directory
one run (critique.base.config.IDENTITY), where its answers came from (the endpoint, the embedded model's weights),
its data, and the versions of the memory methods that made them. Two runs that differ in any of these are never
pooled (analysis.reading.read). Read from the manifest alone."""

from __future__ import annotations

import hashlib
import json

from critique.base.config import IDENTITY, manifest_value

CONFIG_SETTINGS = tuple(k for k in IDENTITY if k != "model")  # from the manifest's config
# the rest from elsewhere in it; the templates are not among them: a template name with two hashes is a conflict
# (analysis.reading.read.template_conflicts), and a prompt set that has gained a template is not another experiment
SETTINGS = CONFIG_SETTINGS + ("endpoint", "weights", "data", "method_versions")


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:12]


def method_versions(manifest: dict) -> str | None:
    """The strategies whose method is not at version 1, as "NAME=VERSION,..." (None: every one at 1, as every
    method of a manifest without ``method_versions`` was)."""
    changed = {name: v for name, v in (manifest.get("method_versions") or {}).items() if v != 1}
    return ",".join(f"{name}={v}" for name, v in sorted(changed.items())) or None


def settings_of(manifest: dict) -> dict:
    """Each of SETTINGS of the run whose manifest this is (an older run: the value it had)."""
    config, dataset = manifest["config"], manifest["dataset"]
    settings = {k: manifest_value(config, k) for k in CONFIG_SETTINGS}
    settings["endpoint"] = config.get("endpoint_id") or config.get("api_base")
    local = manifest.get("local_model")
    settings["weights"] = _digest(local) if local else None  # the embedded model's file and bounds
    settings["data"] = str(dataset.get("checksum") or "")[:12]
    settings["method_versions"] = method_versions(manifest)
    return settings
