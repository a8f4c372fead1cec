"""Independent reference for strata's Megatron data code (test only).

Written from Megatron-LM's documented format and code (NVIDIA/Megatron-LM
commit 00caa53: megatron/core/datasets/indexed_dataset.py, gpt_dataset.py,
blended_dataset.py, blended_megatron_dataset_builder.py,
blended_megatron_dataset_config.py, utils.py, helpers.cpp), with numpy's
own RandomState, so the C++ code is checked against what Megatron computes.

Commands (results as JSON on stdout or in a file):
  read PREFIX                        the .idx fields and every sequence's tokens
  write PREFIX SPEC.json             writes .bin/.idx; SPEC: {"dtype_code": c,
                                     "documents": [[[tokens of a sequence], ...], ...]}
  gpt PREFIX SPLIT SPLIT_INDEX SEQ N SEED
                                     document/sample/shuffle index and every sample
  blend "W1 P1 W2 P2" SPLIT SPLIT_INDEX SEQ N SEED
                                     dataset_index, dataset_sample_index, every
                                     blended sample
  paragraphs TEXT_FILE               byte tokens of each paragraph (strata's
                                     documented .txt rule)
  hf-encode TOKENIZER_JSON JSONL KEY ids of each line's text by Hugging Face
                                     tokenizers (no special tokens added)
"""
import json
import math
import re
import struct
import sys

import numpy

HEADER = b"MMIDIDX\x00\x00"
DTYPES = {1: numpy.uint8, 2: numpy.int8, 3: numpy.int16, 4: numpy.int32,
          5: numpy.int64, 6: numpy.float64, 7: numpy.float32, 8: numpy.uint16}


# --- indexed_dataset.py: the MMIDIDX format ---------------------------------

def read_index(prefix):
    with open(prefix + ".idx", "rb") as f:
        buf = f.read()
    assert buf[:9] == HEADER, "bad header"
    (version,) = struct.unpack("<Q", buf[9:17])
    assert version == 1, "bad version"
    code = buf[17]
    count, doc_count = struct.unpack("<QQ", buf[18:34])
    off = 34
    lengths = numpy.frombuffer(buf, numpy.int32, count, off)
    off += lengths.nbytes
    pointers = numpy.frombuffer(buf, numpy.int64, count, off)
    off += pointers.nbytes
    docs = numpy.frombuffer(buf, numpy.int64, doc_count, off)
    off += docs.nbytes
    assert off == len(buf), "trailing bytes"
    assert docs[-1] == count
    return code, lengths, pointers, docs


def read_sequences(prefix, code, lengths, pointers):
    data = numpy.fromfile(prefix + ".bin", dtype=numpy.uint8)
    dt = numpy.dtype(DTYPES[code])
    out = []
    for n, p in zip(lengths, pointers):
        raw = data[int(p):int(p) + int(n) * dt.itemsize].tobytes()
        out.append(numpy.frombuffer(raw, dt).astype(numpy.int64))
    return out


def write_dataset(prefix, code, documents):
    dt = numpy.dtype(DTYPES[code])
    lengths, docs = [], [0]
    with open(prefix + ".bin", "wb") as f:
        for doc in documents:
            for seq in doc:
                f.write(numpy.array(seq, dtype=dt).tobytes(order="C"))
                lengths.append(len(seq))
            docs.append(len(lengths))
    pointers, ptr = [], 0
    for n in lengths:
        pointers.append(ptr)
        ptr += n * dt.itemsize
    with open(prefix + ".idx", "wb") as f:
        f.write(HEADER)
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", code))
        f.write(struct.pack("<Q", len(lengths)))
        f.write(struct.pack("<Q", len(docs)))
        f.write(numpy.array(lengths, dtype=numpy.int32).tobytes(order="C"))
        f.write(numpy.array(pointers, dtype=numpy.int64).tobytes(order="C"))
        f.write(numpy.array(docs, dtype=numpy.int64).tobytes(order="C"))


# --- the config: split and blend ----------------------------------------------

def normalize(weights):
    w = numpy.array(weights, dtype=numpy.float64)
    return (w / numpy.sum(w)).tolist()


