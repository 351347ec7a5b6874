// ServerConfig::Validate (a table of bad settings and the flag each message names),
// ParseByteSize, ParseComputeDType, ListenAddress, ChooseKvBlocks, ModelNameFromPath.
#include "server/server_config.h"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/kv_cache.h"
#include "server/demo_model.h"
#include "server/model_setup.h"

namespace llmserve {
namespace {

TEST(ServerConfigTest, DefaultsAreValid) {
  ServerConfig c;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  EXPECT_EQ(c.port, 50051);
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(c.ListenAddress(), "0.0.0.0:50051");
}

struct BadCase {
  std::string name;
  std::function<void(ServerConfig&)> change;
  std::string message;  // substring of the error
};

TEST(ServerConfigTest, InvalidSettingsNameTheFlag) {
  const std::vector<BadCase> cases = {
      {"tokenizer without model", [](ServerConfig& c) { c.tokenizer_path = "tok.bin"; }, "--tokenizer needs --model"},
      {"empty host", [](ServerConfig& c) { c.host = ""; }, "--host"},
      {"negative port", [](ServerConfig& c) { c.port = -1; }, "--port=-1"},
      {"port too large", [](ServerConfig& c) { c.port = 65536; }, "--port=65536"},
      {"negative threads", [](ServerConfig& c) { c.threads = -2; }, "--threads=-2"},
      {"zero kv bytes", [](ServerConfig& c) { c.kv_cache_bytes = 0; }, "--kv-cache-bytes=0"},
      {"negative kv blocks", [](ServerConfig& c) { c.kv_blocks = -1; }, "--kv-blocks=-1"},
      {"zero block size", [](ServerConfig& c) { c.block_size = 0; }, "--block-size=0"},
      {"huge block size", [](ServerConfig& c) { c.block_size = 2048; }, "--block-size=2048"},
      {"zero max running", [](ServerConfig& c) { c.max_running = 0; }, "--max-running=0"},
      {"batched below running", [](ServerConfig& c) { c.max_batched_tokens = 32; }, "--max-batched-tokens=32"},
      {"chunk above batched", [](ServerConfig& c) { c.max_prefill_chunk = 513; }, "--max-prefill-chunk=513"},
      {"negative chunk", [](ServerConfig& c) { c.max_prefill_chunk = -1; }, "--max-prefill-chunk=-1"},
      {"zero max waiting", [](ServerConfig& c) { c.max_waiting = 0; }, "--max-waiting=0"},
      {"zero decode stall", [](ServerConfig& c) { c.max_decode_stall = 0; }, "--max-decode-stall=0"},
      {"negative spread", [](ServerConfig& c) { c.prefill_spread_steps = -1; }, "--prefill-spread-steps=-1"},
      {"zero mixed step", [](ServerConfig& c) { c.mixed_step_tokens = 0; }, "--mixed-step-tokens=0"},
      {"zero channel", [](ServerConfig& c) { c.channel_capacity = 0; }, "--channel-capacity=0"},
      {"negative drain", [](ServerConfig& c) { c.drain_timeout_seconds = -1; }, "--drain-timeout=-1"},
      {"tiny request bound", [](ServerConfig& c) { c.max_request_bytes = 100; }, "--max-request-bytes=100"},
      {"negative prompt bound", [](ServerConfig& c) { c.max_prompt_bytes = -1; }, "--max-prompt-bytes=-1"},
      {"prompt bound above the request's", [](ServerConfig& c) { c.max_prompt_bytes = (4 << 20) + 1; },
       "--max-prompt-bytes=4194305"},
      {"f16 weights", [](ServerConfig& c) { c.weight_dtype = DType::kF16; }, "f16 is not supported"},
      {"f16 kv", [](ServerConfig& c) { c.kv_dtype = DType::kF16; }, "f16 is not supported"},
      {"log level", [](ServerConfig& c) { c.log_level = "verbose"; }, "--log-level=verbose"},
      {"http port too large", [](ServerConfig& c) { c.http_port = 70000; }, "--http-port=70000"},
      {"http port is the grpc port", [](ServerConfig& c) { c.http_port = 50051; },
       "--http-port=50051 is the same as --port"},
      {"http port is the metrics port", [](ServerConfig& c) { c.http_port = 9400; },
       "--http-port=9400 is the same as --metrics-port"},
      {"zero http threads", [](ServerConfig& c) { c.http_threads = 0; }, "--http-threads=0"},
      {"no http connections", [](ServerConfig& c) { c.http_max_connections = 0; }, "--http-max-connections=0"},
      {"negative per-address cap", [](ServerConfig& c) { c.http_max_connections_per_address = -1; },
       "--http-max-connections-per-address=-1"},
      {"zero idle timeout", [](ServerConfig& c) { c.http_idle_timeout_seconds = 0; }, "--http-idle-timeout=0"},
      {"zero header timeout", [](ServerConfig& c) { c.http_header_timeout_seconds = 0; }, "--http-header-timeout=0"},
      {"zero body timeout", [](ServerConfig& c) { c.http_body_timeout_seconds = 0; }, "--http-body-timeout=0"},
      {"negative body rate", [](ServerConfig& c) { c.http_body_min_rate = -1; }, "--http-body-min-rate=-1"},
      {"zero write timeout", [](ServerConfig& c) { c.http_write_timeout_seconds = 0; }, "--http-write-timeout=0"},
      {"tiny header bound", [](ServerConfig& c) { c.http_max_header_bytes = 100; }, "--http-max-header-bytes=100"},
      {"no pipelining room", [](ServerConfig& c) { c.http_max_pipelined = 0; }, "--http-max-pipelined=0"},
      {"zero streams per connection", [](ServerConfig& c) { c.max_streams_per_connection = 0; },
       "--max-streams-per-connection=0"},
      {"cert without key", [](ServerConfig& c) { c.tls.cert_path = "server.pem"; }, "--tls-cert and --tls-key"},
      {"key without cert", [](ServerConfig& c) { c.tls.key_path = "server.key"; }, "--tls-cert and --tls-key"},
      {"client CA without TLS", [](ServerConfig& c) { c.tls.client_ca_path = "ca.pem"; },
       "--tls-client-ca needs --tls-cert"},
      {"metrics TLS without TLS", [](ServerConfig& c) { c.metrics_tls = true; }, "--metrics-tls=on needs --tls-cert"},
      {"zero reload interval",
       [](ServerConfig& c) {
         c.tls.cert_path = "server.pem";
         c.tls.key_path = "server.key";
         c.tls.reload_seconds = 0;
       },
       "--tls-reload-interval=0"},
  };
  for (const BadCase& bc : cases) {
    SCOPED_TRACE(bc.name);
    ServerConfig c;
    bc.change(c);
    const absl::Status s = c.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(bc.message), std::string::npos) << s.message();
  }
}

TEST(ServerConfigTest, PromptBytesDefaultFromTheContextWithinTheRequestBound) {
  ServerConfig c;
  EXPECT_EQ(c.EffectiveMaxPromptBytes(512), 16384);      // 32 bytes a token
  EXPECT_EQ(c.EffectiveMaxPromptBytes(64), 4096);        // at least 4096
  EXPECT_EQ(c.EffectiveMaxPromptBytes(1 << 20), 4 << 20);  // at most --max-request-bytes
  c.max_prompt_bytes = 1000;
  EXPECT_EQ(c.EffectiveMaxPromptBytes(512), 1000);
}

TEST(ServerConfigTest, KvBlocksOverrideTheByteBudget) {
  ServerConfig c;
  c.kv_cache_bytes = 0;  // irrelevant once kv_blocks is set
  c.kv_blocks = 10;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  auto blocks = ChooseKvBlocks(c, DemoModelConfig());
  ASSERT_TRUE(blocks.ok()) << blocks.status();
  EXPECT_EQ(*blocks, 10);
}

TEST(ServerConfigTest, KvBlocksFromBytesCappedToWhatCanBeUsed) {
  const ModelConfig m = DemoModelConfig();
  const size_t per_block = KvCacheConfig::ForModel(m, 16, DType::kF32).BytesPerBlock();
  ASSERT_GT(per_block, 0u);
  ServerConfig c;
  c.kv_dtype = DType::kF32;
  c.kv_cache_bytes = static_cast<int64_t>(per_block) * 100 + 1;
  auto small = ChooseKvBlocks(c, m);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(*small, 100);
  c.kv_cache_bytes = int64_t{1} << 40;  // far more than 64 contexts of 2048 tokens
  c.max_running = 3;
  auto capped = ChooseKvBlocks(c, m);
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ(*capped, 3 * 2048 / 16);
  c.kv_cache_bytes = static_cast<int64_t>(per_block) - 1;
  auto none = ChooseKvBlocks(c, m);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("holds no KV block"), std::string::npos) << none.status();
}

