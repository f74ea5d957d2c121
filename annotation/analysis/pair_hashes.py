"""Seeded per-pair draws: a pool's queue order and which pairs get a second label.

Both come from a hash of (seed, salt, caption id, clip id) on external ids rather than from a random
stream, so they are reproducible, do not depend on which run brought a pair in or when (adding a run
later gives the pairs it shares with the pool the same treatment), and a pool rebuilt in another
database gets the same queue order and the same redundancy draw.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

MASK63 = (1 << 63) - 1


def pair_hashes(caption_keys: Iterable[str], clip_keys: Iterable[str], seed: int, salt: str) -> np.ndarray:
    """64-bit hashes of (seed, salt, caption id, clip id)."""
    prefix = f"{seed}\x1f{salt}\x1f".encode()
    return np.fromiter((int.from_bytes(hashlib.blake2b(prefix + c.encode() + b"\x1f" + v.encode(), digest_size=8).digest(), "little")
                        for c, v in zip(caption_keys, clip_keys)), dtype=np.uint64)


def queue_positions(caption_keys, clip_keys, seed: int) -> np.ndarray:
    """Each pair's place in the seeded queue order (a non-negative 63-bit key, smaller first)."""
    return (pair_hashes(caption_keys, clip_keys, seed, "order") & np.uint64(MASK63)).astype(np.int64)


def needs_second_label(caption_keys, clip_keys, seed: int, fraction: float) -> np.ndarray:
    """A seeded Bernoulli(fraction) draw per pair; about `fraction` of pairs are chosen."""
    u = pair_hashes(caption_keys, clip_keys, seed, "redundancy") >> np.uint64(11)
    return (u.astype(np.float64) / float(1 << 53)) < fraction
