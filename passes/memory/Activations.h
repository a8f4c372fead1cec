//===- Activations.h - What a microbatch keeps from forward to backward
//----===//
//
// The stash of a microbatch graph (forward + backward, after autodiff) is the
// set of forward node results that backward nodes read: they live from the
// forward pass of a microbatch to its backward pass, so a pipeline stage
// holds one copy per microbatch in flight. Graph inputs (parameters, tokens,
// labels) are not stashed.
//
// Besides its results, a forward op may keep internal state for its
// gradient. How much depends on the kernels, so it is a model:
//
//   Strata    strata's kernels: none. dropout_grad regenerates its mask from
//             the counter-based generator, and attention_grad recomputes the
//             probabilities from q, k, v (FlashAttention-style), so Megatron's
//             "selective recomputation" of the attention core is built in.
//   Megatron  Megatron-LM's unfused PyTorch layers, the accounting of
//             Korthikanti et al. 2022 (Table 2): dropout keeps a 1-byte mask
//             per element; the core attention keeps the softmax output, the
//             attention-dropout mask (1 byte) and the dropped-out
//             probabilities per score, (2 * dtype + 1) bytes * B * heads * S^2
//             (5as^2b in fp16; GPT-3 trains with attention dropout). A node
//             marked `recompute` keeps nothing: its backward recomputes it
//             (selective recomputation marks the attention nodes).
//
// Under the Megatron model the stash of a GPT layer in fp16 is exactly the
// paper's sbh(34 + 5as/h) and its parallel variants (see MemoryPlan.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>

namespace strata {

/// Which kernels' saved state to count (see the file comment).
enum class SavedStateModel { Strata, Megatron };

/// "strata" / "megatron" -> the model.
std::optional<SavedStateModel> parseSavedStateModel(llvm::StringRef name);
llvm::StringRef savedStateModelName(SavedStateModel m);

/// Forward node results read by backward nodes, in value order.
llvm::SmallVector<ValueId> stashedValues(const Graph &g);

/// Bytes node `n` keeps for its gradient besides its results: 0 for
/// backward nodes, for nodes marked `recompute`, and under the Strata model.
int64_t internalSavedBytes(const Graph &g, const Node &n, SavedStateModel m);

/// Stash bytes of one microbatch: stashed values plus internal state.
int64_t stashBytes(const Graph &g, SavedStateModel m = SavedStateModel::Strata);

/// The stash split by model unit (ModelUnits.h) as a map from unit name
/// ("embed", "layers.3", "head") to bytes. A stashed value counts for the
/// unit of the backward nodes that read it (the first such node when they
/// differ); internal state for the unit of its node. For a block this is
/// Korthikanti et al.'s "activation memory per transformer layer": layer i
/// owns its input, read by its first norm's gradient.
std::map<std::string, int64_t> stashBytesByUnit(const Graph &g,
                                                SavedStateModel m);

} // namespace strata
