#include "preprocessor.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <optional>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hivecl::kernels_parser {

namespace {

constexpr int max_include_depth = 32;
// Limits that keep hostile or runaway sources from exhausting the stack or memory.
constexpr int max_nesting = 256;
constexpr size_t max_expanded_tokens = size_t{1} << 20;  // real kernels stay far below
constexpr std::uintmax_t max_header_bytes = std::uintmax_t{64} << 20;

// Names the device compiler (or its headers) may define: their values are not known here.
bool device_may_define(const std::string& name) {
  if (name.size() >= 2 && name[0] == '_' && (name[1] == '_' || std::isupper(static_cast<unsigned char>(name[1]))))
    return true;
  constexpr std::array<std::string_view, 22> prefixes{
      "cl_", "CL_", "CLK_", "FLT_", "DBL_", "HALF_", "M_", "FP_", "CHAR_", "SCHAR_", "UCHAR_", "SHRT_",
      "USHRT_", "INT_", "UINT_", "LONG_", "ULONG_", "MAXFLOAT", "HUGE_VAL", "INFINITY", "NAN", "NULL"};
  return std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view prefix) { return name.starts_with(prefix); });
}

bool hides(const Token& token, const std::string& name) {
  return token.hidden && token.hidden->contains(name);
}

Token number_token(long long value) { return {TokenKind::number, std::to_string(value), {}}; }
// Stands for a value this parser cannot know in an #if expression.
Token unknown_token() { return {TokenKind::literal, "?", {}}; }

std::string spelling(const std::vector<Token>& tokens) {
  std::string text;
  for (const Token& token : tokens) {
    if (!text.empty()) text += ' ';
    text += token.text;
  }
  return text;
}

Token stringify(const std::vector<Token>& tokens) {
  std::string text = "\"";
  for (char c : spelling(tokens)) {
    if (c == '"' || c == '\\') text += '\\';
    text += c;
  }
  return {TokenKind::literal, text + "\"", {}};
}

// Expands macros in a token sequence, rescanning each replacement with what follows it.
class Expander {
 public:
  Expander(const std::map<std::string, Macro>& macros, Preprocessor& preprocessor, std::vector<Token> input,
           int depth = 0)
      : macros_(macros), preprocessor_(preprocessor), input_(std::move(input)), depth_(depth) {
    std::reverse(input_.begin(), input_.end());
  }

  std::vector<Token> run() {
    if (depth_ > max_nesting) {
      preprocessor_.uncertain("macro calls nested too deeply");
      input_.clear();
    }
    // Past an uncertainty of the whole program its tokens would not be used: stop there.
    while (!input_.empty() && preprocessor_.certain()) {
      Token token = take();
      const auto found = token.identifier() && !hides(token, token.text) ? macros_.find(token.text) : macros_.end();
      if (found == macros_.end()) {
        output_.push_back(std::move(token));
      } else if (!found->second.function_like) {
        replace(token, substitute(found->second, {}));
      } else if (!input_.empty() && input_.back().is("(")) {
        take();
        auto arguments = collect_arguments();
        if (!arguments) return std::move(output_);
        replace(token, substitute(found->second, *arguments));
      } else {
        output_.push_back(std::move(token));
      }
    }
    return std::move(output_);
  }

 private:
  Token take() {
    Token token = std::move(input_.back());
    input_.pop_back();
    return token;
  }

  // The arguments of a function-like macro call, split at top-level commas, up to its ')'.
  std::optional<std::vector<std::vector<Token>>> collect_arguments() {
    std::vector<std::vector<Token>> arguments(1);
    int depth = 0;
    while (!input_.empty()) {
      Token token = take();
      if (token.is(")") && depth == 0) return arguments;
      if (token.is(",") && depth == 0) {
        arguments.emplace_back();
        continue;
      }
      if (token.is("(")) ++depth;
      if (token.is(")")) --depth;
      arguments.back().push_back(std::move(token));
    }
    preprocessor_.uncertain("a macro call without its closing parenthesis");
    return std::nullopt;
  }

