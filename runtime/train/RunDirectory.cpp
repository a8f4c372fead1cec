//===- RunDirectory.cpp - The files of a training run's --out directory
//----===//
#include "runtime/train/RunDirectory.h"

#include "runtime/io/AtomicFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/text_format.h>

namespace strata {

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static std::string inDir(llvm::StringRef dir, llvm::StringRef file) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, file);
  return std::string(p);
}

std::string checkpointPath(llvm::StringRef dir) {
  return inDir(dir, "checkpoint.bin");
}
std::string metricsPath(llvm::StringRef dir) {
  return inDir(dir, "metrics.jsonl");
}

llvm::Error checkRunDirectory(llvm::StringRef dir, bool resume,
                              bool overwrite) {
  if (resume || overwrite)
    return llvm::Error::success();
  std::vector<std::string> found;
  for (const std::string &p : {checkpointPath(dir), metricsPath(dir)})
    if (llvm::sys::fs::exists(p))
      found.push_back(std::string(llvm::sys::path::filename(p)));
  if (found.empty())
    return llvm::Error::success();
  return err(dir + ": error: holds a previous run (" + llvm::join(found, ", ") +
             "); pass --resume to continue it, --overwrite to replace it, or "
             "choose another --out");
}

/// The step a metrics line counts as done: an evaluation's "step" is the
/// steps done, a training line's the 0-based step it ran.
static std::optional<int64_t> stepsDone(llvm::StringRef line) {
  auto v = llvm::json::parse(line);
  if (!v) {
    llvm::consumeError(v.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *o = v->getAsObject();
  llvm::Optional<int64_t> step;
  if (!o || !(step = o->getInteger("step")))
    return std::nullopt;
  return o->get("val_loss") ? *step : *step + 1;
}

llvm::Error MetricsLog::open(llvm::StringRef dir,
                             std::optional<int64_t> resumeStep) {
  std::string path = metricsPath(dir);
  if (resumeStep && llvm::sys::fs::exists(path)) {
    auto old = llvm::MemoryBuffer::getFile(path);
    if (!old)
      return err(path + ": error: cannot read (" + old.getError().message() +
                 ")");
    llvm::SmallVector<llvm::StringRef> lines;
    (*old)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
    if (auto e = writeFileAtomically(path, [&](llvm::raw_ostream &os) {
          for (llvm::StringRef line : lines) {
            std::optional<int64_t> done = stepsDone(line);
            if (done && *done > *resumeStep)
              break; // written after the checkpoint
            os << line << '\n';
          }
          return llvm::Error::success();
        }))
      return e;
  }
  std::error_code ec;
  os_ = std::make_unique<llvm::raw_fd_ostream>(
      path, ec, resumeStep ? llvm::sys::fs::OF_Append : llvm::sys::fs::OF_None);
  if (ec)
    return err(path + ": error: cannot open for writing (" + ec.message() +
               ")");
  return llvm::Error::success();
}

void MetricsLog::write(llvm::json::Object obj) {
  if (!os_)
    return; // not the writing rank
  *os_ << llvm::json::Value(std::move(obj)) << '\n';
  os_->flush();
}

static std::string fieldText(const google::protobuf::Message &m,
                             const google::protobuf::FieldDescriptor *f,
                             int index) {
  std::string s;
  google::protobuf::TextFormat::PrintFieldValueToString(m, f, index, &s);
  return s;
}

static void collectDifferences(const google::protobuf::Message &a,
                               const google::protobuf::Message &b,
                               const std::string &prefix,
                               std::vector<std::string> &out) {
  const google::protobuf::Descriptor *d = a.GetDescriptor();
  const google::protobuf::Reflection *ra = a.GetReflection();
  const google::protobuf::Reflection *rb = b.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor *f = d->field(i);
    std::string path = prefix + f->name();
    if (f->is_repeated()) {
      int n = ra->FieldSize(a, f);
      bool same = n == rb->FieldSize(b, f);
      for (int k = 0; same && k < n; ++k)
        same = fieldText(a, f, k) == fieldText(b, f, k);
      if (!same)
        out.push_back(path);
    } else if (f->cpp_type() ==
               google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      collectDifferences(ra->GetMessage(a, f), rb->GetMessage(b, f), path + ".",
                         out);
    } else if (fieldText(a, f, -1) != fieldText(b, f, -1)) {
      out.push_back(path);
    }
  }
}

std::vector<std::string> differingFields(const google::protobuf::Message &a,
                                         const google::protobuf::Message &b) {
  std::vector<std::string> out;
  collectDifferences(a, b, "", out);
  return out;
}

bool resumeMayChange(llvm::StringRef field) {
  return llvm::is_contained(
      std::initializer_list<llvm::StringRef>{
          "training.steps", "training.eval_every", "training.lr",
          "training.min_lr", "training.warmup", "training.decay_iters",
          // fp32 master weights and moments in every precision
          "training.precision"},
      field);
}

} // namespace strata
