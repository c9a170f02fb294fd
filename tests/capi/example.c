/* A small program on layerstream's C API (PREFIX/include/layerstream.h,
 * -llayerstream): one prompt, greedy, run twice at once as two sequences of
 * one engine (continuous batching), one streamed through a callback and one
 * polled. Prints the text, then each sequence's token ids on a line of its
 * own ("ids: ..."), which tests/capi/test_capi.sh compares with
 * `layerstream decode --temp 0 --ids`.
 *
 *   cc example.c -I PREFIX/include -L PREFIX/lib -llayerstream -o example
 *   ./example [-m MODEL] [-n TOKENS] [--ban ID] [--presence P] [--json]
 *             [--json-schema SCHEMA] [--logprobs N] PROMPT
 *
 * --ban ID bans a token (a logit bias of -100) and --presence P sets the
 * presence penalty, in both sequences (decode's -l ID-100 and
 * --presence-penalty P); --json runs both in JSON mode (decode --json);
 * --json-schema SCHEMA keeps both to a JSON schema (decode --json-schema);
 * --logprobs N asks sequence a for each token's log probability and its N
 * most likely alternatives, and prints how many tokens were the most likely
 * of their step ("logprobs: K of M tokens the most likely").
 */
#include <layerstream.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct collected {
  int32_t ids[4096];
  size_t n;
};

/* The callback: the engine's sampler thread, once per token. */
static int on_token(void* user, const ls_token* t) {
  struct collected* c = (struct collected*)user;
  if (t->id >= 0 && c->n < sizeof c->ids / sizeof c->ids[0]) c->ids[c->n++] = t->id;
  fwrite(t->text, 1, t->text_len, stdout);
  fflush(stdout);
  return 0; /* nonzero would cancel the sequence */
}

/* --logprobs: the log-probability callback, before each token of a. */
struct lp_count {
  size_t calls, top_is_token;
};
static void on_logprobs(void* user, const ls_logprobs* lp) {
  struct lp_count* c = (struct lp_count*)user;
  c->calls++;
  if (lp->n_top > 0 && lp->top_ids[0] == lp->token && lp->top_logprobs[0] == lp->logprob &&
      lp->logprob <= 0.0f)
    c->top_is_token++;
}

static void print_ids(const int32_t* ids, size_t n) {
  printf("ids:");
  for (size_t i = 0; i < n; ++i) printf(" %d", ids[i]);
  printf("\n");
}

int main(int argc, char** argv) {
  const char* model = NULL;
  const char* prompt = NULL;
  int n_predict = 24;
  int32_t ban = -1;
  float presence = 0.0f;
  int json = 0, n_top = -1;
  const char* schema = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-m") && i + 1 < argc) model = argv[++i];
    else if (!strcmp(argv[i], "-n") && i + 1 < argc) n_predict = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ban") && i + 1 < argc) ban = (int32_t)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--presence") && i + 1 < argc) presence = (float)atof(argv[++i]);
    else if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--json-schema") && i + 1 < argc) schema = argv[++i];
    else if (!strcmp(argv[i], "--logprobs") && i + 1 < argc) n_top = atoi(argv[++i]);
    else prompt = argv[i];
  }
  if (!prompt) {
    fprintf(stderr, "usage: %s [-m MODEL] [-n TOKENS] PROMPT\n", argv[0]);
    return 2;
  }

  ls_engine_options o;
  ls_engine_options_init(&o);
  o.model = model; /* NULL: the default model installed beside the library */
  o.n_parallel = 2;
  o.cpu_layers = 0;
  ls_engine* e = NULL;
  if (ls_engine_open(&o, &e) != LS_OK) {
    fprintf(stderr, "error: %s\n", ls_last_error());
    return 1;
  }

  int32_t prompt_ids[1024];
  size_t n_prompt = 0;
  if (ls_tokenize(e, prompt, -1, 1, 0, prompt_ids, 1024, &n_prompt) != LS_OK) {
    fprintf(stderr, "error: %s\n", ls_last_error());
    ls_engine_free(e);
    return 1;
  }

  ls_sampling s;
  ls_sampling_init(&s);
  s.temperature = 0; /* greedy */
  s.max_tokens = n_predict;

  /* Two sequences of the same prompt, decoded side by side. */
  ls_seq *a = NULL, *b = NULL;
  struct collected ca = {{0}, 0};
  const float ban_bias = -100.0f;
  struct lp_count lpc = {0, 0};
  if (ls_seq_create(e, prompt_ids, n_prompt, &s, &a) != LS_OK ||
      ls_seq_create(e, prompt_ids, n_prompt, &s, &b) != LS_OK ||
      ls_seq_set_penalties(a, 0.0f, presence) != LS_OK ||
      ls_seq_set_penalties(b, 0.0f, presence) != LS_OK ||
      ls_seq_set_logit_bias(a, &ban, &ban_bias, ban >= 0 ? 1 : 0) != LS_OK ||
      ls_seq_set_logit_bias(b, &ban, &ban_bias, ban >= 0 ? 1 : 0) != LS_OK ||
      ls_seq_set_json(a, json) != LS_OK || ls_seq_set_json(b, json) != LS_OK ||
      (schema && (ls_seq_set_json_schema(a, schema) != LS_OK ||
                  ls_seq_set_json_schema(b, schema) != LS_OK)) ||
      (n_top >= 0 && ls_seq_set_logprobs(a, n_top, on_logprobs, &lpc) != LS_OK) ||
      ls_seq_submit(a, on_token, &ca) != LS_OK || ls_seq_submit(b, NULL, NULL) != LS_OK) {
    fprintf(stderr, "error: %s\n", ls_last_error());
    ls_seq_free(a);
    ls_seq_free(b);
    ls_engine_free(e);
    return 1;
  }

  /* b: polled. */
  int32_t ids_b[4096];
  size_t n_b = 0;
  int finished = 0;
  while (!finished) {
    ls_token got[16];
    size_t n = 0;
    ls_status st = ls_seq_poll(b, got, 16, &n, 10000, &finished);
    if (st != LS_OK && st != LS_ERR_TIMEOUT) {
      fprintf(stderr, "error: %s\n", ls_last_error());
      break;
    }
    for (size_t i = 0; i < n; ++i)
      if (got[i].id >= 0 && n_b < 4096) ids_b[n_b++] = got[i].id;
  }

  ls_finish fa = LS_FINISH_NONE, fb = LS_FINISH_NONE;
  int rc = 0;
  if (ls_seq_wait(a, -1, &fa, NULL) != LS_OK || ls_seq_wait(b, -1, &fb, NULL) != LS_OK) {
    fprintf(stderr, "error: %s\n", ls_last_error());
    rc = 1;
  }
  printf("\n");
  print_ids(ca.ids, ca.n);
  print_ids(ids_b, n_b);
  if (n_top >= 0) printf("logprobs: %zu of %zu tokens the most likely\n", lpc.top_is_token, lpc.calls);
  fprintf(stderr, "example: %zu prompt tokens; sequence a: %zu tokens (finish %d), b: %zu (finish %d)\n",
          n_prompt, ca.n, (int)fa, n_b, (int)fb);
  ls_seq_free(a);
  ls_seq_free(b);
  ls_engine_free(e);
  return rc;
}
