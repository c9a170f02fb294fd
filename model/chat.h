// Chat formats for Llama 3 and Llama 2: messages in, prompt text out, with
// the output of llama.cpp's built-in templates "llama3" and "llama2-sys":
//
//   Llama 3: "<|begin_of_text|>" then, per message,
//            "<|start_header_id|>" role "<|end_header_id|>\n\n" trim(content) "<|eot_id|>"
//            and with the generation prompt "<|start_header_id|>assistant<|end_header_id|>\n\n".
//            llama.cpp leaves "<|begin_of_text|>" to the tokenizer; we render it
//            (encode with add_bos = false, parse_special = true).
//   Llama 2: "[INST] " then, per message: system "<<SYS>>\n" content "\n<</SYS>>\n\n",
//            user content " [/INST]", assistant content "</s>"; after an
//            assistant message the next one opens a new "[INST] ". Content is
//            kept as is. The BOS is the tokenizer's (encode with add_bos = true,
//            parse_special = true). There is no generation prompt: the text
//            already ends where the reply starts.
// (llama.cpp's plain "llama2" has no <<SYS>> block; its "-strip" variant trims
// the content and its "-bos" variant writes "<s>" before later "[INST]"s.)
//
// Tool calling (Llama 3 only: Llama 3.1's JSON tool calling, with Meta's
// default of the tools in the first user message):
//   - the first user message's content is preceded by kLlama3ToolsPreamble,
//     then each tool as {"type": "function", "function": {...}} in JSON
//     indented by 4, each followed by "\n\n"; with no user message, that
//     block is a user turn of its own after the leading system messages;
//   - an assistant tool call is {"name": NAME, "parameters": ARGUMENTS}
//     (ARGUMENTS the call's JSON text as sent), several on lines of their own;
//   - a tool result is an "ipython" turn: "<|start_header_id|>ipython<|end_header_id|>\n\n"
//     trim(content) "<|eot_id|>".
// Without tools and tool messages the output is the plain rendering above.
// defines: ChatFormat, ChatToolCall, ChatMessage, ChatTool, kLlama3ToolsPreamble,
// chat_format_for, chat_bos_in_text, chat_has_tools, chat_render, chat_render_turn
#pragma once

#include <string>
#include <vector>

namespace ls {

enum class ChatFormat { Llama3, Llama2 };

// An assistant's call of a tool (OpenAI's tool_calls[]).
struct ChatToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON object's text
};

struct ChatMessage {
  std::string role;  // system, user, assistant, tool
  std::string content;
  std::vector<ChatToolCall> tool_calls{};  // assistant: the calls it made (content unused)
  std::string tool_call_id{};              // tool: the call this is the result of
};

// A function the model may call (OpenAI's tools[].function).
struct ChatTool {
  std::string name;
  std::string description{};  // empty: none given
  std::string parameters{};   // its JSON schema's text
};

// Llama 3.1's instruction for JSON tool calls (Meta's template, word for
// word, its missing space after "value}." included: the model was tuned on it).
inline constexpr const char* kLlama3ToolsPreamble =
    "Given the following functions, please respond with a JSON for a function call with its "
    "proper arguments that best answers the given prompt.\n\nRespond in the format "
    "{\"name\": function name, \"parameters\": dictionary of argument name and its value}."
    "Do not use variables.\n\n";

// The format: from the GGUF's tokenizer.chat_template when it names one
// ("[INST]" -> Llama2, "<|start_header_id|>" -> Llama3, checked in llama.cpp's
// order), else by tokenizer family (gpt2/llama-bpe -> Llama3, llama/SPM -> Llama2).
ChatFormat chat_format_for(const std::string* chat_template /* nullptr if absent */,
                           bool is_llama3_vocab);

// Whether chat_render's text already holds the BOS (Llama 3) or the tokenizer
// must add it (Llama 2).
inline bool chat_bos_in_text(ChatFormat f) {
  return f == ChatFormat::Llama3;
}

// Whether the format renders tools, tool calls and tool results (Llama 3).
inline bool chat_has_tools(ChatFormat f) {
  return f == ChatFormat::Llama3;
}

// The prompt text that precedes the assistant's reply; tools (Llama 3 only,
// see chat_has_tools) are listed for the model as above.
std::string chat_render(ChatFormat f, const std::vector<ChatMessage>& msgs,
                        bool add_generation_prompt, const std::vector<ChatTool>& tools = {});

// Multi-turn with the KV cache kept: the text to append for one more user turn,
// ending with the generation prompt. first_turn: the whole opening prompt
// (with system, when given; system is ignored on later turns). A later turn
// assumes the reply before it ended with its end-of-turn token (Llama 3
// <|eot_id|>, Llama 2 </s>) and that this token is already in the cache, so
//   chat_render_turn(first) + reply1 + EOT + chat_render_turn(second) + ...
// equals chat_render of the whole conversation.
std::string chat_render_turn(ChatFormat f, const ChatMessage& user, bool first_turn,
                             const std::string* system);

}  // namespace ls
