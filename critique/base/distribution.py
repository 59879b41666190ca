"""The name critique is published and installed under. The name `critique` on PyPI is another project's, so the
distribution is `critique-bench`; the import package and the command stay `critique`. pyproject.toml's
[project] name says the same (tests/test_docs_in_repository.py holds them to it)."""

NAME = "critique-bench"


def install(extra: str) -> str:
    """The command that installs critique with one of its extras, e.g. ``pip install 'critique-bench[hf]'``."""
    return f"pip install '{NAME}[{extra}]'"