  // The macro's body with its parameters replaced; # and ## applied.
  std::vector<Token> substitute(const Macro& macro, std::vector<std::vector<Token>> arguments) {
    if (macro.function_like) arguments = match_parameters(macro, std::move(arguments));
    std::vector<Token> result;
    result.reserve(macro.body.size());
    bool paste_next = false;
    const auto& body = macro.body;
    for (size_t i = 0; i < body.size(); ++i) {
      const int parameter = parameter_index(macro, body[i]);
      if (body[i].is("##") && !result.empty()) {
        paste_next = true;
        continue;
      }
      std::vector<Token> item;
      if (macro.function_like && body[i].is("#") && i + 1 < body.size() && parameter_index(macro, body[i + 1]) >= 0) {
        item.push_back(stringify(arguments[static_cast<size_t>(parameter_index(macro, body[++i]))]));
      } else if (parameter >= 0) {
        const bool pasted = paste_next || (i + 1 < body.size() && body[i + 1].is("##"));
        std::vector<Token>& argument = arguments[static_cast<size_t>(parameter)];
        item = pasted ? argument : Expander(macros_, preprocessor_, last_use(macro, i, parameter, argument), depth_ + 1).run();
      } else if (!paste_next) {
        result.push_back(body[i]);  // most of a body: no vector of its own (runaway expansions make millions)
        continue;
      } else {
        item.push_back(body[i]);
      }
      append(result, std::move(item), paste_next);
      paste_next = false;
    }
    return result;
  }

  // The argument itself where the body names its parameter at `i` for the last time, else a
  // copy: a call nested deep inside another's argument is then not copied at every level.
  static std::vector<Token> last_use(const Macro& macro, size_t i, int parameter, std::vector<Token>& argument) {
    const bool named_later = std::any_of(macro.body.begin() + static_cast<long>(i) + 1, macro.body.end(),
                                         [&](const Token& token) { return parameter_index(macro, token) == parameter; });
    if (named_later) return argument;
    return std::move(argument);
  }

  std::vector<std::vector<Token>> match_parameters(const Macro& macro, std::vector<std::vector<Token>> arguments) {
    const size_t named = macro.parameters.size() - (macro.variadic ? 1 : 0);
    if (arguments.size() == 1 && arguments[0].empty() && named == 0) arguments.clear();
    if (macro.variadic && arguments.size() > named) {
      std::vector<Token> rest;
      for (size_t i = named; i < arguments.size(); ++i) {
        if (i > named) rest.push_back({TokenKind::punctuator, ",", {}});
        rest.insert(rest.end(), arguments[i].begin(), arguments[i].end());
      }
      arguments.resize(named);
      arguments.push_back(std::move(rest));
    }
    if (arguments.size() < macro.parameters.size() && macro.variadic) arguments.emplace_back();
    if (arguments.size() != macro.parameters.size()) {
      preprocessor_.uncertain("a macro called with the wrong number of arguments");
      arguments.resize(macro.parameters.size());
    }
    return arguments;
  }

  static int parameter_index(const Macro& macro, const Token& token) {
    if (!token.identifier()) return -1;
    const auto found = std::find(macro.parameters.begin(), macro.parameters.end(), token.text);
    return found == macro.parameters.end() ? -1 : static_cast<int>(found - macro.parameters.begin());
  }

  static void append(std::vector<Token>& result, std::vector<Token> item, bool paste) {
    if (paste && !item.empty() && !result.empty()) {
      std::vector<Token> pasted = lex(result.back().text + item.front().text);
      result.pop_back();
      result.insert(result.end(), pasted.begin(), pasted.end());
      item.erase(item.begin());
    }
    result.insert(result.end(), std::make_move_iterator(item.begin()), std::make_move_iterator(item.end()));
  }

  // The call's hide set plus its macro, plus the macros of `own` (a token's set from an argument).
  static std::shared_ptr<const HideSet> hide_set(const HideSet* own, const Token& call) {
    const auto size_with = [](const std::shared_ptr<const HideSet>& rest) { return rest ? rest->size + 1 : 1; };
    auto set = std::make_shared<const HideSet>(HideSet{call.text, call.hidden, size_with(call.hidden)});
    for (; own; own = own->rest.get())
      if (!set->contains(own->macro)) set = std::make_shared<const HideSet>(HideSet{own->macro, set, size_with(set)});
    return set;
  }

