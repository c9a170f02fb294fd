// Chat formats: see chat.h for the exact text of each.
// defines: chat_format_for, chat_render, chat_render_turn
#include "model/chat.h"

namespace ls {

namespace {

// Leading and trailing ASCII whitespace off, as llama.cpp trims Llama 3 content.
std::string trim(const std::string& s) {
  auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  size_t b = 0, e = s.size();
  while (b < e && space(s[b])) ++b;
  while (e > b && space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

constexpr const char* kLlama3Bos = "<|begin_of_text|>";
constexpr const char* kLlama3Eot = "<|eot_id|>";

void llama3_message(std::string& out, const std::string& role, const std::string& content) {
  out += "<|start_header_id|>";
  out += role;
  out += "<|end_header_id|>\n\n";
  out += trim(content);
  out += kLlama3Eot;
}

void llama3_generation_prompt(std::string& out) {
  out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

void llama2_system(std::string& out, const std::string& content) {
  out += "<<SYS>>\n";
  out += content;
  out += "\n<</SYS>>\n\n";
}

void llama2_user(std::string& out, const std::string& content) {
  out += content;
  out += " [/INST]";
}

}  // namespace

ChatFormat chat_format_for(const std::string* chat_template, bool is_llama3_vocab) {
  if (chat_template != nullptr) {
    const std::string& t = *chat_template;
    // llama.cpp looks for "[INST]" before the Llama 3 headers.
    if (t.find("[INST]") != std::string::npos) return ChatFormat::Llama2;
    if (t.find("<|start_header_id|>") != std::string::npos) return ChatFormat::Llama3;
  }
  return is_llama3_vocab ? ChatFormat::Llama3 : ChatFormat::Llama2;
}

std::string chat_render(ChatFormat f, const std::vector<ChatMessage>& msgs,
                        bool add_generation_prompt) {
  std::string out;
  if (f == ChatFormat::Llama3) {
    out += kLlama3Bos;
    for (const ChatMessage& m : msgs) llama3_message(out, m.role, m.content);
    if (add_generation_prompt) llama3_generation_prompt(out);
    return out;
  }
  // Llama 2: one [INST] block per user turn; the system message goes inside
  // the first one. No generation prompt exists: " [/INST]" ends the turn.
  out += "[INST] ";
  bool inside_turn = true;
  for (const ChatMessage& m : msgs) {
    if (!inside_turn) {
      out += "[INST] ";
      inside_turn = true;
    }
    if (m.role == "system") {
      llama2_system(out, m.content);
    } else if (m.role == "user") {
      llama2_user(out, m.content);
    } else {  // assistant
      out += m.content;
      out += "</s>";
      inside_turn = false;
    }
  }
  return out;
}

std::string chat_render_turn(ChatFormat f, const ChatMessage& user, bool first_turn,
                             const std::string* system) {
  std::string out;
  if (f == ChatFormat::Llama3) {
    if (first_turn) {
      out += kLlama3Bos;
      if (system != nullptr) llama3_message(out, "system", *system);
    }
    llama3_message(out, user.role, user.content);
    llama3_generation_prompt(out);
    return out;
  }
  out += "[INST] ";
  if (first_turn && system != nullptr) llama2_system(out, *system);
  llama2_user(out, user.content);
  return out;
}

}  // namespace ls
