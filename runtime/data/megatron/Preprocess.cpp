//===- Preprocess.cpp - Text/JSONL corpus -> Megatron .bin/.idx -----------===//
#include "runtime/data/megatron/Preprocess.h"

#include "runtime/data/megatron/IndexedDataset.h"
#include "runtime/io/AtomicFile.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <simdjson.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace strata::megatron {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string outputDatasetPrefix(const PreprocessOptions &o) {
  return o.outputPrefix + "_" + o.jsonKey + "_document";
}

std::string tokenizerSidecarPath(llvm::StringRef prefix) {
  return (prefix + ".strata-tokenizer.json").str();
}

std::optional<int32_t> endOfDocumentId(const Tokenizer &tok) {
  switch (tok.kind()) {
  case Tokenizer::Kind::Char:
  case Tokenizer::Kind::Byte:
    return std::nullopt; // every id is a character or byte of text
  case Tokenizer::Kind::File:
    return tok.eosId(); // Megatron's HuggingFaceTokenizer.eod
  }
  return std::nullopt;
}

namespace {

/// One document of the input: its raw text (a JSON line or a paragraph).
struct DocSpan {
  llvm::StringRef text;
  int64_t line = 0;     // 1-based, of its first line
  uint64_t endByte = 0; // input consumed once it is done
};

/// A document's tokens, or why it has none.
struct Encoded {
  std::vector<int32_t> ids;
  llvm::SmallVector<int32_t, 1> lengths;
  std::string error;
};

/// Cuts the input into documents, in order.
class DocReader {
public:
  DocReader(llvm::StringRef buf, bool jsonl) : buf_(buf), jsonl_(jsonl) {}

  /// The next document, or false at the end.
  bool next(DocSpan &d) {
    while (pos_ < buf_.size()) {
      llvm::StringRef line = takeLine();
      bool blank = line.trim().empty();
      if (jsonl_) {
        if (blank)
          continue;
        d = {line, line_, pos_};
        return true;
      }
      if (blank)
        continue;
      // A paragraph: this line and the non-blank lines after it, with the
      // line break of each.
      size_t begin = size_t(line.data() - buf_.data());
      int64_t first = line_;
      size_t end = pos_;
      while (pos_ < buf_.size()) {
        size_t save = pos_;
        int64_t saveLine = line_;
        if (takeLine().trim().empty()) {
          pos_ = save;
          line_ = saveLine;
          break;
        }
        end = pos_;
      }
      d = {buf_.slice(begin, end), first, end};
      return true;
    }
    return false;
  }

private:
  /// The line at pos_ (a JSON line without its '\n'; for text, with it).
  llvm::StringRef takeLine() {
    size_t nl = buf_.find('\n', pos_);
    size_t end = nl == llvm::StringRef::npos ? buf_.size() : nl + 1;
    llvm::StringRef line =
        buf_.slice(pos_, jsonl_ && nl != llvm::StringRef::npos ? nl : end);
    pos_ = end;
    ++line_;
    return line;
  }

  llvm::StringRef buf_;
  bool jsonl_;
  size_t pos_ = 0;
  int64_t line_ = 0;
};

/// Tokenizes documents; one per worker thread (simdjson parsers are not
/// shared between threads).
class Encoder {
public:
  Encoder(const PreprocessOptions &o, const Tokenizer &tok, bool jsonl)
      : o_(o), tok_(tok), jsonl_(jsonl) {}

  void encode(const DocSpan &d, Encoded &out) {
    out.ids.clear();
    out.lengths.clear();
    out.error.clear();
    if (!jsonl_) {
      addText(d.text, out);
    } else {
      simdjson::dom::element root;
      auto err = parser_.parse(d.text.data(), d.text.size()).get(root);
      if (err) {
        out.error = std::string("malformed JSON (") +
                    simdjson::error_message(err) +
                    "; each line must be one JSON object)";
        return;
      }
      simdjson::dom::object obj;
      if (root.get_object().get(obj)) {
        out.error = "the line is JSON but not an object";
        return;
      }
      simdjson::dom::element v;
      if (obj.at_key(o_.jsonKey).get(v)) {
        out.error = "no \"" + o_.jsonKey + "\" key (choose it with --json-key)";
        return;
      }
      std::string_view s;
      simdjson::dom::array list;
      if (!v.get_string().get(s)) {
        addText(llvm::StringRef(s.data(), s.size()), out);
      } else if (!v.get_array().get(list)) {
        for (simdjson::dom::element e : list) {
          if (e.get_string().get(s)) {
            out.error = "\"" + o_.jsonKey + "\" is a list with a non-string";
            return;
          }
          addText(llvm::StringRef(s.data(), s.size()), out);
          if (!out.error.empty())
            return;
        }
      } else {
        out.error = "\"" + o_.jsonKey + "\" is not a string or list of strings";
        return;
      }
    }
    if (out.error.empty() && !out.ids.empty() && o_.eod) {
      out.ids.push_back(*o_.eod);
      ++out.lengths.back();
    }
  }

private:
  /// Appends one sequence (if it has tokens).
  void addText(llvm::StringRef text, Encoded &out) {
    size_t before = out.ids.size();
    if (llvm::Error e = tok_.encode(text, out.ids)) {
      out.error = llvm::toString(std::move(e));
      return;
    }
    if (out.ids.size() > before)
      out.lengths.push_back(int32_t(out.ids.size() - before));
  }