  // Puts the replacement back in front of the input, hidden from the macro that made it.
  void replace(const Token& call, std::vector<Token> replacement) {
    if (call.hidden && call.hidden->size > static_cast<size_t>(max_nesting)) {
      preprocessor_.uncertain("macros nested too deeply");  // also bounds the hide sets' length
      input_.clear();
      return;
    }
    if (!preprocessor_.spend(replacement.size())) {
      input_.clear();
      return;
    }
    const auto call_hides = hide_set(nullptr, call);
    for (auto it = replacement.rbegin(); it != replacement.rend(); ++it) {
      it->hidden = it->hidden ? hide_set(it->hidden.get(), call) : call_hides;
      input_.push_back(std::move(*it));
    }
  }

  const std::map<std::string, Macro>& macros_;
  Preprocessor& preprocessor_;
  std::vector<Token> input_;  // reversed: the next token is at the back
  std::vector<Token> output_;
  int depth_;
};

// #if expressions: C's integer constant expressions; an unknown operand makes the result
// unknown unless the other operand decides (0 && x, 1 || x).
class Evaluator {
 public:
  explicit Evaluator(const std::vector<Token>& tokens) : tokens_(tokens) {}

  std::optional<Value> run() {
    Value value = conditional();
    if (failed_ || position_ != tokens_.size()) return std::nullopt;
    return value;
  }

 private:
  bool accept(std::string_view op) {
    if (position_ < tokens_.size() && tokens_[position_].is(op)) {
      ++position_;
      return true;
    }
    return false;
  }

  Value conditional() {
    const Value condition = binary(0);
    if (!accept("?")) return condition;
    if (++nesting_ > max_nesting) {
      failed_ = true;
      return {};
    }
    const Value yes = conditional();
    if (!accept(":")) failed_ = true;
    const Value no = conditional();
    if (!condition.known) return {0, false};
    return condition.number ? yes : no;
  }

  static int precedence(const std::string& op) {
    static const std::map<std::string, int> table{
        {"||", 1}, {"&&", 2}, {"|", 3}, {"^", 4}, {"&", 5}, {"==", 6}, {"!=", 6}, {"<", 7}, {">", 7},
        {"<=", 7}, {">=", 7}, {"<<", 8}, {">>", 8}, {"+", 9}, {"-", 9}, {"*", 10}, {"/", 10}, {"%", 10}};
    const auto found = table.find(op);
    return found == table.end() ? -1 : found->second;
  }

  Value binary(int minimum) {
    Value left = unary();
    while (position_ < tokens_.size() && tokens_[position_].kind == TokenKind::punctuator) {
      const std::string op = tokens_[position_].text;
      const int level = precedence(op);
      if (level <= minimum) break;
      ++position_;
      const Value right = binary(level);
      left = apply(op, left, right);
    }
    return left;
  }

