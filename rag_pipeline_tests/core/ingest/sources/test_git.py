"""Tests for ``rag_pipeline.core.ingest.sources.git`` with real repositories made by the ``git``
command line: a commit's tracked files only, blob ids as fingerprints, renames kept, refs
resolved once, submodules, symlinks and LFS pointers said, bad refs and keys one line each."""

from __future__ import annotations

import subprocess

import pytest

from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.ingest.reconcile import Change
from rag_pipeline.core.ingest.sources import GitSource, SourceError, open_source, parse_git_uri
from rag_pipeline_tests.core.ingest.sources.conftest import Repo

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
    with pytest.raises(SourceError, match="git\\+file, git\\+https or git\\+ssh URLs only"):
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
        ("bad\\x1bname.md", "failed", "the key bad\\x1bname.md holds a control character: refused"),
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
