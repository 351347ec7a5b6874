// Reader of ../shared/golden/quant/tiny_{quant,dequant_f32}_llamacpp.txt: llama.cpp's top-8
// logits at every prompt position and its greedy continuation, per file and prompt.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace llmserve::test_util {

struct QuantGoldenCase {
  std::string file;  // "tiny-Q4_K_M.gguf"
  int prompt = 0;
  std::vector<int32_t> prompt_ids;
  std::vector<std::vector<std::pair<int32_t, float>>> top;  // [position] top-8 (id, logit), descending
  std::vector<int32_t> greedy;
};

inline std::vector<int32_t> ReadIds(const std::string& rest) {
  std::istringstream s(rest);
  std::vector<int32_t> ids;
  for (int32_t id; s >> id;) ids.push_back(id);
  return ids;
}

inline std::vector<QuantGoldenCase> ReadQuantGolden(const std::string& path) {
  std::ifstream in(path);
  std::vector<QuantGoldenCase> out;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("=== FILE ", 0) == 0) {
      QuantGoldenCase c;
      std::istringstream s(line.substr(9));
      s >> c.file;
      const size_t p = line.find("PROMPT ");
      c.prompt = p == std::string::npos ? -1 : std::stoi(line.substr(p + 7));
      out.push_back(c);
    } else if (out.empty()) {
      continue;
    } else if (line.rfind("prompt_ids: ", 0) == 0) {
      out.back().prompt_ids = ReadIds(line.substr(12));
    } else if (line.rfind("pos ", 0) == 0) {
      std::istringstream s(line.substr(line.find(':') + 1));
      std::vector<std::pair<int32_t, float>> top;
      for (std::string kv; s >> kv;) {
        const size_t colon = kv.find(':');
        top.emplace_back(std::stoi(kv.substr(0, colon)), std::stof(kv.substr(colon + 1)));
      }
      out.back().top.push_back(top);
    } else if (line.rfind("greedy: ", 0) == 0) {
      out.back().greedy = ReadIds(line.substr(8));
    }
  }
  return out;
}

}  // namespace llmserve::test_util
