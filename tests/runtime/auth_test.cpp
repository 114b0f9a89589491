// jr2/auth.h against published test vectors (FIPS 180-2, RFC 4231) and the forge header's form.
#include "jr2/auth.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace {

TEST(Auth, Sha256MatchesThePublishedVectors) {
  EXPECT_EQ(jr2rt::Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(jr2rt::Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(jr2rt::Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Auth, HmacSha256MatchesRfc4231) {
  // Test case 1: a 20-byte key of 0x0b, "Hi There".
  EXPECT_EQ(jr2rt::HmacSha256Hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Test case 2: "Jefe", "what do ya want for nothing?".
  EXPECT_EQ(jr2rt::HmacSha256Hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than the block (131 bytes of 0xaa).
  EXPECT_EQ(jr2rt::HmacSha256Hex(std::string(131, '\xaa'),
                                 "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(Auth, ConstantTimeEqualsComparesWholeStrings) {
  EXPECT_TRUE(jr2rt::ConstantTimeEquals("", ""));
  EXPECT_TRUE(jr2rt::ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(jr2rt::ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(jr2rt::ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(jr2rt::ConstantTimeEquals(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST(Auth, AHubSignatureIsCheckedAsTheForgesSendIt) {
  const std::string body = R"({"action":"labeled"})";
  const std::string mac = jr2rt::HmacSha256Hex("s3cret", body);
  EXPECT_TRUE(jr2rt::VerifyHubSignature("sha256=" + mac, "s3cret", body));
  std::string upper = mac;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_TRUE(jr2rt::VerifyHubSignature("sha256=" + upper, "s3cret", body)) << "hex in any case";
  EXPECT_FALSE(jr2rt::VerifyHubSignature("sha256=" + mac, "other", body)) << "another secret";
  EXPECT_FALSE(jr2rt::VerifyHubSignature("sha256=" + mac, "s3cret", body + " "))
      << "a changed body";
  EXPECT_FALSE(jr2rt::VerifyHubSignature("sha1=" + mac.substr(0, 40), "s3cret", body));
  EXPECT_FALSE(jr2rt::VerifyHubSignature("sha256=" + mac.substr(1), "s3cret", body));
  EXPECT_FALSE(jr2rt::VerifyHubSignature("", "s3cret", body));
  EXPECT_FALSE(jr2rt::VerifyHubSignature(mac, "s3cret", body)) << "no `sha256=`";
}

}  // namespace
