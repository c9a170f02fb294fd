#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "model/chat.h"

using namespace ls;

// Expected strings are written out from the format definitions (Meta's
// Llama 3 prompt format; the Llama 2 [INST]/<<SYS>> format as llama.cpp's
// "llama2-sys" renders it), not produced by the code under test.

TEST_CASE("chat: format from the template, else from the vocabulary") {
  const std::string llama3 =
      "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
      "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ "
      "message['content'] | trim + '<|eot_id|>' %}{{ content }}{% endfor %}";
  const std::string llama2 =
      "{% if messages[0]['role'] == 'system' %}{% set system_message = '<<SYS>>\\n' + "
      "messages[0]['content'] + '\\n<</SYS>>\\n\\n' %}{% endif %}{{ '[INST] ' + content + "
      "' [/INST]' }}";
  const std::string chatml = "{{ '<|im_start|>' + message['role'] }}";
  CHECK(chat_format_for(&llama3, false) == ChatFormat::Llama3);
  CHECK(chat_format_for(&llama2, true) == ChatFormat::Llama2);
  // No template, or one we do not know: the tokenizer family decides.
  CHECK(chat_format_for(nullptr, true) == ChatFormat::Llama3);
  CHECK(chat_format_for(nullptr, false) == ChatFormat::Llama2);
  CHECK(chat_format_for(&chatml, true) == ChatFormat::Llama3);
  CHECK(chat_format_for(&chatml, false) == ChatFormat::Llama2);
  CHECK(chat_bos_in_text(ChatFormat::Llama3));
  CHECK_FALSE(chat_bos_in_text(ChatFormat::Llama2));
}

