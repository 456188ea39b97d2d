"""The sanitizer of what comes out of a sandbox (`tfperf_lab.grading.untrusted.inert_html`, on nh3): the XSS payloads
the grading tests use and the classic ones, each either shown escaped or stripped, never runnable; honest markup renders."""

import html.parser
import re

import nbformat
import pytest

from tfperf_lab.grading import untrusted

PAYLOADS = [
    '<script>alert("owned")</script><img src=x onerror="alert(1)">',  # tests/grading/test_sandbox.py's output
    "My answer <script>alert('formgrader')</script> <img src=x onerror=alert(2)>",  # its written answer
    "<script>alert(1)</script>mallory",  # tests/grading/test_classpage.py's student id
    '<b onclick="alert(1)">bold</b>', '<a href="javascript:alert(1)">x</a>', '<a href="JaVaScRiPt:alert(1)">x</a>',
    '<a href="java&#x09;script:alert(1)">x</a>', '<a href=" javascript:alert(1)">x</a>', "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>", "<iframe src=//evil></iframe>", '<div style="background:url(javascript:x)">',
    "<object data=x></object>", "<embed src=x>", "<math><mi xlink:href=javascript:alert(1)>x</mi></math>",
    "<<script>script>alert(1)<</script>/script>", "<scr<script>ipt>alert(1)</script>", "<!--<script>alert(1)//-->",
    '<form action="javascript:alert(1)"><button>go</button></form>', "<details open ontoggle=alert(1)>",
    '<p title="</p><script>alert(1)</script>">x</p>', "<base href=javascript:alert(1)//>", "<meta http-equiv=refresh content=0;url=x>",
]


class _Live(html.parser.HTMLParser):
    """What in a sanitized fragment a browser would run or load."""

    def __init__(self):
        super().__init__()
        self.live = []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "iframe", "object", "embed", "svg", "math", "form", "base", "meta", "img", "style", "details"):
            self.live.append(tag)
        for name, value in attrs:
            if name.startswith("on") or name == "style" or (value and "javascript:" in re.sub(r"\s", "", value.lower())):
                self.live.append(f"{tag} {name}")


def live(fragment: str) -> list[str]:
    parser = _Live()
    parser.feed(fragment)
    return parser.live


@pytest.mark.parametrize("payload", PAYLOADS)
def test_no_payload_survives_runnable(payload):
    shown = untrusted.inert_html(payload)
    assert live(shown) == [], (payload, shown)


def test_an_attack_is_shown_escaped_so_the_reader_sees_it():
    shown = untrusted.inert_html(PAYLOADS[1])
    assert "&lt;script&gt;alert('formgrader')&lt;/script&gt;" in shown and shown.startswith("My answer ")


def test_honest_markup_renders_and_attributes_off_the_list_are_dropped():
    table = '<table border="1" class="dataframe"><thead><tr><th colspan="2">loss</th></tr></thead><tr><td>0.25</td></tr></table>'
    assert untrusted.inert_html(table) == '<table><thead><tr><th colspan="2">loss</th></tr></thead><tbody><tr><td>0.25</td></tr></tbody></table>'
    assert untrusted.inert_html("<b>ok</b>, <code>x</code> and <a href=\"https://tensorflow.org\">docs</a>") == \
        "<b>ok</b>, <code>x</code> and <a href=\"https://tensorflow.org\">docs</a>"
    assert untrusted.inert_html("## A heading\n\n**bold**, `code`, a [link](https://x.org)") == "## A heading\n\n**bold**, `code`, a [link](https://x.org)"


def test_outputs_that_could_run_code_are_dropped_and_html_outputs_made_inert():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": PAYLOADS[0], "application/javascript": "alert(1)",
                                                                  "image/svg+xml": "<svg onload=alert(1)>", "text/plain": "x"})]
    nb.cells = [cell, nbformat.v4.new_markdown_cell(PAYLOADS[1])]
    clean, _ = untrusted.SanitizeOutputs().preprocess(nb, {})
    data = clean.cells[0].outputs[0]["data"]
    assert set(data) == {"text/html", "text/plain"} and live(data["text/html"]) == [] and live(clean.cells[1].source) == []


def test_the_sanitizer_is_nh3_not_bleach():
    source = open(untrusted.__file__, encoding="utf-8").read()
    assert "import nh3" in source and "import bleach" not in source and "from bleach" not in source
    assert "SanitizeHTML" not in source.replace("nbconvert's own SanitizeHTML rests on bleach", "")

