# Writes a C++ source that holds a text file as one string constant, so a
# file (the server's chat page) is compiled into the binary with no build
# step of its own and nothing read at run time.
#   cmake -DIN=page.html -DOUT=page.cpp -DSYMBOL=kName -P scripts/embed_text.cmake
# The source defines `extern const char SYMBOL[]` and `extern const unsigned long SYMBOL_len`
# in namespace ls. The text goes in a raw string literal; the delimiter must
# not occur in it (checked).
file(READ "${IN}" text)
set(delim "ls_embed_")
string(FIND "${text}" ")${delim}\"" found)
if(NOT found EQUAL -1)
  message(FATAL_ERROR "${IN}: holds )${delim}\" , the raw string's delimiter")
endif()
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by scripts/embed_text.cmake: do not edit.\n"
  "namespace ls {\n"
  "extern const char ${SYMBOL}[] = R\"${delim}(${text})${delim}\";\n"
  "extern const unsigned long ${SYMBOL}_len = sizeof(${SYMBOL}) - 1;\n"
  "}  // namespace ls\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
