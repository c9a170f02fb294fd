// The chat page served at GET /: tools/serve/chat_page.html, compiled into
// the binary as one string (scripts/embed_text.cmake writes the source at
// build time), so the server needs no file beside it and the page fetches
// nothing from anywhere else.
// defines: kChatPageHtml, kChatPageHtml_len
#pragma once

namespace ls {

extern const char kChatPageHtml[];
extern const unsigned long kChatPageHtml_len;

}  // namespace ls
