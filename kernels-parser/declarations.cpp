#include "declarations.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <span>

namespace hivecl::kernels_parser {

namespace {

enum class Space : unsigned char { none, global, constant, local, private_space };

// A type as far as kernel arguments care: what it is, its size and alignment when known.
struct Type {
  std::string name;  // clGetKernelArgInfo's spelling, pointers excluded
  ArgKind object = ArgKind::by_value;  // image, sampler, pipe; by_value for the rest
  std::optional<uint64_t> size, align;
  int pointers = 0;
  Space space = Space::none;  // of the pointee for a pointer
  bool valid = true;          // false: not allowed as a kernel argument at all
};

struct Declarator {
  std::string name;
  int pointers = 0;
  Space space = Space::none;  // a qualifier written after a '*' (it qualifies the pointer)
  std::optional<uint64_t> count = 1;  // array elements; nullopt when unknown
  bool bit_field = false;
  bool array = false;
};

struct Attributes {
  bool packed = false;
  std::optional<uint64_t> aligned = 0;  // 0: none given; nullopt: aligned without a value
};

// Views into the preprocessed tokens: nested definitions are read in place, never copied (a
// hostile source nests them thousands deep).
using Tokens = std::span<const Token>;

const std::map<std::string, uint64_t>& scalar_sizes() {
  static const std::map<std::string, uint64_t> sizes{{"char", 1}, {"uchar", 1}, {"short", 2}, {"ushort", 2},
                                                     {"int", 4},  {"uint", 4},  {"long", 8},  {"ulong", 8},
                                                     {"float", 4}, {"double", 8}, {"half", 2}};
  return sizes;
}

// float4, uchar3, ...: three components take the room (and alignment) of four.
std::optional<Type> vector_type(const std::string& name) {
  for (const auto& [scalar, size] : scalar_sizes()) {
    if (!name.starts_with(scalar)) continue;
    const std::string width = name.substr(scalar.size());
    for (uint64_t lanes : {2, 3, 4, 8, 16})
      if (width == std::to_string(lanes)) {
        const uint64_t bytes = size * (lanes == 3 ? 4 : lanes);
        return Type{.name = name, .size = bytes, .align = bytes};
      }
  }
  return std::nullopt;
}

std::optional<Type> builtin_type(const std::string& name) {
  const auto scalar = scalar_sizes().find(name);
  if (scalar != scalar_sizes().end()) return Type{.name = name, .size = scalar->second, .align = scalar->second};
  if (auto vector = vector_type(name)) return vector;
  if (name.starts_with("image") && name.ends_with("_t")) return Type{.name = name, .object = ArgKind::image};
  if (name == "sampler_t") return Type{.name = name, .object = ArgKind::sampler};
  // Sizes that depend on the device, or types no kernel argument may have.
  if (name == "size_t" || name == "ptrdiff_t" || name == "intptr_t" || name == "uintptr_t")
    return Type{.name = name, .valid = false};
  if (name == "bool" || name == "event_t" || name == "void") return Type{.name = name, .valid = false};
  return std::nullopt;
}

// The OpenCL spelling of C's multi-word integer types: unsigned int is uint.
std::string integer_name(const std::vector<std::string>& words) {
  bool is_unsigned = false;
  std::string base = "int";
  for (const std::string& word : words) {
    if (word == "unsigned") is_unsigned = true;
    if (word == "char" || word == "short" || word == "long") base = word;
  }
  return is_unsigned ? "u" + base : base;
}

bool integer_word(const std::string& word) {
  return word == "unsigned" || word == "signed" || word == "int" || word == "char" || word == "short" ||
         word == "long";
}

Space space_of(const std::string& word) {
  if (word == "__global" || word == "global") return Space::global;
  if (word == "__constant" || word == "constant") return Space::constant;
  if (word == "__local" || word == "local") return Space::local;
  if (word == "__private" || word == "private") return Space::private_space;
  return Space::none;
}

Access access_of(const std::string& word) {
  if (word == "__read_only" || word == "read_only") return Access::read_only;
  if (word == "__write_only" || word == "write_only") return Access::write_only;
  if (word == "__read_write" || word == "read_write") return Access::read_write;
  return Access::none;
}

bool ignored_qualifier(const std::string& word) {
  static const std::set<std::string> words{"const", "volatile", "restrict", "__restrict", "__restrict__",
                                           "static", "extern", "inline", "__inline", "__const"};
  return words.count(word) > 0;
}

constexpr int max_nesting = 256;

uint64_t round_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

// Index of the token that closes the bracket at `open`, or tokens.size().
size_t matching(Tokens tokens, size_t open) {
  if (open >= tokens.size() || !(tokens[open].is("(") || tokens[open].is("{") || tokens[open].is("["))) return tokens.size();
  const std::string opening = tokens[open].text;
  const std::string closing = opening == "(" ? ")" : opening == "{" ? "}" : "]";
  int depth = 0;
  for (size_t i = open; i < tokens.size(); ++i) {
    if (tokens[i].is(opening)) ++depth;
    if (tokens[i].is(closing) && --depth == 0) return i;
  }
  return tokens.size();
}

Tokens slice(Tokens tokens, size_t begin, size_t end) {
  end = std::min(end, tokens.size());
  return begin < end ? tokens.subspan(begin, end - begin) : Tokens{};
}

// Splits at top-level occurrences of `separator`.
std::vector<Tokens> split(Tokens tokens, std::string_view separator) {
  std::vector<Tokens> parts;
  size_t begin = 0;
  int depth = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& token = tokens[i];
    if (token.is("(") || token.is("[") || token.is("{")) ++depth;
    if (token.is(")") || token.is("]") || token.is("}")) --depth;
    if (depth == 0 && token.is(separator)) {
      parts.push_back(slice(tokens, begin, i));
      begin = i + 1;
    }
  }
  parts.push_back(slice(tokens, begin, tokens.size()));
  return parts;
}

class Declarations {
 public:
  explicit Declarations(Preprocessor& preprocessor) : preprocessor_(preprocessor) {}

