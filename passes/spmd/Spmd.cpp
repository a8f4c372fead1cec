//===- Spmd.cpp - The `spmd` pass
//------------------------------------------===//
//
// spmd{keep_partial=dp}: partitions the microbatch graph over its mesh
// (passes/spmd/Partitioner.h). Outputs may stay partial sums over the axes of
// `keep_partial`, joined by '+' (`dp+tp`), or `none` (default dp:
// data-parallel gradients and the loss are reduced once per step by the
// optimizer program, not per microbatch).
//
//===----------------------------------------------------------------------===//
#include "passes/spmd/Spmd.h"

#include "passes/PassManager.h"
#include "passes/spmd/Partitioner.h"

namespace strata {

namespace {
class SpmdPass : public Pass {
public:
  explicit SpmdPass(spmd::PartitionOptions options)
      : options_(std::move(options)) {}
  llvm::StringRef name() const override { return "spmd"; }
  llvm::Expected<bool> run(Graph &g) override {
    auto out = spmd::Partitioner(g, options_).run();
    if (!out)
      return out.takeError();
    g = std::move(*out);
    return true;
  }

private:
  spmd::PartitionOptions options_;
};
} // namespace

std::unique_ptr<Pass> createSpmdPass(spmd::PartitionOptions options) {
  return std::make_unique<SpmdPass>(std::move(options));
}

void registerSpmdPass() {
  registerPass(
      {"spmd",
       "partition over the graph's mesh: propagate shardings, local shapes, "
       "collectives at every reshard",
       [](const PassOptions &o) -> llvm::Expected<std::unique_ptr<Pass>> {
         if (auto e = checkPassOptions("spmd", o, {"keep_partial"}))
           return e;
         spmd::PartitionOptions options;
         auto it = o.find("keep_partial");
         if (it != o.end()) {
           options.keepPartial.clear();
           llvm::SmallVector<llvm::StringRef, 2> axes;
           if (it->second != "none")
             llvm::StringRef(it->second).split(axes, '+');
           for (llvm::StringRef a : axes)
             options.keepPartial.push_back(a.str());
         }
         return createSpmdPass(std::move(options));
       }});
}

} // namespace strata
