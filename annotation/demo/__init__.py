"""The demo benchmark: short synthetic clips whose content is known, so captions truly describe
them and the right answers are known (used by `load_demo` and by tests)."""
