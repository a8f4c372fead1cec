//===- HfGradTest.cpp - Imported models' loss and gradients vs transformers
//===//
//
// hf_parity.py (the CTest fixture hf_reference_<case>) imports a random
// transformers model with `strata import-hf --vocab-multiple 1` and records
// transformers' cross-entropy loss and every parameter gradient on one batch,
// renamed and laid out as strata's parameters (hf_models.to_strata, written
// independently of frontends/hf). Here strata's microbatch program (autodiff
// of the imported model) must give the same numbers.
//
// Tolerance: |strata - torch| <= 1e-4 * max|torch| + 1e-9 per tensor, as in
// test/train/TorchParityTest.cpp: both sides are f32 with different
// summation orders (~1e-7 relative seen); a transposed or misplaced weight
// is off by O(1). The 1e-9 floor covers gradients that are zero in exact
// arithmetic (GPT's key bias, which softmax ignores).
//
//===----------------------------------------------------------------------===//
#include "frontends/Models.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/io/Checkpoint.h"
#include "runtime/io/TensorArchive.h"
#include "runtime/parallel/TrainingSession.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata {
namespace {

constexpr double kRelTol = 1e-4, kAbsTol = 1e-9;

::testing::AssertionResult closeTo(const HostTensor &a, const HostTensor &b,
                                   const std::string &what) {
  if (a.numElements() != b.numElements())
    return ::testing::AssertionFailure()
           << what << ": " << a.numElements() << " vs " << b.numElements()
           << " elements";
  double scale = 0, worst = 0;
  int64_t at = 0;
  for (int64_t i = 0; i < b.numElements(); ++i)
    scale = std::max(scale, std::fabs(b.get(i)));
  for (int64_t i = 0; i < a.numElements(); ++i) {
    double d = std::fabs(a.get(i) - b.get(i));
    if (!(d <= worst))
      worst = d, at = i;
  }
  if (worst <= kRelTol * scale + kAbsTol)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": worst |diff| " << worst << " at element " << at
         << " (strata " << a.get(at) << ", torch " << b.get(at)
         << "), max|torch| " << scale;
}

class HfGrad : public ::testing::TestWithParam<const char *> {};

TEST_P(HfGrad, LossAndEveryGradientMatchTransformers) {
  std::string dir = std::string(STRATA_HF_REF_DIR) + "/" + GetParam();
  // No skip: the fixture must have written these (it fails without
  // transformers, and so does this test).
  auto ckpt = loadCheckpoint(dir + "/unpadded/checkpoint.bin");
  ASSERT_TRUE(bool(ckpt)) << llvm::toString(ckpt.takeError());
  auto ref = TensorArchive::read(dir + "/grads");
  ASSERT_TRUE(bool(ref)) << llvm::toString(ref.takeError());
  const llvm::json::Value *specText = ckpt->meta.get("spec");
  ASSERT_TRUE(specText && specText->getAsString());
  auto spec = parseModelSpec(*specText->getAsString(), "imported spec");
  ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
  ModelConfig cfg = resolveModelSpec(*spec);
  ASSERT_EQ(cfg.vocab, cfg.paddedVocab) << "imported with --vocab-multiple 1";

  Graph forward = buildModelGraph(cfg);
  auto session = TrainingSession::create(forward, forward, TrainOptions{},
                                         ParallelConfig{});
  ASSERT_TRUE(bool(session)) << llvm::toString(session.takeError());
  Trainer &t = (*session)->trainer();
  ASSERT_FALSE(
      bool(t.loadParams([&](llvm::StringRef n) { return ckpt->lookup(n); })));
  auto lg = t.lossAndGrads(ref->lookup("tokens")->data<int32_t>(),
                           ref->lookup("labels")->data<int32_t>());
  ASSERT_TRUE(bool(lg)) << llvm::toString(lg.takeError());
  size_t grads = 0;
  for (auto &[name, tensor] : *lg) {
    const std::string &refName = name; // the trainer names the loss "loss"
    const HostTensor *want = ref->lookup(refName);
    ASSERT_NE(want, nullptr) << "transformers reference lacks " << refName;
    EXPECT_TRUE(closeTo(tensor, *want, refName));
    grads += llvm::StringRef(name).startswith("grad.");
  }
  EXPECT_EQ(grads, forward.params().size());
  EXPECT_EQ(grads + 3, ref->size())
      << "tokens, labels, loss and one per parameter";
}

INSTANTIATE_TEST_SUITE_P(
    Families, HfGrad,
    ::testing::Values("gpt2", "gpt2_untied", "llama", "llama_tied", "mistral",
                      "falcon", "falcon_new",
                      // hf_rope_scaling.py: Llama-3.1 scaling
                      "llama31"));

} // namespace
} // namespace strata
