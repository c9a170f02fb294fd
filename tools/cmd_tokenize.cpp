// layerstream tokenize: print the token ids of a text (the argument, or stdin
// read as is, a final newline included) with the tokenizer of a GGUF file.
// One line: the ids separated by spaces, or id:'piece' pairs with --pieces.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "io/gguf.h"
#include "model/tokenizer.h"
#include "model/unicode.h"
#include "tools/commands.h"

namespace ls {
namespace {

struct TokenizeArgs {
  std::string model;
  std::string text;
  bool no_bos = false, special = false, pieces = false;
};

// A piece kept on one line: control bytes, quotes, backslashes and bytes of
// incomplete UTF-8 sequences as escapes; whole characters as they are.
std::string quote_piece(const std::string& p) {
  std::string out = "'";
  char buf[8];
  for (size_t pos = 0; pos < p.size();) {
    const Utf8Char c = utf8_next(p, pos);
    const auto b = static_cast<uint8_t>(p[pos]);
    if (c.cp == kInvalidCodepoint || b < 0x20 || b == 0x7F) {
      if (b == '\n') {
        out += "\\n";
      } else if (b == '\t') {
        out += "\\t";
      } else if (b == '\r') {
        out += "\\r";
      } else {
        std::snprintf(buf, sizeof buf, "\\x%02x", b);
        out += buf;
      }
    } else if (b == '\'' || b == '\\') {
      out += '\\';
      out += static_cast<char>(b);
    } else {
      out.append(p, pos, c.len);
    }
    pos += c.len;
  }
  return out + "'";
}

int run_tokenize(const TokenizeArgs& a, bool have_text) {
  auto f = GgufFile::open(a.model);
  if (!f) {
    std::fprintf(stderr, "error: %s\n", f.error().message.c_str());
    return 1;
  }
  auto tok = Tokenizer::from_gguf(**f);
  if (!tok) {
    std::fprintf(stderr, "error: %s\n", tok.error().message.c_str());
    return 1;
  }
  std::string text = a.text;
  if (!have_text) {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    if (std::cin.bad()) {
      std::fprintf(stderr, "error: cannot read the text from stdin\n");
      return 1;
    }
  }
  const bool add_bos = (*tok)->add_bos_default() && !a.no_bos;
  const std::vector<int32_t> ids = (*tok)->encode(text, add_bos, a.special);
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
    if (a.pieces) line += ":" + quote_piece((*tok)->piece(ids[i]));
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

Command add_tokenize(CLI::App& app) {
  auto* sub = app.add_subcommand("tokenize", "Print the token ids of a text");
  auto a = std::make_shared<TokenizeArgs>();
  sub->add_option("-m,--model", a->model,
                  "GGUF file with tokenizer.* metadata (a model or a vocab)")
      ->required();
  sub->add_flag("--no-bos", a->no_bos, "Do not add BOS, even if the tokenizer adds it by default");
  sub->add_flag("--special", a->special,
                "Parse control tokens such as <|eot_id|> in the text (otherwise they are text)");
  sub->add_flag("--pieces", a->pieces, "Print id:'piece' pairs instead of bare ids");
  auto* text = sub->add_option("text", a->text, "The text (default: all of stdin, as is)");
  return [a, text] { return run_tokenize(*a, text->count() > 0); };
}

}  // namespace ls
