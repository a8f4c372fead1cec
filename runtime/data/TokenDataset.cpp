//===- TokenDataset.cpp - Tokenized text, cached and memory-mapped --------===//
#include "runtime/data/TokenDataset.h"

#include "runtime/io/AtomicFile.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <cstring>

namespace strata {

namespace endian = llvm::support::endian;

static constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'T', 'K'};
static constexpr uint32_t kVersion = 1;
static constexpr size_t kHeaderBytes = 64;

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Reads a whole text file, naming it in the error.
static llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readText(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail(path + ": error: cannot read the data file: " +
                buf.getError().message());
  return std::move(*buf);
}

llvm::Expected<Tokenizer> makeTokenizer(llvm::StringRef kind,
                                        llvm::StringRef textPath) {
  if (kind == "byte")
    return Tokenizer::byteLevel();
  if (kind != "char")
    return Tokenizer::fromFile(kind);
  auto text = readText(textPath);
  if (!text)
    return text.takeError();
  auto tok = Tokenizer::charLevel((*text)->getBuffer());
  if (!tok)
    return fail(textPath + ": " + llvm::toString(tok.takeError()));
  return tok;
}

//===----------------------------------------------------------------------===//
// TokenSpan
//===----------------------------------------------------------------------===//

int32_t TokenSpan::operator[](int64_t i) const {
  const uint8_t *p = store_->tokens;
  int64_t k = begin_ + i;
  if (store_->tokenBytes == 2)
    return int32_t(endian::read16le(p + 2 * k));
  return int32_t(endian::read32le(p + 4 * k));
}

void TokenSpan::copy(int64_t begin, int64_t n, int32_t *out) const {
  const uint8_t *p = store_->tokens;
  int64_t k = begin_ + begin;
  if (store_->tokenBytes == 2) {
    for (int64_t j = 0; j < n; ++j)
      out[j] = int32_t(endian::read16le(p + 2 * (k + j)));
  } else {
    for (int64_t j = 0; j < n; ++j)
      out[j] = int32_t(endian::read32le(p + 4 * (k + j)));
  }
}

std::string TokenSpan::describe() const {
  if (!store_)
    return "<empty token span>";
  if (!*what_)
    return store_->textPath;
  return store_->textPath + " (" + what_ + ")";
}

//===----------------------------------------------------------------------===//
// TokenDataset
//===----------------------------------------------------------------------===//

std::string TokenDataset::cachePath(llvm::StringRef textPath,
                                    const Tokenizer &tokenizer,
                                    llvm::StringRef cacheDir) {
  std::string file = (textPath + "." + tokenizer.name() + ".tokens").str();
  if (cacheDir.empty())
    return file;
  llvm::SmallString<256> path(cacheDir);
  llvm::sys::path::append(path, llvm::sys::path::filename(file));
  return std::string(path);
}

/// The cache key: the text's size and modification time and the tokenizer.
static llvm::Expected<uint64_t> cacheKey(llvm::StringRef textPath,
                                         const Tokenizer &tokenizer) {
  llvm::sys::fs::file_status st;
  if (std::error_code ec = llvm::sys::fs::status(textPath, st))
    return fail(textPath +
                ": error: cannot read the data file: " + ec.message());
  if (st.type() != llvm::sys::fs::file_type::regular_file)
    return fail(textPath + ": error: the data file is not a regular file");
  uint64_t fields[3] = {
      st.getSize(),
      uint64_t(st.getLastModificationTime().time_since_epoch().count()),
      tokenizer.fingerprint()};
  return llvm::xxHash64(
      llvm::StringRef(reinterpret_cast<const char *>(fields), sizeof(fields)));
}

