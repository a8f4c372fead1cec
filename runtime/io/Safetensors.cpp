//===- Safetensors.cpp - Hugging Face safetensors files -------------------===//
#include "runtime/io/Safetensors.h"
#include "runtime/io/JsonNesting.h"

#include "runtime/io/AtomicFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <cstring>

namespace strata {

static_assert(!llvm::sys::IsBigEndianHost,
              "safetensors hold little-endian data; add byte swapping");

/// The reference reader's limit on the header (safetensors' MAX_HEADER_SIZE).
static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) { // inf / NaN
    bits = sign | 0x7f800000 | (man << 13);
  } else if (exp != 0) { // normal
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) { // signed zero
    bits = sign;
  } else { // subnormal: man * 2^-24, exact in f32
    float f = float(man) * 0x1p-24f;
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bfloat16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Bytes per element of a safetensors dtype; 0 if unknown.
static uint64_t stDtypeBytes(llvm::StringRef d) {
  return llvm::StringSwitch<uint64_t>(d)
      .Cases("F64", "I64", "U64", 8)
      .Cases("F32", "I32", "U32", 4)
      .Cases("F16", "BF16", "I16", "U16", 2)
      .Cases("I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2", 1)
      .Default(0);
}

//===----------------------------------------------------------------------===//
// One file
//===----------------------------------------------------------------------===//

/// Parses one header entry `name`: `v`, checking its fields.
static llvm::Expected<SafetensorsEntry> parseEntry(llvm::StringRef name,
                                                   const llvm::json::Value &v) {
  SafetensorsEntry e;
  e.name = name.str();
  auto bad = [&](const llvm::Twine &why) {
    return fail("tensor '" + name + "': " + why);
  };
  const llvm::json::Object *o = v.getAsObject();
  if (!o)
    return bad("expected an object with dtype, shape, data_offsets");
  for (const auto &kv : *o)
    if (kv.first != "dtype" && kv.first != "shape" &&
        kv.first != "data_offsets")
      return bad("unknown field \"" + kv.first.str() + "\"");
  auto dtype = o->getString("dtype");
  if (!dtype)
    return bad("missing string \"dtype\"");
  e.dtype = dtype->str();
  uint64_t elemBytes = stDtypeBytes(*dtype);
  if (!elemBytes)
    return bad("unknown dtype \"" + *dtype + "\"");
  const llvm::json::Array *shape = o->getArray("shape");
  if (!shape)
    return bad("missing array \"shape\"");
  uint64_t bytes = elemBytes;
  for (const llvm::json::Value &d : *shape) {
    auto dim = d.getAsInteger();
    if (!dim || *dim < 0)
      return bad("\"shape\" must hold non-negative integers");
    e.shape.push_back(*dim);
    if (*dim && bytes > UINT64_MAX / uint64_t(*dim))
      return bad("\"shape\" overflows 64 bits of bytes");
    bytes *= uint64_t(*dim);
  }
  const llvm::json::Array *off = o->getArray("data_offsets");
  llvm::Optional<int64_t> b, en;
  if (off && off->size() == 2)
    b = (*off)[0].getAsInteger(), en = (*off)[1].getAsInteger();
  if (!b || !en || *b < 0 || *en < *b)
    return bad("\"data_offsets\" must be [begin, end] with 0 <= begin <= end");
  e.begin = uint64_t(*b);
  e.end = uint64_t(*en);
  if (e.end - e.begin != bytes)
    return bad("\"data_offsets\" [" + llvm::Twine(e.begin) + ", " +
               llvm::Twine(e.end) + ") span " + llvm::Twine(e.end - e.begin) +
               " bytes but " + e.dtype + " x " + llvm::Twine(shape->size()) +
               "-d shape needs " + llvm::Twine(bytes));
  return e;
}

llvm::Expected<std::unique_ptr<SafetensorsFile>>
SafetensorsFile::open(llvm::StringRef path) {
  auto bad = [&](const llvm::Twine &why) { return fail(path + ": " + why); };
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return bad("cannot open (" + buf.getError().message() + ")");
  auto f = std::make_unique<SafetensorsFile>();
  f->path_ = path.str();
  f->buf_ = std::move(*buf);
  llvm::StringRef bytes = f->buf_->getBuffer();
  if (bytes.size() < 8)
    return bad("not a safetensors file (" + llvm::Twine(bytes.size()) +
               " bytes, shorter than the 8-byte header length)");
  uint64_t n = llvm::support::endian::read64le(bytes.data());
  if (n > kMaxHeaderBytes)
    return bad("header length " + llvm::Twine(n) +
               " exceeds the 100 MB limit "
               "(not a safetensors file, or a corrupt one)");
  if (n > bytes.size() - 8)
    return bad("header length " + llvm::Twine(n) +
               " runs past the end of the " + llvm::Twine(bytes.size()) +
               "-byte file (truncated?)");
  llvm::StringRef header = bytes.substr(8, n);
  if (!header.startswith("{"))
    return bad("the header does not start with '{' (not a safetensors file)");
  if (auto deep = jsonNestingError(header))
    return bad("the header " + *deep);
  auto json = llvm::json::parse(header);
  if (!json)
    return bad("malformed JSON header: " + llvm::toString(json.takeError()));
  const llvm::json::Object *root = json->getAsObject();
  if (!root)
    return bad("the header is not a JSON object");

  for (const auto &kv : *root) {
    if (kv.first == "__metadata__") {
      const llvm::json::Object *m = kv.second.getAsObject();
      if (!m)
        return bad("\"__metadata__\" must be an object of strings");
      for (const auto &mv : *m) {
        auto s = mv.second.getAsString();
        if (!s)
          return bad("\"__metadata__\" field \"" + mv.first.str() +
                     "\" is not a string");
        f->meta_[mv.first.str()] = s->str();
      }
      continue;
    }
    auto e = parseEntry(kv.first, kv.second);
    if (!e)
      return bad(llvm::toString(e.takeError()));
    f->entries_.push_back(std::move(*e));
  }
  // The tensors must tile the data buffer: no gap, no overlap, nothing after.
  llvm::sort(f->entries_,
             [](const SafetensorsEntry &a, const SafetensorsEntry &b) {
               return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
             });
  uint64_t dataBytes = bytes.size() - 8 - n, at = 0;
  for (const SafetensorsEntry &e : f->entries_) {
    if (e.begin != at)
      return bad("tensor '" + e.name + "': \"data_offsets\" begin at " +
                 llvm::Twine(e.begin) + " but the previous tensor ends at " +
                 llvm::Twine(at) +
                 " (tensors must be contiguous, without gaps "
                 "or overlaps)");
    if (e.end > dataBytes)
      return bad("tensor '" + e.name + "': \"data_offsets\" end at " +
                 llvm::Twine(e.end) + ", past the " + llvm::Twine(dataBytes) +
                 " data bytes of the file (truncated?)");
    at = e.end;
  }
  if (at != dataBytes)
    return bad("the tensors cover " + llvm::Twine(at) + " of the " +
               llvm::Twine(dataBytes) +
               " data bytes (wrong byte count or "
               "trailing garbage)");
  for (size_t i = 0; i < f->entries_.size(); ++i)
    f->byName_[f->entries_[i].name] = i;
  f->data_ = bytes.data() + 8 + n;
  return f;
}

const SafetensorsEntry *SafetensorsFile::lookup(llvm::StringRef name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : &entries_[it->second];
}

llvm::Expected<HostTensor>
SafetensorsFile::readF32(llvm::StringRef name) const {
  const SafetensorsEntry *e = lookup(name);
  if (!e)
    return fail(path_ + ": no tensor '" + name + "'");
  HostTensor t(TensorType{DType::F32, e->shape});
  float *out = t.data<float>();
  const char *src = data_ + e->begin;
  int64_t n = t.numElements();
  if (e->dtype == "F32") {
    if (n)
      std::memcpy(out, src, size_t(n) * 4);
  } else if (e->dtype == "BF16" || e->dtype == "F16") {
    bool bf = e->dtype == "BF16";
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h = llvm::support::endian::read16le(src + 2 * i);
      out[i] = bf ? bfloat16ToFloat(h) : halfToFloat(h);
    }
  } else {
    return fail(path_ + ": tensor '" + name + "': dtype " + e->dtype +
                " is not supported (strata reads F32, BF16 and F16 weights)");
  }
  return t;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

llvm::Error
writeSafetensors(llvm::StringRef path, llvm::ArrayRef<NamedTensor> tensors,
                 const std::map<std::string, std::string> &metadata) {
  llvm::json::Object header;
  llvm::json::Object meta;
  for (const auto &[k, v] : metadata)
    meta[k] = v;
  if (!metadata.empty())
    header["__metadata__"] = std::move(meta);
  uint64_t at = 0;
  for (const NamedTensor &nt : tensors) {
    if (nt.tensor.dtype() != DType::F32)
      return fail(path + ": tensor '" + nt.name + "' is " +
                  dtypeName(nt.tensor.dtype()) + "; only f32 is written");
    if (header.find(nt.name) != header.end())
      return fail(path + ": duplicate tensor name '" + nt.name + "'");
    llvm::json::Array shape;
    for (int64_t d : nt.tensor.shape())
      shape.push_back(d);
    uint64_t end = at + uint64_t(nt.tensor.bytes());
    header[nt.name] = llvm::json::Object{
        {"dtype", "F32"},
        {"shape", std::move(shape)},
        {"data_offsets", llvm::json::Array{int64_t(at), int64_t(end)}}};
    at = end;
  }
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(header));
  text.append((8 - text.size() % 8) % 8, ' ');
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    char len[8];
    llvm::support::endian::write64le(len, text.size());
    os.write(len, 8);
    os << text;
    for (const NamedTensor &nt : tensors)
      os.write(static_cast<const char *>(nt.tensor.raw()), nt.tensor.bytes());
    return llvm::Error::success();
  });
}