def split_matrix(split):
    vector = list(map(float, re.findall(r"[.0-9]+", split)))
    vector = normalize(vector + [0.0] * (3 - len(vector)))
    expansion = [0]
    for v in vector:
        expansion.append(expansion[-1] + v)
    return [(a, b) if b > a else None for a, b in zip(expansion[:-1], expansion[1:])]


def split_indices(bookend, num_elements):
    beg = int(round(bookend[0] * float(num_elements)))
    end = int(round(bookend[1] * float(num_elements)))
    return numpy.arange(start=beg, stop=end, step=1, dtype=numpy.int32)


# --- gpt_dataset.py and helpers.cpp -------------------------------------------

def build_document_index(documents, num_epochs, rng, separate_final_epoch):
    if not separate_final_epoch or num_epochs == 1:
        document_index = numpy.mgrid[0:num_epochs, 0:len(documents)][1]
        document_index[:] = documents
        document_index = document_index.reshape(-1).astype(numpy.int32)
        rng.shuffle(document_index)
        return document_index
    first = build_document_index(documents, num_epochs - 1, rng, False)
    last = build_document_index(documents, 1, rng, False)
    return numpy.concatenate((first, last))


def build_sample_idx(sizes, document_idx, seq_length, num_epochs, tokens_per_epoch):
    num_samples = (num_epochs * tokens_per_epoch - 1) // seq_length
    sample_idx = [(0, 0)]
    index, offset = 0, 0
    while len(sample_idx) <= num_samples:
        remaining = seq_length + 1
        while remaining != 0:
            length = int(sizes[document_idx[index]]) - offset
            remaining -= length
            if remaining <= 0:
                offset += remaining + length - 1
                remaining = 0
            else:
                if index == len(document_idx) - 1:
                    assert len(sample_idx) == num_samples
                    offset = int(sizes[document_idx[index]]) - 1
                    break
                index += 1
                offset = 0
        sample_idx.append((index, offset))
    return numpy.array(sample_idx, dtype=numpy.int64)


def build_shuffle_index(num_samples, total_size, rng):
    dtype_ = numpy.uint32
    if total_size >= (numpy.iinfo(numpy.uint32).max - 1):
        dtype_ = numpy.int64
    first = numpy.arange(start=0, stop=num_samples, step=1, dtype=dtype_)
    rng.shuffle(first)
    if num_samples == total_size:
        return first
    last = numpy.arange(start=num_samples, stop=total_size, step=1, dtype=dtype_)
    rng.shuffle(last)
    return numpy.concatenate((first, last))


class GPT:
    def __init__(self, prefix, indices, num_samples, seq_length, seed):
        code, lengths, pointers, _ = read_index(prefix)
        self.sequences = read_sequences(prefix, code, lengths, pointers)
        self.seq_length = seq_length
        tokens_per_epoch = int(numpy.sum(lengths[indices]))
        num_epochs, num_tokens = 1, tokens_per_epoch
        while num_tokens < num_samples * seq_length + 1:
            num_epochs += 1
            num_tokens += tokens_per_epoch
        separate = False
        if num_epochs > 1:
            sans = ((num_epochs - 1) * tokens_per_epoch - 1) // seq_length
            from_final = num_samples - sans
            per_epoch = (tokens_per_epoch - 1) // seq_length
            assert 0 <= from_final <= per_epoch + 1
            separate = from_final < int(0.80 * per_epoch)
        rng = numpy.random.RandomState(seed)
        self.document_index = build_document_index(indices, num_epochs, rng, separate)
        self.sample_index = build_sample_idx(lengths, self.document_index, seq_length,
                                             num_epochs, tokens_per_epoch)
        total = self.sample_index.shape[0] - 1
        self.shuffle_index = build_shuffle_index(sans if separate else total, total, rng)
        self.num_epochs = num_epochs

    def __len__(self):
        return self.sample_index.shape[0] - 1

    def __getitem__(self, idx):
        idx = self.shuffle_index[idx]
        beg, beg_off = self.sample_index[idx]
        end, end_off = self.sample_index[idx + 1]
        if beg == end:
            seq = self.sequences[self.document_index[beg]]
            return seq[beg_off:end_off + 1]
        parts = []
        for i in range(beg, end + 1):
            seq = self.sequences[self.document_index[i]]
            offset = 0 if i > beg else beg_off
            parts.append(seq[offset:] if i < end else seq[offset:end_off + 1])
        text = numpy.concatenate(parts)
        assert len(text) == self.seq_length + 1
        return text


