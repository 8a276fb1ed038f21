"""`/sites/...` over real HTTP: the traversal corpus never escapes; redirects, index, headers (docs/http.md#sites)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SECRET = b"TOP-SECRET-MARKER-7f3a"

# Every one of these must be refused (403; 400 when the HTTP parser itself rejects the bytes).
TRAVERSAL_CORPUS = [
    "/sites/../secret.txt",
    "/sites/pub/../../secret.txt",
    "/sites/pub/../index.html",
    "/sites/./pub/index.html",
    "/sites/%2e%2e/secret.txt",
    "/sites/%2E%2E/secret.txt",
    "/sites/.%2e/secret.txt",
    "/sites/%2e./secret.txt",
    "/sites/pub/%2e%2e/%2e%2e/secret.txt",
    "/sites/%252e%252e/secret.txt",
    "/sites/%25252e%25252e/secret.txt",
    "/sites/pub/%252e%252e%252f%252e%252e%252fsecret.txt",
    "/sites/..%2fsecret.txt",
    "/sites/..%2Fsecret.txt",
    "/sites/%2e%2e%2fsecret.txt",
    "/sites/pub%2f..%2f..%2fsecret.txt",
    "/sites/..\\secret.txt",
    "/sites/..%5csecret.txt",
    "/sites/..%5Csecret.txt",
    "/sites/%5c..%5csecret.txt",
    "/sites/pub\\..\\..\\secret.txt",
    "/sites/C:\\secret.txt",
    "/sites//etc/passwd",
    "/sites/%2fetc%2fpasswd",
    "/sites/%2Fetc/passwd",
    "/sites/pub//../../secret.txt",
    "/sites/pub/index.html%00.txt",
    "/sites/pub%00/index.html",
    "/sites/%00",
    "/sites/.hidden",
    "/sites/pub/.env",
    "/sites/%c0%ae%c0%ae/secret.txt",
    "/sites/..%c0%afsecret.txt",
    "/sites/%u002e%u002e/secret.txt",
    "/sites/...",
    "/sites/..;/secret.txt",
    "/sites/pub/index.html/..",
    "/sites/escape/secret.txt",
    "/sites/escape-file",
    "/sites/escape-index/",
]


@pytest.fixture
def site(plughost_home: Path, live_app) -> object:
    root = plughost_home / "sites"
    (root / "pub" / "css").mkdir(parents=True)
    (root / "pub" / "index.html").write_text("<h1>published</h1>")
    (root / "pub" / "css" / "site.css").write_text("body{}")
    (root / "pub" / "brochure.html").write_text("<p>brochure</p>")
    (root / "noindex").mkdir()
    (root / ".hidden").write_text("hidden")
    (root / "pub" / ".env").write_text("X=1")
    outside = plughost_home / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    (outside / "index.html").write_bytes(SECRET)
    (plughost_home / "secret.txt").write_bytes(SECRET)
    os.symlink(outside, root / "escape")
    os.symlink(outside / "secret.txt", root / "escape-file")
    (root / "escape-index").mkdir()
    os.symlink(outside / "index.html", root / "escape-index" / "index.html")
    os.symlink(root / "pub" / "brochure.html", root / "inner-link.html")
    os.symlink(root / "pub", root / "pub-alias")
    return live_app()


@pytest.mark.parametrize("target", TRAVERSAL_CORPUS)
def test_traversal_attempt_is_refused(site, target: str) -> None:
    response = site.get(target)
    assert response.status in (400, 403), (target, response.status, response.body[:200])
    assert SECRET not in response.body
    if response.status == 403:
        assert response.headers["x-content-type-options"] == "nosniff"
        assert set(response.json()) == {"error", "detail"}


def test_corpus_lines_are_logged(site, plughost_home: Path) -> None:
    site.get("/sites/%2e%2e/secret.txt")
    site.get("/sites/escape/secret.txt")
    log = (plughost_home / "logs" / "server.log").read_text()
    assert "[sites] path-traversal-rejected reason=unsafe-segment" in log
    assert "[sites] symlink-escape-rejected path=/sites/escape/secret.txt" in log


def test_symlink_inside_root_is_served(site) -> None:
    assert site.get("/sites/inner-link.html").body == b"<p>brochure</p>"
    assert site.get("/sites/pub-alias/").body == b"<h1>published</h1>"


def test_directory_redirects_to_trailing_slash_keeping_query(site, plughost_home: Path) -> None:
    response = site.get("/sites/pub?x=1&y=two")
    assert response.status == 301
    assert response.headers["location"] == "/sites/pub/?x=1&y=two"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert site.get("/sites/pub").headers["location"] == "/sites/pub/"
    assert site.get("/sites").headers["location"] == "/sites/"
    assert "[sites] redirect-trailing-slash path=/sites/pub" in (plughost_home / "logs" / "server.log").read_text()


def test_index_html_with_html_headers(site) -> None:
    response = site.get("/sites/pub/?x=1")
    assert response.status == 200
    assert response.body == b"<h1>published</h1>"
    assert response.headers["content-security-policy"] == (
        "default-src 'self' https: data:; style-src 'self' https:; script-src 'none'; "
        "object-src 'none'; base-uri 'self'; frame-ancestors 'self'")
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-type"].startswith("text/html")


def test_asset_cached_one_hour(site) -> None:
    response = site.get("/sites/pub/css/site.css")
    assert response.status == 200
    assert response.headers["cache-control"] == "public, max-age=3600"
    assert response.headers["content-type"].startswith("text/css")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" not in response.headers


def test_not_found_cases(site) -> None:
    for target in ("/sites/noindex/", "/sites/pub/missing.html", "/sites/missing/", "/sites/pub/index.html/",
                   "/sites/"):
        response = site.get(target)
        assert response.status == 404, target
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.json()["error"] == "not-found"


def test_no_index_invented_for_missing_paths(site) -> None:
    assert site.get("/sites/pub/brochure").status == 404
    assert site.get("/sites/pub/brochure.html").status == 200


def test_head_and_methods(site) -> None:
    head = site.get("/sites/pub/brochure.html", method="HEAD")
    assert head.status == 200 and head.body == b""
    post = site.get("/sites/pub/brochure.html", method="POST")
    assert post.status == 405
    assert set(post.json()) == {"error", "detail"}


def test_split_raw_path_never_yields_an_escaping_path(tmp_path: Path) -> None:
    """Property: whatever the raw bytes, accepted segments stay inside the root they are joined to."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from plughost.plugins.admin.sites import Rejected, split_raw_path

    root = os.path.realpath(tmp_path)
    alphabet = st.sampled_from(["/", ".", "..", "%", "%2e", "%2f", "%5c", "%25", "\\", "a", "b", "%00", "~", " ",
                                "%c0%ae", "2e", "5c", "2f", "-", "_", "index.html", ":", ";"])

    @settings(max_examples=150, deadline=None)
    @given(st.lists(alphabet, max_size=12))
    def check(parts: list[str]) -> None:
        raw = ("/sites/" + "".join(parts)).encode()
        try:
            segments, _ = split_raw_path(raw)
        except Rejected:
            return
        for seg in segments:
            assert seg not in (".", "..") and "/" not in seg and "\\" not in seg and "\x00" not in seg
        joined = os.path.normpath(os.path.join(root, *segments))
        assert joined == root or joined.startswith(root + os.sep)

    check()


