"""The outbound policy's rules one by one (annotation/services/outbound.py), the pinned connection
(no second resolution between check and connect), and the judge keys' host binding and masking
(annotation/services/machine_judges/keys.py)."""
from __future__ import annotations

import pytest

from annotation.services.machine_judges.keys import MASK, KeyBindingRefused, key_binding_check, mask_keys
from annotation.services.outbound import OutboundRefused, Policy, address_refusal, destination_check, pinned_client, \
    url_check

from .machine_judges.judge_world import judge_server  # noqa: F401 - a fixture

DEFAULT = Policy()


def _resolver(table: dict[str, list[str]], calls: list[str] | None = None):
    def resolve(host: str, port: int) -> list[str]:
        if calls is not None:
            calls.append(host)
        return table.get(host, [])
    return resolve


@pytest.mark.parametrize("address, rule", [
    ("127.0.0.1", "loopback"), ("127.255.0.9", "loopback"), ("::1", "loopback"), ("::ffff:127.0.0.1", "loopback"),
    ("10.0.0.1", "private"), ("172.16.5.4", "private"), ("192.168.1.1", "private"),
    ("169.254.169.254", "link-local"), ("fe80::1", "link-local"), ("fd12:3456::1", "unique-local"),
    ("224.0.0.251", "multicast"), ("ff02::1", "multicast"), ("0.0.0.0", "unspecified"), ("::", "unspecified"),
    ("100.64.0.1", "not globally routable"), ("240.0.0.1", ""),  # reserved (Python counts it private)
])
def test_internal_addresses_are_refused_by_name_of_their_kind(address, rule):
    assert rule in address_refusal(address, DEFAULT)
    assert address_refusal(address, Policy.parse("0.0.0.0/0,::/0")) is None  # unless the operator allows them


def test_public_addresses_pass_and_an_allowed_network_admits_only_itself():
    assert address_refusal("93.184.216.34", DEFAULT) is None and address_refusal("2606:4700::1111", DEFAULT) is None
    narrow = Policy.parse("127.0.0.1/32")
    assert address_refusal("127.0.0.1", narrow) is None and "loopback" in address_refusal("127.0.0.2", narrow)


def test_a_name_with_one_internal_address_among_public_ones_is_refused():
    table = {"mixed.example": ["93.184.216.34", "10.0.0.7"], "public.example": ["93.184.216.34"]}
    with pytest.raises(OutboundRefused, match="private"):
        destination_check("https://mixed.example/", policy=DEFAULT, resolver=_resolver(table))
    assert destination_check("https://public.example/", policy=DEFAULT, resolver=_resolver(table))[1] == "93.184.216.34"
    with pytest.raises(OutboundRefused, match="does not resolve"):
        destination_check("https://nowhere.example/", policy=DEFAULT, resolver=_resolver(table))


@pytest.mark.parametrize("ports, port, allowed", [
    ("", 80, True), ("", 443, True), ("", 8000, False), ("8000", 8000, True), ("8000-8099", 8050, True),
    ("1024-65535", 6379, False), ("1024-65535", 5432, False), ("1024-65535,6379", 6379, True), ("1-65535", 22, False),
])
def test_ports_80_and_443_and_the_operator_s_list_where_a_range_never_opens_a_service_port(ports, port, allowed):
    assert Policy.parse("", ports).port_allowed(port) is allowed


@pytest.mark.parametrize("value", ["10.0.0.0/33", "not-a-net"])
def test_a_bad_allow_list_entry_is_named(value):
    with pytest.raises(OutboundRefused, match="REJUDGE_OUTBOUND_ALLOW"):
        Policy.parse(value)
    with pytest.raises(OutboundRefused, match="REJUDGE_OUTBOUND_PORTS"):
        Policy.parse("", "70000")