TEST_CASE("chat: llama3 system and user") {
  const std::vector<ChatMessage> msgs = {{"system", "You are a helpful assistant."},
                                         {"user", "What is 2+2?"}};
  CHECK(chat_render(ChatFormat::Llama3, msgs, true) ==
        "<|begin_of_text|>"
        "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(chat_render(ChatFormat::Llama3, msgs, false) ==
        "<|begin_of_text|>"
        "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>");
  // Content is trimmed of surrounding whitespace, inner whitespace kept.
  CHECK(chat_render(ChatFormat::Llama3, {{"user", " \n Hi  there\n\t"}}, true) ==
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi  there<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

// The four-turn chat of the multi-turn cases below (system, user,
// assistant, user), rendered for Llama 3 with the assistant's header to come.
const char* const kMultiTurnLlama3 =
    "<|begin_of_text|>"
    "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\nHi! How can I help?<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nName a colour.<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n";

TEST_CASE("chat: llama3 multi-turn") {
  const std::vector<ChatMessage> msgs = {{"system", "Be brief."},
                                         {"user", "Hello"},
                                         {"assistant", "Hi! How can I help?"},
                                         {"user", "Name a colour."}};
  CHECK(chat_render(ChatFormat::Llama3, msgs, true) == kMultiTurnLlama3);
}

TEST_CASE("chat: llama2 system and user") {
  const std::vector<ChatMessage> msgs = {{"system", "You are a helpful assistant."},
                                         {"user", "What is 2+2?"}};
  const std::string expected =
      "[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nWhat is 2+2? [/INST]";
  CHECK(chat_render(ChatFormat::Llama2, msgs, true) == expected);
  CHECK(chat_render(ChatFormat::Llama2, msgs, false) == expected);  // no generation prompt exists
  CHECK(chat_render(ChatFormat::Llama2, {{"user", "Hi"}}, true) == "[INST] Hi [/INST]");
}

TEST_CASE("chat: llama2 multi-turn") {
  const std::vector<ChatMessage> msgs = {
      {"system", "Be brief."},    {"user", "Hello"},      {"assistant", "Hi! How can I help?"},
      {"user", "Name a colour."}, {"assistant", "Blue."}, {"user", "Another?"}};
  CHECK(chat_render(ChatFormat::Llama2, msgs, true) ==
        "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHello [/INST]Hi! How can I help?</s>"
        "[INST] Name a colour. [/INST]Blue.</s>"
        "[INST] Another? [/INST]");
  // Ending on the assistant: the next [INST] is not opened yet.
  const std::vector<ChatMessage> two(msgs.begin(), msgs.begin() + 3);
  CHECK(chat_render(ChatFormat::Llama2, two, true) ==
        "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHello [/INST]Hi! How can I help?</s>");
}

TEST_CASE("chat: turns appended to the cache continue the full rendering") {
  const std::string system = "Be brief.";
  const std::vector<ChatMessage> users = {
      {"user", "Hello"}, {"user", "Name a colour."}, {"user", "Another?"}};
  const std::vector<std::string> replies = {"Hi! How can I help?", "Blue.", "Red."};
  for (ChatFormat f : {ChatFormat::Llama3, ChatFormat::Llama2}) {
    CAPTURE(int(f));
    const std::string eot = f == ChatFormat::Llama3 ? "<|eot_id|>" : "</s>";
    std::vector<ChatMessage> history = {{"system", system}};
    std::string streamed;
    for (size_t i = 0; i < users.size(); ++i) {
      const std::string turn = chat_render_turn(f, users[i], i == 0, &system);
      history.push_back(users[i]);
      // The cache so far plus this turn is the whole conversation's prompt.
      CHECK(streamed + turn == chat_render(f, history, true));
      streamed += turn + replies[i] + eot;  // the reply, ended by its EOT token
      history.push_back({"assistant", replies[i]});
    }
  }
  CHECK(chat_render_turn(ChatFormat::Llama3, {"user", "Hi"}, false, nullptr) ==
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(chat_render_turn(ChatFormat::Llama3, {"user", "Hi"}, true, nullptr) ==
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(chat_render_turn(ChatFormat::Llama2, {"user", "Hi"}, false, nullptr) ==
        "[INST] Hi [/INST]");
  const std::string sys = "S";
  CHECK(chat_render_turn(ChatFormat::Llama2, {"user", "Hi"}, true, &sys) ==
        "[INST] <<SYS>>\nS\n<</SYS>>\n\nHi [/INST]");
}

// Tools: Llama 3.1's JSON tool calling, the expected text written out from
// Meta's template (tools in the first user message, indented by 4; a call
// as {"name": ..., "parameters": ...}; a result as an ipython turn).
TEST_CASE("chat: llama3 with tools, a tool call and its result") {
  const std::vector<ChatTool> tools = {
      {"get_weather", "The weather in a city.",
       R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})"},
      {"now", "", R"({"type":"object","properties":{}})"}};
  std::vector<ChatMessage> msgs = {{"system", "Be brief."}, {"user", " Weather in Paris? "}};
  const std::string preamble =
      "Given the following functions, please respond with a JSON for a function call with its "
      "proper arguments that best answers the given prompt.\n\n"
      "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument "
      "name and its value}.Do not use variables.\n\n";
  const std::string weather =
      "{\n"
      "    \"type\": \"function\",\n"
      "    \"function\": {\n"
      "        \"name\": \"get_weather\",\n"
      "        \"description\": \"The weather in a city.\",\n"
      "        \"parameters\": {\n"
      "            \"type\": \"object\",\n"
      "            \"properties\": {\n"
      "                \"city\": {\n"
      "                    \"type\": \"string\"\n"
      "                }\n"
      "            },\n"
      "            \"required\": [\n"
      "                \"city\"\n"
      "            ]\n"
      "        }\n"
      "    }\n"
      "}\n\n";
  // No description: no such key.
  const std::string now =
      "{\n"
      "    \"type\": \"function\",\n"
      "    \"function\": {\n"
      "        \"name\": \"now\",\n"
      "        \"parameters\": {\n"
      "            \"type\": \"object\",\n"
      "            \"properties\": {}\n"
      "        }\n"
      "    }\n"
      "}\n\n";
  const std::string opening =
      "<|begin_of_text|>"
      "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\n" +
      preamble + weather + now + "Weather in Paris?<|eot_id|>";
  CHECK(chat_render(ChatFormat::Llama3, msgs, true, tools) ==
        opening + "<|start_header_id|>assistant<|end_header_id|>\n\n");

  // The call and its result, then the model answers in words.
  ChatMessage call{"assistant", ""};
  call.tool_calls.push_back({"call_1", "get_weather", R"({"city": "Paris"})"});
  ChatMessage result{"tool", " 18C, sunny\n"};
  result.tool_call_id = "call_1";
  msgs.push_back(call);
  msgs.push_back(result);
  CHECK(chat_render(ChatFormat::Llama3, msgs, true, tools) ==
        opening +
            "<|start_header_id|>assistant<|end_header_id|>\n\n"
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>"
            "<|start_header_id|>ipython<|end_header_id|>\n\n18C, sunny<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");

  // Two calls in one message: one per line. Tool messages render without tools too.
  ChatMessage two{"assistant", "ignored"};
  two.tool_calls = {{"a", "now", "{}"}, {"b", "now", ""}};
  CHECK(chat_render(ChatFormat::Llama3, {two, {"tool", "noon"}}, false) ==
        "<|begin_of_text|><|start_header_id|>assistant<|end_header_id|>\n\n"
        "{\"name\": \"now\", \"parameters\": {}}\n{\"name\": \"now\", \"parameters\": {}}<|eot_id|>"
        "<|start_header_id|>ipython<|end_header_id|>\n\nnoon<|eot_id|>");

  // No user message: the tools are a user turn of their own after the system messages.
  CHECK(chat_render(ChatFormat::Llama3, {{"system", "S"}}, true, {tools[1]}) ==
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n" +
            preamble + now + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  // Only the first user message carries them.
  const std::string later = chat_render(
      ChatFormat::Llama3, {{"user", "a"}, {"assistant", "b"}, {"user", "c"}}, true, {tools[1]});
  const std::string user_head = "<|start_header_id|>user<|end_header_id|>\n\n";
  CHECK(later.find(preamble) == later.find(user_head) + user_head.size());
  CHECK(later.find(preamble, later.find(preamble) + 1) == std::string::npos);
  CHECK(later.find("<|start_header_id|>user<|end_header_id|>\n\nc<|eot_id|>") != std::string::npos);
}

TEST_CASE("chat: without tools the rendering is the plain one") {
  const std::vector<ChatMessage> msgs = {{"system", "Be brief."},
                                         {"user", "Hello"},
                                         {"assistant", "Hi! How can I help?"},
                                         {"user", "Name a colour."}};
  for (ChatFormat f : {ChatFormat::Llama3, ChatFormat::Llama2})
    for (bool gen : {true, false})
      CHECK(chat_render(f, msgs, gen, {}) == chat_render(f, msgs, gen));
  CHECK(chat_render(ChatFormat::Llama3, msgs, true, {}) == kMultiTurnLlama3);
  CHECK(chat_has_tools(ChatFormat::Llama3));
  CHECK_FALSE(chat_has_tools(ChatFormat::Llama2));
}
