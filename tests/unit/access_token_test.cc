// The tokens file and the CLI's token handling: hashes, the file format and
// its errors (file and line, never the line's content), issuing a token and
// finding the one to send.
#include "common/access_token.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <string>

#include "client/bearer_token.h"
#include "tests/support/read_file.h"
#include "tests/support/temp_dir.h"

namespace accumulus {
namespace {

using testing::ReadFile;
using testing::TempDir;

std::string Write(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(AccessToken, TheHashIsSha256InHex) {
  // FIPS 180-2's test vector for "abc".
  EXPECT_EQ(TokenHash("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(AccessToken, NewTokensAreLongRandomAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    StatusOr<std::string> token = NewToken();
    ASSERT_TRUE(token.ok());
    EXPECT_EQ(token->size(), 4u + 64u);
    EXPECT_EQ(token->substr(0, 4), "acc_");
    EXPECT_TRUE(seen.insert(*token).second);
  }
}

TEST(AccessToken, RolesRoundTripAndAreOrdered) {
  for (Role role : {Role::kViewer, Role::kSubmitter, Role::kAdmin}) {
    EXPECT_EQ(ParseRole(RoleName(role)), role);
  }
  EXPECT_FALSE(ParseRole("root").has_value());
  EXPECT_LT(Role::kViewer, Role::kSubmitter);
  EXPECT_LT(Role::kSubmitter, Role::kAdmin);
}

TEST(AccessToken, TheTokensFileSkipsCommentsAndBlankLines) {
  const TempDir dir;
  const std::string a = TokenHash("a"), b = TokenHash("b");
  const std::string path = Write(
      dir, "tokens", "# the team\n\nalice submitter " + a + "\n  admin@ops admin " + b + "  \n");
  StatusOr<std::vector<TokenEntry>> entries = ReadTokenFile(path);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].name, "alice");
  EXPECT_EQ((*entries)[0].role, Role::kSubmitter);
  EXPECT_EQ((*entries)[0].hash, a);
  EXPECT_EQ((*entries)[1].name, "admin@ops");
  EXPECT_EQ((*entries)[1].role, Role::kAdmin);
}

// Each malformed line is refused with the file, the line and what was
// expected — and never with the line's text, which may be a pasted token.
TEST(AccessToken, AMalformedLineNamesFileAndLineButNotItsContent) {
  const TempDir dir;
  const std::string good = "bob viewer " + TokenHash("x") + "\n";
  const std::string secret = "acc_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  struct Case {
    std::string line;
    std::string expected;
  } cases[] = {
      {secret, "expected NAME ROLE sha256:HEX (3 fields), found 1"},
      {"alice submitter " + secret, "field 3 is not sha256: and 64 lowercase hex digits"},
      {"alice root " + TokenHash(secret), "field 2 is not a role; one of viewer, submitter, admin"},
      {"al/ice viewer " + TokenHash(secret), "field 1: a token's name is made of letters"},
      {"alice viewer " + TokenHash(secret) + " " + secret, "found 4"},
      {"alice viewer sha256:" + std::string(64, 'G'), "field 3 is not sha256:"},
      {"carol viewer " + TokenHash("x"), "the same token hash is listed on an earlier line"},
  };
  for (const Case& c : cases) {
    const std::string path = Write(dir, "tokens", good + c.line + "\n");
    StatusOr<std::vector<TokenEntry>> entries = ReadTokenFile(path);
    ASSERT_FALSE(entries.ok()) << c.line;
    EXPECT_EQ(entries.status().code(), StatusCode::kInvalidArgument);
    const std::string& message = entries.status().message();
    EXPECT_NE(message.find("tokens file " + path + " line 2: "), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    EXPECT_EQ(message.find(secret), std::string::npos) << message;
    EXPECT_EQ(message.find(TokenHash(secret).substr(7)), std::string::npos) << message;
  }
  EXPECT_EQ(ReadTokenFile(dir.path() + "/absent").status().code(), StatusCode::kNotFound);
}

TEST(BearerToken, IssuingAppendsTheHashAndReturnsTheTokenOnce) {
  const TempDir dir;
  const std::string tokens = dir.path() + "/tokens";
  StatusOr<std::string> alice = client::IssueToken(tokens, "alice", Role::kSubmitter);
  StatusOr<std::string> root = client::IssueToken(tokens, "root", Role::kAdmin);
  ASSERT_TRUE(alice.ok() && root.ok());
  StatusOr<std::vector<TokenEntry>> entries = ReadTokenFile(tokens);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].hash, TokenHash(*alice));
  EXPECT_EQ((*entries)[1].hash, TokenHash(*root));
  EXPECT_EQ((*entries)[1].role, Role::kAdmin);
  EXPECT_EQ(ReadFile(tokens).find(*alice), std::string::npos) << "only its hash is kept";
  struct stat info {};
  ASSERT_EQ(stat(tokens.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);

  EXPECT_EQ(client::IssueToken(tokens, "bad name", Role::kViewer).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadTokenFile(tokens)->size(), 2u) << "a refused name adds nothing";
}

TEST(BearerToken, ATokenFileHoldsOneTokenAndItsErrorsQuoteNothing) {
  const TempDir dir;
  ASSERT_TRUE(client::WriteTokenFile(dir.path() + "/t", "acc_abc").ok());
  EXPECT_EQ(*client::ReadTokenFile(dir.path() + "/t"), "acc_abc");
  EXPECT_EQ(*client::ReadTokenFile(Write(dir, "spaced", "\n  acc_def \r\n")), "acc_def");

  const std::string two = Write(dir, "two", "acc_first acc_second\n");
  const Status status = client::ReadTokenFile(two).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("token file " + two + ": byte 10 is a space"), std::string::npos)
      << status.message();
  EXPECT_EQ(status.message().find("acc_"), std::string::npos) << status.message();
  EXPECT_EQ(client::ReadTokenFile(Write(dir, "empty", " \n")).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(BearerToken, AFlagBeatsTheEnvironmentAndTwoFlagsAreRefused) {
  const TempDir dir;
  const std::string file = Write(dir, "t", "acc_from_file\n");
  unsetenv("ACCUMULUS_TOKEN");
  unsetenv("ACCUMULUS_TOKEN_FILE");
  EXPECT_EQ(*client::ResolveToken("", ""), "");
  setenv("ACCUMULUS_TOKEN_FILE", file.c_str(), 1);
  EXPECT_EQ(*client::ResolveToken("", ""), "acc_from_file");
  setenv("ACCUMULUS_TOKEN", "acc_from_env", 1);
  EXPECT_EQ(*client::ResolveToken("", ""), "acc_from_env");
  EXPECT_EQ(*client::ResolveToken("acc_flag", ""), "acc_flag");
  EXPECT_EQ(*client::ResolveToken("", file), "acc_from_file");
  EXPECT_EQ(client::ResolveToken("acc_flag", file).status().code(), StatusCode::kInvalidArgument);
  unsetenv("ACCUMULUS_TOKEN");
  unsetenv("ACCUMULUS_TOKEN_FILE");
}

}  // namespace
}  // namespace accumulus
