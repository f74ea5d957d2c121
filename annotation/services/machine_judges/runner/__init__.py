"""Machine judges the platform runs itself, over an OpenAI-compatible chat-completions API (vLLM,
TGI, Ollama, a hosted service): registration (endpoints.py), one pair's request with retries and
the run's budget (client.py), and a run over a pool or a judgment set as a job (run.py). The
request and answer formats are in annotation/formats/judge_chat.py, the frames in
annotation/formats/video_frames.py. Verdicts are MachineJudgment rows, never Label rows.
"""
