"""Clips' media: checking that raters' browsers can play every clip, and preparing copies that do.

- files.py       a clip's media as a local file ffmpeg may read (a URL fetched through the outbound policy)
- check.py       the media check: every clip's file read with ffmpeg, its findings stored (ClipMediaCheck)
- prepare.py     copies browsers play (H.264 MP4, index at the front), optionally cut and scaled
- operations.py  both as background operations (jobs with progress)
"""
