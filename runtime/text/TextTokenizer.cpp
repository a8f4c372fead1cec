//===- TextTokenizer.cpp - Loading tokenizers from files ------------------===//
#include "runtime/text/TextTokenizer.h"

#include "runtime/text/HfTokenizer.h"
#include "runtime/text/SentencePieceTokenizer.h"

#include "llvm/Support/MemoryBuffer.h"

namespace strata::text {

TextTokenizer::~TextTokenizer() = default;

llvm::Expected<std::unique_ptr<TextTokenizer>>
loadTokenizer(llvm::StringRef content, llvm::StringRef name) {
  llvm::StringRef start = content.ltrim();
  if (start.startswith("{") || start.startswith("["))
    return HfTokenizer::fromJSON(content, name);
  return SentencePieceTokenizer::fromModel(content, name);
}

llvm::Expected<std::unique_ptr<TextTokenizer>>
loadTokenizerFile(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        path + ": error: cannot read tokenizer file (" +
            buf.getError().message() +
            "; pass a tokenizer.json or a SentencePiece .model)");
  return loadTokenizer((*buf)->getBuffer(), path);
}

} // namespace strata::text