  Value apply(const std::string& op, Value a, Value b) {
    if (op == "&&" && ((a.known && !a.number) || (b.known && !b.number))) return {0, true};
    if (op == "||" && ((a.known && a.number) || (b.known && b.number))) return {1, true};
    if (!a.known || !b.known) return {0, false};
    const long long x = a.number, y = b.number;
    if ((op == "/" || op == "%") && y == 0) {
      failed_ = true;
      return {};
    }
    static const std::map<std::string, long long (*)(long long, long long)> operations{
        {"||", [](long long p, long long q) -> long long { return p || q; }},
        {"&&", [](long long p, long long q) -> long long { return p && q; }},
        {"|", [](long long p, long long q) { return p | q; }},
        {"^", [](long long p, long long q) { return p ^ q; }},
        {"&", [](long long p, long long q) { return p & q; }},
        {"==", [](long long p, long long q) -> long long { return p == q; }},
        {"!=", [](long long p, long long q) -> long long { return p != q; }},
        {"<", [](long long p, long long q) -> long long { return p < q; }},
        {">", [](long long p, long long q) -> long long { return p > q; }},
        {"<=", [](long long p, long long q) -> long long { return p <= q; }},
        {">=", [](long long p, long long q) -> long long { return p >= q; }},
        {"<<", [](long long p, long long q) { return static_cast<long long>(static_cast<unsigned long long>(p) << (q & 63)); }},
        {">>", [](long long p, long long q) { return p >> (q & 63); }},
        {"+", [](long long p, long long q) { return static_cast<long long>(static_cast<unsigned long long>(p) + static_cast<unsigned long long>(q)); }},
        {"-", [](long long p, long long q) { return static_cast<long long>(static_cast<unsigned long long>(p) - static_cast<unsigned long long>(q)); }},
        {"*", [](long long p, long long q) { return static_cast<long long>(static_cast<unsigned long long>(p) * static_cast<unsigned long long>(q)); }},
        {"/", [](long long p, long long q) { return q == -1 ? static_cast<long long>(0ull - static_cast<unsigned long long>(p)) : p / q; }},
        {"%", [](long long p, long long q) { return q == -1 ? 0 : p % q; }}};
    return {operations.at(op)(x, y), true};
  }

  Value unary() {
    if (++nesting_ > max_nesting) {
      failed_ = true;
      return {};
    }
    const Value value = unary_operand();
    --nesting_;
    return value;
  }

  Value unary_operand() {
    if (accept("!")) return negate(unary(), [](long long v) -> long long { return !v; });
    if (accept("~")) return negate(unary(), [](long long v) { return ~v; });
    if (accept("-")) return negate(unary(), [](long long v) { return static_cast<long long>(0ull - static_cast<unsigned long long>(v)); });
    if (accept("+")) return unary();
    if (accept("(")) {
      const Value inner = conditional();
      if (!accept(")")) failed_ = true;
      return inner;
    }
    return primary();
  }

  template <class Operation>
  static Value negate(Value value, Operation operation) {
    return value.known ? Value{operation(value.number), true} : value;
  }

  Value primary() {
    if (position_ >= tokens_.size()) {
      failed_ = true;
      return {};
    }
    const Token& token = tokens_[position_++];
    if (token.kind == TokenKind::literal && token.text == "?") return {0, false};
    if (token.kind == TokenKind::number) return number(token.text);
    if (token.kind == TokenKind::literal && token.text.size() == 3 && token.text[0] == '\'') return {token.text[1], true};
    if (token.identifier()) return device_may_define(token.text) ? Value{0, false} : Value{0, true};
    failed_ = true;
    return {};
  }

  Value number(std::string text) {
    while (!text.empty() && (text.back() == 'u' || text.back() == 'U' || text.back() == 'l' || text.back() == 'L'))
      text.pop_back();
    try {
      size_t used = 0;
      const long long value = static_cast<long long>(std::stoull(text, &used, 0));
      if (used == text.size()) return {value, true};
    } catch (const std::exception&) {
    }
    failed_ = true;
    return {};
  }

  const std::vector<Token>& tokens_;
  size_t position_ = 0;
  bool failed_ = false;
  int nesting_ = 0;
};

std::vector<Token> until_newline(std::vector<Token>& tokens, size_t& position) {
  std::vector<Token> line;
  while (position < tokens.size() && tokens[position].kind != TokenKind::newline)
    line.push_back(std::move(tokens[position++]));
  ++position;
  return line;
}

bool signature_relevant(const std::vector<Token>& line) {
  return std::any_of(line.begin(), line.end(), [](const Token& token) {
    return token.is("kernel") || token.is("__kernel") || token.is("typedef") || token.is("struct") ||
           token.is("union") || token.is("enum");
  });
}

}  // namespace

bool Preprocessor::spend(size_t tokens) {
  if (expanded_tokens_ + tokens > max_expanded_tokens) {
    uncertain("macro expansion too large");
    return false;
  }
  expanded_tokens_ += tokens;
  return true;
}

