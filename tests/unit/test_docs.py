"""The README and the guides in docs/: short enough to read, every relative link and anchor resolves, and each
generated block sits in its own page only."""

import pathlib
import re

import pytest

from tfperf_lab.publish import readme

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 200

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...


def prose(text: str, *, keep_code: bool = False) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, inline code removed unless ``keep_code``."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line if keep_code else INLINE_CODE.sub("", line)))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup and punctuation dropped, lower case, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.replace("`", "").lower())
    return text.replace(" ", "-")


def anchors(path: pathlib.Path) -> set[str]:
    """Every heading anchor of a markdown file (a repeated heading gets -1, -2, ... as on GitHub)."""
    found, seen = set(), {}
    for _, line in prose(path.read_text(encoding="utf-8"), keep_code=True):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: pathlib.Path) -> list[str]:
    """Relative links and images of ``page`` whose file, or whose #anchor in a markdown file, does not exist."""
    problems = []
    for number, line in prose(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if EXTERNAL.match(target):
                continue
            path_part, _, anchor = target.partition("#")
            resolved = (page.parent / path_part).resolve() if path_part else page
            where = f"{page.name}:{number}: {target}"
            if not resolved.exists():
                problems.append(f"{where}: no such file")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                problems.append(f"{where}: no heading #{anchor} in {resolved.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    assert not broken_links(page)


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## A section: with `code`, punctuation!\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n"
                    "[fine](other.md) [fine too](other.md#a-section-with-code-punctuation) [here](#page) "
                    "[web](https://example.org/x.md) `[in code](gone.md)`\n"
                    "```\n[in a fence](gone.md)\n```\n"
                    "[gone](missing.md) and ![gone image](img/none.png)\n"
                    "[bad anchor](other.md#no-such-heading) [bad here](#nowhere)\n")
    assert broken_links(page) == [
        "page.md:7: missing.md: no such file",
        "page.md:7: img/none.png: no such file",
        "page.md:8: other.md#no-such-heading: no heading #no-such-heading in other.md",
        "page.md:8: #nowhere: no heading #nowhere in page.md",
    ]


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines < README_MAX_LINES, f"README.md has {lines} lines: move detail into docs/"


def test_the_readme_links_every_guide_in_docs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    unlinked = [p.name for p in PAGES[1:] if f"(docs/{p.name}" not in text]
    assert not unlinked, f"README.md does not link {unlinked}"


@pytest.mark.parametrize("name", sorted(readme.PAGES))
def test_each_generated_block_lives_in_its_page_only(name):
    start, end = readme.MARKS[name]
    holders = [p.relative_to(ROOT).as_posix() for p in PAGES if start.split(" ", 2)[1] in p.read_text(encoding="utf-8")]
    assert holders == [readme.PAGES[name]], f"block {name!r} should be in {readme.PAGES[name]} only, found in {holders}"
    text = (ROOT / readme.PAGES[name]).read_text(encoding="utf-8")
    assert text.count(start) == 1 and text.count(end) == 1
