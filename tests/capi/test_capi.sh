#!/usr/bin/env bash
# The C API as a user meets it: `cmake --install` the build into a scratch
# prefix, compile tests/capi/example.c with `cc` alone against the installed
# header and library, run it on the default model (installed beside the
# library), and check that both of its sequences (one streamed through a
# callback, one polled, decoded side by side) give the same greedy token ids
# as `layerstream decode --temp 0 --ids` on the same prompt.
#   tests/capi/test_capi.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v cc >/dev/null 2>&1; then
  echo "SKIPPED: no C compiler (cc) on this machine"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cc -std=c11 -Wall -Wextra -Werror "$here/example.c" -I "$tmp/prefix/include" \
  -L "$tmp/prefix/lib" -llayerstream -Wl,-rpath,"$tmp/prefix/lib" -o "$tmp/example"
prompt="In the beginning God created"
n=24
"$tmp/example" -n $n --logprobs 3 "$prompt" > "$tmp/out.txt" 2> "$tmp/err.txt" || { cat "$tmp/err.txt"; exit 1; }
"$tmp/prefix/bin/layerstream" decode --temp 0 -n $n --ids --cpu-layers 0 -p "$prompt" \
  > "$tmp/decode.txt" 2> /dev/null
want=$(tail -n 1 "$tmp/decode.txt")
mapfile -t got < <(grep '^ids:' "$tmp/out.txt" | sed 's/^ids: *//')
echo "decode:    $want"
echo "C, cb:     ${got[0]:-}"
echo "C, poll:   ${got[1]:-}"
[ -n "$want" ] || { echo "FAIL: decode printed no ids"; exit 1; }
[ "${got[0]:-}" = "$want" ] || { echo "FAIL: the callback sequence differs from decode"; exit 1; }
[ "${got[1]:-}" = "$want" ] || { echo "FAIL: the polled sequence differs from decode"; exit 1; }
# Log probabilities through ls_seq_set_logprobs (sequence a): greedy, so
# every token is the most likely of its step.
lp=$(grep '^logprobs:' "$tmp/out.txt")
echo "C, $lp"
[ "$lp" = "logprobs: $n of $n tokens the most likely" ] ||
  { echo "FAIL: the C log probabilities ($lp, $n tokens)"; exit 1; }
# A token banned and a presence penalty, through ls_seq_set_logit_bias and
# ls_seq_set_penalties, against decode's -l ID-100 and --presence-penalty.
ban=${want%% *}
"$tmp/example" -n $n --ban "$ban" --presence 0.7 "$prompt" > "$tmp/out2.txt" 2> "$tmp/err2.txt" ||
  { cat "$tmp/err2.txt"; exit 1; }
"$tmp/prefix/bin/layerstream" decode --temp 0 -n $n --ids --cpu-layers 0 -p "$prompt" \
  -l "$ban-100" --presence-penalty 0.7 > "$tmp/decode2.txt" 2> /dev/null
want2=$(tail -n 1 "$tmp/decode2.txt")
mapfile -t got2 < <(grep '^ids:' "$tmp/out2.txt" | sed 's/^ids: *//')
echo "decode -l $ban-100 --presence-penalty 0.7: $want2"
echo "C, both sequences: ${got2[0]:-} | ${got2[1]:-}"
[ -n "$want2" ] && [ "$want2" != "$want" ] || { echo "FAIL: the ban did not change decode's ids"; exit 1; }
[ "${got2[0]:-}" = "$want2" ] && [ "${got2[1]:-}" = "$want2" ] ||
  { echo "FAIL: the C sequences with a ban and a penalty differ from decode"; exit 1; }
# JSON mode through ls_seq_set_json: decode --json's ids.
"$tmp/example" -n $n --json "$prompt" > "$tmp/out3.txt" 2> "$tmp/err3.txt" ||
  { cat "$tmp/err3.txt"; exit 1; }
"$tmp/prefix/bin/layerstream" decode --temp 0 -n $n --ids --cpu-layers 0 -p "$prompt" --json \
  > "$tmp/decode3.txt" 2> /dev/null
# decode --ids prints the end-of-generation token that ends an answer short
# of -n; the C callback gets the answer's tokens only.
without_eog() { local a=($1); [ ${#a[@]} -lt "$n" ] && unset 'a[${#a[@]}-1]'; echo "${a[*]}"; }
want3=$(without_eog "$(tail -n 1 "$tmp/decode3.txt")")
mapfile -t got3 < <(grep '^ids:' "$tmp/out3.txt" | sed 's/^ids: *//')
echo "decode --json: $want3"
echo "C, --json:     ${got3[0]:-} | ${got3[1]:-}"
[ "${got3[0]:-}" = "$want3" ] && [ "${got3[1]:-}" = "$want3" ] && [ "$want3" != "$want" ] ||
  { echo "FAIL: the C sequences in JSON mode differ from decode --json"; exit 1; }
# A JSON schema through ls_seq_set_json_schema: decode --json-schema's ids
# (an array, so that they differ from JSON mode's object); a schema outside
# the subset is an error that names the keyword.
schema='{"type":"array","items":{"type":"integer"},"maxItems":3}'
"$tmp/example" -n $n --json-schema "$schema" "$prompt" > "$tmp/out4.txt" 2> "$tmp/err4.txt" ||
  { cat "$tmp/err4.txt"; exit 1; }
"$tmp/prefix/bin/layerstream" decode --temp 0 -n $n --ids --cpu-layers 0 -p "$prompt" \
  --json-schema "$schema" > "$tmp/decode4.txt" 2> /dev/null
want4=$(without_eog "$(tail -n 1 "$tmp/decode4.txt")")
mapfile -t got4 < <(grep '^ids:' "$tmp/out4.txt" | sed 's/^ids: *//')
echo "decode --json-schema: $want4"
echo "C, --json-schema:     ${got4[0]:-} | ${got4[1]:-}"
[ "${got4[0]:-}" = "$want4" ] && [ "${got4[1]:-}" = "$want4" ] && [ "$want4" != "$want3" ] ||
  { echo "FAIL: the C sequences with a JSON schema differ from decode --json-schema"; exit 1; }
if "$tmp/example" -n 2 --json-schema '{"type":"string","pattern":"(?=a)"}' "$prompt" \
  > /dev/null 2> "$tmp/err5.txt"; then
  echo "FAIL: a schema with a lookahead pattern was accepted"; exit 1
fi
grep -q "ls_seq_set_json_schema: json schema: 'pattern' at the top level: lookahead '(?=' at character 1 is not supported" \
  "$tmp/err5.txt" || { cat "$tmp/err5.txt"; echo "FAIL: the schema error does not name the lookahead"; exit 1; }
echo "PASS: the C example (cc alone, installed header and library) matches decode"
