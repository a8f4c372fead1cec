//===- HfTokenizer.cpp - Hugging Face tokenizer.json BPE tokenizers -------===//
#include "runtime/text/HfTokenizer.h"

#include "runtime/text/HfJson.h"

#include "runtime/text/Utf8.h"

#include "llvm/ADT/StringExtras.h"

namespace strata::text {

using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

namespace {
/// Pre-tokens whose ids one encode() call remembers; past this many the
/// memory is cleared (a long text repeats its words well before).
constexpr size_t kWordCacheSize = 1 << 16;

/// Names of the special tokens taken for EOS and padding when a
/// tokenizer.json does not say (it never does; tokenizer_config.json does).
const char *const kEosNames[] = {"</s>", "<|endoftext|>", "<|end_of_text|>",
                                 "<eos>"};
const char *const kPadNames[] = {"<pad>", "<|pad|>", "[PAD]"};

/// Start of the whitespace that ends `s` (valid UTF-8).
size_t trailingSpaceStart(llvm::StringRef s) {
  size_t end = s.size();
  while (end > 0) {
    size_t b = end - 1;
    while (b > 0 && (static_cast<uint8_t>(s[b]) & 0xC0) == 0x80)
      --b;
    size_t pos = b;
    if (!isWhitespace(nextCodePoint(s, pos)))
      break;
    end = b;
  }
  return end;
}

/// Bytes of whitespace that start `s`.
size_t leadingSpaceLength(llvm::StringRef s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t at = pos;
    if (!isWhitespace(nextCodePoint(s, at)))
      break;
    pos = at;
  }
  return pos;
}
} // namespace

llvm::Expected<std::unique_ptr<TextTokenizer>>
HfTokenizer::fromJSON(llvm::StringRef content, llvm::StringRef name) {
  auto fail = [&](llvm::Error e) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        name + ": error: " + llvm::toString(std::move(e)));
  };
  auto root = llvm::json::parse(rawAstral(content));
  if (!root)
    return fail(fieldError("malformed JSON", llvm::toString(root.takeError())));
  const Object *obj = root->getAsObject();
  if (!obj)
    return fail(fieldError("tokenizer.json", "expected a JSON object"));
  auto model = parseBpeModel(*obj);
  if (!model)
    return fail(model.takeError());
  std::unique_ptr<HfTokenizer> t(new HfTokenizer(std::move(*model)));
  if (llvm::Error e = t->parse(*obj))
    return fail(std::move(e));
  return std::unique_ptr<TextTokenizer>(std::move(t));
}

llvm::Error HfTokenizer::parse(const Object &root) {
  for (const char *key : {"truncation", "padding"})
    if (const Value *v = root.get(key); v && v->kind() != Value::Null)
      return fieldError(key, "must be null (strata encodes whole texts; "
                             "batching pads elsewhere)");
  static const Value null(nullptr);
  auto field = [&](const char *key) -> const Value & {
    const Value *v = root.get(key);
    return v ? *v : null;
  };
  if (llvm::Error e = parseAddedTokens(root))
    return e;
  if (llvm::Error e =
          parseNormalizer(field("normalizer"), "normalizer", normalizers_))
    return e;
  if (llvm::Error e = parsePreTokenizer(field("pre_tokenizer"), "pre_tokenizer",
                                        preTokenizers_))
    return e;
  hasDecoder_ = field("decoder").kind() != Value::Null;
  if (llvm::Error e = parseDecoder(field("decoder"), "decoder", decoders_))
    return e;
  template_ = {-1};
  if (llvm::Error e =
          parsePostProcessor(field("post_processor"), "post_processor"))
    return e;

  vocabSize_ = model_.size();
  for (const AddedToken &a : added_)
    vocabSize_ = std::max<int64_t>(vocabSize_, a.id + 1);
  special_.unk = model_.unkId();
  if (template_.front() >= 0 && template_.size() > 1)
    special_.bos = template_.front();
  for (const AddedToken &a : added_) {
    if (!a.special)
      continue;
    if (special_.eos < 0 && llvm::is_contained(kEosNames, a.content))
      special_.eos = a.id;
    if (special_.pad < 0 && llvm::is_contained(kPadNames, a.content))
      special_.pad = a.id;
  }
  return llvm::Error::success();
}

