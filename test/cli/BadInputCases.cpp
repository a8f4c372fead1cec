//===- BadInputCases.cpp - The bad inputs strata must refuse cleanly ------===//
//
// Add a row to cover a new bad input; then regenerate docs/bad-inputs.md
// with `STRATA_UPDATE_DOCS=1 build/test/cli/cli_test
// --gtest_filter='BadInputDocs.*'`.
//
//===----------------------------------------------------------------------===//
#include "BadInputCases.h"

namespace strata::test {

const char *const kValidSpec = "family: GPT\nvocab_size: 65\nhidden: 32\n"
                               "layers: 2\nheads: 4\nseq_len: 16\n"
                               "micro_batch: 2\n";

std::vector<BadInput> badInputs() {
  const std::string spec = kValidSpec;
  const std::vector<std::string> compileBad = {"compile", "bad.textproto", "-o",
                                               "out.plan"};
  auto bad = [&](const std::string &text) {
    return std::vector<std::pair<std::string, std::string>>{
        {"bad.textproto", text}};
  };
  const char *S = "Model specs", *P = "Plans", *C = "Checkpoints",
             *D = "Data files", *F = "Flags", *V = "Verbs and output files";
  std::vector<std::string> train = {"train", "ok.textproto", "--out", "run"};
  auto trainWith = [&](std::vector<std::string> flags) {
    std::vector<std::string> a = train;
    a.insert(a.end(), flags.begin(), flags.end());
    return a;
  };
  return {
      // clang-format off
      {S, "malformed_textproto", compileBad, "Expected identifier", bad("family: GPT {\n")},
      {S, "unknown_field", compileBad, "unknown field 'hiden' (did you mean 'hidden'?)", bad(spec + "hiden: 64\n")},
      {S, "unknown_enum_value", compileBad, "unknown value 'BERT' for field 'family'", bad("family: BERT\n")},
      {S, "wrong_type", compileBad, "Expected integer", bad(spec + "kv_heads: \"four\"\n")},
      {S, "negative_size", compileBad, "hidden must be positive, got -64", bad("family: GPT\nvocab_size: 65\nhidden: -64\nlayers: 2\nheads: 4\nseq_len: 16\n")},
      {S, "zero_layers", compileBad, "layers must be positive, got 0", bad("family: GPT\nvocab_size: 65\nhidden: 64\nlayers: 0\nheads: 4\nseq_len: 16\n")},
      {S, "heads_not_dividing_hidden", compileBad, "heads (5) must divide hidden (64)", bad("family: GPT\nvocab_size: 65\nhidden: 64\nlayers: 2\nheads: 5\nseq_len: 16\n")},
      {S, "kv_heads_not_dividing_heads", compileBad, "kv_heads (3) must divide heads (4)", bad("family: LLAMA\nvocab_size: 65\nhidden: 64\nlayers: 2\nheads: 4\nkv_heads: 3\nseq_len: 16\n")},
      {S, "odd_head_dim_for_rope", compileBad, "head_dim = hidden / heads = 9 must be even", bad("family: LLAMA\nvocab_size: 65\nhidden: 36\nlayers: 2\nheads: 4\nseq_len: 16\n")},
      {S, "missing_family", compileBad, "missing required field 'family'", bad("vocab_size: 65\nhidden: 64\nlayers: 2\nheads: 4\nseq_len: 16\n")},
      {S, "empty_spec", compileBad, "missing required field 'family'", bad("")},
      {S, "missing_spec_file", compileBad, "cannot read model spec: No such file or directory"},
      {S, "directory_instead_of_spec", {"compile", "dir.textproto", "-o", "out.plan"}, "Is a directory", {{"dir.textproto/x", ""}}},
      {S, "non_finite_training_value", compileBad, "lr must be finite and non-negative, got inf", bad(spec + "training { lr: inf }\n")},
      {P, "truncated_plan", {"inspect", "t.plan"}, "truncated plan", {{"t.plan", "@truncated-plan"}}},
      {P, "garbage_plan", {"inspect", "g.plan"}, "not a strata plan", {{"g.plan", "\x7f" "ELF garbage garbage garbage"}}},
      {P, "newer_version_plan", {"inspect", "n.plan"}, "plan format version 99 is newer", {{"n.plan", "@newer-plan"}}},
      {P, "text_file_as_plan", {"train", "notes.txt"}, "not a strata plan", {{"notes.txt", "family: GPT\n"}}},
      {P, "plan_views_of_a_spec", {"inspect", "ok.textproto", "--programs"}, "has no compiled training step"},
      {P, "exclusive_inspect_modes", {"inspect", "ok.plan", "--ir", "--dot"}, "--ir, --json and --dot are exclusive"},
      {P, "plan_given_to_compile", {"compile", "ok.plan", "-o", "out.plan"}, "this is a compiled plan, not a model spec"},
      {C, "checkpoint_given_to_train", {"train", "checkpoint.bin"}, "this is a training checkpoint, not a model spec or a plan"},
      {C, "checkpoint_given_to_compile", {"compile", "checkpoint.bin", "-o", "out.plan"}, "this is a training checkpoint, not a model spec"},
      {C, "graph_view_of_a_checkpoint", {"inspect", "checkpoint.bin", "--ir"}, "a training checkpoint has no graph"},
      {C, "truncated_checkpoint", {"inspect", "t.bin"}, "truncated", {{"t.bin", "@truncated-checkpoint"}}},
      {C, "corrupt_checkpoint_header", {"inspect", "c.bin"}, "the header is corrupt (CRC-32 mismatch)", {{"c.bin", "@corrupt-checkpoint"}}},
      {C, "resume_without_checkpoint", trainWith({"--resume"}), "checkpoint"},
      {D, "missing_data_file", trainWith({"--data", "nope.txt"}), "nope.txt"},
      {D, "missing_spec_data_path", {"train", "bad.textproto"}, "the training data does not exist", bad(spec + "data { path: \"gone.txt\" }\n")},
      {D, "no_data_at_all", {"train", "bad.textproto"}, "no training data", bad(spec)},
      {D, "empty_data_file", trainWith({"--data", "empty.txt"}), "empty", {{"empty.txt", ""}}},
      {D, "data_shorter_than_a_sequence", trainWith({"--data", "short.txt"}), "short", {{"short.txt", "abcdefgh\n"}}},
      {D, "directory_as_data", trainWith({"--data", "dir"}), "dir", {{"dir/x", ""}}},
      {F, "steps_negative", trainWith({"--steps", "-1"}), "--steps must be >= 1, got -1"},
      {F, "steps_not_a_number", trainWith({"--steps", "many"}), "--steps"},
      {F, "batch_negative", trainWith({"--batch", "-1"}), "--micro-batch must be >= 1, got -1"},
      {F, "global_batch_not_a_multiple", trainWith({"--dp", "2", "--micro-batch", "2", "--global-batch", "10"}), "--global-batch 10 is not a multiple of micro batch 2 x dp 2 = 4 (global batch = micro batch x dp x microbatches; 8 or 12 would fit)"},
      {F, "global_batch_disagrees_with_microbatches", {"compile", "ok.textproto", "-o", "out.plan", "--dp", "2", "--global-batch", "16", "--microbatches", "2"}, "needs 4 microbatches of micro batch 2 x dp 2, but --microbatches is 2"},
      {F, "seq_zero", trainWith({"--seq", "0"}), "--seq must be >= 1, got 0"},
      {F, "microbatches_zero", trainWith({"--microbatches", "0"}), "--microbatches must be >= 1, got 0"},
      {F, "microbatches_disagree_with_grad_accum", trainWith({"--microbatches", "4", "--grad-accum", "2"}), "disagree"},
      {F, "lr_infinite", trainWith({"--lr", "inf"}), "--lr must be a finite number in (0, 1], got inf"},
      {F, "lr_nan", trainWith({"--lr", "nan"}), "--lr must be a finite number"},
      {F, "lr_zero", trainWith({"--lr", "0"}), "--lr must be a finite number in (0, 1], got 0"},
      {F, "min_lr_above_lr", trainWith({"--lr", "0.001", "--min-lr", "0.01"}), "exceeds the peak learning rate"},
      {F, "dropout_one", trainWith({"--dropout", "1"}), "--dropout must be a finite number in [0, 1), got 1"},
      {F, "warmup_negative", trainWith({"--warmup", "-5"}), "--warmup must be >= 0, got -5"},
      {F, "eval_iters_zero", trainWith({"--eval-iters", "0"}), "--eval-iters must be >= 1, got 0"},
      {F, "log_every_zero", trainWith({"--log-every", "0"}), "--log-every must be >= 1, got 0"},
      {F, "sample_negative", trainWith({"--sample", "-1"}), "--sample must be >= 0, got -1"},
      {F, "unknown_tokenizer", trainWith({"--tokenizer", "word"}), "word"},
      {F, "sp_without_tp", trainWith({"--sp"}), "but tp is 1"},
      {F, "tp_zero", trainWith({"--tp", "0"}), "--tp must be >= 1, got 0"},
      {F, "recompute_auto_without_plan", trainWith({"--recompute", "auto"}), "auto needs a compiled plan"},
      {F, "unknown_schedule", trainWith({"--pp", "2", "--schedule", "zigzag"}), "unknown schedule 'zigzag'"},
      {F, "interleaved_microbatches_not_a_multiple", trainWith({"--pp", "2", "--schedule", "interleaved:2", "--microbatches", "3"}), "must be a multiple of 2"},
      {F, "more_stages_than_blocks", trainWith({"--pp", "4"}), "need at least one block each"},
      {F, "compile_microbatches_zero", {"compile", "ok.textproto", "-o", "out.plan", "--microbatches", "0"}, "--microbatches must be >= 1, got 0"},
      {F, "compile_pp_zero", {"compile", "ok.textproto", "-o", "out.plan", "--pp", "0"}, "--pp must be >= 1, got 0"},
      {F, "memory_budget_ambiguous_unit", {"compile", "ok.textproto", "-o", "out.plan", "--memory-budget", "16G"}, "--memory-budget takes a byte count"},
      {F, "memory_budget_too_small", {"compile", "ok.textproto", "-o", "out.plan", "--memory-budget", "1KiB"}, "over --memory-budget 1.00 KiB"},
      {F, "unknown_saved_state", {"compile", "ok.textproto", "-o", "out.plan", "--saved-state", "pytorch"}, "--saved-state must be strata or megatron"},
      {F, "verify_tolerance_zero", {"verify", "ok.textproto", "--tolerance", "0"}, "--tolerance must be a finite number in (0, 1], got 0"},
      {F, "verify_tolerance_nan", {"verify", "ok.textproto", "--tolerance", "nan"}, "--tolerance must be a finite number"},
      {F, "verify_microbatches_zero", {"verify", "ok.textproto", "--microbatches", "0"}, "--microbatches must be >= 1, got 0"},
      {F, "launch_nproc_zero", {"launch", "--nproc", "0", "--", "true"}, "--nproc must be in [1, 1024], got 0"},
      {F, "launch_port_out_of_range", {"launch", "--nproc", "1", "--master-port", "70000", "--", "true"}, "--master-port must be in [0, 65535], got 70000"},
      {F, "launch_grace_negative", {"launch", "--nproc", "1", "--grace", "-1", "--", "true"}, "--grace must be a finite number in [0, 3600], got -1"},
      {F, "launch_heartbeat_timeout_zero", {"launch", "--nproc", "1", "--heartbeat-timeout", "0", "--", "true"}, "--heartbeat-timeout must be a finite number in (0, 86400], got 0"},
      {F, "inspect_kernel_source_unknown_target", {"inspect", "ok.plan", "--kernel-source", "ptx"}, "--kernel-source must be cpp or cuda, got 'ptx'"},
      {F, "inspect_schedule_into_missing_directory", {"inspect", "ok.plan", "--schedule", "nodir/s.svg"}, "the directory 'nodir' does not exist"},
      {F, "unknown_flag", {"compile", "ok.textproto", "-o", "out.plan", "--pipline", "2"}, "unknown flag '--pipline'"},
      {F, "missing_output_flag", {"compile", "ok.textproto"}, "-o"},
      {F, "resume_and_overwrite", trainWith({"--resume", "--overwrite"}), "--resume and --overwrite exclude each other"},
      {F, "save_every_negative", trainWith({"--save-every", "-1"}), "--save-every must be >= 0, got -1"},
      {F, "device_cuda_without_a_driver", trainWith({"--device", "cuda"}), "--device: no CUDA driver: libcuda.so.1 cannot be loaded"},
      {F, "device_unknown", trainWith({"--device", "tpu"}), "--device: unknown device 'tpu' (known: cpu, cuda, cuda-interpret)"},
      {F, "init_from_and_resume", trainWith({"--init-from", "x.bin", "--resume"}), "--init-from and --resume exclude each other"},
      {F, "init_from_missing", trainWith({"--init-from", "nope.bin"}), "--init-from nope.bin: no such file"},
      {F, "trace_steps_zero", trainWith({"--trace", "t.json", "--trace-steps", "0"}), "--trace-steps must be >= 1, got 0"},
      {F, "trace_into_missing_directory", trainWith({"--trace", "nodir/t.json"}), "the directory 'nodir' does not exist"},
      {F, "tp_beyond_the_model", trainWith({"--tp", "4096"}), "attention heads 4 (layers.0.attn) not divisible by tp 4096"},
      {V, "no_verb", {}, "no verb given"},
      {V, "unknown_verb", {"trian"}, "unknown verb 'trian' (did you mean 'train'?"},
      {V, "help_for_an_unknown_verb", {"help", "complie"}, "did you mean 'compile'?"},
      {V, "output_directory_missing", {"compile", "ok.textproto", "-o", "nodir/out.plan"}, "the directory 'nodir' does not exist"},
      {V, "output_is_a_directory", {"compile", "ok.textproto", "-o", "out.plan"}, "it is a directory", {{"out.plan/x", ""}}},
      {V, "out_holds_a_previous_run", train, "holds a previous run (checkpoint.bin); pass --resume to continue it, --overwrite to replace it, or choose another --out", {{"run/checkpoint.bin", ""}}},
      // clang-format on
  };
}

} // namespace strata::test
