// The engine flags (server/engine_flags.h): the same command line gives the same engine
// through the server's path (EngineSpecFromFlags → SetUpModel) and llmrun's
// (llmrun::ArgsFromFlags → LoadModelFiles + BuildEngine, which is engine_bench's too,
// before it raises --max-running to its largest concurrency); with no flags the spec is
// EngineSpec{} (ServerConfig's), and its scheduler settings agree with SchedulerConfig's.
#include "server/engine_flags.h"

#include <string>
#include <vector>

#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/engine_setup.h"
#include "server/model_setup.h"
#include "server/server_config.h"
#include "tests/util/test_assets.h"
#include "tools/llmrun/llmrun_flags.h"

namespace llmserve {
namespace {

// Every EngineSpec field, for comparing two specs.
std::string SpecString(const EngineSpec& s) {
  return absl::StrCat("model=", s.model_path, " tokenizer=", s.tokenizer_path, " threads=", s.threads,
                      " weight_dtype=", WeightDTypeFlagValue(s), " kv_dtype=", KvDTypeFlagValue(s),
                      " kv_cache_bytes=", s.kv_cache_bytes, " kv_blocks=", s.kv_blocks, " block_size=", s.block_size,
                      " max_running=", s.max_running, " max_batched_tokens=", s.max_batched_tokens,
                      " max_prefill_chunk=", s.max_prefill_chunk, " max_waiting=", s.max_waiting,
                      " step_policy=", StepPolicyName(s.step_policy), " max_decode_stall=", s.max_decode_stall,
                      " piggyback=", PiggybackName(s.piggyback), " prefill_spread_steps=", s.prefill_spread_steps,
                      " mixed_step_tokens=", s.mixed_step_tokens, " prompt_pack_rows=", s.prompt_pack_rows,
                      " channel_capacity=", s.channel_capacity);
}

std::string RuntimeString(const RuntimeConfig& r) {
  return absl::StrCat(DTypeName(r.weight_dtype), " ", static_cast<int>(r.weight_quant), " ", DTypeName(r.kv_dtype),
                      " ", r.threads);
}

// Parses `flags` (after a program name) with `options`, as the binaries do.
CommandLine Parse(std::vector<std::string> flags, const CommandLineOptions& options) {
  flags.insert(flags.begin(), "test");
  std::vector<char*> argv;
  for (std::string& f : flags) argv.push_back(f.data());
  argv.push_back(nullptr);
  return ParseCommandLineOrExit(static_cast<int>(flags.size()), argv.data(), options);
}

TEST(EngineFlagsTest, DefaultsAreEngineSpecsAndAgreeWithTheScheduler) {
  absl::FlagSaver saver;
  Parse({}, CommandLineOptions{});
  auto spec = EngineSpecFromFlags();
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(SpecString(*spec), SpecString(EngineSpec{}));
  EXPECT_EQ(SpecString(*spec), SpecString(ServerConfig{}));
  // The values the server has always run with.
  EXPECT_EQ(spec->kv_cache_bytes, int64_t{2} << 30);
  EXPECT_EQ(spec->max_running, 64);
  EXPECT_EQ(spec->max_batched_tokens, 512);
  EXPECT_EQ(spec->max_prefill_chunk, 0);
  EXPECT_EQ(spec->max_waiting, 256);
  EXPECT_EQ(spec->prefill_spread_steps, 128);
  EXPECT_EQ(spec->mixed_step_tokens, 12);
  EXPECT_EQ(spec->piggyback, Piggyback::kAuto);
  // Resolved into the scheduler's terms, the defaults are SchedulerConfig's, but for
  // piggybacking (off in SchedulerConfig{}, for the scheduler's own tests).
  ModelConfig model;
  model.context_length = 2048;
  SchedulerConfig resolved = EngineConfigFor(*spec, model, 100, {}).scheduler;
  SchedulerConfig plain;
  EXPECT_EQ(resolved.max_prefill_chunk, plain.max_prefill_chunk);
  EXPECT_EQ(resolved.max_waiting, plain.max_waiting);
  EXPECT_EQ(resolved.max_running, plain.max_running);
  EXPECT_EQ(resolved.block_size, plain.block_size);
  EXPECT_EQ(resolved.max_decode_stall, plain.max_decode_stall);
  EXPECT_EQ(resolved.mixed_step_tokens, plain.mixed_step_tokens);
  EXPECT_EQ(plain.prefill_spread_steps, 0);
  EXPECT_EQ(resolved.prefill_spread_steps, 128);
  EXPECT_EQ(plain.prompt_pack_rows, 0);
  EXPECT_EQ(resolved.prompt_pack_rows, 16);
}

TEST(EngineFlagsTest, ServerAndLlmrunBuildTheSameEngineForTheSameFlags) {
  LLMSERVE_REQUIRE_ASSET(model, "models/llama2c/stories260K.bin");
  LLMSERVE_REQUIRE_ASSET(tok, "models/llama2c/tok512.bin");
  absl::FlagSaver saver;
  // Dashed and underscored names, "--name value" and "--name=value", llmrun's old
  // --prefill-chunk spelling and its repeated --prompt among them.
  const CommandLine command_line =
      Parse({"--model", model, "--tokenizer=" + tok, "--threads=2", "--weight-dtype", "f32", "--kv_dtype=f32",
             "--max-running", "4", "--max_batched_tokens=64", "--prefill-chunk=32", "--max-waiting=9",
             "--kv-cache-bytes=1M", "--block-size", "8", "--step-policy=mixed", "--piggyback=on",
             "--prefill-spread-steps=7", "--mixed-step-tokens=6", "--prompt-pack-rows=20", "--channel-capacity=5", "--prompt", "Once",
             "--prompt=upon"},
            llmrun::CommandLineOptionsForLlmrun());
  EXPECT_EQ(command_line.repeated.at("prompt"), (std::vector<std::string>{"Once", "upon"}));

  // The server's path: main.cc's ServerConfig is EngineSpecFromFlags() plus its own flags.
  auto server_spec = EngineSpecFromFlags();
  ASSERT_TRUE(server_spec.ok()) << server_spec.status();
  ServerConfig server;
  static_cast<EngineSpec&>(server) = *server_spec;
  ASSERT_TRUE(server.Validate().ok()) << server.Validate();
  // llmrun's.
  auto args = llmrun::ArgsFromFlags(command_line);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->prompts, (std::vector<std::string>{"Once", "upon"}));