def test_url_text_rules():
    target = url_check("HTTPS://Judge.Example:8443/Prefix/", policy=Policy.parse("", "8443"))
    assert (target.scheme, target.host, target.port, target.path) == ("https", "judge.example", 8443, "/Prefix/")
    assert url_check("http://[2606:4700::1111]/", policy=DEFAULT).url == "http://[2606:4700::1111]/"
    for url, rule in [("http://a.example:080x/", "port"), ("http://a.example:+80/", "port"),
                      ("http://a.example\\@b.example/", "backslash"), ("http://a.example/\x00", "control"),
                      ("http://[not-v6]/", "IPv6"), ("http:///path", "names no host"), ("http://ä.example/", "ASCII"),
                      ("javascript:alert(1)", "only http"), ("//a.example/", "only http")]:
        with pytest.raises(OutboundRefused, match=rule):
            url_check(url, policy=DEFAULT)


def test_the_connection_goes_to_the_checked_address_without_resolving_again(judge_server):
    """DNS rebinding: the name resolves to the allowed test server when checked, and to something
    else (the metadata address) afterwards; every request still reaches the server that was checked."""
    calls: list[str] = []
    answers = iter([["127.0.0.1"]] + [["169.254.169.254"]] * 10)
    policy = Policy.parse("127.0.0.1/32", str(judge_server.port))

    def rebinding(host, port):
        calls.append(host)
        return next(answers)

    with pinned_client(url=f"http://judge.rebind.test:{judge_server.port}/", policy=policy, resolver=rebinding) as client:
        for _ in range(3):
            assert client.get(f"http://judge.rebind.test:{judge_server.port}/stats").status_code == 200
        with pytest.raises(OutboundRefused, match="not the destination that was checked"):
            client.get(f"http://other.rebind.test:{judge_server.port}/stats")
    assert calls == ["judge.rebind.test"]


def test_a_key_goes_only_to_its_declared_hosts_and_over_http_only_when_declared_so():
    environ = {"REJUDGE_JUDGE_KEY_A_HOSTS": "api.example.com, vllm.internal:8443,http://ollama:11434"}
    key_binding_check("REJUDGE_JUDGE_KEY_A", "https://api.example.com", environ)
    key_binding_check("REJUDGE_JUDGE_KEY_A", "https://API.example.com:443/v1", environ)
    key_binding_check("REJUDGE_JUDGE_KEY_A", "https://vllm.internal:8443", environ)
    key_binding_check("REJUDGE_JUDGE_KEY_A", "http://ollama:11434", environ)
    key_binding_check("REJUDGE_JUDGE_KEY_A", "https://ollama:11434", environ)  # https where http is allowed: fine
    for url, rule in [("https://api.example.com:8443", "not among them"), ("http://vllm.internal:8443", "plain http"),
                      ("https://evil.example", "not among them"), ("https://api.example.com.evil.example", "not among")]:
        with pytest.raises(KeyBindingRefused, match=rule):
            key_binding_check("REJUDGE_JUDGE_KEY_A", url, environ)
    with pytest.raises(KeyBindingRefused, match="declared no host"):
        key_binding_check("REJUDGE_JUDGE_KEY_B", "https://api.example.com", environ)
    key_binding_check("", "http://anywhere.example", environ)  # no key, nothing to bind


def test_every_known_key_is_masked(tmp_path):
    secret_file = tmp_path / "key"
    secret_file.write_text("sk-from-a-file-424242\n")
    environ = {"REJUDGE_JUDGE_KEY_A": "sk-aaaa-1111", "REJUDGE_JUDGE_KEY_B_FILE": str(secret_file),
               "REJUDGE_JUDGE_KEY_A_HOSTS": "api.example.com", "OTHER": "sk-not-a-judge-key"}
    text = "Incorrect API key provided: Bearer sk-aaaa-1111; also sk-from-a-file-424242 and api.example.com"
    masked = mask_keys(text, environ=environ, also=("run-key-9999",))
    assert masked == f"Incorrect API key provided: Bearer {MASK}; also {MASK} and api.example.com"
    assert mask_keys("x run-key-9999 y", environ=environ, also=("run-key-9999",)) == f"x {MASK} y"