/// Maps `path` if it is a complete cache with `key`; null otherwise.
static std::unique_ptr<detail::TokenStore>
mapCache(llvm::StringRef path, uint64_t key, unsigned tokenBytes) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return nullptr;
  llvm::StringRef bytes = (*buf)->getBuffer();
  if (bytes.size() < kHeaderBytes)
    return nullptr;
  auto *h = reinterpret_cast<const uint8_t *>(bytes.data());
  uint64_t count = endian::read64le(h + 16);
  if (std::memcmp(h, kMagic, 8) != 0 || endian::read32le(h + 8) != kVersion ||
      endian::read32le(h + 12) != tokenBytes ||
      endian::read64le(h + 24) != key ||
      count > (bytes.size() - kHeaderBytes) / tokenBytes ||
      bytes.size() != kHeaderBytes + count * tokenBytes)
    return nullptr;
  auto store = std::make_unique<detail::TokenStore>();
  store->cachePath = path.str();
  store->tokens = h + kHeaderBytes;
  store->tokenBytes = tokenBytes;
  store->count = int64_t(count);
  store->buffer = std::move(*buf);
  return store;
}

/// Tokenizes `textPath` and writes the cache file atomically.
static llvm::Error buildCache(llvm::StringRef textPath,
                              const Tokenizer &tokenizer,
                              llvm::StringRef cachePath, uint64_t key,
                              unsigned tokenBytes) {
  auto text = readText(textPath);
  if (!text)
    return text.takeError();
  std::vector<int32_t> ids;
  if (llvm::Error err = tokenizer.encode((*text)->getBuffer(), ids))
    return fail(textPath + ": " + llvm::toString(std::move(err)));

  std::vector<uint8_t> file(kHeaderBytes + ids.size() * tokenBytes, 0);
  std::memcpy(file.data(), kMagic, 8);
  endian::write32le(&file[8], kVersion);
  endian::write32le(&file[12], tokenBytes);
  endian::write64le(&file[16], ids.size());
  endian::write64le(&file[24], key);
  uint8_t *p = file.data() + kHeaderBytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (tokenBytes == 2)
      endian::write16le(p + 2 * i, uint16_t(ids[i]));
    else
      endian::write32le(p + 4 * i, uint32_t(ids[i]));
  }
  llvm::Error err = writeFileAtomically(cachePath, [&](llvm::raw_ostream &os) {
    os.write(reinterpret_cast<const char *>(file.data()), file.size());
    return llvm::Error::success();
  });
  if (err)
    return fail("cannot write token cache: " + llvm::toString(std::move(err)) +
                " (pass a writable cache directory)");
  return llvm::Error::success();
}

llvm::Expected<TokenDataset> TokenDataset::open(llvm::StringRef textPath,
                                                const Tokenizer &tokenizer,
                                                llvm::StringRef cacheDir) {
  auto key = cacheKey(textPath, tokenizer);
  if (!key)
    return key.takeError();
  std::string cache = cachePath(textPath, tokenizer, cacheDir);
  unsigned tokenBytes = tokenizer.vocabSize() <= 65536 ? 2 : 4;

  CacheStatus status = CacheStatus::Reused;
  std::unique_ptr<detail::TokenStore> store = mapCache(cache, *key, tokenBytes);
  if (!store) {
    status = llvm::sys::fs::exists(cache) ? CacheStatus::Rebuilt
                                          : CacheStatus::Created;
    if (llvm::Error err =
            buildCache(textPath, tokenizer, cache, *key, tokenBytes))
      return err;
    store = mapCache(cache, *key, tokenBytes);
    if (!store)
      return fail("token cache '" + cache +
                  "' was replaced while it was being built; retry");
  }
  store->textPath = textPath.str();
  return TokenDataset(std::move(store), status);
}

TokenSpan TokenDataset::all() const { return TokenSpan(store_, 0, size(), ""); }

TokenSpan TokenDataset::train() const {
  return TokenSpan(store_, 0, size() * 9 / 10, "train split");
}

TokenSpan TokenDataset::val() const {
  int64_t n = size() * 9 / 10;
  return TokenSpan(store_, n, size() - n, "validation split");
}

} // namespace strata
