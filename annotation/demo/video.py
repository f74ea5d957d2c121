"""Renders a demo scene to an H.264 MP4 with the ffmpeg binary that the imageio-ffmpeg wheel ships."""
from __future__ import annotations

import subprocess
from pathlib import Path

import imageio_ffmpeg
import numpy as np

from .scenes import BACKGROUNDS, COLOURS, Scene

WIDTH, HEIGHT, FPS = 320, 240, 15  # sizes are multiples of 16, so ffmpeg does not resize
RADIUS = 28


def _position(scene: Scene, t: float) -> tuple[float, float]:
    """Centre of the shape at time fraction t in [0, 1]."""
    margin = RADIUS + 6
    if scene.motion == "left-to-right":
        return margin + t * (WIDTH - 2 * margin), HEIGHT / 2
    if scene.motion == "right-to-left":
        return WIDTH - margin - t * (WIDTH - 2 * margin), HEIGHT / 2
    if scene.motion == "falling":
        return WIDTH / 2, margin + t * (HEIGHT - 2 * margin)
    return WIDTH / 2, HEIGHT - margin - t * (HEIGHT - 2 * margin)  # rising


def render_frame(scene: Scene, t: float, yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
    frame = np.empty((HEIGHT, WIDTH, 3), dtype=np.uint8)
    frame[:] = BACKGROUNDS[scene.background]
    cx, cy = _position(scene, t)
    if scene.shape == "circle":
        mask = (xx - cx) ** 2 + (yy - cy) ** 2 <= RADIUS**2
    elif scene.shape == "square":
        mask = (np.abs(xx - cx) <= RADIUS * 0.85) & (np.abs(yy - cy) <= RADIUS * 0.85)
    else:  # an upward triangle: below the two slanted edges, above the base
        top, base = cy - RADIUS, cy + RADIUS * 0.8
        half_width = (yy - top) / (base - top) * RADIUS
        mask = (yy >= top) & (yy <= base) & (np.abs(xx - cx) <= half_width)
    frame[mask] = COLOURS[scene.colour]
    # A thin progress strip at the bottom makes seeking visible to a rater (and a test).
    frame[HEIGHT - 4:, : int(WIDTH * t)] = (120, 120, 120)
    return frame


def render_clip(scene: Scene, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    frames = int(round(scene.seconds * FPS))
    yy, xx = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float32)
    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24",
               "-s", f"{WIDTH}x{HEIGHT}", "-r", str(FPS), "-i", "-", "-c:v", "libx264", "-preset", "veryfast",
               "-pix_fmt", "yuv420p", "-g", str(FPS), "-movflags", "+faststart", str(target)]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    for i in range(frames):
        process.stdin.write(render_frame(scene, i / max(1, frames - 1), yy, xx).tobytes())
    process.stdin.close()
    error = process.stderr.read().decode(errors="replace")
    if process.wait() != 0:
        raise RuntimeError(f"ffmpeg failed for {target.name}: {error}")
    return target
