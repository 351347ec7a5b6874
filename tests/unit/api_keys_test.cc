// ApiKeys: the --api-key-file format (plain and sha256: keys, comments, bad lines named by
// number and never quoted) and the Bearer check.
#include "server/api_keys.h"

#include <string>

#include "gtest/gtest.h"

namespace llmserve {
namespace {

// sha256("second-key-0123456789"), as `printf %s KEY | sha256sum` prints it.
std::string HexSha256(const std::string& key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : ApiKeys::Sha256(key)) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

TEST(ApiKeysTest, Sha256MatchesTheStandardDigest) {
  // FIPS 180-2 test vector.
  EXPECT_EQ(HexSha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ApiKeysTest, PlainAndHashedKeysWithCommentsAndBlankLines) {
  const std::string text = "# team A\n\n  first-key-0123456789  \nsha256:" + HexSha256("second-key-0123456789") +
                           "\r\n# end\n";
  absl::StatusOr<ApiKeys> keys = ApiKeys::Parse(text, "keys.txt");
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->size(), 2u);
  EXPECT_TRUE(keys->Accepts("Bearer first-key-0123456789"));
  EXPECT_TRUE(keys->Accepts("bearer second-key-0123456789"));
  EXPECT_TRUE(keys->Accepts("BEARER first-key-0123456789 "));
  EXPECT_FALSE(keys->Accepts("Bearer first-key-012345678"));   // a prefix
  EXPECT_FALSE(keys->Accepts("Bearer first-key-01234567890"));  // longer
  EXPECT_FALSE(keys->Accepts("first-key-0123456789"));         // no scheme
  EXPECT_FALSE(keys->Accepts("Basic first-key-0123456789"));
  EXPECT_FALSE(keys->Accepts("Bearer "));
  EXPECT_FALSE(keys->Accepts(""));
  // The hashed line is not itself a key.
  EXPECT_FALSE(keys->Accepts("Bearer sha256:" + HexSha256("second-key-0123456789")));
}

TEST(ApiKeysTest, BadLinesAreNamedByNumberWithoutTheirText) {
  struct Case {
    std::string text;
    std::string line;
  };
  for (const Case& c : {Case{"good-key-0123456789\nshort\n", "line 2"},
                        Case{"has space in the key 0123\n", "line 1"},
                        Case{"# c\nsha256:abcd\n", "line 2"},
                        Case{"sha256:" + std::string(64, 'g') + "\n", "line 1"},
                        Case{std::string(300, 'k') + "\n", "line 1"}}) {
    absl::StatusOr<ApiKeys> keys = ApiKeys::Parse(c.text, "keys.txt");
    ASSERT_FALSE(keys.ok()) << c.text;
    EXPECT_EQ(keys.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string msg(keys.status().message());
    EXPECT_NE(msg.find("keys.txt " + c.line + ":"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("short"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("has space"), std::string::npos) << msg;
  }
}

TEST(ApiKeysTest, AFileWithoutKeysOrUnreadableIsAnError) {
  EXPECT_EQ(ApiKeys::Parse("# only a comment\n\n", "keys.txt").status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<ApiKeys> missing = ApiKeys::Load("/nonexistent/keys.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(missing.status().message().find("--api-key-file=/nonexistent/keys.txt"), std::string::npos);
}

}  // namespace
}  // namespace llmserve
