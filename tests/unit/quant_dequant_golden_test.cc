// Dequantization of llama.cpp's quantized GGUF files against llama.cpp's own Python reader
// (gguf-py): ../shared/golden/quant/tiny_quant_dequant.txt gives, for every tensor of block
// 0, the embedding and the output head of each tiny-*.gguf, the sum and the sum of squares
// of all values and the first 64 values of rows 0 and 1.
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/formats/gguf_file.h"
#include "model/quant/ggml_blocks.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

struct GoldenTensor {
  std::string file, tensor, type;
  int64_t rows = 0, cols = 0;
  double sum = 0, sumsq = 0;
  std::vector<float> row0, row1;
};

std::vector<float> Floats(std::istringstream& in) {
  std::vector<float> v;
  for (float f; in >> f;) v.push_back(f);
  return v;
}

std::vector<GoldenTensor> ReadGolden(const std::string& path) {
  std::ifstream in(path);
  std::vector<GoldenTensor> out;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("=== FILE ", 0) == 0) {
      GoldenTensor t;
      std::istringstream s(line.substr(9));
      std::string kw;
      s >> t.file >> kw >> t.tensor >> kw >> t.type >> kw >> t.rows >> t.cols;
      out.push_back(t);
    } else if (!out.empty() && line.rfind("sum: ", 0) == 0) {
      std::istringstream s(line.substr(5));
      std::string kw;
      s >> out.back().sum >> kw >> out.back().sumsq;
    } else if (!out.empty() && line.rfind("row0: ", 0) == 0) {
      std::istringstream s(line.substr(6));
      out.back().row0 = Floats(s);
    } else if (!out.empty() && line.rfind("row1: ", 0) == 0) {
      std::istringstream s(line.substr(6));
      out.back().row1 = Floats(s);
    }
  }
  return out;
}

// Equal to float32 rounding: within 2 ulp (the golden text carries 8 significant digits).
void ExpectClose(float got, float want, const std::string& what) {
  const float tol = 2.5e-7f * std::fabs(want) + 1e-12f;
  EXPECT_NEAR(got, want, tol) << what;
}

TEST(QuantDequantGoldenTest, EveryListedTensorMatchesGgufPy) {
  LLMSERVE_REQUIRE_ASSET(golden, "golden/quant/tiny_quant_dequant.txt");
  const std::vector<GoldenTensor> cases = ReadGolden(golden);
  ASSERT_GE(cases.size(), 40u) << "too few tensors in " << golden;
  std::map<std::string, int> per_file;
  std::map<std::string, int> per_type;
  for (const GoldenTensor& g : cases) {
    SCOPED_TRACE(g.file + " " + g.tensor);
    LLMSERVE_REQUIRE_ASSET(path, "models/gguf/quant/" + g.file);
    auto file = GgufFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    const GgufTensorInfo* info = (*file)->FindTensor(g.tensor);
    ASSERT_NE(info, nullptr);
    auto view = (*file)->View(*info);
    ASSERT_TRUE(view.ok()) << view.status();
    ASSERT_TRUE(view->quantized());
    EXPECT_EQ(view->TypeName(), g.type);
    ASSERT_EQ(view->shape, (std::vector<int64_t>{g.rows, g.cols}));
    const size_t row_bytes = view->nbytes / static_cast<size_t>(g.rows);
    std::vector<float> row(static_cast<size_t>(g.cols));
    double sum = 0, sumsq = 0, abs_sum = 0;
    for (int64_t r = 0; r < g.rows; ++r) {
      DequantizeRow(view->quant, view->data + static_cast<size_t>(r) * row_bytes, g.cols, row.data());
      for (float v : row) {
        sum += v;
        sumsq += static_cast<double>(v) * v;
        abs_sum += std::fabs(v);
      }
      if (r < 2) {
        const std::vector<float>& want = r == 0 ? g.row0 : g.row1;
        ASSERT_EQ(want.size(), 64u);
        for (size_t i = 0; i < want.size(); ++i) ExpectClose(row[i], want[i], "row " + std::to_string(r) + "[" + std::to_string(i) + "]");
      }
    }
    EXPECT_NEAR(sum, g.sum, 1e-6 * abs_sum + 1e-6);
    EXPECT_NEAR(sumsq, g.sumsq, 1e-6 * g.sumsq);
    ++per_file[g.file];
    ++per_type[g.type];
  }
  EXPECT_EQ(per_file.size(), 5u);
  for (const char* t : {"Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K"}) EXPECT_GT(per_type[t], 0) << t;
}

}  // namespace
}  // namespace llmserve
