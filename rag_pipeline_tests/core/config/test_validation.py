"""Tests for ``rag_pipeline.core.config.validation``: each check accepts the edges of its range and
refuses the rest with its exact message."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.config.validation import (
    InvalidArgumentError,
    check_base_url,
    check_chunker,
    check_declared,
    check_endpoint_url,
    check_model_folder,
    check_model_key,
    check_threshold,
)


@pytest.mark.parametrize("value", [0.0, 0.625, 2.0])
def test_threshold_accepts_the_cosine_distance_range(value):
    assert check_threshold(value) == value


@pytest.mark.parametrize(("value", "shown"), [
    (float("nan"), "nan"), (float("inf"), "inf"), (float("-inf"), "-inf"), (-1.0, "-1.0"),
    (-1e-9, "-1e-09"), (2.0000001, "2.0000001"), (5.0, "5.0")])
def test_threshold_refuses_non_finite_and_out_of_range(value, shown):
    with pytest.raises(InvalidArgumentError) as caught:
        check_threshold(value, "--threshold")
    assert str(caught.value) == f"--threshold must be a finite cosine distance in [0, 2], got {shown}"


@pytest.mark.parametrize("url", ["http://docs.example", "https://docs.example/base/",
                                 "file:///srv/docs", "file:/srv/docs"])
def test_base_url_accepts_http_and_file(url):
    assert check_base_url(url) == url


@pytest.mark.parametrize(("url", "message"), [
    ("javascript:alert(1)", "base_url must be an http(s) or file URL, got 'javascript:alert(1)'"),
    ("ftp://docs.example", "base_url must be an http(s) or file URL, got 'ftp://docs.example'"),
    ("docs.example", "base_url must be an http(s) or file URL, got 'docs.example'"),
    ("http://", "base_url must name a host, got 'http://'"),
    ("https://docs.example/?q=1", "base_url must not carry a query or fragment, got 'https://docs.example/?q=1'"),
    ("https://docs.example/#top", "base_url must not carry a query or fragment, got 'https://docs.example/#top'"),
    ("http://a b", "base_url must be a URL without white space or control characters, got 'http://a b'"),
    ("http://a\x1b[2J", "base_url must be a URL without white space or control characters, "
                        "got 'http://a\\x1b[2J'"),
    ("", "base_url must be a URL without white space or control characters, got ''"),
    ("http://[::1", "base_url is not a valid URL (Invalid IPv6 URL), got 'http://[::1'"),
])
def test_base_url_refusals(url, message):
    with pytest.raises(InvalidArgumentError) as caught:
        check_base_url(url)
    assert str(caught.value) == message


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "https://api.example/v1", "http://[::1]:80"])
def test_endpoint_url_accepts_http_with_a_host(url):
    assert check_endpoint_url(url) == url


@pytest.mark.parametrize(("url", "message"), [
    ("file:///tmp/x", "generate_url must be an http(s) URL, got 'file:///tmp/x'"),
    ("127.0.0.1:8080", "generate_url must be an http(s) URL, got '127.0.0.1:8080'"),
    ("http:///v1", "generate_url must name a host, got 'http:///v1'"),
    ("http://h:99999/v1", "generate_url has an invalid port (Port out of range 0-65535), "
                          "got 'http://h:99999/v1'"),
    ("http://h:port/v1", "generate_url has an invalid port (Port could not be cast to integer "
                         "value as 'port'), got 'http://h:port/v1'"),
])
def test_endpoint_url_refusals(url, message):
    with pytest.raises(InvalidArgumentError) as caught:
        check_endpoint_url(url)
    assert str(caught.value) == message


def test_names_that_become_paths_must_be_declared():
    assert check_chunker("header") is ChunkingStrategy.HEADER
    assert check_declared("b", ["a", "b"], "model") == "b"
    for bad in ("../x", "header/../../etc", "HEADER", ""):
        with pytest.raises(InvalidArgumentError) as caught:
            check_chunker(bad)
        assert str(caught.value) == (f"unknown chunker {bad!r}; declared: blind, blind_overlap, "
                                     "boundaries, boundaries_overlap, header, header_overlap")


def test_model_folder_needs_config_and_weights(tmp_path: Path):
    folder = tmp_path / "ce"
    with pytest.raises(InvalidArgumentError) as caught:
        check_model_folder(folder, "--rerank")
    assert str(caught.value) == f"--rerank {str(folder)!r} is not a folder"
    folder.mkdir()
    with pytest.raises(InvalidArgumentError) as caught:
        check_model_folder(folder, "--rerank")
    assert str(caught.value) == f"--rerank {str(folder)!r} holds no config.json: not a model folder"
    (folder / "config.json").write_text("{}")
    with pytest.raises(InvalidArgumentError) as caught:
        check_model_folder(folder, "--rerank")
    assert str(caught.value) == (f"--rerank {str(folder)!r} holds no weights "
                                 "(model.safetensors or pytorch_model.bin)")
    (folder / "model.safetensors").write_bytes(b"")
    assert check_model_folder(folder) == folder


@pytest.mark.parametrize("key", ["all-MiniLM-L6-v2@53aa5117", "a.b_c-d@0123abcd", "..@00000000"])
def test_model_key_accepts_name_at_eight_hex_digits(key):
    assert check_model_key(key) == key


@pytest.mark.parametrize("key", [
    # Planted: the key that deleted files outside the data folder (issue 20).
    "all-MiniLM-L6-v2@53aa5117/../../../../victim",
    "m@53AA5117", "m@53aa511", "m@53aa51170", "@53aa5117", "m 1@53aa5117", "m@53aa5117\n", ""])
def test_model_key_refuses_anything_else(key):
    with pytest.raises(InvalidArgumentError, match=r"^model key must be <name>@<8 hex digits> "
                       r"\(name of letters, digits, '\.', '_', '-'\), got "):
        check_model_key(key)
