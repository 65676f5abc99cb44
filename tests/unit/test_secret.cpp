#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "transport/secret.hpp"

using namespace hivecl::transport;
using hivecl::protocol::Bytes;

namespace {

std::string write_secret(const std::string& text, std::filesystem::perms perms) {
  const auto path = std::filesystem::temp_directory_path() / "hivecl-test-secret";
  std::filesystem::remove(path);
  std::ofstream(path) << text;
  std::filesystem::permissions(path, perms);
  return path;
}

Bytes bytes_of(const std::string& text) {
  const auto* data = reinterpret_cast<const std::byte*>(text.data());
  return Bytes(data, data + text.size());
}

constexpr auto owner_only = std::filesystem::perms::owner_read | std::filesystem::perms::owner_write;

}  // namespace

TEST_CASE("a secret file must be private to its owner and not empty", "[secret]") {
  std::string why;
  const auto secret = load_secret(write_secret("s3cret\n", owner_only), why);
  REQUIRE(secret);
  CHECK(*secret == bytes_of("s3cret"));  // without the trailing newline
  CHECK_FALSE(load_secret(write_secret("s3cret", owner_only | std::filesystem::perms::group_read), why));
  CHECK(why.find("chmod 600") != std::string::npos);
  CHECK_FALSE(load_secret(write_secret("s3cret", owner_only | std::filesystem::perms::others_read), why));
  CHECK_FALSE(load_secret(write_secret("\n", owner_only), why));
  CHECK(why.find("empty") != std::string::npos);
  CHECK_FALSE(load_secret("/nonexistent/hivecl-secret", why));
  std::filesystem::remove(std::filesystem::temp_directory_path() / "hivecl-test-secret");
}

TEST_CASE("a challenge's answer depends on the secret and the nonce", "[secret]") {
  const Bytes nonce(auth_nonce_bytes, std::byte{7});
  const Bytes other_nonce(auth_nonce_bytes, std::byte{8});
  const Bytes answer = auth_answer(bytes_of("one"), nonce);
  CHECK(answer.size() == auth_answer_bytes);
  CHECK(auth_answer_matches(answer, auth_answer(bytes_of("one"), nonce)));
  CHECK_FALSE(auth_answer_matches(answer, auth_answer(bytes_of("two"), nonce)));
  CHECK_FALSE(auth_answer_matches(answer, auth_answer(bytes_of("one"), other_nonce)));
  CHECK_FALSE(auth_answer_matches(answer, auth_answer({}, nonce)));
  CHECK_FALSE(auth_answer_matches(answer, Bytes(answer.begin(), answer.end() - 1)));
}
