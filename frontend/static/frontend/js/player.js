/* Clip playback for the rater pages.

   SpanPlayer keeps one <video> inside its clip's span. The URL carries a media fragment
   (#t=start,end), so the browser fetches from and starts at the span; but a fragment stops at its
   end only once, and nothing stops a seek outside it. So the player also clamps every seek into
   the span and loops back to its start, checking on every animation frame while it plays
   (timeupdate fires only every ~250 ms, long enough to show frames past the end).

   It also counts how long the clip has really played (wall-clock time while its frames advance),
   which the judging page needs before it takes a vote, and notices a clip that loads slowly or
   stalls.

   PlayerControls binds the play/replay/speed/scrubber/sound controls to whichever player is on
   screen; the speed and sound choices carry over from clip to clip. */
import { withStudyWorkerToken } from "./api.js";
import { storage } from "./safe_storage.js";

const EDGE = 0.04; // seconds: a frame at 25 fps; closer than this to the end counts as the end
export const SPEEDS = [0.5, 0.75, 1, 1.25, 1.5, 2];

export class SpanPlayer extends EventTarget {
  constructor(video) {
    super();
    this.video = video;
    this.clip = null;
    this.start = 0;
    this.end = null;
    this.hasSpan = false;
    this.wantPlaying = false;
    this.failed = false;
    this.frame = 0;
    this.watched = 0; // seconds of real playback since load()
    this.lastTick = 0;
    this.lastTime = -1;
    this.lastAdvanceAt = 0; // performance.now() when a new frame last showed (or when play was asked for)
    video.addEventListener("loadedmetadata", () => this.onMetadata());
    for (const type of ["playing", "waiting", "loadeddata", "canplay"]) {
      video.addEventListener(type, () => this.dispatchEvent(new Event("state")));
    }
    video.addEventListener("seeking", () => this.clamp());
    video.addEventListener("play", () => this.watch());
    video.addEventListener("pause", () => this.onPause());
    video.addEventListener("ended", () => this.wantPlaying && this.restart());
    video.addEventListener("timeupdate", () => this.check());
    video.addEventListener("error", () => {
      if (!this.clip) return;
      this.failed = true;
      this.dispatchEvent(new Event("failed"));
    });
  }

  load(clip) {
    this.clip = clip;
    this.failed = false;
    this.wantPlaying = false;
    this.watched = 0;
    this.lastTime = -1;
    this.lastAdvanceAt = performance.now();
    this.hasSpan = clip.start != null && clip.end != null && clip.end > clip.start;
    this.start = this.hasSpan ? clip.start : 0;
    this.end = this.hasSpan ? clip.end : null;
    this.video.loop = !this.hasSpan;
    this.video.preload = "auto";
    const url = withStudyWorkerToken(clip.url);
    this.video.src = this.hasSpan ? `${url}#t=${clip.start},${clip.end}` : url;
    this.video.load();
  }

  get ready() {
    return this.video.readyState >= HTMLMediaElement.HAVE_CURRENT_DATA;
  }

  /* Asked to play, and no new frame for `ms` (never loaded, or stalled mid-way). */
  stuckFor(ms) {
    return !this.failed && this.wantPlaying && performance.now() - this.lastAdvanceAt >= ms;
  }

  get spanEnd() {
    if (this.end != null) return this.end;
    const d = this.video.duration;
    return Number.isFinite(d) ? d : this.clip?.duration ?? 0;
  }

  /* Seconds from the span's start, and the span's length: what the scrubber shows. */
  get position() {
    return Math.min(this.length, Math.max(0, this.video.currentTime - this.start));
  }

  get length() {
    return Math.max(0, this.spanEnd - this.start);
  }

  onMetadata() {
    const d = this.video.duration;
    if (this.hasSpan && Number.isFinite(d) && this.end > d) this.end = d; // a span past the file's end
    this.clamp();
  }

  clamp() {
    if (!this.clip) return;
    const t = this.video.currentTime;
    if (t < this.start - EDGE) this.video.currentTime = this.start;
    else if (this.hasSpan && t > this.spanEnd + EDGE) this.video.currentTime = this.wantPlaying ? this.start : this.spanEnd - EDGE;
  }

  check() {
    if (!this.hasSpan || this.video.seeking) return;
    const t = this.video.currentTime;
    if (t >= this.spanEnd - EDGE) {
      if (this.wantPlaying) this.restart();
      else if (t > this.spanEnd + EDGE) this.video.currentTime = this.spanEnd - EDGE;
    } else if (t < this.start - EDGE) {
      this.video.currentTime = this.start;
    }
  }

  watch() {
    cancelAnimationFrame(this.frame);
    this.lastTick = performance.now();
    const tick = () => {
      if (this.video.paused) return;
      this.check();
      this.countPlayback();
      this.frame = requestAnimationFrame(tick);
    };
    this.frame = requestAnimationFrame(tick);
  }

  /* Play time counts only while frames advance: a black stage waiting for data is not watching. */
  countPlayback() {
    const now = performance.now();
    const t = this.video.currentTime;
    if (this.ready && t !== this.lastTime && this.lastTime >= 0) {
      this.watched += Math.min(0.25, (now - this.lastTick) / 1000); // a frame after a hidden tab is not 10 s watched
      this.lastAdvanceAt = now;
    } else if (this.ready && this.lastTime < 0) {
      this.lastAdvanceAt = now;
    }
    this.lastTime = t;
    this.lastTick = now;
  }

