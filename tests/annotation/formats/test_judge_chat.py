"""The machine judge's request and the verdict read from answers, checked on hand-worked answers;
frame instants; Retry-After; one pair's retries and budget against a mock transport."""
from __future__ import annotations

import json
import math
import random
import re

import httpx
import numpy as np
import pytest

from annotation.formats.judge_chat import (PROMPTS, VerdictError, _p_true, answer_json, chat_request,
                                           logprob_relevance, parse_chat_response, usage_counts)
from annotation.formats.video_frames import frame_times, sampling_spec
from annotation.services.machine_judges.runner.client import Budget, EndpointRefused, call_pair, retry_after_seconds


def _answer(content: str, logprobs=None, usage=None) -> dict:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    if logprobs is not None:
        choice["logprobs"] = logprobs
    return {"choices": [choice], "usage": usage or {"prompt_tokens": 100, "completion_tokens": 12}}


def _token(text: str, p: float, alternatives: dict | None = None) -> dict:
    top = [{"token": text, "logprob": math.log(p)}] + [{"token": t, "logprob": math.log(q)}
                                                      for t, q in (alternatives or {}).items()]
    return {"token": text, "logprob": math.log(p), "top_logprobs": top}


def test_logprob_of_the_verdict_token_normalised_over_true_and_false():
    # p(true) = 0.8, p(false) = 0.15 among the alternatives: P(relevant) = 0.8 / 0.95.
    content = [{"token": '{"', "logprob": 0.0}, {"token": "relevant", "logprob": 0.0}, {"token": '":', "logprob": 0.0},
               _token(" true", 0.8, {" false": 0.15, " yes": 0.05})]
    verdict = parse_chat_response(_answer('{"relevant": true, "confidence": 0.6}', {"content": content}))
    assert verdict.relevant is True and verdict.score_source == "logprob"
    assert verdict.score == pytest.approx(0.8 / 0.95, abs=1e-12)
    assert verdict.confidence == 0.6 and (verdict.prompt_tokens, verdict.completion_tokens) == (100, 12)


def test_a_false_verdict_without_its_alternative_gives_one_minus_its_probability():
    assert logprob_relevance({"content": [_token("false", 0.9)]}, relevant=False) == pytest.approx(0.1, abs=1e-12)
    # The verdict token absent (spelled over other tokens): no log-probability score.
    assert logprob_relevance({"content": [_token("tr", 0.9)]}, relevant=True) is None
    assert logprob_relevance(None, relevant=True) is None


def test_without_logprobs_the_stated_confidence_gives_the_score():
    verdict = parse_chat_response(_answer('```json\n{"relevant": false, "confidence": 0.8}\n```'))
    assert (verdict.relevant, verdict.score_source) == (False, "stated")
    assert verdict.score == pytest.approx(0.2, abs=1e-12)
    assert parse_chat_response(_answer('Sure. {"relevant": "yes", "confidence": 1}')).score == 1.0


@pytest.mark.parametrize("content, problem", [
    ("It is relevant.", "no JSON object"),
    ('{"relevant": "maybe", "confidence": 0.5}', "'relevant' must be true or false"),
    ('{"relevant": true, "confidence": 1.5}', "'confidence' must be a number from 0 to 1"),
    ('{"confidence": 0.5}', "no 'relevant'"),
    ('{"relevant": true}', "neither token log-probabilities nor a stated 'confidence'"),
])
def test_answers_without_a_usable_verdict_say_why(content, problem):
    with pytest.raises(VerdictError, match=problem):
        parse_chat_response(_answer(content))


def test_answers_that_are_not_chat_completions_are_refused():
    for body in ([], {}, {"choices": []}, {"choices": [{"message": {"content": None}}]}):
        with pytest.raises(VerdictError):
            parse_chat_response(body)


def test_the_request_carries_the_caption_as_data_and_each_frame_as_a_data_url():
    body = chat_request(model="m", prompt_version="v2", caption='a "red" circle', frames_jpeg=[b"\xff\xd8a", b"\xff\xd8b"],
                        temperature=0)
    parts = body["messages"][0]["content"]
    assert body["model"] == "m" and body["temperature"] == 0 and body["logprobs"] is True and body["top_logprobs"] == 5
    assert parts[0] == {"type": "text", "text": PROMPTS["v2"].format(n=2)} and "2 frames" in parts[0]["text"]
    assert parts[1] == {"type": "text", "text": '{"caption": "a \\"red\\" circle"}'}
    assert [p["image_url"]["url"] for p in parts[2:]] == ["data:image/jpeg;base64,/9hh", "data:image/jpeg;base64,/9hi"]
    with pytest.raises(ValueError, match="unknown prompt version"):
        chat_request(model="m", prompt_version="v0", caption="c", frames_jpeg=[], temperature=0)
    with pytest.raises(ValueError, match="'v1' is retired"):
        chat_request(model="m", prompt_version="v1", caption="c", frames_jpeg=[], temperature=0)


