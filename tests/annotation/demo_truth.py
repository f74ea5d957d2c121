"""What a demo caption says, read from its words alone, and whether a demo clip shows it.

The demo's own `needs` dicts and stored answers are what is under test, so the truth here comes
only from the caption text and the scene definitions (what each clip shows)."""
from __future__ import annotations

from annotation.demo.scenes import COLOURS, SCENES, Scene

SHAPES = ("circle", "square", "triangle")
# Caption phrase -> the motion it names; "moves" or "moves across the screen" names none (every clip moves).
MOTIONS = {"left to right": "left-to-right", "right to left": "right-to-left", "falls": "falling", "rises": "rising"}
BACKGROUNDS = {"white background": "white", "dark background": "dark"}


def said(text: str) -> dict:
    """attribute -> value for each element the caption names."""
    words = text.lower().split()
    named = {}
    for colour in COLOURS:
        if colour in words:
            named["colour"] = colour
    for shape in SHAPES:
        if shape in words:
            named["shape"] = shape
    for phrase, motion in MOTIONS.items():
        if phrase in text.lower():
            named["motion"] = motion
    for phrase, background in BACKGROUNDS.items():
        if phrase in text.lower():
            named["background"] = background
    return named


def shows(scene: Scene, text: str) -> bool:
    """FIRE: relevant when every element the caption names is in the clip."""
    return all(getattr(scene, attribute) == value for attribute, value in said(text).items())


def scene_of(clip_id: str) -> Scene:
    return next(s for s in SCENES if s.clip_id == clip_id)


def true_answer(caption_text: str, clip_id: str) -> str:
    return "relevant" if shows(scene_of(clip_id), caption_text) else "not_relevant"


# How an explanation names a clip's value of each attribute (motion in the caption's own words).
SPOKEN = {"motion": {"left-to-right": "left to right", "right-to-left": "right to left", "falling": "fall",
                     "rising": "up"}}


def spoken(attribute: str, value: str) -> str:
    return SPOKEN.get(attribute, {}).get(value, value)