  EXPECT_EQ(SpecString(args->spec), SpecString(server));
  EXPECT_EQ(args->spec.max_prefill_chunk, 32);
  EXPECT_EQ(args->spec.block_size, 8);
  EXPECT_EQ(args->spec.kv_cache_bytes, 1 << 20);
  EXPECT_EQ(RuntimeString(RuntimeConfigFor(args->spec)), RuntimeString(RuntimeConfigFor(server)));

  // The engines themselves.
  auto setup = SetUpModel(server);
  ASSERT_TRUE(setup.ok()) << setup.status();
  auto loaded = LoadModelFiles(args->spec);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto built = BuildEngine(args->spec, *loaded->weights, *loaded->tokenizer);
  ASSERT_TRUE(built.ok()) << built.status();
  const std::string described = DescribeEngineConfig(built->engine->config());
  EXPECT_EQ(described, DescribeEngineConfig(setup->engine->config()));
  EXPECT_NE(described.find("max_prefill_chunk=32 max_waiting=9"), std::string::npos) << described;
  EXPECT_NE(described.find("prefill_spread_steps=7 mixed_step_tokens=6 prefill_policy=piggyback (decode steps "
                           "filled to 6 rows while the pending prompt tokens fit in 7) prompt_pack_rows=20 channel_capacity=5"),
            std::string::npos)
      << described;
  EXPECT_EQ(built->num_blocks, setup->num_blocks);
}

TEST(EngineFlagsTest, BadValuesNameTheFlag) {
  absl::FlagSaver saver;
  Parse({"--max-running=0"}, CommandLineOptions{});
  auto spec = EngineSpecFromFlags();
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("--max-running=0"), std::string::npos) << spec.status();
  Parse({"--max-running=64", "--prompt-pack-rows=-1"}, CommandLineOptions{});
  spec = EngineSpecFromFlags();
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("--prompt-pack-rows=-1"), std::string::npos) << spec.status();
}

TEST(EngineFlagsTest, UnknownFlagExitsTwo) {
  EXPECT_EXIT(Parse({"--no-such-flag=1"}, CommandLineOptions{}), ::testing::ExitedWithCode(kBadFlagsExitCode),
              "Unknown command line flag 'no_such_flag'");
  EXPECT_EXIT(Parse({"positional"}, CommandLineOptions{}), ::testing::ExitedWithCode(kBadFlagsExitCode),
              "unexpected argument 'positional'");
}

TEST(EngineFlagsTest, HelpAndVersionExitZero) {
  EXPECT_EXIT(Parse({"--help"}, llmrun::CommandLineOptionsForLlmrun()), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(Parse({"--version"}, CommandLineOptions{}), ::testing::ExitedWithCode(0), "");
}

// --kv-cache-bytes' default is written from EngineSpec's number; it must parse back.
TEST(EngineFlagsTest, FormatByteSizeRoundTrips) {
  EXPECT_EQ(FormatByteSize(int64_t{2} << 30), "2G");
  EXPECT_EQ(FormatByteSize(int64_t{1536} << 20), "1536M");
  EXPECT_EQ(FormatByteSize(1000), "1000");
  for (int64_t bytes : {int64_t{1}, int64_t{1000}, int64_t{3} << 10, int64_t{2} << 30, int64_t{5} << 40}) {
    auto parsed = ParseByteSize("kv-cache-bytes", FormatByteSize(bytes));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, bytes);
  }
}

}  // namespace
}  // namespace llmserve