@pytest.mark.parametrize("lp_true, lp_false", [
    (math.log(0.9), math.log(0.1)), (-1000.0, -1000.0), (-9999.0, -0.0001), (-0.0001, -9999.0), (-745.0, -746.0),
    (-1e308, 0.0), (0.0, -1e308), (-1e308, -1e308), (-1.7e308, -5.0), (0.0, 0.0),
])
def test_the_ratio_of_the_two_verdict_tokens_is_softmax_over_them_and_never_fails(lp_true, lp_false):
    from scipy.special import softmax  # the oracle

    content = [{"token": " true", "logprob": lp_true,
                "top_logprobs": [{"token": " true", "logprob": lp_true}, {"token": " false", "logprob": lp_false}]}]
    expected = float(softmax(np.array([lp_true, lp_false], dtype=np.float64))[0])
    got = logprob_relevance({"content": content}, relevant=True)
    assert math.isfinite(got) and 0 <= got <= 1 and got == pytest.approx(expected, abs=1e-12)


def test_hand_worked_ratios():
    assert _p_true(math.log(0.8), math.log(0.15)) == pytest.approx(0.8 / 0.95, abs=1e-15)
    assert _p_true(-1000, -1000) == 0.5  # both improbable, equally: an even split, as the ratio says
    assert _p_true(-1000, 0) == 0.0 and _p_true(0, -1000) == 1.0


@pytest.mark.parametrize("logprob, problem", [
    (math.nan, "nan: not finite"), (math.inf, "inf: not finite"), (-math.inf, "-inf: not finite"),
    (1000, "1000: above 0"), (0.5, "above 0"), (10**400, "too large for a float"), (-(10**400), "too large"),
    ("-0.1", "not a number"), (True, "not a number"), ([], "not a number"),
])
def test_a_log_probability_that_is_no_finite_number_at_most_0_is_that_answer_s_error(logprob, problem):
    content = [{"token": "true", "logprob": logprob, "top_logprobs": []}]
    with pytest.raises(VerdictError, match=re.escape(problem)):
        parse_chat_response(_answer('{"relevant": true, "confidence": 0.9}', {"content": content}))
    # The alternative is checked as strictly as the verdict's own token.
    content = [{"token": "true", "logprob": -0.1, "top_logprobs": [{"token": "false", "logprob": logprob}]}]
    with pytest.raises(VerdictError, match="token 'false'"):
        parse_chat_response(_answer('{"relevant": true, "confidence": 0.9}', {"content": content}))


@pytest.mark.parametrize("usage, counted, noted", [
    ({"prompt_tokens": 100, "completion_tokens": 12}, (100, 12), 0),
    ({"prompt_tokens": 100.0, "completion_tokens": 0}, (100, 0), 0),
    ({}, (0, 0), 0),
    ({"prompt_tokens": math.inf, "completion_tokens": 12}, (0, 12), 1),
    ({"prompt_tokens": "abc", "completion_tokens": "7"}, (0, 0), 2),
    ({"prompt_tokens": 10**30, "completion_tokens": -(10**12)}, (0, 0), 2),
    ({"prompt_tokens": 10**7, "completion_tokens": 10**7 + 1}, (10**7, 0), 1),
    ({"prompt_tokens": True, "completion_tokens": 1.5}, (0, 0), 2),
    ({"prompt_tokens": math.nan}, (0, 0), 1),
])
def test_usage_counts_are_small_whole_numbers_or_ignored_with_a_note(usage, counted, noted):
    got = usage_counts({"usage": usage})
    assert (got.prompt, got.completion) == counted and len(got.notes) == noted
    assert usage_counts({"usage": "lots"}) == usage_counts({}) == usage_counts([]) == usage_counts({"usage": {}})


@pytest.mark.parametrize("raw, problem", [
    (b"[" * 200_000, "nested deeper"), (b'{"a": 1' + b"0" * 5000 + b"}", "digits"), (b"\xff\xfe", "not UTF-8"),
    (b"", "Expecting value"),
])
def test_answer_bodies_that_are_no_json_say_why(raw, problem):
    with pytest.raises(VerdictError, match=problem):
        answer_json(raw)


def test_a_message_text_longer_than_any_verdict_is_refused_before_it_is_searched():
    with pytest.raises(VerdictError, match="200000 characters long"):
        parse_chat_response(_answer("{" * 200_000))


