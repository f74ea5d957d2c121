"""What each demo clip shows, the captions that describe them, and which caption matches which clip.

A clip shows one coloured shape moving one way over a plain background. A caption names some of
the shape, colour, motion and background; it matches a clip when everything it names is in the
clip (the FIRE guideline: every element mentioned must be present). Specific captions were
written for one clip (their original positive); general ones match several clips, as in real
benchmarks where "a man is cooking" matches dozens of videos.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COLOURS = {"red": (220, 38, 38), "green": (22, 163, 74), "blue": (37, 99, 235), "yellow": (234, 179, 8)}
BACKGROUNDS = {"white": (245, 245, 245), "dark": (30, 30, 46)}


@dataclass(frozen=True)
class Scene:
    clip_id: str
    shape: str  # circle | square | triangle
    colour: str
    motion: str  # left-to-right | right-to-left | falling | rising
    background: str  # white | dark
    seconds: float = 4.0


SCENES: tuple[Scene, ...] = (
    Scene("demo01", "circle", "red", "left-to-right", "white"),
    Scene("demo02", "circle", "red", "falling", "dark"),
    Scene("demo03", "circle", "blue", "right-to-left", "white"),
    Scene("demo04", "square", "red", "left-to-right", "dark"),
    Scene("demo05", "square", "green", "rising", "white"),
    Scene("demo06", "square", "yellow", "falling", "white"),
    Scene("demo07", "triangle", "blue", "left-to-right", "dark"),
    Scene("demo08", "triangle", "green", "right-to-left", "white"),
    Scene("demo09", "triangle", "yellow", "rising", "dark"),
    Scene("demo10", "circle", "green", "left-to-right", "dark"),
    Scene("demo11", "square", "blue", "right-to-left", "dark"),
    Scene("demo12", "triangle", "red", "falling", "white"),
)

MOTION_WORDS = {"left-to-right": "moves from left to right", "right-to-left": "moves from right to left",
                "falling": "falls down", "rising": "rises up"}


@dataclass(frozen=True)
class DemoCaption:
    caption_id: str
    text: str
    original_clip: str
    needs: dict  # attribute -> value that a matching clip must have


def _specific(scene: Scene, n: int) -> DemoCaption:
    bg = "a white" if scene.background == "white" else "a dark"
    text = f"a {scene.colour} {scene.shape} {MOTION_WORDS[scene.motion]} on {bg} background"
    return DemoCaption(f"cap{n:02d}", text, scene.clip_id,
                       {"colour": scene.colour, "shape": scene.shape, "motion": scene.motion, "background": scene.background})


GENERAL = (
    ("a red shape moves across the screen", "demo01", {"colour": "red"}),
    ("a circle moves from left to right", "demo01", {"shape": "circle", "motion": "left-to-right"}),
    ("something falls down", "demo02", {"motion": "falling"}),
    ("a square on a dark background", "demo04", {"shape": "square", "background": "dark"}),
    ("a blue shape", "demo03", {"colour": "blue"}),
    ("a triangle rises up", "demo09", {"shape": "triangle", "motion": "rising"}),
    ("a green shape moves", "demo05", {"colour": "green"}),
    ("a shape moves from right to left on a white background", "demo03", {"motion": "right-to-left", "background": "white"}),
)


def demo_captions() -> list[DemoCaption]:
    captions = [_specific(scene, i + 1) for i, scene in enumerate(SCENES)]
    for j, (text, original, needs) in enumerate(GENERAL, start=len(captions) + 1):
        captions.append(DemoCaption(f"cap{j:02d}", text, original, needs))
    return captions


def relevant(caption: DemoCaption, scene: Scene) -> bool:
    return all(getattr(scene, attribute) == value for attribute, value in caption.needs.items())


def ground_truth() -> dict[str, set[str]]:
    """caption id -> the clips it truly matches (always including its original clip)."""
    return {c.caption_id: {s.clip_id for s in SCENES if relevant(c, s)} | {c.original_clip} for c in demo_captions()}


def demo_run_rows(quality: str, *, seed: int, depth: int = 10) -> list[tuple[str, str, int, float]]:
    """Rows (caption, clip, rank, score) of a synthetic model of the given quality.

    A model's score for a pair is truth * signal + noise: 'good' separates relevant clips well,
    'medium' somewhat, 'weak' barely. Scores strictly decrease with rank (trec_eval breaks ties
    by id otherwise).
    """
    signal = {"good": 2.5, "medium": 1.0, "weak": 0.3}[quality]
    rng = np.random.default_rng(seed)
    truth = ground_truth()
    rows = []
    for caption in demo_captions():
        scores = np.array([signal * (scene.clip_id in truth[caption.caption_id]) + rng.normal(0, 1) for scene in SCENES])
        order = np.argsort(-scores, kind="stable")[:depth]
        for rank, index in enumerate(order, start=1):
            rows.append((caption.caption_id, SCENES[index].clip_id, rank, round(float(10 - rank * 0.5 + 0.01 * scores[index]), 6)))
    return rows
