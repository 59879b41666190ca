"""The documentation stands on its own, and names the distribution critique is published under.

(a) No Markdown file of the repository refers to a path outside it: no `../` path that leaves the repository
    (or names nothing in it), and no mention of the study's notes kept outside it (`shared/SPEC.md`,
    `shared/MEMORY.md`): the method is docs/method.md, the memory measurements docs/memory.md. The exceptions
    are explicit: ALLOWED_RAW (the reader's own folder of raw upstream files in `critique datasets` examples)
    and ALLOWED_EXACT.
(b) Every relative Markdown link resolves to a file in the repository, and every "docs/memory.md, section N"
    (or method.md) cited in the docs or the code names a numbered section the page has.
(c) The distribution is `critique-bench` (`critique` on PyPI is another project's): pyproject.toml says so,
    critique.base.distribution says so, and no install line or extra in the docs or the code names bare
    `critique`; the command stays `critique`.
(d) The README is the front door: at most about 250 lines, the quick start's two commands (the block the site's
    home page takes from it), and a link to every page of docs/; the site (mkdocs.yml, `make docs`) lists every
    page of docs/ in its nav, builds from docs/ with the snippet of the README's commands, and the `docs` extra
    pins mkdocs and mkdocs-material exactly. A docs page refers to a file outside docs/ by its repository path in
    code text, never by a link the site could not follow.
"""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from critique.base import distribution

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ("logs", "logs-methods", "next-logs", "runs")  # folders of generated run logs, not documentation
CODE = ("critique", "analysis")  # the sources whose messages and docstrings name install lines and doc sections

# A path that starts by leaving the file's own folder.
UP_PATH = re.compile(r"(?<![\w.~/-])\.\./[^\s`'\"()\[\]<>|,;]*")
# The study's notes outside the repository, by any path.
OUTSIDE_NOTES = re.compile(r"shared/(?:SPEC|MEMORY)\.md")
# The one outside path the docs may show: the reader's own folder of downloaded raw upstream files, as the
# argument of --raw or on its own in a code span (the docs say it stands for the reader's folder), or a dataset's
# folder in it; never a file in it.
ALLOWED_RAW = re.compile(r"\.\./shared/data-raw(?:/[a-z0-9-]+)?/?")
RAW_CONTEXTS = ("--raw ", "`")
# (file, path): bench/DEMO.md measures `make demo` in a fresh clone that the command it shows makes beside the
# checkout (`git clone . ../fresh && cd ../fresh`).
ALLOWED_EXACT = {("bench/DEMO.md", "../fresh")}

LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
# "docs/memory.md, section 3", "[docs/memory.md](docs/memory.md) (section 1)", "docs/method.md sections 1 and 3"
SECTION_CITE = re.compile(r"\b(memory|method)\.md(?:\]\([^)]*\))?[,:]?\s*\(?sections?\s+(\d+)(?:\s+and\s+(\d+))?")
SECTION_HEADING = re.compile(r"^## (\d+)\.", re.M)

PIP_INSTALL = re.compile(r"pip install\s+([^`\n]*)")
BARE = re.compile(r"critique(?:\[[^\]]*\])?")  # the other project's name, with or without extras
EXTRA = re.compile(r"(?<![\w.-])critique\[(?:" + "|".join(
    tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])
    + r")\]")