  std::vector<Kernel> run(Tokens tokens) {
    // Past an uncertainty of the whole program nothing it found would be used.
    for (size_t i = 0; i < tokens.size() && preprocessor_.certain(); ++i) {
      if (tokens[i].is("{")) {
        i = matching(tokens, i);  // function bodies and initializers: no kernel is defined inside
      } else if (tokens[i].is("typedef")) {
        i = typedef_declaration(tokens, i + 1);
      } else if ((tokens[i].is("struct") || tokens[i].is("union") || tokens[i].is("enum")) && defines_body(tokens, i)) {
        size_t used = 0;
        composite(tokens, i, used);
        i += used - 1;
      } else if (tokens[i].is("kernel") || tokens[i].is("__kernel")) {
        i = kernel_definition(tokens, i + 1);
      }
    }
    return std::move(kernels_);
  }

 private:
  static bool defines_body(Tokens tokens, size_t keyword) {
    size_t i = keyword + 1;
    while (i + 1 < tokens.size() && tokens[i].is("__attribute__")) i = matching(tokens, i + 1) + 1;
    if (i < tokens.size() && tokens[i].identifier()) ++i;
    return i < tokens.size() && tokens[i].is("{");
  }

  // Removes __attribute__((...)) groups, noting the ones that change a layout; the tokens left
  // are `tokens` themselves when there were none, else kept in `storage`.
  Tokens strip_attributes(Tokens tokens, Attributes& attributes, std::vector<Token>& storage) {
    const auto is_attribute = [](const Token& token) { return token.is("__attribute__"); };
    if (std::none_of(tokens.begin(), tokens.end(), is_attribute)) return tokens;
    storage.clear();
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (!tokens[i].is("__attribute__") || i + 1 >= tokens.size() || !tokens[i + 1].is("(")) {
        storage.push_back(tokens[i]);
        continue;
      }
      const size_t close = matching(tokens, i + 1);
      note_attributes(slice(tokens, i + 1, close), attributes);
      i = close;
    }
    return storage;
  }