def build_blending_indices(weights, size):
    dataset_index = numpy.zeros(size, dtype=numpy.int16)
    dataset_sample_index = numpy.zeros(size, dtype=numpy.int64)
    current = [0] * len(weights)
    for s in range(size):
        sd = max(float(s), 1.0)
        errors = [weights[d] * sd - float(current[d]) for d in range(len(weights))]
        best = 0
        for d in range(1, len(weights)):
            if errors[d] > errors[best]:
                best = d
        dataset_index[s] = best
        dataset_sample_index[s] = current[best]
        current[best] += 1
    return dataset_index, dataset_sample_index


def gpt_command(prefix, split, split_index, seq, n, seed):
    bookend = split_matrix(split)[split_index]
    _, lengths, _, _ = read_index(prefix)
    ds = GPT(prefix, split_indices(bookend, len(lengths)), n, seq, seed)
    return {"num_epochs": ds.num_epochs,
            "document_index": ds.document_index.tolist(),
            "sample_index": ds.sample_index.reshape(-1).tolist(),
            "shuffle_index": [int(x) for x in ds.shuffle_index],
            "samples": [ds[i].tolist() for i in range(len(ds))]}


def blend_command(blend, split, split_index, seq, n, seed):
    words = blend.split()
    weights = normalize([float(w) for w in words[0::2]])
    prefixes = words[1::2]
    targets = [int(math.ceil(n * w)) for w in weights]
    buffers = [int(math.ceil(math.ceil(n * w) * (1 + 0.005))) for w in weights]
    bookend = split_matrix(split)[split_index]
    datasets = []
    for prefix, want in zip(prefixes, buffers):
        _, lengths, _, _ = read_index(prefix)
        datasets.append(GPT(prefix, split_indices(bookend, len(lengths)), want, seq, seed))
    size = sum(targets)
    dataset_index, dataset_sample_index = build_blending_indices(normalize(weights), size)
    samples = [datasets[d][s].tolist() for d, s in zip(dataset_index, dataset_sample_index)]
    return {"size": size, "dataset_index": dataset_index.tolist(),
            "dataset_sample_index": dataset_sample_index.tolist(), "samples": samples}


def paragraphs_command(path):
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    # Lines keep their "\n" except a last line without one.
    lines = [l + b"\n" for l in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    docs, current = [], b""
    for line in lines:
        if line.strip() == b"":
            if current:
                docs.append(current)
            current = b""
        else:
            current += line
    if current:
        docs.append(current)
    return [list(d) for d in docs]


def hf_encode_command(tokenizer_json, jsonl, key):
    import tokenizers  # the pinned test reference (test/requirements.txt)
    tok = tokenizers.Tokenizer.from_file(tokenizer_json)
    with open(jsonl, encoding="utf-8") as f:
        ids = [tok.encode(json.loads(line)[key], add_special_tokens=False).ids
               for line in f if line.strip()]
    return {"eos": tok.token_to_id("<|endoftext|>"), "ids": ids}


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "read":
        code, lengths, pointers, docs = read_index(args[0])
        out = {"dtype_code": code, "lengths": lengths.tolist(),
               "pointers": pointers.tolist(), "document_index": docs.tolist(),
               "sequences": [s.tolist() for s in read_sequences(args[0], code, lengths, pointers)]}
    elif cmd == "write":
        with open(args[1]) as f:
            spec = json.load(f)
        write_dataset(args[0], spec["dtype_code"], spec["documents"])
        out = {}
    elif cmd == "gpt":
        out = gpt_command(args[0], args[1], int(args[2]), int(args[3]), int(args[4]), int(args[5]))
    elif cmd == "blend":
        out = blend_command(args[0], args[1], int(args[2]), int(args[3]), int(args[4]), int(args[5]))
    elif cmd == "hf-encode":
        out = hf_encode_command(args[0], args[1], args[2])
    elif cmd == "paragraphs":
        out = paragraphs_command(args[0])
    else:
        raise SystemExit("unknown command " + cmd)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
