#include "lexer.hpp"

#include <array>
#include <cctype>

namespace hivecl::kernels_parser {

namespace {

// Longest first, so that a prefix never wins over the whole operator.
constexpr std::array<std::string_view, 25> operators{
    "...", "<<=", ">>=", "##", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "->", "++", "--",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "::", "<:"};

bool identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Phase 2: a backslash at the end of a line joins it with the next.
std::string splice_lines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\\') {
      size_t next = i + 1;
      if (next < source.size() && source[next] == '\r') ++next;
      if (next < source.size() && source[next] == '\n') {
        i = next;
        continue;
      }
    }
    out += source[i];
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string text) : text_(std::move(text)) {}

  std::vector<Token> run() {
    tokens_.reserve(text_.size() / 4);  // about as many as OpenCL C has; fewer reallocations of the whole
    while (position_ < text_.size()) step();
    return std::move(tokens_);
  }

 private:
  char at(size_t offset) const { return position_ + offset < text_.size() ? text_[position_ + offset] : '\0'; }

  void step() {
    const char c = at(0);
    if (c == '\n') return emit(TokenKind::newline, 1);
    if (std::isspace(static_cast<unsigned char>(c))) return space(1);
    if (c == '/' && at(1) == '/') return skip_line_comment();
    if (c == '/' && at(1) == '*') return skip_block_comment();
    if (identifier_start(c)) return emit(TokenKind::identifier, span_while(identifier_char));
    if (digit(c) || (c == '.' && digit(at(1)))) return emit(TokenKind::number, number_length());
    if (c == '"' || c == '\'') return emit(TokenKind::literal, literal_length(c));
    for (std::string_view op : operators)
      if (op[0] == c && std::string_view(text_).substr(position_, op.size()) == op)
        return emit(TokenKind::punctuator, op.size());
    emit(TokenKind::punctuator, 1);
  }

  void emit(TokenKind kind, size_t length) {
    tokens_.push_back({kind, text_.substr(position_, length), {}, spaced_});
    position_ += length;
    spaced_ = false;
  }

  void space(size_t length) {
    position_ += length;
    spaced_ = true;
  }

  template <class Predicate>
  size_t span_while(Predicate predicate) const {
    size_t length = 0;
    while (position_ + length < text_.size() && predicate(text_[position_ + length])) ++length;
    return length;
  }

  // A pp-number: digits, letters, dots, and signs after an exponent letter.
  size_t number_length() const {
    size_t length = 1;
    while (position_ + length < text_.size()) {
      const char c = text_[position_ + length];
      const char previous = text_[position_ + length - 1];
      const bool sign = (c == '+' || c == '-') && (previous == 'e' || previous == 'E' || previous == 'p' || previous == 'P');
      if (!identifier_char(c) && c != '.' && !sign) break;
      ++length;
    }
    return length;
  }

  size_t literal_length(char quote) const {
    size_t length = 1;
    while (position_ + length < text_.size() && text_[position_ + length] != quote &&
           text_[position_ + length] != '\n') {
      if (text_[position_ + length] == '\\') ++length;
      ++length;
    }
    return position_ + length < text_.size() && text_[position_ + length] == quote ? length + 1 : length;
  }

  void skip_line_comment() {
    while (position_ < text_.size() && text_[position_] != '\n') ++position_;
    spaced_ = true;
  }

  void skip_block_comment() {
    const size_t end = text_.find("*/", position_ + 2);
    position_ = end == std::string::npos ? text_.size() : end + 2;
    spaced_ = true;
  }

  std::string text_;
  size_t position_ = 0;
  bool spaced_ = false;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(std::string_view source) { return Lexer(splice_lines(source)).run(); }

}  // namespace hivecl::kernels_parser
