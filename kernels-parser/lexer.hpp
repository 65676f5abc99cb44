// Tokens of OpenCL C after translation phases 1-3: line continuations spliced, comments
// replaced by a space, newlines kept (they end preprocessing directives).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hivecl::kernels_parser {

enum class TokenKind : unsigned char { identifier, number, punctuator, literal, newline };

struct Token {
  TokenKind kind = TokenKind::punctuator;
  std::string text;
  std::vector<std::string> hidden;  // macros that must not expand this token again (C's hide set)
  bool spaced = false;              // white space before it (tells `#define F(x)` from `#define F (x)`)

  bool is(std::string_view spelling) const { return kind != TokenKind::literal && text == spelling; }
  bool identifier() const { return kind == TokenKind::identifier; }
};

std::vector<Token> lex(std::string_view source);

}  // namespace hivecl::kernels_parser