def markdown_files() -> list[str]:
    """The Markdown files of the repository (as git tracks them), README.md and docs/*.md (a new page counts
    before it is committed), without the generated run logs; paths relative to the root."""
    found = {"README.md", *(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))}
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "*.md"], capture_output=True, text=True)
    if listed.returncode == 0:
        found |= set(listed.stdout.split())
    else:  # not a git checkout: every Markdown file on disk
        found |= {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.md") if ".venv" not in p.parts}
    return sorted(f for f in found if f.split("/")[0] not in GENERATED and (ROOT / f).is_file())


def code_files() -> list[Path]:
    return sorted(p for folder in CODE for p in (ROOT / folder).rglob("*.py"))


def inside(path: Path) -> bool:
    return path.resolve().is_relative_to(ROOT)


def outside_references(rel: str, text: str) -> list[str]:
    """(a) What the Markdown file `rel` (relative to the root) with content `text` refers to outside the
    repository, one line each."""
    problems = [f"{rel}: {m.group()} (outside the repository)" for m in OUTSIDE_NOTES.finditer(text)]
    for m in UP_PATH.finditer(text):
        path = m.group().rstrip(".:")
        before = text[:m.start()]
        if (rel, path) in ALLOWED_EXACT or (ALLOWED_RAW.fullmatch(path) and before.endswith(RAW_CONTEXTS)):
            continue
        within = os.path.normpath(os.path.join(os.path.dirname(rel), path))  # read as text, not on this disk:
        # a clone named as the path climbs back into (`../fresh` from a clone at ../fresh) is still outside
        if within == os.pardir or within.startswith(os.pardir + os.sep) or not (ROOT / within).exists():
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{rel}:{line}: {path} (outside the repository, or nothing there)")
    return problems


def broken_links(rel: str, text: str) -> list[str]:
    """(b) The relative links of the Markdown file `rel` that do not resolve to a file in the repository."""
    problems = []
    for m in LINK.finditer(FENCE.sub("", text)):
        target = m.group(1).split("#", 1)[0]
        if not target or SCHEME.match(target):  # an anchor on the same page, or a URL
            continue
        path = (ROOT / rel).parent / target
        if not (inside(path) and path.exists()):
            problems.append(f"{rel}: ({m.group(1)}) resolves to nothing in the repository")
    return problems


def cited_sections(rel: str, text: str, pages: dict[str, set[str]]) -> list[str]:
    """(b) Each "memory.md / method.md, section N" that names a section the page does not have."""
    problems = []
    for m in SECTION_CITE.finditer(text):
        page, numbers = m.group(1), [n for n in m.groups()[1:] if n]
        problems += [f"{rel}: {m.group()}: docs/{page}.md has no section {n}" for n in numbers
                     if n not in pages[page]]
    return problems


def bare_installs(rel: str, text: str) -> list[str]:
    """(c) Every install line or extra in `text` that names bare `critique` (the other project on PyPI)."""
    problems = [f"{rel}: {m.group()}" for m in EXTRA.finditer(text)]
    for m in PIP_INSTALL.finditer(text):
        for token in m.group(1).split():
            if BARE.fullmatch(token.strip("'\"`()[];,.")) or BARE.fullmatch(token.strip("'\"`();,.")):
                problems.append(f"{rel}: pip install {m.group(1).strip()}")
    return problems


def read(rel: str) -> str:
    return (ROOT / rel).read_text(encoding="utf-8")


def test_no_markdown_file_refers_outside_the_repository():
    files = markdown_files()
    assert {"README.md", "docs/method.md", "docs/memory.md"} <= set(files)
    problems = [p for rel in files for p in outside_references(rel, read(rel))]
    assert not problems, "\n".join(problems)


def test_every_relative_link_and_cited_section_resolves():
    problems = [p for rel in markdown_files() for p in broken_links(rel, read(rel))]
    assert not problems, "\n".join(problems)
    pages = {page: set(SECTION_HEADING.findall(read(f"docs/{page}.md"))) for page in ("memory", "method")}
    assert pages["method"] >= {"1", "2", "3", "4", "5"} and pages["memory"] >= {"1", "2", "3", "4"}
    sources = [(rel, read(rel)) for rel in markdown_files()]
    sources += [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")) for p in code_files()]
    problems = [p for rel, text in sources for p in cited_sections(rel, text, pages)]
    assert not problems, "\n".join(problems)
    readme = read("README.md")
    assert "(docs/method.md)" in readme and "(docs/memory.md)" in readme


def test_the_distribution_is_critique_bench_and_the_command_critique(capsys):
    project = tomllib.loads(read("pyproject.toml"))["project"]
    assert project["name"] == distribution.NAME == "critique-bench"
    assert project["scripts"] == {"critique": "critique.cli:main_exit"}
    assert distribution.install("hf") == "pip install 'critique-bench[hf]'"
    installed = metadata.distribution(distribution.NAME)  # the installed metadata (make setup installs it)
    assert [e.name for e in installed.entry_points if e.group == "console_scripts"] == ["critique"]

    sources = [(rel, read(rel)) for rel in markdown_files()]
    sources += [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")) for p in code_files()]
    problems = [p for rel, text in sources for p in bare_installs(rel, text)]
    assert not problems, "\n".join(problems)
    readme = read("README.md")
    assert "pip install critique-bench" in readme and "pip install 'critique-bench[hf]'" in readme

    from critique.cli import main

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("usage: critique ")


@pytest.mark.parametrize("text, found", [
    ("See `../shared/SPEC.md` for the method.", 2),  # a ../ path that leaves, and the notes by name
    ("the Echo Gap (`shared/MEMORY.md`)", 1),
    ("`../shared/data-raw/SOURCES.md` records where", 1),  # a file in the raw folder: not the reader's folder
    ("critique datasets build all --raw ../shared/data-raw", 0),
    ("critique datasets build pubmed --raw ../shared/data-raw/pubmed", 0),
    ("`../shared/data-raw` stands for your own folder", 0),
    ("cd ../shared/data-raw", 1),  # the raw folder, but not as --raw's argument
    ("git clone . ../fresh", 1),  # allowed in bench/DEMO.md only
])
def test_outside_references_are_found(text, found):
    assert len(outside_references("README.md", text)) == found


@pytest.mark.parametrize("text, found", [
    ("With `pip install critique[hf]`, ...", 2),  # the install line, and the extra
    ("pip install 'critique[dspy]'", 2),
    ("pip install critique", 1),
    ("the extra `critique[mlflow]`", 1),
    ("pip install 'critique-bench[hf]'; pip install critique-bench; pip install pyarrow", 0),
    ('critique["correct_answer"]', 0),
])
def test_bare_installs_are_found(text, found):
    assert len(bare_installs("README.md", text)) == found


# ---- (d) the README as the front door, and the site -----------------------------------------------------------
README_MAX_LINES = 250
QUICK_START = re.compile(r"<!-- --8<-- \[start:commands\] -->\n```\nmake demo .*?\nmake test .*?\n```\n"
                         r"<!-- --8<-- \[end:commands\] -->", re.S)
NAV_PAGE = re.compile(r"^\s*-\s*(?:[^:\n]+:\s*)?([\w./-]+\.md)\s*$", re.M)


def docs_pages() -> list[str]:
    return sorted(p.name for p in (ROOT / "docs").glob("*.md"))


def test_the_readme_is_the_front_door():
    readme = read("README.md")
    assert len(readme.splitlines()) <= README_MAX_LINES
    assert QUICK_START.search(readme), "the quick start's two commands, between the snippet markers"
    makefile = read("Makefile")
    assert re.search(r"^demo: ", makefile, re.M) and re.search(r"^test: ", makefile, re.M)
    assert "make test" in read(".ci/run")
    linked = {m.group(1) for m in LINK.finditer(FENCE.sub("", readme))}
    missing = [page for page in docs_pages() if page != "index.md" and f"docs/{page}" not in linked]
    assert not missing, f"README.md links no {missing}"


def test_the_site_lists_every_page_and_pins_its_tools():
    site = read("mkdocs.yml")
    assert re.search(r"^docs_dir: docs$", site, re.M) and re.search(r"^\s+name: material$", site, re.M)
    assert sorted(NAV_PAGE.findall(site)) == docs_pages()
    assert '--8<-- "README.md:commands"' in read("docs/index.md")
    extras = tomllib.loads(read("pyproject.toml"))["project"]["optional-dependencies"]
    assert sorted(d.split("==")[0] for d in extras["docs"]) == ["mkdocs", "mkdocs-material"]
    assert all(re.fullmatch(r"[\w-]+==\d+(\.\d+)+", d) for d in extras["docs"])
    assert "mkdocs build --strict" in read("Makefile") and "make docs" in read(".ci/run")


def test_no_docs_page_links_outside_docs():
    """mkdocs builds docs/ alone: a link from a page to a file beside docs/ would break on the site (the
    README, at the root, links where it likes)."""
    problems = []
    for page in docs_pages():
        for m in LINK.finditer(FENCE.sub("", read(f"docs/{page}"))):
            target = m.group(1).split("#", 1)[0]
            if target and not SCHEME.match(target) and os.path.normpath(target).startswith(os.pardir):
                problems.append(f"docs/{page}: ({m.group(1)})")
    assert not problems, "\n".join(problems)