llvm::Error writeSafetensorsModel(llvm::StringRef dir,
                                  llvm::ArrayRef<NamedTensor> tensors,
                                  uint64_t maxShardBytes) {
  // Greedy shards in order, as transformers' shard_checkpoint.
  std::vector<std::pair<size_t, size_t>> shards; // [first, last)
  uint64_t size = 0, total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    uint64_t b = uint64_t(tensors[i].tensor.bytes());
    total += b;
    if (shards.empty() || (size + b > maxShardBytes && size > 0)) {
      shards.push_back({i, i});
      size = 0;
    }
    shards.back().second = i + 1;
    size += b;
  }
  std::map<std::string, std::string> meta{{"format", "pt"}};
  auto join = [&](llvm::StringRef name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  if (shards.size() <= 1)
    return writeSafetensors(join("model.safetensors"), tensors, meta);
  llvm::json::Object weightMap;
  for (size_t s = 0; s < shards.size(); ++s) {
    std::string name = llvm::formatv("model-{0:d5}-of-{1:d5}.safetensors",
                                     s + 1, shards.size());
    auto part =
        tensors.slice(shards[s].first, shards[s].second - shards[s].first);
    if (auto e = writeSafetensors(join(name), part, meta))
      return e;
    for (const NamedTensor &nt : part)
      weightMap[nt.name] = name;
  }
  llvm::json::Object index{
      {"metadata", llvm::json::Object{{"total_size", int64_t(total)}}},
      {"weight_map", std::move(weightMap)}};
  return writeFileAtomically(
      join("model.safetensors.index.json"), [&](llvm::raw_ostream &os) {
        os << llvm::formatv("{0:2}", llvm::json::Value(std::move(index)))
           << "\n";
        return llvm::Error::success();
      });
}

} // namespace strata
