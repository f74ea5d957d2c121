"""The demo benchmark: short synthetic clips whose content is known, so captions truly describe
them and the right answers are known (scenes.py, video.py), and its loading through the same
import services real files go through (load.py: `load_demo` and tests)."""
