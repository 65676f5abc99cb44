// The preprocessor of kernels-parser: macros (object- and function-like, #, ##, variadic),
// conditionals and #include through the -I directories. A conditional on a macro the device
// compiler may predefine (__OPENCL_VERSION__, cl_khr_fp64, ...) cannot be decided here: its
// region is skipped, and the answer becomes uncertain if that region could change a kernel
// signature (it defines macros or types, includes files, or declares kernels).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernels_parser.hpp"
#include "lexer.hpp"

namespace hivecl::kernels_parser {

struct Macro {
  bool function_like = false;
  bool variadic = false;
  std::vector<std::string> parameters;
  std::vector<Token> body;
};

// An integer or "cannot be known here" (a macro the device compiler may define).
struct Value {
  long long number = 0;
  bool known = true;
};

class Preprocessor {
 public:
  // `embedded_headers`: clCompileProgram's input headers, by include name; found before the
  // -I directories.
  explicit Preprocessor(std::vector<std::string> include_directories, Headers embedded_headers = {})
      : include_directories_(std::move(include_directories)), embedded_headers_(std::move(embedded_headers)) {}

  void define(const std::string& name, const std::string& value);
  void run(const std::string& source, int depth = 0);

  // Evaluates a constant integer expression (after macro expansion), as #if does.
  Value evaluate(std::vector<Token> expression);

  const std::vector<Token>& output() const { return output_; }
  bool certain() const { return uncertainty_.empty(); }
  const std::string& uncertainty() const { return uncertainty_; }
  // Counts tokens made by macro expansion; false (and uncertain) past the limit.
  bool spend(size_t tokens);
  void uncertain(const std::string& why) {
    if (uncertainty_.empty()) uncertainty_ = why;
  }

 private:
  enum class Mode : unsigned char { active, skipped, unknown };
  struct Conditional {
    Mode mode;
    Mode parent;
    bool taken = false;        // an earlier branch was known to be taken
    bool maybe_taken = false;  // an earlier branch might have been taken
  };

  Mode mode() const { return conditionals_.empty() ? Mode::active : conditionals_.back().mode; }
  void directive(std::vector<Token> line, int depth);
  void conditional_directive(const std::string& name, std::vector<Token> arguments);
  void open_conditional(Value condition);
  void next_branch(const Value* condition);
  void define_directive(const std::vector<Token>& arguments);
  void include_directive(const std::vector<Token>& arguments, int depth);
  void text_line(std::vector<Token> line);
  void flush();
  Value defined(const std::string& name);

  std::vector<Token> expand(std::vector<Token> tokens);

  std::vector<std::string> include_directories_;
  Headers embedded_headers_;
  std::map<std::string, Macro> macros_;
  std::vector<Conditional> conditionals_;
  std::vector<Token> pending_;  // text lines not yet expanded (a macro call may span lines)
  std::vector<Token> output_;
  std::string uncertainty_;
  size_t expanded_tokens_ = 0;
};

}  // namespace hivecl::kernels_parser
