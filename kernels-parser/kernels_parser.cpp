#include "kernels_parser.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "declarations.hpp"
#include "preprocessor.hpp"

namespace hivecl::kernels_parser {

namespace {

struct Options {
  std::vector<std::pair<std::string, std::string>> macros;
  std::vector<std::string> include_directories;
};

std::vector<std::string> words(std::string_view options) {
  std::vector<std::string> result;
  std::string word;
  bool quoted = false;
  for (char c : options) {
    if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && std::isspace(static_cast<unsigned char>(c))) {
      if (!word.empty()) result.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) result.push_back(std::move(word));
  return result;
}

// -D name[=value] and -I dir, each with or without a space after the flag.
Options read_options(std::string_view text) {
  Options options;
  const std::vector<std::string> all = words(text);
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string& word = all[i];
    if (word != "-D" && word != "-I" && !word.starts_with("-D") && !word.starts_with("-I")) continue;
    std::string value = word.size() > 2 ? word.substr(2) : (i + 1 < all.size() ? all[++i] : "");
    if (word.starts_with("-I")) {
      options.include_directories.push_back(value);
      continue;
    }
    const size_t equals = value.find('=');
    if (equals == std::string::npos)
      options.macros.emplace_back(value, "1");
    else
      options.macros.emplace_back(value.substr(0, equals), value.substr(equals + 1));
  }
  return options;
}

}  // namespace

const Kernel* Program::certain_kernel(std::string_view name) const {
  if (!certain) return nullptr;
  const auto found = std::find_if(kernels.begin(), kernels.end(), [&](const Kernel& k) { return k.name == name; });
  return found != kernels.end() && found->certain ? &*found : nullptr;
}

Program parse(const std::vector<std::string>& sources, std::string_view options_text, Headers headers) {
  const Options options = read_options(options_text);
  Preprocessor preprocessor(options.include_directories, std::move(headers));
  for (const auto& [name, value] : options.macros) preprocessor.define(name, value);
  std::string source;
  for (const std::string& part : sources) source += part;
  preprocessor.run(source);
  Program program;
  // Reading the declarations may find the program uncertain too (an array size it cannot evaluate).
  std::vector<Kernel> kernels;
  if (preprocessor.certain()) kernels = find_kernels(preprocessor.output(), preprocessor);
  program.certain = preprocessor.certain();
  if (program.certain) program.kernels = std::move(kernels);
  program.uncertainty = preprocessor.uncertainty();
  return program;
}

Program parse(std::string_view source, std::string_view options) {
  return parse(std::vector<std::string>{std::string(source)}, options);
}

}  // namespace hivecl::kernels_parser
