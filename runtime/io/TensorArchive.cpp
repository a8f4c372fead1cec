//===- TensorArchive.cpp - Named tensors exchanged with references --------===//
#include "runtime/io/TensorArchive.h"
#include "runtime/io/JsonNesting.h"

#include "runtime/io/AtomicFile.h"
#include "runtime/io/TensorIndex.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SwapByteOrder.h"

#include <cstring>

namespace strata {

static_assert(!llvm::sys::IsBigEndianHost,
              "tensor archives hold little-endian data; add byte swapping");

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static bool archiveDType(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::I32;
}

static std::string join(llvm::StringRef dir, llvm::StringRef file) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, file);
  return std::string(p);
}

static llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail("cannot read '" + path + "': " + buf.getError().message());
  return std::move(*buf);
}

llvm::Expected<TensorArchive> TensorArchive::read(llvm::StringRef dir) {
  std::string indexPath = join(dir, "index.json");
  std::string dataPath = join(dir, "data.bin");
  auto indexFile = readFile(indexPath);
  if (!indexFile)
    return indexFile.takeError();
  auto dataFile = readFile(dataPath);
  if (!dataFile)
    return dataFile.takeError();

  if (auto deep = jsonNestingError((*indexFile)->getBuffer()))
    return fail(indexPath + ": " + *deep);
  auto index = llvm::json::parse((*indexFile)->getBuffer());
  if (!index)
    return fail(indexPath +
                ": invalid JSON: " + llvm::toString(index.takeError()));
  const llvm::json::Object *root = index->getAsObject();
  const llvm::json::Array *entries = root ? root->getArray("tensors") : nullptr;
  if (!entries)
    return fail(indexPath + ": expected an object with an array \"tensors\"");

  llvm::StringRef data = (*dataFile)->getBuffer();
  TensorArchive archive;
  archive.path_ = dir.str();
  for (const llvm::json::Value &v : *entries) {
    auto e = parseTensorEntry(v, data.size(), archiveDType);
    if (!e)
      return fail(indexPath + ": " + llvm::toString(e.takeError()));
    HostTensor t(e->type);
    if (t.bytes())
      std::memcpy(t.raw(), data.data() + e->offset, t.bytes());
    if (llvm::Error err = archive.add(e->name, std::move(t)))
      return fail(indexPath + ": " + llvm::toString(std::move(err)));
  }
  return archive;
}

llvm::Error TensorArchive::write(llvm::StringRef dir) const {
  for (const NamedTensor &nt : tensors_)
    if (!archiveDType(nt.tensor.dtype()))
      return fail("cannot write tensor '" + nt.name + "' of dtype " +
                  dtypeName(nt.tensor.dtype()) +
                  " to a tensor archive (f32, f64 and i32 only)");
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return fail("cannot create archive directory '" + dir +
                "': " + ec.message());

  // Offsets as the Python writer assigns them: each tensor at the next
  // 64-byte boundary; the file ends with the last tensor's data.
  std::vector<uint64_t> offsets;
  uint64_t end = 0;
  for (const NamedTensor &nt : tensors_) {
    offsets.push_back(alignTensorOffset(end));
    end = offsets.back() + uint64_t(nt.tensor.bytes());
  }
  llvm::Error err =
      writeFileAtomically(join(dir, "data.bin"), [&](llvm::raw_ostream &os) {
        uint64_t pos = 0;
        for (size_t i = 0; i < tensors_.size(); ++i) {
          const HostTensor &t = tensors_[i].tensor;
          os.write_zeros(offsets[i] - pos);
          os.write(static_cast<const char *>(t.raw()), t.bytes());
          pos = offsets[i] + t.bytes();
        }
        return llvm::Error::success();
      });
  if (err)
    return err;
  // Laid out as Python's json.dump(indent=1), keys in the same order.
  return writeFileAtomically(
      join(dir, "index.json"), [&](llvm::raw_ostream &os) {
        llvm::json::OStream j(os, /*IndentSize=*/1);
        j.object([&] {
          j.attributeArray("tensors", [&] {
            for (size_t i = 0; i < tensors_.size(); ++i) {
              const NamedTensor &nt = tensors_[i];
              j.object([&] {
                j.attribute("name", nt.name);
                j.attribute("dtype", dtypeName(nt.tensor.dtype()));
                j.attributeArray("shape", [&] {
                  for (int64_t d : nt.tensor.shape())
                    j.value(d);
                });
                j.attribute("offset", int64_t(offsets[i]));
              });
            }
          });
        });
        os << "\n";
        return llvm::Error::success();
      });
}

llvm::Error TensorArchive::add(std::string name, HostTensor tensor) {
  if (!byName_.try_emplace(name, tensors_.size()).second)
    return fail("duplicate tensor name '" + name + "'");
  tensors_.push_back({std::move(name), std::move(tensor)});
  return llvm::Error::success();
}

const HostTensor *TensorArchive::lookup(llvm::StringRef name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : &tensors_[it->second].tensor;
}

llvm::Expected<const HostTensor &>
TensorArchive::get(llvm::StringRef name) const {
  if (const HostTensor *t = lookup(name))
    return *t;
  return fail("tensor archive '" + (path_.empty() ? "<memory>" : path_) +
              "' has no tensor '" + name + "'");
}

} // namespace strata
