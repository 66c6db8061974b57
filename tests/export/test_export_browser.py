"""The export page in Chromium: offline (CSP), no script errors, the issue links reach their details."""

from ..browser import browser_page
from ..conftest import run_cli, torch213


def test_export_page_in_a_browser(tmp_path):
    assert run_cli(torch213("export_draft.log"), "-o", tmp_path / "out", "--no-browser") == 0
    with browser_page() as page:
        page.goto((tmp_path / "out" / "index.html").as_uri())
        assert page.title().startswith("Draft Export Report")
        page.click("text=stacks, locals and provenance")
        assert page.url.endswith("#issue-L32")
        assert page.locator("section.issue:target .expr-node").count() == 2
        page.click("text=the compilation report")
        assert page.url.endswith("compile_report.html")
        assert page.console_errors == [] and page.external_requests == []
