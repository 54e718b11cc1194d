"""A loopback HTTP server that speaks the OpenAI chat-completions and Anthropic messages wire
formats well enough for the real SDKs, reports usage like the providers, and injects latency,
429 with Retry-After, 500 and dropped connections. Used by the tests only."""
from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from synth.llm.tokens import count_messages, count_text


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # clients killed mid-request reset connections
        pass


class FakeLLMServer:
    def __init__(self, seed: int = 0, latency_s: tuple[float, float] = (0.0, 0.0), p429: float = 0.0,
                 p500: float = 0.0, pdrop: float = 0.0, fail_first: int = 0, retry_after: str = "0.01"):
        self.rng = random.Random(seed)
        self.latency_s, self.p429, self.p500, self.pdrop = latency_s, p429, p500, pdrop
        self.fail_first, self.retry_after = fail_first, retry_after  # the first N requests get a 429
        self.lock = threading.Lock()
        self.answered = Counter()  # request body hash -> complete responses sent
        self.input_tokens = 0
        self.output_tokens = 0
        self.faults = Counter()
        self.requests = 0
        self.server = _QuietServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def reply_for(body: dict) -> str:
        """Deterministic text whose length depends on the request (as real answers vary)."""
        digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
        words = 5 + int(digest[:2], 16) % 40
        return " ".join(f"w{digest[i % 60:i % 60 + 4]}" for i in range(words))

    def _decide(self) -> str:
        with self.lock:
            self.requests += 1
            roll = self.rng.random()
            delay = self.rng.uniform(*self.latency_s)
        time.sleep(delay)
        if self.requests <= self.fail_first:
            return "429"
        if roll < self.pdrop:
            return "drop"
        if roll < self.pdrop + self.p429:
            return "429"
        if roll < self.pdrop + self.p429 + self.p500:
            return "500"
        return "ok"

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, payload: dict, headers: dict | None = None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                decision = outer._decide()
                with outer.lock:
                    outer.faults[decision] += 1
                if decision == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if decision == "429":
                    return self._send(429, {"error": {"type": "rate_limit_error", "message": "slow down"}},
                                      {"retry-after": outer.retry_after})
                if decision == "500":
                    return self._send(500, {"error": {"type": "server_error", "message": "boom"}})
                key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
                text = outer.reply_for(body)
                model = body.get("model", "")
                if self.path.endswith("/chat/completions"):
                    n = int(body.get("n") or 1)
                    tin = count_messages(body["messages"], model, "openai")
                    tout = count_text(text, model, "openai") * n
                    payload = {"id": "chatcmpl-" + key[:12], "object": "chat.completion", "created": int(time.time()),
                               "model": model, "choices": [
                                   {"index": i, "message": {"role": "assistant", "content": f"{text} #{i}" if i else text},
                                    "finish_reason": "stop", "logprobs": None} for i in range(n)],
                               "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout}}
                elif self.path.endswith("/messages"):
                    messages = body["messages"] + ([{"role": "system", "content": body["system"]}]
                                                   if body.get("system") else [])
                    tin, tout = count_messages(messages, model, "anthropic"), count_text(text, model, "anthropic")
                    payload = {"id": "msg_" + key[:12], "type": "message", "role": "assistant", "model": model,
                               "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                               "stop_sequence": None, "usage": {"input_tokens": tin, "output_tokens": tout}}
                else:
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                with outer.lock:
                    outer.answered[key] += 1
                    outer.input_tokens += tin
                    outer.output_tokens += tout
                self._send(200, payload)

        return Handler
