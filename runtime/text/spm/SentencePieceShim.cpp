//===- SentencePieceShim.cpp - C interface to libsentencepiece ------------===//
#include "runtime/text/spm/SentencePieceShim.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

using sentencepiece::SentencePieceProcessor;

namespace {
char *copyOut(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}
SentencePieceProcessor &sp(void *p) {
  return *static_cast<SentencePieceProcessor *>(p);
}
} // namespace

extern "C" {

void *strata_spm_load(const char *model, size_t size, char **error) {
  auto *p = new SentencePieceProcessor;
  auto status = p->LoadFromSerializedProto(absl::string_view(model, size));
  if (status.ok())
    return p;
  *error = copyOut(status.ToString());
  delete p;
  return nullptr;
}

void strata_spm_free(void *processor) { delete &sp(processor); }

int strata_spm_encode(void *processor, const char *text, size_t size, int **ids,
                      size_t *count, char **error) {
  std::vector<int> out;
  auto status = sp(processor).Encode(absl::string_view(text, size), &out);
  if (!status.ok()) {
    *error = copyOut(status.ToString());
    return 1;
  }
  *count = out.size();
  *ids = static_cast<int *>(
      std::malloc(std::max<size_t>(1, out.size()) * sizeof(int)));
  std::copy(out.begin(), out.end(),
            *ids); // (memcpy of empty out's null data: UB)
  return 0;
}

int strata_spm_decode(void *processor, const int *ids, size_t count,
                      char **text, size_t *size, char **error) {
  std::string out;
  auto status = sp(processor).Decode(std::vector<int>(ids, ids + count), &out);
  if (!status.ok()) {
    *error = copyOut(status.ToString());
    return 1;
  }
  *size = out.size();
  *text = copyOut(out);
  return 0;
}

int strata_spm_info(void *processor, int what) {
  SentencePieceProcessor &p = sp(processor);
  switch (what) {
  case 0:
    return p.GetPieceSize();
  case 1:
    return p.bos_id();
  case 2:
    return p.eos_id();
  case 3:
    return p.pad_id();
  default:
    return p.unk_id();
  }
}

int strata_spm_piece_to_id(void *processor, const char *piece, size_t size) {
  SentencePieceProcessor &p = sp(processor);
  absl::string_view s(piece, size);
  int id = p.PieceToId(s);
  // PieceToId answers unk_id for unknown pieces.
  return id == p.unk_id() && p.IdToPiece(id) != std::string(s) ? -1 : id;
}

} // extern "C"