TEST(ServerConfigTest, ParseByteSize) {
  const std::vector<std::pair<std::string, int64_t>> good = {
      {"1073741824", int64_t{1} << 30}, {"2G", int64_t{2} << 30}, {"512M", int64_t{512} << 20},
      {"512MiB", int64_t{512} << 20},   {"4KB", 4096},            {"1T", int64_t{1} << 40},
      {"100B", 100},                    {"3g", int64_t{3} << 30}};
  for (const auto& [text, want] : good) {
    auto got = ParseByteSize("kv-cache-bytes", text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status();
    EXPECT_EQ(*got, want) << text;
  }
  for (const std::string text : {"", "G", "-1", "2X", "1.5G", "2 G", "99999999999999999999", "9000000T"}) {
    auto got = ParseByteSize("kv-cache-bytes", text);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << "'" << text << "'";
    EXPECT_NE(got.status().message().find("--kv-cache-bytes"), std::string::npos);
  }
}

TEST(ServerConfigTest, ParseComputeDType) {
  EXPECT_EQ(ParseComputeDType("kv-dtype", "f32", false).value(), DType::kF32);
  EXPECT_EQ(ParseComputeDType("kv-dtype", "bf16", false).value(), DType::kBF16);
  EXPECT_FALSE(ParseComputeDType("weight-dtype", "auto", true).value().has_value());
  EXPECT_FALSE(ParseComputeDType("kv-dtype", "auto", false).ok());
  const auto bad = ParseComputeDType("kv-dtype", "f16", false);
  EXPECT_NE(bad.status().message().find("--kv-dtype=f16"), std::string::npos) << bad.status();
}

// The KV cache follows the weights unless set: bf16 weights get a bf16 cache.
TEST(ServerConfigTest, KvDTypeDefaultsToTheWeightDType) {
  ServerConfig c;
  EXPECT_EQ(c.EffectiveKvDType(), c.EffectiveWeightDType());
  c.weight_dtype = DType::kF32;
  EXPECT_EQ(c.EffectiveKvDType(), DType::kF32);
  c.weight_dtype = DType::kBF16;
  EXPECT_EQ(c.EffectiveKvDType(), DType::kBF16);
  c.kv_dtype = DType::kF32;
  EXPECT_EQ(c.EffectiveKvDType(), DType::kF32);
  // A bf16 cache halves the bytes per block, so a byte budget holds twice the blocks.
  c.weight_dtype = DType::kF32;
  c.kv_dtype.reset();
  const ModelConfig m = DemoModelConfig();
  c.kv_cache_bytes = static_cast<int64_t>(KvCacheConfig::ForModel(m, 16, DType::kF32).BytesPerBlock()) * 100;
  auto f32_blocks = ChooseKvBlocks(c, m);
  ASSERT_TRUE(f32_blocks.ok()) << f32_blocks.status();
  EXPECT_EQ(*f32_blocks, 100);
  c.kv_dtype = DType::kBF16;
  auto bf16_blocks = ChooseKvBlocks(c, m);
  ASSERT_TRUE(bf16_blocks.ok()) << bf16_blocks.status();
  EXPECT_EQ(*bf16_blocks, 200);
}

TEST(ServerConfigTest, ListenAddressBracketsIpv6) {
  ServerConfig c;
  c.port = 8000;
  for (const auto& [host, want] : std::vector<std::pair<std::string, std::string>>{
           {"127.0.0.1", "127.0.0.1:8000"}, {"::", "[::]:8000"}, {"::1", "[::1]:8000"},
           {"[::1]", "[::1]:8000"}, {"localhost", "localhost:8000"}}) {
    c.host = host;
    EXPECT_EQ(c.ListenAddress(), want);
  }
}

TEST(ServerConfigTest, MetricsListenOnTheirOwnHostOrTheServers) {
  ServerConfig c;
  c.host = "::";
  c.metrics_port = 9400;
  EXPECT_EQ(c.MetricsAddress(), "[::]:9400");
  c.metrics_host = "127.0.0.1";
  EXPECT_EQ(c.MetricsAddress(), "127.0.0.1:9400");
  EXPECT_EQ(c.ListenAddress(), "[::]:50051");
}

TEST(ServerConfigTest, HttpApiListensOnTheServersHost) {
  ServerConfig c;
  EXPECT_EQ(c.http_port, 0) << "the HTTP API is off by default";
  c.http_port = 8000;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  EXPECT_EQ(c.HttpAddress(), "0.0.0.0:8000");
  c.host = "::1";
  EXPECT_EQ(c.HttpAddress(), "[::1]:8000");
}

// The HTTP servers' bounds come from the http_* settings (and --max-request-bytes), and
// are valid server options.
TEST(ServerConfigTest, HttpOptionsCarryEveryBound) {
  ServerConfig c;
  c.http_threads = 3;
  c.http_max_connections = 10;
  c.http_max_connections_per_address = 20;  // above the total: the total binds first
  c.http_idle_timeout_seconds = 4;
  c.http_header_timeout_seconds = 5;
  c.http_body_timeout_seconds = 6;
  c.http_body_min_rate = 7;
  c.http_write_timeout_seconds = 8;
  c.http_max_header_bytes = 9000;
  c.http_max_pipelined = 2;
  c.max_request_bytes = 5000;
  ASSERT_TRUE(c.Validate().ok()) << c.Validate();
  const http::HttpServerOptions o = c.HttpOptions("api");
  EXPECT_TRUE(o.Validate().ok()) << o.Validate();
  EXPECT_EQ(o.name, "api");
  EXPECT_EQ(o.threads, 3);
  EXPECT_EQ(o.max_connections, 10);
  EXPECT_EQ(o.max_connections_per_address, 20);
  EXPECT_EQ(o.idle_timeout, absl::Seconds(4));
  EXPECT_EQ(o.header_timeout, absl::Seconds(5));
  EXPECT_EQ(o.body_timeout, absl::Seconds(6));
  EXPECT_EQ(o.body_min_rate, 7);
  EXPECT_EQ(o.write_timeout, absl::Seconds(8));
  EXPECT_EQ(o.max_header_bytes, 9000u);
  EXPECT_EQ(o.max_pipelined, 2);
  EXPECT_EQ(o.max_body_bytes, 5000u);
  EXPECT_EQ(o.Describe(),
            "3 threads, 10 connections (20 per address), idle 4s, head 5s (9000 bytes), body 6s + 7 B/s, write 8s, "
            "pipelining 2");
}

TEST(ServerConfigTest, TlsDescribesWhatIsOn) {
  ServerConfig c;
  EXPECT_EQ(c.tls.Describe(), "plaintext");
  c.tls.cert_path = "server.pem";
  c.tls.key_path = "server.key";
  EXPECT_TRUE(c.Validate().ok());
  EXPECT_EQ(c.tls.Describe().rfind("TLS, ", 0), 0u) << c.tls.Describe();
  c.tls.client_ca_path = "ca.pem";
  EXPECT_EQ(c.tls.Describe().rfind("mutual TLS", 0), 0u) << c.tls.Describe();
}

TEST(ServerConfigTest, ReflectionIsOnOffOrOpen) {
  EXPECT_EQ(ServerConfig{}.reflection, ReflectionMode::kOn);
  for (ReflectionMode mode : {ReflectionMode::kOn, ReflectionMode::kOff, ReflectionMode::kOpen}) {
    absl::StatusOr<ReflectionMode> parsed = ParseReflectionMode(ReflectionModeName(mode));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, mode);
  }
  for (const char* bad : {"", "true", "ON", "closed"}) {
    absl::StatusOr<ReflectionMode> parsed = ParseReflectionMode(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(parsed.status().message().find("--reflection="), std::string::npos) << parsed.status();
  }
}

TEST(ServerConfigTest, ModelNameFromPath) {
  EXPECT_EQ(ModelNameFromPath("models/stories15M.bin"), "stories15M");
  EXPECT_EQ(ModelNameFromPath("/x/y/tiny.gguf"), "tiny");
  EXPECT_EQ(ModelNameFromPath("noext"), "noext");
  const std::string dir = ::testing::TempDir() + "/SmolLM-135M";
  std::filesystem::create_directories(dir);
  EXPECT_EQ(ModelNameFromPath(dir), "SmolLM-135M");
  EXPECT_EQ(ModelNameFromPath(dir + "/"), "SmolLM-135M");
}

}  // namespace
}  // namespace llmserve
