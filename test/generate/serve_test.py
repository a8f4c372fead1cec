#!/usr/bin/env python3
"""`strata serve` end to end, against `strata generate` on the same checkpoint.

Trains a tiny character GPT for a few steps (data made here), starts
`strata serve CKPT --port 0` on 127.0.0.1 and checks:
  - PUT /api (Megatron) and POST /v1/completions (whole and streamed) give
    the tokens and text `strata generate --json` gives for the same prompts,
    seed and sampling settings (greedy and sampled);
  - concurrent requests (batched by the server) each get the CLI's answer;
  - 200 malformed requests each get HTTP 400 (413 for an oversized body)
    with a message, and the server stays up;
  - `strata generate` streams (text arrives before the process ends) and
    refuses bad flags.
All traffic goes to 127.0.0.1; every request has a timeout.

usage: serve_test.py STRATA_BINARY
"""
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

STRATA = sys.argv[1]
TIMEOUT = 60

SPEC = """
name: "serve-test"
family: GPT
vocab_size: 40
hidden: 64
layers: 2
heads: 4
seq_len: 64
micro_batch: 4
training { steps: 20 lr: 3e-3 warmup: 2 eval_every: 0 seed: 7 }
data { path: "data.txt" tokenizer: CHAR }
"""

TEXT = ("First Citizen:\nBefore we proceed any further, hear me speak.\n\n"
        "All:\nSpeak, speak.\n\nFirst Citizen:\nYou are all resolved rather "
        "to die than to famish?\n\nAll:\nResolved. resolved.\n\n") * 40


def strata(*args, check=True):
    r = subprocess.run([STRATA, *args], capture_output=True, text=True,
                       timeout=TIMEOUT)
    if check and r.returncode != 0:
        sys.exit(f"strata {' '.join(args)} failed ({r.returncode}):\n{r.stderr}")
    return r