  onPause() {
    // The fragment pauses the video once at the span's end: keep looping unless the rater paused.
    if (this.wantPlaying && this.hasSpan && this.video.currentTime >= this.spanEnd - 0.15) this.restart();
    this.dispatchEvent(new Event("state"));
  }

  restart() {
    this.video.currentTime = this.start;
    if (this.wantPlaying && this.video.paused) this.video.play().catch(() => {});
  }

  play() {
    if (!this.wantPlaying) this.lastAdvanceAt = performance.now();
    this.wantPlaying = true;
    const t = this.video.currentTime;
    if (t < this.start - EDGE || (this.hasSpan && t >= this.spanEnd - EDGE)) this.video.currentTime = this.start;
    this.dispatchEvent(new Event("state"));
    return this.video.play().catch(() => {
      // Autoplay with sound can be refused before the first key press; the rater presses Space.
      this.wantPlaying = false;
      this.dispatchEvent(new Event("state"));
    });
  }

  pause() {
    this.wantPlaying = false;
    this.video.pause();
    this.dispatchEvent(new Event("state"));
  }

  toggle() {
    return this.wantPlaying ? this.pause() : this.play();
  }

  replay() {
    this.video.currentTime = this.start;
    return this.play();
  }

  seekTo(offset) {
    const latest = Math.max(0, this.length - EDGE);
    this.video.currentTime = this.start + Math.min(Math.max(offset, 0), latest);
  }

  seekBy(delta) {
    this.seekTo(this.position + delta);
  }
}

export class PlayerControls {
  constructor(root, { storageKey = "rejudge.player" } = {}) {
    this.root = root;
    this.storageKey = storageKey;
    this.player = null;
    this.playButton = root.querySelector("[data-control=play]");
    this.replayButton = root.querySelector("[data-control=replay]");
    this.scrubber = root.querySelector("[data-control=scrubber]");
    this.time = root.querySelector("[data-control=time]");
    this.speed = root.querySelector("[data-control=speed]");
    this.muteButton = root.querySelector("[data-control=mute]");
    const saved = this.loadPreferences();
    this.rate = SPEEDS.includes(saved.rate) ? saved.rate : 1;
    this.muted = saved.muted !== false;
    this.speed.value = String(this.rate);
    this.playButton.addEventListener("click", () => this.player?.toggle());
    this.replayButton.addEventListener("click", () => this.player?.replay());
    this.scrubber.addEventListener("input", () => this.player?.seekTo(Number(this.scrubber.value)));
    this.speed.addEventListener("change", () => this.setRate(Number(this.speed.value)));
    this.muteButton.addEventListener("click", () => this.toggleMute());
    this.onState = () => this.renderState();
    const loop = () => {
      this.renderTime();
      requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
    this.renderMute();
  }

  loadPreferences() {
    try {
      return JSON.parse(storage.getItem(this.storageKey)) || {};
    } catch {
      return {};
    }
  }

  savePreferences() {
    storage.setItem(this.storageKey, JSON.stringify({ rate: this.rate, muted: this.muted }));
  }

  attach(player) {
    if (this.player) this.player.removeEventListener("state", this.onState);
    this.player = player;
    player.addEventListener("state", this.onState);
    player.video.playbackRate = this.rate;
    player.video.defaultPlaybackRate = this.rate;
    player.video.muted = this.muted;
    this.renderState();
  }

  setRate(rate) {
    this.rate = rate;
    this.speed.value = String(rate);
    if (this.player) this.player.video.playbackRate = rate;
    this.savePreferences();
  }

  stepRate(direction) {
    const index = SPEEDS.indexOf(this.rate);
    const next = SPEEDS[Math.min(SPEEDS.length - 1, Math.max(0, (index < 0 ? 2 : index) + direction))];
    this.setRate(next);
    return next;
  }

  toggleMute() {
    this.muted = !this.muted;
    if (this.player) this.player.video.muted = this.muted;
    this.savePreferences();
    this.renderMute();
  }

  renderMute() {
    this.muteButton.setAttribute("aria-pressed", String(!this.muted));
    this.muteButton.querySelector("[data-text]").textContent = this.muted ? "Sound off" : "Sound on";
  }

  /* The button's name is its text (no aria-label that could drift from it): Play, Pause, or
     Loading while it is asked to play and has no frame to show yet. */
  renderState() {
    const playing = Boolean(this.player && this.player.wantPlaying);
    const loading = playing && !this.player.failed && !this.player.ready;
    const text = loading ? "Loading…" : playing ? "Pause" : "Play";
    const label = this.playButton.querySelector("[data-text]");
    if (label.textContent !== text) label.textContent = text;
    this.playButton.dataset.playing = loading ? "loading" : String(playing);
  }

  renderTime() {
    if (!this.player || !this.player.clip) return;
    const length = this.player.length;
    const position = this.player.position;
    if (Number(this.scrubber.max) !== length && length > 0) this.scrubber.max = String(length);
    if (document.activeElement !== this.scrubber || !this.player.video.paused) this.scrubber.value = String(position);
    const text = `${position.toFixed(1)} / ${length.toFixed(1)} s`;
    if (this.time.textContent !== text) this.time.textContent = text;
    this.scrubber.setAttribute("aria-valuetext", `${position.toFixed(1)} of ${length.toFixed(1)} seconds`);
  }
}
