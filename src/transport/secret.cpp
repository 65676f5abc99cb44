#include "transport/secret.hpp"

#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>

namespace hivecl::transport {

using protocol::Bytes;

namespace {

// Ties an answer to this use, so that it proves nothing elsewhere.
constexpr std::string_view answer_label = "hivecl watchdog v1";

}  // namespace

std::optional<Bytes> load_secret(const std::string& path, std::string& why) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode)) {
    why = "secret_file " + path + " is not a readable regular file";
    return std::nullopt;
  }
  if (status.st_uid != ::geteuid() || (status.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    std::ostringstream text;
    text << "secret_file " << path << " must belong to this user and be readable by nobody else (it has mode 0"
         << std::oct << (status.st_mode & 07777) << "; chmod 600 it)";
    why = text.str();
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (!in.good() && !in.eof()) {
    why = "secret_file " + path + " cannot be read";
    return std::nullopt;
  }
  if (text.empty()) {
    why = "secret_file " + path + " is empty";
    return std::nullopt;
  }
  const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
  return Bytes(bytes, bytes + text.size());
}

Bytes auth_answer(const Bytes& secret, const Bytes& nonce) {
  hmac_sha256_ctx context;
  hmac_sha256_set_key(&context, secret.size(), reinterpret_cast<const uint8_t*>(secret.data()));
  hmac_sha256_update(&context, answer_label.size(), reinterpret_cast<const uint8_t*>(answer_label.data()));
  hmac_sha256_update(&context, nonce.size(), reinterpret_cast<const uint8_t*>(nonce.data()));
  Bytes answer(auth_answer_bytes);
  hmac_sha256_digest(&context, answer.size(), reinterpret_cast<uint8_t*>(answer.data()));
  return answer;
}

bool auth_answer_matches(const Bytes& expected, const Bytes& received) {
  return expected.size() == received.size() && memeql_sec(expected.data(), received.data(), expected.size());
}

}  // namespace hivecl::transport