def _style_sources(csp: str) -> list[str]:
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";") if d.strip())
    return directives["style-src"].split()


def test_demo_page_style_is_allowed_by_its_policy(plughost_home: Path, live_app) -> None:
    """The demo's page over real HTTP: the header names the hash of exactly the page's inline style."""
    import base64
    import hashlib
    import re

    from plughost.cli.commands.demo import publish_site

    publish_site(plughost_home)
    response = live_app().get("/sites/")
    assert response.status == 200
    styles = re.findall(rb"<style>(.*?)</style>", response.body, re.DOTALL)
    assert len(styles) == 1 and b"background" in styles[0]
    digest = base64.b64encode(hashlib.sha256(styles[0]).digest()).decode()
    csp = response.headers["content-security-policy"]
    assert _style_sources(csp) == ["'self'", "https:", f"'sha256-{digest}'"]
    assert "unsafe-inline" not in csp and "script-src 'none'" in csp


def test_style_hashes_follow_the_html_parser(tmp_path: Path) -> None:
    """CR LF is hashed as LF (what the browser hashes); attributes and case do not hide an element; each once."""
    import base64
    import hashlib

    from plughost.plugins.admin.sites import html_csp, style_hashes

    def source(text: bytes) -> str:
        return f"'sha256-{base64.b64encode(hashlib.sha256(text).digest()).decode()}'"

    page = b"<STYLE media='print'>a{}\r\nb{}</style ><style>c{}</style><style>c{}</style>"
    assert style_hashes(page) == [source(b"a{}\nb{}"), source(b"c{}")]
    assert style_hashes(b"<p style='x'>no element</p>") == []
    page_file = tmp_path / "p.html"
    page_file.write_bytes(b"<style>c{}</style>")
    assert f"style-src 'self' https: {source(b'c{}')};" in html_csp(page_file)
    assert "style-src 'self' https:;" in html_csp(tmp_path / "missing.html")


@pytest.mark.e2e
def test_demo_page_is_styled_in_chromium(plughost_home: Path, live_app, tmp_path: Path) -> None:
    """A real browser applies the page's inline style under the header's policy (no violation)."""
    from browser import Browser

    from plughost.cli.commands.demo import publish_site
    from tests.conftest import which_or_skip

    chromium = which_or_skip("chromium")
    publish_site(plughost_home)
    server = live_app()
    browser = Browser(chromium, tmp_path / "profile")
    try:
        browser.open(f"{server.base}/sites/")
        background = browser.wait("document.readyState === 'complete' && getComputedStyle(document.body).backgroundColor")
    finally:
        browser.close()
    assert background == "rgb(251, 247, 241)"