void Preprocessor::define(const std::string& name, const std::string& value) {
  macros_[name] = Macro{.body = lex(value)};
}

void Preprocessor::run(const std::string& source, int depth) {
  std::vector<Token> tokens = lex(source);
  size_t position = 0;
  while (position < tokens.size() && certain()) {
    std::vector<Token> line = until_newline(tokens, position);
    if (!line.empty() && line[0].is("#")) {
      flush();
      directive(std::move(line), depth);
    } else {
      text_line(std::move(line));
    }
  }
  flush();
  if (depth == 0 && !conditionals_.empty()) uncertain("an #if without its #endif");
}

void Preprocessor::text_line(std::vector<Token> line) {
  if (mode() == Mode::active)
    pending_.insert(pending_.end(), std::make_move_iterator(line.begin()), std::make_move_iterator(line.end()));
  if (mode() == Mode::unknown && signature_relevant(line))
    uncertain("kernels or types inside a conditional on a macro the device compiler may define");
}

void Preprocessor::flush() {
  // Most text names no macro: it is its own expansion, moved rather than rescanned.
  const bool names_macro = std::any_of(pending_.begin(), pending_.end(), [&](const Token& token) {
    return token.identifier() && macros_.count(token.text) != 0;
  });
  std::vector<Token> expanded = names_macro ? Expander(macros_, *this, std::move(pending_)).run() : std::move(pending_);
  pending_.clear();
  if (output_.empty()) {
    output_ = std::move(expanded);
  } else {
    output_.insert(output_.end(), std::make_move_iterator(expanded.begin()), std::make_move_iterator(expanded.end()));
  }
}

void Preprocessor::directive(std::vector<Token> line, int depth) {
  if (line.size() < 2) return;  // the null directive
  const std::string name = line[1].text;
  std::vector<Token> arguments(line.begin() + 2, line.end());
  if (name == "if" || name == "ifdef" || name == "ifndef" || name == "elif" || name == "else" || name == "endif")
    return conditional_directive(name, std::move(arguments));
  if (mode() == Mode::skipped) return;
  if (name == "pragma" || name == "line" || name == "warning") return;
  if (mode() == Mode::unknown) {
    if (name == "define" || name == "undef" || name == "include")
      uncertain("#" + name + " inside a conditional on a macro the device compiler may define");
    return;
  }
  if (name == "define") return define_directive(arguments);
  if (name == "undef" && !arguments.empty()) return void(macros_.erase(arguments[0].text));
  if (name == "include") return include_directive(arguments, depth);
  uncertain("the directive #" + name);  // #error, or one no compiler knows: the build fails
}

void Preprocessor::define_directive(const std::vector<Token>& arguments) {
  if (arguments.empty() || !arguments[0].identifier()) return uncertain("a malformed #define");
  Macro macro;
  size_t body = 1;
  // Function-like only when '(' follows the name without white space.
  if (arguments.size() > 1 && arguments[1].is("(") && !arguments[1].spaced) {
    macro.function_like = true;
    for (body = 2; body < arguments.size() && !arguments[body].is(")"); ++body) {
      if (arguments[body].is(",")) continue;
      if (arguments[body].is("...")) {
        macro.variadic = true;
        macro.parameters.push_back("__VA_ARGS__");
      } else {
        macro.parameters.push_back(arguments[body].text);
      }
    }
    if (body == arguments.size()) return uncertain("a malformed function-like #define");
    ++body;
  }
  macro.body.assign(arguments.begin() + static_cast<long>(body), arguments.end());
  macros_[arguments[0].text] = std::move(macro);
}

