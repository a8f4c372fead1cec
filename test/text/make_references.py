"""Trains the reference tokenizers of test/text with Hugging Face tokenizers
and SentencePiece (no downloads) and writes, for each, the ids and decodings
those libraries give for a set of texts (texts.cases.json, NAME.cases.json).
strata's tokenizers must give the same (TextTokenizerTest.cpp).

usage: make_references.py SHAKESPEARE OUT_DIR
"""
import copy
import json
import os
import random
import sys

import sentencepiece as spm
import tokenizers
from tokenizers import Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torture import LINES, TEXT as TORTURE  # noqa: E402

assert tokenizers.__version__ == "0.15.2", tokenizers.__version__

LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
BYTE_TOKENS = ["<0x%02X>" % b for b in range(256)]


def byte_level(files, out, specials, split=None, bos=None):
    """A GPT-2 (split=None) or Llama 3 (split=its regex) byte-level BPE."""
    tok = Tokenizer(models.BPE())
    if split is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train(files, trainer)
    if bos is None:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    else:
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single=bos + " $A", special_tokens=[(bos, tok.token_to_id(bos))])])
    tok.save(out)


def sentencepiece_style(files, out):
    """A Llama 2 / Mistral style BPE: ▁ for spaces, byte fallback, <s>."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True,
                               fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581",
                                                 add_prefix_space=True)
    # A small alphabet leaves rare characters (CJK, emoji) to byte fallback.
    trainer = trainers.BpeTrainer(
        vocab_size=1500, show_progress=False, limit_alphabet=120,
        special_tokens=["<unk>", "<s>", "</s>"] + BYTE_TOKENS)
    tok.train(files, trainer)
    j = json.loads(tok.to_str())
    # Byte tokens live in the model's vocabulary only, as in Llama 2's file.
    j["added_tokens"] = [a for a in j["added_tokens"]
                         if a["content"] not in BYTE_TOKENS]
    # Llama 2's tokenizer.json: the ▁ prefix and replacement as normalizers.
    j["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
    j["pre_tokenizer"] = None
    j["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    j["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "<s>", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    with open(out, "w") as f:
        json.dump(j, f, ensure_ascii=False)
    return j


def converted_llama(model, out):
    """The tokenizer.json transformers' LlamaTokenizerFast makes from a
    SentencePiece model, as Llama 2's own file was made."""
    from transformers import LlamaTokenizerFast
    tok = LlamaTokenizerFast(vocab_file=model, legacy=True, from_slow=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(tok.backend_tokenizer.to_str())


def variant(base, out, **fields):
    """`base` (a tokenizer.json object) with top-level or model fields set."""
    j = copy.deepcopy(base)
    for k, v in fields.items():
        if k.startswith("model_"):
            j["model"][k[len("model_"):]] = v
        else:
            j[k] = v
    with open(out, "w") as f:
        json.dump(j, f, ensure_ascii=False)


def sentencepiece_model(text_file, prefix, **options):
    spm.SentencePieceTrainer.train(
        input=text_file, model_prefix=prefix, vocab_size=1000,
        num_threads=1, minloglevel=2, **options)
    return prefix + ".model"


def texts(shakespeare):
    """The texts every tokenizer encodes; the first is all of Tiny
    Shakespeare (only the main tokenizers encode it: HF takes ~1.5 s)."""
    return [shakespeare, TORTURE, shakespeare[:100000], "", " ", "  ", "\n",
            " \n ", "a", "\t\t", "x" * 1000] + LINES


def hf_cases(path, texts, rng, full):
    tok = Tokenizer.from_file(path)
    out = []
    for i, text in enumerate(texts):
        if i == 0 and not full:
            continue
        case = {"text": i, "ids": tok.encode(text, add_special_tokens=False).ids}
        if len(text) < 10000:
            case["ids_special"] = tok.encode(text).ids
            case["decoded"] = tok.decode(case["ids_special"],
                                         skip_special_tokens=False)
            case["decoded_skip"] = tok.decode(case["ids_special"])
        out.append(case)
    # Arbitrary id sequences: partial UTF-8 and byte tokens in any order.
    n = max(tok.get_vocab().values()) + 1
    for _ in range(20):
        ids = [rng.randrange(n) for _ in range(rng.randrange(1, 40))]
        out.append({"random_ids": ids,
                    "decoded": tok.decode(ids, skip_special_tokens=False)})
    return out


def sp_cases(path, texts):
    sp = spm.SentencePieceProcessor(model_file=path)
    out = []
    for i, text in enumerate(texts):
        ids = sp.encode(text)
        case = {"text": i, "ids": ids}
        if len(text) < 10000:
            case["ids_special"] = [sp.bos_id()] + ids
            case["decoded"] = sp.decode(ids)
        out.append(case)
    return out


def main():
    shakespeare_path, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    with open(shakespeare_path, encoding="utf-8") as f:
        shakespeare = f.read()
    torture_path = os.path.join(out_dir, "torture.txt")
    with open(torture_path, "w", encoding="utf-8", newline="") as f:
        f.write(TORTURE)
    files = [shakespeare_path, torture_path]
    path = lambda name: os.path.join(out_dir, name)  # noqa: E731

    byte_level(files, path("gpt2.json"), ["<|endoftext|>"])
    gpt2 = json.load(open(path("gpt2.json")))
    variant(gpt2, path("gpt2_prefix.json"), pre_tokenizer={
        "type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
        "use_regex": True})
    byte_level(files, path("llama3.json"),
               ["<|begin_of_text|>", "<|end_of_text|>"], split=LLAMA3_PATTERN,
               bos="<|begin_of_text|>")
    llama2 = sentencepiece_style(files, path("llama2.json"))
    metaspace = {"type": "Metaspace", "replacement": "\u2581",
                 "add_prefix_space": True, "prepend_scheme": "first"}
    variant(llama2, path("llama2_metaspace.json"), normalizer=None,
            pre_tokenizer=metaspace,
            decoder=dict(metaspace, prepend_scheme="always"))
    variant(llama2, path("llama2_unk.json"), model_byte_fallback=False)

    # A merged corpus file for SentencePiece (it reads lines).
    corpus = path("corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write(shakespeare + TORTURE)
    sp_bpe = sentencepiece_model(corpus, path("sp_bpe"), model_type="bpe",
                                 byte_fallback=True,
                                 normalization_rule_name="identity",
                                 remove_extra_whitespaces=False)
    sp_unigram = sentencepiece_model(corpus, path("sp_unigram"),
                                     model_type="unigram")
    converted_llama(sp_bpe, path("llama2_converted.json"))

    all_texts = texts(shakespeare)
    rng = random.Random(1234)
    # "roundtrip": decode(encode(x)) == x promised for "all" texts, for those
    # without added-token text ("plain": Prepend runs again after a special
    # token and ▁-prefixes what follows), or "none" (prefix spaces added,
    # unknown characters, NFKC).
    refs = {}
    for name, roundtrip, full in [
            ("gpt2", "all", True), ("gpt2_prefix", "none", False),
            ("llama3", "all", True), ("llama2", "plain", True),
            ("llama2_metaspace", "none", False), ("llama2_unk", "none", False),
            ("llama2_converted", "plain", False)]:
        refs[name] = {"file": name + ".json", "roundtrip": roundtrip,
                      "cases": hf_cases(path(name + ".json"), all_texts, rng,
                                        full)}
    refs["sp_bpe"] = {"file": os.path.basename(sp_bpe), "roundtrip": "all",
                      "cases": sp_cases(sp_bpe, all_texts)}
    refs["sp_unigram"] = {"file": os.path.basename(sp_unigram),
                          "roundtrip": "none",
                          "cases": sp_cases(sp_unigram, all_texts)}
    # Raw UTF-8: LLVM 14's JSON parser misreads escaped astral characters
    # past plane 1 (HfTokenizer.cpp works around it). One file per tokenizer,
    # as each test reads one.
    for name, ref in [("texts", all_texts)] + list(refs.items()):
        with open(path(name + ".cases.json"), "w", encoding="utf-8") as f:
            json.dump(ref, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
