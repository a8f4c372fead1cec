#!/usr/bin/env python3
"""A bounded load test of `strata serve` on 127.0.0.1.

Starts `strata serve CHECKPOINT --port 0` (or trains a small character GPT
on Tiny Shakespeare for a few steps when no checkpoint is given), then runs
CLIENTS concurrent clients x REQUESTS requests each, alternating Megatron
`PUT /api`, OpenAI `POST /v1/completions` and its streamed form, each asking
for TOKENS tokens. Prints p50/p99 latency (streamed: time to the last
event; also time to the first token), generated tokens/s over the run,
failed requests, and the server's RSS before, halfway and after (from
/proc).

usage: bench/serve_load.py [--checkpoint CKPT] [--clients 16] [--requests 50]
"""
import argparse
import http.client
import json
import os
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))

SPEC = """
name: "serve-bench"
family: GPT
vocab_size: 65
hidden: 128
layers: 4
heads: 4
seq_len: 256
micro_batch: 8
training { steps: 50 lr: 1e-3 warmup: 5 eval_every: 0 }
data { path: "%s" tokenizer: CHAR }
"""


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def one_request(port, i, tokens):
    kind = i % 3
    prompt = ["ROMEO:", "JULIET:\nO ", "First Citizen:\n"][i % 3]
    if kind == 0:
        method, path = "PUT", "/api"
        body = {"prompts": [prompt], "tokens_to_generate": tokens,
                "temperature": 0.8, "top_k": 40, "random_seed": i}
    else:
        method, path = "POST", "/v1/completions"
        body = {"prompt": prompt, "max_tokens": tokens, "temperature": 0.8,
                "top_p": 0.95, "seed": i, "stream": kind == 2}
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, body=json.dumps(body),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    first = None
    ntok = 0
    if kind == 2:
        buf = b""
        while True:
            chunk = r.read1(65536) if hasattr(r, "read1") else r.read(1)
            if not chunk:
                break
            if first is None:
                first = time.perf_counter() - t0
            buf += chunk
        events = [e for e in buf.decode().split("\n\n") if e.startswith("data: {")]
        ntok = len(events) - 1  # the last carries finish_reason
        ok = r.status == 200 and buf.endswith(b"data: [DONE]\n\n")
    else:
        payload = r.read()
        ok = r.status == 200
        if ok:
            d = json.loads(payload)
            ntok = (len(d["tokens"][0]) - len(prompt)) if kind == 0 else \
                d["usage"]["completion_tokens"]
    c.close()
    return ok, time.perf_counter() - t0, first, ntok


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", default=os.environ.get(
        "STRATA", os.path.join(HERE, "..", "build", "tools", "strata", "strata")))
    ap.add_argument("--checkpoint")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--max-batch", type=int, default=16)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = a.checkpoint
        if not ckpt:
            data = os.path.abspath(os.path.join(HERE, "..", "..", "shared", "data",
                                                "tinyshakespeare.txt"))
            spec = os.path.join(tmp, "spec.textproto")
            with open(spec, "w") as f:
                f.write(SPEC % data)
            subprocess.run([a.strata, "train", spec, "--out", os.path.join(tmp, "run"),
                            "--sample", "0"], check=True, capture_output=True)
            ckpt = os.path.join(tmp, "run", "checkpoint.bin")
        server = subprocess.Popen([a.strata, "serve", ckpt, "--port", "0",
                                   "--max-batch", str(a.max_batch)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            line = server.stdout.readline()
            port = int(line.rsplit(":", 1)[1])
            rss0 = rss_kib(server.pid)
            results = []
            lock = threading.Lock()

            def client(c):
                for k in range(a.requests):
                    i = c * a.requests + k
                    try:
                        r = one_request(port, i, a.tokens)
                    except Exception as e:  # counted as a failure
                        r = (False, 0.0, None, 0)
                        print("request failed:", e)
                    with lock:
                        results.append((i % 3, *r))

            # RSS when half of the requests are done: with steady memory the
            # second half adds nothing.
            half = []

            def watch():
                while len(results) < a.clients * a.requests // 2:
                    time.sleep(0.01)
                half.append(rss_kib(server.pid))

            t0 = time.perf_counter()
            threads = [threading.Thread(target=client, args=(c,))
                       for c in range(a.clients)] + [threading.Thread(target=watch)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
            rss1 = rss_kib(server.pid)
        finally:
            server.terminate()
            server.wait(60)
    lat = [r[2] for r in results if r[1]]
    ttft = [r[3] for r in results if r[1] and r[3] is not None]
    toks = sum(r[4] for r in results if r[1])
    failed = sum(1 for r in results if not r[1])
    print(f"{a.clients} clients x {a.requests} requests ({len(results)} total, "
          f"{a.tokens} tokens each, mixed /api, /v1/completions, streamed)")
    print(f"latency p50 {pct(lat, 50) * 1000:.0f} ms, p99 {pct(lat, 99) * 1000:.0f} ms; "
          f"streamed first event p50 {pct(ttft, 50) * 1000:.0f} ms")
    print(f"generated {toks} tokens in {wall:.1f} s: {toks / wall:.0f} tokens/s, "
          f"{len(results) / wall:.1f} requests/s")
    print(f"failed requests: {failed}")
    print(f"server RSS: {rss0 / 1024:.1f} MiB before, {half[0] / 1024:.1f} MiB at half "
          f"the requests, {rss1 / 1024:.1f} MiB after")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