llvm::Error HfTokenizer::parseAddedTokens(const Object &root) {
  const Value *v = root.get("added_tokens");
  if (!v || v->kind() == Value::Null)
    return llvm::Error::success();
  const Array *arr = v->getAsArray();
  if (!arr)
    return fieldError("added_tokens", "expected an array");
  for (size_t i = 0; i < arr->size(); ++i) {
    std::string path = "added_tokens[" + std::to_string(i) + "]";
    const Object *o = (*arr)[i].getAsObject();
    auto id = o ? o->getInteger("id") : llvm::None;
    auto content = o ? o->getString("content") : llvm::None;
    if (!id || *id < 0 || *id > INT32_MAX || !content || content->empty())
      return fieldError(path, "expected an object with an integer \"id\" and "
                              "a non-empty string \"content\"");
    if (o->getBoolean("single_word").getValueOr(false))
      return fieldError(path + ".single_word", "single_word added tokens are "
                                               "not supported");
    AddedToken a{content->str(),
                 int32_t(*id),
                 o->getBoolean("special").getValueOr(false),
                 o->getBoolean("normalized").getValueOr(true),
                 o->getBoolean("lstrip").getValueOr(false),
                 o->getBoolean("rstrip").getValueOr(false)};
    addedById_[a.id] = uint32_t(added_.size());
    added_.push_back(std::move(a));
  }
  for (bool normalized : {false, true}) {
    std::vector<uint32_t> order;
    for (uint32_t k = 0; k < added_.size(); ++k)
      if (added_[k].normalized == normalized)
        order.push_back(k);
    if (order.empty())
      continue;
    llvm::stable_sort(order, [&](uint32_t a, uint32_t b) {
      return added_[a].content.size() > added_[b].content.size();
    });
    auto &index = byFirstByte_[normalized];
    index.resize(256);
    for (uint32_t k : order)
      index[static_cast<uint8_t>(added_[k].content[0])].push_back(k);
  }
  return llvm::Error::success();
}

llvm::Error HfTokenizer::parsePostProcessor(const Value &v,
                                            llvm::StringRef path) {
  if (v.kind() == Value::Null)
    return llvm::Error::success();
  const Object *o = v.getAsObject();
  auto type = o ? o->getString("type") : llvm::None;
  if (!type)
    return fieldError(path, "expected an object with a string \"type\"");
  std::vector<int32_t> single; // this processor's template
  if (*type == "ByteLevel") {
    return llvm::Error::success();
  } else if (*type == "Sequence") {
    const Array *items = o->getArray("processors");
    if (!items)
      return fieldError((path + ".processors").str(), "expected an array");
    for (size_t i = 0; i < items->size(); ++i)
      if (llvm::Error e = parsePostProcessor(
              (*items)[i],
              (path + ".processors[" + llvm::Twine(i) + "]").str()))
        return e;
    return llvm::Error::success();
  } else if (*type == "TemplateProcessing") {
    const Array *items = o->getArray("single");
    const Object *specials = o->getObject("special_tokens");
    if (!items || !specials)
      return fieldError(path, "TemplateProcessing needs arrays \"single\" "
                              "and object \"special_tokens\"");
    for (size_t i = 0; i < items->size(); ++i) {
      std::string at = (path + ".single[" + llvm::Twine(i) + "]").str();
      const Object *item = (*items)[i].getAsObject();
      if (item && item->getObject("Sequence")) {
        single.push_back(-1);
        continue;
      }
      const Object *sp = item ? item->getObject("SpecialToken") : nullptr;
      auto name = sp ? sp->getString("id") : llvm::None;
      const Object *entry = name ? specials->getObject(*name) : nullptr;
      const Array *ids = entry ? entry->getArray("ids") : nullptr;
      if (!ids)
        return fieldError(at, "expected {\"Sequence\": ...} or "
                              "{\"SpecialToken\": {\"id\": NAME}} with NAME "
                              "in special_tokens");
      for (const Value &id : *ids) {
        auto n = id.getAsInteger();
        if (!n || *n < 0 || *n > INT32_MAX)
          return fieldError(at, "special token ids must be integers");
        single.push_back(int32_t(*n));
      }
    }
  } else if (*type == "BertProcessing" || *type == "RobertaProcessing") {
    single = {-2, -1, -3};
    for (auto [key, slot] : {std::pair{"cls", 0}, {"sep", 2}}) {
      const Array *pair = o->getArray(key);
      auto id =
          pair && pair->size() == 2 ? (*pair)[1].getAsInteger() : llvm::None;
      if (!id)
        return fieldError((path + "." + key).str(), "expected [token, id]");
      single[slot] = int32_t(*id);
    }
  } else {
    return fieldError((path + ".type").str(),
                      "unsupported \"" + *type +
                          "\" (strata supports TemplateProcessing, "
                          "ByteLevel, BertProcessing, RobertaProcessing and "
                          "Sequence)");
  }
  if (llvm::count(single, -1) != 1)
    return fieldError(path, "the single-sequence template must hold the "
                            "sequence exactly once");
  // Compose: this processor wraps what the earlier ones produce.
  std::vector<int32_t> composed;
  for (int32_t id : single)
    if (id == -1)
      composed.insert(composed.end(), template_.begin(), template_.end());
    else
      composed.push_back(id);
  template_ = std::move(composed);
  return llvm::Error::success();
}

