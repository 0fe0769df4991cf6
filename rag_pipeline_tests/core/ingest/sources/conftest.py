"""Real components for the source tests: moto's S3 server on 127.0.0.1 and git repositories
made with the ``git`` command line in a temporary folder."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from rag_pipeline.core.ingest.sources import S3Settings

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_moto(extra_env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """moto's S3 server on a free port of 127.0.0.1, once it accepts connections."""
    import os

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                               str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True, env={**os.environ, **(extra_env or {})})
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError("moto's S3 server did not start") from None
            time.sleep(0.2)


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    server.wait(timeout=30)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    server, endpoint = start_moto()
    try:
        yield endpoint
    finally:
        stop(server)


@pytest.fixture
def s3_settings(s3_endpoint: str) -> S3Settings:
    return S3Settings(endpoint_url=s3_endpoint, region="us-east-1", access_key_id="testing",
                      secret_access_key="testing")


class Bucket:
    """A fresh bucket of the moto server, written with boto3 as any uploader would."""

    def __init__(self, settings: S3Settings, name: str) -> None:
        self.name = name
        self.client = boto3.client("s3", endpoint_url=settings.endpoint_url, region_name="us-east-1",
                                   aws_access_key_id="testing", aws_secret_access_key="testing")
        self.client.create_bucket(Bucket=name)

    def put(self, key: str, data: bytes | str) -> None:
        self.client.put_object(Bucket=self.name, Key=key,
                               Body=data.encode() if isinstance(data, str) else data)

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.name, Key=key)


_BUCKETS = iter(range(10**6))


@pytest.fixture
def bucket(s3_settings: S3Settings) -> Bucket:
    return Bucket(s3_settings, f"corpus-{next(_BUCKETS)}-{time.time_ns() % 10**8}")


class Repo:
    """A git repository in a temporary folder, committed through the ``git`` command line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        self.git("init", "--quiet", "--initial-branch=main")
        self.git("config", "user.email", "test@example.org")
        self.git("config", "user.name", "Test")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.path), *args], check=True,
                              capture_output=True, text=True).stdout.strip()

    def write(self, name: str, text: str | bytes) -> None:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text, encoding="utf-8")

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "--quiet", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    @property
    def uri(self) -> str:
        return f"git+file://{self.path}"


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo")
