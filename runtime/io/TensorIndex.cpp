//===- TensorIndex.cpp - Index entries of archives and checkpoints --------===//
#include "runtime/io/TensorIndex.h"

#include "llvm/ADT/STLExtras.h"

namespace strata {

llvm::Expected<TensorEntry>
parseTensorEntry(const llvm::json::Value &v, uint64_t dataBytes,
                 llvm::function_ref<bool(DType)> allowed) {
  TensorEntry e;
  auto fail = [&](const llvm::Twine &why) {
    std::string who =
        e.name.empty() ? "tensor entry" : "tensor '" + e.name + "'";
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   who + ": " + why);
  };
  const llvm::json::Object *obj = v.getAsObject();
  if (!obj)
    return fail("expected an object");
  auto name = obj->getString("name");
  if (!name)
    return fail("missing string \"name\"");
  e.name = name->str();

  auto dtypeName = obj->getString("dtype");
  if (!dtypeName)
    return fail("missing string \"dtype\"");
  std::optional<DType> dtype = parseDType(*dtypeName);
  if (!dtype || !allowed(*dtype))
    return fail("unsupported dtype \"" + *dtypeName + "\"");
  e.type.dtype = *dtype;

  const llvm::json::Array *shape = obj->getArray("shape");
  if (!shape)
    return fail("missing array \"shape\"");
  for (const llvm::json::Value &d : *shape) {
    auto dim = d.getAsInteger();
    if (!dim || *dim < 0)
      return fail("\"shape\" must hold non-negative integers");
    e.type.shape.push_back(*dim);
  }
  // Byte size, refusing sizes past the data before they can overflow. A
  // shape with a 0 holds no bytes, but its other dims must still multiply
  // within 64 bits: element counts (TensorType::numElements) multiply them
  // all (found by the checkpoint fuzzer).
  bool empty = llvm::is_contained(e.type.shape, 0);
  uint64_t limit = empty ? uint64_t(INT64_MAX) : dataBytes;
  uint64_t bytes = uint64_t(dtypeBytes(*dtype));
  for (int64_t dim : e.type.shape) {
    if (dim == 0)
      continue;
    if (bytes > limit / uint64_t(dim))
      return fail(empty ? llvm::Twine("its shape's dims multiply past 64 bits")
                        : "its shape needs more bytes than the " +
                              llvm::Twine(dataBytes) +
                              " data bytes (truncated file?)");
    bytes *= uint64_t(dim);
  }
  if (empty)
    bytes = 0;

  auto offset = obj->getInteger("offset");
  if (!offset || *offset < 0)
    return fail("missing non-negative integer \"offset\"");
  e.offset = uint64_t(*offset);
  if (e.offset > dataBytes || bytes > dataBytes - e.offset)
    return fail("bytes [" + llvm::Twine(e.offset) + ", " +
                llvm::Twine(e.offset + bytes) + ") lie past the end of the " +
                llvm::Twine(dataBytes) + " data bytes (truncated file?)");
  return e;
}

} // namespace strata