void HfTokenizer::splitAdded(
    llvm::StringRef text, bool normalized,
    llvm::function_ref<void(llvm::StringRef, size_t, int32_t)> piece) const {
  const auto &index = byFirstByte_[normalized];
  size_t pending = 0; // start of the text not yet passed on
  for (size_t i = 0; !index.empty() && i < text.size();) {
    const AddedToken *hit = nullptr;
    for (uint32_t k : index[static_cast<uint8_t>(text[i])])
      if (text.substr(i).startswith(added_[k].content)) {
        hit = &added_[k];
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + hit->content.size();
    if (hit->lstrip)
      start = std::max(trailingSpaceStart(text.take_front(start)), pending);
    if (hit->rstrip)
      stop += leadingSpaceLength(text.drop_front(stop));
    if (start > pending)
      piece(text.slice(pending, start), pending, -1);
    piece("", start, hit->id);
    pending = i = stop;
  }
  if (pending < text.size())
    piece(text.drop_front(pending), pending, -1);
}

llvm::Error HfTokenizer::encode(llvm::StringRef text, std::vector<int32_t> &out,
                                bool addSpecialTokens) const {
  if (llvm::Error e = checkUtf8(text))
    return e;
  std::vector<int32_t> ids;
  llvm::StringMap<std::vector<int32_t>> cache;
  auto word = [&](llvm::StringRef w) {
    if (cache.size() >= kWordCacheSize)
      cache.clear();
    auto [it, fresh] = cache.try_emplace(w);
    if (fresh)
      model_.encodeWord(w, it->second);
    ids.insert(ids.end(), it->second.begin(), it->second.end());
  };
  splitAdded(text, false, [&](llvm::StringRef seg, size_t off, int32_t id) {
    if (id >= 0)
      return ids.push_back(id);
    std::string norm = seg.str();
    for (const Normalizer &n : normalizers_)
      n.apply(norm);
    splitAdded(
        norm, true, [&](llvm::StringRef piece, size_t off2, int32_t id2) {
          if (id2 >= 0)
            return ids.push_back(id2);
          preTokenize(preTokenizers_, piece, off == 0 && off2 == 0, word);
        });
  });
  if (!addSpecialTokens) {
    out.insert(out.end(), ids.begin(), ids.end());
    return llvm::Error::success();
  }
  for (int32_t id : template_)
    if (id == -1)
      out.insert(out.end(), ids.begin(), ids.end());
    else
      out.push_back(id);
  return llvm::Error::success();
}

llvm::Expected<std::string> HfTokenizer::decode(llvm::ArrayRef<int32_t> ids,
                                                bool skipSpecialTokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (auto it = addedById_.find(ids[i]); it != addedById_.end()) {
      const AddedToken &a = added_[it->second];
      if (!(skipSpecialTokens && a.special))
        tokens.push_back(a.content);
      continue;
    }
    const std::string *t = model_.idToToken(ids[i]);
    if (!t)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "token id %d at position %zu is not in the tokenizer's vocabulary "
          "of %lld",
          ids[i], i, (long long)vocabSize_);
    tokens.push_back(*t);
  }
  if (!hasDecoder_)
    return llvm::join(tokens, " ");
  for (const Decoder &d : decoders_)
    d.apply(tokens);
  return llvm::join(tokens, "");
}

int64_t HfTokenizer::vocabSize() const { return vocabSize_; }

std::optional<int32_t> HfTokenizer::tokenToId(llvm::StringRef token) const {
  for (const AddedToken &a : added_)
    if (a.content == token)
      return a.id;
  return model_.tokenToId(token);
}

} // namespace strata::text
