// Loads a tokenizer through LoadTokenizer, recording a test failure (not aborting the
// test) if it cannot; returns nullptr then.
#pragma once

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "model/tokenizer/tokenizer_loader.h"

namespace llmserve::testing {

inline std::unique_ptr<Tokenizer> LoadTokenizerOrFail(const std::string& path) {
  auto tok = LoadTokenizer(path);
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? *std::move(tok) : nullptr;
}

}  // namespace llmserve::testing
