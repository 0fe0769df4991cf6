"""The headers every response carries: the content policy names the service's scripts alone."""

from __future__ import annotations

from rag_pipeline.service.private_headers import CONTENT_SECURITY_POLICY, script_hashes


def test_a_script_is_named_by_the_sha256_of_its_text_as_a_browser_reads_it():
    page = '<p>x</p><script>alert(1)</script><script src="/a.js"></script><script>\n  é;\n</script>'
    assert script_hashes(page) == ("'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='",
                                   "'sha256-qNB+YPZVNu6XLTih1292Ta1VQcRdt+qYBPKHq9BdO18='")


def test_the_policy_loads_nothing_from_elsewhere_and_runs_two_scripts():
    directives = dict(directive.split(" ", 1) for directive in CONTENT_SECURITY_POLICY.split("; "))
    scripts = directives.pop("script-src").split()
    assert directives == {"default-src": "'none'", "style-src": "'unsafe-inline'",
                          "img-src": "'self' data:", "connect-src": "'self'",
                          "form-action": "'self'", "frame-ancestors": "'none'",
                          "base-uri": "'none'"}
    assert [source[:8] for source in scripts] == ["'sha256-", "'sha256-"]
