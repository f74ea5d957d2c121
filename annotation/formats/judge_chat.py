"""The machine judge's conversation with an OpenAI-compatible chat-completions server (vLLM, TGI,
Ollama, a hosted API): the request it sends for one caption–clip pair, and the verdict read from
the answer. Plain functions over dicts: no Django, no network.

The answer asked for is one JSON object, {"relevant": true|false, "confidence": 0..1}, where
confidence is the model's stated probability that its verdict is right. The verdict's score is
the machine's probability that the pair is relevant:

- `logprob`: when the server returns token log-probabilities (vLLM, TGI and OpenAI do when asked;
  `logprobs.content[i]` = {token, logprob, top_logprobs}), the token that spells the verdict
  (`true` or `false`) is found and P(relevant) = p(true) / (p(true) + p(false)) over its top
  alternatives when both are listed, else p(token) for `true` and 1 - p(token) for `false`;
- `stated`: otherwise (Ollama's OpenAI endpoint returns no logprobs), the stated confidence c
  gives P(relevant) = c for a `true` verdict and 1 - c for a `false` one.
"""
from __future__ import annotations

import base64
import json
import math
import re
from dataclasses import dataclass

# A prompt version names the exact words below; change them and the version changes, so cached
# verdicts of the old words are never mixed with new ones (the cache is keyed by the version).
PROMPTS = {
    "v1": (
        "You judge text-to-video retrieval. The images are {n} frames sampled evenly, in order, from one video "
        "clip. Caption: \"{caption}\"\n"
        "Is the caption a correct description of the clip? Every element the caption mentions (objects, colours, "
        "actions, direction of motion, setting) must be visible in the clip; the caption need not mention "
        "everything the clip shows.\n"
        "Answer with one JSON object and nothing else: {{\"relevant\": true or false, \"confidence\": a number "
        "from 0 to 1, your probability that your answer is right}}."
    ),
}
DEFAULT_PROMPT = "v1"
SCORE_LOGPROB = "logprob"
SCORE_STATED = "stated"


class VerdictError(ValueError):
    """The server's answer carries no usable verdict; the message says what was wrong."""


@dataclass(frozen=True)
class Verdict:
    relevant: bool
    score: float  # P(relevant), 0..1
    score_source: str  # SCORE_LOGPROB | SCORE_STATED
    confidence: float | None  # as stated by the model
    prompt_tokens: int
    completion_tokens: int


def chat_request(*, model: str, prompt_version: str, caption: str, frames_jpeg: list[bytes], temperature: float,
                 max_tokens: int = 60, logprobs: bool = True) -> dict:
    """The JSON body of POST {base}/v1/chat/completions for one pair."""
    if prompt_version not in PROMPTS:
        raise ValueError(f"unknown prompt version '{prompt_version}' (known: {', '.join(sorted(PROMPTS))})")
    text = PROMPTS[prompt_version].format(n=len(frames_jpeg), caption=caption.replace('"', "'"))
    content: list[dict] = [{"type": "text", "text": text}]
    for jpeg in frames_jpeg:
        content.append({"type": "image_url",
                        "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")}})
    body = {"model": model, "messages": [{"role": "user", "content": content}], "temperature": temperature,
            "max_tokens": max_tokens}
    if logprobs:
        body |= {"logprobs": True, "top_logprobs": 5}
    return body


_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)


def _answer_object(text: str) -> dict:
    """The first JSON object in the answer (models wrap it in prose or ``` fences)."""
    for match in _OBJECT.finditer(text):
        try:
            value = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise VerdictError(f"no JSON object in the answer: {text[:200]!r}")


def _relevant(value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "relevant"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no", "not_relevant", "not relevant"):
        return False
    raise VerdictError(f"'relevant' must be true or false, not {value!r}")


def _confidence(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1 or math.isnan(value):
        raise VerdictError(f"'confidence' must be a number from 0 to 1, not {value!r}")
    return float(value)


def _token_text(entry: dict) -> str:
    return str(entry.get("token", "")).strip().strip('"').lower()


def logprob_relevance(logprobs: dict | None, relevant: bool) -> float | None:
    """P(relevant) from the log-probability of the token spelling the verdict, or None when the
    answer has no such token (no logprobs returned, or the verdict spelled over several tokens)."""
    content = (logprobs or {}).get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return None
    wanted = "true" if relevant else "false"
    for entry in content:
        if not isinstance(entry, dict) or _token_text(entry) != wanted or not isinstance(entry.get("logprob"), (int, float)):
            continue
        alternatives = {wanted: math.exp(entry["logprob"])}
        for top in entry.get("top_logprobs") or []:
            text = _token_text(top) if isinstance(top, dict) else ""
            if text in ("true", "false") and isinstance(top.get("logprob"), (int, float)) and text not in alternatives:
                alternatives[text] = math.exp(top["logprob"])
        if "true" in alternatives and "false" in alternatives:
            return alternatives["true"] / (alternatives["true"] + alternatives["false"])
        p = min(1.0, alternatives[wanted])
        return p if relevant else 1.0 - p
    return None


def parse_chat_response(body) -> Verdict:
    """The verdict in a chat-completions answer (see the module docstring). Raises VerdictError."""
    if not isinstance(body, dict):
        raise VerdictError("the answer is not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise VerdictError("the answer has no choices")
    message = choices[0].get("message") or {}
    text = message.get("content") if isinstance(message, dict) else None
    if not isinstance(text, str):
        raise VerdictError("the answer's message has no text content")
    answer = _answer_object(text)
    if "relevant" not in answer:
        raise VerdictError(f"the answer's JSON has no 'relevant': {text[:200]!r}")
    relevant = _relevant(answer["relevant"])
    confidence = _confidence(answer.get("confidence"))
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    tokens = (int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
    from_logprobs = logprob_relevance(choices[0].get("logprobs"), relevant)
    if from_logprobs is not None:
        return Verdict(relevant, from_logprobs, SCORE_LOGPROB, confidence, *tokens)
    if confidence is None:
        raise VerdictError("the answer has neither token log-probabilities nor a stated 'confidence'")
    return Verdict(relevant, confidence if relevant else 1.0 - confidence, SCORE_STATED, confidence, *tokens)


def usage_tokens(body) -> int:
    """prompt + completion tokens an answer reports spending (0 when it says nothing)."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return 0
    try:
        return int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
    except (TypeError, ValueError):
        return 0
