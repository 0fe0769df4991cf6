"""Tests for ``rag_pipeline.core.ingest.sources.git`` with real repositories made by the ``git``
command line: a commit's tracked files only, blob ids as fingerprints, renames kept, refs
resolved once, submodules, symlinks and LFS pointers said, bad refs and keys one line each."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.ingest.reconcile import Change
from rag_pipeline.core.ingest.sources import GitSource, SourceError, open_source, parse_git_uri
from rag_pipeline.core.ingest.sources.git import without_credentials
from rag_pipeline_tests.core.ingest.sources.conftest import Repo, free_port

LFS_TEXT = ("version https://git-lfs.github.com/spec/v1\n"
            "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
            "size 12345\n")


def _blob(repo: Repo, rev_path: str) -> str:
    return repo.git("rev-parse", rev_path)


def test_the_uri_names_the_repository_and_the_ref():
    assert parse_git_uri("git+file:///srv/docs") == ("/srv/docs", None)
    assert parse_git_uri("git+file:///srv/docs@release/2.0") == ("/srv/docs", "release/2.0")
    assert parse_git_uri("git+https://git@example.org/team/docs.git@v1") == (
        "https://git@example.org/team/docs.git", "v1")
    with pytest.raises(SourceError, match="git\\+file, git\\+https, git\\+ssh or git\\+http URLs only"):
        parse_git_uri("git+ftp://example.org/docs")
    with pytest.raises(SourceError, match="an empty ref after '@'"):
        parse_git_uri("git+file:///srv/docs@")
    # Percent-encoded like the path: the ref fix#1 (found by a user's trial: "@fix#1" read
    # the branch fix, the URL's path ending at '#').
    assert parse_git_uri("git+file:///srv/docs@fix%231") == ("/srv/docs", "fix#1")
    for uri in ("git+file:///srv/docs@fix#1", "git+file:///srv/docs?x@v1",
                "git+https://example.org/docs.git@fix#1"):
        with pytest.raises(SourceError) as cut:
            parse_git_uri(uri)
        assert str(cut.value) == (f"{uri}: a '#' or '?' ends a URL's path, so the repository or "
                                  "the ref would be cut there: write them as %23 and %3F")
    # Two slashes: "srv" would be a host and the repository /docs (found by a user's trial).
    with pytest.raises(SourceError) as host:
        parse_git_uri("git+file://srv/docs")
    assert str(host.value) == ("git+file://srv/docs: a file URL names a folder of this machine, "
                               "written with three slashes (git+file:///path/to/repo), not a "
                               "host ('srv')")
    assert parse_git_uri("git+file://localhost/srv/docs") == ("/srv/docs", None)


def test_only_the_commits_tracked_files_are_listed_with_their_blob_ids(repo: Repo):
    repo.write("guide.md", "# Guide\n\nTracked.\n")
    repo.write("sub/notes.txt", "Notes.\n")
    repo.write(".hidden/secret.md", "# Hidden\n")
    commit = repo.commit()
    # Planted: an untracked file and an uncommitted edit of a tracked one in the work tree ->
    # neither is ever listed or read.
    repo.write("untracked.md", "# Untracked\n")
    repo.write("guide.md", "# Guide\n\nEdited, not committed.\n")
    source = GitSource(repo.uri)
    entries = source.entries()
    assert [(e.document_id, e.fingerprint, e.size) for e in entries] == [
        ("guide.md", f"blob:{_blob(repo, 'HEAD:guide.md')}", 18),
        ("sub/notes.txt", f"blob:{_blob(repo, 'HEAD:sub/notes.txt')}", 7)]
    assert source.hidden == (".hidden",)
    assert source.revision() == commit
    assert source.read(entries[0], 1000) == b"# Guide\n\nTracked.\n"
    assert source.location("guide.md") == f"{repo.uri}@{commit}:guide.md"
    source.close()


def test_a_ref_picks_a_branch_a_tag_or_a_commit(repo: Repo):
    repo.write("a.md", "# One\n")
    first = repo.commit()
    repo.git("tag", "v1")
    repo.write("a.md", "# Two\n")
    second = repo.commit()
    repo.git("branch", "old", first)
    texts = {}
    for ref in ("v1", "old", first[:12], None):
        result = extract_corpus(open_source(repo.uri + (f"@{ref}" if ref else "")))
        texts[ref] = ([r.canonical_text for r in result.records], result.report.revision)
    assert texts == {"v1": (["# One\n"], first), "old": (["# One\n"], first),
                     first[:12]: (["# One\n"], first), None: (["# Two\n"], second)}


def test_a_missing_ref_a_missing_repository_and_an_empty_one_are_one_line_each(repo: Repo, tmp_path):
    repo.write("a.md", "# One\n")
    repo.commit()
    with pytest.raises(SourceError) as missing_ref:
        GitSource(repo.uri + "@no-such-branch").entries()
    assert str(missing_ref.value) == (f"{repo.uri}@no-such-branch: the ref 'no-such-branch' does "
                                      "not exist (a branch, tag or commit of the repository)")
    with pytest.raises(SourceError) as missing_repo:
        GitSource(f"git+file://{tmp_path}/nowhere").entries()
    assert str(missing_repo.value) == (f"git+file://{tmp_path}/nowhere: no repository at "
                                       f"{tmp_path}/nowhere")
    (tmp_path / "plain").mkdir()
    with pytest.raises(SourceError, match="is not a git repository"):
        GitSource(f"git+file://{tmp_path}/plain").entries()
    empty = Repo(tmp_path / "empty")
    with pytest.raises(SourceError) as no_commit:
        GitSource(empty.uri).entries()
    assert str(no_commit.value) == (f"{empty.uri}: the default branch 'main' has no commit (the "
                                    "repository has none)")


def test_a_default_branch_without_a_commit_names_the_branches_that_have_one(repo: Repo, tmp_path):
    """Found by a user's trial: a bare repository made with ``-b master`` to which only ``main``
    was pushed said "the default branch has no commit", naming neither."""
    repo.write("a.md", "# One\n")
    repo.commit()
    bare = tmp_path / "pushed.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=master", str(bare)],
                   check=True)
    repo.git("push", "--quiet", str(bare), "main")
    with pytest.raises(SourceError) as no_commit:
        GitSource(f"git+file://{bare}").entries()
    assert str(no_commit.value) == (
        f"git+file://{bare}: the default branch 'master' has no commit; branches with commits: "
        f"main (name one after '@': git+file://{bare}@main)")
    assert [e.document_id for e in GitSource(f"git+file://{bare}@main").entries()] == ["a.md"]


def test_a_folder_inside_a_repository_is_refused_not_read_as_the_whole_repository(repo: Repo):
    """Found by a user's trial: ``git+file:///repo/public`` (a tracked folder) and an untracked
    folder inside the work tree each indexed every file of the repository, ``hr/`` too."""
    repo.write("public/a.md", "# Public\n")
    repo.write("hr/salaries.md", "# Salaries\n")
    repo.commit()
    (repo.path / "scratch").mkdir()
    for folder in ("public", "scratch", "hr/../public"):
        with pytest.raises(SourceError) as inside:
            GitSource(f"{repo.uri}/{folder}").entries()
        assert str(inside.value) == (
            f"{repo.uri}/{folder}: {repo.path}/{folder} is a folder inside the repository "
            f"{repo.path}, not a repository: a corpus is a commit's whole tree, so name the "
            f"repository (git+file://{repo.path}); [access] rules decide who reads which of its "
            "folders")
    # The repository itself, its .git folder and a bare clone are repositories.
    assert [e.document_id for e in GitSource(repo.uri).entries()] == ["hr/salaries.md",
                                                                     "public/a.md"]
    assert len(GitSource(f"{repo.uri}/.git").entries()) == 2
    bare = repo.path.parent / "bare.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(repo.path), str(bare)], check=True)
    assert len(GitSource(f"git+file://{bare}").entries()) == 2
    with pytest.raises(SourceError, match="is a folder inside the repository"):
        GitSource(f"git+file://{bare}/objects").entries()


def test_submodules_symlinks_and_lfs_pointers_are_said_never_indexed(repo: Repo, tmp_path):
    other = Repo(tmp_path / "other")
    other.write("inner.md", "# Inner\n")
    other.commit()
    repo.write("guide.md", "# Guide\n\nBody.\n")
    # Planted: a Git LFS pointer where a PDF's bytes should be -> failed, pointer text unindexed.
    repo.write("manual.md", LFS_TEXT)
    # Planted: a symlink in the tree -> skipped, not followed.
    (repo.path / "link.md").symlink_to("guide.md")
    subprocess.run(["git", "-C", str(repo.path), "-c", "protocol.file.allow=always", "submodule",
                    "add", "--quiet", str(other.path), "vendor/other"], check=True,
                   capture_output=True)
    repo.commit()
    result = extract_corpus(open_source(repo.uri))
    by_id = {r.document_id: (r.status, r.error) for r in result.records}
    inner = other.git("rev-parse", "HEAD")
    assert by_id == {
        "guide.md": ("ok", None),
        "link.md": ("skipped", "a symbolic link in the commit's tree: not followed"),
        "manual.md": ("failed", "a Git LFS pointer: the file's content is in LFS storage, not in "
                                "the repository, so it is not indexed (pointer text is no document)"),
        "vendor/other": ("failed", f"a git submodule (commit {inner[:12]} of another repository): "
                                   "its files are not indexed; index that repository as a corpus "
                                   "of its own"),
    }
    assert "vendor/other/inner.md" not in by_id


def test_paths_with_control_characters_or_dot_segments_are_refused(repo: Repo):
    repo.write("good.md", "# Good\n")
    repo.write("bad\x1bname.md", "# Escape\n")
    repo.commit()
    result = extract_corpus(open_source(repo.uri))
    assert [(r.document_id, r.status, r.error) for r in result.records] == [
        ("bad\\x1bname.md", "failed", "the path bad\\x1bname.md holds a control character: refused"),
        ("good.md", "ok", None)]


def test_reconciliation_follows_the_commits_edit_delete_add_and_rename(repo: Repo):
    repo.write("keep.md", "# Keep\n\nSame.\n")
    repo.write("edit.md", "# Edit\n\nBefore.\n")
    repo.write("gone.md", "# Gone\n\nBye.\n")
    repo.write("old/name.md", "# Moving\n\nSame words.\n")
    repo.commit()
    first = extract_corpus(open_source(repo.uri))
    assert first.report.counts() == {"added": 4, "changed": 0, "renamed": 0, "deleted": 0,
                                     "unchanged": 0, "failed": 0, "skipped": 0,
                                     "hidden": 0}
    repo.write("edit.md", "# Edit\n\nAfter.\n")
    (repo.path / "gone.md").unlink()
    repo.write("new.md", "# New\n\nHello.\n")
    (repo.path / "new").mkdir()
    repo.git("mv", "old/name.md", "new/place.md")
    commit = repo.commit()
    opened: list[str] = []
    source = open_source(repo.uri)
    real_read = source.read
    source.read = lambda entry, limit: opened.append(entry.document_id) or real_read(entry, limit)
    second = extract_corpus(source, first.records)
    report = second.report
    assert report.revision == commit
    assert {c.value: report.ids(c) for c in Change} == {
        "added": ["new.md"], "changed": ["edit.md"], "renamed": ["new/place.md"],
        "deleted": ["gone.md"], "unchanged": ["keep.md"], "failed": [], "skipped": [],
        "hidden": []}
    assert [(r.document_id, r.previous_id) for r in report.rows if r.change == "renamed"] == [
        ("new/place.md", "old/name.md")]
    # Only the edited and the added file were read: the rename is recognised by its blob id.
    assert sorted(opened) == ["edit.md", "new.md"]
    moved = {r.document_id: r for r in second.records}["new/place.md"]
    assert (moved.canonical_text, moved.path) == ("# Moving\n\nSame words.\n",
                                                  f"{repo.uri}@{commit}:new/place.md")
    # Both kept records moved: the rename, and keep.md, whose location names the new commit.
    assert (second.extracted, second.reused, second.moved) == (2, 2, 2)
    assert {r.document_id: r.path for r in second.records}["keep.md"] == (
        f"{repo.uri}@{commit}:keep.md")


def test_the_watch_token_is_the_refs_commit(repo: Repo):
    repo.write("a.md", "# One\n")
    first = repo.commit()
    source = GitSource(repo.uri)
    assert source.watch_token() == first
    repo.write("untracked.md", "# Not committed\n")
    assert source.watch_token() == first
    repo.write("a.md", "# Two\n")
    second = repo.commit()
    assert source.watch_token() == second


def test_a_remote_repository_is_mirrored_into_the_cache_and_fetched(repo: Repo, tmp_path):
    repo.write("a.md", "# One\n")
    repo.commit()
    # A path given as an ssh-less remote URL is cloned like any remote: the mirror is the cache.
    source = GitSource(f"git+ssh://localhost{repo.path}", cache_dir=tmp_path / "cache")
    source.repository = str(repo.path)  # no ssh server here: clone the same repository by path
    assert [e.document_id for e in source.entries()] == ["a.md"]
    assert (tmp_path / "cache").is_dir() and len(list((tmp_path / "cache").iterdir())) == 1
    repo.write("b.md", "# Two\n")
    repo.commit()
    assert [e.document_id for e in source.entries()] == ["a.md", "b.md"]
    source.close()


def test_a_credential_in_the_url_is_never_shown():
    assert [without_credentials(url) for url in (
        "git+https://deploy:s3cr3t@git.example.org/docs.git@main",
        "git+https://ghp_T0KEN@github.com/team/docs.git",
        "git+http://u:p@10.0.0.5:3000/docs.git",
        "git+ssh://git:pw@example.org/docs.git", "git+ssh://git@example.org/docs.git",
        "fatal: unable to access 'https://deploy:s3cr3t@git.example.org/docs.git/': 403")] == [
        "git+https://git.example.org/docs.git@main", "git+https://github.com/team/docs.git",
        "git+http://10.0.0.5:3000/docs.git", "git+ssh://git@example.org/docs.git",
        "git+ssh://git@example.org/docs.git",
        "fatal: unable to access 'https://git.example.org/docs.git/': 403"]
    with pytest.raises(SourceError) as refused:
        parse_git_uri("git+ftp://deploy:s3cr3t@example.org/docs")
    assert str(refused.value) == "git+ftp://example.org/docs: git+file, git+https, git+ssh or " \
                                 "git+http URLs only"


@contextmanager
def served_repo_at(repo: Repo, tmp_path) -> Iterator[str]:
    """``repo`` as a bare clone served over git's plain HTTP protocol on 127.0.0.1: the
    address its clone answers at (any user and password are accepted)."""
    bare = tmp_path / "served" / "docs.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(repo.path), str(bare)], check=True)
    subprocess.run(["git", "-C", str(bare), "update-server-info"], check=True)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                               "127.0.0.1", "--directory", str(bare.parent)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while subprocess.run(["git", "ls-remote", f"http://127.0.0.1:{port}/docs.git"],
                             capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, "the HTTP server did not answer"
            time.sleep(0.2)
        yield f"127.0.0.1:{port}/docs.git"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_remote_read_with_a_token_shows_it_in_no_location_message_or_mirror_name(
        repo: Repo, tmp_path):
    # Found by an operator's trial: git+https://deploy:TOKEN@host/repo.git put the token in
    # every document's location, so in every citation's URL any reader got from /ask.
    from rag_pipeline.core.ingest.sources import SourceSettings
    from rag_pipeline.core.ingest.sources.originals import read_original

    repo.write("guide.md", "# Guide\n\nThe build runs on the orange runners.\n")
    commit = repo.commit()
    cache = tmp_path / "cache"
    with served_repo_at(repo, tmp_path) as address:
        source = GitSource(f"git+http://deploy:s3cr3t@{address}@main", cache_dir=cache)
        result = extract_corpus(source)
        source.close()
        assert source.uri == f"git+http://{address}@main"
        assert [(r.document_id, r.path) for r in result.records] == [
            ("guide.md", f"git+http://{address}@{commit}:guide.md")]
        mirror = cache / (hashlib.sha256(f"http://{address}".encode()).hexdigest()[:16] + ".git")
        assert [p.name for p in cache.iterdir()] == [mirror.name]
        missing = GitSource(f"git+http://deploy:s3cr3t@{address.replace('docs', 'nothing')}",
                            cache_dir=tmp_path / "other")
        with pytest.raises(SourceError) as failed:
            missing.entries()
        assert "s3cr3t" not in str(failed.value) and "deploy" not in str(failed.value)
    # The original is read again from the mirror, by the location as shown.
    assert read_original(result.records[0].path, 10_000, SourceSettings(cache_dir=cache)) == (
        b"# Guide\n\nThe build runs on the orange runners.\n")


def test_a_remote_whose_default_branch_changed_is_read_at_the_new_one(repo: Repo, tmp_path):
    # Found by an operator's trial: a fetch never moves a mirror's HEAD, so after the remote's
    # default branch moved from master to main every run read master, "unchanged".
    repo.git("checkout", "--quiet", "-b", "master")
    repo.write("old.md", "# Old\n")
    repo.commit()
    source = GitSource(f"git+ssh://localhost{repo.path}", cache_dir=tmp_path / "cache")
    source.repository = str(repo.path)  # no ssh server here: clone the same repository by path
    assert [e.document_id for e in source.entries()] == ["old.md"]
    repo.git("checkout", "--quiet", "-b", "trunk")
    repo.write("new.md", "# New\n")
    moved = repo.commit()
    assert [e.document_id for e in source.entries()] == ["new.md", "old.md"]
    assert source.revision() == moved
    source.close()


def test_the_watch_token_of_a_remote_is_the_commit_of_the_ref_named_not_of_a_namesake(
        repo: Repo, tmp_path):
    # ls-remote lists every ref ending in the name: refs/heads/feature/main sorts before
    # refs/heads/main, and was watched in its place (found by an operator's trial).
    repo.write("a.md", "# One\n")
    main = repo.commit()
    repo.git("checkout", "--quiet", "-b", "feature/main")
    repo.write("b.md", "# Two\n")
    feature = repo.commit()
    repo.git("checkout", "--quiet", "main")
    repo.git("tag", "-a", "v1", "-m", "release", feature)
    sources = {ref: GitSource(f"git+ssh://localhost{repo.path}@{ref}", cache_dir=tmp_path)
               for ref in ("main", "feature/main", "v1")}
    for source in sources.values():
        source.repository = str(repo.path)
    tag_object = repo.git("rev-parse", "v1")
    assert {ref: source.watch_token() for ref, source in sources.items()} == {
        "main": main, "feature/main": feature, "v1": tag_object}
    default = GitSource(f"git+ssh://localhost{repo.path}", cache_dir=tmp_path)
    default.repository = str(repo.path)
    assert default.watch_token() == main


def test_a_repository_another_user_owns_is_said_with_gits_reason_and_its_remedy(
        repo: Repo, tmp_path, monkeypatch):
    # Found by an operator's trial: git refused a shared repository for its owner ("dubious
    # ownership") and rag-pipeline said "... is not a git repository".
    import os

    repo.write("a.md", "# One\n")
    repo.commit()
    try:
        for folder, _, files in os.walk(repo.path):
            for name in (folder, *(os.path.join(folder, f) for f in files)):
                os.chown(name, 65534, 65534)
    except PermissionError:
        pytest.skip("changing a file's owner needs root")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "empty.gitconfig"))
    with pytest.raises(SourceError) as refused:
        GitSource(repo.uri).entries()
    assert str(refused.value) == (
        f"{repo.uri}: git rev-parse failed: fatal: detected dubious ownership in repository at "
        f"'{repo.path}' (git reads a repository another user owns only once trusted: `git config "
        f"--global --add safe.directory {repo.path}` as the user running rag-pipeline)")