  const PreprocessOptions &o_;
  const Tokenizer &tok_;
  bool jsonl_;
  simdjson::dom::parser parser_;
};

} // namespace

llvm::Expected<PreprocessProgress>
preprocess(const PreprocessOptions &o, const Tokenizer &tok,
           llvm::function_ref<void(const PreprocessProgress &)> progress) {
  llvm::StringRef ext = llvm::sys::path::extension(o.input);
  bool jsonl = ext == ".jsonl" || ext == ".json";
  if (!jsonl && ext != ".txt")
    return fail(o.input + ": unknown input kind '" + ext +
                "' (expected .jsonl or .json: one JSON object per line, or "
                ".txt: paragraphs)");
  if (o.workers < 1)
    return fail("--workers must be >= 1");
  auto buf = llvm::MemoryBuffer::getFile(o.input, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail(o.input + ": cannot read (" + buf.getError().message() + ")");
  llvm::StringRef text = (*buf)->getBuffer();
  std::string prefix = outputDatasetPrefix(o);
  PreprocessProgress p;
  p.totalBytes = text.size();
  auto start = std::chrono::steady_clock::now();
  auto last = start;
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };

  const size_t batchDocs = 1024 * size_t(o.workers);
  std::vector<std::unique_ptr<Encoder>> encoders;
  for (int w = 0; w < o.workers; ++w)
    encoders.push_back(std::make_unique<Encoder>(o, tok, jsonl));
  DocReader reader(text, jsonl);
  std::vector<DocSpan> docs;
  std::vector<Encoded> encoded(batchDocs);

  auto fill = [&](IndexedDatasetBuilder &builder) -> llvm::Error {
    for (;;) {
      docs.clear();
      DocSpan d;
      while (docs.size() < batchDocs && reader.next(d))
        docs.push_back(d);
      if (docs.empty())
        return llvm::Error::success();
      std::atomic<size_t> nextDoc{0};
      auto work = [&](Encoder &enc) {
        for (size_t i; (i = nextDoc.fetch_add(1)) < docs.size();)
          enc.encode(docs[i], encoded[i]);
      };
      std::vector<std::thread> threads;
      for (int w = 1; w < o.workers; ++w)
        threads.emplace_back(work, std::ref(*encoders[w]));
      work(*encoders[0]);
      for (std::thread &t : threads)
        t.join();
      for (size_t i = 0; i < docs.size(); ++i) {
        const Encoded &e = encoded[i];
        if (!e.error.empty())
          return fail(o.input + ":" + llvm::Twine(docs[i].line) + ": " +
                      e.error);
        if (auto err = builder.addDocument(e.ids, e.lengths))
          return fail(o.input + ":" + llvm::Twine(docs[i].line) + ": " +
                      llvm::toString(std::move(err)));
      }
      p.documents = builder.numDocuments();
      p.sequences = builder.numSequences();
      p.tokens = builder.numTokens();
      p.bytes = docs.back().endByte;
      auto now = std::chrono::steady_clock::now();
      if (progress && p.bytes < p.totalBytes &&
          now - last >= std::chrono::seconds(1)) {
        last = now;
        p.seconds = elapsed();
        progress(p);
      }
    }
  };
  if (auto e = writeIndexedDataset(prefix, optimalDType(tok.vocabSize()), fill))
    return e;
  std::string sidecar = tokenizerSidecarPath(prefix);
  if (auto e = writeFileAtomically(sidecar, [&](llvm::raw_ostream &os) {
        os << llvm::json::Value(tok.toJSON()) << '\n';
        return llvm::Error::success();
      }))
    return e;
  p.bytes = p.totalBytes;
  p.seconds = elapsed();
  if (progress)
    progress(p);
  return p;
}

llvm::Expected<std::optional<Tokenizer>>
recordedTokenizer(llvm::ArrayRef<std::string> prefixes) {
  std::optional<Tokenizer> found;
  std::string foundAt;
  for (const std::string &prefix : prefixes) {
    std::string path = tokenizerSidecarPath(prefix);
    if (!llvm::sys::fs::exists(path))
      continue;
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf)
      return fail(path + ": cannot read (" + buf.getError().message() + ")");
    auto json = llvm::json::parse((*buf)->getBuffer());
    if (!json)
      return fail(path + ": " + llvm::toString(json.takeError()));
    auto tok = Tokenizer::fromJSON(*json);
    if (!tok)
      return fail(path + ": " + llvm::toString(tok.takeError()));
    if (found && *found != *tok)
      return fail(path + ": the tokenizer differs from the one of " + foundAt +
                  " (blend datasets tokenized alike)");
    found = std::move(*tok);
    foundAt = path;
  }
  return found;
}

} // namespace strata::megatron
