"""A small OpenAI-compatible chat-completions server that judges demo pairs by looking at the frames.

Run as a process (`python -m tests.judge_server`): it binds 127.0.0.1 on a free port and prints
`PORT <n>` on its first line. POST /v1/chat/completions takes the machine judge's request (the
instruction, the caption's JSON data part, then JPEG data-URL image parts), decodes every frame
with Pillow and reads the scene from the pixels: the background from the corners, the shape's
colour (nearest demo colour), its outline (how much of its bounding box it fills: square ~1,
circle ~pi/4, triangle ~1/2) and its motion (the centroid's path over the frames). The caption's
claims are read from its words (tests/annotation/demo_truth.said); the answer is relevant when the
frames show every claim.

Behaviour is chosen by the model name, `demo-vl` followed by `+flag` parts, or the same flags in
an `X-Judge-Behaviour` header:

    ollama        Ollama's dialect: no logprobs (else vLLM's: logprobs.content with top_logprobs)
    429=N         the first request of each of the first N pairs answers 429 with Retry-After: 1
    500=N         the same with a 503 and no Retry-After
    malformed=K   every pair whose key hashes to 0 mod K gets a reply whose content is no JSON
    badbody=K     the same with an HTTP body that is not JSON at all
    hang=K        the same pairs never get an answer (the handler sleeps until the server stops)
    die-after=N   the process exits (os._exit) when request N+1 arrives
    hold-after=N  after N answers, requests wait until POST /control {"release": true}

GET /stats answers {"requests": n, "answered": n, "by_pair": {key: requests}, "answered_by_pair":
{key: answers}, "authorization": [distinct Authorization headers]}; a pair's key is the caption and
the SHA-256 of its first frame, so a test can count what was sent for each pair.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler

import numpy as np
from PIL import Image

from annotation.demo.scenes import BACKGROUNDS, COLOURS
from tests.annotation.demo_truth import said
from tests.server_process import ServerProcess, serve

STRIP_ROWS = 6  # the demo's progress strip at the bottom of each frame


def read_frame(jpeg: bytes) -> dict:
    rgb = np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"), dtype=np.float32)
    rgb = rgb[: rgb.shape[0] - STRIP_ROWS]
    corners = np.concatenate([rgb[:4, :4].reshape(-1, 3), rgb[:4, -4:].reshape(-1, 3)])
    background = corners.mean(axis=0)
    mask = np.linalg.norm(rgb - background, axis=2) > 70
    found = {"background": min(BACKGROUNDS, key=lambda b: np.linalg.norm(np.array(BACKGROUNDS[b]) - background))}
    if mask.sum() < 20:
        return found
    colour = rgb[mask].mean(axis=0)
    found["colour"] = min(COLOURS, key=lambda c: np.linalg.norm(np.array(COLOURS[c]) - colour))
    ys, xs = np.nonzero(mask)
    fill = mask.sum() / ((xs.max() - xs.min() + 1) * (ys.max() - ys.min() + 1))
    found["fill"] = float(fill)
    found["centre"] = (float(xs.mean()), float(ys.mean()))
    return found


def read_scene(frames: list[bytes]) -> dict:
    seen = [read_frame(f) for f in frames]
    with_shape = [s for s in seen if "centre" in s]
    scene = {"background": max(set(s["background"] for s in seen), key=[s["background"] for s in seen].count)}
    if not with_shape:
        return scene
    colours = [s["colour"] for s in with_shape]
    scene["colour"] = max(set(colours), key=colours.count)
    fill = float(np.median([s["fill"] for s in with_shape]))
    scene["shape"] = "square" if fill > 0.9 else "circle" if fill > 0.65 else "triangle"
    if len(with_shape) >= 2:
        (x0, y0), (x1, y1) = with_shape[0]["centre"], with_shape[-1]["centre"]
        dx, dy = x1 - x0, y1 - y0
        if abs(dx) >= abs(dy):
            scene["motion"] = "left-to-right" if dx > 0 else "right-to-left"
        else:
            scene["motion"] = "falling" if dy > 0 else "rising"
    return scene


def _flags(text: str) -> dict:
    flags = {}
    for part in re.split(r"[+,\s]+", text or ""):
        if "=" in part:
            key, value = part.split("=", 1)
            flags[key] = int(value) if value.isdigit() else value
        elif part:
            flags[part] = True
    return flags


class State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.answered = 0
        self.admitted = 0
        self.by_pair: dict[str, int] = {}
        self.answered_by_pair: dict[str, int] = {}
        self.limited: dict[str, set[str]] = {"429": set(), "500": set()}
        self.authorization: set[str] = set()
        self.release = threading.Event()
        self.stop = threading.Event()


STATE = State()


def _caption(parts: list[dict]) -> str:
    """The caption: its own JSON data part {"caption": ...} (prompt v2), else the first double-quoted
    text (the retired v1, which put it inside the instruction)."""
    texts = [p["text"] for p in parts if p.get("type") == "text"]
    for text in texts:
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("caption"), str):
            return value["caption"]
    match = re.search(r'"([^"]*)"', " ".join(texts))
    return match.group(1) if match else " ".join(texts)


def _tokens(content: str, verdict_p: float, relevant: bool) -> list[dict]:
    """vLLM's logprobs.content for the answer, split roughly as a BPE tokenizer would; the verdict
    token carries its probability and its alternative."""
    out = []
    for piece in re.findall(r'\s?\w+|\s?[^\w\s]+', content):
        if piece.strip() in ("true", "false"):
            own, other = (verdict_p, 1 - verdict_p)
            alt = " false" if piece.strip() == "true" else " true"
            entry = {"token": piece, "logprob": math.log(own), "bytes": list(piece.encode()),
                     "top_logprobs": [{"token": piece, "logprob": math.log(own), "bytes": list(piece.encode())},
                                      {"token": alt, "logprob": math.log(max(other, 1e-9)), "bytes": list(alt.encode())}]}
        else:
            entry = {"token": piece, "logprob": -0.001, "bytes": list(piece.encode()),
                     "top_logprobs": [{"token": piece, "logprob": -0.001, "bytes": list(piece.encode())}]}
        out.append(entry)
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet: the tests read /stats
        pass

    def _send(self, status: int, body: bytes, headers: dict | None = None, content_type="application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value, headers: dict | None = None) -> None:
        self._send(status, json.dumps(value).encode(), headers)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/stats":
            with STATE.lock:
                self._json(200, {"requests": STATE.requests, "answered": STATE.answered, "by_pair": STATE.by_pair,
                                 "answered_by_pair": STATE.answered_by_pair,
                                 "authorization": sorted(STATE.authorization)})
        elif self.path.rstrip("/") == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": "demo-vl", "object": "model"}]})
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") == "/control":
            if json.loads(raw or b"{}").get("release"):
                STATE.release.set()
            self._json(200, {"ok": True})
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._json(404, {"error": "not found"})
            return
        body = json.loads(raw)
        flags = _flags(body.get("model", "")) | _flags(self.headers.get("X-Judge-Behaviour", ""))
        parts = body["messages"][-1]["content"]
        frames = [base64.b64decode(p["image_url"]["url"].split(",", 1)[1]) for p in parts if p.get("type") == "image_url"]
        caption = _caption(parts)
        key = f"{caption}|{hashlib.sha256(frames[0] if frames else b'').hexdigest()[:16]}"
        bucket = int(hashlib.sha256(key.encode()).hexdigest(), 16)
        with STATE.lock:
            STATE.requests += 1
            number = STATE.requests
            STATE.by_pair[key] = STATE.by_pair.get(key, 0) + 1
            if self.headers.get("Authorization"):
                STATE.authorization.add(self.headers["Authorization"])
            limit = None
            for code in (429, 500):
                n = flags.get(str(code))
                turned_away = STATE.limited[str(code)]
                if limit is None and n and not any(key in s for s in STATE.limited.values()) and len(turned_away) < n:
                    turned_away.add(key)
                    limit = code
        if flags.get("die-after") and number > flags["die-after"]:
            os._exit(3)
        if limit == 429:
            self._json(429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"Retry-After": "1"})
            return
        if limit == 500:
            self._json(503, {"error": {"message": "overloaded"}})
            return
        if flags.get("hold-after"):
            with STATE.lock:  # admitted under the lock: concurrent requests never pass N together
                admitted = STATE.admitted < flags["hold-after"]
                STATE.admitted += admitted
            while not admitted and not STATE.release.wait(0.2):
                if STATE.stop.is_set():
                    return
        if flags.get("hang") and bucket % flags["hang"] == 0:
            STATE.stop.wait()
            return
        scene = read_scene(frames)
        claims = said(caption)
        decided = [scene.get(attribute) == value for attribute, value in claims.items()]
        relevant = all(decided)
        certain = 0.97 if all(a in scene for a in claims) else 0.7
        if flags.get("malformed") and bucket % flags["malformed"] == 0:
            content = "The caption looks relevant to me, I would say yes."
        else:
            content = json.dumps({"relevant": relevant, "confidence": certain})
        if flags.get("badbody") and bucket % flags["badbody"] == 0:
            self._send(200, b'{"choices": [{"message": ', content_type="application/json")
            return
        choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        completion = len(re.findall(r'\s?\w+|\s?[^\w\s]+', content))
        usage = {"prompt_tokens": 40 + 250 * len(frames), "completion_tokens": completion,
                 "total_tokens": 40 + 250 * len(frames) + completion}
        if flags.get("ollama"):
            answer = {"id": f"chatcmpl-{number}", "object": "chat.completion", "created": int(time.time()),
                      "model": body.get("model"), "system_fingerprint": "fp_ollama", "choices": [choice], "usage": usage}
        else:
            if body.get("logprobs"):
                choice["logprobs"] = {"content": _tokens(content, certain, relevant)}
            choice["stop_reason"] = None
            answer = {"id": f"chatcmpl-{number}", "object": "chat.completion", "created": int(time.time()),
                      "model": body.get("model"), "choices": [choice], "usage": usage, "prompt_logprobs": None}
        with STATE.lock:
            STATE.answered += 1
            STATE.answered_by_pair[key] = STATE.answered_by_pair.get(key, 0) + 1
        self._json(200, answer)


class JudgeServerProcess(ServerProcess):
    """The server as a child process of a test: `url`, `stats()`, `release()`, `stop()`."""

    module = "tests.judge_server"

    def __init__(self, port: int | None = None) -> None:
        """On a free port, or on `port` (a server taking over from one that died at the same URL)."""
        super().__init__(*([str(port)] if port else []))

    def release(self) -> None:
        self.call("POST", "/control", {"release": True})


def main() -> None:
    serve(Handler, port=int(sys.argv[1]) if len(sys.argv) > 1 else 0, on_stop=STATE.stop.set)


if __name__ == "__main__":
    main()
