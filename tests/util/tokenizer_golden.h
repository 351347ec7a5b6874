// Checks a Tokenizer against llama.cpp-format test vectors (see vocab_test_vectors.h).
#pragma once

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/util/vocab_test_vectors.h"

namespace llmserve::testing {

// Path of a vector set stored in this repository (tests/golden/tokenizers/<name>), without
// the .inp/.out extension.
inline std::string RepoVectors(const std::string& name) {
  return std::string(LLMSERVE_SOURCE_DIR) + "/tests/golden/tokenizers/" + name;
}

// Encodes every string of `<base>.inp` without BOS and without special-token parsing and
// expects exactly the ids of `<base>.out`; with `roundtrip`, also expects decoding those
// ids to give the string back. Use inside ASSERT_NO_FATAL_FAILURE.
inline void ExpectMatchesVectors(const Tokenizer& tok, const std::string& base, bool roundtrip) {
  std::vector<VocabTestCase> cases;
  std::string error;
  ASSERT_TRUE(LoadVocabTestVectors(base, &cases, &error)) << error;
  ASSERT_GE(cases.size(), 30u) << base;
  int failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const VocabTestCase& c = cases[i];
    auto ids = tok.Encode(c.text, EncodeOptions{});
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, c.ids) << base << " string " << i << ": \"" << c.text << "\"";
    if (*ids != c.ids) ++failures;
    if (roundtrip) {
      EXPECT_EQ(tok.Decode(c.ids), c.text) << base << " decoding string " << i;
    }
    if (failures > 5) break;
  }
}

}  // namespace llmserve::testing
