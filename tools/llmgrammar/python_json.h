// Python's json.dumps(value, ensure_ascii=False) in C++: the text MaskBench forces
// through a constraint (separators ", " and ": ", non-ASCII raw, floats as Python's repr).
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace llmserve::llmgrammar {

std::string PythonJsonDumps(const nlohmann::ordered_json& value);

}  // namespace llmserve::llmgrammar
