"""A loopback HTTP server that speaks the OpenAI chat-completions and Anthropic messages wire
formats well enough for the real SDKs, reports usage like the providers, and injects latency,
429 with Retry-After, 500 and dropped connections. It stands in for the provider (never for synth's
own code) in the tests and the refresh benchmark."""
from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections import Counter
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from synth.llm.tokens import count_messages, count_text


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # clients killed mid-request reset connections
        pass


class FakeLLMServer:
    def __init__(self, seed: int = 0, latency_s: tuple[float, float] = (0.0, 0.0), p429: float = 0.0,
                 p500: float = 0.0, pdrop: float = 0.0, fail_first: int = 0, retry_after: str = "0.01",
                 responder=None):
        self.rng = random.Random(seed)
        self.latency_s, self.p429, self.p500, self.pdrop = latency_s, p429, p500, pdrop
        self.fail_first, self.retry_after = fail_first, retry_after  # the first N requests get a 429
        self.responder = responder  # body -> scripted reply text (None: the default reply)
        self.lock = threading.Lock()
        self.answered = Counter()  # request body hash -> complete responses sent
        self.input_tokens = 0
        self.output_tokens = 0
        self.faults = Counter()
        self.requests = 0
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.batch_results: dict[str, str] = {}
        self.batches_created = 0
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
                self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

            def _send_bytes(self, status: int, data: bytes, content_type: str, headers: dict | None = None):
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                body = {} if self.path.endswith("/files") else json.loads(raw or b"{}")
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
                if self.path.endswith("/files"):
                    return self._send(200, outer.store_file(self.headers.get("content-type", ""), raw))
                if self.path.endswith("/messages/batches"):
                    return self._send(200, outer.anthropic_batch(body, f"http://{self.headers['host']}"))
                if self.path.endswith("/batches"):
                    return self._send(200, outer.openai_batch(body))
                payload = outer.answer(self.path, body)
                if payload is None:
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                self._send(200, payload)

            def do_GET(self):
                path = self.path.split("?")[0]
                parts = path.strip("/").split("/")
                if path.endswith("/content") and parts[-2] in outer.files:
                    return self._send_bytes(200, outer.files[parts[-2]], "application/octet-stream")
                if path.endswith("/results") and parts[-2] in outer.batch_results:
                    return self._send_bytes(200, outer.batch_results[parts[-2]].encode(), "application/binary")
                if path.endswith("/batches"):
                    data = [b for b in outer.batches.values() if b.get("object") == "batch"]
                    return self._send(200, {"object": "list", "data": data, "has_more": False,
                                            "first_id": data[0]["id"] if data else None,
                                            "last_id": data[-1]["id"] if data else None})
                if parts[-1] in outer.batches:
                    return self._send(200, outer.batches[parts[-1]])
                self._send(404, {"error": {"message": f"no route {path}"}})

        return Handler

    def answer(self, path: str, body: dict) -> dict | None:
        """A completed chat/messages response, billed (counted) once."""
        key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        text = (self.responder(body) if self.responder else None) or self.reply_for(body)
        model = body.get("model", "")
        if path.endswith("/chat/completions"):
            n = int(body.get("n") or 1)
            tin = count_messages(body["messages"], model, "openai")
            tout = count_text(text, model, "openai") * n
            payload = {"id": "chatcmpl-" + key[:12], "object": "chat.completion", "created": int(time.time()),
                       "model": model, "choices": [
                           {"index": i, "message": {"role": "assistant", "content": f"{text} #{i}" if i else text},
                            "finish_reason": "stop", "logprobs": None} for i in range(n)],
                       "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout}}
        elif path.endswith("/messages"):
            messages = body["messages"] + ([{"role": "system", "content": body["system"]}] if body.get("system") else [])
            tin, tout = count_messages(messages, model, "anthropic"), count_text(text, model, "anthropic")
            payload = {"id": "msg_" + key[:12], "type": "message", "role": "assistant", "model": model,
                       "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": tin, "output_tokens": tout}}
        else:
            return None
        with self.lock:
            self.answered[key] += 1
            self.input_tokens += tin
            self.output_tokens += tout
        return payload

    def store_file(self, content_type: str, raw: bytes) -> dict:
        message = BytesParser().parsebytes(b"content-type: " + content_type.encode() + b"\r\n\r\n" + raw)
        part = next(p for p in message.walk() if p.get_filename())
        data = part.get_payload(decode=True)
        with self.lock:
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = data
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": part.get_filename(), "purpose": "batch", "status": "processed"}

    def openai_batch(self, body: dict) -> dict:
        lines = [json.loads(x) for x in self.files[body["input_file_id"]].decode().splitlines() if x.strip()]
        out = []
        for line in lines:
            payload = self.answer("/v1/chat/completions", line["body"])
            out.append(json.dumps({"id": "batch_req_" + line["custom_id"], "custom_id": line["custom_id"],
                                   "response": {"status_code": 200, "request_id": "req", "body": payload},
                                   "error": None}))
        with self.lock:
            self.batches_created += 1
            batch_id = f"batch_{self.batches_created}"
            output_id = f"file-out-{self.batches_created}"
            self.files[output_id] = ("\n".join(out) + "\n").encode()
            batch = {"id": batch_id, "object": "batch", "endpoint": body["endpoint"], "errors": None,
                     "input_file_id": body["input_file_id"], "completion_window": "24h", "status": "completed",
                     "output_file_id": output_id, "error_file_id": None, "created_at": int(time.time()),
                     "metadata": body.get("metadata"),
                     "request_counts": {"total": len(lines), "completed": len(lines), "failed": 0}}
            self.batches[batch_id] = batch
        return batch

    def anthropic_batch(self, body: dict, base: str) -> dict:
        out = []
        for entry in body["requests"]:
            message = self.answer("/v1/messages", entry["params"])
            out.append(json.dumps({"custom_id": entry["custom_id"], "result": {"type": "succeeded", "message": message}}))
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with self.lock:
            self.batches_created += 1
            batch_id = f"msgbatch_{self.batches_created}"
            self.batch_results[batch_id] = "\n".join(out) + "\n"
            batch = {"id": batch_id, "type": "message_batch", "processing_status": "ended",
                     "request_counts": {"processing": 0, "succeeded": len(out), "errored": 0, "canceled": 0,
                                        "expired": 0},
                     "created_at": now, "ended_at": now, "expires_at": now, "archived_at": None,
                     "cancel_initiated_at": None, "results_url": f"{base}/v1/messages/batches/{batch_id}/results"}
            self.batches[batch_id] = batch
        return batch