  void note_attributes(Tokens group, Attributes& attributes) {
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i].is("packed") || group[i].is("__packed__")) attributes.packed = true;
      if (!group[i].is("aligned") && !group[i].is("__aligned__")) continue;
      if (i + 1 < group.size() && group[i + 1].is("(")) {
        const size_t close = matching(group, i + 1);
        const Tokens expression = slice(group, i + 2, close);
        const Value value = preprocessor_.evaluate({expression.begin(), expression.end()});
        attributes.aligned = value.known && value.number > 0 ? std::optional<uint64_t>(static_cast<uint64_t>(value.number)) : std::nullopt;
      } else {
        attributes.aligned = std::nullopt;  // the target's largest alignment
      }
    }
  }

  // struct/union/enum at tokens[start], with or without a body; `used` counts the tokens read.
  Type composite(Tokens tokens, size_t start, size_t& used) {
    const std::string keyword = tokens[start].text;
    size_t i = start + 1;
    Attributes attributes;
    const auto skip_attributes = [&] {
      while (i + 1 < tokens.size() && tokens[i].is("__attribute__")) {
        const size_t close = std::min(matching(tokens, i + 1), tokens.size());
        note_attributes(slice(tokens, i + 1, close), attributes);
        i = close + 1;
      }
    };
    skip_attributes();
    std::string tag;
    if (i < tokens.size() && tokens[i].identifier()) tag = tokens[i++].text;
    skip_attributes();
    const std::string name = keyword + (tag.empty() ? "" : " " + tag);
    if (i >= tokens.size() || !tokens[i].is("{")) {
      used = i - start;
      if (keyword == "enum") return Type{.name = name, .size = 4, .align = 4};
      const auto known = composites_.find(name);
      return known != composites_.end() ? known->second : Type{.name = name};
    }
    const size_t close = matching(tokens, i);
    const Tokens body = slice(tokens, i + 1, close);
    if (++nesting_ > max_nesting) {
      preprocessor_.uncertain("types nested too deeply");
      used = std::min(close, tokens.size()) + 1 - start;
      return Type{.name = name};
    }
    used = std::min(close, tokens.size()) + 1 - start;
    // Attributes after the closing brace belong to the type too.
    while (start + used + 1 < tokens.size() && tokens[start + used].is("__attribute__")) {
      const size_t attribute_close = matching(tokens, start + used + 1);
      note_attributes(slice(tokens, start + used + 1, attribute_close), attributes);
      used = std::min(attribute_close, tokens.size()) + 1 - start;
    }
    Type type = keyword == "enum" ? Type{.name = name, .size = 4, .align = 4} : layout(body, keyword == "union", attributes);
    --nesting_;
    type.name = name;
    if (!tag.empty()) composites_[name] = type;
    return type;
  }

  // C's layout rules, as OpenCL C keeps them: each member at a multiple of its alignment.
  Type layout(Tokens body, bool is_union, const Attributes& attributes) {
    uint64_t size = 0, align = 1;
    bool known = true;
    for (const Tokens& member : split(body, ";")) {
      if (member.empty()) continue;
      Attributes member_attributes;
      std::vector<Token> storage;
      const Tokens stripped = strip_attributes(member, member_attributes, storage);
      auto [type, declarators] = declaration(stripped);
      for (const Declarator& declarator : declarators) {
        const std::optional<uint64_t> alignment = attributes.packed || member_attributes.packed ? std::optional<uint64_t>(1) : type.align;
        if (declarator.pointers || declarator.bit_field || !type.size || !alignment || !declarator.count ||
            !member_attributes.aligned) {
          known = false;  // pointers: the device's address width; bit-fields: the compiler's choice
          continue;
        }
        const uint64_t member_align = std::max(*alignment, *member_attributes.aligned);
        const uint64_t member_size = *type.size * *declarator.count;
        align = std::max(align, member_align);
        size = is_union ? std::max(size, member_size) : round_up(size, member_align) + member_size;
      }
    }
    if (!attributes.aligned) known = false;
    if (!known) return Type{};
    align = std::max(align, *attributes.aligned);
    return Type{.size = round_up(size, align), .align = align};
  }

  // A declaration's type and its declarators (a parameter has one, a member or typedef several).
  std::pair<Type, std::vector<Declarator>> declaration(Tokens tokens) {
    size_t i = 0;
    std::vector<std::string> words;
    Type type;
    bool have_type = false;
    Space space = Space::none;
    Access access = Access::none;
    bool pipe = false;
    for (; i < tokens.size(); ++i) {
      const Token& token = tokens[i];
      if (!token.identifier()) break;
      if (token.is("__attribute__")) {
        i = std::min(matching(tokens, i + 1), tokens.size());
      } else if (space_of(token.text) != Space::none) {
        space = space_of(token.text);
      } else if (access_of(token.text) != Access::none) {
        access = access_of(token.text);
      } else if (token.is("pipe")) {
        pipe = true;
      } else if (ignored_qualifier(token.text)) {
      } else if (token.is("struct") || token.is("union") || token.is("enum")) {
        size_t used = 0;
        type = composite(tokens, i, used);
        have_type = true;
        i += used - 1;
      } else if (have_type || (!words.empty() && !(integer_word(words.back()) && integer_word(token.text)))) {
        break;  // the declarator's name
      } else {
        words.push_back(token.text);
      }
    }
    if (!have_type) type = resolve(words);
    type.space = type.pointers ? type.space : space;
    if (pipe) type.object = ArgKind::pipe;
    access_ = access;
    std::vector<Declarator> declarators;
    for (const Tokens part : split(slice(tokens, i, tokens.size()), ","))
      declarators.push_back(declarator(part));
    return {type, declarators};
  }

  Type resolve(const std::vector<std::string>& words) {
    if (words.empty()) return Type{};
    if (words.size() > 1 || integer_word(words[0])) {
      if (!std::all_of(words.begin(), words.end(), integer_word)) return Type{.name = words.back()};
      return *builtin_type(integer_name(words));
    }
    const auto defined = typedefs_.find(words[0]);
    if (defined != typedefs_.end()) return defined->second;
    if (auto builtin = builtin_type(words[0])) return *builtin;
    unknown_type_ = words[0];
    return Type{.name = words[0]};  // a type it does not know: by value, size unknown
  }

  Declarator declarator(Tokens tokens) {
    Declarator result;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const Token& token = tokens[i];
      if (token.is("__attribute__")) {
        i = std::min(matching(tokens, i + 1), tokens.size());
      } else if (token.is("*")) {
        ++result.pointers;
      } else if (token.identifier() && space_of(token.text) != Space::none) {
        result.space = space_of(token.text);
      } else if (token.identifier() && !ignored_qualifier(token.text) && result.name.empty()) {
        result.name = token.text;
      } else if (token.is("[")) {
        const size_t close = matching(tokens, i);
        const Tokens expression = slice(tokens, i + 1, close);
        const Value count = preprocessor_.evaluate({expression.begin(), expression.end()});
        result.count = count.known && count.number >= 0 && result.count ? std::optional<uint64_t>(*result.count * static_cast<uint64_t>(count.number)) : std::nullopt;
        result.array = true;
        i = close;
      } else if (token.is(":")) {
        result.bit_field = true;
        break;
      } else if (token.is("(") || token.is("=")) {
        result.count = std::nullopt;  // function pointers, initializers: not for kernel arguments
        break;
      }
    }
    return result;
  }

  size_t typedef_declaration(Tokens tokens, size_t start) {
    size_t end = start;
    while (end < tokens.size() && !tokens[end].is(";")) end = tokens[end].is("{") ? matching(tokens, end) + 1 : end + 1;
    Attributes attributes;
    std::vector<Token> unused;
    strip_attributes(slice(tokens, start, end), attributes, unused);
    auto [type, declarators] = declaration(slice(tokens, start, end));
    for (const Declarator& declarator : declarators) {
      if (declarator.name.empty()) continue;
      Type alias = type;
      alias.name = declarator.name;
      if (declarator.pointers) {
        alias.pointers += declarator.pointers;
        alias.size = alias.align = std::nullopt;
      } else if (declarator.array) {
        alias.size = declarator.count && alias.size ? std::optional<uint64_t>(*alias.size * *declarator.count) : std::nullopt;
        alias.valid = false;  // arrays are no kernel argument types
      }
      if (attributes.aligned && *attributes.aligned && alias.align) alias.align = std::max(*alias.align, *attributes.aligned);
      typedefs_[declarator.name] = alias;
    }
    return end;
  }

  size_t kernel_definition(Tokens tokens, size_t start) {
    size_t i = start;
    while (i + 1 < tokens.size() && !(tokens[i].identifier() && !tokens[i].is("__attribute__") && tokens[i + 1].is("("))) {
      i = tokens[i].is("(") ? matching(tokens, i) + 1 : i + 1;
    }
    if (i + 1 >= tokens.size()) return tokens.size();
    Kernel kernel{.name = tokens[i].text};
    const size_t close = matching(tokens, i + 1);
    const Tokens parameters = slice(tokens, i + 2, close);
    size_t after = close + 1;
    while (after + 1 < tokens.size() && tokens[after].is("__attribute__")) after = matching(tokens, after + 1) + 1;
    if (after >= tokens.size() || !tokens[after].is("{")) return after;  // a declaration, not a definition
    read_parameters(kernel, parameters);
    add(std::move(kernel));
    return matching(tokens, after);
  }

  void add(Kernel kernel) {
    const auto same = std::find_if(kernels_.begin(), kernels_.end(), [&](const Kernel& k) { return k.name == kernel.name; });
    if (same == kernels_.end()) return kernels_.push_back(std::move(kernel));
    same->certain = false;
    same->uncertainty = "defined twice";
  }

  void read_parameters(Kernel& kernel, Tokens parameters) {
    if (parameters.empty() || (parameters.size() == 1 && parameters[0].is("void"))) return;
    for (const Tokens parameter : split(parameters, ",")) {
      std::string problem;
      kernel.arguments.push_back(argument(parameter, problem));
      if (!problem.empty() && kernel.certain) {
        kernel.certain = false;
        kernel.uncertainty = "argument " + std::to_string(kernel.arguments.size() - 1) + ": " + problem;
      }
    }
  }

  Argument argument(Tokens parameter, std::string& problem) {
    Attributes attributes;
    unknown_type_.clear();
    std::vector<Token> storage;
    auto [type, declarators] = declaration(strip_attributes(parameter, attributes, storage));
    const Declarator declarator = declarators.empty() ? Declarator{} : declarators[0];
    Argument result{.name = declarator.name, .access = access_};
    const int pointers = type.pointers + declarator.pointers;
    const Space space = type.space;
    result.type_name = type.name + std::string(static_cast<size_t>(pointers), '*');
    if (declarators.size() != 1 || declarator.array) problem = "not a single plain parameter";
    if (!unknown_type_.empty()) problem = "the type " + unknown_type_ + " is not defined in the source";
    if (pointers > 1) {
      problem = "a pointer to a pointer (invalid in OpenCL C)";
      return result;
    }
    if (pointers == 1) {
      result.kind = space == Space::global ? ArgKind::global_memory
                    : space == Space::constant ? ArgKind::constant_memory
                    : space == Space::local ? ArgKind::local_memory : ArgKind::by_value;
      if (result.kind == ArgKind::by_value) problem = "a pointer to private memory (invalid in OpenCL C)";
      return result;
    }
    result.kind = type.object;
    if (type.object == ArgKind::image && result.access == Access::none) result.access = Access::read_only;
    if (type.object == ArgKind::by_value) {
      result.access = Access::none;
      if (space != Space::none && space != Space::private_space) problem = "an address space on a value (invalid)";
      if (type.valid) result.size = type.size;
    }
    return result;
  }

  Preprocessor& preprocessor_;
  std::map<std::string, Type> typedefs_;
  std::map<std::string, Type> composites_;  // "struct tag", "union tag"
  std::vector<Kernel> kernels_;
  int nesting_ = 0;               // struct definitions inside struct definitions
  Access access_ = Access::none;  // of the last declaration read
  std::string unknown_type_;
};

}  // namespace

std::vector<Kernel> find_kernels(const std::vector<Token>& tokens, Preprocessor& preprocessor) {
  return Declarations(preprocessor).run(tokens);
}

}  // namespace hivecl::kernels_parser