def request(port, method, path, body, raw=False):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    data = body if raw else json.dumps(body)
    c.request(method, path, body=data,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    payload = r.read()
    c.close()
    return r.status, payload


def api(port, body):
    status, payload = request(port, "PUT", "/api", body)
    assert status == 200, (status, payload)
    return json.loads(payload)


def completion(port, body):
    status, payload = request(port, "POST", "/v1/completions", body)
    assert status == 200, (status, payload)
    if not body.get("stream"):
        return json.loads(payload)
    events = payload.decode().split("\n\n")
    assert events[-1] == "" and events[-2] == "data: [DONE]", events[-3:]
    chunks = [json.loads(e[len("data: "):]) for e in events[:-2]]
    return chunks


def cli(ckpt, prompts, tokens, temperature, top_k, top_p, seed):
    args = ["generate", ckpt, "--json", "--tokens", str(tokens),
            "--temperature", str(temperature), "--top-k", str(top_k),
            "--top-p", str(top_p), "--seed", str(seed), "--context", "stop"]
    for p in prompts:
        args += ["--prompt", p]
    out = strata(*args).stdout.strip().split("\n")
    return [json.loads(line) for line in out]


def close(a, b, tol):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


def check_against_cli(port, ckpt):
    prompts = ["First Citizen:\n", "All:\nSpeak", "You are"]
    for temp, top_k, top_p, seed in [(0, 0, 1.0, 1), (0.9, 5, 1.0, 7),
                                     (1.2, 0, 0.8, 99)]:
        ref = cli(ckpt, prompts, 24, temp, top_k, top_p, seed)
        body = {"prompts": prompts, "tokens_to_generate": 24,
                "temperature": temp, "top_k": top_k, "random_seed": seed,
                "logprobs": True}
        if top_p < 1:
            body["top_p"] = top_p
        got = api(port, body)
        for i, p in enumerate(prompts):
            assert got["text"][i] == p + ref[i]["text"], (got["text"][i], ref[i])
            n = len(got["tokens"][i]) - len(ref[i]["tokens"])
            assert got["tokens"][i][n:] == ref[i]["tokens"]
            assert "".join(got["segments"][i]) == got["text"][i]
            # Same engine, same batch: logprobs agree to f32 rounding.
            assert close(got["logprobs"][i][n - 1:], ref[i]["logprobs"], 1e-4)
            assert len(got["logprobs"][i]) == len(got["tokens"][i]) - 1
        # OpenAI, one prompt at a time (stream index 0 = the CLI's first).
        ref0 = ref[0]
        oa = {"prompt": prompts[0], "max_tokens": 24, "temperature": temp,
              "top_k": top_k, "top_p": top_p, "seed": seed}
        whole = completion(port, oa)
        assert whole["choices"][0]["text"] == ref0["text"], (whole, ref0)
        assert whole["usage"]["completion_tokens"] == len(ref0["tokens"])
        chunks = completion(port, dict(oa, stream=True))
        assert "".join(c["choices"][0]["text"] for c in chunks) == ref0["text"]
        assert chunks[-1]["choices"][0]["finish_reason"] == ref0["finish_reason"]
        assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
        lp = completion(port, dict(oa, logprobs=2))["choices"][0]["logprobs"]
        assert close(lp["token_logprobs"], ref0["logprobs"], 1e-4)
        assert all(len(t) <= 2 for t in lp["top_logprobs"])


def check_concurrent(port, ckpt):
    prompts = [f"All:\n{w}" for w in ["Speak", "You", "Before", "hear", "die",
                                       "Resolved", "First", "famish"]]
    ref = [cli(ckpt, [p], 30, 0, 0, 1.0, 1)[0]["text"] for p in prompts]
    results = [None] * (2 * len(prompts))

    def worker(i):
        p = prompts[i % len(prompts)]
        if i < len(prompts):
            results[i] = api(port, {"prompts": [p], "tokens_to_generate": 30,
                                    "temperature": 0})["text"][0][len(p):]
        else:
            chunks = completion(port, {"prompt": p, "max_tokens": 30,
                                       "temperature": 0, "stream": True})
            results[i] = "".join(c["choices"][0]["text"] for c in chunks)

    threads = [threading.Thread(target=worker, args=(i,))
               for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    for i, r in enumerate(results):
        assert r == ref[i % len(prompts)], (i, r, ref[i % len(prompts)])


def malformed_bodies(rng):
    """200 bodies every one of which must be refused."""
    good_api = {"prompts": ["All:"], "tokens_to_generate": 4}
    good_oa = {"prompt": "All:", "max_tokens": 4}
    wrong = [None, True, -1, 1.5, "x", [], {}, [1], {"a": 1}, 10**30, -10**30]
    out = []
    for i in range(200):
        kind = i % 8
        base = dict(good_api if i % 2 == 0 else good_oa)
        path, method = ("/api", "PUT") if i % 2 == 0 else ("/v1/completions", "POST")
        text = json.dumps(base)
        if kind == 0:  # truncated JSON
            body = text[:rng.randrange(0, len(text) - 1)]
        elif kind == 1:  # random bytes
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        elif kind == 2:  # wrong type for a known field
            key = rng.choice(["prompts" if i % 2 == 0 else "prompt",
                              "temperature", "top_k", "logprobs",
                              "tokens_to_generate" if i % 2 == 0 else "max_tokens"])
            v = rng.choice(wrong)
            # Swap out the values that are valid for that field.
            if v is None or (key == "prompt" and v == "x"):
                v = 5  # null means "absent"; a string is a prompt
            if key == "temperature" and v in (1.5, True):
                v = "hot"
            if key == "logprobs" and v is True:
                v = "yes"  # a valid Megatron logprobs
            base[key] = v
            body = json.dumps(base)
        elif kind == 3:  # unknown field
            base["x_%d" % i] = 1
            body = json.dumps(base)
        elif kind == 4:  # prompt longer than the context
            k = "prompts" if i % 2 == 0 else "prompt"
            base[k] = ["All:" * 30] if i % 2 == 0 else "All:" * 30
            body = json.dumps(base)
        elif kind == 5:  # not an object, or deep nesting
            body = rng.choice(["[]", "null", "1", "\"x\"", "[" * 300000 + "]" * 300000])
        elif kind == 6:  # characters outside the vocabulary, invalid UTF-8
            k = "prompts" if i % 2 == 0 else "prompt"
            base[k] = ["Zebra \u2603"] if i % 2 == 0 else "Zebra \u2603"
            body = json.dumps(base) if i % 4 else b'{"prompt": "\xff\xfe"}'
        else:  # out of range
            key, v = rng.choice([("temperature", 1e6), ("top_k", -1),
                                 ("top_p", 7.0)])
            base[key] = v
            body = json.dumps(base)
        out.append((method, path, body))
    return out


def check_malformed(port):
    rng = random.Random(5)
    for method, path, body in malformed_bodies(rng):
        status, payload = request(port, method, path, body, raw=True)
        assert status == 400, (status, path, body, payload)
        msg = json.loads(payload)
        msg = msg if isinstance(msg, str) else msg["error"]["message"]
        assert msg, (path, body)
    big = json.dumps({"prompt": "a" * (2 << 20)})
    status, _ = request(port, "POST", "/v1/completions", big, raw=True)
    assert status == 413, status


def check_cli(ckpt):
    r = strata("generate", ckpt, "--temperature", "nan", check=False)
    assert r.returncode == 1 and "--temperature" in r.stderr, r.stderr
    for flag, value in [("--top-p", "0"), ("--top-k", "-1"), ("--tokens", "-5"),
                        ("--context", "wrap"), ("--seed", "-1"), ("--top-p", "inf")]:
        r = strata("generate", ckpt, flag, value, check=False)
        assert r.returncode == 1 and flag in r.stderr, (flag, r.stderr)
    # Streaming: text arrives while generation is still going.
    p = subprocess.Popen([STRATA, "generate", ckpt, "--prompt", "All:",
                          "--tokens", "100000", "--no-kv-cache"],
                         stdout=subprocess.PIPE)
    first = p.stdout.read(8)
    running = p.poll() is None
    p.kill()
    p.wait()
    assert first.startswith(b"All:") and running, (first, running)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "data.txt"), "w") as f:
            f.write(TEXT)
        with open(os.path.join(tmp, "spec.textproto"), "w") as f:
            f.write(SPEC)
        out = os.path.join(tmp, "run")
        strata("train", os.path.join(tmp, "spec.textproto"), "--out", out,
               "--sample", "0")
        ckpt = os.path.join(out, "checkpoint.bin")
        check_cli(ckpt)
        server = subprocess.Popen([STRATA, "serve", ckpt, "--port", "0"],
                                  stdout=subprocess.PIPE, text=True)
        try:
            line = server.stdout.readline()
            assert "listening on http://127.0.0.1:" in line, line
            port = int(line.rsplit(":", 1)[1])
            check_against_cli(port, ckpt)
            check_concurrent(port, ckpt)
            check_malformed(port)
            status, body = request(port, "GET", "/health", "", raw=True)
            assert status == 200 and server.poll() is None
        finally:
            server.terminate()
            rc = server.wait(TIMEOUT)
        assert rc == 143, rc  # SIGTERM: a clean stop
    print("serve_test: ok")


if __name__ == "__main__":
    main()
