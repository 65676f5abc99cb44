// Tokens of OpenCL C after translation phases 1-3: line continuations spliced, comments
// replaced by a space, newlines kept (they end preprocessing directives).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hivecl::kernels_parser {

enum class TokenKind : unsigned char { identifier, number, punctuator, literal, newline };

// C's hide set as a shared list: every token of a replacement gets the same set in O(1), since
// runaway expansions make millions of them.
struct HideSet {
  std::string macro;
  std::shared_ptr<const HideSet> rest;
  size_t size = 1;

  bool contains(const std::string& name) const {
    for (const HideSet* set = this; set; set = set->rest.get())
      if (set->macro == name) return true;
    return false;
  }
};

struct Token {
  TokenKind kind = TokenKind::punctuator;
  std::string text;
  std::shared_ptr<const HideSet> hidden;  // macros that must not expand this token again
  bool spaced = false;              // white space before it (tells `#define F(x)` from `#define F (x)`)

  bool is(std::string_view spelling) const { return kind != TokenKind::literal && text == spelling; }
  bool identifier() const { return kind == TokenKind::identifier; }
};

std::vector<Token> lex(std::string_view source);

}  // namespace hivecl::kernels_parser