void Preprocessor::include_directive(const std::vector<Token>& arguments, int depth) {
  std::string file;
  if (!arguments.empty() && arguments[0].kind == TokenKind::literal && arguments[0].text.size() > 2)
    file = arguments[0].text.substr(1, arguments[0].text.size() - 2);
  else if (!arguments.empty() && arguments[0].is("<") && arguments.size() > 2 && arguments.back().is(">"))
    file = spelling({arguments.begin() + 1, arguments.end() - 1});
  if (file.empty() || depth >= max_include_depth) return uncertain("an #include it cannot follow");
  if (const auto embedded = embedded_headers_.find(file); embedded != embedded_headers_.end())
    return run(embedded->second, depth + 1);
  for (const std::string& directory : include_directories_) {
    const std::filesystem::path path = std::filesystem::path(directory) / file;
    std::error_code error;
    const std::filesystem::file_status status = std::filesystem::status(path, error);
    if (!std::filesystem::exists(status)) continue;
    // A device or a pipe (-I /dev, "zero") would never end; a directory is no header.
    if (!std::filesystem::is_regular_file(status) || std::filesystem::file_size(path, error) > max_header_bytes ||
        error)
      return uncertain("#include \"" + file + "\" is no header it can read");
    std::ifstream in(path);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    return run(text.str(), depth + 1);
  }
  uncertain("#include \"" + file + "\" not found in the -I directories");
}

Value Preprocessor::defined(const std::string& name) {
  if (macros_.count(name)) return {1, true};
  return device_may_define(name) ? Value{0, false} : Value{0, true};
}

void Preprocessor::conditional_directive(const std::string& name, std::vector<Token> arguments) {
  if (name == "endif") {
    if (conditionals_.empty()) return uncertain("an #endif without #if");
    return conditionals_.pop_back();
  }
  if (name == "else" || name == "elif") {
    if (conditionals_.empty()) return uncertain("an #" + name + " without #if");
    if (name == "else" || conditionals_.back().parent != Mode::active) return next_branch(nullptr);
    const Value condition = evaluate(std::move(arguments));
    return next_branch(&condition);
  }
  if (mode() != Mode::active) return conditionals_.push_back({mode(), mode()});
  if (name == "if") return open_conditional(evaluate(std::move(arguments)));
  if (arguments.empty() || !arguments[0].identifier()) return uncertain("a malformed #" + name);
  Value condition = defined(arguments[0].text);
  if (name == "ifndef" && condition.known) condition.number = !condition.number;
  open_conditional(condition);
}

void Preprocessor::open_conditional(Value condition) {
  Conditional conditional{.mode = Mode::unknown, .parent = Mode::active};
  if (condition.known) conditional.mode = condition.number ? Mode::active : Mode::skipped;
  conditional.taken = conditional.mode == Mode::active;
  conditional.maybe_taken = conditional.mode == Mode::unknown;
  conditionals_.push_back(conditional);
}

// #elif (with its condition) or #else (without).
void Preprocessor::next_branch(const Value* condition) {
  Conditional& conditional = conditionals_.back();
  if (conditional.parent != Mode::active) return;
  if (conditional.taken) {
    conditional.mode = Mode::skipped;
    return;
  }
  const Value value = condition ? *condition : Value{1, true};
  if (value.known && !value.number) {
    conditional.mode = Mode::skipped;
  } else if (value.known && !conditional.maybe_taken) {
    conditional.mode = Mode::active;
    conditional.taken = true;
  } else {
    conditional.mode = Mode::unknown;
    conditional.maybe_taken = true;
  }
}

Value Preprocessor::evaluate(std::vector<Token> expression) {
  std::vector<Token> resolved;
  for (size_t i = 0; i < expression.size(); ++i) {
    if (!expression[i].is("defined")) {
      resolved.push_back(std::move(expression[i]));
      continue;
    }
    const bool parenthesized = i + 1 < expression.size() && expression[i + 1].is("(");
    const size_t name = i + (parenthesized ? 2 : 1);
    if (name >= expression.size()) return uncertain("a malformed defined()"), Value{0, false};
    const Value value = defined(expression[name].text);
    resolved.push_back(value.known ? number_token(value.number) : unknown_token());
    i = name + (parenthesized ? 1 : 0);
  }
  const auto value = Evaluator(Expander(macros_, *this, std::move(resolved)).run()).run();
  if (!value) {
    uncertain("an #if expression it cannot evaluate");
    return {0, false};
  }
  return *value;
}

}  // namespace hivecl::kernels_parser
