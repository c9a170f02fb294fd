// Chat formats: see chat.h for the exact text of each.
// defines: chat_format_for, chat_render, chat_render_turn
#include "model/chat.h"

#include <nlohmann/json.hpp>

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

// A tool as Llama 3.1's template lists it: OpenAI's tool object as JSON,
// indented by 4. ordered_json: the keys in the order the model saw in
// tuning (type, function: name, description, parameters), and the client's
// order inside the schema.
std::string llama3_tool_json(const ChatTool& t) {
  using ojson = nlohmann::ordered_json;
  ojson fn;
  fn["name"] = t.name;
  if (!t.description.empty()) fn["description"] = t.description;
  ojson params = ojson::parse(t.parameters, nullptr, /*allow_exceptions=*/false);
  // (The server checked the schema; text that is not JSON is kept as a string.)
  fn["parameters"] = params.is_discarded() ? ojson(t.parameters) : std::move(params);
  ojson tool;
  tool["type"] = "function";
  tool["function"] = std::move(fn);
  return tool.dump(4, ' ', false, ojson::error_handler_t::replace);
}

// The user turn that carries the tools: the instruction, the tools, then
// the user's own words.
void llama3_tools_user(std::string& out, const std::vector<ChatTool>& tools,
                       const std::string& content) {
  out += "<|start_header_id|>user<|end_header_id|>\n\n";
  out += kLlama3ToolsPreamble;
  for (const ChatTool& t : tools) {
    out += llama3_tool_json(t);
    out += "\n\n";
  }
  out += trim(content);
  out += kLlama3Eot;
}

// An assistant turn that called tools: each call as the JSON the model is
// asked to write, {"name": ..., "parameters": ...}.
void llama3_tool_calls(std::string& out, const std::vector<ChatToolCall>& calls) {
  out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i > 0) out += "\n";
    out += "{\"name\": ";
    out += nlohmann::json(calls[i].name)
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out += ", \"parameters\": ";
    const std::string args = trim(calls[i].arguments);
    out += args.empty() ? std::string("{}") : args;
    out += "}";
  }
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
                        bool add_generation_prompt, const std::vector<ChatTool>& tools) {
  std::string out;
  if (f == ChatFormat::Llama3) {
    out += kLlama3Bos;
    // The tools go into the first user message; without one, into a user
    // turn of their own after the leading system messages.
    size_t tools_at = msgs.size();
    if (!tools.empty()) {
      for (size_t i = 0; i < msgs.size() && tools_at == msgs.size(); ++i)
        if (msgs[i].role == "user") tools_at = i;
      if (tools_at == msgs.size()) {
        tools_at = 0;
        while (tools_at < msgs.size() && msgs[tools_at].role == "system") ++tools_at;
      }
    }
    for (size_t i = 0; i <= msgs.size(); ++i) {
      const bool user_here = i < msgs.size() && msgs[i].role == "user";
      if (!tools.empty() && i == tools_at) {
        llama3_tools_user(out, tools, user_here ? msgs[i].content : std::string());
        if (user_here) continue;
      }
      if (i == msgs.size()) break;
      const ChatMessage& m = msgs[i];
      if (m.role == "assistant" && !m.tool_calls.empty())
        llama3_tool_calls(out, m.tool_calls);
      else  // a tool's result is Llama 3.1's "ipython" turn
        llama3_message(out, m.role == "tool" ? "ipython" : m.role, m.content);
    }
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
