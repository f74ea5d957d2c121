"""An OpenAI-compatible chat-completions server that answers each pair with a trick (issue 36,
findings 4 to 6): the machine judge must make every one of them that pair's fate, never the run's.

Run as a process (`python -m tests.hostile_judge_server`): it binds 127.0.0.1 on a free port and
prints `PORT <n>` on its first line. The trick is the caption (read from the request's caption
data part, {"caption": ...}); a caption that names no trick gets an ordinary answer, so injection
captions can be sent through it and their requests read back. Tricks:

    ok                 {"relevant": true} with logprobs true -0.105, false -2.303 (P = 0.9)
    lp-nan, lp-inf, lp-neg-inf, lp-plus-1000, lp-400-digits, lp-neg-400-digits
                       the verdict token's logprob is NaN, Infinity, -Infinity, 1000, 10^400 - 1, -(10^400 - 1)
    lp-both-1000       both verdict tokens at -1000 (a valid, if odd, 0.5)
    usage-inf, usage-abc, usage-1e30, usage-neg
                       a good answer whose usage.prompt_tokens is Infinity, "abc", 10^30, -10^12
    deep               a body of 200,000 '['
    long-int           a body holding an integer of 5,000 digits
    not-utf8           a body that is not UTF-8
    content-deep       a message text of 200,000 '['
    big, big-declared  150 MB of answer, chunked or with its Content-Length declared
    drip               a good answer, one byte every 2 s after the headers
    drip-headers       the status line and headers themselves, one byte every 2 s
    refuse             401

GET /stats answers {"captions": [captions asked, in order], "sent": {trick: bytes the server
managed to hand to the socket}, "requests": {caption: the request's messages, each image's data
URL replaced by its length}}.
"""
from __future__ import annotations

import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler

from tests.server_process import ServerProcess, serve

BIG = 150 * 1000 * 1000
CHUNK = 64 * 1024
DRIP_SECONDS = 2.0


class State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.captions: list[str] = []
        self.sent: dict[str, int] = {}
        self.requests: dict[str, list] = {}
        self.stop = threading.Event()


STATE = State()


def _caption(parts: list) -> str:
    for part in parts:
        if isinstance(part, dict) and part.get("type") == "text":
            try:
                value = json.loads(part["text"])
            except ValueError:
                continue
            if isinstance(value, dict) and isinstance(value.get("caption"), str):
                return value["caption"]
    # The retired prompt v1 put the caption inside the instruction: read it from there, so that the
    # tricks also reach a platform that still sends v1.
    text = " ".join(p["text"] for p in parts if isinstance(p, dict) and p.get("type") == "text")
    match = re.search(r'Caption: "([^"]*)"', text)
    return match.group(1) if match else ""


def _answer(trick: str) -> dict:
    """A vLLM-style answer: {"relevant": true, "confidence": 0.9}, the verdict token with logprobs."""
    lp_true, lp_false = math.log(0.9), math.log(0.1)
    if trick.startswith("lp-"):
        lp_true = {"lp-nan": math.nan, "lp-inf": math.inf, "lp-neg-inf": -math.inf, "lp-plus-1000": 1000,
                   "lp-400-digits": 10**400 - 1, "lp-neg-400-digits": -(10**400 - 1),
                   "lp-both-1000": -1000}[trick]
        if trick == "lp-both-1000":
            lp_false = -1000
    content = '{"relevant": true, "confidence": 0.9}'
    tokens = [{"token": t, "logprob": -0.001, "top_logprobs": []} for t in ('{"', "relevant", '":')]
    tokens.append({"token": " true", "logprob": lp_true,
                   "top_logprobs": [{"token": " true", "logprob": lp_true}, {"token": " false", "logprob": lp_false}]})
    tokens += [{"token": t, "logprob": -0.001, "top_logprobs": []} for t in (",", ' "', "confidence", '":', " 0.9", "}")]
    usage = {"prompt_tokens": 100, "completion_tokens": 12}
    if trick.startswith("usage-"):
        usage["prompt_tokens"] = {"usage-inf": math.inf, "usage-abc": "abc", "usage-1e30": 10**30,
                                  "usage-neg": -10**12}[trick]
    if trick == "content-deep":
        content = "[" * 200_000
    return {"id": "chatcmpl-hostile", "object": "chat.completion", "model": "hostile",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "logprobs": {"content": tokens}, "finish_reason": "stop"}],
            "usage": usage}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _count(self, trick: str, n: int) -> None:
        with STATE.lock:
            STATE.sent[trick] = STATE.sent.get(trick, 0) + n

    def _write_counted(self, trick: str, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            return False
        self._count(trick, len(data))
        return True

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/stats":
            with STATE.lock:
                self._send(200, json.dumps({"captions": STATE.captions, "sent": STATE.sent,
                                            "requests": STATE.requests}).encode())
        else:
            self._send(404, b'{"error": "not found"}')

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw)
        parts = body["messages"][-1]["content"]
        trick = _caption(parts)
        shown = json.loads(json.dumps(body["messages"]))
        for message in shown:
            for part in message["content"] if isinstance(message["content"], list) else []:
                if part.get("type") == "image_url":
                    part["image_url"]["url"] = len(part["image_url"]["url"])
        with STATE.lock:
            STATE.captions.append(trick)
            STATE.requests[trick] = shown
        if trick == "refuse":
            self._send(401, b'{"error": {"message": "bad key"}}')
        elif trick == "deep":
            self._send(200, b"[" * 200_000)
        elif trick == "long-int":
            self._send(200, b'{"choices": [], "usage": {"prompt_tokens": 1' + b"0" * 5000 + b"}}")
        elif trick == "not-utf8":
            self._send(200, b'{"choices": "\xff\xfe\xfd"}')
        elif trick in ("big", "big-declared"):
            self._big(trick)
        elif trick in ("drip", "drip-headers"):
            self._drip(trick)
        else:
            self._send(200, json.dumps(_answer(trick)).encode())  # NaN and Infinity as JavaScript spells them

    def _big(self, trick: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if trick == "big-declared":
            self.send_header("Content-Length", str(BIG))
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b" " * CHUNK
        for _ in range(BIG // CHUNK):
            data = chunk if trick == "big-declared" else b"%x\r\n%s\r\n" % (len(chunk), chunk)
            if not self._write_counted(trick, data):
                break
        else:
            self._write_counted(trick, b"" if trick == "big-declared" else b"0\r\n\r\n")
        self.close_connection = True

    def _drip(self, trick: str) -> None:
        body = json.dumps(_answer("ok")).encode()
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        if trick == "drip":
            if not self._write_counted(trick, head):
                return
            rest = body
        else:
            rest = head + body
        for i in range(len(rest)):
            if STATE.stop.wait(DRIP_SECONDS) or not self._write_counted(trick, rest[i:i + 1]):
                break
        self.close_connection = True


class HostileJudgeServerProcess(ServerProcess):
    """The server as a child process of a test: `url`, `stats()`, `stop()`."""

    module = "tests.hostile_judge_server"


def main() -> None:
    serve(Handler, on_stop=STATE.stop.set)


if __name__ == "__main__":
    main()