def test_frames_are_the_centres_of_equal_slices_of_the_span():
    assert frame_times(0, 4, 4) == [0.5, 1.5, 2.5, 3.5]
    assert frame_times(2, 3, 2) == [2.25, 2.75]
    assert sampling_spec(n=8, start=1, end=2.5) == "even:8@1.000-2.500;jpeg:w336q4"
    for bad in ((3, 3, 1), (-1, 2, 1), (0, 1, 0)):
        with pytest.raises(ValueError):
            frame_times(*bad)


def test_retry_after_in_seconds_or_as_a_date_and_capped():
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("Thu, 01 Jan 1970 00:00:10 GMT", now=4.0) == pytest.approx(6.0)
    assert retry_after_seconds("9999") == 120.0 and retry_after_seconds("soon") is None and retry_after_seconds(None) is None



@pytest.mark.parametrize("header", ["nan", "NaN", "inf", "-inf", "Infinity"])
def test_a_retry_after_that_is_no_finite_number_is_ignored(header):
    """BROKEN before: 'nan' parsed as a float, min/max kept it NaN, and sleeping NaN seconds raised
    outside the request's error handling: one 429 ended the whole run."""
    assert retry_after_seconds(header) is None


@pytest.mark.parametrize("content", [
    '{"relevant": "Incorrect API key provided: c2stc2VjcmV0LWtleS0xMjM0NTY3ODkw"}',
    '{"relevant": true, "confidence": "10.0.0.5:6379 says -NOAUTH Authentication required"}',
    '{"relevant": ["sk-secret"]}',
])
def test_a_verdict_s_bad_value_is_named_by_its_type_never_quoted(content):
    """BROKEN before: 'relevant' and 'confidence' quoted the model's value in the pair's error,
    which reaches the job page and the database (issue 36: never what a remote service answered)."""
    with pytest.raises(VerdictError) as refused:
        parse_chat_response(_answer(content))
    message = str(refused.value)
    assert "c2st" not in message and "NOAUTH" not in message and "sk-secret" not in message
    assert "a string of" in message or "a JSON array" in message


def _client(answers: list) -> tuple[httpx.Client, list]:
    seen = []

    def handler(request):
        seen.append(request)
        status, headers, body = answers.pop(0)
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        # A stream, as from the network (content= would be read at once, and the client reads streams).
        return httpx.Response(status, headers=headers, stream=httpx.ByteStream(content))

    return httpx.Client(transport=httpx.MockTransport(handler)), seen


OK = _answer('{"relevant": true, "confidence": 0.9}', usage={"prompt_tokens": 50, "completion_tokens": 10})
LIMITS = {"timeout_seconds": 30, "max_bytes": 1 << 20}


def test_a_429_waits_the_servers_retry_after_and_a_503_backs_off_with_jitter():
    client, seen = _client([(429, {"Retry-After": "7"}, {}), (503, {}, {}), (200, {}, OK)])
    waits = []
    budget = Budget(max_requests=None, max_tokens=None)
    out = call_pair(client=client, base_url="http://judge", headers={"Authorization": "Bearer k"}, body={}, budget=budget,
                    max_retries=3, rng=random.Random(1), sleep=waits.append, **LIMITS)
    assert out.verdict.relevant and out.requests == 3 and out.tokens == 60 and budget.tokens == 60
    assert waits[0] == 7.0 and 0 <= waits[1] <= 1.0  # attempt 1: uniform in [0, 0.5 * 2]
    assert [str(r.url) for r in seen] == ["http://judge/v1/chat/completions"] * 3
    assert seen[0].headers["Authorization"] == "Bearer k"


def test_retries_end_and_the_budget_is_never_overdrawn():
    client, _ = _client([(500, {}, {})] * 3)
    out = call_pair(client=client, base_url="http://j", headers={}, body={}, budget=Budget(max_requests=None, max_tokens=None),
                    max_retries=2, rng=random.Random(0), sleep=lambda s: None, **LIMITS)
    assert out.verdict is None and out.requests == 3 and out.error.startswith("gave up after 3 requests: HTTP 500")
    client, seen = _client([(429, {"Retry-After": "0"}, {})] * 5)
    budget = Budget(max_requests=2, max_tokens=None)
    out = call_pair(client=client, base_url="http://j", headers={}, body={}, budget=budget, max_retries=4,
                    rng=random.Random(0), sleep=lambda s: None, **LIMITS)
    assert out.budget_stop and len(seen) == 2 and budget.requests == 2 and budget.spent


def test_a_refused_key_stops_the_run():
    client, _ = _client([(401, {}, {"error": "bad key"})])
    with pytest.raises(EndpointRefused, match="HTTP 401"):
        call_pair(client=client, base_url="http://j", headers={}, body={}, budget=Budget(max_requests=None, max_tokens=None),
                  max_retries=3, rng=random.Random(0), sleep=lambda s: None, **LIMITS)
