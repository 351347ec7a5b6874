// Prompts files shared by llmrun and llmbench: one JSON string per line (so empty prompts
// and newlines can be written); blank lines are skipped; a CR before the LF is ignored.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace llmserve {

// Every prompt in `path`, in order. NOT_FOUND if it cannot be opened; INVALID_ARGUMENT
// naming the line when a non-blank line is not one JSON string.
inline absl::StatusOr<std::vector<std::string>> ReadPromptsFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open prompts file"));
  std::vector<std::string> prompts;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", n, ": expected one JSON string per line"));
    }
    prompts.push_back(j.get<std::string>());
  }
  return prompts;
}

}  // namespace llmserve
