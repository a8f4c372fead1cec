//===- SentencePieceShim.h - C interface to libsentencepiece ----*- C++ -*-===//
//
// Debian's libsentencepiece.so carries its own copy of protobuf-lite and
// exports its symbols; linked into a program that also links libprotobuf
// (the strata CLI does), the two copies interpose each other and the
// program crashes before main. So libsentencepiece is used only through
// this shim, a shared library that SentencePieceTokenizer.cpp loads with
// dlopen(RTLD_LOCAL | RTLD_DEEPBIND): sentencepiece then resolves protobuf
// in its own copy and nothing else sees it.
//
// Buffers returned through out-parameters are malloc'ed; the caller frees
// them. Functions returning int give 0 on success; on failure `*error` is a
// malloc'ed message.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>

extern "C" {

/// A processor for the serialized ModelProto `model`, or null (`*error`).
void *strata_spm_load(const char *model, size_t size, char **error);
void strata_spm_free(void *processor);
/// `*ids` gets `*count` ids of `text`.
int strata_spm_encode(void *processor, const char *text, size_t size, int **ids,
                      size_t *count, char **error);
/// `*text` gets the `*size` bytes of the decoding of `ids`.
int strata_spm_decode(void *processor, const int *ids, size_t count,
                      char **text, size_t *size, char **error);
/// The vocabulary size (what = 0), bos (1), eos (2), pad (3), unk (4) ids.
int strata_spm_info(void *processor, int what);
/// The id of piece `piece`, or -1 if it is not in the vocabulary.
int strata_spm_piece_to_id(void *processor, const char *piece, size_t size);

} // extern "C"
