//===- SafetensorsModel.cpp - A model directory's safetensors files -------===//
//
// `model.safetensors`, or `model.safetensors.index.json` and the shards its
// "weight_map" names, checked against each other.
//
//===----------------------------------------------------------------------===//
#include "runtime/io/JsonNesting.h"
#include "runtime/io/Safetensors.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <algorithm>

namespace strata {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static std::string join(llvm::StringRef dir, llvm::StringRef name) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return std::string(p);
}

llvm::Expected<SafetensorsModel> SafetensorsModel::open(llvm::StringRef dir) {
  SafetensorsModel m;
  m.dir_ = dir.str();
  std::string single = join(dir, "model.safetensors");
  std::string indexPath = join(dir, "model.safetensors.index.json");
  if (!llvm::sys::fs::exists(indexPath)) {
    if (!llvm::sys::fs::exists(single))
      return fail(single +
                  ": no such file (a model directory holds "
                  "model.safetensors or model.safetensors.index.json; "
                  "pytorch_model.bin checkpoints are not read: re-save with "
                  "save_pretrained(safe_serialization=True))");
    auto f = SafetensorsFile::open(single);
    if (!f)
      return f.takeError();
    for (const SafetensorsEntry &e : (*f)->entries())
      m.where_[e.name] = 0;
    m.files_.push_back(std::move(*f));
    return m;
  }

  auto bad = [&](const llvm::Twine &why) {
    return fail(indexPath + ": " + why);
  };
  auto buf = llvm::MemoryBuffer::getFile(indexPath);
  if (!buf)
    return bad("cannot read (" + buf.getError().message() + ")");
  if (auto deep = jsonNestingError((*buf)->getBuffer()))
    return bad(*deep);
  auto json = llvm::json::parse((*buf)->getBuffer());
  if (!json)
    return bad("malformed JSON: " + llvm::toString(json.takeError()));
  const llvm::json::Object *root = json->getAsObject();
  const llvm::json::Object *map =
      root ? root->getObject("weight_map") : nullptr;
  if (!map)
    return bad("missing object \"weight_map\"");
  // Each shard once, in name order, then every tensor checked in both ways.
  std::map<std::string, std::vector<std::string>> byShard;
  for (const auto &kv : *map) {
    auto file = kv.second.getAsString();
    if (!file || file->empty() || file->contains('/') || *file == "..")
      return bad("\"weight_map\" entry '" + kv.first.str() +
                 "' must name a file in the same directory");
    byShard[file->str()].push_back(kv.first.str());
  }
  llvm::StringSet<> listed;
  for (auto &[shard, names] : byShard) {
    std::string path = join(dir, shard);
    if (!llvm::sys::fs::exists(path))
      return bad("shard '" + shard + "' (holding '" + names.front() +
                 "') is missing");
    auto f = SafetensorsFile::open(path);
    if (!f)
      return f.takeError();
    size_t idx = m.files_.size();
    for (const std::string &n : names) {
      if (!(*f)->lookup(n))
        return bad("\"weight_map\" places '" + n + "' in '" + shard +
                   "', which has no such tensor");
      listed.insert(n);
    }
    for (const SafetensorsEntry &e : (*f)->entries()) {
      if (!listed.contains(e.name) || m.where_.count(e.name))
        return fail(
            path + ": tensor '" + e.name +
            "' is not listed for this shard in model.safetensors.index.json");
      m.where_[e.name] = idx;
    }
    m.files_.push_back(std::move(*f));
  }
  return m;
}

std::vector<std::string> SafetensorsModel::names() const {
  std::vector<std::string> r;
  for (const auto &kv : where_)
    r.push_back(kv.first().str());
  std::sort(r.begin(), r.end());
  return r;
}

const SafetensorsEntry *
SafetensorsModel::lookup(llvm::StringRef name,
                         const SafetensorsFile **file) const {
  auto it = where_.find(name);
  if (it == where_.end())
    return nullptr;
  const SafetensorsFile &f = *files_[it->second];
  if (file)
    *file = &f;
  return f.lookup(name);
}

std::string SafetensorsModel::fileOf(llvm::StringRef name) const {
  auto it = where_.find(name);
  if (it != where_.end())
    return files_[it->second]->path();
  return files_.size() == 1 ? files_[0]->path() : dir_;
}

llvm::Expected<HostTensor>
SafetensorsModel::readF32(llvm::StringRef name) const {
  auto it = where_.find(name);
  if (it == where_.end())
    return fail(fileOf(name) + ": missing tensor '" + name + "'");
  return files_[it->second]->readF32(name);
}

} // namespace strata
